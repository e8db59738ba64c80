"""Distinct frequency-oracle reports and their counts, in one group-by pass."""

from __future__ import annotations

import dataclasses

import numpy as np

from .engines import (
    CHUNK,
    EXACT_KEYS,
    check_reports,
    engine_of,
    filled,
    frame_columns,
    quote,
    run_sql,
)


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
    big = np.abs(keys2) >= EXACT_KEYS
    if big.any():
        # keys are grouped as float64 on every engine: beyond 2**53 two ids can become one
        raise ValueError(
            f"data: k-RR item ids must be below 2**53 = {EXACT_KEYS:.0f} (grouped exactly as "
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
    engine = engine_of(data)
    check_reports(data, engine, columns, con=con, keys=True)
    if engine == "numpy":
        z = np.asarray(data)
        if z.ndim not in (1, 2) or z.size == 0:
            raise ValueError(f"data: expected (N,) item ids or (N, k) bits, got shape {z.shape}")
        bits = z.ndim == 2
        z2 = z.reshape(len(z), -1)
        keys, counts = [], []
        for start in range(0, len(z2), CHUNK):
            chunk = np.asarray(z2[start : start + CHUNK], dtype=np.float64)
            chunk = np.where(np.isfinite(chunk), chunk, np.nan)
            u, c = np.unique(chunk, axis=0, return_counts=True)
            keys.append(u)
            counts.append(c)
        return _canonical_histogram(np.concatenate(keys), np.concatenate(counts), bits)
    if engine in ("file", "duckdb"):

        def build(src, cols):
            keys = [
                f"CASE WHEN isfinite(CAST({quote(c)} AS DOUBLE)) "
                f"THEN CAST({quote(c)} AS DOUBLE) END AS k{i}"
                for i, c in enumerate(cols)
            ]
            names = ", ".join(f"k{i}" for i in range(len(cols)))
            return (
                f"SELECT {names}, count(*) AS n FROM (SELECT {', '.join(keys)} FROM {src}) "
                f"GROUP BY {names}"
            )

        res = run_sql(data, engine, columns, build, con)
        kcols = [c for c in res if c != "n"]
        keys = np.column_stack([filled(res[c]) for c in kcols])
        return _canonical_histogram(keys, res["n"], len(kcols) > 1)
    import narwhals as nw

    frame, names = frame_columns(data, columns)
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
