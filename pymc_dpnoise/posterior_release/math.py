r"""Log-likelihood of an Algorithm 1 posterior release of a naive Bayes model (exact).

Zhang, Rubinstein & Dimitrakakis (AAAI 2016), Algorithm 1, releases every count update of a
discrete Bayesian network with independent Laplace noise of scale :math:`b = 2|\mathcal{I}|/
\varepsilon`, clamped to :math:`[0, n]`.  For a count :math:`c` the released value
:math:`z = \min(n, \max(0, c + \mathrm{Lap}(b)))` has the *clamped-Laplace kernel*

.. math::

    \log h(z \mid c) = \begin{cases}
        \log\tfrac12 - c/b, & z = 0 \quad (P(c + L \le 0)),\\
        \log\tfrac12 - (n - c)/b, & z = n \quad (P(c + L \ge n)),\\
        -\log(2b) - |z - c|/b, & 0 < z < n,
    \end{cases}

a mass at the two atoms and a density inside (one dominating measure, Lebesgue plus the two
atoms, for all parameter values).  Summing it against a Binomial(:math:`n, p`) count gives the
clamped noisy-binomial likelihood of
:class:`~pymc_dpnoise.distributions.LaplaceNoisyBinomial` (``clamp=True``); the tests check the
two against each other.

**Naive Bayes.**  Class :math:`Y \sim \mathrm{Bernoulli}(\pi)`, features
:math:`X_f \mid Y = c \sim \mathrm{Bernoulli}(\theta_{f,c})`, :math:`f = 1..F`.  The count
updates are the class counts :math:`(n - K, K)`, :math:`K = \#\{Y = 1\}`, and for every feature
and class the counts :math:`(N_c - S_{f,c}, S_{f,c})`, :math:`N_1 = K`, :math:`N_0 = n - K`,
:math:`S_{f,c} = \#\{Y = c, X_f = 1\}`.  Given :math:`\theta`, :math:`K \sim
\mathrm{Binomial}(n, \pi)` and, given :math:`K`, the :math:`S_{f,c} \sim
\mathrm{Binomial}(N_c, \theta_{f,c})` are independent.  Both cells of every row are released
and share one latent count, so the release's likelihood is the nested sum

.. math::

    p(z \mid \pi, \theta) = \sum_{k=0}^{n} \binom{n}{k}\pi^k(1-\pi)^{n-k}
        h(z_{Y,1} \mid k)\, h(z_{Y,0} \mid n - k)
        \prod_{f, c} \sum_{s=0}^{N_c(k)} \binom{N_c(k)}{s} \theta_{f,c}^s
        (1 - \theta_{f,c})^{N_c(k) - s}\, h(z_{f,c,1} \mid s)\, h(z_{f,c,0} \mid N_c(k) - s),

evaluated in log space (log-sum-exp over :math:`s`, then over :math:`k`) on a
:math:`(F, 2, n + 1, n + 1)` grid: :math:`O(F n^2)` work per evaluation, exact.  The two
cells of a row are *not* independent given :math:`\theta` (they sum to the row's count before
noise), and every cell is clamped at the global :math:`n`, not at its row's count, which is why
this is not a product of clamped noisy-binomial likelihoods.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt

__all__ = [
    "clamped_laplace_kernel_logp",
    "default_points",
    "naive_bayes_release_logp",
    "naive_bayes_release_logp_normal",
]

_LOG_HALF = np.float64(np.log(0.5))


def _f64(x):
    """A float64 tensor (a Python float exact in float32 would otherwise become float32)."""
    if isinstance(x, pt.TensorVariable):
        return pt.cast(x, "float64")
    return pt.constant(np.asarray(x, dtype="float64"))


def clamped_laplace_kernel_logp(z, count, upper, scale):
    r""":math:`\log h(z \mid c)` of ``clip(count + Laplace(scale), 0, upper)`` (see module).

    ``-inf`` outside :math:`[0, \mathrm{upper}]`.  Broadcasts over all arguments; no parameter
    of a model enters (``count`` is a latent integer), so no gradient flows through it.
    """
    z, c, upper, scale = map(_f64, (z, count, upper, scale))
    inside = -pt.log(2 * scale) - pt.abs(z - c) / scale
    at_lo = _LOG_HALF - c / scale
    at_hi = _LOG_HALF - (upper - c) / scale
    out = pt.switch(pt.le(z, 0.0), at_lo, pt.switch(pt.ge(z, upper), at_hi, inside))
    return pt.switch(pt.lt(z, 0.0) | pt.gt(z, upper), -np.inf, out)


def naive_bayes_release_logp(reports, theta_class, theta, n: int, scale):
    r"""Exact log-likelihood of an Algorithm 1 release of a naive Bayes model (module formula).

    Parameters
    ----------
    reports : tensor_like, shape (2 + 4F,)
        ``[z_{Y,0}, z_{Y,1}, z_{1,0,0}, z_{1,0,1}, z_{1,1,0}, z_{1,1,1}, ...]``: the class row,
        then for every feature its ``(2, 2)`` table (row = class, column = value) flattened,
        as :func:`pymc_dpnoise.posterior_release.reader.release_reports` lays them out.
    theta_class : tensor_like
        :math:`\pi = P(Y = 1)`.
    theta : tensor_like, shape (F, 2)
        :math:`\theta_{f,c} = P(X_f = 1 \mid Y = c)`.
    n : int
        Number of training records (public; a Python integer: it sets the grid).
    scale : float
        Laplace scale :math:`b` of every cell.

    Returns
    -------
    TensorVariable
        Scalar log-likelihood (log of a density in the interior cells and of a mass at the
        atoms).
    """
    n = int(n)
    reports, pi, theta = map(_f64, (reports, theta_class, theta))
    counts = np.arange(n + 1, dtype="float64")
    k = pt.constant(counts)
    nf = np.float64(n)  # not a Python float: 6.0 would become a float32 constant
    # class row: K ~ Binomial(n, pi); cells (n - K, K)
    log_pi, log_1mpi = pt.log(pi), pt.log1p(-pi)
    log_choose_n = _gammaln_np(nf + 1) - _gammaln_np(counts + 1) - _gammaln_np(nf - counts + 1)
    class_term = (
        pt.constant(log_choose_n)
        + k * log_pi
        + (nf - k) * log_1mpi
        + clamped_laplace_kernel_logp(reports[1], k, nf, scale)
        + clamped_laplace_kernel_logp(reports[0], nf - k, nf, scale)
    )
    # feature rows: row count N[c, k] (class 0: n - k, class 1: k), S ~ Binomial(N, theta)
    row_n = np.stack([nf - counts, counts])[:, :, None]  # (2, K, 1)
    s = counts[None, None, :]  # (1, 1, S)
    valid = s <= row_n  # (2, K, S)
    rest = np.maximum(row_n - s, 0.0)
    log_choose = np.where(
        valid,
        _gammaln_np(row_n + 1) - _gammaln_np(s + 1) - _gammaln_np(rest + 1),
        -np.inf,
    )
    z = reports[2:].reshape((-1, 2, 2))  # (F, class, value)
    kern = clamped_laplace_kernel_logp(
        z[:, :, 1, None, None], s, nf, scale
    ) + clamped_laplace_kernel_logp(z[:, :, 0, None, None], rest, nf, scale)  # (F, 2, K, S)
    log_th = pt.log(theta)[:, :, None, None]
    log_1mth = pt.log1p(-theta)[:, :, None, None]
    terms = pt.constant(log_choose) + kern + s * log_th + pt.constant(rest) * log_1mth
    terms = pt.switch(pt.constant(valid), terms, -np.inf)
    rows = pt.logsumexp(terms, axis=-1)  # (F, 2, K)
    return pt.logsumexp(class_term + rows.sum(axis=(0, 1)))


def _gammaln_np(x):
    from scipy.special import gammaln

    return gammaln(x)


def default_points(n: int, scale: float) -> int:
    r"""Nodes for :func:`naive_bayes_release_logp_normal`: spacing at most half the Laplace scale
    over 12 of the largest standard deviation, :math:`\sqrt n/2` (at least 61, at most 801)."""
    return int(min(801, max(61, math.ceil(12 * math.sqrt(n) / 2 / (scale / 2)) + 1)))


def naive_bayes_release_logp_normal(reports, theta_class, theta, n: int, scale, points=None):
    r"""Normal approximation of :func:`naive_bayes_release_logp` for large ``n``.

    Every latent count is replaced by a normal with the binomial's mean and variance (plus
    1/12, the variance of rounding, which keeps a row with no records well defined): the class
    count :math:`K \approx N(n\pi, n\pi(1-\pi) + 1/12)` and, given :math:`K`, each
    :math:`S_{f,c} \approx N(N_c\theta_{f,c}, N_c\theta_{f,c}(1-\theta_{f,c}) + 1/12)`.  Each
    normal is integrated against the *exact* clamped-Laplace kernels by the trapezoidal rule on
    ``points`` equally spaced nodes over :math:`\pm 6` standard deviations (clipped to the
    count's range), so the cost is :math:`O(F\,\mathrm{points}^2)` whatever :math:`n`.  Accuracy
    needs the normal approximation of the binomial (large :math:`N_c\theta(1-\theta)`) and a
    node spacing (:math:`12\,\mathrm{sd}/(\mathrm{points} - 1)`) well below the Laplace scale
    (default: :func:`default_points`); it ignores that counts are integers, which matters when
    the Laplace scale is below one count.  The tests compare it with the exact sum at ``n`` =
    300.
    """
    n = int(n)
    if points is None:
        if isinstance(scale, pt.Variable):
            raise ValueError("`points` must be given when `scale` is symbolic")
        points = default_points(n, float(scale))
    reports, pi, theta = map(_f64, (reports, theta_class, theta))
    nf = np.float64(n)
    t = np.linspace(-6.0, 6.0, int(points))
    log_w = -0.5 * t**2
    log_w = pt.constant(log_w - np.logaddexp.reduce(log_w))
    t = pt.constant(t)
    sd_k = pt.sqrt(nf * pi * (1 - pi) + 1.0 / 12)
    k = pt.clip(nf * pi + sd_k * t, 0.0, nf)  # (G,)
    class_term = (
        log_w
        + clamped_laplace_kernel_logp(reports[1], k, nf, scale)
        + clamped_laplace_kernel_logp(reports[0], nf - k, nf, scale)
    )
    row_n = pt.stack([nf - k, k])[None, :, :, None]  # (1, 2, G, 1)
    th = theta[:, :, None, None]  # (F, 2, 1, 1)
    sd_s = pt.sqrt(row_n * th * (1 - th) + 1.0 / 12)
    s = pt.clip(row_n * th + sd_s * t[None, None, None, :], 0.0, row_n)  # (F, 2, G, H)
    z = reports[2:].reshape((-1, 2, 2))
    kern = clamped_laplace_kernel_logp(
        z[:, :, 1, None, None], s, nf, scale
    ) + clamped_laplace_kernel_logp(z[:, :, 0, None, None], row_n - s, nf, scale)
    rows = pt.logsumexp(kern + log_w[None, None, None, :], axis=-1)  # (F, 2, G)
    return pt.logsumexp(class_term + rows.sum(axis=(0, 1)))
