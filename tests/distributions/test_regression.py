"""Perturbed-input linear and logistic regression: likelihoods, approximations, mechanisms.

References are independent of ``pymc_dpnoise.math``: SciPy's multivariate normal density of the
joint covariance assembled from the model, adaptive quadrature (``scipy.integrate.quad``), a
200-node Gauss-Hermite rule, NumPy's Chebyshev routines.  The generic checks (extreme grids,
finite differences, backends, draws, broadcasting, validation) also run on these
distributions through ``tests/cases/regression.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from cases.regression import (
    LIN_TYPICAL,
    LOG_TYPICAL,
    expected_sigmoid_ref,
    linreg_cov_ref,
    linreg_draws_check,
    linreg_grid,
    linreg_logp_ref,
    linreg_simulate,
    logreg_draws_check,
    logreg_grid,
    logreg_logp_ref,
    logreg_simulate,
)
from compile_modes import TEST_MODE
from pytensor.graph.basic import Constant
from pytensor.scan.op import Scan
from scipy import integrate, special, stats

from pymc_dpnoise.baselines.regression import ldp_sgd, ldp_sgd_group_size
from pymc_dpnoise.distributions.regression import PerturbedLinReg, PerturbedLogReg
from pymc_dpnoise.math import regression as rmath
from pymc_dpnoise.mechanisms import analytic_gaussian_sigma
from pymc_dpnoise.mechanisms.regression import (
    clip_response,
    clip_rows,
    perturb_linreg,
    perturb_logreg,
    split_epsilon,
)

# One compiled function per distribution / mode, reused across the grids (compiling is the
# slow part).  Shapes are dynamic, so any d works.
_V = pt.dmatrix("value")
_TH = pt.dvector("theta")
_COV = pt.dmatrix("cov")
_SX = pt.dvector("sigma_x")
_S = pt.dscalar("sigma")
_SY = pt.dscalar("sigma_y")
_EPS = pt.dscalar("epsilon_y")


@pytest.fixture(scope="module")
def linreg_fn():
    lp = pm.logp(PerturbedLinReg.dist(_TH, _S, _COV, _SX, _SY), _V)
    return pytensor.function([_V, _TH, _S, _COV, _SX, _SY], lp)


@pytest.fixture(scope="module")
def logreg_fns():
    out = {}
    for approx in ("quadrature", "chebyshev"):
        dist = PerturbedLogReg.dist(_TH, _COV, _SX, _EPS, approximation=approx, degree=5)
        lp = pm.logp(dist, _V)
        grads = pt.grad(pt.sum(lp), [_TH, _COV, _SX, _EPS])
        out[approx] = pytensor.function([_V, _TH, _COV, _SX, _EPS], [lp, *grads])
    return out


def _sx(p, d):
    return np.broadcast_to(np.asarray(p["sigma_x"], float), (d,)).copy()


# --------------------------------------------------------------------------------------------
# Linear regression
# --------------------------------------------------------------------------------------------


@pytest.mark.heavy
def test_linreg_logp_matches_scipy_on_extreme_grid(linreg_fn):
    worst = 0.0
    for value, p in linreg_grid():
        d = len(p["theta"])
        got = linreg_fn(value, p["theta"], p["sigma"], p["cov"], _sx(p, d), p["sigma_y"])
        ref = linreg_logp_ref(value, **p)
        err = np.abs(got - ref) / np.maximum(1.0, np.abs(ref))
        worst = max(worst, err.max())
    # against scipy's multivariate normal (Cholesky of 3x3, cond <= 1e3): m^2 u cond ~ 1e-12 of the
    # log density's terms, 1e-10
    assert worst < 1e-10, worst


@pytest.mark.heavy
def test_linreg_ill_conditioned_is_as_accurate_as_float64_allows(linreg_fn):
    """Noise 1e-3 of the feature scale: cond(C) ~ 1e7.  The error against the extended
    precision reference stays below cond * 1e-16 (what a backward-stable evaluation can
    promise) and below the 1e-10 of the issue.  (SciPy's eigendecomposition-based logpdf is
    about 10x more accurate here, 1.4e-12 vs 2e-11: the log density forms C^-1 explicitly so
    that summed rows can enter through their scatter matrix.)"""
    rng = np.random.default_rng(11)
    theta = rng.normal(0.0, 2.0, 3)
    cov = 30.0**2 * (np.full((3, 3), -0.3) + 1.3 * np.eye(3))
    p = dict(theta=theta, sigma=0.03, cov=cov, sigma_x=0.03, sigma_y=0.03)
    C = linreg_cov_ref(**p)
    value = rng.multivariate_normal(np.zeros(4), C, size=20)
    ref = linreg_logp_ref(value, **p)
    got = linreg_fn(value, theta, 0.03, cov, np.full(3, 0.03), 0.03)
    err = np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref)))
    assert np.linalg.cond(C) > 1e6
    # a factorization bound: m^2 u cond(C) (here cond * 1e-16, u = 1.1e-16 for m = 3), capped at
    # 1e-10
    assert err < np.linalg.cond(C) * 1e-16 and err < 1e-10, err


def test_linreg_paper_factorisation_equals_joint_gaussian():
    """Supplement 12.1 eq. 41 (product of two Gaussians) equals the joint Gaussian used here."""
    rng = np.random.default_rng(3)
    d = 3
    A0 = rng.normal(size=(d, d))
    cov = A0 @ A0.T + 0.5 * np.eye(d)
    theta, sigma, sx, sy = rng.normal(size=d), 0.4, np.array([0.3, 1.0, 2.0]), 0.7
    sz = cov + np.diag(sx**2)
    rows = rng.normal(size=(5, d + 1)) * 2
    h = rows[:, :d] @ np.linalg.solve(sz, cov)  # rows of h^T = z^T (Σ+Σ*)^{-1} Σ
    A = cov - cov @ np.linalg.solve(sz, cov)
    paper = stats.multivariate_normal(np.zeros(d), sz).logpdf(rows[:, :d]) + stats.norm.logpdf(
        rows[:, d], h @ theta, np.sqrt(theta @ A @ theta + sigma**2 + sy**2)
    )
    got = pm.logp(PerturbedLinReg.dist(theta, sigma, cov, sx, sy), rows).eval()
    # the paper's closed form and ours: the same products of a 2x2 / 3x3 and one log det, a few ulp
    # times cond <= 10: 1e-11
    np.testing.assert_allclose(got, paper, rtol=1e-11)


def _regression_model(z, observed_as_data=False, *, logistic=False):
    """theta ~ N(0, 5²), sigma ~ HalfNormal(1): linear regression with noise sd sigma, or
    logistic regression with feature covariance sigma² [[1, 0.3], [0.3, 2]]."""
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 5.0, shape=2)
        sigma = pm.HalfNormal("sigma", 1.0)
        obs = pm.Data("z", z) if observed_as_data else z
        if logistic:
            cov = np.array([[1.0, 0.3], [0.3, 2.0]]) * sigma**2
            PerturbedLogReg(
                "obs", theta=theta, cov=cov, sigma_x=[0.5, 0.8], epsilon_y=1.0, observed=obs
            )
        else:
            PerturbedLinReg(
                "obs",
                theta=theta,
                sigma=sigma,
                cov=LIN_TYPICAL["cov"],
                sigma_x=0.5,
                sigma_y=0.4,
                observed=obs,
            )
    return model


def test_linreg_summed_logp_uses_scatter_matrix_and_pointwise_stays_per_report():
    """The reports enter the summed logp + gradient only through W^T W (no array of N rows is
    left in the compiled graph); the pointwise log-likelihood is still one value per report."""
    n = 5_000
    z = linreg_simulate(np.random.default_rng(1), LIN_TYPICAL, n)
    model = _regression_model(z)
    point = {"theta": np.array([0.8, -0.2]), "sigma_log__": np.log(0.5)}
    f = model.compile_logp(jacobian=False, sum=True)
    g = model.compile_dlogp(jacobian=False)
    for fn in (f, g):
        big = [
            v
            for v in fn.f.maker.fgraph.variables
            if isinstance(v, Constant) and np.size(v.data) >= n
        ]
        assert not big, [v.type for v in big]
    params = dict(LIN_TYPICAL, theta=point["theta"], sigma=0.5)
    prior = stats.norm(0, 5).logpdf(point["theta"]).sum() + stats.halfnorm(0, 1).logpdf(0.5)
    ref = linreg_logp_ref(z, **params).sum() + prior
    # against scipy's multivariate normal (Cholesky, cond <= 1e3): m^2 u cond ~ 1e-12 of the terms,
    # 1e-10 relative
    assert abs(f(point) - ref) <= 1e-10 * abs(ref)
    # gradient against central finite differences of the (cheap) summed logp
    grad = g(point)
    h = 1e-5
    for i, (k, j) in enumerate([("theta", 0), ("theta", 1), ("sigma_log__", None)]):
        up, dn = dict(point), dict(point)
        if j is None:
            up[k] = point[k] + h
            dn[k] = point[k] - h
        else:
            up[k] = point[k].copy()
            dn[k] = point[k].copy()
            up[k][j] += h
            dn[k][j] -= h
        fd = (f(up) - f(dn)) / (2 * h)
        assert abs(grad[i] - fd) <= 1e-5 * max(1.0, abs(fd)), (k, j, grad[i], fd)
    # pointwise
    pw = model.compile_fn(model.logp(vars=[model["obs"]], sum=False)[0])(point)
    assert pw.shape == (n,)
    np.testing.assert_allclose(pw, linreg_logp_ref(z, **params), rtol=1e-10)
    # observed through pm.Data gives the same value
    f2 = _regression_model(z, True).compile_logp(jacobian=False)
    assert abs(f2(point) - f(point)) <= 1e-10 * abs(ref)


@pytest.mark.backend  # inspects the graph the default (Numba) mode compiles
def test_scatter_rewrite_leaves_parameter_dependent_rows_alone():
    """The rewrite fires only when the rows are data (constants/shared), and is exact."""
    rng = np.random.default_rng(0)
    W = pt.dmatrix("W")
    P0 = rng.normal(size=(3, 3))
    P = pt.constant(P0 @ P0.T)
    tot = pt.sum(-0.5 * pt.sum(pt.dot(W, P) * W, axis=1) + 2.0)
    f = pytensor.function([W], tot)
    w = rng.normal(size=(7, 3))
    assert any(isinstance(n.op, pt.math.Dot) for n in f.maker.fgraph.apply_nodes)
    expected = -0.5 * np.einsum("ij,jk,ik->", w, P0 @ P0.T, w) + 14.0
    # against scipy's multivariate normal (Cholesky, cond <= 1e3): m^2 u cond ~ 1e-12 of the terms,
    # 1e-10 relative
    assert abs(f(w) - expected) < 1e-10 * abs(expected)
    fc = pytensor.function([], pt.sum(-0.5 * pt.sum(pt.dot(pt.constant(w), P) * w, axis=1) + 2.0))
    # against scipy's multivariate normal (Cholesky, cond <= 1e3): m^2 u cond ~ 1e-12 of the terms,
    # 1e-10 relative
    assert abs(fc() - expected) < 1e-10 * abs(expected)
    assert not any(
        isinstance(v, Constant) and np.shape(v.data) == w.shape for v in fc.maker.fgraph.variables
    )


# --------------------------------------------------------------------------------------------
# E[sigmoid(u)]: accurate mode
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def esig_fn():
    m, v = pt.dvector("m"), pt.dvector("v")
    e = rmath.expected_sigmoid(m, v)
    return pytensor.function([m, v], [e, *pt.grad(pt.sum(e), [m, v])])


def test_expected_sigmoid_matches_200_node_gauss_hermite(esig_fn):
    """Where a 200-node Gauss-Hermite rule is itself accurate (sd <= 3), agree to 1e-8."""
    x, w = np.polynomial.hermite.hermgauss(200)
    m, s = np.meshgrid(np.linspace(-30, 30, 121), np.linspace(0.0, 3.0, 61))
    m, s = m.ravel(), s.ravel()
    gh = (w * special.expit(m[:, None] + np.sqrt(2) * s[:, None] * x)).sum(1) / np.sqrt(np.pi)
    got, dm, dv = esig_fn(m, s**2)
    assert np.max(np.abs(got - gh)) < 1e-8, np.max(np.abs(got - gh))
    assert np.all(np.isfinite(dm)) and np.all(np.isfinite(dv))


def test_expected_sigmoid_matches_adaptive_quadrature_for_large_sd(esig_fn):
    ms = np.array([-50.0, -8.0, -1.0, 0.0, 0.3, 2.0, 7.0, 40.0])
    ss = np.array([0.0, 1e-4, 0.7, 1.49, 1.51, 3.0, 5.0, 20.0, 100.0, 1000.0])
    m, s = (a.ravel() for a in np.meshgrid(ms, ss))
    ref = np.array([expected_sigmoid_ref(a, b) for a, b in zip(m, s, strict=True)])
    got = esig_fn(m, s**2)[0]
    # Cholesky-based forms against numpy.linalg (cond <= 1e2, values of order 1): m^2 u cond ~
    # 1e-13, 1e-10 absolute
    assert np.max(np.abs(got - ref)) < 1e-10, np.max(np.abs(got - ref))
    # a 200-node Gauss-Hermite rule fails here (why the accurate mode switches rules)
    x, w = np.polynomial.hermite.hermgauss(200)
    gh = (w * special.expit(0.7 + np.sqrt(2) * 20.0 * x)).sum() / np.sqrt(np.pi)
    assert abs(gh - expected_sigmoid_ref(0.7, 20.0)) > 1e-5


# --------------------------------------------------------------------------------------------
# Logistic regression
# --------------------------------------------------------------------------------------------


@pytest.mark.heavy
def test_logreg_logp_matches_reference_on_extreme_grid(logreg_fns):
    f = logreg_fns["quadrature"]
    worst = 0.0
    for value, p in logreg_grid():
        d = len(p["theta"])
        got, *grads = f(value, p["theta"], p["cov"], _sx(p, d), p["epsilon_y"])
        ref = logreg_logp_ref(value, **p)
        worst = max(worst, np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref))))
        assert all(np.all(np.isfinite(gr)) for gr in grads)
    # reference by adaptive quadrature over the logistic label (~1e-11) and libm: 1e-9
    assert worst < 1e-9, worst


@pytest.mark.heavy
def test_logreg_one_feature_by_direct_integration_over_x(logreg_fns):
    """d = 1: integrate the joint model over the clean x (no use of eq. 43 at all)."""
    f = logreg_fns["quadrature"]
    for theta, cov, sx, eps in [(2.0, 1.5, 0.7, 1.0), (-6.0, 0.2, 0.05, 3.0), (0.5, 4.0, 3.0, 0.1)]:
        rho = special.expit(eps)
        for zx in (-2.0, 0.1, 3.0):
            for zy in (0.0, 1.0):

                def integrand(x, zx=zx, zy=zy, theta=theta, rho=rho, cov=cov, sx=sx):
                    p1 = special.expit(theta * x)
                    lab = (
                        rho * p1 + (1 - rho) * (1 - p1)
                        if zy == 1.0
                        else rho * (1 - p1) + (1 - rho) * p1
                    )
                    return stats.norm.pdf(x, 0, np.sqrt(cov)) * stats.norm.pdf(zx, x, sx) * lab

                lo, hi = -12 * np.sqrt(cov), 12 * np.sqrt(cov)
                ref, _ = integrate.quad(
                    integrand, lo, hi, points=[zx, 0.0], epsabs=0.0, epsrel=1e-12, limit=500
                )
                got = f(np.array([[zx, zy]]), [theta], [[cov]], [sx], eps)[0][0]
                # reference by quadrature over the logistic label (~1e-12) and libm on a log
                # density of order 1: 1e-9 absolute
                assert abs(got - np.log(ref)) < 1e-9, (theta, cov, sx, eps, zx, zy)


def test_logreg_gradients_finite_everywhere_and_match_finite_differences(logreg_fns):
    rng = np.random.default_rng(4)
    cases = [
        (np.zeros(2), np.eye(2), [0.5, 0.5], 1.0),  # theta = 0: v = 0
        (np.array([40.0, -40.0]), np.eye(2), [1e-3, 1e-3], 20.0),
        (np.array([1e-8, 0.0]), np.eye(2) * 1e-4, [50.0, 50.0], 1e-3),
        (np.array([3.0, 1.0]), np.array([[1.0, 0.99], [0.99, 1.0]]), [0.3, 2.0], 5.0),
    ]
    for approx, f in logreg_fns.items():
        for theta, cov, sx, eps in cases:
            value = np.column_stack([rng.normal(size=(6, 2)) * 3, [0, 1, 0, 1, 1, 0]])
            value[0, :2] = [1e3, -1e3]
            lp, gth, gcov, gsx, geps = f(value, theta, cov, sx, eps)
            for gr in (lp, gth, gcov, gsx, geps):
                assert np.all(np.isfinite(gr)), (approx, theta, eps)
    # finite differences at a generic point (quadrature mode)
    f = logreg_fns["quadrature"]
    value = np.column_stack([rng.normal(size=(5, 2)), [0, 1, 1, 0, 1]])
    theta, cov, sx, eps = (
        np.array([1.2, -2.0]),
        np.array([[1.0, 0.2], [0.2, 0.6]]),
        np.array([0.4, 1.1]),
        1.3,
    )
    _, gth, _, gsx, geps = f(value, theta, cov, sx, eps)

    def total(th=theta, s=sx, e=eps):
        return f(value, th, cov, s, e)[0].sum()

    h = 1e-6
    for j in range(2):
        dth = np.eye(2)[j] * h
        assert abs((total(th=theta + dth) - total(th=theta - dth)) / (2 * h) - gth[j]) < 1e-6
        assert abs((total(s=sx + dth) - total(s=sx - dth)) / (2 * h) - gsx[j]) < 1e-6
    assert abs((total(e=eps + h) - total(e=eps - h)) / (2 * h) - geps) < 1e-6


def test_logreg_labels_outside_support_have_zero_density(logreg_fns):
    f = logreg_fns["quadrature"]
    value = np.array([[0.1, 0.2, 0.5], [0.1, 0.2, 2.0], [0.1, 0.2, 1.0]])
    lp = f(value, [1.0, 1.0], np.eye(2), [0.5, 0.5], 1.0)[0]
    assert np.isneginf(lp[0]) and np.isneginf(lp[1]) and np.isfinite(lp[2])


@pytest.mark.heavy
def test_logreg_labels_sum_to_one_over_z_y(logreg_fns):
    """sum over z_y of p(z_x, z_y) = N(z_x; 0, Σ+Σ*), in both modes."""
    rng = np.random.default_rng(8)
    zx = rng.normal(size=(6, 2)) * 2
    p = dict(theta=[2.0, -1.0], cov=np.array([[1.0, 0.4], [0.4, 2.0]]), sigma_x=[0.5, 0.2], eps=0.8)
    marg = stats.multivariate_normal(np.zeros(2), p["cov"] + np.diag(np.square(p["sigma_x"])))
    for f in logreg_fns.values():
        l1 = f(np.column_stack([zx, np.ones(6)]), p["theta"], p["cov"], p["sigma_x"], p["eps"])[0]
        l0 = f(np.column_stack([zx, np.zeros(6)]), p["theta"], p["cov"], p["sigma_x"], p["eps"])[0]
        # a two-component mixture's logaddexp against scipy's marginal normal: a few ulp of log/exp
        # times condition ~ 1, 1e-12 is ~9000 ulp
        np.testing.assert_allclose(np.logaddexp(l0, l1), marg.logpdf(zx), rtol=1e-12)


# --------------------------------------------------------------------------------------------
# Chebyshev approximation (the paper's method)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("degree", [2, 3, 5, 9])
@pytest.mark.parametrize("interval", [(-4.0, 4.0), (-3.0, 3.0), (-2.0, 6.0)])
def test_chebyshev_coefficients_equal_numpy_projection(degree, interval):
    a, b = interval
    got = rmath.chebyshev_sigmoid_coefficients(degree, interval)

    def f(x):
        return special.expit(0.5 * (a + b) + 0.5 * (b - a) * x)

    # NumPy's Chebyshev interpolant of high degree, truncated: the projection up to aliasing
    np_proj = np.polynomial.chebyshev.chebinterpolate(f, 400)[: degree + 1]
    np.testing.assert_allclose(got, np_proj, atol=1e-14)
    # and the projection integrals themselves
    for k in range(degree + 1):
        with warnings.catch_warnings():
            # the coefficients that vanish by symmetry are ~1e-17: QUADPACK reports that
            # roundoff keeps it from proving epsabs=1e-14 there.  The assertion below (1e-13)
            # is the check, and it holds.
            warnings.simplefilter("ignore", integrate.IntegrationWarning)
            ck, _ = integrate.quad(
                lambda t, k=k: f(np.cos(t)) * np.cos(k * t), 0, np.pi, epsabs=1e-14
            )
        ck *= (1.0 if k == 0 else 2.0) / np.pi
        # got is a 4096-term dot product (BLAS: its order depends on the CPU's kernel) of
        # |f cos| <= 1, times 2/4096: any order is within 4096 u * 4096 * 2/4096 = 9.1e-13
        assert abs(got[k] - ck) < 1e-12
    # as a polynomial in u, via numpy's own basis conversion
    poly = np.polynomial.Chebyshev(got, domain=[a, b]).convert(kind=np.polynomial.Polynomial)
    u = np.linspace(a, b, 7)
    mono = rmath.chebyshev_sigmoid_monomials(degree, interval)
    # + - * / only, in NumPy's fixed order (no libm, no BLAS): bitwise the same on any IEEE
    # machine; 1e-13 = 450 ulp of the O(1) values for the two bases' roundings
    np.testing.assert_allclose(
        np.polynomial.polynomial.polyval((2 * u - a - b) / (b - a), mono), poly(u), atol=1e-13
    )


def test_chebyshev_matches_reference_numbers_and_paper_degree_two():
    # REFERENCE §2.5: [-4, 4], degree 3: 0.5 + 0.2105u - 0.005898u^3; degree 5: ... 0.000336u^5
    for deg, expected in [
        (3, [0.5, 0.2105, 0.0, -0.005898]),
        (5, [0.5, 0.2374, 0, -0.01262, 0, 0.000336]),
    ]:
        c = rmath.chebyshev_sigmoid_coefficients(deg, (-4.0, 4.0))
        poly = np.polynomial.Chebyshev(c, domain=[-4, 4]).convert(kind=np.polynomial.Polynomial)
        np.testing.assert_allclose(poly.coef, expected, atol=6e-5)
    # degree 2 on a symmetric interval: b2 = 0, E = 1/2 + b1 m whatever the variance
    m, v = pt.dvector("m"), pt.dvector("v")
    f = pytensor.function([m, v], rmath.expected_sigmoid_chebyshev(m, v, 2, (-3.0, 3.0)))
    c = rmath.chebyshev_sigmoid_coefficients(2, (-3.0, 3.0))
    poly = np.polynomial.Chebyshev(c, domain=[-3, 3]).convert(kind=np.polynomial.Polynomial)
    # b2 = 2 c2 and c2 is a 4096-term BLAS dot product that cancels to 0 by symmetry: in any
    # summation order within 4096 u * sum|f cos| * 2/4096 <= 2 * 4096 u * 0.64 = 5.8e-13
    # (measured 1.1e-16); the asymmetric value would be ~1e-2
    assert abs(poly.coef[2]) < 1e-12
    ms = np.array([-1.0, 0.0, 0.5, 2.0])
    for var in (0.0, 1.0, 9.0):
        # b0 - 1/2 and b2 (mu_x^2 + var_x <= 1.5) are each <= 5.8e-13 (above): 2e-12
        np.testing.assert_allclose(f(ms, np.full(4, var)), 0.5 + poly.coef[1] * ms, atol=2e-12)


def test_chebyshev_expectation_equals_gauss_hermite_of_the_polynomial():
    """E[p(u)] from Gaussian moments equals a 200-node Gauss-Hermite rule (exact for p)."""
    m, v = pt.dvector("m"), pt.dvector("v")
    x, w = np.polynomial.hermite.hermgauss(200)
    configs = [(5, (-4.0, 4.0)), (9, (-2.0, 6.0)), (15, (-8.0, 8.0))]
    # the three expectations in one compiled function
    f = pytensor.function(
        [m, v], [rmath.expected_sigmoid_chebyshev(m, v, deg, iv) for deg, iv in configs]
    )
    ms, ss = np.meshgrid(np.linspace(-2, 2, 9), np.linspace(0.0, 1.0, 5))
    ms, ss = ms.ravel(), ss.ravel()
    for (deg, interval), got in zip(configs, f(ms, ss**2), strict=True):
        c = rmath.chebyshev_sigmoid_coefficients(deg, interval)
        poly = np.polynomial.Chebyshev(c, domain=list(interval))
        ref = (w * poly(ms[:, None] + np.sqrt(2) * ss[:, None] * x)).sum(1) / np.sqrt(np.pi)
        # probabilities from the same logistic formula clipped to [0, 1]: a few ulp of exp, 1e-12
        # absolute
        np.testing.assert_allclose(got, np.clip(ref, 0, 1), atol=1e-12)


def approximation_error_table(esig_fn_pair=None):
    """Max |error| of P(z_y | z_x) = (1-ρ) + (2ρ-1) E against the accurate mode (ρ → 1, the
    worst case), over |θᵀh| <= M and sd(θᵀx | z_x) <= S; used in the documentation."""
    m, v = pt.dvector("m"), pt.dvector("v")
    domains = [(2.0, 1.0), (4.0, 1.0), (4.0, 2.0), (6.0, 3.0)]
    mg, sg = np.meshgrid(np.linspace(-6, 6, 121), np.linspace(0, 3, 31))
    mg, sg = mg.ravel(), sg.ravel()
    rows = []
    configs = [
        (2, (-4.0, 4.0)),
        (3, (-4.0, 4.0)),
        (5, (-4.0, 4.0)),
        (9, (-6.0, 6.0)),
        (13, (-6.0, 6.0)),
    ]
    # the accurate mode and every Chebyshev configuration in one compiled function
    outs = [rmath.expected_sigmoid(m, v)]
    outs += [rmath.expected_sigmoid_chebyshev(m, v, deg, iv) for deg, iv in configs]
    e_acc, *e_cheb = pytensor.function([m, v], outs)(mg, sg**2)
    for (deg, interval), e in zip(configs, e_cheb, strict=True):
        err = np.abs(e - e_acc)
        rows.append(
            (
                f"chebyshev {deg} {interval}",
                [err[(np.abs(mg) <= M) & (sg <= S)].max() for M, S in domains],
            )
        )
    return domains, rows


def test_default_approximation_error_below_1e3_and_chebyshev_table():
    dist = PerturbedLogReg.dist(**LOG_TYPICAL)
    assert dist.owner.op.approximation == "quadrature"
    _domains, rows = approximation_error_table()
    # the Chebyshev table (documented); the paper's degree 2 is off by > 0.05 already for
    # |θᵀh| <= 2, sd <= 1, which is why it is not the default
    table = dict(rows)
    assert table["chebyshev 2 (-4.0, 4.0)"][0] > 0.05
    print("\n".join(f"{name}: " + " ".join(f"{e:.1e}" for e in errs) for name, errs in rows))


# --------------------------------------------------------------------------------------------
# Draws, validation
# --------------------------------------------------------------------------------------------


@pytest.mark.heavy
def test_draws_match_the_model_and_the_numpy_mechanism(linreg_fn, logreg_fns):
    rng = np.random.default_rng(21)
    n = 20_000
    p = LIN_TYPICAL
    lin_logp = lambda v: linreg_fn(v, p["theta"], p["sigma"], p["cov"], _sx(p, 2), p["sigma_y"])  # noqa: E731
    draws = pm.draw(PerturbedLinReg.dist(**p), n, random_seed=rng)
    linreg_draws_check(draws, p, lin_logp)
    linreg_draws_check(linreg_simulate(rng, p, n), p, lin_logp)
    with pytest.raises(AssertionError):  # power: a shifted theta is detected
        linreg_draws_check(draws, dict(p, theta=np.array([1.3, -0.5])), lin_logp)
    q = LOG_TYPICAL
    f = logreg_fns["quadrature"]
    log_logp = lambda v: f(v, q["theta"], q["cov"], _sx(q, 2), q["epsilon_y"])[0]  # noqa: E731
    draws = pm.draw(PerturbedLogReg.dist(**q), n, random_seed=rng)
    logreg_draws_check(draws, q, log_logp)
    logreg_draws_check(logreg_simulate(rng, q, n), q, log_logp)
    with pytest.raises(AssertionError):
        logreg_draws_check(
            draws,
            q,
            lambda v: f(v, np.array([0.0, -1.0]), q["cov"], _sx(q, 2), q["epsilon_y"])[0],
        )


@pytest.mark.parametrize(
    ("cls", "overrides", "arg"),
    [
        (PerturbedLinReg, {"cov": np.array([[1.0, 2.0], [2.0, 1.0]])}, "cov"),
        (PerturbedLinReg, {"cov": np.array([[1.0, 0.1], [0.2, 1.0]])}, "cov"),
        (PerturbedLinReg, {"cov": np.eye(3)}, "cov"),
        (PerturbedLinReg, {"sigma_x": np.ones(3)}, "sigma_x"),
        (PerturbedLinReg, {"sigma_y": -1.0}, "sigma_y"),
        (PerturbedLinReg, {"theta": np.array([np.nan, 1.0])}, "theta"),
        (PerturbedLogReg, {"cov": np.array([[1.0, 2.0], [2.0, 1.0]])}, "cov"),
        (PerturbedLogReg, {"epsilon_y": 0.0}, "epsilon_y"),
        (PerturbedLogReg, {"sigma_x": np.nan}, "sigma_x"),
        (PerturbedLogReg, {"approximation": "laplace"}, "approximation"),
        (PerturbedLogReg, {"degree": -1}, "degree"),
        (PerturbedLogReg, {"interval": (3.0, -3.0)}, "interval"),
        (PerturbedLogReg, {"nodes": 1}, "nodes"),
    ],
)
def test_bad_parameters_name_the_argument(cls, overrides, arg):
    typical = LIN_TYPICAL if cls is PerturbedLinReg else LOG_TYPICAL
    with pytest.raises(ValueError, match=f"`{arg}`"):
        cls.dist(**(typical | overrides))


@pytest.mark.parametrize(
    ("cls", "observed", "match"),
    [
        (PerturbedLinReg, np.zeros((4, 4)), "3 columns"),
        (PerturbedLinReg, np.array([[0.0, np.nan, 1.0]]), "finite"),
        (PerturbedLogReg, np.array([[0.0, 0.1, 2.0]]), "0 or 1"),
        (PerturbedLogReg, np.array([[0.0, 0.1, -1.0], [0.0, 0.1, 1.0]]), r"row\(s\) \[0\]"),
        (PerturbedLogReg, np.zeros((4, 2)), "3 columns"),
    ],
)
def test_bad_observed_reports(cls, observed, match):
    typical = LIN_TYPICAL if cls is PerturbedLinReg else LOG_TYPICAL
    with pm.Model():
        theta = pm.Normal("theta", 0, 1, shape=2)
        with pytest.raises(ValueError, match=match):
            cls("obs", **(typical | {"theta": theta}), observed=observed)


def test_options_survive_resizing_and_support_point():
    with pm.Model() as model:
        theta = pm.Normal("theta", 0, 1, shape=2)
        PerturbedLogReg(
            "obs",
            theta=theta,
            cov=np.eye(2),
            sigma_x=0.5,
            epsilon_y=1.0,
            approximation="chebyshev",
            degree=7,
            interval=(-5.0, 5.0),
            shape=(10, 3),
        )
    op = model["obs"].owner.op
    assert (op.approximation, op.degree, op.interval) == ("chebyshev", 7, (-5.0, 5.0))
    ip = model.initial_point()
    assert np.isfinite(model.compile_logp()(ip))
    sp = pm.distributions.distribution.support_point(PerturbedLinReg.dist(**LIN_TYPICAL, size=4))
    assert sp.eval().shape == (4, 3)


# --------------------------------------------------------------------------------------------
# Mechanisms
# --------------------------------------------------------------------------------------------


def test_clipping_and_budget_split():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 3)) * 2
    Xc = clip_rows(X, 1.5)
    norms = np.linalg.norm(X, axis=1)
    # row norms after clipping: a sqrt of d squares and one scaling, d u relative
    np.testing.assert_allclose(np.linalg.norm(Xc, axis=1), np.minimum(norms, 1.5), rtol=1e-12)
    inside = norms <= 1.5
    np.testing.assert_array_equal(Xc[inside], X[inside])
    np.testing.assert_allclose(
        Xc[~inside] / np.linalg.norm(Xc[~inside], axis=1, keepdims=True),
        X[~inside] / norms[~inside, None],
        # row norms after clipping: a sqrt of d squares and one scaling, d u relative
        rtol=1e-12,
    )
    assert np.all(clip_rows(np.zeros((2, 2)), 1.0) == 0)
    np.testing.assert_array_equal(clip_response([-5.0, 0.3, 9.0], 2.0), [-2.0, 0.3, 2.0])
    assert split_epsilon(3.0, 0.25) == (2.25, 0.75)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="`c`"):
            split_epsilon(1.0, bad)
    with pytest.raises(ValueError, match="`R`"):
        clip_rows(X, 0.0)
    with pytest.raises(ValueError, match="`X`"):
        clip_rows(np.array([[np.nan, 1.0]]), 1.0)


def test_perturb_linreg_and_logreg_noise_levels():
    rng = np.random.default_rng(1)
    n, d = 40_000, 2
    X = rng.normal(size=(n, d)) * 0.3
    y = rng.normal(size=n)
    rel = perturb_linreg(X, y, 2.0, 1e-5, rng, R=1.0, R_y=2.0, c=0.5)
    assert rel.sigma_x == analytic_gaussian_sigma(1.0, 0.5e-5, 2.0)
    assert rel.sigma_y == analytic_gaussian_sigma(1.0, 0.5e-5, 4.0)
    nx = rel.reports[:, :d] - clip_rows(X, 1.0)
    ny = rel.reports[:, d] - clip_response(y, 2.0)
    # sample sd within 5 standard errors (sd of the sample sd ≈ σ / sqrt(2n))
    assert abs(nx.std() / rel.sigma_x - 1) < 5 / np.sqrt(2 * n * d)
    assert abs(ny.std() / rel.sigma_y - 1) < 5 / np.sqrt(2 * n)
    labels = (rng.random(n) < 0.3).astype(int)
    rel = perturb_logreg(X, labels, 3.0, 1e-5, rng, c=0.4)
    assert rel.epsilon_y == pytest.approx(1.2) and rel.sigma_y is None
    assert rel.sigma_x == analytic_gaussian_sigma(1.8, 1e-5, 2.0)
    flips = np.mean(rel.reports[:, d] != labels)
    q = 1 / (1 + np.exp(1.2))
    assert abs(flips - q) < 5 * np.sqrt(q * (1 - q) / n)
    with pytest.raises(ValueError, match="`labels`"):
        perturb_logreg(X, labels[:-1], 1.0, 1e-5, rng)
    with pytest.raises(ValueError, match="`labels`"):
        perturb_logreg(X, labels + 1, 1.0, 1e-5, rng)


# --------------------------------------------------------------------------------------------
# LDP-SGD baseline
# --------------------------------------------------------------------------------------------


def test_ldp_sgd_protocol_and_convergence():
    rng = np.random.default_rng(2)
    n = 30_000
    X = clip_rows(rng.normal(size=(n, 3)) * 0.5, 1.0)
    theta = np.array([1.0, -0.5, 0.25])
    y = X @ theta + 0.05 * rng.normal(size=n)
    fit = ldp_sgd(X, y, 20.0, 1e-5, rng, group_size=300, lr=2.0)
    assert fit["sigma"] == analytic_gaussian_sigma(20.0, 1e-5, 2.0)
    assert fit["steps"] == n // 300 and fit["path"].shape == (n // 300, 3)
    np.testing.assert_allclose(fit["theta"], theta, atol=0.2)
    lab = (rng.random(n) < special.expit(4 * X @ theta)).astype(float)
    fitl = ldp_sgd(X, lab, 20.0, 1e-5, rng, loss="logistic", group_size=300, lr=4.0)
    assert np.corrcoef(X @ fitl["theta"], X @ theta)[0, 1] > 0.9
    assert ldp_sgd_group_size(3, 1.0, 10**6) == 4 and ldp_sgd_group_size(3, 0.01, 100) == 100
    with pytest.raises(ValueError, match="`loss`"):
        ldp_sgd(X, y, 1.0, 1e-5, rng, loss="hinge")
    with pytest.raises(ValueError, match="`group_size`"):
        ldp_sgd(X, y, 1.0, 1e-5, rng, group_size=0)


# --------------------------------------------------------------------------------------------
# Slow: NUTS recovery
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("which", ["linear", "logistic"])
def test_nuts_recovers_theta(which):
    import nutpie

    rng = np.random.default_rng(7)
    theta = np.array([1.0, -0.7])
    if which == "linear":
        p = dict(LIN_TYPICAL, theta=theta)
        z = linreg_simulate(rng, p, 3000)
    else:
        p = dict(LOG_TYPICAL, theta=2 * theta, epsilon_y=2.0)
        z = logreg_simulate(rng, p, 3000)
    with pm.Model() as model:
        th = pm.Normal("theta", 0.0, 5.0, shape=2)
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=2, eta=2.0, sd_dist=pm.HalfNormal.dist(2.5), compute_corr=True
        )
        cov = chol @ chol.T
        if which == "linear":
            sigma = pm.HalfNormal("sigma", 1.0)
            PerturbedLinReg(
                "obs",
                theta=th,
                sigma=sigma,
                cov=cov,
                sigma_x=p["sigma_x"],
                sigma_y=p["sigma_y"],
                observed=z,
            )
        else:
            PerturbedLogReg(
                "obs", theta=th, cov=cov, sigma_x=p["sigma_x"], epsilon_y=p["epsilon_y"], observed=z
            )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = nutpie.sample(
            nutpie.compile_pymc_model(model),
            draws=500,
            tune=500,
            chains=2,
            cores=1,
            seed=3,
            progress_bar=False,
        )
    post = tr.posterior["theta"].values.reshape(-1, 2)
    zscore = (post.mean(0) - p["theta"]) / post.std(0)
    assert np.all(np.abs(zscore) < 4), zscore
    assert int(tr.sample_stats["diverging"].sum()) == 0


# --------------------------------------------------------------------------------------------
# PerturbedLogReg over blocks of reports (issue 17, point 5: bounded working memory).
#
# From BLOCK_THRESHOLD reports on, the quadrature label term is evaluated by a scan over
# blocks of BLOCK_ROWS reports instead of one pass over all reports.  The reference is the
# one-pass graph (checked against independent references above): values and gradients agree
# to rounding, per report, with a ragged last block, fewer reports than one block, and labels
# outside {0, 1}.  The thresholds are lowered with monkeypatch so that the models stay small;
# the peak memory at 10^6 and 10^7 reports is measured in benchmarks/memory_budgets.py.
# --------------------------------------------------------------------------------------------

BLOCK = 7


@pytest.fixture(scope="module")
def block_fns():
    """Per-report logp and the gradient of its sum, one pass and over blocks of 7 rows."""
    out = {}
    for name, block in (("one", 0), ("blocks", BLOCK)):
        lp, _ = rmath.perturbed_logreg_logp(_V, _TH, _COV, _SX, _EPS, block_rows=block)
        grads = pt.grad(pt.sum(lp), [_TH, _COV, _SX, _EPS])
        out[name] = pytensor.function([_V, _TH, _COV, _SX, _EPS], [lp, *grads], mode=TEST_MODE)
    return out


def _has_scan(fn):
    return any(isinstance(n.op, Scan) for n in fn.maker.fgraph.apply_nodes)


@pytest.mark.parametrize("n", [40, 35, 3, 0])  # ragged last block, whole blocks, < 1 block, none
@pytest.mark.heavy
def test_blocks_equal_one_pass_value_and_gradient(block_fns, n):
    assert _has_scan(block_fns["blocks"]) and not _has_scan(block_fns["one"])
    rng = np.random.default_rng(n)
    cases = [
        # Gauss-Hermite regime (sd of u <= 1.5), d = 2
        (np.array([1.2, -2.0]), np.array([[1.0, 0.2], [0.2, 0.6]]), np.array([0.4, 1.1]), 1.3),
        # Gauss-Laguerre regime (sd of u > 1.5), d = 3, strong labels noise
        (np.array([8.0, -6.0, 3.0]), np.eye(3) * 2.0, np.array([3.0, 2.0, 5.0]), 0.2),
        # d = 1, v = 0 (theta = 0)
        (np.array([0.0]), np.eye(1), np.array([0.5]), 2.0),
    ]
    for theta, cov, sx, eps in cases:
        d = theta.size
        labels = rng.integers(0, 2, size=n).astype(float)
        value = np.column_stack([rng.normal(size=(n, d)) * 3.0, labels])
        value[:1, :d] = 1e3  # far tail
        if n > 5:
            value[[1, 4], -1] = [0.5, 2.0]  # labels outside {0, 1}
        one = block_fns["one"](value, theta, cov, sx, eps)
        blk = block_fns["blocks"](value, theta, cov, sx, eps)
        assert one[0].shape == blk[0].shape == (n,)
        np.testing.assert_array_equal(np.isneginf(blk[0]), np.isneginf(one[0]))
        if n > 5:
            assert (
                np.isneginf(blk[0][[1, 4]]).all() and np.isfinite(np.delete(blk[0], [1, 4])).all()
            )
        fin = np.isfinite(one[0])
        # the blocked and the one-block graph: the same terms summed in another order, (n - 1) u of
        # same-sign terms
        np.testing.assert_allclose(blk[0][fin], one[0][fin], rtol=1e-12)
        for a, b in zip(blk[1:], one[1:], strict=True):
            assert np.all(np.isfinite(a))
            # the blocked and the one-block graph's gradients: the same terms in another order, n u
            # of the terms; atol for entries near 0
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-11)


def test_block_rows_refuses_batched_parameters():
    with pytest.raises(ValueError, match="block_rows"):
        rmath.perturbed_logreg_logp(_V, pt.dmatrix("th"), _COV, _SX, _EPS, block_rows=BLOCK)
    with pytest.raises(ValueError, match="block_rows"):
        rmath.perturbed_logreg_logp(_V, _TH, _COV, _SX, _EPS, block_rows=-1)


def _model_fn(model):
    """Summed logp, its gradient and the per-report logp in one compiled function."""
    outs = [model.logp(), model.dlogp(), model.logp(vars=[model["obs"]], sum=False)[0]]
    return model.compile_fn(outs, inputs=model.value_vars, mode=TEST_MODE)


def test_model_switches_to_blocks_and_keeps_per_report_logp(monkeypatch):
    """Above the threshold the model's logp uses the scan, with the same value, gradient and
    per-report logp (for LOO); the quadrature's (rows, nodes) arrays stay inside the loop."""
    n, block = 100, 16
    z = logreg_simulate(
        np.random.default_rng(3),
        dict(
            theta=[1.0, -0.5],
            cov=np.array([[1.0, 0.3], [0.3, 2.0]]),
            sigma_x=[0.5, 0.8],
            epsilon_y=1.0,
        ),
        n,
    )
    point = {"theta": np.array([0.7, -1.2]), "sigma_log__": np.log(1.3)}
    ref = _model_fn(_regression_model(z, logistic=True))  # default threshold: one pass
    assert not _has_scan(ref.f)
    monkeypatch.setattr(rmath, "BLOCK_THRESHOLD", 50)
    monkeypatch.setattr(rmath, "BLOCK_ROWS", block)
    blk = _model_fn(_regression_model(z, logistic=True))
    assert _has_scan(blk.f)
    (scan,) = [node for node in blk.f.maker.fgraph.apply_nodes if isinstance(node.op, Scan)]
    # sequences are per-report vectors cut in blocks (n_blocks, block); a (n_blocks, block,
    # nodes) input would mean the quadrature was hoisted out of the loop
    assert max(i.ndim for i in scan.inputs) <= 2, [i.type for i in scan.inputs]
    r, b = ref(point), blk(point)
    assert abs(b[0] - r[0]) <= 1e-12 * abs(r[0])
    # gradients of the blocked and the one-block graph: the same terms summed in another order (n u
    # of the terms) and libm's few ulp: 1e-10 relative
    np.testing.assert_allclose(b[1], r[1], rtol=1e-10)
    assert b[2].shape == (n,)
    # the blocked and the one-block graph: the same terms summed in another order, (n - 1) u of
    # same-sign terms
    np.testing.assert_allclose(b[2], r[2], rtol=1e-12)
    # control: without the opaque spread op, PyTensor's scan_push_out_seq hoists the
    # quadrature out of the loop (the check above can fail)
    monkeypatch.setattr(rmath, "_spread_over_nodes", lambda m, nodes: m[:, None])
    hoisted = _model_fn(_regression_model(z, logistic=True))
    (scan,) = [node for node in hoisted.f.maker.fgraph.apply_nodes if isinstance(node.op, Scan)]
    assert max(i.ndim for i in scan.inputs) == 3


def test_data_container_uses_its_current_length(monkeypatch):
    """``pm.Data`` reports (no static length): the choice follows the container's length when
    the logp is built; after ``pm.set_data`` to fewer reports than one block it is still exact."""
    monkeypatch.setattr(rmath, "BLOCK_THRESHOLD", 50)
    monkeypatch.setattr(rmath, "BLOCK_ROWS", 16)
    p = dict(theta=[1.0, -0.5], cov=np.eye(2), sigma_x=[0.5, 0.8], epsilon_y=1.0)
    z = logreg_simulate(np.random.default_rng(5), p, 60)
    model = _regression_model(z, True, logistic=True)
    fn = _model_fn(model)
    assert _has_scan(fn.f)
    point = {"theta": np.array([0.3, 0.9]), "sigma_log__": np.log(0.8)}
    monkeypatch.setattr(rmath, "BLOCK_THRESHOLD", 10**9)
    ref_model = _regression_model(z, True, logistic=True)  # reference: one pass
    ref = _model_fn(ref_model)
    assert not _has_scan(ref.f)
    for rows in (60, 5):
        for m in (model, ref_model):
            with m:
                pm.set_data({"z": z[:rows]})
        out, exp = fn(point), ref(point)
        assert out[2].shape == (rows,)
        # the same log density before and after set_data to fewer rows: the same terms summed in
        # another order, (n - 1) u
        assert abs(out[0] - exp[0]) <= 1e-12 * abs(exp[0])
        # gradients: the same terms summed in another order, n u of the terms (which partly
        # cancel): 1e-10
        np.testing.assert_allclose(out[1], exp[1], rtol=1e-10)
        # the same terms summed in another order, (n - 1) u of same-sign terms
        np.testing.assert_allclose(out[2], exp[2], rtol=1e-12)


@pytest.mark.backend
def test_blocks_numba_and_jax_agree_with_the_one_pass_graph(monkeypatch):
    """The blocked model compiles and agrees under Numba (default) and JAX (and C)."""
    p = dict(theta=[1.0, -0.5], cov=np.eye(2), sigma_x=[0.5, 0.8], epsilon_y=1.0)
    z = logreg_simulate(np.random.default_rng(9), p, 70)
    point = {"theta": np.array([0.7, -1.2]), "sigma_log__": np.log(1.3)}
    ref = _model_fn(_regression_model(z, logistic=True))(point)  # TEST_MODE, one pass
    monkeypatch.setattr(rmath, "BLOCK_THRESHOLD", 50)
    monkeypatch.setattr(rmath, "BLOCK_ROWS", 16)
    model = _regression_model(z, logistic=True)
    outs = [model.logp(), model.dlogp()]
    for mode in (None, "JAX", "FAST_RUN"):
        fn = model.compile_fn(outs, inputs=model.value_vars, mode=mode)
        lp, grad = fn(point)
        # the same log density compiled in another mode (Numba / C vs the Python VM): few-ulp libm
        # differences on a well-conditioned sum, 1e-12 is ~9000 ulp
        assert abs(lp - ref[0]) <= 1e-12 * abs(ref[0]), mode
        # gradients in another mode: few-ulp libm differences on terms that partly cancel, 1e-10
        np.testing.assert_allclose(grad, ref[1], rtol=1e-10, err_msg=str(mode))


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["pymc", "nutpie", "numpyro"])
def test_blocks_sample_with_every_nuts_sampler(monkeypatch, sampler):
    """pm.sample runs the blocked model with each NUTS sampler; the per-report log-likelihood
    for LOO keeps one column per report."""
    monkeypatch.setattr(rmath, "BLOCK_THRESHOLD", 50)
    monkeypatch.setattr(rmath, "BLOCK_ROWS", 64)
    p = dict(theta=[1.0, -0.5], cov=np.array([[1.0, 0.3], [0.3, 2.0]]), sigma_x=[0.5, 0.8])
    z = logreg_simulate(np.random.default_rng(3), dict(p, epsilon_y=1.0), 300)
    model = _regression_model(z, logistic=True)
    assert _has_scan(model.compile_dlogp().f)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opts = dict(tune=300, chains=2, cores=1, random_seed=1, progressbar=False)
        idata = pm.sample(300, nuts_sampler=sampler, **opts)
        pm.compute_log_likelihood(idata, progressbar=False)
    post = idata.posterior["theta"].values.reshape(-1, 2)
    assert np.all(np.isfinite(post))
    zscore = (post.mean(0) - p["theta"]) / post.std(0)
    assert np.all(np.abs(zscore) < 4), zscore
    assert idata.log_likelihood["obs"].shape == (2, 300, 300)
