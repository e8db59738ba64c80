"""Every parameter given as ``pm.Data`` follows ``pm.set_data`` (or is refused by name).

A parameter held in ``pm.Data`` is a shared variable: ``pm.set_data`` (and nutpie's
``with_data``) change its value after the graph was built, so a distribution that reads the
value while it builds the graph (to fold it into a constant, or to size a sum from it) answers
for the old value without a word.  Here, for every public distribution (the registry's
workflow rows) and every numeric parameter, and for the count releases over every noise kind
and clamp on values that cross their graphs' regimes, the model is built with the parameter in
``pm.Data`` at one value, ``pm.set_data`` moves it to another, and the compiled logp must
equal the logp of the same model built at the new value, or raise an error that names the
parameter (at build, at ``set_data`` or at evaluation).  Both directions are checked: each
case compiles two models (one per value) and moves each to the other's value.
"""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
import pytest
import registry
from cases.workflows import HELPERS, SUMMARIES

import pymc_dpnoise as pmd
from pymc_dpnoise import noise

#: the rows whose ``.dist`` exists (the helpers add latent variables inside a model)
ROWS = [w for w in registry.WORKFLOWS if w.name not in HELPERS]

#: a second valid value of each parameter where the default rule (below) would not give one
NEW = {
    ("UnaryEncodingLikelihood", "keep_prob"): 0.6,
    # records are >= 0: the bound moves inwards
    ("LaplaceNoisyTruncatedExponential", "lower"): 0.5,
    ("LaplaceNoisyTruncatedPoisson", "lower"): 1.0,
    ("LaplacePerturbedClippedNormalSummary", "n"): 500,
    ("LaplacePerturbedClippedExponentialSummary", "n"): 500,
}
#: parameters that only size the draws (a summary's number of reports: the table it is
#: observed as carries its counts), so the logp does not move with them
DRAWS_ONLY = {
    ("LaplacePerturbedClippedNormalSummary", "n"),
    ("LaplacePerturbedClippedExponentialSummary", "n"),
}
#: parameters that choose the graph's structure (an integer number of bins, a model name):
#: not data (left out)
STRUCTURAL = {
    ("LaplacePerturbedClippedNormalSummary", "n_bins"),
    ("LaplacePerturbedClippedExponentialSummary", "n_bins"),
    ("SSNormalApprox", "glm"),
}


#: observed releases where the draws would not reach what a parameter changes (an atom at a
#: clamp bound)
OBSERVED = {"NoisyBinomial": np.array([0.0, 6.0, 13.0])}


def _new_value(row, name, value):
    """Another valid value: a reversed simplex, a bound moved outwards, else 1.5 times (an
    integer stays an integer)."""
    if (row, name) in NEW:
        return NEW[row, name]
    v = np.asarray(value, dtype="float64")
    if name == "p" and v.ndim == 1:
        return v[::-1].copy()
    if name == "lower":
        return v - 1.0 if np.all(v == 0) else v * 1.5
    return v * 1.5


def _numeric(value):
    return not isinstance(value, str | noise.Noise) and np.asarray(value).dtype.kind in "fiu"


def _build(cls, params, data_name, observed):
    """``cls("obs", **params)`` with ``params[data_name]`` in ``pm.Data`` (a noise spec's
    parameter: ``data_name`` is the parameter's name and ``params["noise"]`` its kind)."""
    with pm.Model() as model:
        kw = {k: (pm.Data(k, v) if k == data_name else v) for k, v in params.items()}
        kind = kw.get("noise")
        if isinstance(kind, type):
            kw["noise"] = kind(kw.pop(kind.param_name))
        cls("obs", **kw, observed=observed)
    return model


def _logp_fn(model):
    """The model's logp, compiled once (no free variables: a function of the empty point).

    It must be the function compiled *before* ``pm.set_data``: compiling again rebuilds the
    log density from the model, which reads the shared value anew and would hide a value
    read when the graph was built."""
    fn = model.compile_logp(sum=True)
    return lambda: float(fn({}))


def _check_follows(cls, params, name, old, new, observed, moves=True):
    """Build and compile at ``old`` and at ``new`` (``name`` in ``pm.Data``), set each to the
    other's value: the compiled logp must be the other model's, or the error must name
    ``name``.  Two compiles per call."""
    named = re.compile(rf"`?{re.escape(name)}`?")
    at = {}
    try:
        for key, v in (("old", old), ("new", new)):
            model = _build(cls, params | {name: v}, name, observed)
            fn = _logp_fn(model)
            at[key] = (model, fn, fn())
    except (ValueError, TypeError) as err:  # refused when built: must name the parameter
        assert named.search(str(err)), f"{cls.__name__}({name}=pm.Data): {err}"
        return "refused"
    if moves:  # else the check could not fail
        assert at["old"][2] != at["new"][2], f"{name}: the change must move the logp"
    outcomes = []
    for key, other, v in (("old", "new", new), ("new", "old", old)):
        model, fn, _ = at[key]
        try:
            pm.set_data({name: v}, model=model)
            got = fn()
        except Exception as err:  # a refusal at set_data or evaluation: must name it
            assert named.search(str(err)), f"{cls.__name__} set_data({name}): {err}"
            outcomes.append("refused")
            continue
        # the same graph on the same values (bitwise) where nothing was sized from the build
        # value; else sums over windows of different widths, whose extra terms are below
        # e^-46 of the total and whose order differs: (terms - 1) u relative, u = 1.1e-16
        np.testing.assert_allclose(got, at[other][2], rtol=1e-12, err_msg=f"{name}: {key}")
        outcomes.append("follows")
    return outcomes


# --------------------------------------------------------------------------------------------
# The count releases: every noise kind, clamped, on values that cross their graphs' regimes
# --------------------------------------------------------------------------------------------

KINDS = (
    noise.Laplace,
    noise.DiscreteLaplace,
    noise.RoundedLaplace,
    noise.Gaussian,
    noise.DiscreteGaussian,
)
#: (family, parameters, {parameter: (value, another value)}): n from a sum over the whole
#: support (20) to a window (3000), the noise parameter from 2 (the discrete Gaussian's sums
#: over the noise, direct tails) to 60 (its split form, Euler-Maclaurin tails), the clamp
#: bounds on both sides of an observed atom
COUNT_MOVES = {
    "NoisyBinomial": (
        dict(n=20.0, p=0.3, lower=0.0, upper=25.0),
        dict(n=(20.0, 3000.0), p=(0.3, 0.7), lower=(0.0, -3.0), upper=(25.0, 30.0)),
    ),
    "NoisyPoisson": (
        dict(mu=5.0, lower=0.0, upper=25.0),
        dict(mu=(5.0, 400.0), lower=(0.0, -3.0), upper=(25.0, 30.0)),
    ),
}
#: releases at both clamp bounds and inside (integers: every kind)
COUNT_OBSERVED = np.array([0.0, 7.0, 25.0])
#: in the default run (NoisyBinomial): the noise parameter of the discrete Gaussian (its sums
#: over the noise vs its split form), the Gaussian (a window sized from it) and the Laplace
#: (closed form); every other case in the heavy run (2 compiles a case in TEST_MODE, and the
#: Python VM evaluating the discrete Gaussian's windows takes 5-10 CPU-s a case; the split form
#: on a Poisson count is the slowest, several minutes of wall time on a loaded machine)
DEFAULT_CASES = {
    ("NoisyBinomial", noise.DiscreteGaussian, "sigma"),
    ("NoisyBinomial", noise.Gaussian, "sigma"),
    ("NoisyBinomial", noise.Laplace, "scale"),
}
COUNT_CASES = [
    pytest.param(
        fam,
        kind,
        name,
        id=f"{fam}-{kind.__name__}-{name}",
        marks=() if (fam, kind, name) in DEFAULT_CASES else pytest.mark.heavy,
    )
    for fam, (_, moves) in COUNT_MOVES.items()
    for kind in KINDS
    for name in (*moves, kind.param_name)
]


@pytest.mark.parametrize(("family", "kind", "name"), COUNT_CASES)
def test_count_release_parameters_in_pm_data_follow_set_data(family, kind, name):
    typical, moves = COUNT_MOVES[family]
    old, new = moves.get(name, (2.0, 60.0))
    params = typical | {"noise": kind, kind.param_name: 2.0}
    outcomes = _check_follows(getattr(pmd, family), params, name, old, new, COUNT_OBSERVED)
    if name == kind.param_name and kind.sized_by_param:
        # sums sized for 2 cannot hold 60 (refused by name); sized for 60, they hold 2 exactly
        assert outcomes == ["refused", "follows"]
    else:
        assert outcomes == ["follows", "follows"]


def _row_params(row):
    return [k for k, v in row.typical.items() if _numeric(v) and (row.name, k) not in STRUCTURAL]


def _row_cases():
    """Every (row, parameter); the protocol parameters (the row's ``fixed``: budgets, bounds,
    sizes, noise scales, what a user holds in ``pm.Data``) in the default run, the learned ones
    in the heavy run (tests/README.md: one compile per model and value, about 1 CPU-s a case)."""
    return [
        pytest.param(r, k, id=f"{r.name}-{k}", marks=() if k in r.fixed else pytest.mark.heavy)
        for r in ROWS
        for k in _row_params(r)
    ]


@pytest.mark.parametrize(("row", "name"), _row_cases())
def test_every_parameter_in_pm_data_follows_set_data(row, name):
    observed = OBSERVED.get(row.name)
    if observed is None:  # a summary is one release per variable
        size = None if row.name in SUMMARIES else 3
        observed = pm.draw(row.cls.dist(**row.typical, size=size), random_seed=7)
    value = row.typical[name]
    new = _new_value(row.name, name, value)
    moves = (row.name, name) not in DRAWS_ONLY
    outcome = _check_follows(row.cls, dict(row.typical), name, value, new, observed, moves)
    assert outcome == ["follows", "follows"]
