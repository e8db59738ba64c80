"""Reports released by OpenDP are read by our distributions, and the posterior is calibrated.

The parameter maps of :mod:`pymc_dpnoise.mechanisms.opendp_releases` are checked three ways:
OpenDP's own privacy map states exactly the epsilon asked for; the released reports have the
distribution our likelihood assumes (KS / chi-square against the mechanism); and posteriors
computed with our distributions' logp from OpenDP releases are calibrated (simulation-based
calibration with an exact grid posterior, no MCMC error; the full version is ``slow``).

The noise specs read from OpenDP's ``make_laplace`` / ``make_gaussian`` measurements
(:func:`~pymc_dpnoise.noise.from_opendp`) are checked against OpenDP's own draws: OpenDP's
noise is unseedable, so every check is a chi-square (or KS) test with a false-alarm rate of
1e-4, and each comes with the same test against a wrong spec (scale off by 20%, or the
rounded continuous noise), which must fail it.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from noise_pmfs import (
    PMFS,
    chisq_pvalue,
    pmf_discrete_gaussian,
    pmf_discrete_laplace,
    window,
)
from scipy import stats

import pymc_dpnoise as pmd
from pymc_dpnoise import noise
from pymc_dpnoise.diagnostics import binomial_band
from pymc_dpnoise.mechanisms.opendp_releases import (
    MAP_RTOL,
    clamp_from_measurement,
    model_kwargs_from_measurement,
    noise_from_measurement,
    release_clipped_laplace,
    release_discrete_gaussian_counts,
    release_discrete_laplace_counts,
    release_krr,
    release_sue,
)

pytest.importorskip("opendp")
dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_clipped_laplace_map_and_noise(epsilon):
    rng = np.random.default_rng(1)
    x = rng.normal(1.0, 3.0, size=4000)
    rel = release_clipped_laplace(x, -5.0, 5.0, epsilon)
    # a parameter read back (stored value or one exp/log/sqrt of it): a few ulp, 1e-12 is ~9000 ulp
    assert rel.epsilon == pytest.approx(epsilon, rel=1e-12)
    assert rel.model_kwargs == {"lower": -5.0, "upper": 5.0, "epsilon": epsilon}
    noise = rel.reports - np.clip(x, -5.0, 5.0)
    assert stats.kstest(noise, stats.laplace(scale=10.0 / epsilon).cdf).pvalue > 1e-3
    # ... and a wrong scale is detected (power of the check)
    assert stats.kstest(noise, stats.laplace(scale=12.0 / epsilon).cdf).pvalue < 1e-3


def test_krr_and_sue_maps_and_frequencies():
    k, eps, n = 4, 1.0, 6000
    items = np.full(n, 2)
    rel = release_krr(items, k, eps)
    # a parameter read back (stored value or one exp/log/sqrt of it): a few ulp, 1e-12 is ~9000 ulp
    assert rel.epsilon == pytest.approx(eps, rel=1e-12)
    keep = np.exp(eps) / (np.exp(eps) + k - 1)
    expected = np.full(k, (1 - keep) / (k - 1) * n)
    expected[2] = keep * n
    assert stats.chisquare(np.bincount(rel.reports, minlength=k), expected).pvalue > 1e-3

    rel = release_sue(np.full(2000, 1), 3, eps)
    # a parameter read back (stored value or one exp/log/sqrt of it): a few ulp, 1e-12 is ~9000 ulp
    assert rel.epsilon == pytest.approx(eps, rel=1e-12)
    assert rel.reports.shape == (2000, 3) and set(np.unique(rel.reports)) <= {0, 1}
    keep_bit = np.exp(eps / 2) / (1 + np.exp(eps / 2))
    rate = rel.reports.mean(axis=0)  # P(report bit = 1): keep for the true bit, flip otherwise
    se = np.sqrt(keep_bit * (1 - keep_bit) / 2000)
    np.testing.assert_allclose(rate, [1 - keep_bit, keep_bit, 1 - keep_bit], atol=5 * se)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: release_clipped_laplace([0.0], -1.0, 1.0, 0.0), "epsilon"),
        (lambda: release_clipped_laplace([0.0], 1.0, -1.0, 1.0), "lower"),
        (lambda: release_clipped_laplace([np.nan], -1.0, 1.0, 1.0), "`x`"),
        (lambda: release_clipped_laplace([0.0], -1.0, 1.0, [1.0, 2.0]), "epsilon"),
        (lambda: release_krr([0, 3], 3, 1.0), "items"),
        (lambda: release_krr([0, 1], 1, 1.0), "`k`"),
        (lambda: release_sue([0.5], 3, 1.0), "items"),
        (lambda: release_sue(["a"], 3, 1.0), "items"),
        (lambda: release_discrete_laplace_counts([1, 2], 0.0), "`epsilon`"),
        (lambda: release_discrete_laplace_counts([1, 2], [1.0, 2.0]), "`epsilon`"),
        (lambda: release_discrete_laplace_counts([1, 2], 1.0, sensitivity=-1.0), "`sensitivity`"),
        (lambda: release_discrete_gaussian_counts([1, 2], np.nan), "`rho`"),
        (lambda: release_discrete_gaussian_counts([1, 2], None), "`rho`"),
        (lambda: release_discrete_gaussian_counts([-1, 2], 1.0, T="u32"), "`counts`"),
        (lambda: release_discrete_laplace_counts([1.5], 1.0), "`counts`"),
        (lambda: release_discrete_laplace_counts([[1]], 1.0), "`counts`"),
        (lambda: release_discrete_laplace_counts(["1"], 1.0), "`counts`"),
        (lambda: release_discrete_laplace_counts([1], 1.0, T="i8"), "`T`"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# --------------------------------------------------------------------------------------------
# Noise specs of make_laplace / make_gaussian measurements, against OpenDP's own draws
# --------------------------------------------------------------------------------------------

P_OK = 1e-4  # false-alarm rate of each check (OpenDP's noise cannot be seeded)
N_VECTOR, N_ATOM = 20_000, 4_000  # draws per check (an atom measurement is one call per draw)


def _fitting_sample(draw, pvalue):
    """``(draws, p)``: a sample of OpenDP's noise and its p-value against the spec, from a
    second, independent sample when the first is rejected at ``P_OK``.  OpenDP's noise cannot
    be seeded; a real mismatch is rejected in every sample (p ~ 0), a false alarm (rate
    ``P_OK`` per check, ~1e-3 per run over this file's checks: one happened in CI) almost
    never twice, so a check fails falsely at rate ``P_OK**2``."""
    draws = draw()
    p = pvalue(draws)
    if p <= P_OK:
        draws = draw()
        p = pvalue(draws)
    return draws, p


def _noise_pvalue(draws, kind, param):
    k = window(param)
    return chisq_pvalue(draws, k, PMFS[kind](k, param))


def _space(T, vector, gaussian):
    atom = dp.atom_domain(T=T, nan=False) if T.startswith("f") else dp.atom_domain(T=T)
    if not vector:
        return atom, dp.absolute_distance(T=T)
    metric = dp.l2_distance(T=T) if gaussian else dp.l1_distance(T=T)
    return dp.vector_domain(atom), metric


INTEGER_CASES = [
    # (make_*, element type, vector domain, scale, the count the noise is added to)
    ("laplace", "i32", False, 0.5, 0),
    ("laplace", "i64", True, 0.5, 0),
    ("laplace", "u32", True, 20.0, 1000),  # unsigned: far from 0, so nothing is censored
    ("gaussian", "i64", False, 0.5, 0),
    ("gaussian", "i32", True, 0.5, 0),
    ("gaussian", "u64", True, 20.0, 1000),
]


@pytest.mark.parametrize("kind, T, vector, scale, count", INTEGER_CASES)
def test_integer_measurement_noise_matches_the_spec(kind, T, vector, scale, count):
    gaussian = kind == "gaussian"
    make = dp.m.make_gaussian if gaussian else dp.m.make_laplace
    meas = make(*_space(T, vector, gaussian), scale=scale)
    spec = noise.from_opendp(meas)
    expected = noise.DiscreteGaussian(scale) if gaussian else noise.DiscreteLaplace(scale)
    assert spec == expected
    budget = spec.rho(1) if gaussian else spec.epsilon(1)
    assert meas.map(1) == pytest.approx(budget, rel=MAP_RTOL)
    assert clamp_from_measurement(meas) == ({"lower": 0} if T.startswith("u") else {})

    def draw():
        if vector:
            return np.asarray(meas([count] * N_VECTOR), dtype=np.int64) - count
        return np.fromiter((meas(count) for _ in range(N_ATOM)), np.int64, N_ATOM) - count

    draws, p = _fitting_sample(draw, lambda d: _noise_pvalue(d, kind, scale))
    assert p > P_OK
    # power: a scale off by 20% is rejected, and at a small scale the rounded continuous noise
    assert _noise_pvalue(draws, kind, 1.2 * scale) < P_OK
    if scale < 1:
        rounded = "rounded_normal" if gaussian else "rounded_laplace"
        assert _noise_pvalue(draws, rounded, scale) < P_OK


def test_spec_logp_is_thepmf_of_the_checks():
    """The specs' PyTensor log pmfs are the pmfs the chi-square checks above use (one compile)."""
    specs = [noise.DiscreteLaplace(0.5), noise.DiscreteLaplace(20.0)]
    specs += [noise.DiscreteGaussian(0.5), noise.DiscreteGaussian(20.0)]
    x = pt.dvector("x")
    f = pytensor.function([x], [s.logp(x) for s in specs])
    k = np.arange(-60.0, 61.0)
    got = f(k)
    want = [pmf_discrete_laplace(k, 0.5), pmf_discrete_laplace(k, 20.0)]
    want += [pmf_discrete_gaussian(k, 0.5), pmf_discrete_gaussian(k, 20.0)]
    for g, w in zip(got, want, strict=True):
        finite = w > 1e-300
        # our log pmf against an exact pmf computed independently (log of a normalised sum, a few
        # ulp): 1e-10 relative; atol for values near 0
        np.testing.assert_allclose(g[finite], np.log(w[finite]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("gaussian", [False, True])
def test_float_measurement_is_the_continuous_spec(gaussian):
    make = dp.m.make_gaussian if gaussian else dp.m.make_laplace
    meas = make(*_space("f64", True, gaussian), scale=3.0)
    spec = noise.from_opendp(meas)
    assert spec == (noise.Gaussian(3.0) if gaussian else noise.Laplace(3.0))
    assert clamp_from_measurement(meas) == {}
    dist = stats.norm if gaussian else stats.laplace
    draws, p = _fitting_sample(
        lambda: np.asarray(meas([0.0] * 10_000)),
        lambda d: stats.kstest(d, dist(scale=3.0).cdf).pvalue,
    )
    assert p > P_OK
    assert stats.kstest(draws, dist(scale=3.6).cdf).pvalue < P_OK
    # an f32 distance converts with a relative error of ~4e-8: still within MAP_RTOL
    meas32 = make(dp.atom_domain(T="f32", nan=False), dp.absolute_distance(T="f32"), scale=3.0)
    assert noise.from_opendp(meas32, d_in=0.3) == type(spec)(3.0)


def test_chains_fallback_and_d_in():
    """The noise at the end of a chain, the sensitivity carried through the transformations,
    and the scale inverted from the map when OpenDP's record of the constructor is missing."""
    records = dp.vector_domain(dp.atom_domain(T="i32")), dp.symmetric_distance()
    count_dl = records >> dp.t.then_count() >> dp.m.then_laplace(4.0)
    assert noise_from_measurement(count_dl) == noise.DiscreteLaplace(4.0)
    count_dg = records >> dp.t.then_count() >> dp.m.then_gaussian(4.0)
    assert noise_from_measurement(count_dg, d_in=3) == noise.DiscreteGaussian(4.0)

    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    total = floats >> dp.t.then_clamp((0.0, 10.0)) >> dp.t.then_sum() >> dp.m.then_laplace(5.0)
    assert noise_from_measurement(total) == noise.Laplace(5.0)  # the sum's slack is carried

    for make, spec in [
        (dp.m.make_laplace, noise.DiscreteLaplace),
        (dp.m.make_gaussian, noise.DiscreteGaussian),
    ]:
        meas = make(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=2.5)
        del meas.__opendp_dict__  # no record: the scale comes from the map
        assert noise_from_measurement(meas, d_in=1).param == pytest.approx(2.5, rel=1e-12)
        assert noise_from_measurement(meas, d_in=4).param == pytest.approx(2.5, rel=1e-12)
        assert type(noise_from_measurement(meas)) is spec

    meas = dp.m.make_gaussian(*_space("u32", True, True), scale=4.0)
    assert model_kwargs_from_measurement(meas) == {"noise": noise.DiscreteGaussian(4.0), "lower": 0}


def _approx_dp():
    g = dp.m.make_gaussian(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=2.0)
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(g), 1e-6)


def _float_laplace(**kw):
    return dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), **kw
    )


@pytest.mark.parametrize(
    "build, d_in, error, match",
    [
        (_approx_dp, 1, ValueError, "Approximate"),
        (
            lambda: dp.m.make_randomized_response_bool(0.7),
            1,
            ValueError,
            "make_randomized_response_bool",
        ),
        (lambda: _float_laplace(scale=3.0, k=-10), 1.0, ValueError, "MAP_RTOL"),
        (lambda: _float_laplace(scale=0.0), 1.0, ValueError, "scale"),
        (lambda: _float_laplace(scale=1e9), 1.0, ValueError, "scale"),
        (
            lambda: dp.m.make_laplace(*_space("i64", False, False), scale=2.0),
            1.0,
            ValueError,
            "`d_in`",
        ),
        (
            lambda: dp.m.make_laplace(*_space("i64", False, False), scale=2.0),
            0,
            ValueError,
            "`d_in`",
        ),
        (
            lambda: dp.m.make_laplace(*_space("i64", False, False), scale=2.0),
            "1",
            TypeError,
            "`d_in`",
        ),
        (lambda: "make_laplace", 1, TypeError, "`measurement`"),
    ],
)
def test_other_measurements_are_refused(build, d_in, error, match):
    with pytest.raises(error, match=match):
        noise.from_opendp(build(), d_in)


def test_count_releases_state_their_budget_and_noise():
    counts = np.full(N_VECTOR, 7)
    sigma = 1.0 / np.sqrt(0.04)
    rel, p = _fitting_sample(
        lambda: release_discrete_gaussian_counts(counts, rho=0.02),
        lambda r: _noise_pvalue(r.reports - 7, "gaussian", sigma),
    )
    # a parameter read back (stored value or one exp/log/sqrt of it): a few ulp, 1e-12 is ~9000 ulp
    assert rel.rho == pytest.approx(0.02, rel=1e-12) and rel.epsilon is None
    assert rel.model_kwargs == {"noise": noise.DiscreteGaussian(sigma)}
    assert rel.reports.shape == counts.shape and rel.reports.dtype == np.int64
    assert p > P_OK
    assert _noise_pvalue(rel.reports - 7, "gaussian", 1.2 * sigma) < P_OK

    # unsigned: OpenDP's saturating cast censors at 0, which model_kwargs says (lower=0)
    k = window(2.0)
    pmf = pmf_discrete_laplace(k, 2.0)
    support = np.arange(0, k.max() + 3)
    censored = np.concatenate([[pmf[k <= -2].sum()], pmf[k >= -1]])
    rel, p = _fitting_sample(
        lambda: release_discrete_laplace_counts(
            np.full(N_VECTOR, 2), epsilon=0.5, sensitivity=1, T="u32"
        ),
        lambda r: chisq_pvalue(r.reports.astype(np.int64), support, censored),
    )
    # a parameter read back (stored value or one exp/log/sqrt of it): a few ulp, 1e-12 is ~9000 ulp
    assert rel.epsilon == pytest.approx(0.5, rel=1e-12) and rel.rho is None
    assert rel.model_kwargs == {"noise": noise.DiscreteLaplace(2.0), "lower": 0}
    assert rel.reports.min() >= 0
    assert p > P_OK
    assert np.mean(rel.reports == 0) > 0.15  # the atom: P(noise <= -2) = e^{-1}/(1 + e^{-1/2})

    one = release_discrete_laplace_counts(12, epsilon=1.0, sensitivity=2)
    assert one.reports.shape == () and one.model_kwargs == {"noise": noise.DiscreteLaplace(2.0)}


# --------------------------------------------------------------------------------------------
# Calibration: exact grid posteriors from our distributions' logp, reports released by OpenDP
# --------------------------------------------------------------------------------------------

MU_GRID = np.linspace(-4.0, 6.0, 81)
SIGMA_GRID = np.linspace(0.05, 6.0, 80)


def _clipped_normal_loglik():
    """Compiled: log-likelihood of N reports on the whole (mu, sigma) grid, in one call."""
    z = pt.dvector("z")
    mu = pt.as_tensor(MU_GRID)[:, None, None]
    sigma = pt.as_tensor(SIGMA_GRID)[None, :, None]
    shape = (MU_GRID.size, SIGMA_GRID.size, z.shape[0])
    dist = pmd.LaplacePerturbedClippedNormal.dist(
        mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, shape=shape
    )
    return pytensor.function([z], pm.logp(dist, z[None, None, :]).sum(-1))


def _posterior_quantiles(loglik, rel, mu, sigma):
    logpost = loglik(rel.reports)
    logpost += stats.norm(1.0, 2.0).logpdf(MU_GRID)[:, None]
    logpost += stats.gamma(2.0, scale=1.0).logpdf(SIGMA_GRID)[None, :]
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    q_mu = w.sum(1)[MU_GRID <= mu].sum()
    q_sigma = w.sum(0)[SIGMA_GRID <= sigma].sum()
    return q_mu, q_sigma


def _sbc(replicates, n_reports, seed):
    loglik = _clipped_normal_loglik()
    rng = np.random.default_rng(seed)
    qs = []
    for _ in range(replicates):
        mu, sigma = rng.normal(1.0, 2.0), rng.gamma(2.0, 1.0)
        while not (MU_GRID[2] < mu < MU_GRID[-3] and SIGMA_GRID[2] < sigma < SIGMA_GRID[-3]):
            mu, sigma = rng.normal(1.0, 2.0), rng.gamma(2.0, 1.0)
        rel = release_clipped_laplace(rng.normal(mu, sigma, n_reports), -5.0, 5.0, 1.0)
        qs.append(_posterior_quantiles(loglik, rel, mu, sigma))
    return np.array(qs)


def _coverage_inside_band(qs, level):
    inside = np.mean(np.abs(qs - 0.5) <= level / 2, axis=0)
    lo, hi = binomial_band(level, len(qs), mass=0.99)
    return inside, (lo, hi)


@pytest.mark.heavy
def test_opendp_release_posterior_recovers_truth():
    """OpenDP releases: the truth is not in the far tails of the grid posterior (cheap smoke
    check).  OpenDP draws its noise from its own unseedable generator, so the quantiles are
    random (uniform when the model is right): the bounds give a false alarm in about 1 run in
    800 (6 quantiles x 2e-4; 0.005 failed about 1 run in 16), while a model that ignored the
    noise puts them at 0 or 1."""
    qs = _sbc(replicates=3, n_reports=300, seed=3)
    assert np.all((qs > 1e-4) & (qs < 1 - 1e-4)), qs


@pytest.mark.slow
def test_opendp_release_posterior_is_calibrated():
    """SBC, 200 replicates: 50% and 90% coverage of mu and sigma inside the 99% band."""
    qs = _sbc(replicates=200, n_reports=200, seed=2026)
    for level in (0.5, 0.9):
        inside, (lo, hi) = _coverage_inside_band(qs, level)
        print(f"coverage at {level}: mu {inside[0]:.3f}, sigma {inside[1]:.3f}, band [{lo}, {hi}]")
        assert np.all((lo <= inside) & (inside <= hi)), (level, inside, lo, hi)
    assert stats.kstest(qs[:, 0], "uniform").pvalue > 1e-3
    assert stats.kstest(qs[:, 1], "uniform").pvalue > 1e-3
