r"""Exponential families with Laplace-noised sufficient statistics (Bernstein & Sheldon 2018).

Two likelihood pieces that the noisy-count distributions do not cover:

* **truncated families** (Sec. 3.3): the data holder drops every record outside declared
  bounds :math:`[a, b]` and releases :math:`y = \hat s + \mathrm{Laplace}(0, \beta)` with
  :math:`\hat s = \sum_i \mathbf 1[a \le x_i \le b]\, x_i`.  The random-sum CLT (Prop. 1)
  approximates :math:`\hat s \approx N(m, V)` with :math:`m = n q \hat\mu`,
  :math:`V = n q \hat\Sigma + n q (1-q) \hat\mu^2`, :math:`q = P(a \le x \le b)` and
  :math:`\hat\mu, \hat\Sigma` the mean and variance of the truncated family (Lemma 1).  The
  moments are exact closed forms here (:func:`truncated_exponential_moments`,
  :func:`truncated_poisson_moments`); only the normality of :math:`\hat s` is approximated.
  The Laplace noise is then integrated out exactly (:func:`normal_laplace_logp`); Gaussian
  noise :math:`N(0, \sigma^2)` gives :math:`N(m, V + \sigma^2)` (:func:`truncated_sum_gaussian_logp`).
* **multinomial counts** with independent Laplace noise on every category (Sec. 3.2):
  :func:`multinomial_normal_mixture_logp` is the normal approximation
  :math:`s \approx N(np, n(\operatorname{diag} p - pp^T))` with the Laplace noise written as a
  scale mixture of normals (Park & Casella; the paper's own augmentation, Sec. 3.2), the counts
  integrated out in closed form (a diagonal-plus-rank-one covariance), leaving one noise
  variance per category as a latent; :func:`multinomial_counts_from_normal` is the
  non-centred map from standard normals to approximate counts (the alternative latent).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import disconnected_grad

from ..validation import static_value
from . import _normal_laplace, _truncated_moments
from ._normal_laplace import normal_laplace_kernel_logp
from ._special import log_poisson_cdf_ratio, log_poisson_pmf
from ._truncated_moments import truncated_poisson_direct

__all__ = [
    "multinomial_counts_from_normal",
    "multinomial_laplace_logp",
    "multinomial_normal_mixture_logp",
    "normal_laplace_logp",
    "truncated_exponential_moments",
    "truncated_poisson_moments",
    "truncated_sum_clt",
    "truncated_sum_gaussian_logp",
    "truncated_sum_laplace_logp",
]

_LOG2 = np.log(2.0)
_LOG2PI = np.log(2.0 * np.pi)
_SQRT2 = np.sqrt(2.0)
_LOG_SQRT_PI = 0.5 * np.log(np.pi)
#: np.float64, not Python floats: under floatX="float32" PyTensor would round them to float32
_TINY_SD = np.float64(1e-150)
_MINUS_TINY = np.float64(-1e-300)
_ERFCX_SERIES_FROM = np.float64(50.0)


def _as_f64(x):
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


# --------------------------------------------------------------------------------------------
# Normal convolved with Laplace
# --------------------------------------------------------------------------------------------


def normal_laplace_logp(value, mean, var, scale):
    r"""Log density of :math:`y = s + \mathrm{Laplace}(0, \beta)`, :math:`s \sim N(m, v)`.

    With :math:`\sigma = \sqrt v`, :math:`x = (y - m)/\sigma` and :math:`\kappa = \sigma/\beta`,

    .. math::

        p(y) = \frac{1}{2\beta}\int \varphi(t)\, e^{-\kappa |x - t|}\, dt
             = \frac{1}{2\beta}\bigl[e^{E_\kappa(x)} + e^{E_\kappa(-x)}\bigr],\qquad
        E_\kappa(x) = \tfrac{\kappa^2}{2} - \kappa x + \log\Phi(x - \kappa),

    the two halves of the Laplace kernel (the second by :math:`t \to -t`).  This is the
    textbook :math:`\frac{1}{4\beta} e^{v/2\beta^2}[e^{-r/\beta}\operatorname{erfc}(\cdot) +
    e^{r/\beta}\operatorname{erfc}(\cdot)]`, :math:`r = y - m`, evaluated with ``erfcx`` in
    log space (:func:`pymc_dpnoise.math.clipped._tilted_tails`): :math:`e^{\kappa^2/2}` never
    appears outside a log, so it stays finite for :math:`\kappa \to 0` (the Laplace limit) and
    :math:`\kappa \to \infty` (the normal limit, :math:`\varepsilon \to \infty`).

    Parameters
    ----------
    value, mean : tensor_like
        Released value :math:`y` and the normal mean :math:`m`.
    var : tensor_like
        Normal variance :math:`v \ge 0` (0: the Laplace density itself).
    scale : tensor_like
        Laplace scale :math:`\beta > 0`.
    """
    if _NORMAL_LAPLACE_KERNEL:
        # the same density as one kernel with closed-form derivatives (:mod:`._normal_laplace`)
        return normal_laplace_kernel_logp(value, mean, var, scale)
    return _normal_laplace_graph(value, mean, var, scale)


#: whether :func:`normal_laplace_logp` runs :mod:`._normal_laplace`'s kernel (``False``: the
#: graph below; the tests compare the two)
_NORMAL_LAPLACE_KERNEL = True


def _normal_laplace_graph(value, mean, var, scale):
    """:func:`normal_laplace_logp` as a PyTensor graph."""
    value, mean, var, scale = map(_as_f64, (value, mean, var, scale))
    # v = 0 (a sum that is 0 almost surely, e.g. no record kept) is the Laplace limit; a floor
    # of 1e-150 (1 + beta) on sd keeps x, kappa and the gradient of the square root finite
    # there (the limit is reached long before).  Compared in sd, not as 1e-300 (1 + beta^2) on
    # v: that overflowed to inf for beta > 1e154 (e.g. epsilon = 1e-8 with sensitivity 1e300,
    # or epsilon = 1e-300) and made the log density NaN
    floor_sd = _TINY_SD * (1.0 + scale)
    use_var = pt.gt(var, pt.sqr(floor_sd))
    sd = pt.switch(use_var, pt.sqrt(pt.switch(use_var, var, np.float64(1.0))), floor_sd)
    # the density is even in r = y - m: evaluate at |r| (whose derivative sign(0) = 0 is the
    # right one at r = 0) with the larger half fixed, no max/min tie-break to differentiate
    a = pt.abs(value - mean)
    a_over_scale = a / scale  # kappa * x, formed directly (its derivative in sd is 0)
    x = a / sd
    kappa = sd / scale
    a_scale_sd = a * scale / sd  # beta * x
    up = pt.ge(x, kappa)
    # u1 = |x - kappa|/sqrt2 (one-sided derivative at 0), u2 = (x + kappa)/sqrt2, and beta*u
    u1 = pt.switch(up, x - kappa, kappa - x) / _SQRT2
    bu1 = pt.switch(up, a_scale_sd - sd, sd - a_scale_sd) / _SQRT2
    u2 = (x + kappa) / _SQRT2
    bu2 = (a_scale_sd + sd) / _SQRT2
    log_scale = pt.log(scale)
    l1 = _log_scaled_erfcx(u1, bu1, log_scale) - _LOG2  # log(erfcx(u1)/(2 beta))
    l2 = _log_scaled_erfcx(u2, bu2, log_scale) - _LOG2
    # larger half E(|x|) - log beta and smaller minus larger, d = E(-|x|) - E(|x|) <= 0:
    # x >= kappa: E(|x|) = kappa^2/2 - kappa|x| + log Phi(|x| - kappa)
    # x < kappa:  E(|x|) = -x^2/2 + log(erfcx(u1)/2); always E(-|x|) = -x^2/2 + log(erfcx(u2)/2)
    tail_far = pt.log1mexp(pt.minimum(l1 + log_scale - pt.sqr(u1), _MINUS_TINY))
    hi = pt.switch(
        up, 0.5 * pt.sqr(kappa) - a_over_scale - log_scale + tail_far, l1 - 0.5 * pt.sqr(x)
    )
    d = pt.switch(up, l2 + log_scale - pt.sqr(u1) - tail_far, l2 - l1)
    return -_LOG2 + hi + pt.log1p(pt.exp(d))


def _log_scaled_erfcx(u, cu, log_c):
    r""":math:`\log(c\,\operatorname{erfcx}(u))`, :math:`u \ge 0`, with an accurate gradient.

    PyTensor differentiates :math:`\operatorname{erfcx}` as :math:`2u\operatorname{erfcx}(u)
    - 2/\sqrt\pi`, which cancels for large ``u`` (relative error about
    :math:`10^{-16}u^2`: noise from :math:`u \approx 10^8` on).  For :math:`u \ge 50` the
    asymptotic series

    .. math::

        \log\bigl(c\operatorname{erfcx}(u)\bigr) = -\log(cu) - \tfrac12\log\pi
            + \log\Bigl(1 + \sum_{j=1}^{6} (-1)^j \frac{(2j-1)!!}{(2u^2)^j}\Bigr)

    is used (truncation error below :math:`135135/5000^7 < 2\cdot10^{-21}`; PyTensor's
    derivative below 50 is good to about :math:`3\cdot10^{-13}`).  ``cu`` is :math:`c u`
    formed by the caller without cancellation, so that with :math:`c = \beta` the
    :math:`\log\beta` inside :math:`-\log u = \log\beta - \log(\beta u)` cancels in the
    algebra, not in the gradient (the normal limit :math:`\beta \to 0`).  Both branches are
    evaluated at safe arguments where the other is taken (double where).
    """
    big = pt.ge(u, _ERFCX_SERIES_FROM)
    u_small = pt.switch(big, np.float64(1.0), u)
    u_big = pt.switch(big, u, _ERFCX_SERIES_FROM)
    cu_big = pt.switch(big, cu, np.float64(1.0))
    z = 0.5 / pt.sqr(u_big)
    series = z * (-1.0 + z * (3.0 + z * (-15.0 + z * (105.0 + z * (-945.0 + z * 10395.0)))))
    asymptotic = -pt.log(cu_big) - _LOG_SQRT_PI + pt.log1p(series)
    return pt.switch(big, asymptotic, pt.log(pt.erfcx(u_small)) - log_c)


# --------------------------------------------------------------------------------------------
# Truncated families: moments (Lemma 1) and the random-sum CLT (Prop. 1)
# --------------------------------------------------------------------------------------------


def _series_switch(u, small, series, direct):
    """``series(u)`` below ``small``, ``direct(u)`` above, each at a safe argument (double where)."""
    is_small = pt.lt(u, small)
    return pt.switch(
        is_small, series(pt.switch(is_small, u, small)), direct(pt.switch(is_small, 2 * small, u))
    )


def _g_mean(u):
    # 1/u - 1/(e^u - 1): the mean of Exp(rate u) truncated to [0, 1]
    return _series_switch(
        u,
        0.05,
        lambda v: 0.5 - v / 12.0 + v**3 / 720.0 - v**5 / 30240.0,
        lambda v: 1.0 / v + pt.exp(-v) / pt.expm1(-v),
    )


def _h_var(u):
    # 1/u^2 - e^u/(e^u - 1)^2 = 1/u^2 - 1/(4 sinh^2(u/2)): the variance of Exp(u) on [0, 1]
    return _series_switch(
        u,
        0.05,
        lambda v: 1.0 / 12.0 - v**2 / 240.0 + v**4 / 6048.0 - v**6 / 172800.0,
        lambda v: 1.0 / v**2 - pt.exp(-v) / pt.sqr(pt.expm1(-v)),
    )


def truncated_exponential_moments(lam, lower, upper):
    r"""``(log q, mean, var)`` of :math:`x \sim \mathrm{Exponential}(\lambda)` truncated to :math:`[a, b]`.

    :math:`q = P(a \le x \le b) = e^{-\lambda a}(1 - e^{-\lambda L})`, :math:`L = b - a`, and the
    truncated law is :math:`a + L\,\mathrm{Exp}(\lambda L)|_{[0, 1]}`, so with :math:`u = \lambda L`

    .. math::

        \hat\mu = a + L\Bigl(\frac1u - \frac{1}{e^u - 1}\Bigr),\qquad
        \hat\Sigma = L^2\Bigl(\frac{1}{u^2} - \frac{e^u}{(e^u-1)^2}\Bigr),

    the derivatives of :math:`\hat A(\eta) = A(\eta) + \log(F(b;\eta) - F(a;\eta))` in
    :math:`\eta = -\lambda` (Lemma 1) in closed form.  Both brackets cancel for small
    :math:`u`; there their Taylor series (:math:`\tfrac12 - \tfrac{u}{12} + \dots`,
    :math:`\tfrac1{12} - \tfrac{u^2}{240} + \dots`) are used (:math:`u < 0.05`, truncation error
    below :math:`10^{-16}`), and :math:`e^{u}` is only ever formed as :math:`e^{-u}`.
    """
    lam, lower, upper = map(_as_f64, (lam, lower, upper))
    length = upper - lower
    u = lam * length
    log_q = -lam * lower + pt.log1mexp(-u)
    mean = lower + length * _g_mean(u)
    var = pt.sqr(length) * _h_var(u)
    return log_q, mean, var


def _log_poisson_pmf_safe(k, mu):
    # log P(X = k), -inf for k < 0 (evaluated at a safe k)
    ok = pt.ge(k, 0)
    ks = pt.switch(ok, k, 0.0)
    lp = ks * pt.log(mu) - mu - pt.gammaln(ks + 1.0)
    return pt.switch(ok, lp, -np.inf)


def _log_poisson_interval(lower, upper, mu):
    """log P(a <= X <= b), X ~ Poisson(mu), from the side where the difference does not cancel.

    Three branches, each evaluated at a harmless ``mu`` where another one is taken (double
    where: the gradient of a branch not taken must not be NaN):

    * mass mostly below ``a`` (``mu < (a + b)/2``): ``log[P(X >= a) - P(X >= b + 1)]`` with the
      regularised lower incomplete gamma function;
    * mass mostly above ``b``: ``log[F(b) - F(a - 1)]`` with the upper one, while ``F(b)`` is
      a normal number;
    * far above ``b`` (``F(b)`` below 1e-280; it underflows to 0 once ``mu`` exceeds about
      745 + b): the same difference in log space, ``F`` from the log CDF ratio of the
      noisy-count likelihoods (Numba and JAX kernels with an exact gradient), so that
      ``log q`` stays finite when no record is kept in practice.
    """
    # P(X <= k) = Q(k + 1, mu) (gammaincc); P(X >= k) = P(k, mu) (gammainc), k >= 1
    above = pt.ge(mu, 0.5 * (lower + upper))  # mass mostly above b: lower CDFs are small
    a_pos = pt.gt(lower, 0)
    safe_below = pt.maximum(0.5 * (lower + upper) - 1.0, 0.5)
    safe_above = 0.5 * (lower + upper) + 1.0
    cdf_b0 = pt.gammaincc(upper + 1.0, pt.switch(above, mu, safe_above))
    far = above & pt.lt(cdf_b0, 1e-280)
    mu_above = pt.switch(above & ~far, mu, safe_above)
    cdf_b = pt.gammaincc(upper + 1.0, mu_above)
    cdf_am1 = pt.switch(a_pos, pt.gammaincc(pt.switch(a_pos, lower, 1.0), mu_above), 0.0)
    lmu = pt.log(pt.switch(far, mu, safe_above))
    log_cdf_b = log_poisson_pmf(upper, lmu) + log_poisson_cdf_ratio(upper, lmu)
    am1 = pt.switch(a_pos, lower - 1.0, 0.0)
    log_cdf_am1 = pt.switch(
        a_pos, log_poisson_pmf(am1, lmu) + log_poisson_cdf_ratio(am1, lmu), -np.inf
    )
    log_far = log_cdf_b + pt.log1mexp(pt.minimum(log_cdf_am1 - log_cdf_b, 0.0))
    mu_below = pt.switch(above, safe_below, mu)
    sf_a = pt.switch(a_pos, pt.gammainc(pt.switch(a_pos, lower, 1.0), mu_below), 1.0)
    sf_b1 = pt.gammainc(upper + 1.0, mu_below)
    return pt.switch(far, log_far, pt.switch(above, pt.log(cdf_b - cdf_am1), pt.log(sf_a - sf_b1)))


# where the truncation interval [a, b] holds at most this many integers (static bounds), the
# moments are sums over it (_poisson_interval_direct): exact at any rate, and PyTensor's
# graph rewrites take less than half the time of the incomplete gamma functions and their
# gradients (benchmarks/results/cold_compile_parts.md)
_DIRECT_Q_TERMS = 64


def _poisson_interval_direct(lower, upper, mu, terms, start=None):
    r"""``(log q, mean, var)`` of Poisson(mu) truncated to {a, ..., b}, as weighted sums over
    the ``terms`` integers from ``start`` (default a) that lie in [a, b]: exact when
    ``b - a < terms``, and to far below an ulp when the pmf falls by half or more per step
    away from ``start`` (see :func:`truncated_poisson_moments`).

    With :math:`d_j = \log[\mathrm{pmf}(a + j)/\mathrm{pmf}(a)] = j\log\mu - \log[(a+j)!/a!]`
    (the :math:`-\mu` of the pmf cancels, so the weights keep full relative accuracy however
    far :math:`\mu` lies from the interval), :math:`\log q = \log\mathrm{pmf}(a) +
    \log\sum_j e^{d_j}`, :math:`w_j = e^{d_j}/\sum e^{d}`, mean :math:`a + \sum_j j w_j`
    and variance :math:`\sum_j (j - \bar j)^2 w_j`: sums of non-negative terms, exact to a
    few ulp (the ratio forms below lose all accuracy to cancellation once :math:`\mu \gg b`).
    """
    c = lower if start is None else start
    off = pt.arange(terms, dtype="float64")
    a = c[..., None]
    valid = pt.le(a + off, upper[..., None]) & pt.ge(a + off, lower[..., None])
    d = off * pt.log(mu)[..., None] - (pt.gammaln(a + off + 1.0) - pt.gammaln(a + 1.0))
    d = pt.switch(valid, d, -np.inf)
    m = disconnected_grad(pt.max(d, axis=-1))  # d_0 = 0 (c in [a, b]): finite
    e = pt.exp(d - m[..., None])
    total = pt.sum(e, axis=-1)
    w = e / total[..., None]
    jbar = pt.sum(off * w, axis=-1)
    var = pt.sum(pt.sqr(off - jbar[..., None]) * w, axis=-1)
    # Loader's form of pmf(a) (the count kernels'): a few ulp at any a, mu
    log_q = log_poisson_pmf(c, pt.log(mu)) + m + pt.log(total)
    return log_q, c + jbar, var


def _direct_dense(mu, lower, upper, terms):
    return _poisson_interval_direct(lower, upper, mu, terms)


_truncated_moments.DENSE_GRAPH = _direct_dense
_normal_laplace.DENSE_GRAPH = _normal_laplace_graph

#: whether :func:`truncated_poisson_moments` sums a short interval with
#: :mod:`._truncated_moments`'s kernel (``False``: the graph of the same sums; the tests
#: compare the two)
_MOMENTS_KERNEL = True


def _static_width(lower, upper):
    """``max(upper - lower) + 1`` where both bounds are constants (else None): how many
    integers the widest truncation interval holds."""
    lo_v, hi_v = static_value(lower), static_value(upper)
    if lo_v is None or hi_v is None or not lo_v.size or not hi_v.size:
        return None
    d = np.asarray(hi_v, dtype=float) - np.asarray(lo_v, dtype=float)
    if not np.all(np.isfinite(d)):
        return None
    return max(int(np.max(d)) + 1, 1)


def truncated_poisson_moments(mu, lower, upper, width=None):
    r"""``(log q, mean, var)`` of :math:`x \sim \mathrm{Poisson}(\mu)` truncated to :math:`\{a, \dots, b\}`.

    From :math:`E[x\,\mathbf 1_{[a,b]}] = \mu P(a-1 \le x \le b-1)` and
    :math:`E[x(x-1)\mathbf 1_{[a,b]}] = \mu^2 P(a-2 \le x \le b-2)`, with
    :math:`r_1 = (P(a-1) - P(b))/q` and :math:`r_2 = (P(a-2) - P(a-1) + P(b) - P(b-1))/q`
    (:math:`P(k)` the pmf),

    .. math::

        \hat\mu = \mu (1 + r_1),\qquad \hat\Sigma = \mu(1 + r_1) + \mu^2 (r_2 - r_1^2),

    exact, without the cancellation of :math:`E[x^2] - \hat\mu^2` (the :math:`\mu^2` terms
    are grouped analytically).  :math:`q` is a difference of regularised incomplete gamma
    functions taken on the side of the interval where it does not cancel.
    """
    if width is None:
        width = _static_width(lower, upper)
    mu, lower, upper = map(_as_f64, (mu, lower, upper))
    terms = None if width is None or width > _DIRECT_Q_TERMS else max(int(width), 2)
    if terms is not None:
        if _MOMENTS_KERNEL:
            # the same sums as one kernel with the cumulants as derivatives
            return truncated_poisson_direct(mu, lower, upper, terms)
        return _poisson_interval_direct(lower, upper, mu, terms)
    # a wide interval (or bounds known only at run time): where the rate lies far above b
    # (or far below a) the ratio forms cancel (at mu = 1e7 on {0..10} the mean came out
    # 9.95 and the variance negative); there the pmf falls by half or more per step away
    # from b (from a), so 64 terms from that end hold all of q to below 2^-63 of it
    top = pt.ge(mu, 2.0 * (upper + 1.0))
    bottom = pt.ge(lower + 1.0, 2.0 * mu) & ~top
    end = top | bottom
    near = _poisson_interval_direct(
        lower,
        upper,
        mu,
        _DIRECT_Q_TERMS,
        start=pt.switch(top, pt.maximum(upper - (_DIRECT_Q_TERMS - 1), lower), lower),
    )
    mid = pt.switch(end, 0.5 * (lower + upper) + 0.5, mu)  # the ratio forms at a harmless rate
    log_q = _log_poisson_interval(lower, upper, mid)

    def ratio(k):
        return pt.exp(_log_poisson_pmf_safe(k, mid) - log_q)

    r1 = ratio(lower - 1.0) - ratio(upper)
    r2 = ratio(lower - 2.0) - ratio(lower - 1.0) + ratio(upper) - ratio(upper - 1.0)
    mean = mid * (1.0 + r1)
    var = mean + pt.sqr(mid) * (r2 - pt.sqr(r1))
    return tuple(pt.switch(end, x, y) for x, y in zip(near, (log_q, mean, var), strict=True))


def truncated_sum_laplace_logp(value, n, log_q, mean, var, scale):
    r"""Random-sum CLT (Prop. 1) convolved with the Laplace noise.

    :math:`\hat s \approx N(n q \hat\mu,\; n q \hat\Sigma + n q (1 - q)\hat\mu^2)`; the
    released :math:`y = \hat s + \mathrm{Laplace}(0, \beta)` has the density of
    :func:`normal_laplace_logp`.  ``1 - q`` is formed as ``-expm1(log q)``.
    """
    m, v = truncated_sum_clt(n, log_q, mean, var)
    return normal_laplace_logp(value, m, v, scale)


def truncated_sum_clt(n, log_q, mean, var):
    r"""``(m, V)`` of the random-sum CLT (Prop. 1): :math:`m = n q \hat\mu`,
    :math:`V = n q \hat\Sigma + n q (1 - q)\hat\mu^2` (``1 - q`` formed as ``-expm1(log q)``)."""
    n, log_q, mean, var = map(_as_f64, (n, log_q, mean, var))
    q = pt.exp(log_q)
    m = n * q * mean
    v = n * q * (var - pt.expm1(log_q) * pt.sqr(mean))
    return m, v


def truncated_sum_gaussian_logp(value, n, log_q, mean, var, sigma):
    r"""Random-sum CLT (Prop. 1) convolved with Gaussian noise :math:`N(0, \sigma^2)`.

    Within the CLT model this is exact: :math:`\hat s \approx N(m, V)` and
    :math:`y = \hat s + N(0, \sigma^2)` is :math:`N(m, V + \sigma^2)` (the convolution of two
    normals).  :math:`\sigma > 0` keeps the variance positive when :math:`V = 0`.
    """
    m, v = truncated_sum_clt(n, log_q, mean, var)
    value, sigma = _as_f64(value), _as_f64(sigma)
    total = pt.maximum(v, 0.0) + pt.sqr(sigma)
    return -0.5 * (_LOG2PI + pt.log(total) + pt.sqr(value - m) / total)


# --------------------------------------------------------------------------------------------
# Multinomial counts
# --------------------------------------------------------------------------------------------


def multinomial_normal_mixture_logp(value, n, p, noise_var):
    r"""Log density of :math:`y \sim N(np,\, n(\operatorname{diag} p - pp^T) + \operatorname{diag}\sigma^2)`.

    This is :math:`y = s + e`, :math:`s \approx N(np, n(\operatorname{diag}p - pp^T))` (the
    multinomial's normal approximation), :math:`e_j \sim N(0, \sigma_j^2)`; with
    :math:`\sigma_j^2 \sim \mathrm{Exponential}(\text{rate } 1/(2\beta^2))` the noise
    :math:`e_j` is exactly :math:`\mathrm{Laplace}(0, \beta)` (Park & Casella).  The
    covariance :math:`C = D - uu^T`, :math:`D = \operatorname{diag}(np + \sigma^2)`,
    :math:`u = \sqrt n\, p` is diagonal plus rank one, so (matrix determinant lemma and
    Sherman--Morrison)

    .. math::

        \log|C| = \sum_j \log D_j + \log \gamma, \qquad
        r^T C^{-1} r = \sum_j \frac{r_j^2}{D_j} + \frac{(\sum_j r_j u_j / D_j)^2}{\gamma},

    :math:`r = y - np`, with :math:`\gamma = 1 - \sum_j u_j^2/D_j = \sum_j p_j\sigma_j^2/D_j`
    (using :math:`\sum_j p_j = 1`; no cancellation).  :math:`O(k)` per release; the last axis
    is the category axis, ``p`` is renormalised to sum to one.
    """
    value, n, p, noise_var = map(_as_f64, (value, n, p, noise_var))
    p = p / pt.sum(p, axis=-1, keepdims=True)
    n = pt.shape_padright(n)
    mean = n * p
    d = mean + noise_var
    r = value - mean
    gamma = pt.sum(p * noise_var / d, axis=-1)
    ru = pt.sum(r * pt.sqrt(n) * p / d, axis=-1)
    quad = pt.sum(pt.sqr(r) / d, axis=-1) + pt.sqr(ru) / gamma
    logdet = pt.sum(pt.log(d), axis=-1) + pt.log(gamma)
    k = pt.cast(value.shape[-1], "float64")
    return -0.5 * (k * _LOG2PI + logdet + quad)


def multinomial_counts_from_normal(z, n, p):
    r"""Approximate multinomial counts :math:`s = np + Lz` from :math:`k-1` standard normals.

    :math:`L` is the Cholesky factor of :math:`n(\operatorname{diag}p - pp^T)` restricted to
    the first :math:`k-1` categories, in closed form: the normal analogue of drawing the
    counts as a chain of conditional binomials.  With tail masses
    :math:`\rho_j = \sum_{i \ge j} p_i` and :math:`D_j = \sum_{i \le j}(s_i - np_i)`,
    :math:`D_j/\rho_{j+1} = D_{j-1}/\rho_j + \sqrt{n p_j/(\rho_j\rho_{j+1})}\, z_j`, i.e. a
    cumulative sum; :math:`s_k = n - \sum_{j<k} s_j`.  Returns all :math:`k` counts.
    """
    z, n, p = map(_as_f64, (z, n, p))
    p = p / pt.sum(p, axis=-1, keepdims=True)
    n = pt.shape_padright(n)
    # tail masses rho_j = sum_{i >= j} p_i, from a reversed cumulative sum (no cancellation)
    rho = pt.cumsum(p[..., ::-1], axis=-1)[..., ::-1]
    rho_j = rho[..., :-1]
    rho_next = rho[..., 1:]
    # where no mass is left after category j (rho_{j+1} = 0, e.g. p = [1, 0, 0]), D_j = 0 and
    # every later D too (rho is non-increasing): the step is 0 there, not 0/0 = NaN (and not
    # the 1/1e-300 of a floor, which overflowed).  Double where: safe denominators elsewhere.
    live = pt.gt(rho_next, 0.0)
    denom = pt.switch(live, rho_j * rho_next, np.float64(1.0))
    step = pt.switch(live, pt.sqrt(n * p[..., :-1] / denom), 0.0) * z
    dev = rho_next * pt.cumsum(step, axis=-1)  # D_1 .. D_{k-1}
    # not zeros_like(dev[..., :1]): the slice's length is computed symbolically, a traced
    # value in JAX that jnp.broadcast_to refuses as a shape (numpyro failed with dims)
    zeros = pt.zeros((*dev.shape[:-1], 1), dtype=dev.dtype)
    full = pt.concatenate([zeros, dev, zeros], axis=-1)  # D_0 = D_k = 0
    return n * p + (full[..., 1:] - full[..., :-1])


def multinomial_laplace_logp(value, counts, scale):
    r"""Sum over categories of :math:`\log \mathrm{Laplace}(y_j; s_j, \beta)` (last axis)."""
    value, counts, scale = map(_as_f64, (value, counts, scale))
    scale = pt.shape_padright(scale)
    return pt.sum(-_LOG2 - pt.log(scale) - pt.abs(value - counts) / scale, axis=-1)
