"""Cost of one value + gradient evaluation under JAX, as numpyro pays it: noise-aware vs naive.

Issue 24, point 1 (the numpyro cells of ``time_to_posterior``).  For each model of
:mod:`time_to_posterior` (same data, same seeds) PyMC's ``get_jaxified_logp`` of each variant
is differentiated with ``jax.value_and_grad`` and evaluated ``--steps`` times inside one
jitted ``lax.while_loop`` (the parameters moved a little at every step so that nothing is
hoisted), as a NUTS trajectory evaluates it: no Python dispatch per evaluation.  The value is
the median over interleaved rounds (``_common.time_variants``) of the CPU time per
evaluation, both cores available (XLA's CPU runtime uses them as it does in ``pm.sample``).

No assertion is made about time.

Run: ``.venv/bin/python benchmarks/jax_per_gradient.py`` (``--models readme,counts``,
``--rounds 7``, ``--steps 500``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "jax_per_gradient"


def _loop(model, steps):
    """A callable running ``steps`` value + gradient evaluations of ``model``'s jaxified logp
    in one compiled ``while_loop``."""
    import jax
    import numpy as np
    from pymc.sampling.jax import get_jaxified_logp

    logp = get_jaxified_logp(model)
    ip = model.initial_point()
    x0 = [jax.numpy.asarray(ip[v.name]) for v in model.value_vars]
    vg = jax.value_and_grad(lambda xs: logp(xs))

    def run(xs):
        def body(c):
            i, acc = c
            v, g = vg([x + 1e-9 * i for x in xs])
            return i + 1, acc + v + sum(jax.numpy.sum(t) for t in g)

        return jax.lax.while_loop(lambda c: c[0] < steps, body, (0, 0.0))[1]

    f = jax.jit(run)
    out = float(f(x0))
    assert np.isfinite(out)
    return lambda: jax.block_until_ready(f(x0))


def main():
    sys.path.insert(0, str(HERE))
    from _common import machine_info, md_table, time_variants, write_results
    from time_to_posterior import MODELS, build

    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(m for m in MODELS if m != "readme-summary"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()

    rows = []
    for name in args.models.split(","):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fns = {
                v: _loop(build(name, v == "noise-aware"), args.steps)
                for v in ("noise-aware", "naive")
            }
        _, cpu, _ = time_variants(fns, args.rounds, batch_seconds=0.2)
        us = {k: statistics.median(v) / args.steps * 1e6 for k, v in cpu.items()}
        row = {
            "model": name,
            "aware_us": us["noise-aware"],
            "naive_us": us["naive"],
            "ratio": us["noise-aware"] / us["naive"],
        }
        rows.append(row)
        print(row, flush=True)
    cols = [
        ("model", "model"),
        ("aware_us", "noise-aware µs"),
        ("naive_us", "naive µs"),
        ("ratio", "ratio"),
    ]
    body = (
        "# One value + gradient evaluation under JAX: noise-aware vs naive, CPU µs\n\n"
        "The `time_to_posterior` models (same data): `jax.value_and_grad` of PyMC's "
        f"`get_jaxified_logp`, {args.steps} evaluations inside one jitted `lax.while_loop` "
        "(as in a NUTS trajectory), median over "
        f"{args.rounds} interleaved rounds of the CPU time per evaluation. See the script's "
        "docstring.\n\n" + md_table(rows, cols)
    )
    write_results(NAME, info, body, {"rows": rows}, t_start)


if __name__ == "__main__":
    main()
