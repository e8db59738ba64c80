"""Every tight tolerance in the tests says why it holds on any IEEE-754 machine.

A literal ``rtol=`` / ``atol=`` / ``rel=`` / ``abs=`` below 1e-12 (tighter than a few thousand
ulp) is a claim about rounding: that the two sides run the same code, or only correctly rounded
operations, or libm calls whose few-ulp errors are bounded through the expression's condition
number.  Such a claim must be written next to it (a ``#`` comment on the statement or on the
three lines before it), so a tolerance that held on one CPU's libm by luck is visible
(``tests/README.md``, "Tolerances").
"""

import ast
import io
import tokenize
from pathlib import Path

TESTS = Path(__file__).parent
LIMIT = 1e-12
KEYWORDS = {"rtol", "atol", "rel", "abs"}


def _tight_tolerances_without_comment(source: str):
    comments = {
        tok.start[0]
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    missing = []
    for stmt in ast.walk(ast.parse(source)):
        if not isinstance(stmt, ast.stmt) or hasattr(stmt, "body"):
            continue  # simple statements only: a compound one's keywords are in its body
        for node in ast.walk(stmt):
            if not (isinstance(node, ast.keyword) and node.arg in KEYWORDS):
                continue
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue  # computed tolerances name their derivation in the expression
            if isinstance(value, int | float) and 0 < value < LIMIT:
                lines = range(stmt.lineno - 3, stmt.end_lineno + 1)
                if not comments.intersection(lines):
                    missing.append((node.value.lineno, f"{node.arg}={value!r}"))
    return missing


def test_the_scan_finds_an_unexplained_tolerance():
    bare = "np.testing.assert_allclose(a, b, rtol=1e-14)\n"
    explained = "# bitwise: the same code on the same values\n" + bare
    assert _tight_tolerances_without_comment(bare) == [(1, "rtol=1e-14")]
    assert _tight_tolerances_without_comment(explained) == []
    assert _tight_tolerances_without_comment("f(x, rtol=1e-9, atol=0)\n") == []


def test_every_tolerance_below_1e_12_says_why():
    missing = [
        f"{path.relative_to(TESTS)}:{line}: {what}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, what in _tight_tolerances_without_comment(path.read_text())
    ]
    assert not missing, "tolerances below 1e-12 without a comment saying why:\n" + "\n".join(
        missing
    )
