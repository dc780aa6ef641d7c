"""The inspector's reads that are not a saver call: bounded Queries, item sizes, value locations.

Each is a few keyed requests whatever the thread's length (see ``_ui``'s
docstring); the conversation view's read walks one page of a thread's
history. Nothing here writes.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import item_size
from langgraph.checkpoint.dynamodb.cli._base import client_code
from langgraph.checkpoint.dynamodb.cli._checkpoint_refs import resolve_checkpoint
from langgraph.checkpoint.dynamodb.cli._tasks import next_tasks
from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools._inspection import ddb_client, s3_client

#: Namespaces listed for one thread (one Query each).
MAX_NAMESPACES: Final = 200
#: Items a threads-page row reads to count a thread's checkpoints and bytes (more: shown as "≥").
SUMMARY_ITEMS: Final = 200

#: Held while a threads-page row decodes and summarises its latest checkpoint (see thread_summary).
_DECODING = threading.Lock()


def thread_summary(saver: Any, thread_id: str, *, max_items: int = SUMMARY_ITEMS) -> dict[str, Any]:
    """Checkpoints, bytes and interrupt state of one thread, for a threads-page row.

    One eventually consistent Query of at most ``max_items`` of the thread's
    items (``complete`` is false, and the counts are lower bounds, when the
    thread holds more) and one ``get_tuple`` of its latest root checkpoint.
    A row is an overview: bounding the read keeps a page of long threads
    from costing a megabyte per row (the thread page pages through all of
    it), and a read a second stale is fine for it (half the read units).
    """
    resp = ddb_client(saver).query(
        TableName=saver.table_name,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": ATTR.PK},
        ExpressionAttributeValues={":pk": {"S": saver.partition_key(thread_id)}},
        Limit=max_items,
    )
    checkpoints = size = 0
    for it in resp.get("Items", []):
        size += item_size(it)
        if schema.parse_sk(it[ATTR.SK]["S"])[1] == schema.CHECKPOINT_ITEM:
            checkpoints += 1
    error = None
    waiting: list[str] = []
    step = None
    # One row's state at a time: rows are summarised side by side (page_threads),
    # and decoding is what a forged payload amplifies (tens of times its size in
    # Python objects). Held one after another, a page costs the memory of its
    # largest row, not of all of them at once; the item counts above stay parallel.
    with _DECODING:
        try:
            tup = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        except CheckpointStoreError as exc:
            # A row, not the page: name what failed, never what the payload holds.
            tup, error = None, f"{type(exc).__name__}: the latest checkpoint cannot be read"
        if tup is not None:
            step = (tup.metadata or {}).get("step")
            tasks = next_tasks(tup.checkpoint, tup.pending_writes or [], step=step)
            waiting = [t["name"] for t in tasks if t["status"] == "interrupted"]
        del tup
    return {
        "checkpoints": checkpoints,
        "bytes": size,
        "complete": "LastEvaluatedKey" not in resp,
        "waiting_on": waiting,
        "step": step,
        "error": error,
    }


def thread_namespaces(saver: Any, thread_id: str, cap: int = MAX_NAMESPACES) -> list[str]:
    """The checkpoint namespaces of a thread, one Query (``Limit=1``) each.

    Sort keys start with the escaped namespace and a ``|``, so after finding
    one namespace the next Query starts past all of its keys (``}`` is the
    character after ``|``): a skip scan that never reads a checkpoint twice.
    """
    found: list[str] = []
    lower: str | None = None
    while len(found) < cap:
        cond = "#pk = :pk" + (" AND #sk >= :lo" if lower is not None else "")
        values: dict[str, Any] = {":pk": {"S": saver.partition_key(thread_id)}}
        if lower is not None:
            values[":lo"] = {"S": lower}
        resp = ddb_client(saver).query(
            TableName=saver.table_name,
            KeyConditionExpression=cond,
            ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK, "#k": ATTR.KEY},
            ExpressionAttributeValues=values,
            ProjectionExpression="#pk, #sk, #k",  # the ids too, where a key digests one
            Limit=1,
            ConsistentRead=True,
        )
        items = resp.get("Items", [])
        if not items:
            break
        sk = items[0][ATTR.SK]["S"]
        ns = shapes.parse_sk(items[0])[0]
        escaped = sk.split(schema.SEP, 1)[0]
        if ns not in found:
            found.append(ns)
        lower = escaped + "}"
    # Root first, then subgraphs in key order (a parent's namespace before its children's).
    return sorted(found, key=lambda n: (n != "", n))


def value_location(saver: Any, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
    """Where each channel value of a checkpoint lives, and its stored size.

    ``inline`` (in the checkpoint item), ``held`` (inline in the earlier
    checkpoint that introduced that version: ``holder``), ``blob`` (a blob
    item) or ``s3``. One GetItem, plus one small read per value stored
    elsewhere (a projected GetItem, or an S3 HeadObject).
    """
    table, pk = saver.table_name, saver.partition_key(thread_id)
    resp = ddb_client(saver).get_item(
        TableName=table,
        Key={ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.checkpoint_sk(checkpoint_ns, checkpoint_id)}},
        ProjectionExpression="#v",
        ExpressionAttributeNames={"#v": ATTR.VALUES},
        ConsistentRead=True,
    )
    out: dict[str, Any] = {}
    for channel, av in resp.get("Item", {}).get(ATTR.VALUES, {}).get("M", {}).items():
        if "B" in av:
            out[channel] = {"where": "inline", "bytes": len(av["B"])}
            continue
        ref = av.get("M", {})
        kind = ref.get("l", {}).get("S")
        version = ref.get("v", {}).get("S", "")
        info: dict[str, Any] = {"where": {"c": "held", "blob": "blob", "s3": "s3"}.get(kind or "", kind)}
        try:
            if kind == "c":
                holder = ref.get("c", {}).get("S", "")
                info["holder"] = holder
                got = ddb_client(saver).get_item(
                    TableName=table,
                    Key={ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.checkpoint_sk(checkpoint_ns, holder)}},
                    ProjectionExpression="#v.#c",
                    ExpressionAttributeNames={"#v": ATTR.VALUES, "#c": channel},
                    ConsistentRead=True,
                )
                held = got.get("Item", {}).get(ATTR.VALUES, {}).get("M", {}).get(channel, {}).get("B")
                info["bytes"] = len(held) if isinstance(held, bytes) else None
            elif kind == "blob":
                got = ddb_client(saver).get_item(
                    TableName=table,
                    Key={ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.blob_sk(checkpoint_ns, channel, version)}},
                    ProjectionExpression="#b",
                    ExpressionAttributeNames={"#b": ATTR.BLOB},
                    ConsistentRead=True,
                )
                blob = got.get("Item", {}).get(ATTR.BLOB, {}).get("B")
                info["bytes"] = len(blob) if isinstance(blob, bytes) else None
            elif kind == "s3" and s3_client(saver) is not None:
                key = saver.value_s3_key(thread_id, checkpoint_ns, channel, version)
                info["s3_key"] = key
                info["bytes"] = int(
                    s3_client(saver).head_object(Bucket=saver.bucket_name, Key=key)["ContentLength"]
                )
        except Exception as exc:  # a size is a nicety: say why it is missing, show the page
            info["bytes"] = None
            info["error"] = client_code(exc) or type(exc).__name__
        out[channel] = info
    return out


def checkpoint_tuple(saver: Any, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None) -> Any:
    """The checkpoint an inspector URL names: every form the CLI accepts (``cli._checkpoint_refs``).

    A full id, ``latest`` (or none), or a unique prefix or suffix: the short
    ids the pages display, pasted into ``/checkpoint?id=`` or the diff form.
    """
    return resolve_checkpoint(saver, thread_id, checkpoint_ns, checkpoint_id)


def newer_before(saver: Any, thread_id: str, checkpoint_ns: str, newest: str, limit: int) -> str | None:
    """The ``before=`` of the timeline page just newer than one whose newest row is ``newest``.

    The ``limit`` checkpoints after ``newest`` in key order (a Query up the
    sort keys, keys only): the page before them starts at the one after
    those; ``None`` when they reach the thread's latest (that page is the
    first, which needs no ``before``).
    """
    kwargs: dict[str, Any] = {
        "TableName": saver.table_name,
        "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :lo AND :hi",
        "ExpressionAttributeNames": {"#pk": ATTR.PK, "#sk": ATTR.SK, "#k": ATTR.KEY},
        "ExpressionAttributeValues": {
            ":pk": {"S": saver.partition_key(thread_id)},
            ":lo": {"S": schema.checkpoint_range_end(checkpoint_ns, newest)},
            ":hi": {"S": schema.checkpoint_prefix(checkpoint_ns) + "\U0010ffff"},
        },
        "ProjectionExpression": "#pk, #sk, #k",
        "ConsistentRead": True,
        # Pages of about what is needed: the read stops near the page's end,
        # not at the thread's latest checkpoint (a thread's middle costs what its top does).
        "Limit": limit + 1,
    }
    ids: list[str] = []
    while True:
        resp = ddb_client(saver).query(**kwargs)
        for it in resp.get("Items", []):
            _, kind, cid, _ = shapes.parse_sk(it)
            if kind == schema.CHECKPOINT_ITEM:
                ids.append(cid)
                if len(ids) > limit:
                    return ids[limit]
        if "LastEvaluatedKey" not in resp:
            return None
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def conversation_read(
    saver: Any, thread_id: str, checkpoint_ns: str, checkpoint_id: str | None, *, window: int
) -> dict[str, Any]:
    """A checkpoint and its ancestors among the ``window`` checkpoints up to it: the conversation's read.

    One ``get_tuple`` and one ``list(before=..., limit=window - 1)``; the
    ancestors are followed by parent link through what was listed, so a fork's
    other branches are left out. ``complete`` is false when the walk stopped
    at the window, not at the thread's first checkpoint.
    """
    tup = checkpoint_tuple(saver, thread_id, checkpoint_ns, checkpoint_id)
    cid = tup.config["configurable"]["checkpoint_id"]
    listed = {
        t.config["configurable"]["checkpoint_id"]: t
        for t in saver.list(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}},
            before={"configurable": {"checkpoint_id": cid}},
            limit=max(1, window - 1),
        )
    }
    chain = [tup]
    while chain[-1].parent_config:
        parent = listed.get(chain[-1].parent_config["configurable"]["checkpoint_id"])
        if parent is None:
            break
        chain.append(parent)
    return {"tuple": tup, "chain": chain, "complete": not chain[-1].parent_config}
