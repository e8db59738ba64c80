"""Thresholded releases: the log CDF of the noisy counts through ``pm.logcdf``, ``pm.Censored``
/ ``pm.Truncated`` on them, the known- and unknown-key models of
:mod:`pymc_dpnoise.thresholds` against brute force, and Google's Laplace partition selection.

Brute force: the noisy count's pmf / cdf by direct summation over the count (Poisson or
binomial, scipy) and the noise (the pmfs of tests/noise_pmfs.py, or scipy's continuous laws).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from noise_pmfs import PMFS, window
from scipy import stats

import pymc_dpnoise as pmd
from pymc_dpnoise import noise, thresholds

SPECS = {
    "laplace": noise.Laplace(2.0),
    "discrete_laplace": noise.DiscreteLaplace(2.0),
    "rounded_laplace": noise.RoundedLaplace(2.0),
    "gaussian": noise.Gaussian(3.0),
    "discrete_gaussian": noise.DiscreteGaussian(3.0),
}
N, P, MU = 20, 0.3, 6.0


def _count_pmf(family):
    if family == "binomial":
        k = np.arange(N + 1)
        return k, stats.binom.pmf(k, N, P)
    k = np.arange(200)
    return k, stats.poisson.pmf(k, MU)


def _noise_cdf(kind, x):
    spec = SPECS[kind]
    if kind == "laplace":
        return stats.laplace(scale=spec.param).cdf(x)
    if kind == "gaussian":
        return stats.norm(scale=spec.param).cdf(x)
    j = window(spec.param)
    pmf = {"discrete_laplace": PMFS["laplace"], "rounded_laplace": PMFS["rounded_laplace"]}.get(
        kind, PMFS["gaussian"]
    )(j, spec.param)
    return np.array([pmf[j <= xi].sum() for xi in np.atleast_1d(x)])


def _noise_pdf(kind, x):
    spec = SPECS[kind]
    if kind == "laplace":
        return stats.laplace(scale=spec.param).pdf(x)
    if kind == "gaussian":
        return stats.norm(scale=spec.param).pdf(x)
    return _noise_cdf(kind, x) - _noise_cdf(kind, x - 1)


def brute_cdf(family, kind, y):
    k, w = _count_pmf(family)
    return float(np.sum(w * _noise_cdf(kind, y - k)))


def brute_pdf(family, kind, y):
    k, w = _count_pmf(family)
    return float(np.sum(w * _noise_pdf(kind, y - k)))


def _dist(family, kind):
    if family == "binomial":
        return pmd.NoisyBinomial.dist(n=N, p=P, noise=SPECS[kind])
    return pmd.NoisyPoisson.dist(MU, noise=SPECS[kind])


@pytest.mark.parametrize("family", ["binomial", "poisson"])
@pytest.mark.parametrize("kind", list(SPECS))
def test_logcdf_and_threshold_models_match_brute_force(family, kind):
    """pm.logcdf exact to 1e-8 relative (the brief's bar; the sums here are exact to ~1e-14),
    and the known-key (Censored) and unknown-key (Truncated) logps equal the brute-force
    event probabilities."""
    dist = _dist(family, kind)
    ys = np.array([-4.0, 2.0, 6.0, 15.0])
    got = np.exp(pm.logcdf(dist, ys).eval())
    want = np.array([brute_cdf(family, kind, y) for y in ys])
    np.testing.assert_allclose(got, want, rtol=1e-8)

    tau, released = 5.0, np.array([8.0, 12.0])
    observed = np.array([np.nan, *released])
    discrete = SPECS[kind].discrete
    with pm.Model() as m:
        thresholds.known_keys("known", _dist(family, kind), tau, observed)
        thresholds.unknown_keys("unknown", _dist(family, kind), tau, released)
    lp = m.compile_logp(sum=False)({})
    pdf = np.array([brute_pdf(family, kind, y) for y in released])
    keep = 1.0 - brute_cdf(family, kind, tau)
    np.testing.assert_allclose(lp[0], np.log([brute_cdf(family, kind, tau), *pdf]), rtol=1e-8)
    np.testing.assert_allclose(lp[1], np.log(pdf / keep), rtol=1e-8)
    if discrete:  # the first released value tau + 1 is in, the normaliser excludes tau
        with pm.Model() as m2:
            thresholds.unknown_keys("u", _dist(family, kind), tau, [tau + 1.0])
        want = brute_pdf(family, kind, tau + 1.0) / keep
        np.testing.assert_allclose(np.exp(m2.compile_logp()({})), want, rtol=1e-8)


@pytest.mark.parametrize("family", ["binomial", "poisson"])
@pytest.mark.parametrize("kind", list(SPECS))
def test_truncated_logcdf_matches_brute_force(family, kind):
    """pm.logcdf through pm.Truncated, lower-only and two-sided: the count's CDF renormalised
    on the kept range, exact to 1e-8 relative (the brief's bar).  pm.Truncated builds its
    sampler from the log CDF at placeholder inputs; the Gaussian kinds, whose windows are sized
    from a constant sigma, refuse those and leave PyMC its rejection sampler (as the refused
    icdf does for every kind), while the log CDF here is built at the constant sigma."""
    lower, upper = 5.0, 18.0
    ys = np.array([3.0, 5.0, 9.0, 15.5, 18.0, 20.0])
    got = pt.stack(
        [
            pm.logcdf(pm.Truncated.dist(_dist(family, kind), lower=lower, upper=hi), ys)
            for hi in (None, upper)
        ]
    ).eval()
    # PyMC's integer truncation keeps the lower bound itself: it subtracts F(lower - 1)
    edge = lower - 1.0 if _dist(family, kind).dtype.startswith("int") else lower
    f_edge = brute_cdf(family, kind, edge)
    f_ys = np.array([brute_cdf(family, kind, y) for y in ys])
    lower_only = np.where(ys < lower, 0.0, (f_ys - f_edge) / (1.0 - f_edge))
    f_upper = brute_cdf(family, kind, upper)
    two_sided = np.where(ys > upper, 1.0, (f_ys - f_edge) / (f_upper - f_edge))
    two_sided[ys < lower] = 0.0
    np.testing.assert_allclose(np.exp(got), [lower_only, two_sided], rtol=1e-8)


def test_threshold_models_refuse_bad_input():
    dist = _dist("poisson", "discrete_laplace")
    with pytest.raises(ValueError, match="`observed`"):
        thresholds.known_keys("y", dist, 5, [np.nan, 4.0])
    with pytest.raises(ValueError, match="`observed`"):
        thresholds.unknown_keys("y", dist, 5, [np.nan, 8.0])
    with pytest.raises(ValueError, match="`threshold`"):
        thresholds.known_keys("y", dist, 5.5, [8.0])
    with pytest.raises(TypeError, match="`threshold`"):
        thresholds.known_keys("y", dist, "5", [8.0])


@pytest.mark.parametrize("eps, delta, l0", [(1.0, 1e-5, 1), (np.log(3), 1e-8, 3), (0.5, 0.9, 2)])
def test_google_laplace_keep_probability(eps, delta, l0):
    """The keep probability is P(n + Laplace(l0/eps) > T): one user is kept with the
    per-partition delta (the library's design: 1 - (1 - delta')^l0 = delta; it holds when
    delta <= 1/2 or delta' > 1/2, as here: the library branches on delta), and Monte Carlo
    draws of the mechanism agree (200k draws: 5 standard errors)."""
    t = thresholds.google_laplace_threshold(eps, delta, l0)
    adj = 1 - (1 - delta) ** (1 / l0)
    assert thresholds.google_laplace_keep_probability(1, eps, delta, l0) == pytest.approx(
        # closed forms with pow/log1p/expm1 (few ulp) at condition up to ~1e3 for small delta: 1e-9
        # relative is ~1e7 ulp
        adj,
        rel=1e-9,
    )
    # closed forms with pow/log1p/expm1 (few ulp) at condition up to ~1e3 for small delta: 1e-9
    # relative is ~1e7 ulp
    assert 1 - (1 - adj) ** l0 == pytest.approx(delta, rel=1e-9)
    rng = np.random.default_rng(3)
    b = l0 / eps
    for n in [0, 1, int(t), int(t) + 3, int(t) + 20]:
        p = thresholds.google_laplace_keep_probability(n, eps, delta, l0)
        draws = n + rng.laplace(0.0, b, size=200_000) > t
        se = np.sqrt(max(p * (1 - p), 1e-12) / draws.size)
        assert abs(draws.mean() - p) <= 5 * se + 1e-12
    with pytest.raises(ValueError, match="`delta`"):
        thresholds.google_laplace_threshold(1.0, 0.0)
    with pytest.raises(ValueError, match="`max_partitions_contributed`"):
        thresholds.google_laplace_keep_probability(1, 1.0, 1e-5, 0)


@pytest.mark.parametrize("eps, delta, d_in", [(1.0, 1e-5, 1), (0.5, 1e-8, 2), (2.0, 0.3, 1)])
def test_tumult_keep_probability(eps, delta, d_in):
    """Tumult's partition selection keeps a group when count + geometric noise >= tau: the
    closed form equals the pmf summed (tests/noise_pmfs.py, 1e-12: a sum of ~1e3 terms),
    Monte Carlo draws of the mechanism agree (200k draws, 5 standard errors), a group of one
    row is kept with probability at most the per-unit delta and tau is the smallest threshold
    that does so (Tumult's inverse CDF is the *smallest* k with F(k) >= 1 - delta')."""
    spec, tau = thresholds.tumult_partition_selection(eps, delta, d_in)
    alpha = d_in / eps
    assert spec == noise.DiscreteLaplace(alpha)
    per_unit = delta / (d_in * np.exp(eps)) if d_in > 1 else delta
    j = window(alpha)
    pmf = PMFS["laplace"](j, alpha)

    def keep(n):  # P(n + G >= tau), summed
        return pmf[n + j >= tau].sum()

    counts = np.array([0, 1, 2, tau - 1, tau, tau + 4, tau + 40])
    got = thresholds.tumult_keep_probability(counts, eps, delta, d_in)
    # 1e-12: a sum of at most a few hundred exp() terms on each side (libm: ~1 ulp each)
    np.testing.assert_allclose(got, [keep(n) for n in counts], rtol=1e-12)
    assert got[1] <= per_unit < keep(2)  # tau - 1 would break the guarantee
    rng = np.random.default_rng(5)
    for n, p in zip(counts, got, strict=True):
        kept = n + spec.sample(200_000, rng) >= tau
        assert abs(kept.mean() - p) <= 5 * np.sqrt(max(p * (1 - p), 1e-12) / kept.size) + 1e-12


def test_tumult_partition_selection_matches_tumult_docs():
    """Tumult Core's GeometricPartitionSelection docstring: threshold 50, alpha 1 gives
    delta = 3.8328565409781243e-22 at d_in = 1 and 5.664238400088129e-21 at d_in = 2 (its
    privacy_function, computed there in exact arithmetic; 1e-12 here: a few libm calls).  Our
    selection at a budget between the deltas of thresholds 49 and 50 picks 50, and a group of
    one row is kept with that delta."""
    d1, d2 = 3.8328565409781243e-22, 5.664238400088129e-21
    spec, tau = thresholds.tumult_partition_selection(1.0, d1)
    assert (spec, tau) == (noise.DiscreteLaplace(1.0), 50)
    # rel 1e-12: Tumult's exact-arithmetic value against a few libm calls (see docstring)
    assert thresholds.tumult_keep_probability(1, 1.0, d1) == pytest.approx(d1, rel=1e-12)
    assert thresholds.tumult_partition_selection(2.0, d2, d_in=2) == (spec, 50)
    assert thresholds.tumult_partition_selection(1.0, d1 * 0.999)[1] == 51
    with pytest.raises(ValueError, match="`d_in`"):
        thresholds.tumult_partition_selection(1.0, 1e-5, d_in=0)
    with pytest.raises(ValueError, match="`count`"):
        thresholds.tumult_keep_probability(1.5, 1.0, 1e-5)
    with pytest.raises(ValueError, match="`delta`"):
        thresholds.tumult_partition_selection(1.0, 0.9)


def test_kept_keys_is_the_keep_probability_summed_over_the_count():
    """kept_keys with Tumult's and Google's selections: each key's term is
    log sum_n P(n) P(keep | n), brute force with the keep probabilities above and the scipy
    count pmf (1e-10: sums of a few hundred positive terms)."""
    kept = np.array([True, False, True, True, False])
    spec, tau = thresholds.tumult_partition_selection(1.0, 1e-5)
    n_pois = np.arange(200)
    w = stats.poisson.pmf(n_pois, 9.0)
    p_keep = np.sum(w * thresholds.tumult_keep_probability(n_pois, 1.0, 1e-5))
    t_g = thresholds.google_laplace_threshold(1.0, 1e-5, 2)
    n_bin = np.arange(N + 1)
    w_b = stats.binom.pmf(n_bin, N, 0.6)
    p_keep_g = np.sum(w_b * thresholds.google_laplace_keep_probability(n_bin, 1.0, 1e-5, 2))
    with pm.Model() as m:
        thresholds.kept_keys(
            "tumult", pmd.NoisyPoisson.dist(9.0, noise=spec, shape=5), tau - 1, kept
        )
        dist_g = pmd.NoisyBinomial.dist(n=N, p=0.6, noise=noise.Laplace(2.0), shape=5)
        thresholds.kept_keys("google", dist_g, t_g, kept.astype(int))
    got = m.compile_fn(m.potentials, inputs=[])({})
    for value, p in zip(got, (p_keep, p_keep_g), strict=True):
        want = kept.sum() * np.log(p) + (~kept).sum() * np.log1p(-p)
        # 1e-10: the log CDF / SF graphs (log1p, logsumexp of libm terms) against log(p)
        np.testing.assert_allclose(value, want, rtol=1e-10)
    with pytest.raises(ValueError, match="`kept`"):
        with pm.Model():
            thresholds.kept_keys("k", pmd.NoisyPoisson.dist(9.0, noise=spec), 12, [2])
