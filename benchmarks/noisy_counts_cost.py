"""Cost of one release's log-likelihood + gradient for NoisyBinomial, against n and the noise scale.

For each noise kind, noise parameter (scale or sigma) and number of records n, the function
``p -> (sum logp, d/dp)`` of ``NoisyBinomial(n, p, noise)`` over R = 64 releases (observed
constants drawn from the mechanism at p = 0.3) is compiled with PyTensor's default mode
(Numba, as PyMC and nutpie run it) and timed: the median of 7 rounds of batches lasting about
30 ms, divided by R, is the cost per release.  The table reports it and, per kind and noise
parameter, the ratio of the cost at n = 1e7 to the cost at n = 1e3 (the issue's "within 5x").

The same again with the release clamped at 0 (``lower=0``, OpenDP's saturating cast; the
releases are max(z, 0)): the graph then also evaluates the atom at 0, P(S + N <= 0), for every
release.

Laplace kinds are closed forms (O(1) in n and in the scale); the Gaussian kinds' pmf / pdf sums
a window of 2W + 1 counts, W ~ 9.6 / sqrt(1/sigma^2 + 4/(n+2)), capped at the support 0..n,
and where that window would exceed 2,501 terms the hybrid sum (1,001 exact terms near the ends
of the support, else 81 trapezoidal nodes): "terms" counts the larger branch, both are
evaluated.  The clamp atoms keep windows of up to ~24 sigma terms (bounded in n, not flat).

Run: ``.venv/bin/python benchmarks/noisy_counts_cost.py`` (``--quick``: two cells per kind).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from _common import Timer, machine_info, md_table, write_results

from pymc_dpnoise import noise
from pymc_dpnoise.math.noisy_counts import HYBRID_MIN_HALF, HYBRID_UNIT_HALF, window_half_width

R = 64
KINDS = {
    "laplace": noise.Laplace,
    "discrete_laplace": noise.DiscreteLaplace,
    "rounded_laplace": noise.RoundedLaplace,
    "gaussian": noise.Gaussian,
    "discrete_gaussian": noise.DiscreteGaussian,
}


def cells(quick):
    ns = (1e3, 1e7) if quick else (1e3, 1e5, 1e7, 1e8)
    out = []
    for kind in KINDS:
        params = (3.0,) if "laplace" in kind else ((1.0, 100.0) if quick else (0.05, 10.0, 1e4))
        for prm in params:
            for n in ns:
                out.append((kind, prm, n))
    return out


def build(kind, prm, n, lower=None):
    import pymc_dpnoise as pmd

    spec = KINDS[kind](prm)
    rng = np.random.default_rng(0)
    z = spec.release(rng.binomial(int(n), 0.3, size=R), rng)
    if lower is not None:
        z = np.maximum(z, lower)
    p = pt.dscalar("p")
    dist = pmd.NoisyBinomial.dist(n=n, p=p, noise=spec, lower=lower, size=R)
    logp = pm.logp(dist, z).sum()
    with Timer() as t:
        f = pytensor.function([p], [logp, pt.grad(logp, p)])
        f(0.3)
    return f, t.cpu


def time_call(f, rounds=7, batch_seconds=0.03):
    reps = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            f(0.3)
        if time.perf_counter() - t0 > batch_seconds or reps > 1e5:
            break
        reps *= 2
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            f(0.3)
        out.append((time.perf_counter() - t0) / reps)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    rows = []
    for kind, prm, n in cells(args.quick):
        f, compile_cpu = build(kind, prm, n)
        per = time_call(f) / R
        f0, _ = build(kind, prm, n, lower=0)
        per0 = time_call(f0) / R
        w = window_half_width(prm, 4.0 / (n + 2.0)) if "gaussian" in kind else None
        terms = None if w is None else int(min(n + 1, 2 * w + 1))
        if terms is not None and n + 1 > 2 * w + 1 and w > HYBRID_MIN_HALF:
            terms = 2 * HYBRID_UNIT_HALF + 1
        rows.append(
            dict(
                kind=kind,
                param=prm,
                n=n,
                us_per_release=per * 1e6,
                us_clamped=per0 * 1e6,
                terms=terms,
                compile_cpu_s=compile_cpu,
            )
        )
        print(rows[-1], flush=True)
    ratios = []
    for kind, prm in sorted({(r["kind"], r["param"]) for r in rows}):
        sel = [r for r in rows if (r["kind"], r["param"]) == (kind, prm)]
        by_n = {r["n"]: r["us_per_release"] for r in sel}
        by_n0 = {r["n"]: r["us_clamped"] for r in sel}
        if 1e3 in by_n and 1e7 in by_n:
            ratios.append(
                dict(
                    kind=kind,
                    param=prm,
                    ratio_1e7_over_1e3=by_n[1e7] / by_n[1e3],
                    ratio_clamped=by_n0[1e7] / by_n0[1e3],
                )
            )
    body = "# NoisyBinomial: log-likelihood + gradient cost per release\n\n"
    body += __doc__.split("\n\n", 1)[1] + "\n\n"
    body += md_table(
        rows,
        [
            ("kind", "kind"),
            ("param", "scale / sigma"),
            ("n", "n"),
            ("terms", "window terms"),
            ("us_per_release", "µs per release"),
            ("us_clamped", "µs, clamped at 0"),
            ("compile_cpu_s", "compile CPU s"),
        ],
    )
    body += "\n\n## Cost at n = 1e7 over the cost at n = 1e3\n\n"
    body += md_table(
        ratios,
        [
            ("kind", "kind"),
            ("param", "scale / sigma"),
            ("ratio_1e7_over_1e3", "ratio"),
            ("ratio_clamped", "ratio, clamped at 0"),
        ],
    )
    write_results(
        "noisy_counts_cost" + ("_quick" if args.quick else ""),
        info,
        body,
        {"rows": rows, "ratios": ratios},
        t_start,
    )


if __name__ == "__main__":
    main()
