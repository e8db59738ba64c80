"""Simulation-based calibration of :class:`~pymc_dpnoise.distributions.sufficient.SSNormalApprox`.

Noisy sums of sufficient statistics of GLMs (GLM paper Sec. 3; LDP paper Sec. 3.1), issue 5:
"SBC coverage within the binomial band for logistic and Poisson at ε ∈ {0.1, 1}".

:class:`~pymc_dpnoise.diagnostics.SBCProblem` subclasses, used with
:func:`~pymc_dpnoise.diagnostics.simulation_based_calibration`:

* :class:`LogisticSSSBC` — θ ~ N(0, theta_sd² I); x_i ~ N(0, Σ); y_i = ±1 with
  P(y_i = 1 | x_i) = sigmoid(θᵀx_i); model with ``order="quadrature"`` (no Taylor truncation,
  so large θᵀΣθ is not a misspecification).
* :class:`PoissonSSSBC` — the same θ and x, y_i ~ Poisson(exp(θᵀx_i)) (log link, no intercept).
* :class:`LinearSSSBC` — y_i = θᵀx_i + N(0, σ²), σ ~ HalfNormal(sigma_sd).

Design (what SBC checks, and what it does not)
----------------------------------------------
* Σ is **known** (the model is given the Σ the features were drawn from), so the parameters
  checked are the coefficients θ (and σ for the linear model).  Σ = x_scale² ((1 - ρ) I + ρ 11ᵀ)
  with x_scale = 0.2, ρ = 0.3 (d = 2): a row has ‖x‖ > R = 1 with probability ≈ 1e-4, so the
  clipping of the release is negligible (:func:`clip_rates` measures it; the tables report it).
  The responses are clipped to [0, R_y] (Poisson, R_y = 10) or [-R_y, R_y] (linear, R_y = 4);
  these too are rare (measured).  Rare clipping is the only way the simulation departs from
  the model's assumptions other than the normal approximation itself.
* The data are simulated record by record from the GLM and released by
  :func:`~pymc_dpnoise.mechanisms.sufficient.release_sufficient_statistics` (central DP with
  δ = 1e-5 on the sum; ``local=True`` adds the noise to every record, LDP).  The model is the
  *normal approximation* of that sum, exact in its first two moments; it is a good
  approximation only for large n.  The cost of a fit does not depend on n, so the full grid uses
  n = 10⁴ records (10⁶ for LDP, where the noise variance grows like n): with n = 10³ and R_y = 10
  the Poisson posterior is barely narrower than the prior at ε ≤ 1, which makes SBC a weak test.
  The ``contraction`` columns (1 - posterior var / prior var, averaged over a few replicates)
  show how far the data move the posterior.
* The naive baseline fits the same normal approximation with the privacy noise left out
  (``noise_cov`` = jitter · I, jitter = 1e-6): it treats the noisy sum as the exact one.

Command line (tables in ``results/sbc_sufficient``)::

    python -m pymc_dpnoise.experiments_sufficient --mode fast
    python -m pymc_dpnoise.experiments_sufficient --mode full
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .diagnostics import (
    DEFAULT_LEVELS,
    SBCProblem,
    coverage_table,
    ks_uniform,
    simulation_based_calibration,
)
from .math.sufficient import stat_dim
from .mechanisms.core import analytic_gaussian_sigma
from .mechanisms.sufficient import release_sufficient_statistics, ss_sensitivity

__all__ = [
    "SETTINGS",
    "LinearSSSBC",
    "LogisticSSSBC",
    "PoissonSSSBC",
    "clip_rates",
    "main",
    "posterior_contraction",
    "run_grid",
]


@dataclasses.dataclass(frozen=True)
class _SufficientSBC(SBCProblem):
    """Shared part: known Σ, θ ~ N(0, theta_sd² I), release of the summed statistics."""

    d: int = 2
    epsilon: float = 1.0
    delta: float = 1e-5
    R: float = 1.0
    Ry: float = 1.0
    local: bool = False
    x_scale: float = 0.2
    x_corr: float = 0.3
    theta_sd: float = 2.0
    naive_jitter: float = 1e-6

    glm = ""  # set by subclasses (a class attribute, not a field)

    @property
    def cov(self) -> np.ndarray:
        """Known covariance of the features: x_scale² ((1 - ρ) I + ρ 11ᵀ)."""
        rho = self.x_corr
        return self.x_scale**2 * ((1.0 - rho) * np.eye(self.d) + rho * np.ones((self.d, self.d)))

    @property
    def m(self) -> int:
        return stat_dim(self.glm, self.d)

    @property
    def noise_sigma(self) -> float:
        """Gaussian noise scale of one release (on the sum, or on each record if ``local``)."""
        sens = ss_sensitivity(self.glm, self.R, self.Ry)
        return float(analytic_gaussian_sigma(self.epsilon, self.delta, sens))

    @property
    def noise_cov(self) -> np.ndarray:
        """Covariance of the total noise in z: σ² I (central) or n σ² I (local)."""
        scale = self.n if self.local else 1
        return scale * self.noise_sigma**2 * np.eye(self.m)

    @property
    def param_names(self):
        return tuple(f"theta[{j}]" for j in range(self.d))

    def prior_sd(self) -> dict:
        return {f"theta[{j}]": self.theta_sd for j in range(self.d)}

    # -- simulation --------------------------------------------------------------------------

    def _features(self, rng):
        chol = np.linalg.cholesky(self.cov)
        return rng.standard_normal((self.n, self.d)) @ chol.T

    def _draw(self, rng):
        """(truth, X, y): parameters from the prior, then clean records."""
        raise NotImplementedError

    def simulate(self, rng):
        truth, x, y = self._draw(rng)
        rel = release_sufficient_statistics(
            x, y, self.glm, self.epsilon, self.delta, rng, R=self.R, Ry=self.Ry, local=self.local
        )
        return truth, rel.z

    # -- model -------------------------------------------------------------------------------

    def _likelihood_kwargs(self, pm) -> dict:
        return {}

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from .distributions.sufficient import SSNormalApprox

        noise = self.noise_cov if noise_aware else self.naive_jitter * np.eye(self.m)
        with pm.Model() as model:
            z = pm.Data("reports", np.asarray(reports, dtype=float))
            theta = pm.Normal("theta", 0.0, self.theta_sd, shape=self.d)
            SSNormalApprox(
                "z",
                theta,
                self.cov,
                self.n,
                noise,
                self.glm,
                observed=z,
                **self._likelihood_kwargs(pm),
            )
        return model

    def extract(self, posterior, truth):
        post = np.asarray(posterior["theta"].values, dtype=float)
        return [(post[..., j], float(truth["theta"][j])) for j in range(self.d)]


@dataclasses.dataclass(frozen=True)
class LogisticSSSBC(_SufficientSBC):
    """Logistic regression, labels ±1, statistics [y x, t2(x)] (GLM paper Sec. 3.2)."""

    order: int | str = "quadrature"

    glm = "logistic"

    def _draw(self, rng):
        theta = rng.normal(0.0, self.theta_sd, self.d)
        x = self._features(rng)
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        y = np.where(rng.random(self.n) < p, 1.0, -1.0)
        return {"theta": theta}, x, y

    def _likelihood_kwargs(self, pm):
        return {"order": self.order}


@dataclasses.dataclass(frozen=True)
class PoissonSSSBC(_SufficientSBC):
    """Poisson regression with log link, statistics [x, t2(x), y x, y t2(x)]."""

    Ry: float = 10.0
    theta_sd: float = 1.0

    glm = "poisson"

    def _draw(self, rng):
        theta = rng.normal(0.0, self.theta_sd, self.d)
        x = self._features(rng)
        y = rng.poisson(np.exp(x @ theta)).astype(float)
        return {"theta": theta}, x, y


@dataclasses.dataclass(frozen=True)
class LinearSSSBC(_SufficientSBC):
    """Linear regression, statistics [t2(x), y x, y²] (LDP paper Sec. 3.1.1); σ has a prior."""

    Ry: float = 4.0
    theta_sd: float = 1.0
    sigma_sd: float = 0.5

    glm = "linear"

    @property
    def param_names(self):
        return (*super().param_names, "sigma")

    def prior_sd(self):
        return super().prior_sd() | {"sigma": self.sigma_sd * math.sqrt(1.0 - 2.0 / math.pi)}

    def _draw(self, rng):
        theta = rng.normal(0.0, self.theta_sd, self.d)
        sigma = abs(rng.normal(0.0, self.sigma_sd))
        x = self._features(rng)
        y = x @ theta + rng.normal(0.0, sigma, self.n)
        return {"theta": theta, "sigma": float(sigma)}, x, y

    def _likelihood_kwargs(self, pm):
        return {"sigma": pm.HalfNormal("sigma", self.sigma_sd)}

    def extract(self, posterior, truth):
        out = super().extract(posterior, truth)
        return [*out, (np.asarray(posterior["sigma"].values, dtype=float), truth["sigma"])]


KINDS = {"logistic": LogisticSSSBC, "poisson": PoissonSSSBC, "linear": LinearSSSBC}


# --------------------------------------------------------------------------------------------
# Side diagnostics: how often the release clips, how much the posterior contracts
# --------------------------------------------------------------------------------------------


def clip_rates(problem: _SufficientSBC, n_sims: int = 20, seed: int = 0) -> dict:
    """Fraction of rows with ‖x‖ > R and of responses outside the clipping range.

    Simulated exactly as in :meth:`simulate` (same prior, same features), before the release.
    """
    rng = np.random.default_rng(seed)
    rows = ys = total = 0
    for _ in range(n_sims):
        _, x, y = problem._draw(rng)
        rows += int(np.sum(np.linalg.norm(x, axis=1) > problem.R))
        if problem.glm == "poisson":
            ys += int(np.sum(y > problem.Ry))
        elif problem.glm == "linear":
            ys += int(np.sum(np.abs(y) > problem.Ry))
        total += len(y)
    return {"x_clipped": rows / total, "y_clipped": ys / total}


def posterior_contraction(
    problem: _SufficientSBC, n_fits: int = 4, seed: int = 1, draws: int = 300, tune: int = 300
) -> dict:
    """Mean over ``n_fits`` prior replicates of 1 - posterior var / prior var, per parameter.

    0: the data are ignored (posterior = prior); 1: the posterior is a point.
    """
    import warnings

    import nutpie

    rng = np.random.default_rng(seed)
    sd0 = problem.prior_sd()
    out = {k: [] for k in problem.param_names}
    compiled = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(n_fits):
            truth, z = problem.simulate(rng)
            if compiled is None:
                compiled = nutpie.compile_pymc_model(problem.build_model(z))
            tr = nutpie.sample(
                compiled.with_data(reports=z),
                draws=draws,
                tune=tune,
                chains=2,
                cores=1,
                seed=int(rng.integers(2**31 - 1)),
                progress_bar=False,
            )
            for name, (post, _) in zip(
                problem.param_names, problem.extract(tr.posterior, truth), strict=True
            ):
                out[name].append(1.0 - np.var(post) / sd0[name] ** 2)
    return {k: float(np.mean(v)) for k, v in out.items()}


# --------------------------------------------------------------------------------------------
# Grid and command line
# --------------------------------------------------------------------------------------------

SETTINGS = {
    "full": dict(
        n=10_000,
        epsilons=(0.1, 1.0),
        replicates=400,
        draws=500,
        tune=500,
        local_n=1_000_000,
        local_epsilons=(1.0,),
    ),
    "fast": dict(
        n=10_000,
        epsilons=(1.0,),
        replicates=4,
        draws=150,
        tune=150,
        local_n=1_000_000,
        local_epsilons=(1.0,),
    ),
}


def run_grid(
    kind: str,
    mode: str = "fast",
    *,
    n_jobs=None,
    seed=2026,
    noise_aware=True,
    local=False,
    replicates=None,
    d=2,
    contraction_fits=None,
):
    """SBC over the ε grid of ``SETTINGS[mode]`` for ``kind`` in {"logistic", "poisson", "linear"}.

    Returns one coverage table (rows: parameter × level × ε) with the design columns.
    """
    cfg = SETTINGS[mode]
    cls = KINDS[kind]
    n = cfg["local_n"] if local else cfg["n"]
    epsilons = cfg["local_epsilons"] if local else cfg["epsilons"]
    reps = replicates or cfg["replicates"]
    if contraction_fits is None:
        contraction_fits = 4 if mode == "full" else 1
    tables = []
    for eps in epsilons:
        problem = cls(n=n, d=d, epsilon=eps, local=local)
        t0 = time.time()
        res = simulation_based_calibration(
            problem,
            reps,
            noise_aware=noise_aware,
            seed=seed,
            n_jobs=n_jobs,
            draws=cfg["draws"],
            tune=cfg["tune"],
        )
        seconds = time.time() - t0
        tab = coverage_table(res.quantiles, DEFAULT_LEVELS, band_mass=0.99)
        tab["param"] = [res.param_names[i] for i in tab["param"]]
        tab.insert(0, "epsilon", eps)
        tab.insert(0, "release", "local" if local else "central")
        tab.insert(0, "model", kind + (" noise-aware" if noise_aware else " naive"))
        tab["n_records"] = n
        tab["noise_sd_total"] = float(np.sqrt(problem.noise_cov[0, 0]))
        tab["max_rhat"] = float(np.nanmax(res.max_rhat))
        tab["divergences"] = int(np.sum(res.divergences))
        ks = {name: ks_uniform(res.quantiles[:, j])[1] for j, name in enumerate(res.param_names)}
        tab["ks_p"] = [ks[p] for p in tab["param"]]
        rates = clip_rates(problem, seed=seed)
        tab["x_clipped"] = rates["x_clipped"]
        tab["y_clipped"] = rates["y_clipped"]
        if noise_aware and contraction_fits:
            con = posterior_contraction(problem, contraction_fits, seed=seed + 1)
            tab["contraction"] = [con[p] for p in tab["param"]]
        tab["seconds"] = seconds
        tables.append(tab)
        print(
            f"[{time.strftime('%H:%M:%S')}] {kind} {'aware' if noise_aware else 'naive'} "
            f"{'local' if local else 'central'} eps={eps}: {seconds:.0f} s",
            flush=True,
        )
    return pd.concat(tables, ignore_index=True)


def summary_table(tables: list[pd.DataFrame], level: float = 0.9) -> pd.DataFrame:
    """One row per (model, release, ε, parameter): coverage of the ``level`` interval."""
    tab = pd.concat(tables, ignore_index=True)
    tab = tab[np.isclose(tab["level"], level)]
    cols = ["model", "release", "epsilon", "param", "coverage", "band_lo", "band_hi", "inside"]
    extra = [c for c in ("ks_p", "contraction", "max_rhat", "divergences") if c in tab]
    return tab[cols + extra].reset_index(drop=True)


def _write(tab: pd.DataFrame, out: Path, name: str) -> None:
    tab.to_csv(out / f"{name}.csv", index=False)
    (out / f"{name}.md").write_text(tab.to_markdown(index=False, floatfmt=".3f") + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=sorted(SETTINGS), default="fast")
    ap.add_argument("--kinds", nargs="+", default=["logistic", "poisson"], choices=sorted(KINDS))
    ap.add_argument("--out", default="results/sbc_sufficient")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--replicates", type=int, default=None, help="override the mode's count")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive baseline")
    ap.add_argument(
        "--local",
        nargs="*",
        default=None,
        metavar="KIND",
        help="also run the local-DP (per-record noise) setting for these kinds",
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [(k, False) for k in args.kinds] + [(k, True) for k in (args.local or [])]
    for kind, local in runs:
        for aware in (True,) if args.no_naive else (True, False):
            tab = run_grid(
                kind,
                args.mode,
                n_jobs=args.jobs,
                noise_aware=aware,
                local=local,
                replicates=args.replicates,
            )
            name = f"{kind}_{'local_' if local else ''}{'aware' if aware else 'naive'}_{args.mode}"
            _write(tab, out, f"{name}_coverage")
            print(tab.to_string(index=False), flush=True)
            # every coverage table of this mode in ``out`` (also those of earlier invocations)
            files = sorted(out.glob(f"*_{args.mode}_coverage.csv"))
            _write(summary_table([pd.read_csv(f) for f in files]), out, f"summary90_{args.mode}")


if __name__ == "__main__":
    main()
