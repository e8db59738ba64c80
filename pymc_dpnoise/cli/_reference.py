"""The docs' command-line page, generated from the command line's own registry and parser.

:func:`render` returns one part of the page as reStructuredText: the model table, the worked
example of every family, the exit codes, the output options and every command's ``--help``.
The docs build calls it (``docs/_ext/pmd_cli.py``: ``.. cli-reference:: PART``) and the tests
run the examples it shows, so the page cannot drift from the command line.  Standard library
only (the help texts come from :func:`pymc_dpnoise.cli.main` itself).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import textwrap

from ._args import build_parser
from ._base import EXIT_CODES, PROG
from ._registry import FAMILIES, MODELS
from ._spec import OneOf

__all__ = ["PARTS", "command_help", "render", "wrap_command"]

#: width of the help texts shown on the page (argparse reads it from ``COLUMNS``)
HELP_WIDTH = 80


def _escape(text: str) -> str:
    """Plain text as reStructuredText inline text (no markup, no references)."""
    text = re.sub(r"([\\*`|])", r"\\\1", text)
    return re.sub(r"_(?=\W|$)", r"\\_", text)


def _flags(opt) -> str:
    return " / ".join(f"``{f}``" for f in opt.flags)


def _literal_flags(text: str) -> str:
    """Plain text with every ``--flag`` in it as inline literal."""
    return re.sub(r"(--[A-Za-z][\w-]*)", r"``\1``", _escape(text))


def _reads(spec) -> str:
    """What the file holds, and the options choosing its columns."""
    columns = [o for o in spec.data.options if not isinstance(o, OneOf)]
    flags = ", ".join(_flags(o) for o in columns)
    return _escape(spec.what) + (f" ({flags})" if flags else "")


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, 95, break_long_words=False, break_on_hyphens=False)


def wrap_command(command: str, width: int = 72) -> list[str]:
    """A command line as shell lines of at most ``width`` characters, continued with ``\\``
    (an option and its value stay on one line)."""
    words = command.split(" ")
    units = []  # an option with its values, or a positional word
    for word in words:
        if units and not word.startswith("--") and units[-1].startswith("--"):
            units[-1] += " " + word
        else:
            units.append(word)
    lines = [units[0]]
    for unit in units[1:]:
        if len(lines[-1]) + 1 + len(unit) + 2 > width:
            lines[-1] += " \\"
            lines.append("    " + unit)
        else:
            lines[-1] += " " + unit
    return lines


def _label(model: str) -> str:
    return f"cli-fit-{model}"


def command_help(*argv: str) -> str:
    """The help text ``pymc-dpnoise *argv --help`` prints, at :data:`HELP_WIDTH` columns."""
    out, err = io.StringIO(), io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_WIDTH)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            build_parser().parse_args([*argv, "--help"])
    except SystemExit as exc:
        if exc.code not in (0, None):  # pragma: no cover - the parser itself is broken
            raise RuntimeError(f"{PROG} {' '.join(argv)} --help: {err.getvalue()}") from None
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return out.getvalue()


def _group(help_text: str, title: str) -> list[str]:
    """The lines of the option group ``title`` of a help text (its heading included)."""
    lines = help_text.splitlines()
    start = lines.index(f"{title}:")
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and lines[i][0] != " "), None)
    return lines[start:end]


def _models() -> list[str]:
    lines = [
        ".. list-table::",
        "   :header-rows: 1",
        "   :widths: 22 38 40",
        "",
        "   * - ``fit MODEL``",
        "     - what it models; the distribution it fits",
        "     - the file; key options (``[optional]``); priors",
    ]
    for family in FAMILIES:
        for spec in family.models:
            dists = ", ".join(
                f":class:`~pymc_dpnoise.{d}`" for d in (spec.distribution, *spec.also)
            )
            priors = ", ".join(_flags(o) for o in spec.options if o.prior)
            lines += [
                f"   * - :ref:`{spec.name} <{_label(spec.name)}>`",
                f"     - {_escape(spec.summary)}",
                "",
                f"       {dists}",
                f"     - {_reads(spec)}",
                "",
                f"       {_literal_flags(spec.synopsis)}",
                "",
                f"       priors: {priors or 'none'}",
            ]
    return [*lines, ""]


def _examples() -> list[str]:
    lines: list[str] = []
    for family in FAMILIES:
        ex = family.example
        commands = ", ".join(f":ref:`{s.name} <{_label(s.name)}>`" for s in family.models)
        lines += [
            family.title,
            "~" * len(family.title),
            "",
            *_wrap(_literal_flags(family.intro)),
            "",
            f"Commands: {commands}.",
            "",
            "Make a file of releases with the package's own mechanism (the truth is known):",
            "",
            ".. code-block:: python",
            "",
            *[("   " + line).rstrip() for line in ex.setup.splitlines()],
            "",
            "and fit it:",
            "",
            ".. code-block:: bash",
            "",
            *("   " + line for line in wrap_command(ex.command)),
            "",
            *_wrap(_literal_flags(ex.expect)),
            "",
        ]
    return lines


def _exit_codes() -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 10 90", ""]
    lines += ["   * - code", "     - meaning"]
    for code, meaning in EXIT_CODES:
        lines += [f"   * - {code}", f"     - {_escape(meaning)}"]
    return [*lines, ""]


def _output() -> list[str]:
    """The ``output`` options of every ``fit MODEL`` (their help, as ``--help`` shows it)."""
    text = command_help("fit", next(iter(MODELS)))
    return [
        ".. code-block:: text",
        "",
        *[("   " + line).rstrip() for line in _group(text, "output")],
        "",
    ]


def _commands() -> list[str]:
    lines: list[str] = []
    for argv, label, title in [
        ((), "cli-help", f"{PROG}"),
        (("demo",), "cli-demo", f"{PROG} demo"),
        (("fit",), "cli-fit", f"{PROG} fit"),
        *[(("fit", m), _label(m), f"{PROG} fit {m}") for m in MODELS],
    ]:
        lines += [f".. _{label}:", "", title, "~" * len(title), "", ".. code-block:: text", ""]
        lines += [("   " + line).rstrip() for line in command_help(*argv).splitlines()]
        lines.append("")
    return lines


#: the parts of the page, by the name ``.. cli-reference::`` takes
PARTS = {
    "models": _models,
    "examples": _examples,
    "exit-codes": _exit_codes,
    "output": _output,
    "commands": _commands,
}


def render(part: str) -> str:
    """One part of the command-line page as reStructuredText (see :data:`PARTS`)."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    return "\n".join(PARTS[part]()) + "\n"
