"""NoisySum: the release of a sum of n clamped values plus noise.

References (``sums_reference.py``, SciPy only): characteristic-function inversion for
continuous data, the lattice inversion integral for Poisson data, brute-force convolution for
the exact cases.  The approximation's tolerance is derived, not measured: three times the
largest relative size on |x| <= 3 sd of the first term the second-order Edgeworth expansion
leaves out (``edgeworth_next_term``, from the clamped law's standardised cumulants), plus the
reference's own error.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import sums_reference as ref
from compile_modes import TEST_MODE
from pytensor.graph.replace import clone_replace
from scipy import stats

import pymc_dpnoise as pmd
from pymc_dpnoise import noise
from pymc_dpnoise.math import sums as sm

#: the references' own error: n log psi carries ~sqrt(n) 1e-16 absolute (1e-12 at n = 1e8)
#: plus the quadratures' rounding over ~1e4 nodes; measured below 3e-11 on the whole table
REF_ERR = 1e-9

_FNS: dict = {}


def logp_fn(kind, noise_name, lower=None, upper=None, grad=False, b_const=None):
    """Compiled math logp (and, with ``grad``, its gradient in the data and noise parameters)
    with symbolic (y, n, *params, [L, U,] noise parameter); bounds given here are constants
    (the exact cases need them), as is ``b_const`` (the Gaussian kinds' exact count sums size
    their window from it), which then is no input."""
    key = (kind, noise_name, lower, upper, grad, b_const)
    if key not in _FNS:
        y, n = pt.dvector("y"), pt.dscalar("n")
        b = pt.dscalar("b") if b_const is None else pt.constant(np.float64(b_const))
        ps = [pt.dscalar(p) for p in sm.DATA_KINDS[kind]]
        lo = pt.dscalar("L") if lower is None else pt.constant(float(lower))
        hi = pt.dscalar("U") if upper is None else pt.constant(float(upper))
        out = sm.noisy_sum_logp(y, n, kind, ps, lo, hi, getattr(noise, noise_name), b)
        ins = [y, n, *ps] + ([lo, hi] if lower is None else []) + ([b] if b_const is None else [])
        outs = [out, *pytensor.grad(out.sum(), [*ps, b])] if grad else [out]
        _FNS[key] = pytensor.function(ins, outs, mode=TEST_MODE)
    return _FNS[key]


CONTINUOUS = [
    ("normal", (40.0, 12.0), 0.0, 50.0),  # 20% of the mass clamped at U
    ("normal", (40.0, 12.0), -np.inf, np.inf),
    ("lognormal", (1.0, 0.8), 0.0, 6.0),
    ("lognormal", (1.0, 0.8), 0.0, np.inf),  # clamp inactive (X > 0)
    ("exponential", (2.0,), 0.0, 3.0),
    ("exponential", (2.0,), 0.0, np.inf),
    ("gamma", (3.0, 2.0), 1.0, 8.0),
    ("gamma", (3.0, 2.0), 0.0, np.inf),
]
#: noise scale relative to one clamped value's sd (times sqrt(30)): Laplace 0.01 takes the
#: cumulant branch of the Laplace convolution, 0.5 and 5 the closed-form one
NOISES = [("Laplace", 0.01), ("Laplace", 0.5), ("Laplace", 5.0), ("Gaussian", 0.5)]
NS = [30, 10_000, 100_000_000]


def _continuous_check(kind, params, lower, upper, noise_name, rel, n):
    law = ref.ClampedLaw(kind, params, lower, upper)
    b = rel * np.sqrt(law.var * 30.0)
    noise_var = 2.0 * b**2 if noise_name == "Laplace" else b**2
    sd = np.sqrt(n * law.var + noise_var)
    y = n * law.mean + sd * np.linspace(-3.0, 3.0, 13)
    want = ref.density_cf(law, n, noise_name, b, y)
    got = np.exp(logp_fn(kind, noise_name)(y, n, *params, lower, upper, b)[0])
    err = np.max(np.abs(got / want - 1.0))
    tol = 3.0 * ref.edgeworth_next_term(ref.law_standardised(law), n) + REF_ERR
    return err, tol


#: the default run's subset (two compiled graphs, normal data): each Laplace branch and the
#: Gaussian noise, clamping active and not, n = 30, 1e4 and 1e8; the rest is ``heavy``
_DEFAULT = {(0, 1, 30), (0, 0, 10_000), (1, 3, 100_000_000)}


def _table_params():
    out = []
    for i, d in enumerate(CONTINUOUS):
        for j, nz in enumerate(NOISES):
            for n in NS:
                marks = [] if (i, j, n) in _DEFAULT else [pytest.mark.heavy]
                ident = f"{d[0]}-{d[3]}-{nz[0]}{nz[1]}-n{n:g}"
                out.append(pytest.param(*d, *nz, n, marks=marks, id=ident))
    return out


@pytest.mark.parametrize(
    ("kind", "params", "lower", "upper", "noise_name", "rel", "n"), _table_params()
)
def test_continuous_sums_match_the_reference(kind, params, lower, upper, noise_name, rel, n):
    g1, g2, _ = ref.law_standardised(ref.ClampedLaw(kind, params, lower, upper))
    far = max(abs(g1) / np.sqrt(n), abs(g2) / n) > sm.MAX_STANDARDISED
    # where the sum is too far from normal the package refuses (test_far_from_normal_...)
    assert bool(sm.edgeworth_valid(n, kind, params, lower, upper).eval()) is not far
    if far:
        return
    err, tol = _continuous_check(kind, params, lower, upper, noise_name, rel, n)
    assert err <= tol, (err, tol)


POISSON = [(3.0, 0, 6), (3.0, 1, np.inf), (0.8, 0, 2)]
POISSON_NOISES = [("Gaussian", 2.0), ("DiscreteGaussian", 2.0), ("DiscreteGaussian", 1.0)]


def _poisson_params():
    out = []
    for _i, d in enumerate(POISSON):
        for _j, nz in enumerate(POISSON_NOISES):
            for n in NS:
                ident = f"{d}-{nz[0]}{nz[1]}-n{n:g}"
                out.append(pytest.param(*d, *nz, n, marks=[pytest.mark.heavy], id=ident))
    return out


@pytest.mark.parametrize(("mu", "lower", "upper", "noise_name", "sigma", "n"), _poisson_params())
def test_clamped_poisson_sums_match_the_reference(mu, lower, upper, noise_name, sigma, n):
    mean, var = ref.poisson_moments(mu, lower, upper)
    sd = np.sqrt(n * var + sigma**2)
    y = np.round(n * mean + sd * np.linspace(-3.0, 3.0, 13))
    want = ref.poisson_release(mu, lower, upper, n, noise_name, sigma, y)
    got = np.exp(logp_fn("poisson", noise_name)(y, n, mu, lower, upper, sigma)[0])
    # the expansion's next term, the lattice's e^{-2 pi^2 sigma^2 V / (sigma^2 + V)} and the
    # discrete Gaussian's normaliser (Poisson summation, e^{-2 pi^2 sigma^2} at sigma >= 1)
    v = n * var
    lattice = np.exp(-2.0 * np.pi**2 * sigma**2 * v / (sigma**2 + v))
    tol = 3.0 * ref.edgeworth_next_term(ref.poisson_standardised(mu, lower, upper), n)
    tol += 2.0 * lattice + 2.0 * np.exp(-2.0 * np.pi**2 * sigma**2) + REF_ERR
    assert np.max(np.abs(got / want - 1.0)) <= tol


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize(
    "noise_name", ["Laplace", pytest.param("Gaussian", marks=pytest.mark.heavy)]
)
def test_unclamped_normal_values_are_exact_at_any_n(noise_name, n):
    law = ref.ClampedLaw("normal", (40.0, 12.0), -np.inf, np.inf)
    for b in (0.5, 3.0, 60.0):  # both Laplace branches (b < 0.1 sd: cumulants)
        sd = np.sqrt(n * law.var + b * b)
        y = n * law.mean + sd * np.linspace(-4.0, 4.0, 9)
        if n == 1:
            want = ref.density_n1(law, noise_name, b, y)
        else:
            want = ref.density_cf(law, n, noise_name, b, y)
        got = np.exp(logp_fn("normal", noise_name)(y, n, 40.0, 12.0, -np.inf, np.inf, b)[0])
        # exact but for the Laplace cumulant branch's omitted kappa_8 terms (< 4e-9 at the
        # switch, module docstring of math.sums) and the quadratures' 1e-10
        np.testing.assert_allclose(got, want, rtol=1e-8)


def test_small_n_with_clamping_is_refused_by_name():
    for n in (1, 3, 29):
        with pytest.raises(ValueError, match=r"`n`.*30 or more"):
            pmd.NoisySum.dist(
                n=n, values=pm.Normal.dist(40.0, 12.0), lower=0, upper=50, noise=noise.Laplace(2)
            )
    # normal and unclamped: exact, accepted
    pmd.NoisySum.dist(n=1, values=pm.Normal.dist(40.0, 12.0), noise=noise.Laplace(2.0))


def test_far_from_normal_sums_are_refused():
    """Unclamped exponential values at n = 30: the sum's skewness is 0.37 (errors of 2-17%
    within 3 sd, benchmarks/results/noisy_sums.md): pm.logp refuses, naming the reason; at
    n = 1e4 (skewness 0.02) it is accepted."""
    from pymc.logprob.utils import ParameterValueError

    n = pt.dscalar("n")
    rv = pmd.NoisySum.dist(n=n, values=pm.Exponential.dist(0.5), noise=noise.Laplace(5.0))
    f = pytensor.function([n], pm.logp(rv, 70.0), mode=TEST_MODE)
    with pytest.raises(ParameterValueError, match="skewness and excess kurtosis"):
        f(30.0)
    assert np.isfinite(f(10_000.0))


# --------------------------------------------------------------------------------------------
# Exact cases: Bernoulli (binomial count) and unclamped Poisson (Poisson total)
# --------------------------------------------------------------------------------------------


def _noise_pmf(name, param, j):
    if name == "DiscreteLaplace":
        a = np.exp(-1.0 / param)
        return (1 - a) / (1 + a) * a ** np.abs(j)
    if name == "DiscreteGaussian":
        k = np.arange(-2000, 2001)
        return np.exp(-(j**2) / (2 * param**2)) / np.exp(-(k**2) / (2 * param**2)).sum()
    if name == "RoundedLaplace":
        d = stats.laplace(scale=param)
        return d.cdf(j + 0.5) - d.cdf(j - 0.5)
    if name == "Laplace":
        return stats.laplace(scale=param).pdf(j)
    return stats.norm(scale=param).pdf(j)


def _exact_params():
    out = []
    for kind in ("bernoulli", "poisson"):
        for c in noise.BUILTIN:
            default = (kind, c.__name__) in {("bernoulli", "DiscreteGaussian")}
            marks = [] if default else [pytest.mark.heavy]
            out.append(pytest.param(kind, c.__name__, marks=marks, id=f"{kind}-{c.__name__}"))
    return out


@pytest.mark.parametrize(("kind", "noise_name"), _exact_params())
def test_exact_cases_match_brute_force(kind, noise_name):
    lower, upper = (0.0, 1.0) if kind == "bernoulli" else (0.0, np.inf)
    f = logp_fn(kind, noise_name, lower, upper, b_const=2.0)
    for n, theta in ((1, 0.3), (3, 0.3), (30, 0.6), (10_000, 0.2)):
        law = stats.binom(n, theta) if kind == "bernoulli" else stats.poisson(n * theta)
        top = n if kind == "bernoulli" else int(n * theta + 40 * np.sqrt(n * theta) + 60)
        k = np.arange(0, top + 1)  # all of the mass but < 1e-40
        pk = law.pmf(k)
        y = np.round(law.mean() + np.sqrt(law.var() + 4.0) * np.linspace(-3, 3, 7)) + 0.25 * (
            not getattr(noise, noise_name).discrete
        )
        want = np.array([pk @ _noise_pmf(noise_name, 2.0, yi - k) for yi in y])
        got = np.exp(f(y, n, theta)[0])
        # the package's exact sums against a direct convolution: a few hundred ulp of
        # the largest term (sums of up to 1e4 positive terms, each libm-evaluated)
        np.testing.assert_allclose(got, want, rtol=1e-9)


# --------------------------------------------------------------------------------------------
# Gradients, draws, shapes, a fit
# --------------------------------------------------------------------------------------------

_H = [pytest.mark.heavy]
_GRAD_CASES = [
    pytest.param("normal", (40.0, 12.0), 0.0, 50.0, "Laplace", 20.0, 500, id="normal-lap"),
    pytest.param("normal", (40.0, 12.0), 0.0, 50.0, "Laplace", 0.5, 500, id="normal-lap-small"),
    pytest.param("lognormal", (1.0, 0.8), 0.0, 6.0, "Gaussian", 3.0, 100, marks=_H, id="lnorm"),
    pytest.param("exponential", (2.0,), 0.0, 3.0, "Laplace", 2.0, 50, marks=_H, id="exp"),
    pytest.param("gamma", (3.0, 2.0), 1.0, 8.0, "Gaussian", 1.0, 10_000, marks=_H, id="gamma"),
]


@pytest.mark.parametrize(("kind", "params", "lower", "upper", "noise_name", "b", "n"), _GRAD_CASES)
def test_gradients_match_finite_differences(kind, params, lower, upper, noise_name, b, n):
    f = logp_fn(kind, noise_name, grad=True)
    law = ref.ClampedLaw(kind, params, lower, upper)
    sd = np.sqrt(n * law.var + 2 * b * b)
    y = n * law.mean + sd * np.array([-2.5, -0.7, 0.3, 1.9])
    out = f(y, n, *params, lower, upper, b)
    args = [*params, b]
    for i, g in enumerate(out[1:]):
        h = 1e-4 * abs(args[i])

        def at(step, i=i):
            a = list(args)
            a[i] += step
            return f(y, n, *a[:-1], lower, upper, a[-1])[0].sum()

        # Richardson-extrapolated central difference: truncation O(h^4), rounding ~1e-16/h
        d1 = (at(h) - at(-h)) / (2 * h)
        d2 = (at(2 * h) - at(-2 * h)) / (4 * h)
        fd = (4 * d1 - d2) / 3
        # atol 1e-9: the difference quotient's rounding, ~1e-16 * |logp| / h, near a zero gradient
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
        assert np.isfinite(g)


def _ks(f, m, draws):
    """KS p-value of ``draws`` against the CDF integrated (trapezoid, 2e4 nodes) from the
    density ``exp(f(grid, m))``."""
    lo, hi = draws.min(), draws.max()
    span = hi - lo
    grid = np.linspace(lo - span, hi + span, 20001)
    dens = np.exp(f(grid, m))
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(grid))])
    cdf /= cdf[-1]
    return stats.kstest(draws, lambda x: np.interp(x, grid, cdf)).pvalue


@pytest.mark.parametrize(
    ("values", "n", "lower", "upper", "spec", "base", "shifted"),
    [
        (pm.Normal.dist, 50, 0.0, 50.0, noise.Laplace(10.0), 40.0, 41.0),
        pytest.param(
            lambda m: pm.Exponential.dist(1.0 / m),
            200,
            0.0,
            3.0,
            noise.Gaussian(3.0),
            2.0,
            2.1,
            marks=_H,
        ),
        # above 2^16 records: the clamped sum is drawn from its exact mean and variance
        pytest.param(pm.LogNormal.dist, 10**6, 0.0, 4.0, noise.Laplace(5.0), 0.8, 0.81, marks=_H),
    ],
    ids=["normal", "exponential", "lognormal-1e6"],
)
def test_draws_match_the_density(values, n, lower, upper, spec, base, shifted):
    m = pt.dscalar("m")
    second = (12.0,) if values is pm.Normal.dist else (0.5,) if values is pm.LogNormal.dist else ()
    rv = pmd.NoisySum.dist(n=n, values=values(m, *second), lower=lower, upper=upper, noise=spec)
    value = pt.dvector("v")
    f = pytensor.function([value, m], pm.logp(rv, value), mode=TEST_MODE)
    fixed = clone_replace(rv, replace={m: pt.constant(np.float64(base))})
    draws = pm.draw(fixed, 3000, random_seed=11)
    assert _ks(f, base, draws) > 1e-3
    # power: a small shift of the data law (a few sd of the sample mean) is detected
    assert _ks(f, shifted, draws) < 1e-4


@pytest.mark.heavy  # a compile of the clamped-Poisson graph and 2e4 draws
def test_clamped_poisson_draws_match_the_moments():
    spec = noise.DiscreteGaussian(2.0)
    rv = pmd.NoisySum.dist(n=40, values=pm.Poisson.dist(3.0), lower=0, upper=6, noise=spec)
    draws = pm.draw(rv, 20000, random_seed=3)
    assert np.all(draws == np.round(draws))
    mean, var = ref.poisson_moments(3.0, 0, 6)
    v = 40 * var + float(spec.variance)
    # 20000 draws: the sample mean's sd is sqrt(v / 2e4); 5 sd
    assert abs(draws.mean() - 40 * mean) < 5 * np.sqrt(v / 20000)
    assert abs(draws.var() / v - 1) < 5 * np.sqrt(2 / 20000) * 1.2  # kurtosis near normal
    value = pt.dvector("v")
    f = pytensor.function([value], pm.logp(rv, value), mode=TEST_MODE)
    ks = np.arange(draws.min(), draws.max() + 1)
    expected = np.exp(f(ks)) * len(draws)
    observed = np.array([(draws == k).sum() for k in ks])
    keep = expected > 20
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2(keep.sum() - 1).sf(chi2) > 1e-3


def test_broadcasting_over_groups():
    mu = np.array([30.0, 40.0, 55.0])
    n = np.array([100.0, 2000.0, 40.0])
    b = np.array([5.0, 50.0, 1.0])
    y = np.array([3100.0, 79000.0, 1900.0])
    rv = pmd.NoisySum.dist(
        n=n, values=pm.Normal.dist(mu, 12.0), lower=0, upper=60, noise=noise.Laplace(b)
    )
    got = pm.logp(rv, y).eval(mode=TEST_MODE)
    f = logp_fn("normal", "Laplace")
    for i in range(3):
        one = f(y[i : i + 1], n[i], mu[i], 12.0, 0.0, 60.0, b[i])[0]
        # the same graph on a batch and on one element: a few ulp
        np.testing.assert_allclose(got[i], one[0], rtol=1e-13)
    assert pm.draw(rv, random_seed=1).shape == (3,)
    assert pm.draw(rv, 4, random_seed=1).shape == (4, 3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(values=np.ones(3)), "`values` must be a PyMC .dist()"),
        (dict(values=pm.StudentT.dist(3.0)), "`values` must be a PyMC .dist()"),
        (dict(n=-1), "`n` must be a non-negative integer"),
        (dict(n=40.5), "`n` must be a non-negative integer"),
        (dict(lower=10.0, upper=5.0), "`lower` must be at most `upper`"),
        (dict(noise=noise.DiscreteLaplace(2.0)), "`noise`.*continuous noise"),
        (dict(noise=2.0), "`noise` must be a noise spec"),
        (dict(values=pm.Bernoulli.dist(0.3), lower=0.5, upper=1), "Bernoulli values"),
        (dict(values=pm.Poisson.dist(3.0), upper=6, noise=noise.Laplace(2.0)), "kink"),
        (dict(values=pm.Poisson.dist(3.0), lower=0.5, noise=noise.Gaussian(2.0)), "integer"),
        (
            dict(values=pm.Poisson.dist(3.0), upper=6, noise=noise.DiscreteGaussian(0.5)),
            "sigma >= 1",
        ),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    base = dict(n=40, values=pm.Normal.dist(40.0, 12.0), lower=0, upper=50, noise=noise.Laplace(2))
    with pytest.raises((ValueError, TypeError), match=match):
        pmd.NoisySum.dist(**(base | kwargs))


def test_bad_parameter_values_give_minus_infinity():
    sigma = pt.dscalar("sigma")
    rv = pmd.NoisySum.dist(
        n=40, values=pm.Normal.dist(40.0, sigma), lower=0, upper=50, noise=noise.Laplace(2.0)
    )
    f = pytensor.function([sigma], pm.logp(rv, 1500.0), mode=TEST_MODE)
    from pymc.logprob.utils import ParameterValueError

    with pytest.raises(ParameterValueError, match="sigma > 0"):
        f(-1.0)
    assert np.isfinite(f(12.0))
    assert np.isneginf(pm.logp(rv, np.inf).eval({sigma: 12.0}, mode=TEST_MODE))


@pytest.mark.slow  # a posterior-recovery check: ~170 CPU-s of NUTS in the Python VM
def test_a_fit_recovers_the_mean_per_group():
    """Three groups' clamped sums released with Laplace noise (OpenDP-style, epsilon = 1,
    sensitivity 100); a hierarchical NUTS fit recovers each group's mean."""
    rng = np.random.default_rng(5)
    true = np.array([35.0, 42.0, 50.0])
    n = np.array([400, 1500, 900])
    spec = noise.Laplace(100.0)
    sums = np.array(
        [np.clip(rng.normal(m, 12.0, k), 0, 100).sum() for m, k in zip(true, n, strict=False)]
    )
    release = sums + spec.sample(size=3, rng=rng)
    with pm.Model(coords={"group": range(3)}):
        mu0 = pm.Normal("mu0", 45.0, 20.0)
        mu = pm.Normal("mu", mu0, 10.0, dims="group")
        pmd.NoisySum(
            "s", n=n, values=pm.Normal.dist(mu, 12.0), lower=0, upper=100, noise=spec,
            observed=release,
        )  # fmt: skip
        idata = pm.sample(
            300, tune=300, chains=1, random_seed=4, progressbar=False,
            compute_convergence_checks=False, compile_kwargs={"mode": TEST_MODE},
        )  # fmt: skip
    post = idata.posterior["mu"].values.reshape(-1, 3)
    # each group's posterior sd is ~0.2; 5 posterior sd plus the chain's Monte Carlo error
    assert np.all(np.abs(post.mean(0) - true) < 5 * post.std(0) + 0.1)
