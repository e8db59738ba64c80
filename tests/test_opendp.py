"""Reports released by OpenDP are read by our distributions, and the posterior is calibrated.

The parameter maps of :mod:`pymc_dpnoise.mechanisms.opendp_releases` are checked three ways:
OpenDP's own privacy map states exactly the epsilon asked for; the released reports have the
distribution our likelihood assumes (KS / chi-square against the mechanism); and posteriors
computed with our distributions' logp from OpenDP releases are calibrated (simulation-based
calibration with an exact grid posterior, no MCMC error; the full version is ``slow``).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_dpnoise as pmd
from pymc_dpnoise.diagnostics import binomial_band
from pymc_dpnoise.mechanisms.opendp_releases import (
    release_clipped_laplace,
    release_krr,
    release_sue,
)

pytest.importorskip("opendp")


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_clipped_laplace_map_and_noise(epsilon):
    rng = np.random.default_rng(1)
    x = rng.normal(1.0, 3.0, size=4000)
    rel = release_clipped_laplace(x, -5.0, 5.0, epsilon)
    assert rel.epsilon == pytest.approx(epsilon, rel=1e-12)
    assert rel.model_kwargs == {"lower": -5.0, "upper": 5.0, "epsilon": epsilon}
    noise = rel.reports - np.clip(x, -5.0, 5.0)
    assert stats.kstest(noise, stats.laplace(scale=10.0 / epsilon).cdf).pvalue > 1e-3
    # ... and a wrong scale is detected (power of the check)
    assert stats.kstest(noise, stats.laplace(scale=12.0 / epsilon).cdf).pvalue < 1e-3


def test_krr_and_sue_maps_and_frequencies():
    k, eps, n = 4, 1.0, 6000
    items = np.full(n, 2)
    rel = release_krr(items, k, eps)
    assert rel.epsilon == pytest.approx(eps, rel=1e-12)
    keep = np.exp(eps) / (np.exp(eps) + k - 1)
    expected = np.full(k, (1 - keep) / (k - 1) * n)
    expected[2] = keep * n
    assert stats.chisquare(np.bincount(rel.reports, minlength=k), expected).pvalue > 1e-3

    rel = release_sue(np.full(2000, 1), 3, eps)
    assert rel.epsilon == pytest.approx(eps, rel=1e-12)
    assert rel.reports.shape == (2000, 3) and set(np.unique(rel.reports)) <= {0, 1}
    keep_bit = np.exp(eps / 2) / (1 + np.exp(eps / 2))
    rate = rel.reports.mean(axis=0)  # P(report bit = 1): keep for the true bit, flip otherwise
    se = np.sqrt(keep_bit * (1 - keep_bit) / 2000)
    np.testing.assert_allclose(rate, [1 - keep_bit, keep_bit, 1 - keep_bit], atol=5 * se)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: release_clipped_laplace([0.0], -1.0, 1.0, 0.0), "epsilon"),
        (lambda: release_clipped_laplace([0.0], 1.0, -1.0, 1.0), "lower"),
        (lambda: release_clipped_laplace([np.nan], -1.0, 1.0, 1.0), "`x`"),
        (lambda: release_clipped_laplace([0.0], -1.0, 1.0, [1.0, 2.0]), "epsilon"),
        (lambda: release_krr([0, 3], 3, 1.0), "items"),
        (lambda: release_krr([0, 1], 1, 1.0), "`k`"),
        (lambda: release_sue([0.5], 3, 1.0), "items"),
        (lambda: release_sue(["a"], 3, 1.0), "items"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# --------------------------------------------------------------------------------------------
# Calibration: exact grid posteriors from our distributions' logp, reports released by OpenDP
# --------------------------------------------------------------------------------------------

MU_GRID = np.linspace(-4.0, 6.0, 81)
SIGMA_GRID = np.linspace(0.05, 6.0, 80)


def _clipped_normal_loglik():
    """Compiled: log-likelihood of N reports on the whole (mu, sigma) grid, in one call."""
    z = pt.dvector("z")
    mu = pt.as_tensor(MU_GRID)[:, None, None]
    sigma = pt.as_tensor(SIGMA_GRID)[None, :, None]
    shape = (MU_GRID.size, SIGMA_GRID.size, z.shape[0])
    dist = pmd.LaplacePerturbedClippedNormal.dist(
        mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, shape=shape
    )
    return pytensor.function([z], pm.logp(dist, z[None, None, :]).sum(-1))


def _posterior_quantiles(loglik, rel, mu, sigma):
    logpost = loglik(rel.reports)
    logpost += stats.norm(1.0, 2.0).logpdf(MU_GRID)[:, None]
    logpost += stats.gamma(2.0, scale=1.0).logpdf(SIGMA_GRID)[None, :]
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    q_mu = w.sum(1)[MU_GRID <= mu].sum()
    q_sigma = w.sum(0)[SIGMA_GRID <= sigma].sum()
    return q_mu, q_sigma


def _sbc(replicates, n_reports, seed):
    loglik = _clipped_normal_loglik()
    rng = np.random.default_rng(seed)
    qs = []
    for _ in range(replicates):
        mu, sigma = rng.normal(1.0, 2.0), rng.gamma(2.0, 1.0)
        while not (MU_GRID[2] < mu < MU_GRID[-3] and SIGMA_GRID[2] < sigma < SIGMA_GRID[-3]):
            mu, sigma = rng.normal(1.0, 2.0), rng.gamma(2.0, 1.0)
        rel = release_clipped_laplace(rng.normal(mu, sigma, n_reports), -5.0, 5.0, 1.0)
        qs.append(_posterior_quantiles(loglik, rel, mu, sigma))
    return np.array(qs)


def _coverage_inside_band(qs, level):
    inside = np.mean(np.abs(qs - 0.5) <= level / 2, axis=0)
    lo, hi = binomial_band(level, len(qs), mass=0.99)
    return inside, (lo, hi)


def test_opendp_release_posterior_recovers_truth():
    """OpenDP releases: the truth is not in the far tails of the grid posterior (cheap smoke
    check).  OpenDP draws its noise from its own unseedable generator, so the quantiles are
    random (uniform when the model is right): the bounds give a false alarm in about 1 run in
    800 (6 quantiles x 2e-4; 0.005 failed about 1 run in 16), while a model that ignored the
    noise puts them at 0 or 1."""
    qs = _sbc(replicates=3, n_reports=300, seed=3)
    assert np.all((qs > 1e-4) & (qs < 1 - 1e-4)), qs


@pytest.mark.slow
def test_opendp_release_posterior_is_calibrated():
    """SBC, 200 replicates: 50% and 90% coverage of mu and sigma inside the 99% band."""
    qs = _sbc(replicates=200, n_reports=200, seed=2026)
    for level in (0.5, 0.9):
        inside, (lo, hi) = _coverage_inside_band(qs, level)
        print(f"coverage at {level}: mu {inside[0]:.3f}, sigma {inside[1]:.3f}, band [{lo}, {hi}]")
        assert np.all((lo <= inside) & (inside <= hi)), (level, inside, lo, hi)
    assert stats.kstest(qs[:, 0], "uniform").pvalue > 1e-3
    assert stats.kstest(qs[:, 1], "uniform").pvalue > 1e-3
