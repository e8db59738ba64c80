"""Peak memory of compile + logp + gradient at 10⁷ reports (issue 17, point 5: budget 2 GB).

Each case runs in a fresh subprocess (``python benchmarks/memory_budgets.py --child CASE N``):
it loads the reports from an ``.npy`` file written by the parent (so the release simulation is
not counted), builds the ``pm.Model``, compiles ``logp`` and ``dlogp`` and evaluates both
once.  The peak resident set size is the child's ``VmHWM`` (``/proc/self/status``), which
includes the interpreter with PyMC, PyTensor and Numba imported (the ``baseline`` row: the
same child that only imports and stops).

Cases

* ``oue_patterns``: OUE reports (k = 16 bits) compressed to distinct bit patterns and their
  counts with :func:`pymc_dpnoise.mechanisms.compress_reports` (the reports are i.i.d., so
  the likelihood depends on the data only through the pattern counts), then
  ``OUELikelihood(observed=patterns, counts=counts)``.  The compression runs in the child
  and is counted.
* ``oue_dense``: the same reports given row by row (no compression), for comparison.
* ``logreg_onepass``: ``PerturbedLogReg`` (d = 2, default quadrature) on the reports row by
  row with the label term evaluated in one pass over all reports (the graph used below
  ``BLOCK_THRESHOLD`` reports, forced here by raising the threshold): several (N, 40) arrays
  in the value and gradient, about 2 kB per report.
* ``logreg_blocks``: the same model with the default choice, which from
  ``BLOCK_THRESHOLD`` = 10⁵ reports on evaluates the label term by a ``scan`` over blocks of
  ``BLOCK_ROWS`` reports (:func:`pymc_dpnoise.math.regression.perturbed_logreg_logp`).
  There is no exact summary of these reports (the label term depends on every row through
  :math:`z_x^T\beta(\theta)`), so memory still grows with N, but only by O(N) vectors.

Each child also times ``repeat`` further logp + gradient evaluations after the first (the
first includes Numba's JIT compilation, or loading it from Numba's cache): ``eval_s`` is the
first, ``steady_s`` the mean of the others.

Command (from the repository root)::

    .venv/bin/python benchmarks/memory_budgets.py          # about 30 minutes here
    .venv/bin/python benchmarks/memory_budgets.py --quick  # smaller sizes, smoke run
    # re-run only some cases; the other rows are kept from the previous results JSON
    .venv/bin/python benchmarks/memory_budgets.py --cases logreg_onepass logreg_blocks
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine_info, md_table, write_results  # noqa: E402

RESULTS_JSON = HERE / "results" / "memory_budgets.json"
K = 16
D = 2
BUDGET_MB = 2048


def _peak_mb() -> float:
    """Peak RSS of this process image: VmHWM (reset at exec; ``getrusage`` ru_maxrss is not:
    it keeps the high-water mark of the forked parent's memory)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(case: str, path: str) -> dict:
    """Runs in the subprocess: build, compile, evaluate; return the peak RSS and timings."""
    t0 = time.perf_counter()
    import pymc as pm

    import pymc_dpnoise as pmd
    from pymc_dpnoise.math import regression as rmath
    from pymc_dpnoise.mechanisms import compress_reports

    if case == "logreg_onepass":
        rmath.BLOCK_THRESHOLD = np.iinfo(np.int64).max  # force the one-pass graph

    out = {"import_peak_mb": _peak_mb()}
    if case == "baseline":
        out["peak_mb"] = _peak_mb()
        return out
    reports = np.load(path)
    out["n_reports"] = int(reports.shape[0])
    t1 = time.perf_counter()
    with pm.Model() as model:
        if case.startswith("oue"):
            theta = pm.Dirichlet("theta", np.ones(K))
            if case == "oue_patterns":
                patterns, counts = compress_reports(reports)
                del reports
                out["n_patterns"] = int(patterns.shape[0])
                pmd.OUELikelihood("z", p=theta, epsilon=1.0, counts=counts, observed=patterns)
            else:
                pmd.OUELikelihood("z", p=theta, epsilon=1.0, observed=reports)
        else:
            theta = pm.Normal("theta", 0.0, 2.0, shape=D)
            pmd.PerturbedLogReg(
                "z", theta=theta, cov=np.eye(D), sigma_x=0.5, epsilon_y=1.0, observed=reports
            )
    out["build_s"] = time.perf_counter() - t1
    reports = None
    t2 = time.perf_counter()
    logp = model.compile_logp()
    dlogp = model.compile_dlogp()
    out["compile_s"] = time.perf_counter() - t2
    point = model.initial_point()
    t3 = time.perf_counter()
    out["logp"] = float(logp(point))
    g = dlogp(point)
    out["grad_finite"] = bool(np.all(np.isfinite(g)))
    out["eval_s"] = time.perf_counter() - t3
    if case.startswith("logreg"):
        from pytensor.scan.op import Scan

        nodes = dlogp.f.maker.fgraph.apply_nodes
        out["blocked"] = any(isinstance(n.op, Scan) for n in nodes)
    repeat = 3 if out["n_reports"] <= 10**6 else 1
    t4 = time.perf_counter()
    for _ in range(repeat):
        logp(point)
        dlogp(point)
    out["steady_s"] = (time.perf_counter() - t4) / repeat
    out["total_s"] = time.perf_counter() - t0
    out["peak_mb"] = _peak_mb()
    return out


def simulate(case: str, n: int, path: str, seed: int = 0) -> None:
    """Write n privatised reports to ``path`` (chunked, so the parent stays small too)."""
    from pymc_dpnoise.mechanisms import oue_perturb

    rng = np.random.default_rng(seed)
    chunk = 10**6
    if case.startswith("oue"):
        p = rng.dirichlet(np.ones(K))
        out = np.empty((n, K), dtype=np.int8)
        for s in range(0, n, chunk):
            m = min(chunk, n - s)
            out[s : s + m] = oue_perturb(rng.choice(K, size=m, p=p), K, 1.0, rng)
    else:
        theta = np.array([1.0, -0.5])
        out = np.empty((n, D + 1))
        for s in range(0, n, chunk):
            m = min(chunk, n - s)
            x = rng.normal(size=(m, D))
            y = rng.random(m) < 1 / (1 + np.exp(-x @ theta))
            keep = rng.random(m) < 1 / (1 + np.exp(-1.0))
            out[s : s + m, :D] = x + rng.normal(0.0, 0.5, size=(m, D))
            out[s : s + m, D] = np.where(keep, y, ~y)
    np.save(path, out)


def run_child(case: str, n: int, tmp: str) -> dict:
    path = os.path.join(tmp, f"{case}_{n}.npy")
    if case != "baseline":
        simulate(case, n, path)
    cmd = [sys.executable, __file__, "--child", case, path]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"case": case, "n": n, "error": proc.stderr.strip().splitlines()[-1]}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res.update(case=case, n=n)
    if os.path.exists(path):
        os.remove(path)
    return res


CASES = ("oue_patterns", "oue_dense", "logreg_onepass", "logreg_blocks")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--cases",
        nargs="+",
        choices=CASES,
        help="run only these cases (and the baseline); the rows of the other cases are "
        "copied from the previous results JSON, marked as such",
    )
    ap.add_argument("--child", nargs=2, metavar=("CASE", "PATH"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    t_start = time.perf_counter()
    info = machine_info()
    if args.quick:
        plan = [("oue_patterns", 10**5), ("oue_dense", 10**5)]
        plan += [("logreg_onepass", 10**4), ("logreg_onepass", 10**5)]
        plan += [("logreg_blocks", 10**5), ("logreg_blocks", 3 * 10**5)]
    else:
        plan = [("oue_patterns", 10**7), ("oue_dense", 10**6)]
        plan += [("logreg_onepass", n) for n in (10**5, 3 * 10**5, 10**6)]
        plan += [("logreg_blocks", n) for n in (10**5, 10**6, 3 * 10**6, 10**7)]
    previous = []
    if args.cases:
        plan = [(c, n) for c, n in plan if c in args.cases]
        old = RESULTS_JSON.read_text() if RESULTS_JSON.exists() else None
        if old is not None:
            old = json.loads(old)
            started = old.get("machine", {}).get("started", "?")
            for r in old["rows"]:
                if r["case"] in CASES and r["case"] not in args.cases:
                    previous.append({**r, "run": f"previous ({started})"})
    rows = []
    with tempfile.TemporaryDirectory(prefix="pmd_mem_") as tmp:
        for case, n in [("baseline", 0), *plan]:
            r = run_child(case, n, tmp)
            r["run"] = "this"
            print(r, flush=True)
            rows.append(r)
    base = next(r["peak_mb"] for r in rows if r["case"] == "baseline")
    for r in rows:
        if "peak_mb" in r:
            r["over_baseline_mb"] = r["peak_mb"] - base
            r["within_2gb"] = r["peak_mb"] <= BUDGET_MB
    rows = rows[:1] + previous + rows[1:]
    extra = {}
    for case in ("logreg_onepass", "logreg_blocks"):
        lr = [r for r in rows if r["case"] == case and "peak_mb" in r]
        if len(lr) >= 2:
            ns = np.array([r["n"] for r in lr], dtype=float)
            mb = np.array([r["peak_mb"] for r in lr])
            slope, icpt = np.polyfit(ns, mb, 1)
            extra[f"{case}_bytes_per_report"] = slope * 2**20
            extra[f"{case}_peak_mb_at_1e7_linear_fit"] = slope * 1e7 + icpt
    at = {r["case"]: r for r in rows if r.get("n") == 10**6 and "steady_s" in r}
    if "logreg_onepass" in at and "logreg_blocks" in at:
        extra["logreg_steady_s_ratio_blocks_over_onepass_at_1e6"] = (
            at["logreg_blocks"]["steady_s"] / at["logreg_onepass"]["steady_s"]
        )
    cols = [
        ("case", "case"),
        ("n", "reports"),
        ("n_patterns", "distinct patterns"),
        ("peak_mb", "peak RSS (MB)"),
        ("over_baseline_mb", "over import baseline (MB)"),
        ("within_2gb", "≤ 2 GB"),
        ("compile_s", "compile (s)"),
        ("eval_s", "first logp + grad (s, incl. Numba JIT)"),
        ("steady_s", "later logp + grad (s)"),
        ("grad_finite", "finite gradient"),
        ("blocked", "scan over blocks"),
        ("run", "run"),
        ("error", "error"),
    ]
    body = "# Memory budgets (issue 17, point 5)\n\n"
    body += (
        "Peak resident set size of one subprocess that builds the model, compiles logp and "
        "its gradient, and evaluates both once (reports loaded from a file; the release "
        "simulation is not counted; `baseline` = the interpreter with PyMC imported).  "
        "`later logp + grad` is the mean time of further evaluations (3 up to 10⁶ reports, "
        "1 above).\n\n"
    )
    if previous:
        body += (
            "Rows marked `previous (...)` were not re-run here (`--cases` "
            f"{' '.join(args.cases)}): they are copied from the previous results file, "
            "with that run's baseline.\n\n"
        )
    body += md_table(rows, cols) + "\n"
    if "logreg_onepass_bytes_per_report" in extra:
        body += (
            f"`PerturbedLogReg`, label term in one pass: about "
            f"{extra['logreg_onepass_bytes_per_report'] / 1024:.1f} kB per report; the linear "
            f"fit through the measured sizes gives "
            f"{extra['logreg_onepass_peak_mb_at_1e7_linear_fit']:,.0f} MB at 10⁷ reports "
            "(extrapolated, not run).\n"
        )
    if "logreg_blocks_bytes_per_report" in extra:
        body += (
            f"`PerturbedLogReg`, label term over blocks (the default from 10⁵ reports): "
            f"about {extra['logreg_blocks_bytes_per_report']:.0f} bytes per report "
            "(linear fit through the measured sizes).\n"
        )
    if "logreg_steady_s_ratio_blocks_over_onepass_at_1e6" in extra:
        body += (
            "Time per logp + gradient at 10⁶ reports, blocks / one pass (same run): "
            f"{extra['logreg_steady_s_ratio_blocks_over_onepass_at_1e6']:.2f}.\n"
        )
    write_results("memory_budgets", info, body, {"rows": rows, **extra}, t_start)


if __name__ == "__main__":
    main()
