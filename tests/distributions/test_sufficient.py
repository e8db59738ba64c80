"""SSNormalApprox: moments, log density, sensitivities and the release function (issue 5)."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from cases.sufficient import monomials, reference_moments
from scipy import optimize, stats

from pymc_dpnoise.distributions.sufficient import SSNormalApprox
from pymc_dpnoise.math.sufficient import ss_moments, stat_names
from pymc_dpnoise.mechanisms import sufficient as ms
from pymc_dpnoise.mechanisms.core import analytic_gaussian_sigma

COV = np.array([[0.5, 0.1, -0.05], [0.1, 0.3, 0.02], [-0.05, 0.02, 0.2]])
THETA = np.array([-0.9, -0.5, 0.3])


def _eval(glm, theta=THETA, cov=COV, **kw):
    m, c = ss_moments(theta, cov, glm, **kw)
    return pytensor.function([], [m, c])()  # one compiled function for both


# ------------------------------------------------------------------------ moments: exact


@pytest.mark.parametrize(
    "glm, kw",
    [
        ("linear", dict(sigma=0.7)),
        ("logistic", dict(order=3)),
        ("logistic", dict(order=7)),
        ("poisson", {}),
    ],
)
def test_moments_equal_isserlis_enumeration(glm, kw):
    mean, cov_s = _eval(glm, **kw)
    rmean, rcov = reference_moments(THETA, COV, glm, kw.get("sigma"), kw.get("order", 3))
    scale = max(1.0, np.abs(rcov).max())
    # moments from the same sums in another order (n u of the scale) against a NumPy reference:
    # 1e-12 of the scale
    assert np.abs(mean - rmean).max() <= 1e-12 * scale
    # moments from the same sums in another order (n u of the scale) against a NumPy reference:
    # 1e-12 of the scale
    assert np.abs(cov_s - rcov).max() <= 1e-12 * scale
    assert np.linalg.eigvalsh(cov_s).min() >= -1e-12 * scale


def test_layout_matches_statistics():
    names = stat_names("poisson", 3)
    assert len(names) == len(monomials("poisson", 3)) == 18
    X = np.array([[1.0, 2.0, 3.0]])
    t = ms.sufficient_statistics(X, [2.0], "poisson")[0]
    expect = [1, 2, 3, 1, 4, 9, 2 * 2**0.5, 3 * 2**0.5, 6 * 2**0.5]
    np.testing.assert_allclose(t, expect + [2 * e for e in expect])


def _mc_moments(glm, theta, cov, n, rng, sigma=0.7, batches=20):
    """Batch-means Monte Carlo estimates of E[t] and E[t t^T], with standard errors."""
    d = len(theta)
    pairs = [(a, a) for a in range(d)] + [(a, b) for a in range(d) for b in range(a + 1, d)]
    i, j = np.array(pairs).T
    w = np.where(i == j, 1.0, math.sqrt(2.0))
    means, seconds = [], []
    for _ in range(batches):
        x = rng.multivariate_normal(np.zeros(d), cov, size=n // batches)
        u = x @ theta
        q = x[:, i] * x[:, j] * w
        if glm == "logistic":
            y = np.where(rng.random(len(u)) < 1 / (1 + np.exp(-u)), 1.0, -1.0)
            t = np.hstack([y[:, None] * x, q])
        else:
            y = rng.poisson(np.exp(u)).astype(float)
            t = np.hstack([x, q, y[:, None] * x, y[:, None] * q])
        means.append(t.mean(0))
        seconds.append(t.T @ t / len(t))
    means, seconds = np.array(means), np.array(seconds)
    se = lambda a: a.std(0, ddof=1) / math.sqrt(batches)  # noqa: E731
    return means.mean(0), se(means), seconds.mean(0), se(seconds)


@pytest.mark.parametrize(
    "glm, kw, theta_scale",
    [("logistic", dict(order="quadrature"), 2.0), ("poisson", {}, 1.0), ("logistic", {}, 0.2)],
)
def test_moments_match_monte_carlo(glm, kw, theta_scale):
    """1e6 records, 20 batch means; order 3 only where s^2 = θᵀΣθ is small (0.2·THETA: s^2 ≈ 0.02)."""
    _check_moments_against_monte_carlo(glm, kw, theta_scale, 1_000_000)


@pytest.mark.slow
@pytest.mark.parametrize(
    "glm, kw, theta_scale",
    [("logistic", dict(order="quadrature"), 2.0), ("poisson", {}, 1.0), ("logistic", {}, 0.2)],
)
def test_moments_match_monte_carlo_1e7(glm, kw, theta_scale):
    """The issue's 10^7 draws: Monte Carlo error ~3x smaller than the default test's."""
    _check_moments_against_monte_carlo(glm, kw, theta_scale, 10_000_000)


def _check_moments_against_monte_carlo(glm, kw, theta_scale, n):
    theta = THETA * theta_scale
    mean, cov_s = _eval(glm, theta=theta, **kw)
    m1, s1, m2, s2 = _mc_moments(glm, theta, COV, n, np.random.default_rng(5))
    z1 = np.abs(mean - m1) / s1
    z2 = np.abs(cov_s + np.outer(mean, mean) - m2) / np.maximum(s2, 1e-300)
    z2 = z2[s2 > 0]
    # Student t with 19 dof; ~200 entries: a max below 5.5 fails with probability < 1e-3
    assert z1.max() < 5.5 and z2.max() < 5.5, (z1.max(), z2.max())


def test_quadrature_matches_high_order_taylor_at_small_theta():
    a, ca = _eval("logistic", theta=THETA * 0.05, order="quadrature")
    b, cb = _eval("logistic", theta=THETA * 0.05, order=9)
    # values <= 1/2; Gauss quadrature (few-ulp exp per node) vs a Taylor series whose order-9
    # truncation at theta/20 is < 1e-16: a few ulp (measured 5e-17); 1e-13 = 900 ulp of 1/2
    assert np.abs(a - b).max() < 1e-13 and np.abs(ca - cb).max() < 1e-13


# ------------------------------------------------------------------------ log density


# backend: PyTensor's Python VM cannot run the Poisson graph (an n-ary add of more than 32
# terms: "Elemwise.perform (Python mode) does not support more than 32 operands")
@pytest.mark.backend
@pytest.mark.parametrize("glm", ["linear", "logistic", "poisson"])
def test_logp_equals_scipy_and_grad_finite(glm):
    sigma = 0.7 if glm == "linear" else None
    rmean, rcov = reference_moments(THETA, COV, glm, sigma)
    m = len(rmean)
    noise = 3.0 * np.eye(m)
    rng = np.random.default_rng(0)
    z = 500 * rmean + rng.normal(size=m) * 20
    d = SSNormalApprox.dist(THETA, COV, 500.0, noise, glm, sigma)
    lp = float(pm.logp(d, z).eval())
    ref = stats.multivariate_normal(500 * rmean, 500 * rcov + noise).logpdf(z)
    # against scipy's multivariate normal (Cholesky of 5x5, cond <= 1e3): m^2 u cond ~ 1e-12, 1e-10
    # relative of max(1, |ref|)
    assert abs(lp - ref) <= 1e-10 * max(1.0, abs(ref))
    th = pt.dvector("th")
    d2 = SSNormalApprox.dist(th, COV, 500.0, noise, glm, sigma)
    logp = pm.logp(d2, z)
    f = pytensor.function([th], [logp, pytensor.grad(logp, th)])
    _, g = f(THETA)
    fd = np.array([(f(THETA + 1e-6 * e)[0] - f(THETA - 1e-6 * e)[0]) / 2e-6 for e in np.eye(3)])
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    assert np.all(np.isfinite(f(np.zeros(3))[1]))  # theta = 0: no sqrt/0 problems


# PyMC's Check ops are dropped by JAX tracing (it says so): expected, not a defect here
@pytest.mark.filterwarnings("ignore:Skipping Check.*JAX tracing:UserWarning")
@pytest.mark.backend
def test_backends_agree():
    th = pt.dvector("th")
    rmean, _ = reference_moments(THETA, COV, "logistic")
    z = 100 * rmean + 3.0
    d = SSNormalApprox.dist(th, COV, 100.0, 2.0 * np.eye(9), "logistic", order="quadrature")
    logp = pm.logp(d, z)
    out = {}
    for mode in ("NUMBA", "FAST_RUN", "JAX"):
        f = pytensor.function([th], [logp, pytensor.grad(logp, th)], mode=mode)
        out[mode] = np.concatenate([np.atleast_1d(a) for a in f(THETA)])
    for mode in ("FAST_RUN", "JAX"):
        # another backend's libm (Numba/LLVM, C, XLA may contract FMAs): few-ulp calls times the
        # condition of a log density, 1e-10 relative is ~1e6 ulp; atol for values near 0
        np.testing.assert_allclose(out[mode], out["NUMBA"], rtol=1e-10)


def test_not_positive_definite_taylor_covariance_falls_back_to_quadrature():
    # noise 0 and a huge Taylor effect: order-3 covariance is indefinite at s ~ 6; that was
    # -inf with a zero gradient (NUTS stalled silently), now the exact (quadrature) density
    d = SSNormalApprox.dist(THETA * 12, COV, 10.0, np.zeros((9, 9)), "logistic")
    q = SSNormalApprox.dist(THETA * 12, COV, 10.0, np.zeros((9, 9)), "logistic", order="quadrature")
    z = np.zeros(9)
    # a covariance given as noise_cov or as the equivalent quadratic form: two Cholesky paths of
    # the same 5x5 (cond <= 1e2), m^2 u cond ~ 1e-13
    assert float(pm.logp(d, z).eval()) == pytest.approx(float(pm.logp(q, z).eval()), rel=1e-12)


def test_validation_names_argument():
    ok = dict(theta=THETA, cov=COV, n=10.0, noise_cov=np.eye(9), glm="logistic")
    for over, name in [
        ({"n": 0.0}, "n"),
        ({"cov": -COV}, "cov"),
        ({"noise_cov": np.eye(3)}, "noise_cov"),
        ({"glm": "probit"}, "glm"),
        ({"sigma": 1.0}, "sigma"),
        ({"order": 2}, "order"),
    ]:
        with pytest.raises(ValueError, match=name):
            SSNormalApprox.dist(**(ok | over))
    with pytest.raises(ValueError, match="sigma"):
        SSNormalApprox.dist(**(ok | {"glm": "linear", "noise_cov": np.eye(10)}))


def test_draws_follow_the_normal_approximation():
    d = SSNormalApprox.dist(THETA, COV, 100.0, np.eye(9), "logistic", order="quadrature")
    draws = pm.draw(d, draws=3000, random_seed=4)
    mean, cs = _eval("logistic", order="quadrature")
    total = 100 * cs + np.eye(9)
    r = draws - 100 * mean
    d2 = np.einsum("ni,ij,nj->n", r, np.linalg.inv(total), r)
    assert stats.kstest(d2, stats.chi2(9).cdf).pvalue > 1e-3


@pytest.mark.backend  # runs NUTS: the default mode's compile is cheaper than sampling on the Python VM
def test_nuts_recovers_theta():
    rng = np.random.default_rng(7)
    theta = np.array([1.0, -0.6])
    cov = np.array([[0.09, 0.02], [0.02, 0.05]])
    X = rng.multivariate_normal(np.zeros(2), cov, size=20000)
    y = np.where(rng.random(20000) < 1 / (1 + np.exp(-X @ theta)), 1.0, -1.0)
    rel = ms.release_sufficient_statistics(X, y, "logistic", 1.0, 1e-5, rng)
    with pm.Model():
        th = pm.Normal("theta", 0.0, 3.0, shape=2)
        SSNormalApprox(
            "z", th, cov, rel.n, rel.noise_cov, "logistic", order="quadrature", observed=rel.z
        )
        idata = pm.sample(
            draws=300,
            tune=300,
            chains=2,
            cores=1,
            random_seed=1,
            progressbar=False,
            nuts_sampler="nutpie",
            compute_convergence_checks=False,
        )
    post = idata.posterior["theta"].values.reshape(-1, 2)
    zscore = np.abs(post.mean(0) - theta) / post.std(0)
    assert np.all(zscore < 4), zscore


# ------------------------------------------------------------------------ sensitivities


def _stats_pair(glm, r1, r2, phi, y1, y2, weights):
    x1 = np.array([r1, 0.0])
    x2 = r2 * np.array([np.cos(phi), np.sin(phi)])

    # independent t2 with the sqrt(2) cross term
    def t2(x):
        return np.array([x[0] ** 2, x[1] ** 2, math.sqrt(2) * x[0] * x[1]])

    if glm == "logistic":
        blocks = lambda x, y: [y * x, t2(x)]  # noqa: E731
    elif glm == "linear":
        blocks = lambda x, y: [t2(x), y * x, np.array([y * y])]  # noqa: E731
    else:
        blocks = lambda x, y: [x, t2(x), y * x, y * t2(x)]  # noqa: E731
    a, b = blocks(x1, y1), blocks(x2, y2)
    return math.sqrt(sum(w * np.sum((p - q) ** 2) for w, p, q in zip(weights, a, b, strict=True)))


def _brute(glm, R, Ry, weights):
    best = 0.0
    radii = np.linspace(0, R, 11)
    phis = np.linspace(0, np.pi, 721)
    ys = [-1.0, 1.0] if glm == "logistic" else np.linspace(-Ry if glm == "linear" else 0, Ry, 9)
    for r1 in radii:
        for r2 in radii:
            for y1 in ys:
                for y2 in ys:
                    v = max(_stats_pair(glm, r1, r2, p, y1, y2, weights) for p in phis)
                    best = max(best, v)
    return best


@pytest.mark.slow
def test_sensitivities_closed_forms_and_brute_force():
    # closed forms (written out from the lemmas): + * / and one sqrt, all correctly rounded on
    # any IEEE machine, then squared: a few ulp; rel=1e-14 = 45 ulp
    assert ms.logistic_ss_sensitivity(1.0) ** 2 == pytest.approx(4.5, rel=1e-14)
    assert ms.poisson_ss_sensitivity(1.0, 3.0) ** 2 == pytest.approx(4.5 * 10, rel=1e-14)
    assert ms.linear_ss_sensitivity(1.0, 2.0) ** 2 == pytest.approx(1.5 * 16 + 8 + 2, rel=1e-14)
    s1, s2 = 1.0, 1.5
    c = s1**2 / s2**2
    # as above: rounding of + * / sqrt only
    assert ms.logistic_ss_sensitivity(1.0, s1, s2) ** 2 == pytest.approx(
        s2**2 / (2 * s1**2) + 2 + 2 * c, rel=1e-14
    )
    # brute force over (|x|, |x'|, angle, y, y'), d = 2, R = 1
    bl = _brute("logistic", 1.0, 1.0, [1.0, c])
    # maximiser <x, x'> = -1/(2c) = -1.125 lies outside [-1, 1]: the lemma is a strict bound
    assert 2.0 - 1e-9 <= bl < ms.logistic_ss_sensitivity(1.0, s1, s2)
    c12 = 1.0 / 1.2**2  # maximiser -0.72 inside [-1, 1]: the lemma is tight
    bl = _brute("logistic", 1.0, 1.0, [1.0, c12])
    assert bl == pytest.approx(ms.logistic_ss_sensitivity(1.0, 1.0, 1.2), rel=1e-4)
    bp = _brute("poisson", 1.0, 1.0, [1, 1, 1, 1])
    assert bp == pytest.approx(ms.poisson_ss_sensitivity(1.0, 1.0), rel=1e-4)
    blin = _brute("linear", 1.0, 1.0, [1, 1, 1])
    assert blin <= ms.linear_ss_sensitivity(1.0, 1.0) + 1e-12  # a valid, not tight, bound
    assert blin == pytest.approx(math.sqrt(4.5), rel=1e-4)


def test_polynomial_sensitivity():
    for order in (1, 2, 3, 6):
        t = np.linspace(-1, 1, 200001)
        brute = np.max(sum(2 - 2 * t**i for i in range(1, order + 1)))
        assert ms.polynomial_ss_sensitivity(order) ** 2 == pytest.approx(brute, rel=1e-8)
    # sqrt and squares of a small rational expression: a few ulp
    assert ms.polynomial_ss_sensitivity(2) ** 2 == pytest.approx(4.5, rel=1e-10)


def _bisect_sigma(eps, delta, sens):
    def excess(sigma):
        a = sens / (2 * sigma) - eps * sigma / sens
        b = -sens / (2 * sigma) - eps * sigma / sens
        return stats.norm.cdf(a) - math.exp(eps) * stats.norm.cdf(b) - delta

    # solver tolerances (the root to ~1e-13 relative), far below the comparisons' tolerances
    return optimize.brentq(excess, 1e-3 * sens, 1e4 * sens, xtol=1e-14, rtol=1e-13)


@pytest.mark.parametrize("eps, delta, sens", [(1.0, 1e-5, 1.0), (0.1, 1e-5, 2.1), (3.0, 1e-8, 0.5)])
def test_analytic_sigma_vs_independent_bisection(eps, delta, sens):
    assert analytic_gaussian_sigma(eps, delta, sens) == pytest.approx(
        # two root finders on the same monotone function, each to ~1e-12 relative: 1e-9
        _bisect_sigma(eps, delta, sens),
        rel=1e-9,
    )


def test_release_central_and_local():
    rng = np.random.default_rng(1)
    X = rng.normal(0, 1.0, size=(200, 2))
    y = np.where(rng.random(200) < 0.5, 1.0, -1.0)
    t = ms.sufficient_statistics(ms.clip_rows(X, 1.0), y, "logistic").sum(0)
    assert np.all(np.linalg.norm(ms.clip_rows(X, 1.0), axis=1) <= 1 + 1e-12)
    res = {True: [], False: []}
    for local in (False, True):
        for _ in range(400):
            rel = ms.release_sufficient_statistics(X, y, "logistic", 1.0, 1e-5, rng, local=local)
            res[local].append(rel.z - t)
        sigma = analytic_gaussian_sigma(1.0, 1e-5, math.sqrt(4.5))
        var = np.var(res[local], axis=0)
        expected = (200 if local else 1) * sigma**2
        assert rel.noise_cov[0, 0] == pytest.approx(expected)
        # 400 draws: the sample variance has relative sd ~ 0.07
        assert np.all(np.abs(var / expected - 1) < 0.3)


def test_ss_taylor_order_outside_its_range_uses_the_exact_moments():
    """Was: -inf with a zero gradient once theta' Sigma theta exceeds a few units (NUTS
    stalled).  Beyond the series' range the quadrature log density and gradient are used."""
    import pymc as pm

    import pymc_dpnoise as pmd

    th = pt.dvector("th")
    value = np.array([100.0, 0, 300, 0, 300])

    def fn(order):
        rv = pmd.SSNormalApprox.dist(th, np.eye(2), 1000.0, np.eye(5), "logistic", order=order)
        logp = pm.logp(rv, value)
        return pytensor.function([th], [logp, pytensor.grad(logp, th)])

    exact = fn("quadrature")
    for order, bad in [(3, 2.6), (5, 1.8)]:
        f = fn(order)
        inside = np.array([0.5, 0.0])
        assert np.isfinite(f(inside)[0]) and f(inside)[0] != exact(inside)[0]  # the series
        lp, g = f(np.array([bad, 0.0]))
        lp_q, g_q = exact(np.array([bad, 0.0]))
        assert lp == lp_q and np.isfinite(lp)
        np.testing.assert_array_equal(g, g_q)
        assert np.all(np.isfinite(g)) and np.any(g != 0)
