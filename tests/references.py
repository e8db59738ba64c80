"""Independent reference log densities, written from the model definitions, not from math.py.

Each reference integrates the clean-value density against the Laplace kernel with
``scipy.integrate.quad`` (plus the atoms created by clipping), in a shifted log scale so that
nothing underflows even 50 noise scales into the tails.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import integrate, special


def _log_laplace(z, loc, scale):
    return -np.abs(z - loc) / scale - np.log(2 * scale)


def _log_quad(logf, lo, hi, candidates, extra_points=()):
    """log of int_lo^hi exp(logf(x)) dx, computed as M + log int exp(logf - M)."""
    cands = np.clip(np.asarray(list(candidates), dtype=float), lo, hi)
    grid = np.linspace(lo, hi, 2001)
    m = max(np.max(logf(cands)), np.max(logf(grid)))
    if not np.isfinite(m):
        return -np.inf
    pts = np.unique(np.clip(np.concatenate([cands, np.asarray(extra_points, float)]), lo, hi))
    pts = [p for p in pts if lo < p < hi]
    with warnings.catch_warnings():
        # QUADPACK warns about roundoff when it cannot improve on ~1e-15: that is fine here
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        val, _ = integrate.quad(
            lambda x: np.exp(logf(x) - m),
            lo,
            hi,
            points=pts or None,
            epsabs=0.0,
            epsrel=1e-13,
            limit=2000,
        )
    return m + np.log(val) if val > 0 else -np.inf


def clipped_normal_laplace_logp_ref(z, mu, sigma, lower, upper, epsilon):
    """log p(z) for z = clip(x, lower, upper) + Laplace(0, (upper-lower)/epsilon), x ~ N(mu, sigma)."""
    s = (upper - lower) / epsilon
    atom_lo = special.log_ndtr((lower - mu) / sigma) + _log_laplace(z, lower, s)
    atom_hi = special.log_ndtr((mu - upper) / sigma) + _log_laplace(z, upper, s)

    def logf(x):
        return (
            -0.5 * ((x - mu) / sigma) ** 2
            - np.log(sigma * np.sqrt(2 * np.pi))
            + _log_laplace(z, x, s)
        )

    tilt = sigma**2 / s
    cands = [lower, upper, z, mu, mu - tilt, mu + tilt]
    extra = [mu + k * sigma for k in (-30, -10, -3, -1, 1, 3, 10, 30)]
    interior = _log_quad(logf, lower, upper, cands, extra)
    return np.logaddexp.reduce([atom_lo, atom_hi, interior])


def clipped_exponential_laplace_logp_ref(z, lam, upper, epsilon):
    """log p(z) for z = min(x, upper) + Laplace(0, upper/epsilon), x ~ Exponential(rate lam)."""
    b = upper / epsilon
    atom = -lam * upper + _log_laplace(z, upper, b)

    def logf(x):
        return np.log(lam) - lam * x + _log_laplace(z, x, b)

    cands = [0.0, upper, z, 1 / lam]
    extra = [k / lam for k in (0.1, 1, 3, 10, 30)]
    interior = _log_quad(logf, 0.0, upper, cands, extra)
    return np.logaddexp(atom, interior)


# --------------------------------------------------------------------------------------------
# CDF references: F(z) = int F_Lap(z - x) dQ(x), integrated from the model definition
# --------------------------------------------------------------------------------------------


def _log_laplace_cdf(u, scale):
    """log P(Laplace(0, scale) <= u), both branches overflow-free."""
    u = np.asarray(u, dtype=float)
    neg = np.minimum(u, 0.0)
    pos = np.maximum(u, 0.0)
    return np.where(u < 0, neg / scale - np.log(2.0), np.log1p(-0.5 * np.exp(-pos / scale)))


def _reference_log_cdfs(atoms, log_density, lo, hi, z, scale, cands, extra):
    """(log F(z), log(1 - F(z))) of clean-value atoms [(x, log mass)] plus a density on (lo, hi)."""
    out = []
    for sign in (1.0, -1.0):  # F: P(L <= z - x); 1 - F: P(L <= x - z)
        terms = [lm + _log_laplace_cdf(sign * (z - x), scale) for x, lm in atoms]

        def logf(x, sign=sign):
            return log_density(x) + _log_laplace_cdf(sign * (z - x), scale)

        terms.append(_log_quad(logf, lo, hi, cands, extra))
        out.append(float(np.logaddexp.reduce(terms)))
    return tuple(out)


def clipped_normal_laplace_log_cdfs_ref(z, mu, sigma, lower, upper, epsilon):
    """(log F, log(1 - F)) of the clipped-normal Laplace report, by quadrature."""
    s = (upper - lower) / epsilon
    atoms = [
        (lower, special.log_ndtr((lower - mu) / sigma)),
        (upper, special.log_ndtr((mu - upper) / sigma)),
    ]

    def log_density(x):
        return -0.5 * ((x - mu) / sigma) ** 2 - np.log(sigma * np.sqrt(2 * np.pi))

    cands = [lower, upper, z, mu, mu - sigma**2 / s, mu + sigma**2 / s]
    extra = [mu + k * sigma for k in (-30, -10, -3, -1, 1, 3, 10, 30)]
    return _reference_log_cdfs(atoms, log_density, lower, upper, z, s, cands, extra)


def clipped_exponential_laplace_log_cdfs_ref(z, lam, upper, epsilon):
    """(log F, log(1 - F)) of the clipped-exponential Laplace report, by quadrature."""
    b = upper / epsilon
    atoms = [(upper, -lam * upper)]

    def log_density(x):
        return np.log(lam) - lam * x

    cands = [0.0, upper, z, 1 / lam]
    extra = [k / lam for k in (0.1, 1, 3, 10, 30)]
    return _reference_log_cdfs(atoms, log_density, 0.0, upper, z, b, cands, extra)


# --------------------------------------------------------------------------------------------
# Graded-panel references: reach the extremes the quad references cannot (issue 22)
# --------------------------------------------------------------------------------------------
#
# ``integrate.quad`` misses a Laplace kernel (or a normal) narrower than about 1e-8 of the
# integration interval: its first Gauss-Kronrod nodes all land where the integrand is 0, and
# it returns 0 with a zero error estimate (at epsilon = 1e8 the quad reference above is off by
# 4.5e7 nats).  Here every integrand is unimodal on each piece (the log of a Laplace kernel
# times a normal or exponential density is concave between kinks), so each piece is split at
# its mode and integrated by 20-point Gauss-Legendre on panels whose widths halve towards the
# mode, down to 1e-6 of the narrowest scale of the integrand (the noise scale and sigma or
# 1/lam bound its curvature and its slope) or 2^-1074 of the piece: a bump of any width at
# the mode is resolved.  The
# integrand is evaluated at offsets from the panel origin (x - z and x - mu computed as
# (p - z) + t, not from x itself), so a kernel narrower than the spacing of floats near a
# large bound (1e6 + 1e-3 at epsilon = 1e8) is still resolved.

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(20)
_HALVINGS = 2.0 ** -np.arange(0, 1075)


def _log_int_from_mode(logf_at_offset, length, scale):
    """log of the integral of exp(f(t)) for t between 0 and ``length`` (either sign), f
    unimodal with its maximum at t = 0 and varying on scales >= ``scale``."""
    if length == 0:
        return -np.inf
    n = int(np.clip(np.ceil(np.log2(abs(length) / (1e-6 * scale))) + 1, 1, len(_HALVINGS)))
    hi = _HALVINGS[:n] * length
    lo = np.append(hi[1:], 0.0)
    mid, half = (hi + lo) / 2, (hi - lo) / 2
    t = mid[:, None] + half[:, None] * _GL_NODES
    with np.errstate(divide="ignore"):  # subnormal panels of zero width: log 0 = -inf
        log_w = np.log(np.abs(half))[:, None] + np.log(_GL_WEIGHTS)
    return special.logsumexp(logf_at_offset(t) + log_w)


def _log_int_unimodal(logf_from, lo, hi, mode, scale):
    """log int_lo^hi exp(f(x)) dx for f unimodal on [lo, hi] with its mode at ``mode``;
    ``logf_from(p)`` returns t -> f(p + t)."""
    m = min(max(mode, lo), hi)
    f = logf_from(m)
    return np.logaddexp(_log_int_from_mode(f, lo - m, scale), _log_int_from_mode(f, hi - m, scale))


def clipped_normal_laplace_logp_graded_ref(z, mu, sigma, lower, upper, epsilon):
    """As :func:`clipped_normal_laplace_logp_ref`, by graded panels (any noise scale)."""
    s = (upper - lower) / epsilon
    atoms = [
        special.log_ndtr((lower - mu) / sigma) + _log_laplace(z, lower, s),
        special.log_ndtr((mu - upper) / sigma) + _log_laplace(z, upper, s),
    ]

    def logf_from(p):
        dm, dz = p - mu, z - p
        const = -np.log(sigma) - 0.5 * np.log(2 * np.pi) - np.log(2 * s)
        return lambda t: const - 0.5 * ((dm + t) / sigma) ** 2 - np.abs(dz - t) / s

    # below z the log integrand is (x - z)/s - (x - mu)^2/(2 sigma^2): mode mu + sigma^2/s;
    # above z, mu - sigma^2/s
    zc = min(max(z, lower), upper)
    pieces = []
    if zc > lower:
        pieces.append(_log_int_unimodal(logf_from, lower, zc, mu + sigma**2 / s, min(s, sigma)))
    if zc < upper:
        pieces.append(_log_int_unimodal(logf_from, zc, upper, mu - sigma**2 / s, min(s, sigma)))
    return np.logaddexp.reduce(atoms + pieces)


def clipped_exponential_laplace_logp_graded_ref(z, lam, upper, epsilon):
    """As :func:`clipped_exponential_laplace_logp_ref`, by graded panels (any noise scale)."""
    b = upper / epsilon
    atom = -lam * upper + _log_laplace(z, upper, b)

    def logf_from(p):
        dz = z - p
        return lambda t: np.log(lam) - lam * (p + t) - np.abs(dz - t) / b - np.log(2 * b)

    zc = min(max(z, 0.0), upper)
    pieces = []
    for lo, hi in ((0.0, zc), (zc, upper)):
        if hi > lo:  # log integrand linear on the piece: its mode is an end
            mode = lo if logf_from(lo)(0.0) >= logf_from(hi)(0.0) else hi
            pieces.append(_log_int_unimodal(logf_from, lo, hi, mode, min(b, 1 / lam)))
    return np.logaddexp.reduce([atom, *pieces])
