"""NUTS on every backend, predictive draws, and the pure math helpers."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special

import pymc_dpnoise as pmd
from pymc_dpnoise import math as dpm
from pymc_dpnoise.mechanisms import perturb_clipped, perturb_clipped_exponential

# every test here runs a sampler or compares backends: compiled in the default mode
pytestmark = pytest.mark.backend


def test_log_ndtr_matches_scipy_and_has_finite_gradient():
    x = pt.dvector()
    f = pytensor.function([x], [dpm.log_ndtr(x), pt.grad(dpm.log_ndtr(x).sum(), x)])
    xs = np.array([-1e4, -300.0, -40.0, -5.0, -1.0, -0.5, 0.0, 3.0, 40.0, 1e4])
    val, grad = f(xs)
    # two implementations over erfc/erfcx/log (within ~5 ulp in glibc, ARM's routines, Cephes);
    # log Phi's relative condition in them is <= 1 here: ~20 ulp = 4e-15 vs 1e-13;
    # atol only for Phi -> 1 (x = 40, 1e4), where log Phi underflows to -0
    np.testing.assert_allclose(val, special.log_ndtr(xs), rtol=1e-13, atol=1e-300)
    assert np.all(np.isfinite(grad))
    # d/dx log Phi = phi/Phi -> -x for x -> -inf
    assert grad[0] == pytest.approx(1e4, rel=1e-6)


def test_log_exprel_smooth_through_zero():
    y = pt.dvector()
    out = dpm.log_exprel(y)
    f = pytensor.function([y], [out, pt.grad(out.sum(), y)])
    ys = np.array([-700.0, -30.0, -1.0, -1e-3, -1e-9, 0.0, 1e-9, 1e-3, 1.0, 30.0, 700.0])
    val, grad = f(ys)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.where(ys == 0, 0.0, np.log(np.expm1(ys.astype(np.longdouble)) / ys))
    # ref in long double (= double on some ARM platforms: log(1 + y/2) then loses ~u absolute,
    # under atol 1e-15 at |y| = 1e-9); log_exprel: a few ulp
    np.testing.assert_allclose(val, ref.astype(float), rtol=1e-12, atol=1e-15)
    assert np.all(np.isfinite(grad))
    assert grad[5] == pytest.approx(0.5)


def test_tilted_tails_sum_to_total():
    """E + F = log of the total tilted mass kappa^2/2 - kappa x, even for huge kappa."""
    x, k = pt.dvector(), pt.dvector()
    e, f_ = dpm._tilted_tails(x, k)
    fn = pytensor.function([x, k], [e, f_])
    xs = np.array([-50.0, -1.0, 0.0, 0.5, 3.0, 80.0, 1e4])
    ks = np.array([1e-5, 1.0, 10.0, 0.5, 1e3, 1e4, 1e4])
    ev, fv = fn(xs, ks)
    total = ks * (ks / 2 - xs)
    # a few ulp of terms no larger than |total| (k^2/2 and k x do not cancel on this grid)
    np.testing.assert_allclose(np.logaddexp(ev, fv), total, rtol=1e-13, atol=1e-12)


def _normal_data(n=2000, eps=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return perturb_clipped(rng.normal(1.0, 2.0, n), -5.0, 5.0, eps, rng)


def _normal_model(z):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pmd.LaplacePerturbedClippedNormal("z", mu, sigma, -5.0, 5.0, 1.0, observed=z)
    return model


def _sample(model, sampler, seed=1, draws=400):
    return pm.sample(
        draws=draws,
        tune=400,
        chains=2,
        cores=1,
        nuts_sampler=sampler,
        random_seed=seed,
        progressbar=False,
        model=model,
    )


def _summ(idata, names):
    out = {}
    for n in names:
        v = np.asarray(idata.posterior[n].values).ravel()
        out[n] = (v.mean(), v.std())
    return out


@pytest.fixture(scope="module")
def normal_posterior():
    """Reports, model and the exact posterior means of (mu, sigma) from a 101 x 101 grid of
    the model's own logp (compiled once for all samplers)."""
    z = _normal_data()
    model = _normal_model(z)
    logp = model.compile_logp()
    mus = np.linspace(-1.0, 3.0, 101)
    sigmas = np.linspace(0.3, 4.0, 101)
    lp = np.array(
        [[logp({"mu": a, "sigma_log__": np.log(b)}) - np.log(b) for b in sigmas] for a in mus]
    )
    w = np.exp(lp - lp.max())
    w /= w.sum()
    return model, (w.sum(1) * mus).sum(), (w.sum(0) * sigmas).sum()


# PyMC's own NUTS runs by default; nutpie and numpyro each compile the model again (Numba,
# JAX) and sample it: they run with -m slow.  Both samplers keep a NUTS run in the default suite
# (test_numpyro_with_pm_data_reports, test_prior_and_posterior_predictive_are_privatised_reports).
@pytest.mark.parametrize(
    "sampler",
    [
        "pymc",
        pytest.param("nutpie", marks=pytest.mark.slow),
        pytest.param("numpyro", marks=pytest.mark.slow),
    ],
)
def test_nuts_backends_recover_the_same_posterior(sampler, normal_posterior):
    """Each NUTS implementation recovers the truth and agrees with the exact-grid posterior."""
    pytest.importorskip({"pymc": "pymc", "nutpie": "nutpie", "numpyro": "numpyro"}[sampler])
    model, ref_mu, ref_sigma = normal_posterior
    s = _summ(_sample(model, sampler), ["mu", "sigma"])
    assert s["mu"][0] == pytest.approx(ref_mu, abs=5 * s["mu"][1] / np.sqrt(200))
    assert s["sigma"][0] == pytest.approx(ref_sigma, abs=5 * s["sigma"][1] / np.sqrt(200))
    assert abs(s["mu"][0] - 1.0) < 4 * s["mu"][1]
    assert abs(s["sigma"][0] - 2.0) < 4 * s["sigma"][1]


def test_numpyro_with_pm_data_reports():
    """The JAX samplers also work when reports live in pm.Data (swappable data)."""
    pytest.importorskip("numpyro")
    z = _normal_data(n=500, seed=3)
    with pm.Model() as model:
        data = pm.Data("reports", z)
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pmd.LaplacePerturbedClippedNormal("z", mu, sigma, -5.0, 5.0, 1.0, observed=data)
    idata = _sample(model, "numpyro", draws=200)
    assert np.isfinite(idata.posterior["mu"].values).all()


def test_prior_and_posterior_predictive_are_privatised_reports():
    z = _normal_data(n=300, eps=0.5, seed=4)
    with pm.Model():
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pmd.LaplacePerturbedClippedNormal("z", mu, sigma, -5.0, 5.0, 0.5, observed=z)
        prior = pm.sample_prior_predictive(draws=50, random_seed=1)
        idata = pm.sample(
            draws=100, tune=100, chains=1, progressbar=False, random_seed=2, nuts_sampler="nutpie"
        )
        post = pm.sample_posterior_predictive(idata, random_seed=3, progressbar=False)
    pp = np.asarray(post.posterior_predictive["z"].values)
    assert pp.shape == (1, 100, 300)
    assert np.asarray(prior.prior_predictive["z"].values).shape == (1, 50, 300)
    # privatised: noise of scale 20 puts many reports far outside the clipping interval,
    # as in the observed data
    assert np.mean(np.abs(pp) > 5) == pytest.approx(np.mean(np.abs(z) > 5), abs=0.08)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["pymc", "nutpie", "numpyro"])
def test_exponential_backends(sampler):
    rng = np.random.default_rng(6)
    z = perturb_clipped_exponential(rng.exponential(1 / 0.7, 3000), 5.0, 1.0, rng)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 2.0)
        pmd.LaplacePerturbedClippedExponential("z", lam, 5.0, 1.0, observed=z)
    s = _summ(_sample(model, sampler), ["lam"])
    assert abs(s["lam"][0] - 0.7) < 4 * s["lam"][1]
