"""``diagnostics.check_map``: a MAP that the privacy noise drives to a boundary is flagged.

Reports that vary less than the noise alone would make them (sd 1 against the Laplace noise's
8.5 at epsilon = 1 on [-3, 3]) put the clipped-normal likelihood's maximum at sigma = 0; reports
drawn from the model (sigma = 2) have an interior MAP.  One find_MAP and one check per model
(each compiles one log density in the test mode).
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_dpnoise as pmd
from pymc_dpnoise.diagnostics import BoundaryMAPWarning, check_map


def _model(z):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 3.0)
        pmd.LaplacePerturbedClippedNormal(
            "y", mu=mu, sigma=sigma, lower=-3.0, upper=3.0, epsilon=1.0, observed=z
        )
    return model


def _find_map(model, **kwargs):
    return pm.find_MAP(model=model, progressbar=False, jitter=False, **kwargs)


@pytest.fixture(scope="module")
def boundary():
    model = _model(np.random.default_rng(1).normal(0.0, 1.0, 100))
    return model, _find_map(model, return_inferencedata=True)


@pytest.fixture(scope="module")
def interior():
    rng = np.random.default_rng(0)
    z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, 2000), -3.0, 3.0, 1.0, rng)
    model = _model(z)
    return model, _find_map(model, return_inferencedata=True)


def test_boundary_map_warns_naming_the_parameter(boundary):
    model, point = boundary
    assert float(point.posterior["sigma"].squeeze()) < 0.05  # the premise: sigma -> 0
    with pytest.warns(BoundaryMAPWarning, match=r"sigma: .* the sigma of .*'y'.*pm\.sample"):
        found = check_map(model, point)
    assert [(f["variable"], f["direction"]) for f in found] == [("sigma", -1)]
    assert found[0]["drop"] < 0.05


def test_the_dict_of_find_map_gives_the_same_answer(boundary):
    model, _ = boundary
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # find_MAP's dict return is deprecated
        point = _find_map(model)
    found = check_map(model, point, warn=False)
    assert [f["variable"] for f in found] == ["sigma"]


def test_interior_map_is_not_flagged(interior):
    model, point = interior
    assert 1.0 < float(point.posterior["sigma"].squeeze()) < 4.0  # the premise (truth 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundaryMAPWarning)
        assert check_map(model, point) == []


def test_a_point_without_every_value_is_refused(boundary):
    model, _ = boundary
    with pytest.raises(ValueError, match=r"map_point: no value for \['sigma_log__'\]"):
        check_map(model, {"mu": 0.0})


def test_models_without_privacy_likelihoods_are_not_checked():
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", 0.0, sigma, observed=np.zeros(3))
    assert check_map(model, {"sigma_log__": -30.0}) == []
