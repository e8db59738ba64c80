"""The documentation leads with use: the distribution pages and the table of every distribution.

* Every page in ``docs/distributions/`` (but the index) opens with what it models and an
  *Example* section, before any displayed equation: a doctest that simulates a release with
  the package's own mechanism, fits the noise-aware model with ``pm.sample`` and prints
  whether the truth is inside the posterior's 94% interval.  The structure is checked in the
  default run; running the examples is a ``backend`` test (``pm.sample`` compiles the model
  natively, as users run it: 1--2 minutes per page on a loaded 2-core machine).
* ``docs/models.rst``'s distribution table names every public distribution of
  ``pymc_dpnoise.__all__`` and nothing else.

The printed interval bounds are illustrative: a NUTS run with a fixed seed is reproducible on
one machine but not bit for bit across platforms and backends, so a printed number with a
decimal point matches within 15% (plus 0.05); everything else (the ``True`` of each coverage
check, integers, text) must match exactly.
"""

from __future__ import annotations

import doctest
import inspect
import re
from pathlib import Path

import pymc as pm
import pytest

import pymc_dpnoise

ROOT = Path(__file__).resolve().parents[2]
TABLE_PAGE = ROOT / "docs" / "models.rst"  # "Distributions at a glance"
PAGES = sorted(p for p in (ROOT / "docs" / "distributions").glob("*.rst") if p.name != "index.rst")
_HEADING = re.compile(r"^([=\-^~\"'`#*+<>])\1+\s*$")


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of every section of an rst page, in order (the title first)."""
    lines = text.splitlines()
    heads = [
        i - 1
        for i in range(1, len(lines))
        if _HEADING.match(lines[i])
        and lines[i - 1].strip()
        and len(lines[i].rstrip()) >= len(lines[i - 1].rstrip())
    ]
    return [
        (lines[h], "\n".join(lines[h + 2 : nxt]))
        for h, nxt in zip(heads, [*heads[1:], len(lines) + 1], strict=True)
    ]


def _example(page: Path) -> str:
    """The body of the page's first section after the title (which must be its example)."""
    sections = _sections(page.read_text())
    assert len(sections) >= 2, f"{page.name}: no section after the title"
    heading, body = sections[1]
    assert heading.startswith("Example"), (
        f"{page.name}: the first section is {heading!r}; the page must open with its example"
    )
    return body


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_page_leads_with_example(page):
    text = page.read_text()
    sections = _sections(text)
    intro = text[: text.index(sections[1][0])]  # title and the paragraph(s) before the example
    body = _example(page)
    assert ".. math::" not in intro + body, f"{page.name}: displayed math before the example ends"
    assert len(intro.split()) >= 25, f"{page.name}: say what the distribution models first"
    examples = doctest.DocTestParser().get_examples(body)
    source = "".join(e.source for e in examples)
    wanted = "".join(e.want for e in examples)
    # the release is simulated with the package's mechanism (or a noise spec's ``release``)
    assert re.search(r"pmd\.mechanisms\.|pymc_dpnoise\.mechanisms|\.release\(", source), page.name
    assert "pm.sample(" in source and "random_seed=" in source, page.name
    assert "True" in wanted and "False" not in wanted, (
        f"{page.name}: the example must print True for the truth covered"
    )


# --------------------------------------------------------------------------------------------
# Running the examples
# --------------------------------------------------------------------------------------------
_NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+")


class _TolerantChecker(doctest.OutputChecker):
    """Doctest output check with numbers that have a decimal point matched within
    ``0.15 |want| + 0.05``; integers, ``True`` / ``False`` and all other text exactly."""

    def check_output(self, want, got, optionflags):
        if super().check_output(want, got, optionflags):
            return True
        want_n, got_n = _NUMBER.findall(want), _NUMBER.findall(got)
        if _NUMBER.sub("#", want).split() != _NUMBER.sub("#", got).split():
            return False
        if len(want_n) != len(got_n):
            return False
        for w, g in zip(want_n, got_n, strict=True):
            if "." not in w:
                if w != g:
                    return False
            elif abs(float(w) - float(g)) > 0.15 * abs(float(w)) + 0.05:
                return False
        return True


def run_example(page: Path, verbose: bool = False) -> doctest.TestResults:
    """Run the doctest of ``page``'s example section; the report is printed on failure."""
    test = doctest.DocTestParser().get_doctest(
        _example(page), globs={}, name=page.name, filename=str(page), lineno=0
    )
    runner = doctest.DocTestRunner(
        checker=_TolerantChecker(),
        verbose=verbose,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    runner.run(test)
    return runner.summarize(verbose=False)


@pytest.mark.backend
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_page_example_runs(page):
    results = run_example(page)
    assert results.attempted > 0
    assert results.failed == 0, f"{page.name}: {results.failed} example(s) failed (report above)"


@pytest.mark.parametrize(
    ("want", "got", "ok"),
    [
        ("mu: [0.33, 1.43] True", "mu: [0.35, 1.40] True", True),
        ("mu: [0.33, 1.43] True", "mu: [0.35, 1.40] False", False),
        ("mu: [0.33, 1.43] True", "mu: [0.60, 1.43] True", False),
        ("5 of 5 covered", "4 of 5 covered", False),
        ("5 of 5 covered", "5 of 5 covered\n", True),
    ],
)
def test_tolerant_checker(want, got, ok):
    assert _TolerantChecker().check_output(want + "\n", got, doctest.NORMALIZE_WHITESPACE) is ok


# --------------------------------------------------------------------------------------------
# The index table
# --------------------------------------------------------------------------------------------
def _public_distributions() -> set[str]:
    """Names in ``__all__`` that a user writes as a distribution: ``pm.Distribution``
    subclasses, the noise-spec count classes and the model-building helpers (functions that
    add a distribution with its latent to the current model)."""
    out = set()
    for name in pymc_dpnoise.__all__:
        if name.startswith("_") or name in pymc_dpnoise.SUBPACKAGES:
            continue
        obj = getattr(pymc_dpnoise, name)
        if inspect.isclass(obj) and issubclass(obj, pm.Distribution):
            out.add(name)
    return out | set(pymc_dpnoise._DISTRIBUTIONS)


def _table_names(index_text: str) -> set[str]:
    """The ``pymc_dpnoise.<name>`` referenced in the first cell of the distribution table's rows."""
    start = index_text.index(".. list-table::")
    table = index_text[start : index_text.index("\n\n", index_text.index("* - ", start))]
    assert "distribution (:mod:`pymc_dpnoise`)" in table, "not the distribution table"
    rows = re.findall(r"^   \* - (.*?)(?=^     - )", table, flags=re.M | re.S)[1:]
    assert rows, "no rows found in the index table"
    return {n for row in rows for n in re.findall(r":(?:class|func):`~?pymc_dpnoise\.(\w+)`", row)}


def test_index_table_lists_every_public_distribution():
    named = _table_names(TABLE_PAGE.read_text())
    public = _public_distributions()
    assert public - named == set(), (
        f"missing from docs/models.rst's table: {sorted(public - named)}"
    )
    assert named - public == set(), (
        f"in docs/models.rst's table but not public distributions: {sorted(named - public)}"
    )
    assert named <= set(pymc_dpnoise.__all__)


def test_table_names_sees_rows_and_cells():
    """The parser reads first cells only: a name in another column, or a dropped row, is not
    counted (so the check above fails when a row is missing)."""
    text = TABLE_PAGE.read_text()
    assert {"NoisyBinomial", "LaplaceNoisyMultinomialGivenCounts"} <= _table_names(text)
    row = text.index("   * - :class:`~pymc_dpnoise.NoisyBinomial`")
    dropped = text[:row] + text[text.index("   * - ", row + 1) :]
    assert "NoisyBinomial" not in _table_names(dropped)
    assert "NoisyPoisson" not in _table_names(dropped)
