r"""Feature matrices, train/test splits and scaling of the shipped data sets, as the papers use them.

Two pre-processing protocols, one per paper family (the experiments in
:mod:`pymc_dpnoise.experiments` call these; the functions are deterministic given ``rng``):

* **LDP paper, regression (Figs. 4 and 5)** — :func:`wine_split`, :func:`wine_group_split`,
  :func:`adult_split`: standardise, project on the first ``d`` principal axes of the training
  data, rescale so that 5% of the training rows exceed norm R, clip to R
  (:func:`pca_features`).  Adult uses all attributes (:func:`adult_onehot_features`).
* **GLM paper (Figs. 3 and 4) and its LDP experiments** — :func:`pima_data`,
  :func:`pima_poisson_data`, :func:`adult_data`, :func:`wine_data`: standardise, divide by
  :math:`2\sqrt d` (a typical row then has norm ≈ 1/2), clip rows to norm :math:`R = 1`
  (:func:`scale_features`).  Adult uses seven encoded attributes
  (:func:`adult_indicator_features`); logistic labels are ±1.

The standardisation (and the PCA) use the data's own training moments, as the papers'
pre-processing does; it is treated as public and not part of the privacy accounting.
"""

from __future__ import annotations

import math
from functools import cache
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..mechanisms.core import clip_rows

__all__ = [
    "ADULT_CATEGORICAL",
    "ADULT_FEATURES",
    "ADULT_NUMERIC",
    "PIMA_FEATURES",
    "POISSON_FEATURES",
    "Split",
    "adult_data",
    "adult_indicator_features",
    "adult_onehot_features",
    "adult_split",
    "pca_features",
    "pca_scores",
    "pima_data",
    "pima_poisson_data",
    "scale_features",
    "wine_data",
    "wine_features",
    "wine_group_split",
    "wine_split",
]

#: Adult, LDP Fig. 5: numeric columns (capital gain/loss as log1p) and one-hot categorical ones
ADULT_NUMERIC = ("age", "education_num", "hours_per_week", "capital_gain", "capital_loss")
ADULT_CATEGORICAL = ("workclass", "marital_status", "occupation", "relationship", "race", "sex")
#: Adult, GLM Fig. 4: one numeric column per attribute (see :func:`adult_indicator_features`)
ADULT_FEATURES = (
    "age",
    "self_employed",
    "education_num",
    "married",
    "exec_or_prof",
    "own_child",
    "male",
)
#: Pima, GLM Fig. 3 (logistic regression of the outcome)
PIMA_FEATURES = ("age", "pregnancies", "diabetes_pedigree", "insulin")
#: Pima, Poisson example (number of pregnancies)
POISSON_FEATURES = ("age", "bmi", "glucose")


# --------------------------------------------------------------------------------------------
# Scaling
# --------------------------------------------------------------------------------------------


def scale_features(X, ref=None, R=1.0):
    r"""Standardise with ``ref``'s (default ``X``'s) moments, divide by :math:`2\sqrt d`, clip to ``R``.

    Returns the scaled array.  With ``ref`` a training set, test rows are transformed the same way.

    Examples
    --------
    >>> import numpy as np
    >>> X = scale_features(np.random.default_rng(0).normal(size=(500, 4)))
    >>> bool(np.linalg.norm(X, axis=1).max() <= 1.0)
    True
    """
    X = np.asarray(X, dtype=float)
    ref = X if ref is None else np.asarray(ref, dtype=float)
    mu, sd = ref.mean(0), ref.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    d = X.shape[1]
    return clip_rows((X - mu) / sd / (2.0 * math.sqrt(d)), R)


def pca_scores(F_train, F_test, d, *, fix_sign=True):
    """Standardised data projected on the first ``d`` principal axes of ``F_train``.

    Means, standard deviations and axes come from ``F_train``.  With ``fix_sign`` each axis is
    oriented so that its largest loading is positive (repeats are then comparable).

    Returns
    -------
    (scores_train, scores_test)
    """
    F_train = np.asarray(F_train, float)
    F_test = np.asarray(F_test, float)
    mu = F_train.mean(0)
    sd = F_train.std(0)
    sd[sd == 0] = 1.0
    A, B = (F_train - mu) / sd, (F_test - mu) / sd
    _, _, vt = np.linalg.svd(A, full_matrices=False)
    P = vt[:d].T
    if fix_sign:
        P = P * np.sign(P[np.argmax(np.abs(P), axis=0), np.arange(d)])
    return A @ P, B @ P


def pca_features(F_train, F_test, d, *, R=1.0, norm_quantile=0.95):
    """Standardise, project on the first ``d`` principal axes, rescale, clip to norm ``R``.

    Means, standard deviations and the principal axes come from ``F_train``.  The scores are
    divided by ``scale`` = the ``norm_quantile`` quantile of the training rows' L2 norms and
    multiplied by ``R``, so that a fraction ``1 - norm_quantile`` of the training rows is clipped.

    Returns
    -------
    (X_train, X_test, scale)
    """
    Za, Zb = pca_scores(F_train, F_test, d)
    scale = _norm_scale(Za, R, norm_quantile)
    return clip_rows(Za / scale, R), clip_rows(Zb / scale, R), scale


def _norm_scale(Z, R, norm_quantile):
    return float(np.quantile(np.linalg.norm(Z, axis=1), norm_quantile)) / float(R)


# --------------------------------------------------------------------------------------------
# Feature matrices
# --------------------------------------------------------------------------------------------


@cache
def wine_features():
    """Wine (both colours): ``(F, quality, colour)`` — the 11 physico-chemical features."""
    from .loaders import load_wine

    df = load_wine("both")
    F = df.drop(columns=["quality", "colour"]).to_numpy(float)
    return F, df["quality"].to_numpy(float), df["colour"].to_numpy()


@cache
def adult_onehot_features():
    """Adult (train + test files): ``(F, income_gt_50k, is_train)`` with every attribute.

    The numeric columns of :data:`ADULT_NUMERIC` (capital gain and loss as log1p) and the
    one-hot columns of :data:`ADULT_CATEGORICAL` (missing as its own level).
    """
    from .loaders import load_adult

    df = load_adult("both")
    num = df[list(ADULT_NUMERIC)].astype(float).copy()
    for c in ("capital_gain", "capital_loss"):
        num[c] = np.log1p(num[c])
    cat = pd.get_dummies(df[list(ADULT_CATEGORICAL)].fillna("missing"), dtype=float)
    F = pd.concat([num, cat], axis=1).to_numpy(float)
    return F, df["income_gt_50k"].to_numpy(), (df["split"] == "train").to_numpy()


def adult_indicator_features():
    """Adult (train + test files, 48,842 rows): the 7 columns of :data:`ADULT_FEATURES`, labels ±1.

    One numeric column per attribute of GLM Fig. 4 (the paper does not say how it encoded the
    categorical ones; a full one-hot encoding would give d ≈ 50, i.e. ~1,300 statistics):
    age, education-num (the ordinal version of education), and indicators self-employed
    (workclass), married (marital-status), Exec-managerial/Prof-specialty (occupation),
    own-child (relationship) and male (gender).  Returns ``(DataFrame, labels)``.
    """
    from .loaders import load_adult

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


# --------------------------------------------------------------------------------------------
# LDP paper, regression: splits
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
    F, y, _ = wine_features()
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
    F, y, colour = wine_features()
    rng = np.random.default_rng(rng)
    g = (colour == "white").astype(int)
    tr, te = [], []
    for k in (0, 1):
        idx = rng.permutation(np.flatnonzero(g == k))
        n_test = round(test_frac * len(idx))
        te.append(idx[:n_test])
        tr.append(idx[n_test:])
    tr, te = np.concatenate(tr), np.concatenate(te)
    Xtr, Xte = pca_scores(F[tr], F[te], d)
    ytr, yte = y[tr].copy(), y[te].copy()
    for k in (0, 1):
        a, b = g[tr] == k, g[te] == k
        mx, my = Xtr[a].mean(0), ytr[a].mean()
        Xtr[a] -= mx
        Xte[b] -= mx
        ytr[a] -= my
        yte[b] -= my
    scale = _norm_scale(Xtr, R, norm_quantile)
    Xtr, Xte = clip_rows(Xtr / scale, R), clip_rows(Xte / scale, R)
    return Split(Xtr, ytr, Xte, yte, scale, g[tr], g[te])


def adult_split(rng, d=3, *, n_train=10_000, R=1.0, norm_quantile=0.95) -> Split:
    """Adult: ``n_train`` random records of the training file; the test file (16,281) to test.

    Features: :func:`adult_onehot_features`, then :func:`pca_features` fitted on the
    ``n_train`` records.  Labels: income > 50K (0/1).
    """
    F, y, is_train = adult_onehot_features()
    tr_all = np.flatnonzero(is_train)
    te = np.flatnonzero(~is_train)
    tr = np.random.default_rng(rng).choice(tr_all, size=n_train, replace=False)
    Xtr, Xte, scale = pca_features(F[tr], F[te], d, R=R, norm_quantile=norm_quantile)
    return Split(Xtr, y[tr], Xte, y[te], scale)


# --------------------------------------------------------------------------------------------
# GLM paper: data sets
# --------------------------------------------------------------------------------------------


def pima_data():
    """Pima diabetes (all 768 rows): the 4 features of GLM Fig. 3, labels ±1."""
    from .loaders import load_pima

    df = load_pima()
    X = scale_features(df[list(PIMA_FEATURES)].to_numpy(float))
    return X, 2.0 * df["outcome"].to_numpy(float) - 1.0


def pima_poisson_data(Ry=10.0):
    """Pima: number of pregnancies (clipped at ``Ry``) on :data:`POISSON_FEATURES`."""
    from .loaders import load_pima

    df = load_pima()
    X = scale_features(df[list(POISSON_FEATURES)].to_numpy(float))
    y = np.minimum(df["pregnancies"].to_numpy(float), Ry)
    return X, y


def adult_data(rng, n=None, test_fraction=None, d=7):
    """Adult with the 7 encoded features of :func:`adult_indicator_features`, scaled.

    ``d`` < 7 keeps the first ``d`` of these columns.  ``n``: a random subset of that size
    (GLM Fig. 4: 8000).  ``test_fraction``: return ``(Xtr, ytr, Xte, yte)`` from a random
    split, test scaled with the training moments.
    """
    F, y = adult_indicator_features()
    X = F.to_numpy(float)[:, :d]
    idx = rng.permutation(len(y))
    if n is not None:
        idx = idx[:n]
    X, y = X[idx], y[idx]
    if test_fraction is None:
        return scale_features(X), y
    k = round(len(y) * (1 - test_fraction))
    return scale_features(X[:k]), y[:k], scale_features(X[k:], ref=X[:k]), y[k:]


def wine_data(rng, d=4, test_fraction=0.2, Ry=2.0):
    """Wine (both colours): centred quality on the top-``d`` principal components, scaled.

    Returns ``Xtr, ytr, Xte, yte, y_mean``: PCA (:func:`pca_scores`, axes not re-oriented) and
    :func:`scale_features` from the training part; ``ytr`` is the centred quality clipped to
    ``[-Ry, Ry]``; ``yte`` is the raw test quality.
    """
    Xall, yall, _ = wine_features()
    idx = rng.permutation(len(yall))
    k = round(len(idx) * (1 - test_fraction))
    tr, te = idx[:k], idx[k:]
    Ptr, Pte = pca_scores(Xall[tr], Xall[te], d, fix_sign=False)
    y_mean = yall[tr].mean()
    return (
        scale_features(Ptr),
        np.clip(yall[tr] - y_mean, -Ry, Ry),
        scale_features(Pte, ref=Ptr),
        yall[te],
        y_mean,
    )
