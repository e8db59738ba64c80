"""Check that the built HTML docs work offline and carry no local paths or stray warnings.

Run after ``make docs`` (``make docs`` runs it)::

    python scripts/check_docs_offline.py docs/_build/html [--screenshot OUT.png]

Checks, over every ``*.html`` page of the build:

* no ``<script src=...>`` or stylesheet is loaded from the network (MathJax comes from
  ``_static/mathjax``, copied there by the ``sphinx-mathjax-offline`` extension);
* the local MathJax entry point exists;
* no page shows an absolute local path of this checkout or a virtual environment (rendered
  notebook outputs used to show ``/work/.../site-packages/...`` in warnings);
* no page shows a ``RuntimeWarning``/``UserWarning`` line from a notebook output.

With ``--screenshot`` and a Chromium on the machine (``/usr/bin/chromium``), the distribution page
with equations is also rendered headless with networking disabled, and the script checks that
MathJax typeset it (``mjx-container`` elements present in the rendered DOM) and saves a PNG.
Exit code 1 with one line per problem otherwise.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REMOTE = re.compile(r"""<(?:script|link)\b[^>]*(?:src|href)=["'](?:https?:)?//[^"']+["']""", re.I)
LOCAL_PATH = re.compile(r"(?:/work/|/home/|/root/|/tmp/|/usr/|/opt/|site-packages/)[\w./-]*")
TAG = re.compile(r"<[^>]+>")
WARNING = re.compile(r"\b(?:RuntimeWarning|UserWarning|FutureWarning|DeprecationWarning)\b")
EQUATION_PAGE = "distributions/clipped_normal.html"


def check_tree(root: Path) -> list[str]:
    problems = []
    if not (root / "_static" / "mathjax" / "tex-chtml.js").is_file():
        problems.append(f"{root}/_static/mathjax/tex-chtml.js missing: MathJax is not local")
    pages = sorted(p for p in root.rglob("*.html") if "_static" not in p.parts)
    if not pages:
        problems.append(f"no HTML pages under {root}")
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="replace")
        rel = page.relative_to(root)
        for m in REMOTE.finditer(text):
            problems.append(f"{rel}: loads from the network: {m.group(0)[:120]}")
        for m in LOCAL_PATH.finditer(text):
            problems.append(f"{rel}: shows a local path: {m.group(0)[:120]}")
        for line in TAG.sub("", text).splitlines():
            if WARNING.search(line) and "filterwarnings" not in line:
                problems.append(f"{rel}: shows a warning: {line.strip()[:160]}")
                break
    return problems


def screenshot(root: Path, out: Path) -> list[str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return ["--screenshot: no chromium on PATH (apt-get install chromium)"]
    page = (root / EQUATION_PAGE).resolve()
    with tempfile.TemporaryDirectory() as profile:
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--proxy-server=127.0.0.1:9",  # any network request fails: offline by construction
            "--virtual-time-budget=15000",  # let MathJax finish typesetting
        ]
        dom = subprocess.run(
            [chromium, *flags, "--dump-dom", page.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        subprocess.run(
            [chromium, *flags, "--window-size=1200,1600", f"--screenshot={out}", page.as_uri()],
            capture_output=True,
            timeout=120,
        )
    problems = []
    n = dom.count("<mjx-container")
    if n == 0:
        problems.append(f"{EQUATION_PAGE}: MathJax typeset nothing offline")
    if not out.is_file():
        problems.append(f"screenshot {out} was not written")
    if not problems:
        print(f"{EQUATION_PAGE}: {n} equations typeset offline; screenshot {out}")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="the built HTML folder (docs/_build/html)")
    ap.add_argument("--screenshot", type=Path, help="render an equation page headless to PNG")
    args = ap.parse_args(argv)
    problems = check_tree(args.root)
    if args.screenshot is not None:
        problems += screenshot(args.root, args.screenshot)
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"{args.root}: offline, no local paths, no warnings")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
