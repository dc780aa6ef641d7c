"""The delta-safe keep-set, and deleting what it does not keep, I/O-free.

What lives here: ``keep_set`` (the checkpoints survivors need back to the
nearest snapshot of each delta channel) and ``delete_unkept``, which every
verb that removes part of a thread (prune, ``delete_for_runs``, reaping) ends
with: values a deleted checkpoint held for a kept one are re-homed first, then
the items go, then the blobs and S3 objects nothing kept refers to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._engine.ops import Call, Op, ddb
from langgraph.checkpoint.dynamodb._operations import placement, requests
from langgraph.checkpoint.dynamodb._operations.threads import delete_items, item_refs, thread_query
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import (
    Item,
    ThreadItems,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.lifecycle import (
    PruneResult,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

#: Unreferenced blobs and S3 value objects younger than this are left alone by
#: prune: a put may have written them and not yet its checkpoint item.
BLOB_GRACE_SECONDS = 15 * 60


def delete_unkept(
    s: BaseDynamoDBSaver,
    thread: ThreadItems,
    keep: set[tuple[str, str]],
    res: PruneResult,
    *,
    drop_writes: Iterable[Item] = (),
) -> Op[None]:
    """Delete checkpoints outside ``keep`` with their writes, blobs and objects.

    Writes whose checkpoint item does not exist are never deleted: their
    checkpoint may be a put still in flight (``durability="async"``).
    """
    if thread.outline:
        yield from delete_unkept_streamed(s, thread, keep, res, drop_writes=drop_writes)
        return
    doomed: list[Item] = []
    kept_s3: set[str] = set()
    kept_blobs: set[str] = set()
    doomed_s3: set[str] = set()

    def track(it: Item, kept: bool) -> None:
        s3_keys, blob_sks = item_refs(s, thread.thread_id, it)
        (kept_s3 if kept else doomed_s3).update(s3_keys)
        if kept:
            kept_blobs.update(blob_sks)

    for key, it in thread.checkpoints.items():
        track(it, key in keep)
        if key not in keep:
            doomed.append(it)
            res.checkpoints_deleted += 1
            doomed.extend(thread.writes.get(key, []))
    drop = list(drop_writes)
    drop_ids = {id(w) for w in drop}
    for key, ws in thread.writes.items():
        for w in ws:
            track(w, (key in keep or key not in thread.checkpoints) and id(w) not in drop_ids)
    doomed.extend(drop)
    res.writes_deleted = sum(1 for it in doomed if it.get(ATTR.KIND, {}).get("S") == schema.WRITES_ITEM)
    now = clock.now()
    for sk, blob in thread.blobs.items():
        age = now - (shapes.int_attr(blob, ATTR.CREATED) or 0)
        if sk not in kept_blobs and age > BLOB_GRACE_SECONDS:
            doomed.append(blob)
            res.blobs_deleted += 1
    res.bytes_freed += sum(shapes.item_size(it) for it in doomed)
    kept = [(key, it) for key, it in thread.checkpoints.items() if key in keep]
    yield from rehome_held_values(s, thread, kept, keep, res, set())
    yield from delete_items(s, doomed)
    yield from _delete_unshared_objects(s, doomed_s3, kept_s3, res)


def delete_unkept_streamed(
    s: BaseDynamoDBSaver,
    thread: ThreadItems,
    keep: set[tuple[str, str]],
    res: PruneResult,
    *,
    drop_writes: Iterable[Item] = (),
) -> Op[None]:
    """``delete_unkept`` for a thread read as an outline: payloads pass one Query page at a time.

    The outline names what goes (its keys are all a delete needs). One pass
    over the whole items, a page at a time, re-homes what a doomed
    checkpoint holds for a kept one and notes which S3 objects and blobs
    each side references; then the deletes run in ``ordered_deletes``'
    order, from the outline. Only checkpoints of the outline can be doomed:
    one written since is newer than all of them, and kept with its writes.
    """
    doomed_keys = {key for key in thread.checkpoints if key not in keep}
    drop_sks = {w[ATTR.SK]["S"] for w in drop_writes}
    kept_s3: set[str] = set()
    doomed_s3: set[str] = set()
    kept_blobs: set[str] = set()
    blob_bytes: dict[str, int] = {}
    done: set[tuple[str, str, str]] = set()
    kwargs = thread_query(s, thread.thread_id)
    while True:
        resp = yield ddb("query", **kwargs)
        kept_here: list[tuple[tuple[str, str], Item]] = []
        for it in resp.get("Items", []):
            ns, kind, cid, _ = shapes.parse_sk(it)
            if kind == schema.BLOB_ITEM:
                blob_bytes[it[ATTR.SK]["S"]] = shapes.item_size(it)
            if kind not in (schema.CHECKPOINT_ITEM, schema.WRITES_ITEM):
                continue
            doomed = (ns, cid) in doomed_keys or it[ATTR.SK]["S"] in drop_sks
            s3_keys, blob_sks = item_refs(s, thread.thread_id, it)
            if doomed:
                doomed_s3.update(s3_keys)
                res.bytes_freed += shapes.item_size(it)
                continue
            kept_s3.update(s3_keys)
            kept_blobs.update(blob_sks)
            if kind == schema.CHECKPOINT_ITEM:
                kept_here.append(((ns, cid), it))
        # Before anything is deleted: the page's kept checkpoints keep what they need.
        yield from rehome_held_values(s, thread, kept_here, keep, res, done)
        if "LastEvaluatedKey" not in resp:
            break
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
    doomed_items = [thread.checkpoints[key] for key in doomed_keys]
    res.checkpoints_deleted += len(doomed_items)
    for key, ws in thread.writes.items():
        gone = [w for w in ws if key in doomed_keys or w[ATTR.SK]["S"] in drop_sks]
        doomed_items.extend(gone)
        res.writes_deleted += len(gone)
    now = clock.now()
    for sk, blob in thread.blobs.items():
        age = now - (shapes.int_attr(blob, ATTR.CREATED) or 0)
        if sk not in kept_blobs and age > BLOB_GRACE_SECONDS:
            doomed_items.append(blob)
            res.blobs_deleted += 1
            res.bytes_freed += blob_bytes.get(sk, shapes.item_size(blob))
    yield from delete_items(s, doomed_items)
    yield from _delete_unshared_objects(s, doomed_s3, kept_s3, res)


def _delete_unshared_objects(
    s: BaseDynamoDBSaver, doomed: set[str], kept: set[str], res: PruneResult
) -> Op[None]:
    """Delete the S3 objects only deleted items referred to.

    Value objects are keyed by version: a kept checkpoint may share one
    with a deleted one, so only unshared objects go.
    """
    s3_doomed = sorted(doomed - kept)
    if s3_doomed and s.bucket_name is not None:
        yield from requests.delete_s3_keys(s.bucket_name, s3_doomed)
        res.s3_objects_deleted += len(s3_doomed)


def rehome_held_values(
    s: BaseDynamoDBSaver,
    thread: ThreadItems,
    kept: Iterable[tuple[tuple[str, str], Item]],
    keep: set[tuple[str, str]],
    res: PruneResult,
    done: set[tuple[str, str, str]],
) -> Op[None]:
    """Move values that doomed checkpoints hold for ``kept`` ones (whole items) out of them.

    A kept checkpoint may reference a value held by the checkpoint that
    introduced it. Before that one is deleted, the value is written as
    the blob item (or S3 object) of its version, where readers look
    next: the reference stays valid without rewriting the kept item.
    ``done``: the values already moved (by an earlier page of the same prune).
    """
    uploads: list[Call] = []
    blob_items: list[Item] = []
    for key, it in kept:
        ns = key[0]
        for channel, av in it.get(ATTR.VALUES, {}).get("M", {}).items():
            ref = av.get("M") if isinstance(av, dict) else None
            if not ref or ref.get("l", {}).get("S") != "c":
                continue
            holder = (ns, ref["c"]["S"])
            version = ref["v"]["S"]
            if holder in keep or (ns, channel, version) in done:
                continue
            if schema.blob_sk(ns, channel, version) in thread.blobs:
                continue  # re-homed by an earlier, interrupted prune
            packed = yield from held_value(s, thread, holder, channel)
            if packed is None:
                continue  # already gone (or in S3): nothing left to move
            done.add((ns, channel, version))
            big = s.bucket_name is not None and len(packed) > s.s3_threshold
            placement.stage_value(
                s,
                thread.thread_id,
                ns,
                channel,
                version,
                packed,
                "s3" if big else "blob",
                uploads,
                blob_items,
            )
            res.values_rehomed += 1
    yield from placement.write_externals(s, uploads, blob_items)


def held_value(
    s: BaseDynamoDBSaver, thread: ThreadItems, holder: tuple[str, str], channel: str
) -> Op[bytes | None]:
    """The packed value ``holder`` holds inline for ``channel`` (fetched alone from an outline's)."""
    held = thread.checkpoints.get(holder)
    if held is None:
        return None
    if thread.outline:
        resp = yield ddb(
            "get_item",
            TableName=s.table_name,
            Key={ATTR.PK: held[ATTR.PK], ATTR.SK: held[ATTR.SK]},
            ConsistentRead=True,
            ProjectionExpression="#v.#c",
            ExpressionAttributeNames={"#v": ATTR.VALUES, "#c": channel},
        )
        held = resp.get("Item") or {}
    return shapes.held_value(held, channel)


def values_fetcher(s: BaseDynamoDBSaver) -> Fetch:
    """For ``keep_walk`` on an outline: an ancestor's item with its ``VALUES`` (what channels it holds)."""

    seen: dict[str, Item] = {}  # survivors share ancestors: each is read once

    def fetch(item: Item) -> Op[Item]:
        sk = item[ATTR.SK]["S"]
        if sk in seen:
            return seen[sk]
        resp = yield ddb(
            "get_item",
            TableName=s.table_name,
            Key={ATTR.PK: item[ATTR.PK], ATTR.SK: item[ATTR.SK]},
            ConsistentRead=True,
            ProjectionExpression="#v",
            ExpressionAttributeNames={"#v": ATTR.VALUES},
        )
        # Only the channel names are kept, not the values (which may be large).
        names = (resp.get("Item") or {}).get(ATTR.VALUES, {}).get("M", {})
        seen[sk] = {**item, ATTR.VALUES: {"M": {name: {"NULL": True} for name in names}}}
        return seen[sk]

    return fetch


def keep_set(
    checkpoints: Mapping[tuple[str, str], Item],
    survivors: Iterable[tuple[str, str]],
    *,
    thread_id: str = "?",
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Checkpoints that must stay for ``survivors`` to rebuild their state.

    Returns ``(keep, ancestors)``: ``keep`` holds the survivors and every
    ancestor on a delta path back to the nearest seed; ``ancestors`` holds
    the ancestors alone, whose writes are part of that history (a survivor's
    own writes are its pending writes).

    Raises ``CorruptPayloadError`` (naming ``thread_id`` and the checkpoints
    in the loop) if a parent chain comes back on itself: parent ids are
    stored data, and a crafted or damaged one must not make the walk endless.
    """
    return run_pure(keep_walk(checkpoints, survivors, thread_id, None))


#: Completes an item for the keep walk (its ``VALUES``, from the table).
Fetch = Callable[[Item], Op[Item]]


def keep_walk(
    checkpoints: Mapping[tuple[str, str], Item],
    survivors: Iterable[tuple[str, str]],
    thread_id: str,
    fetch: Fetch | None,
) -> Op[tuple[set[tuple[str, str]], set[tuple[str, str]]]]:
    """``keep_set``'s walk; with ``fetch``, each ancestor's channels are read as it is reached."""
    keep: set[tuple[str, str]] = set()
    ancestors: set[tuple[str, str]] = set()
    for key in survivors:
        if key not in checkpoints:
            continue
        keep.add(key)
        ns = key[0]
        item = checkpoints[key]
        needs = set(item.get(ATTR.DELTA_NEEDS, {}).get("SS", []))
        parent = item.get(ATTR.PARENT_ID, {}).get("S")
        walked = [key[1]]  # this survivor's chain so far, for cycle detection
        on_chain = {key[1]}
        while needs and parent is not None:
            if parent in on_chain:
                raise shapes.parent_cycle_error(thread_id, ns, walked, parent)
            walked.append(parent)
            on_chain.add(parent)
            pkey = (ns, parent)
            pitem = checkpoints.get(pkey)
            if pitem is None:
                break  # chain already broken before us: nothing more to keep
            keep.add(pkey)
            ancestors.add(pkey)
            if fetch is not None:
                pitem = yield from fetch(pitem)
            needs -= set(pitem.get(ATTR.VALUES, {}).get("M", {}))
            parent = pitem.get(ATTR.PARENT_ID, {}).get("S")
    return keep, ancestors


def run_pure(op: Op[Any]) -> Any:
    """Run an operation that makes no request (a walk without ``fetch``)."""
    try:
        op.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("an I/O-free walk asked for a request")
