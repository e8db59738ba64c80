r"""Kernels compiled when the package is built, not at first use.

Why.  Numba compiles the clipped-normal kernel (:mod:`._clipped_normal_kernel`) in ~3 CPU-s
and keeps the result in its disk cache, so a user paid that once per machine, at the first
model, and again in every environment whose caches were empty (a new virtual environment, a
CI runner, a container).  The README example from empty caches took 1.6-2.0 times the CPU of
the naive model with the same data (``benchmarks/results/time_to_posterior.md``), most of it
this compile.  A package with a C extension pays its compile when it is built; this module
does the same for the Numba kernels.

How.  The package's build hook (``hatch_build.py``) runs :mod:`._aot_build`, which compiles
the C entry points of :mod:`._aot_entries` (the kernel on pointers and lengths, and the XLA
custom-call handler of :mod:`._clipped_normal_ffi`) with the installed Numba and writes, per
entry, the object code and LLVM bitcode Numba itself writes to its disk cache
(``CodeLibrary.serialize_using_object_code``) into ``_aot_objects/``, with a manifest.  At
run time :func:`address` loads an entry into Numba's JIT engine (``unserialize_library``,
the call Numba's cache makes: a few ms) when

* Numba and llvmlite are the versions that built it, and the kernel's source files hash to
  what they hashed to then (an edited kernel in a development checkout is compiled from its
  source, as before);
* the CPU can run it: a variant built for this CPU exactly (the check Numba's cache makes), or
  else one built for a portable level (``x86-64-v3``: AVX2 and FMA) whose features this CPU
  has; and
* its files have the checksums the manifest records (LLVM aborts the process on a damaged
  object file, so nothing unchecked is handed to it), and every symbol the object code
  calls (libm, Numba's runtime, the Python C API) exists in this process; and
* the loaded entry reproduces, bit for bit (signed zeros told apart), the values the
  just-in-time kernel gave on a fixed set of inputs when it was built (reports inside,
  outside and on the bounds, far in both tails; per-report and length-1 parameters).

Otherwise (or with the environment variable ``PYMC_DPNOISE_PRECOMPILED=0``) the kernel is
compiled at first use as before; :func:`status` (also printed by ``pymc-dpnoise --version``)
says which and why.  Reasons it can happen on a user's machine: a Numba or llvmlite version
other than the one the package was built with (pip builds in an isolated environment, with
the newest Numba the build requirement allows; ``pip install --no-build-isolation`` builds
with the environment's own), another libm than the build machine's (the check values are then
likely to differ in the last bit), or a CPU without the x86-64-v3 features running a wheel
built elsewhere.

An entry cannot raise (it is a C function): it returns a status code, 0 for success, 2 for a
parameter whose length is neither the reports' nor 1 (``ValueError``), 1 when the kernel
failed, i.e. an allocation (``MemoryError``); its callers raise (:func:`raise_for_status`
and the Numba wrapper), so a failure never returns half-written outputs.  PyTensor's Numba
backend calls a loaded entry through an external symbol (:func:`numba_function`): graph
functions reference it by name and do not link and optimise the kernel's code again, and the
symbol's name carries the source hash, so a cached graph never calls another version (and the
graph's cache key names the symbol, or ``"jit"``).  The results are the kernel's own:
``tests/test_aot.py`` checks them equal to the just-in-time kernel's to the bit.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import threading
from pathlib import Path

HERE = Path(__file__).parent
#: where the build hook writes the compiled entries and their manifest
OBJECT_DIR = HERE / "_aot_objects"
#: the files whose code the entries compile (paths relative to this directory)
SOURCES = (
    "_jit.py",
    "_simd.py",
    "_clipped_normal_kernel.py",
    "_aot_entries.py",
    "_xla_ffi.py",
    "_clipped_normal_ffi.py",
)
#: the features of the portable x86-64 level the build also targets: LLVM's x86-64-v3
#: (x86-64-v1: 64bit, cmov, cx8, fxsr, mmx, sse, sse2; v2: cx16, crc32, popcnt, sahf, sse3,
#: ssse3, sse4.1, sse4.2; v3: avx, avx2, bmi, bmi2, f16c, fma, lzcnt, movbe, xsave)
X86_64_V3 = (
    "64bit",
    "cmov",
    "cx8",
    "fxsr",
    "mmx",
    "sse",
    "sse2",
    "cx16",
    "crc32",
    "popcnt",
    "sahf",
    "sse3",
    "ssse3",
    "sse4.1",
    "sse4.2",
    "avx",
    "avx2",
    "bmi",
    "bmi2",
    "f16c",
    "fma",
    "lzcnt",
    "movbe",
    "xsave",
)
#: entry status codes (the entry's return value)
OK, FAILED, BAD_LENGTH = 0, 1, 2
LENGTH_ERROR = "kernel inputs: every parameter must have the reports' length or length 1"
FORMAT = 2

_STATE: dict = {}
_LOCK = threading.Lock()


@functools.cache
def source_hash() -> str:
    """SHA-256 of the entries' source files, in :data:`SOURCES` order (read once per
    process: every graph compile asks for the entry's symbol, which carries it)."""
    h = hashlib.sha256()
    for name in SOURCES:
        h.update(name.encode())
        h.update((HERE / name).read_bytes())
    return h.hexdigest()


def versions() -> dict:
    import llvmlite
    import numba

    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__}


def host_target() -> tuple[str, str, str]:
    """(triple, CPU name, features) of Numba's JIT on this machine (its cache's magic tuple)."""
    from numba.core.registry import cpu_target

    return tuple(cpu_target.target_context.codegen().magic_tuple())


def _host_features() -> set[str]:
    import llvmlite.binding as ll

    return {k for k, v in ll.get_host_cpu_features().items() if v}


def _pick_variant(manifest):
    triple, cpu, features = host_target()
    exact = [
        v
        for v in manifest["variants"]
        if (v["triple"], v["cpu"], v["features"]) == (triple, cpu, features)
    ]
    if exact:
        return exact[0]
    have = _host_features()
    for v in manifest["variants"]:
        if v["triple"] == triple and v.get("requires") is not None:
            if set(v["requires"]) <= have:
                return v
    return None


def _load_manifest():
    """The manifest if this installation's entries can be used here, else ``None``."""
    if os.environ.get("PYMC_DPNOISE_PRECOMPILED", "1") == "0":
        return None, "disabled by PYMC_DPNOISE_PRECOMPILED=0"
    path = OBJECT_DIR / "manifest.json"
    if not path.is_file():
        return None, "not built (no manifest)"
    manifest = json.loads(path.read_text())
    if manifest.get("format") != FORMAT:
        return None, "manifest format"
    if manifest["versions"] != versions():
        return None, f"built with {manifest['versions']}, running {versions()}"
    if manifest["sources"] != source_hash():
        return None, "kernel sources changed since the build"
    variant = _pick_variant(manifest)
    if variant is None:
        return None, "no variant for this CPU"
    return (manifest, variant), None


def status() -> str:
    """Whether this process uses the precompiled entries and, if not, why (for tests, bug
    reports and ``pymc-dpnoise --version``): loads them if that was not done yet."""
    found, why = _load_manifest()
    if found is None:
        return f"not used: {why}"
    _, variant = found
    for name in variant["entries"]:
        loaded = _loaded(name)
        if isinstance(loaded, str):
            return f"not used: entry {name!r}: {loaded}"
    return f"used: variant {variant['tag']!r} ({variant['cpu']})"


def _c_signature(n_in, n_out):
    return ctypes.CFUNCTYPE(ctypes.c_ssize_t, *([ctypes.c_ssize_t] * (1 + 3 * n_in + n_out)))


def raise_for_status(code):
    """The exception an entry's status code stands for (the entry itself cannot raise: it is
    a C function).  ``None`` for success."""
    if code == BAD_LENGTH:
        raise ValueError(LENGTH_ERROR)
    if code != OK:
        raise MemoryError("the precompiled kernel failed (out of memory)")


def call_entry(fn, inputs, n_out):
    """Run a kernel entry (a ctypes function of :func:`_c_signature`) on float64 vectors
    ``inputs`` (the first gives n; the others have length n or 1): its n_out outputs."""
    import numpy as np

    arrays = [np.asarray(x, dtype=np.float64) for x in inputs]
    if any(a.ndim != 1 for a in arrays):
        raise ValueError("kernel entries take vectors")
    n = arrays[0].shape[0]
    outs = [np.empty(n) for _ in range(n_out)]
    args = []
    for a in arrays:
        args += [a.shape[0], a.strides[0], a.ctypes.data]
    raise_for_status(fn(n, *args, *(o.ctypes.data for o in outs)))
    return outs


def same_bits(a, b) -> bool:
    """Equal to the bit (signed zeros told apart), NaN matching any NaN."""
    import numpy as np

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return False
    return bool(np.all((a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))))


def _file_digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load(name):
    """``(library, address)`` of entry ``name``, or a string saying why it cannot be used."""
    found, why = _load_manifest()
    if found is None:
        return why
    manifest, variant = found
    entry = variant["entries"][name]
    files = {}
    for kind in ("object", "bitcode"):
        path = OBJECT_DIR / entry[kind]
        if not path.is_file() or _file_digest(path) != entry[kind + "_sha256"]:
            # a damaged file would make LLVM abort the process: never hand it over
            return f"{entry[kind]} missing or damaged"
        files[kind] = path.read_bytes()
    import llvmlite.binding as ll
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:
        ctx = cpu_target.target_context
        ctx.refresh()  # Numba's runtime (NRT) and helper symbols the object code calls
        # every symbol the code calls must exist here (else LLVM aborts when it links)
        missing = [s for s in entry["undefined"] if not ll.address_of_symbol(s)]
        if missing:
            return f"symbols not found here: {', '.join(missing[:5])}"
        library = ctx.codegen().unserialize_library(
            (entry["library"], "object", (files["object"], files["bitcode"]))
        )
        addr = library.get_pointer_to_function(entry["symbol"])
    if not addr:
        return "entry symbol not found in its object"
    import numpy as np

    for check in manifest["checks"].get(name, ()):
        fn = _c_signature(len(check["inputs"]), len(check["outputs"]))(addr)
        got = call_entry(fn, [np.array(x) for x in check["inputs"]], len(check["outputs"]))
        if not all(same_bits(g, w) for g, w in zip(got, check["outputs"], strict=True)):
            return "differs from the just-in-time kernel's values recorded at build time"
    return library, addr


def _loaded(name):
    with _LOCK:
        if name not in _STATE:
            try:
                loaded = _load(name)
            except Exception as exc:  # a broken installation: compile at first use, as before
                loaded = f"{type(exc).__name__}: {exc}"
            if isinstance(loaded, str):
                import logging

                logging.getLogger("pymc_dpnoise").info(
                    "precompiled kernel %r not used (%s): Numba compiles it at first use",
                    name,
                    loaded,
                )
            # the library stays referenced for the life of the process: its code must not
            # be freed
            _STATE[name] = loaded
        return _STATE[name]


def address(name: str) -> int | None:
    """The address of precompiled entry ``name`` loaded into Numba's JIT engine, or ``None``
    where it cannot be used (see the module docstring); loaded once per process."""
    loaded = _loaded(name)
    return None if isinstance(loaded, str) else loaded[1]


def symbol(name: str) -> str | None:
    """A process-wide symbol name for entry ``name`` that Numba code can call
    (``types.ExternalFunction``), or ``None``.  The name carries the source hash."""
    addr = address(name)
    if addr is None:
        return None
    import llvmlite.binding as ll

    sym = f"pymc_dpnoise_{name}_{source_hash()[:16]}"
    ll.add_symbol(sym, addr)
    return sym


def entry_function(name: str, n_in: int, n_out: int):
    """Entry ``name`` as a ctypes function (for ``Op.perform``), or ``None``."""
    addr = address(name)
    return None if addr is None else _c_signature(n_in, n_out)(addr)


_NUMBA_FUNCTIONS: dict = {}


def numba_function(name: str, grad: bool):
    """A Numba function ``f(z, mu, sigma, lower, upper, epsilon)`` calling entry ``name`` (six
    inputs, three outputs) through its external symbol: ``(lp, dmu, dsig)`` if ``grad`` else
    ``lp``; ``None`` where the entry cannot be used.  Not cached by Numba itself (its global
    is the symbol): PyTensor caches the graph functions that call it."""
    sym = symbol(name)
    if sym is None:
        return None
    key = (sym, grad)
    if key not in _NUMBA_FUNCTIONS:
        import numba
        import numpy as np
        from numba import types

        ext = types.ExternalFunction(sym, types.intp(*([types.intp] * (1 + 3 * 6 + 3))))
        jit = numba.njit(cache=False)

        @jit
        def run(z, mu, sigma, lower, upper, epsilon):
            n = z.shape[0]
            lp = np.empty(n)
            dmu = np.empty(n)
            dsig = np.empty(n)
            code = ext(
                n,
                n,
                z.strides[0],
                z.ctypes.data,
                mu.shape[0],
                mu.strides[0],
                mu.ctypes.data,
                sigma.shape[0],
                sigma.strides[0],
                sigma.ctypes.data,
                lower.shape[0],
                lower.strides[0],
                lower.ctypes.data,
                upper.shape[0],
                upper.strides[0],
                upper.ctypes.data,
                epsilon.shape[0],
                epsilon.strides[0],
                epsilon.ctypes.data,
                lp.ctypes.data,
                dmu.ctypes.data,
                dsig.ctypes.data,
            )
            if code == BAD_LENGTH:
                raise ValueError(LENGTH_ERROR)
            if code != OK:
                raise MemoryError("the precompiled kernel failed (out of memory)")
            return lp, dmu, dsig

        if grad:
            _NUMBA_FUNCTIONS[key] = run
        else:

            @jit
            def value(z, mu, sigma, lower, upper, epsilon):
                return run(z, mu, sigma, lower, upper, epsilon)[0]

            _NUMBA_FUNCTIONS[key] = value
    return _NUMBA_FUNCTIONS[key]
