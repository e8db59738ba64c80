"""``fit oue``, ``sue``, ``unary-encoding`` and ``krr``: frequency oracles (local DP).

Unary-encoding reports (k 0/1 columns per row, :data:`BITS`) and k-ary randomized response
(one category id per row, :data:`CATEGORIES`), identical reports grouped into patterns with
counts; the model is the histogram ``theta ~ Dirichlet``.
"""

from __future__ import annotations

from .._base import InputError, int_between, positive_float, probability
from .._columns import (
    check_values,
    chosen_columns,
    column_names,
    pick_column,
    read_epsilon,
    reserved_columns,
)
from .._options import COUNTS, EPSILON, EPSILON_OR_COLUMN, column_opt, columns_opt
from .._spec import Built, DataKind, Example, Family, ModelSpec, Opt, doc, fmt

# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


def _grouped(table, args, values, used):
    """Frequency reports ``values`` (N, k) with their counts and budgets, identical
    (report, epsilon) rows grouped: the likelihood is the same, the work per distinct row."""
    import numpy as np

    counts, _ = _read_counts(table, args, len(values))
    eps, eps_desc, _ = read_epsilon(table, args, used)
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
    check_values(table, idx, c, "count")
    if c.sum() <= 0:
        raise InputError(f"{table.display}: the counts in column {table.label(idx)} sum to 0")
    return c, idx


def _bits_read(table, args):
    import numpy as np

    idx = chosen_columns(table, args, ("counts_column", "epsilon_column"))
    if len(idx) < 2:
        raise InputError(
            f"{table.display}: {len(idx)} bit column(s); a unary-encoding report has k >= 2 bits"
        )
    bits = np.column_stack(table.read(idx))
    for j, i in enumerate(idx):
        check_values(table, i, bits[:, j], "bit")
    out = _grouped(table, args, bits, set(idx))
    counts, k = out["counts"], len(idx)
    return dict(
        out,
        z=out["z"].astype(np.int8),
        items=column_names(table, idx, str, "bits (items)"),
        read=(
            f"Read {fmt(counts.sum())} reports of k = {k} bits from {table.display} "
            f"({len(counts)} distinct patterns)."
        ),
    )


#: unary-encoding reports: k 0/1 columns per row (optionally with a count per pattern)
BITS = DataKind(
    (
        columns_opt(
            "--columns",
            "the k bit columns (0/1), names or 0-based indices separated by commas "
            "(default: every column no other option uses)",
        ),
        COUNTS,
        column_opt(
            "--epsilon-column",
            "column of per-report budgets ε > 0 (instead of --epsilon; OUE and SUE only)",
        ),
    ),
    _bits_read,
)


def _category_read(table, args):
    import numpy as np

    reserved = reserved_columns(table, args, "epsilon_column", "counts_column")
    idx = pick_column(table, args.column, reserved, "category ids")
    (y,) = table.read([idx])
    check_values(table, idx, y, "category", k=args.k)
    out = _grouped(table, args, y[:, None], {idx})
    counts = out["counts"]
    return dict(
        out,
        z=out["z"][:, 0].astype(np.int64),
        items=[str(i) for i in range(args.k)],
        read=(
            f"Read {fmt(counts.sum())} reports (category ids 0..{args.k - 1}) from "
            f"{table.display} (column {table.label(idx)})."
        ),
    )


#: k-ary randomized response: one category id per row
CATEGORIES = DataKind(
    (
        column_opt(
            "--column",
            "column of reported category ids 0..k-1 (default: the one column no other "
            "option uses; required if there are several)",
        ),
        COUNTS,
        EPSILON_OR_COLUMN,
    ),
    _category_read,
)


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------


_ALPHA = Opt(
    "--alpha",
    "theta ~ Dirichlet(alpha, ..., alpha): the prior on the k item probabilities",
    type=positive_float,
    default=1.0,
    prior=True,
)


def _need_epsilon(args):
    if (args.epsilon is None) == (args.epsilon_column is None):
        raise InputError("give one of --epsilon or --epsilon-column")
    if args.epsilon is not None and args.epsilon > 700:
        raise InputError(f"--epsilon must be <= 700 (e^epsilon overflows), got {fmt(args.epsilon)}")


def _frequency_build(cls_name, extra_desc=""):
    def build(args, data):
        import pymc as pm

        from ... import distributions

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
            f"keep_prob={fmt(args.keep_prob)}, flip_prob={fmt(args.flip_prob)}"
            if cls_name == "UnaryEncodingLikelihood"
            else data["epsilon_desc"]
        )
        return Built(
            model,
            f"z ~ {cls_name}(theta, {desc}), k = {k}{extra_desc}",
            f"theta ~ Dirichlet({fmt(args.alpha)} x {k})",
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
        raise InputError(f"--epsilon must be <= 700 (e^epsilon overflows), got {fmt(args.epsilon)}")


_FREQ_PRIOR = """

    Default prior: theta ~ Dirichlet(1, ..., 1) (uniform on the simplex; --alpha).
    Identical reports are grouped (counts), so the cost grows with the number of distinct
    patterns, not of reports."""


def _frequency_model(name, cls_name, data, options, check, summary, text, *, synopsis):
    """A histogram model: ``cls_name`` from pymc_dpnoise.distributions, Dirichlet prior."""
    build = _frequency_build(cls_name)
    description = doc(text, _FREQ_PRIOR)
    return ModelSpec(
        name, cls_name, data, options, check, build, summary, description, synopsis=synopsis
    )


# --------------------------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------------------------


OUE = _frequency_model(
    "oue",
    "OUELikelihood",
    BITS,
    (EPSILON, _ALPHA),
    _need_epsilon,
    "histogram from optimal-unary-encoding reports (k bits each)",
    """\
    Each person holds an item out of k (item ~ Categorical(theta)), one-hot encodes it
    and reports every bit by randomized response: own bit 1 w.p. 1/2, others 1 w.p.
    1 / (1 + e^epsilon) (OUE).  Fitted with pymc_dpnoise.OUELikelihood.
    The file holds one report per row as k 0/1 columns (or one row per distinct
    pattern with --counts-column).""",
    synopsis="--epsilon or --epsilon-column",
)


SUE = _frequency_model(
    "sue",
    "SUELikelihood",
    BITS,
    (EPSILON, _ALPHA),
    _need_epsilon,
    "histogram from symmetric-unary-encoding (basic RAPPOR) reports",
    """\
    Like oue, but every bit is kept w.p. e^(epsilon/2) / (1 + e^(epsilon/2)) and
    flipped otherwise (SUE, basic one-time RAPPOR).  Fitted with
    pymc_dpnoise.SUELikelihood.  File layout as for oue.""",
    synopsis="--epsilon or --epsilon-column",
)


UNARY_ENCODING = _frequency_model(
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
    synopsis="--keep-prob --flip-prob",
)


KRR = _frequency_model(
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
    synopsis="--k, --epsilon or --epsilon-column",
)

#: the family's commands (in ``fit --help`` order) and its worked example
FAMILY = Family(
    "frequency",
    "Frequency oracles (local DP histograms)",
    "Every person holds one item out of k and reports it through a frequency oracle: unary "
    "encoding (k bits, each randomized: oue, sue, unary-encoding) or k-ary randomized "
    "response (one category id: krr).  The model is the histogram theta ~ Dirichlet.  "
    "Identical reports are grouped, and a file may hold one row per distinct report with "
    "its multiplicity (--counts-column).",
    (OUE, SUE, UNARY_ENCODING, KRR),
    Example(
        """\
import numpy as np
import pandas as pd
from pymc_dpnoise import mechanisms

rng = np.random.default_rng(4)
# 3000 people, one item of k = 4 each; theta = (0.4, 0.3, 0.2, 0.1)
items = rng.choice(4, size=3000, p=[0.4, 0.3, 0.2, 0.1])
# each reports k = 4 bits by optimal unary encoding at epsilon = 2
bits = mechanisms.oue_perturb(items, 4, 2.0, rng)
table = pd.DataFrame(bits, columns=["a", "b", "c", "d"])
table.to_csv("bits.csv", index=False)
""",
        "pymc-dpnoise fit oue bits.csv --epsilon 2",
        "The reports are grouped into at most 2^4 = 16 distinct patterns; the posteriors of "
        "theta[a] ... theta[d] are centred near 0.4, 0.3, 0.2 and 0.1.",
    ),
)
