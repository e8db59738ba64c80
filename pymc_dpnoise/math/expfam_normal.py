r"""Gaussian records with a truncated two-dimensional statistic (Bernstein & Sheldon, Sec. 3.3).

The data holder keeps the records :math:`x_i \sim N(\mu, \sigma^2)` that fall inside declared
bounds :math:`[a, b]` and releases the noisy sums of :math:`t(x) = (x, x^2)`,

.. math::

    \hat s = \sum_{i=1}^n \mathbf 1[a \le x_i \le b]\,(x_i,\ x_i^2),\qquad
    y_j = \hat s_j + \mathrm{Laplace}(0, \beta),\ j = 1, 2,

with independent noise on the two coordinates.  The random-sum CLT (Prop. 1) gives
:math:`\hat s \approx N(n q \hat\mu,\ n q \hat\Sigma + n q (1-q)\hat\mu\hat\mu^T)`, with
:math:`q = P(a \le x \le b)` and :math:`\hat\mu, \hat\Sigma` the mean and covariance of
:math:`(x, x^2)` under the normal truncated to :math:`[a, b]` (Lemma 1).  Everything here is a
function of four numbers of the truncated normal: :math:`\log q`, its mean :math:`m`, and the
central moments :math:`\kappa_2, \kappa_3, \kappa_4` (:func:`truncated_normal_moments`).

* :func:`truncated_normal_moments`: those numbers, stable for any bounds and scale;
* :func:`truncated_normal_sum_clt`: the CLT mean of :math:`\hat s` and the Cholesky factor of
  its covariance in closed form, written without cancellation;
* :func:`truncated_normal_sum_laplace_logp`: the log density of the release given one
  standard-normal latent per release (the first coordinate of :math:`\hat s`, non-centred),
  with the second coordinate integrated out exactly (normal--Laplace convolution);
* :func:`truncated_normal_sum_gaussian_logp`: the log density of the release when the noise
  on each sum is Gaussian, :math:`N(0, \sigma^2)` instead of Laplace: the CLT normal plus the
  noise is the bivariate normal :math:`N(m, LL^T + \sigma^2 I)`, exact within the CLT model
  and with no latent.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from .clipped import log_ndtr
from .expfam import normal_laplace_logp

__all__ = [
    "truncated_normal_moments",
    "truncated_normal_sum_clt",
    "truncated_normal_sum_gaussian_logp",
    "truncated_normal_sum_laplace_logp",
]

_LOG2 = np.log(2.0)
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)
_LOG_2PI = np.log(2.0 * np.pi)
# Gauss-Legendre rule for the truncated moments: 48 nodes integrate exp(-u) (polynomial
# factors of degree <= 4) over the 40 e-folds kept below to ~1e-14 relative.
_GL_X, _GL_W = np.polynomial.legendre.leggauss(48)
# The density is cut where it falls below e^{-40} of its maximum on [a, b].
_CUT = 80.0


def _as_f64(x):
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


def truncated_normal_moments(mu, sigma, lower, upper):
    r"""``(log q, m, k2, k3, k4)`` of :math:`x \sim N(\mu, \sigma^2)` truncated to :math:`[a, b]`.

    :math:`q = P(a \le x \le b)`, :math:`m = E[x \mid a \le x \le b]` and
    :math:`\kappa_j = E[(x - m)^j \mid a \le x \le b]`, :math:`j = 2, 3, 4`.

    **Method.**  The closed forms (:math:`m_1 = (\varphi(\alpha) - \varphi(\beta))/Z`, the
    recurrence :math:`m_k = (k-1) m_{k-2} + (\alpha^{k-1}\varphi(\alpha) -
    \beta^{k-1}\varphi(\beta))/Z` for the raw moments of the standardised truncated normal,
    :math:`\alpha = (a - \mu)/\sigma`, :math:`\beta = (b - \mu)/\sigma`, and central moments from
    raw ones) cancel catastrophically for the fourth central moment wherever the interval is
    far in a tail (:math:`\kappa_4 \sim 24/\alpha^4` from terms of order :math:`\alpha^4`) or
    narrow (:math:`\kappa_4 \approx h^4/80` from terms of order 1): on
    :math:`[\alpha, \alpha + 5]` it is 0.7% off at :math:`\alpha = 30` and wrong by a factor
    190 at :math:`\alpha = 100`.  Here the standardised density is written around its largest value
    on :math:`[\alpha, \beta]`, :math:`s = \operatorname{clip}(0, \alpha, \beta)`: with
    :math:`w = z - s`,

    .. math::

        \varphi(s + w) = \varphi(s)\, e^{-g(w)},\qquad g(w) = s w + w^2/2 \ge 0
        \text{ on } [\alpha - s, \beta - s],

    and the interval is cut where :math:`g = 40` (:math:`|z| = \sqrt{s^2 + 80}`, the mass
    beyond is below :math:`e^{-40}` of the total).  On what is left :math:`e^{-g}` spans at
    most 40 e-folds and a fixed 48-node Gauss--Legendre rule integrates :math:`e^{-g}` times
    polynomials of degree :math:`\le 4` to about :math:`10^{-13}` relative, whatever the
    width (:math:`1/|s|` in a far tail, :math:`\beta - \alpha` for a narrow interval, about 18
    for a wide one).  The normalised weights give :math:`E[w]` and then the central moments
    directly, :math:`\sum_i P_i (w_i - E w)^j` (no cancellation), and

    .. math::

        \log q = \log \textstyle\sum_i \omega_i - s^2/2 - \tfrac12 \log 2\pi,\qquad
        m = \operatorname{clip}(\mu, a, b) + \sigma E[w],\qquad \kappa_j = \sigma^j c_j,

    (:math:`\mu + \sigma s = \operatorname{clip}(\mu, a, b)`, so :math:`m` is never the
    difference of two large numbers).  Only elementwise operations and a sum over the node
    axis: differentiable, and the same on the C, Numba and JAX backends.  Checked against
    adaptive quadrature (``scipy.integrate.quad``; largest scaled error
    :math:`1.2 \cdot 10^{-12}`, test threshold :math:`10^{-9}`) on a grid from
    :math:`[a, b]` at :math:`10^7` standard deviations from :math:`\mu` to
    :math:`\sigma = 10^5 (b - a)` (``tests/distributions/test_expfam_normal.py``).

    Returns
    -------
    log_q, m, k2, k3, k4 : TensorVariable
        Broadcast shape of the inputs.
    """
    log_q, m, c2, c3, c4, _ = _standardised_moments(mu, sigma, lower, upper)
    s2 = pt.sqr(_as_f64(sigma))
    return log_q, m, s2 * c2, s2 * pt.sqrt(s2) * c3, pt.sqr(s2) * c4


def _standardised_moments(mu, sigma, lower, upper):
    r"""``(log q, m, c2, c3, c4, r)``: the central moments ``c_j`` and the residual variance
    ``r = c4 - c2^2 - c3^2/c2`` of the *standardised* truncated normal (see
    :func:`truncated_normal_moments`).  ``r`` is the variance of :math:`d^2` left after
    regressing it on :math:`d = w - E w`, taken directly as
    :math:`\sum_i P_i (d_i^2 - c_2 - (c_3/c_2) d_i)^2` (a sum of squares: no cancellation)."""
    mu, sigma, lower, upper = map(_as_f64, (mu, sigma, lower, upper))
    alpha = (lower - mu) / sigma
    beta = (upper - mu) / sigma
    s = pt.clip(0.0, alpha, beta)
    reach = _CUT / (pt.sqrt(pt.sqr(s) + _CUT) + pt.abs(s))  # sqrt(s^2 + 80) - |s|, no cancel
    # the ends relative to s, never as a difference of two large numbers (in a far tail
    # alpha - s or beta - s would lose the width (b - a)/sigma to rounding)
    width = (upper - lower) / sigma
    right, left = pt.gt(alpha, 0.0), pt.lt(beta, 0.0)
    lo = pt.maximum(pt.switch(right, 0.0, pt.switch(left, -width, alpha)), -reach)
    hi = pt.minimum(pt.switch(right, width, pt.switch(left, 0.0, beta)), reach)
    half = 0.5 * (hi - lo)
    pad = pt.shape_padright
    w = pad(0.5 * (hi + lo)) + pad(half) * pt.constant(_GL_X)
    omega = pt.constant(_GL_W) * pt.exp(-(pad(s) * w + 0.5 * pt.sqr(w)))
    total = pt.sum(omega, axis=-1)
    p = omega / pad(total)
    m1 = pt.sum(p * w, axis=-1)
    d = w - pad(m1)
    d2 = pt.sqr(d)
    c2 = pt.sum(p * d2, axis=-1)
    c3 = pt.sum(p * d2 * d, axis=-1)
    c4 = pt.sum(p * pt.sqr(d2), axis=-1)
    r = pt.sum(p * pt.sqr(d2 - pad(c2) - pad(c3 / c2) * d), axis=-1)
    log_q = pt.log(half * total) - 0.5 * pt.sqr(s) - _HALF_LOG_2PI
    m = pt.clip(mu, lower, upper) + sigma * m1
    return log_q, m, c2, c3, c4, r


def _outside_mass(mu, sigma, lower, upper):
    # 1 - q = Phi(alpha) + Phi(-beta), accurate when q is close to 1
    alpha = (lower - mu) / sigma
    beta = (upper - mu) / sigma
    return pt.exp(log_ndtr(alpha)) + pt.exp(log_ndtr(-beta))


def truncated_normal_sum_clt(n, mu, sigma, lower, upper):
    r"""Random-sum CLT for :math:`\hat s = \sum_i \mathbf 1[a \le x_i \le b](x_i, x_i^2)`.

    Returns ``(m1, m2, l11, l21, l22)``: the mean :math:`(m_1, m_2) = n q \hat\mu` and the
    Cholesky factor :math:`L = \begin{pmatrix} l_{11} & 0 \\ l_{21} & l_{22}\end{pmatrix}`
    of the covariance :math:`V = n q\,[\hat\Sigma + (1 - q)\hat\mu\hat\mu^T]` (Prop. 1).
    With :math:`m, \kappa_2, \kappa_3, \kappa_4` of the truncated normal
    (:func:`truncated_normal_moments`) and :math:`x - m = d`, :math:`x^2 = m^2 + 2md + d^2`:

    .. math::

        \hat\mu = (m,\ m^2 + \kappa_2),\qquad
        \hat\Sigma = \begin{pmatrix} \kappa_2 & 2m\kappa_2 + \kappa_3 \\
            2m\kappa_2 + \kappa_3 & 4m^2\kappa_2 + 4m\kappa_3 + \kappa_4 - \kappa_2^2
            \end{pmatrix}.

    With :math:`p = 1 - q` and :math:`A = \hat\Sigma + p\hat\mu\hat\mu^T`:
    :math:`l_{11} = \sqrt{nq A_{11}}`, :math:`A_{11} = \kappa_2 + p m^2`,
    :math:`l_{21} = nq A_{12}/l_{11}`, :math:`A_{12} = 2m\kappa_2 + \kappa_3 + p m (m^2 +
    \kappa_2)`, and the Schur complement, from :math:`\det A = \det\hat\Sigma\,(1 + p
    \hat\mu^T\hat\Sigma^{-1}\hat\mu)` (matrix determinant lemma), is a sum of two
    non-negative terms,

    .. math::

        l_{22}^2 = n q \Bigl[r + \frac{p\,\kappa_2\,(\kappa_2 - m^2 - m\kappa_3/\kappa_2)^2}
            {\kappa_2 + p m^2}\Bigr],\qquad r = \kappa_4 - \kappa_2^2 - \kappa_3^2/\kappa_2,

    where :math:`r \ge 0` is the variance of :math:`d^2` not explained by :math:`d`.  Written
    this way nothing cancels, whereas :math:`A_{22} - A_{12}^2/A_{11}` loses digits as
    :math:`(|m|/\sigma)^2` (:math:`(x, x^2)` is then almost collinear): 4 of 16 at
    :math:`|m|/\sigma = 10^6`, all of them from :math:`10^8`.  :math:`1 - q` is
    :math:`\Phi(\alpha) + \Phi(-\beta)` (``log_ndtr``), not :math:`1 - q`: where :math:`q`
    rounds to 1, :math:`p m^2` would otherwise carry an error :math:`10^{-16} m^2`, as large as
    :math:`\kappa_2` itself once :math:`|m|/\sigma \gtrsim 10^7`.
    """
    m1, m2, l11, l21, l22_sq = _clt(n, mu, sigma, lower, upper)
    return m1, m2, l11, l21, _safe_sqrt(l22_sq)


def _safe_sqrt(x):
    # sqrt with a zero (not infinite) gradient at 0: no record kept (q underflows) gives 0
    pos = pt.gt(x, 0.0)
    return pt.switch(pos, pt.sqrt(pt.switch(pos, x, 1.0)), 0.0)


def _clt(n, mu, sigma, lower, upper):
    """As :func:`truncated_normal_sum_clt`, with ``l22**2`` (not its square root) last."""
    n, mu, sigma, lower, upper = map(_as_f64, (n, mu, sigma, lower, upper))
    log_q, m, c2, c3, _, r = _standardised_moments(mu, sigma, lower, upper)
    nq = n * pt.exp(log_q)
    p = _outside_mass(mu, sigma, lower, upper)
    s2 = pt.sqr(sigma)
    k2 = s2 * c2
    k3 = s2 * sigma * c3
    m_sq = pt.sqr(m)
    a11 = k2 + p * m_sq
    a12 = 2.0 * m * k2 + k3 + p * m * (m_sq + k2)
    gap = k2 - m_sq - m * sigma * (c3 / c2)  # k2 - m^2 - m k3 / k2
    schur = pt.sqr(s2) * r + p * k2 * pt.sqr(gap) / a11
    root_nq = _safe_sqrt(nq)
    l11 = root_nq * pt.sqrt(a11)
    l21 = root_nq * a12 / pt.sqrt(a11)
    return nq * m, nq * (m_sq + k2), l11, l21, nq * schur


def truncated_normal_sum_laplace_logp(value, z, n, mu, sigma, lower, upper, scale):
    r"""Log density of the released pair given the first sum's standard-normal latent.

    ``value[..., 0]`` and ``value[..., 1]`` are the noisy :math:`\sum x` and :math:`\sum x^2`.
    With :func:`truncated_normal_sum_clt`, :math:`\hat s_1 = m_1 + l_{11} z` (non-centred;
    :math:`z \sim N(0, 1)` is the model's latent) and
    :math:`\hat s_2 \mid z \sim N(m_2 + l_{21} z,\ l_{22}^2)`, so

    .. math::

        \log p(y \mid z) = \log\mathrm{Laplace}(y_1;\ m_1 + l_{11} z,\ \beta)
            + \log\bigl[N(m_2 + l_{21} z,\ l_{22}^2) * \mathrm{Laplace}(0, \beta)\bigr](y_2),

    the second term in closed form (:func:`pymc_dpnoise.math.expfam.normal_laplace_logp`).
    Integrating :math:`z` against :math:`N(0, 1)` gives the CLT density of :math:`y`; NUTS
    does that integral.  A variance floor of :math:`(10^{-10}\min(\beta, 10^{150}))^2` is added to
    :math:`l_{22}^2` (it is 0 when no record can fall in :math:`[a, b]`; the change to the
    density is of order :math:`10^{-20}`).
    """
    value, z, scale = map(_as_f64, (value, z, scale))
    m1, m2, l11, l21, l22_sq = _clt(n, mu, sigma, lower, upper)
    s1 = m1 + l11 * z
    first = -_LOG2 - pt.log(scale) - pt.abs(value[..., 0] - s1) / scale
    # the floor's scale is capped at 1e150: (1e-10 beta)^2 overflowed to inf for beta > 1e164
    # (e.g. epsilon = 1e-300, or a sensitivity of 1e300) and made the log density NaN
    var2 = l22_sq + pt.sqr(np.float64(1e-10) * pt.minimum(scale, np.float64(1e150)))
    second = normal_laplace_logp(value[..., 1], m2 + l21 * z, var2, scale)
    return first + second


def truncated_normal_sum_gaussian_logp(value, n, mu, sigma, lower, upper, noise_sigma):
    r"""Log density of the released pair with Gaussian noise :math:`N(0, \sigma_e^2)` on each sum.

    ``value[..., 0]`` and ``value[..., 1]`` are the noisy :math:`\sum x` and :math:`\sum x^2`;
    ``noise_sigma`` (:math:`\sigma_e`, one per release) is the standard deviation of the
    independent noise on each of the two sums.  Within the CLT model
    :math:`\hat s \sim N(m, LL^T)` (:func:`truncated_normal_sum_clt`) the release is exactly

    .. math::

        y = \hat s + e,\quad e \sim N(0, \sigma_e^2 I)
        \quad\Longrightarrow\quad y \sim N(m,\ C),\qquad C = LL^T + \sigma_e^2 I

    (the convolution of two normals): no latent variable.  :math:`C` is factored in closed
    form, :math:`C = GG^T`, :math:`G = \begin{pmatrix} g_{11} & 0 \\ g_{21} & g_{22}
    \end{pmatrix}`, with every term of :math:`g_{22}^2` non-negative (no cancellation, also when
    :math:`(x, x^2)` is almost collinear and :math:`l_{22} \ll l_{21}`):

    .. math::

        g_{11}^2 = l_{11}^2 + \sigma_e^2,\qquad
        g_{21} = \frac{l_{11} l_{21}}{g_{11}},\qquad
        g_{22}^2 = C_{22} - g_{21}^2 = l_{22}^2 + \sigma_e^2
            + \frac{l_{21}^2\,\sigma_e^2}{l_{11}^2 + \sigma_e^2},

    and, with :math:`r = y - m`, :math:`u_1 = r_1/g_{11}`, :math:`u_2 = (r_2 - g_{21}u_1)/g_{22}`,

    .. math::

        \log p(y) = -\log 2\pi - \log g_{11} - \log g_{22} - \tfrac12 (u_1^2 + u_2^2).

    :math:`\sigma_e > 0` keeps :math:`C` positive definite also when no record can fall in
    :math:`[a, b]` (:math:`L = 0`).  Only elementwise operations (C, Numba and JAX).
    """
    value, noise_sigma = _as_f64(value), _as_f64(noise_sigma)
    m1, m2, l11, l21, l22_sq = _clt(n, mu, sigma, lower, upper)
    s2 = pt.sqr(noise_sigma)
    l11_sq = pt.sqr(l11)
    g11_sq = l11_sq + s2
    g11 = pt.sqrt(g11_sq)
    g21 = l11 * l21 / g11
    g22_sq = pt.maximum(l22_sq, 0.0) + s2 + pt.sqr(l21) * s2 / g11_sq
    u1 = (value[..., 0] - m1) / g11
    u2 = (value[..., 1] - m2 - g21 * u1) / pt.sqrt(g22_sq)
    return -_LOG_2PI - 0.5 * (pt.log(g11_sq) + pt.log(g22_sq) + pt.sqr(u1) + pt.sqr(u2))
