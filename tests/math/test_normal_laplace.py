"""The normal-Laplace kernel (``math/_normal_laplace.py``).

``NormalLaplaceOp`` evaluates ``expfam.normal_laplace_logp`` (a normal sum plus Laplace noise)
in one Numba kernel with derivatives in (value, mean, var, scale) taken so that none is a
difference of large terms.  It is checked against the PyTensor graph of the same density
(``expfam._normal_laplace_graph``, differentiated by PyTensor) on a grid reaching the
extremes: Laplace scales from 1e-8 to 1e6 (the normal and the Laplace limits), variances from
0 (the floor) to 1e12, distances from 0 to 1e7; against finite differences; for second
derivatives; and on the Numba and JAX backends.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from compile_modes import TEST_MODE

from pymc_dpnoise.math import expfam as em
from pymc_dpnoise.math._normal_laplace import NormalLaplaceOp


def _grid():
    rows = []
    for beta in (1e-8, 0.01, 1.0, 30.0, 1e6):
        for v in (0.0, 1e-310, 1e-12, 0.5, 4.0, 1e4, 1e12):
            for r in (0.0, 1e-9, 0.3, -2.0, 40.0, -1e3, 1e7):
                rows.append((r + 5.0, 5.0, v, beta))
    return tuple(np.array(c) for c in zip(*rows, strict=True))


def _functions(use_kernel, mode=TEST_MODE):
    args = [pt.dvector(k) for k in ("y", "m", "v", "b")]
    em._NORMAL_LAPLACE_KERNEL = use_kernel
    try:
        lp = em.normal_laplace_logp(*args)
    finally:
        em._NORMAL_LAPLACE_KERNEL = True
    return pytensor.function(args, [lp, *pytensor.grad(lp.sum(), args)], mode=mode)


def _scales(y, m, v, b):
    """Sizes of the terms each derivative is made of (a tolerance unit)."""
    floor = 1e-150 * (1.0 + b)
    s = np.where(v > floor**2, np.sqrt(np.where(v > floor**2, v, 1.0)), floor)
    x, k = np.abs(y - m) / s, s / b
    with np.errstate(over="ignore"):  # inf: no constraint where the terms overflow
        unit = (1.0 + x + k) * (1.0 / s + 1.0 / b)
        return [np.ones_like(y), unit, unit, unit / s, unit * (1.0 + k * x)]


def _close(got, ref, grid):
    names = ("log p", "d/dy", "d/dmean", "d/dvar", "d/dscale")
    for name, a, b, sc in zip(names, got, ref, _scales(*grid), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert np.all(np.isfinite(a)), name
        bad = ~(np.abs(a - b) <= 1e-9 * np.abs(b) + 1e-13 * sc)
        assert not bad.any(), (name, np.flatnonzero(bad)[:5], a[bad][:5], b[bad][:5])


def test_kernel_matches_the_graph_of_the_same_density():
    grid = _grid()
    f_kern = _functions(True)
    assert NormalLaplaceOp in [type(n.op) for n in f_kern.maker.fgraph.apply_nodes]
    got = f_kern(*grid)
    ref = _functions(False)(*grid)
    # log p to a few ulp of its size
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-13, atol=1e-13)
    _close(got, ref, grid)


def test_derivatives_match_finite_differences():
    y = np.array([5.3, 3.0, 45.0, 7.5])
    m = np.array([5.0, 5.0, 5.0, 2.0])
    v = np.array([0.5, 4.0, 1e4, 30.0])
    b = np.array([1.0, 30.0, 0.01, 2.0])
    f = _functions(True)
    got = f(y, m, v, b)
    args = [y, m, v, b]
    for k in range(4):
        h = 1e-6 * np.maximum(1.0, np.abs(args[k]))  # per element
        up = [a + (h if j == k else 0.0) for j, a in enumerate(args)]
        down = [a - (h if j == k else 0.0) for j, a in enumerate(args)]
        fd = (f(*up)[0] - f(*down)[0]) / (2 * h)
        np.testing.assert_allclose(got[1 + k], fd, rtol=1e-6, atol=1e-8)


def test_second_derivatives_come_from_the_graph():
    m = pt.dscalar("m")
    y = np.array([5.3, 3.0, 45.0])
    res = []
    for flag in (True, False):
        em._NORMAL_LAPLACE_KERNEL = flag
        try:
            lp = em.normal_laplace_logp(y, m, 4.0, 1.5).sum()
        finally:
            em._NORMAL_LAPLACE_KERNEL = True
        g = pytensor.grad(lp, m)
        res.append(pytensor.function([m], [g, pytensor.grad(g, m)], mode=TEST_MODE)(5.0))
    # the kernel and the graph form of the normal-Laplace density's derivatives: the same formulas
    # through erfcx/exp in another order, 1e-10
    np.testing.assert_allclose(res[0], res[1], rtol=1e-10)


@pytest.mark.backend
def test_numba_and_jax_match_the_python_kernel():
    pytest.importorskip("jax")
    grid = _grid()
    ref = _functions(True)(*grid)
    for mode in ("NUMBA", "JAX"):
        _close(_functions(True, mode=mode)(*grid), ref, grid)
