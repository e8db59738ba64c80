"""Simulation-based calibration of the perturbed-input regression models (LDP paper §3.2.3).

Two :class:`~pymc_dpnoise.diagnostics.SBCProblem` subclasses, used with
:func:`~pymc_dpnoise.diagnostics.simulation_based_calibration`:

* :class:`PerturbedLinRegSBC`: θ ~ N(0, theta_sd² I), σ ~ HalfNormal(sigma_sd), Σ = diag(τ) Ω
  diag(τ) with Ω ~ LKJ(2), τ ~ HalfNormal(tau_sd) (the paper's scaled LKJ prior, Supplement 8,
  built by :func:`~pymc_dpnoise.priors.scaled_lkj_cov`, which samples τ and Ω separately:
  ``pm.LKJCholeskyCov`` under-covered τ₁);
  reports from :class:`~pymc_dpnoise.distributions.regression.PerturbedLinReg`'s generative
  model with the Gaussian-mechanism noise levels of budget ε (R = 1, R_y = 2, c = 0.5, δ).
* :class:`PerturbedLogRegSBC`: the same features and θ prior, labels through randomized
  response with budget cε.

The clean data are *not* clipped: SBC checks the model under its own assumptions (the noise
scales are those of the clipped mechanism at ε, which is what the models are given).  The
naive model (``noise_aware=False``) treats the noisy features as the clean ones (and, for the
logistic model, the reported labels as the true ones).

Command line (tables in ``results/sbc_regression``)::

    python -m pymc_dpnoise.experiments_regression --mode fast
"""

from __future__ import annotations

import argparse
import dataclasses
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
from .mechanisms.core import analytic_gaussian_sigma
from .mechanisms.regression import split_epsilon
from .priors import scaled_lkj_cov

__all__ = ["PerturbedLinRegSBC", "PerturbedLogRegSBC", "lkj_corr_draw", "main", "run_grid"]


def lkj_corr_draw(rng: np.random.Generator, d: int, eta: float = 2.0) -> np.ndarray:
    """One LKJ(η) correlation matrix by the onion method (Lewandowski et al. 2009, §3.2)."""
    if d == 1:
        return np.ones((1, 1))
    beta = eta + (d - 2) / 2.0
    r12 = 2.0 * rng.beta(beta, beta) - 1.0
    R = np.array([[1.0, r12], [r12, 1.0]])
    for k in range(2, d):
        beta -= 0.5
        y = rng.beta(k / 2.0, beta)
        u = rng.normal(size=k)
        u /= np.linalg.norm(u)
        w = np.sqrt(y) * u
        A = np.linalg.cholesky(R)
        z = A @ w
        R = np.block([[R, z[:, None]], [z[None, :], np.ones((1, 1))]])
    return R


@dataclasses.dataclass(frozen=True)
class _RegressionSBC(SBCProblem):
    d: int = 2
    epsilon: float = 1.0
    delta: float = 1e-5
    c: float = 0.5
    R: float = 1.0
    theta_sd: float = 2.0
    tau_sd: float = 1.0

    @property
    def sigma_x(self) -> float:
        eps_x, _ = split_epsilon(self.epsilon, self.c)
        return float(analytic_gaussian_sigma(eps_x, self._delta_x, 2.0 * self.R))

    def _prior_draw(self, rng):
        theta = rng.normal(0.0, self.theta_sd, self.d)
        tau = np.abs(rng.normal(0.0, self.tau_sd, self.d))
        omega = lkj_corr_draw(rng, self.d, 2.0)
        cov = omega * np.outer(tau, tau)
        return theta, tau, cov

    def _features(self, rng, cov):
        x = rng.multivariate_normal(np.zeros(self.d), cov, size=self.n)
        return x, x + rng.normal(0.0, self.sigma_x, size=x.shape)

    def _truth(self, theta, tau):
        out = {f"theta_{j}": float(theta[j]) for j in range(self.d)}
        out.update({f"tau_{j}": float(tau[j]) for j in range(self.d)})
        return out

    def _priors(self, pm):
        theta = pm.Normal("theta", 0.0, self.theta_sd, shape=self.d)
        for j in range(self.d):
            pm.Deterministic(f"theta_{j}", theta[j])
        chol, tau, _ = scaled_lkj_cov("cov", self.d, eta=2.0, tau_sigma=self.tau_sd)
        for j in range(self.d):
            pm.Deterministic(f"tau_{j}", tau[j])
        return theta, chol


@dataclasses.dataclass(frozen=True)
class PerturbedLinRegSBC(_RegressionSBC):
    """Perturbed-input linear regression (LDP Fig. 4's input model), simulated from the prior."""

    R_y: float = 2.0
    sigma_sd: float = 1.0

    @property
    def _delta_x(self):
        return 0.5 * self.delta

    @property
    def sigma_y(self) -> float:
        _, eps_y = split_epsilon(self.epsilon, self.c)
        return float(analytic_gaussian_sigma(eps_y, 0.5 * self.delta, 2.0 * self.R_y))

    @property
    def param_names(self):
        return (
            *(f"theta_{j}" for j in range(self.d)),
            "sigma",
            *(f"tau_{j}" for j in range(self.d)),
        )

    def simulate(self, rng):
        theta, tau, cov = self._prior_draw(rng)
        sigma = abs(rng.normal(0.0, self.sigma_sd))
        x, zx = self._features(rng, cov)
        y = x @ theta + rng.normal(0.0, sigma, self.n)
        zy = y + rng.normal(0.0, self.sigma_y, self.n)
        truth = self._truth(theta, tau) | {"sigma": float(sigma)}
        return truth, np.column_stack([zx, zy])

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from .distributions.regression import PerturbedLinReg

        with pm.Model() as model:
            z = pm.Data("reports", np.asarray(reports, dtype=float))
            theta, chol = self._priors(pm)
            sigma = pm.HalfNormal("sigma", self.sigma_sd)
            cov = chol @ chol.T
            if noise_aware:
                PerturbedLinReg(
                    "z",
                    theta=theta,
                    sigma=sigma,
                    cov=cov,
                    sigma_x=self.sigma_x,
                    sigma_y=self.sigma_y,
                    observed=z,
                )
            else:  # noisy features and responses taken as clean
                pm.MvNormal("zx", mu=np.zeros(self.d), chol=chol, observed=z[:, : self.d])
                pm.Normal("zy", mu=z[:, : self.d] @ theta, sigma=sigma, observed=z[:, self.d])
        return model


@dataclasses.dataclass(frozen=True)
class PerturbedLogRegSBC(_RegressionSBC):
    """Perturbed-input logistic regression (LDP Fig. 5's input model), simulated from the prior."""

    approximation: str = "quadrature"

    @property
    def _delta_x(self):
        return self.delta

    @property
    def epsilon_y(self) -> float:
        return split_epsilon(self.epsilon, self.c)[1]

    @property
    def param_names(self):
        return (*(f"theta_{j}" for j in range(self.d)), *(f"tau_{j}" for j in range(self.d)))

    def simulate(self, rng):
        from .mechanisms.core import randomized_response

        theta, tau, cov = self._prior_draw(rng)
        x, zx = self._features(rng, cov)
        y = (rng.random(self.n) < 1.0 / (1.0 + np.exp(-(x @ theta)))).astype(int)
        zy = randomized_response(y, self.epsilon_y, rng)
        return self._truth(theta, tau), np.column_stack([zx, zy.astype(float)])

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from .distributions.regression import PerturbedLogReg

        with pm.Model() as model:
            z = pm.Data("reports", np.asarray(reports, dtype=float))
            theta, chol = self._priors(pm)
            cov = chol @ chol.T
            if noise_aware:
                PerturbedLogReg(
                    "z",
                    theta=theta,
                    cov=cov,
                    sigma_x=self.sigma_x,
                    epsilon_y=self.epsilon_y,
                    approximation=self.approximation,
                    observed=z,
                )
            else:
                pm.MvNormal("zx", mu=np.zeros(self.d), chol=chol, observed=z[:, : self.d])
                pm.Bernoulli("zy", logit_p=z[:, : self.d] @ theta, observed=z[:, self.d])
        return model


SETTINGS = {
    "full": dict(n=1000, epsilons=(0.5, 2.0, 8.0), replicates=100, draws=400, tune=400),
    "fast": dict(n=300, epsilons=(1.0, 8.0), replicates=6, draws=150, tune=150),
}


def run_grid(
    kind: str,
    mode: str = "fast",
    *,
    n_jobs=None,
    seed=2026,
    noise_aware=True,
    d=2,
    save_replicates=None,
    epsilons=None,
):
    """SBC over the ε grid of ``SETTINGS[mode]`` for ``kind`` in {"linear", "logistic"}.

    The same ``seed`` gives the same prior draws (truths) at every ε, so the cells of one grid
    are not independent.  ``save_replicates``, a directory, keeps the per-replicate quantiles,
    truths, R-hat and divergences (``{kind}_{aware|naive}_eps{ε}_seed{seed}.npz``) for
    diagnosis.  ``epsilons`` overrides the grid.
    """
    cfg = SETTINGS[mode]
    cls = {"linear": PerturbedLinRegSBC, "logistic": PerturbedLogRegSBC}[kind]
    tables = []
    for eps in cfg["epsilons"] if epsilons is None else epsilons:
        problem = cls(n=cfg["n"], d=d, epsilon=eps)
        t0 = time.time()
        res = simulation_based_calibration(
            problem,
            cfg["replicates"],
            noise_aware=noise_aware,
            seed=seed,
            n_jobs=n_jobs,
            draws=cfg["draws"],
            tune=cfg["tune"],
        )
        if save_replicates is not None:
            tag = "aware" if noise_aware else "naive"
            np.savez_compressed(
                Path(save_replicates) / f"{kind}_{tag}_eps{eps:g}_seed{seed}.npz",
                param_names=np.array(res.param_names),
                quantiles=res.quantiles,
                truths=res.truths,
                max_rhat=res.max_rhat,
                divergences=res.divergences,
            )
        tab = coverage_table(res.quantiles, DEFAULT_LEVELS, band_mass=0.99)
        tab["param"] = [res.param_names[i] for i in tab["param"]]
        tab["epsilon"] = eps
        tab["model"] = kind + (" noise-aware" if noise_aware else " naive")
        tab["max_rhat"] = float(np.nanmax(res.max_rhat))
        tab["divergences"] = int(np.sum(res.divergences))
        ks = {name: ks_uniform(res.quantiles[:, j])[1] for j, name in enumerate(res.param_names)}
        tab["ks_p"] = [ks[p] for p in tab["param"]]
        tab["seconds"] = time.time() - t0
        tables.append(tab)
    return pd.concat(tables, ignore_index=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=sorted(SETTINGS), default="fast")
    ap.add_argument("--kinds", nargs="+", default=["linear", "logistic"])
    ap.add_argument("--out", default="results/sbc_regression")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--epsilons", type=float, nargs="+", default=None)
    ap.add_argument("--naive", action="store_true", help="also run the naive models")
    ap.add_argument(
        "--only-naive", action="store_true", help="run only the naive (noise-ignoring) models"
    )
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for kind in args.kinds:
        variants = (False,) if args.only_naive else (True, False) if args.naive else (True,)
        for aware in variants:
            tab = run_grid(
                kind,
                args.mode,
                n_jobs=args.jobs,
                noise_aware=aware,
                seed=args.seed,
                epsilons=args.epsilons,
                save_replicates=out,
            )
            name = f"{kind}_{'aware' if aware else 'naive'}_{args.mode}"
            if args.seed != 2026 or args.epsilons is not None:
                name += f"_seed{args.seed}"
            tab.to_csv(out / f"{name}_coverage.csv", index=False)
            (out / f"{name}_coverage.md").write_text(tab.to_markdown(index=False, floatfmt=".3f"))
            print(tab.to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
