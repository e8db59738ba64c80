r"""The Numba kernel of :class:`~pymc_dpnoise.math._clipped_normal_op.ClippedNormalLaplaceOp`:
per report, the clipped-Gaussian Laplace log density and its derivatives in μ and σ.

The formulas, their forms in each region and the measurements behind them are described in
:mod:`pymc_dpnoise.math._clipped_normal_op`.  They live in a module of their own so that the
op (PyTensor) and the tests import them without importing one another.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import helper as _helper
from ._jit import inline as _inline
from ._jit import njit as _njit
from ._simd import erfcx_nonneg, exp_, log_

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


@_helper
def _exp_sq(x):
    """exp(x * x) with x * x split exactly into hi + lo (Dekker): ~1 ulp for |x| < 26.6."""
    hi = x * x
    c = 134217729.0 * x
    xh = c - (c - x)
    xl = x - xh
    lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl
    return math.exp(hi) * (1.0 + lo)


@_helper
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


@_helper
def _erfcx(x):
    """Scaled complementary error function exp(x^2) erfc(x)."""
    if x < 0.0:
        if x < -26.7:
            return np.inf
        return 2.0 * _exp_sq(x) - _erfcx_parts(-x)[0]
    return _erfcx_parts(x)[0]


@_helper
def _log1mexp(x):
    # the formula of pytensor's log1mexp
    if x < _LOG_HALF:
        return math.log1p(-math.exp(x))
    return math.log(-math.expm1(x))


@_helper
def _log_ndtr(x):
    """(log Phi(x), Phi'(x)/Phi(x)): the branches of ``clipped.log_ndtr``."""
    if x < -1.0:
        e = _erfcx(-x / _SQRT2)
        return math.log(e) - _LOG2 - 0.5 * (x * x), _SQRT_2_OVER_PI / e
    v = math.log1p(-0.5 * math.erfc(x / _SQRT2))
    return v, _INV_SQRT_2PI * math.exp(-0.5 * (x * x) - v)


@_helper
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


@_helper
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


@_helper
def _lse3(t0, t1, t2):
    m = max(max(t0, t1), t2)
    e0 = math.exp(t0 - m)
    e1 = math.exp(t1 - m)
    e2 = math.exp(t2 - m)
    total = e0 + e1 + e2
    return m + math.log(total), e0 / total, e1 / total, e2 / total


@_helper
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


@_helper
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


@_helper
def _inside_linear_call(zi, a, inv_s, inv_sg, kap, ze, lin):
    """:func:`_inside_linear` as a called function (not inlined into Numba's IR): the
    per-report loop is scalar, and inlining it there cost compile time only.  (A function of
    its own, not a second dispatcher of ``_inside_linear.py_func``: Numba's disk cache is
    keyed by the function's name and source, so two dispatchers of one function with
    different options would load each other's compiled code — one without the Python entry
    point the other needs.)"""
    return _inside_linear(zi, a, inv_s, inv_sg, kap, ze, lin)


@_helper
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


@_helper
def _param_terms(m, sg, a, b, eps):
    """What depends on the parameters only: s, kappa, alpha, beta, log Phi(alpha) and its
    R, log Phi(-beta) and its R, log 2s, 1/s, 1/sigma."""
    s = (b - a) / eps
    al = (a - m) / sg
    be = (b - m) / sg
    lphi_a, r_a = _log_ndtr(al)
    lphi_b, r_b = _log_ndtr(-be)
    return s, sg / s, al, be, lphi_a, r_a, lphi_b, r_b, math.log(2.0 * s), 1.0 / s, 1.0 / sg


@_helper
def _one_set(z, m, sg, a, b, eps, lp, dmu, dsig):
    """:func:`_clipped_normal_into` for one parameter set in the linear-space region, in
    passes LLVM vectorises: every report by the outside formula (selects), then the reports
    inside (a, b), gathered into a contiguous block, by :func:`_inside_linear`, scattered
    back.  Same formulas and values as the per-report loop."""
    n = z.shape[0]
    _, kap, al, be, lphi_a, r_a, lphi_b, r_b, log_2s, inv_s, inv_sg = _param_terms(m, sg, a, b, eps)
    gl_v, gr_v, gl_mu, gr_mu, gl_sig, gr_sig = _outside_constants(
        al, be, kap, eps, lphi_a, r_a, lphi_b, r_b, log_2s, sg
    )
    lin = _linear_params(al, be, kap, eps)
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


@_njit
def _clipped_normal_kernel(z, mu, sigma, lower, upper, epsilon):
    """Per report: log p, d log p / d mu, d log p / d sigma (parameters of length 1 or n)."""
    n = z.shape[0]
    for k in (mu.shape[0], sigma.shape[0], lower.shape[0], upper.shape[0], epsilon.shape[0]):
        if k != n and k != 1:
            raise ValueError(
                "kernel inputs: every parameter must have the reports' length or length 1"
            )
    lp = np.empty(n)
    dmu = np.empty(n)
    dsig = np.empty(n)
    _clipped_normal_into(z, mu, sigma, lower, upper, epsilon, lp, dmu, dsig)
    return lp, dmu, dsig


@_helper
def _clipped_normal_into(z, mu, sigma, lower, upper, epsilon, lp, dmu, dsig):
    """:func:`_clipped_normal_kernel` writing into ``lp``, ``dmu``, ``dsig`` (length n)."""
    n = z.shape[0]
    if mu.shape[0] == 1 and sigma.shape[0] == 1 and lower.shape[0] == 1:
        if upper.shape[0] == 1 and epsilon.shape[0] == 1:
            # one parameter set: the region test of the loop below, same expressions
            m, sg, a, b, eps = mu[0], sigma[0], lower[0], upper[0], epsilon[0]
            kap = sg / ((b - a) / eps)
            al = (a - m) / sg
            be = (b - m) / sg
            if eps <= _FAST_EPS and kap <= _FAST_KAP and al >= -_FAST_AB and be <= _FAST_AB:
                _one_set(z, m, sg, a, b, eps, lp, dmu, dsig)
                return
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
                v, g_mu, g_sig = _inside_linear_call(
                    zi, a, inv_s, inv_sg, kap, (zi - m) * inv_sg, lin
                )
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


@_helper
def _group_row(p, g):
    # the parameter set of group g: its row, or the one value every group shares
    return p[g : g + 1] if p.shape[0] > 1 else p[0:1]


@_njit
def _clipped_normal_grouped_kernel(z, mu, sigma, lower, upper, epsilon, group):
    """:func:`_clipped_normal_kernel` with parameters given per group: report i has the
    parameters of group ``group[i]`` (each parameter of length G, the number of groups, or of
    length 1, shared).

    The reports are ordered by group (a counting sort, stable), each group's block runs the
    one-parameter-set path (:func:`_clipped_normal_into` with length-1 parameters: the
    parameter-only terms once per group, the vectorised passes of :func:`_one_set` where they
    apply), and the results go back in the reports' order: the same values, to the bit, as
    the per-report kernel on the gathered parameters ``mu[group]``, …, which recomputes the
    parameter-only terms whenever consecutive reports differ in their parameters.
    """
    n = z.shape[0]
    n_groups = 1
    for k in (mu.shape[0], sigma.shape[0], lower.shape[0], upper.shape[0], epsilon.shape[0]):
        if k > 1:
            if n_groups > 1 and k != n_groups:
                raise ValueError("grouped kernel: every grouped parameter must have one length")
            n_groups = k
    if group.shape[0] != n:
        raise ValueError("grouped kernel: the group index must have the reports' length")
    start = np.zeros(n_groups + 1, dtype=np.int64)
    gi = np.empty(n, dtype=np.int64)
    for i in range(n):
        g = group[i]
        if g < 0:
            g += n_groups  # NumPy's reading of a negative index
        if g < 0 or g >= n_groups:
            raise IndexError("grouped kernel: a group index is outside the parameters' length")
        gi[i] = g
        start[g + 1] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    fill = start[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        g = gi[i]
        order[fill[g]] = i
        fill[g] += 1
    zs = np.empty(n)
    for j in range(n):
        zs[j] = z[order[j]]
    lp_s = np.empty(n)
    dmu_s = np.empty(n)
    dsig_s = np.empty(n)
    for g in range(n_groups):
        lo, hi = start[g], start[g + 1]
        if hi > lo:
            _clipped_normal_into(
                zs[lo:hi],
                _group_row(mu, g),
                _group_row(sigma, g),
                _group_row(lower, g),
                _group_row(upper, g),
                _group_row(epsilon, g),
                lp_s[lo:hi],
                dmu_s[lo:hi],
                dsig_s[lo:hi],
            )
    lp = np.empty(n)
    dmu = np.empty(n)
    dsig = np.empty(n)
    for j in range(n):
        i = order[j]
        lp[i] = lp_s[j]
        dmu[i] = dmu_s[j]
        dsig[i] = dsig_s[j]
    return lp, dmu, dsig
