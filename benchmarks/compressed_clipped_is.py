"""Accuracy of the compressed clipped likelihoods at N = 10^6 by importance sampling.

    .venv/bin/python benchmarks/compressed_clipped_is.py [--quick] [--n N] [--n-eval M]

An exact NUTS run at N = 10^6 costs ~0.1 s per gradient, so the exact posterior's moments are
obtained by importance sampling instead: NUTS draws of the *compressed* posterior
(``summarize(tol=0.01)`` + ``LaplacePerturbedClipped*Summary``, nutpie, 2 chains x 1000) are
the proposal, and each of ``M`` of them (every k-th) gets the weight

    log w = exact log likelihood - compressed log likelihood

with the exact per-report log likelihood summed over all N reports (one compiled PyTensor
function, the reports an input, evaluated once per draw).  The priors cancel.  Reported:

* ``dmean_*`` / ``dsd_*``: (compressed - exact) posterior mean / sd in units of the exact
  posterior sd, where "compressed" is the unweighted draws and "exact" the weighted ones;
* ``ess``: Kish effective sample size of the weights, (sum w)^2 / sum w^2, out of M;
* ``spread``: max log w - min log w over the M draws, a direct measure of the approximation
  error where the posterior lives.  On the sample, any weighted mean moves by at most
  (e^spread - 1) times the mean absolute deviation, so ``cap = e^spread - 1`` is a
  deterministic upper bound on |dmean| in sd units for these draws;
* ``bound``: the largest reported error bound (``clipped_*_summary_error_bound``) over the
  draws, and ``bound_holds``: |exact - compressed| <= bound at every draw.

The ``pymc_extras.distributions.histogram_approximation`` rule (quantile bins, the log density
at each bin's midpoint times its count, as a Potential) with the same number of bins as the
summary's rows is evaluated at the same draws and weighted the same way (log w_hist = hist -
compressed), so its moments are compared with the exact ones without another NUTS run.
pymc-extras imports under pymc 6.4 here, but its ``quantile_histogram`` needs ``xhistogram``,
which is not installed, so the rule's few lines are repeated with ``np.histogram`` (same
edges: ``n_quantiles = bins + 1`` percentiles of the reports).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_info, md_table, write_results
from compressed_clipped_grid import _fns as _functions  # exact, compressed + bound, histogram

LO, HI = -5.0, 5.0
DEFAULT_MODELS = "normal,exponential"


def _data(model, n, eps):
    import pymc_dpnoise as pmd

    rng = np.random.default_rng(int(n + 10 * eps) + (0 if model == "normal" else 7))
    if model == "normal":
        return pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, n), LO, HI, eps, rng)
    return pmd.mechanisms.perturb_clipped_exponential(rng.exponential(2.0, n), HI, eps, rng)


def _draws(model, summary, seed):
    import nutpie
    import pymc as pm

    import pymc_dpnoise as pmd

    with pm.Model() as m:
        if model == "normal":
            mu = pm.Normal("mu", 0.0, 5.0)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            pmd.LaplacePerturbedClippedNormalSummary("z", mu, sigma, observed=summary)
            names = ("mu", "sigma")
        else:
            lam = pm.Gamma("lam", 2.0, 2.0)
            pmd.LaplacePerturbedClippedExponentialSummary("z", lam, observed=summary)
            names = ("lam",)
    t = time.perf_counter()
    c = nutpie.compile_pymc_model(m)
    t_compile = time.perf_counter() - t
    t = time.perf_counter()
    tr = nutpie.sample(c, draws=1000, tune=1000, chains=2, cores=2, progress_bar=False, seed=seed)
    t_sample = time.perf_counter() - t
    th = np.stack([tr.posterior[v].values.ravel() for v in names], axis=1)
    return names, th, t_compile, t_sample


def _weighted(th, logw):
    w = np.exp(logw - logw.max())
    w /= w.sum()
    mean = w @ th
    sd = np.sqrt(w @ (th - mean) ** 2)
    return mean, sd, 1.0 / np.sum(w**2)


def run_case(model, n, eps, n_eval, fns, seed=1):
    import pymc_dpnoise as pmd

    f_exact, f_comp, f_hist = fns
    z = _data(model, n, eps)
    t = time.perf_counter()
    s = pmd.summarize(z, LO if model == "normal" else 0.0, HI, eps, tol=0.01, model=model)
    t_sum = time.perf_counter() - t
    names, th_all, t_compile, t_sample = _draws(model, s, seed)
    step = max(1, len(th_all) // n_eval)
    th = th_all[::step][:n_eval]
    edges = np.percentile(z, np.linspace(0, 100, s.n_bins + 3))
    count, _ = np.histogram(z, bins=edges)
    mids = (edges[:-1] + edges[1:]) / 2
    count = count.astype(float)
    lp_exact = np.empty(len(th))
    lp_comp = np.empty(len(th))
    lp_hist = np.empty(len(th))
    bound = np.empty(len(th))
    t = time.perf_counter()
    for i, p in enumerate(th):
        lp_exact[i] = f_exact(z, eps, *p)
        lp_comp[i], bound[i] = f_comp(s.table, eps, *p)
        lp_hist[i] = f_hist(count, mids, eps, *p)
    t_eval = time.perf_counter() - t
    uniform = np.zeros(len(th))
    m_c, sd_c, _ = _weighted(th, uniform)
    m_x, sd_x, ess = _weighted(th, lp_exact - lp_comp)
    m_h, sd_h, ess_h = _weighted(th, lp_hist - lp_comp)
    logw = lp_exact - lp_comp
    logw_h = lp_hist - lp_comp
    spread = float(logw.max() - logw.min())
    spread_h = float(logw_h.max() - logw_h.min())
    base = dict(model=model, N=n, eps=eps, bins=s.n_bins + 2, draws=len(th))
    rows = []
    for kind, mm, ss, e, sp in (
        ("compressed", m_c, sd_c, ess, spread),
        ("histogram_approximation", m_h, sd_h, ess_h, spread_h),
    ):
        row = dict(base, method=kind)
        worst = 0.0
        for k, name in enumerate(names):
            dm = (mm[k] - m_x[k]) / sd_x[k]
            ds = (ss[k] - sd_x[k]) / sd_x[k]
            worst = max(worst, abs(dm), abs(ds))
            row[f"dmean_{name}"] = f"{dm:+.2e}"
            row[f"dsd_{name}"] = f"{ds:+.2e}"
        row["worst"] = f"{worst:.2e}"
        row["_worst"] = worst
        row["ess"] = f"{e:.0f}"
        row["spread_logw"] = f"{sp:.2e}"
        row["cap"] = f"{np.expm1(sp):.2e}"
        if kind == "compressed":
            row["bound_max"] = f"{bound.max():.2e}"
            row["bound_holds"] = bool(np.all(np.abs(lp_exact - lp_comp) <= bound + 1e-9))
        else:
            row["bound_max"] = "-"
            row["bound_holds"] = "-"
        rows.append(row)
    ratio = rows[1]["_worst"] / max(rows[0]["_worst"], 1e-300)
    for r in rows:
        r["hist/compressed"] = f"{ratio:.1e}"
    timing = dict(
        base,
        summarise_s=round(t_sum, 2),
        compile_s=round(t_compile, 1),
        nuts_s=round(t_sample, 1),
        exact_evals_s=round(t_eval, 1),
        exact_eval_ms_each=round(1e3 * t_eval / len(th), 1),
        exact_post_mean=[float(v) for v in m_x],
        exact_post_sd=[float(v) for v in sd_x],
    )
    return rows, timing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--n-eval", type=int, default=1000)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--eps", default="0.1,1,4")
    args = ap.parse_args()
    if args.quick:
        args.n, args.n_eval = 20_000, 100
    t_start = time.perf_counter()
    info = machine_info()
    rows, timings = [], []
    for model in args.models.split(","):
        fns = _functions(model)
        for eps in [float(e) for e in args.eps.split(",")]:
            r, tm = run_case(model, args.n, eps, args.n_eval, fns)
            rows += r
            timings.append(tm)
            print(json.dumps([{k: v for k, v in x.items() if k != "_worst"} for x in r]))
            print(json.dumps(tm), flush=True)
            cols = [c for c in dict.fromkeys(k for x in rows for k in x) if c != "_worst"]
            tcols = list(timings[0])
            body = (
                "## Compressed vs exact posterior at N = 10^6 by importance sampling\n\n"
                "Proposal: NUTS draws of the compressed posterior (tol 0.01 nats); weights "
                "exp(exact - compressed) with the exact per-report log likelihood. `dmean`/`dsd` "
                "in units of the exact posterior sd; `worst` = largest of them; `ess` = Kish "
                "effective sample size of the weights out of `draws`; `spread_logw` = max - min "
                "log w; `cap` = e^spread - 1, a deterministic cap on |dmean| for these draws; "
                "`bound_max` = largest reported error bound at the draws; `bound_holds` = "
                "|exact - compressed| <= bound at every draw. The histogram_approximation rule "
                "(same number of bins) is weighted the same way (log w = hist - compressed, "
                "then compared with the exact weights).\n\n"
                + md_table(rows, [(c, c) for c in cols])
                + "\n\n### Timings\n\n"
                + md_table(timings, [(c, c) for c in tcols])
            )
            write_results(
                "compressed_clipped_is"
                + ("" if args.models == DEFAULT_MODELS else "_" + args.models),
                info,
                body,
                dict(rows=[{k: v for k, v in x.items()} for x in rows], timings=timings),
                t_start,
            )


if __name__ == "__main__":
    main()
