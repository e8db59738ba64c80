r"""Noise-aware distributions for Bernstein & Sheldon's exponential-family releases.

* :class:`LaplaceNoisyTruncatedExponential`, :class:`LaplaceNoisyTruncatedPoisson`: the noisy
  sum of the records inside declared bounds (truncated families, Sec. 3.3), with the random-sum
  CLT (Prop. 1) convolved with the Laplace noise in closed form: no latent variable.
* :func:`LaplaceNoisyMultinomial`: noisy category counts (independent Laplace noise on every
  count), normal approximation of the counts with one latent per category that NUTS
  integrates (a model-building helper: it adds the latent and the observed variable to the
  current model).

**Other noise** (``noise=``, a spec of :mod:`pymc_dpnoise.noise`, instead of ``epsilon``; the
same for :func:`~pymc_dpnoise.LaplaceNoisyTruncatedNormal`, see
:mod:`pymc_dpnoise.distributions.expfam_normal`):

* :class:`~pymc_dpnoise.noise.Laplace` is today's path (scale ``sensitivity / epsilon``);
* :class:`~pymc_dpnoise.noise.Gaussian` is exact within the same CLT model, with no latent:
  a normal sum plus :math:`N(0, \sigma^2)` is :math:`N(m, V + \sigma^2)`, and the multinomial
  counts plus independent :math:`N(0, \sigma^2)` noise are
  :math:`N(np, n(\operatorname{diag}p - pp^T) + \sigma^2 I)`; draws add the Gaussian noise;
* the integer kinds (:class:`~pymc_dpnoise.noise.DiscreteLaplace`,
  :class:`~pymc_dpnoise.noise.RoundedLaplace`, :class:`~pymc_dpnoise.noise.DiscreteGaussian`)
  are refused: they are added to integer statistics, and their exact likelihood on a sum needs
  the sum's lattice (a pmf on the integers convolved with the noise pmf), which the CLT model,
  a density on the reals, does not have; evaluating the normal density at the release would
  be a further approximation with no error bound here.  On an exponential sum (a real number)
  no DP system adds integer noise.  Single counts with any noise are exact in
  :class:`~pymc_dpnoise.NoisyBinomial` / :class:`~pymc_dpnoise.NoisyPoisson`.
"""

from __future__ import annotations

import inspect

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.tensor.random.basic import exponential, multinomial, normal, poisson

from .. import noise as noise_mod
from ..math import expfam as emath
from ..validation import check_finite, check_positive, check_shapes, constant_value
from ._common import _f64, _NoImputeContinuous, _plus_laplace, _rv_inputs, _rv_node

__all__ = [
    "LaplaceNoisyMultinomial",
    "LaplaceNoisyMultinomialGivenCounts",
    "LaplaceNoisyMultinomialGivenNoiseVar",
    "LaplaceNoisyTruncatedExponential",
    "LaplaceNoisyTruncatedPoisson",
    "truncated_sum_sensitivity",
]


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def _check_count(name, value):
    v = constant_value(value, name)
    if v is None:
        return
    check_finite(name, v)
    bad = (v < 0) | (v != np.floor(v))
    if np.any(bad):
        raise ValueError(f"`{name}` must be a non-negative integer; got {v[bad].ravel()[:5]}")


def _check_bounds(lower, upper, *, integer):
    lo, hi = constant_value(lower, "lower"), constant_value(upper, "upper")
    for name, v in (("lower", lo), ("upper", hi)):
        if v is None:
            continue
        check_finite(name, v)
        if np.any(v < 0):
            raise ValueError(
                f"`{name}` must be >= 0 (the family lives on [0, inf)); got {v[v < 0].ravel()[:5]}"
            )
        if integer and np.any(v != np.floor(v)):
            raise ValueError(f"`{name}` must be an integer for count data; got {v.ravel()[:5]}")
    if lo is not None and hi is not None:
        bad = (lo > hi) if integer else (lo >= hi)
        if np.any(bad):
            rel = "<=" if integer else "<"
            raise ValueError(f"`lower` must be {rel} `upper`; got lower={lo}, upper={hi}")


def truncated_sum_sensitivity(lower, upper):
    r"""L1 sensitivity of :math:`\sum_i \mathbf 1[a \le x_i \le b]\, x_i` (Appendix C).

    :math:`\Delta = \max(\max_{[a,b]} |x|, b - a) = \max(|a|, |b|, b - a)`: replacing one record
    either moves a kept value inside :math:`[a, b]` (at most :math:`b - a`) or adds / removes
    one kept value (at most :math:`\max(|a|, |b|)`).  Works on numbers and tensors.
    """
    if isinstance(lower, pt.Variable) or isinstance(upper, pt.Variable):
        lower, upper = _f64(lower), _f64(upper)
        return pt.maximum(pt.maximum(pt.abs(lower), pt.abs(upper)), upper - lower)
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    return np.maximum(np.maximum(np.abs(lower), np.abs(upper)), upper - lower)


# --------------------------------------------------------------------------------------------
# The noise: `epsilon` (Laplace, the papers' mechanism) or a spec of pymc_dpnoise.noise
# --------------------------------------------------------------------------------------------

#: noise kinds these CLT-normal likelihoods integrate exactly
NOISE_KINDS = ("laplace", "gaussian")


def _resolve_noise(where, epsilon, sensitivity, noise, *, sensitivity_default=None):
    """The noise spec of a release, from exactly one of ``epsilon`` and ``noise``.

    ``None`` when ``epsilon`` is given (today's Laplace path).  The integer kinds are refused
    (see the module docstring): the CLT model treats the sum as a real number, so an integer
    noise pmf has no exact counterpart on it.
    """
    if noise is None:
        if epsilon is None:
            raise TypeError(
                f"{where}: give `epsilon` (Laplace noise of scale sensitivity/epsilon) or "
                "`noise` (a spec of pymc_dpnoise.noise: Laplace or Gaussian)"
            )
        return None
    if epsilon is not None:
        raise TypeError(
            f"{where}: give either `epsilon` or `noise`, not both (`epsilon` means Laplace noise "
            "of scale sensitivity/epsilon; `noise` says the noise itself)"
        )
    if sensitivity is not None and sensitivity is not sensitivity_default:
        raise TypeError(
            f"{where}: `sensitivity` goes with `epsilon`; with `noise` the spec holds the noise "
            "scale (e.g. noise.Laplace.from_epsilon(epsilon, sensitivity) or "
            "noise.Gaussian.from_rho(rho, sensitivity))"
        )
    spec = noise_mod.as_noise(noise)
    if spec.kind not in NOISE_KINDS:
        raise ValueError(
            f"{where}: {type(spec).__name__} noise is not supported here, only Laplace and "
            "Gaussian. This likelihood approximates the released sum by a normal (CLT), a "
            "continuous law; integer noise (DiscreteLaplace, RoundedLaplace, DiscreteGaussian) "
            "is added to integer statistics, and its exact likelihood needs the lattice of the "
            "sum, which the CLT model does not have. For a single count (a sum of 0/1 records, "
            "or a Poisson total) use pmd.NoisyBinomial / pmd.NoisyPoisson, which are exact for "
            "every noise kind."
        )
    return spec


# --------------------------------------------------------------------------------------------
# Truncated families
# --------------------------------------------------------------------------------------------


class _TruncatedSumRV(SymbolicRandomVariable):
    """Draws: n records from the family, those outside [lower, upper] dropped, the sum + Laplace."""

    extended_signature = "[rng],[size],(),(),(),(),(),()->[rng],()"

    @classmethod
    def _records(cls, theta, size, rng):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def rv_op(cls, n, theta, lower, upper, epsilon, sensitivity, *, size=None, rng=None):
        size, rng, n, theta, lower, upper, epsilon, sensitivity = _rv_inputs(
            cls, size, rng, n, theta, lower, upper, epsilon, sensitivity
        )
        next_rng, total = _truncated_total(cls._records, n, theta, lower, upper, size, rng)
        final_rng, y = _plus_laplace(total, sensitivity / epsilon, size, next_rng)
        return _rv_node(
            cls, rng, size, [n, theta, lower, upper, epsilon, sensitivity], final_rng, y
        )


def _truncated_total(records, n, theta, lower, upper, size, rng):
    """``(next_rng, total)``: n records drawn by ``records``, those outside [lower, upper]
    dropped, the rest summed (the mechanism before its noise)."""
    # no reduction of a 0-d n: PyMC's graph plotting compiles the shape graph in a mode
    # whose C code for Max of a 0-d input fails ("too many values to unpack")
    n_max = pt.cast(pt.max(n) if n.type.ndim else n, "int64")
    rec_size = pt.concatenate([pt.cast(size, "int64"), pt.atleast_1d(n_max)])
    next_rng, x = records(pt.shape_padright(theta), rec_size, rng)
    x = pt.cast(x, "float64")
    index = pt.arange(n_max).astype("float64")
    keep = (
        pt.ge(x, pt.shape_padright(lower))
        & pt.le(x, pt.shape_padright(upper))
        & pt.lt(index, pt.shape_padright(n))
    )
    return next_rng, pt.sum(pt.switch(keep, x, 0.0), axis=-1)


class _TruncatedSumGaussianRV(SymbolicRandomVariable):
    """Draws: as :class:`_TruncatedSumRV`, the kept sum + N(0, sigma^2) (Gaussian noise)."""

    extended_signature = "[rng],[size],(),(),(),(),()->[rng],()"

    @classmethod
    def rv_op(cls, n, theta, lower, upper, noise_sigma, *, size=None, rng=None):
        size, rng, n, theta, lower, upper, noise_sigma = _rv_inputs(
            cls, size, rng, n, theta, lower, upper, noise_sigma
        )
        next_rng, total = _truncated_total(cls._records, n, theta, lower, upper, size, rng)
        final_rng, e = normal(0.0, noise_sigma, size=size, rng=next_rng, return_next_rng=True)
        return _rv_node(cls, rng, size, [n, theta, lower, upper, noise_sigma], final_rng, total + e)


class TruncatedExponentialSumRV(_TruncatedSumRV):
    name = "laplace_noisy_truncated_exponential"
    _print_name = ("LaplaceNoisyTruncatedExponential", "\\operatorname{LapNoisyTruncExp}")

    @classmethod
    def _records(cls, lam, size, rng):
        return exponential(1.0 / lam, size=size, rng=rng, return_next_rng=True)


class TruncatedPoissonSumRV(_TruncatedSumRV):
    name = "laplace_noisy_truncated_poisson"
    _print_name = ("LaplaceNoisyTruncatedPoisson", "\\operatorname{LapNoisyTruncPoisson}")

    @classmethod
    def _records(cls, mu, size, rng):
        return poisson(mu, size=size, rng=rng, return_next_rng=True)


class TruncatedExponentialSumGaussianRV(_TruncatedSumGaussianRV):
    name = "gaussian_noisy_truncated_exponential"
    _print_name = ("LaplaceNoisyTruncatedExponential", "\\operatorname{GaussNoisyTruncExp}")
    _records = TruncatedExponentialSumRV._records


class TruncatedPoissonSumGaussianRV(_TruncatedSumGaussianRV):
    name = "gaussian_noisy_truncated_poisson"
    _print_name = ("LaplaceNoisyTruncatedPoisson", "\\operatorname{GaussNoisyTruncPoisson}")
    _records = TruncatedPoissonSumRV._records


class _TruncatedSum(_NoImputeContinuous):
    _integer = False
    _param = "lam"

    #: the class of the same family with Gaussian noise (set below each public class)
    _gaussian: type

    @classmethod
    def dist(cls, n, theta, lower, upper, epsilon=None, sensitivity=None, *, noise=None, **kwargs):
        spec = _resolve_noise(f"{cls.__name__}", epsilon, sensitivity, noise)
        _check_count("n", n)
        check_positive(cls._param, theta)
        _check_bounds(lower, upper, integer=cls._integer)
        if spec is not None and spec.kind == "gaussian":
            return cls._gaussian.dist(n, theta, lower, upper, spec.param, **kwargs)
        if spec is not None:  # Laplace: the budget at the default sensitivity
            sensitivity = truncated_sum_sensitivity(lower, upper)
            if not isinstance(sensitivity, pt.Variable) and np.any(sensitivity <= 0):
                raise ValueError("`upper` must be > 0: the sensitivity max(|a|, |b|, b - a) is 0")
            epsilon = sensitivity / np.asarray(spec.param, dtype="float64")
            sensitivity = None
        check_positive("epsilon", epsilon)
        if sensitivity is None:
            sensitivity = truncated_sum_sensitivity(lower, upper)
            if not isinstance(sensitivity, pt.Variable) and np.any(sensitivity <= 0):
                raise ValueError("`upper` must be > 0: the sensitivity max(|a|, |b|, b - a) is 0")
        check_positive("sensitivity", sensitivity)
        params = {
            "n": n,
            cls._param: theta,
            "lower": lower,
            "upper": upper,
            "epsilon": epsilon,
            "sensitivity": sensitivity,
        }
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        return super().dist([n, theta, lower, upper, epsilon, sensitivity], **kwargs)


#: rates of the truncated families are refused outside [1/MAX_RATE, MAX_RATE]: their moments
#: take mu^2 and 1/lam^2 terms, which overflow near 1e154 (the log density would be NaN)
MAX_RATE = np.float64(1e150)  # float64: PyTensor would try a Python float as float32
#: the Poisson's log CDF kernels lose the far tail above mu ~ 1e19 (NaN at some rates); no
#: bound on the records keeps any record there (P(X <= upper) < e^-1e15)
MAX_POISSON_RATE = np.float64(1e15)


def _truncated_support_point(moments, size, n, theta, lower, upper, *noise):
    log_q, mean, _ = moments(theta, lower, upper)
    point, *_ = pt.broadcast_arrays(n * pt.exp(log_q) * mean, lower, upper, *noise)
    if not rv_size_is_none(size):
        point = pt.full(size, point)
    return point


def _truncated_methods(moments, order, max_rate=MAX_RATE):
    """``support_point`` and ``logp`` of a truncated family from its ``moments``.

    ``order`` compares the bounds (``pt.lt``: continuous records, ``pt.le``: integer ones).
    """

    def support_point(rv, size, n, theta, lower, upper, epsilon, sensitivity):
        return _truncated_support_point(moments, size, n, theta, lower, upper, epsilon, sensitivity)

    def logp(value, n, theta, lower, upper, epsilon, sensitivity):
        def convolve(ok, log_q, mean, var):
            return emath.truncated_sum_laplace_logp(
                value, n, log_q, mean, pt.maximum(var, 0.0), sensitivity / epsilon
            )

        noise_ok = [epsilon > 0, sensitivity > 0]
        return _truncated_logp(
            moments, value, n, theta, lower, upper, order, max_rate,
            noise_ok, "epsilon > 0, sensitivity > 0", convolve,
        )  # fmt: skip

    return support_point, logp


def _truncated_gaussian_methods(moments, order, max_rate=MAX_RATE):
    """``support_point`` and ``logp`` of a truncated family released with Gaussian noise."""

    def support_point(rv, size, n, theta, lower, upper, noise_sigma):
        return _truncated_support_point(moments, size, n, theta, lower, upper, noise_sigma)

    def logp(value, n, theta, lower, upper, noise_sigma):
        def convolve(ok, log_q, mean, var):
            sigma = pt.switch(ok, noise_sigma, 1.0)
            return emath.truncated_sum_gaussian_logp(value, n, log_q, mean, var, sigma)

        return _truncated_logp(
            moments, value, n, theta, lower, upper, order, max_rate,
            [noise_sigma > 0], "noise sigma > 0", convolve,
        )  # fmt: skip

    return support_point, logp


def _truncated_logp(
    moments, value, n, theta, lower, upper, order, max_rate, noise_ok, noise_msg, convolve
):
    """The CLT log density of a truncated family, ``convolve(ok, log q, mean, var)`` adding
    the noise; refused parameter sets are evaluated at harmless values (no NaN gradients)."""
    conds = [
        n >= 0,
        pt.eq(n, pt.floor(n)),
        theta >= 1.0 / MAX_RATE,
        theta <= max_rate,
        lower >= 0,
        order(lower, upper),
        *noise_ok,
    ]
    ok = conds[0]
    for c in conds[1:]:
        ok = ok & c
    safe_theta = pt.switch(ok, theta, 1.0)
    safe_lo = pt.switch(ok, lower, 0.0)
    safe_hi = pt.switch(ok, upper, 1.0)
    kw = {}
    if "width" in inspect.signature(moments).parameters:
        # constant bounds: the integer families sum the pmf over the interval directly
        kw["width"] = emath._static_width(lower, upper)
    res = convolve(ok, *moments(safe_theta, safe_lo, safe_hi, **kw))
    res = pt.switch(pt.isinf(value), -np.inf, res)
    return check_parameters(
        res,
        *conds,
        msg=f"n non-negative integer, {1 / MAX_RATE:g} <= rate <= {max_rate:g}, "
        f"0 <= lower < upper, {noise_msg}",
    )


class _GaussianTruncatedSum(_NoImputeContinuous):
    """A truncated family released with Gaussian noise (what the Laplace-named classes build
    for ``noise=noise.Gaussian(sigma)``; the subclasses are public and usable directly)."""

    _param = "lam"
    _integer = False

    @classmethod
    def dist(cls, n, theta, lower, upper, noise_sigma, **kwargs):
        _check_count("n", n)
        check_positive(cls._param, theta)
        _check_bounds(lower, upper, integer=cls._integer)
        check_positive("noise sigma", noise_sigma)
        params = {"n": n, cls._param: theta, "lower": lower, "upper": upper}
        params["noise sigma"] = noise_sigma
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        return super().dist([n, theta, lower, upper, noise_sigma], **kwargs)


class GaussianNoisyTruncatedExponential(_GaussianTruncatedSum):
    r"""Noisy sum of exponential records inside declared bounds, with Gaussian noise.

    :class:`LaplaceNoisyTruncatedExponential` with ``noise=noise.Gaussian(sigma)`` returns
    this distribution: the release is :math:`y = \hat s + N(0, \sigma^2)`, and the likelihood
    :math:`N(n q \hat\mu,\ V + \sigma^2)`, :math:`V = n q \hat\Sigma + n q (1-q) \hat\mu^2`,
    is exact within the random-sum CLT model (the convolution of two normals; no latent
    variable).  Draws are releases.

    Parameters
    ----------
    n : tensor_like of int
        Number of records before truncation (public), a non-negative integer.
    lam : tensor_like of float
        Rate of the exponential records, > 0.
    lower, upper : tensor_like of float
        Declared truncation bounds, ``0 <= lower < upper``.
    noise_sigma : tensor_like of float
        Standard deviation of the Gaussian noise on the sum, > 0.
    """

    rv_type = TruncatedExponentialSumGaussianRV
    rv_op = TruncatedExponentialSumGaussianRV.rv_op
    _param = "lam"
    _integer = False

    @classmethod
    def dist(cls, n, lam, lower, upper, noise_sigma, **kwargs):
        return super().dist(n, lam, lower, upper, noise_sigma, **kwargs)

    support_point, logp = _truncated_gaussian_methods(emath.truncated_exponential_moments, pt.lt)


class GaussianNoisyTruncatedPoisson(_GaussianTruncatedSum):
    r"""Noisy sum of Poisson counts inside declared bounds, with Gaussian noise.

    :class:`LaplaceNoisyTruncatedPoisson` with ``noise=noise.Gaussian(sigma)`` returns this
    distribution; the model is that of :class:`GaussianNoisyTruncatedExponential` for records
    :math:`x_i \sim \mathrm{Poisson}(\mu)` and integer bounds.

    Parameters
    ----------
    n : tensor_like of int
        Number of records before truncation (public), a non-negative integer.
    mu : tensor_like of float
        Rate of the Poisson records, > 0.
    lower, upper : tensor_like of int
        Declared truncation bounds, ``0 <= lower < upper``.
    noise_sigma : tensor_like of float
        Standard deviation of the Gaussian noise on the sum, > 0.
    """

    rv_type = TruncatedPoissonSumGaussianRV
    rv_op = TruncatedPoissonSumGaussianRV.rv_op
    _param = "mu"
    _integer = True

    @classmethod
    def dist(cls, n, mu, lower, upper, noise_sigma, **kwargs):
        return super().dist(n, mu, lower, upper, noise_sigma, **kwargs)

    support_point, logp = _truncated_gaussian_methods(
        emath.truncated_poisson_moments, pt.le, MAX_POISSON_RATE
    )


class LaplaceNoisyTruncatedExponential(_TruncatedSum):
    r"""Noisy sum of exponential records inside declared bounds (random-sum CLT likelihood).

    The data holder has :math:`n` records :math:`x_i \sim \mathrm{Exponential}(\lambda)`
    (rate :math:`\lambda`), drops every record outside the declared bounds :math:`[a, b]`
    (fixed before seeing the data) and releases
    :math:`y = \hat s + \mathrm{Laplace}(0, \Delta/\varepsilon)`,
    :math:`\hat s = \sum_i \mathbf 1[a \le x_i \le b]\, x_i`, with
    :math:`\Delta = \max(|a|, |b|, b - a) = b` (Bernstein & Sheldon 2018, Sec. 3.3, App. C;
    :func:`pymc_dpnoise.mechanisms.release_truncated_sum`).  The number of kept records is
    :math:`N \sim \mathrm{Binomial}(n, q)`, :math:`q = e^{-\lambda a} - e^{-\lambda b}`, and
    the random-sum CLT (Prop. 1) gives

    .. math::

        \hat s \approx N\bigl(n q \hat\mu,\; n q \hat\Sigma + n q (1-q) \hat\mu^2\bigr),\qquad
        \hat\mu = a + L\Bigl(\tfrac1u - \tfrac{1}{e^u - 1}\Bigr),\
        \hat\Sigma = L^2\Bigl(\tfrac1{u^2} - \tfrac{e^u}{(e^u-1)^2}\Bigr),

    :math:`L = b - a`, :math:`u = \lambda L` (the truncated family's moments, Lemma 1, in
    closed form).  The Laplace noise is integrated out exactly (normal--Laplace convolution,
    :func:`pymc_dpnoise.math.expfam.normal_laplace_logp`): there is no latent variable, and
    the likelihood is smooth in :math:`\lambda` at every :math:`\varepsilon`.

    **What is approximated**: only the normality of :math:`\hat s` (the moments are exact).
    The error is that of the CLT for a sum of about :math:`nq` bounded terms, and the Laplace
    noise only smooths it; see the docs page for measured errors against Monte Carlo.

    ========  =============================================================================
    Support   :math:`y \in \mathbb{R}`
    Mean      :math:`n q \hat\mu` (exact)
    Variance  :math:`n q \hat\Sigma + n q (1-q)\hat\mu^2 + 2\beta^2` (exact),
              :math:`\beta = \Delta/\varepsilon`
    ========  =============================================================================

    Parameters
    ----------
    n : tensor_like of int
        Number of records before truncation (public), a non-negative integer.
    lam : tensor_like of float
        Rate of the exponential records, > 0.
    lower, upper : tensor_like of float
        Declared truncation bounds, ``0 <= lower < upper`` (never computed from the data).
    epsilon : tensor_like of float, optional
        Privacy budget of the release, > 0 (Laplace noise of scale ``sensitivity / epsilon``).
        Give exactly one of ``epsilon`` and ``noise``.
    sensitivity : tensor_like of float, optional
        L1 sensitivity of the truncated sum; default ``max(|lower|, |upper|, upper - lower)``.
        Only with ``epsilon``.
    noise : pymc_dpnoise.noise.Laplace or pymc_dpnoise.noise.Gaussian, optional
        The noise the release added, instead of ``epsilon``.  ``Laplace(b)`` is the
        ``epsilon`` path with scale :math:`b`; ``Gaussian(sigma)`` gives the likelihood
        :math:`N(n q\hat\mu,\ V + \sigma^2)`, exact within the CLT model (the convolution of
        two normals; variance :math:`V + \sigma^2` instead of :math:`V + 2\beta^2`), and
        draws that add :math:`N(0, \sigma^2)`.  The integer kinds are refused (see the module
        docstring: the CLT sum has no lattice).

    Random draws run the mechanism on ``n`` simulated records (memory grows with ``n`` times
    the number of draws).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(0)
    >>> release = pmd.mechanisms.release_truncated_sum(
    ...     rng.exponential(2.0, size=500), lower=0.0, upper=8.0, epsilon=0.5, rng=rng
    ... )
    >>> with pm.Model() as model:
    ...     lam = pm.Gamma("lam", 2.0, 2.0)
    ...     y = pmd.LaplaceNoisyTruncatedExponential(
    ...         "y", n=release.n, lam=lam, lower=release.lower, upper=release.upper,
    ...         epsilon=release.epsilon, observed=release.value,
    ...     )
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    rv_type = TruncatedExponentialSumRV
    rv_op = TruncatedExponentialSumRV.rv_op
    _param = "lam"
    _integer = False

    @classmethod
    def dist(cls, n, lam, lower, upper, epsilon=None, sensitivity=None, *, noise=None, **kwargs):
        return super().dist(n, lam, lower, upper, epsilon, sensitivity, noise=noise, **kwargs)

    support_point, logp = _truncated_methods(emath.truncated_exponential_moments, pt.lt)


class LaplaceNoisyTruncatedPoisson(_TruncatedSum):
    r"""Noisy sum of Poisson counts inside declared bounds (random-sum CLT likelihood).

    As :class:`LaplaceNoisyTruncatedExponential`, for records
    :math:`x_i \sim \mathrm{Poisson}(\mu)` (per-record rate :math:`\mu`) and integer bounds
    :math:`\{a, \dots, b\}`: records outside are dropped (not clipped: for clipping, see
    :class:`~pymc_dpnoise.LaplaceNoisyPoisson`, which is exact), the kept counts are summed and
    released with Laplace noise of scale :math:`\Delta/\varepsilon`, :math:`\Delta = b`.  The
    truncated moments are exact,

    .. math::

        q = P(a \le x \le b),\quad \hat\mu = \mu(1 + r_1),\quad
        \hat\Sigma = \hat\mu + \mu^2 (r_2 - r_1^2),

    :math:`r_1 = (P(a-1) - P(b))/q`, :math:`r_2 = (P(a-2) - P(a-1) + P(b) - P(b-1))/q`
    (:math:`P` the Poisson pmf), and the released value has the random-sum CLT density
    convolved with the Laplace noise in closed form.  Only the normality of the truncated sum
    is approximated (a sum of about :math:`nq` integers, so the approximation also ignores its
    lattice; the Laplace noise smooths both).

    The mean :math:`n q \hat\mu = n\mu P(a - 1 \le x \le b - 1)` rises and then falls as
    :math:`\mu` grows past the interval (ever more records are dropped), so one released sum
    is usually matched by two rates, and with a single release the posterior can have two
    modes: for the example below (400 records of rate 3 on :math:`\{0, \dots, 10\}`) near
    :math:`\mu = 3.1` and :math:`\mu = 12`, with the log density about 90 nats lower between
    them (Gamma(2, 0.5) prior).
    NUTS chains do not cross such a gap; start them near the plausible rate (``initvals``), or
    add releases or prior information that tell the two apart, and compare chains.

    ========  =============================================================================
    Support   :math:`y \in \mathbb{R}`
    Mean      :math:`n q \hat\mu` (exact)
    Variance  :math:`n q \hat\Sigma + n q (1-q)\hat\mu^2 + 2\beta^2` (exact)
    ========  =============================================================================

    Parameters
    ----------
    n : tensor_like of int
        Number of records before truncation (public).
    mu : tensor_like of float
        Poisson rate of one record, > 0.
    lower, upper : tensor_like of int
        Declared bounds, integers with ``0 <= lower <= upper``.
    epsilon : tensor_like of float, optional
        Privacy budget of the release, > 0; exactly one of ``epsilon`` and ``noise``.
    sensitivity : tensor_like of float, optional
        Default ``max(lower, upper, upper - lower) = upper``.  Only with ``epsilon``.
    noise : pymc_dpnoise.noise.Laplace or pymc_dpnoise.noise.Gaussian, optional
        As :class:`LaplaceNoisyTruncatedExponential`: ``Gaussian(sigma)`` is exact within the
        CLT model.  The integer kinds (discrete Laplace, rounded Laplace, discrete Gaussian),
        though they are what integer sums get from OpenDP, Tumult or python-dp, are refused:
        their exact likelihood needs the lattice of the sum, which the CLT normal ignores.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(0)
    >>> release = pmd.mechanisms.release_truncated_sum(
    ...     rng.poisson(3.0, size=400), lower=0, upper=10, epsilon=1.0, rng=rng, family="poisson"
    ... )
    >>> with pm.Model() as model:
    ...     mu = pm.Gamma("mu", 2.0, 0.5)
    ...     y = pmd.LaplaceNoisyTruncatedPoisson(
    ...         "y", n=release.n, mu=mu, lower=release.lower, upper=release.upper,
    ...         epsilon=release.epsilon, observed=release.value,
    ...     )
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    rv_type = TruncatedPoissonSumRV
    rv_op = TruncatedPoissonSumRV.rv_op
    _param = "mu"
    _integer = True

    @classmethod
    def dist(cls, n, mu, lower, upper, epsilon=None, sensitivity=None, *, noise=None, **kwargs):
        return super().dist(n, mu, lower, upper, epsilon, sensitivity, noise=noise, **kwargs)

    support_point, logp = _truncated_methods(
        emath.truncated_poisson_moments, pt.le, max_rate=MAX_POISSON_RATE
    )


LaplaceNoisyTruncatedExponential._gaussian = GaussianNoisyTruncatedExponential
LaplaceNoisyTruncatedPoisson._gaussian = GaussianNoisyTruncatedPoisson


# --------------------------------------------------------------------------------------------
# Multinomial counts
# --------------------------------------------------------------------------------------------


class _NoisyMultinomialRV(SymbolicRandomVariable):
    """Draws: s ~ Multinomial(n, p), released as s + Laplace noise on every count.

    The latent input (noise variances or standard normals) is not used by the draws: they are
    the release mechanism itself, so predictive draws are new releases.
    """

    @classmethod
    def rv_op(cls, n, p, latent, epsilon, sensitivity, *, size=None, rng=None):
        size, rng, n, p, latent, epsilon, sensitivity = _rv_inputs(
            cls, size, rng, n, p, latent, epsilon, sensitivity
        )
        p_norm = p / pt.sum(p, axis=-1, keepdims=True)
        next_rng, s = multinomial(
            pt.cast(pt.round(n), "int64"), p_norm, size=size, rng=rng, return_next_rng=True
        )
        scale = pt.shape_padright(sensitivity / epsilon)
        final_rng, y = _plus_laplace(pt.cast(s, "float64"), scale, s.shape, next_rng)
        return _rv_node(cls, rng, size, [n, p, latent, epsilon, sensitivity], final_rng, y)


class NoisyMultinomialMixtureRV(_NoisyMultinomialRV):
    name = "laplace_noisy_multinomial"
    extended_signature = "[rng],[size],(),(k),(k),(),()->[rng],(k)"
    _print_name = ("LaplaceNoisyMultinomial", "\\operatorname{LapNoisyMultinomial}")


class NoisyMultinomialCountsRV(_NoisyMultinomialRV):
    name = "laplace_noisy_multinomial_counts"
    extended_signature = "[rng],[size],(),(k),(m),(),()->[rng],(k)"
    _print_name = ("LaplaceNoisyMultinomial", "\\operatorname{LapNoisyMultinomial}")


def _check_simplex(p):
    v = constant_value(p, "p")
    if v is None:
        return
    check_finite("p", v)
    if v.ndim == 0:
        raise ValueError("`p` must have a category axis (last axis, length k >= 2)")
    if v.shape[-1] < 2:
        raise ValueError(f"`p` must have k >= 2 categories; got {v.shape[-1]}")
    if np.any(v < 0) or np.any(np.abs(v.sum(-1) - 1) > 1e-8):
        raise ValueError("`p` must be a probability vector (entries >= 0, summing to 1)")


def _multinomial_checks(res, n, p, epsilon, sensitivity=None):
    """``check_parameters`` of the multinomial densities (``sensitivity=None``: Gaussian
    noise, ``epsilon`` is then its sigma)."""
    if sensitivity is None:
        noise_ok, noise_msg = [epsilon > 0], "noise sigma > 0"
    else:
        noise_ok, noise_msg = [epsilon > 0, sensitivity > 0], "epsilon > 0, sensitivity > 0"
    return check_parameters(
        res,
        n >= 0,
        pt.eq(n, pt.floor(n)),
        pt.all(p >= 0),
        *noise_ok,
        msg=f"n non-negative integer, p >= 0, {noise_msg}",
    )


def _multinomial_support_point(rv, size, n, p, latent, epsilon, sensitivity):
    """``support_point`` of both building blocks: the mean counts (the latent is not used)."""
    mean = pt.shape_padright(n) * p / pt.sum(p, axis=-1, keepdims=True)
    point, *_ = pt.broadcast_arrays(
        mean, pt.shape_padright(epsilon), pt.shape_padright(sensitivity)
    )
    if not rv_size_is_none(size):
        point = pt.full(pt.concatenate([size, [point.shape[-1]]]), point)
    return point


def _validate_multinomial(n, p, epsilon, sensitivity):
    _check_count("n", n)
    _check_simplex(p)
    check_positive("epsilon", epsilon)
    check_positive("sensitivity", sensitivity)


class LaplaceNoisyMultinomialGivenNoiseVar(_NoImputeContinuous):
    r"""Noisy multinomial counts given the per-count noise variances (building block).

    :math:`y \sim N(np,\, n(\operatorname{diag}p - pp^T) + \operatorname{diag}\sigma^2)` with
    :math:`\sigma^2 = 2\beta^2 w`, :math:`\beta` = ``sensitivity / epsilon``; with
    :math:`w_j \sim \mathrm{Exponential}(1)` the noise is exactly Laplace.  Use
    :func:`LaplaceNoisyMultinomial`, which adds the latent :math:`w`; draws ignore ``w``
    (they are the release: multinomial counts plus Laplace noise).
    """

    rv_type = NoisyMultinomialMixtureRV
    rv_op = NoisyMultinomialMixtureRV.rv_op

    @classmethod
    def dist(cls, n, p, w, epsilon, sensitivity=2.0, **kwargs):
        _validate_multinomial(n, p, epsilon, sensitivity)
        return super().dist([n, p, w, epsilon, sensitivity], **kwargs)

    support_point = _multinomial_support_point

    def logp(value, n, p, w, epsilon, sensitivity):
        scale = sensitivity / epsilon
        noise_var = 2.0 * pt.shape_padright(pt.sqr(scale)) * w
        res = emath.multinomial_normal_mixture_logp(value, n, p, noise_var)
        return _multinomial_checks(res, n, p, epsilon, sensitivity)


class LaplaceNoisyMultinomialGivenCounts(_NoImputeContinuous):
    r"""Noisy multinomial counts given :math:`k-1` standard normals (building block).

    The counts are :math:`s = np + Lz` (:func:`pymc_dpnoise.math.expfam.multinomial_counts_from_normal`)
    and each released count is :math:`\mathrm{Laplace}(s_j, \beta)`.  Use
    :func:`LaplaceNoisyMultinomial` with ``latent="counts"``.
    """

    rv_type = NoisyMultinomialCountsRV
    rv_op = NoisyMultinomialCountsRV.rv_op

    @classmethod
    def dist(cls, n, p, z, epsilon, sensitivity=2.0, **kwargs):
        _validate_multinomial(n, p, epsilon, sensitivity)
        return super().dist([n, p, z, epsilon, sensitivity], **kwargs)

    support_point = _multinomial_support_point

    def logp(value, n, p, z, epsilon, sensitivity):
        counts = emath.multinomial_counts_from_normal(z, n, p)
        res = emath.multinomial_laplace_logp(value, counts, sensitivity / epsilon)
        return _multinomial_checks(res, n, p, epsilon, sensitivity)


class NoisyMultinomialGaussianRV(SymbolicRandomVariable):
    """Draws: s ~ Multinomial(n, p), released as s + N(0, sigma^2) on every count."""

    name = "gaussian_noisy_multinomial"
    extended_signature = "[rng],[size],(),(k),()->[rng],(k)"
    _print_name = ("LaplaceNoisyMultinomial", "\\operatorname{GaussNoisyMultinomial}")

    @classmethod
    def rv_op(cls, n, p, noise_sigma, *, size=None, rng=None):
        size, rng, n, p, noise_sigma = _rv_inputs(cls, size, rng, n, p, noise_sigma)
        p_norm = p / pt.sum(p, axis=-1, keepdims=True)
        next_rng, s = multinomial(
            pt.cast(pt.round(n), "int64"), p_norm, size=size, rng=rng, return_next_rng=True
        )
        final_rng, e = normal(
            0.0, pt.shape_padright(noise_sigma), size=s.shape, rng=next_rng, return_next_rng=True
        )
        return _rv_node(cls, rng, size, [n, p, noise_sigma], final_rng, pt.cast(s, "float64") + e)


class GaussianNoisyMultinomial(_NoImputeContinuous):
    r"""Noisy multinomial counts with Gaussian noise :math:`N(0, \sigma^2)` on every count.

    :math:`y \sim N(np,\, n(\operatorname{diag}p - pp^T) + \sigma^2 I)`: the normal
    approximation of the counts convolved with the noise, exact within that approximation and
    with no latent variable (:func:`pymc_dpnoise.math.expfam.multinomial_normal_mixture_logp`
    with every noise variance :math:`\sigma^2`).  Created by :func:`LaplaceNoisyMultinomial`
    with ``noise=noise.Gaussian(sigma)`` (and its ``.dist``); draws are releases
    (multinomial counts plus Gaussian noise).
    """

    rv_type = NoisyMultinomialGaussianRV
    rv_op = NoisyMultinomialGaussianRV.rv_op

    @classmethod
    def dist(cls, n, p, noise_sigma, **kwargs):
        _check_count("n", n)
        _check_simplex(p)
        check_positive("noise sigma", noise_sigma)
        return super().dist([n, p, noise_sigma], **kwargs)

    def support_point(rv, size, n, p, noise_sigma):
        return _multinomial_support_point(rv, size, n, p, None, noise_sigma, 1.0)

    def logp(value, n, p, noise_sigma):
        ok = noise_sigma > 0
        noise_var = pt.shape_padright(pt.sqr(pt.switch(ok, noise_sigma, 1.0)))
        res = emath.multinomial_normal_mixture_logp(value, n, p, noise_var)
        return _multinomial_checks(res, n, p, noise_sigma)


_LATENTS = ("auto", "noise_variance", "counts")


def auto_latent(n, epsilon, sensitivity):
    """``"counts"`` where the Laplace noise dominates every count's sampling spread, else
    ``"noise_variance"`` (see :func:`LaplaceNoisyMultinomial`)."""
    vals = [constant_value(v) for v in (n, epsilon, sensitivity)]
    if any(v is None for v in vals):
        return "noise_variance"
    n, eps, sens = np.broadcast_arrays(*vals)
    noise_var = 2.0 * (sens / eps) ** 2
    return "counts" if np.all(noise_var >= n / 4.0) else "noise_variance"


def LaplaceNoisyMultinomial(
    name,
    n,
    p,
    epsilon=None,
    sensitivity=None,
    *,
    noise=None,
    observed=None,
    dims=None,
    shape=None,
    latent="auto",
):
    r"""Noisy category counts (Laplace noise on every count), added to the current model.

    The data holder counts :math:`n` labelled records into :math:`k` categories,
    :math:`s \sim \mathrm{Multinomial}(n, p)`, and releases :math:`y_j = s_j + \mathrm{Laplace}(0,
    \beta)` independently for every category, :math:`\beta = \Delta/\varepsilon`,
    :math:`\Delta = 2` (replacing one record moves one unit between two counts;
    :func:`pymc_dpnoise.mechanisms.release_multinomial_counts`).  There is no closed form for
    :math:`p(y \mid p)` in :math:`k` dimensions, so, as in Bernstein & Sheldon (2018, Sec. 3.2),
    the counts are approximated by a normal,
    :math:`s \approx N(np, n(\operatorname{diag} p - pp^T))`, and one latent vector is added
    to the model for NUTS to integrate, in one of two parametrisations, each efficient in its
    own regime (``benchmarks/results/expfam_multinomial_latent.md``):

    * ``latent="noise_variance"``: the Laplace noise is written as a scale mixture of
      normals, :math:`y_j = s_j + \sigma_j e_j`, :math:`\sigma_j^2 = 2\beta^2 w_j`,
      :math:`w_j \sim \mathrm{Exponential}(1)` (exact: this *is* the Laplace law), and the
      counts are integrated out in closed form,
      :math:`y \mid w \sim N(np, n(\operatorname{diag}p - pp^T) + \operatorname{diag}\sigma^2)`
      (diagonal plus rank one: :math:`O(k)`).  The latent ``{name}_noise_w`` has the shape of
      :math:`y` (same ``dims``) and its prior depends on nothing.  Efficient when the counts'
      sampling spread is comparable to or larger than the noise (moderate and large
      :math:`\varepsilon`: :math:`w` then barely interacts with :math:`p`); when the noise
      dominates, small :math:`w` sharpens the likelihood of :math:`p` (a funnel, divergences).
    * ``latent="counts"``: the paper's latent counts, non-centred: :math:`k-1` standard
      normals ``{name}_counts_z`` mapped to :math:`s = np + Lz` (closed-form Cholesky factor),
      and :math:`y_j \sim \mathrm{Laplace}(s_j, \beta)`.  Efficient when the noise dominates
      (the counts then follow their prior given :math:`p`); when it does not, the Laplace
      kernel pins :math:`s` to :math:`y`, which makes :math:`z` a sharp curved function of
      :math:`p` (a thin ridge that NUTS crosses with tiny steps: tree depth 7 at
      :math:`\varepsilon = 1`, :math:`n = 1000`).
    * ``latent="auto"`` (default): ``"counts"`` if the noise variance :math:`2\beta^2` is at
      least :math:`n/4` (the largest possible count variance) for every release, else
      ``"noise_variance"`` (also when ``n`` or ``epsilon`` are symbolic).

    **What is approximated**: only :math:`p(s \mid p)` by the normal with the multinomial's
    exact mean and covariance (it ignores the lattice, the skewness of rare categories and
    the constraint :math:`s_j \ge 0`); the Laplace noise and the sum constraint
    :math:`\sum_j s_j = n` are exact.  Accurate when every expected count :math:`np_j` is
    large compared with 1 or the noise dominates (:math:`\beta^2 \gg np_j`).

    This is a model-building helper, not a distribution class: it must be called inside a
    :class:`pymc.Model`, creates the latent and the observed variable, and returns the
    latter.  There is no ``.dist()`` (it raises ``NotImplementedError``).  Draws of the
    returned variable (prior and posterior predictive) are releases: multinomial counts plus
    Laplace noise on every count.

    Parameters
    ----------
    name : str
        Name of the released counts; the latent is ``f"{name}_noise_w"`` or
        ``f"{name}_counts_z"``.
    n : tensor_like of int
        Number of records behind each release (batch shape).
    p : tensor_like of float
        Category probabilities, last axis of length :math:`k \ge 2`.
    epsilon : tensor_like of float, optional
        Privacy budget of the whole count vector, > 0 (batch shape).  Exactly one of
        ``epsilon`` and ``noise``.
    sensitivity : tensor_like of float, optional
        L1 sensitivity of the count vector (the Laplace scale is ``sensitivity / epsilon``);
        ``None`` is 2.0.  Only with ``epsilon``.
    noise : pymc_dpnoise.noise.Laplace or pymc_dpnoise.noise.Gaussian, optional
        The noise on every count, instead of ``epsilon``.  ``Laplace(b)`` is the ``epsilon``
        path with scale :math:`b` (``latent`` as above).  ``Gaussian(sigma)`` needs no latent:
        :math:`y \sim N(np,\ n(\operatorname{diag}p - pp^T) + \sigma^2 I)` in closed form
        (exact within the normal approximation of the counts), only the observed variable is
        added, and ``LaplaceNoisyMultinomial.dist(n, p, noise=noise.Gaussian(sigma))`` exists.
        The integer kinds are refused (the normal approximation has no lattice; see the
        module docstring).
    observed : array_like, optional
        Released counts, shape ``(*batch, k)``.
    dims : tuple of str, optional
        Dims of the released counts (last one the category).  With ``latent="counts"`` a
        coordinate ``f"{dims[-1]}_free"`` holding the first ``k - 1`` categories is added.
    shape : tuple of int, optional
        Shape of the released counts when neither ``observed`` nor ``dims`` fix it.
    latent : {"auto", "noise_variance", "counts"}
        Laplace noise only (leave at ``"auto"`` with Gaussian noise).

    Returns
    -------
    TensorVariable
        The released counts (the observed variable).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(3)
    >>> labels = rng.choice(3, size=(4, 500), p=[0.5, 0.3, 0.2])
    >>> release = pmd.mechanisms.release_multinomial_counts(labels, 3, 1.0, rng)
    >>> coords = {"region": list("abcd"), "category": ["x", "y", "z"]}
    >>> with pm.Model(coords=coords) as model:
    ...     p = pm.Dirichlet("p", np.ones(3), dims="category")
    ...     y = pmd.LaplaceNoisyMultinomial(
    ...         "y", n=release.n, p=p, epsilon=release.epsilon,
    ...         observed=release.value, dims=("region", "category"),
    ...     )
    >>> sorted(v.name for v in model.free_RVs)  # noise variance 8 < n/4: the mixture latent
    ['p', 'y_noise_w']
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """
    if latent not in _LATENTS:
        raise ValueError(f"`latent` must be one of {_LATENTS}; got {latent!r}")
    model = pm.modelcontext(None)
    spec = _resolve_noise("LaplaceNoisyMultinomial", epsilon, sensitivity, noise)
    gaussian = spec is not None and spec.kind == "gaussian"
    if gaussian:
        if latent != "auto":
            raise ValueError(
                f"`latent`={latent!r}: with Gaussian noise the released counts have a closed-form "
                "density (no latent is added); leave `latent` at 'auto'"
            )
        _check_count("n", n)
        _check_simplex(p)
        epsilon = np.asarray(spec.param, dtype="float64")  # the batch shape below
    else:
        if spec is not None:  # Laplace: the budget at the default sensitivity 2
            epsilon = 2.0 / np.asarray(spec.param, dtype="float64")
        if sensitivity is None:
            sensitivity = 2.0
        _validate_multinomial(n, p, epsilon, sensitivity)
        if latent == "auto":
            latent = auto_latent(n, epsilon, sensitivity)
    n_t, p_t, eps_t = map(_f64, (n, p, epsilon))
    sens_t = None if gaussian else _f64(sensitivity)
    if observed is not None:
        obs = constant_value(observed, f"{name}: observed")
        if obs is not None:
            out_shape = obs.shape
        else:
            out_shape = None
    else:
        out_shape = None
    if out_shape is None and shape is not None:
        out_shape = tuple(np.atleast_1d(shape))
    if out_shape is None and dims is None:
        # batch from n, epsilon and the batch axes of p; k from p (all must be known now)
        pv = constant_value(p, "p")
        nv, ev = constant_value(n, "n"), constant_value(epsilon, "epsilon")
        if pv is None or nv is None or ev is None:
            raise ValueError(
                f"{name}: give `observed`, `dims` or `shape`: the shape of the released counts "
                "cannot be inferred from symbolic parameters"
            )
        batch = np.broadcast_shapes(pv.shape[:-1], nv.shape, ev.shape)
        out_shape = (*batch, pv.shape[-1])
    if out_shape is not None and len(out_shape) < 1:
        raise ValueError(f"{name}: the released counts need a category axis")

    def _latent_kwargs(last):
        if dims is not None:
            dims_t = (dims,) if isinstance(dims, str) else tuple(dims)
            if last == "free":
                cat = dims_t[-1]
                free = f"{cat}_free"
                if free not in model.coords:
                    labels = model.coords.get(cat)
                    if labels is None:
                        raise ValueError(f"{name}: dims {dims_t} need coords for {cat!r}")
                    model.add_coord(free, list(labels)[:-1])
                dims_t = (*dims_t[:-1], free)
            return dict(dims=dims_t)
        shp = tuple(out_shape)
        if last == "free":
            shp = (*shp[:-1], shp[-1] - 1)
        return dict(shape=shp)

    obs_kwargs = dict(observed=observed)
    if dims is not None:
        obs_kwargs["dims"] = dims
    else:
        obs_kwargs["shape"] = tuple(out_shape)
    if gaussian:
        return GaussianNoisyMultinomial(name, n_t, p_t, eps_t, **obs_kwargs)
    if latent == "noise_variance":
        w = pm.Exponential(f"{name}_noise_w", 1.0, **_latent_kwargs("full"))
        return LaplaceNoisyMultinomialGivenNoiseVar(name, n_t, p_t, w, eps_t, sens_t, **obs_kwargs)
    z = pm.Normal(f"{name}_counts_z", 0.0, 1.0, **_latent_kwargs("free"))
    return LaplaceNoisyMultinomialGivenCounts(name, n_t, p_t, z, eps_t, sens_t, **obs_kwargs)


def _multinomial_dist(n, p, *rest, noise=None, **kwargs):
    """``LaplaceNoisyMultinomial.dist``: with Gaussian noise the stand-alone distribution
    (``dist(n, p, noise=noise.Gaussian(sigma))``); otherwise refused with the reason (the
    helper needs a model)."""
    if noise is not None and isinstance(noise, noise_mod.Gaussian):
        if rest or "epsilon" in kwargs or "sensitivity" in kwargs:
            _resolve_noise(
                "LaplaceNoisyMultinomial.dist",
                rest[0] if rest else kwargs.pop("epsilon", None),
                rest[1] if len(rest) > 1 else kwargs.pop("sensitivity", None),
                noise,
            )
        return GaussianNoisyMultinomial.dist(n, p, noise.param, **kwargs)
    raise NotImplementedError(
        "LaplaceNoisyMultinomial.dist: there is no stand-alone distribution. LaplaceNoisyMultinomial "
        "is a model-building helper: the released counts have no closed-form density, so it adds "
        "a latent vector (noise variances or latent counts) to the current model. Call it inside "
        "a pm.Model (pm.draw of the variable it returns, and the prior and posterior predictive, "
        "draw releases), or use LaplaceNoisyMultinomialGivenNoiseVar.dist(n, p, w, epsilon) with "
        "your own latent w. (With noise=noise.Gaussian(sigma) there is a stand-alone "
        "distribution: LaplaceNoisyMultinomial.dist(n, p, noise=noise.Gaussian(sigma)).)"
    )


LaplaceNoisyMultinomial.dist = _multinomial_dist
