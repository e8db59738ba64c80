import os
import sys

# Before NumPy is imported: one BLAS thread per test process (see the Makefile).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
sys.path.insert(0, os.path.dirname(__file__))


# --------------------------------------------------------------------------------------------
# Compile mode of the default run (tests/README.md, "Compile mode")
# --------------------------------------------------------------------------------------------
import pytensor  # noqa: E402
import pytest  # noqa: E402
from compile_modes import TEST_MODE  # noqa: E402

#: markers whose tests compile in PyTensor's default mode (Numba), as users run them
NATIVE_MARKERS = ("slow", "backend")


@pytest.fixture(autouse=True)
def _test_compile_mode(request):
    """Compile in :data:`TEST_MODE`, except under a ``NATIVE_MARKERS`` marker or with
    ``PMD_TEST_MODE=native`` in the environment (the whole run in the default mode)."""
    native = os.environ.get("PMD_TEST_MODE", "").lower() == "native" or any(
        request.node.get_closest_marker(m) for m in NATIVE_MARKERS
    )
    if native:
        yield
        return
    # cxx="": no C code either.  Inner graphs (Scan, OpFromGraph) are linked by PyTensor with
    # its own VM linker, which generates C thunks whenever a compiler exists: gcc then took
    # 30+ CPU-seconds of a cold run's first tests.
    with pytensor.config.change_flags(mode=TEST_MODE, cxx=""):
        yield


# --------------------------------------------------------------------------------------------
# xdist groups: one worker per group, and per test file (tests/README.md, "Rules" 4); the
# measured-heavy tests leave the default run (tests/heavy_list.py, tests/heavy_tests.txt)
# --------------------------------------------------------------------------------------------
import heavy_list  # noqa: E402
from xdist_groups import pytest_collection_modifyitems  # noqa: E402, F401


def pytest_configure(config):
    """Register :mod:`heavy_list` (its collection hook runs first, before ``-m`` selects)."""
    if not config.pluginmanager.is_registered(heavy_list):
        config.pluginmanager.register(heavy_list, "pmd_heavy_list")


# --------------------------------------------------------------------------------------------
# A quiet end of an xdist worker
# --------------------------------------------------------------------------------------------
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """In an xdist worker, collect the heap's garbage before the worker reports that it has
    finished, then freeze what is left.  Once told it has finished, execnet gives the worker 5
    wall-seconds to return and then sends it a SIGINT; pytest's own teardown ends with a full
    ``gc.collect()``, which on a heap of thousands of compiled graphs took longer than that on
    a loaded machine, so the KeyboardInterrupt landed in a gc callback (Hypothesis', JAX's) and
    was printed as a ``PytestUnraisableExceptionWarning`` with its traceback.  Frozen objects
    are skipped by later collections; the process exits right after."""
    if hasattr(session.config, "workerinput"):
        import gc

        gc.collect()
        gc.freeze()
