"""Release-side mechanisms: distributions of the noise, calibration of σ, bad input."""

import numpy as np
import pytest
from scipy import optimize, stats

from pymc_dpnoise import mechanisms as m


def rng(seed=0):
    return np.random.default_rng(seed)


def test_clip_and_sensitivity():
    np.testing.assert_array_equal(m.clip([-3.0, 0.5, 9.0], -1.0, 1.0), [-1.0, 0.5, 1.0])
    assert m.clipped_sensitivity(-5.0, 5.0) == 10.0
    with pytest.raises(ValueError, match="`lower` must be < `upper`"):
        m.clip([0.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="`values` must be finite"):
        m.clip([np.nan], 0.0, 1.0)


def test_laplace_mechanism_noise_distribution():
    z = m.laplace_mechanism(np.zeros(50_000), 2.0, 0.5, rng(1))
    assert stats.kstest(z, stats.laplace(scale=4.0).cdf).pvalue > 1e-3
    assert stats.kstest(z, stats.laplace(scale=4.4).cdf).pvalue < 1e-3  # the test has power


def test_per_record_epsilon_broadcasts():
    eps = np.where(np.arange(40_000) % 2 == 0, 0.5, 5.0)
    z = m.laplace_mechanism(np.zeros(40_000), 1.0, eps, rng(2))
    assert stats.kstest(z[::2], stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    assert stats.kstest(z[1::2], stats.laplace(scale=0.2).cdf).pvalue > 1e-3


def test_perturb_clipped_is_clip_then_laplace():
    x = rng(3).normal(0, 3, 60_000)
    z = m.perturb_clipped(x, -1.0, 1.0, 2.0, rng(4))
    # residual against the clipped value is Laplace(0, (b - a)/eps) = Laplace(0, 1)
    resid = z - np.clip(x, -1.0, 1.0)
    assert stats.kstest(resid, stats.laplace(scale=1.0).cdf).pvalue > 1e-3


def test_perturb_clipped_exponential():
    x = rng(5).exponential(2.0, 60_000)
    z = m.perturb_clipped_exponential(x, 3.0, 1.5, rng(6))
    resid = z - np.minimum(x, 3.0)
    assert stats.kstest(resid, stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    with pytest.raises(ValueError, match="`upper`"):
        m.perturb_clipped_exponential(x, -1.0, 1.0, rng())


def test_randomized_response_keep_probability():
    bits = np.tile([0, 1], 50_000)
    out = m.randomized_response(bits, 1.0, rng(7))
    keep = np.mean(out == bits)
    p = np.exp(1) / (1 + np.exp(1))
    assert abs(keep - p) < 4 * np.sqrt(p * (1 - p) / bits.size)
    assert set(np.unique(out)) == {0, 1}
    with pytest.raises(ValueError, match="`bits`"):
        m.randomized_response([0, 2], 1.0, rng())
    with pytest.raises(ValueError, match="`epsilon`"):
        m.randomized_response([0, 1], 0.0, rng())


def _delta_prob_space(sigma, eps, sens):
    """delta(sigma) of Balle & Wang Thm. 8 in plain probability space (valid for moderate eps)."""
    a = sens / (2 * sigma) - eps * sigma / sens
    b = -sens / (2 * sigma) - eps * sigma / sens
    return stats.norm.cdf(a) - np.exp(eps) * stats.norm.cdf(b)


@pytest.mark.parametrize(
    "eps,delta,sens",
    [(1.0, 1e-5, 1.0), (0.1, 1e-5, 1.0), (0.5, 1e-3, 2.0), (3.0, 1e-8, 0.5), (0.01, 0.1, 1.0)],
)
def test_analytic_gaussian_agrees_with_independent_bisection(eps, delta, sens):
    """An independent root-finder (brentq, probability space) gives the same sigma."""
    ref = optimize.brentq(
        lambda s: _delta_prob_space(s, eps, sens) - delta, 1e-3 * sens, 1e4 * sens, xtol=1e-14
    )
    assert m.analytic_gaussian_sigma(eps, delta, sens) == pytest.approx(ref, rel=1e-9)


def test_analytic_gaussian_check_values():
    assert m.analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.7306, abs=1e-4)
    assert m.analytic_gaussian_sigma(0.1, 1e-5) == pytest.approx(30.75, abs=0.01)
    # smaller than the classical bound where that applies
    assert m.analytic_gaussian_sigma(0.5, 1e-5) < m.classical_gaussian_sigma(0.5, 1e-5)


@pytest.mark.parametrize("eps", [0.0, 1e-3, 1.0, 10.0, 100.0, 1000.0])
@pytest.mark.parametrize("delta", [0.5, 1e-5, 1e-12, 1e-100, 1e-300])
def test_analytic_gaussian_extremes_are_tight(eps, delta):
    """For every (eps, delta): finite, meets the condition, and a slightly smaller sigma fails."""
    sigma = m.analytic_gaussian_sigma(eps, delta)
    assert np.isfinite(sigma) and sigma > 0
    log_d = m.core._log_delta(sigma, eps, 1.0)
    assert log_d <= np.log(delta) + 1e-9
    assert m.core._log_delta(sigma * (1 - 1e-8), eps, 1.0) > np.log(delta) - 1e-6


def test_analytic_gaussian_monotone_and_vectorised():
    eps = np.array([0.1, 0.5, 1.0, 4.0, 50.0])
    sig = m.analytic_gaussian_sigma(eps, 1e-6)
    assert sig.shape == (5,)
    assert np.all(np.diff(sig) < 0)
    sig_d = m.analytic_gaussian_sigma(1.0, np.array([1e-2, 1e-6, 1e-20]))
    assert np.all(np.diff(sig_d) > 0)
    np.testing.assert_allclose(m.analytic_gaussian_sigma(1.0, 1e-5, 3.0), 3 * 3.7306, rtol=1e-4)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(epsilon=-1.0, delta=1e-5), "epsilon"),
        (dict(epsilon=np.nan, delta=1e-5), "epsilon"),
        (dict(epsilon=1.0, delta=0.0), "delta"),
        (dict(epsilon=1.0, delta=1.0), "delta"),
        (dict(epsilon=1.0, delta=1e-5, sensitivity=0.0), "sensitivity"),
    ],
)
def test_analytic_gaussian_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        m.analytic_gaussian_sigma(**kwargs)


def test_gaussian_mechanism_scale():
    z = m.gaussian_mechanism(np.zeros(50_000), 1.0, 1.0, 1e-5, rng(8))
    assert stats.kstest(z, stats.norm(scale=m.analytic_gaussian_sigma(1.0, 1e-5)).cdf).pvalue > 1e-3


@pytest.mark.parametrize(
    "call",
    [
        lambda: m.laplace_mechanism([0.0], 1.0, 0.0, rng()),
        lambda: m.laplace_mechanism([0.0], -1.0, 1.0, rng()),
        lambda: m.laplace_mechanism([0.0], 1.0, [1.0, 2.0, 3.0], rng()),
        lambda: m.laplace_mechanism(np.zeros(2), 1.0, np.ones(3), rng()),
        lambda: m.perturb_clipped([0.0], 2.0, 1.0, 1.0, rng()),
    ],
)
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="`rng`"):
        m.laplace_mechanism([0.0], 1.0, 1.0, 42)
