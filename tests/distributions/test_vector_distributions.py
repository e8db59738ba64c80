"""The generic checks of every other report (multivariate and discrete): every
:class:`registry.VectorCase` of the registry (``tests/registry.py``; data in
``tests/cases/<family>.py``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from compile_modes import TEST_MODE
from pymc.blocking import DictToArrayBijection
from pytensor.compile.mode import Mode
from registry import VECTOR_CASES as CASES
from scipy import stats

# Every test of one case runs in the same xdist worker (``--dist loadgroup``, see the
# Makefile), so that the functions compiled for that case (``_CACHE``, ``_model_functions``)
# are compiled once, not once per worker.
cases = pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.xdist_group(c.name)) for c in CASES], ids=str
)

_CACHE: dict = {}


def _is_option(v) -> bool:
    """Python options of ``.dist()`` (e.g. ``glm="logistic"``): passed as is, not as tensors."""
    return isinstance(v, str)


def _input_shape(shape, core_ndim):
    """Static core dimensions (e.g. k, which selects the lookup-table path of the frequency
    oracles), dynamic batch dimensions: one compiled function serves every batch size."""
    batch = len(shape) - core_ndim
    return (None,) * batch + tuple(shape[batch:])


def _signature(case, value, params):
    shapes = [("value", _input_shape(np.shape(value), case.event_ndim), np.asarray(value).dtype)]
    shapes += [
        (k, v) if _is_option(v) else (k, _input_shape(np.shape(v), case.core_ndim[k]))
        for k, v in params.items()
    ]
    return tuple(map(str, shapes))


def logp_function(case, value, params, mode=None):
    """Compiled elementwise logp; compiled once per case, options, rank and core shapes."""
    mode = pytensor.config.mode if mode is None else mode  # the test-mode fixture sets it
    key = (case.name, str(mode), _signature(case, value, params))
    tensors = {k: v for k, v in params.items() if not _is_option(v)}
    if key not in _CACHE:
        ins = {
            k: pt.tensor(k, dtype="float64", shape=_input_shape(np.shape(v), case.core_ndim[k]))
            for k, v in tensors.items()
        }
        options = {k: v for k, v in params.items() if _is_option(v)}
        val = pt.tensor(
            "value",
            dtype=np.asarray(value).dtype,
            shape=_input_shape(np.shape(value), case.event_ndim),
        )
        rv = case.cls.dist(**ins, **options)
        fn = pytensor.function([val, *ins.values()], pm.logp(rv, val), mode=mode)
        _CACHE[key] = fn
    fn = _CACHE[key]
    return fn(value, *[np.asarray(v, dtype="float64") for v in tensors.values()])


def _f64(params):
    return {k: v if _is_option(v) else np.asarray(v, dtype="float64") for k, v in params.items()}


# --------------------------------------------------------------------------------------------
# Correctness of the density
# --------------------------------------------------------------------------------------------


@cases
def test_logp_matches_reference_on_extreme_grid(case):
    worst = 0.0
    for value, params in case.grid():
        params = _f64(params)
        ours = logp_function(case, value, params)
        ref = np.asarray(case.reference(value, **params))
        assert ours.shape == ref.shape
        assert np.all(np.isfinite(ours)), dict(params=params, value=value)
        err = np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))
        assert np.max(err) <= case.rtol, dict(
            params=params, value=value[np.argmax(err)], ours=ours.max(), ref=ref.max()
        )
        worst = max(worst, float(np.max(err)))
    print(f"{case.name}: worst relative error {worst:.2e}")


def _models(case):
    rng = np.random.default_rng(7)
    for settings in case.model_settings:
        params = dict(case.typical, **settings)
        data = case.simulate(rng, params, case.n_model)
        yield settings, case.model(data, settings)


def _logp_dlogp(model, mode=None):
    """Model logp and its gradient in one compiled function: point -> (logp, dlogp)."""
    return model.compile_fn(
        [model.logp(), model.dlogp()],
        inputs=model.value_vars,
        mode=mode,
        on_unused_input="ignore",
    )


def _model_functions(case, mode=None):
    """[(settings, model, logp+dlogp)] per protocol setting, compiled once per case and mode
    (by default the test run's mode) and shared by the gradient and the backend checks."""
    mode = pytensor.config.mode if mode is None else mode
    key = (case.name, "models", str(mode))
    if key not in _CACHE:
        _CACHE[key] = [(s, m, _logp_dlogp(m, mode=mode)) for s, m in _models(case)]
    return _CACHE[key]


def _points(model, n, seed=0):
    """The initial point and n random points in the unconstrained space."""
    rng = np.random.default_rng(seed)
    ip = model.initial_point()
    pts = [ip]
    for _ in range(n):
        pts.append({k: v + rng.normal(0, 0.5, size=np.shape(v)) for k, v in ip.items()})
    return pts


def _richardson_gradient(logp, point, h=1e-4):
    """Central differences with one Richardson step, in the flattened unconstrained space."""
    x0 = DictToArrayBijection.map(point)

    def f(x):
        return logp(DictToArrayBijection.rmap(x0._replace(data=x)))

    fd = np.empty(x0.data.size)
    for i in range(fd.size):
        e = np.zeros(fd.size)
        e[i] = 1.0

        def d(step, e=e):
            return (f(x0.data + step * e) - f(x0.data - step * e)) / (2 * step)

        fd[i] = (4 * d(h / 2) - d(h)) / 3
    return fd


@cases
def test_model_gradients_finite_and_match_finite_differences(case):
    for settings, model, f in _model_functions(case):
        for point in _points(model, 3):
            g = f(point)[1]
            assert np.all(np.isfinite(g)), settings
            fd = _richardson_gradient(lambda p, f=f: f(p)[0], point)
            tol = case.grad_rtol * np.abs(fd) + 1e-6
            assert np.all(np.abs(g - fd) <= tol), dict(settings=settings, grad=g, fd=fd)


def _chi2_pvalue(observed_rows, support, pmf):
    """Chi-square goodness of fit of draws (rows) to a pmf on an enumerated support."""
    flat_support = support.reshape(len(support), -1)
    lookup = {row.tobytes(): i for i, row in enumerate(flat_support.astype(np.int64))}
    counts = np.zeros(len(support))
    for row in observed_rows.reshape(len(observed_rows), -1).astype(np.int64):
        counts[lookup[row.tobytes()]] += 1
    n = counts.sum()
    expected = n * pmf
    # merge cells with small expectation into one
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue


def _pmf(case, params):
    support = case.support(params)
    lp = logp_function(case, support, _f64(params))
    return support, np.exp(lp)


@cases
@pytest.mark.heavy
def test_draws_match_density(case):
    """pm.draw() samples and the NumPy mechanism against the density (and the test has power)."""
    params = case.typical
    draws = pm.draw(case.cls.dist(**params), draws=20_000, random_seed=11)
    mech = case.simulate(np.random.default_rng(5), params, 20_000)
    if case.support is not None:
        support, pmf = _pmf(case, params)
        # a pmf summed over its whole (small) support: exp of log pmfs, a few ulp each, summed in
        # order
        assert pmf.sum() == pytest.approx(1.0, abs=1e-10)
        assert _chi2_pvalue(draws, support, pmf) > 1e-3
        assert _chi2_pvalue(mech, support, pmf) > 1e-3
        if case.shifted is not None:
            _, pmf_wrong = _pmf(case, dict(params, **case.shifted))
            assert _chi2_pvalue(draws, support, pmf_wrong) < 1e-3
    else:
        assert case.draws_check is not None, "a case needs `support` or `draws_check`"

        def logp_at(p):
            """The density at parameters ``p``, as a function of the reports only."""
            return lambda value: logp_function(case, value, _f64(p))

        case.draws_check(draws, params, logp_at(params))
        case.draws_check(mech, params, logp_at(params))
        if case.shifted is not None:
            shifted = dict(params, **case.shifted)
            with pytest.raises(AssertionError):
                case.draws_check(draws, shifted, logp_at(shifted))


@cases
def test_pmf_sums_to_one_at_extremes(case):
    if case.support is None:
        pytest.skip("continuous reports: normalisation is checked by the reference density")
    seen = set()
    for _, params in case.grid():
        support = case.support(params)
        key = tuple(np.round(np.concatenate([np.ravel(v) for v in params.values()]), 14))
        if support is None or key in seen:
            continue
        seen.add(key)
        pmf = np.exp(logp_function(case, support, _f64(params)))
        # a pmf summed over its whole (small) support: exp of log pmfs, a few ulp each, summed in
        # order
        np.testing.assert_allclose(pmf.sum(), 1.0, rtol=1e-10, err_msg=str(params))


# --------------------------------------------------------------------------------------------
# PyMC integration
# --------------------------------------------------------------------------------------------


def _batch_shape(case, value):
    return value.shape[: value.ndim - case.event_ndim]


@cases
def test_broadcasting_batch_parameters(case):
    params, value = case.batch_example()
    batch = pm.logp(case.cls.dist(**params), value).eval()
    shape = _batch_shape(case, value)
    assert batch.shape == shape
    for idx in np.ndindex(shape):
        single = {}
        for name, v in params.items():
            if _is_option(v):
                single[name] = v
                continue
            arr = np.asarray(v, dtype=float)
            core = case.core_ndim[name]
            core_shape = arr.shape[arr.ndim - core :]
            single[name] = np.broadcast_to(arr, shape + core_shape)[idx]
        expected = float(logp_function(case, value[idx], single))
        # the same compiled function, batched or one report at a time: bitwise in principle, a few
        # ulp from a vectorised libm path; abs for values near 0
        assert batch[idx] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    draws = pm.draw(case.cls.dist(**params, size=shape), random_seed=1)
    assert draws.shape == value.shape


@cases
def test_support_point_and_initial_point(case):
    with pm.Model() as model:
        case.cls("z", **case.typical, size=(3,))
    sp = pm.distributions.distribution.support_point(model["z"]).eval()
    assert sp.shape[0] == 3
    logp = model.compile_logp()
    assert np.isfinite(logp({"z": sp}))
    assert np.isfinite(logp(model.initial_point()))


@cases
def test_repr_and_float64(case):
    with pm.Model() as model:
        case.cls("z", **case.typical)
    text = model["z"].str_repr()
    assert case.cls.__name__ in text
    assert "z ~" in text
    data = case.simulate(np.random.default_rng(0), case.typical, 2)
    rv = case.cls.dist(
        **{
            k: (float(v) if np.ndim(v) == 0 and not _is_option(v) else v)
            for k, v in case.typical.items()
        }
    )
    assert pm.logp(rv, data).dtype == "float64"


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


@cases
def test_bad_parameters_raise_naming_argument(case):
    data = case.simulate(np.random.default_rng(0), case.typical, 3)
    for overrides, argname in case.bad_params:
        kwargs = dict(case.typical, **overrides)
        with pytest.raises(ValueError, match=f"`{argname}`"):
            case.cls.dist(**kwargs)
        with pm.Model(), pytest.raises(ValueError, match=f"`{argname}`"):
            case.cls("z", **kwargs, observed=data)


@cases
def test_bad_observed_reports_raise(case):
    for observed, pattern in case.bad_observed:
        with pm.Model(), pytest.raises(ValueError, match=pattern):
            case.cls("z", **case.typical, observed=observed)


@cases
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_reports_are_rejected(case, bad):
    data = case.simulate(np.random.default_rng(0), case.typical, 3).astype(float)
    data.flat[1] = bad
    with pm.Model(), pytest.raises(ValueError, match="must be finite"):
        case.cls("z", **case.typical, observed=data)
    with pm.Model(), pytest.raises(ValueError, match="masked"):
        case.cls("z", **case.typical, observed=np.ma.masked_invalid(data))


# --------------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------------

BACKENDS = {"numba": "NUMBA", "c": Mode(linker="cvm", optimizer="fast_run"), "jax": "JAX"}


def _check_backends(case, settings_to_check):
    """Numba, C and JAX model logp + gradient against the TEST_MODE function, per setting."""
    for settings, model, ref_fn in _model_functions(case, mode=TEST_MODE):
        if settings not in settings_to_check:
            continue
        points = _points(model, 2, seed=3)
        ref = [(float(lp), np.asarray(g)) for lp, g in map(ref_fn, points)]
        for name, mode in BACKENDS.items():
            f = _logp_dlogp(model, mode=mode)
            for (lp, g), (lp_ref, g_ref) in zip(map(f, points), ref, strict=True):
                # another backend's libm (Numba/LLVM, C, XLA may contract FMAs): few-ulp calls
                # times the condition of a log density, 1e-10 relative is ~1e6 ulp; atol for values
                # near 0
                np.testing.assert_allclose(lp, lp_ref, rtol=1e-10, err_msg=f"{name} {settings}")
                np.testing.assert_allclose(
                    g, g_ref, rtol=1e-7, atol=1e-9 * (1 + abs(lp_ref)), err_msg=f"{name}"
                )


@cases
@pytest.mark.backend
def test_backends_agree(case):
    """Numba (PyTensor's default), C and JAX agree with the test run's Python-VM evaluation
    (``TEST_MODE``, which every reference check uses): model logp to 1e-10 and gradients to
    1e-7 relative at the first protocol setting, and Numba's logp on the whole extreme grid of
    the reference check.  The other settings: ``test_backends_agree_every_setting`` (slow)."""
    pytest.importorskip("jax")
    _check_backends(case, case.model_settings[:1])
    for value, params in case.grid():
        params = _f64(params)
        ours = logp_function(case, value, params, mode="NUMBA")
        ref = logp_function(case, value, params, mode=TEST_MODE)
        # another backend's libm (Numba/LLVM, C, XLA may contract FMAs): few-ulp calls times the
        # condition of a log density, 1e-10 relative is ~1e6 ulp; atol for values near 0
        np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12, err_msg="numba grid")


@cases
@pytest.mark.slow
def test_backends_agree_every_setting(case):
    """As test_backends_agree, at every protocol setting of the case (tiny and huge noise)."""
    pytest.importorskip("jax")
    _check_backends(case, case.model_settings[1:])


# --------------------------------------------------------------------------------------------
# Extreme but valid parameters (issue 22)
# --------------------------------------------------------------------------------------------


def _extreme_overrides(case):
    """Extreme but valid parameter values of a case: every privacy budget and sensitivity at
    1e-8 and at 1e8, a sensitivity of 1e300 (a budget at the largest valid value, 700, where the family refuses 1e8:
    the frequency oracles, whose e^epsilon must fit in float64), probabilities with exact zeros
    (a scalar p at 0 and 1; a simplex at a vertex and on an edge), and the zero probabilities
    at both budgets."""
    t = case.typical
    out = []
    budgets = [k for k in ("epsilon", "epsilon_y") if k in t]
    noise = budgets + (["sensitivity"] if budgets and "sensitivity" in case.core_ndim else [])
    for key in noise:
        out += [{key: np.float64(1e-8)}, {key: np.float64(1e8)}]
    # a Laplace scale near the top of the float64 range (1e300 with the typical budget)
    out += [{"sensitivity": np.float64(1e300)}] if "sensitivity" in noise else []
    if "p" in t:
        p = np.asarray(t["p"], dtype="float64")
        if p.ndim == 0:
            zeros = [np.float64(0.0), np.float64(1.0)]
        else:
            vertex, edge = np.zeros(p.shape[-1]), np.zeros(p.shape[-1])
            vertex[0], edge[-2:] = 1.0, 0.5
            zeros = [vertex, edge]
        for pz in zeros:
            out.append({"p": pz})
            out += [{"p": pz, key: np.float64(v)} for key in budgets for v in (1e-8, 1e8)]
    return out


def _valid_logp(case, data, overrides):
    """``(overrides, logp)`` at the overrides, a budget of 1e8 lowered to 700 if refused."""
    from pymc.logprob.utils import ParameterValueError

    try:
        return overrides, logp_function(case, data, _f64(dict(case.typical, **overrides)))
    except ParameterValueError:
        lowered = {
            k: np.float64(700.0) if np.ndim(v) == 0 and v == 1e8 else v
            for k, v in overrides.items()
        }
        if lowered == overrides:
            raise
        return lowered, logp_function(case, data, _f64(dict(case.typical, **lowered)))


@cases
def test_logp_finite_and_right_at_extreme_valid_parameters(case):
    """Issue 22: at extreme but valid parameters the log density of typical reports is finite
    (each exact value is: the reports have positive density under every such parameter set)
    and equals the case's independent reference wherever that evaluates, to
    ``max(case.rtol, 1e-6)`` (the quadrature references of the truncated families are good to
    only about 2e-7 in the normal limit, beta = sensitivity/epsilon < 1e-7 sd, where the
    convolution itself agrees with the 90-digit reference of
    ``tests/normal_laplace_reference.py`` to 1e-15:
    ``distributions/test_expfam.py::test_normal_laplace_gradient_matches_high_precision_reference``).  Was NaN for the
    truncated families at epsilon = 1e-8 with sensitivity 1e300 or at epsilon = 1e-300 (a
    variance floor 1e-300 (1 + beta^2) overflowed; ``distributions/test_expfam.py::
    test_truncated_families_finite_at_extreme_noise``) and for the multinomial counts latent
    at p = [1, 0, 0] (``distributions/test_expfam.py::test_multinomial_finite_with_zero_probabilities``;
    the multinomial has no registry case)."""
    data = case.simulate(np.random.default_rng(3), case.typical, 3)
    for overrides in _extreme_overrides(case):
        overrides, ours = _valid_logp(case, data, overrides)
        params = _f64(dict(case.typical, **overrides))
        assert np.all(np.isfinite(ours)), dict(overrides=overrides, logp=ours)
        try:
            ref = np.asarray(case.reference(data, **params), dtype="float64")
        except Exception:  # a quadrature reference may not reach the extreme; finite is checked
            continue
        if np.all(np.isfinite(ref)):
            err = np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))
            assert np.max(err) <= max(case.rtol, 1e-6), dict(
                overrides=overrides, ours=ours, ref=ref
            )


# --------------------------------------------------------------------------------------------
# pm.logp outside a model judges a report as the model does (issue 22)
# --------------------------------------------------------------------------------------------


def _discrete_targets():
    """Every discrete-valued distribution: ``(id, class, kwargs, valid, bad)`` with ``bad`` = {kind: report} for a non-integer report, a NaN report and an integer
    report outside the support.  The registry's discrete cases, and the integer-noise kinds
    of NoisyBinomial / NoisyPoisson (clamped, so that an integer can be outside)."""
    from pymc.distributions.distribution import Discrete

    import pymc_dpnoise as pmd
    from pymc_dpnoise import noise

    out = []
    for case in CASES:
        if not issubclass(case.cls, Discrete):
            continue
        valid = np.asarray(case.simulate(np.random.default_rng(0), case.typical, 1)[0], float)
        k = np.shape(case.typical["p"])[-1]
        bad = {}
        for kind, entry in (("non-integer", 0.5), ("NaN", np.nan), ("outside", 2.0)):
            report = valid.copy()
            if case.event_ndim == 0:
                report = np.float64(k if kind == "outside" else entry)
            else:
                report.flat[0] = entry
            bad[kind] = report
        out.append((case.name, case.cls, case.typical, valid, bad))
    specs = [noise.DiscreteLaplace(1.5), noise.RoundedLaplace(1.5), noise.DiscreteGaussian(1.5)]
    for spec in specs:
        kw = dict(n=10, p=0.3, noise=spec, lower=0, upper=10)
        bad = {"non-integer": 2.5, "NaN": np.nan, "outside": 11.0}
        out.append((f"NoisyBinomial-{spec.kind}", pmd.NoisyBinomial, kw, 3.0, bad))
        kw = dict(mu=3.0, noise=spec, lower=0)
        bad = {"non-integer": 2.5, "NaN": np.nan, "outside": -1.0}
        out.append((f"NoisyPoisson-{spec.kind}", pmd.NoisyPoisson, kw, 3.0, bad))
    return out


_DISCRETE = _discrete_targets()


def test_discrete_targets_cover_every_discrete_distribution():
    """The class test below runs on every discrete-valued distribution of the package."""
    from pymc.distributions.distribution import Discrete

    import pymc_dpnoise as pmd
    from pymc_dpnoise.distributions import noisy_counts

    classes = [getattr(pmd, name) for name in pmd.distributions.__all__]
    discrete = {c.rv_type for c in classes if isinstance(c, type) and issubclass(c, Discrete)}
    # one class whatever the noise: integer valued with an integer noise kind
    discrete |= {noisy_counts.NoisyBinomialRV, noisy_counts.NoisyPoissonRV}
    covered = {type(cls.dist(**kw).owner.op) for _, cls, kw, *_ in _DISCRETE}
    assert discrete, "no discrete distribution found: the discovery is broken"
    assert discrete <= covered, discrete - covered


def _cheap(target):
    """The default run checks the registry's discrete cases and the discrete-Laplace kind of
    each count family; the other integer-noise kinds (larger graphs, about 5 CPU-s each to
    compile) run under ``slow``."""
    name = target[0]
    return not name.startswith("Noisy") or name.endswith("discrete_laplace")


@pytest.mark.parametrize(
    "target",
    [pytest.param(t, id=t[0], marks=() if _cheap(t) else pytest.mark.slow) for t in _DISCRETE],
)
def test_logp_outside_a_model_judges_reports_as_the_model_does(target):
    """Issue 22: ``pm.logp(dist, value)`` with a NumPy value gives a non-integer, a NaN and
    an out-of-support report of a discrete distribution -inf, exactly as the model's own log
    density does at that report (the value of a latent variable), and a model refuses each
    of them as observed data (ValueError naming the variable: a report that cannot be one is
    a data error, not an impossible model); a valid report gets the same finite value on
    both paths.  Was (integer report dtypes): PyMC cast the NumPy value, and the model
    function its point, to the integer dtype (``as_tensor_variable(value, dtype=rv.dtype)``,
    ``allow_input_downcast``) before the distribution saw it, so 0.5 and NaN bits were
    scored as 0 (finite) on both paths while the observed path refused them, and observed
    NoisyBinomial / NoisyPoisson releases outside the clamp range were accepted (the model
    logp then -inf)."""
    name, cls, kw, valid, bad = target
    kinds = list(bad)
    batch = np.stack([np.asarray(valid, float)] + [np.asarray(bad[k], float) for k in kinds])
    with pm.Model() as model:
        cls("z", **kw, shape=batch.shape)
    model_term = model.logp(vars=[model["z"]], jacobian=False, sum=False)[0]
    value_var = model.rvs_to_values[model["z"]]
    with warnings.catch_warnings():  # NumPy's "invalid value in cast" of NaN to an integer
        warnings.simplefilter("ignore", RuntimeWarning)
        numpy_lp, model_lp = pytensor.function(  # one compiled function for both paths
            [value_var],
            [pm.logp(cls.dist(**kw), batch), model_term],
            allow_input_downcast=True,  # as PyMC's compile_fn: a point is cast to the value dtype
        )(batch)
    failures = []
    if not np.isfinite(numpy_lp[0]):
        failures.append(("valid", "pm.logp", numpy_lp[0]))
    for i, kind in enumerate(kinds, start=1):
        if numpy_lp[i] != -np.inf:
            failures.append((kind, "pm.logp(NumPy value)", numpy_lp[i]))
        with pm.Model():
            try:
                cls("z", **kw, observed=batch[[0, i]])
                failures.append((kind, "observed", "accepted"))
            except ValueError:
                pass
        if model_lp[i] != -np.inf:
            failures.append((kind, "model logp at the value", model_lp[i]))
    # one compiled function, the same op on the same values (the model's value variable vs a
    # constant): equal up to constant folding's reordering, a few ulp; 1e-14 = 45 ulp
    np.testing.assert_allclose(model_lp[0], numpy_lp[0], rtol=1e-14, err_msg=name)
    assert not failures, failures
