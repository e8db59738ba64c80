"""Register the package's JAX implementations only when PyTensor's JAX backend is loaded.

The package's custom ops (the count windows, the clipped-normal kernel, the batched Cholesky
inverse) each have a JAX implementation registered with
``pytensor.link.jax.dispatch.jax_funcify``.  Importing that module imports JAX itself, which
costs a user 3-14 CPU-s (more from cold bytecode caches) on every fresh process, whether or not
they ever sample with a JAX backend.  PyTensor imports it only when a JAX function is built
(``mode="JAX"``, PyMC's ``nuts_sampler="numpyro"``), so the registrations wait for that import:

* if ``pytensor.link.jax.dispatch`` is already imported, a registration runs at once;
* otherwise it is queued, and a one-shot import hook (a ``sys.meta_path`` finder that only
  answers for that module name and delegates the actual finding and loading to the regular
  finders) runs the queue right after the module has executed, then removes itself.

No module of the package changes ``jax.config``.  PyTensor's JAX backend itself sets
``jax_enable_x64`` when its dispatch module is imported (to ``floatX == "float64"``); the
package's JAX functions compute in float64 and refuse, through :func:`require_x64`, to be
built when 64-bit mode is off (JAX would silently compute them in float32).
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Callable

__all__ = ["require_x64", "when_jax_dispatch_loads"]

TARGET = "pytensor.link.jax.dispatch"
_pending: list[Callable[[], object]] = []


def _run_pending() -> None:
    while _pending:
        _pending.pop(0)()


class _Loader(importlib.abc.Loader):
    """The regular loader of the target module, with the queue run after it executes."""

    def __init__(self, inner):
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        _uninstall()
        _run_pending()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


_FINDER = _Finder()


def _uninstall() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def when_jax_dispatch_loads(register: Callable[[], object]) -> None:
    """Call ``register()`` now if PyTensor's JAX dispatch is imported, else right after it is.

    ``register`` imports ``jax_funcify`` from ``pytensor.link.jax.dispatch`` itself (and must
    tolerate JAX being absent: it is only called once that module imported successfully).
    """
    if TARGET in sys.modules:
        register()
        return
    _pending.append(register)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def require_x64(what: str) -> None:
    """Raise a ``RuntimeError`` naming ``what`` unless JAX's 64-bit mode is on.

    The package's JAX implementations evaluate float64 formulas (thresholds, series lengths
    and constants chosen for double precision); with ``jax_enable_x64`` off JAX would cast
    every input to float32 and return wrong numbers without an error.
    """
    import jax

    if not jax.config.jax_enable_x64:
        raise RuntimeError(
            f"{what} computes in float64, but JAX's 64-bit mode is off: call "
            'jax.config.update("jax_enable_x64", True) before compiling the model with JAX '
            "(PyTensor's JAX backend turns it on when pytensor.config.floatX is 'float64', "
            "and it was turned off after)"
        )
