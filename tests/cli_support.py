"""Helpers shared by the command-line tests (tests/cli/): building a command's model without
sampling."""

from __future__ import annotations


def _built(model, path, *opts):
    """Parse, check, read and build ``fit MODEL PATH *opts`` (no sampling): (data, Built)."""
    from pymc_dpnoise.cli import MODELS, build_parser
    from pymc_dpnoise.cli._read import open_table

    args = build_parser().parse_args(["fit", model, str(path), *opts])
    MODELS[model].check(args)
    with open_table(args.reports, header="auto", sep=None, max_rows=100) as t:
        data = MODELS[model].data.read(t, args)
    return data, MODELS[model].build(args, data)
