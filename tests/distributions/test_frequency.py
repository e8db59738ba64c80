"""Frequency oracles beyond the generic harness: mechanisms, estimators, baselines, the
lookup-table path against the dense product, grouped reports, pm.Data, and NUTS recovery of θ
against the exact grid posterior."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from cases.frequency import oue_reference
from pymc.logprob.utils import ParameterValueError
from scipy import optimize, stats

import pymc_dpnoise as pmd
from pymc_dpnoise import baselines
from pymc_dpnoise import mechanisms as m
from pymc_dpnoise.math import bits_dot

# --------------------------------------------------------------------------------------------
# Mechanisms
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("perturb", "probs"),
    [
        (m.oue_perturb, m.oue_probabilities),
        (m.sue_perturb, m.sue_probabilities),
    ],
)
@pytest.mark.parametrize("eps", [0.2, 3.0])
def test_unary_bit_probabilities(perturb, probs, eps):
    """Own bit is 1 with prob a, other bits with prob b (binomial z-test, and it has power)."""
    n, k = 100_000, 4
    z = perturb(np.full(n, 2), k, eps, np.random.default_rng(1))
    assert z.shape == (n, k) and z.dtype == np.int8
    a, b = probs(eps)
    expected = np.where(np.arange(k) == 2, a, b)
    se = np.sqrt(expected * (1 - expected) / n)
    zscore = (z.mean(0) - expected) / se
    assert np.all(np.abs(zscore) < 4.5), zscore
    wrong = np.where(np.arange(k) == 2, a + 0.01, b)
    assert np.max(np.abs((z.mean(0) - wrong) / se)) > 4.5


@pytest.mark.parametrize("k", [2, 5])
def test_krr_report_distribution(k):
    eps, n = 1.3, 200_000
    y = m.krr_perturb(np.zeros(n, dtype=int), k, eps, np.random.default_rng(2))
    keep, other = m.krr_probabilities(eps, k)
    expected = np.array([keep] + [other] * (k - 1))
    assert expected.sum() == pytest.approx(1.0)
    counts = np.bincount(y, minlength=k)
    assert stats.chisquare(counts, n * expected).pvalue > 1e-3


def test_personalised_budgets_per_report():
    """A vector epsilon gives each report its own budget."""
    rng = np.random.default_rng(3)
    items = np.zeros(20_000, dtype=int)
    eps = np.where(np.arange(20_000) % 2 == 0, 0.01, 60.0)
    z = m.oue_perturb(items, 3, eps, rng)
    exact = z[1::2]  # eps = 60: other bits are never 1
    assert np.all(exact[:, 1:] == 0)
    assert z[::2, 1:].mean() == pytest.approx(m.oue_probabilities(0.01)[1], abs=0.01)
    y = m.krr_perturb(np.arange(10) % 3, 3, np.full(10, 60.0), rng)
    np.testing.assert_array_equal(y, np.arange(10) % 3)


@pytest.mark.parametrize("mechanism", ["oue", "sue", "krr"])
def test_estimators_are_unbiased(mechanism):
    """|estimate - theta| within 5 standard errors computed from the per-report terms."""
    rng = np.random.default_rng(4)
    theta = np.array([0.6, 0.25, 0.1, 0.05])
    k, n = 4, 200_000
    items = rng.choice(k, size=n, p=theta)
    eps = rng.uniform(0.5, 2.0, size=n)  # personalised budgets
    if mechanism == "krr":
        y = m.krr_perturb(items, k, eps, rng)
        est = m.krr_estimate(y, k, eps)
        keep, other = m.krr_probabilities(eps, k)
        terms = ((y[:, None] == np.arange(k)) - other[:, None]) / (keep - other)[:, None]
    else:
        perturb, probs = {
            "oue": (m.oue_perturb, m.oue_probabilities),
            "sue": (m.sue_perturb, m.sue_probabilities),
        }[mechanism]
        z = perturb(items, k, eps, rng)
        a, b = probs(eps)
        est = m.unary_encoding_estimate(z, a, b)
        terms = (z - b[:, None]) / (a - b)[:, None]
    np.testing.assert_allclose(est, terms.mean(0))
    se = terms.std(0) / np.sqrt(n)
    assert np.all(np.abs(est - theta) < 5 * se), (est, theta, se)


def test_project_simplex_matches_quadratic_program():
    rng = np.random.default_rng(5)
    for _ in range(20):
        k = rng.integers(2, 8)
        v = rng.normal(0.3, 0.6, size=k)
        ours = m.project_simplex(v)
        res = optimize.minimize(
            lambda x, v=v: 0.5 * np.sum((x - v) ** 2),
            np.full(k, 1.0 / k),
            jac=lambda x, v=v: x - v,
            bounds=[(0, 1)] * k,
            constraints=[
                {"type": "eq", "fun": lambda x: x.sum() - 1, "jac": lambda x: np.ones_like(x)}
            ],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        )
        assert ours.min() >= 0 and ours.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(ours, res.x, atol=1e-6)
    p = rng.dirichlet(np.ones(5))
    np.testing.assert_allclose(m.project_simplex(p), p, atol=1e-15)  # identity on the simplex
    batch = rng.normal(size=(3, 4))
    np.testing.assert_allclose(m.project_simplex(batch)[1], m.project_simplex(batch[1]))


def test_clip_normalize_and_rounded_counts():
    np.testing.assert_allclose(m.clip_normalize([0.6, -0.2, 0.2]), [0.75, 0.0, 0.25])
    np.testing.assert_allclose(m.clip_normalize([-1.0, -2.0]), [0.5, 0.5])
    c = baselines.rounded_counts([0.335, 0.335, 0.33], 100)
    assert c.sum() == 100 and set(c) <= {33, 34}
    with pytest.raises(ValueError, match="frequencies"):
        baselines.rounded_counts([0.5, 0.6], 10)


def test_projected_estimate_is_on_the_simplex():
    rng = np.random.default_rng(6)
    items = rng.choice(3, size=100, p=[0.7, 0.2, 0.1])
    for mech, reports in [
        ("oue", m.oue_perturb(items, 3, 0.5, rng)),
        ("sue", m.sue_perturb(items, 3, 0.5, rng)),
        ("krr", m.krr_perturb(items, 3, 0.5, rng)),
    ]:
        f = baselines.projected_estimate(reports, 0.5, mech, k=3)
        assert np.all(f >= 0) and f.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="`k`"):
        baselines.projected_estimate(items, 0.5, "krr")


@pytest.mark.parametrize(
    ("call", "arg"),
    [
        (lambda: m.oue_perturb([0, 3], 3, 1.0, np.random.default_rng(0)), "items"),
        (lambda: m.oue_perturb([0, 1], 1, 1.0, np.random.default_rng(0)), "k"),
        (lambda: m.oue_perturb([0, 1.5], 3, 1.0, np.random.default_rng(0)), "items"),
        (lambda: m.oue_perturb([0, 1], 3, 0.0, np.random.default_rng(0)), "epsilon"),
        (lambda: m.oue_perturb([0, 1], 3, [1.0, 1.0, 1.0], np.random.default_rng(0)), "epsilon"),
        (lambda: m.krr_perturb([0, 1], 3, -1.0, np.random.default_rng(0)), "epsilon"),
        (lambda: m.unary_encoding_perturb([0], 3, 1.0, 0.2, np.random.default_rng(0)), "keep_prob"),
        (lambda: m.oue_estimate([[0, 2, 1]], 1.0), "reports"),
        (lambda: m.project_simplex([0.5, np.nan]), "v"),
    ],
)
def test_release_side_bad_input_names_argument(call, arg):
    with pytest.raises(ValueError, match=f"`{arg}`"):
        call()


# --------------------------------------------------------------------------------------------
# The likelihood's internals
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 7, 8, 17, 64])
def test_lookup_tables_equal_dense_product(k):
    rng = np.random.default_rng(k)
    z = (rng.random((4, 5, k)) < 0.5).astype(np.int8)
    p = rng.random((4, 1, k))
    dense = np.einsum("gnk,gk->gn", z, p[:, 0])
    fast, single, forced = pytensor.function(  # one compiled function for the three
        [],
        [
            bits_dot(pt.as_tensor_variable(z), pt.as_tensor_variable(p)),
            bits_dot(z, p[0, 0]),
            bits_dot(z, p, method="dense"),
        ],
    )()
    # sums of k <= 64 products z * p with z in {0, 1} (exact), all >= 0: any summation order is
    # within (k - 1) u of the exact sum (u = 2^-53), the tables' two-level sums within 14 u,
    # so the paths differ by <= 77 u = 8.5e-15 relative on any machine (BLAS order included)
    np.testing.assert_allclose(fast, dense, rtol=1e-14)
    np.testing.assert_allclose(single, z @ p[0, 0], rtol=1e-14)
    np.testing.assert_allclose(forced, dense, rtol=1e-14)
    with pytest.raises(ValueError, match="method"):
        bits_dot(z, p, method="sparse")


def test_grouped_reports_with_counts_equal_ungrouped():
    rng = np.random.default_rng(8)
    theta = np.array([0.5, 0.3, 0.2])
    z = m.oue_perturb(rng.choice(3, 500, p=theta), 3, 1.0, rng)
    patterns, counts = m.compress_reports(z)
    assert counts.sum() == 500 and len(patterns) <= 8
    y = m.krr_perturb(rng.choice(3, 400, p=theta), 3, 1.0, rng)
    items, cnt = m.compress_reports(y)
    full, grouped, full_krr, grouped_krr, zero = pytensor.function(  # one compiled function
        [],
        [
            pm.logp(pmd.OUELikelihood.dist(p=theta, epsilon=1.0), z),
            pm.logp(pmd.OUELikelihood.dist(p=theta, epsilon=1.0, counts=counts), patterns),
            pm.logp(pmd.KRRLikelihood.dist(p=theta, epsilon=1.0), y),
            pm.logp(pmd.KRRLikelihood.dist(p=theta, epsilon=1.0, counts=cnt), items),
            # a zero count contributes nothing, even for a report of zero probability
            pm.logp(pmd.OUELikelihood.dist(p=theta, epsilon=1.0, counts=0.0), z[:1]),
        ],
    )()
    # the same formulas on the same values, only summed/grouped in another order: (terms - 1) u of
    # same-sign terms, far below 1e-12
    assert grouped.sum() == pytest.approx(full.sum(), rel=1e-12)
    # the same formulas on the same values, only summed/grouped in another order: (terms - 1) u of
    # same-sign terms, far below 1e-12
    assert grouped_krr.sum() == pytest.approx(full_krr.sum(), rel=1e-12)
    assert zero[0] == 0.0


def test_invalid_values_have_zero_probability():
    theta = np.array([0.5, 0.3, 0.2])
    lp, lp_krr = pytensor.function(  # one compiled function for both
        [],
        [
            pm.logp(pmd.OUELikelihood.dist(p=theta, epsilon=1.0), np.array([[0, 2, 1], [1, 0, 0]])),
            pm.logp(pmd.KRRLikelihood.dist(p=theta, epsilon=1.0), np.array([3, -1, 2])),
        ],
    )()
    assert lp[0] == -np.inf and np.isfinite(lp[1])
    assert lp_krr[0] == -np.inf and lp_krr[1] == -np.inf and np.isfinite(lp_krr[2])


def test_random_p_off_the_simplex_is_caught():
    p = pt.dvector("p")
    rv = pmd.OUELikelihood.dist(p=p, epsilon=1.0)
    f = pytensor.function([p], pm.logp(rv, np.array([1, 0, 0], dtype=np.int8)))
    assert np.isfinite(f(np.array([0.5, 0.3, 0.2])))
    with pytest.raises(ParameterValueError, match="simplex"):
        f(np.array([0.5, 0.3, 0.3]))
    with pm.Model() as model:  # inside a model the check becomes a -inf logp
        q = pm.Flat("q", shape=3)
        pmd.OUELikelihood("z", p=q, epsilon=1.0, observed=np.array([[1, 0, 0]]))
    assert model.compile_logp()({"q": np.array([0.5, 0.3, 0.3])}) == -np.inf


def test_pm_data_reports_and_set_data():
    rng = np.random.default_rng(9)
    theta = np.array([0.5, 0.3, 0.2])
    z1 = m.oue_perturb(rng.choice(3, 200, p=theta), 3, 1.0, rng)
    z2 = m.oue_perturb(rng.choice(3, 200, p=theta), 3, 1.0, rng)
    with pm.Model() as model:
        data = pm.Data("reports", z1)
        th = pm.Dirichlet("theta", np.ones(3))
        pmd.OUELikelihood("z", p=th, epsilon=1.0, observed=data)
    f = model.compile_logp(vars=[model["z"]], jacobian=False)
    point = model.initial_point()
    th0 = np.full(3, 1 / 3)
    # the NumPy reference and the graph evaluate the same log/log1p of the same probabilities,
    # summed over 3 reports in another order: a few ulp
    assert f(point) == pytest.approx(oue_reference(z1, th0, 1.0).sum(), rel=1e-12)
    pm.set_data({"reports": z2}, model=model)
    # the NumPy reference and the graph evaluate the same log/log1p of the same probabilities,
    # summed over 3 reports in another order: a few ulp
    assert f(point) == pytest.approx(oue_reference(z2, th0, 1.0).sum(), rel=1e-12)


def test_predictive_draws_are_reports():
    rng = np.random.default_rng(10)
    z = m.oue_perturb(rng.choice(3, 50, p=[0.6, 0.3, 0.1]), 3, 1.0, rng)
    with pm.Model() as model:
        th = pm.Dirichlet("theta", np.ones(3))
        pmd.OUELikelihood("z", p=th, epsilon=1.0, observed=z)
        prior = pm.sample_prior_predictive(draws=20, random_seed=1)
    zz = prior.prior_predictive["z"].values
    assert zz.shape == (1, 20, 50, 3)
    assert set(np.unique(zz)) <= {0, 1}
    assert model["z"].dtype == "float64"  # 0/1 in float64 (docs/distributions/index.rst)


# --------------------------------------------------------------------------------------------
# NUTS recovers theta: compared with the exact posterior on a grid (k = 3)
# --------------------------------------------------------------------------------------------


def _grid_posterior_mean(reports, eps, n_grid=400):
    """Posterior mean of theta under Dirichlet(1) by brute force on a fine simplex grid."""
    patterns, counts = m.compress_reports(reports)
    g = (np.arange(n_grid) + 0.5) / n_grid
    t1, t2 = np.meshgrid(g, g, indexing="ij")
    ok = t1 + t2 < 1
    thetas = np.stack([t1[ok], t2[ok], 1 - t1[ok] - t2[ok]], axis=-1)
    loglik = np.zeros(len(thetas))
    for pat, c in zip(patterns, counts, strict=True):
        loglik += c * oue_reference(pat[None, :], thetas[:, None, :], eps)[:, 0]
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    mean = w @ thetas
    sd = np.sqrt(w @ (thetas - mean) ** 2)
    return mean, sd


# nutpie (the experiments' sampler) runs by default; the same check with PyMC's and numpyro's
# NUTS compiles and samples the model twice more and runs with -m slow (both samplers keep a
# default NUTS run in test_sampling.py).
@pytest.mark.parametrize(
    "sampler",
    [
        pytest.param("pymc", marks=pytest.mark.slow),
        "nutpie",
        pytest.param("numpyro", marks=pytest.mark.slow),
    ],
)
@pytest.mark.backend  # runs NUTS: the default mode's compile is cheaper than sampling on the Python VM
def test_nuts_recovers_the_exact_posterior(sampler):
    if sampler != "pymc":
        pytest.importorskip(sampler)
    rng = np.random.default_rng(11)
    theta, eps = np.array([0.6, 0.3, 0.1]), 0.5
    z = m.oue_perturb(rng.choice(3, 3000, p=theta), 3, eps, rng)
    mean, sd = _grid_posterior_mean(z, eps)
    with pm.Model():
        th = pm.Dirichlet("theta", np.ones(3))
        pmd.OUELikelihood("z", p=th, epsilon=eps, observed=z)
        idata = pm.sample(
            draws=1000,
            tune=700,
            chains=2,
            cores=1,
            random_seed=3,
            progressbar=False,
            nuts_sampler=sampler,
            compute_convergence_checks=False,
        )
    post = idata.posterior["theta"].values.reshape(-1, 3)
    # Monte Carlo error of the mean with ~ 500 effective draws: sd / sqrt(500)
    assert np.all(np.abs(post.mean(0) - mean) < 5 * sd / np.sqrt(500)), (post.mean(0), mean)
    assert np.all(np.abs(post.std(0) / sd - 1) < 0.15)
    assert np.all(np.abs(mean - theta) < 4 * sd)  # and the posterior covers the truth


def test_multi_freq_ldpy_aggregators_agree_with_ours():
    """multi-freq-ldpy's MI aggregator is our unbiased OUE estimate clipped and renormalised;
    its IBU estimate lies on the simplex and is close to the truth for large N."""
    pytest.importorskip("multi_freq_ldpy")
    from pymc_dpnoise.experiments import ldp_histograms as ef

    rng = np.random.default_rng(5)
    theta = np.array([0.5, 0.3, 0.15, 0.05])
    items = rng.choice(4, size=20_000, p=theta)
    z = m.oue_perturb(items, 4, 1.0, rng)
    est = ef.multi_freq_ldpy_estimates(z, 1.0)
    ours = m.clip_normalize(m.oue_estimate(z, 1.0))
    # multi-freq-ldpy's estimator and ours: the same affine map of the same counts then a
    # clip-normalise (+ - * / only), a few ulp; atol for zeros
    np.testing.assert_allclose(est["mfl MI"], ours, rtol=1e-10, atol=1e-12)
    ibu = est["mfl IBU"]
    assert np.all(ibu >= 0) and abs(ibu.sum() - 1.0) < 1e-8
    assert np.max(np.abs(ibu - theta)) < 0.05


@pytest.mark.backend
def test_krr_per_report_p_traces_under_jax_jit():
    """Per-report ``p`` (a group's frequencies indexed per report) under ``jax.jit``, as
    ``pm.sample(nuts_sampler="numpyro")`` runs it: the broadcast took ``y[..., :1]``, whose
    length min(1, k) is a computed shape that JAX cannot trace (found by the slow
    workflow test ``test_sample_numpyro[KRRLikelihood]``)."""
    import jax
    from pymc.sampling.jax import get_jaxified_logp

    rng = np.random.default_rng(0)
    g = rng.integers(0, 3, 60)
    with pm.Model(coords=dict(group=range(3), item=range(4))) as model:
        mu = pm.Normal("mu", 0.0, 1.0, dims=("group", "item"))
        p = pm.math.softmax(mu, axis=-1)
        reports = pm.Data("reports", rng.integers(0, 4, 60))
        pmd.KRRLikelihood("obs", p=p[pm.Data("g", g)], epsilon=1.0, observed=reports)
    logp = get_jaxified_logp(model)
    point = [np.asarray(model.initial_point()["mu"])]
    value, grad = jax.jit(jax.value_and_grad(logp))(point)
    assert np.isclose(value, logp(point))
    assert np.all(np.isfinite(grad[0]))


# --------------------------------------------------------------------------------------------
# Extreme keep / flip probabilities and budgets against an exact reference (issue 39, row 8)
# --------------------------------------------------------------------------------------------

#: keep / flip probabilities reaching both ends of (0, 1) in float64
_PROBS = (1e-300, 1e-17, 1e-3, 0.3, 0.5, 0.9, 1 - 1e-10, 1 - 1e-16)
#: budgets from a subnormal-free tiny value to the likelihoods' limit (MAX_EPSILON = 700)
_EPSILONS = (1e-300, 1e-17, 1e-3, 0.5, 5.0, 40.0, 300.0, 700.0)
_THETAS = (np.ones(3) / 3, np.array([0.7, 0.2, 0.1]), np.array([0.5, 0.5, 0.0]))
_PATTERNS = np.array([[(v >> j) & 1 for j in range(3)] for v in range(8)])  # every report, k=3


def _exact_ue(z, theta, a, b, a1=None, b1=None):
    """log sum_x theta_x prod_j P(z_j | e_j = [j == x]), in 60-digit decimal arithmetic from
    the exact values of the float inputs (``a1``, ``b1``: 1 - a and 1 - b when given, for a real
    a or b near 1): it shares no formula with the closed form under test."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        a, b = Decimal(a), Decimal(b)
        a1 = 1 - a if a1 is None else Decimal(a1)
        b1 = 1 - b if b1 is None else Decimal(b1)
        total = Decimal(0)
        for x, th in enumerate(theta):
            prob = Decimal(float(th))
            for j, bit in enumerate(z):
                prob *= (a if bit else a1) if j == x else (b if bit else b1)
            total += prob
        return float(total.ln()) if total > 0 else -np.inf


def _exact_krr(y, theta, eps, k=3):
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        e = Decimal(eps).exp()
        norm = e + (k - 1)
        total = sum(Decimal(float(th)) * (e if x == y else 1) / norm for x, th in enumerate(theta))
        return float(total.ln()) if total > 0 else -np.inf


def _sigmoid_decimal(x):
    """1 / (1 + e^-x) to 60 digits (its complement is _sigmoid_decimal(-x), not 1 - it)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        return 1 / (1 + (-Decimal(x)).exp())


_FREQ_FNS = {}


def _frequency_functions():
    """One compiled function per family: logp of every k = 3 report and the gradient of their
    sum with respect to p and the scalar parameters."""
    if not _FREQ_FNS:
        p, a, b, eps = pt.dvector("p"), pt.dscalar("a"), pt.dscalar("b"), pt.dscalar("eps")
        z, y = pt.as_tensor_variable(_PATTERNS), pt.as_tensor_variable(np.arange(3))
        dists = {
            "ue": ([p, a, b], pmd.UnaryEncodingLikelihood.dist(p=p, keep_prob=a, flip_prob=b), z),
            "oue": ([p, eps], pmd.OUELikelihood.dist(p=p, epsilon=eps), z),
            "sue": ([p, eps], pmd.SUELikelihood.dist(p=p, epsilon=eps), z),
            "krr": ([p, eps], pmd.KRRLikelihood.dist(p=p, epsilon=eps), y),
        }
        for name, (inputs, dist, value) in dists.items():
            lp = pm.logp(dist, value)
            _FREQ_FNS[name] = pytensor.function(inputs, [lp, *pt.grad(lp.sum(), inputs)])
    return _FREQ_FNS


def _tolerance(*probs):
    """Absolute tolerance of a logp built from these probabilities (floats or Decimals): the
    closed form adds up to 2k + 2 logarithms of the parameters and their complements, each
    correctly rounded to a couple of ulps, so its error is a few ulps of the sum of their
    magnitudes (16 ulps of k times that sum, k = 3)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        dec = [
            Decimal(q.numerator) / q.denominator if isinstance(q, Fraction) else q for q in probs
        ]
        mags = sum(abs(float(Decimal(q).ln())) for q in dec)
    return 16 * np.finfo(float).eps * (1 + 3 * mags)


def test_unary_encoding_at_extreme_probabilities_is_exact():
    """keep_prob = 1e-17, flip_prob = 0.3, report [1, 1, 1]: logp was -inf (exact -41.55):
    log1p(expm1(ell) * t) at t = 1 with expm1(ell) rounded to -1."""
    fn = _frequency_functions()["ue"]
    lp = fn(np.ones(3) / 3, 1e-17, 0.3)[0][7]  # pattern 7 = [1, 1, 1]
    assert lp == pytest.approx(_exact_ue([1, 1, 1], np.ones(3) / 3, 1e-17, 0.3), abs=1e-12)
    assert round(lp, 2) == -41.55
    checked = 0
    for theta in _THETAS:
        for a in _PROBS:
            for b in _PROBS:
                if a == b:
                    continue
                lp, *grads = fn(theta, a, b)
                ref = np.array([_exact_ue(zz, theta, a, b) for zz in _PATTERNS])
                tol = _tolerance(a, 1 - Fraction(a), b, 1 - Fraction(b))
                # absolute: a few ulp of the terms' magnitudes, derived in _tolerance
                np.testing.assert_allclose(
                    lp, ref, rtol=0, atol=tol, err_msg=f"a={a}, b={b}, p={theta}"
                )
                assert all(np.all(np.isfinite(g)) for g in grads), (a, b, theta, grads)
                checked += len(ref)
    assert checked == 3 * 56 * 8


@pytest.mark.parametrize("family", ["oue", "sue", "krr"])
def test_epsilon_oracles_at_extreme_budgets_are_exact(family):
    fn = _frequency_functions()[family]
    for theta in _THETAS:
        for eps in _EPSILONS:
            lp, *grads = fn(theta, eps)
            if family == "krr":
                ref = [_exact_krr(y, theta, eps) for y in range(3)]
                # keep probability e^eps / (e^eps + 2) (k = 3) and its complement
                probs = (_sigmoid_decimal(eps - np.log(2)), _sigmoid_decimal(np.log(2) - eps))
            else:
                h = eps if family == "oue" else eps / 2
                b, b1 = _sigmoid_decimal(-h), _sigmoid_decimal(h)
                a, a1 = (0.5, 0.5) if family == "oue" else (b1, b)
                ref = [_exact_ue(zz, theta, a, b, a1, b1) for zz in _PATTERNS]
                probs = (a, a1, b, b1)
            # absolute: a few ulp of the terms' magnitudes, derived in _tolerance
            np.testing.assert_allclose(
                lp, ref, rtol=0, atol=_tolerance(*probs), err_msg=f"{family}, eps={eps}, p={theta}"
            )
            assert all(np.all(np.isfinite(g)) for g in grads), (family, eps, theta, grads)
