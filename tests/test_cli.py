"""The ``pymc-dpnoise`` command line: demo, fit, input checks.

Runs the CLI in-process through :func:`pymc_dpnoise.cli.main` (plus one subprocess for
``python -m pymc_dpnoise --help``).  Sampling uses tiny settings and the PyMC sampler on one
core to keep the whole file around a minute on two cores.
"""

from __future__ import annotations

import gzip
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pymc_dpnoise import mechanisms
from pymc_dpnoise.cli import InputError, main, read_reports

FAST = ["--sampler", "pymc", "--draws", "150", "--tune", "150", "--cores", "1", "--quiet"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(42)
    n = 300
    eps = rng.choice([0.5, 1.0, 2.0], size=n)
    z = mechanisms.perturb_clipped(rng.normal(1.0, 2.0, n), -5.0, 5.0, eps, rng)
    pd.DataFrame({"id": np.arange(n), "z": z, "eps": eps}).to_csv(d / "normal.csv", index=False)
    # exponential reports: one column, no header
    y = mechanisms.perturb_clipped_exponential(rng.exponential(2.0, n), 5.0, 2.0, rng)
    (d / "exp.csv").write_text("".join(f"{float(v)!r}\n" for v in y))
    (d / "good.csv").write_text("z\n0.5\n-1.5\n2.0\n")
    return d


def _write(path, text):
    path.write_text(text)
    return str(path)


# --------------------------------------------------------------------------------------------
# help / entry points
# --------------------------------------------------------------------------------------------


def test_module_help_subprocess():
    res = subprocess.run(
        [sys.executable, "-m", "pymc_dpnoise", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "demo" in res.stdout and "fit" in res.stdout
    assert "Traceback" not in res.stderr


def test_fit_help_documents_default_priors(capsys):
    assert main(["fit", "clipped-normal", "--help"]) == 0
    out = capsys.readouterr().out
    assert "sigma ~ Gamma(alpha=2, beta=2 / h)" in out
    assert "--epsilon-column" in out
    assert main(["fit", "clipped-exponential", "--help"]) == 0
    assert "lam ~ Gamma(alpha=2, beta=upper / 2)" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------------


def test_demo_tiny(tmp_path, capsys):
    out = tmp_path / "demo.png"
    rc = main(["demo", "--n", "300", "--draws", "100", "--tune", "100", "--out", str(out), *FAST])
    assert rc == 0
    text = capsys.readouterr().out
    assert out.is_file() and out.stat().st_size > 1000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "noise-aware" in text and "naive" in text
    assert "94% HDI" in text and "truth" in text
    # one row per model and parameter
    assert sum(line.startswith(("noise-aware ", "naive ")) for line in text.splitlines()) == 4


# --------------------------------------------------------------------------------------------
# fit
# --------------------------------------------------------------------------------------------


def test_fit_clipped_normal_header_epsilon_column_save_netcdf(data_dir, tmp_path, capsys):
    pytest.importorskip("h5netcdf")
    import xarray as xr

    save = tmp_path / "post.nc"
    argv = ["fit", "clipped-normal", str(data_dir / "normal.csv"), "--column", "z"]
    argv += ["--epsilon-column", "eps", "--lower", "-5", "--upper", "5", "--save", str(save)]
    assert main([*argv, *FAST]) == 0
    out = capsys.readouterr().out
    assert "Read 300 reports" in out and "column 'z'" in out
    assert "epsilon from column 'eps'" in out
    for word in ("mean", "sd", "hdi94_lb", "hdi94_ub", "r_hat", "ess_bulk", "mu", "sigma"):
        assert word in out
    tree = xr.open_datatree(save)
    assert tree["posterior"]["mu"].shape == (2, 150)
    assert set(tree["posterior"].data_vars) >= {"mu", "sigma"}


def test_fit_clipped_exponential_no_header_save_csv(data_dir, tmp_path, capsys):
    save = tmp_path / "draws.csv"
    argv = ["fit", "clipped-exponential", str(data_dir / "exp.csv"), "--upper", "5"]
    argv += ["--epsilon", "2", "--lam-prior", "2", "2", "--save", str(save), "--hdi-prob", "0.9"]
    assert main([*argv, *FAST]) == 0
    out = capsys.readouterr().out
    assert "Read 300 reports" in out and "column 0" in out
    assert "lam ~ Gamma(alpha=2, beta=2)" in out
    assert "hdi90_lb" in out
    draws = pd.read_csv(save)
    assert list(draws.columns) == ["chain", "draw", "lam"]
    assert len(draws) == 2 * 150
    assert (draws["lam"] > 0).all()
    # the true rate is 0.5; the posterior should be in the right region
    assert 0.2 < draws["lam"].mean() < 1.0


# --------------------------------------------------------------------------------------------
# reading reports (no sampling)
# --------------------------------------------------------------------------------------------


def test_read_reports_header_and_no_header(tmp_path):
    with_header = read_reports(_write(tmp_path / "a.csv", "z\n1.5\n-2\n3e-1\n"))
    assert with_header.has_header and with_header.column == "'z'"
    assert with_header.values.tolist() == [1.5, -2.0, 0.3]
    no_header = read_reports(_write(tmp_path / "b.csv", "1.5\n-2\n0.3\n\n\n"))
    assert not no_header.has_header and no_header.column == "0"
    assert no_header.values.tolist() == [1.5, -2.0, 0.3]


def test_read_reports_columns_by_name_and_index(tmp_path):
    p = _write(tmp_path / "c.csv", "id,z,eps\n0,0.5,1\n1,-0.5,2\n")
    assert read_reports(p, "z").values.tolist() == [0.5, -0.5]
    assert read_reports(p, "1").values.tolist() == [0.5, -0.5]
    r = read_reports(p, epsilon_column="eps", column="z")
    assert r.epsilon.tolist() == [1.0, 2.0] and r.epsilon_column == "'eps'"
    # default reports column skips the epsilon column
    r0 = read_reports(_write(tmp_path / "d.csv", "eps,z\n1,0.25\n2,0.75\n"), None, "eps")
    assert r0.values.tolist() == [0.25, 0.75]


def test_read_reports_forced_header_gzip_bom_sep(tmp_path):
    # numeric-looking header needs --header yes
    p = _write(tmp_path / "e.csv", "2020\n1\n2\n")
    assert read_reports(p).values.tolist() == [2020.0, 1.0, 2.0]
    assert read_reports(p, "2020", header="yes").values.tolist() == [1.0, 2.0]
    g = tmp_path / "f.csv.gz"
    with gzip.open(g, "wt") as fh:
        fh.write("\ufeffz;w\n1;2\n3;4\n")
    r = read_reports(str(g), "w", sep=";")
    assert r.values.tolist() == [2.0, 4.0]
    with pytest.raises(InputError, match="no header row"):
        read_reports(p, "z", header="no")


# --------------------------------------------------------------------------------------------
# bad input: exit code 2 and a one-line message naming the problem
# --------------------------------------------------------------------------------------------

NORMAL = ["fit", "clipped-normal"]
BOUNDS = ["--lower", "-5", "--upper", "5"]


def _bad_cases():
    return [
        ("missing-file", NORMAL + ["{d}/nope.csv", *BOUNDS, "--epsilon", "1"], "no such file"),
        ("directory", NORMAL + ["{d}", *BOUNDS, "--epsilon", "1"], "is a directory"),
        ("non-numeric", NORMAL + ["{d}/nonnum.csv", *BOUNDS, "--epsilon", "1"], "non-numeric"),
        ("nan", NORMAL + ["{d}/nan.csv", *BOUNDS, "--epsilon", "1"], "report is 'nan'"),
        ("empty-cell", NORMAL + ["{d}/emptycell.csv", *BOUNDS, "--epsilon", "1"], "empty report"),
        ("blank-line", NORMAL + ["{d}/blank.csv", *BOUNDS, "--epsilon", "1"], "blank line"),
        ("empty-file", NORMAL + ["{d}/empty.csv", *BOUNDS, "--epsilon", "1"], "file is empty"),
        ("header-only", NORMAL + ["{d}/hdr.csv", *BOUNDS, "--epsilon", "1"], "only a header"),
        (
            "eps-zero",
            NORMAL + ["{d}/good.csv", *BOUNDS, "--epsilon", "0"],
            "--epsilon: must be > 0",
        ),
        (
            "eps-neg",
            NORMAL + ["{d}/good.csv", *BOUNDS, "--epsilon", "-1"],
            "--epsilon: must be > 0",
        ),
        (
            "eps-text",
            NORMAL + ["{d}/good.csv", *BOUNDS, "--epsilon", "x"],
            "--epsilon: not a number",
        ),
        ("eps-missing", NORMAL + ["{d}/good.csv", *BOUNDS], "--epsilon --epsilon-column"),
        (
            "eps-column-bad",
            NORMAL + ["{d}/epsbad.csv", *BOUNDS, "--epsilon-column", "eps"],
            "epsilon must be > 0",
        ),
        (
            "lower>=upper",
            NORMAL + ["{d}/good.csv", "--lower", "5", "--upper", "5", "--epsilon", "1"],
            "--lower (5) must be smaller than --upper (5)",
        ),
        (
            "upper<=0",
            ["fit", "clipped-exponential", "{d}/good.csv", "--upper", "0", "--epsilon", "1"],
            "--upper must be > 0",
        ),
        (
            "unknown-column",
            NORMAL + ["{d}/good.csv", *BOUNDS, "--epsilon", "1", "--column", "y"],
            "unknown column 'y'",
        ),
        (
            "column-index-out-of-range",
            NORMAL + ["{d}/good.csv", *BOUNDS, "--epsilon", "1", "--column", "3"],
            "unknown column '3'",
        ),
        (
            "unknown-epsilon-column",
            NORMAL + ["{d}/good.csv", *BOUNDS, "--epsilon-column", "e"],
            "unknown epsilon column 'e'",
        ),
        (
            "save-dir-missing",
            NORMAL + ["{d}/good.csv", *BOUNDS, "--epsilon", "1", "--save", "{d}/no/x.csv"],
            "does not exist",
        ),
        ("unknown-model", ["fit", "clipped-poisson", "{d}/good.csv"], "invalid choice"),
        ("demo-bad-n", ["demo", "--n", "1"], "--n: must be >= 2"),
    ]


@pytest.fixture(scope="module")
def bad_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    files = {
        "good.csv": "z\n0.5\n-1.5\n2.0\n",
        "nonnum.csv": "z\n1.0\nabc\n2.0\n",
        "nan.csv": "1.0\nnan\n2.0\n",
        "emptycell.csv": "z,w\n1.0,1\n,2\n",
        "blank.csv": "1.0\n\n2.0\n",
        "empty.csv": "",
        "hdr.csv": "z\n",
        "epsbad.csv": "z,eps\n1.0,1\n2.0,0\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)
    return d


@pytest.mark.parametrize(
    ("argv", "message"), [c[1:] for c in _bad_cases()], ids=[c[0] for c in _bad_cases()]
)
def test_bad_input_exit_code_2(bad_dir, capsys, argv, message):
    argv = [a.format(d=bad_dir) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert "error:" in last
    assert message in last, last
    assert "Read " not in captured.out  # failed before any fitting
