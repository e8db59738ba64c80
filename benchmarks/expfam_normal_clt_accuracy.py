"""How accurate is the random-sum CLT behind ``LaplaceNoisyTruncatedNormal``?  (Monte Carlo.)

For Gaussian records truncated to [a, b], the released pair (sum x, sum x^2) + independent
Laplace noise is modelled with the CLT normal for the truncated sums and one latent per
release.  Here the model's density of a release (latent integrated out by Gauss-Legendre on
both sides of the Laplace kink) is compared with the exact mechanism's density, estimated as
the Laplace kernel averaged over ``REPS`` simulated truncated sums, at 30 typical releases
(simulated from the mechanism).  Reported per (parameters, n, epsilon): the largest and the
rms absolute log-density error and the largest Monte Carlo standard error (delta method).

Run: ``.venv/bin/python benchmarks/expfam_normal_clt_accuracy.py``
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from _common import machine_info, md_table, write_results  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from expfam_normal_reference import integrate_latent  # noqa: E402
from scipy.special import logsumexp  # noqa: E402

from pymc_dpnoise.math import expfam_normal as nm  # noqa: E402
from pymc_dpnoise.mechanisms import truncated_normal_sum_sensitivity  # noqa: E402

NAME = "expfam_normal_clt_accuracy"
SETTINGS = ((0.5, 1.5, -3.0, 4.0), (3.0, 2.0, -3.0, 4.0))  # (mu, sigma, lower, upper)
NS = (10, 30, 100, 300, 1000)
EPSILONS = (0.1, 1.0)
REPS = 200_000
N_RELEASES = 30


def _compile():
    y, z = pt.dmatrix("y"), pt.dmatrix("z")
    scalars = [pt.dscalar(c) for c in ("n", "mu", "sigma", "lo", "hi", "beta")]
    cond = pytensor.function(
        [y, z, *scalars], nm.truncated_normal_sum_laplace_logp(y[:, None, :], z, *scalars)
    )
    clt = pytensor.function(scalars[:5], list(nm.truncated_normal_sum_clt(*scalars[:5])))
    return cond, clt


def model_logpdf(cond, clt, y, n, mu, sigma, a, b, beta):
    m1, _, l11, _, _ = clt(n, mu, sigma, a, b)
    return integrate_latent(
        lambda yy, z: cond(yy, z, n, mu, sigma, a, b, beta), y, (y[:, 0] - m1) / l11
    )


def simulate_sums(rng, n, mu, sigma, a, b, reps):
    sums = np.empty((reps, 2))
    chunk = max(1, 4_000_000 // n)
    for i in range(0, reps, chunk):
        x = rng.normal(mu, sigma, size=(min(chunk, reps - i), n))
        kept = np.where((x >= a) & (x <= b), x, 0.0)
        sums[i : i + len(x)] = np.stack([kept.sum(1), (kept * kept).sum(1)], 1)
    return sums


def main():
    t_start = time.perf_counter()
    info = machine_info()
    cond, clt = _compile()
    rows = []
    rng = np.random.default_rng(1)
    for mu, sigma, a, b in SETTINGS:
        delta = float(truncated_normal_sum_sensitivity(a, b))
        q = float(np.exp(nm.truncated_normal_moments(mu, sigma, a, b)[0].eval()))
        for n in NS:
            sums = simulate_sums(rng, n, mu, sigma, a, b, REPS)
            for eps in EPSILONS:
                beta = delta / eps
                y = sums[:N_RELEASES] + rng.laplace(0.0, beta, size=(N_RELEASES, 2))
                rest = sums[N_RELEASES:]
                kern = np.array([-np.abs(v - rest).sum(1) / beta for v in y])
                mc = logsumexp(kern, axis=1) - np.log(len(rest)) - 2 * np.log(2 * beta)
                w = np.exp(kern - kern.max(1, keepdims=True))
                se = np.sqrt(w.var(1) / len(rest)) / w.mean(1)
                err = model_logpdf(cond, clt, y, float(n), mu, sigma, a, b, beta) - mc
                _, _, l11, l21, l22 = clt(float(n), mu, sigma, a, b)
                rows.append(
                    dict(
                        mu=mu, sigma=sigma, bounds=f"[{a:g}, {b:g}]", q=round(q, 3), n=n,
                        epsilon=eps, laplace_scale=beta, sd_sum_x=float(l11),
                        sd_sum_x2=float(np.hypot(l21, l22)), max_err=float(np.abs(err).max()),
                        rms_err=float(np.sqrt(np.mean(err**2))), max_mc_se=float(se.max()),
                    )
                )  # fmt: skip
                print(rows[-1], flush=True)
    cols = [(c, c) for c in rows[0]]
    body = (
        f"Log-density error of the CLT model at {N_RELEASES} simulated releases, against the "
        f"Laplace kernel averaged over {REPS:,} exact truncated sums (Monte Carlo).  "
        "max_mc_se is the largest Monte Carlo standard error of the reference (log scale).\n\n"
        + md_table(rows, cols)
    )
    write_results(NAME, info, body, dict(rows=rows), t_start)


if __name__ == "__main__":
    main()
