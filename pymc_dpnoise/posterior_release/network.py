r"""Discrete Bayesian networks with conjugate Beta–Bernoulli / Dirichlet–categorical tables.

This is the model structure behind the posterior-release mechanisms of Zhang, Rubinstein &
Dimitrakakis, *On the Differential Privacy of Bayesian Inference* (AAAI 2016), Sec. 2.1 and
Example 1 (see :mod:`pymc_dpnoise.posterior_release`).

A network has nodes :math:`i = 0, \dots, m-1` (one per data column), parents :math:`\pi_i` and
cardinalities :math:`K_i` (2 for the Bernoulli nodes of Example 1).  Node :math:`i` has
:math:`J_i = \prod_{p \in \pi_i} K_p` parent configurations and a conditional probability table
(CPT) :math:`\theta_{i,j,v} = P(X_i = v \mid X_{\pi_i} = j)` with a Dirichlet prior on each row
(a Beta prior for :math:`K_i = 2`).  The *count update* of a data set is

.. math::

    \Delta\omega_{i,j,v} = \#\{r : x_{r,\pi_i} = j,\ x_{r,i} = v\},

so that the posterior of row :math:`(i, j)` is Dirichlet(prior + :math:`\Delta\omega_{i,j,\cdot}`).
For a Bernoulli node this is Example 1's :math:`\Delta\alpha_{i,j} = \Delta\omega_{i,j,1}` (ones)
and :math:`\Delta\beta_{i,j} = \Delta\omega_{i,j,0}` (zeros).

**Layout.** Every per-node table (counts, prior, posterior, CPT) is an array of shape
``(J_i, K_i)``: row ``j`` is a parent configuration, column ``v`` the value of :math:`X_i` (so
column 1 holds :math:`\Delta\alpha` and column 0 holds :math:`\Delta\beta` for a binary node).
Parent configurations are numbered in mixed radix with the *first* parent in ``parents[i]`` most
significant, i.e. in :func:`itertools.product` order: the same order as the columns of a
``pgmpy`` ``TabularCPD`` whose evidence is listed in the same order.

**Why not pgmpy.** ``pgmpy`` handles structures and CPDs well, but what the mechanisms need is
a topological order, a cycle check and one :func:`numpy.bincount` per node; ``pgmpy`` would add
a 6–15 s import and scikit-learn, statsmodels and huggingface_hub to the dependencies.  Cycle
detection uses the standard library's :mod:`graphlib`.  :meth:`BayesNet.to_pgmpy` converts a
network and a parameter set for users who want ``pgmpy``'s inference (it imports ``pgmpy``
lazily), and the tests check our counts against ``pgmpy``'s.
"""

from __future__ import annotations

import graphlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["BayesNet", "as_bayesnet"]


def _node_index(name: str, v, m: int | None) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        raise TypeError(f"`{name}` must hold integer column indices; got {v!r}")
    v = int(v)
    if v < 0 or (m is not None and v >= m):
        raise ValueError(f"`{name}` refers to column {v}, outside 0..{(m or 0) - 1}")
    return v


@dataclass(frozen=True)
class BayesNet:
    """A discrete Bayesian network: parents and cardinality of every node (one per data column).

    Build it with :meth:`from_parents` or :meth:`naive_bayes` (the constructor does the same
    checks).  Parents that form a cycle, unknown columns, repeated parents and cardinalities
    below 2 raise ``ValueError`` naming ``parents`` or ``cardinality``.

    Attributes
    ----------
    parents : tuple of tuple of int
        ``parents[i]`` is the ordered tuple of parent columns of node ``i``.
    cardinality : tuple of int
        Number of values of each node (2 = Bernoulli, the paper's Example 1).
    order : tuple of int
        A topological order (parents before children).

    Examples
    --------
    >>> net = BayesNet.from_parents({0: (), 1: (0,), 2: (0, 1)})
    >>> net.n_configs
    (1, 2, 4)
    >>> import numpy as np
    >>> counts = net.counts(np.array([[1, 0, 1], [1, 1, 1], [0, 0, 0]]))
    >>> counts[2]          # rows: (x0, x1) = 00, 01, 10, 11; columns: x2 = 0, 1
    array([[1, 0],
           [0, 0],
           [0, 1],
           [0, 1]])
    >>> BayesNet.from_parents({0: (1,), 1: (0,)})
    Traceback (most recent call last):
    ...
    ValueError: `parents` must form a directed acyclic graph; cycle: 0 -> 1 -> 0
    """

    parents: tuple[tuple[int, ...], ...]
    cardinality: tuple[int, ...]

    def __post_init__(self):
        m = len(self.parents)
        if m == 0:
            raise ValueError("`parents` must describe at least one node")
        if len(self.cardinality) != m:
            raise ValueError(
                f"`cardinality` has {len(self.cardinality)} entries for {m} nodes in `parents`"
            )
        for k in self.cardinality:
            if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
                raise ValueError(f"`cardinality` entries must be integers >= 2; got {k!r}")
        for i, ps in enumerate(self.parents):
            ps = [_node_index("parents", p, m) for p in ps]
            if len(set(ps)) != len(ps):
                raise ValueError(f"`parents` of node {i} repeat a column: {tuple(ps)}")
        try:
            order = tuple(graphlib.TopologicalSorter(dict(enumerate(self.parents))).static_order())
        except graphlib.CycleError as err:
            cycle = err.args[1]  # each node a parent of the next
            raise ValueError(
                "`parents` must form a directed acyclic graph; cycle: "
                + " -> ".join(str(c) for c in cycle)
            ) from None
        object.__setattr__(self, "order", order)

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_parents(
        cls, parents: Mapping[int, Sequence[int]], cardinality: int | Sequence[int] = 2
    ) -> BayesNet:
        """Network from a mapping ``column -> tuple of parent columns``.

        Every column ``0..m-1`` must be a key (a root has ``()``): a missing column is an
        error rather than a silent root.  ``cardinality`` is one integer for all nodes or one
        per node.
        """
        if isinstance(parents, BayesNet):
            return parents
        if _is_bayesnet_like(parents):
            return cls(tuple(parents.parents), tuple(parents.cardinality))
        if not isinstance(parents, Mapping):
            raise TypeError(
                "`parents` must be a mapping {column: tuple of parent columns} or a BayesNet; "
                f"got {type(parents).__name__}"
            )
        keys = [_node_index("parents", k, None) for k in parents]
        m = max(keys) + 1 if keys else 0
        missing = sorted(set(range(m)) - set(keys))
        if missing:
            raise ValueError(
                f"`parents` must have every column 0..{m - 1} as a key (use () for a root); "
                f"missing {missing}"
            )
        tup = []
        for i in range(m):
            ps = parents[i]
            if isinstance(ps, int | np.integer):
                ps = (ps,)
            tup.append(tuple(_node_index("parents", p, m) for p in ps))

        def entry(k):  # an integer (or integral float); anything else is named, not int()'d
            if isinstance(k, float | np.floating) and abs(k) < 2**31 and k == int(k):
                return int(k)
            if isinstance(k, bool) or not isinstance(k, int | np.integer):
                raise TypeError(
                    f"`cardinality` must be an integer >= 2 or one per node; got {k!r} "
                    f"({type(k).__name__})"
                )
            return int(k)

        if isinstance(cardinality, str | bytes) or np.ndim(cardinality) == 0:
            card = (entry(cardinality),) * m
        else:
            card = tuple(entry(k) for k in cardinality)
        return cls(tuple(tup), card)

    @classmethod
    def naive_bayes(
        cls, n_features: int, class_column: int = 0, cardinality: int | Sequence[int] = 2
    ) -> BayesNet:
        """Naive Bayes: the class column is the sole parent of every feature column (Sec. 5.1).

        Examples
        --------
        >>> BayesNet.naive_bayes(3).parents
        ((), (0,), (0,), (0,))
        """
        if isinstance(n_features, bool) or not isinstance(n_features, int | np.integer):
            raise TypeError(f"`n_features` must be an integer; got {n_features!r}")
        if n_features < 1:
            raise ValueError(f"`n_features` must be >= 1; got {n_features}")
        m = n_features + 1
        c = _node_index("class_column", class_column, m)
        return cls.from_parents({i: (() if i == c else (c,)) for i in range(m)}, cardinality)

    # ---------------------------------------------------------------- sizes and layout
    @property
    def n_nodes(self) -> int:
        """:math:`|\\mathcal{I}|`, the number of nodes (= conditional tables a record touches)."""
        return len(self.parents)

    @property
    def n_configs(self) -> tuple[int, ...]:
        """:math:`J_i`, the number of parent configurations of each node."""
        return tuple(int(np.prod([self.cardinality[p] for p in ps])) for ps in self.parents)

    @property
    def is_binary(self) -> bool:
        """True if every node is Bernoulli (the setting of Example 1 and Algorithm 2)."""
        return all(k == 2 for k in self.cardinality)

    @property
    def n_rows(self) -> int:
        """:math:`m = \\sum_i J_i`, the number of CPT rows (Prop. 1's ``m`` for binary nodes)."""
        return sum(self.n_configs)

    def table_shapes(self) -> tuple[tuple[int, int], ...]:
        """Shape ``(J_i, K_i)`` of every per-node table."""
        return tuple(zip(self.n_configs, self.cardinality, strict=True))

    def parent_configurations(self, node: int) -> np.ndarray:
        """Parent values of each configuration ``j`` of ``node``: shape ``(J_i, |π_i|)``.

        Examples
        --------
        >>> BayesNet.from_parents({0: (), 1: (), 2: (0, 1)}).parent_configurations(2)
        array([[0, 0],
               [0, 1],
               [1, 0],
               [1, 1]])
        """
        node = _node_index("node", node, self.n_nodes)
        ks = [range(self.cardinality[p]) for p in self.parents[node]]
        configs = list(itertools.product(*ks))
        return np.array(configs, dtype=int).reshape(len(configs), len(ks))

    def config_index(self, data, node: int) -> np.ndarray:
        """Parent-configuration index ``j`` of every record for ``node`` (mixed radix)."""
        x = self.check_data(data)
        j = np.zeros(x.shape[0], dtype=np.int64)
        for p in self.parents[node]:
            j = j * self.cardinality[p] + x[:, p]
        return j

    # ---------------------------------------------------------------- data
    def check_data(self, data) -> np.ndarray:
        """``data`` as an ``(n, m)`` integer array with values in ``0..K_i-1``, else ValueError.

        Bernoulli columns must hold 0/1 (booleans are accepted); non-integer values, NaN,
        values outside the range and a wrong number of columns name ``data``.
        """
        x = np.asarray(data)
        if x.ndim != 2:
            raise ValueError(f"`data` must be a 2-d array (records, nodes); got shape {x.shape}")
        if x.shape[1] != self.n_nodes:
            raise ValueError(
                f"`data` has {x.shape[1]} columns but the network has {self.n_nodes} nodes"
            )
        if x.shape[0] == 0:
            raise ValueError("`data` has no records")
        if x.dtype == bool:
            x = x.astype(np.int64)
        if not np.issubdtype(x.dtype, np.integer):
            try:
                xf = x.astype(float)
            except (TypeError, ValueError):
                raise ValueError(f"`data` must be numeric; got dtype {x.dtype}") from None
            if not np.all(np.isfinite(xf)) or np.any(xf != np.round(xf)):
                raise ValueError("`data` must hold integer category codes (0/1 for Bernoulli)")
            x = xf.astype(np.int64)
        card = np.asarray(self.cardinality)
        bad = (x < 0) | (x >= card)
        if np.any(bad):
            r, c = np.argwhere(bad)[0]
            kind = "binary (0/1)" if card[c] == 2 else f"in 0..{card[c] - 1}"
            raise ValueError(f"`data` column {c} must be {kind}; got {x[r, c]} in record {r}")
        return x.astype(np.int64, copy=False)

    def counts(self, data) -> dict[int, np.ndarray]:
        """The count updates :math:`\\Delta\\omega_{i,j,v}` of Example 1, one ``(J_i, K_i)`` table per node."""
        x = self.check_data(data)
        out = {}
        for i, (J, K) in enumerate(self.table_shapes()):
            flat = self.config_index(x, i) * K + x[:, i]
            out[i] = np.bincount(flat, minlength=J * K).reshape(J, K)
        return out

    def sample_data(self, theta, n: int, rng: np.random.Generator) -> np.ndarray:
        """Forward-sample ``n`` records from CPTs ``theta`` (ancestral sampling)."""
        theta = self.check_theta(theta)
        x = np.zeros((int(n), self.n_nodes), dtype=np.int64)
        for i in self.order:
            p = theta[i][self.config_index_partial(x, i)]
            u = rng.random((x.shape[0], 1))
            x[:, i] = np.minimum((u > np.cumsum(p, axis=1)).sum(axis=1), self.cardinality[i] - 1)
        return x

    def config_index_partial(self, x: np.ndarray, node: int) -> np.ndarray:
        """As :meth:`config_index` on an already-checked integer array (no validation)."""
        j = np.zeros(x.shape[0], dtype=np.int64)
        for p in self.parents[node]:
            j = j * self.cardinality[p] + x[:, p]
        return j

    # ---------------------------------------------------------------- parameters
    def prior_tables(self, prior=1.0, name: str = "prior") -> dict[int, np.ndarray]:
        """Dirichlet (Beta) prior concentrations, one ``(J_i, K_i)`` table per node.

        ``prior`` is a positive scalar (the same concentration everywhere; 1 = uniform, as in
        the paper's experiments) or a mapping ``node -> array`` broadcastable to ``(J_i, K_i)``.
        """
        out = {}
        for i, shape in enumerate(self.table_shapes()):
            v = prior[i] if isinstance(prior, Mapping) else prior
            try:
                a = np.broadcast_to(np.asarray(v, dtype=float), shape).copy()
            except ValueError:
                raise ValueError(
                    f"`{name}` for node {i} has shape {np.shape(v)}, not broadcastable to {shape}"
                ) from None
            if not np.all(np.isfinite(a)) or np.any(a <= 0):
                raise ValueError(f"`{name}` concentrations must be finite and > 0 (node {i})")
            out[i] = a
        return out

    def check_theta(self, theta, name: str = "theta") -> dict[int, np.ndarray]:
        """CPTs as ``{node: (J_i, K_i) array}`` with rows on the simplex, else ValueError."""
        out = {}
        for i, shape in enumerate(self.table_shapes()):
            try:
                t = np.asarray(theta[i], dtype=float)
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"`{name}` has no table for node {i}") from None
            if t.shape != shape:
                raise ValueError(f"`{name}` for node {i} has shape {t.shape}, expected {shape}")
            if not np.all(np.isfinite(t)) or np.any(t < 0):
                raise ValueError(f"`{name}` for node {i} must be finite and >= 0")
            if np.max(np.abs(t.sum(axis=1) - 1.0)) > 1e-9:
                raise ValueError(f"`{name}` rows for node {i} must sum to 1")
            out[i] = t
        return out

    def sample_parameters(self, prior, rng: np.random.Generator) -> dict[int, np.ndarray]:
        """One CPT set drawn from the Dirichlet (Beta) ``prior`` (data independent)."""
        a = self.prior_tables(prior)
        return {i: _dirichlet_rows(a[i], rng) for i in range(self.n_nodes)}

    def log_likelihood(self, theta, data) -> float:
        """:math:`\\sum_r \\log p_\\theta(x_r)` (the factorisation of Sec. 2.1)."""
        theta = self.check_theta(theta)
        x = self.check_data(data)
        with np.errstate(divide="ignore"):
            return float(
                sum(
                    np.log(theta[i][self.config_index_partial(x, i), x[:, i]]).sum()
                    for i in range(self.n_nodes)
                )
            )

    def to_pgmpy(self, theta, names: Sequence[str] | None = None):
        """A ``pgmpy.models.DiscreteBayesianNetwork`` with CPTs ``theta`` (imports pgmpy).

        Node ``i`` is named ``names[i]`` (default ``"X{i}"``).  Use it for queries on a released
        parameter set (for example a posterior sample or a posterior mean).  Needs ``pgmpy``
        (>= 1.0), which the ``pgmpy`` extra installs: ``pip install "pymc-dpnoise[pgmpy]"``.
        """
        from ..optional import require

        feature = "BayesNet.to_pgmpy"
        TabularCPD = require("pgmpy.factors.discrete", extra="pgmpy", feature=feature).TabularCPD
        models = require("pgmpy.models", extra="pgmpy", feature=feature)
        DiscreteBayesianNetwork = models.DiscreteBayesianNetwork

        theta = self.check_theta(theta)
        names = list(names) if names is not None else [f"X{i}" for i in range(self.n_nodes)]
        if len(names) != self.n_nodes:
            raise ValueError(f"`names` has {len(names)} entries for {self.n_nodes} nodes")
        model = DiscreteBayesianNetwork()
        model.add_nodes_from(names)
        model.add_edges_from(
            [(names[p], names[i]) for i in range(self.n_nodes) for p in self.parents[i]]
        )
        cpds = []
        for i in range(self.n_nodes):
            ps = self.parents[i]
            cpds.append(
                TabularCPD(
                    names[i],
                    self.cardinality[i],
                    theta[i].T,
                    evidence=[names[p] for p in ps] or None,
                    evidence_card=[self.cardinality[p] for p in ps] or None,
                )
            )
        model.add_cpds(*cpds)
        return model


def _dirichlet_rows(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One Dirichlet draw per row of concentration matrix ``a`` (via normalised gammas)."""
    g = rng.standard_gamma(a)
    s = g.sum(axis=1, keepdims=True)
    # tiny concentrations can underflow every gamma in a row: fall back to the largest one
    zero = s[:, 0] == 0
    if np.any(zero):
        g[zero] = (a[zero] == a[zero].max(axis=1, keepdims=True)).astype(float)
        s = g.sum(axis=1, keepdims=True)
    return g / s


def _is_bayesnet_like(obj) -> bool:
    # a BayesNet from another import of this module (e.g. doctest collection)
    return (
        not isinstance(obj, Mapping)
        and hasattr(obj, "parents")
        and hasattr(obj, "cardinality")
        and type(obj).__name__ == "BayesNet"
    )


def as_bayesnet(parents, data=None, cardinality=None) -> BayesNet:
    """A :class:`BayesNet` from a ``BayesNet`` or a parents mapping (binary nodes by default).

    If ``data`` is given and ``parents`` is a mapping, the mapping must cover its columns.
    """
    if isinstance(parents, BayesNet):
        net = parents
    elif _is_bayesnet_like(parents):
        net = BayesNet(tuple(parents.parents), tuple(parents.cardinality))
    else:
        net = BayesNet.from_parents(parents, 2 if cardinality is None else cardinality)
    if data is not None:
        shape = np.shape(data)
        if len(shape) == 2 and shape[1] != net.n_nodes:
            raise ValueError(f"`parents` describes {net.n_nodes} columns but `data` has {shape[1]}")
    return net
