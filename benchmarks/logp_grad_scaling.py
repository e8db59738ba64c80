"""Joint log-likelihood + gradient: wall time per report vs N, epsilon and backend.

For each distribution

* ``LaplacePerturbedClippedNormal(mu=1, sigma=2, lower=-5, upper=5, epsilon)`` (gradient
  w.r.t. mu and sigma), data x ~ Normal(1, 2);
* ``LaplacePerturbedClippedExponential(lam=0.7, upper=5, epsilon)`` (gradient w.r.t. lam),
  data x ~ Exponential(rate 0.7);

each epsilon in {0.1, 1, 4} and each N in {1e3, 1e4, 1e5, 1e6}, the function
``(params) -> (sum logp, d/dparams)`` is built the way a PyMC model builds it: the reports are
observed *constants* (so the index set of the reports inside the clipping interval is folded
at compile time, as in ``pm.Model``), the parameters are scalar inputs, and
``pm.logp(dist, z).sum()`` and ``pt.grad`` of it are compiled with

* ``numba``: PyTensor's default mode (Numba linker), the backend PyMC and nutpie use;
* ``c``: ``Mode(linker="cvm", optimizer="fast_run")``;
* ``jax_pt``: ``mode="JAX"`` (PyTensor's JAX backend: one ``jax.jit`` of the same graph);
* ``jax_hand``: a hand-written ``jax.numpy`` version of the same closed form
  (``jax.scipy.special.erfcx`` exists in the installed jax), ``jax.jit(jax.value_and_grad)``,
  reports passed as arrays split into "inside" and "outside" once in NumPy.

Timing: all variants of one configuration are timed in interleaved rounds (the order rotates
each round); each batch starts with one untimed call and then repeats the call until it lasts
about 30 ms (batch size from the fastest of 5 calibration calls) (15 rounds for N <= 1e4, 11 for 1e5,
7 for 1e6); the per-call time of a
variant is the median over rounds; the numba/x ratios are medians of per-round ratios (the
machine is shared, so ratios measured side by side are more reliable than absolute times);
a second ratio, of the fastest (minimum) CPU time per call of each variant, is less sensitive
to bursts of load from other jobs.
Every call's outputs are materialised as NumPy arrays (which blocks on JAX's async dispatch).

Run: ``.venv/bin/python benchmarks/logp_grad_scaling.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402
import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from _common import Timer, machine_info, md_table, time_variants, write_results  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402

import pymc_dpnoise as pmd  # noqa: E402

NAME = "logp_grad_scaling"
LOWER, UPPER = -5.0, 5.0
MU, SIGMA = 1.0, 2.0
EXP_UPPER, LAM = 5.0, 0.7

# --------------------------------------------------------------------------------------------
# Hand-written jax.numpy versions of pymc_dpnoise.math (same formulas, same branch choices)
# --------------------------------------------------------------------------------------------
_SQRT2 = math.sqrt(2.0)
_LOG2 = math.log(2.0)


def _j_log1mexp(x):
    return jnp.where(x < math.log(0.5), jnp.log1p(-jnp.exp(x)), jnp.log(-jnp.expm1(x)))


def _j_log_ndtr(x):
    neg = x < -1.0
    xl = jnp.where(neg, x, -1.0)
    xr = jnp.where(neg, -1.0, x)
    left = jnp.log(jsp.erfcx(-xl / _SQRT2)) - _LOG2 - 0.5 * xl**2
    right = jnp.log1p(-0.5 * jsp.erfc(xr / _SQRT2))
    return jnp.where(neg, left, right)


def _j_tilted_tails(x, kappa):
    up = x >= kappa
    u = (x - kappa) / _SQRT2
    au = jnp.where(up, u, -u)
    w = jnp.log(jsp.erfcx(au)) - _LOG2
    near = w - 0.5 * x**2
    far = au**2 - 0.5 * x**2 + _j_log1mexp(w - au**2)
    return jnp.where(up, far, near), jnp.where(up, near, far)


def _j_log_tilted_interval(lo, hi, kappa):
    shift = kappa * (hi - lo)
    e_lo, f_lo = _j_tilted_tails(lo, kappa)
    e_hi, f_hi = _j_tilted_tails(hi, kappa)
    lower_form = lo <= kappa
    big = jnp.where(lower_form, e_hi, f_lo - shift)
    small = jnp.where(lower_form, e_lo - shift, f_hi)
    return big + _j_log1mexp(small - big)


def _j_lse(*terms):
    m = terms[0]
    for t in terms[1:]:
        m = jnp.maximum(m, t)
    tot = jnp.exp(terms[0] - m)
    for t in terms[1:]:
        tot = tot + jnp.exp(t - m)
    return m + jnp.log(tot)


def _j_normal_total(mu, sigma, z_in, z_out, lower, upper, epsilon):
    s = (upper - lower) / epsilon
    kappa = sigma / s
    alpha = (lower - mu) / sigma
    beta = (upper - mu) / sigma
    lphi_a, lphi_b = _j_log_ndtr(alpha), _j_log_ndtr(-beta)
    log_2s = jnp.log(2.0 * s)
    # outside: affine in z
    g_left = _j_lse(lphi_a, lphi_b - epsilon, _j_log_tilted_interval(-beta, -alpha, kappa))
    g_right = _j_lse(lphi_b, lphi_a - epsilon, _j_log_tilted_interval(alpha, beta, kappa))
    out = jnp.where(z_out <= lower, g_left - (lower - z_out) / s, g_right - (z_out - upper) / s)
    # inside
    zeta = (z_in - mu) / sigma
    inn = _j_lse(
        lphi_a - (z_in - lower) / s,
        lphi_b - (upper - z_in) / s,
        _j_log_tilted_interval(alpha, zeta, kappa),
        _j_log_tilted_interval(-beta, -zeta, kappa),
    )
    return jnp.sum(out) + jnp.sum(inn) - log_2s * (z_in.shape[0] + z_out.shape[0])


def _j_log_exprel(y):
    small = jnp.abs(y) < 1e-3
    ys = jnp.where(small, 0.0, y)
    ay = jnp.where(small, 1.0, jnp.abs(ys))
    big = jnp.maximum(ys, 0.0) + _j_log1mexp(-ay) - jnp.log(ay)
    yt = jnp.where(small, y, 0.0)
    series = yt / 2 + yt**2 / 24 - yt**4 / 2880
    return jnp.where(small, series, big)


def _j_log_g(a, length):
    return jnp.log(length) + _j_log_exprel(-a * length)


def _j_exp_total(lam, z_in, z_out, upper, epsilon):
    inv_b = epsilon / upper
    atom = -lam * upper
    log_lam = jnp.log(lam)
    g_left = _j_lse(log_lam + _j_log_g(lam + inv_b, upper), atom - epsilon)
    g_right = _j_lse(log_lam + _j_log_g(lam - inv_b, upper), atom + epsilon)
    out = jnp.where(z_out <= 0.0, g_left + z_out * inv_b, g_right - z_out * inv_b)
    inn = _j_lse(
        log_lam - z_in * inv_b + _j_log_g(lam - inv_b, z_in),
        log_lam - lam * z_in + _j_log_g(lam + inv_b, upper - z_in),
        -lam * upper - (upper - z_in) * inv_b,
    )
    log_2b = jnp.log(2.0 * upper / epsilon)
    return jnp.sum(out) + jnp.sum(inn) - log_2b * (z_in.shape[0] + z_out.shape[0])


# --------------------------------------------------------------------------------------------
# Configurations
# --------------------------------------------------------------------------------------------


def make_data(dist: str, eps: float, n_max: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dist == "normal":
        return pmd.mechanisms.perturb_clipped(rng.normal(MU, SIGMA, n_max), LOWER, UPPER, eps, rng)
    return pmd.mechanisms.perturb_clipped_exponential(
        rng.exponential(1.0 / LAM, n_max), EXP_UPPER, eps, rng
    )


def build(dist: str, eps: float, z: np.ndarray):
    """Return (dict of variant -> zero-arg callable returning list of np arrays, compile times,
    warnings, fraction inside)."""
    if dist == "normal":
        params = [pt.dscalar("mu"), pt.dscalar("sigma")]
        values = [np.array(MU), np.array(SIGMA)]
        rv = pmd.LaplacePerturbedClippedNormal.dist(
            mu=params[0], sigma=params[1], lower=LOWER, upper=UPPER, epsilon=eps
        )
        lo, hi = LOWER, UPPER
    else:
        params = [pt.dscalar("lam")]
        values = [np.array(LAM)]
        rv = pmd.LaplacePerturbedClippedExponential.dist(
            lam=params[0], upper=EXP_UPPER, epsilon=eps
        )
        lo, hi = 0.0, EXP_UPPER
    lp = pm.logp(rv, z).sum()
    grads = pt.grad(lp, params)
    outs = [lp, *grads]

    fns, compile_s, warns = {}, {}, {}
    modes = {
        "numba": None,  # PyTensor default (linker "auto" -> Numba)
        "c": Mode(linker="cvm", optimizer="fast_run"),
        "jax_pt": "JAX",
    }
    for key, mode in modes.items():
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            with Timer() as t:
                f = pytensor.function(params, outs, mode=mode)
                f.trust_input = True
                f(*values)  # JAX jit-compiles on the first call
        compile_s[key] = t.wall
        warns[key] = sorted(
            {
                f"{w.category.__name__}: {str(w.message).splitlines()[0][:160]}"
                for w in rec
                if "BLAS" not in str(w.message)
            }
        )
        fns[key] = lambda f=f: [np.asarray(o) for o in f(*values)]

    inside = (z > lo) & (z < hi)
    z_in = jnp.asarray(z[inside])
    z_out = jnp.asarray(z[~inside])
    if dist == "normal":

        def total(mu, sigma, z_in, z_out):
            return _j_normal_total(mu, sigma, z_in, z_out, LOWER, UPPER, eps)

        argnums = (0, 1)
    else:

        def total(lam, z_in, z_out):
            return _j_exp_total(lam, z_in, z_out, EXP_UPPER, eps)

        argnums = (0,)
    vg = jax.jit(jax.value_and_grad(total, argnums=argnums))
    jvals = [jnp.asarray(v) for v in values]
    with Timer() as t:
        jax.block_until_ready(vg(*jvals, z_in, z_out))
    compile_s["jax_hand"] = t.wall
    warns["jax_hand"] = []

    def call_hand():
        v, g = vg(*jvals, z_in, z_out)
        return [np.asarray(v), *[np.asarray(x) for x in g]]

    fns["jax_hand"] = call_hand
    return fns, compile_s, warns, float(inside.mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="N up to 1e4, 3 rounds (smoke test)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    info = machine_info()
    info["pytensor_mode"] = str(pytensor.config.mode)
    info["pytensor_linker"] = str(pytensor.config.linker)
    info["jax_devices"] = [str(d) for d in jax.devices()]

    ns = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    epss = [0.1, 1.0, 4.0]
    dists = ["normal", "exponential"]
    rows, agree = [], []
    for dist in dists:
        for ie, eps in enumerate(epss):
            z_all = make_data(dist, eps, max(ns), seed=1000 + 10 * ie + (dist == "normal"))
            for n in ns:
                z = z_all[:n]
                fns, compile_s, warns, frac_in = build(dist, eps, z)
                # correctness: all variants agree with numba
                ref = fns["numba"]()
                maxrel = {}
                for k, f in fns.items():
                    out = f()
                    maxrel[k] = max(
                        float(abs(a - b) / max(abs(b), 1e-300))
                        for a, b in zip(out, ref, strict=True)
                    )
                rounds = 3 if args.quick else (15 if n <= 10_000 else 11 if n <= 100_000 else 7)
                wall, cpu, reps = time_variants(fns, rounds)
                row = {
                    "dist": dist,
                    "eps": eps,
                    "N": n,
                    "frac_inside": frac_in,
                    "rounds": rounds,
                    "batch_reps": reps,
                    "compile_s": compile_s,
                    "warnings": warns,
                    "max_rel_diff_vs_numba": maxrel,
                    "logp": float(ref[0]),
                }
                for k in fns:
                    row[f"ns_{k}"] = float(np.median(wall[k]) / n * 1e9)
                    row[f"cpu_ns_{k}"] = float(np.median(cpu[k]) / n * 1e9)
                    row[f"wall_all_{k}"] = wall[k]
                for k in ("c", "jax_pt", "jax_hand"):
                    ratios = np.asarray(wall["numba"]) / np.asarray(wall[k])
                    row[f"numba_over_{k}"] = float(np.median(ratios))
                    cratios = np.asarray(cpu["numba"]) / np.asarray(cpu[k])
                    row[f"cpu_numba_over_{k}"] = float(np.median(cratios))
                    # ratio of the fastest batches: least disturbed by other jobs
                    row[f"min_numba_over_{k}"] = float(np.min(cpu["numba"]) / np.min(cpu[k]))
                rows.append(row)
                print(
                    f"{dist:11s} eps={eps:<4} N={n:>8} in={frac_in:.2f} "
                    + " ".join(f"{k}={row['ns_' + k]:.1f}ns" for k in fns)
                    + f" | numba/jax_pt={row['numba_over_jax_pt']:.2f}"
                    f" numba/jax_hand={row['numba_over_jax_hand']:.2f}"
                    f" numba/c={row['numba_over_c']:.2f}"
                    f" | compile {', '.join(f'{k}={v:.1f}s' for k, v in compile_s.items())}"
                    f" | maxrel {max(maxrel.values()):.1e}",
                    flush=True,
                )
                agree.append(max(maxrel.values()))

    # ---------------------------------------------------------------------- markdown
    cols = [
        ("dist", "distribution"),
        ("eps", "ε"),
        ("N", "N"),
        ("frac_inside", "frac. inside"),
        ("ns_numba", "numba ns/report"),
        ("ns_c", "C ns/report"),
        ("ns_jax_pt", "JAX (PyTensor) ns/report"),
        ("ns_jax_hand", "JAX (hand) ns/report"),
        ("numba_over_jax_pt", "numba/JAX-pt"),
        ("numba_over_jax_hand", "numba/JAX-hand"),
        ("numba_over_c", "numba/C"),
    ]
    cpu_cols = [
        ("dist", "distribution"),
        ("eps", "ε"),
        ("N", "N"),
        ("cpu_ns_numba", "numba CPU ns/report"),
        ("cpu_ns_c", "C"),
        ("cpu_ns_jax_pt", "JAX-pt"),
        ("cpu_ns_jax_hand", "JAX-hand"),
        ("cpu_numba_over_jax_pt", "numba/JAX-pt (CPU)"),
        ("cpu_numba_over_jax_hand", "numba/JAX-hand (CPU)"),
        ("min_numba_over_jax_pt", "numba/JAX-pt (min CPU)"),
        ("min_numba_over_jax_hand", "numba/JAX-hand (min CPU)"),
        ("min_numba_over_c", "numba/C (min CPU)"),
    ]
    comp_rows = [
        {
            "dist": r["dist"],
            "eps": r["eps"],
            "N": r["N"],
            **{f"compile_{k}": v for k, v in r["compile_s"].items()},
            "maxrel": max(r["max_rel_diff_vs_numba"].values()),
        }
        for r in rows
    ]
    comp_cols = [
        ("dist", "distribution"),
        ("eps", "ε"),
        ("N", "N"),
        ("compile_numba", "numba s"),
        ("compile_c", "C s"),
        ("compile_jax_pt", "JAX-pt s"),
        ("compile_jax_hand", "JAX-hand s"),
        ("maxrel", "max rel. diff of (logp, grad) vs numba"),
    ]
    big = [r for r in rows if r["N"] >= 100_000]
    summ, summ_min = {}, {}
    for k in ("jax_pt", "jax_hand", "c"):
        vals = [r[f"numba_over_{k}"] for r in big] or [r[f"numba_over_{k}"] for r in rows]
        summ[k] = (min(vals), float(np.median(vals)), max(vals))
        vals = [r[f"min_numba_over_{k}"] for r in big] or [r[f"min_numba_over_{k}"] for r in rows]
        summ_min[k] = (min(vals), float(np.median(vals)), max(vals))
    all_warns = sorted({w for r in rows for ws in r["warnings"].values() for w in ws})

    md = [
        "# logp + gradient cost per report",
        "",
        "Joint `sum(logp)` and its gradient w.r.t. the parameters (normal: mu, sigma at mu=1, "
        "sigma=2, clip [-5, 5]; exponential: lam=0.7, upper=5), reports observed as constants "
        "(as in `pm.Model`). Wall time per call divided by N, median over interleaved rounds. "
        "`numba/X` > 1 means Numba is slower than X. JAX-pt = the same PyTensor graph compiled "
        'with `mode="JAX"`; JAX-hand = hand-written `jax.numpy` version of the same formulas '
        "(`jax.scipy.special.erfcx` is available in the installed jax).",
        "",
        f"Summary over N >= 1e5 (min / median / max of numba/X): "
        f"numba/JAX-pt {summ['jax_pt'][0]:.2f} / {summ['jax_pt'][1]:.2f} / {summ['jax_pt'][2]:.2f}; "
        f"numba/JAX-hand {summ['jax_hand'][0]:.2f} / {summ['jax_hand'][1]:.2f} / "
        f"{summ['jax_hand'][2]:.2f}; numba/C {summ['c'][0]:.2f} / {summ['c'][1]:.2f} / "
        f"{summ['c'][2]:.2f} (wall, median of per-round ratios). Same from the fastest CPU "
        f"time of each variant: numba/JAX-pt {summ_min['jax_pt'][0]:.2f} / "
        f"{summ_min['jax_pt'][1]:.2f} / {summ_min['jax_pt'][2]:.2f}; numba/JAX-hand "
        f"{summ_min['jax_hand'][0]:.2f} / {summ_min['jax_hand'][1]:.2f} / "
        f"{summ_min['jax_hand'][2]:.2f}; numba/C {summ_min['c'][0]:.2f} / "
        f"{summ_min['c'][1]:.2f} / {summ_min['c'][2]:.2f}. "
        "Target in the issue: numba within 1.2x of JAX.",
        "",
        "## Wall time",
        "",
        md_table(rows, cols),
        "## CPU time (all threads of the process; less sensitive to the shared machine)",
        "",
        md_table(rows, cpu_cols),
        "## Compile time (first call included) and agreement",
        "",
        md_table(comp_rows, comp_cols),
        "## Warnings raised while compiling (BLAS warning of the C backend omitted)",
        "",
        *([f"- {w}" for w in all_warns] or ["- none"]),
        "",
    ]
    write_results(
        NAME,
        info,
        "\n".join(md),
        {
            "rows": rows,
            "summary_numba_over": summ,
            "summary_min_cpu_numba_over": summ_min,
            "max_rel_diff": max(agree),
        },
        t_start,
    )


if __name__ == "__main__":
    main()
