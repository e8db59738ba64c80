r"""Bernstein & Sheldon (2018) baselines for Laplace-noised sufficient statistics.

The comparison methods of the paper's Sec. 4 ("naive", OPS, and the paper's own Gibbs
samplers), written in NumPy/SciPy and vectorised over independent releases: every function
takes arrays of releases and returns one posterior (or one chain) per release, so a whole
simulation-based-calibration cell runs in one call.

Conjugate updates (naive and non-private)
-----------------------------------------
For :math:`n` records with sufficient statistic total :math:`s`,

* binomial, :math:`\theta \sim \mathrm{Beta}(\alpha, \beta)`:
  :math:`\theta \mid s \sim \mathrm{Beta}(\alpha + s, \beta + n - s)`;
* Poisson, rate per record :math:`\lambda \sim \mathrm{Gamma}(\alpha, \beta)` (rate
  :math:`\beta`): :math:`\lambda \mid s \sim \mathrm{Gamma}(\alpha + s, \beta + n)`;
* exponential, rate :math:`\lambda \sim \mathrm{Gamma}(\alpha, \beta)`:
  :math:`\lambda \mid s \sim \mathrm{Gamma}(\alpha + n, \beta + s)`.

The *non-private* posterior uses the clean :math:`s`.  The *naive* posterior plugs in the
released noisy value instead, clamped to the statistic's valid range (:math:`[0, n]` for
the binomial, :math:`[0, \infty)` otherwise) as the paper does so that the update is a
proper distribution (:func:`naive_posterior`).

One-posterior sampling (OPS)
----------------------------
The exponential mechanism with the log-likelihood as utility (Wang et al. 2015; Foulds et al.
2016), binomial only: with :math:`\theta` restricted to :math:`[a_0, 1 - a_0]`, replacing one
Bernoulli record changes the log-likelihood by at most
:math:`\Delta = \log\frac{1 - a_0}{a_0}` for every :math:`\theta`.  One draw from the
tempered posterior

.. math::

    p_w(\theta \mid x) \propto \mathrm{Beta}(\theta; \alpha, \beta)\,
        \theta^{w s} (1 - \theta)^{w (n - s)}\, \mathbf 1[a_0 \le \theta \le 1 - a_0]

changes its density by at most :math:`e^{w\Delta}` in the numerator and :math:`e^{w\Delta}` in
the normaliser, so it is :math:`2 w \Delta`-DP: :math:`w = \epsilon_{\mathrm{ops}} / (2\Delta)`
(:func:`ops_weight`).  The paper releases 100 draws at :math:`\epsilon/100` each (sequential
composition: :math:`\epsilon` in total) with :math:`a_0 = 0.1` (:func:`ops_binomial`).

Gibbs samplers (the paper's Algorithms 1 and 2)
-----------------------------------------------
The latent total :math:`s` gets the CLT approximation :math:`N(n\mu(\theta), n\Sigma(\theta))`
and the Laplace noise is a scale mixture of normals, :math:`y \mid s, \sigma^2 \sim
N(s, \sigma^2)`, :math:`\sigma^2 \sim \mathrm{Exp}(1/(2b^2))`, :math:`b = \Delta_s/\epsilon`.
One sweep: :math:`\theta \mid s` by conjugacy; :math:`s \mid \theta, \sigma^2, y` a product of
two normals; :math:`1/\sigma^2 \mid s, y \sim \mathrm{InverseGaussian}(1/(b|y - s|), 1/b^2)`
(Park & Casella 2008).  :func:`gibbs_binomial` and :func:`gibbs_poisson` are Algorithm 1;
:func:`gibbs_truncated_exponential` is Algorithm 2 (truncation bounds, random-sum CLT).

What this re-implementation does differently from the authors' public code, and why:

* **no rejection loop**: the conditional of :math:`s` is a normal *restricted to the valid
  range* of the statistic; it is drawn exactly by inverse CDF in log space, so a
  conditional whose mass is far outside the range cannot loop forever;
* **truncation bounds are inputs** of the release (never computed from the true parameter or
  the data), and the Laplace noise of a vector statistic is one draw per coordinate;
* **the inverse-Gaussian draw is computed without cancellation**: NumPy's ``wald`` returns 0
  (so :math:`\sigma^2 = \infty`) when the mean is many orders above the shape, which happens
  whenever :math:`|y - s| \ll b`; :func:`inverse_gaussian` uses the smaller root in the
  product form;
* **Algorithm 2 keeps one consistent state**: the paper draws the centre statistic
  :math:`\hat s_c` twice per sweep (once inside :math:`s`, once afresh from its prior for the
  :math:`\sigma^2` update, line 10) and adds the variances of the three truncation regions as if
  they were independent.  Here :math:`\hat s_c \mid \theta, \sigma^2, y` is drawn once, the
  outer part :math:`r = \hat s_\ell + \hat s_u \mid \hat s_c, \theta` from the joint normal of
  the random-sum CLT *with* the multinomial covariance
  :math:`\mathrm{Cov}(\hat s_j, \hat s_k) = -n q_j q_k \hat\mu_j \hat\mu_k`, and
  :math:`s = \hat s_c + r`; :math:`\sigma^2` is updated from the same :math:`\hat s_c`.  The
  typos of Algorithm 3 are fixed (:math:`q = F(w) - F(v)`, :math:`m = n q \hat\mu`).

The sampler is still the paper's: it approximates :math:`p(s \mid \theta)` by a normal when
drawing :math:`s` but uses the exact conjugate update for :math:`\theta`, so its stationary
distribution is close to the exact posterior only where the CLT is accurate (moderate to large
:math:`n \min(\theta, 1 - \theta)`).  The exact marginal likelihoods
(:class:`~pymc_dpnoise.LaplaceNoisyBinomial`, :class:`~pymc_dpnoise.LaplaceNoisyPoisson`) need
no such approximation.

Examples
--------
>>> import numpy as np
>>> from pymc_dpnoise.baselines import gibbs_binomial, naive_posterior
>>> rng = np.random.default_rng(0)
>>> y = np.array([312.4, 95.0])               # two noisy counts, n = 1000, epsilon = 0.1
>>> a, b = naive_posterior("binomial", y, 1000)
>>> np.round(a / (a + b), 3).tolist()
[0.313, 0.096]
>>> draws = gibbs_binomial(y, 1000, 0.1, rng=rng, iters=2000, burn=500)
>>> draws.shape
(2000, 2)
>>> bool(abs(draws[:, 0].mean() - 0.312) < 0.02)
True
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from ..validation import check_finite, check_rng

__all__ = [
    "conjugate_posterior",
    "gibbs_binomial",
    "gibbs_poisson",
    "gibbs_truncated_exponential",
    "inverse_gaussian",
    "naive_posterior",
    "ops_binomial",
    "ops_weight",
    "posterior_cdf",
    "posterior_draws",
    "truncated_exponential_moments",
]

FAMILIES = ("binomial", "poisson", "exponential")


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------


def _family(family: str) -> str:
    if family not in FAMILIES:
        raise ValueError(f"`family` must be one of {FAMILIES}; got {family!r}")
    return family


def _positive(name, value) -> np.ndarray:
    v = np.asarray(value, dtype=float)
    check_finite(name, v)
    if np.any(v <= 0):
        raise ValueError(f"`{name}` must be > 0; got {v[v <= 0].ravel()[:5]}")
    return v


def _counts(name, value) -> np.ndarray:
    v = np.asarray(value, dtype=float)
    check_finite(name, v)
    if np.any((v < 0) | (v != np.floor(v))):
        raise ValueError(f"`{name}` must hold non-negative integers; got {v.ravel()[:5]}")
    return v


def _released(name, value) -> np.ndarray:
    v = np.asarray(value, dtype=float)
    check_finite(name, v)
    return v


def _iterations(iters, burn):
    if int(iters) != iters or iters < 1:
        raise ValueError(f"`iters` must be a positive integer; got {iters!r}")
    if int(burn) != burn or burn < 0:
        raise ValueError(f"`burn` must be a non-negative integer; got {burn!r}")
    return int(iters), int(burn)


# --------------------------------------------------------------------------------------------
# conjugate updates
# --------------------------------------------------------------------------------------------


def conjugate_posterior(family: str, s, n, alpha=1.0, beta=1.0):
    """Parameters of the conjugate posterior given the clean total ``s`` of ``n`` records.

    Returns ``(a, b)``: Beta(a, b) for ``"binomial"`` (success probability), Gamma(shape a,
    rate b) for ``"poisson"`` and ``"exponential"`` (rate per record).  ``s`` and ``n``
    broadcast.  A total outside the statistic's range is an error (use
    :func:`naive_posterior` for noisy totals).

    Examples
    --------
    >>> [float(v) for v in conjugate_posterior("binomial", 3, 10, 1.0, 1.0)]
    [4.0, 8.0]
    >>> [float(v) for v in conjugate_posterior("exponential", 12.5, 10, 2.0, 1.0)]
    [12.0, 13.5]
    """
    _family(family)
    s = _released("s", s)
    n = _counts("n", n)
    alpha, beta = _positive("alpha", alpha), _positive("beta", beta)
    if np.any(s < 0) or (family == "binomial" and np.any(s > n)):
        raise ValueError("`s` is outside the statistic's range (0 <= s, and s <= n for binomial)")
    if family == "binomial":
        return alpha + s, beta + n - s
    if family == "poisson":
        return alpha + s, beta + n
    return alpha + n, beta + s


def naive_posterior(family: str, y, n, alpha=1.0, beta=1.0):
    """The naive baseline: :func:`conjugate_posterior` with the noisy ``y`` as if clean.

    ``y`` is first clamped to the statistic's valid range (``[0, n]`` for the binomial,
    ``[0, inf)`` for Poisson and exponential totals), as in the paper's experiments.
    """
    _family(family)
    y = _released("y", y)
    n = _counts("n", n)
    hi = n if family == "binomial" else np.inf
    return conjugate_posterior(family, np.clip(y, 0.0, hi), n, alpha, beta)


def _dist(family, a, b):
    if family == "binomial":
        return stats.beta(a, b)
    return stats.gamma(a, scale=1.0 / b)


def posterior_cdf(family: str, params, theta) -> np.ndarray:
    """CDF at ``theta`` of the conjugate posterior with ``params = (a, b)`` (exact SBC ranks)."""
    a, b = params
    return np.asarray(_dist(_family(family), a, b).cdf(theta), dtype=float)


def posterior_draws(family: str, params, size: int, rng) -> np.ndarray:
    """``size`` draws of each conjugate posterior: shape ``(size, *broadcast(a, b).shape)``."""
    rng = check_rng(rng)
    a, b = np.broadcast_arrays(*map(np.asarray, params))
    if _family(family) == "binomial":
        return rng.beta(a, b, size=(int(size), *a.shape))
    return rng.gamma(a, 1.0 / b, size=(int(size), *a.shape))


# --------------------------------------------------------------------------------------------
# OPS
# --------------------------------------------------------------------------------------------


def ops_weight(epsilon_per_sample, a0=0.1) -> float:
    r"""Likelihood exponent :math:`w = \epsilon_{\mathrm{ops}} / (2 \log((1 - a_0)/a_0))`.

    A draw from the tempered Beta posterior restricted to :math:`[a_0, 1 - a_0]` is then
    :math:`\epsilon_{\mathrm{ops}}`-DP for replace-one neighbours (see the module docstring).

    Examples
    --------
    >>> round(ops_weight(0.01, 0.1), 6)
    0.002276
    """
    eps = float(_positive("epsilon_per_sample", epsilon_per_sample))
    a0 = float(a0)
    if not 0.0 < a0 < 0.5:
        raise ValueError(f"`a0` must be in (0, 0.5); got {a0!r}")
    return eps / (2.0 * math.log((1.0 - a0) / a0))


def ops_binomial(s, n, epsilon, rng, *, alpha=1.0, beta=1.0, samples=100, a0=0.1):
    """One-posterior sampling for binomial data (the paper's OPS baseline).

    Parameters
    ----------
    s, n : array_like
        Clean count of ones and number of records (OPS runs on the data, not on a noisy
        release).  Broadcast together.
    epsilon : float
        Total privacy budget; each of the ``samples`` draws uses ``epsilon / samples``.
    rng : numpy.random.Generator
    alpha, beta : float
        Beta prior (restricted to ``[a0, 1 - a0]``).
    samples : int
        Number of released draws (100 in the paper).
    a0 : float
        Support of theta is truncated to ``[a0, 1 - a0]`` (0.1 in the paper).

    Returns
    -------
    numpy.ndarray, shape ``(samples, *shape)``
        The released draws: the "OPS posterior" of each data set.
    """
    rng = check_rng(rng)
    s, n = np.broadcast_arrays(_counts("s", s), _counts("n", n))
    if np.any(s > n):
        raise ValueError("`s` must be <= `n`")
    eps = float(_positive("epsilon", epsilon))
    if int(samples) != samples or samples < 1:
        raise ValueError(f"`samples` must be a positive integer; got {samples!r}")
    w = ops_weight(eps / samples, a0)
    a = float(alpha) + w * s
    b = float(beta) + w * (n - s)
    lo = stats.beta.cdf(a0, a, b)
    hi = stats.beta.cdf(1.0 - a0, a, b)
    u = rng.uniform(size=(int(samples), *a.shape))
    return np.clip(stats.beta.ppf(lo + u * (hi - lo), a, b), a0, 1.0 - a0)


# --------------------------------------------------------------------------------------------
# Gibbs building blocks
# --------------------------------------------------------------------------------------------


def inverse_gaussian(mean, shape, rng) -> np.ndarray:
    r"""Draws from InverseGaussian(mean, shape), stable when ``mean >> shape``.

    Michael, Schucany & Haas (1976) with the smaller root written as
    :math:`\mu / (1 + c + \sqrt{2c + c^2})`, :math:`c = \mu \nu^2 / (2\lambda)`, so it never
    cancels (NumPy's ``wald`` returns 0 there).  ``mean`` may be ``inf`` (then the draw is the
    Lévy limit :math:`\lambda/\nu^2`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = inverse_gaussian(np.full(200_000, 2.0), 3.0, rng)
    >>> bool(abs(x.mean() - 2.0) < 0.02)
    True
    >>> bool(np.all(inverse_gaussian(np.full(5, 1e12), 1e-4, rng) > 0))
    True
    """
    mu, lam = np.broadcast_arrays(np.asarray(mean, dtype=float), np.asarray(shape, dtype=float))
    nu2 = rng.standard_normal(mu.shape) ** 2
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        c = mu * nu2 / (2.0 * lam)
        small = mu / (1.0 + c + np.sqrt(2.0 * c + c * c))
        small = np.where(np.isinf(mu), lam / nu2, small)  # mu -> inf limit
        keep = rng.uniform(size=mu.shape) * (mu + small) <= mu
        keep |= np.isinf(mu)
        return np.where(keep, small, mu * (mu / small))


def _truncnorm(rng, mean, var, lo, hi) -> np.ndarray:
    """Exact draws of N(mean, var) restricted to [lo, hi], by inverse CDF in log space.

    Intervals above the mean are mirrored below it, so both standardised bounds' CDFs are
    computed where they do not round to 1; the draw is ``ndtri_exp`` of a uniform on
    ``[log Phi(a), log Phi(b)]`` in probability, so it stays exact far in the tails.
    """
    mean, var, lo, hi = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (mean, var, lo, hi))
    )
    sd = np.sqrt(var)
    a = (lo - mean) / sd
    b = (hi - mean) / sd
    flip = a > 0
    a, b = np.where(flip, -b, a), np.where(flip, -a, b)
    la, lb = special.log_ndtr(a), special.log_ndtr(b)
    with np.errstate(divide="ignore"):
        log_mass = lb + np.log1p(-np.exp(la - lb))  # log(Phi(b) - Phi(a))
        u = np.log(rng.uniform(size=mean.shape))
    z = special.ndtri_exp(np.logaddexp(la, u + log_mass))
    z = np.clip(z, a, b)
    return mean + sd * np.where(flip, -z, z)


def _norm_product(m1, v1, m2, v2):
    """The normal proportional to N(x; m1, v1) N(x; m2, v2) (NormProduct, scalar case)."""
    v = 1.0 / (1.0 / v1 + 1.0 / v2)
    return v * (m1 / v1 + m2 / v2), v


def _sigma2_update(y, s, scale, rng):
    """Park-Casella: 1/sigma^2 | y, s ~ InverseGaussian(1/(b |y - s|), 1/b^2)."""
    z = np.maximum(np.abs(y - s), 1e-300)
    return 1.0 / inverse_gaussian(1.0 / (scale * z), 1.0 / scale**2, rng)


def _gibbs_alg1(family, y, n, epsilon, sensitivity, alpha, beta, iters, burn, rng, init):
    rng = check_rng(rng)
    iters, burn = _iterations(iters, burn)
    y, n, eps, sens = np.broadcast_arrays(
        _released("y", y),
        _counts("n", n),
        _positive("epsilon", epsilon),
        _positive("sensitivity", sensitivity),
    )
    alpha, beta = float(_positive("alpha", alpha)), float(_positive("beta", beta))
    b = sens / eps
    hi = n if family == "binomial" else np.full(n.shape, np.inf)
    s = np.clip(y, 0.0, hi) if init is None else np.array(init, dtype=float) * np.ones(y.shape)
    sigma2 = np.full(y.shape, 2.0) * b**2  # prior mean of the mixing variance
    out = np.empty((iters, *y.shape))
    for it in range(burn + iters):
        # line 3: theta | s by conjugacy (the exact exponential-family view)
        if family == "binomial":
            theta = rng.beta(alpha + s, beta + n - s)
            theta = np.clip(theta, 1e-300, 1.0 - 1e-16)
            m, v = n * theta, n * theta * (1.0 - theta)
        else:
            theta = rng.gamma(alpha + s, 1.0 / (beta + n))
            theta = np.maximum(theta, 1e-300)
            m, v = n * theta, n * theta
        # lines 4-5: s | theta, sigma^2, y: CLT normal x normal noise, restricted to the range
        ms, vs = _norm_product(m, np.maximum(v, 1e-300), y, sigma2)
        s = _truncnorm(rng, ms, vs, 0.0, hi)
        # line 6: the Laplace mixing variance (Park & Casella)
        sigma2 = _sigma2_update(y, s, b, rng)
        if it >= burn:
            out[it - burn] = theta
    return out


def gibbs_binomial(
    y, n, epsilon, *, sensitivity=1.0, alpha=1.0, beta=1.0, iters=5000, burn=2000, rng, init=None
) -> np.ndarray:
    """Algorithm 1 of Bernstein & Sheldon for noisy binomial counts, Beta(alpha, beta) prior.

    Parameters
    ----------
    y : array_like
        Released noisy counts (one independent chain per element).
    n : array_like of int
        Records behind each count (broadcasts with ``y``).
    epsilon, sensitivity : array_like
        Laplace scale ``sensitivity / epsilon`` of each release.
    alpha, beta : float
        Beta prior of the success probability.
    iters, burn : int
        Kept iterations and burn-in (the paper: 5000 and 2000).
    rng : numpy.random.Generator
    init : array_like, optional
        Starting value of the latent count (default: ``y`` clamped to ``[0, n]``).

    Returns
    -------
    numpy.ndarray, shape ``(iters, *broadcast shape)``
        The chain of the success probability.
    """
    return _gibbs_alg1("binomial", y, n, epsilon, sensitivity, alpha, beta, iters, burn, rng, init)


def gibbs_poisson(
    y, n, epsilon, sensitivity, *, alpha=1.0, beta=1.0, iters=5000, burn=2000, rng, init=None
) -> np.ndarray:
    """Algorithm 1 for a noisy total of ``n`` Poisson(lambda) records, Gamma(alpha, beta) prior.

    ``sensitivity`` is the declared per-record bound (the Laplace scale is
    ``sensitivity / epsilon``).  Returns the chain of the per-record rate lambda, shape
    ``(iters, *broadcast shape)``; see :func:`gibbs_binomial` for the other arguments.
    """
    return _gibbs_alg1("poisson", y, n, epsilon, sensitivity, alpha, beta, iters, burn, rng, init)


# --------------------------------------------------------------------------------------------
# Algorithm 2: truncated exponential family (exponential data)
# --------------------------------------------------------------------------------------------


def truncated_exponential_moments(lam, v, w):
    r"""Random-sum CLT pieces of Exponential(lam) data truncated to ``[v, w]`` (Prop. 1, Lemma 1).

    Returns ``(q, mean, var)``: :math:`q = F(w) - F(v) = e^{-\lambda v} - e^{-\lambda w}` and the
    mean and variance of :math:`x` given :math:`v \le x \le w`, in closed form (the derivatives
    of :math:`A(\eta) + \log(F(w; \eta) - F(v; \eta))` at :math:`\eta = -\lambda`):
    with :math:`d = w - v`, :math:`g = \lambda d / \operatorname{expm1}(\lambda d)`,

    .. math::

        \hat\mu = v + \frac{1 - g}{\lambda}, \qquad
        \hat\Sigma = \frac{1}{\lambda^2}\Bigl(1 - g^2 e^{\lambda d}\Bigr)

    (for :math:`w = \infty`: :math:`\hat\mu = v + 1/\lambda`, :math:`\hat\Sigma = 1/\lambda^2`).

    Examples
    --------
    >>> q, m, s2 = truncated_exponential_moments(1.0, 0.0, np.inf)
    >>> float(q), float(m), float(s2)
    (1.0, 1.0, 1.0)
    """
    lam = np.asarray(lam, dtype=float)
    v = np.asarray(v, dtype=float)
    w = np.asarray(w, dtype=float)
    d = w - v
    q = np.exp(-lam * v) * -np.expm1(-lam * d)
    with np.errstate(over="ignore", invalid="ignore"):
        x = lam * d
        g = np.where(np.isinf(x), 0.0, x / np.expm1(np.minimum(x, 700.0)))
        g2e = np.where(np.isinf(x), 0.0, g * g * np.exp(np.minimum(x, 700.0)))
    small = x < 1e-4  # series: mean v + d/2 - lam d^2/12, var d^2/12
    dd = np.where(small, d, 0.0)
    mean = np.where(small, v + dd / 2.0 - lam * dd * dd / 12.0, v + (1.0 - g) / lam)
    var = np.where(small, dd * dd / 12.0, (1.0 - g2e) / lam**2)
    return q, mean, np.maximum(var, 0.0)


def gibbs_truncated_exponential(
    y,
    n,
    lower,
    upper,
    epsilon,
    *,
    alpha=1.0,
    beta=1.0,
    iters=5000,
    burn=2000,
    rng,
) -> np.ndarray:
    r"""Algorithm 2 for exponential data truncated to ``[lower, upper]``, Gamma prior on the rate.

    The data holder releases :math:`y = \hat s_c + \mathrm{Laplace}(0, \Delta/\epsilon)`, where
    :math:`\hat s_c` is the sum of the records inside the declared bounds and
    :math:`\Delta = \max(\text{upper}, \text{upper} - \text{lower}) = \text{upper}` (paper
    Appendix C; ``0 <= lower < upper`` are chosen before seeing the data).  The rate
    :math:`\lambda \sim \mathrm{Gamma}(\alpha, \beta)`.

    One sweep (see the module docstring for the differences from the paper's listing):

    1. :math:`\lambda \mid s \sim \mathrm{Gamma}(\alpha + n, \beta + s)`;
    2. random-sum CLT of the three regions :math:`[0, a], [a, b], [b, \infty)`:
       :math:`\hat s_j \approx N(n q_j \hat\mu_j,\ n q_j \hat\Sigma_j + n q_j (1 - q_j)\hat\mu_j^2)`,
       :math:`\mathrm{Cov}(\hat s_j, \hat s_k) = -n q_j q_k \hat\mu_j \hat\mu_k`;
    3. :math:`\hat s_c \mid \lambda, \sigma^2, y` (normal product, restricted to
       :math:`[0, n b]`), then :math:`r = \hat s_\ell + \hat s_u \mid \hat s_c, \lambda` from the
       joint normal (restricted to :math:`r \ge 0`), :math:`s = \hat s_c + r`;
    4. :math:`1/\sigma^2 \sim \mathrm{InverseGaussian}(1/(b' |y - \hat s_c|), 1/b'^2)`,
       :math:`b' = \Delta/\epsilon`.

    Returns the chain of the rate, shape ``(iters, *broadcast shape)``.
    """
    rng = check_rng(rng)
    iters, burn = _iterations(iters, burn)
    lo, up = float(lower), float(upper)
    if not (np.isfinite(lo) and np.isfinite(up) and 0.0 <= lo < up):
        raise ValueError(f"need finite bounds 0 <= lower < upper; got lower={lower}, upper={upper}")
    y, n, eps = np.broadcast_arrays(
        _released("y", y), _counts("n", n), _positive("epsilon", epsilon)
    )
    alpha, beta = float(_positive("alpha", alpha)), float(_positive("beta", beta))
    scale = up / eps  # sensitivity max(upper, upper - lower) = upper
    hi_c = n * up
    s_c = np.clip(y, 0.0, hi_c)
    s = s_c.copy()  # start as if nothing fell outside the bounds
    sigma2 = 2.0 * scale**2
    out = np.empty((iters, *y.shape))
    edges = [(0.0, lo), (lo, up), (up, np.inf)]
    for it in range(burn + iters):
        lam = rng.gamma(alpha + n, 1.0 / (beta + s))
        q, mu, var = zip(*(truncated_exponential_moments(lam, v, w) for v, w in edges), strict=True)
        mean = [n * qj * mj for qj, mj in zip(q, mu, strict=True)]
        vr = [
            n * qj * vj + n * qj * (1.0 - qj) * mj**2 for qj, mj, vj in zip(q, mu, var, strict=True)
        ]
        # centre: prior N(mean_c, V_c) times the Gaussian noise given sigma^2
        m_c, v_c = _norm_product(mean[1], np.maximum(vr[1], 1e-300), y, sigma2)
        s_c = _truncnorm(rng, m_c, v_c, 0.0, hi_c)
        # outer part r = s_l + s_u given s_c (joint normal with the multinomial covariance)
        m_r = mean[0] + mean[2]
        v_r = vr[0] + vr[2] - 2.0 * n * q[0] * q[2] * mu[0] * mu[2]
        c_rc = -n * q[1] * mu[1] * (q[0] * mu[0] + q[2] * mu[2])
        v_c_prior = np.maximum(vr[1], 1e-300)
        cm = m_r + c_rc / v_c_prior * (s_c - mean[1])
        cv = np.maximum(v_r - c_rc**2 / v_c_prior, 1e-12 * np.maximum(v_r, 1e-300))
        r = _truncnorm(rng, cm, cv, 0.0, np.inf)
        s = s_c + r
        sigma2 = _sigma2_update(y, s_c, scale, rng)
        if it >= burn:
            out[it - burn] = lam
    return out
