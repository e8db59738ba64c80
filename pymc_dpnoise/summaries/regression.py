"""Count, column sums and scatter matrix of report rows, in one pass."""

from __future__ import annotations

import dataclasses

import numpy as np

from .engines import CHUNK, check_reports, engine_of, filled, frame_columns, quote, run_sql


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
    engine = engine_of(data)
    check_reports(data, engine, columns, con=con)
    if engine == "numpy":
        w = np.asarray(data, dtype=np.float64)
        if w.ndim != 2 or w.shape[1] < 1:
            raise ValueError(f"data: expected (N, m) report rows, got shape {w.shape}")
        m = w.shape[1]
        s, sums, nbad = np.zeros((m, m)), np.zeros(m), 0
        for start in range(0, len(w), CHUNK):
            chunk = w[start : start + CHUNK]
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
            c = [f"CAST({quote(x)} AS DOUBLE)" for x in cols]
            bad = " OR ".join(f"({v} IS NULL OR NOT isfinite({v}))" for v in c)
            parts = [f"count(*) AS n, sum(CAST(({bad}) AS BIGINT)) AS nbad"]
            parts += [f"sum({c[i]}) AS s{i}" for i in range(m)]
            parts += [f"sum({c[i]} * {c[j]}) AS p{i}_{j}" for i in range(m) for j in range(i, m)]
            return f"SELECT {', '.join(parts)} FROM {src}"

        res = run_sql(data, engine, columns, build, con)
        m = holder["m"]
        one = {k: filled(v)[0] for k, v in res.items()}
        pairs = {(i, j): one[f"p{i}_{j}"] for i in range(m) for j in range(i, m)}
        return _scatter_from_pairs(
            m, one["n"], one["nbad"], pairs, [one[f"s{i}"] for i in range(m)]
        )
    import narwhals as nw

    frame, names = frame_columns(data, columns)
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
