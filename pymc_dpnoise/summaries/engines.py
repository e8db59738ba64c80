"""The engines every summary runs on: NumPy arrays, DuckDB (files and relations) and any
dataframe Narwhals knows (pandas, Polars, PyArrow, Dask, PySpark, ...).

What is summarised lives in the sibling modules; this module only knows how to tell the
engines apart, check report columns the same way on each, and stream rows out of them.
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path

import numpy as np

CHUNK = 1 << 20


#: integers above this are not all exact in float64, the type every engine groups keys in
EXACT_KEYS = 2.0**53


def is_path(data) -> bool:
    return isinstance(data, str | os.PathLike)


def engine_of(data) -> str:
    """Which engine :func:`aggregate`-style functions use: file, duckdb, numpy or narwhals."""
    if is_path(data):
        return "file"
    mod = type(data).__module__.split(".")[0]
    if mod == "duckdb":
        return "duckdb"
    if mod in ("numpy", "builtins") or isinstance(data, np.ndarray):
        return "numpy"
    if mod == "pytensor":
        raise TypeError("data: give concrete reports (NumPy, dataframe or file), not a tensor")
    return "narwhals"


def real_param(name: str, value) -> float:
    """``value`` as a float; a string, a bool or anything else that is not a real number is
    a TypeError naming ``name`` (``float("1")`` and ``float(True)`` would pass silently)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: must be a real number, got {value!r} ({type(value).__name__})")
    return float(value)


def integer_param(name: str, value) -> int:
    """``value`` as an int; not an integer (a bool, a float, a string) is a TypeError."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: must be an integer, got {value!r} ({type(value).__name__})")
    return int(value)


def quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def file_source(path: Path) -> str:
    suffix = "".join(path.suffixes).lower()
    quoted = "'" + str(path).replace("'", "''") + "'"
    if ".parquet" in suffix or ".pq" in suffix:
        return f"read_parquet({quoted})"
    if ".csv" in suffix or ".tsv" in suffix:
        return f"read_csv({quoted})"
    raise ValueError(f"data: cannot tell the format of {str(path)!r} (use .parquet or .csv)")


#: DuckDB column types read as reports (numbers and booleans)
_SQL_NUMERIC = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "BOOLEAN",
}  # fmt: skip


def _not_numeric(name, dtype) -> TypeError:
    return TypeError(
        f"data: column {name!r} is not numeric (type {dtype}); reports must be numbers: "
        "convert the column first (a string column is never cast silently)"
    )


def _refuse_bad(name, nbad) -> None:
    if nbad:
        raise ValueError(
            f"data: reports must be finite; column {name!r} has {int(nbad)} NULL/NaN/inf "
            "value(s) (missing reports cannot be modelled through the mechanism: drop them)"
        )


def _refuse_empty(n) -> None:
    if int(n) == 0:
        raise ValueError("data: no reports (0 rows); a summary needs at least one report")


def _refuse_big_keys(name, biggest) -> None:
    if biggest is not None and float(biggest) >= EXACT_KEYS:
        raise ValueError(
            f"data: k-RR item ids must be below 2**53 = {EXACT_KEYS:.0f} (grouped exactly as "
            f"float64); column {name!r} holds {int(biggest)}"
        )


def check_reports(data, engine, columns=None, *, con=None, keys=False) -> int:
    """Check the report columns of ``data`` the same way on every engine; return N.

    In this order: every column is numeric (or boolean), else a TypeError naming it; there
    is at least one row; no column holds NULL, NaN or inf, else a ValueError naming the
    first such column.  ``columns``: the report columns (default: all); NumPy arrays name
    their columns ``column j`` (or ``data`` when 1-D).  ``keys``: the values are grouped as
    float64 keys, so an absolute value of ``2**53`` or more is refused too (checked in the
    column's own type, before any cast could merge two ids).
    """
    if engine == "numpy":
        z = np.asarray(data)
        if z.dtype.kind == "O":  # e.g. a list holding None: numbers and None only
            flat = z.ravel()
            for x in flat:
                if x is not None and (
                    isinstance(x, bool | np.bool_) or not isinstance(x, numbers.Real)
                ):
                    raise _not_numeric("data", f"object holding {type(x).__name__}")
            z = np.array([np.nan if x is None else x for x in flat], dtype=np.float64).reshape(
                z.shape
            )
        elif z.dtype.kind not in "biuf":
            raise _not_numeric("data", z.dtype)
        if z.ndim == 0 or z.shape[0] == 0 or z.size == 0:
            _refuse_empty(0)
        z2 = z.reshape(len(z), -1)
        for j in range(z2.shape[1]):
            name = "data" if z.ndim == 1 else f"column {j}"
            if z.dtype.kind == "f":
                _refuse_bad(name, np.count_nonzero(~np.isfinite(z2[:, j])))
            if keys and z.dtype.kind in "iuf":
                col = z2[:, j]  # in its own type: int64 ids are compared exactly
                _refuse_big_keys(name, max(abs(col.max().item()), abs(col.min().item())))
        return int(z.shape[0])
    if engine in ("file", "duckdb"):
        import duckdb

        if engine == "file":
            src = file_source(Path(data))
            rel = (con or duckdb.connect()).sql(f"SELECT * FROM {src}")
        else:
            rel = data
        types = dict(zip(rel.columns, (str(t) for t in rel.types), strict=True))
        names = list(types) if columns is None else list(columns)
        for c in names:
            if c not in types:
                raise ValueError(f"column: no column {c!r}; the columns are {list(types)}")
            t = types[c].upper()
            if t not in _SQL_NUMERIC and not t.startswith("DECIMAL"):
                raise _not_numeric(c, types[c])
        parts = ["count(*) AS n"]
        for i, c in enumerate(names):
            v = f"CAST({quote(c)} AS DOUBLE)"
            parts.append(f"count(*) FILTER (WHERE {v} IS NULL OR NOT isfinite({v})) AS b{i}")
            big = "max(abs(CAST({q} AS HUGEINT)))" if types[c].upper() != "BOOLEAN" else "0"
            if types[c].upper() in ("FLOAT", "DOUBLE") or types[c].upper().startswith("DEC"):
                big = f"max(abs(CASE WHEN isfinite({v}) THEN {v} END))"
            parts.append(big.format(q=quote(c)) + f" AS m{i}")
        row = rel.aggregate(", ".join(parts)).fetchall()[0]
        _refuse_empty(row[0])
        for i, c in enumerate(names):
            _refuse_bad(c, row[1 + 2 * i])
            if keys:
                _refuse_big_keys(c, row[2 + 2 * i])
        return int(row[0])
    import narwhals as nw

    frame, names = frame_columns(data, columns)
    schema = frame.collect_schema()
    for c in names:
        if c not in schema:
            raise ValueError(f"column: no column {c!r}; the columns are {list(schema)}")
        dtype = schema[c]
        if not (dtype.is_numeric() or dtype == nw.Boolean):
            raise _not_numeric(c, dtype)
    aggs = [nw.len().alias("n")]
    for i, c in enumerate(names):
        if schema[c].is_float():
            z = nw.col(c)
            bad = nw.when(z.is_null()).then(True).otherwise(z.is_nan() | (z.abs() == float("inf")))
            aggs.append(nw.when(bad).then(0.0).otherwise(z.abs()).max().alias(f"m{i}"))
        else:  # integers and booleans: only NULL is bad, and no cast (ids stay exact)
            bad = nw.col(c).is_null()
            big = nw.col(c).abs().max() if schema[c] != nw.Boolean else nw.lit(0)
            aggs.append(big.alias(f"m{i}"))
        aggs.append(nw.when(bad).then(nw.lit(1)).otherwise(nw.lit(0)).sum().alias(f"b{i}"))
    out = frame.select(*aggs)
    if isinstance(out, nw.LazyFrame):
        out = out.collect()
    n = int(out["n"].to_numpy()[0])
    _refuse_empty(n)
    for i, c in enumerate(names):
        _refuse_bad(c, out[f"b{i}"].to_numpy()[0])
        if keys:
            _refuse_big_keys(c, out[f"m{i}"].to_numpy()[0])
    return n


def frame_columns(data, columns):
    """Narwhals frame and its report columns (all columns unless ``columns`` names them)."""
    import warnings

    import narwhals as nw

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Dask support is moving out of Narwhals", category=FutureWarning
        )
        frame = nw.from_native(data)
    names = list(columns) if columns is not None else frame.collect_schema().names()
    return frame, names


def one_column(data, engine, column):
    """The report column of a file, relation or dataframe (None for arrays)."""
    if column is not None or engine == "numpy":
        return column
    if engine == "file":
        raise ValueError("column: name the column of reports in the file")
    if engine == "duckdb":
        names = list(data.columns)
    else:
        names = frame_columns(data, None)[1]
    if len(names) != 1:
        what = "relation" if engine == "duckdb" else "dataframe"
        raise ValueError(f"column: the {what} has columns {names}; say which holds the reports")
    return names[0]


def count_reports(data, column):
    if is_path(data):
        import duckdb

        src = file_source(Path(data))
        return int(duckdb.sql(f"SELECT count(*) FROM {src}").fetchall()[0][0])
    mod = type(data).__module__.split(".")[0]
    if mod == "duckdb":
        return int(data.aggregate("count(*)").fetchall()[0][0])
    if mod in ("numpy", "builtins") or isinstance(data, np.ndarray):
        return int(np.size(data))
    import narwhals as nw

    frame = nw.from_native(data)
    out = frame.select(nw.len())
    if isinstance(out, nw.LazyFrame):
        out = out.collect()
    return int(out.item())


def run_sql(data, engine, columns, build, con=None):
    """Run ``build(source, columns)`` (a SQL query) on a file or a DuckDB relation."""
    import duckdb

    if engine == "file":
        if columns is None:
            src = file_source(Path(data))
            columns = [d[0] for d in duckdb.sql(f"SELECT * FROM {src} LIMIT 0").description]
        return (
            (con or duckdb.connect())
            .execute(build(file_source(Path(data)), list(columns)))
            .fetchnumpy()
        )
    columns = list(columns) if columns is not None else list(data.columns)
    return data.query("__pmd_reports", build("__pmd_reports", columns)).fetchnumpy()


def filled(a):
    return np.ma.filled(np.ma.asarray(a, dtype=np.float64), np.nan)


def _arrow_batches(rel, rows):
    """Record batches of a DuckDB relation: ``to_arrow_reader`` (DuckDB >= 1.4; the older
    ``fetch_record_batch`` is deprecated there) or ``fetch_record_batch`` before it."""
    to_reader = getattr(rel, "to_arrow_reader", None)
    return to_reader(rows) if to_reader is not None else rel.fetch_record_batch(rows)


def report_chunks(data, engine, columns, con=None):
    """Yield the report rows of ``data`` as float64 arrays of at most ``CHUNK`` rows.

    NumPy arrays (and memory maps) are sliced; files and DuckDB relations are streamed by
    DuckDB in Arrow record batches; dataframes go through Narwhals (lazy frames are
    collected, report columns only).
    """
    if engine == "numpy":
        w = np.asarray(data)
        if w.ndim != 2 or w.shape[1] < 2:
            raise ValueError(f"data: expected (N, d + 1) report rows, got shape {w.shape}")
        for start in range(0, len(w), CHUNK):
            yield np.asarray(w[start : start + CHUNK], dtype=np.float64)
        return
    if engine in ("file", "duckdb"):
        import duckdb

        if engine == "file":
            src = file_source(Path(data))
            conn = con or duckdb.connect()
            cols = columns or [d[0] for d in conn.sql(f"SELECT * FROM {src} LIMIT 0").description]
            sel = ", ".join(f"CAST({quote(c)} AS DOUBLE)" for c in cols)
            reader = _arrow_batches(conn.sql(f"SELECT {sel} FROM {src}"), CHUNK)
        else:
            cols = list(columns) if columns is not None else list(data.columns)
            sel = ", ".join(f"CAST({quote(c)} AS DOUBLE) AS {quote(c)}" for c in cols)
            reader = data.query("__pmd_reports", f"SELECT {sel} FROM __pmd_reports")
            reader = _arrow_batches(reader, CHUNK)
        for batch in reader:
            if batch.num_rows:
                yield np.column_stack(
                    [batch.column(i).to_numpy(zero_copy_only=False) for i in range(len(cols))]
                ).astype(np.float64)
        return
    import narwhals as nw

    frame, names = frame_columns(data, columns)
    frame = frame.select(*[nw.col(c).cast(nw.Float64) for c in names])
    if isinstance(frame, nw.LazyFrame):
        frame = frame.collect()
    n = len(frame)
    for start in range(0, n, CHUNK):
        yield np.asarray(frame[start : min(start + CHUNK, n)].to_numpy(), dtype=np.float64)
