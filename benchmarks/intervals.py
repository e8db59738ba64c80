"""Coverage, width and cost of ``pymc_dpnoise.intervals`` on releases made by OpenDP.

Every release here is made by the real OpenDP library (its samplers, its clamps), on a vector
of true counts at once: ``make_laplace`` on ``u32`` counts (discrete Laplace, censored at 0 by
the saturating cast), ``make_geometric`` and ``make_gaussian`` on ``i64`` counts (discrete
Laplace, discrete Gaussian), and ``make_laplace`` / ``make_gaussian`` on ``f64`` (continuous
noise; counts as floats, and the noise step of a clamp-sum chain for the sums).  The noise
and the clamp are read from the measurement itself (``count_intervals(z, meas)``).

1. **Counts drawn from the prior** (flat on 0..n, n = 200, passed as ``n=``): the intervals
   must cover at the rate ``E[mass]`` (their mean posterior probability, at least the level;
   exactly the level for continuous sums).  Reported: coverage, its binomial standard error,
   ``E[mass]`` and the z-score of the difference.
2. **Fixed true counts** (0, 3, 100) with the default prior (flat on all counts >= 0, no
   ``n``): frequentist coverage, next to the coverage of OpenDP's own accuracy interval
   ``z +- accuracy`` (``opendp.accuracy.*_scale_to_accuracy(scale, alpha)``: P(|noise| >=
   accuracy) = alpha; the integer kinds' accuracy floored, as its docs allow), and the widths
   (``hi - lo`` against ``2 * accuracy``).
3. **Cost**: ``count_intervals`` on batches of 1,000 releases, median over batches, ms per
   release; and one call with a single release.

Tumult Analytics and python-dp are not installed in this environment (Tumult pins
``numpy < 2``): their releases are the same noise kinds (``noise.from_tumult`` /
``noise.from_python_dp``) and are not simulated here.

Run from the repository root::

    .venv/bin/python benchmarks/intervals.py            # full (a few minutes)
    .venv/bin/python benchmarks/intervals.py --quick    # smoke test
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

from pymc_dpnoise.intervals import count_intervals, sum_intervals

LEVELS = (0.5, 0.9, 0.95)
N_PRIOR = 200
FIXED = (0, 3, 100)
RULES = ("hpd", "equal-tailed")


def opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


def count_measurements(dp):
    """(label, measurement, OpenDP accuracy function, scale, integer?) per scenario."""
    from opendp import accuracy as acc

    def vec(T):
        return dp.vector_domain(
            dp.atom_domain(T=T) if T != "f64" else dp.atom_domain(T=T, nan=False)
        )

    dl, dg = acc.discrete_laplacian_scale_to_accuracy, acc.discrete_gaussian_scale_to_accuracy
    table = [
        ("make_laplace u32 (DL, clamp 0) b", dp.m.make_laplace, "u32", dp.l1_distance, dl, s)
        for s in (0.5, 2.0, 10.0, 50.0)
    ]
    table += [
        ("make_gaussian i64 (DG) s", dp.m.make_gaussian, "i64", dp.l2_distance, dg, s)
        for s in (0.5, 2.0, 10.0, 50.0)
    ]
    table += [("make_geometric i64 (DL) b", dp.m.make_geometric, "i64", dp.l1_distance, dl, 5.0)]
    for s in (2.0, 10.0):
        table += [
            ("make_laplace f64 (Laplace) b", dp.m.make_laplace, "f64", dp.l1_distance,
             acc.laplacian_scale_to_accuracy, s),
            ("make_gaussian f64 (Gaussian) s", dp.m.make_gaussian, "f64", dp.l2_distance,
             acc.gaussian_scale_to_accuracy, s),
        ]  # fmt: skip
    return [
        (f"{label}={s:g}", make(vec(T), metric(T=T), scale=s), acc_fn, s, T != "f64")
        for label, make, T, metric, acc_fn, s in table
    ]


def release(meas, counts, integer):
    values = [int(c) for c in counts] if integer else [float(c) for c in counts]
    return np.asarray(meas(values), dtype="int64" if integer else "float64")


def binom_se(p, m):
    return math.sqrt(max(p * (1 - p), 1e-12) / m)


def prior_rows(label, meas, integer, reps, rng):
    counts = rng.integers(0, N_PRIOR + 1, reps)
    z = release(meas, counts, integer)
    rows = []
    for rule in RULES:
        for level in LEVELS:
            iv = count_intervals(z, meas, level, n=N_PRIOR, interval=rule)
            cov = float(np.mean((iv.lo <= counts) & (counts <= iv.hi)))
            expect = float(np.mean(iv.mass))
            # under calibration each release covers with probability its mass: the coverage
            # rate's variance is mean(mass (1 - mass)) / releases
            se = max(math.sqrt(float(np.mean(iv.mass * (1 - iv.mass))) / reps), 1e-12)
            rows.append(
                {"scenario": label, "rule": rule, "level": level, "reps": reps, "coverage": cov,
                 "se": se, "expected": expect, "z": (cov - expect) / se}
            )  # fmt: skip
    return rows


def fixed_rows(label, meas, acc_fn, scale, integer, reps):
    rows = []
    for c in FIXED:
        z = release(meas, np.full(reps, c), integer)
        for level in LEVELS:
            a = float(acc_fn(scale, 1.0 - level))
            a = math.floor(a) if integer else a
            # OpenDP: P(|noise| >= accuracy) = alpha, so z +- floor(accuracy) (integers) or the
            # open interval z +- accuracy (reals) covers with probability 1 - alpha
            in_acc = np.abs(z - c) <= a if integer else np.abs(z - c) < a
            row = {"scenario": label, "count": c, "level": level, "reps": reps,
                   "opendp_coverage": float(np.mean(in_acc)), "opendp_width": 2 * a}  # fmt: skip
            for rule, key in (("hpd", "hpd"), ("equal-tailed", "et")):
                iv = count_intervals(z, meas, level, interval=rule)
                row[f"{key}_coverage"] = float(np.mean((iv.lo <= c) & (c <= iv.hi)))
                row[f"{key}_width"] = float(np.median(iv.hi - iv.lo))
            rows.append(row)
    return rows


def timing_rows(label, meas, integer, rng, batches):
    counts = rng.integers(0, N_PRIOR + 1, 1000 * batches)
    z = release(meas, counts, integer)
    per = []
    for b in range(batches):
        t = time.perf_counter()
        count_intervals(z[b * 1000 : (b + 1) * 1000], meas, 0.95)
        per.append((time.perf_counter() - t) / 1000 * 1e3)
    single = []
    for k in range(30):
        t = time.perf_counter()
        count_intervals(z[k : k + 1], meas, 0.95)
        single.append((time.perf_counter() - t) * 1e3)
    return {
        "scenario": label,
        "ms_per_release_batch": float(np.median(per)),
        "ms_single_call": float(np.median(single)),
        "batches": batches,
    }


def sum_rows(dp, reps, rng):
    """The noise step of ``make_clamp((0, 10)) >> then_sum >> then_laplace / then_gaussian``
    on n = 100 values, applied to true sums drawn flat on [0, 1000] (the prior)."""
    from opendp import accuracy as acc

    n, lower, upper = 100, 0.0, 10.0
    rows = []
    cases = (
        ("then_laplace (Laplace)", dp.m.make_laplace, acc.laplacian_scale_to_accuracy),
        ("then_gaussian (Gaussian)", dp.m.make_gaussian, acc.gaussian_scale_to_accuracy),
    )
    for name, make, acc_fn in cases:
        for scale in (5.0, 50.0):
            meas = make(
                dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=scale
            )
            s = rng.uniform(n * lower, n * upper, reps)
            z = np.array([meas(float(v)) for v in s])
            for rule in RULES:
                for level in LEVELS:
                    iv = sum_intervals(z, meas, level, n=n, lower=lower, upper=upper, interval=rule)
                    cov = float(np.mean((iv.lo <= s) & (s <= iv.hi)))
                    se = binom_se(level, reps)  # calibrated: each covers w.p. the level
                    rows.append(
                        {"scenario": f"sum {name} scale={scale:g}", "rule": rule, "level": level,
                         "reps": reps, "coverage": cov, "se": se, "z": (cov - level) / se,
                         "width_median": float(np.median(iv.hi - iv.lo)),
                         "opendp_width": 2 * float(acc_fn(scale, 1.0 - level))}
                    )  # fmt: skip
    return rows


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke test: fewer releases")
    ap.add_argument("--seed", type=int, default=20261207)
    return ap.parse_args()


def main():
    t0, info, dp = time.perf_counter(), machine_info(), opendp()
    args = parse_args()
    rng = np.random.default_rng(args.seed)
    reps_prior, reps_fixed, batches = (2000, 1000, 3) if args.quick else (20000, 10000, 15)
    prior, fixed, timing = [], [], []
    for label, meas, acc_fn, scale, integer in count_measurements(dp):
        prior += prior_rows(label, meas, integer, reps_prior, rng)
        fixed += fixed_rows(label, meas, acc_fn, scale, integer, reps_fixed)
        timing.append(timing_rows(label, meas, integer, rng, batches))
        print(label, "done", f"{time.perf_counter() - t0:.0f} s", flush=True)
    sums = sum_rows(dp, reps_prior // 4, rng)
    worst = max(abs(r["z"]) for r in prior + sums)
    over3 = sum(abs(r["z"]) > 3 for r in prior + sums)
    body = [
        "# Intervals in one call: coverage, width and cost on OpenDP releases",
        "",
        "`pymc_dpnoise.intervals.count_intervals` / `sum_intervals` on releases made by OpenDP "
        "0.16 (vector measurements applied to the true counts; noise and clamp read from the "
        "measurement).  Two rules: HPD (the default) and equal-tailed; `mass` is each interval's "
        "posterior probability (at least the level, more when the posterior sits on few "
        "integers).  Tumult and python-dp are not installed here (see the script's docstring).",
        "",
        f"## 1. Counts drawn from the prior (flat on 0..{N_PRIOR}, `n={N_PRIOR}`)",
        "",
        "Coverage must equal `E[mass]` (exact Bayesian calibration): z = (coverage - E[mass]) / "
        "se, se = sqrt(mean(mass (1 - mass)) / releases) (each release covers with probability "
        "its interval's mass; with sigma = 0.5 nearly every mass is 1 and so is the coverage)"
        f".  Largest |z| over the {len(prior) + len(sums)} rows here and in section 4: "
        f"**{worst:.2f}**; rows with |z| > 3: {over3} (under calibration about 0.3% of rows).",
        "",
        md_table(
            prior,
            [
                ("scenario", "OpenDP release"),
                ("rule", "rule"),
                ("level", "level"),
                ("reps", "releases"),
                ("coverage", "coverage"),
                ("se", "se"),
                ("expected", "E[mass]"),
                ("z", "z"),
            ],
        ),
        "## 2. Fixed true counts, default prior (flat on all counts >= 0)",
        "",
        f"{reps_fixed:,} releases per row.  Frequentist coverage of the credible intervals (HPD, "
        "the default, and equal-tailed) next to OpenDP's accuracy interval `z +- accuracy` "
        "(`opendp.accuracy`, alpha = 1 - level), and the median widths `hi - lo` against "
        "OpenDP's `2 * accuracy` (binomial se of a coverage p: sqrt(p(1-p)/releases), at most "
        f"{0.5 / math.sqrt(reps_fixed):.4f}).  OpenDP's interval ignores the clamp and that "
        "counts are >= 0; the credible intervals use both, so near 0 they are narrower and their "
        "frequentist coverage is not the level: the equal-tailed rule leaves 0 out when the "
        "posterior piles up there.",
        "",
        md_table(
            fixed,
            [
                ("scenario", "OpenDP release"),
                ("count", "true count"),
                ("level", "level"),
                ("hpd_coverage", "HPD coverage"),
                ("et_coverage", "equal-tailed coverage"),
                ("opendp_coverage", "OpenDP interval coverage"),
                ("hpd_width", "HPD median width"),
                ("et_width", "equal-tailed median width"),
                ("opendp_width", "OpenDP width"),
            ],
        ),
        "## 3. Cost",
        "",
        f"`count_intervals(z, meas, 0.95)` (HPD): median over {batches} batches of 1,000 "
        "releases (ms per release), and the median of 30 calls with one release (ms per call, "
        "including reading the measurement).  Wall time on a shared, loaded 2-core machine (load "
        "average below): compare rows within this run only.",
        "",
        md_table(
            timing,
            [
                ("scenario", "OpenDP release"),
                ("ms_per_release_batch", "ms / release (batch of 1,000)"),
                ("ms_single_call", "ms / call (1 release)"),
            ],
        ),
        "## 4. Sums: clamped sum of n = 100 values in [0, 10], true sum flat on [0, 1000]",
        "",
        "Continuous noise: coverage must equal the level; z = (coverage - level) / se.",
        "",
        md_table(
            sums,
            [
                ("scenario", "OpenDP noise step"),
                ("rule", "rule"),
                ("level", "level"),
                ("reps", "releases"),
                ("coverage", "coverage"),
                ("se", "se"),
                ("z", "z"),
                ("width_median", "median width"),
                ("opendp_width", "OpenDP width"),
            ],
        ),
    ]
    data = {"prior": prior, "fixed": fixed, "timing": timing, "sums": sums}
    write_results("intervals", info, "\n".join(body), data, t0)


if __name__ == "__main__":
    main()
