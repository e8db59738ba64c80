"""Baselines for frequency oracles: the de-biased point estimate made consistent, and the
noise-ignoring Dirichlet-multinomial model.

* :func:`projected_estimate` — the comparison method of LDP Fig. 3: the unbiased OUE (or
  other unary-encoding / k-RR) estimate, projected onto the simplex by least squares.
* :func:`rounded_counts` and :func:`naive_histogram` — what a user does when the estimated
  (or reported) counts are treated as if they were the true counts: a conjugate
  Dirichlet-multinomial posterior that ignores the privacy noise.  Used as the "naive" curve
  in the calibration comparisons.
"""

from __future__ import annotations

import numpy as np

from ..mechanisms.frequency import (
    krr_estimate,
    oue_estimate,
    project_simplex,
    sue_probabilities,
    unary_encoding_estimate,
)

__all__ = ["naive_histogram", "projected_estimate", "rounded_counts"]


def projected_estimate(reports, epsilon, mechanism="oue", k=None):
    """Unbiased frequency estimate projected onto the simplex (least squares).

    Parameters
    ----------
    reports : array_like
        ``(N, k)`` bit vectors for ``"oue"``/``"sue"``, ``(N,)`` items for ``"krr"``.
    epsilon : float or array_like
        Budget (per report allowed).
    mechanism : {"oue", "sue", "krr"}
    k : int, optional
        Number of items (needed for ``"krr"``).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_dpnoise.mechanisms import oue_perturb
    >>> rng = np.random.default_rng(0)
    >>> z = oue_perturb(rng.choice(3, 200, p=[0.7, 0.2, 0.1]), 3, 0.5, rng)
    >>> f = projected_estimate(z, 0.5)
    >>> bool(np.all(f >= 0)) and bool(np.isclose(f.sum(), 1.0))
    True
    """
    if mechanism == "oue":
        est = oue_estimate(reports, epsilon)
    elif mechanism == "sue":
        est = unary_encoding_estimate(reports, *sue_probabilities(epsilon))
    elif mechanism == "krr":
        if k is None:
            raise ValueError("`k` is required for mechanism='krr'")
        est = krr_estimate(reports, k, epsilon)
    else:
        raise ValueError(f"`mechanism` must be 'oue', 'sue' or 'krr'; got {mechanism!r}")
    return project_simplex(est)


def rounded_counts(frequencies, n):
    """Integer counts summing to ``n`` closest to ``n * frequencies`` (largest remainder)."""
    f = np.asarray(frequencies, dtype=float)
    if np.any(f < 0) or not np.isclose(f.sum(), 1.0):
        raise ValueError("`frequencies` must be non-negative and sum to 1")
    raw = n * f
    counts = np.floor(raw).astype(np.int64)
    short = int(n - counts.sum())
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[:short]] += 1
    return counts


def naive_histogram(name, p, counts):
    """The noise-ignoring model: ``counts ~ Multinomial(sum(counts), p)`` (call in a model).

    ``counts`` are estimated or reported counts treated as if they were the true counts.
    """
    import pymc as pm

    c = counts
    total = c.sum() if hasattr(c, "sum") else np.sum(c)
    return pm.Multinomial(name, n=total, p=p, observed=c)
