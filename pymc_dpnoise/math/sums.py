r"""Noisy sums of clamped values: the release :math:`y = \sum_{i=1}^n \mathrm{clamp}(X_i, L, U) + N`.

The data holder clamps each record's value :math:`X_i` (i.i.d. from a data law) to
:math:`[L, U]`, sums the :math:`n` clamped values and adds noise :math:`N` of a spec of
:mod:`pymc_dpnoise.noise` (OpenDP ``make_clamp >> then_sum >> then_laplace / then_gaussian``,
Tumult ``sum``, python-dp ``BoundedSum``).  Write :math:`C = \mathrm{clamp}(X, L, U)` and
:math:`S = \sum_i C_i`.

Exact cases
-----------
* Bernoulli data with :math:`L \le 0`, :math:`U \ge 1`: the clamp does nothing and
  :math:`S \sim \mathrm{Binomial}(n, p)`: the release is
  :func:`~pymc_dpnoise.math.noisy_counts.noisy_binomial_logp` (exact, every noise kind).
* Poisson data with :math:`L \le 0` and no upper clamp: :math:`S \sim \mathrm{Poisson}(n\mu)`:
  :func:`~pymc_dpnoise.math.noisy_counts.noisy_poisson_logp` (exact, every noise kind).

Clamped moments (closed forms)
------------------------------
:math:`C` is a mixture of an atom at :math:`L` of mass :math:`F(L^-)` (continuous data:
:math:`F(L)`), an atom at :math:`U` of mass :math:`1 - F(U)` and the data law restricted to
:math:`(L, U)`.  Its raw moments about a centre :math:`c` (the data mean clamped into
:math:`[L, U]`, which keeps the central moments free of cancellation when the clamp is strong)
are :math:`M_j = F(L)(L - c)^j + (1 - F(U))(U - c)^j + \int_L^U (x - c)^j f(x)\,dx`, and
the cumulants :math:`\kappa_1 = c + M_1`, :math:`\kappa_2 = M_2 - M_1^2`,
:math:`\kappa_3 = M_3 - 3M_1M_2 + 2M_1^3`, :math:`\kappa_4 = \mu_4 - 3\kappa_2^2` with
:math:`\mu_4 = M_4 - 4M_1M_3 + 6M_1^2M_2 - 3M_1^4`.  The interior integrals:

* normal :math:`(\mu, \sigma)`, :math:`a, b = (L - \mu)/\sigma, (U - \mu)/\sigma`,
  :math:`t = (c - \mu)/\sigma`: :math:`\sigma^j I_j` with :math:`I_j = \int_a^b (z - t)^j
  \varphi(z)\,dz`, by parts (:math:`z\varphi = -\varphi'`):
  :math:`I_0 = \Phi(b) - \Phi(a)`, :math:`I_j = (a - t)^{j-1}\varphi(a) - (b - t)^{j-1}\varphi(b)
  + (j - 1) I_{j-2} - t I_{j-1}`;
* log-normal :math:`(\mu, \sigma)`: :math:`\int_L^U x^k f = e^{k\mu + k^2\sigma^2/2}
  [\Phi(\beta - k\sigma) - \Phi(\alpha - k\sigma)]`, :math:`\alpha, \beta = (\log L - \mu)/\sigma,
  (\log U - \mu)/\sigma`;
* gamma (shape :math:`\alpha`, scale :math:`\theta`; the exponential is :math:`\alpha = 1`):
  :math:`\int_L^U x^k f = \theta^k \frac{\Gamma(\alpha + k)}{\Gamma(\alpha)}
  [P(\alpha + k, U/\theta) - P(\alpha + k, L/\theta)]`, :math:`P` the regularised lower
  incomplete gamma function;
* Poisson :math:`\mu` (integer :math:`L \le U`): factorial moments,
  :math:`\sum_{k=L}^{U} k^{\underline j} P(k) = \mu^j [F(U - j) - F(L - 1 - j)]` with the
  Poisson CDF :math:`F(m) = Q(m + 1, \mu)`, then :math:`x^2 = x^{\underline 2} + x`,
  :math:`x^3 = x^{\underline 3} + 3x^{\underline 2} + x`, :math:`x^4 = x^{\underline 4} +
  6x^{\underline 3} + 7x^{\underline 2} + x`;

and for the last three :math:`\int (x - c)^j f = \sum_k \binom jk (-c)^{j-k}\int x^k f`.

The sum: a second-order Edgeworth expansion
-------------------------------------------
:math:`S` has cumulants :math:`K_j = n\kappa_j`.  Its density is approximated by the
second-order Edgeworth expansion (Hall 1992, 2.2), with :math:`g` the normal density of mean
:math:`K_1` and variance :math:`K_2`:

.. math::

    f_S(s) \approx g(s) - \frac{K_3}{6} g'''(s) + \frac{K_4}{24} g^{(4)}(s)
        + \frac{K_3^2}{72} g^{(6)}(s),

since :math:`\mathrm{He}_k(z)\varphi(z) = (-1)^k \varphi^{(k)}(z)`.  Its relative error in the
bulk is :math:`O(n^{-3/2})` (the next terms are :math:`K_5`, :math:`K_3K_4` and :math:`K_3^3`);
for an integer lattice (Poisson data) the same expansion holds for the pmf at the integers
(local Edgeworth expansion), and the sums over the lattice below equal the integrals to
:math:`e^{-2\pi^2 K_2}`.  The noise enters exactly, through the same derivatives:

* Gaussian noise :math:`\sigma`: :math:`Y = S + N` has cumulants :math:`K_1`,
  :math:`K_2 + \sigma^2`, :math:`K_3`, :math:`K_4`: the expansion above for :math:`Y`;
* Laplace noise :math:`b`, with :math:`v = K_2`, :math:`r = y - K_1`: the noise is
  convolved with each term, :math:`p_Y = p - \frac{K_3}6 p''' + \frac{K_4}{24}p^{(4)} +
  \frac{K_3^2}{72}p^{(6)}` where :math:`p = A + B` is the normal-Laplace density,
  :math:`A = \frac1{2b}e^{-r/b + v/2b^2}\Phi(r/\sqrt v - \sqrt v/b)`,
  :math:`B = \frac1{2b}e^{r/b + v/2b^2}\Phi(-r/\sqrt v - \sqrt v/b)`.  From
  :math:`A' = -A/b + \varphi_v/2b`, :math:`B' = B/b - \varphi_v/2b`:

  .. math::

      p^{(2k)} = \frac{A + B}{b^{2k}} - \varphi_v(r)\sum_{j<k}
        \frac{\mathrm{He}_{2j}(x)}{v^j b^{2k-2j}}, \qquad
      p^{(2k+1)} = \frac{B - A}{b^{2k+1}} + \varphi_v(r)\sum_{j<k}
        \frac{\mathrm{He}_{2j+1}(x)}{v^{j+1/2} b^{2k-2j}},

  :math:`x = r/\sqrt v`, all divided by :math:`p` (log space: :math:`A/p`, :math:`B/p`,
  :math:`\varphi_v/p` are bounded).  These lose :math:`(\sqrt v/b)^6` of relative accuracy in the
  :math:`K_3^2` term, so where :math:`b < 0.1\sqrt v` the Laplace noise enters through its
  cumulants instead (:math:`2b^2`, :math:`12b^4`, :math:`240b^6`; the omitted
  :math:`\kappa_8` and :math:`\kappa_4^2` terms are below :math:`4\cdot10^{-9}` relative there);
* integer data (Poisson, clamped): :math:`P(Y = y) = \sum_k P(S = k)\,g(y - k)` with
  :math:`g` the Gaussian density or the discrete Gaussian pmf (:math:`\sigma \ge 1`: its pmf
  is :math:`\sqrt{2\pi}\sigma/Z(\sigma)` times the normal density at the integers).  The
  summand is smooth on the scale :math:`\sigma`, so by Poisson summation the lattice sum
  equals the integral of the expansion against the normal density to
  :math:`e^{-2\pi^2 \sigma^2 K_2/(\sigma^2 + K_2)}` relative.  The Laplace kinds are not
  offered there: the Laplace density's kink makes the lattice visible in the release's law
  (the sum differs from the integral by about :math:`2/(1 + 4\pi^2 b^2)` relative, whatever
  :math:`n`).

The Edgeworth factor :math:`1 + c` is floored at :math:`0.1` (far tails, where a truncated
expansion can go negative and the approximation is not claimed).  Measured errors against
numerical convolutions are in ``benchmarks/results/noisy_sums.md``; the expansion needs the sum to be
near normal: :class:`~pymc_dpnoise.NoisySum` refuses it below :math:`n = 30` (unless the data
are normal and unclamped) and wherever the sum's skewness or excess kurtosis exceeds
:data:`MAX_STANDARDISED` (:func:`edgeworth_valid`).
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt

from .noise import log_ndtr

__all__ = [
    "DATA_KINDS",
    "clamped_cumulants",
    "edgeworth_gaussian_logp",
    "edgeworth_laplace_logp",
    "edgeworth_valid",
    "noisy_sum_logp",
]

#: the data kinds and their parameters (PyTensor's random variables' conventions)
DATA_KINDS = {
    "normal": ("mu", "sigma"),
    "lognormal": ("mu", "sigma"),
    "exponential": ("scale",),
    "gamma": ("shape", "scale"),
    "poisson": ("mu",),
    "bernoulli": ("p",),
}
INTEGER_KINDS = ("poisson", "bernoulli")

_LOG_SQRT_2PI = np.float64(0.5 * math.log(2.0 * math.pi))
_INV_SQRT_2PI = np.float64(1.0 / math.sqrt(2.0 * math.pi))
#: the Laplace noise enters through its cumulants below this ratio b / sd(S)
LAPLACE_SWITCH = 0.1
#: the expansion is refused where the sum's skewness |K3| / K2^1.5 or excess kurtosis
#: |K4| / K2^2 exceeds this (n too small for the data law's tails: e.g. unclamped exponential
#: values at n = 30 have 0.37 and relative errors of 2-17% within 3 sd; every case of the
#: tests below it is within three times the first omitted term)
MAX_STANDARDISED = 0.25
#: floor of the Edgeworth factor 1 + c (far tails only)
FACTOR_FLOOR = 0.1
#: bounds beyond this many sd are treated as infinite in the normal's partial moments
_Z_CAP = 40.0


def _f64(x):
    if not isinstance(x, pt.Variable):
        return pt.as_tensor_variable(np.asarray(x, dtype="float64"))
    return x if x.dtype == "float64" else pt.cast(x, "float64")


def _ndtr(x):
    return 0.5 * pt.erfc(-x * np.float64(math.sqrt(0.5)))


def _npdf(x):
    return _INV_SQRT_2PI * pt.exp(-0.5 * x * x)


def _between(lo_cdf, hi_cdf, lo_sf, hi_sf, upper_side):
    """P(lo < X < hi) from CDFs or survival functions (the accurate one of the two)."""
    return pt.switch(upper_side, lo_sf - hi_sf, hi_cdf - lo_cdf)


def _finite_or(x, fallback):
    return pt.switch(pt.isfinite(x), x, fallback)


def _central(c, atoms, interior):
    """Cumulants from the raw moments about ``c``: ``atoms`` = [(mass, value - c)],
    ``interior`` = [I_1..I_4] (integrals of (x - c)^j over the interior)."""
    m = []
    for j in range(1, 5):
        tot = interior[j - 1]
        for mass, d in atoms:
            tot = tot + mass * d**j
        m.append(tot)
    m1, m2, m3, m4 = m
    k2 = m2 - m1**2
    k3 = m3 - 3.0 * m1 * m2 + 2.0 * m1**3
    mu4 = m4 - 4.0 * m1 * m3 + 6.0 * m1**2 * m2 - 3.0 * m1**4
    return c + m1, pt.maximum(k2, 0.0), k3, mu4 - 3.0 * k2**2


def _shift_moments(c, raw):
    """[int (x - c)^j f, j = 1..4] from raw = [int x^k f, k = 0..4] (binomial expansion)."""
    out = []
    for j in range(1, 5):
        tot = 0.0
        for k in range(j + 1):
            tot = tot + math.comb(j, k) * (-c) ** (j - k) * raw[k]
        out.append(tot)
    return out


def _normal_cumulants(mu, sigma, lower, upper):
    c = pt.clip(mu, lower, upper)
    a = pt.clip((lower - mu) / sigma, -_Z_CAP, _Z_CAP)
    b = pt.clip((upper - mu) / sigma, -_Z_CAP, _Z_CAP)
    t = (c - mu) / sigma
    pa, pb = _npdf(a), _npdf(b)
    i0 = _between(_ndtr(a), _ndtr(b), _ndtr(-a), _ndtr(-b), a > 0.0)
    ints = [i0, pa - pb - t * i0]
    for j in range(2, 5):
        ints.append(
            (a - t) ** (j - 1) * pa
            - (b - t) ** (j - 1) * pb
            + (j - 1) * ints[j - 2]
            - t * ints[j - 1]
        )
    interior = [sigma**j * ints[j] for j in range(1, 5)]
    atoms = [
        (_ndtr(a), _finite_or(lower, c) - c),
        (_ndtr(-b), _finite_or(upper, c) - c),
    ]
    return _central(c, atoms, interior)


def _lognormal_cumulants(mu, sigma, lower, upper):
    pos_lo = lower > 0.0
    alpha = pt.switch(pos_lo, (pt.log(pt.switch(pos_lo, lower, 1.0)) - mu) / sigma, -np.inf)
    beta = pt.switch(upper > 0.0, (pt.log(pt.maximum(upper, 1e-300)) - mu) / sigma, -np.inf)
    alpha = pt.clip(alpha, -_Z_CAP, _Z_CAP)
    beta = pt.clip(beta, -_Z_CAP, _Z_CAP)
    mean = pt.exp(mu + 0.5 * sigma**2)
    c = pt.clip(mean, lower, upper)
    raw = []
    for k in range(5):
        lo, hi = alpha - k * sigma, beta - k * sigma
        mass = _between(_ndtr(lo), _ndtr(hi), _ndtr(-lo), _ndtr(-hi), lo > 0.0)
        raw.append(pt.exp(k * mu + 0.5 * k * k * sigma**2) * mass)
    atoms = [
        (_ndtr(alpha), _finite_or(lower, c) - c),
        (_ndtr(-beta), _finite_or(upper, c) - c),
    ]
    return _central(c, atoms, _shift_moments(c, raw))


def _gamma_cumulants(shape, scale, lower, upper):
    lo = pt.maximum(lower, 0.0) / scale
    hi_finite = pt.isfinite(upper)
    hi = pt.switch(hi_finite, pt.maximum(upper, 0.0), 0.0) / scale
    c = pt.clip(shape * scale, lower, upper)
    raw = []
    rising = 1.0
    for k in range(5):
        ak = shape + k
        p_lo, q_lo = pt.gammainc(ak, lo), pt.gammaincc(ak, lo)
        p_hi = pt.switch(hi_finite, pt.gammainc(ak, hi), 1.0)
        q_hi = pt.switch(hi_finite, pt.gammaincc(ak, hi), 0.0)
        mass = _between(p_lo, p_hi, q_lo, q_hi, lo > ak)
        raw.append(scale**k * rising * mass)
        rising = rising * ak
    atoms = [
        (pt.gammainc(shape, lo), _finite_or(lower, c) - c),
        (pt.switch(hi_finite, pt.gammaincc(shape, hi), 0.0), _finite_or(upper, c) - c),
    ]
    return _central(c, atoms, _shift_moments(c, raw))


def _poisson_cdf(m, mu):
    """P(X <= m) for integer m (0 below 0, 1 at +inf)."""
    finite = pt.isfinite(m)
    ms = pt.switch(finite, pt.maximum(m, 0.0), 0.0)
    v = pt.gammaincc(ms + 1.0, mu)
    return pt.switch(finite, pt.switch(m < 0.0, 0.0, v), pt.switch(m > 0.0, 1.0, 0.0))


def _poisson_cumulants(mu, lower, upper):
    lower = pt.maximum(lower, 0.0)
    c = pt.clip(mu, lower, upper)
    fac = [_poisson_cdf(upper, mu) - _poisson_cdf(lower - 1.0, mu)]
    for j in range(1, 5):
        fac.append(mu**j * (_poisson_cdf(upper - j, mu) - _poisson_cdf(lower - 1.0 - j, mu)))
    f0, f1, f2, f3, f4 = fac
    raw = [f0, f1, f2 + f1, f3 + 3.0 * f2 + f1, f4 + 6.0 * f3 + 7.0 * f2 + f1]
    atoms = [
        (_poisson_cdf(lower - 1.0, mu), lower - c),
        (1.0 - _poisson_cdf(upper, mu), _finite_or(upper, c) - c),
    ]
    return _central(c, atoms, _shift_moments(c, raw))


def edgeworth_valid(n, kind, params, lower, upper):
    """Where the expansion is used: the sum's standardised third and fourth cumulants at most
    :data:`MAX_STANDARDISED` (true on the exact paths)."""
    if exact_path(kind, _f64(lower), _f64(upper)) is not None:
        return pt.as_tensor_variable(np.True_)
    _, k2, k3, k4 = clamped_cumulants(kind, params, lower, upper)
    n = _f64(n)
    var = pt.maximum(n * k2, 1e-300)
    g1 = pt.abs(n * k3) / (var * pt.sqrt(var))
    g2 = pt.abs(n * k4) / var**2
    return (g1 <= MAX_STANDARDISED) & (g2 <= MAX_STANDARDISED)


def clamped_cumulants(kind, params, lower, upper):
    r"""``(mean, variance, kappa_3, kappa_4)`` of :math:`\mathrm{clamp}(X, L, U)` (module
    docstring) for ``kind`` in :data:`DATA_KINDS` with ``params`` in its order."""
    params = [_f64(p) for p in params]
    lower, upper = _f64(lower), _f64(upper)
    if kind == "normal":
        return _normal_cumulants(*params, lower, upper)
    if kind == "lognormal":
        return _lognormal_cumulants(*params, lower, upper)
    if kind == "exponential":
        return _gamma_cumulants(pt.ones_like(params[0]), params[0], lower, upper)
    if kind == "gamma":
        return _gamma_cumulants(*params, lower, upper)
    if kind == "poisson":
        return _poisson_cumulants(*params, lower, upper)
    if kind == "bernoulli":
        (p,) = params
        # two values, clamp(0) and clamp(1)
        v0 = pt.clip(0.0, lower, upper)
        v1 = pt.clip(1.0, lower, upper)
        d = v1 - v0
        mean = v0 + p * d
        q = 1.0 - p
        return mean, p * q * d**2, p * q * (q - p) * d**3, p * q * (1.0 - 6.0 * p * q) * d**4
    raise ValueError(f"unknown data kind {kind!r}; one of {sorted(DATA_KINDS)}")


def _he(x):
    """Hermite polynomials He_0..He_6 at x (probabilists')."""
    x2 = x * x
    return [
        pt.ones_like(x),
        x,
        x2 - 1.0,
        x * (x2 - 3.0),
        x2 * (x2 - 6.0) + 3.0,
        x * (x2 * (x2 - 10.0) + 15.0),
        x2 * (x2 * (x2 - 15.0) + 45.0) - 15.0,
    ]


def _log_factor(c):
    return pt.log(pt.maximum(1.0 + c, FACTOR_FLOOR))


def edgeworth_gaussian_logp(r, var, k3, k4, k6=0.0):
    r"""Log of the Edgeworth density at :math:`r = y - \kappa_1` of a law with variance ``var``
    and cumulants ``k3``, ``k4`` (and ``k6``, a symmetric component's sixth cumulant):
    :math:`\varphi_v(r)\,[1 + \frac{\gamma_1}6\mathrm{He}_3 + \frac{\gamma_2}{24}\mathrm{He}_4 +
    \frac{\gamma_1^2}{72}\mathrm{He}_6 + \frac{\kappa_6}{720 v^3}\mathrm{He}_6]`."""
    s = pt.sqrt(var)
    x = r / s
    he = _he(x)
    g1 = k3 / (var * s)
    g2 = k4 / var**2
    c = g1 / 6.0 * he[3] + g2 / 24.0 * he[4] + (g1**2 / 72.0 + k6 / (720.0 * var**3)) * he[6]
    return -0.5 * x * x - pt.log(s) - _LOG_SQRT_2PI + _log_factor(c)


def edgeworth_laplace_logp(r, var, k3, k4, b):
    r"""Log density at :math:`r = y - K_1` of the Edgeworth law of :math:`S` (variance ``var``,
    cumulants ``k3``, ``k4``) convolved with Laplace noise of scale ``b`` (module docstring:
    closed-form derivatives of the normal-Laplace density where :math:`b \ge 0.1\sqrt v`, the
    noise's cumulants below)."""
    s_true = pt.sqrt(var)
    near = b < LAPLACE_SWITCH * s_true
    # cumulant form (b small against the sum's spread)
    small = edgeworth_gaussian_logp(r, var + 2.0 * b**2, k3, k4 + 12.0 * b**4, 240.0 * b**6)
    # convolution form, evaluated at a safe variance where the other is used
    v = pt.switch(near, (b / LAPLACE_SWITCH) ** 2, pt.maximum(var, (1e-150 * (1.0 + b)) ** 2))
    s = pt.sqrt(v)
    lead = -pt.log(2.0 * b) + v / (2.0 * b * b)
    log_a = lead - r / b + log_ndtr(r / s - s / b)
    log_b = lead + r / b + log_ndtr(-r / s - s / b)
    x = r / s
    log_phi = -0.5 * x * x - pt.log(s) - _LOG_SQRT_2PI
    lp0 = pt.logaddexp(log_a, log_b)
    wa, wb, psi = pt.exp(log_a - lp0), pt.exp(log_b - lp0), pt.exp(log_phi - lp0)
    he = _he(x)
    q3 = (wb - wa) / b**3 + psi * he[1] / (s * b**2)
    q4 = (wa + wb - psi) / b**4 - psi * he[2] / (v * b**2)
    q6 = (wa + wb - psi) / b**6 - psi * (he[2] / (v * b**4) + he[4] / (v**2 * b**2))
    c = -k3 / 6.0 * q3 + k4 / 24.0 * q4 + k3**2 / 72.0 * q6
    conv = lp0 + _log_factor(c)
    return pt.switch(near, small, conv)


def noisy_sum_logp(value, n, kind, params, lower, upper, noise_kind, noise_param):
    r"""Log density (pmf for integer data with integer noise) of the release of a noisy sum of
    ``n`` values of the data law ``kind`` (:data:`DATA_KINDS`, ``params`` in its order), each
    clamped to ``[lower, upper]``, plus noise of the kind ``noise_kind`` (a subclass of
    :class:`pymc_dpnoise.noise.Noise`) with parameter ``noise_param``.

    Exact for the cases of the module docstring; elsewhere the second-order Edgeworth
    expansion convolved with the noise.  The caller checks which noise kinds fit the data kind
    (:class:`~pymc_dpnoise.NoisySum`).
    """
    from . import noisy_counts as ncm

    value, n = _f64(value), _f64(n)
    lower, upper = _f64(lower), _f64(upper)
    noise_param = _f64(noise_param)
    params = [_f64(p) for p in params]
    exact = exact_path(kind, lower, upper)
    if exact == "binomial":
        return ncm.noisy_binomial_logp(value, n, params[0], noise_kind, noise_param)
    if exact == "poisson":
        return ncm.noisy_poisson_logp(value, n * params[0], noise_kind, noise_param)
    mean, k2, k3, k4 = clamped_cumulants(kind, params, lower, upper)
    r = value - n * mean
    var, K3, K4 = n * k2, n * k3, n * k4
    name = noise_kind.__name__
    if name == "Gaussian":
        return edgeworth_gaussian_logp(r, var + noise_param**2, K3, K4)
    if name == "Laplace":
        return edgeworth_laplace_logp(r, var, K3, K4, noise_param)
    if name == "DiscreteGaussian":
        from .noise import log_z_discrete_gaussian

        sg = noise_param
        res = edgeworth_gaussian_logp(r, var + sg**2, K3, K4)
        res = res + _LOG_SQRT_2PI + pt.log(sg) - log_z_discrete_gaussian(sg)
        return pt.switch(pt.eq(value, pt.round(value)), res, -np.inf)
    raise NotImplementedError(f"no noisy-sum likelihood for {name} noise on {kind} data")


def exact_path(kind, lower, upper):
    """``"binomial"`` / ``"poisson"`` where the sum's law is exactly a count (module
    docstring), for constant bounds; else None."""
    from ..validation import static_value

    lo, hi = static_value(lower), static_value(upper)
    if lo is None or hi is None:
        return None
    if kind == "bernoulli" and np.all(lo <= 0) and np.all(hi >= 1):
        return "binomial"
    if kind == "poisson" and np.all(lo <= 0) and np.all(np.isposinf(hi)):
        return "poisson"
    return None
