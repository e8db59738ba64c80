r"""JAX kernel of :class:`~pymc_dpnoise.math._count_window.CountWindowOp` (vectorised;
imported only by the JAX linker).

The Numba kernel's formulas over whole vectors: the bisection for the argmax as a
``lax.fori_loop`` over all releases at once, the window as a (releases × 2W + 1) matrix, its
log-sum-exp, and the closed-form derivatives from the softmax weights.  The value is a
``jax.custom_jvp`` function of ``(y, lpar, sigma)`` whose JVP is those derivatives, so a
JAX sampler never differentiates the pmf formulas.  Jitted: PyMC evaluates the jaxified log
density once without ``jit`` (numpyro's initial point), where each primitive of an unjitted
kernel would be compiled on its own.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ._jax_dispatch import require_x64
from ._special_jax import log_binom_pmf, log_poisson_pmf


def _parts(family, half_width, iters, y, hi, lpar, sigma):
    """(log-sum-exp, d/dy, d/dsigma, d/dlpar) per release, inputs broadcast to one length."""
    y, hi, lpar, sigma = jnp.broadcast_arrays(y, hi, lpar, sigma)
    binomial = family == "binomial"
    two_s2 = 2.0 * sigma**2
    if binomial:
        mode = jnp.clip(jnp.floor((hi + 1.0) * jax.nn.sigmoid(lpar)), 0.0, hi)
        mean = hi * jax.nn.sigmoid(lpar)
    else:
        mode = jnp.floor(jnp.exp(jnp.minimum(lpar, 60.0)))
        mean = jnp.exp(lpar)
    a = jnp.clip(jnp.minimum(mode, jnp.floor(y)), 0.0, hi)
    b = jnp.clip(jnp.maximum(mode, jnp.ceil(y)), 0.0, hi)

    def step(_, ab):
        a, b = ab
        mid = jnp.floor(0.5 * (a + b))
        if binomial:
            ratio = jnp.log(jnp.maximum(hi - mid, 0.0)) - jnp.log1p(mid) + lpar
        else:
            ratio = lpar - jnp.log1p(mid)
        go = (mid < b) & (ratio + (2.0 * (y - mid) - 1.0) / two_s2 >= 0.0)
        return jnp.where(go, mid + 1.0, a), jnp.where(go, b, mid)

    c, _ = lax.fori_loop(0, iters, step, (a, b))
    hw = half_width
    s = c[:, None] + jnp.arange(-hw, hw + 1, dtype=jnp.float64)
    hi_e, y_e, sg_e, c_e, lp_e = hi[:, None], y[:, None], sigma[:, None], c[:, None], lpar[:, None]
    valid = (s >= 0.0) & (s <= hi_e)
    # the terms relative to the term at c, as in the Numba kernel: log P(s) / P(c) from the
    # pmf's ratios log P(s + 1) / P(s) (cumulative sums stepping out from c), the
    # Gaussian's difference in closed form
    sr = jnp.clip(s, 0.0, jnp.maximum(hi_e - 1.0, 0.0))
    if binomial:
        ratio = jnp.log(jnp.maximum(hi_e - sr, 0.0)) - jnp.log1p(sr) + lp_e
        base = log_binom_pmf(c, hi, lpar)
    else:
        ratio = lp_e - jnp.log1p(sr)
        base = log_poisson_pmf(c, lpar)
    base = base - 0.5 * ((y - c) / sigma) ** 2
    up = jnp.cumsum(ratio[:, hw:-1], axis=-1)
    down = -jnp.cumsum(ratio[:, :hw][:, ::-1], axis=-1)[:, ::-1]
    g = jnp.concatenate([down, jnp.zeros_like(c_e), up], axis=-1)
    r = y_e - s
    t = g - 0.5 * (c_e - s) * (2.0 * y_e - s - c_e) / sg_e**2
    t = jnp.where(valid & ~jnp.isnan(t), t, -jnp.inf)
    top = jnp.where(jnp.isfinite(base), jnp.max(t, axis=-1), base)
    finite = jnp.isfinite(top)
    top_safe = jnp.where(finite, top, 0.0)
    e = jnp.exp(t - top_safe[:, None])
    tot = jnp.sum(e, axis=-1)
    w = e / jnp.where(finite, tot, 1.0)[:, None]
    value = jnp.where(finite, base + top_safe + jnp.log(tot), top)
    d_y = jnp.where(finite, -jnp.sum(w * r, axis=-1) / sigma**2, 0.0)
    d_sig = jnp.where(finite, jnp.sum(w * r * r, axis=-1) / sigma**3, 0.0)
    d_par = jnp.where(finite, jnp.sum(w * (s - mean[:, None]), axis=-1), 0.0)
    return value, d_y, d_sig, d_par


def kernel(family, half_width, iters, grad):
    """The JAX function of the op: ``f(y, hi, lpar, sigma)`` -> value (``grad=False``) or
    (value, d/dy, d/dsigma, d/dlpar), each of the inputs' broadcast length."""
    require_x64("the count-window op's JAX implementation")

    @jax.custom_jvp
    def value(y, hi, lpar, sigma):
        return _parts(family, half_width, iters, y, hi, lpar, sigma)[0]

    @value.defjvp
    def _value_jvp(primals, tangents):
        v, d_y, d_sig, d_par = _parts(family, half_width, iters, *primals)
        t_y, _, t_par, t_sig = tangents
        return v, d_y * t_y + d_sig * t_sig + d_par * t_par

    if not grad:
        return jax.jit(value)

    def with_derivatives(y, hi, lpar, sigma):
        stop = [lax.stop_gradient(x) for x in (y, hi, lpar, sigma)]
        _, d_y, d_sig, d_par = _parts(family, half_width, iters, *stop)
        return value(y, hi, lpar, sigma), d_y, d_sig, d_par

    return jax.jit(with_derivatives)
