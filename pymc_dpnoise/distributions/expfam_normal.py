r"""Noisy truncated sums of :math:`(x, x^2)` of Gaussian records (Bernstein & Sheldon, Sec. 3.3).

* :func:`LaplaceNoisyTruncatedNormal`: model-building helper (adds one standard-normal latent
  per release and the observed pair to the current model), the user-facing entry point;
* :class:`LaplaceNoisyTruncatedNormalGivenSum`: the building block, the density of a released
  pair given that latent;
* :class:`GaussianNoisyTruncatedNormal`: the released pair with Gaussian noise
  (``noise=noise.Gaussian(sigma)`` of :func:`LaplaceNoisyTruncatedNormal`): the CLT normal
  plus :math:`N(0, \sigma^2 I)` is :math:`N(m, LL^T + \sigma^2 I)`, exact within the CLT model,
  with no latent.

**Other noise** (``noise=``, a spec of :mod:`pymc_dpnoise.noise`, instead of ``epsilon``), as
for the other truncated families (:mod:`pymc_dpnoise.distributions.expfam`):
:class:`~pymc_dpnoise.noise.Laplace` ``(b)`` is the ``epsilon`` path with scale :math:`b` on
*each* of the two sums (the pair has one L1 sensitivity, so ``epsilon`` already puts the same
scale ``sensitivity / epsilon`` on both); :class:`~pymc_dpnoise.noise.Gaussian` ``(sigma)``
puts :math:`N(0, \sigma^2)` on each sum (one ``sigma`` per release, as the multinomial's one
``sigma`` for every count); the integer kinds are refused, with the same reason.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.tensor.random.basic import normal

from ..math import expfam_normal as nmath
from ..mechanisms.expfam_normal import truncated_normal_sum_sensitivity
from ..validation import check_finite, check_positive, constant_value
from ._common import (
    _all_finite,
    _check_value_batch,
    _check_value_width,
    _f64,
    _finite_reports,
    _ninf_where_not,
    _NoImputeContinuous,
    _plus_laplace,
    _refuse_cdfs,
    _rv_inputs,
    _rv_node,
    _to_floatx,
)
from .expfam import _check_count, _resolve_noise

__all__ = [
    "LaplaceNoisyTruncatedNormal",
    "LaplaceNoisyTruncatedNormalGivenSum",
    "truncated_normal_sum_sensitivity",
]


class TruncatedNormalSumRV(SymbolicRandomVariable):
    """Draws: n normal records, those outside [lower, upper] dropped, the sums of x and x^2,
    each + Laplace.  The latent ``z`` is an input of the density only: draws are the release
    mechanism itself, so predictive draws are new releases."""

    name = "laplace_noisy_truncated_normal"
    extended_signature = "[rng],[size],(),(),(),(),(),(),(),()->[rng],(2)"
    _print_name = (
        "LaplaceNoisyTruncatedNormalGivenSum",
        "\\operatorname{LapNoisyTruncNormalGivenSum}",
    )

    @classmethod
    def rv_op(cls, n, mu, sigma, lower, upper, z, epsilon, sensitivity, *, size=None, rng=None):
        size, rng, *params = _rv_inputs(
            cls, size, rng, n, mu, sigma, lower, upper, z, epsilon, sensitivity
        )
        n, mu, sigma, lower, upper, z, epsilon, sensitivity = params
        size = pt.cast(size, "int64")
        next_rng, stats = _truncated_pair(n, mu, sigma, lower, upper, size, rng)
        noise_size = pt.concatenate([size, pt.as_tensor([2], dtype="int64")])
        scale = pt.shape_padright(sensitivity / epsilon)
        final_rng, y = _plus_laplace(stats, scale, noise_size, next_rng)
        return _rv_node(cls, rng, size, params, final_rng, _to_floatx(y))


def _truncated_pair(n, mu, sigma, lower, upper, size, rng):
    """``(next_rng, stats)``: n normal records, those outside [lower, upper] dropped, and the
    sums of x and x^2 of the rest (shape ``(*size, 2)``; the mechanism before its noise)."""
    pad = pt.shape_padright
    # no Max of a 0-d n: its C code fails to build (PyTensor 3.3), which broke shape
    # evaluation of the draws (pm.model_to_graphviz / model_to_mermaid) for a scalar n
    n_max = pt.cast(pt.max(n) if n.type.ndim else n, "int64")
    rec_size = pt.concatenate([size, pt.atleast_1d(n_max)])
    next_rng, x = normal(pad(mu), pad(sigma), size=rec_size, rng=rng, return_next_rng=True)
    index = pt.arange(n_max).astype("float64")
    keep = (x >= pad(lower)) & (x <= pad(upper)) & pt.lt(index, pad(n))
    kept = pt.switch(keep, x, 0.0)
    stats = pt.stack([pt.sum(kept, axis=-1), pt.sum(pt.sqr(kept), axis=-1)], axis=-1)
    return next_rng, stats


class TruncatedNormalSumGaussianRV(SymbolicRandomVariable):
    """Draws: as :class:`TruncatedNormalSumRV`, each sum + N(0, sigma^2) (Gaussian noise)."""

    name = "gaussian_noisy_truncated_normal"
    extended_signature = "[rng],[size],(),(),(),(),(),()->[rng],(2)"
    _print_name = ("LaplaceNoisyTruncatedNormal", "\\operatorname{GaussNoisyTruncNormal}")

    @classmethod
    def rv_op(cls, n, mu, sigma, lower, upper, noise_sigma, *, size=None, rng=None):
        size, rng, *params = _rv_inputs(cls, size, rng, n, mu, sigma, lower, upper, noise_sigma)
        n, mu, sigma, lower, upper, noise_sigma = params
        size = pt.cast(size, "int64")
        next_rng, stats = _truncated_pair(n, mu, sigma, lower, upper, size, rng)
        noise_size = pt.concatenate([size, pt.as_tensor([2], dtype="int64")])
        final_rng, e = normal(
            0.0, pt.shape_padright(noise_sigma), size=noise_size, rng=next_rng,
            return_next_rng=True,
        )  # fmt: skip
        return _rv_node(cls, rng, size, params, final_rng, _to_floatx(stats + e))


def _validate_records(n, mu, sigma, lower, upper):
    """Check the known parameters of the records (naming the argument); ``(lo, hi)``, the
    known bounds (None where symbolic)."""
    _check_count("n", n)
    check_finite("mu", mu)
    check_positive("sigma", sigma)
    lo, hi = check_finite("lower", lower), check_finite("upper", upper)
    if lo is not None and hi is not None and np.any(lo >= hi):
        raise ValueError(f"`lower` must be < `upper`; got lower={lo}, upper={hi}")
    return lo, hi


def _validate(n, mu, sigma, lower, upper, epsilon, sensitivity):
    """Check the known parameters (naming the argument); returns the sensitivity to use."""
    lo, hi = _validate_records(n, mu, sigma, lower, upper)
    check_positive("epsilon", epsilon)
    if sensitivity is None:
        sensitivity = truncated_normal_sum_sensitivity(
            lower if lo is None else lo, upper if hi is None else hi
        )
    check_positive("sensitivity", sensitivity)
    return sensitivity


def _batch_shape(params, shape):
    """Known batch shape of the parameters; refuse, naming one, if it does not fit ``shape``."""
    values = {k: constant_value(v, k) for k, v in params.items()}
    known = {k: np.shape(v) for k, v in values.items() if v is not None}
    try:
        batch = np.broadcast_shapes(*known.values())
    except ValueError:
        desc = ", ".join(f"`{k}`{s}" for k, s in known.items())
        raise ValueError(f"arguments do not broadcast together: {desc}") from None
    if shape is not None:
        target = tuple(int(t) for t in np.atleast_1d(shape))[:-1]
        for k, s in known.items():
            try:
                ok = np.broadcast_shapes(target, s) == target
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(
                    f"`{k}` has shape {s}, which does not broadcast to the releases' batch "
                    f"shape {target} (the shape of the observed pairs without the last axis)"
                )
    return batch


def _conditions(n, sigma, lower, upper, *noise_conditions):
    """The logp's parameter conditions (n a non-negative integer, sigma > 0, lower < upper,
    then the noise's) and their conjunction."""
    conditions = [n >= 0, pt.eq(n, pt.floor(n)), sigma > 0, lower < upper, *noise_conditions]
    ok = conditions[0]
    for c in conditions[1:]:
        ok = ok & c
    return conditions, ok


def _harmless_where_refused(ok, n, mu, sigma, lower, upper):
    """(n, mu, sigma, lower, upper) with refused parameter sets replaced by harmless values,
    so that the logp evaluated there has no NaN in its gradients."""
    return [
        pt.switch(ok, v, h)
        for v, h in ((n, 1.0), (mu, 0.0), (sigma, 1.0), (lower, -1.0), (upper, 1.0))
    ]


class LaplaceNoisyTruncatedNormalGivenSum(_NoImputeContinuous):
    r"""Released pair :math:`(\sum x, \sum x^2)` of truncated Gaussian records, given the latent.

    The density of :func:`LaplaceNoisyTruncatedNormal` conditional on its latent
    :math:`z \sim N(0, 1)` (one per release; the non-centred first truncated sum,
    :math:`\hat s_1 = m_1 + l_{11} z`):
    :func:`pymc_dpnoise.math.expfam_normal.truncated_normal_sum_laplace_logp`.  Use
    :func:`LaplaceNoisyTruncatedNormal`, which adds the latent; draws ignore ``z`` (they are the
    release: records, truncation, sums, Laplace noise).  The value's last axis holds the two
    noisy sums.

    Parameters
    ----------
    n, mu, sigma, lower, upper, epsilon, sensitivity
        As :func:`LaplaceNoisyTruncatedNormal`.
    z : tensor_like of float
        The standard-normal latent, one per release (batch shape).
    """

    rv_type = TruncatedNormalSumRV
    rv_op = TruncatedNormalSumRV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("LaplaceNoisyTruncatedNormalGivenSum")

    @classmethod
    def dist(cls, n, mu, sigma, lower, upper, z, epsilon, sensitivity=None, **kwargs):
        sensitivity = _validate(n, mu, sigma, lower, upper, epsilon, sensitivity)
        check_finite("z", z)
        params = dict(
            n=n, mu=mu, sigma=sigma, lower=lower, upper=upper, z=z, epsilon=epsilon,
            sensitivity=sensitivity,
        )  # fmt: skip
        _check_shape(params, kwargs)
        return super().dist(list(params.values()), **kwargs)

    def support_point(rv, size, n, mu, sigma, lower, upper, z, epsilon, sensitivity):
        m1, m2, *_ = nmath.truncated_normal_sum_clt(n, mu, sigma, lower, upper)
        m1, m2, *_ = pt.broadcast_arrays(m1, m2, z, epsilon, sensitivity)
        point = pt.stack([m1, m2], axis=-1)
        if not rv_size_is_none(size):
            point = pt.full(pt.concatenate([size, [2]]), point)
        return point

    def logp(value, n, mu, sigma, lower, upper, z, epsilon, sensitivity):
        _check_value_width(value, 2, "two noisy sums (sum x, sum x^2)")
        _check_value_batch(
            value, 1, **{k: (v, 0) for k, v in dict(n=n, mu=mu, sigma=sigma, z=z).items()}
        )
        finite, value = _finite_reports(value, 1)
        conditions, ok = _conditions(n, sigma, lower, upper, epsilon > 0, sensitivity > 0)
        safe = _harmless_where_refused(ok, n, mu, sigma, lower, upper)
        scale = pt.switch(ok, sensitivity / epsilon, 1.0)
        res = nmath.truncated_normal_sum_laplace_logp(value, z, *safe, scale)
        res = _ninf_where_not(finite, res)
        res = check_parameters(
            res,
            *_all_finite(n, mu, sigma, lower, upper, z, epsilon, sensitivity),
            *conditions,
            msg="n non-negative integer, sigma > 0, lower < upper, epsilon > 0, sensitivity > 0",
        )
        return _to_floatx(res)


def _check_shape(params, kwargs):
    """The ``dist`` shape check of the two classes (symbolic entries: PyMC checks them when
    the graph runs)."""
    shape = kwargs.get("shape")
    if shape is not None and not isinstance(shape, pt.Variable):
        try:
            _batch_shape(params, shape)
        except TypeError:
            pass
    else:
        _batch_shape(params, None)


class GaussianNoisyTruncatedNormal(_NoImputeContinuous):
    r"""Released pair :math:`(\sum x, \sum x^2)` of truncated Gaussian records with Gaussian noise.

    :func:`LaplaceNoisyTruncatedNormal` with ``noise=noise.Gaussian(sigma_e)``: the data holder
    adds independent :math:`N(0, \sigma_e^2)` noise to each of the two truncated sums.  Within
    the random-sum CLT model, :math:`\hat s \sim N(m, LL^T)`
    (:func:`pymc_dpnoise.math.expfam_normal.truncated_normal_sum_clt`), the release is exactly

    .. math::

        y \sim N\bigl(m,\ LL^T + \sigma_e^2 I\bigr)

    (the convolution of two normals): a closed-form bivariate normal
    (:func:`pymc_dpnoise.math.expfam_normal.truncated_normal_sum_gaussian_logp`, closed-form
    2x2 Cholesky factor), with **no latent variable**.  Only the normality of :math:`\hat s`
    is approximated, as with Laplace noise.  Draws are releases: records, truncation, sums,
    and Gaussian noise on each sum.  Created by :func:`LaplaceNoisyTruncatedNormal` (and its
    ``.dist``) with ``noise=noise.Gaussian(sigma_e)``; the value's last axis holds the two
    noisy sums.

    ========  ============================================================================
    Support   :math:`y \in \mathbb{R}^2`
    Mean      :math:`n q (m,\ m^2 + \kappa_2)` (exact)
    Variance  :math:`n q \hat\Sigma + n q (1-q)\hat\mu\hat\mu^T + \sigma_e^2 I` (exact)
    ========  ============================================================================

    Parameters
    ----------
    n, mu, sigma, lower, upper
        As :func:`LaplaceNoisyTruncatedNormal`.
    noise_sigma : tensor_like of float
        Standard deviation :math:`\sigma_e > 0` of the Gaussian noise on each of the two
        sums, one per release (batch shape) or one for all.
    """

    rv_type = TruncatedNormalSumGaussianRV
    rv_op = TruncatedNormalSumGaussianRV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("GaussianNoisyTruncatedNormal")

    @classmethod
    def dist(cls, n, mu, sigma, lower, upper, noise_sigma, **kwargs):
        _validate_records(n, mu, sigma, lower, upper)
        check_positive("noise sigma", noise_sigma)
        params = {"n": n, "mu": mu, "sigma": sigma, "lower": lower, "upper": upper}
        params["noise sigma"] = noise_sigma
        _check_shape(params, kwargs)
        return super().dist(list(params.values()), **kwargs)

    def support_point(rv, size, n, mu, sigma, lower, upper, noise_sigma):
        m1, m2, *_ = nmath.truncated_normal_sum_clt(n, mu, sigma, lower, upper)
        m1, m2, *_ = pt.broadcast_arrays(m1, m2, noise_sigma)
        point = pt.stack([m1, m2], axis=-1)
        if not rv_size_is_none(size):
            point = pt.full(pt.concatenate([size, [2]]), point)
        return point

    def logp(value, n, mu, sigma, lower, upper, noise_sigma):
        _check_value_width(value, 2, "two noisy sums (sum x, sum x^2)")
        _check_value_batch(
            value, 1,
            **{k: (v, 0) for k, v in {"n": n, "mu": mu, "sigma": sigma,
                                      "noise sigma": noise_sigma}.items()},
        )  # fmt: skip
        finite, value = _finite_reports(value, 1)
        conditions, ok = _conditions(n, sigma, lower, upper, noise_sigma > 0)
        safe = _harmless_where_refused(ok, n, mu, sigma, lower, upper)
        res = nmath.truncated_normal_sum_gaussian_logp(
            value, *safe, pt.switch(ok, noise_sigma, 1.0)
        )
        res = _ninf_where_not(finite, res)
        res = check_parameters(
            res,
            *_all_finite(n, mu, sigma, lower, upper, noise_sigma),
            *conditions,
            msg="n non-negative integer, sigma > 0, lower < upper, noise sigma > 0",
        )
        return _to_floatx(res)


def LaplaceNoisyTruncatedNormal(
    name,
    n,
    mu,
    sigma,
    lower,
    upper,
    epsilon=None,
    sensitivity=None,
    *,
    noise=None,
    observed=None,
    dims=None,
    shape=None,
):
    r"""Noisy sums of :math:`x` and :math:`x^2` over Gaussian records inside declared bounds.

    The data holder has :math:`n` records :math:`x_i \sim N(\mu, \sigma^2)`, drops every
    record outside the declared bounds :math:`[a, b]` (fixed before seeing the data) and
    releases the truncated sufficient statistics with independent Laplace noise on each,

    .. math::

        y = \hat s + (e_1, e_2),\quad
        \hat s = \sum_{i=1}^n \mathbf 1[a \le x_i \le b]\,(x_i,\ x_i^2),\quad
        e_j \sim \mathrm{Laplace}(0, \beta),\ \beta = \Delta/\varepsilon

    (Bernstein & Sheldon 2018, Sec. 3.3;
    :func:`pymc_dpnoise.mechanisms.release_truncated_normal_sum`), with the exact L1
    sensitivity :math:`\Delta` of the pair
    (:func:`~pymc_dpnoise.mechanisms.truncated_normal_sum_sensitivity`; e.g. 30.25 for
    :math:`[-5, 5]`).  The number of kept records :math:`N \sim \mathrm{Binomial}(n, q)`,
    :math:`q = P(a \le x \le b)`, is not released.  The random-sum CLT (Prop. 1) gives

    .. math::

        \hat s \approx N\bigl(n q \hat\mu,\ n q \hat\Sigma + n q (1 - q)\hat\mu\hat\mu^T\bigr),
        \qquad \hat\mu = (m,\ m^2 + \kappa_2),\quad
        \hat\Sigma = \begin{pmatrix} \kappa_2 & 2m\kappa_2 + \kappa_3 \\
            2m\kappa_2 + \kappa_3 & 4m^2\kappa_2 + 4m\kappa_3 + \kappa_4 - \kappa_2^2
            \end{pmatrix},

    where :math:`m, \kappa_2, \kappa_3, \kappa_4` are the mean and central moments of the
    normal truncated to :math:`[a, b]` (Lemma 1), computed stably for any bounds
    (:func:`pymc_dpnoise.math.expfam_normal.truncated_normal_moments`).

    **The latent.**  Two independent Laplace noises on a correlated normal pair have no
    closed-form convolution, so one coordinate is kept as a latent: with the Cholesky factor
    :math:`L` of the CLT covariance (closed form,
    :func:`~pymc_dpnoise.math.expfam_normal.truncated_normal_sum_clt`),
    :math:`\hat s_1 = m_1 + l_{11} z`, :math:`z \sim N(0, 1)` (``{name}_sum_z``, one per
    release, non-centred), and given :math:`z` the second sum is normal,
    :math:`N(m_2 + l_{21} z, l_{22}^2)`, so its Laplace noise is integrated out exactly
    (normal--Laplace convolution), while :math:`y_1 \sim \mathrm{Laplace}(\hat s_1, \beta)`.
    One scalar latent per release instead of the two of a latent :math:`\hat s` or a latent
    noise vector: half the dimensions for NUTS, and one of the two Laplace kernels is exact.
    Non-centred suits the regime where the noise is comparable to or larger than the
    sampling spread of :math:`\hat s_1` (:math:`\beta^2 \gtrsim l_{11}^2`, the usual one at
    :math:`\varepsilon \le 1` and :math:`n` up to several thousands; the latent then
    follows its prior); when the noise is much smaller, :math:`\hat s_1` is pinned to
    :math:`y_1` and the sampler needs smaller steps (no bias, only cost).

    **What is approximated**: only the normality of :math:`\hat s` (its mean and covariance
    are exact).  Measured against Monte Carlo of the exact mechanism (the model's density of
    :math:`y`, latent integrated out, against the Laplace density averaged over
    :math:`2\cdot 10^5` simulated :math:`\hat s`, at 30 simulated releases;
    ``benchmarks/expfam_normal_clt_accuracy.py``) for :math:`\mu = 0.5, \sigma = 1.5,
    [a, b] = [-3, 4]` and :math:`n` from 10 to 1000: log density error at most 0.004 at
    :math:`\varepsilon = 0.1` (the noise dominates: accurate from :math:`n = 10`); at
    :math:`\varepsilon = 1` rms 0.02--0.03 and at most 0.04--0.10, except releases far in the
    tail of the skewed :math:`\sum x^2` (0.25 once at :math:`n = 300`); similar with a third
    of the records truncated (:math:`\mu = 3, \sigma = 2`: at most 0.13).  At
    :math:`\varepsilon = 1` the error does not shrink with :math:`n` in this range: the noise
    becomes small next to the spread of :math:`\hat s`, which exposes the skewness of
    :math:`\sum x^2`.

    **Multimodality**: two numbers per release constrain :math:`(\mu, \sigma)` only through
    the truncated moments; the likelihood can have a secondary mode with :math:`\mu` beyond a
    bound and a large :math:`\sigma` (33 nats lower in the recovery test, yet nutpie's chains
    ended there from the default start, and one of PyMC's from a start jittered by
    :math:`\pm 1`).  With vague priors, give ``initval=`` near a crude estimate
    (:math:`y_1/n`, :math:`\sqrt{y_2/n - (y_1/n)^2}`), start without jitter
    (``init="adapt_diag"`` for PyMC's sampler) and compare chains.

    ========  ============================================================================
    Support   :math:`y \in \mathbb{R}^2`
    Mean      :math:`n q (m,\ m^2 + \kappa_2)` (exact)
    Variance  :math:`n q \hat\Sigma + n q (1-q)\hat\mu\hat\mu^T + 2\beta^2 I` (exact)
    ========  ============================================================================

    **Gaussian noise** (``noise=noise.Gaussian(sigma_e)``: :math:`N(0, \sigma_e^2)` on each
    sum instead of Laplace).  Two independent normal noises on the normal pair convolve in
    closed form, :math:`y \sim N(n q\hat\mu,\ LL^T + \sigma_e^2 I)`, exact within the CLT
    model: no latent is added (only the observed variable,
    :class:`GaussianNoisyTruncatedNormal`), and
    ``LaplaceNoisyTruncatedNormal.dist(n, mu, sigma, lower, upper, noise=noise.Gaussian(s))``
    exists.  The variance row above then reads :math:`\ldots + \sigma_e^2 I`.

    This is a model-building helper, not a distribution class: call it inside a
    :class:`pymc.Model`; it creates the latent and the observed variable and returns the
    latter (there is no ``.dist()`` except with Gaussian noise; the building block is
    :class:`LaplaceNoisyTruncatedNormalGivenSum`).  Draws of the returned variable (prior and
    posterior predictive) are new releases: records, truncation, sums, Laplace (or Gaussian)
    noise (memory grows with ``n`` times the number of draws).

    Parameters
    ----------
    name : str
        Name of the released pairs; the latent is ``f"{name}_sum_z"`` (none with Gaussian
        noise).
    n : tensor_like of int
        Number of records behind each release, before truncation (public).
    mu, sigma : tensor_like of float
        Mean and standard deviation (> 0) of the records; broadcast over releases.
    lower, upper : tensor_like of float
        Declared truncation bounds, ``lower < upper`` (never computed from the data).
    epsilon : tensor_like of float, optional
        Privacy budget of each pair, > 0 (Laplace noise of scale ``sensitivity / epsilon`` on
        each sum).  Give exactly one of ``epsilon`` and ``noise``.
    sensitivity : tensor_like of float, optional
        L1 sensitivity of the pair; default the exact
        :func:`~pymc_dpnoise.mechanisms.truncated_normal_sum_sensitivity` of the bounds
        (give the value the data holder used, e.g. ``release.sensitivity``).  Only with
        ``epsilon``.
    noise : pymc_dpnoise.noise.Laplace or pymc_dpnoise.noise.Gaussian, optional
        The noise the release added to *each* of the two sums, instead of ``epsilon`` (one
        parameter per release, or one for all; the same on both coordinates, as ``epsilon``
        does: the pair has one L1 sensitivity).  ``Laplace(b)`` is the ``epsilon`` path with
        scale :math:`b` on each sum (the budget at the default sensitivity, as for the other
        truncated families; a release whose two sums got different scales is not this
        mechanism).  ``Gaussian(sigma_e)`` gives the closed-form bivariate normal above, with
        no latent.  The integer kinds are refused (the CLT pair has no lattice; see
        :mod:`pymc_dpnoise.distributions.expfam`).
    observed : array_like, optional
        Released pairs, shape ``(*batch, 2)``.
    dims : tuple of str, optional
        Dims of the released pairs (the last one of length 2); the latent takes the others.
    shape : tuple of int, optional
        Shape of the released pairs when neither ``observed`` nor ``dims`` fix it.

    Returns
    -------
    TensorVariable
        The released pairs (the observed variable).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(1.0, 2.0, size=(3, 800))  # three sites
    >>> rel = pmd.mechanisms.release_truncated_normal_sum(x, -6.0, 8.0, 1.0, rng)
    >>> with pm.Model(coords={"site": list("abc"), "stat": ["sum_x", "sum_x2"]}) as model:
    ...     mu = pm.Normal("mu", 0.0, 5.0)
    ...     sigma = pm.HalfNormal("sigma", 5.0)
    ...     y = pmd.LaplaceNoisyTruncatedNormal(
    ...         "y", n=rel.n, mu=mu, sigma=sigma, lower=rel.lower, upper=rel.upper,
    ...         epsilon=rel.epsilon, observed=rel.value, dims=("site", "stat"),
    ...     )
    >>> sorted(v.name for v in model.free_RVs)
    ['mu', 'sigma', 'y_sum_z']
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """
    pm.modelcontext(None)  # raises outside a model
    spec = _resolve_noise("LaplaceNoisyTruncatedNormal", epsilon, sensitivity, noise)
    gaussian = spec is not None and spec.kind == "gaussian"
    if gaussian:
        _validate_records(n, mu, sigma, lower, upper)
        noise_sigma = np.asarray(spec.param, dtype="float64")
        params = dict(n=n, mu=mu, sigma=sigma, lower=lower, upper=upper)
        params["noise sigma"] = noise_sigma
    else:
        if spec is not None:
            epsilon, sensitivity = _laplace_budget(n, mu, sigma, lower, upper, spec.param)
        sensitivity = _validate(n, mu, sigma, lower, upper, epsilon, sensitivity)
        params = dict(
            n=n, mu=mu, sigma=sigma, lower=lower, upper=upper, epsilon=epsilon,
            sensitivity=sensitivity,
        )  # fmt: skip
    out_shape = None
    if observed is not None:
        obs = constant_value(observed, f"{name}: observed")
        if obs is not None:
            out_shape = tuple(obs.shape)
    if out_shape is None and shape is not None:
        out_shape = tuple(int(s) for s in np.atleast_1d(shape))
    if out_shape is None and dims is None:
        batch = _batch_shape(params, None)
        if any(constant_value(v) is None for v in params.values()):
            raise ValueError(
                f"{name}: give `observed`, `dims` or `shape`: the number of releases cannot be "
                "inferred from symbolic parameters"
            )
        out_shape = (*batch, 2)
    if out_shape is not None:
        if len(out_shape) < 1 or out_shape[-1] != 2:
            raise ValueError(
                f"{name}: the released pairs need a last axis of length 2 (sum x, sum x^2); "
                f"got shape {out_shape}"
            )
        _batch_shape(params, out_shape)
    args = [_f64(v) for v in (n, mu, sigma, lower, upper)]
    if dims is not None:
        dims_t = (dims,) if isinstance(dims, str) else tuple(dims)
        obs_kwargs = dict(dims=dims_t)
    else:
        obs_kwargs = dict(shape=out_shape)
    if gaussian:  # a closed-form density: no latent
        return GaussianNoisyTruncatedNormal(
            name, *args, _f64(noise_sigma), observed=observed, **obs_kwargs
        )
    if dims is not None:
        z = pm.Normal(f"{name}_sum_z", 0.0, 1.0, dims=dims_t[:-1])
    else:
        z = pm.Normal(f"{name}_sum_z", 0.0, 1.0, shape=out_shape[:-1])
    return LaplaceNoisyTruncatedNormalGivenSum(
        name, *args, z, _f64(epsilon), _f64(sensitivity), observed=observed, **obs_kwargs
    )


def _laplace_budget(n, mu, sigma, lower, upper, scale):
    """``(epsilon, sensitivity)`` of a Laplace spec of scale ``scale`` on each sum: the budget
    at the default (exact) sensitivity of the pair, as the other truncated families do."""
    lo, hi = _validate_records(n, mu, sigma, lower, upper)
    sens = truncated_normal_sum_sensitivity(
        lower if lo is None else lo, upper if hi is None else hi
    )
    return sens / np.asarray(scale, dtype="float64"), sens


def _gaussian_dist(n, mu, sigma, lower, upper, epsilon=None, sensitivity=None, *, noise, **kw):
    spec = _resolve_noise("LaplaceNoisyTruncatedNormal.dist", epsilon, sensitivity, noise)
    if spec.kind != "gaussian":
        return None
    return GaussianNoisyTruncatedNormal.dist(n, mu, sigma, lower, upper, spec.param, **kw)


def _truncated_normal_dist(*args, noise=None, **kwargs):
    """``LaplaceNoisyTruncatedNormal.dist``: with Gaussian noise the stand-alone distribution
    (``dist(n, mu, sigma, lower, upper, noise=noise.Gaussian(sigma_e))``); otherwise refused
    with the reason (the helper needs a model)."""
    if noise is not None:
        rv = _gaussian_dist(*args, noise=noise, **kwargs)  # refuses integer kinds, both, ...
        if rv is not None:
            return rv
    raise NotImplementedError(
        "LaplaceNoisyTruncatedNormal.dist: there is no stand-alone distribution. "
        "LaplaceNoisyTruncatedNormal is a model-building helper: the released pair (sum x, "
        "sum x^2) has no closed-form density, so it adds one latent per release "
        "(`{name}_sum_z`) to the current model. Call it inside a pm.Model (pm.draw of the "
        "variable it returns, and the prior and posterior predictive, draw releases), or use "
        "LaplaceNoisyTruncatedNormalGivenSum.dist(n, mu, sigma, lower, upper, z, epsilon) with "
        "your own latent z. (With noise=noise.Gaussian(sigma) there is a stand-alone "
        "distribution: LaplaceNoisyTruncatedNormal.dist(n, mu, sigma, lower, upper, "
        "noise=noise.Gaussian(sigma)).)"
    )


LaplaceNoisyTruncatedNormal.dist = _truncated_normal_dist
