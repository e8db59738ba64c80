"""Command-line interface: ``pymc-dpnoise`` (or ``python -m pymc_dpnoise``).

Commands
--------
``pymc-dpnoise demo``
    Simulate a population, privatise it, fit the noise-aware and the naive model, print both
    posteriors against the truth and save a plot.
``pymc-dpnoise fit MODEL FILE [options]``
    Fit a noise-aware model to a CSV or Parquet file of privatised reports (what an
    aggregator holds) or of central-DP releases (one noisy count, sum or count vector per
    row), print a posterior summary and optionally save the posterior.  One MODEL per
    distribution: ``clipped-normal``, ``clipped-exponential``, ``noisy-binomial``,
    ``noisy-poisson``, ``truncated-exponential``, ``truncated-poisson``,
    ``noisy-multinomial``, ``oue``, ``sue``, ``unary-encoding``, ``krr``, ``linreg``,
    ``logreg``, ``ss-normal`` (``pymc-dpnoise fit --help``).  The count commands
    (``noisy-binomial``, ``noisy-poisson``) take the release's noise as ``--noise`` (Laplace,
    discrete Laplace, rounded Laplace, Gaussian or discrete Gaussian, with ``--scale`` /
    ``--epsilon`` or ``--sigma`` / ``--rho``) and its clamp as ``--lower`` / ``--upper``.

Layout, bottom to top (each module imports only the ones above it in this list, never back):
:mod:`._base` (error type, exit codes, option validators), :mod:`._spec` (the shapes of a
model entry), :mod:`._options` and :mod:`._columns` (options and reading helpers shared by the
families), :mod:`.families` (one module per model family: its options, reader and builders),
:mod:`._checks` (the pre-sampling checks of a built model and the sampling call),
:mod:`._registry` (every family and model, in order), :mod:`._args` (the parser, built from
the registry), :mod:`._read` (DuckDB readers), :mod:`._write` (output checks, atomic writes),
:mod:`._fit` (the fit command), :mod:`._reference` (the docs' command-line page, generated
from the registry).

Bad input (missing file, non-numeric or missing reports, ε ≤ 0, ``lower >= upper``, unknown
column, an existing ``--save`` target without ``--force`` ...) gives a one-line ``error:``
message and exit code 2, never a traceback; so does a row whose log-likelihood is not finite
at the sampler's starting point, and any exception of the sampler.  Noisy counts far beyond the
count's range for the declared noise get a warning before sampling.  Ctrl-C gives exit code 130.  NumPy, DuckDB and
PyMC are imported only after the arguments are parsed, so ``--help`` answers at once.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ._args import build_parser
from ._base import INTERRUPTED, PROG, USAGE_ERROR, InputError
from ._fit import Interrupt, configure_quiet, resolve_sampler, run_fit
from ._read import read_reports
from ._registry import MODELS

__all__ = ["MODELS", "InputError", "build_parser", "main", "read_reports"]


def _cmd_demo(args, err) -> int:
    sampler = resolve_sampler(args.sampler)
    out = Path(args.out)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"--out {args.out}: directory {str(parent)!r} does not exist")
    import time

    from ..demo import run_demo

    configure_quiet(args.quiet)
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


def main(argv: list[str] | None = None) -> int:
    """Run the ``pymc-dpnoise`` command line; return the exit code.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 1 if a check of the posterior refused it, 2 for a usage, input or
        sampling error (one line on standard error as ``pymc-dpnoise ...: error: ...``), 130
        if interrupted.

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
    with Interrupt(f"{prog}: interrupted; no output was written") as interrupt:
        try:
            if args.command == "demo":
                return _cmd_demo(args, err)
            return run_fit(args, err, interrupt)
        except InputError as exc:
            print(f"{prog}: error: {exc}", file=err)
            return USAGE_ERROR
        except KeyboardInterrupt:
            print(f"{prog}: interrupted; no output was written", file=err)
            return INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
