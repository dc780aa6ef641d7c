"""What the store holds (``stats``): items and bytes by kind, threads, checkpoints, subgraphs, S3 objects."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import item_size
from langgraph.checkpoint.dynamodb.cli._tasks import subgraph_path
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools._inspection import (
    s3_in_scope,
    s3_objects,
    s3_root,
    scan,
    thread_items,
)


def item_kind(sk: str) -> str:
    _, kind, rest, _ = schema.parse_sk(sk)
    if kind == schema.CHECKPOINT_ITEM:
        return "checkpoint"
    if kind == schema.WRITES_ITEM:
        return "writes"
    if kind == schema.BLOB_ITEM:
        return "blob"
    if kind == schema.TOMBSTONE_ITEM:
        return "tombstone"
    if sk == schema.HEAD_SK:
        return "thread head"
    if sk == schema.LOCK_SK:
        return "lock"
    if sk == schema.IMPORT_SK:
        return "import marker"
    if rest.startswith("req" + schema.SEP):
        return "request"
    return "meta"


def collect_stats(
    saver: Any, thread_id: str | None = None, *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """What the store holds: items and bytes by kind, threads, checkpoints, S3 objects.

    Without ``thread_id`` this Scans the table and lists the bucket under
    the saver's key prefix (a tool for operators, not for request paths).

    ``namespaces`` counts the graphs whose checkpoints are stored: the root
    graph and each subgraph (:func:`subgraph_path`), once however many
    threads and runs used it; ``subgraphs`` names them, ``subgraph_runs``
    counts their runs (one checkpoint namespace each, per thread).

    Example:
        >>> collect_stats(saver)["dynamodb"]["by_kind"]["checkpoint"]["items"]  # doctest: +SKIP
        12

    ``progress`` (optional) is called with a short status text as items and
    objects are read (the CLI throttles it into a progress line).
    """
    if thread_id is None:
        items: Iterable[dict[str, Any]] = (
            it for it in scan(saver, ConsistentRead=True) if saver.thread_id_of(it[ATTR.PK]["S"]) is not None
        )
        s3_prefixes: tuple[str, ...] = (s3_root(saver),)
    else:
        items = thread_items(saver, thread_id)
        s3_prefixes = saver.s3_thread_prefixes(thread_id)
    ddb = _ItemTally()
    for it in items:
        ddb.add(it)
        if progress is not None:
            progress(f"{ddb.items:,} item(s) read")
    s3 = _object_tally(
        saver, s3_prefixes, tenant_scope=thread_id is None, items_read=ddb.items, progress=progress
    )
    return {
        "table": saver.table_name,
        "thread_id": thread_id,
        "threads": len(ddb.threads),
        "namespaces": len(ddb.paths),
        "subgraphs": sorted(p for p in ddb.paths if p),
        "subgraph_runs": len(ddb.runs),
        "checkpoints": ddb.checkpoints,
        "dynamodb": {"items": ddb.items, "bytes": ddb.bytes, "by_kind": dict(sorted(ddb.by_kind.items()))},
        "s3": s3,
    }


@dataclasses.dataclass
class _ItemTally:
    """DynamoDB items counted for :func:`collect_stats`: by kind, and the threads and graphs of their checkpoints.

    Namespaces are counted as subgraphs (root included), whatever the number
    of threads and of runs: each run of a subgraph has a namespace of its own
    (its task id), which the per-thread run count reports instead.
    """

    items: int = 0
    bytes: int = 0
    checkpoints: int = 0
    by_kind: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    threads: set[str] = dataclasses.field(default_factory=set)
    paths: set[str] = dataclasses.field(default_factory=set)
    runs: set[tuple[str, str]] = dataclasses.field(default_factory=set)

    def add(self, it: dict[str, Any]) -> None:
        kind = item_kind(it[ATTR.SK]["S"])
        size = item_size(it)
        entry = self.by_kind.setdefault(kind, {"items": 0, "bytes": 0})
        entry["items"] += 1
        entry["bytes"] += size
        self.items += 1
        self.bytes += size
        if kind == "checkpoint":
            self.checkpoints += 1
            self.threads.add(it[ATTR.PK]["S"])
            ns = shapes.parse_sk(it)[0]
            self.paths.add(subgraph_path(ns))
            if ns:
                self.runs.add((it[ATTR.PK]["S"], ns))


def _object_tally(
    saver: Any,
    s3_prefixes: tuple[str, ...],
    *,
    tenant_scope: bool,
    items_read: int,
    progress: Callable[[str], None] | None,
) -> dict[str, Any]:
    """The S3 part of :func:`collect_stats`: objects and bytes under the prefixes, by kind.

    ``tenant_scope``: a whole-store listing, which keeps only the saver's
    tenant's objects (an untenanted root lists every tenant's).
    """
    s3: dict[str, Any] = {
        "bucket": saver.bucket_name,
        "prefix": s3_prefixes[0],
        "objects": 0,
        "bytes": 0,
        "by_kind": {},
    }
    for obj in (o for prefix in s3_prefixes for o in s3_objects(saver, prefix)):
        if tenant_scope and not s3_in_scope(saver, obj["Key"]):
            continue  # another tenant's (an untenanted root lists every tenant's objects)
        kind = schema.s3_kind(obj["Key"], saver.s3_key_prefix)
        e = s3["by_kind"].setdefault(kind, {"objects": 0, "bytes": 0})
        e["objects"] += 1
        e["bytes"] += int(obj["Size"])
        s3["objects"] += 1
        s3["bytes"] += int(obj["Size"])
        if progress is not None:
            progress(f"{items_read:,} item(s), {s3['objects']:,} object(s) read")
    return s3
