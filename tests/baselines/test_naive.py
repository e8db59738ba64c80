"""The naive (noise-ignoring) counterparts: ``naive_counterpart``, ``naive_model``, the
different-data check before ``az.compare``, and the teaching sweep.

Every naive log density is checked against SciPy on data whose naive transformation (rounding,
clipping, projection) is written out in the test, one compiled function per case (both values
at once).  Tolerance 1e-10 relative: the two sides are the same closed-form expressions
evaluated in a different order (float64 rounding only).
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytest
from scipy import stats

import pymc_dpnoise as pmd
from pymc_dpnoise import noise
from pymc_dpnoise.baselines.naive import (
    EXPONENTIAL_FLOOR,
    DifferentDataWarning,
    naive_counterpart,
    naive_model,
)
from pymc_dpnoise.mechanisms.frequency import project_simplex

RTOL = 1e-10  # float64 rounding of the same closed forms (module docstring)

P3 = np.array([0.5, 0.3, 0.2])
EPS = 1.0
# six OUE / SUE / UE bit reports over k = 3 items and six k-RR item reports
# (column means 4/6, 2/6, 1/6: no ties in the largest-remainder rounding)
BITS = np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [1, 0, 0]])
ITEMS = np.array([0, 0, 1, 2, 0, 1])


def _projected_counts(freq_unbiased, n):
    """Largest-remainder rounding of ``n * project_simplex(freq)``, written out here."""
    raw = n * project_simplex(freq_unbiased)
    counts = np.floor(raw).astype(int)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: n - counts.sum()]] += 1
    return counts


def _unary_counts(a, b):
    return _projected_counts((BITS.mean(axis=0) - b) / (a - b), len(BITS))


def _oue_counts():
    return _unary_counts(0.5, 1.0 / (1.0 + np.exp(EPS)))


def _sue_counts():
    return _unary_counts(1.0 / (1.0 + np.exp(-EPS / 2)), 1.0 / (1.0 + np.exp(EPS / 2)))


def _krr_counts():
    k, n = 3, len(ITEMS)
    keep = np.exp(EPS) / (np.exp(EPS) + k - 1)
    other = 1.0 / (np.exp(EPS) + k - 1)
    freq = (np.bincount(ITEMS, minlength=k) / n - other) / (keep - other)
    return _projected_counts(freq, n)


def _multinomial(counts, p=P3):
    return stats.multinomial.logpmf(counts, counts.sum(), p)


# regression reports: rows [z_x (d = 2), z_y]
THETA = np.array([1.0, -0.5])
ROWS = np.array([[0.3, -1.2, 0.9], [1.5, 0.4, 1.1], [-0.7, 0.2, -0.4]])
LOG_ROWS = np.array([[0.3, -1.2, 1.0], [1.5, 0.4, 0.0], [-0.7, 0.2, 1.0]])


def _linreg_ref(rows):
    x, y = rows[:, :2], rows[:, 2]
    return stats.norm.logpdf(x).sum(axis=1) + stats.norm.logpdf(y, x @ THETA, 0.3)


def _logreg_ref(rows):
    x, y = rows[:, :2], rows[:, 2]
    eta = x @ THETA
    return stats.norm.logpdf(x).sum(axis=1) + np.where(
        y == 1, -np.log1p(np.exp(-eta)), -np.log1p(np.exp(eta))
    )


#: name -> (build the .dist(), observed, the data the naive model scores, SciPy's naive
#: log density of them (summed), whether the data are the same)
CASES = {
    "LaplacePerturbedClippedNormal": (
        lambda: pmd.LaplacePerturbedClippedNormal.dist(1.0, 2.0, -5.0, 5.0, EPS),
        np.array([0.5, -7.0, 3.2]),
        np.array([0.5, -7.0, 3.2]),
        lambda z: stats.norm.logpdf(z, 1.0, 2.0).sum(),
        True,
    ),
    "LaplacePerturbedClippedExponential": (
        lambda: pmd.LaplacePerturbedClippedExponential.dist(0.5, 5.0, EPS),
        np.array([-1.0, 0.3, 6.0]),
        np.array([EXPONENTIAL_FLOOR, 0.3, 6.0]),
        lambda z: stats.expon.logpdf(z, scale=2.0).sum(),
        False,
    ),
    "LaplaceNoisyBinomial": (
        lambda: pmd.LaplaceNoisyBinomial.dist(20, 0.3, EPS),
        np.array([-1.3, 4.6, 22.2]),
        np.array([0, 5, 20]),
        lambda s: stats.binom.logpmf(s, 20, 0.3).sum(),
        False,
    ),
    "LaplaceNoisyPoisson": (
        lambda: pmd.LaplaceNoisyPoisson.dist(4.0, EPS, 1.0),
        np.array([-0.7, 3.4, 9.6]),
        np.array([0, 3, 10]),
        lambda s: stats.poisson.logpmf(s, 4.0).sum(),
        False,
    ),
    # integer releases inside [0, n]: the naive Binomial scores the same data
    "NoisyBinomial": (
        lambda: pmd.NoisyBinomial.dist(20, 0.3, noise=noise.DiscreteLaplace.from_epsilon(EPS)),
        np.array([0.0, 5.0, 20.0]),
        np.array([0, 5, 20]),
        lambda s: stats.binom.logpmf(s, 20, 0.3).sum(),
        True,
    ),
    # real-valued releases (Gaussian noise): always different data
    "NoisyPoisson": (
        lambda: pmd.NoisyPoisson.dist(4.0, noise=noise.Gaussian(2.0)),
        np.array([-1.2, 3.6, 4.0]),
        np.array([0, 4, 4]),
        lambda s: stats.poisson.logpmf(s, 4.0).sum(),
        False,
    ),
    # 50 * project_simplex([27.4, 16.1, 8.9] / 50) = [26.6, 15.3, 8.1] -> [27, 15, 8]
    "LaplaceNoisyMultinomial": (
        lambda: pmd.LaplaceNoisyMultinomial.dist(50, P3, noise=noise.Gaussian(2.0)),
        np.array([27.4, 16.1, 8.9]),
        np.array([27, 15, 8]),
        _multinomial,
        False,
    ),
    "OUELikelihood": (
        lambda: pmd.OUELikelihood.dist(P3, EPS),
        BITS,
        _oue_counts(),
        _multinomial,
        False,
    ),
    "SUELikelihood": (
        lambda: pmd.SUELikelihood.dist(P3, EPS),
        BITS,
        _sue_counts(),
        _multinomial,
        False,
    ),
    "UnaryEncodingLikelihood": (
        lambda: pmd.UnaryEncodingLikelihood.dist(P3, 0.75, 0.25),
        BITS,
        _unary_counts(0.75, 0.25),
        _multinomial,
        False,
    ),
    "KRRLikelihood": (
        lambda: pmd.KRRLikelihood.dist(P3, EPS),
        ITEMS,
        _krr_counts(),
        _multinomial,
        False,
    ),
    "PerturbedLinReg": (
        lambda: pmd.PerturbedLinReg.dist(THETA, 0.3, np.eye(2), 0.5, 0.5),
        ROWS,
        ROWS,
        lambda w: _linreg_ref(w).sum(),
        True,
    ),
    # the scatter matrix of the same three rows: the sum of the per-row naive densities
    "PerturbedLinRegSummary": (
        lambda: pmd.PerturbedLinRegSummary.dist(THETA, 0.3, np.eye(2), 0.5, 0.5, n=3),
        ROWS.T @ ROWS,
        ROWS.T @ ROWS,
        lambda s: _linreg_ref(ROWS).sum(),
        True,
    ),
    "PerturbedLogReg": (
        lambda: pmd.PerturbedLogReg.dist(THETA, np.eye(2), 0.5, 1.0),
        LOG_ROWS,
        LOG_ROWS,
        lambda w: _logreg_ref(w).sum(),
        True,
    ),
}

#: name -> a .dist() of a class without a naive model of the same observation
REFUSED = {
    "LaplacePerturbedClippedNormalSummary": lambda: pmd.LaplacePerturbedClippedNormalSummary.dist(
        0.0, 1.0, -1.0, 1.0, 1.0, 50, 4
    ),
    "LaplacePerturbedClippedExponentialSummary": lambda: (
        pmd.LaplacePerturbedClippedExponentialSummary.dist(1.0, 2.0, 1.0, 50, 4)
    ),
    "LaplaceNoisyTruncatedExponential": lambda: pmd.LaplaceNoisyTruncatedExponential.dist(
        30, 0.5, 0.0, 4.0, 1.0
    ),
    "LaplaceNoisyTruncatedPoisson": lambda: pmd.LaplaceNoisyTruncatedPoisson.dist(
        30, 2.0, 0, 8, 1.0
    ),
    "LaplaceNoisyTruncatedNormal": lambda: pmd.LaplaceNoisyTruncatedNormal.dist(
        30, 0.0, 1.0, -2.0, 2.0, noise=noise.Gaussian(1.0)
    ),
    "SSNormalApprox": lambda: pmd.SSNormalApprox.dist(
        np.zeros(2), np.eye(2), 10, np.eye(5), "logistic"
    ),
}


def test_every_public_distribution_is_covered():
    assert set(CASES) | set(REFUSED) == set(pmd._DISTRIBUTIONS)
    assert not set(CASES) & set(REFUSED)


@pytest.mark.parametrize("name", sorted(CASES))
def test_naive_logp_equals_scipy(name):
    build, observed, naive_data, reference, same = CASES[name]
    naive = naive_counterpart(build(), observed)
    assert naive.same_data is same
    np.testing.assert_array_equal(naive.observed, naive_data)
    assert naive.note
    # one compiled function per case: the naive log density of the data it scores
    fn = pytensor.function([], pm.logp(naive.dist, naive.observed).sum())
    np.testing.assert_allclose(fn(), reference(naive_data), rtol=RTOL)


def test_without_observed_the_data_fields_are_empty():
    naive = naive_counterpart(CASES["LaplaceNoisyBinomial"][0]())
    assert naive.observed is None and naive.same_data is None


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_the_reason(name):
    with pytest.raises(NotImplementedError, match=name):
        naive_counterpart(REFUSED[name]())


def test_not_ours_is_refused_by_type():
    with pytest.raises(TypeError, match="not a variable of a pymc_dpnoise distribution"):
        naive_counterpart(pm.Normal.dist(0.0, 1.0))
    with pytest.raises(TypeError, match="`rv` must be a variable"):
        naive_counterpart(np.zeros(3))


def test_batched_histogram_refused():
    rv = pmd.OUELikelihood.dist(np.tile(P3, (2, 1)), EPS)
    with pytest.raises(ValueError, match="`p` has batch dimensions"):
        naive_counterpart(rv, np.stack([BITS, BITS]))


def _clipped_normal_model():
    z = CASES["LaplacePerturbedClippedNormal"][1]
    with pm.Model(coords={"report": ["a", "b", "c"]}) as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pm.Deterministic("var", sigma**2)
        pmd.LaplacePerturbedClippedNormal(
            "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=EPS, observed=z, dims="report"
        )
    return model, z


def test_naive_model_keeps_priors_coords_and_dims():
    model, z = _clipped_normal_model()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DifferentDataWarning)
        naive = naive_model(model)
    assert naive.naive_data_differ == ()
    assert set(naive.naive_notes) == {"z"}
    assert sorted(v.name for v in naive.free_RVs) == ["mu", "sigma"]
    assert [v.name for v in naive.deterministics] == ["var"]
    assert naive.coords == model.coords
    assert naive.named_vars_to_dims == model.named_vars_to_dims
    assert naive.rvs_to_transforms[naive["sigma"]] is not None  # log transform kept
    # the logp at a point: the same priors, and the Normal on the same reports
    # at a point: the prior terms are the original model's (the same graphs), the observed
    # term is SciPy's Normal on the same reports
    point = {"mu": 0.7, "sigma_log__": np.log(1.5)}

    def terms(m, names):
        fn = m.compile_fn([m.logp(vars=[m[v]]) for v in names], inputs=m.value_vars)
        return fn(point)

    np.testing.assert_array_equal(terms(naive, ["mu", "sigma"]), terms(model, ["mu", "sigma"]))
    np.testing.assert_allclose(
        terms(naive, ["z"]), [stats.norm.logpdf(z, 0.7, 1.5).sum()], rtol=RTOL
    )
    # the original model is untouched
    assert type(model["z"].owner.op).__name__ == "LaplacePerturbedClippedNormalRV"


def test_naive_model_warns_for_a_frequency_oracle():
    with pm.Model(coords={"item": ["x", "y", "w"]}) as model:
        theta = pm.Dirichlet("theta", np.ones(3), dims="item")
        pmd.OUELikelihood("z", p=theta, epsilon=EPS, observed=BITS)
    with pytest.warns(DifferentDataWarning, match="'z'"):
        naive = naive_model(model)
    assert naive.naive_data_differ == ("z",)
    np.testing.assert_array_equal(naive.rvs_to_values[naive["z"]].data, _oue_counts())
    assert naive.named_vars_to_dims["theta"] == ("item",)


def _fit(observed, shift, seed):
    """A fake fit: 400 draws of a pointwise log likelihood (enough for PSIS-LOO)."""
    import arviz as az

    rng = np.random.default_rng(seed)
    return az.from_dict(
        {
            "posterior": {"mu": rng.normal(size=(1, 400))},
            "log_likelihood": {"z": rng.normal(shift, 0.1, size=(1, 400, *observed.shape))},
            "observed_data": {"z": observed},
        }
    )


def test_compare_warns_only_when_the_observed_data_differ():
    from pymc_dpnoise.diagnostics import compare, observed_data_differences

    z = np.array([0.5, -1.0, 2.0])
    aware, naive = _fit(z, -1.0, 0), _fit(z, -1.5, 1)
    other = _fit(np.round(z), -1.2, 2)
    assert observed_data_differences({"aware": aware, "naive": naive}) == []
    assert observed_data_differences({"aware": aware, "rounded": other}) == [
        "'z': other values in 'aware' and 'rounded'"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DifferentDataWarning)
        table = compare({"aware": aware, "naive": naive})
    assert list(table.index) == ["aware", "naive"]  # the higher pointwise log likelihood first
    with pytest.warns(DifferentDataWarning, match="not meaningful"):
        compare({"aware": aware, "rounded": other})
    with pytest.raises(ValueError, match="other values"):
        compare({"aware": aware, "rounded": other}, strict=True)
    with pytest.raises(ValueError, match="at least two"):
        observed_data_differences({"aware": aware})


def test_epsilon_sweep_fast():
    """Two budgets, PyMC's sampler, 20 + 20 draws in the test compile mode: the figure has
    one panel per parameter with the truth marked, and the fits are the two models."""
    from pymc_dpnoise.demo import epsilon_sweep

    res = epsilon_sweep((1.0, 4.0), n=200, draws=20, tune=20, chains=1, sampler="pymc", seed=1)
    assert set(res.idata) == {(e, m) for e in (1.0, 4.0) for m in ("noise-aware", "naive")}
    assert [ax.get_title() for ax in res.figure.axes] == ["posterior of mu", "posterior of sigma"]
    for ax, param in zip(res.figure.axes, ("mu", "sigma"), strict=True):
        truth = [ln for ln in ax.get_lines() if ln.get_label() == "truth"]
        assert len(truth) == 1 and list(truth[0].get_xdata()) == [res.truth[param]] * 2
    # the naive sigma absorbs the Laplace noise (sd sqrt(2) * 10 / eps): far above the truth
    naive_sigma = float(res.idata[(1.0, "naive")].posterior["sigma"].mean())
    assert naive_sigma > 5.0 * res.truth["sigma"]
    with pytest.raises(ValueError, match="`scenario`"):
        epsilon_sweep(scenario="nope")
    with pytest.raises(ValueError, match="`epsilons`"):
        epsilon_sweep((0.0,))


def test_naive_model_of_integer_counts_and_of_a_data_container():
    """Integer releases inside [0, n]: the same data (as integers), dims kept, no warning; a
    ``pm.Data`` container of reports is kept in the naive model (``pm.set_data`` works)."""
    released = np.array([0.0, 5.0, 20.0])
    with pm.Model(coords={"area": ["a", "b", "c"]}) as counts:
        p = pm.Beta("p", 1.0, 1.0)
        spec = noise.DiscreteLaplace.from_epsilon(EPS)
        pmd.NoisyBinomial("y", n=20, p=p, noise=spec, observed=released, dims="area")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DifferentDataWarning)
        naive = naive_model(counts)
    assert naive.named_vars_to_dims["y"] == ("area",)
    np.testing.assert_array_equal(naive.rvs_to_values[naive["y"]].data, [0, 5, 20])
    logp = naive.compile_fn(naive.logp(vars=[naive["y"]]), inputs=naive.value_vars)
    np.testing.assert_allclose(
        logp({"p_logodds__": 0.0}), stats.binom.logpmf([0, 5, 20], 20, 0.5).sum(), rtol=RTOL
    )

    with pm.Model() as reports:
        z = pm.Data("z_data", np.array([0.5, -7.0, 3.2]))
        mu = pm.Normal("mu", 0.0, 5.0)
        pmd.LaplacePerturbedClippedNormal(
            "z", mu=mu, sigma=2.0, lower=-5.0, upper=5.0, epsilon=EPS, observed=z
        )
    naive = naive_model(reports)
    with naive:
        pm.set_data({"z_data": np.array([1.0, 2.0])})
    logp = naive.compile_fn(naive.logp(vars=[naive["z"]]), inputs=naive.value_vars)
    np.testing.assert_allclose(
        logp({"mu": 1.0}), stats.norm.logpdf([1.0, 2.0], 1.0, 2.0).sum(), rtol=RTOL
    )
