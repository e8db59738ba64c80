r"""Numba kernels as XLA custom calls on CPU: JAX runs the same compiled kernel as PyTensor's
Numba backend, inside its own compiled computation.

Why.  XLA's CPU runtime splits every elementwise loop over a few thousand elements across the
cores and pays a handoff per loop (``benchmarks/results/xla_loop_overhead.md``), and a
likelihood written in ``jax.numpy`` is a dozen such loops: the README model's value and
gradient cost 313 µs per evaluation inside a ``lax.while_loop`` (as in a NUTS trajectory)
against 46 µs with the Numba kernel called from XLA (one loop, one thread; naive model 13 µs;
``benchmarks/results/jax_per_gradient.md``).  ``jax.pure_callback`` cannot close the gap: it
re-enters Python and cost ~180 µs per call here even for an empty function.  A custom call
costs little beyond the kernel.

How.  A handler of XLA's typed FFI (``XLA_FFI_Error* handler(XLA_FFI_CallFrame*)``, the C API
of ``jaxlib/include/xla/ffi/api/c_api.h``, API version 0.x) is a Numba ``cfunc`` taking the
call frame's address and returning 0 (success).  The functions here read the frame: the
address of argument / result buffer ``i`` and its length (rank 0 or 1, float64), and answer
XLA's metadata query (the frame carries a metadata extension when XLA asks which FFI version
the handler was built for; we answer 0.1, the first version of the typed API, so any runtime
of that major version accepts it).  Offsets are those of the C structs on a 64-bit platform:

* ``XLA_FFI_CallFrame``: ``struct_size`` 0, ``extension_start`` 8, ``api`` 16, ``ctx`` 24,
  ``stage`` 32, ``args`` 40 (``XLA_FFI_Args``: size 56, types 64, args 72), ``rets`` 80
  (``XLA_FFI_Rets``: size 96, types 104, rets 112).
* ``XLA_FFI_Buffer``: ``dtype`` 16, ``data`` 24, ``rank`` 32, ``dims`` 40.
* ``XLA_FFI_InternalExtension``: ``type`` 8; ``XLA_FFI_Metadata_Extension``: ``metadata`` 24;
  ``XLA_FFI_Metadata``: ``api_version`` (major 24, minor 28), ``traits`` 32,
  ``state_type_id`` 40.

A handler checks the argument and result counts and that every buffer is float64 of rank
≤ 1; it writes NaN to the results it can reach otherwise (an error would need a call back
into XLA's API).  :func:`register_target` additionally runs each handler once per process against
the Numba kernel (a self-test) before JAX code is built on it, and the JAX functions fall back
to their ``jax.numpy`` kernels when that fails and on other platforms than the CPU (GPU, TPU:
chosen by ``lax.platform_dependent`` when JAX has an accelerator).  XLA calls a handler registered this way at its execute stage
only, from any of its threads: the kernels keep no state.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_I64 = ir.IntType(64)
_I32 = ir.IntType(32)

#: ``XLA_FFI_DataType`` of float64, ``XLA_FFI_ArgType`` / ``XLA_FFI_RetType`` of a buffer,
#: ``XLA_FFI_Extension_Metadata``
F64 = 12
BUFFER = 1
METADATA = 1


def _load(nb_type, ll_type):
    """An intrinsic reading a ``nb_type`` at an address."""

    @intrinsic
    def load(typingctx, addr):
        def codegen(context, builder, signature, args):
            return builder.load(builder.inttoptr(args[0], ll_type.as_pointer()))

        return nb_type(types.intp), codegen

    return load


def _store(nb_type, ll_type):
    """An intrinsic writing a ``nb_type`` at an address."""

    @intrinsic
    def store(typingctx, addr, value):
        def codegen(context, builder, signature, args):
            builder.store(args[1], builder.inttoptr(args[0], ll_type.as_pointer()))
            return context.get_dummy_value()

        return types.void(types.intp, nb_type), codegen

    return store


_i64 = _load(types.int64, _I64)
_i32 = _load(types.int32, _I32)
_set_i64 = _store(types.int64, _I64)
_set_i32 = _store(types.int32, _I32)
_set_f64 = _store(types.float64, ir.DoubleType())


@intrinsic
def buffer_data(typingctx, frame, table, i):
    """``double*`` data of buffer ``i`` of the frame's argument (``table`` 72) or result
    (112) table."""
    sig = types.CPointer(types.float64)(types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        buf = _emit_entry(builder, *args)
        addr = builder.load(builder.inttoptr(builder.add(buf, _I64(24)), _I64.as_pointer()))
        return builder.inttoptr(addr, ir.DoubleType().as_pointer())

    return sig, codegen


@intrinsic
def buffer_length(typingctx, frame, table, i):
    """Length of buffer ``i`` (rank 0: 1, rank 1: its dimension) of a table as above."""
    sig = types.intp(types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        buf = _emit_entry(builder, *args)
        rank = builder.load(builder.inttoptr(builder.add(buf, _I64(32)), _I64.as_pointer()))
        dims = builder.load(builder.inttoptr(builder.add(buf, _I64(40)), _I64.as_pointer()))
        # rank 0 reads no dimension (its dims pointer may be null)
        is_vec = builder.icmp_signed("==", rank, _I64(1))
        safe = builder.select(is_vec, dims, builder.add(buf, _I64(32)))
        n = builder.load(builder.inttoptr(safe, _I64.as_pointer()))
        return builder.select(is_vec, n, _I64(1))

    return sig, codegen


def _emit_entry(builder, frame, table, i):
    ptr_table = builder.load(builder.inttoptr(builder.add(frame, table), _I64.as_pointer()))
    slot = builder.add(ptr_table, builder.mul(i, _I64(8)))
    return builder.load(builder.inttoptr(slot, _I64.as_pointer()))


ARGS = 72
RETS = 112


@njit(cache=True)
def serve(frame, n_args, n_rets):
    """What a handler does before its work: answer XLA's metadata query, and check that
    ``frame`` carries ``n_args`` arguments and ``n_rets`` results, all float64 buffers of rank
    <= 1 (else NaN to every float64 result).  True: the handler runs its kernel."""
    ext = _i64(frame + 8)
    if ext != 0 and _i32(ext + 8) == METADATA:
        meta = _i64(ext + 24)
        _set_i64(meta + 8, 24)  # XLA_FFI_Api_Version.struct_size
        _set_i64(meta + 16, 0)  # .extension_start
        _set_i32(meta + 24, 0)  # major
        _set_i32(meta + 28, 1)  # minor
        _set_i32(meta + 32, 0)  # traits
        _set_i64(meta + 40, 0)  # state_type_id: XLA_FFI_UNKNOWN_TYPE_ID
        return False
    n_a = _i64(frame + 56)
    n_r = _i64(frame + 96)
    ok = n_a == n_args and n_r == n_rets
    # arguments then results: (types table, buffer table) at (64, 72) and (104, 112)
    for k in range(n_a + n_r):
        off = 0 if k < n_a else 40
        i = k if k < n_a else k - n_a
        buf = _i64(_i64(frame + 72 + off) + 8 * i)
        is_f64 = _i32(_i64(frame + 64 + off) + 4 * i) == BUFFER and _i32(buf + 16) == F64
        ok = ok and is_f64 and _i64(buf + 32) <= 1
    if not ok:
        for i in range(n_r):
            buf = _i64(_i64(frame + RETS) + 8 * i)
            if _i32(_i64(frame + 104) + 4 * i) == BUFFER and _i32(buf + 16) == F64:
                data = _i64(buf + 24)
                size = 1
                for d in range(_i64(buf + 32)):
                    size *= _i64(_i64(buf + 40) + 8 * d)
                for j in range(size):
                    _set_f64(data + 8 * j, np.nan)
    return ok


_TARGETS: dict[str, str | None] = {}


def register_target(name: str, load_handler, self_test) -> str | None:
    """Register the handler at address ``load_handler()`` (a Numba ``cfunc``'s) under ``name`` for XLA's
    CPU platform, once per process, and return ``name`` if ``self_test(name)`` then holds
    (the handler's results through ``jax.ffi.ffi_call`` equal the Numba kernel's), else
    ``None`` with a warning (the caller uses its ``jax.numpy`` kernel: the same numbers to
    ~1e-13, slower on CPU)."""
    if name not in _TARGETS:
        _TARGETS[name] = None
        try:
            import jax

            handler = load_handler()
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(handler), platform="cpu")
            problem = None if self_test(name) else "its self-test failed"
        except Exception as exc:  # any failure means: use the jax.numpy kernel
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None:
            _TARGETS[name] = name
        else:
            import warnings

            warnings.warn(
                f"XLA custom call {name!r} unavailable ({problem}); JAX runs the jax.numpy "
                "formulas instead (same results, slower on CPU)",
                UserWarning,
                stacklevel=2,
            )
    return _TARGETS[name]


def run_on_cpu(fn, *args):
    """``fn(*args)`` compiled for and run on the CPU now (also when called while JAX traces
    another function: a compiled executable runs eagerly)."""
    import jax

    cpu = jax.devices("cpu")[0]
    args = [jax.device_put(np.asarray(a), cpu) for a in args]
    return jax.jit(fn).lower(*args).compile()(*args)
