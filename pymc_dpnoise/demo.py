"""The end-to-end demo behind ``python -m pymc_dpnoise demo``.

Simulate a population, privatise every value with the clipped Laplace mechanism (local DP),
then fit the noise-aware model (:class:`~pymc_dpnoise.LaplacePerturbedClippedNormal`) and
the naive model that treats the reports as clean values
(:func:`~pymc_dpnoise.baselines.naive_normal`).  The naive posterior of ``sigma`` is centred
far from the truth because it absorbs the privacy noise; the noise-aware one covers the truth.

:func:`epsilon_sweep` is the teaching version in one call: the same release at several
budgets, the noise-aware model and its naive counterpart
(:func:`pymc_dpnoise.baselines.naive_model`) fitted at each, and one figure with the
posterior of each parameter per ε and the truth marked.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "DemoResult",
    "SweepResult",
    "epsilon_sweep",
    "fit_demo_models",
    "format_table",
    "plot_demo",
    "plot_sweep",
    "run_demo",
    "summary_table",
]

#: priors of the demo models: mu ~ Normal(0, 5), sigma ~ Gamma(2, 1) (shape, rate)
MU_PRIOR = (0.0, 5.0)
SIGMA_PRIOR = (2.0, 1.0)
LOWER, UPPER = -5.0, 5.0
MODELS = ("noise-aware", "naive")


@dataclasses.dataclass
class DemoResult:
    """What :func:`run_demo` returns.

    Attributes
    ----------
    truth : dict
        True ``mu`` and ``sigma`` of the simulated population.
    reports : numpy.ndarray
        The privatised reports.
    posteriors : dict
        Model name -> ``{"mu": draws, "sigma": draws}`` (flattened over chains).
    table : pandas.DataFrame
        One row per (model, parameter): truth, mean, sd, 94% HDI, whether the HDI covers the
        truth.
    plot : pathlib.Path or None
        Where the figure was saved.
    """

    truth: dict
    reports: np.ndarray
    posteriors: dict
    table: pd.DataFrame
    plot: Path | None = None


def _build_model(reports, epsilon: float, noise_aware: bool):
    import pymc as pm

    from .baselines import naive_normal
    from .distributions import LaplacePerturbedClippedNormal

    with pm.Model() as model:
        mu = pm.Normal("mu", *MU_PRIOR)
        sigma = pm.Gamma("sigma", alpha=SIGMA_PRIOR[0], beta=SIGMA_PRIOR[1])
        if noise_aware:
            LaplacePerturbedClippedNormal(
                "z", mu=mu, sigma=sigma, lower=LOWER, upper=UPPER, epsilon=epsilon, observed=reports
            )
        else:
            naive_normal("z", mu, sigma, observed=reports)
    return model


def fit_demo_models(
    reports,
    epsilon: float,
    *,
    sampler: str = "nutpie",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = None,
    seed: int = 0,
    progressbar: bool = True,
    quiet: bool = False,
) -> dict:
    """Fit the noise-aware and the naive model to ``reports``.

    Parameters
    ----------
    reports : array_like
        Privatised reports, clipped to ``[-5, 5]`` before Laplace noise of scale ``10 / epsilon``.
    epsilon : float
        Privacy budget of each report.
    sampler : {"nutpie", "pymc", "numpyro"}
        Passed to :func:`pymc.sample` as ``nuts_sampler``.
    draws, tune, chains, cores, seed, progressbar, quiet
        Passed to :func:`pymc.sample` (``seed`` for the first model, ``seed + 1`` for the
        second).

    Returns
    -------
    dict
        Model name (``"noise-aware"``, ``"naive"``) -> ArviZ posterior object.
    """
    import pymc as pm

    out = {}
    for i, name in enumerate(MODELS):
        model = _build_model(np.asarray(reports, dtype=float), epsilon, name == "noise-aware")
        out[name] = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=seed + i,
            progressbar=progressbar,
            quiet=quiet,
            nuts_sampler=sampler,
            model=model,
            compute_convergence_checks=False,
        )
    return out


def _hdi(draws: np.ndarray, prob: float = 0.94) -> tuple[float, float]:
    d = np.sort(np.asarray(draws, dtype=float).ravel())
    k = int(np.floor(prob * len(d)))
    if k < 1 or k >= len(d):
        return float(d[0]), float(d[-1])
    widths = d[k:] - d[: len(d) - k]
    i = int(np.argmin(widths))
    return float(d[i]), float(d[i + k])


def summary_table(posteriors: dict, truth: dict, prob: float = 0.94) -> pd.DataFrame:
    """Posterior mean, sd and highest-density interval of each parameter, against the truth.

    Parameters
    ----------
    posteriors : dict
        Model name -> ``{param: draws}``.
    truth : dict
        Param -> true value.
    prob : float
        Mass of the HDI.

    Returns
    -------
    pandas.DataFrame
        Columns ``model, param, truth, mean, sd, hdi_lo, hdi_hi, covers``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> tab = summary_table({"m": {"mu": rng.normal(1.0, 0.1, 4000)}}, {"mu": 1.0})
    >>> tab[["model", "param", "covers"]].to_dict("records")
    [{'model': 'm', 'param': 'mu', 'covers': True}]
    """
    rows = []
    for model, post in posteriors.items():
        for param, true in truth.items():
            d = np.asarray(post[param], dtype=float).ravel()
            lo, hi = _hdi(d, prob)
            rows.append(
                dict(
                    model=model,
                    param=param,
                    truth=float(true),
                    mean=float(d.mean()),
                    sd=float(d.std(ddof=1)),
                    hdi_lo=lo,
                    hdi_hi=hi,
                    covers=bool(lo <= true <= hi),
                )
            )
    return pd.DataFrame(rows)


def format_table(table: pd.DataFrame, prob: float = 0.94) -> str:
    """The summary table as fixed-width text (what the demo prints)."""
    pct = f"{prob:.0%}"
    head = (
        f"{'model':<12} {'param':<6} {'truth':>7} {'mean':>8} {'sd':>7} "
        f"{pct + ' HDI':>19}  covers truth"
    )
    lines = [head, "-" * len(head)]
    for r in table.itertuples(index=False):
        hdi = f"[{r.hdi_lo:7.3f}, {r.hdi_hi:7.3f}]"
        lines.append(
            f"{r.model:<12} {r.param:<6} {r.truth:7.3f} {r.mean:8.3f} {r.sd:7.3f} "
            f"{hdi:>19}  {'yes' if r.covers else 'NO'}"
        )
    return "\n".join(lines)


def plot_demo(posteriors: dict, truth: dict, out, *, title: str | None = None) -> Path:
    """Save posterior densities of each parameter for each model, with the truth marked.

    Uses matplotlib's Agg canvas directly (no pyplot, no display needed).

    Parameters
    ----------
    posteriors : dict
        Model name -> ``{param: draws}``.
    truth : dict
        Param -> true value (drawn as a vertical line).
    out : str or os.PathLike
        Image path; the format follows the suffix (e.g. ``.png``, ``.pdf``, ``.svg``).
    title : str, optional
        Figure title.

    Returns
    -------
    pathlib.Path
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from scipy.stats import gaussian_kde

    params = list(truth)
    fig = Figure(figsize=(4.5 * len(params), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(params), squeeze=False)[0]
    colors = {"noise-aware": "C0", "naive": "C3"}
    for ax, param in zip(axes, params, strict=True):
        for model, post in posteriors.items():
            d = np.asarray(post[param], dtype=float).ravel()
            lo, hi = d.min(), d.max()
            pad = 0.1 * (hi - lo) + 1e-9
            grid = np.linspace(lo - pad, hi + pad, 300)
            dens = gaussian_kde(d)(grid) if np.ptp(d) > 0 else np.zeros_like(grid)
            c = colors.get(model)
            ax.plot(grid, dens, color=c, label=model)
            ax.fill_between(grid, dens, color=c, alpha=0.2, lw=0)
        ax.axvline(truth[param], color="k", ls="--", lw=1.2, label="truth")
        ax.set_xlabel(param)
        ax.set_yticks([])
        ax.set_title(f"posterior of {param}")
    axes[0].set_ylabel("density")
    axes[-1].legend(loc="best", fontsize=8)
    if title:
        fig.suptitle(title)
    out = Path(out)
    fig.savefig(out, dpi=120)
    return out


def run_demo(
    *,
    n: int = 5000,
    mu: float = 1.0,
    sigma: float = 2.0,
    epsilon: float = 1.0,
    seed: int = 0,
    sampler: str = "nutpie",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    cores: int | None = None,
    out="dpnoise-demo.png",
    progressbar: bool = True,
    quiet: bool = False,
    echo=print,
) -> DemoResult:
    """Simulate, privatise, fit both models, print the comparison and save the plot.

    Parameters
    ----------
    n : int
        Population size (one report per person).
    mu, sigma : float
        True mean and standard deviation of the clean values.
    epsilon : float
        Per-report privacy budget; reports are ``clip(x, -5, 5) + Laplace(10 / epsilon)``.
    seed : int
        Seed of the simulation and of the samplers.
    sampler : {"nutpie", "pymc", "numpyro"}
        NUTS implementation (``nuts_sampler`` of :func:`pymc.sample`).
    draws, tune, chains, cores : int
        NUTS settings.
    out : str, os.PathLike or None
        Where to save the figure; None to skip it.
    progressbar : bool
        Show sampling progress.
    quiet : bool
        Silence PyMC's log messages.
    echo : callable
        Called with each line of text output (``print`` by default).

    Returns
    -------
    DemoResult
    """
    from .mechanisms import perturb_clipped

    rng = np.random.default_rng(seed)
    x = rng.normal(mu, sigma, size=n)
    z = perturb_clipped(x, LOWER, UPPER, epsilon, rng)
    echo(
        f"Simulated {n} people with x ~ Normal(mu={mu:g}, sigma={sigma:g}); each reports "
        f"clip(x, {LOWER:g}, {UPPER:g}) + Laplace(scale={(UPPER - LOWER) / epsilon:g}) "
        f"(epsilon={epsilon:g} local DP)."
    )
    echo(
        f"Priors: mu ~ Normal({MU_PRIOR[0]:g}, {MU_PRIOR[1]:g}), "
        f"sigma ~ Gamma({SIGMA_PRIOR[0]:g}, {SIGMA_PRIOR[1]:g}).  Sampler: {sampler}."
    )
    fits = fit_demo_models(
        z,
        epsilon,
        sampler=sampler,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        seed=seed,
        progressbar=progressbar,
        quiet=quiet,
    )
    truth = {"mu": mu, "sigma": sigma}
    posteriors = {
        name: {p: np.asarray(idata.posterior[p].values, dtype=float).ravel() for p in truth}
        for name, idata in fits.items()
    }
    table = summary_table(posteriors, truth)
    echo("")
    echo(format_table(table))
    echo("")
    echo(
        "noise-aware: LaplacePerturbedClippedNormal (mechanism in the likelihood); "
        "naive: Normal fitted to the reports as if they were clean."
    )
    path = None
    if out is not None:
        path = plot_demo(
            posteriors,
            truth,
            out,
            title=f"N={n}, ε={epsilon:g}: noise-aware vs naive posterior",
        )
        echo(f"Plot saved to {path}")
    return DemoResult(truth=truth, reports=z, posteriors=posteriors, table=table, plot=path)


# --------------------------------------------------------------------------------------------
# Epsilon sweep: noise-aware against naive posteriors at several budgets
# --------------------------------------------------------------------------------------------

#: the scenarios of :func:`epsilon_sweep` and the parameters each one plots
SWEEP_SCENARIOS = {"clipped_normal": ("mu", "sigma"), "counts": ("p",)}
#: the count scenario: this many areas share the population, each releases its count
COUNT_AREAS = 25


@dataclasses.dataclass
class SweepResult:
    """What :func:`epsilon_sweep` returns.

    Attributes
    ----------
    figure : matplotlib.figure.Figure
        One panel per parameter: the posterior at each ε (one row per ε), noise-aware and
        naive, the truth as a dashed vertical line.
    idata : dict
        ``(epsilon, model)`` -> the fit (``model`` is ``"noise-aware"`` or ``"naive"``).
    truth : dict
        Parameter -> true value.
    data : dict
        ``epsilon`` -> the released data the two models were fitted to.
    path : pathlib.Path or None
        Where the figure was saved.
    """

    figure: object
    idata: dict
    truth: dict
    data: dict
    path: Path | None = None


def _sweep_model(scenario, data, epsilon, n):
    import pymc as pm

    if scenario == "clipped_normal":
        return _build_model(data, epsilon, noise_aware=True)
    from . import noise
    from .distributions import NoisyBinomial

    with pm.Model() as model:
        p = pm.Beta("p", 1.0, 1.0)
        NoisyBinomial("y", n=n, p=p, noise=noise.Laplace.from_epsilon(epsilon), observed=data)
    return model


def _sweep_release(scenario, truth, n, epsilon, rng):
    if scenario == "clipped_normal":
        from .mechanisms import perturb_clipped

        x = rng.normal(truth["mu"], truth["sigma"], size=n)
        return perturb_clipped(x, LOWER, UPPER, epsilon, rng)
    from . import noise

    return noise.Laplace.from_epsilon(epsilon).release(rng.binomial(n, truth["p"]), rng)


def _default_sampler():
    import importlib.util

    return "nutpie" if importlib.util.find_spec("nutpie") is not None else "pymc"


def epsilon_sweep(
    epsilons=(0.5, 1.0, 4.0),
    *,
    scenario: str = "clipped_normal",
    n: int = 5000,
    mu: float = 1.0,
    sigma: float = 2.0,
    p: float = 0.3,
    seed: int = 0,
    sampler: str | None = None,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    cores: int | None = 1,
    progressbar: bool = False,
    out=None,
) -> SweepResult:
    """Release data at each ε, fit the noise-aware and the naive model, and plot both.

    Parameters
    ----------
    epsilons : sequence of float
        Privacy budgets, each > 0.
    scenario : {"clipped_normal", "counts"}
        ``"clipped_normal"`` (the README's): ``n`` people with :math:`x \\sim N(\\mu,
        \\sigma^2)`, each reporting ``clip(x, -5, 5) + Laplace(10 / ε)``; the noise-aware
        model is :class:`~pymc_dpnoise.LaplacePerturbedClippedNormal`, the naive one a Normal
        on the reports (the same data).  ``"counts"``: the ``n`` people split over
        ``COUNT_AREAS`` areas, each area releasing its count of ones
        (:math:`\\mathrm{Binomial}(n_a, p)`) plus ``Laplace(1 / ε)``; the noise-aware model is
        :class:`~pymc_dpnoise.NoisyBinomial`, the naive one a Binomial on the releases rounded
        and clipped to ``[0, n_a]`` (different data).  Priors: ``mu ~ Normal(0, 5)``,
        ``sigma ~ Gamma(2, 1)``, ``p ~ Beta(1, 1)``.
    n : int
        Number of people.
    mu, sigma, p : float
        The truth (``mu``, ``sigma`` for the clipped normal, ``p`` for the counts).
    seed : int
        Seed of the releases and of the samplers.
    sampler : {"nutpie", "pymc", "numpyro"}, optional
        NUTS implementation; nutpie when it is installed, else PyMC's.
    draws, tune, chains, cores, progressbar
        Passed to :func:`pymc.sample` (small defaults: this is a picture, not a benchmark).
    out : str or os.PathLike, optional
        Where to save the figure.

    Returns
    -------
    SweepResult
    """
    import pymc as pm

    from .baselines.naive import naive_model

    if scenario not in SWEEP_SCENARIOS:
        raise ValueError(f"`scenario` must be one of {sorted(SWEEP_SCENARIOS)}; got {scenario!r}")
    eps = tuple(float(e) for e in np.atleast_1d(epsilons))
    if not eps or not all(np.isfinite(e) and e > 0 for e in eps):
        raise ValueError(f"`epsilons` must be positive finite budgets; got {epsilons!r}")
    if int(n) < 2 * (COUNT_AREAS if scenario == "counts" else 1):
        raise ValueError(f"`n` is too small for the {scenario!r} scenario; got {n!r}")
    sampler = sampler or _default_sampler()
    if scenario == "clipped_normal":
        truth = {"mu": float(mu), "sigma": float(sigma)}
        size = int(n)
    else:
        truth = {"p": float(p)}
        size = np.full(COUNT_AREAS, int(n) // COUNT_AREAS)
    rng = np.random.default_rng(seed)
    idata, data = {}, {}
    for i, e in enumerate(eps):
        data[e] = _sweep_release(scenario, truth, size, e, rng)
        aware = _sweep_model(scenario, data[e], e, size)
        # the counts' naive model scores rounded releases: said in the docstring, not warned
        models = {"noise-aware": aware, "naive": naive_model(aware, warn=False)}
        for j, (name, model) in enumerate(models.items()):
            idata[(e, name)] = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                cores=cores,
                random_seed=seed + 2 * i + j,
                progressbar=progressbar,
                nuts_sampler=sampler,
                model=model,
                compute_convergence_checks=False,
            )
    title = (
        f"N={int(n)}: noise-aware vs naive posterior at each ε"
        if scenario == "clipped_normal"
        else f"{COUNT_AREAS} areas × {int(n) // COUNT_AREAS} people: noise-aware vs naive"
    )
    fig = plot_sweep(idata, truth, title=title)
    path = None
    if out is not None:
        path = Path(out)
        fig.savefig(path, dpi=120)
    return SweepResult(figure=fig, idata=idata, truth=truth, data=data, path=path)


def plot_sweep(idata, truth, *, title=None):
    """One panel per parameter: a ridge of posterior densities, one row per ε.

    Parameters
    ----------
    idata : dict
        ``(epsilon, model)`` -> fit with the parameters of ``truth`` in its posterior.
    truth : dict
        Parameter -> true value (a dashed vertical line in its panel).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from scipy.stats import gaussian_kde

    eps = sorted({e for e, _ in idata})
    models = list(dict.fromkeys(m for _, m in idata))
    colors = {"noise-aware": "C0", "naive": "C3"}
    params = list(truth)
    fig = Figure(figsize=(4.8 * len(params), 1.1 + 1.2 * len(eps)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(params), squeeze=False)[0]
    for ax, param in zip(axes, params, strict=True):
        for row, e in enumerate(eps):
            curves = {}
            for m in models:
                d = np.asarray(idata[(e, m)].posterior[param].values, dtype=float).ravel()
                lo, hi = d.min(), d.max()
                pad = 0.15 * (hi - lo) + 1e-9
                floor = 0.0 if lo > 0 else lo - pad  # a positive parameter stays positive
                grid = np.linspace(max(lo - pad, floor), hi + pad, 200)
                dens = gaussian_kde(d)(grid) if np.ptp(d) > 0 else np.zeros_like(grid)
                curves[m] = (grid, dens)
            top = max(float(dens.max()) for _, dens in curves.values()) or 1.0
            for m, (grid, dens) in curves.items():
                y = row + 0.85 * dens / top
                c = colors.get(m)
                ax.plot(grid, y, color=c, lw=1.2, label=m if row == 0 else None)
                ax.fill_between(grid, row, y, color=c, alpha=0.2, lw=0)
        ax.axvline(truth[param], color="k", ls="--", lw=1.2, label="truth")
        ax.set_yticks(range(len(eps)), [f"ε = {e:g}" for e in eps])
        ax.set_ylim(-0.1, len(eps))
        ax.set_xlabel(param)
        ax.set_title(f"posterior of {param}")
    axes[-1].legend(loc="upper right", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig
