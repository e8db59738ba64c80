"""Independent references for the truncated-family and multinomial likelihoods (SciPy only).

* truncated moments: numerical quadrature of the exponential density (``scipy.integrate.quad``)
  and explicit sums of the Poisson pmf over the kept values;
* the normal--Laplace convolution: adaptive quadrature of N(s; m, v) Lap(y; s, b) over s, in
  log space around the integrand's maximum (not the erfcx closed form used by the package);
* the multinomial normal-mixture density: a dense Cholesky factorisation of the full
  covariance matrix (not the rank-one update);
* exact noisy-multinomial densities by enumerating every count vector (k = 3).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import integrate, stats
from scipy.special import logsumexp


def exp_moments(lam, a, b):
    """(log q, mean, var) of Exponential(lam) truncated to [a, b], by quadrature."""
    lam, a, b = float(lam), float(a), float(b)
    # density relative to its value at a: e^{-lam (x - a)} (no underflow of e^{-lam a})
    f = lambda x: np.exp(-lam * (x - a))  # noqa: E731
    kw = dict(epsabs=0.0, epsrel=1e-13, limit=200)
    z = integrate.quad(f, a, b, **kw)[0]
    m = integrate.quad(lambda x: (x - a) * f(x), a, b, **kw)[0] / z
    v = integrate.quad(lambda x: (x - a - m) ** 2 * f(x), a, b, **kw)[0] / z
    log_q = np.log(lam) - lam * a + np.log(z)
    return log_q, a + m, v


def poisson_moments(mu, a, b):
    """(log q, mean, var) of Poisson(mu) truncated to {a, ..., b}, by explicit sums."""
    k = np.arange(int(a), int(b) + 1)
    lp = stats.poisson.logpmf(k, float(mu))
    log_q = logsumexp(lp)
    w = np.exp(lp - log_q)
    m = np.sum(w * k)
    v = np.sum(w * (k - m) ** 2)
    return log_q, m, v


def normal_laplace_logpdf(y, m, v, b):
    """log of the integral of N(s; m, v) Lap(y; s, b) ds, by adaptive quadrature."""
    y, m, v, b = float(y), float(m), float(v), float(b)
    sd = np.sqrt(v)
    # the log integrand is concave; its maximiser:
    if y > m + v / b:
        s_star = m + v / b
    elif y < m - v / b:
        s_star = m - v / b
    else:
        s_star = y

    def g(s):
        return -0.5 * ((s - m) / sd) ** 2 - abs(y - s) / b

    g_max = g(s_star)
    width = 40.0 * min(sd, max(b, sd * 1e-3))
    lo, hi = s_star - 40.0 * sd, s_star + 40.0 * sd
    # break points at the kink, the maximum and the scales of both factors, so that the
    # adaptive rule cannot miss a peak much narrower than the window
    cand = [y, s_star, s_star - width, s_star + width]
    cand += [c + sgn * k * scl for c in (y, s_star) for sgn in (-1, 1)
             for k in (1, 10, 40) for scl in (b, sd)]  # fmt: skip
    pts = sorted({p for p in cand if lo < p < hi})
    f = lambda s: np.exp(g(s) - g_max)  # noqa: E731
    with warnings.catch_warnings():  # a kink at y; the result is checked to be positive
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        total = integrate.quad(f, lo, hi, points=pts, epsabs=0.0, epsrel=1e-12, limit=2000)[0]
    if not total > 0:
        raise RuntimeError(f"reference quadrature failed at y={y}, m={m}, v={v}, b={b}")
    return g_max + np.log(total) - np.log(2 * b) - 0.5 * np.log(2 * np.pi * v)


def truncated_logp(kind, y, n, theta, lower, upper, epsilon, sensitivity=None):
    """Random-sum CLT (Prop. 1) convolved with Laplace, from the references above."""
    moments = exp_moments if kind == "exponential" else poisson_moments
    log_q, mu, var = moments(theta, lower, upper)
    q = np.exp(log_q)
    m = n * q * mu
    v = n * q * var + n * q * (-np.expm1(log_q)) * mu**2
    if sensitivity is None:
        sensitivity = max(abs(lower), abs(upper), upper - lower)
    return normal_laplace_logpdf(y, m, v, sensitivity / epsilon)


def multinomial_mixture_logpdf(y, n, p, noise_var):
    """log N(y; n p, n (diag p - p p^T) + diag(noise_var)) with the full covariance."""
    p = np.asarray(p, float)
    cov = n * (np.diag(p) - np.outer(p, p)) + np.diag(noise_var)
    chol = np.linalg.cholesky(cov)  # dense Cholesky (scipy refuses ill-conditioned matrices)
    z = np.linalg.solve(chol, np.asarray(y, float) - n * p)
    return -0.5 * (len(p) * np.log(2 * np.pi) + z @ z) - np.sum(np.log(np.diag(chol)))


def exact_noisy_multinomial_logpdf(y, n, p, b):
    """Exact log p(y) for k = 3: sum over every count vector of Multinomial x Laplace^3."""
    y = np.asarray(y, float)
    s1, s2 = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = s1 + s2 <= n
    s1, s2 = s1[ok], s2[ok]
    s3 = n - s1 - s2
    counts = np.stack([s1, s2, s3], axis=-1)
    log_pmf = stats.multinomial.logpmf(counts, n, p)
    lap = -np.abs(y - counts).sum(-1) / b - 3 * np.log(2 * b)
    return logsumexp(log_pmf + lap)


def poisson_moments_exact(mu, a, b):
    """(log q, mean, var) of Poisson(mu) truncated to {a, ..., b} (b - a < 200), the shape in
    exact rational arithmetic: weights r_j = pmf(a + j)/pmf(a) = mu^j a!/(a + j)! as
    fractions (mu a float, so exactly a rational), mean and variance exact before one final
    rounding; log q = log pmf(a) + log sum r_j with log pmf(a) = a log mu - mu - lgamma(a+1)
    in floating point (relative error a few ulp of |log pmf(a)|)."""
    import math
    from fractions import Fraction

    a, b = int(a), int(b)
    m = Fraction(float(mu))
    r, w = Fraction(1), []
    for j in range(b - a + 1):
        if j:
            r = r * m / (a + j)
        w.append(r)
    tot = sum(w)
    jbar = sum(j * x for j, x in enumerate(w)) / tot
    var = sum((j - jbar) ** 2 * x for j, x in enumerate(w)) / tot
    if tot < 2:  # log q near 0 (a = 0, small mu): log1p of the exact excess
        log_tot = math.log1p(float(tot - 1))
    else:
        log_tot = math.log(tot.numerator) - math.log(tot.denominator)
    log_pa = a * math.log(mu) - mu - math.lgamma(a + 1)
    return log_pa + log_tot, float(a + jbar), float(var)
