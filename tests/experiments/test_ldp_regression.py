"""Fast checks of the regression experiment helpers (``pymc_dpnoise.experiments.ldp_regression``).

References are independent of the module: a brute-force pairwise AUC, the score equations of the
logistic likelihood, scipy's multivariate normal density and ``numpy.linalg``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pymc_dpnoise.datasets import wine_split
from pymc_dpnoise.experiments import ldp_regression as rf


def test_tune_ldp_sgd_returns_the_best_grid_point():
    splits = [wine_split(np.random.default_rng(k), d=2) for k in range(2)]
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
    # against a NumPy reference of the same likelihood (Cholesky / quadrature, libm): 1e-9 relative
    # is > 1e4 of margin
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
