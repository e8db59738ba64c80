"""The kernels compiled when the package is built (``pymc_dpnoise/math/_aot.py``).

Checked: that this installation uses them (the build hook ran, with the Numba that runs
here); that they give the just-in-time kernel's numbers to the bit (signed zeros included) on
grids reaching every region and both tails, with per-report and length-1 parameters and
strided inputs, through ctypes, through ``Op.perform`` and through PyTensor's Numba backend;
that the portable ``x86-64-v3`` variant, alone in a fresh process, does too; that a failure
inside the entry raises (``MemoryError``, ``ValueError`` for mismatched lengths) instead of
returning half-written outputs; that the loader refuses entries built by another Numba, from
other sources, for a CPU this one is not, whose files are damaged (in a fresh process: LLVM
would abort it), that call a symbol this process lacks, or that fail their load-time check;
and that where the entries are not used the just-in-time kernel runs on every path (perform,
Numba backend, XLA handler) with the same numbers.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pymc_dpnoise.math import _aot
from pymc_dpnoise.math._clipped_normal_kernel import _clipped_normal_kernel

DISABLED = os.environ.get("PYMC_DPNOISE_PRECOMPILED", "1") == "0"


def _grids(seed=0):
    """(z, mu, sigma, lower, upper, epsilon) cases: epsilon 1e-4..1e4, sigma from 1e-6 to 1e6
    times the clip width, reports far in both tails, on the bounds and inside."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(60):
        a = rng.uniform(-50.0, 50.0)
        b = a + math.exp(rng.uniform(math.log(1e-3), math.log(1e3)))
        eps = math.exp(rng.uniform(math.log(1e-4), math.log(1e4)))
        s = (b - a) / eps
        sg = (b - a) * math.exp(rng.uniform(math.log(1e-6), math.log(1e6)))
        mu = rng.uniform(a - 5 * sg, b + 5 * sg)
        z = np.concatenate(
            [
                rng.uniform(a - 50 * s, b + 50 * s, 300),
                [a, b, np.nextafter(a, b), np.nextafter(b, a), a - 1e6 * s, b + 1e6 * s],
                rng.uniform(a, b, 60),
            ]
        )
        one = [np.array([v]) for v in (mu, sg, a, b, eps)]
        cases.append((z, *one))
        n = z.size
        per = [
            rng.uniform(a - 3 * sg, b + 3 * sg, n),
            sg * np.exp(rng.uniform(-3, 3, n)),
            np.full(n, a),
            np.full(n, b),
            eps * np.exp(rng.uniform(-2, 2, n)),
        ]
        cases.append((z, *per))
    return cases


def _entry():
    """The loaded entry; a failure (not a skip) where this installation should have it."""
    if DISABLED:
        pytest.skip("PYMC_DPNOISE_PRECOMPILED=0")
    entry = _aot.entry_function("clipped_normal", 6, 3)
    if entry is None:
        pytest.fail(f"precompiled kernels {_aot.status()} (after editing a kernel: make kernels)")
    return entry


def assert_same_bits(got, want):
    """Equal to the bit: signed zeros told apart (``assert_array_equal`` takes -0.0 == 0.0)."""
    got, want = np.asarray(got), np.asarray(want)
    np.testing.assert_array_equal(got, want)
    assert _aot.same_bits(got, want), "equal values, different bits (signed zeros?)"


def _run(code):
    """``code`` in a fresh Python (an object LLVM cannot load aborts its process)."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(DISABLED, reason="PYMC_DPNOISE_PRECOMPILED=0")
def test_this_installation_uses_the_precompiled_kernels():
    """The build hook ran with the Numba that runs here, and the kernels' sources are the
    ones it compiled (after editing a kernel: ``make kernels``)."""
    assert _aot.status().startswith("used"), _aot.status()


def test_entry_equals_the_jit_kernel_to_the_bit():
    entry = _entry()
    for args in _grids():
        got = _aot.call_entry(entry, args, 3)
        want = _clipped_normal_kernel(*args)
        for g, w in zip(got, want, strict=True):
            assert_same_bits(g, w)


def test_entry_reads_strided_and_reversed_inputs():
    entry = _entry()
    z, *params = _grids(seed=1)[1]
    wide = [np.repeat(x, 2)[::2] for x in (z, *params)]  # stride 16
    rev = [x[::-1] for x in (z, *params)]  # negative stride
    assert all(w.strides[0] == 16 for w in wide) and rev[0].strides[0] == -8
    want = _clipped_normal_kernel(z, *params)
    for g, w in zip(_aot.call_entry(entry, wide, 3), want, strict=True):
        assert_same_bits(g, w)
    want_rev = _clipped_normal_kernel(*(np.ascontiguousarray(x) for x in rev))
    for g, w in zip(_aot.call_entry(entry, rev, 3), want_rev, strict=True):
        assert_same_bits(g, w)


def test_perform_runs_the_entry():
    """``Op.perform`` (the Python VM, the default test mode) on strided inputs."""
    _entry()
    import pytensor
    import pytensor.tensor as pt
    from compile_modes import TEST_MODE

    from pymc_dpnoise.math import _clipped_normal_op as op_module
    from pymc_dpnoise.math._clipped_normal_op import clipped_normal_laplace_grad_op as op

    def no_jit(*args):
        raise AssertionError("perform ran the just-in-time kernel")

    z, *params = _grids(seed=2)[0]
    xs = [pt.dvector(shape=(None,)), *(pt.dvector(shape=(1,)) for _ in params)]
    f = pytensor.function(xs, op(*xs), mode=TEST_MODE)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(op_module, "perform_kernel", no_jit)
        got = f(np.repeat(z, 2)[::2], *params)
    for g, w in zip(got, _clipped_normal_kernel(z, *params), strict=True):
        assert_same_bits(g, w)


@pytest.mark.backend
def test_numba_backend_calls_the_entry():
    """A graph compiled by PyTensor's Numba backend calls the entry through its symbol (the
    graph's cache key names it) and gives the kernel's numbers, contiguous or strided."""
    _entry()
    import pytensor
    import pytensor.tensor as pt

    from pymc_dpnoise.math._clipped_normal_op import (
        _numba_clipped_normal,
        clipped_normal_laplace_grad_op,
        clipped_normal_laplace_op,
    )

    z, *params = _grids(seed=3)[1]
    xs = [pt.dvector() for _ in range(6)]
    node = clipped_normal_laplace_grad_op(*xs)[0].owner
    _, variant = _numba_clipped_normal(node.op, node)
    assert variant == _aot.symbol("clipped_normal") and variant.startswith("pymc_dpnoise_")
    f = pytensor.function(xs, clipped_normal_laplace_grad_op(*xs), mode="NUMBA")
    g1 = pytensor.function([xs[0], *xs[1:]], clipped_normal_laplace_op(*xs), mode="NUMBA")
    want = _clipped_normal_kernel(z, *params)
    for g, w in zip(f(z, *params), want, strict=True):
        assert_same_bits(g, w)
    np.testing.assert_array_equal(g1(z, *params), want[0])
    strided = [np.repeat(x, 2)[::2] for x in (z, *params)]
    for g, w in zip(f(*strided), want, strict=True):
        assert_same_bits(g, w)


def test_cache_keys_differ_between_entry_and_jit_kernel(monkeypatch):
    """PyTensor caches compiled graphs by the key the op's funcify returns: a graph calling
    the entry is never loaded where the just-in-time kernel runs (it would call a symbol
    that is not defined there), nor the other way round."""
    _entry()
    pytest.importorskip("pytensor.link.numba.dispatch.basic")
    import pytensor.tensor as pt
    from pytensor.link.numba.dispatch.basic import numba_funcify_default_op_cache_key

    from pymc_dpnoise.math import _clipped_normal_op as op_module

    xs = [pt.dvector() for _ in range(6)]
    for op in (op_module.clipped_normal_laplace_op, op_module.clipped_normal_laplace_grad_op):
        funcify = numba_funcify_default_op_cache_key.dispatch(type(op))
        node = op(*xs)
        node = (node[0] if isinstance(node, list) else node).owner
        with_entry = funcify(op, node)[1]
        with monkeypatch.context() as m:
            m.setattr(op_module._aot, "numba_function", lambda name, grad: None)
            fn, jit_key = funcify(op, node)
            assert fn is (
                op_module._clipped_normal_kernel if op.grad else op_module._clipped_normal_value
            )
        # the version PyTensor adds to its key (which also holds the op's type and props)
        assert with_entry != jit_key


# ---------------------------------------------------------------------------------------------
# The loader's refusals: each edits a copy of the manifest
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def objects(tmp_path, monkeypatch):
    if not (_aot.OBJECT_DIR / "manifest.json").is_file():
        pytest.skip("precompiled kernels not built")
    copy = tmp_path / "objects"
    shutil.copytree(_aot.OBJECT_DIR, copy)
    monkeypatch.setattr(_aot, "OBJECT_DIR", copy)
    monkeypatch.delenv("PYMC_DPNOISE_PRECOMPILED", raising=False)
    path = copy / "manifest.json"
    manifest = json.loads(path.read_text())

    def load(edit=None):
        m = json.loads(json.dumps(manifest))
        if edit is not None:
            edit(m)
        path.write_text(json.dumps(m))
        return _aot._load("clipped_normal")

    return load


def test_loader_loads_an_unchanged_manifest(objects):
    assert not isinstance(objects(), str)


@pytest.mark.parametrize(
    "what",
    [
        "numba version",
        "llvmlite version",
        "sources",
        "format",
        "check values",
        "signed zero",
        "cpu",
    ],
)
def test_loader_refuses(objects, what):
    def edit(m):
        if what == "numba version":
            m["versions"]["numba"] = "0.1.0"
        elif what == "llvmlite version":
            m["versions"]["llvmlite"] = "0.1.0"
        elif what == "sources":
            m["sources"] = "0" * 64
        elif what == "format":
            m["format"] = 99
        elif what == "check values":
            m["checks"]["clipped_normal"][0]["outputs"][0][3] += 1e-13
        elif what == "signed zero":
            # flip the sign of a zero in the recorded outputs (-0.0 == 0.0 as numbers)
            zeros = [
                (c, k, i)
                for c, check in enumerate(m["checks"]["clipped_normal"])
                for k, o in enumerate(check["outputs"])
                for i, x in enumerate(o)
                if x == 0.0
            ]
            assert zeros, "no zero among the recorded check values"
            c, k, i = zeros[0]
            outs = m["checks"]["clipped_normal"][c]["outputs"]
            outs[k][i] = 0.0 if math.copysign(1.0, outs[k][i]) < 0 else -0.0
        else:
            for v in m["variants"]:
                v["cpu"] = "no-such-cpu"
                v["requires"] = ["no-such-feature"]

    assert isinstance(objects(edit), str)


def test_refusal_when_disabled(objects, monkeypatch):
    monkeypatch.setenv("PYMC_DPNOISE_PRECOMPILED", "0")
    assert isinstance(objects(), str)
    assert "PYMC_DPNOISE_PRECOMPILED=0" in _aot.status()


_SUBPROCESS = """
import json, pathlib, shutil, tempfile, numpy as np
from pymc_dpnoise.math import _aot
src = _aot.OBJECT_DIR
dst = pathlib.Path(tempfile.mkdtemp()) / "objects"
shutil.copytree(src, dst)
manifest = json.loads((dst / "manifest.json").read_text())
{edit}
(dst / "manifest.json").write_text(json.dumps(manifest))
_aot.OBJECT_DIR = dst
{body}
"""


def test_portable_variant_gives_the_same_numbers():
    """With only the x86-64-v3 variant in the manifest (in a fresh process: the two
    variants' objects define the same weak symbols, so loading both into one process would
    run the first one's helpers), it is loaded here (this CPU has its features) and equals
    the just-in-time kernel to the bit on 40 grid cases."""
    _entry()
    manifest = json.loads((_aot.OBJECT_DIR / "manifest.json").read_text())
    portable = [v for v in manifest["variants"] if v.get("requires")]
    if not portable or not set(portable[0]["requires"]) <= _aot._host_features():
        pytest.skip("no portable variant for this CPU")
    code = _SUBPROCESS.format(
        edit='manifest["variants"] = [v for v in manifest["variants"] if v.get("requires")]',
        body="""
import sys
sys.path.insert(0, TESTS_DIR)
from test_aot import _grids
from pymc_dpnoise.math._clipped_normal_kernel import _clipped_normal_kernel
print(_aot.status(), file=sys.stderr)
assert _aot.status().startswith("used: variant 'x86-64-v3'"), _aot.status()
entry = _aot.entry_function("clipped_normal", 6, 3)
for args in _grids(seed=4)[:40]:
    for g, w in zip(_aot.call_entry(entry, args, 3), _clipped_normal_kernel(*args)):
        assert _aot.same_bits(g, w)
print("ok")
""",
    )
    code = code.replace("TESTS_DIR", repr(str(Path(__file__).parent)))
    assert _run(code) == "ok"


@pytest.mark.parametrize("damage", ["truncated object", "zeroed bitcode", "missing symbol"])
def test_damaged_installation_is_refused_not_fatal(damage):
    """A truncated or overwritten file (LLVM would abort the process loading it) or an
    object calling a symbol this process lacks: refused before loading, the kernel is
    compiled at first use instead."""
    _entry()
    edit = {
        "truncated object": """
for v in manifest["variants"]:
    f = dst / v["entries"]["clipped_normal"]["object"]
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
""",
        "zeroed bitcode": """
for v in manifest["variants"]:
    f = dst / v["entries"]["clipped_normal"]["bitcode"]
    f.write_bytes(bytes(f.stat().st_size))
""",
        "missing symbol": """
for v in manifest["variants"]:
    v["entries"]["clipped_normal"]["undefined"].append("pymc_dpnoise_no_such_symbol")
""",
    }[damage]
    body = """
st = _aot.status()
assert st.startswith("not used: entry 'clipped_normal'"), st
assert _aot.address("clipped_normal") is None
print("ok")
"""
    assert _run(_SUBPROCESS.format(edit=edit, body=body)) == "ok"


def test_entry_reports_failures_instead_of_returning_garbage():
    """A C entry cannot raise: it returns a status that its callers turn into an exception.
    An allocation that fails inside the kernel (here: a strided copy of 2**50 reports,
    refused before any memory is touched) gives MemoryError, not half-written outputs; a
    parameter of another length than the reports' or 1 gives ValueError, through ctypes and
    through the Numba wrapper alike."""
    entry = _entry()
    dummy = np.zeros(4)
    p = dummy.ctypes.data
    one = [1, 8, p]
    code = entry(2**50, 2**50, 16, p, *one, *one, *one, *one, *one, p, p, p)
    assert code == _aot.FAILED
    with pytest.raises(MemoryError):
        _aot.raise_for_status(code)
    z, one_ = np.zeros(5), np.ones(1)
    with pytest.raises(ValueError, match="length"):
        _aot.call_entry(entry, [z, np.ones(3), one_, -one_, one_, one_], 3)
    run = _aot.numba_function("clipped_normal", grad=True)
    with pytest.raises(ValueError, match="length"):
        run(z, np.ones(3), one_, -one_, one_, one_)
    with pytest.raises(ValueError, match="length"):
        _clipped_normal_kernel(z, np.ones(3), one_, -one_, one_, one_)


# ---------------------------------------------------------------------------------------------
# Where the entries cannot be used: the just-in-time kernel, on every path
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def jit_only(monkeypatch):
    """This process as one where the precompiled entries cannot be used; yields the loaded
    entry (for reference values), ``None`` where there is none."""
    entry = None if DISABLED else _aot.entry_function("clipped_normal", 6, 3)
    monkeypatch.setattr(_aot, "address", lambda name: None)
    return entry


def _reference(entry, args):
    return _aot.call_entry(entry, args, 3) if entry is not None else _clipped_normal_kernel(*args)


def test_jit_fallback_perform(jit_only, monkeypatch):
    import pytensor
    import pytensor.tensor as pt
    from compile_modes import TEST_MODE

    from pymc_dpnoise.math import _clipped_normal_op as op_module

    calls = []
    real = op_module.perform_kernel

    def recording(kernel, *args):
        calls.append(kernel)
        return real(kernel, *args)

    monkeypatch.setattr(op_module, "perform_kernel", recording)
    z, *params = _grids(seed=5)[1]
    xs = [pt.dvector() for _ in range(6)]
    f = pytensor.function(xs, op_module.clipped_normal_laplace_grad_op(*xs), mode=TEST_MODE)
    for g, w in zip(f(z, *params), _reference(jit_only, (z, *params)), strict=True):
        assert_same_bits(g, w)
    assert calls == [op_module._clipped_normal_kernel]


@pytest.mark.backend
def test_jit_fallback_numba_backend(jit_only):
    """PyTensor's Numba backend compiles the kernel itself (its own cache key) and gives the
    entry's numbers."""
    import pytensor
    import pytensor.tensor as pt

    from pymc_dpnoise.math._clipped_normal_op import (
        _numba_clipped_normal,
        clipped_normal_laplace_grad_op,
    )

    xs = [pt.dvector() for _ in range(6)]
    node = clipped_normal_laplace_grad_op(*xs)[0].owner
    assert _numba_clipped_normal(node.op, node)[1] == "jit"
    f = pytensor.function(xs, clipped_normal_laplace_grad_op(*xs), mode="NUMBA")
    for args in _grids(seed=6)[:6]:
        for g, w in zip(f(*args), _reference(jit_only, args), strict=True):
            assert_same_bits(g, w)


@pytest.mark.backend
def test_jit_fallback_xla_handler(jit_only):
    """The XLA custom call with the handler Numba compiles at first use: registered, passes
    its self-test, and gives the entry's numbers."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from pymc_dpnoise.math import _clipped_normal_jax as J
    from pymc_dpnoise.math import _xla_ffi

    name = _xla_ffi.register_target(
        "pymc_dpnoise_test_jit_handler", J._load_handler, J._ffi_self_test
    )
    assert name == "pymc_dpnoise_test_jit_handler"
    for args in _grids(seed=7)[:4]:
        out = jax.ShapeDtypeStruct(args[0].shape, jnp.float64)
        got = _xla_ffi.run_on_cpu(jax.ffi.ffi_call(name, (out,) * 3), *args)
        for g, w in zip(got, _reference(jit_only, args), strict=True):
            assert_same_bits(np.asarray(g), w)


@pytest.mark.heavy
def test_build_script_writes_a_complete_set(tmp_path):
    """``_aot_build.py OUT`` (what the build hook runs) writes every variant's files and a
    manifest that loads here; an existing directory is replaced only by a complete set."""
    out = tmp_path / "objects"
    out.mkdir()
    (out / "old-file").write_text("from an earlier build")
    script = _aot.HERE / "_aot_build.py"
    subprocess.run([sys.executable, str(script), str(out)], check=True, capture_output=True)
    manifest = json.loads((out / "manifest.json").read_text())
    assert not (out / "old-file").exists()
    assert manifest["sources"] == _aot.source_hash()
    assert manifest["versions"] == _aot.versions()
    for v in manifest["variants"]:
        for e in v["entries"].values():
            assert (out / e["object"]).stat().st_size > 0
            assert (out / e["bitcode"]).stat().st_size > 0
    assert not list(tmp_path.glob(".aot-*"))  # no temporary directory left behind
