"""Packaging: the async extra co-installs with langchain-aws; imports stay lean."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_async_extra_resolves_next_to_langchain_aws(tmp_path: Path) -> None:
    """aioboto3 15.5 pins boto3 < 1.40.62 and cannot; our async extra (aiobotocore) can."""
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            str(report),
            f"{ROOT}[async]",
            "langchain-aws>=1.9",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    chosen = {
        i["metadata"]["name"].lower(): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    assert "langchain-aws" in chosen and "aiobotocore" in chosen
    major, minor, patch = (int(x) for x in chosen["boto3"].split(".")[:3])
    assert (major, minor, patch) >= (1, 43, 64), chosen["boto3"]


def test_importing_the_saver_stays_lean() -> None:
    """Lambda cold starts: the package import pulls no aiobotocore, CDK or CLI."""
    code = (
        "import sys, langgraph.checkpoint.dynamodb as m; m.DynamoDBSaver; "
        "bad = [n for n in ('aiobotocore', 'aws_cdk', 'langgraph.checkpoint.dynamodb.cli', "
        "'langgraph.checkpoint.dynamodb.cdk', 'moto') if n in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
