"""The docs' command-line page (``docs/cli.rst``), generated from the CLI's registry.

The page's parts come from :func:`pymc_dpnoise.cli._reference.render`; these tests check that
they say what the command line does: the worked examples are parsed out of the generated text
and run (tiny draws), the model table names every command, its distribution and only options
the command has, the exit codes agree with ``--help``, and the README's command table lists
every command.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pytest

from pymc_dpnoise.cli import MODELS, main
from pymc_dpnoise.cli._args import FIT_EPILOG
from pymc_dpnoise.cli._base import EXIT_CODES
from pymc_dpnoise.cli._reference import PARTS, command_help, render, wrap_command
from pymc_dpnoise.cli._registry import FAMILIES

ROOT = Path(__file__).resolve().parents[2]
#: appended to every example: tiny draws with PyMC's sampler on one core
TINY = ["--sampler", "pymc", "--draws", "30", "--tune", "30", "--chains", "1", "--cores", "1"]
TINY += ["--quiet"]


def _code_blocks(rst: str) -> list[tuple[str, str]]:
    """(language, code) of every ``.. code-block::`` of ``rst``, in order."""
    blocks = []
    lines = rst.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^\.\. code-block:: *(\w+)$", line)
        if not m:
            continue
        body = []
        for nxt in lines[i + 2 :]:  # the blank line after the directive is skipped
            if nxt and not nxt.startswith("   "):
                break
            body.append(nxt)
        blocks.append((m[1], textwrap.dedent("\n".join(body)).strip("\n") + "\n"))
    return blocks


def _examples_on_the_page() -> list[tuple[str, str]]:
    """(Python set-up, command) of every worked example, as the generated page shows them."""
    blocks = _code_blocks(render("examples"))
    assert [lang for lang, _ in blocks] == ["python", "bash"] * len(FAMILIES)
    out = []
    for (_, setup), (_, shell) in zip(blocks[::2], blocks[1::2], strict=True):
        command = " ".join(part.strip() for part in shell.replace("\\\n", " ").split())
        out.append((setup, command))
    return out


def test_the_page_shows_every_family_example_as_the_registry_holds_it():
    shown = _examples_on_the_page()
    assert shown == [(f.example.setup, f.example.command) for f in FAMILIES]
    for family, (_, command) in zip(FAMILIES, shown, strict=True):
        words = shlex.split(command)
        assert words[:2] == ["pymc-dpnoise", "fit"]
        assert words[2] in {s.name for s in family.models}  # an example of its own family


#: examples run in the default test mode; the others compile for minutes even in the Python
#: VM (graph rewrites of logp and gradient; 60-310 s each measured at load 12), so they run with
#: the backend tests
DEFAULT_EXAMPLES = ("frequency",)


@pytest.mark.parametrize(
    "family",
    [
        pytest.param(f, id=f.name, marks=() if f.name in DEFAULT_EXAMPLES else pytest.mark.backend)
        for f in FAMILIES
    ],
)
def test_every_example_on_the_page_runs(family, tmp_path, monkeypatch, capsys):
    """Run the page's set-up code in an empty directory, then its command (tiny draws)."""
    setup, command = _examples_on_the_page()[FAMILIES.index(family)]
    monkeypatch.chdir(tmp_path)
    exec(compile(setup, f"<example {family.name}>", "exec"), {})
    words = shlex.split(command)
    assert main([*words[1:], *TINY]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    spec = MODELS[words[2]]
    assert "Posterior summary (94% HDI):" in out
    assert any(d in out for d in (spec.distribution, *spec.also))


def test_examples_fit_the_page_width():
    """Code lines of at most 72 characters (the page's code blocks show about 75), and the
    wrapped command lines join back to the command."""
    for family in FAMILIES:
        assert max(map(len, family.example.setup.splitlines())) <= 72, family.name
        lines = wrap_command(family.example.command)
        assert all(len(line) <= 72 for line in lines)
        joined = " ".join(line.rstrip(" \\").strip() for line in lines)
        assert joined == family.example.command
    assert wrap_command("a --lower -5 --upper 5", width=16) == ["a --lower -5 \\", "    --upper 5"]


def test_the_model_table_names_every_command_and_distribution():
    table = render("models")
    for name, spec in MODELS.items():
        assert f":ref:`{name} <cli-fit-{name}>`" in table
        for dist in (spec.distribution, *spec.also):
            assert f":class:`~pymc_dpnoise.{dist}`" in table


@pytest.mark.parametrize("model", list(MODELS))
def test_the_key_options_are_options_of_the_command(model):
    """Every flag the table's synopsis names is in ``fit MODEL --help``, and every option the
    command requires is in the synopsis."""
    spec = MODELS[model]
    assert spec.synopsis
    helptext = command_help("fit", model)
    named = set(re.findall(r"--[A-Za-z][\w-]*", spec.synopsis))
    assert named and all(re.search(rf"{re.escape(f)}\b(?!-)", helptext) for f in named), named
    for opt in (*spec.data.options, *spec.options):
        if opt.required:
            assert named & set(opt.flags), (model, opt.flags)


def test_every_command_has_its_help_on_the_page():
    page = render("commands")
    for name in MODELS:
        assert f".. _cli-fit-{name}:" in page
        assert f"usage: pymc-dpnoise fit {name} " in page


def test_exit_codes_agree_with_fit_help():
    epilog = " ".join(FIT_EPILOG.split())
    for code, _ in EXIT_CODES:
        assert re.search(rf"\b{code} \w", epilog), code
    assert "130" in render("exit-codes") and "--save" in render("output")


def test_the_docs_page_uses_every_part_and_is_in_the_toctree():
    page = (ROOT / "docs" / "cli.rst").read_text(encoding="utf-8")
    used = re.findall(r"^\.\. cli-reference:: *(\S+)", page, flags=re.M)
    assert sorted(used) == sorted(PARTS)
    assert re.search(r"^   cli$", (ROOT / "docs" / "index.rst").read_text(), flags=re.M)
    with pytest.raises(ValueError, match="part must be one of"):
        render("nope")


def test_the_readme_command_table_lists_every_command():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Command line") :]
    rows = [r for r in section.splitlines() if r.startswith("| `")]
    listed = {m for r in rows for m in re.findall(r"`([a-z-]+)`", r.split("|")[1])}
    assert listed == set(MODELS)
    cells = " ".join(r.split("|")[2] for r in rows)
    for spec in MODELS.values():
        assert spec.distribution in cells, spec.name
