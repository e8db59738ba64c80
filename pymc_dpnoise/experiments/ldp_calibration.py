"""Reproductions of the papers' calibration experiments (LDP paper Figs. 1, 10 and 11).

Run from the command line (results are cached per configuration in ``results/sbc``)::

    python -m pymc_dpnoise.experiments --mode full      # >= 200 replicates per setting
    python -m pymc_dpnoise.experiments --mode fast      # a few replicates, for CI

Each configuration (distribution, ε, N, replicates, model) is stored as one ``.npz`` file of
posterior quantiles, so an interrupted run resumes and the notebooks can reuse the results.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..diagnostics import (
    DEFAULT_LEVELS,
    ClippedExponentialSBC,
    ClippedNormalSBC,
    HistogramSBC,
    SBCProblem,
    coverage_table,
    ks_uniform,
    plot_coverage,
    simulation_based_calibration,
)

__all__ = ["SETTINGS", "main", "run_grid", "summarise"]

EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0)
#: histogram figures (LDP Fig. 10 has k = 6, N = 1000): the issue asks for 0.1, 0.5 and 2
HIST_EPSILONS = (0.1, 0.5, 1.0, 2.0)

#: experiment settings per mode: (problem factory, epsilons, replicates, NUTS settings)
SETTINGS = {
    "full": {
        "fig1": dict(n=5000, epsilons=EPSILONS, replicates=200, draws=400, tune=300),
        "fig11": dict(n=1000, epsilons=EPSILONS, replicates=200, draws=400, tune=300),
        "fig10": dict(n=1000, epsilons=HIST_EPSILONS, replicates=200, draws=400, tune=300),
        "fig10_krr": dict(n=1000, epsilons=(0.1, 0.5, 2.0), replicates=100, draws=400, tune=300),
    },
    "fast": {
        "fig1": dict(n=500, epsilons=(0.1, 4.0), replicates=6, draws=200, tune=200),
        "fig11": dict(n=300, epsilons=(0.1, 4.0), replicates=6, draws=200, tune=200),
        "fig10": dict(n=300, epsilons=(0.1, 2.0), replicates=6, draws=200, tune=200),
        "fig10_krr": dict(n=300, epsilons=(0.1, 2.0), replicates=6, draws=200, tune=200),
    },
}


def _problem(fig: str, n: int, eps: float) -> SBCProblem:
    if fig == "fig1":
        return ClippedNormalSBC(n=n, lower=-5.0, upper=5.0, epsilon=eps)
    if fig == "fig11":
        return ClippedExponentialSBC(n=n, upper=5.0, epsilon=eps)
    if fig == "fig10":
        return HistogramSBC(n=n, k=6, epsilon=eps, mechanism="oue")
    if fig == "fig10_krr":
        return HistogramSBC(n=n, k=6, epsilon=eps, mechanism="krr")
    raise ValueError(f"unknown figure {fig!r}")


def _key(problem: SBCProblem, noise_aware: bool, replicates: int, draws: int, tune: int, seed):
    d = dataclasses.asdict(problem)
    d.update(
        cls=type(problem).__name__,
        aware=noise_aware,
        R=replicates,
        draws=draws,
        tune=tune,
        seed=seed,
    )
    return d


def _fname(key: dict) -> str:
    name = key["cls"].replace("SBC", "")
    if "mechanism" in key:
        name += "_" + key["mechanism"]
    model = "aware" if key["aware"] else "naive"
    return f"{name}_eps{key['epsilon']:g}_n{key['n']}_R{key['R']}_{model}.npz"


def run_grid(
    fig: str,
    mode: str = "fast",
    cache_dir="results/sbc",
    n_jobs=None,
    seed=2026,
    recompute=False,
    verbose=True,
) -> pd.DataFrame:
    """Run (or load from ``cache_dir``) the SBC grid for one figure; return the coverage table."""
    cfg = SETTINGS[mode][fig]
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    tables = []
    for eps in cfg["epsilons"]:
        problem = _problem(fig, cfg["n"], eps)
        for aware in (True, False):
            key = _key(problem, aware, cfg["replicates"], cfg["draws"], cfg["tune"], seed)
            path = cache / _fname(key)
            if path.exists() and not recompute:
                with np.load(path, allow_pickle=False) as f:
                    stored = json.loads(str(f["key"]))
                    if stored == key:
                        q, names = f["quantiles"], list(f["names"])
                        rhat, div, secs = f["max_rhat"], f["divergences"], float(f["seconds"])
                        if verbose:
                            print(f"[cache] {path.name}")
                    else:
                        q = None
            else:
                q = None
            if q is None:
                t0 = time.time()
                res = simulation_based_calibration(
                    problem,
                    cfg["replicates"],
                    noise_aware=aware,
                    seed=seed,
                    n_jobs=n_jobs,
                    draws=cfg["draws"],
                    tune=cfg["tune"],
                )
                secs = time.time() - t0
                q, names, rhat, div = (
                    res.quantiles,
                    list(res.param_names),
                    res.max_rhat,
                    res.divergences,
                )
                np.savez(
                    path,
                    quantiles=q,
                    names=np.array(names),
                    truths=res.truths,
                    max_rhat=rhat,
                    divergences=div,
                    seconds=secs,
                    key=json.dumps(key),
                )
                if verbose:
                    print(f"[ran {secs:6.0f}s] {path.name}", flush=True)
            tab = coverage_table(q, DEFAULT_LEVELS, band_mass=0.99)
            tab["param"] = [names[i] for i in tab["param"]]
            tab["epsilon"] = eps
            tab["model"] = "noise-aware" if aware else "naive"
            tab["max_rhat"] = float(np.nanmax(rhat))
            tab["divergences"] = int(np.sum(div))
            ks = {names[j]: ks_uniform(q[:, j]) for j in range(q.shape[1])}
            tab["ks"] = [ks[p][0] for p in tab["param"]]
            tab["ks_p"] = [ks[p][1] for p in tab["param"]]
            tab["seconds"] = secs
            tables.append(tab)
            if q.shape[1] > 1 and fig.startswith("fig10"):
                # LDP Fig. 10 pools the components: coverage counted over R * k quantiles
                # (the components of a simplex are dependent, so this band is approximate)
                pooled = coverage_table(q.reshape(-1, 1), DEFAULT_LEVELS, band_mass=0.99)
                pooled["param"] = "theta (pooled)"
                for col in ("epsilon", "model", "max_rhat", "divergences", "seconds"):
                    pooled[col] = tab[col].iloc[0]
                stat, pval = ks_uniform(q.ravel())
                pooled["ks"], pooled["ks_p"] = stat, pval
                tables.append(pooled)
    return pd.concat(tables, ignore_index=True)


def summarise(table: pd.DataFrame, fig: str, out_dir="results/sbc", mode="full"):
    """Write the coverage table (CSV and Markdown) and the coverage plot for one figure."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cols = [
        "model",
        "param",
        "epsilon",
        "level",
        "coverage",
        "band_lo",
        "band_hi",
        "inside",
        "n",
        "ks",
        "ks_p",
        "max_rhat",
        "divergences",
    ]
    t = table[cols].sort_values(["model", "param", "epsilon", "level"])
    t.to_csv(out / f"{fig}_{mode}_coverage.csv", index=False)
    (out / f"{fig}_{mode}_coverage.md").write_text(t.to_markdown(index=False, floatfmt=".3f"))
    plotted = table
    if "theta (pooled)" in set(table["param"]):
        plotted = table[table["param"] == "theta (pooled)"]
    fig_ = plot_coverage(plotted, title=f"LDP {fig}: coverage vs ε ({mode} mode)")
    fig_.savefig(out / f"{fig}_{mode}_coverage.png", dpi=120)
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=sorted(SETTINGS), default="fast")
    ap.add_argument("--figs", nargs="+", default=["fig11", "fig1"])
    ap.add_argument("--out", default="results/sbc")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--recompute", action="store_true")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    for fig in args.figs:
        tab = run_grid(fig, args.mode, args.out, n_jobs=args.jobs, recompute=args.recompute)
        t = summarise(tab, fig, args.out, args.mode)
        print(t.to_string(index=False))


if __name__ == "__main__":
    main()
