r"""Experiments of the GLM paper (Figs. 3–5) and the LDP paper's sufficient-statistics models.

Used by ``notebooks/glm_sufficient_statistics.ipynb``.  Everything a figure needs is a function
here, so that the notebook only calls, tabulates and plots.

Data preparation (all data sets)
--------------------------------
Features are standardised, divided by :math:`2\sqrt d` (a typical row then has norm ≈ 1/2) and
rows with norm above :math:`R = 1` are scaled back to norm 1 (:func:`scale_features`).  The
standardisation uses the data's own means and standard deviations, as the papers' pre-processing
does; it is not part of the privacy accounting.  Logistic labels are ±1.

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
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from ..baselines.sufficient import dp_sgld
from ..datasets import load_adult, load_pima, load_wine
from ..diagnostics import sample_compiled
from ..experiments_regression import lkj_corr_draw
from ..math.sufficient import stat_dim
from ..mechanisms.sufficient import clip_rows, release_sufficient_statistics

__all__ = [
    "ADULT_FEATURES",
    "D_PAD",
    "PIMA_FEATURES",
    "POISSON_FEATURES",
    "SETTINGS",
    "SYNTH_THETA",
    "adult_data",
    "auc",
    "build_clean_model",
    "build_ss_model",
    "fit",
    "ks_table",
    "normal_ks_same_mean",
    "pima_data",
    "pima_poisson_data",
    "run_central",
    "run_fig5",
    "run_ldp",
    "scale_features",
    "summary_table",
    "synthetic_cov",
    "synthetic_data",
    "tune_ldp_sgd_glm",
    "wine_data",
]

PIMA_FEATURES = ("age", "pregnancies", "diabetes_pedigree", "insulin")
ADULT_FEATURES = (
    "age",
    "self_employed",
    "education_num",
    "married",
    "exec_or_prof",
    "own_child",
    "male",
)
POISSON_FEATURES = ("age", "bmi", "glucose")
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


def scale_features(X, ref=None, R=1.0):
    r"""Standardise with ``ref``'s (default ``X``'s) moments, divide by :math:`2\sqrt d`, clip to ``R``.

    Returns the scaled array.  With ``ref`` a training set, test rows are transformed the same way.
    """
    X = np.asarray(X, dtype=float)
    ref = X if ref is None else np.asarray(ref, dtype=float)
    mu, sd = ref.mean(0), ref.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    d = X.shape[1]
    return clip_rows((X - mu) / sd / (2.0 * math.sqrt(d)), R)


def pima_data():
    """Pima diabetes (all 768 rows): the 4 features of GLM Fig. 3, labels ±1."""
    df = load_pima()
    X = scale_features(df[list(PIMA_FEATURES)].to_numpy(float))
    return X, 2.0 * df["outcome"].to_numpy(float) - 1.0


def _adult_frame():
    df = load_adult("both")
    wc = df["workclass"].fillna("")
    occ = df["occupation"].fillna("")
    return pd.DataFrame(
        {
            "age": df["age"].astype(float),
            "self_employed": wc.str.startswith("Self-emp").astype(float),
            "education_num": df["education_num"].astype(float),
            "married": df["marital_status"].isin(["Married-civ-spouse", "Married-AF-spouse"]),
            "exec_or_prof": occ.isin(["Exec-managerial", "Prof-specialty"]).astype(float),
            "own_child": (df["relationship"] == "Own-child").astype(float),
            "male": (df["sex"] == "Male").astype(float),
        }
    ).astype(float), 2.0 * df["income_gt_50k"].to_numpy(float) - 1.0


def adult_data(rng, n=None, test_fraction=None, d=7):
    """Adult (train + test files, 48,842 rows) with the 7 encoded features of :data:`ADULT_FEATURES`.

    One numeric column per attribute of GLM Fig. 4 (the paper does not say how it encoded the
    categorical ones; a full one-hot encoding would give d ≈ 50, i.e. ~1,300 statistics):
    age, education-num (the ordinal version of education), and indicators self-employed
    (workclass), married (marital-status), Exec-managerial/Prof-specialty (occupation), own-child
    (relationship) and male (gender).

    ``d`` < 7 keeps the first ``d`` of these columns (fast mode: 4, to reuse the Pima model).
    ``n``: a random subset of that size (GLM Fig. 4: 8000).  ``test_fraction``: return
    ``(Xtr, ytr, Xte, yte)`` from a random split, test scaled with the training moments.
    """
    F, y = _adult_frame()
    X = F.to_numpy(float)[:, :d]
    idx = rng.permutation(len(y))
    if n is not None:
        idx = idx[:n]
    X, y = X[idx], y[idx]
    if test_fraction is None:
        return scale_features(X), y
    k = round(len(y) * (1 - test_fraction))
    return scale_features(X[:k]), y[:k], scale_features(X[k:], ref=X[:k]), y[k:]


def pima_poisson_data(Ry=10.0):
    """Pima: number of pregnancies (clipped at ``Ry``) on :data:`POISSON_FEATURES`."""
    df = load_pima()
    X = scale_features(df[list(POISSON_FEATURES)].to_numpy(float))
    y = np.minimum(df["pregnancies"].to_numpy(float), Ry)
    return X, y


def wine_data(rng, d=4, test_fraction=0.2, Ry=2.0):
    """Wine (both colours): centred quality on the top-``d`` principal components (LDP Fig. 4).

    Returns ``Xtr, ytr, Xte, yte, y_mean``: PCA and scaling from the training part; ``ytr`` is the
    centred quality clipped to ``[-Ry, Ry]``; ``yte`` is the raw test quality.
    """
    df = load_wine("both")
    Xall = df.drop(columns=["quality", "colour"]).to_numpy(float)
    yall = df["quality"].to_numpy(float)
    idx = rng.permutation(len(yall))
    k = round(len(idx) * (1 - test_fraction))
    tr, te = idx[:k], idx[k:]
    mu, sd = Xall[tr].mean(0), Xall[tr].std(0)
    Ztr, Zte = (Xall[tr] - mu) / sd, (Xall[te] - mu) / sd
    _, _, vt = np.linalg.svd(Ztr, full_matrices=False)
    Ptr, Pte = Ztr @ vt[:d].T, Zte @ vt[:d].T
    y_mean = yall[tr].mean()
    return (
        scale_features(Ptr),
        np.clip(yall[tr] - y_mean, -Ry, Ry),
        scale_features(Pte, ref=Ptr),
        yall[te],
        y_mean,
    )


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
    from ..priors import scaled_lkj_cov

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


def fit(compiled, *, draws, tune, chains=2, seed=0, var="theta", **data):
    """Sample ``compiled`` (nutpie) with new data; returns ``(draws of var, info)``.

    NUTS target acceptance 0.95: with the default 0.8 the Wine LDP fits (d = 4, Σ a parameter
    under the scaled LKJ prior) had 4-7 divergences per fit at ε = 4, with 0.95 none, for 25%
    more time.  A chain whose mean log density is more than 10 nats below the best chain's is
    dropped (``info["chains_dropped"]``): a chain can settle in a minor mode of small feature
    scales (seen in the Poisson example at ε = 1: θ₀ ≈ −4.7 against 2.4, 20 nats lower).
    """
    return sample_compiled(
        compiled,
        draws=draws,
        tune=tune,
        chains=chains,
        cores=min(chains, 2),
        seed=seed,
        var=var,
        target_accept=0.95,
        drop_stuck_chains=10.0,
        **data,
    )


def _fit_clean(compiled_clean, X, y, glm, S, seed):
    d = X.shape[1]
    if glm == "logistic":
        Xp = np.hstack([X, np.zeros((len(X), D_PAD - d))])
        post, info = fit(
            compiled_clean,
            draws=S["draws"],
            tune=S["tune"],
            seed=seed,
            X=Xp,
            y=(y > 0).astype(float),
        )
        return post[:, :d], info
    return fit(compiled_clean, draws=S["draws"], tune=S["tune"], seed=seed, X=X, y=y)


def _fit_ss(compiled_ss, rel, S, seed):
    return fit(
        compiled_ss,
        draws=S["draws"],
        tune=S["tune"],
        seed=seed,
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
    from scipy import stats

    ref = draws[reference]
    rows = []
    for (method, eps), post in draws.items():
        if (method, eps) == reference:
            continue
        row = dict(method=method, epsilon=eps)
        for j, nm in enumerate(names):
            row[nm] = stats.ks_2samp(post[:, j], ref[:, j]).statistic
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
    from scipy import stats

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
                row[f"KS theta_{j}"] = stats.ks_2samp(post[:, j], ref[:, j]).statistic
            rows.append(row)
        if progress:
            progress(f"fig5 repeat {r + 1}/{S['fig5_repeats']} done")
    return pd.DataFrame(rows)


def auc(scores, labels) -> float:
    """Area under the ROC curve by the rank-sum (Mann–Whitney) formula; ties get mid-ranks.

    Examples
    --------
    >>> auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    0.75
    """
    from scipy.stats import rankdata

    scores = np.asarray(scores, float)
    pos = np.asarray(labels) > 0
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if n1 == 0 or n0 == 0:
        raise ValueError("`labels` must contain both classes")
    ranks = rankdata(scores)
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _logistic_mle(X, y, iters=50):
    theta = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-X @ theta))
        g = X.T @ ((y > 0) - p)
        H = (X * (p * (1 - p))[:, None]).T @ X + 1e-8 * np.eye(X.shape[1])
        step = np.linalg.solve(H, g)
        theta += step
        if np.abs(step).max() < 1e-10:
            break
    return theta


def _ldp_split(kind, rng, S):
    """One LDP train/test split: ``(Xtr, ytr, Xte, yte, glm, Ry, metric, ref_theta, y_mean)``."""
    if kind == "wine":
        Xtr, ytr, Xte, yte, y_mean = wine_data(rng, d=S["wine_d"])

        def metric(theta):
            return float(np.sqrt(np.mean((y_mean + Xte @ theta - yte) ** 2)))

        ref = np.linalg.lstsq(Xtr, ytr, rcond=None)[0]
        return Xtr, ytr, Xte, yte, "linear", 2.0, metric, ref, y_mean
    if kind != "adult":
        raise ValueError(f"`kind` must be 'wine' or 'adult'; got {kind!r}")
    Xtr, ytr, Xte, yte = adult_data(rng, test_fraction=0.2, d=S["adult_d"])

    def metric(theta):
        return auc(Xte @ theta, yte)

    return Xtr, ytr, Xte, yte, "logistic", 1.0, metric, _logistic_mle(Xtr, ytr), None


def _ldp_sgd_fit(split, eps, rng, gc, lr):
    from ..baselines.regression import ldp_sgd

    Xtr, ytr, _, _, glm, _, metric, _, _ = split
    if glm == "linear":
        res = ldp_sgd(Xtr, ytr, eps, DELTA, rng, loss="squared", group_constant=gc, lr=lr)
    else:
        yb = (ytr > 0).astype(float)
        res = ldp_sgd(Xtr, yb, eps, DELTA, rng, loss="logistic", group_constant=gc, lr=lr)
    return metric(res["theta"]), res


def tune_ldp_sgd_glm(kind, eps, S, *, seed=7, grid=None):
    """LDP-SGD's (group-size constant, step size) with the best mean test metric on pilot splits.

    The grid is :data:`pymc_dpnoise.experiments_regression_figs.SGD_GRID` (as in the LDP
    regression notebook); the pilot splits (``S["ldp_tune_repeats"]`` of them) use other seeds
    than the evaluation splits.  The tuning looks at test data and spends no privacy budget, so it
    favours LDP-SGD.  Returns ``(group_constant, lr)``.
    """
    from .ldp_regression import SGD_GRID

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
