"""The clipped reports (``pymc_dpnoise.distributions.clipped``) at the limits of their domain:
the clipped exponential at huge epsilon against its closed form in 60+-digit decimal
arithmetic, the clipped normal at large epsilon against its noise-free limit, absurd random
parameters refused rather than NaN, finite gradients at huge mu, NaN reports at -inf.  The
generic checks of both classes (reference grid, gradients, draws, broadcasting, backends) are
in ``test_distributions.py``."""

from __future__ import annotations

import functools
import itertools
import math
from decimal import Decimal, localcontext

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from pymc_dpnoise import math as dm


def _dec_log_int(lam, a, lo, hi, shift):
    """log of int_lo^hi lam e^{a x + shift} dx (exact, in log space), or None if empty."""
    if hi <= lo:
        return None
    w = a * (hi - lo)
    if abs(w) < Decimal("1e-20"):  # exprel(w) = 1 + w/2 + w^2/6 + ...
        return (lam * (hi - lo)).ln() + a * lo + shift + (1 + w / 2 + w * w / 6).ln()
    e_hi, e_lo = a * hi + shift, a * lo + shift
    big, small = max(e_hi, e_lo), min(e_hi, e_lo)
    return (lam / abs(a)).ln() + big + (1 - (small - big).exp()).ln()


def clipped_exp_logp_decimal(z, lam, u, eps):
    """log p(z) for min(x, u) + Laplace(u/eps), x ~ Exponential(lam): the model's closed form
    (atom at u plus the two one-sided Laplace integrals), evaluated on the exact binary inputs
    with 60 significant digits beyond the largest exponent, so no cancellation can matter."""
    scale = max(abs(z) * eps / u, eps, lam * u, lam * abs(z), 1.0)
    with localcontext() as ctx:
        ctx.prec = 60 + int(math.log10(scale))
        ctx.Emin, ctx.Emax = -(10**18) + 1, 10**18 - 1
        z, lam, u, eps = (Decimal(float(v)) for v in (z, lam, u, eps))
        ib = eps / u
        below = _dec_log_int(lam, ib - lam, Decimal(0), min(max(z, Decimal(0)), u), -z * ib)
        above = _dec_log_int(lam, -lam - ib, max(min(z, u), Decimal(0)), u, z * ib)
        atom = -lam * u - abs(z - u) * ib
        terms = [t for t in (below, above, atom) if t is not None]
        m = max(terms)
        return float(m + sum((t - m).exp() for t in terms).ln() + (ib / 2).ln())


@functools.cache
def _math_compiled(fn_name, n_params):
    """One compiled (logp, grads) function per math function, reused by every test."""
    args = [pt.dvector(f"a{i}") for i in range(n_params + 1)]
    out = getattr(dm, fn_name)(*args)
    grads = pt.grad(out.sum(), args[1:])
    return pytensor.function(args, [out, *grads])


def _huge_epsilon_exp_grid(epsilons):
    rows = []
    for eps, lam, u in itertools.product(epsilons, [1e-6, 1e-2, 1.0, 1e2, 1e6], [1e-3, 1.0, 1e3]):
        for zr in [-1e3, -1.0, -1e-3, 1e-9, 0.3, 1 - 1e-9, 1.0, 1.001, 2.0, 1e3]:
            rows.append((zr * u, lam, u, eps))
    return np.array(rows)


@pytest.mark.parametrize(
    "epsilons", [[1e-6, 1e-2, 1.0], [10.0, 1e3, 1e6], [1e14, 1e20], [1e100, 1e300]]
)
def test_clipped_exponential_exact_for_every_epsilon(epsilons):
    """Was: logp +44.67 instead of -7.60 at eps = 1e20 (error 6e-3 already at 1e14)."""
    rows = _huge_epsilon_exp_grid(epsilons)
    logp, *grads = _math_compiled("clipped_exponential_laplace_logp", 3)(*rows.T)
    ref = np.array([clipped_exp_logp_decimal(*r) for r in rows])
    # against 100-digit decimal arithmetic: our value's own rounding through log1p/exp of
    # well-conditioned terms (measured 7e-14), 1e-12 is ~9000 ulp
    np.testing.assert_allclose(logp, ref, rtol=1e-12, atol=1e-12)
    for g in grads:
        assert np.all(np.isfinite(g))


def test_clipped_exponential_reported_case():
    # the example: z inside [0, u] at eps = 1e20 is the clean density lam e^{-lam z}
    z, lam, u = 0.5, 2.0, 1.0
    logp = _math_compiled("clipped_exponential_laplace_logp", 3)(*np.array([[z, lam, u, 1e20]]).T)[
        0
    ]
    # the huge-epsilon limit is the exponential log density log(lam) - lam z to a few ulp (the
    # Laplace term is exactly 0): 1e-12 absolute on values of order 1
    assert logp[0] == pytest.approx(np.log(lam) - lam * z + np.log1p(0.0), abs=1e-12)


@pytest.mark.parametrize("eps", [1e4, 1e8, 1e14, 1e20, 1e100])
def test_clipped_normal_large_epsilon_limit(eps):
    """As eps grows the Laplace kernel is a point mass: inside (a, b) the density is the
    clean normal density (error O(s^2), s = (b-a)/eps), and gradients stay finite."""
    z = np.array([-0.9, -0.2, 0.0, 0.35, 0.99])
    mu, sigma = 0.3, 0.7
    n = z.size
    args = [z, np.full(n, mu), np.full(n, sigma), np.full(n, -1.0), np.full(n, 1.0)]
    logp, *grads = _math_compiled("clipped_normal_laplace_logp", 5)(*args, np.full(n, eps))
    ref = -0.5 * ((z - mu) / sigma) ** 2 - np.log(sigma * np.sqrt(2 * np.pi))
    s = 2.0 / eps
    # absolute: the O(s^2) distance to the limit (docstring); 1e-12 floor >> ulp of log p ~ 1
    np.testing.assert_allclose(logp, ref, rtol=0, atol=max(1e-12, 50 * s**2))
    for g in grads:
        assert np.all(np.isfinite(g))


@functools.cache
def _clipped_normal_logp_fn():
    import pymc as pm

    import pymc_dpnoise as pmd

    mu, sigma, eps = pt.dscalars("mu", "sigma", "eps")
    value = pt.dvector("value")
    logp = pm.logp(pmd.LaplacePerturbedClippedNormal.dist(mu, sigma, -1.0, 1.0, eps), value)
    return pytensor.function(
        [value, mu, sigma, eps], [logp, *pt.grad(logp.sum(), [mu, sigma, eps])]
    )


@pytest.mark.parametrize(
    "mu,sigma,eps",
    [
        (np.inf, 1.0, 1.0),
        (np.nan, 1.0, 1.0),
        (0.0, np.inf, 1.0),
        (0.0, 1.0, np.inf),
        (1e300, 1.0, 1.0),
    ],
)
def test_absurd_random_parameters_are_refused_not_nan(mu, sigma, eps):
    from pymc.logprob.utils import ParameterValueError

    with pytest.raises(ParameterValueError):
        _clipped_normal_logp_fn()(np.array([0.2, 3.0]), mu, sigma, eps)


@pytest.mark.parametrize("mu", [1e16, -1e16, 1e100])
def test_huge_mu_has_finite_gradients(mu):
    logp, *grads = _clipped_normal_logp_fn()(np.array([-3.0, 0.2, 4.0]), mu, 1.0, 1.0)
    assert np.all(np.isfinite(logp))
    assert all(np.isfinite(g) for g in grads)


def test_nan_report_in_pm_logp_is_minus_inf():
    logp = _clipped_normal_logp_fn()(np.array([np.nan, np.inf, 0.3]), 0.0, 1.0, 1.0)[0]
    assert logp[0] == -np.inf and logp[1] == -np.inf and np.isfinite(logp[2])
