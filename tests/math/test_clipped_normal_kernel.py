"""The linear-space form of the clipped-normal kernel (``_inside_linear``).

Inside the clipping interval, where epsilon <= 50, kappa <= 5, alpha >= -30 and beta <= 30,
the Numba kernel (and the JAX kernel, for one parameter set) evaluates the density as a sum
of four non-negative terms in linear space instead of the log-space tilted-tail forms.  Checked
here against the PyTensor graph of the log-space formulas (``_clipped_normal_dense``,
differentiated by PyTensor) on a random grid that reaches every edge of that region, with
reports at the interval ends; the extreme grids of ``test_distributions.py`` check the whole
kernel against quadrature.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from compile_modes import TEST_MODE

from pymc_dpnoise.math._clipped_normal_graph import _clipped_normal_dense
from pymc_dpnoise.math._clipped_normal_kernel import (
    _FAST_AB,
    _FAST_EPS,
    _FAST_KAP,
    _clipped_normal_kernel,
    _inside_linear,
    _linear_params,
)


@pytest.fixture(scope="module")
def dense():
    z, m, s, a, b, e = (pt.dvector(n) for n in "zmsabe")
    lp = _clipped_normal_dense(z, m, s, a, b, e)
    g_mu, g_sigma = pytensor.grad(lp.sum(), [m, s])
    return pytensor.function([z, m, s, a, b, e], [lp, g_mu, g_sigma], mode=TEST_MODE)


def _grid(n=6000, seed=0):
    """Reports inside (a, b) with (epsilon, kappa, alpha, beta) spread over the fast region,
    its edges included."""
    rng = np.random.default_rng(seed)
    eps = np.exp(rng.uniform(math.log(1e-6), math.log(_FAST_EPS), n))
    kap = np.exp(rng.uniform(math.log(1e-9), math.log(_FAST_KAP), n))
    al = rng.uniform(-_FAST_AB, _FAST_AB, n)
    width = np.exp(rng.uniform(math.log(1e-3), math.log(1e3), n))
    # edges of the region
    eps[:50] = _FAST_EPS
    kap[50:100] = _FAST_KAP
    al[100:150] = -_FAST_AB
    a = rng.uniform(-100.0, 100.0, n)
    b = a + width
    s = width / eps
    sigma = kap * s
    mu = a - al * sigma
    be = (b - mu) / sigma
    keep = be <= _FAST_AB
    u = rng.uniform(0.0, 1.0, n)
    z = a + u * width
    z[::7] = np.nextafter(a[::7], b[::7])
    z[3::7] = np.nextafter(b[3::7], a[3::7])
    keep &= (z > a) & (z < b)
    return tuple(x[keep] for x in (z, mu, sigma, a, b, eps))


def test_linear_form_matches_log_space_graph(dense):
    z, mu, sigma, a, b, eps = _grid()
    assert z.size > 2000
    out = np.empty((3, z.size))
    for i in range(z.size):
        s = (b[i] - a[i]) / eps[i]
        kap = sigma[i] / s
        al, be = (a[i] - mu[i]) / sigma[i], (b[i] - mu[i]) / sigma[i]
        lin = _linear_params(al, be, kap, eps[i])
        v, g_mu, g_sigma = _inside_linear(
            z[i], a[i], 1.0 / s, 1.0 / sigma[i], kap, (z[i] - mu[i]) * (1.0 / sigma[i]), lin
        )
        out[:, i] = v - math.log(2.0 * s), g_mu, g_sigma
    ref = dense(z, mu, sigma, a, b, eps)
    assert np.all(np.isfinite(out))
    # log p: a few ulp of the density (measured 1.4e-14 absolute on a 200,000-point grid)
    np.testing.assert_allclose(out[0], ref[0], rtol=1e-12, atol=1e-13)
    # derivatives: relative to their size plus 1/sigma (measured 6e-14)
    for k in (1, 2):
        err = np.abs(out[k] - ref[k]) / (np.abs(ref[k]) + 1.0 / sigma)
        assert err.max() < 1e-11, (k, err.max())


def test_kernel_takes_the_linear_form_inside_the_region_only(dense):
    z, mu, sigma, a, b, eps = (x[:400] for x in _grid(seed=1))
    lp, dmu, dsig = _clipped_normal_kernel(z, mu, sigma, a, b, eps)
    taken = 0
    for i in range(z.size):
        s = (b[i] - a[i]) / eps[i]
        kap = sigma[i] / s
        al, be = (a[i] - mu[i]) / sigma[i], (b[i] - mu[i]) / sigma[i]
        if not (eps[i] <= _FAST_EPS and kap <= _FAST_KAP and al >= -_FAST_AB and be <= _FAST_AB):
            continue  # rounded out of the region at an edge
        taken += 1
        v, g_mu, g_sigma = _inside_linear(
            z[i],
            a[i],
            1.0 / s,
            1.0 / sigma[i],
            kap,
            (z[i] - mu[i]) * (1.0 / sigma[i]),
            _linear_params(al, be, kap, eps[i]),
        )
        assert (lp[i], dmu[i], dsig[i]) == (v - math.log(2.0 * s), g_mu, g_sigma)
    assert taken > 300
    # just outside each edge of the region the log-space form runs; both agree with the graph
    one = np.ones(1)
    for eps_, kap_, al_ in ((_FAST_EPS, 1.0, 0.0), (2.0, _FAST_KAP, 0.0), (2.0, 1.0, -_FAST_AB)):
        for factor in (1.0, 1.0 + 1e-12):
            e_ = eps_ * factor if eps_ == _FAST_EPS else eps_
            k_ = kap_ * factor if kap_ == _FAST_KAP else kap_
            a_ = al_ * factor if al_ == -_FAST_AB else al_
            a0, b0 = -1.0, 3.0
            s = (b0 - a0) / e_
            sg = k_ * s
            m = a0 - a_ * sg
            if (b0 - m) / sg > _FAST_AB:
                continue
            zz = np.array([a0 + 1e-9, 0.3, b0 - 1e-9])
            args = (zz, m * one, sg * one, a0 * one, b0 * one, e_ * one)
            got = _clipped_normal_kernel(*args)
            ref = dense(zz, *(np.full(3, x[0]) for x in args[1:]))
            # as in the grid test above: a few ulp of the density (measured 1.4e-14)
            np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-13)
            for k in (1, 2):
                np.testing.assert_allclose(got[k], ref[k], rtol=1e-10, atol=1e-12 / sg)


def test_one_parameter_set_pass_equals_the_per_report_loop(dense):
    """With one parameter set in the region the kernel runs ``_one_set`` (the vectorised
    passes); with the same values given per report it runs the per-report loop.  Same
    formulas, so the same numbers to the last bit, for reports inside, outside and on the
    bounds; and both agree with the log-space graph."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(100):
        eps = math.exp(rng.uniform(math.log(1e-3), math.log(_FAST_EPS)))
        a = rng.uniform(-50.0, 50.0)
        b = a + math.exp(rng.uniform(math.log(1e-2), math.log(1e2)))
        s = (b - a) / eps
        sg = s * math.exp(rng.uniform(math.log(1e-6), math.log(_FAST_KAP)))
        mu = rng.uniform(a - 3.0 * sg, b + 3.0 * sg)
        if (a - mu) / sg < -_FAST_AB or (b - mu) / sg > _FAST_AB:
            continue
        z = np.concatenate(
            [
                rng.uniform(a - 3 * s, b + 3 * s, 997),
                [a, b, np.nextafter(a, b), np.nextafter(b, a)],
                rng.uniform(a, b, 30),
            ]
        )
        one = [np.array([v]) for v in (mu, sg, a, b, eps)]
        full = [np.full(z.size, v) for v in (mu, sg, a, b, eps)]
        got = _clipped_normal_kernel(z, *one)
        loop = _clipped_normal_kernel(z, *full)
        for g, r in zip(got, loop, strict=True):
            np.testing.assert_array_equal(g, r)  # the same NumPy ops on equal values
        ref = dense(z, *full)
        # a few ulp of the density (measured 1.4e-14)
        np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-13)
        for k in (1, 2):
            err = np.abs(got[k] - ref[k]) / (np.abs(ref[k]) + 1.0 / sg)
            # gradients against the dense graph, relative to |ref| + 1/sigma (the scale of the
            # terms that cancel): few-ulp libm times condition <= 1e2, 1e-11
            assert err.max() < 1e-11, (k, err.max())
        checked += 1
    assert checked >= 35
