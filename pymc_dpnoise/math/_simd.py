r"""``exp``, ``log`` and ``erfcx`` as straight-line arithmetic, so that LLVM vectorises the loops
that call them.

Numba compiles ``math.exp``, ``math.log`` and ``math.erfc`` to calls into the C library, one
report at a time: a loop containing them runs scalar (this machine has no vector math library
for LLVM to substitute).  The functions here are polynomials, one division or two, integer
operations on the bit pattern and fused multiply-adds, with no branch and no call, so a loop
over reports that uses only them is compiled to AVX2 (4 doubles per instruction): 0.76 ns per
``exp``, 0.9 per ``log`` and 2.4 per ``erfcx`` in such a loop here, against ~5 ns per libm
call.  Each is a Numba intrinsic that writes its LLVM instructions into the caller, so it is
inlined without Numba's ``inline="always"`` (which, for the same code, made the
clipped-normal kernel's vectorised pass compile in 0.9 instead of 0.57 CPU-s: Numba copies its
IR for every inlined call).  Used by
:func:`pymc_dpnoise.math._clipped_normal_kernel._inside_linear`, the clipped-normal kernel's
formula for the reports inside the interval.

Accuracy (``tests/math/test_simd.py``: NumPy, SciPy and a 90-digit reference on dense grids): exp
within 1 ulp, log within 2, erfcx within 3.

* :func:`exp_` — Cody–Waite reduction :math:`x = k\ln 2 + r`, :math:`|r| \le \ln2/2`, Taylor
  polynomial of degree 13 (the next term is below 5e-18 of the result), :math:`2^k` built in
  the exponent bits.  Domain: :math:`-708 \le x \le 709` (results are normal numbers;
  outside it the result is wrong, and the callers stay inside).
* :func:`log_` — :math:`y = m 2^e` with :math:`m \in [\sqrt{1/2}, \sqrt2)`,
  :math:`\log m = 2\,\operatorname{artanh}(s)`, :math:`s = (m-1)/(m+1)`, :math:`|s| \le 0.172`,
  odd series to :math:`s^{21}` (the next term is below 3e-17 of the sum).  Domain: positive
  normal numbers.
* :func:`erfcx_nonneg` — :math:`\operatorname{erfcx}(x) = e^{x^2}\operatorname{erfc}(x)` for
  :math:`0 \le x < 10^{150}`: :math:`(1 + 2x)\operatorname{erfcx}(x)` is a function of
  :math:`t = (x - K)/(x + K)`, :math:`K = 3.75`, analytic on :math:`[-1, 1]` (Shepherd and
  Laframboise's mapping, Math. Comp. 36 (1981)), summed as a Chebyshev series of 25 terms
  (Clenshaw; coefficients from ``scripts/erfcx_chebyshev.py`` in 50-digit arithmetic, the
  dropped terms sum to 4.6e-18).
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_F64 = ir.DoubleType()
_I64 = ir.IntType(64)


def _c(v):
    return ir.Constant(_F64, float(v))


def _ci(v):
    return ir.Constant(_I64, int(v))


def _intrinsic_f64(emit, nargs=1):
    """A Numba intrinsic ``float64(float64, ...)`` whose body is ``emit(builder, *args)``."""

    def codegen(context, builder, signature, llargs):
        return emit(builder, *llargs)

    if nargs == 1:

        def typer(typingctx, x):
            return types.float64(types.float64), codegen
    else:

        def typer(typingctx, a, b, c):
            return types.float64(types.float64, types.float64, types.float64), codegen

    typer.__name__ = emit.__name__.removeprefix("_emit_")
    typer.__doc__ = emit.__doc__
    return intrinsic(typer)


def _emit_fma(builder, a, b, c):
    """a * b + c rounded once (LLVM's ``llvm.fma``: one instruction on x86-64 with FMA3)."""
    return builder.fma(a, b, c)


fma = _intrinsic_f64(_emit_fma, 3)

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # trailing bits zero: k * _LN2_HI is exact for |k| < 2^11
_LN2_LO = 1.90821492927058770002e-10
#: 1.5 * 2^52: x + _SHIFT rounds x to an integer held in the low mantissa bits
_SHIFT = 6755399441055744.0
_SHIFT_BITS = 4843621399236968448


def _emit_exp(b, x):
    """e^x for -708 <= x <= 709 (see the module docstring)."""
    t = b.fma(x, _c(_LOG2E), _c(_SHIFT))
    k = b.fsub(t, _c(_SHIFT))
    ki = b.sub(b.bitcast(t, _I64), _ci(_SHIFT_BITS))
    mk = b.fneg(k)
    r = b.fma(mk, _c(_LN2_LO), b.fma(mk, _c(_LN2_HI), x))
    p = _c(1.0 / math.factorial(13))
    for j in range(12, -1, -1):  # Taylor polynomial of degree 13, Horner
        p = b.fma(p, r, _c(1.0 / math.factorial(j)))
    scale = b.bitcast(b.shl(b.add(ki, _ci(1023)), _ci(52)), _F64)
    return b.fmul(p, scale)


exp_ = _intrinsic_f64(_emit_exp)

_MANTISSA = 0xFFFFFFFFFFFFF
_ONE_BITS = 1023 << 52


def _emit_log(b, y):
    """log y for positive normal y (see the module docstring)."""
    bits = b.bitcast(y, _I64)
    e = b.sub(b.ashr(bits, _ci(52)), _ci(1023))
    m = b.bitcast(b.or_(b.and_(bits, _ci(_MANTISSA)), _ci(_ONE_BITS)), _F64)  # in [1, 2)
    big = b.fcmp_ordered(">", m, _c(math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, _c(0.5)), m)
    ef = b.sitofp(b.select(big, b.add(e, _ci(1)), e), _F64)
    s = b.fdiv(b.fsub(m, _c(1.0)), b.fadd(m, _c(1.0)))
    s2 = b.fmul(s, s)
    p = _c(1.0 / 21.0)
    for k in range(19, 1, -2):  # 1/3 + s^2/5 + ... + s^18/21
        p = b.fma(p, s2, _c(1.0 / k))
    # log m = 2 artanh s = 2s + 2s s^2 p(s^2), the leading 2s added last
    two_s = b.fmul(s, _c(2.0))
    q = b.fmul(b.fmul(two_s, s2), p)
    low = b.fadd(b.fma(ef, _c(_LN2_LO), q), two_s)
    return b.fma(ef, _c(_LN2_HI), low)


log_ = _intrinsic_f64(_emit_log)

_K = 3.75
#: Chebyshev coefficients c_0 .. c_24 of (1 + 2x) erfcx(x) in t = (x - K)/(x + K)
#: (``scripts/erfcx_chebyshev.py``)
_ERFCX_CHEB = (
    1.1775789345674017,
    -0.004590054580646478,
    -0.08424913336651792,
    0.05920993999819189,
    -0.026658668435305753,
    0.009074997670705265,
    -0.002413163540417608,
    0.0004907758365258086,
    -6.916973302501207e-05,
    4.13902798607301e-06,
    7.74038306619849e-07,
    -2.1886401049234397e-07,
    1.076499946567091e-08,
    4.521959811218287e-09,
    -7.754400208831351e-10,
    -6.318088340886684e-11,
    2.86879501093067e-11,
    1.9455868545777347e-13,
    -9.65469674843344e-13,
    3.25254814814874e-14,
    3.3478119482868056e-14,
    -1.864562880419313e-15,
    -1.2507950530688648e-15,
    7.418235256624044e-17,
    5.068148904796111e-17,
)


def _emit_erfcx_nonneg(b, x):
    """exp(x^2) erfc(x) for 0 <= x < 1e150 (see the module docstring)."""
    c = _ERFCX_CHEB
    t = b.fdiv(b.fsub(x, _c(_K)), b.fadd(x, _c(_K)))
    t2 = b.fmul(t, _c(2.0))
    # Clenshaw: b_k = c_k + 2t b_{k+1} - b_{k+2}; the sum is c_0 + t b_1 - b_2
    b2 = _c(c[-1])
    b1 = b.fma(t2, b2, _c(c[-2]))
    for k in range(len(c) - 3, 0, -1):
        b2, b1 = b1, b.fma(t2, b1, b.fsub(_c(c[k]), b2))
    total = b.fma(t, b1, b.fsub(_c(c[0]), b2))
    return b.fdiv(total, b.fma(_c(2.0), x, _c(1.0)))


erfcx_nonneg = _intrinsic_f64(_emit_erfcx_nonneg)
