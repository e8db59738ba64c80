"""Options, priors and option checks shared by several model families.

Column options (:func:`column_opt`, :func:`columns_opt`), the budget and record-count options
of reports and releases, the prior options (:func:`prior_opt`, :func:`gamma_prior_opt`, the
normal and regression priors) and the checks of scales and sensitivities.  Imports only
:mod:`._base` and :mod:`._spec` (NumPy and PyMC inside functions, at build time).
"""

from __future__ import annotations

from ._base import InputError, column_list, finite_float, int_between, positive_float, probability
from ._spec import OneOf, Opt, fmt

# --------------------------------------------------------------------------------------------
# column options and budgets
# --------------------------------------------------------------------------------------------


def column_opt(flag, help):
    """An option naming one column (header name or 0-based index)."""
    return Opt(flag, help, metavar="NAME_OR_INDEX", default=None)


def columns_opt(flag, help):
    """An option naming several columns, separated by commas."""
    return Opt(flag, help, type=column_list, metavar="A,B,...", default=None)


EPSILON = Opt("--epsilon", "privacy budget ε > 0 of every report", type=positive_float, metavar="E")


#: --epsilon E or --epsilon-column NAME, exactly one
EPSILON_OR_COLUMN = OneOf(
    EPSILON,
    column_opt("--epsilon-column", "column of per-report budgets ε > 0 (personalised privacy)"),
)


COUNTS = column_opt(
    "--counts-column",
    "column of multiplicities: each row is a report pattern seen this many times "
    "(default: every row is one report)",
)


#: --n N or --n-column NAME, exactly one (central-DP releases: the records behind each)
N_OR_COLUMN = OneOf(
    Opt("--n", "number of records behind every release", type=int_between(1), metavar="N"),
    column_opt("--n-column", "column of the number of records behind each release"),
)


#: the budget of central-DP releases: --epsilon E or --epsilon-column NAME, exactly one
RELEASE_EPSILON = OneOf(
    Opt("--epsilon", "privacy budget ε > 0 of every release", type=positive_float, metavar="E"),
    column_opt("--epsilon-column", "column of per-release budgets ε > 0"),
)


# --------------------------------------------------------------------------------------------
# priors
# --------------------------------------------------------------------------------------------


def prior_opt(flag, metavar, help, *, type=positive_float, default=None):
    """An option taking the two parameters of a prior."""
    return Opt(flag, help, nargs=2, type=type, metavar=metavar, default=default, prior=True)


def gamma_prior_opt(name, default_text, default=None):
    """``--NAME-prior ALPHA BETA``: NAME ~ Gamma(shape ALPHA, rate BETA)."""
    return prior_opt(
        f"--{name}-prior",
        ("ALPHA", "BETA"),
        f"{name} ~ Gamma(shape ALPHA, rate BETA) (default: {default_text})",
        default=default,
    )


BOUND_SCALED = "bound-scaled, see above"


#: the priors of a normal's mu and sigma (default: scaled to the bounds)
NORMAL_PRIORS = (
    prior_opt(
        "--mu-prior",
        ("MEAN", "SD"),
        f"mu ~ Normal(MEAN, SD) (default: {BOUND_SCALED})",
        type=finite_float,
    ),
    gamma_prior_opt("sigma", BOUND_SCALED),
)


def regression_priors(*, theta_sd, tau_sd, sigma_sd=None):
    """--theta-sd, --tau-sd, --eta (and --sigma-sd) with these defaults."""
    priors = (
        Opt(
            "--theta-sd",
            "theta_j ~ Normal(0, THETA_SD)",
            type=positive_float,
            default=theta_sd,
            prior=True,
        ),
        Opt(
            "--tau-sd",
            "feature scales tau_j ~ HalfNormal(TAU_SD) (Σ = diag(tau) Ω diag(tau))",
            type=positive_float,
            default=tau_sd,
            prior=True,
        ),
        Opt(
            "--eta",
            "feature correlations Ω ~ LKJ(ETA)",
            type=positive_float,
            default=2.0,
            prior=True,
        ),
    )
    if sigma_sd is None:
        return priors
    return (
        *priors,
        Opt(
            "--sigma-sd",
            "residual sd sigma ~ HalfNormal(SIGMA_SD)",
            type=positive_float,
            default=sigma_sd,
            prior=True,
        ),
    )


def feature_cov(args, d):
    """theta and Σ priors shared by the regression models; returns (theta, cov, text)."""
    import pymc as pm

    from ..priors import scaled_lkj_cov

    theta = pm.Normal("theta", 0.0, args.theta_sd, dims="feature")
    if d >= 2:
        chol, _, _ = scaled_lkj_cov("cov", d, eta=args.eta, tau_sigma=args.tau_sd, dims="feature")
        cov = chol @ chol.T
        text = f"Σ = diag(tau) Ω diag(tau), tau_j ~ HalfNormal({fmt(args.tau_sd)}), Ω ~ LKJ({fmt(args.eta)})"
    else:
        tau = pm.HalfNormal("cov_tau", args.tau_sd, dims="feature")
        cov = (tau * tau)[:, None]
        text = f"Σ = tau², tau ~ HalfNormal({fmt(args.tau_sd)})"
    return theta, cov, f"theta_j ~ Normal(0, {fmt(args.theta_sd)}), {text}"


# --------------------------------------------------------------------------------------------
# protocol options and checks
# --------------------------------------------------------------------------------------------


def delta_opt(help):
    return Opt("--delta", help, type=probability, metavar="D")


R_OPT = Opt(
    "--R",
    "L2 clipping norm of the feature rows (with --epsilon)",
    type=positive_float,
    default=1.0,
    dest="R",
)


def check_scale(width, args):
    import math

    eps = getattr(args, "epsilon", None)
    if not math.isfinite(width):
        raise InputError("the bounds are too far apart: upper - lower overflows")
    if eps is not None and not math.isfinite(width / eps):
        raise InputError(
            f"--epsilon {fmt(eps)} is too small: the Laplace scale {fmt(width)} / epsilon overflows"
        )


def min_sensitivity(args, minimum, why):
    """Refuse ``--sensitivity`` below ``minimum``: a model with less noise than the release
    had (a sensitivity no release can have for these options) would overstate what the
    releases say."""
    if args.sensitivity is not None and args.sensitivity < minimum:
        raise InputError(
            f"--sensitivity {fmt(args.sensitivity)} is below the minimum {fmt(minimum)} "
            f"({why}); a smaller value would model less noise than the release added"
        )
