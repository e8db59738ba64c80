"""What the package's kernel ops share: their Numba registration and the rewrite that lets a
value op reuse the derivative op's kernel call.

A kernel op here comes in two flavours selected by a ``grad`` prop: ``grad=False`` returns
the value, ``grad=True`` the value and its derivatives.  The value op's gradient applies the
``grad=True`` op to the same inputs; :func:`register_shared_kernel` then takes the value
from that op, so that a logp + gradient function runs the kernel once, while a logp-only
graph (e.g. the one a JAX sampler differentiates itself) carries no derivative work.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.rewriting.basic import register_canonicalize

from ._jax_dispatch import when_jax_dispatch_loads


def kernel_node(op, inputs, n_out):
    """The ``Apply`` of a kernel op over float64 vectors of one length m or of static length
    1 (repeated): ``n_out`` outputs of that length."""
    from pytensor.graph.basic import Apply

    inputs = [pt.as_tensor_variable(x) for x in inputs]
    if any(x.type.ndim != 1 or x.type.dtype != "float64" for x in inputs):
        raise TypeError(f"{type(op).__name__} takes float64 vectors")
    lengths = {x.type.shape[0] for x in inputs} - {1}
    if not lengths:
        length = 1  # every input of static length 1
    else:
        length = lengths.pop() if len(lengths) == 1 else None
    out = pt.TensorType("float64", shape=(length,))
    return Apply(op, inputs, [out() for _ in range(n_out)])


def sum_to(x, ref):
    """A per-element derivative summed over the elements a length-1 input ``ref`` covers."""
    return x.sum(keepdims=True) if ref.type.shape[0] == 1 else x


def perform_kernel(kernel, inputs, outputs, *extra):
    """``Op.perform`` of a kernel op: ``kernel`` on contiguous float64 copies of the inputs
    (and ``extra`` arguments), its first ``len(outputs)`` results stored."""
    args = [np.ascontiguousarray(x, dtype=np.float64) for x in inputs]
    res = kernel(*args, *extra)
    for o, r in zip(outputs, res[: len(outputs)], strict=True):
        o[0] = r


def kernel_shapes(node, shapes):
    """``infer_shape`` of a kernel op: the length of the inputs that are not of static
    length 1."""
    m = shapes[0][0]
    for (k,), x in zip(shapes, node.inputs, strict=True):
        if x.type.shape[0] != 1:
            m = k
    return [(m,)] * len(node.outputs)


def register_numba_kernel(op_type: type, sources, make: Callable) -> bool:
    """Register ``make(op, node)`` (a Numba function of the node's inputs) as the op's
    implementation in PyTensor's Numba backend.  PyTensor caches compiled graphs by op type
    and props: the cache key also carries a hash of ``sources`` (the file, or the files, whose
    code the kernel compiles: the op's module and the kernel modules it calls), so that a
    changed kernel is never served from an old cache."""
    try:
        from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key
    except ImportError:  # pragma: no cover
        return False

    files = [sources] if isinstance(sources, str | Path) else list(sources)
    digest = hashlib.sha256(b"".join(Path(f).read_bytes() for f in files)).hexdigest()
    version = int(digest[:12], 16)

    @register_funcify_default_op_cache_key(op_type)
    def _funcify(op, node, **kwargs):
        return make(op, node), version

    return True


def register_jax_kernel(op_type: type, make: Callable) -> None:
    """Register ``make(op, node)`` (a JAX function of the node's inputs) as the op's
    implementation in PyTensor's JAX backend, when that backend is loaded (JAX is imported
    only by its users)."""

    def register():
        try:
            from pytensor.link.jax.dispatch import jax_funcify
        except ImportError:  # pragma: no cover
            return False

        @jax_funcify.register(op_type)
        def _funcify(op, node=None, **kwargs):
            return make(op, node)

        return True

    when_jax_dispatch_loads(register)


def _other_props(op):
    return {k: v for k, v in op._props_dict().items() if k != "grad"}


def register_shared_kernel(op_type: type) -> None:
    """Canonicalisation: a value op's outputs are taken from a derivative op (``grad=True``,
    same other props) on the same inputs, when the graph has one."""

    @node_rewriter([op_type])
    def share_kernel(fgraph, node):
        if node.op.grad:
            return None
        for client, _ in fgraph.clients[node.inputs[0]]:
            if (
                client is not node
                and isinstance(client.op, op_type)
                and client.op.grad
                and _other_props(client.op) == _other_props(node.op)
                and list(client.inputs) == list(node.inputs)
            ):
                return client.outputs[: len(node.outputs)]
        return None

    register_canonicalize(share_kernel, name=f"share_kernel_{op_type.__name__}")


def apply_flat(op, *args):
    """``op`` applied to float64 vectors made from ``args`` (any broadcastable shapes): a
    one-element argument enters as length 1 (the kernel repeats it, and its derivative is a
    1-d sum), every other is broadcast and raveled; the outputs come back in the broadcast
    shape (a list when the op has several)."""
    args = [pt.cast(pt.as_tensor_variable(a), "float64") for a in args]
    full = pt.broadcast_arrays(*args)
    shape, ndim = full[0].shape, full[0].ndim
    one = [all(d == 1 for d in a.type.shape) for a in args]
    flat = [a.reshape((1,)) if o else b.ravel() for a, b, o in zip(args, full, one, strict=True)]
    outs = op(*flat)
    if isinstance(outs, list | tuple):
        return [o.reshape(shape, ndim=ndim) for o in outs]
    return outs.reshape(shape, ndim=ndim)


def gathered(x):
    """``(base, index)`` when ``x`` is ``base[index]`` with an integer vector ``index`` (the
    graph of ``mu_g[group]``), else ``None``."""
    from pytensor.tensor.subtensor import AdvancedSubtensor, indices_from_subtensor

    if x.owner is None or not isinstance(x.owner.op, AdvancedSubtensor):
        return None
    base, *rest = x.owner.inputs
    idx = indices_from_subtensor(rest, x.owner.op.idx_list)
    if len(idx) != 1 or getattr(idx[0], "ndim", None) != 1:
        return None
    if not str(idx[0].type.dtype).startswith(("int", "uint")):
        return None  # a boolean mask
    return base, idx[0]


def same_index(a, b) -> bool:
    """Whether two group indices are the same variable or equal constants."""
    from pytensor.graph.basic import Constant

    if a is b:
        return True
    return (
        isinstance(a, Constant)
        and isinstance(b, Constant)
        and a.type == b.type
        and np.array_equal(a.data, b.data)
    )


def register_grouped_kernel(op_type: type, n_data: int) -> None:
    """Canonicalisation: a kernel op whose parameters (the inputs after the first ``n_data``)
    are each ``base[group]`` (one group index for all) or of static length 1 becomes the same
    op with ``grouped=True`` on the bases and the index, which computes the parameter-only
    terms once per group instead of once per report (same numbers)."""

    @node_rewriter([op_type])
    def group_kernel(fgraph, node):
        if node.op.grouped:
            return None
        group, bases = None, []
        for p in node.inputs[n_data:]:
            if p.type.shape[0] == 1:
                bases.append(p)
                continue
            match = gathered(p)
            if match is None or match[0].type.ndim != 1 or match[0].type.shape[0] == 1:
                return None
            if group is not None and not same_index(group, match[1]):
                return None
            group = match[1] if group is None else group
            bases.append(match[0])
        if group is None:
            return None
        op = type(node.op)(**{**node.op._props_dict(), "grouped": True})
        return op(*node.inputs[:n_data], *bases, group, return_list=True)

    register_canonicalize(group_kernel, name=f"group_kernel_{op_type.__name__}")


def group_gather(x):
    """:func:`gathered` for a group index given as data (a constant or a shared variable, the
    ``group`` of ``mu_g[group]``), else ``None``.  An index computed in the graph, such as the
    reports inside the clipping interval (``nonzero``), is a selection of reports, not of
    groups: lifting a formula above it would evaluate the formula on the reports it excludes,
    whose infinite or NaN derivatives then reach the gradient through the gather's zeros."""
    match = gathered(x)
    return match if match is not None and match[1].owner is None else None


def _lift_gather(fgraph, node):
    """``f(x[group], y[group], c) -> f(x, y, c)[group]`` for an elementwise ``f`` whose every
    input is gathered by one group index (along the first axis) or broadcast along that axis,
    and ``r(x[group]) -> r(x)[group]`` for a reduction ``r`` over other axes than the first
    (a check that each ``p`` row is on the simplex): the parameter-only work then runs once
    per group, not once per report."""
    from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise

    op = node.op
    if isinstance(op, DimShuffle):
        match = group_gather(node.inputs[0])
        if match is None or not op.new_order or op.new_order[0] != 0:
            return None
        return [op(match[0])[match[1]]]
    if isinstance(op, CAReduce):  # a reduction within each report (e.g. over the k items)
        match = group_gather(node.inputs[0])
        if match is None or op.axis is None or 0 in op.axis:
            return None
        if match[0].type.ndim != node.inputs[0].type.ndim:
            return None
        return [op(match[0])[match[1]]]
    if not isinstance(op, Elemwise) or node.outputs[0].type.ndim == 0:
        return None
    group, new = None, []
    for x in node.inputs:
        match = group_gather(x)
        if match is None:
            if not x.type.broadcastable[0]:
                return None
            new.append(x)
            continue
        if match[0].type.ndim != x.type.ndim:
            return None
        if group is not None and not same_index(group, match[1]):
            return None
        group = match[1] if group is None else group
        new.append(match[0])
    if group is None:
        return None
    return [out[group] for out in op(*new, return_list=True)]


def lift_grouped(*outputs):
    """``outputs`` (graphs of a distribution's logp) with every elementwise function of
    parameters given per group (``mu_g[group]``) evaluated on the groups' values and then
    gathered (:func:`_lift_gather`), so that each parameter-only term is computed once per
    distinct parameter set.  Applied to the logp graphs of the package's per-report families
    only (not registered with PyTensor's rewrites, so users' own graphs are left alone); the
    kernel ops then take the group index themselves (:func:`register_grouped_kernel`)."""
    from pytensor.graph.fg import FunctionGraph
    from pytensor.graph.rewriting.basic import EquilibriumGraphRewriter, node_rewriter

    rewriter = EquilibriumGraphRewriter([node_rewriter(None)(_lift_gather)], max_use_ratio=100)
    fgraph = FunctionGraph(outputs=list(outputs), clone=False)
    rewriter.rewrite(fgraph)
    res = list(fgraph.outputs)
    return res[0] if len(res) == 1 else res


def _distinct_param(x, event_ndim, n):
    """How a parameter of a per-distinct logp varies over the ``n`` reports (one batch axis):
    ``("shared", x)`` (one value for all), ``("group", base, index)`` (``base[index]`` with a
    constant integer index), ``("const", array)`` (a constant per report), else ``None``."""
    from pytensor.graph.basic import Constant

    batch = x.type.ndim - event_ndim
    if batch < 0 or batch > 1:
        return None
    if batch == 0 or x.type.broadcastable[0]:
        return ("shared", x)
    if isinstance(x, Constant):
        data = np.asarray(x.data)
        return ("const", data) if data.shape[0] == n else None
    match = gathered(x)
    if match is None or not isinstance(match[1], Constant):
        return None
    index = np.asarray(match[1].data)
    return ("group", match[0], index) if index.shape == (n,) else None


def per_distinct_report(value_event_ndim, *param_event_ndims, max_fraction=0.5):
    """Decorator of a distribution's ``logp(value, *params)`` for reports that take few
    distinct values (frequency oracles): when the observed reports are a constant with one
    batch axis and every parameter is shared, a constant per report, or given per group by
    one constant index (``p=theta[group]``, the graph of ``pm.Dirichlet(..., shape=(G, k))``
    indexed by a NumPy array), the log-likelihood is computed once per distinct
    (group, report, per-report constants) row and gathered back to one value per report.

    Each report's value is the very number the per-report graph gives (the same function of
    the same inputs), so pointwise log-likelihoods keep one term per report; the gradient
    becomes a scatter-add over the distinct rows.  Used when the distinct rows are at most
    ``max_fraction`` of the reports (else the gather costs more than it saves) and some
    parameter is given per group; any other graph (``pm.Data`` reports or group index, a
    per-report parameter that is a variable) takes the per-report path unchanged.
    """
    import functools

    def wrap(logp):
        @functools.wraps(logp)
        def distinct_logp(value, *params):
            res = _distinct_rows(value, params, value_event_ndim, param_event_ndims, max_fraction)
            if res is None:
                return logp(value, *params)
            value_u, params_u, inverse = res
            return logp(value_u, *params_u)[inverse]

        return distinct_logp

    return wrap


def _distinct_rows(value, params, value_event_ndim, param_event_ndims, max_fraction):
    """``(value, params, inverse)`` on the distinct report rows (see
    :func:`per_distinct_report`), or ``None`` when that path does not apply."""
    from pytensor.graph.basic import Constant

    value = pt.as_tensor_variable(value)
    if not isinstance(value, Constant) or value.type.ndim != value_event_ndim + 1:
        return None
    v = np.asarray(value.data)
    n = v.shape[0]
    if n < 2 or not np.all(np.isfinite(v)):
        return None
    kinds = [
        _distinct_param(pt.as_tensor_variable(x), e, n)
        for x, e in zip(params, param_event_ndims, strict=True)
    ]
    if any(k is None for k in kinds):
        return None
    groups = [k[2] for k in kinds if k[0] == "group"]
    if not groups or any(not np.array_equal(g, groups[0]) for g in groups[1:]):
        return None
    consts = [k[1] for k in kinds if k[0] == "const"]
    if any(not np.all(np.isfinite(c)) for c in consts if c.dtype.kind == "f"):
        return None
    columns = [groups[0][:, None], v.reshape(n, -1)] + [c.reshape(n, -1) for c in consts]
    key = np.concatenate([np.asarray(c, dtype=np.float64) for c in columns], axis=1)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    if len(first) > max_fraction * n:
        return None
    params_u = []
    for kind in kinds:
        if kind[0] == "shared":
            params_u.append(kind[1])
        elif kind[0] == "group":
            params_u.append(kind[1][pt.constant(kind[2][first])])
        else:
            params_u.append(pt.constant(kind[1][first]))
    value_u = pt.constant(v[first], dtype=value.type.dtype)
    return value_u, params_u, pt.constant(inverse.reshape(n).astype(np.int64))
