"""Which latent should ``LaplaceNoisyMultinomial`` use?  NUTS efficiency across epsilon.

The noisy multinomial likelihood keeps one latent vector for NUTS to integrate (there is no
closed form in k dimensions).  Two exact-in-the-noise choices, both with the same normal
approximation of the counts:

* ``noise_variance`` (default): Laplace noise as a scale mixture of normals, counts integrated
  out in closed form; latent w_j ~ Exponential(1), one per category.
* ``counts``: the paper's latent counts, non-centred (k - 1 standard normals).

Same releases (k = 4 categories, n = 1000, Dirichlet(1) prior), epsilon in {0.01, 1, 100}, the
PyMC NUTS sampler with 2 chains x 1000 draws after 1000 tuning steps; reported: the smallest
bulk ESS over p, ESS per second of sampling (compile excluded), divergences, mean tree depth,
and the posterior means of p (the two latents target the same posterior, so they must agree).

Run: ``.venv/bin/python benchmarks/expfam_multinomial_latent.py``
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402
import warnings  # noqa: E402

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from _common import machine_info, md_table, write_results  # noqa: E402

import pymc_dpnoise as pmd  # noqa: E402

NAME = "expfam_multinomial_latent"
K, N = 4, 1000
EPSILONS = (0.01, 1.0, 100.0)
DRAWS, TUNE, CHAINS = 1000, 1000, 2


def main():
    warnings.filterwarnings("ignore")
    t_start = time.perf_counter()
    info = machine_info()
    rng = np.random.default_rng(2018)
    p_true = np.array([0.4, 0.3, 0.2, 0.1])
    labels = rng.choice(K, size=N, p=p_true)
    rows = []
    for eps in EPSILONS:
        release = pmd.mechanisms.release_multinomial_counts(labels, K, eps, rng)
        for latent in ("noise_variance", "counts"):
            with pm.Model():
                p = pm.Dirichlet("p", np.ones(K))
                pmd.LaplaceNoisyMultinomial(
                    "y", n=N, p=p, epsilon=eps, observed=release.value, latent=latent
                )
                t0 = time.perf_counter()
                idata = pm.sample(
                    DRAWS,
                    tune=TUNE,
                    chains=CHAINS,
                    cores=1,
                    random_seed=1,
                    progressbar=False,
                    nuts_sampler="pymc",
                    compute_convergence_checks=False,
                )
                wall = time.perf_counter() - t0
            sampling = float(idata.posterior.attrs.get("sampling_time", wall))
            ess = float(az.ess(idata, var_names=["p"], method="bulk")["p"].min())
            rhat = float(az.rhat(idata, var_names=["p"])["p"].max())
            rows.append(
                dict(
                    epsilon=eps,
                    latent=latent,
                    min_ess_bulk=round(ess),
                    ess_per_s=round(ess / sampling, 1),
                    sampling_s=round(sampling, 1),
                    divergences=int(idata.sample_stats["diverging"].sum()),
                    mean_tree_depth=round(float(idata.sample_stats["tree_depth"].mean()), 2),
                    max_rhat=round(rhat, 3),
                    p_mean=np.round(
                        idata.posterior["p"].mean(("chain", "draw")).values, 3
                    ).tolist(),
                )
            )
            print(rows[-1], flush=True)
    cols = [(c, c) for c in rows[0]]
    body = (
        f"k = {K}, n = {N}, p = {p_true.tolist()}, Dirichlet(1) prior; PyMC NUTS, {CHAINS} chains "
        f"x {DRAWS} draws after {TUNE} tuning steps.  ESS per second of sampling (compile "
        "excluded).\n\n" + md_table(rows, cols)
    )
    write_results(NAME, info, body, dict(rows=rows), t_start)


if __name__ == "__main__":
    main()
