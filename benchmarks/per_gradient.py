"""Cost of one logp + gradient call, noise-aware vs naive, for the ``time_to_posterior`` models.

Issue 24, point 1: what part of a time-to-posterior ratio is the likelihood's own cost per
gradient (paid at every leapfrog step, whatever the caches) rather than compilation.  For each
model of :mod:`time_to_posterior` (same data, same seeds) both variants' ``logp_dlogp_function``
(PyMC's default backend, Numba) is compiled once, then called at the initial point in
interleaved rounds (``_common.time_variants``); the value is the median over rounds of the
per-call CPU time.  No assertion is made about time.

Run: ``.venv/bin/python benchmarks/per_gradient.py`` (``--models readme,counts``,
``--rounds 7``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "per_gradient"


def _call(model):
    import numpy as np

    f = model.logp_dlogp_function(ravel_inputs=True)
    f.set_extra_values({})
    ip = model.initial_point()
    x = np.concatenate([np.atleast_1d(ip[v.name]).ravel() for v in f._grad_vars])
    f(x)
    return lambda: f(x)


def main():
    sys.path.insert(0, str(HERE))
    from _common import machine_info, md_table, time_variants, write_results
    from time_to_posterior import MODELS, build

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(m for m in MODELS if m != "readme-summary"))
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    rows = []
    for name in args.models.split(","):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fns = {v: _call(build(name, v == "noise-aware")) for v in ("noise-aware", "naive")}
        _, cpu, _ = time_variants(fns, args.rounds)
        a, b = (statistics.median(cpu[v]) * 1e6 for v in ("noise-aware", "naive"))
        rows.append({"model": name, "aware_us": a, "naive_us": b, "ratio": a / b})
        print(rows[-1], flush=True)
    cols = [
        ("model", "model"),
        ("aware_us", "noise-aware µs per call"),
        ("naive_us", "naive µs per call"),
        ("ratio", "ratio"),
    ]
    body = (
        "# One logp + gradient call: noise-aware vs naive, CPU µs\n\n"
        "The `time_to_posterior` models (same data), `model.logp_dlogp_function()` under "
        "PyMC's default (Numba) backend, at the initial point; median over "
        f"{args.rounds} interleaved rounds of the per-call CPU time. See the script's "
        "docstring.\n\n" + md_table(rows, cols)
    )
    write_results(NAME, info, body, {"rows": rows}, t_start)


if __name__ == "__main__":
    main()
