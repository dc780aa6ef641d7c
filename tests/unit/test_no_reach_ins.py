"""No code reaches a saver's underscored members, or another module's underscored names.

Operations, handlers, the CLI, the lock, benchmarks and tests reach the saver
through named parts (``s.keys``, ``s.caches``, ``s.payloads``, ``s.driver``,
``tenant_view``, ``owner_of``, ``base.write_item``: architecture §3.2).
Underscored names stay inside the module (or, for the saver, the classes)
that define them, so that a module's private parts can change without a
search through the package.

Read from the source (AST), so the check covers code that never runs in
the unit tier. Allowed: ``self.``/``cls.`` (an object's own members) anywhere,
and anything inside the saver's own modules (``base.py``, ``saver.py``,
``aio.py``, and ``_engine/methods.py``, which builds the savers' methods).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG_DIR = ROOT / "src" / "langgraph" / "checkpoint" / "dynamodb"
PKG = "langgraph.checkpoint.dynamodb"
SAVER_MODULES = ("base.py", "saver.py", "aio.py")
SAVER_OWN = {PKG_DIR / name for name in (*SAVER_MODULES, "_engine/methods.py")}
TREES = ("src", "lambdas", "tests", "benchmarks", "demo", "infra")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _sources() -> list[Path]:
    return sorted(p for tree in TREES for p in (ROOT / tree).rglob("*.py") if ".venv" not in p.parts)


def saver_private_members() -> set[str]:
    """Underscored names the saver classes define: methods, class attributes, ``self._x = ...``."""
    names: set[str] = set()
    for module in SAVER_MODULES:
        for cls in ast.walk(ast.parse((PKG_DIR / module).read_text())):
            if not (isinstance(cls, ast.ClassDef) and "Saver" in cls.name):
                continue
            for node in ast.walk(cls):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in cls.body:
                    names.add(node.name)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    names.add(node.target.id)
                elif isinstance(node, ast.Assign):
                    names.update(t.id for t in node.targets if isinstance(t, ast.Name) and node in cls.body)
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                ):
                    names.add(node.attr)
    return {n for n in names if _private(n)}


def _is_module(dotted: str) -> bool:
    path = ROOT / "src" / Path(*dotted.split("."))
    return path.with_suffix(".py").exists() or path.is_dir()


def _module_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> dotted name, for every module of the package this file imports."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PKG):
            for alias in node.names:
                if _is_module(f"{node.module}.{alias.name}"):
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PKG) and alias.asname:
                    aliases[alias.asname] = alias.name
    return aliases


def reach_ins(path: Path, members: set[str]) -> list[str]:
    """Each reach-in in one file, as ``path:line: what``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    aliases = _module_aliases(tree)
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PKG):
            for alias in node.names:
                if _private(alias.name) and not _is_module(f"{node.module}.{alias.name}"):
                    found.append(f"{rel}:{node.lineno}: from {node.module} import {alias.name}")
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        receiver = node.value
        if isinstance(receiver, ast.Name) and receiver.id in aliases:
            if not _is_module(f"{aliases[receiver.id]}.{node.attr}"):
                found.append(f"{rel}:{node.lineno}: {receiver.id}.{node.attr}")
            continue
        own = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
        if node.attr in members and not own and path not in SAVER_OWN:
            found.append(f"{rel}:{node.lineno}: .{node.attr} (a saver's private member)")
    return found


def test_the_saver_has_private_members_to_protect() -> None:
    """The check below looks for real names: the saver does keep private state."""
    members = saver_private_members()
    assert {"_clients", "_io", "_borrowing_copy"} <= members, sorted(members)


def test_no_module_reaches_a_savers_or_another_modules_private_names() -> None:
    members = saver_private_members()
    found = [hit for path in _sources() for hit in reach_ins(path, members)]
    assert not found, "use the named interface instead:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_reach_in(tmp_path: Path) -> None:
    """The checker flags a saver member, a module's private name, and a private import."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from langgraph.checkpoint.dynamodb._operations import read\n"
        "from langgraph.checkpoint.dynamodb._operations.read import _MISS\n"
        "def f(saver):\n"
        "    saver._clients, self._clients\n"
        "    return read._MISS\n"
    )
    found = {hit.split(": ", 1)[1] for hit in reach_ins(sample, saver_private_members())}
    assert found == {
        "from langgraph.checkpoint.dynamodb._operations.read import _MISS",
        "._clients (a saver's private member)",
        "read._MISS",
    }, found
