"""The posterior-release code lives in ``pymc_dpnoise.posterior_release``: the names that other
paths re-export are its objects, and importing them raises no warning and meets no import cycle.
"""

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pymc_dpnoise as pmd
from pymc_dpnoise import posterior_release as pr

# The public names of the subpackage (a snapshot, not read from its ``__all__``: a dropped name
# must fail here).
_MECHANISMS = (
    "Budget",
    "LinRegModel",
    "Release",
    "exponential_map",
    "fourier_closure",
    "fourier_posterior_updates",
    "laplace_posterior_updates",
    "linreg_sampling_epsilon",
    "posterior_sample",
    "posterior_sample_linreg",
    "posterior_sampling_epsilon",
    "total_spent",
)
_READER = (
    "ExactPosterior",
    "NaiveBayesRelease",
    "naive_bayes_layout",
    "noise_aware_model",
    "plugin_posterior",
    "predict_proba",
    "release_reports",
    "simulate_release",
)
_MATH = (
    "clamped_laplace_kernel_logp",
    "default_points",
    "naive_bayes_release_logp",
    "naive_bayes_release_logp_normal",
)
#: the other paths that give posterior-release names (lazy re-exports, PEP 562)
OTHER_PATHS = {
    "pymc_dpnoise": ("BayesNet",),
    "pymc_dpnoise.mechanisms": _MECHANISMS,
}


@pytest.mark.parametrize("path", sorted(OTHER_PATHS))
def test_re_exported_names_are_the_posterior_release_objects(path):
    mod = importlib.import_module(path)
    for name in OTHER_PATHS[path]:
        obj = getattr(pr, name)
        assert getattr(mod, name) is obj, (path, name)
        if callable(obj):  # defined in the subpackage, not re-exported into it
            assert obj.__module__.startswith("pymc_dpnoise.posterior_release."), (name, obj)
    if path == "pymc_dpnoise.mechanisms":  # listed, so star imports and the tests see them
        assert set(_MECHANISMS) <= set(mod.__all__) and set(_MECHANISMS) <= set(dir(mod))


def test_the_package_exports_its_names_and_nothing_else():
    """The subpackage's ``__all__`` is the snapshot above, and every name in it resolves."""
    assert set(pr.__all__) == {*_MECHANISMS, *_READER, *_MATH, "BayesNet", "as_bayesnet"}
    for name in pr.__all__:
        assert getattr(pr, name) is not None
    assert pmd.posterior_release is pr and "posterior_release" in pmd.SUBPACKAGES


def test_re_exports_import_without_warnings_or_cycles():
    """In a fresh interpreter (import order matters for cycles), a submodule of the subpackage
    imported first, then every re-exporting path: no ImportError, and no warning raised from the
    package's own files."""
    root = Path(pmd.__file__).parent
    code = f"""
import importlib, json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for name in ["pymc_dpnoise.posterior_release.sampling", *{sorted(OTHER_PATHS)!r}]:
        importlib.import_module(name)
    import pymc_dpnoise as pmd
    pmd.mechanisms.posterior_sample, pmd.BayesNet, pmd.posterior_release.math
print(json.dumps([str(w.filename) for w in caught if w.filename.startswith({str(root)!r})]))
"""
    env = {**os.environ, "PYTHONPATH": str(root.parent)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
