"""Registry entry for the truncated-normal (x, x^2) sums (Bernstein & Sheldon Sec. 3.3).

The registered class is the building block ``LaplaceNoisyTruncatedNormalGivenSum``: the
density of a released pair given its standard-normal latent ``z``, checked on an extreme grid
against ``tests/expfam_normal_reference.py`` (quadrature moments, quadrature convolution).  Its
draws are the release mechanism (they ignore ``z``), so the draw check compares moments of
20,000 simulated releases with the exact CLT mean and covariance (plus the Laplace noise);
a 4% change of ``mu`` must be detected.  The model-building helper
``LaplaceNoisyTruncatedNormal`` (which adds ``z``) is used for the model-level checks
(gradients, backends).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from expfam_normal_reference import clt_mean_cov, conditional_logpdf
from registry import VectorCase

from pymc_dpnoise.distributions.expfam_normal import (
    LaplaceNoisyTruncatedNormal,
    LaplaceNoisyTruncatedNormalGivenSum,
)
from pymc_dpnoise.mechanisms import release_truncated_normal_sum, truncated_normal_sum_sensitivity

_TYP = dict(n=400.0, mu=0.5, sigma=1.5, lower=-3.0, upper=4.0, z=0.3, epsilon=1.0)


def _scale(params):
    sens = params.get("sensitivity")
    if sens is None:
        sens = truncated_normal_sum_sensitivity(params["lower"], params["upper"])
    return float(sens) / float(params["epsilon"])


def _reference(value, n, mu, sigma, lower, upper, z, epsilon, sensitivity=None):
    beta = _scale(dict(lower=lower, upper=upper, epsilon=epsilon, sensitivity=sensitivity))
    value = np.asarray(value, float)
    out = [
        conditional_logpdf(v, float(z), float(n), mu, sigma, lower, upper, beta)
        for v in value.reshape(-1, 2)
    ]
    return np.reshape(out, value.shape[:-1])


def _grid():
    out = []
    settings = [
        # (mu, sigma, lower, upper): typical, far tails, tiny and huge sigma, collinear
        (0.5, 1.5, -3.0, 4.0),
        (-20.0, 1.0, -3.0, 4.0),
        (30.0, 0.5, -3.0, 4.0),
        (0.5, 1e-3, -3.0, 4.0),
        (0.5, 1e4, -3.0, 4.0),
        (100.0, 0.1, 50.0, 150.0),
        (0.0, 1.0, 0.0, 1e-3),
    ]
    for mu, sigma, lo, hi in settings:
        for n in (1.0, 300.0, 1e6):
            for eps in (0.01, 1.0, 100.0):
                for z in (-2.0, 0.7):
                    params = dict(n=n, mu=mu, sigma=sigma, lower=lo, upper=hi, z=z, epsilon=eps)
                    mean, cov = clt_mean_cov(n, mu, sigma, lo, hi)
                    b = _scale(params)
                    sd = np.sqrt(np.diag(cov) + 2 * b * b)
                    values = np.array(
                        [mean, mean + 3 * sd, mean - [50 * b, -2 * sd[1]], [-40 * b, 60 * b]]
                    )
                    out.append((values, params))
    return out


def _simulate(rng, params, n_reports):
    x = rng.normal(params["mu"], params["sigma"], size=(n_reports, int(params["n"])))
    rel = release_truncated_normal_sum(x, params["lower"], params["upper"], params["epsilon"], rng)
    return rel.value


def _draws_check(draws, params, logp_fn=None):
    """Mean (z-scores) and covariance (relative, with its sampling error) of the draws
    against the exact CLT moments plus the independent Laplace noise (variance 2 b^2)."""
    draws = np.asarray(draws, float).reshape(-1, 2)
    mean, cov = clt_mean_cov(params["n"], params["mu"], params["sigma"], params["lower"],
                             params["upper"])  # fmt: skip
    cov = cov + 2 * _scale(params) ** 2 * np.eye(2)
    n = len(draws)
    zs = (draws.mean(0) - mean) / np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(zs) < 4.5), f"mean z-scores {zs}"
    emp = np.cov(draws.T)
    # sd of a sample covariance entry ~ sqrt((c_ii c_jj + c_ij^2) / n) (normal theory; the
    # Laplace noise has excess kurtosis 3, hence the factor 2 margin)
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / n)
    assert np.all(np.abs(emp - cov) < 2 * 4.5 * se), f"cov {emp} vs {cov}"


def _model(data, settings):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        sigma = pm.HalfNormal("sigma", 3.0)
        LaplaceNoisyTruncatedNormal(
            "obs",
            n=_TYP["n"],
            mu=mu,
            sigma=sigma,
            lower=_TYP["lower"],
            upper=_TYP["upper"],
            epsilon=settings["epsilon"],
            observed=data,
        )
    return model


def _batch():
    params = dict(
        n=np.array([50.0, 400.0, 5000.0]),
        mu=np.array([0.0, 0.5, 2.0]),
        sigma=1.5,
        lower=-3.0,
        upper=np.array([4.0, 4.0, 6.0]),
        z=np.array([[0.1, -0.5, 1.0], [2.0, 0.0, -1.0]]),
        epsilon=np.array([[0.1], [2.0]]),
    )
    value = np.array(
        [[[3.0, 90.0], [180.0, 900.0], [9000.0, 30000.0]],
         [[-10.0, 120.0], [210.0, 950.0], [9500.0, 31000.0]]]
    )  # fmt: skip
    return params, value


_CORE = dict.fromkeys(("n", "mu", "sigma", "lower", "upper", "z", "epsilon", "sensitivity"), 0)

CASES = [
    VectorCase(
        name="laplace_noisy_truncated_normal",
        cls=LaplaceNoisyTruncatedNormalGivenSum,
        core_ndim=_CORE,
        event_ndim=1,
        typical=_TYP,
        reference=_reference,
        grid=_grid,
        simulate=_simulate,
        model=_model,
        model_settings=[{"epsilon": 0.05}, {"epsilon": 5.0}],
        bad_params=[
            ({"n": -1.0}, "n"),
            ({"n": 2.5}, "n"),
            ({"mu": np.inf}, "mu"),
            ({"sigma": 0.0}, "sigma"),
            ({"lower": 4.0}, "lower"),
            ({"upper": np.nan}, "upper"),
            ({"z": np.nan}, "z"),
            ({"epsilon": 0.0}, "epsilon"),
            ({"sensitivity": -1.0}, "sensitivity"),
        ],
        bad_observed=[],
        batch_example=_batch,
        # at n = 1e6 and a Laplace scale of 0.2 the logp moves by n / scale = 5e6 per unit of
        # the truncated mean: its 1e-15 relative rounding is then visible at 3e-9
        rtol=1e-8,
        draws_check=_draws_check,
        shifted={"mu": 0.52},
        n_model=10,
    ),
]
