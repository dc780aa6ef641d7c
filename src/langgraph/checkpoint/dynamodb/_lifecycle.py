"""Lifecycle operations, I/O-free: thread heads, reaping, pruning, orphan sweep.

See ``lifecycle`` for the design. Every operation is idempotent: running it
twice, or two of them at once, deletes nothing more than one run would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import _items, _requests, clock, schema
from langgraph.checkpoint.dynamodb._aws import error_code
from langgraph.checkpoint.dynamodb._extended import ExtendedSaver, PruneResult
from langgraph.checkpoint.dynamodb._items import Item, ThreadItems
from langgraph.checkpoint.dynamodb._ops import Op, ddb, s3
from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError
from langgraph.checkpoint.dynamodb.lifecycle import (
    PrunePolicy,
    SweepReport,
    dedupe,
    expired_threads_from_stream,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = ["LifecycleSaver"]

#: Partition key of the pruner's and sweeper's cursor items. It contains a
#: bare separator, which no escaped thread id does: it can't be a thread.
STATE_PK = f"{schema.SEP}lifecycle"

#: Without a TTL, the head's activity time is refreshed this often (seconds).
TRACK_WINDOW = 300

_UUID_EPOCH_100NS = 0x01B21DD213814000


class LifecycleSaver(ExtendedSaver):
    """Thread heads, TTL reaping, the pruner and the orphan sweeper."""

    # ------------------------------------------------------------ activity

    def _refresh_window(self) -> int:
        if not self.ttl:
            return TRACK_WINDOW
        return max(60, min(86_400, self.ttl // 10))

    def _on_activity(self, thread_id: str, root: str | None = None) -> Op[None]:
        """Keep the thread head ahead of the thread's activity.

        The head's TTL is set to ``now + ttl + window`` and rewritten only
        when this process last left it below ``now + ttl``: at most one
        extra write per ``window`` per thread per process, never one per
        step, and never a rewrite of old items. A write on a lineage that a
        delete recorded in the head (``root`` in its dead set) leaves the head
        as it is: a late run cannot put a deleted thread back in the index.
        """
        if not self.track_threads:
            return
        now = int(clock.now())
        need = now + (self.ttl or 0)
        cached = self._head_until.get(thread_id)
        if cached is not None and cached >= need:
            return
        until = need + self._refresh_window()
        names = {
            "#t": ATTR.KIND,
            "#f": ATTR.FORMAT,
            "#thr": ATTR.THREAD_ID,
            "#ts": ATTR.THREAD_SHARD,
            "#ua": ATTR.UPDATED_AT,
        }
        values: dict[str, Any] = {
            ":t": {"S": schema.META_ITEM},
            ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
            ":thr": {"S": thread_id},
            ":ts": {"S": schema.thread_shard(thread_id)},
            ":ua": {"N": str(int(clock.now() * 1000))},
        }
        kwargs: dict[str, Any] = {}
        conditions: list[str] = []
        sets = "#t = :t, #f = :f, #thr = :thr, #ts = :ts, #ua = :ua"
        if self.ttl:
            names["#ttl"] = ATTR.TTL
            values[":ttl"] = {"N": str(until)}
            sets += ", #ttl = :ttl"
            # Never move a head backwards (another process may be ahead).
            conditions.append("(attribute_not_exists(#ttl) OR #ttl < :ttl)")
            kwargs["ReturnValues"] = "UPDATED_OLD"
        if root is not None:
            names["#dr"] = ATTR.DEAD
            values[":root"] = {"S": root}
            conditions.append("(attribute_not_exists(#dr) OR NOT contains(#dr, :root))")
        if conditions:
            kwargs["ConditionExpression"] = " AND ".join(conditions)
        if len(self._head_until) > 10_000:
            self._head_until.clear()
        try:
            resp = yield ddb(
                "update_item",
                TableName=self.table_name,
                Key={ATTR.PK: {"S": self._pk(thread_id)}, ATTR.SK: {"S": schema.HEAD_SK}},
                UpdateExpression="SET " + sets,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                **kwargs,
            )
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            self._head_until[thread_id] = need
            return
        self._head_until[thread_id] = until
        old = resp.get("Attributes", {}).get(ATTR.TTL)
        if old is not None and int(old["N"]) < now:
            # The thread had expired and nobody reaped it yet. Readers already
            # treat its old items as gone: remove them before they reappear.
            yield from self._op_reap_thread(thread_id, expired_before=now - 1)

    # ----------------------------------------------------------- reaping

    def _op_reap_thread(self, thread_id: str, *, expired_before: float) -> Op[PruneResult]:
        """Delete what an expired thread left: items stamped before the cutoff.

        Items written after ``expired_before`` (a thread that came back to
        life) stay, with the blobs and S3 objects they reference.
        """
        thread = yield from self._load_thread(thread_id)
        cutoff = int(expired_before)
        res = PruneResult(threads=1)

        def old(it: Item) -> bool:
            exp = it.get(ATTR.EXPIRES)
            return exp is None or int(exp["N"]) <= cutoff

        keep = {key for key, it in thread.checkpoints.items() if not old(it)}
        drop_writes = [
            w for key, ws in thread.writes.items() if key not in thread.checkpoints for w in ws if old(w)
        ]
        stale_meta = [
            m for m in thread.meta if ATTR.TTL in m and int(m[ATTR.TTL]["N"]) <= max(cutoff, int(clock.now()))
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
            yield from self._bury(thread_id, buried, list(thread.tombstones.values()), retire_head=head_stale)
            # A stale head is retired (it keeps the dead roots), not deleted.
            stale_meta = [m for m in stale_meta if m[ATTR.SK]["S"] != schema.HEAD_SK]
        yield from self._delete_unkept(thread, keep, res, drop_writes=drop_writes)
        if stale_meta:
            yield from self._delete_items(stale_meta)
        if not keep and self.bucket_name is not None:
            # Nothing live remains: objects that no item ever pointed to
            # (failed writes) go too, unless written after the cutoff.
            res.s3_objects_deleted += yield from self._delete_s3_prefix_before(
                self._s3_thread(thread_id), cutoff
            )
        return res

    def _delete_s3_prefix_before(self, prefix: str, cutoff: float) -> Op[int]:
        deleted = 0
        kwargs: dict[str, Any] = {"Bucket": self.bucket_name, "Prefix": prefix}
        while True:
            resp = yield s3("list_objects_v2", **kwargs)
            keys = [o["Key"] for o in resp.get("Contents", []) if o["LastModified"].timestamp() <= cutoff]
            if keys:
                yield from _requests.delete_s3_keys(self.bucket_name, keys)
                deleted += len(keys)
            if not resp.get("IsTruncated"):
                return deleted
            kwargs["ContinuationToken"] = resp["NextContinuationToken"]

    def _op_reap_stream(self, event: Mapping[str, Any]) -> Op[SweepReport]:
        """Reap the threads whose heads DynamoDB TTL deleted, from a Streams event."""
        found = dedupe(expired_threads_from_stream(event))
        return (yield from self._op_reap_partitions((t.partition_key, t.expired_at) for t in found))

    def _op_reap_partitions(self, expired: Iterable[tuple[str, float]]) -> Op[SweepReport]:
        """Reap threads by partition key (from TTL stream records)."""
        report = SweepReport()
        for pk, expired_at in expired:
            owner = self._owner_of_pk(pk)
            if owner is None:
                continue
            saver, thread_id = owner
            report.threads_scanned += 1
            res = yield from saver._op_reap_thread(thread_id, expired_before=expired_at or clock.now())
            report.add_prune(res)
            if res.checkpoints_deleted:
                report.threads_deleted += 1
        report.complete = True
        return report

    def _op_purge_expired(self, *, deadline: float | None = None) -> Op[SweepReport]:
        """Find expired thread heads through the threads index and reap them.

        For deployments without the stream consumer (or to catch up after
        an outage): what DynamoDB TTL plus the reaper Lambda would do.
        """
        report = SweepReport()
        now = int(clock.now())
        kwargs: dict[str, Any] = dict(
            TableName=self.table_name,
            IndexName=schema.THREADS_INDEX_NAME,
            FilterExpression="#ttl < :now",
            ExpressionAttributeNames={"#ttl": ATTR.TTL},
            ExpressionAttributeValues={":now": {"N": str(now)}},
        )
        while deadline is None or clock.now() < deadline:
            resp = yield ddb("scan", **kwargs)
            report.pages += 1
            for head in resp.get("Items", []):
                owner = self._owner_of_pk(head[ATTR.PK]["S"])
                if owner is None:
                    continue
                saver, thread_id = owner
                report.threads_scanned += 1
                res = yield from saver._op_reap_thread(thread_id, expired_before=int(head[ATTR.TTL]["N"]))
                report.add_prune(res)
                report.threads_deleted += 1
            if "LastEvaluatedKey" not in resp:
                report.complete = True
                break
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        return report

    # ---------------------------------------------------------- cursors

    def _read_cursor(self, name: str) -> Op[dict[str, Any]]:
        resp = yield ddb(
            "get_item",
            TableName=self.table_name,
            Key={ATTR.PK: {"S": STATE_PK}, ATTR.SK: {"S": name}},
            ConsistentRead=True,
        )
        item = resp.get("Item") or {}
        return {
            "cursor": item.get("cur", {}).get("S", ""),
            "last": item.get("last", {}).get("S", ""),
            "cycle": int(item.get("cyc", {}).get("N", "0")),
        }

    def _claim_cursor(self, name: str, old: str, new: str, last: str, cycle: int = 0) -> Op[bool]:
        """Move a cursor from ``old`` to ``new``; False if another run moved it first.

        Two concurrent runs never process the same page: each page is
        claimed by a conditional write before it is worked on.
        """
        try:
            yield ddb(
                "put_item",
                TableName=self.table_name,
                Item={
                    ATTR.PK: {"S": STATE_PK},
                    ATTR.SK: {"S": name},
                    ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
                    "cur": {"S": new},
                    "last": {"S": last},
                    # Reaching the end starts a new cycle: a run that sees a
                    # newer cycle than the one it started in has finished.
                    "cyc": {"N": str(cycle + 1 if not new else cycle)},
                    "at": {"N": str(int(clock.now()))},
                },
                ConditionExpression="attribute_not_exists(cur) AND :old = :empty OR cur = :old",
                ExpressionAttributeValues={":old": {"S": old}, ":empty": {"S": ""}},
            )
        except ClientError as exc:
            if error_code(exc) == "ConditionalCheckFailedException":
                return False
            raise
        return True

    # ------------------------------------------------------------ pruner

    def _op_run_pruner(
        self, policy: PrunePolicy, *, deadline: float | None = None, max_pages: int | None = None
    ) -> Op[SweepReport]:
        """Apply ``policy`` to the table, a claimed page at a time, until ``deadline``.

        Resumes where the previous run stopped (a cursor item in the table);
        reaching the end starts the next cycle from the top on the next run.
        """
        report = SweepReport()
        start_cycle: int | None = None
        while (deadline is None or clock.now() < deadline) and (
            max_pages is None or report.pages < max_pages
        ):
            state = yield from self._read_cursor("pruner")
            if start_cycle is None:
                start_cycle = state["cycle"]
            elif state["cycle"] != start_cycle:
                report.complete = True  # another run finished this cycle
                break
            kwargs: dict[str, Any] = {"TableName": self.table_name}
            if self.track_threads:
                kwargs.update(IndexName=schema.THREADS_INDEX_NAME, Limit=policy.page_size)
            else:
                kwargs.update(
                    ProjectionExpression="#pk",
                    ExpressionAttributeNames={"#pk": ATTR.PK},
                    Limit=policy.page_size * 8,
                )
            if state["cursor"]:
                kwargs["ExclusiveStartKey"] = json.loads(state["cursor"])
            resp = yield ddb("scan", **kwargs)
            new_cursor = json.dumps(resp["LastEvaluatedKey"]) if "LastEvaluatedKey" in resp else ""
            # partition -> (saver, thread, last activity (epoch s) if known); by
            # partition, as two tenants may each have a thread of that name.
            threads: dict[str, tuple[LifecycleSaver, str, float | None]] = {}
            for it in resp.get("Items", []):
                pk = it[ATTR.PK]["S"]
                owner = self._owner_of_pk(pk)
                # A thread whose items straddle two pages was done with the first.
                if owner is None or pk == state["last"] or pk in threads:
                    continue
                ua = it.get(ATTR.UPDATED_AT)
                threads[pk] = (*owner, int(ua["N"]) / 1000 if ua else None)
            last_pk = resp["Items"][-1][ATTR.PK]["S"] if resp.get("Items") else ""
            claimed = yield from self._claim_cursor(
                "pruner", state["cursor"], new_cursor, last_pk, state["cycle"]
            )
            if not claimed:
                continue  # another run took this page: take the next one
            report.pages += 1
            for saver, thread_id, last_active in threads.values():
                report.threads_scanned += 1
                try:
                    yield from saver._prune_one(thread_id, last_active, policy, report)
                except CheckpointStoreError as exc:
                    # One poisoned thread (a parent cycle, a corrupt item)
                    # must not stop the page, or every later run would stop
                    # at it again: record it (the Lambda logs the report)
                    # and go on. Service errors still propagate.
                    report.errors.append(f"thread {thread_id!r}: {type(exc).__name__}: {exc}")
            if not new_cursor:
                report.complete = True
                break
        return report

    def _prune_one(
        self, thread_id: str, last_active: float | None, policy: PrunePolicy, report: SweepReport
    ) -> Op[None]:
        thread = yield from self._load_thread(thread_id)
        if not thread.checkpoints:
            return
        if policy.idle_days is not None:
            if last_active is None:
                last_active = _last_activity(thread)
            if last_active is not None and clock.now() - last_active > policy.idle_days * 86_400:
                res = yield from self._op_delete_thread_counted(thread_id)
                report.add_prune(res)
                report.threads_deleted += 1
                return
        if policy.keep_last is not None:
            res = yield from self._prune_thread(thread_id, policy.keep_last)
            report.add_prune(res)

    # ----------------------------------------------------------- sweeper

    def _op_sweep_orphans(
        self, *, grace_seconds: float = 86_400, deadline: float | None = None, max_pages: int | None = None
    ) -> Op[SweepReport]:
        """Delete S3 objects no item points to, older than ``grace_seconds``.

        Such objects are left by a put whose DynamoDB write failed after its
        payloads were uploaded (payloads go first so that no item ever
        points to a missing object), or by a losing first-write-wins write.
        The grace period protects puts in flight.
        """
        report = SweepReport()
        if self.bucket_name is None:
            report.complete = True
            return report
        cutoff = clock.now() - grace_seconds
        root = (
            schema.tenant_s3_prefix(self.s3_key_prefix, self.tenant_prefix)
            if self.tenant_prefix
            else self.s3_key_prefix
        )
        start_cycle: int | None = None
        while (deadline is None or clock.now() < deadline) and (
            max_pages is None or report.pages < max_pages
        ):
            state = yield from self._read_cursor("sweeper")
            if start_cycle is None:
                start_cycle = state["cycle"]
            elif state["cycle"] != start_cycle:
                report.complete = True
                break
            kwargs: dict[str, Any] = {"Bucket": self.bucket_name, "Prefix": root, "MaxKeys": 1000}
            if state["cursor"]:
                kwargs["ContinuationToken"] = state["cursor"]
            resp = yield s3("list_objects_v2", **kwargs)
            new_cursor = resp.get("NextContinuationToken", "") if resp.get("IsTruncated") else ""
            claimed = yield from self._claim_cursor(
                "sweeper", state["cursor"], new_cursor, "", state["cycle"]
            )
            if not claimed:
                continue
            report.pages += 1
            by_thread: dict[str, list[dict[str, Any]]] = {}
            for obj in resp.get("Contents", []):
                report.s3_objects_scanned += 1
                segment = obj["Key"][len(self.s3_key_prefix) :].split("/", 1)[0]
                by_thread.setdefault(segment, []).append(obj)
            for segment, objs in by_thread.items():
                old = [o for o in objs if o["LastModified"].timestamp() < cutoff]
                if not old:
                    continue
                parsed = schema.parse_s3_thread_segment(segment)
                owner = None
                if parsed is not None:
                    owner = self._owner_of_pk(schema.partition_key(parsed[1], parsed[0]))
                if owner is None:
                    continue
                saver, thread_id = owner
                if saver._s3_thread(thread_id) != f"{self.s3_key_prefix}{segment}/":
                    continue  # a segment this library never writes (e.g. not quoted as it quotes)
                report.threads_scanned += 1
                thread = yield from saver._load_thread(thread_id)
                referenced = saver._referenced_s3_keys(thread)
                doomed = [o["Key"] for o in old if o["Key"] not in referenced]
                if doomed:
                    yield from _requests.delete_s3_keys(self.bucket_name, doomed)
                    report.s3_objects_deleted += len(doomed)
                    report.bytes_freed += sum(o.get("Size", 0) for o in old if o["Key"] in set(doomed))
            if not new_cursor:
                report.complete = True
                break
        return report

    def _referenced_s3_keys(self, thread: ThreadItems) -> set[str]:
        out: set[str] = set()
        for it in thread.checkpoints.values():
            out |= self._item_refs(thread.thread_id, it)[0]
        for ws in thread.writes.values():
            for w in ws:
                out |= self._item_refs(thread.thread_id, w)[0]
        return out


def uuid6_epoch(checkpoint_id: str) -> float | None:
    """Creation time (epoch seconds) of a uuid6 checkpoint id, or None."""
    try:
        u = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if u.version != 6:
        return None
    n = u.int
    ts = ((n >> 96) << 28) | (((n >> 80) & 0xFFFF) << 12) | ((n >> 64) & 0x0FFF)
    return (ts - _UUID_EPOCH_100NS) / 1e7


def _last_activity(thread: ThreadItems) -> float | None:
    times = [t for _, cid in thread.checkpoints if (t := uuid6_epoch(cid)) is not None]
    return max(times) if times else None
