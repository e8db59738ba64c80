r"""Small-area estimation from a discrete-Gaussian release of the Adult data.

Behind ``notebooks/real_releases.ipynb``.  The data holder publishes, for each of the 42
native-country groups of the shipped Adult data (train and test, 48,842 records; "?" is its
own group), the number of people with income above 50K plus discrete Gaussian noise: OpenDP's
``make_gaussian`` on a vector of integer counts, :math:`\rho`-zCDP.  Design:

* the group sizes :math:`n_g` (1 to 43,832) are **public** (invariants, as the 2020 Census
  treated state populations): neighbouring data sets differ in one person's income label, so
  the vector of counts has :math:`\ell_2` sensitivity 1 and the whole release is
  :math:`\rho`-zCDP with :math:`\sigma = 1/\sqrt{2\rho}` on every count;
* the analyst fits a hierarchical logistic model, :math:`\operatorname{logit} p_g \sim N(\mu,
  \tau^2)`, :math:`\mu \sim N(-1, 1)`, :math:`\tau \sim \text{HalfNormal}(1)` (non-centred,
  :math:`\mu + \tau z_g`, below :data:`CENTERED_MIN_N` records, centred above), with three
  likelihoods:

  - ``noise-aware``: :class:`pymc_dpnoise.NoisyBinomial` with the release's noise spec (the
    latent count summed out exactly);
  - ``naive``: ``pm.Binomial`` on the release clipped to :math:`[0, n_g]`, as if it were the
    count;
  - ``censored``: the release post-processed to :math:`\max(z, 0)` (what an unsigned count
    type gives), fitted with ``NoisyBinomial(..., lower=0)``, which puts the clamped mass on
    the atom at 0.

The likelihood of the fits and of the SBC is ``pmd.NoisyBinomial`` itself (an independent
window-sum implementation in ``tests/real_releases_reference.py`` checks it to 1e-10, with and
without censoring, far from the data too).

Run from the command line (results in ``results/real_releases``)::

    python -m pymc_dpnoise.experiments.real_releases --mode full --jobs 1 --skip-fit  # 200 replicates
    python -m pymc_dpnoise.experiments.real_releases --mode fast                       # a few, for CI
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ..diagnostics import (
    DEFAULT_LEVELS,
    SBCProblem,
    coverage_table,
    ks_uniform,
    simulation_based_calibration,
)
from .toolkit import experiment_parser, run_sbc, seeded_rng, write_table

__all__ = [
    "MODELS",
    "SETTINGS",
    "SIZE_CLASSES",
    "SmallAreaSBC",
    "adult_groups",
    "build_model",
    "coverage_summary",
    "fit_release",
    "main",
    "noise_spec",
    "noisy_binomial",
    "opendp_release",
    "plot_coverage_bars",
    "plot_intervals",
    "plot_shrinkage",
    "run_coverage",
]

#: the three analyses of the notebook
MODELS = ("noise-aware", "naive", "censored")

#: prior of the hierarchy: mu ~ Normal(MU0, MU_SD), tau ~ HalfNormal(TAU_SD)
MU0, MU_SD, TAU_SD = -1.0, 1.0, 1.0

#: groups of at least this many records get a centred logit (``eta_big ~ Normal(mu, tau)``),
#: smaller ones the non-centred ``mu + tau * z``: on one replicate at 1000 + 1000 NUTS steps
#: this took 14,000-21,000 leapfrog steps where all non-centred took 31,000-63,000, and the
#: worst split R-hat of mu / tau fell from 1.03-1.04 to 1.004-1.012
CENTERED_MIN_N = 200

#: group-size classes of the pooled coverage rows (n_g below 50, 50-199, 200 and more)
SIZE_CLASSES = {"n < 50": (0, 50), "50 <= n < 200": (50, 200), "n >= 200": (200, np.inf)}

#: settings per mode: rho of the release, SBC replicates, NUTS settings (2 chains) and sampler
#: (fast mode: PyMC's NUTS on the C backend, which compiles in seconds where Numba takes a
#: minute), NUTS settings of the real-data fits (PyMC's NUTS)
SETTINGS = {
    "full": dict(
        rho=0.05,
        replicates=200,
        naive_replicates=200,
        censored_replicates=0,
        draws=500,
        tune=500,
        fit_draws=1000,
        fit_tune=1000,
        sampler="nutpie",
    ),
    "fast": dict(
        rho=0.05,
        replicates=2,
        naive_replicates=2,
        censored_replicates=0,
        draws=100,
        tune=150,
        fit_draws=150,
        fit_tune=200,
        sampler="pymc",
    ),
}

# --------------------------------------------------------------------------------------------
# Data and releases
# --------------------------------------------------------------------------------------------


@cache
def _groups() -> pd.DataFrame:
    from ..datasets import load_adult

    df = load_adult("both")
    country = df["native_country"].fillna("?")
    g = df.groupby(country)["income_gt_50k"].agg(n="size", count="sum")
    g = g.reset_index(names="group").sort_values(["n", "group"], kind="stable")
    g["rate"] = g["count"] / g["n"]
    return g.reset_index(drop=True).astype({"n": "int64", "count": "int64"})


def adult_groups() -> pd.DataFrame:
    """One row per native-country group of Adult (train + test), smallest first.

    Columns ``group``, ``n`` (records), ``count`` (records with income above 50K) and ``rate``.

    Examples
    --------
    >>> g = adult_groups()
    >>> len(g), int(g["n"].min()), int(g["n"].max()), int(g["n"].sum())
    (42, 1, 43832, 48842)
    """
    return _groups().copy()


def noise_spec(rho: float):
    """The discrete Gaussian of a :math:`\\rho`-zCDP count release (sensitivity 1)."""
    from ..noise import DiscreteGaussian

    return DiscreteGaussian.from_rho(rho, sensitivity=1.0)


def opendp_release(counts, rho: float):
    """Release ``counts`` with OpenDP's integer ``make_gaussian`` under :math:`\\rho`-zCDP.

    The measurement is on ``vector_domain(atom_domain(T=i64))`` with ``l2_distance``: one
    person changes one count by one (the group sizes are public), so ``d_in = 1``.  OpenDP
    samples the exact discrete Gaussian with the CSPRNG of its Rust core (unseedable).  Returns
    the release and the measurement; the zCDP cost that OpenDP's privacy map states is checked
    against ``rho`` to 1e-9.
    """
    from ..optional import require

    dp = require("opendp.prelude", extra="notebooks", feature="the real_releases experiment")
    dp.enable_features("contrib")
    sigma = noise_spec(rho).param
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), scale=sigma
    )
    stated = meas.map(1)
    if not math.isclose(stated, rho, rel_tol=1e-9):  # pragma: no cover - OpenDP guarantees it
        raise RuntimeError(f"OpenDP states rho = {stated}, asked for {rho}")
    return np.asarray(meas([int(c) for c in counts]), dtype=np.int64), meas


# --------------------------------------------------------------------------------------------
# Likelihoods
# --------------------------------------------------------------------------------------------


def noisy_binomial(name, n, p, spec, *, lower=None, observed=None):
    """``pmd.NoisyBinomial(name, n=n, p=p, noise=spec, lower=lower, observed=observed)``."""
    from ..distributions.noisy_counts import NoisyBinomial

    return NoisyBinomial(name, n=np.asarray(n), p=p, noise=spec, lower=lower, observed=observed)


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def model_data(release, n, model: str) -> np.ndarray:
    """What each model observes: the release (noise-aware), the release clipped to [0, n]
    (naive) or max(release, 0) (censored)."""
    release = np.asarray(release, dtype=np.int64)
    if model == "noise-aware":
        return release
    if model == "naive":
        return np.clip(release, 0, np.asarray(n, dtype=np.int64))
    if model == "censored":
        return np.maximum(release, 0)
    raise ValueError(f"`model` must be one of {MODELS}; got {model!r}")


def build_model(n, release, spec, model: str = "noise-aware"):
    """The hierarchical model of one release (``release`` is the *raw* release; the model's
    view of it is :func:`model_data`, stored in ``pm.Data("reports")``).

    The noise-aware and censored likelihoods are :class:`pymc_dpnoise.NoisyBinomial` (through
    :func:`noisy_binomial`).
    """
    import pymc as pm
    import pytensor.tensor as pt

    n = np.asarray(n, dtype=np.int64)
    data = model_data(release, n, model)
    coords = {"group": np.arange(n.size)}
    big = n >= CENTERED_MIN_N
    with pm.Model(coords=coords) as m:
        y = pm.Data("reports", data, dims="group")
        mu = pm.Normal("mu", MU0, MU_SD)
        tau = pm.HalfNormal("tau", TAU_SD)
        # centred where the data pin the group down, non-centred where the prior dominates
        # (fixed by the public group sizes, not by the data)
        z = pm.Normal("z", 0.0, 1.0, shape=int((~big).sum()))
        eta_big = pm.Normal("eta_big", mu, tau, shape=int(big.sum()))
        eta = pt.zeros(n.size)
        eta = pt.set_subtensor(eta[np.flatnonzero(~big)], mu + tau * z)
        eta = pt.set_subtensor(eta[np.flatnonzero(big)], eta_big)
        p = pm.Deterministic("p", pm.math.sigmoid(eta), dims="group")
        if model == "naive":
            pm.Binomial("y", n=n, logit_p=eta, observed=y, dims="group")
        else:
            lower = 0 if model == "censored" else None
            noisy_binomial("y", n, p, spec, lower=lower, observed=y)
    return m


# --------------------------------------------------------------------------------------------
# SBC
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SmallAreaSBC(SBCProblem):
    """A replicate: (mu, tau, z) from the prior, counts Binomial(n_g, p_g) with the real
    Adult group sizes, a discrete-Gaussian release at ``rho`` (the exact sampler of
    :class:`~pymc_dpnoise.noise.DiscreteGaussian`), post-processed by the model's
    :func:`model_data`.  Parameters recorded: ``mu``, ``tau`` and every ``p[g]``."""

    n: int = 42  # number of groups
    sizes: tuple = ()
    rho: float = 0.05
    model: str = "noise-aware"

    @property
    def param_names(self):
        return ("mu", "tau", *(f"p[{g}]" for g in range(len(self.sizes))))

    @property
    def spec(self):
        return noise_spec(self.rho)

    def simulate(self, rng):
        sizes = np.asarray(self.sizes, dtype=np.int64)
        mu = rng.normal(MU0, MU_SD)
        tau = abs(rng.normal(0.0, TAU_SD))
        z = rng.normal(size=sizes.size)
        p = 1.0 / (1.0 + np.exp(-(mu + tau * z)))
        counts = rng.binomial(sizes, p)
        release = self.spec.release(counts, rng)
        return {"mu": mu, "tau": tau, "p": p}, release

    def model_data(self, reports, noise_aware=True):
        return model_data(reports, self.sizes, self.model)

    def build_model(self, reports, noise_aware=True):
        return build_model(self.sizes, reports, self.spec, self.model)

    def extract(self, posterior, truth):
        out = [
            (np.asarray(posterior["mu"].values, float), truth["mu"]),
            (np.asarray(posterior["tau"].values, float), truth["tau"]),
        ]
        p = np.asarray(posterior["p"].values, float)
        return out + [(p[..., g], float(truth["p"][g])) for g in range(p.shape[-1])]


def sbc_problem(model: str = "noise-aware", rho: float = 0.05) -> SmallAreaSBC:
    sizes = tuple(int(v) for v in adult_groups()["n"])
    return SmallAreaSBC(n=len(sizes), sizes=sizes, rho=rho, model=model)


def _sbc_path(cache_dir, model, rho, cfg, replicates, seed) -> tuple[Path, str]:
    key = dict(
        model=model,
        rho=rho,
        R=replicates,
        draws=cfg["draws"],
        tune=cfg["tune"],
        seed=seed,
    )
    if model != "naive":
        key["likelihood"] = "NoisyBinomial"  # the committed runs before used a window copy
    key["centered_min_n"] = CENTERED_MIN_N  # runs before were non-centred throughout
    name = f"sbc_{model}_rho{rho:g}_R{replicates}.npz"
    return Path(cache_dir) / name, json.dumps(key, sort_keys=True)


def run_sbc_model(
    model,
    mode="fast",
    cache_dir="results/real_releases",
    n_jobs=None,
    seed=2026,
    recompute=False,
    verbose=True,
) -> dict:
    """SBC of one model (cached as ``sbc_<model>_rho<rho>_R<R>.npz`` in ``cache_dir``):
    quantiles (R, 2 + G), truths, worst R-hat and divergences per replicate, wall time."""
    cfg = SETTINGS[mode]
    reps = cfg[
        {"noise-aware": "replicates", "naive": "naive_replicates"}.get(model, "censored_replicates")
    ]
    path, key = _sbc_path(cache_dir, model, cfg["rho"], cfg, reps, seed)
    if path.exists() and not recompute:
        with np.load(path, allow_pickle=False) as f:
            if str(f["key"]) == key:
                if verbose:
                    print(f"[cache] {path.name}")
                return {k: f[k] for k in f.files}
    problem = sbc_problem(model, cfg["rho"])
    if cfg["sampler"] == "nutpie":
        res, secs = run_sbc(problem, reps, cfg, seed=seed, n_jobs=n_jobs)
    else:  # one fresh C-backend model per replicate (cached C modules: seconds each)
        t0 = time.time()
        res = simulation_based_calibration(
            problem,
            reps,
            seed=seed,
            n_jobs=1,
            draws=cfg["draws"],
            tune=cfg["tune"],
            sampler=cfg["sampler"],
        )
        secs = time.time() - t0
    out = dict(
        quantiles=res.quantiles,
        truths=res.truths,
        names=np.array(res.param_names),
        max_rhat=res.max_rhat,
        divergences=res.divergences,
        seconds=np.float64(secs),
        key=np.array(key),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    if verbose:
        print(f"[ran {secs:6.0f}s] {path.name}", flush=True)
    return out


def _pooled_rows(q, level):
    """Coverage of the pooled columns of ``q`` (R, k) with a 99% band from the spread of the
    per-replicate coverage fractions (CLT): the columns of one replicate are dependent."""
    inside = np.abs(q - 0.5) <= level / 2  # (R, k)
    frac = inside.mean(axis=1)
    r = frac.size
    half = stats.norm.ppf(0.995) * frac.std(ddof=1) / math.sqrt(r) if r > 1 else 1.0
    return float(frac.mean()), max(level - half, 0.0), min(level + half, 1.0)


def coverage_summary(sbc: dict, model: str, sizes) -> pd.DataFrame:
    """Coverage rows of one SBC run: ``mu`` and ``tau`` (exact binomial 99% band), every
    ``p[g]`` pooled and pooled per :data:`SIZE_CLASSES` (band from the replicate spread)."""
    q = np.asarray(sbc["quantiles"], dtype=float)
    sizes = np.asarray(sizes)
    rows = []
    tab = coverage_table(q[:, :2], DEFAULT_LEVELS, band_mass=0.99)
    tab["param"] = [("mu", "tau")[i] for i in tab["param"]]
    for r in tab.itertuples():
        rows.append(
            dict(
                param=r.param,
                groups=1,
                level=r.level,
                coverage=r.coverage,
                band_lo=r.band_lo,
                band_hi=r.band_hi,
                ks_p=ks_uniform(q[:, 0 if r.param == "mu" else 1])[1],
            )
        )
    pools = {"p (all groups)": np.ones(sizes.size, bool)}
    pools.update({f"p ({c})": (sizes >= lo) & (sizes < hi) for c, (lo, hi) in SIZE_CLASSES.items()})
    for name, mask in pools.items():
        qp = q[:, 2:][:, mask]
        for lev in DEFAULT_LEVELS:
            cov, lo, hi = _pooled_rows(qp, lev)
            rows.append(
                dict(
                    param=name,
                    groups=int(mask.sum()),
                    level=lev,
                    coverage=cov,
                    band_lo=lo,
                    band_hi=hi,
                    ks_p=ks_uniform(qp.ravel())[1],
                )
            )
    out = pd.DataFrame(rows)
    out["inside"] = (out["coverage"] >= out["band_lo"]) & (out["coverage"] <= out["band_hi"])
    out.insert(0, "model", model)
    out["replicates"] = q.shape[0]
    out["max_rhat"] = float(np.nanmax(sbc["max_rhat"]))
    out["divergences"] = int(np.sum(sbc["divergences"]))
    out["seconds"] = float(sbc["seconds"])
    return out


def run_coverage(
    mode="fast",
    cache_dir="results/real_releases",
    n_jobs=None,
    seed=2026,
    recompute=False,
    verbose=True,
) -> pd.DataFrame:
    """The coverage table of every model with replicates in ``SETTINGS[mode]``."""
    cfg = SETTINGS[mode]
    sizes = adult_groups()["n"].to_numpy()
    tables = []
    for model, key in (
        ("noise-aware", "replicates"),
        ("naive", "naive_replicates"),
        ("censored", "censored_replicates"),
    ):
        if cfg[key] > 0:
            sbc = run_sbc_model(model, mode, cache_dir, n_jobs, seed, recompute, verbose)
            tables.append(coverage_summary(sbc, model, sizes))
    return pd.concat(tables, ignore_index=True)


# --------------------------------------------------------------------------------------------
# The real-data analysis
# --------------------------------------------------------------------------------------------


def fit_release(
    groups: pd.DataFrame,
    release,
    spec,
    *,
    draws,
    tune,
    seed=1,
    models=MODELS,
    chains=2,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fit every model of ``models`` to one release; returns (per-group summary, fit info).

    The summary has one row per (model, group): ``n``, ``rate`` (the truth the data holder
    knows), ``release``, the posterior mean and 90% interval of ``p`` and whether it covers
    the truth; the fit info per model: seconds, divergences, worst R-hat, posterior of mu,
    tau.  Sampler: PyMC's NUTS on the C backend (compiles in seconds, where Numba takes a
    minute).
    """
    from ..diagnostics import fit_pymc as _fit_pymc
    from ..diagnostics import split_rhat

    n = groups["n"].to_numpy()
    rows, info = [], []
    for model in models:
        t0 = time.perf_counter()
        m = build_model(n, release, spec, model)
        idata = _fit_pymc(m, draws, tune, chains, seed)
        secs = time.perf_counter() - t0
        post = idata.posterior
        p = np.asarray(post["p"].values, float)  # chain, draw, group
        flat = p.reshape(-1, p.shape[-1])
        lo, hi = np.quantile(flat, [0.05, 0.95], axis=0)
        rh = [split_rhat(np.asarray(post[v].values)) for v in ("mu", "tau")]
        rh += [split_rhat(p[..., g]) for g in range(p.shape[-1])]
        info.append(
            dict(
                model=model,
                seconds=secs,
                divergences=int(idata.sample_stats["diverging"].values.sum()),
                max_rhat=float(np.nanmax(rh)),
                mu=float(post["mu"].mean()),
                tau=float(post["tau"].mean()),
            )
        )
        rows.append(
            pd.DataFrame(
                dict(
                    model=model,
                    group=groups["group"].to_numpy(),
                    n=n,
                    rate=groups["rate"].to_numpy(),
                    release=np.asarray(release),
                    mean=flat.mean(axis=0),
                    lo=lo,
                    hi=hi,
                    covers=(lo <= groups["rate"].to_numpy()) & (groups["rate"].to_numpy() <= hi),
                )
            )
        )
    return pd.concat(rows, ignore_index=True), pd.DataFrame(info)


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------

COLORS = {"noise-aware": "C0", "naive": "C3", "censored": "C2"}


def plot_intervals(summary: pd.DataFrame, models=MODELS, ax=None):
    """Per-group 90% intervals of p against the true rate, groups sorted by size."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(12, 4.2))
    models = [m for m in models if m in set(summary["model"])]
    first = summary[summary["model"] == models[0]].reset_index(drop=True)
    x = np.arange(len(first))
    width = 0.8 / len(models)
    for i, m in enumerate(models):
        s = summary[summary["model"] == m].reset_index(drop=True)
        xi = x - 0.4 + width * (i + 0.5)
        ax.vlines(xi, s["lo"], s["hi"], color=COLORS[m], lw=2, label=f"{m} (90%)")
        ax.plot(xi, s["mean"], "o", color=COLORS[m], ms=2.5)
        miss = ~s["covers"]
        ax.plot(xi[miss], s["hi"][miss] + 0.02, "v", color=COLORS[m], ms=4)
    ax.plot(x, first["rate"], "k_", ms=9, mew=2, label="true rate")
    ax.set_xticks(
        x,
        [f"{g} ({n})" for g, n in zip(first["group"], first["n"], strict=True)],
        rotation=90,
        fontsize=7,
    )
    ax.set_ylabel("P(income > 50K)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, ncol=len(models) + 1, loc="upper left")
    ax.set_title(
        "90% posterior intervals per group (sorted by group size n_g; ▼: misses the truth)"
    )
    return ax.figure


def plot_shrinkage(summary: pd.DataFrame, models=("noise-aware", "naive"), ax=None):
    """Direct estimate release/n against the posterior mean, sized by n: the hierarchy pulls
    small groups toward the overall rate."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4.5))
    for m in models:
        s = summary[summary["model"] == m]
        direct = np.clip(s["release"] / s["n"], -0.5, 1.5)
        ax.scatter(
            direct, s["mean"], s=8 + 30 * np.log10(s["n"]), color=COLORS[m], alpha=0.6, label=m
        )
    s = summary[summary["model"] == models[0]]
    ax.scatter(s["rate"], s["rate"], marker="_", color="k", s=60, label="true rate")
    ax.axline((0, 0), slope=1, color="0.6", lw=0.8, ls="--")
    ax.set_xlabel("direct estimate release / n_g (clipped to [-0.5, 1.5])")
    ax.set_ylabel("posterior mean of p_g")
    ax.legend(fontsize=8)
    ax.set_title("shrinkage (marker size ~ log n_g)")
    return ax.figure


def plot_coverage_bars(table: pd.DataFrame, level: float = 0.9, ax=None):
    """SBC coverage at ``level`` per parameter row and model, with the 99% bands."""
    import matplotlib.pyplot as plt

    t = table[np.isclose(table["level"], level)]
    params = list(dict.fromkeys(t["param"]))
    models = list(dict.fromkeys(t["model"]))
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.8))
    width = 0.8 / len(models)
    x = np.arange(len(params))
    for i, m in enumerate(models):
        tm = t[t["model"] == m].set_index("param").reindex(params)
        xi = x - 0.4 + width * (i + 0.5)
        ax.bar(xi, tm["coverage"], width * 0.9, color=COLORS.get(m, "0.5"), alpha=0.8, label=m)
        ax.errorbar(
            xi,
            (tm["band_lo"] + tm["band_hi"]) / 2,
            yerr=(tm["band_hi"] - tm["band_lo"]) / 2,
            fmt="none",
            ecolor="k",
            capsize=3,
            lw=1,
        )
    ax.axhline(level, color="k", ls="--", lw=0.8)
    ax.set_xticks(x, params, rotation=20, fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"coverage of the central {round(level * 100)}% interval")
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(f"SBC coverage ({int(t['replicates'].iloc[0])} replicates; bars: 99% bands)")
    return ax.figure


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def real_fit_table(mode="fast", out="results/real_releases", seed=2026, recompute=False):
    """The real-data fits of a seeded release (``spec.release``, the seedable twin of the
    OpenDP release the notebook makes), cached as ``fit_<mode>.csv`` / ``fit_info_<mode>.csv``."""
    cfg = SETTINGS[mode]
    out = Path(out)
    path, ipath = out / f"fit_{mode}.csv", out / f"fit_info_{mode}.csv"
    if path.exists() and ipath.exists() and not recompute:
        return pd.read_csv(path), pd.read_csv(ipath)
    groups = adult_groups()
    spec = noise_spec(cfg["rho"])
    release = spec.release(groups["count"].to_numpy(), seeded_rng(seed, 21, 5))
    summary, info = fit_release(
        groups, release, spec, draws=cfg["fit_draws"], tune=cfg["fit_tune"], seed=seed
    )
    out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(path, index=False)
    info.to_csv(ipath, index=False)
    return summary, info


def main(argv=None):
    ap = experiment_parser(__doc__.splitlines()[0], SETTINGS, "results/real_releases")
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--skip-fit", action="store_true", help="only the SBC")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = run_coverage(args.mode, out, n_jobs=args.jobs, recompute=args.recompute)
    write_table(table, out, f"coverage_{args.mode}", newline=True)
    fig = plot_coverage_bars(table)
    fig.savefig(out / f"coverage_{args.mode}.png", dpi=120, bbox_inches="tight")
    print(table[np.isclose(table["level"], 0.9)].to_string(index=False))
    if not args.skip_fit:
        _, info = real_fit_table(args.mode, out, recompute=args.recompute)
        print(info.to_string(index=False))


if __name__ == "__main__":
    main()
