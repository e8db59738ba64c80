r"""Noisy truncated sums of :math:`(x, x^2)` for Gaussian records (Bernstein & Sheldon, Sec. 3.3).

The sufficient statistic :math:`t(x) = (x, x^2)` of a normal with unknown mean and variance is
unbounded.  As for the one-dimensional truncated families
(:func:`~pymc_dpnoise.mechanisms.release_truncated_sum`), the data holder declares bounds
``[lower, upper]`` *before* seeing the data, **drops** every record outside them (truncation,
the paper's :math:`\hat t(x) = \mathbf 1_{[a,b]}(x)\, t(x)`; records are not clipped to the
bounds), and releases both sums with independent Laplace noise of scale
``sensitivity / epsilon``.  Model the release with
:func:`~pymc_dpnoise.LaplaceNoisyTruncatedNormal`.  Simulation grade (see
:mod:`pymc_dpnoise.mechanisms`).
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from ..validation import check_finite
from .core import as_float
from .counts import _epsilon, _n_records
from .expfam import _bound, _truncated_release_guard, _TruncatedRelease

__all__ = [
    "TruncatedNormalSumRelease",
    "release_truncated_normal_sum",
    "truncated_normal_sum_sensitivity",
]


def _sensitivity(lower, upper, xp):
    """Max over pairs of the five candidate points (see the public function); ``xp`` is
    ``numpy`` or ``pytensor.tensor`` (both have ``abs``, ``maximum``, ``clip``)."""
    pts = [lower, upper, xp.clip(-0.5, lower, upper), xp.clip(0.5, lower, upper)]
    best = None
    for i, x in enumerate(pts):
        # against a dropped record, t = (0, 0)
        cands = [xp.abs(x) + x * x]
        for y in pts[i + 1 :]:
            cands.append(xp.abs(x - y) * (1.0 + xp.abs(x + y)))
        for c in cands:
            best = c if best is None else xp.maximum(best, c)
    return best


def truncated_normal_sum_sensitivity(lower, upper):
    r"""Exact L1 sensitivity of :math:`\hat s = \sum_i \mathbf 1[a \le x_i \le b]\,(x_i, x_i^2)`.

    Changing one record changes :math:`\hat s` by :math:`\hat t(x') - \hat t(x)`, with
    :math:`\hat t(x) = (x, x^2)` inside :math:`[a, b]` and :math:`(0, 0)` outside (a dropped
    record).  So :math:`\Delta` is the L1 diameter of
    :math:`T = \{(x, x^2) : x \in [a, b]\} \cup \{(0, 0)\}`:

    * a kept record against a dropped one: :math:`\max_{[a,b]} (|x| + x^2) = M + M^2`,
      :math:`M = \max(|a|, |b|)`;
    * two kept records: :math:`f(x, y) = |x - y| + |x^2 - y^2| = |x - y|\,(1 + |x + y|)`.  With
      :math:`u = x - y`, :math:`v = x + y`, :math:`f = |u|(1 + |v|)` grows with :math:`|u|` at
      fixed :math:`v`, so the maximum has one point at an end, :math:`a` or :math:`b`.  Then
      :math:`g(y) = f(a, y) = (y - a)(1 + |y + a|)` is convex where :math:`y + a \ge 0` and
      the concave parabola :math:`(y - a)(1 - y - a)` elsewhere, with its vertex at
      :math:`y = 1/2`; likewise :math:`f(x, b)` has its only interior vertex at
      :math:`x = -1/2`.  The maximum is therefore at a pair from
      :math:`\{a, b\} \cup (\{-\tfrac12, \tfrac12\} \cap [a, b])`.

    Hence :math:`\Delta = \max f` over pairs of the candidates
    :math:`\{a,\ b,\ \operatorname{clip}(\pm\tfrac12, a, b)\}` and the dropped record.  For
    example :math:`[a, b] = [-5, 5]`: :math:`f(-\tfrac12, 5) = 5.5^2 = 30.25`, above
    :math:`M + M^2 = 30` and :math:`f(-5, 5) = 10`.  The paper's bound (Sec. 3.3, App. C),
    :math:`\sum_j \max(\max_{[a,b]}|t_j|, \max_{x,y}|t_j(x) - t_j(y)|) = \max(M, b - a) + M^2`
    (35 for :math:`[-5, 5]`), bounds each coordinate separately and is never smaller; pass it
    as ``sensitivity=`` to reproduce the paper.  A brute-force grid search checks this
    function in ``tests/distributions/test_expfam_normal.py``.  Works on numbers, arrays and PyTensor
    tensors.
    """
    pt = sys.modules.get("pytensor.tensor")  # a tensor implies PyTensor is imported already
    if pt is not None and (isinstance(lower, pt.Variable) or isinstance(upper, pt.Variable)):
        return _sensitivity(pt.as_tensor_variable(lower), pt.as_tensor_variable(upper), pt)
    lo, hi = check_finite("lower", lower), check_finite("upper", upper)
    with np.errstate(over="ignore"):
        out = _sensitivity(lo, hi, np)
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"the sensitivity of [`lower`, `upper`] = [{lower!r}, {upper!r}] (about "
            "max(|lower|, |upper|)**2) does not fit in float64: declare smaller bounds"
        )
    return out


@dataclasses.dataclass(frozen=True)
class TruncatedNormalSumRelease(_TruncatedRelease):
    """The noisy truncated sums of ``(x, x**2)`` and what the likelihood needs.

    Attributes
    ----------
    value : numpy.ndarray
        Shape ``(*groups, 2)``: ``[sum x, sum x**2]`` over the records inside
        ``[lower, upper]``, each plus independent Laplace(0, ``scale``) noise.
    n : numpy.ndarray
        Number of records behind each release (before truncation), shape ``groups``.
    lower, upper : float
        The declared truncation bounds.
    epsilon, sensitivity, scale : float
        Budget of the pair, L1 sensitivity of the pair and the Laplace scale
        ``sensitivity / epsilon`` of each coordinate.
    """


def _normal_sum_scale(a):
    lo, hi, eps = as_float(a["lower"]), as_float(a["upper"]), as_float(a["epsilon"])
    sens = a["sensitivity"]
    if lo is None or hi is None or eps is None or (sens is not None and as_float(sens) is None):
        return None
    sens = truncated_normal_sum_sensitivity(lo, hi) if sens is None else as_float(sens)
    return sens / eps


def _normal_sum_magnitude(a):
    m = max(abs(as_float(a["lower"])), abs(as_float(a["upper"])))
    return _n_records("x")(a) * max(m, m * m)


@_truncated_release_guard(_normal_sum_scale, _normal_sum_magnitude)
def release_truncated_normal_sum(x, lower, upper, epsilon, rng, *, sensitivity=None):
    """Release the noisy sums of ``x`` and ``x**2`` over the records inside declared bounds.

    Parameters
    ----------
    x : array_like
        Real-valued records along the last axis; leading axes are groups, each released
        separately (one pair per group).
    lower, upper : float
        Declared truncation bounds, ``lower < upper`` (any sign).  They must be fixed *before*
        looking at the data (domain knowledge, or a separate private quantile release);
        bounds computed from ``x`` are not private.  Records outside are dropped.
    epsilon : float
        Privacy budget of the pair, > 0 (the L1 sensitivity covers both coordinates).
    rng : numpy.random.Generator
    sensitivity : float, optional
        L1 sensitivity of the pair; default the exact value
        :func:`truncated_normal_sum_sensitivity` ``(lower, upper)``.  A larger value (e.g.
        the paper's bound ``max(M, upper - lower) + M**2``, ``M = max(|lower|, |upper|)``) is
        accepted; a smaller one is refused (it would not be private).

    Returns
    -------
    TruncatedNormalSumRelease

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_dpnoise.mechanisms import release_truncated_normal_sum
    >>> rng = np.random.default_rng(0)
    >>> rel = release_truncated_normal_sum(rng.normal(1.0, 2.0, 500), -5.0, 5.0, 1.0, rng)
    >>> rel.value.shape, rel.sensitivity
    ((2,), 30.25)
    """
    eps = _epsilon(epsilon)
    lo, hi = _bound("lower", lower, nonnegative=False), _bound("upper", upper, nonnegative=False)
    if not hi > lo:
        raise ValueError(f"`lower` must be < `upper`; got lower={lo}, upper={hi}")
    exact = float(truncated_normal_sum_sensitivity(lo, hi))
    if sensitivity is None:
        sens = exact
    else:
        try:
            sens = float(sensitivity)
        except (TypeError, ValueError):
            raise TypeError(f"`sensitivity` must be a number; got {sensitivity!r}") from None
        if not np.isfinite(sens) or sens < exact * (1 - 1e-12):
            raise ValueError(
                f"`sensitivity` must be finite and >= the exact sensitivity {exact!r} of "
                f"[{lo}, {hi}]; got {sensitivity!r}"
            )
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"`rng` must be a numpy.random.Generator; got {type(rng).__name__}")
    x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("`x` must hold records along its last axis; got a scalar")
    if not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise TypeError(f"`x` must be real numbers; got dtype {x.dtype}")
    x = x.astype(float)
    if not np.all(np.isfinite(x)):
        bad = ~np.isfinite(x)
        raise ValueError(
            f"`x` contains {int(bad.sum())} NaN or inf, first at index "
            f"{np.argwhere(bad)[:3].tolist()}"
        )
    kept = np.where((x >= lo) & (x <= hi), x, 0.0)
    stats = np.stack([kept.sum(axis=-1), (kept * kept).sum(axis=-1)], axis=-1)
    n = np.full(stats.shape[:-1], x.shape[-1])
    scale = sens / eps
    value = stats + rng.laplace(0.0, scale, size=stats.shape)
    if not np.all(np.isfinite(value)):
        raise ValueError("the release is not finite (sensitivity / epsilon overflows)")
    return TruncatedNormalSumRelease(value, n, lo, hi, eps, sens, scale)
