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
thresholding, :func:`tumult_keep_probability` for Tumult's partition selection
(``get_groups``, Tumult Core's ``GeometricPartitionSelection``).  When only *which* keys were
kept is published and each key's count has a law in the model, :func:`kept_keys` is that
likelihood.

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
    "kept_keys",
    "known_keys",
    "tumult_keep_probability",
    "tumult_partition_selection",
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

    Notes
    -----
    This is the likelihood of the released values given how many were released, so it is the
    whole likelihood when the number of released cells says nothing about the parameters,
    as when the number of keys is unknown.  When the number of keys is known, the number of
    suppressed cells is data: give every key, suppressed ones as ``NaN``, to
    :func:`known_keys`.

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


def kept_keys(name, dist, threshold, kept):
    r"""Partition selection with known candidate keys: the likelihood of which keys were kept.

    A key is kept when its count plus the selection's noise is above :math:`\tau`, so with
    the count's law in the model (``dist``: ``NoisyBinomial`` / ``NoisyPoisson`` with the
    selection's noise) a kept key contributes :math:`\log P(Y > \tau)` and a dropped one
    :math:`\log P(Y \le \tau)` (``pm.logccdf`` / ``pm.logcdf``, both exact): for each key,
    :math:`\sum_n P(n)\,P(\text{keep} \mid n)`.  For Google's DP library / PipelineDP:
    ``noise.Laplace(l0 / epsilon)`` and ``threshold=google_laplace_threshold(...)``; for
    Tumult: ``spec, tau = tumult_partition_selection(...)`` and ``threshold=tau - 1`` (Tumult
    keeps counts :math:`\ge \tau`).

    Parameters
    ----------
    name : str
    dist : TensorVariable
        The law of one key's noisy count under the selection's noise (its shape that of
        ``kept``).
    threshold : float
        :math:`\tau`: a key is kept when its noisy count is above it.
    kept : array_like of bool
        For each candidate key, whether it was kept.

    Returns
    -------
    TensorVariable
        ``pm.Potential(name, ...)``: its sum over the keys.  A potential, so prior and
        posterior predictive draws do not include it.
    """
    import pytensor.tensor as pt

    tau = _check_threshold(threshold, _noise_discrete(dist))
    k = np.asarray(kept)
    if k.dtype != bool:
        if not np.issubdtype(k.dtype, np.number) or np.any((k != 0) & (k != 1)):
            raise ValueError(f"`kept` must be booleans (or 0 / 1); got {kept!r}")
        k = k.astype(bool)
    value = pt.as_tensor_variable(np.full(k.shape, tau))
    logp = pt.switch(k, pm.logccdf(dist, value), pm.logcdf(dist, value))
    return pm.Potential(name, logp.sum())


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


def _geometric_log_sf(k, alpha):
    r"""log P(G > k) for the double-sided geometric (discrete Laplace) of scale ``alpha``:
    :math:`p^{k+1}/(1+p)` for :math:`k \ge 0`, :math:`1 - p^{-k}/(1+p)` for :math:`k < 0`,
    :math:`p = e^{-1/\alpha}`."""
    k = np.asarray(k, dtype="float64")
    log_p = -1.0 / alpha
    log1p_p = math.log1p(math.exp(log_p))
    upper = (np.maximum(k, 0.0) + 1.0) * log_p - log1p_p
    lower = np.log1p(-np.exp(-np.minimum(k, -1.0) * log_p - log1p_p))
    return np.where(k >= 0, upper, lower)


def tumult_partition_selection(epsilon, delta, d_in=1):
    r"""Noise scale and threshold of Tumult's partition selection at budget ``(epsilon, delta)``.

    Tumult Analytics' ``QueryBuilder.get_groups`` runs Tumult Core's
    ``create_partition_selection_measurement``
    (https://github.com/opendp/tumult-core, ``src/tmlt/core/measurements/aggregations.py``),
    which builds a ``GeometricPartitionSelection`` (``spark_measurements.py``): each distinct
    group's count of rows plus double-sided geometric noise of scale :math:`\alpha`, kept when
    the noisy count is **at least** :math:`\tau`.  For ``d_in`` :math:`= d > 1` the budget is
    first brought to :math:`d = 1`: :math:`\varepsilon' = \varepsilon/d`,
    :math:`\delta' = \delta/(d\,e^{\varepsilon})`; then :math:`\alpha = 1/\varepsilon'` and
    :math:`\tau = F_\alpha^{-1}(1 - \delta') + 2`, where :math:`F_\alpha^{-1}(q)` is the
    smallest integer :math:`k` with :math:`F_\alpha(k) \ge q`
    (``double_sided_geometric_inverse_cmf_exact``, for :math:`q \ge 1/2`:
    :math:`\lceil -\alpha \log((e^{1/\alpha} + 1)(1 - q)) \rceil`).  Tumult evaluates it in
    exact arithmetic; here it is computed in floating point and the ceiling is checked against
    the CDF, so the two agree unless :math:`-\alpha\log(\cdot)` lies within rounding of an
    integer.

    Returns
    -------
    (DiscreteLaplace, int)
        The noise, :class:`~pymc_dpnoise.noise.DiscreteLaplace` of scale :math:`\alpha`
        (Tumult's geometric noise), and :math:`\tau`.  A kept group's noisy count
        :math:`Y \ge \tau` is :math:`Y > \tau - 1`: pass ``threshold=tau - 1`` to
        :func:`known_keys` / :func:`unknown_keys` for its released counts.

    Examples
    --------
    >>> spec, tau = tumult_partition_selection(1.0, 1e-5)
    >>> spec, tau
    (DiscreteLaplace(scale=1.0), 13)
    """
    from .noise import DiscreteLaplace

    eps, dlt, _ = _check_selection(epsilon, delta, 1)
    if isinstance(d_in, bool) or not isinstance(d_in, int | np.integer) or d_in < 1:
        raise ValueError(f"`d_in` must be a positive integer; got {d_in!r}")
    if d_in > 1:
        eps, dlt = eps / d_in, dlt / (d_in * math.exp(eps))
    alpha = 1.0 / eps
    if dlt > 0.5:
        raise ValueError(
            f"`delta` = {delta!r} gives a per-unit delta of {dlt:g} > 1/2, where Tumult's "
            "inverse CDF takes its other branch; not supported"
        )
    # smallest k with F(k) >= 1 - dlt, i.e. P(G > k) <= dlt; the closed form, then checked
    k = math.ceil(-alpha * math.log((math.exp(1.0 / alpha) + 1.0) * dlt))
    log_dlt = math.log(dlt)
    while float(_geometric_log_sf(k, alpha)) > log_dlt:
        k += 1
    while float(_geometric_log_sf(k - 1, alpha)) <= log_dlt:
        k -= 1
    return DiscreteLaplace(alpha), int(k + 2)


def tumult_keep_probability(count, epsilon, delta, d_in=1):
    r"""Probability that Tumult's partition selection keeps a group of ``count`` rows.

    With :math:`(\alpha, \tau)` from :func:`tumult_partition_selection`, a group of :math:`n`
    rows is kept when :math:`n + G \ge \tau`, :math:`G` double-sided geometric of scale
    :math:`\alpha` (pmf :math:`\frac{1 - p}{1 + p}\,p^{|k|}`, :math:`p = e^{-1/\alpha}`), so

    .. math::

        P(\text{keep} \mid n) = P(G > \tau - 1 - n) =
        \begin{cases} \dfrac{p^{\tau - n}}{1 + p} & n \le \tau - 1 \\[1ex]
        1 - \dfrac{p^{n + 1 - \tau}}{1 + p} & n \ge \tau. \end{cases}

    ``get_groups`` releases the kept keys without their counts, so this is the likelihood of
    "kept" for each released key (and :math:`1 - P` of "dropped" for a key known to exist but
    absent).  A group of one row is kept with probability :math:`P(G \ge \tau - 1) \le
    \delta'`, Tumult's privacy guarantee (its ``privacy_function``: :math:`\delta = 1 -
    F_\alpha(\tau - 2)`).

    Parameters
    ----------
    count : array_like
        Number of rows in each group, :math:`n \ge 0` (integers).
    epsilon, delta : float
        The ``get_groups`` budget (:math:`\varepsilon > 0`, :math:`0 < \delta < 1`).
    d_in : int
        Tumult's ``d_in`` (rows one person can add), as in :func:`tumult_partition_selection`.

    Returns
    -------
    numpy.ndarray or float

    Examples
    --------
    >>> float(tumult_keep_probability(1, 1.0, 1e-5)) <= 1e-5
    True
    """
    spec, tau = tumult_partition_selection(epsilon, delta, d_in)
    n = np.asarray(count, dtype="float64")
    if np.any(~np.isfinite(n)) or np.any(n < 0) or np.any(n != np.round(n)):
        raise ValueError(f"`count` must be whole numbers >= 0; got {count!r}")
    out = np.exp(_geometric_log_sf(tau - 1 - n, spec.param))
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
