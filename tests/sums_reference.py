"""An independent reference for :class:`pymc_dpnoise.NoisySum`: the density of
``sum_i clamp(X_i, L, U) + noise`` by numerical inversion of the characteristic function
(continuous data) or by an FFT of the lattice law (Poisson data), with SciPy's distributions
and no code of the package.

Continuous data.  The clamped value is two atoms and the data law inside ``(L, U)``; inside it
is integrated by composite Gauss-Legendre rules (40 nodes on each of ~160 panels cut at the data
law's quantiles, from 1e-17 to 1 - 1e-17), which are exact to rounding for these smooth densities.  The centred
characteristic function is formed as ``psi(t) - 1 = E[cos(tZ) - 1] + i E[sin(tZ)]`` with
``cos(u) - 1 = -2 sin^2(u/2)`` (no cancellation against 1), so ``n log psi`` carries an
absolute error of about ``sqrt(n) * 1e-16`` at the frequencies that matter, and the density is
``(1/pi) int_0^T Re[psi(t)^n phi_N(t) e^{-i t y'}] dt`` by composite Gauss-Legendre on
``[0, T]``, ``T`` where the integrand's modulus has fallen below ``1e-18`` of its value at 0.
It needs ``psi^n`` to decay in ``t``: with atoms, ``n`` must be large enough (the tests use it
from ``n = 30``) or the noise must be Gaussian; ``n = 1`` is :func:`density_n1` (a direct
quadrature).

Poisson data.  ``P(S = k)`` by the inversion integral over one period of the lattice
characteristic function (the same accurate ``psi - 1``), then the noise summed over the
integers where it carries mass.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.integrate as si
import scipy.stats as st

_GL_X, _GL_W = np.polynomial.legendre.leggauss(40)


def scipy_law(kind, params):
    if kind == "normal":
        return st.norm(params[0], params[1])
    if kind == "lognormal":
        return st.lognorm(params[1], scale=np.exp(params[0]))
    if kind == "exponential":
        return st.expon(scale=params[0])
    if kind == "gamma":
        return st.gamma(params[0], scale=params[1])
    raise ValueError(kind)


class ClampedLaw:
    """Atoms at L (mass pl) and U (mass pu), and nodes/weights of the interior."""

    def __init__(self, kind, params, lower, upper):
        d = self.dist = scipy_law(kind, params)
        lo_s, hi_s = d.support()
        lo, hi = max(lower, lo_s), min(upper, hi_s)
        self.pl = float(d.cdf(lower)) if np.isfinite(lower) else 0.0
        self.pu = float(d.sf(upper)) if np.isfinite(upper) else 0.0
        tails = 10.0 ** -np.arange(2.0, 17.5, 0.5)
        qs = np.concatenate([d.ppf(tails), d.ppf(np.linspace(0.01, 0.99, 99)), d.isf(tails)])
        edges = np.unique(np.clip(qs, lo, hi))
        xs, ws = [], []
        for a, b in itertools.pairwise(edges):
            x = 0.5 * (b - a) * _GL_X + 0.5 * (a + b)
            xs.append(x)
            ws.append(0.5 * (b - a) * _GL_W * d.pdf(x))
        self.x, self.w = np.concatenate(xs), np.concatenate(ws)
        self.lower, self.upper = lower, upper
        pts = [(self.pl, lower), (self.pu, upper)]
        self.atoms = [(p, v) for p, v in pts if p > 0]
        self.mean = self.w @ self.x + sum(p * v for p, v in self.atoms)
        self.var = self.w @ (self.x - self.mean) ** 2 + sum(
            p * (v - self.mean) ** 2 for p, v in self.atoms
        )

    def psi_minus_one(self, t):
        """E[e^{i t (C - mean)}] - 1 without cancellation against 1."""
        t = np.asarray(t, dtype="float64")[:, None]
        z = np.concatenate([self.x, [v for _, v in self.atoms]]) - self.mean
        w = np.concatenate([self.w, [p for p, _ in self.atoms]])
        u = t * z
        re = -2.0 * (np.sin(0.5 * u) ** 2) @ w
        im = np.sin(u) @ w
        return re + 1j * im


def _log1p_complex(w):
    """log(1 + w) for complex w, accurate for small |w| (series below 1e-4)."""
    small = np.abs(w) < 1e-4
    series = w - w**2 / 2 + w**3 / 3 - w**4 / 4 + w**5 / 5
    return np.where(small, series, np.log(1.0 + np.where(small, 0.0, w)))


def noise_cf(noise_name, param, t):
    if noise_name == "Laplace":
        return 1.0 / (1.0 + (param * t) ** 2)
    if noise_name == "Gaussian":
        return np.exp(-0.5 * (param * t) ** 2)
    raise ValueError(noise_name)


def density_cf(law, n, noise_name, param, y):
    """Density of the release at the points ``y`` (continuous data, module docstring)."""
    y = np.atleast_1d(np.asarray(y, dtype="float64")) - n * law.mean
    noise_var = 2.0 * param**2 if noise_name == "Laplace" else param**2
    sd = np.sqrt(n * law.var + noise_var)

    def integrand_abs(t):
        lp = n * _log1p_complex(law.psi_minus_one(t))
        return np.exp(lp.real) * np.abs(noise_cf(noise_name, param, t))

    big = 4.0 / sd
    while integrand_abs(np.array([big]))[0] > 1e-18:
        big *= 1.5
        if big > 1e6 / sd:
            raise RuntimeError("characteristic function does not decay")
    panels = 100
    edges = np.linspace(0.0, big, panels + 1)
    t = (0.5 * np.diff(edges)[:, None] * _GL_X + 0.5 * (edges[1:] + edges[:-1])[:, None]).ravel()
    w = np.repeat(0.5 * np.diff(edges), len(_GL_X)) * np.tile(_GL_W, panels)
    cf = np.exp(n * _log1p_complex(law.psi_minus_one(t))) * noise_cf(noise_name, param, t)
    return (np.cos(np.outer(y, t)) * cf.real + np.sin(np.outer(y, t)) * cf.imag) @ w / np.pi


def noise_pdf(noise_name, param, x):
    if noise_name == "Laplace":
        return st.laplace(scale=param).pdf(x)
    return st.norm(scale=param).pdf(x)


def density_n1(law, noise_name, param, y):
    """n = 1: atoms times the noise density plus the interior convolution (same quadrature)."""
    y = np.atleast_1d(np.asarray(y, dtype="float64"))
    out = np.zeros_like(y)
    for p, v in law.atoms:
        out += p * noise_pdf(noise_name, param, y - v)
    # interior: adaptive quadrature, split at the Laplace density's kink x = y
    d = law.dist
    lo, hi = max(law.lower, d.support()[0]), min(law.upper, d.support()[1])
    lo, hi = max(lo, d.ppf(1e-17)), min(hi, d.isf(1e-17))
    for i, yi in enumerate(y):
        pts = [yi] if lo < yi < hi else None
        val, _ = si.quad(
            lambda x, yi=yi: d.pdf(x) * noise_pdf(noise_name, param, yi - x),
            lo, hi, points=pts, epsabs=0.0, epsrel=1e-13, limit=500,
        )  # fmt: skip
        out[i] += val
    return out


def _poisson_clamped(mu, lower, upper):
    """(support, pmf) of clamp(X, L, U), X ~ Poisson(mu)."""
    top = int(mu + 40.0 * np.sqrt(mu) + 60.0)  # P(X > top) < 1e-40
    k1 = np.arange(0, top + 1)
    p1 = st.poisson(mu).pmf(k1)
    vals = np.clip(k1, lower, upper)
    support = np.arange(int(lower), int(min(upper, top)) + 1)
    return support, np.array([p1[vals == s].sum() for s in support])


def poisson_sum_pmf(mu, lower, upper, n, ks):
    """P(S = k) at the integers ``ks`` by the inversion integral over one period,
    ``(1/pi) int_0^T Re[psi(t)^n e^{-i t (k - n mean)}] dt`` (``T = pi``, or where
    ``|psi|^n`` is below e^{-800}), composite Gauss-Legendre with 200 panels."""
    support, pmf = _poisson_clamped(mu, lower, upper)
    mean = pmf @ support
    var = pmf @ (support - mean) ** 2
    big = min(np.pi, 40.0 / np.sqrt(n * var))
    panels = 200
    edges = np.linspace(0.0, big, panels + 1)
    t = (0.5 * np.diff(edges)[:, None] * _GL_X + 0.5 * (edges[1:] + edges[:-1])[:, None]).ravel()
    w = np.repeat(0.5 * np.diff(edges), len(_GL_X)) * np.tile(_GL_W, panels)
    u = t[:, None] * (support - mean)
    psi_m1 = (-2.0 * np.sin(0.5 * u) ** 2) @ pmf + 1j * (np.sin(u) @ pmf)
    cf = np.exp(n * _log1p_complex(psi_m1))
    d = np.asarray(ks, dtype="float64") - n * mean
    return (np.cos(np.outer(d, t)) * cf.real + np.sin(np.outer(d, t)) * cf.imag) @ w / np.pi


def poisson_moments(mu, lower, upper):
    support, pmf = _poisson_clamped(mu, lower, upper)
    mean = pmf @ support
    return mean, pmf @ (support - mean) ** 2


def poisson_release(mu, lower, upper, n, noise_name, param, y):
    """Density (Gaussian noise) or pmf (discrete Gaussian) of the release at the integers or
    reals ``y``: the noise summed over the integers within 12 sigma + 10 of each ``y``."""
    y = np.atleast_1d(np.asarray(y, dtype="float64"))
    half = int(12 * param) + 10
    out = np.empty_like(y)
    for i, yi in enumerate(y):
        k = np.arange(np.floor(yi) - half, np.floor(yi) + half + 1)
        p = poisson_sum_pmf(mu, lower, upper, n, k)
        x = yi - k
        if noise_name == "Gaussian":
            g = st.norm(scale=param).pdf(x)
        elif noise_name == "DiscreteGaussian":
            j = np.arange(-half - 40, half + 41)
            g = np.exp(-(x**2) / (2 * param**2)) / np.exp(-(j**2) / (2 * param**2)).sum()
        else:
            raise ValueError(noise_name)
        out[i] = g @ p
    return out


def _standardised(central):
    """(g1, g2, g3) from central moments (m2, m3, m4, m5)."""
    m2, m3, m4, m5 = central
    k4 = m4 - 3.0 * m2**2
    k5 = m5 - 10.0 * m3 * m2
    return m3 / m2**1.5, k4 / m2**2, k5 / m2**2.5


def law_standardised(law):
    """Standardised cumulants (g1, g2, g3) of one clamped value (continuous data)."""
    z = np.concatenate([law.x, [v for _, v in law.atoms]]) - law.mean
    w = np.concatenate([law.w, [p for p, _ in law.atoms]])
    return _standardised([w @ z**j for j in range(2, 6)])


def poisson_standardised(mu, lower, upper):
    k = np.arange(0, int(mu + 40.0 * np.sqrt(mu) + 60.0))
    p = st.poisson(mu).pmf(k)
    x = np.clip(k, lower, upper).astype("float64")
    z = x - p @ x
    return _standardised([p @ z**j for j in range(2, 6)])


def edgeworth_next_term(g, n, reach=3.0):
    """Largest relative size on |x| <= reach of the first term the second-order Edgeworth
    expansion leaves out, (g3/120 He5 + g1 g2/144 He7 + g1^3/1296 He9) / n^{3/2}, for one
    value's standardised cumulants ``g`` (Hall 1992, 2.2; relative to the normal density)."""
    g1, g2, g3 = g
    x = np.linspace(-reach, reach, 601)
    he = np.polynomial.hermite_e.hermeval
    c = (
        g3 / 120.0 * he(x, [0] * 5 + [1])
        + g1 * g2 / 144.0 * he(x, [0] * 7 + [1])
        + g1**3 / 1296.0 * he(x, [0] * 9 + [1])
    )
    return float(np.max(np.abs(c))) / n**1.5
