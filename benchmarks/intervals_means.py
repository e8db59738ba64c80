"""Coverage and cost of ``pymc_dpnoise.intervals.mean_intervals`` on OpenDP releases.

A group's mean is released as a noisy sum of values clamped to [0, 10] and a noisy count,
both by OpenDP (``make_laplace`` on an ``f64`` vector for the sums: Laplace noise; on a ``u32``
vector for the counts: discrete Laplace, censored at 0; and ``make_gaussian`` for both in the
zCDP case), and read back with the measurements themselves.

1. **Drawn from the prior** (count flat on 1..200, passed as ``n=200``; mean uniform on
   [0, 10]; true sum = count x mean): the equal-tailed intervals must cover at the level
   (continuous posterior): z = (coverage - level) / se.
2. **Fixed truths** (count, mean) with the default prior (count flat on all c >= 1):
   frequentist coverage and median width.
3. Cost: ms per release (batches of 200).

Run from the repository root::

    .venv/bin/python benchmarks/intervals_means.py            # full
    .venv/bin/python benchmarks/intervals_means.py --quick    # smoke test
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_info, md_table, write_results

from pymc_dpnoise.intervals import mean_intervals

LEVELS = (0.5, 0.9, 0.95)
N_PRIOR, LOWER, UPPER = 200, 0.0, 10.0


def scenarios(dp):
    """(label, sum measurement, count measurement)."""
    out = []
    for s_scale, c_scale in ((10.0, 1.0), (50.0, 5.0)):
        s_meas = dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T="f64", nan=False)), dp.l1_distance(T="f64"),
            scale=s_scale,
        )  # fmt: skip
        c_meas = dp.m.make_laplace(
            dp.vector_domain(dp.atom_domain(T="u32")), dp.l1_distance(T="u32"), scale=c_scale
        )
        out.append((f"laplace: sum b={s_scale:g}, count (u32) b={c_scale:g}", s_meas, c_meas))
    s_meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T="f64", nan=False)), dp.l2_distance(T="f64"), scale=20.0
    )
    c_meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), scale=2.0
    )
    out.append(("gaussian: sum s=20, count (i64) s=2", s_meas, c_meas))
    return out


def release(s_meas, c_meas, counts, sums):
    zs = np.asarray(s_meas([float(v) for v in sums]), dtype="float64")
    zc = np.asarray(c_meas([int(v) for v in counts]), dtype="int64")
    return zs, zc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke test: fewer releases")
    ap.add_argument("--seed", type=int, default=20261208)
    args = ap.parse_args()
    t0, info = time.perf_counter(), machine_info()
    import opendp.prelude as dp

    dp.enable_features("contrib")
    rng = np.random.default_rng(args.seed)
    reps = 400 if args.quick else 4000
    prior, fixed, timing = [], [], []
    for label, s_meas, c_meas in scenarios(dp):
        counts = rng.integers(1, N_PRIOR + 1, reps)
        mu = rng.uniform(LOWER, UPPER, reps)
        zs, zc = release(s_meas, c_meas, counts, counts * mu)
        for level in LEVELS:
            iv = mean_intervals(zs, zc, s_meas, c_meas, level, lower=LOWER, upper=UPPER, n=N_PRIOR)
            cov = float(np.mean((iv.lo <= mu) & (mu <= iv.hi)))
            se = math.sqrt(level * (1 - level) / reps)
            prior.append({"scenario": label, "level": level, "reps": reps, "coverage": cov,
                          "se": se, "z": (cov - level) / se})  # fmt: skip
        for c, m in ((5, 2.0), (30, 9.5), (150, 5.0)):
            k = reps // 4
            zs, zc = release(s_meas, c_meas, np.full(k, c), np.full(k, c * m))
            iv = mean_intervals(zs, zc, s_meas, c_meas, 0.9, lower=LOWER, upper=UPPER)
            cov = float(np.mean((iv.lo <= m) & (m <= iv.hi)))
            fixed.append({"scenario": label, "count": c, "mean": m, "reps": k, "coverage": cov,
                          "se": math.sqrt(max(cov * (1 - cov), 1e-12) / k),
                          "width": float(np.median(iv.hi - iv.lo))})  # fmt: skip
        per = []
        for _ in range(5):
            t = time.perf_counter()
            mean_intervals(zs[:200], zc[:200], s_meas, c_meas, 0.9, lower=LOWER, upper=UPPER)
            per.append((time.perf_counter() - t) / 200 * 1e3)
        timing.append({"scenario": label, "ms": float(np.median(per))})
        print(label, "done", f"{time.perf_counter() - t0:.0f} s", flush=True)
    worst = max(abs(r["z"]) for r in prior)
    body = [
        "# Mean intervals from a noisy sum and a noisy count (OpenDP releases)",
        "",
        "`pymc_dpnoise.intervals.mean_intervals`, equal-tailed; values clamped to [0, 10].",
        "",
        f"## 1. Drawn from the prior (count flat on 1..{N_PRIOR}, mean uniform on [0, 10])",
        "",
        f"Coverage must equal the level: largest |z| over {len(prior)} rows: **{worst:.2f}**.",
        "",
        md_table(
            prior,
            [
                ("scenario", "OpenDP releases"),
                ("level", "level"),
                ("reps", "releases"),
                ("coverage", "coverage"),
                ("se", "se"),
                ("z", "z"),
            ],
        ),
        "## 2. Fixed true count and mean, default prior (count flat on c >= 1), level 0.9",
        "",
        md_table(
            fixed,
            [
                ("scenario", "OpenDP releases"),
                ("count", "true count"),
                ("mean", "true mean"),
                ("reps", "releases"),
                ("coverage", "coverage"),
                ("se", "se"),
                ("width", "median width"),
            ],
        ),
        "## 3. Cost",
        "",
        "`mean_intervals(...)` at level 0.9 on batches of 200 releases (median of 5), ms per "
        "release; wall time on a shared, loaded 2-core machine.",
        "",
        md_table(timing, [("scenario", "OpenDP releases"), ("ms", "ms / release")]),
    ]
    data = {"prior": prior, "fixed": fixed, "timing": timing}
    write_results("intervals_means", info, "\n".join(body), data, t0)


if __name__ == "__main__":
    main()
