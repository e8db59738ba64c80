r"""The window sum of a count released with Gaussian-kind noise, as one op with its gradient.

:func:`pymc_dpnoise.math.noisy_counts.noisy_binomial_logp` (and ``noisy_poisson_logp``) with
Gaussian or discrete-Gaussian noise sums, per release :math:`y`, the terms
:math:`f(s) = \log P(s) - \tfrac12 ((y - s)/\sigma)^2` over a window :math:`|s - c| \le W` of
the count's values around the summand's argmax :math:`c` (found by bisection on the sign of
:math:`f(s+1) - f(s)`; the module docstring of :mod:`~pymc_dpnoise.math.noisy_counts` proves
that the window holds the mass).  As a PyTensor graph this is a bisection ``Scan``, a
window matrix, a log-sum-exp and their gradients: ~60 nodes after rewriting, which PyTensor's
Numba backend compiled in ~10 CPU-s from empty caches for the count model of
``benchmarks/time_to_posterior.py`` (``pm.sample``'s first logp call), against ~2 for the
naive binomial model.

This module evaluates **the same formulas** in one Numba kernel per release (bisection,
window, log-sum-exp), with one closed-form pmf per release: the window's terms are taken
relative to the one at :math:`c`, :math:`f(s) - f(c) = \sum \log\frac{P(t+1)}{P(t)} -
\tfrac12 (c - s)(2y - s - c)/\sigma^2` with the pmf's ratios (:math:`\log\frac{n-t}{t+1} +
\ell`, :math:`\lambda - \log(t + 1)`) summed stepping out from :math:`c` (one logarithm per
term, where the graph evaluates a saddle-point pmf per term; and the weights no longer carry
the rounding of terms of size :math:`|f(c)|`, up to :math:`10^8`), and the derivatives in
closed form from the softmax weights :math:`w_s = e^{f(s)}/\sum_t e^{f(t)}`:

.. math::

    \partial_\ell\, \mathrm{LSE} = \sum_s w_s\,(s - n\,\mathrm{expit}(\ell)) \;\;
    (\text{binomial}, \ell = \operatorname{logit} p), \qquad
    \partial_\lambda\, \mathrm{LSE} = \sum_s w_s\,(s - e^\lambda) \;\; (\text{Poisson},
    \lambda = \log\mu),

    \partial_y\, \mathrm{LSE} = -\sum_s w_s\,(y - s)/\sigma^2, \qquad
    \partial_\sigma\, \mathrm{LSE} = \sum_s w_s\,(y - s)^2/\sigma^3

(no gradient flows through the window's position, as in the graph: the argmax is a step
function of the parameters and the window holds the mass wherever it sits).  The noise's
normalising constant (:math:`\log\sigma\sqrt{2\pi}` or the discrete Gaussian's
:math:`\log Z`) is added by the caller.  Second derivatives (e.g. a Hessian at the mode)
come from the graph of the same formulas, built only when requested.  On the JAX backend
the op runs the vectorised twin in :mod:`pymc_dpnoise.math._count_window_jax`.

``kind="lower"``: the discrete Gaussian's lower clamp atom times its :math:`Z`,
:math:`\log\sum_k e^{-(m-k)^2/2\sigma^2} F(k)` at an integer :math:`m` (the sum and its
proof are in :mod:`~pymc_dpnoise.math.noisy_counts`'s docstring), with
:math:`\partial_\ell \log F(k) = -(n - k)\,q\,e^{-\rho(k)}` (Poisson: :math:`-\mu
e^{-\rho(k)}`), :math:`\rho(k) = \log F(k)/P(k)`, and :math:`\partial_\sigma =
\sum_k w_k (m - k)^2/\sigma^3`; its graph (second derivatives, and the JAX backend, which
compiles that graph) is ``noisy_counts._dg_lower_sum``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type
from pytensor.graph.op import Op

from . import _op_support as ops
from . import _special
from ._jit import helper as _helper
from ._jit import njit as _njit
from ._special import _log_binom_pmf, _log_poisson_pmf

FAMILIES = ("binomial", "poisson")
#: what the op sums: the pmf / pdf's window (``"pmf"``), or the discrete Gaussian's lower
#: clamp atom over the count's CDF (``"lower"``)
KINDS = ("pmf", "lower")


@_helper
def _expit(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@_helper
def _log_ratio(s, n, lpar, binomial):
    """log P(s + 1) / P(s) of the count, 0 <= s < n."""
    if binomial:
        return math.log(n - s) - math.log1p(s) + lpar
    return lpar - math.log1p(s)


@_helper
def _strides(a, b, c, d):
    """The broadcast length of four vectors of length 1 or m, and each one's stride (0 or 1)."""
    na, nb, nc, nd = a.shape[0], b.shape[0], c.shape[0], d.shape[0]
    return max(na, nb, nc, nd), int(na > 1), int(nb > 1), int(nc > 1), int(nd > 1)


@_njit
def _window_kernel(y, hi, lpar, sigma, half_width, iters, binomial):
    """Per release: the window log-sum-exp and its derivatives in y, sigma and the family
    parameter (inputs of length m or 1)."""
    m, i_y, i_h, i_l, i_s = _strides(y, hi, lpar, sigma)
    out = np.empty(m)
    d_y = np.empty(m)
    d_sig = np.empty(m)
    d_par = np.empty(m)
    width = 2 * half_width + 1
    buf = np.empty(width)
    for i in range(m):
        yi, n, lq, sg = y[i * i_y], hi[i * i_h], lpar[i * i_l], sigma[i * i_s]
        two_s2 = 2.0 * sg**2
        # bisection for the argmax on [a, b] (the family's mode and y bracket it)
        if binomial:
            mode = min(max(math.floor((n + 1.0) * _expit(lq)), 0.0), n)
            mean = n * _expit(lq)
        else:
            mode = math.floor(math.exp(min(lq, 60.0)))
            mean = math.exp(lq)
        a = min(max(min(mode, math.floor(yi)), 0.0), n)
        b = min(max(max(mode, math.ceil(yi)), 0.0), n)
        for _ in range(iters):
            mid = math.floor(0.5 * (a + b))
            if mid < b:
                ratio = _log_ratio(mid, n, lq, binomial)
                if ratio + (2.0 * (yi - mid) - 1.0) / two_s2 >= 0.0:
                    a = mid + 1.0
                    continue
            b = mid
        c = a
        # the window's terms relative to the term at c (their maximum is then near 0 and
        # the largest term's rounding, ~1e-8 where log P(c) ~ -1e8, cancels out of the
        # weights): log P(s) / P(c) by the pmf's ratios stepping out from c (one log per
        # term), the Gaussian's difference in closed form
        base = (_log_binom_pmf(c, n, lq) if binomial else _log_poisson_pmf(c, lq)) - 0.5 * (
            (yi - c) / sg
        ) ** 2
        top = -np.inf
        for j in range(width):
            buf[j] = -np.inf
        lp = 0.0
        for j in range(half_width, width):  # s = c, c + 1, ...
            s = c - half_width + j
            if s > n:
                break
            if j > half_width:
                lp += _log_ratio(s - 1.0, n, lq, binomial)
            t = lp - 0.5 * (c - s) * (2.0 * yi - s - c) / sg**2
            buf[j] = t
            top = max(top, t)
        lp = 0.0
        for j in range(half_width - 1, -1, -1):  # s = c - 1, c - 2, ...
            s = c - half_width + j
            if s < 0.0:
                break
            lp -= _log_ratio(s, n, lq, binomial)
            t = lp - 0.5 * (c - s) * (2.0 * yi - s - c) / sg**2
            buf[j] = t
            top = max(top, t)
        if not math.isfinite(base):
            top = base
        if not math.isfinite(top):
            out[i] = top if top == top else np.nan
            d_y[i] = d_sig[i] = d_par[i] = 0.0
            continue
        tot = sy = ss = sp = 0.0
        for j in range(width):
            e = math.exp(buf[j] - top)
            s = c - half_width + j
            r = yi - s
            tot += e
            sy += e * r
            ss += e * r * r
            sp += e * (s - mean)
        out[i] = base + top + math.log(tot)
        d_y[i] = -sy / tot / sg**2
        d_sig[i] = ss / tot / sg**3
        d_par[i] = sp / tot
    return out, d_y, d_sig, d_par


@_helper
def _logaddexp(a, b):
    if a < b:
        a, b = b, a
    if b == -np.inf:
        return a
    return a + math.log1p(math.exp(b - a))


@_helper
def _cdf_step(k, mi, two_s2, n, lq, binomial):
    """T(k + 1) - T(k) of the lower-tail summand T(k) = log F(k) - (m - k)^2 / 2 sigma^2
    (exact: the CDF's ratio from one continued fraction)."""
    gauss = -(2.0 * (k - mi) + 1.0) / two_s2
    if binomial:
        if k >= n:
            return gauss
        rho = _special._log_binom_cdf_ratio(k, n, lq)
    else:
        rho = _special._log_poisson_cdf_ratio(k, lq, False)
    return gauss + math.log1p(math.exp(_log_ratio(k, n, lq, binomial) - rho))


@_helper
def _step_bound(k, mi, two_s2, n, lq, binomial):
    """An upper bound of T(k + 1) - T(k) without the CDF (F(k) >= P(k)), non-increasing."""
    gauss = -(2.0 * (k - mi) + 1.0) / two_s2
    if binomial and k >= n:
        return gauss
    return gauss + math.log1p(math.exp(_log_ratio(k, n, lq, binomial)))


@_njit
def _lower_tail_kernel(m, hi, lpar, sigma, half_width, iters, binomial):
    """Per release: log sum_k e^{-(m - k)^2 / 2 sigma^2} F(k) (the discrete-Gaussian clamp
    atom's sum over the count's CDF) and its derivatives in sigma and the family parameter
    (the derivative in m is 0: m is an integer)."""
    size, i_m, i_h, i_l, i_s = _strides(m, hi, lpar, sigma)
    out = np.empty(size)
    d_m = np.zeros(size)
    d_sig = np.empty(size)
    d_par = np.empty(size)
    buf = np.empty(4 * half_width + 2)
    dlf = np.empty(4 * half_width + 2)
    for i in range(size):
        mi, n, lq, sg = m[i * i_m], hi[i * i_h], lpar[i * i_l], sigma[i * i_s]
        two_s2 = 2.0 * sg**2
        if not (math.isfinite(mi) and math.isfinite(lq) and sg > 0.0):
            out[i] = np.nan
            d_sig[i] = d_par[i] = np.nan
            continue
        # the argmax c of T(k) = log F(k) - (m - k)^2 / 2 sigma^2: at or above a = max(m, 0)
        # (log F rises, the Gaussian falls beyond m), and at or below b, the first k with
        # ub(k) < 0, ub the CDF-free bound T(k + 1) - T(k) <= log(1 + P(k+1)/P(k)) - (2 (k -
        # m) + 1) / 2 sigma^2 (F(k) >= P(k)), non-increasing in k (exponential search, then
        # bisection, on ub)
        a = max(mi, 0.0)
        top_k = max(n, a) if binomial else np.inf
        lo = a - 1.0
        hi_b = a
        step = 1.0
        for _ in range(iters):
            if hi_b >= top_k:
                hi_b = top_k
                break
            if _step_bound(hi_b, mi, two_s2, n, lq, binomial) < 0.0:
                break
            lo = hi_b
            step *= 2.0
            hi_b = lo + step
        b = hi_b
        for _ in range(iters):  # the first k in (lo, hi_b] with ub(k) < 0
            if b - lo <= 1.0:
                break
            mid = math.floor(0.5 * (lo + b))
            if _step_bound(mid, mi, two_s2, n, lq, binomial) < 0.0:
                b = mid
            else:
                lo = mid
        if b - a <= 2.0 * half_width:
            # a short bracket: sum over [a - W, b + W], which holds the window around c
            k0, k1 = max(a - half_width, 0.0), b + half_width
        else:
            # else bisection on the exact step (one continued fraction each)
            for _ in range(iters):
                if a >= b:
                    break
                mid = math.floor(0.5 * (a + b))
                if _cdf_step(mid, mi, two_s2, n, lq, binomial) >= 0.0:
                    a = mid + 1.0
                else:
                    b = mid
            k0, k1 = max(a - half_width, 0.0), a + half_width
        # the terms k0..k1 relative to log F(k0) (one continued fraction), then F(k + 1) =
        # F(k) + P(k + 1) upwards (sums of positive terms), P by its ratios; d log F(k) /
        # d lpar = -(n - k) q e^{-rho(k)} (binomial) or -mu e^{-rho(k)} (Poisson),
        # rho(k) = log F(k) / P(k)
        count = min(int(k1 - k0) + 1, buf.shape[0])  # (counts beyond 2^52 are not integers)
        base = 0.0  # log F(k0)
        a_rel = 0.0  # log P(k) / F(k0)
        if not (binomial and k0 >= n):
            if binomial:
                rho = _special._log_binom_cdf_ratio(k0, n, lq)
                base = _log_binom_pmf(k0, n, lq) + rho
            else:
                rho = _special._log_poisson_cdf_ratio(k0, lq, False)
                base = _log_poisson_pmf(k0, lq) + rho
            a_rel = -rho
        mult = _expit(lq) if binomial else math.exp(lq)  # q, or mu
        b_rel = 0.0  # log F(k) / F(k0)
        top = -np.inf
        for j in range(count):
            k = k0 + j
            if binomial and k >= n:
                b_rel = -base  # F = 1
                d = 0.0
            else:
                if j > 0:
                    a_rel += _log_ratio(k - 1.0, n, lq, binomial)
                    b_rel = _logaddexp(b_rel, a_rel)
                e_rho = math.exp(a_rel - b_rel)
                d = -(n - k) * mult * e_rho if binomial else -mult * e_rho
            t = b_rel - (mi - k) ** 2 / two_s2
            buf[j] = t
            dlf[j] = d
            top = max(top, t)
        tot = ss = sp = 0.0
        for j in range(count):
            e = math.exp(buf[j] - top)
            r = mi - (k0 + j)
            tot += e
            ss += e * r * r
            sp += e * dlf[j]
        out[i] = base + top + math.log(tot)
        d_sig[i] = ss / tot / sg**3
        d_par[i] = sp / tot
    return out, d_m, d_sig, d_par


class CountWindowOp(Op):
    """Per release: the window log-sum-exp (``grad=False``) or it and its derivatives in
    ``(y, sigma, lpar)`` (``grad=True``).

    Inputs ``(y, hi, lpar, sigma)``: float64 vectors of one length m or of static length 1
    (repeated): the release, the count's upper end (``n``; ``inf`` for Poisson), the
    logit of p (log of the rate) and the noise's sigma.  Props: the family, the window's
    half-width and the number of bisection steps (both static, as in the graph).
    """

    __props__ = ("family", "half_width", "iters", "grad", "kind")

    def __init__(self, family, half_width, iters, grad=False, kind="pmf"):
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.family = family
        self.half_width = int(half_width)
        self.iters = int(iters)
        self.grad = bool(grad)
        self.kind = kind
        super().__init__()

    def make_node(self, y, hi, lpar, sigma):
        return ops.kernel_node(self, (y, hi, lpar, sigma), 4 if self.grad else 1)

    def _run(self, inputs):
        args = [np.ascontiguousarray(x, dtype=np.float64) for x in inputs]
        kernel = _window_kernel if self.kind == "pmf" else _lower_tail_kernel
        return kernel(*args, self.half_width, self.iters, self.family == "binomial")

    def perform(self, node, inputs, outputs):
        res = self._run(inputs)
        for o, r in zip(outputs, res[: len(outputs)], strict=True):
            o[0] = r

    def infer_shape(self, node, shapes):
        return ops.kernel_shapes(node, shapes)

    def connection_pattern(self, node):
        return [[True] * len(node.outputs), [False] * len(node.outputs)] + [
            [True] * len(node.outputs)
        ] * 2

    def pullback(self, inputs, outputs, output_grads):
        y, hi, lpar, sigma = inputs
        if not self.grad:
            op = CountWindowOp(self.family, self.half_width, self.iters, True, self.kind)
            none = [disconnected_type()] * 3
            return op.pullback(inputs, op(*inputs), [output_grads[0], *none])
        g = [None if isinstance(x.type, DisconnectedType) else x for x in output_grads]
        if any(x is not None for x in g[1:]):
            # second derivatives: the graph of the same formulas, differentiated by PyTensor
            import pytensor

            # per-release derivatives: of the graph at the inputs broadcast to one length
            yb, hb, lb, sb = pt.broadcast_arrays(y, hi, lpar, sigma)
            dense = self.dense(yb, hb, lb, sb)
            known = {}
            if g[0] is not None:
                known[dense] = g[0]
            wrt = [y, sigma, lpar]
            firsts = pytensor.grad(dense.sum(), [yb, sb, lb])
            for gk, d in zip(g[1:], firsts, strict=True):
                if gk is not None:
                    known[d] = gk
            gy, gs, gl = pytensor.grad(
                None,
                wrt,
                known_grads=known,
                disconnected_inputs="ignore",
                return_disconnected="zero",
            )
            return [gy, disconnected_type(), gl, gs]
        g0 = g[0]
        return [
            ops.sum_to(g0 * outputs[1], y),
            disconnected_type(),
            ops.sum_to(g0 * outputs[3], lpar),
            ops.sum_to(g0 * outputs[2], sigma),
        ]

    def dense(self, y, hi, lpar, sigma):
        """The same window sum as a PyTensor graph (:mod:`~pymc_dpnoise.math.noisy_counts`'s
        bisection ``scan`` and window, which that module registers in :data:`DENSE_GRAPH`)."""
        if DENSE_GRAPH is None:  # pragma: no cover - noisy_counts imports this module
            raise RuntimeError("import pymc_dpnoise.math.noisy_counts first")
        return DENSE_GRAPH(self, *pt.broadcast_arrays(y, hi, lpar, sigma))


#: ``DENSE_GRAPH(op, y, hi, lpar, sigma)``: the graph of the window sum, set by
#: :mod:`~pymc_dpnoise.math.noisy_counts`, which owns those formulas (this module does not
#: import it back)
DENSE_GRAPH = None


def count_window_logsumexp(family, y, hi, lpar, sigma, half_width, iters, kind="pmf"):
    """``log sum_{|s - c| <= W, 0 <= s <= hi} exp(log P(s) - ((y - s)/sigma)^2 / 2)`` per
    release (``kind="pmf"``), or ``log sum_{|k - c| <= W, k >= 0} exp(log F(k) - ((y -
    k)/sigma)^2 / 2)`` at an integer ``y`` (``kind="lower"``) (any broadcastable shapes; a
    one-element argument enters as length 1)."""
    op = CountWindowOp(family, half_width, iters, kind=kind)
    return ops.apply_flat(op, y, hi, lpar, sigma)


ops.register_shared_kernel(CountWindowOp)


def _numba_window(op, node):
    half_width, iters, binomial = op.half_width, op.iters, op.family == "binomial"
    kernel = _window_kernel if op.kind == "pmf" else _lower_tail_kernel
    # thin wrappers binding the static props (not cached themselves: the kernel they call is,
    # and PyTensor caches the compiled graph under the op's props)
    if op.grad:

        @numba.njit
        def window(y, hi, lpar, sigma):
            return kernel(y, hi, lpar, sigma, half_width, iters, binomial)

    else:

        @numba.njit
        def window(y, hi, lpar, sigma):
            return kernel(y, hi, lpar, sigma, half_width, iters, binomial)[0]

    return window


def _jax_kernel(op, node):
    if op.kind != "pmf":
        return _jax_from_graph(op, node)
    from ._count_window_jax import kernel

    return kernel(op.family, op.half_width, op.iters, op.grad)


def _jax_from_graph(op, node):
    """The op on the JAX backend as its graph (:meth:`CountWindowOp.dense` and, for
    ``grad=True``, that graph's derivatives), compiled by PyTensor's JAX dispatcher."""
    import pytensor
    from pytensor.compile.mode import get_mode
    from pytensor.graph.fg import FunctionGraph
    from pytensor.link.jax.dispatch import jax_funcify

    inputs = [x.type() for x in node.inputs]
    if not op.grad:
        outs = [op.dense(*inputs)]
    else:
        # per-release derivatives: of the graph at the inputs broadcast to one length
        yb, hb, lb, sb = pt.broadcast_arrays(*inputs)
        value = op.dense(yb, hb, lb, sb)
        d_sig, d_par = pytensor.grad(value.sum(), [sb, lb])
        outs = [value, pt.zeros_like(value), d_sig, d_par]
    fgraph = FunctionGraph(inputs, outs, clone=True)
    # the rewrites PyTensor's JAX mode applies to a graph before compiling it (e.g. the
    # bisection scan's last state as a static index)
    get_mode("JAX").optimizer.rewrite(fgraph)
    return jax_funcify(fgraph)


_NUMBA_REGISTERED = ops.register_numba_kernel(
    CountWindowOp, [__file__, _special.__file__], _numba_window
)
ops.register_jax_kernel(CountWindowOp, _jax_kernel)
