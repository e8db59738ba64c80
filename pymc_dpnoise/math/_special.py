r"""Log-space binomial and Poisson pmfs and CDF ratios, with Numba and JAX kernels.

The exact likelihood of a Laplace-noised count (:mod:`pymc_dpnoise.math.counts`) needs the
*log* of binomial and Poisson CDFs far in their tails (values like :math:`10^{-10^6}`), to
about 1e-13 relative, and exact gradients with respect to the success probability or the
rate.  PyTensor's ``betainc`` / ``gammaincc`` return the CDF itself (it underflows to 0),
and ``gammaln`` differences lose ~1e-8 absolute at :math:`n = 10^7`.  This module adds three
small elementwise ops:

``log_binom_pmf(k, n, logit_q)``
    :math:`\log \binom{n}{k} q^k (1-q)^{n-k}` by Loader's saddle-point form
    (``stirlerr`` and the deviance ``bd0``; C. Loader, *Fast and accurate computation of
    binomial probabilities*, 2000), accurate to a few ulp at any :math:`n`.
``log_binom_cdf_ratio(k, n, logit_q)``
    :math:`\log\bigl[F(k; n, q) / \mathrm{pmf}(k; n, q)\bigr]` for integers
    :math:`0 \le k \le n`.  On the tail side (:math:`1-q < (n-k+1)/(n+3)`) this is
    :math:`\log q + \log h` with :math:`h` the continued fraction of the regularised
    incomplete beta :math:`I_{1-q}(n-k, k+1)` (modified Lentz, Numerical Recipes §6.4); on the
    other side :math:`F = 1 - \bar F` with :math:`\bar F` from the mirrored fraction, in logs.
    Dividing by the pmf removes the huge common factor, so the ratio is an O(1)-to-moderate
    number that never underflows.
``log_poisson_pmf(k, log_mu)`` and ``log_poisson_cdf_ratio(k, log_mu, upper)``
    The same for Poisson: :math:`\log[F(k;\mu)/\mathrm{pmf}(k;\mu)]` (``upper=False``) and
    :math:`\log[\bar F(k;\mu)/\mathrm{pmf}(k+1;\mu)]` (``upper=True``), from the series of the
    lower and the continued fraction of the upper regularised incomplete gamma function.

Parameters are the logit of :math:`q` and the log of :math:`\mu` (so :math:`q` near 0 or 1
and huge or tiny rates keep full relative precision).  ``k`` and ``n`` are integers held as
float64; they are data, so the ops are not differentiable with respect to them (disconnected
gradients).  The gradients with respect to ``logit_q`` / ``log_mu`` are closed forms of the
outputs:

.. math::

   \partial_\ell \log\frac{F}{\mathrm{pmf}_k} = n q - k - (n-k)\,q\,e^{-r},\qquad
   \partial_\lambda \log\frac{F}{\mathrm{pmf}_k} = \mu - k - \mu e^{-r},\qquad
   \partial_\lambda \log\frac{\bar F}{\mathrm{pmf}_{k+1}} = \mu - (k+1) + (k+1) e^{-r},

with :math:`r` the op's output, from :math:`\partial_q F(k;n,q) = -n\binom{n-1}{k}q^k(1-q)^{n-1-k}`
and :math:`\partial_\mu F(k;\mu) = -\mathrm{pmf}(k;\mu)`.

Backends: the ``perform`` method (Python / C linkers) and the Numba linker run the same
``numba.njit`` kernels; JAX gets vectorised ``jax.numpy`` kernels with ``lax.while_loop``
for the continued fractions.  The tests compare them against mpmath / brute-force sums.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ._jax_dispatch import when_jax_dispatch_loads
from ._jit import helper as _helper
from ._jit import njit as _njit
from ._op_support import register_numba_kernel

__all__ = [
    "log_binom_cdf_ratio",
    "log_binom_pmf",
    "log_poisson_cdf_ratio",
    "log_poisson_pmf",
]

_LOG_2PI = math.log(2.0 * math.pi)
_LOG_SQRT_2PI = 0.5 * _LOG_2PI
_FPMIN = 1e-300
_EPS = 4e-16  # 2 ulp: |de - 1| < 1 ulp can fail forever in rounding
_MAXIT = 1_000_000

# ---------------------------------------------------------------------------------------------
# Scalar kernels (Numba; also used by ``perform``)
# ---------------------------------------------------------------------------------------------


@_helper
def _softplus(x):
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@_helper
def _log1mexp(x):
    """log(1 - exp(x)) for x <= 0."""
    if x > -0.6931471805599453:
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


@_helper
def _stirlerr(n):
    """log(n!) - log(sqrt(2 pi n) (n/e)^n) for n > 0 (Loader 2000)."""
    if n <= 15.0:
        return math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - _LOG_SQRT_2PI
    s0 = 1.0 / 12.0
    s1 = 1.0 / 360.0
    s2 = 1.0 / 1260.0
    s3 = 1.0 / 1680.0
    s4 = 1.0 / 1188.0
    nn = n * n
    if n > 500.0:
        return (s0 - s1 / nn) / n
    if n > 80.0:
        return (s0 - (s1 - s2 / nn) / nn) / n
    if n > 35.0:
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


@_helper
def _bd0(x, m, log_m):
    """Deviance term x log(x/m) + m - x, without cancellation when x ~ m (Loader 2000)."""
    if x == 0.0:
        return m
    if abs(x - m) < 0.1 * (x + m):
        v = (x - m) / (x + m)
        s = (x - m) * v
        ej = 2.0 * x * v
        v2 = v * v
        for j in range(1, 1000):
            ej *= v2
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
        return s
    return x * (math.log(x) - log_m) + m - x


@_helper
def _log_binom_pmf(k, n, lq):
    if k < 0.0 or k > n:
        return -np.inf
    if k == 0.0:
        return -n * _softplus(lq)
    if k == n:
        return -n * _softplus(-lq)
    log_n = math.log(n)
    log_nq = log_n - _softplus(-lq)
    log_np = log_n - _softplus(lq)
    lc = (
        _stirlerr(n)
        - _stirlerr(k)
        - _stirlerr(n - k)
        - _bd0(k, math.exp(log_nq), log_nq)
        - _bd0(n - k, math.exp(log_np), log_np)
    )
    return lc - 0.5 * (_LOG_2PI + math.log(k) + math.log1p(-k / n))


@_helper
def _lentz_step(an, bn, c, d, h):
    """One step of the modified Lentz method (NR 5.2) for a continued fraction with partial
    numerator ``an`` and denominator ``bn``: the new ``(c, d, h)`` (values of c and d within
    _FPMIN of 0 replaced by _FPMIN; ``h`` the convergent) and whether h has converged."""
    d = bn + an * d
    if abs(d) < _FPMIN:
        d = _FPMIN
    c = bn + an / c
    if abs(c) < _FPMIN:
        c = _FPMIN
    d = 1.0 / d
    de = d * c
    return c, d, h * de, abs(de - 1.0) < _EPS


@_helper
def _betacf(a, b, x):
    """Continued fraction of I_x(a, b) (modified Lentz, NR 6.4): I = x^a(1-x)^b/(a B) * h."""
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _FPMIN:
        d = _FPMIN
    d = 1.0 / d
    h = d
    for m in range(1, _MAXIT):
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        c, d, h, _ = _lentz_step(aa, 1.0, c, d, h)
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        c, d, h, done = _lentz_step(aa, 1.0, c, d, h)
        if done:
            break
    return h


@_helper
def _log_binom_cdf_ratio(k, n, lq):
    """log(F(k; n, q) / pmf(k; n, q)) for integers 0 <= k <= n, q = sigmoid(lq)."""
    if k <= 0.0:
        return 0.0
    if k >= n:
        return n * _softplus(-lq)
    a = n - k
    b = k + 1.0
    x = 1.0 / (1.0 + math.exp(lq))  # 1 - q
    if x < (a + 1.0) / (a + b + 2.0):
        # F = I_x(n-k, k+1) = q pmf(k) h
        return -_softplus(-lq) + math.log(_betacf(a, b, x))
    # 1 - F = I_q(k+1, n-k) = (1 - q) pmf(k+1) h'
    q = 1.0 / (1.0 + math.exp(-lq))
    log_sf = _log_binom_pmf(k + 1.0, n, lq) - _softplus(lq) + math.log(_betacf(b, a, q))
    return _log1mexp(min(log_sf, 0.0)) - _log_binom_pmf(k, n, lq)


@_helper
def _log_poisson_pmf(k, lmu):
    if k < 0.0:
        return -np.inf
    mu = math.exp(lmu)
    if k == 0.0:
        return -mu
    return -_stirlerr(k) - _bd0(k, mu, lmu) - 0.5 * (_LOG_2PI + math.log(k))


@_helper
def _gammacf(a, x):
    """Continued fraction of Q(a, x) (NR 6.2): Q = e^{-x} x^a / Gamma(a) * h."""
    b = x + 1.0 - a
    c = 1.0 / _FPMIN
    d = 1.0 / b
    h = d
    for i in range(1, _MAXIT):
        an = -i * (i - a)
        b += 2.0
        c, d, h, done = _lentz_step(an, b, c, d, h)
        if done:
            break
    return h


@_helper
def _gammaser_m1(k, mu):
    """sum_{j>=1} mu^j / ((k+2)...(k+1+j)) = P(k+1, mu) / pmf(k+1; mu) - 1, for mu < k + 2."""
    s = 0.0
    t = 1.0
    for j in range(1, _MAXIT):
        t *= mu / (k + 1.0 + j)
        s += t
        if t <= s * 1e-17:
            break
    return s


@_helper
def _poisson_lower_sum_m1(k, mu):
    """sum_{j=1}^{k} k!/((k-j)! mu^j) = F(k; mu)/pmf(k; mu) - 1, for mu > 2(k+1)."""
    s = 0.0
    t = 1.0
    j = 0.0
    while j < k:
        t *= (k - j) / mu
        s += t
        j += 1.0
        if t <= s * 1e-17:
            break
    return s


@_helper
def _log_poisson_cdf_ratio(k, lmu, upper):
    """log(F(k)/pmf(k)) (upper False) or log((1 - F(k))/pmf(k+1)) (upper True)."""
    if not upper:
        if k <= 0.0:
            return 0.0
        mu = math.exp(lmu)
        if mu > 2.0 * (k + 1.0):  # finite sum, terms fall by k/mu < 1/2; r exact when tiny
            return math.log1p(_poisson_lower_sum_m1(k, mu))
        if mu >= k + 2.0:
            return lmu + math.log(_gammacf(k + 1.0, mu))
        log_sf = _log_poisson_pmf(k + 1.0, lmu) + math.log1p(_gammaser_m1(k, mu))
        return _log1mexp(min(log_sf, 0.0)) - _log_poisson_pmf(k, lmu)
    mu = math.exp(lmu)
    if k < 0.0:
        return mu
    if mu < k + 2.0:
        return math.log1p(_gammaser_m1(k, mu))
    log_cdf = lmu + _log_poisson_pmf(k, lmu) + math.log(_gammacf(k + 1.0, mu))
    return _log1mexp(min(log_cdf, 0.0)) - _log_poisson_pmf(k + 1.0, lmu)


@_helper
def _length(*sizes):
    """The broadcast length of vectors of length 1 or n (0 if any is empty): the length of a
    kernel's outputs, whose inputs it reads as ``x[i * _stride(x)]``."""
    m = 1
    for s in sizes:
        if s == 0:
            return 0
        if s != 1:
            if m != 1 and m != s:
                raise ValueError("kernel inputs of lengths that do not broadcast")
            m = s
    return m


@_helper
def _stride(x):
    """1 for a vector of the outputs' length, 0 for one of length 1 (repeated)."""
    return 1 if x.shape[0] > 1 else 0


@_njit
def _vec_binom_pmf(k, n, lq):
    m = _length(k.shape[0], n.shape[0], lq.shape[0])
    a, b, c = _stride(k), _stride(n), _stride(lq)
    out = np.empty(m)
    for i in range(m):
        out[i] = _log_binom_pmf(k[i * a], n[i * b], lq[i * c])
    return out


@_njit
def _vec_binom_ratio(k, n, lq):
    m = _length(k.shape[0], n.shape[0], lq.shape[0])
    a, b, c = _stride(k), _stride(n), _stride(lq)
    out = np.empty(m)
    for i in range(m):
        out[i] = _log_binom_cdf_ratio(k[i * a], n[i * b], lq[i * c])
    return out


@_njit
def _vec_poisson_pmf(k, lmu):
    m = _length(k.shape[0], lmu.shape[0])
    a, c = _stride(k), _stride(lmu)
    out = np.empty(m)
    for i in range(m):
        out[i] = _log_poisson_pmf(k[i * a], lmu[i * c])
    return out


@_njit
def _vec_poisson_ratio_lower(k, lmu):
    m = _length(k.shape[0], lmu.shape[0])
    a, c = _stride(k), _stride(lmu)
    out = np.empty(m)
    for i in range(m):
        out[i] = _log_poisson_cdf_ratio(k[i * a], lmu[i * c], False)
    return out


@_njit
def _vec_poisson_ratio_upper(k, lmu):
    m = _length(k.shape[0], lmu.shape[0])
    a, c = _stride(k), _stride(lmu)
    out = np.empty(m)
    for i in range(m):
        out[i] = _log_poisson_cdf_ratio(k[i * a], lmu[i * c], True)
    return out


# ---------------------------------------------------------------------------------------------
# Ops (1-d: length n, or length 1 repeated; the public wrappers broadcast and reshape)
# ---------------------------------------------------------------------------------------------


class _CountsOp(Op):
    """Elementwise kernel over float64 vectors of one length n, where an input of static
    length 1 is repeated (a parameter against a grid of counts); differentiable in the last
    input.  ``ref`` is an input whose length is the output's (-1: every input has length 1)."""

    __props__ = ("kind", "ref")
    nin = {"binom_pmf": 3, "binom_ratio": 3, "pois_pmf": 2, "pois_lower": 2, "pois_upper": 2}

    def __init__(self, kind, ref=0):
        if kind not in self.nin:
            raise ValueError(kind)
        self.kind = kind
        self.ref = int(ref)
        super().__init__()

    def make_node(self, *inputs):
        if len(inputs) != self.nin[self.kind]:
            raise TypeError(f"{self.kind} takes {self.nin[self.kind]} inputs")
        inputs = [pt.cast(pt.as_tensor_variable(x), "float64") for x in inputs]
        if any(x.ndim != 1 for x in inputs):
            raise TypeError("_CountsOp takes vectors")
        if self.ref < 0 and any(x.type.shape != (1,) for x in inputs):
            raise TypeError("_CountsOp(ref=-1) takes vectors of static length 1")
        shape = (1,) if self.ref < 0 else inputs[self.ref].type.shape
        return Apply(self, inputs, [pt.tensor(dtype="float64", shape=shape)])

    def kernel(self):
        return {
            "binom_pmf": _vec_binom_pmf,
            "binom_ratio": _vec_binom_ratio,
            "pois_pmf": _vec_poisson_pmf,
            "pois_lower": _vec_poisson_ratio_lower,
            "pois_upper": _vec_poisson_ratio_upper,
        }[self.kind]

    def perform(self, node, inputs, outputs):
        args = [np.ascontiguousarray(x, dtype=np.float64) for x in inputs]
        outputs[0][0] = self.kernel()(*args)

    def infer_shape(self, node, shapes):
        return [(1,) if self.ref < 0 else shapes[self.ref]]

    def connection_pattern(self, node):
        return [[False]] * (len(node.inputs) - 1) + [[True]]

    def pullback(self, inputs, outputs, output_grads):
        (r,) = outputs
        (g,) = output_grads
        if self.kind == "binom_pmf":
            k, n, lq = inputs
            d = k - n * pt.sigmoid(lq)
        elif self.kind == "binom_ratio":
            k, n, lq = inputs
            # n q - k - (n-k) q e^{-r}, rearranged so that k = 0 (r = 0) gives exactly 0
            d = -k * pt.sigmoid(-lq) - (n - k) * pt.sigmoid(lq) * pt.expm1(-r)
        elif self.kind == "pois_pmf":
            k, lmu = inputs
            d = k - pt.exp(lmu)
        elif self.kind == "pois_lower":
            k, lmu = inputs
            # mu (1 - e^{-r}) - k; r = log(1 + k/mu + ...) is exact to 1 ulp when tiny, so
            # mu (1 - e^{-r}) -> k; above mu = e^700 the limit is 0
            lm = pt.minimum(lmu, 700.0)
            d = pt.switch(lmu > 700.0, 0.0, -pt.exp(lm) * pt.expm1(-r) - k)
        else:
            k, lmu = inputs
            d = pt.exp(pt.minimum(lmu, 700.0)) + (k + 1.0) * pt.expm1(-r)
        gd = g * d
        if inputs[-1].type.shape == (1,) and self.ref != len(inputs) - 1:
            gd = pt.sum(gd, keepdims=True)  # the repeated parameter: a 1-d sum
        return [disconnected_type() for _ in inputs[:-1]] + [gd]


def _apply(kind, *args):
    args = [pt.cast(pt.as_tensor_variable(a), "float64") for a in args]
    full = pt.broadcast_arrays(*args)
    shape = full[0].shape
    # An argument of one element (the usual parameter: one success probability or log rate
    # against a window grid of counts) goes in as a vector of length 1 that the kernel
    # repeats, so that its gradient is a 1-d sum.  Broadcasting it to the grid instead puts
    # an Alloc in the graph (and, for an n-d grid, an n-d Sum in its gradient), which
    # PyTensor's Numba backend compiles with generic code, several times slower to compile
    # from empty caches than a 1-d Sum (benchmarks/results/cold_compile_parts.md).
    one = [all(d == 1 for d in a.type.shape) for a in args]
    ref = one.index(False) if False in one else -1
    flat = [a.reshape((1,)) if o else b.ravel() for a, b, o in zip(args, full, one, strict=True)]
    out = _CountsOp(kind, ref)(*flat)
    return out.reshape(shape, ndim=full[0].ndim)


def log_binom_pmf(k, n, logit_q):
    r"""Log binomial pmf :math:`\log\binom{n}{k}q^k(1-q)^{n-k}`, :math:`q = \sigma(\ell)`."""
    return _apply("binom_pmf", k, n, logit_q)


def log_binom_cdf_ratio(k, n, logit_q):
    r""":math:`\log[F(k; n, q)/\mathrm{pmf}(k; n, q)]` for integers :math:`0 \le k \le n`."""
    return _apply("binom_ratio", k, n, logit_q)


def log_poisson_pmf(k, log_mu):
    r"""Log Poisson pmf :math:`-\mu + k\log\mu - \log k!` (Loader's form)."""
    return _apply("pois_pmf", k, log_mu)


def log_poisson_cdf_ratio(k, log_mu, upper=False):
    r""":math:`\log[F(k;\mu)/\mathrm{pmf}(k;\mu)]`, or with ``upper=True``
    :math:`\log[(1-F(k;\mu))/\mathrm{pmf}(k+1;\mu)]` (``k >= -1``)."""
    return _apply("pois_upper" if upper else "pois_lower", k, log_mu)


# ---------------------------------------------------------------------------------------------
# Numba and JAX registrations
# ---------------------------------------------------------------------------------------------


def _register_jax():
    try:
        from pytensor.link.jax.dispatch import jax_funcify
    except ImportError:  # pragma: no cover
        return False

    @jax_funcify.register(_CountsOp)
    def _jax_counts(op, **kwargs):
        from . import _special_jax as J

        return J.differentiable(op.kind)

    return True


_NUMBA_REGISTERED = register_numba_kernel(_CountsOp, __file__, lambda op, node: op.kernel())
when_jax_dispatch_loads(_register_jax)  # JAX is imported only by its users
