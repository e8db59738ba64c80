"""Truncated-normal (x, x^2) noisy sums (Bernstein & Sheldon Sec. 3.3, the 2-d latent-sum variant).

* the exact parts (truncated-normal moments, the closed-form Cholesky factor of the CLT
  covariance, the sensitivity) against independent references (SciPy quadrature, assembled
  covariances, brute force) on grids reaching far tails and tiny / huge ``sigma``; gradients;
* the approximation (random-sum CLT) against Monte Carlo of the exact mechanism, in the
  range the docstring claims;
* the release mechanism and its input errors; the model-building helper (shapes, dims,
  validation, predictive draws); NUTS recovery with every sampler and a small SBC (slow);
* Gaussian noise on each sum (``noise=``, no latent): against SciPy's dense bivariate normal
  of the reference CLT moments plus sigma^2 I, against the same density conditioned the other
  way round on the whole grid (far tails, almost collinear (x, x^2), n up to 1e6, sigma 1e-3
  to 1e4), and against the numerical convolution integral; gradients; draws' mean and
  covariance; broadcasting; the Laplace spec is the ``epsilon`` path; the helper in a model;
  its refusals.

The generic checks (logp against the reference on an extreme grid, draws against the CLT
moments, broadcasting, backends, bad parameters) run from ``tests/cases/expfam_normal.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from expfam_normal_reference import (
    clt_cholesky,
    clt_mean_cov,
    integrate_latent,
    sensitivity_brute_force,
    tn_moments,
)
from scipy import integrate, stats
from scipy.special import logsumexp

import pymc_dpnoise as pmd
from pymc_dpnoise import noise
from pymc_dpnoise.diagnostics import SBCProblem, simulation_based_calibration
from pymc_dpnoise.math import expfam_normal as nm
from pymc_dpnoise.mechanisms import release_truncated_normal_sum, truncated_normal_sum_sensitivity

_FNS: dict = {}
# The moment helper (10 outputs and their 20 gradients) takes ~30 s to compile with Numba; the
# Python linker compiles it in a few seconds and is fast enough for these small grids.  The
# Numba, C and JAX graphs of the likelihood are checked by the harness (backends, grid).
_MODE = "FAST_COMPILE"


def _fn(key):
    """Compiled helpers, once per module (vector inputs: one graph serves every grid)."""
    if key in _FNS:
        return _FNS[key]
    if key == "moments":
        n, mu, sigma, lo, hi = (pt.dvector(c) for c in ("n", "mu", "sigma", "lo", "hi"))
        mom = list(nm.truncated_normal_moments(mu, sigma, lo, hi))
        clt = list(nm.truncated_normal_sum_clt(n, mu, sigma, lo, hi))
        outs = mom + clt
        grads = [pytensor.grad(o.sum(), [mu, sigma]) for o in outs]
        f = pytensor.function(
            [n, mu, sigma, lo, hi], outs + [g for pair in grads for g in pair], mode=_MODE
        )
    elif key == "conditional":
        y, z = pt.dmatrix("y"), pt.dmatrix("z")
        scalars = [pt.dscalar(c) for c in ("n", "mu", "sigma", "lo", "hi", "beta")]
        out = nm.truncated_normal_sum_laplace_logp(y[:, None, :], z, *scalars)
        f = pytensor.function([y, z, *scalars], out, mode=_MODE)
    _FNS[key] = f
    return f


def _grid():
    rows = []
    for mu, sigma, (a, b) in itertools.product(
        (-50.0, -3.0, 0.0, 0.7, 4.0, 1e3),
        (1e-4, 0.3, 1.0, 10.0, 1e5),
        ((-5.0, 5.0), (0.0, 1.0), (2.0, 2.001), (-1e3, 1e3), (10.0, 1e4)),
    ):
        rows.append((mu, sigma, a, b))
    return np.array(rows)


def _moments(rows, n=1.0):
    mu, sigma, a, b = rows.T
    out = _fn("moments")(np.full(len(rows), n), mu, sigma, a, b)
    return out[:10], out[10:]


# --------------------------------------------------------------------------------------------
# Exact parts against independent references
# --------------------------------------------------------------------------------------------


def test_truncated_normal_moments_match_quadrature():
    """log q, mean and central moments to 1e-9 (scaled: the mean by |m| + sd, k3 by sd^3)
    from [a, b] at 1e7 standard deviations from mu to sigma = 1e5 (b - a)."""
    rows = _grid()
    (log_q, m, k2, k3, k4, *_), _ = _moments(rows)
    worst = 0.0
    for i, row in enumerate(rows):
        r = tn_moments(*row)
        err = [
            abs(log_q[i] - r[0]) / max(1.0, abs(r[0])),
            abs(m[i] - r[1]) / (abs(r[1]) + np.sqrt(r[2])),
            abs(k2[i] - r[2]) / r[2],
            abs(k3[i] - r[3]) / r[2] ** 1.5,
            abs(k4[i] - r[4]) / r[4],
        ]
        # cumulants against 60-digit mpmath; ours through erfcx ratios with condition up to ~1e3
        # near the bounds: 1e-9 relative is > 1e3 of margin
        assert max(err) <= 1e-9, (row, err)
        worst = max(worst, *err)
    print(f"worst scaled error {worst:.1e}")


def test_clt_cholesky_matches_the_covariance():
    """L L^T equals the covariance assembled from the quadrature moments wherever that
    assembly is well conditioned, and l22 matches the reference's determinant route
    everywhere (including (x, x^2) almost collinear, where V22 - V12^2/V11 cancels)."""
    rows = _grid()
    n = 250.0
    (*_, m1, m2, l11, l21, l22), _ = _moments(rows, n)
    for i, row in enumerate(rows):
        mean, cov = clt_mean_cov(n, *row)
        if cov[0, 0] == 0.0:  # q underflows: no record can be kept
            assert l11[i] == l21[i] == l22[i] == m1[i] == m2[i] == 0.0
            continue
        sd = np.sqrt(np.diag(cov))
        # CLT mean against 60-digit mpmath, relative to |mean| + sd (the scale that cancels): few
        # ulp times condition <= ~1e3, 1e-9
        assert np.all(np.abs([m1[i], m2[i]] - mean) <= 1e-9 * (np.abs(mean) + sd)), row
        ref = clt_cholesky(n, *row)
        ours = np.array([l11[i], l21[i], l22[i]])
        assert np.all(np.abs(ours - ref) <= 1e-8 * (np.abs(ref) + 1e-2 * ref[0])), (row, ours, ref)
        _, m, k2, *_ = tn_moments(*row)
        if abs(m) < 30 * np.sqrt(k2):  # assembly without cancellation
            chol = np.array([[l11[i], 0.0], [l21[i], l22[i]]])
            scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
            assert np.max(np.abs(chol @ chol.T - cov) / scale) <= 1e-9, row


def test_clt_schur_complement_without_cancellation():
    """Untruncated limit, |mu| >> sigma: l22^2 = n Var(x^2 | x) = 2 n sigma^4 exactly, where
    the direct V22 - V12^2/V11 keeps no correct digit."""
    n = 100.0
    rows = np.array([[1e4, 1.0, -1e6, 1e6], [-3e5, 0.2, -1e7, 1e7], [50.0, 1e-3, -1e3, 1e3]])
    (*_, l11, l21, l22), _ = _moments(rows, n)
    sigma = rows[:, 1]
    # moments from truncated-normal expressions (erfcx/exp, few ulp) that tend to these limits; the
    # limit error at these widths is below 1e-13: 1e-10 relative
    np.testing.assert_allclose(l22**2, 2 * n * sigma**4, rtol=1e-10)
    # moments from truncated-normal expressions (erfcx/exp, few ulp) that tend to these limits; the
    # limit error at these widths is below 1e-13: 1e-10 relative
    np.testing.assert_allclose(l11**2, n * sigma**2, rtol=1e-10)
    np.testing.assert_allclose(l21, 2 * rows[:, 0] * l11, rtol=1e-10)  # Cov(x, x^2) = 2 mu var


def test_moment_gradients_finite_and_match_finite_differences():
    rows = _grid()
    (_, grads) = _moments(rows, 40.0)
    assert all(np.all(np.isfinite(g)) for g in grads)
    # central differences where the outputs are O(1) functions (moderate settings)
    mod = rows[(np.abs(rows[:, 0]) <= 4) & (rows[:, 1] >= 0.3) & (rows[:, 1] <= 10)]
    mod = mod[(mod[:, 3] - mod[:, 2]) <= 10]
    _, grads = _moments(mod, 40.0)
    for j, name in enumerate(("mu", "sigma")):
        h = 1e-6 * np.maximum(1.0, np.abs(mod[:, j]))
        up, dn = mod.copy(), mod.copy()
        up[:, j] += h
        dn[:, j] -= h
        ups, dns = _moments(up, 40.0)[0], _moments(dn, 40.0)[0]
        fd = [(u - d) / (2 * h) for u, d in zip(ups, dns, strict=True)]
        for k, (g, f) in enumerate(zip(grads[j::2], fd, strict=True)):
            np.testing.assert_allclose(g, f, rtol=2e-5, atol=1e-6, err_msg=f"output {k}, {name}")


# --------------------------------------------------------------------------------------------
# Sensitivity
# --------------------------------------------------------------------------------------------

_BOUNDS = [
    (a, a + w)
    for a in (-12.0, -5.0, -1.0, -0.6, -0.5, -0.2, 0.0, 0.3, 2.0)
    for w in (0.05, 0.4, 1.0, 3.0, 10.0)
]


@pytest.mark.parametrize("a,b", _BOUNDS)
def test_sensitivity_is_the_brute_force_diameter(a, b):
    exact = float(truncated_normal_sum_sensitivity(a, b))
    brute = sensitivity_brute_force(a, b)
    m = max(abs(a), abs(b))
    step = (b - a) / 20000
    assert brute <= exact * (1 + 1e-12)  # no pair of the grid exceeds it
    assert exact - brute <= (1 + 2 * m) * step + 1e-12  # and it is attained (grid resolution)
    paper = max(m, b - a) + m * m  # Sec. 3.3 bound, coordinate by coordinate
    assert exact <= paper + 1e-12


def test_sensitivity_symbolic_matches_numeric_and_examples():
    lo, hi = pt.dvector("lo"), pt.dvector("hi")
    a = np.array([b[0] for b in _BOUNDS])
    b = np.array([b[1] for b in _BOUNDS])
    sym = truncated_normal_sum_sensitivity(lo, hi).eval({lo: a, hi: b})
    # + - * and max only (no libm): IEEE-754 rounds each the same everywhere; 1e-15 = 4.5 ulp
    # for a graph rewrite that reorders one operation
    np.testing.assert_allclose(sym, truncated_normal_sum_sensitivity(a, b), rtol=1e-15)
    assert truncated_normal_sum_sensitivity(-5.0, 5.0) == 30.25  # (-1/2, 5): 5.5^2 > 5 + 25
    assert truncated_normal_sum_sensitivity(0.0, 1.0) == 2.0  # a kept 1 against a dropped one


# --------------------------------------------------------------------------------------------
# Release mechanism
# --------------------------------------------------------------------------------------------


def test_release_truncated_normal_sum():
    x = np.array([[0.5, 9.0, -2.0, 3.0, -7.0], [1.0, 1.0, 100.0, 0.0, 5.0]])
    rel = release_truncated_normal_sum(x, -5.0, 5.0, 1e9, np.random.default_rng(0))
    kept = np.where(np.abs(x) <= 5, x, 0.0)  # records outside dropped, not clipped
    np.testing.assert_allclose(rel.value[..., 0], kept.sum(-1), atol=1e-5)
    np.testing.assert_allclose(rel.value[..., 1], (kept**2).sum(-1), atol=1e-5)
    assert rel.value.shape == (2, 2) and rel.n.tolist() == [5, 5]
    assert rel.sensitivity == 30.25 and rel.scale == pytest.approx(30.25e-9)
    wide = release_truncated_normal_sum(x, -5, 5, 1.0, np.random.default_rng(0), sensitivity=35)
    assert wide.scale == 35.0
    # the noise: Laplace(0, scale), independent on the two coordinates
    rng = np.random.default_rng(1)
    many = release_truncated_normal_sum(np.zeros((40_000, 3)), 1.0, 2.0, 0.5, rng)
    noise = many.value  # every record dropped: the release is pure noise
    assert np.abs(noise.mean(0)).max() < 5 * np.sqrt(2) * many.scale / 200
    np.testing.assert_allclose(noise.std(0), np.sqrt(2) * many.scale, rtol=0.03)
    assert abs(np.corrcoef(noise.T)[0, 1]) < 0.03


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(lower=None), TypeError, "`lower`"),
        (dict(lower=np.inf), ValueError, "`lower`"),
        (dict(upper="five"), TypeError, "`upper`"),
        (dict(lower=2.0, upper=2.0), ValueError, "`lower`"),
        (dict(epsilon=0.0), ValueError, "epsilon"),
        (dict(epsilon=[1.0, 2.0]), ValueError, "`epsilon`"),
        (dict(x=np.array([1.0, np.nan])), ValueError, "`x`"),
        (dict(x=np.array(["a", "b"])), TypeError, "`x`"),
        (dict(x=3.0), ValueError, "`x`"),
        (dict(rng=1), TypeError, "`rng`"),
        (dict(sensitivity=10.0), ValueError, "`sensitivity`"),
    ],
)
def test_release_refuses_bad_input(kwargs, exc, match):
    args = dict(x=np.ones(5), lower=-5.0, upper=5.0, epsilon=1.0, rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        release_truncated_normal_sum(**args)


# --------------------------------------------------------------------------------------------
# The random-sum CLT against Monte Carlo of the exact mechanism
# --------------------------------------------------------------------------------------------


def _model_marginal(y, n, mu, sigma, a, b, beta):
    """The model's density of y: the conditional density integrated over the latent z
    against N(0, 1), split at the kink of the Laplace kernel of the first sum."""
    mean, _ = clt_mean_cov(n, mu, sigma, a, b)
    l11 = clt_cholesky(n, mu, sigma, a, b)[0]
    cond = _fn("conditional")
    return integrate_latent(
        lambda yy, z: cond(yy, z, n, mu, sigma, a, b, beta), y, (y[:, 0] - mean[0]) / l11
    )


@pytest.mark.parametrize("n,reps", [(30, 200_000), (300, 100_000)])
def test_clt_against_monte_carlo(n, reps):
    """Log density of 30 typical releases (simulated), model against the Laplace density
    averaged over ``reps`` exact truncated sums.  Claimed (docstring): error <= 0.01 at
    eps = 0.1; at eps = 1 rms <= 0.06 and at most 0.3 beyond three Monte Carlo standard
    errors (the largest errors are at releases in the tails of the skewed sum of squares,
    which the normal cannot follow; they also have few simulated sums near them)."""
    mu, sigma, a, b = 0.5, 1.5, -3.0, 4.0
    rng = np.random.default_rng(21)
    sums = np.empty((reps, 2))
    chunk = 2_000_000 // n
    for i in range(0, reps, chunk):
        x = rng.normal(mu, sigma, size=(min(chunk, reps - i), n))
        kept = np.where((x >= a) & (x <= b), x, 0.0)
        sums[i : i + len(x)] = np.stack([kept.sum(1), (kept * kept).sum(1)], 1)
    delta = truncated_normal_sum_sensitivity(a, b)
    for eps, tol_max, tol_rms in ((0.1, 0.01, 0.01), (1.0, 0.3, 0.06)):
        beta = delta / eps
        y = sums[:30] + rng.laplace(0.0, beta, size=(30, 2))
        rest = sums[30:]
        kern = np.array([-np.abs(v - rest).sum(1) / beta for v in y])
        mc = logsumexp(kern, axis=1) - np.log(len(rest)) - 2 * np.log(2 * beta)
        w = np.exp(kern - kern.max(1, keepdims=True))
        se = np.sqrt(w.var(1) / len(rest)) / w.mean(1)  # delta method, log scale
        err = _model_marginal(y, n, mu, sigma, a, b, beta) - mc
        print(
            f"n={n} eps={eps}: max {np.abs(err).max():.4f} rms {np.sqrt(np.mean(err**2)):.4f} "
            f"(MC se <= {se.max():.4f})"
        )
        assert np.all(np.abs(err) <= tol_max + 3 * se), (n, eps, err, se)
        assert np.sqrt(np.mean(err**2)) <= tol_rms, (n, eps, err)


def test_latent_integrates_to_the_clt_moments():
    """Integrating the conditional density over z (Gauss-Hermite) and y (a fine 2-d grid)
    gives total mass 1 and the CLT mean and covariance plus the Laplace noise."""
    n, mu, sigma, a, b, beta = 50.0, 0.3, 1.2, -2.0, 3.0, 4.0
    mean, cov = clt_mean_cov(n, mu, sigma, a, b)
    tot = cov + 2 * beta**2 * np.eye(2)
    sd = np.sqrt(np.diag(tot))
    g1 = np.linspace(mean[0] - 9 * sd[0], mean[0] + 9 * sd[0], 121)
    g2 = np.linspace(mean[1] - 9 * sd[1], mean[1] + 9 * sd[1], 121)
    y1, y2 = np.meshgrid(g1, g2, indexing="ij")
    y = np.stack([y1.ravel(), y2.ravel()], 1)
    dens = np.exp(_model_marginal(y, n, mu, sigma, a, b, beta))
    w = dens * (g1[1] - g1[0]) * (g2[1] - g2[0])
    assert w.sum() == pytest.approx(1.0, abs=2e-4)
    m = (w[:, None] * y).sum(0)
    np.testing.assert_allclose(m, mean, atol=2e-3 * sd.max())
    c = (w[:, None, None] * (y - m)[:, :, None] * (y - m)[:, None, :]).sum(0)
    np.testing.assert_allclose(c, tot, rtol=2e-3, atol=2e-3 * sd.max() ** 2)


# --------------------------------------------------------------------------------------------
# Model-building helper
# --------------------------------------------------------------------------------------------


def _sites(rng, n_sites=4, n=600, eps=1.0, mu=(0.0, 0.5, 1.0, 1.5), sigma=1.3):
    x = np.stack([rng.normal(mu[i], sigma, size=n) for i in range(n_sites)])
    return release_truncated_normal_sum(x, -4.0, 6.0, eps, rng)


def test_helper_in_hierarchical_model_with_dims_and_predictive_draws():
    rng = np.random.default_rng(4)
    rel = _sites(rng)
    coords = {"site": list("abcd"), "stat": ["sum_x", "sum_x2"]}
    with pm.Model(coords=coords) as model:
        mu0 = pm.Normal("mu0", 0.0, 3.0)
        tau = pm.HalfNormal("tau", 1.0)
        mu = pm.Normal("mu", mu0, tau, dims="site")
        sigma = pm.HalfNormal("sigma", 3.0)
        y = pmd.LaplaceNoisyTruncatedNormal(
            "y", rel.n, mu, sigma, rel.lower, rel.upper, rel.epsilon,
            observed=rel.value, dims=("site", "stat"),
        )  # fmt: skip
        prior = pm.sample_prior_predictive(50, random_seed=1)
    assert model["y_sum_z"].eval().shape == (4,)
    assert model.named_vars_to_dims["y_sum_z"] == ("site",)
    assert prior.prior_predictive["y"].shape == (1, 50, 4, 2)
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    assert "LaplaceNoisyTruncatedNormalGivenSum" in y.str_repr()


def test_helper_validation_names_the_argument():
    rel = _sites(np.random.default_rng(0), n_sites=2)
    good = dict(n=rel.n, mu=0.0, sigma=1.0, lower=-4.0, upper=6.0, epsilon=1.0)
    with pytest.raises(TypeError, match="No model on context stack"):
        pmd.LaplaceNoisyTruncatedNormal("y", **good, observed=rel.value)
    for override, name in (
        ({"sigma": -1.0}, "`sigma`"),
        ({"n": 2.5}, "`n`"),
        ({"lower": 7.0}, "`lower`"),
        ({"epsilon": np.nan}, "`epsilon`"),
        ({"sensitivity": 0.0}, "`sensitivity`"),
        ({"mu": np.zeros(3)}, "`mu`"),
    ):
        with pm.Model(), pytest.raises(ValueError, match=name):
            pmd.LaplaceNoisyTruncatedNormal("y", **(good | override), observed=rel.value)
    with pm.Model(), pytest.raises(ValueError, match="last axis of length 2"):
        pmd.LaplaceNoisyTruncatedNormal("y", **good, observed=np.ones((2, 3)))
    with pm.Model(), pytest.raises(ValueError, match="must be finite"):
        pmd.LaplaceNoisyTruncatedNormal("y", **good, observed=np.full((2, 2), np.nan))
    with pm.Model():
        sigma = pm.HalfNormal("sigma")
        with pytest.raises(ValueError, match="give `observed`, `dims` or `shape`"):
            pmd.LaplaceNoisyTruncatedNormal("y", **(good | {"sigma": sigma}))
        y = pmd.LaplaceNoisyTruncatedNormal("y", **(good | {"sigma": sigma}), shape=(2, 2))
        assert tuple(y.shape.eval()) == (2, 2)


# --------------------------------------------------------------------------------------------
# NUTS (slow): recovery with every sampler, and SBC
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["pymc", "nutpie", "numpyro"])
def test_nuts_recovers_mean_and_sd(sampler):
    rng = np.random.default_rng(8)
    mu_true, sigma_true = 0.8, 1.6
    x = rng.normal(mu_true, sigma_true, size=(6, 2000))
    rel = release_truncated_normal_sum(x, -5.0, 7.0, 1.0, rng)
    # a crude start (sample moments of the noisy sums, truncation ignored), not jittered: with
    # these vague priors the likelihood has a secondary mode beyond the upper bound (mu ~ 13,
    # sigma ~ 5, 33 nats lower) where nutpie's chains ended from the default start and one
    # of PyMC's from a start jittered by +-1 (see the docstring's "Multimodality")
    m0 = float(np.mean(rel.value[:, 0] / rel.n))
    s0 = float(np.sqrt(max(np.mean(rel.value[:, 1] / rel.n) - m0**2, 0.01)))
    with pm.Model():
        mu = pm.Normal("mu", 0.0, 5.0, initval=m0)
        sigma = pm.HalfNormal("sigma", 5.0, initval=s0)
        pmd.LaplaceNoisyTruncatedNormal(
            "y", rel.n, mu, sigma, rel.lower, rel.upper, rel.epsilon, observed=rel.value
        )
        kwargs = {
            "pymc": {"init": "adapt_diag"},
            "numpyro": {"nuts_sampler_kwargs": {"jitter": False}},
        }
        idata = pm.sample(
            500,
            tune=500,
            chains=2,
            nuts_sampler=sampler,
            random_seed=2,
            progressbar=False,
            **kwargs.get(sampler, {}),
        )
    assert int(idata.sample_stats["diverging"].sum()) <= 5
    post = idata.posterior
    for name, truth in (("mu", mu_true), ("sigma", sigma_true)):
        lo, hi = np.quantile(post[name].values, [0.005, 0.995])
        assert lo < truth < hi, (name, lo, hi)
        assert hi - lo < 0.5  # informative: 12,000 records at eps = 1


class _TruncNormalSBC(SBCProblem):
    """mu ~ N(0.5, 1), sigma ~ LogNormal(0, 0.3); 3 releases of n records in [-4, 5],
    eps = 0.5 each."""

    eps = 0.5
    lower, upper = -4.0, 5.0
    groups = 3

    @property
    def param_names(self):
        return ("mu", "sigma")

    def simulate(self, rng):
        mu, sigma = rng.normal(0.5, 1.0), rng.lognormal(0.0, 0.3)
        x = rng.normal(mu, sigma, size=(self.groups, self.n))
        rel = release_truncated_normal_sum(x, self.lower, self.upper, self.eps, rng)
        return {"mu": mu, "sigma": sigma}, rel.value

    def build_model(self, reports, noise_aware=True):
        with pm.Model() as model:
            data = pm.Data("reports", reports)
            mu = pm.Normal("mu", 0.5, 1.0)
            sigma = pm.LogNormal("sigma", 0.0, 0.3)
            pmd.LaplaceNoisyTruncatedNormal(
                "y", self.n, mu, sigma, self.lower, self.upper, self.eps, observed=data,
                shape=(self.groups, 2),
            )  # fmt: skip
        return model


@pytest.mark.slow
def test_sbc_coverage_near_nominal():
    res = simulation_based_calibration(
        _TruncNormalSBC(n=300), 100, seed=17, n_jobs=2, draws=400, tune=400, chains=2
    )
    table = res.coverage(band_mass=0.99)
    print(table.to_string())
    print(res.ks().to_string())
    assert np.all(table["inside"]), table
    assert np.all(res.ks()["p_value"] > 1e-3)


# --------------------------------------------------------------------------------------------
# Gaussian noise on each sum (noise=): a closed-form bivariate normal, no latent
# --------------------------------------------------------------------------------------------


def _fd(fun, x, h):
    def d(step):
        return (fun(x + step) - fun(x - step)) / (2 * step)

    return (4 * d(h / 2) - d(h)) / 3


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
            # abs floor for derivatives near 0: central differences at step 1e-4 relative carry
            # ~1e-10 of rounding and truncation
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
        # the same compiled formulas, batched or one report at a time: bitwise in principle, a few
        # ulp from a vectorised libm path
        assert got[i, j] == pytest.approx(one[0][0], rel=1e-12)
        ref = _tn_dense_reference(value[i, j], n[j], mu[j], 1.5, -3.0, upper[j], s[i, j])
        # dense numerical-convolution reference accurate to ~1e-11 relative: 1e-9 leaves margin
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
    # the same ops on the same machine, the noise scale reached by two routes (<= 2 ulp apart):
    # a few ulp of the log density, 1e-13 = 450 ulp
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
