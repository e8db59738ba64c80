"""Truncated sufficient statistics of unbounded exponential families (Bernstein & Sheldon, Sec. 3.3).

The statistic :math:`t(x) = x` of exponential or Poisson records is unbounded, so its sum has
no finite sensitivity.  The data holder declares bounds ``[lower, upper]`` *before* seeing the
data, drops every record outside them, and releases the sum of the kept records with Laplace
noise of scale ``sensitivity / epsilon``, ``sensitivity = max(|lower|, |upper|, upper -
lower)`` (the paper's Appendix C bound).  The number of kept records is not released (it
would need its own budget); the model needs only ``n``, the bounds and the scale, all in the
returned :class:`TruncatedSumRelease`.  Model it with
:class:`~pymc_dpnoise.LaplaceNoisyTruncatedExponential` or
:class:`~pymc_dpnoise.LaplaceNoisyTruncatedPoisson`.  Simulation grade (see
:mod:`pymc_dpnoise.mechanisms`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .core import as_float, release_guard
from .counts import _epsilon, _n_records, _value

__all__ = ["TruncatedSumRelease", "release_truncated_sum"]

_FAMILIES = ("exponential", "poisson")


@dataclasses.dataclass(frozen=True)
class _TruncatedRelease:
    """The fields every truncated-sum release has (see the subclasses' docstrings)."""

    value: np.ndarray
    n: np.ndarray
    lower: float
    upper: float
    epsilon: float
    sensitivity: float
    scale: float


@dataclasses.dataclass(frozen=True)
class TruncatedSumRelease(_TruncatedRelease):
    """A noisy truncated sum and what the likelihood needs.

    Attributes
    ----------
    value : numpy.ndarray
        Sum of the records inside ``[lower, upper]`` + Laplace(0, ``scale``), one per group.
    n : numpy.ndarray
        Number of records behind each release (before truncation).
    lower, upper : float
        The declared truncation bounds.
    epsilon, sensitivity, scale : float
        Budget, L1 sensitivity ``max(|lower|, |upper|, upper - lower)`` and Laplace scale.
    family : str
        ``"exponential"`` or ``"poisson"``.
    """

    family: str


def _bound(name, value, integer=False, *, nonnegative=True):
    """A declared truncation bound as a float (finite, and >= 0 where ``nonnegative``)."""
    if value is None:
        raise TypeError(f"`{name}` is None; declare the truncation bounds before the release")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a number; got {value!r}") from None
    if not np.isfinite(v) or (nonnegative and v < 0):
        raise ValueError(
            f"`{name}` must be finite{' and >= 0' if nonnegative else ''}; got {value!r}"
        )
    if integer and v != np.floor(v):
        raise ValueError(f"`{name}` must be an integer for count data; got {value!r}")
    return v


def _truncated_sum_scale(a):
    lo, hi, eps = as_float(a["lower"]), as_float(a["upper"]), as_float(a["epsilon"])
    if lo is None or hi is None or eps is None:
        return None
    return max(abs(lo), abs(hi), hi - lo) / eps


def _truncated_release_guard(noise_scale, magnitude):
    """The :func:`~pymc_dpnoise.mechanisms.core.release_guard` of a release of sums over the
    records inside declared bounds ``[lower, upper]`` at one budget ``epsilon``: its Laplace
    scale and the largest magnitude of its sums are ``noise_scale(args)`` and
    ``magnitude(args)``."""
    return release_guard(
        records=None,
        privacy={"lower": "finite", "upper": "finite", "epsilon": "epsilon"},
        scalar=("lower", "upper", "epsilon"),
        output=_value,
        noise_scale=noise_scale,
        magnitude=magnitude,
    )


@_truncated_release_guard(
    _truncated_sum_scale,
    lambda a: _n_records("x")(a) * max(abs(as_float(a["lower"])), abs(as_float(a["upper"]))),
)
def release_truncated_sum(x, lower, upper, epsilon, rng, *, family="exponential"):
    """Release the noisy sum of the records inside declared bounds (truncated family).

    Parameters
    ----------
    x : array_like
        Records along the last axis; leading axes are groups, each released separately.
        Exponential records must be >= 0, Poisson records non-negative integers: values
        outside the family's domain are an error (they indicate a wrong model, not a record
        to drop).
    lower, upper : float
        Declared truncation bounds, ``0 <= lower < upper`` (``<=`` and integers for Poisson).
        They must be fixed *before* looking at the data (e.g. from domain knowledge or a
        separate private quantile release); bounds computed from ``x`` are not private.
    epsilon : float
        Privacy budget of each release, > 0.
    rng : numpy.random.Generator
    family : {"exponential", "poisson"}

    Returns
    -------
    TruncatedSumRelease
    """
    eps = _epsilon(epsilon)
    if family not in _FAMILIES:
        raise ValueError(f"`family` must be one of {_FAMILIES}; got {family!r}")
    integer = family == "poisson"
    lo, hi = _bound("lower", lower, integer), _bound("upper", upper, integer)
    if (hi < lo) if integer else (hi <= lo):
        raise ValueError(
            f"`lower` must be {'<=' if integer else '<'} `upper`; got lower={lo}, upper={hi}"
        )
    sens = max(abs(lo), abs(hi), hi - lo)
    if sens <= 0:
        raise ValueError("`upper` must be > 0 (the sensitivity max(|lower|, |upper|) is 0)")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"`rng` must be a numpy.random.Generator; got {type(rng).__name__}")
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("`x` must hold records along its last axis; got a scalar")
    if not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"`x` must be numeric; got dtype {x.dtype}")
    x = x.astype(float)
    if not np.all(np.isfinite(x)):
        raise ValueError("`x` contains NaN or inf")
    bad = x < 0
    if integer:
        bad |= x != np.floor(x)
    if np.any(bad):
        what = "non-negative integers" if integer else ">= 0"
        raise ValueError(
            f"`x` must hold {family} records ({what}); {int(bad.sum())} record(s) are not, "
            f"first at index {np.argwhere(bad)[:3].tolist()}"
        )
    keep = (x >= lo) & (x <= hi)
    total = np.where(keep, x, 0.0).sum(axis=-1)
    n = np.full(total.shape, x.shape[-1])
    value = total + rng.laplace(0.0, sens / eps, size=total.shape)
    if not np.all(np.isfinite(value)):
        raise ValueError("the release is not finite (sensitivity / epsilon overflows)")
    return TruncatedSumRelease(value, n, lo, hi, eps, sens, sens / eps, family)
