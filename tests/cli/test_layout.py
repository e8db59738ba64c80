"""The layout of :mod:`pymc_dpnoise.cli`: layers without cycles, short modules, one registry.

The command line is one module per model family (``cli/families/``) over shared layers, with a
registry the argument parser reads.  These tests hold that shape: the import statements of
every ``cli`` module (parsed with :mod:`ast`, function-level imports included) form a graph
without cycles in which every import goes down a layer; every module imports alone in a fresh
interpreter without NumPy or PyMC; no module is longer than 800 lines; the registry lists
every family module.  No sampling: fast.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "pymc_dpnoise" / "cli"
HEAVY = ("numpy", "pymc", "pytensor", "duckdb", "arviz", "pandas", "scipy")
MAX_LINES = 800


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: every module of pymc_dpnoise.cli -> its file
MODULES = {_module_name(p): p for p in sorted(CLI.rglob("*.py"))}

#: the layers, bottom up: a module may import only modules of a lower layer
LAYERS = [
    ["_base", "_spec"],
    ["_options", "_columns", "_read", "_write", "_checks"],
    ["families", "families.*"],
    ["_registry"],
    ["_args"],
    ["_fit", "_reference"],
    [""],  # the package: main()
]


def _layer(module: str) -> int:
    rel = module.removeprefix("pymc_dpnoise.cli").removeprefix(".")
    for rank, names in enumerate(LAYERS):
        for name in names:
            if rel == name or (name.endswith(".*") and rel.startswith(name[:-1])):
                return rank
    raise AssertionError(f"{module} is in no layer of LAYERS: place it there")


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of ``modules`` its import statements name (anywhere in it)."""
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module
                # ``from . import x`` imports the module x
                targets = [source, *(f"{source}.{alias.name}" for alias in node.names)]
            else:
                continue
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (its modules in order, the first repeated), or None."""
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


def test_the_import_graph_is_read_from_the_sources():
    """The parser finds the imports the layout is made of (else the checks below are empty)."""
    assert len(MODULES) >= 15
    cli = "pymc_dpnoise.cli"
    assert f"{cli}._registry" in GRAPH[f"{cli}._args"]
    families = {m for m in MODULES if m.startswith(f"{cli}.families.")}
    assert families and families <= GRAPH[f"{cli}._registry"]
    assert all(f"{cli}._spec" in GRAPH[f] for f in families)
    # function-level imports count (the old cycle was one: _args.build_parser -> _models)
    assert f"{cli}._read" in GRAPH[f"{cli}._fit"]
    # the cycle finder finds a cycle, and only a cycle
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_cycle_in_the_cli():
    assert find_cycle(GRAPH) is None


def test_every_import_goes_down_a_layer():
    """Nothing imports back up: families import only the shared layers below them (never
    each other, the registry or the parser), the registry imports the families, ``_args``
    the registry."""
    upward = [
        f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets if _layer(b) >= _layer(a)
    ]
    assert upward == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_cli_module_imports_alone_without_heavy_packages(module):
    """Each module imports in a fresh interpreter (no hidden order dependence) and loads none
    of NumPy, PyMC, DuckDB ...: ``--help`` stays fast."""
    code = (
        f"import importlib, sys; importlib.import_module({module!r}); "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_cli_module_is_longer_than_800_lines(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module}: {lines} lines"


def test_the_registry_lists_every_family_module_in_order():
    from pymc_dpnoise.cli import MODELS
    from pymc_dpnoise.cli._registry import FAMILIES

    modules = sorted(p.stem for p in (CLI / "families").glob("*.py") if p.stem != "__init__")
    assert sorted(f.name for f in FAMILIES) == modules
    for family in FAMILIES:
        mod = __import__(f"pymc_dpnoise.cli.families.{family.name}", fromlist=["FAMILY"])
        assert mod.FAMILY is family
        assert family.models
    assert list(MODELS) == [s.name for f in FAMILIES for s in f.models]
