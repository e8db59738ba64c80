"""logp + gradient of the frequency-oracle likelihoods (issue: OUE at N = 1e6, k = 64 < 100 ms).

Variants, measured interleaved in one run (ratios are what count on this noisy machine):

* ``numba``: ``OUELikelihood``'s logp graph (per-byte lookup tables for p.z), PyTensor default
  linker, reports as observed constants (as in ``pm.Model``);
* ``numba_dense``: the same likelihood with p.z as a dense product (``method="dense"``);
* ``jax_pt``: the default graph compiled by PyTensor's JAX backend;
* ``jax_hand``: a hand-written ``jax.numpy`` version (dense ``z @ p``), ``jax.jit`` of
  ``value_and_grad``.

k-RR (one gather per report) is timed at the same N for comparison.

Run from the repository root::

    .venv/bin/python benchmarks/frequency_logp.py            # N = 1e4 .. 1e6
    .venv/bin/python benchmarks/frequency_logp.py --quick    # smoke test
"""

from __future__ import annotations

import argparse
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytensor
import pytensor.tensor as pt
from _common import Timer, machine_info, md_table, time_variants, write_results

from pymc_dpnoise import math as dpm
from pymc_dpnoise.mechanisms import krr_perturb, oue_perturb

jax.config.update("jax_enable_x64", True)


def oue_variants(z, k, eps):
    theta = pt.dvector("theta", shape=(k,))
    values = [np.random.default_rng(0).dirichlet(np.ones(k))]
    fns, compile_s = {}, {}
    zc = pt.as_tensor_variable(z)
    for key, method, mode in [
        ("numba", "auto", None),
        ("numba_dense", "dense", None),
        ("jax_pt", "auto", "JAX"),
    ]:
        total = dpm.oue_logp(zc, theta, eps, method=method).sum()
        outs = [total, pt.grad(total, theta)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Timer() as t:
                f = pytensor.function([theta], outs, mode=mode)
                f.trust_input = True
                f(*values)
        compile_s[key] = t.wall
        fns[key] = lambda f=f: [np.asarray(o) for o in f(*values)]

    zf = jnp.asarray(z, dtype=jnp.float64)
    m = zf.sum(-1)
    log_b, log1m_b = -np.logaddexp(0, eps), -np.logaddexp(0, -eps)
    const = jnp.sum(m * log_b + (k - m) * log1m_b - np.log(2) - log1m_b)

    def total_hand(th):
        return const + jnp.sum(jnp.log1p(jnp.expm1(eps) * (zf @ th)))

    vg = jax.jit(jax.value_and_grad(total_hand))
    jt = jnp.asarray(values[0])
    with Timer() as t:
        jax.block_until_ready(vg(jt))
    compile_s["jax_hand"] = t.wall

    def call_hand():
        v, g = vg(jt)
        return [np.asarray(v), np.asarray(g)]

    fns["jax_hand"] = call_hand
    return fns, compile_s


def krr_variants(y, k, eps):
    theta = pt.dvector("theta", shape=(k,))
    values = [np.random.default_rng(0).dirichlet(np.ones(k))]
    total = dpm.krr_logp(pt.as_tensor_variable(y), theta, eps).sum()
    outs = [total, pt.grad(total, theta)]
    fns, compile_s = {}, {}
    for key, mode in [("numba", None), ("jax_pt", "JAX")]:
        with Timer() as t:
            f = pytensor.function([theta], outs, mode=mode)
            f.trust_input = True
            f(*values)
        compile_s[key] = t.wall
        fns[key] = lambda f=f: [np.asarray(o) for o in f(*values)]
    return fns, compile_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    ns = [10_000] if args.quick else [10_000, 100_000, 1_000_000]
    rounds = 3 if args.quick else 7
    rng = np.random.default_rng(1)
    rows, krr_rows = [], []
    for k in (8, 64):
        for eps in (0.5, 4.0):
            theta = rng.dirichlet(np.ones(k))
            items = rng.choice(k, size=max(ns), p=theta)
            z_all = oue_perturb(items, k, eps, rng)
            for n in ns:
                fns, compile_s = oue_variants(z_all[:n], k, eps)
                ref = fns["numba"]()
                agree = {
                    key: float(
                        max(
                            abs(f()[0] - ref[0]) / abs(ref[0]),
                            np.max(np.abs(f()[1] - ref[1]) / np.maximum(1, np.abs(ref[1]))),
                        )
                    )
                    for key, f in fns.items()
                }
                wall, _, _ = time_variants(fns, rounds)
                med = {key: float(np.median(v)) for key, v in wall.items()}
                row = dict(k=k, eps=eps, n=n)
                row.update({f"{key}_ms": 1e3 * v for key, v in med.items()})
                row.update({f"{key}_vs_numba": v / med["numba"] for key, v in med.items()})
                row["max_rel_diff"] = max(agree.values())
                row["compile_s"] = compile_s
                rows.append(row)
                print(row, flush=True)
            if k == 64:
                y_all = krr_perturb(items, k, eps, rng)
                for n in ns:
                    fns, compile_s = krr_variants(y_all[:n], k, eps)
                    wall, _, _ = time_variants(fns, rounds)
                    med = {key: float(np.median(v)) for key, v in wall.items()}
                    krr_rows.append(
                        dict(
                            k=k,
                            eps=eps,
                            n=n,
                            numba_ms=1e3 * med["numba"],
                            jax_pt_ms=1e3 * med["jax_pt"],
                        )
                    )
                    print(krr_rows[-1], flush=True)

    cols = [
        ("k", "k"),
        ("eps", "ε"),
        ("n", "N"),
        ("numba_ms", "numba (tables) ms"),
        ("numba_dense_ms", "numba dense ms"),
        ("jax_pt_ms", "JAX (PyTensor graph) ms"),
        ("jax_hand_ms", "JAX (hand, dense) ms"),
        ("numba_dense_vs_numba", "dense / tables"),
        ("jax_pt_vs_numba", "JAX-pt / numba"),
        ("jax_hand_vs_numba", "JAX-hand / numba"),
        ("max_rel_diff", "max rel. diff"),
    ]
    big = [r for r in rows if r["k"] == 64 and r["n"] == max(ns)]
    verdict = ", ".join(f"ε = {r['eps']:g}: {r['numba_ms']:.1f} ms" for r in big)
    body = [
        "# Frequency oracles: logp + gradient",
        "",
        "Median wall time of one `sum(logp)` + gradient w.r.t. θ (all reports observed "
        "constants), interleaved rounds in one run. Ratios > 1 mean slower than the default.",
        "",
        f"**Issue target (OUE, N = {max(ns):,}, k = 64, < 100 ms): {verdict}.**",
        "",
        "## OUE",
        "",
        md_table(rows, cols),
        "## k-RR (one gather per report)",
        "",
        md_table(
            krr_rows,
            [
                ("k", "k"),
                ("eps", "ε"),
                ("n", "N"),
                ("numba_ms", "numba ms"),
                ("jax_pt_ms", "JAX ms"),
            ],
        ),
    ]
    write_results("frequency_logp", info, "\n".join(body), {"oue": rows, "krr": krr_rows}, t_start)


if __name__ == "__main__":
    main()
