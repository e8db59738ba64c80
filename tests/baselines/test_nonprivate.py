"""Non-private reference fits (``pymc_dpnoise.baselines.nonprivate``): the score equations of
the logistic likelihood and exact least squares as independent references."""

from __future__ import annotations

import numpy as np

from pymc_dpnoise.baselines import least_squares, logistic_mle
from pymc_dpnoise.datasets import pima_data


def test_logistic_fit_solves_the_score_equations():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3)) * 0.5
    y = (rng.random(3000) < 1 / (1 + np.exp(-(X @ [2.0, -1.0, 0.5] - 1.0)))).astype(int)
    w = logistic_mle(X, y, intercept=True, ridge=0.0)
    A = np.column_stack([X, np.ones(len(y))])
    p = 1 / (1 + np.exp(-(A @ w)))
    np.testing.assert_allclose(A.T @ (y - p), 0.0, atol=1e-8)
    np.testing.assert_allclose(w, [2.0, -1.0, 0.5, -1.0], atol=0.35)
    th = least_squares(X, X @ [1.0, 2.0, 3.0])
    # least squares on exact data (cond(X) ~ 10): LAPACK's backward error m^2 u cond, far below
    # 1e-10
    np.testing.assert_allclose(th, [1.0, 2.0, 3.0], atol=1e-10)


def test_logistic_mle_solves_the_score_equation():
    X, y = pima_data()
    theta = logistic_mle(X, y, ridge=0.0)
    p = 1 / (1 + np.exp(-X @ theta))
    np.testing.assert_allclose(X.T @ ((y > 0) - p), 0.0, atol=1e-8)
