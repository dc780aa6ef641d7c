"""Interrupt in one process, resume in another with a brand-new saver."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from tests.support.harness import env_for_subprocess, new_thread


def run_flow(action: str, thread: str, mode: str, table: str, bucket: str | None) -> dict:  # type: ignore[type-arg]
    cmd = [sys.executable, "-m", "tests.support.flow_cli", action, thread, "--mode", mode, "--table", table]
    if bucket:
        cmd += ["--bucket", bucket]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env_for_subprocess(), timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("start_mode,resume_mode", [("sync", "async"), ("async", "sync")])
def test_resume_in_a_new_process(
    moto_endpoint: str, names: dict[str, str], start_mode: str, resume_mode: str
) -> None:
    DynamoDBSaver(**names).setup()
    thread = new_thread()
    first = run_flow("start", thread, start_mode, names["table_name"], names["bucket_name"])
    assert first["interrupt"] == {"question": "What exactly should 'export button' do?"}
    assert first["executions"] == {"pm": 1}
    second = run_flow("resume", thread, resume_mode, names["table_name"], names["bucket_name"])
    assert second["result"] == "built: plan for export button (CSV download)"
    # The resuming process re-ran only the interrupted node, then the rest once.
    assert second["executions"] == {"pm": 1, "planner": 1, "developer": 1}
