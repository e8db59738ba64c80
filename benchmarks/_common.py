"""Shared helpers for the benchmark scripts: machine info, timing, result files.

Not a benchmark itself.  Every script writes ``benchmarks/results/NAME.md`` (human readable)
and ``benchmarks/results/NAME.json`` (machine readable) with the machine description, the
package versions and the exact command that produced them.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import shlex
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

PACKAGES = (
    "pymc-dpnoise",
    "pymc",
    "pytensor",
    "numba",
    "llvmlite",
    "numpy",
    "scipy",
    "jax",
    "jaxlib",
    "numpyro",
    "nutpie",
    "arviz",
    "arviz-stats",
    "arviz-base",
)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def loadavg() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return None


def machine_info() -> dict:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return {
        "cpu_model": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "loadavg_at_start": loadavg(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "packages": versions,
        "command": " ".join(shlex.quote(a) for a in [".venv/bin/python", *sys.argv]),
        "cwd": os.getcwd(),
        "started": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def machine_markdown(info: dict) -> str:
    pk = ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v)
    lines = [
        "## Machine and command",
        "",
        f"- command: `{info['command']}` (from `{info['cwd']}`)",
        f"- CPU: {info['cpu_model']}, {info['logical_cpus']} logical CPUs",
        f"- load average at start: {info['loadavg_at_start']}, at end: {info.get('loadavg_at_end')}",
        f"- {info['platform']}, Python {info['python']}",
        f"- packages: {pk}",
        f"- started {info['started']}, wall time of the whole script {info.get('script_seconds', 0):.0f} s",
    ]
    return "\n".join(lines) + "\n"


def md_table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """Markdown table; ``columns`` is a list of (key, header); floats are formatted compactly."""

    def fmt(v):
        if v is None:
            return "–"
        if isinstance(v, bool):
            return str(v)
        if isinstance(v, float | np.floating):
            if not np.isfinite(v):
                return str(v)
            a = abs(v)
            if a == 0:
                return "0"
            if a >= 1000:
                return f"{v:,.0f}"
            if a >= 10:
                return f"{v:.1f}"
            if a >= 0.01:
                return f"{v:.3g}"
            return f"{v:.2e}"
        return str(v)

    head = "| " + " | ".join(h for _, h in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(fmt(r.get(k)) for k, _ in columns) + " |" for r in rows]
    return "\n".join([head, sep, *body]) + "\n"


def _jsonable(o):
    if isinstance(o, dict):
        return {str(k): _jsonable(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_jsonable(v) for v in o]
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, float) and not np.isfinite(o):
        return str(o)
    return o


def write_results(name: str, info: dict, markdown_body: str, data: dict, t_start: float) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    info = dict(info)
    info["loadavg_at_end"] = loadavg()
    info["script_seconds"] = time.perf_counter() - t_start
    md = markdown_body.rstrip() + "\n\n" + machine_markdown(info)
    (RESULTS / f"{name}.md").write_text(md)
    (RESULTS / f"{name}.json").write_text(
        json.dumps(_jsonable({"machine": info, **data}), indent=2) + "\n"
    )
    print(f"wrote {RESULTS / (name + '.md')} and .json")


class Timer:
    """Wall and process-CPU time of a block (CPU includes every thread of this process)."""

    def __enter__(self):
        self.w0 = time.perf_counter()
        self.c0 = time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w0
        self.cpu = time.process_time() - self.c0
        return False


def time_variants(fns: dict, rounds: int, batch_seconds: float = 0.03):
    """Time each callable in ``fns`` in interleaved rounds (rotating order, so load changes hit
    every variant alike); each timing is a batch of calls of about ``batch_seconds``.

    Returns ``(wall, cpu, reps)``: per variant the list of per-call wall and CPU seconds (one
    entry per round) and the batch size.
    """
    names = list(fns)
    reps = {}
    for k in names:
        best = math.inf
        for _ in range(5):
            with Timer() as t:
                fns[k]()
            best = min(best, t.wall)
        reps[k] = max(1, math.ceil(batch_seconds / max(best, 1e-7)))
    wall = {k: [] for k in names}
    cpu = {k: [] for k in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for k in order:
            f = fns[k]
            n = reps[k]
            f()  # untimed: lets the previous variant's worker threads (XLA) go idle first
            with Timer() as t:
                for _ in range(n):
                    f()
            wall[k].append(t.wall / n)
            cpu[k].append(t.cpu / n)
    return wall, cpu, reps


def worker_env(cache):
    """Environment of a fresh worker process whose compile caches live under ``cache`` (an
    empty directory: a cold run; the same directory again: a warm one)."""
    import os
    from pathlib import Path

    env = dict(os.environ)
    # base_compiledir, not only compiledir: PyTensor's Numba cache is base_compiledir/numba
    # (pytensor.link.numba.cache.NUMBA_CACHE_PATH), so compiledir= alone leaves it warm
    env["PYTENSOR_FLAGS"] = f"base_compiledir={Path(cache) / 'pytensor'}"
    env["NUMBA_CACHE_DIR"] = str(Path(cache) / "numba")
    # JAX's persistent compilation cache (XLA executables), kept for every compile: PyMC and
    # numpyro evaluate the logp and its gradient once outside jit at initialisation, which
    # compiles every primitive of the graph on its own (288 programs of ~60 ms each for the
    # count model; jax's default only stores compiles of 1 s or more); what a numpyro user
    # gets by setting these two variables; without them every process compiles again
    env["JAX_COMPILATION_CACHE_DIR"] = str(Path(cache) / "jax")
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    env["OMP_NUM_THREADS"] = "1"
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_worker(script, spec: dict, env: dict):
    """Run ``script --worker <spec as JSON>`` in a fresh process with ``env``: ``(result, None)``
    with the JSON its last output line holds, or ``(None, stderr)`` if it failed."""
    import json
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, str(script), "--worker", json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode:
        return None, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), None
