"""Time to a posterior: noise-aware vs naive CPU seconds, cold and warm caches, three samplers.

Issue 24, point 1.  For each model family one representative noise-aware model and the naive
model a user would write for the same released data (the noise ignored):

``readme``          README example: 5,000 ``LaplacePerturbedClippedNormal`` reports (ε = 1)
                    vs ``pm.Normal`` on the reports
``readme-summary``  the same reports through ``pmd.summarize`` +
                    ``LaplacePerturbedClippedNormalSummary`` (binned, O(bins) per gradient)
``counts``          ``NoisyBinomial``, 4 groups (n = 40…5000), discrete Gaussian ρ = 0.1,
                    censored at 0 vs ``pm.Binomial`` on the released counts
``frequency``       ``KRRLikelihood``, 5,000 k-RR reports over k = 4, ε = 1 vs
                    ``pm.Categorical`` on the reports
``regression``      ``PerturbedLinReg``, 2,000 records, d = 2, noise sd 0.5 on x and y vs
                    ``pm.Normal`` regression of the noisy y on the noisy x
``expfam``          ``LaplaceNoisyMultinomial``, 4 regions × 3 categories, n = 500, ε = 1 vs
                    ``pm.Multinomial`` on the rounded released counts
``truncated-sum``   ``LaplaceNoisyTruncatedPoisson``, n = 400 records in [0, 10], ε = 1 vs
                    ``pm.Poisson`` (rate n μ) on the rounded released sum

Each (model, variant, sampler, caches) is one **fresh process** that imports pymc and the
package, builds the model and calls ``pm.sample(chains=2, cores=1, tune=1000, draws=1000)``
(``nuts_sampler`` = pymc / nutpie / numpyro, always passed: PyMC >= 6 picks nutpie when it is
installed and ``nuts_sampler`` is not given; numpyro with ``chain_method="sequential"``) so
that all the work is inside the measured process.  The reported number is that process's CPU
seconds (user + sys, itself and its children, ``resource.getrusage``).  ``cold`` = empty
``PYTENSOR_FLAGS=base_compiledir=``, ``NUMBA_CACHE_DIR`` and JAX cache temp dirs; ``warm`` = the same process
again with the dirs the cold one filled.  Noise-aware and naive of a cell run back to back
(interleaved), so load changes hit both.

Run: ``.venv/bin/python benchmarks/time_to_posterior.py`` (``--models readme,counts``,
``--samplers nutpie``, ``--quick`` = 200 + 200 draws; ``--append`` keeps earlier rows).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "time_to_posterior"
MODELS = (
    "readme",
    "readme-summary",
    "counts",
    "frequency",
    "regression",
    "expfam",
    "truncated-sum",
)


def cpu_now() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def build(model: str, noise_aware: bool):
    """The PyMC model of one case (data simulated with a fixed seed)."""
    import numpy as np
    import pymc as pm

    import pymc_dpnoise as pmd

    rng = np.random.default_rng(0)
    with pm.Model() as m:
        if model in ("readme", "readme-summary"):
            x = rng.normal(1.0, 2.0, size=5000)
            z = pmd.mechanisms.perturb_clipped(x, -5.0, 5.0, 1.0, rng)
            mu = pm.Normal("mu", 0.0, 5.0)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            kw = dict(mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0)
            if not noise_aware:
                pm.Normal("z", mu=mu, sigma=sigma, observed=z)
            elif model == "readme":
                pmd.LaplacePerturbedClippedNormal("z", **kw, observed=z)
            else:
                s = pmd.summarize(z, -5.0, 5.0, 1.0)
                pmd.LaplacePerturbedClippedNormalSummary("z", **kw, observed=s)
        elif model == "counts":
            from pymc_dpnoise import noise

            n = np.array([40, 300, 1200, 5000])
            spec = noise.DiscreteGaussian.from_rho(0.1)
            released = np.maximum(spec.release(rng.binomial(n, 0.2), rng), 0)
            p = pm.Beta("p", 1.0, 1.0)
            if noise_aware:
                pmd.NoisyBinomial("y", n=n, p=p, noise=spec, lower=0, observed=released)
            else:
                pm.Binomial("y", n=n, p=p, observed=np.minimum(released, n))
        elif model == "frequency":
            reports = pmd.mechanisms.krr_perturb(
                rng.choice(4, size=5000, p=[0.4, 0.3, 0.2, 0.1]), 4, 1.0, rng
            )
            theta = pm.Dirichlet("theta", np.ones(4))
            if noise_aware:
                pmd.KRRLikelihood("y", p=theta, epsilon=1.0, observed=reports)
            else:
                pm.Categorical("y", p=theta, observed=reports)
        elif model == "regression":
            x = rng.normal(size=(2000, 2))
            y = x @ np.array([1.0, -0.5]) + rng.normal(0.0, 0.3, 2000)
            zx = x + rng.normal(0.0, 0.5, x.shape)
            zy = y + rng.normal(0.0, 0.5, 2000)
            theta = pm.Normal("theta", 0.0, 5.0, shape=2)
            sigma = pm.HalfNormal("sigma", 1.0)
            if noise_aware:
                pmd.PerturbedLinReg(
                    "z",
                    theta=theta,
                    sigma=sigma,
                    cov=np.eye(2),
                    sigma_x=0.5,
                    sigma_y=0.5,
                    observed=np.column_stack([zx, zy]),
                )
            else:
                pm.Normal("y", mu=zx @ theta, sigma=sigma, observed=zy)
        elif model == "expfam":
            labels = rng.choice(3, size=(4, 500), p=[0.5, 0.3, 0.2])
            rel = pmd.mechanisms.release_multinomial_counts(labels, 3, 1.0, rng)
            p = pm.Dirichlet("p", np.ones(3))
            if noise_aware:
                pmd.LaplaceNoisyMultinomial(
                    "y", n=rel.n, p=p, epsilon=rel.epsilon, observed=rel.value
                )
            else:
                counts = np.maximum(np.round(np.asarray(rel.value)), 0).astype(int)
                pm.Multinomial("y", n=counts.sum(axis=-1), p=p, observed=counts)
        elif model == "truncated-sum":
            rel = pmd.mechanisms.release_truncated_sum(
                rng.poisson(3.0, size=400),
                lower=0,
                upper=10,
                epsilon=1.0,
                rng=rng,
                family="poisson",
            )
            mu = pm.Gamma("mu", 2.0, 0.5)
            if noise_aware:
                pmd.LaplaceNoisyTruncatedPoisson(
                    "y",
                    n=rel.n,
                    mu=mu,
                    lower=rel.lower,
                    upper=rel.upper,
                    epsilon=rel.epsilon,
                    observed=rel.value,
                )
            else:
                pm.Poisson("y", mu=rel.n * mu, observed=max(round(float(rel.value)), 0))
        else:
            raise ValueError(f"model: unknown {model!r}; one of {MODELS}")
    return m


def worker(spec: dict) -> dict:
    model = spec["model"]
    c0 = cpu_now()
    import numpy as np
    import pymc as pm

    import pymc_dpnoise  # noqa: F401

    c1 = cpu_now()
    m = build(model, spec["variant"] == "noise-aware")
    c2 = cpu_now()
    kw = dict(
        chains=2,
        cores=1,
        tune=spec["tune"],
        draws=spec["draws"],
        random_seed=1,
        progressbar=False,
        compute_convergence_checks=False,
    )
    # always named: with nutpie installed PyMC >= 6 picks it when nuts_sampler is not given
    kw["nuts_sampler"] = spec["sampler"]
    if spec["sampler"] == "numpyro":
        kw["nuts"] = {"chain_method": "sequential"}
    with m:
        idata = pm.sample(**kw)
    c3 = cpu_now()
    first = m.free_RVs[0].name
    return {
        "import": c1 - c0,
        "build": c2 - c1,
        "sample": c3 - c2,
        "cpu": c3 - c0,
        "post_mean_" + first: float(np.asarray(idata.posterior[first]).mean()),
    }


def run_case(spec: dict, cache: Path) -> dict:
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    from _common import worker_env

    env = worker_env(cache)
    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if r.returncode:
        return {"error": r.stderr.strip().splitlines()[-1][:300] if r.stderr.strip() else "?"}
    res = json.loads(r.stdout.strip().splitlines()[-1])
    res["wall"] = time.perf_counter() - t
    return res


def table(rows):
    """One line per (model, sampler): noise-aware and naive CPU-s, cold and warm, and ratios."""
    cells = {}
    for r in rows:
        if "cpu" in r:
            cells[(r["model"], r["sampler"], r["variant"], r["caches"])] = r["cpu"]
    out = []
    keys = sorted({(m, s) for m, s, _, _ in cells}, key=lambda k: (MODELS.index(k[0]), k[1]))
    for model, sampler in keys:
        base = "readme" if model.startswith("readme") else model
        row = {"model": model, "sampler": sampler}
        for c in ("cold", "warm"):
            a = cells.get((model, sampler, "noise-aware", c))
            b = cells.get((base, sampler, "naive", c))
            row[f"aware_{c}"], row[f"naive_{c}"] = a, b
            row[f"ratio_{c}"] = a / b if a and b else None
        out.append(row)
    return out


def main():
    sys.path.insert(0, str(HERE))
    from _common import RESULTS, machine_info, md_table, write_results

    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--quick", action="store_true", help="200 + 200 draws")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--samplers", default="nutpie,pymc,numpyro")
    ap.add_argument("--variants", default="noise-aware,naive")
    ap.add_argument("--append", action="store_true", help="keep the rows of the last run")
    ap.add_argument(
        "--tag", default="", help="shard name: rows go to results/NAME.partial.TAG.json"
    )
    ap.add_argument(
        "--merge", action="store_true", help="no runs: table from every results/NAME.partial.*.json"
    )
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    t_start = time.perf_counter()
    info = machine_info()
    n = 200 if args.quick else 1000
    rows = []
    if args.append and (RESULTS / f"{NAME}.json").exists():
        rows = json.loads((RESULTS / f"{NAME}.json").read_text())["rows"]
    partial = RESULTS / f"{NAME}.partial.{args.tag or 'main'}.json"
    if args.merge:
        rows = [
            r
            for f in sorted(RESULTS.glob(f"{NAME}.partial.*.json"))
            for r in json.loads(f.read_text())
        ]
        info["command"] += (
            " (merged shards: "
            + ", ".join(f.name for f in sorted(RESULTS.glob(f"{NAME}.partial.*.json")))
            + ")"
        )
    with tempfile.TemporaryDirectory(prefix="ttp_") as tmp:
        for model in [] if args.merge else args.models.split(","):
            for sampler in args.samplers.split(","):
                variants = (
                    ["noise-aware"] if model == "readme-summary" else ["noise-aware", "naive"]
                )
                done = {(r["model"], r["sampler"], r["variant"]) for r in rows}
                variants = [
                    v
                    for v in variants
                    if (model, sampler, v) not in done and v in args.variants.split(",")
                ]
                for caches in ("cold", "warm"):
                    order = variants if caches == "cold" else variants[::-1]
                    for variant in order:
                        spec = dict(model=model, variant=variant, sampler=sampler, tune=n, draws=n)
                        res = run_case(spec, Path(tmp) / f"{model}_{sampler}_{variant}")
                        res.update(spec, caches=caches)
                        print(json.dumps(res), flush=True)
                        rows.append(res)
                        partial.write_text(json.dumps(rows))
    tab = table(rows)
    cols = [("model", "model"), ("sampler", "sampler")]
    for c in ("cold", "warm"):
        cols += [
            (f"aware_{c}", f"noise-aware {c}"),
            (f"naive_{c}", f"naive {c}"),
            (f"ratio_{c}", f"ratio {c}"),
        ]
    errors = [r for r in rows if "error" in r]
    body = (
        "# Time to a posterior: noise-aware vs naive, CPU seconds\n\n"
        f"Each cell: one fresh process (import + build + `pm.sample`, 2 chains × {n} + {n}, "
        "cores=1), CPU seconds (user + sys). Cold = empty compile caches, warm = the same "
        "process again. `readme-summary` is the README data through `pmd.summarize` + "
        "`LaplacePerturbedClippedNormalSummary`, compared with the README's naive model. "
        "See the script's docstring for the models.\n\n" + md_table(tab, cols)
    )
    if errors:
        body += "\nFailed cases:\n\n" + "\n".join(
            f"- {r['model']} / {r['sampler']} / {r['variant']} / {r['caches']}: `{r['error']}`"
            for r in errors
        )
    write_results(NAME, info, body, {"rows": rows, "table": tab}, t_start)


if __name__ == "__main__":
    main()
