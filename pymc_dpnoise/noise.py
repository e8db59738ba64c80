r"""Noise as a value: the additive noise that DP systems put on counts and sums.

A *noise spec* says what was added to a released statistic.  It samples that noise exactly
(the mechanism the data holder runs), evaluates its log pmf / pdf and log CDF in PyTensor, and
is what :class:`~pymc_dpnoise.NoisyBinomial` and :class:`~pymc_dpnoise.NoisyPoisson` take as
``noise=``.

.. list-table::
   :header-rows: 1

   * - spec
     - noise on the released value
     - privacy (sensitivity :math:`\Delta`)
     - who releases it
   * - :class:`Laplace` ``(scale)``
     - :math:`\frac{1}{2b} e^{-|x|/b}`, real
     - :math:`\varepsilon = \Delta/b`
     - the papers' mechanisms; OpenDP on floats
   * - :class:`DiscreteLaplace` ``(scale)``
     - :math:`\frac{1-a}{1+a} a^{|k|}`, :math:`a = e^{-1/b}`, integer
     - :math:`\varepsilon = \Delta/b`
     - OpenDP ``make_laplace`` on integers; Tumult ``"LAPLACE"`` (double-sided geometric);
       SmartNoise counts
   * - :class:`RoundedLaplace` ``(scale)``
     - :math:`\mathrm{round}(L)`, :math:`L \sim \mathrm{Laplace}(b)`, integer
     - :math:`\varepsilon = \Delta/b`
     - Google's DP library / python-dp ``Count``
   * - :class:`Gaussian` ``(sigma)``
     - :math:`\mathcal N(0, \sigma^2)`, real
     - :math:`\rho = \Delta^2/(2\sigma^2)` (zCDP)
     - Gaussian mechanisms on floats
   * - :class:`DiscreteGaussian` ``(sigma)``
     - :math:`\propto e^{-k^2/(2\sigma^2)}`, integer
     - :math:`\rho = \Delta^2/(2\sigma^2)` (zCDP)
     - OpenDP ``make_gaussian`` on integers; Tumult ``"GAUSSIAN"``; the US 2020 Census
       noisy measurement files

Derivations
-----------
*Discrete Laplace.*  :math:`\sum_k a^{|k|} = (1+a)/(1-a)`, and :math:`(1-a)/(1+a) =
\tanh(1/(2b))`, so :math:`\log P(k) = \log\tanh(1/(2b)) - |k|/b`.  Its CDF is
:math:`a^{|k|}/(1+a)` for :math:`k < 0` and :math:`1 - a^{k+1}/(1+a)` for :math:`k \ge 0`.

*Rounded Laplace.*  With :math:`h = 1/(2b)`, :math:`P(j) = F_L(j + \tfrac12) - F_L(j -
\tfrac12) = \sinh(h)\, e^{-|j|/b}` for :math:`j \ne 0` and :math:`1 - e^{-h}` at 0; its CDF at
an integer :math:`k` is the Laplace CDF at :math:`k + \tfrac12`.

*Discrete Gaussian.*  The normaliser :math:`Z(\sigma) = \sum_k e^{-k^2/(2\sigma^2)}` is, by
Poisson summation, :math:`\sqrt{2\pi}\sigma\,(1 + 2\sum_{m \ge 1} e^{-2\pi^2\sigma^2 m^2})`;
for :math:`\sigma \ge 1` two terms of the correction are exact to double precision
(the third is below :math:`e^{-18\pi^2}`), for :math:`\sigma < 1` the direct sum over
:math:`|k| \le 10` is (the first omitted term is below :math:`e^{-60}` of the largest).  The
CDF tail :math:`P(N \le k)`, :math:`k < 0`, is a sum over a window of
:math:`\lceil\sqrt{2T}\,\sigma\rceil` terms below :math:`k`: the terms fall at least as fast as
:math:`e^{-i^2/(2\sigma^2)}` relative to the first, so the omitted mass is below
:math:`e^{-T}`, :math:`T = 46`.

Samplers
--------
Every ``sample`` is the mechanism, with integers drawn as integers: the discrete Laplace is
the difference of two geometric variables (:math:`P(G = g) = (1-a)a^g`), the discrete
Gaussian is Canonne, Kamath & Steinke's (2020, Alg. 3) rejection sampler from a discrete
Laplace proposal of scale :math:`t = \lfloor\sigma\rfloor + 1`, accepting :math:`Y` with
probability :math:`\exp(-(|Y| - \sigma^2/t)^2/(2\sigma^2))` until every draw is accepted
(never a rounded normal).  Like the rest of :mod:`pymc_dpnoise.mechanisms` these use NumPy's
floating-point generator: fine for simulation and for checking models; a data holder
releasing real data should use a hardened library such as OpenDP, and
:func:`from_opendp` reads its measurement.

Reading real releases
---------------------
:func:`from_opendp` (an OpenDP measurement), :func:`from_tumult` (Tumult Analytics'
``noise_mechanism`` / ``noise_parameter``), :func:`from_python_dp` (Google's DP library
``Count``) and :func:`from_census` (a 2020 Census noisy measurement's variance) build the
spec of a real release; :doc:`/real_releases` has the table.

Examples
--------
>>> import numpy as np
>>> from pymc_dpnoise import noise
>>> noise.DiscreteGaussian.from_rho(0.5)
DiscreteGaussian(sigma=1.0)
>>> noise.DiscreteLaplace.from_epsilon(0.5, sensitivity=2)
DiscreteLaplace(scale=4.0)
>>> draws = noise.DiscreteGaussian(3.0).sample(size=5, rng=np.random.default_rng(0))
>>> draws.dtype
dtype('int64')
"""

from __future__ import annotations

import math
import re
from typing import ClassVar

import numpy as np

from ._validation import check_finite

__all__ = [
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "Laplace",
    "Noise",
    "RoundedLaplace",
    "from_census",
    "from_opendp",
    "from_python_dp",
    "from_tumult",
]

#: target of every truncated sum here: omitted mass below e^{-TAIL_NATS} of the total
TAIL_NATS = 46.0
#: smallest and largest noise parameter accepted (scale or sigma)
PARAM_MIN, PARAM_MAX = 1e-3, 1e7


def _check_param(name, value):
    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"`{name}` must be a positive number; got {value!r}")
    arr = arr.astype("float64")
    check_finite(name, arr)
    if np.any(arr < PARAM_MIN) or np.any(arr > PARAM_MAX):
        bad = arr[(arr < PARAM_MIN) | (arr > PARAM_MAX)].ravel()[:5]
        raise ValueError(
            f"`{name}` must be in [{PARAM_MIN:g}, {PARAM_MAX:g}] (a noise scale outside it is "
            f"no release a DP system makes, and the likelihoods are checked on that range); "
            f"got {bad}"
        )
    return float(arr) if arr.ndim == 0 else arr


def _check_budget(name, value, sensitivity):
    for nm, v in ((name, value), ("sensitivity", sensitivity)):
        arr = np.asarray(v)
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
            raise TypeError(f"`{nm}` must be a positive number; got {v!r}")
        check_finite(nm, arr)
        if np.any(arr <= 0):
            raise ValueError(f"`{nm}` must be > 0; got {arr[arr <= 0].ravel()[:5]}")
    return np.asarray(value, dtype="float64"), np.asarray(sensitivity, dtype="float64")


def _scalar_or_array(x):
    x = np.asarray(x, dtype="float64")
    return float(x) if x.ndim == 0 else x


def _rng(rng):
    if rng is None or isinstance(rng, int | np.integer):
        return np.random.default_rng(rng)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"`rng` must be a numpy Generator, an int seed or None; got {rng!r}")
    return rng


def _size(size, param):
    shape = np.shape(param)
    if size is None:
        return shape
    size = (size,) if isinstance(size, int | np.integer) else tuple(size)
    try:
        np.broadcast_shapes(size, shape)
    except ValueError:
        raise ValueError(
            f"`size` {size} does not broadcast with the noise parameter's shape {shape}"
        ) from None
    return size


def _discrete_laplace_draws(scale, size, rng):
    """Difference of two geometric variables on {0, 1, ...} with P(g) = (1 - a) a^g."""
    p = -np.expm1(-1.0 / np.asarray(scale, dtype="float64"))  # 1 - a
    p = np.broadcast_to(p, size)
    return rng.geometric(p, size=size) - rng.geometric(p, size=size)  # both >= 1: same law


def _discrete_gaussian_draws(sigma, size, rng):
    """Canonne, Kamath & Steinke (2020), Algorithm 3, vectorised; loops until all accept."""
    sigma = np.broadcast_to(np.asarray(sigma, dtype="float64"), size).ravel()
    t = np.floor(sigma) + 1.0
    out = np.empty(sigma.shape, dtype="int64")
    pending = np.arange(sigma.size)
    while pending.size:
        s, tt = sigma[pending], t[pending]
        y = _discrete_laplace_draws(tt, s.shape, rng)
        accept = rng.random(s.shape) < np.exp(-((np.abs(y) - s**2 / tt) ** 2) / (2.0 * s**2))
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out.reshape(size)


class Noise:
    """Base class of the noise specs (see the module docstring)."""

    #: name of the one parameter ("scale" or "sigma")
    param_name: ClassVar[str]
    #: whether the noise (and so an integer count plus the noise) is integer valued
    discrete: ClassVar[bool]
    #: the CLI's / math module's name of the kind
    kind: ClassVar[str]

    def __init__(self, value):
        object.__setattr__(self, "_value", _check_param(self.param_name, value))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    @property
    def param(self):
        """The noise parameter (``scale`` or ``sigma``): a float, or an array (per release)."""
        return self._value

    def __repr__(self):
        v = self._value
        shown = repr(v) if isinstance(v, float) else np.array2string(np.asarray(v), separator=", ")
        return f"{type(self).__name__}({self.param_name}={shown})"

    def __eq__(self, other):
        return type(self) is type(other) and np.array_equal(self._value, other._value)

    def __hash__(self):
        return hash((type(self).__name__, np.asarray(self._value).tobytes()))

    # -- sampling (the mechanism) --------------------------------------------------------------

    def sample(self, size=None, rng=None):
        """Draws of the noise: int64 for the discrete kinds, float64 otherwise.

        ``size`` defaults to the parameter's shape and must broadcast with it.
        """
        rng = _rng(rng)
        return self._draw(self._value, _size(size, self._value), rng)

    def release(self, value, rng=None):
        """``value + noise``, one draw per element of ``value`` (the release mechanism).

        For the discrete kinds ``value`` must be integers; the result is int64.
        """
        v = np.asarray(value)
        check_finite("value", v.astype("float64") if v.dtype.kind in "iuf" else v)
        if self.discrete and (v.dtype.kind not in "iu" and np.any(v != np.round(v))):
            raise ValueError(f"{type(self).__name__} adds integer noise: `value` must be integers")
        shape = np.broadcast_shapes(v.shape, np.shape(self._value))
        noise = self._draw(self._value, shape, _rng(rng))
        if self.discrete:
            return v.astype("int64") + noise
        return v.astype("float64") + noise

    # -- PyTensor log densities ---------------------------------------------------------------

    def logp(self, x):
        """Log pmf (discrete kinds; -inf off the integers) or log pdf, as a PyTensor tensor."""
        from .math import noise as nm

        return nm.noise_logp(self.kind, x, self._value)

    def logcdf(self, x):
        """Log CDF :math:`\\log P(N \\le x)`, as a PyTensor tensor."""
        from .math import noise as nm

        return nm.noise_logcdf(self.kind, x, self._value)

    @property
    def variance(self):
        """Variance of the noise (per element if the parameter is an array)."""
        return _scalar_or_array(self._variance(np.asarray(self._value, dtype="float64")))


class _LaplaceKind(Noise):
    param_name = "scale"

    def __init__(self, scale):
        super().__init__(scale)

    @property
    def scale(self):
        """The scale :math:`b` (:math:`\\varepsilon = \\Delta / b`)."""
        return self._value

    @classmethod
    def from_epsilon(cls, epsilon, sensitivity=1.0):
        r"""The spec with scale :math:`\Delta/\varepsilon` (pure :math:`\varepsilon`-DP)."""
        epsilon, sensitivity = _check_budget("epsilon", epsilon, sensitivity)
        return cls(_scalar_or_array(sensitivity / epsilon))

    def epsilon(self, sensitivity=1.0):
        r"""The pure-DP budget :math:`\varepsilon = \Delta/b` at this ``sensitivity``."""
        _, sensitivity = _check_budget("epsilon", 1.0, sensitivity)
        return _scalar_or_array(sensitivity / np.asarray(self._value))


class _GaussianKind(Noise):
    param_name = "sigma"

    def __init__(self, sigma):
        super().__init__(sigma)

    @property
    def sigma(self):
        """The standard deviation parameter :math:`\\sigma`."""
        return self._value

    @classmethod
    def from_rho(cls, rho, sensitivity=1.0):
        r"""The spec with :math:`\sigma = \Delta/\sqrt{2\rho}` (:math:`\rho`-zCDP)."""
        rho, sensitivity = _check_budget("rho", rho, sensitivity)
        return cls(_scalar_or_array(sensitivity / np.sqrt(2.0 * rho)))

    def rho(self, sensitivity=1.0):
        r"""The zCDP parameter :math:`\rho = \Delta^2/(2\sigma^2)` at this ``sensitivity``."""
        _, sensitivity = _check_budget("rho", 1.0, sensitivity)
        return _scalar_or_array(sensitivity**2 / (2.0 * np.asarray(self._value) ** 2))

    def _variance(self, s):
        return s**2


class Laplace(_LaplaceKind):
    r"""Continuous Laplace noise, density :math:`\frac{1}{2b}e^{-|x|/b}`.

    Parameters
    ----------
    scale : float or array_like
        The scale :math:`b > 0` (per release if an array).
    """

    discrete = False
    kind = "laplace"

    @staticmethod
    def _draw(scale, size, rng):
        return rng.laplace(0.0, scale, size=size)

    def _variance(self, b):
        return 2.0 * b**2


class DiscreteLaplace(_LaplaceKind):
    r"""Discrete Laplace (double-sided geometric) noise, :math:`P(k) = \frac{1-a}{1+a}a^{|k|}`.

    :math:`a = e^{-1/b}`; OpenDP's ``make_laplace`` on an integer domain and Tumult's
    ``"LAPLACE"`` on counts (its ``noise_parameter`` is :math:`b`).

    Parameters
    ----------
    scale : float or array_like
        The scale :math:`b > 0` (per release if an array).
    """

    discrete = True
    kind = "discrete_laplace"

    @staticmethod
    def _draw(scale, size, rng):
        return _discrete_laplace_draws(scale, size, rng)

    def _variance(self, b):
        a = np.exp(-1.0 / b)
        return 2.0 * a / (1.0 - a) ** 2


class RoundedLaplace(_LaplaceKind):
    r"""Continuous Laplace noise rounded to the nearest integer (Google's DP library counts).

    :math:`P(j) = \sinh(1/(2b))\,e^{-|j|/b}` for :math:`j \ne 0`, :math:`1 - e^{-1/(2b)}` at 0.

    Parameters
    ----------
    scale : float or array_like
        The scale :math:`b > 0` of the Laplace noise before rounding.
    """

    discrete = True
    kind = "rounded_laplace"

    @staticmethod
    def _draw(scale, size, rng):
        return np.rint(rng.laplace(0.0, scale, size=size)).astype("int64")

    def _variance(self, b):
        h = 0.5 / b
        a = np.exp(-1.0 / b)
        # 2 sinh(h) sum_{j>=1} j^2 a^j = 2 sinh(h) a (1 + a) / (1 - a)^3
        return 2.0 * np.sinh(h) * a * (1.0 + a) / (1.0 - a) ** 3


class Gaussian(_GaussianKind):
    r"""Continuous Gaussian noise :math:`\mathcal N(0, \sigma^2)`.

    Parameters
    ----------
    sigma : float or array_like
        The standard deviation :math:`\sigma > 0` (per release if an array).
    """

    discrete = False
    kind = "gaussian"

    @staticmethod
    def _draw(sigma, size, rng):
        return rng.normal(0.0, sigma, size=size)

    @classmethod
    def from_epsilon_delta(cls, epsilon, delta, sensitivity=1.0):
        r"""The analytic Gaussian mechanism's :math:`\sigma` for :math:`(\varepsilon, \delta)`-DP
        (Balle & Wang 2018; :func:`pymc_dpnoise.mechanisms.analytic_gaussian_sigma`)."""
        from .mechanisms import analytic_gaussian_sigma

        return cls(_scalar_or_array(analytic_gaussian_sigma(epsilon, delta, sensitivity)))


class DiscreteGaussian(_GaussianKind):
    r"""Discrete Gaussian noise, :math:`P(k) \propto e^{-k^2/(2\sigma^2)}` on the integers.

    Canonne, Kamath & Steinke (2020): :math:`\rho`-zCDP with :math:`\rho =
    \Delta^2/(2\sigma^2)`.  OpenDP's ``make_gaussian`` on integers, Tumult's ``"GAUSSIAN"``
    (its ``noise_parameter`` is :math:`\sigma^2`) and the 2020 Census noisy measurements.

    Parameters
    ----------
    sigma : float or array_like
        The parameter :math:`\sigma > 0` (the variance is slightly below :math:`\sigma^2`
        when :math:`\sigma < 1`).
    """

    discrete = True
    kind = "discrete_gaussian"

    @staticmethod
    def _draw(sigma, size, rng):
        return _discrete_gaussian_draws(sigma, size, rng)

    def _variance(self, s):
        # Σ k² e^{-k²/2σ²} / Σ e^{-k²/2σ²} over a window that holds all the mass
        s = np.atleast_1d(s)
        out = np.empty_like(s)
        for i, si in enumerate(s.ravel()):
            kmax = math.ceil(math.sqrt(2 * TAIL_NATS) * si) + 12
            k = np.arange(-kmax, kmax + 1, dtype="float64")
            w = np.exp(-(k**2) / (2.0 * si**2))
            out.ravel()[i] = (k**2 * w).sum() / w.sum()
        return out.reshape(np.shape(self._value))


KINDS = {c.kind: c for c in (Laplace, DiscreteLaplace, RoundedLaplace, Gaussian, DiscreteGaussian)}


def as_noise(noise) -> Noise:
    """``noise`` if it is a noise spec, else a clear TypeError."""
    if not isinstance(noise, Noise):
        raise TypeError(
            "`noise` must be a noise spec from pymc_dpnoise.noise (Laplace, DiscreteLaplace, "
            f"RoundedLaplace, Gaussian, DiscreteGaussian); got {noise!r}"
        )
    return noise


# ------------------------------------------------------------------------------------------------
# Reading real releases
# ------------------------------------------------------------------------------------------------


def from_tumult(noise_mechanism, noise_parameter, *, integer=True) -> Noise:
    r"""The spec of a Tumult Analytics output from its ``noise_mechanism`` and ``noise_parameter``.

    Tumult's session reports, for each output, the noise it added.  On integer outputs (counts)
    ``"LAPLACE"`` is the double-sided geometric with :math:`\alpha` = ``noise_parameter``
    (:class:`DiscreteLaplace` with that scale) and ``"GAUSSIAN"`` the discrete Gaussian with
    :math:`\sigma^2` = ``noise_parameter``; on float outputs (``integer=False``) the continuous
    Laplace and Gaussian with the same parameters.

    Examples
    --------
    >>> from_tumult("GAUSSIAN", 4.0)
    DiscreteGaussian(sigma=2.0)
    >>> from_tumult("GEOMETRIC", 2.5)
    DiscreteLaplace(scale=2.5)
    """
    mech = str(getattr(noise_mechanism, "name", noise_mechanism)).upper()
    mech = mech.rsplit(".", 1)[-1]
    param = np.asarray(noise_parameter, dtype="float64")
    if mech in ("LAPLACE", "GEOMETRIC", "DISCRETE_LAPLACE"):
        return (DiscreteLaplace if integer else Laplace)(_scalar_or_array(param))
    if mech in ("GAUSSIAN", "DISCRETE_GAUSSIAN"):
        _check_param("noise_parameter", param)
        return (DiscreteGaussian if integer else Gaussian)(_scalar_or_array(np.sqrt(param)))
    raise ValueError(
        f"`noise_mechanism` must be Tumult's LAPLACE, GEOMETRIC, GAUSSIAN or DISCRETE_GAUSSIAN; "
        f"got {noise_mechanism!r}"
    )


def from_python_dp(epsilon, l0_sensitivity=1, linf_sensitivity=1) -> RoundedLaplace:
    r"""The spec of a Google DP library (python-dp) ``Count`` with integer output.

    python-dp adds continuous Laplace noise of scale :math:`\Delta_0\Delta_\infty/\varepsilon`
    (partitions a person contributes to, times contributions per partition) and rounds the
    result to the nearest integer; nothing is clamped, so negative counts occur.

    Examples
    --------
    >>> from_python_dp(0.5)
    RoundedLaplace(scale=2.0)
    """
    for name, v in (("l0_sensitivity", l0_sensitivity), ("linf_sensitivity", linf_sensitivity)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"`{name}` must be a positive integer; got {v!r}")
    return RoundedLaplace.from_epsilon(epsilon, float(l0_sensitivity * linf_sensitivity))


def from_census(variance) -> DiscreteGaussian:
    r"""The spec of a 2020 Census noisy measurement from its published variance.

    The Disclosure Avoidance System adds discrete Gaussian noise to each query answer of the
    noisy measurement files and publishes each query's variance :math:`\sigma^2`; the
    measurements are integers, often negative, with no clamping.  (The published *tables* are
    TopDown post-processing of these measurements and have no simple likelihood: read the
    measurements.)

    Examples
    --------
    >>> from_census([1.5, 6.0])
    DiscreteGaussian(sigma=[1.22474487, 2.44948974])
    """
    var = np.asarray(variance, dtype="float64")
    _check_param("variance", var)
    return DiscreteGaussian(_scalar_or_array(np.sqrt(var)))


# ------------------------------------------------------------------------------------------------
# Reading an OpenDP measurement (from_opendp; pymc_dpnoise.mechanisms.opendp_releases uses these)
# ------------------------------------------------------------------------------------------------

#: :data:`pymc_dpnoise.mechanisms.opendp_releases.MAP_RTOL` (documented there)
_MAP_RTOL = 1e-6

_INTEGER_TYPE = re.compile(r"[iu](8|16|32|64|128|size)")
_FLOAT_TYPES = ("f32", "f64")
_MEASURES = {"MaxDivergence": "make_laplace", "ZeroConcentratedDivergence": "make_gaussian"}
_NOISE_MAKERS = {"make_laplace", "make_gaussian"}


def _constructor(obj):
    """OpenDP's record of how ``obj`` was built: ``(function name, kwargs)`` or ``(None, {})``."""
    info = getattr(obj, "__opendp_dict__", None)
    if not isinstance(info, dict):
        return None, {}
    return info.get("__function__"), info.get("__kwargs__", {}) or {}


def _noise_step(measurement):
    """The make_laplace / make_gaussian measurement at the end of ``measurement``, and the
    transformations before it (in order of application)."""
    before = []
    meas = measurement
    while True:
        fn, kw = _constructor(meas)
        if fn == "make_chain_mt":
            before.append(kw["transformation0"])
            meas = kw["measurement1"]
            continue
        if fn is None or fn in _NOISE_MAKERS:
            return meas, fn, kw, before
        raise ValueError(
            f"the measurement was built by OpenDP's `{fn}`, not by make_laplace / make_gaussian "
            "(alone, with then_laplace / then_gaussian, or at the end of a chain of "
            "transformations): its noise is not one of the noise specs (post-processing, "
            "composition, measure conversions and other mechanisms are not read)"
        )


def _map(obj, d, what):
    try:
        return obj.map(d)
    except TypeError as err:
        raise ValueError(
            f"`d_in`={d!r} is not a distance of {what}'s input metric ({obj.input_metric}): {err}"
        ) from None
    except Exception as err:  # OpenDPException: e.g. a negative distance
        raise ValueError(f"OpenDP's privacy map of {what} refuses `d_in`={d!r}: {err}") from None


def _element_type(domain) -> str:
    carrier = str(domain.carrier_type)
    inner = re.fullmatch(r"Vec<(.+)>", carrier)
    return inner.group(1) if inner else carrier


def _read_opendp(measurement, d_in):
    """``(spec, element type, stated privacy, d at the noise)`` of a checked measurement."""
    if not hasattr(measurement, "map") or not hasattr(measurement, "output_measure"):
        raise TypeError(f"`measurement` must be an OpenDP Measurement; got {measurement!r}")
    if isinstance(d_in, bool) or not isinstance(d_in, int | float | np.integer | np.floating):
        raise TypeError(f"`d_in` must be a positive number (a distance); got {d_in!r}")
    if not (np.isfinite(d_in) and d_in > 0):
        raise ValueError(f"`d_in` must be finite and > 0; got {d_in!r}")
    measure = str(measurement.output_measure)
    if measure not in _MEASURES:
        raise ValueError(
            f"the measurement's output measure is {measure}: only pure DP (MaxDivergence, "
            "make_laplace) and zero-concentrated DP (ZeroConcentratedDivergence, make_gaussian) "
            "describe the noise exactly; approximate-DP and Renyi measures (e.g. after "
            "make_zCDP_to_approxDP / make_fix_delta) are not read: pass the zCDP measurement "
            "they were built from"
        )
    noise_meas, fn, kw, before = _noise_step(measurement)
    if fn is not None and _MEASURES[measure] != fn:  # pragma: no cover - OpenDP forbids it
        raise ValueError(f"`{fn}` with output measure {measure} is not a noise spec")
    gaussian = measure == "ZeroConcentratedDivergence"

    d = d_in
    for t in before:
        d = _map(t, d, "a transformation of the chain")
    d_noise = float(d)
    if not d_noise > 0:
        raise ValueError(
            f"the transformations before the noise map `d_in`={d_in!r} to {d!r}: no privacy "
            "loss to check the noise against; give the distance of one person's change"
        )

    elem = _element_type(noise_meas.input_domain)
    if _INTEGER_TYPE.fullmatch(elem):
        cls = DiscreteGaussian if gaussian else DiscreteLaplace
    elif elem in _FLOAT_TYPES:
        cls = Gaussian if gaussian else Laplace
    else:
        raise ValueError(
            f"the noise is added to values of type {elem} ({noise_meas.input_domain}): only "
            "integer (i32, i64, u32, u64) and float (f32, f64) atoms or vectors are read"
        )

    stated = float(_map(measurement, d_in, "the measurement"))
    if "scale" in kw:  # OpenDP's record of the constructor's arguments
        param = float(kw["scale"])
        how = f"the measurement's scale={param!r}"
    else:  # no record: invert the map (Laplace: eps = d/b; Gaussian zCDP: rho = (d/s)^2/2)
        if not stated > 0:
            raise ValueError(f"OpenDP's map states {stated} at `d_in`={d_in!r}: no noise to read")
        param = d_noise / math.sqrt(2.0 * stated) if gaussian else d_noise / stated
        how = f"the scale {param!r} inverted from OpenDP's map at d_in={d_in!r}"
        # ... and the map's shape checked at twice the distance (linear / quadratic)
        twice = float(_map(noise_meas, d * 2, "the measurement"))
        expect = stated * (4.0 if gaussian else 2.0)
        if not abs(twice - expect) <= _MAP_RTOL * expect:
            raise ValueError(
                f"OpenDP's map is {stated!r} at d_in={d!r} and {twice!r} at twice that "
                f"(expected {expect!r} for {cls.__name__} noise): not a Laplace / Gaussian "
                "privacy curve"
            )
    try:
        spec = cls(param)
    except ValueError as err:
        raise ValueError(f"{how} is outside the noise specs' range: {err}") from None

    expected = spec.rho(d_noise) if gaussian else spec.epsilon(d_noise)
    if not abs(stated - expected) <= _MAP_RTOL * expected:
        kind = "rho" if gaussian else "epsilon"
        raise ValueError(
            f"OpenDP's privacy map states {kind}={stated!r} at d_in={d_in!r}, but {spec!r} at "
            f"sensitivity {d_noise!r} has {kind}={expected!r} (relative difference "
            f"{abs(stated - expected) / expected:.2e} > MAP_RTOL={_MAP_RTOL:g}): the noise is "
            "not that spec (e.g. a float measurement with a coarse granularity `k`, whose "
            "lattice OpenDP's map accounts for)"
        )
    return spec, elem, stated, d_noise


def from_opendp(measurement, d_in=1):
    """The spec of an OpenDP measurement's noise; see :mod:`pymc_dpnoise.mechanisms.opendp_releases`."""
    return _read_opendp(measurement, d_in)[0]
