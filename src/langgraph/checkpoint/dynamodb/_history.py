"""Delta-channel history, I/O-free: ``get_delta_channel_history`` in a constant number of round trips.

What lives here: the walk from a checkpoint back to its delta channels'
seeds, sized from the counters stored on checkpoint items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    DeltaChannelHistory,
    PendingWrite,
)

from langgraph.checkpoint.dynamodb import _items, _read, _requests, schema
from langgraph.checkpoint.dynamodb._items import (
    CheckpointRecord,
    Item,
    Ref,
)
from langgraph.checkpoint.dynamodb._ops import Gather, Op, ddb
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import (
    MissingPayloadError,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

#: Items in the first page of a delta-history Query (see ``size_page``).
FIRST_PAGE_ITEMS = 64


def delta_history(
    s: BaseDynamoDBSaver, config: RunnableConfig, channels: Sequence[str]
) -> Op[dict[str, DeltaChannelHistory]]:
    """Batched ``get_delta_channel_history``: one descending Query from the
    target (more pages only if the chain outgrows 1 MB), then one wave of
    fetches for spilled seeds and writes. The number of round trips does
    not grow with the length of the chain.
    """

    if not channels:
        return {}
    thread_id, ns, cid = s._ids(config)
    pk = s._pk(thread_id)
    values: dict[str, Any] = {":pk": {"S": pk}, ":lo": {"S": schema.checkpoint_prefix(ns)}}
    if cid is not None:
        cond = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
        values[":hi"] = {"S": schema.checkpoint_range_end(ns, cid)}
    else:
        cond = "#pk = :pk AND begins_with(#sk, :lo)"
    kwargs: dict[str, Any] = dict(
        TableName=s.table_name,
        KeyConditionExpression=cond,
        ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
        ExpressionAttributeValues=values,
        ScanIndexForward=False,
        ConsistentRead=True,
    )
    records: dict[str, CheckpointRecord] = {}
    pending_writes: dict[str, list[Item]] = {}
    lowest: str | None = None  # smallest checkpoint id read so far
    exhausted = False
    pages = 0
    items_read = 0

    def size_page() -> None:
        """Read little when the chain is short, everything when it is long.

        The first page is small (most chains to a snapshot are short).
        If it was not enough, the target's own delta counters tell how
        many supersteps back the snapshot is, which sizes the second
        page; later pages (rare: forks, skew) take DynamoDB's 1 MB.
        Read units are paid for what is read, so this keeps them close
        to the chain's own size while round trips stay at one or two.
        """
        if pages == 0:
            hint = s._depth_hints.get((thread_id, ns, cid)) if cid is not None else None
            depth = _depth_from_counters(hint, channels) if hint is not None else None
            kwargs["Limit"] = (
                FIRST_PAGE_ITEMS if depth is None else max(FIRST_PAGE_ITEMS, (depth + 4) * 5 + 16)
            )
            return
        kwargs.pop("Limit", None)
        target_rec = records.get(cid) if cid is not None else None
        if pages > 1 or target_rec is None:
            return
        depth = _delta_depth(s, target_rec, channels)
        if depth is None:
            return
        have = len(records)
        per = items_read / max(1, have)
        kwargs["Limit"] = max(FIRST_PAGE_ITEMS, int((depth - have + 4) * per * 1.5) + 16)

    dead: set[str] | None = None

    def next_page() -> Op[None]:
        nonlocal lowest, exhausted, pages, items_read, dead
        size_page()
        if pages == 0 and cid is not None:
            # From a given checkpoint the Query does not reach the
            # tombstone: the head's dead roots, in the same round trip.
            resp, head = yield Gather([ddb("query", **kwargs), _read.dead_roots_call(s, thread_id)])
            dead = _items.head_roots(head.get("Item"))
        else:
            resp = yield ddb("query", **kwargs)
        pages += 1
        items_read += len(resp.get("Items", []))
        for it in resp.get("Items", []):
            _items.check_format(it)
            _, kind, item_cid, _ = _items.parse_sk(it)
            if kind == schema.TOMBSTONE_ITEM:
                dead = _items.tomb_roots(it)
            elif kind == schema.CHECKPOINT_ITEM and _items.is_dead(it, dead):
                continue  # a late write on a deleted lineage: not history
            elif kind == schema.WRITES_ITEM:
                pending_writes.setdefault(item_cid, []).append(it)
            elif kind == schema.CHECKPOINT_ITEM:
                records[item_cid] = CheckpointRecord(
                    thread_id, ns, item_cid, it, pending_writes.pop(item_cid, [])
                )
                lowest = item_cid
        if "LastEvaluatedKey" in resp:
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        else:
            exhausted = True

    def find(target: str) -> Op[CheckpointRecord | None]:
        while target not in records:
            if exhausted or (lowest is not None and target > lowest):
                # Not where id order says it would be (ids from hosts
                # with skewed clocks): look it up directly.
                items = yield from _requests.query_all(
                    **_requests.checkpoint_query(s.table_name, pk, ns, target)
                )

                rec = _items.group(thread_id, items, only=target)
                if rec is not None:
                    records[target] = rec
                return rec
            yield from next_page()
        return records[target]

    if cid is None:
        while lowest is None and not exhausted:
            yield from next_page()
        if lowest is None:
            return {ch: {"writes": []} for ch in channels}
        cid = max(records)
    target = yield from find(cid)
    if target is not None and _items.is_dead(target.item, dead):
        target = None  # looked up directly: a deleted lineage reads as nothing
    remaining = set(channels)
    chain: list[CheckpointRecord] = []
    seeds: dict[str, CheckpointRecord] = {}
    cursor = target.item.get(ATTR.PARENT_ID, {}).get("S") if target else None
    child = target
    # Parent ids are stored data: a crafted or damaged one may point back
    # into the chain, which would make this walk endless (and ``find``
    # query forever). Each id is visited once, so the walk is bounded by
    # the thread's size.
    walked = [cid]
    on_chain = {cid}
    while cursor is not None and remaining:
        if cursor in on_chain:
            raise _items.parent_cycle_error(thread_id, ns, walked, cursor)
        walked.append(cursor)
        on_chain.add(cursor)
        rec = yield from find(cursor)
        if rec is None:
            assert child is not None
            broken = remaining & set(child.item.get(ATTR.DELTA_NEEDS, {}).get("SS", []))
            if broken:
                # The child declared it rebuilds these channels from its
                # ancestors: stopping here would return a shorter history,
                # that is a different state (an interrupted prune or copy).
                raise MissingPayloadError(
                    f"checkpoint {cursor!r} of thread {thread_id!r} (namespace {ns!r}) is missing: "
                    f"checkpoint {child.checkpoint_id!r} needs it to rebuild {sorted(broken)}"
                )
            break  # nothing declared needs more history (the base contract's walk stops here too)
        chain.append(rec)
        stored = set(rec.item.get(ATTR.VALUES, {}).get("M", {}))
        for ch in remaining & stored:
            seeds[ch] = rec
        # Writes of this ancestor are collected for the channels still
        # open *including* the ones it seeds (they produced its child).
        rec_channels = set(remaining)
        rec.writes = [w for w in rec.writes if _writes_touch(w, rec_channels)]
        remaining -= stored
        child = rec
        cursor = rec.item.get(ATTR.PARENT_ID, {}).get("S")

    # One wave for everything spilled: seed values and write values.
    refs: list[Ref] = []
    for ch, rec in seeds.items():
        av = rec.item[ATTR.VALUES]["M"][ch]
        if "M" in av:
            refs.append(_read.value_ref_target(s, rec, pk, ch, av))
    for rec in chain:
        for w in rec.writes:
            for name, av in w.items():
                if _items.is_write_attr(name) and "M" in av["L"][1]:
                    where = f"writes of checkpoint {rec.checkpoint_id!r} of thread {thread_id!r}"
                    with _items.malformed(where):
                        refs.append(Ref("s3", s._s3_pointer(thread_id, w, name)))
    fetched = yield from _read.fetch(s, refs, local=records.values())

    collected: dict[str, list[PendingWrite]] = {ch: [] for ch in channels}
    open_channels = set(channels)
    for rec in chain:
        if not open_channels:
            break
        for write in reversed(_read.decode_writes(s, rec, fetched)):
            if write[1] in open_channels:
                collected[write[1]].append(write)
        open_channels -= {ch for ch, srec in seeds.items() if srec is rec}
    result: dict[str, DeltaChannelHistory] = {}
    for ch in channels:
        entry: DeltaChannelHistory = {"writes": list(reversed(collected[ch]))}
        if ch in seeds:
            rec = seeds[ch]
            av = rec.item[ATTR.VALUES]["M"][ch]
            packed = av["B"] if "B" in av else fetched[_read.value_ref_target(s, rec, pk, ch, av)]
            entry["seed"] = s._unpack(packed, f"channel {ch!r} of checkpoint {rec.checkpoint_id!r}")
        result[ch] = entry
    return result


def _delta_depth(s: BaseDynamoDBSaver, record: CheckpointRecord, channels: Sequence[str]) -> int | None:
    """Supersteps back to the oldest snapshot any of ``channels`` needs, if known."""
    av = record.item.get(ATTR.METADATA, {})
    if "B" not in av:
        return None
    md = s._unpack(av["B"], f"metadata of checkpoint {record.checkpoint_id!r}")
    stored = record.item.get(ATTR.VALUES, {}).get("M", {})
    return _depth_from_counters(
        md.get("counters_since_delta_snapshot") or {}, [c for c in channels if c not in stored]
    )


def _depth_from_counters(counters: Mapping[str, Any], channels: Sequence[str]) -> int | None:
    """Supersteps back to the oldest snapshot of ``channels``, or None if unknown."""
    depth = 0
    for ch in channels:
        if ch not in counters:
            return None
        depth = max(depth, int(counters[ch][1]))
    return depth


def _writes_touch(item: Item, channels: set[str]) -> bool:
    return any(_items.is_write_attr(n) and av["L"][0]["S"] in channels for n, av in item.items())
