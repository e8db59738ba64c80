"""Checks of a built model before sampling, and the sampling call itself.

What the file's options checks cannot see, the model can: a release whose log-likelihood at
the sampler's starting point is -inf or NaN (a value beyond what float64 arithmetic in the
likelihood can hold, such as 1e300 in a count file) would make every sampler fail (PyMC: an
error on the initial point; nutpie: a Rust panic, then a segmentation fault).  So
:func:`check_rows` evaluates the log-likelihood of every observed row at that point, with
PyTensor's Python VM (no native compile), and refuses the first bad row by its number.

:func:`count_tail_warnings` warns, before sampling, when releases lie so far beyond the range
their noise-free value can have (``[0, n]`` for a binomial count, ``[0, inf)`` for a Poisson
one, ``[lower, upper]`` for a clipped report, ``[n lower, n upper]`` for a sum of ``n``
truncated records) that the declared noise would put them there with negligible probability:
the releases are inconsistent with the declared model, and the posterior would sit at the
boundary.

:func:`sample` runs ``pm.sample`` and turns any exception of the sampler into a one-line
:class:`~._base.InputError` (exit code 2).

Standard library only at import (NumPy and PyMC are imported inside the functions).
"""

from __future__ import annotations

import math

from ._base import InputError

__all__ = ["check_rows", "count_tail_warnings", "sample"]

#: warn when the chance that any of the rows lies this far beyond the count's range is below
#: this (a union bound over the rows of a tail bound of the noise)
TAIL_WARN = 1e-6


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _cheap_mode():
    """PyTensor's fast_run rewrites run by the Python VM: no Numba or C compile."""
    from pytensor.compile.mode import Mode
    from pytensor.link.vm import VMLinker

    return Mode(linker=VMLinker(c_thunks=False, use_cloop=False), optimizer="fast_run")


def _where(lp, data, rv_name, flat_index):
    """``data row i: release v`` when the observed rows are the file's rows, else the index."""
    import numpy as np

    z = data.get("z")
    if isinstance(z, np.ndarray) and lp.ndim == 1 and len(z) == len(lp):
        v = z[flat_index]
        shown = f"{float(v):g}" if np.ndim(v) == 0 else np.array2string(np.asarray(v))
        return f"data row {flat_index + 1}: release {shown}"
    idx = np.unravel_index(flat_index, lp.shape) if lp.ndim else ()
    return f"observation {list(map(int, idx))} of {rv_name!r}"


def check_rows(model, data, display: str) -> None:
    """Refuse (InputError) the first observed row whose log-likelihood at the model's initial
    point is -inf, +inf or NaN, naming the row and the parameter values of that point."""
    import numpy as np

    observed = list(model.observed_RVs)
    if not observed:
        return
    terms = model.logp(vars=observed, sum=False)
    params = list(model.unobserved_value_vars)
    try:
        fn = model.compile_fn([*terms, *params], inputs=model.value_vars, mode=_cheap_mode())
        values = fn(model.initial_point())
    except Exception as exc:  # any failure of the likelihood is the input's
        raise InputError(
            f"{display}: the model's log-likelihood cannot be evaluated at the sampler's "
            f"starting point: {_one_line(exc)}"
        ) from None
    free = {rv.name for rv in model.free_RVs}
    point = ", ".join(
        f"{v.name} = {np.array2string(np.asarray(x), precision=4, threshold=5)}"
        for v, x in zip(params, values[len(terms) :], strict=True)
        if v.name in free  # not the transformed copies, nor deterministics
    )
    for rv, lp in zip(observed, values[: len(terms)], strict=True):
        lp = np.asarray(lp, dtype=float)
        bad = ~np.isfinite(lp)
        if not bad.any():
            continue
        first = int(np.flatnonzero(bad.ravel())[0])
        more = f" ({int(bad.sum())} such rows)" if bad.sum() > 1 else ""
        raise InputError(
            f"{display}: {_where(lp, data, rv.name, first)} has log-likelihood "
            f"{lp.ravel()[first]} at the sampler's starting point ({point}){more}: the model "
            "cannot give it a finite probability (a value too large for the likelihood's "
            "arithmetic, or impossible under the options); remove or correct it"
        )


def _log_tail_bound(kind: str, param, distance):
    """An upper bound on log P(N >= distance) for the symmetric release noise ``kind`` with
    parameter ``param`` (Laplace kinds: scale b; Gaussian kinds: sigma), ``distance`` > 0.

    Laplace: 0.5 e^{-d/b}; discrete Laplace: e^{-ceil(d)/b} / (1 + e^{-1/b}); rounded Laplace:
    at most P(L >= d - 1/2): all are <= e^{-(d - 1/2)/b}.  Gaussian: <= e^{-d^2 / 2 sigma^2};
    discrete Gaussian: <= the continuous tail at d - 1 (Canonne, Kamath & Steinke 2020,
    Prop. 25).
    """
    import numpy as np

    d = np.asarray(distance, dtype=float)
    if kind in ("laplace", "discrete-laplace", "rounded-laplace"):
        return -np.maximum(d - 0.5, 0.0) / param
    return -(np.maximum(d - 1.0, 0.0) ** 2) / (2.0 * np.asarray(param, dtype=float) ** 2)


def _release_noise(args, data, sensitivity=None):
    """``(kind, param, sd)`` of the releases' noise, or None if it is not known here
    (``sensitivity``: the Laplace noise's, where the model fixes it)."""
    import numpy as np

    spec = data.get("noise")
    if spec is not None:
        return spec.kind, np.asarray(spec.param, dtype=float), np.sqrt(spec.variance)
    eps = data.get("epsilon")
    if eps is None or getattr(args, "noise", "laplace") != "laplace":
        return None
    sens = sensitivity or getattr(args, "sensitivity", None) or 1.0
    scale = sens / np.asarray(eps, dtype=float)
    return "laplace", scale, math.sqrt(2.0) * scale


def truncated_sensitivity(args):
    """The Laplace sensitivity of a sum of n records in [--lower, --upper]: --sensitivity if
    given, else the largest change one record can make."""
    if args.sensitivity is not None:
        return args.sensitivity
    return max(abs(args.lower), abs(args.upper), args.upper - args.lower)


def _truncated_range(args, data):
    import numpy as np

    n = np.asarray(data["n"], dtype=float)
    text = f"[n * {args.lower:g}, n * {args.upper:g}] (n records in [--lower, --upper])"
    return n * args.lower, n * args.upper, text, truncated_sensitivity(args)


def _truncated_normal_range(args, data):
    """Ranges of the pair (sum x, sum x^2) of n records in [--lower, --upper], one column each."""
    import numpy as np

    from ..mechanisms import truncated_normal_sum_sensitivity

    lo, hi = args.lower, args.upper
    sq_lo = 0.0 if lo <= 0.0 <= hi else min(lo * lo, hi * hi)
    sq_hi = max(lo * lo, hi * hi)
    n = np.asarray(data["n"], dtype=float).reshape(-1, 1)
    text = (
        f"[n * {lo:g}, n * {hi:g}] for sum x and [n * {sq_lo:g}, n * {sq_hi:g}] for sum x^2 "
        "(n records in [--lower, --upper])"
    )
    sens = args.sensitivity or float(truncated_normal_sum_sensitivity(lo, hi))
    return n * np.array([lo, sq_lo]), n * np.array([hi, sq_hi]), text, sens


#: per model: ``(args, data) -> (lower, upper, text, sensitivity)``, the range of the noise-free
#: value of a release and the Laplace noise's sensitivity (None: ``--sensitivity`` or 1)
VALUE_RANGE = {
    "noisy-binomial": lambda args, data: (
        0.0, float(args.n), f"the count's range [0, {args.n:g}] (--n {args.n:g})", None
    ),
    "noisy-poisson": lambda args, data: (0.0, math.inf, "the count's range [0, inf)", None),
    "clipped-normal": lambda args, data: (
        args.lower, args.upper,
        f"the clipping range [{args.lower:g}, {args.upper:g}] (--lower, --upper)",
        args.upper - args.lower,
    ),
    "clipped-exponential": lambda args, data: (
        0.0, args.upper, f"the clipping range [0, {args.upper:g}] (--upper)", args.upper
    ),
    "truncated-exponential": _truncated_range,
    "truncated-poisson": _truncated_range,
    "truncated-normal": _truncated_normal_range,
}  # fmt: skip


def count_tail_warnings(model_name: str, args, data, display: str) -> list[str]:
    """Warnings (one line each) for releases far beyond the range of their noise-free value
    (:data:`VALUE_RANGE`: counts, clipped reports, truncated sums).

    A release ``y`` at distance ``d`` beyond ``[lo, hi]`` needs noise of at least ``d`` in that
    direction, whatever the value; if the bound on that probability times the number of rows
    is below :data:`TAIL_WARN`, the releases are inconsistent with the declared model.
    """
    import numpy as np

    if model_name not in VALUE_RANGE:
        return []
    z = data.get("z")
    if not isinstance(z, np.ndarray) or z.ndim not in (1, 2) or not len(z):
        return []
    lo, hi, range_text, sens = VALUE_RANGE[model_name](args, data)
    noise = _release_noise(args, data, sens)
    if noise is None:
        return []
    kind, param, sd = noise
    if z.ndim == 2:  # several released sums per row (one column each), the same noise law
        param, sd = (np.reshape(np.asarray(v, dtype=float), (-1, 1)) for v in (param, sd))
    with np.errstate(invalid="ignore"):
        distance = np.maximum(np.maximum(z - hi, lo - z), 0.0)
    log_bound = np.where(distance > 0, _log_tail_bound(kind, param, distance), 0.0)
    far = log_bound + math.log(z.size) < math.log(TAIL_WARN)
    if not far.any():
        return []
    worst = int(np.argmin(log_bound))
    row = int(np.unravel_index(worst, z.shape)[0])
    sds = float(np.broadcast_to(distance / sd, z.shape).flat[worst])
    log10 = float(log_bound.flat[worst]) / math.log(10.0)
    unit = "rows" if z.ndim == 1 else "releases"
    more = f"; {int(far.sum())} {unit} like it" if far.sum() > 1 else ""
    noise_opt = f" (--noise {args.noise})" if getattr(args, "noise", None) else ""
    return [
        f"{display}: data row {row + 1}: release {z.flat[worst]:g} lies "
        f"{float(distance.flat[worst]):g} beyond {range_text}, {sds:.3g} noise sds{noise_opt}: "
        f"noise that large has probability below 1e{math.ceil(log10)}{more}.  The releases "
        "are inconsistent with the declared range and the noise (check the bounds or --n, "
        "the budget or scale, --sensitivity); the posterior will sit at the edge of its range"
    ]


def sample(pm, sampler: str, **kwargs):
    """``pm.sample(nuts_sampler=sampler, **kwargs)``; any exception of the sampler is a one-line
    InputError naming the sampler and its first line (KeyboardInterrupt passes)."""
    try:
        return pm.sample(nuts_sampler=sampler, **kwargs)
    except Exception as exc:  # every sampler failure ends in one line
        text = str(exc).strip()
        first = _one_line(text.splitlines()[0]) if text else type(exc).__name__
        other = "another --sampler, " if sampler != "pymc" else ""
        raise InputError(
            f"sampling with {sampler} failed: {first} (every row's log-likelihood was finite "
            f"at the starting point; try {other}more --tune, or check the options against how "
            "the data were released)"
        ) from None
