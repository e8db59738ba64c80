"""The clipped-normal kernel as an XLA FFI handler (see :mod:`._xla_ffi`); imported only by
the JAX path, because defining the ``cfunc`` compiles it (or loads it from Numba's cache)."""

from __future__ import annotations

from numba import cfunc, types

from . import _xla_ffi as ffi
from ._clipped_normal_kernel import _clipped_normal_kernel


@cfunc(types.intp(types.intp), cache=True)
def clipped_normal_handler(frame):
    """Arguments z, mu, sigma, lower, upper, epsilon (length n or 1); results log p,
    d/dmu, d/dsigma (length n)."""
    if not ffi.serve(frame, 6, 3):
        return 0
    res = _clipped_normal_kernel(
        ffi.array(frame, ffi.ARGS, 0),
        ffi.array(frame, ffi.ARGS, 1),
        ffi.array(frame, ffi.ARGS, 2),
        ffi.array(frame, ffi.ARGS, 3),
        ffi.array(frame, ffi.ARGS, 4),
        ffi.array(frame, ffi.ARGS, 5),
    )
    ffi.copy(res[0], ffi.array(frame, ffi.RETS, 0))
    ffi.copy(res[1], ffi.array(frame, ffi.RETS, 1))
    ffi.copy(res[2], ffi.array(frame, ffi.RETS, 2))
    return 0
