"""Frequency-estimation experiments of the LDP paper (Figs. 2, 3 and 9) and a hierarchical example.

Used by ``notebooks/ldp_histograms.ipynb``; every function is deterministic given its seed.
(The notebook's Fig. 10 section, calibration of the histogram models, runs
:func:`pymc_dpnoise.experiments.ldp_calibration.run_grid`.)

* :func:`run_fig3` — OUE histograms with known truth (θ = [0.7, 0.2, 0.1]): posterior mean of
  the noise-aware model against the least-squares simplex projection of the unbiased OUE
  estimate (and, if installed, multi-freq-ldpy's aggregators), RMSE and unusable solutions.
* :func:`kosarak_records` and :func:`run_fig2` — the Kosarak analogue of LDP Fig. 2: ECDF
  distance between the private (noise-aware, OUE) and the exact non-private posterior.
* :func:`simulate_groups`, :func:`build_group_model` — sub-populations with their own budgets
  and mechanisms sharing a Dirichlet hyper-prior.

Speed: with ``k`` items there are at most ``2**k`` distinct OUE reports.  For small ``k`` the
models below observe *all* ``2**k`` bit patterns once, with the number of times each was
reported as ``counts`` (a ``pm.Data`` container, like ``epsilon``), so one compiled nutpie
model serves every data set, sample size and budget (``compiled.with_data(...)``), and a
gradient costs ``O(2**k k)`` whatever ``N`` is.  A pattern reported zero times contributes
``0 * logp = 0`` (its logp is always finite).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd

from ..diagnostics import ecdf_distance, rmse, sample_compiled
from ..mechanisms.frequency import (
    clip_normalize,
    krr_perturb,
    oue_estimate,
    oue_perturb,
    project_simplex,
)

__all__ = [
    "FIG3_THETA",
    "HIER_GROUPS",
    "SETTINGS",
    "build_group_model",
    "build_oue_model",
    "group_data",
    "have_multi_freq_ldpy",
    "kosarak_records",
    "multi_freq_ldpy_estimates",
    "pattern_counts",
    "run_fig2",
    "run_fig3",
    "run_hierarchical",
    "simulate_groups",
    "summarise_fig3",
    "unary_patterns",
    "unusable",
]

#: true histogram of LDP Fig. 3 / Fig. 9
FIG3_THETA = (0.7, 0.2, 0.1)
#: an estimate whose largest component exceeds this is "trivial" (all mass on one item)
TRIVIAL_THRESHOLD = 0.99


# --------------------------------------------------------------------------------------------
# Report patterns
# --------------------------------------------------------------------------------------------


def unary_patterns(k: int) -> np.ndarray:
    """All ``2**k`` bit vectors of length ``k`` (``int8``), row ``i`` = binary digits of ``i``,
    most significant bit first.

    Examples
    --------
    >>> unary_patterns(2).tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """
    if not 1 <= k <= 16:
        raise ValueError(f"`k` must be in [1, 16] to enumerate all patterns; got {k}")
    return np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int8)


def pattern_counts(reports) -> np.ndarray:
    """How often each of the ``2**k`` patterns of :func:`unary_patterns` occurs in ``reports``.

    ``reports`` has shape ``(..., N, k)``; the result ``(..., 2**k)`` (float64).

    Examples
    --------
    >>> pattern_counts([[0, 1], [1, 1], [0, 1]]).tolist()
    [0.0, 2.0, 0.0, 1.0]
    """
    z = np.asarray(reports)
    k = z.shape[-1]
    idx = (z.astype(np.int64) << np.arange(k - 1, -1, -1)).sum(-1)  # (..., N)
    flat = idx.reshape(-1, idx.shape[-1])
    out = np.stack([np.bincount(r, minlength=2**k) for r in flat]).astype(np.float64)
    return out.reshape(*idx.shape[:-1], 2**k)


# --------------------------------------------------------------------------------------------
# Models and fitting
# --------------------------------------------------------------------------------------------


def build_oue_model(k: int, alpha: float = 1.0, epsilon: float = 1.0):
    """Noise-aware OUE model ``theta ~ Dirichlet(alpha)`` on all ``2**k`` report patterns.

    Data containers: ``counts`` (``2**k``, how often each pattern was reported) and
    ``epsilon`` (scalar).  Compile once (``nutpie.compile_pymc_model``) and swap data with
    ``compiled.with_data(counts=..., epsilon=...)``.
    """
    import pymc as pm

    from ..distributions import OUELikelihood

    patterns = unary_patterns(k)
    with pm.Model() as model:
        counts = pm.Data("counts", np.ones(len(patterns)))
        eps = pm.Data("epsilon", np.float64(epsilon))
        theta = pm.Dirichlet("theta", np.full(k, float(alpha)))
        OUELikelihood("z", p=theta, epsilon=eps, counts=counts, observed=patterns)
    return model


def _fit_oue(compiled, reports, epsilon, rng, *, draws, tune, chains):
    """Posterior draws of θ (and the sampler info) of :func:`build_oue_model` for ``reports``."""
    return sample_compiled(
        compiled,
        draws=draws,
        tune=tune,
        chains=chains,
        seed=rng.integers(2**31 - 1),
        counts=pattern_counts(reports),
        epsilon=np.float64(epsilon),
    )


# --------------------------------------------------------------------------------------------
# Point estimates and metrics
# --------------------------------------------------------------------------------------------


def have_multi_freq_ldpy() -> bool:
    """Whether the optional comparison package ``multi-freq-ldpy`` is importable."""
    try:
        import multi_freq_ldpy.pure_frequency_oracles.UE  # noqa: F401
    except Exception:
        return False
    return True


def multi_freq_ldpy_estimates(reports, epsilon) -> dict:
    """multi-freq-ldpy 0.2.5's two OUE aggregators on ``(N, k)`` reports.

    * ``UE_Aggregator_MI`` — the unbiased estimate with negatives set to zero, renormalised
      ("Norm-Mul"); all zeros if every component is <= 0.
    * ``UE_Aggregator_IBU`` — iterative Bayesian update (EM-style), always on the simplex.

    Both sum the reports with Python's ``sum`` over rows, which keeps the input dtype: int8
    reports would overflow, so they are passed as float64.
    """
    from ..optional import require

    ue = require(
        "multi_freq_ldpy.pure_frequency_oracles.UE",
        extra="notebooks",
        feature="multi_freq_ldpy_estimates",
        package="multi-freq-ldpy",
    )
    UE_Aggregator_IBU, UE_Aggregator_MI = ue.UE_Aggregator_IBU, ue.UE_Aggregator_MI

    z = np.asarray(reports, dtype=np.float64)
    k = z.shape[-1]
    return {
        "mfl MI": np.asarray(UE_Aggregator_MI(z, float(epsilon), optimal=True), dtype=float),
        "mfl IBU": np.asarray(UE_Aggregator_IBU(z, k, float(epsilon), optimal=True), dtype=float),
    }


def unusable(estimate, threshold: float = TRIVIAL_THRESHOLD) -> tuple[np.ndarray, np.ndarray]:
    """``(trivial, unordered)`` flags for estimates of ``FIG3_THETA`` (last axis = items).

    *trivial*: the largest component exceeds ``threshold`` (all mass on one item);
    *unordered*: not trivial, and not strictly decreasing (θ1 > θ2 > θ3 is the truth).
    The two are disjoint; "unusable" is their union.

    Examples
    --------
    >>> unusable([[1.0, 0.0, 0.0], [0.5, 0.1, 0.4], [0.6, 0.3, 0.1]])
    (array([ True, False, False]), array([False,  True, False]))
    """
    e = np.asarray(estimate, dtype=float)
    trivial = e.max(-1) > threshold
    ordered = np.all(np.diff(e, axis=-1) < 0, axis=-1)
    return trivial, ~trivial & ~ordered


# --------------------------------------------------------------------------------------------
# LDP Fig. 3 / Fig. 9
# --------------------------------------------------------------------------------------------


def run_fig3(
    compiled,
    ns,
    epsilons,
    runs: int,
    *,
    theta=FIG3_THETA,
    seed: int = 3,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    mfl: bool = True,
    progress=None,
) -> pd.DataFrame:
    """Repeated OUE histograms with known ``theta``: one row per (ε, N, run, method).

    Methods: ``"posterior mean"`` (noise-aware OUE likelihood, NUTS), ``"LS projection"``
    (unbiased OUE estimate projected onto the simplex — the paper's baseline),
    ``"clip & normalise"``, ``"unbiased (raw)"`` (not a distribution; for reference) and,
    with ``mfl=True`` and multi-freq-ldpy installed, ``"mfl MI"`` and ``"mfl IBU"``.

    Run ``r`` of configuration ``(ε, N)`` uses ``SeedSequence([seed, round(1000 ε), N, r])``
    so results do not depend on the order or number of other configurations.
    """
    theta = np.asarray(theta, dtype=float)
    k = theta.size
    use_mfl = mfl and have_multi_freq_ldpy()
    rows = []
    for eps in epsilons:
        for n in ns:
            t0 = time.perf_counter()
            for r in range(runs):
                rng = np.random.default_rng(
                    np.random.SeedSequence([seed, round(1000 * eps), int(n), r])
                )
                items = rng.choice(k, size=int(n), p=theta)
                z = oue_perturb(items, k, eps, rng)
                raw = oue_estimate(z, eps)
                post, info = _fit_oue(compiled, z, eps, rng, draws=draws, tune=tune, chains=chains)
                est = {
                    "posterior mean": post.mean(0),
                    "LS projection": project_simplex(raw),
                    "clip & normalise": clip_normalize(raw),
                    "unbiased (raw)": raw,
                }
                if use_mfl:
                    est.update(multi_freq_ldpy_estimates(z, eps))
                for method, e in est.items():
                    triv, unord = unusable(e)
                    rows.append(
                        dict(
                            epsilon=eps,
                            n=int(n),
                            run=r,
                            method=method,
                            **{f"theta{j + 1}": e[j] for j in range(k)},
                            rmse=rmse(e, theta),
                            trivial=bool(triv),
                            unordered=bool(unord),
                            divergences=info["divergences"] if method == "posterior mean" else 0,
                            max_rhat=info["max_rhat"] if method == "posterior mean" else np.nan,
                        )
                    )
            if progress:
                progress(f"ε = {eps:g}, N = {n}: {time.perf_counter() - t0:.1f} s")
    return pd.DataFrame(rows)


def summarise_fig3(
    df: pd.DataFrame,
    *,
    baseline="LS projection",
    ours="posterior mean",
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per (ε, N, method): mean RMSE (and its standard error), fractions trivial / unordered /
    unusable.  Second table, per (ε, N): relative reduction of the mean RMSE
    ``1 - RMSE_ours/RMSE_base`` with a paired bootstrap 95% interval over runs, the same for
    the mean squared error (``mse_reduction``), and the fraction of runs ours wins."""
    g = df.groupby(["epsilon", "n", "method"], sort=False)
    tab = g.agg(
        runs=("rmse", "size"),
        rmse=("rmse", "mean"),
        rmse_se=("rmse", lambda x: x.std(ddof=1) / np.sqrt(len(x))),
        trivial=("trivial", "mean"),
        unordered=("unordered", "mean"),
    ).reset_index()
    tab["unusable"] = tab["trivial"] + tab["unordered"]
    rng = np.random.default_rng(seed)
    rows = []
    for (eps, n), d in df.groupby(["epsilon", "n"], sort=False):
        a = d[d["method"] == ours].sort_values("run")["rmse"].to_numpy()
        b = d[d["method"] == baseline].sort_values("run")["rmse"].to_numpy()
        red = 1 - a.mean() / b.mean()
        idx = rng.integers(0, len(a), size=(n_boot, len(a)))
        boot = 1 - a[idx].mean(1) / b[idx].mean(1)
        lo, hi = np.quantile(boot, [0.025, 0.975])
        mse_red = 1 - np.mean(a**2) / np.mean(b**2)
        rows.append(
            dict(
                epsilon=eps,
                n=n,
                rmse_ours=a.mean(),
                rmse_baseline=b.mean(),
                reduction=red,
                ci_lo=lo,
                ci_hi=hi,
                mse_reduction=mse_red,
                ours_wins=float(np.mean(a < b)),
            )
        )
    return tab, pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# LDP Fig. 2 on Kosarak
# --------------------------------------------------------------------------------------------


def kosarak_records(n_items: int = 10, top: int = 200, seed: int = 0):
    """One item per user from ``n_items`` pages sampled from the ``top`` most visited.

    The pages are drawn uniformly without replacement (``np.random.default_rng(seed)``) from
    the ``top`` most visited pages of :func:`pymc_dpnoise.datasets.load_kosarak`.  Every user
    who visited at least one of them gives one record: the first of the sampled pages in
    their click order.  Returns ``(pages, records)``: the page ids (in sampled order; record
    value ``j`` means ``pages[j]``) and an int64 array of item indices, one per user.
    """
    from ..datasets import kosarak_item_counts, load_kosarak

    counts = kosarak_item_counts()
    rng = np.random.default_rng(seed)
    pages = rng.choice(counts.index[:top].to_numpy(), size=n_items, replace=False)
    where = {int(p): j for j, p in enumerate(pages)}
    records = []
    for t in load_kosarak():
        for page in t:
            if page in where:
                records.append(where[page])
                break
    return pages, np.asarray(records, dtype=np.int64)


def run_fig2(
    compiled,
    records,
    k: int,
    epsilons,
    repeats: int,
    *,
    alpha: float = 1.0,
    seed: int = 2,
    draws: int = 1000,
    tune: int = 500,
    chains: int = 2,
    progress=None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ECDF distance between private and non-private posteriors, per (ε, repeat, item).

    The non-private posterior is ``Dirichlet(alpha + counts)`` (exact; ``chains * draws``
    independent draws per repeat).  The private one is the noise-aware OUE posterior of the
    same records, each reported through OUE at ε (fresh randomness per repeat).  The distance
    is :func:`pymc_dpnoise.diagnostics.ecdf_distance` of the marginal draws of each item.

    Also returns the Monte Carlo floor: the same distance between two independent exact
    non-private samples of the same sizes (what a perfect private posterior would score).
    """
    records = np.asarray(records)
    counts = np.bincount(records, minlength=k)
    n_draws = chains * draws
    rows, floor = [], []
    for eps in epsilons:
        t0 = time.perf_counter()
        for r in range(repeats):
            rng = np.random.default_rng(np.random.SeedSequence([seed, round(1000 * eps), r]))
            z = oue_perturb(records, k, eps, rng)
            post, info = _fit_oue(compiled, z, eps, rng, draws=draws, tune=tune, chains=chains)
            exact = rng.dirichlet(alpha + counts, size=n_draws)
            for j in range(k):
                rows.append(
                    dict(
                        epsilon=eps,
                        repeat=r,
                        item=j,
                        ecdf_distance=ecdf_distance(post[:, j], exact[:, j]),
                        private_mean=post[:, j].mean(),
                        private_sd=post[:, j].std(),
                        nonprivate_mean=exact[:, j].mean(),
                        nonprivate_sd=exact[:, j].std(),
                        divergences=info["divergences"],
                        max_rhat=info["max_rhat"],
                    )
                )
        if progress:
            progress(f"ε = {eps:g}: {time.perf_counter() - t0:.1f} s")
    rng = np.random.default_rng(np.random.SeedSequence([seed, 999]))
    for r in range(repeats):
        a = rng.dirichlet(alpha + counts, size=n_draws)
        b = rng.dirichlet(alpha + counts, size=n_draws)
        for j in range(k):
            floor.append(dict(repeat=r, item=j, ecdf_distance=ecdf_distance(a[:, j], b[:, j])))
    return pd.DataFrame(rows), pd.DataFrame(floor)


# --------------------------------------------------------------------------------------------
# Hierarchical example
# --------------------------------------------------------------------------------------------


def simulate_groups(theta, ns, epsilons, mechanisms, rng):
    """Items and privatised reports for each group.

    ``theta`` ``(G, k)``; ``ns``, ``epsilons``, ``mechanisms`` (``"oue"`` or ``"krr"``) have
    length ``G``.  Returns a list of per-group dicts with ``items``, ``reports`` and
    ``counts`` (OUE: counts over the ``2**k`` patterns; k-RR: counts over the ``k`` items).
    """
    theta = np.asarray(theta, dtype=float)
    k = theta.shape[-1]
    out = []
    for g, (n, eps, mech) in enumerate(zip(ns, epsilons, mechanisms, strict=True)):
        items = rng.choice(k, size=int(n), p=theta[g])
        if mech == "oue":
            z = oue_perturb(items, k, eps, rng)
            c = pattern_counts(z)
        elif mech == "krr":
            z = krr_perturb(items, k, eps, rng)
            c = np.bincount(z, minlength=k).astype(float)
        else:
            raise ValueError(f"unknown mechanism {mech!r}")
        out.append(dict(items=items, reports=z, counts=c, epsilon=eps, mechanism=mech))
    return out


def build_group_model(k, epsilons, mechanisms, *, kappa_prior=(2.0, 0.05)):
    """Groups of reports that share (partial pooling) or do not share a Dirichlet hyper-prior.

    The ``pm.Data`` flag ``pooled`` (default 1) switches between the two models, so one
    compiled model serves both (``compiled.with_data(pooled=0.0, ...)``):

    * pooled = 1: ``beta ~ Dirichlet(1)``, ``kappa ~ Gamma(*kappa_prior)`` (shape, rate),
      ``theta_g ~ Dirichlet(kappa * beta)``;
    * pooled = 0: ``theta_g ~ Dirichlet(1)`` independently; ``beta`` and ``kappa`` are then
      disconnected from the data and simply sample their priors.

    All OUE groups share one ``OUELikelihood`` with a group axis: ``p`` is ``theta[oue]``
    reshaped to ``(G_oue, 1, k)``, the observed reports are the ``2**k`` patterns broadcast to
    ``(G_oue, 2**k, k)``, ``counts`` (``pm.Data`` ``"oue_counts"``, ``(G_oue, 2**k)``) say how
    often each was reported and ``epsilon`` is ``(G_oue, 1)`` — one budget per group.  Each
    k-RR group ``g`` gets a ``KRRLikelihood`` on the ``k`` possible reports with counts
    (``pm.Data`` ``"krr_counts_g"``).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from ..distributions import KRRLikelihood, OUELikelihood

    mechanisms = list(mechanisms)
    G = len(mechanisms)
    oue = [g for g in range(G) if mechanisms[g] == "oue"]
    krr = [g for g in range(G) if mechanisms[g] == "krr"]
    patterns = unary_patterns(k)
    with pm.Model(coords={"group": np.arange(G), "item": np.arange(k)}) as model:
        pooled = pm.Data("pooled", np.float64(1.0))
        beta = pm.Dirichlet("beta", np.ones(k), dims="item")
        kappa = pm.Gamma("kappa", alpha=kappa_prior[0], beta=kappa_prior[1])
        conc = pt.switch(pt.gt(pooled, 0.5), kappa * beta, pt.ones_like(beta))
        theta = pm.Dirichlet("theta", a=pt.broadcast_to(conc, (G, k)), dims=("group", "item"))
        if oue:
            c = pm.Data("oue_counts", np.ones((len(oue), len(patterns))))
            eps = np.asarray([epsilons[g] for g in oue], dtype=float)[:, None]
            obs = np.broadcast_to(patterns, (len(oue), *patterns.shape)).copy()
            OUELikelihood("z_oue", p=theta[oue][:, None, :], epsilon=eps, counts=c, observed=obs)
        for g in krr:
            c = pm.Data(f"krr_counts_{g}", np.ones(k))
            KRRLikelihood(
                f"y_krr_{g}",
                p=theta[g],
                epsilon=float(epsilons[g]),
                counts=c,
                observed=np.arange(k),
            )
    return model


def group_data(sim, mechanisms) -> dict:
    """``with_data`` keyword arguments for :func:`build_group_model` from
    :func:`simulate_groups` output."""
    oue = [s["counts"] for s, m in zip(sim, mechanisms, strict=True) if m == "oue"]
    data = {}
    if oue:
        data["oue_counts"] = np.stack(oue)
    for g, (s, m) in enumerate(zip(sim, mechanisms, strict=True)):
        if m == "krr":
            data[f"krr_counts_{g}"] = s["counts"]
    return data


#: the hierarchical example: k items, one row per group (N, ε, mechanism)
HIER_K = 5
HIER_BETA = (0.40, 0.25, 0.15, 0.12, 0.08)
HIER_KAPPA = 50.0
HIER_GROUPS = (
    dict(n=150, epsilon=0.5, mechanism="oue"),
    dict(n=400, epsilon=1.0, mechanism="oue"),
    dict(n=1500, epsilon=2.0, mechanism="oue"),
    dict(n=1000, epsilon=1.0, mechanism="krr"),
)


def run_hierarchical(
    compiled,
    replicates: int,
    *,
    groups=HIER_GROUPS,
    beta=HIER_BETA,
    kappa=HIER_KAPPA,
    seed: int = 5,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    interval: float = 0.9,
    progress=None,
) -> pd.DataFrame:
    """Partial pooling against independent fits, on data simulated with known truth.

    Replicate ``r``: ``theta_g ~ Dirichlet(kappa * beta)`` for every group, then each group's
    items and reports (:func:`simulate_groups`); the model compiled from
    :func:`build_group_model` is fitted with ``pooled=1`` and with ``pooled=0``.  One row per
    (replicate, model, group, item): truth, posterior mean, central ``interval`` bounds.
    """
    beta = np.asarray(beta, dtype=float)
    k = beta.size
    mechs = [g["mechanism"] for g in groups]
    lo_q, hi_q = (1 - interval) / 2, (1 + interval) / 2
    rows = []
    for r in range(replicates):
        t0 = time.perf_counter()
        rng = np.random.default_rng(np.random.SeedSequence([seed, r]))
        theta = rng.dirichlet(kappa * beta, size=len(groups))
        sim = simulate_groups(
            theta, [g["n"] for g in groups], [g["epsilon"] for g in groups], mechs, rng
        )
        data = group_data(sim, mechs)
        for label, flag in (("partial pooling", 1.0), ("independent", 0.0)):
            post, info = sample_compiled(
                compiled,
                draws=draws,
                tune=tune,
                chains=chains,
                seed=rng.integers(2**31 - 1),
                pooled=np.float64(flag),
                **data,
            )  # (S, G, k)
            mean = post.mean(0)
            lo, hi = np.quantile(post, [lo_q, hi_q], axis=0)
            for g, spec in enumerate(groups):
                for j in range(k):
                    rows.append(
                        dict(
                            replicate=r,
                            model=label,
                            group=g,
                            item=j,
                            n=spec["n"],
                            epsilon=spec["epsilon"],
                            mechanism=spec["mechanism"],
                            truth=theta[g, j],
                            mean=mean[g, j],
                            lo=lo[g, j],
                            hi=hi[g, j],
                            divergences=info["divergences"],
                            max_rhat=info["max_rhat"],
                            seconds=info["seconds"],
                        )
                    )
        if progress:
            progress(f"replicate {r}: {time.perf_counter() - t0:.1f} s")
    return pd.DataFrame(rows)


#: experiment settings per mode (the notebook and the cached full-mode CSVs use these)
SETTINGS = {
    "full": dict(
        fig3=dict(
            ns=(100, 200, 500, 1000, 2000, 5000, 10000),
            epsilons=(0.5,),
            runs=50,
            draws=500,
            tune=400,
        ),
        fig9=dict(
            ns=(100, 200, 500, 1000, 2000, 5000, 10000),
            epsilons=(0.1, 1.0, 2.0),
            runs=50,
            draws=500,
            tune=400,
        ),
        fig2=dict(epsilons=(0.1, 0.5, 1.0, 2.0, 4.0), repeats=50, draws=500, tune=400),
        hier=dict(replicates=20, draws=1000, tune=1000),
    ),
    "fast": dict(
        fig3=dict(ns=(100, 1000, 10000), epsilons=(0.5,), runs=6, draws=300, tune=300),
        fig9=dict(ns=(100, 1000), epsilons=(2.0,), runs=3, draws=300, tune=300),
        fig2=dict(epsilons=(0.5, 4.0), repeats=2, draws=300, tune=300),
        hier=dict(replicates=1, draws=500, tune=500),
    ),
}
