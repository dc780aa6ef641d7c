"""Writing, I/O-free: ``put`` and ``put_writes``.

What lives here: building the one item each call writes (with the placement
rules of ``placement``), its lineage root, and the activity it records on
the thread head (``heads.on_activity``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from botocore.exceptions import ClientError
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Op, Sleep, compute, ddb, size_hint
from langgraph.checkpoint.dynamodb._operations import heads, placement, requests
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.binding import body_place, metadata_place, value_place, write_place
from langgraph.checkpoint.dynamodb._parts.shapes import (
    ITEM_BUDGET,
    AttributeValue,
    Item,
)
from langgraph.checkpoint.dynamodb._parts.valuecache import held_key
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, Bind, Location, Placement, write_item
from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError, PayloadTooLargeError
from langgraph.checkpoint.dynamodb.schema import ATTR


def _pack_all(s: BaseDynamoDBSaver, values: list[Any], labels: list[tuple[str, Bind]]) -> list[bytes]:
    """Each value packed (``labels``: its name in errors, where it belongs); what a write's ``Compute`` runs.

    (Maybe on another thread: the async saver runs large ones off its loop.)
    """
    return [s.payloads.pack(v, label, bind) for v, (label, bind) in zip(values, labels, strict=True)]


def _reuse(known: Placement, version: str, cid: str) -> AttributeValue | None:
    """What a checkpoint stores for a version already stored as ``known``; ``None``: store it again."""
    loc, held, tag = known
    if loc == "inline" and isinstance(held, bytes):
        return {"B": held}
    if loc == "c" and isinstance(held, str) and held != cid:
        return placement.value_ref(version, "c", held, tag=tag or None)
    if loc == "s3":
        return placement.value_ref(version, loc, tag=tag or None)
    if loc == "blob":
        return placement.value_ref(version, loc)
    return None  # this very checkpoint, put again: hold the value


class _TaskAt(NamedTuple):
    """Where one ``put_writes`` call's writes go: thread, namespace, checkpoint and task.

    One shape, named, where three bare tuples (``where``, and two ``key`` s
    of different lengths) were passed between the steps below.
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str


@dataclass
class _Staging:
    """One put's channel values: what its item holds, what it writes first, what it learns after.

    References and cached values are recorded only once the checkpoint item
    has landed (:meth:`landed`): a failed put must not leave a cache
    pointing at a value never written.
    """

    s: BaseDynamoDBSaver
    thread_id: str
    ns: str
    cid: str
    #: channel -> inline bytes or reference, the item's values map.
    vals: dict[str, AttributeValue] = field(default_factory=dict)
    uploads: list[Call] = field(default_factory=list)
    blob_items: list[Item] = field(default_factory=list)
    #: Channels whose bytes the item holds, by size: what may move out if it is too large.
    movable: dict[str, int] = field(default_factory=dict)
    learned: list[tuple[tuple[str, str, str, str], Placement]] = field(default_factory=list)
    #: S3 values uploaded, for the value cache: (key, write tag, packed bytes).
    uploaded: list[tuple[str, str, bytes]] = field(default_factory=list)
    #: Values this item holds (``c``), for the value cache: channel -> (write tag, packed bytes).
    held: dict[str, tuple[str, bytes]] = field(default_factory=dict)

    def keep(self, channel: str, ref: AttributeValue) -> None:
        """A version already stored: its reference, or its inline copy."""
        self.vals[channel] = ref
        if "B" in ref:
            self.movable[channel] = len(ref["B"])

    def place(self, channel: str, version: str, packed: bytes) -> None:
        """A version stored by this put: inline, held by this item, or S3 (``value_location``)."""
        s = self.s
        # Whatever its size now: a later version may have to move out under its own key.
        s.keys.check_value(self.thread_id, self.ns, channel, version, keyed=False)
        key = (self.thread_id, self.ns, channel, version)
        loc = placement.value_location(s, len(packed))
        if loc == "s3":
            self._to_external(channel, version, packed, "s3")
            return
        if len(packed) > ITEM_BUDGET and s.bucket_name is None:
            raise PayloadTooLargeError(
                f"channel {channel!r} is {len(packed)} bytes serialized, more than a "
                "DynamoDB item holds; configure bucket_name to store it in S3"
            )
        self.vals[channel] = {"B": packed}
        self.movable[channel] = len(packed)
        if loc == "inline":
            # Known at once: inline bytes point at nothing, so a put that
            # starts before this one lands (durability="async") may copy
            # them. It then stores the value as it was when this version
            # was made, even if the live object has changed since (LangGraph's
            # barrier channels mutate their set in place).
            s.caches.remember(key, ("inline", packed, ""))
        else:
            # Later references carry this write's tag: what the value cache
            # keys the held bytes by, so a later read need not fetch them.
            tag = placement.new_tag()
            self.learned.append((key, ("c", self.cid, tag)))
            self.held[channel] = (tag, packed)

    def move_out(self, channel: str, version: str, dest: Location) -> None:
        """Move a value the item holds to S3 or (no bucket) its own blob item."""
        del self.movable[channel]
        self.held.pop(channel, None)
        self._to_external(channel, version, self.vals[channel]["B"], dest)

    def _to_external(self, channel: str, version: str, packed: bytes, dest: Location) -> None:
        s = self.s
        # Staged before anything is written: a key AWS would refuse fails the put here.
        s.keys.check_value(self.thread_id, self.ns, channel, version)
        tag = placement.new_tag() if dest == "s3" else None
        self.vals[channel] = placement.value_ref(version, dest, tag=tag)
        key = placement.stage_value(
            s, self.thread_id, self.ns, channel, version, packed, dest, self.uploads, self.blob_items
        )
        self.learned.append(((self.thread_id, self.ns, channel, version), (dest, None, tag or "")))
        if tag and key is not None:
            self.uploaded.append((key, tag, packed))

    def holds_refs(self) -> bool:
        return any(av.get("M", {}).get("l", {}).get("S") == "c" for av in self.vals.values())

    def landed(self) -> None:
        """The item is stored: remember where each version lives, keep the uploaded values."""
        s = self.s
        for key, place in self.learned:
            s.caches.remember(key, place)
        for s3_key, tag, packed in self.uploaded:
            s.caches.value_cache.uploaded((s.bucket_name or "", s3_key, tag), packed)
        if self.held:
            pk, sk = s.keys.pk(self.thread_id), schema.checkpoint_sk(self.ns, self.cid)
            for channel, (tag, packed) in self.held.items():
                s.caches.value_cache.put(held_key(pk, sk, channel, tag), packed)


def _known_values(
    s: BaseDynamoDBSaver,
    thread_id: str,
    ns: str,
    cid: str,
    versions: Mapping[str, str],
    new_versions: ChannelVersions,
) -> tuple[dict[str, AttributeValue], list[str]]:
    """Channels whose version is already stored (with the reference to it), and those to store here."""
    reused: dict[str, AttributeValue] = {}
    fresh: list[str] = []
    for channel, version in versions.items():
        known = None if channel in new_versions else s.caches.placement((thread_id, ns, channel, version))
        ref = None if known is None else _reuse(known, version, cid)
        if ref is None:
            # A new version, or an unchanged one this process has neither
            # written nor read: stored here. (Referencing the latter blindly
            # could point at nothing: its writer may have copied it inline
            # under other thresholds. LangGraph reads a thread before writing
            # to it, so this is rare: direct API use.)
            fresh.append(channel)
        else:
            reused[channel] = ref
    return reused, fresh


def _delta_needs(
    md: CheckpointMetadata, channel_versions: Mapping[str, Any], values: Mapping[str, Any]
) -> list[str]:
    """Delta channels whose value at this checkpoint is rebuilt from ancestors (nothing stored here)."""
    return sorted(
        ch
        for ch in (md.get("counters_since_delta_snapshot") or {})
        if ch in channel_versions and ch not in values
    )


def put(
    s: BaseDynamoDBSaver,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> Op[RunnableConfig]:
    thread_id, ns, parent_id = s.keys.ids(config)
    cid = checkpoint["id"]
    s.keys.check(thread_id, ns, cid)
    pk = s.keys.pk(thread_id)
    body: dict[str, Any] = dict(checkpoint)
    values: dict[str, Any] = body.pop("channel_values", None) or {}  # type: ignore[misc]
    versions = {ch: str(v) for ch, v in body["channel_versions"].items() if ch in values}

    # Channel values. A version is stored once: small ones are copied
    # into each checkpoint that has them (cheaper than a reference to
    # fetch), larger ones are held by the checkpoint that introduces them
    # (one PutItem, and the latest checkpoint of a thread normally holds
    # what changed last) and referenced from later ones; the largest go
    # to S3. An unchanged large value is never written again.
    # First what is already stored (a reference or inline copy), then the
    # rest packed in one go: one Compute, which the async saver runs off
    # the event loop when the values are large.
    reused, fresh = _known_values(s, thread_id, ns, cid, versions, new_versions)
    md = get_checkpoint_metadata(config, metadata)
    to_pack = [*(values[ch] for ch in fresh), body, md]
    labels: list[tuple[str, Bind]] = [
        *(
            (f"checkpoint {cid!r}: channel {ch!r}", (thread_id, value_place(ns, ch, versions[ch])))
            for ch in fresh
        ),
        (f"checkpoint {cid!r}", (thread_id, body_place(ns, cid))),
        (f"checkpoint {cid!r}: metadata", (thread_id, metadata_place(ns, cid))),
    ]
    *packed_values, body_packed, md_packed = yield from compute(
        _pack_all, s, to_pack, labels, size=size_hint(to_pack)
    )
    fresh_packed = dict(zip(fresh, packed_values, strict=True))
    staging = _Staging(s, thread_id, ns, cid)
    for channel, version in versions.items():
        if channel in reused:
            staging.keep(channel, reused[channel])
        else:
            staging.place(channel, version, fresh_packed[channel])

    item = _checkpoint_item(s, pk, ns, cid, parent_id, md, staging)
    item[ATTR.BODY] = placement.doc_payload(
        s, body_packed, s.keys.checkpoint_s3_key(thread_id, ns, cid, "body"), staging.uploads
    )
    item[ATTR.METADATA] = placement.doc_payload(
        s, md_packed, s.keys.checkpoint_s3_key(thread_id, ns, cid, "metadata"), staging.uploads
    )
    # Delta channels whose value at this checkpoint must be rebuilt from
    # ancestors (nothing stored here). Prune, delete_for_runs and TTL read
    # this to keep every chain a surviving checkpoint needs, without
    # decoding anything. Channel names are schema, not state.
    needs = _delta_needs(md, body["channel_versions"], values)
    if needs:
        item[ATTR.DELTA_NEEDS] = {"SS": needs}
    _fit(item, staging, versions)

    # The lineage root, recorded before the write: a child put issued
    # while this one is in flight must inherit it, not guess it.
    root = yield from placement.lineage_root_for(s, thread_id, ns, cid, parent_id, config)
    item[ATTR.ROOT] = {"S": root}
    # Payloads first, then the item that points to them: a reader never
    # sees a pointer to something not yet written.
    yield from placement.write_externals(s, staging.uploads, staging.blob_items)
    yield from write_item(s, ddb("put_item", TableName=s.table_name, Item=item))
    s.caches.note_put(pk, ns, cid, holds_refs=shapes.holds_refs(item))  # sizes the next latest read
    staging.landed()
    if not parent_id and not ns:
        # A new conversation: the head this process last wrote may have
        # been retired by a delete elsewhere; write it again now.
        s.caches.forget_head(thread_id)
    yield from heads.on_activity(s, thread_id, root=root)
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": cid,
        }
    }


def _checkpoint_item(
    s: BaseDynamoDBSaver,
    pk: str,
    ns: str,
    cid: str,
    parent_id: str | None,
    md: CheckpointMetadata,
    staging: _Staging,
) -> Item:
    """A checkpoint's item: its keys, lineage, run, values map and activity stamp."""
    item: Item = {
        ATTR.PK: {"S": pk},
        ATTR.SK: {"S": schema.checkpoint_sk(ns, cid)},
        ATTR.KIND: {"S": schema.CHECKPOINT_ITEM},
        ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
        ATTR.CHECKPOINT_ID: {"S": cid},
    }
    shapes.keep_whole_ids(item, ns=ns, id=cid)
    if parent_id:
        item[ATTR.PARENT_ID] = {"S": parent_id}
    run_id = md.get("run_id")
    if run_id:
        item[ATTR.RUN_ID] = {"S": schema.run_key(str(run_id))}
    item[ATTR.VALUES] = {"M": staging.vals}  # the same dict: moving a value out updates it
    if s.ttl:
        # An activity stamp, not the TTL attribute: DynamoDB never deletes
        # checkpoint items one by one (that would cut delta chains); the
        # whole thread expires through its head item (see ``heads``).
        item[ATTR.EXPIRES] = {"N": str(int(clock.now()) + s.ttl)}
    return item


def _fit(item: Item, staging: _Staging, versions: dict[str, str]) -> None:
    """Make the item fit: move the largest values it holds out, to S3 or (no bucket) blob items."""
    dest: Location = "s3" if staging.s.bucket_name is not None else "blob"
    while shapes.item_size(item) > ITEM_BUDGET:
        movable = staging.movable
        channel = max(movable, key=movable.__getitem__) if movable else ""
        if not channel or (dest == "blob" and movable[channel] > ITEM_BUDGET):
            raise PayloadTooLargeError(
                f"checkpoint {staging.cid!r} does not fit in a DynamoDB item "
                f"(~{shapes.item_size(item)} bytes) and no bucket_name is configured; "
                "nothing was written"
            )
        staging.move_out(channel, versions[channel], dest)
    if staging.holds_refs() and int(item[ATTR.FORMAT]["N"]) < schema.REF_FORMAT_VERSION:
        item[ATTR.FORMAT] = {"N": str(schema.REF_FORMAT_VERSION)}


def put_writes(
    s: BaseDynamoDBSaver,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str = "",
) -> Op[None]:
    thread_id, ns, cid = s.keys.ids(config, need_checkpoint_id=True)
    assert cid is not None
    if not isinstance(task_id, str):
        raise TypeError(f"task_id must be a str, got {type(task_id).__name__}")
    s.keys.check(thread_id, ns, cid, task_id)
    if not writes:
        return
    chosen, overwrite = _choose_writes(writes)
    to_pack = [value for _, value in chosen.values()]
    labels: list[tuple[str, Bind]] = [
        (f"write {channel!r} of task {task_id!r}", (thread_id, write_place(ns, cid, task_id, idx, channel)))
        for idx, (channel, _) in chosen.items()
    ]
    packed_all = yield from compute(_pack_all, s, to_pack, labels, size=size_hint(to_pack))
    by_idx: dict[int, tuple[str, bytes]] = {
        idx: (channel, packed) for (idx, (channel, _)), packed in zip(chosen.items(), packed_all, strict=True)
    }

    task = _TaskAt(thread_id, ns, cid, task_id)
    uploads: list[Call] = []
    entries, sizes = _place_writes(s, task, by_idx, uploads)
    shards = _shards(entries, task_id, len(writes))
    # Each item within DynamoDB's item limit, all of them within a transaction's.
    for members in shards.values():
        _spill(s, task, members, sizes, ITEM_BUDGET, by_idx, entries, uploads)
    _spill(s, task, list(sizes), sizes, TRANSACT_BUDGET, by_idx, entries, uploads)

    pk = s.keys.pk(thread_id)
    items = _writes_items(s, config, pk, task, task_path, shards, entries)
    if uploads:
        yield Gather(uploads)
    # One request for a call whose writes fit one item (64 regular writes, or one
    # special), one transaction for more: all of a call's writes land, or none.
    yield from _land_writes(s, task, items, by_idx, overwrite=overwrite)
    for item in items.values():
        s.caches.note_writes(pk, ns, cid, item[ATTR.SK]["S"])  # sizes the next latest read
    # A root this saver does not know counts as unknown history (orphan).
    yield from heads.on_activity(s, thread_id, root=s.caches.root(thread_id, ns, cid) or schema.ORPHAN_ROOT)


def _choose_writes(writes: Sequence[tuple[str, Any]]) -> tuple[dict[int, tuple[str, Any]], bool]:
    """The write each index keeps (index -> channel, value), and whether the call overwrites stored ones."""
    # All-special batches (errors, interrupts, resume) overwrite; any
    # batch with a regular channel keeps the first write of each index.
    if isinstance(writes, (str, bytes)) or not all(
        isinstance(w, (tuple, list)) and len(w) == 2 for w in writes
    ):
        raise TypeError("writes must be a sequence of (channel, value) pairs")
    overwrite = all(ch in WRITES_IDX_MAP for ch, _ in writes)
    chosen: dict[int, tuple[str, Any]] = {}
    for pos, (channel, value) in enumerate(writes):
        if not isinstance(channel, str):
            raise TypeError(f"write channel must be a str, got {type(channel).__name__}")
        idx = WRITES_IDX_MAP.get(channel, pos)
        if idx in chosen and not overwrite:
            continue
        chosen[idx] = (channel, value)
    return chosen, overwrite


def _place_writes(
    s: BaseDynamoDBSaver,
    task: _TaskAt,
    by_idx: dict[int, tuple[str, bytes]],
    uploads: list[Call],
) -> tuple[dict[int, AttributeValue], dict[int, int]]:
    """Each write's entry (inline, or an S3 reference staged in ``uploads``), and the inline ones' sizes."""
    entries: dict[int, AttributeValue] = {}
    sizes: dict[int, int] = {}
    for idx, (channel, packed) in by_idx.items():
        if s.bucket_name is not None and len(packed) > s.s3_threshold:
            entries[idx] = placement.write_to_s3(s, *task, idx, channel, packed, uploads)
        else:
            entries[idx] = {"L": [{"S": channel}, {"B": packed}]}
            sizes[idx] = len(packed)
    return entries, sizes


def _shards(entries: dict[int, AttributeValue], task_id: str, count: int) -> dict[int, list[int]]:
    """The writes items a call's indexes go to (shard -> indexes); refused past one transaction's worth."""
    shards: dict[int, list[int]] = {}
    for idx in sorted(entries):
        shards.setdefault(schema.writes_shard(idx), []).append(idx)
    if len(shards) > MAX_WRITES_ITEMS:
        raise PayloadTooLargeError(
            f"task {task_id!r} has {count} writes in one put_writes call, more than one atomic "
            f"DynamoDB transaction holds ({MAX_WRITES_ITEMS} items of {schema.WRITES_PER_ITEM} writes); "
            "nothing was written"
        )
    return shards


def _writes_items(
    s: BaseDynamoDBSaver,
    config: RunnableConfig,
    pk: str,
    task: _TaskAt,
    task_path: str,
    shards: dict[int, list[int]],
    entries: dict[int, AttributeValue],
) -> dict[int, Item]:
    """A call's writes items by shard: keys, task, run, entries."""
    _, ns, cid, task_id = task
    base: Item = {
        ATTR.PK: {"S": pk},
        ATTR.KIND: {"S": schema.WRITES_ITEM},
        ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
        ATTR.TASK_ID: {"S": task_id},
        ATTR.TASK_PATH: {"S": task_path or ""},
    }
    if s.ttl:
        base[ATTR.EXPIRES] = {"N": str(int(clock.now()) + s.ttl)}
    run_id = (config.get("metadata") or {}).get("run_id")
    if run_id:
        base[ATTR.RUN_ID] = {"S": schema.run_key(str(run_id))}
    items: dict[int, Item] = {}
    for shard, members in shards.items():
        item = {**base, ATTR.SK: {"S": schema.writes_sk(ns, cid, task_id, shard)}}
        shapes.keep_whole_ids(item, ns=ns, id=cid, task=task_id)
        for idx in members:
            item[f"{ATTR.WRITE_PREFIX}{idx}"] = entries[idx]
        items[shard] = item
    return items


#: Writes items one put_writes call may land at once: a TransactWriteItems takes
#: 100 actions, one of which a lease-bound saver spends on its ConditionCheck.
MAX_WRITES_ITEMS = 99
#: Inline write bytes one call may put in its transaction (DynamoDB: 4 MB in all, names and overhead included).
TRANSACT_BUDGET = 3584 * 1024
#: Attempts at landing a call's writes when other writers race us for the same items.
_LAND_ATTEMPTS = 8


def _spill(
    s: BaseDynamoDBSaver,
    task: _TaskAt,
    members: list[int],
    sizes: dict[int, int],
    budget: int,
    by_idx: dict[int, tuple[str, bytes]],
    entries: dict[int, AttributeValue],
    uploads: list[Call],
) -> None:
    """Move the largest inline writes among ``members`` to S3 until they fit ``budget``."""
    task_id = task.task_id
    inline = [i for i in members if i in sizes]
    while sum(sizes[i] for i in inline) + 1024 * max(1, len(inline) // 64) > budget:
        if s.bucket_name is None:
            raise PayloadTooLargeError(
                f"writes of task {task_id!r} total ~{sum(sizes[i] for i in inline)} bytes, more than "
                f"{'a DynamoDB item' if budget == ITEM_BUDGET else 'a DynamoDB transaction'} holds, "
                "and no bucket_name is configured; nothing was written"
            )
        idx = max(inline, key=sizes.__getitem__)
        inline.remove(idx)
        del sizes[idx]
        channel, packed = by_idx[idx]
        entries[idx] = placement.write_to_s3(s, *task, idx, channel, packed, uploads)


def _land_writes(
    s: BaseDynamoDBSaver,
    task: _TaskAt,
    items: dict[int, Item],
    packed: dict[int, tuple[str, bytes]],
    *,
    overwrite: bool,
) -> Op[None]:
    """Write a call's writes items: all or none, first write of each index wins (unless ``overwrite``).

    A new item is put whole, on condition that it does not exist (no expression
    grows with the number of writes). If one does exist (a retried call, or an
    earlier call of the same task), the items are read and only the indexes
    still missing are added, each on condition that it is still missing; a
    missing index that would make its item too large goes to S3 first.
    """
    thread_id, ns, cid, task_id = task
    existing: dict[int, Item] = {}
    for attempt in range(_LAND_ATTEMPTS):
        actions = [
            a
            for shard, item in items.items()
            if (a := _write_action(s, item, existing.get(shard), overwrite))
        ]
        if not actions:
            return  # every index is already stored: a retried call
        if len(actions) == 1:
            kind, body = next(iter(actions[0].items()))
            call = ddb("put_item" if kind == "Put" else "update_item", **body)
        else:
            call = ddb("transact_write_items", TransactItems=actions)
        try:
            yield from write_item(s, call)
            return
        except ClientError as exc:
            if overwrite or not _condition_failed(exc):
                raise
            if _conflicted(exc):
                # Another writer's transaction held one of the items (nothing was applied):
                # back off with jitter before looking again, or the racers collide in step.
                yield Sleep(requests.backoff(attempt))
        found = yield from requests.query_all(
            TableName=s.table_name,
            KeyConditionExpression="#pk = :pk AND begins_with(#sk, :pre)",
            ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
            ExpressionAttributeValues={
                ":pk": {"S": s.keys.pk(thread_id)},
                ":pre": {"S": schema.writes_task_prefix(ns, cid, task_id)},
            },
            ConsistentRead=True,
        )
        existing = {}
        for it in found:
            for shard, mine in items.items():
                if mine[ATTR.SK]["S"] == it[ATTR.SK]["S"]:
                    existing[shard] = it
        moved: list[Call] = []
        for shard, it in existing.items():
            moved += _fit_missing(s, task, items[shard], it, packed)
        if moved:
            yield Gather(moved)
    raise CheckpointStoreError(
        f"writes of task {task_id!r} on checkpoint {cid!r}: other writers kept racing for the same "
        f"items ({_LAND_ATTEMPTS} attempts, with backoff); nothing more was written. Retry the step; "
        "if it keeps happening, another process is writing this thread at the same time (hold its "
        "lease: lock.ThreadLease)"
    )


def _write_action(
    s: BaseDynamoDBSaver, item: Item, existing: Item | None, overwrite: bool
) -> dict[str, Any] | None:
    """The transaction action that lands ``item`` (``None``: nothing left to write)."""
    if overwrite:
        return {"Put": {"TableName": s.table_name, "Item": item}}
    if existing is None:
        return {
            "Put": {
                "TableName": s.table_name,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(#pk)",
                "ExpressionAttributeNames": {"#pk": ATTR.PK},
            }
        }
    missing = [n for n in item if shapes.is_write_attr(n) and n not in existing]
    if not missing:
        return None
    names = {"#pk": ATTR.PK}
    values: dict[str, AttributeValue] = {}
    sets, conds = [], ["attribute_exists(#pk)"]
    for n, attr in enumerate(missing):
        names[f"#w{n}"] = attr
        values[f":w{n}"] = item[attr]
        sets.append(f"#w{n} = :w{n}")
        conds.append(f"attribute_not_exists(#w{n})")
    if ATTR.EXPIRES in item:
        names["#exp"] = ATTR.EXPIRES
        values[":exp"] = item[ATTR.EXPIRES]
        sets.append("#exp = :exp")
    return {
        "Update": {
            "TableName": s.table_name,
            "Key": {ATTR.PK: item[ATTR.PK], ATTR.SK: item[ATTR.SK]},
            "UpdateExpression": "SET " + ", ".join(sets),
            "ConditionExpression": " AND ".join(conds),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
    }


def _fit_missing(
    s: BaseDynamoDBSaver,
    task: _TaskAt,
    item: Item,
    existing: Item,
    packed: dict[int, tuple[str, bytes]],
) -> list[Call]:
    """Move writes ``item`` would add to ``existing`` to S3 until the merged item fits; their uploads."""
    thread_id, ns, cid, task_id = task
    uploads: list[Call] = []
    merged = {**item, **existing}
    missing = [n for n in item if shapes.is_write_attr(n) and n not in existing and "B" in item[n]["L"][1]]
    while shapes.item_size(merged) > ITEM_BUDGET:
        if s.bucket_name is None or not missing:
            raise PayloadTooLargeError(
                f"writes of task {task_id!r} on checkpoint {cid!r}: adding this call's writes to those "
                f"stored before would make an item of ~{shapes.item_size(merged)} bytes, more than DynamoDB "
                "holds"
                + ("" if s.bucket_name is not None else ", and no bucket_name is configured")
                + "; nothing more was written"
            )
        attr = max(missing, key=lambda n: len(item[n]["L"][1]["B"]))
        missing.remove(attr)
        idx = int(attr[len(ATTR.WRITE_PREFIX) :])
        channel, data = packed[idx]
        item[attr] = merged[attr] = placement.write_to_s3(
            s, thread_id, ns, cid, task_id, idx, channel, data, uploads
        )
    return uploads


def _conflicted(exc: ClientError) -> bool:
    """Whether a transaction was cancelled because another one held one of its items."""
    reasons = [r.get("Code") for r in exc.response.get("CancellationReasons") or []]
    return "TransactionConflict" in reasons


def _condition_failed(exc: ClientError) -> bool:
    """Whether a write failed only on its own conditions (an item or index already there), or a race."""
    code = error_code(exc)
    if code == "ConditionalCheckFailedException":
        return True
    if code != "TransactionCanceledException":
        return False
    reasons = [r.get("Code") for r in exc.response.get("CancellationReasons") or []]
    return bool(reasons) and all(
        r in (None, "None", "ConditionalCheckFailed", "TransactionConflict") for r in reasons
    )
