"""Reading report files for the command line: CSV (plain or gzip) and Parquet through DuckDB.

DuckDB streams the file, sniffs CSV dialects (separator, quotes, BOM) and reads Parquet; this
module adds what a command line needs on top: the header rule, columns chosen by name or
0-based index, a row cap, and one-line errors naming the file, the data row and the column of
the first bad value.

Input is bounded: a regular file is read at most ``max_rows`` data rows deep (more is an
error), standard input and named pipes are copied to a temporary file that stops at the same
cap (and at lines longer than :data:`MAX_LINE_BYTES`), and other non-regular files (devices
such as ``/dev/zero``, sockets) are refused before anything is read.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
import sys
import tempfile
from pathlib import Path

from ._base import InputError

__all__ = ["Column", "Table", "open_table", "read_reports"]

#: longest CSV line accepted from a pipe (DuckDB's own default limit for files)
MAX_LINE_BYTES = 2 * 1024 * 1024
_CHUNK = 1 << 20
PARQUET_SUFFIXES = (".parquet", ".pq")


def _is_number(cell) -> bool:
    try:
        float(cell)
    except (TypeError, ValueError):
        return False
    return True


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")


@dataclasses.dataclass
class Column:
    """One column read as float64: ``values`` and a description ``label``."""

    values: object
    label: str


class Table:
    """A CSV or Parquet file opened for reading selected columns (see :func:`open_table`)."""

    def __init__(self, path, display, fmt, *, header, sep, max_rows):
        import duckdb

        self.path = path  # what DuckDB reads (a temporary copy for stdin and pipes)
        self.display = display  # what messages call it
        self.format = fmt
        self.max_rows = max_rows
        self._con = duckdb.connect(":memory:")
        if fmt == "parquet":
            self._from = "read_parquet(?)"
            self._params = [path]
        else:
            opts = "header=false, all_varchar=true, null_padding=true"
            self._params = [path]
            if sep is not None:
                opts += ", delim=?"
                self._params.append(sep)
            self._from = f"read_csv(?, {opts})"
        try:
            rel = self._query(f"SELECT * FROM {self._from} LIMIT 1")
            self._sql_names = [d[0] for d in rel.description]
            first = rel.fetchall()
        except duckdb.Error as exc:
            raise InputError(f"{display}: cannot read as {fmt.upper()}: {_one_line(exc)}") from None
        if not first:
            raise InputError(f"{display}: the file is empty, no reports to fit")
        first = list(first[0])
        self.n_columns = len(first)
        if fmt == "parquet":
            self.has_header = True
            self.names = list(self._sql_names)
        else:
            self.has_header = header == "yes" or (
                header == "auto" and any(c not in (None, "") and not _is_number(c) for c in first)
            )
            self.names = (
                [("" if c is None else c.strip()) for c in first] if self.has_header else None
            )
        self._offset = 1 if self.has_header and fmt != "parquet" else 0
        if fmt == "csv" and self.n_columns > 1:
            self._check_ragged(opts)

    def _check_ragged(self, opts):
        """Refuse a CSV whose rows do not all have as many fields as its first row.

        The reads pad short rows with NULLs (``null_padding``, so that DuckDB's sniffer copes
        with them) and widen the table to the longest row; a ragged row would then be read as
        if its missing cells were empty, or its extra cells ignored.  Here empty cells are read
        as ``''`` (the NULL string is set to something no file holds), so NULL marks exactly
        the padding and a row's field count is its number of non-NULL cells.
        """
        import duckdb

        null = "\x01pymc-dpnoise-padding\x01"
        src = self._from.replace(opts, opts + ", nullstr=?")
        # read_csv's own parameters come first, then the NULL string, then the query's
        params = [*self._params, null]
        width = " + ".join(f"({_quote(c)} IS NOT NULL)::INTEGER" for c in self._sql_names)
        try:
            first = self._con.execute(f"SELECT {width} FROM {src} LIMIT 1", params).fetchall()
            if not first:
                return
            expected = first[0][0]
            rows = self._con.execute(
                f"SELECT n, w FROM (SELECT row_number() OVER () AS n, {width} AS w FROM {src}) "
                "WHERE w <> ? ORDER BY n LIMIT 1",
                [*params, expected],
            ).fetchall()
        except duckdb.Error as exc:
            raise InputError(f"{self.display}: cannot read as CSV: {_one_line(exc)}") from None
        if rows:
            n, w = rows[0]
            where = f"data row {n - self._offset}" if n > self._offset else "the header row"
            first_row = "header" if self._offset else "first"
            raise InputError(
                f"{self.display}: {where} has {w} field(s) but the {first_row} row has "
                f"{expected}; a CSV row with missing or extra fields is not read"
            )

    def _query(self, sql, params=()):
        return self._con.execute(sql, [*self._params, *params])

    def close(self):
        self._con.close()

    # ----------------------------------------------------------------------------------------

    def column_name(self, idx: int) -> str:
        """The name summaries give column ``idx`` in their messages (header name or index)."""
        return self.names[idx] if self.names and self.names[idx] else f"column {idx}"

    def count_rows(self) -> int:
        """Number of data rows (a ``count(*)``; Parquet: from the metadata)."""
        sql = f"SELECT count(*) FROM (SELECT 1 FROM {self._from} OFFSET {int(self._offset)})"
        return int(self._query(sql).fetchall()[0][0])

    def relation(self, indices: list[int]):
        """A DuckDB relation of the data rows with columns ``indices`` as DOUBLE (a cell that
        is not a number becomes NULL, which the summaries refuse naming the column), each
        named :meth:`column_name`; nothing is read until the relation is."""
        cells = [_quote(self._sql_names[i]) for i in indices]
        if self.format == "csv":
            cells = [f"trim({c})" for c in cells]
        sel = ", ".join(
            f"TRY_CAST({c} AS DOUBLE) AS {_quote(self.column_name(i))}"
            for i, c in zip(indices, cells, strict=True)
        )
        return self._con.sql(
            f"SELECT {sel} FROM {self._from} OFFSET {int(self._offset)}", params=self._params
        )

    def label(self, idx: int) -> str:
        """How messages name column ``idx``: its header name, or its index."""
        if self.names is not None and self.names[idx]:
            return repr(self.names[idx])
        return str(idx)

    def resolve(self, spec: str, what: str = "column") -> int:
        """0-based index of the column named (or numbered) ``spec``."""
        if self.names is not None and spec in self.names:
            return self.names.index(spec)
        try:
            idx = int(spec)
        except ValueError:
            if self.names is None:
                raise InputError(
                    f"unknown {what} {spec!r}: {self.display} has no header row (its first row "
                    "is numeric); give a 0-based column index, or --header yes if the first "
                    "row holds names"
                ) from None
            names = ", ".join(repr(h) for h in self.names)
            raise InputError(
                f"unknown {what} {spec!r} in {self.display}; its columns are: {names}"
            ) from None
        if not 0 <= idx < self.n_columns:
            raise InputError(
                f"unknown {what} {spec!r}: {self.display} has {self.n_columns} column(s), so "
                f"the 0-based index must be in 0..{self.n_columns - 1}"
            )
        return idx

    def read(self, indices: list[int], *, missing: bool = False) -> list[object]:
        """The columns ``indices`` as float64 arrays; a cell that is empty or not a number is
        an :class:`InputError` naming its data row (1-based, header not counted).

        With ``missing``, a missing cell (empty, a blank line, ``NA`` or a Parquet null) is
        read as NaN instead (a cell that is not a number is still an error)."""
        import duckdb
        import numpy as np

        raw = [_quote(self._sql_names[i]) for i in indices]
        cols = raw
        if self.format == "csv":
            # trim() also keeps DuckDB (2.0) from pushing the cast into the CSV scan, where it
            # becomes a strict cast that fails on the header row
            cols = [f"trim({c})" for c in cols]
        select = ", ".join(f"TRY_CAST({c} AS DOUBLE) AS v{j}" for j, c in enumerate(cols))
        if missing:
            select += "".join(
                f", ({c} IS NULL OR trim(CAST({c} AS VARCHAR)) IN ('', 'NA')) AS m{j}"
                for j, c in enumerate(raw)
            )
        sql = f"SELECT {select} FROM {self._from} LIMIT ? OFFSET ?"
        try:
            res = self._query(sql, [self.max_rows + 1, self._offset]).fetchnumpy()
        except duckdb.Error as exc:
            raise InputError(f"{self.display}: cannot read: {_one_line(exc)}") from None
        arrays = [res[f"v{j}"] for j in range(len(indices))]
        n = len(arrays[0]) if arrays else 0
        if n == 0:
            raise InputError(f"{self.display}: only a header row, no reports to fit")
        if n > self.max_rows:
            raise InputError(
                f"{self.display}: more than {self.max_rows} data rows; raise --max-rows to "
                "read more (memory grows with it)"
            )
        out = []
        for j, (idx, a) in enumerate(zip(indices, arrays, strict=True)):
            mask = np.ma.getmaskarray(a)
            if missing:
                gap = np.ma.getdata(res[f"m{j}"]).astype(bool)
                a = np.where(gap, np.nan, np.ma.getdata(a))
                mask = mask & ~gap
            if mask.any():
                row = int(np.argmax(mask))
                raw = self._query(
                    f"SELECT {_quote(self._sql_names[idx])} FROM {self._from} LIMIT 1 OFFSET ?",
                    [row + self._offset],
                ).fetchall()[0][0]
                nbad = int(mask.sum())
                more = f" ({nbad} bad values in total)" if nbad > 1 else ""
                if raw is None or str(raw).strip() == "":
                    what = f"empty cell in column {self.label(idx)}"
                    hint = "; missing reports cannot be modelled through the mechanism, drop them"
                else:
                    what = f"non-numeric value {str(raw)!r} in column {self.label(idx)}"
                    hint = ""
                raise InputError(f"{self.display}: data row {row + 1}: {what}{more}{hint}")
            out.append(np.ma.getdata(a).astype(np.float64, copy=False))
        return out

    def unused(self, used: set[int]) -> list[int]:
        return [i for i in range(self.n_columns) if i not in used]


# --------------------------------------------------------------------------------------------
# opening files (and bounding what is read)
# --------------------------------------------------------------------------------------------


def _sniff_suffix(head: bytes) -> str:
    if head[:2] == b"\x1f\x8b":
        return ".csv.gz"
    if head[:4] == b"PAR1":
        return ".parquet"
    return ".csv"


def _copy_stream(src, display: str, max_rows: int, tmpdir: str) -> str:
    """Copy a pipe into ``tmpdir``; stop with an error past ``max_rows`` + 1 lines."""
    head = src.read(_CHUNK) or b""
    dest = os.path.join(tmpdir, "stdin" + _sniff_suffix(head))
    lines = 0
    line_len = 0
    compressed = not dest.endswith(".csv")
    with open(dest, "wb") as out:
        chunk = head
        while chunk:
            out.write(chunk)
            if not compressed:
                lines += chunk.count(b"\n")
                last = chunk.rfind(b"\n")
                line_len = len(chunk) - last - 1 if last >= 0 else line_len + len(chunk)
                if lines > max_rows + 1:
                    raise InputError(
                        f"{display}: more than {max_rows} data rows; raise --max-rows to read more"
                    )
                if line_len > MAX_LINE_BYTES:
                    raise InputError(
                        f"{display}: a line longer than {MAX_LINE_BYTES // 2**20} MiB; "
                        "not a CSV file of reports"
                    )
            elif out.tell() > max_rows * 1024:
                raise InputError(f"{display}: compressed input larger than --max-rows allows")
            chunk = src.read(_CHUNK)
    return dest


@contextlib.contextmanager
def open_table(path: str, *, header: str = "auto", sep: str | None = None, max_rows: int):
    """Open ``path`` (``"-"``: standard input) for reading; yields a :class:`Table`."""
    if header not in ("auto", "yes", "no"):
        raise InputError(f"--header must be auto, yes or no; got {header!r}")
    with tempfile.TemporaryDirectory(prefix="pymc-dpnoise-") as tmp:
        if path == "-":
            display = "stdin"
            real = _copy_stream(sys.stdin.buffer, display, max_rows, tmp)
        else:
            display = path
            try:
                st = os.stat(path)
            except FileNotFoundError:
                raise InputError(f"{path}: no such file") from None
            except OSError as err:
                raise InputError(f"{path}: cannot open: {err.strerror or err}") from None
            if stat.S_ISDIR(st.st_mode):
                raise InputError(f"{path}: is a directory, not a file of reports")
            if stat.S_ISFIFO(st.st_mode):
                try:
                    with open(path, "rb") as fh:
                        real = _copy_stream(fh, display, max_rows, tmp)
                except OSError as err:
                    raise InputError(f"{path}: cannot open: {err.strerror or err}") from None
            elif not stat.S_ISREG(st.st_mode):
                kind = (
                    "a character device"
                    if stat.S_ISCHR(st.st_mode)
                    else "a block device"
                    if stat.S_ISBLK(st.st_mode)
                    else "a socket"
                    if stat.S_ISSOCK(st.st_mode)
                    else "not a regular file"
                )
                raise InputError(f"{path}: is {kind}; give a regular file, a pipe or '-' for stdin")
            else:
                try:
                    with open(path, "rb") as fh:
                        head = fh.read(4)
                except OSError as err:
                    raise InputError(f"{path}: cannot open: {err.strerror or err}") from None
                real = path
                if head == b"PAR1" and Path(path).suffix.lower() not in PARQUET_SUFFIXES:
                    # DuckDB picks the reader from the content for read_parquet only
                    real = os.path.join(tmp, "input.parquet")
                    os.symlink(os.path.abspath(path), real)
        fmt = "parquet" if real.lower().endswith(PARQUET_SUFFIXES) else "csv"
        if fmt == "parquet" and sep is not None:
            raise InputError(f"--sep: {display} is a Parquet file; --sep applies to CSV only")
        table = Table(real, display, fmt, header=header, sep=sep, max_rows=max_rows)
        try:
            yield table
        finally:
            table.close()


def read_reports(path, column=None, *, header="auto", sep=None, max_rows=10_000_000):
    """Read one numeric column of reports from a CSV or Parquet file.

    Parameters
    ----------
    path : str
        CSV (``.gz`` is decompressed) or Parquet file; ``"-"`` reads standard input.
    column : str, optional
        Header name or 0-based index (default: the first column).
    header : {"auto", "yes", "no"}
        Whether the first CSV row is a header; ``"auto"``: it is if any cell is not a number.
    sep : str, optional
        CSV field separator (default: detected).
    max_rows : int
        Refuse files with more data rows.

    Returns
    -------
    Column
        ``values`` (float64) and ``label``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = p.write_text("z,eps\\n0.5,1\\n-2.25,0.5\\n")
    >>> col = read_reports(str(p), "eps")
    >>> col.values.tolist(), col.label
    ([1.0, 0.5], "'eps'")
    """
    with open_table(path, header=header, sep=sep, max_rows=max_rows) as table:
        idx = 0 if column is None else table.resolve(column)
        (values,) = table.read([idx])
        return Column(values, table.label(idx))
