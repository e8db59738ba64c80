"""The reference part of the registry (``tests/registry.py``) for the scalar continuous
reports: the clipped normal and the clipped exponential with Laplace noise.  Their grids are
dicts of equal-length vectors, so one compiled function per case serves every check of
``distributions/test_distributions.py``; the references are the quadratures of
``tests/references.py``."""

from __future__ import annotations

import itertools

import numpy as np
from references import (
    clipped_exponential_laplace_logp_graded_ref,
    clipped_exponential_laplace_logp_ref,
    clipped_normal_laplace_logp_graded_ref,
    clipped_normal_laplace_logp_ref,
)
from registry import ScalarCase

import pymc_dpnoise as pmd
from pymc_dpnoise import mechanisms


def _normal_grid():
    rows = []
    for (lo, hi), eps, rel_sigma, mu_pos in itertools.product(
        [(-5.0, 5.0), (0.0, 1.0)],
        [0.01, 0.1, 1.0, 10.0, 100.0],
        [1e-3, 1e-1, 1.0, 1e2],
        [-0.5, 0.3, 1.0, 2.0],
    ):
        w = hi - lo
        s = w / eps
        sigma = rel_sigma * w
        mu = lo + mu_pos * w
        zs = [lo - 50 * s, lo - s, lo, lo + 1e-6 * w, lo + 0.37 * w, hi - 1e-6 * w, hi, hi + s]
        zs += [hi + 50 * s]
        for z in zs:
            rows.append((z, mu, sigma, lo, hi, eps))
    arr = np.array(rows)
    return dict(zip(("value", "mu", "sigma", "lower", "upper", "epsilon"), arr.T, strict=True))


def _exp_grid():
    rows = []
    for u, eps, lam_u in itertools.product(
        [1.0, 5.0],
        [0.01, 0.1, 1.0, 10.0, 100.0],
        [1e-3, 0.1, 1.0, 10.0, 100.0, "removable"],
    ):
        b = u / eps
        # lam = 1/b is the paper's removable singularity (division by b*theta - eps)
        lams = [eps / u, eps / u * (1 + 1e-9)] if lam_u == "removable" else [lam_u / u]
        for lam in lams:
            zs = [-50 * b, -b, 0.0, 1e-6 * u, 0.41 * u, u - 1e-6 * u, u, u + b, u + 50 * b]
            for z in zs:
                rows.append((z, lam, u, eps))
    arr = np.array(rows)
    return dict(zip(("value", "lam", "upper", "epsilon"), arr.T, strict=True))


CASES = [
    ScalarCase(
        name="clipped_normal",
        cls=pmd.LaplacePerturbedClippedNormal,
        params=("mu", "sigma", "lower", "upper", "epsilon"),
        grad_params=("mu", "sigma"),
        grid=_normal_grid,
        ref_logp=clipped_normal_laplace_logp_ref,
        typical=dict(mu=0.4, sigma=0.8, lower=-1.0, upper=1.0, epsilon=2.0),
        bounds=lambda p: (p["lower"], p["upper"]),
        noise_scale=lambda p: (p["upper"] - p["lower"]) / p["epsilon"],
        mechanism=lambda rng, size, mu, sigma, lower, upper, epsilon: mechanisms.perturb_clipped(
            rng.normal(mu, sigma, size), lower, upper, epsilon, rng
        ),
        shifted=dict(mu=0.55),
        # logp varies on the scale min(sigma, noise scale): step well below it
        fd_step=lambda g: dict.fromkeys(
            ("mu", "sigma"),
            1e-3 * np.minimum(g["sigma"], (g["upper"] - g["lower"]) / g["epsilon"]),
        ),
        bad=[
            (dict(sigma=0.0), "sigma"),
            (dict(sigma=-1.0), "sigma"),
            (dict(epsilon=0.0), "epsilon"),
            (dict(epsilon=np.nan), "epsilon"),
            (dict(lower=1.0, upper=1.0), "lower"),
            (dict(lower=2.0, upper=1.0), "upper"),
            (dict(mu=np.inf), "mu"),
            (dict(epsilon=np.array([1.0, -1.0])), "epsilon"),
        ],
        positive="sigma",
    ),
    ScalarCase(
        name="clipped_exponential",
        cls=pmd.LaplacePerturbedClippedExponential,
        params=("lam", "upper", "epsilon"),
        grad_params=("lam",),
        grid=_exp_grid,
        ref_logp=clipped_exponential_laplace_logp_ref,
        typical=dict(lam=0.7, upper=3.0, epsilon=1.5),
        bounds=lambda p: (0.0, p["upper"]),
        noise_scale=lambda p: p["upper"] / p["epsilon"],
        mechanism=lambda rng, size, lam, upper, epsilon: mechanisms.perturb_clipped_exponential(
            rng.exponential(1 / lam, size), upper, epsilon, rng
        ),
        shifted=dict(lam=0.8),
        fd_step=lambda g: dict(lam=1e-4 * g["lam"]),
        bad=[
            (dict(lam=0.0), "lam"),
            (dict(lam=-2.0), "lam"),
            (dict(upper=0.0), "upper"),
            (dict(epsilon=-1.0), "epsilon"),
            (dict(epsilon=np.inf), "epsilon"),
            (dict(lam=np.nan), "lam"),
        ],
        positive="lam",
    ),
]


#: the domain the clipped logps accept (pymc_dpnoise.distributions.clipped.MAX_STANDARDISED)
_MAX_STANDARDISED = 1e150


def _extreme_normal_grid(broad):
    """Clipped-normal reports at extreme but valid parameters: a budget (noise scale
    (b - a)/epsilon) from 1e-100 to 1e100 times the interval, sigma from 1e-100 to 1e100
    times it, mu far outside on both sides and inside, reports 1e3 noise scales into both
    tails, at the bounds, inside and at mu.  ``broad`` adds budgets and sigmas between,
    mu 1e3 widths out, and an interval of width 1e-3 at 1e6 (the noise scale 1e-11 at
    epsilon = 1e8 is below the spacing of floats there)."""
    rels = [1e-100, 1e-8, 1e8, 1e100]
    intervals = [(-1.0, 1.0)]
    positions = [-3.0, 0.3, 5.0]
    if broad:
        rels = [1e-150, 1e-100, 1e-12, 1e-8, 1e-3, 1.0, 1e3, 1e8, 1e12, 1e100]
        intervals.append((1e6, 1e6 + 1e-3))
        positions = [-1e3, -3.0, 0.0, 0.3, 1.0, 5.0, 1e3]
    rows = []
    for (lo, hi), eps, rel_sigma, pos in itertools.product(intervals, rels, rels, positions):
        w = hi - lo
        s, sigma, mu = w / eps, rel_sigma * w, lo + pos * w
        reach = max(abs(lo - mu), abs(hi - mu)) / sigma
        if eps < 1 / _MAX_STANDARDISED or rel_sigma * eps > _MAX_STANDARDISED:
            continue
        if reach > _MAX_STANDARDISED:
            continue
        zs = [lo - 1e3 * s, lo - 30 * s, lo, lo + 0.37 * w, hi, hi + 30 * s, hi + 1e3 * s, mu]
        rows += [(z, mu, sigma, lo, hi, eps) for z in zs]
    arr = np.array(rows)
    return dict(zip(("value", "mu", "sigma", "lower", "upper", "epsilon"), arr.T, strict=True))


def _extreme_exponential_grid(broad):
    """Clipped-exponential reports at extreme but valid parameters: the noise scale u/epsilon
    from 1e-100 to 1e100 times u, lam u from 1e-100 to 1e100 and at the removable
    singularity lam = epsilon/u, u = 1e-6 and 1e6, reports 1e3 noise scales into both tails,
    at the bounds and inside.  ``broad`` adds budgets and rates between and u = 1."""
    rels = [1e-100, 1e-8, 1e8, 1e100]
    uppers = [1e-6, 1e6]
    if broad:
        rels = [1e-150, 1e-100, 1e-12, 1e-8, 1e-3, 1.0, 1e3, 1e8, 1e12, 1e100]
        uppers = [1e-6, 1.0, 1e6]
    rows = []
    for u, eps, lam_u in itertools.product(uppers, rels, [*rels, "removable"]):
        if eps / u > _MAX_STANDARDISED:
            continue
        b = u / eps
        lams = [eps / u, eps / u * (1 + 1e-9)] if lam_u == "removable" else [lam_u / u]
        for lam in lams:
            zs = [-1e3 * b, -30 * b, 0.0, 0.41 * u, u, u + 30 * b, u + 1e3 * b]
            rows += [(z, lam, u, eps) for z in zs]
    arr = np.array(rows)
    return dict(zip(("value", "lam", "upper", "epsilon"), arr.T, strict=True))


_EXTREME = {
    "clipped_normal": (_extreme_normal_grid, clipped_normal_laplace_logp_graded_ref),
    "clipped_exponential": (_extreme_exponential_grid, clipped_exponential_laplace_logp_graded_ref),
}
