"""Removing items and objects, I/O-free, in an order that keeps every readable checkpoint whole.

What lives here: loading a thread's items, the ordered deletes of
``delete_thread`` (tombstone first, then items, then S3 objects), the
delta-safe *keep-set* and prune of one thread (re-homing values a deleted
checkpoint held for a kept one before deleting it), and reaping an expired
thread. Every operation is idempotent: running it twice, or two at once,
deletes nothing more than one run would.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langgraph.checkpoint.dynamodb import _items, _placement, _requests, clock, schema
from langgraph.checkpoint.dynamodb._items import (
    Item,
    ThreadItems,
)
from langgraph.checkpoint.dynamodb._ops import Call, Gather, Op, ddb, s3
from langgraph.checkpoint.dynamodb._valuecache import HELD, held_prefix
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
    ThreadTooLargeError,
)
from langgraph.checkpoint.dynamodb.lifecycle import (
    PruneResult,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

#: Unreferenced blobs and S3 value objects younger than this are left alone by
#: prune: a put may have written them and not yet its checkpoint item.
BLOB_GRACE_SECONDS = 15 * 60


def delete_thread(s: BaseDynamoDBSaver, thread_id: str, *, force: bool = False) -> Op[None]:
    """Delete a thread; its lock item stays, so that fencing tokens only grow.

    A thread whose lease is held (its lock item names an owner) is refused with
    ``LeaseUnavailableError`` unless ``force``: the holder would go on writing.
    A forced delete bumps the fencing token and clears the owner, so the old
    holder's next lease-bound write fails (``LeaseLostError``) and the next
    holder gets a token above every token handed out before.
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("thread_id must be a non-empty string")
    pk = s._pk(thread_id)
    items = yield from _requests.query_all(
        TableName=s.table_name,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={
            "#pk": ATTR.PK,
            "#sk": ATTR.SK,
            "#rt": ATTR.ROOT,
            "#dr": ATTR.DEAD,
            "#own": ATTR.OWNER,
            "#fen": ATTR.FENCE,
            "#k": ATTR.KEY,
        },
        ExpressionAttributeValues={":pk": {"S": pk}},
        ProjectionExpression="#pk, #sk, #rt, #dr, #own, #fen, #k",
        ConsistentRead=True,
    )
    lock = next((it for it in items if it[ATTR.SK]["S"] == schema.LOCK_SK), None)
    holder = (lock or {}).get(ATTR.OWNER, {}).get("S")
    if holder and not force:
        from langgraph.checkpoint.dynamodb.lock._errors import LeaseUnavailableError

        raise LeaseUnavailableError(thread_id, holder, None)
    items = [it for it in items if it is not lock]
    # A thread id can be reused: forget where its old versions lived.
    for key in [k for k in list(s._placements) if k[0] == thread_id]:
        s._placements.pop(key, None)
    # Never served again (a recreated thread's references carry new tags,
    # its checkpoints new ids): only memory to give back.
    for prefix in s._s3_thread_prefixes(thread_id):
        s._value_cache.forget_prefix(s.bucket_name or "", prefix)
    s._value_cache.forget_prefix(HELD, held_prefix(pk))
    s._chain_cache.forget_partition(pk)
    s._head_until.pop(thread_id, None)  # a new conversation writes a head again
    # Deletion is final: tombstones for every lineage deleted go first, so
    # a run still in flight that writes on one of them (or a delete that
    # fails part way) leaves nothing readable, and the head they retire
    # refuses to come back for those lineages.
    roots: dict[str, set[str]] = {}
    legacy: dict[str, list[str]] = {}
    tombstones: list[Item] = []
    doomed: list[Item] = []
    for it in items:
        ns, kind, cid, _ = _items.parse_sk(it)
        if kind == schema.TOMBSTONE_ITEM:
            tombstones.append(it)
            continue
        doomed.append(it)
        if kind == schema.CHECKPOINT_ITEM:
            rt = _items.str_attr(it, ATTR.ROOT, f"checkpoint {cid!r} of thread {thread_id!r}")
            if rt is None:
                legacy.setdefault(ns, []).append(cid)
            else:
                roots.setdefault(ns, set()).add(rt)
    for ns, ids in legacy.items():
        roots.setdefault(ns, set()).update(sorted(ids)[-schema.LEGACY_ROOTS_MAX :])
    if roots:
        yield from _bury(s, thread_id, roots, tombstones, retire_head=True)
        # The retired head stays: it refuses the dead lineages (see ``_heads.on_activity``).
        doomed = [it for it in doomed if it[ATTR.SK]["S"] != schema.HEAD_SK]
    if holder:
        # Fence the old holder out before anything goes: its lease-bound writes
        # check owner and token, and the next acquisition counts on from here.
        yield ddb(
            "update_item",
            TableName=s.table_name,
            Key={ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.LOCK_SK}},
            UpdateExpression="SET #fen = if_not_exists(#fen, :zero) + :one, #rvn = :rvn REMOVE #own",
            ExpressionAttributeNames={"#fen": ATTR.FENCE, "#rvn": ATTR.LOCK_VERSION, "#own": ATTR.OWNER},
            ExpressionAttributeValues={
                ":zero": {"N": "0"},
                ":one": {"N": "1"},
                ":rvn": {"S": uuid.uuid4().hex},
            },
        )
    # Items first: once they are gone nothing points to the S3 objects.
    yield from _requests.ordered_deletes(s.table_name, doomed)
    if s.bucket_name is not None:
        for prefix in s._s3_thread_prefixes(thread_id):
            yield from _requests.delete_s3_prefix(s.bucket_name, prefix)


def _bury(
    s: BaseDynamoDBSaver,
    thread_id: str,
    roots: Mapping[str, set[str]],
    tombstones: Sequence[Item],
    *,
    retire_head: bool,
) -> Op[None]:
    """Record deleted lineage roots: per-namespace tombstones and the thread head.

    Tombstones (``"<epoch>:<root>"`` entries) are what readers check. The
    head keeps the bare roots, so that ``_heads.on_activity`` can refuse, in its
    own UpdateItem, to bring the head back for a deleted lineage;
    ``retire_head`` also takes it out of the threads index and drops its
    TTL (the thread is gone, not idle). Entries older than
    ``schema.FINALITY_WINDOW`` are forgotten here. Sets, updated with
    ADD/DELETE, so concurrent deletes never lose each other's entries.
    """
    pk = {"S": s._pk(thread_id)}
    now = int(clock.now())
    dead_here = {r for rs in roots.values() for r in rs}
    fresh = dead_here | {schema.ORPHAN_ROOT}
    calls: list[Call] = []
    for ns, rs in roots.items():
        if not rs:
            continue
        # Every tombstone lists the roots deleted in the whole thread, not
        # only its namespace's: a subgraph that a late run starts in this
        # namespace inherits an enclosing graph's (deleted) root, and the
        # latest read of this namespace only sees this tombstone.
        rs = dead_here
        sk = schema.tombstone_sk(ns)
        names = {"#t": ATTR.KIND, "#f": ATTR.FORMAT, "#dr": ATTR.DEAD}
        values: dict[str, Any] = {
            ":t": {"S": schema.TOMBSTONE_ITEM},
            ":f": {"N": str(schema.TOMBSTONE_FORMAT_VERSION)},
            ":dr": {"SS": sorted(f"{now}:{r}" for r in rs)},
        }
        expr = "SET #t = :t, #f = :f ADD #dr :dr"
        whole = schema.whole_ids(sk, ns=ns)
        if whole is not None:
            names["#k"] = ATTR.KEY
            values[":k"] = whole
            values[":f"] = {"N": str(schema.DIGESTED_FORMAT_VERSION)}
            expr = "SET #t = :t, #f = :f, #k = :k ADD #dr :dr"
        calls.append(
            ddb(
                "update_item",
                TableName=s.table_name,
                Key={ATTR.PK: pk, ATTR.SK: {"S": sk}},
                UpdateExpression=expr,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        )
    head_names = {"#t": ATTR.KIND, "#f": ATTR.FORMAT, "#dr": ATTR.DEAD}
    head_expr = "SET #t = :t, #f = if_not_exists(#f, :f) ADD #dr :dr"
    if retire_head:
        head_names.update({"#ts": ATTR.THREAD_SHARD, "#ua": ATTR.UPDATED_AT, "#ttl": ATTR.TTL})
        head_expr += " REMOVE #ts, #ua, #ttl"
    calls.append(
        ddb(
            "update_item",
            TableName=s.table_name,
            Key={ATTR.PK: pk, ATTR.SK: {"S": schema.HEAD_SK}},
            UpdateExpression=head_expr,
            ExpressionAttributeNames=head_names,
            ExpressionAttributeValues={
                ":t": {"S": schema.META_ITEM},
                ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
                ":dr": {"SS": sorted(fresh)},
            },
        )
    )
    yield Gather(calls)
    # Forget old entries (a second wave: ADD and DELETE of one attribute
    # cannot share an update). A root still listed fresh anywhere stays.
    forget: list[Call] = []
    stale_roots: set[str] = set()
    kept_entries: set[str] = set()
    for tomb in tombstones:
        old = _forgotten(_items.dead_entries(tomb), now, added=len(dead_here))
        kept_entries.update(e for e in _items.dead_entries(tomb) if e not in old)
        if old:
            stale_roots.update(_items.entry_root(e) for e in old)
            forget.append(
                ddb(
                    "update_item",
                    TableName=s.table_name,
                    Key={ATTR.PK: pk, ATTR.SK: tomb[ATTR.SK]},
                    UpdateExpression="DELETE #dr :dr",
                    ExpressionAttributeNames={"#dr": ATTR.DEAD},
                    ExpressionAttributeValues={":dr": {"SS": old}},
                )
            )
    live_entries = {_items.entry_root(e) for e in kept_entries}
    stale_roots -= fresh | live_entries
    if stale_roots:
        forget.append(
            ddb(
                "update_item",
                TableName=s.table_name,
                Key={ATTR.PK: pk, ATTR.SK: {"S": schema.HEAD_SK}},
                UpdateExpression="DELETE #dr :dr",
                ExpressionAttributeNames={"#dr": ATTR.DEAD},
                ExpressionAttributeValues={":dr": {"SS": sorted(stale_roots)}},
            )
        )
    if forget:
        yield Gather(forget)


def _forgotten(entries: list[str], now: int, *, added: int) -> list[str]:
    """The entries of a tombstone the next delete forgets: older than the finality window,
    and the oldest beyond ``schema.TOMBSTONE_ENTRIES_MAX`` (``added`` new ones counted)."""
    old = [e for e in entries if _items.entry_time(e) < now - schema.FINALITY_WINDOW]
    gone = set(old)
    rest = sorted((e for e in entries if e not in gone), key=_items.entry_time, reverse=True)
    room = max(0, schema.TOMBSTONE_ENTRIES_MAX - added)
    return old + rest[room:]


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
            held += sum(_items.item_size(it) for it in page)
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
    keys = yield from _requests.query_all(**query, ProjectionExpression="#pk, #sk, #k")
    return ThreadItems.from_items(thread_id, keys)


def thread_query(s: BaseDynamoDBSaver, thread_id: str) -> dict[str, Any]:
    """The strongly consistent Query of a thread's whole partition."""
    return dict(
        TableName=s.table_name,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": ATTR.PK},
        ExpressionAttributeValues={":pk": {"S": s._pk(thread_id)}},
        ConsistentRead=True,
    )


def delete_items(s: BaseDynamoDBSaver, items: Iterable[Item]) -> Op[None]:
    yield from _requests.ordered_deletes(s.table_name, items)


def delete_thread_counted(
    s: BaseDynamoDBSaver,
    thread_id: str,
    loaded: ThreadItems | None = None,
    *,
    force: bool = False,
    keys_only: bool = False,
) -> Op[PruneResult]:
    """``delete_thread``, reporting what it deletes (from ``loaded``, the thread as just read, if given).

    ``keys_only``: counted from the items' keys (a thread too large to hold in
    memory); ``bytes_freed`` is then 0, as keys do not tell item sizes (so too
    when ``loaded`` is an outline).
    """
    if loaded is not None and loaded.outline:
        thread, keys_only = loaded, True
    elif keys_only:
        thread = yield from load_thread_keys(s, thread_id)
    if keys_only:
        res = PruneResult(
            threads=1, checkpoints_deleted=len(thread.checkpoints), blobs_deleted=len(thread.blobs)
        )
        res.writes_deleted = sum(len(w) for w in thread.writes.values())
        yield from delete_thread(s, thread_id, force=force)
        return res
    thread = loaded if loaded is not None else (yield from load_thread(s, thread_id))
    res = PruneResult(threads=1)
    res.checkpoints_deleted = len(thread.checkpoints)
    res.writes_deleted = sum(len(w) for w in thread.writes.values())
    res.blobs_deleted = len(thread.blobs)
    res.bytes_freed = sum(
        _items.item_size(it)
        for group in (thread.checkpoints.values(), thread.blobs.values(), thread.meta)
        for it in group
    ) + sum(_items.item_size(w) for ws in thread.writes.values() for w in ws)
    yield from delete_thread(s, thread_id, force=force)
    return res


def prune_thread(
    s: BaseDynamoDBSaver, thread_id: str, keep_last: int, loaded: ThreadItems | None = None
) -> Op[PruneResult]:
    """Keep the newest ``keep_last`` checkpoints per namespace and what their chains need.

    ``loaded``: the thread as the caller just read it (the pruner looks at a
    thread before it decides), so that it is not read twice.
    """
    thread = loaded if loaded is not None else (yield from load_thread(s, thread_id))
    res = PruneResult(threads=1)
    if not thread.checkpoints:
        return res
    # Late writes on deleted lineages are garbage: never survivors, never kept.
    dead = thread.dead()
    live = {key: it for key, it in thread.checkpoints.items() if key not in dead}
    survivors: list[tuple[str, str]] = []
    for ns in {n for n, _ in live}:
        ids = sorted((cid for n, cid in live if n == ns), reverse=True)
        survivors.extend((ns, cid) for cid in ids[:keep_last])
    if thread.outline:  # the ancestors' channels are fetched as the walk reaches them
        keep, _ = yield from _keep_walk(live, survivors, thread_id, _values_fetcher(s))
    else:
        keep, _ = keep_set(live, survivors, thread_id=thread_id)
    res.checkpoints_kept = len(keep)
    res.kept_for_delta = len(keep) - len(survivors)
    yield from _delete_unkept(s, thread, keep, res)
    return res


def _delete_unkept(
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
        yield from _delete_unkept_streamed(s, thread, keep, res, drop_writes=drop_writes)
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
        age = now - (_items.int_attr(blob, ATTR.CREATED) or 0)
        if sk not in kept_blobs and age > BLOB_GRACE_SECONDS:
            doomed.append(blob)
            res.blobs_deleted += 1
    res.bytes_freed += sum(_items.item_size(it) for it in doomed)
    kept = [(key, it) for key, it in thread.checkpoints.items() if key in keep]
    yield from _rehome_held_values(s, thread, kept, keep, res, set())
    yield from delete_items(s, doomed)
    # Value objects are keyed by version: a kept checkpoint may share one
    # with a deleted one, so only unshared objects go.
    s3_doomed = sorted(doomed_s3 - kept_s3)
    if s3_doomed and s.bucket_name is not None:
        yield from _requests.delete_s3_keys(s.bucket_name, s3_doomed)
        res.s3_objects_deleted += len(s3_doomed)


def _delete_unkept_streamed(
    s: BaseDynamoDBSaver,
    thread: ThreadItems,
    keep: set[tuple[str, str]],
    res: PruneResult,
    *,
    drop_writes: Iterable[Item] = (),
) -> Op[None]:
    """``_delete_unkept`` for a thread read as an outline: payloads pass one Query page at a time.

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
            ns, kind, cid, _ = _items.parse_sk(it)
            if kind == schema.BLOB_ITEM:
                blob_bytes[it[ATTR.SK]["S"]] = _items.item_size(it)
            if kind not in (schema.CHECKPOINT_ITEM, schema.WRITES_ITEM):
                continue
            doomed = (ns, cid) in doomed_keys or it[ATTR.SK]["S"] in drop_sks
            s3_keys, blob_sks = item_refs(s, thread.thread_id, it)
            if doomed:
                doomed_s3.update(s3_keys)
                res.bytes_freed += _items.item_size(it)
                continue
            kept_s3.update(s3_keys)
            kept_blobs.update(blob_sks)
            if kind == schema.CHECKPOINT_ITEM:
                kept_here.append(((ns, cid), it))
        # Before anything is deleted: the page's kept checkpoints keep what they need.
        yield from _rehome_held_values(s, thread, kept_here, keep, res, done)
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
        age = now - (_items.int_attr(blob, ATTR.CREATED) or 0)
        if sk not in kept_blobs and age > BLOB_GRACE_SECONDS:
            doomed_items.append(blob)
            res.blobs_deleted += 1
            res.bytes_freed += blob_bytes.get(sk, _items.item_size(blob))
    yield from delete_items(s, doomed_items)
    s3_doomed = sorted(doomed_s3 - kept_s3)
    if s3_doomed and s.bucket_name is not None:
        yield from _requests.delete_s3_keys(s.bucket_name, s3_doomed)
        res.s3_objects_deleted += len(s3_doomed)


def _rehome_held_values(
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
            packed = yield from _held_value(s, thread, holder, channel)
            if packed is None:
                continue  # already gone (or in S3): nothing left to move
            done.add((ns, channel, version))
            big = s.bucket_name is not None and len(packed) > s.s3_threshold
            _placement.stage_value(
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
    yield from _placement.write_externals(s, uploads, blob_items)


def _held_value(
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
    return _items.held_value(held, channel)


def _values_fetcher(s: BaseDynamoDBSaver) -> Fetch:
    """For ``_keep_walk`` on an outline: an ancestor's item with its ``VALUES`` (what channels it holds)."""

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


def item_refs(s: BaseDynamoDBSaver, thread_id: str, item: Item) -> tuple[set[str], set[str]]:
    """``(S3 keys, blob sort keys)`` an item points to."""
    # Whoever can write the thread's items shapes them: a wrong shape is a
    # CorruptPayloadError naming the item (which table-wide jobs record
    # per thread), never a KeyError that stops a job for everyone.
    with _items.malformed(_items.item_name(item)):
        return _item_refs(s, thread_id, item)


def _item_refs(s: BaseDynamoDBSaver, thread_id: str, item: Item) -> tuple[set[str], set[str]]:
    s3_keys: set[str] = set()
    blob_sks: set[str] = set()
    ns, kind, _, _ = _items.parse_sk(item)
    for attr, av in item.items():
        if (attr in (ATTR.BODY, ATTR.METADATA) and "M" in av) or (
            _items.is_write_attr(attr) and "M" in av["L"][1]
        ):
            try:
                s3_keys.add(s._s3_pointer(thread_id, item, attr))
            except (CorruptPayloadError, KeyError, IndexError, TypeError):
                # A forged pointer (another thread's or tenant's object)
                # is never deleted, nor does it keep anything alive. A
                # body or metadata object is the item's own by its key,
                # whatever the attribute says.
                own = s._own_s3_key(thread_id, item, attr)
                if own is not None and own[1]:
                    s3_keys.add(own[0])
    if kind == schema.CHECKPOINT_ITEM:
        for channel, av in item.get(ATTR.VALUES, {}).get("M", {}).items():
            if "M" not in av:
                continue
            version = av["M"]["v"]["S"]
            # Either location: thresholds may have changed since.
            s3_keys.add(s._value_s3_key(thread_id, ns, channel, version))
            blob_sks.add(schema.blob_sk(ns, channel, version))
    return s3_keys, blob_sks


def reap_thread(
    s: BaseDynamoDBSaver,
    thread_id: str,
    *,
    expired_before: float,
    claimed: bool = False,
    max_bytes: int | None = None,
) -> Op[PruneResult]:
    """Delete what an expired thread left: items stamped before the cutoff.

    Items written after ``expired_before`` (a thread that came back to
    life) stay, with the blobs and S3 objects they reference.

    ``claimed``: the expiry is only a claim (a Streams record, which whoever
    may invoke the reaper can forge). The table then decides: a thread whose
    checkpoints carry no activity stamp (no TTL), or whose head has not
    expired, is left alone; otherwise only what its own stamps say expired
    before now goes (a thread that came back to life keeps its new part).

    ``max_bytes``: the table-wide jobs' budget for one thread. A larger one
    is reaped from its outline, its payloads streamed (see ``load_within``);
    only an outline over the budget raises ``ThreadTooLargeError``.
    """
    if max_bytes is None:
        thread = yield from load_thread(s, thread_id)
    else:
        thread = yield from load_within(s, thread_id, max_bytes)
    cutoff = int(expired_before)
    res = PruneResult(threads=1)
    if claimed:
        now = int(clock.now())
        head = next((m for m in thread.meta if m[ATTR.SK]["S"] == schema.HEAD_SK), None)
        head_ttl = _items.int_attr(head, ATTR.TTL) if head is not None else None
        stamped = any(_items.int_attr(it, ATTR.EXPIRES) is not None for it in thread.checkpoints.values())
        if not stamped or (head_ttl is not None and head_ttl > now):
            return res  # not expired by the table's own account: nothing is deleted
        cutoff = min(cutoff, now)

    def old(it: Item) -> bool:
        exp = _items.int_attr(it, ATTR.EXPIRES)
        return exp is None or exp <= cutoff

    keep = {key for key, it in thread.checkpoints.items() if not old(it)}
    drop_writes = [
        w for key, ws in thread.writes.items() if key not in thread.checkpoints for w in ws if old(w)
    ]
    stale_meta = [
        m
        for m in thread.meta
        if (ttl := _items.int_attr(m, ATTR.TTL)) is not None and ttl <= max(cutoff, int(clock.now()))
    ]
    # Reaping is a delete: lineages it removes entirely are buried first,
    # so a run still in flight on one cannot bring it back. A lineage with
    # a checkpoint written after the cutoff came back to life: not buried.
    kept_roots = {_items.root_of(thread.checkpoints[key], key[1]) for key in keep}
    buried: dict[str, set[str]] = {}
    for (ns, cid), it in thread.checkpoints.items():
        if (ns, cid) not in keep and (root := _items.root_of(it, cid)) not in kept_roots:
            buried.setdefault(ns, set()).add(root)
    if buried:
        head_stale = any(m[ATTR.SK]["S"] == schema.HEAD_SK for m in stale_meta)
        yield from _bury(s, thread_id, buried, list(thread.tombstones.values()), retire_head=head_stale)
        # A stale head is retired (it keeps the dead roots), not deleted.
        stale_meta = [m for m in stale_meta if m[ATTR.SK]["S"] != schema.HEAD_SK]
    yield from _delete_unkept(s, thread, keep, res, drop_writes=drop_writes)
    if stale_meta:
        yield from delete_items(s, stale_meta)
    if not keep and s.bucket_name is not None:
        # Nothing live remains: objects that no item ever pointed to
        # (failed writes) go too, unless written after the cutoff.
        for prefix in s._s3_thread_prefixes(thread_id):
            res.s3_objects_deleted += yield from _delete_s3_prefix_before(s, prefix, cutoff)
    return res


def _delete_s3_prefix_before(s: BaseDynamoDBSaver, prefix: str, cutoff: float) -> Op[int]:
    deleted = 0
    kwargs: dict[str, Any] = {"Bucket": s.bucket_name, "Prefix": prefix}
    while True:
        resp = yield s3("list_objects_v2", **kwargs)
        keys = [o["Key"] for o in resp.get("Contents", []) if o["LastModified"].timestamp() <= cutoff]
        if keys:
            yield from _requests.delete_s3_keys(s.bucket_name, keys)
            deleted += len(keys)
        if not resp.get("IsTruncated"):
            return deleted
        kwargs["ContinuationToken"] = resp["NextContinuationToken"]


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
    return _pure(_keep_walk(checkpoints, survivors, thread_id, None))


#: Completes an item for the keep walk (its ``VALUES``, from the table).
Fetch = Callable[[Item], Op[Item]]


def _keep_walk(
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
                raise _items.parent_cycle_error(thread_id, ns, walked, parent)
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


def _pure(op: Op[Any]) -> Any:
    """Run an operation that makes no request (a walk without ``fetch``)."""
    try:
        op.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("an I/O-free walk asked for a request")
