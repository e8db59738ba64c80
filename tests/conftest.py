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

try:  # pytest >= 9.2: structured node ids
    from _pytest.nodeid import NodeId
except ImportError:  # pragma: no cover
    NodeId = type(None)

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
# xdist groups: one worker per group, and per test file (tests/README.md, "Rules" 4)
# --------------------------------------------------------------------------------------------
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup`` (in an xdist worker), append ``@<group>`` to every test's node
    id, which is how xdist's scheduler learns the groups: the names of the test's
    ``xdist_group`` marks, joined as xdist joins them, or else the test's file.

    * xdist 3.8 appends the suffix by assigning ``item._nodeid``, which pytest 9.2 no longer
      reads (node ids are structured ``NodeId`` objects): every ``xdist_group`` mark of the
      suite was silently ignored and tests went to the workers one by one
      (pytest-dev/pytest-xdist#1386).  This hook runs after xdist's and sets the id itself
      where the suffix is missing.
    * A test without a mark is grouped with its file, so the compiled functions a module
      caches (``_FNS`` dicts, ``functools.cache``, ``scope="module"`` fixtures) are compiled in
      one worker only: in a cold partial run module-cached compiles were paid in both workers
      (e.g. ``test_issue17_clipped_normal_large_epsilon_limit``: 6.0 and 6.8 CPU-s)."""
    if not getattr(config.option, "loadgroup", False):  # set in xdist workers under loadgroup
        return
    for item in items:
        names = {
            str(m.args[0] if m.args else m.kwargs.get("name", "default"))
            for m in item.iter_markers("xdist_group")
        }
        suffix = "@" + ("_".join(sorted(names)) if names else item.nodeid.split("::")[0])
        if item.nodeid.endswith(suffix):  # xdist did it (pytest < 9.2, or a fixed xdist)
            continue
        if isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(item.nodeid + suffix)
        else:
            item._nodeid = item.nodeid + suffix


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
