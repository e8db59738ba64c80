"""Compile the package's kernel entry points ahead of time (see :mod:`._aot`).

Run by the build hook (``hatch_build.py``) as a script, in the environment that builds the
package (it needs NumPy, Numba and llvmlite, not PyMC or PyTensor)::

    python pymc_dpnoise/math/_aot_build.py OUT_DIR

writes ``OUT_DIR/manifest.json`` and, per CPU variant and entry, the object code and bitcode
Numba's disk cache would hold.  Variants: this machine's CPU (exactly), and on x86-64 also
the portable level ``x86-64-v3`` (each compiled in a process of its own: Numba reads its
target CPU once, from ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``).  Files are written to a
temporary directory and moved into place at the end, so an interrupted build leaves either
the previous complete set or none.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

_MATH = Path(__file__).resolve().parent


def _stub_packages():
    """Make ``pymc_dpnoise.math`` importable without running the package's ``__init__``
    (which imports PyMC): the kernel modules need NumPy and Numba only."""
    for name, path in (("pymc_dpnoise", _MATH.parent), ("pymc_dpnoise.math", _MATH)):
        if name not in sys.modules:
            mod = types.ModuleType(name)
            mod.__path__ = [str(path)]
            sys.modules[name] = mod


def _check_inputs():
    """Inputs for the load-time check: reports left of, on, inside and right of the bounds,
    far in both tails; length-1 parameters in the linear-space region, then per-report ones
    with a large epsilon and a tiny sigma (the log-space forms)."""
    import numpy as np

    z = np.array([-1e6, -7.0, -1.0, -0.999999, -0.2, 0.0, 0.4, 0.999, 1.0, 3.0, 30.0, 1e8])
    n = z.size
    one = [np.array([0.3]), np.array([0.8]), np.array([-1.0]), np.array([1.0]), np.array([0.7])]
    per = [
        np.linspace(-2.0, 2.0, n),
        np.geomspace(1e-4, 50.0, n),
        np.full(n, -1.0),
        np.full(n, 1.0),
        np.geomspace(1e-3, 200.0, n),
    ]
    return [[z, *one], [z, *per]]


def _elf_undefined(obj: bytes):
    """Names of the undefined global symbols of a 64-bit little-endian ELF object, or
    ``None`` for another format."""
    import struct

    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], sh[9]):
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", obj, off)
            if st_shndx == 0 and st_info >> 4 in (1, 2) and st_name:  # undefined global/weak
                start = strtab[4] + st_name
                names.add(obj[start : obj.index(b"\0", start)].decode())
    return sorted(names)


def _variant(out: Path, tag: str) -> dict:
    """Compile every entry in this process (its CPU target set by the environment) and write
    its files; return the variant's manifest record."""
    _stub_packages()
    from pymc_dpnoise.math import _aot, _aot_entries, _clipped_normal_ffi
    from pymc_dpnoise.math._clipped_normal_kernel import _clipped_normal_kernel

    triple, cpu, features = _aot.host_target()
    record = {"tag": tag, "triple": triple, "cpu": cpu, "features": features, "entries": {}}
    if tag == "x86-64-v3":
        record["requires"] = list(_aot.X86_64_V3)
    compiled = {
        "clipped_normal": _aot_entries.clipped_normal_entry,
        "clipped_normal_xla": _clipped_normal_ffi.clipped_normal_handler,
    }
    for name, fn in compiled.items():
        library = fn._library
        lib_name, kind, (obj, bitcode) = library.serialize_using_object_code()
        assert kind == "object"
        (out / f"{tag}-{name}.o").write_bytes(obj)
        (out / f"{tag}-{name}.bc").write_bytes(bitcode)
        # what the object code calls outside itself (libm, Numba's runtime and helpers, the
        # Python C API): checked to exist before it is loaded
        undefined = _elf_undefined(obj)
        if undefined is None:  # not ELF: the module's declarations (intrinsics lowered to
            # libm calls, e.g. llvm.exp.f64 -> exp, are not among them)
            module = library._final_module
            undefined = sorted(
                {f.name for f in module.functions if f.is_declaration}
                | {g.name for g in module.global_variables if g.is_declaration}
            )
        record["entries"][name] = {
            "library": lib_name,
            "symbol": fn.native_name,
            "object": f"{tag}-{name}.o",
            "object_sha256": hashlib.sha256(obj).hexdigest(),
            "bitcode": f"{tag}-{name}.bc",
            "bitcode_sha256": hashlib.sha256(bitcode).hexdigest(),
            "undefined": [u for u in undefined if not u.startswith("llvm.")],
        }
    if tag == "host":
        checks = []
        for args in _check_inputs():
            outs = _clipped_normal_kernel(*args)
            checks.append(
                {"inputs": [a.tolist() for a in args], "outputs": [o.tolist() for o in outs]}
            )
        record["checks"] = checks
    return record


def build(out_dir: Path) -> dict:
    """Compile every variant (a subprocess each) into ``out_dir``; return the manifest."""
    _stub_packages()
    from pymc_dpnoise.math import _aot

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tags = ["host"]
    if platform.machine().lower() in ("x86_64", "amd64"):
        tags.append("x86-64-v3")
    tmp = Path(tempfile.mkdtemp(prefix=".aot-", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide the files from other users of an install
    try:
        variants = []
        for tag in tags:
            env = dict(os.environ)
            env.pop("NUMBA_CPU_NAME", None)
            env.pop("NUMBA_CPU_FEATURES", None)
            env["NUMBA_CACHE_DIR"] = str(tmp / f"cache-{tag}")
            if tag != "host":
                env["NUMBA_CPU_NAME"] = tag
                env["NUMBA_CPU_FEATURES"] = ""
            res = subprocess.run(
                [sys.executable, __file__, "--variant", tag, str(tmp)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            variants.append(json.loads(res.stdout.strip().splitlines()[-1]))
            shutil.rmtree(tmp / f"cache-{tag}", ignore_errors=True)
        checks = variants[0].pop("checks")
        manifest = {
            "format": _aot.FORMAT,
            "versions": _aot.versions(),
            "sources": _aot.source_hash(),
            "checks": {"clipped_normal": checks},
            "variants": variants,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--variant":
        record = _variant(Path(args[2]), args[1])
        print(json.dumps(record))
        return
    if len(args) != 1:
        sys.exit("usage: python _aot_build.py OUT_DIR")
    manifest = build(Path(args[0]))
    names = ", ".join(v["tag"] for v in manifest["variants"])
    print(f"precompiled kernels ({names}) written to {args[0]}")


if __name__ == "__main__":
    main()
