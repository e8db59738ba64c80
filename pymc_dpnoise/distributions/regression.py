r"""Perturbed-input linear and logistic regression reports (LDP paper, Section 3.2.3, Supplement 12).

Each person holds features :math:`x \sim N(0, \Sigma)` and a response, and reports both through
local DP mechanisms (Gaussian noise on the features, Gaussian noise or randomized response on the
response).  One observed row is ``[z_x (d values), z_y]``.  The log densities come from
:mod:`pymc_dpnoise.math.regression`; the draws are :class:`SymbolicRandomVariable` graphs that
*are* the mechanism (MvNormal features, response, then perturbation), so they run natively on
every backend.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import SymbolicRandomVariable, maybe_resize
from pymc.distributions.shape_utils import rv_size_is_none
from pymc.logprob.abstract import _logprob
from pymc.pytensorf import normalize_rng_param
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor.random.basic import gamma, multivariate_normal, normal, uniform
from pytensor.tensor.random.utils import normalize_size_param

from ..math import regression as rmath
from ..math._op_support import lift_grouped
from ..math.linalg import spd_inverse_logdet
from ..validation import (
    broadcasts_to,
    check_finite,
    check_positive,
    check_required,
    constant_value,
)
from ._common import (
    _all_finite,
    _check_observed,
    _check_value_batch,
    _check_value_width,
    _cov_or_chol,
    _data_source,
    _f64,
    _finite_reports,
    _floatx_out,
    _ninf_where_not,
    _NoImputeContinuous,
    _refuse_cdfs,
    _rv_inputs,
    _rv_node,
    _static_dim,
    _to_floatx,
)

#: most nodes of each quadrature rule: the Gauss-Laguerre rule solves a nodes x nodes
#: eigenproblem (1e5 nodes asked for a 74.5 GiB matrix) and every report evaluates
#: 2 x nodes terms; the default 40 is already accurate to 1e-10
MAX_NODES = 1000
#: largest |theta| of the logistic model: theta' A theta is formed, and overflows near 1e154
MAX_COEFFICIENT = np.float64(1e150)

__all__ = [
    "PerturbedLinReg",
    "PerturbedLinRegSummary",
    "PerturbedLogReg",
    "PerturbedLogRegSummary",
    "check_logreg_summary",
]


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def _static_last_dim(x):
    """Length of the last axis of ``x`` if known now (constant value or static shape)."""
    v = constant_value(x)
    if v is not None:
        return v.shape[-1] if v.ndim else None
    t = getattr(x, "type", None)
    if t is not None and getattr(t, "ndim", 0) >= 1:
        return t.shape[-1]
    return None


def _check_theta(theta):
    v = constant_value(theta, "theta")
    if v is not None:
        if v.ndim < 1:
            raise ValueError(f"`theta` must be a vector (shape (d,)); got shape {v.shape}")
        check_finite("theta", v)
    elif getattr(theta, "ndim", 1) < 1:
        raise ValueError("`theta` must be a vector (shape (d,))")
    return _static_last_dim(theta)


def _check_cov(cov, d):
    v = constant_value(cov, "cov")
    if v is None:
        if getattr(cov, "ndim", 2) < 2:
            raise ValueError("`cov` must be a (d, d) matrix")
        shape = getattr(getattr(cov, "type", None), "shape", (None, None))
        if d is not None and shape[-1] is not None and shape[-1] != d:
            raise ValueError(f"`cov` has shape {shape}, but `theta` has length {d}")
        return
    if v.ndim < 2 or v.shape[-1] != v.shape[-2]:
        raise ValueError(f"`cov` must be a square (d, d) matrix; got shape {v.shape}")
    if d is not None and v.shape[-1] != d:
        raise ValueError(f"`cov` has shape {v.shape}, but `theta` has length {d}")
    check_finite("cov", v)
    if not np.allclose(v, np.swapaxes(v, -1, -2), rtol=1e-10, atol=1e-12):
        raise ValueError("`cov` must be symmetric")
    try:
        np.linalg.cholesky(v)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"`cov` must be positive definite; smallest eigenvalue {np.linalg.eigvalsh(v).min():.3g}"
        ) from None


def _check_sigma_x(sigma_x, d):
    check_positive("sigma_x", sigma_x)
    v = constant_value(sigma_x)
    shape = v.shape if v is not None else getattr(getattr(sigma_x, "type", None), "shape", ())
    if len(shape) >= 1 and d is not None and shape[-1] not in (None, d, 1):
        raise ValueError(
            f"`sigma_x` must be a scalar or have length d = {d} (one per feature); "
            f"got shape {tuple(shape)}"
        )


def _sigma_x_vector(sigma_x, theta):
    sigma_x = _f64(sigma_x)
    if sigma_x.ndim == 0:
        # with a static d the vector depends on sigma_x only: print(model) then shows it as a
        # constant or f(sigma_x), not f(theta)
        d = _static_last_dim(theta)
        # a pm.Data (shared) sigma_x can change with set_data: fold true constants only
        known = None if isinstance(sigma_x, SharedVariable) else constant_value(sigma_x)
        if d is not None and known is not None:
            return pt.as_tensor_variable(np.full(d, known, dtype="float64"))
        sigma_x = pt.alloc(sigma_x, pt.as_tensor_variable(theta).shape[-1] if d is None else d)
    return sigma_x


def _check_observed_width(name, observed, d, *, labels: bool):
    if observed is None:
        return
    data = observed.to_numpy() if hasattr(observed, "to_numpy") else observed
    v = constant_value(data) if not isinstance(data, np.ma.MaskedArray) else None
    if v is None:
        return
    if v.ndim < 1:
        raise ValueError(f"{name}: observed reports must have shape (N, d + 1); got a scalar")
    if d is not None and v.shape[-1] != d + 1:
        raise ValueError(
            f"{name}: observed reports must have d + 1 = {d + 1} columns (z_x, then z_y); "
            f"got shape {v.shape}"
        )
    if labels:
        lab = v[..., -1]
        bad = np.isfinite(lab) & (lab != 0) & (lab != 1)
        if np.any(bad):
            raise ValueError(
                f"{name}: the last column (reported label z_y) must be 0 or 1; found "
                f"{np.unique(lab[bad])[:5]} at row(s) {np.argwhere(bad).ravel()[:5].tolist()}"
            )


def _check_report_batch(kwargs, **params):
    """Known batch shapes (each ``name=(value, core_ndim)``) must broadcast to the reports'
    batch shape (``shape`` without its last axis, e.g. from the observed reports)."""
    shape = kwargs.get("shape", kwargs.get("size"))
    if shape is None:
        return
    try:
        target = tuple(int(t) for t in np.atleast_1d(shape))
    except Exception:  # symbolic shape (dims): checked when the graph runs
        return
    if "shape" in kwargs:
        target = target[:-1]
    for name, (value, core) in params.items():
        v = constant_value(value, name)
        if v is None:
            continue
        batch = v.shape[: v.ndim - core]
        if not broadcasts_to(batch, target):
            raise ValueError(
                f"`{name}` has batch shape {batch}, which does not broadcast to the reports' "
                f"batch shape {target} (one value per report, or one for all)"
            )


def _checked_reports(value, theta, **params):
    """Static checks naming the argument (report width d + 1, batch shapes), then
    ``(finite, safe)`` of :func:`_finite_reports` per report (row)."""
    d = _static_dim(theta)
    _check_value_width(value, None if d is None else d + 1, "d + 1 (z_x, then z_y)")
    _check_value_batch(value, 1, theta=(theta, 1), **params)
    return _finite_reports(value, 1)


def _batch_zero(*xs):
    """A float64 zero with the broadcast batch shape of ``xs``."""
    return pt.zeros_like(functools.reduce(lambda a, b: a + b, xs))


def _support_point(size, d, *batch_terms):
    point = _batch_zero(*batch_terms)[..., None] + pt.zeros((d + 1,), dtype="float64")
    if not rv_size_is_none(size):
        point = pt.broadcast_to(point, pt.concatenate([size, [d + 1]]))
    return point


# --------------------------------------------------------------------------------------------
# Linear regression
# --------------------------------------------------------------------------------------------


class _RegressionReports(_NoImputeContinuous):
    """Refuses non-finite observed rows and rows of the wrong width (d + 1) before PyMC sees them."""

    _labels = False  # whether the last column is a 0/1 label

    def __new__(cls, name, *args, observed=None, **kwargs):
        theta = kwargs.get("theta", args[0] if args else None)
        d = _static_last_dim(theta) if theta is not None else None
        _check_observed(name, observed)
        _check_observed_width(name, observed, d, labels=cls._labels)
        # the checks above include _NoImputeContinuous's: skip to PyMC's constructor
        return super(_NoImputeContinuous, cls).__new__(
            cls, name, *args, observed=observed, **kwargs
        )


def _checked_regression_inputs(kwargs, theta, cov, sigma_x, **positive):
    """``(theta, sigma_x)`` of a per-report regression's ``dist``, after every check.

    ``positive`` holds the scalar parameters that must be > 0 (``sigma``, ``sigma_y`` or
    ``epsilon_y``); each error names its argument.  Returns ``theta`` as float64 and
    ``sigma_x`` as a vector of length d.
    """
    check_required(theta=theta, cov=cov, sigma_x=sigma_x, **positive)
    d = _check_theta(theta)
    _check_cov(cov, d)
    _check_sigma_x(sigma_x, d)
    for name, value in positive.items():
        check_positive(name, value)
    _check_report_batch(
        kwargs,
        theta=(theta, 1),
        cov=(cov, 2),
        sigma_x=(sigma_x, 1 if np.ndim(constant_value(sigma_x)) else 0),
        **{name: (value, 0) for name, value in positive.items()},
    )
    theta = _f64(theta)
    return theta, _sigma_x_vector(sigma_x, theta)


class PerturbedLinRegRV(SymbolicRandomVariable):
    """Draws: x ~ MvNormal(0, cov); y = theta.x + N(0, sigma); [x + N(0, sigma_x), y + N(0, sigma_y)]."""

    name = "perturbed_linreg"
    extended_signature = "[rng],[size],(d),(),(d,d),(d),()->[rng],(p)"
    _print_name = ("PerturbedLinReg", "\\operatorname{PerturbedLinReg}")

    @classmethod
    def rv_op(cls, theta, sigma, cov, sigma_x, sigma_y, *, size=None, rng=None):
        theta = _f64(theta)
        size, rng, theta, sigma, cov, sigma_x, sigma_y = _rv_inputs(
            cls, size, rng, theta, sigma, cov, _sigma_x_vector(sigma_x, theta), sigma_y
        )
        d = theta.shape[-1]
        size_d = pt.concatenate([size, [d]])
        r1, x = multivariate_normal(
            pt.zeros_like(theta), cov, size=size, rng=rng, return_next_rng=True
        )
        r2, y = normal(pt.sum(x * theta, axis=-1), sigma, size=size, rng=r1, return_next_rng=True)
        r3, zx = normal(x, sigma_x, size=size_d, rng=r2, return_next_rng=True)
        r4, zy = normal(y, sigma_y, size=size, rng=r3, return_next_rng=True)
        z = pt.concatenate([zx, zy[..., None]], axis=-1)
        return _rv_node(cls, rng, size, [theta, sigma, cov, sigma_x, sigma_y], r4, _to_floatx(z))


class PerturbedLinReg(_RegressionReports):
    r"""Linear regression on locally private features and responses (Gaussian mechanism).

    Each person holds :math:`x \sim N(0, \Sigma)` (d features, ``cov`` = Σ) and
    :math:`y = \theta^T x + N(0, \sigma^2)`, and reports
    :math:`z_x = x + N(0, \mathrm{diag}(\sigma_x^2))` and :math:`z_y = y + N(0, \sigma_y^2)`
    (LDP paper, Supplement 12.1, eq. 34).  Marginalising :math:`x` and :math:`y` (eqs. 35-41)
    gives the joint Gaussian (:func:`pymc_dpnoise.math.perturbed_linreg_cov`)

    .. math::

        \begin{bmatrix} z_x \\ z_y \end{bmatrix} \sim N\left(0,
        \begin{bmatrix} \Sigma + \mathrm{diag}(\sigma_x^2) & \Sigma\theta \\
        \theta^T\Sigma & \theta^T\Sigma\theta + \sigma^2 + \sigma_y^2 \end{bmatrix}\right),

    evaluated through its Cholesky factor.  The log density is per report (pointwise
    log-likelihood and LOO work), but when the reports are summed with one parameter set, as in
    a ``pm.Model``, a graph rewrite makes them enter only through their
    :math:`(d+1)\times(d+1)` scatter matrix, folded at compile time: logp and gradient cost
    O(d³) whatever the number of reports (see :mod:`pymc_dpnoise.math.regression`).

    Random draws run the mechanism, so prior and posterior predictive draws are reports.
    With the release-side clipping of :func:`pymc_dpnoise.mechanisms.regression.perturb_linreg`
    the model is the paper's approximation: it ignores the clipping of x and y.

    ========  ==============================================================
    Support   :math:`(z_x, z_y) \in \mathbb{R}^{d+1}` (one report per row)
    Mean      0
    Variance  the covariance matrix above
    ========  ==============================================================

    Parameters
    ----------
    theta : tensor_like of float, shape (d,)
        Regression coefficients.
    sigma : tensor_like of float
        Standard deviation of the regression noise, > 0.
    cov : tensor_like of float, shape (d, d)
        Covariance Σ of the clean features (positive definite), e.g. the papers' scaled LKJ
        prior from :func:`pymc_dpnoise.priors.scaled_lkj_cov` (it samples the scales and the
        correlations separately; ``pm.LKJCholeskyCov`` under-covers small scales here).
    chol : tensor_like of float, shape (d, d), optional
        Lower Cholesky factor of Σ, instead of ``cov`` (as ``pm.MvNormal`` takes).
    sigma_x : tensor_like of float, scalar or shape (d,)
        Standard deviation of the Gaussian noise on each feature, > 0.
    sigma_y : tensor_like of float
        Standard deviation of the Gaussian noise on the response, > 0.

    Batch dimensions in front of the core shapes (e.g. a per-report ``sigma_y`` for personalised
    budgets) are supported; the O(1)-in-N rewrite then does not apply.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise.distributions.regression import PerturbedLinReg
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 2))
    >>> y = x @ np.array([1.0, -0.5]) + rng.normal(0.0, 0.3, 200)
    >>> z = np.column_stack([x + rng.normal(0.0, 0.5, x.shape), y + rng.normal(0.0, 0.5, 200)])
    >>> with pm.Model():
    ...     theta = pm.Normal("theta", 0.0, 5.0, shape=2)
    ...     sigma = pm.HalfNormal("sigma", 1.0)
    ...     obs = PerturbedLinReg("z", theta=theta, sigma=sigma, cov=np.eye(2),
    ...                           sigma_x=0.5, sigma_y=0.5, observed=z)

    With Σ unknown, under the scaled LKJ(2) prior:

    >>> from pymc_dpnoise.priors import scaled_lkj_cov
    >>> with pm.Model() as model:
    ...     theta = pm.Normal("theta", 0.0, 5.0, shape=2)
    ...     sigma = pm.HalfNormal("sigma", 1.0)
    ...     chol, tau, _ = scaled_lkj_cov("x", 2, eta=2.0, tau_sigma=2.5)
    ...     obs = PerturbedLinReg("z", theta=theta, sigma=sigma, cov=chol @ chol.T,
    ...                           sigma_x=0.5, sigma_y=0.5, observed=z)
    >>> sorted(model.free_RVs, key=str)
    [sigma, theta, x_corr, x_tau]
    >>> dist = PerturbedLinReg.dist(theta=[1.0, -0.5], sigma=0.3, cov=np.eye(2),
    ...                             sigma_x=0.5, sigma_y=0.5)
    >>> pm.logp(dist, [0.1, 0.2, 0.0]).eval().shape
    ()
    """

    rv_type = PerturbedLinRegRV
    rv_op = PerturbedLinRegRV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("PerturbedLinReg")

    _labels = False

    @classmethod
    def dist(cls, theta, sigma, cov=None, sigma_x=None, sigma_y=None, *, chol=None, **kwargs):
        cov = _cov_or_chol(cov, chol)
        theta, sigma_x = _checked_regression_inputs(
            kwargs, theta, cov, sigma_x, sigma=sigma, sigma_y=sigma_y
        )
        return super().dist([theta, sigma, cov, sigma_x, sigma_y], **kwargs)

    def support_point(rv, size, theta, sigma, cov, sigma_x, sigma_y):
        d = theta.shape[-1]
        return _support_point(
            size, d, theta[..., 0], sigma, cov[..., 0, 0], sigma_x[..., 0], sigma_y
        )

    @_floatx_out
    def logp(value, theta, sigma, cov, sigma_x, sigma_y):
        finite, value = _checked_reports(
            value, theta, sigma=(sigma, 0), cov=(cov, 2), sigma_x=(sigma_x, 1), sigma_y=(sigma_y, 0)
        )
        res, ok = rmath.perturbed_linreg_logp(value, theta, sigma, cov, sigma_x, sigma_y)
        res = _ninf_where_not(finite, res)
        res = check_parameters(
            res,
            *_all_finite(theta, sigma, cov, sigma_x, sigma_y),
            sigma > 0,
            sigma_y > 0,
            pt.all(sigma_x > 0),
            ok,
            msg="sigma > 0, sigma_y > 0, sigma_x > 0, cov positive definite",
        )
        # parameters given per group (theta=theta_g[group]): parameter-only terms per group
        return lift_grouped(res)


class PerturbedLinRegSummaryRV(SymbolicRandomVariable):
    """Draws: the scatter matrix of N reports, Wishart(N, C), by the Bartlett decomposition."""

    name = "perturbed_linreg_summary"
    extended_signature = "[rng],[size],(d),(),(d,d),(d),(),()->[rng],(p,p)"
    _print_name = ("PerturbedLinRegSummary", "\\operatorname{PerturbedLinRegSummary}")

    @classmethod
    def rv_op(cls, theta, sigma, cov, sigma_x, sigma_y, n, *, size=None, rng=None):
        theta, sigma, cov, sigma_y, n = map(_f64, (theta, sigma, cov, sigma_y, n))
        sigma_x = _sigma_x_vector(sigma_x, theta)
        rng = normalize_rng_param(rng)
        size = normalize_size_param(size)
        if not (rv_size_is_none(size) or size.type.shape == (0,)):
            raise NotImplementedError(
                "size: summary distributions take unbatched parameters (one summary per variable)"
            )
        c = rmath.perturbed_linreg_cov(theta, sigma, cov, sigma_x, sigma_y)
        m = c.shape[-1]
        chol = pt.linalg.cholesky(c, lower=True)
        # Bartlett: S = L A A^T L^T, A lower triangular, A_ii^2 ~ chi2(N - i), A_ij ~ N(0, 1)
        r1, diag2 = gamma(0.5 * (n - pt.arange(m)), scale=2.0, rng=rng, return_next_rng=True)
        r2, low = normal(0.0, 1.0, size=pt.stack([m, m]), rng=r1, return_next_rng=True)
        a = pt.tril(low, -1) + pt.diag(pt.sqrt(diag2))
        la = pt.dot(chol, a)
        return _rv_node(
            cls, rng, size, [theta, sigma, cov, sigma_x, sigma_y, n], r2, pt.dot(la, la.T)
        )


#: dimensions of the unbatched parameters of PerturbedLinRegSummary (sigma_x: scalar or (d,))
_SUMMARY_NDIM = {"theta": 1, "sigma": 0, "cov": 2, "sigma_x": 1, "sigma_y": 0, "n": 0}


def _check_summary_unbatched(**params):
    """A scatter summary is one matrix of N reports: no batch (group) axes on its parameters."""
    for key, val in params.items():
        ndim = pt.as_tensor_variable(val).ndim
        if ndim > _SUMMARY_NDIM[key]:
            raise NotImplementedError(
                f"{key}: summary distributions take unbatched parameters (one summary per "
                f"variable); got {ndim} dimension(s), at most {_SUMMARY_NDIM[key]} expected. For "
                "several groups, build one summary variable per group."
            )


class PerturbedLinRegSummary(_NoImputeContinuous):
    r"""N perturbed-input linear-regression reports observed through their scatter matrix.

    The same model as :class:`PerturbedLinReg`; the observed value is :math:`S = W^T W`
    (the :math:`(d+1)\times(d+1)` scatter matrix of the report rows :math:`w_i = [z_x, z_y]`,
    i.e. :math:`Z_x^T Z_x`, :math:`Z_x^T z_y`, :math:`z_y^T z_y`), which is sufficient:

    .. math::

        \log p(S \mid \theta) = -\tfrac12\bigl(N \log|2\pi C| + \mathrm{tr}(C^{-1} S)\bigr)

    equals the sum of the N per-report log densities exactly (the Wishart normalising terms,
    which do not depend on the parameters, are left out so that the value matches
    :class:`PerturbedLinReg`'s summed log likelihood).  Pass the
    :class:`~pymc_dpnoise.summaries.ScatterSummary` of
    :func:`~pymc_dpnoise.summaries.summarize_regression` as ``observed`` (N is read from it):
    it can be built from files and dataframes of any size without loading them.  Random draws
    are scatter matrices of N simulated reports, :math:`S \sim \mathrm{Wishart}(N, C)`
    (Bartlett decomposition, O(d²) whatever N), so predictive checks work on the summary.

    Parameters
    ----------
    theta, sigma, cov, sigma_x, sigma_y :
        As in :class:`PerturbedLinReg` (no batch dimensions).
    n : int
        Number of reports; read from ``observed`` when it is a ``ScatterSummary``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise.distributions.regression import PerturbedLinRegSummary
    >>> from pymc_dpnoise.summaries import summarize_regression
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(5000, 2))
    >>> y = x @ np.array([1.0, -0.5]) + rng.normal(0.0, 0.3, 5000)
    >>> w = np.column_stack([x + rng.normal(0, 0.5, x.shape), y + rng.normal(0, 0.5, 5000)])
    >>> with pm.Model():
    ...     theta = pm.Normal("theta", 0.0, 5.0, shape=2)
    ...     sigma = pm.HalfNormal("sigma", 1.0)
    ...     obs = PerturbedLinRegSummary("z", theta=theta, sigma=sigma, cov=np.eye(2),
    ...                                  sigma_x=0.5, sigma_y=0.5,
    ...                                  observed=summarize_regression(w))
    """

    rv_type = PerturbedLinRegSummaryRV
    rv_op = PerturbedLinRegSummaryRV.rv_op

    def __new__(cls, name, *args, observed=None, **kwargs):
        from ..summaries import ScatterSummary

        if isinstance(observed, ScatterSummary):
            if kwargs.get("n") is not None and kwargs["n"] != observed.n:
                raise ValueError(
                    f"n: {kwargs['n']!r} differs from the observed summary's {observed.n}"
                )
            kwargs["n"] = observed.n
            observed = observed.scatter
        return super().__new__(cls, name, *args, observed=observed, **kwargs)

    @classmethod
    def dist(cls, theta, sigma, cov, sigma_x, sigma_y, n=None, **kwargs):
        check_required(theta=theta, sigma=sigma, cov=cov, sigma_x=sigma_x, sigma_y=sigma_y, n=n)
        _check_summary_unbatched(
            theta=theta, sigma=sigma, cov=cov, sigma_x=sigma_x, sigma_y=sigma_y, n=n
        )
        d = _check_theta(theta)
        check_positive("sigma", sigma)
        _check_cov(cov, d)
        _check_sigma_x(sigma_x, d)
        check_positive("sigma_y", sigma_y)
        check_positive("n", n)
        theta = _f64(theta)
        sigma_x = _sigma_x_vector(sigma_x, theta)
        return super().dist([theta, sigma, cov, sigma_x, sigma_y, n], **kwargs)

    def support_point(rv, size, theta, sigma, cov, sigma_x, sigma_y, n):
        return n * rmath.perturbed_linreg_cov(theta, sigma, cov, sigma_x, sigma_y)

    def logp(value, theta, sigma, cov, sigma_x, sigma_y, n):
        c = rmath.perturbed_linreg_cov(theta, sigma, cov, sigma_x, sigma_y)
        prec, logdet, ok = spd_inverse_logdet(c)
        m = pt.cast(c.shape[-1], "float64")
        res = -0.5 * (n * (m * np.log(2 * np.pi) + logdet))
        res = res - 0.5 * pt.sum(prec * value)
        return check_parameters(
            res,
            *_all_finite(theta, sigma, cov, sigma_x, sigma_y),
            sigma > 0,
            sigma_y > 0,
            pt.all(sigma_x > 0),
            n > 0,
            ok,
            msg="sigma > 0, sigma_y > 0, sigma_x > 0, n > 0, cov positive definite",
        )


# --------------------------------------------------------------------------------------------
# Logistic regression
# --------------------------------------------------------------------------------------------


class PerturbedLogRegRV(SymbolicRandomVariable):
    """Draws: x ~ MvNormal(0, cov); y ~ Bernoulli(sigmoid(theta.x)); [x + N(0, sigma_x), RR(y)].

    The approximation options of the log density are class attributes; :func:`_logreg_rv_type`
    makes one subclass per option set, so that they survive PyMC's rebuilding of the op.
    """

    name = "perturbed_logreg"
    extended_signature = "[rng],[size],(d),(d,d),(d),()->[rng],(p)"
    _print_name = ("PerturbedLogReg", "\\operatorname{PerturbedLogReg}")
    approximation = "quadrature"
    degree = 2
    interval = (-4.0, 4.0)
    nodes = rmath.DEFAULT_NODES

    @classmethod
    def rv_op(cls, theta, cov, sigma_x, epsilon_y, *, size=None, rng=None):
        theta = _f64(theta)
        size, rng, theta, cov, sigma_x, epsilon_y = _rv_inputs(
            cls, size, rng, theta, cov, _sigma_x_vector(sigma_x, theta), epsilon_y
        )
        d = theta.shape[-1]
        size_d = pt.concatenate([size, [d]])
        r1, x = multivariate_normal(
            pt.zeros_like(theta), cov, size=size, rng=rng, return_next_rng=True
        )
        r2, u1 = uniform(0.0, 1.0, size=size, rng=r1, return_next_rng=True)
        y = pt.lt(u1, pt.sigmoid(pt.sum(x * theta, axis=-1)))
        r3, zx = normal(x, sigma_x, size=size_d, rng=r2, return_next_rng=True)
        r4, u2 = uniform(0.0, 1.0, size=size, rng=r3, return_next_rng=True)
        keep = pt.lt(u2, pt.sigmoid(epsilon_y))  # randomized response, keep prob e^eps/(1+e^eps)
        zy = pt.cast(pt.eq(keep, y), "float64")  # keep -> y, flip -> 1 - y
        z = pt.concatenate([zx, zy[..., None]], axis=-1)
        return _rv_node(cls, rng, size, [theta, cov, sigma_x, epsilon_y], r4, _to_floatx(z))


@functools.cache
def _logreg_rv_type(approximation, degree, interval, nodes):
    if (approximation, degree, interval, nodes) == (
        PerturbedLogRegRV.approximation,
        PerturbedLogRegRV.degree,
        PerturbedLogRegRV.interval,
        PerturbedLogRegRV.nodes,
    ):
        return PerturbedLogRegRV
    name = f"PerturbedLogRegRV_{approximation}_{degree}_{interval[0]:g}_{interval[1]:g}_{nodes}"
    return type(
        name,
        (PerturbedLogRegRV,),
        dict(approximation=approximation, degree=degree, interval=interval, nodes=nodes),
    )


def _logreg_options(approximation, degree, interval, nodes):
    if approximation not in rmath.APPROXIMATIONS:
        raise ValueError(
            f"`approximation` must be one of {rmath.APPROXIMATIONS}; got {approximation!r}"
        )
    if isinstance(degree, bool) or not isinstance(degree, int | np.integer) or degree < 0:
        raise ValueError(f"`degree` must be a non-negative integer; got {degree!r}")
    try:
        a, b = (float(interval[0]), float(interval[1]))
    except (TypeError, IndexError, ValueError):
        raise ValueError(f"`interval` must be a pair (a, b); got {interval!r}") from None
    if not (np.isfinite(a) and np.isfinite(b) and a < b) or len(interval) != 2:
        raise ValueError(f"`interval` must be a finite pair (a, b) with a < b; got {interval!r}")
    if isinstance(nodes, bool) or not isinstance(nodes, int | np.integer) or nodes < 2:
        raise ValueError(f"`nodes` must be an integer >= 2; got {nodes!r}")
    if nodes > MAX_NODES:
        raise ValueError(
            f"`nodes` must be <= {MAX_NODES} (each rule costs a nodes x nodes eigenproblem "
            f"and 2 x nodes terms per report; the default {rmath.DEFAULT_NODES} is accurate to "
            f"1e-10); got {nodes}"
        )
    return approximation, int(degree), (a, b), int(nodes)


def _logreg_rv_op(
    theta,
    cov,
    sigma_x,
    epsilon_y,
    *,
    approximation="quadrature",
    degree=2,
    interval=(-4.0, 4.0),
    nodes=rmath.DEFAULT_NODES,
    size=None,
    rng=None,
):
    opts = _logreg_options(approximation, degree, interval, nodes)
    return _logreg_rv_type(*opts).rv_op(theta, cov, sigma_x, epsilon_y, size=size, rng=rng)


class PerturbedLogReg(_RegressionReports):
    r"""Logistic regression on locally private features (Gaussian) and labels (randomized response).

    Each person holds :math:`x \sim N(0, \Sigma)` and a label
    :math:`y \sim \mathrm{Bernoulli}(\mathrm{sigmoid}(\theta^T x))`, and reports
    :math:`z_x = x + N(0, \mathrm{diag}(\sigma_x^2))` and :math:`z_y`, the label kept with
    probability :math:`\rho = e^{\epsilon_y}/(1 + e^{\epsilon_y})` and flipped otherwise (LDP
    paper, Supplement 12.2, eq. 42).  Marginalising :math:`x` and :math:`y` (eq. 43):

    .. math::

        p(z_x, z_y) = N(z_x; 0, \Sigma + \mathrm{diag}(\sigma_x^2))\,
        \left[(1 - \rho) + (2\rho - 1)\,E[\mathrm{sigmoid}((2z_y - 1)\,u)]\right],\quad
        u \mid z_x \sim N(\theta^T h, \theta^T A \theta),

    with :math:`h = \Sigma(\Sigma + \Sigma_*)^{-1} z_x` and
    :math:`A = \Sigma - \Sigma(\Sigma+\Sigma_*)^{-1}\Sigma`.

    The expectation :math:`E[\mathrm{sigmoid}(u)]` is computed by

    * ``approximation="quadrature"`` (default): Gauss-Hermite in u for a posterior sd of u up to
      1.5, a step-function split with Gauss-Laguerre above
      (:func:`pymc_dpnoise.math.regression.expected_sigmoid`), ``nodes`` nodes each.  Its error
      in :math:`P(z_y \mid z_x)` is below 1e-10 for every mean and every sd in [0, 1000]
      (checked against adaptive quadrature in ``tests/distributions/test_regression.py``).
    * ``approximation="chebyshev"``: the paper's method (Section 7, eq. 44): the sigmoid is
      replaced by its degree-``degree`` Chebyshev projection on ``interval`` and the expectation
      is taken with Gaussian moments; the result is clipped to [0, 1].  ``degree=2`` on a
      symmetric interval reproduces the paper, and then ignores the variance
      :math:`\theta^T A\theta`.  It is accurate only while
      :math:`N(\theta^T h, \theta^T A\theta)` stays well inside ``interval``, and even there its
      error is far above 1e-3 at low degree: e.g. degree 2 on (-4, 4) is off by up to 0.11
      for :math:`|\theta^T h| \le 2`, sd ≤ 1; degree 13 on (-6, 6) by 5e-4.  Outside the
      interval the polynomial diverges (errors up to 1).  Provided to reproduce the paper.

    Many reports.  There is no exact summary of the reports for this likelihood (unlike
    :class:`PerturbedLinRegSummary`): the label factor depends on each report through
    :math:`\theta^T h = z_x^T\beta` with :math:`\beta` a function of :math:`\theta`, so the
    reports cannot be compressed or binned before :math:`\theta` is known (except for d = 1).
    The quadrature costs ``2 * nodes`` terms per report; from
    ``pymc_dpnoise.math.regression.BLOCK_THRESHOLD`` (10⁵) reports on, with one parameter set,
    they are evaluated by a ``scan`` over blocks of ``BLOCK_ROWS`` reports, so that the working
    memory stays bounded: about 0.7 GB peak (PyMC and Numba included) at 10⁶ reports and
    1.6 GB at 10⁷, against 2.5 GB at 10⁶ in one pass (``benchmarks/memory_budgets.py``).  The
    value and gradient are the same to rounding, ``logp`` still returns one value per report
    (for ``pm.compute_log_likelihood`` and LOO), and every backend and NUTS sampler runs it;
    the first evaluation spends 5-20 s more in Numba's compiler.  For millions of reports,
    :class:`PerturbedLogRegSummary` observes a summary instead, with a bound (nats) on its
    error computed at every evaluation.

    ========  ==============================================================
    Support   :math:`z_x \in \mathbb{R}^d`, :math:`z_y \in \{0, 1\}` (one report per row)
    Mean      :math:`E[z_x] = 0`, :math:`m = E[z_y] = (1 - \rho) + (2\rho - 1)\,
              E[\mathrm{sigmoid}(\theta^T x)]`
    Variance  :math:`\mathrm{Cov}[z_x] = \Sigma + \mathrm{diag}(\sigma_x^2)`,
              :math:`\mathrm{Var}[z_y] = m(1 - m)`
    ========  ==============================================================

    Parameters
    ----------
    theta : tensor_like of float, shape (d,)
        Regression coefficients (log-odds per unit of x).
    cov : tensor_like of float, shape (d, d)
        Covariance Σ of the clean features, positive definite.
    chol : tensor_like of float, shape (d, d), optional
        Lower Cholesky factor of Σ, instead of ``cov`` (as ``pm.MvNormal`` takes).
    sigma_x : tensor_like of float, scalar or shape (d,)
        Standard deviation of the Gaussian noise on each feature, > 0.
    epsilon_y : tensor_like of float
        Privacy budget of the randomized response on the label, > 0 (c·ε in the paper).
    approximation : {"quadrature", "chebyshev"}
        How :math:`E[\mathrm{sigmoid}(u)]` is computed (Python option, not a tensor).
    degree : int, default 2
        Degree of the Chebyshev approximant (chebyshev mode).
    interval : (float, float), default (-4, 4)
        Interval of the Chebyshev projection (chebyshev mode).
    nodes : int, default 40
        Nodes of each quadrature rule (quadrature mode).

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise.distributions.regression import PerturbedLogReg
    >>> dist = PerturbedLogReg.dist(theta=[1.0, -0.5], cov=np.eye(2), sigma_x=0.5, epsilon_y=1.0)
    >>> p1 = np.exp(pm.logp(dist, [0.3, 0.2, 1.0]).eval())
    >>> p0 = np.exp(pm.logp(dist, [0.3, 0.2, 0.0]).eval())
    >>> bool(p0 + p1 > 0)
    True
    >>> with pm.Model():
    ...     theta = pm.Normal("theta", 0.0, 5.0, shape=2)
    ...     obs = PerturbedLogReg("z", theta=theta, cov=np.eye(2), sigma_x=0.5, epsilon_y=1.0,
    ...                           observed=pm.draw(dist, 50, random_seed=1))
    """

    rv_type = PerturbedLogRegRV
    rv_op = staticmethod(_logreg_rv_op)
    logcdf, logccdf, icdf = _refuse_cdfs("PerturbedLogReg")

    _labels = True

    @classmethod
    def dist(
        cls,
        theta,
        cov=None,
        sigma_x=None,
        epsilon_y=None,
        *,
        chol=None,
        approximation="quadrature",
        degree=2,
        interval=(-4.0, 4.0),
        nodes=rmath.DEFAULT_NODES,
        **kwargs,
    ):
        if "epsilon" in kwargs:
            raise TypeError(
                "epsilon: PerturbedLogReg takes `epsilon_y`, the budget of the label's randomized "
                "response only (c * epsilon of perturb_logreg's total budget, the release's "
                "`epsilon_y` field), not the total budget"
            )
        cov = _cov_or_chol(cov, chol)
        approximation, degree, interval, nodes = _logreg_options(
            approximation, degree, interval, nodes
        )
        theta, sigma_x = _checked_regression_inputs(
            kwargs, theta, cov, sigma_x, epsilon_y=epsilon_y
        )
        return super().dist(
            [theta, cov, sigma_x, epsilon_y],
            approximation=approximation,
            degree=degree,
            interval=interval,
            nodes=nodes,
            **kwargs,
        )

    def support_point(rv, size, theta, cov, sigma_x, epsilon_y):
        d = theta.shape[-1]
        return _support_point(size, d, theta[..., 0], cov[..., 0, 0], sigma_x[..., 0], epsilon_y)


def _logreg_block_rows(value, theta, cov, sigma_x, epsilon_y):
    """Block size for the label term (0: one pass), from the number of reports known now.

    The static shape of the reports (observed arrays) or, for ``pm.Data``, the container's
    current length: ``pm.set_data`` may change it later, which only changes the memory, not
    the value (both paths are exact for every N).  One parameter set and one matrix of
    reports only (batched models keep the one-pass graph).
    """
    value = pt.as_tensor_variable(value)
    params = [pt.as_tensor_variable(x) for x in (theta, cov, sigma_x, epsilon_y)]
    if value.ndim != 2 or [x.ndim for x in params] != [1, 2, 1, 0]:
        return 0
    n = value.type.shape[0]
    if n is None:
        source = _data_source(value)
        n = None if source is None else np.shape(source.get_value(borrow=True))[0]
    return rmath.BLOCK_ROWS if n is not None and n >= rmath.BLOCK_THRESHOLD else 0


@_logprob.register(PerturbedLogRegRV)
def _perturbed_logreg_logprob(op, values, rng, size, theta, cov, sigma_x, epsilon_y, **kwargs):
    (value,) = values
    block_rows = 0
    if op.approximation == "quadrature":
        block_rows = _logreg_block_rows(value, theta, cov, sigma_x, epsilon_y)
    finite, value = _checked_reports(
        value, theta, cov=(cov, 2), sigma_x=(sigma_x, 1), epsilon_y=(epsilon_y, 0)
    )
    res, ok = rmath.perturbed_logreg_logp(
        value,
        theta,
        cov,
        sigma_x,
        epsilon_y,
        approximation=op.approximation,
        degree=op.degree,
        interval=op.interval,
        nodes=op.nodes,
        block_rows=block_rows,
    )
    res = _ninf_where_not(finite, res)
    res = maybe_resize(res, size)
    res = check_parameters(
        res,
        *_all_finite(theta, cov, sigma_x, epsilon_y),
        pt.all(pt.abs(theta) <= MAX_COEFFICIENT),
        pt.all(sigma_x > 0),
        epsilon_y > 0,
        ok,
        msg=f"sigma_x > 0, epsilon_y > 0, cov positive definite, |theta| <= {MAX_COEFFICIENT:g}",
    )
    # parameters given per group (theta=theta_g[group]): parameter-only terms per group
    return _to_floatx(lift_grouped(res))


# --------------------------------------------------------------------------------------------
# Logistic regression from a summary (any N)
# --------------------------------------------------------------------------------------------


class _RefuseDraws(Op):
    """Stands for the draws of a summary that cannot be simulated cheaply: raises when run."""

    __props__ = ()

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        raise NotImplementedError(
            "PerturbedLogRegSummary: random draws are not implemented (a draw would be a "
            "summary of N simulated reports, O(N)); draw reports with PerturbedLogReg and "
            "summarise them with pymc_dpnoise.summaries.summarize_logreg"
        )


def _packed_length(theta):
    """Length of the packed summary for theta's d (static when known, else symbolic)."""
    from ..math.logreg_summary import packed_size

    d = _static_last_dim(theta)
    if d is not None:
        return packed_size(d)
    d = pt.as_tensor_variable(theta).shape[-1]
    return 7 + 4 * d + 3 * d**2 + d**3 + d**4


class PerturbedLogRegSummaryRV(SymbolicRandomVariable):
    """The packed summary of N logistic-regression reports (draws refused, see the class)."""

    name = "perturbed_logreg_summary"
    extended_signature = "[rng],[size],(d),(d,d),(d),(),()->[rng],(p)"
    _print_name = ("PerturbedLogRegSummary", "\\operatorname{PerturbedLogRegSummary}")

    @classmethod
    def rv_op(cls, theta, cov, sigma_x, epsilon_y, tol, *, size=None, rng=None):
        theta = _f64(theta)
        sigma_x = _sigma_x_vector(sigma_x, theta)
        theta, cov, sigma_x, epsilon_y, tol = map(_f64, (theta, cov, sigma_x, epsilon_y, tol))
        rng = normalize_rng_param(rng)
        size = normalize_size_param(size)
        if not (rv_size_is_none(size) or size.type.shape == (0,)):
            raise NotImplementedError(
                "size: summary distributions take unbatched parameters (one summary per variable)"
            )
        next_rng, u = uniform(0.0, 1.0, rng=rng, return_next_rng=True)
        out = _RefuseDraws()(pt.zeros((_packed_length(theta),), dtype="float64") + u * 0.0)
        return _rv_node(cls, rng, size, [theta, cov, sigma_x, epsilon_y, tol], next_rng, out)


#: default tolerance (nats) of PerturbedLogRegSummary's remainder bound
LOGREG_SUMMARY_TOL = 1.0


class PerturbedLogRegSummary(_NoImputeContinuous):
    r"""N perturbed-input logistic-regression reports observed through a summary, at any N.

    The model of :class:`PerturbedLogReg`; the observed value is the
    :class:`~pymc_dpnoise.summaries.LogRegSummary` built in one or a few passes over the
    reports by :func:`~pymc_dpnoise.summaries.summarize_logreg` (NumPy arrays, Parquet/CSV
    files and DuckDB relations streamed, dataframes through Narwhals).  Logp and gradient cost
    O(d⁴) whatever N.

    The log density is the exact Gaussian term of the features (from their scatter matrix)
    plus the label term expanded to third order in :math:`(\beta - \beta_0, v - v_0)` around
    the summary's pilot, where :math:`\beta = (\Sigma+\Sigma_*)^{-1}\Sigma\theta` and
    :math:`v = \theta^T A\theta` (:mod:`pymc_dpnoise.math.logreg_summary` derives it).  At
    every evaluation the graph also computes a bound :math:`B` (nats) on the difference from
    the exact summed log density of :class:`PerturbedLogReg`, from the fourth moments of the
    features and derivative bounds that hold for every report, θ and Σ.  The value returned is

    .. math::

        \hat\ell(\theta) - \max(B(\theta) - \mathrm{tol}, 0),

    so where :math:`B \le` ``tol`` it is within :math:`B` of the exact one, and everywhere it
    is at most ``tol`` above it: no region the bound does not certify can gain more than a
    factor :math:`e^{\mathrm{tol}}` of posterior mass, and the sampler is pushed back towards
    the pilot there.  Check the posterior with
    :meth:`~pymc_dpnoise.summaries.LogRegSummary.bound` at the draws (or
    :func:`check_logreg_summary`), which refuses draws whose bound exceeds ``tol``; then fit
    the exact :class:`PerturbedLogReg` or rebuild the summary with ``pilot=`` the posterior
    mean.  Start samplers at ``summary.theta_pilot`` (``initvals``) to skip a long warm-up.

    The bound grows like :math:`N\|\Delta\|^4`: with :math:`\Delta` of the order of the
    posterior sd (:math:`\propto N^{-1/2}`) it falls like 1/N; away from the pilot it was 41-3880
    (median 172) times the actual error at the 30 points off the pilot checked against
    :class:`PerturbedLogReg`
    (``benchmarks/results/logreg_summary.md`` and ``logreg_summary_quick.md``).

    Parameters
    ----------
    theta, cov, sigma_x :
        As in :class:`PerturbedLogReg` (no batch dimensions; ``cov`` and ``sigma_x`` may be
        model parameters).
    epsilon_y : float
        Must equal the summary's (its weights depend on it); read from ``observed`` if None.
    tol : float, default 1.0
        Tolerance (nats) of the bound, above which the value is penalised as above.

    Notes
    -----
    Random draws are refused (a summary of N simulated reports costs O(N)); per-report
    log-likelihoods (LOO) need the reports: use :class:`PerturbedLogReg`.
    """

    rv_type = PerturbedLogRegSummaryRV
    rv_op = PerturbedLogRegSummaryRV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("PerturbedLogRegSummary")

    def __new__(cls, name, *args, observed=None, **kwargs):
        from ..summaries import LogRegSummary

        if isinstance(observed, LogRegSummary):
            eps = kwargs.get("epsilon_y")
            if eps is None:
                kwargs["epsilon_y"] = observed.epsilon_y
            else:
                v = constant_value(eps, "epsilon_y")
                if v is None or not np.isclose(float(v), observed.epsilon_y, rtol=1e-12):
                    raise ValueError(
                        f"epsilon_y: {eps!r} differs from the summary's {observed.epsilon_y} "
                        "(its expansion weights were computed for that budget)"
                    )
            observed = observed.packed
        return super().__new__(cls, name, *args, observed=observed, **kwargs)

    @classmethod
    def dist(cls, theta, cov=None, sigma_x=None, epsilon_y=None, tol=LOGREG_SUMMARY_TOL, *,
             chol=None, **kwargs):  # fmt: skip
        cov = _cov_or_chol(cov, chol)
        check_required(theta=theta, cov=cov, sigma_x=sigma_x, epsilon_y=epsilon_y)
        for key, val, nd in (("theta", theta, 1), ("cov", cov, 2), ("epsilon_y", epsilon_y, 0)):
            if pt.as_tensor_variable(val).ndim > nd:
                raise NotImplementedError(
                    f"{key}: summary distributions take unbatched parameters (one summary per "
                    "variable)"
                )
        d = _check_theta(theta)
        _check_cov(cov, d)
        _check_sigma_x(sigma_x, d)
        check_positive("epsilon_y", epsilon_y)
        if constant_value(epsilon_y, "epsilon_y") is None:
            raise ValueError(
                "epsilon_y: must be a number (the summary's label budget), not a model variable"
            )
        check_positive("tol", tol)
        theta = _f64(theta)
        sigma_x = _sigma_x_vector(sigma_x, theta)
        return super().dist([theta, cov, sigma_x, epsilon_y, tol], **kwargs)

    def support_point(rv, size, theta, cov, sigma_x, epsilon_y, tol):
        return pt.zeros((_packed_length(theta),), dtype="float64")

    def logp(value, theta, cov, sigma_x, epsilon_y, tol):
        from ..math.logreg_summary import dim_from_packed_size, perturbed_logreg_summary_logp

        d = _static_last_dim(theta)
        size = value.type.shape[-1]
        if size is not None:
            dv = dim_from_packed_size(size)
            if dv is None or (d is not None and dv != d):
                raise ValueError(
                    f"observed: a summary of length {size} does not belong to d = {d} features"
                )
            d = dv
        if d is None:
            raise ValueError("theta: PerturbedLogRegSummary needs d known (theta's length)")
        eps = float(constant_value(epsilon_y))
        res, _, ok = perturbed_logreg_summary_logp(value, theta, cov, sigma_x, eps, tol, d)
        return check_parameters(
            res,
            *_all_finite(theta, cov, sigma_x),
            pt.all(sigma_x > 0),
            pt.eq(value[1], epsilon_y),
            ok,
            msg="sigma_x > 0, epsilon_y equal to the summary's, cov positive definite",
        )


def check_logreg_summary(summary, idata, *, tol=LOGREG_SUMMARY_TOL, var="theta", cov=None,
                         sigma_x=None):  # fmt: skip
    """The bound (nats) at every posterior draw; raises if any exceeds ``tol``.

    ``idata``: an InferenceData (or a dict of arrays) with ``var`` draws of shape
    (chain, draw, d); ``cov`` / ``sigma_x``: names of the posterior variables holding them
    when they are model parameters (default: the summary's pilot values).  Returns the
    array of bounds (chain, draw).
    """
    post = getattr(idata, "posterior", idata)
    theta = np.asarray(post[var])

    def param(name):
        return None if name is None else np.asarray(post[name])

    bounds = summary.bound(theta, cov=param(cov), sigma_x=param(sigma_x))
    worst = float(np.max(bounds))
    if worst > tol:
        raise ValueError(
            f"PerturbedLogRegSummary: the error bound reaches {worst:.3g} nats at "
            f"{int(np.sum(bounds > tol))} of {bounds.size} draws (tol {tol}); "
            + _logreg_summary_advice(summary, theta)
        )
    return bounds


def _logreg_summary_advice(summary, theta) -> str:
    """What would make the summary accurate at these draws: a new pilot only where the
    posterior has moved away from the old one (else rebuilding gives the same summary)."""
    draws = np.asarray(theta, dtype=np.float64).reshape(-1, summary.d)
    mean, sd = draws.mean(axis=0), draws.std(axis=0)
    fmt = ", ".join(f"{x:.4g}" for x in mean)
    away = float(np.max(np.abs(mean - summary.theta_pilot) / np.maximum(sd, 1e-300)))
    exact = "fit PerturbedLogReg on the reports (the exact likelihood)"
    why = "" if summary.pilot_status is None else f" (the pilot: {summary.pilot_status})"
    if away > 1.0:
        return (
            f"the posterior mean is {away:.3g} posterior sd from the summary's pilot{why}: "
            f"rebuild the summary with pilot=[{fmt}] (the posterior mean), sample and check "
            f"again, or {exact}"
        )
    return (
        f"the posterior is centred on the summary's pilot already ({away:.2g} posterior sd "
        f"from it){why}, so a new pilot would give the same summary: the posterior is wider "
        f"than the region where the expansion is accurate; {exact}"
    )
