"""``fit ss-normal``: a GLM from released noisy sufficient statistics (the GLM paper).

One column holds the m released statistics (:data:`STATISTICS`, the layout of
:func:`~pymc_dpnoise.mechanisms.sufficient_statistics`); the noise is given by its sd, a
column of variances or the release's budget.
"""

from __future__ import annotations

from .._base import InputError, int_between, positive_float
from .._columns import check_values, pick_column, reserved_columns
from .._options import R_OPT, column_opt, delta_opt, feature_cov, regression_priors
from .._spec import Built, DataKind, Example, Family, ModelSpec, Opt, doc, fmt

# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


def _statistics_read(table, args):
    import numpy as np

    from ...math.sufficient import stat_dim

    reserved = reserved_columns(table, args, "noise_var_column")
    idx = pick_column(table, args.column, reserved, "statistics")
    (z,) = table.read([idx])
    check_values(table, idx, z, "report")
    m = len(z)
    d = next((d for d in range(1, 200) if stat_dim(args.glm, d) == m), None)
    if d is None:
        raise InputError(
            f"{table.display}: {m} statistics is not a valid size for glm={args.glm} "
            f"(d = 1, 2, 3 need {', '.join(str(stat_dim(args.glm, k)) for k in (1, 2, 3))})"
        )
    if args.noise_var_column is not None:
        vi = table.resolve(args.noise_var_column, "noise variance column")
        (var,) = table.read([vi])
        check_values(table, vi, var, "variance")
        noise_desc = f"noise variances from column {table.label(vi)}"
    else:
        sigma = _ss_sigma(args)
        var = np.full(m, sigma**2 * (args.n if args.local else 1.0))
        noise_desc = f"noise sd {fmt(sigma)} per {'record' if args.local else 'release'}"
    return dict(
        z=z,
        d=d,
        noise_cov=np.diag(var),
        noise_desc=noise_desc,
        read=f"Read m = {m} statistics (d = {d}) from {table.display} (column {table.label(idx)}).",
    )


STATISTICS = DataKind(
    (
        column_opt(
            "--column",
            "column holding the m released statistics, one per row, in the layout of "
            "pymc_dpnoise.mechanisms.sufficient_statistics (default: the one column that no other option "
            "uses; required if there are several)",
        ),
        column_opt(
            "--noise-var-column",
            "column of the total noise variance of each statistic (instead of --noise-sd "
            "or --epsilon/--delta)",
        ),
    ),
    _statistics_read,
)


# --------------------------------------------------------------------------------------------
# model
# --------------------------------------------------------------------------------------------


def _order(text):
    if text == "quadrature":
        return text
    return int_between(1)(text)


_SS_OPTIONS = (
    Opt(
        "--glm",
        "the GLM whose statistics were released",
        choices=("linear", "logistic", "poisson"),
        required=True,
    ),
    Opt("--n", "number of records", type=int_between(1), required=True),
    Opt(
        "--noise-sd",
        "sd σ of the Gaussian noise on each statistic (per release, or per record with --local)",
        type=positive_float,
    ),
    Opt(
        "--epsilon",
        "budget of the release (with --delta: σ as release_sufficient_statistics computes it)",
        type=positive_float,
        metavar="E",
    ),
    delta_opt("δ of the release"),
    R_OPT,
    Opt(
        "--Ry",
        "clipping bound of the response (with --epsilon)",
        type=positive_float,
        default=1.0,
        dest="Ry",
    ),
    Opt(
        "--local",
        "every record added its own noise (local DP): total variance n σ²",
        action="store_true",
    ),
    Opt("--order", "logistic: odd Taylor order or 'quadrature'", type=_order, default="quadrature"),
    *regression_priors(theta_sd=2.5, tau_sd=2.5, sigma_sd=2.0),
)


def _ss_check(args):
    n_given = sum(x is not None for x in (args.noise_sd, args.noise_var_column))
    budget = args.epsilon is not None or args.delta is not None
    if n_given + budget != 1:
        raise InputError(
            "give exactly one of --noise-sd, --noise-var-column, or --epsilon with --delta"
        )
    if budget and (args.epsilon is None or args.delta is None):
        raise InputError("--epsilon and --delta go together")
    if args.glm == "logistic" and args.order != "quadrature" and args.order % 2 == 0:
        raise InputError(f"--order must be odd or 'quadrature', got {args.order}")


def _ss_sigma(args):
    if args.noise_sd is not None:
        return args.noise_sd
    from ...mechanisms.core import analytic_gaussian_sigma
    from ...mechanisms.sufficient import ss_sensitivity

    return float(
        analytic_gaussian_sigma(args.epsilon, args.delta, ss_sensitivity(args.glm, args.R, args.Ry))
    )


def _ss_build(args, data):
    import pymc as pm

    from ...distributions import SSNormalApprox

    d = data["d"]
    kw = {}
    with pm.Model(coords={"feature": [f"x{j}" for j in range(d)]}) as model:
        theta, cov, text = feature_cov(args, d)
        params = ["theta", "cov_tau"]
        if args.glm == "linear":
            kw["sigma"] = pm.HalfNormal("sigma", args.sigma_sd)
            text += f", sigma ~ HalfNormal({fmt(args.sigma_sd)})"
            params.insert(1, "sigma")
        if args.glm == "logistic":
            kw["order"] = args.order
        SSNormalApprox(
            "z", theta, cov, float(args.n), data["noise_cov"], args.glm, observed=data["z"], **kw
        )
    return Built(
        model,
        f"z ~ SSNormalApprox(theta, Σ, n={args.n}, glm={args.glm}, {data['noise_desc']})",
        text,
        params,
    )


# --------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------


SS_NORMAL = ModelSpec(
    "ss-normal",
    "SSNormalApprox",
    STATISTICS,
    _SS_OPTIONS,
    _ss_check,
    _ss_build,
    "GLM from released noisy sufficient statistics (normal approximation)",
    doc(
        """\
    A data holder released the sum of per-record sufficient statistics of a linear,
    logistic or Poisson GLM plus Gaussian noise (central DP, or --local for one
    release per record).  Fitted with pymc_dpnoise.SSNormalApprox.  The file holds
    the m statistics in one column (layout of
    pymc_dpnoise.mechanisms.sufficient_statistics; d is inferred from m).

    Default priors (the GLM experiments'): theta_j ~ Normal(0, 2.5); Σ = diag(tau) Ω
    diag(tau), tau_j ~ HalfNormal(2.5), Ω ~ LKJ(2); linear: sigma ~ HalfNormal(2).""",
    ),
    metavar="STATISTICS",
    what="file of released statistics, one per row",
    synopsis="--glm --n; --noise-sd, --noise-var-column, or --epsilon --delta [--R --Ry]; [--local]",
)

#: the family's commands (in ``fit --help`` order) and its worked example
FAMILY = Family(
    "sufficient",
    "Released sufficient statistics of a GLM (central or local DP)",
    "A data holder releases the sum over records of the sufficient statistics of a linear, "
    "logistic or Poisson GLM plus Gaussian noise (or, with --local, every record adds its "
    "own noise), as pymc_dpnoise.mechanisms.release_sufficient_statistics does; the file "
    "holds the m statistics in one column.  The GLM paper's normal approximation.",
    (SS_NORMAL,),
    Example(
        """\
import numpy as np
import pandas as pd
from pymc_dpnoise import mechanisms

rng = np.random.default_rng(6)
# 5000 records; theta = (0.8, -0.4), residual sd 0.2
X = rng.normal(0.0, 0.3, size=(5000, 2))
y = X @ [0.8, -0.4] + rng.normal(0.0, 0.2, size=5000)
# the sum of their linear-GLM statistics, at epsilon = 1, delta = 1e-5
rel = mechanisms.release_sufficient_statistics(
    X, y, "linear", 1.0, 1e-5, rng
)
pd.DataFrame({"s": rel.z}).to_csv("statistics.csv", index=False)
""",
        "pymc-dpnoise fit ss-normal statistics.csv --glm linear --n 5000 --epsilon 1 --delta 1e-5",
        "The file has m = 6 rows (d = 2 features); the posteriors of theta[x0] and theta[x1] "
        "are centred near 0.8 and -0.4.",
    ),
)
