r"""Thresholded releases: cells published only when their noisy count clears a threshold.

A system that publishes a cell only if its noisy count :math:`Y = S + N` exceeds :math:`\tau`
releases two kinds of tables, and each has an exact likelihood built on the log CDF of
:class:`~pymc_dpnoise.NoisyBinomial` / :class:`~pymc_dpnoise.NoisyPoisson`:

* **known keys** (every cell's key is public; suppressed cells are marked missing): a
  suppressed cell is the event :math:`Y \le \tau`, an atom like a clamp's, with probability
  :math:`P(S + N \le \tau)`; a released cell has the noisy-count pmf / pdf.  This is
  ``pm.Censored(dist, lower=tau)`` with the suppressed cells set to :math:`\tau`
  (:func:`known_keys`).
* **unknown keys** (only released cells are seen): each released value follows the
  noisy-count law truncated to :math:`Y > \tau`, ``pm.Truncated`` (:func:`unknown_keys`);
  the number of suppressed cells is not observed.

Reading suppressed cells as zero, or released cells as exact, biases the counts upward (the
released ones were selected for large noise).  Where a system documents its partition
selection, the probability that a key with a given count is kept is the likelihood of
"kept": :func:`google_laplace_keep_probability` for Google's DP library / PipelineDP's Laplace
thresholding.

Examples
--------
>>> import numpy as np, pymc as pm, pymc_dpnoise as pmd
>>> from pymc_dpnoise import noise, thresholds
>>> release = np.array([np.nan, 14.0, np.nan, 22.0])  # NaN: suppressed (noisy count <= 10)
>>> with pm.Model() as model:
...     mu = pm.Gamma("mu", 2.0, 0.1)
...     dist = pmd.NoisyPoisson.dist(mu, noise=noise.DiscreteLaplace(2.0))
...     y = thresholds.known_keys("y", dist, threshold=10, observed=release)
>>> bool(np.isfinite(model.compile_logp()({"mu_log__": np.log(12.0)})))
True
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm

__all__ = [
    "google_laplace_keep_probability",
    "google_laplace_threshold",
    "known_keys",
    "unknown_keys",
]


def _noise_discrete(dist) -> bool:
    from .distributions.noisy_counts import noise_of

    return bool(noise_of(dist).discrete)


def _check_threshold(threshold, discrete):
    t = np.asarray(threshold)
    if t.dtype == bool or not np.issubdtype(t.dtype, np.number) or t.ndim:
        raise TypeError(f"`threshold` must be a number; got {threshold!r}")
    t = float(t)
    if not math.isfinite(t):
        raise ValueError(f"`threshold` must be finite; got {threshold!r}")
    if discrete and t != round(t):
        raise ValueError(f"`threshold` must be an integer for integer noise; got {threshold!r}")
    return t


def known_keys(name, dist, threshold, observed, **kwargs):
    r"""A thresholded release with known keys: suppressed cells (``NaN``) are :math:`Y \le \tau`.

    Parameters
    ----------
    name : str
    dist : TensorVariable
        ``pmd.NoisyBinomial.dist(...)`` or ``pmd.NoisyPoisson.dist(...)``: the law of one
        cell's noisy count (its shape that of ``observed``).
    threshold : float
        :math:`\tau`: a cell is released only if its noisy count is above it.
    observed : array_like
        The released values, ``NaN`` where a cell was suppressed; released values must be
        above ``threshold``.
    **kwargs
        Passed to ``pm.Censored`` (e.g. ``dims``).

    Returns
    -------
    TensorVariable
        ``pm.Censored(name, dist, lower=threshold, upper=None)`` observed at the release
        with suppressed cells at :math:`\tau`: its logp is :math:`\log P(Y \le \tau)` there
        and the noisy count's log pmf / pdf elsewhere.
    """
    tau = _check_threshold(threshold, _noise_discrete(dist))
    obs = np.asarray(observed, dtype="float64")
    released = ~np.isnan(obs)
    if np.any(obs[released] <= tau):
        raise ValueError(
            f"`observed` has released values at or below `threshold`={tau:g} "
            f"({obs[released & (obs <= tau)][:5]}): a released cell's noisy count is above it"
        )
    filled = np.where(released, obs, tau)
    return pm.Censored(name, dist, lower=tau, upper=None, observed=filled, **kwargs)


def unknown_keys(name, dist, threshold, observed, **kwargs):
    r"""A thresholded release with unknown keys: the released values, truncated to :math:`Y > \tau`.

    Parameters
    ----------
    name, dist, threshold
        As in :func:`known_keys`.
    observed : array_like
        The released values (all above ``threshold``).
    **kwargs
        Passed to ``pm.Truncated``.

    Returns
    -------
    TensorVariable
        ``pm.Truncated(name, dist, lower=threshold, upper=None)``: the log pmf / pdf minus
        :math:`\log P(Y > \tau)`.  The noisy counts are float-typed even for integer noise,
        so PyMC normalises by :math:`1 - P(Y \le \tau)` (its continuous rule), which is the
        right event for both kinds; PyMC's truncated *draws* (prior / posterior predictive)
        keep a draw equal to :math:`\tau` for integer noise, so simulate releases with the
        mechanism (draw, then drop cells at or below :math:`\tau`) rather than from this
        variable.
    """
    discrete = _noise_discrete(dist)
    tau = _check_threshold(threshold, discrete)
    obs = np.asarray(observed, dtype="float64")
    if np.any(np.isnan(obs)) or np.any(obs <= tau):
        raise ValueError(
            f"`observed` must hold only released values, all above `threshold`={tau:g}"
        )
    return pm.Truncated(name, dist, lower=tau, upper=None, observed=obs, **kwargs)


def _adjusted_delta(delta, l0):
    # 1 - (1 - delta)^(1/l0), stably (the library's CalculateAdjustedDelta)
    return -math.expm1(math.log1p(-delta) / l0)


def google_laplace_threshold(epsilon, delta, max_partitions_contributed=1) -> float:
    r"""The threshold of Google's DP library / PipelineDP Laplace partition selection.

    ``LaplacePartitionSelection::CalculateThreshold`` in
    https://github.com/google/differential-privacy/blob/main/cc/algorithms/partition-selection.h:
    with :math:`b = \ell_0/\varepsilon` and :math:`\delta' = 1 - (1 - \delta)^{1/\ell_0}`,
    :math:`T = 1 - b\log(2\delta')` for :math:`\delta \le 1/2`, else :math:`T = 1 +
    b\log(2(1 - \delta'))` (:math:`\ell_0` = ``max_partitions_contributed``).
    """
    eps, dlt, l0 = _check_selection(epsilon, delta, max_partitions_contributed)
    b, adj = l0 / eps, _adjusted_delta(dlt, l0)
    if dlt > 0.5:
        return 1.0 + b * math.log(2.0 * (1.0 - adj))
    return 1.0 - b * math.log(2.0 * adj)


def google_laplace_keep_probability(count, epsilon, delta, max_partitions_contributed=1):
    r"""Probability that Google's DP library / PipelineDP keeps a partition of ``count`` users.

    Laplace partition selection
    (https://github.com/google/differential-privacy/blob/main/cc/algorithms/partition-selection.h,
    ``LaplacePartitionSelection``) keeps a partition when its number of privacy units plus
    Laplace noise of scale :math:`b = \ell_0/\varepsilon` exceeds the threshold :math:`T`
    (:func:`google_laplace_threshold`), so

    .. math::

        P(\text{keep} \mid n) = P(n + L > T) =
        \begin{cases} \tfrac12 e^{-(T - n)/b} & n \le T \\
        1 - \tfrac12 e^{-(n - T)/b} & n > T. \end{cases}

    By construction a partition of one user is kept with probability :math:`\delta'`.  The
    library draws its Laplace noise on a fine lattice; the continuous law is used here.  With
    unknown keys this is the likelihood of "kept" for each released key (and of "dropped",
    :math:`1 - P`, for a key known to exist but absent).

    Parameters
    ----------
    count : array_like
        Number of privacy units (users) in each partition, :math:`n \ge 0`.
    epsilon, delta : float
        The partition selection's budget (:math:`\varepsilon > 0`, :math:`0 < \delta < 1`).
    max_partitions_contributed : int
        :math:`\ell_0`, partitions per user.

    Returns
    -------
    numpy.ndarray or float

    Examples
    --------
    >>> round(google_laplace_keep_probability(1, 1.0, 1e-5), 12)  # one user: delta
    1e-05
    """
    eps, dlt, l0 = _check_selection(epsilon, delta, max_partitions_contributed)
    n = np.asarray(count, dtype="float64")
    if np.any(~np.isfinite(n)) or np.any(n < 0):
        raise ValueError(f"`count` must be finite and >= 0; got {count!r}")
    t, b = google_laplace_threshold(eps, dlt, l0), l0 / eps
    out = np.where(n <= t, 0.5 * np.exp(-(t - n) / b), -0.5 * np.expm1(-(n - t) / b) + 0.5)
    return float(out) if out.ndim == 0 else out


def _check_selection(epsilon, delta, l0):
    for nm, v in (("epsilon", epsilon), ("delta", delta)):
        if isinstance(v, bool) or not isinstance(v, int | float | np.number):
            raise TypeError(f"`{nm}` must be a number; got {v!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"`epsilon` must be finite and > 0; got {epsilon!r}")
    if not 0 < delta < 1:
        raise ValueError(f"`delta` must be in (0, 1); got {delta!r}")
    if isinstance(l0, bool) or not isinstance(l0, int | np.integer) or l0 < 1:
        raise ValueError(f"`max_partitions_contributed` must be a positive integer; got {l0!r}")
    return float(epsilon), float(delta), int(l0)
