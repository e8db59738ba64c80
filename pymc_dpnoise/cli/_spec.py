"""The shapes of the model registry: what a model family module declares.

A family module (:mod:`pymc_dpnoise.cli.families`) declares one :class:`Family`: its
:class:`ModelSpec` rows (one ``pymc-dpnoise fit MODEL`` command each) and one worked
:class:`Example`.  A spec says which columns the command reads (a :class:`DataKind`: its
column options and its reader), which options set the protocol and the priors (a table of
:class:`Opt` rows), how the PyMC model is built (its ``build`` returns a :class:`Built`) and
which parameters are summarised.

Standard library only, and no other module of :mod:`pymc_dpnoise.cli`: the parser is built
from these entries for ``--help``.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable

__all__ = [
    "Built",
    "DataKind",
    "Example",
    "Family",
    "ModelSpec",
    "OneOf",
    "Opt",
    "add_options",
    "doc",
    "fmt",
]


def doc(*parts: str) -> str:
    """Join dedented text blocks (the ``fit MODEL --help`` description)."""
    return "".join(textwrap.dedent(p) for p in parts)


def fmt(x) -> str:
    """A number as the messages show it (``%g``)."""
    return f"{x:g}"


@dataclasses.dataclass
class Built:
    """What a model's ``build`` returns."""

    model: object  # the pm.Model
    likelihood: str  # one line describing the likelihood
    priors: str  # one line describing the priors
    params: list  # variables summarised (and saved to CSV)


class Opt:
    """One command-line option: ``group.add_argument(flag, help=help, **kw)``.

    ``prior=True`` marks an option that sets a prior (the docs list those apart from the
    protocol options); it is not passed to argparse.
    """

    def __init__(self, flag: str, help: str, *, prior: bool = False, **kw):
        self.flag, self.kw, self.prior = flag, dict(kw, help=help), prior

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.flag,)

    @property
    def required(self) -> bool:
        return bool(self.kw.get("required", False))

    def add(self, group):
        group.add_argument(self.flag, **self.kw)


class OneOf:
    """Options of which at most one may be given (exactly one if ``required``)."""

    def __init__(self, *opts: Opt, required: bool = True):
        self.opts, self.required = opts, required

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(o.flag for o in self.opts)

    @property
    def prior(self) -> bool:
        return all(o.prior for o in self.opts)

    def add(self, group):
        exclusive = group.add_mutually_exclusive_group(required=self.required)
        for opt in self.opts:
            opt.add(exclusive)


def add_options(group, options) -> None:
    """Add the :class:`Opt` / :class:`OneOf` rows ``options`` to an argparse group, in order."""
    for opt in options:
        opt.add(group)


@dataclasses.dataclass(frozen=True)
class DataKind:
    """How a family of models reads its file: ``options`` are the column options,
    ``read(table, args) -> dict`` returns the arrays (and a ``"read"`` description line)."""

    options: tuple
    read: Callable

    def add_args(self, group):
        add_options(group, self.options)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One ``pymc-dpnoise fit MODEL`` command (a row of the registry's ``MODELS``)."""

    name: str  # the MODEL word on the command line
    distribution: str  # the pymc_dpnoise distribution it fits
    data: DataKind
    options: tuple  # protocol parameters and priors (Opt rows)
    check: Callable  # (args) -> None: option checks before the file is read
    build: Callable  # (args, data) -> Built
    summary: str  # one line for ``fit --help``
    description: str  # model and default priors for ``fit MODEL --help``
    metavar: str = "REPORTS"
    what: str = "file of privatised reports, one per row"
    also: tuple = ()  # the distributions it fits with other options (``--noise``)
    synopsis: str = ""  # its key options in words, for the docs' model table

    def add_data_args(self, group):
        self.data.add_args(group)

    def add_model_args(self, group):
        add_options(group, self.options)


@dataclasses.dataclass(frozen=True)
class Example:
    """A worked example of a family, shown on the docs' command-line page and run by the tests.

    ``setup`` is Python code that writes the input file into the current directory (with the
    package's own release mechanisms, so the truth is known); ``command`` is the command line
    that fits it (``pymc-dpnoise fit ...``); ``expect`` says in words what to look for in the
    output.
    """

    setup: str
    command: str
    expect: str


@dataclasses.dataclass(frozen=True)
class Family:
    """A model family: the commands of one module of :mod:`pymc_dpnoise.cli.families`."""

    name: str  # the module's name
    title: str  # a heading for the docs
    intro: str  # what the family models, for the docs (a paragraph)
    models: tuple[ModelSpec, ...]
    example: Example
