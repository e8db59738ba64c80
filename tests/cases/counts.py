"""Registry entries for the exact noisy-count likelihoods (binomial, clamped binomial, Poisson).

References are brute-force sums over every count s in extended precision
(``tests/counts_reference.py``); the draw checks compare draws with the exact CDF
F(y) = sum_s P(s) F_Lap(y - s), written here with SciPy (independent of the package).
The heavy accuracy grids (n up to 1e7, epsilon 1e-3 .. 100) are in ``tests/distributions/test_counts.py``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from counts_reference import brute_binomial_logp, brute_poisson_logp
from registry import VectorCase
from scipy import stats

from pymc_dpnoise.distributions.counts import LaplaceNoisyBinomial, LaplaceNoisyPoisson
from pymc_dpnoise.mechanisms.counts import release_binomial_count, release_poisson_count

# --------------------------------------------------------------------------------------------
# Binomial
# --------------------------------------------------------------------------------------------

_TYP_B = dict(n=40.0, p=0.3, epsilon=0.8, sensitivity=1.0)


def _ref_binomial(value, n, p, epsilon, sensitivity, clamp=False):
    b = float(sensitivity) / float(epsilon)
    out = [brute_binomial_logp(v, n, p, b, clamp=clamp) for v in np.ravel(value)]
    return np.reshape(out, np.shape(value))


def _grid_binomial():
    out = []
    for n in (0.0, 1.0, 7.0, 300.0):
        for p in (1e-6, 0.02, 0.5, 0.97, 1.0 - 1e-6):
            for eps in (0.001, 0.3, 5.0, 100.0):
                b = 1.0 / eps
                values = np.array(
                    [-50 * b, -0.4, 0.0, 0.5, n * p, n / 2 + 0.3, n, n + 1.7, n + 50 * b]
                )
                out.append((values, dict(n=n, p=p, epsilon=eps, sensitivity=1.0)))
    return out


def _binomial_cdf(y, n, p, b):
    s = np.arange(int(n) + 1)
    w = stats.binom.pmf(s, int(n), p)
    return np.sum(w * stats.laplace.cdf(np.asarray(y)[..., None] - s, scale=b), axis=-1)


def _simulate_binomial(rng, params, n_reports):
    x = rng.random((n_reports, int(params["n"]))) < params["p"]
    return release_binomial_count(x, params["epsilon"], rng).value


def _draws_check_binomial(draws, params, logp_fn=None):
    b = params["sensitivity"] / params["epsilon"]
    cdf = lambda y: _binomial_cdf(y, params["n"], params["p"], b)  # noqa: E731
    p = stats.kstest(np.ravel(draws), cdf).pvalue
    assert p > 1e-3, f"KS p = {p:.2e}"


def _model_binomial(data, settings):
    with pm.Model() as model:
        logit_p = pm.Normal("logit_p", 0.0, 1.5)
        LaplaceNoisyBinomial(
            "obs",
            n=_TYP_B["n"],
            p=pm.math.sigmoid(logit_p),
            epsilon=settings["epsilon"],
            observed=data,
        )
    return model


def _batch_binomial():
    params = dict(
        n=np.array([5.0, 40.0, 1000.0]),
        p=np.array([0.1, 0.5, 0.9]),
        epsilon=np.array([[0.1], [2.0]]),
        sensitivity=1.0,
    )
    value = np.array([[-3.0, 20.5, 900.2], [1.2, 19.0, 1001.0]])
    return params, value


_BAD_B = [
    ({"n": -1.0}, "n"),
    ({"n": 2.5}, "n"),
    ({"p": 1.5}, "p"),
    ({"p": -0.1}, "p"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"sensitivity": -1.0}, "sensitivity"),
]

# --------------------------------------------------------------------------------------------
# Clamped binomial
# --------------------------------------------------------------------------------------------

_TYP_C = dict(n=8.0, p=0.3, epsilon=0.7, sensitivity=1.0)


def _grid_clamped():
    out = []
    for n in (1.0, 8.0, 300.0):
        for p in (1e-6, 0.3, 1.0 - 1e-6):
            for eps in (0.001, 1.0, 100.0):
                values = np.array([0.0, 1e-9, 0.5, n * p, n / 2 + 0.3, n - 1e-9, n])
                out.append((values, dict(n=n, p=p, epsilon=eps, sensitivity=1.0)))
    return out


def _simulate_clamped(rng, params, n_reports):
    return np.clip(_simulate_binomial(rng, params, n_reports), 0.0, params["n"])


def _draws_check_clamped(draws, params, logp_fn):
    """Atoms: frequencies at 0 and n vs the masses (binomial tests); interior: KS."""
    draws = np.ravel(draws)
    n, b = params["n"], params["sensitivity"] / params["epsilon"]
    m = len(draws)
    mass0, massn = (float(np.exp(logp_fn(np.array([v]))[0])) for v in (0.0, n))
    # the masses against the independent CDF: P(z = 0) = F(0), P(z = n) = 1 - F(n-)
    np.testing.assert_allclose(mass0, _binomial_cdf(0.0, n, params["p"], b), rtol=1e-10)
    np.testing.assert_allclose(massn, 1 - _binomial_cdf(n, n, params["p"], b), rtol=1e-10)
    for count, mass in ((np.sum(draws == 0), mass0), (np.sum(draws == n), massn)):
        assert stats.binomtest(int(count), m, mass).pvalue > 1e-3, (count, m * mass)
    inner = draws[(draws > 0) & (draws < n)]
    lo, hi = _binomial_cdf(0.0, n, params["p"], b), _binomial_cdf(n, n, params["p"], b)
    cdf = lambda y: (_binomial_cdf(y, n, params["p"], b) - lo) / (hi - lo)  # noqa: E731
    p = stats.kstest(inner, cdf).pvalue
    assert p > 1e-3, f"KS p = {p:.2e}"


def _model_clamped(data, settings):
    with pm.Model() as model:
        logit_p = pm.Normal("logit_p", 0.0, 1.5)
        LaplaceNoisyBinomial(
            "obs",
            n=_TYP_C["n"],
            p=pm.math.sigmoid(logit_p),
            epsilon=settings["epsilon"],
            clamp=True,
            observed=data,
        )
    return model


def _batch_clamped():
    params = dict(n=np.array([5.0, 40.0, 8.0]), p=np.array([0.1, 0.5, 0.9]), epsilon=0.5)
    value = np.array([[0.0, 20.5, 8.0], [1.2, 40.0, 3.0]])
    return params, value


# --------------------------------------------------------------------------------------------
# Poisson
# --------------------------------------------------------------------------------------------

_TYP_P = dict(mu=20.0, epsilon=1.0, sensitivity=2.0)
_RECORDS = 2000  # per-record rate mu / 2000: P(a record exceeds the bound 2) ~ 1e-7


def _ref_poisson(value, mu, epsilon, sensitivity):
    b = float(sensitivity) / float(epsilon)
    out = [brute_poisson_logp(v, float(mu), b) for v in np.ravel(value)]
    return np.reshape(out, np.shape(value))


def _grid_poisson():
    out = []
    for mu in (1e-6, 0.05, 3.0, 250.0, 2e4):
        for eps in (0.001, 0.3, 5.0, 100.0):
            b = 1.0 / eps
            values = np.array(
                [-50 * b, -0.4, 0.0, 0.5, mu, mu + 3 * b + 0.3, 2 * mu + 1.5, mu + 50 * b]
            )
            out.append((values, dict(mu=mu, epsilon=eps, sensitivity=1.0)))
    return out


def _simulate_poisson(rng, params, n_reports):
    x = rng.poisson(params["mu"] / _RECORDS, size=(n_reports, _RECORDS))
    return release_poisson_count(x, params["sensitivity"], params["epsilon"], rng).value


def _draws_check_poisson(draws, params, logp_fn=None):
    b = params["sensitivity"] / params["epsilon"]
    s = np.arange(int(params["mu"] + 40 * np.sqrt(params["mu"]) + 50))
    w = stats.poisson.pmf(s, params["mu"])

    def cdf(y):
        return np.sum(w * stats.laplace.cdf(np.asarray(y)[..., None] - s, scale=b), axis=-1)

    p = stats.kstest(np.ravel(draws), cdf).pvalue
    assert p > 1e-3, f"KS p = {p:.2e}"


def _model_poisson(data, settings):
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.1)
        LaplaceNoisyPoisson(
            "obs",
            mu=mu,
            epsilon=settings["epsilon"],
            sensitivity=_TYP_P["sensitivity"],
            observed=data,
        )
    return model


def _batch_poisson():
    params = dict(
        mu=np.array([0.5, 20.0, 3000.0]), epsilon=np.array([[0.1], [2.0]]), sensitivity=1.0
    )
    value = np.array([[-3.0, 20.5, 2900.2], [1.2, 19.0, 3001.0]])
    return params, value


class _ClampedLaplaceNoisyBinomial:
    """``LaplaceNoisyBinomial(..., clamp=True)`` with the harness's signature (named as the
    constructor, which is what the variable prints)."""

    def __new__(cls, name, **kwargs):
        return LaplaceNoisyBinomial(name, clamp=True, **kwargs)

    @staticmethod
    def dist(**kwargs):
        return LaplaceNoisyBinomial.dist(clamp=True, **kwargs)


_ClampedLaplaceNoisyBinomial.__name__ = "LaplaceNoisyBinomial"
#: the public class this wrapper calls (the registry checks a case's class against its entry's)
_ClampedLaplaceNoisyBinomial.wraps = LaplaceNoisyBinomial

CASES = [
    VectorCase(
        name="laplace_noisy_binomial",
        cls=LaplaceNoisyBinomial,
        core_ndim={"n": 0, "p": 0, "epsilon": 0, "sensitivity": 0},
        event_ndim=0,
        typical=_TYP_B,
        reference=_ref_binomial,
        grid=_grid_binomial,
        simulate=_simulate_binomial,
        model=_model_binomial,
        model_settings=[{"epsilon": 0.05}, {"epsilon": 2.0}],
        bad_params=_BAD_B,
        bad_observed=[],
        batch_example=_batch_binomial,
        # brute-force log-space sums (logsumexp of exact terms, a few ulp each) vs our
        # closed/windowed form through libm: 1e-10 relative is ~1e6 ulp of margin
        rtol=1e-10,
        draws_check=_draws_check_binomial,
        shifted={"p": 0.35},
    ),
    VectorCase(
        name="laplace_noisy_binomial_clamped",
        cls=_ClampedLaplaceNoisyBinomial,
        core_ndim={"n": 0, "p": 0, "epsilon": 0, "sensitivity": 0},
        event_ndim=0,
        typical=_TYP_C,
        reference=lambda value, **p: _ref_binomial(value, clamp=True, **p),
        grid=_grid_clamped,
        simulate=_simulate_clamped,
        model=_model_clamped,
        model_settings=[{"epsilon": 0.2}, {"epsilon": 3.0}],
        bad_params=_BAD_B,
        bad_observed=[],
        batch_example=_batch_clamped,
        # brute-force log-space sums (logsumexp of exact terms, a few ulp each) vs our
        # closed/windowed form through libm: 1e-10 relative is ~1e6 ulp of margin
        rtol=1e-10,
        draws_check=_draws_check_clamped,
        shifted={"p": 0.4},
    ),
    VectorCase(
        name="laplace_noisy_poisson",
        cls=LaplaceNoisyPoisson,
        core_ndim={"mu": 0, "epsilon": 0, "sensitivity": 0},
        event_ndim=0,
        typical=_TYP_P,
        reference=_ref_poisson,
        grid=_grid_poisson,
        simulate=_simulate_poisson,
        model=_model_poisson,
        model_settings=[{"epsilon": 0.05}, {"epsilon": 2.0}],
        bad_params=[
            ({"mu": -1.0}, "mu"),
            ({"epsilon": -1.0}, "epsilon"),
            ({"sensitivity": 0.0}, "sensitivity"),
            ({"mu": np.nan}, "mu"),
        ],
        bad_observed=[],
        batch_example=_batch_poisson,
        # brute-force log-space sums (logsumexp of exact terms, a few ulp each) vs our
        # closed/windowed form through libm: 1e-10 relative is ~1e6 ulp of margin
        rtol=1e-10,
        draws_check=_draws_check_poisson,
        shifted={"mu": 22.0},
    ),
]
