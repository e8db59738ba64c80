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
     - OpenDP ``make_laplace`` / ``make_geometric`` on integers; Tumult ``"GEOMETRIC"``
       (double-sided geometric); SmartNoise counts
   * - :class:`RoundedLaplace` ``(scale)``
     - :math:`\mathrm{round}(L)`, :math:`L \sim \mathrm{Laplace}(b)`, integer
     - :math:`\varepsilon = \Delta/b`
     - Google's DP library / python-dp ``Count``
   * - :class:`Gaussian` ``(sigma)``
     - :math:`\mathcal N(0, \sigma^2)`, real
     - :math:`\rho = \Delta^2/(2\sigma^2)` (zCDP)
     - Gaussian mechanisms on floats (OpenDP, Tumult ``"GAUSSIAN"``, python-dp)
   * - :class:`DiscreteGaussian` ``(sigma)``
     - :math:`\propto e^{-k^2/(2\sigma^2)}`, integer
     - :math:`\rho = \Delta^2/(2\sigma^2)` (zCDP)
     - OpenDP ``make_gaussian`` on integers; Tumult ``"DISCRETE_GAUSSIAN"``; the US 2020
       Census noisy measurement files

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
``Count`` and ``GaussianMechanism``) and :func:`from_census` (a 2020 Census noisy
measurement's :math:`\sigma^2` or exact variance) build the spec of a real release; :doc:`/real_releases` has the table.

A noise kind of your own
------------------------
A noise kind is a subclass of :class:`Noise`; its math lives in class methods that take the
parameter as an argument (a float, an array per release, or a PyTensor tensor inside a
model), so :class:`~pymc_dpnoise.NoisyBinomial` and :class:`~pymc_dpnoise.NoisyPoisson` use a
kind they have never seen exactly as the built-in ones: ``NoisyBinomial("y", n, p,
noise=MyNoise(2), observed=...)``.  Define

* ``param_name`` (the one parameter's name), ``discrete`` (integer-valued noise?) and, if the
  noise is symmetric about 0, ``symmetric = True``;
* ``log_density(x, param)`` (log pmf, :math:`-\infty` off the integers for an integer kind, or
  log pdf) and ``log_cdf(x, param)`` (:math:`\log P(N \le x)`), in PyTensor; ``log_sf``
  defaults to the reflected CDF of a symmetric kind, else to :math:`\log(1 - P(N \le x))`;
* ``numpy_draw(param, size, rng)`` (the mechanism: :meth:`Noise.sample` and
  :meth:`Noise.release`) and ``pytensor_draw(param, size, rng)`` returning ``(next_rng,
  draws)`` (prior and posterior predictive draws on every backend); a kind that is a
  PyTensor location-scale random variable at location 0 sets ``rv`` instead (as
  :class:`Laplace` and :class:`Gaussian` do), whose NumPy ``rng_fn`` and graph give both;
* for an integer kind, ``support_radius(param)``: a static :math:`R` with the noise's mass
  outside :math:`[-R, R]` negligible; the count likelihoods are then exact sums over the
  noise's :math:`2R + 1` values (``count_logp`` / ``count_log_cdfs`` of :class:`Noise`).  A
  continuous kind (or one with closed forms, as the Laplace kinds here) overrides
  ``count_logp(count, y, param)`` and ``count_log_cdfs(count, y, param)`` instead, with the
  count objects of :mod:`pymc_dpnoise.math.noisy_counts`;
* optionally ``check_param(value)`` (the default accepts finite numbers in
  ``[PARAM_MIN, PARAM_MAX]``) and ``param_variance(param)``.

``tests/test_noisy_counts.py`` defines a uniform integer ("staircase") noise this way and fits
it with :class:`~pymc_dpnoise.NoisyBinomial`:

>>> import numpy as np, pytensor.tensor as pt
>>> from pymc_dpnoise import noise
>>> class Staircase(noise.Noise):  # uniform integer noise on {-w, ..., w}
...     param_name, discrete, symmetric = "width", True, True
...     @classmethod
...     def log_density(cls, x, w):
...         x = pt.as_tensor_variable(x)
...         inside = (pt.abs(x) <= w) & pt.eq(x, pt.round(x))
...         return pt.switch(inside, -pt.log(2.0 * w + 1.0), -np.inf)
...     @classmethod
...     def log_cdf(cls, x, w):
...         k = pt.clip(pt.floor(x), -w - 1.0, w)
...         return pt.log((k + w + 1.0) / (2.0 * w + 1.0))
...     @classmethod
...     def numpy_draw(cls, w, size, rng):
...         return rng.integers(-int(w), int(w) + 1, size=size)
...     @classmethod
...     def pytensor_draw(cls, w, size, rng):
...         rng, u = pt.random.uniform(0.0, 1.0, size=size, rng=rng, return_next_rng=True)
...         return rng, pt.floor(u * (2.0 * w + 1.0)) - w
...     @classmethod
...     def support_radius(cls, w):
...         return int(np.max(w))
>>> import pymc as pm, pymc_dpnoise as pmd
>>> rv = pmd.NoisyBinomial.dist(n=10, p=0.5, noise=Staircase(2), lower=0, upper=10)
>>> # P(S + N <= 0) = (1 * 3/5 + 10 * 2/5 + 45 * 1/5) / 2**10
>>> round(float(np.exp(pm.logp(rv, 0.0).eval())), 12)
0.01328125

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
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.tensor.random.basic import exponential, laplace, normal, uniform

from .validation import check_finite, constant_value


class _LazyMath:
    """A module of :mod:`pymc_dpnoise.math`, imported on first use (``import pymc_dpnoise.noise``
    stays as cheap as the rest of the package's top level)."""

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        import importlib

        return getattr(importlib.import_module(f"pymc_dpnoise.math.{self.module}"), name)


nm = _LazyMath("noise")
ncm = _LazyMath("noisy_counts")


def _math_methods(module, *functions):
    """Class methods of a built-in kind, one per name in ``functions``: each is that function of
    ``module`` (a :class:`_LazyMath`) called with the method's arguments.  This is how the kinds
    below name the functions of :mod:`pymc_dpnoise.math` that carry their math."""

    def method(function):
        def call(cls, *args):
            return getattr(module, function)(*args)

        call.__name__ = function
        call.__doc__ = f"``pymc_dpnoise.math.{module.module}.{function}``."
        return classmethod(call)

    return tuple(method(f) for f in functions)


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
    if isinstance(value, pt.Variable):
        known = constant_value(value)
        # symbolic, or pm.Data (set_data may change it: its value now is checked, the variable
        # kept): checked where the graph is (check_parameters)
        if known is None or isinstance(value, SharedVariable):
            if known is not None:
                _check_param(name, known)
            return pt.cast(value, "float64") if value.dtype != "float64" else value
        value = known
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


class Noise:
    """Base class of the noise specs, and the protocol of a noise kind (module docstring).

    A spec is one value of its kind's parameter (a float, or an array: one per release).  The
    kind's math lives in class methods that take that parameter as an argument (a PyTensor
    tensor in a model: the parameter is an input of the graph, the kind is its type), so the
    same code serves the spec's own methods and :class:`~pymc_dpnoise.NoisyBinomial` /
    :class:`~pymc_dpnoise.NoisyPoisson`, which carry the spec's type on their random variable.
    """

    #: name of the one parameter ("scale" or "sigma")
    param_name: ClassVar[str] = "scale"
    #: whether the noise (and so an integer count plus the noise) is integer valued
    discrete: ClassVar[bool]
    #: a short label of the kind (printing and the CLI; nothing dispatches on it)
    kind: ClassVar[str] = "noise"
    #: whether the noise is symmetric about 0 (then ``log_sf`` is ``log_cdf`` reflected,
    #: with full relative accuracy in the upper tail)
    symmetric: ClassVar[bool] = False
    #: for a kind that is a location-scale PyTensor random variable at location 0 (the
    #: continuous Laplace and Gaussian): that variable, whose ``rng_fn`` and graph are the
    #: default :meth:`numpy_draw` and :meth:`pytensor_draw`
    rv: ClassVar = None
    #: whether the count likelihoods size a sum from the parameter's value when the graph is
    #: built (a ``pm.Data`` parameter may then only decrease: math.noise.data_bounded)
    sized_by_param: ClassVar[bool] = True

    def __init__(self, value):
        object.__setattr__(self, "_value", self.check_param(value))

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    @classmethod
    def check_param(cls, value):
        """The checked parameter (a float or a float64 array); a clear error naming it if bad.

        The default accepts finite numbers in ``[PARAM_MIN, PARAM_MAX]``.
        """
        return _check_param(cls.param_name, value)

    @property
    def param(self):
        """The noise parameter (``scale`` or ``sigma``): a float, or an array (per release)."""
        return self._value

    @property
    def symbolic(self):
        """Whether the parameter is a PyTensor expression (e.g. a budget the model learns)."""
        return isinstance(self._value, pt.Variable)

    def _numeric(self, what):
        if self.symbolic:
            raise TypeError(f"{what} needs a numeric noise parameter; {self!r} is symbolic")
        return self._value

    def __repr__(self):
        v = self._value
        if self.symbolic:
            shown = str(v)
        else:
            shown = repr(v) if isinstance(v, float) else np.array2string(v, separator=", ")
        return f"{type(self).__name__}({self.param_name}={shown})"

    def __eq__(self, other):
        if type(self) is not type(other):
            return False
        if self.symbolic or other.symbolic:
            return self._value is other._value
        return np.array_equal(self._value, other._value)

    def __hash__(self):
        if self.symbolic:
            return hash((type(self).__name__, id(self._value)))
        return hash((type(self).__name__, np.asarray(self._value).tobytes()))

    # -- what a noise kind defines (class methods on the parameter) ---------------------------

    @classmethod
    def numpy_draw(cls, param, size, rng):
        """NumPy draws of the noise (the mechanism): int64 for the integer kinds.

        The default draws ``rv(0, param)`` with the NumPy ``rng_fn`` of the kind's :attr:`rv`.
        """
        return cls._rv("numpy_draw").rng_fn(rng, 0.0, param, size)

    @classmethod
    def pytensor_draw(cls, param, size, rng):
        """``(next_rng, draws)``: symbolic draws of the noise (PyTensor random variables, every
        backend), float64 (integer valued for the integer kinds).

        The default draws ``rv(0, param)`` with the kind's :attr:`rv`.
        """
        return cls._rv("pytensor_draw")(0.0, param, size=size, rng=rng, return_next_rng=True)

    @classmethod
    def _rv(cls, method):
        if cls.rv is None:
            raise NotImplementedError(f"{cls.__name__} defines neither `{method}` nor `rv`")
        return cls.rv

    @classmethod
    def log_density(cls, x, param):
        """Log pmf (integer kinds; :math:`-\\infty` off the integers) or log pdf, in PyTensor."""
        raise NotImplementedError(f"{cls.__name__} does not define `log_density`")

    @classmethod
    def log_cdf(cls, x, param):
        """:math:`\\log P(N \\le x)` in PyTensor (integer kinds: at :math:`\\lfloor x\\rfloor`)."""
        raise NotImplementedError(f"{cls.__name__} does not define `log_cdf`")

    @classmethod
    def log_sf(cls, x, param):
        """:math:`\\log P(N > x)` in PyTensor: ``log_cdf`` reflected for a symmetric kind, else
        :math:`\\log(1 - P(N \\le x))` (override it where the upper tail matters)."""
        if cls.symmetric:
            return cls.log_cdf(-pt.floor(x) - 1.0 if cls.discrete else -x, param)
        return pt.log1mexp(pt.minimum(cls.log_cdf(x, param), -1e-300))

    @classmethod
    def support_radius(cls, param) -> int:
        """For the summed count likelihoods of an integer kind: a static ``R`` such that the
        noise's mass outside ``[-R, R]`` is negligible (below :math:`e^{-46}`) for every value of
        ``param`` (a NumPy array)."""
        raise NotImplementedError(
            f"{cls.__name__} defines neither `support_radius` (for the summed count "
            "likelihoods) nor `count_logp` / `count_log_cdfs`"
        )

    @classmethod
    def count_logp(cls, count, y, param):
        """Log pmf / pdf of ``count + noise`` at ``y`` (``count``: the binomial or Poisson of
        :mod:`pymc_dpnoise.math.noisy_counts`).  The default sums over the noise's values in
        ``[-R, R]`` (:meth:`support_radius`), which is exact for an integer kind."""
        return ncm.summed_count_logp(cls, count, y, param)

    @classmethod
    def count_log_cdfs(cls, count, y, param):
        """``(log P(Y <= y), log P(Y > y))`` of ``Y = count + noise`` (the clamp atoms); the
        default sums over the noise's values as :meth:`count_logp`."""
        return ncm.summed_count_log_cdfs(cls, count, y, param)

    @classmethod
    def param_variance(cls, param):
        """Variance of the noise at ``param`` (a float64 array)."""
        raise NotImplementedError(f"{cls.__name__} does not define `param_variance`")

    # -- the privacy budget of a kind whose parameter is a function of one ----------------------

    @classmethod
    def _from_budget(cls, name, budget, sensitivity, param_of):
        """The spec of parameter ``param_of(budget, sensitivity)``, both checked (``name``: the
        budget's, for the errors)."""
        budget, sensitivity = _check_budget(name, budget, sensitivity)
        return cls(_scalar_or_array(param_of(budget, sensitivity)))

    def _budget(self, name, sensitivity, budget_of):
        """The budget ``budget_of(param, sensitivity)`` of this (numeric) spec."""
        _, sensitivity = _check_budget(name, 1.0, sensitivity)
        return _scalar_or_array(budget_of(np.asarray(self._numeric(name)), sensitivity))

    # -- the spec's own methods ---------------------------------------------------------------

    def sample(self, size=None, rng=None):
        """Draws of the noise: int64 for the discrete kinds, float64 otherwise.

        ``size`` defaults to the parameter's shape and must broadcast with it.
        """
        value = self._numeric("sample")
        return self.numpy_draw(value, _size(size, value), _rng(rng))

    def release(self, value, rng=None):
        """``value + noise``, one draw per element of ``value`` (the release mechanism).

        For the discrete kinds ``value`` must be integers of magnitude at most ``2**62`` (the
        result is int64); for the others, numbers a float64 holds exactly (integers of
        magnitude at most ``2**53``).  Anything else is refused, never wrapped or rounded.
        """
        param = self._numeric("release")
        v = _release_value(value, self.discrete, type(self).__name__)
        shape = np.broadcast_shapes(v.shape, np.shape(param))
        noise = self.numpy_draw(param, shape, _rng(rng))
        return v + noise

    def logp(self, x):
        """Log pmf (discrete kinds; -inf off the integers) or log pdf, as a PyTensor tensor."""
        return self.log_density(x, self._value)

    def logcdf(self, x):
        """Log CDF :math:`\\log P(N \\le x)`, as a PyTensor tensor."""
        return self.log_cdf(x, self._value)

    @property
    def variance(self):
        """Variance of the noise (per element if the parameter is an array)."""
        value = self._numeric("variance")
        return _scalar_or_array(self.param_variance(np.asarray(value, dtype="float64")))


#: largest magnitude of an integer release value: an int64 holds it plus any noise draw
#: (|noise| < 2**62 with probability 1 - 1e-30 even at the largest scale)
MAX_INT_RELEASE = 2**62
#: largest magnitude of an integer value a float64 release holds exactly
MAX_FLOAT_INT = 2**53


def _release_value(value, discrete, name):
    """``value`` as int64 (``discrete``) or float64, refusing what that type cannot hold."""
    v = np.asarray(value)
    if v.dtype == bool or v.dtype.kind not in "iuf":
        raise TypeError(f"`value` must be numbers; got dtype {v.dtype}")
    if v.dtype.kind == "f":
        check_finite("value", v)
    if discrete and v.dtype.kind == "f" and np.any(v != np.round(v)):
        raise ValueError(f"{name} adds integer noise: `value` must be integers")
    limit = MAX_INT_RELEASE if discrete else MAX_FLOAT_INT
    if discrete or v.dtype.kind in "iu":
        # compare exactly: a uint64 or an int64 beyond 2**53 loses digits as a float
        big = (v > limit) | (v < -limit) if v.dtype.kind in "iu" else np.abs(v) > limit
        if np.any(big):
            out = "an int64 release" if discrete else "a float64 release exactly"
            raise ValueError(
                f"`value` must have magnitude at most 2**{62 if discrete else 53} ({out} cannot "
                f"hold more); got {np.ravel(v[big])[:3]}"
            )
    return v.astype("int64") if discrete else v.astype("float64")


class _LaplaceKind(Noise):
    param_name = "scale"
    sized_by_param = False  # closed forms
    symmetric = True

    def __init__(self, scale):
        super().__init__(scale)

    scale = property(
        Noise.param.fget, doc="The scale :math:`b` (:math:`\\varepsilon = \\Delta / b`)."
    )

    @classmethod
    def from_epsilon(cls, epsilon, sensitivity=1.0):
        r"""The spec with scale :math:`\Delta/\varepsilon` (pure :math:`\varepsilon`-DP)."""
        return cls._from_budget("epsilon", epsilon, sensitivity, lambda eps, d: d / eps)

    def epsilon(self, sensitivity=1.0):
        r"""The pure-DP budget :math:`\varepsilon = \Delta/b` at this ``sensitivity``."""
        return self._budget("epsilon", sensitivity, lambda b, d: d / b)


class _GaussianKind(Noise):
    """The Gaussian kinds: the count likelihoods are window sums (math.noisy_counts) built from
    the pieces below."""

    param_name = "sigma"
    symmetric = True

    def __init__(self, sigma):
        super().__init__(sigma)

    sigma = property(Noise.param.fget, doc="The standard deviation parameter :math:`\\sigma`.")

    @classmethod
    def from_rho(cls, rho, sensitivity=1.0):
        r"""The spec with :math:`\sigma = \Delta/\sqrt{2\rho}` (:math:`\rho`-zCDP)."""
        return cls._from_budget("rho", rho, sensitivity, lambda rho, d: d / np.sqrt(2.0 * rho))

    def rho(self, sensitivity=1.0):
        r"""The zCDP parameter :math:`\rho = \Delta^2/(2\sigma^2)` at this ``sensitivity``."""
        return self._budget("rho", sensitivity, lambda s, d: d**2 / (2.0 * s**2))

    @classmethod
    def param_variance(cls, s):
        return s**2

    @classmethod
    def count_logp(cls, count, y, param):
        return ncm.gaussian_count_logp(cls, count, y, param)

    @classmethod
    def count_log_cdfs(cls, count, y, param):
        return ncm.gaussian_count_log_cdfs(cls, count, y, param)


class Laplace(_LaplaceKind):
    r"""Continuous Laplace noise, density :math:`\frac{1}{2b}e^{-|x|/b}`.

    Parameters
    ----------
    scale : float or array_like
        The scale :math:`b > 0` (per release if an array).
    """

    discrete = False
    kind = "laplace"
    rv = laplace
    log_density, log_cdf = _math_methods(nm, "laplace_logpdf", "laplace_logcdf")
    count_logp, count_log_cdfs = _math_methods(ncm, "laplace_count_logp", "laplace_count_log_cdfs")

    @classmethod
    def param_variance(cls, b):
        return 2.0 * b**2


class DiscreteLaplace(_LaplaceKind):
    r"""Discrete Laplace (double-sided geometric) noise, :math:`P(k) = \frac{1-a}{1+a}a^{|k|}`.

    :math:`a = e^{-1/b}`; OpenDP's ``make_laplace`` on an integer domain and Tumult's
    ``"GEOMETRIC"`` on counts (its ``noise_parameter`` is :math:`b`).

    Parameters
    ----------
    scale : float or array_like
        The scale :math:`b > 0` (per release if an array).
    """

    discrete = True
    kind = "discrete_laplace"

    @classmethod
    def numpy_draw(cls, scale, size, rng):
        """Difference of two geometric variables on {0, 1, ...} with P(g) = (1 - a) a^g."""
        p = -np.expm1(-1.0 / np.asarray(scale, dtype="float64"))  # 1 - a
        p = np.broadcast_to(p, size)
        return rng.geometric(p, size=size) - rng.geometric(p, size=size)  # both >= 1: same law

    @classmethod
    def pytensor_draw(cls, scale, size, rng):
        """floor(E1) - floor(E2), E ~ Exponential(scale) (each floor is geometric with
        P(g) = (1 - a) a^g, a = e^{-1/scale})."""
        rng, e1 = exponential(scale, size=size, rng=rng, return_next_rng=True)
        rng, e2 = exponential(scale, size=size, rng=rng, return_next_rng=True)
        return rng, pt.floor(e1) - pt.floor(e2)

    log_density, log_cdf = _math_methods(nm, "discrete_laplace_logpmf", "discrete_laplace_logcdf")
    count_logp, count_log_cdfs = _math_methods(
        ncm, "discrete_laplace_count_logp", "discrete_laplace_count_log_cdfs"
    )

    @classmethod
    def param_variance(cls, b):
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
    rv = laplace  # drawn as the continuous Laplace, then rounded

    @classmethod
    def numpy_draw(cls, scale, size, rng):
        return np.rint(super().numpy_draw(scale, size, rng)).astype("int64")

    @classmethod
    def pytensor_draw(cls, scale, size, rng):
        rng, x = super().pytensor_draw(scale, size, rng)
        return rng, pt.round(x)

    log_density, log_cdf = _math_methods(nm, "rounded_laplace_logpmf", "rounded_laplace_logcdf")
    count_logp, count_log_cdfs = _math_methods(
        ncm, "rounded_laplace_count_logp", "rounded_laplace_count_log_cdfs"
    )

    @classmethod
    def param_variance(cls, b):
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
    rv = normal
    log_density, log_cdf = _math_methods(nm, "gaussian_logpdf", "gaussian_logcdf")

    # the pieces of the window sums (math.noisy_counts)
    @classmethod
    def log_norm(cls, sigma):
        """Log normalising constant of :math:`e^{-x^2/2\\sigma^2}`."""
        return pt.log(sigma) + nm._LOG_SQRT_2PI

    @classmethod
    def log_cdf_real(cls, d, sigma, sigma_max):
        """:math:`\\log P(N \\le d)` at a real ``d``."""
        return nm.log_ndtr(d / sigma)

    @classmethod
    def log_sf_real(cls, d, sigma, sigma_max):
        """:math:`\\log P(N > d)` at a real ``d``."""
        return nm.log_ndtr(-d / sigma)

    tail_log_cdf = log_cdf_real
    tail_log_sf = log_sf_real

    @classmethod
    def from_epsilon_delta(cls, epsilon, delta, sensitivity=1.0):
        r"""The analytic Gaussian mechanism's :math:`\sigma` for :math:`(\varepsilon, \delta)`-DP
        (Balle & Wang 2018; :func:`pymc_dpnoise.mechanisms.analytic_gaussian_sigma`)."""
        from .mechanisms import analytic_gaussian_sigma

        return cls(_scalar_or_array(analytic_gaussian_sigma(epsilon, delta, sensitivity)))


#: proposals per discrete-Gaussian draw in the symbolic sampler (module docstring): the
#: acceptance probability of Canonne, Kamath & Steinke's sampler is above 0.44 for every sigma
#: in [1e-3, 1e4] (lowest near sigma = 1), so no proposal is accepted with probability below
#: 0.56^96 < 1e-24 per draw (tests/test_noisy_counts.py checks the bound); the NumPy mechanism
#: loops until acceptance.
DG_PROPOSALS = 96


class DiscreteGaussian(_GaussianKind):
    r"""Discrete Gaussian noise, :math:`P(k) \propto e^{-k^2/(2\sigma^2)}` on the integers.

    Canonne, Kamath & Steinke (2020): :math:`\rho`-zCDP with :math:`\rho =
    \Delta^2/(2\sigma^2)`.  OpenDP's ``make_gaussian`` on integers, Tumult's
    ``"DISCRETE_GAUSSIAN"`` (its ``noise_parameter`` is :math:`\sigma^2`) and the 2020 Census noisy measurements.

    Parameters
    ----------
    sigma : float or array_like
        The parameter :math:`\sigma > 0` (the variance is slightly below :math:`\sigma^2`
        when :math:`\sigma < 1`).
    """

    discrete = True
    kind = "discrete_gaussian"

    @classmethod
    def numpy_draw(cls, sigma, size, rng):
        """Canonne, Kamath & Steinke (2020), Algorithm 3, vectorised; loops until all accept."""
        sigma = np.broadcast_to(np.asarray(sigma, dtype="float64"), size).ravel()
        t = np.floor(sigma) + 1.0
        out = np.empty(sigma.shape, dtype="int64")
        pending = np.arange(sigma.size)
        while pending.size:
            s, tt = sigma[pending], t[pending]
            y = DiscreteLaplace.numpy_draw(tt, s.shape, rng)
            accept = rng.random(s.shape) < np.exp(-((np.abs(y) - s**2 / tt) ** 2) / (2.0 * s**2))
            out[pending[accept]] = y[accept]
            pending = pending[~accept]
        return out.reshape(size)

    @classmethod
    def pytensor_draw(cls, sigma, size, rng):
        # CKS rejection from DL(t), t = floor(sigma) + 1, DG_PROPOSALS proposals at once
        sigma = pt.broadcast_to(sigma, size)
        t = pt.floor(sigma) + 1.0
        k_size = pt.concatenate([pt.as_tensor(size, dtype="int64"), [DG_PROPOSALS]])
        rng, y = DiscreteLaplace.pytensor_draw(t[..., None], k_size, rng)
        rng, u = uniform(0.0, 1.0, size=k_size, rng=rng, return_next_rng=True)
        s = sigma[..., None]
        accept = u < pt.exp(-((pt.abs(y) - s**2 / t[..., None]) ** 2) / (2.0 * s**2))
        first = pt.argmax(accept, axis=-1, keepdims=True)
        return rng, pt.take_along_axis(y, first, axis=-1)[..., 0]

    log_density, log_cdf = _math_methods(nm, "discrete_gaussian_logpmf", "discrete_gaussian_logcdf")

    (log_norm,) = _math_methods(nm, "log_z_discrete_gaussian")

    @classmethod
    def log_cdf_real(cls, d, sigma, sigma_max):
        r""":math:`\log P(N \le d)` continued to real :math:`d`: :math:`\log G(d) - \log Z` with
        :math:`G(d) = \sum_{i \ge 0} e^{-(d - i)^2/2\sigma^2}` (equal to the CDF at integers,
        analytic in :math:`d`; above :math:`-\tfrac12` as :math:`1 - G(-d-1)/Z`, the same
        function to within :math:`e^{-2\pi^2\sigma^2}`)."""
        log_z = nm.log_z_discrete_gaussian(sigma)
        low = nm.log_dg_tail(pt.minimum(d, -0.5), sigma, sigma_max, min_abs=0.5) - log_z
        up = nm.log_dg_tail(pt.minimum(-d - 1.0, -0.5), sigma, sigma_max, min_abs=0.5) - log_z
        return pt.switch(d <= -0.5, low, pt.log1mexp(pt.minimum(up, nm._TINY)))

    @classmethod
    def log_sf_real(cls, d, sigma, sigma_max):
        """:math:`\\log P(N > d)` continued to real ``d`` (:math:`P(N \\le -d - 1)`)."""
        return cls.log_cdf_real(-d - 1.0, sigma, sigma_max)

    @classmethod
    def tail_log_cdf(cls, d, sigma, sigma_max):
        """:math:`\\log P(N \\le d)` at an integer ``d <= -1``."""
        return nm.log_dg_tail(d, sigma, sigma_max) - nm.log_z_discrete_gaussian(sigma)

    @classmethod
    def tail_log_sf(cls, d, sigma, sigma_max):
        """:math:`\\log P(N > d)` at an integer ``d >= 0``."""
        return nm.log_dg_tail(-d - 1.0, sigma, sigma_max) - nm.log_z_discrete_gaussian(sigma)

    @classmethod
    def param_variance(cls, s):
        # Σ k² e^{-k²/2σ²} / Σ e^{-k²/2σ²} over a window that holds all the mass
        shape = np.shape(s)
        s = np.atleast_1d(s)
        out = np.empty_like(s)
        for i, si in enumerate(s.ravel()):
            kmax = math.ceil(math.sqrt(2 * TAIL_NATS) * si) + 12
            k = np.arange(-kmax, kmax + 1, dtype="float64")
            w = np.exp(-(k**2) / (2.0 * si**2))
            out.ravel()[i] = (k**2 * w).sum() / w.sum()
        return out.reshape(shape)


#: the package's noise kinds
BUILTIN = (Laplace, DiscreteLaplace, RoundedLaplace, Gaussian, DiscreteGaussian)


def as_noise(noise) -> Noise:
    """``noise`` if it is a noise spec, else a clear TypeError."""
    if not isinstance(noise, Noise):
        raise TypeError(
            "`noise` must be a noise spec: an instance of pymc_dpnoise.noise.Noise (Laplace, "
            "DiscreteLaplace, RoundedLaplace, Gaussian, DiscreteGaussian, or a subclass of "
            f"your own); got {noise!r}"
        )
    return noise


# ------------------------------------------------------------------------------------------------
# Reading real releases
# ------------------------------------------------------------------------------------------------

#: Tumult Analytics' ``noise_mechanism`` names (``_NoiseMechanism``), each naming one noise:
#: ``(spec class, parameter is sigma^2, integer outputs?)``.  GEOMETRIC / DISCRETE_GAUSSIAN are
#: what Tumult adds to integer outputs, LAPLACE / GAUSSIAN the continuous noise of float outputs.
_TUMULT = {
    "GEOMETRIC": ("DiscreteLaplace", False, True),
    "DISCRETE_GAUSSIAN": ("DiscreteGaussian", True, True),
    "LAPLACE": ("Laplace", False, False),
    "GAUSSIAN": ("Gaussian", True, False),
}


def from_tumult(noise_mechanism, noise_parameter, *, integer=None) -> Noise:
    r"""The spec of a Tumult Analytics output from its ``noise_mechanism`` and ``noise_parameter``.

    Tumult's session reports, for each output column, the noise it added; the mechanism's name
    says which noise it is (Tumult Analytics 0.21):

    ========================  ==================  ===============================================
    ``noise_mechanism``       outputs             spec (``noise_parameter`` is ...)
    ========================  ==================  ===============================================
    ``"GEOMETRIC"``           integer (counts,    :class:`DiscreteLaplace`, scale
                              integer sums)       :math:`\alpha` = ``noise_parameter``
    ``"DISCRETE_GAUSSIAN"``   integer             :class:`DiscreteGaussian`, :math:`\sigma^2` =
                                                  ``noise_parameter`` (the :math:`\sigma^2` of
                                                  :math:`e^{-k^2/2\sigma^2}`, not the variance)
    ``"LAPLACE"``             float               :class:`Laplace`, scale :math:`b` =
                                                  ``noise_parameter``
    ``"GAUSSIAN"``            float               :class:`Gaussian`, :math:`\sigma^2` =
                                                  ``noise_parameter``
    ========================  ==================  ===============================================

    No name is ambiguous, so ``integer`` is only a check: ``integer=True`` with ``"LAPLACE"`` /
    ``"GAUSSIAN"`` (Tumult never puts them on integers) or ``integer=False`` with
    ``"GEOMETRIC"`` / ``"DISCRETE_GAUSSIAN"`` is refused rather than read as another noise.

    Parameters
    ----------
    noise_mechanism : str or enum member
        ``"GEOMETRIC"``, ``"DISCRETE_GAUSSIAN"``, ``"LAPLACE"`` or ``"GAUSSIAN"`` (any case;
        Tumult's ``_NoiseMechanism`` members are accepted by name).
    noise_parameter : float or array_like
        The scale (Laplace kinds) or :math:`\sigma^2` (Gaussian kinds); the resulting scale or
        :math:`\sigma` must lie in ``[PARAM_MIN, PARAM_MAX]``.
    integer : bool, optional
        Whether the output column is integer; if given, it must agree with the name.

    Examples
    --------
    >>> from_tumult("DISCRETE_GAUSSIAN", 4.0)
    DiscreteGaussian(sigma=2.0)
    >>> from_tumult("GAUSSIAN", 4.0)
    Gaussian(sigma=2.0)
    >>> from_tumult("GEOMETRIC", 2.5)
    DiscreteLaplace(scale=2.5)
    """
    mech = str(getattr(noise_mechanism, "name", noise_mechanism)).upper().rsplit(".", 1)[-1]
    if mech not in _TUMULT:
        raise ValueError(
            "`noise_mechanism` must be Tumult's GEOMETRIC, DISCRETE_GAUSSIAN, LAPLACE or "
            f"GAUSSIAN; got {noise_mechanism!r}"
        )
    cls_name, squared, on_integers = _TUMULT[mech]
    if integer is not None and bool(integer) != on_integers:
        fits = "GEOMETRIC or DISCRETE_GAUSSIAN" if integer else "LAPLACE or GAUSSIAN"
        raise ValueError(
            f"`noise_mechanism`={mech!r} is Tumult's noise for "
            f"{'integer' if on_integers else 'float'} outputs, but `integer`={integer!r}: "
            f"Tumult reports the noise of {'integer' if integer else 'float'} outputs as {fits}"
        )
    arr = np.asarray(noise_parameter)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"`noise_parameter` must be a positive number; got {noise_parameter!r}")
    arr = arr.astype("float64")
    check_finite("noise_parameter", arr)
    low, high = (PARAM_MIN**2, PARAM_MAX**2) if squared else (PARAM_MIN, PARAM_MAX)
    if np.any(arr < low) or np.any(arr > high):
        what = "sigma^2" if squared else "the scale"
        bad = arr[(arr < low) | (arr > high)].ravel()[:5]
        raise ValueError(
            f"`noise_parameter` ({what} for {mech}) must be in [{low:g}, {high:g}] (a "
            f"{'sigma' if squared else 'scale'} in [{PARAM_MIN:g}, {PARAM_MAX:g}], the noise "
            f"specs' range); got {bad}"
        )
    param = _scalar_or_array(np.sqrt(arr) if squared else arr)
    return globals()[cls_name](param)


#: relative width at which python-dp's search for the Gaussian sigma stops (its C++
#: ``kGaussianSigmaAccuracy``, algorithms/internal/gaussian-stddev-calculator.cc)
_PYDP_SIGMA_ACCURACY = 1e-3


def _python_dp_gaussian_sigma(epsilon, delta, l2):
    """python-dp's Gaussian sigma: its exponential then binary search, step by step.

    The Google DP library (C++, which python-dp wraps) brackets sigma by doubling from the L2
    sensitivity while Balle & Wang's (2018, Theorem 8) delta of sigma exceeds the target, then
    halves the bracket until it is narrower than 1e-3 of its lower end, and returns the upper
    end: a sigma up to 0.1% above the analytic one.  The same arithmetic in doubles (the
    standard normal CDF as ``erfc(-x/sqrt(2))/2``) gives the same sigma.
    """

    def delta_of(sigma):
        a, b = l2 / (2.0 * sigma), epsilon * sigma / l2
        if math.isnan(b):  # pragma: no cover - only for inf/0 inputs, refused above
            return 0.0
        cdf = lambda x: math.erfc(-x / math.sqrt(2.0)) / 2.0  # noqa: E731
        return cdf(a - b) - math.exp(epsilon) * cdf(-a - b)

    lower, upper = np.finfo(float).tiny, l2
    while delta_of(upper) > delta:
        lower, upper = upper, 2.0 * upper
    while upper - lower > _PYDP_SIGMA_ACCURACY * lower:
        middle = (lower + upper) / 2.0
        if delta_of(middle) > delta:
            lower = middle
        else:
            upper = middle
    return upper


def from_python_dp(
    epsilon,
    l0_sensitivity=1,
    linf_sensitivity=1,
    *,
    mechanism="laplace",
    delta=None,
    l2_sensitivity=None,
) -> Noise:
    r"""The spec of a Google DP library (python-dp) release.

    ``mechanism="laplace"`` (default): a ``Count`` (or any Laplace mechanism) with integer
    output.  python-dp adds continuous Laplace noise of scale
    :math:`\Delta_0\Delta_\infty/\varepsilon` (partitions a person contributes to, times
    contributions per partition) and rounds the result to the nearest integer; nothing is
    clamped, so negative counts occur: :class:`RoundedLaplace`.

    ``mechanism="gaussian"``: python-dp's ``GaussianMechanism`` on a float value,
    :math:`(\varepsilon, \delta)`-DP with L2 sensitivity ``l2_sensitivity`` (default
    :math:`\sqrt{\Delta_0}\,\Delta_\infty`, as python-dp's builder sets it):
    :class:`Gaussian` with python-dp's own :math:`\sigma`.  python-dp does not solve Balle &
    Wang's analytic condition exactly: it bisects until the bracket is within 0.1% and keeps
    the upper end, so its :math:`\sigma` is up to 0.1% above
    :meth:`Gaussian.from_epsilon_delta` (3.7324 against 3.7306 at :math:`\varepsilon = 1`,
    :math:`\delta = 10^{-5}`); this reader repeats python-dp's search step by step.  (Its
    noise is drawn on a lattice far finer than :math:`\sigma`, ignored here; on an integer
    value python-dp rounds the Gaussian draw, a noise none of the specs is.)

    Parameters
    ----------
    epsilon : float
        The mechanism's :math:`\varepsilon > 0`.
    l0_sensitivity, linf_sensitivity : int
        Partitions per person and contributions per partition (positive integers).
    mechanism : {"laplace", "gaussian"}
    delta : float
        :math:`0 < \delta < 1`; required for, and only for, ``mechanism="gaussian"``.
    l2_sensitivity : float, optional
        The Gaussian mechanism's L2 sensitivity, if it was set directly.

    Examples
    --------
    >>> from_python_dp(0.5)
    RoundedLaplace(scale=2.0)
    >>> from_python_dp(1.0, mechanism="gaussian", delta=1e-5)
    Gaussian(sigma=3.732421875)
    """
    for name, v in (("l0_sensitivity", l0_sensitivity), ("linf_sensitivity", linf_sensitivity)):
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float | np.number)
            or int(v) != v
            or v < 1
        ):
            raise ValueError(f"`{name}` must be a positive integer; got {v!r}")
    if mechanism == "laplace":
        for name, v in (("delta", delta), ("l2_sensitivity", l2_sensitivity)):
            if v is not None:
                raise ValueError(f"`{name}` is for mechanism='gaussian'; got {name}={v!r}")
        return RoundedLaplace.from_epsilon(epsilon, float(l0_sensitivity * linf_sensitivity))
    if mechanism != "gaussian":
        raise ValueError(f"`mechanism` must be 'laplace' or 'gaussian'; got {mechanism!r}")
    if delta is None:
        raise ValueError("`delta` is required for mechanism='gaussian'")
    if l2_sensitivity is None:
        l2_sensitivity = math.sqrt(l0_sensitivity) * linf_sensitivity
    if not (isinstance(l2_sensitivity, int | float | np.number) and l2_sensitivity > 0):
        raise ValueError(f"`l2_sensitivity` must be a number > 0; got {l2_sensitivity!r}")
    eps, l2 = _check_budget("epsilon", epsilon, l2_sensitivity)
    dlt = np.asarray(delta)
    if dlt.dtype == bool or not np.issubdtype(dlt.dtype, np.number):
        raise TypeError(f"`delta` must be a number in (0, 1); got {delta!r}")
    if eps.ndim or l2.ndim or dlt.ndim:
        raise ValueError("`epsilon`, `delta` and `l2_sensitivity` must be scalars")
    if not 0.0 < float(dlt) < 1.0:
        raise ValueError(f"`delta` must be in (0, 1); got {delta!r}")
    return Gaussian(_python_dp_gaussian_sigma(float(eps), float(dlt), float(l2)))


def _sigma_of_dg_variance(variance):
    """The sigma whose discrete Gaussian has this exact variance (increasing in sigma)."""
    from scipy.optimize import brentq

    def gap(log_s, v):
        return math.log(float(DiscreteGaussian.param_variance(math.exp(log_s)))) - math.log(v)

    out = np.empty(np.shape(variance))
    for i, v in enumerate(np.ravel(variance)):
        if v >= 4.0:  # sigma >= 2: sigma^2 - variance < 1e-30 sigma^2 (Poisson summation)
            out.ravel()[i] = math.sqrt(v)
            continue
        root = brentq(gap, math.log(0.05), math.log(2.01), args=(float(v),), xtol=1e-15)
        out.ravel()[i] = math.exp(root)
    return out


def from_census(sigma_sq=None, *, exact_variance=None) -> DiscreteGaussian:
    r"""The spec of a 2020 Census noisy measurement from its published noise parameter.

    The Disclosure Avoidance System (DAS) adds discrete Gaussian noise,
    :math:`P(k) \propto e^{-k^2/(2\sigma^2)}`, to each query answer of the noisy measurement
    files; the measurements are integers, often negative, with no clamping.  (The published
    *tables* are TopDown post-processing of these measurements and have no simple likelihood:
    read the measurements.)  The DAS's code carries two numbers per query, and they differ
    below :math:`\sigma^2 \approx 1`; give the one the file publishes, by name:

    * ``sigma_sq``: the parameter :math:`\sigma^2` of :math:`e^{-k^2/(2\sigma^2)}`;
    * ``exact_variance``: the variance of that discrete Gaussian,
      :math:`\sum_k k^2 e^{-k^2/2\sigma^2} / \sum_k e^{-k^2/2\sigma^2}`, equal to
      :math:`\sigma^2` to 1e-8 relative for :math:`\sigma^2 \ge 1` but smaller below (at
      :math:`\sigma = 0.5`, 0.2150 instead of 0.25); :math:`\sigma` is solved from it.

    **From the DAS's budget.**  The DAS gives query :math:`q` a zCDP budget :math:`\rho_q` and
    sets :math:`\sigma^2 = 1/\rho_q`: its neighbours are *bounded* (one person's record
    changed), so a count's L2 sensitivity is :math:`\sqrt 2` and :math:`\rho_q =
    \Delta^2/(2\sigma^2) = 1/\sigma^2`.  Read a query from its :math:`\rho_q` with
    ``DiscreteGaussian.from_rho(rho_q, sensitivity=np.sqrt(2))``;
    ``DiscreteGaussian.from_rho(rho_q)`` (sensitivity 1, add/remove neighbours) gives a
    :math:`\sigma` :math:`\sqrt 2` too small.

    Parameters
    ----------
    sigma_sq : float or array_like, optional
        :math:`\sigma^2` per measurement (the positional argument).
    exact_variance : float or array_like, optional
        The discrete Gaussian's exact variance per measurement.  Exactly one of the two.

    Examples
    --------
    >>> from_census([1.5, 6.0])
    DiscreteGaussian(sigma=[1.22474487, 2.44948974])
    >>> v = float(DiscreteGaussian(0.5).variance)  # 0.2150..., not 0.25
    >>> round(from_census(exact_variance=v).sigma, 12)
    0.5
    >>> import numpy as np
    >>> round(DiscreteGaussian.from_rho(0.25, sensitivity=np.sqrt(2)).sigma, 12)  # sigma^2 = 4
    2.0
    """
    if (sigma_sq is None) == (exact_variance is None):
        raise ValueError(
            "give exactly one of `sigma_sq` (the parameter sigma^2 of exp(-k^2/2sigma^2)) and "
            "`exact_variance` (the discrete Gaussian's variance), whichever the file publishes"
        )
    name = "sigma_sq" if exact_variance is None else "exact_variance"
    value = sigma_sq if exact_variance is None else exact_variance
    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"`{name}` must be a positive number; got {value!r}")
    arr = arr.astype("float64")
    check_finite(name, arr)
    if name == "sigma_sq":
        low, high = PARAM_MIN**2, PARAM_MAX**2
    else:  # the variance of DiscreteGaussian(0.1) is 4e-22: smaller variances do not identify it
        low, high = float(DiscreteGaussian.param_variance(0.1)), PARAM_MAX**2
    if np.any(arr < low) or np.any(arr > high):
        bad = arr[(arr < low) | (arr > high)].ravel()[:5]
        raise ValueError(f"`{name}` must be in [{low:.3g}, {high:g}]; got {bad}")
    sigma = np.sqrt(arr) if name == "sigma_sq" else _sigma_of_dg_variance(arr)
    return DiscreteGaussian(_scalar_or_array(sigma))


# ------------------------------------------------------------------------------------------------
# Reading an OpenDP measurement (from_opendp; pymc_dpnoise.mechanisms.opendp_releases uses the
# public names below, which are not in __all__: they are shared inside the package)
# ------------------------------------------------------------------------------------------------

#: :data:`pymc_dpnoise.mechanisms.opendp_releases.MAP_RTOL` (documented there)
MAP_RTOL = 1e-6

_INTEGER_TYPE = re.compile(r"[iu](8|16|32|64|128|size)")
_FLOAT_TYPES = ("f32", "f64")
_MEASURES = ("MaxDivergence", "ZeroConcentratedDivergence")
#: OpenDP's constructors of additive noise, and the output measures each builds: make_geometric
#: is make_laplace restricted to integers ("equivalent", its docstring), make_noise is
#: make_laplace / make_gaussian with the measure passed in (OpenDP 0.16)
_NOISE_MAKERS = {
    "make_laplace": ("MaxDivergence",),
    "make_gaussian": ("ZeroConcentratedDivergence",),
    "make_geometric": ("MaxDivergence",),
    "make_noise": _MEASURES,
}


def _constructor(obj):
    """OpenDP's record of how ``obj`` was built: ``(function name, kwargs)`` or ``(None, {})``."""
    info = getattr(obj, "__opendp_dict__", None)
    if not isinstance(info, dict):
        return None, {}
    return info.get("__function__"), info.get("__kwargs__", {}) or {}


def _noise_step(measurement):
    """The noise measurement (make_laplace, make_gaussian, make_geometric or make_noise) at
    the end of ``measurement``, and the transformations before it (in order of application)."""
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
            f"the measurement was built by OpenDP's `{fn}`, not by make_laplace, make_gaussian, "
            "make_geometric or make_noise (alone, with their then_* forms, or at the end of a "
            "chain of transformations): its noise is not one of the noise specs "
            "(post-processing, composition, measure conversions and other mechanisms are not "
            "read)"
        )


def opendp_censoring(measurement) -> dict:
    """``{"lower": ..., "upper": ...}``: where OpenDP censors the noisy value (see
    :func:`pymc_dpnoise.mechanisms.opendp_releases.clamp_from_measurement`).

    Two sources: the saturating cast of unsigned integers (below at 0), and make_geometric's
    ``bounds=(L, U)``, with which OpenDP's constant-time sampler releases count + noise
    censored to ``[L, U]`` (checked against its draws in tests/mechanisms).
    """
    noise_meas, fn, kw, _ = _noise_step(measurement)
    elem = _element_type(noise_meas.input_domain)
    out = {"lower": 0} if elem.startswith("u") and _INTEGER_TYPE.fullmatch(elem) else {}
    bounds = kw.get("bounds") if fn == "make_geometric" else None
    if bounds is not None:
        low, up = (int(b) for b in bounds)
        out = {"lower": max(low, out.get("lower", low)), "upper": up}
    return out


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


def read_opendp(measurement, d_in):
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
    if fn is not None and measure not in _NOISE_MAKERS[fn]:  # pragma: no cover - OpenDP forbids
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
        if not abs(twice - expect) <= MAP_RTOL * expect:
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
    if not abs(stated - expected) <= MAP_RTOL * expected:
        kind = "rho" if gaussian else "epsilon"
        raise ValueError(
            f"OpenDP's privacy map states {kind}={stated!r} at d_in={d_in!r}, but {spec!r} at "
            f"sensitivity {d_noise!r} has {kind}={expected!r} (relative difference "
            f"{abs(stated - expected) / expected:.2e} > MAP_RTOL={MAP_RTOL:g}): the noise is "
            "not that spec (e.g. a float measurement with a coarse granularity `k`, whose "
            "lattice OpenDP's map accounts for)"
        )
    return spec, elem, stated, d_noise


def from_opendp(measurement, d_in=1):
    """The spec of an OpenDP measurement's noise; see :mod:`pymc_dpnoise.mechanisms.opendp_releases`."""
    return read_opendp(measurement, d_in)[0]
