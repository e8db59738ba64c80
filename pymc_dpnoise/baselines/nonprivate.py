"""Non-private reference fits: what an analyst with the clean data would compute.

The papers' regression figures compare every private method with these (the "non-private"
curves of LDP Figs. 4 and 5 and of the GLM paper's LDP experiments).
"""

from __future__ import annotations

import numpy as np

__all__ = ["least_squares", "logistic_mle"]


def least_squares(X, y) -> np.ndarray:
    """Least-squares coefficients of ``y ≈ X θ`` (no intercept: centre the data first).

    Examples
    --------
    >>> least_squares([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [1.0, 2.0, 3.0]).round(12).tolist()
    [1.0, 2.0]
    """
    theta, *_ = np.linalg.lstsq(np.asarray(X, float), np.asarray(y, float), rcond=None)
    return theta


def logistic_mle(X, y, *, intercept=False, ridge=1e-8, iters=50) -> np.ndarray:
    r"""Maximum-likelihood logistic regression by Newton's method.

    Maximises :math:`\sum_i [y_i \eta_i - \log(1 + e^{\eta_i})] - \tfrac{\mathrm{ridge}}{2}
    \lVert w\rVert^2` with :math:`\eta = A w` (``A = [X, 1]`` with ``intercept``); the tiny
    ridge keeps the Newton system solvable for separable data.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Labels; positive where ``y > 0`` (0/1, boolean or ±1).
    intercept : bool
        Fit an intercept too.
    ridge : float
        Penalty weight (0 for the plain MLE).
    iters : int
        Newton steps at most (stops when a step is below 1e-10).

    Returns
    -------
    numpy.ndarray
        ``(d,)`` coefficients, followed by the intercept if ``intercept``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[-1.0], [-0.5], [0.5], [1.0], [0.2], [-0.2]])
    >>> w = logistic_mle(X, [0, 0, 1, 1, 0, 1], intercept=True, ridge=0.0)
    >>> w.shape
    (2,)
    """
    X = np.asarray(X, float)
    t = (np.asarray(y) > 0).astype(float)
    A = np.column_stack([X, np.ones(len(t))]) if intercept else X
    w = np.zeros(A.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(A @ w)))
        H = (A * (p * (1.0 - p))[:, None]).T @ A + ridge * np.eye(A.shape[1])
        step = np.linalg.solve(H, A.T @ (t - p) - ridge * w)
        w = w + step
        if np.max(np.abs(step)) < 1e-10:
            break
    return w
