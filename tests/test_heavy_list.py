"""The measured-heavy list (tests/heavy_tests.txt) names tests that exist, and they are marked."""

import subprocess
import sys
from pathlib import Path

import heavy_list

ROOT = Path(__file__).resolve().parent.parent


def test_every_listed_test_exists_and_is_marked_heavy():
    ids = heavy_list.listed()
    if not ids:
        return
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--co",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "heavy",
            *sorted({i.split("::")[0] for i in ids}),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    collected = {ln.strip() for ln in out.stdout.splitlines() if "::" in ln}
    missing = sorted(ids - collected)
    assert not missing, f"listed in heavy_tests.txt but not collected as heavy: {missing[:10]}"
