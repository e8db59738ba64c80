"""Pointwise log-likelihoods and PSIS-LOO for privatised reports.

Two things make :func:`pymc.compute_log_likelihood` followed by :func:`arviz.loo` wrong or
impossible on privatised data, and this module fixes both:

* **Count-compressed reports** (``counts=`` of the frequency oracles, e.g. the output of
  :func:`pymc_dpnoise.mechanisms.compress_reports`): PyMC's pointwise term of a row is
  ``counts * log p(pattern)``, so LOO would leave out a whole *pattern* (all the reports that
  share it) at a time and count it as one observation.  :func:`compute_log_likelihood`
  expands each row into ``counts`` pointwise terms of ``log p(pattern)``: the unit of every
  pointwise term is **one report**, as if the reports had not been compressed.  Integer
  counts are required (a weighted likelihood has no per-report unit).
* **Reports that carry no information**: an all-zero OUE/SUE/unary-encoding bit vector has a
  likelihood that does not depend on the item frequencies (its ``log p`` is the same for every
  posterior draw; 37% of the reports at ε = 2, k = 4).  PSIS cannot fit a Pareto tail to
  constant importance ratios and :func:`arviz.loo` raises "All tail values are the same".  For
  such a report the leave-one-out predictive density is exact without any importance sampling
  (the weights are uniform): :func:`loo` uses uniform weights and Pareto k = 0 for those
  columns, and PSIS for the others.

The summaries (:class:`~pymc_dpnoise.LaplacePerturbedClippedNormalSummary`, its
exponential sibling and :class:`~pymc_dpnoise.PerturbedLinRegSummary`) are a single
observation of N reports: there is no pointwise term per report, and
:func:`compute_log_likelihood` refuses them (use the exact per-report class for LOO).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["compute_log_likelihood", "loo"]

SAMPLE_DIMS = ("chain", "draw")


def _rv_kind(rv):
    """'frequency', 'summary' or None for an observed variable of the model."""
    from .distributions import clipped, frequency, regression

    op = getattr(rv.owner, "op", None)
    if isinstance(op, frequency._UnaryRV | frequency.KRRRV):
        return "frequency"
    if isinstance(
        op,
        clipped.LaplacePerturbedClippedNormalSummaryRV
        | clipped.LaplacePerturbedClippedExponentialSummaryRV
        | regression.PerturbedLinRegSummaryRV
        | regression.PerturbedLogRegSummaryRV,
    ):
        return "summary"
    return None


def _counts_of(rv):
    """The ``counts`` parameter of a frequency-oracle variable, as a NumPy array."""
    from pymc.pytensorf import constant_fold

    counts = rv.owner.inputs[-1]
    try:
        [value] = constant_fold([counts], raise_not_constant=False)
        value = np.asarray(value.eval() if hasattr(value, "eval") else value, dtype=float)
    except Exception as err:  # pragma: no cover - counts that depend on random variables
        raise NotImplementedError(
            f"{rv.name}: `counts` depends on model variables; pointwise terms per report need "
            "fixed counts"
        ) from err
    return value


def _expand_counts(da, counts, name):
    """Replace each compressed row by ``counts`` copies of its per-report log-likelihood."""
    obs_dims = [d for d in da.dims if d not in SAMPLE_DIMS]
    values = np.asarray(da.transpose(*SAMPLE_DIMS, *obs_dims).values)
    counts = np.broadcast_to(counts, values.shape[2:]).ravel()
    if np.any(np.abs(counts - np.round(counts)) > 1e-9):
        raise ValueError(
            f"{name}: `counts` are not integers, so a row is a weighted likelihood term with no "
            "per-report unit; leave-one-out over reports is undefined. Pass integer "
            "multiplicities, or compute LOO on the uncompressed reports."
        )
    counts = np.round(counts).astype(np.int64)
    flat = values.reshape(values.shape[0], values.shape[1], -1)
    keep = counts > 0
    per_report = flat[..., keep] / counts[keep]
    expanded = np.repeat(per_report, counts[keep], axis=-1)
    import xarray as xr

    out = xr.DataArray(
        expanded,
        dims=(*SAMPLE_DIMS, f"{name}_report"),
        coords={d: da.coords[d] for d in SAMPLE_DIMS if d in da.coords},
        name=name,
    )
    out.attrs["pointwise_unit"] = "one report (count-compressed rows expanded)"
    return out


def compute_log_likelihood(idata, *, model=None, var_names=None, extend_inferencedata=True, **kw):
    """:func:`pymc.compute_log_likelihood` with one pointwise term per report.

    Frequency-oracle variables observed with integer ``counts`` get their rows expanded into
    ``counts`` terms each (dimension ``<name>_report``); every other variable keeps PyMC's
    pointwise terms, one per report (a row of a regression file, one released statistic
    vector, one noisy count, one clipped report).  Summaries are refused: they are one
    observation of N reports.

    Parameters
    ----------
    idata : DataTree
        Result of :func:`pymc.sample` with a ``posterior`` group.
    model : pymc.Model, optional
        Defaults to the model on the context stack.
    var_names : list of str, optional
        Observed variables to include (all by default).
    extend_inferencedata : bool
        Add the ``log_likelihood`` group to ``idata`` (default) or return it alone.
    **kw
        Passed to :func:`pymc.compute_log_likelihood` (e.g. ``progressbar=False``).

    Returns
    -------
    DataTree
        ``idata`` with the ``log_likelihood`` group, or the group alone.
    """
    import pymc as pm
    import xarray as xr

    model = pm.modelcontext(model)
    names = var_names or [v.name for v in model.observed_RVs]
    for name in names:
        if _rv_kind(model[name]) == "summary":
            raise NotImplementedError(
                f"{name}: a summary (binned table or scatter matrix) is a single observation of "
                "all N reports, so it has no pointwise log-likelihood per report and "
                "leave-one-out over reports is not defined. Fit the exact per-report class (e.g. "
                "LaplacePerturbedClippedNormal, PerturbedLinReg) to compute LOO."
            )
    ll = pm.compute_log_likelihood(
        idata, var_names=names, model=model, extend_inferencedata=False, **kw
    )
    if isinstance(ll, xr.Dataset):
        ds = ll
    elif "log_likelihood" in ll.children:
        ds = ll["log_likelihood"].to_dataset()
    else:
        ds = ll.to_dataset()
    out = {}
    for name in names:
        da = ds[name]
        if _rv_kind(model[name]) == "frequency":
            counts = _counts_of(model[name])
            if not np.all(counts == 1.0):
                da = _expand_counts(da, counts, name)
        if "pointwise_unit" not in da.attrs:
            da.attrs["pointwise_unit"] = "one report"
        out[name] = da
    new = xr.Dataset(out, attrs=ds.attrs)
    if not extend_inferencedata:
        return xr.DataTree(name="log_likelihood", dataset=new)
    if "log_likelihood" in idata.children:
        del idata["log_likelihood"]
    idata["log_likelihood"] = xr.DataTree(dataset=new)
    return idata


def _relative_efficiency(idata) -> float:
    """The relative efficiency ``r_eff`` that :func:`arviz.loo` uses by default.

    The mean over every element of every posterior variable of the "mean" effective sample
    size (:func:`arviz.ess` with ``method="mean"``), divided by the number of draws
    (chains x draws); 1 for a single chain.  This is what ArviZ computes when ``reff`` is not
    given (``arviz_stats`` 1.3, a private helper there), written with ArviZ's public functions
    so that an ArviZ release cannot break it; tests/test_pointwise.py checks the two agree.

    Parameters
    ----------
    idata : DataTree
        With a ``posterior`` group whose sample dimensions are ``chain`` and ``draw``.

    Returns
    -------
    float
    """
    import arviz as az

    posterior = idata["posterior"].to_dataset()
    if posterior.sizes["chain"] == 1:
        return 1.0
    n_samples = posterior.sizes["chain"] * posterior.sizes["draw"]
    ess = az.ess(posterior, method="mean")
    values = np.hstack([ess[v].values.ravel() for v in ess.data_vars])
    return float(values.mean() / n_samples)


def loo(idata, var_name=None, *, reff=None, **kwargs):
    """PSIS-LOO (:func:`arviz.loo`) that also handles reports carrying no information.

    A pointwise column that is the same for every posterior draw (e.g. an all-zero bit vector
    of a unary encoding, whose likelihood does not depend on the frequencies) has uniform
    leave-one-out importance weights: its LOO term is exact, with Pareto k = 0.  The other
    columns get Pareto-smoothed weights as usual.  With no such column this is
    :func:`arviz.loo` unchanged.

    Parameters
    ----------
    idata : DataTree
        With ``posterior`` and ``log_likelihood`` groups (see :func:`compute_log_likelihood`).
    var_name : str, optional
        Observed variable, required when the log-likelihood group has several.
    reff : float, optional
        Relative efficiency; computed from the posterior by default, as ArviZ does
        (``_relative_efficiency``).
    **kwargs
        Passed to :func:`arviz.loo` (e.g. ``pointwise=True``).
    """
    import arviz as az

    ds = idata["log_likelihood"].to_dataset()
    if var_name is None:
        if len(ds.data_vars) != 1:
            raise ValueError(
                f"var_name: the log_likelihood group has {list(ds.data_vars)}; name one"
            )
        var_name = next(iter(ds.data_vars))
    da = ds[var_name]
    obs_dims = [d for d in da.dims if d not in SAMPLE_DIMS]
    values = da.transpose(*SAMPLE_DIMS, *obs_dims)
    spread = values.max(SAMPLE_DIMS) - values.min(SAMPLE_DIMS)
    constant = spread == 0
    if not bool(constant.any()):
        return az.loo(idata, var_name=var_name, reff=reff, **kwargs)
    if reff is None:
        reff = _relative_efficiency(idata)
    # PSIS on every column, with the constant ones replaced by a harmless non-constant stand-in
    # (their weights are then overwritten by the exact uniform weights).
    ramp = np.linspace(0.0, 1.0, int(np.prod([da.sizes[d] for d in SAMPLE_DIMS])))
    ramp = ramp.reshape([da.sizes[d] for d in SAMPLE_DIMS])
    stand_in = values.copy()
    stand_in.values = np.where(
        constant.values[None, None], ramp.reshape(ramp.shape + (1,) * len(obs_dims)), values
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log_weights, pareto_k = stand_in.azstats.psislw(r_eff=reff, dim=list(SAMPLE_DIMS))
    n = ramp.size
    log_weights = log_weights.where(~constant, -np.log(n))
    pareto_k = pareto_k.where(~constant, 0.0)
    return az.loo(
        idata, var_name=var_name, reff=reff, log_weights=log_weights, pareto_k=pareto_k, **kwargs
    )
