"""DP-SGLD baseline and its privacy accountant (issue 5)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from pymc_dpnoise.baselines import sufficient as bs

# ------------------------------------------------------------------------------ accountant


def test_rdp_without_subsampling_is_the_gaussian_mechanism():
    orders = [2, 3, 7, 32, 500]
    for sigma in (0.5, 1.0, 4.0, 30.0):
        got = bs.rdp_subsampled_gaussian(1.0, sigma, orders)
        # closed form alpha / (2 sigma^2) on both sides, a few ulp of * and / (and one log1p/exp
        # pair in the RDP code): 1e-12 is ~9000 ulp
        np.testing.assert_allclose(got, np.array(orders) / (2 * sigma**2), rtol=1e-12)


def test_rdp_order_two_closed_form():
    # alpha = 2: A_2 = 1 + q^2 (e^{1/sigma^2} - 1)
    for q, sigma in [(0.01, 1.0), (0.3, 0.7), (0.05, 5.0)]:
        got = bs.rdp_subsampled_gaussian(q, sigma, [2])[0]
        assert got == pytest.approx(math.log1p(q * q * math.expm1(1 / sigma**2)), rel=1e-12)


@pytest.mark.parametrize("alpha, q, sigma", [(3, 0.1, 1.0), (5, 0.05, 2.0)])
def test_rdp_matches_numerical_renyi_divergence(alpha, q, sigma):
    # D_alpha((1 - q) N(0, s^2) + q N(1, s^2) || N(0, s^2)) by quadrature
    def integrand(x):
        p0 = stats.norm.pdf(x, 0, sigma)
        mix = (1 - q) * p0 + q * stats.norm.pdf(x, 1, sigma)
        return p0 * (mix / p0) ** alpha

    val, _ = integrate.quad(integrand, -30 * sigma, 30 * sigma + 1, limit=200)
    got = bs.rdp_subsampled_gaussian(q, sigma, [alpha])[0]
    assert got == pytest.approx(math.log(val) / (alpha - 1), rel=1e-8)


def test_epsilon_of_gaussian_mechanism_by_hand():
    # one Gaussian mechanism, sigma = 2, delta = 1e-5: min over integer alpha of
    # alpha/8 + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)
    a = np.arange(2, 200)
    by_hand = np.min(a / 8 + np.log((a - 1) / a) - (np.log(1e-5) + np.log(a)) / (a - 1))
    assert bs.dp_sgd_epsilon(1.0, 2.0, 1, 1e-5, orders=a) == pytest.approx(by_hand, rel=1e-12)
    # T compositions of a Gaussian = one Gaussian with sigma / sqrt(T)
    assert bs.dp_sgd_epsilon(1.0, 6.0, 9, 1e-5, orders=a) == pytest.approx(by_hand, rel=1e-12)


def test_accountant_is_monotone():
    sig = [0.8, 1.0, 2.0, 5.0, 20.0]
    e_sig = [bs.dp_sgd_epsilon(0.02, s, 1000, 1e-5) for s in sig]
    assert all(a > b for a, b in itertools.pairwise(e_sig))
    e_steps = [bs.dp_sgd_epsilon(0.02, 2.0, t, 1e-5) for t in (10, 100, 1000, 10_000)]
    assert all(a < b for a, b in itertools.pairwise(e_steps))
    e_q = [bs.dp_sgd_epsilon(q, 2.0, 1000, 1e-5) for q in (0.001, 0.01, 0.1, 1.0)]
    assert all(a < b for a, b in itertools.pairwise(e_q))
    e_delta = [bs.dp_sgd_epsilon(0.02, 2.0, 1000, d) for d in (1e-8, 1e-5, 1e-3)]
    assert all(a > b for a, b in itertools.pairwise(e_delta))


@pytest.mark.parametrize("eps, steps, q", [(0.1, 10_000, 0.036), (1.0, 500, 0.2), (3.0, 1, 1.0)])
def test_calibration_hits_the_target(eps, steps, q):
    s = bs.calibrate_noise_multiplier(eps, 1e-5, steps, q)
    assert bs.dp_sgd_epsilon(q, s, steps, 1e-5) <= eps
    assert bs.dp_sgd_epsilon(q, s * (1 - 1e-3), steps, 1e-5) > eps  # and is (nearly) the smallest


def test_calibration_replace_one_is_group_privacy():
    s_ar = bs.calibrate_noise_multiplier(0.5, 1e-5, 100, 0.1)
    s_rep = bs.calibrate_noise_multiplier(1.0, 1e-5, 100, 0.1, neighbours="replace")
    target_delta = 1e-5 / (1 + math.exp(0.5))
    assert bs.dp_sgd_epsilon(0.1, s_rep, 100, target_delta) <= 0.5
    assert s_rep > s_ar  # the smaller delta costs a little more noise
    assert bs.calibrate_noise_multiplier(np.inf, 1e-5, 100, 0.1) == 0.0


# ------------------------------------------------------------------------------ gradients


def test_gradients_and_clipping():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    theta = np.array([0.5, -1.0, 0.2])
    ylog = np.where(rng.random(50) < 0.5, 1.0, -1.0)
    ypois = rng.poisson(2.0, 50).astype(float)
    h = 1e-6
    for glm, y in (("logistic", ylog), ("poisson", ypois)):

        def loglik(th, glm=glm, y=y):
            u = X @ th
            if glm == "logistic":
                return -np.log1p(np.exp(-y * u))
            return y * u - np.exp(u)

        G = bs.per_example_gradients(theta, X, y, glm)
        num = np.stack(
            [(loglik(theta + h * e) - loglik(theta - h * e)) / (2 * h) for e in np.eye(3)], 1
        )
        np.testing.assert_allclose(G, num, rtol=1e-6, atol=1e-8)
        Gc = bs.clip_gradients(G, 0.7)
        norms, norms_c = np.linalg.norm(G, axis=1), np.linalg.norm(Gc, axis=1)
        assert np.all(norms_c <= 0.7 + 1e-12)
        big = norms > 0.7
        np.testing.assert_allclose(norms_c[big], 0.7)
        np.testing.assert_allclose(Gc[~big], G[~big])  # small ones untouched
        # direction is kept
        np.testing.assert_allclose(Gc[big] / norms_c[big, None], G[big] / norms[big, None])
    # huge linear predictor: finite, clipped gradient
    g = bs.clip_gradients(bs.per_example_gradients([1e4], [[1.0]], [0.0], "poisson"), 1.0)
    assert np.all(np.isfinite(g)) and g[0, 0] == -1.0


# ------------------------------------------------------------------------------ DP-SGLD


def _grid_posterior(X, y, prior_sd):
    # the posterior (mean ~ (1.9, -1.3), sd ~ 0.38) is negligible outside this box
    t1, t2 = np.meshgrid(np.linspace(-1, 5, 241), np.linspace(-4.5, 1.5, 241), indexing="ij")
    th = np.stack([t1.ravel(), t2.ravel()], 1)
    u = th @ X.T
    lp = -np.logaddexp(0, -y * u).sum(1) - 0.5 * (th**2).sum(1) / prior_sd**2
    w = np.exp(lp - lp.max())
    w /= w.sum()
    mean = w @ th
    sd = np.sqrt(w @ (th - mean) ** 2)
    return mean, sd


@pytest.mark.heavy
def test_dp_sgld_with_huge_epsilon_recovers_the_posterior_mean():
    rng = np.random.default_rng(42)
    n = 300
    X = rng.normal(0, 0.5, size=(n, 2)) / math.sqrt(2)
    X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ np.array([2.0, -1.5]))), 1.0, -1.0)
    mean, sd = _grid_posterior(X, y, prior_sd=2.0)
    res = bs.dp_sgld(
        X, y, "logistic", 1e5, 1e-5, rng, iterations=15_000, burn_in=2_000,
        batch_size=60, step_size=1e-2, prior_sd=2.0,
    )  # fmt: skip
    assert res.noise_multiplier < 1.0
    assert res.clipped_fraction == 0.0  # |grad| <= ||x|| <= 1 = C
    got = res.samples.mean(0)
    # Monte Carlo error of the mean: ~ sd / sqrt(ESS), ESS ~ 13000 / 50 (measured: 0.02-0.12 sd)
    assert np.all(np.abs(got - mean) < 0.25 * sd), (got, mean, sd)
    np.testing.assert_allclose(res.samples.std(0), sd, rtol=0.2)


def test_dp_sgld_spends_the_budget_and_is_reproducible():
    rng = np.random.default_rng(3)
    X = rng.normal(0, 0.3, size=(100, 2))
    y = rng.poisson(1.0, 100).astype(float)
    kw = dict(iterations=300, burn_in=100, step_size=1e-3)
    a = bs.dp_sgld(X, y, "poisson", 0.5, 1e-5, np.random.default_rng(7), **kw)
    b = bs.dp_sgld(X, y, "poisson", 0.5, 1e-5, np.random.default_rng(7), **kw)
    np.testing.assert_array_equal(a.samples, b.samples)
    assert a.samples.shape == (200, 2)
    assert a.q == pytest.approx(0.1)
    assert 0.49 < a.epsilon_add_remove <= 0.5
    assert np.all(np.isfinite(a.samples))


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(glm="linear"), "glm"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(delta=0.0), "delta"),
        (dict(delta=1.0), "delta"),
        (dict(iterations=0), "iterations"),
        (dict(burn_in=10), "burn_in"),
        (dict(batch_size=1000), "batch_size"),
        (dict(batch_size=0), "batch_size"),
        (dict(step_size=0.0), "step_size"),
        (dict(clip=-1.0), "clip"),
        (dict(prior_sd=0.0), "prior_sd"),
        (dict(neighbours="swap"), "neighbours"),
        (dict(y=np.zeros(20)), "y"),
        (dict(y=np.ones(19)), "y"),
        (dict(X=np.ones(20)), "X"),
        (dict(theta0=np.zeros(3)), "theta0"),
        (dict(noise_multiplier=-1.0), "noise_multiplier"),
    ],
)
def test_dp_sgld_bad_arguments(kwargs, name):
    base = dict(
        X=np.full((20, 2), 0.1), y=np.ones(20), glm="logistic", epsilon=1.0, delta=1e-5,
        rng=np.random.default_rng(0), iterations=10, burn_in=5,
    )  # fmt: skip
    base.update(kwargs)
    with pytest.raises(ValueError, match=f"`{name}`"):
        bs.dp_sgld(**base)


@pytest.mark.parametrize(
    "func, args, name",
    [
        (bs.rdp_subsampled_gaussian, (0.0, 1.0), "q"),
        (bs.rdp_subsampled_gaussian, (1.5, 1.0), "q"),
        (bs.rdp_subsampled_gaussian, (0.1, 0.0), "noise_multiplier"),
        (bs.rdp_subsampled_gaussian, (0.1, 1.0, [1.5]), "orders"),
        (bs.rdp_to_dp, ([0.1], [2], 0.0), "delta"),
        (bs.rdp_to_dp, ([0.1, 0.2], [2], 1e-5), "rdp"),
        (bs.dp_sgd_epsilon, (0.1, 1.0, 0, 1e-5), "steps"),
        (bs.calibrate_noise_multiplier, (0.0, 1e-5, 10, 0.1), "epsilon"),
        (bs.calibrate_noise_multiplier, (1.0, 1e-5, 10, 0.0), "q"),
        (bs.clip_gradients, ([[1.0]], 0.0), "C"),
        (bs.per_example_gradients, ([0.0], [[1.0]], [1.0], "probit"), "glm"),
    ],
)
def test_accountant_bad_arguments(func, args, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        func(*args)
