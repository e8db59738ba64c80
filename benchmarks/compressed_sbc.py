"""Simulation-based calibration of the compressed (binned-summary) clipped models.

    nice .venv/bin/python benchmarks/compressed_sbc.py [--reps R] [--n N] [--quick]

For the clipped normal and the clipped exponential at ε ∈ {0.1, 1, 4}: R replicates of
prior draw -> N clean values -> Laplace mechanism -> ``summarize`` -> NUTS (nutpie, 2 chains,
500 tuning + 500 draws) on ``LaplacePerturbedClipped*Summary``.  The bin count is the one
``choose_n_bins`` gives for N reports and 0.01 nats over the default parameter box (fixed per
configuration so that the model compiles once and the summary table is swapped as data).
Reported: coverage of central 50/80/90/95/99 % intervals with the 99 % binomial band, the KS
test of the posterior quantiles against Uniform(0, 1), the largest R-hat and the divergences.

The problem classes are the test suite's (``tests/summaries/test_summaries.py``), so the script and the
slow test fit the same models.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import machine_info, md_table, write_results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.n = 4, 1000

    from test_summaries import ClippedExponentialSummarySBC, ClippedNormalSummarySBC

    from pymc_dpnoise.diagnostics import simulation_based_calibration
    from pymc_dpnoise.summaries import choose_n_bins

    t_start = time.perf_counter()
    info = machine_info()
    rows, summary = [], []
    for cls, model in (
        (ClippedNormalSummarySBC, "normal"),
        (ClippedExponentialSummarySBC, "exponential"),
    ):
        for eps in (0.1, 1.0, 4.0):
            lower = -5.0 if model == "normal" else 0.0
            k, bound = choose_n_bins(model, args.n, lower, 5.0, eps, 0.01)
            problem = cls(n=args.n, epsilon=eps, n_bins=k)
            t = time.perf_counter()
            res = simulation_based_calibration(
                problem, args.reps, seed=int(100 * eps), n_jobs=1, draws=500, tune=500
            )
            wall = time.perf_counter() - t
            cov = res.coverage()
            ks = res.ks()
            for r in cov.to_dict("records"):
                rows.append(dict(model=model, eps=eps, bins=k + 2, **r))
            summary.append(
                dict(
                    model=model,
                    eps=eps,
                    N=args.n,
                    bins=k + 2,
                    design_bound=f"{bound:.1e}",
                    reps=args.reps,
                    all_inside=bool(cov["inside"].all()),
                    ks_p=", ".join(
                        f"{p}: {v:.2f}" for p, v in zip(ks["param"], ks["p_value"], strict=True)
                    ),
                    max_rhat=float(np.nanmax(res.max_rhat)),
                    divergences=int(np.sum(res.divergences)),
                    wall_s=round(wall, 1),
                )
            )
            print(summary[-1], flush=True)
            body = (
                "## SBC of the compressed clipped models\n\n"
                f"N = {args.n} reports per replicate, nutpie 2 chains x (500 tune + 500 draws), "
                "bins from `choose_n_bins(tol=0.01)`.\n\n"
                + md_table(summary, [(c, c) for c in summary[0]])
                + "\n\n### Coverage (99 % binomial band)\n\n"
                + md_table(rows, [(c, c) for c in rows[0]])
            )
            write_results(
                "compressed_sbc", info, body, dict(summary=summary, coverage=rows), t_start
            )


if __name__ == "__main__":
    main()
