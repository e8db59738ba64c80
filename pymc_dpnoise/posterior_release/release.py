r"""What every posterior release is: the :class:`Release` record, its privacy, shared checks.

Zhang, Rubinstein & Dimitrakakis, *On the Differential Privacy of Bayesian Inference* (AAAI
2016; "the paper" below), Sec. 2.2.  Every mechanism of this subpackage
(:mod:`~pymc_dpnoise.posterior_release.updates`, :mod:`~pymc_dpnoise.posterior_release.sampling`)
has the signature ``(data, structure, epsilon, rng, **options) -> Release``.  The
:class:`Release` holds the released values, the privacy spent (``release.spent``) and the
metadata a *reader* of the release needs (noise scales, clamping bounds, the structure, ``n``).

**Neighbouring data sets** (the paper's Definition 1): two data sets of the same size ``n``
that differ in one record (replace-one).  ``n`` is therefore public and is recorded in the
metadata; nothing else computed from the data is released besides ``values``.

**Conventions** (see :mod:`pymc_dpnoise.posterior_release.network`): the structure is a
:class:`~pymc_dpnoise.posterior_release.network.BayesNet` or a mapping ``column -> tuple of parent
columns``; every per-node table has shape ``(J_i, K_i)`` (row = parent configuration in mixed
radix, first parent most significant; column = value of the node).  For a Bernoulli node
column 1 is Example 1's :math:`\Delta\alpha_{i,j}` (ones) and column 0 is
:math:`\Delta\beta_{i,j}` (zeros).

The private helpers here (argument checks, the release guard of a central release) are shared
by the mechanism modules.

.. warning::

   Simulation grade, like the rest of :mod:`pymc_dpnoise.mechanisms`: NumPy floating-point noise
   is not hardened against floating-point attacks, and rejection loops take a data-dependent
   time.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..mechanisms.core import release_guard
from ..validation import check_positive
from .network import BayesNet, as_bayesnet

__all__ = ["Budget", "Release", "total_spent"]


# ------------------------------------------------------------------------------------ release
@dataclass(frozen=True)
class Budget:
    """Privacy spent by a release: the pair (ε, δ)."""

    epsilon: float
    delta: float = 0.0


@dataclass(frozen=True)
class Release:
    """A released quantity, the privacy it spent and what a reader needs to model it.

    Attributes
    ----------
    values
        The released values (per mechanism: see its docstring).  Arrays are read-only.
    epsilon, delta : float
        The privacy guarantee of this release, ``(epsilon, delta)``-DP under replace-one
        neighbours.  It can be smaller than the ``epsilon`` asked for when an option (a given
        trimming level) fixes it.
    mechanism : str
        Name of the mechanism (``"laplace_updates"``, ``"fourier_updates"``, ...).
    metadata : mapping
        Read-only: structure, ``n``, noise scale, sensitivity and where it comes from in the
        paper, options.  Everything here is public (data independent or ``n``) or a function
        of ``values``.
    """

    values: Any
    epsilon: float
    delta: float
    mechanism: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "metadata", types.MappingProxyType(dict(self.metadata)))

    @property
    def spent(self) -> Budget:
        """The privacy spent by this release, as a :class:`Budget`."""
        return Budget(self.epsilon, self.delta)


def total_spent(*releases: Release) -> Budget:
    """Privacy spent by several releases on the same data: basic composition (sums).

    Examples
    --------
    >>> total_spent(Release(1, 0.5, 0.0, "a"), Release(2, 0.25, 1e-6, "b"))
    Budget(epsilon=0.75, delta=1e-06)
    """
    return Budget(float(sum(r.epsilon for r in releases)), float(sum(r.delta for r in releases)))


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    a.setflags(write=False)
    return a


# ------------------------------------------------------------------------------------ checks
def _scalar_positive(name: str, value) -> float:
    if value is None or isinstance(value, str | bytes | bool | np.bool_):
        raise TypeError(f"`{name}` must be a number; got {value!r}")
    if np.ndim(value) != 0:
        raise ValueError(f"`{name}` must be a scalar; got shape {np.shape(value)}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a number; got {value!r}") from None
    check_positive(name, v)
    return v


def _count(name: str, value, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"`{name}` must be an integer >= 1; got {value!r}")
    return int(value)


def _data_and_net(data, parents, cardinality):
    net = as_bayesnet(parents, data, cardinality)
    x = net.check_data(data)
    return net, x


def _base_metadata(net: BayesNet, n: int, **kw) -> dict:
    return {
        "structure": net,
        "parents": net.parents,
        "cardinality": net.cardinality,
        "n": n,
        "neighbouring": "replace-one (Definition 1): same n, one record changed; n is public",
        **kw,
    }


def _values(rel):
    return rel.values


def _central(**hooks):
    """The release guard of a posterior release: one budget ``epsilon`` for the whole data set."""
    privacy = {"epsilon": "epsilon", **hooks.pop("privacy", {})}
    return release_guard(
        records=None, privacy=privacy, scalar=tuple(privacy), output=_values, **hooks
    )
