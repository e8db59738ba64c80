"""Compressed (binned) clipped-normal likelihood: end to end at N = 1e8 from Parquet, cost per
gradient vs N, and posterior accuracy against the exact likelihood and against
``pymc_extras.distributions.histogram_approximation`` at the same number of bins.

    .venv/bin/python benchmarks/compressed_clipped.py big        # N = 1e8 Parquet, end to end
    .venv/bin/python benchmarks/compressed_clipped.py accuracy   # N = 1e4, exact vs compressed vs pmx

The Parquet file is written in chunks to /tmp (never in the repository, never all in memory).
Peak memory is ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of this process (the file
generation runs in a child process so that it does not count).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine_info, md_table, write_results

LO, HI, MU, SIGMA = -5.0, 5.0, 1.0, 2.0
PARQUET = Path("/tmp/pmd_compressed_1e8.parquet")


def _write_parquet(path, n, eps, seed=0, chunk=10_000_000):
    code = f"""
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
rng = np.random.default_rng({seed})
schema = pa.schema([("z", pa.float64())])
with pq.ParquetWriter({str(path)!r}, schema) as w:
    left = {n}
    while left > 0:
        m = min({chunk}, left)
        x = np.clip(rng.normal({MU}, {SIGMA}, m), {LO}, {HI})
        z = x + rng.laplace(0.0, ({HI} - {LO}) / {eps}, m)
        w.write_table(pa.table({{"z": z}}), row_group_size=1_000_000)
        left -= m
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def _model(summary):
    import pymc as pm

    import pymc_dpnoise as pmd

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pmd.LaplacePerturbedClippedNormalSummary("z", mu, sigma, observed=summary)
    return model


def _grad_seconds(model, reps=300):
    import pytensor
    import pytensor.tensor as pt

    lp = model.logp()
    fn = pytensor.function(model.value_vars, [lp, *pt.grad(lp, model.value_vars)])
    ip = model.initial_point()
    args = [ip[v.name] for v in model.value_vars]
    fn(*args)
    best = np.inf
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            fn(*args)
        best = min(best, (time.perf_counter() - t) / reps)
    return best


def big(eps=1.0, n=100_000_000):
    import nutpie

    import pymc_dpnoise as pmd

    t_start = time.perf_counter()
    info = machine_info()
    if not PARQUET.exists():
        t = time.perf_counter()
        _write_parquet(PARQUET, n, eps)
        gen_s = time.perf_counter() - t
    else:
        gen_s = float("nan")
    t0 = time.perf_counter()
    summary = pmd.summarize(PARQUET, LO, HI, eps, tol=0.01, column="z")
    t1 = time.perf_counter()
    model = _model(summary)
    compiled = nutpie.compile_pymc_model(model)
    t2 = time.perf_counter()
    trace = nutpie.sample(compiled, draws=1000, tune=1000, chains=2, cores=2, progress_bar=False)
    t3 = time.perf_counter()
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    post = trace.posterior
    # cost per gradient vs N (same bin-count rule, so the table size depends on N only via K)
    grad = {}
    rng = np.random.default_rng(1)
    for n_small in (10_000, 1_000_000):
        z = pmd.mechanisms.perturb_clipped(rng.normal(MU, SIGMA, n_small), LO, HI, eps, rng)
        s_small = pmd.summarize(z, LO, HI, eps, n_bins=summary.n_bins)
        grad[n_small] = _grad_seconds(_model(s_small))
    grad[n] = _grad_seconds(model)
    rows = [
        dict(
            N=f"{n:.0e}",
            eps=eps,
            n_bins=summary.n_bins,
            design_bound=f"{summary.design_bound:.4f}",
            gen_s=f"{gen_s:.1f}",
            summarise_s=f"{t1 - t0:.1f}",
            compile_s=f"{t2 - t1:.1f}",
            nuts_s=f"{t3 - t2:.1f}",
            total_s=f"{t3 - t0:.1f}",
            peak_rss_gb=f"{rss_gb:.2f}",
            mu=f"{float(post['mu'].mean()):.5f} ± {float(post['mu'].std()):.5f}",
            sigma=f"{float(post['sigma'].mean()):.5f} ± {float(post['sigma'].std()):.5f}",
        )
    ]
    grow = [
        dict(N=f"{k:.0e}", grad_us=f"{v * 1e6:.1f}", ratio_to_1e4=f"{v / grad[10_000]:.2f}")
        for k, v in grad.items()
    ]
    cols = [(k, k) for k in rows[0]]
    body = (
        "## N = 1e8 clipped-normal reports in Parquet, end to end\n\n"
        "total = summarise (DuckDB GROUP BY over the file, after a count(*) to choose the bin "
        "count) + compile (nutpie, Numba) + NUTS (1000 tune + 1000 draws x 2 chains). "
        "File generation (a child process) is not included.\n\n"
        + md_table(rows, cols)
        + "\n\n## logp + gradient per evaluation vs N (same bin count)\n\n"
        + md_table(grow, [(k, k) for k in grow[0]])
    )
    write_results(
        "compressed_clipped_big",
        info,
        body,
        dict(rows=rows, grad_seconds={str(k): v for k, v in grad.items()}),
        t_start,
    )
    print(body)


def _sample(model, seed):
    import nutpie

    c = nutpie.compile_pymc_model(model)
    tr = nutpie.sample(c, draws=1000, tune=1000, chains=2, cores=2, progress_bar=False, seed=seed)
    return np.stack([tr.posterior[v].values.ravel() for v in ("mu", "sigma")], axis=1)


def accuracy(n=10_000, eps_list=(1.0, 4.0, 0.1), n_bins=32):
    import pymc as pm

    import pymc_dpnoise as pmd
    from pymc_dpnoise.diagnostics import mmd

    t_start = time.perf_counter()
    info = machine_info()
    rows = []
    for eps in eps_list:
        rng = np.random.default_rng(int(eps * 100))
        z = pmd.mechanisms.perturb_clipped(rng.normal(MU, SIGMA, n), LO, HI, eps, rng)
        with pm.Model() as exact:
            mu = pm.Normal("mu", 0.0, 5.0)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            pmd.LaplacePerturbedClippedNormal("z", mu, sigma, LO, HI, eps, observed=z)
        summary = pmd.summarize(z, LO, HI, eps, n_bins=n_bins)
        with pm.Model() as pmx:
            mu = pm.Normal("mu", 0.0, 5.0)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            dist = pmd.LaplacePerturbedClippedNormal.dist(mu, sigma, LO, HI, eps)
            # pymc_extras.distributions.histogram_approximation with n_quantiles = n_bins + 3
            # edges (= n_bins + 2 bins, as many as the summary's rows); its quantile_histogram
            # needs xhistogram, which is not installed here, so its few lines are repeated
            # with np.histogram (same bins: right edge of the last bin included)
            edges = np.percentile(z, np.linspace(0, 100, n_bins + 3))
            count, _ = np.histogram(z, bins=edges)
            mid = (edges[:-1] + edges[1:]) / 2
            pm.Potential("z", pm.logp(dist, mid) * count)
        draws = {
            "exact": _sample(exact, 1),
            "compressed": _sample(_model(summary), 1),
            "histogram_approximation": _sample(pmx, 1),
        }
        ref = draws["exact"]
        sd = ref.std(axis=0)
        for kind in ("compressed", "histogram_approximation"):
            d = draws[kind]
            rows.append(
                dict(
                    eps=eps,
                    N=n,
                    bins=n_bins + 2,
                    method=kind,
                    dmean_mu=f"{(d[:, 0].mean() - ref[:, 0].mean()) / sd[0]:+.3f}",
                    dmean_sigma=f"{(d[:, 1].mean() - ref[:, 1].mean()) / sd[1]:+.3f}",
                    dsd_mu=f"{(d[:, 0].std() - sd[0]) / sd[0]:+.3f}",
                    dsd_sigma=f"{(d[:, 1].std() - sd[1]) / sd[1]:+.3f}",
                    mmd=f"{mmd(ref[::4] / sd, d[::4] / sd):.4f}",
                )
            )
        # Monte Carlo floor: a second exact run with another seed
        with pm.Model() as exact2:
            mu = pm.Normal("mu", 0.0, 5.0)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            pmd.LaplacePerturbedClippedNormal("z", mu, sigma, LO, HI, eps, observed=z)
        d = _sample(exact2, 2)
        rows.append(
            dict(
                eps=eps,
                N=n,
                bins="-",
                method="exact, 2nd seed (MC floor)",
                dmean_mu=f"{(d[:, 0].mean() - ref[:, 0].mean()) / sd[0]:+.3f}",
                dmean_sigma=f"{(d[:, 1].mean() - ref[:, 1].mean()) / sd[1]:+.3f}",
                dsd_mu=f"{(d[:, 0].std() - sd[0]) / sd[0]:+.3f}",
                dsd_sigma=f"{(d[:, 1].std() - sd[1]) / sd[1]:+.3f}",
                mmd=f"{mmd(ref[::4] / sd, d[::4] / sd):.4f}",
            )
        )
        print(json.dumps(rows[-3:]), flush=True)
        write_results(
            "compressed_clipped_accuracy",
            info,
            "partial run\n\n" + md_table(rows, [(k, k) for k in rows[0]]),
            dict(rows=rows),
            t_start,
        )
    body = (
        "## Posterior accuracy: compressed vs exact vs histogram_approximation\n\n"
        "Differences of posterior means and sds in units of the exact posterior sd; MMD on "
        "standardised draws (every 4th). nutpie, 2 chains x 1000 draws (after 1000 tuning).\n\n"
        + md_table(rows, [(k, k) for k in rows[0]])
    )
    write_results("compressed_clipped_accuracy", info, body, dict(rows=rows), t_start)
    print(body)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    what = sys.argv[1] if len(sys.argv) > 1 else "big"
    if what == "big":
        big()
    else:
        accuracy()
