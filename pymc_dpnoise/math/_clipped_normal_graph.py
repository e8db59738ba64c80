"""The clipped-Gaussian Laplace log density as PyTensor graphs (LDP paper, Supplement 10.1).

The stable building blocks (log Φ, tilted tails and intervals, log-sum-exp) and the per-region
formulas of :func:`pymc_dpnoise.math.clipped_normal_laplace_logp`.  They live below both
:mod:`pymc_dpnoise.math.clipped` (which re-exports them and builds the log CDFs and summaries
from them) and :mod:`pymc_dpnoise.math._clipped_normal_op` (whose gradients and JAX fallback
differentiate them), so that neither of those imports the other back.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

_SQRT2 = np.sqrt(2.0)
_LOG2 = np.log(2.0)
#: np.float64, not a Python float: under floatX="float32" PyTensor makes -1e-300 a float32 -0.0
_MINUS_TINY = np.float64(-1e-300)


def _as_f64(x):
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


def log_ndtr(x):
    r"""Log of the standard normal CDF, :math:`\log\Phi(x)`, finite for all finite x.

    Uses :math:`\log\Phi(x) = -x^2/2 + \log(\operatorname{erfcx}(-x/\sqrt2)/2)` for
    :math:`x < -1` and :math:`\log1p(-\operatorname{erfc}(x/\sqrt2)/2)` otherwise, each branch
    evaluated only on its own half-line (so gradients stay finite, unlike
    ``pymc.distributions.dist_math.normal_lcdf`` whose unused branch gives ``nan``
    gradients below about -38).
    """
    x = _as_f64(x)
    neg = pt.lt(x, -1.0)
    xl = pt.switch(neg, x, -1.0)
    xr = pt.switch(neg, -1.0, x)
    left = pt.log(pt.erfcx(-xl / _SQRT2)) - _LOG2 - 0.5 * pt.sqr(xl)
    right = pt.log1p(-0.5 * pt.erfc(xr / _SQRT2))
    return pt.switch(neg, left, right)


def _tilted_tails(x, kappa):
    r"""Both exponentially tilted normal tails at ``x``, from one ``erfcx`` call.

    Returns ``(E, F)`` with

    .. math::

        E_\kappa(x) = \log \int_{-\infty}^{x} e^{\kappa (t - x)} \varphi(t)\, dt
                    = \kappa^2/2 - \kappa x + \log\Phi(x - \kappa),\qquad
        F_\kappa(x) = \log \int_{x}^{\infty} e^{\kappa (t - x)} \varphi(t)\, dt
                    = \kappa^2/2 - \kappa x + \log\Phi(\kappa - x).

    With :math:`u = (x - \kappa)/\sqrt2`, the tail on the side of :math:`x` away from
    :math:`\kappa` ("near") is :math:`-x^2/2 + \log(\operatorname{erfcx}(|u|)/2)` and the other
    ("far") is the total :math:`\kappa^2/2 - \kappa x` minus it.  The near tail holds at most
    half of the total, so the subtraction never cancels, and :math:`e^{\kappa^2/2}` (which
    overflows for large :math:`\kappa`) never appears outside a log.
    """
    up = pt.ge(x, kappa)
    u = (x - kappa) / _SQRT2
    au = pt.switch(up, u, -u)  # |u| with a one-sided derivative at 0
    w = pt.log(pt.erfcx(au)) - _LOG2  # log(erfcx(|u|)/2)
    near = w - 0.5 * pt.sqr(x)
    # total kappa^2/2 - kappa x, written so that it does not cancel for large |x|
    far = kappa * (0.5 * kappa - x) + pt.log1mexp(w - pt.sqr(au))
    return pt.switch(up, far, near), pt.switch(up, near, far)


def log_tilted_ndtr(x, kappa):
    r""":math:`E_\kappa(x) = \kappa^2/2 - \kappa x + \log\Phi(x - \kappa)`, finite for large :math:`\kappa`."""
    return _tilted_tails(_as_f64(x), _as_f64(kappa))[0]


def _logdiffexp(a, b):
    # log(exp(a) - exp(b)) for a > b.  When a and b are so large (|a| > 1e16 or so) that their
    # difference is lost to rounding, b - a can come out as 0: the term is then taken as
    # e^{a - 690} instead of -inf (it is negligible next to the others wherever this happens;
    # without the clamp its gradient was NaN, e.g. for |mu| >= 1e16 in the clipped normal).
    return a + pt.log1mexp(pt.minimum(b - a, _MINUS_TINY))


def log_tilted_interval(lo, hi, kappa):
    r"""Log of a tilted normal integral over an interval.

    .. math::

        J_\kappa(\ell, h) = \log \int_\ell^h e^{-\kappa (h - t)} \varphi(t)\, dt,
        \qquad \ell < h,\ \kappa \ge 0.

    This is the piece of LDP paper eq. 27 that multiplies the Laplace kernel
    inside the clipping interval.  Of the two algebraically equal forms

    * :math:`J = \log(e^{E(h)} - e^{E(\ell) - \kappa(h - \ell)})` and
    * :math:`J = \log(e^{F(\ell) - \kappa(h - \ell)} - e^{F(h)})`

    (:math:`E, F` the tilted tails of :func:`_tilted_tails`) the first is used when
    :math:`\ell \le \kappa` and the second otherwise; then the subtracted term is at most
    :math:`\Phi(\ell-\kappa)/\Phi(h-\kappa)` (resp. its mirror) of the first, so the
    difference never cancels catastrophically except through a genuinely narrow interval.
    Requires ``lo < hi``; callers substitute safe values elsewhere.
    """
    lo = _as_f64(lo)
    hi = _as_f64(hi)
    kappa = _as_f64(kappa)
    shift = kappa * (hi - lo)
    e_lo, f_lo = _tilted_tails(lo, kappa)
    e_hi, f_hi = _tilted_tails(hi, kappa)
    lower_form = pt.le(lo, kappa)
    big = pt.switch(lower_form, e_hi, f_lo - shift)
    small = pt.switch(lower_form, e_lo - shift, f_hi)
    return _logdiffexp(big, small)


def _logsumexp_elemwise(*terms):
    # Elementwise log-sum-exp of a few same-shape terms; stays inside one fused Elemwise.
    m = terms[0]
    for t in terms[1:]:
        m = pt.maximum(m, t)
    total = pt.exp(terms[0] - m)
    for t in terms[1:]:
        total = total + pt.exp(t - m)
    return m + pt.log(total)


def _piecewise_by_region(z, lower, upper, params, outside_fn, inside_fn):
    """Evaluate a report log density that is cheap outside ``[lower, upper]``.

    ``outside_fn(z, lower, upper, *params)`` is evaluated for every report with the parameters
    in their own (broadcastable) shapes, so that everything that depends on the parameters
    only is computed once per parameter value, not once per report.  It must be valid for
    every z.  ``inside_fn`` is evaluated only on the reports strictly inside the interval,
    gathered with ``nonzero`` and scattered back; parameters that are not scalars are
    broadcast and gathered with them.  With observed reports the index set is a constant
    that PyTensor folds at compile time.  Reports outside the interval thus cost one affine
    function each: they enter the likelihood only through their count and sum.
    """
    args = (z, lower, upper, *params)
    shape = pt.broadcast_shape(*args, arrays_are_shapes=False)
    out = pt.broadcast_to(outside_fn(*args), shape)
    zb = pt.broadcast_to(z, shape).ravel()
    lb = pt.broadcast_to(lower, shape).ravel() if lower.type.ndim else lower
    ub = pt.broadcast_to(upper, shape).ravel() if upper.type.ndim else upper
    (idx,) = pt.nonzero(pt.gt(zb, lb) & pt.lt(zb, ub))

    def gather(x):
        return pt.broadcast_to(x, shape).ravel()[idx] if x.type.ndim else x

    # the reports always gathered (a 0-d one too): the inside formula never sees a report
    # outside the interval, whose NaN would reach the gradient through the empty scatter
    inner = inside_fn(zb[idx], gather(lower), gather(upper), *map(gather, params))
    return pt.set_subtensor(out.ravel()[idx], inner).reshape(shape)


def _clipped_normal_dense(z, mu, sigma, lower, upper, epsilon):
    """The same log density without gathering the inside reports (every input may be a
    variable): both region formulas everywhere, the inside one at the interval's midpoint for
    reports outside it (double where).  The graph the op differentiates for gradients other
    than d/d mu and d/d sigma, and the op's JAX implementation when the reports, bounds or
    epsilon are variables."""
    z, mu, sigma, lower, upper, epsilon = map(_as_f64, (z, mu, sigma, lower, upper, epsilon))
    inside = pt.gt(z, lower) & pt.lt(z, upper)
    z_in = pt.switch(inside, z, lower + 0.5 * (upper - lower))
    return pt.switch(
        inside,
        _clipped_normal_inside(z_in, lower, upper, mu, sigma, epsilon),
        _clipped_normal_outside(z, lower, upper, mu, sigma, epsilon),
    )


def _clipped_normal_common(lower, upper, mu, sigma, epsilon):
    s = (upper - lower) / epsilon
    kappa = sigma / s
    alpha = (lower - mu) / sigma
    beta = (upper - mu) / sigma
    # log P(x <= a) and log P(x >= b): the masses clipped to the bounds
    return s, kappa, alpha, beta, log_ndtr(alpha), log_ndtr(-beta), pt.log(2.0 * s)


def _clipped_normal_outside(z, lower, upper, mu, sigma, epsilon):
    # z <= a: log p = g_left - (a - z)/s;  z >= b: log p = g_right - (z - b)/s
    s, kappa, alpha, beta, lphi_a, lphi_b, log_2s = _clipped_normal_common(
        lower, upper, mu, sigma, epsilon
    )
    g_left = _logsumexp_elemwise(
        lphi_a, lphi_b - epsilon, log_tilted_interval(-beta, -alpha, kappa)
    )
    g_right = _logsumexp_elemwise(lphi_b, lphi_a - epsilon, log_tilted_interval(alpha, beta, kappa))
    left = pt.le(z, lower)
    return pt.switch(left, g_left - (lower - z) / s, g_right - (z - upper) / s) - log_2s


def _clipped_normal_inside(z, lower, upper, mu, sigma, epsilon):
    s, kappa, alpha, beta, lphi_a, lphi_b, log_2s = _clipped_normal_common(
        lower, upper, mu, sigma, epsilon
    )
    zeta = (z - mu) / sigma
    return (
        _logsumexp_elemwise(
            lphi_a - (z - lower) / s,
            lphi_b - (upper - z) / s,
            log_tilted_interval(alpha, zeta, kappa),
            log_tilted_interval(-beta, -zeta, kappa),
        )
        - log_2s
    )


def _clipped_normal_left_right(z, lower, upper, mu, sigma, epsilon):
    # log L(z) and log R(z) (2 s p(z) = L + R) inside (a, b): the clean mass left of z (atom at
    # a, normal on (a, z)) and right of z (normal on (z, b), atom at b), each weighted by the
    # Laplace kernel's e^{-|z - x|/s}
    s, kappa, alpha, beta, lphi_a, lphi_b, log_2s = _clipped_normal_common(
        lower, upper, mu, sigma, epsilon
    )
    zeta = (z - mu) / sigma
    left = _logsumexp_elemwise(lphi_a - (z - lower) / s, log_tilted_interval(alpha, zeta, kappa))
    right = _logsumexp_elemwise(lphi_b - (upper - z) / s, log_tilted_interval(-beta, -zeta, kappa))
    return left, right, zeta, s, log_2s
