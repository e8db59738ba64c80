"""Per-report cost of logp + gradient with grouped parameters vs shared ones, every per-report family.

The same 10,000 reports are scored twice by each per-report family: once with shared
parameters (one value for every report) and once with parameters that vary by group
(``mu=mu_g[group]``, 50 groups of 200 reports, the group index unsorted).  Each variant is a
function of its free parameters returning the summed log likelihood and its gradient,
compiled in PyMC's default mode (Numba) through ``pm.logp`` of the distribution; the
functions of one family are called in interleaved rounds (``_common.time_variants``) and the
value is the median per-call CPU time, divided by the number of reports.  The ratio
grouped/shared is the figure the target (<= 1.5) is about.

``--label before`` / ``--label after`` stores the run under that label in
``results/grouped_cost.json`` (the other label's rows are kept), and the Markdown shows both.

Run: ``.venv/bin/python benchmarks/grouped_cost.py --label after`` (``--families``,
``--rounds 7``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NAME = "grouped_cost"
N_GROUPS, PER_GROUP = 50, 200
N = N_GROUPS * PER_GROUP


def _group_index(rng):
    return rng.permutation(np.repeat(np.arange(N_GROUPS), PER_GROUP)).astype("int64")


def _family(name, rng):
    """``(dist(params) -> distribution, observed reports, {param: (shared value, group values)})``:
    the grouped parameters are given per group; the rest are constants of the family."""
    import pymc_dpnoise as pmd

    g = N_GROUPS
    if name == "clipped normal":
        z = rng.normal(1.0, 2.0, N) + rng.laplace(0.0, 3.0 / 1.0, N)

        def dist(mu):
            return pmd.LaplacePerturbedClippedNormal.dist(
                mu=mu, sigma=1.5, lower=-1.0, upper=2.0, epsilon=1.0
            )

        return dist, z, {"mu": (0.5, rng.normal(0.5, 0.3, g))}
    if name == "clipped exponential":
        z = np.minimum(rng.exponential(1.0, N), 3.0) + rng.laplace(0.0, 3.0, N)

        def dist(lam):
            return pmd.LaplacePerturbedClippedExponential.dist(lam=lam, upper=3.0, epsilon=1.0)

        return dist, z, {"lam": (1.0, rng.uniform(0.5, 1.5, g))}
    if name in ("k-RR", "OUE", "SUE"):
        k = 8
        p0 = np.full(k, 1.0 / k)
        pg = rng.dirichlet(np.ones(k) * 5, g)
        if name == "k-RR":
            z = rng.integers(0, k, N)
            cls = pmd.KRRLikelihood
        else:
            z = (rng.random((N, k)) < 0.3).astype("int8")
            cls = pmd.OUELikelihood if name == "OUE" else pmd.SUELikelihood

        def dist(p):
            return cls.dist(p=p, epsilon=1.0)

        return dist, z, {"p": (p0, pg)}
    if name == "linear regression":
        d = 2
        x = rng.normal(size=(N, d))
        y = x @ np.array([1.0, -0.5]) + rng.normal(size=N)
        z = np.column_stack([x + rng.normal(0, 0.5, (N, d)), y + rng.normal(0, 0.5, N)])

        def dist(theta):
            return pmd.PerturbedLinReg.dist(
                theta=theta, sigma=1.0, cov=np.eye(d), sigma_x=0.5, sigma_y=0.5
            )

        return dist, z, {"theta": (np.array([1.0, -0.5]), rng.normal([1.0, -0.5], 0.2, (g, d)))}
    raise ValueError(name)


FAMILIES = ("clipped normal", "clipped exponential", "k-RR", "OUE", "SUE", "linear regression")


def _compile(name, grouped, rng_seed=0):
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(rng_seed)
    dist, z, params = _family(name, rng)
    idx = _group_index(rng)
    (pname, (shared, per_group)) = next(iter(params.items()))
    val = per_group if grouped else np.asarray(shared, dtype="float64")
    x = pt.tensor(pname, shape=val.shape, dtype="float64")
    arg = x[idx] if grouped else x
    logp = pm.logp(dist(arg), pt.as_tensor(z)).sum()
    f = pytensor.function([x], [logp, pytensor.grad(logp, x)], trust_input=True)
    f(val)
    return lambda: f(val)


def main():
    sys.path.insert(0, str(HERE))
    from _common import machine_info, md_table, time_variants, write_results

    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--label", default="after")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    out = HERE / "results" / f"{NAME}.json"
    old = json.loads(out.read_text()) if out.exists() else {}
    runs = {k: v for k, v in old.get("runs", {}).items() if k != args.label}
    rows = []
    for name in args.families.split(","):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fns = {v: _compile(name, v == "grouped") for v in ("shared", "grouped")}
        _, cpu, _ = time_variants(fns, args.rounds)
        s, g = (statistics.median(cpu[v]) * 1e9 / N for v in ("shared", "grouped"))
        rows.append({"family": name, "shared_ns": s, "grouped_ns": g, "ratio": g / s})
        print(args.label, rows[-1], flush=True)
    runs[args.label] = rows
    cols = [
        ("family", "family"),
        ("shared_ns", "shared ns/report"),
        ("grouped_ns", "grouped ns/report"),
        ("ratio", "grouped / shared"),
    ]
    body = [
        f"# Grouped vs shared parameters: logp + gradient per report\n\n"
        f"{N:,} reports; grouped = {N_GROUPS} groups × {PER_GROUP} reports, unsorted index, "
        f"`param=param_g[group]`; PyMC's default mode (Numba); median CPU over "
        f"{args.rounds} interleaved rounds.  Target: grouped / shared <= 1.5.\n\n"
        f"Command: `{' '.join([Path(sys.executable).name, *sys.argv])}`\n"
    ]
    for label in sorted(runs, key=lambda k: (k != "before", k)):
        body.append(f"\n## {label}\n\n" + md_table(runs[label], cols))
    write_results(NAME, info, "\n".join(body), {"runs": runs}, t_start)


if __name__ == "__main__":
    main()
