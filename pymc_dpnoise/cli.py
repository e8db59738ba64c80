"""Command-line interface: ``pymc-dpnoise`` (or ``python -m pymc_dpnoise``).

Commands
--------
``pymc-dpnoise demo``
    Simulate a population, privatise it, fit the noise-aware and the naive model, print both
    posteriors against the truth and save a plot.
``pymc-dpnoise fit clipped-normal REPORTS.csv --lower L --upper U --epsilon E``, ``pymc-dpnoise fit clipped-exponential REPORTS.csv --upper U --epsilon E``
    Fit the noise-aware model to a CSV file of privatised reports (what an aggregator holds)
    and print a posterior summary.

Bad input (missing file, non-numeric or missing reports, ε ≤ 0, ``lower >= upper``, unknown
column, ...) gives a one-line ``error:`` message and exit code 2, never a traceback.  Heavy
imports (PyMC, ArviZ) happen only after the input has been checked.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import gzip
import importlib.util
import io
import math
import sys
import textwrap
from pathlib import Path

__all__ = ["InputError", "Reports", "build_parser", "main", "read_reports"]

PROG = "pymc-dpnoise"
SAMPLERS = ("nutpie", "pymc", "numpyro")
USAGE_ERROR = 2


class InputError(Exception):
    """Bad user input: reported as ``<prog>: error: <message>`` with exit code 2."""


# --------------------------------------------------------------------------------------------
# argument types
# --------------------------------------------------------------------------------------------


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text!r}")
        return value

    parse.__name__ = f"int>={low}"
    return parse


def _probability(text: str) -> float:
    value = _float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text!r}")
    return value


# --------------------------------------------------------------------------------------------
# reading reports
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Reports:
    """Reports read from a CSV file by :func:`read_reports`.

    Attributes
    ----------
    values : numpy.ndarray
        The reports (float64, all finite).
    epsilon : numpy.ndarray or None
        Per-report privacy budgets (all finite and > 0), if an epsilon column was read.
    column : str
        Description of the reports column (its name, or its 0-based index).
    epsilon_column : str or None
        Description of the epsilon column.
    has_header : bool
        Whether the first row was read as a header.
    n_columns : int
        Number of fields in the first row.
    """

    values: object
    epsilon: object
    column: str
    epsilon_column: str | None
    has_header: bool
    n_columns: int = 1


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _open_text(path: str):
    if path == "-":
        return io.StringIO(sys.stdin.read())
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(f"{path}: is a directory, not a CSV file")
    try:
        if p.suffix == ".gz":
            return gzip.open(p, "rt", encoding="utf-8-sig", newline="")
        return open(p, encoding="utf-8-sig", newline="")
    except OSError as err:
        raise InputError(f"{path}: cannot open: {err.strerror or err}") from None


def _read_rows(path: str, sep: str) -> list[list[str]]:
    fh = _open_text(path)
    try:
        with fh:
            return [[c.strip() for c in row] for row in csv.reader(fh, delimiter=sep)]
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except (csv.Error, OSError, EOFError) as err:  # e.g. NUL bytes, corrupt gzip
        raise InputError(f"{path}: cannot read as CSV: {err}") from None


def _resolve_column(spec: str, header: list[str] | None, ncols: int, path: str, what: str) -> int:
    if header is not None and spec in header:
        return header.index(spec)
    try:
        idx = int(spec)
    except ValueError:
        if header is None:
            raise InputError(
                f"unknown {what} {spec!r}: {path} has no header row (its first row is numeric);"
                f" give a 0-based column index, or --header yes if the first row holds names"
            ) from None
        names = ", ".join(repr(h) for h in header)
        raise InputError(f"unknown {what} {spec!r} in {path}; its columns are: {names}") from None
    if not 0 <= idx < ncols:
        raise InputError(
            f"unknown {what} {spec!r}: {path} has {ncols} column(s), "
            f"so the 0-based index must be in 0..{ncols - 1}"
        )
    return idx


def _column_values(rows, start_line, idx, label, path, kind):
    import numpy as np

    values = np.empty(len(rows))
    bad = []
    for i, row in enumerate(rows):
        line = start_line + i
        if not any(row):
            bad.append(f"line {line}: empty {kind} (blank line) in column {label}")
            continue
        if idx >= len(row):
            bad.append(f"line {line} has only {len(row)} field(s), no column {label}")
            continue
        cell = row[idx]
        if cell == "":
            bad.append(f"line {line}: empty {kind} in column {label}")
            continue
        try:
            v = float(cell)
        except ValueError:
            bad.append(f"line {line}: non-numeric {kind} {cell!r} in column {label}")
            continue
        if not math.isfinite(v):
            bad.append(f"line {line}: {kind} is {cell!r} in column {label}")
            continue
        if kind == "epsilon" and v <= 0:
            bad.append(f"line {line}: epsilon must be > 0, got {cell!r} in column {label}")
            continue
        values[i] = v
    if bad:
        more = f" ({len(bad)} bad values in total)" if len(bad) > 1 else ""
        hint = ""
        if kind == "report" and any("empty" in b or "is '" in b for b in bad):
            hint = "; missing reports cannot be modelled through the mechanism, drop them"
        raise InputError(f"{path}: {bad[0]}{more}{hint}")
    return values


def read_reports(
    path: str,
    column: str | None = None,
    epsilon_column: str | None = None,
    *,
    header: str = "auto",
    sep: str = ",",
) -> Reports:
    """Read one column of privatised reports (and optionally per-report ε) from a CSV file.

    Parameters
    ----------
    path : str
        CSV file (``.gz`` is decompressed; ``"-"`` reads standard input).
    column : str, optional
        Column of reports: a header name or a 0-based index.  Default: the first column (that
        is not the epsilon column).
    epsilon_column : str, optional
        Column of per-report budgets (personalised ε), name or 0-based index.
    header : {"auto", "yes", "no"}
        Whether the first row is a header.  ``"auto"``: it is if any of its cells is not a
        number.
    sep : str
        Field separator.

    Returns
    -------
    Reports

    Raises
    ------
    InputError
        With a one-line message naming the file, line and column of the first bad value.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = p.write_text("z,eps\\n0.5,1\\n-2.25,0.5\\n")
    >>> r = read_reports(str(p), epsilon_column="eps")
    >>> r.values.tolist(), r.epsilon.tolist(), r.column
    ([0.5, -2.25], [1.0, 0.5], "'z'")
    """
    if header not in ("auto", "yes", "no"):
        raise InputError(f"--header must be auto, yes or no; got {header!r}")
    rows = _read_rows(path, sep)
    # drop trailing blank lines; blank lines inside the data are missing reports
    while rows and not any(rows[-1]):
        rows.pop()
    if not rows:
        raise InputError(f"{path}: the file is empty, no reports to fit")
    first = rows[0]
    has_header = header == "yes" or (
        header == "auto" and any(c != "" and not _is_number(c) for c in first)
    )
    names = first if has_header else None
    data = rows[1:] if has_header else rows
    if not data:
        raise InputError(f"{path}: only a header row, no reports to fit")
    ncols = len(first)

    def label(idx):
        return repr(names[idx]) if names is not None and idx < len(names) else str(idx)

    eps_idx = None
    if epsilon_column is not None:
        eps_idx = _resolve_column(epsilon_column, names, ncols, path, "epsilon column")
    if column is None:
        idx = 1 if eps_idx == 0 else 0
        if idx >= ncols:
            raise InputError(f"{path}: has one column, used by --epsilon-column; no reports")
    else:
        idx = _resolve_column(column, names, ncols, path, "column")
    if eps_idx is not None and eps_idx == idx:
        raise InputError(f"--epsilon-column and the reports column are both column {label(idx)}")
    start = 2 if has_header else 1
    values = _column_values(data, start, idx, label(idx), path, "report")
    eps = None
    if eps_idx is not None:
        eps = _column_values(data, start, eps_idx, label(eps_idx), path, "epsilon")
    return Reports(
        values=values,
        epsilon=eps,
        column=label(idx),
        epsilon_column=None if eps_idx is None else label(eps_idx),
        has_header=has_header,
        n_columns=ncols,
    )


# --------------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------------


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keep description layout; append "(default: X)" to options with a meaningful default."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            action.option_strings
            and default is not None
            and default is not False
            and default is not argparse.SUPPRESS
            and "default" not in text
        ):
            text += " (default: %(default)s)"
        return text


def _sampler_available(name: str) -> bool:
    if name == "pymc":
        return True
    if name == "numpyro":
        return all(importlib.util.find_spec(m) is not None for m in ("numpyro", "jax"))
    return importlib.util.find_spec(name) is not None


def _default_sampler() -> str:
    return "nutpie" if _sampler_available("nutpie") else "pymc"


def _add_sampling_args(p: argparse.ArgumentParser, draws: int = 1000, tune: int = 1000):
    g = p.add_argument_group("sampling")
    g.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default=None,
        help="NUTS implementation (pm.sample(nuts_sampler=...)); default: nutpie if it is "
        "installed, else pymc",
    )
    g.add_argument("--draws", type=_int_at_least(1), default=draws, help="draws per chain")
    g.add_argument("--tune", type=_int_at_least(0), default=tune, help="tuning steps per chain")
    g.add_argument("--chains", type=_int_at_least(1), default=2, help="number of chains")
    g.add_argument(
        "--cores",
        type=_int_at_least(1),
        default=None,
        help="chains run in parallel on this many cores (default: PyMC's choice)",
    )
    g.add_argument("--seed", type=int, default=0, help="random seed")
    g.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no sampler log messages",
    )
    return g


def _add_fit_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "reports",
        metavar="REPORTS.csv",
        help="CSV file of privatised reports, one per row ('-' for stdin, .gz accepted)",
    )
    d = p.add_argument_group("data")
    d.add_argument(
        "--column",
        metavar="NAME_OR_INDEX",
        default=None,
        help="column holding the reports: a header name or a 0-based index "
        "(default: the first column)",
    )
    d.add_argument(
        "--header",
        choices=("auto", "yes", "no"),
        default="auto",
        help="is the first row a header? auto: yes if any of its cells is not a number",
    )
    d.add_argument("--sep", default=",", help="field separator")
    eps = d.add_mutually_exclusive_group(required=True)
    eps.add_argument(
        "--epsilon",
        type=_positive_float,
        metavar="E",
        help="privacy budget ε > 0 of every report",
    )
    eps.add_argument(
        "--epsilon-column",
        metavar="NAME_OR_INDEX",
        help="column of per-report budgets ε > 0 (personalised privacy)",
    )


def _add_output_args(p: argparse.ArgumentParser) -> None:
    o = p.add_argument_group("output")
    o.add_argument(
        "--hdi-prob",
        type=_probability,
        default=0.94,
        help="mass of the highest-density interval in the summary",
    )
    o.add_argument(
        "--save",
        metavar="PATH",
        default=None,
        help="save the posterior: PATH ending in .csv -> CSV of draws (chain, draw, "
        "parameters); .zarr -> Zarr store; anything else (e.g. .nc) -> NetCDF "
        "(needs h5netcdf or netCDF4 installed)",
    )


FIT_EPILOG = """\
The reports must come from the mechanism the model describes: each person clips their value
to the bounds and adds Laplace noise of scale (upper - lower) / epsilon (see
pymc_dpnoise.mechanisms.perturb_clipped).  Missing reports cannot be modelled through the
mechanism: empty, NaN or non-numeric cells are an error (exit code 2); drop them first.

Exit codes: 0 success, 1 sampling failed, 2 usage or input error.
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``pymc-dpnoise`` argument parser (commands ``demo`` and ``fit``)."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Bayesian inference on differentially private data with PyMC.",
        formatter_class=_Formatter,
        epilog="Run '%(prog)s COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser(
        "demo",
        help="simulate, privatise, fit the noise-aware and naive models, plot",
        description=textwrap.dedent(
            """\
            Simulate N values x ~ Normal(mu, sigma), release each as
            clip(x, -5, 5) + Laplace(0, 10 / epsilon) (epsilon-local DP), then fit
              noise-aware: z ~ LaplacePerturbedClippedNormal(mu, sigma, -5, 5, epsilon)
              naive:       z ~ Normal(mu, sigma)   (reports treated as clean)
            with priors mu ~ Normal(0, 5), sigma ~ Gamma(alpha=2, beta=1).  Prints the
            posterior mean, sd and 94% HDI of both models against the truth and saves a plot
            of the posterior densities."""
        ),
        formatter_class=_Formatter,
    )
    demo.add_argument("--n", type=_int_at_least(2), default=5000, help="population size")
    demo.add_argument("--mu", type=_float, default=1.0, help="true mean of the clean values")
    demo.add_argument(
        "--sigma", type=_positive_float, default=2.0, help="true sd of the clean values"
    )
    demo.add_argument(
        "--epsilon", type=_positive_float, default=1.0, help="privacy budget of each report"
    )
    demo.add_argument(
        "--out", metavar="PATH", default="dpnoise-demo.png", help="where to save the plot"
    )
    _add_sampling_args(demo)

    fit = sub.add_parser(
        "fit",
        help="fit a noise-aware model to a CSV of privatised reports",
        description="Fit a noise-aware model to privatised reports held in a CSV file.",
        formatter_class=_Formatter,
    )
    fit_sub = fit.add_subparsers(dest="model", metavar="MODEL", required=True)

    cn = fit_sub.add_parser(
        "clipped-normal",
        help="reports of Normal values clipped to [lower, upper] plus Laplace noise",
        description=textwrap.dedent(
            """\
            Model: x_i ~ Normal(mu, sigma); each report is
              z_i = clip(x_i, lower, upper) + Laplace(0, (upper - lower) / epsilon_i)
            fitted with pymc_dpnoise.LaplacePerturbedClippedNormal (x_i marginalised).

            Default priors, scaled to the bounds (h = (upper - lower) / 2):
              mu    ~ Normal((lower + upper) / 2, h)
              sigma ~ Gamma(alpha=2, beta=2 / h)      (prior mean h)
            e.g. for [-5, 5]: mu ~ Normal(0, 5), sigma ~ Gamma(2, 0.4)."""
        ),
        epilog=FIT_EPILOG,
        formatter_class=_Formatter,
    )
    _add_fit_common(cn)
    m = cn.add_argument_group("model")
    m.add_argument("--lower", type=_float, required=True, help="lower clipping bound")
    m.add_argument("--upper", type=_float, required=True, help="upper clipping bound")
    m.add_argument(
        "--mu-prior",
        nargs=2,
        type=_float,
        metavar=("MEAN", "SD"),
        default=None,
        help="mu ~ Normal(MEAN, SD) (default: bound-scaled, see above)",
    )
    m.add_argument(
        "--sigma-prior",
        nargs=2,
        type=_positive_float,
        metavar=("ALPHA", "BETA"),
        default=None,
        help="sigma ~ Gamma(shape ALPHA, rate BETA) (default: bound-scaled, see above)",
    )
    _add_sampling_args(cn)
    _add_output_args(cn)

    ce = fit_sub.add_parser(
        "clipped-exponential",
        help="reports of Exponential values clipped to [0, upper] plus Laplace noise",
        description=textwrap.dedent(
            """\
            Model: x_i ~ Exponential(rate lam); each report is
              z_i = min(x_i, upper) + Laplace(0, upper / epsilon_i)
            fitted with pymc_dpnoise.LaplacePerturbedClippedExponential (x_i marginalised).

            Default prior, scaled to the bound:
              lam ~ Gamma(alpha=2, beta=upper / 2)     (prior mean of lam: 4 / upper)
            e.g. for upper = 5: lam ~ Gamma(2, 2.5)."""
        ),
        epilog=FIT_EPILOG,
        formatter_class=_Formatter,
    )
    _add_fit_common(ce)
    m = ce.add_argument_group("model")
    m.add_argument(
        "--upper", type=_float, required=True, help="upper clipping bound (> 0; lower is 0)"
    )
    m.add_argument(
        "--lam-prior",
        nargs=2,
        type=_positive_float,
        metavar=("ALPHA", "BETA"),
        default=None,
        help="lam ~ Gamma(shape ALPHA, rate BETA) (default: bound-scaled, see above)",
    )
    _add_sampling_args(ce)
    _add_output_args(ce)
    return parser


# --------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------


def _resolve_sampler(args) -> str:
    if args.sampler is None:
        return _default_sampler()
    if not _sampler_available(args.sampler):
        extra = "nutpie" if args.sampler == "nutpie" else "numpyro and jax"
        raise InputError(
            f"--sampler {args.sampler}: {extra} not installed "
            "(pip install 'pymc-dpnoise[samplers]'), or use --sampler pymc"
        )
    return args.sampler


def _save_format(path: str) -> str:
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"--save {path}: directory {str(parent)!r} does not exist")
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix == ".zarr":
        if importlib.util.find_spec("zarr") is None:
            raise InputError(f"--save {path}: writing Zarr needs the zarr package")
        return "zarr"
    if not any(importlib.util.find_spec(m) for m in ("h5netcdf", "netCDF4")):
        raise InputError(
            f"--save {path}: writing NetCDF needs h5netcdf or netCDF4 (pip install h5netcdf); "
            "or save the draws as CSV with a path ending in .csv (or .zarr for Zarr)"
        )
    return "netcdf"


def _configure_quiet(quiet: bool) -> None:
    if quiet:
        import logging

        for name in ("pymc", "pytensor", "nutpie"):
            logging.getLogger(name).setLevel(logging.WARNING)


def _cmd_demo(args, err) -> int:
    sampler = _resolve_sampler(args)
    out = Path(args.out)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"--out {args.out}: directory {str(parent)!r} does not exist")
    import time

    from .demo import run_demo

    _configure_quiet(args.quiet)
    t0 = time.perf_counter()
    run_demo(
        n=args.n,
        mu=args.mu,
        sigma=args.sigma,
        epsilon=args.epsilon,
        seed=args.seed,
        sampler=sampler,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=args.cores,
        out=out,
        progressbar=not args.quiet,
        quiet=args.quiet,
    )
    print(f"Done in {time.perf_counter() - t0:.0f} s.")
    return 0


def _fmt(x: float) -> str:
    return f"{x:g}"


def _build_fit_model(args, reports: Reports):
    """The PyMC model, plus a description of the likelihood and the priors."""
    import numpy as np
    import pymc as pm

    from .distributions import LaplacePerturbedClippedExponential, LaplacePerturbedClippedNormal

    z = np.asarray(reports.values, dtype=float)
    eps = reports.epsilon if reports.epsilon is not None else args.epsilon
    eps_desc = (
        f"epsilon from column {reports.epsilon_column} "
        f"(min {_fmt(np.min(eps))}, max {_fmt(np.max(eps))})"
        if reports.epsilon is not None
        else f"epsilon={_fmt(args.epsilon)}"
    )
    with pm.Model() as model:
        if args.model == "clipped-normal":
            h = (args.upper - args.lower) / 2
            m0, s0 = args.mu_prior or ((args.lower + args.upper) / 2, h)
            a, b = args.sigma_prior or (2.0, 2.0 / h)
            mu = pm.Normal("mu", m0, s0)
            sigma = pm.Gamma("sigma", alpha=a, beta=b)
            LaplacePerturbedClippedNormal("z", mu, sigma, args.lower, args.upper, eps, observed=z)
            lik = (
                f"z ~ LaplacePerturbedClippedNormal(mu, sigma, lower={_fmt(args.lower)}, "
                f"upper={_fmt(args.upper)}, {eps_desc})"
            )
            priors = f"mu ~ Normal({_fmt(m0)}, {_fmt(s0)}), sigma ~ Gamma(alpha={_fmt(a)}, beta={_fmt(b)})"
            params = ["mu", "sigma"]
        else:
            a, b = args.lam_prior or (2.0, args.upper / 2)
            lam = pm.Gamma("lam", alpha=a, beta=b)
            LaplacePerturbedClippedExponential("z", lam, args.upper, eps, observed=z)
            lik = (
                f"z ~ LaplacePerturbedClippedExponential(lam, upper={_fmt(args.upper)}, {eps_desc})"
            )
            priors = f"lam ~ Gamma(alpha={_fmt(a)}, beta={_fmt(b)})"
            params = ["lam"]
    return model, lik, priors, params


def _summary_frame(idata, params, hdi_prob):
    import arviz as az
    import numpy as np
    import pandas as pd

    try:
        s = az.summary(
            idata, var_names=params, ci_prob=hdi_prob, ci_kind="hdi", round_to="none", kind="all"
        )
        s = pd.DataFrame(s)
    except Exception:  # pragma: no cover - fall back if the ArviZ API differs
        rows = {}
        for p in params:
            d = np.asarray(idata.posterior[p].values, dtype=float)
            lo, hi = np.quantile(d, [(1 - hdi_prob) / 2, (1 + hdi_prob) / 2])
            rows[p] = dict(mean=d.mean(), sd=d.std(ddof=1), eti_lb=lo, eti_ub=hi)
        s = pd.DataFrame(rows).T
    keep = [c for c in s.columns if not c.startswith("mcse")]
    s = s[keep].astype(float)
    for c in s.columns:
        if c.startswith("ess"):
            s[c] = s[c].round().astype("Int64")
        elif c == "r_hat":
            s[c] = s[c].round(3)
        else:
            s[c] = s[c].round(4)
    return s


def _save_posterior(idata, path: str, fmt: str, params) -> None:
    try:
        _save_posterior_unchecked(idata, path, fmt, params)
    except (OSError, ImportError, ValueError) as exc:
        raise InputError(f"--save {path}: could not write the posterior ({exc})") from None


def _save_posterior_unchecked(idata, path: str, fmt: str, params) -> None:
    if fmt == "csv":
        import numpy as np
        import pandas as pd

        post = idata.posterior
        first = np.asarray(post[params[0]].values)
        chains, draws = first.shape[:2]
        df = pd.DataFrame(
            {
                "chain": np.repeat(np.arange(chains), draws),
                "draw": np.tile(np.arange(draws), chains),
            }
        )
        for p in params:
            df[p] = np.asarray(post[p].values, dtype=float).reshape(chains * draws)
        df.to_csv(path, index=False)
    elif fmt == "zarr":
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata.to_zarr(path, mode="w")
    else:
        idata.to_netcdf(path)


def _cmd_fit(args, err) -> int:
    if args.model == "clipped-normal" and not args.lower < args.upper:
        raise InputError(
            f"--lower ({_fmt(args.lower)}) must be smaller than --upper ({_fmt(args.upper)})"
        )
    if args.model == "clipped-exponential" and args.upper <= 0:
        raise InputError(f"--upper must be > 0 for clipped-exponential, got {_fmt(args.upper)}")
    if args.model == "clipped-normal" and args.mu_prior and args.mu_prior[1] <= 0:
        raise InputError(f"--mu-prior: SD must be > 0, got {_fmt(args.mu_prior[1])}")
    sampler = _resolve_sampler(args)
    save_fmt = _save_format(args.save) if args.save else None
    reports = read_reports(
        args.reports, args.column, args.epsilon_column, header=args.header, sep=args.sep
    )
    n = len(reports.values)
    if n < 2:
        raise InputError(f"{args.reports}: only {n} report, need at least 2")

    import numpy as np

    _configure_quiet(args.quiet)
    import pymc as pm

    model, lik, priors, params = _build_fit_model(args, reports)
    src = "stdin" if args.reports == "-" else args.reports
    print(f"Read {n} reports from {src} (column {reports.column}).")
    if args.column is None and reports.n_columns > 1 + (reports.epsilon is not None):
        print(
            f"note: {src} has {reports.n_columns} columns; the reports are taken from column "
            f"{reports.column} (choose another with --column)",
            file=err,
        )
    print(f"Likelihood: {lik}")
    print(f"Priors: {priors}")
    print(f"Sampling with {sampler}: {args.chains} chains x {args.draws} draws ({args.tune} tune)")
    sys.stdout.flush()
    try:
        idata = pm.sample(
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            cores=args.cores,
            random_seed=args.seed,
            progressbar=not args.quiet,
            quiet=args.quiet,
            nuts_sampler=sampler,
            model=model,
            compute_convergence_checks=False,
        )
    except pm.exceptions.SamplingError as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"{PROG} fit {args.model}: error: sampling failed: {first_line}", file=err)
        return 1

    summary = _summary_frame(idata, params, args.hdi_prob)
    print()
    print(f"Posterior summary ({args.hdi_prob:.0%} HDI):")
    print(summary.to_string())
    notes = []
    try:
        div = int(np.asarray(idata.sample_stats["diverging"].values).sum())
    except (KeyError, AttributeError, TypeError):
        div = None
    if div:
        notes.append(f"{div} divergent transition(s): the posterior may be biased")
    if "r_hat" in summary and args.chains > 1 and (summary["r_hat"] > 1.01).any():
        notes.append("r_hat > 1.01: chains disagree, run longer (--draws, --tune)")
    if "ess_bulk" in summary and (summary["ess_bulk"].astype(float) < 100 * args.chains).any():
        notes.append("low effective sample size: increase --draws")
    for note in notes:
        print(f"warning: {note}", file=err)
    if args.save:
        _save_posterior(idata, args.save, save_fmt, params)
        print(f"Posterior saved to {args.save} ({save_fmt})")
    return 0


# --------------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the ``pymc-dpnoise`` command line; return the exit code.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 1 if sampling failed, 2 for a usage or input error (the message goes to
        standard error as ``pymc-dpnoise ...: error: ...``).

    Examples
    --------
    >>> main(["fit", "clipped-normal", "missing.csv", "--lower", "0", "--upper", "1",
    ...       "--epsilon", "1"])
    2
    """
    parser = build_parser()
    err = sys.stderr
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, argparse errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    prog = f"{PROG} {args.command}" + (f" {args.model}" if args.command == "fit" else "")
    try:
        if args.command == "demo":
            return _cmd_demo(args, err)
        return _cmd_fit(args, err)
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=err)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=err)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
