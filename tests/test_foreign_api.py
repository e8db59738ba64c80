"""Only public names of other packages (issue 23): a private name of PyMC, PyTensor or ArviZ
can move in any minor release.  The few exceptions have no public alternative; each is listed
here with its reason, and its package's tested range is pinned in ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import re
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pymc_dpnoise"

#: (module, private name) -> why there is no public alternative
ALLOWED = {
    ("pymc.logprob.abstract", "_logprob"): "PyMC's documented dispatch registry for logp",
    ("pymc.logprob.abstract", "_logcdf"): "PyMC's dispatch registry for logcdf (as _logprob)",
    ("pymc.logprob.abstract", "_logccdf"): (
        "PyMC's dispatch registry for the log survival function (as _logprob)"
    ),
    ("pymc.distributions.distribution", "_support_point"): (
        "PyMC's documented dispatch registry for the initial point"
    ),
    ("argparse", "_SubParsersAction"): (
        "argparse has no public name for the action add_subparsers() returns (isinstance check)"
    ),
    ("argparse", "_ArgumentGroup"): (
        "argparse has no public name for what add_argument_group() returns (annotation)"
    ),
    ("os", "_exit"): "documented public function (exit without cleanup)",
}
#: the tested range is pinned (lower and upper bound) for these distributions
PINNED = {"pymc", "pytensor", "arviz"}


def private_uses(source: str) -> set[tuple[str, str]]:
    """``(module, name)`` for every private name of another package that ``source`` uses:
    ``from X import _name``, ``from X._mod import name``, ``import X._mod`` and ``X._name``
    (an attribute of a name bound by an import).  Dunder names are not private."""

    def private(part):
        return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))

    tree = ast.parse(source)
    found = set()
    bound = {}  # local name -> module it was imported as
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if node.module.split(".")[0] == "pymc_dpnoise":
                continue
            for part in node.module.split("."):
                if private(part):
                    found.add((node.module, part))
            for a in node.names:
                if private(a.name):
                    found.add((node.module, a.name))
                bound[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "pymc_dpnoise":
                    continue
                for part in a.name.split("."):
                    if private(part):
                        found.add((a.name, part))
                if a.asname:  # import a.b as c: c is a.b
                    bound[a.asname] = a.name
                else:  # import a.b: binds a
                    bound[a.name.split(".")[0]] = a.name.split(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                found.add((".".join([bound[value.id], *reversed(chain)]), node.attr))
    return found


def test_the_scan_finds_private_names():
    """The scan itself: each form is found (the test below could not fail otherwise)."""
    src = """
from arviz_stats.loo.loo_helper import _get_r_eff
from scipy.special._ufuncs import gammaln
import numpy._core as nc
import pytensor.tensor as pt
import pymc as pm
from .here import _ours
from pymc_dpnoise.math import _special
x = pt._shared(1)
y = pm.logprob.basic._private
z = pt.__name__
"""
    assert private_uses(src) == {
        ("arviz_stats.loo.loo_helper", "_get_r_eff"),
        ("scipy.special._ufuncs", "_ufuncs"),
        ("numpy._core", "_core"),
        ("pytensor.tensor", "_shared"),
        ("pymc.logprob.basic", "_private"),
    }


def test_no_private_name_of_another_package():
    uses = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        for use in private_uses(f.read_text()):
            uses.setdefault(use, []).append(str(f.relative_to(ROOT)))
    not_allowed = {use: where for use, where in uses.items() if use not in ALLOWED}
    assert not not_allowed, f"private names of other packages: {not_allowed}"
    stale = set(ALLOWED) - set(uses)
    assert not stale, f"exceptions no longer used (remove them from ALLOWED): {stale}"


def test_packages_of_the_exceptions_are_pinned():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    specs = {re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower(): d for d in deps}
    foreign = {module.split(".")[0] for module, _ in ALLOWED} - {"argparse", "os"}
    assert foreign <= PINNED
    for name in PINNED:
        spec = specs[name]
        assert ">=" in spec and "<" in spec.replace("<=", ""), f"{name}: {spec} is not a range"


# --------------------------------------------------------------------------------------------
# pointwise.loo's relative efficiency, from ArviZ's public ess (was arviz_stats' _get_r_eff)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def eight_schools():
    """A real PyMC posterior shipped with ArviZ (4 chains x 500 draws, a log_likelihood)."""
    from arviz_base import load_arviz_data

    return load_arviz_data("centered_eight")


def test_relative_efficiency_is_what_arviz_uses(eight_schools):
    """Same value as ArviZ's own default (its private helper, where it still exists), and
    az.loo with our value equals az.loo with ArviZ's default, bit for bit."""
    import arviz as az

    from pymc_dpnoise.pointwise import _relative_efficiency

    reff = _relative_efficiency(eight_schools)
    assert 0.05 < reff < 0.9  # an autocorrelated chain: far from 1
    post = eight_schools.posterior.to_dataset()
    ess = az.ess(post, method="mean")
    by_hand = np.mean(np.concatenate([ess[v].values.ravel() for v in post.data_vars])) / 2000
    # the same az.ess values on the same machine, averaged in two orders: <= 10 u = 1.1e-15
    assert reff == pytest.approx(by_hand, rel=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = az.loo(eight_schools, pointwise=True)
        ours = az.loo(eight_schools, pointwise=True, reff=reff)
        other = az.loo(eight_schools, pointwise=True, reff=reff / 2)
    np.testing.assert_array_equal(ours.pareto_k.values, default.pareto_k.values)
    np.testing.assert_array_equal(ours.elpd_i.values, default.elpd_i.values)
    # reff matters here (the PSIS tail length depends on it): the comparison can fail
    assert not np.array_equal(other.pareto_k.values, default.pareto_k.values)
    try:  # ArviZ's private helper (arviz_stats 1.3), while it exists
        from arviz_stats.loo.loo_helper import _get_r_eff
    except ImportError:
        return
    assert reff == _get_r_eff(eight_schools, 2000)


def test_relative_efficiency_of_one_chain_is_one(eight_schools):
    from pymc_dpnoise.pointwise import _relative_efficiency

    assert _relative_efficiency(eight_schools.isel(chain=[0])) == 1.0
