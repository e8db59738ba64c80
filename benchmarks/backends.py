"""Every NUTS backend on the same noise-aware model: time, ESS/s and agreement of posteriors.

Model: mu ~ Normal(0, 5), sigma ~ Gamma(2, 1),
``pmd.LaplacePerturbedClippedNormal(mu, sigma, lower=-5, upper=5, epsilon=1)`` observed on
N = 5,000 reports of x ~ Normal(1, 2).

For each ``nuts_sampler`` in ("pymc", "nutpie", "numpyro"): one
``pm.sample(nuts_sampler=s, chains=2, cores=2, tune=1000, draws=1000, random_seed=...)`` in a
fresh model; the wall time of that call (compilation + tuning + draws) is reported, together
with the sampling time the sampler records itself when it does (``posterior.attrs``), the min
bulk ESS over (mu, sigma), ESS/s (min bulk ESS / total wall time), R-hat, divergences and the
posterior means and sds.  Agreement: for every pair of samplers and every statistic (mean and
sd of mu and sigma) the standardized difference |a - b| / sqrt(mcse_a^2 + mcse_b^2) (mcse from
``arviz.mcse``, method "mean" or "sd"); under agreement these are ~|N(0, 1)|, so a maximum
over the 12 pairs x statistics above ~3.5 would be suspicious.

JAX is given two host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=2``, set
before jax is imported) so that numpyro runs its 2 chains in parallel like the other samplers.

Run: ``.venv/bin/python benchmarks/backends.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
).strip()

import argparse
import itertools
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
from _common import Timer, machine_info, md_table, write_results

import pymc_dpnoise as pmd

NAME = "backends"
SAMPLERS = ("pymc", "nutpie", "numpyro")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="N = 1000, 300/300 draws")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    info["XLA_FLAGS"] = os.environ["XLA_FLAGS"]
    n = 1000 if args.quick else 5000
    tune = draws = 300 if args.quick else 1000
    rng = np.random.default_rng(5000)
    z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, n), -5.0, 5.0, 1.0, rng)

    rows, draws_by = [], {}
    for i, s in enumerate(SAMPLERS):
        with pm.Model():
            mu = pm.Normal("mu", 0.0, 5.0)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            pmd.LaplacePerturbedClippedNormal(
                "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=z
            )
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                with Timer() as t:
                    idata = pm.sample(
                        draws=draws,
                        tune=tune,
                        chains=2,
                        cores=2,
                        nuts_sampler=s,
                        random_seed=100 + i,
                        progressbar=False,
                        compute_convergence_checks=False,
                    )
        post = idata["posterior"]
        x = {v: np.asarray(post[v].values, dtype=float) for v in ("mu", "sigma")}
        draws_by[s] = x
        attrs = dict(post.attrs)
        row = {
            "sampler": s,
            "total_s": t.wall,
            "total_cpu_s": t.cpu,
            "sampling_time_attr_s": attrs.get("sampling_time"),
            "warnings": sorted(
                {
                    f"{w.category.__name__}: {str(w.message).splitlines()[0][:200]}"
                    for w in rec
                    if "BLAS" not in str(w.message)
                }
            ),
        }
        for v, a in x.items():
            row[f"mean_{v}"] = float(a.mean())
            row[f"sd_{v}"] = float(a.std(ddof=1))
            row[f"ess_bulk_{v}"] = float(az.ess(a, method="bulk"))
            row[f"rhat_{v}"] = float(az.rhat(a))
            row[f"mcse_mean_{v}"] = float(az.mcse(a, method="mean"))
            row[f"mcse_sd_{v}"] = float(az.mcse(a, method="sd"))
        row["ess_min"] = min(row["ess_bulk_mu"], row["ess_bulk_sigma"])
        row["rhat_max"] = max(row["rhat_mu"], row["rhat_sigma"])
        row["ess_per_s_total"] = row["ess_min"] / t.wall
        st = row["sampling_time_attr_s"]
        row["ess_per_s_sampling"] = row["ess_min"] / st if st else None
        ss = idata["sample_stats"]
        row["divergences"] = int(np.asarray(ss["diverging"].values).sum())
        rows.append(row)
        print(
            f"{s:8s} total {t.wall:6.1f}s (sampling attr {st}) ESS {row['ess_min']:.0f} "
            f"ESS/s {row['ess_per_s_total']:.1f} mu {row['mean_mu']:.4f}±{row['sd_mu']:.4f} "
            f"sigma {row['mean_sigma']:.4f}±{row['sd_sigma']:.4f} R-hat {row['rhat_max']:.3f} "
            f"div {row['divergences']}",
            flush=True,
        )

    by = {r["sampler"]: r for r in rows}
    pairs = []
    for a, b in itertools.combinations(SAMPLERS, 2):
        for v in ("mu", "sigma"):
            for stat, mc in (("mean", "mcse_mean"), ("sd", "mcse_sd")):
                d = by[a][f"{stat}_{v}"] - by[b][f"{stat}_{v}"]
                se = np.hypot(by[a][f"{mc}_{v}"], by[b][f"{mc}_{v}"])
                pairs.append({"pair": f"{a} vs {b}", "stat": f"{stat}({v})", "z": float(d / se)})
    max_z = max(abs(p["z"]) for p in pairs)
    print(f"max standardized difference across samplers: {max_z:.2f}")

    cols = [
        ("sampler", "nuts_sampler"),
        ("total_s", "compile+sample wall s"),
        ("sampling_time_attr_s", "sampling s (sampler's own)"),
        ("ess_bulk_mu", "bulk ESS mu"),
        ("ess_bulk_sigma", "bulk ESS sigma"),
        ("ess_per_s_total", "min ESS / total s"),
        ("ess_per_s_sampling", "min ESS / sampling s"),
        ("rhat_max", "max R-hat"),
        ("divergences", "divergences"),
        ("mean_mu", "mean mu"),
        ("sd_mu", "sd mu"),
        ("mean_sigma", "mean sigma"),
        ("sd_sigma", "sd sigma"),
    ]
    all_w = sorted({f"[{r['sampler']}] {w}" for r in rows for w in r["warnings"]})
    md = [
        "# NUTS backends on the noise-aware model",
        "",
        f"N = {n} reports, epsilon = 1, clip [-5, 5], x ~ Normal(1, 2); priors mu ~ Normal(0, 5), "
        f"sigma ~ Gamma(2, 1). `pm.sample(nuts_sampler=s, chains=2, cores=2, tune={tune}, "
        f"draws={draws})`, one call per sampler, each in a fresh model (so each compiles).",
        "",
        md_table(rows, cols),
        f"**Max standardized difference** |a - b| / sqrt(mcse_a² + mcse_b²) over all sampler "
        f"pairs and (mean, sd) x (mu, sigma): **{max_z:.2f}** (12 comparisons; agreement "
        "within Monte Carlo error if below ~3.5).",
        "",
        md_table(pairs, [("pair", "pair"), ("stat", "statistic"), ("z", "standardized diff")]),
        "Warnings raised (BLAS warning omitted):",
        "",
        *([f"- {w}" for w in all_w] or ["- none"]),
        "",
    ]
    write_results(
        NAME, info, "\n".join(md), {"rows": rows, "pairs": pairs, "max_abs_z": max_z}, t_start
    )


if __name__ == "__main__":
    main()
