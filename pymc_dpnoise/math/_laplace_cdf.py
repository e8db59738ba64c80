r"""Log CDF of a value released with additive Laplace noise, from the masses around it.

Every scalar report in this package has the form :math:`z = c + \mathrm{Laplace}(0, s)`, with
:math:`c \sim Q` the clean (clipped or counted) value.  The Laplace CDF is

.. math::

    F_L(u) = \begin{cases} \tfrac12 e^{u/s} & u < 0 \\ 1 - \tfrac12 e^{-u/s} & u \ge 0,\end{cases}

so splitting :math:`F(z) = \int F_L(z - x)\, dQ(x)` at :math:`x = z`,

.. math::

    F(z) &= Q(x \le z) - \tfrac12 L(z) + \tfrac12 R(z), \\
    1 - F(z) &= Q(x > z) - \tfrac12 R(z) + \tfrac12 L(z), \\
    L(z) &= \int_{x \le z} e^{-(z - x)/s}\, dQ(x), \qquad
    R(z) = \int_{x > z} e^{-(x - z)/s}\, dQ(x).

:math:`L` and :math:`R` are exactly the two halves of the density,
:math:`2 s\, p(z) = L(z) + R(z)`, which the log densities of :mod:`pymc_dpnoise.math.clipped`
and :mod:`pymc_dpnoise.math.counts` already compute in log space (as exponentially tilted
normal, exponential, binomial or Poisson masses).  The CDF is a *piecewise tilted CDF*:
the clean CDF :math:`Q(x \le z)`, corrected by the two tilted masses.

**Stable log form.**  Since :math:`e^{-(z-x)/s} \le 1`, :math:`L(z) \le Q(x \le z)`, hence
:math:`Q(x \le z) - L/2 \ge Q(x \le z)/2`: the subtraction loses at most one bit, and

.. math::

    \log F = \operatorname{logaddexp}\Bigl(\log Q_\le + \operatorname{log1mexp}
             \bigl(\log L - \log 2 - \log Q_\le\bigr),\; \log R - \log 2\Bigr)

is accurate to a few ulp *relative to F*.  The mirror gives :math:`\log(1 - F)` with the same
accuracy relative to :math:`1 - F`.  :func:`split_log_cdfs` returns
:math:`\log F` where :math:`F < 1/2` and :math:`\operatorname{log1mexp}(\log(1-F))` elsewhere
(and the mirror for the log survival function), so both tails keep full relative accuracy:
:math:`\log F \approx -10^{-300}` far right and :math:`\log F \approx -10^{4}` far left are
both exact to rounding.

Where :math:`Q` has no mass on one side of :math:`z` (a count below 0, a report left of the
clipping interval) the corresponding masks drop the :math:`Q` and tilted terms; the dropped
branches are evaluated at finite arguments ("double where"), so gradients stay finite.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

__all__ = ["split_log_cdfs"]

_LOG2 = np.float64(
    np.log(2.0)
)  # np.float64: a Python float becomes a float32 constant under floatX="float32"


def _log_sub(log_q, log_t):
    # log(Q - T) for T <= Q/2: Q (1 - e^{log T - log Q}), argument <= -log 2
    return log_q + pt.log1mexp(pt.minimum(log_t - log_q, -_LOG2))


def split_log_cdfs(
    log_q_below, log_left, has_below, log_q_above, log_right, has_above, log_cl=None, log_cr=None
):
    r"""``(log F(z), log(1 - F(z)))`` from the masses and tilted masses on each side of z.

    Parameters
    ----------
    log_q_below, log_q_above : TensorVariable
        :math:`\log Q(x \le z)` and :math:`\log Q(x > z)`.
    log_left, log_right : TensorVariable
        :math:`\log L(z)` and :math:`\log R(z)` (module docstring).
    has_below, has_above : TensorVariable of bool
        Whether Q has mass at or below z (above z).  Where a side is empty its two terms are
        dropped (and the other side's mass is taken as 1); the values passed there must still
        be finite.
    log_cl, log_cr : TensorVariable, optional
        Logs of the weights of :math:`L` and :math:`R` in
        :math:`F = Q_\le - c_l L + c_r R` (default :math:`\tfrac12` each, the Laplace case);
        other noises (:mod:`pymc_dpnoise.math.noisy_counts`) use the same combination with
        :math:`c_l L \le Q_\le/2` and :math:`c_r R \le Q_>/2`.
    """
    log_cl = -_LOG2 if log_cl is None else log_cl
    log_cr = -_LOG2 if log_cr is None else log_cr
    both = has_below & has_above
    log_q_below = pt.switch(has_above, log_q_below, 0.0)
    log_q_above = pt.switch(has_below, log_q_above, 0.0)
    half_r = log_right + log_cr
    half_l = log_left + log_cl
    lo_part = _log_sub(log_q_below, half_l)  # Q(<= z) - c_l L
    hi_part = _log_sub(log_q_above, half_r)  # Q(> z) - c_r R
    lo = pt.switch(both, pt.logaddexp(lo_part, half_r), pt.switch(has_below, lo_part, half_r))
    hi = pt.switch(both, pt.logaddexp(hi_part, half_l), pt.switch(has_above, hi_part, half_l))
    return complement_pair(lo, hi)


def complement_pair(lo, hi):
    r"""Pick each of :math:`\log F` and :math:`\log(1-F)` from the side where it is below 1/2.

    ``lo`` and ``hi`` are two estimates of :math:`\log F` and :math:`\log(1 - F)`, each accurate
    relative to its own quantity; the other is obtained with ``log1mexp``, clamped at
    :math:`-\log 2` so that the unused branch has a finite gradient.
    """
    use_lo = pt.lt(lo, -_LOG2)
    logcdf = pt.switch(use_lo, lo, pt.log1mexp(pt.minimum(hi, -_LOG2)))
    logccdf = pt.switch(use_lo, pt.log1mexp(pt.minimum(lo, -_LOG2)), hi)
    return logcdf, logccdf
