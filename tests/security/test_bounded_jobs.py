"""Table-wide jobs hold a bounded amount of any one thread (issue 26, #7).

A tenant with its own grant can write a partition of hundreds of MB. The
pruner, the sweeper and expiry read a thread before they act on it; reading
all of it killed the pruner's Lambda on the same page every cycle, so no
thread after it was ever pruned or expired. Now a job holds a thread whole
only within ``PrunePolicy.max_thread_bytes``; a larger one is pruned or
reaped from its *outline* (keys, lineage, stamps: no payloads), its payloads
passing one Query page at a time. Only an outline over the budget (items the
tenant shaped to make even that large) is recorded in the report's errors,
and the job goes on; an idle one is still deleted, from its keys alone.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from collections import Counter
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import DynamoDBSaver, clock, schema
from langgraph.checkpoint.dynamodb.errors import ThreadTooLargeError
from langgraph.checkpoint.dynamodb.lifecycle import DEFAULT_THREAD_BYTES, PrunePolicy, default_thread_budget
from tests.support.harness import cfg, new_thread, uuid6_at

MIB = 1024 * 1024
#: What the tenant stuffs into its own partition: 12 items of 300 KB (3.6 MB).
STUFFING = 12


def _chain(saver: DynamoDBSaver, thread: str, steps: int, at: float | None = None) -> None:
    """``steps`` checkpoints, with ids stamped ``at`` (epoch seconds) if given."""
    config: Any = cfg(thread)
    for step in range(steps):
        cp = {**empty_checkpoint(), "id": uuid6_at(at + step) if at is not None else str(uuid6())}
        cp["channel_values"] = {"x": f"{step}"}
        cp["channel_versions"] = {"x": str(step + 1)}
        config = saver.put(config, cp, {"step": step}, {"x": str(step + 1)})


def _stuff(table: str, thread: str, count: int = STUFFING, *, in_outline: bool = False) -> None:
    """Raw writes, as the tenant's own grant allows: large items under the thread's partition.

    ``in_outline``: the 300 KB sit in an attribute the outline reads (a parent
    id), so that even the thread's outline is too large to hold.
    """
    ddb = boto3.client("dynamodb")
    for i in range(count):
        bulk = {schema.ATTR.PARENT_ID: {"S": "p" * 300_000}} if in_outline else {}
        ddb.put_item(
            TableName=table,
            Item={
                "PK": {"S": schema.partition_key(thread)},
                # Well-formed blob items (what the tenant's grant lets it write), 300 KB each.
                "SK": {"S": schema.blob_sk("", f"junk-{i:03d}", "1")},
                schema.ATTR.BLOB: {"B": os.urandom(300_000 if not in_outline else 10)},
                schema.ATTR.FORMAT: {"N": "1"},
                **bulk,
            },
        )


def _items_of(table: str, thread: str) -> list[dict[str, Any]]:
    pages = (
        boto3.client("dynamodb")
        .get_paginator("query")
        .paginate(
            TableName=table,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": schema.partition_key(thread)}},
            ProjectionExpression="PK, SK, #b, #body",
            ExpressionAttributeNames={"#b": schema.ATTR.BLOB, "#body": schema.ATTR.BODY},
        )
    )
    return [it for page in pages for it in page["Items"]]


def _queries_by_partition(saver: DynamoDBSaver) -> Counter[str]:
    """Query pages of whole items (no projection) the saver reads, by partition."""
    counts: Counter[str] = Counter()

    def count(params: dict[str, Any], **_: Any) -> None:
        values = params.get("ExpressionAttributeValues") or {}
        if ":pk" in values and "ProjectionExpression" not in params:
            counts[values[":pk"]["S"]] += 1

    saver.clients["dynamodb"].meta.events.register("provide-client-params.dynamodb.Query", count)
    return counts


@pytest.fixture
def saver(moto_endpoint: str, names: dict[str, str]) -> Any:
    s = DynamoDBSaver(**names)
    s.setup()
    yield s
    s.close()


def test_a_huge_thread_is_pruned_in_bounded_memory(saver: DynamoDBSaver, names: dict[str, str]) -> None:
    """9 MB of a tenant's items, a 1 MiB budget: pruned from its outline, never held whole."""
    threads = [new_thread() for _ in range(4)]
    for t in threads:
        _chain(saver, t, 4)
    huge = threads[1]
    _stuff(names["table_name"], huge, count=30)
    latest = saver.get_tuple(cfg(huge))
    assert latest is not None

    tracemalloc.start()
    try:
        report = saver.run_pruner(PrunePolicy(keep_last=1, page_size=10, max_thread_bytes=1 * MIB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert report.complete and report.threads_scanned == 4 and report.errors == []
    for t in threads:
        assert len(list(saver.list(cfg(t)))) == 1, t  # every thread pruned, the huge one too
    got = saver.get_tuple(cfg(huge))
    assert got is not None and got.checkpoint == latest.checkpoint
    # The stuffing (blobs nothing references, past the grace period) went with the rest.
    assert not [it for it in _items_of(names["table_name"], huge) if schema.ATTR.BLOB in it]
    assert report.blobs_deleted == 30 and report.bytes_freed >= 30 * 300_000
    # A page at a time: the whole thread (9 MB) was never in memory at once.
    assert peak < 6 * MIB, f"peak {peak / MIB:.1f} MiB"


def test_a_thread_whose_outline_is_too_large_is_recorded_and_the_pruner_goes_on(
    saver: DynamoDBSaver, names: dict[str, str]
) -> None:
    threads = [new_thread() for _ in range(4)]
    for t in threads:
        _chain(saver, t, 4)
    hostile = threads[1]
    _stuff(names["table_name"], hostile, in_outline=True)
    queries = _queries_by_partition(saver)

    report = saver.run_pruner(PrunePolicy(keep_last=1, page_size=10, max_thread_bytes=1 * MIB))

    assert report.complete and report.threads_scanned == 4
    (error,) = report.errors
    assert error.startswith(f"thread {hostile!r}: ThreadTooLargeError:")
    for t in threads:
        kept = list(saver.list(cfg(t)))
        assert len(kept) == (4 if t == hostile else 1), t  # the others pruned, the hostile one left as it was
    # Stopped past the budget: 1 MiB needs at most two 1 MB pages, not the whole 3.6 MB.
    assert queries[schema.partition_key(hostile)] <= 3


@pytest.mark.parametrize("index", [True, False], ids=["threads-index", "no-index"])
def test_an_idle_huge_thread_is_still_deleted_from_its_keys(
    names: dict[str, str], monkeypatch: pytest.MonkeyPatch, moto_endpoint: str, index: bool
) -> None:
    """Idle by the threads index's activity time, or (no index) by its checkpoint ids, read as keys only."""
    saver = DynamoDBSaver(**names, track_threads=index)
    saver.setup()
    live, idle = new_thread(), new_thread()
    real = time.time
    monkeypatch.setattr(clock, "now", lambda: real() - 10 * 86_400)  # written ten days ago
    _chain(saver, idle, 3, at=real() - 10 * 86_400)
    monkeypatch.setattr(clock, "now", real)
    _chain(saver, live, 3)
    _stuff(names["table_name"], idle)
    queries = _queries_by_partition(saver)

    report = saver.run_pruner(PrunePolicy(keep_last=1, idle_days=2, max_thread_bytes=1 * MIB))

    assert report.errors == [] and report.threads_deleted == 1
    assert report.checkpoints_deleted == 3 + 2  # the idle thread's three, the live one's older two
    assert saver.get_tuple(cfg(idle)) is None
    # What any delete leaves (head, tombstone, lock); the stuffing went with the checkpoints.
    left = _items_of(names["table_name"], idle)
    assert left and not [it["SK"]["S"] for it in left if schema.ATTR.BLOB in it or schema.ATTR.BODY in it]
    assert len(list(saver.list(cfg(live)))) == 1
    assert queries[schema.partition_key(idle)] <= 3  # never read whole: 3.6 MB is four pages or more
    saver.close()


@pytest.mark.parametrize("stuffing", ["payloads", "outline"])
def test_expiry_reaps_a_huge_thread_and_records_only_an_outline_too_large(
    saver: DynamoDBSaver, names: dict[str, str], monkeypatch: pytest.MonkeyPatch, stuffing: str
) -> None:
    ttl_saver = DynamoDBSaver(**names, ttl=60)
    small, huge = new_thread(), new_thread()
    real = time.time
    monkeypatch.setattr(clock, "now", lambda: real() - 3600)  # expired an hour ago
    _chain(ttl_saver, small, 2)
    _chain(ttl_saver, huge, 2)
    monkeypatch.setattr(clock, "now", real)
    _stuff(names["table_name"], huge, in_outline=stuffing == "outline")
    # The jobs' default budget (an eighth of a Lambda's memory, 8 MiB at least), made small here.
    monkeypatch.setattr(
        "langgraph.checkpoint.dynamodb._operations.sweeps.default_thread_budget", lambda: 1 * MIB
    )

    report = ttl_saver.purge_expired()

    assert ttl_saver.get_tuple(cfg(small)) is None
    if stuffing == "outline":
        assert [e.split(":")[0] for e in report.errors] == [f"thread {huge!r}"]
        assert len(_items_of(names["table_name"], huge)) >= 2 + STUFFING  # left as it was
    else:  # reaped from its outline, like any expired thread
        assert report.errors == [] and report.threads_deleted == 2
        assert ttl_saver.get_tuple(cfg(huge)) is None
        assert not [it for it in _items_of(names["table_name"], huge) if schema.ATTR.BLOB in it]
    ttl_saver.close()


def test_the_budget_from_the_environment() -> None:
    assert default_thread_budget({}) == DEFAULT_THREAD_BYTES
    assert default_thread_budget({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024"}) == 128 * MIB
    assert default_thread_budget({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128"}) == 16 * MIB
    assert default_thread_budget({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "40"}) == 8 * MIB  # the floor
    assert PrunePolicy.from_env({"PRUNE_MAX_THREAD_MB": "2.5"}).max_thread_bytes == int(2.5 * MIB)
    assert PrunePolicy.from_env({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"}).max_thread_bytes == 64 * MIB
    with pytest.raises(ValueError, match="max_thread_bytes"):
        PrunePolicy(max_thread_bytes=1000)
    with pytest.raises(ValueError, match="PRUNE_MAX_THREAD_MB"):
        PrunePolicy.from_env({"PRUNE_MAX_THREAD_MB": "lots"})


def test_the_error_names_the_thread_and_the_fix() -> None:
    err = ThreadTooLargeError("t-1", 2_000_000, 1_048_576)
    assert "'t-1'" in str(err) and "1,048,576" in str(err) and "PRUNE_MAX_THREAD_MB" in str(err)
