"""The drawing in architecture §3.1 is the package's import graph: wings by layer, calls only down.

The package's top level is its public face; everything else lives in a
*wing*, a sub-package drawn as one box (``_engine/``, ``_parts/``,
``_operations/``, ``lock/``, ``tools/``, ``lambdas/``, ``cli/``, ``cdk/``).
Each row of the drawing names top-level modules (``name.py``) or wings; a
unit may import only units drawn on rows below its own. Inside a wing, the
modules' imports of each other must not run in a circle. Imports are read
from the source (AST), function-level ones included; imports under
``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG_DIR = ROOT / "src" / "langgraph" / "checkpoint" / "dynamodb"
PKG = "langgraph.checkpoint.dynamodb"
#: The wings, each drawn as one box.
WINGS = ("_engine", "_parts", "_operations", "lock", "tools", "lambdas", "cli", "cdk")
DOC = ROOT / "docs" / "architecture.md"
TOKEN = re.compile(rf"(?<![\w/.])(\w+\.py|(?:{'|'.join(WINGS)})/)(?![\w.])")
#: The public face: what a user imports at the top level, nothing else.
MAX_TOP_LEVEL_FILES = 15
MAX_FLOORS = 10


def unit_of(path: Path) -> str:
    rel = path.relative_to(PKG_DIR)
    return f"{rel.parts[0]}/" if rel.parts[0] in WINGS else rel.as_posix()


def _module_path(dotted: str) -> Path | None:
    """The file of a package module (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``), if any."""
    rest = dotted[len(PKG) :].lstrip(".")
    path = PKG_DIR.joinpath(*rest.split(".")) if rest else PKG_DIR
    if path.with_suffix(".py").exists():
        return path.with_suffix(".py")
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    return None


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return [node for node in ast.walk(tree) if id(node) not in skip]


def imported_files(tree: ast.AST) -> set[Path]:
    """The package files a module's run-time imports load (a name that is a module counts as it)."""
    found: set[Path] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PKG):
            for alias in node.names:
                target = _module_path(f"{node.module}.{alias.name}") or _module_path(node.module)
                if target:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found.update(t for a in node.names if a.name.startswith(PKG) and (t := _module_path(a.name)))
    return found


def imports_of(path: Path) -> set[str]:
    """The units (top-level modules and wings) a module imports at run time, its own excepted."""
    found = {unit_of(p) for p in imported_files(ast.parse(path.read_text()))}
    found.discard(unit_of(path))
    return found


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted(PKG_DIR.rglob("*.py")):
        edges.setdefault(unit_of(path), set()).update(imports_of(path))
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


def test_every_unit_is_drawn_once() -> None:
    drawn = [unit for row in drawn_rows() for unit in row]
    assert len(drawn) == len(set(drawn)), sorted({u for u in drawn if drawn.count(u) > 1})
    actual = set(graph())
    assert not actual - set(drawn), f"draw these in architecture §3.1: {sorted(actual - set(drawn))}"
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


def test_the_top_level_is_the_public_face_and_floors_are_few() -> None:
    top = sorted(p.name for p in PKG_DIR.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_FILES, f"{len(top)} top-level modules: move the private ones into a wing"
    assert not [n for n in top if n.startswith("_") and n not in ("__init__.py", "__main__.py")], top
    assert len(drawn_rows()) <= MAX_FLOORS


def _cycle(edges: dict[Path, set[Path]]) -> list[Path] | None:
    """One circle of ``edges``, if any (depth-first, colours)."""
    state: dict[Path, int] = {}
    stack: list[Path] = []

    def visit(node: Path) -> list[Path] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_circle_inside_a_wing() -> None:
    for wing in WINGS:
        files = sorted((PKG_DIR / wing).rglob("*.py"))
        edges = {
            f: {t for t in imported_files(ast.parse(f.read_text())) if t in files and t != f} for f in files
        }
        found = _cycle(edges)
        assert found is None, f"{wing}/: " + " -> ".join(p.relative_to(PKG_DIR).as_posix() for p in found)


def test_the_check_reads_function_level_imports_and_skips_type_checking() -> None:
    """The reader sees an import inside a function and ignores one under TYPE_CHECKING."""
    probe = PKG_DIR / "_parts" / "keys.py"  # imports _parts.shapes at module level
    assert PKG_DIR / "_parts" / "shapes.py" in imported_files(ast.parse(probe.read_text()))
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from langgraph.checkpoint.dynamodb.base import X\n"
        "def f():\n    from langgraph.checkpoint.dynamodb._operations import read\n"
    )
    assert imported_files(tree) == {PKG_DIR / "_operations" / "read.py"}


def test_the_circle_check_finds_a_circle() -> None:
    a, b, c = Path("a"), Path("b"), Path("c")
    assert _cycle({a: {b}, b: {c}, c: {a}}) == [a, b, c, a]
    assert _cycle({a: {b}, b: {c}, c: set()}) is None
