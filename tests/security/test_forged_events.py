"""Events are claims, not facts: a forged Streams record reaps nothing the table says is alive.

The attacker may invoke the reaper function (``lambda:InvokeFunction``) with any
event. Before, a TTL-removal record naming another tenant's partition deleted that
thread, live, with or without TTL. Now the reaper checks the table: only a thread
whose head has expired and whose newest checkpoint's activity stamp is past is
reaped, and never beyond the present.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import DynamoDBSaver, clock, schema
from tests.support.harness import cfg, new_thread, scan_table, shared_store


@pytest.fixture(scope="module")
def store(moto_endpoint: str) -> dict[str, str]:
    return shared_store("forged")


def _record(pk: str, at: float) -> dict[str, Any]:
    """A Streams record exactly as DynamoDB's TTL service writes one for a thread head."""
    return {
        "eventName": "REMOVE",
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        "dynamodb": {
            "Keys": {"PK": {"S": pk}, "SK": {"S": schema.HEAD_SK}},
            "ApproximateCreationDateTime": at,
        },
    }


def _thread(saver: DynamoDBSaver, thread: str) -> None:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"v": "x"}
    cp["channel_versions"] = {"v": "1"}
    stored = saver.put(cfg(thread), cp, {}, {"v": "1"})
    saver.put_writes(stored, [("v", "w")], "task")


def _items(table: str, pk: str) -> int:
    return sum(1 for it in scan_table(table) if it["PK"]["S"] == pk)


@pytest.mark.parametrize(
    ("ttl", "track"), [(None, None), (3600, None), (3600, False)], ids=["no-ttl", "ttl", "ttl-no-head"]
)
@pytest.mark.parametrize("tenant", [None, "victim"], ids=["untenanted", "tenant"])
def test_a_forged_ttl_record_deletes_no_live_thread(
    store: dict[str, str], ttl: int | None, track: bool | None, tenant: str | None
) -> None:
    victim = DynamoDBSaver(
        **store, ttl=ttl, track_threads=track, **({"tenant_prefix": tenant} if tenant else {})
    )
    thread = new_thread()
    _thread(victim, thread)
    pk = victim.partition_key(thread)
    before = _items(store["table_name"], pk)
    assert before >= 2
    # The reaper runs as the stack's untenanted job saver; the attacker picks the time.
    job = DynamoDBSaver(**store)
    for at in (clock.now(), clock.now() + 10 * 365 * 86400):
        report = job.reap_expired_stream({"Records": [_record(pk, at)]})
        assert report.threads_deleted == 0 and report.checkpoints_deleted == 0
    assert _items(store["table_name"], pk) == before
    assert victim.get_tuple(cfg(thread)) is not None


def test_a_really_expired_thread_is_still_reaped(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    saver = DynamoDBSaver(**store, ttl=3600)
    thread = new_thread()
    _thread(saver, thread)
    pk = saver.partition_key(thread)
    later = clock.now() + 2 * 3600
    monkeypatch.setattr(clock, "now", lambda: later)
    # What DynamoDB's TTL does first: remove the head.
    import boto3

    boto3.client("dynamodb").delete_item(
        TableName=store["table_name"], Key={"PK": {"S": pk}, "SK": {"S": schema.HEAD_SK}}
    )
    report = DynamoDBSaver(**store).reap_expired_stream({"Records": [_record(pk, later)]})
    assert report.threads_deleted == 1
    assert DynamoDBSaver(**store).get_tuple(cfg(thread)) is None
