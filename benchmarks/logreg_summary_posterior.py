"""PerturbedLogRegSummary vs the exact PerturbedLogReg: posteriors at 10⁵ reports (issue 24).

d = 2, known Σ, θ ~ N(0, 5²I), σ_x = 0.5, ε_y = 1; 10⁵ reports simulated with a fixed seed.
Both models are sampled with PyMC's NUTS (C backend), 2 chains × 500 draws after 500 tuning
steps, ``random_seed=1``, started at the summary's pilot θ (``init="adapt_diag"``).  Reported:
posterior means and sds of θ, their differences in units of the exact posterior sd, the Monte
Carlo standard error of those differences (two independent runs), and, free of Monte Carlo
noise between runs, the change of the mean and sd when the summary's draws are importance
weighted by exp(exact − summary) (the exact per-report logp at every draw); the bound (nats)
at every draw, and |exact − summary| at every draw.

Run: ``.venv/bin/python benchmarks/logreg_summary_posterior.py`` (about 30-60 CPU-min: the
exact model's NUTS run dominates).
"""

from __future__ import annotations

import time

import numpy as np
import pymc as pm
from _common import Timer, machine_info, md_table, write_results
from scipy import special

import pymc_dpnoise as pmd
from pymc_dpnoise.distributions.regression import PerturbedLogReg

NAME = "logreg_summary_posterior"
N = 100_000
THETA = np.array([1.0, -0.5])
COV = np.array([[1.0, 0.3], [0.3, 0.5]])
SX, EPS = 0.5, 1.0


def simulate(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.multivariate_normal(np.zeros(2), COV, size=n)
    y = rng.random(n) < special.expit(x @ THETA)
    zx = x + rng.normal(0.0, SX, x.shape)
    zy = np.where(rng.random(n) < special.expit(EPS), y, ~y).astype(float)
    return np.column_stack([zx, zy])


def model(z=None, summary=None):
    with pm.Model() as m:
        theta = pm.Normal("theta", 0.0, 5.0, shape=2)
        if summary is not None:
            pmd.PerturbedLogRegSummary("obs", theta=theta, cov=COV, sigma_x=SX, observed=summary)
        else:
            PerturbedLogReg("obs", theta=theta, cov=COV, sigma_x=SX, epsilon_y=EPS, observed=z)
    return m


def sample(m, init):
    with m:
        return pm.sample(
            500,
            tune=500,
            chains=2,
            cores=1,
            random_seed=1,
            init="adapt_diag",
            initvals={"theta": init},
            progressbar=False,
            compute_convergence_checks=False,
        )


def main():
    t_start = time.perf_counter()
    info = machine_info()
    z = simulate(N, 20261126)
    with Timer() as t_sum:
        s = pmd.summarize_logreg(z, SX, EPS, cov=COV)
    m_sum, m_ex = model(summary=s), model(z=z)
    with Timer() as t_fit_sum:
        id_sum = sample(m_sum, s.theta_pilot)
    with Timer() as t_fit_ex:
        id_ex = sample(m_ex, s.theta_pilot)
    th_s = id_sum.posterior["theta"].values.reshape(-1, 2)
    th_e = id_ex.posterior["theta"].values.reshape(-1, 2)
    # exact - summary at the summary's draws (label and Gaussian terms; prior cancels)
    f_ex = m_ex.compile_logp(vars=[m_ex["obs"]])
    f_su = pmd.PerturbedLogRegSummary  # noqa: F841 (documentation: the graph below is its logp)
    m_sum_free = model(summary=s)
    f_sm = m_sum_free.compile_logp(vars=[m_sum_free["obs"]])
    diffs = np.array([f_ex({"theta": t}) - f_sm({"theta": t}) for t in th_s])
    bounds = s.bound(th_s, cov=COV)
    w = np.exp(diffs - diffs.max())
    w /= w.sum()
    rows, data_rows = [], []
    for k in range(2):
        mean_s, sd_s = th_s[:, k].mean(), th_s[:, k].std(ddof=1)
        mean_e, sd_e = th_e[:, k].mean(), th_e[:, k].std(ddof=1)
        ess_s = float(pm.stats.ess(id_sum, var_names=["theta"])["theta"].values[k])
        ess_e = float(pm.stats.ess(id_ex, var_names=["theta"])["theta"].values[k])
        mcse = np.sqrt(sd_s**2 / ess_s + sd_e**2 / ess_e) / sd_e
        mean_w = float(np.sum(w * th_s[:, k]))
        sd_w = float(np.sqrt(np.sum(w * (th_s[:, k] - mean_w) ** 2)))
        r = dict(
            coef=f"theta[{k}]",
            mean_exact=mean_e,
            mean_summary=mean_s,
            sd_exact=sd_e,
            sd_summary=sd_s,
            dmean_sd=(mean_s - mean_e) / sd_e,
            dsd_sd=(sd_s - sd_e) / sd_e,
            mcse_sd=mcse,
            dmean_is_sd=(mean_s - mean_w) / sd_s,
            dsd_is_sd=(sd_s - sd_w) / sd_s,
        )
        rows.append(r)
        data_rows.append(r)
    body = [
        "# PerturbedLogRegSummary vs PerturbedLogReg: posteriors at 10⁵ reports",
        "",
        f"d = 2, known Σ, σ_x = {SX}, ε_y = {EPS}, N = {N:,}; PyMC NUTS 2 chains × 500 draws "
        "(500 tuning), random_seed=1, init at the summary's pilot.",
        "",
        md_table(
            rows,
            [
                ("coef", "coefficient"),
                ("mean_exact", "mean (exact)"),
                ("mean_summary", "mean (summary)"),
                ("sd_exact", "sd (exact)"),
                ("sd_summary", "sd (summary)"),
                ("dmean_sd", "Δmean / sd"),
                ("dsd_sd", "Δsd / sd"),
                ("mcse_sd", "MC s.e. of Δ / sd"),
                ("dmean_is_sd", "Δmean / sd (importance weights)"),
                ("dsd_is_sd", "Δsd / sd (importance weights)"),
            ],
        ),
        "",
        f"- summary build: {t_sum.wall:.1f} s wall ({s.passes} passes, pilot shift "
        f"{s.pilot_shift:.2g} sd)",
        f"- NUTS wall: summary {t_fit_sum.wall:.1f} s, exact {t_fit_ex.wall:.1f} s",
        f"- bound at the summary's {len(bounds)} draws: max {bounds.max():.3g} nats, median "
        f"{np.median(bounds):.3g}",
        f"- |exact − summary| at those draws (after removing the constant at the pilot): max "
        f"{np.abs(diffs - diffs.mean()).max():.3g} nats; raw max {np.abs(diffs).max():.3g}",
        f"- bound holds at every draw: {bool(np.all(np.abs(diffs) <= bounds))}",
        "- Δ/sd from two independent NUTS runs is dominated by Monte Carlo error (column "
        "'MC s.e.'); the importance-weighted columns isolate the approximation's effect on the "
        "same draws.",
    ]
    write_results(
        NAME,
        info,
        "\n".join(body),
        dict(
            rows=data_rows,
            bound_max=float(bounds.max()),
            absdiff_max=float(np.abs(diffs).max()),
            summary_build_s=t_sum.wall,
            nuts_summary_s=t_fit_sum.wall,
            nuts_exact_s=t_fit_ex.wall,
        ),
        t_start,
    )


if __name__ == "__main__":
    main()
