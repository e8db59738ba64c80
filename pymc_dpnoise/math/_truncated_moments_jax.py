r"""JAX kernel of :class:`~pymc_dpnoise.math._truncated_moments.TruncatedPoissonMomentsOp`
(vectorised; imported only by the JAX linker): the Numba kernel's sums over a (elements ×
terms) matrix, the values a ``jax.custom_jvp`` function of mu whose JVP is the cumulants
(see that module), jitted (PyMC evaluates the jaxified log density once without ``jit``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln

from ._jax_dispatch import require_x64
from ._special_jax import log_poisson_pmf


def _parts(terms, mu, lower, upper):
    mu, lower, upper = jnp.broadcast_arrays(mu, lower, upper)
    off = jnp.arange(terms, dtype=jnp.float64)
    a = lower[:, None]
    k = a + off
    valid = (k <= upper[:, None]) & (k >= a)
    lmu = jnp.log(mu)
    d = off * lmu[:, None] - (gammaln(k + 1.0) - gammaln(a + 1.0))
    d = jnp.where(valid, d, -jnp.inf)
    top = jnp.max(d, axis=-1)
    e = jnp.exp(d - top[:, None])
    tot = jnp.sum(e, axis=-1)
    w = e / tot[:, None]
    jbar = jnp.sum(off * w, axis=-1)
    dj = off - jbar[:, None]
    var = jnp.sum(dj * dj * w, axis=-1)
    k3 = jnp.sum(dj * dj * dj * w, axis=-1)
    mean = lower + jbar
    log_q = log_poisson_pmf(lower, lmu) + top + jnp.log(tot)
    return (log_q, mean, var), ((mean - mu) / mu, var / mu, k3 / mu)


def kernel(terms, grad):
    """``f(mu, lower, upper)`` -> (log q, mean, var) (``grad=False``) or those and their
    derivatives in mu."""
    require_x64("the truncated-Poisson moments op's JAX implementation")

    @jax.custom_jvp
    def values(mu, lower, upper):
        return _parts(terms, mu, lower, upper)[0]

    @values.defjvp
    def _values_jvp(primals, tangents):
        vals, ders = _parts(terms, *primals)
        t_mu = tangents[0]
        return vals, tuple(dv * t_mu for dv in ders)

    if not grad:
        return jax.jit(values)

    def with_derivatives(mu, lower, upper):
        stop = [jax.lax.stop_gradient(x) for x in (mu, lower, upper)]
        _, ders = _parts(terms, *stop)
        return (*values(mu, lower, upper), *ders)

    return jax.jit(with_derivatives)
