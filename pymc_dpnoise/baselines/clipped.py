"""Baselines for the clipped Gaussian and clipped exponential reports."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = ["latent_clipped_normal_model", "naive_exponential", "naive_normal"]


def naive_normal(name, mu, sigma, observed, **kwargs):
    """Noise-ignoring likelihood: ``observed ~ Normal(mu, sigma)`` as if reports were clean.

    Must be called inside a model context; returns the observed variable.
    """
    return pm.Normal(name, mu=mu, sigma=sigma, observed=observed, **kwargs)


def naive_exponential(name, lam, observed, floor=1e-6, **kwargs):
    """Noise-ignoring likelihood for exponential data: ``max(z, floor) ~ Exponential(lam)``.

    Laplace-perturbed reports can be negative, which an exponential likelihood cannot
    explain; the naive analyst's closest usable model floors them at ``floor`` (a tiny
    positive value) and otherwise treats them as clean.  Returns the likelihood term added
    with :func:`pymc.Potential` (the floored data are a deterministic function of the reports).
    """
    z = pt.maximum(pt.as_tensor_variable(observed), floor)
    logp = pm.logp(pm.Exponential.dist(lam=lam), z)
    return pm.Potential(name, logp.sum(), **kwargs)


def latent_clipped_normal_model(
    reports, lower, upper, epsilon, *, mu0=0.0, sd0=1.0, alpha=4.0, beta=2.0
):
    """The clipped-Gaussian LDP model written without this package (one latent per report).

    ``x_i ~ Normal(mu, sigma)``, ``z_i ~ Laplace(clip(x_i, lower, upper), (upper-lower)/epsilon)``.
    The posterior of ``(mu, sigma)`` is the same as with
    :class:`~pymc_dpnoise.LaplacePerturbedClippedNormal`, but NUTS has to explore N + 2
    dimensions (and the clip makes the latent posterior flat outside the bounds).
    """
    z = np.asarray(reports, dtype=float)
    with pm.Model() as model:
        mu = pm.Normal("mu", mu0, sd0)
        sigma = pm.Gamma("sigma", alpha, beta)
        x = pm.Normal("x", mu, sigma, shape=z.shape)
        pm.Laplace("z", pm.math.clip(x, lower, upper), (upper - lower) / epsilon, observed=z)
    return model
