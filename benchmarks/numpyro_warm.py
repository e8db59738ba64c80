"""Warm time to posterior under numpyro, README model: noise-aware vs naive, and where it goes.

The numpyro README cell of :mod:`time_to_posterior` (same model, data, ``pm.sample`` call and
worker environment: ``pm.sample(nuts_sampler="numpyro", chains=2, cores=1, tune=1000,
draws=1000, nuts={"chain_method": "sequential"})`` in a fresh process, CPU seconds = user +
sys of the process and its children), repeated: per variant one cold process fills its caches
(JAX persistent compilation cache, PyTensor and Numba caches), then ``--reps`` warm processes
per variant, noise-aware and naive alternating (so that load changes hit both).

Each warm process also splits its ``pm.sample`` by stage, timing PyMC's own steps from the
outside (wrappers around ``pymc.sampling.jax``'s ``get_jaxified_logp``,
``_get_batched_jittered_initial_points``, ``_sample_numpyro_nuts`` and
``_postprocess_samples``) and adding up JAX's monitoring events (tracing, lowering to MLIR,
XLA compiles and persistent-cache reads); and, after the timed call (not counted), counts the
leapfrog steps NUTS takes (``num_steps`` of warm-up and draws, the same seed, numpyro's
``MCMC.warmup(collect_warmup=True)`` then ``run``) and times one value + gradient of the
jaxified log density in a jitted ``while_loop`` (as :mod:`jax_per_gradient`), so that
"gradient work" = leapfrog steps x CPU per gradient is set against the sampler's run.

No assertion is made about time.

Run: ``.venv/bin/python benchmarks/numpyro_warm.py`` (``--reps 5``, ``--tag NAME`` for a
results file ``numpyro_warm.NAME.md``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "numpyro_warm"
VARIANTS = ("noise-aware", "naive")


def worker(spec: dict) -> dict:
    """One process: :func:`time_to_posterior.worker`'s README cell, split by stage."""
    sys.path.insert(0, str(HERE))
    import time_to_posterior as ttp

    c0 = ttp.cpu_now()
    import jax
    import pymc.sampling.jax as pmjax

    events: dict[str, float] = {}

    def on_event(name, secs, **kw):
        events[name] = events.get(name, 0.0) + secs
        events[name + "#"] = events.get(name + "#", 0) + 1

    jax.monitoring.register_event_duration_secs_listener(on_event)
    stages: dict[str, float] = {}

    def timed(fn, label):
        def wrapper(*a, **k):
            t = ttp.cpu_now()
            out = fn(*a, **k)
            stages[label] = stages.get(label, 0.0) + ttp.cpu_now() - t
            return out

        return wrapper

    for attr, label in (
        ("get_jaxified_logp", "jaxify logp"),
        ("_get_batched_jittered_initial_points", "initial points"),
        ("_sample_numpyro_nuts", "numpyro MCMC"),
        ("_postprocess_samples", "postprocess"),
    ):
        setattr(pmjax, attr, timed(getattr(pmjax, attr), label))
    cell = dict(model="readme", variant=spec["variant"], sampler="numpyro")
    res = ttp.worker(dict(cell, tune=spec["n"], draws=spec["n"]))
    res.update(cpu=ttp.cpu_now() - c0, stages=stages, jax_events=dict(events))
    if spec.get("diagnose"):
        res.update(_diagnose(spec["variant"] == "noise-aware", spec["n"]))
    return res


def _diagnose(noise_aware, n):
    """Leapfrog steps (warm-up and draws, both chains) and CPU-s per value + gradient."""
    import jax
    import numpy as np
    from jax_per_gradient import _loop
    from numpyro.infer import MCMC, NUTS
    from pymc.sampling.jax import get_jaxified_logp
    from time_to_posterior import build, cpu_now

    model = build("readme", noise_aware)
    logp = get_jaxified_logp(model, negative_logp=False)
    ip = model.initial_point()
    x0 = [jax.numpy.asarray(ip[v.name]) for v in model.value_vars]
    steps = {"warmup": 0, "draws": 0}
    for chain in range(2):
        mcmc = MCMC(
            NUTS(potential_fn=logp, target_accept_prob=0.8),
            num_warmup=n,
            num_samples=n,
            progress_bar=False,
        )
        key = jax.random.PRNGKey(chain)
        mcmc.warmup(key, init_params=x0, collect_warmup=True, extra_fields=("num_steps",))
        steps["warmup"] += int(np.sum(mcmc.get_extra_fields()["num_steps"]))
        mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps",))
        steps["draws"] += int(np.sum(mcmc.get_extra_fields()["num_steps"]))
    loop = 2000
    run = _loop(model, loop)
    per = []
    for _ in range(5):
        t = cpu_now()
        run()
        per.append((cpu_now() - t) / loop)
    return {"steps": steps, "grad_cpu_s": statistics.median(per)}


def main(args):
    sys.path.insert(0, str(HERE))
    from _common import machine_info, md_table, run_worker, worker_env, write_results

    t_start = time.perf_counter()
    info = machine_info()
    rows = []

    def one(variant, rep, cache):
        spec = dict(variant=variant, n=args.n, diagnose=rep == 0)
        t = time.perf_counter()
        res, err = run_worker(__file__, spec, worker_env(cache))
        res = {"error": err} if err else dict(res, wall=time.perf_counter() - t)
        res.update(variant=variant, rep=rep)
        print(json.dumps(res), flush=True)
        rows.append(res)

    with tempfile.TemporaryDirectory(prefix="npw_") as tmp:
        for v in VARIANTS:
            one(v, "cold", Path(tmp) / v)
        for rep in range(args.reps):
            for v in VARIANTS if rep % 2 == 0 else VARIANTS[::-1]:
                one(v, rep, Path(tmp) / v)
    body = _report(rows, args, md_table)
    if args.note:
        body += "\n" + args.note.strip() + "\n"
    name = NAME + (f".{args.tag}" if args.tag else "")
    write_results(name, info, body, {"rows": rows}, t_start)


def _report(rows, args, md_table):
    warm = [r for r in rows if r["rep"] != "cold" and "cpu" in r]
    pairs = []
    for rep in range(args.reps):
        a = [r for r in warm if r["rep"] == rep and r["variant"] == "noise-aware"]
        b = [r for r in warm if r["rep"] == rep and r["variant"] == "naive"]
        if a and b:
            pairs.append(
                {
                    "rep": rep,
                    "aware": a[0]["cpu"],
                    "naive": b[0]["cpu"],
                    "ratio": a[0]["cpu"] / b[0]["cpu"],
                }
            )
    ratios = [p["ratio"] for p in pairs]
    out = (
        "# Warm time to posterior under numpyro, README model: noise-aware vs naive\n\n"
        "Each warm cell: one fresh process (import + build + `pm.sample(nuts_sampler="
        f'"numpyro", chains=2, cores=1, tune={args.n}, draws={args.n}, '
        'nuts={"chain_method": "sequential"})`), CPU seconds (user + sys), with the caches '
        "a cold process of the same variant filled; variants alternate. See the script's "
        "docstring.\n\n"
        + md_table(
            pairs,
            [
                ("rep", "rep"),
                ("aware", "noise-aware CPU-s"),
                ("naive", "naive CPU-s"),
                ("ratio", "ratio"),
            ],
        )
    )
    if ratios:
        out += (
            f"\n**Ratio: median {statistics.median(ratios):.3g}, min {min(ratios):.3g}, "
            f"max {max(ratios):.3g}** over {len(ratios)} interleaved pairs.\n"
        )
    # stage medians per variant
    keys = ["sample"]
    stage_keys = ["jaxify logp", "initial points", "numpyro MCMC", "postprocess"]
    ev_keys = [
        ("/jax/core/compile/jaxpr_trace_duration", "JAX tracing"),
        ("/jax/core/compile/jaxpr_to_mlir_module_duration", "lowering to MLIR"),
        ("/jax/core/compile/backend_compile_duration", "XLA compile (or cache read)"),
        ("/jax/compilation_cache/cache_retrieval_time_sec", "of which cache reads"),
    ]
    table = []
    for label, get in (
        [("imports + build", lambda r: r["cpu"] - r["sample"])]
        + [(k, lambda r, k=k: r[k]) for k in keys]
        + [(k, lambda r, k=k: r["stages"].get(k, 0.0)) for k in stage_keys]
        + [
            (lab + " (wall s, all stages)", lambda r, k=k: r["jax_events"].get(k, 0.0))
            for k, lab in ev_keys
        ]
        + [("total", lambda r: r["cpu"])]
    ):
        row = {"stage": label}
        for v in VARIANTS:
            vals = [get(r) for r in warm if r["variant"] == v]
            row[v] = statistics.median(vals) if vals else None
        table.append(row)
    out += (
        "\nMedian per stage over the warm processes (CPU-s unless marked wall; the JAX "
        "events are wall seconds summed over every compile of the process):\n\n"
        + md_table(table, [("stage", "stage"), ("noise-aware", "noise-aware"), ("naive", "naive")])
    )
    diag = {r["variant"]: r for r in warm if "steps" in r}
    if diag:
        drows = []
        for v, r in diag.items():
            st = r["steps"]
            total = st["warmup"] + st["draws"]
            drows.append(
                {
                    "variant": v,
                    "warmup": st["warmup"],
                    "draws": st["draws"],
                    "per_draw": st["draws"] / (2 * args.n),
                    "grad_us": r["grad_cpu_s"] * 1e6,
                    "work": total * r["grad_cpu_s"],
                    "mcmc": r["stages"].get("numpyro MCMC"),
                }
            )
        out += (
            "\nLeapfrog steps (both chains; counted after the timed call with numpyro's "
            "`MCMC.warmup(collect_warmup=True)`, same settings) and CPU per value + gradient "
            "(jitted `while_loop`), first warm process of each variant:\n\n"
            + md_table(
                drows,
                [
                    ("variant", "variant"),
                    ("warmup", "warm-up steps"),
                    ("draws", "draw steps"),
                    ("per_draw", "steps per draw"),
                    ("grad_us", "µs per gradient"),
                    ("work", "gradient work CPU-s"),
                    ("mcmc", "numpyro MCMC CPU-s (timed call)"),
                ],
            )
        )
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", help="(internal) run one process's cell")
    parser.add_argument("--reps", type=int, default=5, help="warm processes per variant")
    parser.add_argument("--n", type=int, default=1000, help="tune = draws")
    parser.add_argument("--tag", default="", help="results file numpyro_warm.TAG.md")
    parser.add_argument("--note", default="", help="paragraph added under the tables")
    cli = parser.parse_args()
    if cli.worker:
        print(json.dumps(worker(json.loads(cli.worker))))
    else:
        main(cli)
