"""Counts released with any noise of :mod:`pymc_dpnoise.noise`, clamped or not (exact likelihoods).

``NoisyBinomial`` and ``NoisyPoisson`` dispatch on the noise spec to one class per noise kind
(the graph of the likelihood and of the draws differs by kind; the integer kinds are
:class:`~pymc.distributions.distribution.Discrete` with integer-valued draws, in float64:
``REPORT_DTYPE`` of :mod:`pymc_dpnoise.distributions._common`).  The math is
:mod:`pymc_dpnoise.math.noisy_counts`.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Continuous, Discrete, SymbolicRandomVariable
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.tensor.random.basic import binomial, exponential, laplace, normal, poisson, uniform

from .. import noise as noise_mod
from .._validation import check_required, check_shapes, constant_value
from ..math import noisy_counts as ncm
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
from .counts import MAX_N, _check_count, _check_nonnegative, _check_probability

__all__ = ["NoisyBinomial", "NoisyPoisson"]

#: proposals per discrete-Gaussian draw in the symbolic sampler (module docstring of
#: :mod:`pymc_dpnoise.noise`): the acceptance probability of Canonne, Kamath & Steinke's
#: sampler is above 0.44 for every sigma in [1e-3, 1e4] (lowest near sigma = 1), so no
#: proposal is accepted with probability below 0.56^96 < 1e-24 per draw
#: (tests/distributions/test_noisy_counts.py checks the bound); the NumPy mechanism loops until acceptance.
DG_PROPOSALS = 96
_HUGE = np.float64(1e300)


# --------------------------------------------------------------------------------------------
# Symbolic noise draws (every backend)
# --------------------------------------------------------------------------------------------


def _dl_draw(scale, size, rng):
    """Discrete Laplace: floor(E1) - floor(E2), E ~ Exponential(scale) (each floor is
    geometric with P(g) = (1 - a) a^g, a = e^{-1/scale})."""
    rng, e1 = exponential(scale, size=size, rng=rng, return_next_rng=True)
    rng, e2 = exponential(scale, size=size, rng=rng, return_next_rng=True)
    return rng, pt.floor(e1) - pt.floor(e2)


def _noise_draw(kind, param, size, rng):
    if kind == "laplace":
        return laplace(0.0, param, size=size, rng=rng, return_next_rng=True)
    if kind == "gaussian":
        return normal(0.0, param, size=size, rng=rng, return_next_rng=True)
    if kind == "rounded_laplace":
        rng, x = laplace(0.0, param, size=size, rng=rng, return_next_rng=True)
        return rng, pt.round(x)
    if kind == "discrete_laplace":
        return _dl_draw(param, size, rng)
    # discrete Gaussian: CKS rejection from DL(t), t = floor(sigma) + 1, DG_PROPOSALS at once
    sigma = pt.broadcast_to(param, size)
    t = pt.floor(sigma) + 1.0
    k_size = pt.concatenate([pt.as_tensor(size, dtype="int64"), [DG_PROPOSALS]])
    rng, y = _dl_draw(t[..., None], k_size, rng)
    rng, u = uniform(0.0, 1.0, size=k_size, rng=rng, return_next_rng=True)
    s = sigma[..., None]
    accept = u < pt.exp(-((pt.abs(y) - s**2 / t[..., None]) ** 2) / (2.0 * s**2))
    first = pt.argmax(accept, axis=-1, keepdims=True)
    return rng, pt.take_along_axis(y, first, axis=-1)[..., 0]


def _clamp(y, lower, upper):
    return pt.clip(y, lower, upper)


def _make_rv(family, kind):
    discrete = kind in ncm.DISCRETE
    nparams = 5 if family == "binomial" else 4
    sig = ",".join(["()"] * nparams)
    title = "NoisyBinomial" if family == "binomial" else "NoisyPoisson"

    class _RV(SymbolicRandomVariable):
        name = f"noisy_{family}_{kind}"
        extended_signature = f"[rng],[size],{sig}->[rng],()"
        _print_name = (title, f"\\operatorname{{{title}}}")

        @classmethod
        def rv_op(cls, *params, size=None, rng=None):
            size, rng, *params = _rv_inputs(cls, size, rng, *params)
            if family == "binomial":
                n, p, param, lower, upper = params
                rng_next, s = binomial(
                    pt.cast(pt.round(n), "int64"), p, size=size, rng=rng, return_next_rng=True
                )
            else:
                mu, param, lower, upper = params
                rng_next, s = poisson(mu, size=size, rng=rng, return_next_rng=True)
            final_rng, noise = _noise_draw(kind, param, size, rng_next)
            y = _clamp(pt.cast(s, "float64") + noise, lower, upper)
            y = pt.cast(y, REPORT_DTYPE) if discrete else _to_floatx(y)
            return _rv_node(cls, rng, size, params, final_rng, y)

    _RV.__name__ = _RV.__qualname__ = f"{title}{kind.title().replace('_', '')}RV"
    return _RV


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


def _check_bounds(lower, upper, discrete):
    _check_bound("lower", lower, discrete)
    _check_bound("upper", upper, discrete)
    lo = constant_value(lower) if lower is not None else None
    hi = constant_value(upper) if upper is not None else None
    if lo is not None and hi is not None and np.any(lo >= hi):
        raise ValueError(f"`lower` must be below `upper`; got lower={lo}, upper={hi}")


def _bound(value, default):
    return default if value is None else value


def _clamp_args(lower, upper):
    """``(lower, upper)`` for the math: None where the bound is absent (constant +-inf)."""
    lo = constant_value(lower)
    hi = constant_value(upper)
    lo_none = lo is not None and np.all(np.isneginf(lo))
    hi_none = hi is not None and np.all(np.isposinf(hi))
    return (None if lo_none else lower), (None if hi_none else upper)


def _check_value(value, discrete):
    value = pt.as_tensor_variable(value)
    if value.dtype.startswith(("int", "uint")):
        return None, pt.cast(value, "float64")
    finite, safe = _finite_reports(value)
    if discrete:
        integer = pt.eq(safe, pt.round(safe))
        finite = integer if finite is None else finite & integer
    return finite, safe


# --------------------------------------------------------------------------------------------
# Classes
# --------------------------------------------------------------------------------------------


def _support_point(center, lower, upper, size, discrete, *others):
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
        pt.all(lower < upper),
        msg="finite parameters, n integer in [0, 2^53], 0 <= p <= 1, noise parameter > 0, "
        "lower < upper",
    )


def _poisson_checks(res, mu, param, lower, upper):
    return check_parameters(
        res,
        *_all_finite(mu, param),
        mu >= 0,
        param > 0,
        pt.all(lower < upper),
        msg="finite parameters, mu >= 0, noise parameter > 0, lower < upper",
    )


def _kind_class(family, kind):
    discrete = kind in ncm.DISCRETE
    base = Discrete if discrete else Continuous
    rv = _make_rv(family, kind)
    title = "NoisyBinomial" if family == "binomial" else "NoisyPoisson"
    dtype_cast = (lambda x: x) if discrete else _to_floatx

    if family == "binomial":

        def logp(value, n, p, param, lower, upper):
            _check_value_batch(value, 0, **{k: (v, 0) for k, v in dict(n=n, p=p).items()})
            finite, safe = _check_value(value, discrete)
            lo, hi = _clamp_args(lower, upper)
            res = ncm.noisy_binomial_logp(safe, n, p, kind, param, lo, hi)
            res = _ninf_where_not(finite, res)
            return dtype_cast(_binomial_checks(res, n, p, param, lower, upper))

        def _cdfs(value, n, p, param, lower, upper, tail):
            lo, hi = _clamp_args(lower, upper)
            res = _cdf_of_value(
                value,
                lambda v: ncm.noisy_binomial_log_cdfs(v, n, p, kind, param, lo, hi)[int(tail)],
                tail=tail,
            )
            return dtype_cast(_binomial_checks(res, n, p, param, lower, upper))

        def support_point(rv, size, n, p, param, lower, upper):
            return _support_point(n * p, lower, upper, size, discrete, param)

    else:

        def logp(value, mu, param, lower, upper):
            _check_value_batch(value, 0, mu=(mu, 0))
            finite, safe = _check_value(value, discrete)
            lo, hi = _clamp_args(lower, upper)
            res = ncm.noisy_poisson_logp(safe, mu, kind, param, lo, hi)
            res = _ninf_where_not(finite, res)
            return dtype_cast(_poisson_checks(res, mu, param, lower, upper))

        def _cdfs(value, mu, param, lower, upper, tail):
            lo, hi = _clamp_args(lower, upper)
            res = _cdf_of_value(
                value,
                lambda v: ncm.noisy_poisson_log_cdfs(v, mu, kind, param, lo, hi)[int(tail)],
                tail=tail,
            )
            return dtype_cast(_poisson_checks(res, mu, param, lower, upper))

        def support_point(rv, size, mu, param, lower, upper):
            return _support_point(mu, lower, upper, size, discrete, param)

    def logcdf(value, *params):
        return _cdfs(value, *params, tail=False)

    def logccdf(value, *params):
        return _cdfs(value, *params, tail=True)

    def dist(cls, *params, **kwargs):
        return base.dist.__func__(cls, list(params), **kwargs)

    body = dict(
        dist=classmethod(dist),
        rv_type=rv,
        rv_op=rv.rv_op,
        logp=logp,
        logcdf=logcdf,
        logccdf=logccdf,
        support_point=support_point,
        icdf=_refuse(title, "icdf", "the CDF has no closed-form inverse"),
        __doc__=f"{title} with {kind.replace('_', ' ')} noise (created by {title}).",
        _family=family,
        _kind=kind,
    )
    name = f"{title}{kind.title().replace('_', '')}"
    cls = type(name, (base,), body)
    cls.__module__ = __name__
    return cls


_CLASSES = {
    (family, kind): _kind_class(family, kind)
    for family in ("binomial", "poisson")
    for kind in ncm.KINDS
}


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


class _NoisyCount:
    """Dispatch on the noise spec (see :class:`NoisyBinomial`)."""

    _family: str

    def __new__(cls, name, *args, observed=None, **kwargs):
        args, kwargs, spec = cls._split(args, kwargs)
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
            _check_inside_clamp(name, obs, *args[-2:])
        target = _CLASSES[(cls._family, spec.kind)]
        return target(name, *args, observed=observed, **kwargs)

    @classmethod
    def dist(cls, *args, **kwargs):
        args, kwargs, spec = cls._split(args, kwargs)
        return _CLASSES[(cls._family, spec.kind)].dist(*args, **kwargs)


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

    _family = "binomial"

    @staticmethod
    def _split(args, kwargs):
        names = ("n", "p", "noise", "lower", "upper")
        vals = dict(zip(names, args, strict=False))
        for k in names:
            if k in kwargs:
                if k in vals:
                    raise TypeError(f"NoisyBinomial got multiple values for `{k}`")
                vals[k] = kwargs.pop(k)
        check_required(n=vals.get("n"), p=vals.get("p"), noise=vals.get("noise"))
        spec = _validate_common(vals["noise"], vals.get("lower"), vals.get("upper"))
        _check_count("n", vals["n"])
        _check_probability("p", vals["p"])
        lower, upper = _bound(vals.get("lower"), -np.inf), _bound(vals.get("upper"), np.inf)
        params = dict(n=vals["n"], p=vals["p"], noise=spec.param, lower=lower, upper=upper)
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        return [vals["n"], vals["p"], spec.param, lower, upper], kwargs, spec


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

    _family = "poisson"

    @staticmethod
    def _split(args, kwargs):
        names = ("mu", "noise", "lower", "upper")
        vals = dict(zip(names, args, strict=False))
        for k in names:
            if k in kwargs:
                if k in vals:
                    raise TypeError(f"NoisyPoisson got multiple values for `{k}`")
                vals[k] = kwargs.pop(k)
        check_required(mu=vals.get("mu"), noise=vals.get("noise"))
        spec = _validate_common(vals["noise"], vals.get("lower"), vals.get("upper"))
        _check_nonnegative("mu", vals["mu"])
        lower, upper = _bound(vals.get("lower"), -np.inf), _bound(vals.get("upper"), np.inf)
        params = dict(mu=vals["mu"], noise=spec.param, lower=lower, upper=upper)
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        return [vals["mu"], spec.param, lower, upper], kwargs, spec


def noise_of(rv):
    """The noise kind (``str``) of a ``NoisyBinomial`` / ``NoisyPoisson`` variable."""
    for (_, kind), cls in _CLASSES.items():
        if isinstance(rv.owner.op, cls.rv_type):
            return kind
    raise TypeError("not a NoisyBinomial / NoisyPoisson variable")
