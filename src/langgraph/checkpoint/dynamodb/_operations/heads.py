"""Thread heads and activity, I/O-free: the item that says a thread is alive.

What lives here: ``on_activity`` (called explicitly by every operation that
writes a thread, and by reads with ``touch_on_read``) keeps the head's TTL
ahead of the thread's activity; ``thread_alive`` answers whether a thread
whose items carry an old stamp is still alive.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb._engine.ops import Op, ddb
from langgraph.checkpoint.dynamodb._operations.deleting import reap_thread
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.schema import ATTR

#: Without a TTL, the head's activity time is refreshed this often (seconds).
TRACK_WINDOW = 300


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
        ":ts": {"S": schema.thread_shard(thread_id)},
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
    try:
        resp = yield ddb(
            "update_item",
            TableName=s.table_name,
            Key={ATTR.PK: {"S": s.keys.pk(thread_id)}, ATTR.SK: {"S": schema.HEAD_SK}},
            UpdateExpression="SET " + sets,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            **kwargs,
        )
    except ClientError as exc:
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
