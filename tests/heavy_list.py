"""The measured-heavy tests, as a pytest hook (imported by ``conftest.py``).

``tests/heavy_tests.txt`` lists node ids (one per line, ``#`` comments) of tests that the
cold-cache measurement (``benchmarks/cold_cache_tests.sh``, per-test CPU from
``benchmarks/cpu_per_test.py``) found too expensive for the default run's budget of 500 CPU-s
from empty compile caches.  They get the ``heavy`` marker, so ``make test`` leaves them out and
``make test-heavy`` (run by CI) runs them: nothing loses coverage.  The list is written by
``benchmarks/select_heavy.py`` from a measurement; a listed id that no longer exists is
reported by ``tests/test_heavy_list.py``.
"""

from pathlib import Path

import pytest

LIST = Path(__file__).with_name("heavy_tests.txt")


def listed():
    """The node ids of ``heavy_tests.txt``."""
    if not LIST.exists():
        return set()
    lines = (ln.split("#", 1)[0].strip() for ln in LIST.read_text().splitlines())
    return {ln for ln in lines if ln}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the listed tests ``heavy`` before ``-m`` selects (tryfirst: before the mark
    plugin's deselection and before the xdist group suffix is appended)."""
    ids = listed()
    if not ids:
        return
    for item in items:
        if item.nodeid.split("@", 1)[0] in ids:
            item.add_marker(pytest.mark.heavy)
