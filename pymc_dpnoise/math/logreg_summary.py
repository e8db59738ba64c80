r"""Perturbed-input logistic regression at any N: an expansion with a bound computed at every evaluation.

The log likelihood of N reports ``[z_x, z_y]`` of :class:`~pymc_dpnoise.PerturbedLogReg` is
a Gaussian term, exact from the scatter matrix :math:`S = \sum_i z_i z_i^T` of the features,
plus the label term

.. math::

    L(\beta, v) = \sum_i K(w_i^T\beta, v),\qquad
    K(t, v) = \log E\bigl[a + b\,\mathrm{sigmoid}(t + \sqrt v\,Z)\bigr],\ Z \sim N(0, 1),

with :math:`w_i = (2 z_{y,i} - 1)\, z_{x,i}` (the label folded into the sign: the label
factor of report i is :math:`\log[(1-\rho) + (2\rho - 1)E\,\mathrm{sigmoid}(s_i u)]` and
:math:`E\,\mathrm{sigmoid}(s u) = E\,\mathrm{sigmoid}(s m + \sqrt v Z)`),
:math:`\beta = (\Sigma+\Sigma_*)^{-1}\Sigma\theta`, :math:`v = \theta^T A\theta`,
:math:`a = 1 - \rho = \mathrm{sigmoid}(-\epsilon_y)`, :math:`b = 2\rho - 1 = \tanh(\epsilon_y/2)`.

Expansion
---------
Around a pilot :math:`(\beta_0, v_0)` (:func:`pymc_dpnoise.summaries.summarize_logreg`), with
:math:`\Delta = \beta - \beta_0`, :math:`\eta = v - v_0`, :math:`\delta_i = w_i^T\Delta`,
:math:`t_i = w_i^T\beta_0`, and :math:`K_{k,j} = \partial_t^k\partial_v^j K`:

.. math::

    L \approx \sum_{k=0}^{3}\sum_{j=0}^{J_k} \frac{\eta^j}{k!\,j!}\,
        C_{k,j}[\Delta^{\otimes k}],\qquad
    C_{k,j} = \sum_i K_{k,j}(t_i, v_0)\, w_i^{\otimes k},\qquad (J_0, J_1, J_2, J_3) = (3, 2, 1, 0),

i.e. every term of total degree at most 3 in :math:`(\Delta, \eta)`.  The summary stores
:math:`C_{k,j}` (a scalar, vector, matrix or 3-tensor each), :math:`S`, N and the unweighted
fourth-moment tensor :math:`M_4 = \sum_i w_i^{\otimes 4}`: O(d⁴) numbers whatever N.

Remainder bound
---------------
Expand first in :math:`\delta_i` at the true :math:`v` (Taylor with Lagrange remainder), then
each coefficient :math:`K_{k,0}(t_i, v)` in :math:`\eta` around :math:`v_0`:

.. math::

    |L - \hat L| \le \frac{M_{4,0}}{24}\sum_i\delta_i^4
      + \sum_{k=0}^{3} \frac{M_{k,J_k+1}}{k!\,(J_k+1)!}\,|\eta|^{J_k+1} \sum_i |\delta_i|^k,
    \qquad M_{k,j} \ge \sup_{t\in\mathbb R,\,v\ge 0} |K_{k,j}(t, v)|.

The sums over reports come from the summary: :math:`\sum\delta_i^2 = \Delta^T S\Delta`,
:math:`\sum\delta_i^4 = M_4[\Delta^{\otimes 4}]` (exact), :math:`\sum|\delta_i|^3 \le
(\sum\delta_i^2\sum\delta_i^4)^{1/2}` and :math:`\sum|\delta_i| \le (N\sum\delta_i^2)^{1/2}`
(Cauchy-Schwarz), :math:`\sum|\delta_i|^0 = N`.  Heavy-tailed features make :math:`M_4`, and
so the bound, large: the bound stays valid.

The constants :math:`M_{k,j}` depend on :math:`\epsilon_y` only (:func:`derivative_bounds`):

1. :math:`a + b\,\mathrm{sigmoid}(u) = e^{\psi(u)}` with :math:`\psi(u) = \mathrm{softplus}(u +
   \epsilon) - \mathrm{softplus}(u) - \mathrm{softplus}(\epsilon)`, so
   :math:`K(t, v) = \log E\, e^{\psi(t + \sqrt v Z)}` and, for :math:`m \ge 1`,
   :math:`\psi^{(m)}(u) = \mathrm{sigmoid}^{(m-1)}(u + \epsilon) - \mathrm{sigmoid}^{(m-1)}(u)`.
2. The t-derivatives of a log-expectation of an exponential are sums of joint cumulants under
   the tilted law :math:`Q \propto e^{\psi(t + \sqrt v Z)}\varphi(Z)`:
   :math:`K_{m,0} = \sum_{\pi} \kappa_Q(\psi^{(|B|)} : B \in \pi)` over the set partitions
   :math:`\pi` of :math:`\{1..m\}` (Faà di Bruno for :math:`e^\psi`, then moments to
   cumulants).
3. Each :math:`\psi^{(m)}` is bounded: :math:`\psi' \in (0, \tanh(\epsilon/4)]` and
   :math:`|\psi^{(m)}| \le h_m = \min(\mathrm{range}\ \mathrm{sigmoid}^{(m-1)},\ \epsilon\sup
   |\mathrm{sigmoid}^{(m)}|)` (a difference of two values of one function, and the mean value
   theorem); the suprema are those of polynomials in :math:`s = \mathrm{sigmoid}(u) \in [0, 1]`,
   found from their critical points.  A single-block cumulant is a mean,
   :math:`|E_Q \psi^{(m)}| \le h_m`; a joint cumulant of r variables with ranges
   :math:`\ell_j` is bounded by :math:`c_r\prod\ell_j` with :math:`c_2 = c_3 = 1/4`,
   :math:`c_4 = 7/16` (Cauchy-Schwarz and Popoviciu's variance bound on the central-moment
   forms) and :math:`c_r = 2^{-r}\sum_{\sigma}(|\sigma| - 1)!` for :math:`r \ge 5` (shift
   every variable to its midpoint in the moment form of the cumulant).  This bounds
   :math:`|K_{m,0}| \le \mu_m` uniformly in t and v.
4. The v-derivatives follow from the heat equation :math:`\partial_v E f(t + \sqrt v Z) =
   \tfrac12\partial_t^2 E f(t + \sqrt v Z)` applied to :math:`e^K`:
   :math:`\partial_v K = \tfrac12(K_{2,0} + K_{1,0}^2)`, so every :math:`K_{k,j}` is a
   polynomial in :math:`K_{1,0}, \dots, K_{k+2j,0}` (:func:`mixed_derivative_polynomials`);
   :math:`M_{k,j}` is that polynomial with absolute coefficients at :math:`\mu_m`.

The per-report weights :math:`K_{k,j}(t_i, v_0)` are computed from
:math:`E[\mathrm{sigmoid}^{(m)}(t + \sqrt{v_0} Z)]` by the quadrature rules of the exact path
(:func:`expected_sigmoid_derivatives`), accurate to about 1e-12 per report (checked against
adaptive quadrature in the tests); the bound adds :data:`QUADRATURE_ALLOWANCE` per report for
this.  Taylor's theorem needs no more: every step above holds for every t, v and report.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

__all__ = [
    "QUADRATURE_ALLOWANCE",
    "derivative_bounds",
    "expected_sigmoid_derivatives",
    "label_derivatives",
    "mixed_derivative_polynomials",
]

#: orders (k, j) of the stored coefficients C_{k,j}: total degree <= 3 in (Delta, eta)
ORDERS = ((0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (3, 0))
#: orders of the remainder terms: (4, 0) and (k, J_k + 1)
REMAINDER_ORDERS = ((4, 0), (0, 4), (1, 3), (2, 2), (3, 1))
#: highest t-derivative of K the weights need (K_{0,3} = polynomial in K_1..K_6)
MAX_WEIGHT_ORDER = 6
#: per-report allowance (nats) for the quadrature error of the weights and of the exact path
QUADRATURE_ALLOWANCE = 1e-10

_SQRT2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SWITCH_SD = 1.5
_NODES = 40


# --------------------------------------------------------------------------------------------
# Derivatives of the sigmoid as polynomials in s = sigmoid(u)
# --------------------------------------------------------------------------------------------


@functools.cache
def sigmoid_derivative_poly(m: int) -> np.ndarray:
    """Coefficients (ascending) of the polynomial P_m with sigmoid^(m)(u) = P_m(sigmoid(u))."""
    p = np.polynomial.Polynomial([0.0, 1.0])  # s
    ds = np.polynomial.Polynomial([0.0, 1.0, -1.0])  # ds/du = s - s^2
    for _ in range(m):
        p = p.deriv() * ds
    return p.coef.copy()


@functools.cache
def _poly_extrema(m: int) -> tuple[float, float]:
    """(min, max) over u of sigmoid^(m)(u), i.e. of P_m on [0, 1] (critical points and ends)."""
    p = np.polynomial.Polynomial(sigmoid_derivative_poly(m))
    crit = p.deriv().roots()
    crit = crit[np.abs(crit.imag) < 1e-12].real
    pts = np.concatenate([[0.0, 1.0], crit[(crit >= 0.0) & (crit <= 1.0)]])
    vals = p(pts)
    return float(vals.min()), float(vals.max())


def _sup_abs(m: int) -> float:
    lo, hi = _poly_extrema(m)
    return max(abs(lo), abs(hi))


# --------------------------------------------------------------------------------------------
# Bounds on the t-derivatives of K (uniform in t and v)
# --------------------------------------------------------------------------------------------


def _psi_bounds(epsilon: float, m: int) -> tuple[float, float]:
    """(h_m, l_m): sup |psi^(m)| and the length of an interval holding psi^(m)."""
    if m == 1:
        h = math.tanh(epsilon / 4.0)
        return h, h  # psi' in (0, tanh(eps/4)]
    lo, hi = _poly_extrema(m - 1)
    h = min(hi - lo, epsilon * _sup_abs(m))
    return h, 2.0 * h


@functools.cache
def _cyclic_partition_sum(r: int) -> int:
    """sum over set partitions sigma of {1..r} of (|sigma| - 1)!."""
    # Stirling numbers of the second kind
    s = [[0] * (r + 1) for _ in range(r + 1)]
    s[0][0] = 1
    for n in range(1, r + 1):
        for k in range(1, n + 1):
            s[n][k] = k * s[n - 1][k] + s[n - 1][k - 1]
    return sum(s[r][k] * math.factorial(k - 1) for k in range(1, r + 1))


def _joint_cumulant_constant(r: int) -> float:
    """c_r with |kappa(X_1..X_r)| <= c_r prod(l_j) for X_j in intervals of length l_j."""
    return {2: 0.25, 3: 0.25, 4: 7.0 / 16.0}.get(r, _cyclic_partition_sum(r) / 2.0**r)


def _integer_partitions(m: int, largest: int | None = None):
    largest = m if largest is None else largest
    if m == 0:
        yield ()
        return
    for first in range(min(m, largest), 0, -1):
        for rest in _integer_partitions(m - first, first):
            yield (first, *rest)


def _set_partition_count(blocks: tuple[int, ...]) -> int:
    """Number of set partitions of {1..sum(blocks)} with these block sizes."""
    m = sum(blocks)
    out = math.factorial(m)
    for b in blocks:
        out //= math.factorial(b)
    for b in set(blocks):
        out //= math.factorial(blocks.count(b))
    return out


def t_derivative_bounds(epsilon: float, max_order: int = 8) -> np.ndarray:
    r""":math:`\mu_m \ge \sup_{t, v \ge 0} |\partial_t^m K(t, v)|`, m = 0..max_order (:math:`\mu_0` unused)."""
    eps = float(epsilon)
    mu = np.zeros(max_order + 1)
    for m in range(1, max_order + 1):
        total = 0.0
        for blocks in _integer_partitions(m):
            count = _set_partition_count(blocks)
            if len(blocks) == 1:
                term = _psi_bounds(eps, m)[0]
            else:
                term = _joint_cumulant_constant(len(blocks))
                for b in blocks:
                    term *= _psi_bounds(eps, b)[1]
            total += count * term
        mu[m] = total
    return mu * (1.0 + 1e-9)  # rounding of the polynomial extrema


# --------------------------------------------------------------------------------------------
# Mixed derivatives through the heat equation
# --------------------------------------------------------------------------------------------

_NVARS = 9  # K_1 .. K_8 (index 0 unused)


def _poly_add(acc, poly, scale=1.0):
    for mono, c in poly.items():
        acc[mono] = acc.get(mono, 0.0) + scale * c
        if acc[mono] == 0.0:
            del acc[mono]


def _mono_mul(a, b):
    return tuple(x + y for x, y in zip(a, b, strict=True))


def _var(m):
    e = [0] * _NVARS
    e[m] = 1
    return tuple(e)


def _derive(poly, rule):
    """Apply a derivation given by ``rule(m) -> poly`` (the derivative of K_m)."""
    out = {}
    for mono, c in poly.items():
        for m, e in enumerate(mono):
            if e == 0:
                continue
            rest = list(mono)
            rest[m] -= 1
            rest = tuple(rest)
            for mono2, c2 in rule(m).items():
                _poly_add(out, {_mono_mul(rest, mono2): c * e * c2})
    return out


def _dt_rule(m):
    return {_var(m + 1): 1.0}


def _dv_rule(m):
    # d/dv K_m = d^m/dt^m [ (K_2 + K_1^2) / 2 ]
    out = {_var(m + 2): 0.5}
    for i in range(m + 1):
        _poly_add(out, {_mono_mul(_var(i + 1), _var(m - i + 1)): 0.5 * math.comb(m, i)})
    return out


@functools.cache
def mixed_derivative_polynomials() -> dict:
    r""":math:`K_{k,j}` as polynomials in :math:`K_1 .. K_8` (dict monomial exponents -> coefficient).

    Keys: the (k, j) of :data:`ORDERS` and :data:`REMAINDER_ORDERS` (k = 0 excluded for j = 0).
    """
    out = {}
    for k, j in ORDERS + REMAINDER_ORDERS:
        if k == 0 and j == 0:
            continue
        # start from dK/dt (k >= 1) or dK/dv (k == 0)
        if k >= 1:
            poly = {_var(1): 1.0}
            for _ in range(k - 1):
                poly = _derive(poly, _dt_rule)
            for _ in range(j):
                poly = _derive(poly, _dv_rule)
        else:
            poly = _dv_rule(0)
            for _ in range(j - 1):
                poly = _derive(poly, _dv_rule)
        out[(k, j)] = poly
    return out


def _eval_poly(poly, ks):
    """Evaluate a polynomial at ``ks[m]`` = K_m (arrays or floats)."""
    total = 0.0
    for mono, c in poly.items():
        term = c
        for m, e in enumerate(mono):
            if e:
                term = term * ks[m] ** e
        total = total + term
    return total


@functools.lru_cache(maxsize=64)
def derivative_bounds(epsilon: float) -> dict:
    r""":math:`M_{k,j} \ge \sup_{t, v\ge 0}|\partial_t^k\partial_v^j K|` for the remainder orders.

    Returns a dict (k, j) -> float for :data:`REMAINDER_ORDERS` (module docstring, steps 1-4).
    """
    mu = t_derivative_bounds(float(epsilon), 8)
    polys = mixed_derivative_polynomials()
    out = {}
    for kj in REMAINDER_ORDERS:
        poly = {mono: abs(c) for mono, c in polys[kj].items()}
        out[kj] = float(_eval_poly(poly, mu))
    return out


# --------------------------------------------------------------------------------------------
# Per-report weights: E[sigmoid^(m)(t + s Z)] by the exact path's quadrature rules
# --------------------------------------------------------------------------------------------


def _hermite_e(n: int, x):
    """Probabilists' Hermite polynomials He_0..He_n at x (list)."""
    out = [np.ones_like(x), x]
    for k in range(1, n):
        out.append(x * out[-1] - k * out[-2])
    return out[: n + 1]


@functools.cache
def _x_basis(order: int) -> np.ndarray:
    """Matrix A with sigmoid^(m)(u) = sum_j A[m, j] x^j, x = 1 - 2 sigmoid(u) = -tanh(u/2)."""
    s_of_x = np.polynomial.Polynomial([0.5, -0.5])
    out = np.zeros((order + 1, order + 2))
    for m in range(order + 1):
        c = np.polynomial.Polynomial(sigmoid_derivative_poly(m))(s_of_x).coef
        out[m, : c.size] = c
    return out


#: rows per block of the quadrature (keeps the (rows, nodes) arrays in cache)
_BLOCK = 8192


def expected_sigmoid_derivatives(t, s: float, order: int = MAX_WEIGHT_ORDER) -> np.ndarray:
    r""":math:`p_m(t) = E[\mathrm{sigmoid}^{(m)}(t + sZ)]`, m = 0..order, shape (order + 1, n).

    The rules of :func:`pymc_dpnoise.math.expected_sigmoid`: for :math:`s \le 1.5`
    Gauss-Hermite (40 nodes) on :math:`\mathrm{sigmoid}^{(m)} = \sum_j A_{mj} x^j` with
    :math:`x = -\tanh((t + s x_k)/2)` (a well-conditioned basis: coefficients below 15 up
    to m = 6), so the rule needs the power sums :math:`\sum_k w_k x_k^j` only; above, the
    step split :math:`p_0 = \Phi(t/s) + \int_0^\infty e^{-\tau}[\varphi_s(-\tau - t) -
    \varphi_s(\tau - t)]/(1 + e^{-\tau})\,d\tau` (Gauss-Laguerre, 40 nodes) differentiated
    in t in closed form (:math:`\partial_t^m\varphi_s(x - t) = s^{-m}He_m((x-t)/s)
    \varphi_s(x-t)`).
    """
    from scipy.special import ndtr

    t = np.asarray(t, dtype=np.float64).ravel()
    s = float(s)
    out = np.empty((order + 1, t.size))
    if s <= _SWITCH_SD:
        x, w = np.polynomial.hermite.hermgauss(_NODES)
        x, w = 0.5 * x * _SQRT2 * s, w / np.sqrt(np.pi)
        amat = _x_basis(order)
        for start in range(0, t.size, _BLOCK):
            tb = t[start : start + _BLOCK]
            xb = -np.tanh(0.5 * tb[:, None] + x[None, :])
            pw = np.empty((order + 2, tb.size))
            cur = np.ones_like(xb)
            pw[0] = 1.0
            for j in range(1, order + 2):
                cur *= xb
                pw[j] = cur @ w
            out[:, start : start + _BLOCK] = amat @ pw
        return out
    tau, wl = np.polynomial.laguerre.laggauss(_NODES)
    lw = wl / (1.0 + np.exp(-tau))
    for start in range(0, t.size, _BLOCK):
        tb = t[start : start + _BLOCK]
        y = tb / s
        phi_y = np.exp(-0.5 * y * y) / _SQRT_2PI
        he_y = _hermite_e(order, y)
        yn = (-tau[None, :] - tb[:, None]) / s  # x = -tau
        yp = (tau[None, :] - tb[:, None]) / s  # x = +tau
        phin = np.exp(-0.5 * yn * yn) / (_SQRT_2PI * s)
        phip = np.exp(-0.5 * yp * yp) / (_SQRT_2PI * s)
        hn = _hermite_e(order, yn)
        hp = _hermite_e(order, yp)
        for m in range(order + 1):
            integral = ((hn[m] * phin - hp[m] * phip) @ lw) / s**m
            if m == 0:
                step = ndtr(y)
            else:
                step = (-1.0) ** (m - 1) * he_y[m - 1] * phi_y / s**m
            out[m, start : start + _BLOCK] = step + integral
    return out


def label_derivatives(t, v: float, epsilon: float, orders=ORDERS) -> dict:
    r"""Per-report weights :math:`K_{k,j}(t, v)` for (k, j) in :data:`ORDERS` (dict of arrays).

    :math:`K_{0,0} = \log q`, :math:`q = a + b p_0`; :math:`r_m = b p_m / q`; the
    t-derivatives :math:`K_m` from :math:`r` by the moment-to-cumulant recursion
    :math:`K_m = r_m - \sum_{i=1}^{m-1}\binom{m-1}{i-1} K_i r_{m-i}`; the mixed ones from
    :func:`mixed_derivative_polynomials`.
    """
    eps = float(epsilon)
    a = 1.0 / (1.0 + math.exp(eps))  # sigmoid(-eps)
    b = math.tanh(0.5 * eps)
    top = max(k + 2 * j for k, j in orders)
    p = expected_sigmoid_derivatives(t, math.sqrt(max(float(v), 0.0)), top)
    q = a + b * np.clip(p[0], 0.0, 1.0)
    r = [None] + [b * p[m] / q for m in range(1, top + 1)]
    ks = [np.zeros_like(q) for _ in range(_NVARS)]
    for m in range(1, top + 1):
        km = r[m]
        for i in range(1, m):
            km = km - math.comb(m - 1, i - 1) * ks[i] * r[m - i]
        ks[m] = km
    polys = mixed_derivative_polynomials()
    out = {}
    for kj in orders:
        out[kj] = np.log(q) if kj == (0, 0) else _eval_poly(polys[kj], ks) * np.ones_like(q)
    return out


# --------------------------------------------------------------------------------------------
# Moments of one chunk of reports
# --------------------------------------------------------------------------------------------


def _sym_index(d: int, k: int):
    """Index tuples i1 <= ... <= ik and their multiplicities (number of permutations)."""
    idx = list(itertools.combinations_with_replacement(range(d), k))
    mult = []
    for tup in idx:
        m = math.factorial(k)
        for x in set(tup):
            m //= math.factorial(tup.count(x))
        mult.append(m)
    return idx, np.asarray(mult)


#: rows per block of the tensor moments (bounds the (rows, d(d+1)/2) monomial array)
_ROWS = 65536


def fourth_moments(zx) -> np.ndarray:
    """Sum of z^(x4) over the rows of ``zx`` (n, d), as a full (d, d, d, d) tensor.

    The signed features w = +-z have the same fourth moments, so this does not depend on the
    labels or the pilot.
    """
    zx = np.asarray(zx, dtype=np.float64)
    d = zx.shape[1]
    idx2, _ = _sym_index(d, 2)
    i2 = np.asarray(idx2)
    m4 = np.zeros((len(idx2), len(idx2)))
    for start in range(0, len(zx), _ROWS):
        zb = zx[start : start + _ROWS]
        q = zb[:, i2[:, 0]] * zb[:, i2[:, 1]]
        m4 += q.T @ q
    full4 = np.empty((d, d, d, d))
    for p, (i, j) in enumerate(idx2):
        for r_, (k, l_) in enumerate(idx2):
            val = m4[p, r_]
            full4[i, j, k, l_] = full4[j, i, k, l_] = val
            full4[i, j, l_, k] = full4[j, i, l_, k] = val
    return full4


def chunk_moments(zx, zy, beta0, v0, epsilon, *, fourth: bool = True) -> dict:
    """Sums over one chunk of reports: n, S, the weighted C_{k,j} and (optionally) M_4.

    ``zx`` (n, d), ``zy`` (n,) in {0, 1}.  Tensors are returned in full (symmetric) form.
    """
    zx = np.asarray(zx, dtype=np.float64)
    zy = np.asarray(zy, dtype=np.float64)
    n, d = zx.shape
    w = zx * (2.0 * zy - 1.0)[:, None]
    t = w @ np.asarray(beta0, dtype=np.float64)
    kw = label_derivatives(t, v0, epsilon)
    out = {"n": n, "sums": zx.sum(axis=0), "scatter": zx.T @ zx}
    for j in range(4):
        out[f"c0{j}"] = float(kw[(0, j)].sum())
    for j in range(3):
        out[f"c1{j}"] = kw[(1, j)] @ w
    for j in range(2):
        out[f"c2{j}"] = (w * kw[(2, j)][:, None]).T @ w
    idx2, _ = _sym_index(d, 2)
    i2 = np.asarray(idx2)
    c3 = np.zeros((d, len(idx2)))
    for start in range(0, n, _ROWS):
        wb = w[start : start + _ROWS]
        q = wb[:, i2[:, 0]] * wb[:, i2[:, 1]]  # quadratic monomials
        c3 += (wb * kw[(3, 0)][start : start + _ROWS, None]).T @ q
    full3 = np.empty((d, d, d))
    for p, (i, j) in enumerate(idx2):
        full3[:, i, j] = c3[:, p]
        full3[:, j, i] = c3[:, p]
    out["c30"] = full3
    if fourth:
        out["m4"] = fourth_moments(zx)
    return out


# --------------------------------------------------------------------------------------------
# The packed summary and the summed log density (NumPy and PyTensor)
# --------------------------------------------------------------------------------------------


def packed_layout(d: int) -> list[tuple[str, tuple[int, ...]]]:
    """Fields of the packed summary vector, in order (name, shape)."""
    return [
        ("n", ()),
        ("epsilon_y", ()),
        ("v0", ()),
        ("beta0", (d,)),
        ("scatter", (d, d)),
        ("c0", (4,)),
        ("c1", (3, d)),
        ("c2", (2, d, d)),
        ("c3", (d, d, d)),
        ("m4", (d, d, d, d)),
    ]


def packed_size(d: int) -> int:
    """Length of the packed summary: 7 + 4d + 3d² + d³ + d⁴."""
    return sum(int(np.prod(s)) for _, s in packed_layout(d))


def dim_from_packed_size(size: int) -> int | None:
    """d with :func:`packed_size` (d) == size, or None."""
    for d in range(1, 200):
        ps = packed_size(d)
        if ps == size:
            return d
        if ps > size:
            return None
    return None


def unpack(vec, d: int) -> dict:
    """Split a packed summary (NumPy array or PyTensor vector) into its fields."""
    out, pos = {}, 0
    for name, shape in packed_layout(d):
        size = int(np.prod(shape))
        part = vec[pos : pos + size]
        out[name] = part[0] if shape == () else part.reshape(shape)
        pos += size
    return out


def _bound_terms(eps, n, s2, s4, eta_abs, xp):
    """Remainder bound (module docstring) from N, sum delta^2, sum delta^4 and |eta|."""
    m = derivative_bounds(float(eps))
    sqrt = xp.sqrt
    # + 1e-24 under the roots: finite first and second derivatives at the pilot (where the
    # sums vanish) for samplers and Hessians; it raises the bound by at most 1e-12 |eta|^k
    s1 = sqrt(n * s2 + 1e-24)
    s3 = sqrt(s2 * s4 + 1e-24)
    return (
        m[(4, 0)] / 24.0 * s4
        + m[(0, 4)] / 24.0 * n * eta_abs**4
        + m[(1, 3)] / 6.0 * eta_abs**3 * s1
        + m[(2, 2)] / 4.0 * eta_abs**2 * s2
        + m[(3, 1)] / 6.0 * eta_abs * s3
        + QUADRATURE_ALLOWANCE * n
    )


def beta_v(theta, cov, sigma_x):
    """NumPy: beta = (cov + diag(sx^2))^{-1} cov theta and v = theta' A theta."""
    theta = np.asarray(theta, dtype=np.float64)
    cov = np.asarray(cov, dtype=np.float64)
    sx2 = np.broadcast_to(np.asarray(sigma_x, dtype=np.float64) ** 2, theta.shape[-1:])
    sz = cov + np.diag(sx2)
    beta = np.linalg.solve(sz, cov @ theta)
    v = max(float(np.sum(beta * sx2 * theta)), 0.0)
    return beta, v


def label_polynomial_numpy(packed: dict, beta, v) -> dict:
    """NumPy: the expanded label term, its derivatives in (beta, v), and the bound."""
    d = packed["beta0"].shape[0]
    delta = np.asarray(beta, dtype=np.float64) - packed["beta0"]
    eta = float(v) - float(packed["v0"])
    c0, c1, c2, c3 = packed["c0"], packed["c1"], packed["c2"], packed["c3"]
    h = c2[0] + c2[1] * eta
    c3d = np.tensordot(c3, delta, axes=([2], [0]))  # (d, d)
    c3dd = c3d @ delta
    value = (
        c0[0]
        + c0[1] * eta
        + c0[2] * eta**2 / 2
        + c0[3] * eta**3 / 6
        + (c1[0] + c1[1] * eta + c1[2] * eta**2 / 2) @ delta
        + 0.5 * delta @ h @ delta
        + c3dd @ delta / 6
    )
    g_beta = c1[0] + c1[1] * eta + c1[2] * eta**2 / 2 + h @ delta + 0.5 * c3dd
    g_v = (
        c0[1]
        + c0[2] * eta
        + c0[3] * eta**2 / 2
        + (c1[1] + c1[2] * eta) @ delta
        + 0.5 * delta @ c2[1] @ delta
    )
    h_bb = h + c3d
    h_bv = c1[1] + c1[2] * eta + c2[1] @ delta
    h_vv = c0[2] + c0[3] * eta + c1[2] @ delta
    n = float(packed["n"])
    s2 = float(delta @ packed["scatter"] @ delta)
    dd = np.outer(delta, delta).ravel()
    s4 = float(dd @ packed["m4"].reshape(d * d, d * d) @ dd)
    bound = float(_bound_terms(packed["epsilon_y"], n, s2, s4, abs(eta), np))
    return dict(value=value, g_beta=g_beta, g_v=g_v, h_bb=h_bb, h_bv=h_bv, h_vv=h_vv, bound=bound)


def perturbed_logreg_summary_logp(value, theta, cov, sigma_x, epsilon, tol, d: int):
    r"""PyTensor: summed log density of N reports from their packed summary.

    Returns ``(logp, bound, ok)``: ``logp`` = exact Gaussian term + the expanded label term
    :math:`\hat L` :math:`-\max(B - \mathrm{tol}, 0)`, ``bound`` = :math:`B` (nats),
    ``ok`` = :math:`\Sigma + \Sigma_*` positive definite.  Where :math:`B \le` ``tol`` the
    value is within :math:`B` of the exact summed log density; everywhere it is at most
    ``tol`` above it (:math:`\hat L \le L + B`), so no region the bound does not certify can
    hold more than :math:`e^{\mathrm{tol}}` times its exact posterior mass.  ``epsilon`` is a
    Python float (the summary's label budget; the constants :math:`M_{k,j}` depend on it).
    """
    import pytensor.tensor as pt

    from .linalg import spd_inverse_logdet

    vec = pt.as_tensor_variable(value).astype("float64")
    if not isinstance(tol, pt.TensorVariable):
        tol = pt.as_tensor_variable(np.asarray(tol, dtype="float64"))
    p = unpack(vec, d)
    theta = pt.as_tensor_variable(theta).astype("float64")
    cov = pt.as_tensor_variable(cov).astype("float64")
    sx2 = pt.sqr(pt.as_tensor_variable(sigma_x).astype("float64")) * pt.ones((d,))
    n = p["n"]
    sz = cov + pt.diag(sx2)
    P, logdet, ok = spd_inverse_logdet(sz)
    gauss = -0.5 * (n * (d * np.log(2 * np.pi) + logdet) + pt.sum(P * p["scatter"]))
    beta = pt.dot(P, pt.dot(cov, theta))
    v = pt.maximum(pt.sum(beta * sx2 * theta), 0.0)
    delta = beta - p["beta0"]
    eta = v - p["v0"]
    c0, c1, c2, c3 = p["c0"], p["c1"], p["c2"], p["c3"]
    h = c2[0] + c2[1] * eta
    c3dd = pt.dot(pt.tensordot(c3, delta, axes=[[2], [0]]), delta)
    label = (
        c0[0]
        + c0[1] * eta
        + c0[2] * eta**2 / 2
        + c0[3] * eta**3 / 6
        + pt.dot(c1[0] + c1[1] * eta + c1[2] * eta**2 / 2, delta)
        + 0.5 * pt.dot(delta, pt.dot(h, delta))
        + pt.dot(c3dd, delta) / 6
    )
    s2 = pt.dot(delta, pt.dot(p["scatter"], delta))
    dd = pt.outer(delta, delta).reshape((d * d,))
    s4 = pt.dot(dd, pt.dot(p["m4"].reshape((d * d, d * d)), dd))
    bound = _bound_terms(float(epsilon), n, s2, pt.maximum(s4, 0.0), pt.abs(eta), pt)
    logp = gauss + label - pt.maximum(bound - tol, 0.0)
    return logp, bound, ok
