"""JAX kernels of :mod:`pymc_dpnoise.math._special` (vectorised; imported only by the JAX linker).

Same algorithms as the Numba kernels: Loader's saddle-point pmf, the Lentz continued fractions
of the incomplete beta / gamma functions and the lower incomplete gamma series.  Loops are
``lax.while_loop`` over the whole vector, run until every element has converged; finished
elements are frozen.  Branches are computed everywhere and selected with ``where`` (forward
values only: the gradients are PyTensor graphs of the op outputs).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import gammaln

from ._jax_dispatch import require_x64

_LOG_2PI = math.log(2.0 * math.pi)
_FPMIN = 1e-300
_EPS = 4e-16
_MAXIT = 1_000_000


def _log1mexp(x):
    x = jnp.minimum(x, 0.0)
    return jnp.where(x > -0.6931471805599453, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))


def _stirlerr(n):
    n_small = jnp.clip(n, 1.0, 15.0)
    small = gammaln(n_small + 1.0) - (n_small + 0.5) * jnp.log(n_small) + n_small - 0.5 * _LOG_2PI
    nb = jnp.maximum(n, 16.0)
    nn = nb * nb
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    big = (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / nb
    return jnp.where(n <= 15.0, small, big)


def _bd0(x, m, log_m):
    near = jnp.abs(x - m) < 0.1 * (x + m)
    denom = jnp.where(near, x + m, 1.0)
    v = jnp.where(near, (x - m) / denom, 0.0)
    s = (x - m) * v
    ej = 2.0 * x * v
    v2 = v * v
    for j in range(1, 12):  # |v| < 0.1: term j is below 1e-2j of the first
        ej = ej * v2
        s = s + ej / (2 * j + 1)
    xs = jnp.where(x > 0, x, 1.0)
    far = jnp.where(x > 0, x * (jnp.log(xs) - log_m), 0.0) + m - x
    return jnp.where(near & (x > 0), s, far)


def log_binom_pmf(k, n, lq):
    kk = jnp.clip(k, 1.0, jnp.maximum(n - 1.0, 1.0))
    log_n = jnp.log(jnp.maximum(n, 1.0))
    log_nq = log_n - jax.nn.softplus(-lq)
    log_np = log_n - jax.nn.softplus(lq)
    lc = (
        _stirlerr(jnp.maximum(n, 1.0))
        - _stirlerr(kk)
        - _stirlerr(jnp.maximum(n - kk, 1.0))
        - _bd0(kk, jnp.exp(log_nq), log_nq)
        - _bd0(n - kk, jnp.exp(log_np), log_np)
    )
    mid = lc - 0.5 * (_LOG_2PI + jnp.log(kk) + jnp.log1p(-kk / jnp.maximum(n, 1.0)))
    out = jnp.where(k == 0, -n * jax.nn.softplus(lq), mid)
    out = jnp.where(k == n, -n * jax.nn.softplus(-lq), out)
    return jnp.where((k < 0) | (k > n), -jnp.inf, out)


def _fix(z):
    return jnp.where(jnp.abs(z) < _FPMIN, _FPMIN, z)


def _betacf(a, b, x):
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    d = 1.0 / _fix(1.0 - qab * x / qap)
    state = (jnp.ones_like(x), d, d, jnp.zeros(x.shape, bool), 1)

    def cond(st):
        return (~jnp.all(st[3])) & (st[4] < _MAXIT)

    def body(st):
        c, d, h, done, m = st
        m2 = 2.0 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d1 = 1.0 / _fix(1.0 + aa * d)
        c1 = _fix(1.0 + aa / c)
        h1 = h * d1 * c1
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d2 = 1.0 / _fix(1.0 + aa * d1)
        c2 = _fix(1.0 + aa / c1)
        de = d2 * c2
        h2 = h1 * de
        keep = done
        return (
            jnp.where(keep, c, c2),
            jnp.where(keep, d, d2),
            jnp.where(keep, h, h2),
            done | (jnp.abs(de - 1.0) < _EPS),
            m + 1,
        )

    return lax.while_loop(cond, body, state)[2]


def log_binom_cdf_ratio(k, n, lq):
    a = jnp.maximum(n - k, 1.0)
    b = jnp.maximum(k, 0.0) + 1.0
    x = jax.nn.sigmoid(-lq)
    q = jax.nn.sigmoid(lq)
    tail = x < (a + 1.0) / (a + b + 2.0)
    # one continued fraction per element: I_x(a, b) on the tail side, I_q(b, a) otherwise
    h = _betacf(jnp.where(tail, a, b), jnp.where(tail, b, a), jnp.where(tail, x, q))
    r_tail = -jax.nn.softplus(-lq) + jnp.log(h)
    log_sf = log_binom_pmf(k + 1.0, n, lq) - jax.nn.softplus(lq) + jnp.log(h)
    r_bulk = _log1mexp(log_sf) - log_binom_pmf(k, n, lq)
    out = jnp.where(tail, r_tail, r_bulk)
    out = jnp.where(k <= 0, 0.0, out)
    return jnp.where(k >= n, n * jax.nn.softplus(-lq), out)


def log_poisson_pmf(k, lmu):
    mu = jnp.exp(lmu)
    kk = jnp.maximum(k, 1.0)
    mid = -_stirlerr(kk) - _bd0(kk, mu, lmu) - 0.5 * (_LOG_2PI + jnp.log(kk))
    out = jnp.where(k == 0, -mu, mid)
    return jnp.where(k < 0, -jnp.inf, out)


def _gammacf(a, x):
    b0 = x + 1.0 - a
    d = 1.0 / b0
    state = (jnp.full_like(x, 1.0 / _FPMIN), d, d, b0, jnp.zeros(x.shape, bool), 1)

    def cond(st):
        return (~jnp.all(st[4])) & (st[5] < _MAXIT)

    def body(st):
        c, d, h, b, done, i = st
        an = -i * (i - a)
        b1 = b + 2.0
        d1 = 1.0 / _fix(an * d + b1)
        c1 = _fix(b1 + an / c)
        de = d1 * c1
        keep = done
        return (
            jnp.where(keep, c, c1),
            jnp.where(keep, d, d1),
            jnp.where(keep, h, h * de),
            jnp.where(keep, b, b1),
            done | (jnp.abs(de - 1.0) < _EPS),
            i + 1,
        )

    return lax.while_loop(cond, body, state)[2]


def _series_m1(k, mu, lower):
    """sum_{j>=1} of the lower-gamma series (lower False) or of k!/((k-j)! mu^j) (lower True)."""
    state = (jnp.zeros_like(mu), jnp.ones_like(mu), jnp.zeros(mu.shape, bool), 1)

    def cond(st):
        return (~jnp.all(st[2])) & (st[3] < _MAXIT)

    def body(st):
        s, t, done, j = st
        if lower:
            t1 = t * jnp.maximum(k - (j - 1), 0.0) / mu
        else:
            t1 = t * mu / (k + 1.0 + j)
        s1 = s + t1
        return (
            jnp.where(done, s, s1),
            jnp.where(done, t, t1),
            done | (t1 <= s1 * 1e-17),
            j + 1,
        )

    return lax.while_loop(cond, body, state)[0]


def _poisson_parts(k, lmu, lower):
    """Continued fraction and series, each evaluated only where used (dummy arguments elsewhere)."""
    mu = jnp.exp(jnp.minimum(lmu, 700.0))
    kk = jnp.maximum(k, 0.0)
    use_cf = mu >= kk + 2.0
    use_sum = lower & (mu > 2.0 * (kk + 1.0))
    cf_only = use_cf & ~use_sum
    h = _gammacf(kk + 1.0, jnp.where(cf_only, mu, kk + 3.0))
    s = _series_m1(kk, jnp.where(use_cf, 1.0, mu), False)
    f = _series_m1(kk, jnp.where(use_sum, mu, 2.0 * kk + 3.0), True) if lower else None
    return mu, kk, use_cf, use_sum, h, s, f


def log_poisson_ratio_lower(k, lmu):
    _, kk, use_cf, use_sum, h, s, f = _poisson_parts(k, lmu, True)
    lm = jnp.minimum(lmu, 700.0)
    r_cf = lm + jnp.log(h)
    log_sf = log_poisson_pmf(kk + 1.0, lm) + jnp.log1p(s)
    r_ser = _log1mexp(log_sf) - log_poisson_pmf(kk, lm)
    out = jnp.where(use_sum, jnp.log1p(f), jnp.where(use_cf, r_cf, r_ser))
    out = jnp.where(lmu > 700.0, jnp.log1p(kk * jnp.exp(-lmu)), out)
    return jnp.where(k <= 0, 0.0, out)


def log_poisson_ratio_upper(k, lmu):
    _, kk, use_cf, _, h, s, _ = _poisson_parts(k, lmu, False)
    log_cdf = lmu + log_poisson_pmf(kk, lmu) + jnp.log(h)
    r_cf = _log1mexp(log_cdf) - log_poisson_pmf(kk + 1.0, lmu)
    out = jnp.where(use_cf, r_cf, jnp.log1p(s))
    return jnp.where(k < 0, jnp.exp(lmu), out)


_KERNELS = {
    "binom_pmf": log_binom_pmf,
    "binom_ratio": log_binom_cdf_ratio,
    "pois_pmf": log_poisson_pmf,
    "pois_lower": log_poisson_ratio_lower,
    "pois_upper": log_poisson_ratio_upper,
}


def _derivative(kind, args, r):
    """d output / d last input: the same closed forms as ``_CountsOp.pullback``."""
    if kind == "binom_pmf":
        k, n, lq = args
        return k - n * jax.nn.sigmoid(lq)
    if kind == "binom_ratio":
        k, n, lq = args
        return -k * jax.nn.sigmoid(-lq) - (n - k) * jax.nn.sigmoid(lq) * jnp.expm1(-r)
    k, lmu = args
    lm = jnp.minimum(lmu, 700.0)
    if kind == "pois_pmf":
        return k - jnp.exp(lm)
    if kind == "pois_lower":
        return jnp.where(lmu > 700.0, 0.0, -jnp.exp(lm) * jnp.expm1(-r) - k)
    return jnp.exp(lm) + (k + 1.0) * jnp.expm1(-r)


def differentiable(kind):
    """The kernel with a ``custom_jvp`` (JAX cannot differentiate its ``while_loop``s; the
    numpyro sampler differentiates the JAX graph itself, not PyTensor's gradient graph)."""
    require_x64("the count log-pmf ops' JAX implementation")
    kernel = _KERNELS[kind]

    # inputs of length 1 (a parameter against a grid) are repeated, as by the Numba kernel;
    # the tangent of such an input broadcasts, so its cotangent is the sum over the grid
    @jax.custom_jvp
    def f(*args):
        return kernel(*jnp.broadcast_arrays(*args))

    @f.defjvp
    def f_jvp(primals, tangents):
        primals = jnp.broadcast_arrays(*primals)
        r = kernel(*primals)
        return r, _derivative(kind, primals, r) * tangents[-1]

    # jitted: PyMC evaluates the jaxified model log density once without ``jit`` (the
    # initial point check of ``pm.sample(nuts_sampler="numpyro")``), where each primitive
    # of an unjitted kernel is compiled on its own (~40 programs for the count model)
    return jax.jit(f)
