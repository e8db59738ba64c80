"""The architecture page is true, and the package keeps its shape.

``docs/architecture.rst`` draws the package as rows of subpackages, each importing only from
its own row and the rows below.  These tests read the rows from the page and check them
against the import statements of every module of the package (parsed with :mod:`ast`,
function-level imports included): every module is in a row, no import goes up a row, and
the import graph of the whole package has no cycle.  They also check that the page names only
modules, files and pages that exist, and that its ``grep`` examples find what it says.  The
line limit of the modules of ``mechanisms/`` is here too (``cli/``'s is in
``cli/test_layout.py``), and so is the rule that no module imports a private name or module
(one leading underscore) of another subpackage: what is shared across subpackages has a public
name inside the package, so the boundaries are visible.  No sampling: fast.

Not counted as imports: the PEP 562 re-exports (``pymc_dpnoise.X`` and the posterior-release
names of ``pymc_dpnoise.mechanisms``, loaded by ``importlib`` on first attribute access, never
at import time), and doctest lines inside docstrings.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pymc_dpnoise"
PAGE = ROOT / "docs" / "architecture.rst"
MAX_LINES = 800


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: every module of the package -> its file
MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ``modules`` that its import statements load.

    ``import a.b.c`` / ``from a.b.c import x`` load ``a.b.c`` and the packages above it
    (``a``, ``a.b``), and ``from a.b import c`` loads the module ``a.b.c`` if there is one;
    the packages above the importing module itself are not counted (they are being imported
    already).  A name imported from a package's ``__init__`` (not a submodule) is an import
    of that ``__init__``, whoever imports it.
    """
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        own = set(_ancestors(name))
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                loaded = [alias.name for alias in node.names]
                named = []
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                subs = [f"{source}.{a.name}" for a in node.names]
                loaded = [source, *(s for s in subs if s in modules)]
                # a name defined in the source's __init__ needs that __init__ to have run
                named = [source] if any(s not in modules for s in subs) else []
            else:
                continue
            for target in loaded:
                for t in [*_ancestors(target), target]:
                    if t in modules and t != name and t not in own:
                        edges.add(t)
            edges.update(t for t in named if t in modules and t != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its nodes in order, the first repeated), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


GRAPH = import_graph(MODULES)


def page_rows(text: str) -> list[list[str]]:
    """The rows of the page's layer picture, top (entry points) first: the names after
    ``label |`` on every line of the code block that has a label."""
    block = text.split(".. code-block:: text", 1)[1].split("\n\n", 2)[1]
    rows = [
        m.group(1).split()
        for line in block.splitlines()
        if (m := re.fullmatch(r"   [a-z][a-z ]*?\s+\| (.*)", line))
    ]
    assert rows, "no rows found in the layer picture"
    return rows


ROWS = page_rows(PAGE.read_text(encoding="utf-8"))
#: top-level name (subpackage or module of pymc_dpnoise) -> its rank, 0 the bottom row
RANK = {name: len(ROWS) - 1 - i for i, row in enumerate(ROWS) for name in row}


def _rank(module: str) -> int | None:
    """The row of ``module`` (None for the package's own ``__init__``)."""
    if module == "pymc_dpnoise":
        return None
    return RANK[module.split(".")[1]]


def test_the_graph_and_the_rows_are_read():
    """The parsers find what the checks below rely on (else those would pass on nothing)."""
    assert ROWS[0][:2] == ["cli", "experiments"] and ROWS[-1] == ["validation", "optional"]
    assert len(MODULES) > 80
    assert "pymc_dpnoise.math" in GRAPH["pymc_dpnoise.distributions.clipped"]
    # function-level imports count
    assert "pymc_dpnoise.summaries" in GRAPH["pymc_dpnoise.distributions.clipped"]
    # ``from . import x`` loads the submodule x, not the package it is in
    assert "pymc_dpnoise.datasets.features" in GRAPH["pymc_dpnoise.datasets"]
    # ``from ..math.sufficient import ...`` loads math/__init__ too
    assert "pymc_dpnoise.math" in GRAPH["pymc_dpnoise.mechanisms.sufficient"]
    # the cycle finder finds a cycle, and only a cycle
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    # names resolve as modules (by file) or attributes, and only then
    assert _resolves("pymc_dpnoise.math.clipped") and _resolves("pymc_dpnoise.mechanisms.core.clip")
    assert not _resolves("pymc_dpnoise.math.no_such") and not _resolves("pymc_dpnoise.mechanisms.x")
    # the rows parser sees a dropped row
    text = PAGE.read_text(encoding="utf-8")
    dropped = re.sub(r"\n   log densities +\| math\n", "\n", text)
    assert "math" not in {n for row in page_rows(dropped) for n in row}


def test_no_import_cycle_in_the_package():
    assert find_cycle(GRAPH) is None


def test_every_module_is_in_one_row_of_the_page():
    names = [n for row in ROWS for n in row]
    assert len(names) == len(set(names)), "a name is in two rows"
    top = {m.split(".")[1] for m in MODULES if m != "pymc_dpnoise"}
    assert top - set(names) == set(), "modules missing from the page's rows"
    assert set(names) - top == set(), "names in the page's rows that are not modules"


def test_no_import_goes_up_a_row():
    upward = [
        f"{a} -> {b}"
        for a, targets in GRAPH.items()
        for b in targets
        if _rank(a) is not None and _rank(b) is not None and _rank(b) > _rank(a)
    ]
    assert upward == []


def test_the_package_init_imports_no_module_of_the_package():
    """The package's ``__init__`` imports no module of the package (so importing it from any
    row is no import up)."""
    assert GRAPH["pymc_dpnoise"] == set()


#: (importing module, private name) pairs allowed across subpackages, each with its reason
CROSS_PRIVATE_ALLOWED = {
    # the package root's table of lazy exports: distributions/__init__ builds its __all__ from
    # it so that the names are listed once, and the root imports no subpackage (test above), so
    # the list cannot live in distributions
    ("pymc_dpnoise.distributions", "pymc_dpnoise._DISTRIBUTIONS"),
    # the grouped-logp rewrite: math/_op_support.py is being reworked by a parallel change,
    # which gives lift_grouped its public home
    ("pymc_dpnoise.distributions.clipped", "pymc_dpnoise.math._op_support.lift_grouped"),
    # the same rewrite, and the per-distinct-row logp of reports with few distinct values, for
    # the other per-report families with grouped parameters (one mechanism for all of them)
    ("pymc_dpnoise.distributions.frequency", "pymc_dpnoise.math._op_support.lift_grouped"),
    (
        "pymc_dpnoise.distributions.frequency",
        "pymc_dpnoise.math._op_support.per_distinct_report",
    ),
    ("pymc_dpnoise.distributions.regression", "pymc_dpnoise.math._op_support.lift_grouped"),
}


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def private_cross_imports(modules: dict[str, Path]) -> list[tuple[str, str]]:
    """``(importing module, imported dotted name)`` for every import of a private name or module
    of the package (a part after ``pymc_dpnoise`` with one leading underscore) whose subpackage
    (or top-level module) is not the importer's.  Function-level imports count."""
    found = []
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            home = name.split(".")[1:2]
            for target in targets:
                parts = target.split(".")
                if parts[0] == "pymc_dpnoise" and any(map(_is_private, parts[1:])):
                    if parts[1:2] != home:
                        found.append((name, target))
    return found


def test_no_private_name_crosses_a_subpackage():
    found = private_cross_imports(MODULES)
    assert [f for f in found if f not in CROSS_PRIVATE_ALLOWED] == []
    assert CROSS_PRIVATE_ALLOWED <= set(found), "an allowed pair that no longer exists"


def test_the_private_import_scan_sees_each_kind_of_import(tmp_path):
    """Relative and absolute, from a package-level module, another subpackage or a private
    module of another subpackage: found; a private module of the importer's own subpackage and
    a public name: not."""
    src = tmp_path / "x.py"
    src.write_text(
        "from .._v import f\n"
        "from ..b._y import g\n"
        "from ._z import h\n"
        "from ..b import public\n"
        "def late():\n"
        "    import pymc_dpnoise.c._w\n"
        "    from pymc_dpnoise.a._u import k\n"
        "    from pymc_dpnoise.noise import _n\n",
        encoding="utf-8",
    )
    assert private_cross_imports({"pymc_dpnoise.a.x": src}) == [
        ("pymc_dpnoise.a.x", "pymc_dpnoise._v.f"),
        ("pymc_dpnoise.a.x", "pymc_dpnoise.b._y.g"),
        ("pymc_dpnoise.a.x", "pymc_dpnoise.c._w"),
        ("pymc_dpnoise.a.x", "pymc_dpnoise.noise._n"),
    ]


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if m.startswith("pymc_dpnoise.mechanisms"))
)
def test_no_mechanisms_module_is_longer_than_800_lines(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module}: {lines} lines"


def _resolves(dotted: str) -> bool:
    """``pymc_dpnoise.a.b`` is a module of the package (its file exists) or an attribute of
    one (then the module is imported)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        module = ".".join(parts[:i])
        if module not in MODULES:
            continue
        if i == len(parts):
            return True
        obj = importlib.import_module(module)
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_the_page_names_only_what_exists():
    text = PAGE.read_text(encoding="utf-8")
    dotted = set(re.findall(r"\bpymc_dpnoise(?:\.\w+)+", text))
    assert len(dotted) > 15
    assert [d for d in sorted(dotted) if not _resolves(d)] == []
    paths = set(re.findall(r"\b((?:notebooks|pymc_dpnoise|tests|docs)/[\w/.]*\w)", text))
    assert {"notebooks/expfam.ipynb", "pymc_dpnoise/math/clipped.py"} <= paths
    assert [p for p in sorted(paths) if not (ROOT / p).exists()] == []
    docs = set(re.findall(r":doc:`([\w/]+)`", text))
    assert docs and [d for d in sorted(docs) if not (ROOT / "docs" / f"{d}.rst").exists()] == []
    # every experiments module (one per notebook) and its notebook are on the page
    for path in sorted((PKG / "experiments").glob("*.py")):
        if path.stem not in ("__init__", "toolkit"):
            assert f"pymc_dpnoise.experiments.{path.stem}" in text
            assert f"notebooks/{path.stem}.ipynb" in text


def test_the_grep_examples_find_what_the_page_says():
    """Each ``grep -rn "pattern" dir`` on the page, run, lists the files of the comment lines
    under it (and the module the page says implements it has the pattern)."""
    text = PAGE.read_text(encoding="utf-8")
    examples = re.findall(r'grep -rn "([^"]+)" (\S+).*\n((?:   # .*\n)+)', text)
    assert len(examples) == 2
    for pattern, where, comments in examples:
        said = set(re.findall(r"pymc_dpnoise/[\w/]+\.py", comments))
        found = subprocess.run(
            ["grep", "-rlF", "--include=*.py", pattern, where],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.split()
        assert said and said <= set(found), (pattern, said, found)
