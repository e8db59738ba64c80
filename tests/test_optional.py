"""Optional packages: every one the code imports is in a declared extra, and a feature whose
package is missing says which extra installs it (issue 23).

A missing package is simulated with ``monkeypatch.setitem(sys.modules, name, None)``: Python
then raises a real ``ModuleNotFoundError`` on ``import name`` (nothing of ours is mocked).
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import pymc_dpnoise as pmd
from pymc_dpnoise.optional import MissingOptionalDependency, require

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pymc_dpnoise"


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _req_name(req: str) -> str:
    return _canon(re.match(r"[A-Za-z0-9_.-]+", req).group(0))


def _extra_packages(extras: dict, extra: str, seen=()) -> set[str]:
    """The distributions an extra installs, following ``pymc-dpnoise[...]`` references."""
    out = set()
    for req in extras[extra]:
        name = _req_name(req)
        if name == "pymc-dpnoise":
            for sub in re.search(r"\[(.*)\]", req).group(1).split(","):
                if sub.strip() not in seen:
                    out |= _extra_packages(extras, sub.strip(), (*seen, extra))
        else:
            out.add(name)
    return out


def _missing(monkeypatch, *names):
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)


# --------------------------------------------------------------------------------------------
# the helper
# --------------------------------------------------------------------------------------------


def test_require_names_the_feature_and_the_extra(monkeypatch):
    _missing(monkeypatch, "zarr")
    for load in (True, False):
        with pytest.raises(MissingOptionalDependency) as info:
            require("zarr", extra="zarr", feature="--save x.zarr", load=load)
        msg = str(info.value)
        assert msg == (
            "--save x.zarr needs the optional package 'zarr', which is not installed: "
            'pip install "pymc-dpnoise[zarr]"'
        )
        assert isinstance(info.value, ImportError) and info.value.name == "zarr"


def test_require_a_submodule_of_a_missing_package(monkeypatch):
    _missing(monkeypatch, "opendp", "opendp.prelude")
    with pytest.raises(MissingOptionalDependency, match=r"'opendp'.*pymc-dpnoise\[opendp\]"):
        require("opendp.prelude", extra="opendp", feature="releasing with OpenDP")
    _missing(monkeypatch, "multi_freq_ldpy")
    with pytest.raises(MissingOptionalDependency, match="'multi-freq-ldpy'"):
        require("multi_freq_ldpy.x", extra="notebooks", feature="f", package="multi-freq-ldpy")


def test_require_returns_the_module_when_installed():
    import json

    assert require("json", extra="none", feature="f") is json
    assert require("json", extra="none", feature="f", load=False) is None


def test_require_does_not_disguise_an_import_error_inside_an_installed_package(
    tmp_path, monkeypatch
):
    """An installed package whose own dependency is missing: the original error propagates
    (telling the user to install the extra again would not help)."""
    pkg = tmp_path / "pmd_broken_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import pmd_no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as info:
        require("pmd_broken_pkg", extra="x", feature="f")
    assert not isinstance(info.value, MissingOptionalDependency)
    assert info.value.name == "pmd_no_such_dependency_xyz"


# --------------------------------------------------------------------------------------------
# the features that need an optional package
# --------------------------------------------------------------------------------------------


def test_cli_save_zarr_names_the_extra_before_sampling(tmp_path, monkeypatch, capsys):
    from pymc_dpnoise.cli import main

    _missing(monkeypatch, "zarr")
    data = tmp_path / "reports.csv"
    data.write_text("z\n" + "\n".join(str(v) for v in np.linspace(-3.0, 3.0, 20)) + "\n")
    save = tmp_path / "post.zarr"
    argv = ["fit", "clipped-normal", str(data), "--lower", "-5", "--upper", "5"]
    rc = main([*argv, "--epsilon", "1", "--sampler", "pymc", "--save", str(save)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"--save {save} (a Zarr store) needs the optional package 'zarr'" in err
    assert 'pip install "pymc-dpnoise[zarr]"' in err
    assert not save.exists()


def test_sample_compiled_names_the_extra(monkeypatch):
    from pymc_dpnoise.diagnostics import sample_compiled

    _missing(monkeypatch, "nutpie")
    with pytest.raises(MissingOptionalDependency, match=r"sample_compiled .*\[samplers\]"):
        sample_compiled(object(), draws=10, tune=10)


@pytest.mark.parametrize(("sampler", "module"), [("nutpie", "nutpie"), ("numpyro", "numpyro")])
def test_sbc_names_the_extra_before_any_worker_starts(monkeypatch, sampler, module):
    from pymc_dpnoise.diagnostics import simulation_based_calibration

    _missing(monkeypatch, module)
    with pytest.raises(MissingOptionalDependency, match=rf"sampler='{sampler}'.*\[samplers\]"):
        # the problem is never used: the check comes first
        simulation_based_calibration(object(), 1, sampler=sampler, n_jobs=1)


def test_opendp_release_names_the_extra(monkeypatch):
    from pymc_dpnoise.mechanisms import opendp_releases

    _missing(monkeypatch, "opendp", "opendp.prelude")
    with pytest.raises(MissingOptionalDependency, match=r"\[opendp\]"):
        opendp_releases.release_clipped_laplace(np.zeros(3), lower=-1.0, upper=1.0, epsilon=1.0)


def test_to_pgmpy_names_the_extra(monkeypatch):
    _missing(monkeypatch, "pgmpy")
    net = pmd.BayesNet.from_parents({0: (), 1: (0,)})
    theta = net.sample_parameters(1.0, np.random.default_rng(0))
    with pytest.raises(MissingOptionalDependency, match=r"to_pgmpy .*\[pgmpy\]"):
        net.to_pgmpy(theta)


# --------------------------------------------------------------------------------------------
# pyproject: every optional package the code imports is in a declared extra
# --------------------------------------------------------------------------------------------


def _imports():
    """Top-level module name -> files, for every absolute import in the package and every
    module imported through ``require``."""
    found: dict[str, set[str]] = {}
    for where, module, _, _ in _require_calls():
        found.setdefault(module.split(".")[0], set()).add(where)
    for f in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(f.relative_to(ROOT)))
    return found


def _require_calls():
    calls = []
    for f in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "require"
            ):
                kw = {k.arg: k.value for k in node.keywords}
                assert isinstance(node.args[0], ast.Constant), f"{f}: require(<non-literal>)"
                extra = kw["extra"]
                assert isinstance(extra, ast.Constant), f"{f}: require(extra=<non-literal>)"
                package = kw.get("package")
                calls.append(
                    (
                        str(f.relative_to(ROOT)),
                        node.args[0].value,
                        extra.value,
                        package.value if package is not None else None,
                    )
                )
    return calls


@functools.cache
def _installed() -> dict:
    return importlib.metadata.packages_distributions()  # slow: once


def _distribution(module: str) -> str:
    dists = _installed().get(module)
    return _canon(dists[0]) if dists else _canon(module)  # not installed: its own name


def test_every_imported_package_is_a_dependency_or_in_an_extra():
    project = _pyproject()
    core = {_req_name(r) for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    in_extras = set().union(*(_extra_packages(extras, e) for e in extras))
    imports = _imports()
    assert {"numpy", "pymc", "zarr", "nutpie", "opendp"} <= set(imports)  # the scan works
    stray = {}
    for module, files in imports.items():
        if module in sys.stdlib_module_names or module == "pymc_dpnoise":
            continue
        dist = _distribution(module)
        if dist not in core and dist not in in_extras:
            stray[module] = sorted(files)
    assert not stray, f"imported but neither a dependency nor in an extra: {stray}"


def test_every_require_call_names_an_extra_that_installs_the_package():
    extras = _pyproject()["optional-dependencies"]
    calls = _require_calls()
    modules = {c[1].split(".")[0] for c in calls}
    # the features of issue 23 go through the helper
    assert {"zarr", "nutpie", "numpyro", "opendp", "pgmpy", "multi_freq_ldpy"} <= modules, modules
    wrong = []
    for where, module, extra, package in calls:
        if extra not in extras:
            wrong.append((where, module, f"no extra {extra!r}"))
            continue
        dist = _canon(package) if package else _distribution(module.split(".")[0])
        if dist not in _extra_packages(extras, extra):
            wrong.append((where, module, f"extra {extra!r} does not install {dist!r}"))
    assert not wrong, wrong


def test_optional_packages_are_not_imported_at_module_level():
    """Optional packages are imported inside the function that needs them (via ``require``),
    so that importing any public module works with the plain install."""
    project = _pyproject()
    core = {_req_name(r) for r in project["dependencies"]}
    top_level = []
    for f in PACKAGE.rglob("*.py"):
        rel = f.relative_to(PACKAGE)
        # JAX backend dispatch: loaded only by JAX's linker
        if rel.name.endswith("_jax.py") and rel.parent.name == "math":
            continue
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "pymc_dpnoise":
                    continue
                if _distribution(top) not in core:
                    top_level.append((str(rel), name))
    assert not top_level, top_level
