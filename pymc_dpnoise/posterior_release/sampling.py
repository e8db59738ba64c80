r"""Privacy by posterior sampling (the paper's Sec. 4): trimmed posterior draws, MAP.

Zhang, Rubinstein & Dimitrakakis (AAAI 2016):

* :func:`posterior_sample` --- Sec. 4.1: one draw (or several) from the posterior of a
  discrete Bayesian network's tables restricted to :math:`\theta \ge \omega` (Lemma 2,
  Theorem 4 part 1, Appendix C.2; its ε: :func:`posterior_sampling_epsilon`).  The exact
  trimmed Beta / Dirichlet samplers are in :mod:`pymc_dpnoise.posterior_release._truncated`;
* :func:`posterior_sample_linreg` --- Sec. 5.2 / Appendix D: the same for Bayesian linear
  regression with a prior restricted to a ball (:class:`LinRegModel`, Lemma D.1; its ε:
  :func:`linreg_sampling_epsilon`);
* :func:`exponential_map` --- Sec. 4.2, Algorithm 3: a MAP estimate by the exponential
  mechanism over a finite candidate set (Corollary 4).

Each returns a :class:`~pymc_dpnoise.posterior_release.Release`
(:mod:`~pymc_dpnoise.posterior_release.release`).  Simulation grade, as the warning of
:mod:`~pymc_dpnoise.posterior_release.release` says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special

from ..mechanisms.core import clip_rows
from ..validation import check_positive, check_rng
from ._truncated import truncated_beta, truncated_dirichlet
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

__all__ = [
    "LinRegModel",
    "exponential_map",
    "linreg_sampling_epsilon",
    "posterior_sample",
    "posterior_sample_linreg",
    "posterior_sampling_epsilon",
]


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

    :func:`~pymc_dpnoise.posterior_release._truncated.truncated_beta`: the inverse CDF where the
    restricted mass is not small, rejection from an exponential envelope where it is (the CDF
    underflows there, and the inverse CDF would release the wrong end of the range).
    """
    lo = np.full(np.shape(a1), float(lo))
    return truncated_beta(a1, a0, lo, 1.0 - lo, rng)


def _truncated_dirichlet(a, lo, rng):
    """One exact draw per row of Dirichlet(a) restricted to {θ_v >= lo}, at any concentration.

    :func:`~pymc_dpnoise.posterior_release._truncated.truncated_dirichlet` (stick breaking with
    exact trimmed-Beta fractions and one correcting accept/reject step whose acceptance rate
    does not collapse when the empirical frequencies lie outside the trimmed simplex).  Plain
    rejection from the untruncated Dirichlet accepted nothing there and raised an error that
    depended on the data.
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
    :mod:`pymc_dpnoise.posterior_release._truncated`).  No draw fails for lack of accepted
    proposals.

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
        As :func:`~pymc_dpnoise.posterior_release.updates.laplace_posterior_updates`.
        ``epsilon`` is the total for all draws.
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
    rng = check_rng(rng)
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
    rng = check_rng(rng)
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
        As :func:`~pymc_dpnoise.posterior_release.updates.laplace_posterior_updates`.
    candidates : sequence of parameter sets
        Each ``{node: (J_i, K_i) CPT}`` (rows on the simplex, entries > 0); e.g. draws from the
        prior (:meth:`~pymc_dpnoise.posterior_release.network.BayesNet.sample_parameters`) or a
        grid.
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
    >>> from pymc_dpnoise.posterior_release import BayesNet
    >>> rng = np.random.default_rng(0)
    >>> net = BayesNet.naive_bayes(2)
    >>> cands = [net.sample_parameters(1.0, rng) for _ in range(20)]
    >>> x = net.sample_data(cands[3], 200, rng)
    >>> rel = exponential_map(x, net, 1.0, rng, candidates=cands)
    >>> rel.metadata["n_candidates"], rel.spent.epsilon
    (20, 1.0)
    """
    rng = check_rng(rng)
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
