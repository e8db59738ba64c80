"""The notebooks say which mode their stored outputs come from, and say it truly.

The docs show the notebooks with their stored outputs (``docs/conf.py``: not executed during
the build).  Each notebook prints its mode in its first code cell; these tests read that
printed mode from the stored outputs and check it against the notebook's own "Fast and full
mode" text (the bullet of that mode says it holds the stored outputs, the other does not), and
against ``docs/notebooks.rst``, which names every notebook whose stored outputs are not a
full-mode run ("``name``, whose stored outputs are ...").  A stored output that reports a result file as missing (``[missing]``) is
stale.  No execution: fast.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
STORED = "the outputs stored in this notebook"


def _outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        parts.append("".join(out.get("data", {}).get("text/plain", "")))
    return "".join(parts)


def stored_mode(nb) -> str:
    """The mode printed by the notebook's first code cell that prints ``mode = '...'``."""
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            m = re.search(r"mode = '(\w+)'", _outputs_text(cell))
            if m:
                return m.group(1)
    raise AssertionError("no cell prints the mode")


def mode_bullets(nb) -> dict[str, str]:
    """``{"fast": text, "full": text}``: the bullets of the "Fast and full mode" cell."""
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and src.startswith("## Fast and full mode"):
            bullets = re.split(r"^\* ", src, flags=re.M)[1:]
            out = {}
            for b in bullets:
                m = re.match(r"\*\*(fast|full)\*\*", b)
                if m:
                    out[m.group(1)] = " ".join(b.split())
            return out
    raise AssertionError('no "## Fast and full mode" cell')


def test_the_notebooks_are_found():
    assert len(NOTEBOOKS) >= 7


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_mode_text_names_the_mode_of_the_stored_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    mode = stored_mode(nb)
    bullets = mode_bullets(nb)
    assert set(bullets) == {"fast", "full"}
    other = "fast" if mode == "full" else "full"
    assert STORED in bullets[mode], f"the {mode} bullet should say it holds the stored outputs"
    assert STORED not in bullets[other]
    # the docs build does not run the fast mode (unless asked to): no bullet may say it does
    for text in bullets.values():
        assert not re.search(r"(?i)(documentation|docs) build", text), text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_stored_output_reports_a_missing_result(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    missing = [
        i
        for i, cell in enumerate(nb["cells"])
        if cell["cell_type"] == "code" and "[missing]" in _outputs_text(cell)
    ]
    assert missing == [], f"cells {missing} were stored while a result file was missing"


def test_the_docs_name_every_notebook_not_stored_in_full_mode():
    text = " ".join((ROOT / "docs" / "notebooks.rst").read_text(encoding="utf-8").split())
    assert "make notebooks-full" in text
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        named = f"``{path.stem}``, whose stored outputs are" in text
        assert named == (stored_mode(nb) != "full"), path.stem
