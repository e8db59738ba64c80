"""The flagship small-area analysis (issue 21.5): data, releases, likelihoods, coverage table."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from real_releases_reference import window_logp
from scipy import stats
from scipy.special import logsumexp

from pymc_dpnoise.distributions.noisy_counts import NoisyBinomial
from pymc_dpnoise.experiments import real_releases as rr


def _brute_logp(y, n, p, sigma, lower=None):
    """log sum_{s=0}^{n} Binomial(s | n, p) P(N = y - s), N discrete Gaussian (full sums);
    at y = lower = 0 the atom sum_s Binomial(s) P(N <= -s)."""
    k = np.arange(-400, 401)
    log_g = -(k**2) / (2 * sigma**2) - logsumexp(-(k**2) / (2 * sigma**2))
    out = []
    for yi, ni, pi in zip(y, n, p, strict=True):
        s = np.arange(ni + 1)
        if lower == 0 and yi == 0:
            noise = np.array([logsumexp(log_g[k <= -si]) if si < 400 else -np.inf for si in s])
        else:
            noise = np.interp(yi - s, k, log_g, left=-np.inf, right=-np.inf)
        out.append(logsumexp(stats.binom.logpmf(s, ni, pi) + noise))
    return np.array(out)


def test_adult_groups_are_the_42_native_countries():
    g = rr.adult_groups()
    assert len(g) == 42 and g["n"].sum() == 48_842
    assert list(g["n"].iloc[[0, -1]]) == [1, 43_832]  # Holand-Netherlands, United-States
    assert g["n"].is_monotonic_increasing and "?" in set(g["group"])
    assert np.allclose(g["rate"], g["count"] / g["n"])


@pytest.mark.parametrize("lower", [None, 0])
@pytest.mark.heavy
def test_noisy_binomial_matches_an_independent_window_sum(lower):
    g = rr.adult_groups()
    n = g["n"].to_numpy()
    spec = rr.noise_spec(0.05)
    rng = np.random.default_rng(0)
    release = spec.release(g["count"].to_numpy(), rng)
    if lower == 0:
        release = np.maximum(release, 0)
        release[[0, 3, 20, 39]] = 0  # the atom, also far from n p (group 39 has n = 857)
    eta = pt.dvector("eta")
    with warnings.catch_warnings():
        # NoisyBinomial with one bound: pt.minimum(hi, 1e300) autocasts 1e300 through
        # float16/32 at graph build, "overflow encountered in cast" (reported, harmless)
        warnings.simplefilter("ignore", RuntimeWarning)
        dist = NoisyBinomial.dist(n=n, p=pt.sigmoid(eta), noise=spec, lower=lower)
        exact = pm.logp(dist, release)
    window = window_logp(release, n, eta, spec.param, lower=lower)
    f = pytensor.function(
        [eta], [exact, window, pt.grad(exact.sum(), eta), pt.grad(window.sum(), eta)]
    )
    for e in (np.full(42, -1.2), rng.normal(-1.0, 2.5, 42)):  # the second far from the data
        a, b, ga, gb = f(e)
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(gb, ga, rtol=1e-8, atol=1e-8)
        small = n <= 1000
        p = 1 / (1 + np.exp(-e[small]))
        brute = _brute_logp(release[small], n[small], p, spec.param, lower)
        # brute-force log-space sums (logsumexp of exact terms, a few ulp each) vs our
        # closed/windowed form through libm: 1e-10 relative is ~1e6 ulp of margin
        np.testing.assert_allclose(b[small], brute, rtol=1e-10, atol=1e-10)


def test_noisy_binomial_gradient_in_a_model():
    """The Gaussian kinds differentiate inside a model (the window scan takes its inputs
    explicitly since 0549928; before, pt.grad failed on PyMC's ValuedRV)."""
    with pm.Model() as m:
        p = pm.Beta("p", 1.0, 1.0)
        NoisyBinomial("y", n=[10, 50], p=p, noise=rr.noise_spec(0.5), observed=[3, 12])
    assert np.all(np.isfinite(m.compile_dlogp()(m.initial_point())))


def test_model_logp_and_gradient_match_the_independent_window_sum():
    g = rr.adult_groups().iloc[:6]  # six small groups: cheap graphs
    n = g["n"].to_numpy()
    spec = rr.noise_spec(0.05)
    release = np.maximum(spec.release(g["count"].to_numpy(), np.random.default_rng(1)), -2)
    m = rr.build_model(n, release, spec, "noise-aware")
    point = m.initial_point()
    point["mu"] = np.array(-0.7)
    point["z"] = np.linspace(-1.5, 1.5, n.size)
    mu, tau, z = pt.dscalar("mu"), pt.dscalar("tau_log__"), pt.dvector("z")
    eta = mu + pt.exp(tau) * z
    prior = (
        pm.logp(pm.Normal.dist(rr.MU0, rr.MU_SD), mu)
        + pm.logp(pm.HalfNormal.dist(rr.TAU_SD), pt.exp(tau))
        + tau
        + pm.logp(pm.Normal.dist(0.0, 1.0), z).sum()
    )
    total = prior + window_logp(release, n, eta, spec.param).sum()
    ref = pytensor.function([mu, tau, z], [total, *pt.grad(total, [mu, tau, z])])
    val, *grads = ref(point["mu"], point["tau_log__"], point["z"])
    # the model's logp against the same terms built as another graph: a few ulp from the rewrite
    # order, 1e-10
    assert m.compile_logp()(point) == pytest.approx(val, rel=1e-10)
    np.testing.assert_allclose(
        m.compile_dlogp()(point), np.concatenate([np.atleast_1d(x) for x in grads]), rtol=1e-8
    )


def test_sbc_problem_simulates_releases_with_the_real_sizes():
    prob = rr.sbc_problem("naive")
    assert len(prob.param_names) == 44 and prob.sizes[-1] == 43_832
    truth, release = prob.simulate(np.random.default_rng(2))
    assert release.dtype == np.int64 and release.shape == (42,)
    assert truth["tau"] >= 0 and np.all((truth["p"] > 0) & (truth["p"] < 1))
    seen = prob.model_data(release)
    assert np.all((seen >= 0) & (seen <= np.asarray(prob.sizes)))
    assert np.array_equal(rr.model_data(release, prob.sizes, "censored"), np.maximum(release, 0))


def test_coverage_summary_flags_miscalibration():
    rng = np.random.default_rng(3)
    sizes = rr.adult_groups()["n"].to_numpy()
    reps = 300
    good = dict(
        quantiles=rng.uniform(size=(reps, 44)),
        max_rhat=np.ones(reps),
        divergences=np.zeros(reps, int),
        seconds=1.0,
    )
    bad = dict(good, quantiles=np.clip(0.5 + 2.0 * (good["quantiles"] - 0.5), 0, 1))
    tg = rr.coverage_summary(good, "noise-aware", sizes)
    tb = rr.coverage_summary(bad, "naive", sizes)
    assert set(tg["param"]) == {
        "mu",
        "tau",
        "p (all groups)",
        *(f"p ({c})" for c in rr.SIZE_CLASSES),
    }
    assert tg["inside"].all() and not tb["inside"].any()
    assert tg.loc[tg["param"] == "p (n < 50)", "groups"].iloc[0] == 17


def test_opendp_release_is_a_rho_zcdp_discrete_gaussian_vector():
    pytest.importorskip("opendp")
    counts = rr.adult_groups()["count"].to_numpy()
    release, meas = rr.opendp_release(counts, 0.5)
    assert release.dtype == np.int64 and release.shape == counts.shape
    assert meas.map(1) == pytest.approx(0.5)
    assert np.all(np.abs(release - counts) < 12)  # sigma = 1: |noise| >= 12 has mass < 1e-30
