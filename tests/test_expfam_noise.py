"""The truncated sums and the noisy multinomial with a noise spec (``noise=``, issue 21).

* Gaussian noise on the truncated sums: the CLT normal convolved with N(0, sigma^2) against
  an independent reference (quadrature of N(s; m, V) N(y - s; 0, sigma^2) with the reference
  moments of ``expfam_reference``), gradients against finite differences, draws' mean and
  variance against the exact moments (the CLT moments are exact, so no approximation error
  enters this check);
* Laplace spec = the ``epsilon`` path;
* Gaussian noise on the multinomial counts: against SciPy's dense multivariate normal, the
  gradient, draws' mean and covariance;
* the refusals (integer kinds, both or neither of ``epsilon`` / ``noise``, ...).

One compiled function per family (vector inputs), reused by every check.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from expfam_reference import exp_moments, poisson_moments
from scipy import integrate, stats

import pymc_dpnoise as pmd
from pymc_dpnoise import noise

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
