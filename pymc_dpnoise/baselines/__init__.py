"""Comparison methods from the papers.

* :func:`naive_normal` and :func:`naive_exponential` — the models a user writes when the
  noise is ignored: privatised reports are treated as if they were the clean values.  They
  are the "naive" curves in the calibration comparisons (LDP paper Fig. 1): their posteriors
  concentrate on the wrong values as ε shrinks.
* :func:`latent_clipped_normal_model` — the model a PyMC user writes *without* this package
  for clipped Gaussian LDP data: one latent clean value per report, ``pm.Laplace`` on the
  clipped latent.  Correct, but it has N extra parameters; used in the benchmarks.
* :func:`dp_sgld` — DP stochastic gradient Langevin dynamics for logistic and Poisson
  regression with an RDP accountant (the GLM paper's private baseline).
* :func:`ldp_sgd` — LDP-SGD, the LDP paper's private regression baseline.
* :func:`naive_posterior`, :func:`ops_binomial`, :func:`gibbs_binomial`,
  :func:`gibbs_poisson` and :func:`gibbs_truncated_exponential` — Bernstein & Sheldon's
  comparison methods for Laplace-noised sufficient statistics (naive conjugate update, one-
  posterior sampling, and a corrected re-implementation of their Gibbs samplers).
* :func:`least_squares` and :func:`logistic_mle` — the non-private reference fits.
* :func:`naive_counterpart` and :func:`naive_model` — the noise-ignoring counterpart of any of
  our distributions in one call, and a copy of a model with every observed variable of ours
  replaced by it (:mod:`pymc_dpnoise.baselines.naive` says when ``az.compare`` between the
  two is meaningful).
"""

from .clipped import (
    latent_clipped_normal_model,
    naive_exponential,
    naive_normal,
)
from .expfam import (
    conjugate_posterior,
    gibbs_binomial,
    gibbs_poisson,
    gibbs_truncated_exponential,
    naive_posterior,
    ops_binomial,
)
from .frequency import naive_histogram, projected_estimate, rounded_counts
from .naive import DifferentDataWarning, NaiveCounterpart, naive_counterpart, naive_model
from .nonprivate import least_squares, logistic_mle
from .regression import ldp_sgd, ldp_sgd_group_size
from .sufficient import dp_sgld

__all__ = [
    "DifferentDataWarning",
    "NaiveCounterpart",
    "conjugate_posterior",
    "dp_sgld",
    "gibbs_binomial",
    "gibbs_poisson",
    "gibbs_truncated_exponential",
    "latent_clipped_normal_model",
    "ldp_sgd",
    "ldp_sgd_group_size",
    "least_squares",
    "logistic_mle",
    "naive_counterpart",
    "naive_exponential",
    "naive_histogram",
    "naive_model",
    "naive_normal",
    "naive_posterior",
    "ops_binomial",
    "projected_estimate",
    "rounded_counts",
]
