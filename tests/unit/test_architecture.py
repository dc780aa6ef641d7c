"""The drawing in architecture §3.1 is the package's import graph: every module once, calls only down.

Each row of the drawing names modules (``name.py``, ``pkg/name.py``) or
sub-packages drawn as one box (``cli/``, ``cdk/``, ``lock/``); a module may
import only modules drawn on rows below its own. Imports are read from the
source (AST), function-level ones included; imports under
``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG_DIR = ROOT / "src" / "langgraph" / "checkpoint" / "dynamodb"
PKG = "langgraph.checkpoint.dynamodb"
#: Sub-packages drawn as one box: their modules' imports of each other are their own affair.
BOXES = ("cli", "cdk", "lock")
DOC = ROOT / "docs" / "architecture.md"
TOKEN = re.compile(r"(?<![\w/.])((?:\w+/)?\w+\.py|(?:cli|cdk|lock)/)(?![\w.])")


def unit_of(path: Path) -> str:
    rel = path.relative_to(PKG_DIR)
    return f"{rel.parts[0]}/" if rel.parts[0] in BOXES else rel.as_posix()


def _target(dotted: str) -> str | None:
    rest = dotted[len(PKG) :].lstrip(".")
    if not rest:
        return "__init__.py"
    parts = rest.split(".")
    if parts[0] in BOXES:
        return f"{parts[0]}/"
    path = PKG_DIR.joinpath(*parts)
    if path.with_suffix(".py").exists():
        return path.with_suffix(".py").relative_to(PKG_DIR).as_posix()
    if path.is_dir():
        return (path / "__init__.py").relative_to(PKG_DIR).as_posix()
    return None


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return [node for node in ast.walk(tree) if id(node) not in skip]


def imports_of(path: Path) -> set[str]:
    """The package modules (units) a module imports at run time."""
    me = unit_of(path)
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PKG):
            for alias in node.names:
                target = _target(f"{node.module}.{alias.name}") or _target(node.module)
                if target:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found.update(t for a in node.names if a.name.startswith(PKG) and (t := _target(a.name)))
    found.discard(me)
    return found


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted(PKG_DIR.rglob("*.py")):
        unit = unit_of(path)
        deps = imports_of(path)
        if path.name == "__init__.py" and path.parent != PKG_DIR and unit not in BOXES and not deps:
            continue  # an empty sub-package marker (``lambdas/``, ``_maintenance/``): nothing to draw
        edges.setdefault(unit, set()).update(deps)
    return edges


def drawn_rows() -> list[list[str]]:
    text = DOC.read_text()
    section = text[text.index("### 3.1") : text.index("### 3.2")]
    block = section[section.index("```\n") + 4 :]
    block = block[: block.index("```")]
    rows = []
    for line in block.splitlines():
        if line.lstrip().startswith(("│", "─")) or not line.strip():
            continue  # a description, or a separator
        rows.append(TOKEN.findall(line))
    return rows


def test_every_module_is_drawn_once() -> None:
    drawn = [unit for row in drawn_rows() for unit in row]
    assert len(drawn) == len(set(drawn)), sorted({u for u in drawn if drawn.count(u) > 1})
    actual = set(graph())
    assert not actual - set(drawn), f"draw these modules in architecture §3.1: {sorted(actual - set(drawn))}"
    assert not set(drawn) - actual, f"no longer in the package: {sorted(set(drawn) - actual)}"


def test_calls_only_go_down_the_drawing() -> None:
    row = {unit: i for i, units in enumerate(drawn_rows()) for unit in units}
    upward = [
        f"{unit} (row {row[unit] + 1}) imports {dep} (row {row[dep] + 1})"
        for unit, deps in sorted(graph().items())
        for dep in sorted(deps)
        if unit in row and dep in row and row[dep] <= row[unit]
    ]
    assert not upward, "imports that do not go down architecture §3.1:\n" + "\n".join(upward)


def test_the_check_reads_function_level_imports_and_skips_type_checking(tmp_path: Path) -> None:
    """The reader sees an import inside a function and ignores one under TYPE_CHECKING."""
    probe = PKG_DIR / "_keys.py"  # imports _items at module level
    assert "_items.py" in imports_of(probe)
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from langgraph.checkpoint.dynamodb.base import X\n"
        "def f():\n    from langgraph.checkpoint.dynamodb import _read\n"
    )
    seen = {
        _target(f"{n.module}.{a.name}") or _target(n.module)
        for n in _runtime_nodes(tree)
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith(PKG)
        for a in n.names
    }
    assert seen == {"_read.py"}
