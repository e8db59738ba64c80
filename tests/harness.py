"""Registry entry for the multivariate / discrete noise-aware distributions.

The univariate continuous distributions (clipped Gaussian and exponential reports) register in
``distributions/test_distributions.py``, whose checks (quadrature references, CDF-based KS tests) only make
sense for a scalar continuous report.  Every other distribution (histogram reports, regression
reports, noisy sums of statistics) registers a :class:`VectorCase` in a module
``tests/cases/<family>.py`` exporting ``CASES``; ``distributions/test_vector_distributions.py`` runs every
generic check on every case:

* logp against an independent reference on an extreme grid (``reference``, ``grid``, ``rtol``);
* gradients of the model logp in the sampler's unconstrained space: finite, and equal to
  Richardson finite differences, for each protocol setting in ``model_settings``;
* draws from ``pm.draw`` and from the NumPy mechanism (``simulate``) against the density:
  exact pmf on an enumerated support (``support``) or a case-specific ``draws_check``;
* broadcasting of batch parameters (``batch_params``) against single evaluations;
* support point / initial point, repr, float64, bad parameters, bad observed reports;
* agreement of the Numba, C and JAX backends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np


@dataclasses.dataclass
class VectorCase:
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
