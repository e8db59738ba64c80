"""The clipped-normal posterior mode on sigma = 0 (issue 39, row 10): the docs say why, and
the claim they make holds.

When the reports vary less than the Laplace noise alone would make them, ``pm.find_MAP``
returns sigma ~ 0 under a prior positive at 0 (and ``pymc_extras.fit_laplace`` expands around
that mode); a prior vanishing at 0 moves the mode inside.  Both facts are checked on one small
model (Python VM compile, a few seconds), and the docstrings of the per-report and summary
classes must say so.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_dpnoise as pmd

#: 40 reports spread 0.1 around 1 with bounds [-5, 5] and epsilon = 1: Laplace scale 10, so
#: the noise alone has sd 14, far above the reports' spread
REPORTS = 1.0 + np.random.default_rng(1).normal(0.0, 0.1, 40)


def _map_sigma(prior):
    with pm.Model():
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = prior()
        pmd.LaplacePerturbedClippedNormal("z", mu, sigma, -5.0, 5.0, 1.0, observed=REPORTS)
        point = pm.find_MAP(progressbar=False, jitter=False, return_inferencedata=True)
        return float(point.posterior["sigma"].values.item())


def test_map_of_sigma_sits_on_zero_and_a_vanishing_prior_moves_it():
    # a HalfNormal prior: the optimiser walks log(sigma) down to about -12 (sigma ~ 1e-5)
    assert _map_sigma(lambda: pm.HalfNormal("sigma", 5.0)) < 1e-3
    # Gamma(2, 1) vanishes at 0: an interior mode (0.25 on these reports)
    assert _map_sigma(lambda: pm.Gamma("sigma", 2.0, 1.0)) > 0.05


@pytest.mark.parametrize(
    "cls", [pmd.LaplacePerturbedClippedNormal, pmd.LaplacePerturbedClippedNormalSummary]
)
def test_docstring_explains_the_mode_on_sigma_zero(cls):
    doc = " ".join(cls.__doc__.split())
    notes = doc[doc.index("Notes -----") : doc.index("Examples --------")]
    for phrase in ("σ = 0", "find_MAP", "fit_laplace", "NUTS", "prior", "vanishes at 0"):
        assert phrase in notes, (cls.__name__, phrase)
