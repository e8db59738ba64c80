r"""JAX kernel of :class:`~pymc_dpnoise.math._clipped_normal_op.ClippedNormalLaplaceOp`
(imported only by the JAX linker).

The ``jax.numpy`` formulas of the Numba kernel ``_clipped_normal_kernel`` (same branches, same
operations, the linear-space form ``_inside_linear`` for the reports inside the interval
included; ``erfc`` is XLA's, up to 6e-14 relative off libm's near x = 26; the Numba kernel's
``_inside_linear`` takes :math:`e_1\Phi(\zeta - k)` from ``erfcx`` instead, the same number to
a few ulp), over whole vectors: both sides of every branch are computed, each at an argument
where it is finite (the other side's argument replaced by a safe constant), and picked with
``where``.  XLA's CPU compiler contracts multiply-adds into FMAs, so the results differ from
Numba's in the last bits, and by more where a derivative is a nearly cancelling sum (σ or the
noise scale 1e±100 times the interval): ``tests/math/test_clipped_normal_jax.py`` bounds the
difference.

Used when the reports, the bounds and ε are constants (observed data: PyMC's
``get_jaxified_logp`` makes data constants), so that everything that depends on the data only
is computed once, in NumPy, when the function is built.  With one parameter set (the usual
model) in the region where the Numba kernel uses its linear-space form, a report outside the
interval is evaluated at its bound and moved by its distance from it over s (same
derivatives), so that the formulas run once per distinct clipped report (every report outside
the interval is one of the two bounds), one elementwise pass gathered into the reports' order
(or, when few reports are alike, one pass in their order and no gathers); the two normal
CDFs per value are computed in one materialised array, by a loop XLA runs on one thread
(:func:`_one_thread`), so that the loops for the log density and its two derivatives do
not each compute them again.  That choice is made under ``lax.cond``,
which runs one branch; elsewhere, and with per-report parameters, the log-space forms run:
the reports are split when the function is built into those inside the interval and those
outside, the parameter-only terms are computed once, and reports outside the interval cost
one affine function each.

The returned function is ``jax.jit``-ed, so that the several traces of the model's log
density a sampler makes (initial point, warm-up, sampling) trace the kernel once.  The log
density is a ``jax.custom_jvp`` function of (μ, σ) whose JVP is the closed-form
:math:`\partial/\partial\mu`, :math:`\partial/\partial\sigma`, computed with the value in
one pass, so that a JAX sampler differentiating the model's log density gets those instead of
differentiating the formulas; the formulas themselves are one jitted function behind a
``custom_jvp`` of their own (:func:`_opaque`), which the value and the JVP share.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._jax_dispatch import require_x64

_SQRT2 = math.sqrt(2.0)
_LOG2 = math.log(2.0)
_LOG_HALF = math.log(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_MINUS_TINY = -1e-300
#: the Numba kernel's ``_log1mexp(_MINUS_TINY)``
_LOG1MEXP_TINY = math.log(-math.expm1(_MINUS_TINY))


def _exp_sq(x):
    """exp(x * x) with x * x split exactly into hi + lo (Dekker), as the Numba kernel."""
    hi = x * x
    c = 134217729.0 * x
    xh = c - (c - x)
    xl = x - xh
    lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl
    return jnp.exp(hi) * (1.0 + lo)


def _erfcx_parts(x):
    """(erfcx(x), erfc(x), exp(x^2)) for x >= 0: erfc times exp(x^2) below 26, the asymptotic
    series above (erfc, exp(x^2) then 0, inf)."""
    small = x < 26.0
    xs = jnp.where(small, x, 0.0)
    ec = lax.erfc(xs)
    ex = _exp_sq(xs)
    xb = jnp.where(small, 26.0, x)
    t = 1.0 / (2.0 * xb * xb)
    term = jnp.ones_like(xb)
    total = jnp.ones_like(xb)
    for k in range(1, 10):
        term = term * (-(2.0 * k - 1.0) * t)
        total = total + term
    series = _INV_SQRT_PI / xb * total
    return (
        jnp.where(small, ec * ex, series),
        jnp.where(small, ec, 0.0),
        jnp.where(small, ex, jnp.inf),
    )


def _log_ndtr(x):
    """(log Phi(x), Phi'(x)/Phi(x))."""
    neg = x < -1.0
    xl = jnp.where(neg, x, -2.0)
    e = _erfcx_parts(-xl / _SQRT2)[0]
    left = jnp.log(e) - _LOG2 - 0.5 * (xl * xl)
    r_left = _SQRT_2_OVER_PI / e
    xr = jnp.where(neg, 0.0, x)
    v = jnp.log1p(-0.5 * lax.erfc(xr / _SQRT2))
    r_right = _INV_SQRT_2PI * jnp.exp(-0.5 * (xr * xr) - v)
    return jnp.where(neg, left, v), jnp.where(neg, r_left, r_right)


def _tail(x, k, want_e):
    """E (where ``want_e``) or F tilted tail at x and its (d/dx, d/dk)."""
    up = x >= k
    u = (x - k) / _SQRT2
    au = jnp.where(up, u, -u)
    ecx, ec, ex = _erfcx_parts(au)
    near = want_e != up
    val_near = (jnp.log(ecx) - _LOG2) - 0.5 * (x * x)
    r_near = _SQRT_2_OVER_PI / ecx
    val_far = k * (0.5 * k - x) + jnp.log1p(-0.5 * ec)
    r_far = _INV_SQRT_2PI / (ex * (1.0 - 0.5 * ec))
    val = jnp.where(near, val_near, val_far)
    r = jnp.where(near, r_near, r_far)
    return (
        val,
        jnp.where(want_e, -k + r, -k - r),
        jnp.where(want_e, k - x - r, k - x + r),
    )


def _interval(lo, hi, k, lower_form, t_lo, t_hi):
    """J_k(lo, hi) and (dJ/dlo, dJ/dhi, dJ/dk); ``t_lo``, ``t_hi`` from :func:`_tail`."""
    lf = lower_form
    width = hi - lo
    shift = k * width
    f_big = t_lo[0] - shift
    f_lo = t_lo[1] + k
    f_k = t_lo[2] - width
    big = jnp.where(lf, t_hi[0], f_big)
    b_lo = jnp.where(lf, 0.0, f_lo)
    b_hi = jnp.where(lf, t_hi[1], -k)
    b_k = jnp.where(lf, t_hi[2], f_k)
    small = jnp.where(lf, f_big, t_hi[0])
    s_lo = jnp.where(lf, f_lo, 0.0)
    s_hi = jnp.where(lf, -k, t_hi[1])
    s_k = jnp.where(lf, f_k, t_hi[2])
    t = small - big
    ok = t < _MINUS_TINY
    ts = jnp.where(ok, t, -1.0)
    low = ts < _LOG_HALF
    et = jnp.exp(jnp.where(low, ts, -1.0))
    em = jnp.expm1(jnp.where(low, -0.5, ts))
    v = jnp.where(
        ok,
        big + jnp.where(low, jnp.log1p(-et), jnp.log(-em)),
        big + _LOG1MEXP_TINY,
    )
    c = jnp.where(low, -et / (1.0 - et), (1.0 + em) / em)
    return (
        v,
        jnp.where(ok, b_lo + c * (s_lo - b_lo), b_lo),
        jnp.where(ok, b_hi + c * (s_hi - b_hi), b_hi),
        jnp.where(ok, b_k + c * (s_k - b_k), b_k),
    )


def _lse3(t0, t1, t2):
    m = jnp.maximum(jnp.maximum(t0, t1), t2)
    e0 = jnp.exp(t0 - m)
    e1 = jnp.exp(t1 - m)
    e2 = jnp.exp(t2 - m)
    total = e0 + e1 + e2
    return m + jnp.log(total), e0 / total, e1 / total, e2 / total


def _lse4(t0, t1, t2, t3):
    m = jnp.maximum(jnp.maximum(jnp.maximum(t0, t1), t2), t3)
    e0 = jnp.exp(t0 - m)
    e1 = jnp.exp(t1 - m)
    e2 = jnp.exp(t2 - m)
    e3 = jnp.exp(t3 - m)
    inv = 1.0 / (e0 + e1 + e2 + e3)
    return m - jnp.log(inv), e0 * inv, e1 * inv, e2 * inv, e3 * inv


def _params(mu, sigma, a, b, eps):
    """Everything that depends on the parameters only, on their own shape (1 or n), with the
    Numba kernel's separate scalar calls stacked into one call per formula (XLA runs every
    fused loop as a kernel of its own; stacking these and the two inside tails and intervals
    halved the compile time of the README model's value and gradient, ~5 to ~2.5 CPU-s)."""
    s = (b - a) / eps
    kap = sigma / s
    al = (a - mu) / sigma
    be = (b - mu) / sigma
    lphi, r = _log_ndtr(jnp.stack([al, -be]))
    lf3 = al <= kap
    lf4 = -be <= kap
    # the tails at alpha and -beta (inside and outside) and at -alpha and beta (outside)
    tails = _tail(jnp.stack([al, -be, -al, be]), kap, jnp.stack([lf3, lf4, lf4, lf3]))
    # outside: left J(-beta, -alpha) (tails 1, 2), right J(alpha, beta) (tails 0, 3)
    j, j_lo, j_hi, j_k = _interval(
        jnp.stack([-be, al]),
        jnp.stack([-al, be]),
        kap,
        jnp.stack([lf4, lf3]),
        tuple(t[jnp.array([1, 0])] for t in tails),
        tuple(t[jnp.array([2, 3])] for t in tails),
    )
    # left: LSE(log Phi(alpha), log Phi(-beta) - eps, J); right: LSE(log Phi(-beta),
    # log Phi(alpha) - eps, J)
    g, q1, q2, q3 = _lse3(lphi, lphi[::-1] - eps, j)
    g_a = jnp.stack([q1[0] * r[0] - q3[0] * j_hi[0], q2[1] * r[0] + q3[1] * j_lo[1]])
    g_b = jnp.stack([-q2[0] * r[1] - q3[0] * j_lo[0], -q1[1] * r[1] + q3[1] * j_hi[1]])
    g_k = q3 * j_k
    terms = dict(
        s=s,
        kap=kap,
        al=al,
        be=be,
        lphi=lphi,
        r=r,
        log_2s=jnp.log(2.0 * s),
        lf=jnp.stack([lf3, lf4]),
        t_lo=tuple(t[:2] for t in tails),
        out_lp=g,
        out_dmu=-(g_a + g_b) / sigma,
        out_dsig=(kap * g_k - (al * g_a + be * g_b)) / sigma,
    )
    # materialised: without the barrier XLA fuses some of them into the loops over the
    # reports that broadcast them (README model value: 671 us without, 557 with, one run)
    return lax.optimization_barrier(terms)


def _scalars(mu, sigma, a, b, eps):
    """s, kappa, alpha, beta and log 2s: what the linear-space form needs of :func:`_params`."""
    s = (b - a) / eps
    return dict(
        s=s, kap=sigma / s, al=(a - mu) / sigma, be=(b - mu) / sigma, log_2s=jnp.log(2.0 * s)
    )


def _inside(z, mu, sigma, a, b, q):
    """log p, d/dmu, d/dsigma for reports a < z < b (``q``: :func:`_params` at theirs)."""
    kap, al, be, s, r = q["kap"], q["al"], q["be"], q["s"], q["r"]
    ze = (z - mu) / sigma
    hi = jnp.stack([ze, -ze])
    # J(alpha, zeta) and J(-beta, -zeta), one call
    j, j_lo, j_hi, j_k = _interval(
        jnp.stack([al, -be]), hi, kap, q["lf"], q["t_lo"], _tail(hi, kap, q["lf"])
    )
    lphi_a, lphi_b = q["lphi"]
    v, p1, p2, p3, p4 = _lse4(lphi_a - (z - a) / s, lphi_b - (b - z) / s, j[0], j[1])
    d_al = p1 * r[0] + p3 * j_lo[0]
    d_be = -p2 * r[1] - p4 * j_lo[1]
    d_ze = p3 * j_hi[0] - p4 * j_hi[1]
    d_k = p3 * j_k[0] + p4 * j_k[1]
    return (
        v - q["log_2s"],
        -(d_al + d_be + d_ze) / sigma,
        (kap * d_k - (al * d_al + be * d_be + ze * d_ze)) / sigma,
    )


_FAST_EPS = 50.0
_FAST_KAP = 5.0
_FAST_AB = 30.0
#: the linear-space form runs on the distinct clipped reports when they are at most this share
#: of the reports (below it the gather into the reports' order costs less than the formulas it
#: saves)
_DISTINCT_SHARE = 0.8


def _ndtr(x):
    return 0.5 * lax.erfc(-x / _SQRT2)


def _fast_ok(eps, q):
    """Whether the Numba kernel's linear-space form (``_inside_linear``) applies."""
    return (
        (eps <= _FAST_EPS)
        & (q["kap"] <= _FAST_KAP)
        & (q["al"] >= -_FAST_AB)
        & (q["be"] <= _FAST_AB)
    )


def _one_thread(x, probe):
    """``x`` (2-d) materialised once, by a loop XLA's CPU backend runs on one thread.

    Materialised: without it XLA computes ``x`` again in each of the loops for the three
    outputs.  One thread: XLA's CPU backend splits a costly elementwise loop over its thread
    pool, and at a few thousand values the hand-off costs more CPU time than it saves
    (``benchmarks/results/xla_loop_overhead.md``); it does not split a loop that may write
    a buffer in place, i.e. one that ends in a ``dynamic_update_slice`` whose offsets are
    not known when compiling.  ``x`` is written into a buffer one column wider at offset
    0 or -1 (``probe`` is NaN or not), both clamped to 0, and read back: the same values
    as ``x``.
    """
    rows, cols = x.shape
    off = -lax.convert_element_type(probe[0] != probe[0], jnp.int32)
    buf = lax.dynamic_update_slice(jnp.zeros((rows, cols + 1)), x, (off, off))
    return tuple(lax.optimization_barrier(buf)[:, :cols])


def _inside_linear(ze, ea, eb, sigma, q):
    """The Numba kernel's ``_inside_linear`` (linear-space form, no branches) over vectors:
    ``ze`` = (z - mu) / sigma, ``ea`` = exp(-(z - a) / s), ``eb`` = exp(-eps) / ea."""
    kap, al, be, s = q["kap"], q["al"], q["be"], q["s"]
    pa, pb, ca, cb = _ndtr(jnp.stack([al, -be, al - kap, -be - kap]))
    fa = _INV_SQRT_2PI * jnp.exp(-0.5 * (al * al))
    fb = _INV_SQRT_2PI * jnp.exp(-0.5 * (be * be))
    f1 = jnp.exp(kap * (0.5 * kap - al))
    f2 = jnp.exp(kap * (0.5 * kap + be))
    c3, c4 = _one_thread(_ndtr(jnp.stack([ze - kap, -ze - kap])), kap)
    phz = _INV_SQRT_2PI * jnp.exp(-0.5 * (ze * ze))
    t3 = (f1 * ea) * (c3 - ca)
    t4 = (f2 * eb) * (c4 - cb)
    tot = pa * ea + pb * eb + t3 + t4
    inv = 1.0 / tot
    return (
        jnp.log(tot) - q["log_2s"],
        (t3 - t4) * inv / s,
        kap * (kap * (t3 + t4) - 2.0 * phz + fa * ea + fb * eb) * inv / sigma,
    )


def _outside(z, a, b, q, left):
    """log p, d/dmu, d/dsigma for reports z <= a (``left``) or z >= b: the parameter-only
    log-sum-exp minus the report's distance from the bound over s."""

    def pick(x):
        return jnp.where(left, x[0], x[1])

    dist = np.where(left, a - z, z - b)
    return pick(q["out_lp"]) - dist / q["s"] - q["log_2s"], pick(q["out_dmu"]), pick(q["out_dsig"])


def _opaque(f):
    """``f`` jitted, behind a ``custom_jvp`` whose rule is ``f``'s own JVP (the same
    derivatives as ``f``'s).

    The value (``logp``) and its JVP call this one traced function, so a process traces the
    formulas (both branches of their ``lax.cond``) once.  And when a sampler linearises the
    JVP of the log density, JAX's partial evaluator binds a ``custom_jvp`` whose inputs are
    all known as one call, where it walks a plain jitted function (and both branches of its
    ``lax.cond``, twice) equation by equation.
    """
    f = jax.jit(f)

    @jax.custom_jvp
    def g(*args):
        return f(*args)

    @g.defjvp
    def _g_jvp(primals, tangents):
        return jax.jvp(f, primals, tangents)

    return g


def kernel(z, lower, upper, epsilon, grad):
    """The JAX function of the op (``grad`` as the op's prop) for constant reports, bounds and
    epsilon (NumPy vectors of length n or 1); mu and sigma are its only traced inputs.

    Returns ``f(mu, sigma)``: log p per report (``grad=False``) or (log p, d/dmu, d/dsigma).
    """
    require_x64("the clipped-normal op's JAX implementation")
    z, lower, upper, epsilon = (np.asarray(x, dtype=np.float64) for x in (z, lower, upper, epsilon))
    n = z.shape[0]
    a_n = np.broadcast_to(lower, (n,))
    b_n = np.broadcast_to(upper, (n,))
    inside = (z > a_n) & (z < b_n)
    idx_in = np.flatnonzero(inside)
    idx_out = np.flatnonzero(~inside)
    left = z[idx_out] <= a_n[idx_out]
    perm = np.concatenate([idx_in, idx_out])
    inv = np.argsort(perm, kind="stable")
    identity = bool(np.array_equal(perm, np.arange(n)))

    z_in, z_out = z[idx_in], z[idx_out]

    def _log_space(mu, sigma, a, b, eps, take):
        """(inside, outside) parts by the log-space forms (any parameters)."""
        q = _params(mu, sigma, a, b, eps)
        res_in = res_out = None
        if idx_in.size:
            qi = jax.tree.map(lambda x: take(x, idx_in), q)
            at = [take(x, idx_in) for x in (mu, sigma, a, b)]
            res_in = _inside(z_in, *at, qi)
        if idx_out.size:
            qo = jax.tree.map(lambda x: take(x, idx_out), q)
            res_out = _outside(z_out, take(a, idx_out), take(b, idx_out), qo, left)
        return res_in, res_out

    one_set = lower.shape[0] == upper.shape[0] == epsilon.shape[0] == 1
    # one interval and an epsilon where the linear-space form can apply (``_fast_ok``): its
    # data-only factors, per report in the reports' order; a report outside the interval is
    # evaluated at its bound (``zc``) and then moved by its distance from it over s (same
    # derivatives)
    linear = one_set and bool(epsilon[0] <= _FAST_EPS)
    if linear:
        a0, b0, e0 = lower[0], upper[0], epsilon[0]
        s0 = (b0 - a0) / e0
        zc = np.clip(z, a0, b0)
        shift = np.abs(z - zc) / s0
        # the distinct clipped reports: every report outside the interval is one of the two
        # bounds, so that with many of them the formulas (two normal CDFs each) run on far
        # fewer values, gathered back into the reports' order
        zu, back = np.unique(zc, return_inverse=True)
        if zu.size > _DISTINCT_SHARE * n:
            zu, back = zc, None
        ea = np.exp(-(zu - a0) / s0)
        eb = np.exp(-e0) / ea

    def _linear_all(mu, sigma, a, b, eps):
        """log p, d/dmu, d/dsigma of every report by the linear-space form (one parameter
        set): one elementwise pass over the distinct clipped reports (or over the reports in
        their order when few are alike: no gathers), gathered into the reports' order."""
        q = _scalars(mu, sigma, a, b, eps)
        lp, dmu, dsig = _inside_linear((zu - mu) / sigma, ea, eb, sigma, q)
        if back is not None:
            # materialised: XLA would otherwise fuse the formulas into the gathers, that is
            # evaluate them once per report again
            lp, dmu, dsig = lax.optimization_barrier((lp, dmu, dsig))
            lp, dmu, dsig = lp[back], dmu[back], dsig[back]
        return lp - shift, dmu, dsig

    def _assemble(res):
        """The (inside, outside) parts of :func:`_log_space` in the reports' order."""
        parts = [(m, r) for m, r in zip((idx_in.size, idx_out.size), res, strict=True) if m]
        out = []
        for k in range(3):
            pieces = [jnp.broadcast_to(r[k], (m,)) for m, r in parts]
            cat = jnp.concatenate(pieces) if pieces else jnp.zeros(0)
            out.append(cat if identity else cat[inv])
        return tuple(out)

    def full(mu, sigma):
        size = max(x.shape[0] for x in (mu, sigma, lower, upper, epsilon))
        a, b, eps = (np.broadcast_to(x, (size,)) for x in (lower, upper, epsilon))
        mu, sigma = (jnp.broadcast_to(x, (size,)) for x in (mu, sigma))

        def take(x, idx):
            return x if size == 1 else x[..., idx]

        if size == 1 and linear:
            # one parameter set: under ``lax.cond`` (which runs one branch) either the
            # linear-space form for every report, or the log-space forms
            return lax.cond(
                _fast_ok(eps, _scalars(mu, sigma, a, b, eps))[0],
                lambda: _linear_all(mu, sigma, a, b, eps),
                lambda: _assemble(_log_space(mu, sigma, a, b, eps, take)),
            )
        return _assemble(_log_space(mu, sigma, a, b, eps, take))

    full = _opaque(full)

    @jax.custom_jvp
    def logp(mu, sigma):
        return full(mu, sigma)[0]

    @logp.defjvp
    def _logp_jvp(primals, tangents):
        lp, dmu, dsig = full(*primals)
        t_mu, t_sigma = tangents
        return lp, dmu * t_mu + dsig * t_sigma

    # jitted: a sampler traces the model's log density several times (initialisation,
    # warm-up, sampling), and each trace of the jitted kernel after the first is a cache hit
    if not grad:
        return jax.jit(logp)

    def with_derivatives(mu, sigma):
        # the derivative outputs are not differentiated further (as in the dense fallback)
        _, dmu, dsig = full(lax.stop_gradient(mu), lax.stop_gradient(sigma))
        return logp(mu, sigma), dmu, dsig

    return jax.jit(with_derivatives)
