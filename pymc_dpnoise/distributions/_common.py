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
    value = constant_value(data)
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
