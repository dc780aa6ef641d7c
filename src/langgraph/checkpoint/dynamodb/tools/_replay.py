"""Writing a thread into a ``DynamoDBSaver`` through its public API, for ``import`` and ``migrate``.

``transfer.import_thread`` (a file) and ``migrate.migrate_thread`` (another
saver) both write a thread this way: :func:`check_target` refuses a target
thread that exists or was deleted, :func:`mark_import` puts the import
marker that says the thread is partial until it reads back,
:func:`write_records` replays checkpoints (parents first) and tasks' writes
through ``put``/``put_writes``, and :func:`unmark_import` removes the marker.
"""

from __future__ import annotations

import dataclasses
import heapq
import time
from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools import _inspection
from langgraph.checkpoint.dynamodb.tools._export_file import ExportError, ImportPlan, TargetExistsError

__all__ = [
    "WriteProgress",
    "check_target",
    "import_marker",
    "mark_import",
    "parents_first",
    "plain_serde",
    "unmark_import",
    "write_records",
]


def plain_serde(saver: Any) -> Any:
    """The saver's serializer without its encryption layer (what a file holds)."""
    serde = saver.serde
    return serde.serde if isinstance(serde, EncryptedSerializer) else serde


def parents_first(tuples: list[Any]) -> list[Any]:
    """Checkpoints oldest id first, but never a child before its parent (same namespace)."""
    key = {
        id(t): (t.config["configurable"]["checkpoint_id"], t.config["configurable"]["checkpoint_ns"])
        for t in tuples
    }
    by_key = {(k[1], k[0]): t for t, k in ((t, key[id(t)]) for t in tuples)}
    children: dict[int, list[Any]] = {}
    heap: list[tuple[str, str, int]] = []
    index = {id(t): t for t in tuples}
    for t in tuples:
        cid, ns = key[id(t)]
        pid = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        parent = by_key.get((ns, pid)) if pid else None
        if parent is not None and parent is not t:
            children.setdefault(id(parent), []).append(t)
        else:
            heapq.heappush(heap, (cid, ns, id(t)))
    out: list[Any] = []
    while heap:
        _, _, ident = heapq.heappop(heap)
        t = index[ident]
        out.append(t)
        for c in children.pop(ident, []):
            heapq.heappush(heap, (*key[id(c)], id(c)))
    if len(out) != len(tuples):  # a parent cycle: no order can put parents first
        raise ExportError("the thread's parent links form a cycle; it cannot be exported in order")
    return out


@dataclasses.dataclass
class WriteProgress:
    """How far a replay got: whether a write was sent, and how many completed."""

    started: bool = False  # a write was sent (it may have landed in part)
    written: int = 0  # writes completed


def _marker_key(saver: Any, thread_id: str) -> dict[str, Any]:
    return {ATTR.PK: {"S": saver.partition_key(thread_id)}, ATTR.SK: {"S": schema.IMPORT_SK}}


def mark_import(saver: Any, thread_id: str, source_thread: str) -> None:
    """Put the thread's import marker; refuse if one is there (another import, or a killed one)."""
    try:
        _inspection.ddb_client(saver).put_item(
            TableName=saver.table_name,
            Item={
                **_marker_key(saver, thread_id),
                ATTR.KIND: {"S": schema.META_ITEM},
                ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
                ATTR.THREAD_ID: {"S": thread_id},
                ATTR.CREATED: {"N": str(int(time.time()))},
                ATTR.IMPORT_SOURCE: {"S": source_thread},
            },
            ConditionExpression="attribute_not_exists(#pk)",
            ExpressionAttributeNames={"#pk": ATTR.PK},
        )
    except ClientError as exc:
        if error_code(exc) != "ConditionalCheckFailedException":
            raise
        raise TargetExistsError(_unfinished(saver, thread_id)) from None


def unmark_import(saver: Any, thread_id: str) -> None:
    # BatchWriteItem, not DeleteItem: the savers' grants have no DeleteItem.
    requests = {saver.table_name: [{"DeleteRequest": {"Key": _marker_key(saver, thread_id)}}]}
    for _ in range(8):
        requests = (
            _inspection.ddb_client(saver).batch_write_item(RequestItems=requests).get("UnprocessedItems")
            or {}
        )
        if not requests:
            return
        time.sleep(0.05)
    raise ExportError(
        f"could not remove the import marker of thread {thread_id!r} (throttled); delete it and retry"
    )


def import_marker(saver: Any, thread_id: str) -> dict[str, Any] | None:
    """The import marker of a thread, ``None`` if none: an import is writing it, or was killed doing so.

    ``{"source_thread_id", "started_at"}`` (epoch seconds). Until the
    marker is gone the thread is partial, however complete it looks.
    """
    got = _inspection.ddb_client(saver).get_item(
        TableName=saver.table_name, Key=_marker_key(saver, thread_id), ConsistentRead=True
    )
    it = got.get("Item")
    if it is None:
        return None
    return {
        "source_thread_id": it.get(ATTR.IMPORT_SOURCE, {}).get("S"),
        "started_at": shapes.whole_number(it.get(ATTR.CREATED)),
    }


def _unfinished(saver: Any, thread_id: str) -> str:
    return (
        f"thread {thread_id!r} in table {saver.table_name!r} carries the marker of an import that is "
        "running or did not finish (killed half way): whatever it holds is partial. If no import is "
        f"running, delete it (langgraph-dynamodb delete {thread_id!r} --yes) and import again under a "
        "new id (--thread); nothing was written"
    )


def check_target(saver: Any, thread_id: str) -> None:
    """Refuse a thread that has checkpoints, or tombstones (a thread deleted under this id).

    Keys only (reading a value could need what this saver lacks). A deleted
    thread's tombstones hide its lineages for good (a late write must never
    bring them back), and the same checkpoints written again are exactly
    such writes: they would be stored and never read.
    """

    sks = [it[ATTR.SK]["S"] for it in _inspection.thread_items(saver, thread_id, projection=True)]
    if schema.IMPORT_SK in sks:
        raise TargetExistsError(_unfinished(saver, thread_id))
    kinds = {schema.parse_sk(sk)[1] for sk in sks}
    if schema.CHECKPOINT_ITEM in kinds:
        raise TargetExistsError(
            f"thread {thread_id!r} already has checkpoints in table {saver.table_name!r}; import under a "
            "new id (--thread) or delete it first (an import never merges two histories); nothing was written"
        )
    if schema.TOMBSTONE_ITEM in kinds:
        raise TargetExistsError(
            f"thread {thread_id!r} was deleted in table {saver.table_name!r}, and its tombstones hide "
            "the checkpoints it had if they are written again; import under a new id (--thread); "
            "nothing was written"
        )


def write_records(
    saver: Any,
    thread_id: str,
    records: Iterable[tuple[str, dict[str, Any]]],
    plan: ImportPlan,
    progress: WriteProgress,
) -> None:
    """Replay validated records through the public API, counting into ``progress``.

    ``new_versions`` names the channels whose version differs from the
    parent's, as LangGraph passes them: an unchanged large value is then a
    reference to where the parent put it, not a copy per checkpoint.
    """
    versions: dict[tuple[str, str], dict[str, Any]] = {}
    # Values children take from their parent (``same_as_parent``), held only
    # until the last such child is written: a chain holds one checkpoint's.
    lent: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, rec in records:
        progress.started = True
        ns, cid = rec["ns"], rec["id"]
        base = {"thread_id": thread_id, "checkpoint_ns": ns}
        if kind == "checkpoint":
            cp = rec["checkpoint"]
            if rec["same_as_parent"]:
                lender = lent[(ns, rec["parent"])]
                cp["channel_values"] = {
                    **{ch: lender[ch] for ch in rec["same_as_parent"]},
                    **cp["channel_values"],
                }
                left = plan.lenders[(ns, rec["parent"])] = plan.lenders[(ns, rec["parent"])] - 1
                if not left:
                    del lent[(ns, rec["parent"])]
            if plan.lenders.get((ns, cid)):
                lent[(ns, cid)] = cp["channel_values"]
            parent = versions.get((ns, rec["parent"])) if rec["parent"] else None
            new = {ch: v for ch, v in cp["channel_versions"].items() if parent is None or parent.get(ch) != v}
            conf: dict[str, Any] = {**base}
            if rec["parent"]:
                conf["checkpoint_id"] = rec["parent"]
            parents = rec["metadata"].get("parents")
            if ns and isinstance(parents, dict):
                # LangGraph's map of enclosing graphs' checkpoints: the
                # saver derives a subgraph checkpoint's lineage from it.
                conf["checkpoint_map"] = {**parents, ns: cid}
            saver.put({"configurable": conf}, cp, rec["metadata"], new)
            versions[(ns, cid)] = dict(cp["channel_versions"])
        else:
            config: dict[str, Any] = {"configurable": {**base, "checkpoint_id": cid}}
            if rec["run_id"]:
                config["metadata"] = {"run_id": rec["run_id"]}
            saver.put_writes(config, rec["writes"], rec["task_id"], rec["task_path"])
        progress.written += 1
