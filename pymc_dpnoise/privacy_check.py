r"""Empirical privacy checks: the largest log-ratio of output frequencies on neighbouring data.

A mechanism :math:`M` is ε-DP if :math:`P(M(D)\in B) \le e^{\varepsilon}P(M(D')\in B)` for all
neighbouring :math:`D, D'` and events :math:`B`.  Any discretisation :math:`f` of the output is
post-processing, so the bins of :math:`f(M(D))` must satisfy the same inequality.
:func:`empirical_privacy_loss` runs the mechanism many times on both data sets, histograms
:math:`f` and reports the largest :math:`|\log\hat p_D(b) / \hat p_{D'}(b)|` over the bins with
enough draws, with its Monte Carlo standard error (delta method:
:math:`\mathrm{se}(\log\hat p) \approx \sqrt{(1-p)/(Np)}`).

Such a check can only *refute* a privacy claim (a log-ratio significantly above ε), never prove
it: it looks at one pair of data sets and one discretisation.  Choose both to make the bound
nearly tight (neighbours that move the released statistic the most; bins in the tails where
the density ratio is largest), and check the test's power on a mechanism that is known to
violate the claim.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["PrivacyCheck", "empirical_privacy_loss"]


@dataclass(frozen=True)
class PrivacyCheck:
    """Result of :func:`empirical_privacy_loss`.

    Attributes
    ----------
    max_log_ratio : float
        Largest estimated :math:`|\\log p_D(b)/p_{D'}(b)|` over bins with ``min_count`` draws on
        both sides.
    std_error : float
        Monte Carlo standard error of that bin's estimate.
    bin : object
        The bin where it is attained.
    lower_bound : float
        Largest ``estimate - z * se`` over those bins, and over bins seen at least
        ``min_count`` times on one side only (there with the 95% upper bound ``3/N`` of the
        other side's probability): the evidence of a violation.  ε-DP is refuted at level
        ``z`` if ``lower_bound > epsilon``.
    n_bins : int
        Number of bins compared.
    n_draws : int
        Draws per data set.
    z : float
        Multiplier used for ``lower_bound``.
    """

    max_log_ratio: float
    std_error: float
    bin: object
    lower_bound: float
    n_bins: int
    n_draws: int
    z: float

    def consistent_with(self, epsilon: float) -> bool:
        """True unless the check refutes ε-DP (``lower_bound > epsilon``)."""
        return self.lower_bound <= epsilon


def _label(v):
    if isinstance(v, np.ndarray):
        return tuple(v.ravel().tolist())
    return v


def empirical_privacy_loss(
    mechanism: Callable,
    data,
    neighbour,
    statistic: Callable,
    n_draws: int,
    rng: np.random.Generator,
    *,
    min_count: int = 50,
    z: float = 4.0,
) -> PrivacyCheck:
    r"""Largest log-ratio of the binned output frequencies of ``mechanism`` on two data sets.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, rng)`` returns one output (e.g. a
        :class:`~pymc_dpnoise.posterior_release.release.Release`).
    data, neighbour
        Two neighbouring data sets.
    statistic : callable
        Maps one output to a hashable bin label (an int, a tuple; arrays are converted to
        tuples).  This is the discretisation of the output space.
    n_draws : int
        Runs of the mechanism on each data set.
    rng : numpy.random.Generator
    min_count : int
        Bins with fewer draws on both sides are ignored (their ratio is too noisy).
    z : float
        Multiplier of the standard error in ``lower_bound``.  Taking the maximum over bins is
        a multiple comparison; 4 keeps false alarms rare for up to ~100 bins.

    Returns
    -------
    PrivacyCheck

    Examples
    --------
    Randomized response on one bit, ε = 1 (true log-ratio exactly 1):

    >>> import numpy as np
    >>> from pymc_dpnoise.mechanisms import randomized_response
    >>> mech = lambda b, rng: int(randomized_response([b], 1.0, rng)[0])
    >>> res = empirical_privacy_loss(mech, 0, 1, lambda o: o, 4000, np.random.default_rng(0))
    >>> bool(abs(res.max_log_ratio - 1.0) < 5 * res.std_error), res.consistent_with(1.0)
    (True, True)
    """
    if not callable(mechanism):
        raise TypeError("`mechanism` must be callable as mechanism(data, rng)")
    if not callable(statistic):
        raise TypeError("`statistic` must be callable on one output")
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 1:
        raise ValueError(f"`n_draws` must be an integer >= 1; got {n_draws!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError("`rng` must be a numpy.random.Generator")
    counts = []
    for d in (data, neighbour):
        counts.append(Counter(_label(statistic(mechanism(d, rng))) for _ in range(n_draws)))
    c1, c2 = counts
    N = float(n_draws)
    best = (-math.inf, math.nan, None)
    lower = -math.inf
    n_bins = 0
    for b in set(c1) | set(c2):
        k1, k2 = c1.get(b, 0), c2.get(b, 0)
        if k1 >= min_count and k2 >= min_count:
            n_bins += 1
            p1, p2 = k1 / N, k2 / N
            lr = abs(math.log(p1 / p2))
            se = math.sqrt((1 - p1) / k1 + (1 - p2) / k2)
            if lr > best[0]:
                best = (lr, se, b)
            lower = max(lower, lr - z * se)
        elif max(k1, k2) >= min_count:
            # one side (almost) never produces this bin: 3/N bounds its probability (95%)
            k = max(k1, k2)
            p = k / N
            other = max(min(k1, k2), 3.0) / N
            lower = max(lower, math.log(p / other) - z * math.sqrt((1 - p) / k))
    if n_bins == 0:
        raise ValueError(
            f"no bin has `min_count` = {min_count} draws on both sides: use coarser bins or "
            "more `n_draws`"
        )
    return PrivacyCheck(best[0], best[1], best[2], lower, n_bins, int(n_draws), float(z))
