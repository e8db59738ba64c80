"""The package's JAX implementations are registered lazily (pymc_dpnoise.math._jax_dispatch).

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
from pymc_dpnoise.math.linalg import cholesky_inverse
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


def test_imports_leave_jax_x64_as_the_user_set_it():
    """``import pymc_dpnoise`` and importing every ``*_jax`` module of the package leave
    ``jax.config.jax_enable_x64`` as the user set it (off here: the modules used to turn it
    on), and a JAX implementation built with it off raises an error that says so instead of
    computing float64 formulas in float32."""
    out = _run(
        """
        import importlib, pathlib
        import jax
        jax.config.update("jax_enable_x64", False)
        import numpy as np
        import pymc_dpnoise
        root = pathlib.Path(pymc_dpnoise.__file__).parent
        mods = sorted(
            ".".join(p.relative_to(root.parent).with_suffix("").parts)
            for p in root.rglob("*_jax.py")
        )
        for m in mods:
            importlib.import_module(m)
        print(len(mods), jax.config.jax_enable_x64)
        from pymc_dpnoise.math._clipped_normal_jax import kernel
        try:
            kernel(np.zeros(3), np.array([-1.0]), np.array([1.0]), np.array([1.0]), grad=True)
        except RuntimeError as exc:
            print("raised:", exc)
        """
    )
    first, second = out.strip().splitlines()
    n_modules, x64 = first.split()
    assert int(n_modules) >= 5 and x64 == "False", first
    assert second.startswith("raised:") and "jax_enable_x64" in second, second


@pytest.mark.backend
def test_numpyro_fit_adds_no_change_to_jax_x64():
    """A numpyro fit of the README model (fewer reports, short chains) leaves
    ``jax.config.jax_enable_x64`` as it was before the fit.

    PyTensor changes it itself: importing its JAX backend (``pytensor.link.jax.dispatch``,
    which ``pm.sample(nuts_sampler="numpyro")`` imports) sets it to ``floatX == "float64"``.
    So the fit starts after that import, and the check is that the package adds no change.
    A user who turns 64-bit mode off after that import gets the package's error, not float32
    numbers."""
    out = _run(
        """
        import jax
        import numpy as np
        import pymc as pm
        import pytensor.link.jax.dispatch  # PyTensor sets jax_enable_x64 here
        import pymc_dpnoise as pmd

        rng = np.random.default_rng(0)
        x = rng.normal(1.0, 2.0, size=300)
        z = pmd.mechanisms.perturb_clipped(x, -5.0, 5.0, 1.0, rng)

        def fit():
            with pm.Model():
                mu = pm.Normal("mu", 0.0, 5.0)
                sigma = pm.Gamma("sigma", 2.0, 1.0)
                pmd.LaplacePerturbedClippedNormal(
                    "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=z
                )
                return pm.sample(
                    draws=50, tune=50, chains=1, nuts_sampler="numpyro", progressbar=False,
                    random_seed=1, compute_convergence_checks=False,
                )

        before = jax.config.jax_enable_x64
        idata = fit()
        print(before, jax.config.jax_enable_x64, float(idata.posterior["mu"].mean()))
        jax.config.update("jax_enable_x64", False)
        try:
            fit()
        except RuntimeError as exc:
            print("raised:", exc)
        """
    )
    first, second = out.strip().splitlines()[-2:]
    before, after, mu = first.split()
    assert before == after == "True", first
    assert -1.0 < float(mu) < 3.0, first
    assert second.startswith("raised:") and "jax_enable_x64" in second, second
