"""The truncated sums and the noisy multinomial with a noise spec (``noise=``, issue 21).

* Gaussian noise on the truncated sums: the CLT normal convolved with N(0, sigma^2) against
  an independent reference (quadrature of N(s; m, V) N(y - s; 0, sigma^2) with the reference
  moments of ``expfam_reference``), gradients against finite differences, draws' mean and
  variance against the exact moments (the CLT moments are exact, so no approximation error
  enters this check);
* Laplace spec = the ``epsilon`` path;
* Gaussian noise on the multinomial counts: against SciPy's dense multivariate normal, the
  gradient, draws' mean and covariance;
* the refusals (integer kinds, both or neither of ``epsilon`` / ``noise``, ...);
* the truncated-normal pair (x, x^2) with Gaussian noise on each sum (no latent): against
  SciPy's dense bivariate normal of the reference CLT moments plus sigma^2 I, against the same
  density conditioned the other way round on the whole grid (far tails, almost collinear
  (x, x^2), n up to 1e6, sigma 1e-3 to 1e4), and against the numerical convolution integral;
  gradients; draws' mean and covariance; broadcasting; Laplace spec = epsilon path; the
  helper in a model; its refusals.

One compiled function per family (vector inputs), reused by every check.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from expfam_normal_reference import clt_cholesky, clt_mean_cov
from expfam_reference import exp_moments, poisson_moments
from scipy import integrate, stats

import pymc_dpnoise as pmd
from pymc_dpnoise import noise
from pymc_dpnoise.mechanisms import release_truncated_normal_sum

_FNS: dict = {}
_CLS = {"exp": pmd.LaplaceNoisyTruncatedExponential, "pois": pmd.LaplaceNoisyTruncatedPoisson}


def _truncated_fn(kind, spec="gaussian"):
    """logp and its gradient in (theta, sigma) for vectors of every input; the noise is
    Gaussian with a symbolic sigma (``spec="gaussian"``) or given by ``epsilon``."""
    key = (kind, spec)
    if key not in _FNS:
        y, n, th, lo, hi, s = (pt.dvector(c) for c in ("y", "n", "th", "lo", "hi", "s"))
        if spec == "gaussian":
            # a symbolic sigma: the class the spec dispatches to, with the spec's validation
            cls = _CLS[kind]._gaussian
            rv = cls.dist(n, th, lo, hi, s)
        else:
            rv = _CLS[kind].dist(n, th, lo, hi, s)  # s is epsilon
        lp = pm.logp(rv, y)
        _FNS[key] = pytensor.function(
            [y, n, th, lo, hi, s], [lp, *pytensor.grad(lp.sum(), [th, s])]
        )
    return _FNS[key]


def _clt(kind, n, theta, a, b):
    log_q, mu, var = (exp_moments if kind == "exp" else poisson_moments)(theta, a, b)
    q = np.exp(log_q)
    return n * q * mu, n * q * var + n * q * (1 - q) * mu**2


def _reference(kind, y, n, theta, a, b, sigma):
    """log of the integral of N(s; m, V) N(y - s; 0, sigma^2) ds (adaptive quadrature)."""
    m, v = _clt(kind, n, theta, a, b)
    if v <= 0:
        return stats.norm.logpdf(y, m, sigma)
    sd = np.sqrt(v)
    # the integrand peaks at the precision-weighted mean; integrate around it in log-shifted
    # form so that releases deep in the tails do not underflow
    # (in the offset t = s - c from the peak, so that y - s and s - m keep their digits when
    # m is large and sigma small)
    r = y - m
    w = v / (v + sigma**2)
    h = np.sqrt(v * sigma**2 / (v + sigma**2))

    # log N(w r + t; 0, V) + log N((1 - w) r - t; 0, sigma^2) = top + diff(t), with the
    # differences of squares factored (x^2 - x0^2 = (x - x0)(x + x0)): no cancellation
    a0, b0 = w * r / sd, (1 - w) * r / sigma
    top = -0.5 * (a0 * a0 + b0 * b0) - np.log(sd * sigma) - np.log(2 * np.pi)

    def diff(t):
        da, db = t / sd, -t / sigma
        return -0.5 * (da * (2 * a0 + da) + db * (2 * b0 + db))

    val = sum(
        integrate.quad(lambda t: np.exp(diff(t)), lo, hi, epsabs=0.0, epsrel=1e-12)[0]
        for lo, hi in ((-40 * h, 0.0), (0.0, 40 * h))
    )
    return top + np.log(val)


_ROWS = {
    "exp": [
        (n, lam, a, b, s)
        for n in (1.0, 300.0, 1e6)
        for lam, (a, b) in ((1e-3, (0.0, 8.0)), (0.5, (0.0, 8.0)), (30.0, (2.0, 50.0)))
        for s in (1e-3, 3.0, 1e4)
    ],
    "pois": [
        (n, mu, a, b, s)
        for n in (1.0, 300.0, 1e6)
        for mu, (a, b) in ((3.0, (0.0, 10.0)), (3.0, (2.0, 2.0)), (400.0, (5.0, 60.0)))
        for s in (1e-3, 3.0, 1e4)
    ],
}


def _grid(kind):
    rows = []
    for n, th, a, b, s in _ROWS[kind]:
        m, v = _clt(kind, n, th, a, b)
        sd = np.sqrt(v + s**2)
        for y in (m, m + 0.7 * sd, m - 3 * sd, m + 12 * sd, -5.0):
            rows.append((y, n, th, a, b, s))
    return [np.array(c, float) for c in zip(*rows, strict=True)]


@pytest.mark.parametrize("kind", ["exp", "pois"])
@pytest.mark.heavy
def test_truncated_gaussian_logp_matches_quadrature(kind):
    y, n, th, a, b, s = _grid(kind)
    lp, g_th, g_s = _truncated_fn(kind)(y, n, th, a, b, s)
    assert np.all(np.isfinite(lp)) and np.all(np.isfinite(g_th)) and np.all(np.isfinite(g_s))
    for i in range(len(y)):
        ref = _reference(kind, y[i], n[i], th[i], a[i], b[i], s[i])
        assert abs(lp[i] - ref) <= 1e-9 * max(1.0, abs(ref)), (kind, y[i], n[i], th[i], s[i])


def _fd(fun, x, h):
    def d(step):
        return (fun(x + step) - fun(x - step)) / (2 * step)

    return (4 * d(h / 2) - d(h)) / 3


@pytest.mark.parametrize("kind", ["exp", "pois"])
def test_truncated_gaussian_gradients_match_finite_differences(kind):
    f = _truncated_fn(kind)
    rows = {
        "exp": [(500.0, 0.5, 0.0, 8.0, 3.0, 700.0), (50.0, 2.0, 1.0, 6.0, 0.5, 20.0)],
        "pois": [(300.0, 3.0, 0.0, 10.0, 3.0, 880.0), (40.0, 4.0, 2.0, 6.0, 20.0, 200.0)],
    }[kind]
    for n, th, a, b, s, y in rows:
        _, g_th, g_s = f([y], [n], [th], [a], [b], [s])
        args = [[v] for v in (y, n, th, a, b, s)]

        def at(i, x, args=args):
            return f(*args[:i], [x], *args[i + 1 :])[0][0]

        fd_th = _fd(lambda x, at=at: at(2, x), th, th * 1e-4)
        fd_s = _fd(lambda x, at=at: at(5, x), s, s * 1e-4)
        assert g_th[0] == pytest.approx(fd_th, rel=1e-6, abs=1e-9), (kind, n, th)
        assert g_s[0] == pytest.approx(fd_s, rel=1e-6, abs=1e-9), (kind, n, s)


@pytest.mark.parametrize(
    "kind,params",
    [
        ("exp", dict(n=100, theta=0.5, lower=0.0, upper=8.0)),
        ("pois", dict(n=100, theta=3.0, lower=1, upper=6)),
    ],
)
@pytest.mark.heavy
def test_truncated_gaussian_draws_have_the_exact_moments(kind, params):
    """Draws run the mechanism (records, truncation, sum, + N(0, sigma^2)); their mean and
    variance are exact in the model (the CLT only approximates the shape)."""
    sigma, draws = 7.0, 10_000
    p = dict(params)
    th = p.pop("theta")
    rv = _CLS[kind].dist(p["n"], th, p["lower"], p["upper"], noise=noise.Gaussian(sigma))
    x = pm.draw(rv, draws, random_seed=17)
    m, v = _clt(kind, p["n"], th, p["lower"], p["upper"])
    var = v + sigma**2
    assert abs(x.mean() - m) <= 4 * np.sqrt(var / draws), (x.mean(), m)
    # var of the sample variance ~ 2 var^2 / draws (near-normal draws)
    assert abs(x.var() - var) <= 4 * np.sqrt(2 / draws) * var, (x.var(), var)
    # and the noise is Gaussian: the release minus its model mean is normal
    assert stats.kstest((x - m) / np.sqrt(var), "norm").pvalue > 1e-3


@pytest.mark.parametrize("kind", ["exp", "pois"])
@pytest.mark.heavy
def test_truncated_laplace_spec_is_the_epsilon_path(kind):
    a, b = (0.0, 8.0) if kind == "exp" else (0.0, 10.0)
    th = 0.5 if kind == "exp" else 3.0
    y = np.array([-20.0, 300.0, 650.0, 900.0])
    eps = 0.7
    ref = _truncated_fn(kind, "epsilon")(y, *(np.full(4, v) for v in (300.0, th, a, b, eps)))[0]
    rv = _CLS[kind].dist(300.0, th, a, b, noise=noise.Laplace.from_epsilon(eps, b))
    assert isinstance(rv.owner.op, _CLS[kind].rv_type)
    yv = pt.dvector("y")
    got = pytensor.function([yv], pm.logp(rv, yv))(y)
    np.testing.assert_allclose(got, ref, rtol=1e-13)


def test_truncated_gaussian_in_a_model():
    rng = np.random.default_rng(4)
    spec = noise.Gaussian.from_rho(0.5, sensitivity=8.0)  # sigma = 8
    x = rng.exponential(2.0, size=(3, 400))
    released = np.where(x <= 8.0, x, 0.0).sum(-1)
    released = spec.release(released, rng)
    with pm.Model(coords={"site": list("abc")}) as model:
        lam = pm.Gamma("lam", 2.0, 4.0)
        pmd.LaplaceNoisyTruncatedExponential(
            "y", n=400, lam=lam, lower=0.0, upper=8.0, noise=spec, observed=released, dims="site"
        )
    f = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars)
    lp, g = f(model.initial_point())
    assert np.isfinite(lp) and np.all(np.isfinite(g))
    with model:
        prior = pm.sample_prior_predictive(20, random_seed=1)
    assert prior.prior_predictive["y"].dims[-1] == "site"


# --------------------------------------------------------------------------------------------
# Multinomial
# --------------------------------------------------------------------------------------------


def _multinomial_fn():
    if "mn" not in _FNS:
        y, p = pt.dmatrix("y"), pt.dmatrix("p")
        n, s = pt.dvector("n"), pt.dvector("s")
        lp = pm.logp(pmd.distributions.expfam.GaussianNoisyMultinomial.dist(n, p, s), y)
        _FNS["mn"] = pytensor.function([y, n, p, s], [lp, *pytensor.grad(lp.sum(), [p, s])])
    return _FNS["mn"]


def test_multinomial_gaussian_matches_dense_normal_and_gradients():
    f = _multinomial_fn()
    rng = np.random.default_rng(0)
    for k in (2, 3, 6):
        for n in (1.0, 50.0, 1e5):
            for sigma in (1e-2, 3.0, 1e3):
                if n / sigma**2 >= 1e9:  # condition number beyond what the dense reference resolves
                    continue
                p = rng.dirichlet(np.ones(k), size=3)
                cov = [n * (np.diag(pi) - np.outer(pi, pi)) + sigma**2 * np.eye(k) for pi in p]
                y = np.array(
                    [rng.multivariate_normal(n * pi, c) for pi, c in zip(p, cov, strict=True)]
                )
                lp, gp, gs = f(y, np.full(3, n), p, np.full(3, sigma))
                ref = [
                    stats.multivariate_normal(n * pi, c).logpdf(yi)
                    for pi, c, yi in zip(p, cov, y, strict=True)
                ]
                np.testing.assert_allclose(lp, ref, rtol=1e-9, err_msg=str((k, n, sigma)))
                assert np.all(np.isfinite(gp)) and np.all(np.isfinite(gs))
    # gradients against finite differences (p moved along the simplex, and sigma)
    p = np.array([[0.5, 0.3, 0.2]])
    y = np.array([[105.0, 52.0, 43.0]])
    lp, gp, gs = f(y, [200.0], p, [4.0])
    d = np.array([[1.0, -1.0, 0.0]])
    fd = _fd(lambda t: f(y, [200.0], p + t * d, [4.0])[0][0], 0.0, 1e-5)
    assert (gp * d).sum() == pytest.approx(fd, rel=1e-6)
    fd_s = _fd(lambda t: f(y, [200.0], p, [t])[0][0], 4.0, 1e-4)
    assert gs[0] == pytest.approx(fd_s, rel=1e-6)


@pytest.mark.heavy
def test_multinomial_gaussian_draws_and_helper():
    p, n, sigma = np.array([0.5, 0.3, 0.2]), 200, 4.0
    rv = pmd.LaplaceNoisyMultinomial.dist(n, p, noise=noise.Gaussian(sigma))
    x = pm.draw(rv, 20_000, random_seed=3)
    cov = n * (np.diag(p) - np.outer(p, p)) + sigma**2 * np.eye(3)
    se = np.sqrt(np.diag(cov) / 20_000)
    assert np.all(np.abs(x.mean(0) - n * p) <= 4 * se)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06 * np.max(cov))
    # the counts sum to n: the total carries only the noise, variance 3 sigma^2
    assert x.sum(-1).var() == pytest.approx(3 * sigma**2, rel=0.05)
    with pm.Model(coords={"r": ["a", "b"], "c": list("xyz")}) as model:
        q = pm.Dirichlet("q", np.ones(3), dims="c")
        pmd.LaplaceNoisyMultinomial(
            "y", n=np.array([200, 300]), p=q, noise=noise.Gaussian(sigma),
            observed=np.array([[101.0, 58.0, 40.5], [149.0, 92.0, 61.0]]), dims=("r", "c"),
        )  # fmt: skip
    assert [v.name for v in model.free_RVs] == ["q"]  # no latent
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    # a Laplace spec takes the Laplace path (with its latent)
    with pm.Model() as model:
        q = pm.Dirichlet("q", np.ones(3))
        pmd.LaplaceNoisyMultinomial(
            "y", n=200, p=q, noise=noise.Laplace(2.0), observed=np.array([100.0, 60.0, 40.0])
        )
    assert {v.name for v in model.free_RVs} == {"q", "y_noise_w"}


# --------------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec", [noise.DiscreteLaplace(2.0), noise.RoundedLaplace(2.0), noise.DiscreteGaussian(2.0)]
)
def test_integer_noise_kinds_are_refused(spec):
    name = type(spec).__name__
    with pytest.raises(ValueError, match=f"{name} noise is not supported.*NoisyBinomial"):
        pmd.LaplaceNoisyTruncatedPoisson.dist(100, 3.0, 0, 10, noise=spec)
    with pytest.raises(ValueError, match=f"{name} noise is not supported"):
        pmd.LaplaceNoisyTruncatedExponential.dist(100, 0.5, 0.0, 8.0, noise=spec)
    with pm.Model(), pytest.raises(ValueError, match=f"{name} noise is not supported"):
        pmd.LaplaceNoisyMultinomial("y", 100, np.array([0.5, 0.5]), noise=spec, shape=(2,))


def test_epsilon_and_noise_refusals():
    cls = pmd.LaplaceNoisyTruncatedExponential
    g = noise.Gaussian(2.0)
    with pytest.raises(TypeError, match="either `epsilon` or `noise`, not both"):
        cls.dist(100, 0.5, 0.0, 8.0, 1.0, noise=g)
    with pytest.raises(TypeError, match=r"give `epsilon`.*or `noise`"):
        cls.dist(100, 0.5, 0.0, 8.0)
    with pytest.raises(TypeError, match="`sensitivity` goes with `epsilon`"):
        cls.dist(100, 0.5, 0.0, 8.0, sensitivity=8.0, noise=g)
    with pytest.raises(TypeError, match="noise spec"):
        cls.dist(100, 0.5, 0.0, 8.0, noise=2.0)
    with pytest.raises(ValueError, match="`lam`"):  # the usual validation still runs
        cls.dist(100, -0.5, 0.0, 8.0, noise=g)
    with pytest.raises(ValueError, match="`lower`"):
        pmd.LaplaceNoisyTruncatedPoisson.dist(100, 3.0, 1.5, 8, noise=g)
    p = np.array([0.5, 0.5])
    with pm.Model():
        with pytest.raises(TypeError, match="not both"):
            pmd.LaplaceNoisyMultinomial("y", 10, p, 1.0, noise=g, shape=(2,))
        with pytest.raises(ValueError, match="no latent"):
            pmd.LaplaceNoisyMultinomial("y", 10, p, noise=g, latent="counts", shape=(2,))
        with pytest.raises(TypeError, match="`sensitivity` goes with"):
            pmd.LaplaceNoisyMultinomial("y", 10, p, sensitivity=2.0, noise=g, shape=(2,))
    with pytest.raises(NotImplementedError, match=r"noise=noise\.Gaussian"):
        pmd.LaplaceNoisyMultinomial.dist(10, p, noise=noise.Laplace(1.0))
    with pytest.raises(TypeError, match="not both"):
        pmd.LaplaceNoisyMultinomial.dist(10, p, 1.0, noise=g)


# --------------------------------------------------------------------------------------------
# Truncated normal (x, x^2): Gaussian noise on each sum, a closed-form bivariate normal
# --------------------------------------------------------------------------------------------

_TN = pmd.distributions.expfam_normal.GaussianNoisyTruncatedNormal


def _tn_fn():
    """logp of GaussianNoisyTruncatedNormal and its gradient in (mu, sigma, noise sigma), for
    a matrix of released pairs and vectors of every parameter (one row per release)."""
    if "tn" not in _FNS:
        y = pt.dmatrix("y")
        n, mu, sg, lo, hi, s = (pt.dvector(c) for c in ("n", "mu", "sg", "lo", "hi", "s"))
        lp = pm.logp(_TN.dist(n, mu, sg, lo, hi, s), y)
        _FNS["tn"] = pytensor.function(
            [y, n, mu, sg, lo, hi, s], [lp, *pytensor.grad(lp.sum(), [mu, sg, s])]
        )
    return _FNS["tn"]


def _tn_dense_reference(y, n, mu, sg, a, b, s):
    """SciPy's dense bivariate normal of the reference CLT mean and covariance plus s^2 I."""
    mean, cov = clt_mean_cov(n, mu, sg, a, b)
    return stats.multivariate_normal(mean, cov + s**2 * np.eye(2)).logpdf(y)


def _tn_closed_reference(y, n, mu, sg, a, b, s):
    """The same density conditioning on the *second* sum first (the package conditions on the
    first), from the reference Cholesky factor of the CLT covariance (independent quadrature,
    no cancellation when (x, x^2) is almost collinear): C = LL^T + s^2 I,
    det C = (l11^2 + s^2)(l22^2 + s^2) + l21^2 s^2 (every term >= 0)."""
    mean, _ = clt_mean_cov(n, mu, sg, a, b)
    l11, l21, l22 = clt_cholesky(n, mu, sg, a, b)
    c12, c22 = l11 * l21, l21**2 + l22**2 + s**2
    det = (l11**2 + s**2) * (l22**2 + s**2) + l21**2 * s**2
    r1, r2 = y[0] - mean[0], y[1] - mean[1]
    u2 = r2 / np.sqrt(c22)
    u1 = (r1 - c12 / c22 * r2) / np.sqrt(det / c22)
    return -np.log(2 * np.pi) - 0.5 * np.log(det) - 0.5 * (u1 * u1 + u2 * u2)


_TN_SETTINGS = [
    # (mu, sigma, lower, upper): typical, far tails, tiny and huge sigma, almost collinear
    # (x, x^2), a tiny interval (as the registry grid of tests/cases/expfam_normal.py)
    (0.5, 1.5, -3.0, 4.0),
    (-20.0, 1.0, -3.0, 4.0),
    (30.0, 0.5, -3.0, 4.0),
    (0.5, 1e-3, -3.0, 4.0),
    (0.5, 1e4, -3.0, 4.0),
    (100.0, 0.1, 50.0, 150.0),
    (0.0, 1.0, 0.0, 1e-3),
]


def _tn_grid():
    rows, values = [], []
    for mu, sg, a, b in _TN_SETTINGS:
        for n in (1.0, 300.0, 1e6):
            for s in (1e-3, 3.0, 1e4):
                mean, cov = clt_mean_cov(n, mu, sg, a, b)
                sd = np.sqrt(np.diag(cov) + s**2)
                for y in (mean, mean + 3 * sd, mean + [-5 * sd[0], 2 * sd[1]], [-1.0, 2.0]):
                    rows.append((n, mu, sg, a, b, s))
                    values.append(y)
    return np.array(values, float), [np.array(c, float) for c in zip(*rows, strict=True)]


def _tn_tolerance(y, n, mu, sg, a, b, s, ref):
    """1e-9 relative, plus what float64 cannot resolve: the means (up to 1e10 here) carry a
    rounding of about 1e-15 |m| (1e-14 with a margin), which moves the log density by up to
    sqrt(Q) |delta| / sqrt(lambda_min(C)) (Q the squared Mahalanobis distance of the release)
    -- visible where the noise is tiny and (x, x^2) almost collinear (the thin direction of C
    of width 1.7e-3 next to means of 5e5 at n = 1e6, mu = 0.5, sigma = 1e-3)."""
    mean, cov = clt_mean_cov(n, mu, sg, a, b)
    c = cov + s**2 * np.eye(2)
    r = y - mean
    q = r @ np.linalg.solve(c, r)
    lam = np.linalg.eigvalsh(c)[0]
    return 1e-9 * max(1.0, abs(ref)) + 1e-14 * np.sqrt(max(q, 1.0)) * np.abs(mean).max() / np.sqrt(
        lam
    )


def test_truncated_normal_gaussian_logp_matches_references():
    """Against SciPy's dense bivariate normal wherever its covariance is well conditioned
    (condition number below 1e6), and everywhere against the closed form conditioned the
    other way round (reference Cholesky factor): 252 releases, n from 1 to 1e6, noise sigma
    from 1e-3 to 1e4, parameter sets from far tails to almost collinear (x, x^2)."""
    y, (n, mu, sg, a, b, s) = _tn_grid()
    lp, g_mu, g_sg, g_s = _tn_fn()(y, n, mu, sg, a, b, s)
    assert np.all(np.isfinite(lp))
    assert np.all(np.isfinite(g_mu)) and np.all(np.isfinite(g_sg)) and np.all(np.isfinite(g_s))
    n_dense = 0
    for i in range(len(y)):
        args = (y[i], n[i], mu[i], sg[i], a[i], b[i], s[i])
        ref = _tn_closed_reference(*args)
        assert abs(lp[i] - ref) <= _tn_tolerance(*args, ref), (args, lp[i], ref)
        _, cov = clt_mean_cov(*args[1:-1])
        if np.linalg.cond(cov + s[i] ** 2 * np.eye(2)) < 1e6:
            n_dense += 1
            dense = _tn_dense_reference(*args)
            assert abs(lp[i] - dense) <= _tn_tolerance(*args, dense), (args, lp[i], dense)
    assert n_dense >= 100  # the dense check is not vacuous


def _convolution_by_quadrature(y, n, mu, sg, a, b, s):
    """log of the integral of N(s_hat; m, LL^T) N(y - s_hat; 0, s^2 I) d s_hat, by 2-d adaptive
    quadrature in the CLT's whitened coordinates (s_hat = m + L w, w ~ N(0, I))."""
    mean, _ = clt_mean_cov(n, mu, sg, a, b)
    l11, l21, l22 = clt_cholesky(n, mu, sg, a, b)

    def integrand(w2, w1):
        e1 = y[0] - mean[0] - l11 * w1
        e2 = y[1] - mean[1] - l21 * w1 - l22 * w2
        return np.exp(-0.5 * (w1 * w1 + w2 * w2 + (e1 * e1 + e2 * e2) / s**2)) / (
            (2 * np.pi) ** 2 * s**2
        )

    val, _ = integrate.dblquad(integrand, -12.0, 12.0, -12.0, 12.0, epsabs=0.0, epsrel=1e-11)
    return np.log(val)


@pytest.mark.heavy
def test_truncated_normal_gaussian_logp_matches_the_convolution_integral():
    """A few releases against the definition: the CLT density of the sums convolved with the
    Gaussian noise, integrated numerically (noise comparable to the sums' spread)."""
    cases = [
        (50.0, 0.3, 1.2, -2.0, 3.0, 4.0),
        (50.0, 0.3, 1.2, -2.0, 3.0, 15.0),
        (200.0, 3.0, 2.0, -3.0, 4.0, 10.0),  # a third of the records truncated
    ]
    f = _tn_fn()
    for n, mu, sg, a, b, s in cases:
        mean, cov = clt_mean_cov(n, mu, sg, a, b)
        sd = np.sqrt(np.diag(cov) + s**2)
        for y in (mean, mean + [1.5 * sd[0], -sd[1]], mean + [-2 * sd[0], -2 * sd[1]]):
            lp = f(y[None, :], *([v] for v in (n, mu, sg, a, b, s)))[0][0]
            ref = _convolution_by_quadrature(y, n, mu, sg, a, b, s)
            assert abs(lp - ref) <= 1e-8, (n, mu, sg, s, y, lp, ref)


def test_truncated_normal_gaussian_gradients_match_finite_differences():
    f = _tn_fn()
    for n, mu, sg, a, b, s, dy in [
        (300.0, 0.5, 1.5, -3.0, 4.0, 3.0, (20.0, -40.0)),
        (40.0, 3.0, 2.0, -3.0, 4.0, 25.0, (-5.0, 60.0)),
        (1e5, 120.0, 0.3, 50.0, 150.0, 1e3, (2e3, 4e5)),  # almost collinear
    ]:
        mean, _ = clt_mean_cov(n, mu, sg, a, b)
        y = (mean + dy)[None, :]
        args = [[v] for v in (n, mu, sg, a, b, s)]
        _, g_mu, g_sg, g_s = f(y, *args)

        def at(i, x, args=args, y=y):
            return f(y, *args[:i], [x], *args[i + 1 :])[0][0]

        for i, g, x in ((1, g_mu, mu), (2, g_sg, sg), (5, g_s, s)):
            fd = _fd(lambda t, at=at, i=i: at(i, t), x, abs(x) * 1e-4)
            assert g[0] == pytest.approx(fd, rel=1e-6, abs=1e-9), (n, mu, sg, s, i)


def test_truncated_normal_gaussian_draws_have_the_model_moments():
    """Draws run the mechanism (records, truncation, both sums, + N(0, sigma^2) on each):
    their mean and covariance are the model's exactly (the CLT only approximates the shape),
    and whitened by the model's covariance they have identity covariance."""
    n, mu, sg, a, b, s, draws = 300, 0.5, 1.5, -3.0, 4.0, 6.0, 10_000
    rv = pmd.LaplaceNoisyTruncatedNormal.dist(n, mu, sg, a, b, noise=noise.Gaussian(s))
    x = pm.draw(rv, draws, random_seed=11)
    assert x.shape == (draws, 2)
    mean, cov = clt_mean_cov(n, mu, sg, a, b)
    cov = cov + s**2 * np.eye(2)
    zs = (x.mean(0) - mean) / np.sqrt(np.diag(cov) / draws)
    assert np.all(np.abs(zs) < 4.5), zs
    emp = np.cov(x.T)
    # sd of a covariance entry ~ sqrt((c_ii c_jj + c_ij^2) / draws), with a factor 2 margin
    # for the skewness of sum x^2
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / draws)
    assert np.all(np.abs(emp - cov) < 2 * 4.5 * se), (emp, cov)
    w = np.linalg.solve(np.linalg.cholesky(cov), (x - mean).T)
    np.testing.assert_allclose(np.cov(w), np.eye(2), atol=0.1)
    # the noise is the Gaussian's: with no record kept (bounds far above the records) the
    # release is the noise alone, N(0, s^2) on each sum
    e = pm.draw(
        pmd.LaplaceNoisyTruncatedNormal.dist(50, 0.0, 1.0, 40.0, 41.0, noise=noise.Gaussian(s)),
        4000,
        random_seed=2,
    )
    assert stats.kstest(e.ravel() / s, "norm").pvalue > 1e-3


def test_truncated_normal_gaussian_broadcasts_over_releases():
    """Per-release n, mu, upper and noise sigma (batch shape (2, 3)) give, release by release,
    the scalar density; draws and the helper take the same batch."""
    n = np.array([50.0, 400.0, 5000.0])
    mu = np.array([0.0, 0.5, 2.0])
    upper = np.array([4.0, 4.0, 6.0])
    s = np.array([[0.5, 3.0, 40.0], [2.0, 1e3, 7.0]])
    value = np.array(
        [[[3.0, 90.0], [180.0, 900.0], [9000.0, 30000.0]],
         [[-10.0, 120.0], [210.0, 950.0], [9500.0, 31000.0]]]
    )  # fmt: skip
    rv = pmd.LaplaceNoisyTruncatedNormal.dist(n, mu, 1.5, -3.0, upper, noise=noise.Gaussian(s))
    got = pm.logp(rv, value).eval()
    assert got.shape == (2, 3)
    f = _tn_fn()
    for i, j in np.ndindex(2, 3):
        one = f(value[i, j][None, :], [n[j]], [mu[j]], [1.5], [-3.0], [upper[j]], [s[i, j]])
        assert got[i, j] == pytest.approx(one[0][0], rel=1e-12)
        ref = _tn_dense_reference(value[i, j], n[j], mu[j], 1.5, -3.0, upper[j], s[i, j])
        assert got[i, j] == pytest.approx(ref, rel=1e-9)
    assert pm.draw(rv, random_seed=1).shape == (2, 3, 2)
    assert pm.draw(rv, 4, random_seed=1).shape == (4, 2, 3, 2)
    # shapes that do not fit are refused naming the argument
    with pytest.raises(ValueError, match=r"do not broadcast.*`noise sigma`\(4,\)"):
        pmd.LaplaceNoisyTruncatedNormal.dist(
            n, mu, 1.5, -3.0, upper, noise=noise.Gaussian(np.ones(4))
        )
    with pytest.raises(ValueError, match=r"`noise sigma` has shape \(2, 3\)"):
        pmd.LaplaceNoisyTruncatedNormal.dist(
            n, mu, 1.5, -3.0, upper, noise=noise.Gaussian(s), shape=(4, 3, 2)
        )
    with pm.Model(), pytest.raises(ValueError, match=r"`noise sigma` has shape \(2, 3\)"):
        pmd.LaplaceNoisyTruncatedNormal(
            "y", n, mu, 1.5, -3.0, upper, noise=noise.Gaussian(s), observed=np.ones((4, 3, 2))
        )


def test_truncated_normal_laplace_spec_is_the_epsilon_path():
    """noise=Laplace(b) puts scale b on each sum: the epsilon path at the default sensitivity
    (epsilon = sensitivity / b), with its latent."""
    rng = np.random.default_rng(5)
    x = rng.normal(0.5, 1.5, size=(2, 300))
    b = 40.0
    spec = noise.Laplace(b)
    rel = release_truncated_normal_sum(x, -3.0, 4.0, 1.0, rng)
    sens = float(pmd.mechanisms.truncated_normal_sum_sensitivity(-3.0, 4.0))
    models = []
    for kw in ({"noise": spec}, {"epsilon": sens / b}):
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 3.0)
            sg = pm.HalfNormal("sigma", 3.0)
            pmd.LaplaceNoisyTruncatedNormal("y", rel.n, mu, sg, -3.0, 4.0, **kw, observed=rel.value)
        models.append(model)
    assert [v.name for v in models[0].free_RVs] == ["mu", "sigma", "y_sum_z"]
    point = models[0].initial_point()
    point["y_sum_z"] = np.array([0.3, -1.2])
    lp = [m.compile_logp()(point) for m in models]
    assert lp[0] == pytest.approx(lp[1], rel=1e-13)
    # one scale per release works too
    with pm.Model():
        y = pmd.LaplaceNoisyTruncatedNormal(
            "y", rel.n, 0.5, 1.5, -3.0, 4.0, noise=noise.Laplace(np.array([10.0, 50.0])),
            observed=rel.value,
        )  # fmt: skip
        eps = y.owner.inputs[-2].eval()
    np.testing.assert_allclose(sens / eps, [10.0, 50.0], rtol=1e-14)


def test_truncated_normal_gaussian_in_a_model():
    """The helper with Gaussian noise adds no latent; logp and gradient finite; pm.draw of the
    observed variable and the prior predictive (with dims)."""
    rng = np.random.default_rng(7)
    spec = noise.Gaussian(20.0)
    x = rng.normal(np.array([[0.0], [1.0], [2.0]]), 1.3, size=(3, 500))
    kept = np.where((x >= -4.0) & (x <= 6.0), x, 0.0)
    released = spec.release(np.stack([kept.sum(-1), (kept**2).sum(-1)], -1), rng)
    coords = {"site": list("abc"), "stat": ["sum_x", "sum_x2"]}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0.0, 3.0, dims="site")
        sg = pm.HalfNormal("sigma", 3.0)
        y = pmd.LaplaceNoisyTruncatedNormal(
            "y", 500, mu, sg, -4.0, 6.0, noise=spec, observed=released, dims=("site", "stat")
        )
    assert [v.name for v in model.free_RVs] == ["mu", "sigma"]  # no latent
    assert isinstance(y.owner.op, _TN.rv_type)
    f = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars)
    lp, g = f(model.initial_point())
    assert np.isfinite(lp) and np.all(np.isfinite(g))
    assert pm.draw(y, random_seed=1).shape == (3, 2)
    with model:
        prior = pm.sample_prior_predictive(20, random_seed=1)
    assert prior.prior_predictive["y"].dims[-2:] == ("site", "stat")


def test_truncated_normal_noise_refusals():
    tn = pmd.LaplaceNoisyTruncatedNormal
    good = dict(n=100, mu=0.0, sigma=1.0, lower=-3.0, upper=4.0)
    g = noise.Gaussian(2.0)
    for spec in (
        noise.DiscreteLaplace(2.0),
        noise.RoundedLaplace(2.0),
        noise.DiscreteGaussian(2.0),
    ):
        name = type(spec).__name__
        with pytest.raises(ValueError, match=f"{name} noise is not supported.*NoisyBinomial"):
            tn.dist(*good.values(), noise=spec)
        with pm.Model(), pytest.raises(ValueError, match=f"{name} noise is not supported"):
            tn("y", **good, noise=spec, shape=(2,))
    with pytest.raises(TypeError, match="either `epsilon` or `noise`, not both"):
        tn.dist(*good.values(), 1.0, noise=g)
    with pm.Model():
        with pytest.raises(TypeError, match="either `epsilon` or `noise`, not both"):
            tn("y", **good, epsilon=1.0, noise=g, shape=(2,))
        with pytest.raises(TypeError, match=r"give `epsilon`.*or `noise`"):
            tn("y", **good, shape=(2,))
        with pytest.raises(TypeError, match="`sensitivity` goes with `epsilon`"):
            tn("y", **good, sensitivity=30.0, noise=g, shape=(2,))
        with pytest.raises(TypeError, match="noise spec"):
            tn("y", **good, noise=2.0, shape=(2,))
        for override, name in (
            ({"sigma": -1.0}, "`sigma`"),
            ({"n": 2.5}, "`n`"),
            ({"lower": 7.0}, "`lower`"),
            ({"mu": np.nan}, "`mu`"),
        ):
            with pytest.raises(ValueError, match=name):  # the usual validation still runs
                tn("y", **(good | override), noise=g, shape=(2,))
            with pytest.raises(ValueError, match=name):
                tn("y", **(good | override), noise=noise.Laplace(3.0), shape=(2,))
        with pytest.raises(ValueError, match="last axis of length 2"):
            tn("y", **good, noise=g, observed=np.ones((2, 3)))
    with pytest.raises(TypeError, match="`sensitivity` goes with `epsilon`"):
        tn.dist(*good.values(), sensitivity=30.0, noise=g)
    with pytest.raises(ValueError, match="`sigma`"):
        tn.dist(**(good | {"sigma": 0.0}), noise=g)
    with pytest.raises(ValueError, match="`noise sigma`"):
        _TN.dist(*good.values(), -1.0)
    # a Laplace spec (or none) has no stand-alone distribution: the latent needs a model
    with pytest.raises(NotImplementedError, match=r"noise=noise\.Gaussian"):
        tn.dist(*good.values(), noise=noise.Laplace(1.0))
    with pytest.raises(NotImplementedError, match="model-building helper"):
        tn.dist(*good.values(), 1.0)
    # out of the support or refused parameters: -inf, not NaN
    f = _tn_fn()
    row = [[v] for v in good.values()]
    assert f(np.array([[np.nan, 1.0]]), *row, [2.0])[0][0] == -np.inf
    with pytest.raises(Exception, match="noise sigma > 0"):
        f(np.array([[1.0, 1.0]]), *row, [-2.0])
