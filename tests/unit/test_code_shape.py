"""Size limits a new maintainer can hold in their head: files of at most 800 lines, functions of at most 80.

A function's length counts its body from the first statement after the
docstring to its last line (a docstring that explains is never the reason a
function is too long). Complexity (at most 15) is ruff's ``C901``, run by
``make lint``. Shipped code only: ``src/``, ``lambdas/``, ``infra/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("src", "lambdas", "infra")
MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80


def _sources() -> list[Path]:
    return sorted(p for tree in SHIPPED for p in (ROOT / tree).rglob("*.py"))


def function_lengths(path: Path) -> list[tuple[str, int, int]]:
    """``(name, line, code lines)`` of every function and method in a file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        first = body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            body = body[1:]
        if body:
            out.append((node.name, node.lineno, (body[-1].end_lineno or 0) - body[0].lineno + 1))
    return out


def test_no_file_is_over_800_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in _sources()
        if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    }
    assert not long, f"split these files by concern (at most {MAX_FILE_LINES} lines): {long}"


def test_no_function_is_over_80_lines() -> None:
    long = [
        f"{p.relative_to(ROOT)}:{line} {name}: {n} lines"
        for p in _sources()
        for name, line, n in function_lengths(p)
        if n > MAX_FUNCTION_LINES
    ]
    assert not long, f"cut these functions (at most {MAX_FUNCTION_LINES} lines of code):\n" + "\n".join(long)


def test_the_length_counts_code_not_the_docstring(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('def f():\n    """Doc.\n\n    More.\n    """\n    a = 1\n    return a\n')
    assert function_lengths(probe) == [("f", 1, 2)]


def test_the_readme_stays_an_entry_point() -> None:
    """At most 250 lines: depth belongs in docs/ (a contents line, then where a user starts)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md is {len(lines)} lines; move detail into docs/"
    assert any(line.startswith("**Contents:**") for line in lines[:40])
