#!/usr/bin/env python
"""Execute the notebooks in ``notebooks/`` end to end.

Usage (from anywhere; paths are resolved against the repository)::

    PMD_MODE=fast .venv/bin/python scripts/run_notebooks.py --check      # CI: run, write nothing
    PMD_MODE=full .venv/bin/python scripts/run_notebooks.py --inplace    # store full outputs
    .venv/bin/python scripts/run_notebooks.py --check notebooks/ldp_calibration.ipynb

* The kernel is the Python running this script (``sys.executable``, i.e. the venv's
  interpreter), through a throw-away kernel spec, so no kernel has to be registered with
  Jupyter and a clean machine with only the venv works.
* Each notebook runs with its own directory (``notebooks/``) as working directory, as in
  Jupyter; the notebooks locate the repository root themselves.
* ``PMD_MODE`` (``fast`` or ``full``; ``--mode`` overrides it) is passed to the kernel
  through the environment.
* ``--check`` exits with status 1 if any cell of any notebook raises; per-notebook wall times
  are printed either way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import nbformat
import zmq
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
KERNEL_NAME = "pymc-dpnoise-venv"
DEFAULT_TIMEOUT = {"fast": 900, "full": 3600}  # seconds per cell


def _kernel_manager(spec_root: Path) -> KernelManager:
    """A kernel manager whose kernel is ``sys.executable -m ipykernel_launcher``."""
    kdir = spec_root / "kernels" / KERNEL_NAME
    kdir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({Path(sys.prefix).name})",
        "language": "python",
        "metadata": {"supported_encryption": ["curve"]},  # CurveZMQ if pyzmq supports it
    }
    (kdir / "kernel.json").write_text(json.dumps(spec, indent=1))
    ksm = KernelSpecManager(kernel_dirs=[str(spec_root / "kernels")])
    # encrypt kernel traffic (CurveZMQ) where pyzmq supports it; plain TCP on localhost otherwise
    extra = {}
    if "transport_encryption" in KernelManager.class_trait_names():  # jupyter_client >= 8.7
        extra["transport_encryption"] = "auto" if zmq.has("curve") else "disabled"
    return KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=ksm, **extra)


def _select(paths: list[str]) -> list[Path]:
    if not paths:
        found = sorted(NB_DIR.glob("*.ipynb"))
        if not found:
            raise SystemExit(f"no notebooks found in {NB_DIR}")
        return found
    out = []
    for p in paths:
        q = Path(p)
        if not q.is_absolute() and not q.exists():
            q = NB_DIR / p  # allow bare names: `ldp_calibration.ipynb` or `ldp_calibration`
            if q.suffix != ".ipynb":
                q = q.with_suffix(".ipynb")
        if not q.exists():
            raise SystemExit(f"notebook not found: {p}")
        out.append(q.resolve())
    return out


def run_one(path: Path, *, timeout: int, inplace: bool, spec_root: Path) -> tuple[bool, float]:
    nb = nbformat.read(path, as_version=4)
    km = _kernel_manager(spec_root)
    client = NotebookClient(
        nb,
        km=km,
        timeout=timeout,
        allow_errors=False,
        record_timing=False,  # keep stored notebooks free of per-cell timestamps
        resources={"metadata": {"path": str(path.parent)}},
    )
    t0 = time.perf_counter()
    ok = True
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError) as err:
        ok = False
        print(f"\n--- {path.name}: cell failed ---\n{err}\n", file=sys.stderr)
    except Exception:  # kernel died, could not start, ...
        ok = False
        print(f"\n--- {path.name}: execution aborted ---", file=sys.stderr)
        traceback.print_exc()
    finally:
        # nbclient leaves a kernel it did not create running: shut it down here
        if km.has_kernel:
            km.shutdown_kernel(now=False)
    secs = time.perf_counter() - t0
    if ok and inplace:
        # keep the standard kernelspec in the file, not the throw-away one used to run it
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
        }
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return ok, secs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Execute the notebooks in notebooks/.")
    action = ap.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="execute without writing")
    action.add_argument(
        "--inplace", action="store_true", help="write the executed notebooks (with outputs) back"
    )
    ap.add_argument("notebooks", nargs="*", help="notebooks to run (default: notebooks/*.ipynb)")
    ap.add_argument("--mode", choices=("fast", "full"), help="sets PMD_MODE (default: from env)")
    ap.add_argument("--timeout", type=int, help="seconds per cell (default: 900 fast, 3600 full)")
    args = ap.parse_args(argv)

    mode = args.mode or os.environ.get("PMD_MODE", "fast")
    if mode not in DEFAULT_TIMEOUT:
        ap.error(f"PMD_MODE must be 'fast' or 'full', not {mode!r}")
    os.environ["PMD_MODE"] = mode  # inherited by the kernel
    # Inline figures in the stored notebooks even when the caller sets MPLBACKEND=Agg (CI).
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    timeout = args.timeout or DEFAULT_TIMEOUT[mode]

    paths = _select(args.notebooks)
    print(f"PMD_MODE={mode}, kernel={sys.executable}, {len(paths)} notebook(s)", flush=True)
    failures = []
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pmd-kernels-") as tmp:
        for path in paths:
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            print(f"running {shown} ...", flush=True)
            ok, secs = run_one(path, timeout=timeout, inplace=args.inplace, spec_root=Path(tmp))
            status = "ok" if ok else "FAILED"
            extra = " (written)" if ok and args.inplace else ""
            print(f"  {status:6s} {secs:7.1f}s  {path.name}{extra}", flush=True)
            if not ok:
                failures.append(path.name)
    print(f"total {time.perf_counter() - t_all:.1f}s", flush=True)
    if failures:
        print(f"FAILED: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
