"""Perturbed-input regression: joint logp + gradient time vs the number of reports N.

* ``PerturbedLinReg`` (d = 3, gradient w.r.t. θ, σ and the Cholesky factor of Σ): the reports
  are observed constants, as in ``pm.Model``, and enter the summed logp only through their
  scatter matrix (graph rewrite in :mod:`pymc_dpnoise.math.regression`), so the time should be
  flat in N.  For comparison, the same per-report graph with the rewrite disabled
  (``excluding("local_sum_rows_of_quadratic_form")``), which is O(N).
* ``PerturbedLogReg`` (d = 3, quadrature and Chebyshev degree 5): inherently O(N) (the sigmoid
  expectation depends on each report); reported in ns per report.

All variants of one N are timed in interleaved rounds (the machine is shared); the value is the
median over rounds of the per-call wall time; no assertion is made about time.

Run: ``.venv/bin/python benchmarks/perturbed_regression.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from _common import Timer, machine_info, md_table, time_variants, write_results

from pymc_dpnoise.distributions.regression import PerturbedLinReg, PerturbedLogReg

NAME = "perturbed_regression"
D = 3
THETA = np.array([1.0, -0.5, 0.25])
COV = np.array([[1.0, 0.3, 0.0], [0.3, 0.8, 0.1], [0.0, 0.1, 0.5]])


def simulate(kind, n, rng):
    x = rng.multivariate_normal(np.zeros(D), COV, size=n)
    zx = x + rng.normal(0.0, 0.5, x.shape)
    if kind == "lin":
        zy = x @ THETA + rng.normal(0.0, 0.3, n) + rng.normal(0.0, 0.4, n)
    else:
        y = rng.random(n) < 1 / (1 + np.exp(-(x @ THETA)))
        zy = np.where(rng.random(n) < 1 / (1 + np.exp(-1.0)), y, ~y).astype(float)
    return np.column_stack([zx, zy])


def build(kind, z, *, rewrite=True, approximation="quadrature"):
    theta = pt.dvector("theta")
    lchol = pt.dmatrix("lchol")
    cov = pt.tril(lchol) @ pt.tril(lchol).T
    params = [theta, lchol]
    values = [THETA, np.linalg.cholesky(COV)]
    if kind == "lin":
        sigma = pt.dscalar("sigma")
        params.append(sigma)
        values.append(np.array(0.3))
        rv = PerturbedLinReg.dist(theta=theta, sigma=sigma, cov=cov, sigma_x=0.5, sigma_y=0.4)
    else:
        rv = PerturbedLogReg.dist(
            theta=theta, cov=cov, sigma_x=0.5, epsilon_y=1.0, approximation=approximation, degree=5
        )
    lp = pm.logp(rv, z).sum()
    outs = [lp, *pt.grad(lp, params)]
    mode = pytensor.compile.mode.get_default_mode()
    if not rewrite:
        mode = mode.excluding("local_sum_rows_of_quadratic_form")
    with Timer() as t, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = pytensor.function(params, outs, mode=mode)
        f.trust_input = True
        f(*values)
    return (lambda: [np.asarray(o) for o in f(*values)]), t.wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    ns = [1_000, 10_000, 100_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    rounds = 3 if args.quick else 7
    rng = np.random.default_rng(0)
    rows = []
    for n in ns:
        zl = simulate("lin", n, rng)
        zg = simulate("log", n, rng)
        fns, comp, outs = {}, {}, {}
        fns["lin"], comp["lin"] = build("lin", zl)
        fns["lin_no_rewrite"], comp["lin_no_rewrite"] = build("lin", zl, rewrite=False)
        fns["log_quad"], comp["log_quad"] = build("log", zg)
        fns["log_cheb5"], comp["log_cheb5"] = build("log", zg, approximation="chebyshev")
        for k, f in fns.items():
            outs[k] = f()
        agree = max(
            float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))
            for a, b in zip(outs["lin"], outs["lin_no_rewrite"], strict=True)
        )
        allw, _, _ = time_variants(fns, rounds)
        med = {k: float(np.median(v)) for k, v in allw.items()}
        row = {"N": n, "rewrite_vs_plain_max_rel_diff": agree, "compile_s": comp}
        for k in fns:
            row[f"us_{k}"] = med[k] * 1e6
            row[f"ns_per_report_{k}"] = med[k] / n * 1e9
            row[f"wall_all_{k}"] = allw[k]
        rows.append(row)
        print(
            f"N={n:>8} "
            + " ".join(f"{k}={med[k] * 1e6:.1f}us" for k in fns)
            + f" agree={agree:.1e}",
            flush=True,
        )
    base = rows[0]["us_lin"]
    for r in rows:
        r["lin_time_over_smallest_N"] = r["us_lin"] / base
        r["no_rewrite_over_rewrite"] = r["us_lin_no_rewrite"] / r["us_lin"]
    cols = [
        ("N", "N"),
        ("us_lin", "LinReg µs/call (scatter rewrite)"),
        ("lin_time_over_smallest_N", "LinReg time / time at N=1e3"),
        ("us_lin_no_rewrite", "LinReg µs/call (rewrite off)"),
        ("no_rewrite_over_rewrite", "rewrite off / on"),
        ("ns_per_report_log_quad", "LogReg quadrature ns/report"),
        ("ns_per_report_log_cheb5", "LogReg Chebyshev-5 ns/report"),
        ("rewrite_vs_plain_max_rel_diff", "max rel. diff rewrite on/off (logp, grads)"),
    ]
    body = (
        "# Perturbed-input regression: logp + gradient vs N\n\n"
        f"d = {D}; gradient w.r.t. θ, the Cholesky factor of Σ (and σ for LinReg); default "
        "(Numba) backend; median wall time per call over interleaved rounds.\n\n"
        + md_table(rows, cols)
    )
    write_results(NAME, info, body, {"rows": rows, "quick": args.quick}, t_start)


if __name__ == "__main__":
    main()
