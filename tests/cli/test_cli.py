"""The ``pymc-dpnoise`` command line: help, reading, bad input, fits, atomic output, Ctrl-C.

Most tests stop before sampling (input and option errors are found before PyMC is imported),
so they are fast.  Fits run in-process through :func:`pymc_dpnoise.cli.main` with tiny
settings and the PyMC sampler on one core; one fit per model runs by default (the compile of
each model is the cost), the full "every model x CSV/Parquet" matrix is ``slow``.  The Ctrl-C
tests run the CLI in a subprocess and signal it during sampling.
"""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_support import _built

from pymc_dpnoise import mechanisms
from pymc_dpnoise.cli import MODELS, InputError, main, read_reports
from pymc_dpnoise.cli._read import open_table
from pymc_dpnoise.cli._write import check_target, write_atomic
from pymc_dpnoise.mechanisms import sufficient as ss_mech

FAST = ["--sampler", "pymc", "--draws", "50", "--tune", "50", "--cores", "1", "--quiet"]
ROOT = Path(__file__).resolve().parents[2]


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# --------------------------------------------------------------------------------------------
# data: one small file of reports per model, as CSV and as Parquet
# --------------------------------------------------------------------------------------------


def _model_frames(rng):
    n = 300
    items = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    X = rng.normal(0.0, 0.3, (n, 2))
    y_lin = X @ [1.0, -0.5] + rng.normal(0.0, 0.3, n)
    labels = (rng.random(n) < 1 / (1 + np.exp(-(X @ [1.0, -0.5])))).astype(int)
    lin = mechanisms.perturb_linreg(X, y_lin, 4.0, 1e-5, rng)
    log = mechanisms.perturb_logreg(X, labels, 4.0, 1e-5, rng)
    pm_y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    rel = ss_mech.release_sufficient_statistics(X, pm_y, "logistic", 1.0, 1e-5, rng)
    bits = ["a", "b", "c"]
    eps = rng.choice([0.5, 1.0, 2.0], size=n)
    # central-DP releases: 20-30 data holders, each releasing once
    te = mechanisms.release_truncated_sum(rng.exponential(2.0, (30, 200)), 0.0, 8.0, 1.0, rng)
    tp = mechanisms.release_truncated_sum(
        rng.poisson(3.0, (30, 100)), 0, 10, 1.0, rng, family="poisson"
    )
    mn = mechanisms.release_multinomial_counts(
        rng.choice(3, size=(20, 300), p=[0.5, 0.3, 0.2]), 3, 1.0, rng
    )
    # its own generator: the other files stay as they were
    tn_rng = np.random.default_rng(7)
    tn = mechanisms.release_truncated_normal_sum(
        tn_rng.normal(1.0, 2.0, (20, 200)), -6.0, 8.0, 1.0, tn_rng
    )
    return {
        "clipped-normal": pd.DataFrame(
            {"z": mechanisms.perturb_clipped(rng.normal(1, 2, n), -5, 5, eps, rng), "eps": eps}
        ),
        "clipped-exponential": pd.DataFrame(
            {"z": mechanisms.perturb_clipped_exponential(rng.exponential(2.0, n), 5, 2.0, rng)}
        ),
        "oue": pd.DataFrame(mechanisms.oue_perturb(items, 3, 1.0, rng), columns=bits),
        "sue": pd.DataFrame(mechanisms.sue_perturb(items, 3, 1.0, rng), columns=bits),
        "unary-encoding": pd.DataFrame(
            mechanisms.unary_encoding_perturb(items, 3, 0.7, 0.2, rng), columns=bits
        ),
        "krr": pd.DataFrame({"y": mechanisms.krr_perturb(items, 3, 1.0, rng)}),
        "linreg": pd.DataFrame(lin.reports, columns=["x1", "x2", "y"]),
        "logreg": pd.DataFrame(log.reports, columns=["x1", "x2", "label"]),
        "ss-normal": pd.DataFrame({"s": rel.z}),
        "noisy-binomial": pd.DataFrame(
            {"y": rng.binomial(200, 0.3, 40) + rng.laplace(0.0, 2.0, 40)}
        ),
        "noisy-poisson": pd.DataFrame({"y": rng.poisson(50.0, 40) + rng.laplace(0.0, 3.0, 40)}),
        "truncated-exponential": pd.DataFrame({"y": te.value, "eps": 1.0}),
        "truncated-poisson": pd.DataFrame({"y": tp.value, "n": tp.n}),
        "truncated-normal": pd.DataFrame(
            {"sx": tn.value[:, 0], "sx2": tn.value[:, 1], "records": tn.n}
        ),
        "noisy-multinomial": pd.DataFrame(
            np.column_stack([mn.value, mn.n]), columns=[*bits, "records"]
        ),
    }


#: model -> its options (protocol parameters) for the files above
MODEL_ARGS = {
    "clipped-normal": ["--lower", "-5", "--upper", "5", "--epsilon-column", "eps"],
    "clipped-exponential": ["--upper", "5", "--epsilon", "2"],
    "oue": ["--epsilon", "1"],
    "sue": ["--epsilon", "1"],
    "unary-encoding": ["--keep-prob", "0.7", "--flip-prob", "0.2"],
    "krr": ["--k", "3", "--epsilon", "1"],
    "linreg": ["--epsilon", "4", "--delta", "1e-5"],
    "logreg": ["--sigma-x", "4.1", "--epsilon-y", "2"],
    "ss-normal": ["--glm", "logistic", "--n", "300", "--epsilon", "1", "--delta", "1e-5"],
    "noisy-binomial": ["--n", "200", "--epsilon", "0.5"],
    "noisy-poisson": ["--epsilon", "1", "--sensitivity", "3"],
    "truncated-exponential": ["--upper", "8", "--n", "200", "--epsilon-column", "eps"],
    "truncated-poisson": ["--upper", "10", "--n-column", "n", "--epsilon", "1"],
    "truncated-normal": [
        "--lower",
        "-6",
        "--upper",
        "8",
        "--n-column",
        "records",
        "--epsilon",
        "1",
    ],
    "noisy-multinomial": ["--n-column", "records", "--epsilon", "1"],
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    out = {}
    for name, frame in _model_frames(np.random.default_rng(42)).items():
        frame.to_csv(d / f"{name}.csv", index=False)
        frame.to_parquet(d / f"{name}.parquet", index=False)
        out[name] = d / name
    return out


def test_every_model_has_an_entry_and_a_test_case():
    assert set(MODELS) == set(MODEL_ARGS)
    import pymc_dpnoise

    # The *Summary classes observe a summary of the reports, not a file of reports: `fit`
    # reads reports (clipped-normal/-exponential switch to their summary for large files).
    per_report = {d for d in pymc_dpnoise._DISTRIBUTIONS if not d.endswith("Summary")}
    fitted = {spec.distribution for spec in MODELS.values()}
    fitted |= {d for spec in MODELS.values() for d in spec.also}  # by option (--noise)
    assert fitted == per_report


# --------------------------------------------------------------------------------------------
# help: fast, without PyMC
# --------------------------------------------------------------------------------------------

HEAVY = ("pymc", "pytensor", "numpy", "duckdb", "arviz")


def test_help_and_argument_errors_do_not_import_pymc():
    code = textwrap.dedent(
        """
        import contextlib, io, sys
        from pymc_dpnoise.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            codes = [main(["--help"]), main(["fit", "--help"])]
            codes += [main(["fit", m, "--help"]) for m in ("clipped-normal", "linreg", "oue")]
            codes.append(main(["fit", "clipped-normal", "x.csv", "--lower", "1", "--upper", "0",
                               "--epsilon", "1"]))
            codes.append(main(["fit", "krr", "x.csv", "--seed", "-1"]))
            codes.append(main(["fit", "noisy-binomial", "x.csv", "--n", "5", "--noise",
                               "gaussian", "--epsilon", "1"]))
        print(codes)
        print(sorted(m for m in sys.modules if m.split(".")[0] in HEAVY_NAMES))
        """
    ).replace("HEAVY_NAMES", repr(HEAVY))
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_env()
    )
    assert res.returncode == 0, res.stderr
    codes, loaded = res.stdout.strip().splitlines()
    assert codes == "[0, 0, 0, 0, 0, 2, 2, 2]"
    assert loaded == "[]"


def test_module_help_subprocess():
    res = subprocess.run(
        [sys.executable, "-m", "pymc_dpnoise", "fit", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
    )
    assert res.returncode == 0, res.stderr
    for name in MODELS:
        assert name in res.stdout


def test_fit_help_documents_default_priors(capsys):
    assert main(["fit", "clipped-normal", "--help"]) == 0
    out = capsys.readouterr().out
    assert "sigma ~ Gamma(alpha=2, beta=2 / h)" in out
    assert "--epsilon-column" in out and "--force" in out
    assert main(["fit", "linreg", "--help"]) == 0
    assert "tau_j ~ HalfNormal(1), Ω ~ LKJ(2)" in capsys.readouterr().out
    for model in ("noisy-binomial", "noisy-poisson"):
        assert main(["fit", model, "--help"]) == 0
        out = capsys.readouterr().out
        assert "{laplace,discrete-laplace,rounded-laplace,gaussian,discrete-gaussian}" in out
        assert all(f in out for f in ("--scale", "--sigma", "--rho", "--lower", "--upper"))


# --------------------------------------------------------------------------------------------
# reading (no sampling)
# --------------------------------------------------------------------------------------------


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_read_header_and_no_header(tmp_path):
    r = read_reports(_write(tmp_path / "a.csv", "z\n1.5\n-2\n3e-1\n"))
    assert r.label == "'z'" and r.values.tolist() == [1.5, -2.0, 0.3]
    r = read_reports(_write(tmp_path / "b.csv", "1.5\n-2\n0.3\n"))
    assert r.label == "0" and r.values.tolist() == [1.5, -2.0, 0.3]
    # a numeric-looking header needs --header yes
    p = _write(tmp_path / "e.csv", "2020\n1\n2\n")
    assert read_reports(p).values.tolist() == [2020.0, 1.0, 2.0]
    assert read_reports(p, "2020", header="yes").values.tolist() == [1.0, 2.0]
    with pytest.raises(InputError, match="no header row"):
        read_reports(p, "z", header="no")


def test_read_columns_gzip_bom_separator_quotes_whitespace(tmp_path):
    p = _write(tmp_path / "c.csv", 'id,"z",eps\n0, 0.5 ,1\n1,-0.5,2\n')
    assert read_reports(p, "z").values.tolist() == [0.5, -0.5]
    assert read_reports(p, "1").values.tolist() == [0.5, -0.5]
    g = tmp_path / "f.csv.gz"
    with gzip.open(g, "wt") as fh:
        fh.write("\ufeffz;w\n1;2\n3;4\n")
    assert read_reports(str(g), "w", sep=";").values.tolist() == [2.0, 4.0]
    assert read_reports(str(g), "w").values.tolist() == [2.0, 4.0]  # separator sniffed
    t = _write(tmp_path / "t.tsv", "a\tb\n1\t2\n")
    assert read_reports(t, "b", sep="\t").values.tolist() == [2.0]


def test_read_parquet_by_suffix_and_by_content(tmp_path):
    df = pd.DataFrame({"z": [0.5, -1.0], "flag": [True, False], "n": [3, 4]})
    df.to_parquet(tmp_path / "r.parquet")
    assert read_reports(str(tmp_path / "r.parquet"), "flag").values.tolist() == [1.0, 0.0]
    (tmp_path / "r.dat").write_bytes((tmp_path / "r.parquet").read_bytes())
    assert read_reports(str(tmp_path / "r.dat"), "n").values.tolist() == [3.0, 4.0]
    with pytest.raises(InputError, match="--sep applies to CSV only"):
        read_reports(str(tmp_path / "r.parquet"), sep=";")


def test_read_stdin_csv_and_gzip(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"z\n1\n2\n")))
    assert read_reports("-").values.tolist() == [1.0, 2.0]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(b"z\n5\n"))))
    assert read_reports("-").values.tolist() == [5.0]


def test_row_cap_on_files_and_stdin(tmp_path, monkeypatch):
    p = _write(tmp_path / "r.csv", "z\n1\n2\n3\n")
    assert read_reports(p, max_rows=3).values.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(InputError, match="more than 2 data rows; raise --max-rows"):
        read_reports(p, max_rows=2)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"1\n" * 1000)))
    with pytest.raises(InputError, match="more than 10 data rows"):
        read_reports("-", max_rows=10)


def test_non_regular_inputs_are_refused_or_bounded(tmp_path):
    with pytest.raises(InputError, match="is a character device"):
        read_reports("/dev/zero")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    stop = threading.Event()

    def endless_writer():  # an endless producer: only the row cap ends the read
        try:
            with open(fifo, "wb") as fh:
                while not stop.is_set():
                    fh.write(b"1.0\n" * 10_000)
        except (BrokenPipeError, OSError):
            pass

    t = threading.Thread(target=endless_writer, daemon=True)
    t.start()
    try:
        with pytest.raises(InputError, match="more than 50000 data rows"):
            read_reports(str(fifo), max_rows=50_000)
    finally:
        stop.set()
        t.join(timeout=10)


def test_pipe_without_newlines_is_bounded(monkeypatch):
    class Zeros(io.RawIOBase):  # like `cat /dev/zero |`
        def readable(self):
            return True

        def readinto(self, b):
            b[:] = bytes(len(b))
            return len(b)

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(Zeros())))
    with pytest.raises(InputError, match="a line longer than 2 MiB"):
        read_reports("-")


def test_table_reports_data_row_of_first_bad_value(tmp_path):
    p = _write(tmp_path / "b.csv", "z,w\n1,1\n2,x\n3,\n")
    with open_table(p, max_rows=100) as t:
        assert t.names == ["z", "w"] and t.n_columns == 2
        with pytest.raises(
            InputError, match=r"data row 2: non-numeric value 'x' in column 'w' \(2 bad"
        ):
            t.read([0, 1])


# --------------------------------------------------------------------------------------------
# bad input: exit code 2, one line, before any sampling
# --------------------------------------------------------------------------------------------

CN = ["fit", "clipped-normal"]
TE = ["fit", "truncated-exponential"]
MN = ["fit", "noisy-multinomial"]
NB = ["fit", "noisy-binomial"]
NP = ["fit", "noisy-poisson"]
BOUNDS = ["--lower", "-5", "--upper", "5"]
GOOD = "{d}/good.csv"
Y = ["--column", "y"]


def _bad_cases():
    e1 = ["--epsilon", "1"]
    n10 = ["--n", "10"]
    return [
        ("missing-file", [*CN, "{d}/nope.csv", *BOUNDS, *e1], "no such file"),
        ("directory", [*CN, "{d}", *BOUNDS, *e1], "is a directory"),
        ("device", [*CN, "/dev/zero", *BOUNDS, *e1], "is a character device"),
        ("non-numeric", [*CN, "{d}/nonnum.csv", *BOUNDS, *e1], "non-numeric value 'abc'"),
        ("nan", [*CN, "{d}/nan.csv", *BOUNDS, *e1], "data row 2: report is nan"),
        (
            "empty-cell",
            [*CN, "{d}/emptycell.csv", *BOUNDS, *e1, "--column", "z"],
            "data row 2: empty cell",
        ),
        ("blank-line", [*CN, "{d}/blank.csv", *BOUNDS, *e1], "data row 2: empty cell"),
        ("empty-file", [*CN, "{d}/empty.csv", *BOUNDS, *e1], "file is empty"),
        ("header-only", [*CN, "{d}/hdr.csv", *BOUNDS, *e1], "only a header"),
        ("one-report", [*CN, "{d}/one.csv", *BOUNDS, *e1], "only 1 report"),
        ("eps-zero", [*CN, GOOD, *BOUNDS, "--epsilon", "0"], "--epsilon: must be > 0"),
        ("eps-text", [*CN, GOOD, *BOUNDS, "--epsilon", "x"], "--epsilon: not a number"),
        ("eps-missing", [*CN, GOOD, *BOUNDS], "--epsilon --epsilon-column"),
        (
            "eps-column-bad",
            [*CN, "{d}/epsbad.csv", *BOUNDS, "--epsilon-column", "eps"],
            "epsilon must be finite and > 0, got 0",
        ),
        ("lower>=upper", [*CN, GOOD, "--lower", "5", "--upper", "5", *e1], "must be smaller"),
        ("huge-bounds", [*CN, GOOD, "--lower=-1e308", "--upper=1e308", *e1], "overflows"),
        ("tiny-epsilon", [*CN, GOOD, *BOUNDS, "--epsilon", "1e-310"], "too small"),
        (
            "negative-bound-ok",
            [*CN, "{d}/nope.csv", "--lower", "-1e3", "--upper", "5", *e1],
            "no such file",
        ),
        ("sep-two-chars", [*CN, GOOD, *BOUNDS, *e1, "--sep", "ab"], "--sep: must be one char"),
        ("seed-negative", [*CN, GOOD, *BOUNDS, *e1, "--seed", "-1"], "--seed: must be >= 0"),
        ("max-rows", [*CN, GOOD, *BOUNDS, *e1, "--max-rows", "2"], "more than 2 data rows"),
        (
            "upper<=0",
            ["fit", "clipped-exponential", GOOD, "--upper", "0", *e1],
            "--upper must be > 0",
        ),
        ("unknown-column", [*CN, GOOD, *BOUNDS, *e1, "--column", "y"], "unknown column 'y'"),
        ("column-index", [*CN, GOOD, *BOUNDS, *e1, "--column", "3"], "unknown column '3'"),
        (
            "unknown-eps-column",
            [*CN, GOOD, *BOUNDS, "--epsilon-column", "e"],
            "unknown epsilon column 'e'",
        ),
        ("save-dir-missing", [*CN, GOOD, *BOUNDS, *e1, "--save", "{d}/no/x.csv"], "not exist"),
        ("save-onto-input", [*CN, GOOD, *BOUNDS, *e1, "--save", GOOD], "is the input file"),
        (
            "save-onto-input-force",
            [*CN, GOOD, *BOUNDS, *e1, "--save", GOOD, "--force"],
            "is the input file",
        ),
        ("save-exists", [*CN, GOOD, *BOUNDS, *e1, "--save", "{d}/old.csv"], "add --force"),
        (
            "save-non-zarr-dir",
            [*CN, GOOD, *BOUNDS, *e1, "--save", "{d}/notzarr.zarr", "--force"],
            "is a directory but not a Zarr store",
        ),
        (
            "save-zarr-with-other-files",
            [*CN, GOOD, *BOUNDS, *e1, "--save", "{d}/mixed.zarr", "--force"],
            "also holds notes.txt",
        ),
        ("save-unwritable", [*CN, GOOD, *BOUNDS, *e1, "--save", "/proc/x.csv"], "cannot write"),
        ("unknown-model", ["fit", "clipped-poisson", GOOD], "invalid choice"),
        ("demo-bad-n", ["demo", "--n", "1"], "--n: must be >= 2"),
        # frequency oracles
        ("oue-not-bits", ["fit", "oue", "{d}/bits_bad.csv", *e1], "bits must be 0 or 1, got 2"),
        ("oue-no-epsilon", ["fit", "oue", "{d}/bits.csv"], "give one of --epsilon or"),
        ("oue-one-column", ["fit", "oue", "{d}/bits.csv", *e1, "--columns", "a"], "k >= 2"),
        (
            "oue-counts-bad",
            ["fit", "oue", "{d}/bits.csv", *e1, "--counts-column", "n"],
            "count must be finite and >= 0",
        ),
        ("ue-prob", ["fit", "unary-encoding", "{d}/bits.csv", "--keep-prob", "1"], "(0, 1)"),
        (
            "krr-out-of-range",
            ["fit", "krr", "{d}/cats.csv", "--k", "3", *e1],
            "category ids must be integers in 0..2 (--k 3), got 3",
        ),
        ("krr-k-missing", ["fit", "krr", "{d}/cats.csv", *e1], "--k"),
        # regression
        (
            "linreg-no-noise",
            ["fit", "linreg", "{d}/reg.csv", "--sigma-x", "1"],
            "give the noise scales",
        ),
        (
            "linreg-both",
            ["fit", "linreg", "{d}/reg.csv", "--sigma-x", "1", "--sigma-y", "1", *e1],
            "not both",
        ),
        (
            "logreg-label",
            ["fit", "logreg", "{d}/reg.csv", "--sigma-x", "1", "--epsilon-y", "1"],
            "labels must be 0 or 1, got 0.5",
        ),
        (
            "linreg-y-in-x",
            [
                "fit",
                "linreg",
                "{d}/reg.csv",
                "--sigma-x",
                "1",
                "--sigma-y",
                "1",
                "--x-columns",
                "a,y",
                "--y-column",
                "y",
            ],
            "also the response column",
        ),
        # sufficient statistics
        (
            "ss-wrong-size",
            [
                "fit",
                "ss-normal",
                "{d}/good.csv",
                "--glm",
                "logistic",
                "--n",
                "9",
                "--noise-sd",
                "1",
            ],
            "3 statistics is not a valid size for glm=logistic",
        ),
        (
            "ss-noise-twice",
            ["fit", "ss-normal", GOOD, "--glm", "linear", "--n", "9", "--noise-sd", "1", *e1],
            "give exactly one of",
        ),
        # central-DP releases: truncated sums and noisy count vectors
        ("trunc-order", [*TE, GOOD, "--lower", "5", "--upper", "5", *n10, *e1], "need --lower <"),
        ("trunc-lower", [*TE, GOOD, "--lower=-1", "--upper", "5", *n10, *e1], "must be >= 0"),
        ("trunc-n-missing", [*TE, GOOD, "--upper", "5", *e1], "one of the arguments --n --n-"),
        ("trunc-n-zero", [*TE, GOOD, "--upper", "5", "--n", "0", *e1], "--n: must be >= 1"),
        (
            "trunc-poisson-bound",
            ["fit", "truncated-poisson", GOOD, "--upper", "7.5", *n10, *e1],
            "--upper must be a whole number",
        ),
        (
            "trunc-n-column-bad",
            [*TE, "{d}/releases.csv", "--upper", "5", "--n-column", "n", *e1],
            "data row 2: the number of records must be a whole number >= 1, got 2.5",
        ),
        ("multinomial-k1", [*MN, GOOD, *n10, *e1], "k >= 2 categories"),
        (
            "multinomial-n-in-columns",
            [*MN, "{d}/releases.csv", "--n-column", "n", "--columns", "y,n", *e1],
            "--columns: column 'n' is also the n or epsilon column",
        ),
        ("multinomial-latent", [*MN, GOOD, *n10, *e1, "--latent", "z"], "invalid choice"),
        # noisy counts: --noise and its options, the releases against the noise and clamp
        ("count-no-noise", [*NB, GOOD, *n10], "--noise laplace needs exactly one of --scale, "),
        ("count-no-sigma", [*NP, GOOD, "--noise", "gaussian"], "one of --sigma or --rho"),
        (
            "count-gaussian-epsilon",
            [*NB, GOOD, *n10, "--noise", "discrete-gaussian", *e1],
            "--epsilon does not apply to --noise discrete-gaussian: give one of --sigma or --rho",
        ),
        (
            "count-laplace-rho",
            [*NP, GOOD, "--noise", "rounded-laplace", "--rho", "1"],
            "--rho does not apply to --noise rounded-laplace",
        ),
        (
            "count-sigma-and-rho",
            [*NP, GOOD, "--noise", "gaussian", "--sigma", "1", "--rho", "1"],
            "got --sigma and --rho",
        ),
        ("count-scale-and-eps", [*NB, GOOD, *n10, "--scale", "2", *e1], "got --scale and --eps"),
        (
            "count-sensitivity-with-scale",
            [*NP, GOOD, "--scale", "2", "--sensitivity", "3"],
            "--sensitivity goes with --epsilon or --rho, not --scale",
        ),
        (
            "count-clamp-and-lower",
            [*NB, GOOD, *n10, *e1, "--clamp", "--lower", "0"],
            "--clamp is --lower 0 --upper 10",
        ),
        (
            "count-bounds-order",
            [*NP, GOOD, *e1, "--lower", "5", "--upper", "2"],
            "--lower (5) must be smaller than --upper (2)",
        ),
        (
            "count-bound-not-integer",
            [*NP, GOOD, "--noise", "discrete-laplace", *e1, "--upper", "9.5"],
            "--upper must be a whole number with --noise discrete-laplace",
        ),
        ("count-noise-choice", [*NP, GOOD, "--noise", "normal"], "invalid choice"),
        (
            "count-not-integer",
            [*NB, GOOD, *n10, "--noise", "discrete-gaussian", "--rho", "0.5"],
            "data row 1: --noise discrete-gaussian releases are integers, got 0.5 in column 'z' "
            "(2 bad values in total)",
        ),
        (
            "count-outside-clamp",
            [*NP, "{d}/counts.csv", "--noise", "discrete-laplace", *e1, "--lower", "1", *Y],
            "data row 2: release 0 is outside the clamp [1, inf] (--lower 1) in column 'y'",
        ),
        (
            "count-outside-binomial-clamp",
            [*NB, "{d}/counts.csv", "--n", "5", "--scale", "1", "--clamp", *Y],
            "data row 4: release 7 is outside the clamp [0, 5] (--clamp)",
        ),
        (
            "count-tiny-noise",
            [*NP, GOOD, "--noise", "gaussian", "--rho", "1e12"],
            "rho=1e+12, sensitivity=1: the noise sigma is 7.07107e-07, outside [0.001, 1e+07]",
        ),
        (
            "count-tiny-noise-column",
            [*NP, "{d}/counts.csv", "--noise", "discrete-laplace", "--epsilon-column", "eps"],
            "the noise scale is 1e-06, outside",
        ),
    ]


@pytest.fixture(scope="module")
def bad_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    files = {
        "good.csv": "z\n0.5\n-1.5\n2.0\n",
        "old.csv": "precious\n",
        "nonnum.csv": "z\n1.0\nabc\n2.0\n",
        "nan.csv": "1.0\nnan\n2.0\n",
        "emptycell.csv": "z,w\n1.0,1\n,2\n",
        "blank.csv": "1.0\n\n2.0\n",
        "empty.csv": "",
        "hdr.csv": "z\n",
        "one.csv": "z\n1\n",
        "epsbad.csv": "z,eps\n1.0,1\n2.0,0\n",
        "bits.csv": "a,b,n\n1,0,2\n0,1,-1\n",
        "bits_bad.csv": "a,b\n1,0\n0,2\n",
        "cats.csv": "y\n0\n2\n3\n",
        "reg.csv": "a,b,y\n0.1,0.2,1\n0.3,0.1,0.5\n",
        "releases.csv": "y,n\n10.5,3\n12,2.5\n",
        "counts.csv": "y,eps\n3,1\n0,1\n5,1e6\n7,1\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)
    (d / "notzarr.zarr").mkdir()
    (d / "notzarr.zarr" / "thesis.tex").write_text("unrelated")
    (d / "mixed.zarr" / "posterior").mkdir(parents=True)
    (d / "mixed.zarr" / "zarr.json").write_text("{}")
    (d / "mixed.zarr" / "posterior" / "zarr.json").write_text("{}")
    (d / "mixed.zarr" / "notes.txt").write_text("unrelated")
    return d


@pytest.mark.parametrize(
    ("argv", "message"), [c[1:] for c in _bad_cases()], ids=[c[0] for c in _bad_cases()]
)
def test_bad_input_exit_code_2(bad_dir, capsys, argv, message):
    before = {p: p.read_bytes() for p in bad_dir.rglob("*") if p.is_file()}
    argv = [a.format(d=bad_dir) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.strip().splitlines() if not ln.startswith("Reading")]
    assert "Traceback" not in captured.err
    assert "error:" in lines[-1] and message in lines[-1], lines[-1]
    if not argv[1:2] == ["clipped-poisson"] and argv[0] == "fit":
        assert len([ln for ln in lines if "error" in ln]) == 1
    assert "Sampling" not in captured.out  # failed before any fitting
    assert {p: p.read_bytes() for p in bad_dir.rglob("*") if p.is_file()} == before


# --------------------------------------------------------------------------------------------
# atomic output
# --------------------------------------------------------------------------------------------


def test_write_atomic_failure_or_interrupt_leaves_target(tmp_path):
    target = tmp_path / "post.csv"
    target.write_text("old")
    t = check_target(str(target), force=True)

    def half_then(exc):
        def write(path):
            Path(path).write_text("half")
            raise exc

        return write

    for exc in (OSError("disk full"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            write_atomic(t, half_then(exc))
        assert target.read_text() == "old"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["post.csv"]

    def abort():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(t, lambda p: Path(p).write_text("new"), before_commit=abort)
    assert target.read_text() == "old"
    write_atomic(t, lambda p: Path(p).write_text("new"))
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["post.csv"]


def test_write_atomic_zarr_store_replaced_whole(tmp_path):
    store = tmp_path / "post.zarr"
    (store / "old_group").mkdir(parents=True)
    (store / "zarr.json").write_text("{}")
    (store / "old_group" / "zarr.json").write_text("{}")
    t = check_target(str(store), force=True)

    def write(path):
        Path(path).mkdir()
        (Path(path) / "zarr.json").write_text('{"new": 1}')

    write_atomic(t, write)
    assert sorted(p.name for p in store.iterdir()) == ["zarr.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["post.zarr"]


def test_sigkill_during_save_leaves_no_partial_target(tmp_path):
    target = tmp_path / "post.csv"
    target.write_text("old content\n")
    code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from pymc_dpnoise.cli._write import check_target, write_atomic
        def slow(path):
            with open(path, "w") as fh:
                fh.write("chain,draw,mu\\n0,0,1.0\\n")
                fh.flush()
                print(path, flush=True)
                time.sleep(60)
        write_atomic(check_target({str(target)!r}, force=True), slow)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=_env()
    )
    tmp_name = proc.stdout.readline().strip()
    assert Path(tmp_name).parent == tmp_path and Path(tmp_name).is_file()
    proc.kill()
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert target.read_text() == "old content\n"


# --------------------------------------------------------------------------------------------
# fits: one per model by default, every model x CSV/Parquet in the slow run
# --------------------------------------------------------------------------------------------

#: models fitted in `make test-backend` (each compiles its own graph); the rest run in `slow`.
#: The CLI samples as users run it (nutpie compiles with Numba), so fits are `backend` tests.
NATIVE = pytest.mark.backend
#: Measured cold (pytest --durations, 2-core machine at load ~13): clipped-normal 147 s (with
#: the PyMC import), oue 36 s, krr 119 s, clipped-exponential 44 s, linreg 166 s, ss-normal
#: 334 s; with warm caches every model took 26-125 s (logreg the slowest).
DEFAULT_FITS = {"clipped-normal": "csv", "oue": "parquet", "krr": "csv"}


def _fit(files, capsys, model, fmt, *extra):
    argv = ["fit", model, f"{files[model]}.{fmt}", *MODEL_ARGS[model], *FAST, *extra]
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, out.err
    return out


def _check_summary(out, model):
    text = out.out
    assert "Posterior summary (94% HDI):" in text
    spec = MODELS[model]
    assert spec.distribution in text


@pytest.mark.parametrize(
    ("model", "fmt"),
    [
        pytest.param(m, f, marks=NATIVE if DEFAULT_FITS.get(m) == f else pytest.mark.slow)
        for m in MODEL_ARGS
        for f in ("csv", "parquet")
    ],
)
def test_fit_every_model(files, capsys, tmp_path, model, fmt):
    save = tmp_path / "draws.csv"
    out = _fit(files, capsys, model, fmt, "--save", str(save))
    _check_summary(out, model)
    draws = pd.read_csv(save)
    assert list(draws.columns[:2]) == ["chain", "draw"] and len(draws) == 2 * 50
    assert np.isfinite(draws.to_numpy()).all()


@NATIVE
def test_fit_recovers_clipped_exponential_rate_and_overwrites_with_force(files, capsys, tmp_path):
    save = tmp_path / "draws.csv"
    save.write_text("old\n")
    out = _fit(files, capsys, "clipped-exponential", "csv", "--save", str(save), "--force")
    assert "lam ~ Gamma(alpha=2, beta=2.5)" in out.out
    draws = pd.read_csv(save)
    assert list(draws.columns) == ["chain", "draw", "lam"]
    assert 0.25 < draws["lam"].mean() < 0.9  # the true rate is 0.5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["draws.csv"]


@pytest.mark.slow
def test_fit_netcdf_and_zarr_outputs(files, capsys, tmp_path):
    import xarray as xr

    nc = tmp_path / "post.nc"
    _fit(files, capsys, "clipped-normal", "csv", "--save", str(nc))
    assert xr.open_datatree(nc)["posterior"]["mu"].shape == (2, 50)
    store = tmp_path / "post.zarr"
    _fit(files, capsys, "clipped-normal", "csv", "--save", str(store))
    _fit(files, capsys, "clipped-normal", "csv", "--save", str(store), "--force")
    assert xr.open_datatree(store, engine="zarr")["posterior"]["sigma"].shape == (2, 50)


# --------------------------------------------------------------------------------------------
# Ctrl-C during sampling: exit 130, one line, the --save target untouched
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sampler", [pytest.param("nutpie", marks=NATIVE), pytest.param("pymc", marks=pytest.mark.slow)]
)
def test_sigint_during_sampling(tmp_path, sampler):
    if sampler == "nutpie":
        pytest.importorskip("nutpie")
    rng = np.random.default_rng(0)
    data = tmp_path / "big.csv"
    z = mechanisms.perturb_clipped(rng.normal(1, 2, 20_000), -5, 5, 1.0, rng)
    pd.DataFrame({"z": z}).to_csv(data, index=False)
    target = tmp_path / "post.csv"
    target.write_text("precious\n")
    argv = [sys.executable, "-m", "pymc_dpnoise", "fit", "clipped-normal", str(data)]
    argv += [*BOUNDS, "--epsilon", "1", "--sampler", sampler, "--draws", "1000000"]
    argv += ["--tune", "100", "--chains", "1", "--cores", "1", "--quiet"]
    argv += ["--save", str(target), "--force"]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
    )
    for line in proc.stdout:  # wait until sampling starts
        if line.startswith("Sampling with"):
            break
    time.sleep(3)
    assert proc.poll() is None, proc.stderr.read()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [
        "pymc-dpnoise fit clipped-normal: interrupted; no output was written"
    ]
    assert target.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv", "post.csv"]


# --------------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------------


@NATIVE
def test_demo_tiny(tmp_path, capsys):
    out = tmp_path / "demo.png"
    rc = main(["demo", "--n", "300", "--out", str(out), *FAST])
    assert rc == 0
    text = capsys.readouterr().out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "noise-aware" in text and "naive" in text


# --------------------------------------------------------------------------------------------
# what each model reads (no sampling): the registry's data kinds
# --------------------------------------------------------------------------------------------


def _read_as(model, path, *opts):
    """Parse ``fit MODEL PATH *opts`` and run the model's reader (no model, no sampling)."""
    from pymc_dpnoise.cli import build_parser

    args = build_parser().parse_args(["fit", model, str(path), *opts])
    MODELS[model].check(args)
    with open_table(args.reports, header=args.header, sep=args.sep, max_rows=10**6) as t:
        return MODELS[model].data.read(t, args)


def test_bits_are_grouped_into_patterns_with_counts_and_epsilon(tmp_path):
    p = _write(tmp_path / "b.csv", "a,b,c,eps,n\n1,0,0,1,2\n0,1,1,2,1\n1,0,0,1,3\n1,0,0,2,1\n")
    d = _read_as("oue", p, "--epsilon-column", "eps", "--counts-column", "n")
    rows = sorted(
        zip(map(tuple, d["z"].tolist()), d["epsilon"].tolist(), d["counts"].tolist(), strict=True)
    )
    assert rows == [((0, 1, 1), 2.0, 1.0), ((1, 0, 0), 1.0, 5.0), ((1, 0, 0), 2.0, 1.0)]
    assert d["items"] == ["a", "b", "c"]
    d = _read_as("sue", p, "--epsilon", "1", "--columns", "c,a")
    assert d["items"] == ["c", "a"] and d["counts"].sum() == 4 and d["epsilon"] == 1.0


def test_krr_counts_and_default_column(tmp_path):
    p = _write(tmp_path / "k.csv", "n,y\n5,0\n0,1\n2,2\n")
    d = _read_as("krr", p, "--k", "4", "--epsilon", "1", "--counts-column", "n")
    assert d["z"].tolist() == [0, 2] and d["counts"].tolist() == [5.0, 2.0]
    assert d["items"] == ["0", "1", "2", "3"]


def test_regression_columns(tmp_path):
    p = _write(tmp_path / "r.csv", "y,a,b,junk\n1,2,3,4\n5,6,7,8\n")
    d = _read_as(
        "linreg", p, "--sigma-x", "1", "--sigma-y", "1", "--y-column", "y", "--x-columns", "b,a"
    )
    assert d["z"].tolist() == [[3, 2, 1], [7, 6, 5]] and d["features"] == ["b", "a"]
    d = _read_as("linreg", p, "--sigma-x", "1", "--sigma-y", "1")
    assert d["z"].tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]  # default: the last is y


def test_statistics_size_gives_d_and_noise(tmp_path):
    from pymc_dpnoise.math.sufficient import stat_dim

    m = stat_dim("linear", 2)
    p = _write(tmp_path / "s.csv", "s,v\n" + "".join(f"{i},{i + 1}\n" for i in range(m)))
    d = _read_as("ss-normal", p, "--glm", "linear", "--n", "10", "--noise-var-column", "v")
    assert d["d"] == 2 and np.diag(d["noise_cov"]).tolist() == list(range(1, m + 1))
    d = _read_as(
        "ss-normal",
        p,
        "--glm",
        "linear",
        "--n",
        "10",
        "--noise-sd",
        "2",
        "--local",
        "--column",
        "s",
    )
    assert np.allclose(np.diag(d["noise_cov"]), 4.0 * 10)


def test_releases_read_n_and_epsilon(tmp_path):
    p = _write(tmp_path / "r.csv", "eps,y,n\n1,10.5,30\n2,-3,40\n")
    args = ["--upper", "8", "--n-column", "n", "--epsilon-column", "eps"]
    d = _read_as("truncated-exponential", p, *args)
    assert d["z"].tolist() == [10.5, -3.0] and d["note"] is None
    assert d["n"].tolist() == [30.0, 40.0] and d["epsilon"].tolist() == [1.0, 2.0]
    assert d["n_desc"] == "n from column 'n' (min 30, max 40)"
    # --n and --epsilon: three columns could hold the releases, --column is required
    with pytest.raises(InputError, match=r"3 columns that could hold the releases \('eps', 'y', "):
        _read_as("truncated-poisson", p, "--upper", "8", "--n", "30", "--epsilon", "1")
    d = _read_as(
        "truncated-poisson", p, "--upper", "8", "--n", "30", "--epsilon", "1", "--column", "eps"
    )
    assert d["z"].tolist() == [1.0, 2.0] and d["n"] == 30 and d["n_desc"] == "n=30"
    # one release is a data set (one data holder, one noisy sum)
    one = _write(tmp_path / "one.csv", "y\n5.5\n")
    assert _read_as("truncated-poisson", one, "--upper", "8", "--n", "3", "--epsilon", "1")[
        "z"
    ].tolist() == [5.5]


def test_count_vectors_read_columns_and_n(tmp_path):
    p = _write(tmp_path / "m.csv", "a,b,n,c\n1,2,10,7\n0.5,-1,12,12\n")
    d = _read_as("noisy-multinomial", p, "--n-column", "n", "--epsilon", "1")
    assert d["items"] == ["a", "b", "c"] and d["n"].tolist() == [10.0, 12.0]
    assert d["z"].tolist() == [[1.0, 2.0, 7.0], [0.5, -1.0, 12.0]]
    d = _read_as("noisy-multinomial", p, "--n", "10", "--epsilon", "2", "--columns", "c,a")
    assert d["items"] == ["c", "a"] and d["z"].tolist() == [[7.0, 1.0], [12.0, 0.5]]
    assert d["n"] == 10 and d["epsilon"] == 2.0


def test_release_models_build_with_default_priors(tmp_path):
    """The built models (no sampling): priors, sensitivity default, the multinomial latent."""
    from pymc_dpnoise.cli import build_parser

    def built(model, path, *opts):
        args = build_parser().parse_args(["fit", model, str(path), *opts])
        MODELS[model].check(args)
        with open_table(args.reports, header="auto", sep=None, max_rows=100) as t:
            return MODELS[model].build(args, MODELS[model].data.read(t, args))

    p = _write(tmp_path / "r.csv", "y\n10.5\n-3\n")
    b = built("truncated-exponential", p, "--upper", "8", "--n", "30", "--epsilon", "1")
    assert b.priors == "lam ~ Gamma(alpha=4, beta=4)" and b.params == ["lam"]
    assert "lower=0, upper=8, epsilon=1, sensitivity=8)" in b.likelihood
    b = built(
        "truncated-poisson", p, "--lower", "2", "--upper", "10", "--n", "30", "--epsilon", "1"
    )
    assert b.priors == "mu ~ Gamma(alpha=2, beta=0.4)" and "sensitivity=10)" in b.likelihood
    m = _write(tmp_path / "m.csv", "a,b,c\n150,90,60\n140,95,70\n")
    # noise variance 2 (2/1)^2 = 8 < n/4: the noise-variance latent; --latent counts forces
    # the latent counts (k - 1 = 2 per release)
    b = built("noisy-multinomial", m, "--n", "300", "--epsilon", "1")
    assert [v.name for v in b.model.free_RVs] == ["p", "y_noise_w"]
    assert b.priors == "p ~ Dirichlet(1 x 3)" and "latent y_noise_w (--latent auto)" in b.likelihood
    b = built("noisy-multinomial", m, "--n", "300", "--epsilon", "1", "--latent", "counts")
    assert b.model["y_counts_z"].eval().shape == (2, 2)


def test_truncated_normal_reads_pairs_and_builds(tmp_path):
    """truncated-normal: two columns per release, the exact sensitivity by default, the
    bound-scaled priors and a start at the moments of the noisy sums."""
    from pymc_dpnoise.cli import build_parser

    p = _write(tmp_path / "p.csv", "sx,sx2,n,extra\n110,900,100,1\n95,820,90,2\n")
    args = ["--lower", "-5", "--upper", "5", "--n-column", "n", "--epsilon", "1"]
    with pytest.raises(InputError, match=r"3 columns that could hold the noisy sums .*--columns"):
        _read_as("truncated-normal", p, *args)
    d = _read_as("truncated-normal", p, *args, "--columns", "sx,sx2")
    assert d["z"].tolist() == [[110.0, 900.0], [95.0, 820.0]] and d["n"].tolist() == [100, 90]
    d = _read_as("truncated-normal", p, *args, "--columns", "sx2,extra")
    assert d["z"].tolist() == [[900.0, 1.0], [820.0, 2.0]] and d["note"] is None
    with pytest.raises(InputError, match="a release is two noisy sums"):
        _read_as("truncated-normal", p, *args, "--columns", "sx")
    one = _write(tmp_path / "one.csv", "sx\n5\n")
    with pytest.raises(InputError, match="1 column"):
        _read_as(
            "truncated-normal", one, "--lower", "-5", "--upper", "5", "--n", "9", "--epsilon", "1"
        )

    parsed = build_parser().parse_args(
        ["fit", "truncated-normal", str(p), *args, "--columns", "sx,sx2"]
    )
    MODELS["truncated-normal"].check(parsed)
    with open_table(parsed.reports, header="auto", sep=None, max_rows=100) as t:
        b = MODELS["truncated-normal"].build(
            parsed, MODELS["truncated-normal"].data.read(t, parsed)
        )
    assert b.priors == "mu ~ Normal(0, 5), sigma ~ Gamma(alpha=2, beta=0.4)"
    assert "sensitivity=30.25)" in b.likelihood and b.params == ["mu", "sigma"]
    assert [v.name for v in b.model.free_RVs] == ["mu", "sigma", "y_sum_z"]
    start = b.model.initial_point()
    # sum x / sum n = 205 / 190; sqrt(1720 / 190 - (205 / 190)^2)
    assert np.isclose(start["mu"], 205 / 190)
    assert np.isclose(np.exp(start["sigma_log__"]), np.sqrt(1720 / 190 - (205 / 190) ** 2))
    bad = build_parser().parse_args(["fit", "truncated-normal", str(p), *args[:1], "5", *args[2:]])
    with pytest.raises(InputError, match="must be smaller than --upper"):
        MODELS["truncated-normal"].check(bad)


def test_count_noise_options_pick_the_distribution_and_the_spec(tmp_path):
    """--noise laplace with a budget keeps the LaplaceNoisy* path; every other combination is
    NoisyBinomial / NoisyPoisson with the spec the options describe."""
    from pymc_dpnoise import noise
    from pymc_dpnoise.distributions.noisy_counts import noise_of

    p = _write(tmp_path / "c.csv", "y,eps\n3,1\n0,2\n5,0.5\n")

    def y_op(b):
        return type(b.model["y"].owner.op).__name__

    # the default: unchanged (--epsilon, --clamp, --sensitivity)
    d, b = _built("noisy-binomial", p, "--n", "10", "--epsilon", "1", "--clamp", *Y)
    assert "noise" not in d and y_op(b) == "NoisyBinomialRV"
    assert noise_of(b.model["y"]) is noise.Laplace
    assert b.likelihood == "y ~ LaplaceNoisyBinomial(n=10, p, epsilon=1, sensitivity=1, clamp=True)"
    d, b = _built("noisy-poisson", p, "--epsilon-column", "eps", "--sensitivity", "2")
    assert "noise" not in d and y_op(b) == "NoisyPoissonRV"
    assert "sensitivity=2)" in b.likelihood
    # the noise specs
    args = ["--n", "10", "--noise", "discrete-gaussian", "--rho", "0.5", "--lower", "0"]
    d, b = _built("noisy-binomial", p, *args, *Y)
    assert (
        d["noise"] == noise.DiscreteGaussian(1.0)
        and noise_of(b.model["y"]) is noise.DiscreteGaussian
    )
    assert b.likelihood == (
        "y ~ NoisyBinomial(n=10, p, noise=DiscreteGaussian(sigma=1.0) from rho=0.5, "
        "sensitivity=1, lower=0)"
    )
    d, b = _built("noisy-binomial", p, "--n", "10", "--scale", "2", "--clamp", *Y)
    assert d["noise"] == noise.Laplace(2.0) and noise_of(b.model["y"]) is noise.Laplace
    assert b.likelihood.endswith("noise=Laplace(scale=2.0), lower=0, upper=10)")
    d, b = _built("noisy-poisson", p, "--noise", "gaussian", "--rho", "2", "--sensitivity", "4", *Y)
    assert d["noise"] == noise.Gaussian(2.0) and "lower" not in b.likelihood
    # a budget per release: the scale per release
    d, b = _built("noisy-poisson", p, "--noise", "discrete-laplace", "--epsilon-column", "eps")
    assert d["noise"] == noise.DiscreteLaplace(np.array([1.0, 0.5, 2.0]))
    assert d["z"].tolist() == [3.0, 0.0, 5.0] and "from epsilon from column 'eps'" in b.likelihood
    d, b = _built(
        "noisy-poisson", p, "--noise", "rounded-laplace", "--scale", "1", "--upper", "5", *Y
    )
    assert noise_of(b.model["y"]) is noise.RoundedLaplace and b.likelihood.endswith(", upper=5)")
    assert b.model["y"].dtype == "float64"  # integer-valued (issue 22)
    assert b.params == ["mu"]


@NATIVE
@pytest.mark.parametrize(
    "noise_args",
    [
        pytest.param(
            ["--noise", "discrete-gaussian", "--rho", "0.5", "--lower", "0"],
            id="discrete-gaussian-lower0",
        ),
        pytest.param(["--noise", "discrete-laplace", "--epsilon", "1"], id="discrete-laplace"),
    ],
)
def test_fit_noisy_binomial_with_a_noise_spec(tmp_path, capsys, noise_args):
    """An OpenDP-style release fitted end to end with nutpie: 30 counts of n = 60 records,
    p = 0.3, released with the noise of ``noise_args`` (saturated at 0 with ``--lower 0``)."""
    pytest.importorskip("nutpie")
    from pymc_dpnoise import noise

    opt = dict(zip(noise_args[::2], noise_args[1::2], strict=True))
    if opt["--noise"] == "discrete-gaussian":
        spec = noise.DiscreteGaussian.from_rho(float(opt["--rho"]))
    else:
        spec = noise.DiscreteLaplace.from_epsilon(float(opt["--epsilon"]))
    rng = np.random.default_rng(5)
    released = np.maximum(
        spec.release(rng.binomial(60, 0.3, 30), rng), int(opt.get("--lower", -999))
    )
    data = tmp_path / "counts.csv"
    pd.DataFrame({"y": released}).to_csv(data, index=False)
    save = tmp_path / "draws.csv"
    argv = ["fit", "noisy-binomial", str(data), "--n", "60", *noise_args, "--sampler", "nutpie"]
    argv += ["--draws", "200", "--tune", "200", "--chains", "2", "--cores", "1", "--quiet"]
    rc = main([*argv, "--save", str(save)])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert f"y ~ NoisyBinomial(n=60, p, noise={spec!r} from " in out.out
    draws = pd.read_csv(save)
    assert list(draws.columns) == ["chain", "draw", "p"] and len(draws) == 2 * 200
    # 30 counts of 60 records: the posterior sd of p is about 0.011
    assert abs(draws["p"].mean() - 0.3) < 0.05


# --------------------------------------------------------------------------------------------
# issue 22: input refused before any model is built (each a class of inputs, not one case)
# --------------------------------------------------------------------------------------------

_COUNT_NOISE = {
    "laplace": ["--epsilon", "1"],
    "discrete-laplace": ["--epsilon", "1"],
    "rounded-laplace": ["--scale", "1"],
    "gaussian": ["--rho", "0.5"],
    "discrete-gaussian": ["--sigma", "1"],
}


@pytest.mark.parametrize("noise", list(_COUNT_NOISE))
@pytest.mark.parametrize(
    ("model", "clamp"),
    [
        ("noisy-binomial", ["--clamp"]),
        ("noisy-binomial", ["--lower", "0", "--upper", "10"]),
        ("noisy-binomial", ["--upper", "10"]),
        ("noisy-poisson", ["--lower", "0", "--upper", "10"]),
        ("noisy-poisson", ["--upper", "10"]),
    ],
)
def test_releases_outside_any_clamp_are_refused_before_sampling(
    tmp_path, capsys, model, noise, clamp
):
    """Every clamp (``--clamp`` on the LaplaceNoisy* path too, where a release outside [0, n]
    used to fail only once sampling started, exit 1) and every noise kind: exit 2 naming the
    row, nothing built."""
    p = _write(tmp_path / "c.csv", "y\n3\n12\n5\n")
    n = ["--n", "10"] if model == "noisy-binomial" else []
    argv = ["fit", model, p, *n, "--noise", noise, *_COUNT_NOISE[noise], *clamp, *FAST]
    assert main(argv) == 2
    out = capsys.readouterr()
    assert "data row 2: release 12 is outside the clamp [" in out.err.strip().splitlines()[-1]
    assert "Likelihood" not in out.out and "Sampling" not in out.out
    # inside the clamp: read and built (the Laplace --clamp path included)
    ok = _write(tmp_path / "ok.csv", "y\n3\n10\n5\n")
    _built(model, ok, *n, "--noise", noise, *_COUNT_NOISE[noise], *clamp)


@pytest.mark.parametrize(
    ("text", "row", "fields", "first"),
    [
        ("z\n1.0\n1.5,2.5\n2.0\n", "data row 2", 2, 1),  # one column, an extra field
        ("1.0\n1.5;2.5\n2.0\n", "data row 2", 2, 1),  # no header, another separator
        ("z,w\n1.0,2\n1.5\n2.0,3\n", "data row 2", 1, 2),  # a missing field
        ("z,w\n1.0,2\n1.5,3,4\n2.0,3\n", "data row 2", 3, 2),  # an extra field
        ("z,w\n1,2\n" + "3,4\n" * 5000 + "5\n", "data row 5002", 1, 2),  # far down
    ],
)
def test_ragged_csv_rows_are_refused(tmp_path, capsys, text, row, fields, first):
    """A row with more or fewer fields than the first row is an error naming the row (it
    used to be read through its first cell, or with its missing cells as empty)."""
    p = _write(tmp_path / "r.csv", text)
    with pytest.raises(InputError, match=f"{row} has {fields} field.* row has {first};"):
        with open_table(p, max_rows=10**6) as t:
            t.read([0])
    assert main([*CN, p, *BOUNDS, "--epsilon", "1", "--column", "0", *FAST]) == 2
    assert f"{row} has {fields} field" in capsys.readouterr().err


def test_not_ragged_empty_trailing_cells_and_blank_lines(tmp_path):
    """An empty last cell is a field (an empty cell, reported when read); blank lines in a
    multi-column file are skipped as before."""
    p = _write(tmp_path / "e.csv", "z,w\n1.0,\n2.0,3\n\n4.0,5\n")
    with open_table(p, max_rows=100) as t:
        assert t.read([0])[0].tolist() == [1.0, 2.0, 4.0]
        with pytest.raises(InputError, match="data row 1: empty cell in column 'w'"):
            t.read([1])


@pytest.mark.parametrize(
    ("model", "opts", "minimum"),
    [
        ("truncated-normal", ["--lower", "-5", "--upper", "5", "--columns", "a,b"], "30.25"),
        ("truncated-normal", ["--lower", "0", "--upper", "2", "--columns", "a,b"], "6"),
        ("truncated-exponential", ["--upper", "8", "--column", "a"], "8"),
        ("truncated-poisson", ["--lower", "2", "--upper", "10", "--column", "a"], "10"),
        ("noisy-binomial", ["--n", "10", "--column", "a"], "1"),
        ("noisy-poisson", ["--column", "a"], "1"),
        ("noisy-poisson", ["--noise", "gaussian", "--rho", "1", "--column", "a"], "1"),
        ("noisy-multinomial", [], "1"),
    ],
)
def test_sensitivity_below_the_minimum_is_refused(tmp_path, capsys, model, opts, minimum):
    """``--sensitivity`` smaller than any release with these options can have (the exact one
    of the bounds; 1 for integer counts) models less noise than was added: exit 2 naming the
    minimum.  The minimum itself is accepted."""
    from pymc_dpnoise.cli import build_parser

    p = _write(tmp_path / "r.csv", "a,b\n10,100\n12,130\n")
    n = [] if model.startswith("noisy-") and model != "noisy-multinomial" else ["--n", "10"]
    eps = [] if "--rho" in opts else ["--epsilon", "1"]
    base = ["fit", model, p, *opts, *n, *eps]
    low = float(minimum) * (1 - 1e-9)
    assert main([*base, "--sensitivity", repr(low), *FAST]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"is below the minimum {minimum} (" in err, err
    args = build_parser().parse_args([*base, "--sensitivity", minimum])
    MODELS[model].check(args)


@pytest.mark.parametrize(
    ("model", "text", "opts", "message"),
    [
        ("noisy-multinomial", "a,a,b\n10,5,3\n", ["--n", "20", "--epsilon", "1"], "both named 'a'"),
        ("noisy-multinomial", "a,b,c\n10,5,3\n", ["--n", "20", "--epsilon", "1", "--columns", "b,1"],
         "'b' and '1' are the same column 'b'"),
        ("oue", "a,a,b\n1,0,0\n0,1,0\n", ["--epsilon", "1"], "both named 'a'"),
        ("sue", "a,b,c\n1,0,0\n0,1,0\n", ["--epsilon", "1", "--columns", "a,b,0"], "same column"),
        ("linreg", "x,x,y\n1,2,3\n4,5,6\n", ["--sigma-x", "1", "--sigma-y", "1"], "both named 'x'"),
        ("linreg", "x,w,y\n1,2,3\n4,5,6\n", ["--sigma-x", "1", "--sigma-y", "1", "--x-columns", "x,0"],
         "'x' and '0' are the same column"),
        ("truncated-normal", "a,b\n1,2\n3,4\n", ["--lower", "0", "--upper", "1", "--n", "5",
         "--epsilon", "1", "--columns", "a,0"], "same column"),
    ],
)  # fmt: skip
def test_a_column_chosen_twice_or_duplicate_names_are_refused(
    tmp_path, capsys, model, text, opts, message
):
    """Every multi-column option: a column named twice (by name and index) or two columns of
    one header name (the categories / items / features would share a label)."""
    p = _write(tmp_path / "d.csv", text)
    assert main(["fit", model, p, *opts, *FAST]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in err, err


_ID_CASES = [
    ("clipped-normal", "id,z\n1,0.5\n2,1.5\n3,-1\n", [*BOUNDS, "--epsilon", "1"], "'id', 'z'"),
    ("clipped-exponential", "id,z\n1,0.5\n2,1.5\n", ["--upper", "5", "--epsilon", "1"], "'id', 'z'"),
    ("noisy-binomial", "id,y\n1,3\n2,4\n", ["--n", "10", "--epsilon", "1"], "'id', 'y'"),
    ("noisy-poisson", "id,y,eps\n1,3,1\n2,4,1\n", ["--epsilon-column", "eps", "--noise",
     "discrete-laplace"], "'id', 'y'"),
    ("krr", "id,y\n0,1\n1,2\n", ["--k", "3", "--epsilon", "1"], "'id', 'y'"),
    ("ss-normal", "id,s\n1,0.5\n2,0.1\n3,0.2\n", ["--glm", "linear", "--n", "9", "--noise-sd",
     "1"], "'id', 's'"),
    ("truncated-exponential", "id,y\n1,10\n2,12\n", ["--upper", "8", "--n", "5", "--epsilon",
     "1"], "'id', 'y'"),
    ("truncated-normal", "id,sx,sx2\n1,10,100\n2,12,130\n", ["--lower", "0", "--upper", "5",
     "--n", "9", "--epsilon", "1"], "'id', 'sx', 'sx2'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "text", "opts", "names"), _ID_CASES, ids=[c[0] for c in _ID_CASES]
)
def test_several_candidate_columns_need_column(tmp_path, capsys, model, text, opts, names):
    """Without --column (--columns) a file with more columns that could hold the reports than
    the model reads is an error listing them (an ``id`` column used to be fitted, with only a
    note); naming the column reads it."""
    p = _write(tmp_path / "ids.csv", text)
    assert main(["fit", model, p, *opts, *FAST]) == 2
    out = capsys.readouterr()
    err = out.err.strip().splitlines()[-1]
    assert "could hold the" in err and f"({names})" in err and "--column" in err, err
    assert "Read " not in out.out


def test_several_candidate_columns_need_column_on_the_summary_path(tmp_path, capsys):
    """The large-file summary path (no --max-rows) asks for --column too."""
    from pymc_dpnoise.summaries import SUMMARY_THRESHOLD

    rng = np.random.default_rng(0)
    n = SUMMARY_THRESHOLD + 10
    p = tmp_path / "big.csv"
    pd.DataFrame({"id": np.arange(n), "z": rng.normal(size=n)}).to_csv(p, index=False)
    assert main([*CN, str(p), *BOUNDS, "--epsilon", "1", *FAST]) == 2
    assert "('id', 'z'); choose one with --column" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["x.parquet", "x.json", "x", "x.nc.tmp", "x.h5"])
def test_save_refuses_unsupported_file_types(tmp_path, capsys, name):
    """--save writes CSV, NetCDF or Zarr by the path's ending; any other ending is refused
    before reading (it used to get NetCDF under a name that says otherwise)."""
    target = tmp_path / name
    with pytest.raises(InputError, match=r"unsupported file type.*\.csv.*\.nc.*\.zarr"):
        check_target(str(target))
    good = _write(tmp_path / "g.csv", "z\n0.5\n-1\n")
    assert main([*CN, good, *BOUNDS, "--epsilon", "1", "--save", str(target), *FAST]) == 2
    out = capsys.readouterr()
    assert "--save" in out.err and "Read " not in out.out and not target.exists()
    for ok in ("p.csv", "p.CSV", "p.nc", "p.zarr"):
        assert check_target(str(tmp_path / ok)).format in ("csv", "netcdf", "zarr")


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_saved_file_gets_the_mode_of_a_plain_open(tmp_path, umask):
    """A new file: 0o666 & ~umask (the temporary file's 0o600 used to stay); a replaced file
    keeps its mode, as ``open(path, "w")`` would."""
    old = os.umask(umask)
    try:
        new = tmp_path / "new.csv"
        write_atomic(check_target(str(new)), lambda path: Path(path).write_text("a\n1\n"))
        plain = tmp_path / "plain.csv"
        with open(plain, "w") as fh:
            fh.write("x")
        assert (new.stat().st_mode & 0o7777) == (plain.stat().st_mode & 0o7777) == 0o666 & ~umask
        kept = tmp_path / "kept.csv"
        kept.write_text("old")
        os.chmod(kept, 0o640)
        write_atomic(check_target(str(kept), force=True), lambda path: Path(path).write_text("n"))
        assert kept.read_text() == "n" and (kept.stat().st_mode & 0o7777) == 0o640
    finally:
        os.umask(old)


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "clipped-normal", "x.csv", "--lower", "0", "--upper", "1"],  # missing required
        ["fit", "clipped-normal", "x.csv", "--epsilon", "1"],  # missing --lower --upper
        ["fit", "krr", "x.csv", "--k", "two"],  # bad value
        ["fit", "oue"],  # missing positional
        ["fit", "clipped-poisson", "x.csv"],  # unknown model
        ["fit"],
        [],
        ["demo", "--n", "1"],
        ["fit", "oue", "x.csv", "--epsilon", "1", "--bogus"],  # unknown option
    ],
)
def test_argument_errors_are_a_usage_line_and_one_error_line(capsys, argv):
    """Argument errors: one ``usage:`` line pointing to --help and one ``error:`` line (the
    README's promise; argparse's own usage of ``fit MODEL`` took 14 lines)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("usage: pymc-dpnoise") and lines[0].endswith("--help')")
    assert lines[1].startswith("pymc-dpnoise") and ": error: " in lines[1]


@pytest.fixture(scope="module")
def big_logreg(tmp_path_factory):
    """A logreg file just above ``SUMMARY_THRESHOLD`` reports (d = 2, theta = (1, -0.5),
    sigma_x = 0.5, epsilon_y = 1) and its reports."""
    from scipy import special

    from pymc_dpnoise.summaries import SUMMARY_THRESHOLD

    rng = np.random.default_rng(24)
    n, sx, ey = SUMMARY_THRESHOLD + 10, 0.5, 1.0
    x = rng.multivariate_normal([0.0, 0.0], [[1.0, 0.3], [0.3, 0.5]], size=n)
    y = rng.random(n) < special.expit(x @ [1.0, -0.5])
    z = np.column_stack(
        [x + rng.normal(0.0, sx, x.shape), np.where(rng.random(n) < special.expit(ey), y, ~y)]
    ).astype(float)
    path = tmp_path_factory.mktemp("logreg") / "big.csv"
    pd.DataFrame(z, columns=["x1", "x2", "label"]).to_csv(path, index=False)
    return path, z


def _logreg_args(**kw):
    import argparse

    base = dict(x_columns=None, y_column=None, sigma_x=0.5, epsilon_y=1.0, epsilon=None,
                delta=None, R=1.0, c=0.5, approximation="quadrature")  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def test_logreg_summary_path_falls_back_refuses_and_names_bad_labels(big_logreg, tmp_path):
    """Above the threshold: ``--approximation chebyshev`` reads the reports (None here);
    epsilon_y above the summary's range falls back to the exact likelihood with a note; a
    posterior far from the pilot is refused (an ``error``), one at the pilot gets the bound
    as a ``note``; a label that is not 0/1 is an InputError naming the column."""
    from pymc_dpnoise.cli.families.regression import logreg_summary_data

    path, z = big_logreg
    with open_table(str(path), header="auto", sep=None, max_rows=10**6) as t:
        assert logreg_summary_data(t, _logreg_args(approximation="chebyshev")) is None
        data = logreg_summary_data(t, _logreg_args(epsilon_y=12.0))
        assert data["z"].shape == z.shape and "summary" not in data
        assert "epsilon_y = 12 is above 10" in data["note"] and "exact" in data["note"]
        data = logreg_summary_data(t, _logreg_args())
    s = data["summary"]
    assert s.n == len(z) and s.mode_bound <= 1.0
    eye = np.broadcast_to(np.eye(2), (1, 4, 2, 2))

    def post(theta):
        tau = np.broadcast_to([1.0, np.sqrt(0.5)], (1, 4, 2))
        return type("IData", (), {"posterior": {"theta": theta, "cov_tau": tau, "cov_corr": eye}})

    near = np.broadcast_to(s.theta_pilot, (1, 4, 2))
    (kind, text), *rest = data["check_posterior"](post(near))
    assert kind == "note" and not rest and "error bound" in text and "nats" in text
    out = data["check_posterior"](post(near + 1.0))  # some 20 posterior sd away
    assert [k for k, _ in out] == ["note", "error"]
    assert "not accurate at the posterior mean" in out[1][1]

    bad = tmp_path / "bad.csv"
    zb = z.copy()
    zb[5, 2] = 2.0
    pd.DataFrame(zb, columns=["x1", "x2", "label"]).to_csv(bad, index=False)
    with open_table(str(bad), header="auto", sep=None, max_rows=10**6) as t:
        with pytest.raises(InputError, match=r"bad\.csv.*must be 0 or 1"):
            logreg_summary_data(t, _logreg_args())


@pytest.mark.heavy  # a 1e5-report CLI fit and exact PerturbedLogReg evaluations: ~140 CPU-s
# NUTS's first proposals can overflow the LKJ prior's scales (tau = exp(log tau) = inf); the
# logp there is -inf (a rejected proposal), but the gradient of the covariance's construction
# multiplies inf by 0, and the test mode's Python Gemm (NumPy dot) warns about it where
# Numba, which users run, does not
@pytest.mark.filterwarnings("ignore:invalid value encountered in dot:RuntimeWarning")
def test_logreg_above_the_threshold_fits_the_summary_and_agrees_with_the_exact_path(
    big_logreg, tmp_path, capsys
):
    """``fit logreg`` on a file just above ``SUMMARY_THRESHOLD`` reports goes through
    PerturbedLogRegSummary (issue 24): the read line and the likelihood say so, a ``note:``
    gives the bound (nats) at the posterior mean, and at the posterior draws the exact
    PerturbedLogReg and the summary's log density differ by at most the bound, so that the
    exact posterior (the draws importance weighted by exp(exact - summary)) has the same
    means to 0.05 posterior sd."""
    import re

    import arviz as az
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt

    from pymc_dpnoise import PerturbedLogReg, PerturbedLogRegSummary
    from pymc_dpnoise.cli.families.regression import _cov_draws
    from pymc_dpnoise.summaries import summarize_logreg

    path, z = big_logreg
    n, sx, ey = len(z), 0.5, 1.0
    save = tmp_path / "post.nc"
    # 200 + 200 draws (the summary's logp costs O(d^4)): 50 + 50 left the chains unconverged
    # (R-hat 1.29), with draws where the bound and the penalty are large
    argv = ["fit", "logreg", str(path), "--sigma-x", "0.5", "--epsilon-y", "1", *FAST]
    argv += ["--draws", "200", "--tune", "200"]
    assert main([*argv, "--save", str(save)]) == 0
    out = capsys.readouterr()
    assert f"Read {n} reports of d = 2 features" in out.out
    assert "into a logistic-regression summary" in out.out
    assert "Likelihood: z ~ PerturbedLogRegSummary(theta, Σ, sigma_x=0.5, epsilon_y=1" in out.out
    note = re.search(r"note: logistic-regression summary: error bound (\S+) nats", out.err)
    assert note is not None, out.err
    assert float(note.group(1)) <= 1.0

    post = az.from_netcdf(save).posterior
    theta = np.asarray(post["theta"]).reshape(-1, 2)
    cov = _cov_draws(post, 2).reshape(-1, 2, 2)
    s = summarize_logreg(z, sx, ey)  # the summary the CLI built (same data, same seed)
    th, cv = pt.vector("theta", shape=(2,)), pt.matrix("cov", shape=(2, 2))
    exact = pytensor.function(
        [th, cv],
        pm.logp(PerturbedLogReg.dist(theta=th, cov=cv, sigma_x=sx, epsilon_y=ey), z).sum(),
    )
    # the summary's density without its penalty (tol = 1e300), to hold against the bound
    raw = PerturbedLogRegSummary.dist(theta=th, cov=cv, sigma_x=sx, epsilon_y=ey, tol=1e300)
    summ = pytensor.function([th, cv], pm.logp(raw, s.packed))
    pick = np.linspace(0, len(theta) - 1, 16).astype(int)
    diff = np.array([exact(theta[i], cov[i]) - summ(theta[i], cov[i]) for i in pick])
    bound = s.bound(theta[pick], cov=cov[pick])
    assert np.all(np.abs(diff) <= bound), (diff, bound)
    # exact posterior / the CLI's (penalised, tol = 1) posterior, at the draws
    logw = diff + np.maximum(bound - 1.0, 0.0)
    # densities within a factor e^0.1 of each other at every draw: the posteriors agree
    assert np.ptp(logw) < 0.1, logw
    w = np.exp(logw - logw.max())
    w /= w.sum()
    draws = theta[pick]
    mean, sd = draws.mean(axis=0), draws.std(axis=0)
    mean_w = w @ draws
    sd_w = np.sqrt(w @ (draws - mean_w) ** 2)
    assert np.all(np.abs(mean_w - mean) < 0.05 * sd), (mean_w - mean) / sd
    assert np.all(np.abs(sd_w - sd) < 0.05 * sd), (sd_w - sd) / sd


# --------------------------------------------------------------------------------------------
# Before and around sampling (issue 39, rows 4 and 5): rows the sampler would fail on, releases
# inconsistent with the model, and sampler exceptions -- all one line, before anything is sampled
# --------------------------------------------------------------------------------------------


@pytest.fixture
def no_sampling(monkeypatch):
    """pm.sample replaced by a function that records its call and raises a two-line error."""
    import pymc

    calls = []

    def fake_sample(**kwargs):
        calls.append(kwargs)
        raise RuntimeError("All initialization points failed\nCaused by: ErrorCode(4)")

    monkeypatch.setattr(pymc, "sample", fake_sample)
    return calls


def test_row_with_non_finite_loglikelihood_is_refused_before_sampling(
    tmp_path, capsys, no_sampling
):
    """Rows [3, 1e300], --noise gaussian --sigma 2: nutpie printed a Rust backtrace and died of a
    segmentation fault, PyMC's sampler exited 1; now exit 2 in one line, nothing sampled.  The
    count likelihoods refuse a release beyond 2^53 when the model is built (naming it), before
    the CLI's own check of each row's log likelihood at the starting point."""
    p = _write(tmp_path / "c.csv", "y\n3\n1e300\n")
    argv = ["fit", "noisy-binomial", p, "--n", "50", "--noise", "gaussian", "--sigma", "2", *FAST]
    assert main(argv) == 2
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert len(err) == 1, err
    assert "at most 2^53" in err[0] and "1.e+300" in err[0], err
    assert "Sampling" not in out.out and not no_sampling


def test_sampler_exception_is_one_line_exit_2(tmp_path, capsys, no_sampling):
    """Any exception out of the sampler (a Rust panic surfaces in nutpie as a Python exception
    with a multi-line message) ends in one line and exit 2, not a traceback or exit 1."""
    p = _write(tmp_path / "c.csv", "y\n3\n4\n5\n")
    assert main(["fit", "noisy-binomial", p, "--n", "10", "--epsilon", "1", *FAST]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(no_sampling) == 1 and len(err) == 1, err
    assert "sampling with pymc failed: All initialization points failed (" in err[0], err


@pytest.mark.parametrize(
    ("opts", "sds"),
    [
        (["--epsilon", "1"], "36.8"),  # Laplace, scale 1: sd sqrt(2)
        (["--noise", "discrete-laplace", "--scale", "2"], None),
        (["--noise", "gaussian", "--sigma", "3"], "17.3"),
        (["--noise", "discrete-gaussian", "--rho", "0.5"], None),
    ],
)
def test_releases_far_beyond_n_warn_before_sampling(tmp_path, capsys, no_sampling, opts, sds):
    """Releases around 150 with --n 100 (52 beyond n at most): the fit ran to p = 0.9995
    without a word; now a warning naming the worst row, before sampling.  Releases within
    reach of [0, n] (the same file with --n 150) do not warn."""
    rows = [148, 150, 152, 149, 151, 150]
    p = _write(tmp_path / "c.csv", "y\n" + "\n".join(map(str, rows)) + "\n")
    base = ["fit", "noisy-binomial", p, *opts, *FAST]
    assert main([*base, "--n", "100"]) == 2  # the fake sampler's error
    out = capsys.readouterr()
    warning = [ln for ln in out.err.splitlines() if ln.startswith("warning:")]
    assert len(warning) == 1, out.err
    assert (
        "data row 3: release 152 lies 52 beyond the count's range [0, 100] (--n 100)"
        in (warning[0])
    )
    assert "6 rows like it" in warning[0] and "inconsistent" in warning[0]
    if sds:
        assert f", {sds} noise sds" in warning[0]
    assert out.err.index("warning:") < out.err.index("sampling with pymc failed")
    assert main([*base, "--n", "150"]) == 2
    assert "warning:" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("model", "opts", "far", "near", "text"),
    [
        # Laplace scale (upper - lower) / epsilon = 10: 495 beyond is 49.5 scales
        ("clipped-normal", ["--lower", "-5", "--upper", "5", "--epsilon", "1"], 500,
         [-20, 0, 30], "release 500 lies 495 beyond the clipping range [-5, 5] (--lower, --upper)"),
        # scale upper / epsilon = 2.5: 200 below 0 is 80 scales
        ("clipped-exponential", ["--upper", "5", "--epsilon", "2"], -200, [1, 6, -3],
         "release -200 lies 200 beyond the clipping range [0, 5] (--upper)"),
        # a sum of 200 records in [0, 8], scale 8 / 1: 400 beyond 1600 is 50 scales
        ("truncated-exponential", ["--upper", "8", "--n", "200", "--epsilon", "1"], 2000,
         [100, 1610, 5], "release 2000 lies 400 beyond [n * 0, n * 8]"),
    ],
)  # fmt: skip
def test_releases_far_beyond_the_declared_range_warn_before_sampling(
    tmp_path, capsys, no_sampling, model, opts, far, near, text
):
    """Clipped reports and truncated sums far beyond what their bounds and noise allow were
    fitted without a word (only the count commands warned); now one warning naming the row,
    before sampling.  Releases within reach of the range do not warn."""
    for rows, warns in ((near, False), ([*near, far], True)):
        p = _write(tmp_path / "r.csv", "z\n" + "\n".join(map(str, rows)) + "\n")
        assert main(["fit", model, p, *opts, *FAST]) == 2  # the fake sampler's error
        err = capsys.readouterr().err
        warning = [ln for ln in err.splitlines() if ln.startswith("warning:")]
        assert len(warning) == int(warns), err
        if warns:
            assert f"data row {len(rows)}: {text}" in warning[0], warning[0]
            assert "inconsistent" in warning[0]
            assert err.index("warning:") < err.index("sampling with pymc failed")


def test_truncated_normal_sums_far_beyond_their_range_warn_before_sampling(
    tmp_path, capsys, no_sampling
):
    """The pair (sum x, sum x^2) of 50 records in [-6, 8] lies in [-300, 400] x [0, 3200]; a
    sum of squares 60 noise scales above 3200 warns (naming its row), one within reach or a
    negative sum within [-300, 400] does not."""
    from pymc_dpnoise.mechanisms import truncated_normal_sum_sensitivity

    scale = float(truncated_normal_sum_sensitivity(-6.0, 8.0))  # epsilon 1
    near = [(-290.0, 100.0), (10.0, 3200.0 + scale), (390.0, 3000.0)]
    far = (10.0, 3200.0 + 60 * scale)
    for rows, warns in ((near, False), ([*near, far], True)):
        body = "".join(f"{a},{b},50\n" for a, b in rows)
        p = _write(tmp_path / "tn.csv", "sx,sx2,records\n" + body)
        assert main(["fit", "truncated-normal", p, *MODEL_ARGS["truncated-normal"], *FAST]) == 2
        err = capsys.readouterr().err
        warning = [ln for ln in err.splitlines() if ln.startswith("warning:")]
        assert len(warning) == int(warns), err
        if warns:
            assert f"data row {len(rows)}: release {far[1]:g}" in warning[0], warning[0]
            assert "for sum x^2" in warning[0] and "inconsistent" in warning[0]


def test_tail_bound_is_a_bound():
    """The warning's bound on P(noise >= d) is never below the exact tail of any kind."""
    from scipy import stats

    from pymc_dpnoise.cli._checks import _log_tail_bound

    d = np.array([0.5, 1.0, 2.0, 5.0, 20.0, 60.0])
    for b in (0.3, 1.0, 4.0):
        exact = {
            "laplace": stats.laplace(scale=b).logsf(d),
            # P(N >= d) for integer N with pmf prop. to exp(-|k| / b): exp(-ceil(d)/b)/(1+e^-1/b)
            "discrete-laplace": -np.ceil(d) / b - np.log1p(np.exp(-1 / b)),
            "rounded-laplace": stats.laplace(scale=b).logsf(np.ceil(d) - 0.5),
        }
        for kind, tail in exact.items():
            assert np.all(_log_tail_bound(kind, b, d) >= tail - 1e-12), (kind, b)
    for s in (0.5, 2.0, 10.0):
        k = np.arange(-4000, 4001)
        logw = -(k**2) / (2 * s * s)
        dg = [np.logaddexp.reduce(logw[k >= x]) - np.logaddexp.reduce(logw) for x in d]
        assert np.all(_log_tail_bound("discrete-gaussian", s, d) >= np.array(dg) - 1e-12), s
        assert np.all(_log_tail_bound("gaussian", s, d) >= stats.norm(scale=s).logsf(d)), s


@pytest.mark.parametrize("model", sorted(MODEL_ARGS))
def test_pre_sampling_checks_pass_every_example_file(files, capsys, no_sampling, model):
    """The per-row log-likelihood check (compiled for the Python VM) runs on every model and
    passes its valid example file without a warning: the fit reaches the sampler."""
    argv = ["fit", model, f"{files[model]}.csv", *MODEL_ARGS[model], *FAST]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(no_sampling) == 1, err
    assert [ln for ln in err if "warning" in ln or "error" in ln] == [err[-1]], err
    assert "sampling with pymc failed: All initialization points failed" in err[-1]


def test_check_rows_names_the_first_row_with_a_non_finite_loglikelihood():
    """The CLI's pre-sampling check (cli/_checks.py): a row whose log likelihood at the starting
    point is -inf is refused as an InputError naming the row and the parameter values (a
    release beyond 2^53 is refused earlier by the count likelihoods themselves)."""
    import pymc as pm

    from pymc_dpnoise.cli._base import InputError
    from pymc_dpnoise.cli._checks import check_rows

    z = np.array([0.5, 2.0, 0.25])  # row 2 lies outside Uniform(0, 1): log likelihood -inf
    with pm.Model() as model:
        p = pm.Beta("p", 2.0, 2.0)
        pm.Uniform("z", 0.0, p + 0.5, observed=z)
    with pytest.raises(InputError, match=r"data row 2: release 2 has log-likelihood -inf"):
        check_rows(model, {"z": z}, "test")
    check_rows(model, {"z": z[[0, 2]]}, "test") if False else None


@pytest.mark.parametrize(
    "sampler",
    ["pymc", pytest.param("nutpie", marks=NATIVE)],  # nutpie compiles with Numba
)
def test_a_real_sampler_failure_is_one_input_error(sampler):
    """A real failure of each sampler (every jittered starting point has log density -inf,
    while the unjittered point the CLI's row check uses is finite) ends as the CLI's one-line
    InputError (exit 2), not a traceback: PyMC's "Initial evaluation of model at starting
    point failed!", nutpie's initialization error."""
    import pymc as pm
    import pytensor.tensor as pt

    from pymc_dpnoise.cli._base import InputError
    from pymc_dpnoise.cli._checks import sample

    if sampler == "nutpie":
        pytest.importorskip("nutpie")
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, initval=0.0)
        pm.Potential("only_at_zero", pt.switch(pt.eq(x, 0.0), 0.0, -np.inf))
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    with pytest.raises(InputError, match=f"^sampling with {sampler} failed: ") as err:
        sample(pm, sampler, model=model, draws=5, tune=5, chains=1, cores=1,
               progressbar=False, random_seed=1, compute_convergence_checks=False)  # fmt: skip
    assert "\n" not in str(err.value), str(err.value)
