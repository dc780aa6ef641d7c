"""Thread lifecycle: typed policies, reports and TTL stream parsing.

The operations themselves are saver methods (sync and async):
``reap_thread``/``areap_thread``, ``purge_expired``/``apurge_expired``,
``run_pruner``/``arun_pruner`` and ``sweep_orphans``/``asweep_orphans``. The
Lambda handlers under ``lambdas/`` only parse their event and configuration
with the helpers here and call those methods.

How threads expire (``ttl`` on the savers):

* Every checkpoint and writes item carries an activity stamp (``exp``), but
  no TTL attribute: DynamoDB's TTL never deletes them one by one, so it can
  never cut a delta chain out of a live thread.
* One *head* item per thread carries the TTL attribute. Writes move it
  forward, at most once per refresh window per process (not one extra write
  per step). It expires only after the whole thread was idle for ``ttl``.
* When DynamoDB deletes an expired head, the stream delivers a REMOVE record
  by ``dynamodb.amazonaws.com``; the reaper Lambda (``reap_thread``) deletes
  the rest of the thread and its S3 objects. ``purge_expired`` does the same
  without streams, for deployments without the Lambda.
* Maintenance runs within a capacity budget (``capacity_budget``): at most
  the read and write units a second it is given, fewer while it meets
  throttles, so it never starves the application of the table's capacity.
* Readers treat a thread whose stamps and head are past their time as gone,
  so nobody ever sees a partially deleted thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.budget import CapacityBudget, capacity_budget

__all__ = [
    "CapacityBudget",
    "ExpiredThread",
    "PrunePolicy",
    "PruneResult",
    "SweepReport",
    "capacity_budget",
    "expired_threads_from_stream",
]

TTL_PRINCIPAL = "dynamodb.amazonaws.com"


@dataclass(frozen=True)
class PrunePolicy:
    """What the scheduled pruner does to each thread.

    Args:
        keep_last: keep the N latest checkpoints per namespace (delta-safe);
            ``None`` keeps all.
        idle_days: delete threads with no activity for this many days;
            ``None`` never deletes.
        page_size: threads examined per claimed page.
        max_thread_bytes: the most item bytes of one thread the job holds in
            memory. A larger thread is pruned from its outline (keys, lineage,
            stamps), its payloads read a Query page at a time; one whose
            outline alone is larger is recorded in the report's ``errors`` and
            left as it is (an idle one is still deleted, from its keys alone),
            and the job goes on. By default an eighth of the Lambda's memory
            (``AWS_LAMBDA_FUNCTION_MEMORY_SIZE``, at least 8 MiB), else 64 MiB.

    Example:
        >>> policy = PrunePolicy.from_env({"PRUNE_KEEP_LAST": "20", "PRUNE_IDLE_DAYS": "30"})
        >>> policy.keep_last, policy.idle_days
        (20, 30.0)
    """

    keep_last: int | None = None
    idle_days: float | None = None
    page_size: int = 25
    max_thread_bytes: int = field(default_factory=lambda: default_thread_budget())

    def __post_init__(self) -> None:
        if self.keep_last is not None and self.keep_last < 1:
            raise ValueError(f"keep_last must be >= 1, got {self.keep_last}")
        if self.idle_days is not None and self.idle_days <= 0:
            raise ValueError(f"idle_days must be > 0, got {self.idle_days}")
        if not 1 <= self.page_size <= 1000:
            raise ValueError(f"page_size must be 1..1000, got {self.page_size}")
        if self.max_thread_bytes < 1024 * 1024:
            raise ValueError(f"max_thread_bytes must be at least 1 MiB, got {self.max_thread_bytes}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PrunePolicy:
        """Read ``PRUNE_KEEP_LAST``, ``PRUNE_IDLE_DAYS``, ``PRUNE_PAGE_SIZE``, ``PRUNE_MAX_THREAD_MB``."""
        env = os.environ if env is None else env

        def num(name: str, conv: Any) -> Any:
            raw = env.get(name, "").strip()
            if not raw:
                return None
            try:
                return conv(raw)
            except ValueError:
                raise ValueError(f"{name} must be a number, got {raw!r}") from None

        budget = num("PRUNE_MAX_THREAD_MB", float)
        return cls(
            keep_last=num("PRUNE_KEEP_LAST", int),
            idle_days=num("PRUNE_IDLE_DAYS", float),
            page_size=num("PRUNE_PAGE_SIZE", int) or 25,
            max_thread_bytes=int(budget * 1024 * 1024) if budget is not None else default_thread_budget(env),
        )


#: The job's budget for one thread outside Lambda (see ``PrunePolicy.max_thread_bytes``).
DEFAULT_THREAD_BYTES = 64 * 1024 * 1024


def default_thread_budget(env: Mapping[str, str] | None = None) -> int:
    """An eighth of the Lambda's memory (items decode to a few times their size), at least 8 MiB.

    Outside Lambda (no ``AWS_LAMBDA_FUNCTION_MEMORY_SIZE``): 64 MiB.
    """
    env = os.environ if env is None else env
    raw = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "").strip()
    if not raw.isdigit():
        return DEFAULT_THREAD_BYTES
    return max(8 * 1024 * 1024, int(raw) * 1024 * 1024 // 8)


@dataclass
class SweepReport:
    """Counts of one pruner, reaper or sweeper run (logged as JSON by the Lambdas)."""

    threads_scanned: int = 0
    threads_deleted: int = 0
    checkpoints_deleted: int = 0
    writes_deleted: int = 0
    blobs_deleted: int = 0
    s3_objects_scanned: int = 0
    s3_objects_deleted: int = 0
    bytes_freed: int = 0
    #: Threads that kept their latest checkpoints and lost older ones (a
    #: whole-thread delete counts in ``threads_deleted`` instead).
    threads_pruned: int = 0
    #: Values a deleted checkpoint held for kept ones, moved out of it first.
    values_rehomed: int = 0
    pages: int = 0
    complete: bool = False  # reached the end of the table / bucket this run
    errors: list[str] = field(default_factory=list)

    def add_prune(self, res: Any) -> None:
        self.checkpoints_deleted += res.checkpoints_deleted
        self.writes_deleted += res.writes_deleted
        self.blobs_deleted += res.blobs_deleted
        self.s3_objects_deleted += res.s3_objects_deleted
        self.bytes_freed += res.bytes_freed
        self.values_rehomed += res.values_rehomed
        # A prune keeps at least the latest checkpoint; a delete or a reap keeps none.
        if res.checkpoints_deleted and res.checkpoints_kept:
            self.threads_pruned += 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ExpiredThread:
    """A thread whose head DynamoDB's TTL deleted, from a stream record."""

    partition_key: str
    expired_at: float  # the stream record's creation time (epoch seconds)


def expired_threads_from_stream(event: Mapping[str, Any]) -> list[ExpiredThread]:
    """TTL deletions of thread heads in a DynamoDB Streams event.

    Only ``REMOVE`` records made by the TTL service principal for a head item
    count: a user's own ``delete_thread`` also removes the head, and those
    records must not trigger anything.
    """
    out: list[ExpiredThread] = []
    for rec in event.get("Records", []) or []:
        if rec.get("eventName") != "REMOVE":
            continue
        ident = rec.get("userIdentity") or {}
        if ident.get("type") != "Service" or ident.get("principalId") != TTL_PRINCIPAL:
            continue
        keys = (rec.get("dynamodb") or {}).get("Keys") or {}
        if keys.get(schema.ATTR.SK, {}).get("S") != schema.HEAD_SK:
            continue
        pk = keys.get(schema.ATTR.PK, {}).get("S")
        if not pk:
            continue
        created = (rec.get("dynamodb") or {}).get("ApproximateCreationDateTime")
        out.append(ExpiredThread(pk, float(created) if created is not None else 0.0))
    return out


def dedupe(threads: Iterable[ExpiredThread]) -> list[ExpiredThread]:
    """One entry per thread, with the latest expiry time."""
    latest: dict[str, ExpiredThread] = {}
    for t in threads:
        if t.partition_key not in latest or t.expired_at > latest[t.partition_key].expired_at:
            latest[t.partition_key] = t
    return list(latest.values())


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
