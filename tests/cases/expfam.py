"""Registry entries for the truncated-family noisy sums (Bernstein & Sheldon Sec. 3.3).

The reference (``tests/expfam_reference.py``) recomputes the random-sum CLT density with SciPy
quadrature (truncated moments and the normal--Laplace convolution), so the grid checks the
implementation of the approximation to 1e-9.  How good the approximation itself is (against
Monte Carlo of the exact mechanism) is measured in ``tests/distributions/test_expfam.py``.  The draws are the
exact mechanism (n records, truncation, sum, Laplace); at the typical settings the CLT is
accurate enough that a KS test with 20,000 draws against the approximate CDF does not reject,
while a 10% change of the rate is rejected.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from expfam_reference import truncated_logp
from registry import VectorCase
from scipy import stats

from pymc_dpnoise.distributions.expfam import (
    LaplaceNoisyTruncatedExponential,
    LaplaceNoisyTruncatedPoisson,
)
from pymc_dpnoise.math.expfam import truncated_exponential_moments, truncated_poisson_moments
from pymc_dpnoise.mechanisms.expfam import release_truncated_sum

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(120)
_GH_W = _GH_W / _GH_W.sum()


def _reference(kind):
    def ref(value, n, lower, upper, epsilon, sensitivity=None, **theta):
        (theta,) = theta.values()
        out = [
            truncated_logp(kind, v, float(n), float(theta), float(lower), float(upper),
                           float(epsilon), None if sensitivity is None else float(sensitivity))
            for v in np.ravel(value)
        ]  # fmt: skip
        return np.reshape(out, np.shape(value))

    return ref


def _approx_cdf(kind, params):
    """CDF of N(m, V) + Laplace(b): Gauss-Hermite over the normal, exact Laplace CDF."""
    moments = truncated_exponential_moments if kind == "exponential" else truncated_poisson_moments
    theta = params["lam"] if kind == "exponential" else params["mu"]
    log_q, mu, var = (float(x.eval()) for x in moments(theta, params["lower"], params["upper"]))
    q, n = np.exp(log_q), params["n"]
    m, v = n * q * mu, n * q * var + n * q * (1 - q) * mu**2
    b = max(params["lower"], params["upper"]) / params["epsilon"]
    s = m + np.sqrt(v) * _GH_X

    def cdf(y):
        return np.sum(_GH_W * stats.laplace.cdf(np.asarray(y)[..., None] - s, scale=b), axis=-1)

    return cdf


def _draws_check(kind):
    def check(draws, params, logp_fn=None):
        p = stats.kstest(np.ravel(draws), _approx_cdf(kind, params)).pvalue
        assert p > 1e-3, f"KS p = {p:.2e}"

    return check


# --------------------------------------------------------------------------------------------
# Exponential
# --------------------------------------------------------------------------------------------

_TYP_E = dict(n=500.0, lam=0.5, lower=0.0, upper=8.0, epsilon=0.5)


def _grid(kind):
    if kind == "exponential":
        thetas, bounds = (1e-3, 0.5, 30.0), ((0.0, 8.0), (1.0, 1.05), (2.0, 50.0))
        moments = truncated_exponential_moments
    else:
        thetas, bounds = (1e-3, 3.0, 400.0), ((0.0, 10.0), (2.0, 2.0), (5.0, 60.0))
        moments = truncated_poisson_moments
    out = []
    for theta in thetas:
        for lo, hi in bounds:
            log_q, mu, var = (float(x.eval()) for x in moments(theta, lo, hi))
            q = np.exp(log_q)
            for n in (1.0, 300.0, 1e6):
                for eps in (0.001, 1.0, 100.0):
                    b = hi / eps
                    m = n * q * mu
                    v = n * q * var + n * q * (1 - q) * mu**2
                    sd = np.sqrt(v + 2 * b * b)
                    values = np.array(
                        [m, m + 3 * sd, m - 50 * b, m + 50 * b, -50 * b, m + 10 * np.sqrt(v)]
                    )
                    key = "lam" if kind == "exponential" else "mu"
                    params = {"n": n, key: theta, "lower": lo, "upper": hi, "epsilon": eps}
                    out.append((values, params))
    return out


def _simulate_exponential(rng, params, n_reports):
    x = rng.exponential(1.0 / params["lam"], size=(n_reports, int(params["n"])))
    rel = release_truncated_sum(x, params["lower"], params["upper"], params["epsilon"], rng)
    return rel.value


def _model_exponential(data, settings):
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 4.0)
        LaplaceNoisyTruncatedExponential(
            "obs",
            n=_TYP_E["n"],
            lam=lam,
            lower=_TYP_E["lower"],
            upper=_TYP_E["upper"],
            epsilon=settings["epsilon"],
            observed=data,
        )
    return model


def _batch_exponential():
    params = dict(
        n=np.array([50.0, 500.0, 5000.0]),
        lam=np.array([0.2, 0.5, 2.0]),
        lower=0.0,
        upper=np.array([4.0, 8.0, 8.0]),
        epsilon=np.array([[0.1], [2.0]]),
    )
    value = np.array([[100.0, 900.2, 2400.0], [-3.0, 1000.0, 2600.0]])
    return params, value


# --------------------------------------------------------------------------------------------
# Poisson
# --------------------------------------------------------------------------------------------

_TYP_P = dict(n=300.0, mu=3.0, lower=0.0, upper=10.0, epsilon=1.0)


def _simulate_poisson(rng, params, n_reports):
    x = rng.poisson(params["mu"], size=(n_reports, int(params["n"])))
    rel = release_truncated_sum(
        x, params["lower"], params["upper"], params["epsilon"], rng, family="poisson"
    )
    return rel.value


def _model_poisson(data, settings):
    with pm.Model() as model:
        mu = pm.Gamma("mu", 3.0, 1.0)
        LaplaceNoisyTruncatedPoisson(
            "obs",
            n=_TYP_P["n"],
            mu=mu,
            lower=_TYP_P["lower"],
            upper=_TYP_P["upper"],
            epsilon=settings["epsilon"],
            observed=data,
        )
    return model


def _batch_poisson():
    params = dict(
        n=np.array([50.0, 300.0, 5000.0]),
        mu=np.array([0.5, 3.0, 8.0]),
        lower=np.array([0.0, 1.0, 2.0]),
        upper=10.0,
        epsilon=np.array([[0.1], [2.0]]),
    )
    value = np.array([[20.0, 900.2, 39000.0], [-3.0, 1000.0, 40100.0]])
    return params, value


_CORE = {"n": 0, "lam": 0, "mu": 0, "lower": 0, "upper": 0, "epsilon": 0, "sensitivity": 0}

CASES = [
    VectorCase(
        name="laplace_noisy_truncated_exponential",
        cls=LaplaceNoisyTruncatedExponential,
        core_ndim=_CORE,
        event_ndim=0,
        typical=_TYP_E,
        reference=_reference("exponential"),
        grid=lambda: _grid("exponential"),
        simulate=_simulate_exponential,
        model=_model_exponential,
        model_settings=[{"epsilon": 0.01}, {"epsilon": 5.0}],
        bad_params=[
            ({"n": -1.0}, "n"),
            ({"n": 2.5}, "n"),
            ({"lam": 0.0}, "lam"),
            ({"lower": -1.0}, "lower"),
            ({"lower": 9.0}, "lower"),
            ({"upper": np.inf}, "upper"),
            ({"epsilon": 0.0}, "epsilon"),
            ({"sensitivity": -1.0}, "sensitivity"),
        ],
        bad_observed=[],
        batch_example=_batch_exponential,
        # reference by numerical convolution / quadrature (tests/expfam_reference.py) to ~1e-12;
        # 1e-9 relative of max(1, |logp|) leaves > 1e3 of margin over it and libm
        rtol=1e-9,
        draws_check=_draws_check("exponential"),
        shifted={"lam": 0.55},
        n_model=20,
    ),
    VectorCase(
        name="laplace_noisy_truncated_poisson",
        cls=LaplaceNoisyTruncatedPoisson,
        core_ndim=_CORE,
        event_ndim=0,
        typical=_TYP_P,
        reference=_reference("poisson"),
        grid=lambda: _grid("poisson"),
        simulate=_simulate_poisson,
        model=_model_poisson,
        model_settings=[{"epsilon": 0.01}, {"epsilon": 5.0}],
        bad_params=[
            ({"n": -1.0}, "n"),
            ({"mu": -1.0}, "mu"),
            ({"lower": 1.5}, "lower"),
            ({"lower": 11.0}, "lower"),
            ({"upper": 2.5}, "upper"),
            ({"epsilon": -1.0}, "epsilon"),
            ({"sensitivity": 0.0}, "sensitivity"),
        ],
        bad_observed=[],
        batch_example=_batch_poisson,
        # reference by numerical convolution / quadrature (tests/expfam_reference.py) to ~1e-12;
        # 1e-9 relative of max(1, |logp|) leaves > 1e3 of margin over it and libm
        rtol=1e-9,
        draws_check=_draws_check("poisson"),
        shifted={"mu": 3.3},
        n_model=20,
    ),
]

# The two-dimensional Gaussian variant registers from its own module.
from cases.expfam_normal import CASES as _NORMAL_CASES  # noqa: E402

CASES += _NORMAL_CASES
