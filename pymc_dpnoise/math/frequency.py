r"""Frequency oracles: unary encodings (OUE, SUE/RAPPOR, general) and k-ary randomized response.

Each person holds one item :math:`x \in \{0, \dots, k-1\}` drawn from :math:`\theta` on the
simplex.  The likelihood of one privatised report marginalises the item (LDP paper,
Supplement 11, eq. 31-33, generalised to any keep/flip pair):

**Unary encoding** with :math:`a = P(z_j = 1 \mid e_j = 1)` and :math:`b = P(z_j = 1 \mid e_j = 0)`
(OUE: :math:`a = 1/2`, :math:`b = 1/(1+e^\epsilon)`; SUE / basic RAPPOR:
:math:`a = e^{\epsilon/2}/(1+e^{\epsilon/2})`, :math:`b = 1 - a`).  For a report
:math:`z \in \{0,1\}^k` with :math:`m = |z|` ones,

.. math::

    p(z \mid \theta) = \sum_k \theta_k \prod_j P(z_j \mid e_j = [j = k])
      = b^m (1-b)^{k-m} \frac{1-a}{1-b} \bigl(1 + (e^{\ell} - 1)\, \theta^\top z\bigr),
    \qquad \ell = \operatorname{logit} a - \operatorname{logit} b,

using :math:`\sum_k \theta_k = 1`.  For OUE :math:`\ell = \epsilon` and this is REFERENCE §2.3 /
eq. 33.  :math:`\theta` enters only through :math:`t = \theta^\top z`.

**k-ary randomized response** (direct encoding; k = 2 is binary randomized response): the true
item is reported with probability :math:`e^\epsilon/(e^\epsilon + k - 1)`, any other item with
:math:`1/(e^\epsilon + k - 1)`, so

.. math::

    p(y \mid \theta) = \frac{1 + (e^\epsilon - 1)\,\theta_y}{e^\epsilon + k - 1}.

Computing :math:`t = \theta^\top z` for :math:`N` bit vectors costs :math:`N k` multiply-adds
done naively.  :func:`bits_dot` instead packs each report into bytes once (constant-folded for
observed data) and reads :math:`t` from per-byte lookup tables of partial sums of
:math:`\theta`: :math:`\lceil k/8 \rceil` gathers per report, and the gradient is a scatter-add
into a table of :math:`256 \lceil k/8 \rceil` entries.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from ._op_support import gathered

__all__ = [
    "bits_dot",
    "krr_logp",
    "log1p_expm1_times",
    "oue_logp",
    "sue_logp",
    "unary_encoding_logp",
]

_LOG2 = np.float64(
    np.log(2.0)
)  # np.float64: a Python float becomes a float32 constant under floatX="float32"
#: row v holds the 8 bits of byte v, least significant first
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype("float64")


def _f64(x):
    x = pt.as_tensor_variable(x)
    return x if x.dtype == "float64" else pt.cast(x, "float64")


def log1p_expm1_times(ell, t):
    r""":math:`\log(1 + (e^{\ell} - 1)\,t) = \log\bigl((1 - t) + t\,e^{\ell}\bigr)` for
    :math:`t \in [0, 1]` and any finite :math:`\ell`.

    Three forms, each used where it loses nothing:

    * :math:`\log(1 + (e^\ell - 1)t)` with ``log1p`` and ``expm1`` when the result is at least
      :math:`\log(1/2)` and :math:`\ell \le 700` (full relative precision for tiny
      :math:`\ell` and tiny :math:`t`);
    * for :math:`\ell \le 0` and a result below :math:`\log(1/2)` (so :math:`t > 1/2` and
      :math:`1 - t` is exact), :math:`\operatorname{logaddexp}(\log(1 - t), \log t + \ell)`:
      no cancellation, and no underflow of :math:`e^\ell` (an inverted encoding with
      ``keep_prob = 1e-17`` gave :math:`\log(1 - t)` of a rounded 1, i.e. -inf, at
      :math:`t = 1`; the exact value is :math:`\ell`);
    * for :math:`\ell > 700` (where :math:`e^\ell` overflows),
      :math:`\ell + f(-\ell, 1 - t)` by the symmetry
      :math:`f(\ell, t) = \ell + f(-\ell, 1 - t)`.

    Every branch is fed safe arguments, so the gradient is finite wherever the value is.
    """
    ell, t = _f64(ell), _f64(t)
    big = pt.gt(ell, _DIRECT_MAX)
    # ell > 700: lam = -ell, u = 1 - t (t near 0 there costs at most an absolute 1e-16)
    lam = pt.switch(big, -ell, ell)
    u = pt.switch(big, 1.0 - t, t)
    return pt.switch(big, ell, 0.0) + _log_mix(lam, u)


#: largest ell for which e^ell is formed (expm1 overflows past 709.78)
_DIRECT_MAX = np.float64(700.0)


def _log_mix(lam, t):
    """log((1 - t) + t e^lam) for lam <= 700 and t in [0, 1] (see log1p_expm1_times)."""
    lam_direct = pt.minimum(lam, _DIRECT_MAX)
    x = pt.expm1(lam_direct) * t
    direct = pt.ge(x, -0.5)  # result >= log(1/2): log1p loses nothing
    safe_x = pt.switch(direct, x, 0.0)
    # tail: lam < 0 and t > 1/2; 1 - t is exact there (Sterbenz)
    r = 1.0 - t
    has_r = pt.gt(r, 0.0) & ~direct
    safe_t = pt.switch(direct, 1.0, t)
    log_u = pt.log(safe_t) + pt.switch(direct, 0.0, lam)
    tail = pt.switch(has_r, pt.logaddexp(pt.log(pt.switch(has_r, r, 1.0)), log_u), log_u)
    return pt.switch(direct, pt.log1p(safe_x), tail)


def _static_len(x, axis=-1):
    n = x.type.shape[axis]
    return None if n is None else int(n)


def _batched_take(table, index, n_trailing=0):
    """``table[..., index]`` with the batch axes of ``table`` broadcast against ``index``.

    ``table`` has shape ``B_t + (m,)``; ``index`` (integers in ``[0, m)``) has shape
    ``B_i + T`` with ``len(T) == n_trailing`` trailing axes that do not meet ``table``.
    The result has shape ``B_i + T``.  Done as one 1-d gather from the flattened table, which
    every backend implements and whose gradient is a scatter-add.  Returns ``None`` when the
    table's batch axes are not (statically) broadcastable against ``B_i`` with the table being
    the smaller one; the caller then falls back to a dense computation.
    """
    bt = table.type.broadcastable[:-1]
    bi = index.type.broadcastable[: index.ndim - n_trailing]
    if len(bt) > len(bi):
        return None
    bt = (True,) * (len(bi) - len(bt)) + tuple(bt)
    if any(t_b is False and i_b is True for t_b, i_b in zip(bt, bi, strict=True)):
        return None  # the table would enlarge the index's batch shape
    if bi and not any(t_b and not i_b for t_b, i_b in zip(bt, bi, strict=True)):
        return None  # one table per report: the dense computation is cheaper
    table = pt.shape_padleft(table, len(bi) + 1 - table.ndim)
    m = table.shape[-1]
    flat = index
    stride = m
    for ax in reversed(range(len(bi))):
        if bt[ax]:
            continue
        n_ax = table.shape[ax]
        shape = [1] * index.ndim
        shape[ax] = n_ax
        flat = flat + stride * pt.arange(n_ax).reshape(shape)
        stride = stride * n_ax
    return table.reshape((-1,))[flat]


def bits_dot(z, p, method="auto"):
    r""":math:`t = \sum_j p_j z_j` for 0/1 reports ``z`` (..., k) and weights ``p`` (..., k).

    With ``method="auto"`` (default), per-byte lookup tables (see the module docstring) are
    used when ``k`` is known and ``p`` is shared across reports (its batch axes broadcast
    against those of ``z``) or given per group (``theta[group]`` for reports ``(N, k)``: one
    table per group, read at the report's group); otherwise the dense product ``sum(p * z, -1)``
    (``method="dense"`` forces it).  Both give the same value to rounding.
    """
    if method not in ("auto", "dense"):
        raise ValueError(f"`method` must be 'auto' or 'dense'; got {method!r}")
    p = _f64(p)
    z = pt.as_tensor_variable(z)
    k = _static_len(z) or _static_len(p)
    if method == "auto" and k is not None and z.ndim >= 1:
        nb = -(-k // 8)
        pad = 8 * nb - k
        zi = pt.cast(z, "int64")
        # p given per group (theta[group], one row of reports each): one table per group,
        # read at group * (256 nb) + byte, so the per-report cost is that of a shared p
        grouped = gathered(p) if z.ndim == 2 and p.ndim == 2 else None
        pp = p if grouped is None else _f64(grouped[0])
        if pad:
            zi = pt.concatenate([zi, pt.zeros((*zi.shape[:-1], pad), dtype="int64")], axis=-1)
            pp = pt.concatenate([pp, pt.zeros((*pp.shape[:-1], pad), dtype="float64")], axis=-1)
        # byte value of each group of 8 bits, offset by its position: index into (nb*256,)
        weights = pt.as_tensor_variable((2 ** np.arange(8)).astype("int64"))
        byte = (zi.reshape((*zi.shape[:-1], nb, 8)) * weights).sum(-1)
        byte = byte + pt.as_tensor_variable((256 * np.arange(nb)).astype("int64"))
        table = pt.dot(pp.reshape((*pp.shape[:-1], nb, 8)), _BYTE_BITS.T)  # (..., nb, 256)
        table = table.reshape((*pp.shape[:-1], nb * 256))
        if grouped is not None and pp.ndim == 2:
            offset = pt.cast(grouped[1], "int64") * (nb * 256)
            return table.reshape((-1,))[byte + offset[:, None]].sum(-1)
        taken = _batched_take(table, byte, n_trailing=1)
        if taken is not None:
            return taken.sum(-1)
    return (p * pt.cast(z, "float64")).sum(-1)


def unary_encoding_logp(z, p, log_b, log1m_b, log1m_a, ell, method="auto"):
    r"""Log-likelihood of unary-encoded reports (generalised LDP eq. 33), one value per report.

    Parameters
    ----------
    z : tensor of {0, 1}, shape (..., k)
        Reports.
    p : tensor, shape (..., k)
        Item probabilities (on the simplex).
    log_b, log1m_b : tensor
        :math:`\log b` and :math:`\log(1 - b)`, b = P(report 1 | true bit 0).
    log1m_a : tensor
        :math:`\log(1 - a)`, a = P(report 1 | true bit 1).
    ell : tensor
        :math:`\operatorname{logit} a - \operatorname{logit} b` (:math:`\epsilon` for OUE and SUE).
    method : {"auto", "dense"}
        How :math:`\theta^\top z` is computed (:func:`bits_dot`).
    """
    z = pt.as_tensor_variable(z)
    k = z.shape[-1]
    m = pt.cast(z, "float64").sum(-1)
    log_b, log1m_b, log1m_a, ell = map(_f64, (log_b, log1m_b, log1m_a, ell))
    const = m * log_b + (k - m) * log1m_b + log1m_a - log1m_b
    return const + log1p_expm1_times(ell, bits_dot(z, p, method))


def oue_logp(z, p, epsilon, method="auto"):
    r"""Optimal unary encoding (LDP paper, Supplement 11, eq. 33; REFERENCE §2.3).

    :math:`a = 1/2`, :math:`b = 1/(1+e^\epsilon)`: :math:`\log b = -\operatorname{softplus}(\epsilon)`,
    :math:`\log(1-b) = -\operatorname{softplus}(-\epsilon)`, :math:`\ell = \epsilon`.
    """
    eps = _f64(epsilon)
    return unary_encoding_logp(z, p, -pt.softplus(eps), -pt.softplus(-eps), -_LOG2, eps, method)


def sue_logp(z, p, epsilon):
    r"""Symmetric unary encoding (basic one-time RAPPOR; Wang et al. 2017, Sec. 4.2).

    :math:`a = e^{\epsilon/2}/(1+e^{\epsilon/2})`, :math:`b = 1 - a`, :math:`\ell = \epsilon`.
    """
    eps = _f64(epsilon)
    h = eps / 2
    log_b = -pt.softplus(h)
    return unary_encoding_logp(z, p, log_b, -pt.softplus(-h), log_b, eps)


def krr_logp(y, p, epsilon):
    r"""k-ary randomized response (direct encoding): one value per report ``y``.

    :math:`\log p(y \mid \theta) = \log(1 + (e^\epsilon - 1)\theta_y) - \log(e^\epsilon + k - 1)`
    with :math:`\log(e^\epsilon + k - 1) = \operatorname{logaddexp}(\epsilon, \log(k-1))`.
    ``y`` holds integers in ``[0, k)``; ``p`` has shape (..., k).
    """
    p = _f64(p)
    eps = _f64(epsilon)
    y = pt.cast(pt.as_tensor_variable(y), "int64")
    k = p.shape[-1]
    theta_y = _batched_take(p, y)
    if theta_y is None:
        # per-report p (or a single report): broadcast p (..., k) against y[..., None]
        pb, yb = pt.broadcast_arrays(p, y[..., None])
        # yb[..., 0] then a new axis, not yb[..., :1]: the slice's length min(1, k) is a
        # computed shape, which JAX cannot trace (``pm.sample(nuts_sampler="numpyro")``)
        theta_y = pt.take_along_axis(pb, pt.expand_dims(yb[..., 0], -1), axis=-1)[..., 0]
    log_norm = pt.logaddexp(eps, pt.log(pt.cast(k - 1, "float64")))
    return log1p_expm1_times(eps, theta_y) - log_norm
