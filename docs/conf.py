"""Sphinx configuration for pymc-dpnoise.

Build (from the repository root; warnings are errors, no network access needed)::

    .venv/bin/sphinx-build -W --keep-going -b html docs docs/_build/html   # == make docs

``getting_started.md`` is always executed during the build (its ``mystnb: execution_mode:
force`` front matter; short chains), so its code and outputs are checked on every build.

Notebooks: every ``*.ipynb`` in ``../notebooks`` is rendered with the outputs committed in it
(the papers' full settings, except ``posterior_release``: a fast run that shows the committed
full-mode results; ``make notebooks`` separately executes every notebook end to end in fast
mode, which is how CI checks that they run).  ``PMD_DOCS_EXECUTE=force`` executes them
during the build instead, in fast mode (``PMD_MODE=fast`` unless the environment sets it).  They are
reached through the symlink ``docs/notebooks -> ../notebooks`` that this file creates when it
is missing, so each notebook runs with ``notebooks/`` as its working directory, exactly as when
it is run by hand.  ``PMD_DOCS_EXECUTE`` (``off`` (default), ``force``, ``cache``, ``auto``)
sets the myst-nb execution mode.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))  # build from a source tree even without an editable install

# Notebooks are executed in the project's fast mode; the kernel inherits this environment.
os.environ.setdefault("PMD_MODE", "fast")
# Do NOT set MPLBACKEND here: the kernels inherit this environment and would then draw with
# Agg instead of the inline backend, so no figure would appear in the executed notebooks.
# PyMC's rich progress bars warn 'install "ipywidgets" for Jupyter support' on stderr in every
# executed notebook (ipywidgets is not a dependency, and widget output would need JavaScript
# from a CDN); this narrow filter, inherited by the kernels, keeps that line out of the pages.
_RICH_FILTER = 'ignore:install "ipywidgets" for Jupyter support:UserWarning'
if _RICH_FILTER not in os.environ.get("PYTHONWARNINGS", ""):
    os.environ["PYTHONWARNINGS"] = ",".join(
        w for w in (os.environ.get("PYTHONWARNINGS", ""), _RICH_FILTER) if w
    )


def _link_notebooks() -> None:
    """Make ``docs/notebooks`` point at ``../notebooks`` (symlink; copy where unsupported)."""
    src, dst = ROOT / "notebooks", DOCS / "notebooks"
    if dst.is_symlink() or not src.is_dir():
        return
    if dst.exists():
        if dst.is_dir() and (dst / ".pmd-copied").exists():  # refresh an earlier fallback copy
            shutil.rmtree(dst)
        else:
            return
    try:
        dst.symlink_to(os.path.relpath(src, DOCS), target_is_directory=True)
    except OSError:  # e.g. Windows without symlink rights: copy (notebooks then run in docs/)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        (dst / ".pmd-copied").touch()


_link_notebooks()

import pymc_dpnoise  # noqa: E402  (after sys.path / environment set-up)

# -- Project information ---------------------------------------------------------------------

project = "pymc-dpnoise"
author = "pymc-dpnoise developers"
copyright = "2026, pymc-dpnoise developers"
release = pymc_dpnoise.__version__
version = ".".join(release.split(".")[:2])

# -- General configuration -------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    # MathJax 3.2.2 shipped inside a wheel and copied into _static/mathjax: equations render
    # offline (no CDN), in the built HTML and in the notebooks' pages.
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_nb",
    "pmd_docs",  # docs/_ext/pmd_docs.py: if-importable blocks, notebook-toctree, sbc-results
    "pmd_cli",  # docs/_ext/pmd_cli.py: the command-line page, generated from the CLI's registry
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "_ext",
    "jupyter_execute",
    "**.ipynb_checkpoints",
    "notebooks/**.md",  # only notebooks (.ipynb) become pages
    "Thumbs.db",
    ".DS_Store",
]
templates_path: list[str] = []
pmd_always_reread = ["notebooks", "calibration", "performance", "development"]
pmd_results_dir = "../results/sbc"

# No intersphinx: the build must work offline.  Cross-references to numpy/pymc/pytensor
# therefore render as plain text, which is not a warning because nitpicky is off.
nitpicky = False

# -- autodoc / numpydoc ----------------------------------------------------------------------

autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc "Parameters" sections carry the types
autodoc_mock_imports: list[str] = []
autosummary_generate = False  # numpydoc loads autosummary; we use plain autodoc directives
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# -- MyST / MyST-NB --------------------------------------------------------------------------

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

nb_execution_mode = os.environ.get("PMD_DOCS_EXECUTE", "off")
nb_execution_timeout = 1800  # seconds per cell (fast mode needs far less)
nb_execution_allow_errors = False
nb_execution_raise_on_error = False  # a failing notebook is a warning, i.e. an error with -W
nb_execution_show_tb = True  # ... and its traceback is printed in the build log
nb_execution_excludepatterns: list[str] = []
nb_execution_in_temp = False  # run in the notebook's folder (notebooks/ via the symlink)
nb_kernel_rgx_aliases = {".*": "python3"}  # whatever kernel a notebook names, use this venv's
nb_merge_streams = True

# -- HTML ------------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"  # the PyMC ecosystem's look
html_title = f"pymc-dpnoise {release}"
html_static_path: list[str] = []
mathjax_path = "mathjax/tex-chtml.js"  # the local copy (see extensions); never a CDN
html_theme_options = {
    "logo": {"text": "pymc-dpnoise"},
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],  # no "edit this page" / source links: no host
}
html_sidebars = {"index": []}  # the landing page uses the full width
