"""Noise-aware likelihoods of frequency-oracle reports (OUE, SUE, general unary encoding, k-RR).

Draws are :class:`~pymc.distributions.distribution.SymbolicRandomVariable` graphs that run the
mechanism (item ~ Categorical(p), then perturb), so prior and posterior predictive draws are
privatised reports, on every backend.  :mod:`pymc_dpnoise.mechanisms.frequency` has the same
mechanisms in NumPy for the data holder; the test-suite checks both give the same distribution.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete, SymbolicRandomVariable
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.tensor.random.basic import categorical, integers, uniform

from .. import math as dpmath
from ..math._op_support import lift_grouped, per_distinct_report
from ..mechanisms.frequency import MAX_EPSILON  # one limit for the release and the likelihood
from ..validation import check_finite, check_positive, check_required, constant_value
from ._common import (
    REPORT_DTYPE,
    _check_observed,
    _check_value_batch,
    _check_value_width,
    _guard_data,
    _refuse_cdfs,
    _rv_inputs,
    _rv_node,
    _static_dim,
)

__all__ = ["KRRLikelihood", "OUELikelihood", "SUELikelihood", "UnaryEncodingLikelihood"]

#: tolerance of the check that ``p`` sums to one
SIMPLEX_ATOL = 1e-6
_UNORDERED = (
    "a report is a category id, and categories have no order (a CDF would depend on the labels)"
)


# --------------------------------------------------------------------------------------------
# Validation shared by the four classes
# --------------------------------------------------------------------------------------------


def _observed_array(name, observed):
    """The constant observed reports as an array (None if symbolic); refuses NaN/inf/masked."""
    return _check_observed(name, observed)


def _k_of(p):
    check_required(p=p)
    v = constant_value(p, "p")
    if v is not None:
        return v.shape[-1] if v.ndim else None
    n = pt.as_tensor_variable(p).type.shape[-1] if pt.as_tensor_variable(p).ndim else None
    return None if n is None else int(n)


def _check_simplex(p):
    v = constant_value(p, "p")
    if v is None:
        if pt.as_tensor_variable(p).ndim < 1:
            raise ValueError("`p` must have at least one axis (the k item probabilities)")
        return
    if v.ndim < 1 or v.shape[-1] < 2:
        raise ValueError(f"`p` must have a last axis of length k >= 2; got shape {v.shape}")
    check_finite("p", v)
    if np.any(v < 0):
        raise ValueError(f"`p` must be non-negative; got {v[v < 0].ravel()[:5]}")
    s = v.sum(-1)
    if np.any(np.abs(s - 1) > SIMPLEX_ATOL):
        raise ValueError(f"`p` must sum to 1 over its last axis; sums are {np.ravel(s)[:5]}")


def _check_epsilon(epsilon, name="epsilon"):
    check_positive(name, epsilon)
    v = constant_value(epsilon)
    if v is not None and np.any(v > MAX_EPSILON):
        raise ValueError(
            f"`{name}` must be <= {MAX_EPSILON:g} (e^{name} overflows); got {v[v > MAX_EPSILON][:5]}"
        )


def _check_probability(name, v):
    v = constant_value(v, name)
    if v is None:
        return
    check_finite(name, v)
    if np.any((v <= 0) | (v >= 1)):
        raise ValueError(f"`{name}` must be in (0, 1); got {v[(v <= 0) | (v >= 1)][:5]}")


def _check_counts(counts):
    v = constant_value(counts, "counts")
    if v is None:
        return
    check_finite("counts", v)
    if np.any(v < 0):
        raise ValueError(f"`counts` must be >= 0; got {v[v < 0][:5]}")


def _check_batch(scalars: dict, p, shape=None, event_ndim=1):
    """Batch shapes of p (without its last axis) and the scalar parameters must broadcast,
    and broadcast into the variable's batch shape (``shape`` without its event axes)."""
    shapes = {}
    pv = constant_value(p)
    if pv is not None:
        shapes["p"] = pv.shape[:-1]
    for k, v in scalars.items():
        cv = constant_value(v, k)
        if cv is not None:
            shapes[k] = cv.shape
    try:
        batch = np.broadcast_shapes(*shapes.values())
    except ValueError:
        desc = ", ".join(f"{k}{s} (batch)" for k, s in shapes.items())
        raise ValueError(f"parameters do not broadcast together: {desc}") from None
    target = None
    if shape is not None:
        try:
            target = tuple(int(t) for t in np.atleast_1d(shape))
        except Exception:  # symbolic shape: PyMC checks it when the graph runs
            target = None
        if target is not None and event_ndim:
            target = target[:-event_ndim]
    if target is not None:
        for k, s in shapes.items():
            try:
                ok = np.broadcast_shapes(target, s) == tuple(target)
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(
                    f"`{k}` has batch shape {s}, which does not broadcast to the reports' batch "
                    f"shape {tuple(target)}"
                )
    return batch


class _FrequencyBase(Discrete):
    """Refuses non-finite, masked, non-0/1 or wrongly shaped observed reports."""

    _bits = True  # unary encodings: reports are bit vectors; k-RR: reports are items

    def __new__(cls, name, *args, observed=None, **kwargs):
        value = _observed_array(name, observed)
        if value is not None:
            p = kwargs.get("p", args[0] if args else None)
            cls._check_reports(name, value, _k_of(p))
        return super().__new__(cls, name, *args, observed=observed, **kwargs)

    @classmethod
    def _check_reports(cls, name, value, k):
        if cls._bits:
            if value.ndim < 1:
                raise ValueError(f"{name}: each report is a vector of k bits; got a scalar")
            if k is not None and value.shape[-1] != k:
                raise ValueError(
                    f"{name}: each report must have k = {k} bits (the length of `p`); "
                    f"observed reports have {value.shape[-1]} (shape {value.shape})"
                )
            bad = (value != 0) & (value != 1)
            if np.any(bad):
                idx = np.argwhere(bad)[0].tolist()
                raise ValueError(
                    f"{name}: reports must be 0/1 bit vectors; found {value[bad][:3]} "
                    f"(first at index {idx})"
                )
        else:
            bad = (value != np.round(value)) | (value < 0)
            if k is not None:
                bad |= value >= k
            if np.any(bad):
                idx = np.argwhere(bad)[0].tolist() if value.ndim else []
                raise ValueError(
                    f"{name}: reports must be items in [0, k) with k = {k} (the length of `p`); "
                    f"found {np.ravel(value[bad])[:3]} (first at index {idx})"
                )


# --------------------------------------------------------------------------------------------
# Unary encodings
# --------------------------------------------------------------------------------------------


def _unary_draw(rng, size, p, a, b):
    """item ~ Categorical(p); bit j ~ Bernoulli(a if j == item else b)."""
    next_rng, item = categorical(p, size=size, rng=rng, return_next_rng=True)
    k = p.shape[-1]
    onehot = pt.eq(item[..., None], pt.arange(k))
    prob = pt.switch(onehot, a[..., None], b[..., None])
    final_rng, u = uniform(0.0, 1.0, size=prob.shape, rng=next_rng, return_next_rng=True)
    return final_rng, pt.cast(pt.lt(u, prob), REPORT_DTYPE)


class _UnaryRV(SymbolicRandomVariable):
    extended_signature = "[rng],[size],(k),(),(),()->[rng],(k)"

    @classmethod
    def _probabilities(cls, *scalars):  # (keep_prob, flip_prob) from the scalar parameters
        raise NotImplementedError

    @classmethod
    def rv_op(cls, p, *params, size=None, rng=None):
        """``params``: the scalar parameters of ``cls._probabilities``, then ``counts``."""
        size, rng, p, *params = _rv_inputs(cls, size, rng, p, *params)
        a, b = cls._probabilities(*params[:-1])
        a, b = pt.broadcast_arrays(a, b, params[-1])[:2]
        final_rng, z = _unary_draw(rng, size, p, a, b)
        return _rv_node(cls, rng, size, [p, *params], final_rng, z)


class _EpsilonUnaryRV(_UnaryRV):
    extended_signature = "[rng],[size],(k),(),()->[rng],(k)"


class OUERV(_EpsilonUnaryRV):
    name = "oue"
    _print_name = ("OUELikelihood", "\\operatorname{OUE}")

    @classmethod
    def _probabilities(cls, epsilon):
        return pt.full_like(epsilon, 0.5), pt.sigmoid(-epsilon)


class SUERV(_EpsilonUnaryRV):
    name = "sue"
    _print_name = ("SUELikelihood", "\\operatorname{SUE}")

    @classmethod
    def _probabilities(cls, epsilon):
        return pt.sigmoid(epsilon / 2), pt.sigmoid(-epsilon / 2)


class UnaryEncodingRV(_UnaryRV):
    name = "unary_encoding"
    _print_name = ("UnaryEncodingLikelihood", "\\operatorname{UE}")

    @classmethod
    def _probabilities(cls, keep_prob, flip_prob):
        return keep_prob, flip_prob


def _unary_support_point(size, p, a, b, counts):
    point = pt.cast(pt.gt(b[..., None] + (a - b)[..., None] * p, 0.5), REPORT_DTYPE)
    point = pt.broadcast_arrays(point, counts[..., None])[0]
    if not rv_size_is_none(size):
        point = pt.broadcast_to(point, pt.concatenate([size, [p.shape[-1]]]))
    return point


def _valid_bits(value):
    return pt.all(pt.eq(value, 0) | pt.eq(value, 1), axis=-1)


def _safe_bits(value):
    """``(valid, safe)``: rows that are 0/1 bit vectors, and the value with every other row
    replaced by zeros.  The likelihood turns bit rows into indices of a pattern table: a NaN
    or fractional row would index outside it (an IndexError in Python, an unchecked read in
    compiled code) before the -inf of an invalid row is applied."""
    valid = _valid_bits(value)
    return valid, pt.switch(valid[..., None], value, pt.zeros_like(value))


_BITS_DATA_MSG = (
    "observed: the reports in the pm.Data container must be 0/1 bit vectors (no NaN, no "
    "fractions, no other integers); pm.set_data put other values in"
)


def _checked_bits(value, p, **scalars):
    """Static shape checks naming the argument, and the pm.Data guard, for unary encodings."""
    _check_value_width(value, _static_dim(p), "k bits (the length of `p`)")
    _check_value_batch(value, 1, p=(p, 1), **{k: (v, 0) for k, v in scalars.items()})
    return _guard_data(value, lambda src: pt.eq(src, 0) | pt.eq(src, 1), _BITS_DATA_MSG)


def _unary_logp(bits_logp, value, p, counts, **scalars):
    """Unary-encoding log-likelihood: ``bits_logp(bits)`` times ``counts`` on the 0/1 rows of
    ``value`` (after :func:`_checked_bits`), -inf on every other row."""
    value = _checked_bits(value, p, **scalars, counts=counts)
    valid, value = _safe_bits(value)
    return pt.switch(valid, bits_logp(value) * counts, -np.inf)


def _simplex_conditions(p):
    return [pt.all(pt.ge(p, 0), axis=-1), pt.le(pt.abs(p.sum(-1) - 1), SIMPLEX_ATOL)]


def _validate_epsilon_params(p, epsilon, counts, kwargs, event_ndim=1):
    """``dist`` validation of the (p, epsilon, counts) classes: OUE, SUE and k-RR."""
    check_required(p=p, epsilon=epsilon, counts=counts)
    _check_simplex(p)
    _check_epsilon(epsilon)
    _check_counts(counts)
    scalars = dict(epsilon=epsilon, counts=counts)
    _check_batch(scalars, p, kwargs.get("shape"), event_ndim=event_ndim)


def _epsilon_unary_methods(rv_type, bits_logp):
    """``support_point`` and ``logp`` of a unary encoding fixed by ``epsilon`` (OUE, SUE).

    The bit probabilities are those the draws use (``rv_type._probabilities``), the
    log-likelihood of a 0/1 row is ``bits_logp(bits, p, epsilon)``.
    """

    def support_point(rv, size, p, epsilon, counts):
        return _unary_support_point(size, p, *rv_type._probabilities(epsilon), counts)

    @per_distinct_report(1, 1, 0, 0)
    def logp(value, p, epsilon, counts):
        res = _unary_logp(
            lambda bits: bits_logp(bits, p, epsilon), value, p, counts, epsilon=epsilon
        )
        return _epsilon_param_checks(res, p, epsilon, counts)

    return support_point, logp


class _EpsilonLikelihood(_FrequencyBase):
    """The (p, epsilon, counts) classes: OUE, SUE and k-RR share their ``dist``."""

    _event_ndim = 1  # of the reports

    @classmethod
    def dist(cls, p, epsilon, counts=1.0, **kwargs):
        _validate_epsilon_params(p, epsilon, counts, kwargs, event_ndim=cls._event_ndim)
        return super().dist([p, epsilon, counts], **kwargs)


def _epsilon_param_checks(res, p, epsilon, counts):
    """``check_parameters`` of the (p, epsilon, counts) classes (with ``p=theta[group]``, the
    checks and the other parameter-only terms once per group: :func:`lift_grouped`)."""
    return lift_grouped(_epsilon_checks(res, p, epsilon, counts))


def _epsilon_checks(res, p, epsilon, counts):
    return check_parameters(
        res,
        *_simplex_conditions(p),
        epsilon > 0,
        epsilon <= MAX_EPSILON,
        counts >= 0,
        pt.isfinite(counts),
        msg=f"p on the simplex, 0 < epsilon <= {MAX_EPSILON:g}, finite counts >= 0",
    )


class OUELikelihood(_EpsilonLikelihood):
    r"""Optimal-unary-encoding reports of items drawn from ``p`` (local DP histograms).

    Each person holds an item :math:`x \sim \mathrm{Categorical}(\theta)` out of :math:`k`,
    one-hot encodes it and reports every bit through randomized response: the item's own bit
    is 1 with probability 1/2, every other bit is 1 with probability :math:`1/(1+e^\epsilon)`
    (Wang et al. 2017; LDP paper eq. 9).  Marginalising the item (LDP paper, Supplement 11,
    eq. 33), for a report :math:`z \in \{0,1\}^k` with :math:`|z|` ones,

    .. math::

        \log p(z \mid \theta) = \log C(z) + \log\bigl(1 + (e^\epsilon - 1)\,\theta^\top z\bigr),
        \qquad C(z) = \frac{p^{k-|z|}(1-p)^{|z|}}{2p},\ p = \frac{e^\epsilon}{1+e^\epsilon}.

    Evaluated by :func:`pymc_dpnoise.math.oue_logp`; :math:`\theta^\top z` is read from per-byte
    lookup tables (:func:`pymc_dpnoise.math.bits_dot`), so the cost is
    :math:`\lceil k/8 \rceil` gathers per report.

    ========  ==================================================================
    Support   :math:`z \in \{0, 1\}^k`
    Mean      :math:`q_j = E[z_j] = b + (a - b)\,\theta_j`, :math:`a = 1/2`,
              :math:`b = 1/(1+e^\epsilon)`
    Variance  :math:`\mathrm{Var}[z_j] = q_j(1 - q_j)`,
              :math:`\mathrm{Cov}[z_i, z_j] = -(a - b)^2\theta_i\theta_j` (:math:`i \ne j`)
    ========  ==================================================================

    Parameters
    ----------
    p : tensor_like of float, shape (..., k)
        Item probabilities on the simplex (usually a ``pm.Dirichlet``).  Batch axes broadcast
        against the reports' batch axes, e.g. ``p`` of shape ``(G, 1, k)`` for ``G`` groups
        of reports ``(G, N, k)``.
    epsilon : tensor_like of float
        Budget of each report, ``0 < epsilon <= 700``; a vector gives personalised budgets.
    counts : tensor_like of float, optional
        Multiplicity of each observed report: the log-likelihood of a row is multiplied by it.
        Use with :func:`pymc_dpnoise.mechanisms.compress_reports` to group identical reports.
        A weighted likelihood is not a generative model: random draws ignore ``counts``
        (one report per row), so do predictive checks on the uncompressed reports.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise import OUELikelihood
    >>> from pymc_dpnoise.mechanisms import oue_perturb
    >>> rng = np.random.default_rng(0)
    >>> items = rng.choice(3, size=2000, p=[0.7, 0.2, 0.1])
    >>> reports = oue_perturb(items, 3, 1.0, rng)      # what the aggregator receives
    >>> with pm.Model() as model:
    ...     theta = pm.Dirichlet("theta", np.ones(3))
    ...     z = OUELikelihood("z", p=theta, epsilon=1.0, observed=reports)
    >>> model["z"].eval().shape
    (2000, 3)
    """

    rv_type = OUERV
    rv_op = OUERV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("OUELikelihood")
    support_point, logp = _epsilon_unary_methods(OUERV, dpmath.oue_logp)


class SUELikelihood(_EpsilonLikelihood):
    r"""Symmetric-unary-encoding reports (basic one-time RAPPOR) of items drawn from ``p``.

    Like :class:`OUELikelihood`, but every bit is kept with probability
    :math:`a = e^{\epsilon/2}/(1+e^{\epsilon/2})` and flipped otherwise, so the item's own bit
    is 1 with probability :math:`a` and every other bit with :math:`b = 1 - a`
    (Erlingsson et al. 2014; Wang et al. 2017, Sec. 4.2).  The log-likelihood is the general
    unary-encoding form (:func:`pymc_dpnoise.math.unary_encoding_logp`) with
    :math:`\operatorname{logit} a - \operatorname{logit} b = \epsilon`.

    ========  ==================================================================
    Support   :math:`z \in \{0, 1\}^k`
    Mean      :math:`q_j = E[z_j] = b + (a - b)\,\theta_j`
    Variance  :math:`\mathrm{Var}[z_j] = q_j(1 - q_j)`,
              :math:`\mathrm{Cov}[z_i, z_j] = -(a - b)^2\theta_i\theta_j` (:math:`i \ne j`)
    ========  ==================================================================

    Parameters
    ----------
    p, epsilon, counts
        As for :class:`OUELikelihood`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise import SUELikelihood
    >>> from pymc_dpnoise.mechanisms import sue_perturb
    >>> rng = np.random.default_rng(0)
    >>> reports = sue_perturb(rng.choice(3, size=1000, p=[0.6, 0.3, 0.1]), 3, 2.0, rng)
    >>> with pm.Model() as model:
    ...     theta = pm.Dirichlet("theta", np.ones(3))
    ...     z = SUELikelihood("z", p=theta, epsilon=2.0, observed=reports)
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    rv_type = SUERV
    rv_op = SUERV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("SUELikelihood")
    support_point, logp = _epsilon_unary_methods(SUERV, dpmath.sue_logp)


class UnaryEncodingLikelihood(_FrequencyBase):
    r"""Unary-encoding reports with arbitrary keep / flip probabilities.

    The item's own bit is reported as 1 with probability ``keep_prob`` :math:`= a`, every
    other bit with probability ``flip_prob`` :math:`= b` (Wang et al. 2017's "pure" protocols;
    OUE and SUE are special cases).  The mechanism is
    :math:`\epsilon`-LDP with :math:`\epsilon = \operatorname{logit} a - \operatorname{logit} b`.
    Generalising LDP eq. 33,

    .. math::

        \log p(z \mid \theta) = |z| \log b + (k - |z|)\log(1-b) + \log\frac{1-a}{1-b}
            + \log\bigl(1 + (e^{\ell} - 1)\,\theta^\top z\bigr),
        \quad \ell = \operatorname{logit} a - \operatorname{logit} b.

    ``keep_prob < flip_prob`` (an inverted encoding) is allowed; ``keep_prob == flip_prob``
    carries no information and is allowed too (the likelihood is then flat in ``p``).

    ========  ==================================================================
    Support   :math:`z \in \{0, 1\}^k`
    Mean      :math:`q_j = E[z_j] = b + (a - b)\,\theta_j`
    Variance  :math:`\mathrm{Var}[z_j] = q_j(1 - q_j)`,
              :math:`\mathrm{Cov}[z_i, z_j] = -(a - b)^2\theta_i\theta_j` (:math:`i \ne j`)
    ========  ==================================================================

    Parameters
    ----------
    p : tensor_like of float, shape (..., k)
        Item probabilities on the simplex.
    keep_prob, flip_prob : tensor_like of float
        :math:`a` and :math:`b`, each in (0, 1); they broadcast per report.
    counts : tensor_like of float, optional
        As for :class:`OUELikelihood`.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise import UnaryEncodingLikelihood
    >>> from pymc_dpnoise.mechanisms import unary_encoding_perturb
    >>> rng = np.random.default_rng(0)
    >>> items = rng.choice(4, size=1000, p=[0.4, 0.3, 0.2, 0.1])
    >>> reports = unary_encoding_perturb(items, 4, 0.75, 0.25, rng)
    >>> with pm.Model() as model:
    ...     theta = pm.Dirichlet("theta", np.ones(4))
    ...     z = UnaryEncodingLikelihood("z", p=theta, keep_prob=0.75, flip_prob=0.25,
    ...                                 observed=reports)
    >>> pm.draw(model["z"], random_seed=1).shape
    (1000, 4)
    """

    rv_type = UnaryEncodingRV
    rv_op = UnaryEncodingRV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("UnaryEncodingLikelihood")

    @classmethod
    def dist(cls, p, keep_prob, flip_prob, counts=1.0, **kwargs):
        check_required(p=p, keep_prob=keep_prob, flip_prob=flip_prob, counts=counts)
        _check_simplex(p)
        _check_probability("keep_prob", keep_prob)
        _check_probability("flip_prob", flip_prob)
        _check_counts(counts)
        scalars = dict(keep_prob=keep_prob, flip_prob=flip_prob, counts=counts)
        _check_batch(scalars, p, kwargs.get("shape"))
        return super().dist([p, keep_prob, flip_prob, counts], **kwargs)

    def support_point(rv, size, p, keep_prob, flip_prob, counts):
        return _unary_support_point(size, p, keep_prob, flip_prob, counts)

    @per_distinct_report(1, 1, 0, 0, 0)
    def logp(value, p, keep_prob, flip_prob, counts):
        a, b = keep_prob, flip_prob
        log_b, log1m_b, log_a, log1m_a = pt.log(b), pt.log1p(-b), pt.log(a), pt.log1p(-a)
        ell = (log_a - log1m_a) - (log_b - log1m_b)
        res = _unary_logp(
            lambda bits: dpmath.unary_encoding_logp(bits, p, log_b, log1m_b, log1m_a, ell),
            value,
            p,
            counts,
            keep_prob=keep_prob,
            flip_prob=flip_prob,
        )
        checked = check_parameters(
            res,
            *_simplex_conditions(p),
            (a > 0) & (a < 1),
            (b > 0) & (b < 1),
            counts >= 0,
            pt.isfinite(counts),
            msg="p on the simplex, 0 < keep_prob < 1, 0 < flip_prob < 1, finite counts >= 0",
        )
        return lift_grouped(checked)


# --------------------------------------------------------------------------------------------
# k-ary randomized response
# --------------------------------------------------------------------------------------------


class KRRRV(SymbolicRandomVariable):
    name = "krr"
    extended_signature = "[rng],[size],(k),(),()->[rng],()"
    _print_name = ("KRRLikelihood", "\\operatorname{kRR}")

    @classmethod
    def rv_op(cls, p, epsilon, counts, *, size=None, rng=None):
        size, rng, p, epsilon, counts = _rv_inputs(cls, size, rng, p, epsilon, counts)
        rng1, item = categorical(p, size=size, rng=rng, return_next_rng=True)
        k = p.shape[-1]
        keep = 1.0 / (1.0 + (k - 1) * pt.exp(-epsilon))
        rng2, u = uniform(0.0, 1.0, size=item.shape, rng=rng1, return_next_rng=True)
        rng3, other = integers(0, k - 1, size=item.shape, rng=rng2, return_next_rng=True)
        other = other + pt.ge(other, item)
        y = pt.switch(pt.lt(u, keep), item, other)
        return _rv_node(cls, rng, size, [p, epsilon, counts], rng3, pt.cast(y, REPORT_DTYPE))


class KRRLikelihood(_EpsilonLikelihood):
    r"""k-ary randomized-response reports (direct encoding) of items drawn from ``p``.

    Each person reports their item :math:`x \sim \mathrm{Categorical}(\theta)` with probability
    :math:`e^\epsilon/(e^\epsilon + k - 1)` and otherwise one of the other :math:`k-1` items
    uniformly (Warner 1965; Kairouz et al. 2016; Wang et al. 2017 "direct encoding").
    :math:`k = 2` with :math:`\theta = (1 - \pi, \pi)` is binary randomized response.

    .. math::

        \log p(y \mid \theta) = \log\bigl(1 + (e^\epsilon - 1)\,\theta_y\bigr)
            - \log(e^\epsilon + k - 1).

    ========  ==================================================================
    Support   :math:`y \in \{0, \dots, k-1\}` (category ids, unordered)
    pmf       :math:`q_j = P(y = j) = (1 + (e^\epsilon - 1)\theta_j)/(e^\epsilon + k - 1)`
    Mean      of the one-hot report: :math:`q`; of the id itself not meaningful
    Variance  of the one-hot report: :math:`\mathrm{diag}(q) - q q^T`
    ========  ==================================================================

    Parameters
    ----------
    p : tensor_like of float, shape (..., k)
        Item probabilities on the simplex.
    epsilon : tensor_like of float
        Budget of each report, ``0 < epsilon <= 700``.
    counts : tensor_like of float, optional
        Multiplicity of each observed report (e.g. ``observed=np.arange(k)`` with
        ``counts=np.bincount(reports, minlength=k)``); random draws ignore it.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise import KRRLikelihood
    >>> from pymc_dpnoise.mechanisms import krr_perturb
    >>> rng = np.random.default_rng(0)
    >>> reports = krr_perturb(rng.choice(4, size=500, p=[0.4, 0.3, 0.2, 0.1]), 4, 1.0, rng)
    >>> with pm.Model() as model:
    ...     theta = pm.Dirichlet("theta", np.ones(4))
    ...     y = KRRLikelihood("y", p=theta, epsilon=1.0, observed=reports)
    >>> float(np.round(model.compile_logp()(model.initial_point()), 3)) < 0
    True
    """

    rv_type = KRRRV
    rv_op = KRRRV.rv_op
    logcdf, logccdf, icdf = _refuse_cdfs("KRRLikelihood", _UNORDERED)
    _bits = False
    _event_ndim = 0

    def support_point(rv, size, p, epsilon, counts):
        point = pt.argmax(p, axis=-1)
        point = pt.broadcast_arrays(point, epsilon, counts)[0]
        if not rv_size_is_none(size):
            point = pt.broadcast_to(point, size)
        return pt.cast(point, REPORT_DTYPE)

    @per_distinct_report(0, 1, 0, 0)
    def logp(value, p, epsilon, counts):
        k = p.shape[-1]
        _check_value_batch(value, 0, p=(p, 1), epsilon=(epsilon, 0), counts=(counts, 0))
        value = _guard_data(
            value,
            lambda src: pt.eq(src, pt.floor(src)) & pt.ge(src, 0) & pt.lt(src, k),
            "observed: the reports in the pm.Data container must be items in [0, k), k = the "
            "length of `p` (no NaN, no fractions); pm.set_data put other values in",
        )
        valid = pt.ge(value, 0) & pt.lt(value, k)
        if not value.dtype.startswith(("int", "uint")):  # a float value: fractions, NaN
            valid = valid & pt.eq(value, pt.floor(value))
        safe = pt.switch(valid, value, 0)
        res = pt.switch(valid, dpmath.krr_logp(safe, p, epsilon) * counts, -np.inf)
        return _epsilon_param_checks(res, p, epsilon, counts)
