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

from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.rewriting.basic import register_canonicalize


def register_numba_kernel(op_type: type, source_file: str, make: Callable) -> bool:
    """Register ``make(op, node)`` (a Numba function of the node's inputs) as the op's
    implementation in PyTensor's Numba backend.  PyTensor caches compiled graphs by op type
    and props: the cache key also carries a hash of ``source_file``, so that a changed kernel
    is never served from an old cache."""
    try:
        from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key
    except ImportError:  # pragma: no cover
        return False

    version = int(hashlib.sha256(Path(source_file).read_bytes()).hexdigest()[:12], 16)

    @register_funcify_default_op_cache_key(op_type)
    def _funcify(op, node, **kwargs):
        return make(op, node), version

    return True


def _other_props(op):
    return {k: v for k, v in op._props_dict().items() if k != "grad"}


def register_shared_kernel(op_type: type) -> None:
    """Canonicalisation: a value op's output is taken from a derivative op (``grad=True``,
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
                return [client.outputs[0]]
        return None

    register_canonicalize(share_kernel, name=f"share_kernel_{op_type.__name__}")
