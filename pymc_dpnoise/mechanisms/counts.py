"""Noisy counts: Laplace-noised sufficient statistics of binomial, Poisson and multinomial data.

Bernstein & Sheldon (2018, Sec. 3.1) release the sufficient statistic of an exponential
family with the Laplace mechanism.  For count data the statistics are integer sums:

* :func:`release_binomial_count`: the number of ones among 0/1 records (sensitivity 1);
* :func:`release_poisson_count`: the total of non-negative integer counts, each record
  clipped to a user-given bound ``upper`` (sensitivity ``upper``);
* :func:`release_multinomial_counts`: the category counts of labelled records (changing one
  record moves one unit between two categories: L1 sensitivity 2), with independent noise on
  **every** category (the authors' public code adds one scalar draw to all counts, which is
  not the Laplace mechanism on a vector).

Each returns a :class:`CountRelease` with the noisy values and what the noise-aware model
needs (``n``, the bounds, ``sensitivity``, ``scale``).  The bounds are inputs, never computed
from the data (that would not be private).  See the warning in :mod:`pymc_dpnoise.mechanisms`:
the noise is simulation grade.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .core import check_privacy_parameter, release_guard

__all__ = [
    "CountRelease",
    "release_binomial_count",
    "release_multinomial_counts",
    "release_poisson_count",
]


@dataclasses.dataclass(frozen=True)
class CountRelease:
    """A noisy count release and the protocol parameters the likelihood needs.

    Attributes
    ----------
    value : numpy.ndarray
        The released noisy statistic(s): count + Laplace(0, ``scale``), one per group (and per
        category for multinomial counts).
    n : numpy.ndarray
        Number of records behind each release.
    epsilon : float
        Privacy budget of each release.
    sensitivity : float
        L1 sensitivity of the statistic (from the declared bounds).
    scale : float
        Laplace scale ``sensitivity / epsilon``.
    lower, upper : float
        The declared per-record bounds (0/1 for binary data, ``[0, upper]`` for Poisson counts,
        category labels ``0 .. k - 1`` for multinomial data).
    """

    value: np.ndarray
    n: np.ndarray
    epsilon: float
    sensitivity: float
    scale: float
    lower: float
    upper: float


def _epsilon(epsilon) -> float:
    eps = check_privacy_parameter("epsilon", epsilon, "epsilon")
    if eps.ndim:
        raise ValueError(f"`epsilon` must be a scalar (one budget per release); got {epsilon!r}")
    return float(eps)


def _records(name, x) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError(f"`{name}` must hold records along its last axis; got a scalar")
    if not np.issubdtype(x.dtype, np.number) and x.dtype != bool:
        raise TypeError(f"`{name}` must be numeric; got dtype {x.dtype}")
    x = x.astype(float)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"`{name}` contains NaN or inf")
    return x


def _first_bad(mask) -> str:
    idx = np.argwhere(mask)[:3].tolist()
    return f"{int(mask.sum())} record(s), first at index {idx}"


def _n_records(name):
    """Data-independent bound pieces: the number of records along the last axis (public)."""
    return lambda a: float(np.shape(a[name])[-1]) if np.ndim(a[name]) else 1.0


def _value(rel):
    return rel.value


def _count_guard(records: str, sensitivity: float):
    """The release guard of a count with a fixed sensitivity (counts are at most n)."""
    return release_guard(
        records=None,
        privacy={"epsilon": "epsilon"},
        scalar=("epsilon",),
        output=_value,
        noise_scale=lambda a: sensitivity / np.float64(a["epsilon"]),
        magnitude=_n_records(records),
    )


@_count_guard("x", 1.0)
def release_binomial_count(x, epsilon, rng) -> CountRelease:
    """Release the number of ones among 0/1 records with the Laplace mechanism.

    Parameters
    ----------
    x : array_like of {0, 1}
        Records along the last axis; leading axes are groups (e.g. regions), each released
        separately (one Laplace draw per group).
    epsilon : float
        Privacy budget of each release, > 0.
    rng : numpy.random.Generator

    Returns
    -------
    CountRelease
        ``value`` = count + Laplace(0, 1/epsilon); model it with
        ``LaplaceNoisyBinomial(n=release.n, p=..., epsilon=release.epsilon)``.
    """
    eps = _epsilon(epsilon)
    x = _records("x", x)
    bad = (x != 0) & (x != 1)
    if np.any(bad):
        raise ValueError(f"`x` must hold 0/1 records; {_first_bad(bad)} outside {{0, 1}}")
    count = x.sum(axis=-1)
    n = np.full(count.shape, x.shape[-1])
    value = count + rng.laplace(0.0, 1.0 / eps, size=count.shape)
    return CountRelease(value, n, eps, 1.0, 1.0 / eps, 0.0, 1.0)


@release_guard(
    records=None,
    privacy={"upper": "positive", "epsilon": "epsilon"},
    scalar=("upper", "epsilon"),
    output=_value,
    noise_scale=lambda a: np.float64(a["upper"]) / np.float64(a["epsilon"]),
    magnitude=lambda a: _n_records("x")(a) * np.float64(a["upper"]),
)
def release_poisson_count(x, upper, epsilon, rng) -> CountRelease:
    """Release the total of non-negative integer counts, each clipped to ``upper``.

    Parameters
    ----------
    x : array_like of int
        Non-negative integer counts, one per record, along the last axis (leading axes are
        groups).  Negative or non-integer values are outside the declared domain: error.
    upper : int
        Declared bound on one record's count (> 0, an integer, fixed before seeing the data);
        records above it are clipped to it.  It is the L1 sensitivity of the total.
    epsilon : float
        Privacy budget of each release, > 0.
    rng : numpy.random.Generator

    Returns
    -------
    CountRelease
        ``value`` = clipped total + Laplace(0, upper/epsilon); model it with
        ``LaplaceNoisyPoisson(mu=..., epsilon=release.epsilon, sensitivity=release.sensitivity)``.
    """
    eps = _epsilon(epsilon)
    up = float(upper)
    if not np.isfinite(up) or up <= 0 or up != np.floor(up):
        raise ValueError(f"`upper` must be a positive integer; got {upper!r}")
    x = _records("x", x)
    bad = (x < 0) | (x != np.floor(x))
    if np.any(bad):
        raise ValueError(f"`x` must hold non-negative integer counts; {_first_bad(bad)} are not")
    total = np.minimum(x, up).sum(axis=-1)
    n = np.full(total.shape, x.shape[-1])
    value = total + rng.laplace(0.0, up / eps, size=total.shape)
    return CountRelease(value, n, eps, up, up / eps, 0.0, up)


#: largest number of categories of release_multinomial_counts (it allocates records x k)
MAX_CATEGORIES = 10**6


@_count_guard("labels", 2.0)
def release_multinomial_counts(labels, k, epsilon, rng) -> CountRelease:
    """Release the category counts of labelled records, with noise on every category.

    Parameters
    ----------
    labels : array_like of int
        Category labels in ``0 .. k - 1`` along the last axis (leading axes are groups).
    k : int
        Number of categories, >= 2.
    epsilon : float
        Privacy budget of the whole count vector, > 0.  Replacing one record changes two
        counts by one each: L1 sensitivity 2, so each count gets Laplace(0, 2/epsilon).
    rng : numpy.random.Generator

    Returns
    -------
    CountRelease
        ``value`` of shape ``(*groups, k)``.
    """
    eps = _epsilon(epsilon)
    if not (np.ndim(k) == 0 and np.isfinite(k)) or int(k) != k or k < 2:
        raise ValueError(f"`k` must be a finite integer >= 2; got {k!r}")
    if k > MAX_CATEGORIES:
        raise ValueError(f"`k` must be at most {MAX_CATEGORIES} (one noisy count each); got {k!r}")
    k = int(k)
    labels = _records("labels", labels)
    bad = (labels < 0) | (labels >= k) | (labels != np.floor(labels))
    if np.any(bad):
        raise ValueError(f"`labels` must be integers in 0..{k - 1}; {_first_bad(bad)} are not")
    onehot = labels[..., None] == np.arange(k)
    counts = onehot.sum(axis=-2).astype(float)
    n = np.full(counts.shape[:-1], labels.shape[-1])
    value = counts + rng.laplace(0.0, 2.0 / eps, size=counts.shape)
    return CountRelease(value, n, eps, 2.0, 2.0 / eps, 0.0, float(k - 1))
