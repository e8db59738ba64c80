"""SSNormalApprox: logp + gradient time at d = 30 vs the number of records N (issue 5).

The noisy sum of sufficient statistics has a fixed size m whatever N is (m = 495 for logistic,
990 for Poisson, 496 for linear at d = 30); N enters the density only as the scalar in
``N mu_s`` and ``N Sigma_s + noise_cov``.  The issue's target: "logp + gradient at d = 30 under
50 ms, and flat in N".

Variants (gradient w.r.t. θ and the Cholesky factor L of Σ = L Lᵀ, and σ for linear):
logistic with Taylor order 3, logistic with ``order="quadrature"``, Poisson, linear, and
Poisson with the previous pullback (``poisson_cho_solve``: C⁻¹ by ``cho_solve`` against the
identity, 2m³ flops, instead of LAPACK ``potri``, (2/3)m³), for the ratio in the same run.  For every
N the function is compiled with N as a constant, as it is inside a ``pm.Model``; the observed
z is one draw of the distribution itself (simulating 10⁶ records of 990 statistics would need
8 GB and does not change the cost).  Each compiled function is checked once against a NumPy /
SciPy evaluation of the same normal density (``max rel. err. logp``).

All variants of one N are timed in interleaved rounds (the machine is shared); the value is the
median over rounds of the per-call wall time; ratios are to the N = 10³ time of the same variant
in the same run.  No assertion is made about time.

Run: ``.venv/bin/python benchmarks/ss_normal_approx.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import os

# One BLAS thread (set before NumPy loads OpenBLAS).  On this shared 2-core machine a
# multi-threaded BLAS inside a graph of many small products spin-waits for a busy core: the
# same logp + gradient measured 15 ms with load ~3 and ~500 ms with load ~6.  NUTS runs one
# chain per core anyway.  Override by setting the variables before running.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from _common import Timer, machine_info, md_table, time_variants, write_results  # noqa: E402
from scipy import stats  # noqa: E402

from pymc_dpnoise.distributions.sufficient import SSNormalApprox  # noqa: E402
from pymc_dpnoise.math import sufficient as sufficient_math  # noqa: E402
from pymc_dpnoise.math.sufficient import ss_moments, stat_dim  # noqa: E402
from pymc_dpnoise.mechanisms.core import analytic_gaussian_sigma  # noqa: E402
from pymc_dpnoise.mechanisms.sufficient import ss_sensitivity  # noqa: E402

NAME = "ss_normal_approx"
D = 30
VARIANTS = {
    "logistic_taylor3": ("logistic", 3),
    "logistic_quadrature": ("logistic", "quadrature"),
    "poisson": ("poisson", 3),
    "poisson_cho_solve": ("poisson", 3),
    "linear": ("linear", 3),
}
SIGMA = 0.5  # residual sd (linear)


def design(d=D, seed=0):
    """θ, Σ with θᵀΣθ = 0.5 (a moderate effect) and a correlated, well-conditioned Σ."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d)) / math.sqrt(d)
    cov = 0.02 * (np.eye(d) + 0.5 * a @ a.T)
    theta = rng.normal(size=d)
    theta *= math.sqrt(0.5 / (theta @ cov @ theta))
    return theta, cov


def noise_cov(glm, d=D, epsilon=1.0, delta=1e-5):
    sigma = analytic_gaussian_sigma(epsilon, delta, ss_sensitivity(glm, 1.0, 2.0))
    return float(sigma) ** 2 * np.eye(stat_dim(glm, d))


def build(variant, n, theta_val, cov_val, seed):
    """Compiled (θ, L[, σ]) -> (logp, dθ, dL[, dσ]) with n a constant; and the observed z."""
    glm, order = VARIANTS[variant]
    nc = noise_cov(glm)
    sig_kw = dict(sigma=SIGMA) if glm == "linear" else {}
    z = np.asarray(
        pm.draw(
            SSNormalApprox.dist(theta_val, cov_val, n, nc, glm, order=order, **sig_kw),
            random_seed=seed,
        )
    )
    theta = pt.dvector("theta")
    lchol = pt.dmatrix("lchol")
    cov = pt.tril(lchol) @ pt.tril(lchol).T
    params = [theta, lchol]
    values = [theta_val, np.linalg.cholesky(cov_val)]
    kw = {}
    if glm == "linear":
        sigma = pt.dscalar("sigma")
        params.append(sigma)
        values.append(np.array(SIGMA))
        kw["sigma"] = sigma
    theta_s = pt.specify_shape(theta, (D,))
    rv = SSNormalApprox.dist(theta_s, cov, n, nc, glm, order=order, **kw)
    lp = pm.logp(rv, z)
    # the pullback reads the flag when the gradient graph is built
    sufficient_math._CINV_METHOD = "cho_solve" if variant.endswith("_cho_solve") else "potri"
    outs = [lp, *pt.grad(lp, params)]
    with Timer() as t, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = pytensor.function(params, outs)
    sufficient_math._CINV_METHOD = "potri"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f.trust_input = True
        res = f(*values)
    # reference: the same density evaluated with NumPy moments and SciPy
    mean, cov_s = ss_moments(
        theta_val, cov_val, glm, SIGMA if glm == "linear" else None, order=order
    )
    ref = stats.multivariate_normal(n * mean.eval(), n * cov_s.eval() + nc).logpdf(z)
    err = abs(float(res[0]) - ref) / max(1.0, abs(ref))
    finite = all(np.all(np.isfinite(r)) for r in res)
    return (lambda: f(*values)), t.wall, err, finite


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    info["pytensor_linker"] = str(pytensor.compile.mode.get_default_mode().linker)
    info["pytensor_mode"] = str(pytensor.config.mode)
    info["blas_threads"] = os.environ.get("OPENBLAS_NUM_THREADS")
    ns = [1_000, 1_000_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    rounds = 3 if args.quick else 9
    theta, cov = design()
    # Build every (variant, N) first, then time all of them in the same interleaved rounds, so
    # that a change of machine load during the run hits every N alike (the ratios are the point).
    fns, comp, errs, fin = {}, {}, {}, {}
    for i, n in enumerate(ns):
        for k in VARIANTS:
            key = (k, n)
            fns[key], comp[key], errs[key], fin[key] = build(k, n, theta, cov, seed=i)
            print(f"built {k} N={n} in {comp[key]:.1f} s", flush=True)
    allw, allc, _ = time_variants(fns, rounds, batch_seconds=0.2)
    rows = []
    for n in ns:
        row = {"N": n}
        for k in VARIANTS:
            key = (k, n)
            row[f"ms_{k}"] = float(np.median(allw[key])) * 1e3
            row[f"cpu_ms_{k}"] = float(np.median(allc[key])) * 1e3
            row[f"wall_all_{k}"] = allw[key]
            row[f"compile_s_{k}"] = comp[key]
            row[f"err_{k}"] = errs[key]
            row[f"finite_{k}"] = fin[key]
        row["logp_rel_err"] = {k: errs[(k, n)] for k in VARIANTS}
        rows.append(row)
        print(
            f"N={n:>8} "
            + " ".join(f"{k}={row[f'ms_{k}']:.2f}ms" for k in VARIANTS)
            + f" max_err={max(row['logp_rel_err'].values()):.1e}"
            + f" finite={all(fin[(k, n)] for k in VARIANTS)}",
            flush=True,
        )
    for r in rows:
        for k in VARIANTS:
            r[f"ratio_{k}"] = r[f"ms_{k}"] / rows[0][f"ms_{k}"]
        r["max_err"] = max(r["logp_rel_err"].values())
    cols = [("N", "N")]
    for k in VARIANTS:
        cols += [(f"ms_{k}", f"{k} ms"), (f"cpu_ms_{k}", "CPU ms"), (f"ratio_{k}", "÷ N=1e3")]
    cols.append(("max_err", "max rel. err. logp vs SciPy"))
    dims = ", ".join(f"{k}: m = {stat_dim(VARIANTS[k][0], D)}" for k in VARIANTS)
    body = (
        "# SSNormalApprox: logp + gradient at d = 30 vs the number of records N\n\n"
        f"d = {D} ({dims}); gradient w.r.t. θ and the Cholesky factor of Σ (and σ for linear); "
        f"default backend (linker `{info['pytensor_linker']}`, mode `{info['pytensor_mode']}`), "
        f"OPENBLAS_NUM_THREADS={info['blas_threads']}; "
        "N a compile-time constant as in a model; median wall (and CPU) time per call over "
        f"{rounds} rounds in which all variants and all N are interleaved; ratio = time / time at N = 10³ of the same variant in this "
        "run.  Issue target: < 50 ms and flat in N.\n\n" + md_table(rows, cols)
    )
    write_results(NAME, info, body, {"rows": rows, "quick": args.quick, "d": D}, t_start)


if __name__ == "__main__":
    main()
