r"""Privacy by posterior perturbation (the paper's Sec. 3): Laplace noise on the count updates.

Zhang, Rubinstein & Dimitrakakis (AAAI 2016):

* :func:`laplace_posterior_updates` --- Sec. 3.1, Algorithm 1: Laplace noise on the count
  updates :math:`\Delta\omega`, clamped to :math:`[0, n]` (sensitivity Lemma 1, privacy
  Corollary 1);
* :func:`fourier_posterior_updates` --- Sec. 3.2, Algorithm 2: Laplace noise on the Fourier
  coefficients of the marginal tables (reconstruction Theorem 2, sensitivity Corollary 2,
  non-negativity shift Corollary 3), with :func:`fourier_closure` the set
  :math:`\mathcal{N}_\mathcal{I}` of coefficients released.

Both return a :class:`~pymc_dpnoise.posterior_release.Release`
(:mod:`~pymc_dpnoise.posterior_release.release`); an Algorithm 1 release of naive Bayes is
read noise-aware by :mod:`pymc_dpnoise.posterior_release.reader`.  Simulation grade, as the warning of
:mod:`~pymc_dpnoise.posterior_release.release` says.
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms.core import as_float, check_noise_scale
from ..validation import check_rng
from .network import BayesNet, as_bayesnet
from .release import (
    Release,
    _base_metadata,
    _central,
    _count,
    _data_and_net,
    _readonly,
    _scalar_positive,
)

__all__ = ["fourier_closure", "fourier_posterior_updates", "laplace_posterior_updates"]


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
        :class:`~pymc_dpnoise.posterior_release.network.BayesNet`.
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
    rng = check_rng(rng)
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
    rng = check_rng(rng)
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
