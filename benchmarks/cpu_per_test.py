"""pytest plugin: CPU seconds (this process + reaped children, e.g. gcc) and wall seconds of
every test, one line per test appended to ``$CPU_LOG`` ("cpu wall nodeid").

Used to decide which tests leave the default run (the 2026-11-24 cold-cache analysis in
``results/cpu_per_test_cold.md``)::

    PYTHONPATH=benchmarks CPU_LOG=/tmp/cpu.txt \\
    PYTENSOR_FLAGS=base_compiledir=$(mktemp -d) NUMBA_CACHE_DIR=$(mktemp -d) \\
    .venv/bin/python -m pytest -p cpu_per_test -m "not slow" -n 2 --dist loadgroup -q
"""

import os
import resource
import time

import pytest


def _cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0, w0 = _cpu(), time.time()
    yield
    with open(os.environ["CPU_LOG"], "a") as f:
        f.write(f"{_cpu() - t0:.3f} {time.time() - w0:.3f} {item.nodeid}\n")
