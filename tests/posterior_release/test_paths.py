"""The posterior-release code moved to ``pymc_dpnoise.posterior_release`` (issue 23): every name
importable from the old paths still is, as the same object, without warnings or import cycles.
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

# The public names of the old modules as they were before the move (a snapshot, not read from
# the shims: a shim that drops a name must fail here).  Every one must be the object of the new
# home, ``pymc_dpnoise.posterior_release`` (or the module named in NEW_MODULE).
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
OLD_NAMES = {
    "pymc_dpnoise": ("BayesNet",),
    "pymc_dpnoise.mechanisms": _MECHANISMS,
    "pymc_dpnoise.mechanisms.posterior": (*_MECHANISMS, "posterior_sampling_epsilon_of"),
    "pymc_dpnoise.bayesnet": ("BayesNet", "as_bayesnet"),
    "pymc_dpnoise.release_reader": (*_READER, "NORMAL_MIN_SCALE"),
    "pymc_dpnoise.math.release": (
        "clamped_laplace_kernel_logp",
        "default_points",
        "naive_bayes_release_logp",
        "naive_bayes_release_logp_normal",
    ),
}
#: names that are not in the package's ``__all__`` (they were not in the old ``__all__`` either)
NEW_MODULE = {
    "posterior_sampling_epsilon_of": "pymc_dpnoise.posterior_release.sampling",
    "NORMAL_MIN_SCALE": "pymc_dpnoise.posterior_release.reader",
}
#: the old ``__all__`` lists (unchanged, so ``from old import *`` gives the same names)
OLD_ALL = {
    "pymc_dpnoise.mechanisms.posterior": _MECHANISMS,
    "pymc_dpnoise.bayesnet": ("BayesNet", "as_bayesnet"),
    "pymc_dpnoise.release_reader": _READER,
    "pymc_dpnoise.math.release": OLD_NAMES["pymc_dpnoise.math.release"],
}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_old_public_names_are_the_new_objects(old):
    mod = importlib.import_module(old)
    for name in OLD_NAMES[old]:
        new = importlib.import_module(NEW_MODULE.get(name, "pymc_dpnoise.posterior_release"))
        assert getattr(mod, name) is getattr(new, name), (old, name)
        obj = getattr(new, name)
        if callable(obj):  # defined in the new home, not re-exported from the old one
            assert obj.__module__.startswith("pymc_dpnoise.posterior_release."), (name, obj)
    if old in OLD_ALL:
        assert sorted(mod.__all__) == sorted(OLD_ALL[old])
    if old == "pymc_dpnoise.mechanisms":  # still listed, so star imports and the tests see them
        assert set(_MECHANISMS) <= set(mod.__all__) and set(_MECHANISMS) <= set(dir(mod))


def test_the_new_package_exports_what_the_old_modules_did():
    """The package's ``__all__`` is the union of the old modules' ``__all__`` and nothing else,
    and every name in it resolves."""
    old = {n for names in OLD_ALL.values() for n in names} | set(_MECHANISMS)
    assert set(pr.__all__) == old
    for name in pr.__all__:
        assert getattr(pr, name) is not None
    assert pmd.posterior_release is pr and "posterior_release" in pmd.SUBPACKAGES


def test_old_paths_import_first_without_warnings_or_cycles():
    """In a fresh interpreter (import order matters for cycles), the new home imported first,
    then every old path: no ImportError, and no warning raised from the package's own files
    (the old paths are plain re-exports, no DeprecationWarning)."""
    root = Path(pmd.__file__).parent
    code = f"""
import importlib, json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for name in ["pymc_dpnoise.posterior_release.sampling", *{sorted(OLD_NAMES)!r}]:
        importlib.import_module(name)
    import pymc_dpnoise as pmd
    pmd.mechanisms.posterior_sample, pmd.bayesnet.BayesNet, pmd.posterior_release.math
print(json.dumps([str(w.filename) for w in caught if w.filename.startswith({str(root)!r})]))
"""
    env = {**os.environ, "PYTHONPATH": str(root.parent)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
