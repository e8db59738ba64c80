"""The clipped-normal kernel as an XLA FFI handler (see :mod:`._xla_ffi`); imported only by
the JAX path, because defining the ``cfunc`` compiles it (or loads it from Numba's cache)."""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, types

from . import _xla_ffi as ffi
from ._clipped_normal_kernel import _clipped_normal_into

_A = ffi.ARGS
_R = ffi.RETS
_data = ffi.buffer_data
_len = ffi.buffer_length


def _handler(frame):
    """Arguments z, mu, sigma, lower, upper, epsilon (length n or 1); results log p,
    d/dmu, d/dsigma (length n).  The buffers are read and written in place (``carray``:
    pointer and length, no copy, no checks beyond :func:`._xla_ffi.serve`'s)."""
    if not ffi.serve(frame, 6, 3):
        return 0
    try:
        _clipped_normal_into(
            carray(_data(frame, _A, 0), (_len(frame, _A, 0),)),
            carray(_data(frame, _A, 1), (_len(frame, _A, 1),)),
            carray(_data(frame, _A, 2), (_len(frame, _A, 2),)),
            carray(_data(frame, _A, 3), (_len(frame, _A, 3),)),
            carray(_data(frame, _A, 4), (_len(frame, _A, 4),)),
            carray(_data(frame, _A, 5), (_len(frame, _A, 5),)),
            carray(_data(frame, _R, 0), (_len(frame, _R, 0),)),
            carray(_data(frame, _R, 1), (_len(frame, _R, 1),)),
            carray(_data(frame, _R, 2), (_len(frame, _R, 2),)),
        )
    except Exception:
        # a failed kernel (an allocation) must not leave half-written results: NaN, which
        # a sampler rejects (an error would need a call back into XLA's API)
        for k in range(3):
            out = carray(_data(frame, _R, k), (_len(frame, _R, k),))
            for i in range(out.shape[0]):
                out[i] = np.nan
    return 0


HANDLER_SIGNATURE = types.intp(types.intp)
clipped_normal_handler = cfunc(HANDLER_SIGNATURE, cache=True)(_handler)
