"""The noise specs of real releases by Tumult Analytics and Google's DP library (python-dp).

:func:`~pymc_dpnoise.noise.from_tumult` and :func:`~pymc_dpnoise.noise.from_python_dp` are
checked against draws of the documented mechanisms, written here (python-dp's ``Count``: the
continuous Laplace noise of scale :math:`\\Delta_0\\Delta_\\infty/\\varepsilon`, rounded to the
nearest integer; Tumult's ``"GEOMETRIC"`` on integers: the double-sided geometric with
:math:`\\alpha` = ``noise_parameter``; ``"DISCRETE_GAUSSIAN"``: the discrete Gaussian with
:math:`\\sigma^2` = ``noise_parameter``; ``"LAPLACE"`` / ``"GAUSSIAN"``: the continuous noise
of float outputs): chi-square of the draws against the spec's PyTensor
pmf (one compile per spec), and a wrong reading of the parameter rejected.  When python-dp is
importable, its own ``Count`` releases are checked the same way (python-dp installs as one
wheel on Python 3.12; it is not a dependency of the package).  Tumult Analytics is not
installed: on this Python it pulls PySpark and pins NumPy below 2, so its documented pmfs
are all that is checked here.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from noise_pmfs import chisq_pvalue, window
from scipy import stats

from pymc_dpnoise import noise

P_OK = 1e-4
N = 20_000


@functools.cache
def _spec_pmf(spec):
    """The spec's pmf on its window, from its PyTensor log pmf (cached: one compile per spec)."""
    x = pt.dvector("x")
    k = window(spec.param)
    return k, np.exp(pytensor.function([x], spec.logp(x))(k.astype(float)))


def _pvalue(draws, spec):
    return chisq_pvalue(draws, *_spec_pmf(spec))


def _discrete_draws(logw, size, rng):
    """Exact draws from the pmf proportional to exp(logw(k)) on a window (inverse CDF)."""
    k = window(50.0)
    w = np.exp(logw(k.astype(float)) - logw(0.0))
    return rng.choice(k, size=size, p=w / w.sum())


@pytest.mark.parametrize(
    "epsilon, l0, linf, scale", [(1.0, 1, 1, 1.0), (2.0, 1, 1, 0.5), (0.5, 2, 3, 12.0)]
)
def test_python_dp_documented_count(epsilon, l0, linf, scale):
    spec = noise.from_python_dp(epsilon, l0, linf)
    assert spec == noise.RoundedLaplace(scale)
    rng = np.random.default_rng(int(10 * epsilon) + l0)
    draws = np.rint(rng.laplace(0.0, l0 * linf / epsilon, size=N)).astype(np.int64)
    assert _pvalue(draws, spec) > P_OK
    assert _pvalue(draws, noise.RoundedLaplace(1.2 * scale)) < P_OK
    if scale <= 1:  # the discrete Laplace of the same scale differs at small scales
        assert _pvalue(draws, noise.DiscreteLaplace(scale)) < P_OK


@pytest.mark.parametrize("epsilon", [1.0, 0.25])
def test_python_dp_count_release(epsilon):
    """A real python-dp ``Count(dtype="int")``: its noise is the spec from_python_dp gives."""
    laplacian = pytest.importorskip("pydp.algorithms.laplacian")
    n_records, draws = 10, []
    for _ in range(5_000):
        count = laplacian.Count(epsilon=epsilon, dtype="int")
        draws.append(count.quick_result([1] * n_records) - n_records)
    draws = np.asarray(draws, dtype=np.int64)
    spec = noise.from_python_dp(epsilon)
    assert _pvalue(draws, spec) > P_OK
    assert _pvalue(draws, noise.RoundedLaplace(1.2 / epsilon)) < P_OK
    if epsilon >= 1:
        assert _pvalue(draws, noise.DiscreteLaplace(1.0 / epsilon)) < P_OK


@pytest.mark.parametrize("alpha", [0.5, 2.5])
def test_tumult_laplace_documented(alpha):
    spec = noise.from_tumult("GEOMETRIC", alpha)
    assert spec == noise.DiscreteLaplace(alpha)
    assert noise.from_tumult("LAPLACE", alpha, integer=False) == noise.Laplace(alpha)
    rng = np.random.default_rng(int(10 * alpha))
    draws = _discrete_draws(lambda k: -np.abs(k) / alpha, N, rng)  # double-sided geometric
    assert _pvalue(draws, spec) > P_OK
    assert _pvalue(draws, noise.DiscreteLaplace(1.2 * alpha)) < P_OK


@pytest.mark.parametrize("variance", [0.25, 9.0])
def test_tumult_gaussian_documented(variance):
    spec = noise.from_tumult("DISCRETE_GAUSSIAN", variance)
    sigma = np.sqrt(variance)
    assert spec == noise.DiscreteGaussian(sigma)
    assert noise.from_tumult("GAUSSIAN", variance, integer=False) == noise.Gaussian(sigma)
    rng = np.random.default_rng(int(10 * variance))
    draws = _discrete_draws(lambda k: -0.5 * k**2 / variance, N, rng)
    assert _pvalue(draws, spec) > P_OK
    # the parameter is the variance: reading it as sigma is rejected
    assert _pvalue(draws, noise.DiscreteGaussian(variance)) < P_OK
    assert _pvalue(draws, noise.DiscreteGaussian(1.2 * sigma)) < P_OK


# --------------------------------------------------------------------------------------------
# Tumult: the mechanism's name decides the noise; the parameter's range and the errors
# --------------------------------------------------------------------------------------------


def test_tumult_name_decides_discrete_or_continuous():
    # Tumult 0.21: GAUSSIAN / LAPLACE are the continuous noise of float outputs
    assert noise.from_tumult("GAUSSIAN", 1.0) == noise.Gaussian(1.0)
    assert noise.from_tumult("LAPLACE", 2.0) == noise.Laplace(2.0)
    assert noise.from_tumult("discrete_gaussian", 4.0) == noise.DiscreteGaussian(2.0)
    assert noise.from_tumult("_NoiseMechanism.GEOMETRIC", 2.0) == noise.DiscreteLaplace(2.0)
    # the flag only checks the name: a contradiction is refused, never read as the other noise
    assert noise.from_tumult("GEOMETRIC", 2.0, integer=True) == noise.DiscreteLaplace(2.0)
    for mech, integer in [
        ("DISCRETE_GAUSSIAN", False),
        ("GEOMETRIC", False),
        ("GAUSSIAN", True),
        ("LAPLACE", True),
    ]:
        with pytest.raises(ValueError, match="`integer`"):
            noise.from_tumult(mech, 4.0, integer=integer)


def test_tumult_range_is_on_sigma_squared_and_names_noise_parameter():
    # sigma = 1e4 (sigma^2 = 1e8) is a spec's sigma, so Tumult's parameter for it is accepted
    assert noise.from_tumult("DISCRETE_GAUSSIAN", 1e8) == noise.DiscreteGaussian(1e4)
    assert noise.from_tumult("GAUSSIAN", 1e-6).sigma == pytest.approx(1e-3, rel=1e-12)
    for mech, value, what in [
        ("LAPLACE", -2.0, "the scale"),
        ("GEOMETRIC", 1e8, "the scale"),
        ("GAUSSIAN", 1e15, "sigma\\^2"),
        ("DISCRETE_GAUSSIAN", 1e-7, "sigma\\^2"),
    ]:
        with pytest.raises(ValueError, match=f"`noise_parameter` \\({what} for {mech}\\)"):
            noise.from_tumult(mech, value)
    with pytest.raises(ValueError, match="`noise_parameter`"):
        noise.from_tumult("LAPLACE", np.nan)
    with pytest.raises(TypeError, match="`noise_parameter`"):
        noise.from_tumult("LAPLACE", "2")


# --------------------------------------------------------------------------------------------
# Census: sigma^2 or the exact variance, by name
# --------------------------------------------------------------------------------------------


def _dg_variance(sigma):
    """The discrete Gaussian's variance by direct summation (written here, not the package's)."""
    k = np.arange(-400, 401, dtype=float)
    w = np.exp(-0.5 * (k / sigma) ** 2)
    return float((k**2 * w).sum() / w.sum())


@pytest.mark.parametrize("sigma", [0.3, 0.5, np.sqrt(0.5), 1.0, 1.5, 3.0, 30.0])
def test_census_exact_variance_solves_for_sigma(sigma):
    var = _dg_variance(sigma)
    spec = noise.from_census(exact_variance=var)
    # brentq to xtol 1e-15 on log sigma; the variance's own rounding (1e-16 relative) moves
    # sigma by about as much again: 1e-10 leaves room and still tells 0.3 from 0.3(1 + 1e-9)
    assert spec.sigma == pytest.approx(sigma, rel=1e-10)
    assert noise.from_census(sigma_sq=sigma**2) == noise.from_census(sigma**2)
    assert noise.from_census(sigma**2).sigma == pytest.approx(sigma, rel=1e-15)
    if sigma <= 0.5:  # where the two differ: a variance read as sigma^2 is 7% (0.5) to 71% off
        assert noise.from_census(var).sigma < 0.93 * sigma


def test_census_asks_for_one_named_quantity():
    for kw in [{}, {"sigma_sq": 1.0, "exact_variance": 1.0}]:
        with pytest.raises(ValueError, match="exactly one of `sigma_sq`"):
            noise.from_census(**kw)
    with pytest.raises(ValueError, match="`exact_variance`"):
        noise.from_census(exact_variance=1e-30)
    with pytest.raises(ValueError, match="`sigma_sq`"):
        noise.from_census(-1.0)
    np.testing.assert_allclose(
        # a sigma solved from its variance by a 1-d root finder to ~1e-14, then the variance's
        # series: 1e-10
        noise.from_census(exact_variance=[_dg_variance(0.5), 9.0]).sigma,
        [0.5, 3.0],
        rtol=1e-10,
    )


def test_census_rho_maps_to_sigma_with_sensitivity_sqrt2():
    """The DAS's sigma^2 = 1/rho_q is from_rho with L2 sensitivity sqrt(2) (bounded neighbours)."""
    for rho in [0.01, 0.25, 4.0]:
        spec = noise.DiscreteGaussian.from_rho(rho, sensitivity=np.sqrt(2))
        # sigma = sens / sqrt(2 rho), squared: one sqrt and a few products, a few ulp
        assert spec.sigma**2 == pytest.approx(1.0 / rho, rel=1e-12)


# --------------------------------------------------------------------------------------------
# python-dp's Gaussian mechanism: its sigma, not the analytic one
# --------------------------------------------------------------------------------------------


def _pydp_delta(eps, l2, sigma):
    """Balle & Wang (2018) Theorem 8's delta, as the Google DP library computes it."""
    cdf = stats.norm.cdf
    return cdf(l2 / (2 * sigma) - eps * sigma / l2) - np.exp(eps) * cdf(
        -l2 / (2 * sigma) - eps * sigma / l2
    )


@pytest.mark.parametrize(
    "eps, delta, l0, linf, l2",
    [
        (1.0, 1e-5, 1, 1, None),
        (0.5, 1e-8, 1, 1, None),
        (2.0, 1e-6, 4, 3, None),
        (1.0, 1e-5, 1, 1, 2.5),
    ],
)
def test_python_dp_gaussian_sigma(eps, delta, l0, linf, l2):
    """python-dp is not installed here (and may not install): the reference is its C++ search
    (google/differential-privacy cc/algorithms/internal/gaussian-stddev-calculator.cc), stated
    as properties: sigma is the upper end of a bracket [lo, sigma] with delta(lo) > target >=
    delta(sigma), sigma - lo <= 1e-3 lo, reached by doubling from the L2 sensitivity and then
    halving, so sigma = l2 * 2^j * (m / 2^r) on that dyadic grid."""
    spec = noise.from_python_dp(eps, l0, linf, mechanism="gaussian", delta=delta, l2_sensitivity=l2)
    assert type(spec) is noise.Gaussian
    l2 = np.sqrt(l0) * linf if l2 is None else l2
    sigma = spec.sigma
    analytic = noise.Gaussian.from_epsilon_delta(eps, delta, l2).sigma
    assert _pydp_delta(eps, l2, sigma) <= delta
    assert analytic <= sigma <= analytic * (1 + 1.001e-3)
    # on python-dp's dyadic grid: sigma / l2 is a multiple of 2^-30 (<= 30 halvings here)
    grid = sigma / l2 * 2.0**30
    assert grid == np.round(grid)
    # the bracket's lower end lo >= sigma / (1 + 1e-3) has delta(lo) > target: so has that point
    assert _pydp_delta(eps, l2, sigma / (1 + 1e-3)) > delta


def test_python_dp_gaussian_known_value():
    # ε = 1, δ = 1e-5, Δ2 = 1: python-dp's 3.7324 (bracket [2, 4] halved 10 times, derived by
    # hand: 3.732421875), against the analytic 3.7306; the value is exact on the dyadic grid,
    # 1e-6 relative is the bar asked of the reader
    spec = noise.from_python_dp(1.0, mechanism="gaussian", delta=1e-5)
    assert spec.sigma == pytest.approx(3.732421875, rel=1e-6)
    assert noise.Gaussian.from_epsilon_delta(1.0, 1e-5).sigma == pytest.approx(3.7306, abs=1e-4)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"mechanism": "gaussian"}, "`delta`"),
        ({"mechanism": "gaussian", "delta": 1.0}, "`delta`"),
        ({"mechanism": "gaussian", "delta": 1e-5, "l2_sensitivity": 0.0}, "`l2_sensitivity`"),
        ({"delta": 1e-5}, "`delta`"),
        ({"mechanism": "exponential"}, "`mechanism`"),
    ],
)
def test_python_dp_bad_input(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        noise.from_python_dp(1.0, **kw)


# --------------------------------------------------------------------------------------------
# OpenDP's make_geometric and make_noise, and the sensitivity of clamp-sum chains
# --------------------------------------------------------------------------------------------

N_ATOM = 4_000  # OpenDP draws of an atom measurement (one call each)


def _opendp():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    return dp


def _fitting_pvalue(draw, pvalue):
    """``(draws, p)``, from a second independent sample when the first is rejected at ``P_OK``:
    OpenDP's noise cannot be seeded, a real mismatch fails both samples (p ~ 0), a false alarm
    almost never twice (rate ``P_OK**2``), as in tests/mechanisms/test_opendp_releases.py."""
    draws = draw()
    p = pvalue(draws)
    if p <= P_OK:
        draws = draw()
        p = pvalue(draws)
    return draws, p


def _pmf_window(kind, param):
    k = window(param)
    if kind == "laplace":
        w = np.exp(-np.abs(k) / param)
    else:
        w = np.exp(-0.5 * (k / param) ** 2)
    return k, w / w.sum()


@pytest.mark.parametrize(
    "maker, measure, kind",
    [
        ("geometric", None, "laplace"),
        ("noise", "max_divergence", "laplace"),
        ("noise", "zero_concentrated_divergence", "gaussian"),
    ],
)
@pytest.mark.parametrize("vector", [False, True])
def test_opendp_geometric_and_noise_are_read(maker, measure, kind, vector):
    dp = _opendp()
    scale = 3.0
    atom = dp.atom_domain(T="i64")
    if vector:
        metric = dp.l2_distance(T="i64") if kind == "gaussian" else dp.l1_distance(T="i64")
        space = dp.vector_domain(atom), metric
    else:
        space = atom, dp.absolute_distance(T="i64")
    if maker == "geometric":
        meas = dp.m.make_geometric(*space, scale=scale)
    else:
        meas = dp.m.make_noise(*space, output_measure=getattr(dp, measure)(), scale=scale)
    spec = noise.from_opendp(meas)
    cls = noise.DiscreteGaussian if kind == "gaussian" else noise.DiscreteLaplace
    assert spec == cls(scale)

    def draw():
        if vector:
            return np.asarray(meas([5] * N), dtype=np.int64) - 5
        return np.fromiter((meas(5) for _ in range(N_ATOM)), np.int64, N_ATOM) - 5

    draws, p = _fitting_pvalue(draw, lambda d: _pvalue(d, spec))
    assert p > P_OK
    assert _pvalue(draws, cls(1.2 * scale)) < P_OK  # power: a scale 20% off is rejected


def test_opendp_float_make_noise_is_continuous():
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    meas = dp.m.make_noise(*space, output_measure=dp.zero_concentrated_divergence(), scale=2.0)
    assert noise.from_opendp(meas) == noise.Gaussian(2.0)
    draws, p = _fitting_pvalue(
        lambda: np.asarray(meas([0.0] * N)), lambda d: stats.kstest(d, stats.norm(0, 2).cdf).pvalue
    )
    assert p > P_OK
    assert stats.kstest(draws, stats.norm(0, 2.4).cdf).pvalue < P_OK


def test_opendp_geometric_bounds_censor_the_release():
    """make_geometric(bounds=(L, U)) releases count + noise censored to [L, U]: the spec is the
    discrete Laplace and clamp_from_measurement gives the censoring, checked on OpenDP's draws."""
    from pymc_dpnoise.mechanisms.opendp_releases import clamp_from_measurement

    dp = _opendp()
    space = dp.atom_domain(T="i64"), dp.absolute_distance(T="i64")
    meas = dp.m.make_geometric(*space, scale=2.0, bounds=(0, 6))
    assert noise.from_opendp(meas) == noise.DiscreteLaplace(2.0)
    assert clamp_from_measurement(meas) == {"lower": 0, "upper": 6}
    k, pmf = _pmf_window("laplace", 2.0)
    y = np.clip(k + 2, 0, 6)  # the count is 2
    censored = np.bincount(y, weights=pmf, minlength=7)
    draws, p = _fitting_pvalue(
        lambda: np.fromiter((meas(2) for _ in range(N_ATOM)), np.int64, N_ATOM),
        lambda d: chisq_pvalue(d, np.arange(7), censored),
    )
    assert p > P_OK
    inside = (k + 2 >= 0) & (k + 2 <= 6)  # power: the noise truncated to [0, 6] is rejected
    assert chisq_pvalue(draws, k[inside] + 2, pmf[inside]) < P_OK


@pytest.mark.parametrize("gaussian", [False, True])
def test_opendp_clamp_sum_chain_sensitivity(gaussian):
    """make_clamp >> then_sum >> then_laplace / then_gaussian on integers: the sum's
    sensitivity under add/remove is max(|L|, |U|) per record, read from the chain's maps
    (not assumed), and the noise on the sum is the spec."""
    from pymc_dpnoise.noise import read_opendp

    dp = _opendp()
    records = dp.vector_domain(dp.atom_domain(T="i64")), dp.symmetric_distance()
    then = dp.m.then_gaussian if gaussian else dp.m.then_laplace
    meas = records >> dp.t.then_clamp((-3, 10)) >> dp.t.then_sum() >> then(5.0)
    spec, elem, stated, d_noise = read_opendp(meas, 1)
    assert spec == (noise.DiscreteGaussian(5.0) if gaussian else noise.DiscreteLaplace(5.0))
    assert d_noise == 10.0 and elem == "i64"
    # a parameter read back (stored value or one exp/log/sqrt of it): a few ulp, 1e-12 is ~9000 ulp
    assert stated == pytest.approx(spec.rho(10.0) if gaussian else spec.epsilon(10.0), rel=1e-12)
    assert read_opendp(meas, 3)[3] == 30.0
    data = [4, -7, 12, 0, 3]  # clamped sum: 4 - 3 + 10 + 0 + 3 = 14
    draws, p = _fitting_pvalue(
        lambda: np.fromiter((meas(data) for _ in range(N_ATOM)), np.int64, N_ATOM) - 14,
        lambda d: _pvalue(d, spec),
    )
    assert p > P_OK
    assert _pvalue(draws + 2, spec) < P_OK  # power: the unclamped sum (12) is rejected
