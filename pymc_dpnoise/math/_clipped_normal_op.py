r"""The clipped-Gaussian Laplace log density as one elementwise op with its gradient.

:func:`pymc_dpnoise.math.clipped_normal_laplace_logp` used to be a PyTensor graph of the
``switch``-guarded stable forms (:func:`~pymc_dpnoise.math.log_ndtr`,
:func:`~pymc_dpnoise.math.clipped._tilted_tails`,
:func:`~pymc_dpnoise.math.log_tilted_interval`, log-sum-exp): 1,499 nodes with its gradient,
about 9 CPU-s of graph rewrites and 15 s of Numba compilation for the README example, and
~0.9 ms per logp + gradient at 5,000 reports (issue 24).  This module evaluates **the same
formulas** (same branches; the log-space forms in the same order of floating-point
operations) in one scalar Numba kernel per report, together with the two derivatives a
sampler needs,
:math:`\partial/\partial\mu` and :math:`\partial/\partial\sigma`, in closed form:

* with :math:`R(y) = \varphi(y)/\Phi(y) = \sqrt{2/\pi}/\operatorname{erfcx}(-y/\sqrt2)`,
  :math:`\partial_x \log\Phi(x) = R(x)`;
* the tilted tails :math:`E_\kappa(x) = \kappa^2/2 - \kappa x + \log\Phi(x - \kappa)` and
  :math:`F_\kappa(x) = \kappa^2/2 - \kappa x + \log\Phi(\kappa - x)` have
  :math:`\partial_x E = -\kappa + R(x-\kappa)`, :math:`\partial_\kappa E = \kappa - x - R(x-\kappa)`,
  :math:`\partial_x F = -\kappa - R(\kappa-x)`, :math:`\partial_\kappa F = \kappa - x + R(\kappa-x)`,
  where the R on the "near" side is :math:`e^{-w}/\sqrt{2\pi}` and on the "far" side
  :math:`e^{-|u|^2 - \log\Phi(\sqrt2|u|)}/\sqrt{2\pi}` (the erfcx value is shared);
* :math:`\log(e^A - e^B)` has derivative :math:`(dA - r\,dB)/(1 - r)`, :math:`r = e^{B-A}`;
  the log-sum-exp, the softmax weights;
* μ and σ enter through :math:`\alpha, \beta, \zeta` (:math:`\partial_\mu = -1/\sigma`,
  :math:`\partial_\sigma = -x/\sigma`) and :math:`\kappa = \sigma/s`
  (:math:`\partial_\sigma\kappa = \kappa/\sigma`).

For reports inside the clipping interval, where :math:`\epsilon \le 50`,
:math:`\kappa \le 5`, :math:`\alpha \ge -30` and :math:`\beta \le 30` (every README-like
model and most of a sampler's path), the kernel evaluates the same density as a sum of four
non-negative terms in linear space (:func:`_inside_linear`, to a few ulp of the density; its
derivation and error argument are in its docstring): README example, 5,000 reports, three
interleaved rounds of the previous and this kernel at load ~3.5: 499-563 -> 167-213 µs per
call, 216-258 -> 68-90 ns per report inside the interval.  Elsewhere the log-space forms
above run.

Divisions by s and σ are multiplications by their reciprocals (computed once per parameter
set, like everything else that depends on the parameters only), and a report outside the
interval is one multiply-add with its side picked by selects, not branches (left and right
reports come in random order): README example, the kernel alone, three interleaved runs on a
quiet machine, 84-89 -> 78-80 µs per call (reports inside 62-66 -> 56-59 µs, outside 23-24
-> 16-17 µs).  These differ from the graph's divisions in the last bit.

**One parameter set** (μ, σ, bounds and ε each of length 1, the usual model) in that region:
:func:`_one_set` runs the kernel as passes over arrays that LLVM vectorises (AVX2), the
formula for the reports inside written with the branch-free ``exp``, ``log`` and ``erfcx`` of
:mod:`pymc_dpnoise.math._simd` (:math:`e_1\Phi(\zeta-k)` as
:math:`\tfrac12 e^{-\zeta^2/2}\operatorname{erfcx}(\cdot)`: no ``erfc``): README example,
the kernel alone, three interleaved runs at load ~1.5: 88-90 -> 32-46 µs per call.  Same
values as the per-report loop, which uses the same function
(``tests/test_clipped_normal_kernel.py`` checks them equal to the bit).

Everything that depends on the parameters only (:math:`\log\Phi(\alpha)`, the tails at
:math:`\alpha` and :math:`-\beta`, the outside constants) is computed once per distinct
parameter value, so reports outside the clipping interval cost one affine function each.

Gradients with respect to the reports, the bounds and ε (data in every model of the
package, but allowed to be variables) and second derivatives are taken from the PyTensor
graph of the same formulas (:func:`pymc_dpnoise.math.clipped._clipped_normal_dense`), built
only when such a gradient is requested.  The Python and Numba backends run the kernel.

On the JAX backend, when the reports, the bounds and ε are constants (observed data; PyMC's
``get_jaxified_logp``, which numpyro and blackjax sample through, makes them constants), the
op runs the same formulas vectorised in ``jax.numpy``
(:mod:`pymc_dpnoise.math._clipped_normal_jax`), its value a ``jax.custom_jvp`` function of
(μ, σ) whose JVP is the closed-form pair above, so JAX never differentiates the formulas.
README example (5,000 reports), jitted ``value_and_grad`` of the jaxified model logp, mean of
500 calls, three interleaved rounds at load 5.5-8.9 on 2 cores: 1,268-1,691 µs per call and
3.1-4.1 CPU-s of compile and first call, against 2,590-3,607 µs and 9.6-12.7 s when the JAX
backend ran the dense graph (JAX differentiating it) and 200-252 µs / 0.4-0.6 s for the naive
Normal model (still ~6x the naive model: XLA evaluates both sides of every branch, about 20
exp/log/erfc per report inside the interval).  ``pm.sample(nuts_sampler="numpyro")`` of that
model (2 chains x 1,000 + 1,000, sequential, one process each at load 6-7): 52.8 CPU-s,
against 104.6 with the dense graph and 19.6 for the naive model (2.7x; issue target 1.5x).
The linear-space form inside the interval (under ``lax.cond``) took the jitted
``value_and_grad`` from 1,741 to 1,311 µs (naive model: 404 µs in the same run, load ~3) and
its compile from 2.7 to 4.3 CPU-s: XLA's CPU ``erfc`` costs ~90 ns and ``exp`` ~38 ns per
element here, against ~10 ns in Numba, which is most of the remaining gap.

Otherwise (any of those inputs a variable, e.g. shared data compiled with ``mode="JAX"``) the
JAX backend runs the dense PyTensor graph and JAX differentiates it, so gradients with
respect to every input stay right.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type, grad_not_implemented
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from pytensor.graph.traversal import ancestors

from .._jax_dispatch import when_jax_dispatch_loads
from ._op_support import perform_kernel, register_numba_kernel, register_shared_kernel
from ._simd import erfcx_nonneg, exp_, log_

_njit = numba.njit(cache=True, fastmath=False, error_model="numpy")
_inline = numba.njit(cache=True, fastmath=False, error_model="numpy", inline="always")

_SQRT2 = math.sqrt(2.0)
_LOG2 = math.log(2.0)
_LOG_HALF = math.log(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_MINUS_TINY = -1e-300
_MINUS_INV_SQRT2 = -1.0 / _SQRT2
_INV_SQRT2 = 1.0 / _SQRT2


# ---------------------------------------------------------------------------------------------
# Scalar kernels
# ---------------------------------------------------------------------------------------------


@_njit
def _exp_sq(x):
    """exp(x * x) with x * x split exactly into hi + lo (Dekker): ~1 ulp for |x| < 26.6."""
    hi = x * x
    c = 134217729.0 * x
    xh = c - (c - x)
    xl = x - xh
    lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl
    return math.exp(hi) * (1.0 + lo)


@_njit
def _erfcx_parts(x):
    """(erfcx(x), erfc(x), exp(x^2)) for x >= 0 (erfcx to ~2 ulp of scipy.special.erfcx).

    Above x = 26 erfc underflows: erfcx from its asymptotic series (the 9th term is below
    1e-19 of the first there), and erfc, exp(x^2) returned as 0, inf.
    """
    if x < 26.0:
        ec = math.erfc(x)
        ex = _exp_sq(x)
        return ec * ex, ec, ex
    t = 1.0 / (2.0 * x * x)
    term = 1.0
    total = 1.0
    for k in range(1, 10):
        term *= -(2.0 * k - 1.0) * t
        total += term
    return _INV_SQRT_PI / x * total, 0.0, np.inf


@_njit
def _erfcx(x):
    """Scaled complementary error function exp(x^2) erfc(x)."""
    if x < 0.0:
        if x < -26.7:
            return np.inf
        return 2.0 * _exp_sq(x) - _erfcx_parts(-x)[0]
    return _erfcx_parts(x)[0]


@_njit
def _log1mexp(x):
    # the formula of pytensor's log1mexp
    if x < _LOG_HALF:
        return math.log1p(-math.exp(x))
    return math.log(-math.expm1(x))


@_njit
def _log_ndtr(x):
    """(log Phi(x), Phi'(x)/Phi(x)): the branches of ``clipped.log_ndtr``."""
    if x < -1.0:
        e = _erfcx(-x / _SQRT2)
        return math.log(e) - _LOG2 - 0.5 * (x * x), _SQRT_2_OVER_PI / e
    v = math.log1p(-0.5 * math.erfc(x / _SQRT2))
    return v, _INV_SQRT_2PI * math.exp(-0.5 * (x * x) - v)


@_njit
def _tail(x, k, want_e):
    """One of ``clipped._tilted_tails`` (E if ``want_e`` else F) and its (d/dx, d/dk).

    With u = |x - k|/sqrt2 and w = log(erfcx(u)/2): the tail on the side of x away from k
    ("near") is w - x^2/2 with R = sqrt(2/pi)/erfcx(u); the other ("far") is
    k(k/2 - x) + log Phi(sqrt2 u), log Phi(sqrt2 u) = log1p(-erfc(u)/2), with
    R = e^{-u^2}/(sqrt(2 pi) Phi(sqrt2 u)).
    """
    up = x >= k
    u = (x - k) / _SQRT2
    au = u if up else -u
    ecx, ec, ex = _erfcx_parts(au)
    if want_e != up:  # E below k, F above: the near tail
        val = (math.log(ecx) - _LOG2) - 0.5 * (x * x)
        r = _SQRT_2_OVER_PI / ecx
    else:
        phi_far = 1.0 - 0.5 * ec
        val = k * (0.5 * k - x) + math.log1p(-0.5 * ec)
        r = _INV_SQRT_2PI / (ex * phi_far)
    if want_e:
        return val, -k + r, k - x - r
    return val, -k - r, k - x + r


@_njit
def _interval(lo, hi, k, lower_form, t_lo, t_hi):
    """``clipped.log_tilted_interval`` J_k(lo, hi) and (dJ/dlo, dJ/dhi, dJ/dk).

    ``lower_form`` is ``lo <= k``; ``t_lo``, ``t_hi`` are ``_tail(., k, lower_form)`` at
    both ends (E at both if ``lower_form``, else F).
    """
    width = hi - lo
    shift = k * width
    if lower_form:
        big, b_lo, b_hi, b_k = t_hi[0], 0.0, t_hi[1], t_hi[2]
        small, s_lo, s_hi, s_k = t_lo[0] - shift, t_lo[1] + k, -k, t_lo[2] - width
    else:
        big, b_lo, b_hi, b_k = t_lo[0] - shift, t_lo[1] + k, -k, t_lo[2] - width
        small, s_lo, s_hi, s_k = t_hi[0], 0.0, t_hi[1], t_hi[2]
    t = small - big
    if t < _MINUS_TINY:
        # log1mexp(t) as pytensor computes it, and its derivative c = -e^t / (1 - e^t)
        if t < _LOG_HALF:
            et = math.exp(t)
            v = big + math.log1p(-et)
            c = -et / (1.0 - et)
        else:
            em = math.expm1(t)
            v = big + math.log(-em)
            c = (1.0 + em) / em
        return (
            v,
            b_lo + c * (s_lo - b_lo),
            b_hi + c * (s_hi - b_hi),
            b_k + c * (s_k - b_k),
        )
    return big + _log1mexp(_MINUS_TINY), b_lo, b_hi, b_k


@_njit
def _lse3(t0, t1, t2):
    m = max(max(t0, t1), t2)
    e0 = math.exp(t0 - m)
    e1 = math.exp(t1 - m)
    e2 = math.exp(t2 - m)
    total = e0 + e1 + e2
    return m + math.log(total), e0 / total, e1 / total, e2 / total


@_njit
def _lse4(t0, t1, t2, t3):
    m = max(max(max(t0, t1), t2), t3)
    e0 = math.exp(t0 - m)
    e1 = math.exp(t1 - m)
    e2 = math.exp(t2 - m)
    e3 = math.exp(t3 - m)
    inv = 1.0 / (e0 + e1 + e2 + e3)
    return m - math.log(inv), e0 * inv, e1 * inv, e2 * inv, e3 * inv


#: the region of (epsilon, kappa, alpha, beta) where the linear-space form is used (see
#: :func:`_inside_linear`): every factor finite, every normal CDF above 1e-268
_FAST_EPS = 50.0
_FAST_KAP = 5.0
_FAST_AB = 30.0


@_njit
def _ndtr(x):
    return 0.5 * math.erfc(x * _MINUS_INV_SQRT2)


@_njit
def _linear_params(al, be, kap, eps):
    """Parameter-only factors of :func:`_inside_linear`: Phi(alpha), Phi(-beta),
    Phi(alpha - k), Phi(-beta - k), phi(alpha), phi(beta), e^{k^2/2 - k alpha},
    e^{k^2/2 + k beta}, e^{-eps}."""
    return (
        _ndtr(al),
        _ndtr(-be),
        _ndtr(al - kap),
        _ndtr(-be - kap),
        _INV_SQRT_2PI * math.exp(-0.5 * (al * al)),
        _INV_SQRT_2PI * math.exp(-0.5 * (be * be)),
        math.exp(kap * (0.5 * kap - al)),
        math.exp(kap * (0.5 * kap + be)),
        math.exp(-eps),
    )


@_inline
def _tilted_cdf(d, g, e):
    r""":math:`e\,\Phi(d)` where :math:`e = e^{k^2/2 - k\zeta}` (or its mirror) and
    :math:`d = \zeta - k`, so that :math:`e\,\varphi(d) = \varphi(\zeta)`, from
    :math:`g = e^{-\zeta^2/2}`: :math:`e\Phi(d) = \tfrac12 g\,\mathrm{erfcx}(-d/\sqrt2)`
    for :math:`d \le 0` and :math:`e - \tfrac12 g\,\mathrm{erfcx}(d/\sqrt2)` above (there
    :math:`\Phi(d) \ge 1/2`, so the difference loses at most one bit).  No ``erfc``, no
    branch: ``erfcx`` of a non-negative argument (:func:`~._simd.erfcx_nonneg`)."""
    h = 0.5 * g * erfcx_nonneg(abs(d) * _INV_SQRT2)
    return e - h if d > 0.0 else h


@_inline
def _inside_linear(zi, a, inv_s, inv_sg, kap, ze, lin):
    r"""log(2s p), d log p / d mu, d log p / d sigma of a report inside (a, b), in linear space.

    With :math:`u = (z-a)/s`, :math:`e_a = e^{-u}`, :math:`e_b = e^{-(\epsilon-u)}` and the
    tilt factors :math:`e_1 = e^{k^2/2 - k\zeta}`, :math:`e_2 = e^{k^2/2 + k\zeta}`,

    .. math::
        2s\,p = \Phi(\alpha) e_a + \Phi(-\beta) e_b
        + \underbrace{e_1[\Phi(\zeta-k) - \Phi(\alpha-k)]}_{T_3}
        + \underbrace{e_2[\Phi(-\zeta-k) - \Phi(-\beta-k)]}_{T_4}

    (the atoms and the two halves of the interior integral; the log-space kernel's four
    log-sum-exp terms exponentiated).  Since :math:`e_1\varphi(\zeta-k) =
    e_2\varphi(-\zeta-k) = \varphi(\zeta)`, :math:`e_1\varphi(\alpha-k) =
    \varphi(\alpha)e_a` and :math:`e_2\varphi(-\beta-k) = \varphi(\beta)e_b`, the
    derivatives collapse to

    .. math::
        \partial_\mu(2sp) = (T_3 - T_4)/s, \qquad
        \partial_\sigma(2sp) = k\,[k(T_3 + T_4) - 2\varphi(\zeta)
        + \varphi(\alpha)e_a + \varphi(\beta)e_b]/\sigma .

    :math:`e_1 = f_1 e_a` (:math:`k(\zeta - \alpha) = u`) and :math:`e_1\Phi(\zeta - k)`
    comes from :func:`_tilted_cdf`, which needs only :math:`e^{-\zeta^2/2}`, shared with
    :math:`\varphi(\zeta)`.  Everything is straight-line arithmetic and the
    :mod:`~._simd` functions (two ``exp``, two ``erfcx``, one ``log``), so the loop over the
    reports in :func:`_one_set` is vectorised.

    Accuracy: every term is non-negative and the one subtraction in :math:`T_3` has
    :math:`e_1\Phi(\alpha-k) \le \Phi(\alpha)e_a` (a tilted tail is below its
    normal CDF), so :math:`e_1\Phi(\zeta-k) \le 2sp` and the rounding error of each term
    is a few ulp of :math:`2sp` itself (likewise :math:`T_4`): relative accuracy of the
    log-space form without its 15 transcendental calls per report.  Used where
    :math:`\epsilon \le 50`, :math:`k \le 5`, :math:`-30 \le \alpha`,
    :math:`\beta \le 30`: no factor overflows (:math:`e_1, e_2 \le e^{163}`), the
    arguments of ``exp`` stay above -451 (:math:`|\zeta| < 30`) and
    :math:`2sp \ge e^{-\epsilon}` (the report is within b - a of every clipped value) is
    a normal number.
    """
    pa, pb, ca, cb, fa, fb, f1, f2, e_eps = lin
    ea = exp_((a - zi) * inv_s)
    eb = e_eps / ea
    g = exp_(-0.5 * (ze * ze))
    e1 = f1 * ea
    e2 = f2 * eb
    t3 = _tilted_cdf(ze - kap, g, e1) - e1 * ca
    t4 = _tilted_cdf(-ze - kap, g, e2) - e2 * cb
    tot = pa * ea + pb * eb + t3 + t4
    inv = 1.0 / tot
    return (
        log_(tot),
        (t3 - t4) * inv * inv_s,
        kap * (kap * (t3 + t4) - 2.0 * _INV_SQRT_2PI * g + fa * ea + fb * eb) * inv * inv_sg,
    )


@_njit
def _outside_constants(al, be, kap, eps, lphi_a, r_a, lphi_b, r_b, log_2s, sg):
    """log(p) + distance/s and the derivatives of a report left of a and right of b:
    ``(left value, right value, left d/dmu, right d/dmu, left d/dsigma, right d/dsigma)``."""
    # left: LSE(log Phi(alpha), log Phi(-beta) - eps, J(-beta, -alpha))
    lf = -be <= kap
    jl, jl_lo, jl_hi, jl_k = _interval(-be, -al, kap, lf, _tail(-be, kap, lf), _tail(-al, kap, lf))
    gl, q1, q2, q3 = _lse3(lphi_a, lphi_b - eps, jl)
    gl_a = q1 * r_a - q3 * jl_hi
    gl_b = -q2 * r_b - q3 * jl_lo
    gl_k = q3 * jl_k
    # right: LSE(log Phi(-beta), log Phi(alpha) - eps, J(alpha, beta))
    lf = al <= kap
    jr, jr_lo, jr_hi, jr_k = _interval(al, be, kap, lf, _tail(al, kap, lf), _tail(be, kap, lf))
    gr, q1, q2, q3 = _lse3(lphi_b, lphi_a - eps, jr)
    gr_a = q2 * r_a + q3 * jr_lo
    gr_b = -q1 * r_b + q3 * jr_hi
    gr_k = q3 * jr_k
    # a report outside: its bound's value minus its distance over s; the derivatives are
    # the bound's
    return (
        gl - log_2s,
        gr - log_2s,
        -(gl_a + gl_b) / sg,
        -(gr_a + gr_b) / sg,
        (kap * gl_k - (al * gl_a + be * gl_b)) / sg,
        (kap * gr_k - (al * gr_a + be * gr_b)) / sg,
    )


@_njit
def _param_terms(m, sg, a, b, eps):
    """What depends on the parameters only: s, kappa, alpha, beta, log Phi(alpha) and its
    R, log Phi(-beta) and its R, log 2s, 1/s, 1/sigma."""
    s = (b - a) / eps
    al = (a - m) / sg
    be = (b - m) / sg
    lphi_a, r_a = _log_ndtr(al)
    lphi_b, r_b = _log_ndtr(-be)
    return s, sg / s, al, be, lphi_a, r_a, lphi_b, r_b, math.log(2.0 * s), 1.0 / s, 1.0 / sg


@_njit
def _one_set(z, m, sg, a, b, eps):
    """:func:`_clipped_normal_kernel` for one parameter set in the linear-space region, in
    passes LLVM vectorises: every report by the outside formula (selects), then the reports
    inside (a, b), gathered into a contiguous block, by :func:`_inside_linear`, scattered
    back.  Same formulas and values as the per-report loop."""
    n = z.shape[0]
    _, kap, al, be, lphi_a, r_a, lphi_b, r_b, log_2s, inv_s, inv_sg = _param_terms(m, sg, a, b, eps)
    gl_v, gr_v, gl_mu, gr_mu, gl_sig, gr_sig = _outside_constants(
        al, be, kap, eps, lphi_a, r_a, lphi_b, r_b, log_2s, sg
    )
    lin = _linear_params(al, be, kap, eps)
    lp = np.empty(n)
    dmu = np.empty(n)
    dsig = np.empty(n)
    for i in range(n):
        zi = z[i]
        left = zi <= a
        lp[i] = (gl_v if left else gr_v) - ((a - zi) if left else (zi - b)) * inv_s
        dmu[i] = gl_mu if left else gr_mu
        dsig[i] = gl_sig if left else gr_sig
    idx = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(n):
        idx[k] = i
        k += (z[i] > a) & (z[i] < b)
    zin = np.empty(k)
    for j in range(k):
        zin[j] = z[idx[j]]
    v_lp = np.empty(k)
    v_mu = np.empty(k)
    v_sg = np.empty(k)
    for j in range(k):
        zi = zin[j]
        v, g_mu, g_sig = _inside_linear(zi, a, inv_s, inv_sg, kap, (zi - m) * inv_sg, lin)
        v_lp[j] = v - log_2s
        v_mu[j] = g_mu
        v_sg[j] = g_sig
    for j in range(k):
        i = idx[j]
        lp[i] = v_lp[j]
        dmu[i] = v_mu[j]
        dsig[i] = v_sg[j]
    return lp, dmu, dsig


@_njit
def _clipped_normal_kernel(z, mu, sigma, lower, upper, epsilon):
    """Per report: log p, d log p / d mu, d log p / d sigma (parameters of length 1 or n)."""
    n = z.shape[0]
    if mu.shape[0] == 1 and sigma.shape[0] == 1 and lower.shape[0] == 1:
        if upper.shape[0] == 1 and epsilon.shape[0] == 1:
            # one parameter set: the region test of the loop below, same expressions
            m, sg, a, b, eps = mu[0], sigma[0], lower[0], upper[0], epsilon[0]
            kap = sg / ((b - a) / eps)
            al = (a - m) / sg
            be = (b - m) / sg
            if eps <= _FAST_EPS and kap <= _FAST_KAP and al >= -_FAST_AB and be <= _FAST_AB:
                return _one_set(z, m, sg, a, b, eps)
    lp = np.empty(n)
    dmu = np.empty(n)
    dsig = np.empty(n)
    i_m = 1 if mu.shape[0] > 1 else 0
    i_s = 1 if sigma.shape[0] > 1 else 0
    i_a = 1 if lower.shape[0] > 1 else 0
    i_b = 1 if upper.shape[0] > 1 else 0
    i_e = 1 if epsilon.shape[0] > 1 else 0
    # parameter-only quantities, recomputed when the parameters change
    m_ = s_ = a_ = b_ = e_ = np.nan
    s = kap = al = be = lphi_a = r_a = lphi_b = r_b = log_2s = inv_s = inv_sg = 0.0
    have_out = have_in = lf3 = lf4 = False
    gl_v = gr_v = gl_mu = gr_mu = gl_sig = gr_sig = 0.0
    t3 = t4 = (0.0, 0.0, 0.0)
    fast = False
    lin = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for i in range(n):
        m = mu[i * i_m]
        sg = sigma[i * i_s]
        a = lower[i * i_a]
        b = upper[i * i_b]
        eps = epsilon[i * i_e]
        if not (m == m_ and sg == s_ and a == a_ and b == b_ and eps == e_):
            m_, s_, a_, b_, e_ = m, sg, a, b, eps
            s, kap, al, be, lphi_a, r_a, lphi_b, r_b, log_2s, inv_s, inv_sg = _param_terms(
                m, sg, a, b, eps
            )
            have_out = have_in = False
            fast = eps <= _FAST_EPS and kap <= _FAST_KAP and al >= -_FAST_AB and be <= _FAST_AB
            if fast:
                lin = _linear_params(al, be, kap, eps)
        zi = z[i]
        if zi > a and zi < b:
            if fast:
                v, g_mu, g_sig = _inside_linear(zi, a, inv_s, inv_sg, kap, (zi - m) * inv_sg, lin)
                lp[i] = v - log_2s
                dmu[i] = g_mu
                dsig[i] = g_sig
                continue
            if not have_in:
                lf3 = al <= kap
                lf4 = -be <= kap
                t3 = _tail(al, kap, lf3)
                t4 = _tail(-be, kap, lf4)
                have_in = True
            ze = (zi - m) / sg
            j3, j3_lo, j3_hi, j3_k = _interval(al, ze, kap, lf3, t3, _tail(ze, kap, lf3))
            j4, j4_lo, j4_hi, j4_k = _interval(-be, -ze, kap, lf4, t4, _tail(-ze, kap, lf4))
            v, p1, p2, p3, p4 = _lse4(lphi_a - (zi - a) / s, lphi_b - (b - zi) / s, j3, j4)
            lp[i] = v - log_2s
            d_al = p1 * r_a + p3 * j3_lo
            d_be = -p2 * r_b - p4 * j4_lo
            d_ze = p3 * j3_hi - p4 * j4_hi
            d_k = p3 * j3_k + p4 * j4_k
            dmu[i] = -(d_al + d_be + d_ze) / sg
            dsig[i] = (kap * d_k - (al * d_al + be * d_be + ze * d_ze)) / sg
            continue
        if not have_out:
            gl_v, gr_v, gl_mu, gr_mu, gl_sig, gr_sig = _outside_constants(
                al, be, kap, eps, lphi_a, r_a, lphi_b, r_b, log_2s, sg
            )
            have_out = True
        # selects rather than branches: left and right reports come in random order
        left = zi <= a
        lp[i] = (gl_v if left else gr_v) - ((a - zi) if left else (zi - b)) * inv_s
        dmu[i] = gl_mu if left else gr_mu
        dsig[i] = gl_sig if left else gr_sig
    return lp, dmu, dsig


# ---------------------------------------------------------------------------------------------
# The op
# ---------------------------------------------------------------------------------------------


def _free_roots(var):
    """Whether ``var`` depends on a root variable that is neither a constant nor shared data."""
    from pytensor.compile.sharedvalue import SharedVariable

    return any(
        v.owner is None and not isinstance(v, Constant | SharedVariable) for v in ancestors([var])
    )


def _sum_to(x, param):
    # the kernel's per-report derivative, summed over the reports a length-1 parameter covers
    return x.sum(keepdims=True) if param.type.shape[0] == 1 else x


class ClippedNormalLaplaceOp(Op):
    """Elementwise over reports: ``log p`` (``grad=False``) or
    ``(log p, d log p / d mu, d log p / d sigma)`` (``grad=True``).

    Inputs ``(z, mu, sigma, lower, upper, epsilon)``: float64 vectors, z of length n, each
    parameter of length n or of static length 1 (one value for every report).  The value op's
    gradient applies the ``grad=True`` op to the same inputs; a rewrite
    (:func:`~pymc_dpnoise.math._op_support.register_shared_kernel`) then takes the value from
    that op, so that a logp + gradient function runs the kernel once, while a logp-only graph
    (e.g. the one a JAX sampler differentiates itself) carries no derivative work.
    """

    __props__ = ("grad",)

    def __init__(self, grad=False):
        self.grad = bool(grad)
        super().__init__()

    def make_node(self, z, mu, sigma, lower, upper, epsilon):
        inputs = [pt.as_tensor_variable(x) for x in (z, mu, sigma, lower, upper, epsilon)]
        if any(x.type.ndim != 1 or x.type.dtype != "float64" for x in inputs):
            raise TypeError("ClippedNormalLaplaceOp takes float64 vectors")
        out = pt.TensorType("float64", shape=(inputs[0].type.shape[0],))
        return Apply(self, inputs, [out() for _ in range(3 if self.grad else 1)])

    def perform(self, node, inputs, outputs):
        perform_kernel(_clipped_normal_kernel, inputs, outputs)

    def infer_shape(self, node, shapes):
        return [shapes[0]] * len(node.outputs)

    def pullback(self, inputs, outputs, output_grads):
        from ._clipped_normal_graph import _clipped_normal_dense

        if not self.grad:
            full = clipped_normal_laplace_grad_op(*inputs)
            none = [disconnected_type(), disconnected_type()]
            return clipped_normal_laplace_grad_op.pullback(inputs, full, [output_grads[0], *none])

        z, mu, sigma, lower, upper, epsilon = inputs
        g_lp, g_dmu, g_dsig = (
            None if isinstance(g.type, DisconnectedType) else g for g in output_grads
        )
        second = g_dmu is not None or g_dsig is not None
        res = [None] * 6
        if not second and g_lp is not None:
            res[1] = _sum_to(g_lp * outputs[1], mu)
            res[2] = _sum_to(g_lp * outputs[2], sigma)
        need = [
            i
            for i in range(6)
            if res[i] is None and (second or i in (1, 2) or _free_roots(inputs[i]))
        ]
        if need:
            # the PyTensor graph of the same formulas, differentiated by PyTensor
            n = z.shape[0]
            mu_b = pt.broadcast_to(mu, (n,))
            sig_b = pt.broadcast_to(sigma, (n,))
            lp = _clipped_normal_dense(z, mu_b, sig_b, lower, upper, epsilon)
            known = {}
            if g_lp is not None:
                known[lp] = g_lp
            if second:
                dm, ds = pytensor.grad(lp.sum(), [mu_b, sig_b])
                if g_dmu is not None:
                    known[dm] = g_dmu
                if g_dsig is not None:
                    known[ds] = g_dsig
            grads = pytensor.grad(
                None,
                [inputs[i] for i in need],
                known_grads=known,
                disconnected_inputs="ignore",
                return_disconnected="zero",
            )
            for i, g in zip(need, grads, strict=True):
                res[i] = g
        for i in range(6):
            if res[i] is None:
                res[i] = grad_not_implemented(
                    self, i, inputs[i], "gradient with respect to reports, bounds or epsilon"
                )
        return res


clipped_normal_laplace_op = ClippedNormalLaplaceOp(grad=False)
clipped_normal_laplace_grad_op = ClippedNormalLaplaceOp(grad=True)


@_njit
def _clipped_normal_value(z, mu, sigma, lower, upper, epsilon):
    return _clipped_normal_kernel(z, mu, sigma, lower, upper, epsilon)[0]


register_shared_kernel(ClippedNormalLaplaceOp)


def _numba_clipped_normal(op, node):
    return _clipped_normal_kernel if op.grad else _clipped_normal_value


def _register_jax():
    try:
        from pytensor.link.jax.dispatch import jax_funcify
    except ImportError:  # pragma: no cover
        return False

    @jax_funcify.register(ClippedNormalLaplaceOp)
    def _jax_clipped_normal(op, node, **kwargs):
        import jax
        import jax.numpy as jnp
        from pytensor.graph.fg import FunctionGraph

        from ._clipped_normal_graph import (
            _clipped_normal_dense,
            _clipped_normal_inside,
            _clipped_normal_outside,
        )

        data = [node.inputs[i] for i in (0, 3, 4, 5)]
        if all(isinstance(v, Constant) for v in data):
            # reports, bounds and epsilon known (observed data): the vectorised kernel, whose
            # value is a custom_jvp function of (mu, sigma) with the closed-form derivatives
            from ._clipped_normal_jax import kernel

            f = kernel(*(np.asarray(v.data) for v in data), grad=op.grad)
            return lambda z, mu, sigma, lower, upper, epsilon: f(mu, sigma)

        def jaxify(fn):
            # length-1 parameters stay broadcastable (PyTensor's JAX elemwise refuses
            # runtime broadcasting)
            ins = [
                pt.TensorType("float64", shape=(1 if v.type.shape[0] == 1 else None,))()
                for v in node.inputs
            ]
            inner = jax_funcify(FunctionGraph(ins, [fn(*ins)], clone=True))
            return lambda *args: inner(*args)[0]

        fixed = [node.inputs[i] for i in (0, 3, 4)]
        if all(isinstance(v, Constant) for v in fixed):
            # reports and bounds known (observed data): each region's formula on its own
            # reports only, as the gathered graph does
            z0, a0, b0 = (np.asarray(v.data) for v in fixed)
            mask = (z0 > a0) & (z0 < b0)
            idx_in, idx_out = np.flatnonzero(mask), np.flatnonzero(~mask)
            f_in = jaxify(lambda z, m, s, a, b, e: _clipped_normal_inside(z, a, b, m, s, e))
            f_out = jaxify(lambda z, m, s, a, b, e: _clipped_normal_outside(z, a, b, m, s, e))

            def logp(*args):
                def take(idx):
                    return [x if x.shape[0] == 1 else x[idx] for x in args]

                out = jnp.zeros(args[0].shape, dtype=jnp.float64)
                if idx_in.size:
                    out = out.at[idx_in].set(f_in(*take(idx_in)))
                if idx_out.size:
                    out = out.at[idx_out].set(f_out(*take(idx_out)))
                return out
        else:
            logp = jaxify(_clipped_normal_dense)

        if not op.grad:
            return logp

        def f(z, mu, sigma, lower, upper, epsilon):
            args = (z, mu, sigma, lower, upper, epsilon)
            lp = logp(*args)
            # per-report d/d mu and d/d sigma by forward mode (the parameter-only work stays
            # scalar).  A JAX sampler differentiates the log density (output 0) with JAX's
            # own autodiff and never uses these outputs (XLA drops them); they are
            # stop_gradient'ed so that tracing that autodiff does not differentiate them
            # again (second derivatives of jax's erfcx fail on non-scalar arguments).
            c = tuple(jax.lax.stop_gradient(a) for a in args)
            zero = [jnp.zeros_like(a) for a in c]
            _, dmu = jax.jvp(logp, c, (*zero[:1], jnp.ones_like(c[1]), *zero[2:]))
            _, dsig = jax.jvp(logp, c, (*zero[:2], jnp.ones_like(c[2]), *zero[3:]))
            return lp, dmu, dsig

        return f

    return True


_NUMBA_REGISTERED = register_numba_kernel(ClippedNormalLaplaceOp, __file__, _numba_clipped_normal)
when_jax_dispatch_loads(_register_jax)  # JAX is imported only by its users
