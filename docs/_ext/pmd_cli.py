"""``.. cli-reference:: PART`` -- a part of the command-line page, generated when the docs are built.

The text comes from :func:`pymc_dpnoise.cli._reference.render` (the model table, the worked
examples, the exit codes, the output options, every command's ``--help``), which reads the
command line's own registry and parser: the page cannot drift from the command line, and the
tests run the examples it shows (``tests/cli/test_layout.py``).  Parts: ``models``,
``examples``, ``exit-codes``, ``output``, ``commands``.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


class CLIReference(SphinxDirective):
    """``.. cli-reference:: models`` (or another part of :data:`~pymc_dpnoise.cli._reference.PARTS`)."""

    required_arguments = 1

    def run(self):
        from pymc_dpnoise.cli import _reference

        part = self.arguments[0]
        if part not in _reference.PARTS:
            raise self.error(
                f"cli-reference: unknown part {part!r} (one of {', '.join(_reference.PARTS)})"
            )
        # rebuild the page when the command line changes
        cli = Path(_reference.__file__).parent
        for path in sorted(cli.rglob("*.py")):
            self.env.note_dependency(str(path))
        source = self.get_source_info()[0]
        content = StringList()
        for i, line in enumerate(_reference.render(part).splitlines()):
            content.append(line, f"{source} (cli-reference {part})", i)
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, content, node)
        return node.children


def setup(app):
    app.add_directive("cli-reference", CLIReference)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
