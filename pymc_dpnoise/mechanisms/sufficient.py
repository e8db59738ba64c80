r"""Release of noisy sums of (approximate) sufficient statistics of GLMs (NumPy, simulation grade).

* :func:`sufficient_statistics` — per-record statistics in the layouts of
  :mod:`pymc_dpnoise.math.sufficient` (``"linear"``: [t2(x), y·x, y²]; ``"logistic"``:
  [y·x, t2(x)] with y ∈ {−1, 1}; ``"poisson"``: [x, t2(x), y·x, y·t2(x)]).
* Sensitivity bounds: LDP paper Lemma 3.1 / Cor. 3.1 (linear), GLM paper Lemma 3.3 / Cor. 3.4
  (logistic), Lemma 3.5 / Cor. 3.6 (Poisson) and the general order-m bound (GLM paper Sec. 3.3.1).
* :func:`release_sufficient_statistics` — clip, compute, sum, add analytic-Gaussian noise
  (centrally, or per record for local DP) and return what :class:`SSNormalApprox` needs.

Neighbouring data sets differ by *replacing* one record (GLM paper Def. 2.1), so ``n`` is public.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from scipy import optimize

from ..math.sufficient import GLMS, stat_dim, t2_indices
from ..validation import check_finite, check_positive
from .core import _rng, analytic_gaussian_sigma, as_matrix, clip_rows, release_guard

__all__ = [
    "SSRelease",
    "clip_rows",
    "linear_ss_sensitivity",
    "logistic_ss_sensitivity",
    "poisson_ss_sensitivity",
    "polynomial_ss_sensitivity",
    "release_sufficient_statistics",
    "ss_sensitivity",
    "sufficient_statistics",
    "t2",
]


def _check_glm(glm):
    if glm not in GLMS:
        raise ValueError(f"`glm` must be one of {GLMS}; got {glm!r}")


def t2(X):
    r"""Second-order statistics :math:`t_2(x)` of each row (squares, then √2·cross terms).

    Examples
    --------
    >>> t2([[1.0, 2.0]]).round(4).tolist()
    [[1.0, 4.0, 2.8284]]
    """
    X = as_matrix("X", X)
    i, j, w = t2_indices(X.shape[1])
    with np.errstate(over="ignore"):
        out = X[:, i] * X[:, j] * w
    return _finite_statistics(out, "`X`")


def _finite_statistics(out, names):
    """``out``, or a ValueError naming ``names`` if a product of the records overflowed."""
    if not np.all(np.isfinite(out)):
        rows = np.unique(np.argwhere(~np.isfinite(out))[:, 0])[:3].tolist()
        raise ValueError(
            f"the statistics of {names} overflow float64 (rows {rows}): a product of two "
            "values beyond ~1e154; clip the rows first (clip_rows)"
        )
    return out


def sufficient_statistics(X, y, glm: str):
    """Per-record statistics ``t(x_i, y_i)``, shape ``(n, m)``, in the layout of ``glm``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Responses: real (linear), in {-1, 1} (logistic), non-negative counts (Poisson).
    glm : {"linear", "logistic", "poisson"}

    Examples
    --------
    >>> sufficient_statistics([[1.0, 2.0]], [-1.0], "logistic").round(3).tolist()
    [[-1.0, -2.0, 1.0, 4.0, 2.828]]
    """
    _check_glm(glm)
    X = as_matrix("X", X)
    y = np.asarray(y, dtype=float)
    if y.shape != (X.shape[0],):
        raise ValueError(f"`y` must have shape ({X.shape[0]},) to match `X`; got {y.shape}")
    check_finite("y", y)
    q = t2(X)
    if glm == "logistic" and not np.all(np.abs(y) == 1):
        raise ValueError("`y` must be in {-1, 1} for glm='logistic' (map 0/1 labels by 2y-1)")
    if glm == "poisson" and np.any(y < 0):
        raise ValueError("`y` must be >= 0 for glm='poisson'")
    with np.errstate(over="ignore"):
        if glm == "linear":
            out = np.hstack([q, y[:, None] * X, (y * y)[:, None]])
        elif glm == "logistic":
            out = np.hstack([y[:, None] * X, q])
        else:
            out = np.hstack([X, q, y[:, None] * X, y[:, None] * q])
    return _finite_statistics(out, "`X` and `y`")


# --------------------------------------------------------------------------------------------
# Sensitivities (all for ||x||_2 <= R, replace-one neighbours)
# --------------------------------------------------------------------------------------------

_SQRT2 = math.sqrt(2.0)
#: largest polynomial order of :func:`polynomial_ss_sensitivity` (the statistics of an order-m
#: polynomial in d covariates number C(d + m, m); far beyond any model long before this)
_MAX_ORDER = 1000


def _positive(**params) -> dict:
    """Each parameter checked (finite and > 0, error naming it) and as a float64 scalar."""
    for k, v in params.items():
        check_positive(k, v)
    return {k: np.float64(v) for k, v in params.items()}


def _finite_sensitivity(value, args) -> float:
    """``value`` as a float, or a ValueError naming ``args`` if it overflowed float64."""
    if not np.isfinite(value):
        names = ", ".join(f"`{k}`" for k in args)
        raise ValueError(
            f"the sensitivity for these {names} does not fit in float64: use smaller bounds "
            "or less unequal noise scales"
        )
    return float(value)


def linear_ss_sensitivity(R=1.0, Ry=1.0, sigma1=1.0, sigma2=1.0, sigma3=1.0):
    r"""L2 sensitivity bound for linear regression statistics [t2(x), y x, y²] (LDP Lemma 3.1).

    With noise :math:`\sigma_1, \sigma_2, \sigma_3` on the three blocks, the mechanism is as private
    as a Gaussian mechanism with noise :math:`\sigma_1` and sensitivity

    .. math::

        \Delta = \sqrt{\frac{\sigma_1^4 R_y^4}{2\sigma_2^4} + 2R^4
                       + \frac{2\sigma_1^2 R_y^2 R^2}{\sigma_2^2} + \frac{\sigma_1^2 R_y^4}{\sigma_3^2}}.

    An upper bound (not tight: the last term's worst case, :math:`y' = 0`, differs from the
    others', :math:`|y| = |y'| = R_y`). Cor. 3.1: R = 1, equal σ: :math:`\sqrt{3R_y^4/2 + 2R_y^2 + 2}`.

    Examples
    --------
    >>> round(linear_ss_sensitivity(1.0, 1.0), 6) == round((1.5 + 2 + 2) ** 0.5, 6)
    True
    """
    args = _positive(R=R, Ry=Ry, sigma1=sigma1, sigma2=sigma2, sigma3=sigma3)
    R, Ry, s1, s2, s3 = args.values()
    with np.errstate(over="ignore"):
        r1, r2 = s1 / s2, s1 / s3
        # the square root of a sum of squares, as a hypot of its terms (no overflow of squares)
        terms = [r1 * Ry * (r1 * Ry) / _SQRT2, _SQRT2 * R * R, _SQRT2 * r1 * Ry * R, r2 * Ry * Ry]
        return _finite_sensitivity(functools.reduce(np.hypot, terms), args)


def logistic_ss_sensitivity(R=1.0, sigma1=1.0, sigma2=1.0):
    r"""L2 sensitivity for logistic statistics [y x, t2(x)], y ∈ {−1, 1} (GLM Lemma 3.3).

    .. math:: \Delta = \sqrt{\frac{\sigma_2^2}{2\sigma_1^2} + 2R^2 + 2\frac{\sigma_1^2}{\sigma_2^2}R^4},

    relative to noise :math:`\sigma_1`.  Tight when the maximiser
    :math:`\langle x, x'\rangle = \mp\sigma_2^2/(2\sigma_1^2)` lies in :math:`[-R^2, R^2]` (e.g. R = 1,
    equal σ: :math:`\sqrt{4.5}`, Cor. 3.4); an upper bound otherwise.

    Examples
    --------
    >>> round(logistic_ss_sensitivity() ** 2, 12)
    4.5
    """
    args = _positive(R=R, sigma1=sigma1, sigma2=sigma2)
    R, s1, s2 = args.values()
    with np.errstate(over="ignore", under="ignore"):
        r = s1 / s2  # sqrt(c)
        terms = [1.0 / (_SQRT2 * r), _SQRT2 * R, _SQRT2 * r * R * R]
        return _finite_sensitivity(functools.reduce(np.hypot, terms), args)


def poisson_ss_sensitivity(R=1.0, Ry=1.0, sigma1=1.0, sigma2=1.0, sigma3=1.0, sigma4=1.0):
    r"""L2 sensitivity for Poisson statistics [x, t2(x), y x, y t2(x)], 0 ≤ y ≤ Ry (GLM Lemma 3.5).

    .. math:: \Delta = \frac{2(c_2 + c_4)R^2 + c_3 + 1}{\sqrt{2(c_2 + c_4)}},\quad
        c_2 = \frac{\sigma_1^2}{\sigma_2^2},\ c_3 = \frac{\sigma_1^2}{\sigma_3^2}R_y^2,\
        c_4 = \frac{\sigma_1^2}{\sigma_4^2}R_y^2,

    relative to noise :math:`\sigma_1`. Cor. 3.6 (R = 1, equal σ): :math:`\sqrt{4.5(1 + R_y^2)}`.

    Examples
    --------
    >>> round(poisson_ss_sensitivity(1.0, 2.0) ** 2, 10)
    22.5
    """
    args = _positive(R=R, Ry=Ry, sigma1=sigma1, sigma2=sigma2, sigma3=sigma3, sigma4=sigma4)
    R, Ry, s1, s2, s3, s4 = args.values()
    with np.errstate(over="ignore", under="ignore"):
        q = np.hypot(s1 / s2, s1 / s4 * Ry)  # sqrt(c2 + c4)
        h = np.hypot(s1 / s3 * Ry, 1.0)  # sqrt(c3 + 1)
        # (2 q^2 R^2 + h^2) / (sqrt(2) q), term by term (no square of a large number)
        return _finite_sensitivity(_SQRT2 * q * R * R + h / (_SQRT2 * q) * h, args)


def polynomial_ss_sensitivity(order: int, R=1.0):
    r"""L2 sensitivity of :math:`[t_1(x), \dots, t_m(x)]` (multinomial-weighted monomials), equal noise.

    GLM paper Sec. 3.3.1: :math:`\Delta^2 = \max_{t \in [-R^2, R^2]} \sum_{i=1}^m (2R^{2i} - 2t^i)`,
    :math:`t = \langle x, x'\rangle`; the polynomial is minimised numerically (bounded scalar
    minimisation on the interval, then the endpoints are compared).

    Examples
    --------
    >>> round(polynomial_ss_sensitivity(6) ** 2, 3)  # the paper's "≈ 12.72" (truncated)
    12.73
    """
    if (
        isinstance(order, bool)
        or not isinstance(order, int | np.integer | float | np.floating)
        or not np.isfinite(order)
        or int(order) != order
        or not 1 <= order <= _MAX_ORDER
    ):
        raise ValueError(f"`order` must be an int in [1, {_MAX_ORDER}]; got {order!r}")
    check_positive("R", R)
    order = int(order)
    # Delta^2 <= 4 * order * R^(2 order): refuse before the polynomial overflows
    if 2 * order * math.log(float(R)) + math.log(4 * order) >= math.log(np.finfo(float).max):
        raise ValueError(
            f"the order-{order} sensitivity for `R` = {R!r} (about R**{order}) does not fit in "
            "float64: use a smaller `R` or `order`"
        )
    r2 = float(R) ** 2

    def poly(t):
        return sum(t**i for i in range(1, order + 1))

    res = optimize.minimize_scalar(
        poly, bounds=(-r2, r2), method="bounded", options={"xatol": 1e-12}
    )
    tmin = min([res.x, -r2, r2], key=poly)
    return float(np.sqrt(sum(2 * r2**i for i in range(1, order + 1)) - 2 * poly(tmin)))


def ss_sensitivity(glm: str, R=1.0, Ry=1.0):
    """Sensitivity for ``glm`` with equal noise on every block (the lemmas with σ1 = σ2 = …)."""
    _check_glm(glm)
    if glm == "linear":
        return linear_ss_sensitivity(R, Ry)
    if glm == "logistic":
        return logistic_ss_sensitivity(R)
    return poisson_ss_sensitivity(R, Ry)


# --------------------------------------------------------------------------------------------
# Release
# --------------------------------------------------------------------------------------------


class SSRelease(NamedTuple):
    """Output of :func:`release_sufficient_statistics`."""

    #: the noisy sum of statistics, shape (m,)
    z: np.ndarray
    #: covariance of the total noise in ``z``, shape (m, m): σ²I (central) or nσ²I (local)
    noise_cov: np.ndarray
    #: number of records (public under replace-one neighbours)
    n: int
    #: Gaussian noise scale of one release (central: on the sum; local: on each record)
    sigma: float
    #: L2 sensitivity used
    sensitivity: float


@release_guard(
    records=None,
    privacy={"epsilon": "epsilon", "delta": "delta", "R": "positive", "Ry": "positive"},
    scalar=("epsilon", "delta", "R", "Ry"),
    output=lambda rel: rel.z,
)
def release_sufficient_statistics(
    X, y, glm: str, epsilon, delta, rng, *, R=1.0, Ry=1.0, local: bool = False
) -> SSRelease:
    r"""Clip, compute the statistics, sum and add analytic-Gaussian noise: (ε, δ)-DP.

    Rows of ``X`` are scaled to L2 norm at most ``R``; ``y`` is clipped to ``[-Ry, Ry]`` (linear)
    or ``[0, Ry]`` (Poisson); logistic labels must be ±1.  The noise scale is
    :func:`~pymc_dpnoise.mechanisms.analytic_gaussian_sigma` (ε, δ, Δ) with Δ from
    :func:`ss_sensitivity` (equal noise on every block).

    * ``local=False`` (central DP, GLM paper): :math:`z = \sum_i t_i + N(0, \sigma^2 I)`;
      ``noise_cov`` = σ²I.
    * ``local=True`` (LDP paper Sec. 3.1): every record releases :math:`t_i + N(0, \sigma^2 I)`
      (each report is (ε, δ)-DP on its own); the aggregator sums them, so
      ``noise_cov`` = nσ²I.

    The moments in :func:`~pymc_dpnoise.math.sufficient.ss_moments` assume unclipped Gaussian
    inputs and unclipped responses: choose ``R`` and ``Ry`` so that clipping is rare, or accept the
    (usually small) misspecification.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(0, 0.3, size=(100, 2)); y = np.where(rng.random(100) < 0.5, 1.0, -1.0)
    >>> rel = release_sufficient_statistics(X, y, "logistic", 1.0, 1e-5, rng)
    >>> rel.z.shape, rel.noise_cov.shape, round(rel.sensitivity ** 2, 6)
    ((5,), (5, 5), 4.5)
    """
    _check_glm(glm)
    rng = _rng(rng)
    X = clip_rows(X, R)
    y = np.asarray(y, dtype=float)
    check_finite("y", y)  # before clipping: clipping would turn inf into Ry
    check_positive("Ry", Ry)
    if glm == "linear":
        y = np.clip(y, -Ry, Ry)
    elif glm == "poisson":
        y = np.clip(y, 0.0, Ry)
    t = sufficient_statistics(X, y, glm)
    n, m = t.shape
    sens = ss_sensitivity(glm, R, Ry)
    sigma = float(analytic_gaussian_sigma(epsilon, delta, sens))
    if local:
        z = np.sum(t + rng.normal(0.0, sigma, size=t.shape), axis=0)
        var = n * sigma**2
    else:
        z = t.sum(axis=0) + rng.normal(0.0, sigma, size=m)
        var = sigma**2
    assert m == stat_dim(glm, X.shape[1])
    return SSRelease(z, var * np.eye(m), n, sigma, sens)
