"""Calibration and closeness diagnostics for private posteriors.

* :func:`simulation_based_calibration` — draw parameters from the prior, simulate clean data
  *and the privacy mechanism*, fit, and record the posterior quantile of the truth (Cook et
  al. 2006; Talts et al. 2018), over many replicates in parallel processes.
* :func:`coverage_table` — coverage of central 50/70/90/95% intervals with exact binomial
  bands (LDP paper Figs. 1, 10, 11).
* :func:`ks_uniform` — KS statistic of the quantiles against Uniform(0, 1) (Bernstein &
  Sheldon Fig. 1).
* :func:`mmd`, :func:`ecdf_distance` and :func:`ks_distance` — closeness of two posteriors
  (Bernstein & Sheldon; LDP Fig. 2; GLM paper Fig. 5).
* :func:`rmse` and :func:`auc` — accuracy of point estimates and of predictions (LDP Figs. 3-5).
* :func:`sample_compiled` — sample a compiled nutpie model with new data (the one fitting
  helper every experiment uses).
* :class:`SBCProblem` — what an SBC replicate simulates and fits; each experiment defines its
  own problems next to it (:mod:`pymc_dpnoise.experiments`).
* :func:`plot_coverage` — coverage against ε, like LDP Fig. 1.
* :func:`compare` and :func:`observed_data_differences` — ``az.compare`` only after checking
  that the fits score the same observed data (a naive model of rounded or projected counts
  does not).
* :func:`check_map` — warn when a parameter of a privacy likelihood has its MAP estimate at a
  boundary of its support (``pm.find_MAP``, ``pymc_extras.find_MAP`` / ``fit_laplace``).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import pandas as pd
from scipy import stats

__all__ = [
    "DEFAULT_LEVELS",
    "BoundaryMAPWarning",
    "SBCProblem",
    "SBCResult",
    "auc",
    "binomial_band",
    "check_map",
    "compare",
    "coverage_table",
    "ecdf_distance",
    "ks_distance",
    "ks_uniform",
    "mmd",
    "observed_data_differences",
    "plot_coverage",
    "posterior_quantile",
    "rmse",
    "sample_compiled",
    "simulation_based_calibration",
    "split_rhat",
]

DEFAULT_LEVELS = (0.5, 0.7, 0.9, 0.95)


# --------------------------------------------------------------------------------------------
# Small statistics
# --------------------------------------------------------------------------------------------


def posterior_quantile(draws, truth) -> float:
    """Fraction of posterior draws below the true value (the SBC rank, normalised to [0, 1]).

    Ties (possible only for discrete parameters) are split at random-free midpoint.
    """
    d = np.asarray(draws, dtype=float).ravel()
    if d.size == 0:
        raise ValueError("`draws` is empty")
    return float((np.sum(d < truth) + 0.5 * np.sum(d == truth)) / d.size)


def binomial_band(level: float, n: int, mass: float = 0.95) -> tuple[float, float]:
    """Central ``mass`` interval of the coverage fraction when the true coverage is ``level``.

    Exact binomial quantiles divided by ``n``.
    """
    if n <= 0:
        raise ValueError("`n` must be a positive number of replicates")
    lo = stats.binom.ppf((1 - mass) / 2, n, level) / n
    hi = stats.binom.ppf(1 - (1 - mass) / 2, n, level) / n
    return float(lo), float(hi)


def coverage_table(
    quantiles, levels: Sequence[float] = DEFAULT_LEVELS, band_mass: float = 0.99
) -> pd.DataFrame:
    """Coverage of central intervals from posterior quantiles of the truth.

    Parameters
    ----------
    quantiles : array_like, shape (R,) or (R, P)
        Posterior quantile of the true value in each of R replicates (for P parameters).
    levels : sequence of float
        Nominal central interval masses.
    band_mass : float
        Mass of the binomial band reported around each nominal level.

    Returns
    -------
    pandas.DataFrame
        One row per (parameter, level): ``coverage``, ``band_lo``, ``band_hi``, ``inside``.
    """
    q = np.asarray(quantiles, dtype=float)
    if q.ndim == 1:
        q = q[:, None]
    r = q.shape[0]
    rows = []
    for p in range(q.shape[1]):
        qp = q[:, p]
        qp = qp[np.isfinite(qp)]
        for lev in levels:
            cov = float(np.mean(np.abs(qp - 0.5) <= lev / 2))
            lo, hi = binomial_band(lev, len(qp), band_mass)
            rows.append(
                dict(
                    param=p,
                    level=lev,
                    coverage=cov,
                    band_lo=lo,
                    band_hi=hi,
                    inside=bool(lo <= cov <= hi),
                    n=len(qp),
                )
            )
    del r
    return pd.DataFrame(rows)


def ks_uniform(quantiles) -> tuple[float, float]:
    """KS statistic and p-value of posterior quantiles against Uniform(0, 1)."""
    q = np.asarray(quantiles, dtype=float).ravel()
    res = stats.kstest(q[np.isfinite(q)], "uniform")
    return float(res.statistic), float(res.pvalue)


def _as_2d(x):
    x = np.asarray(x, dtype=float)
    return x[:, None] if x.ndim == 1 else x.reshape(x.shape[0], -1)


def mmd(x, y, bandwidth: float | None = None) -> float:
    """Unbiased squared maximum mean discrepancy with a Gaussian kernel (Gretton et al. 2012).

    Used by Bernstein & Sheldon (2018) to compare a private posterior with the non-private one.

    Parameters
    ----------
    x, y : array_like, shape (n,) or (n, d)
        Samples from the two distributions.
    bandwidth : float, optional
        Kernel width; by default the median pairwise distance of the pooled sample.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mmd(rng.normal(size=500), rng.normal(size=500)) < 0.01
    True
    """
    x, y = _as_2d(x), _as_2d(y)
    if x.shape[1] != y.shape[1]:
        raise ValueError("`x` and `y` must have the same number of dimensions")
    if len(x) < 2 or len(y) < 2:
        raise ValueError("`x` and `y` need at least two samples each")
    z = np.vstack([x, y])
    d2 = np.sum((z[:, None, :] - z[None, :, :]) ** 2, axis=-1)
    if bandwidth is None:
        med = np.median(d2[np.triu_indices(len(z), 1)])
        bandwidth = float(np.sqrt(0.5 * med)) if med > 0 else 1.0
    k = np.exp(-d2 / (2 * bandwidth**2))
    n, m = len(x), len(y)
    kxx = k[:n, :n]
    kyy = k[n:, n:]
    kxy = k[:n, n:]
    return float(
        (kxx.sum() - np.trace(kxx)) / (n * (n - 1))
        + (kyy.sum() - np.trace(kyy)) / (m * (m - 1))
        - 2 * kxy.mean()
    )


def ecdf_distance(x, y) -> float:
    """Mean absolute difference of two empirical CDFs over the pooled sample points (LDP Fig. 2).

    Examples
    --------
    >>> ecdf_distance([0.0, 1.0], [0.0, 1.0])
    0.0
    """
    x = np.sort(np.asarray(x, dtype=float).ravel())
    y = np.sort(np.asarray(y, dtype=float).ravel())
    if x.size == 0 or y.size == 0:
        raise ValueError("`x` and `y` must be non-empty")
    grid = np.concatenate([x, y])
    fx = np.searchsorted(x, grid, side="right") / x.size
    fy = np.searchsorted(y, grid, side="right") / y.size
    return float(np.mean(np.abs(fx - fy)))


def ks_distance(x, y) -> float:
    """Two-sample Kolmogorov-Smirnov distance: the largest gap between the two ECDFs.

    Examples
    --------
    >>> ks_distance([0.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    0.0
    >>> ks_distance([0.0, 1.0], [2.0, 3.0])
    1.0
    """
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.size == 0 or y.size == 0:
        raise ValueError("`x` and `y` must be non-empty")
    return float(stats.ks_2samp(x, y).statistic)


def rmse(estimate, truth, axis=None):
    """Root mean squared error ``sqrt(mean((estimate - truth)²))``.

    Over all elements (``axis=None``, a float) or along ``axis`` (an array), e.g. ``axis=-1``
    for one RMSE per histogram estimate.

    Examples
    --------
    >>> rmse([1.0, 2.0], [1.0, 4.0])
    1.4142135623730951
    >>> rmse([[0.0, 0.0], [1.0, 1.0]], [0.0, 0.0], axis=-1).tolist()
    [0.0, 1.0]
    """
    e = np.asarray(estimate, dtype=float) - np.asarray(truth, dtype=float)
    out = np.sqrt(np.mean(e**2, axis=axis))
    return float(out) if np.ndim(out) == 0 else out


def auc(scores, labels) -> float:
    """Area under the ROC curve by the rank-sum (Mann-Whitney) formula; ties get mid-ranks.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Higher means "more likely positive".
    labels : array_like, shape (n,)
        Positive where ``labels > 0``: 0/1, boolean or ±1 labels.  Both classes must occur.

    Returns
    -------
    float
        P(score of a random positive > score of a random negative) + ½ P(tie).

    Examples
    --------
    >>> auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    0.75
    >>> auc([0.1, 0.4, 0.35, 0.8], [-1, -1, 1, 1])
    0.75
    >>> auc([1.0, 1.0, 1.0], [0, 1, 1])
    0.5
    """
    s = np.asarray(scores, dtype=float).ravel()
    pos = np.asarray(labels).ravel() > 0
    if s.shape != pos.shape:
        raise ValueError(f"`scores` and `labels` differ in length: {s.size} vs {pos.size}")
    n1 = int(pos.sum())
    n0 = pos.size - n1
    if n1 == 0 or n0 == 0:
        raise ValueError("`labels` must contain both classes")
    ranks = stats.rankdata(s)
    return float((ranks[pos].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def split_rhat(draws) -> float:
    """Split-R̂ (Gelman et al., BDA3) of a ``(chains, draws)`` array."""
    d = np.asarray(draws, dtype=float)
    if d.ndim != 2 or d.shape[1] < 4:
        raise ValueError("`draws` must have shape (chains, draws) with at least 4 draws")
    half = d.shape[1] // 2
    s = np.concatenate([d[:, :half], d[:, half : 2 * half]], axis=0)
    n = s.shape[1]
    w = s.var(axis=1, ddof=1).mean()
    b = n * s.mean(axis=1).var(ddof=1)
    var = (n - 1) / n * w + b / n
    return float(np.sqrt(var / w)) if w > 0 else float("nan")


def sample_compiled(
    compiled,
    *,
    draws,
    tune,
    chains=2,
    cores=1,
    seed=0,
    var="theta",
    target_accept=None,
    drop_stuck_chains=None,
    **data,
):
    """Sample a compiled nutpie model with new data; returns ``(draws of var, info)``.

    Needs nutpie, which the ``samplers`` extra installs (``pip install "pymc-dpnoise[samplers]"``).

    ``draws of var`` has shape ``(kept chains * draws, *var.shape)``; ``info`` holds the number
    of divergences, the worst split-R̂ over the components of ``var`` (kept chains), the wall
    time and ``chains_dropped``.  ``data`` are the model's ``pm.Data`` values
    (``compiled.with_data(**data)``).

    ``drop_stuck_chains`` (nats, e.g. 10): drop every chain whose mean log density is more than
    this below the best chain's.  Such a chain sits in a local mode whose density is e^-10
    (or less) of the main one's, so it carries no posterior mass worth its weight; this is
    the limit of chain stacking (Yao, Vehtari & Gelman 2022) when the modes do not mix.  The
    typical chain-to-chain spread of that mean is a fraction of a nat.  Off by default.
    """
    import time

    from .optional import require

    nutpie = require("nutpie", extra="samplers", feature="sample_compiled")
    t0 = time.perf_counter()
    kw = {} if target_accept is None else dict(target_accept=target_accept)
    trace = nutpie.sample(
        compiled.with_data(**data),
        draws=draws,
        tune=tune,
        chains=chains,
        cores=cores,
        seed=int(seed),
        progress_bar=False,
        **kw,
    )
    post = np.asarray(trace.posterior[var].values, dtype=float)  # (chains, draws, ...)
    keep = np.ones(post.shape[0], dtype=bool)
    if drop_stuck_chains is not None:
        mean_lp = np.asarray(trace.sample_stats["logp"].values, dtype=float).mean(axis=1)
        keep = mean_lp >= mean_lp.max() - float(drop_stuck_chains)
        post = post[keep]
    flat = post.reshape(*post.shape[:2], -1)
    info = dict(
        divergences=int(np.asarray(trace.sample_stats["diverging"].values).sum()),
        max_rhat=float(max(split_rhat(flat[..., j]) for j in range(flat.shape[-1]))),
        seconds=time.perf_counter() - t0,
        chains_dropped=int((~keep).sum()),
    )
    return post.reshape(-1, *post.shape[2:]), info


# --------------------------------------------------------------------------------------------
# MAP estimates at a boundary
# --------------------------------------------------------------------------------------------


class BoundaryMAPWarning(UserWarning):
    """A parameter of a privacy likelihood has its MAP estimate at a boundary of its support."""


def _unconstrained_point(model, map_point):
    """``{value variable name: array}`` from a ``pm.find_MAP`` dict or a pymc-extras result."""
    shapes = {k: np.shape(v) for k, v in model.initial_point().items()}
    if hasattr(map_point, "children") and "fit" in map_point.children:  # a DataTree
        fit = map_point["fit"]
        rows = [str(r).split("[")[0] for r in fit["rows"].values]
        mean = np.asarray(fit["mean_vector"].values, dtype=float)
        flat: dict = {}
        for name, value in zip(rows, mean, strict=True):
            flat.setdefault(name, []).append(value)
    else:
        flat = dict(map_point)
    missing = sorted(set(shapes) - set(flat))
    if missing:
        raise ValueError(
            f"map_point: no value for {missing}; pass the dict of pm.find_MAP (with its "
            "transformed values, the default) or the result of pymc_extras.find_MAP / fit_laplace"
        )
    return {k: np.asarray(flat[k], dtype=float).reshape(shape) for k, shape in shapes.items()}


def _param_names(node):
    import inspect

    try:
        names = [
            n
            for n, p in inspect.signature(type(node.op).rv_op).parameters.items()
            if n not in ("size", "rng") and p.kind is p.POSITIONAL_OR_KEYWORD
        ]
    except (TypeError, ValueError):  # pragma: no cover - no introspectable rv_op
        names = []
    params = node.op.dist_params(node)
    return [names[i] if i < len(names) else f"parameter {i}" for i in range(len(params))]


def _privacy_parameters(model):
    """``{free RV: [(parameter name, distribution name, variable name), ...]}`` for every free
    variable a parameter of one of this package's distributions depends on."""
    from pytensor.graph.traversal import ancestors

    free = set(model.free_RVs)
    feeds: dict = {}
    for rv in model.basic_RVs:
        node = rv.owner
        if node is None or not type(node.op).__module__.startswith("pymc_dpnoise."):
            continue
        dist = node.op._print_name[0] if hasattr(node.op, "_print_name") else type(node.op)
        for pname, param in zip(_param_names(node), node.op.dist_params(node), strict=True):
            for anc in ancestors([param]):
                if anc in free:
                    feeds.setdefault(anc, []).append((pname, dist, rv.name))
    return feeds


def check_map(
    model, map_point, *, step: float = 4.0, tol: float = 0.05, warn: bool = True
) -> list[dict]:
    r"""Warn where a MAP estimate sits at a boundary of a privacy likelihood's parameter.

    When the reports vary less than the privacy noise alone would make them, the likelihood
    of a clipped-normal (or other noise-aware) model is largest where the population's spread
    vanishes: the noise explains everything.  ``pm.find_MAP`` then returns a scale parameter
    at its boundary (:math:`\sigma \to 0`; the optimiser stops wherever the log density has
    become flat, e.g. :math:`\sigma = 10^{-3}`), and a Laplace approximation around it
    (``pymc_extras.fit_laplace``) describes a degenerate posterior.  The posterior itself is
    proper, with its mass away from the boundary, and NUTS (``pm.sample``) finds it.

    The check: for every free variable that a parameter of one of this package's
    distributions depends on and that has a transform (a bounded support), each element is
    moved by ``±step`` on PyMC's unconstrained scale (a factor :math:`e^{4} \approx 55` for a
    log-transformed scale) and the log density that ``find_MAP`` maximises (without the
    Jacobian) is evaluated.  At an interior mode it drops in both directions; if it drops by
    less than ``tol`` nats in one of them, the data say nothing beyond that side: the MAP is
    at the boundary (or on a flat ridge, where a Laplace approximation is just as wrong).
    Cost: one compiled log density and two evaluations per element.

    Parameters
    ----------
    model : pymc.Model
        The model the MAP was computed for.
    map_point : dict or xarray.DataTree
        The result of ``pm.find_MAP`` (a dict holding the transformed values, PyMC's default,
        or its DataTree with ``return_inferencedata=True``), or of ``pymc_extras.find_MAP`` /
        ``pymc_extras.fit_laplace`` (their ``fit`` group).
    step : float, default 4.0
        Move on the unconstrained scale.
    tol : float, default 0.05
        Largest drop of the log density (nats) that counts as flat.
    warn : bool, default True
        Emit a :class:`BoundaryMAPWarning` per flagged variable (else only return them).

    Returns
    -------
    list of dict
        One per flagged variable: ``variable``, ``value_variable``, ``index`` (the first
        flagged element), ``direction`` (-1 or +1 on the unconstrained scale), ``drop`` (nats)
        and ``feeds`` (the ``(parameter, distribution, variable)`` it enters).

    Examples
    --------
    >>> import numpy as np, pymc as pm, warnings
    >>> import pymc_dpnoise as pmd
    >>> from pymc_dpnoise.diagnostics import check_map
    >>> z = np.random.default_rng(1).normal(0.0, 1.0, 100)  # sd 1; the noise alone has sd 8.5
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 5.0)
    ...     sigma = pm.HalfNormal("sigma", 3.0)
    ...     y = pmd.LaplacePerturbedClippedNormal(
    ...         "y", mu=mu, sigma=sigma, lower=-3.0, upper=3.0, epsilon=1.0, observed=z
    ...     )
    >>> point = pm.find_MAP(
    ...     model=model, progressbar=False, return_inferencedata=True, jitter=False
    ... )
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     [(f["variable"], f["direction"]) for f in check_map(model, point)]
    [('sigma', -1)]
    """
    point = _unconstrained_point(model, map_point)
    feeds_of = {
        rv: feeds
        for rv, feeds in _privacy_parameters(model).items()
        if model.rvs_to_transforms.get(rv) is not None
    }
    if not feeds_of:
        return []
    logp = model.compile_logp(jacobian=False)
    base = float(logp(point))
    found = []
    for rv, feeds in feeds_of.items():
        name = model.rvs_to_values[rv].name
        hit = _flat_side(logp, point, name, base, step, tol)
        if hit is None:
            continue
        index, direction, drop = hit
        found.append(
            dict(
                variable=rv.name, value_variable=name, index=index, direction=direction,
                drop=drop, feeds=feeds,
            )
        )  # fmt: skip
        if warn:
            uses = "; ".join(f"the {p} of {d} {v!r}" for p, d, v in feeds)
            where = f"{rv.name}{list(index) if index else ''}"
            warnings.warn(
                f"{where}: the MAP is at a boundary of its support: moving {name} by "
                f"{direction * step:+g} lowers the log density by only {drop:.2g} nats. "
                f"{rv.name} is {uses}. This happens when the privacy noise alone explains the "
                "reports' spread; the MAP and a Laplace approximation around it "
                "(pymc_extras.fit_laplace) then do not describe the posterior, whose mass is "
                "away from the boundary. Sample it with pm.sample (NUTS) instead.",
                BoundaryMAPWarning,
                stacklevel=2,
            )
    return found


def _flat_side(logp, point, name, base, step, tol):
    """``(index, direction, drop)`` of the first element of ``point[name]`` whose move by
    ``direction * step`` lowers ``logp`` by less than ``tol``; None if there is none."""
    u = point[name]
    for index in np.ndindex(u.shape):
        for direction in (-1, 1):
            moved = u.copy()
            moved[index] += direction * step
            drop = base - float(logp({**point, name: moved}))
            if drop < tol:
                return index, direction, drop
    return None


# --------------------------------------------------------------------------------------------
# SBC problems
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SBCProblem:
    """What one SBC replicate simulates and fits.  Subclasses implement the three methods.

    A problem must be picklable (it is sent to worker processes).  ``build_model`` must put
    the reports in a ``pm.Data`` container named ``"reports"`` so that a compiled model can be
    re-used with new data.
    """

    n: int

    @property
    def param_names(self) -> tuple[str, ...]:
        raise NotImplementedError

    def simulate(self, rng: np.random.Generator) -> tuple[dict, np.ndarray]:
        """Draw the true parameters from the prior, then clean data, then the mechanism."""
        raise NotImplementedError

    def build_model(self, reports, noise_aware: bool = True):
        """The PyMC model fitted to the reports (noise-aware, or the naive baseline)."""
        raise NotImplementedError

    def model_data(self, reports, noise_aware: bool = True):
        """The value of the ``"reports"`` data container for these reports (default: as is).

        A naive baseline that works on a summary of the reports (e.g. de-biased counts)
        overrides this, so that a compiled model can be re-used with new data.
        """
        return reports

    def extract(self, posterior, truth: dict) -> list[tuple[np.ndarray, float]]:
        """(posterior draws, true value) for each entry of :attr:`param_names`.

        The default reads one scalar variable per name; problems with vector parameters
        (e.g. a simplex) override it to return one entry per component.
        """
        return [(np.asarray(posterior[n].values, dtype=float), truth[n]) for n in self.param_names]


# --------------------------------------------------------------------------------------------
# SBC driver
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class SBCResult:
    """Posterior quantiles of the truth, one row per replicate, one column per parameter."""

    problem: SBCProblem
    noise_aware: bool
    param_names: tuple[str, ...]
    quantiles: np.ndarray
    truths: np.ndarray
    max_rhat: np.ndarray
    divergences: np.ndarray

    def coverage(self, levels=DEFAULT_LEVELS, band_mass=0.99) -> pd.DataFrame:
        tab = coverage_table(self.quantiles, levels, band_mass)
        tab["param"] = [self.param_names[i] for i in tab["param"]]
        return tab

    def ks(self) -> pd.DataFrame:
        rows = []
        for j, name in enumerate(self.param_names):
            stat, p = ks_uniform(self.quantiles[:, j])
            rows.append(dict(param=name, ks=stat, p_value=p))
        return pd.DataFrame(rows)


def fit_nutpie(compiled, reports, draws, tune, chains, seed):
    """Sample a compiled nutpie model with ``reports`` as its data; returns nutpie's trace.

    The simulation loops' sampler (one core, no progress bar); not in ``__all__``:
    :func:`sample_compiled` is the user-facing form.
    """
    import nutpie

    c = compiled.with_data(reports=reports)
    return nutpie.sample(
        c, draws=draws, tune=tune, chains=chains, cores=1, seed=seed, progress_bar=False
    )


def fit_pymc(model, draws, tune, chains, seed, sampler="pymc"):
    """``pm.sample`` as the checks run it: one core, no progress bar, no convergence checks
    (the callers compute their own R-hat)."""
    import pymc as pm

    return pm.sample(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=1,
        random_seed=seed,
        progressbar=False,
        model=model,
        nuts_sampler=sampler,
        compute_convergence_checks=False,
    )


def _sbc_worker(problem, noise_aware, seeds, draws, tune, chains, sampler):
    import warnings

    warnings.filterwarnings("ignore")
    out = []
    compiled = None
    for entropy in seeds:
        rng = np.random.default_rng(entropy)
        truth, reports = problem.simulate(rng)
        seed = int(rng.integers(2**31 - 1))
        if sampler == "nutpie":
            if compiled is None:
                import nutpie

                compiled = nutpie.compile_pymc_model(problem.build_model(reports, noise_aware))
            trace = fit_nutpie(
                compiled, problem.model_data(reports, noise_aware), draws, tune, chains, seed
            )
        else:
            model = problem.build_model(reports, noise_aware)
            trace = fit_pymc(model, draws, tune, chains, seed, sampler)
        row_q, row_t, rhats = [], [], []
        for post, true in problem.extract(trace.posterior, truth):
            row_q.append(posterior_quantile(post, true))
            row_t.append(true)
            rhats.append(split_rhat(post))
        try:
            div = int(np.asarray(trace.sample_stats["diverging"].values).sum())
        except (KeyError, AttributeError):
            div = -1
        out.append((row_q, row_t, max(rhats), div))
    return out


def simulation_based_calibration(
    problem: SBCProblem,
    n_replicates: int,
    *,
    noise_aware: bool = True,
    seed: int = 0,
    n_jobs: int | None = None,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    sampler: str = "nutpie",
) -> SBCResult:
    """Simulation-based calibration of a noise-aware (or naive) model.

    For each replicate: draw parameters from the prior, simulate clean data, run the privacy
    mechanism on it, fit the model with NUTS, and record the posterior quantile of each true
    parameter.  If the model is calibrated the quantiles are Uniform(0, 1), so central
    intervals cover the truth at their nominal rate.

    Parameters
    ----------
    problem : SBCProblem
        What to simulate and fit, e.g.
        :class:`pymc_dpnoise.experiments.ldp_calibration.ClippedNormalSBC`.
    n_replicates : int
        Number of replicates R (coverage standard error ``sqrt(q(1-q)/R)``).
    noise_aware : bool
        Fit the noise-aware model (True) or the naive baseline that ignores the noise.
    seed : int
        Results depend only on ``seed``, not on ``n_jobs``.
    n_jobs : int, optional
        Worker processes; default ``min(2, os.cpu_count())``.  Each compiles the model once.
    draws, tune, chains : int
        NUTS settings per replicate.
    sampler : {"nutpie", "pymc", "numpyro"}
        NUTS implementation.  nutpie compiles once per worker and swaps the data.  nutpie and
        numpyro come with the ``samplers`` extra (``pip install "pymc-dpnoise[samplers]"``);
        without it, pass ``sampler="pymc"``.

    Returns
    -------
    SBCResult
    """
    if n_replicates < 1:
        raise ValueError("`n_replicates` must be >= 1")
    if sampler not in ("nutpie", "pymc", "numpyro"):
        raise ValueError("`sampler` must be one of 'nutpie', 'pymc', 'numpyro'")
    from .optional import require

    feature = f"simulation_based_calibration(sampler={sampler!r})"
    if sampler == "nutpie":  # checked here, not in the worker processes
        require("nutpie", extra="samplers", feature=feature, load=False)
    elif sampler == "numpyro":
        require("numpyro", extra="samplers", feature=feature, load=False)
        require("jax", extra="samplers", feature=feature, load=False)
    n_jobs = n_jobs or min(2, os.cpu_count() or 1)
    seeds = np.random.SeedSequence(seed).spawn(n_replicates)
    chunks = [seeds[i::n_jobs] for i in range(n_jobs)]
    order = [np.arange(n_replicates)[i::n_jobs] for i in range(n_jobs)]
    args = (noise_aware, draws, tune, chains, sampler)
    if n_jobs == 1:
        results = [_sbc_worker(problem, args[0], chunks[0], *args[1:])]
    else:
        with ProcessPoolExecutor(n_jobs, mp_context=get_context("spawn")) as ex:
            futs = [ex.submit(_sbc_worker, problem, args[0], ch, *args[1:]) for ch in chunks if ch]
            results = [f.result() for f in futs]
    p = len(problem.param_names)
    q = np.full((n_replicates, p), np.nan)
    t = np.full((n_replicates, p), np.nan)
    rh = np.full(n_replicates, np.nan)
    dv = np.zeros(n_replicates, dtype=int)
    for idx, res in zip(order, results, strict=False):
        for i, (rq, rt, r, d) in zip(idx, res, strict=True):
            q[i], t[i], rh[i], dv[i] = rq, rt, r, d
    return SBCResult(problem, noise_aware, tuple(problem.param_names), q, t, rh, dv)


# --------------------------------------------------------------------------------------------
# Plot
# --------------------------------------------------------------------------------------------


def plot_coverage(table: pd.DataFrame, *, x="epsilon", ax=None, title=None, band=True):
    """Coverage against ``x`` (default ε) for each nominal level, like LDP Fig. 1.

    ``table`` has columns ``x``, ``level``, ``coverage``, ``band_lo``, ``band_hi`` (e.g. the
    concatenation of :meth:`SBCResult.coverage` tables with an ``epsilon`` column) and
    optionally ``model`` and ``param``; one panel per (model, param) pair.
    """
    import matplotlib.pyplot as plt

    keys = [k for k in ("model", "param") if k in table.columns]
    groups = list(table.groupby(keys)) if keys else [((), table)]
    if ax is None:
        fig, axes = plt.subplots(
            1, len(groups), figsize=(4.2 * len(groups), 3.6), sharey=True, squeeze=False
        )
        axes = axes[0]
    else:
        axes = np.atleast_1d(ax)
        fig = axes[0].figure
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for a, (key, g) in zip(axes, groups, strict=False):
        for i, (lev, gl) in enumerate(g.groupby("level")):
            gl = gl.sort_values(x)
            c = colors[i % len(colors)]
            a.plot(gl[x], gl["coverage"], "o-", color=c, label=f"{round(lev * 100)}%")
            a.axhline(lev, color=c, ls="--", lw=0.8)
            if band and "band_lo" in gl:
                a.fill_between(gl[x], gl["band_lo"], gl["band_hi"], color=c, alpha=0.15, lw=0)
        a.set_xscale("log")
        a.set_xlabel("ε" if x == "epsilon" else x)
        a.set_ylim(0, 1.02)
        a.set_title(" / ".join(map(str, key if isinstance(key, tuple) else (key,))))
    axes[0].set_ylabel("coverage of central interval")
    axes[-1].legend(title="nominal", loc="lower right", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------
# Model comparison on the same data
# --------------------------------------------------------------------------------------------


def _observed_arrays(fit):
    """``{name: array}`` of the ``observed_data`` group of a fit (DataTree or InferenceData)."""
    try:
        group = fit["observed_data"]
    except (KeyError, TypeError):
        group = getattr(fit, "observed_data", None)
    if group is None:
        return None
    ds = group.to_dataset() if hasattr(group, "to_dataset") else group
    return {name: np.asarray(v.values) for name, v in ds.data_vars.items()}


def observed_data_differences(fits):
    """Why the fits in ``fits`` do not score the same observed data (empty when they do).

    ``az.compare`` (and LOO, WAIC) ranks models by the expected log predictive density of the
    *same* observations: the fits must have the same observed variables with the same values.
    A naive model of rounded counts, or of a frequency oracle's projected counts, scores other
    data than the noise-aware model (:func:`pymc_dpnoise.baselines.naive_model` records it).

    Parameters
    ----------
    fits : dict
        Model name -> fit (``pm.sample``'s result, with its ``observed_data`` group).

    Returns
    -------
    list of str
        One sentence per difference (a fit without observed data, a variable only in some
        fits, other shapes or other values).
    """
    if not isinstance(fits, dict) or len(fits) < 2:
        raise ValueError("`fits` must be a dict of at least two named fits")
    arrays = {name: _observed_arrays(fit) for name, fit in fits.items()}
    out = [f"{name!r} has no observed_data group" for name, a in arrays.items() if a is None]
    arrays = {name: a for name, a in arrays.items() if a is not None}
    if len(arrays) < 2:
        return out
    (first, ref), *rest = arrays.items()
    for name, a in rest:
        for var in sorted(set(ref) ^ set(a)):
            out.append(f"observed variable {var!r} is in only one of {first!r} and {name!r}")
        for var in sorted(set(ref) & set(a)):
            x, y = ref[var], a[var]
            if x.shape != y.shape:
                out.append(f"{var!r}: shape {x.shape} in {first!r}, {y.shape} in {name!r}")
            elif not np.array_equal(x, y):
                out.append(f"{var!r}: other values in {first!r} and {name!r}")
    return out


def compare(fits, *, strict=False, **kwargs):
    """``arviz.compare`` after checking that the fits score the same observed data.

    Parameters
    ----------
    fits : dict
        Model name -> fit with a ``log_likelihood`` group (``pm.compute_log_likelihood`` or
        ``idata_kwargs={"log_likelihood": True}``) and an ``observed_data`` group.
    strict : bool
        Raise ``ValueError`` instead of warning when the observed data differ.
    **kwargs
        Passed to ``arviz.compare``.

    Returns
    -------
    pandas.DataFrame
        ``arviz.compare``'s table.

    Warns
    -----
    pymc_dpnoise.baselines.naive.DifferentDataWarning
        When the observed data differ: the ELPDs are of different data, so their ranking
        means nothing (see :mod:`pymc_dpnoise.baselines.naive`).
    """
    import warnings

    import arviz as az

    from .baselines.naive import DifferentDataWarning

    why = observed_data_differences(fits)
    if why:
        msg = (
            "the fits do not score the same observed data, so az.compare's ranking is not "
            "meaningful: " + "; ".join(why)
        )
        if strict:
            raise ValueError(msg)
        warnings.warn(msg, DifferentDataWarning, stacklevel=2)
    return az.compare(fits, **kwargs)
