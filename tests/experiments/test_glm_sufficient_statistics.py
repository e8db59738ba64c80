"""Helpers of the GLM / LDP sufficient-statistics notebook (pymc_dpnoise.experiments.glm_sufficient_statistics)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pymc_dpnoise.baselines import logistic_mle
from pymc_dpnoise.datasets import ADULT_FEATURES
from pymc_dpnoise.experiments import glm_sufficient_statistics as eg

# --------------------------------------------------------------------------------------------
# Data preparation
# --------------------------------------------------------------------------------------------


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
    theta = logistic_mle(X, y)
    np.testing.assert_allclose(theta, eg.SYNTH_THETA, atol=0.2)


# --------------------------------------------------------------------------------------------
# Metrics and tables
# --------------------------------------------------------------------------------------------


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
        assert S["adult_d"] <= eg.D_PAD == len(ADULT_FEATURES)
        assert all(e > 0 for e in (*S["central_eps"], *S["fig5_eps"], *S["ldp_eps"]))
