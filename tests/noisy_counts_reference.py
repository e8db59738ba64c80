"""Brute-force references for the noisy counts (tests/test_noisy_counts.py).

Everything here is independent of the package's math: the count's pmf comes from SciPy
(``binom.logpmf`` / ``poisson.logpmf``), the noise pmf / pdf / CDF is written out from its
definition (the discrete Gaussian normaliser by direct summation over +-60 sigma), and the
latent count is summed over its *whole* support (binomial) or over mu +- 60 sqrt(mu) + 400
(Poisson; the rest is below e^-1000), with log-sum-exp; above 2e6 records (binomial) or
mu = 1e6 (Poisson) over a generous window around the summand's maximum on a coarse grid.  Clamp atoms are sums of the
count pmf times the noise CDF.
"""

from __future__ import annotations

import functools
import math

import counts_reference as _cr
import numpy as np
from scipy import special, stats


def _log_z_dg(sigma):
    kmax = int(60 * sigma) + 20
    k = np.arange(-kmax, kmax + 1, dtype="float64")
    # -(k / sigma)^2 / 2, not -k^2 / (2 sigma^2): 2 * 0.05**2 rounds up, which moves
    # exp(-1 / (2 sigma^2)) by 3e-14 relative -- more than the tolerance of the tests
    return special.logsumexp(-0.5 * (k / sigma) ** 2)


def noise_logpmf(kind, x, p):
    """Log pmf/pdf of the noise at the points x (float array)."""
    x = np.asarray(x, dtype="float64")
    if kind == "laplace":
        return -np.abs(x) / p - math.log(2 * p)
    if kind == "gaussian":
        return stats.norm.logpdf(x, 0.0, p)
    if kind == "discrete_laplace":
        a = math.exp(-1 / p)
        return math.log((1 - a) / (1 + a)) - np.abs(x) / p
    if kind == "rounded_laplace":
        # F(j + 1/2) - F(j - 1/2) of the Laplace: for |j| >= 1 both are on one side,
        # (1/2) e^{-(|j| - 1/2)/b} (1 - e^{-1/b}); at 0, 1 - e^{-1/(2b)}
        j = np.abs(x)
        out = -math.log(2.0) - (j - 0.5) / p + math.log(-math.expm1(-1.0 / p))
        return np.where(j == 0, math.log(-math.expm1(-0.5 / p)), out)
    if kind == "discrete_gaussian":
        return -0.5 * (x / p) ** 2 - _log_z_dg(p)
    raise ValueError(kind)


def _dg_logcdf_table(sigma):
    """(k0, table): log P(N <= k) for k = k0, k0 + 1, ... by cumulative log-sum-exp."""
    kmax = int(60 * sigma) + 60
    k = np.arange(-kmax, kmax + 1, dtype="float64")
    return -kmax, np.logaddexp.accumulate(noise_logpmf("discrete_gaussian", k, sigma))


_DG_TABLES = {}


def _laplace_logcdf(x, b):
    # written out: SciPy's laplace.logcdf underflows to -inf below about -745 b
    with np.errstate(over="ignore"):
        return np.where(
            x < 0,
            -math.log(2.0) + np.minimum(x, 0) / b,
            np.log1p(-0.5 * np.exp(-np.maximum(x, 0) / b)),
        )


def _dg_tail(k, sigma):
    """log P(N <= k) for k below the table (k < -60 sigma - 60): the sum over k, k-1, ...
    directly, in chunks, of ``width`` terms.  Beyond i terms the exponent has fallen by at
    least |k| i / sigma^2 ((k - i)^2 >= k^2 + 2 |k| i), so ``width`` = 60 sigma^2 / |k| + 100
    leaves out less than e^-60 of the sum (relative), and at most ~6,100 terms per k at
    sigma = 1e4 (was 60 sigma + 100 for every k: hours for the n = 1e8 rows)."""
    k = np.asarray(k, dtype="float64")
    out = np.empty(k.shape)
    flat_k, flat_out = k.ravel(), out.ravel()
    widths = np.ceil(60.0 * sigma**2 / np.abs(flat_k)).astype("int64") + 100
    for w in np.unique(2 ** np.ceil(np.log2(widths)).astype("int64")):
        sel = np.flatnonzero(2 ** np.ceil(np.log2(widths)).astype("int64") == w)
        i = np.arange(w, dtype="float64")
        step = max(1, 20_000_000 // int(w))
        for a in range(0, sel.size, step):
            idx = sel[a : a + step]
            kk = flat_k[idx, None]
            flat_out[idx] = special.logsumexp(-((kk - i) ** 2) / (2 * sigma**2), axis=1)
    return out - _log_z_dg(sigma)


def noise_logcdf(kind, x, p):
    """log P(N <= x) (at floor(x) for the discrete kinds)."""
    x = np.asarray(x, dtype="float64")
    if kind == "laplace":
        return _laplace_logcdf(x, p)
    if kind == "gaussian":
        return stats.norm.logcdf(x, 0.0, p)
    k = np.floor(x)
    if kind == "rounded_laplace":
        return _laplace_logcdf(k + 0.5, p)
    if kind == "discrete_laplace":
        # sum_{j <= k} of the pmf, written as geometric series on each side of 0
        a = math.exp(-1 / p)
        with np.errstate(divide="ignore"):
            neg = -np.abs(k) / p - math.log1p(a)  # a^{|k|} / (1 + a), k < 0
            pos = np.log1p(-np.exp(-(np.abs(k) + 1) / p) / (1 + a))
        return np.where(k < 0, neg, pos)
    if kind == "discrete_gaussian":
        if p not in _DG_TABLES:
            _DG_TABLES[p] = _dg_logcdf_table(p)
        k0, table = _DG_TABLES[p]
        idx = (k - k0).astype("int64")
        out = table[np.clip(idx, 0, len(table) - 1)]
        out = np.where(idx >= len(table), 0.0, out)
        below = idx < 0
        if np.any(below):
            out = np.array(out, dtype="float64")
            out[below] = _dg_tail(k[below], p)
        return out
    raise ValueError(kind)


#: largest n summed over its whole support; above it the reference sums a window located
#: by a coarse scan (see _support)
FULL_SUPPORT_MAX = 2_000_000


@functools.lru_cache(maxsize=64)
def _full_support(family, params):
    s, lps = _support(family, params)
    s.setflags(write=False)
    lps.setflags(write=False)
    return s, lps


def _support(family, params, locate=None):
    """(s, log P(s)) over the support, or for a huge binomial over a generous window around
    the maximum of ``locate(s, log P(s))`` found on a coarse grid of 2e5 points."""
    if family == "binomial":
        n, q = params
        n = int(n)
        if n <= FULL_SUPPORT_MAX or locate is None:
            s = np.arange(0, n + 1, dtype="float64")
        else:
            coarse = np.unique(np.linspace(0, n, 200_001).round())
            c = coarse[np.argmax(locate(coarse, _binom_logpmf(coarse, n, q)))]
            half = 4 * n / 200_000 + locate.reach + 40 * math.sqrt(n * q * (1 - q) + 1) + 1000
            s = np.arange(max(0, math.floor(c - half)), min(n, c + half) + 1, dtype="float64")
        with np.errstate(divide="ignore"):
            return s, _binom_logpmf(s, n, q)
    (mu,) = params
    top = int(mu + 60 * math.sqrt(mu + 1) + 400)
    if top <= FULL_SUPPORT_MAX or locate is None:
        s = np.arange(0, top + 1, dtype="float64")
    else:  # as the huge binomial: a window around the coarse maximum
        coarse = np.unique(np.linspace(0, top, 200_001).round())
        c = coarse[np.argmax(locate(coarse, _poisson_logpmf(coarse, mu)))]
        half = 4 * top / 200_000 + locate.reach + 40 * math.sqrt(mu + 1) + 1000
        s = np.arange(max(0, math.floor(c - half)), min(top, c + half) + 1, dtype="float64")
    return s, _poisson_logpmf(s, mu)


def _binom_logpmf(s, n, q):
    """SciPy's gammaln-based logpmf loses ~1e-7 at n = 1e8 (gammaln(1e8) ~ 1.7e9): the
    longdouble Stirling series of tests/counts_reference.py above 1e6 records."""
    if n <= 1_000_000:
        return stats.binom.logpmf(s, n, q)
    return np.asarray(_cr.binom_logpmf(s, n, q), dtype="float64")


def _poisson_logpmf(s, mu):
    if mu <= 1e5:
        return stats.poisson.logpmf(s, mu)
    return np.asarray(_cr.poisson_logpmf(s, mu), dtype="float64")


class _Locate:
    def __init__(self, fn, reach):
        self.fn, self.reach = fn, reach

    def __call__(self, s, lps):
        return lps + self.fn(s)


def _reach(kind, p):
    return 40 * p + 100


def count_logp(family, params, kind, p, y, lower=None, upper=None):
    """Brute-force log pmf/pdf of clamp(S + N, lower, upper) at the scalar y."""
    if (lower is not None and y < lower) or (upper is not None and y > upper):
        return -np.inf
    discrete = kind in ("discrete_laplace", "rounded_laplace", "discrete_gaussian")
    reach = _reach(kind, p)
    if lower is not None and y == lower:
        fn = lambda s: noise_logcdf(kind, lower - s, p)  # noqa: E731
    elif upper is not None and y == upper:
        at = upper - 1 if discrete else upper
        # P(N > at - s) = P(N < s - at) = P(N <= s - at - 1) (discrete) / P(N <= s - at)
        fn = lambda s: noise_logcdf(kind, s - at - 1 if discrete else s - at, p)  # noqa: E731
    else:
        if discrete and y != round(y):
            return -np.inf
        fn = lambda s: noise_logpmf(kind, y - s, p)  # noqa: E731
    s, lps = _pick(family, params, _Locate(fn, reach))
    return special.logsumexp(lps + fn(s))


def _pick(family, params, locate):
    big = params[0] > FULL_SUPPORT_MAX if family == "binomial" else params[0] > 1e6
    if big:
        return _support(family, params, locate)
    return _full_support(family, tuple(float(x) for x in params))


def count_logcdf(family, params, kind, p, y):
    """Brute-force (log P(Y <= y), log P(Y > y)) of the unclamped release."""
    discrete = kind in ("discrete_laplace", "rounded_laplace", "discrete_gaussian")
    k = math.floor(y) if discrete else y
    reach = _reach(kind, p)
    lo_fn = lambda s: noise_logcdf(kind, k - s, p)  # noqa: E731
    hi_fn = lambda s: noise_logcdf(kind, s - k - 1 if discrete else s - k, p)  # noqa: E731
    out = []
    for fn in (lo_fn, hi_fn):
        s, lps = _pick(family, params, _Locate(fn, reach))
        out.append(special.logsumexp(lps + fn(s)))
    return tuple(out)
