r"""Bernstein & Sheldon (2018), Fig. 1, and a hierarchical small-area example.

Behind ``notebooks/expfam.ipynb``.  A data holder releases the sum of an exponential family's
sufficient statistics with Laplace noise; the analyst fits

* **noise-aware**: NUTS on the package's likelihood (exact marginal for the binomial and
  Poisson counts; normal approximation with a latent vector for the multinomial; random-sum CLT
  convolved with the Laplace noise for the truncated families);
* **Gibbs**: the paper's own sampler (CLT for the latent sum, Laplace noise as a scale mixture
  of normals), re-implemented in :mod:`pymc_dpnoise.baselines.expfam` (Algorithm 1 for the
  binomial and Poisson, Algorithm 2 for the truncated exponential);
* **naive**: the conjugate update with the noisy sum clamped to its range, as if it were clean
  (for the truncated families the paper's "cheating" version: the noisy *untruncated* sum);
* **OPS** (binomial only): 100 one-posterior samples at ε/100 each, θ restricted to [0.1, 0.9];
* **non-private**: the conjugate update with the clean sum (the reference).

Families (the table :data:`FAMILIES`; more families plug in with a :class:`Family` entry):

=====================  ==================================  ===============  ========================
family                 data and release                    prior            noise-aware model
=====================  ==================================  ===============  ========================
binomial               n Bernoulli(θ) records, count       θ ~ Beta(1, 1)   LaplaceNoisyBinomial
                       + Laplace(1/ε)
poisson                n Poisson(λ) records clipped at     λ ~ Gamma(2, 2)  LaplaceNoisyPoisson
                       10, total + Laplace(10/ε)                            (μ = n λ)
multinomial            n records in k = 3 categories,      p ~ Dirichlet    LaplaceNoisyMultinomial
                       every count + Laplace(2/ε)          (1, 1, 1); p0
                                                           reported
truncated_exponential  n Exponential(λ) records, sum of    λ ~ Gamma(8, 2)  LaplaceNoisy-
                       those in [0.0063, 1.17]                              TruncatedExponential
                       + Laplace(1.17/ε)
truncated_poisson      n Poisson(μ) records, sum of        μ ~ Gamma(2, 2)  LaplaceNoisy-
                       those in [0, 4] + Laplace(4/ε)                       TruncatedPoisson
=====================  ==================================  ===============  ========================

The truncation bounds keep the middle 95 % of one record's prior predictive distribution
(the paper keeps the middle 95 % of the records; its code takes the bounds from the true
parameter, which the analyst cannot know).

Runners
-------
* :func:`run_calibration` — every (family, n, ε) cell: R replicates from the prior, the
  posterior quantile of the truth under each method (exact CDFs for the conjugate methods,
  draws otherwise), the MMD of each private posterior to the non-private one on the first few
  replicates; cached per cell (``.npz``).  :func:`calibration_table` turns the cells into
  KS statistics and 50/90 % coverage with their 99 % binomial bands (the SBC table),
  :func:`mmd_table` the utility table.
* :func:`plot_ks` (Fig. 1a: KS vs n), :func:`plot_ecdf` (Fig. 1b: ECDF of the quantiles at
  n = 1000, ε = 0.01), :func:`plot_mmd` (Fig. 1c: MMD vs n).
* :func:`run_hierarchical` — 50 small areas, each count released at ε = 0.1, sharing a
  logit-normal prior: partial pooling vs independent noise-aware fits vs naive, with the
  coverage of the areas' 90 % intervals over repeats (:func:`hierarchical_summary`).
* :func:`quadrature_table` — the noise-aware posterior of the one-parameter truncated
  families by quadrature, to tell the model's calibration from the sampler's (``--quadrature``).

SBC problems: :class:`NoisyBinomialSBC`, :class:`NoisyPoissonSBC`,
:class:`NoisyMultinomialSBC`, :class:`NoisyTruncatedExponentialSBC`,
:class:`NoisyTruncatedPoissonSBC` (:class:`~pymc_dpnoise.diagnostics.SBCProblem`, usable with
:func:`~pymc_dpnoise.diagnostics.simulation_based_calibration`).

Command line (results in ``results/expfam``; cells are cached and resumable)::

    python -m pymc_dpnoise.experiments.expfam --mode full
    python -m pymc_dpnoise.experiments.expfam --mode fast --families binomial
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from ..baselines import expfam as bl
from ..diagnostics import SBCProblem, mmd, posterior_quantile, sample_compiled
from ..optional import require
from .toolkit import experiment_parser, sbc_coverage, seeded_rng, write_table

__all__ = [
    "FAMILIES",
    "METHODS",
    "SETTINGS",
    "Family",
    "NoisyBinomialSBC",
    "NoisyMultinomialSBC",
    "NoisyPoissonSBC",
    "NoisyTruncatedExponentialSBC",
    "NoisyTruncatedPoissonSBC",
    "calibration_table",
    "compiled_model",
    "hierarchical_summary",
    "main",
    "mmd_table",
    "plot_ecdf",
    "plot_hierarchical",
    "plot_ks",
    "plot_mmd",
    "quadrature_quantiles",
    "quadrature_table",
    "run_calibration",
    "run_cell",
    "run_hierarchical",
]

#: methods in the order of the tables and plots
METHODS = ("noise-aware", "Gibbs", "naive", "OPS", "non-private")

# --------------------------------------------------------------------------------------------
# SBC problems
# --------------------------------------------------------------------------------------------


def _count_data(problem, reports):
    """``pm.Data`` of the reports, ``n`` and ``epsilon`` (in the current model), so that one
    compiled model serves every cell of a grid; :meth:`NoisyBinomialSBC.data` sets them."""
    import pymc as pm

    y = pm.Data("reports", np.asarray(reports, dtype=float))
    n = pm.Data("n", np.asarray(problem.n, dtype=float))
    eps = pm.Data("epsilon", np.asarray(problem.epsilon, dtype=float))
    return y, n, eps


@dataclasses.dataclass(frozen=True)
class NoisyBinomialSBC(SBCProblem):
    """θ ~ Beta(alpha, beta); n Bernoulli(θ) records; their count released at ``epsilon``.

    ``simulate`` runs :func:`~pymc_dpnoise.mechanisms.release_binomial_count` on the records;
    the truth dict also holds the clean count (``"clean"``), which only the non-private and
    OPS baselines may use.  ``build_model`` keeps ``n`` and ``epsilon`` in ``pm.Data`` too, so
    one compiled model serves every cell of a grid.  The naive model treats the clamped
    release as the count (Beta-binomial kernel as a ``pm.Potential``).
    """

    epsilon: float = 0.1
    alpha: float = 1.0
    beta: float = 1.0

    family = "binomial"

    param_names = ("theta",)

    @property
    def sensitivity(self) -> float:
        return 1.0

    def simulate(self, rng):
        from ..mechanisms import release_binomial_count

        theta = rng.beta(self.alpha, self.beta)
        x = rng.random(self.n) < theta
        rel = release_binomial_count(x, self.epsilon, rng)
        return {"theta": theta, "clean": float(x.sum())}, float(rel.value)

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from ..distributions import LaplaceNoisyBinomial

        with pm.Model() as model:
            y, n, eps = _count_data(self, reports)
            theta = pm.Beta("theta", self.alpha, self.beta)
            if noise_aware:
                LaplaceNoisyBinomial("y", n=n, p=theta, epsilon=eps, observed=y)
            else:
                s = pm.math.clip(y, 0.0, n)
                pm.Potential("y", s * pm.math.log(theta) + (n - s) * pm.math.log1p(-theta))
        return model

    def data(self, release) -> dict:
        """The ``pm.Data`` values of :meth:`build_model` for one release."""
        return dict(
            reports=np.asarray(release, dtype=float),
            n=np.asarray(self.n, dtype=float),
            epsilon=np.asarray(self.epsilon, dtype=float),
        )


@dataclasses.dataclass(frozen=True)
class NoisyPoissonSBC(SBCProblem):
    """λ ~ Gamma(alpha, beta); n Poisson(λ) records clipped at ``upper``; total at ``epsilon``.

    Released by :func:`~pymc_dpnoise.mechanisms.release_poisson_count` (sensitivity
    ``upper``).  The model treats the clipped total as Poisson(n λ); with the default prior
    and ``upper = 10`` a record exceeds the bound with probability below 1e-4 (the cell
    tables report how often clipping happened).
    """

    epsilon: float = 0.1
    alpha: float = 2.0
    beta: float = 2.0
    upper: int = 10

    family = "poisson"

    param_names = ("lam",)

    @property
    def sensitivity(self) -> float:
        return float(self.upper)

    def simulate(self, rng):
        from ..mechanisms import release_poisson_count

        lam = rng.gamma(self.alpha, 1.0 / self.beta)
        x = rng.poisson(lam, size=self.n)
        rel = release_poisson_count(x, self.upper, self.epsilon, rng)
        clean = float(np.minimum(x, self.upper).sum())
        return {"lam": lam, "clean": clean, "clipped": int((x > self.upper).sum())}, float(
            rel.value
        )

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from ..distributions import LaplaceNoisyPoisson

        with pm.Model() as model:
            y, n, eps = _count_data(self, reports)
            lam = pm.Gamma("lam", self.alpha, self.beta)
            if noise_aware:
                LaplaceNoisyPoisson(
                    "y", mu=n * lam, epsilon=eps, sensitivity=float(self.upper), observed=y
                )
            else:
                s = pm.math.maximum(y, 0.0)
                pm.Potential("y", s * pm.math.log(lam) - n * lam)
        return model

    data = NoisyBinomialSBC.data


@dataclasses.dataclass(frozen=True)
class NoisyMultinomialSBC(SBCProblem):
    """p ~ Dirichlet(concentration, ..., concentration) over ``k`` categories; n labelled
    records; every category count released with Laplace(0, 2/ε) noise.

    Released by :func:`~pymc_dpnoise.mechanisms.release_multinomial_counts` (L1 sensitivity
    2).  The noise-aware model is :func:`~pymc_dpnoise.LaplaceNoisyMultinomial` (normal
    approximation of the counts, one latent vector), with the latent parametrisation its
    ``latent="auto"`` rule picks for this cell's ``n`` and ``ε`` (:attr:`variant`: the rule
    cannot see through ``pm.Data``, so it is applied here and the compiled model is cached per
    variant).  The calibrated parameter is the first category's probability ``p0`` (marginal
    prior Beta(concentration, (k - 1) concentration), exposed as :attr:`alpha`,
    :attr:`beta`); the truth dict's ``"clean"`` is the clean count of category 0 and
    ``"naive"`` its noisy count: the naive method is the conjugate update of ``p0`` with the
    noisy count as if exact (clamped to ``[0, n]``; the Dirichlet posterior's marginal of
    ``p0`` given all clean counts depends only on the first count and ``n``).
    """

    epsilon: float = 0.1
    k: int = 3
    concentration: float = 1.0

    family = "multinomial"

    param_names = ("p0",)

    @property
    def alpha(self) -> float:
        return float(self.concentration)

    @property
    def beta(self) -> float:
        return float((self.k - 1) * self.concentration)

    @property
    def variant(self) -> str:
        """The latent parametrisation of :func:`~pymc_dpnoise.LaplaceNoisyMultinomial`."""
        from ..distributions.expfam import auto_latent as _auto_latent

        return _auto_latent(self.n, self.epsilon, 2.0)

    def simulate(self, rng):
        from ..mechanisms import release_multinomial_counts

        p = rng.dirichlet(np.full(self.k, float(self.concentration)))
        labels = rng.choice(self.k, size=self.n, p=p)
        rel = release_multinomial_counts(labels, self.k, self.epsilon, rng)
        y = np.asarray(rel.value, dtype=float)
        clean = float(np.sum(labels == 0))
        return {"p0": p[0], "clean": clean, "naive": float(y[0])}, y

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from ..distributions import LaplaceNoisyMultinomial

        with pm.Model() as model:
            y, n, eps = _count_data(self, reports)
            p = pm.Dirichlet("p", np.full(self.k, float(self.concentration)))
            pm.Deterministic("p0", p[0])
            if noise_aware:
                LaplaceNoisyMultinomial(
                    "y", n=n, p=p, epsilon=eps, observed=y, shape=(self.k,), latent=self.variant
                )
            else:
                s = pm.math.clip(y, 0.0, n)
                pm.Potential("y", pm.math.sum(s * pm.math.log(p)))
        return model

    data = NoisyBinomialSBC.data


@dataclasses.dataclass(frozen=True)
class _TruncatedSumSBC(SBCProblem):
    """Shared part of the truncated-family problems (Bernstein & Sheldon Sec. 3.3).

    The rate ~ Gamma(alpha, beta); n records from the family; the sum of the records inside
    the declared bounds released by :func:`~pymc_dpnoise.mechanisms.release_truncated_sum`
    (sensitivity ``upper``).  The bounds keep the middle ``keep`` (95 %, the paper's choice)
    of one record's *prior predictive* distribution: they are fixed before any data are seen
    (bounds computed from the true parameter would tell the analyst the parameter).

    The truth dict holds the clean sum of *all* records (``"clean"``: the non-private
    reference), the number of records outside the bounds (``"clipped"``) and ``"naive"``: the
    untruncated sum with Laplace noise of the same scale.  The naive method is allowed to
    "cheat" with it, as in the paper's experiments (it is not private and receives strictly
    more information; there is no conjugate update for a truncated sum).
    """

    epsilon: float = 0.1
    alpha: float = 2.0
    beta: float = 2.0
    keep: float = 0.95

    _param = ""  # the parameter's name in the model and the truth dict
    _mechanism_family = ""

    @property
    def param_names(self):
        return (self._param,)

    @property
    def bounds(self) -> tuple[float, float]:
        tail = (1.0 - self.keep) / 2.0
        pred = self._prior_predictive()
        return float(pred.ppf(tail)), float(pred.ppf(1.0 - tail))

    @property
    def sensitivity(self) -> float:
        lo, hi = self.bounds
        return max(abs(lo), abs(hi), hi - lo)

    def _prior_predictive(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _records(self, theta, rng):  # pragma: no cover - abstract
        raise NotImplementedError

    def simulate(self, rng):
        from ..mechanisms import release_truncated_sum

        theta = rng.gamma(self.alpha, 1.0 / self.beta)
        x = self._records(theta, rng)
        lo, hi = self.bounds
        rel = release_truncated_sum(x, lo, hi, self.epsilon, rng, family=self._mechanism_family)
        clean = float(x.sum())
        naive = clean + rng.laplace(0.0, rel.scale)
        truth = {self._param: theta, "clean": clean, "naive": naive}
        truth["clipped"] = int(((x < lo) | (x > hi)).sum())
        return truth, float(rel.value)

    def _distribution(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _naive_potential(self, s, n, theta):  # pragma: no cover - abstract
        raise NotImplementedError

    def build_model(self, reports, noise_aware=True):
        """Noise-aware: the random-sum CLT likelihood; naive (for the generic SBC driver,
        which sees only the release): the release clamped at 0 taken as the untruncated sum."""
        import pymc as pm

        lo, hi = self.bounds
        with pm.Model() as model:
            y, n, eps = _count_data(self, reports)
            theta = pm.Gamma(self._param, self.alpha, self.beta)
            if noise_aware:
                self._distribution()("y", n, theta, lo, hi, eps, observed=y)
            else:
                pm.Potential("y", self._naive_potential(pm.math.maximum(y, 0.0), n, theta))
        return model

    data = NoisyBinomialSBC.data


@dataclasses.dataclass(frozen=True)
class NoisyTruncatedExponentialSBC(_TruncatedSumSBC):
    """λ ~ Gamma(8, 2) (rate; the prior of the authors' released code); n Exponential(λ)
    records; the sum of those inside the bounds (middle 95 % of the prior predictive
    Lomax(8, scale 2): about [0.0063, 1.17], which keep 96-97 % of the records at the prior
    mean λ = 4) released at ``epsilon``.  Noise-aware model:
    :class:`~pymc_dpnoise.LaplaceNoisyTruncatedExponential`; the paper's experiment (Fig. 1,
    exponential model), except that the paper's code sets the bounds from the *true* λ.

    The expected truncated sum is not monotone in λ (it peaks at λ ≈ 1.5, below which most
    records exceed the upper bound): a release can be explained by a λ on either side of the
    peak, and for truths with λ < 1.5 (1.3 % of the prior) the posterior can be bimodal at
    large n ε.
    """

    alpha: float = 8.0
    beta: float = 2.0
    _param = "lam"
    _mechanism_family = "exponential"
    family = "truncated_exponential"

    def _prior_predictive(self):
        from scipy import stats

        return stats.lomax(self.alpha, scale=self.beta)

    def _records(self, lam, rng):
        return rng.exponential(1.0 / lam, size=self.n)

    def _distribution(self):
        from ..distributions import LaplaceNoisyTruncatedExponential

        return LaplaceNoisyTruncatedExponential

    def _naive_potential(self, s, n, lam):
        import pymc as pm

        return n * pm.math.log(lam) - lam * s


@dataclasses.dataclass(frozen=True)
class NoisyTruncatedPoissonSBC(_TruncatedSumSBC):
    """μ ~ Gamma(2, 2) (the prior of the Poisson family); n Poisson(μ) records; the sum of
    those inside the bounds (middle 95 % of the prior predictive negative binomial: [0, 4])
    released at ``epsilon``.  Noise-aware model:
    :class:`~pymc_dpnoise.LaplaceNoisyTruncatedPoisson`.  The paper has no truncated-Poisson
    experiment (nor a Gibbs sampler for it); the design follows the exponential one.

    As there, the expected truncated sum peaks (at μ ≈ 2.94; 1.9 % of the prior lies above),
    so the posterior can be bimodal at large n ε.
    """

    _param = "mu"
    _mechanism_family = "poisson"
    family = "truncated_poisson"

    def _prior_predictive(self):
        from scipy import stats

        return stats.nbinom(self.alpha, self.beta / (1.0 + self.beta))

    def _records(self, mu, rng):
        return rng.poisson(mu, size=self.n)

    def _distribution(self):
        from ..distributions import LaplaceNoisyTruncatedPoisson

        return LaplaceNoisyTruncatedPoisson

    def _naive_potential(self, s, n, mu):
        import pymc as pm

        return s * pm.math.log(mu) - n * mu


# --------------------------------------------------------------------------------------------
# Family table
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Family:
    """One row of :data:`FAMILIES`: how to simulate, fit and compare a family.

    Attributes
    ----------
    problem : callable
        ``problem(n=..., epsilon=...)`` returns the :class:`SBCProblem` of a cell; its
        ``simulate`` must put the clean statistic in the truth dict under ``"clean"`` and its
        ``build_model`` must hold ``reports``, ``n`` and ``epsilon`` in ``pm.Data`` (its
        ``data(release)`` returns them).
    param : str
        The scalar parameter whose calibration is measured.
    conjugate : str or None
        Family name for :func:`~pymc_dpnoise.baselines.expfam.conjugate_posterior` (naive and
        non-private columns), or ``None`` if there is no conjugate update.
    gibbs : callable or None
        ``gibbs(y, problem, rng, iters, burn)`` returns draws ``(iters, R)`` for the releases
        ``y`` (R,), or ``None``.
    ops : bool
        Whether the OPS baseline applies (binomial only in the paper).
    jitter : bool
        Whether NUTS chains start from a jittered initial point (nutpie's default).  ``False``
        starts every chain at the prior's support point (its mean): for the truncated
        families, whose release can be explained by a parameter on either side of the peak of
        the expected truncated sum, a jittered start can land a chain in the far, low-mass
        mode and keep it there (R-hat > 10).
    """

    problem: Callable
    param: str
    conjugate: str | None
    gibbs: Callable | None
    ops: bool = False
    jitter: bool = True


def _gibbs_binomial(y, p, rng, iters, burn):
    return bl.gibbs_binomial(
        y, p.n, p.epsilon, alpha=p.alpha, beta=p.beta, iters=iters, burn=burn, rng=rng
    )


def _gibbs_poisson(y, p, rng, iters, burn):
    return bl.gibbs_poisson(
        y, p.n, p.epsilon, p.upper, alpha=p.alpha, beta=p.beta, iters=iters, burn=burn, rng=rng
    )


def _gibbs_truncated_exponential(y, p, rng, iters, burn):
    lo, hi = p.bounds
    return bl.gibbs_truncated_exponential(
        y, p.n, lo, hi, p.epsilon, alpha=p.alpha, beta=p.beta, iters=iters, burn=burn, rng=rng
    )


#: the families of the calibration grid (their SBC problem, parameter, conjugate family of
#: the naive and non-private columns, Gibbs sampler); the order fixes every cell's random
#: stream, so new families go at the end
FAMILIES: dict[str, Family] = {
    "binomial": Family(NoisyBinomialSBC, "theta", "binomial", _gibbs_binomial, ops=True),
    "poisson": Family(NoisyPoissonSBC, "lam", "poisson", _gibbs_poisson, ops=False),
    # p0's marginal is Beta(alpha, beta) a priori and given the clean counts: binomial update
    "multinomial": Family(NoisyMultinomialSBC, "p0", "binomial", None),
    "truncated_exponential": Family(
        NoisyTruncatedExponentialSBC,
        "lam",
        "exponential",
        _gibbs_truncated_exponential,
        jitter=False,
    ),
    # the paper's Algorithm 2 is written for the exponential family only; no Gibbs column
    "truncated_poisson": Family(NoisyTruncatedPoissonSBC, "mu", "poisson", None, jitter=False),
}

#: the families with SBC cells at n in {10, 1000} and epsilon in {0.01, 0.1, 1} only
NEW_FAMILIES = ("multinomial", "truncated_exponential", "truncated_poisson")

# --------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------

#: the paper's grid (Fig. 1) plus the issue's SBC cells at epsilon = 1
FIG1_NS = (10, 100, 1000, 10_000)
FIG1_EPSILONS = (0.01, 0.1)

SETTINGS = {
    "full": dict(
        calibration=dict(
            families=("binomial", "poisson", *NEW_FAMILIES),
            ns=FIG1_NS,
            # per-family n (the SBC cells); not part of any cell's cache key
            family_ns={f: (10, 1000) for f in NEW_FAMILIES},
            epsilons=FIG1_EPSILONS,
            extra_cells=((10, 1.0), (1000, 1.0)),
            replicates=400,
            draws=500,
            tune=300,
            gibbs_iters=5000,
            gibbs_burn=2000,
            mmd_replicates=20,
            mmd_draws=500,
        ),
        hier=dict(areas=50, epsilon=0.1, replicates=12, draws=500, tune=500),
    ),
    "fast": dict(
        calibration=dict(
            families=("binomial",),
            ns=(10, 1000),
            epsilons=FIG1_EPSILONS,
            extra_cells=(),
            replicates=20,
            draws=200,
            tune=200,
            gibbs_iters=500,
            gibbs_burn=200,
            mmd_replicates=3,
            mmd_draws=200,
        ),
        hier=dict(areas=50, epsilon=0.1, replicates=1, draws=300, tune=300),
    ),
}


def _cells(cfg, family=None) -> list[tuple[int, float]]:
    ns = cfg.get("family_ns", {}).get(family, cfg["ns"])
    cells = [(n, e) for e in cfg["epsilons"] for n in ns]
    return cells + [tuple(c) for c in cfg["extra_cells"] if tuple(c) not in cells]


# --------------------------------------------------------------------------------------------
# One calibration cell
# --------------------------------------------------------------------------------------------

_COMPILED: dict = {}


def compiled_model(family: str, problem=None):
    """The noise-aware model of a family, compiled once per process (n, ε are data).

    A problem with a ``variant`` attribute (the multinomial's latent parametrisation) gets
    one compiled model per variant; ``problem`` defaults to the family's at n = 10, ε = 1.
    """
    if problem is None:
        problem = FAMILIES[family].problem(n=10, epsilon=1.0)
    key = (family, getattr(problem, "variant", None))
    if key not in _COMPILED:
        nutpie = require("nutpie", extra="notebooks", feature="the expfam experiments")

        _, release = problem.simulate(np.random.default_rng(0))  # a release of the right shape
        kw = {} if FAMILIES[family].jitter else dict(jitter_rvs=set())
        _COMPILED[key] = nutpie.compile_pymc_model(problem.build_model(release, True), **kw)
    return _COMPILED[key]


def _thin(draws, m, rng):
    d = np.asarray(draws, dtype=float).ravel()
    return d if d.size <= m else rng.choice(d, size=m, replace=False)


def run_cell(family: str, n: int, epsilon: float, cfg: dict, *, seed: int = 2026) -> dict:
    """One (family, n, ε) cell: simulate ``cfg["replicates"]`` releases and fit every method.

    Returns a dict of arrays: ``truth``, ``clean``, ``release`` (R,); ``q_<method>`` the
    posterior quantile of the truth (R,); ``mmd_<method>`` the MMD² to the non-private
    posterior on the first ``cfg["mmd_replicates"]`` replicates; NUTS diagnostics
    (``rhat``, ``divergences``) and wall times per method (``sec_<method>``).
    """
    fam = FAMILIES[family]
    problem = fam.problem(n=int(n), epsilon=float(epsilon))
    tag = (list(FAMILIES).index(family), int(n), round(float(epsilon) * 1e6))
    reps = int(cfg["replicates"])
    truth, clean, release, extra, naive_in = [], [], [], [], []
    for r in range(reps):
        t, y = problem.simulate(seeded_rng(seed, *tag, r))
        truth.append(t[fam.param])
        clean.append(t["clean"])
        release.append(y)
        extra.append(t.get("clipped", 0))
        naive_in.append(t.get("naive", y))
    truth, clean, release, naive_in = map(np.asarray, (truth, clean, release, naive_in))
    out = dict(truth=truth, clean=clean, release=release, clipped=np.asarray(extra))
    if naive_in.shape != release.shape or np.any(naive_in != release):
        out["naive_input"] = naive_in  # what the naive method plugs in (problem's "naive")
    rng = seeded_rng(seed, *tag, 10**6)
    n_mmd, m = min(int(cfg["mmd_replicates"]), reps), int(cfg["mmd_draws"])
    ref_draws = []

    # non-private and naive: exact conjugate CDFs (no sampling error in the quantiles)
    if fam.conjugate:
        a = getattr(problem, "alpha", 1.0)
        b = getattr(problem, "beta", 1.0)
        for label, params in (
            ("non-private", bl.conjugate_posterior(fam.conjugate, clean, n, a, b)),
            ("naive", bl.naive_posterior(fam.conjugate, naive_in, n, a, b)),
        ):
            t0 = time.perf_counter()
            out[f"q_{label}"] = bl.posterior_cdf(fam.conjugate, params, truth)
            draws = bl.posterior_draws(fam.conjugate, params, m, rng)[:, :n_mmd]
            out[f"sec_{label}"] = time.perf_counter() - t0
            if label == "non-private":
                ref_draws = [draws[:, i] for i in range(n_mmd)]
            else:
                out[f"mmd_{label}"] = np.array(
                    [mmd(draws[:, i], ref_draws[i]) for i in range(n_mmd)]
                )

    if fam.ops:
        t0 = time.perf_counter()
        d = bl.ops_binomial(clean, n, epsilon, rng, alpha=problem.alpha, beta=problem.beta)
        out["q_OPS"] = np.array([posterior_quantile(d[:, i], truth[i]) for i in range(reps)])
        out["sec_OPS"] = time.perf_counter() - t0

    if fam.gibbs is not None:
        t0 = time.perf_counter()
        d = fam.gibbs(release, problem, rng, int(cfg["gibbs_iters"]), int(cfg["gibbs_burn"]))
        out["q_Gibbs"] = np.array([posterior_quantile(d[:, i], truth[i]) for i in range(reps)])
        out["sec_Gibbs"] = time.perf_counter() - t0
        if ref_draws:
            out["mmd_Gibbs"] = np.array(
                [mmd(_thin(d[:, i], m, rng), ref_draws[i]) for i in range(n_mmd)]
            )

    # noise-aware: NUTS on the exact marginal, one compiled model for every cell
    compiled = compiled_model(family, problem)
    q, rh, dv, mm = np.empty(reps), np.empty(reps), np.empty(reps, dtype=int), []
    t0 = time.perf_counter()
    for i in range(reps):
        post, info = sample_compiled(
            compiled,
            draws=int(cfg["draws"]),
            tune=int(cfg["tune"]),
            seed=int(rng.integers(2**31 - 1)),
            var=fam.param,
            **problem.data(release[i]),
        )
        q[i] = posterior_quantile(post, truth[i])
        rh[i], dv[i] = info["max_rhat"], info["divergences"]
        if i < n_mmd and ref_draws:
            mm.append(mmd(_thin(post, m, rng), ref_draws[i]))
    out.update(
        {
            "q_noise-aware": q,
            "rhat": rh,
            "divergences": dv,
            "sec_noise-aware": time.perf_counter() - t0,
        }
    )
    if mm:
        out["mmd_noise-aware"] = np.array(mm)
    return out


def _cell_path(cache: Path, family, n, eps, cfg, seed) -> tuple[Path, str]:
    keys = (
        "replicates",
        "draws",
        "tune",
        "gibbs_iters",
        "gibbs_burn",
        "mmd_replicates",
        "mmd_draws",
    )
    key = json.dumps(
        dict(family=family, n=int(n), epsilon=float(eps), seed=seed, **{k: cfg[k] for k in keys})
    )
    name = f"{family}_n{int(n)}_eps{float(eps):g}_R{cfg['replicates']}.npz"
    return cache / name, key


def run_calibration(
    mode: str = "fast",
    cache_dir="results/expfam/cells",
    *,
    families=None,
    seed: int = 2026,
    recompute: bool = False,
    load_only: bool = False,
    verbose: bool = True,
) -> dict:
    """Run (or load) every cell of the mode's grid; returns ``{(family, n, ε): cell dict}``.

    ``load_only=True`` returns only the cells already in ``cache_dir`` (and says which are
    missing) instead of computing them."""
    cfg = SETTINGS[mode]["calibration"]
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    cells = {}
    for family in families or cfg["families"]:
        for n, eps in _cells(cfg, family):
            path, key = _cell_path(cache, family, n, eps, cfg, seed)
            res = None
            if path.exists() and not recompute:
                with np.load(path, allow_pickle=False) as f:
                    if str(f["key"]) == key:
                        res = {k: f[k] for k in f.files if k != "key"}
                        if verbose:
                            print(f"[cache] {path.name}")
            if res is None and load_only:
                if verbose:
                    print(f"[missing] {path.name}")
                continue
            if res is None:
                t0 = time.perf_counter()
                res = run_cell(family, n, eps, cfg, seed=seed)
                np.savez(path, key=key, **res)
                if verbose:
                    print(f"[ran {time.perf_counter() - t0:6.0f}s] {path.name}", flush=True)
            cells[(family, int(n), float(eps))] = res
    return cells


# --------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------


def calibration_table(cells: dict) -> pd.DataFrame:
    """KS and 50/70/90/95 % coverage (99 % binomial bands) per (family, method, n, ε).

    Built with :func:`~pymc_dpnoise.experiments.toolkit.sbc_coverage` from the posterior
    quantiles; ``max_rhat`` and ``divergences`` are NUTS's (noise-aware rows only).
    """
    tabs = []
    for (family, n, eps), res in cells.items():
        for method in METHODS:
            if f"q_{method}" not in res:
                continue
            aware = method == "noise-aware"
            tab = sbc_coverage(
                res[f"q_{method}"][:, None],
                [FAMILIES[family].param],
                res["rhat"] if aware else [1.0],
                res["divergences"] if aware else [0],
                ks=True,
                family=family,
                method=method,
                n_records=n,
                epsilon=eps,
            )
            if not aware:  # no sampler diagnostics for exact CDFs, OPS draws or Gibbs
                tab["max_rhat"] = np.nan
            tab["seconds"] = float(res.get(f"sec_{method}", np.nan))
            tab["clipped_records"] = int(np.sum(res["clipped"]))
            tabs.append(tab)
    tab = pd.concat(tabs, ignore_index=True)
    tab["method"] = pd.Categorical(tab["method"], METHODS, ordered=True)
    return tab.sort_values(["family", "method", "epsilon", "n_records", "level"]).reset_index(
        drop=True
    )


#: one-parameter families whose noise-aware posterior is also computed by quadrature
#: (:func:`quadrature_table`): their NUTS runs can meet two modes (see the problems' notes)
QUADRATURE_FAMILIES = ("truncated_exponential", "truncated_poisson")


def quadrature_quantiles(
    family, n, epsilon, release, truth, *, points=20001, tail=1e-7, noise_aware=True
):
    """Posterior quantiles of ``truth`` under the noise-aware model, by quadrature (no MCMC).

    For a model with one free variable: its log density (with the Jacobian) on a grid of
    ``points`` values of the unconstrained variable spanning the prior's ``[tail, 1 - tail]``
    quantiles (estimated from 200 000 prior draws), evaluated for every release at once (the model's graph vectorised over the
    grid), normalised by the trapezoid rule.  This separates the model's calibration from
    the sampler's: a replicate whose NUTS chains disagree (R-hat) is scored here exactly.
    ``noise_aware=False`` integrates the problem's naive model instead (a conjugate check).
    """
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import vectorize_graph

    problem = FAMILIES[family].problem(n=int(n), epsilon=float(epsilon))
    model = problem.build_model(np.asarray(release)[0], noise_aware)
    if len(model.value_vars) != 1:
        raise ValueError(f"{family}: quadrature needs a model with one free variable")
    value = model.value_vars[0]
    rv = model.values_to_rvs[value]
    tr = model.rvs_to_transforms[rv]
    u = pt.vector("u")
    logp = pytensor.function([u], vectorize_graph(model.logp(), {value: u}))
    prior = np.quantile(pm.draw(rv, 200_000, random_seed=0), [tail, 1.0 - tail])
    fwd = pytensor.function([], tr.forward(pt.as_tensor(np.r_[prior, truth]), *rv.owner.inputs))
    mapped = np.asarray(fwd(), dtype=float)
    grid = np.linspace(mapped[0], mapped[1], int(points))
    out = np.empty(len(truth))
    for i, y in enumerate(release):
        pm.set_data({"reports": np.asarray(y, dtype=float)}, model=model)
        lp = logp(grid)
        dens = np.exp(lp - np.max(lp))
        cdf = np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2.0)])
        out[i] = np.interp(mapped[2 + i], grid, cdf / cdf[-1])
    return out


def quadrature_table(cells: dict) -> pd.DataFrame:
    """Noise-aware calibration by quadrature vs NUTS, per cell of :data:`QUADRATURE_FAMILIES`.

    Columns: KS statistic and p-value of the quadrature quantiles and of the NUTS ones,
    replicates with R-hat > 1.05, the largest and median |NUTS − quadrature| quantile
    difference, and the 90 % coverage of both.
    """
    from ..diagnostics import binomial_band, ks_uniform

    rows = []
    for (family, n, eps), res in sorted(cells.items()):
        if family not in QUADRATURE_FAMILIES:
            continue
        qq = quadrature_quantiles(family, n, eps, res["release"], res["truth"])
        qn = res["q_noise-aware"]
        lo, hi = binomial_band(0.9, len(qq), 0.99)
        row = dict(family=family, n_records=n, epsilon=eps, replicates=len(qq))
        for label, q in (("quadrature", qq), ("nuts", qn)):
            ks, p = ks_uniform(q)
            cov = float(np.mean(np.abs(q - 0.5) <= 0.45))
            row.update({f"ks_{label}": ks, f"ks_p_{label}": p, f"cov90_{label}": cov})
        d = np.abs(qn - qq)
        row.update(
            band90_lo=lo,
            band90_hi=hi,
            rhat_gt_1_05=int(np.sum(res["rhat"] > 1.05)),
            max_abs_diff=float(d.max()),
            median_abs_diff=float(np.median(d)),
        )
        rows.append(row)
    return pd.DataFrame(rows)


def mmd_table(cells: dict) -> pd.DataFrame:
    """Mean (and standard error) over replicates of MMD² to the non-private posterior."""
    rows = []
    for (family, n, eps), res in cells.items():
        for method in METHODS:
            v = res.get(f"mmd_{method}")
            if v is None or len(v) == 0:
                continue
            rows.append(
                dict(
                    family=family,
                    method=method,
                    n_records=n,
                    epsilon=eps,
                    mmd=float(np.mean(v)),
                    mmd_se=float(np.std(v) / np.sqrt(len(v))),
                    replicates=len(v),
                )
            )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Plots (Fig. 1)
# --------------------------------------------------------------------------------------------

_STYLE = {
    "noise-aware": dict(color="C0", marker="o"),
    "Gibbs": dict(color="C2", marker="s", ls="--"),
    "naive": dict(color="C3", marker="v"),
    "OPS": dict(color="C1", marker="^"),
    "non-private": dict(color="0.3", marker=".", ls=":"),
}


def _panels_vs_n(t, family, epsilons, ylabel, draw, finish=None):
    """One panel per ε of the rows ``t`` against n: ``draw(ax, rows, method)`` per method,
    then ``finish(ax, rows)`` on the panel's rows (Figs. 1a and 1c)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(epsilons), figsize=(5 * len(epsilons), 3.6), sharey=True)
    for ax, eps in zip(np.atleast_1d(axes), epsilons, strict=True):
        te = t[np.isclose(t["epsilon"], eps)]
        for method in METHODS:
            tm = te[te["method"] == method].sort_values("n_records")
            if len(tm):
                draw(ax, tm, method)
        if finish is not None:
            finish(ax, te)
        ax.set_xscale("log")
        ax.set_xlabel("n (records)")
        ax.set_title(f"{family}, ε = {eps:g}")
    np.atleast_1d(axes)[0].set_ylabel(ylabel)
    np.atleast_1d(axes)[-1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_ks(table: pd.DataFrame, family: str = "binomial", epsilons=FIG1_EPSILONS):
    """Fig. 1a: KS statistic of the quantiles against Uniform(0, 1) vs n, one panel per ε."""

    def draw(ax, tm, method):
        ax.plot(tm["n_records"], tm["ks"], label=method, **_STYLE[method])

    def finish(ax, te):
        r = int(te["n"].max()) if len(te) else 1
        ax.axhline(1.63 / np.sqrt(r), color="k", lw=0.8, ls="--", label="KS 99% (uniform)")

    t = table[(table["family"] == family) & np.isclose(table["level"], 0.5)]
    return _panels_vs_n(t, family, epsilons, "KS statistic", draw, finish)


def plot_ecdf(cells: dict, family: str = "binomial", n: int = 1000, epsilon: float = 0.01):
    """Fig. 1b: empirical CDF of the posterior quantiles of the truth, one curve per method."""
    import matplotlib.pyplot as plt

    res = cells[(family, int(n), float(epsilon))]
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    for method in METHODS:
        q = res.get(f"q_{method}")
        if q is None:
            continue
        x = np.sort(q)
        ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=method,
                color=_STYLE[method]["color"], ls=_STYLE[method].get("ls", "-"))  # fmt: skip
    ax.plot([0, 1], [0, 1], color="k", lw=0.8)
    ax.set_xlabel("posterior quantile of the truth")
    ax.set_ylabel("ECDF")
    ax.set_title(f"{family}, n = {n}, ε = {epsilon:g} (R = {len(res['truth'])})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_mmd(table: pd.DataFrame, family: str = "binomial", epsilons=FIG1_EPSILONS):
    """Fig. 1c: MMD² to the non-private posterior vs n, one panel per ε."""

    def draw(ax, tm, method):
        ax.errorbar(tm["n_records"], tm["mmd"], yerr=tm["mmd_se"], label=method,
                    capsize=2, **_STYLE[method])  # fmt: skip

    t = table[table["family"] == family]
    return _panels_vs_n(t, family, epsilons, "MMD² to the non-private posterior", draw)


# --------------------------------------------------------------------------------------------
# Hierarchical small areas
# --------------------------------------------------------------------------------------------

#: hyperpriors of the small-area model (truths are drawn from them)
HIER_PRIOR = dict(mu_mean=-1.0, mu_sd=0.7, tau_sd=0.7, indep_sd=1.5)


def area_sizes(areas: int = 50) -> np.ndarray:
    """Records per area: geometric from 10 to 2000 (many small areas, a few large ones)."""
    return np.round(np.geomspace(10, 2000, int(areas))).astype(int)


def build_area_model(sizes, epsilon: float):
    """Partial pooling (``pooled = 1``) or independent areas (``pooled = 0``), one graph.

    ``logit p_a = mu + tau z_a`` with ``mu ~ N(-1, 0.7)``, ``tau ~ HalfNormal(0.7)``,
    ``z_a ~ N(0, 1)`` when pooled; ``logit p_a = -1 + 1.5 z_a`` (a fixed prior of the same
    centre, wider than the pooled marginal) when not.  The released counts are
    :class:`~pymc_dpnoise.LaplaceNoisyBinomial` with ``dims="area"``.
    """
    import pymc as pm

    from ..distributions import LaplaceNoisyBinomial

    sizes = np.asarray(sizes)
    h = HIER_PRIOR
    with pm.Model(coords={"area": np.arange(sizes.size)}) as model:
        y = pm.Data("reports", np.zeros(sizes.size), dims="area")
        pooled = pm.Data("pooled", np.float64(1.0))
        mu = pm.Normal("mu", h["mu_mean"], h["mu_sd"])
        tau = pm.HalfNormal("tau", h["tau_sd"])
        z = pm.Normal("z", 0.0, 1.0, dims="area")
        loc = pooled * mu + (1.0 - pooled) * h["mu_mean"]
        scale = pooled * tau + (1.0 - pooled) * h["indep_sd"]
        p = pm.Deterministic("p", pm.math.sigmoid(loc + scale * z), dims="area")
        LaplaceNoisyBinomial(
            "y", n=sizes.astype(float), p=p, epsilon=epsilon, observed=y, dims="area"
        )
    return model


def run_hierarchical(
    mode: str = "fast",
    *,
    seed: int = 7,
    interval: float = 0.9,
    compiled=None,
    progress=None,
) -> pd.DataFrame:
    """Small areas: per repeat, draw (mu, tau, p_a) from the hyperprior, release every area's
    count at ε, fit partial pooling and independent noise-aware models (NUTS) and the naive
    independent conjugate update, and record each area's posterior mean and central
    ``interval``.  One row per (repeat, method, area)."""
    nutpie = require("nutpie", extra="notebooks", feature="the expfam experiments")

    cfg = SETTINGS[mode]["hier"]
    sizes = area_sizes(cfg["areas"])
    eps = float(cfg["epsilon"])
    if compiled is None:
        compiled = nutpie.compile_pymc_model(build_area_model(sizes, eps))
    from ..mechanisms import release_binomial_count

    h = HIER_PRIOR
    lo_q, hi_q = (1 - interval) / 2, (1 + interval) / 2
    rows = []
    for r in range(int(cfg["replicates"])):
        t0 = time.perf_counter()
        rng = seeded_rng(seed, r)
        mu = rng.normal(h["mu_mean"], h["mu_sd"])
        tau = abs(rng.normal(0.0, h["tau_sd"]))
        p = 1.0 / (1.0 + np.exp(-(mu + tau * rng.standard_normal(sizes.size))))
        clean = rng.binomial(sizes, p)
        # each area's 0/1 records (rows padded with zeros up to the largest area), one noisy
        # count per area; the padding adds nothing to a count
        records = np.arange(sizes.max())[None, :] < clean[:, None]
        y = release_binomial_count(records, eps, rng).value
        fits = {}
        for label, flag in (("partial pooling", 1.0), ("independent", 0.0)):
            post, info = sample_compiled(
                compiled,
                draws=int(cfg["draws"]),
                tune=int(cfg["tune"]),
                seed=int(rng.integers(2**31 - 1)),
                var="p",
                reports=y,
                pooled=np.float64(flag),
            )
            fits[label] = (post, info)
        a_, b_ = bl.naive_posterior("binomial", y, sizes, 1.0, 1.0)
        fits["naive"] = (bl.posterior_draws("binomial", (a_, b_), 2000, rng), {})
        a_, b_ = bl.conjugate_posterior("binomial", clean, sizes, 1.0, 1.0)
        fits["non-private"] = (bl.posterior_draws("binomial", (a_, b_), 2000, rng), {})
        for label, (post, info) in fits.items():
            mean = post.mean(0)
            lo, hi = np.quantile(post, [lo_q, hi_q], axis=0)
            for a in range(sizes.size):
                rows.append(
                    dict(
                        replicate=r, method=label, area=a, n_records=int(sizes[a]), epsilon=eps,
                        mu=mu, tau=tau, truth=p[a], mean=mean[a], lo=lo[a], hi=hi[a],
                        divergences=info.get("divergences", 0),
                        max_rhat=info.get("max_rhat", np.nan),
                    )
                )  # fmt: skip
        if progress:
            progress(f"repeat {r}: {time.perf_counter() - t0:.1f} s")
    return pd.DataFrame(rows)


def _size_labels(bins):
    return [f"{a}-{b - 1}" if b < 10**9 else f">={a}" for a, b in itertools.pairwise(bins)]


def hierarchical_summary(df: pd.DataFrame, bins=(0, 50, 300, 10**9)) -> pd.DataFrame:
    """Per (method, area-size class): RMSE of the posterior mean, coverage of the interval
    (with its 99 % binomial band over all area-repeats) and mean interval width."""
    from ..diagnostics import binomial_band

    d = df.assign(
        size=pd.cut(df["n_records"], bins, right=False, labels=_size_labels(bins)),
        sq=(df["mean"] - df["truth"]) ** 2,
        cover=(df["lo"] <= df["truth"]) & (df["truth"] <= df["hi"]),
        width=df["hi"] - df["lo"],
    )  # fmt: skip
    rows = []
    for (method, size), g in d.groupby(["method", "size"], observed=True, sort=False):
        lo, hi = binomial_band(0.9, len(g), 0.99)
        rows.append(
            dict(
                method=method, areas=str(size), intervals=len(g), rmse=float(np.sqrt(g["sq"].mean())),
                coverage_90=float(g["cover"].mean()), band_lo=lo, band_hi=hi,
                inside=bool(lo <= g["cover"].mean() <= hi), mean_width=float(g["width"].mean()),
            )
        )  # fmt: skip
    return pd.DataFrame(rows)


def plot_hierarchical(df: pd.DataFrame, replicate: int = 0):
    """Posterior means and 90 % intervals of every area against its size, one repeat."""
    import matplotlib.pyplot as plt

    d = df[df["replicate"] == replicate]
    methods = ["independent", "partial pooling", "naive"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), sharey=True)
    for ax, method in zip(axes, methods, strict=True):
        g = d[d["method"] == method]
        ax.errorbar(g["n_records"], g["mean"], yerr=[g["mean"] - g["lo"], g["hi"] - g["mean"]],
                    fmt="o", ms=3, lw=0.8, alpha=0.7, label="posterior mean, 90% interval")  # fmt: skip
        ax.plot(g["n_records"], g["truth"], "k_", ms=8, label="truth")
        ax.set_xscale("log")
        ax.set_xlabel("records in the area")
        ax.set_title(method)
    axes[0].set_ylabel("p (area)")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def main(argv=None):
    ap = experiment_parser(__doc__.splitlines()[0], SETTINGS, "results/expfam")
    ap.add_argument("--families", nargs="+", default=None, choices=sorted(FAMILIES))
    ap.add_argument("--skip-hier", action="store_true", help="calibration grid only")
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument(
        "--load-only", action="store_true", help="tables and plots from the cached cells only"
    )
    ap.add_argument(
        "--quadrature",
        action="store_true",
        help="also score the noise-aware model of the one-parameter truncated families by "
        "quadrature (quadrature_<mode>.csv; about 30 s per cell)",
    )
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cells = run_calibration(
        args.mode,
        out / "cells",
        families=args.families,
        recompute=args.recompute,
        load_only=args.load_only,
    )
    cal = calibration_table(cells)
    write_table(cal, out, f"calibration_{args.mode}")
    mm = mmd_table(cells)
    write_table(mm, out, f"mmd_{args.mode}")
    for family in sorted({k[0] for k in cells}):
        eps_family = sorted({e for f, _, e in cells if f == family})
        plot_ks(cal, family, eps_family).savefig(out / f"ks_{family}_{args.mode}.png", dpi=110)
        if (family, 1000, 0.01) in cells:
            plot_ecdf(cells, family).savefig(out / f"ecdf_{family}_{args.mode}.png", dpi=110)
        if len(mm):
            plot_mmd(mm, family).savefig(out / f"mmd_{family}_{args.mode}.png", dpi=110)
    if args.quadrature:
        qt = quadrature_table(cells)
        if len(qt):
            write_table(qt, out, f"quadrature_{args.mode}")
            print(qt.to_string(index=False))
    cols = ["family", "method", "n_records", "epsilon", "level", "coverage", "inside", "ks", "ks_p"]
    print(cal[np.isin(cal["level"], (0.5, 0.9))][cols].to_string(index=False))
    hier_csv = out / f"hier_{args.mode}.csv"
    if args.load_only and hier_csv.exists():
        df = pd.read_csv(hier_csv)
    elif not (args.skip_hier or args.load_only):
        df = run_hierarchical(args.mode, progress=print)
        df.to_csv(hier_csv, index=False)
    else:
        df = None
    if df is not None:
        summ = hierarchical_summary(df)
        write_table(summ, out, f"hier_summary_{args.mode}")
        plot_hierarchical(df).savefig(out / f"hier_{args.mode}.png", dpi=110)
        print(summ.to_string(index=False))


if __name__ == "__main__":
    main()
