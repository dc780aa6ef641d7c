"""Where a written value goes, I/O-free: inline, held by its checkpoint, a blob item or S3.

What lives here: the placement rule (``value_location``), the value
references a checkpoint item carries, and staging the blob items and S3
uploads a write needs. Writing (``write``) and re-homing (``_maintenance.keep``) use
it; nothing here decides *when* to write.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from langchain_core.runnables import RunnableConfig

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Op, ddb, s3
from langgraph.checkpoint.dynamodb._operations import requests
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import (
    AttributeValue,
    Item,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, Location
from langgraph.checkpoint.dynamodb.schema import ATTR


def _uuid6ish() -> str:
    return uuid.uuid4().hex


def value_location(s: BaseDynamoDBSaver, size: int) -> Location:
    """Where a new channel version of ``size`` packed bytes is stored.

    ``inline``: copied into every checkpoint item that has it; ``c``:
    held by the checkpoint item that introduces it, referenced by later
    ones; ``s3``: its own object.
    """
    if s.bucket_name is not None and size > s.s3_threshold:
        return "s3"
    if size <= s.inline_threshold:
        return "inline"
    return "c"


def lineage_root_for(
    s: BaseDynamoDBSaver, thread_id: str, ns: str, cid: str, parent_id: str | None, config: RunnableConfig
) -> Op[str]:
    """The lineage root of a new checkpoint: itself without a parent, else the parent's.

    A subgraph's first checkpoint has no parent in its namespace, but
    LangGraph names the parent graph's checkpoint (``checkpoint_map``): it
    inherits that one's root when known, so a subgraph that a late run
    starts after a delete belongs to the deleted lineage too.

    Known without a request when this saver wrote or read the parent
    (LangGraph's flows); otherwise one GetItem of the parent. A parent
    that does not exist means unknown history: ``ORPHAN_ROOT``, dead
    wherever the namespace has a tombstone (a late write on a deleted
    checkpoint whose root this process never learned).
    """
    if not parent_id:
        root = cid
        cmap = (config.get("configurable") or {}).get("checkpoint_map")
        if ns and isinstance(cmap, Mapping):
            # The innermost enclosing graph first (the longest namespace).
            enclosing = sorted((k for k in cmap if isinstance(k, str) and k != ns), key=len, reverse=True)
            for pns in enclosing:
                pcid = cmap[pns]
                if isinstance(pcid, str) and (inherited := s.caches.root(thread_id, pns, pcid)):
                    root = inherited
                    break
            else:
                # With durability="async" the enclosing checkpoint's own put
                # may not have started yet: its lineage is the one this saver
                # last worked on there (the run read or wrote its parent). A
                # new lineage here would outlive a delete of the thread.
                for pns in enclosing:
                    if inherited := s.caches.last_root(thread_id, pns):
                        root = inherited
                        break
    elif (known := s.caches.root(thread_id, ns, parent_id)) is not None:
        root = known
    else:
        resp = yield ddb(
            "get_item",
            TableName=s.table_name,
            Key={
                ATTR.PK: {"S": s.keys.pk(thread_id)},
                ATTR.SK: {"S": schema.checkpoint_sk(ns, parent_id)},
            },
            # The key too: a legacy parent (no root) must still come back.
            ProjectionExpression="#sk, #rt",
            ExpressionAttributeNames={"#sk": ATTR.SK, "#rt": ATTR.ROOT},
            ConsistentRead=True,
        )
        parent = resp.get("Item")
        root = schema.ORPHAN_ROOT if parent is None else shapes.root_of(parent, parent_id)
    s.caches.note_root(thread_id, ns, cid, root)
    return root


def value_ref(
    version: str, loc: Location, holder: str | None = None, tag: str | None = None
) -> AttributeValue:
    """A checkpoint's reference to a value stored elsewhere.

    ``holder``: the checkpoint holding a ``c`` value. ``tag``: for an ``s3``
    value, the write that stored it (see ``valuecache``), carried by every
    later reference to the same version.
    """
    ref: dict[str, AttributeValue] = {"v": {"S": version}, "l": {"S": loc}}
    if holder is not None:
        ref["c"] = {"S": holder}
    if tag:
        ref["n"] = {"S": tag}
    return {"M": ref}


def new_tag() -> str:
    """A fresh write tag: 64 random bits, enough that two writes of one key never share one."""
    return uuid.uuid4().hex[:16]


def stage_value(
    s: BaseDynamoDBSaver,
    thread_id: str,
    ns: str,
    channel: str,
    version: str,
    packed: bytes,
    loc: Location,
    uploads: list[Call],
    blob_items: list[Item],
) -> str | None:
    """Stage a value's S3 upload or blob item; returns the S3 key staged (``None``: a blob item)."""
    if loc == "s3":
        key = s.keys.value_s3_key(thread_id, ns, channel, version)
        uploads.append(s3("put_object", Bucket=s.bucket_name, Key=key, Body=packed))
        return key
    else:
        item: Item = {
            ATTR.PK: {"S": s.keys.pk(thread_id)},
            ATTR.SK: {"S": schema.blob_sk(ns, channel, version)},
            ATTR.KIND: {"S": schema.BLOB_ITEM},
            ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
            ATTR.BLOB: {"B": packed},
            # Prune never deletes an unreferenced blob younger than a
            # grace period: it may belong to a put still in flight.
            ATTR.CREATED: {"N": str(int(clock.now()))},
        }
        blob_items.append(shapes.keep_whole_ids(item, ns=ns, ch=channel, ver=version))
    return None


def doc_payload(s: BaseDynamoDBSaver, packed: bytes, key: str, uploads: list[Call]) -> AttributeValue:
    """A payload that lives in its item unless it is over the S3 threshold."""
    if s.bucket_name is not None and len(packed) > s.s3_threshold:
        uploads.append(s3("put_object", Bucket=s.bucket_name, Key=key, Body=packed))
        return {"M": {"s3": {"S": key}}}
    return {"B": packed}


def write_externals(s: BaseDynamoDBSaver, uploads: list[Call], blob_items: list[Item]) -> Op[None]:
    if uploads:
        yield Gather(uploads)
    if blob_items:
        yield from requests.batch_write(s.table_name, [{"PutRequest": {"Item": it}} for it in blob_items])


def write_to_s3(
    s: BaseDynamoDBSaver,
    thread_id: str,
    ns: str,
    cid: str,
    task_id: str,
    idx: int,
    channel: str,
    packed: bytes,
    uploads: list[Call],
) -> AttributeValue:
    # A fresh key per attempt: if a first write already won, this object
    # is an orphan for the sweeper, never a changed value under a live key.
    key = f"{s.keys.write_s3_prefix(thread_id, ns, cid, task_id, str(idx))}{_uuid6ish()}"
    uploads.append(s3("put_object", Bucket=s.bucket_name, Key=key, Body=packed))
    return {"L": [{"S": channel}, {"M": {"s3": {"S": key}}}]}
