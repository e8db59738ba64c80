"""``cholesky_inverse`` (the potri op behind the MvNormal gradient) and ``scaled_lkj_cov``."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from pymc_dpnoise.math.linalg import cholesky_inverse, spd_inverse_logdet
from pymc_dpnoise.math.sufficient import mvnormal_logp_chol
from pymc_dpnoise.priors import scaled_lkj_cov

#: the op under each backend users can pick (native compiles: `make test-backend`)
MODES = [pytest.param(m, marks=pytest.mark.backend) for m in ("NUMBA", "FAST_RUN", "JAX")]


_CHOL_INV: dict = {}


def _cholesky_inverse_fn(mode, ndim):
    """cholesky_inverse compiled once per backend and rank (shapes are dynamic)."""
    if (mode, ndim) not in _CHOL_INV:
        L = pt.tensor("L", dtype="float64", shape=(None,) * ndim)
        _CHOL_INV[mode, ndim] = pytensor.function([L], cholesky_inverse(L), mode=mode)
    return _CHOL_INV[mode, ndim]


def _spd(m, rng, cond=None):
    q, _ = np.linalg.qr(rng.normal(size=(m, m)))
    ev = np.geomspace(1.0, cond, m) if cond else rng.uniform(0.5, 2.0, m)
    return (q * ev) @ q.T


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m, cond", [(1, None), (2, None), (7, None), (60, None), (30, 1e10)])
def test_cholesky_inverse_equals_inverse(mode, m, cond):
    rng = np.random.default_rng(m)
    c = _spd(m, rng, cond)
    chol = np.linalg.cholesky(c)
    junk = chol + np.triu(rng.normal(size=(m, m)), 1)  # the upper triangle must be ignored
    got = _cholesky_inverse_fn(mode, 2)(junk)
    ref = np.linalg.inv(c)
    tol = 1e-13 * (cond or 10.0)
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max()
    np.testing.assert_array_equal(got, got.T)


@pytest.mark.parametrize("mode", MODES)
def test_cholesky_inverse_batched_and_bad_factor(mode):
    rng = np.random.default_rng(1)
    cs = np.stack([_spd(5, rng) for _ in range(3)])
    chols = np.linalg.cholesky(cs)
    chols[1, 2, 2] = 0.0  # singular factor: that batch member is all NaN, the others exact
    chols[2, 0, 0] = np.nan
    got = _cholesky_inverse_fn(mode, 3)(chols)
    np.testing.assert_allclose(got[0], np.linalg.inv(cs[0]), rtol=1e-12, atol=1e-13)
    assert np.all(np.isnan(got[1])) and np.all(np.isnan(got[2]))


def test_cholesky_inverse_gradient():
    rng = np.random.default_rng(2)
    chol = np.linalg.cholesky(_spd(4, rng))
    w = rng.normal(size=(4, 4))
    pytensor.gradient.verify_grad(
        lambda x: pt.sum(cholesky_inverse(pt.tril(x)) * w), [chol], rng=rng
    )


@pytest.mark.parametrize("batch", [(), (2,)])
def test_mvnormal_gradient_wrt_covariance_matches_finite_differences(batch):
    # the closed-form pullback that uses cholesky_inverse, against central differences
    rng = np.random.default_rng(3)
    m = 6
    a0 = rng.normal(size=(*batch, m, m))
    z = rng.normal(size=(*batch, m))
    A = pt.tensor("A", shape=(None,) * (len(batch) + 2), dtype="float64")
    cov = A @ pt.swapaxes(A, -1, -2) / m + pt.eye(m)
    lp = pt.sum(mvnormal_logp_chol(z, pt.zeros(m), cov))
    f_and_grad = pytensor.function([A], [lp, pytensor.grad(lp, A)])  # one compile for both
    g = f_and_grad(a0)[1]

    def f(a):
        return f_and_grad(a)[0]

    fd = np.zeros_like(a0)
    h = 1e-6
    for idx in np.ndindex(a0.shape):
        e = np.zeros_like(a0)
        e[idx] = h
        fd[idx] = (f(a0 + e) - f(a0 - e)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    ref = sum(
        stats.multivariate_normal(np.zeros(m), a @ a.T / m + np.eye(m)).logpdf(zz)
        for a, zz in zip(a0.reshape(-1, m, m), z.reshape(-1, m), strict=True)
    )
    # a log determinant by Cholesky against numpy's slogdet (LU) of a small well-conditioned
    # matrix: m^2 u cond ~ 1e-14 relative
    assert abs(f(a0) - ref) <= 1e-12 * abs(ref)


@pytest.mark.parametrize("batch", [(), (3,)])
def test_spd_inverse_logdet_values_and_gradient(batch):
    # value against NumPy, gradient of a weighted sum of C^-1 and log|C| against central
    # differences of a symmetric C(A) = A A^T / m + diag(s)^2 built from parameters
    rng = np.random.default_rng(4)
    m = 5
    a0 = rng.normal(size=(*batch, m, m))
    s0 = rng.uniform(0.5, 2.0, size=m)
    w = rng.normal(size=(m, m))
    A = pt.tensor("A", shape=(None,) * (len(batch) + 2), dtype="float64")
    s = pt.dvector("s")
    cov = A @ pt.swapaxes(A, -1, -2) / m + pt.diag(pt.sqr(s))
    inv, logdet, ok = spd_inverse_logdet(cov)
    out = pt.sum(inv * w) + 0.7 * pt.sum(logdet)
    fn = pytensor.function([A, s], [inv, logdet, ok, out, *pytensor.grad(out, [A, s])])
    c0 = a0 @ np.swapaxes(a0, -1, -2) / m + np.diag(s0**2)
    got_inv, got_logdet, got_ok, _, g_a, g_s = fn(a0, s0)
    # Cholesky vs LAPACK's LU (BLAS/LAPACK builds differ by CPU): backward errors <= m^2 u |C|
    # each, so |d log|C|| <= 2 m^2 u cond(C) = 2 * 25 * 1.1e-16 * 5.3 = 3e-14 absolute on
    # log|C| ~ 4-5 here, and the inverse's relative error <= 2 m^2 u cond(C)^2 ~ 1.6e-13
    np.testing.assert_allclose(got_inv, np.linalg.inv(c0), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got_logdet, np.linalg.slogdet(c0)[1], rtol=1e-13)
    assert np.all(got_ok)

    def f(a, sv):
        return fn(a, sv)[3]

    h = 1e-6
    for x0, g, other in ((a0, g_a, "a"), (s0, g_s, "s")):
        fd = np.zeros_like(x0)
        for idx in np.ndindex(x0.shape):
            e = np.zeros_like(x0)
            e[idx] = h
            args_p = (a0 + e, s0) if other == "a" else (a0, s0 + e)
            args_m = (a0 - e, s0) if other == "a" else (a0, s0 - e)
            fd[idx] = (f(*args_p) - f(*args_m)) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_spd_inverse_logdet_not_positive_definite():
    # the identity's values where C is not positive definite, flagged, with a zero gradient
    c = pt.dtensor3("c")
    inv, logdet, ok = spd_inverse_logdet(c)
    fn = pytensor.function([c], [inv, logdet, ok, pytensor.grad(pt.sum(inv) + pt.sum(logdet), c)])
    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])  # eigenvalues 3 and -1
    got_inv, got_logdet, got_ok, g = fn(np.stack([good, bad]))
    np.testing.assert_array_equal(got_ok, [True, False])
    np.testing.assert_allclose(got_inv[0], np.linalg.inv(good), rtol=1e-14)
    np.testing.assert_array_equal(got_inv[1], np.eye(2))
    assert got_logdet[1] == 0.0
    assert np.all(np.isfinite(g)) and np.all(g[1] == 0.0) and np.any(g[0] != 0.0)


# ---------------------------------------------------------------------------- scaled LKJ


def test_scaled_lkj_cov_prior_draws():
    with pm.Model():
        chol, tau, corr_chol = scaled_lkj_cov("s", 2, eta=2.0, tau_sigma=1.5)
        cov = chol @ chol.T
        corr = corr_chol @ corr_chol.T
    c_draws, t_draws, r_draws = pm.draw([cov, tau, corr], draws=3000, random_seed=4)
    assert np.all(np.linalg.eigvalsh(c_draws) > 0)
    np.testing.assert_allclose(np.sqrt(np.diagonal(c_draws, axis1=1, axis2=2)), t_draws)
    for j in range(2):
        assert stats.kstest(t_draws[:, j], stats.halfnorm(scale=1.5).cdf).pvalue > 1e-3
    # LKJ(eta) in 2-d: (r + 1) / 2 ~ Beta(eta, eta)
    r = (r_draws[:, 0, 1] + 1) / 2
    assert stats.kstest(r, stats.beta(2, 2).cdf).pvalue > 1e-3
    # the same test tells a wrong eta apart
    assert stats.kstest(r, stats.beta(4, 4).cdf).pvalue < 1e-6


@pytest.mark.backend  # runs NUTS: the default mode's compile is cheaper than sampling on the Python VM
def test_scaled_lkj_cov_nuts_reaches_small_scales():
    # prior-only NUTS must return the prior, including the mass near zero of *every* scale
    # (pm.LKJCholeskyCov loses it in the second scale: benchmarks/lkj_parameterisation.py)
    with pm.Model() as model:
        scaled_lkj_cov("s", 3, eta=2.0, tau_sigma=1.0)
    idata = pm.sample(
        draws=2000, tune=1000, chains=2, cores=1, random_seed=5, progressbar=False,
        nuts_sampler="nutpie", model=model,
    )  # fmt: skip
    tau = idata.posterior["s_tau"].values.reshape(-1, 3)
    exact = stats.halfnorm.cdf(0.1)  # 0.080
    for j in range(3):
        p = np.mean(tau[:, j] < 0.1)
        assert abs(p - exact) < 0.035, (j, p)
        assert stats.kstest(tau[::5, j], stats.halfnorm().cdf).pvalue > 1e-3


def test_scaled_lkj_cov_dims_and_own_tau():
    with pm.Model(coords={"feature": ["a", "b", "c"]}) as model:
        scaled_lkj_cov("s", 3, dims="feature")
        tau = pm.Gamma("g", 2.0, 2.0, shape=3)
        chol, tau2, _ = scaled_lkj_cov("t", 3, tau=tau)
    assert model.named_vars_to_dims["s_tau"] == ("feature",)
    assert "t_tau" not in model.named_vars and tau2 is tau
    assert pm.draw(chol, random_seed=1).shape == (3, 3)


@pytest.mark.parametrize(
    "kw, arg",
    [
        (dict(n=1), "`n`"),
        (dict(n=2.5), "`n`"),
        (dict(n=3, eta=0.0), "`eta`"),
        (dict(n=3, tau_sigma=-1.0), "`tau_sigma`"),
    ],
)
def test_scaled_lkj_cov_bad_input(kw, arg):
    with pm.Model(), pytest.raises(ValueError, match=arg):
        scaled_lkj_cov("s", **kw)
