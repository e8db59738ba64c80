r"""Moments of (approximate) sufficient statistics of GLMs under a Gaussian input model.

The normal approximation of a noisy sum of per-record statistics (GLM paper, Sec. 3.2; LDP
paper, Sec. 3.1 and Supplement 13.1; REFERENCE §2.6):

.. math::

    z = \sum_{i=1}^n t(x_i, y_i) + \zeta,\quad x_i \sim N(0, \Sigma),\quad
    \zeta \sim N(0, \Sigma_\zeta)
    \quad\Longrightarrow\quad
    z \approx N(n\,\mu_s,\; n\,\Sigma_s + \Sigma_\zeta),

with :math:`\mu_s = E[t]`, :math:`\Sigma_s = \mathrm{Cov}[t]` per record.

Layouts (one per GLM, with :math:`t_2(x) = [x_1^2,\dots,x_d^2, \sqrt2 x_1x_2, \sqrt2 x_1x_3,
\dots, \sqrt2 x_{d-1}x_d]`, squares first, then cross products in lexicographic order):

* ``"linear"``:   :math:`[t_2(x),\; y\,x,\; y^2]`, size :math:`d(d+1)/2 + d + 1`;
* ``"logistic"``: :math:`[y\,x,\; t_2(x)]` with :math:`y \in \{-1, 1\}`, size :math:`d + d(d+1)/2`;
* ``"poisson"``:  :math:`[x,\; t_2(x),\; y\,x,\; y\,t_2(x)]`, size :math:`2(d + d(d+1)/2)`.

How the moments are computed
----------------------------
All moments needed are of the form :math:`E[h(u)\, x_{a_1}\cdots x_{a_k}]` with
:math:`u = \theta^T x`, :math:`k \le 4` and :math:`h(u) = E[y^p \mid x]`.  For jointly Gaussian
:math:`(x, u)` with :math:`v = \mathrm{Cov}(x, u) = \Sigma\theta` and
:math:`s^2 = \theta^T\Sigma\theta`, repeated Gaussian integration by parts (Stein's lemma; the
polynomial case is Isserlis' theorem, GLM paper Thm. 3.1) gives

.. math::

    E[h(u)\, x_{a_1}\cdots x_{a_k}] = \sum_{\text{partial pairings } P}
        D_{j(P)} \prod_{\{b, c\} \in P} \Sigma_{bc} \prod_{b \notin P} v_b,
    \qquad D_j = E[h^{(j)}(u)],

where :math:`j(P)` is the number of unpaired indices.  E.g.
:math:`E[x x^T u^2] = s^2\Sigma + 2 v v^T` (:math:`D_0 = s^2, D_2 = 2`), as in REFERENCE §2.6.
The sum over pairings has at most 10 terms (k = 4) and is formed once, when the graph is built;
each term is a gather of :math:`\Sigma` or :math:`v` with constant index arrays, so the
running graph has no loops and its cost is :math:`O(m^2)` for :math:`m` statistics.
The scalars :math:`D_j` carry the GLM:

* linear: :math:`(x, y)` is jointly Gaussian with covariance
  :math:`C = [[\Sigma, v], [v^T, s^2 + \sigma^2]]`; all statistics are degree-2 monomials of
  :math:`w = (x, y)`, so the moments are exact Isserlis sums over :math:`C` (only :math:`D_0 = 1`);
* logistic: :math:`E[y \mid x] = 2\,\mathrm{sigmoid}(u) - 1 = \tanh(u/2)` and :math:`y^2 = 1`.
  The GLM paper (eq. 5 and Sec. 3.2) writes :math:`E[y\mid x] = (1 - e^u)/(1 + e^u)`, the wrong sign
  for its eq. 4 model; here the sign-correct Taylor series
  :math:`\tanh(u/2) = u/2 - u^3/24 + u^5/240 - 17u^7/40320 + \dots` is truncated at ``order``
  (3 is the paper's two terms), giving :math:`D_j` as polynomials in :math:`s^2`; or
  ``order="quadrature"``: :math:`D_j = E[\tanh^{(j)}(u/2)]` by a 201-node trapezoid rule in
  :math:`u/s`, exact to ~1e-14 for :math:`s \le 12` (no Taylor truncation);
* Poisson (log link): :math:`E[y\mid x] = e^u`, :math:`E[y^2\mid x] = e^u + e^{2u}`, so
  :math:`D_j = e^{s^2/2}` and :math:`e^{s^2/2} + 2^j e^{2 s^2}` exactly (this is the exponential
  tilting identity of REFERENCE §2.6).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytensor.tensor as pt

from .linalg import cholesky_inverse

__all__ = [
    "GLMS",
    "logistic_taylor_coefficients",
    "mvnormal_logp_chol",
    "ss_moments",
    "ss_normal_approx_logp",
    "stat_dim",
    "stat_names",
    "t2_indices",
]

GLMS = ("linear", "logistic", "poisson")
_LOG_2PI = math.log(2.0 * math.pi)


def _as_f64(x):
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


def _check_glm(glm):
    if glm not in GLMS:
        raise ValueError(f"`glm` must be one of {GLMS}; got {glm!r}")


def _check_order(order):
    if isinstance(order, str):
        if order != "quadrature":
            raise ValueError(f"`order` must be an odd int >= 1 or 'quadrature'; got {order!r}")
        return order
    if isinstance(order, bool) or not isinstance(order, int | np.integer):
        raise ValueError(f"`order` must be an odd int >= 1 or 'quadrature'; got {order!r}")
    if order < 1 or order % 2 == 0 or order > 15:
        raise ValueError(f"`order` must be an odd int in [1, 15] or 'quadrature'; got {order}")
    return int(order)


# --------------------------------------------------------------------------------------------
# Layout
# --------------------------------------------------------------------------------------------


@cache
def t2_indices(d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Index arrays ``(i, j, weight)`` of :math:`t_2(x)`: entry k is ``weight[k] * x[i[k]] * x[j[k]]``.

    Squares first (weight 1), then the cross products :math:`i < j` in lexicographic order with
    weight :math:`\sqrt2` (GLM paper eq. 6; REFERENCE §1).

    Examples
    --------
    >>> i, j, w = t2_indices(3)
    >>> i.tolist(), j.tolist()
    ([0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2])
    """
    d = int(d)
    if d < 1:
        raise ValueError(f"`d` must be >= 1; got {d}")
    cross = [(a, b) for a in range(d) for b in range(a + 1, d)]
    i = np.array(list(range(d)) + [a for a, _ in cross], dtype=np.int64)
    j = np.array(list(range(d)) + [b for _, b in cross], dtype=np.int64)
    w = np.concatenate([np.ones(d), np.full(len(cross), math.sqrt(2.0))])
    for a in (i, j, w):
        a.setflags(write=False)
    return i, j, w


def stat_dim(glm: str, d: int) -> int:
    """Number of statistics per record for ``glm`` with ``d`` covariates."""
    _check_glm(glm)
    d2 = d * (d + 1) // 2
    return {"linear": d2 + d + 1, "logistic": d + d2, "poisson": 2 * (d + d2)}[glm]


def stat_names(glm: str, d: int) -> list[str]:
    """Human-readable name of each statistic, in layout order.

    Examples
    --------
    >>> stat_names("logistic", 2)
    ['y*x0', 'y*x1', 'x0^2', 'x1^2', 'sqrt2*x0*x1']
    """
    _check_glm(glm)
    i, j, _ = t2_indices(d)
    t2 = [f"x{a}^2" if a == b else f"sqrt2*x{a}*x{b}" for a, b in zip(i, j, strict=True)]
    t1 = [f"x{a}" for a in range(d)]
    if glm == "linear":
        return t2 + [f"y*{n}" for n in t1] + ["y^2"]
    if glm == "logistic":
        return [f"y*{n}" for n in t1] + t2
    return t1 + t2 + [f"y*{n}" for n in t1] + [f"y*{n}" for n in t2]


# A block of statistics: y^p * weight[k] * prod_r x[idx[r][k]]
class _Block:
    def __init__(self, p, idx, weight):
        self.p = p
        self.idx = tuple(np.asarray(a, dtype=np.int64) for a in idx)
        self.weight = np.asarray(weight, dtype=float)
        self.size = len(self.weight)


def _blocks(glm, d):
    i2, j2, w2 = t2_indices(d)
    ar = np.arange(d)
    one = np.ones(d)
    if glm == "logistic":
        return [_Block(1, (ar,), one), _Block(0, (i2, j2), w2)]
    if glm == "poisson":
        return [
            _Block(0, (ar,), one),
            _Block(0, (i2, j2), w2),
            _Block(1, (ar,), one),
            _Block(1, (i2, j2), w2),
        ]
    raise AssertionError(glm)


# --------------------------------------------------------------------------------------------
# Gaussian moments with a function of u = theta^T x (Stein / Isserlis)
# --------------------------------------------------------------------------------------------


@cache
def _partial_pairings(k: int):
    """All sets of disjoint pairs of range(k) with the unpaired rest: ((pairs, singles), ...)."""
    out = []

    def rec(rest, pairs, singles):
        if not rest:
            out.append((tuple(pairs), tuple(singles)))
            return
        first, others = rest[0], rest[1:]
        rec(others, pairs, [*singles, first])  # first stays unpaired
        for n, other in enumerate(others):  # or first is paired with `other`
            rec(others[:n] + others[n + 1 :], [*pairs, (first, other)], singles)

    rec(tuple(range(k)), [], [])
    return tuple(out)


class _Gauss:
    """Gathers of Sigma (..., d, d) and v (..., d) at constant index arrays, with caching."""

    def __init__(self, sigma, v, d):
        self.sigma, self.v, self.d = sigma, v, d
        self._cache = {}

    def _key(self, *parts):
        return tuple((side, a.tobytes()) for side, a in parts)

    def s(self, pa, pb):
        """Sigma[a, b] for positions pa, pb = (side, index array); side "r" rows, "c" columns."""
        (sa, ia), (sb, ib) = pa, pb
        key = ("s", *self._key(pa, pb))
        if key in self._cache:
            return self._cache[key]
        if sa == sb:  # elementwise gather Sigma[ia[k], ib[k]] -> (..., m) then expand
            rows = pt.take(self.sigma, ia, axis=-2)  # (..., m, d)
            sel = np.eye(self.d)[ib]  # (m, d) one-hot
            out = pt.sum(rows * sel, axis=-1)
            out = out[..., :, None] if sa == "r" else out[..., None, :]
        else:
            if sa == "c":
                (sa, ia), (sb, ib) = pb, pa
            # one-hot matmuls: their gradient is two more matmuls (a scatter-add is much slower)
            ea, eb = np.eye(self.d)[ia], np.eye(self.d)[ib]
            out = (ea @ self.sigma) @ eb.T  # (..., mr, mc)
        self._cache[key] = out
        return out

    def vv(self, pa):
        side, ia = pa
        key = ("v", *self._key(pa))
        if key not in self._cache:
            g = pt.take(self.v, ia, axis=-1)
            self._cache[key] = g[..., :, None] if side == "r" else g[..., None, :]
        return self._cache[key]

    def moment(self, rows, cols, D):
        """E[h(u) prod_r x[rows_r] prod_c x[cols_c]] as (..., m_rows, m_cols).

        ``D`` maps j -> E[h^(j)(u)] (batch-shaped tensor); missing j means D_j = 0.
        """
        pos = [("r", a) for a in rows] + [("c", a) for a in cols]
        total = None
        for pairs, singles in _partial_pairings(len(pos)):
            dj = D.get(len(singles))
            if dj is None:
                continue
            term = dj[..., None, None]
            for a, b in pairs:
                term = term * self.s(pos[a], pos[b])
            for a in singles:
                term = term * self.vv(pos[a])
            total = term if total is None else total + term
        if total is None:  # e.g. odd moments of x alone: exactly zero
            mr = len(rows[0]) if rows else 1
            mc = len(cols[0]) if cols else 1
            total = next(iter(D.values()))[..., None, None] * np.zeros((mr, mc))
        return total


def _block_matrix(blocks):
    """Assemble a symmetric block matrix from the upper blocks dict[(i, j)] -> (..., mi, mj)."""
    n = max(i for i, _ in blocks) + 1
    rows = []
    for i in range(n):
        row = [blocks[(i, j)] if i <= j else pt.swapaxes(blocks[(j, i)], -1, -2) for j in range(n)]
        rows.append(pt.concatenate(row, axis=-1))
    return pt.concatenate(rows, axis=-2)


def _moments_from_blocks(blocks, gauss, h_of_p):
    means, covs = [], {}
    for b in blocks:
        m = gauss.moment(b.idx, (), h_of_p(b.p))[..., :, 0]
        means.append(m * b.weight)
    for i, bi in enumerate(blocks):
        for j in range(i, len(blocks)):
            bj = blocks[j]
            e2 = gauss.moment(bi.idx, bj.idx, h_of_p(bi.p + bj.p))
            w = np.outer(bi.weight, bj.weight)
            covs[(i, j)] = e2 * w - means[i][..., :, None] * means[j][..., None, :]
    return pt.concatenate(means, axis=-1), _block_matrix(covs)


# --------------------------------------------------------------------------------------------
# D_j = E[h^(j)(u)], u ~ N(0, s2)
# --------------------------------------------------------------------------------------------


def _double_factorial_odd(m: int) -> int:
    """(m - 1)!! = E[Z^m] for even m >= 0 (Z standard normal)."""
    return math.prod(range(m - 1, 0, -2)) if m > 0 else 1


@cache
def logistic_taylor_coefficients(order: int) -> tuple[float, ...]:
    r"""Coefficients :math:`c_k` (k = 0..order) of the Taylor series of :math:`\tanh(u/2)`.

    :math:`c_{2n-1} = 2(2^{2n} - 1) B_{2n} / (2n)!` (Bernoulli numbers); even coefficients are 0.

    Examples
    --------
    >>> [round(c, 8) for c in logistic_taylor_coefficients(5)]
    [0.0, 0.5, 0.0, -0.04166667, 0.0, 0.00416667]
    """
    from fractions import Fraction

    # Bernoulli numbers B_0..B_{order+1} (exact, Akiyama–Tanigawa)
    nmax = order + 1
    bern = []
    a = [Fraction(0)] * (nmax + 1)
    for m in range(nmax + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        bern.append(a[0])  # B_m with B_1 = +1/2 (unused)
    c = [0.0] * (order + 1)
    for n in range(1, (order + 1) // 2 + 1):
        k = 2 * n - 1
        c[k] = float(2 * (2 ** (2 * n) - 1) * bern[2 * n] / math.factorial(2 * n))
    return tuple(c)


def _taylor_D(coef, s2, jmax):
    """D_j = E[g^(j)(u)] for the polynomial g(u) = sum_k coef[k] u^k, u ~ N(0, s2)."""
    D = {}
    for j in range(jmax + 1):
        total = None
        for k, ck in enumerate(coef):
            if ck == 0.0 or k < j or (k - j) % 2:
                continue
            c = ck * math.factorial(k) / math.factorial(k - j) * _double_factorial_odd(k - j)
            term = c * s2 ** ((k - j) // 2) if k > j else pt.full_like(s2, c)
            total = term if total is None else total + term
        if total is not None:
            D[j] = total
    return D


@cache
def _trapezoid_half():
    """Nodes z > 0 and weights of the trapezoid rule for E[f(Z)], Z ~ N(0, 1), f even.

    Step 0.05 on [-10, 10].  For an integrand analytic in the strip |Im z| < a the trapezoid
    rule's error is ~exp(-2 pi a / h); for tanh(s z / 2), a = pi / s, so the error is below 1e-15
    for s <= 12 (and ~1e-9 at s = 20); the truncation at |z| = 10 costs ~1e-23.
    """
    h = 0.05
    z = np.arange(1, round(10.0 / h) + 1) * h
    w = 2.0 * h * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)  # both signs folded
    w0 = h / math.sqrt(2.0 * math.pi)  # the node at z = 0
    return z, w, w0


def _tanh_half_derivs(u):
    """tanh(u/2) and its first three derivatives."""
    t = pt.tanh(0.5 * u)
    q = 1.0 - t * t
    return t, 0.5 * q, -0.5 * t * q, 0.25 * q * (3.0 * t * t - 1.0)


def _quadrature_D(s2):
    """D_1, D_3 of g(u) = tanh(u/2) by quadrature (D_0 = D_2 = 0: g is odd)."""
    small = s2 < 1e-8
    s2_safe = pt.switch(small, 1.0, s2)  # double where: sqrt has an infinite slope at 0
    s = pt.sqrt(s2_safe)
    z, w, w0 = _trapezoid_half()
    _, g1, _, g3 = _tanh_half_derivs(s[..., None] * z)
    d1q = pt.sum(g1 * w, axis=-1) + 0.5 * w0
    d3q = pt.sum(g3 * w, axis=-1) - 0.25 * w0
    # below s2 = 1e-8 the Taylor series to order 9 is exact to ~1e-33
    taylor = _taylor_D(logistic_taylor_coefficients(9), pt.switch(small, s2, 0.0), 3)
    return {1: pt.switch(small, taylor[1], d1q), 3: pt.switch(small, taylor[3], d3q)}


# --------------------------------------------------------------------------------------------
# Public: moments
# --------------------------------------------------------------------------------------------


def _prepare(theta, cov):
    theta = _as_f64(theta)
    cov = _as_f64(cov)
    if theta.ndim < 1 or cov.ndim < 2:
        raise ValueError("`theta` must have >= 1 dimension (…, d) and `cov` >= 2 (…, d, d)")
    d = theta.type.shape[-1]
    if d is None:
        d = cov.type.shape[-1]
    if d is None:
        raise ValueError(
            "the number of covariates d must be known when the graph is built: give `theta` or "
            "`cov` a static last dimension (e.g. a NumPy array, or pt.tensor(shape=(None, 3)))"
        )
    v = pt.sum(cov * theta[..., None, :], axis=-1)  # Sigma theta
    s2 = pt.sum(theta * v, axis=-1)  # theta^T Sigma theta
    return theta, cov, int(d), v, s2


def ss_moments(theta, cov, glm: str, sigma=None, *, order=3):
    r"""Per-record mean and covariance of the statistics of ``glm`` under :math:`x \sim N(0, \Sigma)`.

    Parameters
    ----------
    theta : tensor_like, shape (..., d)
        Regression coefficients (no intercept: the inputs are centred).
    cov : tensor_like, shape (..., d, d)
        Covariance :math:`\Sigma` of the inputs.
    glm : {"linear", "logistic", "poisson"}
        Model and statistics layout (see the module docstring).
    sigma : tensor_like, shape (...), optional
        Residual standard deviation; required for ``"linear"``, not allowed otherwise.
    order : int or "quadrature", default 3
        Logistic only: odd Taylor order of :math:`E[y\mid x] = \tanh(u/2)` (3 = the GLM paper's two
        terms, sign-corrected; 5, 7, ... add terms), or ``"quadrature"`` for
        expectations of :math:`\tanh(u/2)` itself (trapezoid rule, error < 1e-13 for
        :math:`\theta^T\Sigma\theta \le 144`).

    Returns
    -------
    mean : TensorVariable, shape (..., m)
    cov_s : TensorVariable, shape (..., m, m)

    Notes
    -----
    Linear: exact (Isserlis on the joint Gaussian of :math:`(x, y)`, LDP paper Sec. 3.1.1).
    Poisson: exact (exponential tilting, GLM paper Supplement).  Logistic, Taylor ``order`` k:
    the error in :math:`D_j` is :math:`O(s^{k+1-j})` with :math:`s^2 = \theta^T\Sigma\theta`; the
    series of :math:`\tanh(u/2)` converges only for :math:`|u| < \pi`, so raising the order helps
    only for small :math:`s` (GLM paper Sec. 5: accuracy falls for large :math:`\|\theta\|`), and
    for large :math:`s` the Taylor covariance can stop being positive semi-definite.  The
    quadrature option has neither problem.

    Examples
    --------
    >>> import numpy as np
    >>> mean, cov_s = ss_moments(np.array([0.5, -0.2]), np.eye(2), "linear", sigma=1.0)
    >>> mean.eval().round(3).tolist()
    [1.0, 1.0, 0.0, 0.5, -0.2, 1.29]
    """
    _check_glm(glm)
    order = _check_order(order)
    theta, cov, d, v, s2 = _prepare(theta, cov)
    if glm == "linear":
        if sigma is None:
            raise ValueError("`sigma` (the residual standard deviation) is required for 'linear'")
        sigma = _as_f64(sigma)
        # joint covariance of w = (x, y): [[Sigma, v], [v^T, s2 + sigma^2]]
        vy = s2 + sigma * sigma
        top = pt.concatenate([cov, v[..., :, None]], axis=-1)
        bottom = pt.concatenate([v, vy[..., None]], axis=-1)[..., None, :]
        joint = pt.concatenate([top, bottom], axis=-2)
        i2, j2, w2 = t2_indices(d)
        ia = np.concatenate([i2, np.full(d, d), [d]])
        ib = np.concatenate([j2, np.arange(d), [d]])
        w = np.concatenate([w2, np.ones(d + 1)])
        block = _Block(0, (ia, ib), w)
        gauss = _Gauss(joint, None, d + 1)
        one = {0: pt.ones_like(vy)}
        return _moments_from_blocks([block], gauss, lambda p: one)
    if sigma is not None:
        raise ValueError(f"`sigma` is only used by glm='linear', not {glm!r}")
    gauss = _Gauss(cov, v, d)
    one = {0: pt.ones_like(s2)}
    if glm == "logistic":
        if order == "quadrature":
            odd = _quadrature_D(s2)
        else:
            odd = _taylor_D(logistic_taylor_coefficients(order), s2, 3)

        def h_of_p(p):
            return one if p % 2 == 0 else odd

    else:  # poisson
        e1 = pt.exp(0.5 * s2)
        e2 = pt.exp(2.0 * s2)
        tilt = {
            0: one,
            1: dict.fromkeys(range(5), e1),
            2: {j: e1 + (2.0**j) * e2 for j in range(5)},
        }

        def h_of_p(p):
            return tilt[p]

    return _moments_from_blocks(_blocks(glm, d), gauss, h_of_p)


# --------------------------------------------------------------------------------------------
# Public: log density
# --------------------------------------------------------------------------------------------


def _chol_parts(resid, cov):
    chol = pt.linalg.cholesky(cov, lower=True, on_error="nan")
    diag = pt.diagonal(chol, axis1=-2, axis2=-1)
    posdef = pt.all(diag > 0, axis=-1)
    return chol, diag, posdef


def _mvn_forward(resid, cov):
    chol, diag, posdef = _chol_parts(resid, cov)
    white = pt.linalg.solve_triangular(chol, resid, lower=True, b_ndim=1)
    m = resid.shape[-1].astype("float64")
    logp = -0.5 * pt.sum(white * white, axis=-1) - pt.sum(pt.log(diag), axis=-1)
    logp = logp - 0.5 * m * _LOG_2PI
    return pt.switch(posdef, logp, -np.inf)


_CINV_METHOD = "potri"  # or "cho_solve"


def _mvn_pullback(inputs, outputs, cotangents):
    # d logp / d r = -C^{-1} r;  d logp / d C = (alpha alpha^T - C^{-1}) / 2, alpha = C^{-1} r.
    # Written out because differentiating through the Cholesky factorisation costs ~20x more.
    resid, cov = inputs
    (g,) = cotangents
    chol, _, posdef = _chol_parts(resid, cov)
    # C^{-1} from L by LAPACK potri ((2/3) m^3 flops; cho_solve against I costs 2 m^3 and is
    # kept, behind the module flag, for benchmarks/ss_normal_approx.py's comparison)
    if _CINV_METHOD == "cho_solve":
        eye = pt.broadcast_to(pt.eye(cov.shape[-1], dtype="float64"), chol.shape)
        cinv = pt.linalg.cho_solve((chol, True), eye)
    else:
        cinv = cholesky_inverse(chol)
    alpha = pt.sum(cinv * resid[..., None, :], axis=-1)
    g_ok = pt.switch(posdef, g, 0.0)
    g_resid = -g_ok[..., None] * pt.switch(posdef[..., None], alpha, 0.0)
    d_cov = 0.5 * (alpha[..., :, None] * alpha[..., None, :] - cinv)
    g_cov = g_ok[..., None, None] * pt.switch(posdef[..., None, None], d_cov, 0.0)
    return [g_resid, g_cov]


def mvnormal_logp_chol(value, mean, cov):
    r"""Log density of :math:`N(\text{value}; \text{mean}, \text{cov})` through a Cholesky factor.

    :math:`-\tfrac12\|L^{-1}(z - \mu)\|^2 - \sum_i \log L_{ii} - \tfrac m2 \log 2\pi` with
    :math:`LL^T = \text{cov}`: no explicit determinant, so it is accurate for ill-conditioned
    covariances.  Returns :math:`-\infty` where ``cov`` is not numerically positive definite (the
    Cholesky factor then contains NaN), with a zero gradient there.  The gradient is the closed
    form :math:`\partial/\partial\mu = C^{-1}(z-\mu)`,
    :math:`\partial/\partial C = \tfrac12(\alpha\alpha^T - C^{-1})` (one triangular inverse),
    about 20x cheaper than differentiating through the factorisation.  Batch dimensions in front
    broadcast.
    """
    from pytensor.compile.builders import OpFromGraph

    value, mean, cov = _as_f64(value), _as_f64(mean), _as_f64(cov)
    resid = value - mean
    if resid.ndim - 1 != cov.ndim - 2 or resid.ndim > 1:
        batch = pt.broadcast_shape(
            tuple(resid.shape)[:-1], tuple(cov.shape)[:-2], arrays_are_shapes=True
        )
        m = cov.shape[-1]
        resid = pt.broadcast_to(resid, (*batch, m))
        cov = pt.broadcast_to(cov, (*batch, m, m))
    r_in = resid.type()
    c_in = cov.type()
    op = OpFromGraph([r_in, c_in], [_mvn_forward(r_in, c_in)], inline=True, pullback=_mvn_pullback)
    return op(resid, cov)


def ss_normal_approx_logp(value, theta, cov, n, noise_cov, glm, sigma=None, *, order=3):
    r"""Log density of a noisy sum of statistics: :math:`N(z;\, n\mu_s,\, n\Sigma_s + \Sigma_\zeta)`.

    GLM paper Sec. 3.2 (central DP, :math:`\Sigma_\zeta = \sigma_\zeta^2 I`); LDP paper eq. 3 and
    Supplement 13.1 (local DP: every record adds its own noise, :math:`\Sigma_\zeta = n\Sigma_*`).
    Moments from :func:`ss_moments`; density from :func:`mvnormal_logp_chol`.
    """
    mean, cov_s = ss_moments(theta, cov, glm, sigma, order=order)
    n = _as_f64(n)
    total = n[..., None, None] * cov_s + _as_f64(noise_cov)
    return mvnormal_logp_chol(value, n[..., None] * mean, total)
