"""The window-sum kernel of the Gaussian-kind count likelihoods (``math/_count_window.py``).

``CountWindowOp`` evaluates the window sum of ``noisy_counts`` (bisection for the summand's
argmax, the window, its log-sum-exp) in one Numba kernel with closed-form derivatives.  It is
checked here against the PyTensor graph of the same formulas (``CountWindowOp.dense``, the
graph ``noisy_counts`` built before the kernel) on grids reaching the extremes: counts from 0
to 1e7, p from 1e-12 to 1 - 1e-12, rates from 1e-13 to 1e8, noise sd from 0.05 to 120 (a
window of up to 2,411 terms), releases 60 noise sds beyond both ends of the support.  The
whole likelihoods (``noisy_binomial_logp`` / ``noisy_poisson_logp``) are compared with the
kernel switched off, and against brute force in ``distributions/test_noisy_counts.py``.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from compile_modes import TEST_MODE

from pymc_dpnoise import noise
from pymc_dpnoise.math import noisy_counts as ncm
from pymc_dpnoise.math._count_window import CountWindowOp

SIGMAS = (0.05, 0.7, 2.23, 15.0, 120.0)


def _grid(family, sigma, rng):
    """(y, hi, lpar) rows: every count size and parameter against releases from far below 0
    to far above the count's reach."""
    rows = []
    if family == "binomial":
        for n in (0.0, 1.0, 7.0, 300.0, 1e5, 1e7):
            for p in (1e-12, 1e-3, 0.2, 0.5, 0.97, 1 - 1e-12):
                mean = n * p
                for y in (-60 * sigma - 5, -1.0, 0.0, mean, mean + 0.37, n, n + 60 * sigma + 5):
                    rows.append((y, n, np.log(p) - np.log1p(-p)))
    else:
        for mu in (1e-13, 0.3, 4.0, 250.0, 1e5, 1e8):
            for y in (-60 * sigma - 5, 0.0, mu, mu + 0.37, mu + 60 * sigma + 5 * np.sqrt(mu)):
                rows.append((y, np.inf, np.log(mu)))
    y, hi, lpar = (np.array(c, dtype="float64") for c in zip(*rows, strict=True))
    y = y + rng.uniform(-0.5, 0.5, y.size) * (rng.uniform(size=y.size) < 0.3)
    return y, hi, lpar


def _width_iters(family, sigma, hi):
    n_max = float(np.max(hi)) if family == "binomial" else None
    curvature = 4.0 / (n_max + 2.0) if n_max is not None else 0.0
    width = ncm.window_half_width(sigma, curvature)
    iters = ncm._MAX_ITERS if n_max is None else int(np.ceil(np.log2(n_max + 2.0))) + 2
    return width, iters


def _functions(family, width, iters):
    y, hi, lpar, sigma = (pt.dvector(k) for k in ("y", "hi", "lpar", "sigma"))
    op = CountWindowOp(family, width, iters)
    kern = op(y, hi, lpar, sigma)
    dense = op.dense(y, hi, lpar, sigma)
    out = []
    for v in (kern, dense):
        grads = pytensor.grad(v.sum(), [y, lpar, sigma])
        out.append(pytensor.function([y, hi, lpar, sigma], [v, *grads], mode=TEST_MODE))
    return out


@pytest.mark.parametrize("family", ["binomial", "poisson"])
@pytest.mark.parametrize("sigma", SIGMAS)
def test_kernel_matches_the_graph_of_the_same_formulas(family, sigma):
    rng = np.random.default_rng(3)
    y, hi, lpar = _grid(family, sigma, rng)
    width, iters = _width_iters(family, sigma, hi)
    f_kern, f_dense = _functions(family, width, iters)
    s = np.full_like(y, sigma)
    got = f_kern(y, hi, lpar, s)
    ref = f_dense(y, hi, lpar, s)
    for name, a, b in zip(("value", "d/dy", "d/dlpar", "d/dsigma"), got, ref, strict=True):
        assert np.all(np.isfinite(a)), name
        # a few ulp of the terms: the summands reach |f| ~ 1e7 (n = 1e7 far from its mean)
        scale = 1.0 + np.abs(b) + (np.abs(y) + hi.clip(0, 1e8)) / sigma
        err = np.abs(a - b) / scale
        assert err.max() < 1e-12, (name, err.max(), np.argmax(err))


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_gradient_matches_finite_differences(family):
    rng = np.random.default_rng(5)
    sigma = 2.23
    y, hi, lpar = _grid(family, sigma, rng)
    width, iters = _width_iters(family, sigma, hi)
    f, _ = _functions(family, width, iters)
    # central differences with h = 1e-6 resolve values up to ~1e3 whose rounding error is
    # ~1e-13 (rounding / h); the pmf's error grows with n (1e-11 at n = 1e7, where the graph
    # comparison above covers the kernel)
    value = f(y, hi, lpar, np.full_like(y, sigma))[0]
    keep = (np.abs(value) < 1e3) & (np.abs(y) < 1e6)
    assert keep.sum() > 15
    y, hi, lpar = y[keep], hi[keep], lpar[keep]
    s = np.full_like(y, sigma)
    _, g_y, g_l, g_s = f(y, hi, lpar, s)
    h = 1e-6
    for name, g, bump in (
        ("y", g_y, lambda d: (y + d, hi, lpar, s)),
        ("lpar", g_l, lambda d: (y, hi, lpar + d, s)),
        ("sigma", g_s, lambda d: (y, hi, lpar, s + d)),
    ):
        fd = (f(*bump(h))[0] - f(*bump(-h))[0]) / (2 * h)
        # a window position that moves between the bumped points changes the value by far
        # below the tolerance (the window holds the mass wherever it sits)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5, err_msg=name)


def test_second_derivatives_come_from_the_graph():
    """A Hessian (Laplace approximations, ``pm.find_hessian``) differentiates the derivative
    outputs: the graph of the same formulas answers, and agrees with differentiating it."""
    sigma = np.array([2.23])
    y = np.array([7.0, 71.0, 217.0, 941.0])
    hi = np.array([40.0, 300.0, 1200.0, 5000.0])
    lq = pt.tensor("lq", dtype="float64", shape=(1,))  # one value for every release
    width, iters = _width_iters("binomial", 2.23, hi)
    op = CountWindowOp("binomial", width, iters)
    vals = []
    for v in (op(y, hi, lq, sigma), op.dense(y, hi, lq, sigma)):
        g = pytensor.grad(v.sum(), lq)
        h = pytensor.grad(g.sum(), lq)
        vals.append(pytensor.function([lq], [g, h], mode=TEST_MODE)(np.array([-1.4])))
    # the kernel and its dense graph evaluate the same window terms in another order: (window - 1)
    # u of same-sign terms, far below 1e-12
    np.testing.assert_allclose(vals[0][0], vals[1][0], rtol=1e-12)
    # second derivatives: the same terms in another order, which partly cancel: 1e-10
    np.testing.assert_allclose(vals[0][1], vals[1][1], rtol=1e-10)
    assert vals[0][1][0] < 0.0


@pytest.mark.parametrize("family", ["binomial", "poisson"])
@pytest.mark.parametrize("kind", [noise.Gaussian, noise.DiscreteGaussian], ids=lambda k: k.kind)
def test_likelihood_equals_the_graph_path(family, kind, monkeypatch):
    """``noisy_*_logp`` through the kernel equals the same likelihood with the kernel off
    (clamp atoms included: they keep their graphs), value and gradient; and the kernel is in
    the graph where the window applies."""
    y = np.array([0.0, 3.0, 71.0, 217.0, 941.0, 1200.0])
    n = np.array([40.0, 40.0, 300.0, 1200.0, 5000.0, 1200.0])
    x = pt.dscalar("x")
    res = []
    for flag in (True, False):
        monkeypatch.setattr(ncm, "_WINDOW_KERNEL", flag)
        if family == "binomial":
            lp = ncm.noisy_binomial_logp(y, n, x, kind, 2.23, lower=0.0, upper=1200.0)
            pts = (1e-6, 0.2, 0.9)
        else:
            lp = ncm.noisy_poisson_logp(y, x, kind, 2.23, lower=0.0)
            pts = (0.5, 300.0, 2e4)
        g = pytensor.grad(lp.sum(), x)
        f = pytensor.function([x], [lp, g], mode=TEST_MODE)
        ops = [type(nd.op) for nd in f.maker.fgraph.apply_nodes]
        assert (CountWindowOp in ops) == flag
        res.append([f(v) for v in pts])
    for (v1, g1), (v0, g0) in zip(*res, strict=True):
        # window kernel vs graph: sums of the same few-ulp terms in two orders, as above
        np.testing.assert_allclose(v1, v0, rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(g1, g0, rtol=1e-12)


def test_shapes_and_length_one_parameters():
    """A (groups x releases) value against per-group n and one p: the kernel takes the
    length-1 parameter as one value and sums its derivative."""
    y = np.array([[3.0, 9.0, 14.0], [150.0, 170.0, 240.0]])
    n = np.array([[20.0], [600.0]])
    p = pt.dscalar("p")
    outs = []
    for flag in (True, False):
        ncm._WINDOW_KERNEL = flag
        try:
            lp = ncm.noisy_binomial_logp(y, n, p, noise.DiscreteGaussian, 1.5)
        finally:
            ncm._WINDOW_KERNEL = True
        g = pytensor.grad(lp.sum(), p)
        outs.append(pytensor.function([p], [lp, g], mode=TEST_MODE)(0.3))
    assert outs[0][0].shape == (2, 3)
    # the same few-ulp terms summed in two orders: n is small here, a few ulp of log p
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-13)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-12)


def test_bad_family_is_named():
    with pytest.raises(ValueError, match="family"):
        CountWindowOp("negative_binomial", 10, 10)


@pytest.mark.backend
@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_numba_and_jax_match_the_python_kernel(family):
    """PyTensor's Numba and JAX backends (the JAX twin in ``_count_window_jax``) against the
    op's ``perform``, value and derivatives; and JAX's own gradient of the value op."""
    pytest.importorskip("jax")
    rng = np.random.default_rng(11)
    sigma = 2.23
    y, hi, lpar = _grid(family, sigma, rng)
    width, iters = _width_iters(family, sigma, hi)
    yv, hv, lv, sv = (pt.dvector(k) for k in ("y", "hi", "lpar", "sigma"))
    op = CountWindowOp(family, width, iters)
    v = op(yv, hv, lv, sv)
    outs = [v, *pytensor.grad(v.sum(), [yv, lv, sv])]
    s = np.full_like(y, sigma)
    ref = pytensor.function([yv, hv, lv, sv], outs, mode=TEST_MODE)(y, hi, lpar, s)
    for mode in ("NUMBA", "JAX"):
        got = pytensor.function([yv, hv, lv, sv], outs, mode=mode)(y, hi, lpar, s)
        for name, a, b in zip(("value", "d/dy", "d/dlpar", "d/dsigma"), got, ref, strict=True):
            scale = 1.0 + np.abs(b) + (np.abs(y) + hi.clip(0, 1e8)) / sigma
            # another backend, relative to 1 + |ref| + (|y| + n)/sigma (the terms that cancel):
            # few-ulp libm differences, 1e-12 is ~9000 ulp of that scale
            assert (np.abs(np.asarray(a) - b) / scale).max() < 1e-12, (mode, name)
    import jax

    from pymc_dpnoise.math._count_window_jax import kernel

    f = kernel(family, width, iters, grad=False)
    g = jax.grad(lambda lp: f(y, hi, lp, s).sum())(lpar)
    scale = 1.0 + np.abs(ref[2]) + (np.abs(y) + hi.clip(0, 1e8)) / sigma
    # JAX's gradient against the Python VM's, relative to 1 + |ref| + (|y| + n)/sigma (the terms
    # that cancel): few-ulp libm, 1e-12 is ~9000 ulp of that scale
    assert (np.abs(np.asarray(g) - ref[2]) / scale).max() < 1e-12


# --------------------------------------------------------------------------------------------
# kind="lower": the discrete Gaussian's lower clamp atom, sum_j e^{-j^2/2 sigma^2} F(m - j)
# --------------------------------------------------------------------------------------------


def _lower_rows(family):
    rows = []
    if family == "binomial":
        for n in (0.0, 7.0, 300.0, 2000.0):
            for p in (1e-6, 0.27, 0.999):
                for m in (-20.0, 0.0, 3.0, np.floor(n / 2), n - 1.0, n, n + 5.0):
                    rows.append((m, n, np.log(p) - np.log1p(-p)))
    else:
        for mu in (0.3, 40.0, 900.0):
            for m in (-20.0, 0.0, 3.0, np.floor(mu / 2), np.floor(mu), np.floor(mu) + 200.0):
                rows.append((m, np.inf, np.log(mu)))
    return [np.array(c, dtype="float64") for c in zip(*rows, strict=True)]


def _lower_brute_force(family, m, n, lpar, sigma):
    """log sum_j e^{-j^2/2 sigma^2} F(m - j) over every j with F(m - j) > 0 (|j| up to 40
    sigma beyond the count's reach), F the running log-sum of scipy's pmf (from the top
    where F > 1/2)."""
    from scipy import stats

    top = int(n) if family == "binomial" else int(np.exp(lpar) + 60 * np.sqrt(np.exp(lpar)) + 200)
    k = np.arange(top + 1)
    if family == "binomial":
        lp = stats.binom.logpmf(k, int(n), 1.0 / (1.0 + np.exp(-lpar)))
    else:
        lp = stats.poisson.logpmf(k, np.exp(lpar))
    log_f = np.logaddexp.accumulate(lp)
    # above 1/2, F = 1 - P(S > k) from the top (a running sum from below loses ~n ulp there)
    log_sf = np.append(np.logaddexp.accumulate(lp[::-1])[::-1][1:], -np.inf)
    log_f = np.where(log_f > -np.log(2.0), np.log(-np.expm1(np.minimum(log_sf, -1e-300))), log_f)
    j = np.arange(m - top - int(40 * sigma) - 2, m + 1)
    kk = (m - j).astype(int)
    terms = -0.5 * (j / sigma) ** 2 + np.where(kk > top, 0.0, log_f[np.minimum(kk, top)])
    return np.logaddexp.reduce(terms)


@pytest.mark.parametrize("family", ["binomial", "poisson"])
@pytest.mark.parametrize("sigma", (0.7, 2.23, 15.0))
def test_lower_tail_matches_brute_force_and_the_graph(family, sigma):
    """The kernel against a brute-force sum (scipy's pmf, every term), and value and
    derivatives against the graph of the same sum (``_dg_lower_sum``, a bisection with a
    continued fraction per step and one per term)."""
    m, hi, lpar = _lower_rows(family)
    width = ncm.window_half_width(sigma)
    mv, hv, lv, sv = (pt.dvector(k) for k in ("m", "hi", "lpar", "sigma"))
    op = CountWindowOp(family, width, ncm._MAX_ITERS, kind="lower")
    fns = []
    for v in (op(mv, hv, lv, sv), op.dense(mv, hv, lv, sv)):
        fns.append(pytensor.function([mv, hv, lv, sv], [v, *pytensor.grad(v.sum(), [lv, sv])]))
    s = np.full_like(m, sigma)
    got, ref = (f(m, hi, lpar, s) for f in fns)
    brute = np.array([_lower_brute_force(family, *r, sigma) for r in zip(m, hi, lpar, strict=True)])
    # scipy's log pmf is exact to ~1e-14 relative at these n; the sums add a few ulp
    np.testing.assert_allclose(got[0], brute, rtol=1e-12, atol=1e-12)
    mag = 1.0 + np.abs(ref[0]) + np.abs(m) + (hi if family == "binomial" else np.exp(lpar))
    for name, a, b in zip(("value", "d/dlpar", "d/dsigma"), got, ref, strict=True):
        assert np.all(np.isfinite(a)), name
        # the graph's terms are a pmf plus a CDF ratio each, of magnitude up to ~mag: its
        # weights carry their rounding (~1e-16 mag); the kernel's recursion does not
        err = np.abs(a - b) / ((1.0 + np.abs(b)) * mag)
        assert err.max() < 1e-13, (name, err.max(), np.argmax(err))


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_lower_tail_gradient_matches_finite_differences(family):
    m, hi, lpar = _lower_rows(family)
    sigma = 2.23
    width = ncm.window_half_width(sigma)
    mv, hv, lv, sv = (pt.dvector(k) for k in ("m", "hi", "lpar", "sigma"))
    v = CountWindowOp(family, width, ncm._MAX_ITERS, kind="lower")(mv, hv, lv, sv)
    f = pytensor.function([mv, hv, lv, sv], [v, *pytensor.grad(v.sum(), [lv, sv])])
    s = np.full_like(m, sigma)
    _, g_l, g_s = f(m, hi, lpar, s)
    h = 1e-6
    # central differences with h = 1e-6 of values below ~1e3 (rounding ~1e-13 / h)
    for name, g, bump in (
        ("lpar", g_l, lambda d: (m, hi, lpar + d, s)),
        ("sigma", g_s, lambda d: (m, hi, lpar, s + d)),
    ):
        fd = (f(*bump(h))[0] - f(*bump(-h))[0]) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.backend
@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_clamped_likelihood_on_jax_matches_numba(family):
    """The clamp atoms' kernel on the JAX backend (which compiles its graph) against Numba."""
    pytest.importorskip("jax")
    x, m = pt.dscalar("x"), pt.dvector("m")
    y = np.array([0.0, 3.0, 71.0, 0.0, 941.0, 1200.0])
    if family == "binomial":
        n = np.array([40.0, 40.0, 300.0, 1200.0, 5000.0, 1200.0])
        lp = ncm.noisy_binomial_logp(m, n, x, noise.DiscreteGaussian, 2.23, lower=0.0, upper=1200.0)
        v = 0.2
    else:
        lp = ncm.noisy_poisson_logp(m, x, noise.DiscreteGaussian, 2.23, lower=0.0)
        v = 30.0
    outs = [lp, pytensor.grad(lp.sum(), x)]
    got, ref = (pytensor.function([m, x], outs, mode=md)(y, v) for md in ("JAX", "NUMBA"))
    # the graph against the kernel of the same sums: their terms' rounding (values ~1e3)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-12)
