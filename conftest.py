"""The package's doctests (``--doctest-modules`` over ``pymc_dpnoise/``) compile in the default
test run's mode, as every test under ``tests/`` does (``tests/conftest.py``, tests/README.md
"Compile mode"): the Python VM with the full ``fast_run`` rewrites.  In PyTensor's default
(Numba) mode each doctest that evaluates a logp paid a 3-8 CPU-second Numba compile, about a
tenth of the default run; the backends users run are checked on the same graphs by the tests
marked ``backend``.  ``PMD_TEST_MODE=native`` runs them in the default mode."""

import os
import sys

import pytest
from _pytest.doctest import DoctestItem

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "tests"))


@pytest.fixture(autouse=True)
def _doctest_compile_mode(request):
    if not isinstance(request.node, DoctestItem) or (
        os.environ.get("PMD_TEST_MODE", "").lower() == "native"
    ):
        yield
        return
    import pytensor
    from compile_modes import TEST_MODE

    with pytensor.config.change_flags(mode=TEST_MODE, cxx=""):
        yield


# Modules without doctests whose import compiles Numba C entry points (seconds each): the C
# entry points built with the package (pymc_dpnoise/math/_aot.py) and the XLA handler; their
# tests import them where needed.
collect_ignore = [
    "pymc_dpnoise/math/_aot_entries.py",
    "pymc_dpnoise/math/_aot_build.py",
    "pymc_dpnoise/math/_clipped_normal_ffi.py",
]
