r"""Real releases with `OpenDP <https://opendp.org>`_, in the form this package's models read.

The other functions of :mod:`pymc_dpnoise.mechanisms` are *simulation grade*: NumPy's generator
and floating-point Laplace noise are fine for experiments, but a data holder releasing real data
should use a library whose sampling is hardened against floating-point attacks and whose
privacy accounting is proved.  The functions here run OpenDP's measurements (OpenDP >= 0.15,
``pip install "pymc-dpnoise[opendp]"``) and return the reports together with the keyword
arguments of the distribution that inverts them, so that

.. code-block:: python

    rel = release_clipped_laplace(x, lower=-5.0, upper=5.0, epsilon=1.0)
    LaplacePerturbedClippedNormal("z", mu=mu, sigma=sigma, **rel.model_kwargs, observed=rel.reports)

is a complete, honest pipeline.  The local-DP functions (:func:`release_clipped_laplace`,
:func:`release_krr`, :func:`release_sue`) build the OpenDP measurement for **one record's
report** and check, with OpenDP's own privacy map, that the record-level privacy loss equals the
``epsilon`` asked for; the value OpenDP states is returned as ``epsilon``.  The count releases
(central DP, see below) check the whole release's budget the same way.  Every release function
goes through :func:`pymc_dpnoise.mechanisms.core.release_guard` (privacy parameters validated
before anything is released, no non-finite output).

How OpenDP's parameters map to ours
-----------------------------------

.. list-table::
   :header-rows: 1

   * - our mechanism and distribution
     - OpenDP measurement
     - parameter map
   * - clip to :math:`[a, b]`, add :math:`\mathrm{Laplace}(0, (b - a)/\varepsilon)`;
       :class:`~pymc_dpnoise.LaplacePerturbedClippedNormal`,
       :class:`~pymc_dpnoise.LaplacePerturbedClippedExponential` (:math:`a = 0`, :math:`b = c`)
     - ``make_laplace`` on ``vector_domain(atom_domain(bounds=(a, b)))`` with ``l1_distance``
     - ``scale`` :math:`= (b - a)/\varepsilon`; one record changes the input by at most
       ``d_in`` :math:`= b - a`, and ``map(d_in)`` :math:`= \varepsilon`.  OpenDP samples the
       noise on a lattice of spacing :math:`2^k` (``k`` chosen from the scale; about
       :math:`10^{-9}` at scale 10), which the continuous Laplace likelihood ignores: the
       difference in log density is of the order of the lattice spacing over the scale.
   * - :math:`k`-ary randomized response, keep probability
       :math:`e^\varepsilon/(e^\varepsilon + k - 1)`; :class:`~pymc_dpnoise.KRRLikelihood`
     - ``make_randomized_response(categories=range(k), prob)``
     - ``prob`` :math:`= e^\varepsilon/(e^\varepsilon + k - 1)`; ``map(1)`` :math:`= \varepsilon`
   * - symmetric unary encoding (basic RAPPOR), each bit kept with probability
       :math:`e^{\varepsilon/2}/(1 + e^{\varepsilon/2})`; :class:`~pymc_dpnoise.SUELikelihood`
     - ``make_randomized_response_bitvec`` on ``bitvector_domain(max_weight=1)``
     - OpenDP's ``f`` is the probability that a bit is *randomised* (then 0 or 1 with equal
       probability), so a bit flips with probability :math:`f/2`:
       ``f`` :math:`= 2/(1 + e^{\varepsilon/2})`; ``map(1)`` :math:`= 2 \log((2 - f)/f) =
       \varepsilon`

Noisy counts: integer ``make_laplace`` and ``make_gaussian``
-------------------------------------------------------------

On an integer domain (``i32``, ``i64``, ``u32``, ``u64``, an atom or a vector of them) OpenDP's
``make_laplace`` adds *discrete* Laplace noise and its ``make_gaussian`` *discrete* Gaussian
noise, accounted in pure :math:`\varepsilon`-DP and in :math:`\rho`-zCDP.  These are the noise
specs :class:`~pymc_dpnoise.noise.DiscreteLaplace` and
:class:`~pymc_dpnoise.noise.DiscreteGaussian`, which :class:`~pymc_dpnoise.NoisyBinomial` and
:class:`~pymc_dpnoise.NoisyPoisson` take as ``noise=``:

* :func:`noise_from_measurement` (also :func:`pymc_dpnoise.noise.from_opendp`) reads the spec
  of a measurement built with ``make_laplace`` / ``make_gaussian`` (or ``then_laplace`` /
  ``then_gaussian``, alone or at the end of a chain of transformations), on integers or floats,
  and checks it against OpenDP's own privacy map;
* :func:`clamp_from_measurement` gives the censoring of OpenDP's saturating cast (``lower=0``
  for unsigned outputs), :func:`model_kwargs_from_measurement` both at once;
* :func:`release_discrete_laplace_counts` and :func:`release_discrete_gaussian_counts` run
  those measurements on counts and return the release with its ``model_kwargs``.

.. list-table::
   :header-rows: 1

   * - OpenDP measurement (on the noise's input domain)
     - output measure
     - noise spec (``d_in`` :math:`= \Delta`)
   * - ``make_laplace(scale=b)`` on integers
     - ``MaxDivergence``, ``map(d_in)`` :math:`= \Delta/b`
     - :class:`~pymc_dpnoise.noise.DiscreteLaplace` ``(b)``
   * - ``make_gaussian(scale=s)`` on integers
     - ``ZeroConcentratedDivergence``, ``map(d_in)`` :math:`= (\Delta/s)^2/2`
     - :class:`~pymc_dpnoise.noise.DiscreteGaussian` ``(s)``
   * - ``make_laplace(scale=b)`` on floats
     - ``MaxDivergence``
     - :class:`~pymc_dpnoise.noise.Laplace` ``(b)``
   * - ``make_gaussian(scale=s)`` on floats
     - ``ZeroConcentratedDivergence``
     - :class:`~pymc_dpnoise.noise.Gaussian` ``(s)``

See :doc:`/real_releases` for the other libraries (Tumult Analytics, python-dp, SmartNoise,
the 2020 Census) and a worked example.

Examples
--------
>>> import numpy as np
>>> rel = release_krr(np.array([0, 2, 1, 1]), k=3, epsilon=1.0)
>>> rel.reports.shape, round(rel.epsilon, 12), rel.model_kwargs
((4,), 1.0, {'epsilon': 1.0})
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..noise import MAP_RTOL as _MAP_RTOL
from ..noise import Noise, opendp_censoring, read_opendp
from ..validation import check_less
from .core import as_float, check_privacy_parameter, release_guard

__all__ = [
    "MAP_RTOL",
    "OpenDPRelease",
    "clamp_from_measurement",
    "model_kwargs_from_measurement",
    "noise_from_measurement",
    "release_clipped_laplace",
    "release_discrete_gaussian_counts",
    "release_discrete_laplace_counts",
    "release_krr",
    "release_sue",
]


@dataclasses.dataclass(frozen=True)
class OpenDPRelease:
    """Reports released by an OpenDP measurement: one per record, or the noisy counts.

    Attributes
    ----------
    reports : numpy.ndarray
        The released reports, one per record (first axis), in the layout the matching
        distribution takes as ``observed``; for the count releases, the noisy counts (same
        shape as the counts).
    epsilon : float or None
        The privacy loss as OpenDP's privacy map states it (pure ε-DP): per record for the
        local-DP releases, of the whole release for the count releases; None for a zCDP
        release (see ``rho``).
    model_kwargs : dict
        Keyword arguments of the matching distribution that describe the mechanism (for the
        count releases ``noise=`` a noise spec, and ``lower=0`` when OpenDP's saturating cast
        censors the output).
    measurement : str
        The OpenDP measurement used, with its parameters.
    rho : float or None
        The zCDP parameter OpenDP's map states for a Gaussian release, else None.
    """

    reports: np.ndarray
    epsilon: float | None
    model_kwargs: dict
    measurement: str
    rho: float | None = None


def _opendp():
    from ..optional import require

    dp = require("opendp.prelude", extra="opendp", feature="releasing with OpenDP")
    dp.enable_features("contrib")
    return dp


def _check_epsilon(epsilon) -> float:
    eps = check_privacy_parameter("epsilon", epsilon, "epsilon")  # refuses bool, NaN, inf
    if np.ndim(eps):
        raise ValueError("`epsilon` must be a scalar: one budget for every record's report")
    return float(eps)


def _guard(records, **privacy):
    """The package's release guard for a local-DP OpenDP wrapper (one budget per release)."""
    privacy = {**privacy, "epsilon": "epsilon"}
    return release_guard(records=records, privacy=privacy, scalar=tuple(privacy), output=_reports)


def _calibrate(build, param: float, toward: float, epsilon: float, what: str):
    """The measurement ``build(p)`` with ``p`` moved from ``param`` toward ``toward`` (more noise)
    by as few ulps as make OpenDP's stated loss ``<= epsilon``.

    ``param`` is the exact value for ``epsilon``; OpenDP's map rounds up, so it can state a
    loss a few ulps above ``epsilon`` (relative 1e-4 at epsilon = 1e-12, more above 30), beyond
    the relative 1e-9 that :func:`_check_stated` allows.
    Refused with a ValueError naming ``epsilon`` when no representable ``p`` gets within 1% of
    ``epsilon`` (the keep probability of randomized response rounds to 1, or to uniform).
    """
    from opendp.mod import OpenDPException

    p, step, stated = param, 0.0, math.nan
    for _ in range(80):
        try:
            meas = build(p)
            stated = float(meas.map(1))
        except OpenDPException:  # e.g. a flip probability that underflows to 0
            break
        if 0.99 * epsilon <= stated <= epsilon * (1 + 1e-9):  # _check_stated's tolerance
            return meas, p, stated
        if stated < 0.99 * epsilon:
            break
        step = max(2.0 * step, float(np.spacing(p)))
        p = param + math.copysign(step, toward - param)
        if not min(param, toward) <= p <= max(param, toward):
            break
    closest = (
        f"the closest parameter states a privacy loss of {stated!r}"
        if math.isfinite(stated)
        else "OpenDP refuses the parameter (it underflows)"
    )
    raise ValueError(
        f"`epsilon` = {epsilon!r} cannot be implemented by {what} in double precision: "
        f"{closest}; use an `epsilon` between about 1e-10 and 30"
    )


def _check_stated(stated: float, epsilon: float, name: str = "epsilon") -> float:
    if not stated <= epsilon * (1 + 1e-9):
        raise RuntimeError(  # pragma: no cover - a mismatch would be a bug in the map above
            f"OpenDP states a privacy loss of {stated}, more than {name}={epsilon}"
        )
    return float(stated)


def _reports(release: OpenDPRelease) -> np.ndarray:
    return release.reports


def _records(x, name: str, ndim: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must be numeric; got dtype {arr.dtype}")
    if arr.ndim != ndim or arr.shape[0] == 0:
        raise ValueError(f"`{name}` must be a non-empty {ndim}-d array; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` must be finite")
    return arr


@release_guard(
    records="x",
    privacy={"lower": "finite", "upper": "finite", "epsilon": "epsilon"},
    scalar=("lower", "upper", "epsilon"),
    output=_reports,
    noise_scale=lambda a: (as_float(a["upper"]) - as_float(a["lower"])) / as_float(a["epsilon"]),
    magnitude=lambda a: max(abs(as_float(a["lower"])), abs(as_float(a["upper"]))),
)
def release_clipped_laplace(x, lower, upper, epsilon) -> OpenDPRelease:
    r"""Clip each record to ``[lower, upper]`` and release it with OpenDP's Laplace measurement.

    The local-DP release read by :class:`~pymc_dpnoise.LaplacePerturbedClippedNormal` (and by
    :class:`~pymc_dpnoise.LaplacePerturbedClippedExponential` with ``lower = 0``,
    ``upper`` the clipping bound).  ``scale = (upper - lower)/epsilon``.

    Parameters
    ----------
    x : array_like, shape (N,)
        One private value per record.
    lower, upper : float
        The clipping bounds, fixed before seeing the data (never computed from it).
    epsilon : float
        Each record's privacy budget (> 0).

    Returns
    -------
    OpenDPRelease
        ``reports`` of shape (N,); ``model_kwargs`` = ``{"lower", "upper", "epsilon"}``, the
        arguments of :class:`~pymc_dpnoise.LaplacePerturbedClippedNormal` (the exponential
        model takes ``upper`` and ``epsilon`` only, with ``lower = 0``).
    """
    dp = _opendp()
    x = _records(x, "x", 1).astype(float)
    check_less("lower", lower, "upper", upper)
    eps = _check_epsilon(epsilon)
    lower, upper = float(lower), float(upper)
    scale = (upper - lower) / eps
    space = (
        dp.vector_domain(dp.atom_domain(T=float, nan=False, bounds=(lower, upper))),
        dp.l1_distance(T=float),
    )
    meas = dp.m.make_laplace(*space, scale=scale)
    stated = _check_stated(meas.map(upper - lower), eps)
    reports = np.asarray(meas(np.clip(x, lower, upper).tolist()), dtype=float)
    return OpenDPRelease(
        reports,
        stated,
        {"lower": lower, "upper": upper, "epsilon": eps},
        f"make_laplace(scale={scale!r}) on values clipped to [{lower}, {upper}]",
    )


def _items(items, k) -> tuple[np.ndarray, int]:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise ValueError(f"`k` (the number of items) must be an integer >= 2; got {k!r}")
    arr = _records(items, "items", 1)
    if arr.dtype.kind == "f" and not np.all((arr == np.round(arr)) & (arr >= 0) & (arr < k)):
        raise ValueError(f"`items` must be integer item ids in 0..{k - 1}")  # before the cast
    arr = arr.astype(np.int64)
    if arr.min() < 0 or arr.max() >= k:
        raise ValueError(f"`items` must be in 0..{k - 1}; got values in [{arr.min()}, {arr.max()}]")
    return arr, int(k)


@_guard("items")
def release_krr(items, k, epsilon) -> OpenDPRelease:
    r""":math:`k`-ary randomized response with OpenDP, read by :class:`~pymc_dpnoise.KRRLikelihood`.

    Each record's item (an integer in ``0..k-1``) is kept with probability
    :math:`e^\varepsilon/(e^\varepsilon + k - 1)` and otherwise replaced by one of the other
    items uniformly.

    Returns
    -------
    OpenDPRelease
        ``reports`` of shape (N,) (item ids); ``model_kwargs`` = ``{"epsilon"}`` (the
        distribution's ``p`` has length ``k``).
    """
    dp = _opendp()
    arr, k = _items(items, k)
    eps = _check_epsilon(epsilon)
    prob = math.exp(-math.log1p((k - 1) * math.exp(-eps)))  # e^ε / (e^ε + k - 1), no overflow
    meas, used, stated = _calibrate(
        lambda p: dp.m.make_randomized_response(categories=list(range(k)), prob=p),
        prob,
        1.0 / k,
        eps,
        f"randomized response over {k} items",
    )
    stated = _check_stated(stated, eps)
    # the epsilon the keep probability implements (moved by a few ulps if OpenDP needed it)
    model_eps = eps if used == prob else math.log(used) - math.log1p(-used) + math.log(k - 1)
    prob = used
    reports = np.fromiter((meas(int(i)) for i in arr), dtype=np.int64, count=arr.size)
    return OpenDPRelease(
        reports,
        stated,
        {"epsilon": model_eps},
        f"make_randomized_response(categories=range({k}), prob={prob!r})",
    )


@_guard("items")
def release_sue(items, k, epsilon) -> OpenDPRelease:
    r"""Symmetric unary encoding (basic RAPPOR) with OpenDP, read by :class:`~pymc_dpnoise.SUELikelihood`.

    Each record's item is one-hot encoded in ``k`` bits and every bit is randomised by OpenDP's
    bit-vector randomized response with ``f = 2/(1 + e^{ε/2})``, i.e. kept with probability
    :math:`e^{\varepsilon/2}/(1 + e^{\varepsilon/2})`.

    Returns
    -------
    OpenDPRelease
        ``reports`` of shape (N, k) (0/1, ``int8``); ``model_kwargs`` = ``{"epsilon"}``.
    """
    dp = _opendp()
    arr, k = _items(items, k)
    eps = _check_epsilon(epsilon)
    f = 2.0 * math.exp(-eps / 2.0) / (1.0 + math.exp(-eps / 2.0))  # 2/(1 + e^{ε/2}), no overflow
    meas, used, stated = _calibrate(
        lambda v: dp.m.make_randomized_response_bitvec(
            dp.bitvector_domain(max_weight=1), dp.discrete_distance(), f=v
        ),
        f,
        1.0,
        eps,
        "bit-vector randomized response",
    )
    stated = _check_stated(stated, eps)
    # the epsilon the flip probability f/2 implements (moved if OpenDP needed it)
    model_eps = eps if used == f else 2.0 * (math.log1p(-used / 2.0) - math.log(used / 2.0))
    f = used
    out = np.empty((arr.size, k), dtype=np.int8)
    for r, item in enumerate(arr):
        bits = np.zeros(k, dtype=np.uint8)
        bits[item] = 1
        released = np.frombuffer(meas(np.packbits(bits).tobytes()), dtype=np.uint8)
        out[r] = np.unpackbits(released)[:k]
    return OpenDPRelease(
        out, stated, {"epsilon": model_eps}, f"make_randomized_response_bitvec(f={f!r}), one-hot"
    )


# ------------------------------------------------------------------------------------------------
# Reading a measurement: the noise spec of make_laplace / make_gaussian
# ------------------------------------------------------------------------------------------------

#: relative agreement required between OpenDP's privacy map and the spec's own accounting
#: (:math:`\Delta/b` or :math:`\Delta^2/(2\sigma^2)`).  OpenDP's maps of integer measurements,
#: and of float measurements with the default noise granularity, agree to rounding (below
#: 1e-7, the ``f32`` distances' conversion); a float measurement built with a coarse ``k``
#: adds the lattice spacing :math:`2^k` to ``d_in`` and is refused.
MAP_RTOL = _MAP_RTOL


def noise_from_measurement(measurement, d_in=1) -> Noise:
    r"""The noise spec of an OpenDP ``make_laplace`` / ``make_gaussian`` measurement, checked.

    ``measurement`` is built with ``make_laplace`` or ``make_gaussian`` (or ``then_laplace`` /
    ``then_gaussian``), directly or at the end of a chain of transformations (e.g.
    ``then_count() >> then_laplace(2.0)``), on an atom or vector domain:

    * integers (``i32``, ``i64``, ``u32``, ``u64``) and ``MaxDivergence`` (pure DP):
      :class:`~pymc_dpnoise.noise.DiscreteLaplace` with OpenDP's ``scale``;
    * integers and ``ZeroConcentratedDivergence``: :class:`~pymc_dpnoise.noise.DiscreteGaussian`
      with :math:`\sigma` = ``scale``;
    * floats (``f32``, ``f64``): :class:`~pymc_dpnoise.noise.Laplace` /
      :class:`~pymc_dpnoise.noise.Gaussian`.  OpenDP samples them on a lattice of spacing
      :math:`2^k`; with the default ``k`` the spacing is far below the scale and ignored.

    For a vector domain the spec is that of each coordinate (independent noise).

    **How the scale is found, and checked.**  OpenDP records the arguments of the constructor
    on the measurement (``__opendp_dict__``); the scale is read from there.  If that record is
    missing (a measurement built otherwise), the scale is the inverse of OpenDP's privacy map
    at the noise's input distance :math:`\Delta` (:math:`b = \Delta/\varepsilon`,
    :math:`\sigma = \Delta/\sqrt{2\rho}`), and the map's shape is checked at :math:`2\Delta`
    (linear in :math:`\Delta` for the Laplace, quadratic for the Gaussian).  Either way, the
    spec's own accounting (:meth:`~pymc_dpnoise.noise.DiscreteLaplace.epsilon` /
    :meth:`~pymc_dpnoise.noise.DiscreteGaussian.rho` at :math:`\Delta`) must equal
    ``measurement.map(d_in)`` to a relative :data:`MAP_RTOL` (1e-6), where :math:`\Delta` is
    ``d_in`` carried through the chain's transformations (their stability maps).  Refused with
    a ``ValueError`` that names the problem: other output measures (approximate DP after
    ``make_zCDP_to_approxDP`` / ``make_fix_delta``, Renyi DP), other constructions
    (post-processing, composition, thresholded or randomized-response mechanisms), other
    element types, a float measurement whose coarse granularity ``k`` makes OpenDP's map
    exceed the spec's accounting, and scales outside the specs' range [1e-3, 1e7] (a scale of
    0, no noise, included).

    **Unsigned outputs are censored at 0.**  OpenDP adds integer noise with a *saturating*
    cast to the element type: on ``u32`` / ``u64`` (e.g. a count typed unsigned, as Polars'
    ``len``) every value that count + noise would take below 0 is released as 0, so the
    release is the count plus the noise, censored below at 0 (an atom at 0).  The spec is only
    the noise; :func:`clamp_from_measurement` gives that censoring as ``{"lower": 0}``, and
    :func:`model_kwargs_from_measurement` both, so that

    .. code-block:: python

        kw = model_kwargs_from_measurement(meas)   # {"noise": DiscreteGaussian(...), "lower": 0}
        pmd.NoisyBinomial("y", n=n, p=p, **kw, observed=release)

    Signed types saturate at their limits too (``i32``: :math:`\pm(2^{31}-1)`), which only
    values within a few noise scales of them reach; they are not reported.

    Parameters
    ----------
    measurement : opendp.mod.Measurement
    d_in : int or float
        The input distance at which the map is checked: one person's change of the
        measurement's input (1 for a count or a histogram under add/remove).  It must be of
        the input metric's distance type (an ``int`` for ``absolute_distance(T="i32")``).

    Returns
    -------
    Noise
        The noise spec (:func:`pymc_dpnoise.noise.from_opendp` returns the same).

    Examples
    --------
    >>> import opendp.prelude as dp
    >>> dp.enable_features("contrib")
    >>> space = dp.atom_domain(T="i64"), dp.absolute_distance(T="i64")
    >>> noise_from_measurement(dp.m.make_gaussian(*space, scale=3.0))
    DiscreteGaussian(sigma=3.0)
    >>> counts = dp.vector_domain(dp.atom_domain(T="i32")), dp.symmetric_distance()
    >>> noise_from_measurement(counts >> dp.t.then_count() >> dp.m.then_laplace(2.0))
    DiscreteLaplace(scale=2.0)
    """
    return read_opendp(measurement, d_in)[0]


def clamp_from_measurement(measurement) -> dict:
    """The censoring of OpenDP's saturating cast: ``{"lower": 0}`` for unsigned outputs, else ``{}``.

    Integer noise is added with a cast that saturates at the element type's limits; for
    ``u32`` / ``u64`` the release is censored below at 0.  ``make_geometric(..., bounds=(L,
    U))`` censors the release to ``[L, U]``: ``{"lower": L, "upper": U}``.  Both are what
    :class:`~pymc_dpnoise.NoisyBinomial` and :class:`~pymc_dpnoise.NoisyPoisson` model with
    ``lower=0``.  Float outputs and signed integers return ``{}`` (see
    :func:`noise_from_measurement`).  The measurement must be one that
    :func:`noise_from_measurement` reads (its structure is checked; no map is evaluated).

    Examples
    --------
    >>> import opendp.prelude as dp
    >>> dp.enable_features("contrib")
    >>> space = dp.atom_domain(T="u32"), dp.absolute_distance(T="u32")
    >>> clamp_from_measurement(dp.m.make_laplace(*space, scale=2.0))
    {'lower': 0}
    """
    if not hasattr(measurement, "map") or not hasattr(measurement, "output_measure"):
        raise TypeError(f"`measurement` must be an OpenDP Measurement; got {measurement!r}")
    return opendp_censoring(measurement)


def model_kwargs_from_measurement(measurement, d_in=1) -> dict:
    """``{"noise": spec, **clamp}``: the keyword arguments of NoisyBinomial / NoisyPoisson.

    :func:`noise_from_measurement` (checked against OpenDP's map at ``d_in``) and
    :func:`clamp_from_measurement` together.

    Examples
    --------
    >>> import opendp.prelude as dp
    >>> dp.enable_features("contrib")
    >>> space = dp.vector_domain(dp.atom_domain(T="u32")), dp.l2_distance(T="f64")
    >>> model_kwargs_from_measurement(dp.m.make_gaussian(*space, scale=4.0), d_in=1.0)
    {'noise': DiscreteGaussian(sigma=4.0), 'lower': 0}
    """
    return {
        "noise": noise_from_measurement(measurement, d_in),
        **clamp_from_measurement(measurement),
    }


# ------------------------------------------------------------------------------------------------
# Releasing counts with discrete Laplace / discrete Gaussian noise
# ------------------------------------------------------------------------------------------------

_COUNT_TYPES = {"i32": np.int32, "i64": np.int64, "u32": np.uint32, "u64": np.uint64}


def _counts(counts, T):
    if T not in _COUNT_TYPES:
        raise ValueError(f"`T` must be one of {sorted(_COUNT_TYPES)}; got {T!r}")
    arr = np.asarray(counts)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"`counts` must be integers; got dtype {arr.dtype}")
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(f"`counts` must be one count or a 1-d array of counts; got {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.round(arr))):
        raise ValueError("`counts` must be finite integers")
    info = np.iinfo(_COUNT_TYPES[T])
    if np.any(arr < info.min) or np.any(arr > info.max):
        raise ValueError(
            f"`counts` must be in [{info.min}, {info.max}] for T={T!r}; got values in "
            f"[{arr.min()}, {arr.max()}]"
        )
    return arr.astype(_COUNT_TYPES[T])


def _release_counts(counts, T, sensitivity, make, param, budget, budget_name):
    from .. import noise

    dp = _opendp()
    arr = _counts(counts, T)
    sens = float(sensitivity)
    # the noise the budget asks for, refused (naming the budget) before OpenDP sees it: an
    # infinite scale was OpenDP's own exception, one outside the specs' range an error
    # naming the spec's parameter instead of the budget
    what = "scale" if make == "make_laplace" else "sigma"
    if not noise.PARAM_MIN <= param <= noise.PARAM_MAX:
        raise ValueError(
            f"`{budget_name}` = {budget!r} with `sensitivity` = {sens!r} gives a noise {what} "
            f"of {param!r}, outside [{noise.PARAM_MIN:g}, {noise.PARAM_MAX:g}] (no DP release "
            f"has such noise); use a larger or smaller `{budget_name}`"
        )
    if arr.ndim == 0:
        space = dp.atom_domain(T=T), dp.absolute_distance(T="f64")
    elif make == "make_laplace":
        space = dp.vector_domain(dp.atom_domain(T=T)), dp.l1_distance(T="f64")
    else:
        space = dp.vector_domain(dp.atom_domain(T=T)), dp.l2_distance(T="f64")
    meas = getattr(dp.m, make)(*space, scale=param)
    stated = _check_stated(meas.map(sens), budget, budget_name)
    kwargs = model_kwargs_from_measurement(meas, sens)  # checks the spec against the map
    out = meas(arr.item() if arr.ndim == 0 else arr.tolist())
    reports = np.asarray(out, dtype=_COUNT_TYPES[T])
    desc = (
        f"{make}(scale={param!r}) on {'a count' if arr.ndim == 0 else 'a vector of counts'} of {T}"
    )
    return reports, stated, kwargs, desc


def _counts_guard(budget, check):
    """The release guard of a central release of counts at one privacy ``budget`` (its name,
    checked as ``check``) and a ``sensitivity``."""
    return release_guard(
        records=None,
        privacy={budget: check, "sensitivity": "positive"},
        scalar=(budget, "sensitivity"),
        output=_reports,
    )


@_counts_guard("epsilon", "epsilon")
def release_discrete_laplace_counts(counts, epsilon, sensitivity=1.0, T="i64") -> OpenDPRelease:
    r"""Release integer counts with OpenDP's ``make_laplace`` (discrete Laplace noise, ε-DP).

    A central release: ``counts`` are the data holder's exact counts (one, or a vector of
    disjoint groups), and the whole release is :math:`\varepsilon`-DP.  The noise scale is
    ``sensitivity / epsilon``; OpenDP's map at ``sensitivity`` must state at most ``epsilon``
    and the spec read back from the measurement is checked against it
    (:func:`noise_from_measurement`).

    Parameters
    ----------
    counts : int or array_like of int, shape (G,)
        The exact counts (non-negative for unsigned ``T``).
    epsilon : float
        Budget of the whole release (> 0).
    sensitivity : float
        L1 distance by which one person can change the counts (1 for a count or a histogram
        under add/remove of a person; 2 under replacement).
    T : {"i64", "i32", "u64", "u32"}
        OpenDP's element type.  Unsigned types censor the release at 0 (``lower=0`` in
        ``model_kwargs``).

    Returns
    -------
    OpenDPRelease
        ``reports`` (the noisy counts, same shape as ``counts``), ``epsilon`` as OpenDP states
        it, ``model_kwargs`` = ``{"noise": DiscreteLaplace(sensitivity/epsilon)}`` (and
        ``"lower": 0`` for unsigned ``T``), for
        ``NoisyBinomial(name, n=..., p=..., **model_kwargs, observed=reports)``.

    Examples
    --------
    >>> rel = release_discrete_laplace_counts([120, 40], epsilon=0.5, T="u32")
    >>> rel.model_kwargs, round(rel.epsilon, 12), rel.reports.dtype
    ({'noise': DiscreteLaplace(scale=2.0), 'lower': 0}, 0.5, dtype('uint32'))
    """
    eps, sens = float(epsilon), float(sensitivity)
    reports, stated, kwargs, desc = _release_counts(
        counts, T, sens, "make_laplace", sens / eps, eps, "epsilon"
    )
    return OpenDPRelease(reports, stated, kwargs, desc)


@_counts_guard("rho", "positive")
def release_discrete_gaussian_counts(counts, rho, sensitivity=1.0, T="i64") -> OpenDPRelease:
    r"""Release integer counts with OpenDP's ``make_gaussian`` (discrete Gaussian noise, ρ-zCDP).

    As :func:`release_discrete_laplace_counts`, with :math:`\sigma = \Delta/\sqrt{2\rho}`
    (``sensitivity`` is then the **L2** distance by which one person can change the counts:
    1 for add/remove in a histogram, :math:`\sqrt2` under replacement).  The release is
    :math:`\rho`-zCDP as OpenDP states it (``rho``; ``epsilon`` is None).

    Examples
    --------
    >>> rel = release_discrete_gaussian_counts(57, rho=0.125)
    >>> rel.model_kwargs, round(rel.rho, 12), rel.reports.shape
    ({'noise': DiscreteGaussian(sigma=2.0)}, 0.125, ())
    """
    r, sens = float(rho), float(sensitivity)
    sigma = sens / math.sqrt(2.0 * r)
    reports, stated, kwargs, desc = _release_counts(
        counts, T, sens, "make_gaussian", sigma, r, "rho"
    )
    return OpenDPRelease(reports, None, kwargs, desc, rho=stated)
