"""Bad input and impossible values across the distribution classes: ``None`` and strings,
shape/size errors and absurd random parameters are errors naming the argument (or ``-inf``
inside a model), NaN reports and NaN values are ``-inf``, reports swapped in with
``pm.set_data`` are checked as observed ones, and the count of summary bins is bounded.

Each test reproduces a failure that was once reported and would have caught it.  The
clipped-report limits are in ``test_clipped.py``; the mechanism-side checks (bounds longer
than the records, delta >= 1, non-finite releases) in ``mechanisms/test_mechanisms.py``."""

from __future__ import annotations

import functools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

# --------------------------------------------------------------------------------------------
# k-RR: one report, a model with one report, per-report p (the hierarchical case)
# --------------------------------------------------------------------------------------------

P3 = np.array([0.2, 0.3, 0.5])


def _krr_ref(y, p, eps):
    return np.log1p(np.expm1(eps) * p[y]) - np.log(np.exp(eps) + len(p) - 1)


def test_krr_single_report_and_per_report_p():
    import pymc as pm

    import pymc_dpnoise as pmd

    # was: [] (the single report dropped)
    out = pm.logp(pmd.KRRLikelihood.dist(p=P3, epsilon=1.0), np.array([1])).eval()
    np.testing.assert_allclose(out, [_krr_ref(1, P3, 1.0)], rtol=1e-12)
    # was: "Alloc static input type and target shape are incompatible"
    p2 = np.array([P3, P3[::-1]])
    out = pm.logp(pmd.KRRLikelihood.dist(p=p2, epsilon=1.0), np.array([1, 2])).eval()
    np.testing.assert_allclose(out, [_krr_ref(1, P3, 1.0), _krr_ref(2, P3[::-1], 1.0)])
    with pm.Model() as model:  # one report in a model, and per-report Dirichlet p
        th = pm.Dirichlet("th", np.ones(3), shape=(2, 3))
        pmd.KRRLikelihood("y", p=th, epsilon=1.0, observed=np.array([1, 0]))
        pmd.KRRLikelihood("y1", p=th[0], epsilon=1.0, observed=np.array([2]))
    assert np.isfinite(model.compile_logp()(model.initial_point()))


# --------------------------------------------------------------------------------------------
# None, absurd random parameters, NaN reports
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make,arg",
    [
        (lambda d: d.LaplacePerturbedClippedNormal.dist(mu=None, sigma=1.0, lower=-1.0, upper=1.0, epsilon=1.0), "mu"),
        (lambda d: d.LaplacePerturbedClippedExponential.dist(lam=1.0, upper=None, epsilon=1.0), "upper"),
        (lambda d: d.KRRLikelihood.dist(p=None, epsilon=1.0), "p"),
        (lambda d: d.OUELikelihood.dist(p=P3, epsilon="1"), "epsilon"),
        (lambda d: d.SSNormalApprox.dist(np.zeros(2), np.eye(2), 10.0, None, "logistic"), "noise_cov"),
        (lambda d: d.SSNormalApprox.dist(None, np.eye(2), 10.0, np.eye(5), "logistic"), "theta"),
        (lambda d: d.PerturbedLinReg.dist(np.zeros(2), 1.0, None, 1.0, 1.0), "cov"),
    ],
)  # fmt: skip
def test_none_and_strings_are_named_errors(make, arg):
    import pymc_dpnoise as pmd

    with pytest.raises((TypeError, ValueError), match=f"`{arg}`"):
        make(pmd)


# --------------------------------------------------------------------------------------------
# Follow-ups: reports swapped in with pm.set_data, NaN values, named shape errors, limits
# --------------------------------------------------------------------------------------------


def _set_data_model(cls, data, **params):
    import pymc as pm

    with pm.Model() as model:
        th = pm.Dirichlet("th", np.ones(3))
        d = pm.Data("d", data)
        cls("z", p=th, observed=d, **params)
    return model, model.compile_logp(), model.initial_point()


def test_set_data_invalid_reports_raise_naming_observed():
    """Was: pm.set_data with 2, 0.5 or NaN bits gave -inf (or a truncated, wrong finite
    value for a float container) instead of an error."""
    import pymc as pm

    import pymc_dpnoise as pmd

    good = np.array([[1.0, 0, 0], [0, 1, 1]])
    model, logp, point = _set_data_model(pmd.OUELikelihood, good, epsilon=1.0)
    ref = logp(point)
    assert np.isfinite(ref)
    for bad in ([[2.0, 0, 0], [0, 1, 1]], [[0.5, 0, 0], [0, 1, 1]], [[np.inf, 0, 0], [0, 1, 1]]):
        with model:
            pm.set_data({"d": np.array(bad)})
        with pytest.raises(ValueError, match=r"observed: the reports in the pm\.Data container"):
            logp(point)
    with model:
        pm.set_data({"d": good})
    assert logp(point) == ref

    model, logp, point = _set_data_model(pmd.KRRLikelihood, np.array([0, 2]), epsilon=1.0)
    assert np.isfinite(logp(point))
    for bad in ([0, 3], [-1, 0]):
        with model:
            pm.set_data({"d": np.array(bad)})
        with pytest.raises(ValueError, match=r"observed: .* items in \[0, k\)"):
            logp(point)


def test_set_data_non_finite_continuous_reports_raise():
    import pymc as pm

    import pymc_dpnoise as pmd

    with pm.Model() as model:
        mu = pm.Normal("mu")
        d = pm.Data("d", np.array([0.1, 0.2]))
        pmd.LaplacePerturbedClippedNormal("z", mu, 1.0, -1.0, 1.0, 1.0, observed=d)
    logp, point = model.compile_logp(), model.initial_point()
    assert np.isfinite(logp(point))
    with model:  # (NaN becomes a masked array in pm.set_data; inf passes through to the graph)
        pm.set_data({"d": np.array([np.inf, 0.2])})
    with pytest.raises(ValueError, match="must be finite"):
        logp(point)


def test_nan_values_in_pm_logp_are_minus_inf_for_every_continuous_class():
    """Was: NaN for the noisy counts, both regressions, SSNormalApprox and the summaries."""
    import pymc as pm

    import pymc_dpnoise as pmd

    nan3 = np.array([np.nan, np.inf, 0.5])
    cases = [
        (pmd.LaplaceNoisyBinomial.dist(10, 0.3, 1.0), nan3, [0, 1]),
        (pmd.LaplaceNoisyBinomial.dist(10, 0.3, 1.0, clamp=True), nan3, [0, 1]),
        (pmd.LaplaceNoisyPoisson.dist(3.0, 1.0, 1.0), nan3, [0, 1]),
        (
            pmd.PerturbedLinReg.dist(np.zeros(2), 1.0, np.eye(2), 1.0, 1.0),
            np.array([[np.nan, 0, 0], [0.1, 0.2, 0.3]]),
            [0],
        ),
        (
            pmd.PerturbedLogReg.dist(np.zeros(2), np.eye(2), 1.0, 1.0),
            np.array([[0.1, np.inf, 1.0], [0.1, 0.2, 0.0]]),
            [0],
        ),
        (
            pmd.SSNormalApprox.dist(np.zeros(2), np.eye(2), 10.0, np.eye(5), "logistic"),
            np.array([[np.nan, 0, 0, 0, 0], [0.1, 0, 0, 0, 0]]),
            [0],
        ),
        (
            pmd.LaplacePerturbedClippedNormalSummary.dist(0.0, 1.0, -1.0, 1.0, 1.0, n=10, n_bins=4),
            np.full((6, 4), np.nan),
            [()],
        ),
    ]
    for rv, value, refused in cases:
        out = np.atleast_1d(pm.logp(rv, value).eval())
        for i in refused:
            assert out[i] == -np.inf, (rv, out)
        rest = np.delete(out, refused) if refused != [()] else []
        assert np.all(np.isfinite(rest)), (rv, out)


def test_float_tensor_values_of_frequency_oracles_are_checked():
    """A NumPy value given to pm.logp is cast to the reports' integer dtype by PyMC itself
    (pm.logp: as_tensor_variable(value, dtype=rv.dtype)) before the distribution sees it; a
    float tensor is not cast, and its non-bits are outside the support."""
    import pymc as pm

    import pymc_dpnoise as pmd

    bits = pt.as_tensor(np.array([[0.5, 0, 0], [np.nan, 0, 1], [1.0, 0, 1]]))
    out = pm.logp(pmd.OUELikelihood.dist(P3, 1.0), bits).eval()
    assert out[0] == -np.inf and out[1] == -np.inf and np.isfinite(out[2])
    items = pt.as_tensor(np.array([0.5, np.nan, 2.0]))
    out = pm.logp(pmd.KRRLikelihood.dist(P3, 1.0), items).eval()
    assert out[0] == -np.inf and out[1] == -np.inf and np.isfinite(out[2])


@pytest.mark.parametrize(
    "make,arg",
    [
        # wrong report width: was "Reshape: Input shape ..." / "Incompatible shared dimension"
        (lambda d, pm: pm.logp(d.OUELikelihood.dist(P3, 1.0), np.zeros((2, 4), "int8")), "value"),
        (lambda d, pm: pm.logp(d.PerturbedLinReg.dist(np.zeros(2), 1.0, np.eye(2), 1.0, 1.0), np.zeros((4, 5))), "value"),
        (lambda d, pm: pm.logp(d.PerturbedLogReg.dist(np.zeros(2), np.eye(2), 1.0, 1.0), np.zeros((4, 5))), "value"),
        (lambda d, pm: pm.logp(d.SSNormalApprox.dist(np.zeros(2), np.eye(2), 10.0, np.eye(5), "logistic"), np.zeros(4)), "value"),
        # wrong-length per-report budget: was "Incompatible Elemwise input shapes"
        (lambda d, pm: pm.logp(d.LaplacePerturbedClippedNormal.dist(0.0, 1.0, -1.0, 1.0, np.ones(3)), np.zeros(5)), "epsilon"),
        # (LaplaceNoisyPoisson is NoisyPoisson(noise=Laplace(sensitivity / epsilon)): the
        # per-report budget is the noise spec's parameter, which the message names)
        (lambda d, pm: pm.logp(d.LaplaceNoisyPoisson.dist(1.0, np.ones(3), 1.0), np.zeros(5)), "noise"),
        (lambda d, pm: pm.logp(d.OUELikelihood.dist(P3, np.ones(3)), np.zeros((5, 3), "int8")), "epsilon"),
        (lambda d, pm: d.PerturbedLogReg("z", np.zeros(2), np.eye(2), 1.0, np.ones(3), observed=np.zeros((5, 3))), "epsilon_y"),
        (lambda d, pm: d.PerturbedLinReg("z", np.zeros(2), 1.0, np.eye(2), 1.0, np.ones(3), observed=np.zeros((5, 3))), "sigma_y"),
        # None became NaN
        (lambda d, pm: d.LaplaceNoisyBinomial.dist(10, None, 1.0), "p"),
        (lambda d, pm: d.LaplaceNoisyBinomial.dist(None, 0.3, 1.0), "n"),
        (lambda d, pm: d.LaplaceNoisyPoisson.dist(None, 1.0, 1.0), "mu"),
        # sizes that allocate without bound: was a 74.5 GiB allocation for nodes=100000
        (lambda d, pm: d.PerturbedLogReg.dist(np.zeros(2), np.eye(2), 1.0, 1.0, nodes=100000), "nodes"),
        (lambda d, pm: d.LaplaceNoisyBinomial.dist(1e300, 0.3, 1.0), "n"),
    ],
)  # fmt: skip
def test_shape_size_and_none_errors_name_the_argument(make, arg):
    import pymc as pm

    import pymc_dpnoise as pmd

    with pm.Model(), pytest.raises((TypeError, ValueError), match=f"`{arg}`"):
        make(pmd, pm)


def test_summary_bin_count_is_bounded():
    import pymc_dpnoise as pmd

    with pytest.raises(ValueError, match="n_bins: at most"):
        pmd.LaplacePerturbedClippedNormalSummary.dist(0.0, 1.0, -1.0, 1.0, 1.0, n=10, n_bins=10**9)


def _param_fn(build, value, n_params):
    import pymc as pm

    syms = [pt.dscalar(f"a{i}") for i in range(n_params)]
    logp = pm.logp(build(*syms), value).sum()
    grads = pt.grad(logp, syms)
    return pytensor.function(syms, [logp, *grads])


def _summary_table():
    import pymc_dpnoise as pmd

    z = np.random.default_rng(0).normal(size=100)
    return pmd.summarize(z, -1.0, 1.0, 1.0, n_bins=4).table


ABSURD = [np.inf, -np.inf, np.nan]


@functools.cache
def _absurd_cases():
    import pymc_dpnoise as pmd

    t = _summary_table()
    return {
        "binomial": (
            _param_fn(lambda n, p, e: pmd.LaplaceNoisyBinomial.dist(n, p, e), np.array([3.2, -1.0]), 3),
            [10.0, 0.3, 1.0],
            [(0, v) for v in [*ABSURD, 1e300]] + [(1, v) for v in ABSURD] + [(2, v) for v in ABSURD],
        ),
        "poisson": (
            _param_fn(lambda m, e: pmd.LaplaceNoisyPoisson.dist(m, e, 1.0), np.array([3.2, -1.0]), 2),
            [3.0, 1.0],
            [(0, v) for v in ABSURD] + [(1, v) for v in ABSURD],
        ),
        "summary": (
            _param_fn(lambda m, s: pmd.LaplacePerturbedClippedNormalSummary.dist(m, s, -1.0, 1.0, 1.0, n=100, n_bins=4), t, 2),
            [0.0, 1.0],
            [(0, v) for v in ABSURD] + [(1, v) for v in [*ABSURD, 1e-300]],
        ),
        "logreg": (
            _param_fn(lambda a: pmd.PerturbedLogReg.dist(pt.stack([a, 0.5]), np.eye(2), 1.0, 1.0), np.array([[0.1, 0.2, 1.0]]), 1),
            [0.3],
            [(0, v) for v in [*ABSURD, 1e300]],
        ),
    }  # fmt: skip


@pytest.mark.parametrize("name", ["binomial", "poisson", "summary", "logreg"])
def test_absurd_random_parameters_of_every_class_are_refused(name):
    """Was NaN (n = inf or 1e300, epsilon = inf, mu = inf, sigma = 1e-300, theta = 1e300)."""
    from pymc.logprob.utils import ParameterValueError

    fn, base, cases = _absurd_cases()[name]
    assert all(np.all(np.isfinite(o)) for o in fn(*base))
    for i, v in cases:
        args = list(base)
        args[i] = v
        with pytest.raises(ParameterValueError):
            fn(*args)


@pytest.mark.parametrize("mu", [1e16, -1e16, 1e100])
def test_huge_mu_has_finite_gradients_in_the_summary(mu):
    fn, _, _ = _absurd_cases()["summary"]
    out = fn(mu, 1.0)
    assert all(np.all(np.isfinite(o)) for o in out)
