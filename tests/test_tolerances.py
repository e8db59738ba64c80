"""Every tight tolerance in the tests says why it holds on any IEEE-754 machine.

A literal tolerance below 1e-8 (a keyword named ``*tol*``, ``rel=`` or ``abs=``, a positional
tolerance of ``isclose`` / ``allclose`` / ``assert_allclose`` / ``approx``, or the bound ``c``
of a manual ``error < c`` / ``error <= c * scale``) is a claim about rounding: that the two
sides run the same code, or only correctly rounded operations, or libm calls whose few-ulp
errors are bounded through the expression's condition number.  Such a claim must be written
next to it (a ``#`` comment on its line, the three lines before it or the rest of its
statement), so a tolerance that held on one CPU's libm by luck is visible
(``tests/README.md``, "Tolerances").
"""

import ast
import io
import tokenize
from pathlib import Path

TESTS = Path(__file__).parent
#: tolerances below this need a comment: 1e-8 is about 4.5e7 ulp, beyond any libm difference
#: through a well-conditioned expression
LIMIT = 1e-8
#: functions whose third positional argument on is a tolerance (``approx``: the second)
TOLERANCE_FUNCTIONS = {"isclose": 2, "allclose": 2, "assert_allclose": 2, "approx": 1}


def _literal(node):
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _bound_literals(node):
    """The literals of an error bound on the right of ``<`` / ``<=``: ``c``, ``c * x``,
    ``x * c``."""
    value = _literal(node)
    if value is not None:
        return [(node, value)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return [(n, v) for n in (node.left, node.right) if (v := _literal(n)) is not None]
    return []


def _tolerances(stmt):
    """``(node, text)`` of each literal tolerance in a simple statement: a keyword named
    ``*tol*`` / ``rel`` / ``abs``, a positional tolerance of :data:`TOLERANCE_FUNCTIONS`, or
    the bound of a manual comparison ``error < c`` / ``<= c * scale``."""
    for node in ast.walk(stmt):
        found = []
        if isinstance(node, ast.keyword) and node.arg:
            if "tol" in node.arg or node.arg in ("rel", "abs"):
                found = [(node.value, _literal(node.value), f"{node.arg}=")]
        elif isinstance(node, ast.Call):
            func = node.func
            name = getattr(func, "attr", getattr(func, "id", ""))
            first = TOLERANCE_FUNCTIONS.get(name)
            if first is not None:
                found = [(a, _literal(a), f"{name}(...) ") for a in node.args[first:]]
        elif isinstance(node, ast.Compare):
            for op, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(op, ast.Lt | ast.LtE):
                    found += [(n, v, "bound ") for n, v in _bound_literals(right)]
        for at, value, what in found:
            if isinstance(value, int | float) and 0 < value < LIMIT:
                yield at, f"{what}{value!r}"


def _tight_tolerances_without_comment(source: str):
    """Each tolerance below :data:`LIMIT` whose line, the three lines before it or the rest of
    its statement carry no comment."""
    comments = {
        tok.start[0]
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    }
    missing = []
    for stmt in ast.walk(ast.parse(source)):
        if not isinstance(stmt, ast.stmt) or hasattr(stmt, "body"):
            continue  # simple statements only: a compound one's keywords are in its body
        for node, what in _tolerances(stmt):
            lines = range(node.lineno - 3, max(stmt.end_lineno, node.lineno) + 1)
            if not comments.intersection(lines):
                missing.append((node.lineno, what))
    return missing


def test_the_scan_finds_an_unexplained_tolerance():
    bare = "np.testing.assert_allclose(a, b, rtol=1e-14)\n"
    explained = "# bitwise: the same code on the same values\n" + bare
    assert _tight_tolerances_without_comment(bare) == [(1, "rtol=1e-14")]
    assert _tight_tolerances_without_comment(explained) == []
    assert _tight_tolerances_without_comment("f(x, rtol=1e-7, atol=0)\n") == []
    # every form: keywords named *tol*, positional tolerances, approx, manual bounds
    forms = {
        "assert_allclose(a, b, 1e-10)\n": "assert_allclose(...) 1e-10",
        "assert np.isclose(a, b, 1e-11)\n": "isclose(...) 1e-11",
        "assert a == pytest.approx(b, rel=1e-9)\n": "rel=1e-09",
        "assert abs(a - b) < 1e-12\n": "bound 1e-12",
        "assert err <= 1e-10 * max(1.0, abs(ref))\n": "bound 1e-10",
        "Case(grad_rtol=1e-9)\n": "grad_rtol=1e-09",
    }
    for source, what in forms.items():
        assert _tight_tolerances_without_comment(source) == [(1, what)], source
    assert _tight_tolerances_without_comment("assert x > 1e-300\n") == []  # not a bound
    far = "check(\n    a,\n    b,\n    c,\n    rtol=1e-12,\n)  # a comment after it counts\n"
    assert _tight_tolerances_without_comment(far) == []
    # a comment far above the tolerance, in a long statement, does not
    long = "CASES = [  # cases\n" + "    1,\n" * 5 + "    Case(rtol=1e-10),\n]\n"
    assert _tight_tolerances_without_comment(long) == [(7, "rtol=1e-10")]


def test_every_tolerance_below_1e_8_says_why():
    missing = [
        f"{path.relative_to(TESTS)}:{line}: {what}"
        for path in sorted(TESTS.rglob("*.py"))
        for line, what in _tight_tolerances_without_comment(path.read_text())
    ]
    assert not missing, "tolerances below 1e-8 without a comment saying why:\n" + "\n".join(missing)
