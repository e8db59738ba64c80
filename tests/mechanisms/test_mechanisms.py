"""Release-side mechanisms: distributions of the noise, calibration of σ, bad input."""

import numpy as np
import pytest
from scipy import optimize, stats

from pymc_dpnoise import mechanisms as m
from pymc_dpnoise.mechanisms import opendp_releases


def rng(seed=0):
    return np.random.default_rng(seed)


def test_clip_and_sensitivity():
    np.testing.assert_array_equal(m.clip([-3.0, 0.5, 9.0], -1.0, 1.0), [-1.0, 0.5, 1.0])
    assert m.clipped_sensitivity(-5.0, 5.0) == 10.0
    with pytest.raises(ValueError, match="`lower` must be < `upper`"):
        m.clip([0.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="`values` must be finite"):
        m.clip([np.nan], 0.0, 1.0)


def test_laplace_mechanism_noise_distribution():
    z = m.laplace_mechanism(np.zeros(50_000), 2.0, 0.5, rng(1))
    assert stats.kstest(z, stats.laplace(scale=4.0).cdf).pvalue > 1e-3
    assert stats.kstest(z, stats.laplace(scale=4.4).cdf).pvalue < 1e-3  # the test has power


def test_per_record_epsilon_broadcasts():
    eps = np.where(np.arange(40_000) % 2 == 0, 0.5, 5.0)
    z = m.laplace_mechanism(np.zeros(40_000), 1.0, eps, rng(2))
    assert stats.kstest(z[::2], stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    assert stats.kstest(z[1::2], stats.laplace(scale=0.2).cdf).pvalue > 1e-3


def test_perturb_clipped_is_clip_then_laplace():
    x = rng(3).normal(0, 3, 60_000)
    z = m.perturb_clipped(x, -1.0, 1.0, 2.0, rng(4))
    # residual against the clipped value is Laplace(0, (b - a)/eps) = Laplace(0, 1)
    resid = z - np.clip(x, -1.0, 1.0)
    assert stats.kstest(resid, stats.laplace(scale=1.0).cdf).pvalue > 1e-3


def test_perturb_clipped_exponential():
    x = rng(5).exponential(2.0, 60_000)
    z = m.perturb_clipped_exponential(x, 3.0, 1.5, rng(6))
    resid = z - np.minimum(x, 3.0)
    assert stats.kstest(resid, stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    with pytest.raises(ValueError, match="`upper`"):
        m.perturb_clipped_exponential(x, -1.0, 1.0, rng())


def test_randomized_response_keep_probability():
    bits = np.tile([0, 1], 50_000)
    out = m.randomized_response(bits, 1.0, rng(7))
    keep = np.mean(out == bits)
    p = np.exp(1) / (1 + np.exp(1))
    assert abs(keep - p) < 4 * np.sqrt(p * (1 - p) / bits.size)
    assert set(np.unique(out)) == {0, 1}
    with pytest.raises(ValueError, match="`bits`"):
        m.randomized_response([0, 2], 1.0, rng())
    with pytest.raises(ValueError, match="`epsilon`"):
        m.randomized_response([0, 1], 0.0, rng())


def _delta_prob_space(sigma, eps, sens):
    """delta(sigma) of Balle & Wang Thm. 8 in plain probability space (valid for moderate eps)."""
    a = sens / (2 * sigma) - eps * sigma / sens
    b = -sens / (2 * sigma) - eps * sigma / sens
    return stats.norm.cdf(a) - np.exp(eps) * stats.norm.cdf(b)


@pytest.mark.parametrize(
    "eps,delta,sens",
    [(1.0, 1e-5, 1.0), (0.1, 1e-5, 1.0), (0.5, 1e-3, 2.0), (3.0, 1e-8, 0.5), (0.01, 0.1, 1.0)],
)
def test_analytic_gaussian_agrees_with_independent_bisection(eps, delta, sens):
    """An independent root-finder (brentq, probability space) gives the same sigma."""
    ref = optimize.brentq(
        lambda s: _delta_prob_space(s, eps, sens) - delta,
        1e-3 * sens,
        1e4 * sens,
        # brentq's own stopping tolerance in sigma (>= 1e-3): not a comparison; the comparison
        # below is 1e-9 relative
        xtol=1e-14,
    )
    # two root finders (ours in log space, brentq in probability space) on the same monotone
    # function, each to ~1e-12: 1e-9 relative
    assert m.analytic_gaussian_sigma(eps, delta, sens) == pytest.approx(ref, rel=1e-9)


def test_analytic_gaussian_check_values():
    assert m.analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.7306, abs=1e-4)
    assert m.analytic_gaussian_sigma(0.1, 1e-5) == pytest.approx(30.75, abs=0.01)
    # smaller than the classical bound where that applies
    assert m.analytic_gaussian_sigma(0.5, 1e-5) < m.classical_gaussian_sigma(0.5, 1e-5)


@pytest.mark.parametrize("eps", [0.0, 1e-3, 1.0, 10.0, 100.0, 1000.0])
@pytest.mark.parametrize("delta", [0.5, 1e-5, 1e-12, 1e-100, 1e-300])
def test_analytic_gaussian_extremes_are_tight(eps, delta):
    """For every (eps, delta): finite, meets the condition, and a slightly smaller sigma fails."""
    sigma = m.analytic_gaussian_sigma(eps, delta)
    assert np.isfinite(sigma) and sigma > 0
    log_d = m.core._log_delta(sigma, eps, 1.0)
    assert log_d <= np.log(delta) + 1e-9
    assert m.core._log_delta(sigma * (1 - 1e-8), eps, 1.0) > np.log(delta) - 1e-6


def test_analytic_gaussian_monotone_and_vectorised():
    eps = np.array([0.1, 0.5, 1.0, 4.0, 50.0])
    sig = m.analytic_gaussian_sigma(eps, 1e-6)
    assert sig.shape == (5,)
    assert np.all(np.diff(sig) < 0)
    sig_d = m.analytic_gaussian_sigma(1.0, np.array([1e-2, 1e-6, 1e-20]))
    assert np.all(np.diff(sig_d) > 0)
    np.testing.assert_allclose(m.analytic_gaussian_sigma(1.0, 1e-5, 3.0), 3 * 3.7306, rtol=1e-4)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(epsilon=-1.0, delta=1e-5), "epsilon"),
        (dict(epsilon=np.nan, delta=1e-5), "epsilon"),
        (dict(epsilon=1.0, delta=0.0), "delta"),
        (dict(epsilon=1.0, delta=1.0), "delta"),
        (dict(epsilon=1.0, delta=1e-5, sensitivity=0.0), "sensitivity"),
    ],
)
def test_analytic_gaussian_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        m.analytic_gaussian_sigma(**kwargs)


def test_gaussian_mechanism_scale():
    z = m.gaussian_mechanism(np.zeros(50_000), 1.0, 1.0, 1e-5, rng(8))
    assert stats.kstest(z, stats.norm(scale=m.analytic_gaussian_sigma(1.0, 1e-5)).cdf).pvalue > 1e-3


@pytest.mark.parametrize(
    "call",
    [
        lambda: m.laplace_mechanism([0.0], 1.0, 0.0, rng()),
        lambda: m.laplace_mechanism([0.0], -1.0, 1.0, rng()),
        lambda: m.laplace_mechanism([0.0], 1.0, [1.0, 2.0, 3.0], rng()),
        lambda: m.laplace_mechanism(np.zeros(2), 1.0, np.ones(3), rng()),
        lambda: m.perturb_clipped([0.0], 2.0, 1.0, 1.0, rng()),
    ],
)
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="`rng`"):
        m.laplace_mechanism([0.0], 1.0, 1.0, 42)


# --------------------------------------------------------------------------------------------
# The release contract, checked generically over every public mechanism (issue 17)
# --------------------------------------------------------------------------------------------

# How to call each release function with n records (valid parameters).  A new public
# mechanism must be added here (or to NOT_RELEASES): test_every_public_function_is_classified.
RELEASES = {
    "laplace_mechanism": lambda n: dict(values=np.full(n, 0.3), sensitivity=1.0, epsilon=1.0),
    "gaussian_mechanism": lambda n: dict(
        values=np.full(n, 0.3), sensitivity=1.0, epsilon=1.0, delta=1e-5
    ),
    "perturb_clipped": lambda n: dict(x=np.full(n, 0.3), lower=-1.0, upper=1.0, epsilon=1.0),
    "perturb_clipped_exponential": lambda n: dict(x=np.full(n, 0.3), upper=1.0, epsilon=1.0),
    "randomized_response": lambda n: dict(bits=np.ones(n, int), epsilon=1.0),
    "unary_encoding_perturb": lambda n: dict(
        items=np.ones(n, int), k=3, keep_prob=0.8, flip_prob=0.3
    ),
    "oue_perturb": lambda n: dict(items=np.ones(n, int), k=3, epsilon=1.0),
    "sue_perturb": lambda n: dict(items=np.ones(n, int), k=3, epsilon=1.0),
    "krr_perturb": lambda n: dict(items=np.ones(n, int), k=3, epsilon=1.0),
    "perturb_linreg": lambda n: dict(
        X=np.full((n, 2), 0.2), y=np.full(n, 0.5), epsilon=1.0, delta=1e-5
    ),
    "perturb_logreg": lambda n: dict(
        X=np.full((n, 2), 0.2), labels=np.ones(n, int), epsilon=1.0, delta=1e-5
    ),
    "release_sufficient_statistics": lambda n: dict(
        X=np.full((n, 2), 0.2), y=np.ones(n), glm="logistic", epsilon=1.0, delta=1e-5
    ),
}
# Central-DP releases of one statistic of the whole data set (noisy counts, posterior
# releases): "one release per record" does not apply to them.  Their noise scales are tested
# in test_counts.py / test_posterior_release.py; here every one must refuse a bad epsilon
# before releasing anything (test_aggregate_release_refuses_bad_epsilon).
_NB = {0: (), 1: (0,), 2: (0,)}  # naive Bayes: column 0 is the class
AGGREGATE_RELEASES = {
    "release_binomial_count": lambda: dict(x=np.array([0, 1, 1])),
    "release_poisson_count": lambda: dict(x=np.array([0, 2, 5]), upper=5.0),
    "release_multinomial_counts": lambda: dict(labels=np.array([0, 2, 1]), k=3),
    "release_truncated_sum": lambda: dict(x=np.array([0.5, 2.0, 9.0]), lower=0.0, upper=8.0),
    "release_truncated_normal_sum": lambda: dict(
        x=np.array([0.5, 2.0, 9.0]), lower=-1.0, upper=8.0
    ),
    "laplace_posterior_updates": lambda: dict(data=np.eye(3, dtype=int), parents=_NB),
    "fourier_posterior_updates": lambda: dict(data=np.eye(3, dtype=int), parents=_NB, t=1.0),
    "posterior_sample": lambda: dict(data=np.eye(3, dtype=int), parents=_NB),
    "posterior_sample_linreg": lambda: dict(
        data=(np.full((4, 2), 0.1), np.full(4, 0.2)), model=m.LinRegModel()
    ),
    "exponential_map": lambda: dict(
        data=np.eye(3, dtype=int),
        parents=_NB,
        candidates=[
            [np.array([[0.5, 0.5]]), np.array([[0.5, 0.5], [0.5, 0.5]]),
             np.array([[0.5, 0.5], [0.5, 0.5]])]
        ],
    ),
}  # fmt: skip
# Public functions that release nothing (clipping, calibration, estimators, sensitivities,
# release records and privacy bookkeeping).
NOT_RELEASES = {
    "Budget", "CountRelease", "LinRegModel", "Release", "TruncatedSumRelease", "fourier_closure",
    "TruncatedNormalSumRelease", "truncated_normal_sum_sensitivity",
    "linreg_sampling_epsilon", "posterior_sampling_epsilon", "total_spent",
    "PerturbedRelease", "SSRelease", "analytic_gaussian_sigma", "as_matrix",
    "classical_gaussian_sigma", "clip", "clip_normalize", "clip_response", "clip_rows",
    "clipped_sensitivity", "compress_reports", "krr_estimate", "krr_probabilities",
    "linear_ss_sensitivity", "logistic_ss_sensitivity", "oue_estimate", "oue_probabilities",
    "poisson_ss_sensitivity", "polynomial_ss_sensitivity", "project_simplex", "split_epsilon",
    "ss_sensitivity", "sue_probabilities", "sufficient_statistics", "t2",
    "unary_encoding_estimate",
}  # fmt: skip

BAD_VALUES = {
    "epsilon": [0.0, -1.0, np.nan, np.inf, -np.inf, None, "1.0", True],
    "positive": [0.0, -1.0, np.nan, np.inf, None, "1.0"],
    "delta": [0.0, 1.0, 1.5, -1e-5, np.nan, np.inf, None, "1e-5"],
    "probability": [0.0, 1.0, 1.5, -0.2, np.nan, None],
    "finite": [np.nan, np.inf, -np.inf, None, "0"],
}


def _release(name, n, **overrides):
    fn = getattr(m, name)
    return fn(**(RELEASES[name](n) | overrides), rng=rng(11))


def _released(out):
    return out.reports if hasattr(out, "reports") else out.z if hasattr(out, "z") else out


def test_every_public_function_is_classified():
    public = set(m.__all__)
    assert not (set(RELEASES) & NOT_RELEASES)
    assert not (set(AGGREGATE_RELEASES) & (NOT_RELEASES | set(RELEASES)))
    known = set(RELEASES) | NOT_RELEASES | set(AGGREGATE_RELEASES)
    assert public == known, public ^ known
    for name in set(RELEASES) | set(AGGREGATE_RELEASES):  # declared on the function itself
        assert hasattr(getattr(m, name), "__release_guard__"), name
    for name in OPENDP_RELEASES:  # issue 22: the OpenDP wrappers go through the same guard
        assert hasattr(getattr(opendp_releases, name), "__release_guard__"), name
    for name in NOT_RELEASES:
        assert not hasattr(getattr(m, name), "__release_guard__"), name


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_release_is_one_finite_report_per_record(name):
    for n in (1, 7):
        out = _released(_release(name, n))
        contract = getattr(m, name).__release_guard__
        assert np.all(np.isfinite(out))
        if contract["records"] is not None:
            assert out.shape[0] == n


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_every_privacy_parameter_is_validated(name):
    contract = getattr(m, name).__release_guard__
    assert contract["privacy"], "a release function declares its privacy parameters"
    for param, kind in contract["privacy"].items():
        for bad in BAD_VALUES[kind]:
            with pytest.raises((ValueError, TypeError), match=f"`{param}`"):
                _release(name, 3, **{param: bad})


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_per_record_parameters_never_enlarge_the_records(name):
    """One record and a longer parameter vector would release that record many times."""
    contract = getattr(m, name).__release_guard__
    args = RELEASES[name](1)
    per_record = contract["per_record"]
    if contract["records"] is not None:
        assert set(contract["privacy"]) - {"delta", "R", "R_y", "Ry", "c"} <= set(per_record) | {
            "epsilon"
        }
    for param in per_record:
        value = np.asarray(args[param])
        longer = np.repeat(value.reshape((1,) * max(value.ndim, 1))[..., :1], 50, axis=0)
        for bad in (longer, longer.reshape(50, 1)):
            with pytest.raises(ValueError, match=f"`{param}`"):
                _release(name, 1, **{param: bad})


def test_issue17_bounds_longer_than_records_are_refused():
    """The reported leak: 200 000 bounds for one record released it 200 000 times."""
    with pytest.raises(ValueError, match="`lower`"):
        m.perturb_clipped(np.array([0.3]), np.full(20_000, -1.0), np.full(20_000, 1.0), 1.0, rng())
    with pytest.raises(ValueError, match="`upper`"):
        m.perturb_clipped_exponential(np.array([0.3]), np.full(20, 1.0), 1.0, rng())
    with pytest.raises(ValueError, match="`keep_prob`"):
        m.unary_encoding_perturb(np.array([1]), 3, np.full((99, 1), 0.8), 0.3, rng())


def test_issue17_delta_outside_unit_interval_is_refused():
    for delta in (1.0, 1.5, 1.99):
        with pytest.raises(ValueError, match="`delta`"):
            m.perturb_linreg(np.zeros((3, 2)), np.zeros(3), 1.0, delta, rng())
    for kwargs, arg in [
        (dict(delta=1.5), "delta"),
        (dict(delta=0.0), "delta"),
        (dict(delta=1e-5, sensitivity=-1.0), "sensitivity"),
        (dict(delta=1e-5, sensitivity=np.nan), "sensitivity"),
    ]:
        with pytest.raises(ValueError, match=f"`{arg}`"):
            m.classical_gaussian_sigma(0.5, **kwargs)
    assert np.isfinite(m.classical_gaussian_sigma(0.5, 1e-5, 2.0))


@pytest.mark.parametrize(
    "sens,eps", [(1.0, 1e-320), (1e308, 1.0), (1e308, 0.1), (np.finfo(float).max, 1e-3)]
)
def test_issue17_non_finite_release_is_an_error(sens, eps):
    with pytest.raises(ValueError, match=r"non-finite|overflows"):
        m.laplace_mechanism(np.zeros(100), sens, eps, rng())


def test_release_guard_refuses_a_non_finite_output():
    @m.core.release_guard(records="v", privacy={"epsilon": "epsilon"})
    def leaky(v, epsilon):
        with np.errstate(divide="ignore"):
            return np.asarray(v, float) / 0.0

    with pytest.raises(ValueError, match="non-finite"):
        leaky(np.ones(2), 1.0)


@pytest.mark.parametrize("name", sorted(AGGREGATE_RELEASES))
def test_aggregate_release_refuses_bad_epsilon(name):
    fn = getattr(m, name)
    fn(**AGGREGATE_RELEASES[name](), epsilon=1.0, rng=rng(3))  # valid call works
    for bad in (0.0, -1.0, np.nan, np.inf, None, "1.0"):
        with pytest.raises((ValueError, TypeError), match="epsilon"):
            fn(**AGGREGATE_RELEASES[name](), epsilon=bad, rng=rng(3))


# --------------------------------------------------------------------------------------------
# Issue 22: every release function -- record-level, aggregate and OpenDP -- through one guard
# --------------------------------------------------------------------------------------------

OPENDP_RELEASES = {
    "release_clipped_laplace": lambda: dict(x=np.array([0.1, 0.5]), lower=0.0, upper=1.0),
    "release_krr": lambda: dict(items=np.array([0, 2, 1]), k=3),
    "release_sue": lambda: dict(items=np.array([0, 2, 1]), k=3),
}
# extreme values that are not valid privacy parameters in float64, by kind (on top of
# BAD_VALUES): a subnormal or underflowing epsilon makes the noise scale infinite, a huge
# one makes a trimming level or keep probability round to 0 or 1
EXTREME_VALUES = {
    "epsilon": [1e-310, 5e-324, 1e-200, 1e308, np.finfo(float).max, True, np.array([1.0, 2.0])],
    "positive": [1e-310, 1e308, np.finfo(float).max, True],
    "finite": [1e308, -1e308, True],
}


def _all_releases():
    cases = []
    for name in sorted(RELEASES):
        cases.append((name, getattr(m, name), lambda name=name: RELEASES[name](3), True))
    for name in sorted(AGGREGATE_RELEASES):
        args = lambda name=name: AGGREGATE_RELEASES[name]() | {"epsilon": 1.0}  # noqa: E731
        cases.append((name, getattr(m, name), args, True))
    for name in sorted(OPENDP_RELEASES):
        args = lambda name=name: OPENDP_RELEASES[name]() | {"epsilon": 1.0}  # noqa: E731
        cases.append((name, getattr(opendp_releases, name), args, False))
    for name in sorted(OPENDP_COUNT_RELEASES):  # complete arguments (rho, not epsilon)
        cases.append((name, getattr(opendp_releases, name), OPENDP_COUNT_RELEASES[name], False))
    return cases


#: the central OpenDP count releases (found missing from the table by
#: test_issue22_release_table_covers_every_public_release_function)
OPENDP_COUNT_RELEASES = {
    "release_discrete_laplace_counts": lambda: dict(counts=np.array([3, 0, 7]), epsilon=1.0),
    "release_discrete_gaussian_counts": lambda: dict(counts=np.array([3, 0, 7]), rho=0.5),
}


def _arrays(released):
    if isinstance(released, dict) or (
        hasattr(released, "values") and not callable(released.values)
    ):
        values = released.values if not isinstance(released, dict) else released
        if isinstance(values, dict) or hasattr(values, "items"):
            return [np.asarray(v, float) for v in dict(values).values()]
        return [np.asarray(values, float)]
    for attr in ("value", "reports", "z"):
        if hasattr(released, attr):
            return [np.asarray(getattr(released, attr), float)]
    return [np.asarray(released, float)]


@pytest.mark.parametrize(
    "name,fn,args,uses_rng", _all_releases(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_issue22_every_release_refuses_invalid_privacy_parameters(name, fn, args, uses_rng):
    """Every public release function (the OpenDP wrappers included) refuses NaN, inf, booleans
    and extreme-but-invalid privacy parameters with a ValueError/TypeError naming the argument,
    and whatever it does return is finite."""
    pytest.importorskip("opendp") if not uses_rng else None
    contract = fn.__release_guard__

    def call(**over):
        kw = args() | over
        return fn(**kw, rng=rng(5)) if uses_rng else fn(**kw)

    assert all(np.all(np.isfinite(a)) for a in _arrays(call()))  # the valid call works
    for param, kind in contract["privacy"].items():
        for bad in BAD_VALUES[kind] + EXTREME_VALUES.get(kind, []):
            try:
                out = call(**{param: bad})
            except (ValueError, TypeError) as err:
                named = [param, *contract["privacy"]]
                assert any(f"`{p}`" in str(err) for p in named), (param, bad, err)
                continue
            # extreme but valid (e.g. epsilon = 1e308 for a clamped release): finite output
            assert not isinstance(bad, bool | float) or np.isfinite(bad), (param, bad)
            assert all(np.all(np.isfinite(a)) for a in _arrays(out)), (name, param, bad)


def test_issue22_count_releases_refuse_overflow_before_looking_at_the_data():
    """release_binomial_count(x, 1e-310) was -inf; release_poisson_count on records near 1e308
    returned inf only for some data (a data-dependent overflow)."""
    with pytest.raises(ValueError, match="`epsilon`"):
        m.release_binomial_count(np.array([0, 1, 1]), 1e-310, rng())
    for x in (np.zeros(3), np.full(3, 1e308)):  # refused for small and large records alike
        with pytest.raises(ValueError, match="`upper`"):
            m.release_poisson_count(x, 1e308, 1.0, rng())
    assert np.isfinite(m.release_poisson_count(np.full(3, 4.0), 1e300, 1.0, rng()).value)


def test_issue22_posterior_releases_refuse_extreme_t_and_epsilon():
    x = np.eye(3, dtype=int)
    with pytest.raises(ValueError, match="`epsilon`"):
        m.laplace_posterior_updates(x, _NB, 1e-310, rng())
    for eps, t, shift in [(1.0, 1e308, "paper"), (1e-310, 1.0, "paper"), (1.0, 1e308, "union")]:
        with pytest.raises(ValueError, match=r"`t`|`epsilon`"):
            m.fourier_posterior_updates(x, _NB, eps, rng(), t=t, shift=shift)
    for t in (1e-320, 40.0, 800.0):  # the union shift was a "math domain error" here
        rel = m.fourier_posterior_updates(x, _NB, 1.0, rng(), t=t, shift="union")
        assert np.isfinite(rel.metadata["shift"]) and rel.metadata["shift"] >= 0
        assert all(np.all(np.isfinite(v)) for v in rel.values.values())
    for eps in (1e-20, 1e4):  # trimming level rounds to 1/2 or underflows to 0
        with pytest.raises(ValueError, match="`epsilon`"):
            m.posterior_sample(x, _NB, eps, rng())
    with pytest.raises(ValueError, match="`epsilon`"):  # was a RuntimeError after 2e6 proposals
        m.posterior_sample_linreg(
            (np.full((4, 2), 0.1), np.full(4, 0.2)), m.LinRegModel(), 1e-310, rng()
        )


@pytest.mark.parametrize("fn", ["release_krr", "release_sue"])
def test_issue22_opendp_randomized_response_at_extreme_epsilon(fn):
    """release_krr raised a 'bug' RuntimeError at eps <= 1e-9 or >= 35, release_sue an
    OverflowError above ~1420, and epsilon=True was taken as 1."""
    pytest.importorskip("opendp")
    release = getattr(opendp_releases, fn)
    items = np.array([0, 2, 1])
    for eps in (1e-12, 1e-9, 1.0, 30.0, 35.0):
        rel = release(items, 3, eps)
        assert rel.epsilon <= eps * (1 + 1e-9) and rel.epsilon >= 0.99 * eps
        assert rel.model_kwargs["epsilon"] <= eps * (1 + 1e-9)
    for eps in (1e-320, 1e308, 2000.0):
        with pytest.raises(ValueError, match="`epsilon`"):
            release(items, 3, eps)
    with pytest.raises(TypeError, match="`epsilon`"):
        release(items, 3, True)


@pytest.mark.parametrize("bad", [2.5, np.nan, 1e308, "a", True])
def test_issue22_posterior_release_names_a_bad_cardinality(bad):
    """Was "'float' object is not iterable" or int()'s own message."""
    with pytest.raises((ValueError, TypeError), match="`cardinality`"):
        m.laplace_posterior_updates(np.eye(3, dtype=int), _NB, 1.0, rng(), cardinality=bad)


def test_issue22_building_blocks_named_in_messages_are_importable():
    """Error messages point to these names: they must import from the package (and from
    pymc_dpnoise.distributions), not only from private module paths."""
    import pymc_dpnoise as pmd
    from pymc_dpnoise import distributions as dists

    for name in [
        "LaplaceNoisyTruncatedNormalGivenSum",
        "LaplaceNoisyMultinomialGivenNoiseVar",
        "LaplaceNoisyMultinomialGivenCounts",
        "truncated_sum_sensitivity",
    ]:
        assert getattr(pmd, name) is getattr(dists, name), name
        assert name in pmd.__all__ and name in dir(pmd)


def test_issue22_release_table_covers_every_public_release_function():
    """Class check for the table above: every function of ``mechanisms.__all__`` that takes
    an ``rng`` (found with inspect.signature), and every public ``release_*`` OpenDP wrapper,
    is in :func:`_all_releases` and has a release guard that checks each privacy parameter of
    its signature, so a new release function cannot skip the refusals tested there."""
    import inspect

    covered = {c[0] for c in _all_releases()}
    functions = [
        (n, getattr(m, n))
        for n in m.__all__
        if inspect.isfunction(getattr(m, n))
        and "rng" in inspect.signature(getattr(m, n)).parameters
    ]
    functions += [
        (n, f)
        for n, f in vars(opendp_releases).items()
        if n.startswith("release_") and getattr(f, "__module__", "") == opendp_releases.__name__
    ]
    assert len(functions) > 20
    privacy_names = {"epsilon", "delta", "rho", "keep_prob", "flip_prob", "t"}
    for name, fn in functions:
        assert name in covered, f"{name} is not in the issue-22 release table"
        contract = fn.__release_guard__
        params = set(inspect.signature(fn).parameters)
        missing = (params & privacy_names) - set(contract["privacy"])
        assert not missing, (name, missing)


@pytest.mark.parametrize(
    "call,param",
    [
        (lambda v: m.fourier_posterior_updates(np.eye(3, dtype=int), _NB, 1.0, rng(), t=v), "t"),
        (lambda v: m.fourier_posterior_updates(
            np.eye(3, dtype=int), _NB, 1.0, rng(), t=1.0, max_tries=v), "max_tries"),
        (lambda v: m.posterior_sample(np.eye(3, dtype=int), _NB, 100.0, rng(), trim=v), "trim"),
        (lambda v: m.posterior_sample(np.eye(3, dtype=int), _NB, 1.0, rng(), size=v), "size"),
        (lambda v: m.posterior_sampling_epsilon(_NB, 0.1, size=v), "size"),
        (lambda v: m.posterior_sampling_epsilon(_NB, v), "trim"),
        (lambda v: m.laplace_posterior_updates(
            np.eye(3, dtype=int), _NB, 1.0, rng(), cardinality=v), "cardinality"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, True, -1, 0, "1", None])
def test_issue22_posterior_numeric_parameters_refused_naming_them(call, param, bad):
    """The non-privacy numeric parameters of the posterior mechanisms (t, trim, size,
    max_tries, cardinality): NaN, inf, bools, out-of-range values and strings are a
    ValueError/TypeError naming the parameter (was "math domain error", OverflowError,
    "'float' object is not iterable")."""
    if param == "max_tries" and bad is None:
        pytest.skip("max_tries=None means no limit")
    if param in ("cardinality", "trim") and bad is None:
        pytest.skip(f"{param}=None means: the default")
    with pytest.raises((ValueError, TypeError), match=f"`{param}`"):
        call(bad)
