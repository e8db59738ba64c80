"""The models of ``pymc-dpnoise fit``: one :class:`ModelSpec` entry per model.

An entry says which columns the command reads (a *data kind*: scalar reports, bit vectors,
category ids, regression reports, released statistics), which options set the protocol and
the priors (a table of :class:`Opt` rows), how the PyMC model is built and which parameters
are summarised.  Adding a model is one entry in :data:`MODELS`; a new family that reads one
numeric column per report reuses :data:`SCALAR` and needs only its options and its ``build``.

Nothing here imports NumPy or PyMC at module level: the parser is built from these entries
for ``--help``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ._args import InputError, column_list, finite_float, int_between, positive_float, probability

__all__ = ["MODELS", "Built", "DataKind", "ModelSpec", "OneOf", "Opt"]


def _doc(*parts: str) -> str:
    """Join dedented text blocks (the ``fit MODEL --help`` description)."""
    import textwrap

    return "".join(textwrap.dedent(p) for p in parts)


def _fmt(x) -> str:
    return f"{x:g}"


@dataclasses.dataclass
class Built:
    """What a model's ``build`` returns."""

    model: object  # the pm.Model
    likelihood: str  # one line describing the likelihood
    priors: str  # one line describing the priors
    params: list  # variables summarised (and saved to CSV)


class Opt:
    """One command-line option: ``group.add_argument(flag, help=help, **kw)``."""

    def __init__(self, flag: str, help: str, **kw):
        self.flag, self.kw = flag, dict(kw, help=help)

    def add(self, group):
        group.add_argument(self.flag, **self.kw)


class OneOf:
    """Options of which at most one may be given (exactly one if ``required``)."""

    def __init__(self, *opts: Opt, required: bool = True):
        self.opts, self.required = opts, required

    def add(self, group):
        exclusive = group.add_mutually_exclusive_group(required=self.required)
        for opt in self.opts:
            opt.add(exclusive)


def add_options(group, options) -> None:
    """Add the :class:`Opt` / :class:`OneOf` rows ``options`` to an argparse group, in order."""
    for opt in options:
        opt.add(group)


@dataclasses.dataclass(frozen=True)
class DataKind:
    """How a family of models reads its file: ``options`` are the column options,
    ``read(table, args) -> dict`` returns the arrays (and a ``"read"`` description line)."""

    options: tuple
    read: Callable

    def add_args(self, group):
        add_options(group, self.options)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One ``pymc-dpnoise fit MODEL`` command (a row of :data:`MODELS`)."""

    name: str  # the MODEL word on the command line
    distribution: str  # the pymc_dpnoise distribution it fits
    data: DataKind
    options: tuple  # protocol parameters and priors (Opt rows)
    check: Callable  # (args) -> None: option checks before the file is read
    build: Callable  # (args, data) -> Built
    summary: str  # one line for ``fit --help``
    description: str  # model and default priors for ``fit MODEL --help``
    metavar: str = "REPORTS"
    what: str = "file of privatised reports, one per row"
    also: tuple = ()  # the distributions it fits with other options (``--noise``)

    def add_data_args(self, group):
        self.data.add_args(group)

    def add_model_args(self, group):
        add_options(group, self.options)


# --------------------------------------------------------------------------------------------
# shared reading helpers
# --------------------------------------------------------------------------------------------


def _check_values(table, idx, values, kind, *, k=None):
    """One-line error on the first value of column ``idx`` that is not a valid ``kind``."""
    import numpy as np

    if kind == "report":
        bad = ~np.isfinite(values)
        why = "report is {v}"
    elif kind == "epsilon":
        bad = ~(np.isfinite(values) & (values > 0))
        why = "epsilon must be finite and > 0, got {v}"
    elif kind == "variance":
        bad = ~(np.isfinite(values) & (values > 0))
        why = "noise variances must be finite and > 0, got {v}"
    elif kind == "count":
        bad = ~(np.isfinite(values) & (values >= 0))
        why = "count must be finite and >= 0, got {v}"
    elif kind == "records":
        bad = ~np.isfinite(values) | (values < 1) | (values != np.round(values))
        why = "the number of records must be a whole number >= 1, got {v}"
    elif kind == "bit":
        bad = (values != 0) & (values != 1)
        why = "bits must be 0 or 1, got {v}"
    elif kind == "label":
        bad = (values != 0) & (values != 1)
        why = "labels must be 0 or 1, got {v}"
    elif kind == "category":
        bad = ~np.isfinite(values) | (values != np.round(values)) | (values < 0) | (values >= k)
        why = f"category ids must be integers in 0..{k - 1}" + " (--k {k}), got {v}"
        why = why.replace("{k}", str(k))
    else:  # pragma: no cover
        raise ValueError(kind)
    _refuse_rows(table, idx, values, bad, why)


def _refuse_rows(table, idx, values, bad, why):
    """One-line error on the first row where ``bad``: ``why`` formatted with its value ``v``."""
    if bad.any():
        row = int(bad.argmax())
        more = f" ({int(bad.sum())} bad values in total)" if bad.sum() > 1 else ""
        msg = why.format(v=_fmt(values[row]))
        raise InputError(
            f"{table.display}: data row {row + 1}: {msg} in column {table.label(idx)}{more}"
        )


def _column(flag, help):
    """An option naming one column (header name or 0-based index)."""
    return Opt(flag, help, metavar="NAME_OR_INDEX", default=None)


def _columns(flag, help):
    """An option naming several columns, separated by commas."""
    return Opt(flag, help, type=column_list, metavar="A,B,...", default=None)


_EPSILON = Opt(
    "--epsilon", "privacy budget ε > 0 of every report", type=positive_float, metavar="E"
)
#: --epsilon E or --epsilon-column NAME, exactly one
_EPSILON_OR_COLUMN = OneOf(
    _EPSILON,
    _column("--epsilon-column", "column of per-report budgets ε > 0 (personalised privacy)"),
)
_COUNTS = _column(
    "--counts-column",
    "column of multiplicities: each row is a report pattern seen this many times "
    "(default: every row is one report)",
)


def _value_or_column(table, args, name, kind, used):
    """``--NAME`` or ``--NAME-column``: (a number or an array, its description, the column
    index or None); the column's values are checked as ``kind``."""
    import numpy as np

    column = getattr(args, f"{name}_column", None)
    if column is None:
        value = getattr(args, name, None)
        return value, ("" if value is None else f"{name}={_fmt(value)}"), None
    idx = table.resolve(column, f"{name} column")
    if idx in used:
        raise InputError(
            f"--{name}-column {column}: column {table.label(idx)} is also read as reports"
        )
    (values,) = table.read([idx])
    _check_values(table, idx, values, kind)
    desc = (
        f"{name} from column {table.label(idx)} "
        f"(min {_fmt(np.min(values))}, max {_fmt(np.max(values))})"
    )
    return values, desc, idx


def _read_epsilon(table, args, used):
    """(epsilon: float or array, its description, its column index or None)."""
    return _value_or_column(table, args, "epsilon", "epsilon", used)


def _reserved(table, args, *names):
    """Column indices named by the options ``names`` (epsilon, counts ...) that are set."""
    out = set()
    for name in names:
        spec = getattr(args, name, None)
        if spec is not None:
            out.add(table.resolve(spec, name.replace("_", " ")))
    return out


# --------------------------------------------------------------------------------------------
# data kinds
# --------------------------------------------------------------------------------------------


def _scalar_read(table, args, *, what="reports", min_rows=2):
    """One numeric value per row (``--column``) with its budget (and ``n`` if the model has
    ``--n``/``--n-column``: the released sums)."""
    with_n = hasattr(args, "n_column")
    reserved = _reserved(table, args, "epsilon_column", *(["n_column"] if with_n else []))
    idx = _pick_column(table, args.column, reserved, what)
    (z,) = table.read([idx])
    _check_values(table, idx, z, "report")
    if len(z) < min_rows:
        raise InputError(f"{table.display}: only {len(z)} report, need at least {min_rows}")
    eps, eps_desc, _ = _read_epsilon(table, args, {idx})
    out = dict(z=z, epsilon=eps, epsilon_desc=eps_desc)
    if with_n:
        out["n"], out["n_desc"], _ = _value_or_column(table, args, "n", "records", {idx})
    return dict(
        out,
        read=f"Read {len(z)} {what} from {table.display} (column {table.label(idx)}).",
        note=None,
        column=idx,
    )


#: one numeric report per row (clipped Laplace families; noisy counts later)
SCALAR = DataKind(
    (
        _column(
            "--column",
            "column of reports: header name or 0-based index (default: the one column "
            "that no other option uses; required if there are several)",
        ),
        _EPSILON_OR_COLUMN,
    ),
    _scalar_read,
)


def _candidates(table, free):
    return ", ".join(table.label(i) for i in free)


def _pick_column(table, spec, reserved, what, flag="--column"):
    """Column ``spec``, or the only column no other option uses; with several such columns
    (an ``id`` column, say) the choice is the user's: an error listing them."""
    if spec is not None:
        return table.resolve(spec)
    free = table.unused(reserved)
    if not free:
        raise InputError(f"{table.display}: no column left for the {what}")
    if len(free) > 1:
        raise InputError(
            f"{table.display} has {len(free)} columns that could hold the {what} "
            f"({_candidates(table, free)}); choose one with {flag}"
        )
    return free[0]


def _grouped(table, args, values, used):
    """Frequency reports ``values`` (N, k) with their counts and budgets, identical
    (report, epsilon) rows grouped: the likelihood is the same, the work per distinct row."""
    import numpy as np

    counts, _ = _read_counts(table, args, len(values))
    eps, eps_desc, _ = _read_epsilon(table, args, used)
    k = values.shape[1]
    rows = values if np.ndim(eps) == 0 else np.column_stack([values, eps])
    rows, counts = _compress(rows, counts)
    return dict(
        z=rows[:, :k],
        epsilon=eps if np.ndim(eps) == 0 else rows[:, k],
        epsilon_desc=eps_desc,
        counts=counts,
    )


def _compress(rows, counts):
    """Group identical rows (pattern [+ epsilon]) and add their counts."""
    import numpy as np

    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    summed = np.bincount(inverse.ravel(), weights=counts, minlength=len(uniq))
    keep = summed > 0
    return uniq[keep], summed[keep]


def _read_counts(table, args, n):
    import numpy as np

    if args.counts_column is None:
        return np.ones(n), None
    idx = table.resolve(args.counts_column, "counts column")
    (c,) = table.read([idx])
    _check_values(table, idx, c, "count")
    if c.sum() <= 0:
        raise InputError(f"{table.display}: the counts in column {table.label(idx)} sum to 0")
    return c, idx


def _distinct(table, idx, flag):
    """Refuse a column chosen twice (by name and by index, e.g. ``a,0``) by option ``flag``."""
    seen = {}
    for spec, i in idx:
        if i in seen:
            raise InputError(
                f"{flag}: {seen[i]!r} and {spec!r} are the same column {table.label(i)}; "
                "name each column once"
            )
        seen[i] = spec
    return [i for _, i in idx]


def _names(table, idx, fallback, what):
    """The names of columns ``idx`` (their header names, else ``fallback(i)``); two columns
    with the same header name are an error: the fitted ``what`` would share a label."""
    names = [table.names[i] if table.names else fallback(i) for i in idx]
    for j, name in enumerate(names):
        if name in names[:j]:
            first = idx[names.index(name)]
            raise InputError(
                f"{table.display}: columns {first} and {idx[j]} are both named {name!r}; the "
                f"{what} need distinct names (rename one, or choose columns with --columns)"
            )
    return names


def _chosen_columns(table, args, others):
    """``--columns``, or every column that the options ``others`` (e.g. ``epsilon_column``)
    do not name; a column named by both is an error."""
    reserved = _reserved(table, args, *others)
    if args.columns is None:
        return table.unused(reserved)
    idx = _distinct(table, [(c, table.resolve(c)) for c in args.columns], "--columns")
    both = reserved.intersection(idx)
    if both:
        what = " or ".join(o.removesuffix("_column") for o in others)
        raise InputError(f"--columns: column {table.label(min(both))} is also the {what} column")
    return idx


def _bits_read(table, args):
    import numpy as np

    idx = _chosen_columns(table, args, ("counts_column", "epsilon_column"))
    if len(idx) < 2:
        raise InputError(
            f"{table.display}: {len(idx)} bit column(s); a unary-encoding report has k >= 2 bits"
        )
    bits = np.column_stack(table.read(idx))
    for j, i in enumerate(idx):
        _check_values(table, i, bits[:, j], "bit")
    out = _grouped(table, args, bits, set(idx))
    counts, k = out["counts"], len(idx)
    return dict(
        out,
        z=out["z"].astype(np.int8),
        items=_names(table, idx, str, "bits (items)"),
        read=(
            f"Read {_fmt(counts.sum())} reports of k = {k} bits from {table.display} "
            f"({len(counts)} distinct patterns)."
        ),
    )


#: unary-encoding reports: k 0/1 columns per row (optionally with a count per pattern)
BITS = DataKind(
    (
        _columns(
            "--columns",
            "the k bit columns (0/1), names or 0-based indices separated by commas "
            "(default: every column no other option uses)",
        ),
        _COUNTS,
        _column(
            "--epsilon-column",
            "column of per-report budgets ε > 0 (instead of --epsilon; OUE and SUE only)",
        ),
    ),
    _bits_read,
)


def _category_read(table, args):
    import numpy as np

    reserved = _reserved(table, args, "epsilon_column", "counts_column")
    idx = _pick_column(table, args.column, reserved, "category ids")
    (y,) = table.read([idx])
    _check_values(table, idx, y, "category", k=args.k)
    out = _grouped(table, args, y[:, None], {idx})
    counts = out["counts"]
    return dict(
        out,
        z=out["z"][:, 0].astype(np.int64),
        items=[str(i) for i in range(args.k)],
        read=(
            f"Read {_fmt(counts.sum())} reports (category ids 0..{args.k - 1}) from "
            f"{table.display} (column {table.label(idx)})."
        ),
    )


#: k-ary randomized response: one category id per row
CATEGORIES = DataKind(
    (
        _column(
            "--column",
            "column of reported category ids 0..k-1 (default: the one column no other "
            "option uses; required if there are several)",
        ),
        _COUNTS,
        _EPSILON_OR_COLUMN,
    ),
    _category_read,
)


def _regression_read(table, args, *, labels):
    import numpy as np

    y_idx = table.n_columns - 1 if args.y_column is None else table.resolve(args.y_column)
    if args.x_columns is None:
        x_idx = [i for i in range(table.n_columns) if i != y_idx]
    else:
        x_idx = _distinct(table, [(c, table.resolve(c)) for c in args.x_columns], "--x-columns")
        if y_idx in x_idx:
            raise InputError(
                f"--x-columns: column {table.label(y_idx)} is also the response column"
            )
    if not x_idx:
        raise InputError(f"{table.display}: one column; need d >= 1 feature columns and a response")
    cols = table.read([*x_idx, y_idx])
    for i, c in zip(x_idx, cols, strict=False):
        _check_values(table, i, c, "report")
    _check_values(table, y_idx, cols[-1], "label" if labels else "report")
    z = np.column_stack(cols)
    if len(z) < 2:
        raise InputError(f"{table.display}: only {len(z)} report, need at least 2")
    features = _names(table, x_idx, lambda i: f"x{i}", "features")
    return dict(
        z=z,
        features=features,
        read=(
            f"Read {len(z)} reports of d = {len(x_idx)} features from {table.display} "
            f"(response column {table.label(y_idx)})."
        ),
    )


_REGRESSION_COLUMNS = (
    _columns(
        "--x-columns", "the d noisy feature columns (default: every column except the response)"
    ),
    _column(
        "--y-column",
        "the noisy response (linear) or reported label 0/1 (logistic) (default: the last column)",
    ),
)
LINREG_DATA = DataKind(_REGRESSION_COLUMNS, lambda t, a: _regression_read(t, a, labels=False))
LOGREG_DATA = DataKind(_REGRESSION_COLUMNS, lambda t, a: _regression_read(t, a, labels=True))


def _statistics_read(table, args):
    import numpy as np

    from ..math.sufficient import stat_dim

    reserved = _reserved(table, args, "noise_var_column")
    idx = _pick_column(table, args.column, reserved, "statistics")
    (z,) = table.read([idx])
    _check_values(table, idx, z, "report")
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
        _check_values(table, vi, var, "variance")
        noise_desc = f"noise variances from column {table.label(vi)}"
    else:
        sigma = _ss_sigma(args)
        var = np.full(m, sigma**2 * (args.n if args.local else 1.0))
        noise_desc = f"noise sd {_fmt(sigma)} per {'record' if args.local else 'release'}"
    return dict(
        z=z,
        d=d,
        noise_cov=np.diag(var),
        noise_desc=noise_desc,
        read=f"Read m = {m} statistics (d = {d}) from {table.display} (column {table.label(idx)}).",
    )


STATISTICS = DataKind(
    (
        _column(
            "--column",
            "column holding the m released statistics, one per row, in the layout of "
            "pymc_dpnoise.mechanisms.sufficient_statistics (default: the one column that no other option "
            "uses; required if there are several)",
        ),
        _column(
            "--noise-var-column",
            "column of the total noise variance of each statistic (instead of --noise-sd "
            "or --epsilon/--delta)",
        ),
    ),
    _statistics_read,
)

#: --n N or --n-column NAME, exactly one (central-DP releases: the records behind each)
_N_OR_COLUMN = OneOf(
    Opt("--n", "number of records behind every release", type=int_between(1), metavar="N"),
    _column("--n-column", "column of the number of records behind each release"),
)
#: the budget of central-DP releases: --epsilon E or --epsilon-column NAME, exactly one
_RELEASE_EPSILON = OneOf(
    Opt("--epsilon", "privacy budget ε > 0 of every release", type=positive_float, metavar="E"),
    _column("--epsilon-column", "column of per-release budgets ε > 0"),
)

#: released noisy sums, one per row, with the records behind each (truncated families)
RELEASES = DataKind(
    (
        _column(
            "--column",
            "column of released noisy sums, one release per row (default: the one column "
            "that no other option uses; required if there are several)",
        ),
        _N_OR_COLUMN,
        _RELEASE_EPSILON,
    ),
    lambda t, a: _scalar_read(t, a, what="releases", min_rows=1),
)


def _release_columns(table, args, idx):
    """The values of columns ``idx`` (one release per row) with ``n`` and ``epsilon``."""
    import numpy as np

    z = np.column_stack(table.read(idx))
    for j, i in enumerate(idx):
        _check_values(table, i, z[:, j], "report")
    eps, eps_desc, _ = _read_epsilon(table, args, set(idx))
    n, n_desc, _ = _value_or_column(table, args, "n", "records", set(idx))
    return dict(z=z, epsilon=eps, epsilon_desc=eps_desc, n=n, n_desc=n_desc)


def _count_vectors_read(table, args):
    idx = _chosen_columns(table, args, ("n_column", "epsilon_column"))
    if len(idx) < 2:
        raise InputError(
            f"{table.display}: {len(idx)} count column(s); a released count vector has k >= 2 "
            "categories"
        )
    out = _release_columns(table, args, idx)
    return dict(
        out,
        items=_names(table, idx, str, "count columns (categories)"),
        read=(
            f"Read {len(out['z'])} release(s) of k = {len(idx)} noisy counts from {table.display}."
        ),
    )


#: released noisy count vectors: k count columns per row (one release per row)
COUNT_VECTORS = DataKind(
    (
        _columns(
            "--columns",
            "the k columns of noisy category counts, names or 0-based indices separated by "
            "commas (default: every column no other option uses)",
        ),
        _N_OR_COLUMN,
        _RELEASE_EPSILON,
    ),
    _count_vectors_read,
)


# --------------------------------------------------------------------------------------------
# priors given on the command line
# --------------------------------------------------------------------------------------------


def _prior(flag, metavar, help, *, type=positive_float, default=None):
    """An option taking the two parameters of a prior."""
    return Opt(flag, help, nargs=2, type=type, metavar=metavar, default=default)


def _gamma_prior(name, default_text, default=None):
    """``--NAME-prior ALPHA BETA``: NAME ~ Gamma(shape ALPHA, rate BETA)."""
    return _prior(
        f"--{name}-prior",
        ("ALPHA", "BETA"),
        f"{name} ~ Gamma(shape ALPHA, rate BETA) (default: {default_text})",
        default=default,
    )


_BOUND_SCALED = "bound-scaled, see above"

# --------------------------------------------------------------------------------------------
# clipped Laplace families
# --------------------------------------------------------------------------------------------

#: the priors of a normal's mu and sigma (default: scaled to the bounds)
_NORMAL_PRIORS = (
    _prior(
        "--mu-prior",
        ("MEAN", "SD"),
        f"mu ~ Normal(MEAN, SD) (default: {_BOUND_SCALED})",
        type=finite_float,
    ),
    _gamma_prior("sigma", _BOUND_SCALED),
)
_CLIPPED_NORMAL_OPTIONS = (
    Opt("--lower", "lower clipping bound", type=finite_float, required=True),
    Opt("--upper", "upper clipping bound", type=finite_float, required=True),
    *_NORMAL_PRIORS,
)


def _check_scale(width, args):
    import math

    eps = getattr(args, "epsilon", None)
    if not math.isfinite(width):
        raise InputError("the bounds are too far apart: upper - lower overflows")
    if eps is not None and not math.isfinite(width / eps):
        raise InputError(
            f"--epsilon {_fmt(eps)} is too small: the Laplace scale {_fmt(width)} / epsilon "
            "overflows"
        )


def _clipped_normal_check(args):
    if not args.lower < args.upper:
        raise InputError(
            f"--lower ({_fmt(args.lower)}) must be smaller than --upper ({_fmt(args.upper)})"
        )
    _check_scale(args.upper - args.lower, args)
    if args.mu_prior and args.mu_prior[1] <= 0:
        raise InputError(f"--mu-prior: SD must be > 0, got {_fmt(args.mu_prior[1])}")


def _clipped_class(data, name):
    """The distribution ``name``, or its binned ``...Summary`` variant when ``data["z"]`` is a
    ClippedSummary (large files, see _fit._summary_data)."""
    from .. import distributions as dists
    from ..summaries import ClippedSummary

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
        f"z ~ {cls.__name__}(mu, sigma, lower={_fmt(args.lower)}, "
        f"upper={_fmt(args.upper)}, {data['epsilon_desc']})",
        f"mu ~ Normal({_fmt(m0)}, {_fmt(s0)}), sigma ~ Gamma(alpha={_fmt(a)}, beta={_fmt(b)})",
        ["mu", "sigma"],
    )


_CLIPPED_EXPONENTIAL_OPTIONS = (
    Opt("--upper", "upper clipping bound (> 0; lower is 0)", type=finite_float, required=True),
    _gamma_prior("lam", _BOUND_SCALED),
)


def _clipped_exponential_check(args):
    if args.upper <= 0:
        raise InputError(f"--upper must be > 0 for clipped-exponential, got {_fmt(args.upper)}")
    _check_scale(args.upper, args)


def _clipped_exponential_build(args, data):
    import pymc as pm

    cls = _clipped_class(data, "LaplacePerturbedClippedExponential")
    a, b = args.lam_prior or (2.0, args.upper / 2)
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=a, beta=b)
        cls("z", lam, upper=args.upper, epsilon=data["epsilon"], observed=data["z"])
    return Built(
        model,
        f"z ~ {cls.__name__}(lam, upper={_fmt(args.upper)}, {data['epsilon_desc']})",
        f"lam ~ Gamma(alpha={_fmt(a)}, beta={_fmt(b)})",
        ["lam"],
    )


# --------------------------------------------------------------------------------------------
# noisy counts (central DP: one released count per row)
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
)
_NOISY_BINOMIAL_OPTIONS = (
    Opt("--n", "number of records behind every released count", type=int, required=True),
    *_NOISE_OPTIONS,
    Opt("--clamp", "the releases were clamped to [0, n]: --lower 0 --upper n", action="store_true"),
    _prior("--p-prior", ("A", "B"), "p ~ Beta(A, B) (default: 1 1, uniform)", default=(1.0, 1.0)),
)
_NOISY_POISSON_OPTIONS = (
    *_NOISE_OPTIONS,
    _gamma_prior("mu", "1 0.01, prior mean 100", default=(1.0, 0.01)),
)


def _laplace_path(args) -> bool:
    """Continuous Laplace from the budget, unclamped or ``--clamp``: LaplaceNoisy* as before."""
    return (
        args.noise == "laplace" and args.scale is None and (args.lower, args.upper) == (None, None)
    )


def _count_sensitivity(args) -> float:
    return 1.0 if args.sensitivity is None else args.sensitivity


def _count_bounds(args):
    """The clamp ``(lower, upper)``, None where there is none (``--clamp``: [0, n])."""
    if getattr(args, "clamp", False):
        return 0.0, float(args.n)
    return args.lower, args.upper


def _min_sensitivity(args, minimum, why):
    """Refuse ``--sensitivity`` below ``minimum``: a model with less noise than the release
    had (a sensitivity no release can have for these options) would overstate what the
    releases say."""
    if args.sensitivity is not None and args.sensitivity < minimum:
        raise InputError(
            f"--sensitivity {_fmt(args.sensitivity)} is below the minimum {_fmt(minimum)} "
            f"({why}); a smaller value would model less noise than the release added"
        )


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
    _min_sensitivity(args, 1.0, "one record changes an integer count by at least 1")
    _check_scale(_count_sensitivity(args), args)
    if getattr(args, "clamp", False) and (args.lower is not None or args.upper is not None):
        raise InputError(f"--clamp is --lower 0 --upper {args.n}: give one or the other")
    lower, upper = _count_bounds(args)
    if lower is not None and upper is not None and not lower < upper:
        raise InputError(f"--lower ({_fmt(lower)}) must be smaller than --upper ({_fmt(upper)})")
    if integer:
        for flag, v in (("--lower", args.lower), ("--upper", args.upper)):
            if v is not None and v != int(v):
                raise InputError(
                    f"{flag} must be a whole number with {noise} (integer releases), got {_fmt(v)}"
                )


def _noise_spec(args, epsilon, epsilon_desc):
    """(spec, description) of the releases' noise: the class of ``--noise`` at ``--scale`` /
    ``--sigma``, or from the budget (``epsilon``: --epsilon or its column's values, or --rho)."""
    import numpy as np

    from .. import noise

    cls_name, param, budget, _ = _NOISE_KINDS[args.noise]
    sens = _count_sensitivity(args)
    direct = getattr(args, param)
    with np.errstate(over="ignore", divide="ignore"):
        if direct is not None:
            value, source = np.asarray(direct), f"--{param} {_fmt(direct)}"
        elif budget == "rho":
            value = sens / np.sqrt(2.0 * np.asarray(args.rho))
            source = f"rho={_fmt(args.rho)}, sensitivity={_fmt(sens)}"
        else:
            value = sens / np.asarray(epsilon, dtype="float64")
            source = f"{epsilon_desc}, sensitivity={_fmt(sens)}"
    bad = ~((value >= noise.PARAM_MIN) & (value <= noise.PARAM_MAX))
    if bad.any():
        raise InputError(
            f"{source}: the noise {param} is {_fmt(value[bad].flat[0] if value.ndim else value)}, "
            f"outside [{noise.PARAM_MIN:g}, {noise.PARAM_MAX:g}] (no DP release has such noise)"
        )
    spec = getattr(noise, cls_name)(float(value) if value.ndim == 0 else value)
    if direct is not None:
        return spec, repr(spec)
    shown = repr(spec) if value.ndim == 0 else f"{cls_name}({param}=sensitivity / epsilon)"
    return spec, f"{shown} from {source}"


def _count_read(table, args):
    """One released count per row, checked against the options: integers for the integer
    kinds, inside the clamp (every path, ``--clamp`` too); with a noise spec (every path but
    :func:`_laplace_path`) the spec."""
    import numpy as np

    out = _scalar_read(table, args)
    z, idx = out["z"], out["column"]
    if _NOISE_KINDS[args.noise][3]:
        why = f"--noise {args.noise} releases are integers, got {{v}}"
        _refuse_rows(table, idx, z, z != np.round(z), why)
    # every clamp (--lower / --upper / --clamp, also on the LaplaceNoisy* path): a release
    # outside it has likelihood 0 and would fail only once sampling starts
    lower, upper = _count_bounds(args)
    lo = -np.inf if lower is None else lower
    hi = np.inf if upper is None else upper
    if getattr(args, "clamp", False):
        source = "--clamp"
    else:
        given = (("--lower", lower), ("--upper", upper))
        source = " ".join(f"{f} {_fmt(v)}" for f, v in given if v is not None)
    why = f"release {{v}} is outside the clamp [{_fmt(lo)}, {_fmt(hi)}] ({source})"
    _refuse_rows(table, idx, z, (z < lo) | (z > hi), why)
    if _laplace_path(args):
        return out
    spec, desc = _noise_spec(args, out["epsilon"], out["epsilon_desc"])
    return dict(out, noise=spec, noise_desc=desc)


#: released noisy counts, one per row; the budget is optional here (the Gaussian kinds take
#: --sigma or --rho): :func:`_noisy_count_check` asks for what ``--noise`` needs
COUNT_RELEASES = DataKind(
    (
        _column(
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
            _column("--epsilon-column", "Laplace kinds: column of per-release budgets ε > 0"),
            required=False,
        ),
    ),
    _count_read,
)


def _clamp_desc(args) -> str:
    lower, upper = _count_bounds(args)
    return "".join(
        f", {k}={_fmt(v)}" for k, v in (("lower", lower), ("upper", upper)) if v is not None
    )


def _noisy_binomial_build(args, data):
    import pymc as pm

    from ..distributions import LaplaceNoisyBinomial, NoisyBinomial

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
                f"sensitivity={_fmt(_count_sensitivity(args))}, clamp={args.clamp})"
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
    return Built(model, likelihood, f"p ~ Beta({_fmt(a)}, {_fmt(b)})", ["p"])


def _noisy_poisson_build(args, data):
    import pymc as pm

    from ..distributions import LaplaceNoisyPoisson, NoisyPoisson

    a, b = args.mu_prior
    sens = _count_sensitivity(args)
    with pm.Model() as model:
        mu = pm.Gamma("mu", alpha=a, beta=b)
        if _laplace_path(args):
            LaplaceNoisyPoisson("y", mu, data["epsilon"], sens, observed=data["z"])
            likelihood = (
                f"y ~ LaplaceNoisyPoisson(mu, {data['epsilon_desc']}, sensitivity={_fmt(sens)})"
            )
        else:
            lower, upper = _count_bounds(args)
            NoisyPoisson(
                "y", mu=mu, noise=data["noise"], lower=lower, upper=upper, observed=data["z"]
            )
            likelihood = f"y ~ NoisyPoisson(mu, noise={data['noise_desc']}{_clamp_desc(args)})"
    return Built(model, likelihood, f"mu ~ Gamma(alpha={_fmt(a)}, beta={_fmt(b)})", ["mu"])


_NOISE_TEXT = """

    Noise (--noise): laplace (continuous, the default), discrete-laplace (OpenDP, Tumult and
    SmartNoise counts), rounded-laplace (Google's DP library), gaussian, discrete-gaussian
    (OpenDP, Tumult, the 2020 Census).  The Laplace kinds take --scale b, or --epsilon (or
    --epsilon-column, one budget per release) with b = sensitivity / epsilon; the Gaussian
    kinds --sigma, or --rho with sigma = sensitivity / sqrt(2 rho).  The integer kinds need
    integer releases.  --lower / --upper: the releases were clamped there after the noise
    (post-processing; --lower 0 alone is OpenDP's saturating cast); releases outside the
    clamp are an error."""


# --------------------------------------------------------------------------------------------
# exponential-family releases (central DP): truncated sums and noisy count vectors
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
        _gamma_prior(param, _BOUND_SCALED),
    )


def _truncated_check(integer):
    def check(args):
        word = "--lower <= --upper" if integer else "--lower < --upper"
        if args.lower < 0:
            raise InputError(f"--lower must be >= 0 (records are >= 0), got {_fmt(args.lower)}")
        if (args.upper < args.lower) if integer else (args.upper <= args.lower):
            raise InputError(f"need {word}, got lower={_fmt(args.lower)}, upper={_fmt(args.upper)}")
        if args.upper <= 0:
            raise InputError(f"--upper must be > 0, got {_fmt(args.upper)}")
        if integer:
            for flag, v in (("--lower", args.lower), ("--upper", args.upper)):
                if v != int(v):
                    raise InputError(f"{flag} must be a whole number for counts, got {_fmt(v)}")
        exact = max(abs(args.lower), abs(args.upper), args.upper - args.lower)
        _min_sensitivity(
            args,
            exact,
            f"the exact sensitivity of the bounds [{_fmt(args.lower)}, {_fmt(args.upper)}]: "
            "max(|lower|, |upper|, upper - lower)",
        )
        _check_scale(_truncated_sensitivity(args), args)

    return check


def _truncated_sensitivity(args):
    if args.sensitivity is not None:
        return args.sensitivity
    return max(abs(args.lower), abs(args.upper), args.upper - args.lower)


def _truncated_build(cls_name, param, default_prior):
    def build(args, data):
        import pymc as pm

        from .. import distributions

        cls = getattr(distributions, cls_name)
        a, b = getattr(args, f"{param}_prior") or default_prior(args)
        sens = _truncated_sensitivity(args)
        with pm.Model() as model:
            rate = pm.Gamma(param, alpha=a, beta=b)
            cls(
                "y", data["n"], rate, args.lower, args.upper, data["epsilon"], sens,
                observed=data["z"],
            )  # fmt: skip
        return Built(
            model,
            f"y ~ {cls_name}({data['n_desc']}, {param}, lower={_fmt(args.lower)}, "
            f"upper={_fmt(args.upper)}, {data['epsilon_desc']}, sensitivity={_fmt(sens)})",
            f"{param} ~ Gamma(alpha={_fmt(a)}, beta={_fmt(b)})",
            [param],
        )

    return build


def _pair_read(table, args):
    """Released pairs (noisy sum of x, noisy sum of x^2): two columns per row."""

    idx = _chosen_columns(table, args, ("n_column", "epsilon_column"))
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
            f"of x^2 ({_candidates(table, idx)}); choose two with --columns"
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
        _columns(
            "--columns",
            "the two columns of the noisy sums of x and of x^2, in that order (default: the "
            "two columns no other option uses; required if there are more)",
        ),
        _N_OR_COLUMN,
        _RELEASE_EPSILON,
    ),
    _pair_read,
)

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
    *_NORMAL_PRIORS,
)


def _truncated_normal_sensitivity(args):
    if args.sensitivity is not None:
        return args.sensitivity
    from ..mechanisms import truncated_normal_sum_sensitivity

    return float(truncated_normal_sum_sensitivity(args.lower, args.upper))


def _truncated_normal_check(args):
    if not args.lower < args.upper:
        raise InputError(
            f"--lower ({_fmt(args.lower)}) must be smaller than --upper ({_fmt(args.upper)})"
        )
    _check_scale(args.upper - args.lower, args)
    from ..mechanisms import truncated_normal_sum_sensitivity

    exact = float(truncated_normal_sum_sensitivity(args.lower, args.upper))
    _min_sensitivity(
        args,
        exact,
        f"the exact sensitivity of the bounds [{_fmt(args.lower)}, {_fmt(args.upper)}], "
        "pymc_dpnoise.mechanisms.truncated_normal_sum_sensitivity",
    )
    _check_scale(_truncated_normal_sensitivity(args), args)


def _truncated_normal_build(args, data):
    import numpy as np
    import pymc as pm

    from ..distributions import LaplaceNoisyTruncatedNormal

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
        f"lower={_fmt(args.lower)}, upper={_fmt(args.upper)}, {data['epsilon_desc']}, "
        f"sensitivity={_fmt(sens)}), latent y_sum_z (one per release)",
        f"mu ~ Normal({_fmt(m)}, {_fmt(sd)}), sigma ~ Gamma(alpha={_fmt(a)}, beta={_fmt(b)})",
        ["mu", "sigma"],
    )


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
    ),
)


def _noisy_multinomial_check(args):
    _min_sensitivity(args, 1.0, "one record changes an integer count by at least 1")
    _check_scale(args.sensitivity, args)


def _noisy_multinomial_build(args, data):
    import pymc as pm

    from ..distributions import LaplaceNoisyMultinomial

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
        f"sensitivity={_fmt(args.sensitivity)}), k = {k}, latent {latent} "
        f"(--latent {args.latent})",
        f"p ~ Dirichlet({_fmt(args.alpha)} x {k})",
        ["p"],
    )


# --------------------------------------------------------------------------------------------
# frequency oracles
# --------------------------------------------------------------------------------------------


_ALPHA = Opt(
    "--alpha",
    "theta ~ Dirichlet(alpha, ..., alpha): the prior on the k item probabilities",
    type=positive_float,
    default=1.0,
)


def _need_epsilon(args):
    if (args.epsilon is None) == (args.epsilon_column is None):
        raise InputError("give one of --epsilon or --epsilon-column")
    if args.epsilon is not None and args.epsilon > 700:
        raise InputError(
            f"--epsilon must be <= 700 (e^epsilon overflows), got {_fmt(args.epsilon)}"
        )


def _frequency_build(cls_name, extra_desc=""):
    def build(args, data):
        import pymc as pm

        from .. import distributions

        cls = getattr(distributions, cls_name)
        k = len(data["items"])
        with pm.Model(coords={"item": data["items"]}) as model:
            theta = pm.Dirichlet("theta", [args.alpha] * k, dims="item")
            kw = (
                dict(keep_prob=args.keep_prob, flip_prob=args.flip_prob)
                if cls_name == "UnaryEncodingLikelihood"
                else dict(epsilon=data["epsilon"])
            )
            cls("z", p=theta, counts=data["counts"], observed=data["z"], **kw)
        desc = (
            f"keep_prob={_fmt(args.keep_prob)}, flip_prob={_fmt(args.flip_prob)}"
            if cls_name == "UnaryEncodingLikelihood"
            else data["epsilon_desc"]
        )
        return Built(
            model,
            f"z ~ {cls_name}(theta, {desc}), k = {k}{extra_desc}",
            f"theta ~ Dirichlet({_fmt(args.alpha)} x {k})",
            ["theta"],
        )

    return build


_UE_OPTIONS = (
    Opt("--keep-prob", "P(the item's own bit is 1)", type=probability, required=True),
    Opt("--flip-prob", "P(any other bit is 1)", type=probability, required=True),
    _ALPHA,
)


def _ue_check(args):
    if args.epsilon_column is not None:
        raise InputError("--epsilon-column: unary-encoding takes --keep-prob and --flip-prob")


_KRR_OPTIONS = (Opt("--k", "number of categories", type=int_between(2), required=True), _ALPHA)


def _krr_check(args):
    if args.epsilon is not None and args.epsilon > 700:
        raise InputError(
            f"--epsilon must be <= 700 (e^epsilon overflows), got {_fmt(args.epsilon)}"
        )


# --------------------------------------------------------------------------------------------
# perturbed-input regression and released sufficient statistics
# --------------------------------------------------------------------------------------------


def _regression_priors(*, theta_sd, tau_sd, sigma_sd=None):
    """--theta-sd, --tau-sd, --eta (and --sigma-sd) with these defaults."""
    priors = (
        Opt("--theta-sd", "theta_j ~ Normal(0, THETA_SD)", type=positive_float, default=theta_sd),
        Opt(
            "--tau-sd",
            "feature scales tau_j ~ HalfNormal(TAU_SD) (Σ = diag(tau) Ω diag(tau))",
            type=positive_float,
            default=tau_sd,
        ),
        Opt("--eta", "feature correlations Ω ~ LKJ(ETA)", type=positive_float, default=2.0),
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
        ),
    )


def _delta(help):
    return Opt("--delta", help, type=probability, metavar="D")


_R = Opt(
    "--R",
    "L2 clipping norm of the feature rows (with --epsilon)",
    type=positive_float,
    default=1.0,
    dest="R",
)
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
        _delta("δ of the Gaussian mechanism"),
        _R,
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
    *_regression_priors(theta_sd=2.0, tau_sd=1.0, sigma_sd=1.0),
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
    *_regression_priors(theta_sd=2.0, tau_sd=1.0),
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


def _linreg_noise(args):
    if args.sigma_x is not None:
        return args.sigma_x, args.sigma_y, "given"
    from ..mechanisms.core import analytic_gaussian_sigma
    from ..mechanisms.regression import split_epsilon

    eps_x, eps_y = split_epsilon(args.epsilon, args.c)
    sx = float(analytic_gaussian_sigma(eps_x, 0.5 * args.delta, 2.0 * args.R))
    sy = float(analytic_gaussian_sigma(eps_y, 0.5 * args.delta, 2.0 * args.R_y))
    return sx, sy, "from epsilon, delta as perturb_linreg"


def _logreg_noise(args):
    if args.sigma_x is not None:
        return args.sigma_x, args.epsilon_y, "given"
    from ..mechanisms.core import analytic_gaussian_sigma
    from ..mechanisms.regression import split_epsilon

    eps_x, eps_y = split_epsilon(args.epsilon, args.c)
    sx = float(analytic_gaussian_sigma(eps_x, args.delta, 2.0 * args.R))
    return sx, eps_y, "from epsilon, delta as perturb_logreg"


def _feature_cov(args, d):
    """theta and Σ priors shared by the regression models; returns (theta, cov, text)."""
    import pymc as pm

    from ..priors import scaled_lkj_cov

    theta = pm.Normal("theta", 0.0, args.theta_sd, dims="feature")
    if d >= 2:
        chol, _, _ = scaled_lkj_cov("cov", d, eta=args.eta, tau_sigma=args.tau_sd, dims="feature")
        cov = chol @ chol.T
        text = f"Σ = diag(tau) Ω diag(tau), tau_j ~ HalfNormal({_fmt(args.tau_sd)}), Ω ~ LKJ({_fmt(args.eta)})"
    else:
        tau = pm.HalfNormal("cov_tau", args.tau_sd, dims="feature")
        cov = (tau * tau)[:, None]
        text = f"Σ = tau², tau ~ HalfNormal({_fmt(args.tau_sd)})"
    return theta, cov, f"theta_j ~ Normal(0, {_fmt(args.theta_sd)}), {text}"


def _linreg_build(args, data):
    import pymc as pm

    from ..distributions import PerturbedLinReg

    sx, sy, how = _linreg_noise(args)
    with pm.Model(coords={"feature": data["features"]}) as model:
        theta, cov, text = _feature_cov(args, len(data["features"]))
        sigma = pm.HalfNormal("sigma", args.sigma_sd)
        PerturbedLinReg(
            "z", theta=theta, sigma=sigma, cov=cov, sigma_x=sx, sigma_y=sy, observed=data["z"]
        )
    return Built(
        model,
        f"z ~ PerturbedLinReg(theta, sigma, Σ, sigma_x={_fmt(sx)}, sigma_y={_fmt(sy)} ({how}))",
        f"{text}, sigma ~ HalfNormal({_fmt(args.sigma_sd)})",
        ["theta", "sigma", "cov_tau"],
    )


def _logreg_build(args, data):
    import pymc as pm

    from ..distributions import PerturbedLogReg

    sx, ey, how = _logreg_noise(args)
    with pm.Model(coords={"feature": data["features"]}) as model:
        theta, cov, text = _feature_cov(args, len(data["features"]))
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
        f"z ~ PerturbedLogReg(theta, Σ, sigma_x={_fmt(sx)}, epsilon_y={_fmt(ey)} ({how}), "
        f"{args.approximation})",
        text,
        ["theta", "cov_tau"],
    )


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
    _delta("δ of the release"),
    _R,
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
    *_regression_priors(theta_sd=2.5, tau_sd=2.5, sigma_sd=2.0),
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
    from ..mechanisms.core import analytic_gaussian_sigma
    from ..mechanisms.sufficient import ss_sensitivity

    return float(
        analytic_gaussian_sigma(args.epsilon, args.delta, ss_sensitivity(args.glm, args.R, args.Ry))
    )


def _ss_build(args, data):
    import pymc as pm

    from ..distributions import SSNormalApprox

    d = data["d"]
    kw = {}
    with pm.Model(coords={"feature": [f"x{j}" for j in range(d)]}) as model:
        theta, cov, text = _feature_cov(args, d)
        params = ["theta", "cov_tau"]
        if args.glm == "linear":
            kw["sigma"] = pm.HalfNormal("sigma", args.sigma_sd)
            text += f", sigma ~ HalfNormal({_fmt(args.sigma_sd)})"
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
# the registry
# --------------------------------------------------------------------------------------------

_FREQ_PRIOR = """

    Default prior: theta ~ Dirichlet(1, ..., 1) (uniform on the simplex; --alpha).
    Identical reports are grouped (counts), so the cost grows with the number of distinct
    patterns, not of reports."""

_REG_PRIOR = """

    Default priors (the package's SBC-checked ones): theta_j ~ Normal(0, 2); the feature
    covariance Σ = diag(tau) Ω diag(tau) with tau_j ~ HalfNormal(1), Ω ~ LKJ(2)"""


def _frequency_model(name, cls_name, data, options, check, summary, text):
    """A histogram model: ``cls_name`` from pymc_dpnoise.distributions, Dirichlet prior."""
    build = _frequency_build(cls_name)
    return ModelSpec(name, cls_name, data, options, check, build, summary, _doc(text, _FREQ_PRIOR))


def _truncated_model(name, cls_name, prior, integer, summary, text):
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
        _doc(text),
        metavar="RELEASES",
        what="file of released noisy sums, one per row",
    )


#: one row per command, fields in :class:`ModelSpec` order: name, distribution, data kind,
#: options, check, build, summary, description
MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in [
        ModelSpec(
            "clipped-normal",
            "LaplacePerturbedClippedNormal",
            SCALAR,
            _CLIPPED_NORMAL_OPTIONS,
            _clipped_normal_check,
            _clipped_normal_build,
            "reports of Normal values clipped to [lower, upper] plus Laplace noise",
            _doc(
                """\
            Model: x_i ~ Normal(mu, sigma); each report is
              z_i = clip(x_i, lower, upper) + Laplace(0, (upper - lower) / epsilon_i)
            fitted with pymc_dpnoise.LaplacePerturbedClippedNormal (x_i marginalised).

            Default priors, scaled to the bounds (h = (upper - lower) / 2):
              mu    ~ Normal((lower + upper) / 2, h)
              sigma ~ Gamma(alpha=2, beta=2 / h)      (prior mean h)
            e.g. for [-5, 5]: mu ~ Normal(0, 5), sigma ~ Gamma(2, 0.4).""",
            ),
        ),
        ModelSpec(
            "clipped-exponential",
            "LaplacePerturbedClippedExponential",
            SCALAR,
            _CLIPPED_EXPONENTIAL_OPTIONS,
            _clipped_exponential_check,
            _clipped_exponential_build,
            "reports of Exponential values clipped to [0, upper] plus Laplace noise",
            _doc(
                """\
            Model: x_i ~ Exponential(rate lam); each report is
              z_i = min(x_i, upper) + Laplace(0, upper / epsilon_i)
            fitted with pymc_dpnoise.LaplacePerturbedClippedExponential (x_i marginalised).

            Default prior, scaled to the bound:
              lam ~ Gamma(alpha=2, beta=upper / 2)     (prior mean of lam: 4 / upper)
            e.g. for upper = 5: lam ~ Gamma(2, 2.5).""",
            ),
        ),
        ModelSpec(
            "noisy-binomial",
            "LaplaceNoisyBinomial",
            COUNT_RELEASES,
            _NOISY_BINOMIAL_OPTIONS,
            _noisy_count_check,
            _noisy_binomial_build,
            "released counts of n Bernoulli records plus DP noise (central DP)",
            _doc(
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
        ),
        ModelSpec(
            "noisy-poisson",
            "LaplaceNoisyPoisson",
            COUNT_RELEASES,
            _NOISY_POISSON_OPTIONS,
            _noisy_count_check,
            _noisy_poisson_build,
            "released totals of Poisson counts plus DP noise (central DP)",
            _doc(
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
        ),
        _truncated_model(
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
        ),
        _truncated_model(
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
        ),
        ModelSpec(
            "truncated-normal",
            "LaplaceNoisyTruncatedNormal",
            PAIRS,
            _TRUNCATED_NORMAL_OPTIONS,
            _truncated_normal_check,
            _truncated_normal_build,
            "released noisy sums of x and x^2 of Normal records inside declared bounds "
            "(central DP)",
            _doc(
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
        ),
        ModelSpec(
            "noisy-multinomial",
            "LaplaceNoisyMultinomial",
            COUNT_VECTORS,
            _NOISY_MULTINOMIAL_OPTIONS,
            _noisy_multinomial_check,
            _noisy_multinomial_build,
            "released category counts with Laplace noise on every count (central DP)",
            _doc(
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
        ),
        _frequency_model(
            "oue",
            "OUELikelihood",
            BITS,
            (_EPSILON, _ALPHA),
            _need_epsilon,
            "histogram from optimal-unary-encoding reports (k bits each)",
            """\
            Each person holds an item out of k (item ~ Categorical(theta)), one-hot encodes it
            and reports every bit by randomized response: own bit 1 w.p. 1/2, others 1 w.p.
            1 / (1 + e^epsilon) (OUE).  Fitted with pymc_dpnoise.OUELikelihood.
            The file holds one report per row as k 0/1 columns (or one row per distinct
            pattern with --counts-column).""",
        ),
        _frequency_model(
            "sue",
            "SUELikelihood",
            BITS,
            (_EPSILON, _ALPHA),
            _need_epsilon,
            "histogram from symmetric-unary-encoding (basic RAPPOR) reports",
            """\
            Like oue, but every bit is kept w.p. e^(epsilon/2) / (1 + e^(epsilon/2)) and
            flipped otherwise (SUE, basic one-time RAPPOR).  Fitted with
            pymc_dpnoise.SUELikelihood.  File layout as for oue.""",
        ),
        _frequency_model(
            "unary-encoding",
            "UnaryEncodingLikelihood",
            BITS,
            _UE_OPTIONS,
            _ue_check,
            "histogram from unary-encoding reports with any keep/flip probabilities",
            """\
            Unary encoding with the item's own bit reported as 1 w.p. --keep-prob and every
            other bit w.p. --flip-prob.  Fitted with pymc_dpnoise.UnaryEncodingLikelihood.
            File layout as for oue.""",
        ),
        _frequency_model(
            "krr",
            "KRRLikelihood",
            CATEGORIES,
            _KRR_OPTIONS,
            _krr_check,
            "histogram from k-ary randomized-response reports (category ids)",
            """\
            Each person reports their item (0..k-1) w.p. e^epsilon / (e^epsilon + k - 1) and
            another item uniformly otherwise (k-RR, direct encoding).  Fitted with
            pymc_dpnoise.KRRLikelihood.  The file holds one category id per row (or one row
            per id with --counts-column).""",
        ),
        ModelSpec(
            "linreg",
            "PerturbedLinReg",
            LINREG_DATA,
            _LINREG_OPTIONS,
            _linreg_check,
            _linreg_build,
            "linear regression on Gaussian-perturbed features and responses",
            _doc(
                """\
            Each person holds x ~ N(0, Σ), y = theta'x + N(0, sigma²) and reports
            x + N(0, sigma_x² I) and y + N(0, sigma_y²).  Fitted with
            pymc_dpnoise.PerturbedLinReg.  Give the noise scales (--sigma-x, --sigma-y) or
            the release's budget (--epsilon, --delta, and --R, --R-y, --c as in
            pymc_dpnoise.mechanisms.perturb_linreg).""",
                _REG_PRIOR,
                ", sigma ~ HalfNormal(1).",
            ),
        ),
        ModelSpec(
            "logreg",
            "PerturbedLogReg",
            LOGREG_DATA,
            _LOGREG_OPTIONS,
            _logreg_check,
            _logreg_build,
            "logistic regression on perturbed features and randomized-response labels",
            _doc(
                """\
            Each person holds x ~ N(0, Σ), y ~ Bernoulli(sigmoid(theta'x)) and reports
            x + N(0, sigma_x² I) and y through randomized response with budget epsilon_y.
            Fitted with pymc_dpnoise.PerturbedLogReg.  Give --sigma-x and --epsilon-y, or
            the release's budget (--epsilon, --delta, --R, --c as in
            pymc_dpnoise.mechanisms.perturb_logreg).  The label column holds 0/1.""",
                _REG_PRIOR,
                ".",
            ),
        ),
        ModelSpec(
            "ss-normal",
            "SSNormalApprox",
            STATISTICS,
            _SS_OPTIONS,
            _ss_check,
            _ss_build,
            "GLM from released noisy sufficient statistics (normal approximation)",
            _doc(
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
        ),
    ]
}
