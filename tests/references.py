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
