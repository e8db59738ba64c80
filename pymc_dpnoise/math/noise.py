r"""Log pmf / pdf and log CDF of the noise kinds of :mod:`pymc_dpnoise.noise`, in PyTensor.

Kinds: ``"laplace"`` (scale :math:`b`), ``"discrete_laplace"`` (:math:`P(k) =
\tanh(1/2b)\,e^{-|k|/b}`), ``"rounded_laplace"`` (:math:`P(j) = \sinh(1/2b)\,e^{-|j|/b}`,
:math:`j \ne 0`; :math:`1 - e^{-1/2b}` at 0), ``"gaussian"`` and ``"discrete_gaussian"``
(:math:`P(k) = e^{-k^2/2\sigma^2}/Z(\sigma)`).  The derivations are in the docstring of
:mod:`pymc_dpnoise.noise`.  The discrete kinds give :math:`-\infty` off the integers.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt

__all__ = [
    "log_ndtr",
    "log_sinh",
    "log_tanh",
    "log_z_discrete_gaussian",
    "noise_logcdf",
    "noise_logp",
]

_LOG2 = np.float64(math.log(2.0))
_LOG_SQRT_2PI = np.float64(0.5 * math.log(2.0 * math.pi))
_SQRT1_2 = np.float64(math.sqrt(0.5))
TAIL_NATS = 46.0
_TINY = np.float64(-1e-300)
_HUGE = np.float64(1e300)


def _f64(x):
    if not isinstance(x, pt.Variable):
        return pt.as_tensor_variable(np.asarray(x, dtype="float64"))
    return x if x.dtype == "float64" else pt.cast(x, "float64")


def log_ndtr(x):
    r""":math:`\log\Phi(x)`, accurate in both tails (``erfcx`` below 0, ``log1p`` above)."""
    x = _f64(x)
    neg = pt.minimum(x, 0.0)
    pos = pt.maximum(x, 0.0)
    left = pt.log(0.5 * pt.erfcx(-neg * _SQRT1_2)) - 0.5 * neg * neg
    right = pt.log1p(-0.5 * pt.erfc(pos * _SQRT1_2))
    return pt.switch(x < 0.0, left, right)


def log_sinh(h):
    r""":math:`\log\sinh h` for :math:`h > 0`, without overflow: :math:`h + \log(1 - e^{-2h}) - \log 2`."""
    h = _f64(h)
    return h + pt.log1mexp(-2.0 * h) - _LOG2


def log_tanh(h):
    r""":math:`\log\tanh h` for :math:`h > 0`: :math:`\log(1 - e^{-2h}) - \log(1 + e^{-2h})`."""
    h = _f64(h)
    return pt.log1mexp(-2.0 * h) - pt.softplus(-2.0 * h)


def log_z_discrete_gaussian(sigma):
    r""":math:`\log\sum_k e^{-k^2/(2\sigma^2)}` (module docstring of :mod:`pymc_dpnoise.noise`)."""
    sigma = _f64(sigma)
    big = pt.maximum(sigma, 1.0)
    c = 2.0 * math.pi**2 * big * big
    poisson = _LOG_SQRT_2PI + pt.log(big) + pt.log1p(2.0 * pt.exp(-c) + 2.0 * pt.exp(-4.0 * c))
    small = pt.minimum(sigma, 1.0)
    k = pt.arange(1, 11, dtype="float64")
    terms = -(k**2) / (2.0 * small[..., None] ** 2)
    direct = pt.log1p(2.0 * pt.sum(pt.exp(terms), axis=-1))
    return pt.switch(sigma >= 1.0, poisson, direct)


def _is_integer(x):
    return pt.eq(x, pt.round(x))


def noise_logp(kind, x, param):
    """Log pmf (discrete kinds) or log pdf of the noise ``kind`` at ``x``."""
    x, p = _f64(x), _f64(param)
    if kind == "laplace":
        return -pt.abs(x) / p - pt.log(2.0 * p)
    if kind == "gaussian":
        return -0.5 * (x / p) ** 2 - pt.log(p) - _LOG_SQRT_2PI
    if kind == "discrete_laplace":
        res = log_tanh(0.5 / p) - pt.abs(x) / p
    elif kind == "rounded_laplace":
        h = 0.5 / p
        res = pt.switch(pt.eq(x, 0.0), pt.log1mexp(-h), log_sinh(h) - pt.abs(x) / p)
    elif kind == "discrete_gaussian":
        res = -0.5 * (x / p) ** 2 - log_z_discrete_gaussian(p)
    else:
        raise ValueError(f"unknown noise kind {kind!r}")
    return pt.switch(_is_integer(x), res, -np.inf)


def _laplace_logcdf(x, b):
    neg = pt.minimum(x, 0.0)
    pos = pt.maximum(x, 0.0)
    return pt.switch(x < 0.0, neg / b - _LOG2, pt.log1p(-0.5 * pt.exp(-pos / b)))


def _dg_tail_width(param):
    """Static half-width of the discrete Gaussian CDF window, from a constant ``sigma``."""
    from .noisy_counts import known_value

    v = known_value(param)
    if v is None:
        raise ValueError(
            "the discrete Gaussian CDF needs a constant `sigma` (its sums are over a window "
            "sized from sigma when the graph is built)"
        )
    return math.ceil(math.sqrt(2.0 * TAIL_NATS) * float(np.max(v))) + 2


def noise_logcdf(kind, x, param):
    r""":math:`\log P(N \le x)` of the noise ``kind`` (for the discrete kinds at :math:`\lfloor x\rfloor`)."""
    x, p = _f64(x), _f64(param)
    if kind == "laplace":
        return _laplace_logcdf(x, p)
    if kind == "gaussian":
        return log_ndtr(x / p)
    k = pt.floor(x)
    if kind == "rounded_laplace":
        return _laplace_logcdf(k + 0.5, p)
    if kind == "discrete_laplace":
        # k < 0: a^{|k|}/(1+a); k >= 0: 1 - a^{k+1}/(1+a), a = e^{-1/b}
        log1pa = pt.softplus(-1.0 / p)
        neg = pt.minimum(k, 0.0)
        pos = pt.maximum(k, 0.0)
        return pt.switch(k < 0.0, neg / p - log1pa, pt.log1mexp(-(pos + 1.0) / p - log1pa))
    if kind == "discrete_gaussian":
        width = _dg_tail_width(param)
        # P(N <= j) for j = min(k, -k-1) <= -1: a sum over j, j-1, ..., j-width
        j = pt.minimum(k, -k - 1.0)
        i = pt.arange(width + 1, dtype="float64")
        terms = -((j[..., None] - i) ** 2) / (2.0 * p[..., None] ** 2)
        tail = pt.logsumexp(terms, axis=-1) - log_z_discrete_gaussian(p)
        return pt.switch(k < 0.0, tail, pt.log1mexp(pt.minimum(tail, _TINY)))
    raise ValueError(f"unknown noise kind {kind!r}")
