"""NoisyBinomial / NoisyPoisson and the noise specs: exactness, gradients, draws, validation.

References (``tests/noisy_counts_reference.py``) sum the latent count over its whole support
(or, for n = 1e8, over a generous window located by a coarse scan) with SciPy's pmfs and the
noise pmfs written from their definitions.  The default run checks every noise kind x
binomial/Poisson x clamp (none, lower only, both) on a grid with n up to 1e5, p from 1e-9 to
1 - 1e-9, noise 0.05 and 3 and releases 40 sd deep in both tails and at the bounds; the
``slow`` grid adds noise 1e4 and n = 1e8 (one compile per noise level).
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from noisy_counts_reference import count_logcdf, count_logp, noise_logcdf, noise_logpmf
from pytensor.scan.op import Scan
from scipy import stats

import pymc_dpnoise as pmd
from pymc_dpnoise import noise
from pymc_dpnoise.math import noisy_counts as ncm

#: the package's noise kinds by label (the labels key the references and the test ids)
SPEC = {c.kind: c for c in noise.BUILTIN}
KINDS = tuple(SPEC)
DISCRETE = {k for k, c in SPEC.items() if c.discrete}

# --------------------------------------------------------------------------------------------
# The grid
# --------------------------------------------------------------------------------------------


def _sd(kind, prm):
    return math.sqrt(float(SPEC[kind](prm).variance))


def _rows(family, kind, params_list, noise_levels, clamps=True):
    """(y, count params, noise param, lower, upper) rows reaching the extremes."""
    rows = []
    for cp in params_list:
        n = cp[0] if family == "binomial" else None
        mean = cp[0] * cp[1] if family == "binomial" else cp[0]
        var = mean * (1 - cp[1]) if family == "binomial" else mean
        for prm in noise_levels:
            sd = math.sqrt(var + _sd(kind, prm) ** 2)
            ys = [mean - 40 * sd, mean - 3 * sd, mean, mean + 0.5, mean + 3 * sd, mean + 40 * sd]
            if kind in DISCRETE:
                ys = [float(np.round(y)) for y in ys]
            for y in ys:
                rows.append((y, cp, prm, -np.inf, np.inf))
            top = n if n is not None else float(np.round(mean + 3 * sd))
            top = max(top, 1.0)
            inner = [0.0, 1.0, top - 1.0, top, top + 1.0, -1.0, float(np.round(mean))]
            for lo, hi in ((0.0, np.inf), (0.0, top)) if clamps else ():
                for y in inner:
                    rows.append((y, cp, prm, lo, hi))
    return rows


def _reference(family, kind, row):
    y, cp, prm, lo, hi = row
    lo_ = None if np.isneginf(lo) else lo
    hi_ = None if np.isposinf(hi) else hi
    return count_logp(family, cp, kind, prm, y, lo_, hi_)


_FUNCS = {}


def _compiled(family, kind, noise_values):
    """One logp + d/d(logit p or log mu) function per (family, kind, noise values)."""
    key = (family, kind, tuple(noise_values))
    if key not in _FUNCS:
        y, c1, lo, hi = (pt.dvector(x) for x in ("y", "c1", "lo", "hi"))
        prm = pt.as_tensor_variable(np.asarray(noise_values, dtype="float64"))
        t = pt.dvector("t")  # p / mu, as given (a logit round trip would move 1 - p by 1e-7)
        if family == "binomial":
            out = ncm.noisy_binomial_logp(y, c1, t, SPEC[kind], prm, lo, hi)
        else:
            out = ncm.noisy_poisson_logp(y, t, SPEC[kind], prm, lo, hi)
        grad = pt.grad(out.sum(), t)
        _FUNCS[key] = pytensor.function([y, c1, t, lo, hi], [out, grad], on_unused_input="ignore")
    return _FUNCS[key]


def _evaluate(family, kind, rows):
    prm = [r[2] for r in rows]
    f = _compiled(family, kind, prm)
    y = np.array([r[0] for r in rows])
    c1 = np.array([r[1][0] for r in rows], dtype="float64")
    t = np.array([r[1][-1] for r in rows], dtype="float64")
    lo = np.array([r[3] for r in rows])
    hi = np.array([r[4] for r in rows])
    return f, (y, c1, t, lo, hi)


BINOMIAL_DEFAULT = [(n, p) for n in (0.0, 1.0, 7.0, 300.0, 1e5) for p in (1e-9, 0.3, 1 - 1e-9)]
POISSON_DEFAULT = [(mu,) for mu in (1e-6, 0.05, 3.0, 250.0, 2e4)]
NOISE_DEFAULT = (0.05, 3.0)


#: Against the brute-force references: the package's error is a few ulp of the largest term
#: that cancels in log p (lgamma(n + 1) <= 1.1e6 at n = 1e5, ulp 2.3e-10, each libm call
#: within a few ulp on glibc, ARM and NumPy's SIMD loops), under atol = 1e-8; rtol = 1e-13
#: (450 ulp) covers |log p| > 1e5 where the terms do not cancel (audit: worst 5e-14).
def _check_grid(family, kind, params_list, noise_levels, atol=1e-8, rtol=1e-13, clamps=True):
    rows = _rows(family, kind, params_list, noise_levels, clamps)
    f, args = _evaluate(family, kind, rows)
    got, grad = f(*args)
    ref = np.array([_reference(family, kind, r) for r in rows])
    assert np.all(np.isneginf(got) == np.isneginf(ref)), [
        (r, g, e)
        for r, g, e in zip(rows, got, ref, strict=True)
        if np.isneginf(g) != np.isneginf(e)
    ][:5]
    fin = np.isfinite(ref)
    err = np.abs(got[fin] - ref[fin])
    tol = atol + rtol * np.abs(ref[fin])
    bad = np.flatnonzero(err > tol)
    assert bad.size == 0, [
        (rows[i], got[fin][j], ref[fin][j])
        for j, i in zip(bad, np.flatnonzero(fin)[bad], strict=True)
    ][:5]
    assert np.all(np.isfinite(grad)), "gradient not finite"
    return rows, f, args, got, grad


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_logp_matches_brute_force(family, kind):
    params = BINOMIAL_DEFAULT if family == "binomial" else POISSON_DEFAULT
    _check_grid_and_gradient(family, kind, params, NOISE_DEFAULT)


#: noise 500: the Gaussian kinds' static window would exceed 2,500 terms, so the pmf / pdf is
#: the hybrid sum (ncm._hybrid_sum): the exact window where the count is near an end of its
#: support (Poisson mean 3; far releases), trapezoid nodes elsewhere (mean 1e5, n = 1e5)
HYBRID_BINOMIAL = [(1e5, 1e-4), (1e5, 0.3), (1e5, 1 - 1e-9)]
HYBRID_POISSON = [(3.0,), (2e3,), (1e5,)]


@pytest.mark.parametrize("kind", ["gaussian", "discrete_gaussian"])
@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_hybrid_sum_matches_brute_force(family, kind):
    """Clamped binomial rows too: its clamp atoms at n = 1e5 are the hybrid CDF sums
    (ncm._hybrid_cdf_sum)."""
    assert ncm.window_half_width(500.0, 4.0 / 1e5) > ncm.HYBRID_MIN_HALF
    params = HYBRID_BINOMIAL if family == "binomial" else HYBRID_POISSON
    _check_grid_and_gradient(family, kind, params, (500.0,), clamps=family == "binomial")


@pytest.mark.heavy  # the brute-force discrete Gaussian CDFs at n = 1e5: ~2 s per row
@pytest.mark.parametrize("kind", ["gaussian", "discrete_gaussian"])
def test_hybrid_log_cdfs_match_brute_force(kind):
    """Binomial, n = 1e5, noise 500: log P(Y <= m) and log P(Y > m), each a sum of positive
    terms by ncm._hybrid_cdf_sum, against brute force from 40 sd below to 40 sd above the
    mean and at the support's ends, for p from 1e-9 (count at the end: the exact window) to
    1/2 (count wide: the trapezoidal nodes); both branches are taken on this grid."""
    n, sigma = 1e5, 500.0
    fam = ncm._Binomial(pt.as_tensor(n), pt.as_tensor(0.0), n)
    assert ncm._use_hybrid_cdfs(fam, pt.as_tensor(sigma))
    rows = []
    for q in (1e-9, 1e-6, 0.01, 0.3, 0.5, 1 - 1e-9):
        mean, sd = n * q, math.sqrt(n * q * (1 - q) + sigma**2)
        rows += [(float(np.floor(mean + k * sd)), q) for k in (-40, -10, -3, -1, 0, 1, 3, 10, 40)]
        rows += [(v, q) for v in (-1.0, 0.0, 0.5, 1.0, n - 1, n, n + 1)]
    y, p = pt.dvector("y"), pt.dvector("p")
    outs = ncm.noisy_binomial_log_cdfs(y, n, p, SPEC[kind], sigma)
    grad = pt.grad(sum(o.sum() for o in outs), p)
    f = pytensor.function([y, p], [*outs, grad])
    yv, pv = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    lc, lcc, g = f(yv, pv)
    ref = np.array([count_logcdf("binomial", (n, q), kind, sigma, v) for v, q in rows])
    # as _check_grid: a few ulp of the largest cancelling term under atol, 450 ulp relative
    np.testing.assert_allclose(lc, ref[:, 0], rtol=1e-13, atol=1e-8)
    np.testing.assert_allclose(lcc, ref[:, 1], rtol=1e-13, atol=1e-8)
    assert np.all(np.isfinite(g))
    # the gradient w.r.t. p against central differences where p is inside (0, 1)
    sel = (pv > 1e-3) & (pv < 0.999) & np.isfinite(lc) & np.isfinite(lcc)
    hh = 1e-6 * pv
    up, dn = f(yv, pv + hh)[:2], f(yv, pv - hh)[:2]
    fd = ((up[0] + up[1]) - (dn[0] + dn[1])) / (2 * hh)
    scale = 1e-4 * (1 + (np.abs(lc) + np.abs(lcc)) / pv)
    assert np.all(np.abs(g[sel] - fd[sel]) <= 1e-5 * np.abs(fd[sel]) + scale[sel])


@pytest.mark.backend  # compiled natively: ~2 min per family in the Python-VM test mode
@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_discrete_gaussian_clamp_atoms_from_noise_tails(family):
    """sigma >= DG_SPLIT_MIN_SIGMA: the clamp atoms split over the count's value with the
    O(1) discrete Gaussian tails (below it they sum over the noise value: the default grid)."""
    sigma = 60.0
    assert sigma >= ncm.DG_SPLIT_MIN_SIGMA
    params = [(300.0, 0.3), (300.0, 1e-9)] if family == "binomial" else [(50.0,)]
    _check_grid_and_gradient(family, "discrete_gaussian", params, (sigma,))


def _check_grid_and_gradient(family, kind, params, noise_levels, clamps=True):
    _, f, args, got, grad = _check_grid(family, kind, params, noise_levels, clamps=clamps)
    # gradient w.r.t. p / mu against central differences (relative step), where the value is
    # finite and p is away from 0 and 1 (there a step of 1e-6 p leaves the parameter space)
    y, c1, t, lo, hi = args
    sel = np.isfinite(got) & (t > 1e-3) & ((t < 0.999) | (family == "poisson"))
    h = 1e-6 * t
    up = f(y, c1, t + h, lo, hi)[0]
    dn = f(y, c1, t - h, lo, hi)[0]
    with np.errstate(invalid="ignore"):  # -inf rows, not selected
        fd = (up - dn) / (2 * h)
    scale = 1e-4 * (1 + np.abs(got) / t)  # FD rounding: ~1e-10 |logp| / h
    assert np.all(np.abs(grad[sel] - fd[sel]) <= 1e-5 * np.abs(fd[sel]) + scale[sel]), np.max(
        np.abs(grad[sel] - fd[sel]) / (1e-5 * np.abs(fd[sel]) + scale[sel])
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_logp_matches_brute_force_extreme(family, kind):
    """Noise 1e4 and n = 1e8 (and mu = 1e7): the cost of one release depends on sigma only."""
    params = (
        [(1e8, p) for p in (1e-9, 0.3, 1 - 1e-9)] + [(3.0, 0.5)]
        if family == "binomial"
        else [(1e7,), (2.0,)]
    )
    _check_grid(family, kind, params, (1e4,))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["laplace", "discrete_laplace", "rounded_laplace"])
def test_log_cdfs_match_brute_force_extreme(kind):
    """Binomial Laplace kinds at n = 1e8, noise 1e4: log CDF and log SF (the clamp atoms' and
    censoring's building blocks) far in both tails, where the tilted halves' ratio form lost
    up to 2.3e-7 (issue 21)."""
    n, b = 1e8, 1e4
    rows = []
    for p in (1e-9, 0.3, 1 - 1e-9):
        mean, sd = n * p, math.sqrt(n * p * (1 - p) + _sd(kind, b) ** 2)
        ys = [mean - 40 * sd, mean - 3 * sd, mean, mean + 0.5, mean + 3 * sd, mean + 40 * sd]
        ys += [-1.0, 0.0, 0.5, 1.0, n - 1.0, n - 0.5, n, n + 1.0]
        if kind in DISCRETE:
            ys = [float(np.floor(y)) for y in ys]
        rows += [(y, p) for y in ys]
    y, p = pt.dvector("y"), pt.dvector("p")
    outs = ncm.noisy_binomial_log_cdfs(y, n, p, SPEC[kind], b)
    grad = pt.grad(sum(o.sum() for o in outs), p)
    f = pytensor.function([y, p], [*outs, grad])
    lc, lcc, g = f(np.array([r[0] for r in rows]), np.array([r[1] for r in rows]))
    ref = np.array([count_logcdf("binomial", (n, q), kind, b, v) for v, q in rows])
    # as _check_grid: a few ulp of the largest cancelling term under atol, 450 ulp relative
    np.testing.assert_allclose(lc, ref[:, 0], rtol=1e-13, atol=1e-8)
    np.testing.assert_allclose(lcc, ref[:, 1], rtol=1e-13, atol=1e-8)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("kind", KINDS)
def test_log_cdfs_match_brute_force(kind):
    y = pt.dvector("y")
    prm = 3.0 if kind not in ("laplace", "discrete_laplace", "rounded_laplace") else 2.0
    lc = ncm.noisy_binomial_log_cdfs(y, 60.0, 0.2, SPEC[kind], prm)
    lcp = ncm.noisy_poisson_log_cdfs(y, 9.0, SPEC[kind], prm)
    f = pytensor.function([y], [*lc, *lcp])
    vals = np.array([-150.0, -8.0, 0.0, 3.0, 12.0, 12.5, 20.0, 60.0, 75.0, 250.0])
    b_lo, b_hi, p_lo, p_hi = f(vals)
    for got_lo, got_hi, fam, cp in (
        (b_lo, b_hi, "binomial", (60, 0.2)),
        (p_lo, p_hi, "poisson", (9.0,)),
    ):
        ref = np.array([count_logcdf(fam, cp, kind, prm, v) for v in vals])
        # brute-force log-space sums over every count and noise value (exact terms, logsumexp) vs
        # ours through libm: 1e-12 relative is ~9000 ulp; atol for CDFs near log 1 = 0
        np.testing.assert_allclose(got_lo, ref[:, 0], rtol=1e-12, atol=1e-10)
        # brute-force log-space sums over every count and noise value (exact terms, logsumexp) vs
        # ours through libm: 1e-12 relative is ~9000 ulp; atol for CDFs near log 1 = 0
        np.testing.assert_allclose(got_hi, ref[:, 1], rtol=1e-12, atol=1e-10)


#: relative tolerance of the degenerate counts against the noise's own log pmf / pdf.  Both
#: sides are a handful of correctly rounded operations and libm calls (exp, log, log1p: at most
#: 2 ulp in glibc and NumPy's SIMD loops, 4.4e-16), except where the value is an exponential of
#: a large argument: the discrete Gaussian at sigma = 0.05 and the value 0 is
#: -log Z = -log1p(2 e^{-1/(2 sigma^2)}) ~ -2 e^{-200}, whose relative error is the absolute
#: error of the exponent 200, and the two sides round it differently (-(k/sigma)^2/2 against
#: -k^2/(2 sigma^2), each operation correctly rounded, or reordered by PyTensor's rewrites):
#: up to 4 roundings of one ulp of 200 (2^-45 = 2.8e-14: the two orders give -200 and
#: -199.99999999999997, and log Z differing by 2.84e-14 relative, the 2.8e-14 an AMD EPYC run
#: failed the former rtol=1e-14 by).  Hence 4 ulp(200) plus 4 eps for the libm calls.
DEGENERATE_RTOL = 4 * float(np.spacing(200.0)) + 4 * float(np.finfo(float).eps)


def test_degenerate_counts_are_the_noise_alone():
    """p = 0, p = 1 and mu = 0 are exact (issue 22: logit p used to be clipped at +-700)."""
    y = pt.dvector("y")
    for kind, prm in (("laplace", 1e-6), ("discrete_gaussian", 0.05), ("gaussian", 0.05)):
        outs = [
            ncm.noisy_binomial_logp(y, 10.0, 0.0, SPEC[kind], prm),
            ncm.noisy_binomial_logp(y, 10.0, 1.0, SPEC[kind], prm),
            ncm.noisy_poisson_logp(y, 0.0, SPEC[kind], prm),
        ]
        f = pytensor.function([y], outs)
        vals = np.array([0.0, 1.0, 5.0, 10.0])
        p0, p1, m0 = f(vals)
        np.testing.assert_allclose(p0, noise_logpmf(kind, vals, prm), rtol=DEGENERATE_RTOL)
        np.testing.assert_allclose(p1, noise_logpmf(kind, vals - 10.0, prm), rtol=DEGENERATE_RTOL)
        np.testing.assert_allclose(m0, noise_logpmf(kind, vals, prm), rtol=DEGENERATE_RTOL)


# --------------------------------------------------------------------------------------------
# Noise specs
# --------------------------------------------------------------------------------------------


def _dg_tail_reference(j, sigma):
    """log sum_{i <= j} exp(-i^2 / 2 sigma^2) term by term in long double, until negligible."""
    s = np.longdouble(sigma)
    aj = np.longdouble(-j)
    m = int(min(60 * sigma + 200, 60 * sigma * sigma / max(-j, 1) + 400))
    i = np.arange(m, dtype=np.longdouble)
    return float(
        -(aj**2) / (2 * s * s) + np.log(np.sum(np.exp(-(2 * aj * i + i * i) / (2 * s * s))))
    )


def test_discrete_gaussian_tail_is_exact_and_concave():
    """log_dg_tail (direct sums / Euler-Maclaurin) against long-double sums over every term,
    sigma 0.05 to 1e4, j from -1 to -1e9; and the curvature the CDF windows rely on: second
    differences of log T(j) at most -0.63 / sigma^2."""
    from pymc_dpnoise.math.noise import log_dg_tail

    j = pt.dvector("j")
    js = -np.unique(np.round(np.geomspace(1.0, 1e9, 120)))
    for sigma in (0.05, 1.0, 7.9, 8.0, 64.0, 1e3, 1e4):
        f = pytensor.function([j], log_dg_tail(j, pt.constant(np.float64(sigma)), sigma))
        got = f(js)
        ref = np.array([_dg_tail_reference(v, sigma) for v in js])
        # 4e-15 (18 ulp) on any IEEE libm: log T(j) is -j^2/(2 sigma^2) (two correctly
        # rounded operations) plus the log of a Horner sum that starts at 1 (so an exp's error,
        # at most 2 ulp, moves it by that much relative to its term, not to the sum), or the
        # Euler-Maclaurin form: log sigma sqrt(2 pi) + log Phi(u) + log1p(small), each within
        # a few ulp (erfc / erfcx at most 5 ulp in glibc and SciPy) of a result of magnitude >= 1
        np.testing.assert_allclose(got, ref, rtol=4e-15, atol=4e-15, err_msg=f"sigma={sigma}")
        near = -np.arange(1.0, 40 * sigma + 4)
        t = f(near)
        second = t[:-2] - 2 * t[1:-1] + t[2:]
        assert second.max() * sigma**2 <= -0.63, (sigma, second.max() * sigma**2)


@pytest.mark.parametrize("kind", KINDS)
def test_noise_logp_and_logcdf(kind):
    x = pt.dvector("x")
    for prm in (0.05, 0.7, 3.0, 250.0):
        spec = SPEC[kind](prm)
        f = pytensor.function([x], [spec.logp(x), spec.logcdf(x)])
        vals = np.array([-40 * prm - 3, -3.0, -1.0, 0.0, 1.0, 2.0, 5 * prm, 40 * prm + 3])
        if kind in DISCRETE:
            vals = np.round(vals)
        lp, lc = f(vals)
        # the noise's own pmf / cdf by an independent NumPy formula (tests/noise_pmfs.py): a few
        # ulp of log/log1p/exp each, 1e-12 is ~9000 ulp
        np.testing.assert_allclose(lp, noise_logpmf(kind, vals, prm), rtol=1e-12, atol=1e-12)
        # the noise's own pmf / cdf by an independent NumPy formula (tests/noise_pmfs.py): a few
        # ulp of log/log1p/exp each, 1e-12 is ~9000 ulp
        np.testing.assert_allclose(lc, noise_logcdf(kind, vals, prm), rtol=1e-12, atol=1e-12)


def _chi2_pvalue(draws, logpmf, lo=None, hi=None):
    """Chi-square of integer draws against a pmf over the observed range (tails pooled).
    The distributions' draws are integers held in float64 (the NumPy samplers' are int64)."""
    draws = np.asarray(draws)
    assert np.all(draws == np.round(draws))
    draws = draws.astype(np.int64)
    k = np.arange(draws.min(), draws.max() + 1)
    expected = np.exp(logpmf(k)) * draws.size
    observed = np.bincount(draws - k[0], minlength=k.size)
    # pool into bins with at least 20 expected counts
    edges = [0]
    acc = 0.0
    for i, e in enumerate(expected):
        acc += e
        if acc >= 20:
            edges.append(i + 1)
            acc = 0.0
    edges[-1] = k.size
    obs = np.add.reduceat(observed, edges[:-1])
    exp = np.add.reduceat(expected, edges[:-1])
    exp *= obs.sum() / exp.sum()  # mass outside the observed range (< 1e-5 here)
    return stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize("kind", ["discrete_laplace", "rounded_laplace", "discrete_gaussian"])
@pytest.mark.parametrize("prm", [0.3, 2.5, 40.0])
def test_noise_sampler_chi_square(kind, prm):
    draws = SPEC[kind](prm).sample(100_000, rng=np.random.default_rng(7))
    assert draws.dtype == np.int64
    assert _chi2_pvalue(draws, lambda k: noise_logpmf(kind, k, prm)) > 1e-4
    # a 10% larger parameter is rejected: the check has power
    assert _chi2_pvalue(draws, lambda k: noise_logpmf(kind, k, prm * 1.1)) < 1e-4


def test_discrete_gaussian_proposals_bound():
    """The symbolic sampler's DG_PROPOSALS: CKS acceptance >= 0.44 for every sigma, so a draw
    with no accepted proposal has probability < 0.56^96 < 1e-24."""
    from pymc_dpnoise.noise import DG_PROPOSALS

    worst = 1.0
    for sigma in np.geomspace(1e-3, 1e4, 200):
        t = math.floor(sigma) + 1
        a = math.exp(-1 / t)
        kmax = int(60 * t) + 50
        k = np.arange(-kmax, kmax + 1)
        prop = (1 - a) / (1 + a) * a ** np.abs(k)
        acc = np.exp(-((np.abs(k) - sigma**2 / t) ** 2) / (2 * sigma**2))
        worst = min(worst, float(np.sum(prop * acc)))
    assert worst > 0.44
    # not a rounding tolerance: the design bound on a draw failing every proposal (module docstring
    # of pymc_dpnoise.noise)
    assert (1 - worst) ** DG_PROPOSALS < 1e-24


def test_spec_constructors_and_repr():
    assert repr(noise.DiscreteGaussian.from_rho(0.5)) == "DiscreteGaussian(sigma=1.0)"
    assert noise.DiscreteGaussian(2.0).rho(1.0) == 0.125
    assert noise.DiscreteLaplace.from_epsilon(0.5, 2.0).scale == 4.0
    assert noise.Gaussian.from_rho(2.0, 2.0).sigma == 1.0
    assert noise.from_tumult("DISCRETE_GAUSSIAN", 9.0) == noise.DiscreteGaussian(3.0)
    assert noise.from_tumult("LAPLACE", 2.0, integer=False) == noise.Laplace(2.0)
    assert noise.from_python_dp(0.25, 2, 1) == noise.RoundedLaplace(8.0)
    np.testing.assert_allclose(noise.from_census([4.0, 9.0]).sigma, [2.0, 3.0])
    g = noise.Gaussian.from_epsilon_delta(1.0, 1e-6)
    assert 3.0 < g.sigma < 5.0
    # variances against direct sums
    for kind in DISCRETE:
        spec = SPEC[kind](1.7)
        k = np.arange(-400, 401)
        np.testing.assert_allclose(
            # a variance by a direct sum of k^2 pmf over the support (terms of one sign, a few ulp
            # each): 1e-10 relative
            spec.variance,
            np.sum(k**2 * np.exp(noise_logpmf(kind, k, 1.7))),
            rtol=1e-10,
        )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: noise.DiscreteGaussian(0.0), "sigma"),
        (lambda: noise.DiscreteGaussian(np.nan), "sigma"),
        (lambda: noise.Laplace("2"), "scale"),
        (lambda: noise.Laplace(True), "scale"),
        (lambda: noise.DiscreteLaplace.from_epsilon(-1.0), "epsilon"),
        (lambda: noise.DiscreteGaussian.from_rho(0.5, sensitivity=0.0), "sensitivity"),
        (lambda: noise.from_tumult("EXPONENTIAL", 1.0), "noise_mechanism"),
        (lambda: noise.from_python_dp(1.0, l0_sensitivity=1.5), "l0_sensitivity"),
        (lambda: noise.DiscreteLaplace(1.0).release([1.5]), "integer"),
    ],
)
def test_spec_errors_name_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# --------------------------------------------------------------------------------------------
# The distributions: draws, dispatch, validation
# --------------------------------------------------------------------------------------------

_DRAW_SPECS = [
    noise.Laplace(2.0),
    noise.DiscreteLaplace(2.0),
    noise.RoundedLaplace(2.0),
    noise.Gaussian(3.0),
    noise.DiscreteGaussian(3.0),
]
_CLAMPS = [(None, None), (0, None), (0, 40)]


@pytest.mark.parametrize("spec", _DRAW_SPECS, ids=lambda s: s.kind)
def test_draws_match_the_pmf(spec):
    """1e5 draws of NoisyBinomial(n=40, p=0.1) per clamp against the exact pmf (chi-square;
    continuous kinds binned by the exact CDF), the atoms included."""
    n, p = 40.0, 0.1
    value = pt.dvector("value")
    for lo, hi in _CLAMPS:
        rv = pmd.NoisyBinomial.dist(n=n, p=p, noise=spec, lower=lo, upper=hi, size=100_000)
        draws = pm.draw(rv, random_seed=11)
        if spec.discrete:  # integer values in float64 (docs/distributions/index.rst, dtypes)
            assert draws.dtype == np.float64 and np.all(draws == np.round(draws))
            logp_fn = pytensor.function(
                [value],
                pm.logp(pmd.NoisyBinomial.dist(n=n, p=p, noise=spec, lower=lo, upper=hi), value),
            )
            pval = _chi2_pvalue(draws, lambda k, fn=logp_fn: fn(k.astype("float64")))
        else:
            # bins between quantile-ish edges; the atoms are their own bins
            edges = np.array([-8.0, -2.0, 1.0, 2.5, 4.0, 5.5, 7.0, 10.0, 14.0])
            if lo is not None:  # no mass below the clamp: the atom is in the first bin
                edges = edges[edges > lo]
            lc = pytensor.function(
                [value],
                pm.logcdf(pmd.NoisyBinomial.dist(n=n, p=p, noise=spec, lower=lo, upper=hi), value),
            )
            cdf = np.exp(lc(edges))
            probs = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
            idx = np.searchsorted(edges, draws, side="left")
            obs = np.bincount(idx, minlength=len(probs))
            pval = stats.chisquare(obs, probs * draws.size).pvalue
            if lo is not None:
                atom = float(
                    np.exp(
                        pm.logp(
                            pmd.NoisyBinomial.dist(n=n, p=p, noise=spec, lower=lo, upper=hi), 0.0
                        ).eval()
                    )
                )
                assert stats.binomtest(int(np.sum(draws == 0.0)), draws.size, atom).pvalue > 1e-4
        assert pval > 1e-4, (spec, lo, hi, pval)


def test_poisson_draws_match_the_pmf():
    spec = noise.DiscreteGaussian(2.0)
    value = pt.dvector("value")
    for lo in (None, 0):
        rv = pmd.NoisyPoisson.dist(mu=3.0, noise=spec, lower=lo, size=100_000)
        draws = pm.draw(rv, random_seed=5)
        f = pytensor.function([value], pm.logp(pmd.NoisyPoisson.dist(3.0, spec, lower=lo), value))
        assert _chi2_pvalue(draws, lambda k, fn=f: fn(k.astype("float64"))) > 1e-4


def test_laplace_case_is_the_laplace_family():
    """NoisyBinomial(noise=Laplace(b)) = LaplaceNoisyBinomial(epsilon=1/b); clamped at
    [0, n] = LaplaceNoisyBinomial(clamp=True); the discrete Laplace differs by a constant."""
    vals = np.array([-3.0, 0.0, 2.0, 7.0, 12.0])
    a = pm.logp(pmd.NoisyBinomial.dist(12, 0.4, noise.Laplace(2.0)), vals).eval()
    b = pm.logp(pmd.LaplaceNoisyBinomial.dist(12, 0.4, epsilon=0.5), vals).eval()
    # two code paths, each a log-sum-exp of <= 13 terms of few-ulp libm values (exp, log,
    # log1p within a few ulp on any x86-64/ARM libm): <= ~30 ulp = 7e-15 relative
    np.testing.assert_allclose(a, b, rtol=1e-13)
    c = pm.logp(pmd.NoisyBinomial.dist(12, 0.4, noise.Laplace(2.0), lower=0, upper=12), vals).eval()
    b = pm.logp(pmd.LaplaceNoisyBinomial.dist(12, 0.4, epsilon=0.5, clamp=True), vals).eval()
    # as above: two log-sum-exps of <= 13 few-ulp terms
    np.testing.assert_allclose(c, b, rtol=1e-13)
    d = pm.logp(pmd.NoisyBinomial.dist(12, 0.4, noise.DiscreteLaplace(2.0)), vals).eval()
    np.testing.assert_allclose(d - a, math.log(4.0 * math.tanh(0.25)), rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(n=10, p=0.3, noise=2.0), "noise"),
        (dict(n=10, p=1.3, noise=noise.DiscreteGaussian(1.0)), "p"),
        (dict(n=-1, p=0.3, noise=noise.DiscreteGaussian(1.0)), "n"),
        (dict(n=10, p=0.3, noise=noise.DiscreteGaussian(1.0), lower=0.5), "lower"),
        (dict(n=10, p=0.3, noise=noise.Gaussian(1.0), lower=3.0, upper=1.0), "lower"),
        (dict(n=10, p=0.3, noise=noise.Gaussian(1.0), upper=np.nan), "upper"),
        (dict(n=10, p=0.3), "noise"),
    ],
)
def test_bad_parameters_are_named(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        pmd.NoisyBinomial.dist(**kwargs)


def test_observed_must_be_integer_for_integer_noise():
    with pm.Model(), pytest.raises(ValueError, match="integers"):
        pmd.NoisyBinomial("y", n=10, p=0.3, noise=noise.DiscreteGaussian(1.0), observed=[1.5, 2])
    with pm.Model(), pytest.raises(ValueError, match="finite"):
        pmd.NoisyPoisson("y", mu=3.0, noise=noise.Gaussian(1.0), observed=[np.nan])


def test_out_of_support_values():
    vals = np.array([-1.0, 0.0, 5.0, 10.0, 11.0])
    lp = pm.logp(
        pmd.NoisyBinomial.dist(10, 0.3, noise.DiscreteGaussian(1.0), lower=0, upper=10), vals
    ).eval()
    assert np.isneginf(lp[[0, 4]]).all() and np.isfinite(lp[[1, 2, 3]]).all()
    # continuous noise: a value outside the clamp is impossible too; NaN is -inf, not NaN
    lp = pm.logp(
        pmd.NoisyBinomial.dist(10, 0.3, noise.Gaussian(1.0), lower=0, upper=10),
        np.array([-0.5, 10.5, np.nan, 0.0, 3.3]),
    ).eval()
    assert np.isneginf(lp[:3]).all() and np.isfinite(lp[3:]).all()
    # the atoms plus the interior sum to one
    k = np.arange(0, 11, dtype="float64")
    total = np.exp(
        pm.logp(
            pmd.NoisyBinomial.dist(10, 0.3, noise.DiscreteGaussian(1.0), lower=0, upper=10), k
        ).eval()
    ).sum()
    # a pmf summed over its whole support: terms from exp of log pmfs (a few ulp each), summed in
    # order over < 1e4 terms: ~1e4 u < 1e-12
    np.testing.assert_allclose(total, 1.0, rtol=1e-12)


@pytest.mark.parametrize(
    "observed",
    [[3.0, 60.0, 1490.0], [0.0, 60.0, 1490.0], [3.0, 60.0, 5000.0], [0.0, 60.0, 5000.0]],
)
def test_constant_data_leaves_out_the_clamp_branches_no_value_takes(observed):
    """Constant observed data that never sits on a clamp bound builds no censored branch;
    the logp and its gradient equal those of the full graph (the same data in ``pm.Data``,
    which ``set_data`` may change, so that graph keeps every branch)."""
    spec = noise.DiscreteGaussian([1.0, 4.0, 9.0])
    n = [10, 200, 5000]
    fns, scans = [], []
    for shared in (False, True):
        with pm.Model() as m:
            p = pm.Beta("p", 2, 3, shape=3)
            obs = pm.Data("obs", np.array(observed)) if shared else np.array(observed)
            pmd.NoisyBinomial("y", n=n, p=p, noise=spec, lower=0, upper=n, observed=obs)
        lp = m.logp()
        # the censored branches' sums: scans, or the clamp atom's kernel
        scans.append(sum(isinstance(v.owner.op, Scan) or getattr(v.owner.op, "kind", "") == "lower"
                         for v in pytensor.graph.traversal.ancestors([lp]) if v.owner))  # fmt: skip
        fns.append(m.compile_fn([lp, *pytensor.grad(lp, m.value_vars)], mode="FAST_COMPILE"))
    point = {"p_logodds__": np.array([-1.0, 0.2, 0.7])}
    for a, b in zip(fns[0](point), fns[1](point), strict=True):
        # the same ops on the same machine, the observations constant or shared (constant
        # folding may reorder a few operations): a few ulp, 1e-13 = 450 ulp
        np.testing.assert_allclose(a, b, rtol=1e-13)
    both_bounds_hit = 0.0 in observed and 5000.0 in observed
    assert (scans[0] == scans[1]) if both_bounds_hit else (scans[0] < scans[1])


def test_per_release_noise_and_shapes():
    """A vector of noise parameters (one budget per release) broadcasts like any parameter."""
    spec = noise.DiscreteGaussian([1.0, 4.0, 9.0])
    rv = pmd.NoisyBinomial.dist(n=[10, 200, 5000], p=0.3, noise=spec, lower=0)
    assert pm.draw(rv, random_seed=1).shape == (3,)
    vals = np.array([3.0, 60.0, 1490.0])
    lp = pm.logp(rv, vals).eval()
    for i in range(3):
        single = pm.logp(
            pmd.NoisyBinomial.dist(
                n=[10, 200, 5000][i],
                p=0.3,
                noise=noise.DiscreteGaussian([1.0, 4.0, 9.0][i]),
                lower=0,
            ),
            vals[i],
        ).eval()
        # the same compiled formulas, batched or one release at a time: bitwise in principle, a few
        # ulp from a vectorised libm path
        np.testing.assert_allclose(lp[i], single, rtol=1e-12)
    with pm.Model(coords={"g": ["a", "b", "c"]}) as m:
        p = pm.Beta("p", 1, 1, dims="g")
        pmd.NoisyBinomial("y", n=[10, 200, 5000], p=p, noise=spec, lower=0, observed=vals, dims="g")
    assert np.isfinite(m.compile_logp()(m.initial_point()))
    prior = pm.sample_prior_predictive(draws=5, model=m, random_seed=2)
    assert prior.prior_predictive["y"].shape == (1, 5, 3)
    y = prior.prior_predictive["y"].values
    assert y.dtype == np.float64 and np.all(y == np.round(y))


@pytest.mark.backend
@pytest.mark.parametrize("sampler", ["pymc", "nutpie", "numpyro"])
def test_sampling_on_every_backend(sampler):
    """NUTS with each sampler on a discrete-Gaussian release censored at 0 (the scan bisection
    and the window sums compile on Numba and JAX)."""
    rng = np.random.default_rng(4)
    n = np.array([30, 200, 900, 4000])
    spec = noise.DiscreteGaussian.from_rho(0.1)
    released = np.maximum(spec.release(rng.binomial(n, 0.15), rng), 0)
    with pm.Model():
        p = pm.Beta("p", 1.0, 1.0)
        pmd.NoisyBinomial("y", n=n, p=p, noise=spec, lower=0, observed=released)
        idata = pm.sample(
            300,
            tune=300,
            chains=2,
            nuts_sampler=sampler,
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
        )
    post = idata.posterior["p"].values.ravel()
    assert abs(post.mean() - 0.15) < 4 * post.std() + 0.01


def test_huge_gaussian_noise_on_an_unbounded_count_is_refused_by_name():
    """sigma = 1e6 on a Poisson would sum 1.9e7 terms per release: refused with the reason;
    on a binomial the window is capped by n (and the count's curvature) and works."""
    with pytest.raises(ValueError, match="sigma = 1e\\+06"):
        pm.logp(pmd.NoisyPoisson.dist(5.0, noise.DiscreteGaussian(1e6)), 3)
    lp = pm.logp(pmd.NoisyBinomial.dist(100, 0.3, noise.DiscreteGaussian(1e6)), 3.0).eval()
    assert np.isfinite(lp)


# --------------------------------------------------------------------------------------------
# A noise kind of one's own (the module docstring of pymc_dpnoise.noise says how)
# --------------------------------------------------------------------------------------------


class Staircase(noise.Noise):
    """Uniform integer noise on {-w, ..., w}: a mechanism the package does not ship, defined
    here as a user would (log pmf, log CDF, both samplers and the support radius that sizes
    the count sums)."""

    param_name = "width"
    discrete = True
    symmetric = True
    kind = "staircase"

    @classmethod
    def check_param(cls, value):
        v = np.asarray(value, dtype="float64")
        if np.any(v < 0) or np.any(v != np.round(v)):
            raise ValueError(f"`width` must be a non-negative integer; got {value!r}")
        return float(v) if v.ndim == 0 else v

    @classmethod
    def numpy_draw(cls, width, size, rng):
        w = np.broadcast_to(np.asarray(width, dtype="int64"), size)
        return rng.integers(-w, w + 1, size=size)

    @classmethod
    def pytensor_draw(cls, width, size, rng):
        rng, u = pt.random.uniform(0.0, 1.0, size=size, rng=rng, return_next_rng=True)
        return rng, pt.floor(u * (2.0 * width + 1.0)) - width

    @classmethod
    def log_density(cls, x, width):
        x = pt.as_tensor_variable(x)
        inside = (pt.abs(x) <= width) & pt.eq(x, pt.round(x))
        return pt.switch(inside, -pt.log(2.0 * width + 1.0), -np.inf)

    @classmethod
    def log_cdf(cls, x, width):
        k = pt.clip(pt.floor(x), -width - 1.0, width)
        return pt.log((k + width + 1.0) / (2.0 * width + 1.0))

    @classmethod
    def support_radius(cls, width):
        return int(np.max(width))


def _staircase_reference(n, p, w, y, lower=None, upper=None):
    """Enumeration over every (count, noise) pair."""
    s = np.arange(n + 1)
    ps = stats.binom.pmf(s, n, p)
    j = np.arange(-w, w + 1)
    tot = (s[:, None] + j[None, :]).ravel()
    mass = (ps[:, None] * np.full(j.size, 1.0 / (2 * w + 1))[None, :]).ravel()
    if lower is not None:
        tot = np.maximum(tot, lower)
    if upper is not None:
        tot = np.minimum(tot, upper)
    with np.errstate(divide="ignore"):  # log 0 = -inf outside the support
        return np.log(np.array([mass[tot == v].sum() for v in y]))


def test_a_noise_kind_defined_outside_the_package():
    """Staircase noise with NoisyBinomial / NoisyPoisson: logp against enumeration (clamped and
    not), the clamp atoms' CDFs, draws against the pmf, and a short NUTS fit that recovers p."""
    spec = Staircase(3)
    assert repr(spec) == "Staircase(width=3.0)" and spec.release(np.array([5]), 1).dtype == "int64"
    n, p = 12, 0.35
    value = pt.dvector("value")
    ys = np.arange(-4.0, 17.0)
    for lo, hi in ((None, None), (0, None), (0, n), (2, 9)):
        rv = pmd.NoisyBinomial.dist(n=n, p=p, noise=spec, lower=lo, upper=hi)
        assert rv.owner.op.noise_type is Staircase and "StaircaseNoisyBinomial" in str(
            rv.owner.op._print_name
        )
        f = pytensor.function([value], pm.logp(rv, value))
        ref = _staircase_reference(n, p, 3, ys, lo, hi)
        np.testing.assert_allclose(f(ys), ref, rtol=1e-13)  # sums of 7 terms: a few ulp
        assert np.isneginf(f(np.array([3.5]))).all()
    # log CDF / SF of the unclamped release against enumeration
    rv = pmd.NoisyBinomial.dist(n=n, p=p, noise=spec)
    lc = pytensor.function([value], [pm.logcdf(rv, value), pm.logccdf(rv, value)])
    got_c, got_s = lc(ys)
    cum = np.logaddexp.accumulate(_staircase_reference(n, p, 3, np.arange(-3.0, 16.0)))
    ref_c = np.interp(ys, np.arange(-3.0, 16.0), cum, left=-np.inf, right=0.0)
    fin = ys <= 14
    # <= 19 logaddexp steps on each side, each adding <= ~1 ulp of the running value (<= 1 in
    # magnitude where log F -> 0) plus the log1p's: <= 19 * 2.2e-16 = 4.2e-15 per side, so
    # 1e-14 absolute near 0 (was 1e-15, below that bound) and 450 ulp relative elsewhere
    np.testing.assert_allclose(got_c[fin], ref_c[fin], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(np.logaddexp(got_c, got_s)[fin], 0.0, atol=1e-14)
    # the Poisson family too (mass 1 over the support)
    rvp = pmd.NoisyPoisson.dist(mu=4.0, noise=spec, lower=0)
    total = np.exp(pm.logp(rvp, np.arange(0.0, 60.0)).eval()).sum()
    np.testing.assert_allclose(total, 1.0, rtol=1e-12)
    # draws (the symbolic sampler) against the pmf
    draws = pm.draw(pmd.NoisyBinomial.dist(n=n, p=p, noise=spec, size=50_000), random_seed=3)
    logp_fn = pytensor.function([value], pm.logp(rv, value))
    assert _chi2_pvalue(draws, lambda k: logp_fn(k.astype("float64"))) > 1e-4
    # a fit: 40 groups released with staircase noise
    rng = np.random.default_rng(8)
    sizes = rng.integers(5, 60, size=40)
    released = Staircase(3).release(rng.binomial(sizes, 0.3), rng)
    with pm.Model():
        q = pm.Beta("q", 1.0, 1.0)
        pmd.NoisyBinomial("y", n=sizes, p=q, noise=Staircase(3), observed=released)
        idata = pm.sample(
            200, tune=200, chains=1, random_seed=4, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
        post = pm.sample_posterior_predictive(idata, random_seed=5, progressbar=False)
    draws = idata.posterior["q"].values.ravel()
    assert abs(draws.mean() - 0.3) < 4 * draws.std() + 0.01
    pp = post.posterior_predictive["y"].values
    assert pp.shape[-1] == 40 and np.all(pp == np.round(pp))


def test_a_continuous_kind_without_count_sums_is_refused_by_name():
    class Wide(noise.Noise):
        discrete = False

        @classmethod
        def log_density(cls, x, scale):
            return -pt.abs(x) / scale

        @classmethod
        def pytensor_draw(cls, scale, size, rng):
            return pt.random.laplace(0.0, scale, size=size, rng=rng, return_next_rng=True)

    with pytest.raises(NotImplementedError, match="Wide is continuous"):
        pm.logp(pmd.NoisyBinomial.dist(n=3, p=0.3, noise=Wide(1.0)), 1.0)


# --------------------------------------------------------------------------------------------
# Releases a value cannot hold; empty groups
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "value"),
    [
        (noise.DiscreteLaplace(3.0), np.array([1e19])),  # wrapped to -9223372036854775805
        (noise.DiscreteLaplace(3.0), np.array([np.iinfo(np.uint64).max], dtype=np.uint64)),
        (noise.DiscreteGaussian(3.0), np.array([2**63 - 1], dtype=np.int64)),
        (noise.RoundedLaplace(3.0), np.array([-(2.0**63)])),
        (noise.Gaussian(3.0), np.array([2**53 + 1], dtype=np.int64)),  # rounds in a float64
        (noise.Laplace(3.0), np.array([2**64 - 1], dtype=np.uint64)),
    ],
)
def test_release_refuses_values_its_output_cannot_hold(spec, value):
    with pytest.raises(ValueError, match="`value`"):
        spec.release(value, rng=1)


def test_release_keeps_every_value_it_can_hold():
    big = np.array([2**62, -(2**62), 2**53 + 1], dtype=np.int64)
    out = noise.DiscreteLaplace(1.0).release(big, rng=1)
    assert out.dtype == np.int64 and np.all(np.abs(out - big) < 100)
    out = noise.Gaussian(1.0).release(np.array([2**53], dtype=np.uint64), rng=1)
    assert out.dtype == np.float64 and abs(out[0] - 2.0**53) < 100


@pytest.mark.parametrize("spec", _DRAW_SPECS, ids=lambda s: s.kind)
def test_an_empty_group_clamped_to_zero(spec):
    """n = 0 with lower = upper = 0 (a small area with no records, clamp [0, n]): the release
    is 0 with probability 1 (logp 0, anything else -inf), alone and in a vector of groups;
    the other groups' logp and the gradient are those of the groups alone."""
    n = np.array([0.0, 5.0, 12.0])
    p = pt.dscalar("p")
    value = pt.dvector("value")
    rv = pmd.NoisyBinomial.dist(n=n, p=p, noise=spec, lower=0, upper=n)
    lp = pm.logp(rv, value)
    f = pytensor.function([value, p], [lp, pt.grad(lp.sum(), p)])
    got, grad = f(np.array([0.0, 2.0, 12.0]), 0.3)
    assert got[0] == 0.0 and np.isfinite(grad)
    for i, v in ((1, 2.0), (2, 12.0)):
        alone = pm.logp(
            pmd.NoisyBinomial.dist(n=n[i], p=0.3, noise=spec, lower=0, upper=n[i]), v
        ).eval()
        # the same kernel on the same values, alone or in a batch whose window spans n = 12
        # (more terms, exactly 0 or far below): <= 13 terms of a few ulp, 1e-13 = 450 ulp
        np.testing.assert_allclose(got[i], alone, rtol=1e-13)
    assert np.isneginf(f(np.array([1.0, 2.0, 12.0]), 0.3)[0][0])
    scalar = pmd.NoisyBinomial.dist(n=0, p=0.3, noise=spec, lower=0, upper=0)
    assert pm.logp(scalar, 0.0).eval() == 0.0
    assert np.all(pm.draw(rv, draws=20, random_seed=1, givens={p: 0.3})[:, 0] == 0.0)
    with pm.Model() as m:
        q = pm.Beta("q", 1.0, 1.0)
        pmd.NoisyBinomial("y", n=n, p=q, noise=spec, lower=0, upper=n, observed=[0, 2, 12])
    assert np.isfinite(m.compile_logp()(m.initial_point()))


# --------------------------------------------------------------------------------------------
# Releases beyond 2^53 (module docstring of pymc_dpnoise.distributions.noisy_counts)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("y", [2.0**53 + 2, 1e20, -1e20])
def test_releases_beyond_two_to_the_53_are_refused(y):
    """No float64 log likelihood holds the parameters' effect there (at 2^53 + 2 with discrete
    Laplace noise b = 2 the difference 19.85 between p = 0.9 and 0.1 came out as 20, at 1e20
    as 0): observed releases are refused by name, values get -inf (no NaN in the gradient)."""
    for kind in ("discrete_gaussian", "discrete_laplace", "gaussian"):
        spec = SPEC[kind](2.0)
        with pm.Model(), pytest.raises(ValueError, match=r"y: observed releases .* 2\^53"):
            pmd.NoisyBinomial("y", n=50, p=0.5, noise=spec, observed=[3.0, y])
        with pm.Model(), pytest.raises(ValueError, match=r"`lower` .* 2\^53"):
            pmd.NoisyPoisson("y", mu=3.0, noise=spec, lower=-abs(y), observed=[3.0])
    v, p = pt.dvector("v"), pt.dvector("p")
    lp = pm.logp(pmd.NoisyBinomial.dist(n=50, p=p, noise=noise.DiscreteGaussian(2.0)), v)
    f = pytensor.function([v, p], [lp, pt.grad(lp.sum(), p)])
    got, grad = f(np.array([y, 3.0]), np.array([0.9, 0.1]))
    assert np.isneginf(got[0]) and np.isfinite(got[1]) and np.all(np.isfinite(grad))
    # the largest release kept, 2^53: exact to the float64 spacing of a log likelihood of
    # -2^53 / b (0.5 at b = 2; two roundings: within 1).  Far above n, log P(Y = y) = const -
    # y/b + log E[e^{S/b}], so the difference is n log((1 - q + q e^{1/b}) / ...) exactly.
    edge = pm.logp(
        pmd.NoisyBinomial.dist(n=50, p=[0.1, 0.9], noise=noise.DiscreteLaplace(2.0)), [2.0**53] * 2
    ).eval()
    e = math.exp(0.5)
    exact = 50 * (math.log(0.1 + 0.9 * e) - math.log(0.9 + 0.1 * e))  # 19.85
    assert abs((edge[1] - edge[0]) - exact) <= 1.0


# --------------------------------------------------------------------------------------------
# Clamp atoms and tails far from the count's mass, against brute force over every count value
# --------------------------------------------------------------------------------------------


def _exact_noise_log_cdf(kind, prm, d):
    """log P(N <= d) at the array ``d``, from the definitions: closed forms for the Laplace
    kinds, SciPy's ``log_ndtr`` for the Gaussian, and for the discrete Gaussian a cumulative
    log-space sum over every lattice point below ``d`` (its error is a few ulp per term of
    the accumulation, below 1e-9 absolute on the log for 2e6 terms)."""
    from scipy.special import log_ndtr, logsumexp

    d = np.asarray(d, dtype="float64")
    if kind == "gaussian":
        return log_ndtr(d / prm)
    if kind in ("laplace", "rounded_laplace"):
        x = np.floor(d) + 0.5 if kind == "rounded_laplace" else d
        with np.errstate(divide="ignore"):
            return np.where(x < 0, x / prm - math.log(2), np.log1p(-0.5 * np.exp(-np.abs(x) / prm)))
    k = np.floor(d)
    if kind == "discrete_laplace":
        l1a = math.log1p(math.exp(-1.0 / prm))
        with np.errstate(divide="ignore"):
            pos = np.log1p(-np.exp(-(np.abs(k) + 1.0) / prm - l1a))
        return np.where(k < 0, k / prm - l1a, pos)
    reach = math.ceil(45 * prm) + 20
    lowest = -int(np.max(np.abs(k))) - 1 - reach
    i = np.arange(lowest, 0, dtype="float64")
    tail = np.logaddexp.accumulate(-(i**2) / (2 * prm**2))  # log sum_{j <= i}
    z = np.arange(-reach, reach + 1, dtype="float64")
    log_z = logsumexp(-(z**2) / (2 * prm**2))
    neg = np.minimum(k, -k - 1.0)  # <= -1
    val = tail[(neg - lowest).astype("int64")] - log_z
    with np.errstate(divide="ignore"):
        return np.where(k < 0, val, np.log1p(-np.exp(val)))


def _exact_count_log_cdfs(family, c, kind, prm, m):
    """(log P(Y <= m), log P(Y > m)), Y = count + noise, as log-sum-exp over every count value
    of log pmf(s) + log noise CDF / survival function (SciPy's binomial / Poisson
    ``logpmf``, never its ``logcdf``, which underflows: -808,089 for the -270,979.58 of
    n = 1e6, p = 0.4, discrete Gaussian 300 at m = 0)."""
    from scipy.special import logsumexp

    discrete = kind in DISCRETE
    if family == "binomial":
        s = np.arange(0, c[0] + 1, dtype="float64")
        lp = stats.binom.logpmf(s, c[0], c[1])
    else:
        nsd = math.sqrt(float(SPEC[kind](prm).variance))
        top = c[0] + 60 * math.sqrt(c[0]) + 300 + max(m, 0.0) + 60 * nsd
        s = np.arange(0, math.ceil(top) + 1, dtype="float64")
        lp = stats.poisson.logpmf(s, c[0])
    lo = _exact_noise_log_cdf(kind, prm, m - s)
    hi = _exact_noise_log_cdf(kind, prm, (s - m - 1.0) if discrete else (s - m))
    return logsumexp(lp + lo), logsumexp(lp + hi)


def _far_releases(family, c, kind, prm):
    """The clamp bounds 0 and n, the count's tails 40 sd out, and releases 50 noise sd beyond
    both ends of the support."""
    nsd = math.sqrt(float(SPEC[kind](prm).variance))
    if family == "binomial":
        mean, var, top = c[0] * c[1], c[0] * c[1] * (1 - c[1]), c[0]
    else:
        mean = var = c[0]
        top = mean + 40 * math.sqrt(var + nsd**2)
    sd = math.sqrt(var + nsd**2)
    ys = [0.0, top, mean - 40 * sd, mean + 40 * sd, -50 * nsd - 5, top + 50 * nsd + 5]
    return [float(np.floor(y)) for y in ys]


_FAR_FUNCS = {}


def _far_function(family, kind, n, prm):
    """(log P(Y <= y), log P(Y > y), clamped logp at y with lower = 0, upper = n) for a
    vector of releases and count parameters: one compile per (family, kind, n, noise)."""
    key = (family, kind, n, prm)
    if key not in _FAR_FUNCS:
        y, q = pt.dvector("y"), pt.dvector("q")
        if family == "binomial":
            lc, lcc = ncm.noisy_binomial_log_cdfs(y, n, q, SPEC[kind], prm)
            clamped = ncm.noisy_binomial_logp(y, n, q, SPEC[kind], prm, 0.0, n)
        else:
            lc, lcc = ncm.noisy_poisson_log_cdfs(y, q, SPEC[kind], prm)
            clamped = ncm.noisy_poisson_logp(y, q, SPEC[kind], prm, 0.0, None)
        _FAR_FUNCS[key] = pytensor.function([y, q], [lc, lcc, clamped])
    return _FAR_FUNCS[key]


def _check_far(family, kind, n, prm, qs):
    """Every release of :func:`_far_releases` for each count parameter in ``qs``: both log
    CDFs, and the clamped log pmf at the bounds (the atoms), within 1e-8 relative on the log
    (the real-release tests' standard; the brute force is good to ~1e-12)."""
    rows = [(y, q) for q in qs for y in _far_releases(family, (n or q, q), kind, prm)]
    y, q = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    lc, lcc, clamped = _far_function(family, kind, n, prm)(y, q)
    bad = []
    for i, (yi, qi) in enumerate(rows):
        c = (n, qi) if family == "binomial" else (qi,)
        ref = _exact_count_log_cdfs(family, c, kind, prm, yi)
        got = [lc[i], lcc[i]]
        top = n if family == "binomial" else None
        if yi == 0.0:
            got.append(clamped[i])
            ref = (*ref, ref[0])
        elif top is not None and yi == top:
            got.append(clamped[i])
            up = (
                ref[1]
                if kind not in DISCRETE
                else _exact_count_log_cdfs(family, c, kind, prm, yi - 1.0)[1]
            )
            ref = (*ref, up)
        for g, r in zip(got, ref, strict=False):
            ok = (np.isneginf(g) and np.isneginf(r)) or abs(g - r) <= 1e-8 * max(1.0, abs(r))
            if not ok:
                bad.append((yi, qi, g, r))
    assert not bad, bad[:6]


@pytest.mark.parametrize(
    "kind",
    [
        # the Python-VM evaluation of the discrete Gaussian's split sums (noise tails of 96
        # terms on every window point) took 300-620 CPU-s here: slow (run and passed
        # 2026-12-07); the heavy grid below keeps the discrete Gaussian at noise 0.3 and 30
        pytest.param(k, marks=pytest.mark.slow) if k == "discrete_gaussian" else k
        for k in KINDS
    ],
)
def test_clamp_atoms_far_from_the_mass(kind):
    """n = 1e6, p = 0.4, noise 300 (the mass at 4e5 +- 300, the atoms at 0 and n hundreds of
    thousands of nats down): the audit reported -429,582.94 for the lower atom of the
    discrete Gaussian and -820,403 for the upper one; two independent brute-force sums (over
    the count value, and over the noise value with cumulative binomial CDFs) give -270,979.58
    and -551,749.99, as the package does, so the check here is the brute force over every
    count value."""
    _check_far("binomial", kind, 10**6, 300.0, (0.4,))


@pytest.mark.heavy  # ~80 compiles and brute-force sums over 1e6 count values per release
@pytest.mark.parametrize(
    ("prm", "kind"),
    [
        # the discrete Gaussian at noise 1000 took ~510 CPU-s: slow (run and passed 2026-12-07)
        pytest.param(p, k, marks=pytest.mark.slow)
        if (p, k) == (1000.0, "discrete_gaussian")
        else (p, k)
        for p in (0.3, 30.0, 1000.0)
        for k in KINDS
    ],
)
def test_clamp_atoms_far_from_the_mass_grid(kind, prm):
    """Held-out grid: n from 10 to 1e6, p from 1e-3 to 0.999, Poisson mu from 0.5 to 1e6, noise
    0.3 to 1000; releases at the clamp bounds, 40 sd into both tails and 50 noise sd beyond
    the support on both sides."""
    for n in (10, 2 * 10**5, 10**6):
        _check_far("binomial", kind, n, prm, (1e-3, 0.4, 0.999))
    _check_far("poisson", kind, None, prm, (0.5, 50.0, 1e4, 1e6))


@pytest.mark.parametrize("kind", [noise.Gaussian, noise.DiscreteGaussian])
def test_gaussian_kinds_sigma_constant_graph_folds_random_sigma_refused(kind):
    """A sigma fixed when the graph is built (here a graph of constants) is folded and gives the
    constant's logp; a random sigma (a model parameter, also under pm.Truncated, which builds
    its sampler anyway) is refused with the message naming `sigma`, as a ValueError."""
    folded = pm.logp(pmd.NoisyPoisson.dist(6.0, noise=kind(pt.constant(1.5) * 2.0)), 3.0)
    plain = pm.logp(pmd.NoisyPoisson.dist(6.0, noise=kind(3.0)), 3.0)
    got, want = pytensor.function([], [folded, plain])()
    assert got == want  # the same graph once folded: equal to the last bit
    with pm.Model() as m:
        sigma = pm.HalfNormal("sigma", 3.0)
        pmd.NoisyPoisson("y", 6.0, noise=kind(sigma), observed=[3.0])
        dist = pmd.NoisyPoisson.dist(6.0, noise=kind(sigma))
        pm.Truncated("t", dist, lower=0.0, observed=[3.0])
    with pytest.raises(ValueError, match="constant `sigma`"):
        m.logp(vars=[m["y"]])
    with pytest.raises(ValueError, match="constant `sigma`"):
        m.logp(vars=[m["t"]])
    with pytest.raises(ValueError, match="constant `sigma`"):
        pm.logcdf(pmd.NoisyPoisson.dist(6.0, noise=kind(pt.dscalar("s"))), 3.0)
