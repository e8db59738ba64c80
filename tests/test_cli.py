"""Command-line interface: demo, fit, and clear errors for bad input."""

import subprocess
import sys

import numpy as np
import pytest

import pymc_dpnoise as pmd
from pymc_dpnoise.cli import main


@pytest.fixture(scope="module")
def reports_csv(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, 400), -5.0, 5.0, 1.0, rng)
    with_header = d / "with_header.csv"
    with_header.write_text("id,report,eps\n" + "\n".join(f"{i},{v},1.0" for i, v in enumerate(z)))
    no_header = d / "no_header.csv"
    no_header.write_text("\n".join(map(str, z)))
    ze = pmd.mechanisms.perturb_clipped_exponential(rng.exponential(1.5, 400), 5.0, 1.0, rng)
    exp_csv = d / "exp.csv"
    exp_csv.write_text("\n".join(map(str, ze)))
    return d, with_header, no_header, exp_csv


FAST = ["--draws", "100", "--tune", "100", "--quiet", "--seed", "1"]


def test_module_help_runs_as_subprocess():
    out = subprocess.run(
        [sys.executable, "-m", "pymc_dpnoise", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert "demo" in out.stdout and "fit" in out.stdout


def test_demo_small(tmp_path, capsys):
    png = tmp_path / "demo.png"
    rc = main(["demo", "--n", "300", "--draws", "100", "--tune", "100", "--out", str(png)])
    out = capsys.readouterr().out
    assert rc == 0
    assert png.stat().st_size > 1000
    assert "noise-aware" in out and "naive" in out


def test_fit_clipped_normal_with_header_and_save(reports_csv, tmp_path, capsys):
    _, with_header, _, _ = reports_csv
    save = tmp_path / "post.csv"
    rc = main(
        [
            "fit",
            "clipped-normal",
            str(with_header),
            "--column",
            "report",
            "--lower",
            "-5",
            "--upper",
            "5",
            "--epsilon",
            "1",
            "--save",
            str(save),
            *FAST,
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "mu" in out and "sigma" in out
    header = save.read_text().splitlines()[0]
    assert "mu" in header and "sigma" in header


def test_fit_per_report_epsilon_and_no_header(reports_csv, capsys):
    _, with_header, no_header, exp_csv = reports_csv
    assert (
        main(
            [
                "fit",
                "clipped-normal",
                str(with_header),
                "--column",
                "report",
                "--epsilon-column",
                "eps",
                "--lower",
                "-5",
                "--upper",
                "5",
                *FAST,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "fit",
                "clipped-normal",
                str(no_header),
                "--lower",
                "-5",
                "--upper",
                "5",
                "--epsilon",
                "1",
                *FAST,
            ]
        )
        == 0
    )
    assert (
        main(["fit", "clipped-exponential", str(exp_csv), "--upper", "5", "--epsilon", "1", *FAST])
        == 0
    )
    assert "lam" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["fit", "clipped-normal", "MISSING", "--lower", "-5", "--upper", "5", "--epsilon", "1"],
            "no such file",
        ),
        (
            ["fit", "clipped-normal", "BAD", "--lower", "-5", "--upper", "5", "--epsilon", "1"],
            "non-numeric",
        ),
        (
            ["fit", "clipped-normal", "NAN", "--lower", "-5", "--upper", "5", "--epsilon", "1"],
            "NaN",
        ),
        (
            ["fit", "clipped-normal", "EMPTY", "--lower", "-5", "--upper", "5", "--epsilon", "1"],
            "no reports",
        ),
        (
            ["fit", "clipped-normal", "OK", "--lower", "5", "--upper", "5", "--epsilon", "1"],
            "--lower",
        ),
        (
            ["fit", "clipped-normal", "OK", "--lower", "-5", "--upper", "5", "--epsilon", "0"],
            "--epsilon",
        ),
        (
            ["fit", "clipped-normal", "OK", "--lower", "-5", "--upper", "5", "--epsilon", "-2"],
            "--epsilon",
        ),
        (["fit", "clipped-exponential", "OK", "--upper", "0", "--epsilon", "1"], "--upper"),
        (
            [
                "fit",
                "clipped-normal",
                "OK",
                "--column",
                "nope",
                "--lower",
                "-5",
                "--upper",
                "5",
                "--epsilon",
                "1",
            ],
            "nope",
        ),
    ],
)
def test_bad_input_exit_code_2_and_names_problem(tmp_path, capsys, args, message):
    files = {
        "MISSING": tmp_path / "missing.csv",
        "BAD": tmp_path / "bad.csv",
        "NAN": tmp_path / "nan.csv",
        "EMPTY": tmp_path / "empty.csv",
        "OK": tmp_path / "ok.csv",
    }
    files["BAD"].write_text("1.0\nabc\n2.0\n")
    files["NAN"].write_text("1.0\nnan\n2.0\n")
    files["EMPTY"].write_text("")
    files["OK"].write_text("1.0\n2.0\n-3.0\n")
    argv = [str(files.get(a, a)) if a in files else a for a in args]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert message.lower() in err.lower(), err
    assert "Traceback" not in err
