"""Reading, I/O-free: ``get_tuple``, ``list``, and fetching and decoding what they need.

What lives here: the latest-checkpoint Query, listing pages, collecting the
references a checkpoint item makes (held values, blob items, S3 objects),
fetching them in waves, and decoding items into ``CheckpointTuple``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    writes_sort_key,
)

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.ops import PACKED_EXPANSION, Call, Emit, Gather, Op, compute, ddb
from langgraph.checkpoint.dynamodb._operations import heads, requests
from langgraph.checkpoint.dynamodb._operations.fetch import collect_refs, fetch, payload, value_ref_target
from langgraph.checkpoint.dynamodb._operations.placement import new_tag
from langgraph.checkpoint.dynamodb._parts import chains, shapes
from langgraph.checkpoint.dynamodb._parts.binding import body_place, metadata_place, value_place, write_place
from langgraph.checkpoint.dynamodb._parts.chains import LatestPageHint
from langgraph.checkpoint.dynamodb._parts.shapes import (
    AttributeValue,
    CheckpointRecord,
    Item,
    Ref,
)
from langgraph.checkpoint.dynamodb._parts.valuecache import held_key
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, Location, Placement
from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

#: Items in the first Query page when looking for the latest checkpoint of a
#: thread this saver has not read yet: the latest checkpoint plus the writes
#: items of its tasks normally fit, and older checkpoints holding values it
#: references. Read units are paid per item read: once the saver has read or
#: written a thread, the page is sized from what its latest checkpoint needs
#: (see ``latest_limit``). More pages (of ``LATEST_PAGE_MORE``) only when a
#: checkpoint has many tasks' writes.
LATEST_PAGE = 8
LATEST_PAGE_MORE = 64

_MISSING = object()


def dead_roots_call(s: BaseDynamoDBSaver, thread_id: str) -> Call:
    """GetItem of the dead roots the thread head keeps, for reads whose Query
    does not reach a tombstone (by id, ``before``). Thread-wide: it also
    covers a subgraph namespace that a late run started after the delete."""
    return ddb(
        "get_item",
        TableName=s.table_name,
        Key={ATTR.PK: {"S": s.keys.pk(thread_id)}, ATTR.SK: {"S": schema.HEAD_SK}},
        ProjectionExpression="#dr",
        ExpressionAttributeNames={"#dr": ATTR.DEAD},
        ConsistentRead=True,
    )


def get_tuple(s: BaseDynamoDBSaver, config: RunnableConfig) -> Op[CheckpointTuple | None]:
    thread_id, ns, cid = s.keys.ids(config)
    pk = s.keys.pk(thread_id)
    nearby: list[CheckpointRecord] = []
    if cid is not None:
        record = yield from _get_by_id(s, thread_id, pk, ns, cid)
    else:
        record, nearby = yield from _get_latest(s, thread_id, pk, ns)
    if record is None:
        return None
    if shapes.expired_stamp(record.item):
        alive = yield from heads.thread_alive(s, thread_id)
        if not alive:
            return None
    elif s.touch_on_read:
        yield from heads.on_activity(s, thread_id, root=shapes.root_of(record.item, record.checkpoint_id))
    tuples = yield from decode_records(s, [record], local=nearby)
    return tuples[0]


def _get_by_id(
    s: BaseDynamoDBSaver, thread_id: str, pk: str, ns: str, cid: str
) -> Op[CheckpointRecord | None]:
    """``get_tuple`` of a checkpoint named by id: its key range, unless its lineage was deleted."""
    query = requests.checkpoint_query(s.table_name, pk, ns, cid)
    # No tombstone is in this key range: read the head's dead roots in
    # the same round trip (one more request, not one more wait).
    first, head = yield Gather([ddb("query", **query), dead_roots_call(s, thread_id)])
    items = list(first.get("Items", []))
    if "LastEvaluatedKey" in first:
        items += yield from requests.query_all(**query, ExclusiveStartKey=first["LastEvaluatedKey"])
    record = shapes.group(thread_id, items, only=cid)
    if record is not None and shapes.is_dead(record.item, shapes.head_roots(head.get("Item"))):
        return None
    return record


def _latest_query(s: BaseDynamoDBSaver, pk: str, ns: str) -> dict[str, Any]:
    """The first page of the latest-checkpoint Query of a namespace (sized by ``latest_limit``)."""
    # Newest first: the first checkpoint item is the latest; its
    # writes items sort right after it, so they come just before.
    kwargs = requests.newest_first_query(
        s.table_name,
        "#pk = :pk AND begins_with(#sk, :pre)",
        {":pk": {"S": pk}, ":pre": {"S": schema.checkpoint_prefix(ns)}},
    )
    kwargs["Limit"] = latest_limit(s, pk, ns)
    return kwargs


def _get_latest(
    s: BaseDynamoDBSaver, thread_id: str, pk: str, ns: str
) -> Op[tuple[CheckpointRecord | None, list[CheckpointRecord]]]:
    """``get_tuple`` without an id: the latest live checkpoint, and older ones read with it.

    Pages until a live checkpoint item is found; the first page is sized
    from the last hint, later ones are larger. Records the hint for the next read.
    """
    kwargs = _latest_query(s, pk, ns)
    scan = _LatestScan(thread_id, ns)
    while scan.record is None:
        resp = yield ddb("query", **kwargs)
        scan.take(resp.get("Items", []))
        if scan.record is None:
            if "LastEvaluatedKey" not in resp:
                break
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
            kwargs["Limit"] = LATEST_PAGE_MORE
    record = scan.record
    if record is not None:
        tasks = {w[ATTR.SK]["S"] for w in record.writes}
        above = max(0, scan.position - len(record.writes) - 1)
        s.caches.note_latest(
            pk, ns, LatestPageHint(record.checkpoint_id, tasks, above, shapes.holds_refs(record.item))
        )
    return record, scan.nearby


@dataclass
class _LatestScan:
    """What the latest-checkpoint Query of one namespace has read so far, page after page."""

    thread_id: str
    ns: str
    #: The latest live checkpoint, once found.
    record: CheckpointRecord | None = None
    #: Older checkpoints read with it: one may hold a value the latest references.
    nearby: list[CheckpointRecord] = field(default_factory=list)
    #: Writes items by checkpoint id (they sort just before their checkpoint).
    writes: dict[str, list[Item]] = field(default_factory=dict)
    dead: set[str] | None = None
    #: Items read up to the latest checkpoint's item (sizes the next read's page).
    position: int = 0

    def take(self, items: Iterable[Item]) -> None:
        """Sort one page's items (newest first) into the scan."""
        for it in items:
            if self.record is None:
                self.position += 1
            shapes.check_format(it)
            item_ns, kind, item_cid, _ = shapes.parse_sk(it)
            if item_ns != self.ns:
                continue  # another namespace whose digested key collides: never merged
            if kind == schema.TOMBSTONE_ITEM:
                # Sorts first: known before any checkpoint is considered.
                self.dead = shapes.tomb_roots(it)
            elif kind == schema.CHECKPOINT_ITEM and shapes.is_dead(it, self.dead):
                continue  # a late write on a deleted lineage
            elif kind == schema.WRITES_ITEM:
                self.writes.setdefault(item_cid, []).append(it)
            elif kind == schema.CHECKPOINT_ITEM and self.record is None:
                self.record = CheckpointRecord(
                    self.thread_id, item_ns, item_cid, it, self.writes.get(item_cid, [])
                )
            elif kind == schema.CHECKPOINT_ITEM:
                # Older checkpoints on the same page (read anyway): one
                # may hold a value the latest references.
                self.nearby.append(CheckpointRecord(self.thread_id, item_ns, item_cid, it))


def latest_limit(s: BaseDynamoDBSaver, pk: str, ns: str) -> int:
    """``Limit`` of the first latest-checkpoint Query page: what the latest checkpoint needs.

    From what this saver last knew of it (``LatestPageHint``: its own ``put``
    and ``put_writes``, or its last read): the items above it, its writes
    items, itself. A latest checkpoint that references values held by older
    checkpoints, or a thread this saver knows nothing of, gets the full
    ``LATEST_PAGE`` (the holders are usually on it). Only a hint: if another
    process added writes or checkpoints since, the page falls short and the
    read takes one more page (one more round trip), never a wrong answer.
    """
    hint = s.caches.latest_page(pk, ns)
    if hint is None:
        return LATEST_PAGE
    need = min(LATEST_PAGE_MORE, hint.above + len(hint.tasks) + 1)
    return max(need, LATEST_PAGE) if hint.held else need


def seed_version(
    s: BaseDynamoDBSaver,
    record: CheckpointRecord,
    channel: str,
    av: AttributeValue,
    fetched: Mapping[Ref, bytes],
) -> str:
    """The version of the value ``record``'s values map holds for ``channel`` (``av``), to check its seal.

    A reference names it; an inline value does not, and only the checkpoint's
    body (sealed too) says which version it is. Read only where the saver
    seals (an unsealed payload is not checked against a place).
    """
    if "M" in av:
        return str(av["M"]["v"]["S"])
    if not s.payloads.seals:
        return ""
    cid = record.checkpoint_id
    where = f"checkpoint {cid!r}"
    body_av = record.item.get(ATTR.BODY)
    if body_av is None:
        raise CorruptPayloadError(f"{where}: body attribute missing")
    body = s.payloads.unpack(
        payload(s, body_av, fetched, where), where, (record.thread_id, body_place(record.checkpoint_ns, cid))
    )
    if not isinstance(body, dict):
        raise CorruptPayloadError(f"{where}: body is not a mapping")
    return str((body.get("channel_versions") or {}).get(channel))


def decode_metadata(
    s: BaseDynamoDBSaver, record: CheckpointRecord, fetched: Mapping[Ref, bytes]
) -> CheckpointMetadata:
    where = f"metadata of checkpoint {record.checkpoint_id!r}"
    av = record.item.get(ATTR.METADATA)
    if av is None:
        raise CorruptPayloadError(f"{where}: attribute missing")
    bind = (record.thread_id, metadata_place(record.checkpoint_ns, record.checkpoint_id))
    md = s.payloads.unpack(payload(s, av, fetched, where), where, bind)
    if not isinstance(md, dict):
        raise CorruptPayloadError(f"{where}: not a mapping")
    return cast(CheckpointMetadata, md)


def decode_records(
    s: BaseDynamoDBSaver,
    records: list[CheckpointRecord],
    metadata: Mapping[int, CheckpointMetadata] | None = None,
    local: Iterable[CheckpointRecord] = (),
) -> Op[list[CheckpointTuple]]:
    refs: list[Ref] = []
    for r in records:
        with shapes.malformed(f"checkpoint {r.checkpoint_id!r} of thread {r.thread_id!r}"):
            refs.extend(collect_refs(s, r))
    fetched = yield from fetch(s, refs, local=[*records, *local])
    # Decoding is the read's CPU work: one Compute, off the event loop in
    # the async saver when the payloads are large.
    size = decode_size(records, fetched)
    return (yield from compute(_to_tuples, s, records, fetched, metadata, size=size))


def decode_size(records: Iterable[CheckpointRecord], fetched: Mapping[Ref, bytes]) -> int:
    """About how many serialized bytes decoding ``records`` handles (the ``Compute`` size).

    Fetched bodies plus the items' own bytes, times ``PACKED_EXPANSION``: a
    packed byte stands for several serialized ones (chat text compresses
    4-6x), and the offload threshold is in serialized bytes.
    """
    size = sum(map(len, fetched.values()))
    for r in records:
        # A malformed item counts as nothing here: decoding reports it, by name.
        with contextlib.suppress(Exception):
            size += sum(shapes.item_size(it) for it in (r.item, *r.writes))
    return size * PACKED_EXPANSION


def _to_tuples(
    s: BaseDynamoDBSaver,
    records: list[CheckpointRecord],
    fetched: Mapping[Ref, bytes],
    metadata: Mapping[int, CheckpointMetadata] | None,
) -> list[CheckpointTuple]:
    out = []
    for r in records:
        with shapes.malformed(f"checkpoint {r.checkpoint_id!r} of thread {r.thread_id!r}"):
            out.append(_to_tuple(s, r, fetched, (metadata or {}).get(id(r))))
    return out


def _held_here(
    s: BaseDynamoDBSaver,
    record: CheckpointRecord,
    key: tuple[str, str, str, str],
    channel: str,
    packed: bytes,
) -> Placement:
    """The placement of a value the checkpoint item being read holds, with a tag for the value cache.

    The tag this process already uses for it, else a new one: later
    references this process writes carry it, and the cache keeps the bytes
    under it (see ``valuecache``), so a later read in this process does not
    fetch the holder.
    """
    cid = record.checkpoint_id
    known = s.caches.placement(key)
    tag = known[2] if known is not None and known[0] == "c" and known[1] == cid and known[2] else new_tag()
    s.caches.value_cache.put(
        held_key(record.item[ATTR.PK]["S"], record.item[ATTR.SK]["S"], channel, tag), packed
    )
    return ("c", cid, tag)


def _to_tuple(
    s: BaseDynamoDBSaver,
    record: CheckpointRecord,
    fetched: Mapping[Ref, bytes],
    metadata: CheckpointMetadata | None = None,
) -> CheckpointTuple:
    item = record.item
    cid = record.checkpoint_id
    pk = s.keys.pk(record.thread_id)
    body_av = item.get(ATTR.BODY)
    if body_av is None:
        raise CorruptPayloadError(f"checkpoint {cid!r}: body attribute missing")
    where = f"checkpoint {cid!r}"
    ns = record.checkpoint_ns
    checkpoint = s.payloads.unpack(
        payload(s, body_av, fetched, where), where, (record.thread_id, body_place(ns, cid))
    )
    if not isinstance(checkpoint, dict):
        raise CorruptPayloadError(f"checkpoint {cid!r}: body is not a mapping")
    channel_values: dict[str, Any] = {}
    versions = checkpoint.get("channel_versions") or {}
    for channel, av in shapes.map_attr(item, ATTR.VALUES, f"checkpoint {cid!r}").items():
        where = f"channel {channel!r} of checkpoint {cid!r}"
        placement: Placement
        version = str(versions.get(channel))
        key = (record.thread_id, ns, channel, version)
        if "B" in av:
            packed = av["B"]
            # Held here: later checkpoints copy it if small, else point here.
            placement = (
                ("inline", packed, "")
                if len(packed) <= s.inline_threshold
                else _held_here(s, record, key, channel, packed)
            )
        else:
            packed = fetched[value_ref_target(s, record, pk, channel, av)]
            loc = cast(Location, av["M"]["l"]["S"])
            # A later put carries the reference's write tag forward.
            tag = shapes.value_tag(av) if loc in ("s3", "c") else ""
            placement = (loc, av["M"]["c"]["S"] if loc == "c" else None, tag)
        if channel in versions:
            s.caches.remember(key, placement)
        channel_values[channel] = s.payloads.unpack(
            packed, where, (record.thread_id, value_place(ns, channel, version))
        )
    checkpoint["channel_values"] = channel_values
    s.caches.note_root(record.thread_id, record.checkpoint_ns, cid, shapes.root_of(item, cid))
    if metadata is None:
        metadata = decode_metadata(s, record, fetched)
    counters = metadata.get("counters_since_delta_snapshot")
    if counters:
        s.caches.note_depth(record.thread_id, record.checkpoint_ns, cid, counters)
    pending = decode_writes(s, record, fetched)
    parent = shapes.str_attr(item, ATTR.PARENT_ID, f"checkpoint {cid!r}")
    conf = {
        "thread_id": record.thread_id,
        "checkpoint_ns": record.checkpoint_ns,
    }
    return CheckpointTuple(
        config={"configurable": {**conf, "checkpoint_id": cid}},
        checkpoint=cast(Checkpoint, checkpoint),
        metadata=metadata,
        parent_config={"configurable": {**conf, "checkpoint_id": parent}} if parent else None,
        pending_writes=pending,
    )


def decode_writes(
    s: BaseDynamoDBSaver,
    record: CheckpointRecord,
    fetched: Mapping[Ref, bytes],
    channels: Container[str] | None = None,
) -> list[PendingWrite]:
    """The record's pending writes, decoded and in LangGraph's order; only ``channels``' if given."""
    rows: list[tuple[tuple[str, str, int], PendingWrite]] = []
    for w, name, idx in shapes.task_writes(record.writes):
        task_id = w.get(ATTR.TASK_ID, {}).get("S", "")
        task_path = w.get(ATTR.TASK_PATH, {}).get("S", "")
        av = w[name]
        channel = av["L"][0]["S"]
        if channels is not None and channel not in channels:
            continue  # not asked for: never unpacked
        where = f"write {channel!r} of task {task_id!r} on checkpoint {record.checkpoint_id!r}"
        bind = (
            record.thread_id,
            write_place(record.checkpoint_ns, record.checkpoint_id, task_id, idx, channel),
        )
        value = s.payloads.unpack(payload(s, av["L"][1], fetched, where), where, bind)
        rows.append((writes_sort_key(task_path, task_id, idx), (task_id, channel, value)))
    rows.sort(key=lambda r: r[0])
    return [r[1] for r in rows]


def list_checkpoints(
    s: BaseDynamoDBSaver,
    config: RunnableConfig | None,
    *,
    filter: dict[str, Any] | None = None,
    before: RunnableConfig | None = None,
    limit: int | None = None,
) -> Op[None]:
    if not _wants_any(limit):
        return
    if filter is not None and not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict, got {type(filter).__name__}")
    before_id = _before_id(before)
    if config is None:
        yield from _list_scan(s, filter=filter, before_id=before_id, limit=limit)
        return
    thread_id, _, cid = s.keys.ids(config)
    conf = config.get("configurable") or {}
    ns: str | None = conf.get("checkpoint_ns") if "checkpoint_ns" in conf else None
    pk = s.keys.pk(thread_id)
    if ns is None:
        yield from _list_thread(s, thread_id, pk, cid=cid, filter=filter, before_id=before_id, limit=limit)
        return
    dead: set[str] | None = None
    if cid is not None or before_id:
        # This key range does not reach the tombstone: the head's dead roots.
        head = yield dead_roots_call(s, thread_id)
        dead = shapes.head_roots(head.get("Item"))
    kwargs = _list_query(s.table_name, pk, ns, cid=cid, before_id=before_id)
    if limit is not None and not filter:
        kwargs["Limit"] = min(1000, limit * 4 + 8)
    remaining = limit
    writes: dict[str, list[Item]] = {}
    # LangGraph's get_state_history asks for the delta history of each
    # checkpoint listed: keep what the walks will need (see chains).
    notes = chains.ListingNotes()
    while True:
        resp = yield ddb("query", **kwargs)
        page, dead = _listed_page(thread_id, resp.get("Items", []), writes, dead)
        # Strongly consistent, deleted lineages known: it vouches for the
        # listed checkpoints to the history calls that follow (see chains).
        notes.note(s.caches.chain_cache, pk, page, dead)
        emitted = yield from _emit_records(
            s, page, cid=cid, filter=filter, before_id=before_id, limit=remaining
        )
        if remaining is not None:
            remaining -= emitted
            if remaining <= 0:
                return
        if "LastEvaluatedKey" not in resp:
            return
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _wants_any(limit: int | None) -> bool:
    """Check ``list``'s ``limit``; ``False``: it asks for nothing (no request is made)."""
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
        raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
    return limit is None or limit > 0


def _before_id(before: RunnableConfig | None) -> str | None:
    """The checkpoint id ``list``'s ``before`` bounds the listing by (``None``: no bound)."""
    if before is None:
        return None
    conf = before.get("configurable") if isinstance(before, Mapping) else None
    if not isinstance(conf, Mapping):
        raise TypeError(
            "before must be a config like {'configurable': {'checkpoint_id': ...}}, "
            f"got {type(before).__name__}"
        )
    return conf.get("checkpoint_id")


def _list_thread(
    s: BaseDynamoDBSaver,
    thread_id: str,
    pk: str,
    *,
    cid: str | None,
    filter: dict[str, Any] | None,
    before_id: str | None,
    limit: int | None,
) -> Op[None]:
    """``list`` of a thread in all its namespaces (``checkpoint_ns`` not given)."""
    # One item collection, read and merged newest first (an
    # administrative path, not a hot one).
    items = yield from requests.query_all(
        TableName=s.table_name,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": ATTR.PK},
        ExpressionAttributeValues={":pk": {"S": pk}},
        ConsistentRead=True,
    )
    records = shapes.group_all(thread_id, items)
    records.sort(key=lambda r: r.checkpoint_id, reverse=True)
    yield from _emit_records(s, records, cid=cid, filter=filter, before_id=before_id, limit=limit)


def _list_query(
    table_name: str, pk: str, ns: str, *, cid: str | None, before_id: str | None
) -> dict[str, Any]:
    """The Query ``list`` pages through in one namespace: one checkpoint's range, those before an id, or all."""
    values: dict[str, AttributeValue] = {":pk": {"S": pk}}
    if cid is not None:
        cond = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
        values[":lo"] = {"S": schema.checkpoint_sk(ns, cid)}
        values[":hi"] = {"S": schema.checkpoint_range_end(ns, cid)}
    elif before_id:
        # ``before`` is only a bound on the id (it may name a checkpoint
        # of another namespace), never looked up.
        cond = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
        values[":lo"] = {"S": schema.checkpoint_prefix(ns)}
        values[":hi"] = {"S": schema.checkpoint_sk(ns, before_id)}
    else:
        cond = "#pk = :pk AND begins_with(#sk, :lo)"
        values[":lo"] = {"S": schema.checkpoint_prefix(ns)}
    return requests.newest_first_query(table_name, cond, values)


def _listed_page(
    thread_id: str, items: Iterable[Item], writes: dict[str, list[Item]], dead: set[str] | None
) -> tuple[list[CheckpointRecord], set[str] | None]:
    """One ``list`` Query page's live checkpoint records, with the dead roots known after it.

    ``writes`` carries writes items across pages: they sort just before their
    checkpoint item, which may be on the next page.
    """
    page: list[CheckpointRecord] = []
    for it in items:
        shapes.check_format(it)
        item_ns, kind, item_cid, _ = shapes.parse_sk(it)
        if kind == schema.TOMBSTONE_ITEM:
            dead = shapes.tomb_roots(it)  # sorts first in this descending Query
        elif kind == schema.WRITES_ITEM:
            writes.setdefault(item_cid, []).append(it)
        elif kind == schema.CHECKPOINT_ITEM and not shapes.is_dead(it, dead):
            page.append(CheckpointRecord(thread_id, item_ns, item_cid, it, writes.pop(item_cid, [])))
    return page, dead


def _list_scan(
    s: BaseDynamoDBSaver, *, filter: dict[str, Any] | None, before_id: str | None, limit: int | None
) -> Op[None]:
    """``list(None)``: every thread. A table Scan, for tools, not for agents."""
    kwargs: dict[str, Any] = {"TableName": s.table_name, "ConsistentRead": True}
    items: list[Item] = []
    while True:
        resp = yield ddb("scan", **kwargs)
        items.extend(resp.get("Items", []))
        if "LastEvaluatedKey" not in resp:
            break
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
    by_thread: dict[str, list[Item]] = {}
    for it in items:
        by_thread.setdefault(it[ATTR.PK]["S"], []).append(it)
    records: list[CheckpointRecord] = []
    for pk, its in by_thread.items():
        thread_id = s.keys.thread_id_of(pk)
        if thread_id is not None:
            records.extend(shapes.group_all(thread_id, its))
    records.sort(key=lambda r: r.checkpoint_id, reverse=True)
    yield from _emit_records(s, records, cid=None, filter=filter, before_id=before_id, limit=limit)


def _emit_records(
    s: BaseDynamoDBSaver,
    records: list[CheckpointRecord],
    *,
    cid: str | None,
    filter: Mapping[str, Any] | None,
    before_id: str | None,
    limit: int | None,
) -> Op[int]:
    """Filter a page of records on metadata, then decode and emit the matches.

    Metadata is decoded first and bodies, values and writes only for the
    records that match, so a filtered list downloads no unneeded bodies.
    """
    selected = [
        r
        for r in records
        if (cid is None or r.checkpoint_id == cid) and (before_id is None or r.checkpoint_id < before_id)
    ]
    # A thread past its idle TTL is gone as a whole, even before the
    # reaper deletes it (checked only when a stamp says it may be).
    for thread_id in {r.thread_id for r in selected if shapes.expired_stamp(r.item)}:
        alive = yield from heads.thread_alive(s, thread_id)
        if not alive:
            selected = [r for r in selected if r.thread_id != thread_id]
    metadata: dict[int, CheckpointMetadata] = {}
    if filter:
        md_refs = []
        for r in selected:
            with shapes.malformed(f"checkpoint {r.checkpoint_id!r} of thread {r.thread_id!r}"):
                md_refs.extend(collect_refs(s, r, values=False))
        fetched_md = yield from fetch(s, md_refs)
        matched = []
        for r in selected:
            md = decode_metadata(s, r, fetched_md)
            if all(md.get(k, _MISSING) == v for k, v in filter.items()):
                metadata[id(r)] = md
                matched.append(r)
        selected = matched
    if limit is not None:
        selected = selected[:limit]
    if not selected:
        return 0
    # The whole page is local: a selected checkpoint may reference a
    # value held by one filtered out or past the limit.
    tuples = yield from decode_records(s, selected, metadata, local=records)
    for t in tuples:
        yield Emit(t)
    return len(tuples)
