r"""Perturbed-input linear and logistic regression (LDP paper, Section 3.2.3 and Supplement 12).

Each person holds :math:`x \sim N(0, \Sigma)` (d-dimensional) and a response :math:`y`, and
reports :math:`z_x = x + N(0, \Sigma_*)`, :math:`\Sigma_* = \mathrm{diag}(\sigma_x^2)`, and a
privatised response :math:`z_y`.  A report row is ``[z_x, z_y]`` (length d + 1).

* Linear regression (Supplement 12.1, eqs. 34-41): :math:`y = \theta^T x + N(0, \sigma^2)`,
  :math:`z_y = y + N(0, \sigma_y^2)`.  The paper's factorisation (eq. 41) equals one joint
  Gaussian (REFERENCE §2.4), used here:

  .. math::

     [z_x; z_y] \sim N\left(0, \begin{bmatrix} \Sigma + \Sigma_* & \Sigma\theta \\
        \theta^T\Sigma & \theta^T\Sigma\theta + \sigma^2 + \sigma_y^2 \end{bmatrix}\right).

* Logistic regression (Supplement 12.2, eqs. 42-44): :math:`y \sim
  \mathrm{Bernoulli}(\mathrm{sigmoid}(\theta^T x))`, :math:`z_y` is :math:`y` through randomized
  response with keep probability :math:`\rho = e^{\epsilon_y}/(1 + e^{\epsilon_y})`:

  .. math::

     p(z_x, z_y) = N(z_x; 0, \Sigma + \Sigma_*)\,\pi(z_y),\quad
     \pi(1) = (1 - \rho) + (2\rho - 1)\, E[\mathrm{sigmoid}(u)],\quad
     u = \theta^T x \mid z_x \sim N(\theta^T h, \theta^T A \theta),

  :math:`h = \Sigma(\Sigma + \Sigma_*)^{-1} z_x`, :math:`A = \Sigma - \Sigma(\Sigma +
  \Sigma_*)^{-1}\Sigma = \Sigma(\Sigma + \Sigma_*)^{-1}\Sigma_*` (eq. 43).  The expectation is
  computed either by quadrature (accurate, :func:`expected_sigmoid`) or with the paper's
  Chebyshev polynomial (Section 7, eq. 12 and eq. 44; :func:`expected_sigmoid_chebyshev`).

Cost that does not grow with N
------------------------------
A Gaussian log density of N rows, summed, is :math:`-\tfrac12 (N \log|2\pi C| +
\mathrm{tr}(C^{-1} S))` with the scatter matrix :math:`S = W^T W`.  The functions here return
the *per-row* log density (PyMC needs it for pointwise log-likelihoods and LOO); the per-row
quadratic forms are written as ``sum((W @ P) * W, axis=1)`` with :math:`P = C^{-1}`.  Importing
this module registers a graph rewrite, :func:`local_sum_rows_of_quadratic_form`, that turns
*the sum over rows* of any expression built from such quadratic forms (plus terms that are
constant across rows, under ``switch``/parameter checks) into :math:`\mathrm{sum}(P \odot
W^T W)`.  When ``W`` is a constant (observed data in a ``pm.Model``), :math:`W^T W` is folded at
compile time, so the summed log density and its gradient cost O(d³) whatever N is.  The
rewrite is exact; it fires only when ``W`` depends on constants and shared variables alone.
It also takes the Gaussian factor :math:`N(z_x; 0, \Sigma + \Sigma_*)` of the logistic model.

Memory that grows only linearly with N (logistic label term)
------------------------------------------------------------
The logistic model's label factor has no such summary: it depends on each report through
:math:`z_x^T\beta` with :math:`\beta` a function of :math:`\theta`, so the reports cannot be
reduced to statistics (or binned) before :math:`\theta` is known, except for d = 1.  Its
quadrature evaluates ``2 * nodes`` terms per report; evaluated in one pass that is several
(N, nodes) arrays in the value and its gradient (about 2 kB per report with 40 nodes: 2.5 GB
peak at 10⁶ reports).  :func:`perturbed_logreg_logp` can instead evaluate it by a ``scan``
over blocks of reports (``block_rows``; automatic from :data:`BLOCK_THRESHOLD` reports in
:class:`~pymc_dpnoise.distributions.regression.PerturbedLogReg`), which bounds the working
memory to one block and keeps O(N) per-report vectors (1.6 GB peak at 10⁷ reports,
``benchmarks/memory_budgets.py``); the result is the same to rounding.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.graph.traversal import ancestors
from pytensor.tensor.basic import Alloc
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot, Sum
from pytensor.tensor.rewriting.basic import register_canonicalize, register_specialize

from ._op_support import group_gather, lift_grouped
from .linalg import spd_inverse_logdet

__all__ = [
    "chebyshev_sigmoid_coefficients",
    "chebyshev_sigmoid_monomials",
    "expected_sigmoid",
    "expected_sigmoid_chebyshev",
    "gaussian_moments",
    "mvnormal_rows_logp",
    "perturbed_linreg_cov",
    "perturbed_linreg_logp",
    "perturbed_logreg_logp",
]

_LOG_2PI = float(np.log(2.0 * np.pi))
_SQRT2 = float(np.sqrt(2.0))
_SQRT_2PI = float(np.sqrt(2.0 * np.pi))

#: below this posterior sd of u the Gauss-Hermite rule is used, above it Gauss-Laguerre
QUADRATURE_SWITCH_SD = 1.5
#: nodes of each of the two quadrature rules of the accurate mode
DEFAULT_NODES = 40


def _as_f64(x):
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


# --------------------------------------------------------------------------------------------
# Gaussian log densities (C⁻¹ and log|C| from one Cholesky factor: .linalg)
# --------------------------------------------------------------------------------------------


def _row_quadratic_forms(W, P):
    """``q_i = w_i^T P w_i`` for the rows of W; P symmetric.

    With a 2-d ``W`` and ``P`` this is written as ``sum((W @ P) * W, axis=1)``, the pattern
    that :func:`local_sum_rows_of_quadratic_form` rewrites when the rows are summed.
    """
    if W.ndim == 2 and P.ndim == 2:
        return pt.sum(pt.dot(W, P) * W, axis=1)
    Pw = pt.sum(P * W[..., None, :], axis=-1)  # batched P @ w
    return pt.sum(W * Pw, axis=-1)


def mvnormal_rows_logp(W, C):
    r"""Per-row :math:`\log N(w; 0, C)` for the rows ``w`` of ``W`` (shape ``(..., m)``).

    ``C`` has shape ``(..., m, m)`` and broadcasts against the rows' batch shape.  Returns
    ``(logp, ok)`` where ``ok`` flags a positive definite ``C`` (where it is False the value is
    computed for the identity matrix and must be masked by the caller).

    When ``W`` is a matrix and ``C`` is one matrix, the rows enter through
    ``sum((W @ C^{-1}) * W, axis=1)``; summed over rows this becomes
    :math:`\mathrm{tr}(C^{-1} W^T W)` (see the module docstring).  When ``C`` is given per
    group (``C_g[group]``, e.g. built from ``theta_g[group]``), each group's ``C_g`` is
    factorised once and the rows enter through :math:`\langle C_g^{-1}, w w^T\rangle`,
    which summed over rows becomes :math:`\sum_g \mathrm{tr}(C_g^{-1} S_g)` with
    :math:`S_g` the scatter matrix of group g's rows.
    """
    W = _as_f64(W)
    C = _as_f64(C)
    m = C.shape[-1]
    # C given per group (built from theta_g[group]): one factorisation per group, gathered
    group = group_gather(lift_grouped(C))
    if group is not None:
        P, logdet, ok = spd_inverse_logdet(group[0])
        idx = group[1]
        if W.ndim == 2:
            # q_i = <P_g, w_i w_i^T>: summed over rows, tr(P_g S_g) with S_g the group's
            # scatter matrix (local_sum_rows_of_quadratic_form)
            q = pt.sum(P[idx] * (W[:, :, None] * W[:, None, :]), axis=(1, 2))
        else:
            q = _row_quadratic_forms(W, P[idx])
        return -0.5 * (pt.cast(m, "float64") * _LOG_2PI + logdet[idx] + q), ok[idx]
    P, logdet, ok = spd_inverse_logdet(C)
    q = _row_quadratic_forms(W, P)
    return -0.5 * (pt.cast(m, "float64") * _LOG_2PI + logdet + q), ok


# --------------------------------------------------------------------------------------------
# Linear regression (Supplement 12.1)
# --------------------------------------------------------------------------------------------


def _sigma_x_vector(sigma_x, theta):
    sigma_x = _as_f64(sigma_x)
    if sigma_x.ndim == 0:
        sigma_x = pt.alloc(sigma_x, theta.shape[-1])
    return sigma_x


def perturbed_linreg_cov(theta, sigma, cov, sigma_x, sigma_y):
    r"""Joint covariance of one report ``[z_x, z_y]`` (Supplement 12.1, eq. 41; REFERENCE §2.4).

    .. math::

        C = \begin{bmatrix} \Sigma + \mathrm{diag}(\sigma_x^2) & \Sigma\theta \\
            \theta^T\Sigma & \theta^T\Sigma\theta + \sigma^2 + \sigma_y^2 \end{bmatrix}

    Shapes: ``theta (..., d)``, ``sigma (...)``, ``cov (..., d, d)``, ``sigma_x (..., d)`` or
    scalar, ``sigma_y (...)``; returns ``(..., d + 1, d + 1)``.
    """
    theta, sigma, cov, sigma_y = map(_as_f64, (theta, sigma, cov, sigma_y))
    sigma_x = _sigma_x_vector(sigma_x, theta)
    d = cov.shape[-1]
    # The blocks are placed by padding only what does not depend on theta or sigma (cov and
    # sigma_x, usually constants, folded at compile time) and by broadcasting against the
    # one-hot vector e_y of the last coordinate: no concatenation of parameters, whose
    # gradient (a split) is compiled separately by the Numba backend for every shape.
    cov_rows = pt.concatenate([cov, pt.zeros_like(cov[..., :1, :])], axis=-2)  # [Σ; 0]
    sx2 = pt.concatenate([pt.sqr(sigma_x), pt.zeros_like(sigma_x[..., :1])], axis=-1)
    sxx = pt.concatenate([cov_rows, pt.zeros_like(cov_rows[..., :1])], axis=-1)
    sxx = sxx + sx2[..., None, :] * pt.eye(d + 1, dtype="float64")
    c_pad = pt.sum(cov_rows * theta[..., None, :], axis=-1)  # [Σθ; 0]
    c = pt.sum(cov * theta[..., None, :], axis=-1)  # Σθ
    vyy = pt.sum(theta * c, axis=-1) + pt.sqr(sigma) + pt.sqr(sigma_y)
    e_y = pt.cast(pt.eq(pt.arange(d + 1), d), "float64")
    return (
        sxx
        + c_pad[..., :, None] * e_y
        + e_y[:, None] * c_pad[..., None, :]
        + vyy[..., None, None] * (e_y[:, None] * e_y)
    )


def perturbed_linreg_logp(value, theta, sigma, cov, sigma_x, sigma_y):
    r"""Per-report log density of perturbed-input linear regression (Supplement 12.1, eq. 41).

    ``value`` has shape ``(..., d + 1)``: ``[z_x, z_y]``.  The density is the joint Gaussian
    :math:`N([z_x; z_y]; 0, C)` with ``C`` from :func:`perturbed_linreg_cov`, evaluated through
    its Cholesky factor.  Returns ``(logp, ok)``, ``ok`` flagging a positive definite ``C``.

    Summed over reports with one parameter set (no per-report parameters) the cost is
    independent of the number of reports once the reports are constants (module docstring).
    """
    C = perturbed_linreg_cov(theta, sigma, cov, sigma_x, sigma_y)
    return mvnormal_rows_logp(value, C)


# --------------------------------------------------------------------------------------------
# E[sigmoid(u)], u ~ N(m, v): quadrature (accurate mode)
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _hermite_rule(n: int):
    x, w = np.polynomial.hermite.hermgauss(n)
    return x * _SQRT2, w / np.sqrt(np.pi)  # nodes/weights for E[f(Z)], Z ~ N(0, 1)


@functools.lru_cache(maxsize=32)
def _laguerre_rule(n: int):
    return np.polynomial.laguerre.laggauss(n)  # int_0^inf e^{-t} f(t) dt


def expected_sigmoid(m, v, nodes: int = DEFAULT_NODES, *, spread=None):
    r""":math:`E[\mathrm{sigmoid}(u)]` for :math:`u \sim N(m, v)`, accurate to about 1e-12.

    Two quadrature rules, chosen by the standard deviation :math:`s = \sqrt v`:

    * :math:`s \le 1.5`: Gauss-Hermite with ``nodes`` nodes in :math:`u`,
      :math:`\sum_k w_k\,\mathrm{sigmoid}(m + s\,x_k)`.
    * :math:`s > 1.5`: the sigmoid is split into the step function and a remainder that decays
      like :math:`e^{-|u|}`,

      .. math::

         E[\mathrm{sigmoid}(u)] = \Phi(m/s) + \int_0^\infty e^{-t}\,
            \frac{\varphi_s(-t - m) - \varphi_s(t - m)}{1 + e^{-t}}\, dt,

      with :math:`\varphi_s` the N(0, s²) density; the integral uses Gauss-Laguerre with
      ``nodes`` nodes.  Gauss-Hermite alone fails here: the poles of the sigmoid at
      :math:`\pm i\pi` come within :math:`\pi/s` of the real axis (a 200-node Gauss-Hermite rule
      is off by 1.5e-8 at s = 5 and by 2.6e-3 at s = 20), while the Laguerre integrand gets
      smoother as s grows.

    Both branches are evaluated at safe arguments and then selected, so gradients are finite
    everywhere.  ``v`` is floored at 1e-300 inside the square root (finite gradient at v = 0).
    """
    m = _as_f64(m)
    v = _as_f64(v)
    s = pt.sqrt(pt.maximum(v, 1e-300))
    use_gh = pt.le(s, QUADRATURE_SWITCH_SD)
    s_gh = pt.switch(use_gh, s, 1.0)
    s_lg = pt.switch(use_gh, 2.0, s)

    xh, wh = _hermite_rule(int(nodes))
    mm = m[..., None] if spread is None else spread(m, int(nodes))
    gh = pt.sum(wh * pt.sigmoid(mm + s_gh[..., None] * xh), axis=-1)

    t, wl = _laguerre_rule(int(nodes))
    sl = s_lg[..., None]
    dens_neg = pt.exp(-0.5 * pt.sqr((t + mm) / sl))
    dens_pos = pt.exp(-0.5 * pt.sqr((t - mm) / sl))
    g = (dens_neg - dens_pos) / ((1.0 + np.exp(-t)) * _SQRT_2PI * sl)
    lg = 0.5 * pt.erfc(-m / (s_lg * _SQRT2)) + pt.sum(wl * g, axis=-1)
    return pt.switch(use_gh, gh, lg)


# --------------------------------------------------------------------------------------------
# E[sigmoid(u)] with the paper's Chebyshev approximation (Section 7, eq. 12; eq. 44)
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def chebyshev_sigmoid_coefficients(degree: int, interval: tuple[float, float] = (-4.0, 4.0)):
    r"""Chebyshev projection of the sigmoid on ``interval``: coefficients of :math:`T_0..T_n`.

    :math:`c_k = \frac{2 - \delta_{k0}}{\pi} \int_0^\pi \mathrm{sigmoid}(u(\cos\vartheta))
    \cos(k\vartheta)\, d\vartheta`, with :math:`u(x) = \frac{a+b}2 + \frac{b-a}2 x` mapping
    [-1, 1] onto ``interval`` = [a, b]: the least-squares polynomial for the Chebyshev weight.
    Computed with NumPy at graph-build time by a 4096-node Gauss-Chebyshev rule (exact up to
    aliasing of coefficients beyond degree 8000, i.e. to rounding).
    """
    degree = int(degree)
    a, b = (float(interval[0]), float(interval[1]))
    n = 4096
    th = np.pi * (np.arange(n) + 0.5) / n
    u = 0.5 * (a + b) + 0.5 * (b - a) * np.cos(th)
    f = 0.5 * (1.0 + np.tanh(0.5 * u))  # sigmoid, overflow-free
    k = np.arange(degree + 1)
    c = (2.0 / n) * (np.cos(np.outer(k, th)) @ f)
    c[0] *= 0.5
    return c


@functools.lru_cache(maxsize=64)
def chebyshev_sigmoid_monomials(degree: int, interval: tuple[float, float] = (-4.0, 4.0)):
    r"""The Chebyshev approximant as a polynomial :math:`\sum_k b_k x^k` in the *mapped* variable
    :math:`x = (2u - a - b)/(b - a) \in [-1, 1]` (coefficients bounded by :math:`2^k`, so the
    moment sum below is well conditioned; the paper's :math:`b_m` of eq. 12 are
    :math:`b_k (2/(b-a))^k` for a symmetric interval)."""
    c = chebyshev_sigmoid_coefficients(degree, tuple(interval))
    return np.polynomial.chebyshev.cheb2poly(c)


def gaussian_moments(mu, var, order: int):
    r"""Raw moments :math:`E[x^k]`, k = 0..order, of :math:`x \sim N(\mu, \mathrm{var})`.

    Recurrence :math:`E[x^k] = \mu E[x^{k-1}] + (k-1)\,\mathrm{var}\,E[x^{k-2}]` (Stein's
    lemma); the paper's supplement (after eq. 44) lists k = 1, 2.
    """
    mu = _as_f64(mu)
    var = _as_f64(var)
    moments = [pt.ones_like(mu), mu]
    for k in range(2, order + 1):
        moments.append(mu * moments[-1] + (k - 1) * var * moments[-2])
    return moments[: order + 1]


def expected_sigmoid_chebyshev(m, v, degree: int = 2, interval=(-4.0, 4.0)):
    r"""The paper's approximation of :math:`E[\mathrm{sigmoid}(u)]`, :math:`u \sim N(m, v)`.

    Eq. 44 (with eq. 12): replace the sigmoid by its degree-``degree`` Chebyshev approximant on
    ``interval`` and take the expectation exactly with Gaussian moments; the result is clipped
    to [0, 1] (a polynomial leaves [0, 1] outside its interval).  Degree 2 on a symmetric
    interval is the paper's setting; there :math:`b_2 = 0` and the result is
    :math:`1/2 + b_1 m`, which ignores the variance ``v`` (REFERENCE §2.5).  Accurate only where
    :math:`N(m, v)` puts almost all of its mass well inside ``interval``; see the error table in
    the documentation of :class:`~pymc_dpnoise.distributions.regression.PerturbedLogReg`.
    """
    a, b = (float(interval[0]), float(interval[1]))
    if not b > a:
        raise ValueError(f"`interval` must be (a, b) with a < b; got {interval}")
    if int(degree) < 0:
        raise ValueError(f"`degree` must be >= 0; got {degree}")
    coefs = chebyshev_sigmoid_monomials(int(degree), (a, b))
    m = _as_f64(m)
    v = _as_f64(v)
    half = 0.5 * (b - a)
    mu_x = (m - 0.5 * (a + b)) / half
    var_x = v / half**2
    moments = gaussian_moments(mu_x, var_x, int(degree))
    e = sum(float(ck) * mk for ck, mk in zip(coefs, moments, strict=True) if ck != 0.0)
    if not isinstance(e, pt.TensorVariable):  # all coefficients zero (cannot happen in practice)
        e = pt.zeros_like(m) + float(coefs[0])
    return pt.clip(e, 0.0, 1.0)


# --------------------------------------------------------------------------------------------
# Logistic regression (Supplement 12.2)
# --------------------------------------------------------------------------------------------

APPROXIMATIONS = ("quadrature", "chebyshev")


def _logreg_moments(theta, cov, sigma_x):
    """Cholesky of Σ+Σ*, and β, v with θᵀh = z_xᵀβ and v = θᵀAθ (eq. 43)."""
    theta, cov = _as_f64(theta), _as_f64(cov)
    sigma_x = _sigma_x_vector(sigma_x, theta)
    sx2 = pt.sqr(sigma_x)
    sz = cov + sx2[..., None, :] * pt.eye(cov.shape[-1], dtype="float64")
    P, _, ok = spd_inverse_logdet(sz)
    c = pt.sum(cov * theta[..., None, :], axis=-1)  # Σθ
    beta = pt.sum(P * c[..., None, :], axis=-1)  # (Σ+Σ*)^{-1} Σθ, so θᵀh = z_xᵀβ
    # θᵀAθ with A = Σ(Σ+Σ*)^{-1}Σ*: no cancellation, >= 0 up to rounding
    v = pt.maximum(pt.sum(beta * sx2 * theta, axis=-1), 0.0)
    return sz, beta, v, ok


def perturbed_logreg_logp(
    value,
    theta,
    cov,
    sigma_x,
    epsilon_y,
    *,
    approximation: str = "quadrature",
    degree: int = 2,
    interval=(-4.0, 4.0),
    nodes: int = DEFAULT_NODES,
    block_rows: int | None = None,
):
    r"""Per-report log density of perturbed-input logistic regression (Supplement 12.2).

    ``value`` has shape ``(..., d + 1)``: ``[z_x, z_y]`` with ``z_y`` in {0, 1}.

    .. math::

        \log p = \log N(z_x; 0, \Sigma + \Sigma_*) + \log\left[(1 - \rho) + (2\rho - 1)\,
                 E[\mathrm{sigmoid}(s\,u)]\right],\quad s = 2 z_y - 1,

    with :math:`\rho = \mathrm{sigmoid}(\epsilon_y)`, :math:`u \sim N(z_x^T\beta, v)`,
    :math:`\beta = (\Sigma+\Sigma_*)^{-1}\Sigma\theta`, :math:`v = \theta^T A\theta` (eq. 43;
    the last line of the derivation before eq. 44, rearranged).  ``approximation`` selects
    :func:`expected_sigmoid` ("quadrature") or :func:`expected_sigmoid_chebyshev`
    ("chebyshev", with ``degree`` and ``interval``).  Labels other than 0 and 1 get
    :math:`-\infty`.  Returns ``(logp, ok)``, ``ok`` flagging a positive definite
    :math:`\Sigma + \Sigma_*`.

    Memory (quadrature).  The label term evaluates ``2 * nodes`` terms per report, so a graph
    over all N reports at once holds several (N, nodes) arrays in the value and more in the
    gradient (about 2 kB per report with the default 40 nodes).  There is no exact summary
    of the reports for this term: it depends on each report through :math:`z_x^T\beta`, and
    :math:`\beta` moves with :math:`\theta`, so the projections cannot be binned before the
    parameters are known (except for d = 1, where they are :math:`z_x\beta`).  With
    ``block_rows = B`` the label term is instead evaluated by a ``pytensor.scan`` over blocks
    of B reports (the last block padded); the value and its gradient are the same
    computation, in the same order per report, so they agree with the one-pass graph to
    rounding, and the working memory is O(B x nodes) plus O(N) per-report vectors
    (:math:`z_x^T\beta`, the per-report log density and its gradient).  ``block_rows=None``
    (default) chooses: blocks of :data:`BLOCK_ROWS` when the value is a plain ``(N, d + 1)``
    matrix of at least :data:`BLOCK_THRESHOLD` reports known from its static shape,
    one pass otherwise; ``block_rows=0`` forces one pass.  The chebyshev mode has no
    (N, nodes) intermediates and always runs in one pass.
    """
    if approximation not in APPROXIMATIONS:
        raise ValueError(f"`approximation` must be one of {APPROXIMATIONS}; got {approximation!r}")
    value = _as_f64(value)
    epsilon_y = _as_f64(epsilon_y)
    sz, beta, v, ok = _logreg_moments(theta, cov, sigma_x)
    block_rows = _logreg_block_rows(value, beta, epsilon_y, approximation, block_rows)
    # the static width when known: rows sliced by a constant stay data-only (scatter rewrite)
    width = value.type.shape[-1]
    d = sz.shape[-1] if width is None else width - 1
    zx = value[..., :d]
    zy = value[..., -1]
    logp_x, _ = mvnormal_rows_logp(zx, sz)
    is_one = pt.eq(zy, 1.0)
    valid = pt.or_(is_one, pt.eq(zy, 0.0))
    if block_rows:
        m = pt.dot(zx, beta)
        log_pi = _label_logp_blocks(pt.switch(is_one, m, -m), v, epsilon_y, nodes, block_rows)
        logp = logp_x + log_pi
    else:
        m = pt.sum(zx * beta, axis=-1)
        if approximation == "quadrature":
            e = expected_sigmoid(pt.switch(is_one, m, -m), v, nodes=nodes)
        else:
            e1 = expected_sigmoid_chebyshev(m, v, degree=degree, interval=interval)
            e = pt.switch(is_one, e1, 1.0 - e1)
        logp = logp_x + _label_logp(e, epsilon_y)
    if _all_labels_valid(value):
        # observed reports (checked when the model was built): no per-report switch, so the
        # Gaussian term's rows reach the scatter-matrix rewrite when they are summed
        return logp, ok
    return pt.switch(valid, logp, -np.inf), ok


#: reports per block of the blocked evaluation of the logistic label term (a block holds
#: about a dozen (block, nodes) float64 arrays in the gradient, 0.66 MB each with 40 nodes;
#: measured at 2e5 reports: C backend as fast as one pass at 1024, 40 % slower at 8192;
#: Numba flat from 512 to 4096)
BLOCK_ROWS = 2048
#: from this many reports on, the label term is evaluated block by block by default: below,
#: one pass costs at most ~0.2 GB more (2 kB per report) and compiles faster in Numba (the
#: scan adds 5-20 s of JIT to the first evaluation, depending on the load), while the time
#: per evaluation is the same within the noise at 1e5-2e5 reports; at 1e6 reports one pass
#: peaks at 2.5 GB and takes 1.3x as long as blocks (benchmarks/memory_budgets.py)
BLOCK_THRESHOLD = 100_000


def _label_logp(e, epsilon_y):
    """log P(z_y | z_x) = log[(1 - rho) + (2 rho - 1) e] from e = E[sigmoid(s u)]."""
    # 1 - rho = sigmoid(-eps), 2 rho - 1 = tanh(eps / 2)
    return pt.log(pt.sigmoid(-epsilon_y) + pt.tanh(0.5 * epsilon_y) * pt.clip(e, 0.0, 1.0))


@functools.lru_cache(maxsize=32)
def _spread_op(nodes: int):
    """An opaque ``OpFromGraph``: ``m`` (rows,) -> ``m[:, None]`` broadcast to (rows, nodes)."""
    from pytensor.compile.builders import OpFromGraph

    m = pt.dvector("m")
    out = pt.broadcast_to(m[:, None], (m.shape[0], nodes))
    return OpFromGraph([m], [out], inline=False, name=f"spread_over_{nodes}_nodes")


def _spread_over_nodes(m, nodes):
    """``m[:, None]`` broadcast to (rows, nodes), through an opaque ``OpFromGraph``.

    Inside the ``scan`` of :func:`_label_logp_blocks` this keeps the quadrature in the loop.
    PyTensor's ``scan_push_out_seq`` moves the elementwise ops and dimshuffles that depend
    only on the sequences out of the loop, applied to the whole sequence at once; it would
    rebuild exactly the (N, nodes) arrays the blocks exist to avoid (measured: a peak of
    4 GB at 10^6 reports when the spread was a plain ``Dot``, which PyMC's pre-gradient
    rewrites turn into an elementwise product).  An ``OpFromGraph`` is neither, is not
    inlined by the default rewrites, and its gradient (a sum over the nodes) is one too.
    """
    return _spread_op(int(nodes))(m)


def _label_logp_blocks(signed_m, v, epsilon_y, nodes, block_rows):
    """Per-report label term from ``signed_m`` (N,), evaluated by a scan over row blocks."""
    n = signed_m.shape[0]
    n_blocks = pt.maximum((n + block_rows - 1) // block_rows, 1)  # one padded block if n = 0
    pad = n_blocks * block_rows - n
    blocks = pt.concatenate([signed_m, pt.zeros((pad,), dtype="float64")])
    blocks = blocks.reshape((n_blocks, block_rows))

    def step(sm, v, eps):
        e = expected_sigmoid(sm, v, nodes=nodes, spread=_spread_over_nodes)
        return _label_logp(e, eps)

    out = pytensor.scan(
        step,
        sequences=[blocks],
        non_sequences=[v, epsilon_y],
        return_updates=False,
        name="perturbed_logreg_label_blocks",
    )
    return out.reshape((n_blocks * block_rows,))[:n]


def _logreg_block_rows(value, beta, epsilon_y, approximation, block_rows):
    """The block size to use (0: one pass); see :func:`perturbed_logreg_logp`."""
    if approximation != "quadrature":
        return 0
    plain = value.ndim == 2 and beta.ndim == 1 and epsilon_y.ndim == 0
    if block_rows is None:
        n = value.type.shape[0] if plain else None
        return BLOCK_ROWS if n is not None and n >= BLOCK_THRESHOLD else 0
    block_rows = int(block_rows)
    if block_rows < 0:
        raise ValueError(f"`block_rows` must be >= 0; got {block_rows}")
    if block_rows and not plain:
        raise ValueError(
            "`block_rows`: blocks need one (N, d + 1) matrix of reports and one parameter set "
            f"(theta (d,), epsilon_y scalar); got value ndim {value.ndim}, theta batch "
            f"{beta.ndim - 1}, epsilon_y ndim {epsilon_y.ndim}"
        )
    return block_rows


def _all_labels_valid(value) -> bool:
    """True if ``value`` is a constant whose labels (last column) are all 0 or 1."""
    if not isinstance(value, Constant):
        return False
    lab = np.asarray(value.data)[..., -1]
    return bool(np.all((lab == 0) | (lab == 1)))


# --------------------------------------------------------------------------------------------
# Rewrite: the sum over rows of per-row Gaussian quadratic forms uses the scatter matrix
# --------------------------------------------------------------------------------------------


def _is_data_only(var) -> bool:
    """True if ``var`` depends on constants and shared variables only (e.g. observed data)."""
    for a in ancestors([var]):
        if a.owner is None and not isinstance(a, Constant | SharedVariable):
            return False
    return True


def _summed_product(var, axes):
    """If ``var`` is a 1-d ``sum(a * b, axis=axes)`` of two factors, return ``(a, b)``."""
    node = var.owner
    if node is None or not isinstance(node.op, Sum) or var.ndim != 1:
        return None
    if tuple(sorted(node.op.axis or ())) not in axes:
        return None
    (prod,) = node.inputs
    pnode = prod.owner
    if (
        pnode is None
        or not isinstance(pnode.op, Elemwise)
        or not isinstance(pnode.op.scalar_op, ps.Mul)
        or len(pnode.inputs) != 2
    ):
        return None
    return pnode.inputs


def _match_quadratic_form(var):
    """If ``var`` is ``sum((W @ P) * W, axis=1)`` (either factor order), return (W, P)."""
    factors = _summed_product(var, ((1,), (-1,)))
    if factors is None:
        return None
    for a, b in (factors, factors[::-1]):
        if a.owner is not None and isinstance(a.owner.op, Dot) and a.owner.inputs[0] is b:
            W, P = a.owner.inputs
            if W.ndim == 2 and P.ndim == 2 and _is_data_only(W):
                return W, P
    return None


def _match_grouped_quadratic_form(var):
    """If ``var`` is ``sum(P[group] * O, axis=(1, 2))`` with ``O`` (the rows' outer products)
    and ``group`` data, return (P, group, O)."""
    factors = _summed_product(var, ((1, 2),))
    if factors is None:
        return None
    for a, b in (factors, factors[::-1]):
        match = group_gather(a)
        if match is not None and match[0].ndim == 3 and b.ndim == 3 and _is_data_only(b):
            return match[0], match[1], b
    return None


def _row_broadcast(var) -> bool:
    return var.ndim == 1 and var.type.broadcastable[0]


class _RowSum:
    """Rewrites ``sum(x, axis=0)`` of a 1-d ``x`` by recursion over ``x``'s elementwise graph."""

    def __init__(self, n):
        self.n = pt.cast(n, "float64")
        self.found = False

    def __call__(self, x):
        if _row_broadcast(x):
            return x[0] * pt.cast(self.n, x.dtype)
        match = _match_quadratic_form(x)
        if match is not None:
            W, P = match
            self.found = True
            return pt.sum(P * pt.dot(W.T, W))
        match = _match_grouped_quadratic_form(x)
        if match is not None:
            P, group, outer = match
            self.found = True
            n_groups = P.type.shape[0] if P.type.shape[0] is not None else P.shape[0]
            scatter = pt.inc_subtensor(pt.zeros((n_groups, *outer.shape[1:]))[group], outer)
            return pt.sum(P * scatter)
        node = x.owner
        if node is None:
            return pt.sum(x)
        op = node.op
        from pymc.logprob.utils import CheckParameterValue

        if isinstance(op, CheckParameterValue):
            inner, *conds = node.inputs
            if all(c.ndim == 0 for c in conds):
                return op(self(inner), *conds)
            return pt.sum(x)
        if isinstance(op, Alloc) and node.inputs[0].ndim == 0:
            return node.inputs[0] * pt.cast(self.n, x.dtype)
        if not isinstance(op, Elemwise) or len(node.outputs) != 1:
            return pt.sum(x)
        sop = op.scalar_op
        ins = node.inputs
        if isinstance(sop, ps.Add):
            return pt.add(*(self(i) for i in ins))
        if isinstance(sop, ps.Sub):
            return self(ins[0]) - self(ins[1])
        if isinstance(sop, ps.Neg):
            return -self(ins[0])
        if isinstance(sop, ps.Mul):
            varying = [i for i in ins if not _row_broadcast(i)]
            if len(varying) == 1:
                const = [i[0] for i in ins if _row_broadcast(i)]
                return pt.mul(*const, self(varying[0]))
            return pt.sum(x)
        if isinstance(sop, ps.TrueDiv) and _row_broadcast(ins[1]):
            return self(ins[0]) / ins[1][0]
        if isinstance(sop, ps.Switch) and _row_broadcast(ins[0]):
            return pt.switch(ins[0][0], self(ins[1]), self(ins[2]))
        return pt.sum(x)


@register_canonicalize
@register_specialize
@node_rewriter([Sum])
def local_sum_rows_of_quadratic_form(fgraph, node):
    r"""``sum_i f(q_i)`` with ``q_i = w_i^T P w_i`` affine in ``q`` → uses :math:`W^T W`.

    Matches a full sum of a 1-d vector whose elementwise graph (``add``, ``sub``, ``neg``,
    ``mul``/``true_div`` by row-constant factors, ``switch`` on a row-constant condition,
    PyMC's parameter checks) has, among its leaves, row quadratic forms
    ``sum((W @ P) * W, axis=1)`` with ``W`` built from constants/shared variables only.  Each
    such leaf becomes ``sum(P * (W.T @ W))``, row-constant leaves become ``N * value``, other
    leaves stay ``sum(leaf)``.  Exact (up to rounding).
    """
    (x,) = node.inputs
    if x.ndim != 1:
        return None
    if node.op.axis not in (None, (0,), (-1,)):
        return None
    if x.owner is None or isinstance(x.owner.op, DimShuffle):
        return None
    rs = _RowSum(x.shape[0])
    out = rs(x)
    if not rs.found:
        return None
    out = pt.cast(out, node.outputs[0].dtype)
    return [out]
