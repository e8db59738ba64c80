r"""Real releases with `OpenDP <https://opendp.org>`_, in the form this package's models read.

The other functions of :mod:`pymc_dpnoise.mechanisms` are *simulation grade*: NumPy's generator
and floating-point Laplace noise are fine for experiments, but a data holder releasing real data
should use a library whose sampling is hardened against floating-point attacks and whose
privacy accounting is proved.  The functions here run OpenDP's measurements (OpenDP >= 0.12,
``pip install "pymc-dpnoise[opendp]"``) and return the reports together with the keyword
arguments of the distribution that inverts them, so that

.. code-block:: python

    rel = release_clipped_laplace(x, lower=-5.0, upper=5.0, epsilon=1.0)
    LaplacePerturbedClippedNormal("z", mu=mu, sigma=sigma, **rel.model_kwargs, observed=rel.reports)

is a complete, honest pipeline.  Every function builds the OpenDP measurement for **one record's
report** (local DP) and checks, with OpenDP's own privacy map, that the record-level privacy loss
equals the ``epsilon`` asked for; the value OpenDP states is returned as ``epsilon``.

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

OpenDP's integer ``make_laplace`` (e.g. on a count) adds *discrete* Laplace noise, and its
``make_gaussian`` accounts in zero-concentrated DP: neither is the continuous-noise model of
this package's count and regression distributions, so they are not offered here.

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

from .._validation import check_less
from .core import as_float, check_privacy_parameter, release_guard

__all__ = [
    "OpenDPRelease",
    "release_clipped_laplace",
    "release_krr",
    "release_sue",
]


@dataclasses.dataclass(frozen=True)
class OpenDPRelease:
    """Reports released by an OpenDP measurement, one per record.

    Attributes
    ----------
    reports : numpy.ndarray
        The released reports, one per record (first axis), in the layout the matching
        distribution takes as ``observed``.
    epsilon : float
        The record-level privacy loss as OpenDP's privacy map states it (pure ε-DP).
    model_kwargs : dict
        Keyword arguments of the matching distribution that describe the mechanism.
    measurement : str
        The OpenDP measurement used, with its parameters.
    """

    reports: np.ndarray
    epsilon: float
    model_kwargs: dict
    measurement: str


def _opendp():
    try:
        import opendp.prelude as dp
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "releasing with OpenDP needs the `opendp` package: pip install 'pymc-dpnoise[opendp]'"
        ) from err
    dp.enable_features("contrib")
    return dp


def _check_epsilon(epsilon) -> float:
    eps = check_privacy_parameter("epsilon", epsilon, "epsilon")  # refuses bool, NaN, inf
    if np.ndim(eps):
        raise ValueError("`epsilon` must be a scalar: one budget for every record's report")
    return float(eps)


def _reports(rel):
    return rel.reports


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


def _check_stated(stated: float, epsilon: float) -> float:
    if not stated <= epsilon * (1 + 1e-9):
        raise RuntimeError(  # pragma: no cover - a mismatch would be a bug in the map above
            f"OpenDP states a privacy loss of {stated} per record, more than epsilon={epsilon}"
        )
    return float(stated)


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
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):
        raise ValueError("`items` must be integer item ids in 0..k-1")
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
