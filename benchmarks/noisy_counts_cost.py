"""Cost of one release's log-likelihood + gradient for NoisyBinomial, against n and the noise scale.

For each noise kind, noise parameter (scale or sigma) and number of records n, the function
``p -> (sum logp, d/dp)`` of ``NoisyBinomial(n, p, noise)`` over R = 64 releases (observed
constants drawn from the mechanism at p = 0.3) is compiled with PyTensor's default mode
(Numba, as PyMC and nutpie run it) and timed: the median of 7 rounds of batches lasting about
30 ms, divided by R, is the cost per release.  The functions of one (kind, noise) cell, every
n and with and without the clamp, are timed in interleaved rounds, so the ratios between them
are taken at the same moments of the machine's load.  The table reports it and, per kind and noise
parameter, the ratio of the cost at n = 1e7 to the cost at n = 1e3 (the issue's "within 5x").

The same again with the release clamped at 0 (``lower=0``, OpenDP's saturating cast; the
releases are max(z, 0)): the graph then also evaluates the atom at 0, P(S + N <= 0), for every
release.

Laplace kinds are closed forms (O(1) in n and in the scale); the Gaussian kinds' pmf / pdf sums
a window of 2W + 1 counts, W ~ 9.6 / sqrt(1/sigma^2 + 4/(n+2)), capped at the support 0..n,
and where that window would exceed 2,501 terms the hybrid sum (1,001 exact terms near the ends
of the support, else 81 trapezoidal nodes): "terms" counts the larger branch, both are
evaluated.  The clamp atoms ("clamp atom" column): below noise 50 (and wherever the count
may be wider than twice the noise) windows of O(sigma) terms; from noise 50 on, where those
windows would exceed 2,501 terms and the binomial's variance is at most 4 noise variances, a
hybrid of the same kind (1,001 exact terms near the ends of the support, else 201 trapezoidal
nodes): flat in n.

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
from _common import Timer, machine_info, md_table, time_variants, write_results

from pymc_dpnoise import noise
from pymc_dpnoise.math import noisy_counts as ncm
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
            out.append((kind, prm, ns))
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


def group_rows(kind, prm, ns, rounds=7):
    """Every n of one (kind, noise) cell, unclamped and clamped at 0, compiled first and then
    timed in interleaved rounds (``_common.time_variants``), so that the ratios between them
    come from the same moments of a shared machine's load."""
    fns, compile_cpu = {}, {}
    for n in ns:
        for lower in (None, 0):
            f, cpu = build(kind, prm, n, lower)
            fns[(n, lower)] = lambda f=f: f(0.3)
            compile_cpu[(n, lower)] = cpu
    wall, _, _ = time_variants(fns, rounds)
    rows = []
    for n in ns:
        w = window_half_width(prm, 4.0 / (n + 2.0)) if "gaussian" in kind else None
        terms = None if w is None else int(min(n + 1, 2 * w + 1))
        if terms is not None and n + 1 > 2 * w + 1 and w > HYBRID_MIN_HALF:
            terms = 2 * HYBRID_UNIT_HALF + 1
        rows.append(
            dict(
                kind=kind,
                param=prm,
                n=n,
                us_per_release=statistics.median(wall[(n, None)]) / R * 1e6,
                us_clamped=statistics.median(wall[(n, 0)]) / R * 1e6,
                terms=terms,
                atoms=atom_method(kind, prm, n),
                compile_cpu_s=compile_cpu[(n, None)],
            )
        )
    return rows


def atom_method(kind, prm, n):
    """How the clamp atom P(S + N <= 0) is computed for this cell."""
    if "gaussian" not in kind:
        return "closed form"
    fam = ncm._Binomial(pt.as_tensor(n), pt.as_tensor(0.0), n)
    if ncm._use_hybrid_cdfs(fam, pt.as_tensor(prm)):
        return f"hybrid ({2 * HYBRID_UNIT_HALF + 1} exact / {2 * ncm.HYBRID_CDF_HALF + 1} nodes)"
    if kind == "discrete_gaussian" and prm < ncm.DG_SPLIT_MIN_SIGMA:
        w = window_half_width(prm)
        return f"noise-value window ({2 * w + 1})"
    w = window_half_width(prm, 4.0 / (n + 2.0), 0.63)
    return f"split windows (2 x {int(min(n + 1, 2 * w + 1))})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    rows = []
    for kind, prm, ns in cells(args.quick):
        rows += group_rows(kind, prm, ns, rounds=3 if args.quick else 7)
        for r in rows[-len(ns) :]:
            print(r, flush=True)
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
            ("atoms", "clamp atom"),
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
