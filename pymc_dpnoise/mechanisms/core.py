"""Clipping, the Laplace and Gaussian mechanisms, analytic Gaussian calibration, randomized response."""

from __future__ import annotations

import functools
import inspect
import math
import types

import numpy as np
from scipy.special import log_ndtr

from ..validation import broadcasts_to, check_broadcast, check_finite, check_less, check_positive

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


# --------------------------------------------------------------------------------------------
# The release guard: every public mechanism goes through :func:`release_guard`
# --------------------------------------------------------------------------------------------

#: what each kind of privacy parameter must satisfy (checked before any noise is drawn)
PARAMETER_KINDS = {
    "epsilon": "finite and > 0",
    "delta": "finite and in (0, 1)",
    "positive": "finite and > 0",
    "probability": "finite and in (0, 1)",
    "finite": "finite",
}


def check_privacy_parameter(name: str, value, kind: str) -> np.ndarray:
    """``value`` as a float array, or an error naming ``name`` if it is not of ``kind``.

    ``kind`` is one of :data:`PARAMETER_KINDS`.  ``None``, strings, objects and booleans are
    refused (a privacy parameter is a number), as are NaN and ±inf.
    """
    if kind not in PARAMETER_KINDS:  # pragma: no cover - programming error
        raise ValueError(f"unknown parameter kind {kind!r}")
    if value is None:
        raise TypeError(f"`{name}` is None; it must be a number ({PARAMETER_KINDS[kind]})")
    raw = value
    if hasattr(raw, "to_numpy"):  # pandas
        raw = raw.to_numpy()
    kind_of = np.asarray(raw).dtype.kind
    if kind_of in "bUSV" or isinstance(value, str | bytes):
        raise TypeError(
            f"`{name}` must be a number ({PARAMETER_KINDS[kind]}); got dtype "
            f"{np.asarray(raw).dtype}"
        )
    try:
        arr = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"`{name}` must be a number ({PARAMETER_KINDS[kind]}); got {type(value).__name__}"
        ) from None
    bad = ~np.isfinite(arr)
    if kind in ("epsilon", "positive"):
        bad |= ~(arr > 0)
    elif kind in ("delta", "probability"):
        bad |= ~((arr > 0) & (arr < 1))
    if np.any(bad):
        raise ValueError(
            f"`{name}` must be {PARAMETER_KINDS[kind]}; got {np.ravel(arr[bad])[:5]}"
            + (f" at index {np.argwhere(bad)[:3].tolist()}" if arr.ndim else "")
        )
    return arr


def check_per_record(record_shape, **params) -> None:
    """Every parameter must broadcast *to* ``record_shape`` without enlarging it.

    A per-record parameter longer than the records would release each record once per
    parameter value (averaging those releases recovers the private value), so this is a
    privacy check, not a convenience.
    """
    record_shape = tuple(record_shape)
    for name, value in params.items():
        if value is None:
            continue
        s = np.shape(value)
        if not broadcasts_to(s, record_shape):
            raise ValueError(
                f"`{name}` has shape {s}, which does not broadcast to the records' shape "
                f"{record_shape} without enlarging it: a mechanism releases exactly one report "
                "per record, so give one value per record at most"
            )


def _released_arrays(released):
    """The arrays of a release: an array, or the values of a mapping / items of a sequence."""
    if isinstance(released, dict | types.MappingProxyType):
        return [a for v in released.values() for a in _released_arrays(v)]
    if isinstance(released, list | tuple):
        return [a for v in released for a in _released_arrays(v)]
    return [np.asarray(released)]


def check_release(name: str, released, record_shape=None) -> None:
    """The release must be finite and, if ``record_shape`` is given, one report per record.

    ``released`` is an array, or a mapping / sequence of arrays (every one must be finite).
    """
    if not isinstance(released, np.ndarray):
        parts = _released_arrays(released)
        if len(parts) != 1:
            for part in parts:
                check_release(name, part)
            return
        released = parts[0]
    out = np.asarray(released)
    if record_shape is not None:
        record_shape = tuple(record_shape)
        if out.shape[: len(record_shape)] != record_shape:
            raise RuntimeError(  # pragma: no cover - guarded by check_per_record
                f"{name}: output shape {out.shape} is not one report per record "
                f"(records {record_shape})"
            )
    if out.dtype.kind == "f" and not np.all(np.isfinite(out)):
        raise ValueError(
            f"{name}: the release contains {int((~np.isfinite(out)).sum())} non-finite value(s) "
            "(the noise scale sensitivity/epsilon overflows, or a value is too large to "
            "perturb); refusing to return it"
        )


#: NumPy's Laplace and Gaussian draws stay below this many scales in magnitude (|log u| for the
#: smallest double u is 37.4; a normal draw beyond 40 sigma has probability < 1e-340)
NOISE_TAIL = 40.0


def check_noise_scale(name: str, scale, blame, magnitude=None) -> np.ndarray:
    """The noise scale must be finite and > 0, and the release representable in float64.

    ``blame`` names the parameters that set the scale (the error names them); ``magnitude``
    is a *data-independent* bound on the statistic's absolute value (from ``n`` and the
    declared bounds), so that a release that could overflow is refused for every data set
    alike, before anything is computed from the data.
    """
    names = ", ".join(f"`{b}`" for b in blame)
    with np.errstate(all="ignore"):
        sc = np.asarray(scale, dtype=float)
    if not np.all(np.isfinite(sc) & (sc > 0)):
        raise ValueError(
            f"{name}: the noise scale set by {names} is {np.ravel(sc)[:3]}, not a finite "
            "positive number (`epsilon` too small, or a bound or sensitivity too large)"
        )
    if magnitude is not None:
        with np.errstate(all="ignore"):
            top = float(np.max(np.abs(magnitude))) + NOISE_TAIL * float(np.max(sc))
        if not top < np.finfo(float).max / 4:
            raise ValueError(
                f"{name}: with these {names} (and n) a release could reach {top:.3g}, "
                "which does not fit in float64; use a larger `epsilon` or tighter bounds"
            )
    return sc


def as_float(value):
    """``value`` as a float array for the guard's data-independent checks, or None if it is
    not a number (the function's own validation then names the argument)."""
    if value is None or isinstance(value, str | bytes):
        return None
    try:
        with np.errstate(all="ignore"):
            return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None


def _name_overflow(name, err, arguments, privacy) -> None:
    """An overflow deep inside a release (a sensitivity or noise scale computed from the privacy
    parameters) becomes a ValueError naming the privacy parameters; other errors pass."""
    msg = str(err)
    if isinstance(err, ValueError) and (
        any(f"`{p}`" in msg for p in arguments) or not ("finite" in msg or "overflow" in msg)
    ):
        return
    names = ", ".join(f"`{p}`" for p in privacy)
    raise ValueError(
        f"{name}: with these {names} a sensitivity or noise scale does not fit in float64 "
        f"({msg}); use a larger `epsilon` or smaller bounds"
    ) from err


def release_guard(
    *,
    records,
    privacy,
    per_record=(),
    event_ndim=0,
    output=None,
    scalar=(),
    noise_scale=None,
    magnitude=None,
):
    """Decorator: the privacy contract of a release function, checked in one place.

    Parameters
    ----------
    records : str or None
        Name of the argument holding the records (the private data), or None for a central
        release of one aggregate.
    privacy : dict
        ``{argument name: kind}`` of the privacy parameters (see :data:`PARAMETER_KINDS`),
        validated before the function runs.
    per_record : tuple of str
        Arguments that may vary per record: each must broadcast to the records' shape
        (``np.shape(records)[:ndim - event_ndim]``) without enlarging it.
    event_ndim : int
        Trailing axes of one record (1 for a row of a design matrix).
    output : callable, optional
        Extracts the released array from the return value (default: the value itself).
    scalar : tuple of str
        Privacy parameters that must be single numbers (one budget for the whole release).
    noise_scale : callable, optional
        ``noise_scale(arguments) -> scale`` of the noise the privacy parameters imply; it must
        be finite and > 0 (:func:`check_noise_scale`), checked before the function runs
        (``None``: an argument is not a number, left to the function to name).
    magnitude : callable, optional
        ``magnitude(arguments) -> bound`` on the absolute value of the statistic before noise,
        computed without the data (``n`` and declared bounds only); ``bound`` plus
        :data:`NOISE_TAIL` scales must fit in float64, so that overflow is refused for every
        data set alike.

    After the call, the release must be finite and have one report per record.  The decorated
    function gets the attribute ``__release_guard__`` with this contract, which the test-suite
    uses to check every public mechanism.
    """

    def decorate(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            for name, value in a.items():  # pandas / xarray: plain arrays from here on
                if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
                    a[name] = value.to_numpy()
            for name, kind in privacy.items():
                check_privacy_parameter(name, a[name], kind)
                if name in scalar and np.ndim(a[name]) != 0:
                    raise ValueError(
                        f"`{name}` must be a single number for {fn.__name__}; got shape "
                        f"{np.shape(a[name])}"
                    )
            if noise_scale is not None:
                with np.errstate(all="ignore"):
                    sc = noise_scale(a)
                    top = None if magnitude is None or sc is None else magnitude(a)
                if sc is not None:  # None: an argument is not a number (named by fn below)
                    check_noise_scale(fn.__name__, sc, list(privacy), top)
            record_shape = None
            if records is not None:
                data = a[records]
                if data is None:
                    raise TypeError(f"`{records}` is None; give the records to release")
                shape = np.shape(data)
                record_shape = shape[: len(shape) - event_ndim] if event_ndim else shape
                check_per_record(record_shape, **{k: a[k] for k in per_record})
            try:
                result = fn(*bound.args, **bound.kwargs)
            except (OverflowError, ValueError) as err:
                _name_overflow(fn.__name__, err, sig.parameters, privacy)
                raise
            check_release(fn.__name__, output(result) if output else result, record_shape)
            return result

        wrapper.__release_guard__ = dict(
            records=records,
            privacy=dict(privacy),
            scalar=tuple(scalar),
            per_record=tuple(per_record),
            event_ndim=event_ndim,
            noise_scale=noise_scale is not None,
        )
        return wrapper

    return decorate


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
    R = float(R)
    if X.size == 0:
        return X
    unit, s, e = _scaled_rows(X)
    with np.errstate(over="ignore"):  # a norm beyond float64 is inf, still > R
        norms = np.ldexp(s, e)
    out = np.where(norms > R, unit * (R / np.where(s > 0, s, 1.0)), X)
    return out


def _scaled_rows(X):
    """``(unit, s, e)`` with ``X = unit * 2**e`` row by row (exact: a power-of-two scaling),
    ``max |unit| in [1/2, 1)`` and ``s = ||unit||_2``, so the row norm ``s * 2**e`` is computed
    without overflow or underflow (a row of 1e200s has norm 1.4e200, not inf)."""
    _, e = np.frexp(np.max(np.abs(X), axis=1, keepdims=True))
    unit = np.ldexp(X, -e)
    return unit, np.linalg.norm(unit, axis=1, keepdims=True), e


def clipped_sensitivity(lower, upper):
    """L1 (= L2) sensitivity of one scalar clipped to ``[lower, upper]``: ``upper - lower``."""
    check_less("lower", lower, "upper", upper)
    return np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float)


@release_guard(
    records="values",
    privacy={"sensitivity": "positive", "epsilon": "epsilon"},
    per_record=("sensitivity", "epsilon"),
)
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
    with np.errstate(over="ignore"):
        scale = np.asarray(sensitivity, dtype=float) / np.asarray(epsilon, dtype=float)
    if not np.all(np.isfinite(scale)):
        raise ValueError(
            "the Laplace noise scale `sensitivity` / `epsilon` overflows to inf; "
            f"got sensitivity={np.ravel(sensitivity)[:3]}, epsilon={np.ravel(epsilon)[:3]}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        return v + rng.laplace(0.0, np.broadcast_to(scale, shape), size=shape)


@release_guard(
    records="x",
    privacy={"lower": "finite", "upper": "finite", "epsilon": "epsilon"},
    per_record=("lower", "upper", "epsilon"),
)
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
    check_finite("x", x)
    clipped = clip(x, lower, upper)
    return laplace_mechanism(clipped, clipped_sensitivity(lower, upper), epsilon, rng)


@release_guard(
    records="x",
    privacy={"upper": "positive", "epsilon": "epsilon"},
    per_record=("upper", "epsilon"),
)
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
    log_max = math.log(np.finfo(float).max) - math.log(4.0 * NOISE_TAIL)
    for _ in range(2000):
        if ok(hi):
            break
        lo, hi = hi, min(hi + step, log_max)
        step *= 2.0
        if lo == log_max:  # sigma would not fit in float64 (nor would its noise)
            raise ValueError(
                f"the Gaussian noise scale for `epsilon` = {eps!r}, `delta` = {delta!r}, "
                f"`sensitivity` = {sens!r} overflows float64: use a larger `epsilon` or `delta`"
            )
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
    """The classical bound ``sqrt(2 ln(1.25/δ)) Δ / ε`` (valid for ε < 1 only; larger than analytic).

    Raises ``ValueError`` naming the argument unless 0 < ε < 1, 0 < δ < 1 and Δ > 0 (all finite).

    Examples
    --------
    >>> round(float(classical_gaussian_sigma(0.5, 1e-5)), 4)
    9.6896
    """
    eps = check_privacy_parameter("epsilon", epsilon, "epsilon")
    if np.any(eps >= 1):
        raise ValueError("`epsilon` must be < 1 for the classical Gaussian mechanism")
    dlt = check_privacy_parameter("delta", delta, "delta")
    sens = check_privacy_parameter("sensitivity", sensitivity, "positive")
    check_broadcast(epsilon=eps, delta=dlt, sensitivity=sens)
    out = np.sqrt(2 * np.log(1.25 / dlt)) * sens / eps
    check_release("classical_gaussian_sigma", out)
    return out


@release_guard(
    records="values",
    privacy={"sensitivity": "positive", "epsilon": "epsilon", "delta": "delta"},
    per_record=("sensitivity", "epsilon", "delta"),
)
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


@release_guard(records="bits", privacy={"epsilon": "epsilon"}, per_record=("epsilon",))
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
