"""Release side of perturbed-input regression (LDP paper, Sections 3.2.3, 4.6; Supplement 12).

Each person clips their feature vector to L2 norm ``R`` and their response to ``[-R_y, R_y]``,
then releases the features with the Gaussian mechanism (L2 sensitivity 2R, Supplement 12.2,
eq. 45) and the response with the Gaussian mechanism (sensitivity 2 R_y, linear regression) or
randomized response (labels, logistic regression).  One budget ε is split between the two
releases: a share ``c`` for the response and ``1 - c`` for the features (the paper uses
c = 0.5).  The reports are the rows ``[z_x, z_y]`` modelled by
:class:`~pymc_dpnoise.distributions.regression.PerturbedLinReg` and
:class:`~pymc_dpnoise.distributions.regression.PerturbedLogReg`.

Simulation grade, like the rest of :mod:`pymc_dpnoise.mechanisms`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..validation import check_finite, check_positive
from .core import _rng, analytic_gaussian_sigma, clip_rows, randomized_response, release_guard

__all__ = [
    "PerturbedRelease",
    "clip_response",
    "clip_rows",
    "perturb_linreg",
    "perturb_logreg",
    "split_epsilon",
]


class PerturbedRelease(NamedTuple):
    """Reports ``(N, d + 1)`` and the noise parameters the model needs."""

    reports: np.ndarray
    sigma_x: float
    sigma_y: float | None  # Gaussian noise sd of the response (linear regression)
    epsilon_y: float | None  # randomized-response budget of the label (logistic regression)


def clip_response(y, R_y):
    """Clip each response to ``[-R_y, R_y]``."""
    y = np.asarray(y, dtype=float)
    check_finite("y", y)
    check_positive("R_y", R_y)
    return np.clip(y, -float(R_y), float(R_y))


def split_epsilon(epsilon, c=0.5):
    """Split one budget: ``(epsilon_x, epsilon_y) = ((1 - c) ε, c ε)``; 0 < c < 1.

    Examples
    --------
    >>> split_epsilon(2.0, 0.5)
    (1.0, 1.0)
    """
    check_positive("epsilon", epsilon)
    c = float(c)
    if not 0.0 < c < 1.0:
        raise ValueError(
            f"`c` (the share of epsilon spent on the response) must be in (0, 1); got {c}"
        )
    return (1.0 - c) * float(epsilon), c * float(epsilon)


@release_guard(
    records="X",
    event_ndim=1,
    privacy={
        "epsilon": "epsilon",
        "delta": "delta",
        "R": "positive",
        "R_y": "positive",
        "c": "probability",
    },
    per_record=("y",),
    scalar=("epsilon", "delta", "R", "R_y", "c"),
    output=lambda rel: rel.reports,
)
def perturb_linreg(X, y, epsilon, delta, rng, *, R=1.0, R_y=2.0, c=0.5):
    """LDP release for linear regression: clip, then the Gaussian mechanism on x and on y.

    Features: rows clipped to L2 norm ``R``, noise sd ``analytic_gaussian_sigma((1-c) ε, δ/2,
    2R)`` per coordinate.  Response: clipped to ``[-R_y, R_y]``, noise sd
    ``analytic_gaussian_sigma(c ε, δ/2, 2 R_y)``.  By basic composition each report is
    (ε, δ)-LDP (the paper's Wine experiment: R = 1, R_y = 2, c = 0.5).

    Returns
    -------
    PerturbedRelease
        ``reports`` (N, d + 1), ``sigma_x``, ``sigma_y`` (``epsilon_y`` is None).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> rel = perturb_linreg(rng.normal(size=(5, 2)) * 0.3, rng.normal(size=5), 1.0, 1e-5, rng)
    >>> rel.reports.shape, rel.sigma_x == analytic_gaussian_sigma(0.5, 0.5e-5, 2.0)
    ((5, 3), True)
    """
    rng = _rng(rng)
    X = clip_rows(X, R)
    y = clip_response(y, R_y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"`y` must have shape ({X.shape[0]},) to match `X`; got {y.shape}")
    eps_x, eps_y = split_epsilon(epsilon, c)
    sigma_x = float(analytic_gaussian_sigma(eps_x, 0.5 * delta, 2.0 * float(R)))
    sigma_y = float(analytic_gaussian_sigma(eps_y, 0.5 * delta, 2.0 * float(R_y)))
    zx = X + rng.normal(0.0, sigma_x, size=X.shape)
    zy = y + rng.normal(0.0, sigma_y, size=y.shape)
    return PerturbedRelease(np.column_stack([zx, zy]), sigma_x, sigma_y, None)


@release_guard(
    records="X",
    event_ndim=1,
    privacy={"epsilon": "epsilon", "delta": "delta", "R": "positive", "c": "probability"},
    per_record=("labels",),
    scalar=("epsilon", "delta", "R", "c"),
    output=lambda rel: rel.reports,
)
def perturb_logreg(X, labels, epsilon, delta, rng, *, R=1.0, c=0.5):
    """LDP release for logistic regression: Gaussian mechanism on x, randomized response on y.

    Features: rows clipped to L2 norm ``R``, noise sd ``analytic_gaussian_sigma((1-c) ε, δ,
    2R)``.  Labels in {0, 1}: randomized response with budget ``c ε`` (keep probability
    ``e^{cε}/(1+e^{cε})``, pure DP).  Each report is (ε, δ)-LDP (the paper's Adult experiment:
    R = 1, c = 0.5).

    Returns
    -------
    PerturbedRelease
        ``reports`` (N, d + 1) with the reported label last, ``sigma_x``, ``epsilon_y``.
    """
    rng = _rng(rng)
    X = clip_rows(X, R)
    lab = np.asarray(labels)
    if lab.shape != (X.shape[0],):
        raise ValueError(f"`labels` must have shape ({X.shape[0]},) to match `X`; got {lab.shape}")
    if lab.dtype.kind not in "biuf" or not np.all((lab == 0) | (lab == 1)):
        raise ValueError("`labels` must contain only 0 and 1")
    eps_x, eps_y = split_epsilon(epsilon, c)
    sigma_x = float(analytic_gaussian_sigma(eps_x, delta, 2.0 * float(R)))
    zx = X + rng.normal(0.0, sigma_x, size=X.shape)
    zy = randomized_response(lab, eps_y, rng)
    return PerturbedRelease(np.column_stack([zx, zy.astype(float)]), sigma_x, None, eps_y)
