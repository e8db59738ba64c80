"""Fast checks of the regression experiment helpers (``pymc_dpnoise.experiments_regression_figs``).

References are independent of the module: a brute-force pairwise AUC, the score equations of the
logistic likelihood, scipy's multivariate normal density and ``numpy.linalg``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_dpnoise.experiments import ldp_regression as rf


def _auc_pairs(s, y):
    s, y = np.asarray(s, float), np.asarray(y, bool)
    diff = s[y][:, None] - s[~y][None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def test_auc_matches_pairwise_definition_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(5, 200))
        y = rng.random(n) < rng.uniform(0.1, 0.9)
        if y.all() or not y.any():
            continue
        s = rng.integers(0, 6, size=n).astype(float)  # many ties
        assert rf.auc(s, y) == pytest.approx(_auc_pairs(s, y), abs=1e-12)
        s2 = rng.normal(size=n)
        assert rf.auc(s2, y) == pytest.approx(_auc_pairs(s2, y), abs=1e-12)
        assert rf.auc(-s2, y) == pytest.approx(1.0 - _auc_pairs(s2, y), abs=1e-12)
    with pytest.raises(ValueError, match="both classes"):
        rf.auc([0.1, 0.2], [1, 1])


def test_logistic_fit_solves_the_score_equations():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3)) * 0.5
    y = (rng.random(3000) < 1 / (1 + np.exp(-(X @ [2.0, -1.0, 0.5] - 1.0)))).astype(int)
    w = rf.logistic_fit(X, y, ridge=0.0)
    A = np.column_stack([X, np.ones(len(y))])
    p = 1 / (1 + np.exp(-(A @ w)))
    np.testing.assert_allclose(A.T @ (y - p), 0.0, atol=1e-8)
    np.testing.assert_allclose(w, [2.0, -1.0, 0.5, -1.0], atol=0.35)
    th = rf.least_squares(X, X @ [1.0, 2.0, 3.0])
    np.testing.assert_allclose(th, [1.0, 2.0, 3.0], atol=1e-10)


def test_wine_split_preprocessing():
    s = rf.wine_split(np.random.default_rng(3), d=3)
    assert s.X_train.shape == (5198, 3) and s.X_test.shape == (1299, 3)
    norms = np.linalg.norm(s.X_train, axis=1)
    assert norms.max() <= 1 + 1e-12
    # rescaled by the 95% quantile of the norms: ~5% of the training rows sit on the sphere
    assert np.mean(norms > 1 - 1e-9) == pytest.approx(0.05, abs=0.002)
    assert abs(s.y_train.mean()) < 1e-12  # centred with the training mean
    # quality scores are integers: test targets = integer - training mean
    shift = s.y_test - np.round(s.y_test)
    assert np.allclose(shift, shift[0])
    s2 = rf.wine_split(np.random.default_rng(3), d=3)
    np.testing.assert_array_equal(s.X_test, s2.X_test)
    # PCA scores are uncorrelated on the training data (before clipping; nearly after)
    c = np.corrcoef(s.X_train.T)
    assert np.max(np.abs(c[np.triu_indices(3, 1)])) < 0.1


def test_wine_group_split_centres_within_groups():
    s = rf.wine_group_split(np.random.default_rng(4), d=3)
    assert np.bincount(s.groups_train).tolist() == [1279, 3918]
    assert np.bincount(s.groups_test).tolist() == [320, 980]
    assert np.linalg.norm(s.X_train, axis=1).max() <= 1 + 1e-12
    for g in (0, 1):
        a = s.groups_train == g
        assert abs(s.y_train[a].mean()) < 1e-12
        # centred before clipping, so only approximately zero-mean after it
        assert np.all(np.abs(s.X_train[a].mean(0)) < 0.02)


def test_adult_split_shapes_and_labels():
    s = rf.adult_split(np.random.default_rng(5), d=3, n_train=1000)
    assert s.X_train.shape == (1000, 3) and s.X_test.shape == (16281, 3)
    assert set(np.unique(s.y_train)) == {0, 1}
    assert 0.15 < s.y_test.mean() < 0.3  # about 24% earn more than 50K
    assert np.linalg.norm(s.X_test, axis=1).max() <= 1 + 1e-12


def test_tune_ldp_sgd_returns_the_best_grid_point():
    splits = [rf.wine_split(np.random.default_rng(k), d=2) for k in range(2)]
    grid = ((10.0, 0.1), (100.0, 0.3))
    best, table = rf.tune_ldp_sgd(
        splits, 4.0, 1e-5, np.random.default_rng(0), loss="squared", metric="rmse", grid=grid
    )
    assert len(table) == 2
    i = int(table["value"].to_numpy().argmin())
    assert best == grid[i]
    assert np.all(table["value"] > 0.5)  # RMSE of quality is ~0.8 whatever the fit


def _fn(model, out):
    """``out`` as a function of a point (dict of all the model's value variables)."""
    (out,) = model.replace_rvs_by_values([out])
    return model.compile_fn(out, inputs=model.value_vars, on_unused_input="ignore", point_fn=True)


def test_linreg_model_logp_matches_joint_gaussian():
    rng = np.random.default_rng(6)
    n, d = 40, 2
    z = rng.normal(size=(n, d + 1))
    model = rf.build_linreg_model(n, d)
    model.set_data("reports", z)
    model.set_data("sigma_x", 0.7)
    model.set_data("sigma_y", 1.3)
    point = model.initial_point()
    point["theta"] = np.array([0.4, -1.1])
    point["sigma_log__"] = np.log(0.5)
    point["chol_tau_log__"] = np.log([0.6, 1.4])
    point["chol_corr_cholesky_corr__"] = np.array([0.7])
    lik = float(_fn(model, model.logp(vars=[model["z"]]))(point))
    # Σ = diag(τ) Ω diag(τ) at this point, from the model's own τ and correlation factor
    tau = _fn(model, model["chol_tau"])(point)
    corr_chol = _fn(model, model["chol_corr"])(point)
    np.testing.assert_allclose(tau, [0.6, 1.4])
    omega = corr_chol @ corr_chol.T
    assert 0.1 < abs(omega[0, 1]) < 0.99
    cov = omega * np.outer(tau, tau)
    th = point["theta"]
    C = np.block(
        [
            [cov + 0.7**2 * np.eye(d), (cov @ th)[:, None]],
            [(th @ cov)[None, :], np.array([[th @ cov @ th + 0.25 + 1.3**2]])],
        ]
    )
    ref = stats.multivariate_normal(np.zeros(d + 1), C).logpdf(z).sum()
    assert lik == pytest.approx(ref, rel=1e-9)


def test_group_model_pooling_switch():
    model = rf.build_linreg_group_model([10, 20], 2)
    point = model.initial_point()
    point["eta"] = np.array([[1.0, -2.0], [0.5, 0.0]])
    point["mu_theta"] = np.array([0.3, 0.1])
    point["tau_theta_log__"] = np.log([0.5, 2.0])
    theta = _fn(model, model["theta"])
    np.testing.assert_allclose(theta(point), [[0.8, -3.9], [0.55, 0.1]])
    model.set_data("pooled", 0.0)
    theta = _fn(model, model["theta"])
    np.testing.assert_allclose(theta(point), np.sqrt(5.0) * point["eta"])
    assert {"reports_0", "reports_1", "sigma_x", "sigma_y", "pooled"} <= set(model.named_vars)
    assert isinstance(model["reports_1"].get_value(), np.ndarray)
    assert pm.draw(model["theta"]).shape == (2, 2)
