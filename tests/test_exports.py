"""What a user can reach: every public distribution is ``pmd.<Name>``, every name an error
message sends the user to can be imported, and every ``pmd.x.y`` the sources and docs write
exists.

The distributions are found by walking the modules of ``pymc_dpnoise.distributions`` (not by
reading ``__all__``), so a new class that nobody exported fails here; the messages are found by
parsing every module of the package.  The index table of the docs is checked against
``__all__`` in ``docs/test_distribution_pages.py``.  No sampling: fast.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import pkgutil
import re
import tokenize
from pathlib import Path

import numpy as np
import pymc as pm
import pytest

import pymc_dpnoise as pmd
from pymc_dpnoise import noise

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pymc_dpnoise"


def _public_module(rel: Path) -> bool:
    """A module users import from: no private part, not the CLI or the experiments."""
    parts = rel.with_suffix("").parts
    return not any(p.startswith("_") and p != "__init__" for p in parts) and parts[0] not in (
        "cli",
        "experiments",
    )


def defined_distributions() -> dict[str, object]:
    """name -> object of every public distribution defined in ``pymc_dpnoise.distributions``:
    ``pm.Distribution`` classes, the distribution-like classes of ``_DISTRIBUTIONS`` and the
    model-building helpers (functions named like a class)."""
    out = {}
    for info in pkgutil.iter_modules(pmd.distributions.__path__, "pymc_dpnoise.distributions."):
        if info.name.rpartition(".")[2].startswith("_"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != info.name:
                continue
            if inspect.isclass(obj) and pm.Distribution in inspect.getmro(obj):
                out[name] = obj
            elif inspect.isfunction(obj) and name[0].isupper():
                out[name] = obj
            elif inspect.isclass(obj) and name in pmd._DISTRIBUTIONS:
                out[name] = obj
    return out


def test_every_public_distribution_is_exported():
    found = defined_distributions()
    # the walk finds the kinds it should (else the check below is empty)
    assert {"LaplacePerturbedClippedNormal", "NoisyBinomial", "LaplaceNoisyMultinomial"} <= set(
        found
    )
    assert "LaplaceNoisyBinomialRV" not in found  # random-variable ops are not distributions
    assert set(pmd._DISTRIBUTIONS) <= set(found)
    missing = sorted(n for n in found if n not in pmd.__all__)
    assert missing == [], f"public distributions not in pymc_dpnoise.__all__: {missing}"
    assert [n for n, obj in sorted(found.items()) if getattr(pmd, n) is not obj] == []


def _release(rng, family):
    """A Gaussian-noise release of a truncated sum (n, lower, upper, value)."""
    x = rng.exponential(2.0, 300) if family == "exponential" else rng.poisson(3.0, 300)
    upper = 8.0 if family == "exponential" else 10
    kept = x[(x >= 0) & (x <= upper)]
    return 300, 0, upper, float(kept.sum() + rng.normal(0.0, 5.0))


@pytest.mark.parametrize(
    "laplace_named, gaussian, param, family",
    [
        ("LaplaceNoisyTruncatedExponential", "GaussianNoisyTruncatedExponential", "lam",
         "exponential"),
        ("LaplaceNoisyTruncatedPoisson", "GaussianNoisyTruncatedPoisson", "mu", "poisson"),
    ],
)  # fmt: skip
def test_the_gaussian_noise_forms_are_usable_directly(laplace_named, gaussian, param, family):
    """``pmd.GaussianNoisyTruncatedExponential(..., lam=, noise_sigma=)`` is the distribution
    ``noise=noise.Gaussian(sigma)`` gives the Laplace-named class, and refuses bad input
    naming the argument as that class does."""
    n, lower, upper, value = _release(np.random.default_rng(1), family)
    args = {"n": n, param: 1.3, "lower": lower, "upper": upper}
    direct = getattr(pmd, gaussian).dist(**args, noise_sigma=5.0)
    via = getattr(pmd, laplace_named).dist(**args, noise=noise.Gaussian(5.0))
    assert type(direct.owner.op) is type(via.owner.op)
    lp = [pm.logp(rv, value).eval() for rv in (direct, via)]
    assert np.isfinite(lp[0]) and lp[0] == lp[1]
    with pm.Model():
        y = getattr(pmd, gaussian)("y", **args, noise_sigma=5.0, observed=value)
    assert pm.logp(y, value).eval() == lp[0]
    for bad, match in [
        ({"n": -1}, "`n`"),
        ({param: -1.0}, f"`{param}`"),
        ({"lower": -1}, "`lower`"),
    ]:
        with pytest.raises(ValueError, match=match):
            getattr(pmd, gaussian).dist(**{**args, **bad}, noise_sigma=5.0)
    with pytest.raises(ValueError, match="noise sigma"):
        getattr(pmd, gaussian).dist(**args, noise_sigma=0.0)


# ------------------------------------------------------------------------------------------
# Names that error messages send the user to
# ------------------------------------------------------------------------------------------

#: names a message is built in (besides ``raise``): ``msg=`` / ``message=`` arguments, the
#: arguments of ``_refuse*`` helpers, and variables named like a message
_MESSAGE_VARS = re.compile(r"(?i).*(msg|message|hint|why|domain|reason).*")


def _strings(node) -> list[str]:
    return [
        c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)
    ]


def message_strings(tree) -> list[str]:
    """The text of every error-message string of a module."""
    out = []
    for node in ast.walk(tree):
        parts = []
        if isinstance(node, ast.Raise) and node.exc is not None:
            parts = [node.exc]
        elif isinstance(node, ast.Call):
            parts = [k.value for k in node.keywords if k.arg in ("msg", "message")]
            func = node.func.attr if isinstance(node.func, ast.Attribute) else node.func
            if isinstance(func, ast.Name):
                func = func.id
            if isinstance(func, str) and "refuse" in func:
                parts += node.args
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(
                isinstance(t, ast.Name) and _MESSAGE_VARS.fullmatch(t.id) for t in targets
            ):
                parts = [node.value]
        out.extend(" ".join(_strings(p)) for p in parts)
    return out


def _reachable() -> set[str]:
    """Names importable from the package, a subpackage or a public module (their ``__all__``)."""
    names = set(pmd.__all__)
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        if _public_module(rel):
            module = ".".join(["pymc_dpnoise", *rel.with_suffix("").parts]).removesuffix(
                ".__init__"
            )
            names |= set(getattr(importlib.import_module(module), "__all__", ()))
    return names


def named_in_messages() -> dict[str, set[str]]:
    """name -> the modules whose error messages name it, for every class or function defined
    in a public module of the package."""
    defined = set()
    trees = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        trees[rel] = ast.parse(path.read_text(encoding="utf-8"))
        if _public_module(rel):
            defined |= {
                node.name
                for node in trees[rel].body
                if node.__class__ in (ast.ClassDef, ast.FunctionDef)
                and not node.name.startswith("_")
            }
    named: dict[str, set[str]] = {}
    for rel, tree in trees.items():
        for text in message_strings(tree):
            for tok in set(re.findall(r"\b[A-Za-z_]\w*\b", text)) & defined:
                named.setdefault(tok, set()).add(str(rel))
    return named


def test_the_message_scan_finds_messages_of_every_kind():
    """The scan sees the ways messages are built here: ``raise`` (``summarize_logreg`` in the
    logistic summary's refusal of draws), a ``_refuse*`` helper's argument (the CDF refusals
    name their class), a ``msg=`` argument and a message variable."""
    named = named_in_messages()
    assert {"summarize_logreg", "GaussianNoisyTruncatedNormal", "NoisyBinomial"} <= set(named)
    tree = ast.parse(
        "def f():\n    raise ValueError(f'use {x} A')\n"
        "check(x, msg='B ok')\n_refuse_cdfs('C')\nwhy = 'D'\nother = 'E'\n"
    )
    assert sorted(" ".join(message_strings(tree)).split()) == ["A", "B", "C", "D", "ok", "use"]


def test_names_in_error_messages_are_importable():
    """Every class or public function of the package that an error message names is
    importable: distributions as ``pmd.<Name>``, the rest from the package, a subpackage or a
    public module (listed in its ``__all__``).  Messages send users to these names."""
    named = named_in_messages()
    assert len(named) > 10
    reachable = _reachable()
    distributions = set(defined_distributions())
    missing = {
        tok: sorted(where)
        for tok, where in named.items()
        if (tok not in pmd.__all__ if tok in distributions else tok not in reachable)
    }
    assert missing == {}


# ------------------------------------------------------------------------------------------
# pmd.x.y written in the sources and the docs
# ------------------------------------------------------------------------------------------

_DOTTED = re.compile(r"\b(?:pmd|pymc_dpnoise)(?:\.[A-Za-z_]\w*)+")


def _resolves(dotted: str) -> bool:
    """``pymc_dpnoise.a.b`` (or ``pmd.a.b``) is an attribute path from the package, importing
    submodules on the way (``pymc_dpnoise.mechanisms.opendp_releases``)."""
    parts = ["pymc_dpnoise", *dotted.split(".")[1:]]
    obj = pmd
    for i, part in enumerate(parts[1:], start=2):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                return False
    return True


def _python_text(path: Path) -> str:
    """The source without its comments (strings, docstrings and doctests stay)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return " ".join(t.string for t in tokens if t.type != tokenize.COMMENT)


def written_references() -> dict[str, set[str]]:
    """``pmd.x.y`` / ``pymc_dpnoise.x.y`` -> the files writing it: every module of the
    package (code, strings and docstrings; comments left out), the docs' pages and the
    README."""
    files = [*PKG.rglob("*.py"), *(ROOT / "docs").rglob("*.rst"), ROOT / "README.md"]
    refs: dict[str, set[str]] = {}
    for path in files:
        if "_build" in path.parts:
            continue
        text = _python_text(path) if path.suffix == ".py" else path.read_text(encoding="utf-8")
        for ref in set(_DOTTED.findall(text)):
            refs.setdefault(ref, set()).add(str(path.relative_to(ROOT)))
    return refs


def test_the_reference_check_resolves_only_what_exists():
    assert _resolves("pmd.NoisyBinomial") and _resolves("pymc_dpnoise.mechanisms.core.clip")
    assert _resolves("pymc_dpnoise.mechanisms.opendp_releases.noise_from_measurement")
    assert _resolves("pmd.summaries.ClippedBinning.numpy")  # a method
    assert not _resolves("pmd.NoSuchName") and not _resolves("pymc_dpnoise.math.nope.x")
    assert not _resolves("pmd.distributions.GaussianNoisyMultinomial.nope")


def test_every_written_reference_resolves():
    """Every ``pmd.x`` / ``pymc_dpnoise.x.y`` in the package, the docs and the README names an
    object that exists (Sphinx does not warn about a dangling cross-reference here: nitpicky
    is off, so a renamed class would silently become plain text)."""
    refs = written_references()
    assert len(refs) > 300
    assert {"pymc_dpnoise.summaries.summarize_logreg", "pmd.NoisyBinomial"} <= set(refs)
    assert {r: sorted(w) for r, w in refs.items() if not _resolves(r)} == {}
