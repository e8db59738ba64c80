"""Noise-aware PyMC distributions of privatised reports.

Each class is a thin PyMC wrapper: the log density comes from :mod:`pymc_dpnoise.math`,
the random draws *are* the release mechanism (so prior and posterior predictive draws are
privatised reports), and constant parameters are validated when the variable is created.

Design note: the draws are :class:`~pymc.distributions.distribution.SymbolicRandomVariable`
graphs (``normal -> clip -> + laplace``) instead of a ``RandomVariable`` with a NumPy
``rng_fn``.  A NumPy ``rng_fn`` runs in Numba *object mode* (with a warning) under PyTensor's
default linker and has no JAX implementation; the symbolic graph runs natively on every
backend.  The NumPy functions in :mod:`pymc_dpnoise.mechanisms` implement the same
mechanism for data holders, and the test-suite checks that both give the same distribution.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.distributions.shape_utils import implicit_size_from_params, rv_size_is_none
from pymc.pytensorf import normalize_rng_param
from pytensor.tensor.random.basic import exponential, laplace, normal
from pytensor.tensor.random.utils import normalize_size_param

from .. import math as dpmath
from .._validation import check_finite, check_less, check_positive, check_shapes
from ._common import _all_finite, _f64, _finite_value, _NoImputeContinuous, _safe_params

__all__ = ["LaplacePerturbedClippedExponential", "LaplacePerturbedClippedNormal"]

#: largest |bound - mu| / sigma and sigma epsilon / (upper - lower) the clipped-normal logp
#: accepts: their squares must not overflow (accuracy is audited up to 1e100)
MAX_STANDARDISED = 1e150


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
        mu, sigma, lower, upper, epsilon = map(_f64, (mu, sigma, lower, upper, epsilon))
        rng = normalize_rng_param(rng)
        size = normalize_size_param(size)
        if rv_size_is_none(size):
            size = implicit_size_from_params(
                mu, sigma, lower, upper, epsilon, ndims_params=cls.ndims_params
            )
        next_rng, x = normal(mu, sigma, size=size, rng=rng, return_next_rng=True)
        scale = (upper - lower) / epsilon
        final_rng, noise = laplace(0.0, scale, size=size, rng=next_rng, return_next_rng=True)
        z = pt.clip(x, lower, upper) + noise
        return cls(
            inputs=[rng, size, mu, sigma, lower, upper, epsilon],
            outputs=[final_rng, z],
        )(rng, size, mu, sigma, lower, upper, epsilon)


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

    def logp(value, mu, sigma, lower, upper, epsilon):
        finite, safe = _finite_value(value)
        # (bound - mu)/sigma is squared inside: beyond 1e150 it overflows (NaN), so such
        # parameters are outside the domain (-inf), like non-finite ones
        ok = pt.and_(
            pt.all(_all_finite(mu, sigma, lower, upper, epsilon)),
            pt.all((sigma > 0) & (epsilon > 0) & (upper > lower)),
        )
        reach = pt.maximum(pt.abs(lower - mu), pt.abs(upper - mu)) / sigma
        kappa = sigma * epsilon / (upper - lower)  # sigma / noise scale, squared inside
        ok = pt.and_(ok, pt.all((reach <= MAX_STANDARDISED) & (kappa <= MAX_STANDARDISED)))
        # d s / d epsilon = -(b - a)/epsilon^2 must not overflow either
        ok = pt.and_(ok, pt.all(epsilon >= 1.0 / MAX_STANDARDISED))
        # evaluate at harmless parameters where they are refused, so no NaN reaches a gradient
        mu, sigma, lower, upper, epsilon = _safe_params(
            ok,
            mu=(mu, 0.0),
            sigma=(sigma, 1.0),
            lower=(lower, -1.0),
            upper=(upper, 1.0),
            epsilon=(epsilon, 1.0),
        )
        res = dpmath.clipped_normal_laplace_logp(safe, mu, sigma, lower, upper, epsilon)
        res = pt.switch(finite, res, -np.inf)
        return check_parameters(
            res,
            ok,
            msg=f"finite parameters, sigma > 0, epsilon > 0, upper > lower, "
            f"|bound - mu|/sigma and sigma*epsilon/(upper-lower) <= {MAX_STANDARDISED:g}, "
            f"epsilon >= {1 / MAX_STANDARDISED:g}",
        )


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
        lam, upper, epsilon = map(_f64, (lam, upper, epsilon))
        rng = normalize_rng_param(rng)
        size = normalize_size_param(size)
        if rv_size_is_none(size):
            size = implicit_size_from_params(lam, upper, epsilon, ndims_params=cls.ndims_params)
        next_rng, x = exponential(1.0 / lam, size=size, rng=rng, return_next_rng=True)
        final_rng, noise = laplace(
            0.0, upper / epsilon, size=size, rng=next_rng, return_next_rng=True
        )
        z = pt.clip(x, 0.0, upper) + noise
        return cls(
            inputs=[rng, size, lam, upper, epsilon],
            outputs=[final_rng, z],
        )(rng, size, lam, upper, epsilon)


class LaplacePerturbedClippedExponential(_NoImputeContinuous):
    r"""Reports of a clipped exponential value released with the Laplace mechanism (local DP).

    Each person holds :math:`x \sim \mathrm{Exponential}(\lambda)` (rate ``lam``), clips it to
    :math:`[0, u]` (``upper``) and reports :math:`z = \min(x, u) + \mathrm{Laplace}(0, u/\epsilon)`.
    The density marginalises :math:`x` in closed form (LDP paper, Supplement 10.2, eq. 29-30,
    with the paper's typos corrected as in REFERENCE §2.2); see
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

    def logp(value, lam, upper, epsilon):
        finite, safe = _finite_value(value)
        ok = pt.and_(
            pt.all(_all_finite(lam, upper, epsilon)),
            pt.all((lam > 0) & (upper > 0) & (epsilon > 0)),
        )
        lam, upper, epsilon = _safe_params(
            ok, lam=(lam, 1.0), upper=(upper, 1.0), epsilon=(epsilon, 1.0)
        )
        res = dpmath.clipped_exponential_laplace_logp(safe, lam, upper, epsilon)
        res = pt.switch(finite, res, -np.inf)
        return check_parameters(res, ok, msg="finite parameters, lam > 0, upper > 0, epsilon > 0")
