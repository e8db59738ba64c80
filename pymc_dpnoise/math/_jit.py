"""The Numba decorators of the package's kernels (one definition, every kernel module).

* :data:`njit` — a kernel or a function called from Python (tests, ``perform``): cached on
  disk, IEEE semantics (no fast-math), NumPy's error model (a division by zero gives inf or
  NaN, as in the PyTensor graphs, instead of raising).
* :data:`helper` — the same for functions called from Numba code only: no CPython or C
  wrapper, whose compilation would add to every kernel's first compile.
* :data:`inline` — the same, inlined into its callers by Numba.
"""

from __future__ import annotations

import numba

njit = numba.njit(cache=True, fastmath=False, error_model="numpy")
helper = numba.njit(
    cache=True,
    fastmath=False,
    error_model="numpy",
    no_cpython_wrapper=True,
    no_cfunc_wrapper=True,
)
inline = numba.njit(cache=True, fastmath=False, error_model="numpy", inline="always")
