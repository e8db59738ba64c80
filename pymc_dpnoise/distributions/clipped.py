"""Clipped Gaussian and clipped exponential reports under the Laplace mechanism (LDP paper,
Supplement 10), per report and as binned summaries (design: :mod:`pymc_dpnoise.distributions`)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Continuous, SymbolicRandomVariable
from pymc.distributions.shape_utils import rv_size_is_none
from pymc.pytensorf import normalize_rng_param
from pytensor.tensor.random.basic import exponential, normal
from pytensor.tensor.random.utils import normalize_size_param

from .. import math as dpmath
from ..math._op_support import lift_grouped
from ..validation import check_finite, check_less, check_positive, check_shapes
from ._common import (
    _NO_ICDF,
    _all_finite,
    _cdf_of_value,
    _check_value_batch,
    _f64,
    _finite_reports,
    _floatx_out,
    _ninf_where_not,
    _NoImputeContinuous,
    _plus_laplace,
    _refuse,
    _refuse_cdfs,
    _rv_inputs,
    _rv_node,
    _safe_params,
    _to_floatx,
)

__all__ = [
    "LaplacePerturbedClippedExponential",
    "LaplacePerturbedClippedExponentialSummary",
    "LaplacePerturbedClippedNormal",
    "LaplacePerturbedClippedNormalSummary",
]

#: largest |bound - mu| / sigma and sigma epsilon / (upper - lower) the clipped-normal logp
#: accepts: their squares must not overflow (accuracy is audited up to 1e100)
MAX_STANDARDISED = np.float64(1e150)  # np.float64: pytensor would try float32 first


# --------------------------------------------------------------------------------------------
# Clipped Gaussian, Laplace-perturbed
# --------------------------------------------------------------------------------------------


class LaplacePerturbedClippedNormalRV(SymbolicRandomVariable):
    """Draws: x ~ Normal(mu, sigma), clipped to [lower, upper], plus Laplace((upper-lower)/epsilon)."""

    name = "laplace_perturbed_clipped_normal"
    extended_signature = "[rng],[size],(),(),(),(),()->[rng],()"
    _print_name = ("LaplacePerturbedClippedNormal", "\\operatorname{LPClippedNormal}")

    @classmethod
    def rv_op(cls, mu, sigma, lower, upper, epsilon, *, size=None, rng=None):
        size, rng, mu, sigma, lower, upper, epsilon = _rv_inputs(
            cls, size, rng, mu, sigma, lower, upper, epsilon
        )
        next_rng, x = normal(mu, sigma, size=size, rng=rng, return_next_rng=True)
        scale = (upper - lower) / epsilon
        final_rng, z = _plus_laplace(pt.clip(x, lower, upper), scale, size, next_rng)
        return _rv_node(
            cls, rng, size, [mu, sigma, lower, upper, epsilon], final_rng, _to_floatx(z)
        )


class LaplacePerturbedClippedNormal(_NoImputeContinuous):
    r"""Reports of a clipped Gaussian value released with the Laplace mechanism (local DP).

    Each person holds :math:`x \sim N(\mu, \sigma^2)`, clips it to :math:`[a, b]`
    (``lower``, ``upper``) and reports :math:`z = \mathrm{clip}(x, a, b) + \mathrm{Laplace}(0, s)`
    with :math:`s = (b - a)/\epsilon`: each report is ε-locally differentially private.
    The density marginalises the unknown :math:`x` in closed form (LDP paper, Supplement 10.1,
    eq. 28):

    .. math::

        p(z \mid \mu, \sigma) = \Phi(\alpha)\,\mathrm{Lap}(z; a, s)
          + \Phi(-\beta)\,\mathrm{Lap}(z; b, s)
          + \int_a^b \mathrm{Lap}(z; x, s)\, N(x; \mu, \sigma^2)\, dx,

    with :math:`\alpha = (a-\mu)/\sigma`, :math:`\beta = (b-\mu)/\sigma`; see
    :func:`pymc_dpnoise.math.clipped_normal_laplace_logp` for the overflow-free form used.

    All parameters broadcast against each other and against the reports (per-report ε for
    personalised budgets, per-group μ in hierarchical models).  Random draws run the
    mechanism, so prior and posterior predictive draws are privatised reports.

    ========  ==========================================================
    Support   :math:`z \in \mathbb{R}`
    Mean      :math:`E[\mathrm{clip}(x, a, b)]` (the noise has mean 0)
    Variance  :math:`\mathrm{Var}[\mathrm{clip}(x, a, b)] + 2 s^2`
    ========  ==========================================================

    Parameters
    ----------
    mu : tensor_like of float
        Mean of the clean values (before clipping).
    sigma : tensor_like of float
        Standard deviation of the clean values, > 0.
    lower, upper : tensor_like of float
        Clipping bounds, ``lower < upper``; fixed by the protocol, not learned.
    epsilon : tensor_like of float
        Privacy budget of each report, > 0.  A vector gives personalised budgets.

    Notes
    -----
    A posterior *mode* can sit on the boundary :math:`\sigma = 0`.  When the reports vary
    less than the Laplace noise alone would make them vary (roughly, a sample variance below
    the noise variance :math:`2 s^2`: a small ε, few reports, or clean values that barely
    vary), the data cannot tell a small σ from σ = 0 and the likelihood can be largest at
    σ = 0.  With a prior
    whose density is positive at 0 (``HalfNormal``, ``HalfCauchy``, ``Exponential``),
    ``pm.find_MAP`` then returns σ ≈ 0, and ``pymc_extras.fit_laplace``, which expands the
    log posterior around that mode, returns a meaningless (infinite or degenerate) spread
    for σ, although the posterior itself is proper and has its mass away from 0.  Sample the
    posterior with NUTS (``pm.sample``), which describes that mass as it is, or, if a point
    estimate is needed, give σ a prior that vanishes at 0 (e.g. ``pm.Gamma("sigma", 2, ...)``
    or a log-normal), which moves the mode into the interior.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(1.0, 2.0, size=500)
    >>> z = pmd.mechanisms.perturb_clipped(x, -5.0, 5.0, 2.0, rng)
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 5.0)
    ...     sigma = pm.Gamma("sigma", 2.0, 1.0)
    ...     obs = pmd.LaplacePerturbedClippedNormal(
    ...         "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=2.0, observed=z
    ...     )
    >>> float(pm.logp(pmd.LaplacePerturbedClippedNormal.dist(0.0, 1.0, -1.0, 1.0, 1.0), 0.0).eval()) < 0
    True
    """

    rv_type = LaplacePerturbedClippedNormalRV
    rv_op = LaplacePerturbedClippedNormalRV.rv_op

    @classmethod
    def dist(cls, mu, sigma, lower, upper, epsilon, **kwargs):
        check_finite("mu", mu)
        check_positive("sigma", sigma)
        check_positive("epsilon", epsilon)
        check_less("lower", lower, "upper", upper)
        params = dict(mu=mu, sigma=sigma, lower=lower, upper=upper, epsilon=epsilon)
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        return super().dist([mu, sigma, lower, upper, epsilon], **kwargs)

    def support_point(rv, size, mu, sigma, lower, upper, epsilon):
        point, *_ = pt.broadcast_arrays(pt.clip(mu, lower, upper), sigma, lower, upper, epsilon)
        if not rv_size_is_none(size):
            point = pt.full(size, point)
        return point

    @_floatx_out
    def logp(value, mu, sigma, lower, upper, epsilon):
        return _clipped_normal_guarded(value, mu, sigma, lower, upper, epsilon, "logp")

    @_floatx_out
    def logcdf(value, mu, sigma, lower, upper, epsilon):
        return _clipped_normal_guarded(value, mu, sigma, lower, upper, epsilon, "cdf")

    @_floatx_out
    def logccdf(value, mu, sigma, lower, upper, epsilon):
        return _clipped_normal_guarded(value, mu, sigma, lower, upper, epsilon, "ccdf")

    icdf = _refuse("LaplacePerturbedClippedNormal", "icdf", _NO_ICDF)


_CLIPPED_NORMAL_DOMAIN = (
    f"finite parameters, sigma > 0, epsilon > 0, upper > lower, "
    f"|bound - mu|/sigma and sigma*epsilon/(upper-lower) <= {MAX_STANDARDISED:g}, "
    f"epsilon >= {1 / MAX_STANDARDISED:g}"
)


def _clipped_normal_guarded(value, mu, sigma, lower, upper, epsilon, kind):
    """Log density (``kind="logp"``), log CDF (``"cdf"``) or log survival function (``"ccdf"``)."""
    params = dict(mu=mu, sigma=sigma, lower=lower, upper=upper, epsilon=epsilon)
    ok, safe_params = _clipped_normal_domain(mu, sigma, lower, upper, epsilon)
    return _guarded(
        value, params, ok, safe_params, kind, _CLIPPED_NORMAL_DOMAIN,
        dpmath.clipped_normal_laplace_logp, dpmath.clipped_normal_laplace_log_cdfs,
    )  # fmt: skip


def _guarded(value, params, ok, safe_params, kind, domain, logp, log_cdfs):
    """The clipped families' logp / logcdf / logccdf: the value's batch shape checked against
    ``params`` (by name), the kernel at the safe parameters, -inf outside ``domain``."""
    _check_value_batch(value, 0, **{k: (v, 0) for k, v in params.items()})
    if kind == "logp":
        finite, safe = _finite_reports(value)
        res = _ninf_where_not(finite, logp(safe, *safe_params))
    else:
        tail = kind == "ccdf"
        fn = partial(log_cdfs, tail=tail)
        res = _cdf_of_value(value, lambda v: fn(v, *safe_params), tail=tail)
    res = check_parameters(res, ok, msg=domain)
    # parameters given per group (mu=mu_g[group]): parameter-only terms once per group
    return lift_grouped(res)


def _clipped_normal_domain(mu, sigma, lower, upper, epsilon):
    """``(ok, safe parameters)`` of the clipped-normal logps (per report and summary).

    (bound - mu)/sigma is squared inside: beyond 1e150 it overflows (NaN), so such parameters
    are outside the domain (-inf), like non-finite ones; where refused, the log density is
    evaluated at harmless parameters, so that no NaN reaches a gradient.
    """
    ok = pt.and_(
        pt.all(_all_finite(mu, sigma, lower, upper, epsilon)),
        pt.all((sigma > 0) & (epsilon > 0) & (upper > lower)),
    )
    reach = pt.maximum(pt.abs(lower - mu), pt.abs(upper - mu)) / sigma
    kappa = sigma * epsilon / (upper - lower)  # sigma / noise scale, squared inside
    ok = pt.and_(ok, pt.all((reach <= MAX_STANDARDISED) & (kappa <= MAX_STANDARDISED)))
    # d s / d epsilon = -(b - a)/epsilon^2 must not overflow either
    ok = pt.and_(ok, pt.all(epsilon >= 1.0 / MAX_STANDARDISED))
    safe = _safe_params(
        ok,
        mu=(mu, 0.0),
        sigma=(sigma, 1.0),
        lower=(lower, -1.0),
        upper=(upper, 1.0),
        epsilon=(epsilon, 1.0),
    )
    return ok, safe


# --------------------------------------------------------------------------------------------
# Clipped exponential, Laplace-perturbed
# --------------------------------------------------------------------------------------------


class LaplacePerturbedClippedExponentialRV(SymbolicRandomVariable):
    """Draws: x ~ Exponential(rate lam), clipped to [0, upper], plus Laplace(upper/epsilon)."""

    name = "laplace_perturbed_clipped_exponential"
    extended_signature = "[rng],[size],(),(),()->[rng],()"
    _print_name = ("LaplacePerturbedClippedExponential", "\\operatorname{LPClippedExp}")

    @classmethod
    def rv_op(cls, lam, upper, epsilon, *, size=None, rng=None):
        size, rng, lam, upper, epsilon = _rv_inputs(cls, size, rng, lam, upper, epsilon)
        next_rng, x = exponential(1.0 / lam, size=size, rng=rng, return_next_rng=True)
        final_rng, z = _plus_laplace(pt.clip(x, 0.0, upper), upper / epsilon, size, next_rng)
        return _rv_node(cls, rng, size, [lam, upper, epsilon], final_rng, _to_floatx(z))


class LaplacePerturbedClippedExponential(_NoImputeContinuous):
    r"""Reports of a clipped exponential value released with the Laplace mechanism (local DP).

    Each person holds :math:`x \sim \mathrm{Exponential}(\lambda)` (rate ``lam``), clips it to
    :math:`[0, u]` (``upper``) and reports :math:`z = \min(x, u) + \mathrm{Laplace}(0, u/\epsilon)`.
    The density marginalises :math:`x` in closed form (LDP paper, Supplement 10.2, eq. 29-30,
    with the paper's typos corrected); the derivation and the stable form are in
    :func:`pymc_dpnoise.math.clipped_exponential_laplace_logp`.

    ========  ==========================================================
    Support   :math:`z \in \mathbb{R}`
    Mean      :math:`(1 - e^{-\lambda u})/\lambda`
    Variance  :math:`\mathrm{Var}[\min(x, u)] + 2 (u/\epsilon)^2`
    ========  ==========================================================

    Parameters
    ----------
    lam : tensor_like of float
        Rate of the clean values, > 0.
    upper : tensor_like of float
        Clipping bound, > 0 (the lower bound is 0).
    epsilon : tensor_like of float
        Privacy budget of each report, > 0.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(0)
    >>> z = pmd.mechanisms.perturb_clipped_exponential(rng.exponential(2.0, 300), 5.0, 1.0, rng)
    >>> with pm.Model():
    ...     lam = pm.Gamma("lam", 2.0, 2.0)
    ...     obs = pmd.LaplacePerturbedClippedExponential("z", lam=lam, upper=5.0, epsilon=1.0, observed=z)
    """

    rv_type = LaplacePerturbedClippedExponentialRV
    rv_op = LaplacePerturbedClippedExponentialRV.rv_op

    @classmethod
    def dist(cls, lam, upper, epsilon, **kwargs):
        check_positive("lam", lam)
        check_positive("upper", upper)
        check_positive("epsilon", epsilon)
        check_shapes(
            dict(lam=lam, upper=upper, epsilon=epsilon), kwargs.get("shape"), kwargs.get("size")
        )
        return super().dist([lam, upper, epsilon], **kwargs)

    def support_point(rv, size, lam, upper, epsilon):
        point, *_ = pt.broadcast_arrays(pt.minimum(1.0 / lam, upper), upper, epsilon)
        if not rv_size_is_none(size):
            point = pt.full(size, point)
        return point

    @_floatx_out
    def logp(value, lam, upper, epsilon):
        return _clipped_exp_guarded(value, lam, upper, epsilon, "logp")

    @_floatx_out
    def logcdf(value, lam, upper, epsilon):
        return _clipped_exp_guarded(value, lam, upper, epsilon, "cdf")

    @_floatx_out
    def logccdf(value, lam, upper, epsilon):
        return _clipped_exp_guarded(value, lam, upper, epsilon, "ccdf")

    icdf = _refuse("LaplacePerturbedClippedExponential", "icdf", _NO_ICDF)


_CLIPPED_EXPONENTIAL_DOMAIN = (
    f"finite parameters, lam > 0, upper > 0, epsilon > 0, epsilon/upper <= {MAX_STANDARDISED:g}"
)


def _clipped_exponential_domain(lam, upper, epsilon):
    """``(ok, safe parameters)`` of the clipped-exponential logps (per report and summary)."""
    ok = pt.and_(
        pt.all(_all_finite(lam, upper, epsilon)),
        pt.all((lam > 0) & (upper > 0) & (epsilon > 0)),
    )
    # the Laplace rate epsilon/upper enters the gradient squared (d/d upper of |y| eps/upper):
    # beyond 1e150 it overflows, so such a scale is outside the domain, as for the normal
    ok = pt.and_(ok, pt.all(epsilon <= MAX_STANDARDISED * upper))
    safe = _safe_params(ok, lam=(lam, 1.0), upper=(upper, 1.0), epsilon=(epsilon, 1.0))
    return ok, safe


def _clipped_exp_guarded(value, lam, upper, epsilon, kind):
    """Log density (``kind="logp"``), log CDF (``"cdf"``) or log survival function (``"ccdf"``)."""
    ok, safe_params = _clipped_exponential_domain(lam, upper, epsilon)
    return _guarded(
        value, dict(lam=lam, upper=upper, epsilon=epsilon), ok, safe_params, kind,
        _CLIPPED_EXPONENTIAL_DOMAIN, dpmath.clipped_exponential_laplace_logp,
        dpmath.clipped_exponential_laplace_log_cdfs,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# Binned summaries of N reports as one observed value (O(bins) likelihood)
# --------------------------------------------------------------------------------------------


def _summary_table(z, lower, upper, n_bins):
    """PyTensor version of :meth:`pymc_dpnoise.summaries.ClippedBinning.numpy` (same expression)."""
    h = (upper - lower) / n_bins
    inv_h = pt.cast(n_bins, "float64") / (upper - lower)  # multiply, as every engine does
    j = pt.clip(pt.floor((z - lower) * inv_h), 0.0, pt.cast(n_bins - 1, "float64"))
    left = pt.le(z, lower)
    right = pt.ge(z, upper)
    inside = ~(left | right)
    row = pt.switch(left, 0, pt.switch(right, n_bins + 1, pt.cast(j, "int64") + 1))
    d = pt.switch(left, lower - z, pt.switch(right, z - upper, z - (lower + (j + 0.5) * h)))
    d2 = pt.switch(inside, d * d, 0.0)
    d3 = pt.switch(inside, pt.abs(d) * d * d, 0.0)
    vals = pt.stack([pt.ones_like(z), d, d2, d3], axis=1)
    return pt.inc_subtensor(pt.zeros((n_bins + 2, 4), dtype="float64")[row], vals)


def _summary_kwargs_from_observed(observed, kwargs, names):
    """Fill bounds, budget, N and bin count from a :class:`~pymc_dpnoise.summaries.ClippedSummary`."""
    from ..summaries import ClippedSummary

    if isinstance(observed, ClippedSummary):
        given = dict(
            lower=observed.lower,
            upper=observed.upper,
            epsilon=observed.epsilon,
            n=observed.n_total,
            n_bins=observed.n_bins,
        )
        for key, val in given.items():
            if key not in names:
                continue
            if kwargs.get(key) is not None and not np.allclose(kwargs[key], val):
                raise ValueError(
                    f"{key}: {kwargs[key]!r} differs from the observed summary's {val!r}"
                )
            kwargs[key] = val
        observed = observed.table
    return observed, kwargs


#: most bins of a summary table (the tolerance rule gives 3380 bins at 10^8 reports)
MAX_BINS = 10**6


def _summary_required(**params):
    for key, val in params.items():
        if val is None:
            raise ValueError(f"{key}: required (or pass a ClippedSummary as observed)")


def _summary_support_point(rv, size, *params):
    """An all-zero table: ``n_bins + 2`` rows of 4 (``n_bins`` is the last parameter)."""
    return pt.zeros((params[-1] + 2, 4), dtype="float64")


def _summary_rv_inputs(n, n_bins, size, rng):
    """``(n, n_bins, size, rng)`` of a summary RV: int64 counts, no batch size."""
    n = pt.cast(pt.as_tensor_variable(n), "int64")  # a constant or pm.Data (set_data)
    n_bins = pt.cast(pt.as_tensor_variable(n_bins), "int64")  # an int, or a rebuilt node's
    rng = normalize_rng_param(rng)
    size = normalize_size_param(size)
    if not (rv_size_is_none(size) or size.type.shape == (0,)):
        raise NotImplementedError(
            "size: summary distributions take scalar parameters (one summary per variable)"
        )
    return n, n_bins, size, rng


def _check_summary_scalars(**params):
    """A summary is one table of N reports: its parameters are scalars (no group index)."""
    for key, val in params.items():
        if val is not None and pt.as_tensor_variable(val).ndim > 0:
            raise NotImplementedError(
                f"{key}: summary distributions take scalar parameters (one summary table per "
                f"variable); got {pt.as_tensor_variable(val).ndim} dimension(s). For several "
                "groups, build one summary variable per group."
            )


def _check_summary_ints(n, n_bins):
    if not (isinstance(n_bins, int | np.integer) and n_bins >= 1):
        raise ValueError(
            f"n_bins: must be a Python int >= 1 (it sets the table shape), got {n_bins!r}"
        )
    if n_bins > MAX_BINS:
        raise ValueError(
            f"n_bins: at most {MAX_BINS:,} bins (the tolerance rule needs 3380 at 10^8 reports); "
            f"got {n_bins:,}"
        )
    check_positive("n", n)


class LaplacePerturbedClippedNormalSummaryRV(SymbolicRandomVariable):
    """Draws: N clipped-normal Laplace reports, returned as their ``(n_bins + 2, 4)`` summary."""

    name = "laplace_perturbed_clipped_normal_summary"
    extended_signature = "[rng],[size],(),(),(),(),(),(),()->[rng],(r,c)"
    _print_name = ("LaplacePerturbedClippedNormalSummary", "\\operatorname{LPClippedNormalSummary}")

    @classmethod
    def rv_op(cls, mu, sigma, lower, upper, epsilon, n, n_bins, *, size=None, rng=None):
        mu, sigma, lower, upper, epsilon = map(_f64, (mu, sigma, lower, upper, epsilon))
        n, n_bins, size, rng = _summary_rv_inputs(n, n_bins, size, rng)
        next_rng, x = normal(mu, sigma, size=(n,), rng=rng, return_next_rng=True)
        scale = (upper - lower) / epsilon
        final_rng, z = _plus_laplace(pt.clip(x, lower, upper), scale, (n,), next_rng)
        table = _summary_table(z, lower, upper, n_bins)
        return _rv_node(
            cls,
            rng,
            size,
            [mu, sigma, lower, upper, epsilon, n, n_bins],
            final_rng,
            _to_floatx(table),
        )


class LaplacePerturbedClippedNormalSummary(Continuous):
    r"""N clipped-Gaussian Laplace reports observed through their binned summary.

    The same model as :class:`LaplacePerturbedClippedNormal`, but the observed value is the
    ``(n_bins + 2, 4)`` table of :func:`pymc_dpnoise.summarize` (tail counts and sums, and per
    bin of :math:`(a, b)` the count and the moments around the bin centre), so the cost of
    one log density + gradient is O(n_bins) whatever N is.  Reports outside the clipping
    interval are exact; reports inside enter through a second-order expansion whose error
    is at most :func:`pymc_dpnoise.math.clipped_normal_summary_error_bound` nats (the
    derivation is in :func:`pymc_dpnoise.math.clipped_normal_summary_logp`).

    Pass the :class:`~pymc_dpnoise.summaries.ClippedSummary` itself as ``observed``: the
    bounds, ε, N and the bin count are read from it.  Random draws simulate N reports with
    the mechanism and return their summary, so prior and posterior predictive checks work
    on the same table (each draw costs O(N)).

    A sibling class rather than a ``summary=`` path of :class:`LaplacePerturbedClippedNormal`:
    in PyMC a distribution has one support shape, and here the value is a table of shape
    ``(n_bins + 2, 4)`` (``ndim_supp = 2``), not N scalars.  Scalar parameters only (one
    summary per variable; for several groups or budgets, one variable per group).

    When to use: the exact :class:`LaplacePerturbedClippedNormal` stays the default.  Its
    cost grows linearly with the number of reports, the summary's with the number of bins,
    which the tolerance rule makes grow like :math:`N^{1/3}` (157 bins at N = 10⁴, 338 at
    10⁵, 3380 at 10⁸ for a 0.01-nat budget); the two cost about the same between N = 10⁴
    and 10⁵, above that the summary is the cheaper, increasingly so, and it is streamed
    from files (the docs' performance page has both costs against N).  Below 10⁵ reports,
    or when pointwise log likelihoods are needed (LOO), use the exact class.

    ========  ==================================================================
    Support   ``(n_bins + 2, 4)`` summary tables
    Mean      tail counts :math:`E[n_L] = N F(a)`, :math:`E[n_R] = N (1 - F(b))` with F the
              CDF of one report (``pm.logcdf`` of the per-report class); every entry is
              a sum of N i.i.d. per-report terms, so its mean is N times theirs
    Variance  N times the variance of the per-report term of each entry
    ========  ==================================================================

    Parameters
    ----------
    mu, sigma : tensor_like of float
        Scalar parameters of the clean values.
    lower, upper, epsilon, n, n_bins :
        Read from ``observed`` when it is a ``ClippedSummary``; give them for ``.dist``.

    Notes
    -----
    As for :class:`LaplacePerturbedClippedNormal`: when the reports vary less than the noise
    alone would make them, the posterior mode (``pm.find_MAP``, the centre of
    ``pymc_extras.fit_laplace``) can sit on σ = 0 under a prior that is positive at 0; sample
    with NUTS, or use a prior for σ that vanishes at 0.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(0)
    >>> z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, 100_000), -5.0, 5.0, 1.0, rng)
    >>> summary = pmd.summarize(z, -5.0, 5.0, 1.0, n_bins=128)
    >>> with pm.Model():
    ...     mu = pm.Normal("mu", 0.0, 5.0)
    ...     sigma = pm.Gamma("sigma", 2.0, 1.0)
    ...     obs = pmd.LaplacePerturbedClippedNormalSummary("z", mu, sigma, observed=summary)
    """

    rv_type = LaplacePerturbedClippedNormalSummaryRV
    rv_op = LaplacePerturbedClippedNormalSummaryRV.rv_op

    def __new__(cls, name, *args, observed=None, **kwargs):
        names = ("lower", "upper", "epsilon", "n", "n_bins")
        observed, kwargs = _summary_kwargs_from_observed(observed, kwargs, names)
        return super().__new__(cls, name, *args, observed=observed, **kwargs)

    @classmethod
    def dist(cls, mu, sigma, lower=None, upper=None, epsilon=None, n=None, n_bins=None, **kwargs):
        _summary_required(lower=lower, upper=upper, epsilon=epsilon, n=n)
        _check_summary_scalars(mu=mu, sigma=sigma, lower=lower, upper=upper, epsilon=epsilon, n=n)
        _check_summary_ints(n, n_bins)
        check_finite("mu", mu)
        check_positive("sigma", sigma)
        check_positive("epsilon", epsilon)
        check_less("lower", lower, "upper", upper)
        return super().dist([mu, sigma, lower, upper, epsilon, n, n_bins], **kwargs)

    support_point = _summary_support_point

    logcdf, logccdf, icdf = _refuse_cdfs("LaplacePerturbedClippedNormalSummary")

    @_floatx_out
    def logp(value, mu, sigma, lower, upper, epsilon, n, n_bins):
        finite, safe = _finite_reports(value, 2)  # one table: any NaN/inf entry refuses it
        ok, (mu, sigma, lower, upper, epsilon) = _clipped_normal_domain(
            mu, sigma, lower, upper, epsilon
        )
        res = dpmath.clipped_normal_summary_logp(safe, mu, sigma, lower, upper, epsilon)
        res = _ninf_where_not(finite, res)
        return check_parameters(res, ok, msg=_CLIPPED_NORMAL_DOMAIN)


class LaplacePerturbedClippedExponentialSummaryRV(SymbolicRandomVariable):
    """Draws: N clipped-exponential Laplace reports, returned as their summary table."""

    name = "laplace_perturbed_clipped_exponential_summary"
    extended_signature = "[rng],[size],(),(),(),(),()->[rng],(r,c)"
    _print_name = (
        "LaplacePerturbedClippedExponentialSummary",
        "\\operatorname{LPClippedExpSummary}",
    )

    @classmethod
    def rv_op(cls, lam, upper, epsilon, n, n_bins, *, size=None, rng=None):
        lam, upper, epsilon = map(_f64, (lam, upper, epsilon))
        n, n_bins, size, rng = _summary_rv_inputs(n, n_bins, size, rng)
        next_rng, x = exponential(1.0 / lam, size=(n,), rng=rng, return_next_rng=True)
        final_rng, z = _plus_laplace(pt.clip(x, 0.0, upper), upper / epsilon, (n,), next_rng)
        zero = pt.as_tensor_variable(np.float64(0.0))
        table = _summary_table(z, zero, upper, n_bins)
        return _rv_node(
            cls, rng, size, [lam, upper, epsilon, n, n_bins], final_rng, _to_floatx(table)
        )


class LaplacePerturbedClippedExponentialSummary(Continuous):
    r"""N clipped-exponential Laplace reports observed through their binned summary.

    The summary sibling of :class:`LaplacePerturbedClippedExponential` (see
    :class:`LaplacePerturbedClippedNormalSummary` for the design): the observed value is the
    table of ``pmd.summarize(z, 0.0, upper, epsilon, model="exponential")``; tails exact,
    inside bins to second order with the bound
    :func:`pymc_dpnoise.math.clipped_exponential_summary_error_bound`.

    ========  ==================================================================
    Support   ``(n_bins + 2, 4)`` summary tables
    Mean      as for :class:`LaplacePerturbedClippedNormalSummary`, with :math:`a = 0`,
              :math:`b = u` and F the CDF of :class:`LaplacePerturbedClippedExponential`
    Variance  N times the variance of the per-report term of each entry
    ========  ==================================================================

    Parameters
    ----------
    lam : tensor_like of float
        Scalar rate of the clean values.
    upper, epsilon, n, n_bins :
        Read from ``observed`` when it is a ``ClippedSummary``; give them for ``.dist``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(0)
    >>> z = pmd.mechanisms.perturb_clipped_exponential(rng.exponential(2.0, 50_000), 5.0, 1.0, rng)
    >>> summary = pmd.summarize(z, 0.0, 5.0, 1.0, n_bins=64, model="exponential")
    >>> with pm.Model():
    ...     lam = pm.Gamma("lam", 2.0, 2.0)
    ...     obs = pmd.LaplacePerturbedClippedExponentialSummary("z", lam, observed=summary)
    """

    rv_type = LaplacePerturbedClippedExponentialSummaryRV
    rv_op = LaplacePerturbedClippedExponentialSummaryRV.rv_op

    def __new__(cls, name, *args, observed=None, **kwargs):
        from ..summaries import ClippedSummary

        if isinstance(observed, ClippedSummary) and observed.lower != 0.0:
            raise ValueError(
                f"observed: a clipped-exponential summary has lower = 0, got {observed.lower}"
            )
        names = ("upper", "epsilon", "n", "n_bins")
        observed, kwargs = _summary_kwargs_from_observed(observed, kwargs, names)
        return super().__new__(cls, name, *args, observed=observed, **kwargs)

    @classmethod
    def dist(cls, lam, upper=None, epsilon=None, n=None, n_bins=None, **kwargs):
        _summary_required(upper=upper, epsilon=epsilon, n=n)
        _check_summary_scalars(lam=lam, upper=upper, epsilon=epsilon, n=n)
        _check_summary_ints(n, n_bins)
        check_positive("lam", lam)
        check_positive("upper", upper)
        check_positive("epsilon", epsilon)
        return super().dist([lam, upper, epsilon, n, n_bins], **kwargs)

    support_point = _summary_support_point

    logcdf, logccdf, icdf = _refuse_cdfs("LaplacePerturbedClippedExponentialSummary")

    @_floatx_out
    def logp(value, lam, upper, epsilon, n, n_bins):
        finite, safe = _finite_reports(value, 2)
        ok, (lam, upper, epsilon) = _clipped_exponential_domain(lam, upper, epsilon)
        res = dpmath.clipped_exponential_summary_logp(safe, lam, upper, epsilon)
        res = _ninf_where_not(finite, res)
        return check_parameters(res, ok, msg=_CLIPPED_EXPONENTIAL_DOMAIN)
