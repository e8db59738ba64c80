"""Choosing the bin count of a clipped summary from an error budget."""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np


@functools.lru_cache(maxsize=2)
def _f3_function(model):
    import pytensor
    import pytensor.tensor as pt

    from ..math.clipped import clipped_summary_derivatives

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
        :math:`N M_3 h^3 / 48` at the chosen h (above ``tol`` only when ``max_bins`` capped
        the count, which warns).
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
    bound = n * m3 * h**3 / 48.0
    if bound > tol:
        # the bin count was capped: the promised budget does not hold, say so and what helps
        warnings.warn(
            f"choose_n_bins: max_bins = {max_bins} bins give an error bound of {bound:.3g} nats, "
            f"above tol = {tol:g}: raise max_bins (the bound falls as 1/n_bins^3; "
            f"{math.ceil(k * (bound / tol) ** (1 / 3))} bins would do), loosen tol, or fit the "
            "exact per-report likelihood",
            UserWarning,
            stacklevel=2,
        )
    return k, bound
