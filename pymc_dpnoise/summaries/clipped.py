"""Binned summaries of clipped Laplace reports (the table of the package docstring)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .bins import choose_n_bins
from .engines import (
    check_reports,
    count_reports,
    engine_of,
    file_source,
    integer_param,
    is_path,
    one_column,
    real_param,
)


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


@dataclasses.dataclass(frozen=True)
class ClippedBinning:
    """Bins of width ``(upper - lower)/n_bins`` on ``(lower, upper)`` plus the two tails."""

    lower: float
    upper: float
    n_bins: int

    def __post_init__(self):
        lo, hi = real_param("lower", self.lower), real_param("upper", self.upper)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"lower, upper: need finite lower < upper, got {lo}, {hi}")
        if integer_param("n_bins", self.n_bins) < 1:
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

    # ---- NumPy arrays: the same expressions, run by DuckDB --------------------------------
    def numpy(self, z) -> np.ndarray:
        """Table of one array of reports.

        The array is handed to DuckDB as a one-column frame (pandas wraps it without a copy)
        and binned by :meth:`narwhals_exprs`, the one spelling of the bin assignment: DuckDB
        runs it about as fast as a NumPy pass (vectorised, streaming) and every engine then
        executes literally the same expression."""
        import duckdb
        import pandas as pd

        z = np.asarray(z, dtype=np.float64).ravel()
        rel = duckdb.connect().from_df(pd.DataFrame({"z": z}, copy=False))
        return _narwhals_table(self, rel, "z")

    # ---- Narwhals (every dataframe, and DuckDB files and relations) -----------------------
    def narwhals_exprs(self, column: str):
        """``(row, d, inside)`` Narwhals expressions on ``column``.

        Narwhals renders them for pandas, Polars, PyArrow, Dask, PySpark and DuckDB alike
        (DuckDB relations are Narwhals lazy frames, run by DuckDB's own streaming engine, which
        also bins NumPy arrays: :meth:`numpy`), so this is the only spelling of the bin
        assignment outside the likelihood's own graph."""
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
    engine = engine_of(data)
    column = one_column(data, engine, column)
    check_reports(data, engine, None if column is None else [column], con=con)
    return _aggregate(data, binning, column=column, con=con)


def _aggregate(data, binning, *, column=None, con=None) -> np.ndarray:
    """:func:`aggregate` after the checks."""
    if is_path(data):
        path = Path(data)
        if column is None:
            raise ValueError("column: name the column of reports in the file")
        import duckdb

        rel = (con or duckdb.connect()).sql(f"SELECT * FROM {file_source(path)}")
        return _narwhals_table(binning, rel, column)
    mod = type(data).__module__.split(".")[0]
    if mod == "duckdb":
        if column is None:
            cols = data.columns
            if len(cols) != 1:
                raise ValueError(
                    f"column: the relation has columns {cols}; say which holds the reports"
                )
            column = cols[0]
        return _narwhals_table(binning, data, column)
    if mod in ("numpy", "builtins") or isinstance(data, np.ndarray):
        return binning.numpy(data)
    if mod == "pytensor":
        raise TypeError("data: give concrete reports (NumPy, dataframe or file), not a tensor")
    return _narwhals_table(binning, data, column)


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
    lower, upper = real_param("lower", lower), real_param("upper", upper)
    epsilon, tol = real_param("epsilon", epsilon), real_param("tol", tol)
    if n_bins is not None:
        n_bins = integer_param("n_bins", n_bins)
    if model not in ("normal", "exponential"):
        raise ValueError(f"model: 'normal' or 'exponential', got {model!r}")
    if model == "exponential" and lower != 0.0:
        raise ValueError(f"lower: the clipped exponential is clipped to [0, upper], got {lower}")
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon: must be a finite scalar > 0, got {epsilon}")
    engine = engine_of(data)
    column = one_column(data, engine, column)
    n = check_reports(data, engine, None if column is None else [column], con=con)
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
    lower, upper, epsilon = (
        real_param("lower", lower),
        real_param("upper", upper),
        real_param("epsilon", epsilon),
    )
    n = count_reports(data, column)
    if n < threshold:
        return None, n
    return summarize(data, lower, upper, epsilon, tol=tol, model=model, column=column), n
