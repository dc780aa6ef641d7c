"""The agent example of docs/infrastructure.md synthesizes, cdk-nag clean (issue 13, item 2).

The block is run as written, in a fresh interpreter, from a folder outside the
repository that holds only the user's own ``my_lambdas/my_agent/handler.py``.
Bundling is skipped (``aws:cdk:bundling-stacks = []`` through
``CDK_CONTEXT_JSON``): the wheel test and the packaging test run the bundler.
cdk-nag runs as the block adds it, so an unacknowledged finding fails the synth.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

REPO = Path(__file__).resolve().parents[2]


def _example() -> str:
    text = (REPO / "docs" / "infrastructure.md").read_text()
    section = text[text.index("## Using the construct in your own app") :]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    (block,) = [b for b in blocks if "lambda_.Function(" in b][:1]
    return block


def test_docs_agent_example_is_nag_clean(tmp_path: Path) -> None:
    (tmp_path / "my_lambdas" / "my_agent").mkdir(parents=True)
    (tmp_path / "my_lambdas" / "my_agent" / "handler.py").write_text(
        "def handler(event, context):\n    return {}\n"
    )
    (tmp_path / "app.py").write_text(_example())
    out = tmp_path / "cdk.out"
    env = {
        **os.environ,
        "CDK_OUTDIR": str(out),
        "CDK_CONTEXT_JSON": json.dumps({"aws:cdk:bundling-stacks": []}),
        "CDK_VALIDATION": "false",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    proc = subprocess.run(
        [sys.executable, "app.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    report = json.loads((out / "validation-report.json").read_text())
    (nag,) = [r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    assert nag["violations"] == [], nag["violations"]
    template = json.loads((out / "Agents.template.json").read_text())
    handlers = sorted(
        r["Properties"]["Handler"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function"
    )
    (agent,) = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Handler"] == "my_agent.handler.handler"
    ]
    # docs/lambda.md measured about 160 MB in a cold function: Lambda's 128 MB default is too little.
    assert agent["Properties"].get("MemorySize", 128) >= 160, agent["Properties"].get("MemorySize")
    assert (
        "CheckpointsTableName" in template["Outputs"]
        and "CheckpointsPrunerFunctionName" in template["Outputs"]
    )
    assert handlers == [
        "langgraph.checkpoint.dynamodb.lambdas.maintenance.handler",
        "langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler",
        "langgraph.checkpoint.dynamodb.lambdas.pruner.handler",
        "langgraph.checkpoint.dynamodb.lambdas.reaper.handler",
        "my_agent.handler.handler",
    ]
