"""What every experiment module needs: result caching, seeded streams, SBC tables, a CLI skeleton.

* :func:`cached` — read a result table from its CSV, or compute and write it (the notebooks
  read the committed full-mode results this way).
* :func:`seeded_rng` — an independent random stream per (seed, tags), so a run does not
  depend on the order or number of other configurations.
* :func:`run_sbc` — one SBC run of a problem with a mode's settings, timed.
* :func:`sbc_coverage` — the coverage table of one SBC run (per parameter and level) with the
  sampler diagnostics and KS tests every SBC table reports; :func:`result_coverage` the same
  for an :class:`~pymc_dpnoise.diagnostics.SBCResult`.
* :func:`coverage_summary` — one row per (design, parameter) at one interval level.
* :func:`write_table` — a table as CSV and Markdown.
* :func:`experiment_parser` — the ``--mode/--out/--jobs`` command line shared by the
  experiment modules' ``main``.

The generic statistics (coverage, KS, MMD, ECDF distance, RMSE, AUC) and the one fitting
helper for compiled models (:func:`~pymc_dpnoise.diagnostics.sample_compiled`) are in
:mod:`pymc_dpnoise.diagnostics`; data splits and scaling in :mod:`pymc_dpnoise.datasets`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..diagnostics import (
    DEFAULT_LEVELS,
    SBCProblem,
    SBCResult,
    coverage_table,
    ks_uniform,
    simulation_based_calibration,
)

__all__ = [
    "cached",
    "coverage_summary",
    "experiment_parser",
    "result_coverage",
    "run_sbc",
    "sbc_coverage",
    "seeded_rng",
    "write_table",
]


def cached(path, compute, *, recompute: bool = False) -> pd.DataFrame:
    """Read the CSV at ``path`` if it exists (and ``recompute`` is false); otherwise call
    ``compute()`` (which returns a DataFrame), write it there and return it."""
    path = Path(path)
    if path.exists() and not recompute:
        return pd.read_csv(path)
    df = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    return df


def seeded_rng(seed, *tags) -> np.random.Generator:
    """``default_rng(SeedSequence([seed, *tags]))`` with integer tags.

    Examples
    --------
    >>> a, b = seeded_rng(1, 4, 0), seeded_rng(1, 4, 0)
    >>> bool(a.random() == b.random())
    True
    """
    return np.random.default_rng(np.random.SeedSequence([int(seed), *map(int, tags)]))


def run_sbc(
    problem: SBCProblem, replicates: int, cfg: dict, *, noise_aware=True, seed=2026, n_jobs=None
) -> tuple[SBCResult, float]:
    """:func:`~pymc_dpnoise.diagnostics.simulation_based_calibration` of ``problem`` with the
    NUTS settings ``cfg["draws"]``, ``cfg["tune"]``; returns the result and the wall time (s)."""
    t0 = time.time()
    res = simulation_based_calibration(
        problem,
        replicates,
        noise_aware=noise_aware,
        seed=seed,
        n_jobs=n_jobs,
        draws=cfg["draws"],
        tune=cfg["tune"],
    )
    return res, time.time() - t0


def sbc_coverage(quantiles, names, max_rhat, divergences, *, ks=False, **design) -> pd.DataFrame:
    """Coverage of one SBC run: one row per (parameter, level) of ``DEFAULT_LEVELS``.

    Columns: those of :func:`~pymc_dpnoise.diagnostics.coverage_table` (99% binomial band) with
    parameter names, then the ``design`` columns in the order given (e.g. ``epsilon``,
    ``model``), ``max_rhat`` (worst over replicates), ``divergences`` (total), the KS
    statistic (``ks``, if asked) and p-value (``ks_p``) of each parameter's quantiles against
    Uniform(0, 1).
    """
    q = np.asarray(quantiles, dtype=float)
    tab = coverage_table(q, DEFAULT_LEVELS, band_mass=0.99)
    tab["param"] = [names[i] for i in tab["param"]]
    for col, value in design.items():
        tab[col] = value
    tab["max_rhat"] = float(np.nanmax(max_rhat))
    tab["divergences"] = int(np.sum(divergences))
    tests = {name: ks_uniform(q[:, j]) for j, name in enumerate(names)}
    if ks:
        tab["ks"] = [tests[p][0] for p in tab["param"]]
    tab["ks_p"] = [tests[p][1] for p in tab["param"]]
    return tab


def result_coverage(res: SBCResult, **design) -> pd.DataFrame:
    """:func:`sbc_coverage` of the quantiles and diagnostics held by ``res``."""
    return sbc_coverage(res.quantiles, res.param_names, res.max_rhat, res.divergences, **design)


def coverage_summary(tables: list[pd.DataFrame], level: float = 0.9, by=("model",)) -> pd.DataFrame:
    """One row per (``by`` columns, ε, parameter): coverage of the ``level`` interval."""
    tab = pd.concat(tables, ignore_index=True)
    tab = tab[np.isclose(tab["level"], level)]
    cols = [*by, "epsilon", "param", "coverage", "band_lo", "band_hi", "inside"]
    extra = [c for c in ("ks_p", "contraction", "max_rhat", "divergences") if c in tab]
    return tab[cols + extra].reset_index(drop=True)


def write_table(tab: pd.DataFrame, out, name: str, *, newline: bool = False) -> None:
    """Write ``tab`` to ``out/name.csv`` and ``out/name.md`` (floats with 3 decimals)."""
    out = Path(out)
    tab.to_csv(out / f"{name}.csv", index=False)
    md = tab.to_markdown(index=False, floatfmt=".3f")
    (out / f"{name}.md").write_text(md + "\n" if newline else md)


def experiment_parser(description: str, settings: dict, out: str) -> argparse.ArgumentParser:
    """The command line every experiment module starts from: ``--mode`` (a key of
    ``settings``, default ``fast``), ``--out`` (default ``out``) and ``--jobs`` (worker
    processes for SBC)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--mode", choices=sorted(settings), default="fast")
    ap.add_argument("--out", default=out)
    ap.add_argument("--jobs", type=int, default=None)
    return ap
