#!/usr/bin/env python
"""Write ``docs/workflows.rst`` (distribution x PyMC workflow) from ``tests/distributions/test_workflows.py``.

The table is generated from the suite's own tables (``SPECS``: the workflow rows of the test
registry, ``tests/registry.py`` and ``tests/cases/workflows.py``; ``WORKFLOWS``, ``SLOW``,
``REFUSED``), so a cell says "pass" only if the suite runs that workflow for that
distribution, and every refusal is a cell whose error the suite checks.
``tests/distributions/test_workflows.py::test_docs_table_in_sync`` fails when the file is stale.

Usage: ``python scripts/workflow_table.py`` (writes the file) or ``--check``.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "workflows.rst"

HEADER = """\
PyMC workflows
==============

Every public distribution of :mod:`pymc_dpnoise.distributions` against every ordinary PyMC
workflow.  The table is generated from ``tests/distributions/test_workflows.py`` by
``scripts/workflow_table.py``: **pass** means the suite runs the workflow on that
distribution and checks its result in the default run, **pass (slow)** in the ``slow`` run
(``pytest -m slow``); a numbered cell is a refusal ("no"), with the error the package
raises (the suite checks that exact error) and the reason below the table, or a known bug
("fails"), whose failure the suite checks in the same way until it is fixed.

The models are hierarchical: {n_groups} groups, parameters indexed by a group index held in
``pm.Data`` (``p[g]``, ``theta[g]``, ...), ``coords``/``dims`` on every variable, reports
observed through ``pm.Data``.  The cheap workflows run in the default test run (compiled with
PyTensor's full graph rewrites but executed by its Python VM, to keep compilation cheap); the
slow ones (``-m slow``) run with PyTensor's default backends (Numba; JAX for numpyro).  A
summary's ``set_data`` cell passes a new table *and* its number of reports (``n`` in
``pm.Data``); the ``graphviz`` cell renders only where the ``graphviz`` package is installed
(the ``docs`` and ``notebooks`` extras), and checks the model graph and
:func:`pymc.model_to_mermaid` everywhere.

A summary (binned table or scatter matrix) is one observation of all N reports: its model
has no group index.  ``LaplaceNoisyMultinomial`` is a model-building helper, not a class: it
adds a latent vector per release (here the latent counts ``obs_counts_z``, the choice of
``latent="auto"`` for these parameters) and has no ``.dist()``; its ``set_data`` cell passes
that latent in ``sample_vars`` of :func:`pymc.sample_posterior_predictive`, so that new
reports get new latents (PyMC warns that it keeps the trace's values otherwise).

Pointwise log-likelihoods and LOO
---------------------------------

Use ``pmd.compute_log_likelihood`` and ``pmd.loo``
(:func:`pymc_dpnoise.pointwise.compute_log_likelihood`, :func:`pymc_dpnoise.pointwise.loo`: thin
wrappers of :func:`pymc.compute_log_likelihood` and :func:`arviz.loo`).  The unit of every pointwise term
is **one report**: one bit vector or item (frequency oracles), one noisy count, one clipped
report, one regression row, one released vector of sufficient statistics, one released noisy
sum or count vector.

* Reports compressed with ``counts=`` are expanded back to one term per report (integer counts
  only): with plain :func:`pymc.compute_log_likelihood` a row of ``counts = c`` is one term
  ``c log p(pattern)``, and LOO would leave out the *c* reports together and count them as one
  observation.
* An all-zero OUE/SUE/unary-encoding bit vector has a likelihood that does not depend on the
  frequencies; its importance weights are uniform and its LOO term is exact, but
  :func:`arviz.loo` cannot fit a Pareto tail to constant ratios ("All tail values are the
  same").  ``pmd.loo`` gives such columns uniform weights and Pareto k = 0.
* A summary (binned table or scatter matrix) is one observation of all N reports: there is
  no term per report (refused below; fit the exact per-report class for LOO).
* ``LaplaceNoisyMultinomial``: the term of a release is its density given its own latent
  vector.  Without the release that latent follows its prior, so PSIS-LOO still estimates
  the leave-one-out predictive density of the release; the importance ratios also carry
  what the release taught its latent, so look at the Pareto k values.

"""


def _load_suite():
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))  # the registry and its cases, as in the test run
    spec = importlib.util.spec_from_file_location(
        "test_workflows", ROOT / "tests/distributions/test_workflows.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("test_workflows", mod)  # dataclasses look their module up
    spec.loader.exec_module(sys.modules["test_workflows"])
    return sys.modules["test_workflows"]


def render() -> str:
    suite = _load_suite()
    workflows = list(suite.WORKFLOWS)
    reasons: dict[str, int] = {}
    rows = []
    for spec in suite.SPECS:
        cells = []
        for wf in workflows:
            status = suite.cell_status(spec.name, wf)
            if status == "pass":
                cells.append("pass (slow)" if wf in suite.SLOW else "pass")
            else:
                bug = status.startswith("fails: ")
                table = suite.KNOWN_BUGS if bug else suite.REFUSED
                exc = table[spec.name, wf][0].__name__
                key = f"``{exc}``: {status.split(': ', 1)[1]}"
                n = reasons.setdefault(key, len(reasons) + 1)
                cells.append(f"fails [{n}]" if bug else f"no [{n}]")
        rows.append((spec.name, cells))

    out = [HEADER.format(n_groups=suite.N_GROUPS)]
    out.append("The table\n---------\n\n")
    out.append(".. list-table::\n   :header-rows: 1\n   :stub-columns: 1\n\n")
    out.append("   * - distribution\n")
    out.extend(f"     - {wf}\n" for wf in workflows)
    for name, cells in rows:
        role = "func" if name in suite.HELPERS else "class"  # a model helper is a function
        out.append(f"   * - :{role}:`~pymc_dpnoise.{name}`\n")
        out.extend(f"     - {c}\n" for c in cells)
    out.append("\nRefusals and known bugs\n-----------------------\n\n")
    for key, n in reasons.items():
        out.append(f"[{n}] {key}\n\n")
    out.append("Workflows\n---------\n\n")
    for wf, what in suite.WORKFLOWS.items():
        tag = " (``slow``)" if wf in suite.SLOW and "(slow)" not in what else ""
        out.append(f"``{wf}``\n    {what}{tag}\n\n")
    return "".join(out).rstrip() + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in argv:
        if OUT.read_text() != text:
            print(f"{OUT} is out of date", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
