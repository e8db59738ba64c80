"""``fit clipped-normal`` and ``fit clipped-exponential``: clipped values plus Laplace noise.

The LDP paper's clipped families (:class:`~pymc_dpnoise.LaplacePerturbedClippedNormal`,
:class:`~pymc_dpnoise.LaplacePerturbedClippedExponential`): one numeric report per row
(:data:`SCALAR`), the options of the clipping bounds and the priors, the builders.  Large files
with one ``--epsilon`` are fitted through the binned ``...Summary`` classes (see
``cli._fit._summary_data``).
"""

from __future__ import annotations

from .._base import InputError, finite_float
from .._columns import scalar_read
from .._options import (
    BOUND_SCALED,
    EPSILON_OR_COLUMN,
    NORMAL_PRIORS,
    check_scale,
    column_opt,
    gamma_prior_opt,
)
from .._spec import Built, DataKind, Example, Family, ModelSpec, Opt, doc, fmt

# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


#: one numeric report per row with its budget (the clipped families)
SCALAR = DataKind(
    (
        column_opt(
            "--column",
            "column of reports: header name or 0-based index (default: the one column "
            "that no other option uses; required if there are several)",
        ),
        EPSILON_OR_COLUMN,
    ),
    scalar_read,
)


# --------------------------------------------------------------------------------------------
# clipped normal
# --------------------------------------------------------------------------------------------


_CLIPPED_NORMAL_OPTIONS = (
    Opt("--lower", "lower clipping bound", type=finite_float, required=True),
    Opt("--upper", "upper clipping bound", type=finite_float, required=True),
    *NORMAL_PRIORS,
)


def _clipped_normal_check(args):
    if not args.lower < args.upper:
        raise InputError(
            f"--lower ({fmt(args.lower)}) must be smaller than --upper ({fmt(args.upper)})"
        )
    check_scale(args.upper - args.lower, args)
    if args.mu_prior and args.mu_prior[1] <= 0:
        raise InputError(f"--mu-prior: SD must be > 0, got {fmt(args.mu_prior[1])}")


def _clipped_class(data, name):
    """The distribution ``name``, or its binned ``...Summary`` variant when ``data["z"]`` is a
    ClippedSummary (large files, see _fit._summary_data)."""
    from ... import distributions as dists
    from ...summaries import ClippedSummary

    return getattr(dists, name + "Summary" if isinstance(data["z"], ClippedSummary) else name)


def _clipped_normal_build(args, data):
    import pymc as pm

    cls = _clipped_class(data, "LaplacePerturbedClippedNormal")
    h = (args.upper - args.lower) / 2
    m0, s0 = args.mu_prior or ((args.lower + args.upper) / 2, h)
    a, b = args.sigma_prior or (2.0, 2.0 / h)
    with pm.Model() as model:
        mu = pm.Normal("mu", m0, s0)
        sigma = pm.Gamma("sigma", alpha=a, beta=b)
        cls(
            "z", mu, sigma, lower=args.lower, upper=args.upper, epsilon=data["epsilon"],
            observed=data["z"],
        )  # fmt: skip
    return Built(
        model,
        f"z ~ {cls.__name__}(mu, sigma, lower={fmt(args.lower)}, "
        f"upper={fmt(args.upper)}, {data['epsilon_desc']})",
        f"mu ~ Normal({fmt(m0)}, {fmt(s0)}), sigma ~ Gamma(alpha={fmt(a)}, beta={fmt(b)})",
        ["mu", "sigma"],
    )


# --------------------------------------------------------------------------------------------
# clipped exponential
# --------------------------------------------------------------------------------------------


_CLIPPED_EXPONENTIAL_OPTIONS = (
    Opt("--upper", "upper clipping bound (> 0; lower is 0)", type=finite_float, required=True),
    gamma_prior_opt("lam", BOUND_SCALED),
)


def _clipped_exponential_check(args):
    if args.upper <= 0:
        raise InputError(f"--upper must be > 0 for clipped-exponential, got {fmt(args.upper)}")
    check_scale(args.upper, args)


def _clipped_exponential_build(args, data):
    import pymc as pm

    cls = _clipped_class(data, "LaplacePerturbedClippedExponential")
    a, b = args.lam_prior or (2.0, args.upper / 2)
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=a, beta=b)
        cls("z", lam, upper=args.upper, epsilon=data["epsilon"], observed=data["z"])
    return Built(
        model,
        f"z ~ {cls.__name__}(lam, upper={fmt(args.upper)}, {data['epsilon_desc']})",
        f"lam ~ Gamma(alpha={fmt(a)}, beta={fmt(b)})",
        ["lam"],
    )


# --------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------


CLIPPED_NORMAL = ModelSpec(
    "clipped-normal",
    "LaplacePerturbedClippedNormal",
    SCALAR,
    _CLIPPED_NORMAL_OPTIONS,
    _clipped_normal_check,
    _clipped_normal_build,
    "reports of Normal values clipped to [lower, upper] plus Laplace noise",
    doc(
        """\
    Model: x_i ~ Normal(mu, sigma); each report is
      z_i = clip(x_i, lower, upper) + Laplace(0, (upper - lower) / epsilon_i)
    fitted with pymc_dpnoise.LaplacePerturbedClippedNormal (x_i marginalised).

    Default priors, scaled to the bounds (h = (upper - lower) / 2):
      mu    ~ Normal((lower + upper) / 2, h)
      sigma ~ Gamma(alpha=2, beta=2 / h)      (prior mean h)
    e.g. for [-5, 5]: mu ~ Normal(0, 5), sigma ~ Gamma(2, 0.4).""",
    ),
    synopsis="--lower --upper, --epsilon or --epsilon-column",
)


CLIPPED_EXPONENTIAL = ModelSpec(
    "clipped-exponential",
    "LaplacePerturbedClippedExponential",
    SCALAR,
    _CLIPPED_EXPONENTIAL_OPTIONS,
    _clipped_exponential_check,
    _clipped_exponential_build,
    "reports of Exponential values clipped to [0, upper] plus Laplace noise",
    doc(
        """\
    Model: x_i ~ Exponential(rate lam); each report is
      z_i = min(x_i, upper) + Laplace(0, upper / epsilon_i)
    fitted with pymc_dpnoise.LaplacePerturbedClippedExponential (x_i marginalised).

    Default prior, scaled to the bound:
      lam ~ Gamma(alpha=2, beta=upper / 2)     (prior mean of lam: 4 / upper)
    e.g. for upper = 5: lam ~ Gamma(2, 2.5).""",
    ),
    synopsis="--upper, --epsilon or --epsilon-column",
)

#: the family's commands (in ``fit --help`` order) and its worked example
FAMILY = Family(
    "clipped",
    "Clipped values plus Laplace noise (local DP)",
    "Every person clips their value to declared bounds and reports it plus Laplace noise of "
    "scale (upper - lower) / ε (the LDP paper's clipped normal and exponential).  One report "
    "per row; the budget is one --epsilon or a column of per-report budgets "
    "(--epsilon-column).  Files of at least 100 000 reports with one --epsilon are fitted "
    "through the binned summary classes (LaplacePerturbedClippedNormalSummary, ...).",
    (CLIPPED_NORMAL, CLIPPED_EXPONENTIAL),
    Example(
        """\
import numpy as np
import pandas as pd
from pymc_dpnoise import mechanisms

rng = np.random.default_rng(1)
# the clean values (never released): mu = 1, sigma = 2
x = rng.normal(1.0, 2.0, size=5000)
# each person's report: clipped to [-5, 5] plus Laplace noise, epsilon 1
z = mechanisms.perturb_clipped(x, -5.0, 5.0, 1.0, rng)
pd.DataFrame({"z": z}).to_csv("reports.csv", index=False)
""",
        "pymc-dpnoise fit clipped-normal reports.csv --lower -5 --upper 5 --epsilon 1",
        "The reports have a standard deviation of about 14 (mostly Laplace noise of scale 10), "
        "which a model that ignores the noise would take for sigma; the 94% HDIs of mu and "
        "sigma should cover the truth (1 and 2), sigma's being the wider: the noise hides it.",
    ),
)
