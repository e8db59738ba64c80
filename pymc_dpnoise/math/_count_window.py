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


@_njit
def _window_kernel(y, hi, lpar, sigma, half_width, iters, binomial):
    """Per release: the window log-sum-exp and its derivatives in y, sigma and the family
    parameter (inputs of length m or 1)."""
    m = max(y.shape[0], hi.shape[0], lpar.shape[0], sigma.shape[0])
    i_y = 1 if y.shape[0] > 1 else 0
    i_h = 1 if hi.shape[0] > 1 else 0
    i_l = 1 if lpar.shape[0] > 1 else 0
    i_s = 1 if sigma.shape[0] > 1 else 0
    out = np.empty(m)
    d_y = np.empty(m)
    d_sig = np.empty(m)
    d_par = np.empty(m)
    width = 2 * half_width + 1
    buf = np.empty(width)
    for i in range(m):
        yi = y[i * i_y]
        n = hi[i * i_h]
        lq = lpar[i * i_l]
        sg = sigma[i * i_s]
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


class CountWindowOp(Op):
    """Per release: the window log-sum-exp (``grad=False``) or it and its derivatives in
    ``(y, sigma, lpar)`` (``grad=True``).

    Inputs ``(y, hi, lpar, sigma)``: float64 vectors of one length m or of static length 1
    (repeated): the release, the count's upper end (``n``; ``inf`` for Poisson), the
    logit of p (log of the rate) and the noise's sigma.  Props: the family, the window's
    half-width and the number of bisection steps (both static, as in the graph).
    """

    __props__ = ("family", "half_width", "iters", "grad")

    def __init__(self, family, half_width, iters, grad=False):
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
        self.family = family
        self.half_width = int(half_width)
        self.iters = int(iters)
        self.grad = bool(grad)
        super().__init__()

    def make_node(self, y, hi, lpar, sigma):
        return ops.kernel_node(self, (y, hi, lpar, sigma), 4 if self.grad else 1)

    def _run(self, inputs):
        args = [np.ascontiguousarray(x, dtype=np.float64) for x in inputs]
        return _window_kernel(*args, self.half_width, self.iters, self.family == "binomial")

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
            op = CountWindowOp(self.family, self.half_width, self.iters, grad=True)
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


def count_window_logsumexp(family, y, hi, lpar, sigma, half_width, iters):
    """``log sum_{|s - c| <= W, 0 <= s <= hi} exp(log P(s) - ((y - s)/sigma)^2 / 2)`` per
    release (any broadcastable shapes; a one-element argument enters as length 1)."""
    return ops.apply_flat(CountWindowOp(family, half_width, iters), y, hi, lpar, sigma)


ops.register_shared_kernel(CountWindowOp)


def _numba_window(op, node):
    half_width, iters, binomial = op.half_width, op.iters, op.family == "binomial"
    # thin wrappers binding the static props (not cached themselves: the kernel they call is,
    # and PyTensor caches the compiled graph under the op's props)
    if op.grad:

        @numba.njit
        def window(y, hi, lpar, sigma):
            return _window_kernel(y, hi, lpar, sigma, half_width, iters, binomial)

    else:

        @numba.njit
        def window(y, hi, lpar, sigma):
            return _window_kernel(y, hi, lpar, sigma, half_width, iters, binomial)[0]

    return window


def _jax_kernel(op, node):
    from ._count_window_jax import kernel

    return kernel(op.family, op.half_width, op.iters, op.grad)


_NUMBA_REGISTERED = ops.register_numba_kernel(
    CountWindowOp, [__file__, _special.__file__], _numba_window
)
ops.register_jax_kernel(CountWindowOp, _jax_kernel)
