r"""The noise-ignoring counterpart of each distribution, in one call.

A *naive* model is what an analyst writes who treats the privatised data as if they were the
clean data: a Normal on clipped-Gaussian Laplace reports, a Binomial on noisy counts, a
Multinomial on the frequency oracle's estimated counts.  Its posterior concentrates on the
wrong values as ε shrinks (the noise is read as signal), which is what a teaching demo shows
next to the noise-aware posterior (:func:`pymc_dpnoise.demo.epsilon_sweep`).

* :func:`naive_counterpart` — the naive ``.dist()`` of one of our variables (a model variable
  or a ``.dist()``), with the data it scores (:class:`NaiveCounterpart`).
* :func:`naive_model` — a copy of a PyMC model in which every observed variable of ours is
  replaced by its naive counterpart; the priors, the other variables, the coords and the dims
  of the unchanged data are kept.

What the naive model of each distribution is
--------------------------------------------
``LaplacePerturbedClippedNormal``
    ``Normal(mu, sigma)`` on the reports (same data).
``LaplacePerturbedClippedExponential``
    ``Exponential(lam)`` on ``max(z, floor)`` (different data [1]_).
``LaplaceNoisyBinomial``, ``NoisyBinomial``
    ``Binomial(n, p)`` on ``clip(round(z), 0, n)`` (different data [2]_).
``LaplaceNoisyPoisson``, ``NoisyPoisson``
    ``Poisson(mu)`` on ``max(round(z), 0)`` (different data [2]_).
``LaplaceNoisyMultinomial``
    ``Multinomial(n, p)`` on the noisy counts projected onto the simplex and rounded to n
    (different data).
``OUELikelihood``, ``SUELikelihood``, ``UnaryEncodingLikelihood``, ``KRRLikelihood``
    ``Multinomial(N, p)`` on the de-biased frequency estimate projected onto the simplex and
    rounded to the N reports: one count vector instead of N reports (different data).
``PerturbedLinReg``
    The plain regression on the perturbed inputs, ``z_x ~ N(0, Σ)``, ``z_y ~ N(θᵀz_x, σ²)``,
    as one ``MvNormal`` of each report row (same data).
``PerturbedLinRegSummary``
    The same regression's log likelihood from the scatter matrix (same data).
``PerturbedLogReg``
    ``z_x ~ N(0, Σ)``, ``z_y ~ Bernoulli(sigmoid(θᵀz_x))`` (same data).

.. [1] The same data when no report is below ``floor`` (Laplace noise makes some negative at
   any useful ε).
.. [2] The same data only for integer releases already inside the support (integer noise
   kinds, no report outside ``[0, n]``); a real-valued release is always different data.

The remaining distributions have no naive model *of the same observation* and are refused
with a message saying what to use instead: the binned summaries of the clipped reports keep
no second moment of the reports outside the clipping interval (fit the naive model on the
reports), the noisy sufficient statistics of truncated families (``LaplaceNoisyTruncated*``)
and of GLMs (``SSNormalApprox``) are not densities of the released statistic once the noise
is ignored (the conjugate naive update is :func:`pymc_dpnoise.baselines.naive_posterior`).

When ``az.compare`` between the two models is meaningful
--------------------------------------------------------
ArviZ's ``compare`` (and ``loo``, ``waic``) ranks models by the expected log predictive
density of *the same observations*: the pointwise log likelihoods of the two models must be
densities of the same observed values, on the same scale (both densities, or both
probabilities).  So it is meaningful only when the naive model scores exactly the data the
noise-aware model scores, the rows marked "same" above (clipped normal, perturbed regressions;
the clipped exponential when no report is below the floor; integer counts within the
support).  Where the naive model scores *different data* (rounded or clipped counts, projected
counts of a frequency oracle, floored reports), the two ELPDs are not comparable and
``az.compare`` would still print a ranking: :func:`naive_model` records the difference on the
returned model (``model.naive_data_differ``, a tuple of variable names, and a
:class:`DifferentDataWarning`), and :func:`pymc_dpnoise.diagnostics.compare` checks the
``observed_data`` groups of the fits before calling ``az.compare`` and warns when they differ.
Even on the same data, a better ELPD of the naive model says only that it predicts the noisy
reports well (it absorbs the noise into its parameters, e.g. an inflated σ), not that its
parameters describe the clean population: compare posteriors against a known truth
(simulation) for that.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable

import numpy as np
import pytensor.tensor as pt

__all__ = ["DifferentDataWarning", "NaiveCounterpart", "naive_counterpart", "naive_model"]

#: reports below this value are raised to it before the naive Exponential (its density is
#: zero at and below 0); the same floor as :func:`pymc_dpnoise.baselines.naive_exponential`
EXPONENTIAL_FLOOR = 1e-6


class DifferentDataWarning(UserWarning):
    """The naive model scores different data than the noise-aware one (``az.compare`` between
    them is not meaningful)."""


@dataclasses.dataclass(frozen=True)
class NaiveCounterpart:
    """What :func:`naive_counterpart` returns.

    Attributes
    ----------
    dist : pytensor.tensor.TensorVariable
        The naive distribution (an unnamed ``.dist()`` variable); its parameters are the same
        graph variables as the original's (priors included).
    observed : numpy.ndarray or None
        The data the naive distribution scores, when observed data were given: the same array
        when ``same_data``, else the transformed data (e.g. rounded counts).
    same_data : bool or None
        Whether the naive model scores exactly the given data (None when none were given).
    note : str
        What the naive model is and what it does to the data.
    """

    dist: object
    observed: np.ndarray | None
    same_data: bool | None
    note: str


@dataclasses.dataclass(frozen=True)
class _Entry:
    public: str  # the public class name
    rv_types: Callable[[], tuple]  # the op types of the class's variables (found lazily)
    params: Callable[[object], tuple[str, ...]]  # op -> parameter names, in input order
    build: Callable  # (params: dict, observed or None, op) -> (dist, observed, same, note)
    ndim_supp: int  # core dimensions of the naive distribution's value


_REGISTRY: dict[str, _Entry] = {}
_REFUSED: dict[str, str] = {}


def _rv_type_of(public):
    def types():
        from .. import distributions

        return (getattr(distributions, public).rv_type,)

    return types


def _names(*names):
    return lambda op: names


def _register(public, *, params, ndim_supp=0, rv_types=None):
    """Register ``build`` as the naive counterpart of the public class ``public``.

    ``params`` names the distribution parameters in the order of the op's inputs (a tuple,
    or a function of the op when the class has several op types); only this accessor changes
    when a class's inputs change.
    """

    def deco(build):
        _REGISTRY[public] = _Entry(
            public=public,
            rv_types=rv_types or _rv_type_of(public),
            params=params if callable(params) else _names(*params),
            build=build,
            ndim_supp=ndim_supp,
        )
        return build

    return deco


def _refuse(public, why):
    _REFUSED[public] = why


def _entry_of(op):
    """The registry entry whose op types include ``op`` (None when it is not ours)."""
    for entry in _REGISTRY.values():
        if isinstance(op, entry.rv_types()):
            return entry
    return None


def _refused_of(op):
    for public, why in _REFUSED.items():
        if isinstance(op, _REFUSED_TYPES.get(public, _rv_type_of(public))()):
            return public, why
    return None


def _read_params(entry, rv):
    op = rv.owner.op
    values = op.dist_params(rv.owner)
    names = entry.params(op)
    if len(values) != len(names):
        raise RuntimeError(
            f"{entry.public}: its variable has {len(values)} parameters, the naive accessor "
            f"expects {names}; update the accessor in pymc_dpnoise/baselines/naive.py"
        )
    return dict(zip(names, values, strict=True))


def _const(x, what, public):
    from ..validation import constant_value

    v = constant_value(x)
    if v is None:
        raise ValueError(
            f"{public}: `{what}` must be a known value (data, not a random variable) to build "
            "the naive model's data"
        )
    return v


def _given(obs):
    return None if obs is None else True


def _same(new, old):
    return bool(np.shape(new) == np.shape(old) and np.array_equal(new, old))


# --------------------------------------------------------------------------------------------
# Per-report continuous families
# --------------------------------------------------------------------------------------------


@_register("LaplacePerturbedClippedNormal", params=("mu", "sigma", "lower", "upper", "epsilon"))
def _clipped_normal(p, obs, op, size=None):
    import pymc as pm

    note = "Normal(mu, sigma) on the reports as if they were the clean values"
    return pm.Normal.dist(p["mu"], p["sigma"], size=size), obs, _given(obs), note


@_register("LaplacePerturbedClippedExponential", params=("lam", "upper", "epsilon"))
def _clipped_exponential(p, obs, op, size=None):
    import pymc as pm

    new = None if obs is None else np.maximum(np.asarray(obs, dtype=float), EXPONENTIAL_FLOOR)
    note = (
        f"Exponential(lam) on the reports raised to {EXPONENTIAL_FLOOR:g} (Laplace-perturbed "
        "reports can be negative; the Exponential density is zero there)"
    )
    same = None if obs is None else _same(new, obs)
    return pm.Exponential.dist(lam=p["lam"], size=size), new, same, note


# --------------------------------------------------------------------------------------------
# Counts
# --------------------------------------------------------------------------------------------


def _noisy_count_type(family):
    """The op type of the NoisyBinomial / NoisyPoisson variables (every noise kind)."""
    from ..distributions import noisy_counts

    return {"binomial": noisy_counts.NoisyBinomialRV, "poisson": noisy_counts.NoisyPoissonRV}[
        family
    ]


def _noisy_count_discrete(op):
    """Whether the op's noise kind releases integers (the spec's class says so)."""
    return bool(op.noise_type.discrete)


def _rounded_counts(obs, upper, discrete):
    new = np.clip(np.round(np.asarray(obs, dtype=float)), 0, upper).astype("int64")
    same = discrete and _same(new, obs)
    return new, same


def _binomial(p, obs, op, size, *, discrete, public):
    import pymc as pm

    n = p["n"]
    new = same = None
    if obs is not None:
        new, same = _rounded_counts(obs, _const(n, "n", public), discrete)
    note = "Binomial(n, p) on the releases rounded and clipped to [0, n]"
    n_int = pt.cast(pt.round(n), "int64")
    return pm.Binomial.dist(n=n_int, p=p["p"], size=size), new, same, note


def _poisson(p, obs, op, size, *, discrete):
    import pymc as pm

    new = same = None
    if obs is not None:
        new, same = _rounded_counts(obs, np.inf, discrete)
    note = "Poisson(mu) on the releases rounded and raised to 0"
    return pm.Poisson.dist(mu=p["mu"], size=size), new, same, note


@_register(
    "NoisyBinomial",
    params=("n", "p", "noise", "lower", "upper"),
    rv_types=lambda: (_noisy_count_type("binomial"),),
)
def _noisy_binomial(p, obs, op, size=None):
    # LaplaceNoisyBinomial is a constructor of NoisyBinomial: its variables land here too
    discrete = _noisy_count_discrete(op)
    return _binomial(p, obs, op, size, discrete=discrete, public="NoisyBinomial")


@_register(
    "NoisyPoisson",
    params=("mu", "noise", "lower", "upper"),
    rv_types=lambda: (_noisy_count_type("poisson"),),
)
def _noisy_poisson(p, obs, op, size=None):
    return _poisson(p, obs, op, size, discrete=_noisy_count_discrete(op))


# --------------------------------------------------------------------------------------------
# Histograms: one Multinomial of projected counts (different data)
# --------------------------------------------------------------------------------------------


def _unbatched_p(p, public):
    if p.type.ndim != 1:
        raise ValueError(
            f"{public}: `p` has batch dimensions (shape {p.type.shape}); the naive model is one "
            "Multinomial of one count vector: build it per group (one variable per group)"
        )


def _expand_rows(obs, counts, public):
    c = np.asarray(_const(counts, "counts", public), dtype=float)
    if np.all(c == 1.0):
        return obs
    if np.ndim(c) == 0 or np.any(c != np.round(c)) or np.any(c < 0):
        raise ValueError(
            f"{public}: the naive counts need integer per-report `counts` (multiplicities); "
            f"got {c!r:.60}"
        )
    return np.repeat(obs, c.astype("int64"), axis=0)


def _projected_multinomial(p, obs, public, estimate):
    import pymc as pm

    from ..mechanisms.frequency import project_simplex
    from .frequency import rounded_counts

    _unbatched_p(p["p"], public)
    note = (
        "Multinomial(N, p) on the de-biased frequency estimate projected onto the simplex and "
        "rounded to the N reports: one count vector instead of N reports (different data)"
    )
    new = None
    n = None
    if obs is not None:
        rows = _expand_rows(np.asarray(obs), p["counts"], public)
        n = rows.shape[0]
        new = rounded_counts(project_simplex(estimate(rows)), n)
    # an int64 count: a small Python int becomes an int8 constant, whose log-factorial
    # PyTensor computes in float32 (3e-8 relative error in the log pmf)
    dist = pm.Multinomial.dist(n=np.int64(n if n is not None else 1), p=p["p"])
    return dist, new, None if obs is None else False, note


def _epsilon_of(p, public):
    return _const(p["epsilon"], "epsilon", public)


@_register("OUELikelihood", params=("p", "epsilon", "counts"), ndim_supp=1)
def _oue(p, obs, op, size=None):
    from ..mechanisms.frequency import oue_estimate

    eps = None if obs is None else _epsilon_of(p, "OUELikelihood")
    return _projected_multinomial(p, obs, "OUELikelihood", lambda z: oue_estimate(z, eps))


@_register("SUELikelihood", params=("p", "epsilon", "counts"), ndim_supp=1)
def _sue(p, obs, op, size=None):
    from ..mechanisms.frequency import sue_probabilities, unary_encoding_estimate

    eps = None if obs is None else _epsilon_of(p, "SUELikelihood")
    return _projected_multinomial(
        p, obs, "SUELikelihood", lambda z: unary_encoding_estimate(z, *sue_probabilities(eps))
    )


@_register("UnaryEncodingLikelihood", params=("p", "keep_prob", "flip_prob", "counts"), ndim_supp=1)
def _ue(p, obs, op, size=None):
    from ..mechanisms.frequency import unary_encoding_estimate

    public = "UnaryEncodingLikelihood"
    if obs is not None:
        a = _const(p["keep_prob"], "keep_prob", public)
        b = _const(p["flip_prob"], "flip_prob", public)
    return _projected_multinomial(p, obs, public, lambda z: unary_encoding_estimate(z, a, b))


@_register("KRRLikelihood", params=("p", "epsilon", "counts"), ndim_supp=1)
def _krr(p, obs, op, size=None):
    from ..mechanisms.frequency import krr_estimate

    k = p["p"].type.shape[-1]
    eps = None if obs is None else _epsilon_of(p, "KRRLikelihood")
    if obs is not None and k is None:
        k = int(np.shape(_const(p["p"], "p", "KRRLikelihood"))[-1])
    return _projected_multinomial(p, obs, "KRRLikelihood", lambda y: krr_estimate(y, k, eps))


def _noisy_multinomial_types():
    from ..distributions import expfam

    return (
        expfam.NoisyMultinomialMixtureRV,
        expfam.NoisyMultinomialCountsRV,
        expfam.NoisyMultinomialGaussianRV,
    )


def _noisy_multinomial_params(op):
    from ..distributions import expfam

    if isinstance(op, expfam.NoisyMultinomialGaussianRV):
        return ("n", "p", "noise_sigma")
    return ("n", "p", "latent", "epsilon", "sensitivity")


@_register(
    "LaplaceNoisyMultinomial",
    params=_noisy_multinomial_params,
    rv_types=_noisy_multinomial_types,
    ndim_supp=1,
)
def _noisy_multinomial(p, obs, op, size=None):
    import pymc as pm

    from ..mechanisms.frequency import project_simplex
    from .frequency import rounded_counts

    public = "LaplaceNoisyMultinomial"
    note = (
        "Multinomial(n, p) on the noisy counts projected onto the simplex and rounded to n "
        "(different data)"
    )
    new = same = None
    if obs is not None:
        z = np.asarray(obs, dtype=float)
        n = np.broadcast_to(_const(p["n"], "n", public), z.shape[:-1])
        freq = project_simplex(z / np.maximum(n, 1.0)[..., None])
        new = np.empty(z.shape, dtype="int64")
        for idx in np.ndindex(*z.shape[:-1]):
            new[idx] = rounded_counts(freq[idx], round(float(n[idx])))
        same = False
    n_int = pt.cast(pt.round(p["n"]), "int64")
    return pm.Multinomial.dist(n=n_int, p=p["p"], size=size), new, same, note


# --------------------------------------------------------------------------------------------
# Perturbed regressions: the plain regression on the perturbed inputs (same data)
# --------------------------------------------------------------------------------------------


def _clean_joint_cov(theta, sigma, cov):
    """Covariance of ``[x, y]`` with ``x ~ N(0, Σ)``, ``y | x ~ N(θᵀx, σ²)`` (no noise)."""
    from ..math.regression import perturbed_linreg_cov

    zero = pt.zeros_like(sigma)
    return perturbed_linreg_cov(theta, sigma, cov, pt.zeros_like(theta), zero)


@_register("PerturbedLinReg", params=("theta", "sigma", "cov", "sigma_x", "sigma_y"), ndim_supp=1)
def _linreg(p, obs, op, size=None):
    import pymc as pm

    c = _clean_joint_cov(p["theta"], p["sigma"], p["cov"])
    note = (
        "the plain regression on the perturbed inputs: z_x ~ N(0, cov), z_y ~ N(theta.z_x, "
        "sigma^2), i.e. MvNormal(0, C) with no noise in C"
    )
    return pm.MvNormal.dist(pt.zeros(c.shape[-1]), cov=c, size=size), obs, _given(obs), note


def _scatter_logp(value, theta, sigma, cov, n, _shape):
    from ..math.linalg import spd_inverse_logdet

    c = _clean_joint_cov(theta, sigma, cov)
    prec, logdet, _ = spd_inverse_logdet(c)
    m = pt.cast(c.shape[-1], "float64")
    return -0.5 * (n * (m * np.log(2 * np.pi) + logdet)) - 0.5 * pt.sum(prec * value)


@_register(
    "PerturbedLinRegSummary",
    params=("theta", "sigma", "cov", "sigma_x", "sigma_y", "n"),
    ndim_supp=2,
)
def _linreg_summary(p, obs, op, size=None):
    import pymc as pm

    note = (
        "the plain regression's summed log likelihood from the scatter matrix (no noise in "
        "the joint covariance; the Wishart normalising terms are left out, as in "
        "PerturbedLinRegSummary)"
    )
    m = p["theta"].shape[-1] + 1
    dist = pm.CustomDist.dist(
        p["theta"],
        p["sigma"],
        p["cov"],
        p["n"],
        pt.zeros((m, m)),  # the value's shape, for PyTensor's shape inference
        logp=_scatter_logp,
        signature="(d),(),(d,d),(),(m,m)->(m,m)",
        dtype="float64",
        class_name="NaiveLinRegSummary",
    )
    return dist, obs, _given(obs), note


def _naive_logreg_logp(value, theta, cov, _shape):
    import pymc as pm

    x, y = value[..., :-1], value[..., -1]
    d = theta.shape[-1]
    lx = pm.logp(pm.MvNormal.dist(pt.zeros(d), cov=cov), x)
    eta = pt.sum(x * theta, axis=-1)
    ly = -(y * pt.softplus(-eta) + (1.0 - y) * pt.softplus(eta))  # log sigmoid(±eta)
    return lx + ly


@_register("PerturbedLogReg", params=("theta", "cov", "sigma_x", "epsilon_y"), ndim_supp=1)
def _logreg(p, obs, op, size=None):
    import pymc as pm

    note = (
        "the plain logistic regression on the perturbed inputs: z_x ~ N(0, cov), "
        "z_y ~ Bernoulli(sigmoid(theta.z_x))"
    )
    dist = pm.CustomDist.dist(
        p["theta"],
        p["cov"],
        pt.zeros(p["theta"].shape[-1] + 1),  # the value's shape, for shape inference
        logp=_naive_logreg_logp,
        signature="(d),(d,d),(m)->(m)",
        dtype="float64",
        size=size,
        class_name="NaiveLogReg",
    )
    return dist, obs, _given(obs), note


# --------------------------------------------------------------------------------------------
# Refused: no naive model of the same observation
# --------------------------------------------------------------------------------------------

_SUMMARY = (
    "the binned summary keeps no second moment of the reports outside the clipping interval, "
    "so no naive model of the same table exists; fit the naive model on the reports "
    "(naive_counterpart of the per-report class, {per_report})"
)
_SUFFICIENT = (
    "a noisy sufficient statistic read as exact is not a density of the released statistic, "
    "so a naive model of the same observation does not exist; the naive conjugate update of "
    "Bernstein & Sheldon is pymc_dpnoise.baselines.naive_posterior"
)
_refuse(
    "LaplacePerturbedClippedNormalSummary",
    _SUMMARY.format(per_report="LaplacePerturbedClippedNormal"),
)
_refuse(
    "LaplacePerturbedClippedExponentialSummary",
    _SUMMARY.format(per_report="LaplacePerturbedClippedExponential"),
)
_refuse("LaplaceNoisyTruncatedExponential", _SUFFICIENT)
_refuse("LaplaceNoisyTruncatedPoisson", _SUFFICIENT)
_refuse("LaplaceNoisyTruncatedNormal", _SUFFICIENT)
_refuse(
    "SSNormalApprox",
    "a noisy sufficient statistic read as exact is not a density of the released statistic; "
    "the non-private fits on clean data are pymc_dpnoise.baselines.least_squares and "
    "logistic_mle",
)


def _truncated_types(*names):
    def types():
        from ..distributions import expfam, expfam_normal

        return tuple(getattr(expfam, n, None) or getattr(expfam_normal, n) for n in names)

    return types


#: op types of the refused classes that have no ``rv_type`` of their own (factory functions)
_REFUSED_TYPES = {
    "LaplaceNoisyTruncatedExponential": _truncated_types(
        "TruncatedExponentialSumRV", "TruncatedExponentialSumGaussianRV"
    ),
    "LaplaceNoisyTruncatedPoisson": _truncated_types(
        "TruncatedPoissonSumRV", "TruncatedPoissonSumGaussianRV"
    ),
    "LaplaceNoisyTruncatedNormal": _truncated_types(
        "TruncatedNormalSumRV", "TruncatedNormalSumGaussianRV"
    ),
}


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _lookup(rv):
    from pytensor.graph.basic import Variable

    if not isinstance(rv, Variable) or rv.owner is None:
        raise TypeError(
            "naive_counterpart: `rv` must be a variable of a pymc_dpnoise distribution (a model "
            f"variable or a .dist()); got {type(rv).__name__}"
        )
    entry = _entry_of(rv.owner.op)
    if entry is not None:
        return entry
    refused = _refused_of(rv.owner.op)
    if refused is not None:
        raise NotImplementedError(f"naive_counterpart: {refused[0]}: {refused[1]}")
    raise TypeError(
        "naive_counterpart: `rv` is not a variable of a pymc_dpnoise distribution (its op is "
        f"{type(rv.owner.op).__name__})"
    )


def naive_counterpart(rv, observed=None, *, size=None):
    """The noise-ignoring counterpart of one of our variables, and the data it scores.

    Parameters
    ----------
    rv : pytensor.tensor.TensorVariable
        A variable of a pymc_dpnoise distribution: a model variable or a ``.dist()``.
    observed : array_like, optional
        The privatised data.  When given, the result carries the data the naive model
        scores (rounded counts, projected counts, ...) and whether they are the same.
    size : tuple, optional
        Batch shape of the naive distribution (PyMC's ``size``); by default the parameters'
        (the Multinomial of a frequency oracle is one count vector).

    Returns
    -------
    NaiveCounterpart

    Raises
    ------
    NotImplementedError
        For a distribution without a naive model of the same observation (the binned
        summaries, the noisy sufficient statistics); the message says what to use instead.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> import pymc_dpnoise as pmd
    >>> rv = pmd.LaplacePerturbedClippedNormal.dist(mu=1.0, sigma=2.0, lower=-5.0,
    ...                                             upper=5.0, epsilon=1.0)
    >>> naive = naive_counterpart(rv, observed=np.array([0.5, -3.0]))
    >>> naive.same_data, naive.note
    (True, 'Normal(mu, sigma) on the reports as if they were the clean values')
    >>> from scipy import stats
    >>> bool(np.isclose(pm.logp(naive.dist, 0.5).eval(), stats.norm.logpdf(0.5, 1.0, 2.0)))
    True
    """
    entry = _lookup(rv)
    params = _read_params(entry, rv)
    obs = None if observed is None else np.asarray(observed)
    dist, new, same, note = entry.build(params, obs, rv.owner.op, size)
    return NaiveCounterpart(dist=dist, observed=new, same_data=same, note=note)


def naive_model(model=None, *, warn=True):
    """A copy of ``model`` with every observed variable of ours replaced by its naive model.

    Priors, deterministics, potentials, coords and the other observed variables are kept
    (the copy is made with PyMC's model graph tools).  An observed variable whose naive model
    scores the same data keeps its data container (``pm.Data`` included) and dims; one whose
    naive model scores different data gets them as a constant (and loses its dims when the
    shape changes, e.g. N reports -> one count vector).

    Parameters
    ----------
    model : pymc.Model, optional
        The noise-aware model (the model on the context stack by default).
    warn : bool
        Emit a :class:`DifferentDataWarning` when some naive variable scores different data.

    Returns
    -------
    pymc.Model
        With two extra attributes: ``naive_notes`` (variable name -> what its naive model is)
        and ``naive_data_differ`` (the names of the variables whose data differ; empty when
        ``az.compare`` between the two models compares the same data).
    """
    import pymc as pm
    from pymc.model.fgraph import (
        ModelObservedRV,
        fgraph_from_model,
        model_from_fgraph,
        model_observed_rv,
    )
    from pytensor.graph.fg import FunctionGraph

    model = pm.modelcontext(model)
    fgraph, _ = fgraph_from_model(model)
    replacements, notes, differ = {}, {}, []
    for out in fgraph.outputs:
        node = out.owner
        if node is None or not isinstance(node.op, ModelObservedRV):
            continue
        rv, value = node.inputs
        try:
            entry = _lookup(rv)
        except TypeError:
            continue  # not one of ours: kept as it is
        from ..validation import constant_value

        obs = constant_value(value)
        if obs is None:
            raise ValueError(f"naive_model: the observed data of {node.op.name!r} are not known")
        naive = naive_counterpart(rv, obs, size=_batch_size(entry, value, obs))
        dtype = naive.dist.type.dtype
        if naive.same_data and value.type.dtype == dtype:
            new_value = value  # the user's data container, unchanged
        else:  # transformed data, or the same values as integers (counts)
            new_value = pt.as_tensor(np.asarray(naive.observed, dtype=dtype))
        dims = node.op.dims if np.shape(naive.observed) == obs.shape else ()
        if not naive.same_data:
            differ.append(node.op.name)
        new = model_observed_rv(naive.dist, new_value, node.op.name, *dims)
        replacements[out] = new
        notes[node.op.name] = naive.note
    # a new graph over the replaced outputs (a replacement may change the type, e.g. float
    # releases -> integer counts, which FunctionGraph.replace refuses)
    new_fgraph = FunctionGraph(
        outputs=[replacements.get(o, o) for o in fgraph.outputs], clone=False
    )
    new_fgraph._coords = getattr(fgraph, "_coords", {})
    new_fgraph._dim_lengths = getattr(fgraph, "_dim_lengths", {})
    out = model_from_fgraph(new_fgraph, mutate_fgraph=True)
    out.naive_notes = notes
    out.naive_data_differ = tuple(differ)
    if differ and warn:
        warnings.warn(
            f"naive_model: the naive model scores different data for {differ} (e.g. rounded or "
            "projected counts); az.compare between the two models is not meaningful",
            DifferentDataWarning,
            stacklevel=2,
        )
    return out


def _batch_size(entry, value, obs):
    """The naive variable's batch shape: the data's (symbolic, so that a ``pm.Data`` container
    can change length), except for the one count vector of a frequency oracle."""
    batch = np.ndim(obs) - entry.ndim_supp
    if entry.public in _ONE_VECTOR or batch <= 0:
        return None
    return tuple(value.shape[i] for i in range(batch))


#: the frequency oracles' naive model is one count vector whatever the number of reports
_ONE_VECTOR = ("OUELikelihood", "SUELikelihood", "UnaryEncodingLikelihood", "KRRLikelihood")
