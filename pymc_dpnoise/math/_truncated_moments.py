r"""The moments of a truncated Poisson over a short interval, as one op with its gradient.

:func:`pymc_dpnoise.math.expfam.truncated_poisson_moments` sums the pmf over the truncation
interval :math:`\{a, \dots, b\}` when the bounds are constants and hold at most 64 integers:
with :math:`d_j = j\log\mu - \log[(a+j)!/a!]` and weights :math:`w_j \propto e^{d_j}`,
:math:`\log q = \log\mathrm{pmf}(a) + \log\sum_j e^{d_j}`, mean :math:`a + \bar\jmath` and
variance :math:`\sum_j (j - \bar\jmath)^2 w_j`.  As a PyTensor graph that is a window matrix,
its reductions and their gradients, slow for PyTensor's Numba backend to compile
(``benchmarks/results/cold_compile_parts.md``).  This module evaluates **the same sums** in one Numba kernel.
The truncated law is an exponential family in :math:`\eta = \log\mu` (the truncation does
not depend on :math:`\mu`), so the derivatives are its cumulants:

.. math::

    \frac{\partial \log q}{\partial\eta} = \hat\mu - \mu, \qquad
    \frac{\partial \hat\mu}{\partial\eta} = \hat\Sigma, \qquad
    \frac{\partial \hat\Sigma}{\partial\eta} = \kappa_3 = \sum_j (j - \bar\jmath)^3 w_j,

and :math:`\partial/\partial\mu = \mu^{-1}\,\partial/\partial\eta`.  The bounds are integers
(data): no gradient flows to them.  Second derivatives come from the graph of the same sums,
built only when requested; the JAX backend runs a vectorised twin.
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
from ._jit import njit as _njit
from ._special import _length, _log_poisson_pmf, _stride


@_njit
def _moments_kernel(mu, lower, upper, terms):
    """Per element: log q, mean, var and their derivatives in mu (inputs of length m or 1)."""
    m = _length(mu.shape[0], lower.shape[0], upper.shape[0])
    i_m, i_a, i_b = _stride(mu), _stride(lower), _stride(upper)
    lq, mean_, var_, d_lq, d_mean, d_var = np.empty((6, m))
    buf = np.empty(terms)
    for i in range(m):
        mu_i = mu[i * i_m]
        a = lower[i * i_a]
        b = upper[i * i_b]
        lmu = math.log(mu_i)
        lga = math.lgamma(a + 1.0)
        top = -np.inf
        for j in range(terms):
            k = a + j
            if k <= b and k >= a:
                d = j * lmu - (math.lgamma(k + 1.0) - lga)
            else:
                d = -np.inf
            buf[j] = d
            top = max(top, d)
        tot = s1 = 0.0
        for j in range(terms):
            e = math.exp(buf[j] - top)
            buf[j] = e
            tot += e
            s1 += j * e
        jbar = s1 / tot
        s2 = s3 = 0.0
        for j in range(terms):
            dj = j - jbar
            w = buf[j] / tot
            s2 += dj * dj * w
            s3 += dj * dj * dj * w
        mean = a + jbar
        lq[i] = _log_poisson_pmf(a, lmu) + top + math.log(tot)
        mean_[i] = mean
        var_[i] = s2
        d_lq[i] = (mean - mu_i) / mu_i
        d_mean[i] = s2 / mu_i
        d_var[i] = s3 / mu_i
    return lq, mean_, var_, d_lq, d_mean, d_var


#: ``DENSE_GRAPH(mu, lower, upper, terms)``: the graph of the same sums, set by
#: :mod:`~pymc_dpnoise.math.expfam`, which owns them (this module does not import it back)
DENSE_GRAPH = None


class TruncatedPoissonMomentsOp(Op):
    """``(log q, mean, var)`` of Poisson(mu) truncated to {lower..upper} (``grad=False``), or
    those and their derivatives in mu (``grad=True``).

    Inputs ``(mu, lower, upper)``: float64 vectors of one length m or of static length 1
    (repeated).  Prop ``terms``: the number of integers summed from ``lower`` (the widest
    interval's, static).
    """

    __props__ = ("terms", "grad")

    def __init__(self, terms, grad=False):
        self.terms = int(terms)
        self.grad = bool(grad)
        super().__init__()

    def make_node(self, mu, lower, upper):
        return ops.kernel_node(self, (mu, lower, upper), 6 if self.grad else 3)

    def perform(self, node, inputs, outputs):
        ops.perform_kernel(_moments_kernel, inputs, outputs, self.terms)

    def infer_shape(self, node, shapes):
        return ops.kernel_shapes(node, shapes)

    def connection_pattern(self, node):
        return [[True] * len(node.outputs)] + [[False] * len(node.outputs)] * 2

    def pullback(self, inputs, outputs, output_grads):
        mu = inputs[0]
        if not self.grad:
            op = TruncatedPoissonMomentsOp(self.terms, grad=True)
            none = [disconnected_type()] * 3
            return op.pullback(inputs, op(*inputs), [*output_grads, *none])
        g = [None if isinstance(x.type, DisconnectedType) else x for x in output_grads]
        if any(x is not None for x in g[3:]):
            # second derivatives: the graph of the same sums, differentiated by PyTensor
            import pytensor

            mb, lb, ub = pt.broadcast_arrays(*inputs)
            dense = DENSE_GRAPH(mb, lb, ub, self.terms)
            known = {v: gk for v, gk in zip(dense, g[:3], strict=True) if gk is not None}
            for v, gk in zip(dense, g[3:], strict=True):
                if gk is not None:
                    known[pytensor.grad(v.sum(), mb)] = gk
            (gm,) = pytensor.grad(
                None, [mu], known_grads=known, disconnected_inputs="ignore",
                return_disconnected="zero",
            )  # fmt: skip
            return [gm, disconnected_type(), disconnected_type()]
        total = None
        for gk, d in zip(g[:3], outputs[3:], strict=True):
            if gk is not None:
                total = gk * d if total is None else total + gk * d
        if total is None:
            return [disconnected_type()] * 3
        return [ops.sum_to(total, mu), disconnected_type(), disconnected_type()]


ops.register_shared_kernel(TruncatedPoissonMomentsOp)


def _numba_moments(op, node):
    terms = op.terms
    # thin wrappers binding the static prop (the kernel they call is cached)
    if op.grad:

        @numba.njit
        def moments(mu, lower, upper):
            return _moments_kernel(mu, lower, upper, terms)

    else:

        @numba.njit
        def moments(mu, lower, upper):
            r = _moments_kernel(mu, lower, upper, terms)
            return r[0], r[1], r[2]

    return moments


def _jax_kernel(op, node):
    from ._truncated_moments_jax import kernel

    return kernel(op.terms, op.grad)


_NUMBA_REGISTERED = ops.register_numba_kernel(
    TruncatedPoissonMomentsOp, [__file__, _special.__file__], _numba_moments
)
ops.register_jax_kernel(TruncatedPoissonMomentsOp, _jax_kernel)


def truncated_poisson_direct(mu, lower, upper, terms):
    """``(log q, mean, var)`` of Poisson(mu) truncated to {lower..upper} by the kernel (any
    broadcastable shapes; a one-element argument enters as length 1)."""
    return tuple(ops.apply_flat(TruncatedPoissonMomentsOp(terms), mu, lower, upper))
