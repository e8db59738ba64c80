"""Shared pieces of the PyMC wrappers: float64 casting and refusal to impute reports."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Continuous

from .._validation import constant_value


def _f64(x):
    if isinstance(x, pt.Variable):
        return x if x.dtype == "float64" else pt.cast(x, "float64")
    return pt.as_tensor_variable(np.asarray(x, dtype="float64"))


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
    """Reject non-finite reports instead of letting PyMC impute them silently."""
    if observed is None:
        return
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
        return
    bad = ~np.isfinite(value)
    if np.any(bad):
        where = np.argwhere(bad)[:5].tolist()
        raise ValueError(
            f"{name}: observed reports must be finite; found {int(bad.sum())} NaN/inf "
            f"value(s), first at index {where}. This distribution does not impute missing "
            "reports: drop them (and their per-report parameters) before building the model."
        )


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
