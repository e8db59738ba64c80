"""Noise pmfs written from their definitions (not from :mod:`pymc_dpnoise.noise`), and a
chi-square check of integer draws against a pmf; used by the tests of real releases."""

from __future__ import annotations

import numpy as np
from scipy import stats


def window(param):
    """Integers carrying all the mass of a noise of scale / sigma ``param`` (beyond e^-40)."""
    w = int(np.ceil(40 * param)) + 40
    return np.arange(-w, w + 1)


def pmf_discrete_laplace(k, b):
    return np.tanh(0.5 / b) * np.exp(-np.abs(k) / b)


def pmf_discrete_gaussian(k, s):
    w = np.exp(-0.5 * (window(s) / s) ** 2)
    return np.exp(-0.5 * (k / s) ** 2) / w.sum()


def pmf_rounded_laplace(k, b):
    return stats.laplace(scale=b).cdf(k + 0.5) - stats.laplace(scale=b).cdf(k - 0.5)


def pmf_rounded_normal(k, s):
    return stats.norm(scale=s).cdf(k + 0.5) - stats.norm(scale=s).cdf(k - 0.5)


PMFS = {
    "laplace": pmf_discrete_laplace,
    "gaussian": pmf_discrete_gaussian,
    "rounded_laplace": pmf_rounded_laplace,
    "rounded_normal": pmf_rounded_normal,
}


def chisq_pvalue(draws, support, probs):
    """Chi-square p-value of integer ``draws`` against ``probs`` on the integers ``support``.

    Every integer with an expected count of at least 5 is a bin; the rest of the support is
    pooled into the two end bins (the pmfs here are unimodal, so the kept range is contiguous).
    """
    probs = np.asarray(probs, dtype=float) / np.sum(probs)
    n = draws.size
    keep = np.flatnonzero(n * probs >= 5)
    lo, hi = int(support[keep[0]]), int(support[keep[-1]])
    inner = probs[(support > lo) & (support < hi)]
    expected = n * np.concatenate(
        [[probs[support <= lo].sum()], inner, [probs[support >= hi].sum()]]
    )
    observed = np.bincount(np.clip(draws, lo, hi) - lo, minlength=hi - lo + 1)
    return stats.chisquare(observed, expected).pvalue
