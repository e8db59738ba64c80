"""Shared pieces of the PyMC wrappers: float64 casting and refusal to impute reports."""

from __future__ import annotations

import functools

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.distribution import Continuous
from pymc.distributions.shape_utils import implicit_size_from_params, rv_size_is_none
from pymc.pytensorf import normalize_rng_param
from pytensor.tensor import NoneConst
from pytensor.tensor.random.basic import laplace
from pytensor.tensor.random.utils import normalize_size_param

from ..validation import constant_value


def _f64(x):
    if isinstance(x, pt.Variable):
        return x if x.dtype == "float64" else pt.cast(x, "float64")
    return pt.as_tensor_variable(np.asarray(x, dtype="float64"))


def _rv_inputs(cls, size, rng, *params):
    """``(size, rng, *params)`` at the start of an ``rv_op``.

    The parameters are cast to float64, ``rng`` and ``size`` normalised, and a missing
    ``size`` is the batch shape the parameters imply (``cls.ndims_params``), so that the
    draws inside the ``rv_op`` are one per element.  That implied size is marked:
    :func:`_rv_node` puts ``None`` in the node instead (as PyMC's own symbolic variables do
    when no size is given).  A concrete size in the node would make PyMC's logp dispatch
    resize the log density to it (``maybe_resize``), which breaks a ``.dist()`` whose
    parameters broadcast against a longer value, e.g. inside ``pm.CustomDist(logp=...)``.
    """
    params = [_f64(x) for x in params]
    rng = normalize_rng_param(rng)
    size = normalize_size_param(size)
    if rv_size_is_none(size):
        size = implicit_size_from_params(*params, ndims_params=cls.ndims_params)
        size.tag.pmd_implied_size = True
    return size, rng, *params


def _node_size(size):
    """The size input of the RV node: None (``NoneConst``) where ``size`` was implied."""
    return NoneConst if getattr(size.tag, "pmd_implied_size", False) else size


def _plus_laplace(value, scale, size, rng):
    """``(next_rng, value + Laplace(0, scale))``: the release noise, drawn after ``value``."""
    next_rng, noise = laplace(0.0, scale, size=size, rng=rng, return_next_rng=True)
    return next_rng, value + noise


def _rv_node(cls, rng, size, params, next_rng, draw, **op_kwargs):
    """End of an ``rv_op``: the ``cls`` node on ``(rng, size, *params)``, outputs ``(next_rng, draw)``.

    ``size`` is the draw size from :func:`_rv_inputs`; the node gets None where it was implied.
    """
    size = _node_size(size)
    return cls(inputs=[rng, size, *params], outputs=[next_rng, draw], **op_kwargs)(
        rng, size, *params
    )


def _finite_value(value):
    """``(finite, safe)``: where the value is finite, and the value with NaN/inf replaced by 0.

    A NaN or infinite report is outside every support here, so its logp is -inf (not NaN,
    which is what ``pm.logp`` would otherwise give); the log density is evaluated at the safe
    value so that no NaN reaches a gradient through the unused branch ("double where").
    """
    value = pt.as_tensor_variable(value)
    if value.dtype.startswith(("int", "uint", "bool")):
        return pt.constant(np.array(True)), value
    known = constant_value(value)
    if known is not None and np.all(np.isfinite(known)):
        # observed reports (checked finite): keep the constant, so that the region split of
        # the clipped logps stays constant-folded (JAX cannot run a data-dependent nonzero)
        return pt.constant(np.array(True)), value
    finite = pt.isfinite(value)
    return finite, pt.switch(finite, value, pt.zeros_like(value))


def _all_finite(*params):
    """``check_parameters`` conditions: every parameter is finite (else -inf, not NaN)."""
    return [pt.all(pt.isfinite(p)) for p in params]


def _safe_params(ok, **params):
    """Each ``name=(value, harmless)`` as ``switch(ok, value, harmless)``, in order.

    Used where ``check_parameters`` refuses a parameter set: the log density is then computed
    at harmless values, so that the refused branch cannot send NaN into a gradient.
    """
    return [_keep_or_switch(ok, v, h) for v, h in params.values()]


def _keep_or_switch(ok, value, harmless):
    # A constant that is finite everywhere (a protocol parameter such as the clipping bounds,
    # already validated by ``dist``) stays a constant: the clipped logps split the reports by
    # region with indices PyTensor folds at compile time, which the JAX backend needs.
    known = constant_value(value)
    if known is not None and np.all(np.isfinite(known)):
        return _f64(value)
    return pt.switch(ok, _f64(value), float(harmless))


def _check_observed(name, observed):
    """Reject non-finite reports instead of letting PyMC impute them silently.

    Returns the observed value as a NumPy array when it is constant (else None).
    """
    if observed is None:
        return None
    data = observed
    if hasattr(data, "to_numpy"):  # pandas / xarray
        data = data.to_numpy()
    if isinstance(data, np.ma.MaskedArray):
        raise ValueError(
            f"{name}: observed reports are a masked array; missing reports cannot be imputed "
            "through a privacy mechanism. Drop the missing reports before building the model."
        )
    value = constant_value(data, f"{name}: observed")
    if value is None:
        return None
    bad = ~np.isfinite(value)
    if np.any(bad):
        where = np.argwhere(bad)[:5].tolist()
        raise ValueError(
            f"{name}: observed reports must be finite; found {int(bad.sum())} NaN/inf "
            f"value(s), first at index {where}. This distribution does not impute missing "
            "reports: drop them (and their per-report parameters) before building the model."
        )
    return value


class _NoImputeContinuous(Continuous):
    def __new__(cls, name, *args, observed=None, **kwargs):
        _check_observed(name, observed)
        return super().__new__(cls, name, *args, observed=observed, **kwargs)


# --------------------------------------------------------------------------------------------
# Checks on the value inside the logp graph: data swapped in later, static shapes
# --------------------------------------------------------------------------------------------


def _data_source(value):
    """The ``pm.Data`` container behind ``value`` (PyMC casts it to the reports' dtype), or None.

    Observed reports given as arrays are checked when the model is built; a shared data
    container can be replaced later with ``pm.set_data``, which no ``dist`` check sees.
    """
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.scalar import Cast
    from pytensor.tensor.elemwise import Elemwise
    from pytensor.tensor.shape import SpecifyShape

    v = value
    while v.owner is not None and (
        isinstance(v.owner.op, SpecifyShape)
        or (isinstance(v.owner.op, Elemwise) and isinstance(v.owner.op.scalar_op, Cast))
    ):
        v = v.owner.inputs[0]
    return v if isinstance(v, SharedVariable) else None


def _guard_data(value, valid, msg):
    """``value``, raising ``ValueError(msg)`` when evaluated if it comes from ``pm.Data`` and
    ``valid(source)`` (computed on the data *before* PyMC's cast to the reports' dtype, so
    ``0.5`` or NaN is not truncated to a valid integer first) is not true everywhere.

    Invalid data is a data error, not a value outside the support: ``-inf`` would make the
    whole model silently impossible (NUTS then fails to start or stalls).  Constant data is
    left alone (it was checked when the model was built).  The JAX backend drops the check
    (JAX tracing cannot raise) and keeps the ``-inf``.
    """
    from pytensor.raise_op import CheckAndRaise

    source = _data_source(pt.as_tensor_variable(value))
    if source is None:
        return value
    return CheckAndRaise(ValueError, msg)(value, pt.all(valid(source)))


def _static_dim(x, axis=-1):
    x = pt.as_tensor_variable(x)
    if x.ndim == 0:
        return None
    return x.type.shape[axis]


def _check_value_width(value, expected, what):
    """Refuse, naming ``value``, a value whose last axis is statically not ``expected`` long."""
    got = _static_dim(value)
    if expected is not None and got is not None and got != expected:
        raise ValueError(
            f"`value`: each report must have {what} = {expected} entries; got shape "
            f"{tuple(pt.as_tensor_variable(value).type.shape)}"
        )


def _check_value_batch(value, value_core_ndim, **params):
    """Refuse, naming the parameter, batch shapes that statically cannot broadcast together.

    ``params`` maps a name to ``(variable, core_ndim)``.  Unknown (symbolic) lengths pass:
    PyTensor checks them when the graph runs.
    """
    value = pt.as_tensor_variable(value)
    vshape = value.type.shape[: value.ndim - value_core_ndim]
    for name, (var, core) in params.items():
        var = pt.as_tensor_variable(var)
        pshape = var.type.shape[: var.ndim - core]
        for a, b in zip(vshape[::-1], pshape[::-1], strict=False):
            if a is not None and b is not None and a != b and 1 not in (a, b):
                raise ValueError(
                    f"`{name}` has batch shape {tuple(pshape)}, which does not broadcast with "
                    f"the reports' batch shape {tuple(vshape)} (one value per report, or one "
                    "for all)"
                )


_FINITE_DATA_MSG = (
    "observed: the reports in the pm.Data container must be finite (no NaN/inf); "
    "pm.set_data put non-finite values in. Drop those reports (missing reports cannot be "
    "imputed through a privacy mechanism)"
)


def _finite_reports(value, event_ndim=0):
    """``(finite, safe)`` for a log density: ``finite`` is None when there is nothing to mask.

    * ``pm.Data`` reports: guarded (a non-finite report raises, naming ``observed``);
    * constant reports that are all finite (checked observed data): unchanged;
    * anything else (``pm.logp`` values): NaN/inf reports are outside the support and get
      ``-inf``; the density is evaluated at 0 there (double where, no NaN in gradients).
      With ``event_ndim = 1`` a report (row) with any non-finite entry is refused.
    """
    if _data_source(pt.as_tensor_variable(value)) is not None:
        return None, _guard_data(value, pt.isfinite, _FINITE_DATA_MSG)
    finite, safe = _finite_value(value)
    if isinstance(finite, pt.TensorConstant):
        return None, safe
    if event_ndim:
        finite = pt.all(finite, axis=tuple(range(-event_ndim, 0)))
    return finite, safe


def _ninf_where_not(finite, res):
    """``res`` where ``finite`` (None: everywhere), else ``-inf``."""
    return res if finite is None else pt.switch(finite, res, -np.inf)


def _cdf_of_value(value, fn, *, tail=False):
    """``fn(safe_value)`` where the value is finite; the limits 0 / -inf at +-inf (and NaN).

    ``fn`` returns the log CDF (``tail=False``) or the log survival function (``tail=True``)
    at finite values; at :math:`+\\infty` the log CDF is 0 and the log survival function
    :math:`-\\infty` (mirrored at :math:`-\\infty`; NaN is taken as :math:`-\\infty`).
    """
    finite, safe = _finite_value(value)
    res = fn(safe)
    value = pt.as_tensor_variable(value)
    hi, lo = (-np.inf, 0.0) if tail else (0.0, -np.inf)
    return pt.switch(finite, res, pt.switch(pt.gt(value, 0), hi, lo))


def _refuse(cls_name, what, why):
    """A ``logcdf`` / ``logccdf`` / ``icdf`` method that raises a clear NotImplementedError.

    PyMC registers the method for the class's op, so ``pm.logcdf(rv, value)`` (and
    ``pm.Censored`` / ``pm.Truncated``, which call it) names the class and the reason instead
    of the internal op.  ``pm.Truncated`` catches it from ``icdf`` and falls back to rejection
    sampling.
    """

    def refuse(value, *params):
        raise NotImplementedError(f"{cls_name}: {what} is not available: {why}")

    refuse.__name__ = what
    return refuse


_MULTIVARIATE_CDF = (
    "a report is a vector (or a table), and a joint CDF of a vector report has no use in PyMC "
    "(pm.Censored and pm.Truncated take scalar distributions only)"
)


def _refuse_cdfs(cls_name, why=_MULTIVARIATE_CDF):
    """``(logcdf, logccdf, icdf)`` methods that all refuse with the same reason."""
    return tuple(_refuse(cls_name, what, why) for what in ("logcdf", "logccdf", "icdf"))


_NO_ICDF = (
    "the CDF is a piecewise tilted CDF without a closed-form inverse (pm.Truncated falls back "
    "to rejection sampling)"
)


# --------------------------------------------------------------------------------------------
# dtype rule (as PyMC's own distributions): a continuous report's draws and its logp / logcdf
# have dtype ``pytensor.config.floatX`` (pm.Normal's rule); integer reports (bit vectors,
# k-RR items) keep their integer draws and a float64 logp (pm.Binomial's, pm.Categorical's).
# Everything inside is computed in float64 (the stable forms need it); only the result is
# cast, so with the default floatX = "float64" nothing changes.
# --------------------------------------------------------------------------------------------


#: dtype of the integer-valued reports (bit vectors, k-RR items, counts with integer noise):
#: float64 holding integers, not an integer dtype.  ``pm.logp(rv, value)`` converts a
#: non-tensor ``value`` with ``as_tensor_variable(value, dtype=rv.dtype)`` (pymc/logprob/
#: basic.py) before any code of the distribution runs, and so does a compiled model function
#: for a point (``allow_input_downcast``): to an integer dtype that cast turns 0.5 into 0 and
#: NaN into an arbitrary integer, which the log density then scores as a valid report.  In
#: float64 the value arrives as given and the log density gives a non-integer, NaN or
#: out-of-support report -inf, as it does for a float tensor.  Integers are exact in float64
#: up to 2^53 (the largest n of the count families).
REPORT_DTYPE = "float64"


def _to_floatx(x):
    """Cast a continuous draw or log density to ``floatX`` (no-op under float64)."""
    floatx = pytensor.config.floatX
    return x if x.dtype == floatx else pt.cast(x, floatx)


def _floatx_out(method):
    """Decorate a ``logp`` / ``logcdf`` / ``logccdf`` method: its result follows floatX."""

    @functools.wraps(method)
    def wrapper(value, *params):
        return _to_floatx(method(value, *params))

    return wrapper


# --------------------------------------------------------------------------------------------
# Parameter names.  Convention: a privacy budget is ``epsilon`` and a noise scale ``sigma``;
# when a mechanism perturbs several parts of a report with separate noise, each noise
# parameter carries the suffix of its part (``sigma_x``, ``sigma_y``, ``epsilon_y``: the
# fields of :class:`pymc_dpnoise.mechanisms.PerturbedRelease`).  Covariances are ``cov=`` or,
# as ``pm.MvNormal`` accepts, ``chol=``.  PyMC's names where PyMC has the parameter
# (``mu``, ``sigma``, ``lam``, ``p``, ``n``, ``lower``, ``upper``).
# --------------------------------------------------------------------------------------------


def _cov_or_chol(cov, chol):
    """``cov``, or ``chol @ chol.T`` from a lower Cholesky factor (exactly one is given)."""
    if (cov is None) == (chol is None):
        raise ValueError(
            "cov, chol: give exactly one of `cov` (the covariance) and `chol` (its lower "
            "Cholesky factor), as for pm.MvNormal"
        )
    if chol is None:
        return cov
    known = constant_value(chol, "chol")
    if known is not None:
        if known.ndim < 2 or known.shape[-1] != known.shape[-2]:
            raise ValueError(f"chol: must be a (d, d) lower-triangular matrix; got {known.shape}")
        if np.any(np.triu(known, 1) != 0):
            raise ValueError("chol: must be lower triangular (the Cholesky factor of cov)")
        return known @ np.swapaxes(known, -1, -2)
    chol = pt.as_tensor_variable(chol)
    return chol @ pt.swapaxes(chol, -1, -2)
