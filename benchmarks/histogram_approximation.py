"""pymc-extras' ``histogram_approximation`` vs the binned summary, README example, one run.

Data: the README example (5,000 reports, x ~ N(1, 2^2) clipped to [-5, 5], Laplace noise at
ε = 1, ``default_rng(0)``).  Priors mu ~ Normal(0, 5), sigma ~ Gamma(2, 1).  Fits, in this
order, in one process:

* ``exact``: ``pmd.LaplacePerturbedClippedNormal`` on the 5,000 reports (the reference);
* ``summary``: ``pmd.LaplacePerturbedClippedNormalSummary`` on ``pmd.summarize(z, ...)`` with
  its default tolerance (0.01 nats); its bin count K is used for every binned variant;
* ``hist_normal``: ``pymc_extras.distributions.histogram_approximation("z", pm.Normal.dist(mu,
  sigma), observed=z, n_quantiles=K + 1)``: what the function is for, a binned version of a
  likelihood *of the data themselves*; a pymc-extras user without this package has only the
  non-noisy likelihood to give it, so this treats the noisy reports as clean values;
* ``hist_noise_aware``: the same function given our exact density,
  ``pmd.LaplacePerturbedClippedNormal.dist(mu, sigma, -5, 5, 1)`` (K quantile bins, the
  density evaluated at each bin's midpoint times its count);
* ``naive``: ``pm.Normal`` on the 5,000 reports (no binning), for reference.

``histogram_approximation`` (pymc-extras 0.12) builds ``pm.Potential(name, logp(dist, mid) *
count)`` over bins between the empirical quantiles of the data: a midpoint rule, with no
error bound, and the outer bins stretch to the extreme reports.

Each fit: ``pm.sample(nuts_sampler="pymc", chains=2, cores=1, tune=1000, draws=1000)``
(chains in sequence so that the process CPU time counts every chain; the wall time includes
compiling).  Reported: wall and CPU seconds, minimum bulk ESS over (mu, sigma), ESS/s (wall),
posterior means and sds, and their difference from the exact fit in units of the exact
posterior sd; also the log-likelihood difference from the exact one at the exact posterior
mean (nats), for the binned variants that target the same likelihood.

Needs pymc-extras and xhistogram, which are not dependencies of the package: run it from a
separate environment, e.g. ``uv venv /tmp/bench24venv --python .venv/bin/python`` then
``uv pip install --python /tmp/bench24venv/bin/python -e . pymc-extras xhistogram``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from importlib.metadata import version

import arviz as az
import numpy as np
import pymc as pm
from _common import Timer, machine_info, md_table, write_results
from pymc_extras.distributions import histogram_approximation

import pymc_dpnoise as pmd

NAME = "histogram_approximation"
LO, HI, EPS = -5.0, 5.0, 1.0


def data(n):
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 2.0, size=n)
    return pmd.mechanisms.perturb_clipped(x, LO, HI, EPS, rng)


def build(variant, z, summary, k):
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        if variant == "exact":
            pmd.LaplacePerturbedClippedNormal(
                "z", mu=mu, sigma=sigma, lower=LO, upper=HI, epsilon=EPS, observed=z
            )
        elif variant == "summary":
            pmd.LaplacePerturbedClippedNormalSummary("z", mu=mu, sigma=sigma, observed=summary)
        elif variant == "hist_normal":
            histogram_approximation("z", pm.Normal.dist(mu, sigma), observed=z, n_quantiles=k + 1)
        elif variant == "hist_noise_aware":
            dist = pmd.LaplacePerturbedClippedNormal.dist(
                mu=mu, sigma=sigma, lower=LO, upper=HI, epsilon=EPS
            )
            histogram_approximation("z", dist, observed=z, n_quantiles=k + 1)
        elif variant == "naive":
            pm.Normal("z", mu=mu, sigma=sigma, observed=z)
    return m


def loglik_fn(model):
    """(mu, sigma) -> summed log-likelihood term (observed or potential), no priors."""
    terms = [*model.observed_RVs, *model.potentials]
    f = model.compile_fn(model.logp(vars=terms, jacobian=False), point_fn=True)
    tr = model.rvs_to_transforms

    def at(mu, sigma):
        pt_ = {"mu": np.asarray(mu)}
        name = "sigma_log__" if tr.get(model["sigma"]) is not None else "sigma"
        pt_[name] = np.asarray(np.log(sigma) if name.endswith("log__") else sigma)
        return float(f(pt_))

    return at


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="300/300 draws (debug only)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    info["packages"]["pymc-extras"] = version("pymc-extras")
    info["packages"]["xhistogram"] = version("xhistogram")
    n = 5000
    tune = draws = 300 if args.quick else 1000
    z = data(n)
    summary = pmd.summarize(z, LO, HI, EPS)
    k = summary.table.shape[0] - 2
    variants = ["exact", "summary", "hist_normal", "hist_noise_aware", "naive"]
    rows, post = [], {}
    models = {}
    for i, v in enumerate(variants):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Timer() as t:
                m = build(v, z, summary, k)
                with m:
                    idata = pm.sample(
                        draws=draws,
                        tune=tune,
                        chains=2,
                        cores=1,
                        nuts_sampler="pymc",
                        random_seed=10 + i,
                        progressbar=False,
                        compute_convergence_checks=False,
                    )
        models[v] = m
        p = idata["posterior"]
        ess = az.ess(idata, var_names=["mu", "sigma"], method="bulk")
        rhat = az.rhat(idata, var_names=["mu", "sigma"])
        ess_min = float(min(float(ess["mu"]), float(ess["sigma"])))
        div = int(idata["sample_stats"]["diverging"].sum())
        row = {
            "variant": v,
            "wall_s": t.wall,
            "cpu_s": t.cpu,
            "ess_min": ess_min,
            "ess_per_s": ess_min / t.wall,
            "rhat_max": float(max(float(rhat["mu"]), float(rhat["sigma"]))),
            "divergences": div,
            "mu_mean": float(p["mu"].mean()),
            "mu_sd": float(p["mu"].std()),
            "sigma_mean": float(p["sigma"].mean()),
            "sigma_sd": float(p["sigma"].std()),
        }
        post[v] = row
        rows.append(row)
        print(
            f"{v:18s} wall {t.wall:6.1f} s cpu {t.cpu:6.1f} s ESS {ess_min:6.0f} "
            f"mu {row['mu_mean']:.3f}±{row['mu_sd']:.3f} sigma {row['sigma_mean']:.3f}"
            f"±{row['sigma_sd']:.3f} div {div}",
            flush=True,
        )
    ex = post["exact"]
    f_exact = loglik_fn(models["exact"])
    at = (ex["mu_mean"], ex["sigma_mean"])
    ll_exact = f_exact(*at)
    for r in rows:
        r["d_mu_in_sd"] = (r["mu_mean"] - ex["mu_mean"]) / ex["mu_sd"]
        r["d_sigma_in_sd"] = (r["sigma_mean"] - ex["sigma_mean"]) / ex["sigma_sd"]
        r["sd_ratio_mu"] = r["mu_sd"] / ex["mu_sd"]
        r["sd_ratio_sigma"] = r["sigma_sd"] / ex["sigma_sd"]
        r["time_ratio_vs_exact"] = r["wall_s"] / ex["wall_s"]
        if r["variant"] in ("summary", "hist_noise_aware"):
            r["loglik_diff_at_exact_mean"] = loglik_fn(models[r["variant"]])(*at) - ll_exact
    b = pmd.math.clipped_normal_summary_error_bound(summary.table, at[0], at[1], LO, HI, EPS)
    bound = float(b.eval() if hasattr(b, "eval") else b)
    cols = [
        ("variant", "variant"),
        ("wall_s", "wall s"),
        ("cpu_s", "CPU s"),
        ("time_ratio_vs_exact", "wall / exact"),
        ("ess_min", "min bulk ESS"),
        ("ess_per_s", "ESS/s"),
        ("rhat_max", "max R-hat"),
        ("divergences", "div."),
        ("mu_mean", "mu mean"),
        ("mu_sd", "mu sd"),
        ("sigma_mean", "sigma mean"),
        ("sigma_sd", "sigma sd"),
        ("d_mu_in_sd", "Δmu / sd_exact"),
        ("d_sigma_in_sd", "Δsigma / sd_exact"),
        ("sd_ratio_sigma", "sd(sigma) / exact"),
        ("loglik_diff_at_exact_mean", "loglik − exact at exact mean (nats)"),
    ]
    md = [
        "# pymc-extras `histogram_approximation` vs the binned summary (README example)",
        "",
        f"N = {n} reports, clip [-5, 5], ε = 1; K = {k} bins for every binned variant (the "
        "summary's bin count at its default 0.01-nat tolerance; "
        f"`histogram_approximation(..., n_quantiles=K + 1)`). PyMC's NUTS, 2 chains in "
        f"sequence, {tune} tune + {draws} draws each; wall time includes compiling; one "
        "process, fits in the order of the table. Δ = posterior mean minus the exact "
        "model's, in units of the exact posterior sd.",
        "",
        "`histogram_approximation` is `pm.Potential(name, logp(dist, mid) * count)` over "
        "bins between empirical quantiles: a midpoint rule for a likelihood of the data "
        "themselves. Given the only likelihood a pymc-extras user has for these data, "
        "`pm.Normal` (`hist_normal`), it is the wrong likelihood for noisy reports: the "
        "Laplace noise is read as spread of x. Given our exact density (`hist_noise_aware`) "
        "it is a binned version of the right likelihood, without an error bound.",
        "",
        md_table(rows, cols),
        f"- the summary's own error bound at the exact posterior mean: {bound:.3g} nats",
        "",
    ]
    write_results(
        NAME,
        info,
        "\n".join(md),
        {"rows": rows, "K": k, "N": n, "summary_bound_nats": bound},
        t_start,
    )


if __name__ == "__main__":
    main()
