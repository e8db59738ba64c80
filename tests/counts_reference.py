"""Brute-force references for the noisy-count likelihoods (independent of the package).

Every s is summed (log-sum-exp of log P(s) + log Lap(y; s, b)) in NumPy ``longdouble``
(80-bit extended precision on x86-64: 1e-19 relative), with log-factorials from
Stirling's series (z >= 21, truncation error < 1e-18) or exact sums of logs (z < 21) -- not
Loader's saddle-point form used by the package.

For large n (or Poisson rates) the sum runs over a window: the summand
g(s) = log P(s) - |y - s|/b is log-concave in s (the binomial and Poisson pmfs are discrete
log-concave, -|y - s|/b is concave), so {s : g(s) >= max g - 60} is an interval; we find the
maximiser by ternary search and the interval ends by bisection.  The terms left out are each
below e^{-60} max g and g decays at least geometrically outside the interval (concavity), so
they change the log density by less than 1e-18 for every n considered (the sum of the left-out
terms is bounded by the last term divided by 1 - e^{-slope}, with slope >= 60 / width).
"""

from __future__ import annotations

import math

import numpy as np

LD = np.longdouble
_LOG_2PI = np.log(LD(2.0) * LD(np.pi))
_SMALL = np.array([math.fsum(math.log(i) for i in range(1, m + 1)) for m in range(21)], dtype=LD)


def log_factorial(m):
    """log(m!) for integer arrays m >= 0, in longdouble."""
    m = np.asarray(m, dtype=LD)
    z = np.maximum(m, LD(20.0)) + 1
    z2 = z * z
    series = (
        (z - LD(0.5)) * np.log(z)
        - z
        + _LOG_2PI / 2
        + (
            LD(1) / 12
            - (LD(1) / 360 - (LD(1) / 1260 - (LD(1) / 1680 - LD(1) / (1188 * z2)) / z2) / z2) / z2
        )
        / z
    )
    small = _SMALL[np.clip(m, 0, 20).astype(int)]
    return np.where(m < 21, small, series)


def binom_logpmf(s, n, p):
    s = np.asarray(s, dtype=LD)
    n, p = LD(n), LD(p)
    with np.errstate(divide="ignore", invalid="ignore"):  # p in {0, 1}: the where picks 0
        return (
            log_factorial(n)
            - log_factorial(s)
            - log_factorial(n - s)
            + np.where(s > 0, s * np.log(p), 0)
            + np.where(n - s > 0, (n - s) * np.log1p(-p), 0)
        )


def poisson_logpmf(s, mu):
    s = np.asarray(s, dtype=LD)
    mu = LD(mu)
    return -mu + np.where(s > 0, s * np.log(mu), 0) - log_factorial(s)


def _logsumexp(a):
    m = np.max(a)
    return m + np.log(np.sum(np.exp(a - m)))


def _window(g, lo, hi):
    """Integer interval {s in [lo, hi]: g(s) >= max g - 60} of a concave g (see module doc)."""
    a, c = lo, hi
    while c - a > 2:  # ternary search for the maximiser
        m1 = a + (c - a) // 3
        m2 = c - (c - a) // 3
        if g(m1) < g(m2):
            a = m1 + 1
        else:
            c = m2 - 1 if g(m1) > g(m2) else m2
    s_max = max(range(a, c + 1), key=lambda s: float(g(s)))
    level = g(s_max) - 60
    left, right = lo, s_max  # smallest s with g(s) >= level
    while left < right:
        mid = (left + right) // 2
        if g(mid) >= level:
            right = mid
        else:
            left = mid + 1
    first = left
    left, right = s_max, hi  # largest s with g(s) >= level
    while left < right:
        mid = (left + right + 1) // 2
        if g(mid) >= level:
            left = mid
        else:
            right = mid - 1
    return first, left


def brute_binomial_logp(y, n, p, b, clamp=False):
    """log p(y) for y = s + Lap(0, b), s ~ Bin(n, p) (or the clamped release's mass/density)."""
    n = int(n)
    y = LD(y)
    b = LD(b)

    def g(s):
        return binom_logpmf(s, n, p) - np.abs(y - LD(s)) / b

    if clamp and y in (0, n):
        s = np.arange(0, n + 1)
        # P(z = 0) = sum_s P(s) F_Lap(-s) = sum_s P(s) e^{-s/b}/2 ; P(z = n) by symmetry
        dist = s if y == 0 else n - s
        return float(_logsumexp(binom_logpmf(s, n, p) - dist / b) - np.log(LD(2)))
    lo, hi = _window(g, 0, n) if n > 200_000 else (0, n)
    s = np.arange(lo, hi + 1)
    return float(_logsumexp(g(s)) - np.log(2 * b))


def brute_poisson_logp(y, mu, b):
    y = LD(y)
    b = LD(b)

    def g(s):
        return poisson_logpmf(s, mu) - np.abs(y - LD(s)) / b

    hi = int(max(float(y), mu) + 60 * max(float(b), 1.0) + 60 * math.sqrt(mu) + 200)
    lo, hi_w = _window(g, 0, hi)
    assert hi_w < hi, "search range too short"
    lo, hi = lo, hi_w
    s = np.arange(lo, hi + 1)
    return float(_logsumexp(g(s)) - np.log(2 * b))


def _log_laplace_cdf(u, b):
    """log P(Laplace(0, b) <= u) in longdouble, overflow-free on both sides."""
    u = np.asarray(u, dtype=LD)
    neg = np.minimum(u, LD(0))
    pos = np.maximum(u, LD(0))
    return np.where(u < 0, neg / b - np.log(LD(2)), np.log1p(-np.exp(-pos / b) / 2))


def _brute_log_cdfs(logpmf, y, b, lo, hi, windowed):
    """(log F(y), log(1 - F(y))) = log sum_s P(s) F_Lap(+-(y - s)), summed over every s
    (or over the window of a log-concave summand: log F_Lap is concave too)."""
    y, b = LD(y), LD(b)
    out = []
    for sign in (1, -1):

        def g(s, sign=sign):
            return logpmf(s) + _log_laplace_cdf(sign * (y - np.asarray(s, dtype=LD)), b)

        a, c = _window(g, lo, hi) if windowed else (lo, hi)
        out.append(float(_logsumexp(g(np.arange(a, c + 1)))))
    return tuple(out)


def brute_binomial_log_cdfs(y, n, p, b, clamp=False):
    """(log F(y), log(1 - F(y))) for y = s + Lap(0, b), s ~ Bin(n, p); clamp: z = clip(y, 0, n)."""
    n = int(n)
    if clamp and y < 0:
        return -np.inf, 0.0
    if clamp and y >= n:
        return 0.0, -np.inf
    return _brute_log_cdfs(lambda s: binom_logpmf(s, n, p), y, b, 0, n, windowed=n > 200_000)


def brute_poisson_log_cdfs(y, mu, b):
    hi = int(max(float(y), mu) + 60 * max(float(b), 1.0) + 60 * math.sqrt(mu) + 200)
    return _brute_log_cdfs(lambda s: poisson_logpmf(s, mu), y, b, 0, hi, windowed=True)
