"""The compile mode of the default test run (tests/README.md, "Compile mode")."""

from pytensor.compile.mode import Mode
from pytensor.link.vm import VMLinker

#: PyTensor's full ``fast_run`` rewrites (stabilisation and specialisation included, so every
#: graph-level failure and every rewritten numerical form is what users get), executed by the
#: Python VM with the ops' NumPy/SciPy ``perform`` methods: no Numba or C code generation, so
#: a graph compiles in a fraction of a second instead of 3-8 CPU-seconds.  Fusion and inplace
#: rewrites only change how the backends generate code; they are left out.  Tests marked
#: ``backend`` (and ``slow``) compile in PyTensor's default mode and check that Numba, C and
#: JAX agree with this one.
TEST_MODE = Mode(linker=VMLinker(c_thunks=False, use_cloop=False), optimizer="fast_run").excluding(
    "fusion", "inplace"
)
