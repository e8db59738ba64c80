"""The bottom layer of the command line: its error type, exit codes, limits and the value
validators of its options (argparse ``type=``).

Standard library only; every other module of :mod:`pymc_dpnoise.cli` may import it, it imports
none of them.
"""

from __future__ import annotations

import argparse
import math

PROG = "pymc-dpnoise"
SAMPLERS = ("nutpie", "pymc", "numpyro")
SAMPLING_FAILED = 1
USAGE_ERROR = 2
INTERRUPTED = 130
#: every exit code of ``pymc-dpnoise`` and what it means (the docs' command-line page shows it)
EXIT_CODES = (
    (0, "success"),
    (
        SAMPLING_FAILED,
        "the posterior was sampled but a check of it refused the result (one line per failed "
        "check); nothing is saved",
    ),
    (
        USAGE_ERROR,
        "usage, input or sampling error: a one-line error message naming the option, file, "
        "row or column (a row whose log-likelihood is not finite at the sampler's starting "
        "point included), before anything is sampled or written; or the sampler's own error, "
        "in one line",
    ),
    (INTERRUPTED, "interrupted (Ctrl-C): no output file is written or changed"),
)
#: default of ``--max-rows``: reading stops with an error past this many data rows
MAX_ROWS = 10_000_000
#: seeds are passed to NumPy and to nutpie (an unsigned 64-bit integer)
MAX_SEED = 2**32 - 1


class InputError(Exception):
    """Bad user input: reported as ``<prog>: error: <message>`` with exit code 2."""


# --------------------------------------------------------------------------------------------
# value validators (argparse ``type=``): each raises ArgumentTypeError with a short reason
# --------------------------------------------------------------------------------------------


def finite_float(text: str) -> float:
    """A finite number (``-1e3``, ``2.5``, ``1e-3``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def probability(text: str) -> float:
    """A number in the open interval (0, 1)."""
    value = finite_float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text!r}")
    return value


def int_between(low: int, high: int | None = None):
    """An integer in ``[low, high]``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text!r}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high}, got {text!r}")
        return value

    parse.__name__ = f"int>={low}"
    return parse


def separator(text: str) -> str:
    """One field-separator character; ``tab`` or ``\\t`` for a tab."""
    if text in ("tab", "\\t"):
        return "\t"
    if len(text) != 1:
        raise argparse.ArgumentTypeError(f"must be one character (or 'tab'), got {text!r}")
    if text in ('"', "\n", "\r"):
        raise argparse.ArgumentTypeError(f"cannot be {text!r}")
    return text


def column_list(text: str) -> list[str]:
    """Comma-separated column names or 0-based indices (``a,b,c`` or ``0,1,2``)."""
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"empty column name in {text!r}")
    if len(set(items)) != len(items):
        raise argparse.ArgumentTypeError(f"a column is named twice in {text!r}")
    return items
