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
(:func:`~pymc_dpnoise.priors.scaled_lkj_cov`, which samples τ and Ω separately), as in
:mod:`pymc_dpnoise.experiments_regression`.

The preprocessing (standardisation, PCA, the rescaling constant, centring) is computed from the
clean training data and treated as public, as in the paper; it is not itself private.
"""

from __future__ import annotations

import itertools
from functools import cache
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..baselines.regression import ldp_sgd
from ..diagnostics import sample_compiled
from ..mechanisms.regression import clip_response, clip_rows, perturb_linreg, perturb_logreg

__all__ = [
    "ADULT_CATEGORICAL",
    "ADULT_NUMERIC",
    "FIG5_APPROXIMATION",
    "HIER_BUDGETS",
    "SETTINGS",
    "SGD_GRID",
    "Split",
    "adult_split",
    "auc",
    "build_linreg_group_model",
    "build_linreg_model",
    "build_logreg_model",
    "fit_compiled",
    "least_squares",
    "logistic_fit",
    "pca_features",
    "rmse",
    "run_fig4",
    "run_fig5",
    "run_hierarchical",
    "summarise",
    "tune_ldp_sgd",
    "wine_group_split",
    "wine_split",
]

#: prior scales (LDP paper, Supplement 8): θ ~ N(0, THETA_SD²), τ ~ HalfNormal(TAU_SD)
THETA_SD = float(np.sqrt(5.0))
TAU_SD = 2.5
#: σ (linear regression noise sd) ~ HalfNormal(SIGMA_SD); the paper does not state it
SIGMA_SD = 2.0

#: LDP-SGD hyper-parameters tried: group size constant (G = constant · d log d / ε²) × step size
SGD_GRID = {
    "squared": tuple(itertools.product((1.0, 10.0, 100.0), (0.1, 0.3, 1.0))),
    "logistic": tuple(itertools.product((1.0, 10.0, 100.0), (0.3, 1.0, 3.0))),
}

#: Adult features: numeric columns (capital gain/loss as log1p) and one-hot categorical ones
ADULT_NUMERIC = ("age", "education_num", "hours_per_week", "capital_gain", "capital_loss")
ADULT_CATEGORICAL = ("workclass", "marital_status", "occupation", "relationship", "race", "sex")

#: personalised budgets of the hierarchical example: (group, ε)
HIER_BUDGETS = (("red", 8.0), ("white", 32.0))

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
            epsilons=(0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0),
            repeats=20,
            tune_repeats=5,
            draws=500,
            tune=500,
        ),
        fig5=dict(
            d=3,
            n_train=10_000,
            epsilons=(0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0),
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
# Metrics and non-private fits
# --------------------------------------------------------------------------------------------


def rmse(pred, y) -> float:
    """Root mean squared error ``sqrt(mean((pred - y)²))``."""
    pred, y = np.asarray(pred, dtype=float), np.asarray(y, dtype=float)
    return float(np.sqrt(np.mean((pred - y) ** 2)))


def auc(scores, labels) -> float:
    """Area under the ROC curve by the rank-sum (Mann-Whitney) formula; ties count 1/2.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Higher means "more likely positive".
    labels : array_like, shape (n,)
        0/1 (or boolean) labels; both classes must occur.

    Returns
    -------
    float
        P(score of a random positive > score of a random negative) + ½ P(tie).

    Examples
    --------
    >>> auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    0.75
    >>> auc([1.0, 1.0, 1.0], [0, 1, 1])
    0.5
    """
    s = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(labels).ravel().astype(bool)
    if s.shape != y.shape:
        raise ValueError(f"`scores` and `labels` differ in length: {s.size} vs {y.size}")
    n1 = int(y.sum())
    n0 = y.size - n1
    if n1 == 0 or n0 == 0:
        raise ValueError("AUC needs both classes among the labels")
    order = np.argsort(s, kind="mergesort")
    ss = s[order]
    # average rank (1-based) of each run of tied scores
    starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])
    ends = np.r_[starts[1:], ss.size]
    avg = (starts + ends + 1) / 2.0
    ranks = np.empty(s.size)
    ranks[order] = np.repeat(avg, ends - starts)
    return float((ranks[y].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def least_squares(X, y) -> np.ndarray:
    """Least-squares coefficients of ``y ≈ X θ`` (no intercept: the data are centred)."""
    theta, *_ = np.linalg.lstsq(np.asarray(X, float), np.asarray(y, float), rcond=None)
    return theta


def logistic_fit(X, y, *, intercept=True, ridge=1e-6, iters=50) -> np.ndarray:
    """Maximum-likelihood logistic regression by Newton's method (tiny ridge for stability).

    Returns
    -------
    numpy.ndarray
        ``(d,)`` coefficients, followed by the intercept if ``intercept``.
    """
    X = np.asarray(X, float)
    y = np.asarray(y, float)
    A = np.column_stack([X, np.ones(len(y))]) if intercept else X
    w = np.zeros(A.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(A @ w)))
        H = (A * (p * (1.0 - p))[:, None]).T @ A + ridge * np.eye(A.shape[1])
        step = np.linalg.solve(H, A.T @ (y - p) - ridge * w)
        w = w + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


class Split(NamedTuple):
    """One train/test split after preprocessing (features already clipped to norm R)."""

    X_train: np.ndarray
    y_train: np.ndarray  # linear: centred, not clipped (the mechanism clips); logistic: 0/1
    X_test: np.ndarray
    y_test: np.ndarray  # linear: centred with the training mean, never clipped
    scale: float  # the PCA scores were divided by this before clipping
    groups_train: np.ndarray | None = None
    groups_test: np.ndarray | None = None


def _pca_scores(F_train, F_test, d):
    """Standardised data projected on the first ``d`` principal axes of ``F_train``."""
    F_train = np.asarray(F_train, float)
    F_test = np.asarray(F_test, float)
    mu = F_train.mean(0)
    sd = F_train.std(0)
    sd[sd == 0] = 1.0
    A, B = (F_train - mu) / sd, (F_test - mu) / sd
    _, _, vt = np.linalg.svd(A, full_matrices=False)
    P = vt[:d].T
    # fix the sign of each axis (largest loading positive) so repeats are comparable
    P = P * np.sign(P[np.argmax(np.abs(P), axis=0), np.arange(d)])
    Za, Zb = A @ P, B @ P
    return Za, Zb


def pca_features(F_train, F_test, d, *, R=1.0, norm_quantile=0.95):
    """Standardise, project on the first ``d`` principal axes, rescale, clip to norm ``R``.

    Means, standard deviations and the principal axes come from ``F_train``.  The scores are
    divided by ``scale`` = the ``norm_quantile`` quantile of the training rows' L2 norms and
    multiplied by ``R``, so that a fraction ``1 - norm_quantile`` of the training rows is clipped.

    Returns
    -------
    (X_train, X_test, scale)
    """
    Za, Zb = _pca_scores(F_train, F_test, d)
    scale = float(np.quantile(np.linalg.norm(Za, axis=1), norm_quantile)) / float(R)
    return clip_rows(Za / scale, R), clip_rows(Zb / scale, R), scale


@cache
def _wine():
    from ..datasets import load_wine

    df = load_wine("both")
    F = df.drop(columns=["quality", "colour"]).to_numpy(float)
    return F, df["quality"].to_numpy(float), df["colour"].to_numpy()


def wine_split(rng, d=3, *, test_frac=0.2, R=1.0, norm_quantile=0.95) -> Split:
    """Wine quality, both colours: random 80/20 split, PCA features, centred quality.

    Examples
    --------
    >>> import numpy as np
    >>> s = wine_split(np.random.default_rng(0), d=3)
    >>> s.X_train.shape, s.X_test.shape
    ((5198, 3), (1299, 3))
    >>> bool(np.linalg.norm(s.X_train, axis=1).max() <= 1.0 + 1e-12)
    True
    """
    F, y, _ = _wine()
    perm = np.random.default_rng(rng).permutation(len(y))
    n_test = round(test_frac * len(y))
    te, tr = perm[:n_test], perm[n_test:]
    Xtr, Xte, scale = pca_features(F[tr], F[te], d, R=R, norm_quantile=norm_quantile)
    m = y[tr].mean()
    return Split(Xtr, y[tr] - m, Xte, y[te] - m, scale)


def wine_group_split(rng, d=3, *, test_frac=0.2, R=1.0, norm_quantile=0.95) -> Split:
    """Wine split stratified by colour; common PCA, features and quality centred per colour.

    ``groups_train`` / ``groups_test`` hold 0 for red, 1 for white.  The model assumes
    x ~ N(0, Σ_g) within each group, hence the per-group centring (applied before clipping).
    """
    F, y, colour = _wine()
    rng = np.random.default_rng(rng)
    g = (colour == "white").astype(int)
    tr, te = [], []
    for k in (0, 1):
        idx = rng.permutation(np.flatnonzero(g == k))
        n_test = round(test_frac * len(idx))
        te.append(idx[:n_test])
        tr.append(idx[n_test:])
    tr, te = np.concatenate(tr), np.concatenate(te)
    Xtr, Xte = _pca_scores(F[tr], F[te], d)
    ytr, yte = y[tr].copy(), y[te].copy()
    for k in (0, 1):
        a, b = g[tr] == k, g[te] == k
        mx, my = Xtr[a].mean(0), ytr[a].mean()
        Xtr[a] -= mx
        Xte[b] -= mx
        ytr[a] -= my
        yte[b] -= my
    scale = float(np.quantile(np.linalg.norm(Xtr, axis=1), norm_quantile)) / float(R)
    Xtr, Xte = clip_rows(Xtr / scale, R), clip_rows(Xte / scale, R)
    return Split(Xtr, ytr, Xte, yte, scale, g[tr], g[te])


@cache
def _adult():
    from ..datasets import load_adult

    df = load_adult("both")
    num = df[list(ADULT_NUMERIC)].astype(float).copy()
    for c in ("capital_gain", "capital_loss"):
        num[c] = np.log1p(num[c])
    cat = pd.get_dummies(df[list(ADULT_CATEGORICAL)].fillna("missing"), dtype=float)
    F = pd.concat([num, cat], axis=1).to_numpy(float)
    return F, df["income_gt_50k"].to_numpy(), (df["split"] == "train").to_numpy()


def adult_split(rng, d=3, *, n_train=10_000, R=1.0, norm_quantile=0.95) -> Split:
    """Adult: ``n_train`` random records of the training file; the test file (16,281) to test.

    Features: the numeric columns of :data:`ADULT_NUMERIC` (capital gain and loss as log1p)
    and the one-hot columns of :data:`ADULT_CATEGORICAL` (missing as its own level), then
    :func:`pca_features` fitted on the ``n_train`` records.  Labels: income > 50K.
    """
    F, y, is_train = _adult()
    tr_all = np.flatnonzero(is_train)
    te = np.flatnonzero(~is_train)
    tr = np.random.default_rng(rng).choice(tr_all, size=n_train, replace=False)
    Xtr, Xte, scale = pca_features(F[tr], F[te], d, R=R, norm_quantile=norm_quantile)
    return Split(Xtr, y[tr], Xte, y[te], scale)


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def _lkj_cov(name, d, tau_sd):
    from ..priors import scaled_lkj_cov

    chol, _, _ = scaled_lkj_cov(name, d, eta=2.0, tau_sigma=tau_sd)
    return chol @ chol.T


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
        reports = pm.Data("reports", np.zeros((n, d + 1)))
        sigma_x = pm.Data("sigma_x", 1.0)
        sigma_y = pm.Data("sigma_y", 1.0)
        theta = pm.Normal("theta", 0.0, theta_sd, shape=d)
        cov = _lkj_cov("chol", d, tau_sd)
        sigma = pm.HalfNormal("sigma", sigma_sd)
        PerturbedLinReg(
            "z",
            theta=theta,
            sigma=sigma,
            cov=cov,
            sigma_x=sigma_x,
            sigma_y=sigma_y,
            observed=reports,
        )
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
        reports = pm.Data("reports", np.zeros((n, d + 1)))
        sigma_x = pm.Data("sigma_x", 1.0)
        epsilon_y = pm.Data("epsilon_y", 1.0)
        theta = pm.Normal("theta", 0.0, theta_sd, shape=d)
        cov = _lkj_cov("chol", d, tau_sd)
        PerturbedLogReg(
            "z",
            theta=theta,
            cov=cov,
            sigma_x=sigma_x,
            epsilon_y=epsilon_y,
            approximation=approximation,
            degree=degree,
            interval=interval,
            observed=reports,
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


def fit_compiled(compiled, *, draws=500, tune=500, chains=2, seed=0, target_accept=0.8, **data):
    """Sample a compiled nutpie model with new ``data``; returns ``(theta draws, info)``.

    ``theta draws`` has shape ``(chains * draws, *theta.shape)``; ``info`` holds the number of
    divergences, the worst split-R̂ over the components of θ and the wall time.
    """
    return sample_compiled(
        compiled,
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
        target_accept=target_accept,
        **data,
    )


def _rng(seed, *tags):
    return np.random.default_rng(np.random.SeedSequence([int(seed), *map(int, tags)]))


def _fit_info(info, draws):
    return dict(
        divergences=info["divergences"],
        max_rhat=info["max_rhat"],
        seconds=info["seconds"],
        theta_sd=float(np.mean(draws.std(0))),
    )


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
    splits = [wine_split(_rng(seed, 4, 0, r), d, R=R) for r in range(repeats)]
    pilots = [wine_split(_rng(seed, 4, 1, r), d, R=R) for r in range(tune_repeats)]
    rows = []
    for r, s in enumerate(splits):
        for name, th in (("non-private LS", least_squares(s.X_train, s.y_train)), ("zero", None)):
            pred = np.zeros(len(s.y_test)) if th is None else s.X_test @ th
            for eps in epsilons:
                rows.append(dict(epsilon=eps, repeat=r, method=name, rmse=rmse(pred, s.y_test)))
    for i, eps in enumerate(epsilons):
        (gc, lr), _ = tune_ldp_sgd(
            pilots, eps, delta, _rng(seed, 4, 2, i), loss="squared", metric="rmse", y_clip=R_y
        )
        for r, s in enumerate(splits):
            rng = _rng(seed, 4, 3, i, r)
            rel = perturb_linreg(s.X_train, s.y_train, eps, delta, rng, R=R, R_y=R_y, c=c)
            post, info = fit_compiled(
                compiled,
                draws=draws,
                tune=tune,
                seed=int(rng.integers(2**31)),
                reports=rel.reports,
                sigma_x=np.float64(rel.sigma_x),
                sigma_y=np.float64(rel.sigma_y),
            )
            base = dict(epsilon=eps, repeat=r)
            rows.append(
                base
                | dict(method="noise-aware", rmse=rmse(s.X_test @ post.mean(0), s.y_test))
                | _fit_info(info, post)
            )
            naive = least_squares(rel.reports[:, :d], rel.reports[:, d])
            rows.append(base | dict(method="naive LS", rmse=rmse(s.X_test @ naive, s.y_test)))
            fit = ldp_sgd(
                s.X_train,
                clip_response(s.y_train, R_y),
                eps,
                delta,
                rng,
                loss="squared",
                group_constant=gc,
                lr=lr,
            )
            rows.append(
                base
                | dict(method="LDP-SGD", rmse=rmse(s.X_test @ fit["theta"], s.y_test))
                | dict(group_constant=gc, lr=lr, steps=fit["steps"])
            )
            if progress is not None:
                progress(f"fig4 ε={eps:g} repeat {r}: {info['seconds']:.1f} s")
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
    splits = [adult_split(_rng(seed, 5, 0, r), d, n_train=n_train, R=R) for r in range(repeats)]
    pilots = [
        adult_split(_rng(seed, 5, 1, r), d, n_train=n_train, R=R) for r in range(tune_repeats)
    ]
    rows = []
    for r, s in enumerate(splits):
        w = logistic_fit(s.X_train, s.y_train)
        a = auc(s.X_test @ w[:d], s.y_test)
        rows += [
            dict(epsilon=eps, repeat=r, method="non-private logistic", auc=a) for eps in epsilons
        ]
    for i, eps in enumerate(epsilons):
        (gc, lr), _ = tune_ldp_sgd(
            pilots, eps, delta, _rng(seed, 5, 2, i), loss="logistic", metric="auc"
        )
        for r, s in enumerate(splits):
            rng = _rng(seed, 5, 3, i, r)
            rel = perturb_logreg(s.X_train, s.y_train, eps, delta, rng, R=R, c=c)
            post, info = fit_compiled(
                compiled,
                draws=draws,
                tune=tune,
                seed=int(rng.integers(2**31)),
                reports=rel.reports,
                sigma_x=np.float64(rel.sigma_x),
                epsilon_y=np.float64(rel.epsilon_y),
            )
            base = dict(epsilon=eps, repeat=r)
            rows.append(
                base
                | dict(method="noise-aware", auc=auc(s.X_test @ post.mean(0), s.y_test))
                | _fit_info(info, post)
            )
            wn = logistic_fit(rel.reports[:, :d], rel.reports[:, d])
            rows.append(base | dict(method="naive logistic", auc=auc(s.X_test @ wn[:d], s.y_test)))
            fit = ldp_sgd(
                s.X_train, s.y_train, eps, delta, rng, loss="logistic", group_constant=gc, lr=lr
            )
            rows.append(
                base
                | dict(method="LDP-SGD", auc=auc(s.X_test @ fit["theta"], s.y_test))
                | dict(group_constant=gc, lr=lr, steps=fit["steps"])
            )
            if progress is not None:
                progress(f"fig5 ε={eps:g} repeat {r}: {info['seconds']:.1f} s")
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
        s = wine_group_split(_rng(seed, 6, 0, r), d, R=R)
        rng = _rng(seed, 6, 1, r)
        data, sx, sy = {}, [], []
        for g in range(len(budgets)):
            a = s.groups_train == g
            rel = perturb_linreg(s.X_train[a], s.y_train[a], eps[g], delta, rng, R=R, R_y=R_y, c=c)
            data[f"reports_{g}"] = rel.reports
            sx.append(rel.sigma_x)
            sy.append(rel.sigma_y)
        for label, flag in (("partial pooling", 1.0), ("independent", 0.0)):
            post, info = fit_compiled(
                compiled,
                draws=draws,
                tune=tune,
                seed=int(rng.integers(2**31)),
                target_accept=target_accept,
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
