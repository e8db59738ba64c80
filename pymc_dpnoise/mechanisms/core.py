"""Clipping, the Laplace and Gaussian mechanisms, analytic Gaussian calibration, randomized response."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from .._validation import check_broadcast, check_finite, check_less, check_positive

__all__ = [
    "analytic_gaussian_sigma",
    "as_matrix",
    "classical_gaussian_sigma",
    "clip",
    "clip_rows",
    "clipped_sensitivity",
    "gaussian_mechanism",
    "laplace_mechanism",
    "perturb_clipped",
    "perturb_clipped_exponential",
    "randomized_response",
]


def _rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"`rng` must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)); "
            f"got {type(rng).__name__}"
        )
    return rng


def _same_shape(shape, values_shape, name="values"):
    if tuple(shape) != tuple(values_shape):
        raise ValueError(
            f"the noise parameters broadcast to shape {tuple(shape)}, larger than `{name}` "
            f"{tuple(values_shape)}: give one parameter per record at most"
        )


def _values(name, values):
    v = np.asarray(values, dtype=float)
    check_finite(name, v)
    return v


def clip(values, lower, upper):
    """Clip ``values`` to ``[lower, upper]`` (elementwise; bounds broadcast).

    Raises ``ValueError`` for non-finite values or ``lower >= upper``.

    Examples
    --------
    >>> clip([-3.0, 0.5, 9.0], -1.0, 1.0)
    array([-1. ,  0.5,  1. ])
    """
    v = _values("values", values)
    check_less("lower", lower, "upper", upper)
    check_broadcast(values=v, lower=lower, upper=upper)
    return np.clip(v, lower, upper)


def as_matrix(name, X):
    """``X`` as a finite float 2-d array ``(records, covariates)``; ValueError naming ``name``."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"`{name}` must be a 2-d array (records, covariates); got shape {X.shape}")
    check_finite(name, X)
    return X


def clip_rows(X, R):
    """Scale each row of ``X`` down to L2 norm at most ``R`` (rows inside are unchanged).

    The L2 analogue of :func:`clip`: after it, one record's contribution to any statistic
    built from the rows is bounded, which is what the sensitivities assume.

    Examples
    --------
    >>> clip_rows([[3.0, 4.0], [0.3, 0.4]], 1.0)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    X = as_matrix("X", X)
    check_positive("R", R)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    scale = np.minimum(1.0, float(R) / np.maximum(norms, np.finfo(float).tiny))
    return X * scale


def clipped_sensitivity(lower, upper):
    """L1 (= L2) sensitivity of one scalar clipped to ``[lower, upper]``: ``upper - lower``."""
    check_less("lower", lower, "upper", upper)
    return np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float)


def laplace_mechanism(values, sensitivity, epsilon, rng):
    """Release ``values + Laplace(0, sensitivity / epsilon)``: ε-DP for L1 sensitivity ``sensitivity``.

    Parameters
    ----------
    values : array_like
        The statistics to release.
    sensitivity : float or array_like
        L1 sensitivity (> 0), broadcast against ``values``.
    epsilon : float or array_like
        Privacy budget (> 0), broadcast against ``values`` (one per record for personalised budgets).
    rng : numpy.random.Generator

    Examples
    --------
    >>> import numpy as np
    >>> z = laplace_mechanism(np.zeros(3), 1.0, 1.0, np.random.default_rng(0))
    >>> z.shape
    (3,)
    """
    rng = _rng(rng)
    v = _values("values", values)
    check_positive("sensitivity", sensitivity)
    check_positive("epsilon", epsilon)
    shape = check_broadcast(values=v, sensitivity=sensitivity, epsilon=epsilon)
    _same_shape(shape, v.shape)
    scale = np.asarray(sensitivity, dtype=float) / np.asarray(epsilon, dtype=float)
    return v + rng.laplace(0.0, np.broadcast_to(scale, shape), size=shape)


def perturb_clipped(x, lower, upper, epsilon, rng):
    """Local DP release of a bounded scalar: clip to ``[lower, upper]``, add Laplace noise.

    The noise scale is ``(upper - lower) / epsilon`` (the sensitivity of a value clipped to the
    interval), so each report is ε-LDP.  This is the mechanism that
    :class:`~pymc_dpnoise.LaplacePerturbedClippedNormal` and
    :class:`~pymc_dpnoise.LaplacePerturbedClippedExponential` model.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> z = perturb_clipped(rng.normal(size=5), -2.0, 2.0, 1.0, rng)
    >>> z.shape
    (5,)
    """
    rng = _rng(rng)
    clipped = clip(x, lower, upper)
    return laplace_mechanism(clipped, clipped_sensitivity(lower, upper), epsilon, rng)


def perturb_clipped_exponential(x, upper, epsilon, rng):
    """Local DP release of a non-negative value: clip to ``[0, upper]``, add Laplace(upper/epsilon)."""
    check_positive("upper", upper)
    return perturb_clipped(x, 0.0, upper, epsilon, rng)


def _log_delta(sigma: float, epsilon: float, sens: float) -> float:
    # log of delta(sigma) = Phi(A) - e^eps Phi(B), Balle & Wang (2018) Thm. 8, in log space
    a = sens / (2.0 * sigma) - epsilon * sigma / sens
    b = -sens / (2.0 * sigma) - epsilon * sigma / sens
    la = float(log_ndtr(a))
    lb = float(log_ndtr(b)) + epsilon
    d = lb - la
    if d >= 0.0:
        return -math.inf
    # log(exp(la) - exp(lb)) = la + log1mexp(d)
    return la + (math.log(-math.expm1(d)) if d > -math.log(2.0) else math.log1p(-math.exp(d)))


def analytic_gaussian_sigma(epsilon, delta, sensitivity=1.0, *, rtol=1e-12):
    r"""Smallest Gaussian noise scale that is (ε, δ)-DP: the analytic Gaussian mechanism.

    Balle & Wang (2018), Theorem 8: σ is the smallest value with

    .. math::

        \Phi\!\left(\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\right)
        - e^{\epsilon}\,\Phi\!\left(-\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\right)
        \le \delta.

    The left side is evaluated in log space (``log_ndtr``, with :math:`e^\epsilon` folded into
    the exponent), and σ is found by bisection on :math:`\log\sigma` to a *relative* tolerance,
    so the answer is right for ε up to (at least) 1000 and δ down to 1e-300, and the search
    always ends (at most a few hundred halvings).  ε = 0 is allowed ((0, δ)-DP).

    Parameters
    ----------
    epsilon : float or array_like
        ε ≥ 0.
    delta : float or array_like
        0 < δ < 1.
    sensitivity : float or array_like, default 1.0
        L2 sensitivity Δ > 0.
    rtol : float
        Relative tolerance on σ.

    Returns
    -------
    float or numpy.ndarray
        σ, broadcast over the inputs.

    Examples
    --------
    >>> round(float(analytic_gaussian_sigma(1.0, 1e-5)), 4)
    3.7306
    >>> round(float(analytic_gaussian_sigma(0.1, 1e-5)), 2)
    30.75
    """
    eps = np.asarray(epsilon, dtype=float)
    dlt = np.asarray(delta, dtype=float)
    sens = np.asarray(sensitivity, dtype=float)
    check_finite("epsilon", eps)
    if np.any(eps < 0):
        raise ValueError(f"`epsilon` must be >= 0; got {eps[eps < 0].ravel()[:5]}")
    check_finite("delta", dlt)
    if np.any((dlt <= 0) | (dlt >= 1)):
        raise ValueError(f"`delta` must be in (0, 1); got {dlt[(dlt <= 0) | (dlt >= 1)][:5]}")
    check_positive("sensitivity", sens)
    shape = check_broadcast(epsilon=eps, delta=dlt, sensitivity=sens)
    out = np.empty(shape)
    for idx in np.ndindex(shape):
        e = float(np.broadcast_to(eps, shape)[idx])
        d = float(np.broadcast_to(dlt, shape)[idx])
        s = float(np.broadcast_to(sens, shape)[idx])
        out[idx] = _analytic_sigma_scalar(e, d, s, rtol)
    return out if out.ndim else float(out)


def _analytic_sigma_scalar(eps: float, delta: float, sens: float, rtol: float) -> float:
    log_target = math.log(delta)

    def ok(log_sigma: float) -> bool:  # noise large enough?
        return _log_delta(math.exp(log_sigma), eps, sens) <= log_target

    # bracket in log sigma: delta(sigma) decreases from 1 (sigma -> 0) to 0 (sigma -> inf)
    lo = hi = math.log(sens)
    step = 1.0
    for _ in range(2000):
        if ok(hi):
            break
        lo, hi = hi, hi + step
        step *= 2.0
    else:  # pragma: no cover - unreachable for delta in (0, 1)
        raise RuntimeError("analytic_gaussian_sigma: could not bracket sigma")
    if lo == hi:  # sens itself is large enough: search downwards
        step = 1.0
        for _ in range(2000):
            lo = hi - step
            if not ok(lo):
                break
            hi = lo
            step *= 2.0
        else:  # pragma: no cover
            raise RuntimeError("analytic_gaussian_sigma: could not bracket sigma")
    tol = math.log1p(rtol)
    for _ in range(400):
        if hi - lo <= tol:
            break
        mid = 0.5 * (lo + hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def classical_gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """The classical bound ``sqrt(2 ln(1.25/δ)) Δ / ε`` (valid for ε < 1 only; larger than analytic)."""
    check_positive("epsilon", epsilon)
    eps = np.asarray(epsilon, dtype=float)
    if np.any(eps >= 1):
        raise ValueError("`epsilon` must be < 1 for the classical Gaussian mechanism")
    return np.sqrt(2 * np.log(1.25 / np.asarray(delta, float))) * np.asarray(sensitivity) / eps


def gaussian_mechanism(values, sensitivity, epsilon, delta, rng):
    """Release ``values + N(0, σ²)`` with σ = :func:`analytic_gaussian_sigma` (ε, δ, Δ2 = sensitivity).

    Examples
    --------
    >>> import numpy as np
    >>> z = gaussian_mechanism(np.zeros(4), 1.0, 1.0, 1e-5, np.random.default_rng(0))
    >>> z.shape
    (4,)
    """
    rng = _rng(rng)
    v = _values("values", values)
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    shape = check_broadcast(values=v, sigma=sigma)
    _same_shape(shape, v.shape)
    return v + rng.normal(0.0, np.broadcast_to(sigma, shape), size=shape)


def randomized_response(bits, epsilon, rng):
    """Binary randomized response: keep each bit with probability ``e^ε / (1 + e^ε)``, else flip.

    Parameters
    ----------
    bits : array_like of {0, 1}
    epsilon : float or array_like
        ε > 0, broadcast against ``bits``.
    rng : numpy.random.Generator

    Examples
    --------
    >>> import numpy as np
    >>> randomized_response([0, 1, 1], 50.0, np.random.default_rng(0))
    array([0, 1, 1])
    """
    rng = _rng(rng)
    b = np.asarray(bits)
    if b.dtype == bool:
        b = b.astype(np.int64)
    if not np.all((b == 0) | (b == 1)):
        raise ValueError("`bits` must contain only 0 and 1")
    check_positive("epsilon", epsilon)
    shape = check_broadcast(bits=b, epsilon=epsilon)
    _same_shape(shape, b.shape, "bits")
    keep = 1.0 / (1.0 + np.exp(-np.asarray(epsilon, dtype=float)))
    flip = rng.random(shape) >= keep
    return np.where(flip, 1 - b, b).astype(np.int64)
