"""An independent implementation of the flagship's likelihood (``pmd.NoisyBinomial`` with
discrete Gaussian noise, optionally censored at 0): a window sum over the latent count with an
unrolled bisection, plain ``gammaln`` binomial pmfs and an exact table of the noise's tail.
It was the experiment's likelihood before the package's own graph differentiated inside a
model; it stays here as a cross-check (``tests/experiments/test_real_releases.py``)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp


def _half_width(sigma: float) -> int:
    from pymc_dpnoise.noise import TAIL_NATS

    return math.ceil(math.sqrt(2.0 * TAIL_NATS) * sigma) + 2


def _log_le_neg_table(sigma: float, s_max: int) -> np.ndarray:
    r""":math:`\log P(N \le -s)`, :math:`s = 0..s_{max}`, of the discrete Gaussian (exact sums)."""
    from pymc_dpnoise.noise import TAIL_NATS

    far = s_max + math.ceil(math.sqrt(2.0 * TAIL_NATS) * sigma) + 10
    k = np.arange(-far, 1, dtype="float64")  # -far .. 0
    ks = np.arange(-far, far + 1, dtype="float64")
    log_z = logsumexp(-(ks**2) / (2.0 * sigma**2))
    log_cdf = np.logaddexp.accumulate(-(k**2) / (2.0 * sigma**2)) - log_z  # log P(N <= k)
    return log_cdf[::-1][: s_max + 1]  # index s -> k = -s


def _window_sum(n, eta, logit_p, a, b, w, iters, noise_diff, noise_term):
    """log sum_s Binomial(s | n, p) exp(noise_term(s)) over the window |s - c| <= w around the
    argmax c in [a, b], found by an unrolled bisection on the forward difference."""
    import pytensor.tensor as pt
    from pymc.math import logsumexp as pt_logsumexp
    from pytensor.gradient import disconnected_grad

    for _ in range(iters):
        mid = pt.floor(0.5 * (a + b))
        diff = pt.log(pt.maximum(n - mid, 0.5)) - pt.log(mid + 1.0) + eta + noise_diff(mid)
        go = (mid < b) & (diff >= 0.0)
        a, b = pt.switch(go, mid + 1.0, a), pt.switch(go, b, mid)
    c = disconnected_grad(a)
    s = c[:, None] + np.arange(-w, w + 1, dtype="float64")[None, :]
    nn, lp = n[:, None], logit_p[:, None]
    valid = (s >= 0.0) & (s <= nn)
    sc = pt.clip(s, 0.0, nn)
    log_choose = pt.gammaln(nn + 1.0) - pt.gammaln(sc + 1.0) - pt.gammaln(nn - sc + 1.0)
    log_binom = log_choose - sc * pt.softplus(-lp) - (nn - sc) * pt.softplus(lp)
    return pt_logsumexp(pt.switch(valid, log_binom + noise_term(sc), -np.inf), axis=1)


def window_logp(y, n, logit_p, sigma: float, lower=None):
    r"""Log likelihood of releases ``y`` = clamp(Binomial(n, p) + discrete Gaussian(sigma),
    lower), one value per group, as a window sum over the latent count without a ``scan``.

    ``y`` (integer release, may be symbolic: ``pm.Data``), ``n`` (constant sizes) and
    ``logit_p`` (symbolic) broadcast to one vector; ``lower`` is ``None`` or ``0``.  The
    summand :math:`f(s) = \log \mathrm{Binomial}(s \mid n, p) + \log P(N = y - s)` is
    concave with second differences below :math:`-1/\sigma^2`; its argmax (between the
    binomial mode and ``y``) is found by a bisection on the sign of the closed-form forward
    difference, unrolled for :math:`\lceil\log_2(\max n + 2)\rceil + 1` steps, and the sum
    runs over :math:`|s - c| \le W`, :math:`W = \lceil\sqrt{92}\,\sigma\rceil + 2`, which
    leaves out less than :math:`e^{-46}` of the largest term's mass (the bound of
    :mod:`pymc_dpnoise.math.noisy_counts`).  At the atom of ``lower=0`` the summand is
    :math:`\log \mathrm{Binomial}(s) + \log P(N \le -s)` (argmax between 0 and the mode),
    :math:`\log P(N \le -s)` read from an exact table.  Written apart from the package (its own bisection,
    gammaln binomial, exact tail table) as an independent check of ``NoisyBinomial``.
    """
    import pytensor.tensor as pt
    from pytensor.gradient import disconnected_grad

    from pymc_dpnoise.math.noise import log_z_discrete_gaussian

    if lower not in (None, 0):
        raise ValueError("`lower` must be None or 0")
    sigma = float(sigma)
    n_np = np.asarray(n, dtype="float64")
    w = _half_width(sigma)
    iters = math.ceil(math.log2(float(n_np.max()) + 2.0)) + 1
    y = pt.cast(pt.as_tensor_variable(y), "float64")
    n = pt.as_tensor_variable(n_np)
    y, n, logit_p = pt.broadcast_arrays(y, n, pt.as_tensor_variable(logit_p))
    eta = disconnected_grad(logit_p)
    mode = pt.clip(pt.floor((n + 1.0) * pt.sigmoid(eta)), 0.0, n)
    log_z = log_z_discrete_gaussian(sigma)
    yy = y[:, None]
    inner = _window_sum(
        n,
        eta,
        logit_p,
        pt.clip(pt.minimum(mode, pt.floor(y)), 0.0, n),
        pt.clip(pt.maximum(mode, pt.ceil(y)), 0.0, n),
        w,
        iters,
        lambda s: (2.0 * (y - s) - 1.0) / (2.0 * sigma**2),
        lambda s: -((yy - s) ** 2) / (2.0 * sigma**2) - log_z,
    )
    if lower is None:
        return inner
    table = pt.as_tensor_variable(_log_le_neg_table(sigma, int(n_np.max()) + 1))

    def lc(s):
        return table[pt.cast(s, "int64")]

    atom = _window_sum(
        n,
        eta,
        logit_p,
        pt.zeros_like(mode),
        mode,
        w,
        iters,
        lambda s: lc(s + 1.0) - lc(s),
        lc,
    )
    return pt.switch(pt.lt(y, 0.0), -np.inf, pt.switch(pt.eq(y, 0.0), atom, inner))
