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

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Op, compute, ddb
from langgraph.checkpoint.dynamodb._operations import fetch, read, requests
from langgraph.checkpoint.dynamodb._parts import chains, shapes
from langgraph.checkpoint.dynamodb._parts.binding import metadata_place, value_place
from langgraph.checkpoint.dynamodb._parts.shapes import (
    CheckpointRecord,
    Item,
    Ref,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import (
    MissingPayloadError,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

#: Items in the first page of a delta-history Query (see ``size_page``).
FIRST_PAGE_ITEMS = 64


class _ChainQuery:
    """The descending Query one walk reads its chain with, page by page, and what it has read.

    Pages are sized by :meth:`size_page`; :meth:`find` reads on until a
    checkpoint is in :attr:`records` (or looks it up directly when id order
    says it should have been read already).
    """

    def __init__(
        self,
        s: BaseDynamoDBSaver,
        thread_id: str,
        ns: str,
        cid: str | None,
        start: str | None,
        cached: dict[str, CheckpointRecord],
        channels: Sequence[str],
    ) -> None:
        self.s, self.thread_id, self.ns, self.cid = s, thread_id, ns, cid
        self.pk = s.keys.pk(thread_id)
        self.cached = cached
        self.channels = channels
        values: dict[str, Any] = {":pk": {"S": self.pk}, ":lo": {"S": schema.checkpoint_prefix(ns)}}
        if cid is not None:
            cond = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
            values[":hi"] = {"S": schema.checkpoint_range_end(ns, start or cid)}
        else:
            cond = "#pk = :pk AND begins_with(#sk, :lo)"
        self.kwargs = requests.newest_first_query(s.table_name, cond, values)
        self.records: dict[str, CheckpointRecord] = {}
        self.pending_writes: dict[str, list[Item]] = {}
        self.lowest: str | None = None  # smallest checkpoint id read so far
        self.exhausted = False
        self.pages = 0
        self.items_read = 0
        #: Deleted lineages (the head's dead roots, or a tombstone read).
        self.dead: set[str] | None = None

    def size_page(self) -> None:
        """Read little when the chain is short, everything when it is long.

        The first page is small (most chains to a snapshot are short).
        If it was not enough, the target's own delta counters tell how
        many supersteps back the snapshot is, which sizes the second
        page; later pages (rare: forks, skew) take DynamoDB's 1 MB.
        Read units are paid for what is read, so this keeps them close
        to the chain's own size while round trips stay at one or two.
        """
        s, kwargs, channels = self.s, self.kwargs, self.channels
        if self.pages == 0:
            if self.cached:
                # From below the cached part: the deepest cached record's
                # own counters say how far its seed is.
                depth = _delta_depth(s, min(self.cached.values(), key=lambda r: r.checkpoint_id), channels)
            else:
                cid = self.cid
                hint = s.caches.depth_hint(self.thread_id, self.ns, cid) if cid is not None else None
                depth = _depth_from_counters(hint, channels) if hint is not None else None
            kwargs["Limit"] = (
                FIRST_PAGE_ITEMS if depth is None else max(FIRST_PAGE_ITEMS, (depth + 4) * 5 + 16)
            )
            return
        kwargs.pop("Limit", None)
        target_rec = self.records.get(self.cid) if self.cid is not None else None
        if self.pages > 1 or target_rec is None:
            return
        depth = _delta_depth(s, target_rec, channels)
        if depth is None:
            return
        have = len(self.records)
        per = self.items_read / max(1, have)
        kwargs["Limit"] = max(FIRST_PAGE_ITEMS, int((depth - have + 4) * per * 1.5) + 16)

    def next_page(self) -> Op[None]:
        self.size_page()
        if self.pages == 0 and self.cid is not None:
            # From a given checkpoint the Query does not reach the
            # tombstone: the head's dead roots, in the same round trip.
            resp, head = yield Gather(
                [ddb("query", **self.kwargs), read.dead_roots_call(self.s, self.thread_id)]
            )
            self.dead = shapes.head_roots(head.get("Item"))
        else:
            resp = yield ddb("query", **self.kwargs)
        self.take_page(resp)

    def take_page(self, resp: dict[str, Any]) -> None:
        self.pages += 1
        self.items_read += len(resp.get("Items", []))
        for it in resp.get("Items", []):
            shapes.check_format(it)
            _, kind, item_cid, _ = shapes.parse_sk(it)
            if kind == schema.TOMBSTONE_ITEM:
                self.dead = shapes.tomb_roots(it)
            elif kind == schema.CHECKPOINT_ITEM and shapes.is_dead(it, self.dead):
                continue  # a late write on a deleted lineage: not history
            elif kind == schema.WRITES_ITEM:
                self.pending_writes.setdefault(item_cid, []).append(it)
            elif kind == schema.CHECKPOINT_ITEM:
                self.records[item_cid] = CheckpointRecord(
                    self.thread_id, self.ns, item_cid, it, self.pending_writes.pop(item_cid, [])
                )
                self.lowest = item_cid
        if "LastEvaluatedKey" in resp:
            self.kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        else:
            self.exhausted = True

    def find(self, target: str) -> Op[CheckpointRecord | None]:
        while target not in self.records:
            if self.exhausted or (self.lowest is not None and target > self.lowest):
                # Not where id order says it would be (ids from hosts
                # with skewed clocks): look it up directly.
                items = yield from requests.query_all(
                    **requests.checkpoint_query(self.s.table_name, self.pk, self.ns, target)
                )
                rec = shapes.group(self.thread_id, items, only=target)
                if rec is not None:
                    self.records[target] = rec
                return rec
            yield from self.next_page()
        return self.records[target]


def delta_history(
    s: BaseDynamoDBSaver, config: RunnableConfig, channels: Sequence[str]
) -> Op[dict[str, DeltaChannelHistory]]:
    """Batched ``get_delta_channel_history``: one descending Query from the
    target (more pages only if the chain outgrows 1 MB), then one wave of
    fetches for spilled seeds and writes. The number of round trips does
    not grow with the length of the chain.

    Ancestors an earlier walk or ``list`` read come from the saver's chain
    cache (``chains``): checkpoint items are immutable, so a history
    listing reads each item about once instead of once per checkpoint
    after it. What is never served from the cache, and read strongly
    consistent on every call, in the first round trip: the target
    checkpoint (a pruned or deleted one reads as nothing) and the thread
    head's deleted lineages, unless a listing read them just before and
    vouches for them (``_fresh_target``). The Query then starts below the
    cached part of the chain, if any is missing.
    """

    if not channels:
        return {}
    thread_id, ns, cid = s.keys.ids(config)
    pk = s.keys.pk(thread_id)
    cache = s.caches.chain_cache
    # Ancestors of the target already cached, and the first one that is not
    # (where the Query starts; None: the cache holds the whole walk).
    cached: dict[str, CheckpointRecord] = {}
    start = cid
    if cid is not None:
        cached, start = _cached_chain(cache, pk, thread_id, ns, cid, channels)
        if not cached:
            start = cid
    q = _ChainQuery(s, thread_id, ns, cid, start, cached, channels)
    if cached:
        assert cid is not None
        # The fresh part, in one round trip: the target and the head (one
        # BatchGetItem), and the Query below the cached part if needed.
        target_item = yield from _fresh_target(s, q, cache, cid, start)
        if target_item is None or shapes.is_dead(target_item, q.dead):
            return {ch: {"writes": []} for ch in channels}  # pruned or deleted since
        q.records[cid] = CheckpointRecord(thread_id, ns, cid, target_item, [])
        # Same lineage as the target, so alive with it; checked anyway.
        q.records.update({k: r for k, r in cached.items() if not shapes.is_dead(r.item, q.dead)})
    if cid is None:
        while q.lowest is None and not q.exhausted:
            yield from q.next_page()
        if q.lowest is None:
            return {ch: {"writes": []} for ch in channels}
        cid = max(q.records)
    target = yield from q.find(cid)
    if target is not None and shapes.is_dead(target.item, q.dead):
        target = None  # looked up directly: a deleted lineage reads as nothing
    chain, seeds, all_writes = yield from _walk(q, cid, target, channels)
    _remember_chain(cache, pk, target, chain, all_writes, cached)
    return (yield from _assemble(s, q, chain, seeds, channels))


def _fresh_target(
    s: BaseDynamoDBSaver, q: _ChainQuery, cache: chains.ChainCache, cid: str, start: str | None
) -> Op[Item | None]:
    """The target item and the thread's deleted roots (into ``q.dead``) as of now, and the Query
    below the cached chain if ``start`` says one is needed: one round trip, or none at all.

    A listing that just read the target (strongly consistent, deleted
    lineages known) vouches for it once (``ChainCache.take_voucher``): the
    history call ``get_state_history`` makes for each listed checkpoint
    rebuilds it as that listing read it, without a request of its own.
    Otherwise the target and the head are read again, in one BatchGetItem.
    """
    vouched = cache.take_voucher((q.pk, q.ns, cid))
    calls: list[Call] = [] if vouched is not None else [_target_and_head_call(q.s, q.pk, q.ns, cid)]
    if start is not None:
        q.size_page()
        calls.append(ddb("query", **q.kwargs))
    resps = (yield Gather(calls)) if calls else []
    target_item: Item | None
    if vouched is not None:
        target_item, q.dead = vouched
    else:
        fresh = yield from _batch_items(s, resps[0])
        target_item = fresh.get(schema.checkpoint_sk(q.ns, cid))
        q.dead = shapes.head_roots(fresh.get(schema.HEAD_SK))
    if start is not None and (target_item is not None and not shapes.is_dead(target_item, q.dead)):
        q.take_page(resps[-1])
    return target_item


def _walk(
    q: _ChainQuery, cid: str, target: CheckpointRecord | None, channels: Sequence[str]
) -> Op[tuple[list[CheckpointRecord], dict[str, CheckpointRecord], dict[str, list[Item]]]]:
    """Walk from the target to each channel's seed: the ancestors, the seed of each channel, their writes.

    Returns the chain (nearest first, each ancestor's writes filtered to
    the channels still open there), the record seeding each channel, and
    each ancestor's writes before filtering (for the chain cache).
    """
    thread_id, ns = q.thread_id, q.ns
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
    all_writes: dict[str, list[Item]] = {}  # each ancestor's writes, before filtering
    while cursor is not None and remaining:
        if cursor in on_chain:
            raise shapes.parent_cycle_error(thread_id, ns, walked, cursor)
        walked.append(cursor)
        on_chain.add(cursor)
        rec = yield from q.find(cursor)
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
        all_writes[rec.checkpoint_id] = rec.writes
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
    return chain, seeds, all_writes


def _assemble(
    s: BaseDynamoDBSaver,
    q: _ChainQuery,
    chain: list[CheckpointRecord],
    seeds: dict[str, CheckpointRecord],
    channels: Sequence[str],
) -> Op[dict[str, DeltaChannelHistory]]:
    """Each channel's seed and writes, decoded: one fetch wave for what is spilled, one Compute.

    Only the writes of the asked channels, on the records where each is
    still open (back to its seed), are fetched and unpacked; decoding is
    one ``Compute`` (off the event loop in the async saver when large).
    """
    thread_id, pk = q.thread_id, q.pk
    walk = _open_channels(chain, seeds, channels)
    refs: list[Ref] = []
    for ch, rec in seeds.items():
        av = rec.item[ATTR.VALUES]["M"][ch]
        if "M" in av:
            refs.append(fetch.value_ref_target(s, rec, pk, ch, av))
        elif s.payloads.seals and "M" in rec.item.get(ATTR.BODY, {}):
            # The seal of an inline seed names its version, which only the body says.
            refs.append(Ref("s3", s.keys.s3_pointer(thread_id, rec.item, ATTR.BODY)))
    for rec, open_channels in walk:
        for w in rec.writes:
            for name, av in w.items():
                if not shapes.is_write_attr(name):
                    continue
                where = f"writes of checkpoint {rec.checkpoint_id!r} of thread {thread_id!r}"
                with shapes.malformed(where):
                    if "M" in av["L"][1] and av["L"][0]["S"] in open_channels:
                        refs.append(Ref("s3", s.keys.s3_pointer(thread_id, w, name)))
    fetched = yield from fetch.fetch(s, refs, local=q.records.values())
    size = read.decode_size([rec for rec, _ in walk], fetched)
    return (yield from compute(_decode, s, pk, walk, seeds, channels, fetched, size=size))


def _open_channels(
    chain: list[CheckpointRecord], seeds: Mapping[str, CheckpointRecord], channels: Sequence[str]
) -> list[tuple[CheckpointRecord, frozenset[str]]]:
    """The chain's records, newest first, each with the asked channels still open at it.

    A channel is open from the target back to its seed's record (whose
    writes still count); the walk ends once every channel is closed.
    """
    open_channels = set(channels)
    walk = []
    for rec in chain:
        if not open_channels:
            break
        walk.append((rec, frozenset(open_channels)))
        open_channels -= {ch for ch, srec in seeds.items() if srec is rec}
    return walk


def _decode(
    s: BaseDynamoDBSaver,
    pk: str,
    walk: list[tuple[CheckpointRecord, frozenset[str]]],
    seeds: Mapping[str, CheckpointRecord],
    channels: Sequence[str],
    fetched: Mapping[Ref, bytes],
) -> dict[str, DeltaChannelHistory]:
    """The CPU half of :func:`_assemble`: unpack the open channels' writes and the seeds."""
    collected: dict[str, list[PendingWrite]] = {ch: [] for ch in channels}
    for rec, open_channels in walk:
        for write in reversed(read.decode_writes(s, rec, fetched, open_channels)):
            collected[write[1]].append(write)
    result: dict[str, DeltaChannelHistory] = {}
    for ch in channels:
        entry: DeltaChannelHistory = {"writes": list(reversed(collected[ch]))}
        if ch in seeds:
            rec = seeds[ch]
            av = rec.item[ATTR.VALUES]["M"][ch]
            packed = av["B"] if "B" in av else fetched[fetch.value_ref_target(s, rec, pk, ch, av)]
            version = read.seed_version(s, rec, ch, av, fetched)
            bind = (rec.thread_id, value_place(rec.checkpoint_ns, ch, version))
            entry["seed"] = s.payloads.unpack(
                packed, f"channel {ch!r} of checkpoint {rec.checkpoint_id!r}", bind
            )
        result[ch] = entry
    return result


def _cached_chain(
    cache: chains.ChainCache, pk: str, thread_id: str, ns: str, cid: str, channels: Sequence[str]
) -> tuple[dict[str, CheckpointRecord], str | None]:
    """The target's ancestors the cache holds, walked as ``delta_history`` walks.

    Returns the cached ancestors (fresh record objects: a walk filters
    their writes) and the first ancestor the walk needs that is not cached
    with its writes (None: the walk ends inside the cache). No ancestors
    when the target itself is not cached.
    """
    out: dict[str, CheckpointRecord] = {}
    entry = cache.get((pk, ns, cid))
    if entry is None:
        return out, cid
    remaining = set(channels)
    cursor = chains.parent_of(entry.item)
    seen = {cid}
    while cursor is not None and remaining and cursor not in seen:
        entry = cache.get((pk, ns, cursor))
        if entry is None or entry.writes is None:
            return out, cursor
        seen.add(cursor)
        out[cursor] = CheckpointRecord(thread_id, ns, cursor, entry.item, list(entry.writes))
        remaining -= set(entry.item.get(ATTR.VALUES, {}).get("M", {}))
        cursor = chains.parent_of(entry.item)
    return out, None  # a cycle is left to the walk, which reports it


def _remember_chain(
    cache: chains.ChainCache,
    pk: str,
    target: CheckpointRecord | None,
    chain: Sequence[CheckpointRecord],
    all_writes: Mapping[str, list[Item]],
    cached: Mapping[str, CheckpointRecord],
) -> None:
    """Cache what a walk read: ancestors two generations back with their
    writes (their child's superstep is long over); the target and its
    parent as items alone (their writes may still be coming in)."""
    if target is not None:
        cache.put((pk, target.checkpoint_ns, target.checkpoint_id), target.item, None)
    for i, rec in enumerate(chain):
        if rec.checkpoint_id in cached:
            continue
        writes = all_writes.get(rec.checkpoint_id) if i >= 1 else None
        cache.put((pk, rec.checkpoint_ns, rec.checkpoint_id), rec.item, writes)


def _target_and_head_call(s: BaseDynamoDBSaver, pk: str, ns: str, cid: str) -> Call:
    """One strongly consistent BatchGetItem: the target checkpoint item and the thread head."""
    keys = [
        {ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.checkpoint_sk(ns, cid)}},
        {ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.HEAD_SK}},
    ]
    return requests.batch_get_calls(s.table_name, keys)[0]


def _batch_items(s: BaseDynamoDBSaver, resp: dict[str, Any]) -> Op[dict[str, Item]]:
    """Items of a BatchGetItem by sort key, asking again for unprocessed keys (with backoff)."""
    out: dict[str, Item] = {}
    for it in (yield from requests.batch_get_rest(s.table_name, [resp])):
        if it[ATTR.SK]["S"] != schema.HEAD_SK:
            shapes.check_format(it)
        out[it[ATTR.SK]["S"]] = it
    return out


def _delta_depth(s: BaseDynamoDBSaver, record: CheckpointRecord, channels: Sequence[str]) -> int | None:
    """Supersteps back to the oldest snapshot any of ``channels`` needs, if known."""
    av = record.item.get(ATTR.METADATA, {})
    if "B" not in av:
        return None
    bind = (record.thread_id, metadata_place(record.checkpoint_ns, record.checkpoint_id))
    md = s.payloads.unpack(av["B"], f"metadata of checkpoint {record.checkpoint_id!r}", bind)
    stored = record.item.get(ATTR.VALUES, {}).get("M", {})
    return _depth_from_counters(
        md.get("counters_since_delta_snapshot") or {}, [c for c in channels if c not in stored]
    )


def _depth_from_counters(counters: Mapping[str, Any], channels: Sequence[str]) -> int | None:
    """Supersteps back to the oldest snapshot of ``channels``, or None if unknown."""
    depth = 0
    for ch in channels:
        try:
            steps = int(counters[ch][1])
        except (KeyError, IndexError, TypeError, ValueError):
            return None  # absent, or not as LangGraph writes it: unknown, read the chain instead
        depth = max(depth, steps)
    return depth


def _writes_touch(item: Item, channels: set[str]) -> bool:
    return any(shapes.is_write_attr(n) and av["L"][0]["S"] in channels for n, av in item.items())
