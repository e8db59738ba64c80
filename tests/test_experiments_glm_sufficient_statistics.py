"""Helpers of the GLM / LDP sufficient-statistics notebook (pymc_dpnoise.experiments_glm)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from pymc_dpnoise.experiments import glm_sufficient_statistics as eg

# --------------------------------------------------------------------------------------------
# Data preparation
# --------------------------------------------------------------------------------------------


def test_scale_features_standardises_divides_and_clips():
    rng = np.random.default_rng(0)
    X = rng.normal(5.0, 3.0, size=(2000, 4)) * np.array([1.0, 10.0, 0.1, 2.0])
    Z = eg.scale_features(X)
    norms = np.linalg.norm(Z, axis=1)
    assert Z.shape == X.shape
    assert norms.max() <= 1.0 + 1e-12
    # rows inside the unit ball are the standardised rows divided by 2 sqrt(d) = 4
    W = (X - X.mean(0)) / X.std(0) / 4.0
    inside = np.linalg.norm(W, axis=1) <= 1.0
    assert inside.mean() > 0.95
    np.testing.assert_allclose(Z[inside], W[inside], rtol=1e-12, atol=1e-14)
    # clipped rows keep their direction and get norm exactly 1
    out = ~inside
    if out.any():
        np.testing.assert_allclose(norms[out], 1.0, rtol=1e-12)
        np.testing.assert_allclose(
            Z[out], W[out] / np.linalg.norm(W[out], axis=1, keepdims=True), rtol=1e-12
        )
    # a constant column does not produce NaNs
    Xc = np.column_stack([X[:, 0], np.full(len(X), 3.0)])
    assert np.all(np.isfinite(eg.scale_features(Xc)))


def test_scale_features_uses_the_reference_moments():
    rng = np.random.default_rng(1)
    ref = rng.normal(2.0, 4.0, size=(500, 3))
    X = rng.normal(2.0, 4.0, size=(50, 3))
    Z = eg.scale_features(X, ref=ref, R=10.0)  # R large: no clipping
    expect = (X - ref.mean(0)) / ref.std(0) / (2 * math.sqrt(3))
    np.testing.assert_allclose(Z, expect, rtol=1e-12)


def test_pima_loaders():
    X, y = eg.pima_data()
    assert X.shape == (768, len(eg.PIMA_FEATURES))
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert np.linalg.norm(X, axis=1).max() <= 1.0 + 1e-12
    np.testing.assert_allclose(X.mean(0), 0.0, atol=0.02)
    Xp, yp = eg.pima_poisson_data(Ry=10.0)
    assert Xp.shape == (768, len(eg.POISSON_FEATURES))
    assert yp.min() >= 0 and yp.max() == 10.0
    assert np.all(yp == np.round(yp))


def test_adult_loader_subset_split_and_columns():
    X, y = eg.adult_data(np.random.default_rng(0), n=500, d=4)
    assert X.shape == (500, 4) and y.shape == (500,)
    assert set(np.unique(y)) == {-1.0, 1.0}
    Xtr, ytr, Xte, yte = eg.adult_data(np.random.default_rng(0), n=1000, test_fraction=0.25)
    assert Xtr.shape == (750, len(eg.ADULT_FEATURES)) and Xte.shape == (250, 7)
    assert ytr.shape == (750,) and yte.shape == (250,)
    assert np.linalg.norm(Xte, axis=1).max() <= 1.0 + 1e-12
    # the same seed gives the same records
    X2, y2 = eg.adult_data(np.random.default_rng(0), n=500, d=4)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    # the binary indicators take two values per column
    F, _ = eg._adult_frame()
    for c in ("self_employed", "married", "exec_or_prof", "own_child", "male"):
        assert set(np.unique(F[c])) == {0.0, 1.0}


def test_wine_loader():
    Xtr, ytr, Xte, yte, y_mean = eg.wine_data(np.random.default_rng(0), d=3, Ry=2.0)
    n = len(ytr) + len(yte)
    assert n == 6497 and len(ytr) == round(0.8 * n)
    assert Xtr.shape == (len(ytr), 3) and Xte.shape == (len(yte), 3)
    assert np.abs(ytr).max() <= 2.0
    assert 5.0 < y_mean < 6.5
    assert set(np.unique(yte)) <= set(range(3, 10))
    # principal components of the training part are uncorrelated
    C = np.corrcoef(Xtr, rowvar=False)
    assert np.abs(C[np.triu_indices(3, 1)]).max() < 0.1


def test_synthetic_data():
    S = eg.synthetic_cov()
    assert np.allclose(S, S.T) and np.all(np.linalg.eigvalsh(S) > 0)
    assert np.all((np.diag(S) >= 0.25**2 - 1e-12) & (np.diag(S) <= 0.4**2 + 1e-12))
    np.testing.assert_array_equal(S, eg.synthetic_cov())  # fixed seed
    X, y = eg.synthetic_data(np.random.default_rng(3), n=40_000)
    assert X.shape == (40_000, 3) and set(np.unique(y)) == {-1.0, 1.0}
    assert np.linalg.norm(X, axis=1).max() <= 1.0 + 1e-12
    np.testing.assert_allclose(np.cov(X, rowvar=False), S, atol=0.01)
    # the labels follow the logistic model: the MLE is close to the true theta
    theta = eg._logistic_mle(X, y)
    np.testing.assert_allclose(theta, eg.SYNTH_THETA, atol=0.2)


# --------------------------------------------------------------------------------------------
# Metrics and tables
# --------------------------------------------------------------------------------------------


def _auc_pairs(s, lab):
    pos, neg = s[lab > 0], s[lab <= 0]
    wins = sum((a > b) + 0.5 * (a == b) for a, b in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_matches_pairwise_count_with_ties(seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 6, size=40).astype(float)  # many ties
    lab = np.where(rng.random(40) < 0.4, 1.0, -1.0)
    assert eg.auc(s, lab) == pytest.approx(_auc_pairs(s, lab), abs=1e-12)
    # labels 0/1 and ±1 give the same value; reversed scores give 1 - AUC
    assert eg.auc(s, (lab > 0).astype(int)) == pytest.approx(eg.auc(s, lab))
    assert eg.auc(-s, lab) == pytest.approx(1.0 - eg.auc(s, lab))


def test_auc_extremes_and_errors():
    assert eg.auc([1, 2, 3, 4], [-1, -1, 1, 1]) == 1.0
    assert eg.auc([4, 3, 2, 1], [-1, -1, 1, 1]) == 0.0
    assert eg.auc([1, 1, 1], [0, 1, 1]) == 0.5
    with pytest.raises(ValueError, match="both classes"):
        eg.auc([0.1, 0.2], [1, 1])


def test_ks_table_on_known_inputs():
    a = np.arange(100.0)[:, None] * np.ones((1, 2))
    shifted = a.copy()
    shifted[:, 0] += 1000.0  # coefficient 0: disjoint samples; coefficient 1: identical
    half = a.copy()
    half[:, 1] += 50.0  # the empirical CDFs differ by 1/2 at most
    draws = {
        ("non-private", math.inf): a,
        ("A", 0.1): shifted,
        ("B", 0.3): half,
    }
    ks = eg.ks_table(draws, ["c0", "c1"])
    assert list(ks.columns) == ["method", "epsilon", "c0", "c1"]
    assert list(zip(ks.method, ks.epsilon, strict=True)) == [("A", 0.1), ("B", 0.3)]
    np.testing.assert_allclose(ks[["c0", "c1"]].to_numpy(), [[1.0, 0.0], [0.0, 0.5]])


@pytest.mark.parametrize(("a", "b"), [(1.0, 4.0), (0.37, 2.3), (3.0, 0.5), (1.0, 1.01)])
def test_normal_ks_same_mean_matches_a_grid(a, b):
    from scipy.stats import norm

    x = np.linspace(-30, 30, 600_001)
    expect = np.abs(norm.cdf(x / a) - norm.cdf(x / b)).max()
    assert float(eg.normal_ks_same_mean(a, b)) == pytest.approx(expect, abs=1e-7)
    # symmetric and vectorised; equal widths give 0
    np.testing.assert_allclose(eg.normal_ks_same_mean([a, b, 2.0], [b, a, 2.0])[:2], expect)
    assert eg.normal_ks_same_mean([a, b, 2.0], [b, a, 2.0])[2] == 0.0


def test_summary_table():
    rng = np.random.default_rng(0)
    post = rng.normal([1.0, -2.0], [0.5, 3.0], size=(4000, 2))
    tab = eg.summary_table({("m", 0.5): post}, ["a", "b"])
    assert isinstance(tab, pd.DataFrame) and len(tab) == 2
    row = tab.set_index("coef").loc["b"]
    assert row["method"] == "m" and row["epsilon"] == 0.5
    assert row["mean"] == pytest.approx(post[:, 1].mean())
    assert row["sd"] == pytest.approx(post[:, 1].std())
    assert row["q05"] == pytest.approx(np.quantile(post[:, 1], 0.05))
    assert row["q95"] == pytest.approx(np.quantile(post[:, 1], 0.95))


def test_logistic_mle_solves_the_score_equation():
    X, y = eg.pima_data()
    theta = eg._logistic_mle(X, y)
    p = 1 / (1 + np.exp(-X @ theta))
    np.testing.assert_allclose(X.T @ ((y > 0) - p), 0.0, atol=1e-8)


# --------------------------------------------------------------------------------------------
# LDP helpers (no sampling)
# --------------------------------------------------------------------------------------------


def test_ldp_split_metrics():
    S = eg.SETTINGS["fast"]
    Xtr, ytr, Xte, yte, glm, Ry, metric, ref, y_mean = eg._ldp_split(
        "wine", np.random.default_rng(0), S
    )
    assert glm == "linear" and Ry == 2.0 and Xtr.shape[1] == S["wine_d"]
    assert Xte.shape == (len(yte), S["wine_d"]) and np.abs(ytr).max() <= Ry
    # the metric is the test RMSE of y_mean + X theta; theta = 0 is the training mean
    assert metric(np.zeros(Xtr.shape[1])) == pytest.approx(np.sqrt(np.mean((y_mean - yte) ** 2)))
    assert metric(ref) < metric(np.zeros(Xtr.shape[1]))
    split = eg._ldp_split("adult", np.random.default_rng(0), S)
    assert split[4] == "logistic" and split[0].shape[1] == S["adult_d"]
    assert 0.7 < split[6](split[7]) < 0.95  # the MLE's test AUC
    with pytest.raises(ValueError, match="kind"):
        eg._ldp_split("kosarak", np.random.default_rng(0), S)


def test_tune_ldp_sgd_glm_picks_the_best_grid_point():
    S = dict(eg.SETTINGS["fast"], ldp_tune_repeats=1)
    grid = ((1.0, 1.0), (100.0, 0.3))  # the first diverges on Wine, the second does not
    best = eg.tune_ldp_sgd_glm("wine", 1.0, S, grid=grid)
    assert best == (100.0, 0.3)
    # deterministic given the seed
    assert eg.tune_ldp_sgd_glm("wine", 1.0, S, grid=grid) == best


def test_settings_are_consistent():
    for mode in ("fast", "full"):
        S = eg.SETTINGS[mode]
        assert S["chains"] <= 2
        assert S["sgld_burn_in"] < S["sgld_iterations"]
        assert S["adult_d"] <= eg.D_PAD == len(eg.ADULT_FEATURES)
        assert all(e > 0 for e in (*S["central_eps"], *S["fig5_eps"], *S["ldp_eps"]))
