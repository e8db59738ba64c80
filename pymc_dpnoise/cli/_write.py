"""Writing results for the command line: output targets checked up front, atomic writes.

:func:`check_target` runs before any sampling: it refuses a target that is one of the input
files (even with ``--force``), an existing file without ``--force``, a directory that is not a
Zarr store, a missing or unwritable directory, and formats whose writer is not installed.
:func:`write_atomic` writes into a temporary file (or directory, for Zarr) next to the target
and renames it into place with :func:`os.replace`, so the target is either untouched or
complete: an interrupted or failed write leaves the old content (or nothing) there.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import shutil
import stat
import tempfile
from pathlib import Path

from ._base import InputError

__all__ = ["Target", "check_target", "write_atomic"]


@dataclasses.dataclass(frozen=True)
class Target:
    """A checked output path and its format (``"csv"``, ``"netcdf"`` or ``"zarr"``)."""

    path: Path
    format: str
    exists: bool


#: ``--save`` suffixes and their formats; any other suffix is refused (a ``.parquet`` or
#: ``.json`` path would otherwise get a file of another format under its name)
SAVE_FORMATS = {".csv": "csv", ".nc": "netcdf", ".zarr": "zarr"}

_ZARR_META = ("zarr.json", ".zgroup", ".zarray", ".zattrs", ".zmetadata")


def _foreign_entries(path: Path) -> list[str] | None:
    """None if ``path`` is not a Zarr store; else the top-level entries that are not Zarr
    metadata or Zarr groups/arrays (files that replacing the store would delete)."""
    if not ((path / "zarr.json").is_file() or (path / ".zgroup").is_file()):
        return None
    foreign = []
    for entry in path.iterdir():
        if entry.name in _ZARR_META:
            continue
        if entry.is_dir() and any((entry / m).is_file() for m in _ZARR_META):
            continue
        foreign.append(entry.name)
    return sorted(foreign)


def _same_file(a: Path, b: str) -> bool:
    if b == "-":
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == Path(b).resolve()


def check_target(path: str, *, inputs=(), force: bool = False, option: str = "--save") -> Target:
    """Check that ``path`` can be written; raise :class:`InputError` if not."""
    p = Path(path)
    suffix = p.suffix.lower()
    fmt = SAVE_FORMATS.get(suffix)
    if fmt is None:
        got = repr(suffix) if suffix else "no suffix"
        raise InputError(
            f"{option} {path}: unsupported file type ({got}); the path must end in .csv "
            "(draws), .nc (NetCDF) or .zarr (Zarr store)"
        )
    if fmt == "zarr":
        from ..optional import MissingOptionalDependency, require

        try:
            require("zarr", extra="zarr", feature=f"{option} {path} (a Zarr store)", load=False)
        except MissingOptionalDependency as err:
            raise InputError(str(err)) from None
    elif fmt == "netcdf":
        if not any(importlib.util.find_spec(m) for m in ("h5netcdf", "netCDF4")):
            raise InputError(
                f"{option} {path}: writing NetCDF needs h5netcdf or netCDF4 (pip install "
                "h5netcdf); or save the draws as CSV with a path ending in .csv"
            )
        fmt = "netcdf"
    for src in inputs:
        if _same_file(p, src):
            raise InputError(f"{option} {path}: is the input file; choose another path")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"{option} {path}: directory {str(parent)!r} does not exist")
    exists = os.path.lexists(p)
    if exists:
        if p.is_dir():
            foreign = _foreign_entries(p) if fmt == "zarr" else None
            if foreign is None:
                raise InputError(
                    f"{option} {path}: is a directory"
                    + ("" if fmt != "zarr" else " but not a Zarr store")
                    + "; it is never replaced"
                )
            if foreign:
                raise InputError(
                    f"{option} {path}: the Zarr store also holds {', '.join(foreign[:3])}"
                    + (" ..." if len(foreign) > 3 else "")
                    + "; a store with other files in it is never replaced"
                )
        elif not p.is_file():
            raise InputError(f"{option} {path}: exists and is not a regular file")
        elif fmt == "zarr":
            raise InputError(f"{option} {path}: exists and is a file, not a Zarr store")
        if not force:
            raise InputError(f"{option} {path}: already exists; add --force to replace it")
    try:  # the directory must take new files (the temporary file is created there)
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".probe", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise InputError(
            f"{option} {path}: cannot write in {str(parent)!r}: {err.strerror or err}"
        ) from None
    return Target(p, fmt, exists)


def _file_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` would leave: an existing file's own, else
    ``0o666 & ~umask`` (the temporary file has 0o600, which is not what users expect)."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    umask = os.umask(0o022)  # read the umask: set something, then put it back
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(target: Target, write, *, before_commit=None) -> None:
    """Call ``write(tmp_path)`` on a temporary path next to the target, then rename it into
    place.  ``before_commit()`` runs just before the rename (it may raise to abort); any
    exception removes the temporary file and leaves the target as it was.  A file gets the
    mode a plain ``open(path, "w")`` would give it (:func:`_file_mode`)."""
    p = target.path
    parent = p.parent if str(p.parent) else Path(".")
    prefix = f".{p.name}.tmp-"
    if target.format == "zarr":
        tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=p.suffix, dir=parent))
        shutil.rmtree(tmp)  # the writer creates the store itself
    else:
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=p.suffix, dir=parent)
        os.close(fd)
        tmp = Path(name)
    old = None
    try:
        write(str(tmp))
        if target.format != "zarr":
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
            os.chmod(tmp, _file_mode(p))
        if before_commit is not None:
            before_commit()
        if target.format == "zarr" and os.path.lexists(p):
            # a directory cannot be replaced by rename: move the old store aside first
            old = Path(tempfile.mkdtemp(prefix=f".{p.name}.old-", dir=parent))
            os.rmdir(old)
            os.replace(p, old)
            try:
                os.replace(tmp, p)
            except BaseException:
                os.replace(old, p)
                old = None
                raise
        else:
            os.replace(tmp, p)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif os.path.lexists(tmp):
            tmp.unlink()
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
