"""Calibration and closeness diagnostics."""

import itertools

import numpy as np
import pytest

from pymc_dpnoise import diagnostics as d
from pymc_dpnoise.experiments.ldp_calibration import ClippedExponentialSBC, ClippedNormalSBC


def test_posterior_quantile():
    draws = np.arange(100.0)
    assert d.posterior_quantile(draws, 49.5) == 0.5
    assert d.posterior_quantile(draws, -1) == 0.0
    assert d.posterior_quantile(draws, 1e9) == 1.0
    assert d.posterior_quantile([1.0, 1.0], 1.0) == 0.5
    with pytest.raises(ValueError):
        d.posterior_quantile([], 0.0)


def test_binomial_band_contains_level():
    lo, hi = d.binomial_band(0.9, 200, 0.95)
    assert lo < 0.9 < hi
    se = np.sqrt(0.9 * 0.1 / 200)
    assert hi - lo == pytest.approx(2 * 1.96 * se, abs=0.01)


def test_coverage_table_calibrated_vs_overconfident():
    rng = np.random.default_rng(0)
    calibrated = rng.uniform(size=(400, 2))
    tab = d.coverage_table(calibrated)
    assert tab["inside"].all()
    assert set(tab["level"]) == set(d.DEFAULT_LEVELS)
    # an overconfident posterior puts the truth in its tails too often
    overconfident = np.clip(0.5 + 2.0 * (calibrated - 0.5), 0, 1)
    tab2 = d.coverage_table(overconfident)
    assert not tab2["inside"].any()
    assert (tab2["coverage"] < tab2["level"]).all()


def test_ks_uniform():
    rng = np.random.default_rng(1)
    stat, p = d.ks_uniform(rng.uniform(size=500))
    assert p > 0.01
    stat2, p2 = d.ks_uniform(rng.beta(3, 3, size=500))
    assert stat2 > stat and p2 < 1e-3


def test_mmd_detects_shift_and_is_zero_in_expectation():
    rng = np.random.default_rng(2)
    same = [d.mmd(rng.normal(size=200), rng.normal(size=200)) for _ in range(10)]
    assert abs(np.mean(same)) < 0.01
    shifted = d.mmd(rng.normal(size=200), rng.normal(1.0, size=200))
    assert shifted > 0.1
    two_d = d.mmd(rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + [0.0, 2.0])
    assert two_d > 0.1
    with pytest.raises(ValueError):
        d.mmd(np.zeros((5, 2)), np.zeros((5, 3)))


def test_ecdf_distance():
    assert d.ecdf_distance([0.0, 1.0], [0.0, 1.0]) == 0.0
    # disjoint samples: ECDFs differ by 1 on half the pooled points, 0 at the others
    assert d.ecdf_distance([0.0, 1.0], [10.0, 11.0]) == pytest.approx(0.5)
    rng = np.random.default_rng(3)
    near = d.ecdf_distance(rng.normal(size=1000), rng.normal(size=1000))
    far = d.ecdf_distance(rng.normal(size=1000), rng.normal(0.5, size=1000))
    assert near < 0.03 < far


def test_split_rhat():
    rng = np.random.default_rng(4)
    assert d.split_rhat(rng.normal(size=(4, 500))) == pytest.approx(1.0, abs=0.02)
    stuck = rng.normal(size=(4, 500)) + np.array([[0], [0], [0], [5]])
    assert d.split_rhat(stuck) > 1.5


def test_plot_coverage(tmp_path):
    rng = np.random.default_rng(5)
    tabs = []
    for eps in (0.1, 1.0):
        t = d.coverage_table(rng.uniform(size=(50, 1)))
        t["epsilon"], t["model"], t["param"] = eps, "noise-aware", "mu"
        tabs.append(t)
    import pandas as pd

    fig = d.plot_coverage(pd.concat(tabs))
    fig.savefig(tmp_path / "cov.png")
    assert (tmp_path / "cov.png").stat().st_size > 1000


@pytest.mark.backend  # SBC fits with nutpie (Numba)
def test_sbc_pipeline_runs_and_is_seed_deterministic():
    """A tiny SBC run (one process): shapes, finite quantiles, same seed -> same result."""
    problem = ClippedExponentialSBC(n=100, epsilon=1.0)
    r1 = d.simulation_based_calibration(problem, 3, seed=7, n_jobs=1, draws=100, tune=100)
    r2 = d.simulation_based_calibration(problem, 3, seed=7, n_jobs=1, draws=100, tune=100)
    assert r1.quantiles.shape == (3, 1)
    assert np.all((r1.quantiles >= 0) & (r1.quantiles <= 1))
    np.testing.assert_array_equal(r1.truths, r2.truths)
    np.testing.assert_allclose(r1.quantiles, r2.quantiles)
    assert set(r1.coverage()["param"]) == {"lam"}


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_sbc_noise_aware_calibrated_naive_not(epsilon):
    """Live SBC: noise-aware coverage inside the 99% binomial band, naive outside at small ε."""
    problem = ClippedNormalSBC(n=500, epsilon=epsilon)
    aware = d.simulation_based_calibration(problem, 60, seed=11, draws=300, tune=300)
    cov = aware.coverage()
    assert cov["inside"].all(), cov
    if epsilon <= 0.1:
        naive = d.simulation_based_calibration(
            problem, 30, noise_aware=False, seed=11, draws=300, tune=300
        )
        cov_n = naive.coverage()
        assert not cov_n[cov_n["param"] == "sigma"]["inside"].any(), cov_n


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.1, 4.0])
def test_sbc_exponential_calibrated_naive_not(epsilon):
    problem = ClippedExponentialSBC(n=500, epsilon=epsilon)
    aware = d.simulation_based_calibration(problem, 60, seed=12, draws=300, tune=300)
    assert aware.coverage()["inside"].all(), aware.coverage()
    naive = d.simulation_based_calibration(
        problem, 30, noise_aware=False, seed=12, draws=300, tune=300
    )
    assert not naive.coverage()["inside"].any(), naive.coverage()


@pytest.mark.backend  # runs NUTS: the default mode's compile is cheaper than sampling on the Python VM
def test_sample_compiled_swaps_data_and_reports_diagnostics():
    """The nutpie helper behind every experiment: new pm.Data values change the posterior;
    draws are flattened over chains; divergences and split-R-hat are reported."""
    import nutpie
    import pymc as pm

    from pymc_dpnoise.diagnostics import sample_compiled

    with pm.Model() as model:
        y = pm.Data("y", np.zeros(50))
        theta = pm.Normal("theta", 0.0, 10.0, shape=2)
        pm.Normal("obs", theta[0] + theta[1] * 0.0, 1.0, observed=y)
    compiled = nutpie.compile_pymc_model(model)
    rng = np.random.default_rng(0)
    post, info = sample_compiled(
        compiled, draws=300, tune=300, chains=2, seed=1, y=rng.normal(3.0, 1.0, 50)
    )
    assert post.shape == (600, 2)
    assert abs(post[:, 0].mean() - 3.0) < 0.5
    assert set(info) == {"divergences", "max_rhat", "seconds", "chains_dropped"}
    assert info["chains_dropped"] == 0
    assert info["max_rhat"] < 1.1 and info["divergences"] >= 0
    post2, _ = sample_compiled(
        compiled, draws=300, tune=300, chains=2, seed=1, y=rng.normal(-3.0, 1.0, 50)
    )
    assert abs(post2[:, 0].mean() + 3.0) < 0.5


@pytest.mark.backend  # runs NUTS: the default mode's compile is cheaper than sampling on the Python VM
def test_sample_compiled_drops_chains_stuck_in_a_minor_mode():
    """Two separated modes, the one at +6 with e^-20 of the mass: chains that start on its
    side stay there.  ``drop_stuck_chains`` removes exactly those chains."""
    import nutpie
    import pymc as pm
    import pytensor.tensor as pt

    from pymc_dpnoise.diagnostics import sample_compiled

    with pm.Model() as model:
        shift = pm.Data("shift", 0.0)
        x = pm.Flat("theta")
        a = pm.logp(pm.Normal.dist(-6.0 + shift, 0.3), x)
        b = pm.logp(pm.Normal.dist(6.0 + shift, 0.3), x) - 20.0
        pm.Potential("mix", pt.logaddexp(a, b))
    compiled = nutpie.compile_pymc_model(model)
    kw = dict(draws=200, tune=300, chains=6, seed=3, shift=np.array(0.0))
    everything, info_all = sample_compiled(compiled, **kw)
    per_chain = everything.reshape(6, 200)
    in_minor = (per_chain.mean(axis=1) > 0).sum()
    assert 0 < in_minor < 6, "the test needs chains in both modes"
    assert info_all["chains_dropped"] == 0 and info_all["max_rhat"] > 2
    kept, info = sample_compiled(compiled, drop_stuck_chains=10.0, **kw)
    assert info["chains_dropped"] == in_minor
    assert kept.shape == ((6 - in_minor) * 200,)
    assert np.all(kept < 0) and info["max_rhat"] < 1.1


# --------------------------------------------------------------------------------------------
# Point-estimate metrics: AUC against a brute-force pairwise count, RMSE, two-sample KS
# --------------------------------------------------------------------------------------------


def _auc_pairs_bool(s, y):
    s, y = np.asarray(s, float), np.asarray(y, bool)
    diff = s[y][:, None] - s[~y][None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def test_auc_matches_pairwise_definition_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(5, 200))
        y = rng.random(n) < rng.uniform(0.1, 0.9)
        if y.all() or not y.any():
            continue
        s = rng.integers(0, 6, size=n).astype(float)  # many ties
        assert d.auc(s, y) == pytest.approx(_auc_pairs_bool(s, y), abs=1e-12)
        s2 = rng.normal(size=n)
        assert d.auc(s2, y) == pytest.approx(_auc_pairs_bool(s2, y), abs=1e-12)
        # an AUC: ratios of pair counts, exact rationals rounded once, a few ulp
        assert d.auc(-s2, y) == pytest.approx(1.0 - _auc_pairs_bool(s2, y), abs=1e-12)
    with pytest.raises(ValueError, match="both classes"):
        d.auc([0.1, 0.2], [1, 1])


def _auc_pairs(s, lab):
    pos, neg = s[lab > 0], s[lab <= 0]
    wins = sum((a > b) + 0.5 * (a == b) for a, b in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_matches_pairwise_count_with_ties(seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 6, size=40).astype(float)  # many ties
    lab = np.where(rng.random(40) < 0.4, 1.0, -1.0)
    assert d.auc(s, lab) == pytest.approx(_auc_pairs(s, lab), abs=1e-12)
    # labels 0/1 and ±1 give the same value; reversed scores give 1 - AUC
    assert d.auc(s, (lab > 0).astype(int)) == pytest.approx(d.auc(s, lab))
    assert d.auc(-s, lab) == pytest.approx(1.0 - d.auc(s, lab))


def test_auc_extremes_and_errors():
    assert d.auc([1, 2, 3, 4], [-1, -1, 1, 1]) == 1.0
    assert d.auc([4, 3, 2, 1], [-1, -1, 1, 1]) == 0.0
    assert d.auc([1, 1, 1], [0, 1, 1]) == 0.5
    with pytest.raises(ValueError, match="both classes"):
        d.auc([0.1, 0.2], [1, 1])


def test_rmse_over_all_or_along_an_axis():
    e = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 4.0]])
    t = np.array([1.0, 0.0, 3.0])
    assert d.rmse(e, t) == pytest.approx(1.0)  # squared errors 0, 4, 0, 1, 0, 1
    np.testing.assert_allclose(d.rmse(e, t, axis=-1), [np.sqrt(4 / 3), np.sqrt(2 / 3)])
    assert isinstance(d.rmse([1.0], [2.0]), float)


def test_ks_distance_is_the_largest_ecdf_gap():
    rng = np.random.default_rng(4)
    x, y = rng.normal(size=60), rng.normal(0.5, 1.0, size=45)
    grid = np.concatenate([x, y])
    fx = (x[None, :] <= grid[:, None]).mean(1)
    fy = (y[None, :] <= grid[:, None]).mean(1)
    # a KS distance: differences of counts / n, exact rationals rounded once, a few ulp
    assert d.ks_distance(x, y) == pytest.approx(np.abs(fx - fy).max(), abs=1e-12)
    assert d.ks_distance(x, x) == 0.0
    with pytest.raises(ValueError, match="non-empty"):
        d.ks_distance([], y)
