"""logp + gradient of the exact noisy-count likelihoods, per released value (issue 13: < 50 µs).

For each n in {10, 1e3, 1e5, 1e7} and epsilon in {0.01, 1, 100}: 1000 released values
y_i = s_i + Laplace(1/epsilon), s_i ~ Binomial(n, p_i) with p_i spread over [0.02, 0.98]
(logit-normal), observed; we time one evaluation of sum(logp) and its gradient with respect
to the 1000 logit p_i (as NUTS does), with the default Numba linker and with the JAX linker.
The Poisson likelihood is timed the same way with mu_i = n p_i.  Also reported: the clamped
variant (binomial) and the worst relative error against a longdouble brute-force sum on 20
of the values (``tests/counts_reference.py``).

Run from the repository root::

    .venv/bin/python benchmarks/noisy_counts.py           # full
    .venv/bin/python benchmarks/noisy_counts.py --quick   # smoke test
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
from _common import machine_info, md_table, time_variants, write_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from counts_reference import brute_binomial_logp, brute_poisson_logp

from pymc_dpnoise.math import counts as cm


def compile_fn(kind, m, mode):
    lq = pt.dvector("lq", shape=(m,))
    y = pt.dvector("y", shape=(m,))
    n = pt.dvector("n", shape=(m,))
    e = pt.dscalar("e")
    if kind == "binomial":
        out = cm.binomial_laplace_logp(y, n, epsilon=e, logit_p=lq)
    elif kind == "clamped":
        out = cm.clamped_binomial_laplace_logp(y, n, epsilon=e, logit_p=lq)
    else:
        out = cm.poisson_laplace_logp(y, epsilon=e, log_mu=pt.log(n) - pt.softplus(-lq))  # n p
    total = out.sum()
    return pytensor.function([y, n, lq, e], [total, pytensor.grad(total, lq), out], mode=mode)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    t_start = time.perf_counter()
    m = 200 if args.quick else 1000
    rounds = 3 if args.quick else args.rounds
    ns = [10, 1000] if args.quick else [10, 1000, 10**5, 10**7]
    epss = [0.01, 1.0, 100.0]
    rng = np.random.default_rng(0)
    fns = {
        (kind, mode): compile_fn(kind, m, None if mode == "numba" else "JAX")
        for kind in ("binomial", "clamped", "poisson")
        for mode in ("numba", "jax")
    }
    rows = []
    for n in ns:
        for eps in epss:
            lq = rng.normal(-0.5, 1.2, size=m).clip(-3.9, 3.9)
            p = 1 / (1 + np.exp(-lq))
            nn = np.full(m, float(n))
            b = 1 / eps
            data = {
                "binomial": rng.binomial(n, p) + rng.laplace(0, b, m),
                "poisson": rng.poisson(n * p) + rng.laplace(0, b, m),
            }
            data["clamped"] = np.clip(data["binomial"], 0, n)
            row = {"n": n, "eps": eps}
            calls = {}
            for (kind, mode), f in fns.items():
                y = data[kind]
                calls[f"{kind}/{mode}"] = lambda f=f, y=y, nn=nn, lq=lq, eps=eps: f(y, nn, lq, eps)
            wall, _, _ = time_variants(calls, rounds)
            for key, times in wall.items():
                row[key] = 1e6 * float(np.median(times)) / m
            # accuracy on 20 values, against the brute-force sum
            for kind in ("binomial", "poisson"):
                out = fns[(kind, "numba")](data[kind], nn, lq, eps)[2]
                out_jax = fns[(kind, "jax")](data[kind], nn, lq, eps)[2]
                worst = 0.0
                for i in range(20):
                    if kind == "binomial":
                        ref = brute_binomial_logp(data[kind][i], n, p[i], b)
                    else:
                        ref = brute_poisson_logp(data[kind][i], n * p[i], b)
                    for o in (out, out_jax):
                        worst = max(worst, float(abs(o[i] - ref) / max(1.0, abs(ref))))
                row[f"err/{kind}"] = worst
            rows.append(row)
            print(row, flush=True)
    worst_us = max(v for r in rows for k, v in r.items() if "/" in k and not k.startswith("err"))
    cols = [("n", "n"), ("eps", "ε")]
    for kind in ("binomial", "clamped", "poisson"):
        for mode in ("numba", "jax"):
            cols.append((f"{kind}/{mode}", f"{kind} {mode} µs"))
    cols += [("err/binomial", "max rel. err binomial"), ("err/poisson", "max rel. err Poisson")]
    body = (
        "# Exact noisy counts: logp + gradient per released value\n\n"
        f"Median wall time of one `sum(logp)` + gradient w.r.t. {m} logit p (or log μ), divided "
        f"by {m} released values; {rounds} interleaved rounds; Numba (default linker) and JAX. "
        "Errors: worst |logp - brute force| / max(1, |brute force|) over 20 values, both "
        "backends (longdouble brute-force sum over every s).\n\n"
        f"**Issue target (< 50 µs per released value at every n): worst measured {worst_us:.2f} µs.**\n\n"
        + md_table(rows, cols)
    )
    write_results("noisy_counts", machine_info(), body, {"rows": rows, "m": m}, t_start)


if __name__ == "__main__":
    main()
