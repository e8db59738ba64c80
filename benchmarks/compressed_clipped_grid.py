"""Deterministic accuracy of the compressed clipped likelihoods: posterior means and sds on a
parameter grid (no Monte Carlo error), exact vs compressed (tolerance 0.01 nats) vs the
``pymc_extras`` ``histogram_approximation`` rule (quantile bins, log p at the bin midpoint
times the count) with the same number of bins.

    .venv/bin/python benchmarks/compressed_clipped_grid.py

Normal model: 2-D grid of 41 x 41 points over +-6 Laplace sds around the mode; exponential
model: 1-D grid of 801 points.  Flat priors on the grid (the likelihoods are what is
compared).  Also reports the largest |error of the compressed log likelihood| over the grid
(after removing its value at the mode: only differences across θ move the posterior) and
the error bound at the mode.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_info, md_table, write_results

import pymc_dpnoise as pmd
from pymc_dpnoise.math import clipped as mc

LO, HI = -5.0, 5.0


def _fns(model):
    z, tab, eps, w, mids = pt.dvector(), pt.dmatrix(), pt.dscalar(), pt.dvector(), pt.dvector()
    if model == "normal":
        th = [pt.dscalar(), pt.dscalar()]
        exact = mc.clipped_normal_laplace_logp(z, *th, LO, HI, eps).sum()
        comp = mc.clipped_normal_summary_logp(tab, *th, LO, HI, eps)
        bound = mc.clipped_normal_summary_error_bound(tab, *th, LO, HI, eps)
        hist = (w * mc.clipped_normal_laplace_logp(mids, *th, LO, HI, eps)).sum()
    else:
        th = [pt.dscalar()]
        exact = mc.clipped_exponential_laplace_logp(z, th[0], HI, eps).sum()
        comp = mc.clipped_exponential_summary_logp(tab, th[0], HI, eps)
        bound = mc.clipped_exponential_summary_error_bound(tab, th[0], HI, eps)
        hist = (w * mc.clipped_exponential_laplace_logp(mids, th[0], HI, eps)).sum()
    return (
        pytensor.function([z, eps, *th], exact),
        pytensor.function([tab, eps, *th], [comp, bound]),
        pytensor.function([w, mids, eps, *th], hist),
    )


def _moments(grid_axes, logp):
    lp = logp - logp.max()
    p = np.exp(lp)
    p /= p.sum()
    out = []
    for k, ax in enumerate(grid_axes):
        marg = p.sum(axis=tuple(i for i in range(p.ndim) if i != k))
        m = (marg * ax).sum()
        out.append((m, np.sqrt((marg * (ax - m) ** 2).sum())))
    return out


def main():
    t_start = time.perf_counter()
    info = machine_info()
    rows = []
    for model in ("exponential", "normal"):
        f_exact, f_comp, f_hist = _fns(model)
        for n in (10_000, 100_000):
            for eps in (0.1, 1.0, 4.0):
                rng = np.random.default_rng(int(n + 10 * eps))
                lo = LO if model == "normal" else 0.0
                if model == "normal":
                    z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, n), LO, HI, eps, rng)
                    truth = (1.0, 2.0)
                else:
                    z = pmd.mechanisms.perturb_clipped_exponential(
                        rng.exponential(2.0, n), HI, eps, rng
                    )
                    truth = (0.5,)
                s = pmd.summarize(z, lo, HI, eps, tol=0.01, model=model)
                edges = np.percentile(z, np.linspace(0, 100, s.n_bins + 3))
                count, _ = np.histogram(z, bins=edges)
                mids = (edges[:-1] + edges[1:]) / 2
                # grid: +-6 sd (sd from the compressed curvature at the truth, widened x1.5)
                hs = []
                for k in range(len(truth)):
                    d = 1e-3 * truth[k]
                    e = np.eye(len(truth))[k] * d
                    c0 = f_comp(s.table, eps, *truth)[0]
                    cp = f_comp(s.table, eps, *(np.array(truth) + e))[0]
                    cm = f_comp(s.table, eps, *(np.array(truth) - e))[0]
                    hs.append(1.5 / np.sqrt(max(-(cp - 2 * c0 + cm) / d**2, 1e-12)))
                npts = 41 if model == "normal" else 801
                axes = [
                    np.linspace(
                        max(t - 6 * h, 1e-3 if (model != "normal" or k == 1) else -np.inf),
                        t + 6 * h,
                        npts,
                    )
                    for k, (t, h) in enumerate(zip(truth, hs, strict=True))
                ]
                mesh = np.meshgrid(*axes, indexing="ij")
                shape = mesh[0].shape
                lp = {k: np.empty(shape) for k in ("exact", "compressed", "histogram")}
                bound = np.empty(shape)
                for idx in np.ndindex(shape):
                    th = [m[idx] for m in mesh]
                    lp["exact"][idx] = f_exact(z, eps, *th)
                    lp["compressed"][idx], bound[idx] = f_comp(s.table, eps, *th)
                    lp["histogram"][idx] = f_hist(count.astype(float), mids, eps, *th)
                ref = _moments(axes, lp["exact"])
                mode = np.unravel_index(np.argmax(lp["exact"]), shape)
                post = np.exp(lp["exact"] - lp["exact"].max())
                hi_mass = post > 1e-6
                for kind in ("compressed", "histogram"):
                    got = _moments(axes, lp[kind])
                    err = lp[kind] - lp["exact"]
                    err = err - err[mode]
                    row = dict(model=model, N=n, eps=eps, bins=s.n_bins + 2, method=kind)
                    for k, name in enumerate(("mu", "sigma") if model == "normal" else ("lam",)):
                        row[f"dmean_{name}"] = f"{(got[k][0] - ref[k][0]) / ref[k][1]:+.2e}"
                        row[f"dsd_{name}"] = f"{(got[k][1] - ref[k][1]) / ref[k][1]:+.2e}"
                    row["max_dlogp_nats"] = f"{np.abs(err[hi_mass]).max():.2e}"
                    row["abs_err_at_mode"] = f"{abs((lp[kind] - lp['exact'])[mode]):.2e}"
                    row["bound_at_mode"] = f"{bound[mode]:.2e}" if kind == "compressed" else "-"
                    row["bound_holds"] = (
                        bool(np.all(np.abs(lp[kind] - lp["exact"]) <= bound + 1e-9))
                        if kind == "compressed"
                        else "-"
                    )
                    rows.append(row)
                print(rows[-2], "\n", rows[-1], flush=True)
                cols = sorted(
                    {k for r in rows for k in r},
                    key=lambda c: list(rows[-1]).index(c) if c in rows[-1] else 99,
                )
                body = (
                    "## Posterior on a grid: compressed (tol 0.01 nats) and histogram_approximation "
                    "vs exact\n\n"
                    "Differences in units of the exact posterior sd (flat prior on the grid). "
                    "`max_dlogp_nats`: largest change of the log-likelihood error across the "
                    "grid points with posterior density > 1e-6 of the mode. `bound_holds`: "
                    "|compressed - exact| <= bound at every grid point.\n\n"
                    + md_table(rows, [(c, c) for c in cols])
                )
                write_results("compressed_clipped_grid", info, body, dict(rows=rows), t_start)


if __name__ == "__main__":
    main()
