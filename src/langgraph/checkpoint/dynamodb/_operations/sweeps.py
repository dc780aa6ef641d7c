"""Table-wide jobs, I/O-free: the reaper, the expired purge, the pruner and the orphan sweeper.

What lives here: operations that walk the whole table (or a Streams batch)
resumably, with cursors in the lifecycle state item, and apply the
per-thread operations of ``deleting`` and ``pruning`` to each thread they find. See
``lifecycle`` for the design.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._engine.aws import contain_failure, error_code
from langgraph.checkpoint.dynamodb._engine.ops import Op, ddb, s3
from langgraph.checkpoint.dynamodb._operations import requests
from langgraph.checkpoint.dynamodb._operations.deleting import delete_thread_counted, reap_thread
from langgraph.checkpoint.dynamodb._operations.pruning import prune_thread
from langgraph.checkpoint.dynamodb._operations.threads import (
    item_refs,
    load_thread_keys,
    load_within,
    thread_query,
)
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import (
    ThreadItems,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import ThreadTooLargeError
from langgraph.checkpoint.dynamodb.lifecycle import (
    PrunePolicy,
    SweepReport,
    dedupe,
    default_thread_budget,
    expired_threads_from_stream,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

_UUID_EPOCH_100NS = 0x01B21DD213814000


def reap_expired_stream(s: BaseDynamoDBSaver, event: Mapping[str, Any]) -> Op[SweepReport]:
    """Reap the threads whose heads DynamoDB TTL deleted, from a Streams event."""
    found = dedupe(expired_threads_from_stream(event))
    return (yield from reap_partitions(s, [(t.partition_key, t.expired_at) for t in found]))


def reap_partitions(s: BaseDynamoDBSaver, expired: Iterable[tuple[str, float]]) -> Op[SweepReport]:
    """Reap threads by partition key (from TTL stream records)."""
    report = SweepReport()
    for pk, expired_at in expired:
        owner = s.owner_of(pk)
        if owner is None:
            continue
        saver, thread_id = owner
        report.threads_scanned += 1
        # A stream record is a claim: reap_thread checks the table before deleting anything.
        reap = reap_thread(
            saver,
            thread_id,
            expired_before=expired_at or clock.now(),
            claimed=True,
            max_bytes=default_thread_budget(),
        )
        # A thread whose items cannot be handled is recorded (the Lambda logs
        # the report and counts it in the Errors metric, which the construct's
        # JobErrorsAlarm watches) and the job goes on: see _aws.contain_failure.
        res = yield from contain_failure(reap, report.errors, f"thread {thread_id!r}")
        if res is not None:
            report.add_prune(res)
            if res.checkpoints_deleted:
                report.threads_deleted += 1
    report.complete = True
    return report


def purge_expired(s: BaseDynamoDBSaver, *, deadline: float | None = None) -> Op[SweepReport]:
    """Find expired thread heads through the threads index and reap them.

    For deployments without the stream consumer (or to catch up after
    an outage): what DynamoDB TTL plus the reaper Lambda would do.
    """
    report = SweepReport()
    now = int(clock.now())
    kwargs: dict[str, Any] = dict(
        TableName=s.table_name,
        IndexName=schema.THREADS_INDEX_NAME,
        FilterExpression="#ttl < :now",
        ExpressionAttributeNames={"#ttl": ATTR.TTL},
        ExpressionAttributeValues={":now": {"N": str(now)}},
    )
    while deadline is None or clock.now() < deadline:
        resp = yield ddb("scan", **kwargs)
        report.pages += 1
        for head in resp.get("Items", []):
            owner = s.owner_of(head[ATTR.PK]["S"])
            if owner is None:
                continue
            saver, thread_id = owner
            report.threads_scanned += 1
            ttl = shapes.whole_number(head.get(ATTR.TTL))
            if ttl is None:
                # The filter matched a Number this library never writes (1.5):
                # DynamoDB's own TTL may never expire it either. Recorded, skipped.
                report.errors.append(
                    f"thread {thread_id!r}: head TTL is not a whole number: {head.get(ATTR.TTL)!r:.80}"
                )
                continue
            reap = reap_thread(saver, thread_id, expired_before=ttl, max_bytes=default_thread_budget())
            res = yield from contain_failure(reap, report.errors, f"thread {thread_id!r}")
            if res is not None:
                report.add_prune(res)
                report.threads_deleted += 1
        if "LastEvaluatedKey" not in resp:
            report.complete = True
            break
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
    return report


def _read_cursor(s: BaseDynamoDBSaver, name: str) -> Op[dict[str, Any]]:
    resp = yield ddb(
        "get_item",
        TableName=s.table_name,
        Key={ATTR.PK: {"S": schema.LIFECYCLE_PK}, ATTR.SK: {"S": name}},
        ConsistentRead=True,
    )
    item = resp.get("Item") or {}
    return {
        "cursor": item.get("cur", {}).get("S", ""),
        "last": item.get("last", {}).get("S", ""),
        "cycle": int(item.get("cyc", {}).get("N", "0")),
    }


def _claim_cursor(s: BaseDynamoDBSaver, name: str, old: str, new: str, last: str, cycle: int = 0) -> Op[bool]:
    """Move a cursor from ``old`` to ``new``; False if another run moved it first.

    Two concurrent runs never process the same page: each page is
    claimed by a conditional write before it is worked on.
    """
    try:
        yield ddb(
            "put_item",
            TableName=s.table_name,
            Item={
                ATTR.PK: {"S": schema.LIFECYCLE_PK},
                ATTR.SK: {"S": name},
                ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
                "cur": {"S": new},
                "last": {"S": last},
                # Reaching the end starts a new cycle: a run that sees a
                # newer cycle than the one it started in has finished.
                "cyc": {"N": str(cycle + 1 if not new else cycle)},
                "at": {"N": str(int(clock.now()))},
            },
            ConditionExpression="attribute_not_exists(cur) AND :old = :empty OR cur = :old",
            ExpressionAttributeValues={":old": {"S": old}, ":empty": {"S": ""}},
        )
    except ClientError as exc:
        if error_code(exc) == "ConditionalCheckFailedException":
            return False
        raise
    return True


def run_pruner(
    s: BaseDynamoDBSaver, policy: PrunePolicy, *, deadline: float | None = None, max_pages: int | None = None
) -> Op[SweepReport]:
    """Apply ``policy`` to the table, a claimed page at a time, until ``deadline``.

    Resumes where the previous run stopped (a cursor item in the table);
    reaching the end starts the next cycle from the top on the next run.
    """
    report = SweepReport()
    start_cycle: int | None = None
    while (deadline is None or clock.now() < deadline) and (max_pages is None or report.pages < max_pages):
        state = yield from _read_cursor(s, "pruner")
        if start_cycle is None:
            start_cycle = state["cycle"]
        elif state["cycle"] != start_cycle:
            report.complete = True  # another run finished this cycle
            break
        kwargs: dict[str, Any] = {"TableName": s.table_name}
        if s.track_threads:
            kwargs.update(IndexName=schema.THREADS_INDEX_NAME, Limit=policy.page_size)
        else:
            kwargs.update(
                ProjectionExpression="#pk",
                ExpressionAttributeNames={"#pk": ATTR.PK},
                Limit=policy.page_size * 8,
            )
        if state["cursor"]:
            kwargs["ExclusiveStartKey"] = json.loads(state["cursor"])
        resp = yield ddb("scan", **kwargs)
        new_cursor = json.dumps(resp["LastEvaluatedKey"]) if "LastEvaluatedKey" in resp else ""
        # partition -> (saver, thread, last activity (epoch s) if known); by
        # partition, as two tenants may each have a thread of that name.
        threads: dict[str, tuple[BaseDynamoDBSaver, str, float | None]] = {}
        for it in resp.get("Items", []):
            pk = it[ATTR.PK]["S"]
            owner = s.owner_of(pk)
            # A thread whose items straddle two pages was done with the first
            # (within a cycle: a new cycle starts over, every thread included).
            if owner is None or (state["cursor"] and pk == state["last"]) or pk in threads:
                continue
            # Read leniently: a forged activity time (1.5) raised here, before
            # the page is claimed, would stop every later run at this page.
            ua = shapes.whole_number(it.get(ATTR.UPDATED_AT))
            threads[pk] = (*owner, ua / 1000 if ua is not None else None)
        # The end of a cycle keeps no last thread: the next cycle's first
        # page must not skip the thread that ended this one.
        last_pk = resp["Items"][-1][ATTR.PK]["S"] if resp.get("Items") and new_cursor else ""
        claimed = yield from _claim_cursor(s, "pruner", state["cursor"], new_cursor, last_pk, state["cycle"])
        if not claimed:
            continue  # another run took this page: take the next one
        report.pages += 1
        for saver, thread_id, last_active in threads.values():
            report.threads_scanned += 1
            # One poisoned thread (a parent cycle, a malformed item) must
            # not stop the page: recorded, and the page goes on.
            prune = _prune_one(saver, thread_id, last_active, policy, report)
            yield from contain_failure(prune, report.errors, f"thread {thread_id!r}")
        if not new_cursor:
            report.complete = True
            break
    return report


def _prune_one(
    s: BaseDynamoDBSaver, thread_id: str, last_active: float | None, policy: PrunePolicy, report: SweepReport
) -> Op[None]:
    try:
        # Whole if it fits the budget, else its outline (payloads then streamed a page at a time).
        thread = yield from load_within(s, thread_id, policy.max_thread_bytes)
    except ThreadTooLargeError:
        if policy.idle_days is None:
            raise  # recorded by the caller; the page goes on
        if last_active is None:  # no threads index: the checkpoint ids tell, from the keys alone
            keys = yield from load_thread_keys(s, thread_id)
            last_active = _last_activity(keys)
        if last_active is None or clock.now() - last_active <= policy.idle_days * 86_400:
            raise
        # Idle: deleted from its keys alone, in bounded memory.
        res = yield from delete_thread_counted(s, thread_id, force=True, keys_only=True)
        report.add_prune(res)
        report.threads_deleted += 1
        return
    if not thread.checkpoints:
        return
    if policy.idle_days is not None:
        if last_active is None:
            last_active = _last_activity(thread)
        if last_active is not None and clock.now() - last_active > policy.idle_days * 86_400:
            # Idle that long, a lease still held is a holder long gone: fenced out.
            res = yield from delete_thread_counted(s, thread_id, thread, force=True)
            report.add_prune(res)
            report.threads_deleted += 1
            return
    if policy.keep_last is not None:
        # The thread as just read: prune decides on it (one read, not two).
        # Anything written since is newer than every checkpoint it deletes.
        res = yield from prune_thread(s, thread_id, policy.keep_last, thread)
        report.add_prune(res)


def sweep_orphans(
    s: BaseDynamoDBSaver,
    *,
    grace_seconds: float = 86_400,
    deadline: float | None = None,
    max_pages: int | None = None,
) -> Op[SweepReport]:
    """Delete S3 objects no item points to, older than ``grace_seconds``.

    Such objects are left by a put whose DynamoDB write failed after its
    payloads were uploaded (payloads go first so that no item ever
    points to a missing object), or by a losing first-write-wins write.
    The grace period protects puts in flight.
    """
    report = SweepReport()
    if s.bucket_name is None:
        report.complete = True
        return report
    cutoff = clock.now() - grace_seconds
    root = schema.tenant_s3_prefix(s.s3_key_prefix, s.tenant_prefix) if s.tenant_prefix else s.s3_key_prefix
    start_cycle: int | None = None
    while (deadline is None or clock.now() < deadline) and (max_pages is None or report.pages < max_pages):
        state = yield from _read_cursor(s, "sweeper")
        if start_cycle is None:
            start_cycle = state["cycle"]
        elif state["cycle"] != start_cycle:
            report.complete = True
            break
        kwargs: dict[str, Any] = {"Bucket": s.bucket_name, "Prefix": root, "MaxKeys": 1000}
        if state["cursor"]:
            kwargs["ContinuationToken"] = state["cursor"]
        resp = yield s3("list_objects_v2", **kwargs)
        new_cursor = resp.get("NextContinuationToken", "") if resp.get("IsTruncated") else ""
        claimed = yield from _claim_cursor(s, "sweeper", state["cursor"], new_cursor, "", state["cycle"])
        if not claimed:
            continue
        report.pages += 1
        by_thread: dict[str, list[dict[str, Any]]] = {}
        for obj in resp.get("Contents", []):
            report.s3_objects_scanned += 1
            segment = obj["Key"][len(s.s3_key_prefix) :].split("/", 1)[0]
            by_thread.setdefault(segment, []).append(obj)
        for segment, objs in by_thread.items():
            old = [o for o in objs if o["LastModified"].timestamp() < cutoff]
            if not old:
                continue
            parsed = schema.parse_s3_thread_segment(segment)
            owner = None
            if parsed is not None:
                owner = s.owner_of(schema.partition_key(parsed[1], parsed[0]))
            if owner is None:
                continue
            saver, thread_id = owner
            if saver.keys.s3_thread_prefix(thread_id) != f"{s.s3_key_prefix}{segment}/":
                continue  # a segment this library never writes (e.g. not quoted as it quotes)
            report.threads_scanned += 1
            # A thread whose items cannot be read is skipped (its objects
            # stay: what it references is unknown) and recorded.
            sweep = _sweep_one(s.bucket_name, saver, thread_id, old, report)
            yield from contain_failure(sweep, report.errors, f"thread {thread_id!r}")
        if not new_cursor:
            report.complete = True
            break
    return report


def _sweep_one(
    bucket: str, s: BaseDynamoDBSaver, thread_id: str, old: list[dict[str, Any]], report: SweepReport
) -> Op[None]:
    """Delete the objects of ``old`` (one thread's, past the grace period) that none of its items references.

    The thread's items are read a Query page at a time and only the keys
    they reference are kept, so a thread of any size is swept in bounded memory.
    """
    referenced = yield from _referenced_s3_keys(s, thread_id)
    doomed = [o["Key"] for o in old if o["Key"] not in referenced]
    if doomed:
        yield from requests.delete_s3_keys(bucket, doomed)
        report.s3_objects_deleted += len(doomed)
        gone = set(doomed)
        report.bytes_freed += sum(o.get("Size", 0) for o in old if o["Key"] in gone)


def _referenced_s3_keys(s: BaseDynamoDBSaver, thread_id: str) -> Op[set[str]]:
    """The S3 keys a thread's items point to, read a Query page at a time (never the thread whole)."""
    out: set[str] = set()
    kwargs = thread_query(s, thread_id)
    while True:
        resp = yield ddb("query", **kwargs)
        for it in resp.get("Items", []):
            if shapes.parse_sk(it)[1] in (schema.CHECKPOINT_ITEM, schema.WRITES_ITEM):
                out |= item_refs(s, thread_id, it)[0]
        if "LastEvaluatedKey" not in resp:
            return out
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def uuid6_epoch(checkpoint_id: str) -> float | None:
    """Creation time (epoch seconds) of a uuid6 checkpoint id, or None."""
    try:
        u = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if u.version != 6:
        return None
    n = u.int
    ts = ((n >> 96) << 28) | (((n >> 80) & 0xFFFF) << 12) | ((n >> 64) & 0x0FFF)
    return (ts - _UUID_EPOCH_100NS) / 1e7


def _last_activity(thread: ThreadItems) -> float | None:
    times = [t for _, cid in thread.checkpoints if (t := uuid6_epoch(cid)) is not None]
    return max(times) if times else None
