"""``make deploy-local`` end to end: CDK CLI bootstrap + deploy into moto, a graph, destroy.

This is the one slow infra test (a cold run bundles the asset with pip and
installs the CDK CLI with ``npm ci`` if missing). It runs the real script,
into a temporary cloud-assembly folder so it never touches ``cdk.out/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

REPO = Path(__file__).resolve().parents[2]
HANDLER_DIRS = ("agent",)


def _lambda_dir(tmp_path: Path) -> tuple[Path, list[str]]:
    """lambdas/ itself, or a copy with placeholders for handlers not written yet."""
    root = REPO / "lambdas"
    missing = [
        d
        for d in HANDLER_DIRS
        if not (root / d / "handler.py").is_file() or not (root / d / "handler.py").stat().st_size
    ]
    if not missing:
        return root, []
    copy = tmp_path / "lambdas"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for name in missing:
        (copy / name).mkdir(exist_ok=True)
        (copy / name / "handler.py").write_text("def handler(event, context):\n    return {}\n")
    return copy, missing


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None, reason="needs node and npm")
def test_deploy_local(tmp_path: Path) -> None:
    lambdas, placeholders = _lambda_dir(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}
    env["CDK_OUT"] = str(tmp_path / "cdk.out")
    started = time.monotonic()
    proc = subprocess.run(
        ["bash", "infra/deploy_local.sh", "-c", f"lambda_code_dir={lambdas}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=390,
        check=False,
    )
    elapsed = time.monotonic() - started
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    print(f"deploy-local took {elapsed:.0f}s (placeholder handlers: {placeholders or 'none'})")
    assert "table matches schema.table_definition()" in out
    assert "resumed: 'On checkpoints: they are durable" in out
    assert '"aws_cdk": "absent"' in out
    assert "Which export format do you need" in out  # the packaged agent ran: start -> question
    assert "destroyed" in out
    assert elapsed < 300, f"deploy-local took {elapsed:.0f}s"
