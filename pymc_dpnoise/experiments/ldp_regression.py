r"""Perturbed-input regression on real data: LDP paper Figs. 4 and 5 (input model), hierarchy.

Experiment functions behind ``notebooks/ldp_regression.ipynb``:

* **Fig. 4** (:func:`run_fig4`): Wine quality (both colours), features standardised, reduced by
  PCA to ``d`` components, rescaled and clipped to L2 norm R = 1; the response (quality) centred
  and clipped to R_y = 2 before release; 80/20 train/test split.  Each training row is released
  with :func:`~pymc_dpnoise.mechanisms.regression.perturb_linreg` (Gaussian mechanism on x and
  y, budget split c = 0.5).  Test RMSE of the noise-aware
  :class:`~pymc_dpnoise.distributions.regression.PerturbedLinReg` posterior mean, LDP-SGD
  (:func:`~pymc_dpnoise.baselines.regression.ldp_sgd`), least squares on the noisy reports
  (noise-ignoring) and non-private least squares.
* **Fig. 5** (:func:`run_fig5`): Adult, ``n_train`` = 10,000 random training records, the same
  preprocessing, labels released by randomized response with budget cε
  (:func:`~pymc_dpnoise.mechanisms.regression.perturb_logreg`); test AUC on the Adult test file
  of :class:`~pymc_dpnoise.distributions.regression.PerturbedLogReg`, LDP-SGD, a logistic fit on
  the noisy reports and the non-private logistic fit.
* **Hierarchy** (:func:`run_hierarchical`): red and white wine as two sub-populations with their
  own θ_g ~ N(μ_θ, τ_θ²), Σ_g and σ_g, released with different budgets (personalised budgets);
  partial pooling against independent fits.

Priors follow the LDP paper (Supplement 8): θ ~ N(0, 5 I) (read as standard deviation √5) and
the scaled LKJ prior Σ = diag(τ) Ω diag(τ), Ω ~ LKJ(2), τ ~ HalfNormal(2.5)
(:func:`~pymc_dpnoise.priors.scaled_lkj_cov`, which samples τ and Ω separately), as in the
SBC problems below.

The preprocessing (standardisation, PCA, the rescaling constant, centring:
:func:`~pymc_dpnoise.datasets.wine_split`, :func:`~pymc_dpnoise.datasets.adult_split`,
:func:`~pymc_dpnoise.datasets.wine_group_split`) is computed from the clean training data and
treated as public, as in the paper; it is not itself private.

Simulation-based calibration (LDP paper §3.2.3)
-----------------------------------------------
Two :class:`~pymc_dpnoise.diagnostics.SBCProblem` subclasses, used with
:func:`~pymc_dpnoise.diagnostics.simulation_based_calibration` by :func:`run_grid`:

* :class:`PerturbedLinRegSBC`: θ ~ N(0, theta_sd² I), σ ~ HalfNormal(sigma_sd), Σ = diag(τ) Ω
  diag(τ) with Ω ~ LKJ(2), τ ~ HalfNormal(tau_sd) (the paper's scaled LKJ prior, Supplement 8,
  built by :func:`~pymc_dpnoise.priors.scaled_lkj_cov`, which samples τ and Ω separately:
  ``pm.LKJCholeskyCov`` under-covered τ₁);
  reports from :class:`~pymc_dpnoise.distributions.regression.PerturbedLinReg`'s generative
  model with the Gaussian-mechanism noise levels of budget ε (R = 1, R_y = 2, c = 0.5, δ).
* :class:`PerturbedLogRegSBC`: the same features and θ prior, labels through randomized
  response with budget cε.

The clean data are *not* clipped: SBC checks the model under its own assumptions (the noise
scales are those of the clipped mechanism at ε, which is what the models are given).  The
naive model (``noise_aware=False``) treats the noisy features as the clean ones (and, for the
logistic model, the reported labels as the true ones).

Command line (SBC tables in ``results/sbc_regression``)::

    python -m pymc_dpnoise.experiments.ldp_regression --mode fast
    python -m pymc_dpnoise.experiments.ldp_regression --mode full --naive
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from ..baselines import ldp_sgd, least_squares, logistic_mle
from ..datasets import adult_split, wine_group_split, wine_split
from ..diagnostics import SBCProblem, auc, rmse, sample_compiled
from ..mechanisms.core import analytic_gaussian_sigma
from ..mechanisms.regression import clip_response, perturb_linreg, perturb_logreg, split_epsilon
from ..priors import lkj_corr_draw, scaled_lkj_cov
from .toolkit import experiment_parser, result_coverage, run_sbc, seeded_rng, write_table

__all__ = [
    "FIG5_APPROXIMATION",
    "HIER_BUDGETS",
    "SBC_SETTINGS",
    "SETTINGS",
    "SGD_GRID",
    "PerturbedLinRegSBC",
    "PerturbedLogRegSBC",
    "build_linreg_group_model",
    "build_linreg_model",
    "build_logreg_model",
    "main",
    "run_fig4",
    "run_fig5",
    "run_grid",
    "run_hierarchical",
    "summarise",
    "tune_ldp_sgd",
]

#: prior scales (LDP paper, Supplement 8): θ ~ N(0, THETA_SD²), τ ~ HalfNormal(TAU_SD)
THETA_SD = float(np.sqrt(5.0))
TAU_SD = 2.5
#: σ (linear regression noise sd) ~ HalfNormal(SIGMA_SD); the paper does not state it
SIGMA_SD = 2.0
#: NUTS target acceptance of the Fig. 4 and Fig. 5 fits (nutpie's default)
TARGET_ACCEPT = 0.8

#: LDP-SGD hyper-parameters tried: group size constant (G = constant · d log d / ε²) × step size
SGD_GRID = {
    "squared": tuple(itertools.product((1.0, 10.0, 100.0), (0.1, 0.3, 1.0))),
    "logistic": tuple(itertools.product((1.0, 10.0, 100.0), (0.3, 1.0, 3.0))),
}

#: personalised budgets of the hierarchical example: (group, ε)
HIER_BUDGETS = (("red", 8.0), ("white", 32.0))

#: ε grid of the full Figs. 4 and 5
FULL_EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)

SETTINGS = {
    "fast": dict(
        fig4=dict(d=3, epsilons=(1.0, 8.0), repeats=2, tune_repeats=2, draws=300, tune=300),
        fig5=dict(
            d=3,
            n_train=2000,
            epsilons=(1.0, 8.0),
            repeats=1,
            tune_repeats=1,
            draws=150,
            tune=150,
        ),
        hier=dict(d=3, repeats=1, draws=300, tune=300),
    ),
    "full": dict(
        fig4=dict(
            d=3,
            epsilons=FULL_EPSILONS,
            repeats=20,
            tune_repeats=5,
            draws=500,
            tune=500,
        ),
        fig5=dict(
            d=3,
            n_train=10_000,
            epsilons=FULL_EPSILONS,
            repeats=5,
            tune_repeats=3,
            draws=300,
            tune=300,
        ),
        hier=dict(d=3, repeats=20, draws=500, tune=500),
    ),
}

#: E[sigmoid(u)] in the Fig. 5 model: the paper's degree-2 Chebyshev approximation (about 20x
#: faster than the default quadrature at N = 10,000)
FIG5_APPROXIMATION = dict(approximation="chebyshev", degree=2, interval=(-4.0, 4.0))


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def _lkj_cov(name, d, tau_sd):
    chol, _, _ = scaled_lkj_cov(name, d, eta=2.0, tau_sigma=tau_sd)
    return chol @ chol.T


def _regression_inputs(n, d, noise_y, theta_sd, tau_sd):
    """What both perturbed-input models share, created in the current model: the data
    ``reports`` (n, d + 1), and the likelihood arguments as a dict: the data ``sigma_x`` and
    ``noise_y`` (the response's noise parameter), θ ~ N(0, theta_sd² I) and Σ under the scaled
    LKJ(2) prior."""
    import pymc as pm

    reports = pm.Data("reports", np.zeros((n, d + 1)))
    inputs = dict(sigma_x=pm.Data("sigma_x", 1.0))
    inputs[noise_y] = pm.Data(noise_y, 1.0)
    inputs["theta"] = pm.Normal("theta", 0.0, theta_sd, shape=d)
    inputs["cov"] = _lkj_cov("chol", d, tau_sd)
    return reports, inputs


def build_linreg_model(n, d, *, theta_sd=THETA_SD, tau_sd=TAU_SD, sigma_sd=SIGMA_SD):
    """Noise-aware perturbed-input linear regression; data ``reports``, ``sigma_x``, ``sigma_y``.

    θ ~ N(0, theta_sd² I), Σ = diag(τ) Ω diag(τ) with Ω ~ LKJ(2), τ ~ HalfNormal(tau_sd),
    σ ~ HalfNormal(sigma_sd), reports ~ :class:`PerturbedLinReg`.  The reports (shape
    ``(n, d + 1)``) and noise scales are ``pm.Data``, so one compiled model serves every ε and
    repeat.
    """
    import pymc as pm

    from ..distributions.regression import PerturbedLinReg

    with pm.Model() as model:
        reports, inputs = _regression_inputs(n, d, "sigma_y", theta_sd, tau_sd)
        sigma = pm.HalfNormal("sigma", sigma_sd)
        PerturbedLinReg("z", sigma=sigma, observed=reports, **inputs)
    return model


def build_logreg_model(
    n,
    d,
    *,
    approximation="quadrature",
    degree=2,
    interval=(-4.0, 4.0),
    theta_sd=THETA_SD,
    tau_sd=TAU_SD,
):
    """Noise-aware perturbed-input logistic regression; data ``reports``, ``sigma_x``, ``epsilon_y``.

    θ ~ N(0, theta_sd² I), the scaled LKJ(2) prior on Σ, reports ~ :class:`PerturbedLogReg`
    with the given ``approximation`` of E[sigmoid(u)].
    """
    import pymc as pm

    from ..distributions.regression import PerturbedLogReg

    with pm.Model() as model:
        reports, inputs = _regression_inputs(n, d, "epsilon_y", theta_sd, tau_sd)
        PerturbedLogReg(
            "z",
            approximation=approximation,
            degree=degree,
            interval=interval,
            observed=reports,
            **inputs,
        )
    return model


def build_linreg_group_model(
    ns, d, *, theta_sd=THETA_SD, tau_sd=TAU_SD, sigma_sd=SIGMA_SD, pool_sd=1.0
):
    r"""Perturbed-input linear regression for several sub-populations, pooled or not.

    Group g has its own Σ_g (scaled LKJ(2)), σ_g and coefficients θ_g, and its own noise
    scales (data ``sigma_x``, ``sigma_y`` of shape ``(G,)``: personalised budgets); the reports
    of group g are the data ``reports_g``.  The data ``pooled`` (0 or 1) switches the prior of θ:

    * pooled = 1 (partial pooling): θ_g = μ + τ_θ ⊙ η_g, μ ~ N(0, theta_sd² I),
      τ_θ ~ HalfNormal(pool_sd) (one per coefficient), η_g ~ N(0, I);
    * pooled = 0 (independent): θ_g = theta_sd · η_g, i.e. θ_g ~ N(0, theta_sd² I) separately
      (μ and τ_θ are then left to their priors and do not touch the data).

    ``theta`` is a deterministic of shape ``(G, d)``.
    """
    import pymc as pm

    from ..distributions.regression import PerturbedLinReg

    G = len(ns)
    with pm.Model() as model:
        pooled = pm.Data("pooled", 1.0)
        sigma_x = pm.Data("sigma_x", np.ones(G))
        sigma_y = pm.Data("sigma_y", np.ones(G))
        mu = pm.Normal("mu_theta", 0.0, theta_sd, shape=d)
        tau_theta = pm.HalfNormal("tau_theta", pool_sd, shape=d)
        eta = pm.Normal("eta", 0.0, 1.0, shape=(G, d))
        theta = pm.Deterministic(
            "theta", pooled * (mu + tau_theta * eta) + (1.0 - pooled) * theta_sd * eta
        )
        sigma = pm.HalfNormal("sigma", sigma_sd, shape=G)
        for g, n in enumerate(ns):
            reports = pm.Data(f"reports_{g}", np.zeros((n, d + 1)))
            cov = _lkj_cov(f"chol_{g}", d, tau_sd)
            PerturbedLinReg(
                f"z_{g}",
                theta=theta[g],
                sigma=sigma[g],
                cov=cov,
                sigma_x=sigma_x[g],
                sigma_y=sigma_y[g],
                observed=reports,
            )
    return model


# --------------------------------------------------------------------------------------------
# LDP-SGD with tuned hyper-parameters
# --------------------------------------------------------------------------------------------


def tune_ldp_sgd(splits, epsilon, delta, rng, *, loss, metric, grid=None, y_clip=None):
    """Pick LDP-SGD's (group-size constant, step size) by the mean test metric over ``splits``.

    This uses the *test* data of pilot splits (different from the evaluation splits) and no
    privacy budget, so it favours LDP-SGD: the chosen setting is the best the grid offers.

    Parameters
    ----------
    splits : list of Split
    epsilon, delta : float
    rng : numpy.random.Generator
    loss : {"squared", "logistic"}
    metric : {"rmse", "auc"}
        Lower RMSE / higher AUC is better.
    grid : sequence of (group_constant, lr), optional
        Default :data:`SGD_GRID` ``[loss]``.
    y_clip : float, optional
        Clip the responses to ``[-y_clip, y_clip]`` before the fit (linear regression).

    Returns
    -------
    (best, table)
        ``best`` = ``(group_constant, lr)``; ``table`` = DataFrame with the mean metric per
        grid point.
    """
    grid = SGD_GRID[loss] if grid is None else grid
    rows = []
    for gc, lr in grid:
        vals = []
        for s in splits:
            y = s.y_train if y_clip is None else clip_response(s.y_train, y_clip)
            fit = ldp_sgd(s.X_train, y, epsilon, delta, rng, loss=loss, group_constant=gc, lr=lr)
            pred = s.X_test @ fit["theta"]
            vals.append(rmse(pred, s.y_test) if metric == "rmse" else auc(pred, s.y_test))
        rows.append(dict(group_constant=gc, lr=lr, value=float(np.mean(vals))))
    table = pd.DataFrame(rows)
    i = table["value"].idxmin() if metric == "rmse" else table["value"].idxmax()
    return (float(table.loc[i, "group_constant"]), float(table.loc[i, "lr"])), table


# --------------------------------------------------------------------------------------------
# Experiments
# --------------------------------------------------------------------------------------------


def _fit_info(info, draws):
    return dict(
        divergences=info["divergences"],
        max_rhat=info["max_rhat"],
        seconds=info["seconds"],
        theta_sd=float(np.mean(draws.std(0))),
    )


def _fit(compiled, rng, draws, tune, target_accept, **data):
    """NUTS on ``compiled`` with its ``pm.Data`` set to ``data``, seeded from the stream ``rng``."""
    seed = int(rng.integers(2**31))
    kw = dict(draws=draws, tune=tune, seed=seed, target_accept=target_accept)
    return sample_compiled(compiled, **kw, **data)


def _splits(split, seed, tag, repeats, tune_repeats):
    """``(splits, pilots)`` of figure ``tag``: ``split(rng)`` on the streams (tag, 0, r), and on
    (tag, 1, r) for the LDP-SGD tuning pilots."""
    splits = [split(seeded_rng(seed, tag, 0, r)) for r in range(repeats)]
    pilots = [split(seeded_rng(seed, tag, 1, r)) for r in range(tune_repeats)]
    return splits, pilots


def _compare_private(
    compiled,
    splits,
    pilots,
    epsilons,
    *,
    tag,
    seed,
    metric,
    release,
    scales,
    naive,
    sgd,
    draws,
    tune,
    progress,
    label,
):
    """Rows of the private methods of Figs. 4 and 5, per (ε, split): the noise-aware posterior
    mean, the noise-ignoring ``naive = (name, fit(reports))`` and LDP-SGD (tuned per ε on the
    ``pilots``); ``metric`` is ``"rmse"`` or ``"auc"`` of the test predictions."""
    score = {"rmse": rmse, "auc": auc}[metric]
    y_clip = sgd["y_clip"]
    rows = []
    for i, eps in enumerate(epsilons):
        (gc, lr), _ = tune_ldp_sgd(
            pilots,
            eps,
            sgd["delta"],
            seeded_rng(seed, tag, 2, i),
            loss=sgd["loss"],
            metric=metric,
            y_clip=y_clip,
        )
        for r, s in enumerate(splits):
            rng = seeded_rng(seed, tag, 3, i, r)
            rel = release(s, eps, rng)
            scale_data = {k: np.float64(getattr(rel, k)) for k in scales}
            post, info = _fit(
                compiled, rng, draws, tune, TARGET_ACCEPT, reports=rel.reports, **scale_data
            )
            base = dict(epsilon=eps, repeat=r)
            theta = post.mean(0)
            rows.append(
                base
                | {"method": "noise-aware", metric: score(s.X_test @ theta, s.y_test)}
                | _fit_info(info, post)
            )
            theta = naive[1](rel.reports)
            rows.append(base | {"method": naive[0], metric: score(s.X_test @ theta, s.y_test)})
            y = s.y_train if y_clip is None else clip_response(s.y_train, y_clip)
            fit = ldp_sgd(
                s.X_train,
                y,
                eps,
                sgd["delta"],
                rng,
                loss=sgd["loss"],
                group_constant=gc,
                lr=lr,
            )
            rows.append(
                base
                | {"method": "LDP-SGD", metric: score(s.X_test @ fit["theta"], s.y_test)}
                | dict(group_constant=gc, lr=lr, steps=fit["steps"])
            )
            if progress is not None:
                progress(f"{label} ε={eps:g} repeat {r}: {info['seconds']:.1f} s")
    return rows


def run_fig4(
    compiled,
    *,
    d=3,
    epsilons=(1.0, 8.0),
    repeats=2,
    tune_repeats=2,
    delta=1e-5,
    draws=300,
    tune=300,
    R=1.0,
    R_y=2.0,
    c=0.5,
    seed=2026,
    progress=None,
) -> pd.DataFrame:
    """LDP Fig. 4 with the input model: test RMSE on Wine per (ε, repeat, method).

    ``compiled`` is ``nutpie.compile_pymc_model(build_linreg_model(n_train, d))``.  For every
    repeat: a fresh 80/20 split (:func:`wine_split`) and, per ε, a fresh release
    (:func:`perturb_linreg`).  Methods: ``noise-aware`` (posterior mean of θ), ``LDP-SGD``
    (hyper-parameters by :func:`tune_ldp_sgd` on ``tune_repeats`` pilot splits),
    ``naive LS`` (least squares on the noisy reports), ``non-private LS`` and ``zero``
    (predict the training mean).  The same δ is used by the release and by LDP-SGD.

    Returns
    -------
    pandas.DataFrame
        Columns ``epsilon, repeat, method, rmse`` and, for the noise-aware rows,
        ``divergences, max_rhat, seconds, theta_sd`` (mean posterior sd of θ); for LDP-SGD,
        ``group_constant, lr, steps``.
    """
    splits, pilots = _splits(lambda rng: wine_split(rng, d, R=R), seed, 4, repeats, tune_repeats)
    rows = []
    for r, s in enumerate(splits):
        for name, th in (("non-private LS", least_squares(s.X_train, s.y_train)), ("zero", None)):
            pred = np.zeros(len(s.y_test)) if th is None else s.X_test @ th
            for eps in epsilons:
                rows.append(dict(epsilon=eps, repeat=r, method=name, rmse=rmse(pred, s.y_test)))
    rows += _compare_private(
        compiled,
        splits,
        pilots,
        epsilons,
        tag=4,
        seed=seed,
        metric="rmse",
        release=lambda s, eps, rng: perturb_linreg(
            s.X_train, s.y_train, eps, delta, rng, R=R, R_y=R_y, c=c
        ),
        scales=("sigma_x", "sigma_y"),
        naive=("naive LS", lambda z: least_squares(z[:, :d], z[:, d])),
        sgd=dict(loss="squared", delta=delta, y_clip=R_y),
        draws=draws,
        tune=tune,
        progress=progress,
        label="fig4",
    )
    return pd.DataFrame(rows)


def run_fig5(
    compiled,
    *,
    d=3,
    n_train=10_000,
    epsilons=(1.0, 8.0),
    repeats=1,
    tune_repeats=1,
    delta=1e-5,
    draws=200,
    tune=200,
    R=1.0,
    c=0.5,
    seed=2026,
    progress=None,
) -> pd.DataFrame:
    """LDP Fig. 5 with the input model: test AUC on Adult per (ε, repeat, method).

    ``compiled`` is ``nutpie.compile_pymc_model(build_logreg_model(n_train, d, ...))``.  Per
    repeat a fresh sample of ``n_train`` training records (:func:`adult_split`), per ε a fresh
    release (:func:`perturb_logreg`).  Methods: ``noise-aware`` (posterior mean of θ),
    ``LDP-SGD`` (tuned as in :func:`run_fig4`), ``naive logistic`` (logistic fit, with
    intercept, on the noisy features and randomized labels), ``non-private logistic``.  AUC
    depends only on the direction of θ, so the intercept (absent from the noise-aware model and
    LDP-SGD) does not enter it.
    """
    splits, pilots = _splits(
        lambda rng: adult_split(rng, d, n_train=n_train, R=R), seed, 5, repeats, tune_repeats
    )
    rows = []
    for r, s in enumerate(splits):
        w = logistic_mle(s.X_train, s.y_train, intercept=True, ridge=1e-6)
        a = auc(s.X_test @ w[:d], s.y_test)
        rows += [
            dict(epsilon=eps, repeat=r, method="non-private logistic", auc=a) for eps in epsilons
        ]
    rows += _compare_private(
        compiled,
        splits,
        pilots,
        epsilons,
        tag=5,
        seed=seed,
        metric="auc",
        release=lambda s, eps, rng: perturb_logreg(s.X_train, s.y_train, eps, delta, rng, R=R, c=c),
        scales=("sigma_x", "epsilon_y"),
        naive=(
            "naive logistic",
            lambda z: logistic_mle(z[:, :d], z[:, d], intercept=True, ridge=1e-6)[:d],
        ),
        sgd=dict(loss="logistic", delta=delta, y_clip=None),
        draws=draws,
        tune=tune,
        progress=progress,
        label="fig5",
    )
    return pd.DataFrame(rows)


def run_hierarchical(
    compiled,
    *,
    d=3,
    budgets=HIER_BUDGETS,
    repeats=1,
    delta=1e-5,
    draws=300,
    tune=300,
    target_accept=0.95,
    R=1.0,
    R_y=2.0,
    c=0.5,
    seed=2026,
    progress=None,
) -> pd.DataFrame:
    """Red and white wine as sub-populations with personalised budgets: pooled vs independent.

    ``compiled`` is ``nutpie.compile_pymc_model(build_linreg_group_model(ns, d))`` with ``ns``
    the training sizes of :func:`wine_group_split` (red, white).  Per repeat: a fresh stratified
    split; each group released with :func:`perturb_linreg` at its own ε from ``budgets``; the
    same reports fitted with ``pooled`` = 1 and 0 (NUTS with ``target_accept``, high by default
    because two groups give the pooling scale τ_θ a funnel-shaped posterior).  Test RMSE per group of the posterior mean of
    θ_g, of the per-group non-private least squares and of ``zero``.

    Returns
    -------
    pandas.DataFrame
        ``repeat, group, epsilon, method, rmse`` (+ ``divergences, max_rhat, seconds`` and the
        posterior mean and sd of θ_g in ``theta_mean``/``theta_sd`` as lists for the fits).
    """
    rows = []
    names = [b[0] for b in budgets]
    eps = np.array([b[1] for b in budgets], dtype=float)
    for r in range(repeats):
        s = wine_group_split(seeded_rng(seed, 6, 0, r), d, R=R)
        rng = seeded_rng(seed, 6, 1, r)
        data, sx, sy = {}, [], []
        for g in range(len(budgets)):
            a = s.groups_train == g
            rel = perturb_linreg(s.X_train[a], s.y_train[a], eps[g], delta, rng, R=R, R_y=R_y, c=c)
            data[f"reports_{g}"] = rel.reports
            sx.append(rel.sigma_x)
            sy.append(rel.sigma_y)
        for label, flag in (("partial pooling", 1.0), ("independent", 0.0)):
            post, info = _fit(
                compiled,
                rng,
                draws,
                tune,
                target_accept,
                pooled=np.float64(flag),
                sigma_x=np.asarray(sx),
                sigma_y=np.asarray(sy),
                **data,
            )
            for g in range(len(budgets)):
                b = s.groups_test == g
                th = post[:, g].mean(0)
                rows.append(
                    dict(repeat=r, group=names[g], epsilon=eps[g], method=label)
                    | dict(rmse=rmse(s.X_test[b] @ th, s.y_test[b]))
                    | dict(divergences=info["divergences"], max_rhat=info["max_rhat"])
                    | dict(seconds=info["seconds"], theta_mean=th.round(4).tolist())
                    | dict(theta_sd=post[:, g].std(0).round(4).tolist())
                )
            if progress is not None:
                progress(f"hier repeat {r} {label}: {info['seconds']:.1f} s")
        for g in range(len(budgets)):
            a, b = s.groups_train == g, s.groups_test == g
            th = least_squares(s.X_train[a], s.y_train[a])
            for label, pred in (("non-private LS", s.X_test[b] @ th), ("zero", 0.0 * s.y_test[b])):
                rows.append(
                    dict(repeat=r, group=names[g], epsilon=eps[g], method=label)
                    | dict(rmse=rmse(pred, s.y_test[b]), theta_mean=th.round(4).tolist())
                )
    return pd.DataFrame(rows)


def summarise(runs: pd.DataFrame, metric: str, by=("epsilon", "method")) -> pd.DataFrame:
    """Mean, standard deviation, standard error and count of ``metric`` per ``by`` group."""
    g = runs.groupby(list(by))[metric]
    out = g.agg(["mean", "std", "count"])
    out["se"] = out["std"] / np.sqrt(out["count"])
    return out.reset_index()


# --------------------------------------------------------------------------------------------
# Simulation-based calibration of the regression models
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _RegressionSBC(SBCProblem):
    d: int = 2
    epsilon: float = 1.0
    delta: float = 1e-5
    c: float = 0.5
    R: float = 1.0
    theta_sd: float = 2.0
    tau_sd: float = 1.0

    @property
    def sigma_x(self) -> float:
        eps_x, _ = split_epsilon(self.epsilon, self.c)
        return float(analytic_gaussian_sigma(eps_x, self._delta_x, 2.0 * self.R))

    def _prior_draw(self, rng):
        theta = rng.normal(0.0, self.theta_sd, self.d)
        tau = np.abs(rng.normal(0.0, self.tau_sd, self.d))
        omega = lkj_corr_draw(rng, self.d, 2.0)
        cov = omega * np.outer(tau, tau)
        return theta, tau, cov

    def _features(self, rng, cov):
        x = rng.multivariate_normal(np.zeros(self.d), cov, size=self.n)
        return x, x + rng.normal(0.0, self.sigma_x, size=x.shape)

    def _truth(self, theta, tau):
        out = {f"theta_{j}": float(theta[j]) for j in range(self.d)}
        out.update({f"tau_{j}": float(tau[j]) for j in range(self.d)})
        return out

    def _priors(self, pm):
        theta = pm.Normal("theta", 0.0, self.theta_sd, shape=self.d)
        for j in range(self.d):
            pm.Deterministic(f"theta_{j}", theta[j])
        chol, tau, _ = scaled_lkj_cov("cov", self.d, eta=2.0, tau_sigma=self.tau_sd)
        for j in range(self.d):
            pm.Deterministic(f"tau_{j}", tau[j])
        return theta, chol


@dataclasses.dataclass(frozen=True)
class PerturbedLinRegSBC(_RegressionSBC):
    """Perturbed-input linear regression (LDP Fig. 4's input model), simulated from the prior."""

    R_y: float = 2.0
    sigma_sd: float = 1.0

    @property
    def _delta_x(self):
        return 0.5 * self.delta

    @property
    def sigma_y(self) -> float:
        _, eps_y = split_epsilon(self.epsilon, self.c)
        return float(analytic_gaussian_sigma(eps_y, 0.5 * self.delta, 2.0 * self.R_y))

    @property
    def param_names(self):
        return (
            *(f"theta_{j}" for j in range(self.d)),
            "sigma",
            *(f"tau_{j}" for j in range(self.d)),
        )

    def simulate(self, rng):
        theta, tau, cov = self._prior_draw(rng)
        sigma = abs(rng.normal(0.0, self.sigma_sd))
        x, zx = self._features(rng, cov)
        y = x @ theta + rng.normal(0.0, sigma, self.n)
        zy = y + rng.normal(0.0, self.sigma_y, self.n)
        truth = self._truth(theta, tau) | {"sigma": float(sigma)}
        return truth, np.column_stack([zx, zy])

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from ..distributions.regression import PerturbedLinReg

        with pm.Model() as model:
            z = pm.Data("reports", np.asarray(reports, dtype=float))
            theta, chol = self._priors(pm)
            sigma = pm.HalfNormal("sigma", self.sigma_sd)
            cov = chol @ chol.T
            if noise_aware:
                PerturbedLinReg(
                    "z",
                    theta=theta,
                    sigma=sigma,
                    cov=cov,
                    sigma_x=self.sigma_x,
                    sigma_y=self.sigma_y,
                    observed=z,
                )
            else:  # noisy features and responses taken as clean
                pm.MvNormal("zx", mu=np.zeros(self.d), chol=chol, observed=z[:, : self.d])
                pm.Normal("zy", mu=z[:, : self.d] @ theta, sigma=sigma, observed=z[:, self.d])
        return model


@dataclasses.dataclass(frozen=True)
class PerturbedLogRegSBC(_RegressionSBC):
    """Perturbed-input logistic regression (LDP Fig. 5's input model), simulated from the prior."""

    approximation: str = "quadrature"

    @property
    def _delta_x(self):
        return self.delta

    @property
    def epsilon_y(self) -> float:
        return split_epsilon(self.epsilon, self.c)[1]

    @property
    def param_names(self):
        return (*(f"theta_{j}" for j in range(self.d)), *(f"tau_{j}" for j in range(self.d)))

    def simulate(self, rng):
        from ..mechanisms.core import randomized_response

        theta, tau, cov = self._prior_draw(rng)
        x, zx = self._features(rng, cov)
        y = (rng.random(self.n) < 1.0 / (1.0 + np.exp(-(x @ theta)))).astype(int)
        zy = randomized_response(y, self.epsilon_y, rng)
        return self._truth(theta, tau), np.column_stack([zx, zy.astype(float)])

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from ..distributions.regression import PerturbedLogReg

        with pm.Model() as model:
            z = pm.Data("reports", np.asarray(reports, dtype=float))
            theta, chol = self._priors(pm)
            cov = chol @ chol.T
            if noise_aware:
                PerturbedLogReg(
                    "z",
                    theta=theta,
                    cov=cov,
                    sigma_x=self.sigma_x,
                    epsilon_y=self.epsilon_y,
                    approximation=self.approximation,
                    observed=z,
                )
            else:
                pm.MvNormal("zx", mu=np.zeros(self.d), chol=chol, observed=z[:, : self.d])
                pm.Bernoulli("zy", logit_p=z[:, : self.d] @ theta, observed=z[:, self.d])
        return model


#: SBC settings per mode
SBC_SETTINGS = {
    "full": dict(n=1000, epsilons=(0.5, 2.0, 8.0), replicates=100, draws=400, tune=400),
    "fast": dict(n=300, epsilons=(1.0, 8.0), replicates=6, draws=150, tune=150),
}


def run_grid(
    kind: str,
    mode: str = "fast",
    *,
    n_jobs=None,
    seed=2026,
    noise_aware=True,
    d=2,
    save_replicates=None,
    epsilons=None,
):
    """SBC over the ε grid of ``SBC_SETTINGS[mode]`` for ``kind`` in {"linear", "logistic"}.

    The same ``seed`` gives the same prior draws (truths) at every ε, so the cells of one grid
    are not independent.  ``save_replicates``, a directory, keeps the per-replicate quantiles,
    truths, R-hat and divergences (``{kind}_{aware|naive}_eps{ε}_seed{seed}.npz``) for
    diagnosis.  ``epsilons`` overrides the grid.
    """
    cfg = SBC_SETTINGS[mode]
    cls = {"linear": PerturbedLinRegSBC, "logistic": PerturbedLogRegSBC}[kind]
    tables = []
    for eps in cfg["epsilons"] if epsilons is None else epsilons:
        problem = cls(n=cfg["n"], d=d, epsilon=eps)
        res, seconds = run_sbc(
            problem, cfg["replicates"], cfg, noise_aware=noise_aware, seed=seed, n_jobs=n_jobs
        )
        if save_replicates is not None:
            tag = "aware" if noise_aware else "naive"
            np.savez_compressed(
                Path(save_replicates) / f"{kind}_{tag}_eps{eps:g}_seed{seed}.npz",
                param_names=np.array(res.param_names),
                quantiles=res.quantiles,
                truths=res.truths,
                max_rhat=res.max_rhat,
                divergences=res.divergences,
            )
        model = kind + (" noise-aware" if noise_aware else " naive")
        tab = result_coverage(res, epsilon=eps, model=model)
        tab["seconds"] = seconds
        tables.append(tab)
    return pd.concat(tables, ignore_index=True)


def main(argv=None):
    ap = experiment_parser(
        "Simulation-based calibration of the perturbed-input regression models (LDP §3.2.3).",
        SBC_SETTINGS,
        "results/sbc_regression",
    )
    ap.add_argument("--kinds", nargs="+", default=["linear", "logistic"])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--epsilons", type=float, nargs="+", default=None)
    ap.add_argument("--naive", action="store_true", help="also run the naive models")
    ap.add_argument(
        "--only-naive", action="store_true", help="run only the naive (noise-ignoring) models"
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for kind in args.kinds:
        variants = (False,) if args.only_naive else (True, False) if args.naive else (True,)
        for aware in variants:
            tab = run_grid(
                kind,
                args.mode,
                n_jobs=args.jobs,
                noise_aware=aware,
                seed=args.seed,
                epsilons=args.epsilons,
                save_replicates=out,
            )
            name = f"{kind}_{'aware' if aware else 'naive'}_{args.mode}"
            if args.seed != 2026 or args.epsilons is not None:
                name += f"_seed{args.seed}"
            write_table(tab, out, f"{name}_coverage")
            print(tab.to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
