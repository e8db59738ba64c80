"""The truncated-Poisson moments kernel (``math/_truncated_moments.py``).

``TruncatedPoissonMomentsOp`` sums the pmf over a short truncation interval (at most 64
integers, static) in one Numba kernel, with the truncated law's cumulants as derivatives.  It
is checked against the PyTensor graph of the same sums (``expfam._poisson_interval_direct``,
what ``truncated_poisson_moments`` built before) on a grid of rates from 1e-8 to 1e8 and
intervals from one integer to 64, far below, around and far above the rate: values, first
and second derivatives; against finite differences; and on the Numba and JAX backends.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from compile_modes import TEST_MODE

from pymc_dpnoise.math import expfam as em
from pymc_dpnoise.math._truncated_moments import TruncatedPoissonMomentsOp

LOWER = np.array([0.0, 0.0, 2.0, 5.0, 30.0, 0.0, 900.0, 0.0])
UPPER = np.array([10.0, 63.0, 40.0, 5.0, 93.0, 1.0, 911.0, 0.0])
RATES = (1e-8, 0.03, 1.0, 4.5, 37.0, 950.0, 1e5, 1e8)


def _functions(use_kernel, mode=TEST_MODE):
    mu = pt.dscalar("mu")
    em._MOMENTS_KERNEL = use_kernel
    try:
        outs = em.truncated_poisson_moments(mu, LOWER, UPPER)
    finally:
        em._MOMENTS_KERNEL = True
    firsts = [pytensor.grad(o.sum(), mu) for o in outs]
    seconds = [pytensor.grad(g, mu) for g in firsts]
    return pytensor.function([mu], [*outs, *firsts, *seconds], mode=mode)


def test_kernel_matches_the_graph_of_the_same_sums():
    f_kern, f_dense = _functions(True), _functions(False)
    ops = [type(n.op) for n in f_kern.maker.fgraph.apply_nodes]
    assert TruncatedPoissonMomentsOp in ops
    names = ("log q", "mean", "var", "d log q", "d mean", "d var")
    names += tuple(f"d2 {x}" for x in ("log q", "mean", "var"))
    for mu in RATES:
        got, ref = f_kern(mu), f_dense(mu)
        for name, a, b in zip(names, got, ref, strict=True):
            a, b = np.asarray(a), np.asarray(b)
            assert np.all(np.isfinite(a)), (mu, name)
            # the derivatives carry 1/mu (1/mu^2): relative to their size plus that scale
            scale = 1.0 + np.abs(b) + (1.0 / mu if name.startswith("d ") else 0.0)
            scale = scale + (1.0 / mu**2 if name.startswith("d2") else 0.0)
            assert np.max(np.abs(a - b) / scale) < 1e-12, (mu, name, a, b)


def test_derivatives_match_finite_differences():
    f = _functions(True)
    for mu in (0.03, 4.5, 37.0, 950.0):
        h = 1e-6 * mu
        vals = f(mu)
        up, down = f(mu + h), f(mu - h)
        for k in range(3):
            fd = (np.asarray(up[k]) - np.asarray(down[k])) / (2 * h)
            # abs floor for derivatives near 0: central differences at step 1e-4 relative carry
            # ~1e-10 of rounding and truncation
            np.testing.assert_allclose(np.sum(fd), vals[3 + k], rtol=1e-6, atol=1e-9)


def test_one_integer_interval_is_a_point_mass():
    f = _functions(True)
    lq, mean, var = (np.asarray(x) for x in f(3.0)[:3])
    # {5} and {0}: mean the point, variance 0, log q the pmf there
    np.testing.assert_allclose(mean[[3, 7]], [5.0, 0.0])
    np.testing.assert_allclose(var[[3, 7]], 0.0, atol=1e-300)
    np.testing.assert_allclose(lq[7], -3.0, rtol=1e-15)


@pytest.mark.backend
def test_numba_and_jax_match_the_python_kernel():
    pytest.importorskip("jax")
    ref = _functions(True)
    for mode in ("NUMBA", "JAX"):
        f = _functions(True, mode=mode)
        for mu in (0.03, 37.0, 1e5):
            for a, b in zip(f(mu), ref(mu), strict=True):
                a, b = np.asarray(a), np.asarray(b)
                # exact rational-arithmetic reference; ours through log/exp/erfcx of
                # well-conditioned terms (relative to 1 + |b| + 1/mu^2, the scale that cancels):
                # 1e-12 is ~9000 ulp
                assert np.max(np.abs(a - b) / (1.0 + np.abs(b) + 1.0 / mu**2)) < 1e-12, mode
