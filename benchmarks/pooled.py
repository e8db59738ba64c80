"""Pooled (hierarchical) analyses: noise-aware against naive models of the same data.

Issue 37, point 6: the four pooled analyses of the issue, each timed side by side with the
naive (noise-ignoring) model of the same released data, plus the per-report cost of grouped
against shared parameters for every per-report family.

Cases (``--cases``, default all):

``clipped``        50 groups x 200 ``LaplacePerturbedClippedNormal`` reports (clip [-5, 5],
                   ε = 1), ``mu = mu_g[group]`` non-centred (mu_g = mu0 + tau z_g); naive:
                   ``pm.Normal`` on the reports with the same hierarchy
``areas``          200 small areas, ``NoisyBinomial`` with discrete Gaussian noise ρ = 0.5,
                   ``lower=0`` (releases clamped at 0), n per area 20..2000, logit-normal p
                   per area (non-centred); naive: ``pm.Binomial`` on the releases clipped to
                   [0, n]
``memory``         clamped ``NoisyPoisson``, discrete Gaussian σ = 1000, ``lower=0``: peak
                   resident memory (``ru_maxrss``) of a fresh process that builds, compiles
                   and evaluates logp + gradient of R releases (``--releases``, default
                   1,8,32); per release = the slope between the smallest and largest R.  An
                   R whose projected memory exceeds 60% of the machine's available memory is
                   skipped (and said so)
``oue``            10 regions x 2,000 OUE reports, k = 8, ε = 1, regions far apart (θ_g ~
                   Dirichlet(5 β)), through ``pooled_histogram`` (non-centred logistic-normal
                   hierarchy, the default); naive: the same hierarchy with ``pm.Multinomial``
                   on each region's unbiased OUE estimate projected onto the simplex, times N
                   (rounded), the existing naive counterpart of
                   ``pymc_dpnoise/experiments/ldp_histograms.py``
``oue-dirichlet``  the same with ``parameterisation="dirichlet"`` (centred hierarchical
                   Dirichlet, the issue's model): the ESS it reaches
``grouped``        per-report families (clipped normal and exponential, k-RR, OUE, SUE,
                   unary encoding, perturbed linear and logistic regression), 10,000
                   reports, parameters indexed by a 50-level group index against one shared
                   set: compiled logp + gradient (Numba), ns per report, median of rounds

Each posterior cell (case, sampler, variant, caches) is one **fresh process** (import, build,
``pm.sample(chains, cores=1)``); its CPU seconds (user + sys, ``resource.getrusage``) up to
the end of sampling are the time to posterior, and ``ru_maxrss`` then its peak memory.
``cold`` = empty PyTensor compiledir and ``NUMBA_CACHE_DIR``, ``warm`` = a second process
with the caches the first filled (``_common.worker_env``).  The warm process also times one
compiled logp + gradient (``model.compile_fn``, after sampling: not in the time to
posterior), median of interleaved rounds.  ESS is the minimum bulk ESS over every free
variable (and the per-group histograms), R-hat the maximum; ESS per CPU-s uses the warm time.

Run: ``.venv/bin/python benchmarks/pooled.py`` (4 chains x 1000 + 1000;
``--quick`` = 2 chains x 300 + 300; ``--cases clipped,oue``; ``--samplers nutpie``;
``--name pooled_counts`` writes ``results/pooled_counts.md`` instead of ``pooled.md``).
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
sys.path.insert(0, str(HERE))
from _common import (  # noqa: E402
    machine_info,
    md_table,
    run_worker,
    time_variants,
    worker_env,
    write_results,
)

NAME = "pooled"
POSTERIOR_CASES = ("clipped", "areas", "oue", "oue-dirichlet")
CASES = (*POSTERIOR_CASES, "memory", "grouped")
FAMILIES = (
    "clipped-normal",
    "clipped-exponential",
    "krr",
    "oue",
    "sue",
    "unary",
    "linreg",
    "logreg",
)
G = 50  # groups of the clipped and grouped cases
ROUNDS = 7


def cpu_now() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def _normal_hierarchy(name, n, loc=0.0):
    """Non-centred normal hierarchy of ``n`` group effects: loc + tau * z."""
    import pymc as pm

    m0 = pm.Normal(f"{name}0", loc, 2.0)
    tau = pm.HalfNormal(f"{name}_tau", 1.0)
    z = pm.Normal(f"{name}_z", 0.0, 1.0, shape=n)
    return m0 + tau * z


def build(case: str, noise_aware: bool):
    """The PyMC model of a posterior case (data simulated with a fixed seed)."""
    import numpy as np
    import pymc as pm

    import pymc_dpnoise as pmd

    rng = np.random.default_rng(0)
    with pm.Model() as model:
        if case == "clipped":
            group = np.repeat(np.arange(G), 200)
            x = rng.normal(rng.normal(1.0, 0.5, G)[group], 2.0)
            z = pmd.mechanisms.perturb_clipped(x, -5.0, 5.0, 1.0, rng)
            mu = _normal_hierarchy("mu", G)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            if noise_aware:
                pmd.LaplacePerturbedClippedNormal(
                    "z", mu=mu[group], sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=z
                )
            else:
                pm.Normal("z", mu=mu[group], sigma=sigma, observed=z)
        elif case == "areas":
            from pymc_dpnoise import noise

            n = rng.integers(20, 2001, size=200)
            p_true = 1.0 / (1.0 + np.exp(-rng.normal(-1.0, 0.5, 200)))
            spec = noise.DiscreteGaussian.from_rho(0.5)
            released = np.maximum(spec.release(rng.binomial(n, p_true), rng), 0)
            p = pm.math.sigmoid(_normal_hierarchy("logit_p", 200, loc=-1.0))
            if noise_aware:
                pmd.NoisyBinomial("y", n=n, p=p, noise=spec, lower=0, observed=released)
            else:
                pm.Binomial("y", n=n, p=p, observed=np.clip(released, 0, n))
        elif case in ("oue", "oue-dirichlet"):
            from pymc_dpnoise.distributions.hierarchy import histogram_hierarchy, pooled_histogram
            from pymc_dpnoise.mechanisms import oue_estimate, oue_perturb, project_simplex

            regions, n, k = 10, 2000, 8
            beta = 0.8 ** np.arange(k)
            theta = rng.dirichlet(5.0 * beta / beta.sum(), size=regions)
            group = np.repeat(np.arange(regions), n)
            items = np.concatenate([rng.choice(k, size=n, p=t) for t in theta])
            reports = oue_perturb(items, k, 1.0, rng)
            param = "dirichlet" if case == "oue-dirichlet" else "logistic-normal"
            if noise_aware:
                pooled_histogram("y", reports, group, epsilon=1.0, parameterisation=param)
            else:
                est = np.stack([oue_estimate(reports[group == g], 1.0) for g in range(regions)])
                counts = np.round(project_simplex(est) * n).astype(int)
                th = histogram_hierarchy("y", regions, k, parameterisation=param)
                pm.Multinomial("y", n=counts.sum(-1), p=th, observed=counts)
        else:
            raise ValueError(f"case: unknown {case!r}; one of {POSTERIOR_CASES}")
    return model


def diagnostics(model, idata) -> dict:
    import arviz as az
    import numpy as np

    names = [v.name for v in model.free_RVs]
    names += [n for n in ("y_theta",) if n in idata.posterior and n not in names]
    ess = az.ess(idata, var_names=names, method="bulk")
    rhat = az.rhat(idata, var_names=names)
    div = int(np.asarray(idata.sample_stats["diverging"]).sum())
    return {
        "ess": min(float(np.min(ess[v].values)) for v in ess.data_vars),
        "rhat": max(float(np.max(rhat[v].values)) for v in rhat.data_vars),
        "divergences": div,
    }


def per_gradient(model, n_rounds=ROUNDS) -> float:
    """Median CPU seconds of one compiled logp + gradient at the initial point."""
    import numpy as np

    fn = model.compile_fn([model.logp(), *model.dlogp()], inputs=model.value_vars)
    point = model.initial_point()
    _, cpu, _ = time_variants({"g": lambda: fn(point)}, n_rounds)
    return float(np.median(cpu["g"]))


def posterior_worker(spec: dict) -> dict:
    c0 = cpu_now()
    import pymc as pm

    import pymc_dpnoise  # noqa: F401

    model = build(spec["case"], spec["variant"] == "noise-aware")
    with model:
        idata = pm.sample(
            chains=spec["chains"],
            cores=1,
            tune=spec["tune"],
            draws=spec["draws"],
            nuts_sampler=spec["sampler"],
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    out = {"cpu": cpu_now() - c0, "maxrss_mb": maxrss_mb(), **diagnostics(model, idata)}
    if spec["caches"] == "warm":
        out["grad_s"] = per_gradient(model)
    return out


def memory_worker(spec: dict) -> dict:
    """Peak memory of R clamped discrete-Gaussian ``NoisyPoisson`` releases (σ = 1000)."""
    import numpy as np
    import pymc as pm

    import pymc_dpnoise as pmd
    from pymc_dpnoise import noise

    base = maxrss_mb()
    r = spec["releases"]
    rng = np.random.default_rng(0)
    spec_noise = noise.DiscreteGaussian(1000.0)
    released = np.maximum(spec_noise.release(rng.poisson(5000.0, size=r), rng), 0)
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 1e-3)
        pmd.NoisyPoisson("y", mu=mu, noise=spec_noise, lower=0, observed=released)
    c0 = cpu_now()
    fn = model.compile_fn([model.logp(), *model.dlogp()], inputs=model.value_vars)
    c1 = cpu_now()
    fn(model.initial_point())
    return {
        "import_mb": base,
        "maxrss_mb": maxrss_mb(),
        "compile_cpu": c1 - c0,
        "grad_s": per_gradient(model, 3),
    }


def grouped_worker(spec: dict) -> dict:
    """ns per report of one compiled logp + gradient, grouped against shared parameters."""
    import numpy as np
    import pymc as pm

    import pymc_dpnoise as pmd
    from pymc_dpnoise import mechanisms as mech

    fam, n = spec["family"], spec["n"]
    rng = np.random.default_rng(0)
    group = rng.integers(0, G, size=n)
    k, d = 8, 2

    def data():
        if fam == "clipped-normal":
            return mech.perturb_clipped(rng.normal(1.0, 2.0, n), -5.0, 5.0, 1.0, rng)
        if fam == "clipped-exponential":
            return mech.perturb_clipped_exponential(rng.exponential(2.0, n), 8.0, 1.0, rng)
        items = rng.choice(k, size=n, p=np.full(k, 1.0 / k))
        if fam == "krr":
            return mech.krr_perturb(items, k, 1.0, rng)
        if fam in ("oue", "sue"):
            return getattr(mech, f"{fam}_perturb")(items, k, 1.0, rng)
        if fam == "unary":
            return mech.unary_encoding_perturb(items, k, 0.6, 0.2, rng)
        x = rng.normal(size=(n, d))
        if fam == "linreg":
            y = x @ np.array([1.0, -0.5]) + rng.normal(0.0, 0.3, n)
            return np.column_stack([x + rng.normal(0, 0.5, x.shape), y + rng.normal(0, 0.5, n)])
        dist = pmd.PerturbedLogReg.dist(
            theta=[1.0, -0.5], cov=np.eye(d), sigma_x=0.5, epsilon_y=1.0
        )
        return pm.draw(dist, n, random_seed=1)

    obs = data()

    def model(grouped: bool):
        idx = group if grouped else slice(None)
        shape = (G,) if grouped else ()

        def per(v):  # the parameter each report sees
            return v[idx] if grouped else v

        with pm.Model() as m:
            if fam == "clipped-normal":
                mu = pm.Normal("mu", 0.0, 5.0, shape=shape)
                sigma = pm.Gamma("sigma", 2.0, 1.0, shape=shape)
                pmd.LaplacePerturbedClippedNormal(
                    "z", mu=per(mu), sigma=per(sigma), lower=-5.0, upper=5.0, epsilon=1.0,
                    observed=obs,
                )  # fmt: skip
            elif fam == "clipped-exponential":
                lam = pm.Gamma("lam", 2.0, 2.0, shape=shape)
                pmd.LaplacePerturbedClippedExponential(
                    "z", lam=per(lam), upper=8.0, epsilon=1.0, observed=obs
                )
            elif fam in ("krr", "oue", "sue", "unary"):
                theta = pm.Dirichlet("theta", np.ones(k), shape=(*shape, k))
                cls = {
                    "krr": pmd.KRRLikelihood,
                    "oue": pmd.OUELikelihood,
                    "sue": pmd.SUELikelihood,
                    "unary": pmd.UnaryEncodingLikelihood,
                }[fam]
                kw = dict(keep_prob=0.6, flip_prob=0.2) if fam == "unary" else dict(epsilon=1.0)
                cls("z", p=per(theta), **kw, observed=obs)
            else:
                theta = pm.Normal("theta", 0.0, 2.0, shape=(*shape, d))
                if fam == "linreg":
                    sigma = pm.HalfNormal("sigma", 1.0)
                    pmd.PerturbedLinReg(
                        "z", theta=per(theta), sigma=sigma, cov=np.eye(d), sigma_x=0.5,
                        sigma_y=0.5, observed=obs,
                    )  # fmt: skip
                else:
                    pmd.PerturbedLogReg(
                        "z", theta=per(theta), cov=np.eye(d), sigma_x=0.5, epsilon_y=1.0,
                        observed=obs,
                    )  # fmt: skip
        return m

    fns = {}
    for grouped in (False, True):
        m = model(grouped)
        f = m.compile_fn([m.logp(), *m.dlogp()], inputs=m.value_vars)
        point = m.initial_point()
        fns["grouped" if grouped else "shared"] = lambda f=f, point=point: f(point)
    _, cpu, _ = time_variants(fns, ROUNDS)
    return {k: float(np.median(v)) / n * 1e9 for k, v in cpu.items()}


def worker(spec: dict) -> dict:
    kind = spec["kind"]
    if kind == "posterior":
        return posterior_worker(spec)
    if kind == "memory":
        return memory_worker(spec)
    return grouped_worker(spec)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def run(spec: dict, cache: Path) -> dict:
    t = time.perf_counter()
    res, err = run_worker(__file__, spec, worker_env(cache))
    if res is None:
        return {**spec, "error": (err.strip().splitlines() or ["?"])[-1][:300]}
    return {**spec, **res, "wall": time.perf_counter() - t}


def available_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def posterior_rows(cases, samplers, tune, draws, chains, tmp):
    rows = []
    for case in cases:
        for sampler in samplers:
            for caches in ("cold", "warm"):
                # interleaved (naive first in the warm pass) so load changes hit both
                order = ("noise-aware", "naive") if caches == "cold" else ("naive", "noise-aware")
                for variant in order:
                    spec = dict(
                        kind="posterior", case=case, sampler=sampler, variant=variant,
                        caches=caches, tune=tune, draws=draws, chains=chains,
                    )  # fmt: skip
                    res = run(spec, Path(tmp) / f"{case}_{sampler}_{variant}")
                    print(json.dumps(res), flush=True)
                    rows.append(res)
    return rows


def posterior_table(rows):
    """One line per (case, sampler): aware / naive CPU-s cold and warm, per gradient, ESS."""
    cell = {(r["case"], r["sampler"], r["variant"], r["caches"]): r for r in rows}
    out = []
    for case, sampler in dict.fromkeys((r["case"], r["sampler"]) for r in rows):
        row = {"case": case, "sampler": sampler}
        for v, tag in (("noise-aware", "a"), ("naive", "n")):
            cold = cell.get((case, sampler, v, "cold"), {})
            warm = cell.get((case, sampler, v, "warm"), {})
            row[f"{tag}_cold"], row[f"{tag}_warm"] = cold.get("cpu"), warm.get("cpu")
            g = warm.get("grad_s")
            row[f"{tag}_grad"] = g * 1e6 if g is not None else None
            row[f"{tag}_ess"], row[f"{tag}_rhat"] = warm.get("ess"), warm.get("rhat")
            row[f"{tag}_esscpu"] = (
                warm["ess"] / warm["cpu"] if warm.get("ess") and warm.get("cpu") else None
            )
            row[f"{tag}_mb"] = warm.get("maxrss_mb")
        for c in ("cold", "warm", "grad"):
            a, b = row[f"a_{c}"], row[f"n_{c}"]
            row[f"r_{c}"] = a / b if a and b else None
        out.append(row)
    return out


POSTERIOR_COLUMNS = [
    ("case", "case"),
    ("sampler", "sampler"),
    ("a_warm", "aware warm CPU-s"),
    ("n_warm", "naive warm CPU-s"),
    ("r_warm", "ratio warm"),
    ("a_cold", "aware cold CPU-s"),
    ("n_cold", "naive cold CPU-s"),
    ("r_cold", "ratio cold"),
    ("a_grad", "aware µs/grad"),
    ("n_grad", "naive µs/grad"),
    ("r_grad", "ratio grad"),
    ("a_ess", "aware min ESS"),
    ("n_ess", "naive min ESS"),
    ("a_rhat", "aware max R-hat"),
    ("n_rhat", "naive max R-hat"),
    ("a_esscpu", "aware ESS/CPU-s"),
    ("n_esscpu", "naive ESS/CPU-s"),
    ("a_mb", "aware peak MB"),
    ("n_mb", "naive peak MB"),
]


def memory_rows(releases, tmp):
    rows = []
    for r in releases:
        avail = available_mb()
        done = [x for x in rows if "maxrss_mb" in x]
        if len(done) >= 1 and avail is not None:
            slope = (
                (done[-1]["maxrss_mb"] - done[0]["maxrss_mb"])
                / max(done[-1]["releases"] - done[0]["releases"], 1)
                if len(done) > 1
                else done[0]["maxrss_mb"] - done[0]["import_mb"]
            )
            projected = done[-1]["maxrss_mb"] + slope * (r - done[-1]["releases"])
            if projected > 0.6 * avail:
                rows.append(
                    dict(kind="memory", releases=r, error=f"skipped: projected {projected:,.0f} "
                         f"MB > 60% of the {avail:,.0f} MB available")
                )  # fmt: skip
                continue
        res = run(dict(kind="memory", releases=r), Path(tmp) / "memory")
        print(json.dumps(res), flush=True)
        rows.append(res)
    done = [x for x in rows if "maxrss_mb" in x]
    for x in done:
        x["model_mb"] = x["maxrss_mb"] - x["import_mb"]
        x["grad_ms"] = x["grad_s"] * 1e3
    if len(done) > 1:
        a, b = done[0], done[-1]
        slope = (b["maxrss_mb"] - a["maxrss_mb"]) / (b["releases"] - a["releases"])
        for x in done:
            x["per_release_mb"] = slope
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--quick", action="store_true", help="2 chains x 300 + 300 draws")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--samplers", default="nutpie,pymc")
    ap.add_argument("--releases", default="1,8,32", help="memory case: numbers of releases")
    ap.add_argument("--families", default=",".join(FAMILIES), help="grouped case")
    ap.add_argument("--reports", type=int, default=10_000, help="grouped case: N")
    ap.add_argument(
        "--name", default=NAME, help="results file name (benchmarks/results/NAME.md / .json)"
    )
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    t_start = time.perf_counter()
    info = machine_info()
    cases = args.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        raise SystemExit(f"--cases: unknown {unknown}; choose from {CASES}")
    chains, n = (2, 300) if args.quick else (4, 1000)
    data = {"args": vars(args)}
    label = "QUICK RUN (validation only: 2 chains x 300 + 300)" if args.quick else "full run"
    body = [
        "# Pooled analyses: noise-aware vs naive\n",
        f"{label}; started {info['started']}; command `{info['command']}`.  "
        "See the script's docstring for the models and what each column measures.\n",
    ]
    with tempfile.TemporaryDirectory(prefix="pooled_") as tmp:
        post = [c for c in cases if c in POSTERIOR_CASES]
        if post:
            rows = posterior_rows(post, args.samplers.split(","), n, n, chains, tmp)
            tab = posterior_table(rows)
            data["posterior"] = {"rows": rows, "table": tab}
            body += [
                f"## Time to posterior ({chains} chains x {n} + {n}, cores=1)\n",
                "CPU-s of a fresh process (import + build + sample); ratio = noise-aware / "
                "naive; µs/grad = one compiled logp + gradient (warm process, median); ESS = "
                "min bulk ESS, R-hat = max, over every free variable (warm process).\n",
                md_table(tab, POSTERIOR_COLUMNS),
            ]
            body += [
                f"- failed: {r['case']} / {r['sampler']} / {r['variant']} / {r['caches']}: "
                f"`{r['error']}`\n"
                for r in rows
                if "error" in r
            ]
        if "memory" in cases:
            rows = memory_rows([int(x) for x in args.releases.split(",")], tmp)
            data["memory"] = rows
            body += [
                "## Memory: clamped NoisyPoisson, discrete Gaussian σ = 1000, lower=0\n",
                "Peak resident memory of a fresh process (ru_maxrss) that builds the model "
                "of R releases, compiles logp + gradient and evaluates it; model MB = peak "
                "minus the peak after imports; per release = slope between the smallest "
                "and the largest R.\n",
                md_table(
                    rows,
                    [
                        ("releases", "releases"),
                        ("maxrss_mb", "peak MB"),
                        ("model_mb", "model MB"),
                        ("per_release_mb", "MB per release"),
                        ("compile_cpu", "compile CPU-s"),
                        ("grad_ms", "ms/grad"),
                        ("error", "note"),
                    ],
                ),
            ]
        if "grouped" in cases:
            rows = []
            for fam in args.families.split(","):
                res = run(dict(kind="grouped", family=fam, n=args.reports), Path(tmp) / "grouped")
                if "shared" in res:
                    res["ratio"] = res["grouped"] / res["shared"]
                print(json.dumps(res), flush=True)
                rows.append(res)
            data["grouped"] = rows
            body += [
                f"## Per report: grouped ({G} groups) vs shared parameters\n",
                f"{args.reports:,} reports; ns per report of one compiled logp + gradient "
                f"(Numba, median of {ROUNDS} interleaved rounds, CPU time).\n",
                md_table(
                    rows,
                    [
                        ("family", "family"),
                        ("shared", "shared ns/report"),
                        ("grouped", "grouped ns/report"),
                        ("ratio", "grouped / shared"),
                        ("error", "error"),
                    ],
                ),
            ]
    write_results(args.name, info, "\n".join(body), data, t_start)


if __name__ == "__main__":
    main()
