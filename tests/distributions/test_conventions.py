"""Conventions every distribution follows: the dtype rule, integer and pandas inputs, parameter
names (``chol=`` beside ``cov=``, the refused ``epsilon=`` of PerturbedLogReg), and readable
``print(model)``.

The dtype rule is PyMC's own for continuous reports (checked here against ``pm.Normal``): the
draws and the log density have dtype ``floatX``.  Integer-valued reports (bit vectors, k-RR
items) are float64 holding integers whatever floatX, with a float64 log density: unlike
``pm.Binomial``'s int64 (checked below), so that ``pm.logp`` sees a NumPy value as given
rather than cast to an integer (issue 22).  Internally everything is float64, so the float32
log density equals the float64 one to float32 rounding.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytest

import pymc_dpnoise as pmd

TH = np.array([0.5, 0.3, 0.2])

# name: (factory, report kind)
CLASSES = {
    "LaplacePerturbedClippedNormal": (
        lambda: pmd.LaplacePerturbedClippedNormal.dist(0, 1, -1, 1, 1),  # Python ints
        "continuous",
    ),
    "LaplacePerturbedClippedExponential": (
        lambda: pmd.LaplacePerturbedClippedExponential.dist(1, 2, 1),
        "continuous",
    ),
    "LaplacePerturbedClippedNormalSummary": (
        lambda: pmd.LaplacePerturbedClippedNormalSummary.dist(0.0, 1.0, -1.0, 1.0, 1.0, 50, 4),
        "continuous",
    ),
    "LaplacePerturbedClippedExponentialSummary": (
        lambda: pmd.LaplacePerturbedClippedExponentialSummary.dist(1.0, 2.0, 1.0, 50, 4),
        "continuous",
    ),
    "LaplaceNoisyBinomial": (lambda: pmd.LaplaceNoisyBinomial.dist(10, 0.3, 1), "continuous"),
    "LaplaceNoisyBinomial-clamped": (
        lambda: pmd.LaplaceNoisyBinomial.dist(10, 0.3, 1, clamp=True),
        "continuous",
    ),
    "LaplaceNoisyPoisson": (lambda: pmd.LaplaceNoisyPoisson.dist(3, 1, 1), "continuous"),
    "OUELikelihood": (lambda: pmd.OUELikelihood.dist(p=TH, epsilon=1), "integer"),
    "SUELikelihood": (lambda: pmd.SUELikelihood.dist(p=TH, epsilon=1), "integer"),
    "UnaryEncodingLikelihood": (
        lambda: pmd.UnaryEncodingLikelihood.dist(p=TH, keep_prob=0.6, flip_prob=0.3),
        "integer",
    ),
    "KRRLikelihood": (lambda: pmd.KRRLikelihood.dist(p=TH, epsilon=1), "integer"),
    "PerturbedLinReg": (
        lambda: pmd.PerturbedLinReg.dist(
            theta=np.ones(2), sigma=1, cov=np.eye(2), sigma_x=1, sigma_y=1
        ),
        "continuous",
    ),
    "PerturbedLogReg": (
        lambda: pmd.PerturbedLogReg.dist(theta=np.ones(2), cov=np.eye(2), sigma_x=1, epsilon_y=1),
        "continuous",
    ),
    "SSNormalApprox": (
        lambda: pmd.SSNormalApprox.dist(np.zeros(2), np.eye(2), 10, np.eye(5), "logistic"),
        "continuous",
    ),
}


def test_the_rule_is_pymcs():
    with pytensor.config.change_flags(floatX="float32"):
        normal, binomial = pm.Normal.dist(0.0, 1.0), pm.Binomial.dist(10, 0.3)
        assert pm.draw(normal).dtype == "float32" and pm.logp(normal, 0.5).dtype == "float32"
        assert pm.draw(binomial).dtype == "int64" and pm.logp(binomial, 3).dtype == "float64"


@pytest.mark.parametrize("name", list(CLASSES))
@pytest.mark.heavy
def test_dtype_rule_under_float32(name):
    factory, kind = CLASSES[name]
    draw64 = pm.draw(factory(), random_seed=1)
    lp64 = pm.logp(factory(), draw64).eval()
    with pytensor.config.change_flags(floatX="float32"):
        rv = factory()
        draw = pm.draw(rv, random_seed=1)
        logp = pm.logp(rv, draw)
        if kind == "continuous":
            assert rv.dtype == "float32" and draw.dtype == np.float32, name
            assert logp.dtype == "float32", name
        else:  # integer values in float64 whatever floatX (issue 22: pm.logp sees the value)
            assert rv.dtype == "float64" and draw.dtype == np.float64, name
            assert np.all(draw == np.round(draw)), name
            assert logp.dtype == "float64", name
        lp32 = logp.eval()
    assert np.all(np.isfinite(lp32))
    if kind == "integer":  # the same reports: the same log density exactly
        np.testing.assert_array_equal(draw, draw64)
        np.testing.assert_array_equal(lp32, lp64)
    else:  # the float32 draw is the float64 draw rounded, its logp the float64 logp rounded
        np.testing.assert_allclose(draw, draw64, rtol=1e-6, atol=1e-6)
        lp64_at = pm.logp(factory(), draw.astype("float64")).eval()
        np.testing.assert_allclose(lp32, lp64_at, rtol=3e-7, atol=1e-6)


@pytest.mark.parametrize("kind", ["Series", "DataFrame"])
def test_pandas_and_integer_inputs_work_as_numpy(kind):
    """pandas observed reports and parameters, and integer arrays, give the numpy model's logp."""
    rng = np.random.default_rng(0)
    if kind == "Series":
        z = pmd.mechanisms.perturb_clipped(rng.normal(0.0, 1.0, 20), -1.0, 1.0, 1.0, rng)
        eps = np.full(20, 1.0)

        def build(obs, e):
            with pm.Model() as m:
                mu = pm.Normal("mu", 0.0, 1.0)
                pmd.LaplacePerturbedClippedNormal("z", mu, 1.0, -1, 1, e, observed=obs)
            return m

        m_np, m_pd = build(z, eps), build(pd.Series(z), pd.Series(eps))
    else:
        reports = pmd.mechanisms.oue_perturb(rng.choice(3, 30), 3, 1.0, rng)

        def build(obs):
            with pm.Model() as m:
                theta = pm.Dirichlet("theta", np.ones(3))
                pmd.OUELikelihood("z", p=theta, epsilon=1, observed=obs)
            return m

        m_np = build(reports.astype("int64"))  # integer array
        m_pd = build(pd.DataFrame(reports, columns=list("abc")))
    point = m_np.initial_point()
    assert m_pd.compile_logp()(point) == pytest.approx(m_np.compile_logp()(point), rel=1e-12)


def test_non_numeric_pandas_input_is_refused():
    with pytest.raises((ValueError, TypeError)):
        with pm.Model():
            pmd.LaplaceNoisyPoisson(
                "y", mu=3.0, epsilon=1.0, sensitivity=1.0, observed=pd.Series(["a", "b"])
            )


# --------------------------------------------------------------------------------------------
# Parameter names
# --------------------------------------------------------------------------------------------

L = np.array([[1.0, 0.0], [0.5, 0.8]])


@pytest.mark.parametrize(
    "make",
    [
        lambda **c: pmd.PerturbedLinReg.dist(
            theta=[1.0, -0.5], sigma=0.3, sigma_x=0.5, sigma_y=0.5, **c
        ),
        lambda **c: pmd.PerturbedLogReg.dist(theta=[1.0, -0.5], sigma_x=0.5, epsilon_y=1.0, **c),
        lambda **c: pmd.SSNormalApprox.dist(
            np.array([0.3, -0.2]), n=100.0, noise_cov=np.eye(5), glm="logistic", **c
        ),
    ],
    ids=["PerturbedLinReg", "PerturbedLogReg", "SSNormalApprox"],
)
def test_chol_is_accepted_like_mvnormal(make):
    value = pm.draw(make(cov=L @ L.T), random_seed=2)
    by_cov = pm.logp(make(cov=L @ L.T), value).eval()
    # two Cholesky paths of the same 3x3 (cond ~ 10): m^2 u cond ~ 1e-14 relative
    assert pm.logp(make(chol=L), value).eval() == pytest.approx(by_cov, rel=1e-12)
    with pytest.raises(ValueError, match="exactly one of `cov`"):
        make(cov=L @ L.T, chol=L)
    with pytest.raises(ValueError, match="exactly one of `cov`"):
        make()
    with pytest.raises(ValueError, match="chol: must be lower triangular"):
        make(chol=L.T)


def test_logreg_refuses_a_total_epsilon_naming_epsilon_y():
    with pytest.raises(TypeError, match="epsilon_y"):
        pmd.PerturbedLogReg.dist(theta=[1.0], cov=np.eye(1), sigma_x=0.5, epsilon=1.0)


def test_print_model_names_the_regression_parameters():
    with pm.Model() as model:
        theta_g = pm.Normal("theta_g", 0.0, 1.0, shape=2)
        sx = pm.HalfNormal("sx", 1.0)
        pmd.PerturbedLinReg(
            "z", theta=theta_g, sigma=1.0, cov=np.eye(2), sigma_x=0.5, sigma_y=0.5,
            observed=np.zeros((3, 3)),
        )  # fmt: skip
        pmd.PerturbedLogReg(
            "w", theta=theta_g, cov=np.eye(2), sigma_x=sx, epsilon_y=1.0, observed=np.zeros((3, 3))
        )
    text = model.str_repr()
    assert "f(theta_g)" not in text, text
    assert "PerturbedLinReg(theta_g, 1, <constant>, <constant>, 0.5)" in text
    assert "PerturbedLogReg(theta_g, <constant>, f(sx), 1)" in text


def test_every_subpackage_in_the_docstring_is_an_attribute():
    """The package docstring's "Subpackages" list, SUBPACKAGES, __all__ and the attributes
    agree (issue 23: ``pmd.math`` used to raise AttributeError)."""
    import os
    import pathlib
    import re
    import subprocess
    import sys

    import pymc_dpnoise as pmd

    doc = pmd.__doc__.split("Subpackages\n-----------\n", 1)[1]
    listed = re.findall(r"^([a-z_]+)$", doc, flags=re.M)
    assert tuple(listed) == pmd.SUBPACKAGES
    # lazily: a bare import loads none of them (nor NumPy / PyMC), so --help stays fast
    code = (
        "import sys, pymc_dpnoise as p; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pymc', 'pytensor'}), "
        "sorted(m for m in sys.modules if m.startswith('pymc_dpnoise.')), "
        "set(p.SUBPACKAGES) <= set(dir(p)))"
    )
    root = str(pathlib.Path(pmd.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["[]", "[]", "True"], out
    for name in listed:
        assert name in pmd.__all__
        assert name in dir(pmd)
        assert getattr(pmd, name).__name__ == f"pymc_dpnoise.{name}"
