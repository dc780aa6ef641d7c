"""``migrate`` from tables the real ``langgraph-checkpoint-aws`` ``DynamoDBSaver`` wrote (issue 29).

The reference saver pins a boto3 the dev venv's aiobotocore cannot sit next
to, so it runs in a venv of its own (cached: ``tests/dist/venvs.py``):
``checkpoint_aws_script.py`` writes three threads there against the
session's moto server (a small one, a big one with gzip and S3 offload
under a key prefix, and a fork whose branches reuse integer versions), each
stopped at an interrupt (the fork also inside a subgraph, a namespace of
its own). Our migrate then reads them with boto3 (the
package is not installed here), and every graph resumed on our saver
(``Command(resume=...)``, and the fork's other branch by checkpoint id)
finishes exactly as the same resumes do on the reference saver, run
afterwards on the source tables.
"""

from __future__ import annotations

import io
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli
from langgraph.checkpoint.dynamodb.tools.migrate import (
    CheckpointAwsSource,
    CheckpointAwsSourceError,
    MigrationError,
    migrate_thread,
    migrate_threads,
)
from langgraph.checkpoint.dynamodb.tools.transfer import import_marker
from tests.dist import checkpoint_aws_graph as g
from tests.dist.venvs import cached_venv, clean_env

pytestmark = [pytest.mark.dist, pytest.mark.timeout(1800)]

#: The reference saver's release the layout was read from (2026-11-29), and LangGraph as in the dev venv.
REFERENCE_REQUIREMENTS = ["langgraph-checkpoint-aws==1.2.6", "langgraph==1.2.24"]
SCRIPT = Path(__file__).with_name("checkpoint_aws_script.py")
THREADS = ("small", "big", "fork")
PREFIX = "apps/lg"


def _script(venv: Path, endpoint: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [str(venv / "bin" / "python"), str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=clean_env(
            AWS_ENDPOINT_URL=endpoint,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_DEFAULT_REGION="us-east-1",
        ),
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    return dict(json.loads(proc.stdout))


@pytest.fixture(scope="module")
def reference(moto_endpoint: str) -> dict[str, Any]:
    """The reference saver's table and bucket with the three threads, and what it reported of them."""
    suffix = uuid.uuid4().hex[:10]
    table, bucket = f"ref-{suffix}", f"ref-{suffix}"
    boto3.client("dynamodb").create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    boto3.client("s3").create_bucket(Bucket=bucket)
    with cached_venv("checkpoint-aws", REFERENCE_REQUIREMENTS, extras="langgraph") as venv:
        written = _script(venv, moto_endpoint, "write", table, bucket, PREFIX)
    return {"table": table, "bucket": bucket, "venv_args": (moto_endpoint,), **written}


def _items(table: str) -> list[dict[str, Any]]:
    pages = boto3.client("dynamodb").get_paginator("scan").paginate(TableName=table)
    return [it for page in pages for it in page["Items"]]


def _target(names: dict[str, str]) -> DynamoDBSaver:
    saver = DynamoDBSaver(**names)
    saver.setup()
    return saver


def test_the_source_is_the_real_reference_layout(reference: dict[str, Any]) -> None:
    """What the test relies on really happened: the package wrote it, gzip, S3 under the prefix, int versions."""
    assert reference["versions"]["langgraph-checkpoint-aws"] == "1.2.6"
    assert reference["saver_module"].startswith("langgraph_checkpoint_aws.")
    assert reference["versions_seen_types"] == ["int"]
    items = _items(reference["table"])
    assert any(it.get("compression", {}).get("S") == "gzip" for it in items)
    s3 = [it for it in items if it.get("ref_loc", {}).get("S") == "S3"]
    assert s3 and any(it["PK"]["S"].startswith("WRITES_big") for it in s3)  # a write offloaded too
    keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=reference["bucket"])["Contents"]]
    assert keys and all(k.startswith(PREFIX + "/big/") for k in keys)
    subgraph = {it["ns"]["S"] for it in items if it["PK"]["S"].startswith("CHECKPOINT_fork")} - {""}
    assert subgraph and all(ns.startswith("ask:") for ns in subgraph)  # the subgraph's namespace
    fork = reference["history"]["fork"]
    roots = [h for h in fork if h["next"] == ["prep"]]
    assert len(roots) == 1 and sum(h["parent"] == roots[0]["id"] for h in fork) == 2  # two branches


def test_rerun_dry_run_and_a_killed_migration(
    reference: dict[str, Any], names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resumable and idempotent: the renumbered versions are the same on every read."""
    target = _target(names)
    source = CheckpointAwsSource(reference["table"], bucket_name=reference["bucket"], key_prefix=PREFIX)
    plan = migrate_threads(source, target, dry_run=True)
    assert plan["migrated"] == 3 and plan["checkpoints"] > 10 and plan["verified"] == 0
    assert _items(target.table_name) == []
    real_put, calls = target.put, {"n": 0}

    def dying_put(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 3:
            raise RuntimeError("killed")
        return real_put(*args, **kw)

    monkeypatch.setattr(target, "put", dying_put)
    with pytest.raises(MigrationError, match="partial"):
        migrate_thread(source, target, "fork")
    assert import_marker(target, "fork") is not None
    monkeypatch.setattr(target, "put", real_put)
    summary = migrate_threads(source, target)
    statuses = {r["thread_id"]: r["status"] for r in summary["results"]}
    assert statuses == {"fork": "resumed", "small": "migrated", "big": "migrated"}
    assert summary["verified"] == 3 and import_marker(target, "fork") is None
    before = len(_items(target.table_name))
    again = migrate_threads(source, target)
    assert again["skipped"] == 3 and again["checkpoints"] == 0 and len(_items(target.table_name)) == before


def test_cli_from_checkpoint_aws(reference: dict[str, Any], names: dict[str, str]) -> None:
    target = _target(names)
    conn = ("--table", target.table_name, "--bucket", target.bucket_name)
    src = f"checkpoint-aws:{reference['table']}?bucket={reference['bucket']}&prefix={PREFIX}"

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main([*conn, "migrate", "--from", *argv], stdin=io.StringIO(), stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    code, out, err = run(src, "--dry-run")
    assert code == 0, err
    assert "3 thread(s): 3 migrated" in out and "(dry run: nothing written)" in out
    code, out, err = run(src, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["migrated"], summary["verified"]) == (3, 3)
    graph = g.build(target)  # the application's saver reads what the CLI moved byte for byte
    for thread in THREADS:
        assert g.history(graph, thread) == reference["history"][thread]
    code, out, err = run(src)
    assert code == 0 and "0 migrated, 0 resumed, 3 skipped" in out, err
    # The key prefix is not in the items: without it, the S3 pointers say what to pass.
    code, _, err = run(f"checkpoint-aws:{reference['table']}?bucket={reference['bucket']}", "--thread", "big")
    assert code == 1 and "prefix" in err and "not found" in err
    code, _, err = run(f"checkpoint-aws:{reference['table']}", "--thread", "big")
    assert code == 1 and "?bucket=" in err
    code, _, err = run(f"checkpoint-aws:{reference['table']}?bucket=x&colour=red")
    assert code == 2 and "unknown: colour" in err


def test_a_missing_table_is_named(moto_endpoint: str) -> None:
    with pytest.raises(CheckpointAwsSourceError, match="does not exist"):
        CheckpointAwsSource("no-such-table").list_thread_ids()


def test_migrated_threads_read_and_resume_as_on_the_reference(
    reference: dict[str, Any], moto_endpoint: str, names: dict[str, str]
) -> None:
    """Last in the module: the reference saver's resumes go on in the source tables the others read."""
    target = _target(names)
    source = CheckpointAwsSource(reference["table"], bucket_name=reference["bucket"], key_prefix=PREFIX)
    summary = migrate_threads(source, target)
    assert (summary["threads"], summary["migrated"], summary["verified"]) == (3, 3, 3), summary
    assert summary["refused"] == [] and summary["orphans"] == 0
    graph = g.build(target)
    for thread in THREADS:
        # The reference saver's own get_state_history and pending writes, read back from ours.
        assert g.history(graph, thread) == reference["history"][thread], thread
        assert g.pending(target, thread) == reference["pending"][thread], thread
        if thread == "fork":  # the subgraph's checkpoints came too, under their namespace
            assert any(t.config["configurable"]["checkpoint_ns"] for t in target.list(g.cfg(thread)))
        versions = {v for t in target.list(g.cfg(thread)) for v in t.checkpoint["channel_versions"].values()}
        assert all(isinstance(v, str) and len(v) == 51 for v in versions), versions
    # Our side first (the reference's resume changes the source afterwards).
    ours = g.resume_all(graph, reference["branch_a"])
    with cached_venv("checkpoint-aws", REFERENCE_REQUIREMENTS, extras="langgraph") as venv:
        theirs = _script(
            venv,
            moto_endpoint,
            "resume",
            reference["table"],
            reference["bucket"],
            PREFIX,
            reference["branch_a"],
        )["resumed"]
    assert ours == theirs
    assert ours["fork"]["last"]["log"][-1] == "done blue blob=0"
    assert ours["branch_a"]["log"][-1] == "done red blob=0" and "forked" not in ours["branch_a"]["log"]
    assert "forked" in ours["fork"]["last"]["log"]
    assert ours["big"]["last"]["log"][-1] == f"done blue blob={len(g.big_blob())}"
