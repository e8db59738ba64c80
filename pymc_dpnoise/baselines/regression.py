"""LDP-SGD, the private baseline of the LDP paper's regression experiments (Section 4.2).

Adapted from Wang et al. (2019b) as the paper describes: the users are partitioned into groups of
size :math:`G = \\Omega(d \\log d / \\epsilon^2)`; each user takes part once, in one group.  The
aggregator sends the current θ to group i, each user of the group returns the gradient of their
own loss, clipped to L2 norm 1 and perturbed with Gaussian noise calibrated to L2 sensitivity
Δ2 = 2 (``analytic_gaussian_sigma(ε, δ, 2)``), and the aggregator takes one step along the mean
noisy gradient before moving on to group i + 1.  Each user sends one message, so each is
(ε, δ)-LDP whatever the number of steps.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..mechanisms.core import analytic_gaussian_sigma
from ..validation import check_finite, check_positive, check_rng

__all__ = ["ldp_sgd", "ldp_sgd_group_size"]


def ldp_sgd_group_size(d: int, epsilon: float, n: int, constant: float = 1.0) -> int:
    """``ceil(constant * d * max(log d, 1) / ε²)``, at least 1 and at most ``n``."""
    check_positive("epsilon", epsilon)
    g = math.ceil(constant * d * max(math.log(d), 1.0) / float(epsilon) ** 2)
    return int(min(max(g, 1), n))


def _grad(loss, theta, X, y):
    u = X @ theta
    if loss == "squared":
        r = u - y
    else:  # logistic, y in {0, 1}
        r = special.expit(u) - y  # no overflow warning for very negative u
    return r[:, None] * X


def ldp_sgd(
    X,
    y,
    epsilon,
    delta,
    rng,
    *,
    loss="squared",
    group_size=None,
    group_constant=1.0,
    lr=1.0,
    clip=1.0,
    theta0=None,
    shuffle=True,
):
    r"""Fit θ of a linear (``loss="squared"``) or logistic (``loss="logistic"``) model by LDP-SGD.

    Parameters
    ----------
    X : array_like, shape (N, d)
        Clean features (each user's own; they never leave the user except through a gradient).
    y : array_like, shape (N,)
        Responses (``loss="squared"``) or labels in {0, 1} (``loss="logistic"``).
    epsilon, delta : float
        Per-user budget of the one gradient release (Gaussian mechanism, Δ2 = 2·clip).
    rng : numpy.random.Generator
    group_size : int, optional
        Users per step; default :func:`ldp_sgd_group_size` with ``group_constant``.
    lr : float
        Step size (of the mean clipped noisy gradient).
    clip : float
        Each user's gradient is clipped to this L2 norm (the paper: 1).
    theta0 : array_like, optional
        Starting point (zeros by default).
    shuffle : bool
        Randomly assign users to groups.

    Returns
    -------
    dict
        ``theta`` (final), ``path`` (θ after each step), ``group_size``, ``sigma`` (noise sd per
        coordinate of one user's gradient), ``steps``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20000, 2)) * 0.5
    >>> y = X @ np.array([1.0, -1.0]) + 0.1 * rng.normal(size=20000)
    >>> fit = ldp_sgd(X, y, 50.0, 1e-5, rng, group_size=200)
    >>> bool(np.allclose(fit["theta"], [1.0, -1.0], atol=0.25))
    True
    """
    rng = check_rng(rng)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"`X` must have shape (N, d); got {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"`y` must have shape ({X.shape[0]},); got {y.shape}")
    check_finite("X", X)
    check_finite("y", y)
    if loss not in ("squared", "logistic"):
        raise ValueError(f"`loss` must be 'squared' or 'logistic'; got {loss!r}")
    if loss == "logistic" and not np.all((y == 0) | (y == 1)):
        raise ValueError("`y` must contain only 0 and 1 for loss='logistic'")
    check_positive("lr", lr)
    check_positive("clip", clip)
    n, d = X.shape
    if group_size is None:
        group_size = ldp_sgd_group_size(d, epsilon, n, group_constant)
    group_size = int(group_size)
    if not 1 <= group_size <= n:
        raise ValueError(f"`group_size` must be in [1, N = {n}]; got {group_size}")
    sigma = float(analytic_gaussian_sigma(epsilon, delta, 2.0 * float(clip)))
    order = rng.permutation(n) if shuffle else np.arange(n)
    theta = np.zeros(d) if theta0 is None else np.asarray(theta0, dtype=float).copy()
    path = []
    for start in range(0, n - group_size + 1, group_size):
        idx = order[start : start + group_size]
        g = _grad(loss, theta, X[idx], y[idx])
        norms = np.linalg.norm(g, axis=1, keepdims=True)
        g = g * np.minimum(1.0, clip / np.maximum(norms, np.finfo(float).tiny))
        g = g + rng.normal(0.0, sigma, size=g.shape)  # each user's own noise
        theta = theta - lr * g.mean(axis=0)
        path.append(theta.copy())
    return {
        "theta": theta,
        "path": np.asarray(path).reshape(-1, d),
        "group_size": group_size,
        "sigma": sigma,
        "steps": len(path),
    }
