"""The noise specs of real releases by Tumult Analytics and Google's DP library (python-dp).

:func:`~pymc_dpnoise.noise.from_tumult` and :func:`~pymc_dpnoise.noise.from_python_dp` are
checked against draws of the documented mechanisms, written here (python-dp's ``Count``: the
continuous Laplace noise of scale :math:`\\Delta_0\\Delta_\\infty/\\varepsilon`, rounded to the
nearest integer; Tumult's ``"LAPLACE"`` on integers: the double-sided geometric with
:math:`\\alpha` = ``noise_parameter``; ``"GAUSSIAN"``: the discrete Gaussian with
:math:`\\sigma^2` = ``noise_parameter``): chi-square of the draws against the spec's PyTensor
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
    spec = noise.from_tumult("LAPLACE", alpha)
    assert spec == noise.DiscreteLaplace(alpha)
    assert noise.from_tumult("LAPLACE", alpha, integer=False) == noise.Laplace(alpha)
    rng = np.random.default_rng(int(10 * alpha))
    draws = _discrete_draws(lambda k: -np.abs(k) / alpha, N, rng)  # double-sided geometric
    assert _pvalue(draws, spec) > P_OK
    assert _pvalue(draws, noise.DiscreteLaplace(1.2 * alpha)) < P_OK


@pytest.mark.parametrize("variance", [0.25, 9.0])
def test_tumult_gaussian_documented(variance):
    spec = noise.from_tumult("GAUSSIAN", variance)
    sigma = np.sqrt(variance)
    assert spec == noise.DiscreteGaussian(sigma)
    assert noise.from_tumult("GAUSSIAN", variance, integer=False) == noise.Gaussian(sigma)
    rng = np.random.default_rng(int(10 * variance))
    draws = _discrete_draws(lambda k: -0.5 * k**2 / variance, N, rng)
    assert _pvalue(draws, spec) > P_OK
    # the parameter is the variance: reading it as sigma is rejected
    assert _pvalue(draws, noise.DiscreteGaussian(variance)) < P_OK
    assert _pvalue(draws, noise.DiscreteGaussian(1.2 * sigma)) < P_OK
