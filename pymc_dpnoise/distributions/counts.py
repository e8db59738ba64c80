"""The papers' names of the Laplace-noised counts: constructors of :class:`NoisyBinomial` and
:class:`NoisyPoisson` (and the count checks the count distributions share).

``LaplaceNoisyBinomial(name, n, p, epsilon, sensitivity)`` is
``NoisyBinomial(name, n, p, noise=Laplace(sensitivity / epsilon))`` (``clamp=True`` adds
``lower=0, upper=n``) and ``LaplaceNoisyPoisson(name, mu, epsilon, sensitivity)`` is
``NoisyPoisson(name, mu, noise=Laplace(sensitivity / epsilon))``: the same variables, one
implementation (the closed forms of :mod:`pymc_dpnoise.math.counts`, through
:mod:`pymc_dpnoise.math.noisy_counts`).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable

from .. import noise
from ..validation import check_positive, check_shapes, constant_value
from .noisy_counts import (
    NoisyBinomial,
    NoisyPoisson,
    _check_count,
    _check_nonnegative,
    _check_probability,
)

__all__ = ["LaplaceNoisyBinomial", "LaplaceNoisyPoisson"]


def _laplace(epsilon, sensitivity):
    """``Laplace(sensitivity / epsilon)``, the budget checked and named (either may be a
    tensor: a symbolic scale is checked in the graph)."""
    check_positive("epsilon", epsilon)
    check_positive("sensitivity", sensitivity)
    eps, sens = constant_value(epsilon), constant_value(sensitivity)
    # pm.Data (shared) stays symbolic: pm.set_data / nutpie's with_data must change the scale
    shared = any(isinstance(x, SharedVariable) for x in (epsilon, sensitivity))
    if eps is not None and sens is not None and not shared:
        scale = np.asarray(sens, dtype="float64") / np.asarray(eps, dtype="float64")
        try:
            return noise.Laplace(float(scale) if scale.ndim == 0 else scale)
        except ValueError as err:
            raise ValueError(f"`epsilon` / `sensitivity`: the Laplace scale {err}") from None
    return noise.Laplace(pt.as_tensor_variable(sensitivity) / pt.as_tensor_variable(epsilon))


class LaplaceNoisyBinomial:
    r"""A count of ones among :math:`n` records, released with Laplace noise (exact likelihood).

    A constructor: ``LaplaceNoisyBinomial(name, n, p, epsilon, sensitivity)`` returns
    ``NoisyBinomial(name, n, p, noise=Laplace(sensitivity / epsilon))`` (the same variable;
    ``.dist`` likewise), the name of Bernstein & Sheldon (2018, Sec. 3.1): the data holder
    counts :math:`s \sim \mathrm{Binomial}(n, p)` and releases :math:`y = s +
    \mathrm{Laplace}(0, b)`, :math:`b = \Delta/\epsilon`.  The likelihood marginalises
    :math:`s` exactly,

    .. math::

        p(y \mid p) = \sum_{s=0}^{n} \binom{n}{s} p^s (1-p)^{n-s}\, \frac{1}{2b} e^{-|y - s|/b},

    in closed form: with :math:`k = \lfloor y \rfloor`, each half of the sum is an exponentially
    tilted binomial, i.e. a binomial CDF at :math:`\operatorname{logit} p \pm 1/b`
    (:mod:`pymc_dpnoise.math.counts`); the cost does not grow with :math:`n`.

    With ``clamp=True`` the release is :math:`z = \mathrm{clip}(y, 0, n)` (as posterior-update
    releases do), ``NoisyBinomial(..., lower=0, upper=n)``: :math:`z = 0` and :math:`z = n`
    have positive probability, :math:`P(z = 0) = \tfrac12 (1 - p + p e^{-1/b})^n` and
    :math:`P(z = n) = \tfrac12 (p + (1 - p) e^{-1/b})^n`, and the log-likelihood is the log
    *mass* at the atoms and the log *density* strictly inside :math:`(0, n)`.

    Parameters
    ----------
    n : tensor_like of int
        Number of records in each count (data, not learned), a non-negative integer.
    p : tensor_like of float
        Success probability, in [0, 1].
    epsilon : tensor_like of float
        Privacy budget of each release, > 0.
    sensitivity : tensor_like of float, default 1.0
        L1 sensitivity of the count, > 0 (the Laplace scale is ``sensitivity / epsilon``).
    clamp : bool, default False
        Whether the released value was clipped to ``[0, n]`` after the noise.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(1)
    >>> n = np.array([120, 80, 400])
    >>> released = rng.binomial(n, 0.3) + rng.laplace(0.0, 1.0 / 0.5, size=3)
    >>> with pm.Model(coords={"region": ["a", "b", "c"]}) as model:
    ...     logit_p = pm.Normal("logit_p", 0.0, 1.5, dims="region")
    ...     y = pmd.LaplaceNoisyBinomial(
    ...         "y", n=n, p=pm.math.sigmoid(logit_p), epsilon=0.5, observed=released, dims="region"
    ...     )
    >>> y.owner.op.noise_type.__name__
    'Laplace'
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    def __new__(cls, name, n, p, epsilon, sensitivity=1.0, clamp=False, **kwargs):
        return NoisyBinomial(name, **cls._kwargs(n, p, epsilon, sensitivity, clamp, kwargs))

    @classmethod
    def dist(cls, n, p, epsilon, sensitivity=1.0, clamp=False, **kwargs):
        """The unnamed variable: ``NoisyBinomial.dist(n, p, noise=Laplace(sensitivity / epsilon))``."""
        return NoisyBinomial.dist(**cls._kwargs(n, p, epsilon, sensitivity, clamp, kwargs))

    @staticmethod
    def _kwargs(n, p, epsilon, sensitivity, clamp, kwargs):
        if not isinstance(clamp, bool | np.bool_):
            raise TypeError(f"`clamp` must be True or False (a Python bool); got {clamp!r}")
        _check_count("n", n)
        _check_probability("p", p)
        params = dict(n=n, p=p, epsilon=epsilon, sensitivity=sensitivity)
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        bounds = dict(lower=0.0, upper=n) if clamp else {}
        return dict(n=n, p=p, noise=_laplace(epsilon, sensitivity), **bounds, **kwargs)


class LaplaceNoisyPoisson:
    r"""A Poisson total released with Laplace noise (exact likelihood).

    A constructor: ``LaplaceNoisyPoisson(name, mu, epsilon, sensitivity)`` returns
    ``NoisyPoisson(name, mu, noise=Laplace(sensitivity / epsilon))``.  The data holder releases
    :math:`y = s + \mathrm{Laplace}(0, b)`, :math:`b = \Delta/\epsilon`, of a total
    :math:`s \sim \mathrm{Poisson}(\mu)`; the two halves of

    .. math::

        p(y \mid \mu) = \sum_{s \ge 0} e^{-\mu}\frac{\mu^s}{s!}\,\frac{1}{2b} e^{-|y - s|/b}

    are tilted Poisson pmfs (:math:`\mu e^{\pm 1/b}`), i.e. Poisson CDFs
    (:mod:`pymc_dpnoise.math.counts`).  The sensitivity :math:`\Delta` is the bound on one
    record's count that the data holder enforced
    (:func:`pymc_dpnoise.mechanisms.release_poisson_count`); the likelihood is exact when no
    record exceeded it.

    Parameters
    ----------
    mu : tensor_like of float
        Poisson rate of the total, >= 0.
    epsilon : tensor_like of float
        Privacy budget of each release, > 0.
    sensitivity : tensor_like of float
        L1 sensitivity of the total (the per-record bound), > 0.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(2)
    >>> released = rng.poisson(50.0, size=4) + rng.laplace(0.0, 3.0 / 1.0, size=4)
    >>> with pm.Model() as model:
    ...     mu = pm.Gamma("mu", 2.0, 0.05)
    ...     y = pmd.LaplaceNoisyPoisson("y", mu=mu, epsilon=1.0, sensitivity=3.0, observed=released)
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    def __new__(cls, name, mu, epsilon, sensitivity, **kwargs):
        return NoisyPoisson(name, **cls._kwargs(mu, epsilon, sensitivity, kwargs))

    @classmethod
    def dist(cls, mu, epsilon, sensitivity, **kwargs):
        """The unnamed variable: ``NoisyPoisson.dist(mu, noise=Laplace(sensitivity / epsilon))``."""
        return NoisyPoisson.dist(**cls._kwargs(mu, epsilon, sensitivity, kwargs))

    @staticmethod
    def _kwargs(mu, epsilon, sensitivity, kwargs):
        _check_nonnegative("mu", mu)
        params = dict(mu=mu, epsilon=epsilon, sensitivity=sensitivity)
        check_shapes(params, kwargs.get("shape"), kwargs.get("size"))
        return dict(mu=mu, noise=_laplace(epsilon, sensitivity), **kwargs)
