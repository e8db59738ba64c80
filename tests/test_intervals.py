"""``pymc_dpnoise.intervals`` against independent references written here.

Counts: the posterior is enumerated by brute force on a window twice as wide as the
function's (and at least 60 noise scales each side), from scipy's own log pmfs / CDFs of the
noise's definitions (scipy's ``norm`` for the Gaussian; the Laplace tails written out, as
scipy's underflow far out), the integer kinds' CDFs as plain cumulative sums of their pmfs,
and the equal-tailed interval, median, mean and mass are read off it by their definitions.
Sums with continuous noise: ``scipy.integrate.quad`` of the posterior density and
``brentq`` on its CDF.  Grids reach tiny (1e-3) and large (500) noise, releases far below 0,
at and far from the clamp bounds, and per-release noise.  No PyTensor compile: fast.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from pymc_dpnoise import noise
from pymc_dpnoise.intervals import count_intervals, mean_intervals, noise_radius, sum_intervals

LEVELS = (0.5, 0.95)


def _laplace_log_tail(x, b):
    """``log P(L > x)`` of Laplace(b) at ``x >= 0``: ``log(e^{-x/b} / 2)`` (scipy's
    ``laplace.logsf`` underflows to -inf beyond ~700 scales)."""
    return -x / b - math.log(2.0)


def ref_log_pmf(kind, x, p):
    """Log pmf / pdf of the noise at the integers or reals ``x``, from the definitions (up to
    a constant for the discrete Gaussian)."""
    x = np.asarray(x, dtype="float64")
    k = np.abs(x)
    if kind is noise.DiscreteLaplace:  # (1 - q) / (1 + q) q^|k|, q = e^{-1/b}
        q = math.exp(-1.0 / p)
        return math.log((1 - q) / (1 + q)) - k / p
    if kind is noise.RoundedLaplace:
        # P(j) = P(j - 1/2 < L <= j + 1/2): a difference of upper tails for j > 0 (symmetric)
        hi, lo = _laplace_log_tail(k - 0.5, p), _laplace_log_tail(k + 0.5, p)
        out = hi + np.log1p(-np.exp(lo - hi))
        return np.where(k == 0, math.log1p(-2 * math.exp(_laplace_log_tail(0.5, p))), out)
    if kind is noise.DiscreteGaussian:
        return -(x**2) / (2.0 * p**2)
    if kind is noise.Laplace:
        return -k / p - math.log(2 * p)
    return stats.norm.logpdf(x, scale=p)


def ref_log_cdf_grid(kind, x, p):
    """``log P(N <= x)`` at consecutive integers ``x`` (ascending), up to one constant."""
    if kind is noise.Laplace:
        x = np.asarray(x, dtype="float64")
        up = np.log1p(-np.exp(_laplace_log_tail(np.abs(x), p)))
        return np.where(x < 0, _laplace_log_tail(np.abs(x), p), up)
    if kind is noise.Gaussian:
        return stats.norm.logcdf(x, scale=p)
    # integer kinds: a plain cumulative sum of the pmf from far below (nothing omitted)
    pad = int(80 * p) + 50
    xs = np.arange(x[0] - pad, x[-1] + 1)
    lp = ref_log_pmf(kind, xs, p)
    top = lp.max()
    with np.errstate(divide="ignore"):
        return (np.log(np.cumsum(np.exp(lp - top))) + top)[pad:]


def ref_count(z, spec, level, lower=None, upper=None, n=None, weights=None, hpd=False):
    """(lo, hi, mean, median, mass, cdf) of one release by brute-force enumeration; with
    ``hpd``, ``(post, c)`` instead of the last two (the HPD checks use the posterior)."""
    kind, p = type(spec), float(spec.param)
    if weights is not None:
        c = np.arange(len(weights))
    else:
        hw = 2 * int(noise_radius(spec)) + int(60 * p) + 60
        top = (max(z, 0) + hw) if n is None else n
        c = np.arange(0, top + 1) if n is not None else np.arange(0, max(z, 0) + hw + 1)
    if lower is not None and z == lower:
        x = (lower - c)[::-1]
        logl = ref_log_cdf_grid(kind, x, p)[::-1]
    elif upper is not None and z == upper:
        logl = ref_log_cdf_grid(kind, c - upper, p)
    else:
        logl = ref_log_pmf(kind, z - c, p)
    if weights is not None:
        with np.errstate(divide="ignore"):
            logl = logl + np.log(weights)
    post = np.exp(logl - logl.max())
    post /= post.sum()
    cdf = np.cumsum(post)
    a = 1 - level
    lo, hi, med = (c[np.argmax(cdf >= q - 1e-15)] for q in (a / 2, 1 - a / 2, 0.5))
    mass = post[(c >= lo) & (c <= hi)].sum()
    if hpd:
        return lo, hi, float((c * post).sum()), med, post, c
    return lo, hi, float((c * post).sum()), med, mass, dict(zip(c.tolist(), cdf, strict=True))


def check_hpd(iv, releases, spec, level, **kw):
    """HPD by its definition: the counts of highest posterior probability, in order, until
    their mass reaches the level (ties at the last probability all kept), and their hull.
    Ties are taken to a relative 1e-9 (the function's and the reference's probabilities
    differ in the last digits), so the hull lies between those of the strict and the loose
    level set; and its mass is at least the level."""
    specs = np.broadcast_to(np.asarray(spec.param), np.shape(releases))
    for i, z in enumerate(np.ravel(releases)):
        one = type(spec)(float(np.ravel(specs)[i]))
        _, _, mean, _, post, c = ref_count(z, one, level, hpd=True, **kw)
        ranked = np.sort(post)[::-1]
        t = ranked[np.argmax(np.cumsum(ranked) >= level - 1e-12)]
        strict, loose = c[post > t * (1 + 1e-9)], c[post >= t * (1 - 1e-9)]
        lo, hi = int(np.ravel(iv.lo)[i]), int(np.ravel(iv.hi)[i])
        s_lo, s_hi = (strict.min(), strict.max()) if strict.size else (hi, lo)
        assert loose.min() <= lo <= s_lo and s_hi <= hi <= loose.max(), (z, one, lo, hi)
        inside = post[(c >= lo) & (c <= hi)].sum()
        # 1e-9: sums of ~1e5 rounded terms (reference and function alike)
        assert inside >= level - 1e-9, (z, one)
        np.testing.assert_allclose(np.ravel(iv.mass)[i], inside, rtol=0, atol=1e-9)
        np.testing.assert_allclose(np.ravel(iv.mean)[i], mean, rtol=1e-9, atol=1e-9)


def _near_boundary(cdf, value, q):
    """Whether the reference CDF sits within rounding of ``q`` at ``value`` or below it (a
    tie that rounding may break either way)."""
    # 1e-9: the reference CDF is a running sum of up to ~1e5 rounded terms
    return any(abs(cdf.get(v, 1.0) - q) < 1e-9 for v in (value, value - 1))


def check_against_reference(iv, releases, spec, level, **kw):
    specs = np.broadcast_to(np.asarray(spec.param), np.shape(releases))
    for i, z in enumerate(np.ravel(releases)):
        one = type(spec)(float(np.ravel(specs)[i]))
        lo, hi, mean, med, mass, cdf = ref_count(z, one, level, **kw)
        a = 1 - level
        for got, want, q in ((iv.lo, lo, a / 2), (iv.hi, hi, 1 - a / 2), (iv.median, med, 0.5)):
            g = int(np.ravel(got)[i])
            assert g == want or _near_boundary(cdf, max(g, want), q), (z, one, g, want)
        # 1e-9: both sum up to ~1e5 rounded terms (relative 1e-16 each) and the reference's
        # scipy tails are accurate to ~1e-14; the mean's scale is the count's
        np.testing.assert_allclose(np.ravel(iv.mean)[i], mean, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(np.ravel(iv.mass)[i], mass, rtol=0, atol=1e-9)
        assert np.ravel(iv.mass)[i] >= level - 1e-12


KINDS = [noise.DiscreteLaplace, noise.RoundedLaplace, noise.DiscreteGaussian]
SCALES = [1e-3, 0.3, 2.0, 37.5, 500.0]
RELEASES = np.array([-4000, -7, 0, 1, 3, 12, 250, 5000])


@pytest.mark.parametrize("kind", KINDS + [noise.Laplace, noise.Gaussian], ids=lambda k: k.__name__)
@pytest.mark.parametrize("scale", SCALES)
def test_unclamped_counts_match_enumeration(kind, scale):
    spec = kind(scale)
    z = RELEASES if kind.discrete else RELEASES + 0.37
    for level in LEVELS:
        iv = count_intervals(z, spec, level, interval="equal-tailed")
        check_against_reference(iv, z, spec, level)
        check_hpd(count_intervals(z, spec, level), z, spec, level)


@pytest.mark.parametrize("kind", KINDS + [noise.Laplace, noise.Gaussian], ids=lambda k: k.__name__)
@pytest.mark.parametrize("scale", [1e-3, 0.7, 4.0, 120.0])
def test_clamped_counts_and_atoms_match_enumeration(kind, scale):
    spec = kind(scale)
    # clamp [-3, 40] with releases at both atoms and inside; n bounds the flat prior
    z = np.array([-3, -2, 0, 5, 39, 40])
    z = z if kind.discrete else np.where((z == -3) | (z == 40), z, z + 0.25)
    iv = count_intervals(z, spec, 0.9, lower=-3, upper=40, n=60, interval="equal-tailed")
    check_against_reference(iv, z, spec, 0.9, lower=-3, upper=40, n=60)
    iv = count_intervals(z, spec, 0.9, lower=-3, upper=40, n=60)
    check_hpd(iv, z, spec, 0.9, lower=-3, upper=40, n=60)
    # the lower clamp at 0 (OpenDP's unsigned output) with the unbounded flat prior
    z0 = np.array([0, 1, 30]) if kind.discrete else np.array([0.0, 1.5, 30.5])
    iv = count_intervals(z0, spec, 0.95, lower=0, interval="equal-tailed")
    check_against_reference(iv, z0, spec, 0.95, lower=0)
    check_hpd(count_intervals(z0, spec, 0.95, lower=0), z0, spec, 0.95, lower=0)


def test_upper_atom_far_above_n_and_prior_array():
    spec = noise.DiscreteGaussian(2.5)
    kw = {"lower": 0, "upper": 100, "n": 20}  # a release at upper, n far below it
    iv = count_intervals([100], spec, 0.9, interval="equal-tailed", **kw)
    check_against_reference(iv, [100], spec, 0.9, **kw)
    check_hpd(count_intervals([100], spec, 0.9, **kw), [100], spec, 0.9, **kw)
    w = np.r_[np.zeros(5), np.linspace(1.0, 3.0, 40), np.zeros(3), 0.5]
    z = np.array([-30, 0, 7, 44, 47, 60, 200])
    for s in (noise.DiscreteLaplace(3.0), noise.RoundedLaplace(0.01), spec):
        iv = count_intervals(z, s, 0.8, prior=w, interval="equal-tailed")
        check_against_reference(iv, z, s, 0.8, weights=w)
        check_hpd(count_intervals(z, s, 0.8, prior=w), z, s, 0.8, weights=w)


def test_per_release_noise_and_shape():
    spec = noise.DiscreteLaplace(np.array([[0.5, 3.0, 40.0], [1.0, 1.0, 200.0]]))
    z = np.array([[5, -2, 300], [0, 9, 17]])
    iv = count_intervals(z, spec, 0.95, interval="equal-tailed")
    assert iv.lo.shape == z.shape and iv.lo.dtype == np.int64
    check_against_reference(iv, z, spec, 0.95)
    check_hpd(count_intervals(z, spec, 0.95), z, spec, 0.95)
    empty = count_intervals(np.zeros((0,), dtype=int), noise.DiscreteLaplace(1.0))
    assert empty.lo.shape == (0,)


def test_interval_shrinks_to_the_release_as_noise_vanishes():
    z = np.array([0, 4, 1000])
    iv = count_intervals(z, noise.DiscreteGaussian(1e-3), 0.999)
    np.testing.assert_array_equal(iv.lo, z)
    np.testing.assert_array_equal(iv.hi, z)
    # the noise's mass off 0 is e^{-1/(2 sigma^2)} = e^{-5e5}: the mass sums to 1 up to
    # rounding of a handful of terms (a few ulp)
    np.testing.assert_allclose(iv.mass, 1.0, rtol=0, atol=1e-15)


# -- sums -------------------------------------------------------------------------------------


def ref_sum(z, spec, level, s_lo, s_hi):
    """(equal-tailed, HPD, mean, median, width) by quad on the posterior density f(z - s) on
    [s_lo, s_hi] (the HPD set is |z - s| <= r: the density falls with |z - s|).

    The density is written out relative to its mode (Laplace ``e^{-|z - s|/b}``, Gaussian
    ``e^{-(z - s)^2/2 sigma^2}``) and integrated over its mode +- 60 of its own widths (the
    mass beyond is below e^-60), cut at the mode and a few widths out."""
    kind, p = type(spec), float(spec.param)
    mode = min(max(z, s_lo), s_hi)
    # integrated in d = s - mode (no rounding of s near a large mode); relative to the mode,
    # (z - s)^2 - (z - mode)^2 = d^2 - 2 d (z - mode) and |z - s| - |z - mode|
    if kind is noise.Gaussian:
        slope = abs(z - mode) / p**2
        dens = lambda d: math.exp(-(d * d - 2 * d * (z - mode)) / (2 * p * p))  # noqa: E731
    else:
        slope = 1 / p if z != mode else 0.0
        dens = lambda d: math.exp(-(abs(z - mode - d) - abs(z - mode)) / p)  # noqa: E731
    width = min(p, 1.0 / slope) if slope else p
    a, b = max(s_lo - mode, -60 * width), min(s_hi - mode, 60 * width)
    cuts = sorted({min(max(k * width, a), b) for k in (-60, -8, -2, 0, 2, 8, 60)})

    def integral(f, u, v, epsabs=0.0):
        pts = [u] + [t for t in cuts if u < t < v] + [v]
        return math.fsum(
            integrate.quad(f, x, y, epsabs=epsabs, epsrel=1e-10, limit=200)[0]
            for x, y in itertools.pairwise(pts)
        )

    total = integral(dens, a, b)
    # the first moment about the mode changes sign: an absolute tolerance for it
    mean = integral(lambda d: d * dens(d), a, b, 1e-12 * width * total) / total + mode

    def q(u):
        d = optimize.brentq(lambda d: integral(dens, a, d) / total - u, a, b, xtol=1e-12 * width)
        return mode + d

    def hpd_mass(r):  # the set |z - s| <= r inside the range, in d = s - mode
        u, v = max(a, z - r - mode), min(b, z + r - mode)
        return integral(dens, u, v) / total if v > u else 0.0

    r0 = abs(z - mode)
    r = optimize.brentq(lambda r: hpd_mass(r) - level, r0, r0 + 61 * width, xtol=1e-12 * width)
    hpd = (max(s_lo, z - r), min(s_hi, z + r))
    alpha = 1 - level
    return (q(alpha / 2), q(1 - alpha / 2)), hpd, mean, q(0.5), width


@pytest.mark.parametrize("kind", [noise.Laplace, noise.Gaussian], ids=lambda k: k.__name__)
@pytest.mark.parametrize("scale", [0.01, 3.0, 80.0])
def test_continuous_sums_match_quadrature(kind, scale):
    spec = kind(scale)
    n, lower, upper = 50, -1.0, 4.0  # S in [-50, 200]
    z = np.array([-400.0, -50.0, -49.5, 17.3, 199.0, 260.0, 3000.0])
    et = sum_intervals(z, spec, 0.9, n=n, lower=lower, upper=upper, interval="equal-tailed")
    hpd = sum_intervals(z, spec, 0.9, n=n, lower=lower, upper=upper)
    for i, zi in enumerate(z):
        (lo, hi), (h_lo, h_hi), mean, med, width = ref_sum(zi, spec, 0.9, n * lower, n * upper)
        # quad's relative 1e-10 on each piece, brentq to 1e-12 of the posterior's width;
        # 1e-8 of that width leaves room for quad's error near the cut points
        for got, want in (
            (et.lo, lo), (et.hi, hi), (et.median, med), (et.mean, mean),
            (hpd.lo, h_lo), (hpd.hi, h_hi), (hpd.median, med),
        ):  # fmt: skip
            assert abs(got[i] - want) <= 1e-8 * width + 1e-12 * abs(want), (zi, got[i], want)
    for iv in (et, hpd):
        assert np.all(iv.lo >= -50) and np.all(iv.hi <= 200) and np.all(iv.lo <= iv.hi)


def test_integer_sums_are_shifted_counts():
    spec = noise.DiscreteGaussian(6.0)
    z = np.array([-90, 7, 140, 700])
    iv = sum_intervals(z, spec, 0.95, n=40, lower=-2, upper=3)  # S in [-80, 120]
    shifted = count_intervals(z + 80, spec, 0.95, n=200)
    check_hpd(shifted, z + 80, spec, 0.95, n=200)
    np.testing.assert_array_equal(iv.lo, shifted.lo - 80)
    np.testing.assert_array_equal(iv.hi, shifted.hi - 80)
    # the same posterior weights on grids 80 apart: the means differ by the rounding of a
    # weighted sum of a few hundred terms (a few ulp of values near 100), whatever the libm
    np.testing.assert_allclose(iv.mean, shifted.mean - 80, rtol=1e-13, atol=1e-12)


def test_flat_prior_coverage_equals_expected_mass():
    """Counts drawn from the flat prior on 0..n: the intervals cover at the rate E[mass]
    (>= level).  4,000 releases: the binomial standard error is about 0.0035."""
    rng = np.random.default_rng(3)
    n = 80
    for spec in (noise.DiscreteLaplace(4.0), noise.Gaussian(6.0)):
        c = rng.integers(0, n + 1, 4000)
        z = spec.release(c, rng=rng)
        iv = count_intervals(z, spec, 0.9, n=n)
        covered = np.mean((iv.lo <= c) & (c <= iv.hi))
        se = math.sqrt(0.9 * 0.1 / c.size)
        assert abs(covered - iv.mass.mean()) < 4 * se, (spec, covered, iv.mass.mean())


# -- OpenDP measurements --------------------------------------------------------------------


def test_opendp_measurements_are_read_with_their_clamp():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    records = dp.vector_domain(dp.atom_domain(T="u32")), dp.symmetric_distance()
    meas = records >> dp.t.then_count(TO="u32") >> dp.m.then_laplace(3.0)
    z = np.array([meas(list(range(k))) for k in (0, 0, 2, 15)], dtype="int64")
    got = count_intervals(z, meas, 0.9)
    want = count_intervals(z, noise.DiscreteLaplace(3.0), 0.9, lower=0)
    np.testing.assert_array_equal(got.lo, want.lo)
    np.testing.assert_array_equal(got.hi, want.hi)
    assert got.noise == noise.DiscreteLaplace(3.0)
    with pytest.raises(ValueError, match=r"`lower`=2.*contradicts"):
        count_intervals(z, meas, lower=2)
    geo = dp.m.make_geometric(
        dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale=2.0, bounds=(0, 50)
    )
    z = np.array([geo(k) for k in (0, 10, 50)])
    got = count_intervals(z, geo, 0.9, n=60)
    want = count_intervals(z, noise.DiscreteLaplace(2.0), 0.9, lower=0, upper=50, n=60)
    np.testing.assert_array_equal(got.lo, want.lo)
    np.testing.assert_array_equal(got.hi, want.hi)
    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    chain = floats >> dp.t.then_clamp((0.0, 10.0)) >> dp.t.then_sum() >> dp.m.then_laplace(5.0)
    assert sum_intervals([33.0], chain, n=5, lower=0.0, upper=10.0).noise == noise.Laplace(5.0)


# -- bad input ------------------------------------------------------------------------------


DL1 = noise.DiscreteLaplace(1.0)


@pytest.mark.parametrize(
    "releases, spec, kw, err, match",
    [
        ([1.5], DL1, {}, ValueError, "`releases`"),
        ([np.nan], noise.Laplace(1.0), {}, ValueError, "releases"),
        (["a"], noise.Laplace(1.0), {}, TypeError, "`releases`"),
        ([1], "laplace", {}, TypeError, "`noise`"),
        ([1], DL1, {"level": 1.0}, ValueError, "`level`"),
        ([1], DL1, {"prior": "jeffreys"}, ValueError, "`prior`"),
        ([1], DL1, {"prior": [-1, 2]}, ValueError, "`prior`"),
        ([1], DL1, {"prior": [1, 2], "n": 3}, ValueError, "`n`"),
        ([1], DL1, {"n": -1}, ValueError, "`n`"),
        ([1], DL1, {"n": 2.5}, ValueError, "`n`"),
        ([-1], DL1, {"lower": 0}, ValueError, "`releases` below"),
        ([9], DL1, {"upper": 5}, ValueError, "`releases` above"),
        ([5], DL1, {"upper": 5}, ValueError, "give `n`"),
        ([1], DL1, {"lower": 3, "upper": 3}, ValueError, "`lower`"),
        ([1], DL1, {"lower": 0.5}, ValueError, "`lower`"),
        ([1], DL1, {"d_in": 1}, ValueError, "`d_in`"),
        ([1], DL1, {"interval": "central"}, ValueError, "`interval`"),
        ([1], noise.DiscreteLaplace(1e6), {}, ValueError, "MAX_GRID"),
        ([1, 2], noise.DiscreteLaplace([1.0, 2.0, 3.0]), {}, ValueError, "broadcast"),
    ],
)
def test_bad_input_names_the_argument(releases, spec, kw, err, match):
    with pytest.raises(err, match=match):
        count_intervals(releases, spec, **kw)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"n": 0, "lower": 0, "upper": 1}, "`n`"),
        ({"n": 3, "lower": 2, "upper": 1}, "`lower`"),
        ({"n": 3, "lower": None, "upper": 1}, "`lower`"),
    ],
)
def test_bad_sum_input_names_the_argument(kw, match):
    with pytest.raises(ValueError, match=match):
        sum_intervals([1.0], noise.Laplace(1.0), **kw)


def test_a_noise_kind_of_ones_own_is_refused():
    class Mine(noise.DiscreteLaplace):
        pass

    with pytest.raises(TypeError, match="`noise` must be one of"):
        count_intervals([1], Mine(1.0))


# -- any input: intervals that make sense, or an error that names the argument -----------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SPEC_KINDS = (noise.DiscreteLaplace, noise.RoundedLaplace, noise.DiscreteGaussian)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    kind=st.sampled_from(SPEC_KINDS + (noise.Laplace, noise.Gaussian)),
    scale=st.floats(1e-3, 300.0),
    releases=st.lists(st.integers(-(10**7), 10**7), min_size=1, max_size=4),
    n=st.one_of(st.none(), st.integers(-2, 10**4)),
    clamp=st.one_of(st.none(), st.integers(-5, 50)),
    level=st.floats(0.01, 0.999),
    rule=st.sampled_from(("hpd", "equal-tailed")),
)
def test_any_input_gives_sensible_intervals_or_a_named_error(
    kind, scale, releases, n, clamp, level, rule
):
    z = np.asarray(releases)
    kw = {"n": n, "interval": rule}
    if clamp is not None:
        kw["lower"] = clamp
        z = np.maximum(z, clamp)
    try:
        iv = count_intervals(z, kind(scale), level, **kw)
    except (ValueError, TypeError) as err:
        assert re.search(r"`[a-z_]+`", str(err)), err  # names the argument
        return
    top = np.inf if n is None else n
    for v in (iv.lo, iv.hi, iv.median, iv.mean, iv.mass):
        assert np.all(np.isfinite(v))
    assert np.all((0 <= iv.lo) & (iv.lo <= iv.hi) & (iv.hi <= top))
    assert np.all((0 <= iv.median) & (iv.median <= top) & (0 <= iv.mean) & (iv.mean <= top))
    if rule == "equal-tailed":  # (an HPD interval need not hold the median)
        assert np.all((iv.lo <= iv.median) & (iv.median <= iv.hi))
    assert np.all((iv.mass >= level - 1e-9) & (iv.mass <= 1 + 1e-9))


# -- means ----------------------------------------------------------------------------------------


def ref_mean(zs, zc, s_spec, c_spec, level, lo, up, c_lower=None):
    """(lo, hi, median, mean) of the mean S/c by enumeration over c (flat on c >= 1, wide
    window) and scipy's noise CDFs in m: P(mu <= t) is proportional to sum_c L_C(c)
    (F(zs - c lo) - F(zs - c t)) / c (the difference from scipy's sf in the upper tail); the
    mean from quad of m f(zs - c m) per c."""
    ck, cp = type(c_spec), float(c_spec.param)
    c = np.arange(1, int(max(zc, zs / up, 0)) + int(80 * cp) + 60)  # the count radius: ~50 cp
    if c_lower is not None and zc == c_lower:
        logl = ref_log_cdf_grid(ck, (c_lower - c)[::-1], cp)[::-1]
    else:
        logl = ref_log_pmf(ck, zc - c, cp)
    wc = np.exp(logl - logl.max())
    sd = (
        stats.laplace(scale=s_spec.param)
        if type(s_spec) is noise.Laplace
        else stats.norm(scale=s_spec.param)
    )

    def between(t):
        x1, x2 = zs - c * t, zs - c * lo  # P(x1 <= N <= x2), from the upper tail if x1 > 0
        return np.where(x1 > 0, sd.sf(x1) - sd.sf(x2), sd.cdf(x2) - sd.cdf(x1))

    def cdf(t):
        return np.sum(wc * between(t) / c)

    total = cdf(up)

    def q(u):
        # xtol 1e-13: the root-finder's own stopping rule on t (values ~1e2), not a comparison
        return optimize.brentq(lambda t: cdf(t) / total - u, lo, up, xtol=1e-13)

    def moment(k):  # the density in m peaks at zs / k (width: the noise's scale / k)
        peak = [zs / k] if lo < zs / k < up else None
        f = lambda m: m * sd.pdf(zs - k * m)  # noqa: E731
        return integrate.quad(f, lo, up, points=peak, epsabs=0, epsrel=1e-11, limit=200)[0]

    # the moments where the joint weight matters (relative 1e-22: far below the tolerance)
    joint = wc * between(up) / c
    keep = joint > 1e-22 * joint.max()
    first = sum(w * moment(k) for k, w in zip(c[keep], wc[keep], strict=True))
    a = 1 - level
    return q(a / 2), q(1 - a / 2), q(0.5), first / total


@pytest.mark.parametrize(
    "s_spec, c_spec",
    [
        (noise.Laplace(10.0), noise.DiscreteLaplace(2.0)),
        (noise.Gaussian(4.0), noise.DiscreteGaussian(3.0)),
        (noise.Gaussian(30.0), noise.RoundedLaplace(0.5)),
    ],
    ids=str,
)
def test_mean_intervals_match_enumeration(s_spec, c_spec):
    # (sum, count): interior; a count at the clamp 0; sums at and beyond the range's ends
    zs = np.array([450.0, 20.0, 950.0, -30.0, 260.0])
    zc = np.array([90, 0, 90, 40, 3])
    iv = mean_intervals(zs, zc, s_spec, c_spec, 0.9, lower=0.0, upper=10.0, count_lower=0)
    for i in range(zs.size):
        want = ref_mean(zs[i], zc[i], s_spec, c_spec, 0.9, 0.0, 10.0, c_lower=0)
        got = (iv.lo[i], iv.hi[i], iv.median[i], iv.mean[i])
        # brentq to 1e-13 on [0, 10]; scipy's CDFs in linear space lose ~1e-12 in the sums
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
        assert 0.0 <= iv.lo[i] <= iv.median[i] <= iv.hi[i] <= 10.0


def test_mean_intervals_refuse_what_they_cannot_read():
    with pytest.raises(TypeError, match="`sum_noise`"):
        mean_intervals([5], [3], noise.DiscreteLaplace(1.0), DL1, lower=0, upper=2)
    with pytest.raises(ValueError, match="disagree"):  # a sum of 1e9 needs c >= 1e8
        mean_intervals([1e9], [90], noise.Laplace(1.0), DL1, lower=0.0, upper=10.0)
    with pytest.raises(ValueError, match="`upper`"):
        mean_intervals([5.0], [3], noise.Laplace(1.0), DL1, lower=1.0, upper=1.0)
    with pytest.raises(ValueError, match="broadcast"):
        mean_intervals([5.0, 6.0], [3, 4, 5], noise.Laplace(1.0), DL1, lower=0.0, upper=9.0)
