"""``fit truncated-*`` and ``fit noisy-multinomial``: exponential-family releases (central DP).

Bernstein & Sheldon's releases: the noisy sum of the records inside declared bounds
(:data:`RELEASES`; ``truncated-exponential``, ``truncated-poisson``), the noisy pair
(sum x, sum x²) of Gaussian records (:data:`PAIRS`; ``truncated-normal``) and noisy category
counts (:data:`COUNT_VECTORS`; ``noisy-multinomial``), one release per row with the number of
records behind it.
"""

from __future__ import annotations

from .._base import InputError, finite_float, positive_float
from .._checks import truncated_sensitivity
from .._columns import (
    candidates,
    check_values,
    chosen_columns,
    column_names,
    read_epsilon,
    scalar_read,
    value_or_column,
)
from .._options import (
    BOUND_SCALED,
    N_OR_COLUMN,
    NORMAL_PRIORS,
    RELEASE_EPSILON,
    check_scale,
    column_opt,
    columns_opt,
    gamma_prior_opt,
    min_sensitivity,
)
from .._spec import Built, DataKind, Example, Family, ModelSpec, Opt, doc, fmt

# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


#: released noisy sums, one per row, with the records behind each (truncated families)
RELEASES = DataKind(
    (
        column_opt(
            "--column",
            "column of released noisy sums, one release per row (default: the one column "
            "that no other option uses; required if there are several)",
        ),
        N_OR_COLUMN,
        RELEASE_EPSILON,
    ),
    lambda t, a: scalar_read(t, a, what="releases", min_rows=1),
)


def _release_columns(table, args, idx):
    """The values of columns ``idx`` (one release per row) with ``n`` and ``epsilon``."""
    import numpy as np

    z = np.column_stack(table.read(idx))
    for j, i in enumerate(idx):
        check_values(table, i, z[:, j], "report")
    eps, eps_desc, _ = read_epsilon(table, args, set(idx))
    n, n_desc, _ = value_or_column(table, args, "n", "records", set(idx))
    return dict(z=z, epsilon=eps, epsilon_desc=eps_desc, n=n, n_desc=n_desc)


def _count_vectors_read(table, args):
    idx = chosen_columns(table, args, ("n_column", "epsilon_column"))
    if len(idx) < 2:
        raise InputError(
            f"{table.display}: {len(idx)} count column(s); a released count vector has k >= 2 "
            "categories"
        )
    out = _release_columns(table, args, idx)
    return dict(
        out,
        items=column_names(table, idx, str, "count columns (categories)"),
        read=(
            f"Read {len(out['z'])} release(s) of k = {len(idx)} noisy counts from {table.display}."
        ),
    )


#: released noisy count vectors: k count columns per row (one release per row)
COUNT_VECTORS = DataKind(
    (
        columns_opt(
            "--columns",
            "the k columns of noisy category counts, names or 0-based indices separated by "
            "commas (default: every column no other option uses)",
        ),
        N_OR_COLUMN,
        RELEASE_EPSILON,
    ),
    _count_vectors_read,
)


def _pair_read(table, args):
    """Released pairs (noisy sum of x, noisy sum of x^2): two columns per row."""

    idx = chosen_columns(table, args, ("n_column", "epsilon_column"))
    if args.columns is not None and len(idx) != 2:
        raise InputError(
            f"--columns: a release is two noisy sums (of x and of x^2), got {len(idx)} column(s)"
        )
    if len(idx) < 2:
        raise InputError(
            f"{table.display}: {len(idx)} column(s) left for the releases; a release is two "
            "noisy sums (of x and of x^2)"
        )
    if len(idx) > 2:
        raise InputError(
            f"{table.display} has {len(idx)} columns that could hold the noisy sums of x and "
            f"of x^2 ({candidates(table, idx)}); choose two with --columns"
        )
    out = _release_columns(table, args, idx)
    return dict(
        out,
        read=(
            f"Read {len(out['z'])} release(s) of (sum x, sum x^2) from {table.display} (columns "
            f"{table.label(idx[0])}, {table.label(idx[1])})."
        ),
        note=None,
    )


#: released noisy pairs (sum x, sum x^2), one release per row (truncated normal)
PAIRS = DataKind(
    (
        columns_opt(
            "--columns",
            "the two columns of the noisy sums of x and of x^2, in that order (default: the "
            "two columns no other option uses; required if there are more)",
        ),
        N_OR_COLUMN,
        RELEASE_EPSILON,
    ),
    _pair_read,
)


# --------------------------------------------------------------------------------------------
# truncated sums
# --------------------------------------------------------------------------------------------


def _truncated_options(param, integer):
    kind = "integer " if integer else ""
    return (
        Opt(
            "--lower",
            f"declared {kind}lower truncation bound >= 0: records below it were dropped",
            type=finite_float,
            default=0.0,
        ),
        Opt(
            "--upper",
            f"declared {kind}upper truncation bound: records above it were dropped",
            type=finite_float,
            required=True,
        ),
        Opt(
            "--sensitivity",
            "L1 sensitivity of the truncated sum (Laplace scale = sensitivity / epsilon; "
            "default: max(|lower|, |upper|, upper - lower) = upper)",
            type=positive_float,
        ),
        gamma_prior_opt(param, BOUND_SCALED),
    )


def _truncated_check(integer):
    def check(args):
        word = "--lower <= --upper" if integer else "--lower < --upper"
        if args.lower < 0:
            raise InputError(f"--lower must be >= 0 (records are >= 0), got {fmt(args.lower)}")
        if (args.upper < args.lower) if integer else (args.upper <= args.lower):
            raise InputError(f"need {word}, got lower={fmt(args.lower)}, upper={fmt(args.upper)}")
        if args.upper <= 0:
            raise InputError(f"--upper must be > 0, got {fmt(args.upper)}")
        if integer:
            for flag, v in (("--lower", args.lower), ("--upper", args.upper)):
                if v != int(v):
                    raise InputError(f"{flag} must be a whole number for counts, got {fmt(v)}")
        exact = max(abs(args.lower), abs(args.upper), args.upper - args.lower)
        min_sensitivity(
            args,
            exact,
            f"the exact sensitivity of the bounds [{fmt(args.lower)}, {fmt(args.upper)}]: "
            "max(|lower|, |upper|, upper - lower)",
        )
        check_scale(truncated_sensitivity(args), args)

    return check


def _truncated_build(cls_name, param, default_prior):
    def build(args, data):
        import pymc as pm

        from ... import distributions

        cls = getattr(distributions, cls_name)
        a, b = getattr(args, f"{param}_prior") or default_prior(args)
        sens = truncated_sensitivity(args)
        with pm.Model() as model:
            rate = pm.Gamma(param, alpha=a, beta=b)
            cls(
                "y", data["n"], rate, args.lower, args.upper, data["epsilon"], sens,
                observed=data["z"],
            )  # fmt: skip
        return Built(
            model,
            f"y ~ {cls_name}({data['n_desc']}, {param}, lower={fmt(args.lower)}, "
            f"upper={fmt(args.upper)}, {data['epsilon_desc']}, sensitivity={fmt(sens)})",
            f"{param} ~ Gamma(alpha={fmt(a)}, beta={fmt(b)})",
            [param],
        )

    return build


def _truncated_model(name, cls_name, prior, integer, summary, text, *, synopsis):
    """A truncated-sum model: ``prior = (rate name, args -> default Gamma (alpha, beta))``."""
    param, default = prior
    return ModelSpec(
        name,
        cls_name,
        RELEASES,
        _truncated_options(param, integer),
        _truncated_check(integer),
        _truncated_build(cls_name, param, default),
        summary,
        doc(text),
        metavar="RELEASES",
        what="file of released noisy sums, one per row",
        synopsis=synopsis,
    )


# --------------------------------------------------------------------------------------------
# truncated normal
# --------------------------------------------------------------------------------------------


_TRUNCATED_NORMAL_OPTIONS = (
    Opt(
        "--lower",
        "declared lower truncation bound: records below it were dropped",
        type=finite_float,
        required=True,
    ),
    Opt(
        "--upper",
        "declared upper truncation bound: records above it were dropped",
        type=finite_float,
        required=True,
    ),
    Opt(
        "--sensitivity",
        "L1 sensitivity of the pair (sum x, sum x^2) (Laplace scale = sensitivity / epsilon "
        "on each sum; default: the exact one of the bounds, "
        "pymc_dpnoise.mechanisms.truncated_normal_sum_sensitivity, e.g. 30.25 for [-5, 5])",
        type=positive_float,
    ),
    *NORMAL_PRIORS,
)


def _truncated_normal_sensitivity(args):
    if args.sensitivity is not None:
        return args.sensitivity
    from ...mechanisms import truncated_normal_sum_sensitivity

    return float(truncated_normal_sum_sensitivity(args.lower, args.upper))


def _truncated_normal_check(args):
    if not args.lower < args.upper:
        raise InputError(
            f"--lower ({fmt(args.lower)}) must be smaller than --upper ({fmt(args.upper)})"
        )
    check_scale(args.upper - args.lower, args)
    from ...mechanisms import truncated_normal_sum_sensitivity

    exact = float(truncated_normal_sum_sensitivity(args.lower, args.upper))
    min_sensitivity(
        args,
        exact,
        f"the exact sensitivity of the bounds [{fmt(args.lower)}, {fmt(args.upper)}], "
        "pymc_dpnoise.mechanisms.truncated_normal_sum_sensitivity",
    )
    check_scale(_truncated_normal_sensitivity(args), args)


def _truncated_normal_build(args, data):
    import numpy as np
    import pymc as pm

    from ...distributions import LaplaceNoisyTruncatedNormal

    h = (args.upper - args.lower) / 2
    m, sd = args.mu_prior or ((args.lower + args.upper) / 2, h)
    a, b = args.sigma_prior or (2.0, 2.0 / h)
    sens = _truncated_normal_sensitivity(args)
    # a crude start (moments of the noisy sums, truncation ignored, kept inside the bounds):
    # the likelihood can have a secondary mode with mu beyond a bound and a large sigma
    n = np.broadcast_to(np.asarray(data["n"], dtype=float), (len(data["z"]),))
    m0 = float(np.clip(data["z"][:, 0].sum() / n.sum(), args.lower, args.upper))
    s0 = float(np.sqrt(max(data["z"][:, 1].sum() / n.sum() - m0**2, 0.0)))
    s0 = float(np.clip(s0, h / 20, h))
    coords = {"release": range(len(data["z"])), "stat": ["sum_x", "sum_x2"]}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", m, sd, initval=m0)
        sigma = pm.Gamma("sigma", alpha=a, beta=b, initval=s0)
        LaplaceNoisyTruncatedNormal(
            "y", data["n"], mu, sigma, args.lower, args.upper, data["epsilon"], sens,
            observed=data["z"], dims=("release", "stat"),
        )  # fmt: skip
    return Built(
        model,
        f"y ~ LaplaceNoisyTruncatedNormal({data['n_desc']}, mu, sigma, "
        f"lower={fmt(args.lower)}, upper={fmt(args.upper)}, {data['epsilon_desc']}, "
        f"sensitivity={fmt(sens)}), latent y_sum_z (one per release)",
        f"mu ~ Normal({fmt(m)}, {fmt(sd)}), sigma ~ Gamma(alpha={fmt(a)}, beta={fmt(b)})",
        ["mu", "sigma"],
    )


# --------------------------------------------------------------------------------------------
# noisy multinomial
# --------------------------------------------------------------------------------------------


_LATENTS = ("auto", "noise_variance", "counts")


_NOISY_MULTINOMIAL_OPTIONS = (
    Opt(
        "--sensitivity",
        "L1 sensitivity of the count vector (Laplace scale = sensitivity / epsilon on every "
        "count; 2: replacing one record moves one unit between two counts)",
        type=positive_float,
        default=2.0,
    ),
    Opt(
        "--latent",
        "latent vector NUTS integrates: the noise variances or the latent counts; auto picks "
        "by the noise level (see pymc_dpnoise.LaplaceNoisyMultinomial)",
        choices=_LATENTS,
        default="auto",
    ),
    Opt(
        "--alpha",
        "p ~ Dirichlet(alpha, ..., alpha): the prior on the k category probabilities",
        type=positive_float,
        default=1.0,
        prior=True,
    ),
)


def _noisy_multinomial_check(args):
    min_sensitivity(args, 1.0, "one record changes an integer count by at least 1")
    check_scale(args.sensitivity, args)


def _noisy_multinomial_build(args, data):
    import pymc as pm

    from ...distributions import LaplaceNoisyMultinomial

    k = len(data["items"])
    coords = {"release": range(len(data["z"])), "category": data["items"]}
    with pm.Model(coords=coords) as model:
        p = pm.Dirichlet("p", [args.alpha] * k, dims="category")
        LaplaceNoisyMultinomial(
            "y", data["n"], p, data["epsilon"], args.sensitivity, observed=data["z"],
            dims=("release", "category"), latent=args.latent,
        )  # fmt: skip
    latent = next(v.name for v in model.free_RVs if v.name.startswith("y_"))
    return Built(
        model,
        f"y ~ LaplaceNoisyMultinomial({data['n_desc']}, p, {data['epsilon_desc']}, "
        f"sensitivity={fmt(args.sensitivity)}), k = {k}, latent {latent} "
        f"(--latent {args.latent})",
        f"p ~ Dirichlet({fmt(args.alpha)} x {k})",
        ["p"],
    )


# --------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------


TRUNCATED_EXPONENTIAL = _truncated_model(
    "truncated-exponential",
    "LaplaceNoisyTruncatedExponential",
    ("lam", lambda a: (4.0, a.upper / 2)),
    False,
    "released noisy sums of Exponential records inside declared bounds (central DP)",
    """\
    Model: each row is one release y_i = s_i + Laplace(0, sensitivity / epsilon_i) of
    the sum s_i of those of n_i records x ~ Exponential(rate lam) that fall inside the
    declared bounds [lower, upper] (the others were dropped, not clipped), fitted with
    pymc_dpnoise.LaplaceNoisyTruncatedExponential (random-sum CLT for s_i, the
    Laplace noise integrated exactly).  n_i from --n or --n-column.

    Default prior, scaled to the bound:
      lam ~ Gamma(alpha=4, beta=upper / 2)     (prior mean of lam: 8 / upper)
    The bounds are declared to hold most records: this prior puts lam * upper above
    1.8 (then at least 83% of the records are inside) with probability 0.99.  It
    matters: the sum's mean is not monotone in lam, so a small rate with most records
    dropped can explain the same sums (a second mode, of similar likelihood when the
    releases are few).  Look for it with a wider --lam-prior and several chains.""",
    synopsis="--upper [--lower], --n or --n-column, --epsilon or --epsilon-column, [--sensitivity]",
)


TRUNCATED_POISSON = _truncated_model(
    "truncated-poisson",
    "LaplaceNoisyTruncatedPoisson",
    ("mu", lambda a: (2.0, 4.0 / a.upper)),
    True,
    "released noisy sums of Poisson counts inside declared bounds (central DP)",
    """\
    Model: as truncated-exponential, for records x ~ Poisson(mu) and integer bounds
    {lower, ..., upper}: counts outside were dropped (not clipped: for clipped counts
    see noisy-poisson), the kept ones summed and released with Laplace noise.
    Fitted with pymc_dpnoise.LaplaceNoisyTruncatedPoisson.

    Default prior, scaled to the bound:
      mu ~ Gamma(alpha=2, beta=4 / upper)      (prior mean of mu: upper / 2)
    The bounds are declared to hold most records, so mu > upper has prior
    probability 0.09: as for truncated-exponential, a rate with most counts above
    upper can explain the same sums (a second mode).""",
    synopsis="--upper [--lower], --n or --n-column, --epsilon or --epsilon-column, [--sensitivity]",
)


TRUNCATED_NORMAL = ModelSpec(
    "truncated-normal",
    "LaplaceNoisyTruncatedNormal",
    PAIRS,
    _TRUNCATED_NORMAL_OPTIONS,
    _truncated_normal_check,
    _truncated_normal_build,
    "released noisy sums of x and x^2 of Normal records inside declared bounds (central DP)",
    doc(
        """\
    Model: each row is one release of the pair (sum x, sum x^2) over those of n_i
    records x ~ Normal(mu, sigma) that fall inside the declared bounds [lower, upper]
    (the others were dropped, not clipped), each sum plus its own
    Laplace(0, sensitivity / epsilon_i) noise, fitted with
    pymc_dpnoise.LaplaceNoisyTruncatedNormal (random-sum CLT for the pair, one latent
    y_sum_z per release).  The file holds the two noisy sums as two columns
    (--columns, sum of x first); n_i from --n or --n-column.

    Default priors, scaled to the bounds (h = (upper - lower) / 2):
      mu    ~ Normal((lower + upper) / 2, h)
      sigma ~ Gamma(alpha=2, beta=2 / h)      (prior mean h)
    e.g. for [-5, 5]: mu ~ Normal(0, 5), sigma ~ Gamma(2, 0.4).  The chains start near
    the moments of the noisy sums (kept inside the bounds): the likelihood can have
    a secondary mode with mu beyond a bound and a large sigma.  Compare the chains
    (r_hat) and narrow the priors if they disagree.""",
    ),
    metavar="RELEASES",
    what="file of released noisy pairs (sum x, sum x^2), one per row",
    synopsis="--lower --upper, --n or --n-column, --epsilon or --epsilon-column, [--sensitivity] (default: the exact one of the bounds)",
)


NOISY_MULTINOMIAL = ModelSpec(
    "noisy-multinomial",
    "LaplaceNoisyMultinomial",
    COUNT_VECTORS,
    _NOISY_MULTINOMIAL_OPTIONS,
    _noisy_multinomial_check,
    _noisy_multinomial_build,
    "released category counts with Laplace noise on every count (central DP)",
    doc(
        """\
    Model: each row is one release of k category counts s_i ~ Multinomial(n_i, p),
    each count plus its own Laplace(0, sensitivity / epsilon_i) noise (e.g. one
    region's counts per answer), fitted with pymc_dpnoise.LaplaceNoisyMultinomial:
    the counts are approximated by a normal with the multinomial's mean and
    covariance, and one latent vector per release is integrated by NUTS (--latent).
    The file holds the k noisy counts as k columns (--columns); n_i from --n or
    --n-column.

    Default prior: p ~ Dirichlet(1, ..., 1) (uniform on the simplex; --alpha).""",
    ),
    metavar="RELEASES",
    what="file of released noisy count vectors, one per row",
    synopsis="--n or --n-column, --epsilon or --epsilon-column, [--sensitivity] (default 2), [--latent]",
)

#: the family's commands (in ``fit --help`` order) and its worked example
FAMILY = Family(
    "expfam",
    "Sums inside declared bounds and count vectors (central DP)",
    "A data holder releases the sum of the records inside declared bounds (records outside "
    "are dropped, not clipped) plus Laplace noise, one release per row with the number of "
    "records behind it (--n or --n-column): truncated-exponential and truncated-poisson; "
    "for Gaussian records the pair (sum x, sum x²) (truncated-normal); or k category counts, "
    "each with its own Laplace noise (noisy-multinomial).  Bernstein & Sheldon's "
    "exponential-family releases.",
    (TRUNCATED_EXPONENTIAL, TRUNCATED_POISSON, TRUNCATED_NORMAL, NOISY_MULTINOMIAL),
    Example(
        """\
import numpy as np
import pandas as pd
from pymc_dpnoise import mechanisms

rng = np.random.default_rng(3)
# 30 data holders with 200 records each; rate lam = 0.5
x = rng.exponential(2.0, size=(30, 200))
# each releases the sum of its records in [0, 8] at epsilon = 1
rel = mechanisms.release_truncated_sum(x, 0.0, 8.0, 1.0, rng)
table = pd.DataFrame({"sum": rel.value, "records": rel.n})
table.to_csv("sums.csv", index=False)
""",
        "pymc-dpnoise fit truncated-exponential sums.csv --upper 8 --n-column records --epsilon 1",
        "The posterior of lam is centred near the truth, 0.5.",
    ),
)
