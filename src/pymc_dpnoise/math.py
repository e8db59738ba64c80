r"""Pure PyTensor log-likelihoods of privatised reports.

Every function here takes and returns PyTensor expressions (or anything
:func:`pytensor.tensor.as_tensor_variable` accepts), uses only elementwise ops
with C, Numba and JAX implementations (``erfcx``, ``erfc``, ``log1mexp``,
``log1p``, ...), broadcasts over all of its arguments, and knows nothing about
PyMC.  The PyMC classes in :mod:`pymc_dpnoise.distributions` are thin wrappers
around them.

Numerical conventions
---------------------
* Nothing is ever exponentiated outside a log: every closed form of the papers
  is rewritten as a log-sum-exp of terms that are finite for all finite inputs.
* Branches are selected with the "double where" pattern: the branch that is not
  taken is evaluated at a safe dummy argument, so that neither its value nor its
  gradient can be ``nan`` or ``inf`` (``switch`` differentiates both branches).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

__all__ = [
    "clipped_exponential_laplace_logp",
    "clipped_normal_laplace_logp",
    "log_exprel",
    "log_ndtr",
    "log_tilted_interval",
    "log_tilted_ndtr",
]

_SQRT2 = np.sqrt(2.0)
_LOG2 = np.log(2.0)


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


def log_tilted_ndtr(x, kappa):
    r"""Log of the exponentially tilted lower normal tail.

    .. math::

        E_\kappa(x) = \log \int_{-\infty}^{x} e^{\kappa (t - x)} \varphi(t)\, dt
                    = \kappa^2/2 - \kappa x + \log\Phi(x - \kappa),

    for :math:`\kappa \ge 0`.  The factor :math:`e^{\kappa^2/2}` (which overflows for
    large :math:`\kappa`) is cancelled analytically: for :math:`x < \kappa`,
    :math:`E_\kappa(x) = -x^2/2 + \log(\operatorname{erfcx}((\kappa - x)/\sqrt2)/2)`.
    """
    x = _as_f64(x)
    kappa = _as_f64(kappa)
    below = pt.lt(x, kappa)
    xb = pt.switch(below, x, kappa - 1.0)
    xa = pt.switch(below, kappa + 1.0, x)
    val_below = pt.log(pt.erfcx((kappa - xb) / _SQRT2)) - _LOG2 - 0.5 * pt.sqr(xb)
    val_above = kappa * (0.5 * kappa - xa) + log_ndtr(xa - kappa)
    return pt.switch(below, val_below, val_above)


def _log_tilted_upper(x, kappa):
    # F_k(x) = log int_x^inf e^{k (t - x)} phi(t) dt, only used for x >= kappa, where it equals
    # -x^2/2 + log(erfcx((x - kappa)/sqrt2)/2).  Callers pass safe arguments.
    return pt.log(pt.erfcx((x - kappa) / _SQRT2)) - _LOG2 - 0.5 * pt.sqr(x)


def _logdiffexp(a, b):
    # log(exp(a) - exp(b)) for a > b
    return a + pt.log1mexp(b - a)


def log_tilted_interval(lo, hi, kappa):
    r"""Log of a tilted normal integral over an interval.

    .. math::

        J_\kappa(\ell, h) = \log \int_\ell^h e^{-\kappa (h - t)} \varphi(t)\, dt,
        \qquad \ell < h,\ \kappa \ge 0.

    This is the piece of LDP paper eq. 27 that multiplies the Laplace kernel
    inside the clipping interval.  Two algebraically equal forms are used, chosen so
    that the difference of exponentials never cancels catastrophically:

    * :math:`\ell \le \kappa`: :math:`J = \log(e^{E(h)} - e^{E(\ell) - \kappa(h - \ell)})`,
    * :math:`\ell > \kappa`: :math:`J = \log(e^{F(\ell) - \kappa(h - \ell)} - e^{F(h)})`,
      with :math:`F(x) = \log\int_x^\infty e^{\kappa(t - x)}\varphi(t)\,dt`.

    Both arguments must satisfy ``lo < hi``; callers substitute safe values elsewhere.
    """
    lo = _as_f64(lo)
    hi = _as_f64(hi)
    kappa = _as_f64(kappa)
    shift = kappa * (hi - lo)
    lower_form = pt.le(lo, kappa)
    # lower form (E): valid everywhere, accurate when lo <= kappa
    lo_e = pt.switch(lower_form, lo, kappa)
    hi_e = pt.switch(lower_form, hi, kappa + 1.0)
    sh_e = pt.switch(lower_form, shift, 1.0)
    j_lower = _logdiffexp(log_tilted_ndtr(hi_e, kappa), log_tilted_ndtr(lo_e, kappa) - sh_e)
    # upper form (F): needs lo > kappa (so hi > kappa too)
    lo_f = pt.switch(lower_form, kappa + 1.0, lo)
    hi_f = pt.switch(lower_form, kappa + 2.0, hi)
    sh_f = pt.switch(lower_form, 1.0, shift)
    j_upper = _logdiffexp(_log_tilted_upper(lo_f, kappa) - sh_f, _log_tilted_upper(hi_f, kappa))
    return pt.switch(lower_form, j_lower, j_upper)


def _logsumexp_elemwise(*terms):
    # Elementwise log-sum-exp of a few same-shape terms; stays inside one fused Elemwise.
    m = terms[0]
    for t in terms[1:]:
        m = pt.maximum(m, t)
    total = pt.exp(terms[0] - m)
    for t in terms[1:]:
        total = total + pt.exp(t - m)
    return m + pt.log(total)


def clipped_normal_laplace_logp(value, mu, sigma, lower, upper, epsilon):
    r"""Log density of a clipped Gaussian value released with the Laplace mechanism.

    Model (LDP paper, Section 3.2.1 and Supplement 10.1, eq. 28): :math:`x \sim N(\mu, \sigma^2)`,
    :math:`c = \min(\max(x, a), b)` with :math:`a` = ``lower``, :math:`b` = ``upper``, and
    report :math:`z = c + \text{Laplace}(0, s)` with :math:`s = (b - a)/\epsilon`.

    With :math:`\kappa = \sigma/s`, :math:`\alpha = (a-\mu)/\sigma`, :math:`\beta = (b-\mu)/\sigma`,
    :math:`\zeta = (z-\mu)/\sigma` and :math:`J_\kappa` from :func:`log_tilted_interval`,
    eq. 28 becomes, for :math:`a < z < b`,

    .. math::

        \log p(z) = -\log 2s + \operatorname{LSE}\big(
            \log\Phi(\alpha) - \tfrac{z-a}{s},\;
            \log\Phi(-\beta) - \tfrac{b-z}{s},\;
            J_\kappa(\alpha, \zeta),\;
            J_\kappa(-\beta, -\zeta)\big),

    for :math:`z \le a`

    .. math::

        \log p(z) = -\log 2s - \tfrac{a-z}{s} + \operatorname{LSE}\big(
            \log\Phi(\alpha),\; \log\Phi(-\beta) - \epsilon,\; J_\kappa(-\beta, -\alpha)\big),

    and symmetrically for :math:`z \ge b`.  Outside :math:`[a, b]` the report enters only
    linearly (REFERENCE §2.1).  The paper's :math:`e^{(\epsilon\sigma)^2/2(b-a)^2}` factor is
    cancelled analytically inside :math:`J_\kappa`, so the expression is finite for every
    finite input, for :math:`\epsilon` from :math:`10^{-2}` to :math:`10^{2}` and
    :math:`\sigma/(b-a)` from :math:`10^{-3}` to :math:`10^{2}` (tested).

    Parameters
    ----------
    value, mu, sigma, lower, upper, epsilon : tensor_like
        Reports and parameters; all broadcast.  No validation is done here.

    Returns
    -------
    TensorVariable
        Elementwise log density, shape of the broadcast inputs.
    """
    z = _as_f64(value)
    mu, sigma, lower, upper, epsilon = map(_as_f64, (mu, sigma, lower, upper, epsilon))
    width = upper - lower
    s = width / epsilon
    kappa = sigma / s
    alpha = (lower - mu) / sigma
    beta = (upper - mu) / sigma
    log_2s = pt.log(2.0 * s)
    lphi_a = log_ndtr(alpha)  # log P(x <= a): mass clipped to a
    lphi_b = log_ndtr(-beta)  # log P(x >= b): mass clipped to b

    left = pt.le(z, lower)
    right = pt.ge(z, upper)
    inside = ~(left | right)

    # z outside [a, b]: linear in z, the rest depends on the parameters only
    g_left = _logsumexp_elemwise(
        lphi_a, lphi_b - epsilon, log_tilted_interval(-beta, -alpha, kappa)
    )
    g_right = _logsumexp_elemwise(lphi_b, lphi_a - epsilon, log_tilted_interval(alpha, beta, kappa))
    out_left = g_left - (lower - z) / s
    out_right = g_right - (z - upper) / s

    # a < z < b (evaluated at the midpoint where z is outside, then discarded)
    zs = pt.switch(inside, z, 0.5 * (lower + upper))
    zeta = (zs - mu) / sigma
    out_in = _logsumexp_elemwise(
        lphi_a - (zs - lower) / s,
        lphi_b - (upper - zs) / s,
        log_tilted_interval(alpha, zeta, kappa),
        log_tilted_interval(-beta, -zeta, kappa),
    )
    return pt.switch(left, out_left, pt.switch(right, out_right, out_in)) - log_2s


def log_exprel(y):
    r""":math:`\log((e^y - 1)/y)`, finite and smooth for all finite y (0 at y = 0)."""
    y = _as_f64(y)
    small = pt.lt(pt.abs(y), 1e-3)
    ys = pt.switch(small, 0.0, y)
    ay = pt.switch(small, 1.0, pt.abs(ys))
    big = pt.maximum(ys, 0.0) + pt.log1mexp(-ay) - pt.log(ay)
    yt = pt.switch(small, y, 0.0)
    series = yt / 2 + pt.sqr(yt) / 24 - pt.sqr(pt.sqr(yt)) / 2880
    return pt.switch(small, series, big)


def _log_g(a, length):
    # log g(a, L) = log((1 - exp(-a L))/a) = log L + log_exprel(-a L), any sign of a (REFERENCE §2.2)
    return pt.log(length) + log_exprel(-a * length)


def clipped_exponential_laplace_logp(value, lam, upper, epsilon):
    r"""Log density of a clipped exponential value released with the Laplace mechanism.

    Model (LDP paper, Supplement 10.2, eq. 29-30): :math:`x \sim \text{Exponential}(\lambda)`,
    :math:`c = \min(x, u)` (an atom of mass :math:`e^{-\lambda u}` at :math:`u` = ``upper``),
    report :math:`z = c + \text{Laplace}(0, b)`, :math:`b = u/\epsilon`.
    With :math:`g(a, L) = (1 - e^{-aL})/a = L\,\mathrm{exprel}(-aL)` (no singularity at
    :math:`a = 0`, unlike the paper's division by :math:`b\theta - \epsilon`; the paper also
    writes ``y`` for ``z`` in eq. 30):

    .. math::

        p(z) = e^{-\lambda u}\,\text{Lap}(z; u, b) + \frac{\lambda}{2b}\times
        \begin{cases}
          e^{z/b}\, g(\lambda + 1/b, u) & z \le 0 \\
          e^{-z/b} g(\lambda - 1/b, z) + e^{-\lambda z} g(\lambda + 1/b, u - z) & 0 < z < u \\
          e^{-z/b}\, g(\lambda - 1/b, u) & z \ge u
        \end{cases}

    evaluated as a log-sum-exp of logs.  Reports outside :math:`[0, u]` enter linearly.

    Parameters
    ----------
    value, lam, upper, epsilon : tensor_like
        Reports, rate, clipping bound and privacy budget; all broadcast.  No validation.
    """
    z = _as_f64(value)
    lam, upper, epsilon = map(_as_f64, (lam, upper, epsilon))
    b = upper / epsilon
    inv_b = epsilon / upper
    log_lam = pt.log(lam)
    log_2b = pt.log(2.0 * b)
    atom = -lam * upper  # log P(x >= u)

    left = pt.le(z, 0.0)
    right = pt.ge(z, upper)
    inside = ~(left | right)

    g_left = _logsumexp_elemwise(log_lam + _log_g(lam + inv_b, upper), atom - epsilon)
    g_right = _logsumexp_elemwise(log_lam + _log_g(lam - inv_b, upper), atom + epsilon)
    out_left = g_left + z * inv_b
    out_right = g_right - z * inv_b

    zs = pt.switch(inside, z, 0.5 * upper)
    out_in = _logsumexp_elemwise(
        log_lam - zs * inv_b + _log_g(lam - inv_b, zs),
        log_lam - lam * zs + _log_g(lam + inv_b, upper - zs),
        atom - (upper - zs) * inv_b,
    )
    return pt.switch(left, out_left, pt.switch(right, out_right, out_in)) - log_2b
