"""Numba's disk cache and the package's kernels: no two dispatchers share a cache entry.

Numba keys a cached function by its Python function's module, qualified name and first line.
Two dispatchers made from one Python function (``numba.njit(**options)(f.py_func)``) with
different options therefore read and write the same entry, and one may load the other's
compiled code: a version compiled without a Python entry point (``no_cpython_wrapper``)
called from Python crashed the interpreter (a segmentation fault in CI, depending on which
test compiled first; reproduced by calling the clipped-normal kernel, then ``_inside_linear``
from Python, in a fresh cache).  No compilation here: fast.
"""

from __future__ import annotations

import importlib
import pkgutil

import numba.core.registry

import pymc_dpnoise.math as pkg_math

#: modules that import JAX or compile a cfunc at import (the JAX path loads them)
SKIP = ("_jax", "_ffi")


def _dispatchers():
    found = []
    for info in pkgutil.iter_modules(pkg_math.__path__):
        if info.name.endswith(SKIP):
            continue
        module = importlib.import_module(f"{pkg_math.__name__}.{info.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, numba.core.registry.CPUDispatcher):
                found.append((module.__name__, name, obj))
    return found


def test_the_kernel_modules_have_dispatchers():
    names = {(m, n) for m, n, _ in _dispatchers()}
    assert ("pymc_dpnoise.math._clipped_normal_kernel", "_clipped_normal_kernel") in names
    assert ("pymc_dpnoise.math._clipped_normal_kernel", "_inside_linear_call") in names


def test_no_two_cached_dispatchers_share_a_python_function():
    keys = {}
    for module, name, d in _dispatchers():
        f = d.py_func
        key = (f.__module__, f.__qualname__, f.__code__.co_firstlineno)
        keys.setdefault(key, {})[id(d)] = f"{module}.{name}"
    shared = {k: sorted(v.values()) for k, v in keys.items() if len(v) > 1}
    assert shared == {}, shared
