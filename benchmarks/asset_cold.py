"""Cold imports of the Lambda handlers from a read-only copy of their asset, as the construct builds it.

``python -m benchmarks.asset_cold`` builds the maintenance functions' asset
(and the example agent's, with LangGraph) for this interpreter's Python
version, copies it read-only as Lambda mounts its code directory, and times,
each in a fresh interpreter (``-I -S``), importing the handlers:

* ``shipped``: the asset as built (bytecode compiled for the runtime);
* ``no bytecode``: the same without its ``__pycache__`` directories (what the
  assets shipped before: Python compiles every module, and cannot save the
  result);

and reports the median of ``--reps`` runs of each, and their ratio. The
target is shipped <= 1.2x a warm import (bytecode already on disk, which is
what "shipped" is: nothing is compiled at import). Run by ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HANDLERS = {
    "maintenance": [
        "langgraph.checkpoint.dynamodb.lambdas.pruner",
        "langgraph.checkpoint.dynamodb.lambdas.reaper",
        "langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper",
        "langgraph.checkpoint.dynamodb.lambdas.maintenance",
    ],
    "agent": ["agent.handler"],
}
_PROBE = """
import importlib, json, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
t = time.perf_counter()
for name in json.loads(sys.argv[2]):
    importlib.import_module(name)
print(json.dumps({"import_s": time.perf_counter() - t}))
"""


def _build(kind: str, out: Path) -> None:
    from langgraph.checkpoint.dynamodb.cdk import bundle_python_lambda
    from langgraph.checkpoint.dynamodb.cdk._bundling import pip_platform

    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    if kind == "agent":
        from infra.stacks import langgraph_requirement

        bundle_python_lambda(
            out,
            REPO / "lambdas",
            include=["agent"],
            requirements=[langgraph_requirement()],
            python_version=version,
            platform=pip_platform("x86_64"),
        )
    else:
        bundle_python_lambda(out, None, python_version=version, platform=pip_platform("x86_64"))


def _read_only(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _writable(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


def _time(root: Path, modules: list[str], reps: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    out = []
    for _ in range(reps):
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _PROBE, str(root), json.dumps(modules)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=300,
        )
        out.append(json.loads(proc.stdout.strip().splitlines()[-1])["import_s"])
    return out


def measure(reps: int = 5) -> dict[str, Any]:
    """Median import seconds by asset and variant, and the ratio to the shipped asset."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, modules in HANDLERS.items():
            built = Path(tmp) / kind
            _build(kind, built)
            bare = Path(tmp) / f"{kind}-no-bytecode"
            shutil.copytree(built, bare, ignore=shutil.ignore_patterns("__pycache__"))
            row: dict[str, Any] = {}
            for name, root in (("shipped", built), ("no bytecode", bare)):
                _read_only(root)
                try:
                    row[name] = statistics.median(_time(root, modules, reps))
                finally:
                    _writable(root)
            row["no_bytecode_over_shipped"] = row["no bytecode"] / row["shipped"]
            results[kind] = row
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.asset_cold")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "asset_cold.json")
    args = ap.parse_args(argv)
    res = {"python": sys.version.split()[0], "reps": args.reps, "assets": measure(args.reps)}
    args.out.write_text(json.dumps(res, indent=2) + "\n")
    for kind, row in res["assets"].items():
        print(
            f"{kind:12} shipped {row['shipped'] * 1000:7.0f} ms   no bytecode {row['no bytecode'] * 1000:7.0f} ms"
            f"   ({row['no_bytecode_over_shipped']:.1f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
