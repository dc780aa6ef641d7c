"""A point-in-time restore of the table, lined up with the versioned bucket (``infra/restore_payloads.py``).

moto's ``RestoreTableToPointInTime`` copies the table as it is now, so the
table restore is done the way PITR would: the items as they were at ``T``
(scanned then) are written into a new table. The bucket side is the real
thing: a versioned moto bucket, deletes by the saver leaving noncurrent
versions, and the helper making the versions current at ``T`` current again.
"""

from __future__ import annotations

import io
import os
import time
import uuid
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from infra.restore_payloads import main, restore_payloads

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.errors import MissingPayloadError


def _scan(table: str) -> list[dict[str, Any]]:
    ddb = boto3.client("dynamodb")
    items, kwargs = [], {"TableName": table, "ConsistentRead": True}
    while True:
        resp = ddb.scan(**kwargs)
        items += resp["Items"]
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _cfg(thread: str, cid: str | None = None) -> dict[str, Any]:
    conf = {"thread_id": thread, "checkpoint_ns": ""}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _thread_with_s3_payloads(saver: DynamoDBSaver, big: bytes) -> tuple[str, dict[str, Any]]:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    thread = f"t-{uuid.uuid4().hex[:12]}"
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = {"big": big}
    cp["channel_versions"] = {"big": "1"}
    config = saver.put(_cfg(thread), cp, {"step": 0}, {"big": "1"})
    saver.put_writes(config, [("w", big[::-1])], "task-1")  # over the S3 threshold too
    return thread, config


def _keys(bucket: str, thread: str) -> set[str]:
    resp = boto3.client("s3").list_objects_v2(
        Bucket=bucket, Prefix=schema.s3_thread_prefix("checkpoints/", thread)
    )
    return {o["Key"] for o in resp.get("Contents", [])}


@pytest.fixture
def versioned(moto_endpoint: str, names: dict[str, str]) -> dict[str, str]:
    DynamoDBSaver(**names).setup()
    boto3.client("s3").put_bucket_versioning(
        Bucket=names["bucket_name"], VersioningConfiguration={"Status": "Enabled"}
    )
    return names


def test_restored_table_reads_its_payloads_after_the_bucket_is_lined_up(versioned: dict[str, str]) -> None:
    table, bucket = versioned["table_name"], versioned["bucket_name"]
    saver = DynamoDBSaver(table_name=table, bucket_name=bucket)
    big = os.urandom(100_000)
    thread, _ = _thread_with_s3_payloads(saver, big)
    at_t = _keys(bucket, thread)
    assert len(at_t) == 2  # the value and the write live in S3
    time.sleep(1.1)
    t = datetime.now(UTC)
    snapshot = _scan(table)  # the table as PITR would restore it to T
    time.sleep(1.1)

    # After T: the thread is deleted (by an agent, the pruner, the reaper...),
    # and a new one starts.
    saver.delete_thread(thread)
    assert _keys(bucket, thread) == set()
    later, _ = _thread_with_s3_payloads(saver, os.urandom(100_000))

    restored = f"{table}-restored"
    target = DynamoDBSaver(table_name=restored, bucket_name=bucket)
    target.setup()
    ddb = boto3.client("dynamodb")
    for item in snapshot:
        ddb.put_item(TableName=restored, Item=item)
    # The restored table alone points at objects maintenance has since deleted.
    with pytest.raises(MissingPayloadError):
        target.get_tuple(_cfg(thread))

    dry = restore_payloads(boto3.client("s3"), bucket, "checkpoints/", t, dry_run=True)
    assert set(dry.restored) == at_t and set(dry.absent_at_t) == _keys(bucket, later)
    assert _keys(bucket, thread) == set()  # a dry run changes nothing

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--bucket", bucket, "--prefix", "checkpoints/", "--at", t.isoformat()]) == 0
    assert "restored 2 objects" in out.getvalue()
    assert _keys(bucket, thread) == at_t
    tup = target.get_tuple(_cfg(thread))
    assert tup.checkpoint["channel_values"]["big"] == big
    assert [(c, v) for _, c, v in tup.pending_writes] == [("w", big[::-1])]
    # Newer objects are left for the orphan sweeper; a second run finds nothing to do.
    assert _keys(bucket, later)
    again = restore_payloads(boto3.client("s3"), bucket, "checkpoints/", t)
    assert again.restored == [] and set(again.unchanged) == at_t


def test_restore_refuses_what_it_cannot_line_up(versioned: dict[str, str], names: dict[str, str]) -> None:
    s3 = boto3.client("s3")
    now = datetime.now(UTC)
    with pytest.raises(ValueError, match="older than the noncurrent-version retention"):
        restore_payloads(s3, names["bucket_name"], "checkpoints/", now - timedelta(days=36))
    with pytest.raises(ValueError, match="timezone-aware"):
        restore_payloads(s3, names["bucket_name"], "checkpoints/", datetime.now())
    plain = f"plain-{uuid.uuid4().hex[:10]}"
    s3.create_bucket(Bucket=plain)
    with pytest.raises(ValueError, match="not versioned"):
        restore_payloads(s3, plain, "checkpoints/", now)
