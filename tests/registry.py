"""The registry of the test suite: one :class:`Entry` per public distribution (and per building
block with reference checks of its own), which every generic check iterates.

An entry carries up to two parts:

* **reference cases** -- :class:`ScalarCase` for the scalar continuous reports (quadrature
  references, KS against the integrated CDF) or :class:`VectorCase` for every other report;
  ``distributions/test_distributions.py`` runs on each: logp against an independent reference
  on an extreme grid, gradients against Richardson finite differences, draws (``pm.draw`` and
  the NumPy mechanism) against the density, broadcasting of batch parameters, support and
  initial point, repr and float64, bad parameters and reports, extreme valid parameters, and
  (``backend``) agreement of Numba, C and JAX;
* a **workflow row** -- :class:`Workflow`, a hierarchical model that
  ``distributions/test_workflows.py`` runs through every PyMC workflow (draws, dims, predictive,
  NUTS, set_data, do/observe, pickle; nutpie, numpyro, LOO, MAP, ADVI, SMC under ``slow``) and
  ``scripts/workflow_table.py`` turns into ``docs/workflows.rst``.

The data of each family lives in ``tests/cases/<family>.py`` (``CASES``) and the workflow rows
in ``tests/cases/workflows.py`` (``SPECS``); :data:`ENTRIES` joins them by class.  An entry whose
reference check does not fit the generic form (a latent-variable helper, a summary table, the
count releases with a noise spec) names the test module that holds it in ``reference_in``.
Compile budget: each case's graphs are compiled once per worker (module caches keyed by case
name; every test of a case carries ``xdist_group(case.name)``), see tests/README.md.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable

import numpy as np

#: the modules of ``tests/cases/`` holding reference cases, in registry order
FAMILIES = ("clipped", "counts", "expfam", "frequency", "regression", "sufficient")


@dataclasses.dataclass
class ScalarCase:
    """The reference part of a scalar continuous report (clipped reports): quadrature
    references at scalar arguments, a grid of equal-length vectors, KS draws checks against the
    CDF integrated from the logp (``distributions/test_distributions.py``)."""

    name: str
    cls: type
    params: tuple[str, ...]  # order of .dist() arguments
    grad_params: tuple[str, ...]  # parameters that are learned (gradient checked)
    grid: Callable[[], dict]  # extreme grid: dict of equal-length arrays incl. "value"
    ref_logp: Callable  # independent reference, scalar arguments
    typical: dict  # a typical parameter set
    bounds: Callable[[dict], tuple[float, float]]  # clipping interval for given params
    noise_scale: Callable[[dict], float]
    mechanism: Callable  # (rng, size, **params) -> NumPy mechanism draws
    shifted: dict  # a parameter change that the KS test must detect
    fd_step: Callable[[dict], dict]  # finite-difference step per learned parameter (vectors)
    bad: list  # [(overrides, argument named in the error)]
    positive: str  # a parameter that must be > 0

    def __str__(self):
        return self.name


@dataclasses.dataclass
class VectorCase:
    """The reference part of every other report (histograms, counts, regression rows, sums of
    statistics): a vectorised reference on a list of (value, params) grid points, exact pmfs on
    an enumerated support or a case-specific draws check (``distributions/test_distributions.py``)."""

    name: str
    cls: type
    #: core ndim of each ``.dist()`` parameter, in positional order, e.g. {"p": 1, "epsilon": 0}
    core_ndim: dict[str, int]
    #: core ndim of one report (1 for a (k,) bit vector or a (d+1,) regression row, 0 for a label)
    event_ndim: int
    #: a typical parameter set (NumPy values)
    typical: dict
    #: independent reference: reference(value, **params) -> logp with value's batch shape
    reference: Callable[..., np.ndarray]
    #: extreme grid: list of (value, params) pairs; value may carry batch axes in front
    grid: Callable[[], list[tuple[np.ndarray, dict]]]
    #: NumPy mechanism: simulate(rng, params, n) -> n reports, shape (n, *event_shape)
    simulate: Callable[[np.random.Generator, dict, int], np.ndarray]
    #: model(data, settings) -> pm.Model with priors on the learned parameters and the
    #: distribution observed as "obs"; ``settings`` holds protocol parameters (e.g. epsilon)
    model: Callable[[np.ndarray, dict], object]
    #: protocol settings for the gradient / backend checks, e.g. [{"epsilon": 0.01}, ...]
    model_settings: list[dict]
    #: ``.dist(**(typical | overrides))`` must raise ValueError whose message names `arg`
    bad_params: list[tuple[dict, str]]
    #: observed arrays that must raise ValueError matching the regex, with typical params
    bad_observed: list[tuple[np.ndarray, str]]
    #: parameters with batch dimensions (e.g. per-report epsilon) and a value batch to check
    #: elementwise against single evaluations: batch_example() -> (params, value)
    batch_example: Callable[[], tuple[dict, np.ndarray]]
    #: |logp - reference| <= rtol * max(1, |reference|)
    rtol: float = 1e-10
    #: discrete reports with a small support: support(params) -> all reports, (M, *event)
    support: Callable[[dict], np.ndarray] | None = None
    #: continuous reports: draws_check(draws, params, logp_fn) asserts the draws fit
    draws_check: Callable | None = None
    #: a parameter change the draw checks must detect (power check); None to skip
    shifted: dict | None = None
    #: number of reports simulated for the gradient / backend models
    n_model: int = 40
    #: relative tolerance of gradients vs Richardson finite differences
    grad_rtol: float = 1e-5

    def __str__(self):
        return self.name


@dataclasses.dataclass
class Workflow:
    """The workflow part of an entry: a hierarchical model of the distribution (one row of
    ``docs/workflows.rst``; cells in ``distributions/test_workflows.py``)."""

    name: str
    cls: type
    #: ``.dist`` parameters without batch axes (NumPy values)
    typical: dict
    #: event shape of one report
    event: tuple
    #: names of the event dims in the model (``len(event)`` of them)
    event_dims: tuple = ()
    #: per-report parameters of the group model: params(g) -> kwargs (inside the model)
    params: Callable | None = None
    #: fixed protocol kwargs of the model
    fixed: dict = dataclasses.field(default_factory=dict)
    #: extra coords for the group-level parameters
    coords: dict = dataclasses.field(default_factory=dict)
    #: ``.dist`` inputs in rv_op order, for pymc.testing's check_pymc_params_match_rv_op
    #: ("typical": the typical parameters are all the inputs, in order)
    rv_params: dict | str | None = None
    #: a hyper-parameter name and value for ``pm.do``
    do: tuple = ("sd", 0.0)
    #: (typical params, expected support point) for assert_support_point_is_expected
    support_point: tuple | None = None

    def __str__(self):
        return self.name


@dataclasses.dataclass
class Entry:
    """One public distribution (or building block) of the package and its parts."""

    name: str
    cls: type
    #: the workflow row, None for a building block that is not a public distribution
    workflow: Workflow | None = None
    #: the reference cases of the generic checks
    cases: list = dataclasses.field(default_factory=list)
    #: the test module (path under tests/) that checks the reference of an entry without cases
    reference_in: str | None = None

    def __str__(self):
        return self.name


#: entries whose reference check is not a registry case: the module that holds it
REFERENCE_IN = {
    "NoisyBinomial": "distributions/test_noisy_counts.py",
    "NoisyPoisson": "distributions/test_noisy_counts.py",
    "LaplaceNoisyMultinomial": "distributions/test_expfam.py",
    "LaplaceNoisyTruncatedNormal": "distributions/test_expfam_normal.py",
    "LaplacePerturbedClippedNormalSummary": "summaries/test_summaries.py",
    "LaplacePerturbedClippedExponentialSummary": "summaries/test_summaries.py",
    "PerturbedLinRegSummary": "summaries/test_summaries.py",
    "NoisySum": "distributions/test_sums.py",
}
#: public distributions without a workflow row yet (exported through ``pymc_dpnoise._OTHER``):
#: entries of their own, whose reference checks are in ``REFERENCE_IN``
NO_WORKFLOW_YET = ("NoisySum",)


def _build_entries() -> list[Entry]:
    """Workflow rows in their order (the docs table's), then the building blocks."""
    from cases.workflows import SPECS

    cases = [c for f in FAMILIES for c in importlib.import_module(f"cases.{f}").CASES]
    entries = {s.name: Entry(s.name, s.cls, workflow=s) for s in SPECS}
    for case in cases:
        name = case.cls.__name__
        entry = entries.setdefault(name, Entry(name, case.cls))
        entry.cases.append(case)
    for name in NO_WORKFLOW_YET:
        import pymc_dpnoise

        entries.setdefault(name, Entry(name, getattr(pymc_dpnoise, name)))
    for name, path in REFERENCE_IN.items():
        entries[name].reference_in = path
    return list(entries.values())


@functools.cache
def _views() -> dict:
    entries = _build_entries()
    cases = [c for e in entries for c in e.cases]
    return {
        "ENTRIES": entries,
        "CASES": cases,
        "SCALAR_CASES": [c for c in cases if isinstance(c, ScalarCase)],
        "VECTOR_CASES": [c for c in cases if isinstance(c, VectorCase)],
        "WORKFLOWS": [e.workflow for e in entries if e.workflow is not None],
    }


def __getattr__(name):
    """``ENTRIES`` (every entry), ``CASES`` (every reference case, in registry order),
    ``SCALAR_CASES``, ``VECTOR_CASES`` and ``WORKFLOWS`` (the rows, in the docs table's order),
    built on first use: the case modules import this module for its classes."""
    if name in ("ENTRIES", "CASES", "SCALAR_CASES", "VECTOR_CASES", "WORKFLOWS"):
        return _views()[name]
    raise AttributeError(f"module 'registry' has no attribute {name!r}")
