r"""Credible intervals for released counts, sums and means in one call: no model, no MCMC.

For someone who has a table of noisy counts from OpenDP, Tumult, Google's DP library or the
Census and wants an interval for every cell, :func:`count_intervals` computes the exact
posterior of each true count under a stated default prior, on a grid of integers that
provably holds its mass, and returns credible intervals (highest posterior density by
default, or equal-tailed) with the posterior mean and median; :func:`sum_intervals` does the
same for a sum of ``n`` values clamped to ``[lower, upper]``, :func:`mean_intervals` for a
mean released as a noisy sum and a noisy count.

The posterior
-------------
A release :math:`z` of a true count :math:`c` is :math:`z = \mathrm{clamp}(c + N, \ell, u)`,
with :math:`N` the noise of the spec (:mod:`pymc_dpnoise.noise`) and :math:`[\ell, u]` the
output clamp (``lower`` / ``upper``, as :class:`~pymc_dpnoise.NoisyBinomial`'s; none by
default).  Under a prior :math:`\pi(c)` on the integers :math:`c \ge 0`,

.. math::

   p(c \mid z) \propto \pi(c)\, L(c), \qquad L(c) = \begin{cases}
   P(N \le \ell - c) & z = \ell \text{ (the lower atom)}\\
   P(N \ge u - c) & z = u \text{ (the upper atom)}\\
   P(N = z - c) \text{ or the density } f_N(z - c) & \text{otherwise.}\end{cases}

The default prior is flat: :math:`\pi(c) = 1` on :math:`c \in \{0, 1, \dots, n\}`, with
:math:`n = \infty` unless given.  Unbounded, it is improper but the posterior is proper for
every release except one at the upper clamp, which says only "the count is at least about
:math:`u`" (``n`` is then required).  ``prior=`` may instead be an array of prior weights
:math:`\pi(0), \dots, \pi(K-1)`; the posterior is then enumerated on all of
:math:`\{0, \dots, K-1\}`.

**Why the grid holds the mass.**  Every built-in noise kind (Laplace, discrete Laplace,
rounded Laplace, Gaussian, discrete Gaussian) has a log-concave density or pmf, so its CDF
is log-concave too, and so is :math:`L(c)` as a function of :math:`c`; a flat prior on an
interval keeps it.  Let :math:`R` be the noise's *radius*, the smallest distance at which
:math:`\log f_N(R) - \log f_N(0) \le -T` with :math:`T = 46` plus a margin of
:math:`\log(2 + \text{scale})` nats for the number of terms beyond it (:func:`noise_radius`).
The posterior's mode is at :math:`m = \mathrm{clip}(z, 0, n)` for an interior release, at 0
for a lower atom and at :math:`\min(u, n)` or above for an upper atom, and by
log-concavity the posterior falls from the mode at least as fast as the noise falls from 0.
The grid :math:`[m - R - 1, m + R + 1] \cap [0, n]` (the atoms: :math:`[0,
\max(\ell, 0) + R + 1]` and :math:`[\min(u, n) - R - 1, n]`) therefore omits at most
:math:`e^{-46}` of the posterior mass on each side, far below double precision: the
posterior on the grid is exact to rounding.  Its size is :math:`O(\text{scale})` (about
:math:`2 \cdot 50\,b` points for a Laplace scale :math:`b`, :math:`2 \cdot 10\,\sigma` for a
Gaussian), evaluated in closed form with NumPy for a whole batch of releases at once; each
computed posterior is also checked to be negligible at every edge of its grid that is not an
edge of the prior's support.

The interval
------------
Two rules, each with posterior probability (``mass``, returned) at least ``level``:

* ``interval="hpd"`` (the default), highest posterior density: the most probable counts,
  taken in order of probability until their mass reaches ``level`` (ties at the last
  probability all kept), and ``[lo, hi]`` their hull.  The posterior is unimodal (log-concave)
  under the flat prior, so the hull adds nothing; up to ties it is the shortest such
  interval (a flat stretch of posterior, as above a release at ``upper``, is kept whole).
* ``interval="equal-tailed"``: ``lo`` is the smallest :math:`c` with :math:`P(C \le c \mid
  z) \ge \alpha/2` and ``hi`` the smallest with :math:`P(C \le c \mid z) \ge 1 - \alpha/2`,
  :math:`\alpha = 1 -` ``level``: each tail outside holds at most :math:`\alpha/2`.

They agree for releases far from the prior's bounds (the posterior is then symmetric).  They
differ at the bound 0, where small counts live: when the posterior piles up at 0 the
equal-tailed interval still puts :math:`\alpha/2` of it below ``lo`` and so leaves 0 out, and a
count that truly is 0 is rarely covered (for discrete Laplace noise of scale 50, never at
level 0.9: ``benchmarks/results/intervals.md``); the HPD interval starts at 0 there.  Hence
the default.  Both have :math:`\mathrm{mass} \ge \text{level}` (more when the posterior sits
on a few integers); the median is the equal-tailed rule at :math:`\alpha = 1`.

Averaged over true counts drawn from the prior, the posterior probability of a region is its
coverage, so an interval covers the truth with probability ``E[mass]`` (at least ``level``)
when the counts really come from the prior; for a fixed true count the coverage is a
frequentist property that the flat prior makes close to ``level`` away from the support's
bounds.  ``benchmarks/intervals.py`` measures both with releases made by OpenDP.

Sums
----
:func:`sum_intervals` takes the release :math:`z = S + N` of a sum of ``n`` values each
clamped to ``[lower, upper]`` (OpenDP's ``make_clamp >> then_sum >> then_laplace``, Tumult's
``sum``, python-dp's ``BoundedSum``) with a flat prior on :math:`S \in [n\,\mathrm{lower},
n\,\mathrm{upper}]`.  With continuous noise :math:`S` is real and its posterior is the law of
:math:`z - N` with :math:`N` truncated to :math:`[z - n\,\mathrm{upper}, z -
n\,\mathrm{lower}]`: quantiles by bisection on the noise's log CDF (exact to rounding, any
release however far outside the range), the mean in closed form.  With integer noise (a sum
of integers) it is the count posterior above, shifted to start at :math:`n\,\mathrm{lower}`.
A *mean* released as a noisy sum over a noisy count needs both releases jointly:
:func:`mean_intervals` sums the count out exactly over its grid, with the count flat and the
mean uniform on ``[lower, upper]`` a priori (equal-tailed intervals).

Examples
--------
>>> import numpy as np
>>> from pymc_dpnoise import noise
>>> from pymc_dpnoise.intervals import count_intervals
>>> iv = count_intervals([12, 0, -3, 250], noise.DiscreteLaplace(2.0), level=0.9)
>>> iv.lo, iv.hi
(array([  7,   0,   0, 245]), array([ 17,   4,   4, 255]))
>>> bool(np.all(iv.mass >= 0.9))
True
>>> iv = count_intervals([0, 7], noise.DiscreteGaussian(3.0), lower=0)  # 0 is the clamp atom
>>> iv.lo, iv.hi
(array([0, 1]), array([ 5, 13]))
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.special import erfcx, log_ndtr

from .noise import (
    TAIL_NATS,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Noise,
    RoundedLaplace,
    from_opendp,
    opendp_censoring,
)
from .validation import check_finite

__all__ = ["Intervals", "count_intervals", "mean_intervals", "noise_radius", "sum_intervals"]

#: the noise kinds read here (their NumPy log densities and CDFs are below)
KINDS = (Laplace, DiscreteLaplace, RoundedLaplace, Gaussian, DiscreteGaussian)
#: largest grid per release (a Laplace scale up to about 2e5, a Gaussian sigma up to 1e6)
MAX_GRID = 20_000_000
#: grid points evaluated at once (memory: a few arrays of this many float64)
_BLOCK = 2_000_000
#: log-probability at a grid edge (that is not a bound of the prior) above which the grid is
#: refused as not holding the mass; the construction guarantees about -46
_EDGE_LOG_MASS = -30.0
_LOG2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


@dataclasses.dataclass(frozen=True)
class Intervals:
    """Credible intervals, one per release (arrays of the releases' shape).

    Attributes
    ----------
    lo, hi : ndarray
        The interval's ends (integers for counts and integer sums).
    mean, median : ndarray
        Posterior mean and median.
    mass : ndarray
        Posterior probability of ``[lo, hi]`` (at least ``level``).
    level : float
        The credible level asked for.
    noise : Noise
        The noise spec the releases were read with.
    prior : str
        The prior, in words.
    """

    lo: np.ndarray
    hi: np.ndarray
    mean: np.ndarray
    median: np.ndarray
    mass: np.ndarray
    level: float
    noise: Noise
    prior: str


# -- the noise, in NumPy --------------------------------------------------------------------------


def noise_radius(noise: Noise) -> np.ndarray:
    r"""The radius :math:`R` of each release's noise: :math:`\log f(R) - \log f(0) \le -T -
    \log(2 + s)` for the scale or :math:`\sigma` :math:`s` (:math:`T = 46`), so the noise's
    terms beyond :math:`R` sum to less than :math:`e^{-46}` of its largest.

    Laplace kinds: :math:`R = \lceil b\,(T + \log(2 + b))\rceil + 1`; Gaussian kinds:
    :math:`R = \lceil\sigma\sqrt{2(T + \log(2 + \sigma))}\rceil + 1`.
    """
    kind, p = _kind(noise), np.asarray(noise.param, dtype="float64")
    nats = TAIL_NATS + np.log(2.0 + p)
    if kind in (Laplace, DiscreteLaplace, RoundedLaplace):
        r = p * nats
    else:
        r = p * np.sqrt(2.0 * nats)
    return np.ceil(r).astype("int64") + 1


def _kind(noise):
    kind = type(noise)
    if kind not in KINDS:
        raise TypeError(
            f"`noise` must be one of the noise specs {', '.join(k.__name__ for k in KINDS)} "
            f"(or an OpenDP measurement); got {noise!r} (the intervals use these kinds' "
            "closed forms and log-concavity; model another kind with NoisyBinomial)"
        )
    return kind


def _log_pmf(kind, x, p):
    """Log pmf / pdf of the noise at ``x`` up to a constant per ``p`` (it cancels)."""
    if kind in (Gaussian, DiscreteGaussian):
        return -0.5 * (x / p) ** 2
    if kind is RoundedLaplace:
        h = 0.5 / p
        log_sinh = h + np.log1p(-np.exp(-2.0 * h)) - _LOG2
        return np.where(x == 0, np.log(-np.expm1(-h)), log_sinh - np.abs(x) / p)
    return -np.abs(x) / p


def _laplace_log_cdf(x, b):
    return np.where(x < 0, x / b - _LOG2, np.log1p(-0.5 * np.exp(-np.abs(x) / b)))


def _log_cdf_rows(kind, x0, width, p):
    """``log P(N <= x)`` (up to a constant per row) at ``x = x0[:, None] + arange(width)``."""
    x = x0[:, None] + np.arange(width)
    pc = p[:, None]
    if kind is Laplace:
        return _laplace_log_cdf(x, pc)
    if kind is RoundedLaplace:
        return _laplace_log_cdf(x + 0.5, pc)
    if kind is DiscreteLaplace:
        log1pa = np.log1p(np.exp(-1.0 / pc))
        up = np.log1p(-np.exp(-(np.abs(x) + 1.0) / pc - log1pa))
        return np.where(x < 0, x / pc - log1pa, up)
    if kind is Gaussian:
        return log_ndtr(x / pc)
    # discrete Gaussian: a cumulative log-sum of the pmf from R below the row's first x
    # (the terms below that sum to less than e^-46 of the first's: noise_radius)
    ext = int(np.max(noise_radius(DiscreteGaussian(p))))
    xe = x0[:, None] - ext + np.arange(ext + width)
    acc = np.logaddexp.accumulate(-0.5 * (xe / pc) ** 2, axis=1)
    return acc[:, ext:]


# -- arguments ------------------------------------------------------------------------------------


def _read_noise(noise, d_in):
    """``(spec, clamp from the measurement)``."""
    if isinstance(noise, Noise):
        if d_in is not None:
            raise ValueError(
                "`d_in` is for an OpenDP measurement (the distance it maps); `noise` is a spec"
            )
        if noise.symbolic:
            raise TypeError(f"`noise` must have a numeric parameter; {noise!r} is symbolic")
        _kind(noise)
        return noise, {}
    if hasattr(noise, "map") and hasattr(noise, "output_measure"):
        d = 1 if d_in is None else d_in
        return from_opendp(noise, d), opendp_censoring(noise)
    raise TypeError(
        "`noise` must be a noise spec of pymc_dpnoise.noise (e.g. noise.DiscreteLaplace(2.0), "
        f"noise.from_tumult(...)) or an OpenDP measurement; got {noise!r}"
    )


def _number(name, value, *, integer=False, allow_none=True):
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"`{name}` is required")
    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number) or arr.ndim:
        raise TypeError(f"`{name}` must be a number; got {value!r}")
    check_finite(name, arr)
    v = float(arr)
    if integer and v != round(v):
        raise ValueError(f"`{name}` must be an integer; got {value!r}")
    return v


def _level(level):
    v = _number("level", level, allow_none=False)
    if not 0.0 < v < 1.0:
        raise ValueError(f"`level` must be in (0, 1); got {level!r}")
    return v


def _interval(interval):
    if interval not in ("hpd", "equal-tailed"):
        raise ValueError(f"`interval` must be 'hpd' or 'equal-tailed'; got {interval!r}")
    return interval


def _releases(releases, discrete):
    arr = np.asarray(releases)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"`releases` must be numbers; got dtype {arr.dtype}")
    arr = arr.astype("float64")
    check_finite("releases", arr)
    if discrete and np.any(arr != np.round(arr)):
        bad = arr[arr != np.round(arr)].ravel()[:5]
        raise ValueError(f"`releases` of integer noise must be integers; got {bad}")
    if np.any(np.abs(arr) > 2.0**53):
        raise ValueError("`releases` must have magnitude at most 2**53 (exact in a float64)")
    return arr


def _arguments(releases, noise, level, interval, d_in):
    """The checked arguments both functions share: spec, clamp read, kind, level, rule,
    releases (float64) and the noise parameter per release."""
    spec, clamp = _read_noise(noise, d_in)
    kind = type(spec)
    level, interval = _level(level), _interval(interval)
    z = _releases(releases, kind.discrete)
    return spec, clamp, kind, level, interval, z, _param(spec, z.shape)


def _param(noise, shape):
    p = np.asarray(noise.param, dtype="float64")
    try:
        return np.broadcast_to(p, shape).ravel()
    except ValueError:
        raise ValueError(
            f"the noise parameter's shape {p.shape} does not broadcast with `releases` {shape}"
        ) from None


def _clamp(given, lower, upper, discrete, z):
    for name, v in (("lower", lower), ("upper", upper)):
        read = given.get(name)
        if v is not None and read is not None and v != read:
            raise ValueError(
                f"`{name}`={v!r} contradicts the measurement's clamp {name}={read!r} "
                "(leave it out: it is read from the measurement)"
            )
    lower = _number("lower", given.get("lower", lower), integer=discrete)
    upper = _number("upper", given.get("upper", upper), integer=discrete)
    if lower is not None and upper is not None and not lower < upper:
        raise ValueError(f"`lower` must be < `upper`; got {lower} and {upper}")
    if lower is not None and np.any(z < lower):
        raise ValueError(
            f"`releases` below the clamp `lower`={lower:g} cannot come from a clamped release; "
            f"got {z[z < lower][:5]}"
        )
    if upper is not None and np.any(z > upper):
        raise ValueError(
            f"`releases` above the clamp `upper`={upper:g} cannot come from a clamped release; "
            f"got {z[z > upper][:5]}"
        )
    return lower, upper


def _prior(prior, n):
    """``(log weights or None, largest count or inf, description)``."""
    if isinstance(prior, str):
        if prior != "flat":
            raise ValueError(f"`prior` must be 'flat' or an array of weights; got {prior!r}")
        if n is None:
            return None, math.inf, "flat on the integers c >= 0"
        n = _number("n", n, integer=True)
        if n < 0:
            raise ValueError(f"`n` must be >= 0; got {n:g}")
        return None, n, f"flat on the integers 0..{n:g}"
    if n is not None:
        raise ValueError(
            "give `n` or an array `prior`, not both (its length sets the largest count)"
        )
    w = np.asarray(prior)
    if w.dtype == bool or not np.issubdtype(w.dtype, np.number) or w.ndim != 1 or w.size == 0:
        raise TypeError(f"`prior` must be 'flat' or a 1-d array of weights; got {prior!r}")
    w = w.astype("float64")
    check_finite("prior", w)
    if np.any(w < 0) or not np.any(w > 0):
        raise ValueError("`prior` weights must be >= 0 with at least one > 0")
    if w.size > MAX_GRID:
        raise ValueError(f"`prior` has {w.size} weights; at most MAX_GRID={MAX_GRID}")
    with np.errstate(divide="ignore"):
        return np.log(w), float(w.size - 1), f"the given weights on 0..{w.size - 1}"


# -- the count posterior --------------------------------------------------------------------------


def _windows(z, kind, p, lower, upper, n_max, bounded_prior):
    """First grid point, width and kind of likelihood (0 interior, 1 lower, 2 upper atom)."""
    atom = np.zeros(z.shape, dtype="int8")
    if lower is not None:
        atom[z == lower] = 1
    if upper is not None:
        atom[z == upper] = 2
    if np.any(atom == 2) and math.isinf(n_max):
        raise ValueError(
            f"a release at the clamp `upper`={upper:g} says only that the count is about "
            "`upper` or more: under the flat prior on all counts >= 0 its posterior is "
            "improper; give `n` (the largest possible count) or a `prior` array"
        )
    if bounded_prior:
        a = np.zeros(z.shape)
        return a, np.full(z.shape, n_max + 1.0), atom
    r = noise_radius(kind(p)).astype("float64") + 1.0
    mode = np.clip(np.rint(z), 0.0, n_max)
    a = np.maximum(mode - r, 0.0)
    b = np.minimum(mode + r, n_max)
    if lower is not None:
        a = np.where(atom == 1, 0.0, a)
        b = np.where(atom == 1, np.minimum(max(lower, 0.0) + r, n_max), b)
    if upper is not None:
        a = np.where(atom == 2, np.maximum(min(upper, n_max) - r, 0.0), a)
        b = np.where(atom == 2, n_max, b)
    width = b - a + 1.0
    if np.any(width > MAX_GRID):
        big = float(np.max(width))
        raise ValueError(
            f"a release needs a grid of {big:.3g} counts (more than MAX_GRID={MAX_GRID}): "
            f"the noise {kind.__name__}({kind.param_name}={np.max(p):.3g}) is too wide for "
            "exact enumeration (or, for a release at `upper`, `n` is far above it)"
        )
    return a, width, atom


def _block_posteriors(kind, z, p, a, width, atom, lower, upper, log_prior, n_max):
    """Rows of the normalised posterior (log) on ``a + arange(W)``, ``-inf`` past each width."""
    w = int(width.max())
    c = a[:, None] + np.arange(w)
    logl = np.empty(c.shape)
    inner = atom == 0
    if np.any(inner):
        logl[inner] = _log_pmf(kind, z[inner, None] - c[inner], p[inner, None])
    if np.any(atom == 1):  # P(N <= lower - c): ascending in x = lower - c, then reversed
        m = atom == 1
        x0 = lower - (a[m] + w - 1)
        logl[m] = _log_cdf_rows(kind, x0, w, p[m])[:, ::-1]
    if np.any(atom == 2):  # P(N >= upper - c) = P(N <= c - upper) (symmetric noise)
        m = atom == 2
        logl[m] = _log_cdf_rows(kind, a[m] - upper, w, p[m])
    if log_prior is not None:
        idx = np.minimum(c, n_max).astype("int64")
        logl += log_prior[idx]
    logl[np.arange(w) >= width[:, None]] = -np.inf
    with np.errstate(invalid="ignore"):
        logl -= np.max(logl, axis=1, keepdims=True)
        logl -= np.log(np.sum(np.exp(logl), axis=1, keepdims=True))
    return c, logl


def _summaries(c, logpost, width, level, interval):
    post = np.exp(logpost)
    cdf = np.cumsum(post, axis=1)
    rows = np.arange(c.shape[0])

    def quantile(q):
        return c[rows, np.argmax(cdf >= q, axis=1)]

    # the last point of each row holds cdf = 1 up to rounding: never pick past it
    last = (width - 1).astype("int64")
    cdf[rows, last] = np.maximum(cdf[rows, last], 1.0)
    if interval == "equal-tailed":
        lo, hi = quantile((1 - level) / 2), quantile(1 - (1 - level) / 2)
    else:  # the most probable counts until their mass reaches the level, and their hull
        ranked = np.sort(post, axis=1)[:, ::-1]  # only the values: ties are kept below
        k = np.minimum(np.argmax(np.cumsum(ranked, axis=1) >= level, axis=1), last)
        keep = post >= ranked[rows, k][:, None]  # ties at the threshold are all kept
        lo = np.where(keep, c, np.inf).min(axis=1).astype("int64")
        hi = np.where(keep, c, -np.inf).max(axis=1).astype("int64")
    mass = np.sum(np.where((c >= lo[:, None]) & (c <= hi[:, None]), post, 0.0), axis=1)
    mean = np.sum(post * c, axis=1)
    return lo, hi, mean, quantile(0.5), mass


def _count_posterior_summaries(
    z, kind, p, level, interval, lower, upper, log_prior, n_max, offset=0.0
):
    """The interval arrays of flat releases ``z`` (grid counts shifted by ``offset``)."""
    a, width, atom = _windows(z, kind, p, lower, upper, n_max, log_prior is not None)
    out = {k: np.empty(z.shape) for k in ("lo", "hi", "mean", "median", "mass")}
    order = np.argsort(width, kind="stable")
    start = 0
    while start < z.size:
        w = width[order[start]]
        rows = max(1, int(_BLOCK // max(w, 1.0)))
        # rows of similar width together (sorted), so the padding stays small
        idx = order[start : start + rows]
        c, logpost = _block_posteriors(
            kind, z[idx], p[idx], a[idx], width[idx], atom[idx], lower, upper, log_prior, n_max
        )
        _check_edges(logpost, a[idx], width[idx], n_max, log_prior is not None)
        lo, hi, mean, med, mass = _summaries(c, logpost, width[idx], level, interval)
        for k, v in zip(
            ("lo", "hi", "mean", "median", "mass"), (lo, hi, mean, med, mass), strict=True
        ):
            out[k][idx] = v
        start += rows
    for k in ("lo", "hi", "mean", "median"):
        out[k] = out[k] + offset
    return out


def _check_edges(logpost, a, width, n_max, bounded_prior):
    """Each grid edge inside the prior's support holds a negligible probability."""
    if bounded_prior:
        return
    rows = np.arange(a.size)
    last = (width - 1).astype("int64")
    first_inside = a > 0
    last_inside = a + width - 1 < n_max
    bad = (first_inside & (logpost[rows, 0] > _EDGE_LOG_MASS)) | (
        last_inside & (logpost[rows, last] > _EDGE_LOG_MASS)
    )
    if np.any(bad):  # pragma: no cover - the radius is built so that this cannot happen
        raise RuntimeError("the grid does not hold the posterior's mass (please report)")


def count_intervals(
    releases,
    noise,
    level=0.95,
    *,
    prior="flat",
    n=None,
    lower=None,
    upper=None,
    interval="hpd",
    d_in=None,
) -> Intervals:
    r"""Credible intervals for the true count behind every released count.

    The exact posterior of each count on a grid (module docstring), for a whole table of
    releases at once: no model, no sampling, cost :math:`O(\text{noise scale})` per release.

    Parameters
    ----------
    releases : array_like
        The released noisy counts (any shape; integers for integer noise).
    noise : Noise or OpenDP Measurement
        The noise spec that made them (:mod:`pymc_dpnoise.noise`, e.g. from
        :func:`~pymc_dpnoise.noise.from_tumult`; its parameter may be an array, one per
        release), or the OpenDP measurement itself, read by
        :func:`~pymc_dpnoise.noise.from_opendp` together with its clamp (an unsigned output
        type is clamped at 0; ``make_geometric(bounds=...)`` at its bounds).
    level : float
        Credible level in (0, 1).
    prior : "flat" or array_like
        ``"flat"``: every count in :math:`\{0, 1, \dots, n\}` equally likely (all
        :math:`c \ge 0` if ``n`` is None).  An array: prior weights of the counts
        :math:`0, 1, \dots, K - 1` (need not sum to 1).
    n : int, optional
        The largest possible count (e.g. the number of records) for the flat prior.
    lower, upper : int, optional
        The clamp of the released value (a release equal to a bound is the atom
        :math:`P(c + N \le \text{lower})` or :math:`P(c + N \ge \text{upper})`), as
        :class:`~pymc_dpnoise.NoisyBinomial`'s.  With an OpenDP measurement they are read
        from it.
    interval : {"hpd", "equal-tailed"}
        Highest posterior density (default) or equal tails (module docstring).
    d_in : float, optional
        With an OpenDP measurement: the input distance its privacy map is read at (default
        1, one person's change of a count).

    Returns
    -------
    Intervals
        ``lo``, ``hi``, ``mean``, ``median``, ``mass`` arrays of the releases' shape.

    Examples
    --------
    >>> from pymc_dpnoise import noise
    >>> iv = count_intervals([40, 3], noise.RoundedLaplace(1.0), level=0.8, n=50)
    >>> iv.lo.tolist(), iv.hi.tolist(), iv.median.tolist()
    ([38, 1], [42, 5], [40, 3])
    """
    spec, clamp, kind, level, interval, z, p = _arguments(releases, noise, level, interval, d_in)
    lower, upper = _clamp(clamp, lower, upper, kind.discrete, z)
    log_prior, n_max, words = _prior(prior, n)
    flat = z.ravel()
    if flat.size == 0:
        empty = np.empty(z.shape)
        return Intervals(empty, empty, empty, empty, empty, level, spec, words)
    out = _count_posterior_summaries(flat, kind, p, level, interval, lower, upper, log_prior, n_max)
    shaped = {k: v.reshape(z.shape) for k, v in out.items()}
    for k in ("lo", "hi", "median"):
        shaped[k] = shaped[k].astype("int64")
    return Intervals(**shaped, level=level, noise=spec, prior=words)


# -- sums -----------------------------------------------------------------------------------------


def _log_cdf(kind, x, p):
    """``log P(N <= x)`` of a continuous kind (exact, both tails)."""
    if kind is Laplace:
        return _laplace_log_cdf(x, p)
    return log_ndtr(x / p)


def _log1mexp(x):
    """``log(1 - e^x)`` for ``x <= 0``."""
    x = np.minimum(x, -1e-300)
    return np.where(x > -_LOG2, np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def _log_between(kind, x1, x2, p):
    """``log P(x1 <= N <= x2)`` for ``x1 <= x2``, without cancellation in either tail."""

    def one_side(lo, hi):  # lo <= hi <= 0
        top = _log_cdf(kind, hi, p)
        return top + _log1mexp(_log_cdf(kind, lo, p) - top)

    with np.errstate(divide="ignore"):
        neg = one_side(np.minimum(x1, 0.0), np.minimum(x2, 0.0))
        pos = one_side(-np.maximum(x2, 0.0), -np.maximum(x1, 0.0))  # symmetric noise
    return np.logaddexp(np.where(x1 < 0, neg, -np.inf), np.where(x2 > 0, pos, -np.inf))


def _truncated_normal_mean(a, b):
    """``E[Z | a <= Z <= b]``, standard normal ``Z``: in a tail through the scaled
    complementary error function (no cancellation of the two tail probabilities)."""

    def upper_tail(a, b):  # 0 <= a <= b: (h(a) - r h(b)) / (1 - r), h the inverse Mills ratio
        ea, eb = erfcx(a / _SQRT2), erfcx(b / _SQRT2)  # eb = 0 at b = inf
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            h_a, h_b = _SQRT_2_PI / ea, _SQRT_2_PI / eb
            log_r = -0.5 * (b - a) * (b + a) + np.log(eb) - np.log(ea)
            r = np.exp(log_r)
            out = h_a - r * (h_b - h_a) / -np.expm1(log_r)
        return np.where(np.isinf(b), h_a, np.clip(out, a, b))

    pos = upper_tail(np.maximum(a, 0.0), np.maximum(b, 0.0))
    neg = -upper_tail(np.maximum(-b, 0.0), np.maximum(-a, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        mass = np.exp(log_ndtr(b) + _log1mexp(log_ndtr(a) - log_ndtr(b)))
        mid = (np.exp(-0.5 * a**2) - np.exp(-0.5 * b**2)) / math.sqrt(2.0 * math.pi) / mass
    return np.where(a >= 0, pos, np.where(b <= 0, neg, mid))


def _truncated_mean(kind, x1, x2, p):
    """``E[N | x1 <= N <= x2]`` (continuous symmetric kinds)."""
    if kind is Gaussian:
        return p * _truncated_normal_mean(x1 / p, x2 / p)

    def side(lo, hi):  # E[N | lo <= N <= hi] for 0 <= lo <= hi: lo + truncated exponential
        wid = hi - lo
        with np.errstate(invalid="ignore", divide="ignore"):
            tail = np.where(wid > 0, wid / np.expm1(np.minimum(wid / p, 700.0)), p)
        return lo + p - np.where(wid / p > 700.0, 0.0, tail)

    with np.errstate(divide="ignore"):
        log_neg = _log_between(kind, x1, np.minimum(x2, 0.0), p)
        log_pos = _log_between(kind, np.maximum(x1, 0.0), x2, p)
    w_pos = np.exp(log_pos - np.logaddexp(log_neg, log_pos))
    m_pos = side(np.maximum(x1, 0.0), np.maximum(x2, 0.0))
    m_neg = -side(np.maximum(-x2, 0.0), np.maximum(-x1, 0.0))
    return np.where(x2 <= 0, m_neg, np.where(x1 >= 0, m_pos, w_pos * m_pos + (1 - w_pos) * m_neg))


def _bisect(holds, a, b):
    """The smallest ``x`` in ``[a, b]`` (to adjacent floats) where the monotone ``holds(x)``
    becomes true, elementwise."""
    for _ in range(2200):  # at most ~2100 halvings separate two floats
        mid = 0.5 * (a + b)
        if np.all((mid == a) | (mid == b)):
            break
        ok = holds(mid)
        a, b = np.where(ok, a, mid), np.where(ok, mid, b)
    return b


def sum_intervals(
    releases, noise, level=0.95, *, n, lower, upper, interval="hpd", d_in=None
) -> Intervals:
    r"""Credible intervals for the true sum behind every released noisy sum.

    The release is :math:`z = S + N`, :math:`S` the sum of ``n`` values each clamped to
    ``[lower, upper]``; the prior is flat on :math:`S \in [n\,\mathrm{lower},
    n\,\mathrm{upper}]` (real :math:`S` for continuous noise, integer :math:`S` for integer
    noise).  Continuous noise: the posterior is :math:`z - N` with :math:`N` truncated to
    :math:`[z - n\,\mathrm{upper}, z - n\,\mathrm{lower}]`, its quantiles solved by
    bisection on the noise's log CDF to the last bit and its mean in closed form; integer
    noise: the count posterior of :func:`count_intervals` on the integers of the range.

    Parameters
    ----------
    releases : array_like
        The released noisy sums.
    noise : Noise or OpenDP Measurement
        The noise spec (its parameter may be an array, one per release) or the OpenDP
        measurement of the whole chain (``make_clamp >> then_sum >> then_laplace``).
    level : float
        Credible level in (0, 1).
    n : int
        Number of values summed (known).
    lower, upper : float
        Each value's clamp (integers for integer noise).
    interval : {"hpd", "equal-tailed"}
        Highest posterior density (default: for symmetric noise the set :math:`|z - S| \le r`
        within the range, :math:`r` by bisection) or equal tails.
    d_in : float, optional
        With an OpenDP measurement: the input distance (default 1).

    Examples
    --------
    >>> from pymc_dpnoise import noise
    >>> iv = sum_intervals([510.0, -40.0], noise.Laplace(10.0), n=100, lower=0.0, upper=10.0)
    >>> [round(float(v), 2) for v in iv.lo], [round(float(v), 2) for v in iv.hi]
    ([480.04, 0.0], [539.96, 29.96])
    """
    spec, _, kind, level, interval, z, p = _arguments(releases, noise, level, interval, d_in)
    n = _number("n", n, integer=True, allow_none=False)
    if n < 1:
        raise ValueError(f"`n` must be >= 1; got {n:g}")
    lower = _number("lower", lower, integer=kind.discrete, allow_none=False)
    upper = _number("upper", upper, integer=kind.discrete, allow_none=False)
    if not lower < upper:
        raise ValueError(f"`lower` must be < `upper`; got {lower} and {upper}")
    s_lo, s_hi = n * lower, n * upper
    words = f"flat on the sum in [{s_lo:g}, {s_hi:g}]"
    flat = z.ravel()
    if kind.discrete:
        out = _count_posterior_summaries(
            flat - s_lo, kind, p, level, interval, None, None, None, s_hi - s_lo, offset=s_lo
        )
        shaped = {k: v.reshape(z.shape) for k, v in out.items()}
        for k in ("lo", "hi", "median"):
            shaped[k] = shaped[k].astype("int64")
        return Intervals(**shaped, level=level, noise=spec, prior=words)
    # S <= s  <=>  N >= z - s: P(S <= s | z) = P(z - s <= N <= z - s_lo) / P(z - s_hi <= N <= z - s_lo)
    log_total = _log_between(kind, flat - s_hi, flat - s_lo, p)

    def quantile(q):
        return _bisect(
            lambda s: _log_between(kind, flat - s, flat - s_lo, p) >= np.log(q) + log_total,
            np.full(flat.shape, s_lo),
            np.full(flat.shape, s_hi),
        )

    median = quantile(0.5)
    if interval == "equal-tailed":
        lo, hi = quantile((1 - level) / 2), quantile(1 - (1 - level) / 2)
    else:  # the density depends on |z - s| only: the set |z - s| <= r of mass `level`
        r = _bisect(
            lambda r: (
                _log_between(
                    kind, flat - np.minimum(s_hi, flat + r), flat - np.maximum(s_lo, flat - r), p
                )
                >= np.log(level) + log_total
            ),
            np.zeros(flat.shape),
            np.maximum(np.abs(flat - s_lo), np.abs(flat - s_hi)),
        )
        lo, hi = np.maximum(s_lo, flat - r), np.minimum(s_hi, flat + r)
    mean = flat - _truncated_mean(kind, flat - s_hi, flat - s_lo, p)
    out = {"lo": lo, "hi": hi, "mean": mean, "median": median, "mass": np.full(flat.shape, level)}
    shaped = {k: v.reshape(z.shape) for k, v in out.items()}
    return Intervals(**shaped, level=level, noise=spec, prior=words)


# -- means: a noisy sum over a noisy count --------------------------------------------------------


def _widen_for_the_sum(a, width, zs, r_count, lo_v, up_v, n_max):
    """The count grid, widened to hold the joint posterior of the count: up to the count
    ``c_s`` whose range ``[c lower, c upper]`` first reaches the sum release, plus the count
    noise's radius beyond it (past ``c_s`` the sum allows every count and the count's
    likelihood falls as the count noise does).  The edges are checked afterwards."""
    top = a + width - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        if up_v > 0:  # fewest counts whose range reaches zs: c upper >= zs
            reach = np.minimum(np.ceil(zs / up_v) + r_count + 1.0, n_max)
            top = np.where(zs > 0, np.maximum(top, reach), top)
        if lo_v > 0:  # most counts whose range reaches zs: c lower <= zs
            reach = np.maximum(np.floor(zs / lo_v) - r_count - 1.0, 1.0)
            a = np.where(zs > 0, np.minimum(a, reach), a)
    width = top - a + 1.0
    if np.any(width > MAX_GRID):
        raise ValueError(
            f"the sum and count releases need a grid of {np.max(width):.3g} counts (more than "
            f"MAX_GRID={MAX_GRID}): they disagree by far more than their noise"
        )
    return a, width


def mean_intervals(
    sum_releases,
    count_releases,
    sum_noise,
    count_noise,
    level=0.95,
    *,
    lower,
    upper,
    n=None,
    count_lower=None,
    count_upper=None,
) -> Intervals:
    r"""Equal-tailed credible intervals for the mean behind a released noisy sum and count.

    The releases are :math:`z_S = S + N_S`, :math:`S` the sum of :math:`c` values each
    clamped to ``[lower, upper]``, and :math:`z_C = \mathrm{clamp}(c + N_C)`; the mean is
    :math:`\mu = S/c`.  The prior: the count :math:`c` flat on :math:`\{1, \dots, n\}`
    (:math:`n = \infty` unless given) and, independently, the mean uniform on ``[lower,
    upper]`` (so :math:`S = c\mu` is uniform on :math:`[c\,\mathrm{lower}, c\,\mathrm{upper}]`
    given :math:`c`).  Then

    .. math::

       P(\mu \le t \mid z_S, z_C) \propto \sum_{c \ge 1} \frac{L_C(c)}{c}\,
       P(z_S - c\,t \le N_S \le z_S - c\,\mathrm{lower}),

    with :math:`L_C` the count's likelihood (:func:`count_intervals`), a sum over the count's
    grid of exact noise probabilities (no sampling; quantiles by bisection in :math:`t`).
    The count's grid is the one that holds the count posterior; if the sum release pulls
    the count outside it (releases that disagree by many noise scales) the result is refused
    rather than truncated.  The sum's noise must be continuous (Laplace or Gaussian).

    Parameters
    ----------
    sum_releases, count_releases : array_like
        The released noisy sums and counts (broadcast together).
    sum_noise, count_noise : Noise or OpenDP Measurement
        The specs (or measurements) of the two releases.
    level : float
        Credible level in (0, 1).
    lower, upper : float
        Each value's clamp.
    n : int, optional
        The largest possible count.
    count_lower, count_upper : int, optional
        The count release's clamp (read from an OpenDP count measurement).

    Examples
    --------
    >>> from pymc_dpnoise import noise
    >>> iv = mean_intervals([450.0], [90], noise.Laplace(10.0), noise.DiscreteLaplace(2.0),
    ...                     lower=0.0, upper=10.0)
    >>> round(float(iv.lo[0]), 3), round(float(iv.hi[0]), 3), round(float(iv.median[0]), 3)
    (4.57, 5.487, 5.003)
    """
    s_spec, _ = _read_noise(sum_noise, None)
    if type(s_spec).discrete:
        raise TypeError(
            f"`sum_noise` must be continuous (Laplace or Gaussian) for a mean; got {s_spec!r}"
        )
    spec, clamp, kind, level, _, zc = _arguments(count_releases, count_noise, level, "hpd", None)[
        :6
    ]
    zs = _releases(sum_releases, False)
    try:
        shape = np.broadcast_shapes(zs.shape, zc.shape)
    except ValueError:
        raise ValueError(
            f"`sum_releases` {zs.shape} and `count_releases` {zc.shape} do not broadcast"
        ) from None
    zs, zc = np.broadcast_to(zs, shape).ravel(), np.broadcast_to(zc, shape).ravel()
    pc, ps = _param(spec, shape), _param(s_spec, shape)
    lo_v = _number("lower", lower, allow_none=False)
    up_v = _number("upper", upper, allow_none=False)
    if not lo_v < up_v:
        raise ValueError(f"`lower` must be < `upper`; got {lo_v} and {up_v}")
    c_low, c_up = _clamp(clamp, count_lower, count_upper, kind.discrete, zc.reshape(shape))
    _, n_max, _ = _prior("flat", n)
    if n_max < 1:
        raise ValueError(f"`n` must be >= 1 for a mean; got {n}")
    a, width, atom = _windows(zc, kind, pc, c_low, c_up, n_max, False)
    r_count = noise_radius(type(spec)(pc)).astype("float64")
    a, width = _widen_for_the_sum(a, width, zs, r_count, lo_v, up_v, n_max)
    c, logw = _block_posteriors(kind, zc, pc, a, width, atom, c_low, c_up, None, n_max)
    s_kind = type(s_spec)
    with np.errstate(divide="ignore", invalid="ignore"):
        cc = np.maximum(c, 1.0)
        zs2, ps2 = zs[:, None], ps[:, None]
        log_slice = _log_between(s_kind, zs2 - cc * up_v, zs2 - cc * lo_v, ps2)
        logw = np.where(c >= 1, logw + log_slice - np.log(cc), -np.inf)
        logw -= np.max(logw, axis=1, keepdims=True)
        logw -= np.log(np.sum(np.exp(logw), axis=1, keepdims=True))
    rows = np.arange(zc.size)
    last = (width - 1).astype("int64")
    inside = (a > 1) & (logw[rows, 0] > _EDGE_LOG_MASS) | (a + width - 1 < n_max) & (
        logw[rows, last] > _EDGE_LOG_MASS
    )
    if np.any(inside):
        raise ValueError(
            "the sum and count releases disagree by many noise scales (the sum needs counts "
            "the count release excludes): no mean interval for "
            f"`sum_releases`={zs[inside][:3]}, `count_releases`={zc[inside][:3]}"
        )
    w = np.exp(logw)

    def cdf(t):
        with np.errstate(divide="ignore", invalid="ignore"):
            part = _log_between(s_kind, zs2 - cc * t[:, None], zs2 - cc * lo_v, ps2) - log_slice
        return np.sum(np.where(w > 0, w * np.exp(part), 0.0), axis=1)

    def quantile(q):
        return _bisect(lambda t: cdf(t) >= q, np.full(zs.size, lo_v), np.full(zs.size, up_v))

    alpha = 1.0 - level
    with np.errstate(invalid="ignore"):
        cond = (zs2 - _truncated_mean(s_kind, zs2 - cc * up_v, zs2 - cc * lo_v, ps2)) / cc
    mean = np.sum(np.where(w > 0, w * cond, 0.0), axis=1)
    out = {
        "lo": quantile(alpha / 2),
        "hi": quantile(1 - alpha / 2),
        "mean": mean,
        "median": quantile(0.5),
        "mass": np.full(zs.size, level),
    }
    words = f"count flat on 1..{n_max:g}, mean uniform on [{lo_v:g}, {up_v:g}], independent"
    return Intervals(
        **{k: v.reshape(shape) for k, v in out.items()}, level=level, noise=s_spec, prior=words
    )
