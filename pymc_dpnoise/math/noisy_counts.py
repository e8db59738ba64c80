r"""Exact log likelihoods of a binomial or Poisson count released with any noise of :mod:`pymc_dpnoise.noise`.

The data holder releases :math:`z = \mathrm{clamp}(s + N, L, U)`: a count
:math:`s \sim \mathrm{Binomial}(n, p)` or :math:`\mathrm{Poisson}(\mu)`, noise :math:`N` of one
of five kinds, and an optional clamp to :math:`[L, U]` (post-processing; :math:`L = 0` alone is
OpenDP's saturating cast of an unsigned count).  Write :math:`Y = s + N`.

Laplace kinds: closed forms by exponential tilting
--------------------------------------------------
The continuous Laplace case is :mod:`pymc_dpnoise.math.counts`: with :math:`k = \lfloor y
\rfloor` the two halves of :math:`\sum_s P(s)\,e^{-|y-s|/b}` are tilted binomial (Poisson)
CDFs, :math:`L(y)` and :math:`R(y)`, and :math:`p_Y(y) = (L + R)/(2b)`.

*Discrete Laplace* at an integer :math:`y`: :math:`P(N = j) = \tanh(\tfrac1{2b})\,e^{-|j|/b}
= 2b\tanh(\tfrac1{2b}) \cdot \tfrac1{2b}e^{-|j|/b}`, so
:math:`\log P(Y = y) = \log p^{\mathrm{Lap}}_Y(y) + \log(2b) + \log\tanh(\tfrac1{2b})`
(the same posterior as the continuous model, another normalisation).  Its CDF at an
integer :math:`m`, split at :math:`s \le m` / :math:`s > m` with :math:`P(N > j) =
a^{j+1}/(1+a)` (:math:`j \ge 0`) and :math:`P(N \le j) = a^{|j|}/(1+a)` (:math:`j < 0`),
:math:`a = e^{-1/b}`, is

.. math::

    P(Y \le m) = F_S(m) - \tfrac{a}{1+a} L(m) + \tfrac{1}{1+a}\, a R'(m), \qquad
    a R'(m) = \sum_{s > m} P(s)\, a^{s - m},

the Laplace halves at :math:`y = m` with other weights (both corrections are at most half of
the mass on their side, so the log-space combination of
:func:`~pymc_dpnoise.math._laplace_cdf.split_log_cdfs` keeps full relative accuracy).

*Rounded Laplace*: :math:`P(N = j) = \sinh(h)\,a^{|j|}` for :math:`j \ne 0` and
:math:`1 - e^{-h}` at 0, :math:`h = 1/(2b)`, so

.. math::

    P(Y = y) = (1 - e^{-h})\,P_S(y) + \sinh(h)\,\bigl[a L(y - 1) + R(y)\bigr],

the two Laplace halves taken one step apart so that neither contains :math:`s = y`: three
positive terms, summed in log space (writing it as :math:`\sinh(h) S(y) - (\cosh h - 1)
P_S(y)` cancels catastrophically when :math:`b` is small).  The CDF is the continuous one at
:math:`m + \tfrac12`.

Gaussian kinds: sums over a window that provably holds the mass
----------------------------------------------------------------
There is no tilting closed form: :math:`P(Y = y) = \sum_s P(s)\,g(y - s)` is summed over a
window of integers.  The summand :math:`f(s) = \log P(s) + \log g(y - s)` is a sum of concave
sequences (binomial and Poisson pmfs are log-concave) whose second difference is at most
:math:`-\kappa`, :math:`\kappa = 1/\sigma^2` from the Gaussian (:math:`+\,4/(n+2)` from the
binomial: :math:`\log(1+\tfrac1{n-s}) + \log(1 + \tfrac1s) \ge \tfrac4{n+2}`).  If :math:`c`
is the argmax, :math:`f(c \pm d) \le f(c) - \kappa d(d-1)/2`, so the terms farther than
:math:`W` from :math:`c` sum to at most :math:`2e^{-\kappa W(W+1)/2}/(1 - e^{-\kappa W})`
times the largest.  With :math:`W = \lceil\sqrt{2T/\kappa}\rceil + 2` and :math:`T = 46` this is
below :math:`10^{-17}` relative for every :math:`\sigma \le 10^7`.  The argmax lies between the
count's mode and :math:`y` (both factors rise before it and fall after) and is found by
bisection on the sign of the closed-form forward difference
:math:`f(s+1) - f(s) = \log\frac{P(s+1)}{P(s)} + \frac{2(y-s)-1}{2\sigma^2}`, which is
non-increasing.  The window is static (sized when the graph is built, from the constant
``sigma`` and, for the binomial, ``n``), its position moves with the parameters; when it
would be wider than the binomial's support the whole support :math:`0..n` is summed.  Where
the window would exceed 2,501 terms (:math:`\sigma \gtrsim 130` and :math:`n \gtrsim 2 \cdot
10^5`), the pmf / pdf is :func:`_hybrid_sum` instead: per release the exact window of 1,001
terms where the count sits near an end of its support (a curvature bound proves it holds the
mass), else 81 trapezoidal nodes on the summand continued to real :math:`s` (where both the
noise and the count are wider than 26, so that the lattice sum equals the integral and the
trapezoidal rule is exact to far below rounding).  The cost of one release therefore depends
on :math:`\sigma` through the window up to that size and not at all on :math:`n` beyond it,
and the result is exact to rounding (checked against brute force at noise 500 in the default
tests, 1e4 and :math:`n = 10^8` in the ``slow`` ones).  The clamp atoms (the CDFs below) have
the same kind of hybrid for a binomial count whose variance is at most 4 noise variances
(:func:`_hybrid_cdf_sum`); elsewhere they keep windows of at most :math:`\approx 24\sigma + 5`
terms, bounded in :math:`n`.

The pmf / pdf's window sum (bisection, window, log-sum-exp; not the full-support or hybrid
cases) runs as one kernel op, :mod:`pymc_dpnoise.math._count_window`: the same formulas with
closed-form derivatives, equal to the graph of this module to a few ulp (tests compare the
two).  The count model of ``benchmarks/time_to_posterior.py`` (4 releases, discrete Gaussian
noise): 67 -> 17 nodes after rewriting, first logp + gradient call from empty caches
12.6 -> 3.6 CPU-s, rewrites 1.29 -> 0.37 CPU-s.

CDFs (needed for the clamp atoms).  Continuous Gaussian: split at :math:`k = \lfloor m\rfloor`,

.. math::

    P(Y \le m) = F_S(k) - \sum_{s \le k} P(s)\,\bar\Phi\bigl(\tfrac{m-s}{\sigma}\bigr)
               + \sum_{s > k} P(s)\,\Phi\bigl(\tfrac{m-s}{\sigma}\bigr),

each correction at most half of the mass on its side.  :math:`\log\bar\Phi(x)` for
:math:`x \ge 0` (and :math:`\log\Phi(x)`, :math:`x \le 0`) has second derivative in
:math:`[-1, -2/\pi]`, so each correction is again a window sum with
:math:`\kappa \ge 0.63/\sigma^2`.  Discrete Gaussian at an integer :math:`m`, for :math:`\sigma \ge 50`: the same split
with :math:`P(N > m - s)` for :math:`s \le m` and :math:`P(N \le m - s)` for :math:`s > m`,
both lower tails :math:`T(j)/Z`, :math:`j \le -1`, of the noise
(:func:`~pymc_dpnoise.math.noise.log_dg_tail`: a direct sum of at most 96 terms or an
Euler-Maclaurin form, exact to rounding, :math:`O(1)` in :math:`\sigma`).  :math:`j \mapsto
\log T(j)` is concave (the CDF of a log-concave pmf) with second differences at most
:math:`-2/(\pi\sigma^2)` (the continuous bound, approached from below as :math:`\sigma`
grows: :math:`-0.64/\sigma^2` at :math:`\sigma = 64`, :math:`-0.92/\sigma^2` at
:math:`\sigma = 1`, computed), so the windows of the continuous case hold the mass.  The cost
of a clamp atom is thus that of one release.  Below :math:`\sigma = 50`, where graphs matter
more than terms: over the noise value :math:`j`, :math:`P(Y \le m) = \sum_j P(N = j)
F_S(m - j)` and :math:`P(Y > m) = \sum_j P(N=j)\,(1 - F_S(m - j))`, both sums of positive
terms whose summands are log-concave with :math:`\kappa = 1/\sigma^2` (CDFs and survival
functions of log-concave pmfs are log-concave), with the binomial and Poisson CDFs in closed
form (:mod:`pymc_dpnoise.math._special`): :math:`O(\sigma)` terms.  The lower tail
:math:`\sum_j e^{-j^2/2\sigma^2} F_S(m - j)` (and, for the binomial, the upper one, the lower
tail of the mirrored count :math:`n - S \sim \mathrm{Bin}(n, 1 - q)` at :math:`n - m - 1`)
runs as a kernel of :mod:`pymc_dpnoise.math._count_window` (``kind="lower"``), over the
count's value :math:`k = m - j`: the argmax is bracketed by :math:`\max(m, 0)` and the first
:math:`k` where the CDF-free bound :math:`\log(1 + P(k+1)/P(k)) - (2(k - m) + 1)/2\sigma^2`
of the summand's step is negative (:math:`F_S(k) \ge P(k)`), the window's CDFs come from one
continued fraction and :math:`F(k + 1) = F(k) + P(k + 1)` upwards (sums of positive terms),
and :math:`\partial_\ell \log F(k) = -(n - k)\,q\,P(k)/F(k)` (Poisson: :math:`-\mu
P(k)/F(k)`): one continued fraction and a few dozen logarithms per atom at
:math:`\sigma = 1`, where the graph evaluates a continued fraction per bisection step and
per term.

Where the split's windows would exceed 2,501 terms (:math:`\sigma` and :math:`\sqrt n` both
above ~130) and the binomial's variance bound :math:`(n + 2)/4` is at most
:math:`4\sigma^2` (known when the graph is built), each CDF is instead one sum of positive
terms over the count's value, :math:`P(Y \le m) = \sum_s P(s)\,P(N \le m - s)` and
:math:`P(Y > m) = \sum_s P(s)\,P(N > m - s)` (each with full relative accuracy, no
complement taken), by :func:`_hybrid_cdf_sum`: an exact window where the count sits near an
end of its support, else trapezoidal nodes on the summand continued to real :math:`s`
(the discrete Gaussian's CDF continued by :math:`\sum_{i \ge 0} e^{-(d-i)^2/2\sigma^2}`),
at a cost independent of :math:`n`.

Clamping
--------
:math:`P(z = L) = P(Y \le L)`, :math:`P(z = U) = P(Y \ge U)` (:math:`= P(Y > U - 1)` for the
integer kinds), the pmf / pdf of :math:`Y` strictly inside, :math:`-\infty` outside.  With
constant releases and bounds (and parameters of static shapes), each release gets only the
term it needs: the parameters are gathered at the releases strictly inside for the pmf /
pdf and at those on a bound for its atom; otherwise both are evaluated for every release
and one is selected.  For the
continuous kinds this mixes masses and densities, each with respect to the same dominating
measure (Lebesgue plus the two atoms), which is what inference needs.

Degenerate counts
-----------------
At :math:`p \in \{0, 1\}` or :math:`\mu = 0` the count is a point mass (0, or :math:`n`) and
the likelihood is the noise's own, evaluated exactly (no clipping of :math:`\operatorname{logit}
p`).
"""

from __future__ import annotations

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.gradient import disconnected_grad
from pytensor.graph.basic import Variable

from ..validation import static_value
from . import _count_window
from . import counts as cm
from ._count_window import count_window_logsumexp
from ._laplace_cdf import split_log_cdfs
from ._special import log_binom_cdf_ratio, log_binom_pmf, log_poisson_cdf_ratio, log_poisson_pmf
from .noise import (
    TAIL_NATS,
    build_value,
    data_bounded,
    known_value,
    log_sinh,
    log_tanh,
    reads_data,
    static_param,
)

__all__ = [
    "discrete_laplace_count_log_cdfs",
    "discrete_laplace_count_logp",
    "gaussian_count_log_cdfs",
    "gaussian_count_logp",
    "laplace_count_log_cdfs",
    "laplace_count_logp",
    "noisy_binomial_log_cdfs",
    "noisy_binomial_logp",
    "noisy_poisson_log_cdfs",
    "noisy_poisson_logp",
    "rounded_laplace_count_log_cdfs",
    "rounded_laplace_count_logp",
    "summed_count_log_cdfs",
    "summed_count_logp",
    "window_half_width",
]

_LOG2 = np.float64(math.log(2.0))
_TINY = np.float64(-1e-300)
_HUGE = np.float64(1e300)
_BIG = np.float64(2.0**62)
_LOG_SQRT_2PI = np.float64(0.5 * math.log(2.0 * math.pi))
#: largest window (terms per release) of the Gaussian-noise sums: sigma up to ~1.5e5
MAX_WINDOW = 3_000_001
#: discrete Gaussian CDFs (clamp atoms) below this sigma: sums over the noise value of the
#: count's CDF (O(sigma) terms, small graphs); from it on, the split over the count's value
#: with O(1) noise tails (log_dg_tail)
DG_SPLIT_MIN_SIGMA = 50.0
#: bisection bound when the count has no static upper end (Poisson, or a symbolic n)
_MAX_ITERS = 64
#: the Poisson's effective upper end: beyond mode + 60 sqrt(mode + 1) + 200 its survival
#: function is below e^{-1000}
_POISSON_REACH = (60.0, 200.0)


def _f64(x):
    if not isinstance(x, Variable):
        return pt.as_tensor_variable(np.asarray(x, dtype="float64"))
    return x if x.dtype == "float64" else pt.cast(x, "float64")


def _e(x):
    """Add a trailing axis (the window axis) to a batch tensor."""
    return x[..., None]


# --------------------------------------------------------------------------------------------
# The two count families
# --------------------------------------------------------------------------------------------


class _Binomial:
    def __init__(self, n, lq, n_max):
        self.n, self.lq, self.n_max = n, lq, n_max
        self.lo = pt.zeros_like(n)
        self.hi = n
        self.curvature = 4.0 / (n_max + 2.0) if n_max is not None else 0.0
        self.iters = _MAX_ITERS if n_max is None else math.ceil(math.log2(n_max + 2.0)) + 2

    def expand(self):
        return _Binomial(_e(self.n), _e(self.lq), self.n_max)

    def params(self):
        return [self.n, self.lq]

    def rebuild(self, n, lq):
        return _Binomial(n, lq, self.n_max)

    def log_pmf(self, s):
        return log_binom_pmf(s, self.n, self.lq)

    def log_ratio(self, s):  # log P(s+1)/P(s), s in [0, n-1]
        return pt.log(self.n - s) - pt.log1p(s) + self.lq

    def mode(self):
        return pt.clip(pt.floor((self.n + 1.0) * pt.sigmoid(self.lq)), 0.0, self.n)

    def reach(self):  # every s above this has P(S > s) = 0
        return self.n

    def curvature_bound(self, c, w):  # min of -second differences of log P on |s - c| <= w
        return 1.0 / (c + w + 1.0) + 1.0 / (self.n - c + w + 1.0)

    def local_curvature(self, c):  # -second difference of log P at c (1 <= c <= n - 1)
        cc = pt.clip(c, 1.0, pt.maximum(self.n - 1.0, 1.0))
        return pt.log1p(1.0 / cc) + pt.log1p(1.0 / pt.maximum(self.n - cc, 1.0))

    def log_cdf(self, j):
        jc = pt.clip(j, 0.0, self.n)
        v = log_binom_pmf(jc, self.n, self.lq) + log_binom_cdf_ratio(jc, self.n, self.lq)
        return pt.switch(j < 0.0, -np.inf, pt.switch(j >= self.n, 0.0, v))

    def log_sf(self, j):
        jc = pt.clip(j, -1.0, self.n - 1.0)
        v = log_binom_pmf(jc + 1.0, self.n, self.lq) + log_binom_cdf_ratio(
            self.n - jc - 1.0, self.n, -self.lq
        )
        return pt.switch(j >= self.n, -np.inf, pt.switch(j < -1.0, 0.0, pt.minimum(v, 0.0)))

    def log_mgf_down(self, t):  # log E[e^{-t S}]
        return cm.log_tilted_binomial_mgf(self.n, self.lq, t)

    def log_mgf_up(self, t):  # log E[e^{-t (n - S)}]
        return cm.log_tilted_binomial_mgf(self.n, -self.lq, t)

    def log_pmf_any(self, s):
        ok = (s >= 0.0) & (s <= self.n)
        return pt.switch(ok, log_binom_pmf(pt.clip(s, 0.0, self.n), self.n, self.lq), -np.inf)

    def laplace_logp(self, y, b):
        return cm.binomial_laplace_logp(y, self.n, epsilon=1.0, sensitivity=b, logit_p=self.lq)

    def laplace_log_cdfs(self, y, b):
        return cm.binomial_laplace_log_cdfs(y, self.n, epsilon=1.0, sensitivity=b, logit_p=self.lq)

    def laplace_halves(self, y, t, tilt=True):
        left, has_left, right, has_right, _ = cm._binomial_halves(y, self.n, self.lq, t, tilt)
        return left, has_left, right, has_right


class _Poisson:
    def __init__(self, lmu):
        self.lmu = lmu
        self.lo = pt.zeros_like(lmu)
        self.hi = pt.full_like(lmu, np.inf)
        self.curvature = 0.0
        self.iters = _MAX_ITERS
        self.n_max = None

    def expand(self):
        return _Poisson(_e(self.lmu))

    def params(self):
        return [self.lmu]

    def rebuild(self, lmu):
        return _Poisson(lmu)

    def log_pmf(self, s):
        return log_poisson_pmf(s, self.lmu)

    def log_ratio(self, s):
        return self.lmu - pt.log1p(s)

    def mode(self):
        return pt.floor(pt.exp(pt.minimum(self.lmu, 60.0)))

    def reach(self):
        m = self.mode()
        a, b = _POISSON_REACH
        return m + a * pt.sqrt(m + 1.0) + b

    def curvature_bound(self, c, w):  # min of -second differences of log P on |s - c| <= w
        return 1.0 / (c + w + 1.0)

    def local_curvature(self, c):  # -second difference of log P at c >= 1
        return pt.log1p(1.0 / pt.maximum(c, 1.0))

    def log_cdf(self, j):
        jc = pt.maximum(j, 0.0)
        v = log_poisson_pmf(jc, self.lmu) + log_poisson_cdf_ratio(jc, self.lmu)
        return pt.switch(j < 0.0, -np.inf, pt.minimum(v, 0.0))

    def log_sf(self, j):
        jc = pt.maximum(j, -1.0)
        v = log_poisson_pmf(jc + 1.0, self.lmu) + log_poisson_cdf_ratio(jc, self.lmu, upper=True)
        return pt.switch(j < -1.0, 0.0, pt.minimum(v, 0.0))

    def log_mgf_down(self, t):  # log E[e^{-t S}] = mu (e^{-t} - 1)
        return pt.exp(self.lmu) * pt.expm1(-t)

    def log_pmf_any(self, s):
        return pt.switch(s >= 0.0, log_poisson_pmf(pt.maximum(s, 0.0), self.lmu), -np.inf)

    def laplace_logp(self, y, b):
        return cm.poisson_laplace_logp(y, epsilon=1.0, sensitivity=b, log_mu=self.lmu)

    def laplace_log_cdfs(self, y, b):
        return cm.poisson_laplace_log_cdfs(y, epsilon=1.0, sensitivity=b, log_mu=self.lmu)

    def laplace_halves(self, y, t, tilt=True):
        left, has_left, right, _ = cm._poisson_halves(y, self.lmu, t, tilt)
        return left, has_left, right, pt.ones_like(has_left, dtype="bool")


# --------------------------------------------------------------------------------------------
# Window sums
# --------------------------------------------------------------------------------------------


def window_half_width(sigma_max, kappa_extra=0.0, kappa_factor=1.0):
    r"""Static half-width :math:`W = \lceil\sqrt{2T/\kappa}\rceil + 2` of a window sum whose
    summand has second differences at most :math:`-\kappa`,
    :math:`\kappa = \text{kappa\_factor}/\sigma_{\max}^2 + \text{kappa\_extra}`."""
    kappa = kappa_factor / float(sigma_max) ** 2 + kappa_extra
    width = math.ceil(math.sqrt(2.0 * TAIL_NATS / kappa)) + 2
    if 2 * width + 1 > MAX_WINDOW:
        raise ValueError(
            f"noise sigma = {sigma_max:g}: the exact likelihood sums {2 * width + 1} terms per "
            f"release, more than the {MAX_WINDOW} allowed (memory); noise this large swamps any "
            "count below ~1e12, where a normal approximation of the count is accurate"
        )
    return width


def _lse(vals):
    """log-sum-exp over the last axis; -inf where every term is -inf (gradient finite)."""
    m = disconnected_grad(pt.max(vals, axis=-1))
    m_safe = pt.switch(pt.isfinite(m), m, 0.0)
    return m_safe + pt.log(pt.sum(pt.exp(vals - _e(m_safe)), axis=-1))


def _argmax(diff, a, b, iters, fam, value, sigma):
    """Argmax over the integers of [a, b] of a concave sequence with forward difference
    ``diff(s, fam, value, sigma)``.

    Bisection on the sign of ``diff`` (non-increasing), ``iters`` steps of a ``scan`` (one
    small inner graph however many steps; no gradient flows through the position).  Every
    tensor the loop reads is passed in explicitly (``strict``): a scan that captured PyMC's
    value variables from its closure would carry them into its inner graph, where PyMC's
    replacements do not reach (the gradient then fails on ``ValuedRV``).
    """
    ns = [disconnected_grad(_f64(x)) for x in (*fam.params(), value, sigma)]
    k = len(ns) - 2

    def d(s, *inner):
        return diff(s, fam.rebuild(*inner[:k]), inner[k], inner[k + 1])

    a, b = _f64(a), _f64(b)
    # broadcast the states with everything ``diff`` reads, so that the loop's output type
    # (static shape included) is the initial state's (scan refuses a mismatch)
    a, b, _ = pt.broadcast_arrays(a, b, d(a, *ns))
    a, b = disconnected_grad(a), disconnected_grad(b)

    def step(a, b, *inner):
        mid = pt.floor(0.5 * (a + b))
        go = (mid < b) & (d(mid, *inner) >= 0.0)
        return pt.switch(go, mid + 1.0, a), pt.switch(go, b, mid)

    a_s, _ = pytensor.scan(
        step,
        outputs_info=[a, b],
        non_sequences=ns,
        n_steps=iters,
        strict=True,
        return_updates=False,
    )
    return disconnected_grad(a_s[-1])


def _window(term, center, lo, hi, half_width):
    """``log sum_{s in [center - W, center + W] ∩ [lo, hi]} exp(term(s))``; ``term`` takes
    tensors with a trailing window axis."""
    off = pt.arange(-half_width, half_width + 1, dtype="float64")
    s = _e(center) + off
    lo, hi = _e(lo), _e(hi)
    valid = (s >= lo) & (s <= hi)
    vals = pt.switch(valid, term(pt.clip(s, lo, hi)), -np.inf)
    return _lse(vals)


def _full_support(term, n_max, hi):
    """``log sum_{s=0}^{n} exp(term(s))``, every n at most the static ``n_max``."""
    s = pt.arange(0, int(n_max) + 1, dtype="float64")
    valid = s <= _e(hi)
    vals = pt.switch(valid, term(pt.minimum(s, _e(hi))), -np.inf)
    return _lse(vals)


def _s_side_sum(
    fam, term, diff, a, b, lo, hi, sigma_max, value, sigma, kappa_factor=1.0, coarse=False
):
    """Window sum over the count value s of a summand with the given forward difference,
    argmax in [a, b]; the whole support when the window would be wider than it.

    ``coarse=True`` (a summand smooth in a real s, untruncated inside the support: the
    Gaussian kinds' pmf / pdf): where the window would exceed ``2 * HYBRID_MIN_HALF + 1``
    terms, :func:`_hybrid_sum` instead (cost independent of n)."""
    width = window_half_width(sigma_max, fam.curvature, kappa_factor)
    if fam.n_max is not None and fam.n_max + 1 <= 2 * width + 1:
        return _full_support(
            lambda s: pt.switch((s >= _e(lo)) & (s <= _e(hi)), term(s), -np.inf), fam.n_max, fam.hi
        )
    c = _argmax(diff, a, b, fam.iters, fam, value, sigma)
    if coarse and width > HYBRID_MIN_HALF:
        return _hybrid_sum(fam, term, c, sigma)
    return _window(term, c, lo, hi, width)


#: the Gaussian kinds' pmf / pdf switch to :func:`_hybrid_sum` above this static half-width
HYBRID_MIN_HALF = 1250
#: half-width of the exact window of :func:`_hybrid_sum`, and its coarse nodes per side
HYBRID_UNIT_HALF = 500
HYBRID_COARSE_HALF = 40


def _hybrid_sum(fam, term, c, sigma):
    r"""``log sum_s exp(term(s))`` over the support, for a summand :math:`f(s) = \log P(s) +
    \log g(y - s)` (binomial or Poisson pmf times a Gaussian), at a cost independent of
    :math:`n` and :math:`\sigma`: per release, one of

    * (A) the exact window :math:`|s - c| \le U` (:math:`U` = ``HYBRID_UNIT_HALF``), which holds
      the mass wherever the summand's curvature on it is at least
      :math:`\kappa_A = 1/\sigma^2 + 1/(c + U + 1) + 1/(n - c + U + 1)` (binomial second
      differences are :math:`-\log(1 + 1/s) - \log(1 + 1/(n - s)) \le -1/(s + 1) -
      1/(n - s + 1)`; Poisson without the second term) and :math:`\kappa_A U (U - 1)/2 \ge 50`
      (the bound of the module docstring: concavity carries the edge's slope beyond it);
    * (B) otherwise, the trapezoidal rule on the summand continued to real :math:`s`
      (:math:`1/\Gamma` is entire): nodes :math:`c + i h`, :math:`|i| \le 40`,
      :math:`h = s_c / 3`, :math:`s_c = (-\Delta^2 f(c))^{-1/2}`, and
      :math:`\sum_s e^{f(s)} \approx h \sum_i e^{f(c + i h)}`.  Where (A) fails,
      :math:`\sigma > 50` and the mode is more than 1,999 from both ends of the support, so
      :math:`s_c \ge 26` and the mode is at least :math:`\sqrt{1999} \approx 45` widths
      from the ends: the summand is analytic and Gaussian-like in a strip of half-width
      :math:`\gg s_c` around the real axis, and both the lattice sum's departure from the
      integral (:math:`\sim e^{-2\pi\tau + \tau^2/2 s_c^2}`) and the trapezoidal error
      (:math:`\sim e^{-2\pi\tau/h + \tau^2/2 s_c^2}`) are far below :math:`10^{-16}` at
      :math:`\tau \approx 6\pi s_c`; the nodes reach :math:`\pm 13 s_c`, beyond which the
      summand (its curvature there at least 0.73 of :math:`c`'s) holds less than
      :math:`e^{-60}`.  Checked against brute-force sums in ``tests/distributions/test_noisy_counts.py``.
    """
    u = float(HYBRID_UNIT_HALF)
    lo, hi = fam.lo, fam.hi
    unit = _window(term, c, lo, hi, HYBRID_UNIT_HALF)
    inv_s2 = 1.0 / (_f64(sigma) ** 2)
    kappa_a = inv_s2 + fam.curvature_bound(c, u)
    use_unit = kappa_a * u * (u - 1.0) >= 100.0
    kappa_c = disconnected_grad(inv_s2 + fam.local_curvature(c))
    h = 1.0 / (3.0 * pt.sqrt(kappa_c))
    coarse = _trapezoid(term, c, h, HYBRID_COARSE_HALF, lo, hi)
    return pt.switch(use_unit, unit, coarse)


def _trapezoid(term, c, h, half, lo, hi):
    """``log(h sum_{|i| <= half} exp(term(c + i h)))``, nodes outside ``[lo, hi]`` left out."""
    off = pt.arange(-half, half + 1, dtype="float64")
    x = _e(c) + _e(h) * off
    lo_e, hi_e = _e(lo), _e(hi)
    valid = (x >= lo_e) & (x <= hi_e)
    vals = pt.switch(valid, term(pt.clip(x, lo_e, hi_e)), -np.inf)
    return pt.log(h) + _lse(vals)


class SymbolicSigmaError(ValueError, NotImplementedError):
    """A Gaussian-kind count likelihood asked for at a ``sigma`` whose value is unknown when the
    graph is built.

    A ``ValueError`` (bad input: a random ``sigma``), and a ``NotImplementedError`` so that
    ``pm.Truncated`` treats it like the refused ``icdf``: when it builds its sampler, PyMC asks
    for the log CDF at fresh placeholder inputs (not the variable's constant ``sigma``), and
    falls back to rejection sampling on ``NotImplementedError``.  The log densities PyMC builds
    afterwards use the variable's own inputs, where a constant ``sigma`` is recovered.
    """


def _static_sigma(sigma):
    """The value of ``sigma`` (a float64 array) if the graph fixes it when built: a constant,
    a shared value (at its current value: :func:`~pymc_dpnoise.math.noise.data_bounded` guards
    the graph), or a graph of constants only (folded); else :class:`SymbolicSigmaError`."""
    v = build_value(sigma)
    if v is None:
        raise SymbolicSigmaError(
            "the Gaussian-noise count likelihoods need a constant `sigma` (the window they sum "
            "over is sized from it when the graph is built); got a symbolic value.  A number, "
            "or pm.Data (then its value when the model is built is the largest it may be set "
            "to)"
        )
    return np.asarray(v, dtype="float64")


def _sigma_max(sigma):
    return float(np.max(_static_sigma(sigma)))


# --------------------------------------------------------------------------------------------
# Unclamped log pmf / pdf and log CDFs of Y = S + N
# --------------------------------------------------------------------------------------------


def _gauss_log_density(noise, x, sigma):
    return -0.5 * (x / sigma) ** 2 - noise.log_norm(sigma)


def _window_dense(op, y, hi, lpar, sigma):
    """The window sum of :class:`~pymc_dpnoise.math._count_window.CountWindowOp` as this
    module's graph (inputs broadcast to one shape)."""
    fam = _Binomial(hi, lpar, None) if op.family == "binomial" else _Poisson(lpar)
    if op.kind == "lower":
        return _dg_lower_sum(fam, pt.floor(y), sigma, op.half_width, op.iters)
    ef, ey, es = fam.expand(), _e(y), _e(sigma)

    def term(s):
        return ef.log_pmf(s) - 0.5 * ((ey - s) / es) ** 2

    def diff(s, f, y, sigma):
        return f.log_ratio(s) + (2.0 * (y - s) - 1.0) / (2.0 * sigma**2)

    mode = fam.mode()
    a = pt.clip(pt.minimum(mode, pt.floor(y)), fam.lo, fam.hi)
    b = pt.clip(pt.maximum(mode, pt.ceil(y)), fam.lo, fam.hi)
    c = _argmax(diff, a, b, op.iters, fam, y, sigma)
    return _window(term, c, fam.lo, fam.hi, op.half_width)


_count_window.DENSE_GRAPH = _window_dense

#: whether :func:`_gauss_logp` sums its window with :mod:`._count_window`'s kernel (``False``:
#: the PyTensor graph of the same formulas; the tests compare the two)
_WINDOW_KERNEL = True


def gaussian_count_logp(noise, fam, y, sigma):
    """Log pmf / pdf of ``fam + noise`` for a Gaussian kind ``noise`` (a window sum; module
    docstring)."""
    return _gauss_logp(noise, fam, y, sigma)


def _gauss_logp(noise, fam, y, sigma):
    sigma_max = _sigma_max(sigma)
    y = pt.broadcast_arrays(y, fam.lo, sigma)[0]
    width = window_half_width(sigma_max, fam.curvature)
    full_support = fam.n_max is not None and fam.n_max + 1 <= 2 * width + 1
    if _WINDOW_KERNEL and not full_support and width <= HYBRID_MIN_HALF:
        # the window sum below (argmax, window, log-sum-exp) as one kernel with closed-form
        # derivatives: the same formulas (:mod:`._count_window`), ~60 fewer graph nodes
        if isinstance(fam, _Binomial):
            args = ("binomial", y, fam.n, fam.lq)
        else:
            args = ("poisson", y, pt.full_like(fam.lmu, np.inf), fam.lmu)
        lse = count_window_logsumexp(*args, sigma, width, fam.iters)
        return lse + _gauss_log_density(noise, pt.zeros_like(sigma), _f64(sigma))
    ef, ey, es = fam.expand(), _e(y), _e(sigma)

    def term(s):
        return ef.log_pmf(s) + _gauss_log_density(noise, ey - s, es)

    def diff(s, f, y, sigma):
        return f.log_ratio(s) + (2.0 * (y - s) - 1.0) / (2.0 * sigma**2)

    mode = fam.mode()
    a = pt.clip(pt.minimum(mode, pt.floor(y)), fam.lo, fam.hi)
    b = pt.clip(pt.maximum(mode, pt.ceil(y)), fam.lo, fam.hi)
    return _s_side_sum(fam, term, diff, a, b, fam.lo, fam.hi, sigma_max, y, sigma, coarse=True)


def laplace_count_logp(fam, y, b):
    """Log pdf of ``fam + Laplace(b)``: the tilted closed form of :mod:`.counts`."""
    return fam.laplace_logp(y, b)


def discrete_laplace_count_logp(fam, y, b):
    """Log pmf of ``fam + DiscreteLaplace(b)``: the Laplace density renormalised (module
    docstring)."""
    return fam.laplace_logp(y, b) + pt.log(2.0 * b) + log_tanh(0.5 / b)


def rounded_laplace_count_logp(fam, y, b):
    """Log pmf of ``fam + RoundedLaplace(b)``: :math:`(1 - e^{-h}) P_S(y) + \\sinh(h) [a L(y - 1)
    + R(y)]`, all terms positive (module docstring)."""
    h = 0.5 / b
    t = 1.0 / b
    left, has_left, _, _ = fam.laplace_halves(y - 1.0, t)
    _, _, right, has_right = fam.laplace_halves(y, t)
    terms = pt.stack(
        [
            pt.log1mexp(-h) + fam.log_pmf_any(y),
            pt.switch(has_left, log_sinh(h) - t + left, -np.inf),
            pt.switch(has_right, log_sinh(h) + right, -np.inf),
        ],
        axis=-1,
    )
    return _lse(terms)


def _gauss_split_log_cdfs(noise, fam, m, sigma):
    """Gaussian kinds: (log P(Y <= m), log P(Y > m)) by the split of the module docstring
    (for the discrete Gaussian at the integer ``floor(m)``)."""
    sigma_max = _sigma_max(sigma)
    if noise.discrete:
        m = pt.floor(_f64(m))

    def log_above(d, sigma):  # log P(N > d), d >= 0 (an integer for the integer kinds)
        return noise.tail_log_sf(d, sigma, sigma_max)

    def log_below(d, sigma):  # log P(N <= d), d < 0 (an integer <= -1 for the integer kinds)
        return noise.tail_log_cdf(d, sigma, sigma_max)

    m = pt.broadcast_arrays(m, fam.lo, sigma)[0]
    k = pt.floor(m)
    ef, em, es = fam.expand(), _e(m), _e(sigma)
    mode = fam.mode()
    lo, hi = fam.lo, fam.hi

    def side_sum(log_tail, a, b, lo_s, hi_s):
        # log sum over s in [lo_s, hi_s] of P(s) exp(log_tail(m - s)), argmax sought in [a, b]
        def term(s):
            return ef.log_pmf(s) + log_tail(em - s, es)

        def diff(s, f, m, sigma):
            return f.log_ratio(s) + log_tail(m - s - 1.0, sigma) - log_tail(m - s, sigma)

        return _s_side_sum(fam, term, diff, a, b, lo_s, hi_s, sigma_max, m, sigma, 0.63)

    # below: s <= k, summand P(s) P(N > m - s)
    has_below = k >= lo
    hi_c = pt.clip(k, lo, hi)
    log_c = side_sum(log_above, pt.clip(pt.minimum(mode, hi_c), lo, hi_c), hi_c, lo, hi_c)

    # above: s > k, summand P(s) P(N <= m - s)
    has_above = k + 1.0 <= hi
    lo_b = pt.clip(k + 1.0, lo, hi)
    log_b = side_sum(log_below, lo_b, pt.clip(pt.maximum(mode, lo_b), lo_b, hi), lo_b, hi)

    kk = pt.clip(k, lo - 1.0, hi)
    zero = pt.zeros_like(log_c)
    return split_log_cdfs(
        fam.log_cdf(pt.clip(kk, lo, hi)),
        log_c,
        has_below,
        fam.log_sf(kk),
        log_b,
        has_above,
        zero,
        zero,
    )


#: the binomial's clamp atoms under Gaussian-kind noise use :func:`_hybrid_cdf_sum` (cost
#: independent of n) where the split's static window would exceed ``2 * HYBRID_MIN_HALF + 1``
#: terms, sigma >= ``DG_SPLIT_MIN_SIGMA`` and the count's variance is at most this many noise
#: variances, (n_max + 2) / 4 <= HYBRID_CDF_RATIO * sigma_min^2 (else the split's windows:
#: O(sigma) terms)
HYBRID_CDF_RATIO = 4.0
#: trapezoidal nodes per side of :func:`_hybrid_cdf_sum`, and the nats its span covers
HYBRID_CDF_HALF = 100
_HYBRID_CDF_NATS = 64.0


def _use_hybrid_cdfs(fam, sigma):
    # the choice needs the smallest sigma too, which pm.set_data may lower
    if not isinstance(fam, _Binomial) or fam.n_max is None or reads_data(sigma):
        return False
    v = _static_sigma(sigma)
    s_min, s_max = float(np.min(v)), float(np.max(v))
    if s_min < DG_SPLIT_MIN_SIGMA:
        return False
    width = window_half_width(s_max, fam.curvature, 0.63)
    if width <= HYBRID_MIN_HALF or fam.n_max + 1 <= 2 * width + 1:
        return False
    return (fam.n_max + 2.0) / 4.0 <= HYBRID_CDF_RATIO * s_min**2


def _gauss_hybrid_log_cdfs(noise, fam, m, sigma):
    r"""Gaussian kinds, binomial count wide against the noise excluded statically
    (:func:`_use_hybrid_cdfs`): :math:`\log P(Y \le m)` and :math:`\log P(Y > m)` each as one
    sum of positive terms over the count's value, :math:`\sum_s P(s)\,P(N \le m - s)` and
    :math:`\sum_s P(s)\,P(N > m - s)`, by :func:`_hybrid_cdf_sum` (cost independent of n)."""
    sigma_max = _sigma_max(sigma)
    if noise.discrete:
        m = pt.floor(_f64(m))
    m = pt.broadcast_arrays(_f64(m), fam.lo, sigma)[0]
    ef, em, es = fam.expand(), _e(m), _e(sigma)
    mode = fam.mode()

    def lower(d, sigma):
        return noise.log_cdf_real(d, sigma, sigma_max)

    def upper(d, sigma):
        return noise.log_sf_real(d, sigma, sigma_max)

    out = []
    for noise_fn, a, b in ((lower, fam.lo, mode), (upper, mode, fam.hi)):

        def term(s, noise_fn=noise_fn):
            return ef.log_pmf(s) + noise_fn(em - s, es)

        def diff(s, f, m, sigma, noise_fn=noise_fn):
            return f.log_ratio(s) + noise_fn(m - s - 1.0, sigma) - noise_fn(m - s, sigma)

        c = _argmax(diff, a, b, fam.iters, fam, m, sigma)
        out.append(pt.minimum(_hybrid_cdf_sum(fam, term, c, sigma), 0.0))
    return tuple(out)


def _hybrid_cdf_sum(fam, term, c, sigma):
    r"""``log sum_s exp(term(s))`` over the binomial's support for a clamp atom's summand
    :math:`f(s) = \log P(s) + \log H(m - s)`, :math:`H` the noise's CDF or survival function
    (continued to real arguments: the spec's ``log_cdf_real`` / ``log_sf_real``), at a cost independent of
    :math:`n`.  :math:`\log H` is concave with :math:`0 \le -(\log H)'' \le 1/\sigma^2` (it is
    flat where :math:`H \approx 1`, so unlike the pmf's summand the noise gives no curvature
    bound), and :math:`\log P` is concave with :math:`-(\log \tilde P)''(x) = \psi'(x + 1) +
    \psi'(n - x + 1)`, between :math:`1/(x + 1) + 1/(n - x + 1) \ge 4/(n + 2)` and
    :math:`1/x + 1/(n - x)`.  Per release, one of

    * (A) the exact window :math:`|s - c| \le U` (:math:`U` = ``HYBRID_UNIT_HALF``) where the
      count's curvature on it, :math:`\kappa_A = 1/(c + U + 1) + 1/(n - c + U + 1)`, has
      :math:`\kappa_A U (U - 1)/2 \ge 100` (the bound of the module docstring);
    * (B) otherwise (then :math:`\min(c, n - c) > 746`) the trapezoidal rule on the summand
      continued to real :math:`s`, over :math:`|s - c| \le W` with :math:`2 \cdot 100 + 1`
      nodes, :math:`W = \sqrt{2 \cdot 64/\kappa_\ell} + 2`, :math:`\kappa_\ell =
      \max(4/(n + 2), 1/(c + W + 1) + 1/(n - c + W + 1))` (a fixed point, approached from
      above: every iterate is a valid bound), so that the summand beyond the span is below
      :math:`e^{-64}` of its peak.  The step :math:`h = W/100` resolves the narrowest scale on
      the span, :math:`\kappa_h^{-1/2}` with :math:`\kappa_h = 1/(c - W) + 1/(n - c - W) +
      1/\sigma^2`: :math:`h\sqrt{\kappa_h} = \sqrt{128\,\kappa_h/\kappa_\ell}/100 \le 0.3`
      because :math:`1/\sigma^2 \le 4 \cdot` ``HYBRID_CDF_RATIO`` :math:`/(n + 2) \le 4
      \kappa_\ell` (the static condition) and the count's curvature changes by less than a
      factor 2.9 over the span.  The summand is then Gaussian-like on scales of at least 24
      and analytic near the real axis, so the lattice sum equals the integral and the
      trapezoidal rule is exact, both to far below rounding (as in :func:`_hybrid_sum`).
      Checked against brute-force sums in ``tests/distributions/test_noisy_counts.py``.
    """
    u = float(HYBRID_UNIT_HALF)
    lo, hi = fam.lo, fam.hi
    unit = _window(term, c, lo, hi, HYBRID_UNIT_HALF)
    use_unit = fam.curvature_bound(c, u) * u * (u - 1.0) >= 200.0
    n = fam.n
    c = disconnected_grad(c)
    k_glob = 4.0 / (n + 2.0)
    width = pt.sqrt(2.0 * _HYBRID_CDF_NATS / k_glob) + 2.0
    for _ in range(6):
        k_lo = pt.maximum(k_glob, fam.curvature_bound(c, width))
        width = pt.sqrt(2.0 * _HYBRID_CDF_NATS / k_lo) + 2.0
    h = disconnected_grad(width / HYBRID_CDF_HALF)
    coarse = _trapezoid(term, c, h, HYBRID_CDF_HALF, lo, hi)
    return pt.switch(use_unit, unit, coarse)


def _dg_log_cdfs(noise, fam, m, sigma):
    """Discrete Gaussian noise at an integer m: both tails as sums over the noise value
    (the lower tail by :mod:`._count_window`'s kernel where ``_WINDOW_KERNEL`` is on, the
    same sum with the CDF's steps in closed form)."""
    sigma_max = _sigma_max(sigma)
    m_known = known_value(m)
    m = pt.broadcast_arrays(pt.floor(_f64(m)), fam.lo, sigma)[0]
    width = window_half_width(sigma_max)
    log_z = noise.log_norm(_f64(sigma))
    if _WINDOW_KERNEL:
        if isinstance(fam, _Binomial):
            args = ("binomial", m, fam.n, fam.lq)
        else:
            args = ("poisson", m, pt.full_like(fam.lmu, np.inf), fam.lmu)
        lower = count_window_logsumexp(*args, sigma, width, _MAX_ITERS, kind="lower")
    else:
        lower = _dg_lower_sum(fam, m, sigma, width, _cdf_iters(fam, m_known))
    logcdf = lower - log_z
    if _WINDOW_KERNEL and isinstance(fam, _Binomial):
        # P(Y > m) = sum_j P_N(j) P(n - S <= n - m - 1 + j): the lower tail of the mirrored
        # count Bin(n, 1 - q) at n - m - 1 (the noise is symmetric)
        upper = count_window_logsumexp(
            "binomial", fam.n - m - 1.0, fam.n, -fam.lq, sigma, width, _MAX_ITERS, kind="lower"
        )
        return pt.minimum(logcdf, 0.0), pt.minimum(upper - log_z, 0.0)
    ef, em, es = fam.expand(), _e(m), _e(sigma)
    reach = fam.reach()
    big = pt.full_like(m, _BIG)
    iters = _cdf_iters(fam, m_known)

    # log P(Y > m) = log sum_{j > m - reach} P_N(j) (1 - F_S(m - j))
    def term_hi(j):
        return -0.5 * (j / es) ** 2 + ef.log_sf(em - j)

    def diff_hi(j, f, m, sigma):
        return _dg_noise_step(j, sigma) + f.log_sf(m - j - 1.0) - f.log_sf(m - j)

    a_hi = pt.maximum(0.0, m - reach + 1.0)
    b_hi = pt.maximum(pt.minimum(m + 1.0, big), a_hi)
    c_hi = _argmax(diff_hi, a_hi, b_hi, iters, fam, m, sigma)
    logccdf = _window(term_hi, c_hi, m - reach + 1.0, big, width) - log_z
    return pt.minimum(logcdf, 0.0), pt.minimum(logccdf, 0.0)


def _dg_noise_step(j, sigma):
    """log P_N(j+1) - log P_N(j) of the discrete Gaussian."""
    return -(2.0 * j + 1.0) / (2.0 * sigma**2)


def _dg_lower_sum(fam, m, sigma, width, iters):
    r""":math:`\log \sum_{j \le m} e^{-j^2/2\sigma^2} F_S(m - j)` (the lower clamp atom
    times the discrete Gaussian's :math:`Z`) at integers ``m``: the window of ``width`` noise
    values around the summand's argmax (bisection, ``iters`` steps)."""
    ef, em, es = fam.expand(), _e(m), _e(sigma)
    reach = fam.reach()
    big = pt.full_like(m, _BIG)

    def term_lo(j):
        return -0.5 * (j / es) ** 2 + ef.log_cdf(em - j)

    def diff_lo(j, f, m, sigma):
        return _dg_noise_step(j, sigma) + f.log_cdf(m - j - 1.0) - f.log_cdf(m - j)

    b_lo = pt.minimum(0.0, m)
    a_lo = pt.minimum(pt.maximum(m - reach, -big), b_lo)
    c_lo = _argmax(diff_lo, a_lo, b_lo, iters, fam, m, sigma)
    return _window(term_lo, c_lo, -big, m, width)


def _cdf_iters(fam, m_known):
    """Bisection steps of the discrete-Gaussian CDF sums: their brackets are at most
    n + |m| + 1 wide (binomial with a static n and a constant m, e.g. a clamp bound)."""
    if fam.n_max is None or m_known is None:
        return _MAX_ITERS
    width = fam.n_max + float(np.max(np.abs(m_known), initial=0.0)) + 2.0
    return min(_MAX_ITERS, math.ceil(math.log2(width)) + 2)


def gaussian_count_log_cdfs(noise, fam, y, sigma):
    """``(log P(Y <= y), log P(Y > y))`` of ``Y = fam + noise``, a Gaussian kind: the hybrid
    sums where the count is wide against the noise, the sums over the noise value for the
    discrete Gaussian below ``DG_SPLIT_MIN_SIGMA``, else the split (module docstring)."""
    if _use_hybrid_cdfs(fam, sigma):
        return _gauss_hybrid_log_cdfs(noise, fam, y, sigma)
    if noise.discrete and _sigma_max(sigma) < DG_SPLIT_MIN_SIGMA:
        return _dg_log_cdfs(noise, fam, y, sigma)
    return _gauss_split_log_cdfs(noise, fam, y, sigma)


def laplace_count_log_cdfs(fam, y, b):
    """``(log P(Y <= y), log P(Y > y))`` of ``Y = fam + Laplace(b)``."""
    lc, lcc = fam.laplace_log_cdfs(y, b)
    return _laplace_tails(fam, y, b, lc, lcc, _LOG2, 0.0)


def rounded_laplace_count_log_cdfs(fam, y, b):
    """The continuous Laplace's at :math:`\\lfloor y\\rfloor + \\tfrac12`."""
    x = pt.floor(y) + 0.5
    lc, lcc = fam.laplace_log_cdfs(x, b)
    return _laplace_tails(fam, x, b, lc, lcc, _LOG2, 0.0)


def discrete_laplace_count_log_cdfs(fam, y, b):
    """At :math:`m = \\lfloor y\\rfloor`: the Laplace halves with other weights (module
    docstring)."""
    m = pt.floor(y)
    t = 1.0 / b
    left, has_left, right, has_right = fam.laplace_halves(m, t)
    below, _, above, _ = fam.laplace_halves(m, t, tilt=False)
    log1pa = pt.softplus(-t)  # log(1 + a)
    lc, lcc = split_log_cdfs(below, left, has_left, above, right, has_right, -t - log1pa, -log1pa)
    return _laplace_tails(fam, m, b, lc, lcc, log1pa, 1.0)


def _laplace_tails(fam, x, b, lc, lcc, log_c, up_shift):
    r"""Below the count's support (and above a binomial's) the Laplace kinds' CDF is a tilted
    moment generating function, :math:`P(Y \le x) = \tfrac12 e^{x/b} E[e^{-S/b}]` at
    :math:`x \le 0` (``log_c`` = log 2; discrete Laplace at an integer :math:`m \le 0`:
    :math:`e^{m/b} E[a^S]/(1+a)`, ``log_c`` = log(1 + a), and above :math:`n` the upper tail
    starts one step later, ``up_shift`` = 1), which keeps full relative accuracy where the
    general split loses :math:`n \cdot 10^{-16}` (1e-8 at :math:`n = 10^8`)."""
    t = 1.0 / b
    below, x_lo = x <= 0.0, pt.minimum(x, 0.0)
    log_lo = x_lo * t + fam.log_mgf_down(t) - log_c
    # the complement from the tail only where the tail is below 1/2 (else the split's value,
    # accurate there, is kept)
    lc = pt.switch(below, log_lo, lc)
    lcc = pt.switch(below & (log_lo < -_LOG2), pt.log1mexp(pt.minimum(log_lo, -_LOG2)), lcc)
    if not isinstance(fam, _Binomial):
        return lc, lcc
    above = x >= fam.n
    x_hi = pt.maximum(x, fam.n)
    log_hi = -(x_hi + up_shift - fam.n) * t + fam.log_mgf_up(t) - log_c
    lcc = pt.switch(above, log_hi, lcc)
    lc = pt.switch(above & (log_hi < -_LOG2), pt.log1mexp(pt.minimum(log_hi, -_LOG2)), lc)
    return lc, lcc


# --------------------------------------------------------------------------------------------
# Any integer noise: sums over the noise's values
# --------------------------------------------------------------------------------------------


def _noise_grid(noise, param):
    """The noise values ``-R..R`` (a trailing axis) of :meth:`~pymc_dpnoise.noise.Noise.support_radius`."""
    v = static_param(param, f"the summed count likelihood of {noise.__name__}", noise.param_name)
    if not noise.discrete:
        raise NotImplementedError(
            f"{noise.__name__} is continuous: define its `count_logp` and `count_log_cdfs` (the "
            "sum over the noise's values is for integer noise)"
        )
    radius = int(noise.support_radius(v))
    if radius < 0:
        raise ValueError(f"{noise.__name__}.support_radius must be >= 0; got {radius}")
    return pt.arange(-radius, radius + 1, dtype="float64")


def summed_count_logp(noise, fam, y, param):
    r""":math:`\log P(Y = y) = \log\sum_{|j| \le R} P(N = j)\,P(S = y - j)` for an integer
    ``noise`` with negligible mass beyond :math:`R` (its ``support_radius``): exact, cost
    :math:`2R + 1` terms per release."""
    j = _noise_grid(noise, param)
    y, param = _f64(y), _f64(param)
    terms = noise.log_density(j, _e(param)) + fam.expand().log_pmf_any(_e(y) - j)
    return _lse(terms)


def summed_count_log_cdfs(noise, fam, y, param):
    r"""``(log P(Y <= m), log P(Y > m))``, :math:`m = \lfloor y\rfloor`, as
    :math:`\sum_j P(N = j) F_S(m - j)` and :math:`\sum_j P(N = j) (1 - F_S(m - j))`: sums of
    positive terms (full relative accuracy in both tails)."""
    j = _noise_grid(noise, param)
    m, param = pt.floor(_f64(y)), _f64(param)
    lp = noise.log_density(j, _e(param))
    ef, em = fam.expand(), _e(m)
    return _lse(lp + ef.log_cdf(em - j)), _lse(lp + ef.log_sf(em - j))


# --------------------------------------------------------------------------------------------
# Degenerate counts: the noise alone, shifted
# --------------------------------------------------------------------------------------------


def _noise_log_cdfs(noise, x, param):
    return noise.log_cdf(x, param), noise.log_sf(x, param)


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def _static_max(x):
    v = known_value(x)
    return None if v is None else float(np.max(v)) if np.size(v) else 0.0


def _finite_or_zero(x):
    """``x`` with infinite entries replaced by 0 (a constant stays a constant; ``pm.Data``
    stays in the graph)."""
    v = static_value(x)
    if v is not None:
        return _f64(np.where(np.isfinite(v), v, 0.0))
    return pt.switch(pt.isfinite(x), x, 0.0)


def _clamped(value, lower, upper, discrete, logp_fn, log_cdfs_fn):
    y = _f64(value)
    if lower is None and upper is None:
        return logp_fn(y)
    lo = _f64(-np.inf if lower is None else lower)
    hi = _f64(np.inf if upper is None else upper)
    inside = logp_fn(pt.clip(y, pt.maximum(lo, -_HUGE), pt.minimum(hi, _HUGE)))
    res = inside
    # Observed data and bounds that are constants: a branch no value takes is left out of
    # the graph (same value and gradient; the censored branch is most of the graph, and
    # its construction, rewrites and compilation are most of a model's first-run cost).
    y_v, lo_v, hi_v = static_value(y), static_value(lo), static_value(hi)
    known = y_v is not None and lo_v is not None and hi_v is not None

    def taken(mask):
        return not known or bool(np.any(mask))

    if upper is not None and taken(y_v == hi_v if known else None):
        safe_hi = _finite_or_zero(hi) - (1.0 if discrete else 0.0)
        res = pt.switch(pt.eq(y, hi), log_cdfs_fn(safe_hi)[1], res)
    if lower is not None and taken(y_v == lo_v if known else None):
        res = pt.switch(pt.eq(y, lo), log_cdfs_fn(_finite_or_zero(lo))[0], res)
    if taken((y_v < lo_v) | (y_v > hi_v) if known else None):
        res = pt.switch((y < lo) | (y > hi), -np.inf, res)
    # lower == upper (e.g. a group with no records clamped to [0, n]): the release is that
    # value with probability 1
    if lower is not None and upper is not None:
        if lo_v is None or hi_v is None or np.any(lo_v == hi_v):
            res = pt.switch(pt.eq(lo, hi), pt.switch(pt.eq(y, lo), 0.0, -np.inf), res)
    return res


def _clamped_log_cdfs(value, lower, upper, log_cdfs_fn):
    y = _f64(value)
    if lower is None and upper is None:
        return log_cdfs_fn(y)
    lo = _f64(-np.inf if lower is None else lower)
    hi = _f64(np.inf if upper is None else upper)
    logcdf, logccdf = log_cdfs_fn(pt.clip(y, pt.maximum(lo, -_HUGE), pt.minimum(hi, _HUGE)))
    logcdf = pt.switch(y < lo, -np.inf, pt.switch(y >= hi, 0.0, logcdf))
    logccdf = pt.switch(y < lo, 0.0, pt.switch(y >= hi, -np.inf, logccdf))
    return logcdf, logccdf


def _noise_type(noise):
    """The noise kind (a subclass of :class:`pymc_dpnoise.noise.Noise`) of a spec or kind."""
    kind = noise if isinstance(noise, type) else type(noise)
    if not all(hasattr(kind, m) for m in ("count_logp", "count_log_cdfs", "log_density")):
        raise TypeError(
            "`noise` must be a noise spec or kind of pymc_dpnoise.noise (a subclass of Noise); "
            f"got {noise!r}"
        )
    return kind


def _noise_param(noise, param):
    if param is None:
        if isinstance(noise, type):
            raise TypeError(f"`param` is required with the noise kind {noise.__name__}")
        param = noise.param
    kind = _noise_type(noise)
    if getattr(kind, "sized_by_param", True):  # pm.Data: within what sized the sums
        param = data_bounded(_f64(param), kind.param_name)
    return param


def _count_logp(noise, fam, y, param):
    res = noise.count_logp(fam, y, param)
    return pt.switch(pt.eq(y, pt.round(y)), res, -np.inf) if noise.discrete else res


def _binomial_parts(n, p, param):
    n, p, param = _f64(n), _f64(p), _f64(param)
    deg0, deg1 = p <= 0.0, p >= 1.0
    deg = deg0 | deg1
    p_safe = pt.switch(deg, 0.5, p)
    fam = _Binomial(n, pt.log(p_safe) - pt.log1p(-p_safe), _static_max(n))
    shift = pt.switch(deg1, n, 0.0)
    return fam, deg, shift, param


def _degenerate_cdfs(noise, fam, y, param, deg, shift):
    lc, lcc = noise.count_log_cdfs(fam, y, param)
    pc, pcc = _noise_log_cdfs(noise, y - shift, param)
    return pt.switch(deg, pc, lc), pt.switch(deg, pcc, lcc)


def _release_logp(noise, parts, value, lower, upper):
    def logp_fn(y, parts=parts):
        fam, deg, shift, param = parts
        point = noise.log_density(y - shift, param)
        return pt.switch(deg, point, _count_logp(noise, fam, y, param))

    def log_cdfs_fn(y, parts=parts):
        fam, deg, shift, param = parts
        return _degenerate_cdfs(noise, fam, y, param, deg, shift)

    if lower is not None or upper is not None:
        res = _gathered_clamp(noise, parts, value, lower, upper, logp_fn, log_cdfs_fn)
        if res is not None:
            return res
    return _clamped(value, lower, upper, noise.discrete, logp_fn, log_cdfs_fn)


def _gathered_clamp(noise, parts, value, lower, upper, logp_fn, log_cdfs_fn):
    """The clamped likelihood of constant releases and bounds some of which sit on a bound:
    each release's pmf / pdf or clamp atom alone (the parameters gathered at the releases
    that need it), where :func:`_clamped` evaluates both for every release and selects.
    ``None`` where the data or a shape is not known when the graph is built."""
    y_v = static_value(_f64(value))
    lo_v = static_value(_f64(-np.inf if lower is None else lower))
    hi_v = static_value(_f64(np.inf if upper is None else upper))
    if y_v is None or lo_v is None or hi_v is None:
        return None
    fam, deg, shift, param = parts
    tensors = [*fam.params(), deg, shift, param]
    if any(d is None for t in tensors for d in t.type.shape):
        return None
    if not all(d == 1 for d in param.type.shape):
        # one noise parameter per release: the Gaussian kinds size their sums from its
        # value, which a gathered graph would hide from them (a pm.Data one included)
        return None
    shape = np.broadcast_shapes(
        np.shape(y_v), np.shape(lo_v), np.shape(hi_v), *(t.type.shape for t in tensors)
    )
    y_b, lo_b, hi_b = (np.broadcast_to(v, shape).ravel() for v in (y_v, lo_v, hi_v))
    same = lo_b == hi_b
    at_lo = (y_b == lo_b) & ~same
    at_hi = (y_b == hi_b) & ~same
    if not (at_lo.any() or at_hi.any()) or (at_lo | at_hi).all():
        return None  # nothing to gather (_clamped leaves out the branches no value takes)
    inside = (y_b > lo_b) & (y_b < hi_b)
    # a parameter of one element stays one (a scalar for every release), the others are
    # broadcast, raveled and gathered
    flat = [
        (t.reshape(()) if t.ndim else t)
        if all(d == 1 for d in t.type.shape)
        else pt.broadcast_to(t, shape).ravel()
        for t in tensors
    ]
    k = len(fam.params())

    def subset(idx):
        sub = [t if t.ndim == 0 else t[idx] for t in flat]
        return (fam.rebuild(*sub[:k]), *sub[k:])

    res = pt.as_tensor_variable(np.where(same & (y_b == lo_b), 0.0, -np.inf))
    step = 1.0 if noise.discrete else 0.0
    branches = (
        (inside, lambda y, pp: logp_fn(y, pp)),
        (at_lo, lambda y, pp: log_cdfs_fn(y, pp)[0]),
        (at_hi, lambda y, pp: log_cdfs_fn(y - step, pp)[1]),
    )
    for mask, fn in branches:
        idx = np.flatnonzero(mask)
        if idx.size:
            res = pt.set_subtensor(res[idx], fn(_f64(y_b[idx]), subset(idx)))
    return res.reshape(shape)


def _release_log_cdfs(noise, parts, value, lower, upper):
    fam, deg, shift, param = parts
    return _clamped_log_cdfs(
        value, lower, upper, lambda y: _degenerate_cdfs(noise, fam, y, param, deg, shift)
    )


def noisy_binomial_logp(value, n, p, noise, param=None, lower=None, upper=None):
    r"""Log pmf / pdf of :math:`\mathrm{clamp}(S + N, L, U)`, :math:`S \sim \mathrm{Bin}(n, p)`.

    ``noise`` is a noise spec of :mod:`pymc_dpnoise.noise` (its parameter is ``param`` when
    given, e.g. a tensor, else the spec's own) or a noise kind (a subclass of
    :class:`~pymc_dpnoise.noise.Noise`, with ``param``).  The Gaussian kinds need a parameter
    fixed when the graph is built (a constant, or a graph of constants); a random one raises
    :class:`SymbolicSigmaError`.  ``lower`` / ``upper`` (``None``: no clamp) are the release's
    clamp; where they are equal the release is that value with probability 1.  Exact; see the module docstring.
    """
    kind = _noise_type(noise)
    parts = _binomial_parts(n, p, _noise_param(noise, param))
    return _release_logp(kind, parts, value, lower, upper)


def noisy_binomial_log_cdfs(value, n, p, noise, param=None, lower=None, upper=None):
    """``(log F(z), log(1 - F(z)))`` of the release of :func:`noisy_binomial_logp`."""
    kind = _noise_type(noise)
    parts = _binomial_parts(n, p, _noise_param(noise, param))
    return _release_log_cdfs(kind, parts, value, lower, upper)


def _poisson_parts(mu, param):
    mu, param = _f64(mu), _f64(param)
    deg = mu <= 0.0
    fam = _Poisson(pt.log(pt.switch(deg, 1.0, mu)))
    return fam, deg, pt.zeros_like(mu), param


def noisy_poisson_logp(value, mu, noise, param=None, lower=None, upper=None):
    r"""Log pmf / pdf of :math:`\mathrm{clamp}(S + N, L, U)`, :math:`S \sim \mathrm{Poisson}(\mu)`.

    Arguments as :func:`noisy_binomial_logp`.
    """
    kind = _noise_type(noise)
    parts = _poisson_parts(mu, _noise_param(noise, param))
    return _release_logp(kind, parts, value, lower, upper)


def noisy_poisson_log_cdfs(value, mu, noise, param=None, lower=None, upper=None):
    """``(log F(z), log(1 - F(z)))`` of the release of :func:`noisy_poisson_logp`."""
    kind = _noise_type(noise)
    parts = _poisson_parts(mu, _noise_param(noise, param))
    return _release_log_cdfs(kind, parts, value, lower, upper)
