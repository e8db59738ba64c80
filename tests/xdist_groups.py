"""The xdist groups of the test suite, as a pytest hook (imported by ``conftest.py``; checked by
``test_xdist_groups.py`` on a small suite of its own)."""

import pytest

try:  # pytest >= 9.2: structured node ids
    from _pytest.nodeid import NodeId
except ImportError:  # pragma: no cover
    NodeId = type(None)


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
      (e.g. ``test_clipped_normal_large_epsilon_limit``: 6.0 and 6.8 CPU-s)."""
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
