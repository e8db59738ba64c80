"""The registry of ``pymc-dpnoise fit``: every model family and every model, in order.

The argument parser (:mod:`._args`) builds one ``fit MODEL`` subcommand per entry of
:data:`MODELS`, and the docs' command-line page is generated from :data:`FAMILIES`.  Adding a
model is one :class:`~._spec.ModelSpec` in its family's module; adding a family is one module
in :mod:`.families` and one line here.

Nothing here imports NumPy or PyMC at module level: the parser is built from these entries
for ``--help``.
"""

from __future__ import annotations

from ._spec import Family, ModelSpec
from .families import clipped, counts, expfam, frequency, regression, sufficient

__all__ = ["FAMILIES", "MODELS"]

#: the families in ``fit --help`` order
FAMILIES: tuple[Family, ...] = (
    clipped.FAMILY,
    counts.FAMILY,
    expfam.FAMILY,
    frequency.FAMILY,
    regression.FAMILY,
    sufficient.FAMILY,
)


def _models(families) -> dict[str, ModelSpec]:
    models: dict[str, ModelSpec] = {}
    for family in families:
        for spec in family.models:
            if spec.name in models:
                raise RuntimeError(f"fit {spec.name}: defined twice (family {family.name!r})")
            models[spec.name] = spec
    return models


#: ``fit MODEL`` -> its spec, one row per command
MODELS: dict[str, ModelSpec] = _models(FAMILIES)
