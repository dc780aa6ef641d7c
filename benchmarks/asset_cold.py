"""Cold imports of the Lambda handlers from a read-only copy of their asset, as the construct builds it.

``python -m benchmarks.asset_cold`` builds the maintenance functions' asset
(and the example agent's, with LangGraph) for this interpreter's Python
version, copies it read-only as Lambda mounts its code directory, and times,
each in a fresh interpreter (``-I -S``), importing the handlers:

* ``shipped``: the asset as built (bytecode compiled for the runtime);
* ``no bytecode``: the same without its ``__pycache__`` directories (what the
  assets shipped before: Python compiles every module, and cannot save the
  result);

then (against a moto server) the first ``get_tuple`` of the function's saver
and the whole first invocation of a handler. It reports the median of
``--reps`` runs of each, and the import ratio. The target is shipped <= 1.2x a
warm import (bytecode already on disk, which is what "shipped" is: nothing is
compiled at import). Run by ``make bench``.
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
#: What each asset's first invocation does: (module, handler, event).
FIRST_CALL = {
    "maintenance": (
        "langgraph.checkpoint.dynamodb.lambdas.maintenance",
        "handler",
        {"action": "delete_thread", "thread_id": "t-cold"},
    ),
    "agent": (
        "agent.handler",
        "handler",
        {"action": "start", "thread_id": "t-cold", "request_id": "r-1", "input": "export"},
    ),
}
_PROBE = """
import importlib, json, sys, time
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
spec = json.loads(sys.argv[2])
t = time.perf_counter()
for name in spec["modules"]:
    importlib.import_module(name)
import_s = time.perf_counter() - t
from langgraph.checkpoint.dynamodb import handlers
t = time.perf_counter()
handlers.get_saver().get_tuple({"configurable": {"thread_id": "t-none"}})
get_tuple_s = time.perf_counter() - t
class Context:
    def get_remaining_time_in_millis(self):
        return 60_000
module, name, event = spec["call"]
event["thread_id"] += str(time.time_ns())
t = time.perf_counter()
getattr(importlib.import_module(module), name)(event, Context())
call_s = time.perf_counter() - t
import resource
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
print(json.dumps({"import_s": import_s, "first_get_tuple_s": get_tuple_s, "first_invocation_s": call_s,
                  "peak_rss_mb": peak_mb}))
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


def _time(root: Path, kind: str, reps: int, env: dict[str, str]) -> dict[str, float]:
    """Median seconds of each phase over ``reps`` fresh interpreters."""
    spec = {"modules": HANDLERS[kind], "call": FIRST_CALL[kind]}
    runs = []
    for _ in range(reps):
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _PROBE, str(root), json.dumps(spec)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{kind} probe failed: {proc.stderr[-2000:]}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def measure(reps: int = 5) -> dict[str, Any]:
    """Median seconds by asset and variant (import, first get_tuple, first invocation) against a moto server."""
    import boto3

    from benchmarks.orchestrate import AWS_ENV, moto_server
    from langgraph.checkpoint.dynamodb import schema

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, moto_server() as endpoint:
        table = "cold-start"
        boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_table(**schema.table_definition(table))  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AWS_"))}
        env.update(AWS_ENV, AWS_ENDPOINT_URL=endpoint, LANGGRAPH_DYNAMODB_TABLE=table)
        for kind in HANDLERS:
            built = Path(tmp) / kind
            _build(kind, built)
            bare = Path(tmp) / f"{kind}-no-bytecode"
            shutil.copytree(built, bare, ignore=shutil.ignore_patterns("__pycache__"))
            row: dict[str, Any] = {}
            for name, root in (("shipped", built), ("no bytecode", bare)):
                _read_only(root)
                try:
                    row[name] = _time(root, kind, reps, env)
                finally:
                    _writable(root)
            row["no_bytecode_over_shipped"] = row["no bytecode"]["import_s"] / row["shipped"]["import_s"]
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
        for variant in ("shipped", "no bytecode"):
            r = row[variant]
            print(
                f"{kind:12} {variant:12} import {r['import_s'] * 1000:6.0f} ms   first get_tuple "
                f"{r['first_get_tuple_s'] * 1000:5.0f} ms   first invocation {r['first_invocation_s'] * 1000:6.0f} ms"
                f"   peak RSS {r['peak_rss_mb']:5.0f} MB"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
