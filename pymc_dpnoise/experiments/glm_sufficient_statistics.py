r"""Experiments of the GLM paper (Figs. 3–5) and the LDP paper's sufficient-statistics models.

Used by ``notebooks/glm_sufficient_statistics.ipynb`` (the module is named after it).
Everything a figure needs is a function here, so that the notebook only calls, tabulates and
plots.  The simulation-based calibration of :class:`~pymc_dpnoise.SSNormalApprox` (LDP paper
§3.1, GLM paper §3.2) is at the end (:func:`run_grid`, command line below).

Data preparation (all data sets)
--------------------------------
Features are standardised, divided by :math:`2\sqrt d` (a typical row then has norm ≈ 1/2) and
rows with norm above :math:`R = 1` are scaled back to norm 1
(:func:`~pymc_dpnoise.datasets.scale_features`; the data sets by
:func:`~pymc_dpnoise.datasets.pima_data`, :func:`~pymc_dpnoise.datasets.pima_poisson_data`,
:func:`~pymc_dpnoise.datasets.adult_data` and :func:`~pymc_dpnoise.datasets.wine_data`).  The
standardisation uses the data's own means and standard deviations, as the papers'
pre-processing does; it is not part of the privacy accounting.  Logistic labels are ±1.

Models
------
* Noise-aware (:func:`build_ss_model`): :math:`\theta \sim N(0, \tau_\theta^2 I)`,
  :math:`\Sigma = \operatorname{diag}(\tau)\,\Omega\,\operatorname{diag}(\tau)` with
  :math:`\Omega \sim \mathrm{LKJ}(2)`, :math:`\tau_j \sim \mathrm{HalfNormal}(2.5)` (the GLM
  paper's scaled LKJ prior, built by :func:`~pymc_dpnoise.priors.scaled_lkj_cov`), and
  :class:`~pymc_dpnoise.SSNormalApprox` on the released noisy
  sum (logistic moments by quadrature, ``order="quadrature"``).  Σ is a parameter with that prior,
  not a plug-in estimate.  (The GLM paper's θ prior — uniform direction, truncated χ²(d) squared
  norm — needs a truncation bound taken from the non-private fit and exists to keep the Taylor
  approximation in range; with quadrature moments it is not needed, and a plain Gaussian prior is
  shared by all three methods.)
* Non-private (:func:`build_clean_model`): the same θ prior and the exact GLM likelihood on the
  clean (scaled, clipped) data.  For logistic regression one model with ``D_PAD`` = 7 columns
  serves every data set: data with fewer covariates are padded with zero columns, whose
  coefficients then just follow the prior (the likelihood does not depend on them) and are
  dropped.  This saves a compilation per data set.
* DP-SGLD (:func:`pymc_dpnoise.baselines.dp_sgld`): same Gaussian prior; batch √N,
  clipping C = 1, step size :math:`\eta = 2\,\mathrm{lr}/N` (the paper's learning rate ``lr``
  applied to the per-record average gradient: 0.1 for Diabetes, 0.01 for Adult), privacy
  accounted over all iterations (RDP, add/remove neighbours).
* LDP-SGD (:func:`pymc_dpnoise.baselines.ldp_sgd`, LDP experiments only): group-size constant
  and step size per ε from a grid, by the test metric on pilot splits (:func:`tune_ldp_sgd_glm`).

Simulation-based calibration of SSNormalApprox
----------------------------------------------
Noisy sums of sufficient statistics of GLMs (GLM paper Sec. 3; LDP paper Sec. 3.1): the SBC
coverage should lie within the binomial band for logistic and Poisson at ε ∈ {0.1, 1}.

:class:`~pymc_dpnoise.diagnostics.SBCProblem` subclasses, used with
:func:`~pymc_dpnoise.diagnostics.simulation_based_calibration`:

* :class:`LogisticSSSBC` — θ ~ N(0, theta_sd² I); x_i ~ N(0, Σ); y_i = ±1 with
  P(y_i = 1 | x_i) = sigmoid(θᵀx_i); model with ``order="quadrature"`` (no Taylor truncation,
  so large θᵀΣθ is not a misspecification).
* :class:`PoissonSSSBC` — the same θ and x, y_i ~ Poisson(exp(θᵀx_i)) (log link, no intercept).
* :class:`LinearSSSBC` — y_i = θᵀx_i + N(0, σ²), σ ~ HalfNormal(sigma_sd).

SBC design (what it checks, and what it does not)
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
* Σ is **known** (the model is given the Σ the features were drawn from), so the parameters
  checked are the coefficients θ (and σ for the linear model).  Σ = x_scale² ((1 - ρ) I + ρ 11ᵀ)
  with x_scale = 0.2, ρ = 0.3 (d = 2): a row has ‖x‖ > R = 1 with probability ≈ 1e-4, so the
  clipping of the release is negligible (:func:`clip_rates` measures it; the tables report it).
  The responses are clipped to [0, R_y] (Poisson, R_y = 10) or [-R_y, R_y] (linear, R_y = 4);
  these too are rare (measured).  Rare clipping is the only way the simulation departs from
  the model's assumptions other than the normal approximation itself.
* The data are simulated record by record from the GLM and released by
  :func:`~pymc_dpnoise.mechanisms.sufficient.release_sufficient_statistics` (central DP with
  δ = 1e-5 on the sum; ``local=True`` adds the noise to every record, LDP).  The model is the
  *normal approximation* of that sum, exact in its first two moments; it is a good
  approximation only for large n.  The cost of a fit does not depend on n, so the full grid uses
  n = 10⁴ records (10⁶ for LDP, where the noise variance grows like n): with n = 10³ and R_y = 10
  the Poisson posterior is barely narrower than the prior at ε ≤ 1, which makes SBC a weak test.
  The ``contraction`` columns (1 - posterior var / prior var, averaged over a few replicates)
  show how far the data move the posterior.
* The naive baseline fits the same normal approximation with the privacy noise left out
  (``noise_cov`` = jitter · I, jitter = 1e-6): it treats the noisy sum as the exact one.

Command line (tables in ``results/sbc_sufficient``)::

    python -m pymc_dpnoise.experiments.glm_sufficient_statistics --mode fast
    python -m pymc_dpnoise.experiments.glm_sufficient_statistics --mode full
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..baselines import dp_sgld, ldp_sgd, least_squares, logistic_mle
from ..datasets import adult_data, wine_data
from ..diagnostics import (
    SBCProblem,
    auc,
    ks_distance,
    rmse,
    sample_compiled,
)
from ..math.sufficient import stat_dim
from ..mechanisms.core import analytic_gaussian_sigma, clip_rows
from ..mechanisms.sufficient import release_sufficient_statistics, ss_sensitivity
from ..optional import require
from ..priors import lkj_corr_draw, scaled_lkj_cov
from .ldp_regression import SGD_GRID
from .toolkit import coverage_summary, experiment_parser, result_coverage, run_sbc, write_table

__all__ = [
    "D_PAD",
    "FIT_OPTIONS",
    "SBC_SETTINGS",
    "SETTINGS",
    "SYNTH_THETA",
    "LinearSSSBC",
    "LogisticSSSBC",
    "PoissonSSSBC",
    "build_clean_model",
    "build_ss_model",
    "clip_rates",
    "ks_table",
    "main",
    "normal_ks_same_mean",
    "posterior_contraction",
    "run_central",
    "run_fig5",
    "run_grid",
    "run_ldp",
    "sbc_summary",
    "summary_table",
    "synthetic_cov",
    "synthetic_data",
    "tune_ldp_sgd_glm",
]

SYNTH_THETA = (-0.9, -0.5, 0.3)
D_PAD = 7
PRIOR_SD = 2.5  # theta ~ N(0, PRIOR_SD^2 I) in all models (scaled features)
TAU_SD = 2.5  # Sigma's scales ~ HalfNormal(TAU_SD)
DELTA = 1e-5

SETTINGS = {
    "fast": dict(
        draws=300,
        tune=300,
        chains=2,
        sgld_iterations=10_000,
        sgld_burn_in=6_000,
        central_eps=(0.1, 0.3),
        adult_n=8000,
        adult_d=4,
        fig5_eps=(0.1, 1.1),
        fig5_repeats=1,
        fig5_draws=300,
        poisson_eps=(1.0,),
        poisson_ry=10.0,
        ldp_eps=(1.0, 4.0),
        ldp_repeats=1,
        ldp_adult_repeats=1,
        ldp_tune_repeats=1,
        wine_d=4,
    ),
    "full": dict(
        draws=1000,
        tune=1000,
        chains=2,
        sgld_iterations=10_000,
        sgld_burn_in=6_000,
        central_eps=(0.1, 0.3),
        adult_n=8000,
        adult_d=7,
        fig5_eps=tuple(float(e) for e in np.linspace(0.001, 1.1, 10).round(4)),
        fig5_repeats=20,
        fig5_draws=500,
        poisson_eps=(0.3, 1.0, 3.0),
        poisson_ry=10.0,
        ldp_eps=(0.5, 1.0, 2.0, 4.0, 8.0),
        ldp_repeats=5,
        ldp_adult_repeats=5,
        ldp_adult_draws=1000,
        ldp_tune_repeats=2,
        wine_d=4,
    ),
}


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def synthetic_cov(d=3, seed=5):
    """A fixed random covariance (LKJ(2) correlation, scales in [0.25, 0.4]) for GLM Fig. 5."""
    rng = np.random.default_rng(seed)
    tau = rng.uniform(0.25, 0.4, d)
    return lkj_corr_draw(rng, d, 2.0) * np.outer(tau, tau)


def synthetic_data(rng, n=1000, theta=SYNTH_THETA):
    """x ~ N(0, :func:`synthetic_cov`), clipped to norm 1; logistic labels ±1."""
    theta = np.asarray(theta, float)
    X = clip_rows(rng.multivariate_normal(np.zeros(len(theta)), synthetic_cov(len(theta)), n), 1)
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-X @ theta)), 1.0, -1.0)
    return X, y


# --------------------------------------------------------------------------------------------
# Models and fitting
# --------------------------------------------------------------------------------------------


def build_ss_model(glm, d, *, order="quadrature", prior_sd=PRIOR_SD, tau_sd=TAU_SD, sigma_sd=2.0):
    """Noise-aware model; data ``z``, ``noise_cov``, ``n`` are ``pm.Data`` (swap with_data)."""
    import pymc as pm

    from ..distributions.sufficient import SSNormalApprox

    m = stat_dim(glm, d)
    with pm.Model() as model:
        z = pm.Data("z", np.zeros(m))
        noise_cov = pm.Data("noise_cov", np.eye(m))
        n = pm.Data("n", 1.0)
        theta = pm.Normal("theta", 0.0, prior_sd, shape=d)
        chol, _, _ = scaled_lkj_cov("cov", d, eta=2.0, tau_sigma=tau_sd)
        cov = pm.Deterministic("cov", chol @ chol.T)
        kw = {}
        if glm == "linear":
            kw["sigma"] = pm.HalfNormal("sigma", sigma_sd)
        if glm == "logistic":
            kw["order"] = order
        SSNormalApprox("s", theta, cov, n, noise_cov, glm, observed=z, **kw)
    return model


def build_clean_model(glm, d, *, prior_sd=PRIOR_SD):
    """Non-private GLM on clean data ``X`` (N, d) and ``y`` (logistic: 0/1; Poisson: counts)."""
    import pymc as pm

    with pm.Model() as model:
        X = pm.Data("X", np.zeros((2, d)))
        y = pm.Data("y", np.zeros(2))
        theta = pm.Normal("theta", 0.0, prior_sd, shape=d)
        eta = X @ theta
        if glm == "logistic":
            pm.Bernoulli("obs", logit_p=eta, observed=y, shape=X.shape[0])
        elif glm == "poisson":
            pm.Poisson("obs", mu=pm.math.exp(eta), observed=y, shape=X.shape[0])
        else:
            raise ValueError(f"`glm` must be 'logistic' or 'poisson'; got {glm!r}")
    return model


#: NUTS options of every fit here (with :func:`~pymc_dpnoise.diagnostics.sample_compiled`).
#: Target acceptance 0.95: with the default 0.8 the Wine LDP fits (d = 4, Σ a parameter under
#: the scaled LKJ prior) had 4-7 divergences per fit at ε = 4, with 0.95 none, for 25% more
#: time.  A chain whose mean log density is more than 10 nats below the best chain's is dropped
#: (``info["chains_dropped"]``): a chain can settle in a minor mode of small feature scales
#: (seen in the Poisson example at ε = 1: θ₀ ≈ −4.7 against 2.4, 20 nats lower).
FIT_OPTIONS = dict(chains=2, cores=2, target_accept=0.95, drop_stuck_chains=10.0)


def _fit_clean(compiled_clean, X, y, glm, S, seed):
    d = X.shape[1]
    data = dict(X=X, y=y)
    if glm == "logistic":
        data = dict(X=np.hstack([X, np.zeros((len(X), D_PAD - d))]), y=(y > 0).astype(float))
    post, info = sample_compiled(
        compiled_clean, draws=S["draws"], tune=S["tune"], seed=seed, **FIT_OPTIONS, **data
    )
    return post[:, :d], info


def _fit_ss(compiled_ss, rel, S, seed):
    return sample_compiled(
        compiled_ss,
        draws=S["draws"],
        tune=S["tune"],
        seed=seed,
        **FIT_OPTIONS,
        z=rel.z,
        noise_cov=rel.noise_cov,
        n=np.float64(rel.n),
    )


# --------------------------------------------------------------------------------------------
# Experiments
# --------------------------------------------------------------------------------------------


def run_central(
    X,
    y,
    glm,
    epsilons,
    compiled_ss,
    compiled_clean,
    S,
    *,
    seed=0,
    lr=None,
    Ry=1.0,
    sgld=True,
    progress=None,
):
    """Private (SSNormalApprox), non-private and DP-SGLD posteriors of θ for each ε (Figs. 3, 4).

    Returns ``(draws, info)``: ``draws[(method, eps)]`` is an array (draws, d) with method
    ``"non-private"`` (eps = inf), ``"SSNormalApprox"``, ``"DP-SGLD"``; ``info`` a DataFrame with
    sampler diagnostics, noise scales and wall times.
    """
    rng = np.random.default_rng(seed)
    draws, rows = {}, []
    post, inf = _fit_clean(compiled_clean, X, y, glm, S, seed)
    draws[("non-private", math.inf)] = post
    rows.append(dict(method="non-private", epsilon=math.inf, **inf))
    for eps in epsilons:
        rel = release_sufficient_statistics(X, y, glm, eps, DELTA, rng, R=1.0, Ry=Ry)
        post, inf = _fit_ss(compiled_ss, rel, S, seed)
        draws[("SSNormalApprox", eps)] = post
        rows.append(dict(method="SSNormalApprox", epsilon=eps, noise_sd=rel.sigma, **inf))
        if progress:
            progress(f"{glm} eps={eps}: SSNormalApprox {inf['seconds']:.1f} s")
        if sgld:
            t0 = time.perf_counter()
            res = dp_sgld(
                X,
                y,
                glm,
                eps,
                DELTA,
                rng,
                iterations=S["sgld_iterations"],
                burn_in=S["sgld_burn_in"],
                step_size=2.0 * lr / len(y),
                clip=1.0,
                prior_sd=PRIOR_SD,
            )
            draws[("DP-SGLD", eps)] = res.samples
            rows.append(
                dict(
                    method="DP-SGLD",
                    epsilon=eps,
                    noise_sd=res.noise_multiplier,
                    divergences=0,
                    max_rhat=np.nan,
                    seconds=time.perf_counter() - t0,
                )
            )
    return draws, pd.DataFrame(rows)


def summary_table(draws, names):
    """Posterior mean, sd and 90% interval of every coefficient, per (method, ε)."""
    rows = []
    for (method, eps), post in draws.items():
        for j, nm in enumerate(names):
            p = post[:, j]
            lo, hi = np.quantile(p, [0.05, 0.95])
            rows.append(
                dict(coef=nm, method=method, epsilon=eps, mean=p.mean(), sd=p.std(), q05=lo, q95=hi)
            )
    return pd.DataFrame(rows)


def ks_table(draws, names, reference=("non-private", math.inf)):
    """Kolmogorov–Smirnov distance of each private marginal from the non-private one."""
    ref = draws[reference]
    rows = []
    for (method, eps), post in draws.items():
        if (method, eps) == reference:
            continue
        row = dict(method=method, epsilon=eps)
        for j, nm in enumerate(names):
            row[nm] = ks_distance(post[:, j], ref[:, j])
        rows.append(row)
    return pd.DataFrame(rows)


def normal_ks_same_mean(sd_a, sd_b):
    r"""KS distance between :math:`N(0, a^2)` and :math:`N(0, b^2)`: the part of a KS distance
    that comes from a difference in width alone.

    For :math:`a < b` the CDFs differ most at :math:`x^2 = 2\ln(b/a) / (a^{-2} - b^{-2})`, where the
    distance is :math:`\Phi(x/a) - \Phi(x/b)`.  Broadcasts.

    Examples
    --------
    >>> round(float(normal_ks_same_mean(1.0, 4.0)), 3)
    0.291
    >>> float(normal_ks_same_mean(2.0, 2.0))
    0.0
    """
    from scipy.stats import norm

    a, b = np.broadcast_arrays(np.asarray(sd_a, float), np.asarray(sd_b, float))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.sqrt(2.0 * np.log(hi / lo) / (lo**-2.0 - hi**-2.0))
        out = norm.cdf(x / lo) - norm.cdf(x / hi)
    return np.where(hi > lo, out, 0.0)


def run_fig5(compiled_ss, compiled_clean, S, *, seed=2021, progress=None):
    """GLM Fig. 5: KS distance between private and non-private marginals vs ε (synthetic)."""
    rows = []
    S = dict(S, draws=S["fig5_draws"], tune=S["fig5_draws"])
    for r in range(S["fig5_repeats"]):
        rng = np.random.default_rng([seed, r])
        X, y = synthetic_data(rng)
        ref, inf0 = _fit_clean(compiled_clean, X, y, "logistic", S, seed + r)
        for eps in S["fig5_eps"]:
            rel = release_sufficient_statistics(X, y, "logistic", eps, DELTA, rng)
            post, inf = _fit_ss(compiled_ss, rel, S, seed + r)
            row = dict(
                repeat=r,
                epsilon=eps,
                divergences=inf["divergences"],
                max_rhat=inf["max_rhat"],
                ref_max_rhat=inf0["max_rhat"],
            )
            for j in range(X.shape[1]):
                row[f"KS theta_{j}"] = ks_distance(post[:, j], ref[:, j])
            rows.append(row)
        if progress:
            progress(f"fig5 repeat {r + 1}/{S['fig5_repeats']} done")
    return pd.DataFrame(rows)


def _ldp_split(kind, rng, S):
    """One LDP train/test split: ``(Xtr, ytr, Xte, yte, glm, Ry, metric, ref_theta, y_mean)``."""
    if kind == "wine":
        Xtr, ytr, Xte, yte, y_mean = wine_data(rng, d=S["wine_d"])

        def metric(theta):
            return rmse(y_mean + Xte @ theta, yte)

        return Xtr, ytr, Xte, yte, "linear", 2.0, metric, least_squares(Xtr, ytr), y_mean
    if kind != "adult":
        raise ValueError(f"`kind` must be 'wine' or 'adult'; got {kind!r}")
    Xtr, ytr, Xte, yte = adult_data(rng, test_fraction=0.2, d=S["adult_d"])

    def metric(theta):
        return auc(Xte @ theta, yte)

    return Xtr, ytr, Xte, yte, "logistic", 1.0, metric, logistic_mle(Xtr, ytr), None


def _ldp_sgd_fit(split, eps, rng, gc, lr):
    Xtr, ytr, _, _, glm, _, metric, _, _ = split
    if glm == "linear":
        res = ldp_sgd(Xtr, ytr, eps, DELTA, rng, loss="squared", group_constant=gc, lr=lr)
    else:
        yb = (ytr > 0).astype(float)
        res = ldp_sgd(Xtr, yb, eps, DELTA, rng, loss="logistic", group_constant=gc, lr=lr)
    return metric(res["theta"]), res


def tune_ldp_sgd_glm(kind, eps, S, *, seed=7, grid=None):
    """LDP-SGD's (group-size constant, step size) with the best mean test metric on pilot splits.

    The grid is :data:`pymc_dpnoise.experiments.ldp_regression.SGD_GRID` (as in the LDP
    regression notebook); the pilot splits (``S["ldp_tune_repeats"]`` of them) use other seeds
    than the evaluation splits.  The tuning looks at test data and spends no privacy budget, so it
    favours LDP-SGD.  Returns ``(group_constant, lr)``.
    """
    grid = SGD_GRID["squared" if kind == "wine" else "logistic"] if grid is None else grid
    pilots = [
        _ldp_split(kind, np.random.default_rng([seed, 1000 + r]), S)
        for r in range(S.get("ldp_tune_repeats", 1))
    ]
    best, best_val = None, None
    for k, (gc, lr) in enumerate(grid):
        rng = np.random.default_rng([seed, 2000, k, round(1000 * eps)])
        val = float(np.mean([_ldp_sgd_fit(sp, eps, rng, gc, lr)[0] for sp in pilots]))
        better = best_val is None or (val < best_val if kind == "wine" else val > best_val)
        if better:
            best, best_val = (float(gc), float(lr)), val
    return best


def run_ldp(kind, compiled_ss, S, *, seed=7, progress=None):
    """LDP Figs. 4 (``kind="wine"``, test RMSE) and 5 (``"adult"``, test AUC) vs ε.

    Every training record releases its own statistics with Gaussian noise (``local=True``);
    the noise-aware posterior mean predicts the test set.  Baselines: LDP-SGD (one noisy gradient
    per user, :func:`pymc_dpnoise.baselines.ldp_sgd`, hyper-parameters per ε by
    :func:`tune_ldp_sgd_glm`), the non-private least-squares / logistic MLE fit on the same scaled,
    clipped training data and, for Wine, the training mean of the quality (θ = 0).
    Adult uses ``S["ldp_adult_repeats"]`` repeats and ``S["ldp_adult_draws"]`` draws and tuning
    steps per chain (its fits are the slowest: the prior-dominated posterior needs deep trees).
    """
    rows = []
    if kind == "adult":
        repeats = S.get("ldp_adult_repeats", S["ldp_repeats"])
        n_draws = S.get("ldp_adult_draws", S["draws"])
        S = dict(S, draws=n_draws, tune=n_draws)
    else:
        repeats = S["ldp_repeats"]
    tuned = {eps: tune_ldp_sgd_glm(kind, eps, S, seed=seed) for eps in S["ldp_eps"]}
    for r in range(repeats):
        rng = np.random.default_rng([seed, r])
        split = _ldp_split(kind, rng, S)
        Xtr, ytr, _, _, glm, Ry, metric, ref_theta, _ = split
        base = dict(repeat=r, epsilon=math.inf)
        rows.append(base | dict(method="non-private", value=metric(ref_theta)))
        if kind == "wine":
            rows.append(base | dict(method="training mean", value=metric(np.zeros(Xtr.shape[1]))))
        for eps in S["ldp_eps"]:
            rel = release_sufficient_statistics(Xtr, ytr, glm, eps, DELTA, rng, Ry=Ry, local=True)
            post, inf = _fit_ss(compiled_ss, rel, S, seed + r)
            rows.append(
                dict(
                    repeat=r,
                    epsilon=eps,
                    method="SSNormalApprox (LDP)",
                    value=metric(post.mean(0)),
                    divergences=inf["divergences"],
                    max_rhat=inf["max_rhat"],
                    seconds=inf["seconds"],
                    chains_dropped=inf["chains_dropped"],
                )
            )
            if progress:
                progress(f"{kind} LDP repeat {r + 1} eps={eps}: {inf['seconds']:.0f} s")
            gc, lr = tuned[eps]
            val, res = _ldp_sgd_fit(split, eps, rng, gc, lr)
            rows.append(
                dict(
                    repeat=r,
                    epsilon=eps,
                    method="LDP-SGD",
                    value=val,
                    group_constant=gc,
                    lr=lr,
                    steps=res["steps"],
                )
            )
        if progress:
            progress(f"{kind} LDP repeat {r + 1}/{repeats} done")
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Simulation-based calibration of SSNormalApprox
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _SufficientSBC(SBCProblem):
    """Shared part: known Σ, θ ~ N(0, theta_sd² I), release of the summed statistics."""

    d: int = 2
    epsilon: float = 1.0
    delta: float = 1e-5
    R: float = 1.0
    Ry: float = 1.0
    local: bool = False
    x_scale: float = 0.2
    x_corr: float = 0.3
    theta_sd: float = 2.0
    naive_jitter: float = 1e-6

    glm = ""  # set by subclasses (a class attribute, not a field)

    @property
    def cov(self) -> np.ndarray:
        """Known covariance of the features: x_scale² ((1 - ρ) I + ρ 11ᵀ)."""
        rho = self.x_corr
        return self.x_scale**2 * ((1.0 - rho) * np.eye(self.d) + rho * np.ones((self.d, self.d)))

    @property
    def m(self) -> int:
        return stat_dim(self.glm, self.d)

    @property
    def noise_sigma(self) -> float:
        """Gaussian noise scale of one release (on the sum, or on each record if ``local``)."""
        sens = ss_sensitivity(self.glm, self.R, self.Ry)
        return float(analytic_gaussian_sigma(self.epsilon, self.delta, sens))

    @property
    def noise_cov(self) -> np.ndarray:
        """Covariance of the total noise in z: σ² I (central) or n σ² I (local)."""
        scale = self.n if self.local else 1
        return scale * self.noise_sigma**2 * np.eye(self.m)

    @property
    def param_names(self):
        return tuple(f"theta[{j}]" for j in range(self.d))

    def prior_sd(self) -> dict:
        return {f"theta[{j}]": self.theta_sd for j in range(self.d)}

    # -- simulation --------------------------------------------------------------------------

    def _features(self, rng):
        chol = np.linalg.cholesky(self.cov)
        return rng.standard_normal((self.n, self.d)) @ chol.T

    def _draw(self, rng):
        """(truth, X, y): parameters from the prior, then clean records."""
        raise NotImplementedError

    def simulate(self, rng):
        truth, x, y = self._draw(rng)
        rel = release_sufficient_statistics(
            x, y, self.glm, self.epsilon, self.delta, rng, R=self.R, Ry=self.Ry, local=self.local
        )
        return truth, rel.z

    # -- model -------------------------------------------------------------------------------

    def _likelihood_kwargs(self, pm) -> dict:
        return {}

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from ..distributions.sufficient import SSNormalApprox

        noise = self.noise_cov if noise_aware else self.naive_jitter * np.eye(self.m)
        with pm.Model() as model:
            z = pm.Data("reports", np.asarray(reports, dtype=float))
            theta = pm.Normal("theta", 0.0, self.theta_sd, shape=self.d)
            SSNormalApprox(
                "z",
                theta,
                self.cov,
                self.n,
                noise,
                self.glm,
                observed=z,
                **self._likelihood_kwargs(pm),
            )
        return model

    def extract(self, posterior, truth):
        post = np.asarray(posterior["theta"].values, dtype=float)
        return [(post[..., j], float(truth["theta"][j])) for j in range(self.d)]


@dataclasses.dataclass(frozen=True)
class LogisticSSSBC(_SufficientSBC):
    """Logistic regression, labels ±1, statistics [y x, t2(x)] (GLM paper Sec. 3.2)."""

    order: int | str = "quadrature"

    glm = "logistic"

    def _draw(self, rng):
        theta = rng.normal(0.0, self.theta_sd, self.d)
        x = self._features(rng)
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        y = np.where(rng.random(self.n) < p, 1.0, -1.0)
        return {"theta": theta}, x, y

    def _likelihood_kwargs(self, pm):
        return {"order": self.order}


@dataclasses.dataclass(frozen=True)
class PoissonSSSBC(_SufficientSBC):
    """Poisson regression with log link, statistics [x, t2(x), y x, y t2(x)]."""

    Ry: float = 10.0
    theta_sd: float = 1.0

    glm = "poisson"

    def _draw(self, rng):
        theta = rng.normal(0.0, self.theta_sd, self.d)
        x = self._features(rng)
        y = rng.poisson(np.exp(x @ theta)).astype(float)
        return {"theta": theta}, x, y


@dataclasses.dataclass(frozen=True)
class LinearSSSBC(_SufficientSBC):
    """Linear regression, statistics [t2(x), y x, y²] (LDP paper Sec. 3.1.1); σ has a prior."""

    Ry: float = 4.0
    theta_sd: float = 1.0
    sigma_sd: float = 0.5

    glm = "linear"

    @property
    def param_names(self):
        return (*super().param_names, "sigma")

    def prior_sd(self):
        return super().prior_sd() | {"sigma": self.sigma_sd * math.sqrt(1.0 - 2.0 / math.pi)}

    def _draw(self, rng):
        theta = rng.normal(0.0, self.theta_sd, self.d)
        sigma = abs(rng.normal(0.0, self.sigma_sd))
        x = self._features(rng)
        y = x @ theta + rng.normal(0.0, sigma, self.n)
        return {"theta": theta, "sigma": float(sigma)}, x, y

    def _likelihood_kwargs(self, pm):
        return {"sigma": pm.HalfNormal("sigma", self.sigma_sd)}

    def extract(self, posterior, truth):
        out = super().extract(posterior, truth)
        return [*out, (np.asarray(posterior["sigma"].values, dtype=float), truth["sigma"])]


KINDS = {"logistic": LogisticSSSBC, "poisson": PoissonSSSBC, "linear": LinearSSSBC}


# --------------------------------------------------------------------------------------------
# Side diagnostics: how often the release clips, how much the posterior contracts
# --------------------------------------------------------------------------------------------


def clip_rates(problem: _SufficientSBC, n_sims: int = 20, seed: int = 0) -> dict:
    """Fraction of rows with ‖x‖ > R and of responses outside the clipping range.

    Simulated exactly as in :meth:`simulate` (same prior, same features), before the release.
    """
    rng = np.random.default_rng(seed)
    rows = ys = total = 0
    for _ in range(n_sims):
        _, x, y = problem._draw(rng)
        rows += int(np.sum(np.linalg.norm(x, axis=1) > problem.R))
        if problem.glm == "poisson":
            ys += int(np.sum(y > problem.Ry))
        elif problem.glm == "linear":
            ys += int(np.sum(np.abs(y) > problem.Ry))
        total += len(y)
    return {"x_clipped": rows / total, "y_clipped": ys / total}


def posterior_contraction(
    problem: _SufficientSBC, n_fits: int = 4, seed: int = 1, draws: int = 300, tune: int = 300
) -> dict:
    """Mean over ``n_fits`` prior replicates of 1 - posterior var / prior var, per parameter.

    0: the data are ignored (posterior = prior); 1: the posterior is a point.
    """
    import warnings

    from ..diagnostics import fit_nutpie as _fit_nutpie

    nutpie = require("nutpie", extra="notebooks", feature="posterior_contraction")

    rng = np.random.default_rng(seed)
    sd0 = problem.prior_sd()
    out = {k: [] for k in problem.param_names}
    compiled = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n_fits):
            truth, z = problem.simulate(rng)
            if compiled is None:
                compiled = nutpie.compile_pymc_model(problem.build_model(z))
            tr = _fit_nutpie(compiled, z, draws, tune, 2, int(rng.integers(2**31 - 1)))
            for name, (post, _) in zip(
                problem.param_names, problem.extract(tr.posterior, truth), strict=True
            ):
                out[name].append(1.0 - np.var(post) / sd0[name] ** 2)
    return {k: float(np.mean(v)) for k, v in out.items()}


# --------------------------------------------------------------------------------------------
# Grid and command line
# --------------------------------------------------------------------------------------------

#: SBC settings per mode
SBC_SETTINGS = {
    "full": dict(
        n=10_000,
        epsilons=(0.1, 1.0),
        replicates=400,
        draws=500,
        tune=500,
        local_n=1_000_000,
        local_epsilons=(1.0,),
    ),
    "fast": dict(
        n=10_000,
        epsilons=(1.0,),
        replicates=4,
        draws=150,
        tune=150,
        local_n=1_000_000,
        local_epsilons=(1.0,),
    ),
}


def run_grid(
    kind: str,
    mode: str = "fast",
    *,
    n_jobs=None,
    seed=2026,
    noise_aware=True,
    local=False,
    replicates=None,
    d=2,
    contraction_fits=None,
):
    """SBC over the ε grid of ``SBC_SETTINGS[mode]`` for ``kind`` in {"logistic", "poisson", "linear"}.

    Returns one coverage table (rows: parameter × level × ε) with the design columns.
    """
    cfg = SBC_SETTINGS[mode]
    cls = KINDS[kind]
    n = cfg["local_n"] if local else cfg["n"]
    epsilons = cfg["local_epsilons"] if local else cfg["epsilons"]
    reps = replicates or cfg["replicates"]
    if contraction_fits is None:
        contraction_fits = 4 if mode == "full" else 1
    tables = []
    for eps in epsilons:
        problem = cls(n=n, d=d, epsilon=eps, local=local)
        res, seconds = run_sbc(
            problem, reps, cfg, noise_aware=noise_aware, seed=seed, n_jobs=n_jobs
        )
        noise_sd = float(np.sqrt(problem.noise_cov[0, 0]))
        tab = result_coverage(res, n_records=n, noise_sd_total=noise_sd)
        tab.insert(0, "epsilon", eps)
        tab.insert(0, "release", "local" if local else "central")
        tab.insert(0, "model", kind + (" noise-aware" if noise_aware else " naive"))
        rates = clip_rates(problem, seed=seed)
        tab["x_clipped"] = rates["x_clipped"]
        tab["y_clipped"] = rates["y_clipped"]
        if noise_aware and contraction_fits:
            con = posterior_contraction(problem, contraction_fits, seed=seed + 1)
            tab["contraction"] = [con[p] for p in tab["param"]]
        tab["seconds"] = seconds
        tables.append(tab)
        print(
            f"[{time.strftime('%H:%M:%S')}] {kind} {'aware' if noise_aware else 'naive'} "
            f"{'local' if local else 'central'} eps={eps}: {seconds:.0f} s",
            flush=True,
        )
    return pd.concat(tables, ignore_index=True)


def sbc_summary(tables: list[pd.DataFrame], level: float = 0.9) -> pd.DataFrame:
    """One row per (model, release, ε, parameter): coverage of the ``level`` interval."""
    return coverage_summary(tables, level, by=("model", "release"))


def main(argv=None):
    ap = experiment_parser(
        "Simulation-based calibration of SSNormalApprox (noisy sufficient statistics).",
        SBC_SETTINGS,
        "results/sbc_sufficient",
    )
    ap.add_argument("--kinds", nargs="+", default=["logistic", "poisson"], choices=sorted(KINDS))
    ap.add_argument("--replicates", type=int, default=None, help="override the mode's count")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    ap.add_argument(
        "--local",
        nargs="*",
        default=None,
        metavar="KIND",
        help="also run the local-DP (per-record noise) setting for these kinds",
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [(k, False) for k in args.kinds] + [(k, True) for k in (args.local or [])]
    for kind, local in runs:
        for aware in (True,) if args.no_naive else (True, False):
            tab = run_grid(
                kind,
                args.mode,
                n_jobs=args.jobs,
                noise_aware=aware,
                local=local,
                replicates=args.replicates,
            )
            name = f"{kind}_{'local_' if local else ''}{'aware' if aware else 'naive'}_{args.mode}"
            write_table(tab, out, f"{name}_coverage", newline=True)
            print(tab.to_string(index=False), flush=True)
            # every coverage table of this mode in ``out`` (also those of earlier invocations)
            files = sorted(out.glob(f"*_{args.mode}_coverage.csv"))
            summary = sbc_summary([pd.read_csv(f) for f in files])
            write_table(summary, out, f"summary90_{args.mode}", newline=True)


if __name__ == "__main__":
    main()
