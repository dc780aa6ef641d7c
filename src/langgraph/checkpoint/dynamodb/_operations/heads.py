"""Thread heads and activity, I/O-free: the item that says a thread is alive.

What lives here: ``on_activity`` (called explicitly by every operation that
writes a thread, and by reads with ``touch_on_read``) keeps the head's TTL
ahead of the thread's activity; ``thread_alive`` answers whether a thread
whose items carry an old stamp is still alive; ``index_shards`` and
``grow_index`` keep the threads index's layout, the shard count heads are
spread over (``schema.THREADS_INDEX_MIN_SHARDS``), which doubles when a
head write meets the index's partition limit.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb._engine.ops import Op, Sleep, ddb
from langgraph.checkpoint.dynamodb._engine.pacing import ThrottlePacer
from langgraph.checkpoint.dynamodb._operations.deleting import reap_thread
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.schema import ATTR

#: Without a TTL, the head's activity time is refreshed this often (seconds).
TRACK_WINDOW = 300

#: How long a process trusts the shard count it read (seconds). Another
#: process may grow it meanwhile; counts only grow, so the older one is
#: still recorded and every head written with it is still listed.
LAYOUT_SECONDS = 300


def _layout_key() -> dict[str, Any]:
    return {ATTR.PK: {"S": schema.LAYOUT_PK}, ATTR.SK: {"S": schema.THREADS_LAYOUT_SK}}


def index_write_throttled(exc: ClientError) -> bool:
    """Whether DynamoDB throttled a write because a threads-index partition was over its limit.

    DynamoDB names the cause in ``ThrottlingReasons`` (API reference,
    ``ThrottlingReason``: ``IndexWriteKeyRangeThroughputExceeded``, its
    resource the index's ARN).
    """
    if error_code(exc) != "ProvisionedThroughputExceededException":
        return False
    suffix = f"/index/{schema.THREADS_INDEX_NAME}"
    return any(
        isinstance(r, dict)
        and str(r.get("reason", "")).startswith("IndexWrite")
        and str(r.get("resource", "")).endswith(suffix)
        for r in exc.response.get("ThrottlingReasons") or []
    )


def shard_count_of(item: dict[str, Any] | None) -> int:
    """The shard count a layout item records; the minimum when there is none.

    A value this library never writes (only an operator's grant can write
    the item) reads as the minimum, which every writer reading it then uses
    too: readers and writers still agree.
    """
    n = shapes.whole_number((item or {}).get("n"))
    return n if n is not None and valid_shard_count(n) else schema.THREADS_INDEX_MIN_SHARDS


def valid_shard_count(n: object) -> bool:
    """Whether ``n`` is a shard count this library writes: a power of two within the bounds."""
    return (
        isinstance(n, int)
        and not isinstance(n, bool)
        and schema.THREADS_INDEX_MIN_SHARDS <= n <= schema.THREADS_INDEX_MAX_SHARDS
        and n & (n - 1) == 0
    )


def index_shards(s: BaseDynamoDBSaver, *, fresh: bool = False) -> Op[int]:
    """The threads index's shard count: cached, or one ``GetItem`` of the layout item.

    ``fresh`` reads it strongly consistent, past the cache (a listing, which
    must query every shard a writer may have used).
    """
    now = clock.now()
    cached = None if fresh else s.caches.index_shards(now)
    if cached is not None:
        return cached
    try:
        resp = yield ddb("get_item", TableName=s.table_name, Key=_layout_key(), ConsistentRead=fresh)
    except ClientError as exc:
        if error_code(exc) != "AccessDeniedException":
            raise
        # A tenant grant from before the layout item: the minimum is a count
        # every table records, so heads written with it are always listed.
        n = schema.THREADS_INDEX_MIN_SHARDS
    else:
        n = shard_count_of(resp.get("Item"))
    s.caches.note_index_shards(n, now + LAYOUT_SECONDS)
    return n


def grow_index(s: BaseDynamoDBSaver, seen: int) -> Op[int]:
    """Double the shard count from ``seen`` (grow-only, capped); the count now recorded.

    Two writers that both met the limit double it once: the condition only
    lets the count move up, and the loser reads the winner's count.
    """
    target = min(seen * 2, schema.THREADS_INDEX_MAX_SHARDS)
    if target > seen:
        try:
            yield ddb(
                "update_item",
                TableName=s.table_name,
                Key=_layout_key(),
                UpdateExpression="SET #n = :n, #f = :f",
                ConditionExpression="attribute_not_exists(#n) OR #n < :n",
                ExpressionAttributeNames={"#n": "n", "#f": ATTR.FORMAT},
                ExpressionAttributeValues={
                    ":n": {"N": str(target)},
                    ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
                },
            )
        except ClientError as exc:
            # Lost the race (fine), or a tenant's grant that may only read it.
            if error_code(exc) not in ("ConditionalCheckFailedException", "AccessDeniedException"):
                raise
    return (yield from index_shards(s, fresh=True))


def thread_alive(s: BaseDynamoDBSaver, thread_id: str) -> Op[bool]:
    """Whether a thread whose items carry a past activity stamp is still alive.

    Items are stamped at write time; a thread stays alive as long as its
    head's TTL is in the future (activity anywhere in the thread moves
    it). Past it, the thread is gone as a whole, even before the reaper
    has deleted its items: reads never see a half-expired thread.
    """
    resp = yield ddb(
        "get_item",
        TableName=s.table_name,
        Key={ATTR.PK: {"S": s.keys.pk(thread_id)}, ATTR.SK: {"S": schema.HEAD_SK}},
        ConsistentRead=True,
    )
    head = resp.get("Item")
    ttl = None if head is None else shapes.int_attr(head, ATTR.TTL)
    return ttl is not None and ttl >= int(clock.now())


def _refresh_window(s: BaseDynamoDBSaver) -> int:
    if not s.ttl:
        return TRACK_WINDOW
    return max(60, min(86_400, s.ttl // 10))


def on_activity(s: BaseDynamoDBSaver, thread_id: str, root: str | None = None) -> Op[None]:
    """Keep the thread head ahead of the thread's activity.

    The head's TTL is set to ``now + ttl + window`` and rewritten only
    when this process last left it below ``now + ttl``: at most one
    extra write per ``window`` per thread per process, never one per
    step, and never a rewrite of old items. A write on a lineage that a
    delete recorded in the head (``root`` in its dead set) leaves the head
    as it is: a late run cannot put a deleted thread back in the index.
    """
    if not s.track_threads:
        return
    now = int(clock.now())
    need = now + (s.ttl or 0)
    cached = s.caches.head_until(thread_id)
    if cached is not None and cached >= need:
        return
    until = need + _refresh_window(s)
    names = {
        "#t": ATTR.KIND,
        "#f": ATTR.FORMAT,
        "#thr": ATTR.THREAD_ID,
        "#ts": ATTR.THREAD_SHARD,
        "#ua": ATTR.UPDATED_AT,
    }
    values: dict[str, Any] = {
        ":t": {"S": schema.META_ITEM},
        ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
        ":thr": {"S": thread_id},
        ":ua": {"N": str(int(clock.now() * 1000))},
    }
    kwargs: dict[str, Any] = {}
    conditions: list[str] = []
    sets = "#t = :t, #f = :f, #thr = :thr, #ts = :ts, #ua = :ua"
    if s.ttl:
        names["#ttl"] = ATTR.TTL
        values[":ttl"] = {"N": str(until)}
        sets += ", #ttl = :ttl"
        # Never move a head backwards (another process may be ahead).
        conditions.append("(attribute_not_exists(#ttl) OR #ttl < :ttl)")
        kwargs["ReturnValues"] = "UPDATED_OLD"
    if root is not None:
        names["#dr"] = ATTR.DEAD
        values[":root"] = {"S": root}
        conditions.append("(attribute_not_exists(#dr) OR NOT contains(#dr, :root))")
    if conditions:
        kwargs["ConditionExpression"] = " AND ".join(conditions)
    shards = yield from index_shards(s)
    pacer = ThrottlePacer()
    while True:
        shard = {":ts": {"S": schema.thread_shard(thread_id, shards)}}
        try:
            head_write = ddb(
                "update_item",
                TableName=s.table_name,
                Key={ATTR.PK: {"S": s.keys.pk(thread_id)}, ATTR.SK: {"S": schema.HEAD_SK}},
                UpdateExpression="SET " + sets,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={**values, **shard},
                **kwargs,
            )
            # Not paced by the driver: an index throttle is answered here.
            resp = yield dataclasses.replace(head_write, paced=False)
            break
        except ClientError as exc:
            if index_write_throttled(exc):
                # botocore has backed off already: the index shard is at its
                # partition's limit. Spread heads wider and write this one there.
                grown = yield from grow_index(s, shards)
                if grown > shards:
                    shards = grown
                    continue
            # Any other throttle, or the index at its widest: wait, as the driver would.
            delay = pacer.next_delay(exc)
            if delay is not None:
                yield Sleep(delay)
                continue
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            s.caches.note_head(thread_id, need)
            return
    s.caches.note_head(thread_id, until)
    old = shapes.int_attr(resp.get("Attributes", {}), ATTR.TTL)
    if old is not None and old < now:
        # The thread had expired and nobody reaped it yet. Readers already
        # treat its old items as gone: remove them before they reappear.
        yield from reap_thread(s, thread_id, expired_before=now - 1)
