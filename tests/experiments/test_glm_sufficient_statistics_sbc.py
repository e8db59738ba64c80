"""SBC problems for SSNormalApprox (pymc_dpnoise.experiments.glm_sufficient_statistics), issue 5."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from pymc_dpnoise.experiments import glm_sufficient_statistics as es
from pymc_dpnoise.math.sufficient import ss_moments, stat_dim
from pymc_dpnoise.mechanisms.sufficient import release_sufficient_statistics

KINDS = {
    "logistic": es.LogisticSSSBC,
    "poisson": es.PoissonSSSBC,
    "linear": es.LinearSSSBC,
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("local", [False, True])
def test_simulate_shapes_and_noise_level(kind, local):
    p = KINDS[kind](n=300, d=3, epsilon=0.5, local=local)
    m = stat_dim(kind, 3)
    truth, z = p.simulate(np.random.default_rng(0))
    assert z.shape == (m,) and np.all(np.isfinite(z))
    assert truth["theta"].shape == (3,)
    assert len(p.param_names) == 3 + (kind == "linear")
    # the noise the model is given is the noise the mechanism adds
    _, x, y = p._draw(np.random.default_rng(1))
    assert x.shape == (300, 3) and y.shape == (300,)
    rel = release_sufficient_statistics(
        x, y, kind, 0.5, 1e-5, np.random.default_rng(2), R=p.R, Ry=p.Ry, local=local
    )
    # a covariance computed twice by the same products (+ - * / only) in another order: a few ulp
    np.testing.assert_allclose(p.noise_cov, rel.noise_cov, rtol=1e-12)
    assert p.noise_cov.shape == (m, m)
    if local:
        np.testing.assert_allclose(p.noise_cov, 300 * p.noise_sigma**2 * np.eye(m))
    # the problems are picklable (sent to worker processes)
    import pickle

    assert pickle.loads(pickle.dumps(p)) == p


def test_responses_follow_the_glm():
    rng = np.random.default_rng(3)
    p = es.LogisticSSSBC(n=200_000)
    truth, x, y = p._draw(rng)
    assert set(np.unique(y)) == {-1.0, 1.0}
    u = x @ truth["theta"]
    hi = u > 0.5
    # P(y = 1 | x) = sigmoid(u): compare the label rate in a slice with the mean sigmoid there
    expect = np.mean(1 / (1 + np.exp(-u[hi])))
    assert abs(np.mean(y[hi] == 1) - expect) < 4 * np.sqrt(expect * (1 - expect) / hi.sum())
    p = es.PoissonSSSBC(n=200_000)
    truth, x, y = p._draw(rng)
    assert np.all(y == np.round(y)) and y.min() >= 0
    rate = np.exp(x @ truth["theta"])
    assert abs(np.mean(y - rate)) < 4 * np.sqrt(np.mean(rate) / len(y))
    p = es.LinearSSSBC(n=200_000)
    truth, x, y = p._draw(rng)
    resid = y - x @ truth["theta"]
    assert np.std(resid) == pytest.approx(truth["sigma"], rel=0.01)
    # the documented design: clipping of the release is negligible
    for cls in KINDS.values():
        rates = es.clip_rates(cls(n=10_000), n_sims=5)
        assert rates["x_clipped"] < 1e-3 and rates["y_clipped"] < 1e-3


@pytest.mark.parametrize("kind", ["logistic", "poisson"])
def test_simulated_sums_match_the_normal_approximation(kind):
    """z given θ is (approximately) N(n mu_s, n Sigma_s + noise): chi-square of the residuals."""
    p = KINDS[kind](n=5000, epsilon=1.0)
    theta_in = pt.dvector("theta")
    mean, cov_s = ss_moments(theta_in, p.cov, kind, order="quadrature")
    f = pytensor.function([theta_in], [mean, cov_s], mode="FAST_COMPILE")
    rng = np.random.default_rng(4)
    chi2 = []
    for _ in range(60):
        truth, z = p.simulate(rng)
        mu, cs = f(truth["theta"])
        total = p.n * cs + p.noise_cov
        r = np.linalg.solve(np.linalg.cholesky(total), z - p.n * mu)
        chi2.append(r @ r)
    # the sum of 60 chi-square(m) is chi-square(60 m)
    res = stats.chi2(60 * p.m).cdf(np.sum(chi2))
    assert 0.001 < res < 0.999


def test_naive_model_drops_the_noise():
    p = es.PoissonSSSBC(n=1000, epsilon=0.1)
    z = p.simulate(np.random.default_rng(5))[1]
    for aware, expect in ((True, p.noise_cov), (False, 1e-6 * np.eye(p.m))):
        model = p.build_model(z, noise_aware=aware)
        inputs = model["z"].owner.inputs  # rng, size, theta, cov, n, noise_cov, sigma
        np.testing.assert_allclose(inputs[5].eval(), expect)
        np.testing.assert_allclose(model["reports"].get_value(), z)


@pytest.fixture(scope="module")
def logistic_fits():
    """One compiled nutpie model, fitted to two data sets swapped in through ``reports``."""
    import nutpie

    p = es.LogisticSSSBC(n=10_000, epsilon=1.0)
    rng = np.random.default_rng(11)
    data = [p.simulate(rng) for _ in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = nutpie.compile_pymc_model(p.build_model(data[0][1]))
        fits = [
            nutpie.sample(
                compiled.with_data(reports=p.model_data(z)),
                draws=400,
                tune=400,
                chains=2,
                cores=1,
                seed=7,
                progress_bar=False,
            )
            for _, z in data
        ]
    return p, data, fits


@pytest.mark.backend  # nutpie fits (Numba)
def test_noise_aware_model_recovers_theta_and_swaps_data(logistic_fits):
    p, data, fits = logistic_fits
    means = []
    for (truth, _), tr in zip(data, fits, strict=True):
        post = tr.posterior["theta"].values.reshape(-1, p.d)
        mean, sd = post.mean(0), post.std(0)
        means.append(mean)
        assert np.all(np.abs(mean - truth["theta"]) < 4 * sd), (mean, sd, truth)
        assert np.all(sd < 0.5 * p.theta_sd)  # the data are informative at n = 1e4, ε = 1
        assert int(tr.sample_stats["diverging"].sum()) == 0
    # the second fit really used the second data set (pm.Data("reports") round trip)
    t0, t1 = data[0][0]["theta"], data[1][0]["theta"]
    assert np.linalg.norm(means[1] - t1) < np.linalg.norm(means[1] - t0)
    assert np.linalg.norm(means[0] - t0) < np.linalg.norm(means[0] - t1)


def test_summary_table_keeps_the_90_percent_rows():
    tab = es.pd.DataFrame(
        dict(
            model=["a"] * 2,
            release=["central"] * 2,
            epsilon=[1.0] * 2,
            param=["theta[0]"] * 2,
            level=[0.5, 0.9],
            coverage=[0.5, 0.88],
            band_lo=[0.4, 0.85],
            band_hi=[0.6, 0.95],
            inside=[True, True],
        )
    )
    out = es.sbc_summary([tab])
    assert len(out) == 1 and out["coverage"].item() == 0.88
