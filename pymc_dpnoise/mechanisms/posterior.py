r"""Differentially private *posterior release* for discrete Bayesian networks (and a regression).

The four mechanisms of Zhang, Rubinstein & Dimitrakakis, *On the Differential Privacy of
Bayesian Inference* (AAAI 2016; "the paper" below), for a data holder who wants to publish a
posterior:

* :func:`laplace_posterior_updates` --- Algorithm 1: Laplace noise on the count updates;
* :func:`fourier_posterior_updates` --- Algorithm 2: Laplace noise on the Fourier coefficients
  of the marginal tables, consistent tables, non-negativity shift;
* :func:`posterior_sample` and :func:`posterior_sample_linreg` --- one draw from a trimmed
  posterior (Sec. 4.1, Theorem 4; Appendices C.2 and D);
* :func:`exponential_map` --- Algorithm 3: MAP by the exponential mechanism.

Every function has the signature ``(data, structure, epsilon, rng, **options) -> Release``.
The :class:`Release` holds the released values, the privacy spent (``release.spent``) and the
metadata a *reader* of the release needs (noise scales, clamping bounds, the structure, ``n``).

**Neighbouring data sets** (the paper's Definition 1): two data sets of the same size ``n``
that differ in one record (replace-one).  ``n`` is therefore public and is recorded in the
metadata; nothing else computed from the data is released besides ``values``.

**Conventions** (see :mod:`pymc_dpnoise.bayesnet`): the structure is a
:class:`~pymc_dpnoise.bayesnet.BayesNet` or a mapping ``column -> tuple of parent columns``;
every per-node table has shape ``(J_i, K_i)`` (row = parent configuration in mixed radix, first
parent most significant; column = value of the node).  For a Bernoulli node column 1 is
Example 1's :math:`\Delta\alpha_{i,j}` (ones) and column 0 is :math:`\Delta\beta_{i,j}` (zeros).

.. warning::

   Simulation grade, like the rest of :mod:`pymc_dpnoise.mechanisms`: NumPy floating-point noise
   is not hardened against floating-point attacks, and rejection loops take a data-dependent
   time.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, special

from .._validation import check_positive
from ..bayesnet import BayesNet, as_bayesnet
from ._truncated import truncated_beta, truncated_dirichlet
from .core import as_float, check_noise_scale, clip_rows, release_guard

__all__ = [
    "Budget",
    "LinRegModel",
    "Release",
    "exponential_map",
    "fourier_closure",
    "fourier_posterior_updates",
    "laplace_posterior_updates",
    "linreg_sampling_epsilon",
    "posterior_sample",
    "posterior_sample_linreg",
    "posterior_sampling_epsilon",
    "total_spent",
]


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
def _rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "`rng` must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)); "
            f"got {type(rng).__name__}"
        )
    return rng


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


def _updates_scale(a):
    """Algorithm 1's Laplace scale 2|I|/epsilon (None if `parents` is not readable here)."""
    try:
        nodes = as_bayesnet(a["parents"], None, a["cardinality"]).n_nodes
    except (TypeError, ValueError):
        return None
    return 2.0 * nodes / as_float(a["epsilon"])


def _fourier_scale(a):
    """Algorithm 2's Laplace scale 2|N_I|/epsilon (None if `parents` is not readable here)."""
    try:
        size = len(fourier_closure(a["parents"]))
    except (TypeError, ValueError):
        return None
    return 2.0 * size / as_float(a["epsilon"])


# ------------------------------------------------------------------------------ Algorithm 1
@_central(noise_scale=_updates_scale)
def laplace_posterior_updates(data, parents, epsilon, rng, *, cardinality=None) -> Release:
    r"""Algorithm 1: Laplace noise on every count update, clamped to :math:`[0, n]`.

    For every node :math:`i`, parent configuration :math:`j` and value :math:`v`, releases

    .. math::

        Z_{i,j,v} = \min\{n, \max\{0,\ \Delta\omega_{i,j,v} + \mathrm{Lap}(2|\mathcal{I}|/\varepsilon)\}\}

    with independent noise.  For a Bernoulli node, :math:`Z_{i,j,1}` and :math:`Z_{i,j,0}` are
    the paper's :math:`Z^{(1)}_{i,j}` (for :math:`\Delta\alpha_{i,j}`) and :math:`Z^{(2)}_{i,j}`
    (for :math:`\Delta\beta_{i,j}`).

    **Privacy** (Lemma 1, Corollary 1): :math:`|\mathcal{I}|` is the number of nodes, i.e. the
    number of conditional tables one record touches (each record adds 1 to exactly one count of
    every node).  Replacing one record moves at most two counts of every node by one, so the L1
    sensitivity of the vector of all counts is :math:`2|\mathcal{I}|` (the same for categorical
    nodes).  Laplace noise of scale :math:`2|\mathcal{I}|/\varepsilon` is ε-DP and the clamp is
    post-processing.  (The paper writes the clamp as :math:`\mathbf{1}_{[0,n]}(\cdot)`, an
    indicator; the text says "truncated at zero ... upper truncated at n", which is what is
    implemented.)

    Parameters
    ----------
    data : array_like, shape (n, m)
        One column per node; 0/1 for Bernoulli nodes, ``0..K-1`` for categorical ones.
    parents : mapping or BayesNet
        ``{column: tuple of parent columns}`` (every column a key) or a
        :class:`~pymc_dpnoise.bayesnet.BayesNet`.
    epsilon : float
        Privacy budget (> 0).
    rng : numpy.random.Generator
    cardinality : int or sequence of int, optional
        Node cardinalities when ``parents`` is a mapping (default 2: Bernoulli).

    Returns
    -------
    Release
        ``values[i]``: ``(J_i, K_i)`` array of released counts (floats in ``[0, n]``), and
        nothing else computed from the data.  ``metadata``: ``scale`` (:math:`2|\mathcal{I}|/
        \varepsilon`), ``sensitivity`` (:math:`2|\mathcal{I}|`), ``lower`` = 0, ``upper`` = n,
        ``n``, ``structure``.  A reader models each value as a count plus Laplace(``scale``)
        noise clamped to ``[lower, upper]``, independently across cells.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 2, size=(50, 3))
    >>> rel = laplace_posterior_updates(x, {0: (), 1: (0,), 2: (0,)}, 1.0, rng)
    >>> rel.values[1].shape, rel.metadata["scale"], rel.spent.epsilon
    ((2, 2), 6.0, 1.0)
    """
    rng = _rng(rng)
    eps = _scalar_positive("epsilon", epsilon)
    net, x = _data_and_net(data, parents, cardinality)
    n = x.shape[0]
    sensitivity = 2.0 * net.n_nodes
    scale = sensitivity / eps
    values = {
        i: _readonly(np.clip(c + rng.laplace(0.0, scale, size=c.shape), 0.0, float(n)))
        for i, c in net.counts(x).items()
    }
    meta = _base_metadata(
        net,
        n,
        scale=scale,
        sensitivity=sensitivity,
        lower=0.0,
        upper=float(n),
        layout="values[i][j, v]: count of X_i = v in parent configuration j (+ noise, clamped)",
        reference="Zhang et al. (AAAI 2016) Algorithm 1; sensitivity Lemma 1; Corollary 1",
    )
    return Release(values, eps, 0.0, "laplace_updates", meta)


# ------------------------------------------------------------------------------ Algorithm 2
def fourier_closure(parents) -> tuple[tuple[int, ...], ...]:
    r"""The downward closure :math:`\mathcal{N}_\mathcal{I}` of the families :math:`\bar\pi_i`.

    All subsets of every family :math:`\bar\pi_i = \pi_i \cup \{i\}`, as sorted tuples of
    columns, ordered by size then lexicographically (the empty set first).

    Examples
    --------
    >>> fourier_closure({0: (), 1: (0,), 2: (0,)})
    ((), (0,), (1,), (2,), (0, 1), (0, 2))
    """
    net = as_bayesnet(parents)
    sets = set()
    for i, ps in enumerate(net.parents):
        fam = sorted((*ps, i))
        for r in range(len(fam) + 1):
            sets.update(tuple(c) for c in _combinations(fam, r))
    return tuple(sorted(sets, key=lambda g: (len(g), g)))


def _combinations(items, r):
    import itertools

    return itertools.combinations(items, r)


def _sign_matrix(s: int) -> np.ndarray:
    """H[β, γ] = (-1)^{popcount(β & γ)} for s-bit β, γ (bit s-1-k is the k-th family member)."""
    idx = np.arange(2**s)
    pc = np.zeros((2**s, 2**s), dtype=np.int64)
    both = idx[:, None] & idx[None, :]
    for b in range(s):
        pc += (both >> b) & 1
    return np.where(pc % 2 == 0, 1.0, -1.0)


def _fourier_tables(net: BayesNet, closure, coef: np.ndarray) -> dict[int, np.ndarray]:
    """Marginal tables of every family from parity-sum coefficients (Theorem 2)."""
    pos = {g: a for a, g in enumerate(closure)}
    out = {}
    for i, ps in enumerate(net.parents):
        fam = (*ps, i)  # first parent most significant, node least significant
        s = len(fam)
        # coefficient of subset mask γ: bit (s-1-k) set <=> fam[k] in γ
        c = np.empty(2**s)
        for mask in range(2**s):
            members = tuple(sorted(fam[k] for k in range(s) if (mask >> (s - 1 - k)) & 1))
            c[mask] = coef[pos[members]]
        out[i] = (_sign_matrix(s) @ c / 2**s).reshape(-1, 2)
    return out


@_central(privacy={"t": "positive"}, noise_scale=_fourier_scale)
def fourier_posterior_updates(
    data,
    parents,
    epsilon,
    rng,
    *,
    t,
    shift: str = "paper",
    max_tries: int | None = 1,
) -> Release:
    r"""Algorithm 2: Laplace noise on Fourier coefficients; consistent, shifted marginal tables.

    Bernoulli nodes only (the Fourier basis of the Boolean hypercube).  With
    :math:`k = |\mathcal{I}|` nodes and the contingency table :math:`h` of the data, the
    Fourier coefficients are :math:`\langle f^\gamma, h\rangle = 2^{-k/2} \sum_r
    (-1)^{\langle\gamma, x_r\rangle}`.  For every :math:`\gamma` in the downward closure
    :math:`\mathcal{N}_\mathcal{I}` (:func:`fourier_closure`) the mechanism releases

    .. math::

        z_\gamma = \langle f^\gamma, h\rangle + \mathrm{Lap}\!\left(\frac{2|\mathcal{N}_\mathcal{I}|}
        {\varepsilon\, 2^{k/2}}\right),

    adds a shift to :math:`z_\emptyset`, and reconstructs the marginal table over every family
    :math:`\bar\pi_i = \pi_i\cup\{i\}` (:math:`s = |\bar\pi_i|`) by Theorem 2,

    .. math::

        h^i_\beta = 2^{k/2 - s} \sum_{\gamma \subseteq \bar\pi_i} z_\gamma (-1)^{\langle\gamma,\beta\rangle},

    whose cells are the released updates (Algorithm 2, line 11).  Tables of different nodes are
    *consistent*: their shared marginals are built from the same coefficients and agree
    exactly.  To avoid over/underflow of :math:`2^{\pm k/2}` the implementation works with the
    *parity sums* :math:`c_\gamma = 2^{k/2} z_\gamma = \sum_r (-1)^{\langle\gamma,x_r\rangle} +
    \mathrm{Lap}(2|\mathcal{N}_\mathcal{I}|/\varepsilon)`; then
    :math:`h^i_\beta = 2^{-s}\sum_\gamma c_\gamma (-1)^{\langle\gamma,\beta\rangle}`.

    **Privacy** (Corollary 2, after Barak et al. 2007, Thm. 6): replacing one record changes each
    parity sum by at most 2, so the L1 sensitivity of the :math:`|\mathcal{N}_\mathcal{I}|`
    parity sums is :math:`2|\mathcal{N}_\mathcal{I}|` (of the :math:`z_\gamma`:
    :math:`2|\mathcal{N}_\mathcal{I}|2^{-k/2}`).  This bound is conservative: under replace-one
    :math:`z_\emptyset = n2^{-k/2}` never changes, and not all parities can flip at once.

    **Non-negativity** (Corollary 3, stated there with :math:`2^{-k/2}` for
    :math:`2^{-|\mathcal{I}|/2}`): the shift is data independent (no privacy cost).

    * ``shift="paper"``: :math:`c_\emptyset \mathrel{+}= 4t|\mathcal{N}_\mathcal{I}|^2/\varepsilon`
      (line 7).  The paper claims non-negative tables with probability :math:`\ge 1 - e^{-t}`.
      The union-bound argument behind it needs :math:`t \ge \ln|\mathcal{N}_\mathcal{I}|`
      (roughly); for small ``t`` and many nodes the claim fails (naive Bayes, 64 features,
      all-zero data, ``t`` = 0.003: non-negative in 0.22% ± 0.02% of runs, claimed
      :math:`\ge` 0.30%).  For the usual ``t`` (e.g. 2.3 for 90%) it holds with room to spare.
    * ``shift="union"`` (provable): every cell of an :math:`s`-way table deviates from its count
      by at most :math:`\max_\gamma |W_\gamma|`, :math:`W_\gamma \sim
      \mathrm{Lap}(B)`, :math:`B = 2|\mathcal{N}_\mathcal{I}|/\varepsilon`.  With
      :math:`R = -B\ln(1 - (1 - e^{-t})^{1/|\mathcal{N}_\mathcal{I}|})`, adding
      :math:`R\,2^{s_{\max}}` to :math:`c_\emptyset` makes all tables non-negative with
      probability :math:`\ge (1 - e^{-R/B})^{|\mathcal{N}_\mathcal{I}|} = 1 - e^{-t}`.  For
      :math:`t \gtrsim 0.1` this shift is also *smaller* than the paper's (naive Bayes with 16
      features, t = 2.3: 5.8 B per cell against 39 B).

    **Re-runs** ("re-running Algorithm 2 affords another chance of stealth at the cost of
    privacy budget ε"):

    * ``max_tries=1`` (default): one run, ε-DP; ``metadata["nonnegative"]`` says whether the
      tables came out non-negative (the data holder may then withhold or clip them: both are
      post-processing).
    * ``max_tries=R > 1``: re-run until non-negative, at most ``R`` runs (the last is released
      even if negative).  ``R ε``-DP by basic composition, charged in full because the number
      of runs depends on the data.
    * ``max_tries=None``: re-run until non-negative and release only that run.  **2ε-DP**: for
      an ε-DP mechanism :math:`M` and a fixed set :math:`A`, :math:`P(M(D)\in B\mid M(D)\in A)
      \le e^{\varepsilon}P(M(D')\in B\cap A)/(e^{-\varepsilon}P(M(D')\in A))`.  The number of
      runs is *not* released (it is not covered); the loop stops with ``RuntimeError`` after
      10,000 runs (a too-small ``t``).

    Parameters
    ----------
    data : array_like, shape (n, m)
        0/1 values, one column per node.
    parents : mapping or BayesNet
        Binary network.
    epsilon : float
        Privacy budget of one run (> 0).
    rng : numpy.random.Generator
    t : float
        Non-negativity parameter (> 0): tables non-negative with probability about
        :math:`\ge 1 - e^{-t}`.  ``t = log(10)`` aims at 90%, as in the paper's Sec. 5.1.
    shift : {"paper", "union"}
    max_tries : int or None

    Returns
    -------
    Release
        ``values[i]``: the ``(J_i, 2)`` table :math:`h^i` (row j = parent configuration,
        column = value of node i), consistent across nodes; add the prior to get Algorithm 2's
        posterior parameters.  ``metadata``: ``closure`` (the :math:`\gamma`, as tuples),
        ``coefficients`` (the released parity sums :math:`c_\gamma` including the shift, the raw
        ε-DP output; the tables are a linear function of it), ``scale`` (:math:`B`, Laplace
        scale of each :math:`c_\gamma`), ``shift`` (added to :math:`c_\emptyset`), ``t``,
        ``sensitivity``, ``nonnegative``, ``n``, ``structure`` and, unless ``max_tries`` is
        None, ``runs``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 2, size=(200, 3))
    >>> rel = fourier_posterior_updates(x, {0: (), 1: (0,), 2: (0,)}, 1.0, rng, t=np.log(10))
    >>> len(rel.metadata["closure"]), rel.metadata["scale"]
    (6, 12.0)
    >>> bool(np.allclose(rel.values[1].sum(axis=1), rel.values[2].sum(axis=1)))  # consistent
    True
    """
    rng = _rng(rng)
    eps = _scalar_positive("epsilon", epsilon)
    t = _scalar_positive("t", t)
    if shift not in ("paper", "union"):
        raise ValueError(f'`shift` must be "paper" or "union"; got {shift!r}')
    tries = _count("max_tries", max_tries, allow_none=True)
    net = as_bayesnet(parents, data)
    if not net.is_binary:
        raise ValueError(
            "`parents` must describe Bernoulli nodes for the Fourier mechanism (Algorithm 2 "
            f"uses the Boolean hypercube); cardinalities {net.cardinality}"
        )
    x = net.check_data(data)
    n = x.shape[0]
    closure = fourier_closure(net)
    size = len(closure)
    parity = np.array(
        [n if not g else float(np.sum(1 - 2 * (x[:, list(g)].sum(axis=1) % 2))) for g in closure]
    )
    sensitivity = 2.0 * size
    scale = sensitivity / eps
    s_max = max(len(ps) + 1 for ps in net.parents)
    shift_value = _fourier_shift(shift, t, eps, size, scale, s_max)
    # data independent: |parity sums| <= n, so every table cell stays below this bound
    check_noise_scale(
        "fourier_posterior_updates", scale, ["epsilon", "t"], (n + shift_value) * 2.0**s_max
    )
    limit = 10_000 if tries is None else tries
    for run in range(1, limit + 1):  # noqa: B007 (run is recorded below)
        coef = parity + rng.laplace(0.0, scale, size=size)
        coef[0] += shift_value
        tables = _fourier_tables(net, closure, coef)
        nonneg = all(np.all(tb >= 0) for tb in tables.values())
        if nonneg:
            break
    else:
        if tries is None:
            raise RuntimeError(
                "fourier_posterior_updates: no non-negative release in 10,000 runs; `t` is "
                "far too small for this network (increase it, or use shift='union')"
            )
    if tries is None:
        spent = 2.0 * eps
    else:
        spent = eps * tries
    meta = _base_metadata(
        net,
        n,
        closure=closure,
        coefficients=_readonly(coef),
        scale=scale,
        scale_fourier=scale * 2.0 ** (-net.n_nodes / 2),
        sensitivity=sensitivity,
        shift=shift_value,
        shift_rule=shift,
        t=t,
        nonnegative=bool(nonneg),
        max_tries=tries,
        epsilon_per_run=eps,
        layout="values[i][j, v]: marginal-table cell (parents = j, X_i = v); coefficients[a]: "
        "sum_r (-1)^{<closure[a], x_r>} + Lap(scale), shift added to the empty set's",
        reference="Zhang et al. (AAAI 2016) Algorithm 2; Theorem 2 (reconstruction); "
        "Corollary 2 (sensitivity); Corollary 3 (shift); Theorem 3 (utility)",
    )
    if tries is not None:
        meta["runs"] = run
    values = {i: _readonly(tb) for i, tb in tables.items()}
    return Release(values, spent, 0.0, "fourier_updates", meta)


def _fourier_shift(rule: str, t: float, eps: float, size: int, scale: float, s_max: int) -> float:
    r"""Corollary 3's shift (``rule="paper"``) or the union-bound one, inf if it overflows.

    Union: :math:`R = -B\log(1 - (1 - e^{-t})^{1/N})`, in log space so that any finite ``t``
    gives a finite shift (:math:`R \approx B(t + \log N)` once :math:`e^{-t}` underflows).
    """
    with np.errstate(over="ignore"):
        if rule == "paper":
            return float(np.float64(4.0) * t * size**2 / eps)
        # y = log of (1 - e^{-t})^{1/N} <= 0, by log1mexp (accurate for tiny and large t)
        y = (math.log(-math.expm1(-t)) if t < math.log(2.0) else math.log1p(-math.exp(-t))) / size
        log_miss = math.log(-math.expm1(y)) if y < 0.0 else -t - math.log(size)
        return float(np.float64(-scale) * log_miss * 2.0**s_max) + 0.0  # no -0.0


# ------------------------------------------------------------------ posterior sampling (BN)
def _node_lipschitz(k: int, trim: float) -> float:
    """log(max/min) of a categorical probability with every entry >= trim: the node's L_i."""
    return math.log((1.0 - (k - 1) * trim) / trim)


def _trims(net: BayesNet, trim) -> tuple[float, ...]:
    """Per-node trimming levels from a scalar or a per-node sequence, checked."""
    if np.ndim(trim) == 0:
        trims = (_scalar_positive("trim", trim),) * net.n_nodes
    else:
        trims = tuple(_scalar_positive("trim", w) for w in np.asarray(trim, dtype=float))
        if len(trims) != net.n_nodes:
            raise ValueError(f"`trim` has {len(trims)} entries for {net.n_nodes} nodes")
    for i, (w, k) in enumerate(zip(trims, net.cardinality, strict=True)):
        if w >= 1.0 / k:
            raise ValueError(f"`trim` for node {i} must be < 1/K_i = {1.0 / k:.4g}; got {w}")
    return trims


def posterior_sampling_epsilon(parents, trim, size: int = 1, cardinality=None) -> float:
    r"""The ε of :func:`posterior_sample` for trimming level ``trim`` (and ``size`` draws).

    Every CPT entry of node i is restricted to :math:`\theta_{i,j,v} \ge \omega_i` (for a
    Bernoulli node :math:`\theta_{i,j} \in [\omega_i, 1-\omega_i]`), so the log-probability of
    node i's factor lies in :math:`[\log\omega_i, \log(1 - (K_i-1)\omega_i)]` and, for any two
    records, :math:`|\log p_\theta(x) - \log p_\theta(y)| \le L = \sum_i L_i`,
    :math:`L_i = \log\frac{1-(K_i-1)\omega_i}{\omega_i}` (Lemma 2 with Hamming distance between
    records).  One posterior draw is then :math:`2L`-DP (Theorem 4, part 1), whatever the prior
    concentrations; ``size`` draws are :math:`2L\cdot` ``size``-DP.  ``trim`` is one level for
    all nodes or one per node.

    Examples
    --------
    >>> round(posterior_sampling_epsilon({0: (), 1: (0,)}, 0.1), 4)   # 2 * 2 * log(9)
    8.7889
    """
    net = as_bayesnet(parents, None, cardinality)
    size = _count("size", size)
    trims = _trims(net, trim)
    return (
        2.0 * size * sum(_node_lipschitz(k, w) for k, w in zip(net.cardinality, trims, strict=True))
    )


def _trims_for_epsilon(net: BayesNet, eps_draw: float) -> tuple[float, ...]:
    """Each node gets L_i = eps_draw / (2|I|): omega_i = 1 / (K_i - 1 + e^{eps_draw / (2|I|)}).

    Refused (for every data set alike) when a level is not a usable number: ``epsilon`` so
    small that omega_i rounds to 1/K_i (nothing left to sample), or so large that it
    underflows to 0 (no trimming, unbounded privacy loss).
    """
    x = eps_draw / (2.0 * net.n_nodes)
    trims = []
    for k in net.cardinality:
        # 1 / (k - 1 + e^x) = e^{-x} / (1 + (k - 1) e^{-x}), without overflow
        w = math.exp(-x) / (1.0 + (k - 1) * math.exp(-x))
        if not (0.0 < w < 1.0 / k) or posterior_sampling_epsilon_of(k, w) == 0.0:
            raise ValueError(
                f"`epsilon` = {eps_draw:.6g} per draw gives a trimming level of {w!r} for a "
                f"node with {k} values, which is not usable in float64 (it must be in "
                f"(0, 1/{k})): use an `epsilon` per draw between about 1e-12 and 1000"
            )
        trims.append(w)
    return tuple(trims)


def posterior_sampling_epsilon_of(k: int, w: float) -> float:
    """The per-node privacy loss 2 log((1 - (k - 1) w) / w) of one draw."""
    return 2.0 * _node_lipschitz(k, w)


def _truncated_beta(a1, a0, lo, rng):
    """θ ~ Beta(a1, a0) restricted to [lo, 1 - lo], exactly at any concentration.

    :func:`._truncated.truncated_beta`: the inverse CDF where the restricted mass is not small,
    rejection from an exponential envelope where it is (the CDF underflows there, and the
    inverse CDF would release the wrong end of the range).
    """
    lo = np.full(np.shape(a1), float(lo))
    return truncated_beta(a1, a0, lo, 1.0 - lo, rng)


def _truncated_dirichlet(a, lo, rng):
    """One exact draw per row of Dirichlet(a) restricted to {θ_v >= lo}, at any concentration.

    :func:`._truncated.truncated_dirichlet` (stick breaking with exact trimmed-Beta fractions
    and one correcting accept/reject step whose acceptance rate does not collapse when the
    empirical frequencies lie outside the trimmed simplex).  Plain rejection from the
    untruncated Dirichlet accepted nothing there and raised an error that depended on the data.
    """
    return truncated_dirichlet(a, lo, rng)


@_central()
def posterior_sample(
    data, parents, epsilon, rng, *, prior=1.0, trim=None, size: int = 1, cardinality=None
) -> Release:
    r"""One draw (or ``size`` draws) from the trimmed posterior of the CPTs: posterior sampling.

    The prior on every CPT row is Dirichlet(``prior``) (Beta for Bernoulli nodes) *restricted to*
    :math:`\{\theta_{i,j,v} \ge \omega\}` (:math:`\theta_{i,j}\in[\omega, 1-\omega]` for a
    Bernoulli node); its posterior is the conjugate posterior restricted to the same set, and
    the mechanism releases draws from it (Dimitrakakis et al. 2014; the paper's Sec. 4,
    Theorem 4 and Appendix C.2).  Every row is drawn exactly, however far the trimmed range
    lies in a tail of the posterior: Bernoulli rows by the inverse CDF or, where the CDF
    underflows, rejection from an exponential envelope; categorical rows by stick breaking
    with exactly trimmed Beta fractions and one correcting accept/reject step (see
    :mod:`pymc_dpnoise.mechanisms._truncated`).  No draw fails for lack of accepted proposals.

    **Privacy** (Lemma 2 + Theorem 4, part 1): see :func:`posterior_sampling_epsilon`:
    :math:`\varepsilon = 2\,\mathrm{size}\sum_i\log\frac{1-(K_i-1)\omega_i}{\omega_i}`.  Given
    ε, every node gets the same share: :math:`\omega_i = 1/(K_i - 1 + e^{\varepsilon/(2|\mathcal{I}|
    \,\mathrm{size})})` (for Bernoulli nodes :math:`1/(1 + e^{\varepsilon/(2|\mathcal{I}|\,
    \mathrm{size})})`).
    The paper's Appendix C.2 states :math:`\varepsilon = 2\log(1/\omega)` for "a minimal
    probability ω assigned to any sub-event"; that holds when ω bounds the probability of a
    whole record :math:`p_\theta(x)`.  Trimming each CPT entry at ω only bounds the record
    probability by :math:`\omega^{|\mathcal{I}|}`, and the guarantee is :math:`|\mathcal{I}|`
    times larger: the form used here.  Several draws (the paper's experiment averages many)
    compose: each costs its share ``epsilon / size``.

    Parameters
    ----------
    data, parents, epsilon, rng, cardinality
        As :func:`laplace_posterior_updates`.  ``epsilon`` is the total for all draws.
    prior : float or mapping
        Dirichlet/Beta concentrations (scalar or ``{node: (J_i, K_i) array}``); 1 = uniform.
    trim : float or sequence of float, optional
        :math:`\omega` (one for all nodes, or one per node).  Default: the levels above, which
        spend exactly ``epsilon``.  If
        given, its ε (:func:`posterior_sampling_epsilon`) must not exceed ``epsilon``; the
        release reports that ε.
    size : int
        Number of draws.

    Returns
    -------
    Release
        ``values[i]``: ``(J_i, K_i)`` CPT (``(size, J_i, K_i)`` if ``size > 1``).
        ``metadata``: ``trim`` (per node), ``lipschitz`` (L), ``epsilon_per_draw``, ``prior``, ``n``,
        ``structure``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 2, size=(100, 2))
    >>> rel = posterior_sample(x, {0: (), 1: (0,)}, 2.0, rng)
    >>> [round(w, 4) for w in rel.metadata["trim"]], rel.values[1].shape
    ([0.3775, 0.3775], (2, 2))
    """
    rng = _rng(rng)
    eps = _scalar_positive("epsilon", epsilon)
    size = _count("size", size)
    net, x = _data_and_net(data, parents, cardinality)
    if trim is None:
        trims = _trims_for_epsilon(net, eps / size)
        spent = eps
    else:
        trims = _trims(net, trim)
        spent = posterior_sampling_epsilon(net, trims, size)
        if spent > eps * (1 + 1e-12):
            raise ValueError(
                f"`trim` = {trim} gives epsilon = {spent:.6g} > `epsilon` = {eps}; "
                "increase `trim` or `epsilon`"
            )
    a = net.prior_tables(prior)
    post = {i: a[i] + c for i, c in net.counts(x).items()}
    values = {}
    for i, p in post.items():
        rows = np.repeat(p[None], size, axis=0).reshape(-1, p.shape[1])
        if p.shape[1] == 2:
            th1 = _truncated_beta(rows[:, 1], rows[:, 0], trims[i], rng)
            th = np.stack([1.0 - th1, th1], axis=1)
        else:
            th = _truncated_dirichlet(rows, trims[i], rng)
        th = th.reshape(size, *p.shape)
        values[i] = _readonly(th[0] if size == 1 else th)
    lip = sum(_node_lipschitz(k, w) for k, w in zip(net.cardinality, trims, strict=True))
    meta = _base_metadata(
        net,
        x.shape[0],
        trim=trims,
        lipschitz=lip,
        epsilon_per_draw=spent / size,
        size=size,
        prior=a,
        layout="values[i][j, v] = P(X_i = v | parents = j), drawn from the trimmed posterior",
        reference="Zhang et al. (AAAI 2016) Lemma 2, Theorem 4 (part 1), Appendix C.2 "
        "(corrected: epsilon = 2 * sum_i log((1 - (K_i - 1) trim_i) / trim_i))",
    )
    return Release(values, spent, 0.0, "posterior_sample", meta)


# --------------------------------------------------------- posterior sampling (regression)
@dataclass(frozen=True)
class LinRegModel:
    r"""Bayesian linear regression of the paper's Sec. 5.2 / Appendix D.

    :math:`y_r = w^\top x_r + e_r`, :math:`e_r \sim N(0, \sigma^2)` (σ known), prior
    :math:`w \sim N(0, \Lambda^{-1})` restricted to :math:`\|w\|_2 \le W` (the *radius*),
    :math:`\Lambda` = ``precision`` times the identity (or a given matrix).  Records are clipped
    to :math:`\|x_r\|_2 \le` ``x_bound`` and :math:`|y_r| \le` ``y_bound`` before use.
    """

    sigma: float = 1.0
    precision: Any = 1.0
    x_bound: float = 1.0
    y_bound: float = 1.0

    def __post_init__(self):
        for name in ("sigma", "x_bound", "y_bound"):
            _scalar_positive(name, getattr(self, name))
        p = np.asarray(self.precision, dtype=float)
        if p.ndim == 0:
            check_positive("precision", p)
        elif p.ndim != 2 or p.shape[0] != p.shape[1] or not np.allclose(p, p.T):
            raise ValueError("`precision` must be a positive scalar or a symmetric matrix")
        elif np.any(np.linalg.eigvalsh(p) <= 0):
            raise ValueError("`precision` must be positive definite")


def linreg_sampling_epsilon(model: LinRegModel, radius, size: int = 1) -> float:
    r"""The ε of :func:`posterior_sample_linreg` for a weight radius :math:`W`.

    With :math:`u = w^\top x`, the log-likelihood of a record is
    :math:`-y^2/(2\sigma^2) + (2yu - u^2)/(2\sigma^2)`; the first term does not depend on
    :math:`w` and cancels in the posterior, so only :math:`g_w(x, y) = (2yu - u^2)/(2\sigma^2)`
    matters.  Over :math:`|y| \le R_y`, :math:`|u| \le W R_x` its range is

    .. math::

        L = \begin{cases} 2 R_y W R_x / \sigma^2, & W R_x \le R_y,\\
        (R_y + W R_x)^2 / (2\sigma^2), & W R_x > R_y,\end{cases}

    and one draw is :math:`2L`-DP (Theorem 4, part 1, with Hamming distance between records).
    The paper's Appendix D bound, :math:`L(w) = \frac{n}{2\sigma^2}(1 + 2\|w\|_1 + d\|w\|_2)`,
    carries a spurious factor ``n`` (only one record differs) and a gradient that is not that of
    :math:`-(y - w^\top x)^2/(2\sigma^2)`; the direct bound above replaces it.

    Examples
    --------
    >>> linreg_sampling_epsilon(LinRegModel(sigma=1.0), 0.5)   # 2 * 2 * 1 * 0.5 * 1
    2.0
    """
    size = _count("size", size)
    w = _scalar_positive("radius", radius)
    rx, ry, s2 = model.x_bound, model.y_bound, model.sigma**2
    lip = 2 * ry * w * rx / s2 if w * rx <= ry else (ry + w * rx) ** 2 / (2 * s2)
    return 2.0 * lip * size


#: smallest weight radius (times x_bound) posterior_sample_linreg derives from epsilon
_MIN_RADIUS = 1e-12


def _radius_for_epsilon(model: LinRegModel, eps_draw: float) -> float:
    rx, ry, s2 = model.x_bound, model.y_bound, model.sigma**2
    if eps_draw <= 4 * ry * ry / s2:
        return eps_draw * s2 / (4 * ry * rx)
    return (math.sqrt(eps_draw * s2) - ry) / rx


def _truncated_gaussian_ball(mu, prec, sigma, radius, size, rng, max_proposals=2_000_000):
    r"""Exact draws of N(mu, sigma^2 prec^{-1}) restricted to the ball ||w|| <= radius.

    Rejection sampling from the same Gaussian re-centred at the mode ``m`` of the restricted
    density (``m = mu`` if ``mu`` is inside the ball).  With :math:`P = \mathrm{prec}/\sigma^2`
    the density ratio target/proposal is :math:`\propto \exp(w^\top g)`, :math:`g = P(\mu - m)`,
    at most :math:`\exp(r\|g\|)` on the ball, so a proposal inside the ball is accepted with
    probability :math:`\exp(w^\top g - r\|g\|)`.  Returns the draws and the acceptance rate.
    """
    d = mu.shape[0]
    P = prec / sigma**2
    m = mu
    if np.linalg.norm(mu) > radius:
        lam_p, Q = np.linalg.eigh(P)
        b = Q.T @ (P @ mu)

        def excess(lam):
            return np.linalg.norm(b / (lam_p + lam)) - radius

        hi = 1.0
        while excess(hi) > 0:
            hi *= 2.0
        lam = optimize.brentq(excess, 0.0, hi, xtol=1e-14 * hi, rtol=1e-14)
        m = Q @ (b / (lam_p + lam))
        m *= radius / max(np.linalg.norm(m), radius)  # exactly on the sphere
    g = P @ (mu - m)
    gmax = radius * np.linalg.norm(g)
    chol = np.linalg.cholesky(prec)
    draws, proposed, accepted = [], 0, 0
    while accepted < size:
        batch = max(256, 4 * (size - accepted))
        zz = rng.standard_normal((batch, d))
        # m + sigma * L^{-T} z has covariance sigma^2 (L L^T)^{-1} = P^{-1}
        w = m + sigma * np.linalg.solve(chol.T, zz.T).T
        ok = np.linalg.norm(w, axis=1) <= radius
        ok &= np.log(rng.random(batch)) <= w @ g - gmax
        draws.append(w[ok])
        accepted += int(ok.sum())
        proposed += batch
        if proposed >= max_proposals and accepted < size:
            raise RuntimeError(
                "posterior_sample_linreg: rejection sampling accepted "
                f"{accepted} of {proposed} proposals; increase `radius` (or `epsilon`)"
            )
    return np.concatenate(draws)[:size], accepted / proposed


@_central()
def posterior_sample_linreg(
    data, model: LinRegModel, epsilon, rng, *, radius=None, size: int = 1
) -> Release:
    r"""Posterior sampling for linear regression with a truncated Gaussian prior (Appendix D).

    The posterior of a Gaussian prior restricted to :math:`\|w\|_2 \le W` is the conjugate
    Gaussian :math:`N(\mu_n, \Sigma_n)`, :math:`\Sigma_n = \sigma^2(X^\top X + \sigma^2\Lambda)^{-1}`,
    :math:`\mu_n = (X^\top X + \sigma^2\Lambda)^{-1}X^\top y`, restricted to the same ball
    (Lemma D.1); the release is ``size`` exact draws from it (rejection from the Gaussian
    re-centred at the mode of the restricted posterior).

    **Privacy**: :func:`linreg_sampling_epsilon`.  Given ε, the radius is the largest :math:`W`
    whose guarantee is ε (per draw ``epsilon / size``); a given ``radius`` must not exceed ε.

    Parameters
    ----------
    data : tuple (X, y)
        ``X`` shape (n, d), ``y`` shape (n,); clipped to the model's bounds.
    model : LinRegModel
    epsilon : float
        Total budget for all draws.
    rng : numpy.random.Generator
    radius : float, optional
        :math:`W`.
    size : int

    Returns
    -------
    Release
        ``values``: ``(d,)`` weights (``(size, d)`` if ``size > 1``).  ``metadata``: ``radius``,
        ``lipschitz``, ``epsilon_per_draw``, ``acceptance`` (fraction of accepted proposals),
        ``n``, the model.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(0, 0.3, size=(500, 2))
    >>> y = np.clip(X @ [0.2, -0.1] + rng.normal(0, 0.5, 500), -1, 1)
    >>> rel = posterior_sample_linreg((X, y), LinRegModel(sigma=0.5), 4.0, rng)
    >>> rel.values.shape, round(rel.metadata["radius"], 3)
    ((2,), 0.25)
    """
    rng = _rng(rng)
    eps = _scalar_positive("epsilon", epsilon)
    size = _count("size", size)
    if not isinstance(model, LinRegModel):
        raise TypeError(f"`model` must be a LinRegModel; got {type(model).__name__}")
    try:
        X, y = data
    except (TypeError, ValueError):
        raise ValueError("`data` must be a pair (X, y)") from None
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(
            f"`data` must be (X of shape (n, d), y of shape (n,)); got {X.shape}, {y.shape}"
        )
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("`data` must be finite")
    d = X.shape[1]
    if radius is None:
        w_max = _radius_for_epsilon(model, eps / size)
        spent = eps
        if not w_max >= _MIN_RADIUS / model.x_bound:
            raise ValueError(
                f"`epsilon` = {eps:.6g} ({eps / size:.6g} per draw) gives a weight radius of "
                f"{w_max:.3g}, too small to sample (at least {_MIN_RADIUS:g} / x_bound): use a "
                "larger `epsilon`"
            )
    else:
        w_max = _scalar_positive("radius", radius)
        spent = linreg_sampling_epsilon(model, w_max, size)
        if spent > eps * (1 + 1e-12):
            raise ValueError(
                f"`radius` = {radius} gives epsilon = {spent:.6g} > `epsilon` = {eps}; "
                "decrease `radius` or increase `epsilon`"
            )
    Xc = clip_rows(X, model.x_bound)
    yc = np.clip(y, -model.y_bound, model.y_bound)
    lam = np.asarray(model.precision, dtype=float)
    lam = lam * np.eye(d) if lam.ndim == 0 else lam
    if lam.shape != (d, d):
        raise ValueError(f"`precision` has shape {lam.shape}, expected ({d}, {d})")
    s2 = model.sigma**2
    prec = Xc.T @ Xc + s2 * lam
    mu = np.linalg.solve(prec, Xc.T @ yc)
    w, acceptance = _truncated_gaussian_ball(mu, prec, model.sigma, w_max, size, rng)
    rx, ry = model.x_bound, model.y_bound
    lip = 2 * ry * w_max * rx / s2 if w_max * rx <= ry else (ry + w_max * rx) ** 2 / (2 * s2)
    meta = {
        "model": model,
        "n": X.shape[0],
        "radius": w_max,
        "lipschitz": lip,
        "epsilon_per_draw": spent / size,
        "size": size,
        "acceptance": acceptance,
        "neighbouring": "replace-one (Definition 1): same n, one record changed; n is public",
        "reference": "Zhang et al. (AAAI 2016) Theorem 4 (part 1), Lemma D.1; Lipschitz "
        "constant derived directly (see linreg_sampling_epsilon)",
    }
    return Release(_readonly(w[0] if size == 1 else w), spent, 0.0, "posterior_sample_linreg", meta)


# ------------------------------------------------------------------------------ Algorithm 3
def _candidate_tables(net: BayesNet, candidates) -> list[dict[int, np.ndarray]]:
    if isinstance(candidates, Mapping) or not isinstance(candidates, Sequence):
        raise TypeError(
            "`candidates` must be a sequence of parameter sets ({node: (J_i, K_i) CPT} each)"
        )
    if len(candidates) == 0:
        raise ValueError("`candidates` is empty: the exponential mechanism needs >= 1 candidate")
    out = []
    for c, th in enumerate(candidates):
        try:
            out.append(net.check_theta(th, name=f"candidates[{c}]"))
        except ValueError as err:
            raise ValueError(f"`candidates`: {err}") from None
    return out


@_central()
def exponential_map(data, parents, epsilon, rng, *, candidates, prior=1.0, cardinality=None):
    r"""Algorithm 3: a MAP estimate by the exponential mechanism over a finite candidate set.

    Releases candidate :math:`\theta_c` with probability proportional to
    :math:`\exp(\varepsilon\, u(D, \theta_c) / (2\Delta))` (uniform base measure on the finite
    set, McSherry & Talwar 2007), with utility the unnormalised log posterior
    :math:`u(D, \theta) = \log p_\theta(D) + \log\xi(\theta)`, maximised by the MAP.

    **Utility sensitivity.** Replacing one record changes :math:`u(\cdot, \theta)` by
    :math:`\log p_\theta(x) - \log p_\theta(y)`, bounded (Lemma 2, per-node Lipschitz constants
    summed, Hamming distance between records) by

    .. math::

        \Delta = \max_c \sum_i \Big(\max_{j,v}\log\theta_{c,i,j,v} - \min_{j,v}\log\theta_{c,i,j,v}\Big),

    computed from the candidates (which must not depend on the data).  Theorem 4's :math:`2L`
    bounds the change of the *normalised* log posterior :math:`\log\xi(\theta\mid D)`; its
    normaliser is the same for every candidate and cancels in the mechanism, so :math:`\Delta
    = L` suffices (half the noise).  The paper's Algorithm 3 writes the utility as the posterior
    density :math:`\xi(\theta\mid D)` with :math:`\Delta = \sqrt{Lr}` or :math:`\sqrt{0.5M}`;
    a density has no such bounded sensitivity in general, and the log posterior is what makes
    Corollary 4 (ε-DP) go through.  A candidate with a zero probability has unbounded
    sensitivity and is rejected.

    Parameters
    ----------
    data, parents, epsilon, rng, cardinality
        As :func:`laplace_posterior_updates`.
    candidates : sequence of parameter sets
        Each ``{node: (J_i, K_i) CPT}`` (rows on the simplex, entries > 0); e.g. draws from the
        prior (:meth:`~pymc_dpnoise.bayesnet.BayesNet.sample_parameters`) or a grid.
    prior : float or mapping
        Dirichlet/Beta concentrations of :math:`\xi`.

    Returns
    -------
    Release
        ``values``: the chosen parameter set; ``metadata``: ``index`` (of the chosen
        candidate), ``sensitivity`` (Δ), ``n_candidates``, ``n``, ``structure``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_dpnoise.bayesnet import BayesNet
    >>> rng = np.random.default_rng(0)
    >>> net = BayesNet.naive_bayes(2)
    >>> cands = [net.sample_parameters(1.0, rng) for _ in range(20)]
    >>> x = net.sample_data(cands[3], 200, rng)
    >>> rel = exponential_map(x, net, 1.0, rng, candidates=cands)
    >>> rel.metadata["n_candidates"], rel.spent.epsilon
    (20, 1.0)
    """
    rng = _rng(rng)
    eps = _scalar_positive("epsilon", epsilon)
    net, x = _data_and_net(data, parents, cardinality)
    cands = _candidate_tables(net, candidates)
    a = net.prior_tables(prior)
    with np.errstate(divide="ignore"):
        logs = [{i: np.log(th[i]) for i in th} for th in cands]
    ranges = []
    for c, lt in enumerate(logs):
        if any(np.any(~np.isfinite(v)) for v in lt.values()):
            raise ValueError(
                f"`candidates`[{c}] has a zero probability: its log-likelihood, and so the "
                "utility's sensitivity, is unbounded"
            )
        ranges.append(sum(float(v.max() - v.min()) for v in lt.values()))
    delta_u = max(ranges)
    counts = net.counts(x)
    util = np.empty(len(cands))
    for c, lt in enumerate(logs):
        loglik = sum(float(np.sum(counts[i] * lt[i])) for i in lt)
        logprior = sum(
            float(
                np.sum(
                    special.gammaln(a[i].sum(axis=1))
                    - special.gammaln(a[i]).sum(axis=1)
                    + np.sum((a[i] - 1.0) * lt[i], axis=1)
                )
            )
            for i in lt
        )
        util[c] = loglik + logprior
    if delta_u == 0.0:
        # every candidate is uniform in every table: the likelihood ignores the data
        logits = np.zeros(len(cands))
    else:
        logits = eps * (util - util.max()) / (2.0 * delta_u)
    prob = np.exp(logits - logits.max())
    prob /= prob.sum()
    idx = int(rng.choice(len(cands), p=prob))
    meta = _base_metadata(
        net,
        x.shape[0],
        index=idx,
        sensitivity=delta_u,
        n_candidates=len(cands),
        prior=a,
        reference="Zhang et al. (AAAI 2016) Algorithm 3, Corollary 4; utility sensitivity "
        "from Lemma 2 (the normaliser of Theorem 4's posterior cancels)",
    )
    chosen = {i: _readonly(np.array(v)) for i, v in cands[idx].items()}
    return Release(chosen, eps, 0.0, "exponential_map", meta)
