r"""JAX kernel of :class:`~pymc_dpnoise.math._normal_laplace.NormalLaplaceOp` (vectorised;
imported only by the JAX linker): the Numba kernel's formulas over whole vectors (both sides
of every branch computed at a safe argument and picked with ``where``), the value a
``jax.custom_jvp`` function whose JVP is the closed-form derivatives, jitted (PyMC evaluates
the jaxified log density once without ``jit``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from ._clipped_normal_jax import _erfcx_parts
from ._jax_dispatch import require_x64

_TINY_SD = 1e-150
_LOG2 = math.log(2.0)
_SQRT2 = math.sqrt(2.0)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_G_SERIES = 20.0


def _series(u):
    """(t, h/t - 1): the Numba kernel's ``_series``."""
    t = 1.0 / (2.0 * u * u)
    c = jnp.ones_like(u)
    rest = jnp.zeros_like(u)
    for n in range(2, 14):
        c = c * (-(2.0 * n - 1.0) * t)
        rest = rest + c
    return t, rest


def _h(u):
    t, rest = _series(u)
    return t * (1.0 + rest)


def _g(u, ecx):
    """(G(u), sqrt2 u G(u) - 1): the Numba kernel's ``_g``."""
    g_direct = _SQRT2 * (_INV_SQRT_PI / ecx - u)
    ub = jnp.maximum(u, _G_SERIES)
    t, rest = _series(ub)
    h = t * (1.0 + rest)
    series = u >= _G_SERIES
    g = jnp.where(series, _SQRT2 * ub * h / (1.0 - h), g_direct)
    q = jnp.where(series, (rest + h) / (1.0 - h), _SQRT2 * u * g_direct - 1.0)
    return g, q


def _near(x, s, b, sign):
    k = s / b
    u = (k - sign * x) / _SQRT2
    ecx = _erfcx_parts(u)[0]
    g, q = _g(u, ecx)
    val = (jnp.log(ecx) - _LOG2) - 0.5 * (x * x)
    return val, (-x + sign * g) / s, x * x / s - g * (1.0 / b + sign * x / s), q + sign * g * x


def _parts(y, mean, var, scale):
    y, mean, var, b = jnp.broadcast_arrays(y, mean, var, scale)
    floor_sd = _TINY_SD * (1.0 + b)
    use_var = var > floor_sd * floor_sd
    s = jnp.where(use_var, jnp.sqrt(jnp.where(use_var, var, 1.0)), floor_sd)
    r = y - mean
    a = jnp.abs(r)
    x = a / s
    k = s / b
    near = x < k
    # E1 on the near side (at a safe x where it is the far side), and on the far side
    n1 = _near(jnp.where(near, x, 0.0), s, b, 1.0)
    au = jnp.where(near, 0.0, (x - k) / _SQRT2)
    _, ec, ex = _erfcx_parts(au)
    rr = _INV_SQRT_2PI / (ex * (1.0 - 0.5 * ec))
    f1 = (
        k * (0.5 * k) - a / b + jnp.log1p(-0.5 * ec),
        -1.0 / b + rr / s,
        k / b - rr * (x / s + 1.0 / b),
        k * (x - k + rr) - 1.0,
    )
    e1, e1a, e1s, e1b = (jnp.where(near, p, q) for p, q in zip(n1, f1, strict=True))
    e2, e2a, e2s, e2b = _near(x, s, b, -1.0)
    # d = E1 - E2 as the Numba kernel forms it (asymptotic log erfcx where both are near)
    u1 = (k - x) / _SQRT2
    series = near & (u1 >= _G_SERIES)
    u1s = jnp.where(series, u1, _G_SERIES)
    u2s = jnp.where(series, (k + x) / _SQRT2, _G_SERIES)
    xs = jnp.where(series, x, 0.0)
    d_series = jnp.log1p(_SQRT2 * xs / u1s) + jnp.log1p(-_h(u1s)) - jnp.log1p(-_h(u2s))
    d = jnp.where(series, d_series, e1 - e2)
    ed = jnp.exp(-jnp.abs(d))
    pos = d >= 0.0
    p1 = jnp.where(pos, 1.0, ed) / (1.0 + ed)
    p2 = jnp.where(pos, ed, 1.0) / (1.0 + ed)

    def mix(q1, q2):
        return jnp.where(p2 == 0.0, q1, jnp.where(p1 == 0.0, q2, p1 * q1 + p2 * q2))

    da, ds, db = mix(e1a, e2a), mix(e1s, e2s), mix(e1b, e2b)
    lp = jnp.where(pos, e1, e2) + jnp.log1p(ed) - _LOG2 - jnp.log(b)
    sgn = jnp.sign(r)
    d_v = jnp.where(use_var, ds / (2.0 * s), 0.0)
    d_b = db / b + jnp.where(use_var, 0.0, ds * _TINY_SD)
    return lp, (sgn * da, -sgn * da, d_v, d_b)


def kernel(grad):
    """``f(value, mean, var, scale)`` -> log p (``grad=False``) or it and its derivatives."""
    require_x64("the normal-Laplace op's JAX implementation")

    @jax.custom_jvp
    def value(y, mean, var, scale):
        return _parts(y, mean, var, scale)[0]

    @value.defjvp
    def _value_jvp(primals, tangents):
        lp, ders = _parts(*primals)
        return lp, sum(d * t for d, t in zip(ders, tangents, strict=True))

    if not grad:
        return jax.jit(value)

    def with_derivatives(y, mean, var, scale):
        stop = [jax.lax.stop_gradient(x) for x in (y, mean, var, scale)]
        _, ders = _parts(*stop)
        return (value(y, mean, var, scale), *ders)

    return jax.jit(with_derivatives)
