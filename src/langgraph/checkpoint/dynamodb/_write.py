"""Writing, I/O-free: ``put`` and ``put_writes``.

What lives here: building the one item each call writes (with the placement
rules of ``_placement``), its lineage root, and the activity it records on
the thread head (``_heads.on_activity``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)

from langgraph.checkpoint.dynamodb import _heads, _items, _placement, _read, clock, schema
from langgraph.checkpoint.dynamodb._items import (
    ITEM_BUDGET,
    AttributeValue,
    Item,
)
from langgraph.checkpoint.dynamodb._ops import Call, Gather, Op, compute, ddb, size_hint
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver, Location, Placement
from langgraph.checkpoint.dynamodb.errors import (
    PayloadTooLargeError,
)
from langgraph.checkpoint.dynamodb.schema import ATTR


def _pack_all(s: BaseDynamoDBSaver, values: list[Any], labels: list[str]) -> list[bytes]:
    """Each value packed (``labels`` name them in errors); what a write's ``Compute`` runs (maybe on another thread)."""
    return [s._pack(v, label) for v, label in zip(values, labels, strict=True)]


def _reuse(known: Placement, version: str, cid: str) -> AttributeValue | None:
    """What a checkpoint stores for a version already stored as ``known``; ``None``: store it again."""
    loc, held = known
    if loc == "inline" and isinstance(held, bytes):
        return {"B": held}
    if loc == "c" and isinstance(held, str) and held != cid:
        return _placement.value_ref(version, "c", held)
    if loc == "s3":
        return _placement.value_ref(version, loc, tag=held if isinstance(held, str) else None)
    if loc == "blob":
        return _placement.value_ref(version, loc)
    return None  # this very checkpoint, put again: hold the value


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

    def keep(self, channel: str, ref: AttributeValue) -> None:
        """A version already stored: its reference, or its inline copy."""
        self.vals[channel] = ref
        if "B" in ref:
            self.movable[channel] = len(ref["B"])

    def place(self, channel: str, version: str, packed: bytes) -> None:
        """A version stored by this put: inline, held by this item, or S3 (``value_location``)."""
        s = self.s
        key = (self.thread_id, self.ns, channel, version)
        loc = _placement.value_location(s, len(packed))
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
            s._remember(key, ("inline", packed))
        else:
            self.learned.append((key, ("c", self.cid)))

    def move_out(self, channel: str, version: str, dest: Location) -> None:
        """Move a value the item holds to S3 or (no bucket) its own blob item."""
        del self.movable[channel]
        self._to_external(channel, version, self.vals[channel]["B"], dest)

    def _to_external(self, channel: str, version: str, packed: bytes, dest: Location) -> None:
        s = self.s
        tag = _placement.new_tag() if dest == "s3" else None
        self.vals[channel] = _placement.value_ref(version, dest, tag=tag)
        key = _placement.stage_value(
            s, self.thread_id, self.ns, channel, version, packed, dest, self.uploads, self.blob_items
        )
        self.learned.append(((self.thread_id, self.ns, channel, version), (dest, tag)))
        if tag and key is not None:
            self.uploaded.append((key, tag, packed))

    def holds_refs(self) -> bool:
        return any(av.get("M", {}).get("l", {}).get("S") == "c" for av in self.vals.values())

    def landed(self) -> None:
        """The item is stored: remember where each version lives, keep the uploaded values."""
        s = self.s
        for key, placement in self.learned:
            s._remember(key, placement)
        for s3_key, tag, packed in self.uploaded:
            s._value_cache.uploaded((s.bucket_name or "", s3_key, tag), packed)


def put(
    s: BaseDynamoDBSaver,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> Op[RunnableConfig]:
    thread_id, ns, parent_id = s._ids(config)
    cid = checkpoint["id"]
    s._check_keys(thread_id, ns, cid)
    pk = s._pk(thread_id)
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
    reused: dict[str, AttributeValue] = {}
    fresh: list[str] = []
    for channel, version in versions.items():
        known = None if channel in new_versions else s._placements.get((thread_id, ns, channel, version))
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
    md = get_checkpoint_metadata(config, metadata)
    to_pack = [*(values[ch] for ch in fresh), body, md]
    labels = [
        *(f"checkpoint {cid!r}: channel {ch!r}" for ch in fresh),
        f"checkpoint {cid!r}",
        f"checkpoint {cid!r}: metadata",
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
    item[ATTR.BODY] = _placement.doc_payload(
        s, body_packed, f"{s._s3_base(thread_id, ns)}c/{schema.s3_segment(cid)}/body", staging.uploads
    )
    item[ATTR.METADATA] = _placement.doc_payload(
        s, md_packed, f"{s._s3_base(thread_id, ns)}c/{schema.s3_segment(cid)}/metadata", staging.uploads
    )
    # Delta channels whose value at this checkpoint must be rebuilt from
    # ancestors (nothing stored here). Prune, delete_for_runs and TTL read
    # this to keep every chain a surviving checkpoint needs, without
    # decoding anything. Channel names are schema, not state.
    needs = sorted(
        ch
        for ch in (md.get("counters_since_delta_snapshot") or {})
        if ch in body["channel_versions"] and ch not in values
    )
    if needs:
        item[ATTR.DELTA_NEEDS] = {"SS": needs}
    _fit(item, staging, versions)

    # The lineage root, recorded before the write: a child put issued
    # while this one is in flight must inherit it, not guess it.
    root = yield from _placement.root_for(s, thread_id, ns, cid, parent_id, config)
    item[ATTR.ROOT] = {"S": root}
    # Payloads first, then the item that points to them: a reader never
    # sees a pointer to something not yet written.
    yield from _placement.write_externals(s, staging.uploads, staging.blob_items)
    yield from s._write_item(ddb("put_item", TableName=s.table_name, Item=item))
    _read.note_put(s, pk, ns, cid, item)  # sizes the next latest read
    staging.landed()
    if not parent_id and not ns:
        # A new conversation: the head this process last wrote may have
        # been retired by a delete elsewhere; write it again now.
        s._head_until.pop(thread_id, None)
    yield from _heads.on_activity(s, thread_id, root=root)
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
    if parent_id:
        item[ATTR.PARENT_ID] = {"S": parent_id}
    run_id = md.get("run_id")
    if run_id:
        item[ATTR.RUN_ID] = {"S": str(run_id)}
    item[ATTR.VALUES] = {"M": staging.vals}  # the same dict: moving a value out updates it
    if s.ttl:
        # An activity stamp, not the TTL attribute: DynamoDB never deletes
        # checkpoint items one by one (that would cut delta chains); the
        # whole thread expires through its head item (see ``_heads``).
        item[ATTR.EXPIRES] = {"N": str(int(clock.now()) + s.ttl)}
    return item


def _fit(item: Item, staging: _Staging, versions: dict[str, str]) -> None:
    """Make the item fit: move the largest values it holds out, to S3 or (no bucket) blob items."""
    dest: Location = "s3" if staging.s.bucket_name is not None else "blob"
    while _items.item_size(item) > ITEM_BUDGET:
        movable = staging.movable
        channel = max(movable, key=movable.__getitem__) if movable else ""
        if not channel or (dest == "blob" and movable[channel] > ITEM_BUDGET):
            raise PayloadTooLargeError(
                f"checkpoint {staging.cid!r} does not fit in a DynamoDB item "
                f"(~{_items.item_size(item)} bytes) and no bucket_name is configured; "
                "nothing was written"
            )
        staging.move_out(channel, versions[channel], dest)
    if staging.holds_refs():
        item[ATTR.FORMAT] = {"N": str(schema.REF_FORMAT_VERSION)}


def put_writes(
    s: BaseDynamoDBSaver,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str = "",
) -> Op[None]:
    thread_id, ns, cid = s._ids(config, need_checkpoint_id=True)
    assert cid is not None
    if not isinstance(task_id, str):
        raise TypeError(f"task_id must be a str, got {type(task_id).__name__}")
    s._check_keys(thread_id, ns, cid, task_id)
    if not writes:
        return
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
    to_pack = [value for _, value in chosen.values()]
    labels = [f"write {channel!r} of task {task_id!r}" for channel, _ in chosen.values()]
    packed_all = yield from compute(_pack_all, s, to_pack, labels, size=size_hint(to_pack))
    by_idx: dict[int, tuple[str, bytes]] = {
        idx: (channel, packed) for (idx, (channel, _)), packed in zip(chosen.items(), packed_all, strict=True)
    }

    uploads: list[Call] = []
    entries: dict[int, AttributeValue] = {}
    sizes: dict[int, int] = {}
    for idx, (channel, packed) in by_idx.items():
        if s.bucket_name is not None and len(packed) > s.s3_threshold:
            entries[idx] = _placement.write_to_s3(
                s, thread_id, ns, cid, task_id, idx, channel, packed, uploads
            )
        else:
            entries[idx] = {"L": [{"S": channel}, {"B": packed}]}
            sizes[idx] = len(packed)
    while sum(sizes.values()) + 1024 > ITEM_BUDGET:
        if s.bucket_name is None:
            raise PayloadTooLargeError(
                f"writes of task {task_id!r} total ~{sum(sizes.values())} bytes, more than "
                "a DynamoDB item holds, and no bucket_name is configured; nothing was written"
            )
        idx = max(sizes, key=sizes.__getitem__)
        del sizes[idx]
        channel, packed = by_idx[idx]
        entries[idx] = _placement.write_to_s3(s, thread_id, ns, cid, task_id, idx, channel, packed, uploads)

    names = {"#t": ATTR.KIND, "#f": ATTR.FORMAT, "#tid": ATTR.TASK_ID, "#tp": ATTR.TASK_PATH}
    vals: dict[str, AttributeValue] = {
        ":t": {"S": schema.WRITES_ITEM},
        ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
        ":tid": {"S": task_id},
        ":tp": {"S": task_path or ""},
    }
    sets = ["#t = :t", "#f = :f", "#tid = :tid", "#tp = if_not_exists(#tp, :tp)"]
    if s.ttl:
        names["#exp"] = ATTR.EXPIRES
        vals[":exp"] = {"N": str(int(clock.now()) + s.ttl)}
        sets.append("#exp = :exp")
    run_id = (config.get("metadata") or {}).get("run_id")
    if run_id:
        names["#rid"] = ATTR.RUN_ID
        vals[":rid"] = {"S": str(run_id)}
        sets.append("#rid = if_not_exists(#rid, :rid)")
    for n, (idx, entry) in enumerate(sorted(entries.items())):
        names[f"#w{n}"] = f"{ATTR.WRITE_PREFIX}{idx}"
        vals[f":w{n}"] = entry
        if overwrite:
            sets.append(f"#w{n} = :w{n}")
        else:
            sets.append(f"#w{n} = if_not_exists(#w{n}, :w{n})")
    if uploads:
        yield Gather(uploads)
    # One request for the whole call, whatever the number of writes.
    write = ddb(
        "update_item",
        TableName=s.table_name,
        Key={
            ATTR.PK: {"S": s._pk(thread_id)},
            ATTR.SK: {"S": schema.writes_sk(ns, cid, task_id)},
        },
        UpdateExpression="SET " + ", ".join(sets),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=vals,
    )
    yield from s._write_item(write)
    _read.note_writes(s, s._pk(thread_id), ns, cid, task_id)  # sizes the next latest read
    # A root this saver does not know counts as unknown history (orphan).
    yield from _heads.on_activity(s, thread_id, root=s._roots.get((thread_id, ns, cid), schema.ORPHAN_ROOT))
