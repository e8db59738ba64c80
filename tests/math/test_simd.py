"""``exp_``, ``log_`` and ``erfcx_nonneg`` of ``pymc_dpnoise.math._simd`` (the branch-free
functions of the clipped-normal kernel's vectorised loop) against NumPy, SciPy and a 90-digit
``decimal`` reference, over their whole documented domains."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numba
import numpy as np
import pytest
from normal_laplace_reference import _log_erfc_pos
from scipy.special import erfcx

from pymc_dpnoise.math._simd import erfcx_nonneg, exp_, fma, log_


def _vectorised(fn):
    # the same loop shape as the kernel's (numpy error model: no division checks)
    @numba.njit(error_model="numpy")
    def run(x):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = fn(x[i])
        return out

    return run


def _ulps(got, ref):
    return np.abs(got - ref) / np.spacing(np.abs(ref))


def test_exp_within_one_ulp_on_its_domain():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            np.linspace(-708.0, 709.0, 400_001),
            rng.uniform(-1.0, 1.0, 100_000),
            [0.0, -0.0, 1e-300, -1e-300, math.log(2.0), -708.0, 709.0],
            np.arange(-1021, 1023) * math.log(2.0),  # at the reduction's switch points
        ]
    )
    assert _ulps(_vectorised(exp_)(x), np.exp(x)).max() <= 1.0


def test_log_within_two_ulps_on_positive_normals():
    rng = np.random.default_rng(1)
    y = np.concatenate(
        [
            np.exp(np.linspace(-708.0, 709.0, 400_001)),
            rng.uniform(0.5, 2.0, 200_000),  # log near 0: absolute error matters there
            [1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0), math.sqrt(2.0)],
            [np.finfo(float).tiny, np.finfo(float).max],
        ]
    )
    got, ref = _vectorised(log_)(y), np.log(y)
    assert got[np.flatnonzero(y == 1.0)[0]] == 0.0
    err = np.abs(got - ref) / np.maximum(np.spacing(np.abs(ref)), np.spacing(1.0) / 4)
    assert err.max() <= 2.0


def test_erfcx_against_the_90_digit_reference():
    x = np.concatenate(
        [
            [0.0, 1e-300, 1e-12, 1e-6, 0.01, 0.5, 1.0, 3.75, 6.9, 7.1, 26.0, 27.0],
            np.linspace(0.0, 40.0, 161)[1:],
            np.geomspace(40.0, 1e20, 40),  # log erfc + x^2 keeps 50 of its 90 digits
        ]
    )
    got = _vectorised(erfcx_nonneg)(x)
    with localcontext() as ctx:
        ctx.prec = 90
        ref = []
        for v in x:
            d = Decimal(float(v))
            ref.append(float((_log_erfc_pos(d) + d * d).exp()) if v > 0 else 1.0)
    ref = np.array(ref)
    assert _ulps(got, ref).max() <= 3.0


def test_erfcx_against_scipy_on_a_dense_grid():
    # scipy's own erfcx is off by up to ~4 ulp (near x = 0.05, by the reference above)
    x = np.concatenate([np.linspace(0.0, 30.0, 600_001), np.geomspace(1e-300, 1e150, 100_001)])
    assert _ulps(_vectorised(erfcx_nonneg)(x), erfcx(x)).max() <= 12.0


@pytest.mark.parametrize(("a", "b", "c"), [(1.0 + 2**-30, 1.0 - 2**-30, -1.0), (3.0, 0.1, 0.2)])
def test_fma_rounds_once(a, b, c):
    @numba.njit
    def f(a, b, c):
        return fma(a, b, c)

    with localcontext() as ctx:
        ctx.prec = 200
        exact = Decimal(a) * Decimal(b) + Decimal(c)
    assert f(a, b, c) == float(exact)
