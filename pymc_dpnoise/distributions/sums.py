r"""Noisy sums of clamped values (OpenDP / Tumult / python-dp bounded sums).

:class:`NoisySum` is one distribution whatever the data law and the noise: the random
variable's op carries the data kind (from the PyMC ``.dist()`` given as ``values``) and the
noise spec's type, and the data law's parameters, ``n``, the noise parameter and the clamp are
inputs of the graph.  The math is :mod:`pymc_dpnoise.math.sums`.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Distribution, _support_point
from pymc.distributions.shape_utils import maybe_resize, rv_size_is_none
from pymc.logprob.abstract import _logprob
from pytensor.tensor.random.basic import (
    BernoulliRV,
    ExponentialRV,
    GammaRV,
    LogNormalRV,
    NormalRV,
    PoissonRV,
    binomial,
    normal,
    poisson,
)

from .. import noise as noise_mod
from ..math import sums as sm
from ..validation import check_finite, check_required, check_shapes, constant_value
from . import _common as cm
from .noisy_counts import _NoisyCountRV

__all__ = ["NoisySum"]

#: the data laws ``values=`` may be, by PyTensor random-variable op
_KIND_OF_OP = {
    NormalRV: "normal",
    LogNormalRV: "lognormal",
    ExponentialRV: "exponential",
    GammaRV: "gamma",
    PoissonRV: "poisson",
    BernoulliRV: "bernoulli",
}
#: smallest n at which the Edgeworth approximation is used (below it only the exact cases)
N_MIN = 30
#: draws: up to this many records per draw are drawn one by one (the mechanism itself);
#: above it (a constant n), the clamped sum is drawn as a normal with its exact mean and
#: variance (Berry-Esseen: KS distance below 0.48 |kappa_3| / (kappa_2^{3/2} sqrt(n)))
DRAW_EXACT_MAX = 2**16
MAX_N = float(2**53)


def _kind_of(values):
    op = getattr(getattr(values, "owner", None), "op", None)
    for op_type, kind in _KIND_OF_OP.items():
        if isinstance(op, op_type):
            return kind
    raise TypeError(
        "`values` must be a PyMC .dist() of one record's value: pm.Normal, pm.LogNormal, "
        "pm.Exponential, pm.Gamma, pm.Poisson or pm.Bernoulli (e.g. "
        f"values=pm.Normal.dist(mu, sigma)); got {values!r}"
    )


class NoisySumRV(_NoisyCountRV):
    """Draws ``sum_i clamp(X_i, lower, upper) + noise``.  One subclass per data kind (its
    parameters make the signature); ``noise_type`` is a property of the op (it chooses the
    graph), as for the noisy counts."""

    name = "noisy_sum"
    _title = "NoisySum"
    data_kind: str = ""

    def __str__(self):
        return f"NoisySum{{{self.data_kind}, {self.noise_type.__name__}}}"

    def rebuild_rv(self, *args, **kwargs):
        return self.rv_op(*args, data_kind=self.data_kind, noise_type=self.noise_type, **kwargs)

    @classmethod
    def rv_op(cls, n, *params, data_kind, noise_type, size=None, rng=None):
        sub = RV_TYPES[data_kind]
        k = len(sm.DATA_KINDS[data_kind])
        size, rng, n, *params = cm._rv_inputs(sub, size, rng, n, *params)
        data, (param, lower, upper) = params[:k], params[k:]
        rng_next, total = _draw_total(data_kind, n, data, lower, upper, size, rng)
        final_rng, noise = noise_type.pytensor_draw(param, size, rng_next)
        y = total + noise
        y = pt.cast(y, cm.REPORT_DTYPE) if noise_type.discrete else cm._to_floatx(y)
        return cm._rv_node(sub, rng, size, [n, *params], final_rng, y, noise_type=noise_type)


def _rv_type(kind):
    k = len(sm.DATA_KINDS[kind])
    sig = "[rng],[size]," + ",".join(["()"] * (k + 4)) + "->[rng],()"
    name = f"NoisySum{kind.capitalize()}RV"
    return type(
        name, (NoisySumRV,), {"data_kind": kind, "extended_signature": sig, "__module__": __name__}
    )


#: the random-variable op type of each data kind
RV_TYPES = {kind: _rv_type(kind) for kind in sm.DATA_KINDS}
globals().update({t.__name__: t for t in RV_TYPES.values()})


def _record_draws(data_kind, data, size, rng):
    from pytensor.tensor.random import basic as rb

    fn = {
        "normal": rb.normal,
        "lognormal": rb.lognormal,
        "exponential": rb.exponential,
        "gamma": rb.gamma,
        "poisson": rb.poisson,
        "bernoulli": rb.bernoulli,
    }[data_kind]
    data = [pt.shape_padright(p) for p in data]
    if data_kind == "gamma":  # PyTensor's gamma takes (shape, scale=...)
        return fn(data[0], scale=data[1], size=size, rng=rng, return_next_rng=True)
    return fn(*data, size=size, rng=rng, return_next_rng=True)


def _draw_total(data_kind, n, data, lower, upper, size, rng):
    """``(next_rng, sum of n clamped values)`` (module constants: how)."""
    exact = sm.exact_path(data_kind, lower, upper)
    if exact == "binomial":
        n_int = pt.cast(pt.round(n), "int64")
        nxt, s = binomial(n_int, data[0], size=size, rng=rng, return_next_rng=True)
        return nxt, pt.cast(s, "float64")
    if exact == "poisson":
        nxt, s = poisson(n * data[0], size=size, rng=rng, return_next_rng=True)
        return nxt, pt.cast(s, "float64")
    n_known = constant_value(n)
    if n_known is not None and np.max(n_known, initial=0) > DRAW_EXACT_MAX:
        mean, k2, _, _ = sm.clamped_cumulants(data_kind, data, lower, upper)
        nxt, s = normal(n * mean, pt.sqrt(n * k2), size=size, rng=rng, return_next_rng=True)
        if data_kind in sm.INTEGER_KINDS:
            s = pt.round(s)
        return nxt, s
    n_max = pt.cast(pt.max(n) if n.type.ndim else n, "int64")
    rec_size = pt.concatenate([pt.cast(size, "int64"), pt.atleast_1d(n_max)])
    nxt, x = _record_draws(data_kind, data, rec_size, rng)
    x = pt.clip(pt.cast(x, "float64"), pt.shape_padright(lower), pt.shape_padright(upper))
    index = pt.arange(n_max).astype("float64")
    keep = pt.lt(index, pt.shape_padright(n))
    return nxt, pt.sum(pt.switch(keep, x, 0.0), axis=-1)


# --------------------------------------------------------------------------------------------
# logp
# --------------------------------------------------------------------------------------------


def _data_checks(kind, data):
    if kind in ("normal", "lognormal"):
        return [data[1] > 0], "sigma > 0"
    if kind == "exponential":
        return [data[0] > 0], "rate > 0"
    if kind == "gamma":
        return [data[0] > 0, data[1] > 0], "alpha > 0, beta > 0"
    if kind == "poisson":
        return [data[0] >= 0], "mu >= 0"
    return [data[0] >= 0, data[0] <= 1], "0 <= p <= 1"


@_logprob.register(NoisySumRV)
def _noisy_sum_logprob(op, values, rng, size, n, *params, **kwargs):
    [value] = values
    k = len(sm.DATA_KINDS[op.data_kind])
    data, (param, lower, upper) = list(params[:k]), params[k:]
    finite, safe = cm._finite_reports(value)
    res = sm.noisy_sum_logp(safe, n, op.data_kind, data, lower, upper, op.noise_type, param)
    res = cm._ninf_where_not(finite, res)
    conds, msg = _data_checks(op.data_kind, data)
    res = check_parameters(
        res,
        # (checked only where the parameters are valid: else their own message below)
        sm.edgeworth_valid(n, op.data_kind, data, lower, upper) | ~pt.all(pt.stack(conds)),
        msg=f"the sum's skewness and excess kurtosis at most {sm.MAX_STANDARDISED} (the "
        "Edgeworth expansion of the sum is not accurate beyond: too few records for these "
        "values' tails; clamp them tighter)",
    )
    res = check_parameters(
        res,
        *cm._all_finite(n, param, *data),
        n >= 0,
        n <= MAX_N,
        pt.eq(n, pt.floor(n)),
        param > 0,
        pt.all(lower <= upper),
        *conds,
        msg=f"finite parameters, n integer >= 0, noise parameter > 0, lower <= upper, {msg}",
    )
    res = res if op.noise_type.discrete else cm._to_floatx(res)
    return maybe_resize(res, size)


@_support_point.register(NoisySumRV)
def _noisy_sum_support_point(op, rv, rng, size, n, *params):
    k = len(sm.DATA_KINDS[op.data_kind])
    data, (param, lower, upper) = list(params[:k]), params[k:]
    mean = sm.clamped_cumulants(op.data_kind, data, lower, upper)[0]
    point = n * mean
    if op.noise_type.discrete:
        point = pt.round(point)
    point, *_ = pt.broadcast_arrays(point, param, *data)
    if not rv_size_is_none(size):
        point = pt.full(size, point)
    return point


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _check_n(n):
    check_required(n=n)
    v = constant_value(n, "n")
    if v is None:
        return None
    check_finite("n", v)
    bad = (v < 0) | (v != np.floor(v)) | (v > MAX_N)
    if np.any(bad):
        raise ValueError(f"`n` must be a non-negative integer <= 2^53; got {v[bad].ravel()[:5]}")
    return v


def _check_bounds(kind, lower, upper):
    lo = constant_value(lower, "lower")
    hi = constant_value(upper, "upper")
    for name, v in (("lower", lo), ("upper", hi)):
        if v is not None and np.any(np.isnan(v)):
            raise ValueError(f"`{name}` must not be NaN (use -inf / inf for no clamp)")
        if v is not None and kind == "poisson" and np.any(np.isfinite(v) & (v != np.round(v))):
            raise ValueError(f"`{name}` must be an integer for Poisson values; got {v}")
    if lo is not None and hi is not None and np.any(lo > hi):
        raise ValueError(f"`lower` must be at most `upper`; got lower={lo}, upper={hi}")
    if kind == "bernoulli" and (lo is None or hi is None or np.any(lo > 0) or np.any(hi < 1)):
        raise ValueError(
            "Bernoulli values need constant bounds with `lower` <= 0 and `upper` >= 1 (the sum "
            f"is then a binomial count, read exactly); got lower={lower!r}, upper={upper!r}"
        )


def _check_noise(kind, spec, exact):
    if exact is not None:
        return
    name = type(spec).__name__
    continuous_data = kind not in sm.INTEGER_KINDS
    if continuous_data and name not in ("Laplace", "Gaussian"):
        raise ValueError(
            f"`noise`: a sum of {kind} values is real valued; its release takes continuous "
            f"noise (noise.Laplace or noise.Gaussian), not {name}"
        )
    if not continuous_data and name not in ("Gaussian", "DiscreteGaussian"):
        raise ValueError(
            f"`noise`: {name} noise on a clamped sum of {kind} values is not supported: the "
            "Laplace kinds' kink makes the integer lattice of the sum visible in the release's "
            "law, which the likelihood (an expansion of a smooth law) does not follow; Gaussian "
            "and DiscreteGaussian noise are supported, and every noise kind without an upper "
            "clamp (then the sum is a Poisson total, read exactly)"
        )
    if name == "DiscreteGaussian" and not spec.symbolic and np.any(np.asarray(spec.param) < 1.0):
        raise ValueError(
            "`noise`: DiscreteGaussian noise on a clamped sum needs sigma >= 1 (the likelihood "
            f"uses its closeness to the normal); got sigma={spec.param}"
        )


def _check_n_min(kind, n_value, lower, upper):
    if n_value is None:
        return
    lo, hi = constant_value(lower), constant_value(upper)
    normal_unclamped = (
        kind == "normal"
        and lo is not None
        and hi is not None
        and np.all(np.isneginf(lo))
        and np.all(np.isposinf(hi))
    )
    if normal_unclamped:
        return
    if np.any(n_value < N_MIN):
        raise ValueError(
            f"`n`: NoisySum reads a sum of {N_MIN} or more clamped {kind} values (its likelihood "
            "is an Edgeworth expansion of the sum, not accurate for fewer values: see "
            f"pymc_dpnoise.math.sums); got n={np.ravel(n_value)[np.ravel(n_value) < N_MIN][:5]}"
        )


def _split(kwargs):
    for k in ("n", "values", "noise"):
        if k not in kwargs:
            raise TypeError(f"NoisySum needs `{k}=`")
    n = kwargs.pop("n")
    values = kwargs.pop("values")
    spec = noise_mod.as_noise(kwargs.pop("noise"))
    lower = kwargs.pop("lower", -np.inf)
    upper = kwargs.pop("upper", np.inf)
    lower = -np.inf if lower is None else lower
    upper = np.inf if upper is None else upper
    kind = _kind_of(values)
    data = list(values.owner.op.dist_params(values.owner))
    n_value = _check_n(n)
    _check_bounds(kind, lower, upper)
    exact = sm.exact_path(kind, pt.as_tensor_variable(lower), pt.as_tensor_variable(upper))
    _check_noise(kind, spec, exact)
    if exact is None:
        _check_n_min(kind, n_value, lower, upper)
    params = dict(n=n, noise=spec.param, lower=lower, upper=upper)
    params.update({f"values.{p}": v for p, v in zip(sm.DATA_KINDS[kind], data, strict=True)})
    check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
    return [n, *data, spec.param, lower, upper], kwargs, kind, spec


class NoisySum(Distribution):
    r"""The release of a sum of :math:`n` values each clamped to :math:`[L, U]`, plus DP noise.

    The data holder clamps each record's value :math:`X_i` (drawn from the law ``values``) to
    :math:`[L, U]` and releases :math:`y = \sum_{i=1}^n \mathrm{clamp}(X_i, L, U) + N` with
    noise :math:`N` of a spec from :mod:`pymc_dpnoise.noise`: OpenDP's ``make_clamp >>
    then_sum >> then_laplace`` (or ``then_gaussian``), Tumult's ``sum``, python-dp's
    ``BoundedSum``.  The clamp makes each value a mixture of two atoms (at :math:`L` and
    :math:`U`) and the data law inside; the likelihood is

    * exact for Bernoulli values (a binomial count, :class:`NoisyBinomial`'s math) and Poisson
      values without an upper clamp (a Poisson total), with every noise kind;
    * else a second-order Edgeworth expansion of the sum from the clamped law's exact
      cumulants (closed forms for the normal, log-normal, exponential, gamma and Poisson),
      convolved exactly with the noise (:mod:`pymc_dpnoise.math.sums`): relative error
      :math:`O(n^{-3/2})`, measured in ``benchmarks/results/noisy_sums.md``; refused below
      :math:`n = 30` (unless the values are normal and unclamped: then exact), and where the
      sum's skewness or excess kurtosis exceeds 0.25 (``pm.logp`` raises; a sampler treats
      those parameter values as outside the support, so a posterior that reaches them is
      truncated there: clamp the values tighter).  The cost does not depend on :math:`n`.

    Continuous values take ``noise.Laplace`` or ``noise.Gaussian``; clamped Poisson values
    ``noise.Gaussian`` or ``noise.DiscreteGaussian`` (:math:`\sigma \ge 1`).

    Draws are the mechanism: :math:`n` values drawn, clamped and summed, plus the noise (for a
    constant :math:`n` above :math:`2^{16}`, the clamped sum is drawn as a normal with its
    exact mean and variance).

    Parameters
    ----------
    n : tensor_like of int
        Number of records in the sum (data).
    values : TensorVariable
        A PyMC ``.dist()`` of one record's value, e.g. ``pm.Normal.dist(mu, sigma)``: its
        parameters may be model variables (that is what is learned).
    lower, upper : tensor_like of float
        The clamp bounds (``-inf`` / ``inf``: none).
    noise : pymc_dpnoise.noise.Noise
        The noise the release added.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> from pymc_dpnoise import noise
    >>> rng = np.random.default_rng(1)
    >>> ages = np.clip(rng.normal(40.0, 12.0, 500), 0, 100)
    >>> release = ages.sum() + noise.Laplace(100.0 / 1.0).sample(rng=rng)
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 50.0, 30.0)
    ...     s = pmd.NoisySum("s", n=500, values=pm.Normal.dist(mu, 12.0), lower=0, upper=100,
    ...                      noise=noise.Laplace(100.0), observed=release)
    >>> bool(np.isfinite(model.compile_logp()({"mu": 40.0})))
    True
    """

    rv_type = NoisySumRV
    rv_op = NoisySumRV.rv_op
    logcdf = cm._refuse("NoisySum", "logcdf", "only the density of the sum is implemented")
    icdf = cm._refuse("NoisySum", "icdf", "only the density of the sum is implemented")

    def __new__(cls, name, *args, observed=None, **kwargs):
        if args:
            raise TypeError("NoisySum takes keyword arguments: n=, values=, lower=, upper=, noise=")
        _params, _, _kind, spec = _split(dict(kwargs))
        obs = cm._check_observed(name, observed)
        if obs is not None and spec.discrete and np.any(obs != np.round(obs)):
            raise ValueError(
                f"{name}: observed releases must be integers with {type(spec).__name__} noise"
            )
        return super().__new__(cls, name, observed=observed, **kwargs)

    @classmethod
    def dist(cls, *args, **kwargs):
        if args:
            raise TypeError("NoisySum takes keyword arguments: n=, values=, lower=, upper=, noise=")
        params, kwargs, kind, spec = _split(kwargs)
        return super().dist(params, data_kind=kind, noise_type=type(spec), **kwargs)
