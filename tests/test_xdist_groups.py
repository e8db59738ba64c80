"""``--dist loadgroup`` keeps a group, and a file without marks, in one xdist worker
(``xdist_groups.py``; tests/README.md, "Rules" 4): run on a small suite of its own in a
subprocess (pytest and xdist only: about 2 CPU-seconds)."""

import os
import re
import subprocess
import sys
from collections import defaultdict

TESTS = os.path.dirname(__file__)

_CONFTEST = f"""
import sys
sys.path.insert(0, {TESTS!r})
from xdist_groups import pytest_collection_modifyitems  # noqa: F401
"""

_MODULE = """
import pytest

@pytest.mark.parametrize("i", range(6))
def test_plain(i):
    pass

@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("i", range(3))
def test_shared(i):
    pass
"""


def test_groups_and_files_stay_in_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(_CONFTEST)
    for name in ("test_a.py", "test_b.py", "test_c.py"):
        (tmp_path / name).write_text(_MODULE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only xdist (other plugins import JAX, ...)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "xdist", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    workers = defaultdict(set)
    for gw, nodeid in re.findall(r"^\[(gw\d)\][^\n]*PASSED (\S+)", out.stdout, re.M):
        workers[nodeid.rpartition("@")[2]].add(gw)
    # 3 files of 6 plain tests, and 9 tests of the group "shared" across the 3 files
    assert set(workers) == {"test_a.py", "test_b.py", "test_c.py", "shared"}, out.stdout
    assert all(len(w) == 1 for w in workers.values()), dict(workers)
    assert len(set().union(*workers.values())) == 2  # both workers were used
    assert out.stdout.count(" PASSED ") == 27
