"""Where the time to a posterior goes: the README example, noise-aware vs naive (issue 24, point 1).

Each case runs in a **fresh process** (``--worker``) and reports the process CPU seconds
(user + sys of the process and its children, ``resource.getrusage``) of each stage:

``import``
    ``import pymc, pymc_dpnoise`` (+ the sampler's package).
``build``
    simulate the 5,000 reports, build the ``pm.Model``.
``rewrite`` / ``link`` / ``first_call``
    ``pytensor.function([values], [logp, *grad])`` on the model's joint log density with
    ``profile=True`` (the same graph the samplers differentiate, before raveling):
    ``optimizer_time`` (graph rewrites), ``linker_time`` (Numba code generation and
    compilation, or loading from the cache) and the first call (lazy JIT).
``per_grad_us``
    median CPU µs of one logp + gradient call of that compiled function at the prior mean.
``sample``
    ``pm.sample(nuts_sampler=..., chains=2, cores=1, tune=1000, draws=1000)`` end to end
    (compiles again, through the sampler's own path); ``n_grad`` = total leapfrog steps
    (``n_steps`` or ``tree_depth`` based) over both chains, so ``n_grad * per_grad_us`` is the
    gradient work and the rest of the sampling stage is compile + sampler overhead.

``cold`` cases get fresh, empty ``PYTENSOR_FLAGS=compiledir=...`` and ``NUMBA_CACHE_DIR``
temp dirs (and JAX's persistent cache is not enabled); ``warm`` cases reuse the dirs of a
previous run of the same case.  Cores: ``cores=1`` so that both chains run in the measured
process (CPU of worker processes would otherwise be counted only after they exit).

Run: ``.venv/bin/python benchmarks/time_to_posterior_profile.py`` (``--quick`` for 200 + 200
draws; ``--samplers nutpie`` to restrict).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "time_to_posterior_profile"


def cpu_now() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


# ------------------------------------------------------------------------------------------
# worker
# ------------------------------------------------------------------------------------------


def _readme_data(n=5000):
    import numpy as np

    import pymc_dpnoise as pmd

    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 2.0, size=n)
    return pmd.mechanisms.perturb_clipped(x, -5.0, 5.0, 1.0, rng)


def _readme_model(z, variant):
    import pymc as pm

    import pymc_dpnoise as pmd

    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        if variant == "noise-aware":
            pmd.LaplacePerturbedClippedNormal(
                "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=z
            )
        elif variant == "summary":
            s = pmd.summarize(z, -5.0, 5.0, 1.0)
            pmd.LaplacePerturbedClippedNormalSummary(
                "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=s
            )
        else:
            pm.Normal("z", mu=mu, sigma=sigma, observed=z)
    return m


def _n_grad(idata, sampler):
    import numpy as np

    total = 0
    for group in ("sample_stats", "warmup_sample_stats"):
        try:
            st = idata[group]
        except (KeyError, AttributeError):
            continue
        for key in ("n_steps", "tree_size", "num_steps"):
            if key in st:
                total += int(np.asarray(st[key]).sum())
                break
        else:
            return None
    return total or None


def worker(spec: dict) -> dict:
    out = {}
    c0 = cpu_now()
    import numpy as np
    import pymc as pm
    import pytensor

    import pymc_dpnoise  # noqa: F401

    if spec["sampler"] == "nutpie":
        import nutpie  # noqa: F401
    elif spec["sampler"] == "numpyro":
        import numpyro  # noqa: F401
    c1 = cpu_now()
    out["import"] = c1 - c0
    z = _readme_data()
    model = _readme_model(z, spec["variant"])
    c2 = cpu_now()
    out["build"] = c2 - c1

    if spec.get("stages", True):
        vals = model.value_vars
        logp = model.logp()
        grads = pytensor.grad(logp, vals)
        from pytensor.compile.mode import get_default_mode
        from pytensor.graph.fg import FunctionGraph

        # rewrites alone, on a clone (CPU), then the full compile; link = the difference
        fg = FunctionGraph(vals, [logp, *grads], clone=True)
        t = cpu_now()
        get_default_mode().optimizer.rewrite(fg)
        out["rewrite"] = cpu_now() - t
        t = cpu_now()
        f = pytensor.function(vals, [logp, *grads], on_unused_input="ignore")
        out["compile_total"] = cpu_now() - t
        out["link"] = out["compile_total"] - out["rewrite"]
        out["n_nodes"] = len(f.maker.fgraph.apply_nodes)
        point = model.initial_point()
        args = [np.asarray(point[v.name]) for v in vals]
        t = cpu_now()
        f(*args)
        out["first_call"] = cpu_now() - t
        reps = []
        for _ in range(7):
            k = 200
            t = time.process_time()
            for _ in range(k):
                f(*args)
            reps.append((time.process_time() - t) / k * 1e6)
        out["per_grad_us"] = float(np.median(reps))
        out["stages_cpu"] = cpu_now() - c2

    c3 = cpu_now()
    kw = dict(
        chains=2,
        cores=1,
        tune=spec["tune"],
        draws=spec["draws"],
        random_seed=1,
        progressbar=False,
        compute_convergence_checks=False,
        discard_tuned_samples=False,  # keeps the warmup's step counts
    )
    # always named: with nutpie installed PyMC >= 6 picks it when nuts_sampler is not given
    kw["nuts_sampler"] = spec["sampler"]
    if spec["sampler"] == "numpyro":
        kw["nuts"] = {"chain_method": "sequential"}
    with model:
        idata = pm.sample(**kw)
    out["sample"] = cpu_now() - c3
    out["n_grad"] = _n_grad(idata, spec["sampler"])
    post = idata.posterior
    out["mu"] = [float(post["mu"].mean()), float(post["mu"].std())]
    out["sigma"] = [float(post["sigma"].mean()), float(post["sigma"].std())]
    out["total"] = cpu_now() - c0
    # what a user pays: import + build + pm.sample (the stage profile excluded)
    out["user_cpu"] = out["import"] + out["build"] + out["sample"]
    return out


def run_case(spec: dict, cache: Path) -> dict:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from _common import run_worker, worker_env

    t = time.perf_counter()
    res, err = run_worker(__file__, spec, worker_env(cache))
    if err is not None:
        raise RuntimeError(f"{spec}: {err[-3000:]}")
    res["wall"] = time.perf_counter() - t
    return res


def main():
    sys.path.insert(0, str(HERE))
    from _common import machine_info, md_table, write_results

    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--samplers", default="nutpie,pymc,numpyro")
    ap.add_argument("--variants", default="noise-aware,naive")
    ap.add_argument("--name", default=NAME)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    t_start = time.perf_counter()
    info = machine_info()
    n = 200 if args.quick else 1000
    rows = []
    variants = args.variants.split(",")
    with tempfile.TemporaryDirectory(prefix="ttp_") as tmp:
        for sampler in args.samplers.split(","):
            for variant in variants:
                cache = Path(tmp) / f"{sampler}_{variant}"
                for state in ("cold", "warm"):
                    spec = dict(variant=variant, sampler=sampler, tune=n, draws=n)
                    res = run_case(spec, cache)
                    res.update(spec, caches=state)
                    g = res.get("n_grad")
                    res["grad_work"] = g * res["per_grad_us"] * 1e-6 if g else None
                    print(json.dumps(res), flush=True)
                    rows.append(res)
    by = {(r["sampler"], r["variant"], r["caches"]): r for r in rows}
    for r in rows:
        base = by.get((r["sampler"], "naive", r["caches"]))
        r["ratio"] = r["user_cpu"] / base["user_cpu"] if base else None
    cols = [
        ("sampler", "sampler"),
        ("variant", "model"),
        ("caches", "caches"),
        ("import", "import"),
        ("build", "build"),
        ("rewrite", "rewrites"),
        ("link", "link (Numba)"),
        ("first_call", "1st call"),
        ("n_nodes", "nodes"),
        ("per_grad_us", "µs / logp+grad"),
        ("n_grad", "gradients"),
        ("grad_work", "gradients × µs (s)"),
        ("sample", "pm.sample"),
        ("user_cpu", "import+build+sample CPU-s"),
        ("ratio", "÷ naive"),
        ("wall", "wall s"),
    ]
    body = (
        "# Time to a posterior: where the CPU goes (README example)\n\n"
        f"5,000 reports, ε = 1, clip [−5, 5]; 2 chains × {n} + {n} (cores=1). CPU seconds "
        "(user + sys, getrusage) per stage, each case a fresh process; `cold` = empty "
        "pytensor compiledir and NUMBA_CACHE_DIR, `warm` = the same dirs again. "
        "`total` includes the stage profile (a separate `pytensor.function` compile of "
        "logp + grad); `pm.sample` compiles again through the sampler's own path.\n\n"
        + md_table(rows, cols)
    )
    write_results(args.name, info, body, {"rows": rows}, t_start)


if __name__ == "__main__":
    main()
