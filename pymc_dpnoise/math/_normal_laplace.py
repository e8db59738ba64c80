r"""The normal-Laplace log density as one elementwise op with its gradient.

:func:`pymc_dpnoise.math.expfam.normal_laplace_logp`, the density of :math:`y = s +
\mathrm{Laplace}(0, \beta)` with :math:`s \sim N(m, v)`, is

.. math::

    \log p(y) = -\log 2\beta + \log\bigl[e^{E_1} + e^{E_2}\bigr],\qquad
    E_1 = E_\kappa(x),\; E_2 = E_\kappa(-x),\qquad x = a/\sigma,\; a = |y - m|,\;
    \sigma = \sqrt v,\; \kappa = \sigma/\beta,

with the tilted tail :math:`E_\kappa(x) = \kappa^2/2 - \kappa x + \log\Phi(x - \kappa)`.  As
a PyTensor graph (``erfcx`` forms under ``switch`` guards, and their gradients) it was slow to
compile.  This module evaluates the same values (the clipped-normal
kernel's tails) in one Numba kernel, with derivatives taken in :math:`(a, \sigma, \beta)`
directly so that none is a difference of large terms:

* :math:`x < \kappa` ("near" side) and always for :math:`E_2`:
  :math:`E = -x^2/2 + \log(\operatorname{erfcx}(u)/2)`, :math:`u = (\kappa \mp x)/\sqrt2`,
  :math:`\tfrac{d}{du}\log\operatorname{erfcx}(u) = -\sqrt2\,G(u)` with
  :math:`G(u) = \sqrt{2/\pi}/\operatorname{erfcx}(u) - \sqrt2 u`, computed from the
  asymptotic series of :math:`1 - \sqrt\pi u \operatorname{erfcx}(u)` above :math:`u = 20`
  (it is :math:`\approx 1/(\sqrt2 u)`, a difference of numbers :math:`\approx \sqrt2 u` when
  formed directly); then :math:`\partial_a E_{1,2} = (-x \pm G)/\sigma`,
  :math:`\partial_\sigma E_{1,2} = x^2/\sigma - G(1/\beta \pm x/\sigma)`,
  :math:`\partial_\beta E = G\kappa/\beta`;
* :math:`x \ge \kappa` (:math:`E_1` "far"): :math:`E_1 = \kappa^2/2 - a/\beta +
  \log\Phi(x - \kappa)` with :math:`R = \varphi/\Phi(x - \kappa)`:
  :math:`\partial_a = -1/\beta + R/\sigma`, :math:`\partial_\sigma = \kappa/\beta - R(x/\sigma +
  1/\beta)`, :math:`\partial_\beta = (\kappa/\beta)(x - \kappa + R)`.

The weights' difference enters the derivatives at first order near the normal limit
(:math:`\kappa \gg x`), so :math:`E_1 - E_2 = \log[\operatorname{erfcx}(u_1)/
\operatorname{erfcx}(u_2)]` is formed from :math:`\log(1 + \sqrt2 x/u_1)` and the series
above :math:`u = 20`, not as a difference of the two logs.  With the softmax weights
:math:`p_{1,2}` of the halves, :math:`\partial_y =
\operatorname{sign}(y - m)\sum p_i \partial_a E_i`, :math:`\partial_m = -\partial_y`,
:math:`\partial_v = \sum p_i\partial_\sigma E_i / 2\sigma`, :math:`\partial_\beta = -1/\beta
+ \sum p_i \partial_\beta E_i`.  As in the graph, a variance at or below :math:`(10^{-150}(1 +
\beta))^2` is replaced by that floor (the Laplace limit).  Second derivatives come from the
graph, built only when requested; the JAX backend runs a vectorised twin.
"""

from __future__ import annotations

import math

import numpy as np
from pytensor.gradient import DisconnectedType, disconnected_type
from pytensor.graph.op import Op

from . import _clipped_normal_kernel, _special
from . import _op_support as ops
from ._clipped_normal_kernel import _erfcx_parts
from ._jit import helper as _helper
from ._jit import njit as _njit
from ._special import _length, _stride

_TINY_SD = 1e-150
_LOG2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
#: above this u, G(u) from the asymptotic series (12 terms: below 1e-20 relative there)
_G_SERIES = 20.0


@_helper
def _series(u):
    """(t, h/t - 1) for u >= 20, t = 1/(2u^2), h = 1 - sqrt(pi) u erfcx(u) =
    sum_{n>=1} (-1)^(n+1) (2n-1)!! t^n (12 terms: below 1e-20 relative there); h/t - 1
    is summed from its second term."""
    t = 1.0 / (2.0 * u * u)
    c = 1.0
    rest = 0.0
    for n in range(2, 14):
        c *= -(2.0 * n - 1.0) * t
        rest += c
    return t, rest


@_helper
def _h(u):
    """1 - sqrt(pi) u erfcx(u) for u >= 20."""
    t, rest = _series(u)
    return t * (1.0 + rest)


@_helper
def _g(u, ecx):
    """(G(u), sqrt2 u G(u) - 1) for u >= 0, given erfcx(u): G = sqrt(2/pi)/erfcx(u) - sqrt2 u.

    Above u = 20 both from the series of h (:func:`_series`): G = sqrt2 u h/(1 - h) and
    sqrt2 u G - 1 = (h/t - 1 + h)/(1 - h) (each formed directly would be a difference of
    nearly equal numbers)."""
    if u < _G_SERIES:
        g = _SQRT2 * (_INV_SQRT_PI / ecx - u)
        return g, _SQRT2 * u * g - 1.0
    t, rest = _series(u)
    h = t * (1.0 + rest)
    return _SQRT2 * u * h / (1.0 - h), (rest + h) / (1.0 - h)


@_helper
def _near(x, s, b, sign):
    """E(sign x) on the near side, its d/da and d/dsigma, and beta dE/dbeta - 1."""
    k = s / b
    u = (k - sign * x) / _SQRT2
    ecx = _erfcx_parts(u)[0]
    g, q = _g(u, ecx)
    val = (math.log(ecx) - _LOG2) - 0.5 * (x * x)
    # beta dE/dbeta = G kappa = (sqrt2 u G - 1) + 1 + sign G x
    return val, (-x + sign * g) / s, x * x / s - g * (1.0 / b + sign * x / s), q + sign * g * x


@_njit
def _normal_laplace_kernel(y, mean, var, scale):
    """Per element: log p and its derivatives in (y, mean, var, scale)."""
    n = _length(y.shape[0], mean.shape[0], var.shape[0], scale.shape[0])
    i_y, i_m, i_v, i_b = _stride(y), _stride(mean), _stride(var), _stride(scale)
    lp, d_y, d_m, d_v, d_b = np.empty((5, n))
    for i in range(n):
        b = scale[i * i_b]
        vi = var[i * i_v]
        floor_sd = _TINY_SD * (1.0 + b)
        use_var = vi > floor_sd * floor_sd
        s = math.sqrt(vi) if use_var else floor_sd
        r = y[i * i_y] - mean[i * i_m]
        a = abs(r)
        x = a / s
        k = s / b
        if x < k:
            e1, e1a, e1s, e1b = _near(x, s, b, 1.0)
        else:
            au = (x - k) / _SQRT2
            _, ec, ex = _erfcx_parts(au)
            phi = 1.0 - 0.5 * ec
            rr = _INV_SQRT_2PI / (ex * phi)
            e1 = k * (0.5 * k) - a / b + math.log1p(-0.5 * ec)
            e1a = -1.0 / b + rr / s
            e1s = k / b - rr * (x / s + 1.0 / b)
            e1b = k * (x - k + rr) - 1.0
        e2, e2a, e2s, e2b = _near(x, s, b, -1.0)
        # d = E1 - E2, on which the weights' difference (and so the derivatives near the
        # normal limit) depends to first order: both near, it is log(erfcx(u1)/erfcx(u2)),
        # u2 = u1 + sqrt2 x, from the asymptotic form of log erfcx above u = 20
        d = e1 - e2
        if x < k:
            u1 = (k - x) / _SQRT2
            if u1 >= _G_SERIES:
                u2 = (k + x) / _SQRT2
                d = math.log1p(_SQRT2 * x / u1) + math.log1p(-_h(u1)) - math.log1p(-_h(u2))
        if d >= 0.0:
            ed = math.exp(-d)
            p1 = 1.0 / (1.0 + ed)
            p2 = ed / (1.0 + ed)
            lp[i] = e1 + math.log1p(ed) - _LOG2 - math.log(b)
        else:
            ed = math.exp(d)
            p1 = ed / (1.0 + ed)
            p2 = 1.0 / (1.0 + ed)
            lp[i] = e2 + math.log1p(ed) - _LOG2 - math.log(b)
        # a half of weight 0 contributes nothing (its derivatives may overflow there)
        if p2 == 0.0:
            da, ds, db = e1a, e1s, e1b
        elif p1 == 0.0:
            da, ds, db = e2a, e2s, e2b
        else:
            da = p1 * e1a + p2 * e2a
            ds = p1 * e1s + p2 * e2s
            db = p1 * e1b + p2 * e2b
        sgn = 1.0 if r > 0.0 else (-1.0 if r < 0.0 else 0.0)
        d_y[i] = sgn * da
        d_m[i] = -sgn * da
        d_v[i] = ds / (2.0 * s) if use_var else 0.0
        # the halves' beta dE/dbeta - 1, weighted: -1/beta + sum p dE/dbeta, no cancellation
        d_b[i] = db / b + (0.0 if use_var else ds * _TINY_SD)
    return lp, d_y, d_m, d_v, d_b


#: ``DENSE_GRAPH(value, mean, var, scale)``: the graph of the same density, set by
#: :mod:`~pymc_dpnoise.math.expfam`, which owns it (this module does not import it back)
DENSE_GRAPH = None


class NormalLaplaceOp(Op):
    """Elementwise ``log p`` (``grad=False``) or it and its derivatives in
    ``(value, mean, var, scale)`` (``grad=True``); float64 vectors of one length or of
    static length 1 (repeated)."""

    __props__ = ("grad",)

    def __init__(self, grad=False):
        self.grad = bool(grad)
        super().__init__()

    def make_node(self, value, mean, var, scale):
        return ops.kernel_node(self, (value, mean, var, scale), 5 if self.grad else 1)

    def perform(self, node, inputs, outputs):
        ops.perform_kernel(_normal_laplace_kernel, inputs, outputs)

    def infer_shape(self, node, shapes):
        return ops.kernel_shapes(node, shapes)

    def pullback(self, inputs, outputs, output_grads):
        if not self.grad:
            op = NormalLaplaceOp(grad=True)
            none = [disconnected_type()] * 4
            return op.pullback(inputs, op(*inputs), [output_grads[0], *none])
        g = [None if isinstance(x.type, DisconnectedType) else x for x in output_grads]
        if any(x is not None for x in g[1:]):
            # second derivatives: the graph of the same density, differentiated by PyTensor
            import pytensor
            import pytensor.tensor as pt

            full = pt.broadcast_arrays(*inputs)
            dense = DENSE_GRAPH(*full)
            known = {dense: g[0]} if g[0] is not None else {}
            firsts = pytensor.grad(dense.sum(), full)
            for gk, d in zip(g[1:], firsts, strict=True):
                if gk is not None:
                    known[d] = gk
            return pytensor.grad(
                None, list(inputs), known_grads=known, disconnected_inputs="ignore",
                return_disconnected="zero",
            )  # fmt: skip
        if g[0] is None:
            return [disconnected_type()] * 4
        return [ops.sum_to(g[0] * d, x) for d, x in zip(outputs[1:], inputs, strict=True)]


ops.register_shared_kernel(NormalLaplaceOp)


@_njit
def _value(y, mean, var, scale):
    return _normal_laplace_kernel(y, mean, var, scale)[0]


def _jax_kernel(op, node):
    from ._normal_laplace_jax import kernel

    return kernel(op.grad)


_NUMBA_REGISTERED = ops.register_numba_kernel(
    NormalLaplaceOp,
    [__file__, _clipped_normal_kernel.__file__, _special.__file__],
    lambda op, node: _normal_laplace_kernel if op.grad else _value,
)
ops.register_jax_kernel(NormalLaplaceOp, _jax_kernel)


def normal_laplace_kernel_logp(value, mean, var, scale):
    """:func:`~pymc_dpnoise.math.expfam.normal_laplace_logp` by the kernel (any broadcastable
    shapes)."""
    return ops.apply_flat(NormalLaplaceOp(), value, mean, var, scale)
