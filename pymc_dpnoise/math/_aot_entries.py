"""C entry points of the Numba kernels, compiled when the package is built (:mod:`._aot`).

Importing this module compiles them (``cfunc``): only :mod:`._aot_build` does.  An entry
takes integers only: n, then for each input its length (n or 1), its stride in bytes and the
address of its first element, then the address of each output (contiguous, length n); it
writes the outputs in place and returns a status code (:data:`._aot.OK` and the others).  A strided input is gathered into a contiguous copy here, so
that the code calling an entry (compiled at first use) is a handful of instructions.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, types
from numba.extending import intrinsic

from ._clipped_normal_kernel import _clipped_normal_into
from ._jit import helper as _helper


@intrinsic
def _f64_pointer(typingctx, addr):
    """The ``double*`` at an integer address."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], ir.DoubleType().as_pointer())

    return types.CPointer(types.float64)(types.intp), codegen


@_helper
def _vector(addr, length, stride):
    """The float64 vector at ``addr``: a view when contiguous, else a contiguous copy."""
    if stride == 8 or length <= 1:
        return carray(_f64_pointer(addr), (length,))
    out = np.empty(length)
    for i in range(length):
        out[i] = carray(_f64_pointer(addr + i * stride), (1,))[0]
    return out


CLIPPED_NORMAL_SIGNATURE = types.intp(*([types.intp] * (1 + 3 * 6 + 3)))


@cfunc(CLIPPED_NORMAL_SIGNATURE)
def clipped_normal_entry(
    n, nz, sz, z, nm, sm, mu, ns, ss, sg, na, sa, a, nb, sb, b, ne, se, e, lp, dmu, dsig
):
    """:func:`._clipped_normal_kernel._clipped_normal_into` on raw buffers.  Returns 0, or
    2 when an input's length is neither n nor 1 (the reports: n), or 1 when the kernel
    failed (an allocation): a C function cannot raise, so the caller does
    (:func:`._aot.raise_for_status`)."""
    if nz != n:
        return 2
    for k in (nm, ns, na, nb, ne):
        if k != n and k != 1:
            return 2
    try:
        _clipped_normal_into(
            _vector(z, nz, sz),
            _vector(mu, nm, sm),
            _vector(sg, ns, ss),
            _vector(a, na, sa),
            _vector(b, nb, sb),
            _vector(e, ne, se),
            carray(_f64_pointer(lp), (n,)),
            carray(_f64_pointer(dmu), (n,)),
            carray(_f64_pointer(dsig), (n,)),
        )
    except Exception:
        return 1
    return 0
