"""Accuracy of NoisySum's likelihood against independent references, n from 1 to 1e8.

For each data law (clamping active and not) and noise kind, the largest relative error of the
release's density over 13 points within 3 sd of the mean, against ``tests/sums_reference.py``
(characteristic-function inversion with SciPy quadrature; a direct quadrature at n = 1; the
lattice inversion integral for clamped Poisson values), next to the tolerance the tests use
(three times the first omitted Edgeworth term, plus 1e-9).  n = 1 and 3 are evaluated through
``pymc_dpnoise.math.sums`` directly: NoisySum refuses them (but for unclamped normal values),
and this table is why.  "–": the reference does not apply (atoms with Laplace noise at n = 3:
the characteristic function does not decay).

Run from the repository root::

    .venv/bin/python benchmarks/noisy_sums.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
from _common import machine_info, md_table, write_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import sums_reference as ref

from pymc_dpnoise import noise
from pymc_dpnoise.math import sums as sm

CONTINUOUS = [
    ("normal", (40.0, 12.0), 0.0, 50.0),
    ("normal", (40.0, 12.0), -np.inf, np.inf),
    ("lognormal", (1.0, 0.8), 0.0, 6.0),
    ("lognormal", (1.0, 0.8), 0.0, np.inf),
    ("exponential", (2.0,), 0.0, 3.0),
    ("exponential", (2.0,), 0.0, np.inf),
    ("gamma", (3.0, 2.0), 1.0, 8.0),
    ("gamma", (3.0, 2.0), 0.0, np.inf),
]
NS = [1, 3, 30, 10_000, 100_000_000]
_FNS: dict = {}


def fn(kind, noise_name, lower=None, upper=None):
    key = (kind, noise_name, lower, upper)
    if key not in _FNS:
        y, n, b = pt.dvector("y"), pt.dscalar("n"), pt.dscalar("b")
        ps = [pt.dscalar(p) for p in sm.DATA_KINDS[kind]]
        lo = pt.dscalar("L") if lower is None else pt.constant(float(lower))
        hi = pt.dscalar("U") if upper is None else pt.constant(float(upper))
        out = sm.noisy_sum_logp(y, n, kind, ps, lo, hi, getattr(noise, noise_name), b)
        ins = [y, n, *ps] + ([lo, hi] if lower is None else []) + [b]
        _FNS[key] = pytensor.function(ins, out, mode="FAST_COMPILE")
    return _FNS[key]


def main():
    t0 = time.perf_counter()
    rows = []
    for kind, params, lower, upper in CONTINUOUS:
        law = ref.ClampedLaw(kind, params, lower, upper)
        g = ref.law_standardised(law)
        for noise_name in ("Laplace", "Gaussian"):
            b = 0.5 * np.sqrt(law.var * 30.0)
            row = dict(law=f"{kind}{params} [{lower:g}, {upper:g}]", noise=f"{noise_name}({b:.3g})")
            for n in NS:
                noise_var = 2 * b * b if noise_name == "Laplace" else b * b
                sd = np.sqrt(n * law.var + noise_var)
                y = n * law.mean + sd * np.linspace(-3.0, 3.0, 13)
                try:
                    want = (
                        ref.density_n1(law, noise_name, b, y)
                        if n == 1
                        else ref.density_cf(law, n, noise_name, b, y)
                    )
                except RuntimeError:
                    row[f"e{n}"] = None
                    continue
                got = np.exp(fn(kind, noise_name)(y, n, *params, lower, upper, b))
                row[f"e{n}"] = float(np.max(np.abs(got / want - 1.0)))
                row[f"t{n}"] = 3 * ref.edgeworth_next_term(g, n) + 1e-9
            rows.append(row)
            print(row, flush=True)
    for mu, lower, upper in [(3.0, 0, 6), (3.0, 1, np.inf), (0.8, 0, 2)]:
        g = ref.poisson_standardised(mu, lower, upper)
        mean, var = ref.poisson_moments(mu, lower, upper)
        for noise_name, sigma in (("Gaussian", 2.0), ("DiscreteGaussian", 1.0)):
            row = dict(law=f"poisson({mu}) [{lower}, {upper:g}]", noise=f"{noise_name}({sigma})")
            for n in NS:
                sd = np.sqrt(n * var + sigma**2)
                y = np.round(n * mean + sd * np.linspace(-3.0, 3.0, 13))
                want = ref.poisson_release(mu, lower, upper, n, noise_name, sigma, y)
                got = np.exp(fn("poisson", noise_name)(y, n, mu, lower, upper, sigma))
                row[f"e{n}"] = float(np.max(np.abs(got / want - 1.0)))
                row[f"t{n}"] = 3 * ref.edgeworth_next_term(g, n) + 1e-9
            rows.append(row)
            print(row, flush=True)
    cols = [("law", "data law [L, U]"), ("noise", "noise")]
    for n in NS:
        cols += [(f"e{n}", f"err n={n:g}"), (f"t{n}", f"tol n={n:g}")]
    body = (
        "# NoisySum: relative error of the density against independent references\n\n"
        "Command: `.venv/bin/python benchmarks/noisy_sums.py` (module docstring: what is "
        "compared).  Largest relative error over 13 points within 3 sd; `tol` is the tests' "
        "tolerance (3x the first omitted Edgeworth term + 1e-9).  n = 1 and 3 are refused by "
        "NoisySum except for unclamped normal values (exact).  Laplace and Gaussian noise "
        "scale: half of one clamped value's sd times sqrt(30).  Poisson rows: the tests add the "
        "lattice and normaliser terms 2 exp(-2 pi^2 sigma^2 V / (sigma^2 + V)) + 2 exp(-2 pi^2 "
        "sigma^2) (1.1e-8 at sigma = 1), which the `tol` columns leave out.\n\n"
        + md_table(rows, cols)
    )
    write_results("noisy_sums", machine_info(), body, {"rows": rows}, t0)


if __name__ == "__main__":
    main()
