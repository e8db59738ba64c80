"""Reading helpers shared by the model families: choosing columns and checking their values.

A family's reader gets an open :class:`~._read.Table` and the parsed arguments; these helpers
resolve the columns the options name (or the only one left), refuse a column named twice,
check every value (one-line error naming the data row and the column of the first bad one)
and read a budget or a record count given as a number or as a column.  NumPy is imported
inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from ._base import InputError
from ._spec import fmt

# --------------------------------------------------------------------------------------------
# checking values
# --------------------------------------------------------------------------------------------


def check_values(table, idx, values, kind, *, k=None):
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
    refuse_rows(table, idx, values, bad, why)


def refuse_rows(table, idx, values, bad, why):
    """One-line error on the first row where ``bad``: ``why`` formatted with its value ``v``."""
    if bad.any():
        row = int(bad.argmax())
        more = f" ({int(bad.sum())} bad values in total)" if bad.sum() > 1 else ""
        msg = why.format(v=fmt(values[row]))
        raise InputError(
            f"{table.display}: data row {row + 1}: {msg} in column {table.label(idx)}{more}"
        )


# --------------------------------------------------------------------------------------------
# choosing columns
# --------------------------------------------------------------------------------------------


def reserved_columns(table, args, *names):
    """Column indices named by the options ``names`` (epsilon, counts ...) that are set."""
    out = set()
    for name in names:
        spec = getattr(args, name, None)
        if spec is not None:
            out.add(table.resolve(spec, name.replace("_", " ")))
    return out


def candidates(table, free):
    return ", ".join(table.label(i) for i in free)


def pick_column(table, spec, reserved, what, flag="--column"):
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
            f"({candidates(table, free)}); choose one with {flag}"
        )
    return free[0]


def distinct_columns(table, idx, flag):
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


def column_names(table, idx, fallback, what):
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


def chosen_columns(table, args, others):
    """``--columns``, or every column that the options ``others`` (e.g. ``epsilon_column``)
    do not name; a column named by both is an error."""
    reserved = reserved_columns(table, args, *others)
    if args.columns is None:
        return table.unused(reserved)
    idx = distinct_columns(table, [(c, table.resolve(c)) for c in args.columns], "--columns")
    both = reserved.intersection(idx)
    if both:
        what = " or ".join(o.removesuffix("_column") for o in others)
        raise InputError(f"--columns: column {table.label(min(both))} is also the {what} column")
    return idx


# --------------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------------


def value_or_column(table, args, name, kind, used):
    """``--NAME`` or ``--NAME-column``: (a number or an array, its description, the column
    index or None); the column's values are checked as ``kind``."""
    import numpy as np

    column = getattr(args, f"{name}_column", None)
    if column is None:
        value = getattr(args, name, None)
        return value, ("" if value is None else f"{name}={fmt(value)}"), None
    idx = table.resolve(column, f"{name} column")
    if idx in used:
        raise InputError(
            f"--{name}-column {column}: column {table.label(idx)} is also read as reports"
        )
    (values,) = table.read([idx])
    check_values(table, idx, values, kind)
    desc = (
        f"{name} from column {table.label(idx)} "
        f"(min {fmt(np.min(values))}, max {fmt(np.max(values))})"
    )
    return values, desc, idx


def read_epsilon(table, args, used):
    """(epsilon: float or array, its description, its column index or None)."""
    return value_or_column(table, args, "epsilon", "epsilon", used)


def scalar_read(table, args, *, what="reports", min_rows=2, missing=False):
    """One numeric value per row (``--column``) with its budget (and ``n`` if the model has
    ``--n``/``--n-column``: the released sums).  With ``missing``, missing cells are NaN
    (suppressed cells of a thresholded release)."""
    import numpy as np

    with_n = hasattr(args, "n_column")
    reserved = reserved_columns(table, args, "epsilon_column", *(["n_column"] if with_n else []))
    idx = pick_column(table, args.column, reserved, what)
    (z,) = table.read([idx], missing=missing)
    if missing:
        refuse_rows(table, idx, z, np.isinf(z), "report is {v}")
    else:
        check_values(table, idx, z, "report")
    if len(z) < min_rows:
        raise InputError(f"{table.display}: only {len(z)} report, need at least {min_rows}")
    eps, eps_desc, _ = read_epsilon(table, args, {idx})
    out = dict(z=z, epsilon=eps, epsilon_desc=eps_desc)
    if with_n:
        out["n"], out["n_desc"], _ = value_or_column(table, args, "n", "records", {idx})
    return dict(
        out,
        read=f"Read {len(z)} {what} from {table.display} (column {table.label(idx)}).",
        note=None,
        column=idx,
    )
