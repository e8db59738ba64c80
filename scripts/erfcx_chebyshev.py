"""Chebyshev coefficients of ``pymc_dpnoise.math._simd.erfcx_nonneg``.

The function approximated is :math:`g(t) = (1 + 2x)\\,\\mathrm{erfcx}(x)` with
:math:`x = K(1 + t)/(1 - t)`, :math:`t \\in [-1, 1)`, :math:`K = 3.75` (the mapping of Shepherd &
Laframboise, Math. Comp. 36 (1981) 249-253: g is analytic on [-1, 1], including t = 1, where
:math:`g \\to 2/\\sqrt\\pi`, so its Chebyshev coefficients fall geometrically).  They are
computed here in 50-digit arithmetic (mpmath) by the discrete cosine transform at 80
Chebyshev nodes; the sum of the absolute values of the dropped coefficients (25 and up) is
printed last (4.6e-18 with g between 1 and 1.18, so truncation adds < 4e-18 relative).

Run: ``python scripts/erfcx_chebyshev.py`` with mpmath importable (it is not a dependency of the
package: ``pip install --target /tmp/mp mpmath`` and ``PYTHONPATH=/tmp/mp``).
"""

import mpmath as mp

mp.mp.dps = 50
K = mp.mpf("3.75")
N = 80
KEEP = 25

theta = [mp.pi * (j + mp.mpf(1) / 2) / N for j in range(N)]
values = []
for th in theta:
    t = mp.cos(th)
    x = K * (1 + t) / (1 - t)
    values.append((1 + 2 * x) * mp.erfc(x) * mp.exp(x * x))
coef = []
for k in range(N):
    c = 2 * mp.fsum(v * mp.cos(k * th) for v, th in zip(values, theta, strict=True)) / N
    coef.append(c / 2 if k == 0 else c)
for k in range(KEEP):
    print(f"{float(coef[k])!r},")
print("dropped:", float(mp.fsum(abs(c) for c in coef[KEEP:])))
