"""Binned summaries: expansion error against the exact likelihood, derivative identities,
identical tables from every aggregation engine, and the summary distributions."""

from __future__ import annotations

import functools
import re

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_dpnoise as pmd
from pymc_dpnoise import summaries
from pymc_dpnoise.math import clipped as mc

LO, HI = -5.0, 5.0


def _normal_reports(n, eps, seed, mu=1.0, sigma=2.0):
    rng = np.random.default_rng(seed)
    return pmd.mechanisms.perturb_clipped(rng.normal(mu, sigma, n), LO, HI, eps, rng)


def _exp_reports(n, eps, seed, lam=0.5, upper=5.0):
    rng = np.random.default_rng(seed)
    return pmd.mechanisms.perturb_clipped_exponential(rng.exponential(1 / lam, n), upper, eps, rng)


# ---- compiled once per model family (parameters, data and ε are inputs) --------------------


@functools.lru_cache(maxsize=2)
def _compare_fn(model):
    """(table, reports, ε, θ...) -> (compressed, bound, exact) log likelihoods."""
    tab, z, eps = pt.dmatrix("tab"), pt.dvector("z"), pt.dscalar("eps")
    if model == "normal":
        mu, sigma = pt.dscalar("mu"), pt.dscalar("sigma")
        theta = [mu, sigma]
        approx = mc.clipped_normal_summary_logp(tab, mu, sigma, LO, HI, eps)
        bound = mc.clipped_normal_summary_error_bound(tab, mu, sigma, LO, HI, eps)
        exact = mc.clipped_normal_laplace_logp(z, mu, sigma, LO, HI, eps).sum()
    else:
        lam, upper = pt.dscalar("lam"), pt.dscalar("upper")
        theta = [lam, upper]
        approx = mc.clipped_exponential_summary_logp(tab, lam, upper, eps)
        bound = mc.clipped_exponential_summary_error_bound(tab, lam, upper, eps)
        exact = mc.clipped_exponential_laplace_logp(z, lam, upper, eps).sum()
    g_approx = pt.grad(approx, theta[0])
    g_exact = pt.grad(exact, theta[0])
    return pytensor.function([tab, z, eps, *theta], [approx, bound, exact, g_approx, g_exact])


@functools.lru_cache(maxsize=2)
def _derivative_fn(model):
    """(z, ε, θ...) -> exact elementwise log p and the summary's (f, f', f'', f''')."""
    z, eps = pt.dvector("z"), pt.dscalar("eps")
    if model == "normal":
        theta = [pt.dscalar("mu"), pt.dscalar("sigma")]
        exact = mc.clipped_normal_laplace_logp(z, *theta, LO, HI, eps)
        parts = mc.clipped_summary_derivatives("normal", z, *theta, LO, HI, eps)
    else:
        theta = [pt.dscalar("lam"), pt.dscalar("upper")]
        exact = mc.clipped_exponential_laplace_logp(z, *theta, eps)
        parts = mc.clipped_summary_derivatives("exponential", z, *theta, eps)
    return pytensor.function([z, eps, *theta], [exact, *parts])


CASES = [
    ("normal", eps, theta)
    for eps in (0.1, 1.0, 4.0)
    for theta in ((1.0, 2.0), (-4.0, 0.5), (3.0, 6.0))
] + [
    ("exponential", eps, theta)
    for eps in (0.1, 1.0, 4.0)
    for theta in ((0.5, 5.0), (3.0, 5.0), (0.05, 2.0))
]


@pytest.mark.parametrize("model, eps, theta", CASES)
def test_derivatives_match_finite_differences(model, eps, theta):
    """f from the summary path equals the exact log p; f', f'', f''' match finite differences."""
    fn = _derivative_fn(model)
    lo, hi = (LO, HI) if model == "normal" else (0.0, theta[1])
    width = hi - lo
    z0 = lo + width * np.array([0.03, 0.2, 0.5, 0.77, 0.97])
    d = 2e-3 * width
    steps = np.arange(-3, 4)
    exact = np.array([fn(z0 + k * d, eps, *theta)[0] for k in steps])  # (7, 5)
    _, f, f1, f2, f3 = fn(z0, eps, *theta)
    np.testing.assert_allclose(f, exact[3], rtol=1e-12, atol=1e-12)
    # 6th-order central differences
    d1 = (-exact[0] + 9 * exact[1] - 45 * exact[2] + 45 * exact[4] - 9 * exact[5] + exact[6]) / (
        60 * d
    )
    d2 = (
        2 * exact[0] - 27 * exact[1] + 270 * exact[2] - 490 * exact[3]
        + 270 * exact[4] - 27 * exact[5] + 2 * exact[6]
    ) / (180 * d**2)  # fmt: skip
    d3 = (exact[0] - 8 * exact[1] + 13 * exact[2] - 13 * exact[4] + 8 * exact[5] - exact[6]) / (
        8 * d**3
    )
    s = width / eps
    np.testing.assert_allclose(f1, d1, rtol=1e-6, atol=1e-8 / s)
    np.testing.assert_allclose(f2, d2, rtol=1e-4, atol=1e-6 / s**2)
    np.testing.assert_allclose(f3, d3, rtol=2e-3, atol=1e-4 * np.max(np.abs(f3)) + 1e-9 / s**3)
    assert np.all(np.abs(f1) <= 1 / s * (1 + 1e-12))


@pytest.mark.parametrize("model, eps, theta", CASES)
def test_compressed_within_bound(model, eps, theta):
    """|compressed - exact| <= the reported bound, on data generated away from θ too."""
    upper = HI if model == "normal" else theta[1]
    lo = LO if model == "normal" else 0.0
    z = (
        _normal_reports(5_000, eps, 1)
        if model == "normal"
        else _exp_reports(5_000, eps, 1, upper=upper)
    )
    s = pmd.summarize(z, lo, upper, eps, n_bins=48, model=model)
    approx, bound, exact, ga, ge = _compare_fn(model)(s.table, z, eps, *theta)
    assert np.isfinite(approx) and np.isfinite(bound)
    assert abs(approx - exact) <= bound + 1e-9 * abs(exact)
    # the second-order term matters: the bound is not trivially loose
    assert bound < 1e-2 * abs(exact)
    np.testing.assert_allclose(ga, ge, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("model", ["normal", "exponential"])
def test_tails_are_exact(model):
    """Reports outside the interval: the compressed likelihood is exact whatever the bins."""
    rng = np.random.default_rng(3)
    hi = HI if model == "normal" else 5.0
    lo = LO if model == "normal" else 0.0
    z = np.concatenate([lo - rng.exponential(3.0, 500), hi + rng.exponential(3.0, 700), [lo, hi]])
    s = pmd.summarize(z, lo, hi, 1.0, n_bins=3, model=model)
    assert s.table[1:-1, 0].sum() == 0 and s.table[0, 0] == 501 and s.table[-1, 0] == 701
    theta = (0.7, 1.3) if model == "normal" else (0.4, hi)
    approx, bound, exact, *_ = _compare_fn(model)(s.table, z, 1.0, *theta)
    assert bound == 0.0
    # exact: a sum of 1202 same-sign terms of a few ulp each, within (1201 + 4) u = 1.3e-13 in
    # any order (Numba's sequential sum in native mode); approx sums <= 701 reports per bin
    # (<= 7.8e-14): 2.1e-13 -> 3e-13 (was 1e-13, which only NumPy's pairwise sum guarantees)
    np.testing.assert_allclose(approx, exact, rtol=3e-13)


def test_choose_n_bins_meets_tolerance():
    """The design bound N M3 h^3/48 is <= tol and bounds the actual error at θ in the box."""
    z = _normal_reports(50_000, 4.0, 5, mu=1.0, sigma=2.0)
    s = pmd.summarize(z, LO, HI, 4.0, tol=0.01)
    assert s.tol == 0.01 and s.design_bound <= 0.01
    for theta in ((1.0, 2.0), (0.0, 0.5), (-5.0, 20.0)):
        approx, bound, exact, *_ = _compare_fn("normal")(s.table, z, 4.0, *theta)
        assert abs(approx - exact) <= bound <= s.design_bound
    # a tighter budget gives more bins
    k2, b2 = summaries.choose_n_bins("normal", 50_000, LO, HI, 4.0, 1e-4)
    assert k2 > s.n_bins and b2 <= 1e-4


# ---- aggregation engines ------------------------------------------------------------------


def _edge_reports():
    z = _normal_reports(30_011, 2.0, 7)
    binning = summaries.ClippedBinning(LO, HI, 37)
    edges = LO + np.arange(38) * binning.width  # reports exactly on every bin edge
    return np.concatenate([z, edges, [LO, HI, LO, HI]]), binning


def _assert_same_table(a, b):
    np.testing.assert_array_equal(a[:, 0], b[:, 0])  # identical counts
    # moments: summation order differs; compare relative to the scale of the sums
    scale = np.maximum(np.abs(a[:, 1:]), np.abs(b[:, 1:])).max(axis=0) + 1e-300
    np.testing.assert_allclose(a[:, 1:] / scale, b[:, 1:] / scale, rtol=0, atol=1e-12)


def test_numpy_engine_matches_direct_computation():
    z, binning = _edge_reports()
    t = binning.numpy(z)
    assert t[:, 0].sum() == z.size
    # direct, report by report
    h, k = binning.width, binning.n_bins
    expected = np.zeros_like(t)
    for v in z:
        if v <= LO:
            expected[0, :2] += (1, LO - v)
        elif v >= HI:
            expected[-1, :2] += (1, v - HI)
        else:
            j = min(max(int(np.floor((v - LO) * binning.inv_width)), 0), k - 1)
            d = v - (LO + (j + 0.5) * h)
            expected[j + 1] += (1, d, d * d, abs(d) ** 3)
    _assert_same_table(t, expected)
    # a report exactly on an inner edge goes to the bin on its right
    one = binning.numpy(np.array([LO + 5 * h]))
    assert one[6, 0] == 1
    assert abs(one[6, 1]) <= 0.5 * h * (1 + 1e-12)


def test_engines_agree(tmp_path):
    """NumPy, DuckDB (Parquet, CSV, relation), Polars (eager, lazy), pandas, PyArrow, Dask."""
    import dask.dataframe as dd
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    z, binning = _edge_reports()
    ref = summaries.aggregate(z, binning)
    table = pa.table({"id": np.arange(z.size), "z": z})
    pq.write_table(table, tmp_path / "r.parquet", row_group_size=4096)
    pd.DataFrame({"z": z}).to_csv(tmp_path / "r.csv", index=False, float_format="%.17g")
    frames = {
        "parquet": tmp_path / "r.parquet",
        "csv": str(tmp_path / "r.csv"),
        "duckdb-relation": duckdb.read_parquet(str(tmp_path / "r.parquet")),
        "polars": pl.DataFrame({"z": z, "other": np.ones(z.size)}),
        "polars-lazy": pl.LazyFrame({"z": z}),
        "pandas": pd.DataFrame({"z": z}),
        "pyarrow": table,
        "dask": dd.from_pandas(pd.DataFrame({"z": z}), npartitions=7),
    }
    for name, data in frames.items():
        got = summaries.aggregate(data, binning, column="z")
        _assert_same_table(got, ref), name


def test_dask_local_cluster():
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    z, binning = _edge_reports()
    ref = summaries.aggregate(z, binning)
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster,
        Client(cluster),
    ):
        got = summaries.aggregate(
            dd.from_pandas(pd.DataFrame({"z": z}), npartitions=5), binning, column="z"
        )
    _assert_same_table(got, ref)


def test_summarize_from_file_counts_without_loading(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    z = _normal_reports(10_000, 1.0, 9)
    pq.write_table(pa.table({"z": z}), tmp_path / "r.parquet")
    a = pmd.summarize(tmp_path / "r.parquet", LO, HI, 1.0, tol=0.01, column="z")
    b = pmd.summarize(z, LO, HI, 1.0, tol=0.01)
    assert a.n_bins == b.n_bins and a.n_total == 10_000
    _assert_same_table(a.table, b.table)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_reports_rejected(tmp_path, bad):
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    z = np.array([0.0, 1.0, bad])
    binning = summaries.ClippedBinning(LO, HI, 4)
    with pytest.raises(ValueError, match="data: reports must be finite"):
        summaries.aggregate(z, binning)
    pq.write_table(pa.table({"z": z}), tmp_path / "r.parquet")
    with pytest.raises(ValueError, match="data: reports must be finite"):
        summaries.aggregate(tmp_path / "r.parquet", binning, column="z")
    with pytest.raises(ValueError, match="data: reports must be finite"):
        summaries.aggregate(pl.DataFrame({"z": z}), binning, column="z")


def test_argument_errors():
    with pytest.raises(ValueError, match="lower, upper"):
        summaries.ClippedBinning(1.0, 1.0, 3)
    with pytest.raises(ValueError, match="n_bins"):
        summaries.ClippedBinning(0.0, 1.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        pmd.summarize(np.zeros(3), 0.0, 1.0, -1.0, n_bins=2)
    with pytest.raises(ValueError, match="tol"):
        pmd.summarize(np.zeros(3), 0.0, 1.0, 1.0, tol=0.0)
    with pytest.raises(ValueError, match="lower"):
        pmd.summarize(np.zeros(3), -1.0, 1.0, 1.0, n_bins=2, model="exponential")
    with pytest.raises(ValueError, match="column"):
        import polars as pl

        summaries.aggregate(
            pl.DataFrame({"a": [1.0], "b": [2.0]}), summaries.ClippedBinning(0.0, 1.0, 2)
        )


# ---- distributions ------------------------------------------------------------------------


def test_normal_summary_distribution_logp_and_draws():
    z = _normal_reports(5_000, 1.0, 11)
    s = pmd.summarize(z, LO, HI, 1.0, n_bins=32)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        obs = pmd.LaplacePerturbedClippedNormalSummary("z", mu, sigma, observed=s)
    assert obs.type.shape[-1] == 4
    with pytest.raises(ValueError, match="lower"):
        with pm.Model():
            pmd.LaplacePerturbedClippedNormalSummary("z", 0.0, 1.0, lower=-4.0, observed=s)
    logp_fn = model.compile_logp(vars=[model["z"]], sum=True)
    point = {"mu": 1.0, "sigma_log__": np.log(2.0)}
    expected = _compare_fn("normal")(s.table, z, 1.0, 1.0, 2.0)[0]
    # the summary model's compiled logp against the same formulas compiled directly: a few ulp from
    # the rewrite order
    np.testing.assert_allclose(logp_fn(point), expected, rtol=1e-12)
    # draws: N simulated reports, binned with the same expression as summarize()
    draw = pm.draw(
        pmd.LaplacePerturbedClippedNormalSummary.dist(1.0, 2.0, LO, HI, 1.0, n=5_000, n_bins=32),
        random_seed=1,
    )
    assert draw.shape == (34, 4) and draw[:, 0].sum() == 5_000
    assert np.all(draw[1:-1, 2] >= 0) and np.all(np.abs(draw[1:-1, 1]) <= draw[1:-1, 0] * 10 / 64)
    # the simulated tail fractions agree with the observed ones (same θ) within 5 sd
    p_obs, p_sim = s.table[0, 0] / 5000, draw[0, 0] / 5000
    assert abs(p_obs - p_sim) < 5 * np.sqrt(p_obs * (1 - p_obs) / 2500)


def test_pytensor_binning_matches_numpy():
    from pymc_dpnoise.distributions.clipped import _summary_table

    z, binning = _edge_reports()
    got = _summary_table(pt.constant(z), pt.constant(LO), pt.constant(HI), binning.n_bins).eval()
    _assert_same_table(got, binning.numpy(z))


def test_exponential_summary_distribution():
    z = _exp_reports(5_000, 2.0, 13)
    s = pmd.summarize(z, 0.0, 5.0, 2.0, n_bins=24, model="exponential")
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 2.0)
        pmd.LaplacePerturbedClippedExponentialSummary("z", lam, observed=s)
    logp_fn = model.compile_logp(vars=[model["z"]], sum=True)
    expected = _compare_fn("exponential")(s.table, z, 2.0, 0.5, 5.0)[0]
    # the summary model's compiled logp against the same formulas compiled directly: a few ulp from
    # the rewrite order
    np.testing.assert_allclose(logp_fn({"lam_log__": np.log(0.5)}), expected, rtol=1e-12)
    draw = pm.draw(
        pmd.LaplacePerturbedClippedExponentialSummary.dist(0.5, 5.0, 2.0, n=1000, n_bins=24),
        random_seed=2,
    )
    assert draw.shape == (26, 4) and draw[:, 0].sum() == 1000
    with pytest.raises(ValueError, match="observed"):
        with pm.Model():
            bad = pmd.summarize(z, -1.0, 5.0, 2.0, n_bins=4)
            pmd.LaplacePerturbedClippedExponentialSummary("z", 1.0, observed=bad)


@pytest.mark.slow
def test_compressed_posterior_matches_exact():
    """NUTS on the compressed and the exact model: means and sds within 0.05 posterior sd
    (Monte Carlo error of 2 x 1000 draws is ~0.03 sd; the benchmark uses more draws)."""
    z = _normal_reports(20_000, 1.0, 21)
    s = pmd.summarize(z, LO, HI, 1.0, tol=0.01)
    out = {}
    for kind in ("exact", "summary"):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 5.0)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            if kind == "exact":
                pmd.LaplacePerturbedClippedNormal("z", mu, sigma, LO, HI, 1.0, observed=z)
            else:
                pmd.LaplacePerturbedClippedNormalSummary("z", mu, sigma, observed=s)
        out[kind] = pm.sample(
            2000, tune=1000, chains=2, nuts_sampler="nutpie", random_seed=3, model=model,
            progressbar=False,
        ).posterior  # fmt: skip
    for v in ("mu", "sigma"):
        e, c = out["exact"][v].values.ravel(), out["summary"][v].values.ravel()
        assert abs(e.mean() - c.mean()) < 0.1 * e.std()
        assert abs(e.std() - c.std()) < 0.1 * e.std()


# ---- SBC of the compressed models ----------------------------------------------------------

import dataclasses  # noqa: E402

from pymc_dpnoise.diagnostics import simulation_based_calibration  # noqa: E402
from pymc_dpnoise.experiments.ldp_calibration import (  # noqa: E402
    ClippedExponentialSBC,
    ClippedNormalSBC,
)


@dataclasses.dataclass(frozen=True)
class ClippedNormalSummarySBC(ClippedNormalSBC):
    """:class:`ClippedNormalSBC` fitted through the binned summary (fixed bin count)."""

    n_bins: int = 64

    def model_data(self, reports, noise_aware=True):
        s = pmd.summarize(reports, self.lower, self.upper, self.epsilon, n_bins=self.n_bins)
        return s.table

    def build_model(self, reports, noise_aware=True):
        with pm.Model() as model:
            tab = pm.Data("reports", self.model_data(reports))
            mu = pm.Normal("mu", self.mu0, self.sd0)
            sigma = pm.Gamma("sigma", self.alpha, self.beta)
            pmd.LaplacePerturbedClippedNormalSummary(
                "z", mu, sigma, lower=self.lower, upper=self.upper, epsilon=self.epsilon,
                n=self.n, n_bins=self.n_bins, observed=tab,
            )  # fmt: skip
        return model


@dataclasses.dataclass(frozen=True)
class ClippedExponentialSummarySBC(ClippedExponentialSBC):
    """:class:`ClippedExponentialSBC` fitted through the binned summary."""

    n_bins: int = 64

    def model_data(self, reports, noise_aware=True):
        s = pmd.summarize(
            reports, 0.0, self.upper, self.epsilon, n_bins=self.n_bins, model="exponential"
        )
        return s.table

    def build_model(self, reports, noise_aware=True):
        with pm.Model() as model:
            tab = pm.Data("reports", self.model_data(reports))
            lam = pm.Gamma("lam", self.alpha, self.beta)
            pmd.LaplacePerturbedClippedExponentialSummary(
                "z", lam, upper=self.upper, epsilon=self.epsilon, n=self.n,
                n_bins=self.n_bins, observed=tab,
            )  # fmt: skip
        return model


@pytest.mark.slow
@pytest.mark.parametrize("problem_cls", [ClippedNormalSummarySBC, ClippedExponentialSummarySBC])
def test_sbc_compressed_small(problem_cls):
    """20 replicates at ε = 1, N = 2000: every coverage inside the 99% binomial band."""
    res = simulation_based_calibration(
        problem_cls(n=2000, epsilon=1.0), 20, seed=5, n_jobs=1, draws=300, tune=300
    )
    table = res.coverage()
    assert table["inside"].all(), table


# ---- one aggregation path for histogram reports and regression scatter matrices -----------


def _frames(tmp_path, columns: dict, tag):
    """The same columns as Parquet, CSV, DuckDB relation, Polars, pandas, PyArrow and Dask."""
    import dask.dataframe as dd
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(columns)
    pq.write_table(table, tmp_path / f"{tag}.parquet", row_group_size=1000)
    pdf = pd.DataFrame(columns)
    pdf.to_csv(tmp_path / f"{tag}.csv", index=False, float_format="%.17g")
    return {
        "parquet": tmp_path / f"{tag}.parquet",
        "csv": str(tmp_path / f"{tag}.csv"),
        "duckdb-relation": duckdb.read_parquet(str(tmp_path / f"{tag}.parquet")),
        "polars": pl.DataFrame(columns),
        "polars-lazy": pl.LazyFrame(columns),
        "pandas": pdf,
        "pyarrow": table,
        "dask": dd.from_pandas(pdf, npartitions=5),
    }


def test_histogram_summary_engines_agree(tmp_path):
    """OUE bit patterns and k-RR ids: identical patterns and counts from every engine."""
    rng = np.random.default_rng(3)
    items = rng.choice(5, size=7000, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    bits = pmd.mechanisms.oue_perturb(items, 5, 1.0, rng)
    ids = pmd.mechanisms.krr_perturb(items, 5, 1.0, rng)
    ref_bits = summaries.summarize_histogram(bits)
    ref_ids = summaries.summarize_histogram(ids)
    # independent reference: np.unique on the rows / ids
    u, c = np.unique(bits, axis=0, return_counts=True)
    np.testing.assert_array_equal(ref_bits.patterns, u)
    np.testing.assert_array_equal(ref_bits.counts, c)
    np.testing.assert_array_equal(ref_ids.counts, np.bincount(ids, minlength=5))
    assert ref_bits.n_total == ref_ids.n_total == 7000
    cols = {f"b{j}": bits[:, j].astype(np.int64) for j in range(5)}
    for name, data in _frames(tmp_path, cols, "bits").items():
        got = summaries.summarize_histogram(data)
        np.testing.assert_array_equal(got.patterns, ref_bits.patterns, err_msg=name)
        np.testing.assert_array_equal(got.counts, ref_bits.counts, err_msg=name)
    for name, data in _frames(tmp_path, {"item": ids.astype(np.int64)}, "ids").items():
        got = summaries.summarize_histogram(data)
        np.testing.assert_array_equal(got.patterns, ref_ids.patterns, err_msg=name)
        np.testing.assert_array_equal(got.counts, ref_ids.counts, err_msg=name)


def test_histogram_summary_feeds_the_likelihoods():
    """Compressed and per-report log likelihoods are the same (OUE, SUE, k-RR)."""
    rng = np.random.default_rng(4)
    items = rng.choice(4, size=3000)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    for cls, perturb in (
        (pmd.OUELikelihood, pmd.mechanisms.oue_perturb),
        (pmd.SUELikelihood, pmd.mechanisms.sue_perturb),
        (pmd.KRRLikelihood, pmd.mechanisms.krr_perturb),
    ):
        z = perturb(items, 4, 1.5, rng)
        s = summaries.summarize_histogram(z)
        full = pm.logp(cls.dist(p=p, epsilon=1.5), z).sum().eval()
        comp = pm.logp(cls.dist(p=p, epsilon=1.5, counts=s.counts), s.patterns).sum().eval()
        # the compressed (patterns x counts) and the full log density: the same log terms,
        # multiplied by counts instead of repeated, (n - 1) u of same-sign terms
        np.testing.assert_allclose(comp, full, rtol=1e-12)


def test_histogram_summary_rejects_bad_reports(tmp_path):
    import polars as pl

    with pytest.raises(ValueError, match="0/1"):
        summaries.summarize_histogram(np.array([[0, 1], [2, 0]]))
    with pytest.raises(ValueError, match="finite"):
        summaries.summarize_histogram(np.array([[0, 1], [np.nan, 0]]))
    with pytest.raises(ValueError, match="integer item ids"):
        summaries.summarize_histogram(np.array([0, 1, 1.5]))
    with pytest.raises(ValueError, match="finite"):
        summaries.summarize_histogram(pl.DataFrame({"a": [0.0, None], "b": [1.0, 0.0]}))
    frames = _frames(tmp_path, {"a": [0.0, 1.0, np.nan], "b": [1.0, 0.0, 0.0]}, "nan")
    for name in ("parquet", "polars"):
        with pytest.raises(ValueError, match="finite"):
            summaries.summarize_histogram(frames[name])


def test_regression_summary_engines_agree(tmp_path):
    """X'X, X'y, y'y from every engine: equal to 1e-12 relative; N and sums too."""
    rng = np.random.default_rng(5)
    n, d = 9000, 3
    x = rng.normal(size=(n, d))
    y = x @ np.array([1.0, -0.5, 2.0]) + rng.normal(0.0, 0.3, n)
    w = np.column_stack([x + rng.normal(0, 0.5, x.shape), y + rng.normal(0, 0.5, n)])
    ref = summaries.summarize_regression(w)
    # sums of n = 9000 products in two orders (our blocks vs BLAS): (n - 1) u sum|terms| = 1e-12 of
    # sum|terms|, and an off-diagonal entry is ~sqrt(n) = 95 times smaller than sum|terms|
    # (independent columns): 1e-10 relative worst case, 1e-9 (was 1e-12)
    np.testing.assert_allclose(ref.scatter, w.T @ w, rtol=1e-9)
    # sums of n = 9000 products of both signs in two orders: (n - 1) u sum|terms| is ~1e-10 of the
    # result, 1e-9 (was 1e-12)
    np.testing.assert_allclose(ref.xty, w[:, :d].T @ w[:, d], rtol=1e-9)
    # n = 9000 same-sign squares in two orders: (n - 1) u = 1e-12 worst case, 1e-11 (was 1e-12)
    assert ref.n == n and ref.yty == pytest.approx(w[:, d] @ w[:, d], rel=1e-11)
    cols = {f"c{j}": w[:, j] for j in range(d + 1)}
    for name, data in _frames(tmp_path, cols, "reg").items():
        got = summaries.summarize_regression(data)
        assert got.n == n, name
        scale = np.abs(ref.scatter).max()
        # the same n = 9000 sums read from another file format, in another order: (n - 1) u = 1e-12
        # of the scale worst case, 1e-11 (was 1e-12)
        np.testing.assert_allclose(got.scatter / scale, ref.scatter / scale, rtol=0, atol=1e-11)
        # sums of n = 9000 values of both signs in another order: (n - 1) u sum|x|, sum|x| < n for
        # these draws, so 1e-11 n absolute (was 1e-12 n)
        np.testing.assert_allclose(got.sums, ref.sums, rtol=1e-12, atol=1e-11 * n)
    with pytest.raises(ValueError, match="finite"):
        summaries.summarize_regression(np.array([[1.0, np.inf]]))
    frames = _frames(tmp_path, {"a": [0.0, 1.0, np.nan], "b": [1.0, 0.0, 0.0]}, "regnan")
    for name in ("parquet", "pandas", "polars"):
        with pytest.raises(ValueError, match="finite"):
            summaries.summarize_regression(frames[name])


def test_summaries_on_dask_local_cluster():
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(6)
    bits = pmd.mechanisms.oue_perturb(rng.choice(3, 2000), 3, 1.0, rng)
    w = rng.normal(size=(2000, 3))
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster,
        Client(cluster),
    ):
        hb = summaries.summarize_histogram(dd.from_pandas(pd.DataFrame(bits), npartitions=4))
        sw = summaries.summarize_regression(
            dd.from_pandas(pd.DataFrame(w, columns=list("abc")), npartitions=4)
        )
    ref = summaries.summarize_histogram(bits)
    np.testing.assert_array_equal(hb.patterns, ref.patterns)
    np.testing.assert_array_equal(hb.counts, ref.counts)
    # a scatter matrix from dask partitions and by BLAS: sums of both signs in two orders, (n - 1)
    # u sum|terms| relative to an entry up to sqrt(n) smaller: 1e-9 (was 1e-12)
    np.testing.assert_allclose(sw.scatter, w.T @ w, rtol=1e-9)


# ---- the CLI's fit reads large files through the summary ------------------------------------


@pytest.mark.backend  # the CLI's fit samples as users run it (native compile)
def test_cli_fit_uses_the_summary_above_the_threshold(tmp_path, capsys, monkeypatch):
    """At >= SUMMARY_THRESHOLD reports `fit clipped-normal` summarises the file with DuckDB
    (no --max-rows limit); the table equals the NumPy summary (CSV header row skipped)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pymc_dpnoise.cli import main

    n = summaries.SUMMARY_THRESHOLD
    z = _normal_reports(n, 1.0, 11)
    pq.write_table(pa.table({"z": z}), tmp_path / "big.parquet")
    fast = ["--sampler", "pymc", "--draws", "100", "--tune", "100", "--cores", "1", "--quiet"]
    args = ["--lower", "-5", "--upper", "5", "--epsilon", "1", "--max-rows", "1000", *fast]
    assert main(["fit", "clipped-normal", str(tmp_path / "big.parquet"), *args]) == 0
    out = capsys.readouterr().out
    assert "binned summary" in out and "LaplacePerturbedClippedNormalSummary" in out
    post = out.split("Posterior summary")[1]
    mu_line = next(line for line in post.splitlines() if line.startswith("mu"))
    assert abs(float(mu_line.split()[1]) - 1.0) < 0.1  # mu = 1, posterior sd ~ 0.02

    # below the threshold: exact per-report likelihood
    small = tmp_path / "small.csv"
    pd.DataFrame({"z": z[:300]}).to_csv(small, index=False, float_format="%.17g")
    assert main(["fit", "clipped-normal", str(small), *args]) == 0
    out = capsys.readouterr().out
    assert "binned summary" not in out and "LaplacePerturbedClippedNormal(" in out

    # the CSV path (header row, text cells): same table as NumPy
    from pymc_dpnoise.cli import _fit
    from pymc_dpnoise.cli._read import open_table

    monkeypatch.setattr(summaries, "SUMMARY_THRESHOLD", 100)
    spec = _fit.MODELS["clipped-exponential"]
    ze = _exp_reports(500, 1.0, 12)
    pd.DataFrame({"other": 1, "z": ze}).to_csv(small, index=False, float_format="%.17g")

    class Args:
        epsilon, epsilon_column, column, upper = 1.0, None, "z", 5.0

    with open_table(str(small), header="auto", sep=None, max_rows=10) as t:
        data = _fit._summary_data(spec, Args, t)
    ref = pmd.summarize(ze, 0.0, 5.0, 1.0, model="exponential")
    assert data["z"].n_bins == ref.n_bins and data["z"].n_total == 500
    _assert_same_table(data["z"].table, ref.table)
    # a non-numeric cell is an input error naming the file
    pd.DataFrame({"z": [*map(str, ze[:200]), "oops"]}).to_csv(small, index=False)
    Args.column = None
    with open_table(str(small), header="auto", sep=None, max_rows=10) as t:
        with pytest.raises(_fit.InputError, match="NULL/NaN/inf"):
            _fit._summary_data(spec, Args, t)


@pytest.mark.heavy
def test_linreg_summary_equals_per_report_likelihood_and_draws_are_wishart():
    from pymc_dpnoise.distributions.regression import PerturbedLinReg, PerturbedLinRegSummary

    rng = np.random.default_rng(8)
    n, theta, cov = 4000, np.array([1.0, -0.5]), np.array([[1.0, 0.3], [0.3, 2.0]])
    x = rng.multivariate_normal(np.zeros(2), cov, n)
    y = x @ theta + rng.normal(0.0, 0.3, n)
    w = np.column_stack([x + rng.normal(0, 0.5, x.shape), y + rng.normal(0, 0.4, n)])
    s = summaries.summarize_regression(w)
    for th in (theta, np.array([0.2, 0.7])):
        kw = dict(theta=th, sigma=0.3, cov=cov, sigma_x=np.array([0.5, 0.6]), sigma_y=0.4)
        full = pm.logp(PerturbedLinReg.dist(**kw), w).sum().eval()
        comp = pm.logp(PerturbedLinRegSummary.dist(**kw, n=s.n), s.scatter).eval()
        # the summary's log density (a trace and a log det of the scatter) against the per-row one:
        # sums in another order and two Cholesky paths (cond <= 1e2), 1e-10
        np.testing.assert_allclose(comp, full, rtol=1e-10)
    with pm.Model() as model:
        t = pm.Normal("theta", 0.0, 5.0, shape=2)
        PerturbedLinRegSummary(
            "z", theta=t, sigma=0.3, cov=cov, sigma_x=0.5, sigma_y=0.4, observed=s
        )
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    # draws: Wishart(n, C) -> mean n C, Var(S_ii) = 2 n C_ii^2 (against the simulated reports)
    kw = dict(theta=theta, sigma=0.3, cov=cov, sigma_x=0.5, sigma_y=0.4)
    draws = pm.draw(PerturbedLinRegSummary.dist(**kw, n=50), draws=4000, random_seed=1)
    c = pm.draw(PerturbedLinReg.dist(**kw), draws=200_000, random_seed=2)
    c = c.T @ c / len(c)
    np.testing.assert_allclose(draws.mean(0), 50 * c, atol=6 * np.sqrt(2 * 50 / 4000) * c.max())
    np.testing.assert_allclose(draws[:, 2, 2].var(), 2 * 50 * c[2, 2] ** 2, rtol=0.1)
    with pytest.raises(ValueError, match="n"):
        PerturbedLinRegSummary.dist(**kw, n=0)


# ---- issue 22: the same refusals from every engine ---------------------------------------


def _engines(tmp_path, columns: dict, tag):
    """``columns`` as every engine that is installed: NumPy, files, DuckDB, pandas, Polars,
    PyArrow, Dask (CSV only where the values survive a CSV round trip)."""
    import pandas as pd

    pdf = pd.DataFrame(columns)
    out = {"numpy": pdf.to_numpy() if len(columns) > 1 else pdf.iloc[:, 0].to_numpy()}
    out["pandas"] = pdf
    for mod, make in (
        ("polars", lambda m: m.from_pandas(pdf)),
        ("pyarrow", lambda m: m.Table.from_pandas(pdf, preserve_index=False)),
        ("duckdb", lambda m: m.from_arrow(__import__("pyarrow").Table.from_pandas(pdf))),
        ("dask.dataframe", lambda m: m.from_pandas(pdf, npartitions=2)),
    ):
        try:
            module = __import__(mod, fromlist=["_"])
        except ImportError:
            continue
        out[mod.split(".")[0]] = make(module)
    try:
        pdf.to_parquet(tmp_path / f"{tag}.parquet", index=False)
        out["parquet"] = tmp_path / f"{tag}.parquet"
    except ImportError:
        pass
    return out


def _builders(column):
    """The three summary builders, each called on one column ``column`` (or all columns)."""
    return {
        "summarize": lambda d, name: pmd.summarize(
            d, -5.0, 5.0, 1.0, n_bins=4, column=None if name == "numpy" else column
        ),
        "aggregate": lambda d, name: summaries.aggregate(
            d, summaries.ClippedBinning(-5.0, 5.0, 4), column=None if name == "numpy" else column
        ),
        "summarize_histogram": lambda d, name: summaries.summarize_histogram(d),
        "summarize_regression": lambda d, name: summaries.summarize_regression(d),
    }


@pytest.mark.parametrize("missing", [np.nan, None, np.inf])
def test_missing_reports_refused_naming_the_column_on_every_engine(tmp_path, missing):
    """NaN / None / inf: one ValueError naming the column, from every engine and builder
    (pandas used to raise its own IntCastingNaNError from the binning expression)."""
    for name, data in _engines(tmp_path, {"zz": [0.0, missing, 1.0]}, "nan").items():
        for call in _builders("zz").values():
            where = "'data'" if name == "numpy" else "'zz'"
            with pytest.raises(ValueError, match=f"reports must be finite; column {where} has 1"):
                call(data, name)


def test_missing_reports_name_the_second_column(tmp_path):
    for name, data in _engines(tmp_path, {"a": [0.0, 1.0], "b": [1.0, np.nan]}, "nan2").items():
        where = "'column 1'" if name == "numpy" else "'b'"
        for call in (summaries.summarize_histogram, summaries.summarize_regression):
            with pytest.raises(ValueError, match=f"column {where} has 1 NULL"):
                call(data)


def test_empty_reports_one_error_on_every_engine(tmp_path):
    """No rows: the same ValueError from every engine and builder (it used to be a reshape
    error, a float-to-int error, or a summary of nothing)."""
    for name, data in _engines(tmp_path, {"z": np.array([], dtype=float)}, "empty").items():
        for call in _builders("z").values():
            with pytest.raises(ValueError, match=r"^data: no reports \(0 rows\)"):
                call(data, name)
    for empty in ([], np.zeros((0, 3))):
        with pytest.raises(ValueError, match=r"^data: no reports"):
            summaries.summarize_histogram(empty)


def test_non_numeric_columns_refused_on_every_engine(tmp_path):
    """A string column is a TypeError naming it (it used to be cast: '0.5' read as 0.5)."""
    for name, data in _engines(tmp_path, {"s": ["0.5", "1", "2"]}, "str").items():
        for call in _builders("s").values():
            where = "data" if name == "numpy" else "s"
            with pytest.raises(TypeError, match=f"column '{where}' is not numeric"):
                call(data, name)
    with pytest.raises(TypeError, match="not numeric"):
        summaries.summarize_regression([[1.0, "2"], [3.0, 4.0]])
    with pytest.raises(TypeError, match="not numeric"):
        summaries.summarize_histogram(np.array([0, "x", 1], dtype=object))


@pytest.mark.parametrize("bad", ["1", True, np.bool_(True), None, [1.0], "nan"])
@pytest.mark.parametrize("arg", ["lower", "upper", "epsilon", "tol"])
def test_non_numeric_scalar_arguments_refused(arg, bad):
    """``epsilon="1"`` (and bools, lists, None) for any scalar argument: a TypeError naming
    it, not a silent ``float()``."""
    kw = dict(lower=-5.0, upper=5.0, epsilon=1.0, tol=0.01)
    kw[arg] = bad
    with pytest.raises(TypeError, match=f"^{arg}: must be a real number"):
        pmd.summarize(np.zeros(3), kw["lower"], kw["upper"], kw["epsilon"], tol=kw["tol"])
    if arg != "tol":
        with pytest.raises(TypeError, match=f"^{arg}: must be a real number"):
            summaries.summarize_if_large(np.zeros(3), kw["lower"], kw["upper"], kw["epsilon"])
    if arg in ("lower", "upper"):
        with pytest.raises(TypeError, match=f"^{arg}: must be a real number"):
            summaries.ClippedBinning(kw["lower"], kw["upper"], 4)
    for n_bins in (True, 2.0, "4"):
        with pytest.raises(TypeError, match=r"^n_bins: must be an integer"):
            pmd.summarize(np.zeros(3), -5.0, 5.0, 1.0, n_bins=n_bins)
    # numbers of every kind still work
    assert pmd.summarize(np.zeros(3), np.int64(-5), 5, np.float32(1.0), n_bins=np.int64(4))


@pytest.mark.parametrize("base", [2**53, 2**60, 2**62])
def test_large_pattern_keys_never_collide(tmp_path, base):
    """Item ids that float64 cannot tell apart (2**60 and 2**60 + 1) are refused on every
    engine instead of being merged into one pattern; ids below 2**53 stay exact."""
    ids = np.array([base, base + 1, 3], dtype=np.int64)
    for data in _engines(tmp_path, {"item": ids}, f"big{base}").values():
        with pytest.raises(ValueError, match=r"item ids must be below 2\*\*53"):
            summaries.summarize_histogram(data)
    ok = np.array([2**53 - 1, 2**53 - 2, 2**53 - 1], dtype=np.int64)
    for name, data in _engines(tmp_path, {"item": ok}, "ok").items():
        s = summaries.summarize_histogram(data)
        assert s.patterns.tolist() == [2**53 - 2, 2**53 - 1], name
        assert s.counts.tolist() == [1, 2], name


def test_choose_n_bins_warns_when_max_bins_caps_the_budget():
    """A bin count capped by ``max_bins`` cannot keep ``tol``: the bound says so and a
    warning says what helps (the uncapped count, from the h^3 law, keeps it)."""
    with pytest.warns(UserWarning, match=r"max_bins = 8 bins give an error bound") as rec:
        k, bound = summaries.choose_n_bins("normal", 10**6, LO, HI, 4.0, 1e-3, max_bins=8)
    assert k == 8 and bound > 1e-3
    advised = int(re.search(r"; (\d+) bins would do", str(rec[0].message)).group(1))
    k2, b2 = summaries.choose_n_bins("normal", 10**6, LO, HI, 4.0, 1e-3, max_bins=advised)
    assert k2 == advised
    assert b2 <= 1e-3
