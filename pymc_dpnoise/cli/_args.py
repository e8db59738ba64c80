"""Argument parsing of the ``pymc-dpnoise`` command line: the parser and its shared options.

``fit`` has one subcommand per entry of the model registry (:mod:`._registry`); the value
validators, the error type and the exit codes are in :mod:`._base` (the error type and the
exit codes are re-exported here).  Imports only the standard library and the registry (which
imports nothing heavy), so ``--help`` and argument errors answer without loading NumPy or
PyMC.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import textwrap

from .. import __version__
from ._base import (
    INTERRUPTED,
    MAX_ROWS,
    MAX_SEED,
    PROG,
    SAMPLERS,
    USAGE_ERROR,
    InputError,
    finite_float,
    int_between,
    positive_float,
    probability,
    separator,
)
from ._registry import MODELS

__all__ = [
    "FIT_EPILOG",
    "INTERRUPTED",
    "PROG",
    "USAGE_ERROR",
    "InputError",
    "build_parser",
    "sampler_available",
]

# --------------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------------

#: argparse takes "-1e3" for an option unless it looks like a negative number to it; its own
#: pattern misses exponents, "-.5e-3", "-1." and the like
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


class Parser(argparse.ArgumentParser):
    """ArgumentParser that reads ``--lower -1e3`` as a negative number and reports argument
    errors in two lines (:meth:`error`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def short_usage(self) -> str:
        """One line: the program, its positional arguments, ``[options]`` and where the full
        usage is (argparse's own usage lists every option: 14 lines for ``fit MODEL``)."""
        words = []
        for action in self._get_positional_actions():
            if isinstance(action, argparse._SubParsersAction):
                words.append(f"{action.metavar or action.dest} ...")
            else:
                words.append(action.metavar or action.dest)
        return f"usage: {self.prog} {' '.join([*words, '[options]'])} (see '{self.prog} --help')"

    def error(self, message):
        """Exit with code 2 after the short usage line and one ``error:`` line."""
        message = " ".join(str(message).split())
        self.exit(USAGE_ERROR, f"{self.short_usage()}\n{self.prog}: error: {message}\n")


class Formatter(argparse.RawDescriptionHelpFormatter):
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


def sampler_available(name: str) -> bool:
    if name == "pymc":
        return True
    if name == "numpyro":
        return all(importlib.util.find_spec(m) is not None for m in ("numpyro", "jax"))
    return importlib.util.find_spec(name) is not None


def add_sampling_args(p: argparse.ArgumentParser, draws: int = 1000, tune: int = 1000):
    g = p.add_argument_group("sampling")
    g.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default=None,
        help="NUTS implementation (pm.sample(nuts_sampler=...)); default: nutpie if it is "
        "installed, else pymc",
    )
    g.add_argument("--draws", type=int_between(1), default=draws, help="draws per chain")
    g.add_argument("--tune", type=int_between(0), default=tune, help="tuning steps per chain")
    g.add_argument("--chains", type=int_between(1), default=2, help="number of chains")
    g.add_argument(
        "--cores",
        type=int_between(1),
        default=None,
        help="chains run in parallel on this many cores (default: PyMC's choice)",
    )
    g.add_argument(
        "--seed", type=int_between(0, MAX_SEED), default=0, help=f"random seed, 0..{MAX_SEED}"
    )
    g.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no sampler log messages",
    )
    return g


def add_input_args(p: argparse.ArgumentParser, metavar: str, what: str) -> argparse._ArgumentGroup:
    p.add_argument(
        "reports",
        metavar=metavar,
        help=f"{what}: a CSV file (.csv, .csv.gz, any separator) or a Parquet file "
        "(.parquet); '-' reads CSV from standard input",
    )
    d = p.add_argument_group("input")
    d.add_argument(
        "--header",
        choices=("auto", "yes", "no"),
        default="auto",
        help="CSV: is the first row a header? auto: yes if any of its cells is not a number",
    )
    d.add_argument(
        "--sep", type=separator, default=None, help="CSV field separator (default: detected)"
    )
    d.add_argument(
        "--max-rows",
        type=int_between(1),
        default=MAX_ROWS,
        help="refuse input with more data rows than this (bounds memory; pipes and stdin "
        "are read only this far)",
    )
    return d


def add_output_args(p: argparse.ArgumentParser) -> None:
    o = p.add_argument_group("output")
    o.add_argument(
        "--hdi-prob",
        type=probability,
        default=0.94,
        help="mass of the highest-density interval in the summary",
    )
    o.add_argument(
        "--save",
        metavar="PATH",
        default=None,
        help="save the posterior: PATH ending in .csv -> CSV of draws (chain, draw, "
        "parameters); .nc -> NetCDF; .zarr -> Zarr store (other endings are refused).  "
        "Written to a temporary file and renamed into place; an existing PATH needs --force",
    )
    o.add_argument(
        "--force",
        action="store_true",
        help="let --save replace an existing file (or Zarr store); never the input file",
    )


FIT_EPILOG = """\
Missing reports cannot be modelled through a privacy mechanism: empty, NaN or non-numeric
cells are an error; drop them first.  Blank lines in a multi-column CSV are skipped.

Exit codes: 0 success, 1 a check of the posterior refused it, 2 usage, input or sampling
error (one line), 130 interrupted (Ctrl-C; no output file is written or changed).
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``pymc-dpnoise`` argument parser (commands ``demo`` and ``fit MODEL``)."""

    parser = Parser(
        prog=PROG,
        description="Bayesian inference on differentially private data with PyMC.",
        formatter_class=Formatter,
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
        formatter_class=Formatter,
    )
    demo.add_argument("--n", type=int_between(2), default=5000, help="population size")
    demo.add_argument("--mu", type=finite_float, default=1.0, help="true mean of the clean values")
    demo.add_argument(
        "--sigma", type=positive_float, default=2.0, help="true sd of the clean values"
    )
    demo.add_argument(
        "--epsilon", type=positive_float, default=1.0, help="privacy budget of each report"
    )
    demo.add_argument(
        "--out", metavar="PATH", default="dpnoise-demo.png", help="where to save the plot"
    )
    add_sampling_args(demo)

    fit = sub.add_parser(
        "fit",
        help="fit a noise-aware model to a file of privatised reports",
        description="Fit a noise-aware model to privatised reports (CSV or Parquet).",
        formatter_class=Formatter,
    )
    fit_sub = fit.add_subparsers(dest="model", metavar="MODEL", required=True)
    for spec in MODELS.values():
        p = fit_sub.add_parser(
            spec.name,
            help=spec.summary,
            description=spec.description,
            epilog=FIT_EPILOG,
            formatter_class=Formatter,
        )
        data = add_input_args(p, spec.metavar, spec.what)
        spec.add_data_args(data)
        spec.add_model_args(p.add_argument_group("model"))
        add_sampling_args(p)
        add_output_args(p)
    return parser
