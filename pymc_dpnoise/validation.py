"""Argument checks that name the offending argument (in the spirit of Stan's ``check_*``)."""

from __future__ import annotations

import numbers

import numpy as np
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant, Variable


def constant_value(x, name: str | None = None):
    """The numeric value of ``x`` if it is known now (a number, array, constant or shared), else None.

    Strings, booleans-as-text and object arrays that are not numbers raise ``TypeError``
    (naming ``name`` when given).
    """
    if isinstance(x, SharedVariable):
        return np.asarray(x.get_value())
    if isinstance(x, Constant):
        return np.asarray(x.data)
    if isinstance(x, Variable):
        return None
    if hasattr(x, "to_numpy") and not isinstance(x, Variable):  # pandas / xarray
        x = x.to_numpy()
    if isinstance(x, str | bytes):
        raise TypeError(f"`{name or 'argument'}` must be numeric; got the string {x!r}")
    if isinstance(x, numbers.Number | np.ndarray | list | tuple | np.generic):
        if np.asarray(x).dtype.kind in "USV":
            raise TypeError(f"`{name or 'argument'}` must be numeric; got strings {x!r:.60}")
        try:
            return np.asarray(x, dtype=float)
        except (TypeError, ValueError) as err:
            what = f"`{name}`" if name else "argument"
            raise TypeError(f"{what} must be numeric (a float array): {err}") from None
    return None


def static_value(x):
    """The value of a constant tensor (through casts and dimension shuffles), else None.

    Unlike :func:`constant_value` this never reads a shared variable: data in ``pm.Data`` can
    be replaced by ``set_data`` after a graph was specialised to its current value.
    """
    import pytensor.tensor as pt
    from pytensor.scalar import Cast
    from pytensor.tensor.elemwise import DimShuffle, Elemwise

    x = pt.as_tensor_variable(x)
    while x.owner is not None and (
        isinstance(x.owner.op, DimShuffle)
        or (isinstance(x.owner.op, Elemwise) and isinstance(x.owner.op.scalar_op, Cast))
    ):
        x = x.owner.inputs[0]
    if isinstance(x, Constant):
        return np.asarray(x.data)
    return None


def check_required(**params) -> None:
    """Raise ``TypeError`` naming each parameter that is ``None`` (it would become NaN)."""
    for name, value in params.items():
        if value is None:
            raise TypeError(f"`{name}` is None; it is required (a number, array or tensor)")


def check_finite(name: str, value) -> np.ndarray | None:
    """Raise naming ``name`` if ``value`` is None, non-numeric or (when known) not finite.

    Returns the known value as a float array (None for a symbolic one)."""
    check_required(**{name: value})
    v = constant_value(value, name)
    if v is None:
        return None
    bad = ~np.isfinite(v)
    if np.any(bad):
        idx = np.argwhere(bad)[:5].tolist() if v.ndim else []
        where = f" at index {idx}" if idx else ""
        raise ValueError(f"`{name}` must be finite; got {v[bad].ravel()[:5]}{where}")
    return v


def check_positive(name: str, value) -> None:
    """Raise ``ValueError`` naming ``name`` if a known value is not finite and > 0."""
    v = check_finite(name, value)
    if v is not None and np.any(v <= 0):
        raise ValueError(f"`{name}` must be > 0; got {v[v <= 0].ravel()[:5]}")


def check_less(name_lo: str, lo, name_hi: str, hi) -> None:
    """Raise ``ValueError`` if known values do not satisfy lo < hi (elementwise, broadcast)."""
    check_required(**{name_lo: lo, name_hi: hi})
    a, b = constant_value(lo, name_lo), constant_value(hi, name_hi)
    if a is None or b is None:
        return
    check_finite(name_lo, a)
    check_finite(name_hi, b)
    try:
        ok = np.less(a, b)
    except ValueError as err:
        raise ValueError(f"`{name_lo}` and `{name_hi}` do not broadcast: {err}") from None
    if not np.all(ok):
        raise ValueError(f"`{name_lo}` must be < `{name_hi}`; got {name_lo}={a}, {name_hi}={b}")


def check_broadcast(**arrays) -> tuple[int, ...]:
    """Broadcast shape of known arguments, or a ValueError that names them."""
    shapes = {k: np.shape(v) for k, v in arrays.items() if v is not None}
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        desc = ", ".join(f"{k}{s}" for k, s in shapes.items())
        raise ValueError(f"arguments do not broadcast together: {desc}") from None


def broadcasts_to(shape, target) -> bool:
    """Whether ``shape`` broadcasts to ``target`` without enlarging it."""
    try:
        return np.broadcast_shapes(tuple(target), tuple(shape)) == tuple(target)
    except ValueError:
        return False


def check_rng(rng) -> np.random.Generator:
    """``rng`` itself if it is a :class:`numpy.random.Generator`, else a ``TypeError`` naming it."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "`rng` must be a numpy.random.Generator (e.g. numpy.random.default_rng(0)); "
            f"got {type(rng).__name__}"
        )
    return rng


def check_shapes(params: dict, shape=None, size=None) -> None:
    """Known parameter shapes must broadcast together, and into ``shape``/``size`` if given.

    Only parameters whose value is known now (numbers, arrays, constants) are checked.
    """
    values = {k: constant_value(v, k) for k, v in params.items()}
    known = {k: np.shape(v) for k, v in values.items() if v is not None}
    check_broadcast(**{k: np.empty(s) for k, s in known.items()})
    target = shape if shape is not None else size
    if target is None:
        return
    try:
        target = tuple(int(t) for t in np.atleast_1d(target))
    except Exception:  # symbolic shape (e.g. from dims): PyMC checks it when the graph runs
        return
    for k, s in known.items():
        if not broadcasts_to(s, target):
            raise ValueError(
                f"`{k}` has shape {s}, which does not broadcast to the variable's shape {target} "
                "(the shape of the observed reports, if given)"
            )
