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
(``tests/math/test_clipped_normal_kernel.py`` checks them equal to the bit).

Everything that depends on the parameters only (:math:`\log\Phi(\alpha)`, the tails at
:math:`\alpha` and :math:`-\beta`, the outside constants) is computed once per distinct
parameter value, so reports outside the clipping interval cost one affine function each.

Numba compiles the kernel at its first use and keeps it in its disk cache (``cache=True``);
``benchmarks/results/first_use_compile.md`` measures that first compile.

Gradients with respect to the reports, the bounds and ε (data in every model of the
package, but allowed to be variables) and second derivatives are taken from the PyTensor
graph of the same formulas (:func:`pymc_dpnoise.math.clipped._clipped_normal_dense`), built
only when such a gradient is requested.  The Python and Numba backends run the kernel.

On the JAX backend, when the reports, the bounds and ε are constants (observed data; PyMC's
``get_jaxified_logp``, which numpyro samples through, makes them constants), the op's value is
a ``jax.custom_jvp`` function of (μ, σ) whose JVP is the closed-form pair above, so JAX never
differentiates the formulas: the same formulas written in ``jax.numpy``
(:mod:`pymc_dpnoise.math._clipped_normal_jax`).

Otherwise (any of those inputs a variable, e.g. shared data compiled with ``mode="JAX"``) the
JAX backend runs the dense PyTensor graph and JAX differentiates it, so gradients with
respect to every input stay right.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType, disconnected_type, grad_not_implemented
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from pytensor.graph.traversal import ancestors

from . import _clipped_normal_kernel as _kernel_module
from . import _simd
from ._clipped_normal_kernel import _clipped_normal_grouped_kernel, _clipped_normal_kernel
from ._jax_dispatch import when_jax_dispatch_loads
from ._jit import njit as _njit
from ._op_support import (
    perform_kernel,
    register_grouped_kernel,
    register_numba_kernel,
    register_shared_kernel,
)

# ---------------------------------------------------------------------------------------------
# The op
# ---------------------------------------------------------------------------------------------


def _free_roots(var):
    """Whether ``var`` depends on a root variable that is neither a constant nor shared data."""
    from pytensor.compile.sharedvalue import SharedVariable

    return any(
        v.owner is None and not isinstance(v, Constant | SharedVariable) for v in ancestors([var])
    )


def _gather(p, group):
    # a grouped op's parameter, per report
    return p if p.type.shape[0] == 1 else p[group]


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

    With ``grouped=True`` a seventh input, an integer vector ``group`` of the reports'
    length, says which parameter set each report has: every parameter is then of length G
    (one value per group) or of static length 1, report i has the parameters of group
    ``group[i]``, and the outputs are those of the ungrouped op on the gathered parameters
    ``mu[group]``, … (the same numbers), computed with the parameter-only terms once per
    group (:func:`~._clipped_normal_kernel._clipped_normal_grouped_kernel`).  The graphs never
    build it directly: a canonicalisation
    (:func:`~pymc_dpnoise.math._op_support.register_grouped_kernel`) turns
    ``op(z, mu_g[group], …)`` into it.
    """

    __props__ = ("grad", "grouped")

    def __init__(self, grad=False, grouped=False):
        self.grad = bool(grad)
        self.grouped = bool(grouped)
        super().__init__()

    def make_node(self, z, mu, sigma, lower, upper, epsilon, *group):
        inputs = [pt.as_tensor_variable(x) for x in (z, mu, sigma, lower, upper, epsilon)]
        if any(x.type.ndim != 1 or x.type.dtype != "float64" for x in inputs):
            raise TypeError("ClippedNormalLaplaceOp takes float64 vectors")
        if len(group) != int(self.grouped):
            raise TypeError("ClippedNormalLaplaceOp: a group index goes with grouped=True only")
        if group:
            group = pt.as_tensor_variable(group[0])
            if group.type.ndim != 1 or not group.type.dtype.startswith(("int", "uint")):
                raise TypeError("ClippedNormalLaplaceOp: the group index is an integer vector")
            inputs.append(pt.cast(group, "int64"))
        out = pt.TensorType("float64", shape=(inputs[0].type.shape[0],))
        return Apply(self, inputs, [out() for _ in range(3 if self.grad else 1)])

    def perform(self, node, inputs, outputs):
        if self.grouped:
            perform_kernel(_clipped_normal_grouped_kernel, inputs[:6], outputs, inputs[6])
        else:
            perform_kernel(_clipped_normal_kernel, inputs, outputs)

    def connection_pattern(self, node):
        return [[True] * len(node.outputs)] * 6 + [[False] * len(node.outputs)] * self.grouped

    def infer_shape(self, node, shapes):
        return [shapes[0]] * len(node.outputs)

    def pullback(self, inputs, outputs, output_grads):
        from ._clipped_normal_graph import _clipped_normal_dense

        if not self.grad:
            grad_op = ClippedNormalLaplaceOp(grad=True, grouped=self.grouped)
            full = grad_op(*inputs)
            none = [disconnected_type(), disconnected_type()]
            return grad_op.pullback(inputs, full, [output_grads[0], *none])
        if self.grouped:
            # the ungrouped op's gradient on the gathered parameters, summed back per group
            group = inputs[6]
            gathered = [inputs[0], *(_gather(p, group) for p in inputs[1:6])]
            outs = clipped_normal_laplace_grad_op(*gathered)
            known = {}
            for o, g in zip(outs, output_grads, strict=True):
                if not isinstance(g.type, DisconnectedType):
                    known[o] = g
            # only the inputs the ungrouped op differentiates (mu, sigma, and any other input
            # that depends on a free variable): asking for the others would ask for the
            # reports', bounds' or epsilon's gradient, which is not implemented (NullType)
            need = [i for i in range(6) if i in (1, 2) or _free_roots(inputs[i])]
            grads = pytensor.grad(
                None,
                [inputs[i] for i in need],
                known_grads=known,
                disconnected_inputs="ignore",
                return_disconnected="zero",
            )
            res = [
                grad_not_implemented(
                    self, i, inputs[i], "gradient with respect to reports, bounds or epsilon"
                )
                for i in range(6)
            ]
            for i, g in zip(need, grads, strict=True):
                res[i] = g
            return [*res, disconnected_type()]

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
register_grouped_kernel(ClippedNormalLaplaceOp, n_data=1)


@_njit
def _clipped_normal_grouped_value(z, mu, sigma, lower, upper, epsilon, group):
    return _clipped_normal_grouped_kernel(z, mu, sigma, lower, upper, epsilon, group)[0]


def _numba_clipped_normal(op, node):
    if op.grouped:
        return _clipped_normal_grouped_kernel if op.grad else _clipped_normal_grouped_value
    return _clipped_normal_kernel if op.grad else _clipped_normal_value


def _register_jax():
    try:
        from pytensor.link.jax.dispatch import jax_funcify
    except ImportError:  # pragma: no cover
        return False

    @jax_funcify.register(ClippedNormalLaplaceOp)
    def _jax_clipped_normal(op, node, **kwargs):
        if op.grouped:
            return _jax_grouped(op, node, **kwargs)
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

    def _jax_grouped(op, node, **kwargs):
        # the ungrouped op on the gathered parameters (constant ones gathered here, so that
        # observed bounds and epsilon stay constants the ungrouped dispatch can see)
        group = node.inputs[6]
        known = isinstance(group, Constant)

        def spread(p):
            if p.type.shape[0] == 1:
                return p
            if known and isinstance(p, Constant):
                return pt.constant(np.asarray(p.data)[np.asarray(group.data)])
            return p[group]

        plain = ClippedNormalLaplaceOp(grad=op.grad)
        spread_node = plain.make_node(node.inputs[0], *map(spread, node.inputs[1:6]))
        inner = _jax_clipped_normal(plain, spread_node)

        def f(z, mu, sigma, lower, upper, epsilon, group):
            import jax.numpy as jnp

            args = [
                x if v.type.shape[0] == 1 else jnp.take(x, group, axis=0)
                for x, v in zip((mu, sigma, lower, upper, epsilon), node.inputs[1:6], strict=True)
            ]
            return inner(z, *args)

        return f

    return True


_NUMBA_REGISTERED = register_numba_kernel(
    ClippedNormalLaplaceOp,
    [__file__, _kernel_module.__file__, _simd.__file__],
    _numba_clipped_normal,
)
when_jax_dispatch_loads(_register_jax)  # JAX is imported only by its users
