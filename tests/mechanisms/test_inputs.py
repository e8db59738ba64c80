"""Class check: every public function of the mechanisms modules refuses NaN / inf and survives
1e200-scale inputs (issue 39, rows 6 and 7).

One table says how to call each function with valid arguments and which of its arguments are
numbers.  Each numeric argument in turn gets NaN, +inf, -inf (a clear ValueError / TypeError
naming an argument) and a 1e200-scale value (the same value times 1e200, and 1e200 itself):
either a finite result or a ValueError / TypeError naming an argument; never a warning, a
non-finite number in the result, or another exception.  Norms must be computed without
overflow (``clip_rows`` of a row of 1e200s keeps its direction at norm R).

``mechanisms/counts.py`` is checked by its own tests (``test_counts.py``); the posterior-release
mechanisms by ``test_mechanisms.py`` / ``test_posterior_release.py``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import warnings

import numpy as np
import pytest

from pymc_dpnoise import mechanisms as m
from pymc_dpnoise.mechanisms import (
    core,
    expfam,
    expfam_normal,
    frequency,
    opendp_releases,
    regression,
    sufficient,
)

#: the modules this check walks (every public function of each must be in CALLS)
MODULES = (core, frequency, expfam, expfam_normal, regression, sufficient, opendp_releases)


def rng():
    return np.random.default_rng(3)


def _x(n=4):
    return np.linspace(0.1, 0.4, n)


def _X():
    return np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.2]])


# name -> (valid keyword arguments, the numeric ones to perturb, takes an rng)
CALLS = {
    # core
    "analytic_gaussian_sigma": (
        lambda: dict(epsilon=1.0, delta=1e-5, sensitivity=1.0),
        ("epsilon", "delta", "sensitivity"),
        False,
    ),
    "classical_gaussian_sigma": (
        lambda: dict(epsilon=0.5, delta=1e-5, sensitivity=1.0),
        ("epsilon", "delta", "sensitivity"),
        False,
    ),
    "as_matrix": (lambda: dict(name="X", X=_X()), ("X",), False),
    "clip": (lambda: dict(values=_x(), lower=-1.0, upper=1.0), ("values", "lower", "upper"), False),
    "clip_rows": (lambda: dict(X=_X(), R=1.0), ("X", "R"), False),
    "clipped_sensitivity": (lambda: dict(lower=-1.0, upper=1.0), ("lower", "upper"), False),
    "laplace_mechanism": (
        lambda: dict(values=_x(), sensitivity=1.0, epsilon=1.0),
        ("values", "sensitivity", "epsilon"),
        True,
    ),
    "gaussian_mechanism": (
        lambda: dict(values=_x(), sensitivity=1.0, epsilon=1.0, delta=1e-5),
        ("values", "sensitivity", "epsilon", "delta"),
        True,
    ),
    "perturb_clipped": (
        lambda: dict(x=_x(), lower=-1.0, upper=1.0, epsilon=1.0),
        ("x", "lower", "upper", "epsilon"),
        True,
    ),
    "perturb_clipped_exponential": (
        lambda: dict(x=_x(), upper=1.0, epsilon=1.0),
        ("x", "upper", "epsilon"),
        True,
    ),
    "randomized_response": (
        lambda: dict(bits=np.array([0, 1, 1]), epsilon=1.0),
        ("bits", "epsilon"),
        True,
    ),
    # frequency oracles
    "clip_normalize": (lambda: dict(v=np.array([0.5, -0.1, 0.6])), ("v",), False),
    "project_simplex": (lambda: dict(v=np.array([0.5, -0.1, 0.6])), ("v",), False),
    "compress_reports": (
        lambda: dict(reports=np.array([[1, 0], [0, 1], [1, 0]])),
        ("reports",),
        False,
    ),
    "krr_estimate": (
        lambda: dict(reports=np.array([0, 2, 1, 1]), k=3, epsilon=1.0),
        ("reports", "k", "epsilon"),
        False,
    ),
    "krr_perturb": (
        lambda: dict(items=np.array([0, 2, 1]), k=3, epsilon=1.0),
        ("items", "k", "epsilon"),
        True,
    ),
    "krr_probabilities": (lambda: dict(epsilon=1.0, k=3), ("epsilon", "k"), False),
    "oue_estimate": (
        lambda: dict(reports=np.array([[1, 0, 0], [0, 1, 1]]), epsilon=1.0),
        ("reports", "epsilon"),
        False,
    ),
    "oue_perturb": (
        lambda: dict(items=np.array([0, 2, 1]), k=3, epsilon=1.0),
        ("items", "k", "epsilon"),
        True,
    ),
    "oue_probabilities": (lambda: dict(epsilon=1.0), ("epsilon",), False),
    "sue_perturb": (
        lambda: dict(items=np.array([0, 2, 1]), k=3, epsilon=1.0),
        ("items", "k", "epsilon"),
        True,
    ),
    "sue_probabilities": (lambda: dict(epsilon=1.0), ("epsilon",), False),
    "unary_encoding_estimate": (
        lambda: dict(reports=np.array([[1, 0, 0], [0, 1, 1]]), keep_prob=0.6, flip_prob=0.3),
        ("reports", "keep_prob", "flip_prob"),
        False,
    ),
    "unary_encoding_perturb": (
        lambda: dict(items=np.array([0, 2, 1]), k=3, keep_prob=0.6, flip_prob=0.3),
        ("items", "k", "keep_prob", "flip_prob"),
        True,
    ),
    # truncated sums
    "release_truncated_sum": (
        lambda: dict(x=np.array([0.5, 2.0, 9.0]), lower=0.0, upper=8.0, epsilon=1.0),
        ("x", "lower", "upper", "epsilon"),
        True,
    ),
    "release_truncated_normal_sum": (
        lambda: dict(x=np.array([0.5, 2.0, 9.0]), lower=-1.0, upper=8.0, epsilon=1.0),
        ("x", "lower", "upper", "epsilon"),
        True,
    ),
    "truncated_normal_sum_sensitivity": (
        lambda: dict(lower=-1.0, upper=8.0),
        ("lower", "upper"),
        False,
    ),
    # regression
    "clip_response": (lambda: dict(y=_x(), R_y=1.0), ("y", "R_y"), False),
    "split_epsilon": (lambda: dict(epsilon=1.0, c=0.5), ("epsilon", "c"), False),
    "perturb_linreg": (
        lambda: dict(X=_X(), y=_x(3), epsilon=1.0, delta=1e-5, R=1.0, R_y=2.0, c=0.5),
        ("X", "y", "epsilon", "delta", "R", "R_y", "c"),
        True,
    ),
    "perturb_logreg": (
        lambda: dict(X=_X(), labels=np.array([0, 1, 1]), epsilon=1.0, delta=1e-5, R=1.0, c=0.5),
        ("X", "labels", "epsilon", "delta", "R", "c"),
        True,
    ),
    # sufficient statistics
    "t2": (lambda: dict(X=_X()), ("X",), False),
    "sufficient_statistics": (
        lambda: dict(X=_X(), y=np.array([1.0, -1.0, 1.0]), glm="logistic"),
        ("X", "y"),
        False,
    ),
    "linear_ss_sensitivity": (
        lambda: dict(R=1.0, Ry=1.0, sigma1=1.0, sigma2=1.0, sigma3=1.0),
        ("R", "Ry", "sigma1", "sigma2", "sigma3"),
        False,
    ),
    "logistic_ss_sensitivity": (
        lambda: dict(R=1.0, sigma1=1.0, sigma2=1.0),
        ("R", "sigma1", "sigma2"),
        False,
    ),
    "poisson_ss_sensitivity": (
        lambda: dict(R=1.0, Ry=1.0, sigma1=1.0, sigma2=1.0, sigma3=1.0, sigma4=1.0),
        ("R", "Ry", "sigma1", "sigma2", "sigma3", "sigma4"),
        False,
    ),
    "polynomial_ss_sensitivity": (lambda: dict(order=3, R=1.0), ("order", "R"), False),
    "ss_sensitivity": (lambda: dict(glm="linear", R=1.0, Ry=1.0), ("R", "Ry"), False),
    "release_sufficient_statistics": (
        lambda: dict(
            X=_X(),
            y=np.array([0.5, -0.2, 0.1]),
            glm="linear",
            epsilon=1.0,
            delta=1e-5,
            R=1.0,
            Ry=1.0,
        ),
        ("X", "y", "epsilon", "delta", "R", "Ry"),
        True,
    ),
    # OpenDP wrappers
    "release_clipped_laplace": (
        lambda: dict(x=_x(), lower=0.0, upper=1.0, epsilon=1.0),
        ("x", "lower", "upper", "epsilon"),
        False,
    ),
    "release_krr": (
        lambda: dict(items=np.array([0, 2, 1]), k=3, epsilon=1.0),
        ("items", "k", "epsilon"),
        False,
    ),
    "release_sue": (
        lambda: dict(items=np.array([0, 2, 1]), k=3, epsilon=1.0),
        ("items", "k", "epsilon"),
        False,
    ),
    "release_discrete_laplace_counts": (
        lambda: dict(counts=np.array([3, 0, 7]), epsilon=1.0, sensitivity=1.0),
        ("counts", "epsilon", "sensitivity"),
        False,
    ),
    "release_discrete_gaussian_counts": (
        lambda: dict(counts=np.array([3, 0, 7]), rho=0.5, sensitivity=1.0),
        ("counts", "rho", "sensitivity"),
        False,
    ),
}
#: public functions that take no number: they read an OpenDP measurement object (its
#: parameters were checked by OpenDP when it was built)
NO_NUMBERS = {"noise_from_measurement", "clamp_from_measurement", "model_kwargs_from_measurement"}
OPENDP = {n for n in CALLS if n in opendp_releases.__all__}


def _public_functions():
    out = {}
    for mod in MODULES:
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                out[name] = obj
    return out


def test_every_public_function_is_in_the_table():
    public = _public_functions()
    assert set(public) == set(CALLS) | NO_NUMBERS, set(public) ^ (set(CALLS) | NO_NUMBERS)
    for name, (args, numeric, _) in CALLS.items():
        params = inspect.signature(public[name]).parameters
        assert set(numeric) <= set(args()) <= set(params), name


def _replace(value, bad):
    """``value`` with its first element set to ``bad`` (same shape; a number for a number)."""
    a = np.array(value, dtype=float)
    if a.ndim == 0:
        return bad
    a.flat[0] = bad
    return a


def _scaled(value):
    """``value`` times 1e200 (zeros become 1e200), same shape and kind."""
    a = np.asarray(value, dtype=float)
    a = np.where(a == 0, 1e200, a * 1e200)
    return float(a) if np.ndim(value) == 0 else a


def _floats(out):
    """Every float array in a result (arrays, tuples, dataclasses, named tuples, dicts)."""
    if dataclasses.is_dataclass(out):
        return [a for f in dataclasses.fields(out) for a in _floats(getattr(out, f.name))]
    if isinstance(out, dict):
        return [a for v in out.values() for a in _floats(v)]
    if isinstance(out, tuple | list):
        return [a for v in out for a in _floats(v)]
    if isinstance(out, int | float | np.ndarray | np.generic) and not isinstance(out, bool):
        return [np.asarray(out, dtype=float)]
    return []


def _call(name, **over):
    fn = _public_functions()[name]
    args, _, uses_rng = CALLS[name]
    kw = args() | over
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow RuntimeWarning is a failure, not a pass
        return fn(**kw, rng=rng()) if uses_rng else fn(**kw)


def _names_an_argument(name, err):
    params = inspect.signature(_public_functions()[name]).parameters
    return any(f"`{p}`" in str(err) for p in params)


CASES = [(name, arg) for name, (_, numeric, _) in CALLS.items() for arg in numeric]


@pytest.mark.parametrize("name,arg", CASES, ids=[f"{n}-{a}" for n, a in CASES])
def test_non_finite_and_huge_inputs(name, arg):
    if name in OPENDP:
        pytest.importorskip("opendp")
    valid = CALLS[name][0]()[arg]
    assert all(np.all(np.isfinite(a)) for a in _floats(_call(name)))  # the valid call works
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises((ValueError, TypeError)) as info:
            _call(name, **{arg: _replace(valid, bad)})
        assert re.search(f"`{re.escape(arg)}`", str(info.value)), (name, arg, bad, info.value)
    for huge in (_scaled(valid), _replace(valid, 1e200)):
        try:
            out = _call(name, **{arg: huge})
        except (ValueError, TypeError) as err:
            assert _names_an_argument(name, err), (name, arg, err)
            continue
        floats = _floats(out)
        assert all(np.all(np.isfinite(a)) for a in floats), (name, arg, out)


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e200, 1e300, np.finfo(float).max])
def test_clip_rows_keeps_direction_at_any_scale(scale):
    """A row of 1e200s was clipped to [0, 0]: its norm overflowed to inf."""
    X = np.array([[1.0, 1.0], [0.75, -1.0], [0.0, 0.0], [-1.0, 0.0]]) * scale
    out = m.clip_rows(X, 1.0)
    direction = np.array([[1.0, 1.0], [0.75, -1.0], [1.0, 1.0], [-1.0, 0.0]])
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    with np.errstate(over="ignore"):  # the true norm; inf where it exceeds float64
        norms = np.hypot(X[:, 0] / scale, X[:, 1] / scale) * scale
    expected = np.where(norms[:, None] > 1.0, direction, X)
    # 4 ulps: one division by the norm and one rescaling, each correctly rounded
    np.testing.assert_allclose(out, expected, rtol=4 * np.finfo(float).eps, atol=0)
    assert np.all(np.linalg.norm(out[norms > 1.0], axis=1) <= 1.0 + 4 * np.finfo(float).eps)


def test_clip_normalize_refuses_nan():
    """clip_normalize([nan, .5, .5]) returned the uniform vector."""
    with pytest.raises(ValueError, match="`v`"):
        m.clip_normalize(np.array([np.nan, 0.5, 0.5]))
    np.testing.assert_array_equal(m.clip_normalize(np.array([1e308, 1e308, -1.0])), [0.5, 0.5, 0])


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e200, 1e300])
def test_simplex_maps_are_right_at_any_scale(scale):
    """project_simplex of a 1e200-scale vector returned [0, 1.7e200, 0] (the cumulative sums
    lost the 1 they subtract); clip_normalize's sum overflowed for entries near float max."""
    v = np.array([0.5, -0.1, 0.6, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proj = m.project_simplex(v * scale)
        norm = m.clip_normalize(v * scale)
    # far from the simplex the projection is the vertex of the largest entry; at scale 1 it
    # is v minus tau = (0.6 + 0.5 + 0.3 - 1) / 3, entries below tau at 0; near 0 it is the
    # centre of the simplex
    tau = 0.4 / 3
    expected = {1e-300: np.full(4, 0.25), 1.0: np.array([0.5 - tau, 0, 0.6 - tau, 0.3 - tau])}
    expected = expected.get(scale, np.array([0, 0, 1.0, 0]))
    np.testing.assert_allclose(proj, expected, rtol=0, atol=4 * np.finfo(float).eps)
    # clip_normalize is scale free: 4 ulps for one rescaling and one division each rounded
    np.testing.assert_allclose(norm, np.array([5, 0, 6, 3]) / 14, rtol=4 * np.finfo(float).eps)
    for out in (proj, norm):
        assert np.all(out >= 0) and abs(out.sum() - 1) <= 4 * np.finfo(float).eps
    huge = np.array([np.finfo(float).max, np.finfo(float).max, -np.finfo(float).max])
    # + - * / only (rescaling by the max, then the projection): exact here (measured 0) on any
    # IEEE machine; 1e-15 = 4.5 ulp of 1/2 for a reordering
    np.testing.assert_allclose(m.project_simplex(huge), [0.5, 0.5, 0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(m.clip_normalize(huge), [0.5, 0.5, 0], rtol=0, atol=1e-15)


def test_sensitivities_as_hypots_equal_the_lemmas():
    """The overflow-free forms equal the lemmas' formulas where those do not overflow (8 ulps:
    each side is up to a dozen correctly rounded operations on well-conditioned positive
    terms, so each side is within ~4 ulps of the exact value)."""
    rng = np.random.default_rng(0)
    for R, Ry, s1, s2, s3, s4 in np.exp(rng.uniform(-3, 3, (200, 6))):
        c1, c2 = s1**2 / s2**2, s1**2 / s3**2
        lin = np.sqrt(c1**2 * Ry**4 / 2 + 2 * R**4 + 2 * c1 * Ry**2 * R**2 + c2 * Ry**4)
        c = s1**2 / s2**2
        log = np.sqrt(1.0 / (2.0 * c) + 2 * R**2 + 2 * c * R**4)
        p2, p3, p4 = s1**2 / s2**2, s1**2 / s3**2 * Ry**2, s1**2 / s4**2 * Ry**2
        poi = (2 * (p2 + p4) * R**2 + p3 + 1) / np.sqrt(2 * (p2 + p4))
        np.testing.assert_allclose(
            [
                m.linear_ss_sensitivity(R, Ry, s1, s2, s3),
                m.logistic_ss_sensitivity(R, s1, s2),
                m.poisson_ss_sensitivity(R, Ry, s1, s2, s3, s4),
            ],
            [lin, log, poi],
            rtol=8 * np.finfo(float).eps,
        )
