"""The Bambi page (docs/bambi.md) runs: its code cells executed in order, then its claims.

The page fits a clipped-normal regression (1000 reports at epsilon = 4, truth Intercept 1.0,
x 0.8, sigma 1.5) and a small-area count regression (60 areas, truth Intercept -1.0, u 0.7)
with short chains.  The checks accept the truth within about four posterior sds (measured on
the page's fits: 0.11 for the clipped intercept and slope, 0.22 for sigma, 0.023 for the
count coefficients).  The plain-Bambi form of the clipped model has the same likelihood, the
same prior (the helper's default HalfNormal(5) for sigma) and the same seed, so its draws are
the helper's.  Backend test: Bambi samples with PyMC's default (Numba) mode.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

pytest.importorskip("bambi", reason="Bambi is not installed (pip install 'pymc-dpnoise[bambi]')")

pytestmark = pytest.mark.backend

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "bambi.md"
CELL = re.compile(r"```\{code-cell\} python\n(.*?)```", re.S)


@pytest.fixture(scope="module")
def page():
    namespace: dict = {}
    for cell in CELL.findall(PAGE.read_text()):
        code = re.sub(r"\A(:\w[\w-]*:.*\n)+", "", cell)  # the cell's MyST options
        exec(compile(code, str(PAGE), "exec"), namespace)  # our own docs page
    return namespace


def _mean(fit, name):
    return float(fit.posterior[name].mean())


def test_clipped_normal_regression(page):
    fit = page["clipped_fit"]
    assert abs(_mean(fit, "Intercept") - 1.0) < 0.45
    assert abs(_mean(fit, "x") - 0.8) < 0.45
    assert 0.6 < _mean(fit, "sigma") < 2.4
    for name in ("Intercept", "x", "sigma"):
        np.testing.assert_allclose(
            # the same model, sampler and seed through two front ends: identical draws unless the
            # two logp graphs round differently, which NUTS would amplify far beyond 1e-10
            page["plain_fit"].posterior[name].values,
            fit.posterior[name].values,
            rtol=1e-10,
        )


def test_count_regression(page):
    fit = page["counts_fit"]
    assert abs(_mean(fit, "Intercept") + 1.0) < 0.1
    assert abs(_mean(fit, "u") - 0.7) < 0.1
    assert fit.posterior_predictive["y"].shape[-1] == 60
    assert np.all(fit.posterior_predictive["y"].values >= 0)  # the clamp at 0


def test_family_refuses_what_it_cannot_build():
    import pymc_dpnoise as pmd
    from pymc_dpnoise.bambi import family

    with pytest.raises(ValueError, match=r"dist: a Bambi family needs"):
        family(pmd.OUELikelihood, epsilon=1.0)
    with pytest.raises(ValueError, match=r"sigma: modelled by the formula"):
        family(pmd.LaplacePerturbedClippedNormal, sigma=1.0, lower=-1.0, upper=1.0, epsilon=1.0)
