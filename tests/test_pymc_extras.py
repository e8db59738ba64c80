"""pymc-extras beside the package: pathfinder and the Laplace approximation on the README model.

The README model (5000 reports of x ~ N(1, 2^2) clipped to [-5, 5] with Laplace noise at
epsilon = 1) has a posterior sd of about 0.17 for mu and 0.45 for sigma (NUTS, README), and
the naive model says sigma = 14.2: the checks below accept the truth within about four
posterior sds, and fail for a fit that ignores or mis-reads the noise.  A second model whose
reports vary less than the noise (sd 1 against 8.5) puts the MAP on the boundary sigma = 0,
and ``diagnostics.check_map`` must say so for the pymc-extras result.  Backend tests: the fits
compile with PyTensor's default (Numba) mode, as users run them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dpnoise as pmd
from pymc_dpnoise.diagnostics import BoundaryMAPWarning, check_map

pmx = pytest.importorskip(
    "pymc_extras", reason="pymc-extras is not installed (pip install 'pymc-dpnoise[extras]')"
)

pytestmark = pytest.mark.backend


def _readme_model(z):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pmd.LaplacePerturbedClippedNormal(
            "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=z
        )
    return model


@pytest.fixture(scope="module")
def readme_model():
    rng = np.random.default_rng(0)
    z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, size=5000), -5.0, 5.0, 1.0, rng)
    return _readme_model(z)


def _check_recovery(idata):
    mu = float(idata.posterior["mu"].mean())
    sigma = float(idata.posterior["sigma"].mean())
    assert abs(mu - 1.0) < 0.7, mu  # ~4 posterior sds (0.17)
    assert 1.0 < sigma < 3.5, sigma  # truth 2, posterior sd 0.45; the naive fit says 14.2


def test_fit_laplace_recovers_the_readme_posterior(readme_model):
    idata = pmx.fit_laplace(model=readme_model, draws=500, random_seed=1, progressbar=False)
    _check_recovery(idata)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundaryMAPWarning)
        assert check_map(readme_model, idata) == []


def test_fit_pathfinder_recovers_the_readme_posterior(readme_model):
    idata = pmx.fit_pathfinder(
        model=readme_model, num_paths=2, num_draws=500, random_seed=1, progressbar=False
    )
    _check_recovery(idata)


def test_fit_laplace_at_a_boundary_map_is_flagged():
    z = np.random.default_rng(1).normal(0.0, 1.0, 100)  # sd 1; the noise alone has sd 8.5
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 3.0)
        pmd.LaplacePerturbedClippedNormal(
            "y", mu=mu, sigma=sigma, lower=-3.0, upper=3.0, epsilon=1.0, observed=z
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pymc-extras' own warnings about the singular fit
        idata = pmx.fit_laplace(model=model, draws=100, random_seed=1, progressbar=False)
    with pytest.warns(BoundaryMAPWarning, match="sigma"):
        found = check_map(model, idata)
    assert [(f["variable"], f["direction"]) for f in found] == [("sigma", -1)]
