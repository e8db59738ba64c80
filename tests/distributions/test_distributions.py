"""The generic checks of the scalar continuous reports: every :class:`registry.ScalarCase`
of the registry (``tests/registry.py``; data in ``tests/cases/clipped.py``).  Every test below
runs on every case: logp against an independent reference on an extreme grid, finite gradients that
match finite differences, draws against the density (KS), draws against the NumPy mechanism,
broadcasting, support point, validation of bad input, and backend agreement.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from cases.clipped import (  # noqa: F401 (imported from here by math/test_clipped_normal_jax.py)
    _EXTREME,
    _extreme_normal_grid,
    _normal_grid,
)
from compile_modes import TEST_MODE
from pymc.logprob.utils import ParameterValueError
from pytensor.compile.mode import Mode
from registry import ENTRIES, NO_WORKFLOW_YET, ScalarCase
from registry import SCALAR_CASES as CASES
from scipy import integrate, stats

# All tests of one case run in one xdist worker (``--dist loadgroup``, see the Makefile): the
# functions compiled for the case (``compiled``) are compiled once, not once per worker.
cases = pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.xdist_group(c.name)) for c in CASES], ids=str
)


def test_every_public_distribution_has_an_entry_with_a_reference_check():
    """The registry holds every public distribution, with reference cases (the generic checks
    of this module and ``test_vector_distributions.py``) or the test module that checks its
    reference instead; a building block without a workflow row has cases of its own."""
    from pathlib import Path

    from pymc_dpnoise import distributions as dists

    by_name = {e.name: e for e in ENTRIES}
    assert set(dists.__all__) <= set(by_name), set(dists.__all__) - set(by_name)
    for e in ENTRIES:
        no_row_yet = e.name in NO_WORKFLOW_YET and e.reference_in is not None
        assert e.workflow is not None or e.cases or no_row_yet, e.name
        assert bool(e.cases) != bool(e.reference_in), e.name
        if e.reference_in:
            assert (Path(__file__).parents[1] / e.reference_in).is_file(), e.reference_in
        for case in e.cases:
            # a case may call its class through a thin wrapper (a constructor option fixed)
            assert getattr(case.cls, "wraps", case.cls) is e.cls, case.name


# --------------------------------------------------------------------------------------------
# Compiled functions (compiled once per case and mode: Numba compilation is slow)
# --------------------------------------------------------------------------------------------

_CACHE: dict = {}


def compiled(case: ScalarCase, mode=None, constants=None):
    """logp (elementwise) and gradients of sum(logp) w.r.t. the learned parameters.

    Parameters are float64 vectors (one entry per grid point); ``value`` is an input vector.
    With ``constants`` (a dict with ``value`` and the fixed protocol parameters), those are
    constants instead, as they are for observed data in a model.
    """
    constants = constants or {}
    mode = pytensor.config.mode if mode is None else mode  # the test-mode fixture sets it
    key = (case.name, str(mode), tuple((k, v.tobytes()) for k, v in constants.items()))
    value_constant = constants.get("value")
    if key not in _CACHE:
        ins = {
            p: pt.as_tensor_variable(constants[p]) if p in constants else pt.dvector(p)
            for p in case.params
        }
        if value_constant is None:
            value = pt.dvector("value")
            inputs = [value]
        else:
            value = pt.as_tensor_variable(value_constant)
            inputs = []
        inputs += [ins[p] for p in case.params if p not in constants]
        rv = case.cls.dist(*[ins[p] for p in case.params])
        logp = pm.logp(rv, value)
        grads = pt.grad(logp.sum(), [ins[p] for p in case.grad_params])
        _CACHE[key] = pytensor.function(inputs, [logp, *grads], mode=mode)
    return _CACHE[key]


def _grid_inputs(case, g):
    return [g["value"]] + [g[p] for p in case.params]


# --------------------------------------------------------------------------------------------
# Correctness of the density
# --------------------------------------------------------------------------------------------


@cases
def test_logp_matches_reference_on_extreme_grid(case):
    """|logp - ref| <= 1e-8 max(1, |ref|): the density itself has relative error <= 1e-8."""
    g = case.grid()
    logp, *_ = compiled(case)(*_grid_inputs(case, g))
    ref = np.array(
        [case.ref_logp(*(g[k][i] for k in ("value", *case.params))) for i in range(len(g["value"]))]
    )
    assert np.all(np.isfinite(logp)), "logp must be finite on the whole grid"
    assert np.all(np.isfinite(ref))
    err = np.abs(logp - ref) / np.maximum(1.0, np.abs(ref))
    worst = int(np.argmax(err))
    assert err[worst] <= 1e-8, {k: g[k][worst] for k in g} | dict(ours=logp[worst], ref=ref[worst])


# --------------------------------------------------------------------------------------------
# Extreme but valid parameters (issue 22): the class test of distributions/test_vector_distributions.py
# (test_logp_finite_and_right_at_extreme_valid_parameters) for the clipped reports
# --------------------------------------------------------------------------------------------


def _check_extreme(case, broad):
    grid, ref_logp = _EXTREME[case.name]
    g = grid(broad)
    logp, *grads = compiled(case)(*_grid_inputs(case, g))
    assert np.all(np.isfinite(logp)), {k: g[k][~np.isfinite(logp)][:3] for k in g}
    for name, grad in zip(case.grad_params, grads, strict=True):
        assert np.all(np.isfinite(grad)), {name: {k: g[k][~np.isfinite(grad)][:3] for k in g}}
    ref = np.array(
        [ref_logp(*(g[k][i] for k in ("value", *case.params))) for i in range(len(logp))]
    )
    err = np.abs(logp - ref) / np.maximum(1.0, np.abs(ref))
    worst = int(np.argmax(err))
    print(f"{case.name}: {len(logp)} points, worst relative error {err[worst]:.1e}")
    # graded-panel quadrature reference (tests/references.py) to ~1e-14; ours through
    # log_ndtr/erfcx/log1p with few-ulp libm at condition <= ~10 relative to max(1, |logp|):
    # measured worst 1.4e-15, 1e-12 leaves ~700x
    assert err[worst] <= 1e-12, {k: g[k][worst] for k in g} | dict(ours=logp[worst], ref=ref[worst])


@cases
def test_logp_finite_and_right_at_extreme_valid_parameters(case):
    """Issue 22: at extreme but valid parameters (noise scale and sigma from 1e-100 to 1e100
    times the clipping interval, mu far outside it, reports 1e3 noise scales into the tails)
    the log density is finite with finite gradients in the learned parameters, and equals an
    independent graded-panel quadrature (``tests/references.py``; the quad references of
    ``test_logp_matches_reference_on_extreme_grid`` lose the kernel above epsilon ~ 1e8) to
    1e-12 relative.  Measured: worst 1.4e-15 (normal, 360 points) and 1.2e-14 (exponential,
    336 points) here, 4.2e-14 (10,448 points) and 2.4e-14 (2,520 points) on the broad grid of
    ``test_logp_at_extreme_valid_parameters_broad``; nothing needed fixing."""
    _check_extreme(case, broad=False)


@cases
@pytest.mark.slow
def test_logp_at_extreme_valid_parameters_broad(case):
    """As test_logp_finite_and_right_at_extreme_valid_parameters, on the broad grid."""
    _check_extreme(case, broad=True)


@cases
def test_gradients_finite_and_match_finite_differences(case):
    g = case.grid()
    f = compiled(case)
    logp, *grads = f(*_grid_inputs(case, g))
    steps = case.fd_step(g)
    for name, grad in zip(case.grad_params, grads, strict=True):
        assert np.all(np.isfinite(grad)), f"non-finite d logp / d {name}"
        x = g[name]
        h = steps[name]

        def at(delta, name=name, x=x):
            gg = dict(g)
            gg[name] = x + delta
            return f(*_grid_inputs(case, gg))[0]

        d1 = (at(h) - at(-h)) / (2 * h)
        d2 = (at(h / 2) - at(-h / 2)) / h
        fd = (4 * d2 - d1) / 3  # Richardson: O(h^4)
        roundoff = 1e-14 * (1 + np.abs(logp)) / h
        tol = 1e-5 * np.abs(fd) + 1e-7 + 10 * roundoff
        bad = np.abs(grad - fd) > tol
        assert not np.any(bad), {
            "param": name,
            "n_bad": int(bad.sum()),
            "first": {k: g[k][np.argmax(bad)] for k in g},
            "grad": grad[bad][:3],
            "fd": fd[bad][:3],
        }


def _density_on(case, params, z):
    g = {p: np.full(z.shape, params[p], dtype=float) for p in case.params}
    g["value"] = z
    return np.exp(compiled(case)(*_grid_inputs(case, g))[0])


def _cdf_from_logp(case, params):
    """CDF on a fine grid by integrating the density from the logp (Simpson per region)."""
    lo, hi = case.bounds(params)
    s = case.noise_scale(params)
    pieces = [np.linspace(lo - 60 * s, lo, 40001), np.linspace(lo, hi, 40001)]
    pieces.append(np.linspace(hi, hi + 60 * s, 40001))
    xs, cdf, total = [], [], 0.0
    for xp in pieces:
        dens = _density_on(case, params, xp)
        cum = integrate.cumulative_simpson(dens, x=xp, initial=0.0)
        xs.append(xp)
        cdf.append(total + cum)
        total += cum[-1]
    return np.concatenate(xs), np.concatenate(cdf), total


@cases
@pytest.mark.heavy
def test_density_integrates_to_one(case):
    for eps in (0.1, 1.0, 20.0):
        params = dict(case.typical, epsilon=eps)
        _, _, total = _cdf_from_logp(case, params)
        assert total == pytest.approx(1.0, abs=1e-6), eps


@cases
@pytest.mark.heavy
def test_draws_match_density(case):
    """KS of pm.draw() samples against the CDF integrated from the logp; and it has power."""
    rv = case.cls.dist(**case.typical)
    draws = pm.draw(rv, draws=20_000, random_seed=11)
    x, cdf, total = _cdf_from_logp(case, case.typical)
    assert total == pytest.approx(1.0, abs=1e-6)
    p = stats.kstest(draws, lambda t: np.interp(t, x, cdf)).pvalue
    assert p > 1e-3
    # the same test rejects a slightly wrong parameter: it is not vacuous
    x2, cdf2, _ = _cdf_from_logp(case, dict(case.typical, **case.shifted))
    p_wrong = stats.kstest(draws, lambda t: np.interp(t, x2, cdf2)).pvalue
    assert p_wrong < 1e-3


@cases
@pytest.mark.heavy
def test_draws_match_numpy_mechanism(case):
    """The RV graph and the data holder's NumPy mechanism give the same distribution."""
    rv = case.cls.dist(**case.typical)
    draws = pm.draw(rv, draws=20_000, random_seed=3)
    mech = case.mechanism(np.random.default_rng(5), 20_000, **case.typical)
    assert stats.ks_2samp(draws, mech).pvalue > 1e-3
    lo, hi = case.bounds(case.typical)
    # the mechanism's scale is what the logp assumes: same spread outside the interval
    assert np.mean(draws < lo) == pytest.approx(np.mean(mech < lo), abs=0.02)
    assert np.mean(draws > hi) == pytest.approx(np.mean(mech > hi), abs=0.02)


# --------------------------------------------------------------------------------------------
# PyMC integration: broadcasting, shapes, support point, repr
# --------------------------------------------------------------------------------------------


@cases
def test_broadcasting_per_report_parameters(case):
    """A vector of per-report epsilons and a 2-d batch give the elementwise scalar logps."""
    rng = np.random.default_rng(0)
    eps = np.array([0.3, 1.0, 5.0, 0.3, 2.0, 9.0]).reshape(2, 3)
    lo, hi = case.bounds(case.typical)
    z = rng.uniform(lo - 3, hi + 3, size=(4, 2, 3))
    params = dict(case.typical, epsilon=eps)
    rv = case.cls.dist(**params)
    assert tuple(rv.shape.eval()) == (2, 3)
    batch = pm.logp(case.cls.dist(**params, shape=(4, 2, 3)), z).eval()
    assert batch.shape == (4, 2, 3)
    # elementwise reference: the grid function (every parameter a vector, compiled once per
    # case) at the 24 (report, epsilon) pairs spelled out one by one
    g = {p: np.full(z.size, case.typical[p], dtype=float) for p in case.params}
    g["epsilon"] = np.broadcast_to(eps, z.shape).ravel()
    g["value"] = z.ravel()
    single = compiled(case)(*_grid_inputs(case, g))[0].reshape(z.shape)
    for idx in np.ndindex(z.shape):
        # the same compiled function on the same values, batched or one at a time: bitwise in
        # principle, a few ulp where a vectorised libm loop takes another path for the tail of an
        # array
        assert batch[idx] == pytest.approx(single[idx], rel=1e-12)
    draws = pm.draw(case.cls.dist(**params, shape=(4, 2, 3)), random_seed=1)
    assert draws.shape == (4, 2, 3)


@cases
def test_group_parameters_in_hierarchical_model(case):
    """Per-group parameters indexed per report (the usual hierarchical pattern)."""
    first = case.grad_params[0]
    group = np.array([0, 1, 1, 2, 0])
    lo, hi = case.bounds(case.typical)
    z = np.linspace(lo - 1, hi + 1, 5)
    with pm.Model(coords={"group": range(3), "report": range(5)}) as model:
        theta = pm.HalfNormal(first, 1.0, dims="group")
        kwargs = dict(case.typical, **{first: theta[group]})
        case.cls("z", **kwargs, observed=z, dims="report")
    point = {f"{first}_log__": np.log([0.5, 1.0, 2.0])}
    total = model.compile_logp(vars=[model["z"]], sum=False)(point)[0]
    # one report at a time through the grid function (compiled once per case)
    g = {p: np.full(len(z), case.typical[p], dtype=float) for p in case.params}
    g[first] = np.array([0.5, 1.0, 2.0])[group]
    g["value"] = z
    expected = compiled(case)(*_grid_inputs(case, g))[0]
    # the same formulas on the same values, only summed/grouped in another order: (terms - 1) u of
    # same-sign terms, far below 1e-12
    np.testing.assert_allclose(total, expected, rtol=1e-12)
    ppc = pm.sample_prior_predictive(draws=7, model=model, random_seed=2)
    assert ppc.prior_predictive["z"].shape == (1, 7, 5)


@cases
def test_support_point_and_initial_point(case):
    with pm.Model() as model:
        case.cls("z", **case.typical, shape=(3,))
    sp = pm.distributions.distribution.support_point(model["z"]).eval()
    assert sp.shape == (3,)
    logp = model.compile_logp()
    assert np.all(np.isfinite(logp({"z": sp})))
    assert np.isfinite(logp(model.initial_point()))


@cases
def test_repr_names_distribution(case):
    with pm.Model() as model:
        case.cls("z", **case.typical)
    text = model["z"].str_repr()
    assert case.cls.__name__ in text
    assert "z ~" in text


@cases
def test_float64_throughout(case):
    """Python floats exactly representable in float32 must not downcast the graph."""
    rv = case.cls.dist(**{k: float(v) for k, v in case.typical.items()})
    assert rv.dtype == "float64"
    assert pm.logp(rv, 0.3).dtype == "float64"


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


@cases
def test_bad_constant_parameters_raise_naming_argument(case):
    for overrides, argname in case.bad:
        kwargs = dict(case.typical, **overrides)
        with pytest.raises(ValueError, match=f"`{argname}`"):
            case.cls.dist(**kwargs)
        with pm.Model(), pytest.raises(ValueError, match=f"`{argname}`"):
            case.cls("z", **kwargs, observed=np.zeros(2))


@cases
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_reports_are_rejected(case, bad):
    z = np.array([0.1, bad, 0.3])
    with pm.Model(), pytest.raises(ValueError, match="observed reports must be finite"):
        case.cls("z", **case.typical, observed=z)
    with pm.Model(), pytest.raises(ValueError, match="masked"):
        case.cls("z", **case.typical, observed=np.ma.masked_invalid(z))


@cases
def test_invalid_random_parameter_gives_minus_inf_or_error(case):
    """Inside a model, an invalid parameter value is caught by check_parameters."""
    theta = pt.dscalar(case.positive)
    rv = case.cls.dist(**dict(case.typical, **{case.positive: theta}))
    f = pytensor.function([theta], pm.logp(rv, 0.5))
    assert np.isfinite(f(0.5))
    with pytest.raises(ParameterValueError, match=f"{case.positive} > 0"):
        f(-1.0)
    with pm.Model() as model:  # inside a model the check becomes a -inf logp
        th = pm.Flat("th")
        case.cls("z", **dict(case.typical, **{case.positive: th}), observed=[0.5])
    assert model.compile_logp()({"th": -1.0}) == -np.inf


@cases
def test_infinite_value_has_zero_density(case):
    rv = case.cls.dist(**case.typical)
    vals = pm.logp(rv, np.array([-np.inf, np.inf])).eval()
    assert np.all(vals == -np.inf)


@cases
def test_shape_mismatch_is_an_error(case):
    with pm.Model(), pytest.raises(ValueError):
        case.cls("z", **dict(case.typical, epsilon=np.ones(3)), observed=np.zeros(5))


# --------------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------------

BACKENDS = {
    "numba": "NUMBA",
    "c": Mode(linker="cvm", optimizer="fast_run"),
    "jax": "JAX",
}


@cases
@pytest.mark.backend
def test_backends_agree(case):
    """Numba (PyTensor's default), C and JAX agree with the test run's Python-VM evaluation
    (``TEST_MODE``, the one every reference check above uses): logp to 1e-10, gradients to
    1e-7 relative.  Numba, the backend users run, is checked on the whole extreme grid; C and
    JAX on every 7th point.

    Reports and the clipping bounds are constants, as in a model with observed data (the JAX
    backend needs the set of reports inside the interval to be known at compile time).
    """
    pytest.importorskip("jax")
    g = case.grid()
    fixed = ("value", "lower", "upper")
    for name, mode in BACKENDS.items():
        sub = g if name == "numba" else {k: v[::7] for k, v in g.items()}
        consts = {k: sub[k] for k in fixed if k in sub}
        args = [sub[p] for p in case.params if p not in consts]
        lp_ref, *g_ref = compiled(case, mode=TEST_MODE, constants=consts)(*args)
        lp, *grads = compiled(case, mode=mode, constants=consts)(*args)
        # another backend's libm (Numba/LLVM, C, XLA may contract FMAs): few-ulp calls times the
        # condition of a log density, 1e-10 relative is ~1e6 ulp; atol for values near 0
        np.testing.assert_allclose(lp, lp_ref, rtol=1e-10, atol=1e-12, err_msg=name)
        # gradients: sums of nearly cancelling terms in places, compiled in a different order
        for a, b in zip(grads, g_ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-12, err_msg=name)
