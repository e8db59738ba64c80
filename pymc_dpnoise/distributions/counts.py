"""Exact noise-aware distributions of Laplace-noised counts (binomial and Poisson sums)."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.tensor.random.basic import binomial, poisson

from .._validation import (
    check_finite,
    check_positive,
    check_required,
    check_shapes,
    constant_value,
)
from ..math import noisy_counts as ncm
from ._common import (
    _NO_ICDF,
    _all_finite,
    _cdf_of_value,
    _check_value_batch,
    _finite_reports,
    _floatx_out,
    _ninf_where_not,
    _NoImputeContinuous,
    _plus_laplace,
    _refuse,
    _rv_inputs,
    _rv_node,
    _to_floatx,
)

#: largest number of records: integers above 2^53 are not exact in double precision
MAX_N = float(2**53)

__all__ = ["ClampedLaplaceNoisyBinomial", "LaplaceNoisyBinomial", "LaplaceNoisyPoisson"]


# The Laplace case of the noisy-count likelihoods (pymc_dpnoise.math.noisy_counts, which
# evaluates the closed forms of pymc_dpnoise.math.counts and handles p in {0, 1} and mu = 0
# exactly): one code path for LaplaceNoisyBinomial / LaplaceNoisyPoisson and
# NoisyBinomial / NoisyPoisson with ``noise=Laplace(sensitivity / epsilon)``.


def _binomial_logp(value, n, p, epsilon, sensitivity):
    return ncm.noisy_binomial_logp(value, n, p, "laplace", sensitivity / epsilon)


def _binomial_log_cdfs(value, n, p, epsilon, sensitivity):
    return ncm.noisy_binomial_log_cdfs(value, n, p, "laplace", sensitivity / epsilon)


def _clamped_binomial_logp(value, n, p, epsilon, sensitivity):
    return ncm.noisy_binomial_logp(value, n, p, "laplace", sensitivity / epsilon, 0.0, n)


def _clamped_binomial_log_cdfs(value, n, p, epsilon, sensitivity):
    return ncm.noisy_binomial_log_cdfs(value, n, p, "laplace", sensitivity / epsilon, 0.0, n)


def _poisson_logp(value, mu, epsilon, sensitivity):
    return ncm.noisy_poisson_logp(value, mu, "laplace", sensitivity / epsilon)


def _poisson_log_cdfs(value, mu, epsilon, sensitivity):
    return ncm.noisy_poisson_log_cdfs(value, mu, "laplace", sensitivity / epsilon)


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


def _check_batch_of(value, **params):
    _check_value_batch(value, 0, **{k: (v, 0) for k, v in params.items()})


def _check_nonnegative(name, value):
    _check_constant(name, value, lambda v: v < 0, ">= 0")


# --------------------------------------------------------------------------------------------
# Binomial counts
# --------------------------------------------------------------------------------------------


class LaplaceNoisyBinomialRV(SymbolicRandomVariable):
    """Draws: s ~ Binomial(n, p), released as s + Laplace(sensitivity/epsilon)."""

    name = "laplace_noisy_binomial"
    extended_signature = "[rng],[size],(),(),(),()->[rng],()"
    _print_name = ("LaplaceNoisyBinomial", "\\operatorname{LapNoisyBinomial}")
    clamp = False

    @classmethod
    def rv_op(cls, n, p, epsilon, sensitivity, *, size=None, rng=None):
        size, rng, n, p, epsilon, sensitivity = _rv_inputs(
            cls, size, rng, n, p, epsilon, sensitivity
        )
        next_rng, s = binomial(
            pt.cast(pt.round(n), "int64"), p, size=size, rng=rng, return_next_rng=True
        )
        final_rng, y = _plus_laplace(pt.cast(s, "float64"), sensitivity / epsilon, size, next_rng)
        if cls.clamp:
            y = pt.clip(y, 0.0, n)
        return _rv_node(cls, rng, size, [n, p, epsilon, sensitivity], final_rng, _to_floatx(y))


class ClampedLaplaceNoisyBinomialRV(LaplaceNoisyBinomialRV):
    """Draws: clip(s + Laplace(sensitivity/epsilon), 0, n), s ~ Binomial(n, p)."""

    name = "clamped_laplace_noisy_binomial"
    _print_name = ("ClampedLaplaceNoisyBinomial", "\\operatorname{ClampedLapNoisyBinomial}")
    clamp = True


def _binomial_methods(logp_kernel, log_cdfs, clamp):
    """``support_point``, ``logp``, ``logcdf`` and ``logccdf`` of the noisy binomial (clamped
    to [0, n] or not) from its log density ``logp_kernel`` and log CDFs ``log_cdfs``."""

    def support_point(rv, size, n, p, epsilon, sensitivity):
        mean = n * p
        if clamp:  # the atoms are valid starting points too, but the mean is inside for 0 < p < 1
            mean = pt.clip(mean, 0.0, n)
        point, *_ = pt.broadcast_arrays(mean, epsilon, sensitivity)
        if not rv_size_is_none(size):
            point = pt.full(size, point)
        return point

    @_floatx_out
    def logp(value, n, p, epsilon, sensitivity):
        _check_batch_of(value, n=n, p=p, epsilon=epsilon, sensitivity=sensitivity)
        finite, safe = _finite_reports(value)  # a NaN/inf report is outside the support
        res = logp_kernel(safe, n, p, epsilon, sensitivity)
        res = _ninf_where_not(finite, res)
        return _binomial_checks(res, n, p, epsilon, sensitivity)

    @_floatx_out
    def logcdf(value, n, p, epsilon, sensitivity):
        return _count_cdf(log_cdfs, value, n, p, epsilon, sensitivity)

    @_floatx_out
    def logccdf(value, n, p, epsilon, sensitivity):
        return _count_cdf(log_cdfs, value, n, p, epsilon, sensitivity, tail=True)

    return support_point, logp, logcdf, logccdf


def _validate_binomial(n, p, epsilon, sensitivity, kwargs):
    _check_count("n", n)
    _check_probability("p", p)
    check_positive("epsilon", epsilon)
    check_positive("sensitivity", sensitivity)
    params = dict(n=n, p=p, epsilon=epsilon, sensitivity=sensitivity)
    check_shapes(params, kwargs.get("shape"), kwargs.get("size"))


def _binomial_checks(res, n, p, epsilon, sensitivity):
    return check_parameters(
        res,
        *_all_finite(n, p, epsilon, sensitivity),
        n >= 0,
        n <= MAX_N,
        pt.eq(n, pt.floor(n)),
        p >= 0,
        p <= 1,
        epsilon > 0,
        sensitivity > 0,
        msg="finite parameters, n integer in [0, 2^53], 0 <= p <= 1, epsilon > 0, sensitivity > 0",
    )


class LaplaceNoisyBinomial(_NoImputeContinuous):
    r"""A count of ones among :math:`n` records, released with Laplace noise (exact likelihood).

    The data holder counts :math:`s = \sum_i x_i`, :math:`x_i \sim \mathrm{Bernoulli}(p)`, so
    :math:`s \sim \mathrm{Binomial}(n, p)`, and releases :math:`y = s + \mathrm{Laplace}(0, b)`,
    :math:`b = \Delta/\epsilon` (Bernstein & Sheldon 2018, Sec. 3.1; :math:`\Delta = 1` when
    one person contributes one record).  The likelihood marginalises :math:`s` exactly,

    .. math::

        p(y \mid p) = \sum_{s=0}^{n} \binom{n}{s} p^s (1-p)^{n-s}\, \frac{1}{2b} e^{-|y - s|/b},

    in closed form: with :math:`k = \lfloor y \rfloor`, each half of the sum is an exponentially
    tilted binomial, i.e. a binomial CDF at :math:`\operatorname{logit} p \pm 1/b` (see
    :mod:`pymc_dpnoise.math.counts` for the derivation and the overflow-free form).  The cost
    does not grow with :math:`n` (continued fractions; a few µs per value at :math:`n = 10^7`).

    With ``clamp=True`` the release is :math:`z = \mathrm{clip}(y, 0, n)` (as posterior-update
    releases do); :math:`z = 0` and :math:`z = n` then have positive probability

    .. math::

        P(z = 0) = \tfrac12 (1 - p + p e^{-1/b})^n, \qquad
        P(z = n) = \tfrac12 (p + (1 - p) e^{-1/b})^n,

    and the log-likelihood of an observed :math:`z` is the log *mass* at the atoms and the log
    *density* strictly inside :math:`(0, n)`.  This mixes a density and masses, which is fine
    for inference: the observed values are fixed and each term is the likelihood with respect
    to the same dominating measure (Lebesgue plus the two atoms).  Values outside
    :math:`[0, n]` have log-likelihood :math:`-\infty`.

    ========  ===========================================================================
    Support   :math:`y \in \mathbb{R}` (``clamp=True``: :math:`z \in [0, n]`)
    Mean      :math:`n p` (``clamp=False``)
    Variance  :math:`n p (1 - p) + 2 b^2` (``clamp=False``)
    ========  ===========================================================================

    Parameters
    ----------
    n : tensor_like of int
        Number of records in each count (data, not learned), a non-negative integer.
    p : tensor_like of float
        Success probability, in [0, 1].
    epsilon : tensor_like of float
        Privacy budget of each release, > 0.
    sensitivity : tensor_like of float, default 1.0
        L1 sensitivity of the count, > 0 (the Laplace scale is ``sensitivity / epsilon``).
    clamp : bool, default False
        Whether the released value was clipped to ``[0, n]`` after the noise.

    All parameters broadcast: a vector of noisy counts from many regions (each with its own
    ``n``, ``p`` and budget) is one variable.  Random draws run the release mechanism, so prior
    and posterior predictive draws are noisy counts.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(1)
    >>> n = np.array([120, 80, 400])
    >>> released = rng.binomial(n, 0.3) + rng.laplace(0.0, 1.0 / 0.5, size=3)
    >>> with pm.Model(coords={"region": ["a", "b", "c"]}) as model:
    ...     logit_p = pm.Normal("logit_p", 0.0, 1.5, dims="region")
    ...     y = pmd.LaplaceNoisyBinomial(
    ...         "y", n=n, p=pm.math.sigmoid(logit_p), epsilon=0.5, observed=released, dims="region"
    ...     )
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    rv_type = LaplaceNoisyBinomialRV
    rv_op = LaplaceNoisyBinomialRV.rv_op

    @classmethod
    def dist(cls, n, p, epsilon, sensitivity=1.0, clamp=False, **kwargs):
        if not isinstance(clamp, bool | np.bool_):
            raise TypeError(f"`clamp` must be True or False (a Python bool); got {clamp!r}")
        if clamp:
            return ClampedLaplaceNoisyBinomial.dist(n, p, epsilon, sensitivity, **kwargs)
        _validate_binomial(n, p, epsilon, sensitivity, kwargs)
        return super().dist([n, p, epsilon, sensitivity], **kwargs)

    support_point, logp, logcdf, logccdf = _binomial_methods(
        _binomial_logp, _binomial_log_cdfs, clamp=False
    )

    icdf = _refuse("LaplaceNoisyBinomial", "icdf", _NO_ICDF)


class ClampedLaplaceNoisyBinomial(_NoImputeContinuous):
    """``LaplaceNoisyBinomial(..., clamp=True)``: the release clipped to [0, n] after the noise.

    Usually created through :class:`LaplaceNoisyBinomial` with ``clamp=True``; see its
    docstring for the atoms and the mixed density/mass likelihood.
    """

    rv_type = ClampedLaplaceNoisyBinomialRV
    rv_op = ClampedLaplaceNoisyBinomialRV.rv_op

    @classmethod
    def dist(cls, n, p, epsilon, sensitivity=1.0, **kwargs):
        _validate_binomial(n, p, epsilon, sensitivity, kwargs)
        return super().dist([n, p, epsilon, sensitivity], **kwargs)

    support_point, logp, logcdf, logccdf = _binomial_methods(
        _clamped_binomial_logp, _clamped_binomial_log_cdfs, clamp=True
    )

    icdf = _refuse("ClampedLaplaceNoisyBinomial", "icdf", _NO_ICDF)


def _count_cdf(log_cdfs, value, *params, tail=False):
    """Log CDF / survival function of a noisy count, with the parameter checks of its logp."""
    res = _cdf_of_value(value, lambda v: log_cdfs(v, *params)[int(tail)], tail=tail)
    if len(params) == 4:
        return _binomial_checks(res, *params)
    return _poisson_checks(res, *params)


# --------------------------------------------------------------------------------------------
# Poisson counts
# --------------------------------------------------------------------------------------------


class LaplaceNoisyPoissonRV(SymbolicRandomVariable):
    """Draws: s ~ Poisson(mu), released as s + Laplace(sensitivity/epsilon)."""

    name = "laplace_noisy_poisson"
    extended_signature = "[rng],[size],(),(),()->[rng],()"
    _print_name = ("LaplaceNoisyPoisson", "\\operatorname{LapNoisyPoisson}")

    @classmethod
    def rv_op(cls, mu, epsilon, sensitivity, *, size=None, rng=None):
        size, rng, mu, epsilon, sensitivity = _rv_inputs(cls, size, rng, mu, epsilon, sensitivity)
        next_rng, s = poisson(mu, size=size, rng=rng, return_next_rng=True)
        final_rng, y = _plus_laplace(pt.cast(s, "float64"), sensitivity / epsilon, size, next_rng)
        return _rv_node(cls, rng, size, [mu, epsilon, sensitivity], final_rng, _to_floatx(y))


class LaplaceNoisyPoisson(_NoImputeContinuous):
    r"""A Poisson total released with Laplace noise (exact likelihood).

    The data holder releases :math:`y = s + \mathrm{Laplace}(0, b)`, :math:`b = \Delta/\epsilon`,
    of a total :math:`s \sim \mathrm{Poisson}(\mu)` (e.g. the sum of Poisson counts over a fixed
    population, :math:`\mu = \sum_i \mu_i`).  The likelihood

    .. math::

        p(y \mid \mu) = \sum_{s \ge 0} e^{-\mu}\frac{\mu^s}{s!}\,\frac{1}{2b} e^{-|y - s|/b}

    is evaluated in closed form: the two halves of the sum are tilted Poisson pmfs
    (:math:`\mu e^{\pm 1/b}`), i.e. Poisson CDFs, computed as CDF-to-pmf ratios in log space
    (:mod:`pymc_dpnoise.math.counts`).

    The sensitivity :math:`\Delta` is the bound on one record's count that the data holder
    enforced (records clipped to it, :func:`pymc_dpnoise.mechanisms.release_poisson_count`).
    The likelihood treats the total as Poisson, which is exact when no record exceeded the
    bound; if clipping binds, the released total is that of the clipped counts.

    ========  ===========================================================================
    Support   :math:`y \in \mathbb{R}`
    Mean      :math:`\mu`
    Variance  :math:`\mu + 2 b^2`
    ========  ===========================================================================

    Parameters
    ----------
    mu : tensor_like of float
        Poisson rate of the total, >= 0.
    epsilon : tensor_like of float
        Privacy budget of each release, > 0.
    sensitivity : tensor_like of float
        L1 sensitivity of the total (the per-record bound), > 0.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(2)
    >>> released = rng.poisson(50.0, size=4) + rng.laplace(0.0, 3.0 / 1.0, size=4)
    >>> with pm.Model() as model:
    ...     mu = pm.Gamma("mu", 2.0, 0.05)
    ...     y = pmd.LaplaceNoisyPoisson("y", mu=mu, epsilon=1.0, sensitivity=3.0, observed=released)
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    rv_type = LaplaceNoisyPoissonRV
    rv_op = LaplaceNoisyPoissonRV.rv_op

    @classmethod
    def dist(cls, mu, epsilon, sensitivity, **kwargs):
        _check_nonnegative("mu", mu)
        check_positive("epsilon", epsilon)
        check_positive("sensitivity", sensitivity)
        params = dict(mu=mu, epsilon=epsilon, sensitivity=sensitivity)
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        return super().dist([mu, epsilon, sensitivity], **kwargs)

    def support_point(rv, size, mu, epsilon, sensitivity):
        point, *_ = pt.broadcast_arrays(mu, epsilon, sensitivity)
        if not rv_size_is_none(size):
            point = pt.full(size, point)
        return point

    @_floatx_out
    def logp(value, mu, epsilon, sensitivity):
        _check_batch_of(value, mu=mu, epsilon=epsilon, sensitivity=sensitivity)
        finite, safe = _finite_reports(value)
        res = _poisson_logp(safe, mu, epsilon, sensitivity)
        res = _ninf_where_not(finite, res)
        return _poisson_checks(res, mu, epsilon, sensitivity)

    @_floatx_out
    def logcdf(value, mu, epsilon, sensitivity):
        return _count_cdf(_poisson_log_cdfs, value, mu, epsilon, sensitivity)

    @_floatx_out
    def logccdf(value, mu, epsilon, sensitivity):
        return _count_cdf(_poisson_log_cdfs, value, mu, epsilon, sensitivity, tail=True)

    icdf = _refuse("LaplaceNoisyPoisson", "icdf", _NO_ICDF)


def _poisson_checks(res, mu, epsilon, sensitivity):
    return check_parameters(
        res,
        *_all_finite(mu, epsilon, sensitivity),
        mu >= 0,
        epsilon > 0,
        sensitivity > 0,
        msg="finite parameters, mu >= 0, epsilon > 0, sensitivity > 0",
    )
