"""Exact noisy-count likelihoods: accuracy against brute force, gradients, ops, mechanisms, NUTS.

Tolerances (issue 13): |logp - brute force| <= tol * max(1, |brute force|) with tol = 1e-10 for
n <= 1e5 and 1e-8 for n = 1e7, on grids spanning p in [1e-6, 1 - 1e-6], epsilon in
[0.001, 100] and y from -50 b to n + 50 b.  One compiled function (vector inputs) is evaluated
on every grid point; the full grid runs under ``-m slow``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from counts_reference import brute_binomial_logp, brute_poisson_logp
from scipy import integrate, stats

import pymc_dpnoise as pmd
from pymc_dpnoise.math import _special
from pymc_dpnoise.math import counts as cm

_FNS: dict = {}


def _compiled(kind, mode=None):
    """logp and its gradient w.r.t. (p or mu, epsilon), compiled once per kind and mode."""
    key = (kind, str(mode))
    if key not in _FNS:
        y, a, e, n = pt.dvector("y"), pt.dvector("a"), pt.dvector("e"), pt.dvector("n")
        if kind == "binomial":
            out = cm.binomial_laplace_logp(y, n, a, e)
        elif kind == "clamped":
            out = cm.clamped_binomial_laplace_logp(y, n, a, e)
        else:
            out = cm.poisson_laplace_logp(y, a, e)
        ga, ge = pytensor.grad(out.sum(), [a, e])
        ins = [y, n, a, e] if kind != "poisson" else [y, a, e]
        _FNS[key] = pytensor.function(ins, [out, ga, ge], mode=mode, on_unused_input="ignore")
    return _FNS[key]


def _binomial_grid(ns, ps, eps, ys_per=None):
    rows = []
    for n, p, e in itertools.product(ns, ps, eps):
        b = 1.0 / e
        ys = {-50 * b, -3.5, -0.2, 0.0, 0.5, n * p, n * p + 3 * b + 0.3, n * p - 2 * b, n / 2 + 0.7}
        ys |= {n - 0.5, float(n), n + 2.2, n + 50 * b}
        rows += [(y, n, p, e) for y in sorted(ys)]
    return [np.array(c, dtype=float) for c in zip(*rows, strict=True)]


def _check_binomial(ns, ps, eps, stride=1):
    y, n, p, e = _binomial_grid(ns, ps, eps)
    ours, gp, ge = _compiled("binomial")(y, n, p, e)
    assert np.all(np.isfinite(ours)) and np.all(np.isfinite(gp)) and np.all(np.isfinite(ge))
    worst = {}
    for i in range(0, len(y), stride):
        ref = brute_binomial_logp(y[i], n[i], p[i], 1.0 / e[i])
        err = abs(ours[i] - ref) / max(1.0, abs(ref))
        tol = 1e-10 if n[i] <= 1e5 else 1e-8
        assert err <= tol, dict(y=y[i], n=n[i], p=p[i], eps=e[i], ours=ours[i], ref=ref)
        worst[n[i]] = max(worst.get(n[i], 0.0), err)
    print("worst relative error by n:", {int(k): f"{v:.1e}" for k, v in worst.items()})


def test_binomial_matches_brute_force_coarse():
    _check_binomial([0, 1, 10, 1000], [1e-6, 0.3, 1 - 1e-6], [0.001, 1.0, 100.0])
    _check_binomial([10**5, 10**7], [1e-6, 0.5, 1 - 1e-6], [0.01, 1.0, 100.0], stride=3)


@pytest.mark.slow
def test_binomial_matches_brute_force_full_grid():
    ps = [1e-6, 1e-3, 0.05, 0.3, 0.5, 0.8, 0.999, 1 - 1e-6]
    eps = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
    _check_binomial([0, 1, 2, 10, 100, 1000, 10**4, 10**5], ps, eps)
    _check_binomial([10**6, 10**7], ps, eps, stride=2)


def _check_poisson(mus, eps):
    rows = []
    for mu, e in itertools.product(mus, eps):
        b = 1.0 / e
        ys = {-50 * b, -0.4, 0.0, 0.5, mu, mu + 3 * b + 0.3, mu - 2 * b, 2 * mu + 1.5, mu + 50 * b}
        rows += [(y, mu, e) for y in sorted(ys)]
    y, mu, e = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    ours, gm, ge = _compiled("poisson")(y, mu, e)
    assert np.all(np.isfinite(ours)) and np.all(np.isfinite(gm)) and np.all(np.isfinite(ge))
    for i in range(len(y)):
        ref = brute_poisson_logp(y[i], mu[i], 1.0 / e[i])
        err = abs(ours[i] - ref) / max(1.0, abs(ref))
        tol = 1e-10 if mu[i] <= 1e5 else 1e-8
        assert err <= tol, dict(y=y[i], mu=mu[i], eps=e[i], ours=ours[i], ref=ref)


def test_poisson_matches_brute_force_coarse():
    _check_poisson([1e-6, 0.3, 20.0, 1e4, 1e7], [0.001, 1.0, 100.0])


@pytest.mark.slow
def test_poisson_matches_brute_force_full_grid():
    _check_poisson(
        [1e-6, 1e-3, 0.3, 1.0, 7.5, 100.0, 1e4, 1e5, 1e6, 1e7], [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
    )


def test_clamped_atoms_and_interior_match_brute_force():
    rows = []
    for n, p, e in itertools.product([1, 7, 1000], [1e-6, 0.4, 1 - 1e-6], [0.001, 1.0, 100.0]):
        rows += [(y, n, p, e) for y in (0.0, 0.3, n * p, n - 0.2, float(n))]
    y, n, p, e = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    ours, gp, ge = _compiled("clamped")(y, n, p, e)
    assert np.all(np.isfinite(gp)) and np.all(np.isfinite(ge))
    for i in range(len(y)):
        ref = brute_binomial_logp(y[i], n[i], p[i], 1.0 / e[i], clamp=True)
        # brute-force log-space sums (logsumexp of exact terms, a few ulp each) vs our
        # closed/windowed form through libm: 1e-10 relative is ~1e6 ulp of margin
        assert abs(ours[i] - ref) <= 1e-10 * max(1.0, abs(ref)), (y[i], n[i], p[i], e[i])
    out, *_ = _compiled("clamped")(
        np.array([-0.1, 7.1]), np.array([7.0, 7.0]), np.array([0.3, 0.3]), np.array([1.0, 1.0])
    )
    assert np.all(out == -np.inf)


@pytest.mark.parametrize("n,p,eps", [(3, 0.3, 0.7), (12, 0.05, 3.0)])
@pytest.mark.heavy
def test_clamped_total_probability_is_one(n, p, eps):
    f = _compiled("clamped")

    def dens(v):
        return float(
            np.exp(f(np.array([v]), np.array([n * 1.0]), np.array([p]), np.array([eps]))[0][0])
        )

    breaks = list(range(1, n))
    inner = integrate.quad(dens, 1e-12, n - 1e-12, points=breaks, limit=200, epsabs=1e-13)[0]
    # total mass by quadrature (epsabs 1e-13 per piece) plus atoms: 1e-9 absolute is > 1e3 of that
    # error
    assert inner + dens(0.0) + dens(float(n)) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("kind,param", [("binomial", 0.3), ("poisson", 4.0)])
@pytest.mark.heavy
def test_density_integrates_to_one(kind, param):
    f = _compiled(kind)

    def dens(v):
        args = [np.array([v]), np.array([8.0]), np.array([param]), np.array([1.5])]
        if kind == "poisson":
            args.pop(1)
        return float(np.exp(f(*args)[0][0]))

    pts = list(range(0, 20))
    total = integrate.quad(dens, -40, 60, points=pts, limit=400, epsabs=1e-13)[0]
    total += integrate.quad(dens, -np.inf, -40)[0] + integrate.quad(dens, 60, np.inf)[0]
    # total mass by quadrature (epsabs 1e-13 per piece) plus atoms: 1e-9 absolute is > 1e3 of that
    # error
    assert total == pytest.approx(1.0, abs=1e-9)


def _fd(fun, x, h):
    """Central difference with one Richardson step."""

    def d(s):
        return (fun(x + s) - fun(x - s)) / (2 * s)

    return (4 * d(h / 2) - d(h)) / 3


def _check_gradient(kind, y, n, p, e):
    """One point: analytic gradient in (logit p or log mu, log epsilon) vs finite differences."""
    f = _compiled(kind)
    a0 = p if kind == "binomial" else n * p
    l0 = np.log(p / (1 - p)) if kind == "binomial" else np.log(a0)
    le0 = np.log(e)

    def run(lv, le):
        a = 1 / (1 + np.exp(-lv)) if kind == "binomial" else np.exp(lv)
        args = [np.array([y]), np.array([float(n)]), np.array([a]), np.array([np.exp(le)])]
        if kind == "poisson":
            args.pop(1)
        return f(*args)

    out, ga, ge = run(l0, le0)
    g_l = ga[0] * (p * (1 - p) if kind == "binomial" else a0)  # chain rule to logit / log
    g_e = ge[0] * e
    fd_l = _fd(lambda t: run(t, le0)[0][0], l0, 1e-4)
    fd_e = _fd(lambda t: run(l0, t)[0][0], le0, 1e-4)
    for g, fd in ((g_l, fd_l), (g_e, fd_e)):
        assert np.isfinite(g)
        tol = 1e-5 * abs(fd) + 1e-6 * max(1.0, abs(out[0]))
        assert abs(g - fd) <= tol, (kind, y, n, p, e, g, fd)


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
@pytest.mark.heavy
def test_gradients_match_finite_differences(kind):
    """d logp / d logit(p) (or d log mu) and d / d log(epsilon) against finite differences."""
    rng = np.random.default_rng(4)
    for n, p, e in itertools.product([1, 30, 10**4, 10**7], [1e-4, 0.3, 0.999], [0.01, 1.0, 30.0]):
        mean = n * p
        typical = mean + rng.normal() * np.sqrt(mean + 1) + 0.37
        for y in (-2.0 / e, typical, mean + 5.0 / e, n + 2.0 / e):
            _check_gradient(kind, y, n, p, e)


def test_far_tail_gradients_are_finite():
    y = np.array([-1e6, -50.0, 1e7 + 5e4, 0.0, 1e7])
    n = np.full(5, 1e7)
    for p in (0.0, 1e-12, 0.5, 1 - 1e-12, 1.0):
        out, gp, ge = _compiled("binomial")(y, n, np.full(5, p), np.full(5, 0.001))
        assert np.all(np.isfinite(out)), p
        if 0 < p < 1:
            assert np.all(np.isfinite(gp)) and np.all(np.isfinite(ge)), p


# --------------------------------------------------------------------------------------------
# The ops
# --------------------------------------------------------------------------------------------


def _brute_ratios(k, n, q):
    s = np.arange(n + 1)
    lp = stats.binom.logpmf(s, n, q)
    return (
        np.logaddexp.reduce(lp[: k + 1]) - lp[k],
        (np.logaddexp.reduce(lp[k + 1 :]) - lp[k + 1]) if k < n else None,
    )


def test_binomial_ratio_op_and_pmf_against_sums():
    ks, ns, lqs, refs, pmfs = [], [], [], [], []
    for n in (1, 5, 60, 400):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for q in (1e-5, 0.2, 0.5, 0.9, 1 - 1e-5):
                ks.append(k)
                ns.append(n)
                lqs.append(np.log(q / (1 - q)))
                refs.append(_brute_ratios(k, n, q)[0])
                pmfs.append(stats.binom.logpmf(k, n, q))
    k, n, lq = (np.array(v, dtype=float) for v in (ks, ns, lqs))
    got = _special._vec_binom_ratio(k, n, lq)
    # against scipy's binom.logpmf / betainc (their own few-ulp libm paths), values of order 1-1e3:
    # 1e-12 relative (atol for values near 0) is ~9000 ulp
    np.testing.assert_allclose(got, refs, rtol=1e-12, atol=1e-12)
    # against scipy's binom.logpmf / betainc (their own few-ulp libm paths), values of order 1-1e3:
    # 1e-12 relative (atol for values near 0) is ~9000 ulp
    np.testing.assert_allclose(_special._vec_binom_pmf(k, n, lq), pmfs, rtol=1e-12, atol=1e-12)


@pytest.mark.backend
def test_ops_backends_agree():
    pytest.importorskip("jax")
    k, n, lq = pt.dvector("k"), pt.dvector("n"), pt.dvector("lq")
    outs = [
        _special.log_binom_pmf(k, n, lq),
        _special.log_binom_cdf_ratio(k, n, lq),
        # log mu is clipped to [-700, 700] in the likelihood (mu = e^800 overflows)
        _special.log_poisson_pmf(k, lq.clip(-700, 700)),
        _special.log_poisson_cdf_ratio(k, lq.clip(-700, 700)),
        _special.log_poisson_cdf_ratio(k - 1, lq.clip(-700, 700), upper=True),
    ]
    rng = np.random.default_rng(0)
    nn = np.array([1.0, 7, 100, 1e4, 1e7, 1e7, 30, 30])
    kk = np.floor(nn * np.array([0, 0.3, 0.5, 0.1, 0.5, 1.0, 0.9, 0.2]))
    ll = np.array([-20, 0.3, 0, 2, 0.01, -1, 800, -800]) + rng.normal(size=8) * 0.01
    res = {}
    for mode in (None, "JAX", pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")):
        f = pytensor.function([k, n, lq], outs, mode=mode)
        res[str(mode)] = f(kk, nn, ll)
    base = res["None"]
    for name, got in res.items():
        for a, b in zip(got, base, strict=True):
            # the same log density with the clamp given as None / inf / a constant: the same libm
            # calls on the same values up to the graph's rewrite order, a few ulp
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


# --------------------------------------------------------------------------------------------
# Mechanisms
# --------------------------------------------------------------------------------------------


def test_release_binomial_count():
    rng = np.random.default_rng(0)
    x = rng.random((4, 50)) < 0.3
    rel = pmd.mechanisms.release_binomial_count(x, 2.0, np.random.default_rng(1))
    noise = rel.value - x.sum(-1)
    np.testing.assert_allclose(noise, np.random.default_rng(1).laplace(0, 0.5, size=4))
    assert rel.sensitivity == 1.0 and rel.scale == 0.5 and np.all(rel.n == 50)
    with pytest.raises(ValueError, match="0/1"):
        pmd.mechanisms.release_binomial_count(np.array([0, 2, 1]), 1.0, rng)
    with pytest.raises(ValueError, match="`epsilon`"):
        pmd.mechanisms.release_binomial_count(x, 0.0, rng)


def test_release_poisson_count_clips_to_bound():
    rng = np.random.default_rng(0)
    x = np.array([[0, 1, 7, 2], [3, 3, 0, 0]])
    rel = pmd.mechanisms.release_poisson_count(x, 3, 1.5, np.random.default_rng(2))
    noise = np.random.default_rng(2).laplace(0, 3 / 1.5, size=2)
    np.testing.assert_allclose(rel.value, np.array([6.0, 6.0]) + noise)
    assert rel.sensitivity == 3.0 and rel.upper == 3.0
    with pytest.raises(ValueError, match="`upper`"):
        pmd.mechanisms.release_poisson_count(x, 0, 1.0, rng)
    with pytest.raises(ValueError, match="`upper`"):
        pmd.mechanisms.release_poisson_count(x, 2.5, 1.0, rng)
    with pytest.raises(ValueError, match="non-negative integer"):
        pmd.mechanisms.release_poisson_count(np.array([1, -1]), 3, 1.0, rng)
    with pytest.raises(ValueError, match="non-negative integer"):
        pmd.mechanisms.release_poisson_count(np.array([1, 0.5]), 3, 1.0, rng)
    with pytest.raises(ValueError, match="`epsilon`"):
        pmd.mechanisms.release_poisson_count(x, 3, -1.0, rng)


def test_release_multinomial_counts_noise_on_every_category():
    labels = np.array([[0, 1, 1, 2, 2, 2], [0, 0, 0, 0, 1, 2]])
    rel = pmd.mechanisms.release_multinomial_counts(labels, 3, 1.0, np.random.default_rng(3))
    noise = rel.value - np.array([[1, 2, 3], [4, 1, 1]])
    np.testing.assert_allclose(noise, np.random.default_rng(3).laplace(0, 2.0, size=(2, 3)))
    assert len(np.unique(noise)) == 6  # independent draws, not one scalar for all counts
    assert rel.sensitivity == 2.0
    with pytest.raises(ValueError, match="`labels`"):
        pmd.mechanisms.release_multinomial_counts(np.array([0, 3]), 3, 1.0, np.random.default_rng())
    with pytest.raises(ValueError, match="`k`"):
        pmd.mechanisms.release_multinomial_counts(labels, 1, 1.0, np.random.default_rng())


# --------------------------------------------------------------------------------------------
# PyMC: hierarchical model with dims, three samplers; grid posterior of one region
# --------------------------------------------------------------------------------------------


def _hierarchical(released, n, eps):
    coords = {"region": [f"r{i}" for i in range(len(n))]}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", -1.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", 0.0, 1.0, dims="region")
        logit_p = pm.Deterministic("logit_p", mu + tau * z, dims="region")
        pmd.LaplaceNoisyBinomial(
            "y", n=n, p=pm.math.sigmoid(logit_p), epsilon=eps, observed=released, dims="region"
        )
    return model


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["pymc", "nutpie", "numpyro"])
def test_hierarchical_model_samples_with_every_backend(sampler):
    pytest.importorskip(sampler if sampler != "pymc" else "pymc")
    rng = np.random.default_rng(5)
    n = rng.integers(500, 5000, size=20)
    p = 1 / (1 + np.exp(-rng.normal(-1.0, 0.5, size=20)))
    released = rng.binomial(n, p) + rng.laplace(0, 1 / 0.5, size=20)
    model = _hierarchical(released, n, 0.5)
    with model:
        idata = pm.sample(
            300, tune=300, chains=2, nuts_sampler=sampler, random_seed=1, progressbar=False
        )
        prior = pm.sample_prior_predictive(50, random_seed=2)
        post = pm.sample_posterior_predictive(idata, random_seed=3, progressbar=False)
    assert int(idata.sample_stats["diverging"].sum()) <= 5
    lp = idata.posterior["logit_p"].mean(("chain", "draw")).values
    assert np.corrcoef(lp, np.log(p / (1 - p)))[0, 1] > 0.8
    assert prior.prior_predictive["y"].shape[-1] == 20
    ppc = post.posterior_predictive["y"]
    assert ppc.dims[-1] == "region"
    # the posterior predictive draws are releases: spread = binomial + Laplace noise
    assert float(ppc.std(("chain", "draw")).min()) > 5.0


@pytest.mark.slow
def test_single_region_posterior_matches_grid():
    """NUTS posterior of p against a brute-force grid posterior (flat prior on logit p)."""
    n, eps, released = 200, 0.2, np.array([37.3])
    with pm.Model():
        lq = pm.Normal("lq", 0.0, 2.0)
        pmd.LaplaceNoisyBinomial("y", n=n, p=pm.math.sigmoid(lq), epsilon=eps, observed=released)
        idata = pm.sample(2000, tune=1000, chains=2, random_seed=4, progressbar=False)
    grid = np.linspace(-6, 3, 4001)
    logpost = stats.norm.logpdf(grid, 0, 2) + np.array(
        [brute_binomial_logp(released[0], n, 1 / (1 + np.exp(-g)), 1 / eps) for g in grid]
    )
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    cdf = np.cumsum(w)
    draws = idata.posterior["lq"].values.ravel()
    grid_q = np.interp([0.05, 0.5, 0.95], cdf, grid)
    np.testing.assert_allclose(np.quantile(draws, [0.05, 0.5, 0.95]), grid_q, atol=0.08)
    ks = stats.kstest(draws[::5], lambda x: np.interp(x, grid, cdf)).pvalue
    assert ks > 1e-3


@pytest.mark.parametrize("k", [np.nan, np.inf, 1e200, 2.5, 1])
def test_release_multinomial_counts_refuses_a_bad_k_by_name(k):
    """A NaN, infinite, huge (records x k would not be allocatable), fractional or too small
    number of categories is refused naming `k` (NaN gave "cannot convert float NaN to
    integer", 1e200 NumPy's "Maximum allowed size exceeded")."""
    from pymc_dpnoise.mechanisms.counts import release_multinomial_counts

    with pytest.raises(ValueError, match="`k` must be"):
        release_multinomial_counts(np.array([0, 1, 1]), k, 1.0, np.random.default_rng(0))


def test_epsilon_from_pm_data_follows_set_data():
    """A budget held in ``pm.Data`` stays in the graph (it was folded into a constant Laplace
    scale when the model was built, so ``pm.set_data`` and nutpie's ``with_data`` silently
    kept the old budget): the logp after ``set_data`` equals a model built at the new budget."""

    def logp(eps, data):
        with pm.Model() as m:
            e = pm.Data("epsilon", eps) if data else eps
            p = pm.Beta("p", 1.0, 1.0)
            pmd.LaplaceNoisyBinomial("y", 100, p, e, observed=40.0)
        return m, m.compile_logp()

    m, f = logp(1.0, True)
    pm.set_data({"epsilon": 0.1}, model=m)
    point = {"p_logodds__": 0.3}
    # the same graph on the same values (the epsilon in pm.Data set to the other model's constant):
    # bitwise up to constant folding order, a few ulp
    np.testing.assert_allclose(f(point), logp(0.1, False)[1](point), rtol=1e-12)
