"""Bernstein & Sheldon baselines: conjugate updates, OPS, and the Gibbs samplers (issue 13.5).

References written here, independent of the code under test: hand-computed conjugate
updates, brute-force neighbour ratios for OPS, and exact posteriors by summing the binomial /
Poisson pmf times the Laplace density over every count on a parameter grid.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

from pymc_dpnoise.baselines import expfam as ef

# ------------------------------------------------------------------------------ references


def _grid_moments(grid, loglik):
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    m = float((w * grid).sum())
    return m, float(np.sqrt((w * (grid - m) ** 2).sum()))


def exact_binomial_posterior(y, n, eps, a=1.0, b=1.0):
    """Posterior mean and sd of p by summing over every count s on a fine p grid."""
    grid = np.linspace(1e-5, 1 - 1e-5, 6001)
    s = np.arange(n + 1)
    lp = stats.binom.logpmf(s[None, :], n, grid[:, None]) - np.abs(y - s)[None, :] * eps
    return _grid_moments(grid, logsumexp(lp, axis=1) + stats.beta.logpdf(grid, a, b))


def exact_poisson_posterior(y, n, eps, sens, a, b, grid):
    """Posterior of the per-record rate lambda (total ~ Poisson(n lambda)), brute force."""
    s = np.arange(0, int(n * grid.max() * 3 + 200))
    lp = stats.poisson.logpmf(s[None, :], n * grid[:, None]) - np.abs(y - s)[None, :] * eps / sens
    return _grid_moments(grid, logsumexp(lp, axis=1) + stats.gamma.logpdf(grid, a, scale=1 / b))


def _chains(draws):
    """Pooled mean, sd and Monte Carlo standard error of the mean over independent chains."""
    means = draws.mean(axis=0)
    return float(draws.mean()), float(draws.std()), float(means.std() / np.sqrt(means.size))


# ------------------------------------------------------------------------------ conjugate


def test_conjugate_updates_by_hand():
    assert [float(v) for v in ef.conjugate_posterior("binomial", 3, 10, 1.0, 1.0)] == [4.0, 8.0]
    assert [float(v) for v in ef.conjugate_posterior("binomial", 0, 5, 2.0, 3.0)] == [2.0, 8.0]
    # Poisson: Gamma(alpha + s, beta + n)
    assert [float(v) for v in ef.conjugate_posterior("poisson", 7, 5, 2.0, 1.0)] == [9.0, 6.0]
    # exponential: Gamma(alpha + n, beta + s)
    got = ef.conjugate_posterior("exponential", 12.5, 10, 2.0, 1.0)
    assert [float(v) for v in got] == [12.0, 13.5]
    # vectorised over releases
    a, b = ef.conjugate_posterior("binomial", np.array([1.0, 2.0]), np.array([4, 9]), 1.0, 1.0)
    np.testing.assert_array_equal(a, [2.0, 3.0])
    np.testing.assert_array_equal(b, [4.0, 8.0])


def test_naive_clamps_noisy_totals_to_the_valid_range():
    a, b = ef.naive_posterior("binomial", np.array([-3.2, 4.5, 12.7]), 10, 1.0, 1.0)
    np.testing.assert_allclose(a, [1.0, 5.5, 11.0])
    np.testing.assert_allclose(b, [11.0, 6.5, 1.0])
    a, b = ef.naive_posterior("poisson", np.array([-1.0, 30.25]), 10, 2.0, 0.5)
    np.testing.assert_allclose(a, [2.0, 32.25])
    np.testing.assert_allclose(b, [10.5, 10.5])
    a, b = ef.naive_posterior("exponential", -4.0, 10, 2.0, 0.5)
    assert (float(a), float(b)) == (12.0, 0.5)


def test_posterior_cdf_and_draws():
    params = ef.conjugate_posterior("binomial", np.array([3.0, 30.0]), 40, 1.0, 1.0)
    np.testing.assert_allclose(
        ef.posterior_cdf("binomial", params, 0.2), stats.beta.cdf(0.2, [4, 31], [38, 11])
    )
    gp = ef.conjugate_posterior("poisson", 20.0, 10, 2.0, 1.0)
    assert float(ef.posterior_cdf("poisson", gp, 2.0)) == pytest.approx(
        stats.gamma.cdf(2.0, 22, scale=1 / 11)
    )
    d = ef.posterior_draws("binomial", params, 20_000, np.random.default_rng(0))
    assert d.shape == (20_000, 2)
    np.testing.assert_allclose(d.mean(axis=0), [4 / 42, 31 / 42], atol=0.005)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: ef.conjugate_posterior("gaussian", 1, 2), "family"),
        (lambda: ef.conjugate_posterior("binomial", 11, 10), "outside"),
        (lambda: ef.conjugate_posterior("binomial", -1, 10), "outside"),
        (lambda: ef.naive_posterior("binomial", np.nan, 10), "y"),
        (lambda: ef.naive_posterior("binomial", 3.0, 10.5), "n"),
        (lambda: ef.naive_posterior("binomial", 3.0, 10, alpha=0.0), "alpha"),
        (lambda: ef.ops_weight(0.0), "epsilon_per_sample"),
        (lambda: ef.ops_weight(0.1, a0=0.5), "a0"),
        (lambda: ef.ops_binomial(3, 10, -1.0, np.random.default_rng(0)), "epsilon"),
        (lambda: ef.ops_binomial(11, 10, 1.0, np.random.default_rng(0)), "s"),
        (lambda: ef.gibbs_binomial(3.0, 10, 0.0, rng=np.random.default_rng(0)), "epsilon"),
        (lambda: ef.gibbs_binomial(3.0, 10, 1.0, rng=np.random.default_rng(0), iters=0), "iters"),
        (lambda: ef.gibbs_binomial(3.0, 10, 1.0, rng=0), "rng"),
        (
            lambda: ef.gibbs_truncated_exponential(
                3.0, 10, 2.0, 1.0, 1.0, rng=np.random.default_rng(0)
            ),
            "lower",
        ),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ------------------------------------------------------------------------------ OPS


def test_ops_weight_formula():
    assert ef.ops_weight(0.01, 0.1) == pytest.approx(0.01 / (2 * math.log(9)))
    assert ef.ops_weight(1.0, 0.25) == pytest.approx(1.0 / (2 * math.log(3)))


@pytest.mark.parametrize("eps_ops, n", [(0.01, 30), (0.5, 30), (2.0, 200)])
def test_ops_draw_is_eps_dp_by_brute_force(eps_ops, n):
    """max over neighbours (s, s+1) and theta of the log density ratio of one OPS draw."""
    a0 = 0.1
    w = ef.ops_weight(eps_ops, a0)
    theta = np.linspace(a0, 1 - a0, 2001)
    s = np.arange(n + 1)[:, None]
    a, b = 1.0 + w * s, 1.0 + w * (n - s)
    logz = np.log(stats.beta.cdf(1 - a0, a, b) - stats.beta.cdf(a0, a, b))
    logd = stats.beta.logpdf(theta[None, :], a, b) - logz
    worst = np.max(np.abs(np.diff(logd, axis=0)))
    assert worst <= eps_ops * (1 + 1e-9)
    assert worst >= 0.5 * eps_ops  # the bound is not vacuous: it is nearly attained


def test_ops_spends_epsilon_over_samples_per_draw():
    """The released draws follow the tempered, truncated Beta with w = w(eps / samples)."""
    rng = np.random.default_rng(3)
    s, n, eps = 700, 1000, 10.0
    draws = ef.ops_binomial(np.full(200, s), n, eps, rng, samples=100)
    assert draws.shape == (100, 200)
    assert draws.min() >= 0.1 and draws.max() <= 0.9
    w = ef.ops_weight(eps / 100)
    a, b = 1 + w * s, 1 + w * (n - s)
    z = stats.beta.cdf(0.9, a, b) - stats.beta.cdf(0.1, a, b)

    def cdf(x):
        return (stats.beta.cdf(x, a, b) - stats.beta.cdf(0.1, a, b)) / z

    assert stats.kstest(draws.ravel(), cdf).pvalue > 1e-3
    # spending the whole budget on every draw (w(eps)) would give a very different law
    w_all = ef.ops_weight(eps)
    a2, b2 = 1 + w_all * s, 1 + w_all * (n - s)
    assert stats.kstest(draws.ravel(), stats.beta(a2, b2).cdf).pvalue < 1e-10


# ------------------------------------------------------------------------------ Gibbs pieces


def test_inverse_gaussian_moments_and_extreme_means():
    rng = np.random.default_rng(0)
    mu, lam = 2.0, 3.0
    x = ef.inverse_gaussian(np.full(400_000, mu), lam, rng)
    assert x.mean() == pytest.approx(mu, rel=0.01)
    assert x.var() == pytest.approx(mu**3 / lam, rel=0.05)
    assert stats.kstest(x[:20_000], stats.invgauss(mu / lam, scale=lam).cdf).pvalue > 1e-3
    # mean >> shape (|y - s| << b): NumPy's wald returns 0 here, this must stay positive,
    # and 1/x must follow the Levy limit of the reciprocal: lam / nu^2 -> 1/x ~ nu^2 / lam
    big = ef.inverse_gaussian(np.full(20_000, 1e12), 1e-4, rng)
    assert np.all(np.isfinite(big)) and np.all(big > 0)
    assert stats.kstest(1e-4 / big[big < 1e6], stats.chi2(1).cdf).pvalue > 1e-3


@pytest.mark.parametrize("lam, v, w", [(1.0, 0.0, 0.5), (2.0, 0.3, 4.0), (0.5, 3.0, np.inf)])
def test_truncated_exponential_moments_by_quadrature(lam, v, w):
    q, m, var = ef.truncated_exponential_moments(lam, v, w)
    pdf = stats.expon(scale=1 / lam).pdf
    mass = integrate.quad(pdf, v, w)[0]
    mean = integrate.quad(lambda x: x * pdf(x), v, w)[0] / mass
    m2 = integrate.quad(lambda x: x * x * pdf(x), v, w)[0] / mass
    # quad of a smooth density (default epsabs 1.5e-8 relative to a mass of order 1, measured error
    # estimate < 1e-14) vs closed form through exp/expm1: 1e-10 relative
    assert float(q) == pytest.approx(mass, rel=1e-10)
    assert float(m) == pytest.approx(mean, rel=1e-8)
    assert float(var) == pytest.approx(m2 - mean**2, rel=1e-7)


# ------------------------------------------------------------------------------ Gibbs vs exact


@pytest.mark.parametrize("y, n, eps", [(312.4, 1000, 0.1), (40.0, 100, 0.1)])
@pytest.mark.heavy
def test_gibbs_binomial_matches_exact_posterior(y, n, eps):
    """Stationary distribution vs brute-force summation (the CLT is accurate here)."""
    draws = ef.gibbs_binomial(
        np.full(200, y), n, eps, rng=np.random.default_rng(1), iters=1000, burn=300
    )
    mean, sd, se = _chains(draws)
    m_ref, sd_ref = exact_binomial_posterior(y, n, eps)
    assert abs(mean - m_ref) < 5 * se + 0.03 * sd_ref
    assert sd == pytest.approx(sd_ref, rel=0.04)
    assert draws.min() > 0 and draws.max() < 1


@pytest.mark.heavy
def test_gibbs_poisson_matches_exact_posterior():
    y, n, eps, sens = 415.0, 200, 0.1, 5.0
    draws = ef.gibbs_poisson(
        np.full(200, y), n, eps, sens, alpha=2.0, beta=1.0, rng=np.random.default_rng(2),
        iters=1000, burn=300,
    )  # fmt: skip
    mean, sd, se = _chains(draws)
    m_ref, sd_ref = exact_poisson_posterior(y, n, eps, sens, 2.0, 1.0, np.linspace(0.5, 4, 3001))
    assert abs(mean - m_ref) < 5 * se + 0.03 * sd_ref
    assert sd == pytest.approx(sd_ref, rel=0.05)


def test_gibbs_finishes_when_the_release_is_far_outside_the_range():
    """The paper's rejection loop never ends here; the truncated-normal draw is exact."""
    rng = np.random.default_rng(4)
    d = ef.gibbs_binomial(np.array([-1e4, 1e4, 5.0]), 10, 0.01, rng=rng, iters=300, burn=50)
    assert np.all(np.isfinite(d)) and d.min() > 0 and d.max() < 1
    d = ef.gibbs_poisson(np.array([-1e5]), 50, 0.01, 3.0, rng=rng, iters=300, burn=50)
    assert np.all(np.isfinite(d)) and d.min() > 0


def _normal_laplace_logpdf(y, m, v, b):
    """log of N(m, v) convolved with Laplace(0, b), by quadrature (reference)."""
    f = integrate.quad(
        lambda s: stats.norm.pdf(s, m, np.sqrt(v)) * np.exp(-abs(y - s) / b) / (2 * b),
        m - 12 * np.sqrt(v),
        m + 12 * np.sqrt(v),
        points=[y] if abs(y - m) < 12 * np.sqrt(v) else None,
        limit=200,
    )[0]
    return math.log(f)


@pytest.mark.heavy
def test_gibbs_truncated_exponential_matches_clt_posterior():
    """Algorithm 2 vs the posterior of the model it approximates, by quadrature over lambda.

    Reference: lambda ~ Gamma(2, 2); the released centre sum has the random-sum CLT law
    N(n q mu, n q Sigma + n q (1 - q) mu^2) plus Laplace noise.  At n = 2000 the two views of
    the Gibbs sampler (conjugate update with the full sum, CLT for the parts) agree with it.
    """
    n, lo, up, eps = 2000, 0.05, 3.0, 0.5
    rng = np.random.default_rng(5)
    lam_true = 1.3
    x = rng.exponential(1 / lam_true, size=n)
    y = float(np.sum(x[(x >= lo) & (x <= up)]) + rng.laplace(0, up / eps))
    grid = np.linspace(0.9, 1.8, 301)
    ll = []
    for lam in grid:
        q, m, v = ef.truncated_exponential_moments(lam, lo, up)
        ll.append(
            _normal_laplace_logpdf(y, n * q * m, n * q * v + n * q * (1 - q) * m**2, up / eps)
        )
    m_ref, sd_ref = _grid_moments(grid, np.array(ll) + stats.gamma.logpdf(grid, 2, scale=0.5))
    draws = ef.gibbs_truncated_exponential(
        np.full(100, y), n, lo, up, eps, alpha=2.0, beta=2.0, rng=rng, iters=800, burn=300
    )
    mean, sd, se = _chains(draws)
    assert abs(mean - m_ref) < 5 * se + 0.05 * sd_ref
    assert sd == pytest.approx(sd_ref, rel=0.08)


@pytest.mark.slow
def test_gibbs_binomial_matches_nuts_on_the_exact_marginal():
    """Gibbs (CLT + scale mixture) vs NUTS on LaplaceNoisyBinomial, same release, n = 1000."""
    import nutpie
    import pymc as pm

    import pymc_dpnoise as pmd
    from pymc_dpnoise.diagnostics import sample_compiled

    y, n, eps = 287.3, 1000, 0.05
    with pm.Model() as model:
        data = pm.Data("reports", np.array(y))
        p = pm.Beta("theta", 1.0, 1.0)
        pmd.LaplaceNoisyBinomial("y", n=n, p=p, epsilon=eps, observed=data)
    post, info = sample_compiled(
        nutpie.compile_pymc_model(model), draws=4000, tune=1000, chains=4, reports=np.array(y)
    )
    assert info["divergences"] == 0 and info["max_rhat"] < 1.01
    draws = ef.gibbs_binomial(
        np.full(200, y), n, eps, rng=np.random.default_rng(6), iters=1000, burn=300
    )
    mean, sd, se = _chains(draws)
    se_nuts = post.std() / np.sqrt(post.size / 4)  # conservative: ESS >= draws / 4
    assert abs(mean - post.mean()) < 5 * np.hypot(se, se_nuts) + 0.03 * sd
    assert sd == pytest.approx(post.std(), rel=0.05)


@pytest.mark.parametrize(
    "mu, sd, lo, hi",
    [(0, 1, -1, 2), (0, 1, 40, np.inf), (0, 1, -np.inf, -40), (10, 4, 0, np.inf), (-30, 1, 0, 5)],
)
def test_truncated_normal_draws_match_scipy(mu, sd, lo, hi):
    """The latent-count draw, including bounds 30-40 sd into a tail (where rejection loops)."""
    x = ef._truncnorm(np.random.default_rng(8), np.full(20_000, float(mu)), sd**2, lo, hi)
    assert x.min() >= lo and x.max() <= hi
    ref = stats.truncnorm((lo - mu) / sd, (hi - mu) / sd, loc=mu, scale=sd)
    assert stats.kstest(x, ref.cdf).pvalue > 1e-3
