"""Simulation-based calibration of the thresholded-count models (known and unknown keys).

    nice .venv/bin/python benchmarks/threshold_sbc.py [--reps R] [--quick]

A Wikimedia-like release: each cell's count is ``S ~ Poisson(mu)``, its noisy count
``Y = S + noise`` (discrete Gaussian of sigma 10, or discrete Laplace of scale 7: about the
same variance), and a cell is published only if ``Y > 90``.  Prior ``mu ~ Gamma(9, 0.1)``
(mean 90, sd 30: some replicates publish every cell, some none).

* **known keys**: ``G = 20`` cells per replicate, simulated with the release mechanism
  (``noise.release``); suppressed cells are ``NaN``.  Model: :func:`pymc_dpnoise.thresholds.known_keys`.
* **unknown keys**: the table holds ``R = 20`` released cells and nothing says how many were
  suppressed.  Simulated by drawing the released values i.i.d. from the noisy count's law
  truncated to ``Y > 90`` (exact: the pmf of ``Y`` by convolution of the Poisson and noise
  pmfs written from their definitions in ``tests/noise_pmfs.py``; the script checks these draws
  against the mechanism's, draw-then-drop).  This is the release in which the truncated
  likelihood of :func:`pymc_dpnoise.thresholds.unknown_keys` is the whole likelihood; when
  the number of keys is known, the number suppressed is data and the known-key model applies.

Each replicate's posterior of ``mu`` is computed exactly on a grid (no MCMC): the package's
compiled log densities (``pm.logp`` of ``NoisyPoisson`` at every released value and
``pm.logcdf`` / ``pm.logccdf`` at the threshold, one table over the grid shared by every
replicate) summed per replicate; the script checks that these sums equal the
``compile_logp`` of the models built by ``known_keys`` / ``unknown_keys`` and that the table
equals an independent brute-force convolution.  The log posterior on the grid (601 points from
the prior's 1e-9 to 1 - 1e-9 quantiles) is interpolated by a cubic spline onto a 10x finer
grid and integrated by the trapezoid rule; the SBC rank is the posterior CDF at the true
``mu`` (exact, no posterior draws), and the grid error is measured by repeating it on every
other grid point.

Compared models: the threshold-aware model; the threshold-ignoring noise-aware model
(``NoisyPoisson`` on the released values untruncated, suppressed cells read as 0 in the
known-key table); the naive model (released values read as exact Poisson counts, suppressed as
0).  Reported: coverage of central 50/70/90/95/99 % intervals against the 99 % binomial band
(:func:`pymc_dpnoise.diagnostics.coverage_table`), the KS test of the ranks against
Uniform(0, 1), and the width check that coverage alone misses: the mean posterior variance
against the mean squared error of the posterior mean (equal in expectation for the exact
posterior; a posterior too wide or too narrow moves their ratio away from 1).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import interpolate, stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import machine_info, md_table, write_results

TAU = 90
ALPHA, BETA = 9.0, 0.1
G_KNOWN, R_UNKNOWN = 20, 20
K_GRID, FINE = 601, 10
LEVELS = (0.5, 0.7, 0.9, 0.95, 0.99)


def _specs():
    from pymc_dpnoise import noise

    return {
        "discrete_gaussian": noise.DiscreteGaussian(10.0),
        "discrete_laplace": noise.DiscreteLaplace(7.0),
    }


def _noise_pmf(kind, param):
    """The noise pmf on integers carrying all but e^-700 of its mass (so that the brute-force
    tables are exact wherever a probability is above 1e-250)."""
    from noise_pmfs import PMFS

    w = int(np.ceil(40 * param if kind == "discrete_gaussian" else 720 * param)) + 40
    j = np.arange(-w, w + 1)
    pmf = PMFS["gaussian" if kind == "discrete_gaussian" else "laplace"](j, param)
    return j, pmf / pmf.sum()


def brute_y_pmf(kind, param, mu, y_max):
    """P(Y = y) for y = y_min..y_max by direct convolution (Poisson pmf * noise pmf)."""
    j, npmf = _noise_pmf(kind, param)
    s = np.arange(int(mu + 40 * np.sqrt(mu) + 60))
    conv = np.convolve(stats.poisson.pmf(s, mu), npmf)
    y = np.arange(conv.size) + j[0]
    keep = y <= y_max
    return y[keep], conv[keep]


def simulate(kind, spec, rng):
    mu = float(rng.gamma(ALPHA, 1.0 / BETA))
    counts = rng.poisson(mu, G_KNOWN)
    y = spec.release(counts, rng).astype(float)
    known = np.where(y > TAU, y, np.nan)
    ys, p = brute_y_pmf(kind, spec.param, mu, np.inf)
    kept = ys > TAU
    unknown = rng.choice(ys[kept], size=R_UNKNOWN, p=p[kept] / p[kept].sum()).astype(float)
    return mu, known, unknown


def mechanism_check(kind, spec, rng, mu=80.0, n=400_000):
    """Chi-square p-value of the exact truncated draws against draw-then-drop mechanism draws."""
    from noise_pmfs import chisq_pvalue

    y = spec.release(rng.poisson(mu, n), rng)
    y = y[y > TAU]
    ys, p = brute_y_pmf(kind, spec.param, mu, np.inf)
    kept = ys > TAU
    return float(chisq_pvalue(y.astype(np.int64), ys[kept], p[kept])), int(y.size)


def grid():
    lo, hi = stats.gamma(ALPHA, scale=1 / BETA).ppf([1e-9, 1 - 1e-9])
    return np.linspace(lo, hi, K_GRID)


def package_tables(spec, mu, values):
    """log P(Y = v | mu_k) for v in ``values``, log P(Y <= tau | mu_k), log P(Y > tau | mu_k):
    the package's NoisyPoisson through pm.logp / pm.logcdf / pm.logccdf, compiled once."""
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt

    import pymc_dpnoise as pmd

    m, v = pt.dvector("mu"), pt.dvector("v")
    d = pmd.NoisyPoisson.dist(m, noise=spec)
    f_logp = pytensor.function([m, v], pm.logp(d, v))
    tau = pt.constant(float(TAU))
    f_cdfs = pytensor.function([m], [pm.logcdf(d, tau), pm.logccdf(d, tau)])
    mm, vv = np.meshgrid(mu, values, indexing="ij")
    table = f_logp(mm.ravel(), vv.ravel()).reshape(mm.shape)
    logcdf, logccdf = f_cdfs(mu)
    return table, logcdf, logccdf


def brute_tables(kind, spec, mu, values):
    """The same three tables from :func:`brute_y_pmf` (independent of the package)."""
    table = np.empty((mu.size, values.size))
    cdf, sf = np.empty(mu.size), np.empty(mu.size)
    for k, m in enumerate(mu):
        ys, p = brute_y_pmf(kind, spec.param, m, np.inf)
        table[k] = np.interp(values, ys, p, left=0.0, right=0.0)  # at integers: a lookup
        cdf[k], sf[k] = p[ys <= TAU].sum(), p[ys > TAU].sum()
    with np.errstate(divide="ignore"):
        return np.log(table), np.log(cdf), np.log(sf)


def model_check(spec, mu_points, known, unknown, tables, col):
    """The table sums equal the compiled logp of the models thresholds.known_keys /
    unknown_keys build (observed terms only) at a few mu."""
    import pymc as pm

    import pymc_dpnoise as pmd
    from pymc_dpnoise import thresholds

    table, logcdf, logccdf = tables
    worst = 0.0
    for name, obs in (("known", known), ("unknown", unknown)):
        with pm.Model() as model:
            mu = pm.Gamma("mu", ALPHA, BETA)
            dist = pmd.NoisyPoisson.dist(mu, noise=spec, shape=obs.shape)
            if name == "known":
                y = thresholds.known_keys("y", dist, TAU, observed=obs)
            else:
                y = thresholds.unknown_keys("y", dist, TAU, observed=obs)
        f = model.compile_logp(vars=[y], jacobian=False)
        for k in mu_points:
            got = float(f({"mu_log__": np.log(grid_mu[k])}))
            rel = obs[~np.isnan(obs)]
            want = table[k, [col[v] for v in rel]].sum()
            if name == "known":
                want += np.isnan(obs).sum() * logcdf[k]
            else:
                want -= rel.size * logccdf[k]
            worst = max(worst, abs(got - want) / max(1.0, abs(want)))
    return worst


def posterior_summary(mu, log_post, truth):
    """Posterior CDF at the truth, mean, sd and central 90 % width, from the log posterior on
    the grid (cubic spline onto a finer grid, trapezoid rule)."""
    fine = np.linspace(mu[0], mu[-1], (mu.size - 1) * FINE + 1)
    lp = interpolate.CubicSpline(mu, log_post - log_post.max())(fine)
    dens = np.exp(lp - lp.max())
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(fine))])
    z = cdf[-1]
    cdf /= z
    mean = np.trapezoid(fine * dens, fine) / z
    var = np.trapezoid((fine - mean) ** 2 * dens, fine) / z
    q05, q95 = np.interp([0.05, 0.95], cdf, fine)
    return float(np.interp(truth, fine, cdf)), float(mean), float(var), float(q95 - q05)


def log_likelihoods(known, unknown, tables, col):
    """Per model, the log likelihood of this replicate over the grid."""
    table, logcdf, logccdf = tables
    rel_k = known[~np.isnan(known)]
    n_supp = int(np.isnan(known).sum())
    pk = table[:, [col[v] for v in rel_k]].sum(axis=1)
    pu = table[:, [col[v] for v in unknown]].sum(axis=1)
    zero = table[:, col[0.0]]
    mu = grid_mu
    pois = stats.poisson.logpmf
    return {
        ("known", "threshold-aware"): pk + n_supp * logcdf,
        ("known", "threshold-ignoring"): pk + n_supp * zero,
        ("known", "naive"): pois(rel_k[:, None], mu).sum(axis=0) + n_supp * pois(0, mu),
        ("unknown", "threshold-aware"): pu - unknown.size * logccdf,
        ("unknown", "threshold-ignoring"): pu,
        ("unknown", "naive"): pois(unknown[:, None], mu).sum(axis=0),
    }


grid_mu = grid()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.reps = 20

    from pymc_dpnoise.diagnostics import coverage_table, ks_uniform

    t_start = time.perf_counter()
    info = machine_info()
    log_prior = stats.gamma(ALPHA, scale=1 / BETA).logpdf(grid_mu)
    summary, cov_rows, checks = [], [], []
    for kind, spec in _specs().items():
        rng = np.random.default_rng(38 + len(kind))
        mech_p, mech_n = mechanism_check(kind, spec, rng)
        sims = [simulate(kind, spec, rng) for _ in range(args.reps)]
        values = np.unique(
            np.concatenate([[0.0]] + [np.concatenate([k[~np.isnan(k)], u]) for _, k, u in sims])
        )
        col = {v: i for i, v in enumerate(values.tolist())}
        t = time.perf_counter()
        tables = package_tables(spec, grid_mu, values)
        t_table = time.perf_counter() - t
        brute = brute_tables(kind, spec, grid_mu, values)
        # compare in log space where the brute-force probability is not in its underflow range
        errs = []
        for pkg, ref in zip(tables, brute, strict=True):
            ok = ref > np.log(1e-250)
            errs.append(float(np.max(np.abs(pkg[ok] - ref[ok]) / np.maximum(1.0, np.abs(ref[ok])))))
        model_err = model_check(spec, [150, 300, 450], sims[0][1], sims[0][2], tables, col)
        out = {}
        for truth, known, unknown in sims:
            for key, ll in log_likelihoods(known, unknown, tables, col).items():
                lp = log_prior + ll
                full = posterior_summary(grid_mu, lp, truth)
                half = posterior_summary(grid_mu[::2], lp[::2], truth)
                out.setdefault(key, []).append((truth, *full, abs(full[0] - half[0])))
        for (keys, model), rows in out.items():
            arr = np.array(rows)
            truth, q, mean, var, width, grid_err = arr.T
            cov = coverage_table(q, LEVELS, band_mass=0.99)
            ks, ks_p = ks_uniform(q)
            mse = float(np.mean((mean - truth) ** 2))
            # standard error of the ratio's log by the delta method over replicates
            a, b = var, (mean - truth) ** 2
            se_log = float(
                np.sqrt(np.var(a) / a.mean() ** 2 + np.var(b) / b.mean() ** 2) / np.sqrt(a.size)
            )
            summary.append(
                dict(
                    noise=repr(spec),
                    keys=keys,
                    model=model,
                    reps=len(rows),
                    coverage_inside=bool(cov["inside"].all()),
                    ks=float(ks),
                    ks_p=float(ks_p),
                    bias=float(np.mean(mean - truth)),
                    mean_post_sd=float(np.sqrt(var.mean())),
                    rmse=float(np.sqrt(mse)),
                    var_over_mse=float(var.mean() / mse),
                    var_over_mse_se=float(var.mean() / mse * se_log),
                    width90=float(width.mean()),
                    grid_err=float(grid_err.max()),
                )
            )
            for r in cov.to_dict("records"):
                cov_rows.append(dict(noise=repr(spec), keys=keys, model=model, **r))
            print(summary[-1], flush=True)
        checks.append(
            dict(
                noise=repr(spec),
                table_cells=int(grid_mu.size * values.size),
                table_seconds=round(t_table, 1),
                pmf_vs_brute=errs[0],
                logcdf_vs_brute=errs[1],
                logccdf_vs_brute=errs[2],
                tables_vs_compile_logp=model_err,
                truncated_draws_vs_mechanism_p=mech_p,
                mechanism_kept_draws=mech_n,
            )
        )
        print(checks[-1], flush=True)
    cols = [(c, c) for c in summary[0]]
    body = (
        "## SBC of the thresholded-count models\n\n"
        f"Counts S ~ Poisson(mu), mu ~ Gamma({ALPHA:g}, {BETA:g}); a cell is published if "
        f"S + noise > {TAU}.  Known keys: {G_KNOWN} cells per replicate, suppressed cells "
        f"NaN.  Unknown keys: {R_UNKNOWN} released cells per replicate, the number suppressed "
        f"not observed.  {args.reps} replicates per noise; every model is fitted to the same "
        "replicates.  Posteriors exact on a grid (no MCMC): the rank is the posterior CDF at "
        "the true mu.\n\n"
        "- `coverage_inside`: every central interval (50/70/90/95/99 %) covers at a rate "
        "inside its 99 % binomial band (`diagnostics.coverage_table`).\n"
        "- `ks`, `ks_p`: KS test of the ranks against Uniform(0, 1) (`diagnostics.ks_uniform`).\n"
        "- `bias`: mean of (posterior mean - truth); `mean_post_sd`: root mean posterior "
        "variance; `rmse`: of the posterior mean; `var_over_mse`: mean posterior variance / "
        "mean squared error (1 for the exact posterior; above 1: too wide; below: too narrow), "
        "with its standard error; `width90`: mean width of the central 90 % interval.\n"
        "- `grid_err`: largest change of a rank when the grid is halved.\n\n"
        + md_table(summary, cols)
        + "\n### Checks of the computation\n\n"
        "- `pmf_vs_brute`, `logcdf_vs_brute`, `logccdf_vs_brute`: largest error of the package's "
        "log pmf / log CDF / log SF tables (relative where |log| > 1, else absolute) against a "
        "brute-force convolution (scipy Poisson pmf * noise pmf from `tests/noise_pmfs.py`), "
        "over every grid point and value where the probability exceeds 1e-250.\n"
        "- `tables_vs_compile_logp`: the same error of the table sums against "
        "`model.compile_logp` of the models `thresholds.known_keys` / `unknown_keys` build "
        "(first replicate, three grid points).\n"
        "- `truncated_draws_vs_mechanism_p`: chi-square p-value of the unknown-key simulator "
        "(exact truncated law) against the mechanism's draw-then-drop draws at mu = 80.\n\n"
        + md_table(checks, [(c, c) for c in checks[0]])
        + "\n### Coverage (99 % binomial band)\n\n"
        + md_table(cov_rows, [(c, c) for c in cov_rows[0]])
    )
    write_results(
        "threshold_sbc" + ("_quick" if args.quick else ""),
        info,
        body,
        dict(summary=summary, checks=checks, coverage=cov_rows),
        t_start,
    )


if __name__ == "__main__":
    main()
