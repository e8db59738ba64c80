"""``fit noisy-binomial`` / ``fit noisy-poisson`` with ``--threshold`` and ``--keys``: the
thresholded releases of :mod:`pymc_dpnoise.thresholds` on the command line.

The model the command builds is compared with the one the library builds from the same numbers
(the library's models are checked against brute force in tests/test_thresholds.py); the bad
inputs fail before anything is fitted, with a message naming the option or the data row.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from cli_support import _built

import pymc_dpnoise as pmd
from pymc_dpnoise import noise, thresholds
from pymc_dpnoise.cli import MODELS, InputError, build_parser, main

NATIVE = pytest.mark.backend


def _write(path, text):
    path.write_text(text)
    return path


def _observed_logp(model, point):
    return model.compile_logp(vars=model.observed_RVs, jacobian=False)(point)


def test_known_keys_read_missing_cells_as_suppressed(tmp_path):
    """Empty cells, blank lines, NA and NaN are suppressed cells; the model is known_keys on
    NoisyPoisson with the spec (the discrete Laplace: its graph compiles faster than the
    Gaussian kinds', and the wiring does not depend on the kind) (observed logp equal to the library's model to 1e-12: the same
    graph up to the order of the sum)."""
    p = _write(tmp_path / "w.csv", "views\n95\n\nNA\n120\nNaN\n101\n")
    opts = ["--noise", "discrete-laplace", "--scale", "7", "--threshold", "90"]
    data, built = _built("noisy-poisson", p, *opts)
    z = data["z"]
    assert np.isnan(z).tolist() == [False, True, True, False, True, False]
    assert z[~np.isnan(z)].tolist() == [95.0, 120.0, 101.0]
    assert data["read"].endswith(": 3 published, 3 suppressed.")
    assert built.likelihood == (
        "y ~ NoisyPoisson(mu, noise=DiscreteLaplace(scale=7.0)) published if > 90, "
        "known keys (suppressed: P(y <= 90))"
    )
    with pm.Model() as ref:
        mu = pm.Gamma("mu", 1.0, 0.01)
        dist = pmd.NoisyPoisson.dist(mu, noise=noise.DiscreteLaplace(7.0), shape=6)
        thresholds.known_keys("y", dist, 90, observed=z)
    for m in (40.0, 90.0, 150.0):
        point = {"mu_log__": np.log(m)}
        got, want = _observed_logp(built.model, point), _observed_logp(ref, point)
        # the same library graph built twice (CLI and direct): equal up to rewrite order
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_unknown_keys_and_the_laplace_budget(tmp_path):
    """--keys unknown: every row a published cell, the truncated model; --noise laplace with
    --epsilon leaves the LaplaceNoisy* path for NoisyBinomial with Laplace(1/epsilon)."""
    p = _write(tmp_path / "u.csv", "y\n31.5\n40.2\n28.9\n")
    opts = ["--n", "100", "--epsilon", "0.5", "--threshold", "25", "--keys", "unknown"]
    data, built = _built("noisy-binomial", p, *opts)
    assert data["noise"] == noise.Laplace(2.0)
    assert built.likelihood == (
        "y ~ NoisyBinomial(n=100, p, noise=Laplace(scale=2.0) from epsilon=0.5, "
        "sensitivity=1) truncated to > 25, unknown keys (published cells only)"
    )
    with pm.Model() as ref:
        pp = pm.Beta("p", 1.0, 1.0)
        dist = pmd.NoisyBinomial.dist(n=100, p=pp, noise=noise.Laplace(2.0), shape=3)
        thresholds.unknown_keys("y", dist, 25, observed=data["z"])
    for q in (0.1, 0.3, 0.6):
        point = {"p_logodds__": np.log(q / (1 - q))}
        got, want = _observed_logp(built.model, point), _observed_logp(ref, point)
        # the same library graph built twice (CLI and direct): equal up to rewrite order
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(
    ("text", "opts", "message"),
    [
        ("y\n95\n97\n", ["--keys", "known"], "--keys known describes a thresholded release"),
        ("y\n95\n97\n", ["--threshold", "90", "--lower", "0"], "--threshold with --lower"),
        (
            "y\n95\n97\n",
            ["--noise", "discrete-laplace", "--threshold", "90.5"],
            "--threshold must be a whole number",
        ),
        ("y\n95\n\n90\n", ["--threshold", "90"], "data row 3: release 90 is not above"),
        ("y\n95\n\n97\n", ["--threshold", "90", "--keys", "unknown"], "data row 2: empty cell"),
        ("y\n95\nabc\n97\n", ["--threshold", "90"], "data row 2: non-numeric value 'abc'"),
        ("y\n95\ninf\n97\n", ["--threshold", "90"], "data row 2: report is inf"),
    ],
)
def test_threshold_bad_input(tmp_path, capsys, text, opts, message):
    p = _write(tmp_path / "bad.csv", text)
    base = ["fit", "noisy-poisson", str(p), "--noise", "discrete-gaussian", "--sigma", "10"]
    if "--noise" in opts:
        base = ["fit", "noisy-poisson", str(p), "--scale", "3"]
    assert main([*base, *opts]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "error:" in err and message in err, err


def test_threshold_check_names_the_option():
    """The option check alone (before the file is read) for the binomial's --clamp."""
    args = build_parser().parse_args(
        ["fit", "noisy-binomial", "x.csv", "--n", "10", "--epsilon", "1", "--clamp"]
        + ["--threshold", "3"]
    )
    with pytest.raises(InputError, match="--threshold with --clamp is not supported"):
        MODELS["noisy-binomial"].check(args)


@NATIVE
def test_fit_thresholded_release_end_to_end(tmp_path, capsys):
    """A Wikimedia-like table fitted with nutpie: 40 countries, counts ~ Poisson(100),
    discrete Gaussian noise of sigma 10, published if > 90; the posterior mean of mu is
    within 4 posterior sd of 100 (the aware model; the suppressed-as-zero reading is ~20
    below)."""
    pytest.importorskip("nutpie")
    rng = np.random.default_rng(7)
    y = noise.DiscreteGaussian(10.0).release(rng.poisson(100.0, 40), rng).astype(float)
    lines = ["views", *[f"{v:g}" if v > 90 else "" for v in y]]
    p = _write(tmp_path / "t.csv", "\n".join(lines) + "\n")
    save = tmp_path / "draws.csv"
    argv = ["fit", "noisy-poisson", str(p), "--noise", "discrete-gaussian", "--sigma", "10"]
    argv += ["--threshold", "90", "--draws", "200", "--tune", "200", "--chains", "2"]
    argv += ["--cores", "1", "--quiet", "--save", str(save)]
    assert main(argv) == 0, capsys.readouterr().err
    import pandas as pd

    mu = pd.read_csv(save)["mu"]
    assert abs(mu.mean() - 100.0) < 4 * mu.std()
