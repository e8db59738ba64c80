"""Truncated-family and multinomial noisy sums (Bernstein & Sheldon Secs. 3.2-3.3).

* the exact parts (truncated moments, the normal--Laplace convolution, the multinomial
  normal-mixture density, the closed-form Cholesky map) against independent SciPy references
  to 1e-9 (quadrature) or 1e-10 on extreme grids;
* the approximations (random-sum CLT, multinomial normal approximation) against exact or
  Monte Carlo references of the *true* mechanism, in the ranges the docs claim;
* the release mechanism; PyMC use (hierarchical model with dims, predictive draws, the three
  NUTS samplers, slow) and a small SBC per family (slow);
* a noise spec (``noise=``): Gaussian noise on the truncated sums, the CLT normal convolved
  with N(0, sigma^2), against quadrature of N(s; m, V) N(y - s; 0, sigma^2) with the reference
  moments of ``expfam_reference``, gradients against finite differences, draws' mean and
  variance against the exact moments; the Laplace spec is the ``epsilon`` path; Gaussian noise
  on the multinomial counts against SciPy's dense multivariate normal, its gradient, draws'
  mean and covariance; the refusals (integer kinds, both or neither of ``epsilon`` /
  ``noise``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from expfam_reference import (
    exact_noisy_multinomial_logpdf,
    exp_moments,
    multinomial_mixture_logpdf,
    normal_laplace_logpdf,
    poisson_moments,
    poisson_moments_exact,
)
from pymc.logprob.utils import ParameterValueError
from scipy import integrate, signal, stats
from scipy.special import logsumexp

import pymc_dpnoise as pmd
from pymc_dpnoise import noise
from pymc_dpnoise.diagnostics import SBCProblem, simulation_based_calibration
from pymc_dpnoise.math import expfam as em

_FNS: dict = {}


def _fn(key):
    """Compiled helpers, once per module (vector inputs: one graph serves every grid)."""
    if key in _FNS:
        return _FNS[key]
    if key == "moments":
        th, lo, hi = pt.dvector("th"), pt.dvector("lo"), pt.dvector("hi")
        outs = [*em.truncated_exponential_moments(th, lo, hi)]
        outs += [*em.truncated_poisson_moments(th, lo, hi)]
        grads = [pytensor.grad(o.sum(), th) for o in outs]
        f = pytensor.function([th, lo, hi], outs + grads)
    elif key == "normal_laplace":
        y, m, v, b = (pt.dvector(c) for c in "ymvb")
        out = em.normal_laplace_logp(y, m, v, b)
        f = pytensor.function([y, m, v, b], [out, *pytensor.grad(out.sum(), [m, v, b])])
    elif key == "mixture":
        y, p, w = pt.dmatrix("y"), pt.dmatrix("p"), pt.dmatrix("w")
        n = pt.dvector("n")
        out = em.multinomial_normal_mixture_logp(y, n, p, w)
        f = pytensor.function([y, n, p, w], [out, pytensor.grad(out.sum(), p)])
    elif key == "counts":
        z, p, n = pt.dmatrix("z"), pt.dmatrix("p"), pt.dvector("n")
        f = pytensor.function([z, n, p], em.multinomial_counts_from_normal(z, n, p))
    _FNS[key] = f
    return f


# --------------------------------------------------------------------------------------------
# Exact parts against independent references
# --------------------------------------------------------------------------------------------


@pytest.mark.heavy
def test_truncated_moments_match_quadrature_and_sums():
    rows_e = list(
        itertools.product([1e-4, 0.01, 0.5, 3.0, 60.0], [(0.0, 8.0), (1.0, 1.001), (2.0, 50.0)])
    )
    rows_p = list(
        itertools.product([1e-3, 0.4, 3.0, 40.0, 400.0], [(0, 10), (2, 2), (5, 60), (0, 1000)])
    )
    th = np.array([r[0] for r in rows_e + rows_p], float)
    lo = np.array([r[1][0] for r in rows_e + rows_p], float)
    hi = np.array([r[1][1] for r in rows_e + rows_p], float)
    out = _fn("moments")(th, lo, hi)
    ne = len(rows_e)
    for i, (t, (a, b)) in enumerate(rows_e):
        ref = exp_moments(t, a, b)
        for j in range(3):
            got = out[j][i]
            assert abs(got - ref[j]) <= 1e-11 * max(abs(ref[j]), 1e-300) + 1e-14 * (j != 2), (
                "exp",
                t,
                a,
                b,
                j,
                got,
                ref[j],
            )
            assert np.isfinite(out[6 + j][i])
    for i, (t, (a, b)) in enumerate(rows_p):
        ref = poisson_moments(t, a, b)
        if ref[0] < -50:
            # q below 2e-22 (e.g. mu = 400 on {0..10}): the variance then loses relative
            # accuracy (6e-8 at q = e^-355) to the cancellation in mu^2 (r2 - r1^2); such
            # bounds keep no record in practice, and the mean and log q stay accurate
            assert abs(out[3][ne + i] - ref[0]) <= 1e-10 * abs(ref[0])
            assert abs(out[4][ne + i] - ref[1]) <= 1e-8 * abs(ref[1])
            continue
        for j in range(3):
            got = out[3 + j][ne + i]
            scale = abs(ref[j]) if j != 2 else max(ref[2], 1e-12 * ref[1] ** 2)
            atol = 1e-12  # the reference's log q is 1 - 1e-13 at best; summation order varies
            assert abs(got - ref[j]) <= 1e-10 * scale + atol, (t, a, b, j, got, ref)
            assert np.isfinite(out[9 + j][ne + i])


def test_truncated_poisson_moments_exact_at_any_rate():
    """Truncated-Poisson moments against exact rational sums, rates from 1e-3 to 1e12 on
    intervals from one integer to 51 (at 10^4): constant bounds at most 64 integers apart
    (the common case: records in [0, 10]) sum the pmf over the interval; symbolic bounds keep
    the ratio forms except far from the interval, where 64 terms from its near end are
    summed (the ratio forms gave a mean of 9.95 and a negative variance at mu = 1e7 on
    {0..10}).  The gradient of log q against the identity d log q / d mu = mean / mu - 1."""
    rows = list(
        itertools.product(
            [1e-3, 0.4, 3.0, 40.0, 400.0, 1e4, 1e7, 1e12],
            [(0, 10), (2, 2), (5, 60), (0, 63), (10000, 10050)],
        )
    )
    th, lo, hi = pt.dvector("th"), pt.dvector("lo"), pt.dvector("hi")
    direct = em.truncated_poisson_moments(th, lo, hi, width=64)
    general = em.truncated_poisson_moments(th, lo, hi)  # symbolic bounds: no static width
    grads = [pytensor.grad(x[0].sum(), th) for x in (direct, general)]
    f = pytensor.function([th, lo, hi], [*direct, *general, *grads])
    t, a, b = (np.array(c, float) for c in zip(*[(r[0], *r[1]) for r in rows], strict=True))
    out = f(t, a, b)
    for i, (mu, (lo_, hi_)) in enumerate(rows):
        ref = poisson_moments_exact(mu, lo_, hi_)
        g_ref = ref[1] / mu - 1.0
        ratio_forms = not (mu >= 2 * (hi_ + 1) or lo_ + 1 >= 2 * mu)
        for path, tol_var in ((0, 1e-10), (3, 1e-6 if ratio_forms else 1e-10)):
            got = out[path : path + 3]
            msg = (mu, lo_, hi_, path, [x[i] for x in got], ref)
            # log q = log pmf(a) + ...: a few ulp of the terms that cancel in log pmf(a)
            # (a log mu, mu, lgamma(a + 1); ~1e-11 at a = mu = 1e4, the reference's too)
            scale = abs(lo_ * np.log(mu)) + mu + math.lgamma(lo_ + 1)
            assert abs(got[0][i] - ref[0]) <= 1e-13 * abs(ref[0]) + 1e-15 * scale + 1e-16, msg
            assert abs(got[1][i] - ref[1]) <= 1e-12 * ref[1] + 1e-15, msg
            assert abs(got[2][i] - ref[2]) <= tol_var * ref[2] + 1e-15 * ref[1], msg
        g = out[6][i]
        assert abs(g - g_ref) <= 1e-10 * abs(g_ref) + 1e-13 * max(1.0, ref[1] / mu), (mu, g)
        assert np.isfinite(out[7][i])


def test_truncated_poisson_constant_bounds_take_the_direct_sum():
    """A model's constant bounds reach the direct path (no incomplete gamma function in the
    logp graph); bounds held in ``pm.Data`` keep the incomplete-gamma path; same logp."""
    from pytensor.scalar.math import GammaIncC

    def logp_graph(data):
        with pm.Model() as m:
            lo, hi = (pm.Data(c, v) for c, v in (("lo", 0.0), ("hi", 10.0))) if data else (0, 10)
            mu = pm.Gamma("mu", 2.0, 0.5)
            pmd.LaplaceNoisyTruncatedPoisson(
                "y", n=400, mu=mu, lower=lo, upper=hi, epsilon=1.0, observed=1200.0
            )
        graph = m.logp()
        kinds = {
            type(getattr(v.owner.op, "scalar_op", None))
            for v in pytensor.graph.ancestors([graph])
            if v.owner is not None
        }
        return m.compile_logp()({"mu_log__": np.log(3.0)}), GammaIncC in kinds

    (v_const, gamma_const), (v_data, gamma_data) = logp_graph(False), logp_graph(True)
    assert not gamma_const and gamma_data
    # the same graph with bounds as constants or in pm.Data: the same libm calls on the same
    # values, a few ulp from constant folding
    assert abs(v_const - v_data) <= 1e-12 * abs(v_data)


def test_normal_laplace_matches_quadrature_on_extreme_grid():
    rows = []
    for v, b in itertools.product([1e-8, 0.3, 1e2, 1e8], [1e-4, 1.0, 1e4]):
        sd = np.sqrt(v)
        for r in (0.0, 0.7 * sd, -3 * sd, 12 * sd, 50 * b, -50 * b, 3 * sd + 2 * b):
            rows.append((1.5 + r, 1.5, v, b))
    y, m, v, b = (np.array(c) for c in zip(*rows, strict=True))
    out, gm, gv, gb = _fn("normal_laplace")(y, m, v, b)
    assert np.all(np.isfinite(gm)) and np.all(np.isfinite(gv)) and np.all(np.isfinite(gb))
    for i in range(len(y)):
        ref = normal_laplace_logpdf(y[i], m[i], v[i], b[i])
        assert np.isfinite(ref) and np.isfinite(out[i])
        # 1e-9: the adaptive quadrature's own accuracy at kappa = 1e8 (ours matches the
        # normal limit there to 1e-15)
        assert abs(out[i] - ref) <= 1e-9 * max(1.0, abs(ref)), (y[i], m[i], v[i], b[i], out[i])


@pytest.mark.heavy
def test_normal_laplace_integrates_to_one_and_limits():
    from scipy import integrate

    f = _fn("normal_laplace")
    for v, b in ((2.0, 0.5), (0.01, 3.0), (9.0, 9.0)):

        def dens(y, v=v, b=b):
            return float(np.exp(f([y], [0.0], [v], [b])[0][0]))

        total = sum(
            integrate.quad(dens, lo, hi, limit=400, epsabs=1e-13)[0]
            for lo, hi in ((-np.inf, 0.0), (0.0, np.inf))
        )
        # total mass by quadrature (epsabs 1e-13 per piece) plus atoms: 1e-9 absolute is > 1e3 of
        # that error
        assert total == pytest.approx(1.0, abs=1e-9)
    # kappa -> infinity: the normal; kappa -> 0: the Laplace
    y = np.array([0.3, -2.0])
    lp = f(y, [0.0, 0.0], [1.0, 1.0], [1e-9, 1e-9])[0]
    np.testing.assert_allclose(lp, stats.norm.logpdf(y), rtol=1e-7)
    lp = f(y, [0.0, 0.0], [1e-12, 1e-12], [2.0, 2.0])[0]
    # the normal-Laplace density at a normal sd of 1e-12 is the Laplace's to ~1e-12 relative (the
    # limit) plus a few ulp of erfcx/log: 1e-9
    np.testing.assert_allclose(lp, stats.laplace.logpdf(y, scale=2.0), rtol=1e-9)


def _fd(fun, x, h=1e-5):
    def d(s):
        return (fun(x + s) - fun(x - s)) / (2 * s)

    return (4 * d(h / 2) - d(h)) / 3


@pytest.mark.heavy
def test_truncated_rate_gradients_match_finite_differences():
    f = _fn("moments")
    for t, a, b in [(0.5, 0.0, 8.0), (1e-3, 1.0, 1.5), (0.04, 0.0, 1.0), (30.0, 0.0, 2.0)]:
        out = f([t], [a], [b])
        for j in range(3):
            fd = _fd(lambda x, j=j, a=a, b=b: f([x], [a], [b])[j][0], t, h=t * 1e-4)
            # abs floor for derivatives near 0: central differences at step 1e-4 relative carry
            # ~1e-10 of rounding and truncation
            assert out[6 + j][0] == pytest.approx(fd, rel=1e-6, abs=1e-9), ("exp", t, j)
    for mu, a, b in [(3.0, 0.0, 10.0), (4.0, 2.0, 6.0), (0.5, 1.0, 3.0), (50.0, 30.0, 60.0)]:
        out = f([mu], [a], [b])
        for j in range(3):
            fd = _fd(lambda x, j=j, a=a, b=b: f([x], [a], [b])[3 + j][0], mu, h=mu * 1e-4)
            # abs floor for derivatives near 0: central differences at step 1e-4 relative carry
            # ~1e-10 of rounding and truncation
            assert out[9 + j][0] == pytest.approx(fd, rel=1e-6, abs=1e-9), ("pois", mu, j)


def test_multinomial_mixture_matches_full_covariance_density():
    rng = np.random.default_rng(0)
    f = _fn("mixture")
    for k, n in itertools.product((2, 3, 6), (1.0, 50.0, 1e6)):
        for p in (np.full(k, 1.0 / k), np.r_[1 - 1e-6 * (k - 1), np.full(k - 1, 1e-6)]):
            for wscale in (1e-8, 1.0, 1e8):
                w = wscale * rng.exponential(size=(3, k))
                if n / wscale > 1e9:  # condition number beyond what the dense reference resolves
                    continue
                # releases as the model makes them: counts (summing to n) + N(0, w) noise
                y = rng.multinomial(int(n), p, size=3) + rng.normal(size=(3, k)) * np.sqrt(w)
                out, g = f(y, np.full(3, n), np.tile(p, (3, 1)), w)
                ref = [multinomial_mixture_logpdf(y[i], n, p, w[i]) for i in range(3)]
                np.testing.assert_allclose(out, ref, rtol=1e-8, err_msg=str((k, n, p, wscale)))
                assert np.all(np.isfinite(g))


def test_counts_map_is_the_multinomial_cholesky_factor():
    f = _fn("counts")
    rng = np.random.default_rng(1)
    for k in (2, 3, 7):
        p = rng.dirichlet(np.ones(k))
        n = 250.0
        base = f(np.zeros((1, k - 1)), [n], p[None])[0]
        # n p computed as exp(log n + log p) or n * softmax: a few ulp of exp/log, 1e-12 is ~9000
        # ulp
        np.testing.assert_allclose(base, n * p, rtol=1e-12)
        cols = f(np.eye(k - 1), np.full(k - 1, n), np.tile(p, (k - 1, 1))) - base
        cov = cols.T @ cols  # (k, k): L L^T over all k counts
        np.testing.assert_allclose(cov, n * (np.diag(p) - np.outer(p, p)), atol=1e-9 * n)
        # the counts always sum to n
        s = f(rng.normal(size=(5, k - 1)), np.full(5, n), np.tile(p, (5, 1)))
        np.testing.assert_allclose(s.sum(-1), n, rtol=1e-12)


# --------------------------------------------------------------------------------------------
# The approximations against the exact mechanism
# --------------------------------------------------------------------------------------------


def _truncated_poisson_pmf_exact(n, mu, a, b):
    """Exact pmf of sum_i 1[a <= x_i <= b] x_i, x_i ~ Poisson(mu): n-fold FFT convolution."""
    k = np.arange(b + 1)
    w = np.where(k >= a, stats.poisson.pmf(k, mu), 0.0)
    w[0] += 1.0 - w.sum()
    out, base, m = np.array([1.0]), w, n
    while m:
        if m & 1:
            out = np.clip(signal.fftconvolve(out, base), 0.0, None)
        m >>= 1
        if m:
            base = np.clip(signal.fftconvolve(base, base), 0.0, None)
    return out / out.sum()


def _approx_logp(kind, y, n, theta, a, b, eps):
    d = pmd.LaplaceNoisyTruncatedExponential if kind == "exp" else pmd.LaplaceNoisyTruncatedPoisson
    key = ("approx", kind)
    if key not in _FNS:
        yv, nv, tv, av, bv, ev = (pt.dvector(c) for c in ("y", "n", "t", "a", "b", "e"))
        rv = d.dist(nv, tv, av, bv, ev)
        _FNS[key] = pytensor.function([yv, nv, tv, av, bv, ev], pm.logp(rv, yv))
    y = np.atleast_1d(np.asarray(y, float))
    m = len(y)
    return _FNS[key](y, *(np.full(m, float(x)) for x in (n, theta, a, b, eps)))


def _central_values(kind, n, theta, a, b, eps, width=2.5, num=21):
    moments = exp_moments if kind == "exp" else poisson_moments
    log_q, mu, var = moments(theta, a, b)
    q = np.exp(log_q)
    m, v = n * q * mu, n * q * var + n * q * (1 - q) * mu**2
    sd = np.sqrt(v + 2 * (b / eps) ** 2)
    return m + sd * np.linspace(-width, width, num)


# (n, eps) -> max |log p_CLT - log p_exact| within 2.5 sd (measured, then rounded up)
_POISSON_TOL = {
    (30, 0.1): 0.002, (30, 1.0): 0.1, (100, 0.1): 0.005, (100, 1.0): 0.12,
    (1000, 0.1): 0.015, (1000, 1.0): 0.08,
}  # fmt: skip


@pytest.mark.parametrize("mu,a,b", [(3.0, 0, 10), (4.0, 2, 6), (0.5, 1, 3)])
def test_truncated_poisson_clt_against_exact_pmf(mu, a, b):
    """Exact reference: the pmf of the truncated sum by FFT convolution, then the Laplace sum."""
    for (n, eps), tol in _POISSON_TOL.items():
        pmf = _truncated_poisson_pmf_exact(n, mu, a, b)
        s = np.arange(len(pmf))
        ys = _central_values("pois", n, mu, a, b, eps)
        scale = b / eps
        exact = [logsumexp(np.log(pmf + 1e-300) - np.abs(y - s) / scale) for y in ys]
        exact = np.array(exact) - np.log(2 * scale)
        err = np.max(np.abs(_approx_logp("pois", ys, n, mu, a, b, eps) - exact))
        assert err <= tol, (n, eps, err)


def test_truncated_poisson_posterior_matches_exact_at_large_epsilon():
    """At eps = 10 the lattice of the sum shows in the density (the CLT ignores it), but it
    hardly depends on mu: the grid posterior of mu moves by < 5% of its sd."""
    n, a, b, eps, mu_true = 100, 0, 10, 10.0, 3.0
    rng = np.random.default_rng(3)
    x = rng.poisson(mu_true, size=n)
    y = float(np.where(x <= b, x, 0).sum() + rng.laplace(0, b / eps))
    grid = np.linspace(2.0, 4.2, 221)
    scale = b / eps
    exact = []
    for mu in grid:
        pmf = _truncated_poisson_pmf_exact(n, mu, a, b)
        s = np.arange(len(pmf))
        exact.append(logsumexp(np.log(pmf + 1e-300) - np.abs(y - s) / scale))
    approx = np.array([_approx_logp("pois", y, n, mu, a, b, eps)[0] for mu in grid])
    post = {}
    for name, lp in (("exact", np.array(exact)), ("approx", approx)):
        w = np.exp(lp - lp.max())
        w /= w.sum()
        mean = np.sum(w * grid)
        post[name] = (mean, np.sqrt(np.sum(w * (grid - mean) ** 2)))
    assert abs(post["exact"][0] - post["approx"][0]) <= 0.05 * post["exact"][1], post
    assert post["approx"][1] == pytest.approx(post["exact"][1], rel=0.05), post


@pytest.mark.parametrize("lam,a,b", [(0.5, 0.0, 8.0), (0.3, 1.0, 6.0)])
def test_truncated_exponential_clt_against_monte_carlo(lam, a, b):
    """Monte Carlo of the exact mechanism (2e5 truncated sums), Laplace density averaged over
    them.  Claimed: |error| <= 0.015 at eps = 0.1 and <= 0.12 at eps = 1 for n >= 30 (within
    2.5 sd); MC error is below 0.005 and 0.03 there."""
    rng = np.random.default_rng(11)
    for n, reps in ((30, 200_000), (1000, 40_000)):
        sums = np.empty(reps)
        for i in range(0, reps, 4000):
            x = rng.exponential(1 / lam, size=(4000, n))
            sums[i : i + 4000] = np.where((x >= a) & (x <= b), x, 0.0).sum(-1)
        for eps, tol in ((0.1, 0.015), (1.0, 0.12)):
            scale = b / eps
            ys = _central_values("exp", n, lam, a, b, eps)
            mc = np.array([logsumexp(-np.abs(y - sums) / scale) for y in ys])
            mc -= np.log(reps) + np.log(2 * scale)
            err = np.max(np.abs(_approx_logp("exp", ys, n, lam, a, b, eps) - mc))
            assert err <= tol, (n, eps, err)


def _mixture_marginal_mc(y, n, p, b, rng, draws=20_000):
    """The model's approximate marginal p(y | p) = E_w N(y; np, n(diag p - pp^T) + 2b^2 w)."""
    w = rng.exponential(size=(draws, len(p)))
    f = _fn("mixture")
    lp = f(np.tile(y, (draws, 1)), np.full(draws, float(n)), np.tile(p, (draws, 1)), 2 * b * b * w)[
        0
    ]
    return logsumexp(lp) - np.log(draws)


def test_multinomial_normal_approximation_against_exact_enumeration():
    """k = 3: the model's marginal (normal approximation, noise mixture integrated by MC)
    against the exact sum over every count vector.  Claimed range: every expected count
    n p_j >= 15; |error| <= 0.1 (eps = 1, n = 300), <= 0.02 when the noise dominates."""
    rng = np.random.default_rng(5)
    p = np.array([0.5, 0.3, 0.2])
    for n, eps, tol in ((300, 1.0, 0.1), (300, 0.1, 0.02), (75, 0.1, 0.02)):
        b = 2.0 / eps
        errs = []
        for _ in range(6):
            s = rng.multinomial(n, p)
            y = s + rng.laplace(0, b, size=3)
            exact = exact_noisy_multinomial_logpdf(y, n, p, b)
            errs.append(_mixture_marginal_mc(y, n, p, b, rng) - exact)
        assert np.max(np.abs(errs)) <= tol, (n, eps, errs)


# --------------------------------------------------------------------------------------------
# Release mechanism
# --------------------------------------------------------------------------------------------


def test_release_truncated_sum():
    x = np.array([[0.5, 9.0, 2.0, 8.0], [1.0, 1.0, 100.0, 0.0]])
    rel = pmd.mechanisms.release_truncated_sum(x, 0.0, 8.0, 2.0, np.random.default_rng(2))
    noise = np.random.default_rng(2).laplace(0, 8.0 / 2.0, size=2)
    np.testing.assert_allclose(rel.value, np.array([10.5, 2.0]) + noise)
    assert rel.sensitivity == 8.0 and rel.scale == 4.0 and np.all(rel.n == 4)
    rel = pmd.mechanisms.release_truncated_sum(
        x, 1.0, 6.0, 1.0, np.random.default_rng(2), family="exponential"
    )
    assert rel.sensitivity == 6.0  # max(|a|, |b|, b - a)
    counts = np.array([0, 3, 7, 2, 11])
    rel = pmd.mechanisms.release_truncated_sum(
        counts, 2, 7, 1.0, np.random.default_rng(4), family="poisson"
    )
    noise = np.random.default_rng(4).laplace(0, 7.0, size=())
    np.testing.assert_allclose(rel.value, 12.0 + noise)
    assert rel.family == "poisson"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(lower=-1.0), "`lower`"),
        (dict(lower=5.0, upper=5.0), "`lower`"),
        (dict(upper=np.inf), "`upper`"),
        (dict(upper=None), "`upper`"),
        (dict(epsilon=0.0), "`epsilon`"),
        (dict(epsilon=np.nan), "`epsilon`"),
        (dict(x=np.array([1.0, -0.5])), "`x`"),
        (dict(x=np.array([1.0, np.nan])), "`x`"),
        (dict(family="gaussian"), "`family`"),
        (dict(family="poisson", x=np.array([1.0, 2.5])), "`x`"),
        (dict(family="poisson", upper=7.5), "`upper`"),
    ],
)
def test_release_truncated_sum_refuses_bad_input(kwargs, match):
    args = dict(x=np.array([1.0, 2.0, 3.0]), lower=0.0, upper=5.0, epsilon=1.0)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        pmd.mechanisms.release_truncated_sum(**args, rng=np.random.default_rng(0))


# --------------------------------------------------------------------------------------------
# Multinomial helper: API, shapes, predictive draws
# --------------------------------------------------------------------------------------------


def _multinomial_model(release, latent="noise_variance", data=False):
    coords = {"region": [f"r{i}" for i in range(release.value.shape[0])], "cat": list("abc")}
    with pm.Model(coords=coords) as model:
        obs = pm.Data("reports", release.value) if data else release.value
        alpha = pm.Dirichlet("alpha", np.ones(3), dims="cat")
        conc = pm.Gamma("conc", 10.0, 0.2)
        p = pm.Dirichlet("p", conc * alpha, dims=("region", "cat"))
        pmd.LaplaceNoisyMultinomial(
            "y",
            n=release.n,
            p=p,
            epsilon=release.epsilon,
            observed=obs,
            dims=("region", "cat"),
            latent=latent,
        )
    return model


@pytest.mark.parametrize("latent", ["noise_variance", "counts"])
def test_multinomial_helper_in_hierarchical_model_with_dims(latent):
    rng = np.random.default_rng(0)
    labels = rng.choice(3, size=(4, 200), p=[0.5, 0.3, 0.2])
    release = pmd.mechanisms.release_multinomial_counts(labels, 3, 0.5, rng)
    model = _multinomial_model(release, latent)
    names = {v.name for v in model.free_RVs}
    latent_name = "y_noise_w" if latent == "noise_variance" else "y_counts_z"
    assert latent_name in names
    expected_dims = ("region", "cat") if latent == "noise_variance" else ("region", "cat_free")
    assert model.named_vars_to_dims[latent_name] == expected_dims
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    with model:
        prior = pm.sample_prior_predictive(200, random_seed=1)
    draws = prior.prior_predictive["y"]
    assert draws.dims[-2:] == ("region", "cat")
    # the draws are releases: counts sum to n exactly, plus 3 Laplace(4) draws
    resid = draws.sum("cat").values - 200
    assert resid.std() == pytest.approx(np.sqrt(3 * 2 * 4.0**2), rel=0.15)


def test_multinomial_helper_validation():
    with pm.Model():
        with pytest.raises(ValueError, match="`latent`"):
            pmd.LaplaceNoisyMultinomial("y", 10, np.array([0.5, 0.5]), 1.0, latent="x")
        with pytest.raises(ValueError, match="`p`"):
            pmd.LaplaceNoisyMultinomial("y", 10, np.array([0.5, 0.6]), 1.0)
        with pytest.raises(ValueError, match="`epsilon`"):
            pmd.LaplaceNoisyMultinomial("y", 10, np.array([0.5, 0.5]), 0.0)
        with pytest.raises(ValueError, match="`n`"):
            pmd.LaplaceNoisyMultinomial("y", 2.5, np.array([0.5, 0.5]), 1.0)
        with pytest.raises(ValueError, match="must be finite"):
            pmd.LaplaceNoisyMultinomial(
                "y", 10, np.array([0.5, 0.5]), 1.0, observed=np.array([np.nan, 3.0])
            )
    with pytest.raises(TypeError, match="context"):
        pmd.LaplaceNoisyMultinomial("y", 10, np.array([0.5, 0.5]), 1.0)


# --------------------------------------------------------------------------------------------
# NUTS with every sampler (slow)
# --------------------------------------------------------------------------------------------


def _truncated_hierarchical(released, n, eps):
    coords = {"site": [f"s{i}" for i in range(len(n))]}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", np.log(0.5), 0.5)
        tau = pm.HalfNormal("tau", 0.3)
        z = pm.Normal("z", 0.0, 1.0, dims="site")
        lam = pm.Deterministic("lam", pm.math.exp(mu + tau * z), dims="site")
        pmd.LaplaceNoisyTruncatedExponential(
            "y", n=n, lam=lam, lower=0.0, upper=10.0, epsilon=eps, observed=released, dims="site"
        )
    return model


def test_truncated_sum_in_hierarchical_model_with_dims():
    rng = np.random.default_rng(2)
    n = np.array([100, 400, 50])
    released = np.array([80.0, 900.0, 30.0])
    model = _truncated_hierarchical(released, n, 0.5)
    assert model.named_vars_to_dims["y"] == ("site",)
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    with model:
        prior = pm.sample_prior_predictive(50, random_seed=rng)
    draws = prior.prior_predictive["y"]
    assert draws.dims[-1] == "site"
    # releases: the truncated sums grow with n (the noise, scale 20, does not)
    assert float(draws.mean(("chain", "draw"))[1]) > float(draws.mean(("chain", "draw"))[2])


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["pymc", "nutpie", "numpyro"])
def test_models_sample_with_every_backend(sampler):
    rng = np.random.default_rng(5)
    n = rng.integers(200, 2000, size=8)
    lam_true = np.exp(rng.normal(np.log(0.5), 0.3, size=8))
    released = np.array(
        [
            pmd.mechanisms.release_truncated_sum(
                rng.exponential(1 / lam_true[i], size=n[i]), 0.0, 10.0, 0.5, rng
            ).value
            for i in range(8)
        ]
    )
    labels = rng.choice(3, size=(4, 300), p=[0.5, 0.3, 0.2])
    release = pmd.mechanisms.release_multinomial_counts(labels, 3, 0.5, rng)
    for model, var in (
        (_truncated_hierarchical(released, n, 0.5), "y"),
        (_multinomial_model(release), "y"),
    ):
        with model:
            idata = pm.sample(
                300, tune=300, chains=2, nuts_sampler=sampler, random_seed=1, progressbar=False
            )
            post = pm.sample_posterior_predictive(idata, random_seed=3, progressbar=False)
        assert int(idata.sample_stats["diverging"].sum()) <= 6
        assert post.posterior_predictive[var].shape[-1] == model[var].eval().shape[-1]
        if "lam" in idata.posterior:
            est = idata.posterior["lam"].mean(("chain", "draw")).values
            assert np.corrcoef(est, lam_true)[0, 1] > 0.5


# --------------------------------------------------------------------------------------------
# SBC (slow): 100 replicates per family at one epsilon
# --------------------------------------------------------------------------------------------


class _TruncExpSBC(SBCProblem):
    """lam ~ Gamma(4, 8); n records, kept in [0, 6], eps = 0.1."""

    eps = 0.1
    lower, upper = 0.0, 6.0

    @property
    def param_names(self):
        return ("lam",)

    def simulate(self, rng):
        lam = rng.gamma(4.0, 1 / 8.0)
        x = rng.exponential(1 / lam, size=self.n)
        rel = pmd.mechanisms.release_truncated_sum(x, self.lower, self.upper, self.eps, rng)
        return {"lam": lam}, np.atleast_1d(rel.value)

    def build_model(self, reports, noise_aware=True):
        with pm.Model() as model:
            data = pm.Data("reports", reports)
            lam = pm.Gamma("lam", 4.0, 8.0)
            pmd.LaplaceNoisyTruncatedExponential(
                "y", self.n, lam, self.lower, self.upper, self.eps, observed=data, shape=1
            )
        return model


class _TruncPoisSBC(_TruncExpSBC):
    """mu ~ Gamma(6, 2); n Poisson records, kept in {0..8}, eps = 0.1."""

    lower, upper = 0, 8

    @property
    def param_names(self):
        return ("mu",)

    def simulate(self, rng):
        mu = rng.gamma(6.0, 0.5)
        x = rng.poisson(mu, size=self.n)
        rel = pmd.mechanisms.release_truncated_sum(
            x, self.lower, self.upper, self.eps, rng, family="poisson"
        )
        return {"mu": mu}, np.atleast_1d(rel.value)

    def build_model(self, reports, noise_aware=True):
        with pm.Model() as model:
            data = pm.Data("reports", reports)
            mu = pm.Gamma("mu", 6.0, 2.0)
            pmd.LaplaceNoisyTruncatedPoisson(
                "y", self.n, mu, self.lower, self.upper, self.eps, observed=data, shape=1
            )
        return model


class _MultinomialSBC(SBCProblem):
    """p ~ Dirichlet(2, 2, 2); n labelled records, 3 noisy counts at eps = 0.1."""

    eps = 0.1

    @property
    def param_names(self):
        return ("p0", "p1", "p2")

    def simulate(self, rng):
        p = rng.dirichlet(np.full(3, 2.0))
        labels = rng.choice(3, size=self.n, p=p)
        rel = pmd.mechanisms.release_multinomial_counts(labels, 3, self.eps, rng)
        return {f"p{j}": p[j] for j in range(3)}, rel.value

    def build_model(self, reports, noise_aware=True):
        with pm.Model() as model:
            data = pm.Data("reports", reports)
            p = pm.Dirichlet("p", np.full(3, 2.0))
            pmd.LaplaceNoisyMultinomial("y", self.n, p, self.eps, observed=data)
        return model

    def extract(self, posterior, truth):
        draws = np.asarray(posterior["p"].values, float)
        return [(draws[..., j], truth[f"p{j}"]) for j in range(3)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "problem",
    [_TruncExpSBC(n=1000), _TruncPoisSBC(n=1000), _MultinomialSBC(n=1000)],
    ids=["truncated_exponential", "truncated_poisson", "multinomial"],
)
def test_sbc_coverage_near_nominal(problem):
    res = simulation_based_calibration(
        problem, 100, seed=13, n_jobs=2, draws=400, tune=400, chains=2
    )
    table = res.coverage(band_mass=0.99)
    print(table.to_string())
    print(res.ks().to_string())
    assert np.all(table["inside"]), table
    assert np.all(res.ks()["p_value"] > 1e-3)


def test_truncated_poisson_finite_when_no_record_is_kept():
    """Was NaN (the workflow table's ADVI cell hit it): at mu >~ 745 + upper the kept mass
    P(X <= upper) underflows to 0.  Now log q stays finite (log-space branch), the release is
    pure Laplace noise there (the sum is 0 almost surely) and the gradient is finite."""
    mu = pt.dscalar("mu")
    y = np.array([3.0, 100.0, -5.0])
    rv = pmd.LaplaceNoisyTruncatedPoisson.dist(30, mu, 0, 8, 1.0)
    lp = pm.logp(rv, y)
    f = pytensor.function([mu], [lp, pytensor.grad(lp.sum(), mu)])
    laplace = stats.laplace(0.0, 8.0).logpdf(y)  # sensitivity = upper = 8, epsilon = 1
    for m in [700.0, 1000.0, 1e4, 1e8, 1e15]:
        val, g = f(m)
        np.testing.assert_allclose(val, laplace, rtol=1e-12)
        assert np.isfinite(g)
    # continuity across the branch switch (F(8) = 1e-280 near mu = 700)
    vals = [f(m)[0].sum() for m in (600.0, 650.0, 700.0, 720.0)]
    assert np.all(np.isfinite(vals)) and np.ptp(vals) < 1e-9
    for m in (1e16, 1e300, 1e-151):  # outside the stated rate range: refused, not NaN
        with pytest.raises(ParameterValueError, match="rate"):
            f(m)


def test_normal_laplace_gradient_matches_high_precision_reference():
    """Issue 22: the gradient of ``normal_laplace_logp`` against the closed-form derivatives
    in 90-digit arithmetic (``tests/normal_laplace_reference.py``), on a grid with y = m
    exactly, |y - m|/sd in {1e-12, 0.3, 1, 1e3, 1e8, 1e10, 1e12, 1e15} (both signs), sd in
    {1e-3, 2.5, 1e6}, m in {0, -3e4} and Laplace scales 1e-8 .. 1e8.

    Promise (docs/guarantees.rst): ``|g - ref| <= 1e-9 |ref| + 1e-12 S`` per argument, S the
    size of the terms the derivative is made of: S_y = S_m = 1/sd + min(1/beta, x/sd),
    S_v = min((1 + x^2)/v, 1/beta^2 + 1/v), S_beta = min(1/beta, (1 + x)/sd + beta (1 +
    x^2)/v) (x = |y - m|/sd).  Was: at y = m the max/min tie-break gave d/dy = 0.129
    (sd 2.5, beta 1) and 797.9 (sd 1e-3, beta 1e8) where symmetry gives 0; d/dv = 0 where
    the truth is -1/(2v) = -0.08 (beta 1e-8); d/dbeta -1.1e20 where the truth is 2.0e4
    (|y - m|/sd = 1e15, beta 1e-8); 386 of 2160 derivatives off.  Now all within, worst
    1.4e-11 S; the value to 4.4e-16 relative.
    """
    from normal_laplace_reference import normal_laplace_logp_and_grad

    if "nl_grad" not in _FNS:
        y, m, v, b = (pt.dvector(k) for k in "ymvb")
        lp = em.normal_laplace_logp(y, m, v, b)
        _FNS["nl_grad"] = pytensor.function([y, m, v, b], [lp, *pt.grad(lp.sum(), [y, m, v, b])])
    xs = (0.0, 1e-12, -1e-12, 0.3, 1.0, -1.0, 1e3, 1e8, 1e10, 1e12, 1e15, -1e15)
    rows = np.array(
        [
            (m0 + x * sd, m0, sd**2, beta)
            for sd in (1e-3, 2.5, 1e6)
            for m0 in (0.0, -3e4)
            for beta in (1e-8, 1e-3, 1.0, 1e3, 1e8)
            for x in xs
        ]
    )
    got = np.array(_FNS["nl_grad"](*rows.T)).T
    ref = np.array([normal_laplace_logp_and_grad(*row) for row in rows])
    assert np.all(np.isfinite(got))
    y, m, v, b = rows.T
    sd = np.sqrt(v)
    x = np.abs(y - m) / sd
    size = np.stack(
        [
            np.maximum(1.0, np.abs(ref[:, 0])) * 1e3,  # the value: 1e-9 relative
            1 / sd + np.minimum(1 / b, x / sd),
            1 / sd + np.minimum(1 / b, x / sd),
            np.minimum((1 + x**2) / v, 1 / b**2 + 1 / v),
            np.minimum(1 / b, (1 + x) / sd + b * (1 + x**2) / v),
        ],
        axis=1,
    )
    bad = np.abs(got - ref) > 1e-9 * np.abs(ref) + 1e-12 * size
    assert not bad.any(), [(rows[i], j, got[i, j], ref[i, j]) for i, j in np.argwhere(bad)][:5]
    # y = m exactly: symmetric, so the derivative in y (and m) is exactly 0
    at_mean = rows[:, 0] == rows[:, 1]
    assert np.all(got[at_mean, 1] == 0.0) and np.all(got[at_mean, 2] == 0.0)


@pytest.mark.parametrize(
    "epsilon,sensitivity",
    [(1e-300, None), (1e-8, 1e300), (1e8, 1e300), (1e-8, 1e-8), (1e8, None), (1e-8, None)],
)
def test_truncated_families_finite_at_extreme_noise(epsilon, sensitivity):
    """Issue 22: the three truncated families are finite at extreme but valid noise.  Was NaN
    at Laplace scales above 1e154 (epsilon = 1e-300, or a sensitivity of 1e300): the variance
    floor 1e-300 (1 + beta^2) of ``normal_laplace_logp`` (and (1e-10 beta)^2 of the truncated
    normal's second sum) overflowed to inf.  In the Laplace limit the CLT part no longer
    matters: the value tends to log Laplace(y; m, beta), checked to 1e-9 (exponential)."""
    extra = {} if sensitivity is None else {"sensitivity": sensitivity}
    exp_ = pmd.LaplaceNoisyTruncatedExponential.dist(
        n=100.0, lam=0.5, lower=0.0, upper=8.0, epsilon=epsilon, **extra
    )
    poi = pmd.LaplaceNoisyTruncatedPoisson.dist(
        n=100.0, mu=3.0, lower=0.0, upper=8.0, epsilon=epsilon, **extra
    )
    for rv in (exp_, poi):
        lp = pm.logp(rv, np.array([150.0, 400.0])).eval()
        assert np.all(np.isfinite(lp)), (rv, lp)
    beta = (8.0 if sensitivity is None else sensitivity) / epsilon
    if beta > 1e100:
        log_q, mean, _ = (float(t.eval()) for t in em.truncated_exponential_moments(0.5, 0.0, 8.0))
        m = 100.0 * np.exp(log_q) * mean
        lp = pm.logp(exp_, np.array([150.0, 400.0])).eval()
        np.testing.assert_allclose(
            # the Laplace limit of the normal-Laplace density far in its tail (to ~1e-12 relative)
            # plus a few ulp of libm: 1e-9
            lp,
            -np.log(2.0) - np.log(beta) - np.abs([150.0 - m, 400.0 - m]) / beta,
            rtol=1e-9,
        )
    with pm.Model() as model:
        pmd.LaplaceNoisyTruncatedNormal(
            "y",
            n=100.0,
            mu=1.0,
            sigma=2.0,
            lower=-3.0,
            upper=5.0,
            epsilon=epsilon,
            **extra,
            observed=np.array([100.0, 300.0]),
        )
    assert np.isfinite(model.compile_logp()(model.initial_point()))


@pytest.mark.parametrize(
    "p", [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]
)
def test_multinomial_finite_with_zero_probabilities(p):
    """Issue 22: the multinomial building blocks at probabilities with exact zeros.  The counts
    map divided by the tail mass after each category (a floor 1e-300, then 0/0): the counts
    latent gave NaN at p = [1, 0, 0]; now the counts are exact (all n in the category of mass
    1; on an edge, the free count moves only between the two live categories) and the density
    is the Laplace density of the released counts around them."""
    p = np.array(p)
    z = np.array([0.3, -0.2])
    counts = em.multinomial_counts_from_normal(z, 10.0, p).eval()
    assert np.all(np.isfinite(counts)) and np.isclose(counts.sum(), 10.0)
    # zero-probability items get exactly 0 counts (products with 0); 1e-12 absolute allows the few
    # ulp of n = 10
    np.testing.assert_allclose(counts[p == 0], 0.0, atol=1e-12)
    if p.max() == 1.0:
        # counts n p by products and a softmax of order-1 values: a few ulp of 10, 1e-12 absolute
        np.testing.assert_allclose(counts, 10.0 * p, atol=1e-12)
    value = np.array([10.0, 0.5, -0.3])
    rv = pmd.LaplaceNoisyMultinomialGivenCounts.dist(10.0, p, z, 1.0)
    expected = np.sum(-np.log(2 * 2.0) - np.abs(value - counts) / 2.0)
    # a sum of 3 Laplace log densities (log, abs, /): a few ulp on both sides, 1e-12 is ~9000 ulp
    np.testing.assert_allclose(pm.logp(rv, value).eval(), expected, rtol=1e-12)
    rv = pmd.LaplaceNoisyMultinomialGivenNoiseVar.dist(10.0, p, np.array([0.3, 0.2, 1.0]), 1.0)
    assert np.isfinite(pm.logp(rv, value).eval())


# --------------------------------------------------------------------------------------------
# A noise spec (noise=): Gaussian noise on the truncated sums and on the multinomial counts
# --------------------------------------------------------------------------------------------

_CLS = {"exp": pmd.LaplaceNoisyTruncatedExponential, "pois": pmd.LaplaceNoisyTruncatedPoisson}


def _truncated_fn(kind, spec="gaussian"):
    """logp and its gradient in (theta, sigma) for vectors of every input; the noise is
    Gaussian with a symbolic sigma (``spec="gaussian"``) or given by ``epsilon``."""
    key = (kind, spec)
    if key not in _FNS:
        y, n, th, lo, hi, s = (pt.dvector(c) for c in ("y", "n", "th", "lo", "hi", "s"))
        if spec == "gaussian":
            # a symbolic sigma: the class the spec dispatches to, with the spec's validation
            cls = _CLS[kind]._gaussian
            rv = cls.dist(n, th, lo, hi, s)
        else:
            rv = _CLS[kind].dist(n, th, lo, hi, s)  # s is epsilon
        lp = pm.logp(rv, y)
        _FNS[key] = pytensor.function(
            [y, n, th, lo, hi, s], [lp, *pytensor.grad(lp.sum(), [th, s])]
        )
    return _FNS[key]


def _clt(kind, n, theta, a, b):
    log_q, mu, var = (exp_moments if kind == "exp" else poisson_moments)(theta, a, b)
    q = np.exp(log_q)
    return n * q * mu, n * q * var + n * q * (1 - q) * mu**2


def _reference(kind, y, n, theta, a, b, sigma):
    """log of the integral of N(s; m, V) N(y - s; 0, sigma^2) ds (adaptive quadrature)."""
    m, v = _clt(kind, n, theta, a, b)
    if v <= 0:
        return stats.norm.logpdf(y, m, sigma)
    sd = np.sqrt(v)
    # the integrand peaks at the precision-weighted mean; integrate around it in log-shifted
    # form so that releases deep in the tails do not underflow
    # (in the offset t = s - c from the peak, so that y - s and s - m keep their digits when
    # m is large and sigma small)
    r = y - m
    w = v / (v + sigma**2)
    h = np.sqrt(v * sigma**2 / (v + sigma**2))

    # log N(w r + t; 0, V) + log N((1 - w) r - t; 0, sigma^2) = top + diff(t), with the
    # differences of squares factored (x^2 - x0^2 = (x - x0)(x + x0)): no cancellation
    a0, b0 = w * r / sd, (1 - w) * r / sigma
    top = -0.5 * (a0 * a0 + b0 * b0) - np.log(sd * sigma) - np.log(2 * np.pi)

    def diff(t):
        da, db = t / sd, -t / sigma
        return -0.5 * (da * (2 * a0 + da) + db * (2 * b0 + db))

    val = sum(
        integrate.quad(lambda t: np.exp(diff(t)), lo, hi, epsabs=0.0, epsrel=1e-12)[0]
        for lo, hi in ((-40 * h, 0.0), (0.0, 40 * h))
    )
    return top + np.log(val)


_ROWS = {
    "exp": [
        (n, lam, a, b, s)
        for n in (1.0, 300.0, 1e6)
        for lam, (a, b) in ((1e-3, (0.0, 8.0)), (0.5, (0.0, 8.0)), (30.0, (2.0, 50.0)))
        for s in (1e-3, 3.0, 1e4)
    ],
    "pois": [
        (n, mu, a, b, s)
        for n in (1.0, 300.0, 1e6)
        for mu, (a, b) in ((3.0, (0.0, 10.0)), (3.0, (2.0, 2.0)), (400.0, (5.0, 60.0)))
        for s in (1e-3, 3.0, 1e4)
    ],
}


def _grid(kind):
    rows = []
    for n, th, a, b, s in _ROWS[kind]:
        m, v = _clt(kind, n, th, a, b)
        sd = np.sqrt(v + s**2)
        for y in (m, m + 0.7 * sd, m - 3 * sd, m + 12 * sd, -5.0):
            rows.append((y, n, th, a, b, s))
    return [np.array(c, float) for c in zip(*rows, strict=True)]


@pytest.mark.parametrize("kind", ["exp", "pois"])
@pytest.mark.heavy
def test_truncated_gaussian_logp_matches_quadrature(kind):
    y, n, th, a, b, s = _grid(kind)
    lp, g_th, g_s = _truncated_fn(kind)(y, n, th, a, b, s)
    assert np.all(np.isfinite(lp)) and np.all(np.isfinite(g_th)) and np.all(np.isfinite(g_s))
    for i in range(len(y)):
        ref = _reference(kind, y[i], n[i], th[i], a[i], b[i], s[i])
        # reference by 60-digit mpmath / dense convolution; ours through erfcx/log1p (few ulp times
        # condition <= ~1e2): 1e-9 relative is > 1e4 of margin
        assert abs(lp[i] - ref) <= 1e-9 * max(1.0, abs(ref)), (kind, y[i], n[i], th[i], s[i])


@pytest.mark.parametrize("kind", ["exp", "pois"])
def test_truncated_gaussian_gradients_match_finite_differences(kind):
    f = _truncated_fn(kind)
    rows = {
        "exp": [(500.0, 0.5, 0.0, 8.0, 3.0, 700.0), (50.0, 2.0, 1.0, 6.0, 0.5, 20.0)],
        "pois": [(300.0, 3.0, 0.0, 10.0, 3.0, 880.0), (40.0, 4.0, 2.0, 6.0, 20.0, 200.0)],
    }[kind]
    for n, th, a, b, s, y in rows:
        _, g_th, g_s = f([y], [n], [th], [a], [b], [s])
        args = [[v] for v in (y, n, th, a, b, s)]

        def at(i, x, args=args):
            return f(*args[:i], [x], *args[i + 1 :])[0][0]

        fd_th = _fd(lambda x, at=at: at(2, x), th, th * 1e-4)
        fd_s = _fd(lambda x, at=at: at(5, x), s, s * 1e-4)
        # abs floor for derivatives near 0: central differences at step 1e-4 relative carry ~1e-10
        # of rounding and truncation
        assert g_th[0] == pytest.approx(fd_th, rel=1e-6, abs=1e-9), (kind, n, th)
        # abs floor for derivatives near 0: central differences at step 1e-4 relative carry ~1e-10
        # of rounding and truncation
        assert g_s[0] == pytest.approx(fd_s, rel=1e-6, abs=1e-9), (kind, n, s)


@pytest.mark.parametrize(
    "kind,params",
    [
        ("exp", dict(n=100, theta=0.5, lower=0.0, upper=8.0)),
        ("pois", dict(n=100, theta=3.0, lower=1, upper=6)),
    ],
)
@pytest.mark.heavy
def test_truncated_gaussian_draws_have_the_exact_moments(kind, params):
    """Draws run the mechanism (records, truncation, sum, + N(0, sigma^2)); their mean and
    variance are exact in the model (the CLT only approximates the shape)."""
    sigma, draws = 7.0, 10_000
    p = dict(params)
    th = p.pop("theta")
    rv = _CLS[kind].dist(p["n"], th, p["lower"], p["upper"], noise=noise.Gaussian(sigma))
    x = pm.draw(rv, draws, random_seed=17)
    m, v = _clt(kind, p["n"], th, p["lower"], p["upper"])
    var = v + sigma**2
    assert abs(x.mean() - m) <= 4 * np.sqrt(var / draws), (x.mean(), m)
    # var of the sample variance ~ 2 var^2 / draws (near-normal draws)
    assert abs(x.var() - var) <= 4 * np.sqrt(2 / draws) * var, (x.var(), var)
    # and the noise is Gaussian: the release minus its model mean is normal
    assert stats.kstest((x - m) / np.sqrt(var), "norm").pvalue > 1e-3


@pytest.mark.parametrize("kind", ["exp", "pois"])
@pytest.mark.heavy
def test_truncated_laplace_spec_is_the_epsilon_path(kind):
    a, b = (0.0, 8.0) if kind == "exp" else (0.0, 10.0)
    th = 0.5 if kind == "exp" else 3.0
    y = np.array([-20.0, 300.0, 650.0, 900.0])
    eps = 0.7
    ref = _truncated_fn(kind, "epsilon")(y, *(np.full(4, v) for v in (300.0, th, a, b, eps)))[0]
    rv = _CLS[kind].dist(300.0, th, a, b, noise=noise.Laplace.from_epsilon(eps, b))
    assert isinstance(rv.owner.op, _CLS[kind].rv_type)
    yv = pt.dvector("y")
    got = pytensor.function([yv], pm.logp(rv, yv))(y)
    # same op on the same machine; the spec's epsilon b / (b / eps) is within 2 ulp of eps and
    # log p is O(1)-conditioned in it: a few ulp, 1e-13 = 450 ulp
    np.testing.assert_allclose(got, ref, rtol=1e-13)


def test_truncated_gaussian_in_a_model():
    rng = np.random.default_rng(4)
    spec = noise.Gaussian.from_rho(0.5, sensitivity=8.0)  # sigma = 8
    x = rng.exponential(2.0, size=(3, 400))
    released = np.where(x <= 8.0, x, 0.0).sum(-1)
    released = spec.release(released, rng)
    with pm.Model(coords={"site": list("abc")}) as model:
        lam = pm.Gamma("lam", 2.0, 4.0)
        pmd.LaplaceNoisyTruncatedExponential(
            "y", n=400, lam=lam, lower=0.0, upper=8.0, noise=spec, observed=released, dims="site"
        )
    f = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars)
    lp, g = f(model.initial_point())
    assert np.isfinite(lp) and np.all(np.isfinite(g))
    with model:
        prior = pm.sample_prior_predictive(20, random_seed=1)
    assert prior.prior_predictive["y"].dims[-1] == "site"


def _multinomial_fn():
    if "mn" not in _FNS:
        y, p = pt.dmatrix("y"), pt.dmatrix("p")
        n, s = pt.dvector("n"), pt.dvector("s")
        lp = pm.logp(pmd.distributions.expfam.GaussianNoisyMultinomial.dist(n, p, s), y)
        _FNS["mn"] = pytensor.function([y, n, p, s], [lp, *pytensor.grad(lp.sum(), [p, s])])
    return _FNS["mn"]


def test_multinomial_gaussian_matches_dense_normal_and_gradients():
    f = _multinomial_fn()
    rng = np.random.default_rng(0)
    for k in (2, 3, 6):
        for n in (1.0, 50.0, 1e5):
            for sigma in (1e-2, 3.0, 1e3):
                if n / sigma**2 >= 1e9:  # condition number beyond what the dense reference resolves
                    continue
                p = rng.dirichlet(np.ones(k), size=3)
                cov = [n * (np.diag(pi) - np.outer(pi, pi)) + sigma**2 * np.eye(k) for pi in p]
                y = np.array(
                    [rng.multivariate_normal(n * pi, c) for pi, c in zip(p, cov, strict=True)]
                )
                lp, gp, gs = f(y, np.full(3, n), p, np.full(3, sigma))
                ref = [
                    stats.multivariate_normal(n * pi, c).logpdf(yi)
                    for pi, c, yi in zip(p, cov, y, strict=True)
                ]
                # against scipy's multivariate_normal (Cholesky of k-1 <= 4 dims, cond <= 1e3 at
                # these n, sigma): m^2 u cond ~ 1e-12, 1e-9 relative leaves margin
                np.testing.assert_allclose(lp, ref, rtol=1e-9, err_msg=str((k, n, sigma)))
                assert np.all(np.isfinite(gp)) and np.all(np.isfinite(gs))
    # gradients against finite differences (p moved along the simplex, and sigma)
    p = np.array([[0.5, 0.3, 0.2]])
    y = np.array([[105.0, 52.0, 43.0]])
    lp, gp, gs = f(y, [200.0], p, [4.0])
    d = np.array([[1.0, -1.0, 0.0]])
    fd = _fd(lambda t: f(y, [200.0], p + t * d, [4.0])[0][0], 0.0, 1e-5)
    assert (gp * d).sum() == pytest.approx(fd, rel=1e-6)
    fd_s = _fd(lambda t: f(y, [200.0], p, [t])[0][0], 4.0, 1e-4)
    assert gs[0] == pytest.approx(fd_s, rel=1e-6)


@pytest.mark.heavy
def test_multinomial_gaussian_draws_and_helper():
    p, n, sigma = np.array([0.5, 0.3, 0.2]), 200, 4.0
    rv = pmd.LaplaceNoisyMultinomial.dist(n, p, noise=noise.Gaussian(sigma))
    x = pm.draw(rv, 20_000, random_seed=3)
    cov = n * (np.diag(p) - np.outer(p, p)) + sigma**2 * np.eye(3)
    se = np.sqrt(np.diag(cov) / 20_000)
    assert np.all(np.abs(x.mean(0) - n * p) <= 4 * se)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06 * np.max(cov))
    # the counts sum to n: the total carries only the noise, variance 3 sigma^2
    assert x.sum(-1).var() == pytest.approx(3 * sigma**2, rel=0.05)
    with pm.Model(coords={"r": ["a", "b"], "c": list("xyz")}) as model:
        q = pm.Dirichlet("q", np.ones(3), dims="c")
        pmd.LaplaceNoisyMultinomial(
            "y", n=np.array([200, 300]), p=q, noise=noise.Gaussian(sigma),
            observed=np.array([[101.0, 58.0, 40.5], [149.0, 92.0, 61.0]]), dims=("r", "c"),
        )  # fmt: skip
    assert [v.name for v in model.free_RVs] == ["q"]  # no latent
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    # a Laplace spec takes the Laplace path (with its latent)
    with pm.Model() as model:
        q = pm.Dirichlet("q", np.ones(3))
        pmd.LaplaceNoisyMultinomial(
            "y", n=200, p=q, noise=noise.Laplace(2.0), observed=np.array([100.0, 60.0, 40.0])
        )
    assert {v.name for v in model.free_RVs} == {"q", "y_noise_w"}


@pytest.mark.parametrize(
    "spec", [noise.DiscreteLaplace(2.0), noise.RoundedLaplace(2.0), noise.DiscreteGaussian(2.0)]
)
def test_integer_noise_kinds_are_refused(spec):
    name = type(spec).__name__
    with pytest.raises(ValueError, match=f"{name} noise is not supported.*NoisyBinomial"):
        pmd.LaplaceNoisyTruncatedPoisson.dist(100, 3.0, 0, 10, noise=spec)
    with pytest.raises(ValueError, match=f"{name} noise is not supported"):
        pmd.LaplaceNoisyTruncatedExponential.dist(100, 0.5, 0.0, 8.0, noise=spec)
    with pm.Model(), pytest.raises(ValueError, match=f"{name} noise is not supported"):
        pmd.LaplaceNoisyMultinomial("y", 100, np.array([0.5, 0.5]), noise=spec, shape=(2,))


def test_epsilon_and_noise_refusals():
    cls = pmd.LaplaceNoisyTruncatedExponential
    g = noise.Gaussian(2.0)
    with pytest.raises(TypeError, match="either `epsilon` or `noise`, not both"):
        cls.dist(100, 0.5, 0.0, 8.0, 1.0, noise=g)
    with pytest.raises(TypeError, match=r"give `epsilon`.*or `noise`"):
        cls.dist(100, 0.5, 0.0, 8.0)
    with pytest.raises(TypeError, match="`sensitivity` goes with `epsilon`"):
        cls.dist(100, 0.5, 0.0, 8.0, sensitivity=8.0, noise=g)
    with pytest.raises(TypeError, match="noise spec"):
        cls.dist(100, 0.5, 0.0, 8.0, noise=2.0)
    with pytest.raises(ValueError, match="`lam`"):  # the usual validation still runs
        cls.dist(100, -0.5, 0.0, 8.0, noise=g)
    with pytest.raises(ValueError, match="`lower`"):
        pmd.LaplaceNoisyTruncatedPoisson.dist(100, 3.0, 1.5, 8, noise=g)
    p = np.array([0.5, 0.5])
    with pm.Model():
        with pytest.raises(TypeError, match="not both"):
            pmd.LaplaceNoisyMultinomial("y", 10, p, 1.0, noise=g, shape=(2,))
        with pytest.raises(ValueError, match="no latent"):
            pmd.LaplaceNoisyMultinomial("y", 10, p, noise=g, latent="counts", shape=(2,))
        with pytest.raises(TypeError, match="`sensitivity` goes with"):
            pmd.LaplaceNoisyMultinomial("y", 10, p, sensitivity=2.0, noise=g, shape=(2,))
    with pytest.raises(NotImplementedError, match=r"noise=noise\.Gaussian"):
        pmd.LaplaceNoisyMultinomial.dist(10, p, noise=noise.Laplace(1.0))
    with pytest.raises(TypeError, match="not both"):
        pmd.LaplaceNoisyMultinomial.dist(10, p, 1.0, noise=g)
