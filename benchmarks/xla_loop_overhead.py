"""XLA's cost per loop over a few thousand elements on this machine, with and without its
intra-op threads (issue 24: why the README example's numpyro ratio stays high).

Each case is a fresh process: a jitted ``exp(x * m)`` over n float64 elements, the best of 7
rounds of 300 calls (wall µs per call), run once as is and once under ``taskset -c 0`` (one
core: XLA then runs every loop in the calling thread).  The difference at a few thousand
elements is the handoff of the loop to XLA's thread pool.  No assertion is made about time.

Run: ``.venv/bin/python benchmarks/xla_loop_overhead.py``
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "xla_loop_overhead"
SIZES = (100, 1000, 2000, 5000, 20000, 100000)

_WORKER = """
import json, time, numpy as np, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
m = jnp.asarray(np.array([1.0]))
out = {}
for n in %r:
    x = jnp.asarray(np.random.default_rng(0).normal(size=n))
    f = jax.jit(lambda m, x=x: jnp.exp(x * m))
    f(m).block_until_ready()
    best = 1e9
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(300):
            f(m).block_until_ready()
        best = min(best, (time.perf_counter() - t) / 300)
    out[n] = best * 1e6
print(json.dumps(out))
"""


def _run(prefix):
    cmd = [*prefix, sys.executable, "-c", _WORKER % (SIZES,)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return {int(k): v for k, v in json.loads(res.stdout.strip().splitlines()[-1]).items()}


def main():
    sys.path.insert(0, str(HERE))
    from _common import machine_info, md_table, write_results

    t0 = time.perf_counter()
    info = machine_info()
    if shutil.which("taskset") is None:
        raise SystemExit("needs taskset (util-linux)")
    both = _run([])
    one = _run(["taskset", "-c", "0"])
    rows = [
        {"n": n, "all_cores_us": both[n], "one_core_us": one[n], "ratio": both[n] / one[n]}
        for n in SIZES
    ]
    cols = [
        ("n", "elements"),
        ("all_cores_us", "µs per call, all cores"),
        ("one_core_us", "µs per call, taskset -c 0"),
        ("ratio", "ratio"),
    ]
    text = (
        "# XLA's cost per loop: jitted exp over n float64 elements, all cores vs one\n\n"
        "Wall µs per call, best of 7 rounds of 300 calls, one fresh process each way. "
        "See the script's docstring.\n\n" + md_table(rows, cols) + "\n"
    )
    write_results(NAME, info, text, {"rows": rows}, t0)


if __name__ == "__main__":
    main()
