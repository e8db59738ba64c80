"""Independent high-precision reference for the normal--Laplace convolution and its gradient.

:math:`p(y) = \\frac{1}{2\\beta}(A + B)` with :math:`r = y - m`, :math:`\\sigma = \\sqrt v`,
:math:`x = r/\\sigma`, :math:`\\kappa = \\sigma/\\beta`,

* :math:`A = e^{\\kappa^2/2 - r/\\beta}\\,\\Phi(x - \\kappa)` (noise above the sum),
* :math:`B = e^{\\kappa^2/2 + r/\\beta}\\,\\Phi(-x - \\kappa)` (noise below it),

and, since :math:`e^{\\kappa^2/2 \\mp r/\\beta}\\varphi(\\pm x - \\kappa) = \\varphi(x)`, the
derivatives in closed form (differentiating under the integral sign by hand, not autodiff):

* :math:`\\partial_r \\log p = (B - A)/(\\beta(A + B))`, :math:`\\partial_m = -\\partial_r`;
* :math:`\\partial_\\sigma \\log p = \\sigma/\\beta^2 - 2\\varphi(x)/(\\beta(A + B))`,
  :math:`\\partial_v = \\partial_\\sigma / (2\\sigma)`;
* :math:`\\partial_\\beta \\log p = -1/\\beta - \\sigma^2/\\beta^3 + (r(A - B) +
  2\\sigma\\varphi(x))/(\\beta^2(A + B))`.

Everything is evaluated in 90-digit decimal arithmetic (``decimal``; the binary inputs are
converted exactly), with :math:`\\log\\operatorname{erfc}` from the Taylor series of
:math:`\\operatorname{erf}` below 7 and the Laplace continued fraction above, all in log space:
the float64 cancellations that this reference checks the implementation against (e.g.
:math:`\\sigma^2/\\beta^3` against the last term for :math:`\\beta \\to 0`) are exact here.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

_PI = Decimal(
    "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803"
)


def _log_erfc_pos(u):
    """log erfc(u), u >= 0."""
    if u < 7:
        term = total = u
        n, u2 = 0, u * u
        while True:
            n += 1
            term = -term * u2 / n
            add = term / (2 * n + 1)
            total += add
            if abs(add) <= Decimal(10) ** -85 * abs(total):
                break
        return (1 - 2 / _PI.sqrt() * total).ln()
    k = Decimal(0)
    for j in range(400, 0, -1):
        k = (Decimal(j) / 2) / (u + k)
    return -(u * u) - _PI.sqrt().ln() - (u + k).ln()


def _log_ndtr(z):
    w = -z / Decimal(2).sqrt()
    if w >= 0:
        return _log_erfc_pos(w) - Decimal(2).ln()
    return (2 - _log_erfc_pos(-w).exp()).ln() - Decimal(2).ln()


def normal_laplace_logp_and_grad(y, m, v, b):
    """``(logp, d/dy, d/dm, d/dv, d/db)`` of :func:`pymc_dpnoise.math.expfam.normal_laplace_logp`."""
    with localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = 90, 10**15, -(10**15)
        y, m, v, b = (Decimal(float(t)) for t in (y, m, v, b))  # exact binary values
        r = y - m
        s = v.sqrt()
        x, kap = r / s, s / b
        half = kap * kap / 2
        log_a = half - r / b + _log_ndtr(x - kap)
        log_b = half + r / b + _log_ndtr(-x - kap)
        hi, lo = max(log_a, log_b), min(log_a, log_b)
        log_s = hi + (1 + (lo - hi).exp()).ln()
        pa, pb = (log_a - log_s).exp(), (log_b - log_s).exp()  # A/(A+B), B/(A+B)
        rho = (-(x * x) / 2 - (2 * _PI).sqrt().ln() - log_s).exp()  # phi(x)/(A+B)
        g_r = (pb - pa) / b
        g_v = (s / (b * b) - 2 * rho / b) / (2 * s)
        g_b = -1 / b - s * s / b**3 + (r * (pa - pb) + 2 * rho * s) / (b * b)
        return tuple(float(t) for t in (log_s - (2 * b).ln(), g_r, -g_r, g_v, g_b))
