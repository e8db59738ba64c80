r"""Binned summaries of privatised reports, built in one group-by pass on any engine.

N clipped Gaussian or clipped exponential Laplace reports (:class:`~pymc_dpnoise.LaplacePerturbedClippedNormal`,
:class:`~pymc_dpnoise.LaplacePerturbedClippedExponential`) enter the likelihood through a
``(K + 2, 4)`` table, whatever N is:

=========  ===================================  =====================================================
row        reports                              columns
=========  ===================================  =====================================================
0          :math:`z \le a` (left tail)          :math:`n_L,\ \sum (a - z),\ 0,\ 0`
1 … K      :math:`a < z < b`, bin j = row − 1   :math:`n_j,\ \sum (z-c_j),\ \sum (z-c_j)^2,\ \sum |z-c_j|^3`
K + 1      :math:`z \ge b` (right tail)         :math:`n_R,\ \sum (z - b),\ 0,\ 0`
=========  ===================================  =====================================================

with :math:`h = (b - a)/K` and :math:`c_j = a + (j + \tfrac12) h`.  The tails are exact
sufficient statistics; the bins feed a second-order expansion of the log density around
:math:`c_j` whose error is bounded by :math:`\tfrac16 \sum_j \sup_j|f'''| \sum_{z \in j}|z - c_j|^3`
(:func:`pymc_dpnoise.math.clipped_normal_summary_logp` derives it).  Bins are aligned with
the clipping bounds, where the density has kinks.

**Bin assignment is the same expression in every engine**, so every engine gives identical
counts (moments differ only by summation order):

.. code-block:: text

    j   = min(max(floor((z - a) * r), 0), K - 1)        # r = K / (b - a), float64
    row = 0 if z <= a else K + 1 if z >= b else j + 1
    d   = a - z | z - (a + (j + 0.5) * h) | z - b        # left | inside | right

Engines (:func:`summarize` dispatches on the type of ``data``):

* NumPy arrays (and anything :func:`numpy.asarray` takes), in chunks of ``2**20`` reports;
* a path to a Parquet or CSV file, or a DuckDB relation: one SQL ``GROUP BY`` run by DuckDB,
  streaming the file (nothing is loaded into Python memory);
* any dataframe Narwhals knows (pandas, Polars eager or lazy, PyArrow, Dask, PySpark, ...),
  with the group-by executed by the backend itself (lazily where the backend is lazy).

The same engines build the summaries of the other models: :func:`summarize_histogram`
(distinct OUE / SUE / unary-encoding bit patterns or k-RR ids and their counts, for the
frequency likelihoods' ``counts=``) and :func:`summarize_regression` (N, column sums and the
scatter matrix, for :class:`~pymc_dpnoise.PerturbedLinRegSummary`).  ``pymc-dpnoise fit``
summarises clipped reports from :data:`SUMMARY_THRESHOLD` reports on
(:func:`summarize_if_large`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import os
from pathlib import Path

import numpy as np

__all__ = [
    "SUMMARY_THRESHOLD",
    "ClippedBinning",
    "ClippedSummary",
    "HistogramSummary",
    "LogRegSummary",
    "ScatterSummary",
    "aggregate",
    "choose_n_bins",
    "summarize",
    "summarize_histogram",
    "summarize_if_large",
    "summarize_logreg",
    "summarize_regression",
]

_CHUNK = 1 << 20
_COLUMNS = ("n", "s1", "s2", "a3")


# --------------------------------------------------------------------------------------------
# The summary object
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ClippedSummary:
    """Binned summary of clipped Laplace reports (see the module docstring for the table).

    Pass it as ``observed`` to :class:`~pymc_dpnoise.LaplacePerturbedClippedNormalSummary` or
    :class:`~pymc_dpnoise.LaplacePerturbedClippedExponentialSummary`; ``np.asarray(summary)``
    is the ``(n_bins + 2, 4)`` table.

    Attributes
    ----------
    table : ndarray, shape (n_bins + 2, 4)
    lower, upper, epsilon : float
        Clipping bounds and (scalar) privacy budget of every report.
    tol : float or None
        Error budget in nats the bin count was chosen for (None if ``n_bins`` was given).
    design_bound : float or None
        The error bound promised at design time over the parameter box (nats).
    """

    table: np.ndarray
    lower: float
    upper: float
    epsilon: float
    tol: float | None = None
    design_bound: float | None = None

    def __post_init__(self):
        t = np.asarray(self.table, dtype=np.float64)
        if t.ndim != 2 or t.shape[1] != 4 or t.shape[0] < 3:
            raise ValueError(f"table: expected shape (n_bins + 2, 4), got {t.shape}")
        object.__setattr__(self, "table", t)

    def __array__(self, dtype=None, copy=None):
        return self.table if dtype is None else self.table.astype(dtype)

    @property
    def n_bins(self) -> int:
        return self.table.shape[0] - 2

    @property
    def n_total(self) -> int:
        return int(np.rint(self.table[:, 0].sum()))

    @property
    def bin_width(self) -> float:
        return (self.upper - self.lower) / self.n_bins

    @property
    def centres(self) -> np.ndarray:
        return self.lower + (np.arange(self.n_bins) + 0.5) * self.bin_width


# --------------------------------------------------------------------------------------------
# Binning: one expression, one method per engine
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ClippedBinning:
    """Bins of width ``(upper - lower)/n_bins`` on ``(lower, upper)`` plus the two tails."""

    lower: float
    upper: float
    n_bins: int

    def __post_init__(self):
        lo, hi = _real("lower", self.lower), _real("upper", self.upper)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"lower, upper: need finite lower < upper, got {lo}, {hi}")
        if _integer("n_bins", self.n_bins) < 1:
            raise ValueError(f"n_bins: must be >= 1, got {self.n_bins}")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "n_bins", int(self.n_bins))

    @property
    def width(self) -> float:
        return (self.upper - self.lower) / self.n_bins

    @property
    def inv_width(self) -> float:
        # multiply, never divide: Polars rewrites division by a literal into a multiplication
        # by its inverse, so every engine multiplies by this same double
        return self.n_bins / (self.upper - self.lower)

    @property
    def n_rows(self) -> int:
        return self.n_bins + 2

    def empty(self) -> np.ndarray:
        return np.zeros((self.n_rows, 4))

    # ---- NumPy ----------------------------------------------------------------------------
    def numpy(self, z) -> np.ndarray:
        """Table of one array of reports (processed in chunks)."""
        z = np.asarray(z, dtype=np.float64).ravel()
        out = self.empty()
        for start in range(0, z.size, _CHUNK):
            out += self._numpy_chunk(z[start : start + _CHUNK])
        return out

    def _numpy_chunk(self, z):
        bad = ~np.isfinite(z)
        if bad.any():
            raise ValueError(
                f"data: reports must be finite; found {int(bad.sum())} NaN/inf value(s)"
            )
        a, b, h, k = self.lower, self.upper, self.width, self.n_bins
        j = np.clip(np.floor((z - a) * self.inv_width), 0, k - 1)
        left = z <= a
        right = z >= b
        inside = ~(left | right)
        row = np.where(left, 0, np.where(right, k + 1, j.astype(np.int64) + 1))
        d = np.where(left, a - z, np.where(right, z - b, z - (a + (j + 0.5) * h)))
        d2 = np.where(inside, d * d, 0.0)
        d3 = np.where(inside, np.abs(d) * d * d, 0.0)
        cols = [np.bincount(row, weights=w, minlength=k + 2) for w in (None, d, d2, d3)]
        return np.stack(cols, axis=1).astype(np.float64)

    # ---- SQL (DuckDB) ---------------------------------------------------------------------
    def sql(self, source: str, column: str) -> tuple[str, dict]:
        """A DuckDB query (with named parameters) reading ``column`` from ``source``."""
        col = '"' + column.replace('"', '""') + '"'
        query = f"""
        WITH t AS (SELECT CAST({col} AS DOUBLE) AS z FROM {source}),
        u AS (SELECT z, LEAST(GREATEST(floor((z - $a) * $r), 0.0), $kmax) AS j FROM t),
        v AS (
          SELECT
            CASE WHEN z <= $a THEN 0 WHEN z >= $b THEN $k + 1 ELSE CAST(j AS BIGINT) + 1 END
              AS row,
            CASE WHEN z <= $a THEN $a - z WHEN z >= $b THEN z - $b
                 ELSE z - ($a + (j + 0.5) * $h) END AS d,
            (z > $a AND z < $b) AS ins,
            (z IS NULL OR NOT isfinite(z)) AS bad
          FROM u)
        SELECT row, count(*) AS n, sum(d) AS s1,
               sum(CASE WHEN ins THEN d * d ELSE 0.0 END) AS s2,
               sum(CASE WHEN ins THEN abs(d) * d * d ELSE 0.0 END) AS a3,
               sum(CAST(bad AS BIGINT)) AS nbad
        FROM v GROUP BY row
        """
        params = dict(
            a=self.lower,
            b=self.upper,
            h=self.width,
            r=self.inv_width,
            kmax=float(self.n_bins - 1),
        )
        # exact double literals (DuckDB reads exponent notation as DOUBLE, correctly rounded);
        # relations cannot take prepared parameters
        for key, val in params.items():
            query = query.replace(f"${key}", f"({val:.17e})")
        return query.replace("$k", str(self.n_bins)), {}

    # ---- Narwhals -------------------------------------------------------------------------
    def narwhals_exprs(self, column: str):
        """``(row, d, d2, d3)`` Narwhals expressions on ``column``."""
        import narwhals as nw

        a, b, h, k = self.lower, self.upper, self.width, self.n_bins
        z = nw.col(column).cast(nw.Float64)
        j = ((z - a) * self.inv_width).floor().clip(0.0, float(k - 1))
        left = z <= a
        right = z >= b
        inside = (z > a) & (z < b)
        row = (
            nw.when(left)
            .then(nw.lit(0))
            .otherwise(nw.when(right).then(nw.lit(k + 1)).otherwise(j.cast(nw.Int64) + 1))
            .cast(nw.Int64)
        )
        d = (
            nw.when(left)
            .then(a - z)
            .otherwise(nw.when(right).then(z - b).otherwise(z - (a + (j + 0.5) * h)))
        )
        return row, d, inside

    def finish(self, rows, n, s1, s2, a3) -> np.ndarray:
        """Scatter grouped rows (any order, absent rows = empty) into the table."""
        out = self.empty()
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_rows):
            raise RuntimeError("aggregation produced a bin index out of range")
        for c, v in enumerate((n, s1, s2, a3)):
            np.add.at(out[:, c], rows, np.asarray(v, dtype=np.float64))
        return out


# --------------------------------------------------------------------------------------------
# Engines
# --------------------------------------------------------------------------------------------


def _is_path(data) -> bool:
    return isinstance(data, str | os.PathLike)


def _real(name: str, value) -> float:
    """``value`` as a float; a string, a bool or anything else that is not a real number is
    a TypeError naming ``name`` (``float("1")`` and ``float(True)`` would pass silently)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: must be a real number, got {value!r} ({type(value).__name__})")
    return float(value)


def _integer(name: str, value) -> int:
    """``value`` as an int; not an integer (a bool, a float, a string) is a TypeError."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: must be an integer, got {value!r} ({type(value).__name__})")
    return int(value)


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
    if biggest is not None and float(biggest) >= _EXACT_KEYS:
        raise ValueError(
            f"data: k-RR item ids must be below 2**53 = {_EXACT_KEYS:.0f} (grouped exactly as "
            f"float64); column {name!r} holds {int(biggest)}"
        )


def _check_reports(data, engine, columns=None, *, con=None, keys=False) -> int:
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
            src = _file_source(Path(data))
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
            v = f"CAST({_quote(c)} AS DOUBLE)"
            parts.append(f"count(*) FILTER (WHERE {v} IS NULL OR NOT isfinite({v})) AS b{i}")
            big = "max(abs(CAST({q} AS HUGEINT)))" if types[c].upper() != "BOOLEAN" else "0"
            if types[c].upper() in ("FLOAT", "DOUBLE") or types[c].upper().startswith("DEC"):
                big = f"max(abs(CASE WHEN isfinite({v}) THEN {v} END))"
            parts.append(big.format(q=_quote(c)) + f" AS m{i}")
        row = rel.aggregate(", ".join(parts)).fetchall()[0]
        _refuse_empty(row[0])
        for i, c in enumerate(names):
            _refuse_bad(c, row[1 + 2 * i])
            if keys:
                _refuse_big_keys(c, row[2 + 2 * i])
        return int(row[0])
    import narwhals as nw

    frame, names = _frame_columns(data, columns)
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


def _duckdb_table(binning, source, column, con=None, relation=None):
    import duckdb

    if relation is not None:
        query, _ = binning.sql("__pmd_reports", column)
        res = relation.query("__pmd_reports", query).fetchnumpy()
    else:
        query, _ = binning.sql(source, column)
        res = (con or duckdb.connect()).execute(query).fetchnumpy()
    if res["nbad"].sum() > 0:
        raise ValueError(
            f"data: reports must be finite; found {int(res['nbad'].sum())} NULL/NaN/inf value(s)"
        )
    return binning.finish(res["row"], res["n"], res["s1"], res["s2"], res["a3"])


def _file_source(path: Path) -> str:
    suffix = "".join(path.suffixes).lower()
    quoted = "'" + str(path).replace("'", "''") + "'"
    if ".parquet" in suffix or ".pq" in suffix:
        return f"read_parquet({quoted})"
    if ".csv" in suffix or ".tsv" in suffix:
        return f"read_csv({quoted})"
    raise ValueError(f"data: cannot tell the format of {str(path)!r} (use .parquet or .csv)")


def _narwhals_table(binning, data, column):
    import warnings

    import narwhals as nw

    with warnings.catch_warnings():
        # Narwhals 2.2x announces that Dask support moves to a separate `narwhals-dask`
        # package; that package is not released yet, and the built-in support works.
        warnings.filterwarnings(
            "ignore", message="Dask support is moving out of Narwhals", category=FutureWarning
        )
        frame = nw.from_native(data)
    if column is None:
        names = frame.collect_schema().names()
        if len(names) != 1:
            raise ValueError(
                f"column: the dataframe has columns {names}; say which holds the reports"
            )
        column = names[0]
    row, d, inside = binning.narwhals_exprs(column)
    zc = nw.col(column).cast(nw.Float64)
    bad = (zc.is_null() | zc.is_nan() | (zc.abs() == float("inf"))).cast(nw.Int64)
    bad = nw.when(zc.is_null()).then(nw.lit(1)).otherwise(bad).cast(nw.Int64)
    staged = frame.select(
        row.alias("row"),
        d.alias("d"),
        nw.when(inside).then(d * d).otherwise(0.0).alias("d2"),
        nw.when(inside).then(d.abs() * d * d).otherwise(0.0).alias("d3"),
        bad.alias("bad"),
    )
    grouped = staged.group_by("row").agg(
        nw.len().alias("n"),
        nw.col("d").sum().alias("s1"),
        nw.col("d2").sum().alias("s2"),
        nw.col("d3").sum().alias("a3"),
        nw.col("bad").sum().alias("nbad"),
    )
    if isinstance(grouped, nw.LazyFrame):
        grouped = grouped.collect()
    res = {c: grouped[c].to_numpy() for c in ("row", "n", "s1", "s2", "a3", "nbad")}
    if res["nbad"].sum() > 0:
        raise ValueError(
            f"data: reports must be finite; found {int(res['nbad'].sum())} NULL/NaN/inf value(s)"
        )
    return binning.finish(res["row"], res["n"], res["s1"], res["s2"], res["a3"])


def aggregate(data, binning, *, column=None, con=None) -> np.ndarray:
    """Run ``binning`` over ``data`` in one group-by pass and return the summary table.

    Parameters
    ----------
    data : array_like, str or PathLike, DuckDB relation, or a dataframe
        NumPy-like arrays are binned in chunks; a ``.parquet``/``.csv`` path is streamed by
        DuckDB; a DuckDB relation is queried in place; any other dataframe (pandas, Polars,
        PyArrow, Dask, PySpark, ...) goes through Narwhals and is grouped by its own engine.
    binning : ClippedBinning
        The bins (and the per-engine expressions).
    column : str, optional
        Column of the reports (needed for files and dataframes with several columns).
    con : duckdb connection, optional
        For files and relations; a fresh in-memory connection otherwise.

    Raises
    ------
    TypeError
        A report column that is not numeric (strings are never cast).
    ValueError
        No reports, or NULL / NaN / inf reports (the message names the column).
    """
    engine = _engine(data)
    column = _one_column(data, engine, column)
    _check_reports(data, engine, None if column is None else [column], con=con)
    return _aggregate(data, binning, column=column, con=con)


def _one_column(data, engine, column):
    """The report column of a file, relation or dataframe (None for arrays)."""
    if column is not None or engine == "numpy":
        return column
    if engine == "file":
        raise ValueError("column: name the column of reports in the file")
    if engine == "duckdb":
        names = list(data.columns)
    else:
        names = _frame_columns(data, None)[1]
    if len(names) != 1:
        what = "relation" if engine == "duckdb" else "dataframe"
        raise ValueError(f"column: the {what} has columns {names}; say which holds the reports")
    return names[0]


def _aggregate(data, binning, *, column=None, con=None) -> np.ndarray:
    """:func:`aggregate` after the checks."""
    if _is_path(data):
        path = Path(data)
        if column is None:
            raise ValueError("column: name the column of reports in the file")
        return _duckdb_table(binning, _file_source(path), column, con=con)
    mod = type(data).__module__.split(".")[0]
    if mod == "duckdb":
        if column is None:
            cols = data.columns
            if len(cols) != 1:
                raise ValueError(
                    f"column: the relation has columns {cols}; say which holds the reports"
                )
            column = cols[0]
        return _duckdb_table(binning, None, column, con=con, relation=data)
    if mod in ("numpy", "builtins") or isinstance(data, np.ndarray):
        return binning.numpy(data)
    if mod == "pytensor":
        raise TypeError("data: give concrete reports (NumPy, dataframe or file), not a tensor")
    return _narwhals_table(binning, data, column)


# --------------------------------------------------------------------------------------------
# Choosing the bin count from an error budget
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def _f3_function(model):
    import pytensor
    import pytensor.tensor as pt

    from .math.clipped import clipped_summary_derivatives

    z = pt.dvector("z")
    if model == "normal":
        params = [pt.dscalar(n) for n in ("mu", "sigma", "lower", "upper", "epsilon")]
    else:
        params = [pt.dscalar(n) for n in ("lam", "upper", "epsilon")]
    *_, f3 = clipped_summary_derivatives(model, z, *params)
    # evaluated on a few dozen parameter points of 512 values each, once per summary: the
    # Python linker's NumPy/SciPy ops (no native compile) cost less than compiling it
    mode = pytensor.compile.mode.Mode(linker="py", optimizer="fast_compile")
    return pytensor.function([z, *params], pt.abs(f3), mode=mode)


def _default_box(model, lower, upper):
    width = upper - lower
    if model == "normal":
        return dict(mu=np.linspace(lower, upper, 5), sigma=np.geomspace(width / 20, 2 * width, 6))
    return dict(lam=np.geomspace(0.2 / upper, 20.0 / upper, 8))


def choose_n_bins(model, n, lower, upper, epsilon, tol, params=None, max_bins=1 << 14):
    r"""Smallest uniform bin count whose worst-case error over a parameter box is ≤ ``tol``.

    With every report inside (the worst case), the error of the second-order expansion is at
    most :math:`N\, M_3 h^3/48` with :math:`M_3 = \sup |f'''|` over :math:`(a, b)` and the
    parameter box (each report is within :math:`h/2` of its centre:
    :math:`\tfrac16 (h/2)^3 = h^3/48`).  So :math:`h = (48\,\mathrm{tol}/(N M_3))^{1/3}`.
    :math:`M_3` is the maximum of :math:`|f'''|` on 512 points of :math:`(a, b)` for every
    combination of the box's values.

    Parameters
    ----------
    model : {"normal", "exponential"}
    n : int
        Number of reports.
    params : dict of array_like, optional
        Parameter values the bound must hold at (their Cartesian product).  Default: normal
        ``mu`` in 5 points of [lower, upper] and ``sigma`` from (upper-lower)/20 to
        2 (upper-lower); exponential ``lam`` from 0.2/upper to 20/upper.

    Returns
    -------
    n_bins : int
    bound : float
        :math:`N M_3 h^3 / 48` at the chosen h.
    """
    if not tol > 0:
        raise ValueError(f"tol: must be > 0 nats, got {tol}")
    box = params or _default_box(model, lower, upper)
    f3 = _f3_function(model)
    t = (np.arange(512) + 0.5) / 512
    z = lower + (upper - lower) * t
    m3 = 0.0
    names = ("mu", "sigma") if model == "normal" else ("lam",)
    missing = [k for k in names if k not in box]
    if missing:
        raise ValueError(f"params: need values for {missing}")
    grids = np.meshgrid(*[np.atleast_1d(np.asarray(box[k], float)) for k in names], indexing="ij")
    for vals in zip(*(g.ravel() for g in grids), strict=True):
        if model == "normal":
            v = f3(z, vals[0], vals[1], lower, upper, epsilon)
        else:
            v = f3(z, vals[0], upper, epsilon)
        m3 = max(m3, float(np.max(v)))
    width = upper - lower
    if m3 == 0.0 or n == 0:
        k = 1
    else:
        h = (48.0 * tol / (n * m3)) ** (1.0 / 3.0)
        k = int(min(max(math.ceil(width / h), 1), max_bins))
    h = width / k
    return k, n * m3 * h**3 / 48.0


def _count(data, column):
    if _is_path(data):
        import duckdb

        src = _file_source(Path(data))
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


def summarize(
    data,
    lower,
    upper,
    epsilon,
    *,
    tol=0.01,
    n_bins=None,
    model="normal",
    params=None,
    column=None,
    con=None,
    max_bins=1 << 14,
) -> ClippedSummary:
    r"""Summarise clipped Laplace reports into a :class:`ClippedSummary` in one pass.

    Parameters
    ----------
    data : array_like, path, DuckDB relation or dataframe
        The reports (see :func:`aggregate` for the engines).
    lower, upper : float
        Clipping bounds (``lower = 0`` for the clipped exponential).
    epsilon : float
        Privacy budget of every report (a scalar: with personalised budgets, summarise each
        budget group separately).
    tol : float
        Error budget in nats for the whole log likelihood; sets the bin count through
        :func:`choose_n_bins` (unless ``n_bins`` is given).
    n_bins : int, optional
        Fix the number of inside bins instead.
    model : {"normal", "exponential"}
        Which likelihood the bin count is chosen for.
    params : dict, optional
        Parameter box for :func:`choose_n_bins`.
    column : str, optional
        Column holding the reports (files, relations and dataframes).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_dpnoise as pmd
    >>> rng = np.random.default_rng(0)
    >>> z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, 10_000), -5.0, 5.0, 1.0, rng)
    >>> s = pmd.summarize(z, -5.0, 5.0, 1.0, n_bins=64)
    >>> s.table.shape, s.n_total
    ((66, 4), 10000)
    """
    lower, upper = _real("lower", lower), _real("upper", upper)
    epsilon, tol = _real("epsilon", epsilon), _real("tol", tol)
    if n_bins is not None:
        n_bins = _integer("n_bins", n_bins)
    if model not in ("normal", "exponential"):
        raise ValueError(f"model: 'normal' or 'exponential', got {model!r}")
    if model == "exponential" and lower != 0.0:
        raise ValueError(f"lower: the clipped exponential is clipped to [0, upper], got {lower}")
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon: must be a finite scalar > 0, got {epsilon}")
    engine = _engine(data)
    column = _one_column(data, engine, column)
    n = _check_reports(data, engine, None if column is None else [column], con=con)
    design = None
    if n_bins is None:
        n_bins, design = choose_n_bins(
            model, n, lower, upper, epsilon, tol, params=params, max_bins=max_bins
        )
        used_tol = tol
    else:
        used_tol = None
    binning = ClippedBinning(lower, upper, n_bins)
    table = _aggregate(data, binning, column=column, con=con)
    return ClippedSummary(table, lower, upper, epsilon, tol=used_tol, design_bound=design)


#: From this many reports on, ``pymc-dpnoise fit clipped-*`` fits the binned summary (the
#: docs' summaries page says why 10^5): below it the exact per-report likelihood is cheap
#: enough (under 1 ms per gradient at 10^5 reports, ε = 1) and stays the default.
SUMMARY_THRESHOLD = 100_000


def summarize_if_large(
    data, lower, upper, epsilon, *, model="normal", column=None, threshold=SUMMARY_THRESHOLD,
    tol=0.01,
):  # fmt: skip
    """:func:`summarize` ``data`` if it holds at least ``threshold`` reports, else None.

    The count is a ``count(*)`` on files and DuckDB relations (Parquet: read from the
    metadata), so below the threshold nothing but the count has been computed and the caller
    reads the reports for the exact likelihood.

    Returns
    -------
    (ClippedSummary or None, int)
        The summary (None below the threshold) and the number of reports.
    """
    lower, upper, epsilon = _real("lower", lower), _real("upper", upper), _real("epsilon", epsilon)
    n = _count(data, column)
    if n < threshold:
        return None, n
    return summarize(data, lower, upper, epsilon, tol=tol, model=model, column=column), n


# --------------------------------------------------------------------------------------------
# The same single group-by pass for histogram reports and regression scatter matrices
# --------------------------------------------------------------------------------------------


def _engine(data) -> str:
    """Which engine :func:`aggregate`-style functions use: file, duckdb, numpy or narwhals."""
    if _is_path(data):
        return "file"
    mod = type(data).__module__.split(".")[0]
    if mod == "duckdb":
        return "duckdb"
    if mod in ("numpy", "builtins") or isinstance(data, np.ndarray):
        return "numpy"
    if mod == "pytensor":
        raise TypeError("data: give concrete reports (NumPy, dataframe or file), not a tensor")
    return "narwhals"


def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _frame_columns(data, columns):
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


def _run_sql(data, engine, columns, build, con=None):
    """Run ``build(source, columns)`` (a SQL query) on a file or a DuckDB relation."""
    import duckdb

    if engine == "file":
        if columns is None:
            src = _file_source(Path(data))
            columns = [d[0] for d in duckdb.sql(f"SELECT * FROM {src} LIMIT 0").description]
        return (
            (con or duckdb.connect())
            .execute(build(_file_source(Path(data)), list(columns)))
            .fetchnumpy()
        )
    columns = list(columns) if columns is not None else list(data.columns)
    return data.query("__pmd_reports", build("__pmd_reports", columns)).fetchnumpy()


def _filled(a):
    return np.ma.filled(np.ma.asarray(a, dtype=np.float64), np.nan)


@dataclasses.dataclass(frozen=True)
class HistogramSummary:
    """Distinct reports and how often each occurs (frequency-oracle reports).

    ``patterns`` are the distinct bit vectors ``(M, k)`` of OUE / SUE / unary-encoding
    reports, or the distinct item ids ``(M,)`` of k-RR reports, in lexicographic order;
    ``counts`` (``int64``) says how many reports equal each.  Pass
    ``observed=s.patterns, counts=s.counts`` (``**s.observed_kwargs``) to
    :class:`~pymc_dpnoise.OUELikelihood`, :class:`~pymc_dpnoise.SUELikelihood`,
    :class:`~pymc_dpnoise.UnaryEncodingLikelihood` or :class:`~pymc_dpnoise.KRRLikelihood`:
    the log likelihood is the one of the N reports, the cost is per distinct pattern.
    """

    patterns: np.ndarray
    counts: np.ndarray

    @property
    def n_total(self) -> int:
        return int(self.counts.sum())

    @property
    def observed_kwargs(self) -> dict:
        return dict(observed=self.patterns, counts=self.counts)


#: integers above this are not all exact in float64, the type every engine groups keys in
_EXACT_KEYS = 2.0**53


def _canonical_histogram(keys, counts, bits) -> HistogramSummary:
    """Validate grouped keys (NaN marks NULL/NaN reports), merge duplicates, sort."""
    keys = np.asarray(keys, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    keys2 = keys.reshape(len(counts), -1)
    bad = ~np.isfinite(keys2).all(axis=1)
    if bad.any():
        raise ValueError(
            f"data: reports must be finite; found {int(counts[bad].sum())} NULL/NaN/inf report(s)"
        )
    if bits:
        off = ~np.isin(keys2, (0.0, 1.0)).all(axis=1)
        if off.any():
            raise ValueError(
                f"data: bit-vector reports must be 0/1; found {int(counts[off].sum())} report(s) "
                f"with other values, e.g. {keys2[off][0].tolist()}"
            )
    else:
        off = (keys2 < 0) | (keys2 != np.floor(keys2))
        if off.any():
            raise ValueError(
                f"data: k-RR reports must be integer item ids >= 0; found "
                f"{int(counts[off.ravel()].sum())} report(s) like {keys2[off][0]}"
            )
    big = np.abs(keys2) >= _EXACT_KEYS
    if big.any():
        # keys are grouped as float64 on every engine: beyond 2**53 two ids can become one
        raise ValueError(
            f"data: k-RR item ids must be below 2**53 = {_EXACT_KEYS:.0f} (grouped exactly as "
            f"float64); found {int(counts[big.any(axis=1)].sum())} report(s) like "
            f"{int(keys2[big][0])}"
        )
    ints = keys2.astype(np.int64)
    uniq, inverse = np.unique(ints, axis=0, return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=counts, minlength=len(uniq)).astype(np.int64)
    patterns = uniq.astype(np.int8) if bits else uniq[:, 0]
    return HistogramSummary(patterns, merged)


def summarize_histogram(data, *, columns=None, con=None) -> HistogramSummary:
    """Group identical frequency-oracle reports in one pass (any engine).

    Parameters
    ----------
    data : array_like, str or PathLike, DuckDB relation, or a dataframe
        Bit-vector reports (OUE / SUE / unary encoding): an ``(N, k)`` 0/1 array, or a file /
        dataframe with one column per bit.  k-RR reports: an ``(N,)`` array of item ids, or a
        file / dataframe with one column.  Files (``.parquet``, ``.csv``) are streamed by
        DuckDB; dataframes (pandas, Polars, PyArrow, Dask, ...) are grouped by their own
        engine through Narwhals; arrays in chunks of ``2**20`` reports.
    columns : sequence of str, optional
        The report columns of a file or dataframe (default: all of them).  One column means
        k-RR item ids, several mean bits.
    con : duckdb connection, optional

    Returns
    -------
    HistogramSummary
        Distinct patterns in lexicographic order and their counts: the same from every
        engine.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_dpnoise as pmd
    >>> from pymc_dpnoise.summaries import summarize_histogram
    >>> rng = np.random.default_rng(0)
    >>> reports = pmd.mechanisms.oue_perturb(rng.choice(3, 5000), 3, 1.0, rng)
    >>> s = summarize_histogram(reports)
    >>> s.patterns.shape[1], s.n_total
    (3, 5000)
    """
    engine = _engine(data)
    _check_reports(data, engine, columns, con=con, keys=True)
    if engine == "numpy":
        z = np.asarray(data)
        if z.ndim not in (1, 2) or z.size == 0:
            raise ValueError(f"data: expected (N,) item ids or (N, k) bits, got shape {z.shape}")
        bits = z.ndim == 2
        z2 = z.reshape(len(z), -1)
        keys, counts = [], []
        for start in range(0, len(z2), _CHUNK):
            chunk = np.asarray(z2[start : start + _CHUNK], dtype=np.float64)
            chunk = np.where(np.isfinite(chunk), chunk, np.nan)
            u, c = np.unique(chunk, axis=0, return_counts=True)
            keys.append(u)
            counts.append(c)
        return _canonical_histogram(np.concatenate(keys), np.concatenate(counts), bits)
    if engine in ("file", "duckdb"):

        def build(src, cols):
            keys = [
                f"CASE WHEN isfinite(CAST({_quote(c)} AS DOUBLE)) "
                f"THEN CAST({_quote(c)} AS DOUBLE) END AS k{i}"
                for i, c in enumerate(cols)
            ]
            names = ", ".join(f"k{i}" for i in range(len(cols)))
            return (
                f"SELECT {names}, count(*) AS n FROM (SELECT {', '.join(keys)} FROM {src}) "
                f"GROUP BY {names}"
            )

        res = _run_sql(data, engine, columns, build, con)
        kcols = [c for c in res if c != "n"]
        keys = np.column_stack([_filled(res[c]) for c in kcols])
        return _canonical_histogram(keys, res["n"], len(kcols) > 1)
    import narwhals as nw

    frame, names = _frame_columns(data, columns)
    # never group on NULL/NaN (backends treat them differently): a 0 key plus a flag column
    exprs, valid = [], None
    for i, c in enumerate(names):
        z = nw.col(c).cast(nw.Float64)
        ok = nw.when(z.is_null()).then(False).otherwise(~z.is_nan() & (z.abs() != float("inf")))
        exprs.append(nw.when(ok).then(z).otherwise(0.0).alias(f"k{i}"))
        valid = ok if valid is None else (valid & ok)
    exprs.append(nw.when(valid).then(nw.lit(1)).otherwise(nw.lit(0)).cast(nw.Int64).alias("ok"))
    keys = [f"k{i}" for i in range(len(names))]
    grouped = frame.select(*exprs).group_by([*keys, "ok"]).agg(nw.len().alias("n"))
    if isinstance(grouped, nw.LazyFrame):
        grouped = grouped.collect()
    kv = np.column_stack([grouped[k].to_numpy().astype(np.float64) for k in keys])
    kv[grouped["ok"].to_numpy() == 0] = np.nan
    return _canonical_histogram(kv, grouped["n"].to_numpy(), len(keys) > 1)


@dataclasses.dataclass(frozen=True)
class ScatterSummary:
    r"""Count, column sums and scatter matrix :math:`W^T W` of N report rows.

    For perturbed-input linear regression the rows are ``[z_x, z_y]`` and the scatter matrix
    holds :math:`Z_x^T Z_x`, :math:`Z_x^T z_y` and :math:`z_y^T z_y`
    (:attr:`xtx`, :attr:`xty`, :attr:`yty`): the log likelihood of the N reports is
    :math:`-\tfrac12\bigl(N \log|2\pi C| + \mathrm{tr}(C^{-1} W^T W)\bigr)`
    (:mod:`pymc_dpnoise.math.regression`).
    """

    n: int
    scatter: np.ndarray
    sums: np.ndarray

    @property
    def xtx(self) -> np.ndarray:
        return self.scatter[:-1, :-1]

    @property
    def xty(self) -> np.ndarray:
        return self.scatter[:-1, -1]

    @property
    def yty(self) -> float:
        return float(self.scatter[-1, -1])


def _scatter_from_pairs(m, n, nbad, pair_sums, sums) -> ScatterSummary:
    if nbad:
        raise ValueError(f"data: reports must be finite; found {int(nbad)} NULL/NaN/inf row(s)")
    s = np.empty((m, m))
    for (i, j), v in pair_sums.items():
        s[i, j] = s[j, i] = v
    return ScatterSummary(int(n), s, np.asarray(sums, dtype=np.float64))


def summarize_regression(data, *, columns=None, con=None) -> ScatterSummary:
    """Count, column sums and scatter matrix of report rows in one pass (any engine).

    Parameters
    ----------
    data : array_like, str or PathLike, DuckDB relation, or a dataframe
        ``(N, m)`` rows (for :class:`~pymc_dpnoise.PerturbedLinReg`: ``[z_x, z_y]``, the
        response last), a ``.parquet``/``.csv`` file (DuckDB), or any dataframe (Narwhals).
    columns : sequence of str, optional
        The report columns in order (default: all columns).
    con : duckdb connection, optional

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_dpnoise.summaries import summarize_regression
    >>> w = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> s = summarize_regression(w)
    >>> s.n, s.scatter.tolist(), s.yty
    (2, [[10.0, 14.0], [14.0, 20.0]], 20.0)
    """
    engine = _engine(data)
    _check_reports(data, engine, columns, con=con)
    if engine == "numpy":
        w = np.asarray(data, dtype=np.float64)
        if w.ndim != 2 or w.shape[1] < 1:
            raise ValueError(f"data: expected (N, m) report rows, got shape {w.shape}")
        m = w.shape[1]
        s, sums, nbad = np.zeros((m, m)), np.zeros(m), 0
        for start in range(0, len(w), _CHUNK):
            chunk = w[start : start + _CHUNK]
            nbad += int((~np.isfinite(chunk).all(axis=1)).sum())
            s += chunk.T @ chunk
            sums += chunk.sum(axis=0)
        if nbad:
            raise ValueError(f"data: reports must be finite; found {nbad} NULL/NaN/inf row(s)")
        return ScatterSummary(len(w), s, sums)
    if engine in ("file", "duckdb"):
        holder = {}

        def build(src, cols):
            holder["m"] = m = len(cols)
            c = [f"CAST({_quote(x)} AS DOUBLE)" for x in cols]
            bad = " OR ".join(f"({v} IS NULL OR NOT isfinite({v}))" for v in c)
            parts = [f"count(*) AS n, sum(CAST(({bad}) AS BIGINT)) AS nbad"]
            parts += [f"sum({c[i]}) AS s{i}" for i in range(m)]
            parts += [f"sum({c[i]} * {c[j]}) AS p{i}_{j}" for i in range(m) for j in range(i, m)]
            return f"SELECT {', '.join(parts)} FROM {src}"

        res = _run_sql(data, engine, columns, build, con)
        m = holder["m"]
        one = {k: _filled(v)[0] for k, v in res.items()}
        pairs = {(i, j): one[f"p{i}_{j}"] for i in range(m) for j in range(i, m)}
        return _scatter_from_pairs(
            m, one["n"], one["nbad"], pairs, [one[f"s{i}"] for i in range(m)]
        )
    import narwhals as nw

    frame, names = _frame_columns(data, columns)
    m = len(names)
    c = [nw.col(x).cast(nw.Float64) for x in names]
    bad = None
    for v in c:
        b = v.is_null() | v.is_nan() | (v.abs() == float("inf"))
        bad = b if bad is None else (bad | b)
    bad = nw.when(bad).then(nw.lit(1)).otherwise(nw.lit(0)).cast(nw.Int64)
    aggs = [nw.len().alias("n"), bad.sum().alias("nbad")]
    aggs += [c[i].sum().alias(f"s{i}") for i in range(m)]
    aggs += [(c[i] * c[j]).sum().alias(f"p{i}_{j}") for i in range(m) for j in range(i, m)]
    out = frame.select(*aggs)
    if isinstance(out, nw.LazyFrame):
        out = out.collect()
    one = {k: float(out[k].to_numpy()[0]) for k in out.columns}
    pairs = {(i, j): one[f"p{i}_{j}"] for i in range(m) for j in range(i, m)}
    return _scatter_from_pairs(m, one["n"], one["nbad"], pairs, [one[f"s{i}"] for i in range(m)])


# --------------------------------------------------------------------------------------------
# Perturbed-input logistic regression: weighted moments around a pilot (one pass per pilot)
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LogRegSummary:
    r"""Summary of N perturbed-input logistic-regression reports ``[z_x, z_y]``.

    Built by :func:`summarize_logreg`; pass it as ``observed`` to
    :class:`~pymc_dpnoise.PerturbedLogRegSummary`.  It holds the feature scatter matrix
    (exact Gaussian term), the coefficients of the third-order expansion of the label term
    around the pilot :math:`(\beta_0, v_0)` and the fourth-moment tensor of the signed
    features that bounds its remainder (:mod:`pymc_dpnoise.math.logreg_summary`):
    O(d⁴) numbers whatever N.

    Attributes
    ----------
    packed : ndarray
        All numbers in the layout of :func:`pymc_dpnoise.math.logreg_summary.packed_layout`.
    d : int
    theta_pilot : ndarray, shape (d,)
        The θ the pilot was computed from (a good initial value for samplers).
    cov_pilot : ndarray, shape (d, d)
        The feature covariance used for the pilot (``cov`` if given, else the moment
        estimate :math:`S/N - \Sigma_*`).
    sigma_x : ndarray, shape (d,)
    passes : int
        Passes over the full data (the first one also drew the pilot's subsample).
    pilot_shift : float
        Distance (in posterior standard deviations of the expansion's maximiser) between the
        last pilot and the maximiser of its expansion.
    mode_bound : float
        The remainder bound (nats) at that maximiser (with ``cov_pilot``): about where the
        posterior will be, known before sampling.
    probe_bound : float
        The largest remainder bound (nats) at that maximiser and 4 posterior sd from it along
        the principal axes (with ``cov_pilot``).
    """

    packed: np.ndarray
    d: int
    theta_pilot: np.ndarray
    cov_pilot: np.ndarray
    sigma_x: np.ndarray
    passes: int = 1
    pilot_shift: float = float("nan")
    mode_bound: float = float("nan")
    probe_bound: float = float("nan")

    def __array__(self, dtype=None, copy=None):
        return self.packed if dtype is None else self.packed.astype(dtype)

    @property
    def fields(self) -> dict:
        from .math.logreg_summary import unpack

        return unpack(self.packed, self.d)

    @property
    def n(self) -> int:
        return int(self.packed[0])

    @property
    def epsilon_y(self) -> float:
        return float(self.packed[1])

    def bound(self, theta, cov=None, sigma_x=None) -> np.ndarray:
        r"""The remainder bound (nats) at one θ or at draws ``(..., d)``.

        ``cov`` and ``sigma_x`` default to the pilot's; pass arrays with the same leading
        shape as ``theta`` for draws of a model where they are parameters.
        """
        from .math.logreg_summary import beta_v, label_polynomial_numpy

        theta = np.asarray(theta, dtype=np.float64)
        lead = theta.shape[:-1]
        cov = self.cov_pilot if cov is None else np.asarray(cov, dtype=np.float64)
        sx = self.sigma_x if sigma_x is None else np.asarray(sigma_x, dtype=np.float64)
        cov = np.broadcast_to(cov, (*lead, self.d, self.d))
        sx = np.broadcast_to(sx, (*lead, self.d))
        out = np.empty(lead)
        fields = self.fields
        for idx in np.ndindex(lead):
            beta, v = beta_v(theta[idx], cov[idx], sx[idx])
            out[idx] = label_polynomial_numpy(fields, beta, v)["bound"]
        return out


def _arrow_batches(rel, rows):
    """Record batches of a DuckDB relation: ``to_arrow_reader`` (DuckDB >= 1.4; the older
    ``fetch_record_batch`` is deprecated there) or ``fetch_record_batch`` before it."""
    to_reader = getattr(rel, "to_arrow_reader", None)
    return to_reader(rows) if to_reader is not None else rel.fetch_record_batch(rows)


def _report_chunks(data, engine, columns, con=None):
    """Yield the report rows of ``data`` as float64 arrays of at most ``_CHUNK`` rows.

    NumPy arrays (and memory maps) are sliced; files and DuckDB relations are streamed by
    DuckDB in Arrow record batches; dataframes go through Narwhals (lazy frames are
    collected, report columns only).
    """
    if engine == "numpy":
        w = np.asarray(data)
        if w.ndim != 2 or w.shape[1] < 2:
            raise ValueError(f"data: expected (N, d + 1) report rows, got shape {w.shape}")
        for start in range(0, len(w), _CHUNK):
            yield np.asarray(w[start : start + _CHUNK], dtype=np.float64)
        return
    if engine in ("file", "duckdb"):
        import duckdb

        if engine == "file":
            src = _file_source(Path(data))
            conn = con or duckdb.connect()
            cols = columns or [d[0] for d in conn.sql(f"SELECT * FROM {src} LIMIT 0").description]
            sel = ", ".join(f"CAST({_quote(c)} AS DOUBLE)" for c in cols)
            reader = _arrow_batches(conn.sql(f"SELECT {sel} FROM {src}"), _CHUNK)
        else:
            cols = list(columns) if columns is not None else list(data.columns)
            sel = ", ".join(f"CAST({_quote(c)} AS DOUBLE) AS {_quote(c)}" for c in cols)
            reader = data.query("__pmd_reports", f"SELECT {sel} FROM __pmd_reports")
            reader = _arrow_batches(reader, _CHUNK)
        for batch in reader:
            if batch.num_rows:
                yield np.column_stack(
                    [batch.column(i).to_numpy(zero_copy_only=False) for i in range(len(cols))]
                ).astype(np.float64)
        return
    import narwhals as nw

    frame, names = _frame_columns(data, columns)
    frame = frame.select(*[nw.col(c).cast(nw.Float64) for c in names])
    if isinstance(frame, nw.LazyFrame):
        frame = frame.collect()
    n = len(frame)
    for start in range(0, n, _CHUNK):
        yield np.asarray(frame[start : min(start + _CHUNK, n)].to_numpy(), dtype=np.float64)


def _split_reports(chunk, d):
    if chunk.shape[1] != d + 1:
        raise ValueError(f"data: expected d + 1 = {d + 1} report columns, got {chunk.shape[1]}")
    zx, zy = chunk[:, :d], chunk[:, d]
    bad = (zy != 0.0) & (zy != 1.0)
    if bad.any():
        raise ValueError(
            "data: the last column (reported label z_y) must be 0 or 1; found "
            f"{np.unique(zy[bad])[:5]}"
        )
    return zx, zy


def _newton_theta(fun, theta, Bmat, Ahat, *, max_iter=60, ridge=1e-8):
    """Maximise F(beta(theta), v(theta)) by damped Newton in theta.

    ``fun(beta, v)`` returns (F, g_beta, g_v, h_bb, h_bv, h_vv); beta = Bmat theta,
    v = theta' Ahat theta.  Returns (theta, hessian in theta at the end).
    """

    def eval_at(th):
        beta = Bmat @ th
        v = max(float(th @ Ahat @ th), 0.0)
        f, gb, gv, hbb, hbv, hvv = fun(beta, v)
        dv = 2.0 * Ahat @ th
        g = Bmat.T @ gb + gv * dv - ridge * th
        h = (
            Bmat.T @ hbb @ Bmat
            + np.outer(Bmat.T @ hbv, dv)
            + np.outer(dv, Bmat.T @ hbv)
            + hvv * np.outer(dv, dv)
            + gv * 2.0 * Ahat
            - ridge * np.eye(len(th))
        )
        return f - 0.5 * ridge * th @ th, g, h

    f, g, h = eval_at(theta)
    for _ in range(max_iter):
        lam = 0.0
        scale = np.abs(np.diag(h)).max() + 1e-12
        while True:
            hh = h - lam * scale * np.eye(len(theta))
            try:
                np.linalg.cholesky(-hh)
                break
            except np.linalg.LinAlgError:
                lam = max(2 * lam, 1e-6)
        step = np.linalg.solve(-hh, g)
        t = 1.0
        while t > 1e-8:
            f_new, g_new, h_new = eval_at(theta + t * step)
            if np.isfinite(f_new) and f_new >= f - 1e-12 * abs(f):
                break
            t *= 0.5
        theta = theta + t * step
        decrement = float(g @ step)
        f, g, h = f_new, g_new, h_new
        if decrement < 1e-10 and t == 1.0:
            break
    return theta, h


#: largest label budget summarize_logreg accepts (1 - rho = sigmoid(-10) = 4.5e-5: an absolute
#: quadrature error of 1e-15 in E[sigmoid] stays below 1e-10 relative to the label probability)
MAX_LOGREG_EPSILON = 10.0


def summarize_logreg(
    data,
    sigma_x,
    epsilon_y,
    *,
    cov=None,
    columns=None,
    con=None,
    pilot=None,
    n_pilot=200_000,
    max_passes=3,
    shift_tol=0.25,
    recentre_bound=0.05,
    seed=0,
) -> LogRegSummary:
    r"""Summarise logistic-regression reports ``[z_x, z_y]`` around a pilot, one pass per pilot.

    1. A pass draws a Bernoulli subsample of about ``n_pilot`` reports and the scatter
       matrix; the pilot θ is the maximum-likelihood estimate of the label term on the
       subsample (damped Newton), with the feature covariance ``cov`` or, if None, the moment
       estimate :math:`S/N - \mathrm{diag}(\sigma_x^2)` (eigenvalues floored).
    2. A pass computes the summary at the pilot (:func:`pymc_dpnoise.math.logreg_summary.chunk_moments`).
    3. The maximiser of that expansion is found in memory.  If it is more than ``shift_tol``
       of its posterior standard deviations (Mahalanobis, from the expansion's Hessian) from
       the pilot *and* the bound exceeds ``recentre_bound`` nats at it or 4 sd from it along
       the principal axes, it becomes the pilot and step 2 is repeated (at most
       ``max_passes`` passes after the first).  The fourth-moment tensor does not depend on
       the pilot and is accumulated in the first pass.

    Parameters
    ----------
    data : array_like, path, DuckDB relation or dataframe
        ``(N, d + 1)`` report rows, label last (see :func:`aggregate` for the engines).
    sigma_x : float or array_like
        Feature noise sd (scalar or one per feature).
    epsilon_y : float
        Budget of the label's randomized response (the expansion's weights depend on it).
    cov : array_like, optional
        Known feature covariance for the pilot (the model may still learn it).
    columns : sequence of str, optional
        Report columns in order (files, relations, dataframes).
    pilot : array_like, optional
        A θ to expand around instead of step 1 (e.g. a posterior mean); step 3 still runs.

    Returns
    -------
    LogRegSummary
    """
    from .math.logreg_summary import (
        beta_v,
        chunk_moments,
        fourth_moments,
        label_derivatives,
        label_polynomial_numpy,
        unpack,
    )

    eps = _real("epsilon_y", epsilon_y)
    if not (np.isfinite(eps) and 0 < eps <= MAX_LOGREG_EPSILON):
        raise ValueError(
            f"epsilon_y: must be in (0, {MAX_LOGREG_EPSILON:g}] for the summary, got {eps} (above, "
            "1 - rho < 5e-5 and the weights' quadrature error, relative to it, is no longer "
            "negligible: use PerturbedLogReg)"
        )
    engine = _engine(data)
    n_total = _check_reports(data, engine, columns, con=con)
    rng = np.random.default_rng(seed)
    frac = min(1.0, n_pilot / n_total)
    sample, scatter, m4, d = [], None, None, None
    for chunk in _report_chunks(data, engine, columns, con):
        d = chunk.shape[1] - 1 if d is None else d
        zx, zy = _split_reports(chunk, d)
        scatter = zx.T @ zx if scatter is None else scatter + zx.T @ zx
        m4 = fourth_moments(zx) if m4 is None else m4 + fourth_moments(zx)
        if pilot is None:
            keep = rng.random(len(chunk)) < frac
            sample.append(chunk[keep])
    if d is None or d < 1:
        raise ValueError("data: reports need at least one feature column and the label")
    sx = np.broadcast_to(np.asarray(sigma_x, dtype=np.float64), (d,)).copy()
    if not np.all(np.isfinite(sx) & (sx > 0)):
        raise ValueError(f"sigma_x: must be finite and > 0, got {sigma_x!r}")
    if cov is None:
        est = scatter / n_total - np.diag(sx**2)
        lam, vec = np.linalg.eigh(0.5 * (est + est.T))
        floor = 1e-3 * max(float(np.trace(scatter) / n_total / d), 1e-300)
        cov_p = (vec * np.maximum(lam, floor)) @ vec.T
    else:
        cov_p = np.asarray(cov, dtype=np.float64)
        if cov_p.shape != (d, d):
            raise ValueError(f"cov: expected shape ({d}, {d}), got {cov_p.shape}")
    sz = cov_p + np.diag(sx**2)
    Bmat = np.linalg.solve(sz, cov_p)
    Ahat = cov_p @ np.linalg.solve(sz, np.diag(sx**2))
    Ahat = 0.5 * (Ahat + Ahat.T)

    if pilot is None:
        smp = np.concatenate(sample) if sample else np.empty((0, d + 1))
        w = smp[:, :d] * (2.0 * smp[:, d] - 1.0)[:, None]
        orders = ((0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2))

        def sample_fun(beta, v):
            kw = label_derivatives(w @ beta, v, eps, orders=orders)
            return (
                float(kw[(0, 0)].sum()),
                kw[(1, 0)] @ w,
                float(kw[(0, 1)].sum()),
                (w * kw[(2, 0)][:, None]).T @ w,
                kw[(1, 1)] @ w,
                float(kw[(0, 2)].sum()),
            )

        theta0, _ = _newton_theta(sample_fun, np.zeros(d), Bmat, Ahat)
    else:
        theta0 = np.broadcast_to(np.asarray(pilot, dtype=np.float64), (d,)).copy()

    passes, shift = 1, float("nan")
    while True:
        beta0, v0 = beta_v(theta0, cov_p, sx)
        acc = None
        for chunk in _report_chunks(data, engine, columns, con):
            zx, zy = _split_reports(chunk, d)
            m = chunk_moments(zx, zy, beta0, v0, eps, fourth=False)
            if acc is None:
                acc = m
            else:
                for key, val in m.items():
                    acc[key] = acc[key] + val
        passes += 1
        packed = np.concatenate(
            [
                [float(acc["n"]), eps, v0],
                beta0,
                acc["scatter"].ravel(),
                [acc[f"c0{j}"] for j in range(4)],
                np.stack([acc[f"c1{j}"] for j in range(3)]).ravel(),
                np.stack([acc[f"c2{j}"] for j in range(2)]).ravel(),
                acc["c30"].ravel(),
                m4.ravel(),
            ]
        )
        if not np.all(np.isfinite(packed)):
            raise ValueError("data: the summary is not finite (features too large?)")
        fields = unpack(packed, d)

        def poly_fun(beta, v, fields=fields):
            r = label_polynomial_numpy(fields, beta, v)
            return r["value"], r["g_beta"], r["g_v"], r["h_bb"], r["h_bv"], r["h_vv"]

        theta1, hess = _newton_theta(poly_fun, theta0.copy(), Bmat, Ahat)
        diff = theta1 - theta0
        shift = float(np.sqrt(max(diff @ (-hess) @ diff, 0.0)))
        # the bound at the expansion's maximiser and 4 sd away along the principal axes
        lam, vec = np.linalg.eigh(-0.5 * (hess + hess.T))
        sd_axes = vec / np.sqrt(np.maximum(lam, 1e-300))
        probes = [theta1] + [
            theta1 + sgn * 4.0 * sd_axes[:, k] for k in range(d) for sgn in (-1, 1)
        ]
        at = []
        for th in probes:
            beta, v = beta_v(th, cov_p, sx)
            at.append(label_polynomial_numpy(fields, beta, v)["bound"])
        worst = max(at)
        if (shift <= shift_tol or worst <= recentre_bound) or passes > max_passes:
            break
        theta0 = theta1
    return LogRegSummary(
        packed=packed,
        d=d,
        theta_pilot=theta0,
        cov_pilot=cov_p,
        sigma_x=sx,
        passes=passes,
        pilot_shift=shift,
        mode_bound=at[0],
        probe_bound=worst,
    )
