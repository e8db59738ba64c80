"""Brute-force references for the noisy counts (tests/test_noisy_counts.py).

Everything here is independent of the package's math: the count's pmf comes from SciPy
(``binom.logpmf`` / ``poisson.logpmf``), the noise pmf / pdf / CDF is written out from its
definition (the discrete Gaussian normaliser by direct summation over +-60 sigma), and the
latent count is summed over its *whole* support (binomial) or over mu +- 60 sqrt(mu) + 400
(Poisson; the rest is below e^-1000), with log-sum-exp.  Clamp atoms are sums of the
count pmf times the noise CDF.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats


def _log_z_dg(sigma):
    kmax = int(60 * sigma) + 20
    k = np.arange(-kmax, kmax + 1, dtype="float64")
    return special.logsumexp(-(k**2) / (2 * sigma**2))


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
        # F(j + 1/2) - F(j - 1/2) of the Laplace, written for |j| >= 1 and j = 0
        j = np.abs(x)
        lo = stats.laplace.logsf(j - 0.5, 0.0, p)
        hi = stats.laplace.logsf(j + 0.5, 0.0, p)
        out = lo + np.log1p(-np.exp(hi - lo))
        return np.where(j == 0, np.log1p(-np.exp(-0.5 / p)), out)
    if kind == "discrete_gaussian":
        return -(x**2) / (2 * p**2) - _log_z_dg(p)
    raise ValueError(kind)


def noise_logcdf(kind, x, p):
    """log P(N <= x) (x integer for the discrete kinds)."""
    x = np.asarray(x, dtype="float64")
    if kind == "laplace":
        return stats.laplace.logcdf(x, 0.0, p)
    if kind == "gaussian":
        return stats.norm.logcdf(x, 0.0, p)
    if kind == "rounded_laplace":
        return stats.laplace.logcdf(np.floor(x) + 0.5, 0.0, p)
    kmax = int(60 * p) + 40
    out = np.empty(x.shape)
    for i, xi in np.ndenumerate(x):
        k = np.floor(xi)
        lo_k = np.arange(k - kmax - 200 * max(p, 1), k + 1)
        hi_k = np.arange(k + 1, k + kmax + 200 * max(p, 1) + 2)
        l_lo = special.logsumexp(noise_logpmf(kind, lo_k, p))
        l_hi = special.logsumexp(noise_logpmf(kind, hi_k, p))
        out[i] = l_lo - np.logaddexp(l_lo, l_hi)
    return out


def _support(family, params):
    if family == "binomial":
        n, q = params
        s = np.arange(0, int(n) + 1, dtype="float64")
        with np.errstate(divide="ignore"):
            return s, stats.binom.logpmf(s, int(n), q)
    (mu,) = params
    top = int(mu + 60 * math.sqrt(mu + 1) + 400)
    s = np.arange(0, top + 1, dtype="float64")
    return s, stats.poisson.logpmf(s, mu)


def count_logp(family, params, kind, p, y, lower=None, upper=None):
    """Brute-force log pmf/pdf of clamp(S + N, lower, upper) at the scalar y."""
    s, lps = _support(family, params)
    if lower is not None and y < lower or upper is not None and y > upper:
        return -np.inf
    discrete = kind in ("discrete_laplace", "rounded_laplace", "discrete_gaussian")
    if lower is not None and y == lower:
        return special.logsumexp(lps + noise_logcdf(kind, lower - s, p))
    if upper is not None and y == upper:
        at = upper - 1 if discrete else upper
        # P(N > at - s) = P(N < s - at) = P(N <= s - at - 1) (discrete) / P(N <= s - at)
        arg = s - at - 1 if discrete else s - at
        return special.logsumexp(lps + noise_logcdf(kind, arg, p))
    if discrete and y != round(y):
        return -np.inf
    return special.logsumexp(lps + noise_logpmf(kind, y - s, p))


def count_logcdf(family, params, kind, p, y):
    """Brute-force (log P(Y <= y), log P(Y > y)) of the unclamped release."""
    s, lps = _support(family, params)
    discrete = kind in ("discrete_laplace", "rounded_laplace", "discrete_gaussian")
    k = math.floor(y) if discrete else y
    lo = special.logsumexp(lps + noise_logcdf(kind, k - s, p))
    arg = s - k - 1 if discrete else s - k
    hi = special.logsumexp(lps + noise_logcdf(kind, arg, p))
    return lo, hi
