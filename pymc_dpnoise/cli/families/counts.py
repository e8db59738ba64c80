"""``fit noisy-binomial`` and ``fit noisy-poisson``: released noisy counts (central DP).

One released count per row (:data:`COUNT_RELEASES`), with the noise of the system that made
it (``--noise``: continuous, discrete or rounded Laplace, Gaussian, discrete Gaussian) and its
clamp.  Every release fits :class:`~pymc_dpnoise.NoisyBinomial` /
:class:`~pymc_dpnoise.NoisyPoisson` with a :mod:`pymc_dpnoise.noise` spec; continuous Laplace
from a budget is written with the papers' constructors
:class:`~pymc_dpnoise.LaplaceNoisyBinomial` / :class:`~pymc_dpnoise.LaplaceNoisyPoisson`
(``noise=Laplace(sensitivity / epsilon)``).
"""

from __future__ import annotations

from .._base import InputError, finite_float, positive_float
from .._columns import refuse_rows, scalar_read
from .._options import check_scale, column_opt, gamma_prior_opt, min_sensitivity, prior_opt
from .._spec import Built, DataKind, Example, Family, ModelSpec, OneOf, Opt, doc, fmt

# --------------------------------------------------------------------------------------------
# noise and clamp options
# --------------------------------------------------------------------------------------------


#: ``--noise`` values: (class of :mod:`pymc_dpnoise.noise`, its parameter option, the budget
#: option it is computed from, integer releases?)
_NOISE_KINDS = {
    "laplace": ("Laplace", "scale", "epsilon", False),
    "discrete-laplace": ("DiscreteLaplace", "scale", "epsilon", True),
    "rounded-laplace": ("RoundedLaplace", "scale", "epsilon", True),
    "gaussian": ("Gaussian", "sigma", "rho", False),
    "discrete-gaussian": ("DiscreteGaussian", "sigma", "rho", True),
}


_NOISE_OPTIONS = (
    Opt(
        "--noise",
        "the noise the releases added (see above)",
        choices=tuple(_NOISE_KINDS),
        default="laplace",
    ),
    Opt(
        "--scale",
        "Laplace kinds: the noise scale b (instead of --epsilon)",
        type=positive_float,
        metavar="B",
    ),
    Opt("--sigma", "Gaussian kinds: the noise parameter sigma", type=positive_float, metavar="S"),
    Opt(
        "--rho",
        "Gaussian kinds: zCDP budget ρ of every release (sigma = sensitivity / sqrt(2 rho))",
        type=positive_float,
        metavar="R",
    ),
    Opt(
        "--sensitivity",
        "sensitivity of a count to one record, with --epsilon (scale = sensitivity / "
        "epsilon) or --rho (default 1)",
        type=positive_float,
    ),
    Opt(
        "--lower",
        "the releases were clamped below at LOWER after the noise (--lower 0 alone: "
        "OpenDP's saturating cast)",
        type=finite_float,
    ),
    Opt("--upper", "the releases were clamped above at UPPER after the noise", type=finite_float),
    Opt(
        "--threshold",
        "a cell was published only if its noisy count was above TAU (see above)",
        type=finite_float,
        metavar="TAU",
    ),
    Opt(
        "--keys",
        "with --threshold: known (every cell is a row, suppressed ones empty; the default) "
        "or unknown (only published cells are rows)",
        choices=("known", "unknown"),
    ),
)


_NOISY_BINOMIAL_OPTIONS = (
    Opt("--n", "number of records behind every released count", type=int, required=True),
    *_NOISE_OPTIONS,
    Opt("--clamp", "the releases were clamped to [0, n]: --lower 0 --upper n", action="store_true"),
    prior_opt(
        "--p-prior", ("A", "B"), "p ~ Beta(A, B) (default: 1 1, uniform)", default=(1.0, 1.0)
    ),
)


_NOISY_POISSON_OPTIONS = (
    *_NOISE_OPTIONS,
    gamma_prior_opt("mu", "1 0.01, prior mean 100", default=(1.0, 0.01)),
)


def _laplace_path(args) -> bool:
    """Continuous Laplace from the budget, unclamped or ``--clamp``, no threshold:
    LaplaceNoisy* as before."""
    return (
        args.noise == "laplace"
        and args.scale is None
        and (args.lower, args.upper) == (None, None)
        and args.threshold is None
    )


def _keys(args) -> str:
    return args.keys or "known"


def _count_sensitivity(args) -> float:
    return 1.0 if args.sensitivity is None else args.sensitivity


def _count_bounds(args):
    """The clamp ``(lower, upper)``, None where there is none (``--clamp``: [0, n])."""
    if getattr(args, "clamp", False):
        return 0.0, float(args.n)
    return args.lower, args.upper


def _noisy_count_check(args):
    if getattr(args, "n", 1) < 1:
        raise InputError(f"--n must be a whole number >= 1, got {args.n}")
    _, param, _, integer = _NOISE_KINDS[args.noise]
    noise = f"--noise {args.noise}"
    own = ("--scale", "--epsilon", "--epsilon-column") if param == "scale" else ("--sigma", "--rho")
    flags = ("--scale", "--epsilon", "--epsilon-column", "--sigma", "--rho")
    given = [f for f in flags if getattr(args, f[2:].replace("-", "_")) is not None]
    choices = ", ".join(own[:-1]) + " or " + own[-1]
    wrong = [f for f in given if f not in own]
    if wrong:
        raise InputError(f"{wrong[0]} does not apply to {noise}: give one of {choices}")
    if len(given) != 1:
        got = f", got {' and '.join(given)}" if given else ""
        raise InputError(f"{noise} needs exactly one of {choices}{got}")
    if args.sensitivity is not None and given[0] in ("--scale", "--sigma"):
        raise InputError(
            f"--sensitivity goes with --epsilon or --rho, not {given[0]} (the noise itself)"
        )
    min_sensitivity(args, 1.0, "one record changes an integer count by at least 1")
    check_scale(_count_sensitivity(args), args)
    if getattr(args, "clamp", False) and (args.lower is not None or args.upper is not None):
        raise InputError(f"--clamp is --lower 0 --upper {args.n}: give one or the other")
    lower, upper = _count_bounds(args)
    if lower is not None and upper is not None and not lower < upper:
        raise InputError(f"--lower ({fmt(lower)}) must be smaller than --upper ({fmt(upper)})")
    if args.keys is not None and args.threshold is None:
        raise InputError(f"--keys {args.keys} describes a thresholded release: give --threshold")
    if args.threshold is not None and (lower, upper) != (None, None):
        clamp = "--clamp" if getattr(args, "clamp", False) else "--lower / --upper"
        raise InputError(
            f"--threshold with {clamp} is not supported: a thresholded release is read "
            "unclamped (its suppressed cells are the noisy counts at or below the threshold)"
        )
    if integer:
        for flag, v in (
            ("--lower", args.lower),
            ("--upper", args.upper),
            ("--threshold", args.threshold),
        ):
            if v is not None and v != int(v):
                raise InputError(
                    f"{flag} must be a whole number with {noise} (integer releases), got {fmt(v)}"
                )


def _noise_spec(args, epsilon, epsilon_desc):
    """(spec, description) of the releases' noise: the class of ``--noise`` at ``--scale`` /
    ``--sigma``, or from the budget (``epsilon``: --epsilon or its column's values, or --rho)."""
    import numpy as np

    from ... import noise

    cls_name, param, budget, _ = _NOISE_KINDS[args.noise]
    sens = _count_sensitivity(args)
    direct = getattr(args, param)
    with np.errstate(over="ignore", divide="ignore"):
        if direct is not None:
            value, source = np.asarray(direct), f"--{param} {fmt(direct)}"
        elif budget == "rho":
            value = sens / np.sqrt(2.0 * np.asarray(args.rho))
            source = f"rho={fmt(args.rho)}, sensitivity={fmt(sens)}"
        else:
            value = sens / np.asarray(epsilon, dtype="float64")
            source = f"{epsilon_desc}, sensitivity={fmt(sens)}"
    bad = ~((value >= noise.PARAM_MIN) & (value <= noise.PARAM_MAX))
    if bad.any():
        raise InputError(
            f"{source}: the noise {param} is {fmt(value[bad].flat[0] if value.ndim else value)}, "
            f"outside [{noise.PARAM_MIN:g}, {noise.PARAM_MAX:g}] (no DP release has such noise)"
        )
    spec = getattr(noise, cls_name)(float(value) if value.ndim == 0 else value)
    if direct is not None:
        return spec, repr(spec)
    shown = repr(spec) if value.ndim == 0 else f"{cls_name}({param}=sensitivity / epsilon)"
    return spec, f"{shown} from {source}"


# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


def _count_read(table, args):
    """One released count per row, checked against the options: integers for the integer
    kinds, inside the clamp (every path, ``--clamp`` too); with a noise spec (every path but
    :func:`_laplace_path`) the spec."""
    import numpy as np

    tau = args.threshold
    out = scalar_read(table, args, missing=tau is not None and _keys(args) == "known")
    z, idx = out["z"], out["column"]
    released = ~np.isnan(z)
    if _NOISE_KINDS[args.noise][3]:
        why = f"--noise {args.noise} releases are integers, got {{v}}"
        refuse_rows(table, idx, z, released & (z != np.round(z)), why)
    if tau is not None:
        why = (
            f"release {{v}} is not above --threshold {fmt(tau)} (a published cell's noisy "
            "count is above it"
            + ("; leave suppressed cells empty)" if _keys(args) == "known" else ")")
        )
        refuse_rows(table, idx, z, released & (z <= tau), why)
        if _keys(args) == "known":
            cells = f"{int(released.sum())} published, {int((~released).sum())} suppressed"
            out = dict(out, read=out["read"].removesuffix(".") + f": {cells}.")
    # every clamp (--lower / --upper / --clamp, also on the LaplaceNoisy* path): a release
    # outside it has likelihood 0 and would fail only once sampling starts
    lower, upper = _count_bounds(args)
    lo = -np.inf if lower is None else lower
    hi = np.inf if upper is None else upper
    if getattr(args, "clamp", False):
        source = "--clamp"
    else:
        given = (("--lower", lower), ("--upper", upper))
        source = " ".join(f"{f} {fmt(v)}" for f, v in given if v is not None)
    why = f"release {{v}} is outside the clamp [{fmt(lo)}, {fmt(hi)}] ({source})"
    refuse_rows(table, idx, z, (z < lo) | (z > hi), why)
    if _laplace_path(args):
        return out
    spec, desc = _noise_spec(args, out["epsilon"], out["epsilon_desc"])
    return dict(out, noise=spec, noise_desc=desc)


#: released noisy counts, one per row; the budget is optional here (the Gaussian kinds take
#: --sigma or --rho): :func:`_noisy_count_check` asks for what ``--noise`` needs
COUNT_RELEASES = DataKind(
    (
        column_opt(
            "--column",
            "column of released counts, one release per row (default: the one column that "
            "no other option uses; required if there are several)",
        ),
        OneOf(
            Opt(
                "--epsilon",
                "Laplace kinds: privacy budget ε > 0 of every release",
                type=positive_float,
                metavar="E",
            ),
            column_opt("--epsilon-column", "Laplace kinds: column of per-release budgets ε > 0"),
            required=False,
        ),
    ),
    _count_read,
)


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------


def _clamp_desc(args) -> str:
    lower, upper = _count_bounds(args)
    return "".join(
        f", {k}={fmt(v)}" for k, v in (("lower", lower), ("upper", upper)) if v is not None
    )


def _thresholded(dist, args, data, desc) -> str:
    """``y``: the thresholded release of ``dist`` (:mod:`pymc_dpnoise.thresholds`); returns
    the likelihood line."""
    from ... import thresholds

    tau = args.threshold
    if _keys(args) == "known":
        thresholds.known_keys("y", dist, tau, observed=data["z"])
        return f"y ~ {desc} published if > {fmt(tau)}, known keys (suppressed: P(y <= {fmt(tau)}))"
    thresholds.unknown_keys("y", dist, tau, observed=data["z"])
    return f"y ~ {desc} truncated to > {fmt(tau)}, unknown keys (published cells only)"


def _noisy_binomial_build(args, data):
    import pymc as pm

    from ...distributions import LaplaceNoisyBinomial, NoisyBinomial

    a, b = args.p_prior
    with pm.Model() as model:
        p = pm.Beta("p", alpha=a, beta=b)
        if _laplace_path(args):
            LaplaceNoisyBinomial(
                "y",
                args.n,
                p,
                data["epsilon"],
                sensitivity=_count_sensitivity(args),
                clamp=args.clamp,
                observed=data["z"],
            )
            likelihood = (
                f"y ~ LaplaceNoisyBinomial(n={args.n}, p, {data['epsilon_desc']}, "
                f"sensitivity={fmt(_count_sensitivity(args))}, clamp={args.clamp})"
            )
        elif args.threshold is not None:
            dist = NoisyBinomial.dist(n=args.n, p=p, noise=data["noise"], shape=data["z"].shape)
            likelihood = _thresholded(
                dist, args, data, f"NoisyBinomial(n={args.n}, p, noise={data['noise_desc']})"
            )
        else:
            lower, upper = _count_bounds(args)
            NoisyBinomial(
                "y", n=args.n, p=p, noise=data["noise"], lower=lower, upper=upper,
                observed=data["z"],
            )  # fmt: skip
            likelihood = (
                f"y ~ NoisyBinomial(n={args.n}, p, noise={data['noise_desc']}{_clamp_desc(args)})"
            )
    return Built(model, likelihood, f"p ~ Beta({fmt(a)}, {fmt(b)})", ["p"])


def _noisy_poisson_build(args, data):
    import pymc as pm

    from ...distributions import LaplaceNoisyPoisson, NoisyPoisson

    a, b = args.mu_prior
    sens = _count_sensitivity(args)
    with pm.Model() as model:
        mu = pm.Gamma("mu", alpha=a, beta=b)
        if _laplace_path(args):
            LaplaceNoisyPoisson("y", mu, data["epsilon"], sens, observed=data["z"])
            likelihood = (
                f"y ~ LaplaceNoisyPoisson(mu, {data['epsilon_desc']}, sensitivity={fmt(sens)})"
            )
        elif args.threshold is not None:
            dist = NoisyPoisson.dist(mu, noise=data["noise"], shape=data["z"].shape)
            likelihood = _thresholded(
                dist, args, data, f"NoisyPoisson(mu, noise={data['noise_desc']})"
            )
        else:
            lower, upper = _count_bounds(args)
            NoisyPoisson(
                "y", mu=mu, noise=data["noise"], lower=lower, upper=upper, observed=data["z"]
            )
            likelihood = f"y ~ NoisyPoisson(mu, noise={data['noise_desc']}{_clamp_desc(args)})"
    return Built(model, likelihood, f"mu ~ Gamma(alpha={fmt(a)}, beta={fmt(b)})", ["mu"])


_NOISE_TEXT = """

    Noise (--noise): laplace (continuous, the default), discrete-laplace (OpenDP, Tumult and
    SmartNoise counts), rounded-laplace (Google's DP library), gaussian, discrete-gaussian
    (OpenDP, Tumult, the 2020 Census).  The Laplace kinds take --scale b, or --epsilon (or
    --epsilon-column, one budget per release) with b = sensitivity / epsilon; the Gaussian
    kinds --sigma, or --rho with sigma = sensitivity / sqrt(2 rho).  The integer kinds need
    integer releases.  --lower / --upper: the releases were clamped there after the noise
    (post-processing; --lower 0 alone is OpenDP's saturating cast); releases outside the
    clamp are an error.

    Thresholded releases (--threshold TAU): a cell was published only if its noisy count
    was above TAU (Wikimedia's country tables, partition selection).  --keys known (the
    default): every cell is a row, suppressed cells empty (or NA / NaN), each read as the
    event "noisy count <= TAU" (pymc_dpnoise.thresholds.known_keys).  --keys unknown: only
    published cells are rows, each read as a noisy count truncated to > TAU
    (pymc_dpnoise.thresholds.unknown_keys).  A release at or below TAU is an error; a
    system that keeps counts >= T (Tumult) has TAU = T - 1.  Reading suppressed cells as
    zero, or published ones as plain noisy counts, biases the fit."""


# --------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------


NOISY_BINOMIAL = ModelSpec(
    "noisy-binomial",
    "LaplaceNoisyBinomial",
    COUNT_RELEASES,
    _NOISY_BINOMIAL_OPTIONS,
    _noisy_count_check,
    _noisy_binomial_build,
    "released counts of n Bernoulli records plus DP noise (central DP)",
    doc(
        """\
    Model: each row is one release y_i = clamp(s_i + noise_i, lower, upper) of a count
    s_i ~ Binomial(n, p) (e.g. one region's number of "yes" answers), s_i summed out
    exactly.  Fitted with pymc_dpnoise.LaplaceNoisyBinomial for --noise laplace with
    --epsilon or --epsilon-column (and --clamp: the releases were clamped to [0, n]),
    with pymc_dpnoise.NoisyBinomial otherwise.""",
        _NOISE_TEXT,
        """

    Default prior: p ~ Beta(1, 1).""",
    ),
    metavar="RELEASES",
    what="file of released noisy counts, one per row",
    also=("NoisyBinomial",),
    synopsis="--n; --noise (default laplace) with --scale, --epsilon or --epsilon-column (Laplace kinds) or --sigma or --rho (Gaussian kinds); [--sensitivity]; [--lower --upper, or --clamp]; [--threshold [--keys]]",
)


NOISY_POISSON = ModelSpec(
    "noisy-poisson",
    "LaplaceNoisyPoisson",
    COUNT_RELEASES,
    _NOISY_POISSON_OPTIONS,
    _noisy_count_check,
    _noisy_poisson_build,
    "released totals of Poisson counts plus DP noise (central DP)",
    doc(
        """\
    Model: each row is one release y_i = clamp(s_i + noise_i, lower, upper) of a total
    s_i ~ Poisson(mu), s_i summed out exactly.  The sensitivity is the bound each
    record's count was clipped to.  Fitted with pymc_dpnoise.LaplaceNoisyPoisson for
    --noise laplace with --epsilon or --epsilon-column, with pymc_dpnoise.NoisyPoisson
    otherwise.""",
        _NOISE_TEXT,
        """

    Default prior: mu ~ Gamma(1, 0.01) (prior mean 100; set --mu-prior).""",
    ),
    metavar="RELEASES",
    what="file of released noisy totals, one per row",
    also=("NoisyPoisson",),
    synopsis="--noise (default laplace) with --scale, --epsilon or --epsilon-column (Laplace kinds) or --sigma or --rho (Gaussian kinds); [--sensitivity]; [--lower --upper]; [--threshold [--keys]]",
)

#: the family's commands (in ``fit --help`` order) and its worked example
FAMILY = Family(
    "counts",
    "Noisy counts (central DP)",
    "A data holder releases one count per row: the number of records with a property out of "
    "n (noisy-binomial) or a total of Poisson counts (noisy-poisson), plus DP noise, "
    "optionally clamped.  --noise names the noise of the system that made the release "
    "(continuous, discrete or rounded Laplace; Gaussian or discrete Gaussian), so the count "
    "releases of OpenDP, Tumult Analytics, Google's DP library, SmartNoise and the 2020 "
    "Census are fitted as they are, the latent count summed out exactly.",
    (NOISY_BINOMIAL, NOISY_POISSON),
    Example(
        """\
import numpy as np
import pandas as pd
from pymc_dpnoise import noise

rng = np.random.default_rng(2)
# 40 regions of 500 records each; p = 0.3
counts = rng.binomial(500, 0.3, size=40)
# OpenDP's make_gaussian on a count at rho = 0.5, then its cast at 0
spec = noise.DiscreteGaussian.from_rho(0.5)
released = np.maximum(spec.release(counts, rng), 0)
pd.DataFrame({"count": released}).to_csv("counts.csv", index=False)
""",
        "pymc-dpnoise fit noisy-binomial counts.csv --n 500 --noise discrete-gaussian "
        "--rho 0.5 --lower 0",
        "The likelihood line shows NoisyBinomial with DiscreteGaussian(sigma=1.0) from the "
        "budget and the clamp lower=0; the posterior of p is centred near 0.3.",
    ),
)
