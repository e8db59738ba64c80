"""``pymc-dpnoise fit MODEL``: read, build, sample, summarise, save (atomically).

The order is chosen so that nothing is lost and nothing is half-written: option checks, the
output target and the input file are all checked before PyMC is imported; sampling starts
only then; the posterior is written to a temporary file renamed into place.  Ctrl-C (SIGINT)
at any point ends with exit code 130 and leaves the ``--save`` target as it was.
"""

from __future__ import annotations

import os
import signal
import sys

from ._args import sampler_available
from ._base import INTERRUPTED, PROG, SAMPLING_FAILED, InputError
from ._checks import check_rows, count_tail_warnings, sample
from ._columns import pick_column
from ._read import open_table
from ._registry import MODELS
from ._write import check_target, write_atomic

__all__ = ["Interrupt", "run_fit"]


class Interrupt:
    """SIGINT handler with three modes.

    ``"raise"`` (reading, saving): remember the signal and raise KeyboardInterrupt, so the
    temporary files are cleaned up.  ``"exit"`` (building and sampling): print
    :attr:`message` and end the process at once with exit code 130; nothing has been written
    yet.  Raising is not enough there: samplers run in native code and can swallow the
    exception (nutpie returns a partial trace; a KeyboardInterrupt raised while a garbage
    collector callback runs is ignored), so the first Ctrl-C was lost.  ``"defer"`` (the
    rename that commits the output): only remember it.  :meth:`check` raises if a signal
    came while its exception could have been swallowed.
    """

    def __init__(self, message="interrupted"):
        self.flag = False
        self.mode = "raise"
        self.message = message
        self._old = None

    def __call__(self, signum, frame):
        self.flag = True
        if self.mode == "exit":
            try:
                sys.stdout.flush()
            except Exception:  # a print was interrupted: exit anyway
                pass
            os.write(2, (self.message + "\n").encode())
            os._exit(INTERRUPTED)
        if self.mode == "raise":
            raise KeyboardInterrupt

    def __enter__(self):
        try:
            self._old = signal.signal(signal.SIGINT, self)
        except ValueError:  # not the main thread: leave the default handler
            self._old = None
        return self

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)

    def check(self):
        if self.flag:
            raise KeyboardInterrupt


def resolve_sampler(name: str | None) -> str:
    if name is None:
        return "nutpie" if sampler_available("nutpie") else "pymc"
    if not sampler_available(name):
        extra = "nutpie" if name == "nutpie" else "numpyro and jax"
        raise InputError(
            f"--sampler {name}: {extra} not installed "
            "(pip install 'pymc-dpnoise[samplers]'), or use --sampler pymc"
        )
    return name


def configure_quiet(quiet: bool) -> None:
    if quiet:
        import logging
        import warnings

        warnings.filterwarnings("ignore", category=UserWarning, module=r"pytensor\..*")

        for name in ("pymc", "pytensor", "nutpie"):
            logging.getLogger(name).setLevel(logging.WARNING)


def summary_frame(idata, params, hdi_prob):
    import arviz as az
    import pandas as pd

    s = pd.DataFrame(
        az.summary(
            idata, var_names=params, ci_prob=hdi_prob, ci_kind="hdi", round_to="none", kind="all"
        )
    )
    s = s[[c for c in s.columns if not c.startswith("mcse")]].astype(float)
    for c in s.columns:
        if c.startswith("ess"):
            s[c] = s[c].round().astype("Int64")
        elif c == "r_hat":
            s[c] = s[c].round(3)
        else:
            s[c] = s[c].round(4)
    return s


def draws_frame(idata, params):
    """Draws as a table: chain, draw, then one column per scalar (``theta[a]`` ...)."""
    import numpy as np
    import pandas as pd

    post = idata.posterior
    first = np.asarray(post[params[0]].values)
    chains, draws = first.shape[:2]
    cols = {
        "chain": np.repeat(np.arange(chains), draws),
        "draw": np.tile(np.arange(draws), chains),
    }
    for p in params:
        da = post[p]
        values = np.asarray(da.values, dtype=float)
        dims = da.dims[2:]
        if not dims:
            cols[p] = values.reshape(chains * draws)
            continue
        labels = [
            np.asarray(da.coords[d].values) if d in da.coords else np.arange(n)
            for d, n in zip(dims, values.shape[2:], strict=True)
        ]
        for idx in np.ndindex(values.shape[2:]):
            name = ",".join(str(lab[i]) for lab, i in zip(labels, idx, strict=True))
            cols[f"{p}[{name}]"] = values[(slice(None), slice(None), *idx)].reshape(-1)
    return pd.DataFrame(cols)


def _writer(idata, params, fmt):
    def write(path):
        if fmt == "csv":
            draws_frame(idata, params).to_csv(path, index=False)
        elif fmt == "zarr":
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata.to_zarr(path, mode="w")
        else:
            idata.to_netcdf(path)

    return write


def _summary_data(spec, args, t):
    """Clipped families, one budget, at least ``summaries.SUMMARY_THRESHOLD`` reports: the
    binned summary, computed by DuckDB streaming the file (nothing loaded, no ``--max-rows``
    limit).  None otherwise: the reports are read for the exact likelihood."""
    if spec.name == "logreg":
        from .families.regression import logreg_summary_data

        return logreg_summary_data(t, args)
    model = {"clipped-normal": "normal", "clipped-exponential": "exponential"}.get(spec.name)
    if model is None or args.epsilon is None or getattr(args, "epsilon_column", None):
        return None
    from ..summaries import SUMMARY_THRESHOLD, summarize_if_large

    idx = pick_column(t, args.column, set(), "reports")
    # the column keeps its name, so that the summaries' errors name it
    name = t.column_name(idx)
    rel = t.relation([idx])
    lower = args.lower if model == "normal" else 0.0
    try:
        s, n = summarize_if_large(
            rel, lower, args.upper, args.epsilon, model=model, column=name,
            threshold=SUMMARY_THRESHOLD,
        )  # fmt: skip
    except ValueError as exc:  # NULL / non-numeric / non-finite reports
        raise InputError(f"{t.display}: {' '.join(str(exc).split())}") from None
    if s is None:
        return None
    return dict(
        z=s,
        epsilon=args.epsilon,
        epsilon_desc=f"epsilon={args.epsilon:g}",
        read=f"Read {n} reports from {t.display} (column {t.label(idx)}) into a binned summary "
        f"of {s.n_bins + 2} rows (error bound {s.design_bound:.2g} nats; the exact per-report "
        f"likelihood is used below {SUMMARY_THRESHOLD} reports).",
    )


def run_fit(args, err, interrupt: Interrupt) -> int:
    spec = MODELS[args.model]
    spec.check(args)
    sampler = resolve_sampler(args.sampler)
    target = None
    if args.save:
        target = check_target(args.save, inputs=[args.reports], force=args.force)
    progress = (
        (lambda text: None) if args.quiet else (lambda text: print(text, file=err, flush=True))
    )
    progress(f"Reading {'stdin' if args.reports == '-' else args.reports} ...")
    with open_table(args.reports, header=args.header, sep=args.sep, max_rows=args.max_rows) as t:
        data = _summary_data(spec, args, t) or spec.data.read(t, args)

    import numpy as np

    configure_quiet(args.quiet)
    print(data["read"])
    if data.get("note"):
        print(f"note: {data['note']}", file=err)
    interrupt.check()
    interrupt.mode = "exit"  # nothing written yet: Ctrl-C from here ends the process at once
    progress("Building the model ...")
    import pymc as pm

    try:
        built = spec.build(args, data)
    except ValueError as exc:  # the distributions' own checks name the argument
        raise InputError(" ".join(str(exc).split())) from None
    print(f"Likelihood: {built.likelihood}")
    print(f"Priors: {built.priors}")
    check_rows(built.model, data, t.display)  # a row the sampler would fail on: exit 2
    for text in count_tail_warnings(spec.name, args, data, t.display):
        print(f"warning: {text}", file=err)
    print(f"Sampling with {sampler}: {args.chains} chains x {args.draws} draws ({args.tune} tune)")
    sys.stdout.flush()
    idata = sample(  # any sampler exception: a one-line error, exit 2
        pm,
        sampler,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=args.cores,
        random_seed=args.seed,
        progressbar=not args.quiet,
        quiet=args.quiet,
        model=built.model,
        compute_convergence_checks=False,
    )
    interrupt.check()  # a sampler that swallowed Ctrl-C returned a partial trace
    refused = False
    for kind, text in data["check_posterior"](idata) if "check_posterior" in data else ():
        if kind == "error":
            print(f"{PROG} fit {args.model}: error: {text}", file=err)
            refused = True
        else:
            print(f"{kind}: {text}", file=err)
    if refused:
        return SAMPLING_FAILED

    summary = summary_frame(idata, built.params, args.hdi_prob)
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
    if target is not None:
        interrupt.mode = "raise"  # the temporary file is removed on the way out
        interrupt.check()
        progress(f"Saving the posterior to {args.save} ...")

        def commit():
            interrupt.mode = "defer"  # from here on Ctrl-C cannot stop the rename half-way
            interrupt.check()

        try:
            write_atomic(target, _writer(idata, built.params, target.format), before_commit=commit)
        except OSError as exc:
            raise InputError(
                f"--save {args.save}: could not write the posterior ({exc.strerror or exc}); "
                "the target is unchanged"
            ) from None
        print(f"Posterior saved to {args.save} ({target.format})")
    return 0
