r"""Log pmf / pdf and log CDF of the noise specs of :mod:`pymc_dpnoise.noise`, in PyTensor.

One function per noise spec and quantity (the specs' methods call them): the continuous
Laplace (scale :math:`b`), the discrete Laplace (:math:`P(k) = \tanh(1/2b)\,e^{-|k|/b}`), the
rounded Laplace (:math:`P(j) = \sinh(1/2b)\,e^{-|j|/b}`, :math:`j \ne 0`; :math:`1 - e^{-1/2b}`
at 0), the Gaussian and the discrete Gaussian (:math:`P(k) = e^{-k^2/2\sigma^2}/Z(\sigma)`).
The derivations are in the docstring of :mod:`pymc_dpnoise.noise`.  The pmfs give
:math:`-\infty` off the integers; the CDFs of the integer kinds are taken at
:math:`\lfloor x\rfloor`.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.traversal import graph_inputs
from pytensor.raise_op import Assert

from ..validation import static_value

__all__ = [
    "data_bounded",
    "discrete_gaussian_logcdf",
    "discrete_gaussian_logpmf",
    "discrete_laplace_logcdf",
    "discrete_laplace_logpmf",
    "gaussian_logcdf",
    "gaussian_logpdf",
    "laplace_logcdf",
    "laplace_logpdf",
    "log_dg_tail",
    "log_ndtr",
    "log_sinh",
    "log_tanh",
    "log_z_discrete_gaussian",
    "off_integers",
    "rounded_laplace_logcdf",
    "rounded_laplace_logpmf",
    "static_param",
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


def off_integers(x, res):
    """``res`` where ``x`` is an integer, else :math:`-\\infty` (a pmf off its support)."""
    return pt.switch(_is_integer(x), res, -np.inf)


def laplace_logpdf(x, b):
    """Log density of Laplace noise of scale ``b``."""
    x, b = _f64(x), _f64(b)
    return -pt.abs(x) / b - pt.log(2.0 * b)


def gaussian_logpdf(x, sigma):
    """Log density of :math:`\\mathcal N(0, \\sigma^2)` noise."""
    x, s = _f64(x), _f64(sigma)
    return -0.5 * (x / s) ** 2 - pt.log(s) - _LOG_SQRT_2PI


def discrete_laplace_logpmf(x, b):
    """Log pmf of discrete Laplace noise of scale ``b``."""
    x, b = _f64(x), _f64(b)
    return off_integers(x, log_tanh(0.5 / b) - pt.abs(x) / b)


def rounded_laplace_logpmf(x, b):
    """Log pmf of Laplace noise of scale ``b`` rounded to the nearest integer."""
    x, b = _f64(x), _f64(b)
    h = 0.5 / b
    return off_integers(x, pt.switch(pt.eq(x, 0.0), pt.log1mexp(-h), log_sinh(h) - pt.abs(x) / b))


def discrete_gaussian_logpmf(x, sigma):
    """Log pmf of discrete Gaussian noise of parameter ``sigma``."""
    x, s = _f64(x), _f64(sigma)
    return off_integers(x, -0.5 * (x / s) ** 2 - log_z_discrete_gaussian(s))


def _laplace_logcdf(x, b):
    neg = pt.minimum(x, 0.0)
    pos = pt.maximum(x, 0.0)
    return pt.switch(x < 0.0, neg / b - _LOG2, pt.log1p(-0.5 * pt.exp(-pos / b)))


#: a_k = B_{2k}(1/2) / (2k)! = (2^{1-2k} - 1) B_{2k} / (2k)!, k = 1..8
_EM_A = [
    float((2.0 ** (1 - 2 * k) - 1) * b / math.factorial(2 * k))
    for k, b in enumerate(
        [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510], start=1
    )
]
#: Euler-Maclaurin form of the discrete Gaussian tail from this sigma on (else direct sums)
_EM_MIN_SIGMA = 8.0


def known_value(x):
    """The value of ``x`` if its graph has no free inputs (constants only), else None.

    A shared variable (``pm.Data``) is not known: ``pm.set_data`` may change it after the graph
    was built (see :func:`build_value`)."""
    if not isinstance(x, Variable):
        return None if x is None else np.asarray(x, dtype="float64")
    v = static_value(x)
    if v is not None:
        return v
    if all(isinstance(i, Constant) for i in graph_inputs([x])):
        return np.asarray(x.eval(mode="FAST_COMPILE"))
    return None


def reads_data(x):
    """Whether the value of ``x`` depends on a shared variable (``pm.Data``)."""
    return isinstance(x, Variable) and any(isinstance(i, SharedVariable) for i in graph_inputs([x]))


def build_value(x):
    """The value of ``x`` now, if its graph has no free inputs: constants, and shared variables
    read at their current value (so a graph sized from it must be guarded by
    :func:`data_bounded`); else None."""
    v = known_value(x)
    if v is not None or not isinstance(x, Variable):
        return v
    if all(isinstance(i, Constant | SharedVariable) for i in graph_inputs([x])):
        return np.asarray(x.eval(mode="FAST_COMPILE"))
    return None


def data_bounded(param, name):
    """``param``, bounded above by its largest value when the graph is built if it reads
    ``pm.Data``.

    The sums of the Gaussian kinds (and of the integer kinds summed over their values) are
    sized from the largest value of the noise parameter when the graph is built, and hold every
    value up to it.  A parameter in ``pm.Data`` stays in the graph (``pm.set_data`` and
    nutpie's ``with_data`` change it), and a later value above the one the sums were sized
    for is refused where the graph is evaluated: an ``AssertionError`` naming the parameter
    (backends that drop assertions, e.g. JAX, get NaN instead: never a wrong number).
    """
    if not reads_data(param) or getattr(param.tag, "data_bounded", False):
        return param
    value = build_value(param)
    if value is None:
        return param
    bound = np.float64(np.max(value))
    param = param if param.dtype == "float64" else pt.cast(param, "float64")
    msg = (
        f"`{name}` is above {bound:g}, its largest value when the model was built: the "
        "likelihood's sums were sized for that value.  Build the model with the largest "
        f"`{name}` you will set in pm.Data (smaller values are exact)"
    )
    ok = param <= bound
    out = Assert(msg)(pt.switch(ok, param, np.nan), pt.all(ok))
    out.tag.data_bounded = True
    return out


def static_param(param, what, name="sigma"):
    """The value of a noise parameter that sizes a sum when the graph is built (a float64
    array; a ``pm.Data`` one at its current value, see :func:`data_bounded`); a clear error
    naming it if it is symbolic."""
    v = build_value(param)
    if v is None:
        raise ValueError(
            f"{what} needs a constant `{name}` (its sums are sized from it when the graph is "
            "built); got a symbolic value"
        )
    return np.asarray(v, dtype="float64")


def _static_sigma_max(param, what):
    return float(np.max(static_param(param, what)))


def log_dg_tail(j, sigma, sigma_max, min_abs=1.0):
    r"""Unnormalised lower tail of the discrete Gaussian, :math:`\log T(j) = \log\sum_{i \le j}
    e^{-i^2/2\sigma^2}`, at integers :math:`j \le -1` (full relative accuracy).

    Both forms below are analytic in :math:`j`: at a real :math:`j` they give
    :math:`\sum_{i \ge 0} e^{-(j - i)^2/2\sigma^2}`, the smooth continuation the clamp atoms'
    quadrature integrates (``min_abs = 0.5`` then admits :math:`j \le -\tfrac12`).

    ``sigma_max`` is a static upper bound of ``sigma``.  Two forms, both exact to rounding
    (checked against long-double sums over every term, :math:`\sigma` from 0.05 to
    :math:`10^4`, :math:`j` from -1 to :math:`-10^9`: relative error below 4e-15):

    * *direct*: :math:`T(j) = e^{-j^2/2\sigma^2}\sum_{i=0}^{M-1} e^{-(2|j| i + i^2)/2\sigma^2}`;
      the omitted terms are below :math:`e^{-46}` of the sum when :math:`M \ge \sqrt{92}\,\sigma + 2`
      (Gaussian decay from :math:`j`), or when :math:`M \ge 96` and
      :math:`|j + \tfrac12| > \sigma^2/2` (geometric decay, ratio below :math:`e^{-0.49}`);
    * *Euler-Maclaurin* (:math:`\sigma \ge 8`, :math:`|c| \le \sigma^2/2`, :math:`c = j +
      \tfrac12`, :math:`u = c/\sigma`): the midpoint form of the sum of :math:`f(t) =
      e^{-t^2/2\sigma^2}` over :math:`t \le j`,

      .. math::

          T(j) = \sigma\sqrt{2\pi}\,\Phi(u)\Bigl[1 - \frac{\varphi(u)}{\Phi(u)}
                 \sum_{k=1}^{8} \frac{B_{2k}(\tfrac12)}{(2k)!}\,
                 \frac{\mathrm{He}_{2k-1}(u)}{\sigma^{2k}}\Bigr] + R_8,

      (:math:`f^{(r)}(c) = (-1)^r \sigma^{-r}\mathrm{He}_r(u) f(c)`), with
      :math:`|R_8| / T(j) \lesssim 2\,(|u|/2\pi\sigma)^{16} \le 2\,(4\pi)^{-16}`.

    The cost is :math:`O(1)` in :math:`\sigma` (at most 96 terms), where summing the tail
    term by term costs :math:`O(\sigma)`.
    """
    j, sigma = _f64(j), _f64(sigma)
    if sigma_max >= _EM_MIN_SIGMA:
        terms = 96
    else:
        terms = max(math.ceil(math.sqrt(2.0 * TAIL_NATS) * sigma_max) + 2, 2)
    aj = pt.maximum(-j, min_abs)
    inv2s2 = 1.0 / (2.0 * sigma * sigma)
    # sum_{i < terms} e^{-(2|j| i + i^2)/2 sigma^2}, the first term (1) the largest, by
    # Horner (term i over term i-1 is e^{-(2|j| + 2i - 1)/2 sigma^2}): elementwise, where a
    # trailing axis of 96 terms on a window of 2e5 counts takes gigabytes, and nested so
    # that no single addition collects more than two operands
    total = pt.ones_like(aj)
    for i in range(terms - 1, 0, -1):
        total = 1.0 + pt.exp(-(2.0 * aj + np.float64(2 * i - 1)) * inv2s2) * total
    direct = -(aj * aj) * inv2s2 + pt.log(total)
    if sigma_max < _EM_MIN_SIGMA:
        return direct
    c = 0.5 - aj
    u = c / sigma
    w = 1.0 / (sigma * sigma)
    # sum_k a_k w^k He_{2k-1}(u), He_r by its recurrence
    he_prev, he = pt.ones_like(u), u
    corr = pt.zeros_like(u)
    wk = pt.ones_like(w)
    for r in range(1, 16):  # here he = He_r
        if r % 2 == 1:
            wk = wk * w
            corr = corr + np.float64(_EM_A[(r - 1) // 2]) * wk * he
        he_prev, he = he, u * he - np.float64(r) * he_prev
    lnd = log_ndtr(u)
    ratio = pt.exp(-0.5 * u * u - _LOG_SQRT_2PI - lnd)
    em = _LOG_SQRT_2PI + pt.log(sigma) + lnd + pt.log1p(pt.maximum(-ratio * corr, -0.5))
    use_em = (sigma >= _EM_MIN_SIGMA) & (pt.abs(c) <= 0.5 * sigma * sigma)
    return pt.switch(use_em, em, direct)


def laplace_logcdf(x, b):
    """:math:`\\log P(N \\le x)` of Laplace noise of scale ``b``."""
    return _laplace_logcdf(_f64(x), _f64(b))


def gaussian_logcdf(x, sigma):
    """:math:`\\log P(N \\le x)` of :math:`\\mathcal N(0, \\sigma^2)` noise."""
    return log_ndtr(_f64(x) / _f64(sigma))


def rounded_laplace_logcdf(x, b):
    """:math:`\\log P(N \\le \\lfloor x\\rfloor)` of rounded Laplace noise: the Laplace CDF at
    :math:`\\lfloor x\\rfloor + \\tfrac12`."""
    return _laplace_logcdf(pt.floor(_f64(x)) + 0.5, _f64(b))


def discrete_laplace_logcdf(x, b):
    """:math:`\\log P(N \\le k)`, :math:`k = \\lfloor x\\rfloor`, of discrete Laplace noise:
    :math:`a^{|k|}/(1+a)` for :math:`k < 0`, :math:`1 - a^{k+1}/(1+a)` for :math:`k \\ge 0`,
    :math:`a = e^{-1/b}`."""
    k, p = pt.floor(_f64(x)), _f64(b)
    log1pa = pt.softplus(-1.0 / p)
    neg = pt.minimum(k, 0.0)
    pos = pt.maximum(k, 0.0)
    return pt.switch(k < 0.0, neg / p - log1pa, pt.log1mexp(-(pos + 1.0) / p - log1pa))


def discrete_gaussian_logcdf(x, sigma):
    """:math:`\\log P(N \\le \\lfloor x\\rfloor)` of discrete Gaussian noise (``sigma`` a
    constant: the tail sum is sized from it)."""
    k, p = pt.floor(_f64(x)), data_bounded(_f64(sigma), "sigma")
    sigma_max = _static_sigma_max(p, "the discrete Gaussian CDF")
    # P(N <= j) for j = min(k, -k-1) <= -1, then the complement where k >= 0
    j = pt.minimum(k, -k - 1.0)
    tail = log_dg_tail(j, p, sigma_max) - log_z_discrete_gaussian(p)
    return pt.switch(k < 0.0, tail, pt.log1mexp(pt.minimum(tail, _TINY)))
