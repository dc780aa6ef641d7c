"""Deleting threads, runs and expired items, I/O-free, in an order that keeps every readable checkpoint whole.

What lives here: ``delete_thread`` (tombstone first, then items, then S3
objects), ``delete_for_runs`` (a run's checkpoints and writes, through the
run index) and reaping one expired thread. Every operation is idempotent:
running it twice, or two at once, deletes nothing more than one run would.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._engine.aws import contain_failure
from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Op, ddb, s3
from langgraph.checkpoint.dynamodb._operations import requests
from langgraph.checkpoint.dynamodb._operations.keep import delete_unkept, keep_set
from langgraph.checkpoint.dynamodb._operations.threads import (
    delete_items,
    load_thread,
    load_thread_keys,
    load_within,
)
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import (
    AttributeValue,
    Item,
    ThreadItems,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
)
from langgraph.checkpoint.dynamodb.lifecycle import (
    PruneResult,
)
from langgraph.checkpoint.dynamodb.schema import ATTR


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
    pk = s.keys.pk(thread_id)
    items = yield from requests.query_all(
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
    _forget_thread(s, thread_id)
    # Deletion is final: tombstones for every lineage deleted go first, so
    # a run still in flight that writes on one of them (or a delete that
    # fails part way) leaves nothing readable, and the head they retire
    # refuses to come back for those lineages.
    doomed, tombstones, roots = _sort_for_delete(items, thread_id)
    if roots:
        yield from _bury(s, thread_id, roots, tombstones, retire_head=True)
        # The retired head stays: it refuses the dead lineages (see ``heads.on_activity``).
        doomed = [it for it in doomed if it[ATTR.SK]["S"] != schema.HEAD_SK]
    if holder:
        # Fence the old holder out before anything goes: its lease-bound writes
        # check owner and token, and the next acquisition counts on from here.
        yield _fence_out(s, pk)
    # Items first: once they are gone nothing points to the S3 objects.
    yield from requests.ordered_deletes(s.table_name, doomed)
    if s.bucket_name is not None:
        for prefix in s.keys.s3_thread_prefixes(thread_id):
            yield from requests.delete_s3_prefix(s.bucket_name, prefix)


def _forget_thread(s: BaseDynamoDBSaver, thread_id: str) -> None:
    """Drop what this saver remembers of a thread it deletes."""
    s.caches.forget_thread(
        thread_id,
        s.keys.pk(thread_id),
        bucket=s.bucket_name or "",
        s3_prefixes=s.keys.s3_thread_prefixes(thread_id),
    )


def _sort_for_delete(
    items: Sequence[Item], thread_id: str
) -> tuple[list[Item], list[Item], dict[str, set[str]]]:
    """``(doomed, tombstones, roots)``: the items to delete, the tombstones, each namespace's lineage roots."""
    roots: dict[str, set[str]] = {}
    legacy: dict[str, list[str]] = {}
    tombstones: list[Item] = []
    doomed: list[Item] = []
    for it in items:
        ns, kind, cid, _ = shapes.parse_sk(it)
        if kind == schema.TOMBSTONE_ITEM:
            tombstones.append(it)
            continue
        doomed.append(it)
        if kind == schema.CHECKPOINT_ITEM:
            rt = shapes.str_attr(it, ATTR.ROOT, f"checkpoint {cid!r} of thread {thread_id!r}")
            if rt is None:
                legacy.setdefault(ns, []).append(cid)
            else:
                roots.setdefault(ns, set()).add(rt)
    for ns, ids in legacy.items():
        roots.setdefault(ns, set()).update(sorted(ids)[-schema.LEGACY_ROOTS_MAX :])
    return doomed, tombstones, roots


def _fence_out(s: BaseDynamoDBSaver, pk: str) -> Call:
    """The update that bumps a lock's fencing token and clears its owner (a forced delete)."""
    return ddb(
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
    head keeps the bare roots, so that ``heads.on_activity`` can refuse, in its
    own UpdateItem, to bring the head back for a deleted lineage;
    ``retire_head`` also takes it out of the threads index and drops its
    TTL (the thread is gone, not idle). Entries older than
    ``schema.FINALITY_WINDOW`` are forgotten here. Sets, updated with
    ADD/DELETE, so concurrent deletes never lose each other's entries.
    """
    pk = {"S": s.keys.pk(thread_id)}
    now = int(clock.now())
    dead_here = {r for rs in roots.values() for r in rs}
    fresh = dead_here | {schema.ORPHAN_ROOT}
    # Every tombstone lists the roots deleted in the whole thread, not
    # only its namespace's: a subgraph that a late run starts in this
    # namespace inherits an enclosing graph's (deleted) root, and the
    # latest read of this namespace only sees this tombstone.
    calls = [_tombstone_call(s, pk, ns, dead_here, now) for ns, rs in roots.items() if rs]
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
    forget = _forget_calls(s, pk, tombstones, now, dead_here, fresh)
    if forget:
        yield Gather(forget)


def _tombstone_call(s: BaseDynamoDBSaver, pk: AttributeValue, ns: str, dead: set[str], now: int) -> Call:
    """The update that adds ``dead`` roots (stamped ``now``) to a namespace's tombstone."""
    sk = schema.tombstone_sk(ns)
    names = {"#t": ATTR.KIND, "#f": ATTR.FORMAT, "#dr": ATTR.DEAD}
    values: dict[str, Any] = {
        ":t": {"S": schema.TOMBSTONE_ITEM},
        ":f": {"N": str(schema.TOMBSTONE_FORMAT_VERSION)},
        ":dr": {"SS": sorted(f"{now}:{r}" for r in dead)},
    }
    expr = "SET #t = :t, #f = :f ADD #dr :dr"
    whole = schema.whole_ids(sk, ns=ns)
    if whole is not None:
        names["#k"] = ATTR.KEY
        values[":k"] = whole
        values[":f"] = {"N": str(schema.DIGESTED_FORMAT_VERSION)}
        expr = "SET #t = :t, #f = :f, #k = :k ADD #dr :dr"
    return ddb(
        "update_item",
        TableName=s.table_name,
        Key={ATTR.PK: pk, ATTR.SK: {"S": sk}},
        UpdateExpression=expr,
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )


def _forget_calls(
    s: BaseDynamoDBSaver,
    pk: AttributeValue,
    tombstones: Sequence[Item],
    now: int,
    dead_here: set[str],
    fresh: set[str],
) -> list[Call]:
    """Updates that drop entries past the finality window from tombstones and the head."""
    forget: list[Call] = []
    stale_roots: set[str] = set()
    kept_entries: set[str] = set()
    for tomb in tombstones:
        old = _forgotten(shapes.dead_entries(tomb), now, added=len(dead_here))
        kept_entries.update(e for e in shapes.dead_entries(tomb) if e not in old)
        if old:
            stale_roots.update(shapes.entry_root(e) for e in old)
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
    live_entries = {shapes.entry_root(e) for e in kept_entries}
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
    return forget


def _forgotten(entries: list[str], now: int, *, added: int) -> list[str]:
    """The entries of a tombstone the next delete forgets: older than the finality window,
    and the oldest beyond ``schema.TOMBSTONE_ENTRIES_MAX`` (``added`` new ones counted)."""
    old = [e for e in entries if shapes.entry_time(e) < now - schema.FINALITY_WINDOW]
    gone = set(old)
    rest = sorted((e for e in entries if e not in gone), key=shapes.entry_time, reverse=True)
    room = max(0, schema.TOMBSTONE_ENTRIES_MAX - added)
    return old + rest[room:]


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
        shapes.item_size(it)
        for group in (thread.checkpoints.values(), thread.blobs.values(), thread.meta)
        for it in group
    ) + sum(shapes.item_size(w) for ws in thread.writes.values() for w in ws)
    yield from delete_thread(s, thread_id, force=force)
    return res


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
        head_ttl = shapes.int_attr(head, ATTR.TTL) if head is not None else None
        stamped = any(shapes.int_attr(it, ATTR.EXPIRES) is not None for it in thread.checkpoints.values())
        if not stamped or (head_ttl is not None and head_ttl > now):
            return res  # not expired by the table's own account: nothing is deleted
        cutoff = min(cutoff, now)

    def old(it: Item) -> bool:
        exp = shapes.int_attr(it, ATTR.EXPIRES)
        return exp is None or exp <= cutoff

    keep = {key for key, it in thread.checkpoints.items() if not old(it)}
    drop_writes = [
        w for key, ws in thread.writes.items() if key not in thread.checkpoints for w in ws if old(w)
    ]
    stale_meta = [
        m
        for m in thread.meta
        if (ttl := shapes.int_attr(m, ATTR.TTL)) is not None and ttl <= max(cutoff, int(clock.now()))
    ]
    # Reaping is a delete: lineages it removes entirely are buried first,
    # so a run still in flight on one cannot bring it back. A lineage with
    # a checkpoint written after the cutoff came back to life: not buried.
    kept_roots = {shapes.root_of(thread.checkpoints[key], key[1]) for key in keep}
    buried: dict[str, set[str]] = {}
    for (ns, cid), it in thread.checkpoints.items():
        if (ns, cid) not in keep and (root := shapes.root_of(it, cid)) not in kept_roots:
            buried.setdefault(ns, set()).add(root)
    if buried:
        head_stale = any(m[ATTR.SK]["S"] == schema.HEAD_SK for m in stale_meta)
        yield from _bury(s, thread_id, buried, list(thread.tombstones.values()), retire_head=head_stale)
        # A stale head is retired (it keeps the dead roots), not deleted.
        stale_meta = [m for m in stale_meta if m[ATTR.SK]["S"] != schema.HEAD_SK]
    yield from delete_unkept(s, thread, keep, res, drop_writes=drop_writes)
    if stale_meta:
        yield from delete_items(s, stale_meta)
    if not keep and s.bucket_name is not None:
        # Nothing live remains: objects that no item ever pointed to
        # (failed writes) go too, unless written after the cutoff.
        for prefix in s.keys.s3_thread_prefixes(thread_id):
            res.s3_objects_deleted += yield from _delete_s3_prefix_before(s, prefix, cutoff)
    return res


def _delete_s3_prefix_before(s: BaseDynamoDBSaver, prefix: str, cutoff: float) -> Op[int]:
    deleted = 0
    kwargs: dict[str, Any] = {"Bucket": s.bucket_name, "Prefix": prefix}
    while True:
        resp = yield s3("list_objects_v2", **kwargs)
        keys = [o["Key"] for o in resp.get("Contents", []) if o["LastModified"].timestamp() <= cutoff]
        if keys:
            yield from requests.delete_s3_keys(s.bucket_name, keys)
            deleted += len(keys)
        if not resp.get("IsTruncated"):
            return deleted
        kwargs["ContinuationToken"] = resp["NextContinuationToken"]


def delete_for_runs(s: BaseDynamoDBSaver, run_ids: Sequence[str]) -> Op[PruneResult]:
    """Delete the checkpoints and writes of runs, found through the run index.

    A checkpoint of a deleted run that a surviving checkpoint still needs
    for its delta channels stays (with the writes on that path).

    Raises:
        CorruptPayloadError: some threads could not be read or deleted (a
            malformed item, a parent cycle); it names them, after the runs'
            items in every other thread were deleted.
    """
    total, failed = yield from delete_for_runs_isolated(s, run_ids)
    if failed:
        raise CorruptPayloadError(
            f"delete_for_runs deleted the runs' items in every other thread; {len(failed)} thread(s) "
            f"could not be read or deleted and still hold some: {'; '.join(failed[:5])}"
            + (f"; and {len(failed) - 5} more" if len(failed) > 5 else "")
        )
    return total


def delete_for_runs_isolated(
    s: BaseDynamoDBSaver, run_ids: Sequence[str]
) -> Op[tuple[PruneResult, list[str]]]:
    """:func:`delete_for_runs` that returns the threads it could not handle instead of raising.

    Returns what was removed and one ``"thread 't': Error: message"`` entry
    per thread whose items could not be read or deleted (its share of the
    runs stays). Service errors (:func:`is_service_error`) still raise.
    """
    if isinstance(run_ids, (str, bytes)):
        raise TypeError("run_ids must be a list of run ids, not a single string")
    runs = [str(r) for r in run_ids]
    total = PruneResult()
    failed: list[str] = []
    if not runs:
        return total, failed
    by_thread: dict[str, set[str]] = {}  # pk -> sort keys of the runs' items
    for run_id in dict.fromkeys(runs):
        kwargs: dict[str, Any] = dict(
            TableName=s.table_name,
            IndexName=schema.RUN_INDEX_NAME,
            KeyConditionExpression="#rid = :rid",
            ExpressionAttributeNames={"#rid": ATTR.RUN_ID},
            ExpressionAttributeValues={":rid": {"S": schema.run_key(run_id)}},
        )
        while True:
            resp = yield ddb("query", **kwargs)
            for it in resp.get("Items", []):
                by_thread.setdefault(it[ATTR.PK]["S"], set()).add(it[ATTR.SK]["S"])
            if "LastEvaluatedKey" not in resp:
                break
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
    run_set = {schema.run_key(r) for r in runs}  # as the items hold them
    for pk in sorted(by_thread):
        # An untenanted (operator) saver deletes the runs of every
        # tenant, each through a view of that tenant (see _owner_of_pk).
        owner = s.owner_of(pk)
        if owner is None:
            continue
        saver, thread_id = owner
        # The run index can list any tenant's items under a run id: one
        # thread that cannot be read must not keep the others' items (what
        # the caller asked to delete) in place.
        res = yield from contain_failure(
            _delete_runs_of_thread(saver, thread_id, run_set), failed, f"thread {thread_id!r}"
        )
        if res is not None:
            total.add(res)
    return total, failed


def _delete_runs_of_thread(saver: BaseDynamoDBSaver, thread_id: str, run_set: set[str]) -> Op[PruneResult]:
    """One thread's share of ``delete_for_runs``: its checkpoints and writes of these runs."""
    thread = yield from load_thread(saver, thread_id)
    res = PruneResult(threads=1)
    # The index is eventually consistent: trust the item's own rid.
    doomed_cps = {
        key for key, it in thread.checkpoints.items() if it.get(ATTR.RUN_ID, {}).get("S") in run_set
    }
    survivors = [key for key in thread.checkpoints if key not in doomed_cps]
    keep, ancestors = keep_set(thread.checkpoints, survivors, thread_id=thread_id)
    drop_writes = [
        w
        for key, ws in thread.writes.items()
        if key not in doomed_cps and key not in ancestors
        for w in ws
        if w.get(ATTR.RUN_ID, {}).get("S") in run_set
    ]
    res.kept_for_delta = len(keep) - len(survivors)
    yield from delete_unkept(saver, thread, keep, res, drop_writes=drop_writes)
    return res
