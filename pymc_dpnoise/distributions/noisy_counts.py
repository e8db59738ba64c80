r"""Counts released with any noise of :mod:`pymc_dpnoise.noise`, clamped or not (exact likelihoods).

``NoisyBinomial`` and ``NoisyPoisson`` are one distribution each, whatever the noise: the
random variable's op carries the noise spec's *type* (its kind: the class whose methods give
the log pmf / pdf, CDFs, draws and count convolution), and the spec's parameter is an input of
the graph like ``n`` and ``p``.  The type is a property of the op rather than a symbolic input
because it chooses the graph itself (which sums, which sampler), which no tensor can; keeping
the parameter symbolic lets PyMC resize, rebuild and replace the variable as any other
(``pm.logp``, draws on every backend, ``pm.sample_posterior_predictive``).  Releases of the
integer kinds are integer valued, in float64 (``REPORT_DTYPE`` of
:mod:`pymc_dpnoise.distributions._common`).  The math is :mod:`pymc_dpnoise.math.noisy_counts`.

Releases beyond 2^53
--------------------
Every kind refuses a release (and a clamp bound) beyond :math:`2^{53}` in magnitude: an
observed one when the model is built (a ``ValueError`` naming the variable), a value given to
``pm.logp`` or a symbolic one by a log likelihood of :math:`-\infty` (outside the support;
no NaN in the value or its gradient).  The likelihood cannot be exact there: above
:math:`2^{53}` float64 holds only every other integer, so an integer release was rounded
before it reached the model, and :math:`y - s` is no longer exact for every count :math:`s`.
Nor could a float64 log likelihood carry the parameters there: its magnitude is the noise's
tail at the release's distance from the counts (:math:`y/b` for the Laplace kinds,
:math:`y^2/2\sigma^2` for the Gaussian ones), whose rounding step at the noise scales of DP
counts exceeds the whole dependence on :math:`p` (:math:`n \log 9` between :math:`p = 0.1`
and :math:`0.9`).  Such a release is impossible under the declared model anyway.  Below
:math:`2^{53}` the log likelihood is exact to float64 rounding of its own magnitude; a release
so far from :math:`[0, n]` that this magnitude is large (e.g. :math:`10^{10}` with
:math:`\sigma = 2`, about :math:`10^{19}` nats) is exact in that sense but resolves its
dependence on the parameters only to the float64 spacing at that magnitude.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import (
    Distribution,
    SymbolicRandomVariable,
    _support_point,
)
from pymc.distributions.shape_utils import maybe_resize, rv_size_is_none
from pymc.logprob.abstract import _logccdf, _logcdf, _logprob
from pytensor.tensor.random.basic import binomial, poisson

from .. import noise as noise_mod
from ..math import noisy_counts as ncm
from ..validation import (
    check_finite,
    check_required,
    check_shapes,
    constant_value,
    static_value,
)
from ._common import (
    REPORT_DTYPE,
    _all_finite,
    _cdf_of_value,
    _check_observed,
    _check_value_batch,
    _finite_reports,
    _ninf_where_not,
    _refuse,
    _rv_inputs,
    _rv_node,
    _to_floatx,
)

__all__ = ["NoisyBinomial", "NoisyPoisson"]

_HUGE = np.float64(1e300)

#: largest number of records: integers above 2^53 are not exact in double precision
MAX_N = float(2**53)
#: largest release magnitude (module docstring, "Releases beyond 2^53")
MAX_RELEASE = float(2**53)


def _check_constant(name, value, bad, what):
    """Refuse a missing ``value``, or a constant one that is not finite or where
    ``bad(value)``, naming it."""
    check_required(**{name: value})
    v = constant_value(value, name)
    if v is None:
        return
    check_finite(name, v)
    mask = bad(v)
    if np.any(mask):
        raise ValueError(f"`{name}` must be {what}; got {v[mask].ravel()[:5]}")


def _check_probability(name, value):
    _check_constant(name, value, lambda v: (v < 0) | (v > 1), "in [0, 1]")


def _check_count(name, value):
    bad = lambda v: (v < 0) | (v != np.floor(v)) | (v > MAX_N)  # noqa: E731
    _check_constant(name, value, bad, "a non-negative integer <= 2^53")


def _check_nonnegative(name, value):
    _check_constant(name, value, lambda v: v < 0, ">= 0")


# --------------------------------------------------------------------------------------------
# Random variables: one op class per count family, the noise type an attribute of the op
# --------------------------------------------------------------------------------------------


class _NoisyCountRV(SymbolicRandomVariable):
    """Draws ``clamp(count + noise, lower, upper)``; ``noise_type`` (a subclass of
    :class:`pymc_dpnoise.noise.Noise`) gives the noise's symbolic sampler."""

    _title: str

    def __init__(self, *args, noise_type, **kwargs):
        self.noise_type = noise_type
        # printed as the papers name the model: LaplaceNoisyBinomial, DiscreteGaussianNoisy...
        title = f"{noise_type.__name__}{self._title}"
        self._print_name = (title, f"\\operatorname{{{title}}}")
        super().__init__(*args, **kwargs)

    def __eq__(self, other):
        return super().__eq__(other) and self.noise_type is other.noise_type

    def __hash__(self):
        return hash((super().__hash__(), self.noise_type))

    def __str__(self):
        return f"{self._title}{{{self.noise_type.__name__}}}"

    def rebuild_rv(self, *args, **kwargs):
        return self.rv_op(*args, noise_type=self.noise_type, **kwargs)

    @classmethod
    def _count_draw(cls, params, size, rng):
        raise NotImplementedError

    @classmethod
    def rv_op(cls, *params, noise_type, size=None, rng=None):
        size, rng, *params = _rv_inputs(cls, size, rng, *params)
        rng_next, s = cls._count_draw(params, size, rng)
        *_, param, lower, upper = params
        final_rng, noise = noise_type.pytensor_draw(param, size, rng_next)
        y = pt.clip(pt.cast(s, "float64") + noise, lower, upper)
        y = pt.cast(y, REPORT_DTYPE) if noise_type.discrete else _to_floatx(y)
        # the node's size is None where it was implied (see _rv_node)
        return _rv_node(cls, rng, size, params, final_rng, y, noise_type=noise_type)


class NoisyBinomialRV(_NoisyCountRV):
    name = "noisy_binomial"
    _title = "NoisyBinomial"
    extended_signature = "[rng],[size],(),(),(),(),()->[rng],()"

    @classmethod
    def _count_draw(cls, params, size, rng):
        n, p = params[:2]
        n_int = pt.cast(pt.round(n), "int64")
        return binomial(n_int, p, size=size, rng=rng, return_next_rng=True)


class NoisyPoissonRV(_NoisyCountRV):
    name = "noisy_poisson"
    _title = "NoisyPoisson"
    extended_signature = "[rng],[size],(),(),(),()->[rng],()"

    @classmethod
    def _count_draw(cls, params, size, rng):
        return poisson(params[0], size=size, rng=rng, return_next_rng=True)


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _check_bound(name, value, discrete):
    if value is None:
        return
    v = constant_value(value, name)
    if v is None:
        return
    if np.any(np.isnan(v)):
        raise ValueError(f"`{name}` must not be NaN (use None for no clamp)")
    if discrete and np.any(np.isfinite(v) & (v != np.round(v))):
        raise ValueError(f"`{name}` must be an integer: the release is integer valued; got {v}")
    if np.any(np.isfinite(v) & (np.abs(v) > MAX_RELEASE)):
        raise ValueError(f"`{name}` must be at most 2^53 in magnitude (or infinite); got {v}")


def _check_bounds(lower, upper, discrete):
    _check_bound("lower", lower, discrete)
    _check_bound("upper", upper, discrete)
    lo = constant_value(lower) if lower is not None else None
    hi = constant_value(upper) if upper is not None else None
    if lo is not None and hi is not None and np.any(lo > hi):
        raise ValueError(
            f"`lower` must be at most `upper` (equal: the release is that value); got "
            f"lower={lo}, upper={hi}"
        )


def _bound(value, default):
    return default if value is None else value


def _clamp_args(lower, upper):
    """``(lower, upper)`` for the math: None where the bound is absent (constant +-inf; an
    infinite bound in ``pm.Data`` stays, set_data may make it finite)."""
    lo = static_value(lower)
    hi = static_value(upper)
    lo_none = lo is not None and np.all(np.isneginf(lo))
    hi_none = hi is not None and np.all(np.isposinf(hi))
    return (None if lo_none else lower), (None if hi_none else upper)


def _check_value(value, discrete):
    """``(ok, safe)``: releases beyond 2^53 in magnitude are outside the support (``-inf``,
    evaluated at 0 so that no NaN reaches a gradient), as non-finite ones and, for the integer
    kinds, non-integers."""
    value = pt.as_tensor_variable(value)
    if value.dtype.startswith(("int", "uint")):
        finite, safe = None, pt.cast(value, "float64")
    else:
        finite, safe = _finite_reports(value)
        if discrete:
            integer = pt.eq(safe, pt.round(safe))
            finite = integer if finite is None else finite & integer
    v = constant_value(safe)
    if v is not None:  # constant releases stay constants (the clamp's unused branches drop)
        exact = np.abs(v) <= MAX_RELEASE
        if np.all(exact):
            return finite, safe
        safe = pt.as_tensor_variable(np.where(exact, v, 0.0))
        exact = pt.as_tensor_variable(exact)
    else:
        exact = pt.abs(safe) <= MAX_RELEASE
        safe = pt.switch(exact, safe, 0.0)
    return (exact if finite is None else finite & exact), safe


# --------------------------------------------------------------------------------------------
# Classes
# --------------------------------------------------------------------------------------------


def _support_point_value(center, lower, upper, size, discrete, *others):
    point = pt.clip(center, lower, upper)
    point = pt.clip(point, pt.maximum(lower, -_HUGE), pt.minimum(upper, _HUGE))
    if discrete:
        point = pt.round(point)
    point, *_ = pt.broadcast_arrays(point, *others)
    if not rv_size_is_none(size):
        point = pt.full(size, point)
    return point


def _binomial_checks(res, n, p, param, lower, upper):
    return check_parameters(
        res,
        *_all_finite(n, p, param),
        n >= 0,
        n <= MAX_N,
        pt.eq(n, pt.floor(n)),
        p >= 0,
        p <= 1,
        param > 0,
        pt.all(lower <= upper),
        msg="finite parameters, n integer in [0, 2^53], 0 <= p <= 1, noise parameter > 0, "
        "lower <= upper",
    )


def _poisson_checks(res, mu, param, lower, upper):
    return check_parameters(
        res,
        *_all_finite(mu, param),
        mu >= 0,
        param > 0,
        pt.all(lower <= upper),
        msg="finite parameters, mu >= 0, noise parameter > 0, lower <= upper",
    )


def _binomial_logp(noise, value, n, p, param, lower, upper):
    _check_value_batch(value, 0, n=(n, 0), p=(p, 0), noise=(param, 0))
    finite, safe = _check_value(value, noise.discrete)
    lo, hi = _clamp_args(lower, upper)
    res = ncm.noisy_binomial_logp(safe, n, p, noise, param, lo, hi)
    return _binomial_checks(_ninf_where_not(finite, res), n, p, param, lower, upper)


def _binomial_cdf(noise, value, n, p, param, lower, upper, tail):
    lo, hi = _clamp_args(lower, upper)
    res = _cdf_of_value(
        value,
        lambda v: ncm.noisy_binomial_log_cdfs(v, n, p, noise, param, lo, hi)[int(tail)],
        tail=tail,
    )
    return _binomial_checks(res, n, p, param, lower, upper)


def _poisson_logp(noise, value, mu, param, lower, upper):
    _check_value_batch(value, 0, mu=(mu, 0), noise=(param, 0))
    finite, safe = _check_value(value, noise.discrete)
    lo, hi = _clamp_args(lower, upper)
    res = ncm.noisy_poisson_logp(safe, mu, noise, param, lo, hi)
    return _poisson_checks(_ninf_where_not(finite, res), mu, param, lower, upper)


def _poisson_cdf(noise, value, mu, param, lower, upper, tail):
    lo, hi = _clamp_args(lower, upper)
    res = _cdf_of_value(
        value,
        lambda v: ncm.noisy_poisson_log_cdfs(v, mu, noise, param, lo, hi)[int(tail)],
        tail=tail,
    )
    return _poisson_checks(res, mu, param, lower, upper)


def _out(noise, x):
    return x if noise.discrete else _to_floatx(x)


def _register(rv_type, logp_fn, cdf_fn, center):
    """PyMC's dispatch for ``rv_type``: every function reads the noise type off the op."""

    @_logprob.register(rv_type)
    def _logp(op, values, rng, size, *params, **kwargs):
        [value] = values
        return maybe_resize(_out(op.noise_type, logp_fn(op.noise_type, value, *params)), size)

    @_logcdf.register(rv_type)
    def _logcdf_(op, value, rng, size, *params, **kwargs):
        res = cdf_fn(op.noise_type, value, *params, tail=False)
        return maybe_resize(_out(op.noise_type, res), size)

    @_logccdf.register(rv_type)
    def _logccdf_(op, value, rng, size, *params, **kwargs):
        res = cdf_fn(op.noise_type, value, *params, tail=True)
        return maybe_resize(_out(op.noise_type, res), size)

    @_support_point.register(rv_type)
    def _support_point_(op, rv, rng, size, *params):
        *_, param, lower, upper = params
        return _support_point_value(
            center(*params), lower, upper, size, op.noise_type.discrete, param
        )


_register(NoisyBinomialRV, _binomial_logp, _binomial_cdf, lambda n, p, *_: n * p)
_register(NoisyPoissonRV, _poisson_logp, _poisson_cdf, lambda mu, *_: mu)


def _validate_common(noise, lower, upper, name=None):
    spec = noise_mod.as_noise(noise)
    _check_bounds(lower, upper, spec.discrete)
    return spec


def _check_inside_clamp(name, obs, lower, upper):
    """Refuse observed releases outside constant clamp bounds: no release can be there (the
    log density is -inf, and the model could not be sampled)."""
    lo, hi = constant_value(lower), constant_value(upper)
    if lo is None or hi is None:
        return
    bad = (obs < lo) | (obs > hi)
    if np.any(bad):
        where = np.argwhere(bad)[:5].tolist() if np.ndim(bad) else []
        raise ValueError(
            f"{name}: observed releases must lie in the clamp range [lower, upper]; found "
            f"{np.ravel(np.broadcast_to(obs, np.shape(bad))[bad])[:3]} (first at index {where})"
        )


def _check_release_range(name, obs):
    """Refuse observed releases beyond 2^53 in magnitude (module docstring)."""
    bad = np.abs(obs) > MAX_RELEASE
    if np.any(bad):
        where = np.argwhere(bad)[:5].tolist() if np.ndim(bad) else []
        raise ValueError(
            f"{name}: observed releases must be at most 2^53 in magnitude: beyond it a float64 "
            "release is not an exact integer (it was rounded before it got here) and the "
            "likelihood's dependence on the parameters is below float64 resolution; found "
            f"{np.ravel(np.broadcast_to(obs, np.shape(bad))[bad])[:3]} (first at index {where})"
        )


class _NoisyCount(Distribution):
    """One distribution whatever the noise (see :class:`NoisyBinomial`)."""

    def __new__(cls, name, *args, observed=None, **kwargs):
        params, _, spec = cls._split(args, dict(kwargs))
        _check_observed(name, observed)
        obs = None
        if observed is not None:
            obs = constant_value(getattr(observed, "to_numpy", lambda: observed)(), "observed")
        if obs is not None and spec.discrete and np.any(obs != np.round(obs)):
            raise ValueError(
                f"{name}: observed releases must be integers with {type(spec).__name__} "
                "noise (an integer count plus integer noise)"
            )
        if obs is not None:
            _check_release_range(name, obs)
            _check_inside_clamp(name, obs, *params[-2:])
        return super().__new__(cls, name, *args, observed=observed, **kwargs)

    @classmethod
    def dist(cls, *args, **kwargs):
        args, kwargs, spec = cls._split(args, kwargs)
        return super().dist(args, noise_type=type(spec), **kwargs)

    #: the count model's parameters, before ``noise, lower, upper`` (set by each subclass,
    #: with ``_check_params`` taking them in this order)
    _params: tuple[str, ...] = ()

    @classmethod
    def _split(cls, args, kwargs):
        names = (*cls._params, "noise", "lower", "upper")
        vals = dict(zip(names, args, strict=False))
        for k in names:
            if k in kwargs:
                if k in vals:
                    raise TypeError(f"{cls.__name__} got multiple values for `{k}`")
                vals[k] = kwargs.pop(k)
        check_required(**{k: vals.get(k) for k in (*cls._params, "noise")})
        spec = _validate_common(vals["noise"], vals.get("lower"), vals.get("upper"))
        model = [vals[k] for k in cls._params]
        cls._check_params(*model)
        lower, upper = _bound(vals.get("lower"), -np.inf), _bound(vals.get("upper"), np.inf)
        params = dict(zip(cls._params, model, strict=True))
        params.update(noise=spec.param, lower=lower, upper=upper)
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        return [*model, spec.param, lower, upper], kwargs, spec


class NoisyBinomial(_NoisyCount):
    r"""A count of ones among :math:`n` records, released with any DP noise, possibly clamped.

    The data holder counts :math:`s \sim \mathrm{Binomial}(n, p)` and releases
    :math:`z = \mathrm{clamp}(s + N, L, U)` where :math:`N` is the noise of a spec from
    :mod:`pymc_dpnoise.noise`: the discrete Gaussian of OpenDP's and Tumult's counts and of the
    2020 Census noisy measurements, the discrete Laplace (OpenDP, Tumult, SmartNoise), the
    rounded Laplace of Google's DP library, or the continuous Laplace / Gaussian.  The clamp is
    post-processing (``lower=0`` alone is OpenDP's saturating cast of an unsigned count); the
    atoms at the bounds carry the clamped mass.  The likelihood sums the latent count out
    exactly,

    .. math::

        P(z \mid p) = \sum_{s=0}^{n} \binom{n}{s} p^s (1-p)^{n-s}\, P(N = z - s)
        \quad (L < z < U), \qquad P(z = L) = P(s + N \le L), \quad P(z = U) = P(s + N \ge U),

    in closed form for the Laplace kinds (exponential tilting) and over a window of
    :math:`O(\sigma)` terms that provably holds all but :math:`10^{-17}` of the mass for the
    Gaussian kinds, so the cost per release does not grow with :math:`n`
    (:mod:`pymc_dpnoise.math.noisy_counts`).

    ========  =================================================================================
    Support   integers (discrete noise) or reals (continuous noise), within ``[lower, upper]``
    Mean      :math:`n p` (no clamp)
    Variance  :math:`n p (1 - p) + \operatorname{Var} N` (no clamp)
    ========  =================================================================================

    Parameters
    ----------
    n : tensor_like of int
        Number of records behind each count (data), a non-negative integer.
    p : tensor_like of float
        Probability that a record counts, in [0, 1].
    noise : pymc_dpnoise.noise.Noise
        The noise the release added (its parameter may be an array: one per release).
    lower, upper : tensor_like, optional
        The release's clamp (integers for the integer kinds); ``None`` for none.

    Examples
    --------
    An OpenDP-style release: counts of three regions with discrete Gaussian noise at
    :math:`\rho = 0.5` per count, censored at 0 by an unsigned cast.

    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> from pymc_dpnoise import noise
    >>> rng = np.random.default_rng(3)
    >>> n = np.array([40, 300, 1200])
    >>> spec = noise.DiscreteGaussian.from_rho(0.5)
    >>> released = np.maximum(spec.release(rng.binomial(n, 0.2), rng), 0)
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1.0, 1.0)
    ...     y = pmd.NoisyBinomial("y", n=n, p=p, noise=spec, lower=0, observed=released)
    ...     idata = pm.sample(100, tune=100, chains=1, progressbar=False, random_seed=1,
    ...                       compute_convergence_checks=False)
    >>> lo, hi = np.quantile(idata.posterior["p"], [0.005, 0.995])
    >>> bool(lo < 0.2 < hi)
    True
    """

    rv_type = NoisyBinomialRV
    rv_op = NoisyBinomialRV.rv_op
    icdf = _refuse("NoisyBinomial", "icdf", "the CDF has no closed-form inverse")

    _params = ("n", "p")

    @staticmethod
    def _check_params(n, p):
        _check_count("n", n)
        _check_probability("p", p)


class NoisyPoisson(_NoisyCount):
    r"""A Poisson total released with any DP noise, possibly clamped (exact likelihood).

    :math:`z = \mathrm{clamp}(s + N, L, U)`, :math:`s \sim \mathrm{Poisson}(\mu)`, with the
    noise spec and clamp of :class:`NoisyBinomial` (see there for the likelihood and the
    supported releases).

    ========  =================================================================================
    Support   integers (discrete noise) or reals (continuous noise), within ``[lower, upper]``
    Mean      :math:`\mu` (no clamp)
    Variance  :math:`\mu + \operatorname{Var} N` (no clamp)
    ========  =================================================================================

    Parameters
    ----------
    mu : tensor_like of float
        Poisson rate of the total, >= 0.
    noise : pymc_dpnoise.noise.Noise
        The noise the release added.
    lower, upper : tensor_like, optional
        The release's clamp; ``None`` for none.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> from pymc_dpnoise import noise
    >>> spec = noise.RoundedLaplace.from_epsilon(1.0)  # python-dp's Count
    >>> with pm.Model() as model:
    ...     mu = pm.Gamma("mu", 2.0, 0.05)
    ...     y = pmd.NoisyPoisson("y", mu=mu, noise=spec, observed=[31, 44, 38])
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    rv_type = NoisyPoissonRV
    rv_op = NoisyPoissonRV.rv_op
    icdf = _refuse("NoisyPoisson", "icdf", "the CDF has no closed-form inverse")

    _params = ("mu",)

    @staticmethod
    def _check_params(mu):
        _check_nonnegative("mu", mu)


def noise_of(rv):
    """The noise type (a subclass of :class:`pymc_dpnoise.noise.Noise`) of a ``NoisyBinomial`` /
    ``NoisyPoisson`` variable."""
    op = getattr(getattr(rv, "owner", None), "op", None)
    if not isinstance(op, _NoisyCountRV):
        raise TypeError("not a NoisyBinomial / NoisyPoisson variable")
    return op.noise_type
