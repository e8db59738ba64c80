"""Clipped Gaussian and clipped exponential reports under the Laplace mechanism (LDP paper, Supplement 10)."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from ._clipped_normal_graph import (  # noqa: F401 (re-exported: the formulas live there)
    _LOG2,
    _MINUS_TINY,
    _SQRT2,
    _as_f64,
    _clipped_normal_common,
    _clipped_normal_dense,
    _clipped_normal_inside,
    _clipped_normal_left_right,
    _clipped_normal_outside,
    _logdiffexp,
    _logsumexp_elemwise,
    _piecewise_by_region,
    _tilted_tails,
    log_ndtr,
    log_tilted_interval,
    log_tilted_ndtr,
)
from ._laplace_cdf import split_log_cdfs

__all__ = [
    "clipped_exponential_laplace_log_cdfs",
    "clipped_exponential_laplace_logp",
    "clipped_exponential_summary_error_bound",
    "clipped_exponential_summary_logp",
    "clipped_normal_laplace_log_cdfs",
    "clipped_normal_laplace_logp",
    "clipped_normal_summary_error_bound",
    "clipped_normal_summary_logp",
    "clipped_summary_derivatives",
    "log_exprel",
    "log_ndtr",
    "log_tilted_interval",
    "log_tilted_ndtr",
    "summary_bin_centres",
]


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
    linearly.  The paper's :math:`e^{(\epsilon\sigma)^2/2(b-a)^2}` factor is
    cancelled analytically inside :math:`J_\kappa`, so the expression is finite for every
    finite input, for :math:`\epsilon` from :math:`10^{-2}` to :math:`10^{2}` and
    :math:`\sigma/(b-a)` from :math:`10^{-3}` to :math:`10^{2}` (tested).

    These formulas are evaluated by one elementwise op
    (``pymc_dpnoise.math._clipped_normal_op``: a Numba kernel per report with
    :math:`\partial/\partial\mu` and :math:`\partial/\partial\sigma` in closed form, the
    parameter-only terms computed once per distinct parameter value), not as a PyTensor graph,
    which keeps the logp + gradient graph small and quick to rewrite.  On the JAX backend the
    same formulas run vectorised in ``jax.numpy``.  Other gradients and second derivatives use
    the graph of the same formulas.

    Parameters
    ----------
    value, mu, sigma, lower, upper, epsilon : tensor_like
        Reports and parameters; all broadcast.  No validation is done here.

    Returns
    -------
    TensorVariable
        Elementwise log density, shape of the broadcast inputs.
    """
    from ._clipped_normal_op import clipped_normal_laplace_op

    z = _as_f64(value)
    params = [_as_f64(p) for p in (mu, sigma, lower, upper, epsilon)]
    shape = pt.broadcast_shape(z, *params, arrays_are_shapes=False)
    flat = [pt.broadcast_to(z, shape).ravel()]

    def spread(p):
        # a scalar parameter stays one value (computed with once), a vector is spread per
        # report; one already per report (its static shape the reports') is passed as it is,
        # so that ``mu_g[group]`` reaches the op as such (the grouped kernel)
        if p.type.ndim == 0:
            return p[None]
        if p.type.ndim == z.type.ndim == 1 and p.type.shape == z.type.shape != (None,):
            return p
        return pt.broadcast_to(p, shape).ravel()

    return clipped_normal_laplace_op(*flat, *map(spread, params)).reshape(shape)


def _clipped_normal_laplace_logp_graph(value, mu, sigma, lower, upper, epsilon):
    """:func:`clipped_normal_laplace_logp` as a PyTensor graph (kept as the reference of the op's kernel in the tests and benchmarks)."""
    z = _as_f64(value)
    mu, sigma, lower, upper, epsilon = map(_as_f64, (mu, sigma, lower, upper, epsilon))
    return _piecewise_by_region(
        z, lower, upper, (mu, sigma, epsilon), _clipped_normal_outside, _clipped_normal_inside
    )


def _outside_log_cdfs(z, lower, logp_outside, s):
    # Outside [a, b] all the clean mass is on one side of z: F(z) = s p(z) left of the interval
    # and 1 - F(z) = s p(z) right of it (module _laplace_cdf, with L = 0 or R = 0); s p <= 1/2
    x = pt.minimum(logp_outside + pt.log(s), -_LOG2)
    other = pt.log1mexp(x)
    left = pt.le(z, lower)
    return pt.switch(left, x, other), pt.switch(left, other, x)


def _pick(pair, tail):
    return pair[1] if tail else pair[0]


def clipped_normal_laplace_log_cdfs(value, mu, sigma, lower, upper, epsilon, *, tail=False):
    r"""Log CDF (``tail=False``) or log survival function (``tail=True``) of the clipped-Gaussian report.

    Same model as :func:`clipped_normal_laplace_logp`.  Splitting
    :math:`F(z) = \int F_L(z - x)\, dQ(x)` at :math:`x = z`
    (:mod:`pymc_dpnoise.math._laplace_cdf`) gives a piecewise tilted normal CDF:

    * :math:`z \le a`: all clean mass is right of z, :math:`F(z) = \tfrac12 R(z) = s\,p(z)`;
    * :math:`z \ge b`: :math:`1 - F(z) = s\,p(z)`;
    * :math:`a < z < b`: :math:`F(z) = \Phi(\zeta) - \tfrac12 L(z) + \tfrac12 R(z)` with

      .. math::

          L(z) = \Phi(\alpha) e^{-(z-a)/s} + e^{J_\kappa(\alpha, \zeta)}, \qquad
          R(z) = \Phi(-\beta) e^{-(b-z)/s} + e^{J_\kappa(-\beta, -\zeta)},

      the masses left and right of z tilted by the Laplace kernel (the same terms as in the
      density, :math:`2s\,p(z) = L + R`), and :math:`1 - F(z) = \Phi(-\zeta) - \tfrac12 R + \tfrac12 L`.

    Both are combined in log space so that :math:`\log F` is accurate relative to F where
    :math:`F < 1/2` and relative to :math:`1 - F` elsewhere (:func:`split_log_cdfs`).
    """
    z = _as_f64(value)
    mu, sigma, lower, upper, epsilon = map(_as_f64, (mu, sigma, lower, upper, epsilon))

    def outside(z, lower, upper, mu, sigma, epsilon):
        s = (upper - lower) / epsilon
        logp = _clipped_normal_outside(z, lower, upper, mu, sigma, epsilon)
        return _pick(_outside_log_cdfs(z, lower, logp, s), tail)

    def inside(z, lower, upper, mu, sigma, epsilon):
        left, right, zeta, _, _ = _clipped_normal_left_right(z, lower, upper, mu, sigma, epsilon)
        true = pt.ones_like(zeta, dtype="bool")
        pair = split_log_cdfs(log_ndtr(zeta), left, true, log_ndtr(-zeta), right, true)
        return _pick(pair, tail)

    return _piecewise_by_region(z, lower, upper, (mu, sigma, epsilon), outside, inside)


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
    # log g(a, L) = log((1 - exp(-a L))/a) = log L + log_exprel(-a L), any sign of a
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
          h(z) + e^{-\lambda z} g(\lambda + 1/b, u - z) & 0 < z < u \\
          e^{-(z - u)/b}\, h(u) & z \ge u
        \end{cases}

    with :math:`h(L) = \int_0^L e^{-\lambda x} e^{-(L - x)/b}\,dx
    = e^{-\min(\lambda, 1/b) L}\, g(|\lambda - 1/b|, L)`.  The paper writes
    :math:`h(L) = e^{-L/b} g(\lambda - 1/b, L)`; the form here never forms and cancels a term
    of size :math:`\max(\lambda, 1/b) L` (for :math:`L = u`, :math:`u/b = \epsilon`):
    the paper's form loses all digits once :math:`\epsilon \gtrsim 10^{14}` (logp +44.7
    instead of -7.6 at :math:`\epsilon = 10^{20}`), this one keeps full relative accuracy for
    every finite :math:`\epsilon` (checked against 100-digit arithmetic for
    :math:`10^{-6} \le \epsilon \le 10^{300}`).  Evaluated as a log-sum-exp of logs;
    reports outside :math:`[0, u]` enter linearly.

    Parameters
    ----------
    value, lam, upper, epsilon : tensor_like
        Reports, rate, clipping bound and privacy budget; all broadcast.  No validation.
    """
    z = _as_f64(value)
    lam, upper, epsilon = map(_as_f64, (lam, upper, epsilon))
    return _piecewise_by_region(
        z,
        pt.as_tensor_variable(0.0),
        upper,
        (lam, epsilon),
        _clipped_exp_outside,
        _clipped_exp_inside,
    )


def _log_lap_exp_integral(lam, inv_b, length):
    # log int_0^L lam e^{-lam x} e^{-(L - x)/b} dx  (= log of lam e^{-lam L} g(1/b - lam, L)
    # = lam e^{-L/b} g(lam - 1/b, L)), from whichever form has a non-negative rate in g:
    # then g <= L and no term of size max(lam, 1/b) L is formed and cancelled.
    # One form per side of lam = 1/b (a switch, not min/abs, whose gradients at the tie
    # would mix the two forms and miss the d log g / da term).
    lam_smaller = pt.le(lam, inv_b)
    rate = pt.switch(lam_smaller, lam, inv_b)
    gap = pt.switch(lam_smaller, inv_b - lam, lam - inv_b)
    return pt.log(lam) - rate * length + _log_g(gap, length)


def _clipped_exp_outside(z, lower, upper, lam, epsilon):
    # z <= 0: log p = g_left + z/b;  z >= u: log p = g_right - (z - u)/b, b = u/epsilon.
    # Each side is written relative to its own bound, so that no term of size epsilon is
    # added and then cancelled (with epsilon = 1e20 that cancellation lost every digit).
    inv_b = epsilon / upper
    atom = -lam * upper  # log P(x >= u)
    g_left = _logsumexp_elemwise(pt.log(lam) + _log_g(lam + inv_b, upper), atom - epsilon)
    g_right = _logsumexp_elemwise(_log_lap_exp_integral(lam, inv_b, upper), atom)
    left = pt.le(z, lower)
    return pt.switch(left, g_left + z * inv_b, g_right - (z - upper) * inv_b) + pt.log(
        epsilon / (2.0 * upper)
    )


def _clipped_exp_inside(z, lower, upper, lam, epsilon):
    # 0 < z < u: int_0^z lam e^{-lam x - (z - x)/b} dx + lam e^{-lam z} g(lam + 1/b, u - z)
    # plus the atom at u.
    inv_b = epsilon / upper
    return _logsumexp_elemwise(
        _log_lap_exp_integral(lam, inv_b, z),
        pt.log(lam) - lam * z + _log_g(lam + inv_b, upper - z),
        -lam * upper - (upper - z) * inv_b,
    ) + pt.log(epsilon / (2.0 * upper))


def _clipped_exp_left_right(z, upper, lam, epsilon):
    # log L(z), log R(z) inside (0, u): exponential density on (0, z), and on (z, u) plus the
    # atom at u, tilted by the Laplace kernel
    inv_b = epsilon / upper
    left = _log_lap_exp_integral(lam, inv_b, z)
    right = _logsumexp_elemwise(
        pt.log(lam) - lam * z + _log_g(lam + inv_b, upper - z),  # density on (z, u)
        -lam * upper - (upper - z) * inv_b,  # atom at u
    )
    return left, right


def clipped_exponential_laplace_log_cdfs(value, lam, upper, epsilon, *, tail=False):
    r"""Log CDF (``tail=False``) or log survival function (``tail=True``) of the clipped-exponential report.

    Same model as :func:`clipped_exponential_laplace_logp` and the same construction as
    :func:`clipped_normal_laplace_log_cdfs`: :math:`F(z) = b\,p(z)` for :math:`z \le 0`,
    :math:`1 - F(z) = b\,p(z)` for :math:`z \ge u`, and inside

    .. math::

        F(z) = (1 - e^{-\lambda z}) - \tfrac12 L(z) + \tfrac12 R(z),\qquad
        L(z) = \int_0^z \lambda e^{-\lambda x} e^{-(z-x)/b} dx,\quad
        R(z) = \lambda e^{-\lambda z} g(\lambda + 1/b, u - z) + e^{-\lambda u - (u - z)/b},

    with :math:`g` as in :func:`clipped_exponential_laplace_logp` (:math:`L` in the form that
    never cancels), combined in log space by :func:`split_log_cdfs`.
    """
    z = _as_f64(value)
    lam, upper, epsilon = map(_as_f64, (lam, upper, epsilon))

    def outside(z, lower, upper, lam, epsilon):
        logp = _clipped_exp_outside(z, lower, upper, lam, epsilon)
        return _pick(_outside_log_cdfs(z, lower, logp, upper / epsilon), tail)

    def inside(z, lower, upper, lam, epsilon):
        left, right = _clipped_exp_left_right(z, upper, lam, epsilon)
        true = pt.ones_like(left, dtype="bool")
        below = pt.log1mexp(-lam * z)  # log(1 - e^{-lam z}), z > 0
        pair = split_log_cdfs(below, left, true, -lam * z, right, true)
        return _pick(pair, tail)

    zero = pt.as_tensor_variable(np.float64(0.0))
    return _piecewise_by_region(z, zero, upper, (lam, epsilon), outside, inside)


# --------------------------------------------------------------------------------------------
# Compressed (binned) likelihoods: O(number of bins) per evaluation, independent of N
# --------------------------------------------------------------------------------------------
#
# Summary table layout (rows x 4 columns), shared with :mod:`pymc_dpnoise.summaries`:
#   row 0          left tail  z <= lower:  [n_L, T_L = sum(lower - z), 0, 0]
#   rows 1..K      bin j = row - 1 of width h = (upper - lower)/K, centre
#                  c_j = lower + (j + 1/2) h, reports lower < z < upper:
#                  [n_j, S1_j = sum(z - c_j), S2_j = sum((z - c_j)^2), A3_j = sum(|z - c_j|^3)]
#   row K + 1      right tail z >= upper:  [n_R, T_R = sum(z - upper), 0, 0]


def summary_bin_centres(lower, upper, n_bins):
    """Centres :math:`c_j = a + (j + 1/2) h`, :math:`h = (b - a)/K`, of the K inside bins."""
    lower, upper = _as_f64(lower), _as_f64(upper)
    h = (upper - lower) / n_bins
    j = pt.arange(n_bins, dtype="float64")
    return lower + (j + 0.5) * h, h


def _inside_derivatives(f_inside, log_q, dlog_q, zc, s):
    r"""Value and first three z-derivatives of ``log p`` at the points ``zc`` inside (a, b).

    ``f_inside`` returns ``f`` and ``f'`` in closed form (no nested autodiff of the ``erfcx``
    forms, whose graph took 95 s to compile); ``f''`` and ``f'''`` from the
    Laplace identity :math:`p - s^2 p'' = q` on the open interval (see
    :func:`clipped_normal_summary_logp`).
    """
    f, fp = f_inside(zc)
    r = pt.exp(log_q(zc) - f)  # q/p
    fpp = (1.0 - r) / pt.sqr(s) - pt.sqr(fp)
    fppp = -r * (dlog_q(zc) - fp) / pt.sqr(s) - 2.0 * fp * fpp
    return f, fp, fpp, fppp


def _inside_value_and_slope(left, right, s, log_2s):
    r"""``f = log p`` and ``f'`` from the masses left and right of z.

    Inside :math:`(a, b)`, :math:`2s\,p(z) = L(z) + R(z)` with
    :math:`L = \int_{x<z} e^{-(z-x)/s} dQ(x)` and :math:`R = \int_{x>z} e^{-(x-z)/s} dQ(x)`
    (Q the law of the clipped value).  Differentiating under the integral, the two
    :math:`q(z)` boundary terms cancel and :math:`L' = -L/s`, :math:`R' = R/s`, so
    :math:`f' = (R - L)/(s(R + L)) = \tanh((\log R - \log L)/2)/s`.
    """
    f = _logsumexp_elemwise(left, right) - log_2s
    fp = pt.tanh(0.5 * (right - left)) / s
    return f, fp


def _summary_logp_and_bound(
    summary, lower, upper, s, f_outside, f_inside, log_q, dlog_q, log_q_max, dlog_q_absmax
):
    summary = _as_f64(summary)
    n_bins = summary.shape[0] - 2
    zc, h = summary_bin_centres(lower, upper, n_bins)
    inner = summary[1:-1]
    f, fp, fpp, _ = _inside_derivatives(f_inside, log_q, dlog_q, zc, s)
    f_ab = f_outside(pt.stack([lower, upper]))  # one evaluation for both tails
    left = summary[0, 0] * f_ab[0] - summary[0, 1] / s
    right = summary[-1, 0] * f_ab[1] - summary[-1, 1] / s
    # bins with no reports contribute exactly 0 (n = S1 = S2 = 0), whatever f is there
    body = pt.sum(inner[:, 0] * f + inner[:, 1] * fp + 0.5 * inner[:, 2] * fpp)
    logp = left + right + body
    # Rigorous sup of |f'''| on each bin, from f''' = -r (q'/q - f')/s^2 - 2 f' f'' with
    # |f'| <= 1/s, |f''| <= (max(1, r) + 1)/s^2 and r = q/p <= max_bin q / (p(c) e^{-h/2s})
    # (p is 1/s-log-Lipschitz, so p >= p(c) e^{-|z - c|/s} on the bin).
    lo_e, hi_e = zc - 0.5 * h, zc + 0.5 * h
    r_max = pt.exp(log_q_max(lo_e, hi_e) - f + 0.5 * h / s)
    m3 = r_max * (dlog_q_absmax(lo_e, hi_e) + 1.0 / s) / pt.sqr(s) + 2.0 * (
        pt.maximum(1.0, r_max) + 1.0
    ) / (s * pt.sqr(s))
    bound = pt.sum(m3 * inner[:, 3]) / 6.0
    return logp, bound


def _normal_summary_parts(mu, sigma, lower, upper, epsilon):
    mu, sigma, lower, upper, epsilon = map(_as_f64, (mu, sigma, lower, upper, epsilon))
    s = (upper - lower) / epsilon

    def f_outside(z):
        return _clipped_normal_outside(z, lower, upper, mu, sigma, epsilon)

    def f_inside(z):
        left, right, _, s_, log_2s = _clipped_normal_left_right(z, lower, upper, mu, sigma, epsilon)
        return _inside_value_and_slope(left, right, s_, log_2s)

    def log_q(z):
        return -0.5 * pt.sqr((z - mu) / sigma) - pt.log(sigma) - 0.5 * np.log(2 * np.pi)

    def dlog_q(z):
        return -(z - mu) / pt.sqr(sigma)

    def log_q_max(lo, hi):  # the normal density is largest at the point nearest mu
        return log_q(pt.clip(mu, lo, hi))

    def dlog_q_absmax(lo, hi):  # |z - mu|/sigma^2 is largest at an edge
        return pt.maximum(pt.abs(lo - mu), pt.abs(hi - mu)) / pt.sqr(sigma)

    return lower, upper, s, f_outside, f_inside, log_q, dlog_q, log_q_max, dlog_q_absmax


def _exponential_summary_parts(lam, upper, epsilon):
    lam, upper, epsilon = map(_as_f64, (lam, upper, epsilon))
    lower = pt.as_tensor_variable(np.float64(0.0))
    s = upper / epsilon

    def f_outside(z):
        return _clipped_exp_outside(z, lower, upper, lam, epsilon)

    def f_inside(z):
        left, right = _clipped_exp_left_right(z, upper, lam, epsilon)
        return _inside_value_and_slope(left, right, s, pt.log(2.0 * upper / epsilon))

    def log_q(z):
        return pt.log(lam) - lam * z

    def dlog_q(z):
        return -lam * pt.ones_like(z)

    def log_q_max(lo, hi):  # decreasing density
        return log_q(lo)

    def dlog_q_absmax(lo, hi):
        return lam * pt.ones_like(lo)

    return lower, upper, s, f_outside, f_inside, log_q, dlog_q, log_q_max, dlog_q_absmax


def clipped_normal_summary_logp(summary, mu, sigma, lower, upper, epsilon):
    r"""Log likelihood of N clipped-Gaussian Laplace reports from their binned summary.

    ``summary`` is the ``(K + 2, 4)`` table built by :func:`pymc_dpnoise.summaries.summarize`
    (rows: left tail, K bins of width :math:`h = (b-a)/K` on :math:`(a, b)`, right tail).
    The cost is O(K), independent of N.  Scalar parameters only.

    **Tails (exact).**  With :math:`s = (b-a)/\epsilon` and :math:`f = \log p`, every report
    :math:`z \le a` has :math:`f(z) = f(a) - (a - z)/s` and every :math:`z \ge b` has
    :math:`f(z) = f(b) - (z - b)/s` (eq. 28: outside the interval only the Laplace kernel
    depends on z).  So the tails contribute
    :math:`n_L f(a) - T_L/s + n_R f(b) - T_R/s`, with :math:`T_L = \sum (a - z)`,
    :math:`T_R = \sum (z - b)`: no approximation.

    **Inside bins (second order).**  For bin j with centre :math:`c_j`, count :math:`n_j`,
    :math:`S_{1j} = \sum (z - c_j)`, :math:`S_{2j} = \sum (z - c_j)^2`,

    .. math::

        \sum_{z \in j} f(z) = n_j f(c_j) + f'(c_j) S_{1j} + \tfrac12 f''(c_j) S_{2j} + R_j,
        \qquad |R_j| \le \tfrac16 \sup_{j} |f'''| \sum_{z\in j} |z - c_j|^3
                    \le \tfrac{1}{48} \sup_j |f'''|\, n_j h^3 .

    **Derivatives.**  The density is :math:`p = k_s * Q` with the Laplace kernel
    :math:`k_s(x) = e^{-|x|/s}/2s` and Q the law of the clipped value (density q on
    :math:`(a,b)`, atoms at a, b).  Since :math:`k_s - s^2 k_s'' = \delta`, on the open
    interval :math:`p - s^2 p'' = q`, hence with :math:`r = q/p`

    .. math::

        f'' = \frac{1 - r}{s^2} - f'^2, \qquad
        f''' = -\frac{r}{s^2}\Big(\frac{q'}{q} - f'\Big) - 2 f' f'',

    and :math:`|f'| \le 1/s` (p is :math:`1/s`-log-Lipschitz).  Here
    :math:`q = N(z; \mu, \sigma^2)`, :math:`q'/q = -(z-\mu)/\sigma^2`.  f' comes from autodiff
    of the closed form; f'' and f''' from the identity (checked against autodiff in the
    tests).  When :math:`s \gg \sigma`, :math:`r \approx s/\sigma` at the mode and
    :math:`f''' \sim 1/(s\sigma^2)`; when :math:`s \ll \sigma`, :math:`f''' \sim 1/\sigma^3`:
    the bound is a function of θ and is returned by
    :func:`clipped_normal_summary_error_bound` at any θ.

    Returns
    -------
    TensorVariable
        Scalar: the approximate :math:`\sum_i \log p(z_i)`.
    """
    parts = _normal_summary_parts(mu, sigma, lower, upper, epsilon)
    return _summary_logp_and_bound(summary, *parts)[0]


def clipped_normal_summary_error_bound(summary, mu, sigma, lower, upper, epsilon):
    r"""Bound on :math:`|\text{exact} - \text{compressed}|` log likelihood at the given θ.

    :math:`\sum_j \tfrac16 M_j A_{3j}` with :math:`A_{3j} = \sum_{z \in j} |z - c_j|^3`
    (stored in the summary) and :math:`M_j \ge \sup_j |f'''|` a rigorous bound: from the
    formula for f''' in :func:`clipped_normal_summary_logp`, with :math:`|f'| \le 1/s`,
    :math:`|f''| \le (\max(1, r) + 1)/s^2`, :math:`|q'/q| \le \max_{edges}|z-\mu|/\sigma^2`
    and :math:`r = q/p \le \max_j q \,/\, (p(c_j) e^{-h/2s})` (p is :math:`1/s`-log-Lipschitz),

    .. math::

        M_j = \frac{r_j}{s^2}\Big(\max|q'/q| + \frac1s\Big) + \frac{2(\max(1, r_j) + 1)}{s^3}.

    (A first version took the largest :math:`|f'''|` at the edges and the centre of each bin; that is
    not a supremum when σ is smaller than the bin width, and the bound then failed on a
    parameter grid reaching σ → 0.)
    """
    parts = _normal_summary_parts(mu, sigma, lower, upper, epsilon)
    return _summary_logp_and_bound(summary, *parts)[1]


def clipped_exponential_summary_logp(summary, lam, upper, epsilon):
    r"""Log likelihood of N clipped-exponential Laplace reports from their binned summary.

    Same table and construction as :func:`clipped_normal_summary_logp` with :math:`a = 0`,
    :math:`b = u`, :math:`s = u/\epsilon`.  Tails are exact: for :math:`z \le 0`,
    :math:`\log p(z) = f(0) + z/s = f(0) - (0 - z)/s`; for :math:`z \ge u`,
    :math:`\log p(z) = f(u) - (z - u)/s` (Supplement 10.2, eq. 30: only the Laplace kernel
    depends on z outside :math:`[0, u]`).  Inside, the clipped value has density
    :math:`q(z) = \lambda e^{-\lambda z}` on :math:`(0, u)` (the atom at u is on the edge),
    so :math:`q'/q = -\lambda` in the f''' formula.
    """
    parts = _exponential_summary_parts(lam, upper, epsilon)
    return _summary_logp_and_bound(summary, *parts)[0]


def clipped_exponential_summary_error_bound(summary, lam, upper, epsilon):
    """Error bound of :func:`clipped_exponential_summary_logp` at the given θ (nats)."""
    parts = _exponential_summary_parts(lam, upper, epsilon)
    return _summary_logp_and_bound(summary, *parts)[1]


def clipped_summary_derivatives(kind, z, *params):
    """``(f, f', f'', f''')`` of the per-report log density at inside points ``z`` (vector).

    ``kind`` is ``"normal"`` (params ``mu, sigma, lower, upper, epsilon``) or
    ``"exponential"`` (``lam, upper, epsilon``).  Used to choose bin widths and in tests.
    """
    parts = (_normal_summary_parts if kind == "normal" else _exponential_summary_parts)(*params)
    _, _, s, _, f_inside, log_q, dlog_q, *_ = parts
    return _inside_derivatives(f_inside, log_q, dlog_q, _as_f64(z), s)
