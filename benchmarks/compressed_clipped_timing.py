"""End-to-end time of the clipped-normal posterior, exact vs compressed, N = 1e4 ... 1e8 reports
at epsilon in {0.1, 1, 4}, and the compressed posterior's distance from the exact one.

    nice .venv/bin/python benchmarks/compressed_clipped_timing.py [--quick] [--append]
        [--ns 1e4,1e5,...] [--eps 0.1,1,4] [--exact 1e4:*,1e5:*,1e6:0.1] [--floor ...]

Per cell (N, epsilon) the reports (clipped normal on [-5, 5], mu = 1, sigma = 2, Laplace
noise of scale 10 / epsilon) are written to a Parquet file under /tmp by a child process
(``compressed_clipped._write_parquet``; deleted after the cell).  Each case then runs in a
*fresh* subprocess, so that its peak RSS (``ru_maxrss``) and its in-memory caches are its own:

* ``compressed``: read + summarise (``pmd.summarize`` on the file: DuckDB ``count(*)`` and
  ``GROUP BY``, ``tol=0.01`` as the ``big`` case) + build the model + compile
  (``nutpie.compile_pymc_model``, Numba) + NUTS (``nutpie.sample``, tune = draws = 1000,
  2 chains on 2 cores), as ``compressed_clipped.py big``.
* ``exact``: read the Parquet column into NumPy + build (``LaplacePerturbedClippedNormal``,
  one term per report) + compile + the same NUTS.  Afterwards (not in the total) the logp +
  gradient of the same model is timed (``compressed_clipped._grad_seconds``), so that the
  estimate below can be checked against the measured NUTS time.
* ``estimate`` (cells where an exact NUTS run would take too long): read + build + compile
  are measured, NUTS is *not* run; its time is estimated as the measured time of one logp +
  gradient times the number of gradients per chain the compressed run of the same cell used
  (``n_steps`` summed over tuning and draws, the larger of the two chains: the chains run in
  parallel).  At N = 1e8 the exact model is not even built (~0.8 GB of reports plus the
  per-report temporaries of the gradient would pass the 2 GB budget): the gradient time is
  extrapolated linearly from N = 1e7 and compile + read are taken from N = 1e7, so that row
  is a lower bound.
* ``floor``: a second exact NUTS run with another seed, the Monte Carlo floor of the distances.

Seeds: exact 1, floor 2, compressed 3.  The compressed run deliberately does not share the
exact run's seed: with a likelihood equal to ~1e-8 nats the two runs would follow the same
trajectories and look closer than Monte Carlo error allows; with different seeds the
compressed-vs-exact distance is directly comparable to the exact-vs-exact floor.

Distances (pooled chains, 2 x 1000 draws): |delta mean| / sd_exact and |delta sd| / sd_exact
for mu and sigma, and the unbiased squared MMD (``pymc_dpnoise.diagnostics.mmd``, Gaussian
kernel, median bandwidth) with both parameters divided by their exact posterior sd.

The results are rewritten after every cell (``--append`` resumes an interrupted run and keeps
its cells).  Times on a shared machine are inflated: the headline is the exact / compressed
ratio of one cell, both measured within minutes of each other; the load average at the start
and end of every case is recorded.  ``new_cache_files`` counts Numba cache index files
(``~/.pytensor/numba/*.nbi``) created while the case ran (other processes on the machine may
add to it): 0 means every compiled function came from the warm cache.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, loadavg, machine_info, md_table, write_results
from compressed_clipped import HI, LO, _grad_seconds, _model, _write_parquet

NAME = "compressed_clipped_timing"
TMP = Path("/tmp/pmd_timing")
SEEDS = {"exact": 1, "floor": 2, "compressed": 3}
CACHE = Path.home() / ".pytensor" / "numba"
KINDS = ("compressed", "exact", "floor", "estimate")


def _loads(case):
    return [x for x in (case.get("load_start"), case.get("load_end")) if x]


def _cache_files():
    try:
        return sum(1 for _ in CACHE.glob("*.nbi"))
    except OSError:
        return -1


def _exact_model(z, eps):
    import pymc as pm

    import pymc_dpnoise as pmd

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pmd.LaplacePerturbedClippedNormal("z", mu, sigma, LO, HI, eps, observed=z)
    return model


def _nuts(compiled, tune, draws, seed):
    import nutpie

    kw = dict(draws=draws, tune=tune, chains=2, cores=2, progress_bar=False, seed=seed)
    tr = nutpie.sample(compiled, **kw)
    steps = tr.warmup_sample_stats["n_steps"].sum("draw") + tr.sample_stats["n_steps"].sum("draw")
    post = np.stack([tr.posterior[v].values.ravel() for v in ("mu", "sigma")], axis=1)
    return dict(
        draws=post,
        grads_per_chain=[int(s) for s in steps.values],
        divergences=int(tr.sample_stats["diverging"].sum()),
    )


def _case(kind, path, n, eps, tune, draws, out, grad_per_chain):
    """One case in this (fresh) process; prints ``RESULT {json}``."""
    import nutpie
    import pyarrow.parquet as pq

    import pymc_dpnoise as pmd

    res = dict(kind=kind, N=n, eps=eps, load_start=loadavg())
    t0 = time.perf_counter()
    if kind == "compressed":
        summary = pmd.summarize(path, LO, HI, eps, tol=0.01, column="z")
        res["n_bins"] = summary.n_bins
        t1 = time.perf_counter()
        model = _model(summary)
    else:
        z = pq.read_table(path, columns=["z"]).column("z").to_numpy()
        t1 = time.perf_counter()
        model = _exact_model(z, eps)
    t2 = time.perf_counter()
    compiled = nutpie.compile_pymc_model(model)
    t3 = time.perf_counter()
    res.update(read_s=t1 - t0, build_s=t2 - t1, compile_s=t3 - t2)
    if kind == "estimate":
        res["grad_s"] = _grad_seconds(model, reps=max(1, 300_000 // n))
        res["nuts_s"] = res["grad_s"] * max(grad_per_chain)
        res["grads_per_chain"] = grad_per_chain
    else:
        s = _nuts(compiled, tune, draws, SEEDS[kind])
        res["nuts_s"] = time.perf_counter() - t3
        np.save(out, s.pop("draws"))
        res.update(s)
        if kind == "exact":
            res["grad_s"] = _grad_seconds(model, reps=max(1, 300_000 // n))
            res["nuts_predicted_s"] = res["grad_s"] * max(res["grads_per_chain"])
    res["total_s"] = res["read_s"] + res["build_s"] + res["compile_s"] + res["nuts_s"]
    res["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    res["load_end"] = loadavg()
    print("RESULT " + json.dumps(res), flush=True)


def _run_case(kind, path, n, eps, args, grad_per_chain=None):
    out = TMP / f"{kind}_{n}_{eps}.npy"
    cmd = [sys.executable, __file__, "_case", kind, str(path), str(n), str(eps)]
    cmd += [str(args.tune), str(args.draws), str(out), json.dumps(grad_per_chain)]
    c0 = _cache_files()
    w0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        print(f"{kind} N={n} eps={eps} failed (exit {p.returncode})", flush=True)
        return None, None
    res = json.loads(lines[-1][7:])
    res["process_wall_s"] = time.perf_counter() - w0
    res["new_cache_files"] = _cache_files() - c0
    print(kind, json.dumps(res), flush=True)
    return res, (np.load(out) if out.exists() else None)


def _distance(ref, d):
    from pymc_dpnoise.diagnostics import mmd

    sd = ref.std(axis=0)
    dm = np.abs(d.mean(axis=0) - ref.mean(axis=0)) / sd
    ds = np.abs(d.std(axis=0) - sd) / sd
    return dict(
        dmean_mu=dm[0],
        dmean_sigma=dm[1],
        dsd_mu=ds[0],
        dsd_sigma=ds[1],
        worst=max(dm.max(), ds.max()),
        mmd=mmd(ref / sd, d / sd),
    )


def _cells_spec(spec, ns, eps_list):
    """'1e4:*,1e6:0.1' -> {(10000, 0.1), ...} restricted to the grid."""
    out = set()
    for item in filter(None, spec.split(",")):
        n, e = item.split(":")
        for ee in eps_list if e == "*" else [float(e)]:
            if int(float(n)) in ns and ee in eps_list:
                out.add((int(float(n)), ee))
    return out


def _fmt_n(n):
    return f"1e{round(float(np.log10(n)))}"


def _report(cells, info, t_start, args, done, total, previous=()):
    rows, acc = [], []
    # how far the per-gradient estimate falls short of the measured NUTS time where the exact
    # run was done at N >= 1e5 (per-gradient cost dominant): applied to the estimated rows
    meas = [
        c["exact"]["nuts_predicted_s"] / c["exact"]["nuts_s"]
        for c in cells
        if c.get("exact") and c["N"] >= 100_000
    ]
    cal = float(np.median(meas)) if meas else None
    loads = [x[0] for c in cells for k in KINDS if c.get(k) for x in _loads(c[k])]
    for c in sorted(cells, key=lambda c: (c["N"], c["eps"])):
        cp, ex = c["compressed"], c.get("exact") or c.get("estimate")
        est = c.get("exact") is None
        row = dict(N=_fmt_n(c["N"]), eps=c["eps"], bins=cp["n_bins"] if cp else None)
        if cp:
            row.update(
                c_read=cp["read_s"],
                c_compile=cp["build_s"] + cp["compile_s"],
                c_nuts=cp["nuts_s"],
                c_total=cp["total_s"],
                c_rss=cp["peak_rss_gb"],
                c_grads=max(cp["grads_per_chain"]),
                div=f"{cp['divergences']}/{(c.get('exact') or {}).get('divergences', '–')}",
            )
        if ex:
            row.update(
                e_kind=c.get("exact_kind", "estimated" if est else "measured"),
                e_read=ex["read_s"],
                e_compile=ex["build_s"] + ex["compile_s"],
                e_nuts=ex["nuts_s"],
                e_total=ex["total_s"],
                e_rss=ex["peak_rss_gb"],
                grad_ms=ex["grad_s"] * 1e3,
                ns_report=ex["grad_s"] / c["N"] * 1e9,
            )
            if not est:
                row["pred_over_meas"] = ex["nuts_predicted_s"] / ex["nuts_s"]
            if cp:
                row["ratio"] = ex["total_s"] / cp["total_s"]
                if est and cal:
                    row["ratio_cal"] = (ex["total_s"] + ex["nuts_s"] * (1 / cal - 1)) / cp[
                        "total_s"
                    ]
        row["load"] = (cp or ex or {}).get("load_start", [None])[0]
        rows.append(row)
        for what in ("compressed", "floor"):
            if c.get(f"dist_{what}"):
                acc.append(
                    dict(
                        N=_fmt_n(c["N"]),
                        eps=c["eps"],
                        vs_exact="compressed"
                        if what == "compressed"
                        else "exact, 2nd seed (floor)",
                        **c[f"dist_{what}"],
                    )
                )
    head = [
        ("N", "N"),
        ("eps", "ε"),
        ("bins", "bins"),
        ("c_total", "compressed s"),
        ("e_total", "exact s"),
        ("e_kind", "exact is"),
        ("ratio", "exact / compressed"),
        ("ratio_cal", "ratio, NUTS estimate / calibration"),
        ("c_rss", "compressed peak GB"),
        ("e_rss", "exact peak GB"),
        ("load", "load (1-min) at start"),
    ]
    cols = [
        ("N", "N"),
        ("eps", "ε"),
        ("c_read", "C read+summ. s"),
        ("c_compile", "C build+compile s"),
        ("c_nuts", "C NUTS s"),
        ("c_grads", "C grads/chain"),
        ("e_read", "E read s"),
        ("e_compile", "E build+compile s"),
        ("e_nuts", "E NUTS s"),
        ("grad_ms", "E ms/grad"),
        ("ns_report", "E ns/report/grad"),
        ("pred_over_meas", "E NUTS predicted/measured"),
        ("div", "divergences C/E"),
    ]
    acols = [
        ("N", "N"),
        ("eps", "ε"),
        ("vs_exact", "vs exact"),
        ("dmean_mu", "|Δmean| mu"),
        ("dmean_sigma", "|Δmean| sigma"),
        ("dsd_mu", "|Δsd| mu"),
        ("dsd_sigma", "|Δsd| sigma"),
        ("worst", "worst"),
        ("mmd", "MMD²"),
    ]
    status = "" if done == total else f"**Partial run: {done} of {total} cells done.**\n\n"
    prev = "".join(
        f"- earlier invocation (its cells kept by `--append`): `{m['command']}`, started "
        f"{m['started']}, load at start {m['loadavg_at_start']}, at end {m['loadavg_at_end']}\n"
        for m in previous
    )
    cal_txt = (
        f"On the cells where the exact NUTS ran at N >= 1e5 the estimate (ms/grad x gradients "
        f"per chain) gave a median {cal:.2f} of the measured NUTS time (the chains share the 2 "
        "cores with other jobs; the ms/grad is a best of 5); the `ratio, NUTS estimate / "
        "calibration` column divides the estimated NUTS time by that factor. "
        if cal
        else ""
    )
    body = (
        "## End to end, exact vs compressed, clipped normal on [-5, 5]\n\n"
        + status
        + f"NUTS: nutpie, tune = {args.tune}, draws = {args.draws}, 2 chains on 2 cores. "
        "Every case in a fresh process; total = read (+ summarise) + build + compile + NUTS, "
        "file generation excluded; imports done on first use (pymc, DuckDB) count in the stage "
        "that first needs them. `exact is` measured: NUTS run; estimated: read + build + "
        "compile measured, NUTS = ms/grad x the compressed run's gradients per chain (lower "
        "bound); extrapolated: N = 1e8, ms/grad and read x 10 and build + compile from "
        f"N = 1e7 (lower bound). {cal_txt}Peak GB = ru_maxrss of the case's process. 1-min "
        f"load average over all cases: {min(loads, default=0):.1f} to "
        f"{max(loads, default=0):.1f} on 2 CPUs.\n\n"
        + md_table(rows, head)
        + "\n\n### Stages (C = compressed, E = exact)\n\n"
        + md_table(rows, cols)
        + "\n\n## Distance from the exact posterior (units of the exact posterior sd)\n\n"
        "Pooled 2 x 1000 draws; MMD² unbiased (can be < 0), parameters divided by the exact "
        "posterior sd. The floor row is a second exact run with another seed.\n\n"
        + (md_table(acc, acols) if acc else "(none yet)\n")
        + ("\n" + prev if prev else "")
    )
    data = dict(cells=cells, rows=rows, accuracy=acc, previous_runs=list(previous))
    write_results(NAME, info, body, data, t_start)
    return body


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--append", action="store_true", help="keep the cells of the results file")
    ap.add_argument("--ns", default="1e4,1e5,1e6,1e7,1e8")
    ap.add_argument("--eps", default="0.1,1,4")
    ap.add_argument("--exact", default="1e4:*,1e5:*,1e6:0.1", help="cells with an exact NUTS run")
    ap.add_argument("--floor", default="1e4:*,1e5:*", help="cells with a second exact run")
    ap.add_argument("--estimate-max-n", type=float, default=1e7)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args(argv)
    if args.quick:
        args.ns, args.eps, args.exact, args.floor = "1e4,1e6", "1", "1e4:*", "1e4:*"
        args.tune = args.draws = 200
    ns = [int(float(x)) for x in args.ns.split(",")]
    eps_list = [float(x) for x in args.eps.split(",")]
    exact, floor = (
        _cells_spec(args.exact, ns, eps_list),
        _cells_spec(args.floor, ns, eps_list),
    )
    t_start = time.perf_counter()
    info = machine_info()
    cells, previous = [], []
    if args.append and (RESULTS / f"{NAME}.json").exists():
        old = json.loads((RESULTS / f"{NAME}.json").read_text())
        cells, previous = old["cells"], [*old.get("previous_runs", []), old["machine"]]
    todo = [(n, e) for n in ns for e in eps_list]
    todo = [c for c in todo if not any((d["N"], d["eps"]) == c for d in cells)]
    total = len(cells) + len(todo)
    TMP.mkdir(exist_ok=True)
    body = ""
    for n, eps in todo:
        path = TMP / f"reports_{n}_{eps}.parquet"
        t = time.perf_counter()
        _write_parquet(path, n, eps)
        cell = dict(N=n, eps=eps, gen_s=time.perf_counter() - t)
        cell["compressed"], dc = _run_case("compressed", path, n, eps, args)
        grads = cell["compressed"]["grads_per_chain"] if cell["compressed"] else None
        if (n, eps) in exact:
            cell["exact"], de = _run_case("exact", path, n, eps, args)
            if (n, eps) in floor:
                cell["floor"], df = _run_case("floor", path, n, eps, args)
                if de is not None and df is not None:
                    cell["dist_floor"] = _distance(de, df)
            if de is not None and dc is not None:
                cell["dist_compressed"] = _distance(de, dc)
        elif n <= args.estimate_max_n and grads:
            cell["estimate"], _ = _run_case("estimate", path, n, eps, args, grads)
        elif grads:  # N = 1e8: extrapolate from the largest estimated N at this epsilon
            prev = [
                c
                for c in cells
                if c["eps"] == eps and c.get("estimate") and c.get("exact_kind") is None
            ]
            if prev:
                p = max(prev, key=lambda c: c["N"])["estimate"]
                f = n / p["N"]
                g = p["grad_s"] * f
                cell["estimate"] = dict(
                    N=n,
                    read_s=p["read_s"] * f,
                    build_s=p["build_s"],
                    compile_s=p["compile_s"],
                    grad_s=g,
                    nuts_s=g * max(grads),
                    peak_rss_gb=None,
                    extrapolated_from=p["N"],
                )
                cell["estimate"]["total_s"] = sum(
                    cell["estimate"][k] for k in ("read_s", "build_s", "compile_s", "nuts_s")
                )
                cell["exact_kind"] = "extrapolated"
        path.unlink(missing_ok=True)
        cells.append(cell)
        body = _report(cells, info, t_start, args, len(cells), total, previous)
    print(body)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if len(sys.argv) > 1 and sys.argv[1] == "_case":
        kind, path, n, eps, tune, draws, out, gpc = sys.argv[2:10]
        _case(kind, path, int(n), float(eps), int(tune), int(draws), out, json.loads(gpc))
    else:
        main()
