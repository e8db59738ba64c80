"""The package's JAX implementations are registered lazily (pymc_dpnoise._jax_dispatch).

Importing the distributions must not import JAX (3-14 CPU-s per fresh process for users who
never sample with a JAX backend), and the JAX implementations of the custom ops must still be
found whichever is imported first: the package or PyTensor's JAX dispatch.  Each case runs in
a fresh interpreter, since the import order is the point.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# one op of each module that registers a JAX implementation, compiled in JAX mode and
# compared with the default mode
_USE_OPS = """
import numpy as np, pytensor, pytensor.tensor as pt
from pymc_dpnoise.math import clipped_normal_laplace_logp
from pymc_dpnoise.math._linalg import cholesky_inverse
from pymc_dpnoise.math._special import log_binom_pmf

x = pt.dmatrix("x")
z = pt.dvector("z")
graphs = [
    ([x], cholesky_inverse(x), [np.linalg.cholesky(np.array([[2.0, 0.5], [0.5, 1.0]]))]),
    ([z], clipped_normal_laplace_logp(z, 0.5, 1.5, -2.0, 2.0, 1.0),
     [np.array([-30.0, -2.0, 0.1, 2.0, 40.0])]),
    ([z], log_binom_pmf(z, 40.0, 0.3), [np.array([0.0, 3.0, 17.0, 40.0])]),
]
for ins, out, vals in graphs:
    ref = pytensor.function(ins, out)(*vals)
    got = pytensor.function(ins, out, mode="JAX")(*vals)
    np.testing.assert_allclose(got, ref, rtol=1e-10)
print("ok")
"""


def _run(code: str) -> str:
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_importing_the_distributions_does_not_import_jax():
    out = _run(
        """
        import sys
        import pymc_dpnoise as pmd
        import pymc_dpnoise.distributions, pymc_dpnoise.math
        pmd.LaplacePerturbedClippedNormal, pmd.NoisyBinomial
        print(sorted(m for m in sys.modules if m == "jax" or m.startswith("jax.")))
        """
    )
    assert out.strip() == "[]"


@pytest.mark.backend
@pytest.mark.parametrize("first", ["package", "jax_dispatch"])
def test_jax_implementations_found_in_either_import_order(first):
    pre = (
        "import pymc_dpnoise.distributions\nimport pytensor.link.jax.dispatch\n"
        if first == "package"
        else "import pytensor.link.jax.dispatch\nimport pymc_dpnoise.distributions\n"
    )
    assert _run(pre + _USE_OPS).strip().endswith("ok")
