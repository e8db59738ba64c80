"""The workflow rows of the registry (``tests/registry.py``): for each public distribution, the
hierarchical model that ``distributions/test_workflows.py`` runs through every PyMC workflow and
``scripts/workflow_table.py`` turns into ``docs/workflows.rst`` (rows in this order)."""

from __future__ import annotations

import numpy as np
import pymc as pm
from registry import Workflow

from pymc_dpnoise import distributions as dists
from pymc_dpnoise import noise

K = 4  # items of the frequency oracles
D = 2  # features of the regressions / sufficient statistics
SS_M = 5  # released statistics of SSNormalApprox with d = 2
SS_COV = np.array([[0.09, 0.02], [0.02, 0.05]])
REG_COV = np.array([[1.0, 0.3], [0.3, 0.5]])


# --------------------------------------------------------------------------------------------
# Rows: one spec per distribution
# --------------------------------------------------------------------------------------------


def _group_effect(name, dims=("group",), scale=0.5):
    """Non-centred group effects: sd * z, with z ~ N(0, 1) of the given dims."""
    sd = pm.HalfNormal("sd", scale)
    z = pm.Normal(f"z_{name}", 0.0, 1.0, dims=dims)
    return sd * z


def _simplex_params(g):
    """Logistic-normal hierarchical prior on each group's item frequencies."""
    mu = pm.Normal("mu", 0.0, 1.0, dims="item")
    p = pm.Deterministic(
        "p",
        pm.math.softmax(mu + _group_effect("p", ("group", "item")), axis=-1),
        dims=("group", "item"),
    )
    return dict(p=p[g])


def _binomial_params(g):
    mu = pm.Normal("mu", 0.0, 1.0)
    p = pm.Deterministic("p", pm.math.invlogit(mu + _group_effect("p")), dims="group")
    return dict(p=p[g])


def _poisson_params(g):
    mu = pm.Normal("mu", np.log(20.0), 0.3)
    rate = pm.Deterministic("rate", pm.math.exp(mu + _group_effect("rate")), dims="group")
    return dict(mu=rate[g])


def _clipped_normal_params(g):
    mu = pm.Normal("mu", 0.0, 1.0)
    loc = pm.Deterministic("loc", mu + _group_effect("loc"), dims="group")
    sigma = pm.HalfNormal("sigma", 1.0)
    return dict(mu=loc[g], sigma=sigma)


def _clipped_exponential_params(g):
    mu = pm.Normal("mu", 0.0, 0.5)
    lam = pm.Deterministic("lam", pm.math.exp(mu + _group_effect("lam")), dims="group")
    return dict(lam=lam[g])


def _theta_params(g):
    mu = pm.Normal("mu", 0.0, 1.0, dims="coef")
    theta = pm.Deterministic(
        "theta", mu + _group_effect("theta", ("group", "coef")), dims=("group", "coef")
    )
    return dict(theta=theta[g])


def _linreg_params(g):
    return dict(_theta_params(g), sigma=pm.HalfNormal("sigma", 1.0))


def _rate_params(name, key, loc, scale):
    """A positive rate per group, log-normal around ``exp(loc)``: params(g) -> {key: rate[g]}."""

    def params(g):
        mu = pm.Normal("mu", loc, scale)
        rate = pm.Deterministic(name, pm.math.exp(mu + _group_effect(name)), dims="group")
        return {key: rate[g]}

    return params


def _summary_params(_g):
    return dict(mu=pm.Normal("mu", 0.0, 2.0), sigma=pm.Gamma("sigma", 2.0, 1.0))


def _summary_exp_params(_g):
    return dict(lam=pm.Gamma("lam", 2.0, 2.0))


def _linreg_summary_params(_g):
    theta = pm.Normal("theta", 0.0, 1.0, dims="coef")
    return dict(theta=theta, sigma=pm.HalfNormal("sigma", 1.0))


def _linreg_scatter(theta, sigma, cov, sigma_x, sigma_y):
    """Covariance C of one report row [z_x, z_y] (x ~ N(0, cov), y = theta'x + N(0, sigma^2))."""
    c = np.empty((len(theta) + 1,) * 2)
    c[:-1, :-1] = cov + np.diag(np.broadcast_to(np.square(sigma_x), len(theta)))
    c[:-1, -1] = c[-1, :-1] = cov @ theta
    c[-1, -1] = theta @ cov @ theta + sigma**2 + sigma_y**2
    return c


def _truncated_spec(cls, param, value, upper, group_name):
    """A truncated-sum row: n = 30 records, bounds [0, upper], epsilon = 1, the rate per group."""
    fixed = dict(n=30.0, lower=0.0, upper=upper, epsilon=1.0)
    return Workflow(
        cls.__name__,
        cls,
        # every rv_op input in order (n, rate, lower, upper, epsilon, sensitivity = upper)
        dict(n=30.0, **{param: value}, lower=0.0, upper=upper, epsilon=1.0, sensitivity=upper),
        (),
        params=_rate_params(group_name, param, np.log(value), 0.3),
        fixed=fixed,
        rv_params="typical",
    )


P4 = np.array([0.4, 0.3, 0.2, 0.1])
ITEM = {"item": range(K)}
LINREG_SUMMARY = dict(
    theta=np.array([1.0, -0.5]),
    sigma=0.3,
    cov=REG_COV,
    sigma_x=np.array([0.5, 0.5]),
    sigma_y=0.4,
    n=400.0,
)

SPECS = [
    Workflow(
        "KRRLikelihood",
        dists.KRRLikelihood,
        dict(p=P4, epsilon=1.0),
        (),
        params=_simplex_params,
        fixed=dict(epsilon=1.0),
        coords=ITEM,
        rv_params=dict(p=P4, epsilon=1.0, counts=1.0),
        support_point=(dict(p=P4, epsilon=1.0), 0),
    ),
    Workflow(
        "OUELikelihood",
        dists.OUELikelihood,
        dict(p=P4, epsilon=1.0),
        (K,),
        ("item",),
        _simplex_params,
        dict(epsilon=1.0),
        ITEM,
        rv_params=dict(p=P4, epsilon=1.0, counts=1.0),
        # E[z_j] = b + (1/2 - b) p_j < 1/2 for every j: the most likely report has no ones
        support_point=(dict(p=P4, epsilon=1.0), np.zeros(K, dtype="int8")),
    ),
    Workflow(
        "SUELikelihood",
        dists.SUELikelihood,
        dict(p=P4, epsilon=1.0),
        (K,),
        ("item",),
        _simplex_params,
        dict(epsilon=1.0),
        ITEM,
        rv_params=dict(p=P4, epsilon=1.0, counts=1.0),
    ),
    Workflow(
        "UnaryEncodingLikelihood",
        dists.UnaryEncodingLikelihood,
        dict(p=P4, keep_prob=0.8, flip_prob=0.25),
        (K,),
        ("item",),
        _simplex_params,
        dict(keep_prob=0.8, flip_prob=0.25),
        ITEM,
        rv_params=dict(p=P4, keep_prob=0.8, flip_prob=0.25, counts=1.0),
        # E[z_j] = 0.25 + 0.55 p_j > 1/2 only for p_j > 5/11: no bit for P4
        support_point=(
            dict(p=np.array([0.7, 0.1, 0.1, 0.1]), keep_prob=0.8, flip_prob=0.25),
            np.array([1, 0, 0, 0], dtype="int8"),
        ),
    ),
    Workflow(
        "LaplaceNoisyBinomial",
        dists.LaplaceNoisyBinomial,
        dict(n=40.0, p=0.3, epsilon=0.8, sensitivity=1.0),
        (),
        params=_binomial_params,
        fixed=dict(n=40.0, epsilon=0.8, sensitivity=1.0),
        # a constructor of NoisyBinomial(noise=Laplace(sensitivity / epsilon)): its op's inputs
        rv_params=dict(n=40.0, p=0.3, scale=1.25, lower=-np.inf, upper=np.inf),
    ),
    Workflow(
        "LaplaceNoisyPoisson",
        dists.LaplaceNoisyPoisson,
        dict(mu=20.0, epsilon=1.0, sensitivity=2.0),
        (),
        params=_poisson_params,
        fixed=dict(epsilon=1.0, sensitivity=2.0),
        # NoisyPoisson(noise=Laplace(sensitivity / epsilon)): its op's inputs
        rv_params=dict(mu=20.0, scale=2.0, lower=-np.inf, upper=np.inf),
    ),
    Workflow(
        # an OpenDP-style release: discrete Gaussian noise, censored at 0 (unsigned cast)
        "NoisyBinomial",
        dists.NoisyBinomial,
        dict(n=40.0, p=0.3, noise=noise.DiscreteGaussian(3.0), lower=0),
        (),
        params=_binomial_params,
        fixed=dict(n=40.0, noise=noise.DiscreteGaussian(3.0), lower=0),
        rv_params=dict(n=40.0, p=0.3, sigma=3.0, lower=0.0, upper=np.inf),
    ),
    Workflow(
        # a python-dp Count: rounded Laplace noise, no clamp
        "NoisyPoisson",
        dists.NoisyPoisson,
        dict(mu=20.0, noise=noise.RoundedLaplace(2.0)),
        (),
        params=_poisson_params,
        fixed=dict(noise=noise.RoundedLaplace(2.0)),
        rv_params=dict(mu=20.0, scale=2.0, lower=-np.inf, upper=np.inf),
    ),
    _truncated_spec(dists.LaplaceNoisyTruncatedExponential, "lam", 0.5, 5.0, "lam"),
    _truncated_spec(dists.LaplaceNoisyTruncatedPoisson, "mu", 3.0, 8.0, "rate"),
    Workflow(
        # a model-building helper (no .dist()): with n = 20 and epsilon = 1 the noise variance
        # 8 exceeds n / 4, so latent="auto" adds the latent counts `obs_counts_z` (dims
        # report x item_free)
        "LaplaceNoisyMultinomial",
        dists.LaplaceNoisyMultinomial,
        dict(n=20.0, p=P4, epsilon=1.0),
        (K,),
        ("item",),
        _simplex_params,
        dict(n=20.0, epsilon=1.0),
        ITEM,
    ),
    Workflow(
        # a model-building helper (no .dist()): one latent `obs_sum_z` per release (dims
        # report); 100 records per release inside [-5, 5] (sensitivity 30.25), epsilon = 0.5,
        # so the noise (scale 60.5) dominates the sampling spread of the sums.  The priors
        # (mu ~ N(0, 1), sigma ~ HalfNormal(1)) keep the bulk inside the bounds and rule out the
        # secondary mode beyond a bound (see the class docstring), so no initvals are needed.
        "LaplaceNoisyTruncatedNormal",
        dists.LaplaceNoisyTruncatedNormal,
        dict(n=100.0, mu=0.5, sigma=1.5, lower=-5.0, upper=5.0, epsilon=0.5),
        (2,),
        ("stat",),
        _clipped_normal_params,
        dict(n=100.0, lower=-5.0, upper=5.0, epsilon=0.5),
        {"stat": ["sum_x", "sum_x2"]},
    ),
    Workflow(
        "LaplacePerturbedClippedNormal",
        dists.LaplacePerturbedClippedNormal,
        dict(mu=0.5, sigma=1.5, lower=-3.0, upper=3.0, epsilon=1.0),
        (),
        params=_clipped_normal_params,
        fixed=dict(lower=-3.0, upper=3.0, epsilon=1.0),
        rv_params="typical",
    ),
    Workflow(
        "LaplacePerturbedClippedExponential",
        dists.LaplacePerturbedClippedExponential,
        dict(lam=0.5, upper=5.0, epsilon=1.0),
        (),
        params=_clipped_exponential_params,
        fixed=dict(upper=5.0, epsilon=1.0),
        rv_params="typical",
    ),
    Workflow(
        "PerturbedLinReg",
        dists.PerturbedLinReg,
        dict(theta=np.array([1.0, -0.5]), sigma=0.3, cov=REG_COV, sigma_x=0.5, sigma_y=0.4),
        (D + 1,),
        ("column",),
        _linreg_params,
        dict(cov=REG_COV, sigma_x=0.5, sigma_y=0.4),
        {"coef": range(D), "column": range(D + 1)},
    ),
    Workflow(
        "PerturbedLogReg",
        dists.PerturbedLogReg,
        dict(theta=np.array([1.5, -1.0]), cov=REG_COV, sigma_x=0.5, epsilon_y=1.0),
        (D + 1,),
        ("column",),
        _theta_params,
        dict(cov=REG_COV, sigma_x=0.5, epsilon_y=1.0),
        {"coef": range(D), "column": range(D + 1)},
    ),
    Workflow(
        "SSNormalApprox",
        dists.SSNormalApprox,
        dict(
            theta=np.array([0.8, -0.5]),
            cov=SS_COV,
            n=2000.0,
            noise_cov=4.5 * np.eye(SS_M),
            glm="logistic",
        ),
        (SS_M,),
        ("stat",),
        _theta_params,
        dict(cov=SS_COV, n=2000.0, noise_cov=4.5 * np.eye(SS_M), glm="logistic"),
        {"coef": range(D), "stat": range(SS_M)},
    ),
    Workflow(
        "LaplacePerturbedClippedNormalSummary",
        dists.LaplacePerturbedClippedNormalSummary,
        dict(mu=0.5, sigma=1.5, lower=-3.0, upper=3.0, epsilon=1.0, n=400, n_bins=6),
        (8, 4),
        ("row", "field"),
        _summary_params,
        dict(),
        do=("mu", 1.0),
    ),
    Workflow(
        "LaplacePerturbedClippedExponentialSummary",
        dists.LaplacePerturbedClippedExponentialSummary,
        dict(lam=0.5, upper=5.0, epsilon=1.0, n=400, n_bins=6),
        (8, 4),
        ("row", "field"),
        _summary_exp_params,
        dict(),
        do=("lam", 1.0),
    ),
    Workflow(
        "PerturbedLinRegSummary",
        dists.PerturbedLinRegSummary,
        LINREG_SUMMARY,
        (D + 1, D + 1),
        ("column", "column_t"),
        _linreg_summary_params,
        dict(),
        {"coef": range(D)},
        rv_params="typical",
        do=("sigma", 0.3),
        # E[S] = N C, C the covariance of one report row, computed here from the model
        support_point=(
            LINREG_SUMMARY,
            LINREG_SUMMARY["n"]
            * _linreg_scatter(**{k: v for k, v in LINREG_SUMMARY.items() if k != "n"}),
        ),
    ),
]
SUMMARIES = {
    "LaplacePerturbedClippedNormalSummary",
    "LaplacePerturbedClippedExponentialSummary",
    "PerturbedLinRegSummary",
}
#: model-building helpers: called inside a model (they add a latent variable), no ``.dist()``
HELPERS = {"LaplaceNoisyMultinomial", "LaplaceNoisyTruncatedNormal"}
BY_NAME = {s.name: s for s in SPECS}
