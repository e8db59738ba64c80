"""Small local Sphinx directives for the pymc-dpnoise docs (no third-party dependencies).

``.. if-importable: pkg.mod`` ... ``.. end-if-importable`` (a ``source-read`` filter)
    The reStructuredText between the two comment lines is kept only if ``pkg.mod`` can be
    imported (and is a real module, not an empty namespace package).  Lets the API page
    document modules that may not exist yet (``datasets``, ``cli``) without breaking a ``-W``
    build, with ordinary section titles inside.

``notebook-toctree``
    A toctree of every document under ``notebooks/`` (the symlink to ``../notebooks`` that
    ``conf.py`` creates).  Unlike a ``:glob:`` toctree it does not warn when there are no
    notebooks yet; it then renders the directive's content instead.

``sbc-results``
    Shows the coverage table and plot that
    ``python -m pymc_dpnoise.experiments.ldp_calibration`` writes to ``results/sbc``
    (``{fig}_{mode}_coverage.csv`` / ``.png``), if they exist; otherwise the directive's content.  Only files that exist at build time are referenced, so missing
    results never produce warnings.

``results-table``
    Renders a Markdown pipe table of a committed results file (``benchmarks/results/*.md``,
    ``results/**.md``) as a docs table, so that the numbers on the performance and guarantees
    pages are those the benchmark wrote, never retyped.  Options: ``:table:`` (which table of
    the file, from 1), ``:rows:`` (keep the rows whose first cell is one of these values,
    separated by ``;``), ``:columns:`` (keep and order these columns, by header, separated by
    ``;``),
    ``:caption:``.  A missing file, table, row or column is a build error (``-W``).

These parse reStructuredText: use them from ``.rst`` pages.
"""

from __future__ import annotations

import csv
import importlib
import os
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

logger = logging.getLogger(__name__)


def _parse(directive: SphinxDirective, lines: list[str]) -> list[nodes.Node]:
    node = nodes.section()  # any Element works as a container; titles are allowed inside
    node.document = directive.state.document
    source = directive.get_source_info()[0]
    content = StringList()
    for i, line in enumerate(lines):
        content.append(line, source, directive.lineno + i)
    nested_parse_with_titles(directive.state, content, node)
    return node.children


def _importable(modname: str) -> bool:
    try:
        mod = importlib.import_module(modname)
    except ImportError:
        return False
    # a directory without __init__.py imports as an (empty) namespace package
    return getattr(mod, "__file__", None) is not None


_IF_IMPORTABLE = re.compile(
    r"^\.\. if-importable: *(?P<mod>[\w.]+) *\n(?P<body>.*?)^\.\. end-if-importable *\n",
    re.M | re.S,
)


def _filter_optional_modules(app, docname, source):
    """Keep ``.. if-importable: mod`` ... ``.. end-if-importable`` blocks only if mod imports.

    Both markers are reStructuredText comments, so the block in between is ordinary
    reStructuredText (section titles included) and, when kept, is parsed exactly as if it had
    been written without them.
    """

    def keep(m):
        mod = m["mod"]
        if _importable(mod):
            return m["body"]
        logger.info("pmd_docs: %s is not importable; its section in %s is left out", mod, docname)
        return ""

    source[0] = _IF_IMPORTABLE.sub(keep, source[0])


class NotebookToctree(SphinxDirective):
    """Toctree of all documents under a folder; the content is shown when there are none."""

    has_content = True
    optional_arguments = 1  # folder, default "notebooks"
    option_spec = {"maxdepth": directives.nonnegative_int, "caption": directives.unchanged}

    def run(self):
        folder = (self.arguments[0] if self.arguments else "notebooks").strip("/")
        docs = sorted(d for d in self.env.found_docs if d.startswith(folder + "/"))
        if not docs:
            return _parse(self, list(self.content)) if self.content else []
        lines = [".. toctree::", f"   :maxdepth: {self.options.get('maxdepth', 1)}"]
        if "caption" in self.options:
            lines.append(f"   :caption: {self.options['caption']}")
        lines.append("")
        # toctree entries are relative to the current document
        base = os.path.dirname(self.env.docname)
        lines += ["   " + os.path.relpath(d, base or ".").replace(os.sep, "/") for d in docs]
        return _parse(self, lines)


class SBCResults(SphinxDirective):
    """``.. sbc-results:: fig1`` -- coverage table and plot of one calibration figure."""

    required_arguments = 1
    has_content = True
    option_spec = {"mode": directives.unchanged}

    def run(self):
        fig = self.arguments[0]
        mode = self.options.get("mode", "full")
        results = Path(self.config.pmd_results_dir)
        if not results.is_absolute():
            results = (Path(self.env.srcdir) / results).resolve()
        png = results / f"{fig}_{mode}_coverage.png"
        table = results / f"{fig}_{mode}_coverage.csv"
        if not png.exists() and not table.exists():
            return _parse(self, list(self.content)) if self.content else []
        lines: list[str] = []
        docdir = (Path(self.env.srcdir) / self.env.docname).parent
        if png.exists():
            self.env.note_dependency(str(png))
            rel = os.path.relpath(png, docdir).replace(os.sep, "/")
            lines += [
                f".. figure:: {rel}",
                "   :width: 100%",
                "",
                f"   Coverage of central posterior intervals against ε ({fig}, {mode} mode; "
                "shaded: 99% binomial band around each nominal level).",
                "",
            ]
        if table.exists():
            self.env.note_dependency(str(table))
            lines += self._table(table, fig, mode)
        return _parse(self, lines)

    @staticmethod
    def _table(path: Path, fig: str, mode: str) -> list[str]:
        """Coverage pivoted to one row per (model, parameter, level) and one column per ε."""
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        need = {"model", "param", "epsilon", "level", "coverage", "inside"}
        if not rows or not need <= set(rows[0]):
            return []
        eps = sorted({float(r["epsilon"]) for r in rows})
        cells: dict[tuple[str, str, float], dict[float, str]] = {}
        for r in rows:
            key = (r["model"], r["param"], float(r["level"]))
            mark = "" if r["inside"].strip().lower() == "true" else " ✗"
            cells.setdefault(key, {})[float(r["epsilon"])] = f"{float(r['coverage']):.3f}{mark}"
        out = [
            f".. list-table:: Coverage of central intervals by ε ({fig}, {mode} mode, "
            f"from ``{path.name}``; ✗: outside the 99% binomial band)",
            "   :header-rows: 1",
            "",
            "   * - model",
            "     - parameter",
            "     - nominal",
            *[f"     - ε = {e:g}" for e in eps],
        ]
        for (model, param, level), by_eps in sorted(cells.items()):
            out += [f"   * - {model}", f"     - ``{param}``", f"     - {level:g}"]
            out += [f"     - {by_eps.get(e, '-')}" for e in eps]
        return [*out, ""]


_MD_CODE = re.compile(r"`([^`]+)`")


def _md_tables(text: str) -> list[list[list[str]]]:
    """Every pipe table of a Markdown text: a list of rows of cells (header first, the
    ``|---|`` separator dropped)."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        line = line.strip()
        if line.startswith("|") and line.endswith("|"):
            cells = [c.strip() for c in line[1:-1].split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def _rst_text(text: str) -> str:
    """Plain Markdown text escaped for reStructuredText (``**bold**`` kept as bold)."""
    parts = text.split("**")
    esc = [re.sub(r"([\\*_|<>])", r"\\\1", p) for p in parts]
    if len(parts) % 2 == 0:  # an unpaired ** : keep it literal
        return "\\*\\*".join(esc)
    return "".join(e if i % 2 == 0 or not e.strip() else f"**{e}**" for i, e in enumerate(esc))


def _rst_cell(cell: str) -> str:
    """A Markdown cell as reStructuredText inline text: code spans become literals."""
    out, end = [], 0
    for m in _MD_CODE.finditer(cell):
        out += [_rst_text(cell[end : m.start()]), f"``{m[1]}``"]
        end = m.end()
    out.append(_rst_text(cell[end:]))
    return "".join(out).strip()


class ResultsTable(SphinxDirective):
    """``.. results-table:: ../benchmarks/results/x.md`` -- one table of a results file."""

    required_arguments = 1
    option_spec = {
        "table": directives.positive_int,
        "rows": directives.unchanged,
        "columns": directives.unchanged,
        "caption": directives.unchanged,
    }

    def _split(self, name: str) -> list[str]:
        return [v.strip() for v in self.options.get(name, "").split(";") if v.strip()]

    def run(self):
        rel = self.arguments[0]
        path = (Path(self.env.srcdir) / Path(self.env.docname).parent / rel).resolve()
        if not path.exists():
            raise self.error(f"results-table: {rel} does not exist")
        self.env.note_dependency(str(path))
        tables = _md_tables(path.read_text(encoding="utf-8"))
        index = self.options.get("table", 1)
        if index > len(tables):
            raise self.error(f"results-table: {rel} has {len(tables)} table(s), not {index}")
        header, *rows = tables[index - 1]
        columns = self._split("columns") or header
        missing = [c for c in columns if c not in header]
        if missing:
            raise self.error(f"results-table: {rel} has no column {missing} (has {header})")
        keep = self._split("rows")
        if keep:
            rows = [r for r in rows if r[0] in keep]
            found = {r[0] for r in rows}
            if found != set(keep):
                raise self.error(f"results-table: {rel} has no row {sorted(set(keep) - found)}")
        at = [header.index(c) for c in columns]
        name = Path(rel).name
        caption = self.options.get("caption", "")
        title = f"{caption} (from ``{name}``)" if caption else f"From ``{name}``"
        headed = any(columns)  # a key-value table has an empty header row: leave it out
        lines = [f".. list-table:: {title}", f"   :header-rows: {int(headed)}", ""]
        body = [[r[i] if i < len(r) else "" for i in at] for r in rows]
        for row in [columns, *body] if headed else body:
            cells = [_rst_cell(c) for c in row]
            lines += [f"   * - {cells[0]}".rstrip(), *(f"     - {c}".rstrip() for c in cells[1:])]
        return _parse(self, [*lines, ""])


def _always_reread(app, env, added, changed, removed):
    # pages whose content depends on files outside the source tree (notebook list, results)
    return [d for d in app.config.pmd_always_reread if d in env.found_docs]


def setup(app):
    app.add_config_value("pmd_results_dir", "../results/sbc", "env")
    app.add_config_value("pmd_always_reread", [], "env")
    app.connect("env-get-outdated", _always_reread)
    app.connect("source-read", _filter_optional_modules)
    app.add_directive("notebook-toctree", NotebookToctree)
    app.add_directive("sbc-results", SBCResults)
    app.add_directive("results-table", ResultsTable)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
