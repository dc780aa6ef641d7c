"""Extended capabilities, I/O-free: delta history, copy, prune, delete_for_runs.

All of them share one idea, the *keep-set*: a checkpoint that survives needs
its delta channels' history back to the nearest stored value (the seed), so
the ancestors on that path survive with their writes and blobs. Checkpoint
items record which delta channels they rebuild from ancestors
(``ATTR.DELTA_NEEDS``), so the keep-set is computed from keys alone, without
decoding any state.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import DeltaChannelHistory, PendingWrite

from langgraph.checkpoint.dynamodb import _items, _requests, clock, schema
from langgraph.checkpoint.dynamodb._aws import error_code
from langgraph.checkpoint.dynamodb._core import CoreSaver
from langgraph.checkpoint.dynamodb._items import CheckpointRecord, Item, Ref, ThreadItems
from langgraph.checkpoint.dynamodb._ops import Call, Gather, Op, ddb, s3
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError, MissingPayloadError
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = ["ExtendedSaver", "PruneResult", "keep_set"]

#: Unreferenced blobs and S3 value objects younger than this are left alone by
#: prune: a put may have written them and not yet its checkpoint item.
BLOB_GRACE_SECONDS = 15 * 60

STRATEGIES = ("keep_latest", "delete")

#: Items in the first page of a delta-history Query (see ``size_page``).
FIRST_PAGE_ITEMS = 64


@dataclass
class PruneResult:
    """What one prune or delete removed (counts are items and objects)."""

    threads: int = 0
    checkpoints_deleted: int = 0
    writes_deleted: int = 0
    blobs_deleted: int = 0
    s3_objects_deleted: int = 0
    bytes_freed: int = 0
    checkpoints_kept: int = 0
    kept_for_delta: int = 0
    #: Values a deleted checkpoint held for kept ones, moved to a blob item
    #: or S3 object of their version first.
    values_rehomed: int = 0

    def add(self, other: PruneResult) -> None:
        for f in self.__dataclass_fields__:
            setattr(self, f, getattr(self, f) + getattr(other, f))


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
                raise parent_cycle_error(thread_id, ns, walked, parent)
            walked.append(parent)
            on_chain.add(parent)
            pkey = (ns, parent)
            pitem = checkpoints.get(pkey)
            if pitem is None:
                break  # chain already broken before us: nothing more to keep
            keep.add(pkey)
            ancestors.add(pkey)
            needs -= set(pitem.get(ATTR.VALUES, {}).get("M", {}))
            parent = pitem.get(ATTR.PARENT_ID, {}).get("S")
    return keep, ancestors


class ExtendedSaver(CoreSaver):
    """Operations beyond the base contract, shared by both savers."""

    # ---------------------------------------------------- delta history

    def _op_delta_history(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> Op[dict[str, DeltaChannelHistory]]:
        """Batched ``get_delta_channel_history``: one descending Query from the
        target (more pages only if the chain outgrows 1 MB), then one wave of
        fetches for spilled seeds and writes. The number of round trips does
        not grow with the length of the chain.
        """

        if not channels:
            return {}
        thread_id, ns, cid = self._ids(config)
        pk = self._pk(thread_id)
        values: dict[str, Any] = {":pk": {"S": pk}, ":lo": {"S": schema.checkpoint_prefix(ns)}}
        if cid is not None:
            cond = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
            values[":hi"] = {"S": schema.checkpoint_range_end(ns, cid)}
        else:
            cond = "#pk = :pk AND begins_with(#sk, :lo)"
        kwargs: dict[str, Any] = dict(
            TableName=self.table_name,
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
                hint = self._depth_hints.get((thread_id, ns, cid)) if cid is not None else None
                depth = _depth_from_counters(hint, channels) if hint is not None else None
                kwargs["Limit"] = (
                    FIRST_PAGE_ITEMS if depth is None else max(FIRST_PAGE_ITEMS, (depth + 4) * 5 + 16)
                )
                return
            kwargs.pop("Limit", None)
            target_rec = records.get(cid) if cid is not None else None
            if pages > 1 or target_rec is None:
                return
            depth = self._delta_depth(target_rec, channels)
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
                resp, head = yield Gather([ddb("query", **kwargs), self._dead_roots_call(thread_id)])
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
                        TableName=self.table_name,
                        KeyConditionExpression="#pk = :pk AND #sk BETWEEN :lo AND :hi",
                        ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
                        ExpressionAttributeValues={
                            ":pk": {"S": pk},
                            ":lo": {"S": schema.checkpoint_sk(ns, target)},
                            ":hi": {"S": schema.checkpoint_range_end(ns, target)},
                        },
                        ConsistentRead=True,
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
                raise parent_cycle_error(thread_id, ns, walked, cursor)
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
                refs.append(self._value_ref_target(rec, pk, ch, av))
        for rec in chain:
            for w in rec.writes:
                for name, av in w.items():
                    if _is_write(name) and "M" in av["L"][1]:
                        where = f"writes of checkpoint {rec.checkpoint_id!r} of thread {thread_id!r}"
                        with _items.malformed(where):
                            refs.append(Ref("s3", self._s3_pointer(thread_id, w, name)))
        fetched = yield from self._fetch(refs, local=records.values())

        collected: dict[str, list[PendingWrite]] = {ch: [] for ch in channels}
        open_channels = set(channels)
        for rec in chain:
            if not open_channels:
                break
            for write in reversed(self._decode_writes(rec, fetched)):
                if write[1] in open_channels:
                    collected[write[1]].append(write)
            open_channels -= {ch for ch, srec in seeds.items() if srec is rec}
        result: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            entry: DeltaChannelHistory = {"writes": list(reversed(collected[ch]))}
            if ch in seeds:
                rec = seeds[ch]
                av = rec.item[ATTR.VALUES]["M"][ch]
                packed = av["B"] if "B" in av else fetched[self._value_ref_target(rec, pk, ch, av)]
                entry["seed"] = self._unpack(packed, f"channel {ch!r} of checkpoint {rec.checkpoint_id!r}")
            result[ch] = entry
        return result

    def _delta_depth(self, record: CheckpointRecord, channels: Sequence[str]) -> int | None:
        """Supersteps back to the oldest snapshot any of ``channels`` needs, if known."""
        av = record.item.get(ATTR.METADATA, {})
        if "B" not in av:
            return None
        md = self._unpack(av["B"], f"metadata of checkpoint {record.checkpoint_id!r}")
        stored = record.item.get(ATTR.VALUES, {}).get("M", {})
        return _depth_from_counters(
            md.get("counters_since_delta_snapshot") or {}, [c for c in channels if c not in stored]
        )

    # ------------------------------------------------------- thread items

    def _load_thread(self, thread_id: str) -> Op[ThreadItems]:
        items = yield from _requests.query_all(
            TableName=self.table_name,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": ATTR.PK},
            ExpressionAttributeValues={":pk": {"S": self._pk(thread_id)}},
            ConsistentRead=True,
        )
        return ThreadItems.from_items(thread_id, items)

    def _delete_items(self, items: Iterable[Item]) -> Op[None]:
        yield from _requests.ordered_deletes(self.table_name, items)

    # ---------------------------------------------------------------- copy

    def _op_copy_thread(
        self, source_thread_id: str, target_thread_id: str, *, into: ExtendedSaver | None = None
    ) -> Op[None]:
        """Copy every namespace, checkpoint, write, blob and S3 object.

        Same checkpoint ids; S3 objects are copied server-side first, then
        the items in batches, so the target never points at a missing object.
        The copy shares nothing with the source: each owns its objects.
        ``into``: the saver (a tenant view) whose keys the target gets; this
        one's by default.
        """
        dst = into if into is not None else self
        for name, value in (("source_thread_id", source_thread_id), ("target_thread_id", target_thread_id)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string")
            self._check_keys(value, "", None)
        if dst._pk(target_thread_id) == self._pk(source_thread_id):
            raise ValueError("source_thread_id and target_thread_id are the same thread")
        target = yield from dst._load_thread(target_thread_id)
        if target.checkpoints or target.blobs:
            raise ValueError(
                f"target thread {target_thread_id!r} already has checkpoints; "
                "delete it first (copy_thread never merges two histories)"
            )
        source = yield from self._load_thread(source_thread_id)
        # Late writes on deleted lineages are not part of the source: not
        # copied (nor the tombstones that hide them).
        for dead_key in source.dead():
            del source.checkpoints[dead_key]
            source.writes.pop(dead_key, None)
        src_prefix = self._s3_thread(source_thread_id)
        dst_prefix = dst._s3_thread(target_thread_id)
        dst_pk = {"S": dst._pk(target_thread_id)}

        s3_keys: set[str] = set()

        def retarget(items: Iterable[Item]) -> list[Item]:
            out = []
            for it in items:
                # Only the source's own objects are copied: a pointer to any
                # other object (a forged one, to another tenant's data) makes
                # the copy refuse before anything is written.
                for name, av in it.items():
                    if (name in (ATTR.BODY, ATTR.METADATA) and "M" in av) or (
                        _is_write(name) and "M" in av["L"][1]
                    ):
                        with _items.malformed(f"item {it[ATTR.PK]['S']!r}/{it[ATTR.SK]['S']!r}"):
                            self._s3_pointer(source_thread_id, it, name)
                copy = _retarget(it, src_prefix, dst_prefix, s3_keys)
                copy[ATTR.PK] = dst_pk
                out.append(copy)
            return out

        payload_items = retarget([*(w for ws in source.writes.values() for w in ws), *source.blobs.values()])
        # Oldest first: an interrupted copy leaves the target a consistent
        # prefix of the source (a checkpoint never lands before its parent).
        checkpoint_items = retarget(
            source.checkpoints[k] for k in sorted(source.checkpoints, key=lambda k: k[1])
        )
        # Fresh lineage roots: the target may once have held a copy of the
        # same checkpoints and been deleted; its tombstone must not hide this one.
        token = uuid.uuid4().hex
        for it in checkpoint_items:
            _, _, cid, _ = _items.parse_sk(it)
            it[ATTR.ROOT] = {"S": f"{_items.root_of(it, cid)}@copy-{token}"}
        # Channel values in S3 are keyed by version, not referenced by key.
        # A value referenced as held by a checkpoint or as a blob item is in
        # S3 when a prune re-homed it there or thresholds changed: copied if
        # it is there (``maybe``), after the places a reader tries first.
        maybe: set[str] = set()
        if self.bucket_name is not None:
            for it in source.checkpoints.values():
                ns, _, _, _ = _items.parse_sk(it)
                for channel, av in it.get(ATTR.VALUES, {}).get("M", {}).items():
                    if "M" not in av:
                        continue
                    ref = av["M"]
                    version = ref["v"]["S"]
                    key = self._value_s3_key(source_thread_id, ns, channel, version)
                    if ref["l"]["S"] == "s3":
                        s3_keys.add(key)
                        continue
                    if schema.blob_sk(ns, channel, version) in source.blobs:
                        continue
                    held = source.checkpoints.get((ns, ref["c"]["S"])) if ref["l"]["S"] == "c" else None
                    if held is None or _items.held_value(held, channel) is None:
                        maybe.add(key)
        maybe -= s3_keys
        if s3_keys or maybe:
            if self.bucket_name is None:
                raise ValueError("source thread has S3 payloads but no bucket_name is configured")
            keys = sorted(s3_keys | maybe)
            for i in range(0, len(keys), 64):
                chunk = keys[i : i + 64]
                results = yield Gather(
                    [
                        s3(
                            "copy_object",
                            Bucket=self.bucket_name,
                            Key=dst_prefix + key[len(src_prefix) :],
                            CopySource={"Bucket": self.bucket_name, "Key": key},
                        )
                        for key in chunk
                    ],
                    return_exceptions=True,
                )
                for key, result in zip(chunk, results, strict=True):
                    if isinstance(result, BaseException):
                        if (
                            key in maybe
                            and isinstance(result, ClientError)
                            and error_code(result) in ("NoSuchKey", "404")
                        ):
                            continue
                        raise result
        # What checkpoints point to (objects, then writes and blobs) lands
        # before any checkpoint: a copied checkpoint is readable as in the
        # source the moment it exists, or not at all.
        yield from _requests.batch_write(
            self.table_name, [{"PutRequest": {"Item": it}} for it in payload_items]
        )
        yield from _requests.batch_write(
            self.table_name, [{"PutRequest": {"Item": it}} for it in checkpoint_items], in_order=True
        )
        yield from dst._on_activity(target_thread_id)

    def _op_migrate_tenant_thread(self, tenant_prefix: str, thread_id: str) -> Op[None]:
        """Move a tenant's thread from the layout before the tenant delimiter to today's.

        Versions without the delimiter stored tenant ``P``'s thread ``T``
        exactly where an untenanted saver keeps thread ``P + T``
        (``PK = escape(P + T)``, S3 ``<prefix><quote(P + T)>/``). The thread
        is copied to ``P|T`` (items and objects, pointers rewritten), then
        the old one is deleted. Re-running after an interruption is safe:
        a completed copy is found and only the delete is redone.
        """
        if self.tenant_prefix:
            raise ValueError("migrate with an untenanted saver: the old threads are untenanted keys")
        schema.validate_tenant_prefix(tenant_prefix)
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError("thread_id must be a non-empty string")
        old = tenant_prefix + thread_id
        dst = self._tenant_view(tenant_prefix)
        source = yield from self._load_thread(old)
        target = yield from dst._load_thread(thread_id)
        if source.checkpoints and set(target.checkpoints) != set(source.checkpoints):
            if not set(target.checkpoints) <= set(source.checkpoints):
                raise ValueError(
                    f"tenant {tenant_prefix!r} already has a different thread {thread_id!r} under the "
                    "new layout; delete one of them first"
                )
            if target.checkpoints or target.blobs:
                # An interrupted copy (it lands oldest first): start it over.
                yield from dst._op_delete_thread(thread_id)
            yield from self._op_copy_thread(old, thread_id, into=dst)
        yield from self._op_delete_thread(old)

    # --------------------------------------------------------------- prune

    def _op_prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> Op[PruneResult]:
        if isinstance(thread_ids, (str, bytes)):
            raise TypeError(
                "thread_ids must be a list of thread ids, not a single string "
                f"(did you mean [{thread_ids!r}]?)"
            )
        thread_ids = list(thread_ids)
        for t in thread_ids:
            if not isinstance(t, str) or not t:
                raise TypeError(f"every thread id must be a non-empty str, got {t!r}")
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown prune strategy {strategy!r}; use one of {STRATEGIES}")
        if keep_last is not None:
            if strategy != "keep_latest":
                raise ValueError("keep_last applies to strategy='keep_latest' only")
            if not isinstance(keep_last, int) or isinstance(keep_last, bool) or keep_last < 1:
                raise ValueError(f"keep_last must be an int >= 1, got {keep_last!r}")
        total = PruneResult()
        for thread_id in dict.fromkeys(thread_ids):
            if strategy == "delete":
                res = yield from self._op_delete_thread_counted(thread_id)
            else:
                res = yield from self._prune_thread(thread_id, keep_last or 1)
            total.add(res)
        return total

    def _op_delete_thread_counted(self, thread_id: str) -> Op[PruneResult]:
        thread = yield from self._load_thread(thread_id)
        res = PruneResult(threads=1)
        res.checkpoints_deleted = len(thread.checkpoints)
        res.writes_deleted = sum(len(w) for w in thread.writes.values())
        res.blobs_deleted = len(thread.blobs)
        res.bytes_freed = sum(
            _size(it)
            for group in (thread.checkpoints.values(), thread.blobs.values(), thread.meta)
            for it in group
        ) + sum(_size(w) for ws in thread.writes.values() for w in ws)
        yield from self._op_delete_thread(thread_id)
        return res

    def _prune_thread(self, thread_id: str, keep_last: int) -> Op[PruneResult]:
        thread = yield from self._load_thread(thread_id)
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
        keep, _ = keep_set(live, survivors, thread_id=thread_id)
        res.checkpoints_kept = len(keep)
        res.kept_for_delta = len(keep) - len(survivors)
        yield from self._delete_unkept(thread, keep, res)
        return res

    def _delete_unkept(
        self,
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
        doomed: list[Item] = []
        kept_s3: set[str] = set()
        kept_blobs: set[str] = set()
        doomed_s3: set[str] = set()

        def track(it: Item, kept: bool) -> None:
            s3_keys, blob_sks = self._item_refs(thread.thread_id, it)
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
            age = now - int(blob.get(ATTR.CREATED, {}).get("N", "0"))
            if sk not in kept_blobs and age > BLOB_GRACE_SECONDS:
                doomed.append(blob)
                res.blobs_deleted += 1
        res.bytes_freed += sum(_size(it) for it in doomed)
        yield from self._rehome_held_values(thread, keep, res)
        yield from self._delete_items(doomed)
        # Value objects are keyed by version: a kept checkpoint may share one
        # with a deleted one, so only unshared objects go.
        s3_doomed = sorted(doomed_s3 - kept_s3)
        if s3_doomed and self.bucket_name is not None:
            yield from _requests.delete_s3_keys(self.bucket_name, s3_doomed)
            res.s3_objects_deleted += len(s3_doomed)

    def _rehome_held_values(
        self, thread: ThreadItems, keep: set[tuple[str, str]], res: PruneResult
    ) -> Op[None]:
        """Move values that doomed checkpoints hold for kept ones out of them.

        A kept checkpoint may reference a value held by the checkpoint that
        introduced it. Before that one is deleted, the value is written as
        the blob item (or S3 object) of its version, where readers look
        next: the reference stays valid without rewriting the kept item.
        """
        uploads: list[Call] = []
        blob_items: list[Item] = []
        done: set[tuple[str, str, str]] = set()
        for key, it in thread.checkpoints.items():
            if key not in keep:
                continue
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
                held = thread.checkpoints.get(holder)
                packed = _items.held_value(held, channel) if held is not None else None
                if packed is None:
                    continue  # already gone (or in S3): nothing left to move
                done.add((ns, channel, version))
                big = self.bucket_name is not None and len(packed) > self.s3_threshold
                self._stage_value(
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
        yield from self._write_externals(uploads, blob_items)

    def _item_refs(self, thread_id: str, item: Item) -> tuple[set[str], set[str]]:
        """``(S3 keys, blob sort keys)`` an item points to."""
        s3_keys: set[str] = set()
        blob_sks: set[str] = set()
        ns, kind, _, _ = schema.parse_sk(item[ATTR.SK]["S"])
        for attr, av in item.items():
            if (attr in (ATTR.BODY, ATTR.METADATA) and "M" in av) or (_is_write(attr) and "M" in av["L"][1]):
                try:
                    s3_keys.add(self._s3_pointer(thread_id, item, attr))
                except (CorruptPayloadError, KeyError, IndexError, TypeError):
                    # A forged pointer (another thread's or tenant's object)
                    # is never deleted, nor does it keep anything alive. A
                    # body or metadata object is the item's own by its key,
                    # whatever the attribute says.
                    own = self._own_s3_key(thread_id, item, attr)
                    if own is not None and own[1]:
                        s3_keys.add(own[0])
        if kind == schema.CHECKPOINT_ITEM:
            for channel, av in item.get(ATTR.VALUES, {}).get("M", {}).items():
                if "M" not in av:
                    continue
                version = av["M"]["v"]["S"]
                # Either location: thresholds may have changed since.
                s3_keys.add(self._value_s3_key(thread_id, ns, channel, version))
                blob_sks.add(schema.blob_sk(ns, channel, version))
        return s3_keys, blob_sks

    # ----------------------------------------------------- delete_for_runs

    def _op_delete_for_runs(self, run_ids: Sequence[str]) -> Op[PruneResult]:
        """Delete the checkpoints and writes of runs, found through the run index.

        A checkpoint of a deleted run that a surviving checkpoint still needs
        for its delta channels stays (with the writes on that path).
        """
        if isinstance(run_ids, (str, bytes)):
            raise TypeError("run_ids must be a list of run ids, not a single string")
        runs = [str(r) for r in run_ids]
        total = PruneResult()
        if not runs:
            return total
        by_thread: dict[str, set[str]] = {}  # pk -> sort keys of the runs' items
        for run_id in dict.fromkeys(runs):
            kwargs: dict[str, Any] = dict(
                TableName=self.table_name,
                IndexName=schema.RUN_INDEX_NAME,
                KeyConditionExpression="#rid = :rid",
                ExpressionAttributeNames={"#rid": ATTR.RUN_ID},
                ExpressionAttributeValues={":rid": {"S": run_id}},
            )
            while True:
                resp = yield ddb("query", **kwargs)
                for it in resp.get("Items", []):
                    by_thread.setdefault(it[ATTR.PK]["S"], set()).add(it[ATTR.SK]["S"])
                if "LastEvaluatedKey" not in resp:
                    break
                kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        run_set = set(runs)
        for pk in sorted(by_thread):
            # An untenanted (operator) saver deletes the runs of every
            # tenant, each through a view of that tenant (see _owner_of_pk).
            owner = self._owner_of_pk(pk)
            if owner is None:
                continue
            saver, thread_id = owner
            thread = yield from saver._load_thread(thread_id)
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
            yield from saver._delete_unkept(thread, keep, res, drop_writes=drop_writes)
            total.add(res)
        return total


# ----------------------------------------------------------------- helpers


def parent_cycle_error(thread_id: str, ns: str, walked: Sequence[str], again: str) -> CorruptPayloadError:
    """The error for a parent chain that reaches ``again`` a second time.

    ``walked`` is the chain from where the walk started; the cycle is its
    part from ``again`` on. Long cycles are abbreviated in the message.
    """
    cycle = [*walked[list(walked).index(again) :], again]
    shown = (
        " -> ".join(repr(c) for c in cycle)
        if len(cycle) <= 12
        else (
            " -> ".join(repr(c) for c in cycle[:5])
            + f" -> ... ({len(cycle) - 10} more) -> "
            + " -> ".join(repr(c) for c in cycle[-5:])
        )
    )
    return CorruptPayloadError(
        f"thread {thread_id!r} (namespace {ns!r}): the parent chain of checkpoint {walked[0]!r} "
        f"loops back on itself ({len(cycle) - 1} checkpoint(s) in the cycle: {shown}); "
        "parent ids are corrupt or were tampered with, so its history cannot be rebuilt"
    )


def _depth_from_counters(counters: Mapping[str, Any], channels: Sequence[str]) -> int | None:
    """Supersteps back to the oldest snapshot of ``channels``, or None if unknown."""
    depth = 0
    for ch in channels:
        if ch not in counters:
            return None
        depth = max(depth, int(counters[ch][1]))
    return depth


def _is_write(name: str) -> bool:
    return name.startswith(ATTR.WRITE_PREFIX) and name[1:].lstrip("-").isdigit()


def _writes_touch(item: Item, channels: set[str]) -> bool:
    return any(_is_write(n) and av["L"][0]["S"] in channels for n, av in item.items())


def _size(item: Item) -> int:

    return _items.item_size(item)


def _retarget(item: Item, src_prefix: str, dst_prefix: str, s3_keys: set[str]) -> Item:
    """Copy an item, moving its S3 references from one thread prefix to another."""

    def fix(av: dict[str, Any]) -> dict[str, Any]:
        if "M" in av and "s3" in av["M"]:
            key = av["M"]["s3"]["S"]
            if key.startswith(src_prefix):
                s3_keys.add(key)
                return {"M": {**av["M"], "s3": {"S": dst_prefix + key[len(src_prefix) :]}}}
        return av

    out: Item = {}
    for name, av in item.items():
        if name in (ATTR.BODY, ATTR.METADATA):
            out[name] = fix(av)
        elif _is_write(name):
            out[name] = {"L": [av["L"][0], fix(av["L"][1])]}
        else:
            out[name] = av
    return out
