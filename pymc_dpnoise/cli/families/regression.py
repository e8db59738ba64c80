"""``fit linreg`` and ``fit logreg``: regression on perturbed inputs (local DP).

Each row is one person's report: d noisy feature columns and the noisy response
(:data:`LINREG_DATA`) or the randomized-response label (:data:`LOGREG_DATA`).  The noise is
given by its scales or by the release's budget, from which the scales are computed as
:func:`~pymc_dpnoise.mechanisms.perturb_linreg` / :func:`~pymc_dpnoise.mechanisms.perturb_logreg`
did.
"""

from __future__ import annotations

from .._base import InputError, positive_float, probability
from .._columns import check_values, column_names, distinct_columns
from .._options import R_OPT, column_opt, columns_opt, delta_opt, feature_cov, regression_priors
from .._spec import Built, DataKind, Example, Family, ModelSpec, Opt, doc, fmt

# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


def _regression_columns(table, args):
    """(feature column indices, response column index) from --x-columns / --y-column."""
    y_idx = table.n_columns - 1 if args.y_column is None else table.resolve(args.y_column)
    if args.x_columns is None:
        x_idx = [i for i in range(table.n_columns) if i != y_idx]
    else:
        x_idx = distinct_columns(
            table, [(c, table.resolve(c)) for c in args.x_columns], "--x-columns"
        )
        if y_idx in x_idx:
            raise InputError(
                f"--x-columns: column {table.label(y_idx)} is also the response column"
            )
    if not x_idx:
        raise InputError(f"{table.display}: one column; need d >= 1 feature columns and a response")
    return x_idx, y_idx


def _regression_read(table, args, *, labels):
    import numpy as np

    x_idx, y_idx = _regression_columns(table, args)
    cols = table.read([*x_idx, y_idx])
    for i, c in zip(x_idx, cols, strict=False):
        check_values(table, i, c, "report")
    check_values(table, y_idx, cols[-1], "label" if labels else "report")
    z = np.column_stack(cols)
    if len(z) < 2:
        raise InputError(f"{table.display}: only {len(z)} report, need at least 2")
    features = column_names(table, x_idx, lambda i: f"x{i}", "features")
    return dict(
        z=z,
        features=features,
        read=(
            f"Read {len(z)} reports of d = {len(x_idx)} features from {table.display} "
            f"(response column {table.label(y_idx)})."
        ),
    )


def _cov_draws(post, d):
    """Σ at every draw of the CLI's regression models (:func:`.._options.feature_cov`)."""
    import numpy as np

    tau = np.asarray(post["cov_tau"], dtype=float)
    if d == 1:
        return (tau * tau)[..., None]
    chol = tau[..., :, None] * np.asarray(post["cov_corr"], dtype=float)
    return chol @ np.swapaxes(chol, -1, -2)


def logreg_summary_data(table, args):
    """``fit logreg`` on at least ``summaries.SUMMARY_THRESHOLD`` reports: the
    :class:`~pymc_dpnoise.PerturbedLogRegSummary` of the file, built by DuckDB streaming it
    (nothing loaded, no ``--max-rows`` limit).

    None below the threshold or with ``--approximation chebyshev`` (the exact per-report
    likelihood).  The exact likelihood is also used, with a ``note``, where the summary's
    remainder bound exceeds its tolerance already around the pilot, or the label budget is
    above what the summary accepts.  The returned ``check_posterior`` reports the bound at
    the posterior mean and refuses a posterior whose mean the bound does not certify.
    """
    import numpy as np

    from ...distributions.regression import LOGREG_SUMMARY_TOL
    from ...summaries import MAX_LOGREG_EPSILON, SUMMARY_THRESHOLD, summarize_logreg

    if args.approximation != "quadrature":
        return None
    x_idx, y_idx = _regression_columns(table, args)
    n = table.count_rows()
    if n < SUMMARY_THRESHOLD:
        return None
    sx, ey, _ = _logreg_noise(args)

    def exact(why):
        try:
            data = _regression_read(table, args, labels=True)
        except InputError as exc:
            raise InputError(f"{exc} (the exact likelihood is needed: {why})") from None
        data["note"] = f"{why}: the exact per-report likelihood is used"
        return data

    if ey > MAX_LOGREG_EPSILON:
        return exact(
            f"epsilon_y = {ey:g} is above {MAX_LOGREG_EPSILON:g}, where the "
            "logistic-regression summary is not accurate"
        )
    cols = [*x_idx, y_idx]
    # the columns keep their names, so that the summary's errors name them
    names = [table.column_name(i) for i in cols]
    rel = table.relation(cols)
    try:
        s = summarize_logreg(rel, sx, ey, columns=names)
    except ValueError as exc:  # NULL / non-numeric / non-finite reports, labels not 0/1
        raise InputError(f"{table.display}: {' '.join(str(exc).split())}") from None
    tol = LOGREG_SUMMARY_TOL
    if not s.mode_bound <= tol:
        return exact(
            f"the logistic-regression summary's error bound is {s.mode_bound:.3g} nats at "
            f"its estimate of the posterior mode, above the tolerance {tol:g}"
        )
    d = len(x_idx)

    def check_posterior(idata):
        post = idata.posterior
        theta = np.asarray(post["theta"], dtype=float)
        cov = _cov_draws(post, d)
        at_mean = float(s.bound(theta.mean(axis=(0, 1)), cov=cov.mean(axis=(0, 1))))
        bounds = s.bound(theta, cov=cov)
        worst, frac = float(bounds.max()), float(np.mean(bounds > tol))
        out = [
            (
                "note",
                f"logistic-regression summary: error bound {at_mean:.2g} nats at the posterior "
                f"mean, at most {worst:.2g} over the {bounds.size} draws (tolerance {tol:g})",
            )
        ]
        if not at_mean <= tol:
            out.append(
                (
                    "error",
                    f"the logistic-regression summary is not accurate at the posterior mean "
                    f"(bound {at_mean:.3g} nats > {tol:g}): fit fewer reports (below "
                    f"{SUMMARY_THRESHOLD}) or PerturbedLogReg in Python",
                )
            )
        elif frac > 0:
            out.append(
                (
                    "warning",
                    f"the summary's bound exceeds {tol:g} nats at {frac:.1%} of the draws "
                    "(the likelihood is penalised there; the tails may be slightly too light)",
                )
            )
        return out

    features = column_names(table, x_idx, lambda i: f"x{i}", "features")
    return dict(
        z=s,
        summary=s,
        features=features,
        check_posterior=check_posterior,
        read=(
            f"Read {n} reports of d = {d} features from {table.display} (response column "
            f"{table.label(y_idx)}) into a logistic-regression summary of {s.packed.size} "
            f"numbers ({s.passes} passes; error bound {s.mode_bound:.2g} nats at the mode, "
            f"{s.probe_bound:.2g} 4 sd from it; the exact per-report likelihood is used below "
            f"{SUMMARY_THRESHOLD} reports)."
        ),
    )


_REGRESSION_COLUMNS = (
    columns_opt(
        "--x-columns", "the d noisy feature columns (default: every column except the response)"
    ),
    column_opt(
        "--y-column",
        "the noisy response (linear) or reported label 0/1 (logistic) (default: the last column)",
    ),
)


LINREG_DATA = DataKind(_REGRESSION_COLUMNS, lambda t, a: _regression_read(t, a, labels=False))


LOGREG_DATA = DataKind(_REGRESSION_COLUMNS, lambda t, a: _regression_read(t, a, labels=True))


# --------------------------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------------------------


_SIGMA_X = Opt("--sigma-x", "sd of the Gaussian noise on each feature", type=positive_float)


def _budget(*, response):
    """The release's budget, from which the noise scales are computed as the mechanism did."""
    r_y = Opt(
        "--R-y",
        "clipping bound of the response (with --epsilon)",
        type=positive_float,
        default=2.0,
        dest="R_y",
    )
    return (
        Opt(
            "--epsilon",
            "total budget ε of each report (with --delta: the noise scales are "
            "computed as the release did)",
            type=positive_float,
            metavar="E",
        ),
        delta_opt("δ of the Gaussian mechanism"),
        R_OPT,
        *((r_y,) if response else ()),
        Opt(
            "--c",
            "share of ε spent on the response or label (with --epsilon)",
            type=probability,
            default=0.5,
        ),
    )


_LINREG_OPTIONS = (
    _SIGMA_X,
    Opt("--sigma-y", "sd of the Gaussian noise on the response", type=positive_float),
    *_budget(response=True),
    *regression_priors(theta_sd=2.0, tau_sd=1.0, sigma_sd=1.0),
)


_LOGREG_OPTIONS = (
    _SIGMA_X,
    Opt("--epsilon-y", "budget of the randomized response on the label", type=positive_float),
    *_budget(response=False),
    Opt(
        "--approximation",
        "how E[sigmoid] is computed (see PerturbedLogReg)",
        choices=("quadrature", "chebyshev"),
        default="quadrature",
    ),
    *regression_priors(theta_sd=2.0, tau_sd=1.0),
)


def _noise_check(args, direct: tuple[str, ...]):
    given = [getattr(args, n) is not None for n in direct]
    budget = args.epsilon is not None or args.delta is not None
    opts = " and ".join("--" + n.replace("_", "-") for n in direct)
    if any(given) and budget:
        raise InputError(f"give either {opts}, or --epsilon and --delta, not both")
    if budget and (args.epsilon is None or args.delta is None):
        raise InputError("--epsilon and --delta go together")
    if not budget and not all(given):
        raise InputError(f"give the noise scales ({opts}) or the budget (--epsilon and --delta)")


def _linreg_check(args):
    _noise_check(args, ("sigma_x", "sigma_y"))


def _logreg_check(args):
    _noise_check(args, ("sigma_x", "epsilon_y"))


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------


def _linreg_noise(args):
    if args.sigma_x is not None:
        return args.sigma_x, args.sigma_y, "given"
    from ...mechanisms.core import analytic_gaussian_sigma
    from ...mechanisms.regression import split_epsilon

    eps_x, eps_y = split_epsilon(args.epsilon, args.c)
    sx = float(analytic_gaussian_sigma(eps_x, 0.5 * args.delta, 2.0 * args.R))
    sy = float(analytic_gaussian_sigma(eps_y, 0.5 * args.delta, 2.0 * args.R_y))
    return sx, sy, "from epsilon, delta as perturb_linreg"


def _logreg_noise(args):
    if args.sigma_x is not None:
        return args.sigma_x, args.epsilon_y, "given"
    from ...mechanisms.core import analytic_gaussian_sigma
    from ...mechanisms.regression import split_epsilon

    eps_x, eps_y = split_epsilon(args.epsilon, args.c)
    sx = float(analytic_gaussian_sigma(eps_x, args.delta, 2.0 * args.R))
    return sx, eps_y, "from epsilon, delta as perturb_logreg"


def _linreg_build(args, data):
    import pymc as pm

    from ...distributions import PerturbedLinReg

    sx, sy, how = _linreg_noise(args)
    with pm.Model(coords={"feature": data["features"]}) as model:
        theta, cov, text = feature_cov(args, len(data["features"]))
        sigma = pm.HalfNormal("sigma", args.sigma_sd)
        PerturbedLinReg(
            "z", theta=theta, sigma=sigma, cov=cov, sigma_x=sx, sigma_y=sy, observed=data["z"]
        )
    return Built(
        model,
        f"z ~ PerturbedLinReg(theta, sigma, Σ, sigma_x={fmt(sx)}, sigma_y={fmt(sy)} ({how}))",
        f"{text}, sigma ~ HalfNormal({fmt(args.sigma_sd)})",
        ["theta", "sigma", "cov_tau"],
    )


def _logreg_build(args, data):
    import pymc as pm

    from ...distributions import PerturbedLogReg
    from ...distributions.regression import PerturbedLogRegSummary

    sx, ey, how = _logreg_noise(args)
    s = data.get("summary")
    with pm.Model(coords={"feature": data["features"]}) as model:
        theta, cov, text = feature_cov(args, len(data["features"]))
        if s is not None:
            PerturbedLogRegSummary("z", theta=theta, cov=cov, sigma_x=sx, observed=s)
            model.set_initval(theta, s.theta_pilot)
            return Built(
                model,
                f"z ~ PerturbedLogRegSummary(theta, Σ, sigma_x={fmt(sx)}, epsilon_y={fmt(ey)} "
                f"({how}); summary of {s.n} reports)",
                text,
                ["theta", "cov_tau"],
            )
        PerturbedLogReg(
            "z",
            theta=theta,
            cov=cov,
            sigma_x=sx,
            epsilon_y=ey,
            approximation=args.approximation,
            observed=data["z"],
        )
    return Built(
        model,
        f"z ~ PerturbedLogReg(theta, Σ, sigma_x={fmt(sx)}, epsilon_y={fmt(ey)} ({how}), "
        f"{args.approximation})",
        text,
        ["theta", "cov_tau"],
    )


_REG_PRIOR = """

    Default priors (the package's SBC-checked ones): theta_j ~ Normal(0, 2); the feature
    covariance Σ = diag(tau) Ω diag(tau) with tau_j ~ HalfNormal(1), Ω ~ LKJ(2)"""


# --------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------


LINREG = ModelSpec(
    "linreg",
    "PerturbedLinReg",
    LINREG_DATA,
    _LINREG_OPTIONS,
    _linreg_check,
    _linreg_build,
    "linear regression on Gaussian-perturbed features and responses",
    doc(
        """\
    Each person holds x ~ N(0, Σ), y = theta'x + N(0, sigma²) and reports
    x + N(0, sigma_x² I) and y + N(0, sigma_y²).  Fitted with
    pymc_dpnoise.PerturbedLinReg.  Give the noise scales (--sigma-x, --sigma-y) or
    the release's budget (--epsilon, --delta, and --R, --R-y, --c as in
    pymc_dpnoise.mechanisms.perturb_linreg).""",
        _REG_PRIOR,
        ", sigma ~ HalfNormal(1).",
    ),
    synopsis="--sigma-x --sigma-y, or --epsilon --delta [--R --R-y --c]",
)


LOGREG = ModelSpec(
    "logreg",
    "PerturbedLogReg",
    LOGREG_DATA,
    _LOGREG_OPTIONS,
    _logreg_check,
    _logreg_build,
    "logistic regression on perturbed features and randomized-response labels",
    doc(
        """\
    Each person holds x ~ N(0, Σ), y ~ Bernoulli(sigmoid(theta'x)) and reports
    x + N(0, sigma_x² I) and y through randomized response with budget epsilon_y.
    Fitted with pymc_dpnoise.PerturbedLogReg.  Give --sigma-x and --epsilon-y, or
    the release's budget (--epsilon, --delta, --R, --c as in
    pymc_dpnoise.mechanisms.perturb_logreg).  The label column holds 0/1.
    Files of at least 100 000 reports are fitted through
    pymc_dpnoise.PerturbedLogRegSummary (logp cost flat in N); its error bound
    (nats) at the posterior mean is printed as a note, the fit is refused where
    it exceeds 1 nat, and the exact likelihood is used where the bound exceeds it
    already at the summary's estimate of the mode.""",
        _REG_PRIOR,
        ".",
    ),
    synopsis="--sigma-x --epsilon-y, or --epsilon --delta [--R --c]",
)

#: the family's commands (in ``fit --help`` order) and its worked example
FAMILY = Family(
    "regression",
    "Regression on perturbed inputs (local DP)",
    "Every person holds features x and a response y and reports x plus Gaussian noise, and "
    "y plus Gaussian noise (linreg) or the 0/1 label through randomized response (logreg), "
    "as pymc_dpnoise.mechanisms.perturb_linreg and perturb_logreg do.  Give the noise scales, "
    "or the release's budget (--epsilon, --delta) from which they are computed as the "
    "mechanism did.",
    (LINREG, LOGREG),
    Example(
        """\
import numpy as np
import pandas as pd
from pymc_dpnoise import mechanisms

rng = np.random.default_rng(5)
# 20000 people; theta = (1, -0.5), residual sd 0.3
X = rng.normal(0.0, 0.35, size=(20000, 2))
y = X @ [1.0, -0.5] + rng.normal(0.0, 0.3, size=20000)
# each reports x and y with Gaussian noise at epsilon = 16, delta = 1e-5
rel = mechanisms.perturb_linreg(X, y, 16.0, 1e-5, rng)
table = pd.DataFrame(rel.reports, columns=["x1", "x2", "y"])
table.to_csv("regression.csv", index=False)
""",
        "pymc-dpnoise fit linreg regression.csv --epsilon 16 --delta 1e-5",
        "The likelihood line shows the noise scales the budget implies (sigma_x about 1.2, "
        "sigma_y about 2.5, against features of sd 0.35); the posteriors of theta[x1] and "
        "theta[x2] should cover 1 and -0.5, with sds of about 0.3 even from 20000 reports at "
        "this large budget: local-DP regression needs many reports (at epsilon 4, 2000 "
        "reports leave theta at its prior).",
    ),
)
