"""Independent references for the truncated-normal (x, x^2) sums (NumPy / SciPy only).

* truncated-normal moments by adaptive quadrature (``scipy.integrate.quad``) of the
  standardised density on a rescaled unit interval (not the package's fixed Gauss-Legendre
  rule); the mass outside the bounds from ``scipy.special.ndtr``;
* the CLT covariance assembled from those moments; its Cholesky factor from an independent
  quadrature of the residual variance of ``d**2`` on ``d``;
* the density of a release given the latent with the normal--Laplace convolution by quadrature;
* the sensitivity by brute force over a dense grid.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
from expfam_reference import normal_laplace_logpdf
from scipy import integrate
from scipy.special import logsumexp, ndtr

_KW = dict(epsabs=0.0, epsrel=1e-13, limit=400)


@functools.lru_cache(maxsize=4096)
def _tn_moments(mu, sigma, a, b):
    return _tn_moments_uncached(mu, sigma, a, b)


def tn_moments(mu, sigma, a, b):
    """Cached :func:`_tn_moments_uncached` (the grids reuse parameter sets)."""
    return _tn_moments(float(mu), float(sigma), float(a), float(b))


def _tn_moments_uncached(mu, sigma, a, b):
    """``(log q, m, k2, k3, k4, r)`` of N(mu, sigma^2) truncated to [a, b], by quadrature.

    ``r = k4 - k2^2 - k3^2/k2`` is integrated directly, as E[(d^2 - k2 - (k3/k2) d)^2].
    The standardised density is taken relative to its largest value on [alpha, beta] and
    integrated over the part where it exceeds e^{-60}, mapped onto [0, 1].
    """
    mu, sigma, a, b = map(float, (mu, sigma, a, b))
    al, be = (a - mu) / sigma, (b - mu) / sigma
    # the point of largest density and both ends measured from it (w = z - s), the ends
    # without subtracting large numbers
    if al > 0:
        s, w_lo, w_hi = al, 0.0, (b - a) / sigma
    elif be < 0:
        s, w_lo, w_hi = be, -(b - a) / sigma, 0.0
    else:
        s, w_lo, w_hi = 0.0, al, be
    reach = 120.0 / (np.sqrt(s * s + 120.0) + abs(s))
    w_lo, w_hi = max(w_lo, -reach), min(w_hi, reach)
    width = w_hi - w_lo

    def dens(w):  # phi(s + w) / phi(s)
        return np.exp(-w * (s + 0.5 * w))

    def mom(fun):
        with warnings.catch_warnings():  # roundoff warnings for integrands that vanish
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            f = lambda u: fun(w_lo + width * u) * dens(w_lo + width * u)  # noqa: E731
            return integrate.quad(f, 0, 1, **_KW)[0]

    z0 = mom(lambda w: 1.0)
    m1 = mom(lambda w: w) / z0
    c2 = mom(lambda w: (w - m1) ** 2) / z0
    c3 = mom(lambda w: (w - m1) ** 3) / z0
    c4 = mom(lambda w: (w - m1) ** 4) / z0
    r = mom(lambda w: ((w - m1) ** 2 - c2 - (c3 / c2) * (w - m1)) ** 2) / z0
    log_q = np.log(width * z0) - 0.5 * s * s - 0.5 * np.log(2 * np.pi)
    m = min(max(mu, a), b) + sigma * m1
    return log_q, m, sigma**2 * c2, sigma**3 * c3, sigma**4 * c4, sigma**4 * r


def outside_mass(mu, sigma, a, b):
    return ndtr((a - mu) / sigma) + ndtr((mu - b) / sigma)


def clt_mean_cov(n, mu, sigma, a, b):
    """Mean (2,) and covariance (2, 2) of the truncated sums, assembled from the moments."""
    log_q, m, k2, k3, k4, _ = tn_moments(mu, sigma, a, b)
    nq, p = n * np.exp(log_q), outside_mass(mu, sigma, a, b)
    mean1 = np.array([m, m * m + k2])
    sig = np.array(
        [[k2, 2 * m * k2 + k3], [2 * m * k2 + k3, 4 * m * m * k2 + 4 * m * k3 + k4 - k2**2]]
    )
    return nq * mean1, nq * (sig + p * np.outer(mean1, mean1))


def clt_cholesky(n, mu, sigma, a, b):
    """(l11, l21, l22): l11, l21 from the assembled covariance; l22^2 = det(V)/V11 with
    det(V) = (nq)^2 k2 r (1 + p mu^T Sigma^-1 mu) (matrix determinant lemma on the per-record
    Cholesky factor) from the quadrature residual r (the direct
    Schur complement V22 - V12^2/V11 cancels when |m| >> sigma)."""
    log_q, m, k2, k3, _, r = tn_moments(mu, sigma, a, b)
    nq, p = n * np.exp(log_q), outside_mass(mu, sigma, a, b)
    if nq == 0.0:  # no record can be kept (q underflows): the sums are exactly 0
        return 0.0, 0.0, 0.0
    _, cov = clt_mean_cov(n, mu, sigma, a, b)
    l11 = np.sqrt(cov[0, 0])
    l21 = cov[0, 1] / l11
    # mu^T Sigma^-1 mu through the per-record Cholesky factor [[sqrt(k2), 0], [g, sqrt(r)]]
    g = (2 * m * k2 + k3) / np.sqrt(k2)
    w1 = m / np.sqrt(k2)
    w2 = (m * m + k2 - g * w1) / np.sqrt(r)
    # det(V) / V11 with the factor nq taken out of both (no underflow of nq^2 for tiny q)
    schur = nq * k2 * r * (1 + p * (w1 * w1 + w2 * w2)) / (cov[0, 0] / nq)
    return l11, l21, np.sqrt(schur)


def conditional_logpdf(y, z, n, mu, sigma, a, b, scale):
    """log p(y | z): Laplace on the first sum (latent m1 + l11 z), quadrature convolution on
    the second (normal given z)."""
    mean, _ = clt_mean_cov(n, mu, sigma, a, b)
    l11, l21, l22 = clt_cholesky(n, mu, sigma, a, b)
    s1 = mean[0] + l11 * z
    first = -np.log(2 * scale) - abs(y[0] - s1) / scale
    var2 = l22**2 + (1e-10 * scale) ** 2
    return first + normal_laplace_logpdf(y[1], mean[1] + l21 * z, var2, scale)


def sensitivity_brute_force(a, b, num=20001):
    """L1 diameter of a dense grid of (x, x^2), x in [a, b], plus the dropped record (0, 0):
    the largest range of the projections t1 + t2 and -t1 + t2 (each pair's L1 distance is
    the larger of its two projected distances)."""
    x = np.linspace(a, b, num)
    t = np.stack([x, x * x], axis=-1)
    t = np.vstack([t, [0.0, 0.0]])
    # L1 diameter = max over the four sign patterns of (max - min) of (+-t1 +- t2)
    best = 0.0
    for s1 in (1.0, -1.0):
        proj = t[:, 0] * s1 + t[:, 1]
        best = max(best, proj.max() - proj.min())
    return best


_GL_X, _GL_W = np.polynomial.legendre.leggauss(80)


def integrate_latent(cond, y, kink, half_width=12.0):
    """log of the integral over z ~ N(0, 1) of exp(cond(y, z)), one value per row of ``y``.

    ``cond(y, z)`` returns the conditional log density for ``z`` of shape ``(len(y), m)``;
    ``kink`` (one per row) is where it has a kink in z (the Laplace kernel of the first sum):
    80-node Gauss-Legendre on each side of it, over [-half_width, half_width].
    """
    kink = np.clip(np.asarray(kink, float), -half_width, half_width)[:, None]
    nodes, logw = [], []
    for lo, hi in ((-half_width, kink), (kink, half_width)):
        half = (hi - lo) / 2
        z = (hi + lo) / 2 + half * _GL_X
        nodes.append(z)
        logw.append(np.log(np.maximum(half, 1e-300) * _GL_W) - 0.5 * z**2 - 0.5 * np.log(2 * np.pi))
    z, logw = np.concatenate(nodes, axis=1), np.concatenate(logw, axis=1)
    return logsumexp(cond(y, z) + logw, axis=1)
