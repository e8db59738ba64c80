r"""Exact log densities of Laplace-noised integer sums (binomial and Poisson counts).

The data holder releases :math:`y = s + \mathrm{Laplace}(0, b)`, :math:`b = \Delta/\epsilon`,
where :math:`s` is a count: :math:`s \sim \mathrm{Binomial}(n, p)` (the number of 1s among
:math:`n` Bernoulli records, :math:`\Delta = 1`) or :math:`s \sim \mathrm{Poisson}(\mu)` (a
total of Poisson counts).  This is Bernstein & Sheldon's (2018, Sec. 3.1-3.2) noisy
sufficient-statistic release for the binomial model, whose likelihood they approximate by a
normal (CLT) and sample with Gibbs; here it is computed exactly.

Derivation
----------
With :math:`k = \lfloor y \rfloor`, split :math:`p(y) = \sum_s P(s)\,\frac{1}{2b}e^{-|y-s|/b}`
at :math:`y`: for :math:`s \le k`, :math:`e^{-|y-s|/b} = e^{-(y-k)/b} e^{-(k-s)/b}`; for
:math:`s \ge k+1`, :math:`e^{-|y-s|/b} = e^{-(k+1-y)/b} e^{-(s-k-1)/b}`.  Tilting a binomial pmf
by :math:`e^{\pm s/b}` gives a binomial with :math:`\operatorname{logit} p_\pm =
\operatorname{logit} p \pm 1/b` (Poisson: :math:`\mu_\pm = \mu e^{\pm 1/b}`), and the tilt
factor cancels between :math:`P(s)` and :math:`P(k)`:

.. math::

    \sum_{s \le k} P(s) e^{-(k-s)/b} = P(k)\,\frac{F(k; p_+)}{P(k; p_+)}, \qquad
    \sum_{s > k} P(s) e^{-(s-k-1)/b} = P(k+1)\,\frac{1 - F(k; p_-)}{P(k+1; p_-)},

since :math:`P(s)/P(k) = P(s; p_\pm)/P(k; p_\pm)\, e^{\mp(s-k)/b}`.  Hence

.. math::

    \log p(y) = -\log 2b + \operatorname{logaddexp}\Bigl(
        \log P(k) - \tfrac{y-k}{b} + R_-(k; p_+),\;
        \log P(k+1) - \tfrac{k+1-y}{b} + R_+(k; p_-)\Bigr),

with :math:`R_-(k; q) = \log[F(k; q)/P(k; q)]` and :math:`R_+(k; q) = \log[(1-F(k; q))/P(k+1; q)]`
(:mod:`pymc_dpnoise.math._special`): the *ratio form*.  This is algebraically the *MGF form*

.. math::

    2b\,p(y) = e^{-yt} M_+ F(k; n, p_+) + e^{yt} M_- \bigl(1 - F(k; n, p_-)\bigr), \qquad
    M_\pm = E[e^{\pm tS}] = (1 - p + p e^{\pm t})^n, \quad t = 1/b,

from :math:`P(s)e^{\pm ts} = M_\pm P(s; p_\pm)`.  Neither form forms the scale factors
:math:`M_\pm` (which overflow) nor the CDFs (which underflow); both are sums of three logs, and
the binomial uses, per element and side, the one whose rounding error is smaller (next
section).  The first term is absent when :math:`k < 0`, the second when :math:`k \ge n`
(binomial): these are evaluated at clipped, valid arguments and masked ("double where"), so all
gradients are finite.  Every term is a finite log; the ratios are O(1) or grow only where the
pmf shrinks.

Two forms of the tilted halves (binomial)
-----------------------------------------
Each log in either form is accurate to a few ulp relative to itself, so the absolute error of a
half is about :math:`10^{-16}` times the sum of the magnitudes of its terms.

*Ratio form*, :math:`\log L = \log P(k) + \log[F(k; p_+)/P(k; p_+)] - (y-k)t`.  Where
:math:`k` is far in a tail of both :math:`S` and the tilted count, :math:`\log P(k)` and the
ratio (about :math:`-\log P(k; p_+)`) are both huge and cancel: at :math:`n = 10^8`,
:math:`p = 10^{-9}`, :math:`b = 10^4` and :math:`y \approx n`, :math:`\log P(k) \approx -2
\cdot 10^9` while :math:`\log L \approx -10^4`, and the ratio form was :math:`1.5 \cdot 10^{-7}`
off in log (issue 21; the mirror at :math:`p = 1 - 10^{-9}`, :math:`y \approx 0`, and
:math:`p = 0.3` at :math:`y = n - 1` likewise).

*MGF form*, :math:`\log L = -yt + \log M_+ + \log F(k; p_+)` and
:math:`\log R = yt + \log M_- + \log(1 - F(k; p_-))`.  Its terms are :math:`|yt|`,
:math:`|\log M_\pm| \le nt` and the tilted log CDF, which is computed accurately on both sides
of the tilted mean: :math:`\log P(k; p_+) + \log[F/P]` where :math:`F < 1/2` (the ratio is
then moderate) and :math:`\operatorname{log1mexp}` of the survival function
:math:`\log P(k+1; p_+) + \log[(1-F)/P(k+1; p_+)]` elsewhere
(:func:`~pymc_dpnoise.math._laplace_cdf.complement_pair`); so in the example above every term is
below :math:`10^4` (error ~1e-12).  :math:`\log M_+ = n\,\mathrm{log1p}(p(e^t - 1))`, or
:math:`n\,\mathrm{logaddexp}(\log(1-p), \log p + t)` when :math:`p(e^t-1) \ge 1/2`, never
:math:`nt + n\log(p + (1-p)e^{-t})` (which cancels when :math:`pe^t` is small).  The MGF form
cancels in turn where :math:`yt` and :math:`\log M_\pm` are large and the half is not (a
release in the bulk of a large count with a small noise, e.g. :math:`t = 20`, :math:`n = 10^5`:
terms of :math:`10^6`), and there the ratio form is exact.

*Switch.*  Per element and side, the MGF form is used where the sum of its terms' magnitudes,
:math:`|yt| + |\log M_\pm| + |\log F_\pm|`, is below the ratio form's, :math:`|\log P| +
|\log(F_\pm/P_\pm)|` (essentially: where :math:`|\log P(k)| > |yt| + |\log M_\pm|`).  Both forms
are finite for all arguments, so the switch keeps gradients finite.  The pmfs and CDF ratios of
both forms and both sides are one call each of the two ops, with the arguments stacked on a
trailing axis; :math:`\operatorname{logit} p` and :math:`t` enter that stack once, so the
gradient of the likelihood with respect to them stays a short sum (PyTensor collects all uses
of a variable into one elementwise add, and its Python-mode ``Elemwise`` takes at most 32
operands).  Both forms are always evaluated: six pmfs and four CDF ratios per release instead
of two and two, about 3x the time of the ratio form alone (logp + gradient, Numba, n = 1e3 to
1e7: 1.5-3 us per release, was 0.4-1.2 us).  The Poisson halves keep the ratio form (accurate on the tested grid up to
:math:`\mu = 10^7`), and so do the untilted :math:`\log F_S(k)` and :math:`\log(1-F_S(k))` of
the CDF (below): each is accurate where it is below :math:`1/2`, and the split takes each of
:math:`\log F` and :math:`\log(1-F)` from the side where it is below :math:`1/2`.

Released values clamped to :math:`[0, n]` after the noise (``clamp=True``) have atoms

.. math::

    P(z = 0) = \sum_s P(s)\,\tfrac12 e^{-s/b} = \tfrac12 (1 - p + p e^{-1/b})^n, \qquad
    P(z = n) = \tfrac12 (p + (1 - p) e^{-1/b})^n,

computed as :math:`n \log(1 - p\,(1 - e^{-1/b}))` with ``log1p`` (or a ``logaddexp`` when
that argument is close to 1), and the density above strictly inside.

CDF
---
With the same split at :math:`k = \lfloor y \rfloor`, the Laplace CDF is
:math:`1 - \frac12 e^{-(y-s)/b}` for :math:`s \le k` and :math:`\frac12 e^{-(s-y)/b}` for
:math:`s > k`, so

.. math::

    F(y) = F_S(k) - \tfrac12 e^{-(y-k)/b} \sum_{s \le k} P(s) e^{-(k-s)/b}
                  + \tfrac12 e^{-(k+1-y)/b} \sum_{s > k} P(s) e^{-(s-k-1)/b},

the clean CDF corrected by the same two tilted sums as the density (half of each term of
:math:`2b\,p(y)`).  :math:`\log F_S(k)` is :math:`\log P(k) + R_-(k; p)` and
:math:`\log(1 - F_S(k)) = \log P(k+1) + R_+(k; p)`, the untilted CDF ratios; the
combination in log space, accurate in both tails, is
:func:`pymc_dpnoise.math._laplace_cdf.split_log_cdfs`.  For the clamped release
:math:`F_Z(z) = F(z)` on :math:`[0, n)` (the atom at 0 collects :math:`y \le 0`), 0 below 0
and 1 from :math:`n` on.  There is no closed-form quantile function (it is the root of
this piecewise expression), so the classes refuse ``icdf``.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from ._laplace_cdf import complement_pair, split_log_cdfs
from ._special import log_binom_cdf_ratio, log_binom_pmf, log_poisson_cdf_ratio, log_poisson_pmf

__all__ = [
    "binomial_laplace_log_cdfs",
    "binomial_laplace_logp",
    "clamped_binomial_laplace_log_cdfs",
    "clamped_binomial_laplace_logp",
    "log_tilted_binomial_mgf",
    "poisson_laplace_log_cdfs",
    "poisson_laplace_logp",
]

#: logit p is clipped here: p = 0 or 1 exactly becomes e^{-700}-close (no effect for n < 1e290)
_LOGIT_MAX = 700.0


def _as_f64(x):
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


def _logit(p, logit_p):
    if logit_p is not None:
        lq = _as_f64(logit_p)
    else:
        p = _as_f64(p)
        lq = pt.log(p) - pt.log1p(-p)
    return pt.clip(lq, -_LOGIT_MAX, _LOGIT_MAX)


def _combine(log_left, has_left, log_right, has_right):
    both = pt.logaddexp(log_left, log_right)
    return pt.switch(has_left & has_right, both, pt.switch(has_left, log_left, log_right))


def binomial_laplace_logp(value, n, p=None, epsilon=1.0, sensitivity=1.0, *, logit_p=None):
    r"""Log density of :math:`y = s + \mathrm{Laplace}(0, \Delta/\epsilon)`, :math:`s \sim \mathrm{Bin}(n, p)`.

    Exact (no normal approximation); see the module docstring for the derivation.  Pass
    either ``p`` or ``logit_p`` (the latter keeps full precision for :math:`p` within 1e-16
    of 0 or 1).  All arguments broadcast.  Finite for every finite ``value`` and every
    :math:`p \in [0, 1]`; gradients w.r.t. ``p`` / ``logit_p`` / ``epsilon`` are exact.
    """
    y, n, lq, t = _as_f64(value), _as_f64(n), _logit(p, logit_p), _rate(epsilon, sensitivity)
    log_left, has_left, log_right, has_right, _ = _binomial_halves(y, n, lq, t)
    return _combine(log_left, has_left, log_right, has_right) + pt.log(t) - np.log(2.0)


def _rate(epsilon, sensitivity):
    return _as_f64(epsilon) / _as_f64(sensitivity)  # 1/b


def _binomial_halves(y, n, lq, t, tilt=True):
    r"""The two tilted sums (times their Laplace factors) of the density, and their masks.

    ``log_left`` is :math:`\log L = \log[e^{-(y-k)/b}\sum_{s\le k}P(s)e^{-(k-s)/b}]`,
    ``log_right`` the mirror :math:`\log R`; with ``tilt=False`` (and ``t`` only used for the
    factors' tilt of 0) they are :math:`\log F_S(k)` and :math:`\log(1 - F_S(k))`.  Arguments
    are clipped to valid values where a side is empty (masks ``has_left``, ``has_right``).

    Each tilted half is evaluated in two algebraically equal forms, and per element the one
    with the smaller sum of term magnitudes (a bound on its rounding error, ~1e-16 times that
    sum) is kept (module docstring, "Two forms of the tilted halves"):

    * ratio form, :math:`\log L = \log P(k) + \log[F_+(k)/P_+(k)] - (y-k)t`, which cancels
      far in a tail, where :math:`\log P(k)` and the ratio are both huge;
    * MGF form, :math:`\log L = -yt + \log M_+ + \log F_+(k)` with
      :math:`\log M_+ = n\log(1-p+pe^{t})` (:func:`_log_binomial_mgf`) and
      :math:`\log F_+(k)` from whichever of :math:`\log P_+(k) + \log[F_+/P_+]` and
      :math:`\operatorname{log1mexp}` of :math:`\log P_+(k+1) + \log[(1-F_+)/P_+(k+1)]` is
      below :math:`\log\frac12`, which cancels where :math:`yt` and :math:`\log M_+` are large
      and the half is not;

    and mirrored, :math:`\log R = \log P(k+1) + \log[(1-F_-(k))/P_-(k+1)] - (k+1-y)t =
    yt + \log M_- + \log(1 - F_-(k))`, :math:`\log M_- = n\log(1-p+pe^{-t})`.  Here
    :math:`t = 1/b`, :math:`F_\pm`, :math:`P_\pm` are the binomial with
    :math:`\operatorname{logit} p_\pm = \operatorname{logit} p \pm t`.  Where :math:`k \ge n`
    (:math:`k < 0`) the tilted CDF (survival function) is 1 and the MGF form is the whole sum.
    """
    k = pt.floor(y)
    has_left = k >= 0
    has_right = k < n
    kl = pt.clip(k, 0.0, n)
    kr = pt.clip(k, -1.0, n - 1.0)
    if not tilt:
        log_left = log_binom_pmf(kl, n, lq) + log_binom_cdf_ratio(kl, n, lq)
        # (1 - F(k; n, q)) / pmf(k+1; n, q) = F(n-k-1; n, 1-q) / pmf(n-k-1; n, 1-q)
        log_right = log_binom_pmf(kr + 1.0, n, lq) + log_binom_cdf_ratio(n - kr - 1.0, n, -lq)
        return log_left, has_left, log_right, has_right, k
    # Every quantity below is computed for both sides at once along a trailing axis, and the
    # ops take all their arguments stacked; lq and t enter the graph once each (their
    # gradients are then short sums: PyTensor adds the contributions of all uses of a variable
    # into one Elemwise, and the Python VM refuses more than 32 operands), and each form is a
    # short chain of adds.
    kh = pt.minimum(kl, n - 1.0)  # 1 - F_+(kl), needed for kl < n only
    kg = pt.maximum(kr, 0.0)  # F_-(kr), needed for kr >= 0 only
    n_ = n[..., None]
    tilt = t[..., None] * _TILTS  # 0, 0, t, t, -t, -t
    u = tilt[..., 2:5:2]  # t, -t
    lqs = lq[..., None] + tilt  # logits of p, p, p_+, p_+, p_-, p_-
    # pmfs: P(kl), P(kr+1); P_+(kl), P_+(kh+1); P_-(kr+1), P_-(kg)
    pmf = log_binom_pmf(
        pt.stack(pt.broadcast_arrays(kl, kr + 1.0, kl, kh + 1.0, kr + 1.0, kg), axis=-1), n_, lqs
    )
    # CDF ratios: F_+(kl)/P_+(kl); (1-F_-(kr))/P_-(kr+1) = F(n-kr-1; n, 1-p_-)/pmf(same);
    # (1-F_+(kh))/P_+(kh+1) likewise; F_-(kg)/P_-(kg)
    ratio = log_binom_cdf_ratio(
        pt.stack(pt.broadcast_arrays(kl, n - kr - 1.0, n - kh - 1.0, kg), axis=-1),
        n_,
        pt.stack([lqs[..., 2], -lqs[..., 4], -lqs[..., 2], lqs[..., 4]], axis=-1),
    )
    # ratio form: log P(kl) + log[F_+(kl)/P_+(kl)] - (y-kl) t, and the mirror
    offset = pt.stack(pt.broadcast_arrays(y - kl, kr + 1.0 - y), axis=-1) * u[..., 0:1]
    ratio_terms = (pmf[..., 0:2], ratio[..., 0:2])
    ratio_form = (ratio_terms[0] + ratio_terms[1]) - offset
    # MGF form: -yt + log M_+ + log F_+(kl), yt + log M_- + log(1 - F_-(kr)); the tilted CDF
    # and survival function each from the side where it is below 1/2
    log_cdf, log_sf = complement_pair(
        pmf[..., 2:6:3] + ratio[..., 0:4:3],  # log F_+(kl), log F_-(kg)
        pmf[..., 3:5] + ratio[..., 2:0:-1],  # log(1 - F_+(kh)), log(1 - F_-(kr))
    )
    ends = pt.stack(pt.broadcast_arrays(kl >= n, kr < 0.0), axis=-1)  # F_+(n) = 1 - F_-(-1) = 1
    log_tail = pt.switch(ends, 0.0, pt.stack([log_cdf[..., 0], log_sf[..., 1]], axis=-1))
    log_mgf = _log_binomial_mgf(n_, lqs[..., 0:2], u)  # log M_+, log M_-
    yt = y[..., None] * u  # yt, -yt
    mgf_form = (log_mgf - yt) + log_tail
    # per element and side, the form whose terms are smaller in magnitude (its rounding error
    # is ~1e-16 times their sum)
    cost_ratio = pt.abs(ratio_terms[0]) + pt.abs(ratio_terms[1])
    cost_mgf = (pt.abs(log_mgf) + pt.abs(yt)) + pt.abs(log_tail)
    halves = pt.switch(cost_mgf < cost_ratio, mgf_form, ratio_form)
    return halves[..., 0], has_left, halves[..., 1], has_right, k


#: tilts (in units of t = 1/b) of the logits of the six pmfs of :func:`_binomial_halves`
_TILTS = np.array([0.0, 0.0, 1.0, 1.0, -1.0, -1.0])


def _log_binomial_mgf(n, logit_p, u):
    r""":math:`n \log(1 - p + p e^{u}) = \log E[e^{uS}]` for real :math:`u`, without cancellation.

    :math:`n\,\mathrm{log1p}(p(e^u - 1))` when :math:`|p(e^u-1)| < 1/2`, else
    :math:`n\,\mathrm{logaddexp}(\log(1-p), \log p + u)`; for :math:`u = -t \le 0` this equals
    :func:`log_tilted_binomial_mgf` to the last bit (the same operations up to a sign).  From
    :math:`u = 700` on the second branch is always taken (it is accurate for large :math:`u`,
    and the ``expm1`` argument is capped there); both branches are finite, so the switch keeps
    gradients finite.
    """
    x = pt.sigmoid(logit_p) * pt.expm1(pt.minimum(u, 700.0))
    small = pt.log1p(pt.clip(x, -0.5, 0.5))
    large = pt.logaddexp(-pt.softplus(logit_p), -pt.softplus(-logit_p) + u)
    return n * pt.switch((pt.abs(x) < 0.5) & (u < 700.0), small, large)


def binomial_laplace_log_cdfs(value, n, p=None, epsilon=1.0, sensitivity=1.0, *, logit_p=None):
    r"""``(log F(y), log(1 - F(y)))`` of :math:`y = s + \mathrm{Laplace}(0, \Delta/\epsilon)`, :math:`s \sim \mathrm{Bin}(n, p)`.

    Exact (module docstring, section CDF); accurate relative to :math:`F` and to
    :math:`1 - F` in both tails.  Arguments as :func:`binomial_laplace_logp`.
    """
    y, n, lq, t = _as_f64(value), _as_f64(n), _logit(p, logit_p), _rate(epsilon, sensitivity)
    log_left, has_left, log_right, has_right, _ = _binomial_halves(y, n, lq, t)
    log_below, _, log_above, _, _ = _binomial_halves(y, n, lq, t, tilt=False)
    return split_log_cdfs(log_below, log_left, has_left, log_above, log_right, has_right)


def log_tilted_binomial_mgf(n, logit_p, t):
    r""":math:`n \log(1 - p + p e^{-t})` for :math:`t \ge 0`, without cancellation.

    Uses :math:`n\,\mathrm{log1p}(-p(1 - e^{-t}))` when :math:`p(1-e^{-t}) < 1/2`, else
    :math:`n\,\mathrm{logaddexp}(\log(1-p), \log p - t)`.  Both branches are finite for finite
    arguments, so a plain switch keeps gradients finite.
    """
    lq = _as_f64(logit_p)
    t = _as_f64(t)
    x = pt.sigmoid(lq) * (-pt.expm1(-t))
    small = pt.log1p(-pt.minimum(x, 0.5))
    large = pt.logaddexp(-pt.softplus(lq), -pt.softplus(-lq) - t)
    return _as_f64(n) * pt.switch(x < 0.5, small, large)


def clamped_binomial_laplace_logp(value, n, p=None, epsilon=1.0, sensitivity=1.0, *, logit_p=None):
    r"""Log density / mass of :math:`z = \mathrm{clip}(s + \mathrm{Laplace}(0, b), 0, n)`.

    Mixed measure: at :math:`z = 0` and :math:`z = n` the log *probability* of the atom,
    :math:`\log\tfrac12 + n\log(1 - p + pe^{-1/b})` and its mirror; strictly inside
    :math:`(0, n)` the log density of :func:`binomial_laplace_logp`; ``-inf`` outside
    :math:`[0, n]`.
    """
    y = _as_f64(value)
    n = _as_f64(n)
    lq = _logit(p, logit_p)
    t = _as_f64(epsilon) / _as_f64(sensitivity)
    inside = binomial_laplace_logp(
        pt.clip(y, 0.0, n), n, epsilon=epsilon, sensitivity=sensitivity, logit_p=lq
    )
    atom0 = log_tilted_binomial_mgf(n, lq, t) - np.log(2.0)
    atomn = log_tilted_binomial_mgf(n, -lq, t) - np.log(2.0)
    res = pt.switch(pt.eq(y, 0.0), atom0, pt.switch(pt.eq(y, n), atomn, inside))
    return pt.switch((y < 0.0) | (y > n), -np.inf, res)


def poisson_laplace_logp(value, mu=None, epsilon=1.0, sensitivity=1.0, *, log_mu=None):
    r"""Log density of :math:`y = s + \mathrm{Laplace}(0, \Delta/\epsilon)`, :math:`s \sim \mathrm{Poisson}(\mu)`.

    Exact; same construction as :func:`binomial_laplace_logp` with the Poisson tilt
    :math:`\mu_\pm = \mu e^{\pm 1/b}` (a single right term when :math:`y < 0`).  Pass ``mu``
    or ``log_mu``.
    """
    y = _as_f64(value)
    lmu = _log_rate(mu, log_mu)
    t = _rate(epsilon, sensitivity)
    log_left, has_left, log_right, _ = _poisson_halves(y, lmu, t)
    return _combine(log_left, has_left, log_right, pt.ones_like(has_left, dtype="bool")) + (
        pt.log(t) - np.log(2.0)
    )


def clamped_binomial_laplace_log_cdfs(
    value, n, p=None, epsilon=1.0, sensitivity=1.0, *, logit_p=None
):
    r"""``(log F(z), log(1 - F(z)))`` of the clamped release :math:`z = \mathrm{clip}(y, 0, n)`.

    :math:`F_Z(z) = F_Y(z)` for :math:`0 \le z < n` (the atom at 0 holds :math:`y \le 0`),
    :math:`F_Z = 0` below 0 and :math:`F_Z = 1` from :math:`n` on (the atom at :math:`n`).
    """
    y = _as_f64(value)
    n = _as_f64(n)
    inside = pt.clip(y, 0.0, n)
    logcdf, logccdf = binomial_laplace_log_cdfs(inside, n, p, epsilon, sensitivity, logit_p=logit_p)
    logcdf = pt.switch(y < 0.0, -np.inf, pt.switch(y >= n, 0.0, logcdf))
    logccdf = pt.switch(y < 0.0, 0.0, pt.switch(y >= n, -np.inf, logccdf))
    return logcdf, logccdf


def poisson_laplace_log_cdfs(value, mu=None, epsilon=1.0, sensitivity=1.0, *, log_mu=None):
    r"""``(log F(y), log(1 - F(y)))`` of :math:`y = s + \mathrm{Laplace}(0, \Delta/\epsilon)`, :math:`s \sim \mathrm{Poisson}(\mu)`.

    Exact, same construction as :func:`binomial_laplace_log_cdfs` with the Poisson CDF ratios.
    """
    y = _as_f64(value)
    lmu = _log_rate(mu, log_mu)
    t = _rate(epsilon, sensitivity)
    log_left, has_left, log_right, _ = _poisson_halves(y, lmu, t)
    log_below, _, log_above, _ = _poisson_halves(y, lmu, t, tilt=False)
    has_right = pt.ones_like(has_left, dtype="bool")
    return split_log_cdfs(log_below, log_left, has_left, log_above, log_right, has_right)


def _log_rate(mu, log_mu):
    lmu = _as_f64(log_mu) if log_mu is not None else pt.log(_as_f64(mu))
    return pt.clip(lmu, -_LOGIT_MAX, _LOGIT_MAX)  # mu = 0 exactly: e^{-700}, still finite


def _poisson_halves(y, lmu, t, tilt=True):
    """Poisson version of :func:`_binomial_halves` (no upper end: the right side is never empty)."""
    k = pt.floor(y)
    has_left = k >= 0
    kl = pt.maximum(k, 0.0)
    kr = pt.maximum(k, -1.0)
    shift = t if tilt else 0.0
    log_left = log_poisson_pmf(kl, lmu) + log_poisson_cdf_ratio(kl, lmu + shift, upper=False)
    log_right = log_poisson_pmf(kr + 1.0, lmu) + log_poisson_cdf_ratio(kr, lmu - shift, upper=True)
    if tilt:
        log_left = log_left - (y - kl) * t
        log_right = log_right - (kr + 1.0 - y) * t
    return log_left, has_left, log_right, k
