"""NUTS on the exact noisy-binomial marginal vs Bernstein & Sheldon's Gibbs sampler.

Same releases for both: n Bernoulli(0.3) records, the count released with Laplace(1/epsilon)
noise (``release_binomial_count``), prior theta ~ Beta(1, 1).

* ``nuts``: ``pmd.LaplaceNoisyBinomial`` (exact marginal likelihood, no latent count), compiled
  once with ``nutpie.compile_pymc_model`` (timed separately, "compile"; the release, n and
  epsilon are ``pm.Data``, so one compilation serves every row), then ``nutpie.sample`` with
  4 chains on 1 core, tune = 500, draws = 1000.
* ``gibbs``: ``pymc_dpnoise.baselines.gibbs_binomial`` (Algorithm 1: CLT latent count, Laplace
  noise as a scale mixture of normals with the Park-Casella inverse-Gaussian update), the
  paper's 2000 burn-in and 5000 kept iterations, 4 independent chains (one vectorised call).

"Sampling time" is wall time of the sampling call (tuning / burn-in included).  ESS = bulk ESS
of theta (``arviz.ess(method="bulk")`` on the (chain, draw) array).  Agreement: difference of
the posterior means in units of the exact posterior sd, and the ratio of posterior sds; the
exact reference is brute-force summation over the counts within 15 binomial sd and 60
Laplace scales of the release, on a grid of 4001 theta values spanning 25 rough posterior sds.

Run: ``.venv/bin/python benchmarks/expfam_gibbs_vs_nuts.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
import nutpie
import pymc as pm
from _common import Timer, machine_info, md_table, write_results
from scipy import stats
from scipy.special import logsumexp

import pymc_dpnoise as pmd
from pymc_dpnoise.baselines import gibbs_binomial
from pymc_dpnoise.mechanisms import release_binomial_count

NAME = "expfam_gibbs_vs_nuts"
CASES = [(100, 0.1), (1000, 0.01), (1000, 0.1), (1000, 1.0), (10_000, 0.1), (100_000, 1.0)]


def exact(y, n, eps):
    """Posterior mean and sd by brute-force summation over the counts that matter."""
    b = 1.0 / eps
    m0 = float(np.clip(y / n, 0.0, 1.0))
    sd0 = float(np.sqrt(0.25 / n + 2 * b * b / n**2))
    grid = np.linspace(max(1e-7, m0 - 25 * sd0), min(1 - 1e-7, m0 + 25 * sd0), 4001)
    s_lo = max(0, int(n * grid[0] - 15 * np.sqrt(n) - 60 * b))
    s_hi = min(n, int(n * grid[-1] + 15 * np.sqrt(n) + 60 * b) + 1)
    s = np.arange(s_lo, s_hi + 1)
    ll = np.full(grid.size, -np.inf)
    for lo in range(0, s.size, 2000):  # blocks keep memory bounded at n = 1e5
        ss = s[lo : lo + 2000]
        lp = stats.binom.logpmf(ss[None, :], n, grid[:, None]) - np.abs(y - ss)[None, :] * eps
        ll = np.logaddexp(ll, logsumexp(lp, axis=1))
    w = np.exp(ll - ll.max())
    w /= w.sum()
    m = float((w * grid).sum())
    return m, float(np.sqrt((w * (grid - m) ** 2).sum()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    warnings.filterwarnings("ignore", category=FutureWarning)
    chains = 4
    tune, draws = (200, 300) if args.quick else (500, 1000)
    burn, iters = (300, 500) if args.quick else (2000, 5000)
    cases = CASES[:2] if args.quick else CASES

    with pm.Model() as model:
        y_d = pm.Data("reports", np.array(0.0))
        n_d = pm.Data("n", np.array(10.0))
        e_d = pm.Data("epsilon", np.array(1.0))
        theta = pm.Beta("theta", 1.0, 1.0)
        pmd.LaplaceNoisyBinomial("y", n=n_d, p=theta, epsilon=e_d, observed=y_d)
    with Timer() as tc:
        compiled = nutpie.compile_pymc_model(model)

    rows = []
    for k, (n, eps) in enumerate(cases):
        rng = np.random.default_rng(np.random.SeedSequence([2026, k]))
        x = rng.random(n) < 0.3
        y = float(release_binomial_count(x, eps, rng).value)
        m_ref, sd_ref = exact(y, n, eps)
        c = compiled.with_data(
            reports=np.array(y), n=np.array(float(n)), epsilon=np.array(float(eps))
        )
        with Timer() as tn:
            tr = nutpie.sample(
                c, draws=draws, tune=tune, chains=chains, cores=1, seed=k, progress_bar=False
            )
        post_n = np.asarray(tr.posterior["theta"].values, dtype=float)
        with Timer() as tg:
            g = gibbs_binomial(np.full(chains, y), n, eps, iters=iters, burn=burn, rng=rng)
        post_g = g.T  # (chains, iters)
        for label, post, t, extra in (
            ("NUTS (exact marginal)", post_n, tn, dict(compile_s=tc.wall)),
            ("Gibbs (Alg. 1)", post_g, tg, {}),
        ):
            ess = float(az.ess(post, method="bulk"))
            rows.append(
                dict(
                    method=label,
                    n=n,
                    epsilon=eps,
                    release=y,
                    draws=int(post.size),
                    sample_s=t.wall,
                    ess=ess,
                    ess_per_s=ess / t.wall,
                    rhat=float(az.rhat(post)),
                    mean=float(post.mean()),
                    sd=float(post.std()),
                    exact_mean=m_ref,
                    exact_sd=sd_ref,
                    dmean_sd=(float(post.mean()) - m_ref) / sd_ref,
                    sd_ratio=float(post.std()) / sd_ref,
                    **extra,
                )
            )
        print(rows[-2]["ess_per_s"], rows[-1]["ess_per_s"], flush=True)

    ratio_rows = []
    for a, b in zip(rows[::2], rows[1::2], strict=True):
        ratio_rows.append(
            dict(
                n=a["n"],
                epsilon=a["epsilon"],
                ratio=a["ess_per_s"] / b["ess_per_s"],
                ess_n=a["ess"],
                ess_g=b["ess"],
                dm_n=a["dmean_sd"],
                dm_g=b["dmean_sd"],
                sr_n=a["sd_ratio"],
                sr_g=b["sd_ratio"],
            )
        )
    body = [
        "# NUTS on the exact marginal vs the Gibbs re-implementation (noisy binomial counts)",
        "",
        f"theta ~ Beta(1, 1); n Bernoulli(0.3) records, count + Laplace(1/epsilon). NUTS: nutpie, "
        f"{chains} chains on 1 core, tune = {tune}, draws = {draws}; compile once "
        f"{tc.wall:.1f} s (not in the sampling times). Gibbs: {chains} chains, burn-in {burn}, "
        f"{iters} kept iterations (the paper's settings), vectorised NumPy. ESS = bulk ESS of "
        "theta; sampling time includes tuning / burn-in. Δ mean in units of the exact posterior "
        "sd (brute-force sum over every count).",
        "",
        md_table(
            ratio_rows,
            [
                ("n", "n"),
                ("epsilon", "ε"),
                ("ratio", "ESS/s ratio (NUTS / Gibbs)"),
                ("ess_n", "ESS NUTS"),
                ("ess_g", "ESS Gibbs"),
                ("dm_n", "Δ mean NUTS (sd)"),
                ("dm_g", "Δ mean Gibbs (sd)"),
                ("sr_n", "sd ratio NUTS"),
                ("sr_g", "sd ratio Gibbs"),
            ],
        ),
        md_table(
            rows,
            [
                ("method", "method"),
                ("n", "n"),
                ("epsilon", "ε"),
                ("release", "release"),
                ("draws", "draws"),
                ("sample_s", "sample s"),
                ("ess", "bulk ESS"),
                ("ess_per_s", "ESS / s"),
                ("rhat", "R-hat"),
                ("mean", "mean"),
                ("sd", "sd"),
                ("exact_mean", "exact mean"),
                ("exact_sd", "exact sd"),
            ],
        ),
    ]
    write_results(NAME, info, "\n".join(body), {"rows": rows, "ratios": ratio_rows}, t_start)


if __name__ == "__main__":
    main()
