"""Property-based checks (Hypothesis) over every public distribution and mechanism.

Every input must end in exactly one of three outcomes:

1. a correct finite value (checked against the independent references of the test-suite),
2. ``-inf`` for a value outside the support, or a parameter outside its domain inside a
   model (``ParameterValueError`` when the graph is evaluated directly: PyMC's convention),
3. an error (``ValueError`` / ``TypeError``) whose message names the argument.

Nothing else: no NaN, no silent cast, no traceback from deep inside PyTensor.

Compile cost dominates, so each distribution's logp is compiled once (symbolic parameters,
module-level cache) and Hypothesis varies only the *values* fed to it.  The default profile
runs a bounded number of derandomised examples; the ``slow`` marker runs the same properties
with many more.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from cases.frequency import krr_reference, oue_reference, sue_reference, ue_reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mechanisms.test_mechanisms import RELEASES
from pymc.logprob.utils import ParameterValueError
from references import clipped_exponential_laplace_logp_ref, clipped_normal_laplace_logp_ref

import pymc_dpnoise as pmd
from pymc_dpnoise import mechanisms as mech

settings.register_profile(
    "pmd-default",
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
settings.register_profile("pmd-slow", parent=settings.get_profile("pmd-default"), max_examples=400)

PROFILES = ["pmd-default", pytest.param("pmd-slow", marks=pytest.mark.slow)]
#: graphs compiled by this module (reported by test_compiled_graph_count)
COMPILED: dict = {}

# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
positive = st.floats(1e-3, 1e3, allow_nan=False)
epsilon = st.floats(1e-2, 1e2, allow_nan=False)
absurd = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -1.0, 1e300, -1e300, 1e-300])
#: invalid for every parameter of the frequency oracles (1e-300 is a valid probability)
invalid = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -1.0, 1e300, -1e300])
junk = st.sampled_from([None, "1.0", "abc", np.array(["a"]), np.array([1.0, None], dtype=object)])


def _float32(v):
    with np.errstate(over="ignore"):  # 1e300 -> inf on purpose: an absurd value to refuse
        return np.float32(v)


def wrap(value, how):
    """The same number as a Python float, int-like, float32, 0-d array, object array, pandas."""
    if not isinstance(value, float | int):  # junk (None, strings, object arrays) as is
        return value
    return {
        "float": lambda v: float(v),
        "f32": _float32,
        "array": lambda v: np.asarray(v, dtype=float),
        "object": lambda v: np.asarray([v], dtype=object),
        "pandas": lambda v: pd.Series([v]),
    }[how](value)


wrappers = st.sampled_from(["float", "f32", "array", "object", "pandas"])


def names_argument(err, names) -> bool:
    msg = str(err)
    return any(re.search(rf"`{n}`|\b{n}\b", msg) for n in names)


# --------------------------------------------------------------------------------------------
# Continuous scalar distributions: one compiled logp (+ gradients) per class
# --------------------------------------------------------------------------------------------

CONTINUOUS = {
    "normal": dict(
        cls=pmd.LaplacePerturbedClippedNormal,
        params=("mu", "sigma", "lower", "upper", "epsilon"),
        ref=clipped_normal_laplace_logp_ref,
    ),
    "exponential": dict(
        cls=pmd.LaplacePerturbedClippedExponential,
        params=("lam", "upper", "epsilon"),
        ref=clipped_exponential_laplace_logp_ref,
    ),
}


@functools.cache
def continuous_fn(key):
    spec = CONTINUOUS[key]
    syms = [pt.dscalar(p) for p in spec["params"]]
    value = pt.dvector("value")
    logp = pm.logp(spec["cls"].dist(*syms), value)
    grads = pt.grad(logp.sum(), syms)
    fn = pytensor.function([value, *syms], [logp, *grads])
    COMPILED[f"continuous:{key}"] = fn
    return fn


@st.composite
def normal_params(draw):
    lo = draw(st.floats(-50, 50))
    width = draw(st.floats(1e-2, 100))
    return dict(
        mu=draw(st.floats(-200, 200)),
        sigma=draw(st.floats(1e-2, 1e2)),
        lower=lo,
        upper=lo + width,
        epsilon=draw(epsilon),
    )


@st.composite
def exponential_params(draw):
    return dict(lam=draw(positive), upper=draw(st.floats(1e-2, 1e2)), epsilon=draw(epsilon))


PARAM_STRATEGIES = {"normal": normal_params(), "exponential": exponential_params()}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("key", sorted(CONTINUOUS))
def test_continuous_valid_parameters_give_the_reference_value(key, profile):
    spec = CONTINUOUS[key]
    fn = continuous_fn(key)

    @settings(settings.get_profile(profile))
    @given(params=PARAM_STRATEGIES[key], u=st.floats(-3, 3))
    def check(params, u):
        lo = params.get("lower", 0.0)
        hi = params["upper"]
        z = lo + (hi - lo) * (0.5 + u)  # reports inside, at and beyond the bounds
        logp, *grads = fn(np.array([z]), *(params[p] for p in spec["params"]))
        ref = spec["ref"](z, *(params[p] for p in spec["params"]))
        assert np.isfinite(logp[0])
        assert abs(logp[0] - ref) <= 1e-7 * max(1.0, abs(ref)), (logp[0], ref)
        assert all(np.isfinite(g) for g in grads)

    check()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("key", sorted(CONTINUOUS))
def test_continuous_absurd_values_and_parameters(key, profile):
    """NaN/inf reports give -inf; absurd parameters give -inf or ParameterValueError, never NaN."""
    spec = CONTINUOUS[key]
    fn = continuous_fn(key)
    typical = dict(mu=0.3, sigma=0.8, lower=-1.0, upper=1.0, epsilon=1.0, lam=0.7)

    @settings(settings.get_profile(profile))
    @given(
        which=st.sampled_from(spec["params"]),
        bad=absurd,
        value=st.sampled_from([np.nan, np.inf, -np.inf, 0.2, -4.0, 1e300]),
    )
    def check(which, bad, value):
        params = [typical[p] for p in spec["params"]]
        params[spec["params"].index(which)] = bad
        try:
            logp, *grads = fn(np.array([value, 0.5]), *params)
        except ParameterValueError:
            return  # parameter outside its domain: PyMC's error (-inf inside a model)
        assert not np.any(np.isnan(logp)), (which, bad, value, logp)
        if not np.isfinite(value):
            assert logp[0] == -np.inf
        if np.all(np.isfinite(logp)):
            assert all(np.all(np.isfinite(g)) for g in grads), (which, bad, grads)

    check()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("key", sorted(CONTINUOUS))
def test_continuous_constant_parameters_are_accepted_or_named(key, profile):
    """.dist() with a constant parameter of any type: valid -> built; invalid -> named error."""
    spec = CONTINUOUS[key]
    typical = dict(mu=0.3, sigma=0.8, lower=-1.0, upper=1.0, epsilon=1.0, lam=0.7)

    @settings(settings.get_profile(profile))
    @given(
        which=st.sampled_from(spec["params"]),
        raw=st.one_of(absurd, junk, st.floats(0.1, 5.0)),
        how=wrappers,
    )
    def check(which, raw, how):
        params = dict((p, typical[p]) for p in spec["params"])
        params[which] = wrap(raw, how)
        try:
            spec["cls"].dist(**params)
        except (ValueError, TypeError) as err:
            names = [which] + (["lower", "upper"] if which in ("lower", "upper") else [])
            assert names_argument(err, names), err
            return
        # accepted: then it was a valid number
        v = np.asarray(pd.Series(params[which]).to_numpy() if how == "pandas" else params[which])
        v = v.astype(float)
        assert np.all(np.isfinite(v))

    check()


# --------------------------------------------------------------------------------------------
# Frequency oracles: one compiled logp per class (k = 3, symbolic p and budget)
# --------------------------------------------------------------------------------------------

K = 3
FREQUENCY = {
    "OUE": (pmd.OUELikelihood, ("epsilon",), oue_reference),
    "SUE": (pmd.SUELikelihood, ("epsilon",), sue_reference),
    "UE": (pmd.UnaryEncodingLikelihood, ("keep_prob", "flip_prob"), ue_reference),
    "KRR": (pmd.KRRLikelihood, ("epsilon",), krr_reference),
}


@functools.cache
def frequency_fn(key):
    cls, scalars, _ = FREQUENCY[key]
    p = pt.dvector("p")
    syms = [pt.dscalar(s) for s in scalars]
    value = pt.lvector("value") if key == "KRR" else pt.lmatrix("value")
    logp = pm.logp(cls.dist(p, *syms), value)
    fn = pytensor.function([value, p, *syms], [logp, pt.grad(logp.sum(), p)])
    COMPILED[f"frequency:{key}"] = fn
    return fn


@st.composite
def simplex(draw):
    w = np.array([draw(st.floats(0.0, 1.0)) for _ in range(K)]) + 1e-9
    return w / w.sum()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("key", sorted(FREQUENCY))
def test_frequency_reports_give_the_reference_or_minus_inf(key, profile):
    _, _, ref = FREQUENCY[key]
    fn = frequency_fn(key)

    @settings(settings.get_profile(profile))
    @given(
        p=simplex(),
        eps=st.floats(1e-2, 50.0),
        keep=st.floats(1e-3, 1 - 1e-3),
        flip=st.floats(1e-3, 1 - 1e-3),
        bits=st.lists(st.integers(-1, 2), min_size=K, max_size=K),
    )
    def check(p, eps, keep, flip, bits):
        args = (keep, flip) if key == "UE" else (eps,)
        value = np.array([bits[0]]) if key == "KRR" else np.array([bits])
        valid = (0 <= bits[0] < K) if key == "KRR" else all(b in (0, 1) for b in bits)
        logp, grad = fn(value, p, *args)
        if not valid:
            assert logp[0] == -np.inf
            return
        expected = ref(value, p, *args)
        assert np.isfinite(logp[0])
        # against the independent reference of the registry (quadrature / enumeration, ~1e-12):
        # 1e-9 relative; atol for values near 0
        np.testing.assert_allclose(logp, expected, rtol=1e-9, atol=1e-12)
        assert np.all(np.isfinite(grad))

    check()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("key", sorted(FREQUENCY))
def test_frequency_constant_parameters_are_accepted_or_named(key, profile):
    cls, scalars, _ = FREQUENCY[key]
    typical = dict(p=np.array([0.2, 0.3, 0.5]), epsilon=1.0, keep_prob=0.7, flip_prob=0.2)
    names = ("p", *scalars)

    @settings(settings.get_profile(profile))
    @given(which=st.sampled_from(names), raw=st.one_of(invalid, junk), how=wrappers)
    def check(which, raw, how):
        params = {n: typical[n] for n in names}
        params[which] = wrap(raw, how) if which != "p" else raw
        with pytest.raises((ValueError, TypeError)) as info:
            cls.dist(**params)
        assert names_argument(info.value, [which]), info.value

    check()


# --------------------------------------------------------------------------------------------
# Mechanisms: random privacy parameters of every type and shape
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", sorted(RELEASES))
def test_mechanism_outcome_is_a_finite_release_or_a_named_error(name, profile):
    fn = getattr(mech, name)
    contract = fn.__release_guard__

    @settings(settings.get_profile(profile))
    @given(
        n=st.integers(1, 4),
        which=st.sampled_from(sorted(contract["privacy"])),
        raw=st.one_of(absurd, junk, st.floats(1e-6, 1e6), st.floats(-1.0, 2.0)),
        how=wrappers,
        shape=st.sampled_from([(), (1,), (3,), (50,), (50, 1)]),
    )
    def check(n, which, raw, how, shape):
        args = RELEASES[name](n)
        value = wrap(raw, how)
        if shape and isinstance(raw, float) and how != "pandas":
            value = np.full(shape, raw, dtype=object if how == "object" else float)
        args[which] = value
        try:
            out = fn(**args, rng=np.random.default_rng(0))
        except (ValueError, TypeError) as err:
            assert names_argument(err, [which, *contract["per_record"]]) or "non-finite" in str(
                err
            ), err
            return
        released = out.reports if hasattr(out, "reports") else getattr(out, "z", out)
        assert np.all(np.isfinite(released))
        if contract["records"] is not None:
            assert np.shape(released)[0] == n

    check()


def test_compiled_graph_count():
    """The suite's compile budget: one graph per distribution family and pattern."""
    assert len(COMPILED) <= len(CONTINUOUS) + len(FREQUENCY), sorted(COMPILED)
