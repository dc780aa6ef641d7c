"""Reading a whole thread for maintenance, I/O-free: its items, its outline, its keys.

What lives here: the reads every maintenance verb starts from (``load_thread``,
the payload-free ``load_outline``, ``load_within`` which picks one of them by a
byte budget, ``load_thread_keys``), the S3 references an item holds, and the
plain batch delete of items the verbs end with.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.ops import Op, ddb
from langgraph.checkpoint.dynamodb._operations import requests
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import (
    Item,
    ThreadItems,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
    ThreadTooLargeError,
)
from langgraph.checkpoint.dynamodb.schema import ATTR


def load_thread(s: BaseDynamoDBSaver, thread_id: str, *, max_bytes: int | None = None) -> Op[ThreadItems]:
    """Every item of a thread, strongly consistent.

    ``max_bytes``: the most item bytes (DynamoDB's size rule) a table-wide job
    may hold for one thread. Past it the read stops, one Query page (1 MB)
    beyond at most, and raises ``ThreadTooLargeError``.
    """
    items = yield from _read_pages(thread_id, thread_query(s, thread_id), max_bytes)
    return ThreadItems.from_items(thread_id, items)


def _read_pages(thread_id: str, kwargs: dict[str, Any], max_bytes: int | None) -> Op[list[Item]]:
    items: list[Item] = []
    held = 0
    while True:
        resp = yield ddb("query", **kwargs)
        page = resp.get("Items", [])
        if max_bytes is not None:
            held += sum(shapes.item_size(it) for it in page)
            if held > max_bytes:
                raise ThreadTooLargeError(thread_id, held, max_bytes)
        items.extend(page)
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


#: What prune and expiry decide on, besides payloads: keys and whole ids, lineage
#: (parent, root, delta needs, tombstones' dead roots), activity stamps and TTLs,
#: blob ages. A few hundred bytes per item, whatever the item holds.
OUTLINE_ATTRS: tuple[str, ...] = (
    ATTR.PK,
    ATTR.SK,
    ATTR.KIND,
    ATTR.KEY,
    ATTR.CHECKPOINT_ID,
    ATTR.PARENT_ID,
    ATTR.ROOT,
    ATTR.DELTA_NEEDS,
    ATTR.DEAD,
    ATTR.CREATED,
    ATTR.EXPIRES,
    ATTR.TTL,
)


def load_outline(s: BaseDynamoDBSaver, thread_id: str, *, max_bytes: int | None = None) -> Op[ThreadItems]:
    """A thread's items without their payloads (``OUTLINE_ATTRS``), strongly consistent.

    What a table-wide job holds of a thread too large to hold whole: memory
    then grows with the number of items, not with what they carry. Past
    ``max_bytes`` of outline the read stops (``ThreadTooLargeError``).
    """
    kwargs = thread_query(s, thread_id)
    names = {f"#o{i}": attr for i, attr in enumerate(OUTLINE_ATTRS)}
    kwargs["ExpressionAttributeNames"].update(names)
    kwargs["ProjectionExpression"] = ", ".join(names)
    items = yield from _read_pages(thread_id, kwargs, max_bytes)
    return ThreadItems.from_items(thread_id, items, outline=True)


def load_within(s: BaseDynamoDBSaver, thread_id: str, max_bytes: int) -> Op[ThreadItems]:
    """The thread whole if it fits in ``max_bytes``, else its outline (see ``load_outline``).

    Raises ``ThreadTooLargeError`` only if even the outline does not fit.
    """
    try:
        return (yield from load_thread(s, thread_id, max_bytes=max_bytes))
    except ThreadTooLargeError:
        return (yield from load_outline(s, thread_id, max_bytes=max_bytes))


def load_thread_keys(s: BaseDynamoDBSaver, thread_id: str) -> Op[ThreadItems]:
    """A thread's items as keys only (and whole ids): what to count or delete, in memory by item count."""
    query = thread_query(s, thread_id)
    query["ExpressionAttributeNames"].update({"#sk": ATTR.SK, "#k": ATTR.KEY})
    keys = yield from requests.query_all(**query, ProjectionExpression="#pk, #sk, #k")
    return ThreadItems.from_items(thread_id, keys)


def thread_query(s: BaseDynamoDBSaver, thread_id: str) -> dict[str, Any]:
    """The strongly consistent Query of a thread's whole partition."""
    return dict(
        TableName=s.table_name,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": ATTR.PK},
        ExpressionAttributeValues={":pk": {"S": s.keys.pk(thread_id)}},
        ConsistentRead=True,
    )


def delete_items(s: BaseDynamoDBSaver, items: Iterable[Item]) -> Op[None]:
    yield from requests.ordered_deletes(s.table_name, items)


def item_refs(s: BaseDynamoDBSaver, thread_id: str, item: Item) -> tuple[set[str], set[str]]:
    """``(S3 keys, blob sort keys)`` an item points to."""
    # Whoever can write the thread's items shapes them: a wrong shape is a
    # CorruptPayloadError naming the item (which table-wide jobs record
    # per thread), never a KeyError that stops a job for everyone.
    with shapes.malformed(shapes.item_name(item)):
        return _item_refs(s, thread_id, item)


def _item_refs(s: BaseDynamoDBSaver, thread_id: str, item: Item) -> tuple[set[str], set[str]]:
    s3_keys: set[str] = set()
    blob_sks: set[str] = set()
    ns, kind, _, _ = shapes.parse_sk(item)
    for attr, av in item.items():
        if (attr in (ATTR.BODY, ATTR.METADATA) and "M" in av) or (
            shapes.is_write_attr(attr) and "M" in av["L"][1]
        ):
            try:
                s3_keys.add(s.keys.s3_pointer(thread_id, item, attr))
            except (CorruptPayloadError, KeyError, IndexError, TypeError):
                # A forged pointer (another thread's or tenant's object)
                # is never deleted, nor does it keep anything alive. A
                # body or metadata object is the item's own by its key,
                # whatever the attribute says.
                own = s.keys.own_s3_key(thread_id, item, attr)
                if own is not None and own[1]:
                    s3_keys.add(own[0])
    if kind == schema.CHECKPOINT_ITEM:
        for channel, av in item.get(ATTR.VALUES, {}).get("M", {}).items():
            if "M" not in av:
                continue
            version = av["M"]["v"]["S"]
            # Either location: thresholds may have changed since.
            s3_keys.add(s.keys.value_s3_key(thread_id, ns, channel, version))
            blob_sks.add(schema.blob_sk(ns, channel, version))
    return s3_keys, blob_sks
