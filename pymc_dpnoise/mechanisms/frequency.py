"""Frequency oracles under local DP: unary encodings, k-ary randomized response, estimators.

Each person holds one item in ``{0, ..., k-1}`` and releases a privatised report:

* unary encodings (Wang et al. 2017): one-hot encode the item, then report every bit as 1 with
  probability ``keep_prob`` (the item's own bit) or ``flip_prob`` (every other bit).  OUE uses
  ``(1/2, 1/(1+e^ε))``, SUE / basic one-time RAPPOR ``(e^{ε/2}/(1+e^{ε/2}), 1/(1+e^{ε/2}))``;
* k-ary randomized response (direct encoding / generalised RR): report the item with
  probability ``e^ε/(e^ε+k-1)``, otherwise one of the other ``k-1`` items uniformly.

The aggregator's classical answer is the unbiased frequency estimate, which can be negative and
need not sum to one; :func:`project_simplex` (least squares, the post-processing the LDP paper
compares against; "Norm-Sub" in Wang et al. 2020) and :func:`clip_normalize` make it a
distribution.  The noise-aware alternative is :class:`pymc_dpnoise.OUELikelihood` and friends.

Every function takes a :class:`numpy.random.Generator` and broadcasts ``epsilon`` per report
(personalised budgets).  Simulation grade: see :mod:`pymc_dpnoise.mechanisms`.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_finite, check_positive
from .core import _rng, release_guard

__all__ = [
    "clip_normalize",
    "compress_reports",
    "krr_estimate",
    "krr_perturb",
    "krr_probabilities",
    "oue_estimate",
    "oue_perturb",
    "oue_probabilities",
    "project_simplex",
    "sue_perturb",
    "sue_probabilities",
    "unary_encoding_estimate",
    "unary_encoding_perturb",
]


def _sigmoid(x):
    x = np.asarray(x, dtype=float)
    return np.where(
        x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x)))
    )


def _check_k(k):
    if isinstance(k, bool) or not (isinstance(k, int | np.integer) and k >= 2):
        raise ValueError(f"`k` must be an integer >= 2; got {k!r}")


def _items(items, k, name="items"):
    _check_k(k)
    x = np.asarray(items)
    if x.dtype.kind == "f":  # checked as floats: a cast of NaN or 1e200 to int64 is undefined
        bad = ~np.isfinite(x) | (x != np.round(x)) | (x < 0) | (x >= k)
        if np.any(bad):
            raise ValueError(
                f"`{name}` must be integers in [0, {k}); got {x[bad].ravel()[:3]} at index "
                f"{np.argwhere(bad)[:3].tolist()}"
            )
        x = x.astype(np.int64)
    if x.dtype.kind not in "iu":
        raise ValueError(f"`{name}` must be integers in [0, k); got dtype {x.dtype}")
    if x.size and (x.min() < 0 or x.max() >= k):
        raise ValueError(f"`{name}` must be in [0, {k}); found values in [{x.min()}, {x.max()}]")
    return x


#: largest budget the frequency oracles accept (e^epsilon must stay finite; the likelihoods
#: have the same limit)
MAX_EPSILON = 700.0


def _epsilon(epsilon, shape):
    check_positive("epsilon", epsilon)
    eps = np.asarray(epsilon, dtype=float)
    if np.any(eps > MAX_EPSILON):
        raise ValueError(
            f"`epsilon` must be <= {MAX_EPSILON:g} for a frequency oracle (e^epsilon overflows "
            f"and the flip probabilities round to 0); got {eps[eps > MAX_EPSILON].ravel()[:3]}"
        )
    try:
        out = np.broadcast_shapes(eps.shape, shape)
    except ValueError:
        raise ValueError(
            f"`epsilon` with shape {eps.shape} does not broadcast against `items` {shape}"
        ) from None
    if out != tuple(shape):
        raise ValueError(f"`epsilon` with shape {eps.shape} would enlarge `items` {shape}")
    return eps


def _budget(epsilon):
    """``epsilon`` as a float array: finite and >= 0 (0 is the uniform, fully private report)."""
    eps = check_finite("epsilon", epsilon)
    if np.any(eps < 0):
        raise ValueError(f"`epsilon` must be >= 0; got {eps[eps < 0].ravel()[:3]}")
    return eps


def oue_probabilities(epsilon):
    """``(keep_prob, flip_prob)`` of optimal unary encoding: ``(1/2, 1/(1+e^ε))``."""
    eps = _budget(epsilon)
    return np.full(eps.shape, 0.5)[()], _sigmoid(-eps)[()]


def sue_probabilities(epsilon):
    """``(keep_prob, flip_prob)`` of symmetric unary encoding (basic one-time RAPPOR)."""
    eps = _budget(epsilon)
    return _sigmoid(eps / 2)[()], _sigmoid(-eps / 2)[()]


def krr_probabilities(epsilon, k):
    """``(keep_prob, other_prob)`` of k-ary randomized response."""
    _check_k(k)
    eps = _budget(epsilon)
    # other = e^-eps / (1 + (k-1) e^-eps): no 1 - keep, which rounds to 0 for a large epsilon
    t = np.exp(-eps)
    other = t / (1.0 + (k - 1) * t)
    return (1.0 / (1.0 + (k - 1) * t))[()], other[()]


@release_guard(
    records="items",
    privacy={"keep_prob": "probability", "flip_prob": "probability"},
    per_record=("keep_prob", "flip_prob"),
)
def unary_encoding_perturb(items, k, keep_prob, flip_prob, rng):
    """Unary encoding: one-hot encode each item, report each bit as 1 with ``keep_prob`` (own
    bit) or ``flip_prob`` (other bits).  Returns an ``int8`` array of shape ``items.shape + (k,)``.

    The mechanism is ``ln(keep (1-flip) / (flip (1-keep)))``-LDP.

    Examples
    --------
    >>> import numpy as np
    >>> unary_encoding_perturb([0, 2], 3, 1.0 - 1e-12, 1e-12, np.random.default_rng(0))
    array([[1, 0, 0],
           [0, 0, 1]], dtype=int8)
    """
    rng = _rng(rng)
    x = _items(items, k)
    for name, v in (("keep_prob", keep_prob), ("flip_prob", flip_prob)):
        check_finite(name, v)
        if np.any((np.asarray(v) <= 0) | (np.asarray(v) >= 1)):
            raise ValueError(f"`{name}` must be in (0, 1); got {v}")
    return _unary_encoding(x, k, 1.0 - np.asarray(keep_prob, dtype=float), flip_prob, rng)


def _unary_encoding(x, k, drop_prob, flip_prob, rng):
    """Own bit is 0 with ``drop_prob``, every other bit is 1 with ``flip_prob``."""
    rng = _rng(rng)
    d = np.asarray(drop_prob, dtype=float)[..., None]
    b = np.asarray(flip_prob, dtype=float)[..., None]
    onehot = x[..., None] == np.arange(k)
    u = rng.random(x.shape + (k,))
    return np.where(onehot, u >= d, u < b).astype(np.int8)


@release_guard(records="items", privacy={"epsilon": "epsilon"}, per_record=("epsilon",))
def oue_perturb(items, k, epsilon, rng):
    """Optimal unary encoding (Wang et al. 2017; LDP paper eq. 9).

    Parameters
    ----------
    items : array_like of int
        True items in ``[0, k)``, any shape.
    k : int
        Number of items.
    epsilon : float or array_like
        Budget per report (broadcast against ``items``), > 0.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int8, shape ``items.shape + (k,)``

    Examples
    --------
    >>> import numpy as np
    >>> z = oue_perturb([0, 1, 1, 2], 3, 1.0, np.random.default_rng(0))
    >>> z.shape, z.dtype
    ((4, 3), dtype('int8'))
    """
    x = _items(items, k)
    eps = _epsilon(epsilon, x.shape)
    _, b = oue_probabilities(eps)
    return _unary_encoding(x, k, np.full(eps.shape, 0.5), b, rng)


@release_guard(records="items", privacy={"epsilon": "epsilon"}, per_record=("epsilon",))
def sue_perturb(items, k, epsilon, rng):
    """Symmetric unary encoding (basic one-time RAPPOR): keep prob ``e^{ε/2}/(1+e^{ε/2})``."""
    x = _items(items, k)
    eps = _epsilon(epsilon, x.shape)
    # own bit dropped with probability 1/(1+e^{ε/2}), computed directly: 1 - keep_prob rounds
    # to 0 for large ε, and the release must keep its (tiny but positive) flip probability
    _, b = sue_probabilities(eps)
    return _unary_encoding(x, k, b, b, rng)


@release_guard(records="items", privacy={"epsilon": "epsilon"}, per_record=("epsilon",))
def krr_perturb(items, k, epsilon, rng):
    """k-ary randomized response (direct encoding); ``k = 2`` is binary randomized response.

    Returns integers in ``[0, k)`` of the shape of ``items``.

    Examples
    --------
    >>> import numpy as np
    >>> krr_perturb([0, 1, 2], 3, 60.0, np.random.default_rng(0))
    array([0, 1, 2])
    """
    rng = _rng(rng)
    x = _items(items, k)
    eps = _epsilon(epsilon, x.shape)
    keep, _ = krr_probabilities(eps, k)
    lie = rng.random(x.shape) >= keep
    other = rng.integers(0, k - 1, size=x.shape)
    other = other + (other >= x)  # uniform over the k-1 other items
    return np.where(lie, other, x).astype(np.int64)


def _check_bits(reports, k=None):
    z = np.asarray(reports)
    if z.ndim < 1:
        raise ValueError("`reports` must have at least one axis (the k bits of each report)")
    if k is not None and z.shape[-1] != k:
        raise ValueError(f"`reports` must have {k} bits per report; got {z.shape[-1]}")
    if not np.all((z == 0) | (z == 1)):
        raise ValueError("`reports` must contain only 0 and 1")
    return z


def unary_encoding_estimate(reports, keep_prob, flip_prob, axis=0):
    """Unbiased frequency estimate ``(mean_i z_ij - b_i) / (a_i - b_i)`` (averaged per report).

    With one budget for all reports this is Wang et al.'s estimator
    ``(mean z_j - b) / (a - b)``; with per-report probabilities it averages the per-report
    unbiased terms.  The result can be negative and need not sum to one.
    """
    z = _check_bits(reports).astype(float)
    a, b = check_finite("keep_prob", keep_prob), check_finite("flip_prob", flip_prob)
    for name, v in (("keep_prob", a), ("flip_prob", b)):
        if np.any((v < 0) | (v > 1)):
            raise ValueError(f"`{name}` must be in [0, 1]; got {v[(v < 0) | (v > 1)][:3]}")
    if np.any(a == b):
        raise ValueError("`keep_prob` must differ from `flip_prob` (the reports carry no signal)")
    if a.ndim:
        a = a[..., None]
    if b.ndim:
        b = b[..., None]
    return np.mean((z - b) / (a - b), axis=axis)


def oue_estimate(reports, epsilon, axis=0):
    """Unbiased OUE frequency estimate ``f_k = (mean z_k - q)/(1/2 - q)``, ``q = 1/(1+e^ε)``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> items = rng.choice(3, size=100_000, p=[0.7, 0.2, 0.1])
    >>> f = oue_estimate(oue_perturb(items, 3, 1.0, rng), 1.0)
    >>> bool(np.all(np.abs(f - [0.7, 0.2, 0.1]) < 0.03))  # sd ~ 0.006 per item here
    True
    """
    check_positive("epsilon", epsilon)
    a, b = oue_probabilities(epsilon)
    return unary_encoding_estimate(reports, a, b, axis=axis)


def krr_estimate(reports, k, epsilon):
    """Unbiased k-RR frequency estimate ``(count_j/N - q)/(p - q)`` (averaged per report)."""
    check_positive("epsilon", epsilon)
    y = _items(reports, k, "reports").ravel()
    keep, other = krr_probabilities(np.asarray(epsilon, dtype=float).ravel(), k)
    onehot = (y[:, None] == np.arange(k)).astype(float)
    keep = np.broadcast_to(keep, y.shape)[:, None]
    other = np.broadcast_to(other, y.shape)[:, None]
    return np.mean((onehot - other) / (keep - other), axis=0)


def project_simplex(v, axis=-1):
    """Euclidean (least-squares) projection onto the probability simplex.

    The closest point in L2 to ``v`` with non-negative entries summing to one (Duchi et al.
    2008, sort-based; Hay et al. 2010's least-squares consistency; "Norm-Sub" in Wang et al.
    2020).

    Examples
    --------
    >>> project_simplex([0.8, 0.5, -0.2])
    array([0.65, 0.35, 0.  ])
    """
    x = np.moveaxis(np.asarray(v, dtype=float), axis, -1)
    check_finite("v", x)
    # The projection does not change when a constant is added to every entry: shift the
    # largest entry to 0 (the sums below then lose nothing to a huge scale), and raise every
    # entry below -1 to -2 (it is below the threshold tau >= max - 1, so it projects to 0
    # either way, and the cumulative sums cannot overflow).
    with np.errstate(over="ignore"):
        x = np.maximum(x - np.max(x, axis=-1, keepdims=True), -2.0)
    k = x.shape[-1]
    u = -np.sort(-x, axis=-1)
    css = np.cumsum(u, axis=-1) - 1.0
    ind = np.arange(1, k + 1)
    cond = u - css / ind > 0
    rho = k - np.argmax(cond[..., ::-1], axis=-1)  # last index where cond holds (1-based)
    tau = np.take_along_axis(css, (rho - 1)[..., None], axis=-1) / rho[..., None]
    return np.moveaxis(np.maximum(x - tau, 0.0), -1, axis)


def clip_normalize(v, axis=-1):
    """Clip negative estimates to zero and rescale to sum to one ("Norm-Mul", Wang et al. 2020).

    If every entry is <= 0 the result is uniform.  NaN or inf is refused (``ValueError``
    naming ``v``); the entries are scaled by a power of two near their maximum before they
    are summed, so huge estimates do not overflow the sum.

    Examples
    --------
    >>> clip_normalize([0.6, -0.1, 0.2])
    array([0.75, 0.  , 0.25])
    """
    x = np.maximum(check_finite("v", v), 0.0)
    if x.ndim == 0:
        raise ValueError("`v` must have at least one axis (the k estimates)")
    _, e = np.frexp(np.max(x, axis=axis, keepdims=True))
    x = np.ldexp(x, -e)  # exact (a power of two): the sum below cannot overflow
    s = x.sum(axis=axis, keepdims=True)
    k = x.shape[axis]
    return np.where(s > 0, x / np.where(s > 0, s, 1.0), 1.0 / k)


def compress_reports(reports, *, axis=0):
    """Group identical reports: ``(patterns, counts)`` with ``counts.sum() == N``.

    For bit-vector reports ``(N, k)`` the patterns are the distinct rows; for k-RR reports
    ``(N,)`` the distinct items.  Pass them as ``observed=patterns, counts=counts`` to the
    noise-aware likelihoods: the log-likelihood is the same, the work is per pattern.

    Examples
    --------
    >>> patterns, counts = compress_reports([[1, 0], [0, 1], [1, 0]])
    >>> patterns.tolist(), counts.tolist()
    ([[0, 1], [1, 0]], [1, 2])
    """
    z = np.asarray(reports)
    if z.dtype.kind not in "biuf":
        raise TypeError(f"`reports` must be numeric; got dtype {z.dtype}")
    if z.dtype.kind == "f":
        check_finite("reports", z)
    if z.ndim == 1:
        patterns, counts = np.unique(z, return_counts=True)
    elif z.ndim == 2 and axis in (0, -2) and z.size and np.all((z == 0) | (z == 1)):
        # bit vectors: pack each row into bytes and find the distinct byte strings (one
        # fixed-width key per row: O(N k / 8) memory, far faster than a row-wise unique)
        k = z.shape[1]
        packed = np.packbits(z.astype(np.uint8, copy=False), axis=1)
        keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
        uniq, counts = np.unique(keys, return_counts=True)
        rows = np.frombuffer(uniq.tobytes(), dtype=np.uint8).reshape(len(uniq), -1)
        patterns = np.unpackbits(rows, axis=1, count=k).astype(z.dtype, copy=False)
    else:
        patterns, counts = np.unique(z, axis=axis, return_counts=True)
    return patterns, counts
