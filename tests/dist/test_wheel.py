"""The README's documented paths, from a built wheel in a fresh virtualenv (issue 13).

Nothing here imports the checkout: the wheel is built from it, installed with
the ``all`` extra into a new venv under ``tmp_path``, and every step runs that
venv's interpreter or console script from a folder outside the repository,
with no ``PYTHONPATH``. Steps:

* the wheel's metadata: license file, classifiers, extras, the maintenance
  handlers inside the package;
* ``langgraph-dynamodb local`` (the console script), then the README's sync
  and async Quick start snippets, unchanged, with the environment it prints;
* the README's CDK snippet as a user's own app file, synthesized with the real
  bundler: the maintenance functions' asset holds the installed library.

Offline-capable: the wheels the venv needs are kept in a wheelhouse
(``LANGGRAPH_DYNAMODB_WHEELHOUSE``, default ``~/.cache/langgraph-checkpoint-dynamodb-s3/wheelhouse``)
filled by ``pip download`` the first time; later runs install with
``--no-index`` from it. The asset bundling uses pip's own cache as
``make synth`` does.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = Path(
    os.environ.get(
        "LANGGRAPH_DYNAMODB_WHEELHOUSE",
        Path.home() / ".cache" / "langgraph-checkpoint-dynamodb-s3" / "wheelhouse",
    )
)

pytestmark = pytest.mark.timeout(900)


def _run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    assert proc.returncode == 0, f"{cmd}:\n{(proc.stdout + proc.stderr)[-4000:]}"
    return proc


def _python_blocks(section_title: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index(section_title)
    end = text.find("\n## ", start + len(section_title))
    return re.findall(r"```python\n(.*?)```", text[start : end if end > 0 else None], flags=re.S)


def _clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH, no AWS settings from the host: only what a step is given."""
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "PIP_CERT", "PIP_FIND_LINKS", "PIP_DEFAULT_TIMEOUT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)], timeout=300
    )
    (whl,) = out.glob("langgraph_checkpoint_dynamodb_s3-*.whl")
    return whl


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    root = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", str(root)], timeout=120)
    py = str(root / "bin" / "python")
    req = f"{wheel}[all]"
    # --no-compile: byte-compiling aws-cdk-lib's sources would double the install time.
    offline = [
        py,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-compile",
        "--no-index",
        "--find-links",
        str(WHEELHOUSE),
        req,
    ]
    if (
        WHEELHOUSE.is_dir()
        and subprocess.run(offline, capture_output=True, check=False, timeout=600).returncode == 0
    ):
        return root
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    _run([py, "-m", "pip", "download", "--quiet", "--dest", str(WHEELHOUSE), req], timeout=900)
    _run(offline, timeout=600)
    return root


def test_wheel_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = zf.read(meta_name).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: MIT" in meta
    assert "Classifier: Programming Language :: Python :: 3.12" in meta
    assert "Project-URL: " in meta
    for extra in ("langgraph", "async", "cdk", "local", "all"):
        assert f"Provides-Extra: {extra}" in meta
    assert "Provides-Extra: zstd" not in meta  # zstandard is a dependency: no extra to name
    assert re.search(r"Requires-Dist: langgraph<2,>=1\.2\.24; extra == 'langgraph'", meta)
    # The default codec writes zstd: every install below 3.14 (which has it built in) must read it.
    assert re.search(r"Requires-Dist: zstandard>=0\.22; python_version < ['\"]3\.14['\"]", meta), meta
    for name in ("pruner", "reaper", "orphan_sweeper"):
        assert f"langgraph/checkpoint/dynamodb/lambdas/{name}.py" in names
    for name in ("ui.css", "ui.js"):  # the inspector's assets (`langgraph-dynamodb ui`) ship in the package
        assert f"langgraph/checkpoint/dynamodb/cli/ui_static/{name}" in names
    assert not [n for n in names if n.startswith(("tests/", "lambdas/", "infra/"))]


@pytest.fixture(scope="module")
def local_endpoint(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """``langgraph-dynamodb local`` from the venv: the environment it prints."""
    cwd = tmp_path_factory.mktemp("local")
    proc = subprocess.Popen(
        [str(venv / "bin" / "langgraph-dynamodb"), "--json", "local", "--port", "0"],
        cwd=cwd,
        env=_clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        info = json.loads(line)
        assert info["endpoint_url"].startswith("http://127.0.0.1:")
        yield info["env"]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_quick_start_runs_against_local(venv: Path, local_endpoint: dict[str, str], tmp_path: Path) -> None:
    """The README's two snippets, as written, against what `local` created and printed."""
    blocks = _python_blocks("## Quick start")
    sync, asyncio_ = blocks[0], blocks[1]
    assert "DynamoDBSaver(" in sync and "AsyncDynamoDBSaver(" in asyncio_
    env = _clean_env(**local_endpoint)
    for name, code in (("sync", sync), ("async", asyncio_)):
        script = tmp_path / f"quickstart_{name}.py"
        script.write_text(code)
        out = _run([str(venv / "bin" / "python"), str(script)], cwd=tmp_path, env=env, timeout=120)
        assert "'greeting': 'hi'" in out.stdout, out.stdout
    # Where the code came from, and that the async saver reaches the bucket
    # `local` made (a value over the S3 threshold used to fail with NoSuchBucket).
    check = (
        "import asyncio, os, langgraph.checkpoint.dynamodb as m\n"
        "from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver\n"
        "from langgraph.checkpoint.base import empty_checkpoint\n"
        "async def main():\n"
        "    async with AsyncDynamoDBSaver.from_env() as s:\n"
        "        cp = empty_checkpoint(); cp['channel_values'] = {'big': os.urandom(200_000)}\n"
        "        cp['channel_versions'] = {'big': '1'}\n"
        "        cfg = {'configurable': {'thread_id': 'big', 'checkpoint_ns': ''}}\n"
        "        await s.aput(cfg, cp, {}, {'big': '1'})\n"
        "        got = await s.aget_tuple(cfg)\n"
        "        print(m.__file__, len(got.checkpoint['channel_values']['big']))\n"
        "asyncio.run(main())\n"
    )
    out = _run([str(venv / "bin" / "python"), "-c", check], cwd=tmp_path, env=env, timeout=120)
    where, size = out.stdout.split()
    assert where.startswith(str(venv)) and size == "200000", out.stdout


def test_readme_cdk_snippet_synthesizes_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    """A user's own CDK app: `CheckpointStore(stack, "Checkpoints")` bundles the installed library."""
    (block,) = [b for b in _python_blocks("## Infrastructure") if "CheckpointStore(" in b]
    (tmp_path / "app.py").write_text(block)
    out = tmp_path / "cdk.out"
    env = _clean_env(CDK_OUTDIR=str(out), CDK_VALIDATION="false")
    _run([str(venv / "bin" / "python"), "app.py"], cwd=tmp_path, env=env, timeout=600)
    (template_path,) = out.glob("*.template.json")
    template = json.loads(template_path.read_text())
    functions = [
        r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"
    ]
    assert sorted(f["Handler"] for f in functions) == [
        "langgraph.checkpoint.dynamodb.lambdas.maintenance.handler",
        "langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler",
        "langgraph.checkpoint.dynamodb.lambdas.pruner.handler",
        "langgraph.checkpoint.dynamodb.lambdas.reaper.handler",
    ]
    (asset_key,) = {f["Code"]["S3Key"].removesuffix(".zip") for f in functions}
    asset = out / f"asset.{asset_key}"
    lib = asset / "langgraph" / "checkpoint" / "dynamodb"
    for name in ("pruner", "reaper", "orphan_sweeper"):
        assert (lib / "lambdas" / f"{name}.py").is_file()
    assert not (lib / "cdk").exists()  # the construct's own code is not deployed
    assert list(asset.glob("boto3-*.dist-info")) and list(asset.glob("langgraph_checkpoint-*.dist-info"))
    # The functions run Python 3.12: they read zstd payloads (the default codec) with zstandard.
    assert list(asset.glob("zstandard-*.dist-info"))
    # The library in the asset is the installed wheel's, byte for byte.
    site = next((venv / "lib").glob("python3.*/site-packages/langgraph/checkpoint/dynamodb"))
    assert (lib / "lambdas" / "pruner.py").read_bytes() == (site / "lambdas" / "pruner.py").read_bytes()
