"""An aioboto3 ``Session`` drives ``AsyncDynamoDBSaver`` (issue 13: the README says it is accepted).

aioboto3 pins an older boto3/aiobotocore than the dev venv holds, so the
proof runs in a venv of its own (cached: see ``tests/dist/venvs.py``) with
aioboto3, LangGraph and this project installed from the checkout with its
``async`` extra, whose ``aiobotocore>=2.13`` lower bound lets pip keep
aioboto3's pin. ``aioboto3_script.py`` runs there against the session's moto
server: setup, put / get_tuple / list / put_writes of values over 64 KB (the
S3 path), delete_thread, and a graph run.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import boto3
import pytest

from tests.dist.venvs import cached_venv, clean_env

pytestmark = [pytest.mark.dist, pytest.mark.timeout(1500)]

#: aioboto3's latest release (2026-11-29); it requires aiobotocore[boto3]==2.25.1.
AIOBOTO3_REQUIREMENTS = ["aioboto3==15.5.0", "langgraph==1.2.24"]


def test_async_saver_on_an_aioboto3_session(moto_endpoint: str, names: dict[str, str]) -> None:
    table, bucket = names["table_name"], names["bucket_name"]
    with cached_venv("aioboto3", AIOBOTO3_REQUIREMENTS) as venv:
        proc = subprocess.run(
            [
                str(venv / "bin" / "python"),
                str(Path(__file__).with_name("aioboto3_script.py")),
                table,
                bucket,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            # No credentials or region in the environment: the script puts
            # them on its aioboto3 Session, so only a saver that uses it works.
            env=clean_env(AWS_ENDPOINT_URL=moto_endpoint),
        )
    assert proc.returncode == 0, proc.stderr[-5000:]
    out = json.loads(proc.stdout)

    # The old stack, really: aioboto3's pins, and our package from that venv.
    assert out["versions"]["aioboto3"] == "15.5.0"
    assert out["versions"]["aiobotocore"].startswith("2."), out["versions"]
    assert tuple(int(x) for x in out["versions"]["boto3"].split(".")[:2]) < (1, 41), out["versions"]
    assert out["package_file"].startswith(str(venv)), out["package_file"]
    assert out["client_class"].startswith("aiobotocore."), out["client_class"]

    # put / get_tuple / list / put_writes, values over 64 KB through S3.
    assert out["get_big_sha"] == out["put_big_sha"]
    assert out["get_small"] == "hello"
    assert sorted(out["pending_writes"]) == [
        ["task-1", "big", out["put_write_sha"]],
        ["task-1", "small", "bye"],
    ]
    assert out["list_ids"] == [out["checkpoint_id"]]
    assert out["s3_keys_before_delete"] >= 2  # the checkpoint's value and the write's

    # delete_thread removes the items and the S3 objects.
    assert out["after_delete"] is None and out["list_after_delete"] == 0
    assert out["s3_keys_after_delete"] == 0

    # A graph, run twice on one thread, read its state back through the saver.
    assert out["graph_log"] == ["step 0", "again", "step 2"]
    assert out["graph_blob_len"] == 100_000
    assert out["graph_history"] >= 4
    assert out["graph_s3_keys"] >= 2
    # ... and it is in the table the test reads with its own client.
    items = boto3.client("dynamodb").scan(TableName=table)["Items"]
    assert any("aioboto3-graph" in it["PK"]["S"] for it in items)
