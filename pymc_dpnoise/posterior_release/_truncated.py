r"""Exact draws from Beta and Dirichlet laws restricted to boxes, at any concentration.

The posterior-sampling mechanism
(:func:`~pymc_dpnoise.posterior_release.sampling.posterior_sample`) releases one draw from a
conjugate posterior restricted to :math:`\{\theta_v \ge \omega\}`.  Its privacy proof
(Theorem 4 of Zhang et al. 2016) assumes the draw comes from *exactly* that law, so the sampler
must stay exact when the restricted range lies far in a tail of the posterior (e.g. thousands
of records whose frequency falls outside the trimmed range), where the Beta CDF underflows to 0
and an inverse-CDF sampler returns the wrong end of the range.

* :func:`log_betainc` is :math:`\log I_x(a, b)`, finite far in the tails (a continued fraction
  in log space where ``scipy.special.betainc`` underflows).
* :func:`truncated_beta` draws Beta(a, b) restricted to ``[lo, hi]``: the inverse CDF where the
  restricted mass is not small, otherwise rejection from an exponential envelope whose log is a
  line over ``[lo, hi]`` (tangent of the concave parts of the log density, chord of the convex
  ones), which is exact and accepts almost every proposal in exactly that regime (the law is
  then nearly exponential on the range, or the range is short).
* :func:`truncated_dirichlet` draws Dirichlet(a) restricted to :math:`\{\theta_v \ge \omega\}`
  by stick breaking: each stick fraction from its truncated Beta (exact, above), then one
  accept/reject step with probability :math:`\prod_j Z_j(r_j) / Z_j(r_j^{\max})` that turns the
  sequential proposal into the restricted Dirichlet (:math:`Z_j` is the mass of the j-th Beta
  on its allowed range, increasing in the remaining stick :math:`r_j`).  Coordinates are broken
  off in increasing order of concentration, which keeps the acceptance rate of order one when
  the posterior is piled against the boundary.

No loop here has a failure mode that depends on the data short of a probability below
:math:`10^{-40}`; the rejection loops stop with ``RuntimeError`` only then.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["log_betainc", "truncated_beta", "truncated_dirichlet"]

_TINY = 1e-280  # below this, betainc is evaluated in log space
_INVERSION_MASS = 1e-3  # restricted mass above which the inverse CDF is used
_MAX_ROUNDS = 2_000


def _log_betainc_cf(a, b, x):
    """log I_x(a, b) by the continued fraction (Numerical Recipes ``betacf``) in log space.

    Converges fast for ``x < (a + 1) / (a + b + 2)``, the only place it is used (where
    ``betainc`` underflows, far below the mean).
    """
    fpmin = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = np.where(np.abs(d) < fpmin, fpmin, d)
    d = 1.0 / d
    h = d.copy()
    done = np.zeros(x.shape, dtype=bool)
    for m in range(1, 100_000):
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < fpmin, fpmin, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < fpmin, fpmin, c)
        d = 1.0 / d
        h = np.where(done, h, h * d * c)
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = np.where(np.abs(d) < fpmin, fpmin, d)
        c = 1.0 + aa / c
        c = np.where(np.abs(c) < fpmin, fpmin, c)
        d = 1.0 / d
        delta = d * c
        h = np.where(done, h, h * delta)
        done |= np.abs(delta - 1.0) < 1e-15
        if done.all():
            break
    else:  # pragma: no cover - the fraction converges in O(sqrt(max(a, b))) steps
        raise RuntimeError("log_betainc: continued fraction did not converge")
    return a * np.log(x) + b * np.log1p(-x) - special.betaln(a, b) + np.log(h) - np.log(a)


def log_betainc(a, b, x):
    r""":math:`\log I_x(a, b)`, the log of the regularized incomplete Beta function.

    Accurate where :math:`I_x(a, b)` underflows (``-inf`` only at ``x = 0``).  The upper tail
    is ``log_betainc(b, a, 1 - x)``.
    """
    a, b, x = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, x)))
    v = special.betainc(a, b, x)
    with np.errstate(divide="ignore"):
        out = np.log(v)
    deep = (v < _TINY) & (x > 0)
    if np.any(deep):
        out = np.array(out, copy=True)
        out[deep] = _log_betainc_cf(a[deep], b[deep], x[deep])
    return out


def _log1mexp(d):
    """log(1 - exp(d)) for d <= 0."""
    d = np.asarray(d, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(d > -np.log(2.0), np.log(-np.expm1(d)), np.log1p(-np.exp(d)))


def log_mass(a, b, lo, hi):
    """log P(lo <= X <= hi) for X ~ Beta(a, b), accurate when the mass is tiny."""
    a, b, lo, hi = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, lo, hi)))
    lf_hi, lf_lo = log_betainc(a, b, hi), log_betainc(a, b, lo)
    ls_lo, ls_hi = log_betainc(b, a, 1.0 - lo), log_betainc(b, a, 1.0 - hi)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = lf_hi + _log1mexp(np.minimum(lf_lo - lf_hi, 0.0))
        upper = ls_lo + _log1mexp(np.minimum(ls_hi - ls_lo, 0.0))
        middle = np.log1p(-np.minimum(np.exp(lf_lo) + np.exp(ls_hi), 1.0))
    return np.where(lf_hi < np.log(0.5), lower, np.where(ls_lo < np.log(0.5), upper, middle))


def _log_density(a, b, x):
    return (a - 1.0) * np.log(x) + (b - 1.0) * np.log1p(-x)


def _envelope_slope(a, b, lo, hi, anchor):
    """Slope G of a line bounding the Beta log density on [lo, hi], touching it at ``anchor``.

    Each term ``(c - 1) log(u)`` is concave (c >= 1: bounded by its tangent at the anchor) or
    convex (c < 1: bounded by its chord over [lo, hi], which passes through the anchor too,
    an end point).
    """
    w = hi - lo
    tan_a = (a - 1.0) / anchor
    chord_a = (a - 1.0) * (np.log(hi) - np.log(lo)) / w
    tan_b = -(b - 1.0) / (1.0 - anchor)
    chord_b = (b - 1.0) * (np.log1p(-hi) - np.log1p(-lo)) / w
    return np.where(a >= 1.0, tan_a, chord_a) + np.where(b >= 1.0, tan_b, chord_b)


def _truncated_exponential(g, lo, hi, u):
    """Inverse CDF of the density proportional to exp(g x) on [lo, hi]."""
    w = hi - lo
    gw = g * w
    small = np.abs(gw) < 1e-12
    gs = np.where(small, 1.0, g)
    with np.errstate(over="ignore", invalid="ignore"):
        # g > 0: measured down from hi; g < 0: up from lo (no overflow either way)
        down = hi + np.log1p(-u * -np.expm1(-np.abs(gw))) / np.abs(gs)
        up = lo - np.log1p(-u * -np.expm1(-np.abs(gw))) / np.abs(gs)
    x = np.where(small, lo + u * w, np.where(g > 0, down, up))
    return np.clip(x, lo, hi)


def _truncated_beta_rejection(a, b, lo, hi, anchor, rng):
    out = np.empty(a.shape)
    todo = np.arange(a.size)
    g = _envelope_slope(a, b, lo, hi, anchor)
    h0 = _log_density(a, b, anchor)
    for _ in range(_MAX_ROUNDS):
        if todo.size == 0:
            return out
        x = _truncated_exponential(g[todo], lo[todo], hi[todo], rng.random(todo.size))
        log_ratio = _log_density(a[todo], b[todo], x) - h0[todo] - g[todo] * (x - anchor[todo])
        ok = np.log(rng.random(todo.size)) <= np.minimum(log_ratio, 0.0)
        out[todo[ok]] = x[ok]
        todo = todo[~ok]
    raise RuntimeError(  # pragma: no cover - acceptance is of order one in this regime
        "truncated_beta: the rejection sampler did not converge; please report this"
    )


def truncated_beta(a, b, lo, hi, rng):
    """Exact draws of Beta(a, b) restricted to ``[lo, hi]`` (elementwise, 0 < lo < hi < 1).

    The inverse CDF where the restricted mass is at least 1e-3 (on the side of the
    range it is computed from: the CDF or the survival function), rejection from an
    exponential envelope elsewhere (far tails, short ranges: see the module docstring).
    """
    a, b, lo, hi = (
        np.array(v, dtype=float)
        for v in np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, lo, hi)))
    )
    shape = a.shape
    a, b, lo, hi = (v.ravel() for v in (a, b, lo, hi))
    out = np.empty(a.size)
    log_z = log_mass(a, b, lo, hi)
    invert = log_z >= np.log(_INVERSION_MASS)
    if np.any(invert):
        ai, bi, li, hi_ = a[invert], b[invert], lo[invert], hi[invert]
        c_lo, c_hi = special.betainc(ai, bi, li), special.betainc(ai, bi, hi_)
        s_lo, s_hi = special.betaincc(ai, bi, li), special.betaincc(ai, bi, hi_)
        u = rng.random(ai.size)
        upper = c_lo > 0.5  # mass piled near 1: work with the survival function
        th_low = special.betaincinv(ai, bi, c_lo + u * (c_hi - c_lo))
        th_up = special.betainccinv(ai, bi, s_hi + u * (s_lo - s_hi))
        out[invert] = np.clip(np.where(upper, th_up, th_low), li, hi_)
    rest = ~invert
    if np.any(rest):
        ar, br, lr, hr = a[rest], b[rest], lo[rest], hi[rest]
        # anchor the envelope at the end of the range where the log density is higher
        anchor = np.where(_log_density(ar, br, hr) >= _log_density(ar, br, lr), hr, lr)
        out[rest] = _truncated_beta_rejection(ar, br, lr, hr, anchor, rng)
    return out.reshape(shape)


def truncated_dirichlet(a, lo, rng):
    r"""Exact draws, one per row of ``a`` (shape ``(rows, K)``), of Dirichlet(a) on
    :math:`\{\theta_v \ge lo\}` (``0 < lo < 1/K``).

    See the module docstring for the method.
    """
    a = np.asarray(a, dtype=float)
    rows, k = a.shape
    lo = float(lo)
    order = np.argsort(a, axis=1, kind="stable")  # smallest concentration broken off first
    a_sorted = np.take_along_axis(a, order, axis=1)
    tail = np.cumsum(a_sorted[:, ::-1], axis=1)[:, ::-1]  # tail[:, j] = sum_{l >= j} a_l
    out = np.empty((rows, k))
    todo = np.arange(rows)
    for _ in range(_MAX_ROUNDS):
        if todo.size == 0:
            return out
        m = todo.size
        th = np.empty((m, k))
        rem = np.ones(m)
        log_accept = np.zeros(m)
        for j in range(k - 1):
            aj, bj = a_sorted[todo, j], tail[todo, j + 1]
            left = k - 1 - j  # coordinates still to come after this one
            b_lo = lo / rem
            b_hi = 1.0 - left * lo / rem
            frac = truncated_beta(aj, bj, b_lo, b_hi, rng)
            if j > 0:  # the first range does not depend on earlier draws: constant mass
                r_max = 1.0 - j * lo
                log_accept += log_mass(aj, bj, b_lo, b_hi) - log_mass(
                    aj, bj, lo / r_max, 1.0 - left * lo / r_max
                )
            th[:, j] = rem * frac
            rem = rem - th[:, j]
        th[:, k - 1] = rem
        th = np.maximum(th, lo)  # rounding only: every coordinate is >= lo by construction
        th /= th.sum(axis=1, keepdims=True)
        ok = np.log(rng.random(m)) <= np.minimum(log_accept, 0.0)
        idx = todo[ok]
        out[idx[:, None], order[idx]] = th[ok]
        todo = todo[~ok]
    raise RuntimeError(  # pragma: no cover - acceptance is of order one (module docstring)
        "truncated_dirichlet: the rejection sampler did not converge; please report this"
    )
