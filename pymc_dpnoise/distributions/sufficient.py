"""Noisy sums of (approximate) sufficient statistics of GLMs: :class:`SSNormalApprox`."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import SymbolicRandomVariable
from pymc.logprob.abstract import _logprob
from pytensor.tensor.random.basic import normal

from ..math import sufficient as ssmath
from ..validation import check_finite, check_positive, check_required, constant_value
from ._common import (
    _all_finite,
    _check_value_batch,
    _check_value_width,
    _cov_or_chol,
    _finite_reports,
    _ninf_where_not,
    _NoImputeContinuous,
    _refuse_cdfs,
    _rv_inputs,
    _rv_node,
    _to_floatx,
)

__all__ = ["SSNormalApprox"]


class SSNormalApproxRV(SymbolicRandomVariable):
    """Draws from the normal approximation N(n mean, n cov_s + noise_cov) itself."""

    name = "ss_normal_approx"
    extended_signature = "[rng],[size],(d),(d,d),(),(m,m),()->[rng],(m)"
    _print_name = ("SSNormalApprox", "\\operatorname{SSNormalApprox}")
    glm: str
    order: int | str

    def __init__(self, *args, glm, order, **kwargs):
        self.glm = glm
        self.order = order
        super().__init__(*args, **kwargs)

    def rebuild_rv(self, *args, **kwargs):
        return self.rv_op(*args, glm=self.glm, order=self.order, **kwargs)

    @classmethod
    def rv_op(cls, theta, cov, n, noise_cov, sigma, *, glm, order=3, size=None, rng=None):
        size, rng, theta, cov, n, noise_cov, sigma = _rv_inputs(
            cls, size, rng, theta, cov, n, noise_cov, sigma
        )
        mean, total = _moments(theta, cov, n, noise_cov, sigma, glm, order)
        m = ssmath.stat_dim(glm, _d(theta, cov))
        next_rng, eps = normal(0.0, 1.0, size=(*size, m), rng=rng, return_next_rng=True)
        chol = pt.linalg.cholesky(total, lower=True)
        z = mean + pt.sum(chol * eps[..., None, :], axis=-1)
        params = [theta, cov, n, noise_cov, sigma]
        return _rv_node(cls, rng, size, params, next_rng, _to_floatx(z), glm=glm, order=order)


def _d(theta, cov):
    d = theta.type.shape[-1] if theta.ndim else None
    if d is None and cov.ndim >= 2:
        d = cov.type.shape[-1]
    if d is None:
        raise ValueError(
            "the number of covariates d must be known when the model is built: give `theta` or "
            "`cov` a fixed last dimension (e.g. pm.Normal('theta', 0, 1, shape=3))"
        )
    return int(d)


def _moments(theta, cov, n, noise_cov, sigma, glm, order):
    mean, cov_s = ssmath.ss_moments(
        theta, cov, glm, sigma if glm == "linear" else None, order=order
    )
    return n[..., None] * mean, n[..., None, None] * cov_s + noise_cov


class SSNormalApprox(_NoImputeContinuous):
    r"""Noisy sum of (approximate) sufficient statistics of a GLM, normal approximation.

    A data holder (central DP) or every person (local DP) releases the sum of per-record
    statistics :math:`t(x_i, y_i)` plus Gaussian noise; with :math:`x_i \sim N(0, \Sigma)` and the
    GLM for :math:`y_i \mid x_i`, the sum is approximately normal (GLM paper Sec. 3.2; LDP paper
    Sec. 3.1, eq. 3, Supplement 13.1):

    .. math::

        z \sim N\big(n\,\mu_s(\theta, \Sigma),\; n\,\Sigma_s(\theta, \Sigma) + \Sigma_\zeta\big),

    with :math:`\mu_s, \Sigma_s` the per-record mean and covariance of the statistics from
    :func:`pymc_dpnoise.math.sufficient.ss_moments` (linear and Poisson exact, logistic by a
    sign-corrected Taylor series of order ``order`` or by quadrature) and :math:`\Sigma_\zeta`
    the covariance of the total privacy noise: :math:`\sigma^2 I` for one central release,
    :math:`n\sigma^2 I` when every record adds its own :math:`N(0, \sigma^2 I)` (local DP).
    :func:`pymc_dpnoise.mechanisms.sufficient.release_sufficient_statistics` returns both ``z``
    and ``noise_cov``.  The cost of one evaluation does not depend on :math:`n`.

    Statistic layouts (:math:`t_2` = squares, then √2 × cross products, lexicographic):

    ============  ======================================  ==========================
    ``glm``       statistics                              size m
    ============  ======================================  ==========================
    ``linear``    :math:`[t_2(x), y x, y^2]`              :math:`d(d+1)/2 + d + 1`
    ``logistic``  :math:`[y x, t_2(x)]`, y ∈ {−1, 1}      :math:`d + d(d+1)/2`
    ``poisson``   :math:`[x, t_2(x), y x, y t_2(x)]`      :math:`2(d + d(d+1)/2)`
    ============  ======================================  ==========================

    ========  ==========================================================
    Support   :math:`z \in \mathbb{R}^m`
    Mean      :math:`n\,\mu_s`
    Variance  :math:`n\,\Sigma_s + \Sigma_\zeta`
    ========  ==========================================================

    Random draws are from this normal approximation itself (not a record-by-record simulation
    of the GLM, which would cost O(n)); use
    :func:`~pymc_dpnoise.mechanisms.sufficient.release_sufficient_statistics` to simulate the
    actual release.

    Parameters
    ----------
    theta : tensor_like of float, shape (..., d)
        Regression coefficients (inputs are centred; no intercept).  ``d`` must be static.
    cov : tensor_like of float, shape (..., d, d)
        Covariance :math:`\Sigma` of the inputs, positive definite.
    chol : tensor_like of float, shape (..., d, d), optional
        Lower Cholesky factor of :math:`\Sigma`, instead of ``cov`` (as ``pm.MvNormal`` takes).
    n : tensor_like of float, shape (...)
        Number of records, > 0.
    noise_cov : tensor_like of float, shape (..., m, m)
        Covariance of the total privacy noise in ``z``.
    glm : {"linear", "logistic", "poisson"}
        The model (a Python string, fixed when the model is built).
    sigma : tensor_like of float, shape (...), optional
        Residual standard deviation, > 0; required for ``"linear"`` only.
    order : int or "quadrature", default 3
        Logistic only: odd Taylor order of :math:`E[y\mid x] = \tanh(\theta^T x/2)` (3 = the GLM
        paper's two terms), or ``"quadrature"`` (no truncation).  Order 3 is accurate to Monte
        Carlo precision (10⁷ records) only for :math:`\theta^T\Sigma\theta \lesssim 0.04`; use
        ``"quadrature"`` for larger effects.  Where the series' covariance is not positive
        definite (:math:`\theta^T\Sigma\theta` beyond a few units) the quadrature moments
        are used instead of a log density of :math:`-\infty`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise.distributions.sufficient import SSNormalApprox
    >>> from pymc_dpnoise.mechanisms.sufficient import release_sufficient_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(0.0, 0.3, size=(2000, 2))
    >>> y = np.where(rng.random(2000) < 1 / (1 + np.exp(-X @ [1.0, -0.5])), 1.0, -1.0)
    >>> rel = release_sufficient_statistics(X, y, "logistic", 1.0, 1e-5, rng)
    >>> with pm.Model():
    ...     theta = pm.Normal("theta", 0.0, 2.0, shape=2)
    ...     z = SSNormalApprox(
    ...         "z", theta, 0.09 * np.eye(2), rel.n, rel.noise_cov, "logistic", observed=rel.z
    ...     )
    >>> d = SSNormalApprox.dist(np.zeros(2), np.eye(2), 100, np.eye(5), "logistic")
    >>> pm.draw(d, random_seed=1).shape
    (5,)
    """

    rv_type = SSNormalApproxRV
    rv_op = SSNormalApproxRV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("SSNormalApprox")

    @classmethod
    def dist(
        cls,
        theta,
        cov=None,
        n=None,
        noise_cov=None,
        glm=None,
        sigma=None,
        *,
        chol=None,
        order=3,
        **kwargs,
    ):
        cov = _cov_or_chol(cov, chol)
        check_required(theta=theta, cov=cov, n=n, noise_cov=noise_cov)
        if glm not in ssmath.GLMS:
            raise ValueError(f"`glm` must be one of {ssmath.GLMS}; got {glm!r}")
        try:
            order = ssmath._check_order(order)
        except ValueError as err:
            raise ValueError(f"`order`: {err}") from None
        if glm == "linear":
            if sigma is None:
                raise ValueError("`sigma` (residual standard deviation) is required for 'linear'")
            check_positive("sigma", sigma)
        elif sigma is not None:
            raise ValueError(f"`sigma` is only used by glm='linear', not {glm!r}")
        else:
            sigma = 1.0  # placeholder input, unused
        check_finite("theta", theta)
        check_positive("n", n)
        th, cv, nc = (
            constant_value(a, k) for k, a in dict(theta=theta, cov=cov, noise_cov=noise_cov).items()
        )
        d = None
        if th is not None:
            if th.ndim < 1:
                raise ValueError("`theta` must have a last dimension d (shape (..., d))")
            d = th.shape[-1]
        if cv is not None:
            check_finite("cov", cv)
            if cv.ndim < 2 or cv.shape[-1] != cv.shape[-2]:
                raise ValueError(f"`cov` must have shape (..., d, d); got {cv.shape}")
            if d is not None and cv.shape[-1] != d:
                raise ValueError(f"`cov` has shape {cv.shape} but `theta` has d = {d}")
            d = cv.shape[-1]
            if not np.allclose(cv, np.swapaxes(cv, -1, -2)):
                raise ValueError("`cov` must be symmetric")
            if np.any(np.linalg.eigvalsh(cv) <= 0):
                raise ValueError("`cov` must be positive definite")
        if nc is not None:
            check_finite("noise_cov", nc)
            if nc.ndim < 2 or nc.shape[-1] != nc.shape[-2]:
                raise ValueError(f"`noise_cov` must have shape (..., m, m); got {nc.shape}")
            if d is not None and nc.shape[-1] != ssmath.stat_dim(glm, d):
                raise ValueError(
                    f"`noise_cov` has shape {nc.shape}, but glm={glm!r} with d = {d} has "
                    f"m = {ssmath.stat_dim(glm, d)} statistics"
                )
            if not np.allclose(nc, np.swapaxes(nc, -1, -2)):
                raise ValueError("`noise_cov` must be symmetric")
            if np.any(np.linalg.eigvalsh(nc) < 0):
                raise ValueError("`noise_cov` must be positive semi-definite")
        return super().dist([theta, cov, n, noise_cov, sigma], glm=glm, order=order, **kwargs)


def _taylor_or_quadrature(op, value, theta, cov, n, noise_cov, sigma):
    """Log density with the Taylor moments of ``op.order``, and with the exact (quadrature)
    moments wherever the Taylor covariance is not positive definite.

    The truncated series of tanh(u/2) gives a covariance that stops being positive definite
    once theta' Sigma theta is a few units (order 3: about 4 to 6.5, order 5: about 2 to 3.2,
    depending on n and the noise).  There the Taylor log density is -inf with a zero
    gradient, and NUTS used to stall without a message; a sampler that wanders there (early
    tuning steps do) now gets the exact log density instead.  The switch is a jump in the log
    density at the edge of the series' range, where the series is already inaccurate:
    ``order="quadrature"`` avoids it.
    """
    mean, total = _moments(theta, cov, n, noise_cov, sigma, op.glm, op.order)
    res = ssmath.mvnormal_logp_chol(value, mean, total)
    if op.glm != "logistic" or op.order == "quadrature":
        return res
    # mvnormal_logp_chol gives -inf (zero gradient) exactly where the covariance is not PD
    q_mean, q_total = _moments(theta, cov, n, noise_cov, sigma, op.glm, "quadrature")
    exact = ssmath.mvnormal_logp_chol(value, q_mean, q_total)
    return pt.switch(pt.eq(res, -np.inf), exact, res)


def _logp_core(op, value, theta, cov, n, noise_cov, sigma):
    m = ssmath.stat_dim(op.glm, _d(theta, cov))
    _check_value_width(value, m, f"m statistics (glm={op.glm!r})")
    _check_value_batch(value, 1, theta=(theta, 1), cov=(cov, 2), n=(n, 0), noise_cov=(noise_cov, 2))
    finite, value = _finite_reports(value, 1)
    res = _taylor_or_quadrature(op, value, theta, cov, n, noise_cov, sigma)
    res = _ninf_where_not(finite, res)
    conds = [*_all_finite(theta, cov, n, noise_cov, sigma), n > 0]
    if op.glm == "linear":
        conds.append(sigma > 0)
    return check_parameters(
        res, *conds, msg="finite parameters, n > 0" + (", sigma > 0" if op.glm == "linear" else "")
    )


@_logprob.register(SSNormalApproxRV)
def _ss_normal_approx_logp(op, values, rng, size, theta, cov, n, noise_cov, sigma, **kwargs):
    (value,) = values
    # The value carries the batch shape (size + (m,)), so no broadcast to ``size`` is needed;
    # a value with extra leading dimensions (several releases) is evaluated elementwise.
    return _to_floatx(_logp_core(op, value, theta, cov, n, noise_cov, sigma))


def _register_support_point():
    from pymc.distributions.distribution import _support_point

    @_support_point.register(SSNormalApproxRV)
    def _ss_support_point(op, rv, rng, size, theta, cov, n, noise_cov, sigma):
        mean, _ = _moments(theta, cov, n, noise_cov, sigma, op.glm, op.order)
        return pt.broadcast_to(mean, rv.shape)


_register_support_point()
