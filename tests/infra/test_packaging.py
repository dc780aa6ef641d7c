"""The Lambda asset built by the local bundler imports and runs with nothing else on sys.path.

The same recipe as ``cdk synth``/``deploy`` (``bundle_python_lambda``: pip
``--platform manylinux2014_* --only-binary=:all: --target``, then this
library, then the handlers), built for *this* interpreter's Python version so
it can be executed here: a subprocess with ``-I -S`` imports only the asset
and the standard library, and calls the handlers against the moto server.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "infra" / "asset_probe.py"
HANDLERS = {
    "agent": "agent.handler.handler",
    # The maintenance handlers ship in the library (what CheckpointStore deploys).
    "pruner": "langgraph.checkpoint.dynamodb.lambdas.pruner.handler",
    "reaper": "langgraph.checkpoint.dynamodb.lambdas.reaper.handler",
    "orphan_sweeper": "langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler",
}

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"),
    reason="manylinux wheels only run on Linux x86_64/aarch64",
)


def _present_handlers() -> list[str]:
    """The handlers to run: the library's maintenance handlers, and the agent if lambdas/ has it."""
    agent = REPO / "lambdas" / "agent" / "handler.py"
    return [name for name in HANDLERS if name != "agent" or (agent.is_file() and agent.stat().st_size)]


@pytest.fixture(scope="module")
def asset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    from infra.stacks import langgraph_requirement

    from langgraph.checkpoint.dynamodb.cdk import bundle_python_lambda
    from langgraph.checkpoint.dynamodb.cdk._bundling import pip_platform

    present = _present_handlers()
    out = tmp_path_factory.mktemp("asset")
    bundle_python_lambda(
        out,
        REPO / "lambdas",
        include=[name for name in present if name == "agent"],
        requirements=[langgraph_requirement()] if "agent" in present else [],
        python_version=f"{sys.version_info.major}.{sys.version_info.minor}",
        platform=pip_platform("arm64" if platform.machine() == "aarch64" else "x86_64"),
    )
    return out, present


def test_asset_contents(asset: tuple[Path, list[str]]) -> None:
    root, present = asset
    from langgraph.checkpoint.dynamodb.cdk import library_requirements
    from langgraph.checkpoint.dynamodb.cdk._bundling import library_package_dir

    assert not (root / "bin").exists()  # console scripts point at this host's python
    # Bytecode for the runtime's version (this interpreter's here), valid whatever the sources' mtimes.
    tag = sys.implementation.cache_tag
    sources = [p for p in root.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(sources) > 500
    missing = [p for p in sources if not (p.parent / "__pycache__" / f"{p.stem}.{tag}.pyc").is_file()]
    assert missing == [], missing[:5]
    pyc = (root / "langgraph" / "checkpoint" / "dynamodb" / "__pycache__" / f"saver.{tag}.pyc").read_bytes()
    assert int.from_bytes(pyc[4:8], "little") == 0b01  # hash-based, unchecked (PEP 552)
    assert not [p for p in root.rglob("*.pyc") if p.parent.name != "__pycache__" or f".{tag}." not in p.name]
    lib = library_package_dir()
    shipped = root / "langgraph" / "checkpoint" / "dynamodb"
    expected = sorted(
        p.relative_to(lib).as_posix()
        for p in lib.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.relative_to(lib).parts[0] != "cdk"
    )
    assert (
        sorted(
            p.relative_to(shipped).as_posix()
            for p in shipped.rglob("*")
            if p.is_file() and p.suffix != ".pyc"
        )
        == expected
    )
    assert all((shipped / rel).read_bytes() == (lib / rel).read_bytes() for rel in expected)
    assert not (shipped / "cdk").exists()
    # The library's declared runtime dependencies, resolved as wheels.
    assert {r.split(">")[0].split("<")[0].split("=")[0] for r in library_requirements()} == {
        "boto3",
        "langgraph-checkpoint",
        "zstandard",  # the default codec's, below Python 3.14
    }
    assert list(root.glob("boto3-*.dist-info")) and list(root.glob("langgraph_checkpoint-*.dist-info"))
    assert list(root.glob("zstandard-*.dist-info"))  # the Lambda runtime is 3.12: the marker holds
    for name in (n for n in present if n == "agent"):
        assert (root / name / "handler.py").read_bytes() == (
            REPO / "lambdas" / name / "handler.py"
        ).read_bytes()


def test_packaged_handlers_run_isolated_against_moto(
    moto_endpoint: str, asset: tuple[Path, list[str]]
) -> None:
    import boto3

    from langgraph.checkpoint.dynamodb import schema

    root, present = asset
    name = f"pkg-{uuid.uuid4().hex[:10]}"
    ddb = boto3.client("dynamodb", endpoint_url=moto_endpoint)
    ddb.create_table(**schema.table_definition(name))
    ddb.get_waiter("table_exists").wait(TableName=name)
    boto3.client("s3", endpoint_url=moto_endpoint).create_bucket(Bucket=name)

    spec = {"table": name, "bucket": name, "handlers": {h: HANDLERS[h] for h in present}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(PROBE), str(root), json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["isolation"] == {
        "library": "langgraph/checkpoint/dynamodb/__init__.py",
        "boto3": "boto3/__init__.py",
        "aws_cdk": "absent",
    }
    assert report["saver"]["s3_objects"] >= 1
    if "agent" in present:
        assert report["agent"]["question"]
        assert "CSV, admins only" in report["agent"]["result"]
    assert set(report) == {"isolation", "saver", *present}


#: Imports the handlers from a read-only asset and counts the modules compiled from source.
_COLD_IMPORT = """
import importlib, importlib._bootstrap_external as ext, json, sys
sys.dont_write_bytecode = True
root, names = sys.argv[1], json.loads(sys.argv[2])
sys.path.insert(0, root)
compiled = []
original = ext.SourceLoader.source_to_code
def counting(self, data, path, *a, **k):
    compiled.append(str(path))
    return original(self, data, path, *a, **k)
ext.SourceLoader.source_to_code = counting
for name in names:
    importlib.import_module(name.rsplit(".", 1)[0])
print(json.dumps({"compiled": [p for p in compiled if p.startswith(root)], "modules": len(sys.modules)}))
"""


def test_a_cold_start_from_the_read_only_asset_compiles_nothing(
    asset: tuple[Path, list[str]], tmp_path: Path
) -> None:
    """Lambda's code directory is read-only: every module must come from the shipped bytecode."""
    import shutil
    import stat

    root, present = asset
    copy = tmp_path / "task"
    shutil.copytree(root, copy)
    for p in copy.rglob("*.py"):  # an asset zip keeps no timestamps: sources newer than their pycs
        os.utime(p)
    for p in [copy, *copy.rglob("*")]:  # as Lambda mounts it: nothing writable
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        proc = subprocess.run(
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                _COLD_IMPORT,
                str(copy),
                json.dumps([HANDLERS[h] for h in present]),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=180,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        assert report["modules"] > 300  # the handlers, boto3, LangGraph... really imported
        assert report["compiled"] == [], report["compiled"][:5]
    finally:
        for p in [copy, *copy.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_bytecode_is_compiled_for_the_runtime_not_the_host(tmp_path: Path) -> None:
    """Another minor version's pycs come from that version's interpreter; without one, a warning and no pyc."""
    import warnings

    from langgraph.checkpoint.dynamodb.cdk._bundling import bytecode_interpreter, compile_bytecode

    (tmp_path / "m.py").write_text("X = 1\n")
    host = (sys.version_info.major, sys.version_info.minor)
    others = [f"3.{m}" for m in range(9, 15) if (3, m) != host]
    found = next((v for v in others if bytecode_interpreter(v)), None)
    if found is not None:
        assert compile_bytecode(tmp_path, found)
        assert [p.name for p in (tmp_path / "__pycache__").iterdir()] == [
            f"m.cpython-{found.replace('.', '')}.pyc"
        ]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert not compile_bytecode(tmp_path, "3.99")
    assert "ships without bytecode" in str(seen[0].message)
    assert not list(tmp_path.rglob("*.cpython-399.pyc"))
