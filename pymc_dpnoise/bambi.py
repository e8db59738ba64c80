"""Bambi families for the privacy likelihoods: noise-aware regressions from a formula.

:func:`family` builds a :class:`bambi.Family` whose likelihood is one of this package's
scalar-report distributions, with the protocol arguments (the privacy budget, the clipping
bounds, the noise, the number of trials) fixed, so that a noise-aware regression is one
``bmb.Model`` call::

    import bambi as bmb
    import pymc_dpnoise as pmd
    from pymc_dpnoise.bambi import family

    fam = family(pmd.LaplacePerturbedClippedNormal, lower=-5.0, upper=5.0, epsilon=1.0)
    model = bmb.Model("z ~ x", data, family=fam)

Needs Bambi (``pip install "pymc-dpnoise[bambi]"``).  See the documentation page "Bambi".
"""

from __future__ import annotations

import numpy as np

from .optional import require

__all__ = ["FAMILIES", "family"]

#: distribution name -> (parent parameter, default links, learned auxiliary parameters)
FAMILIES = {
    "LaplacePerturbedClippedNormal": ("mu", {"mu": "identity", "sigma": "log"}, ("sigma",)),
    "LaplacePerturbedClippedExponential": ("lam", {"lam": "log"}, ()),
    "LaplaceNoisyBinomial": ("p", {"p": "logit"}, ()),
    "NoisyBinomial": ("p", {"p": "logit"}, ()),
    "LaplaceNoisyPoisson": ("mu", {"mu": "log"}, ()),
    "NoisyPoisson": ("mu", {"mu": "log"}, ()),
}


def family(dist, *, link=None, name=None, **fixed):
    """A :class:`bambi.Family` with ``dist`` as its likelihood and ``fixed`` protocol arguments.

    Parameters
    ----------
    dist : class
        One of :data:`FAMILIES`: :class:`~pymc_dpnoise.LaplacePerturbedClippedNormal` (the
        formula models ``mu``; ``sigma`` is learned), ``LaplacePerturbedClippedExponential``
        (``lam``), ``LaplaceNoisyBinomial`` / ``NoisyBinomial`` (``p``),
        ``LaplaceNoisyPoisson`` / ``NoisyPoisson`` (``mu``).
    link : str or dict, optional
        Link of the parent parameter (a str) or of each parameter (a dict), replacing the
        defaults of :data:`FAMILIES` (identity for ``mu`` of the clipped normal, log for rates
        and scales, logit for ``p``).
    name : str, optional
        Name of the family (default ``"dp_" + dist.__name__``).
    **fixed
        The protocol arguments of ``dist`` that are not learned: ``epsilon``, ``lower``,
        ``upper``, ``sensitivity``, ``noise``, ``n``, ...  A scalar, a
        :class:`pymc_dpnoise.noise.Noise`, or an array with one value per row of the data
        (e.g. the number of trials ``n`` of each area).  Per-row arrays belong to the data
        the model is fitted on: for predictions on new data, build a family with the new
        rows' values.

    Returns
    -------
    bambi.Family
        Pass it as ``bmb.Model(formula, data, family=...)``.  The learned auxiliary parameter
        ``sigma`` of the clipped normal gets the default prior
        ``HalfNormal(sigma=(upper - lower) / 2)`` when the bounds are scalars; override it with
        ``priors={"sigma": bmb.Prior(...)}``.
    """
    bmb = require("bambi", extra="bambi", feature="pymc_dpnoise.bambi.family")
    key = getattr(dist, "__name__", None)
    if key not in FAMILIES:
        raise ValueError(
            f"dist: a Bambi family needs a distribution with scalar reports and a parameter "
            f"a formula can model; one of {sorted(FAMILIES)}, got {dist!r}"
        )
    parent, links, aux = FAMILIES[key]
    clash = sorted(set(fixed) & {parent, *aux})
    if clash:
        raise ValueError(
            f"{clash[0]}: modelled by the formula (or learned), it cannot also be fixed"
        )
    if isinstance(link, str):
        link = {parent: link}
    links = {**links, **(link or {})}
    fixed = {k: v if _is_noise(v) else np.asarray(v) for k, v in fixed.items()}

    class DPFamily(bmb.Family):
        def transform_backend_kwargs(self, kwargs):  # building the PyMC model
            return {**kwargs, **fixed}

        def transform_kwargs(self, kwargs):  # predictions and log-likelihoods
            return {**kwargs, **fixed}

    likelihood = bmb.Likelihood(key, params=[parent, *aux], parent=parent, dist=dist)
    fam = DPFamily(name or f"dp_{key}", likelihood, links)
    if "sigma" in aux and np.ndim(fixed.get("lower")) == 0 and np.ndim(fixed.get("upper")) == 0:
        if "lower" in fixed and "upper" in fixed:
            half_range = float(fixed["upper"] - fixed["lower"]) / 2.0
            fam.default_priors = {"sigma": bmb.Prior("HalfNormal", sigma=half_range)}
    return fam


def _is_noise(value):
    from .noise import Noise

    return isinstance(value, Noise)
