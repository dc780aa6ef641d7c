"""Export a thread to a portable JSON Lines file, and import it into any store.

A migration and backup path: :func:`export_thread` writes every namespace's
checkpoints (parents before children), their metadata, parent links and
pending writes (task id, task path, index, run id) as JSON Lines;
:func:`import_thread` loads such a file into another table, or into the same
table under a new thread id, through the saver's public ``put`` and
``put_writes``, so placement, tenants and TTL heads are the target saver's.
The imported thread reads back exactly as the source did (``get_tuple`` and
``list``: checkpoint ids, parents, metadata, channel values and versions,
pending writes), including DeltaChannel threads, whose values live in the
ancestors' writes that the file carries.

The file holds the thread's state in **plaintext**, whatever the source's
encryption: values are decoded with the source saver's serializer and
re-encoded by the same serializer without its encryption layer
(``{"type": "msgpack", "b64": ...}``), so a store with another key, or none,
can import it. Protect the file like the data itself (``langgraph-dynamodb
export -o FILE`` creates it readable by its owner only).

Format ``langgraph-dynamodb-export/1``, one JSON object per line:

* ``{"kind": "header", "format": ..., "thread_id": ..., ...}`` first;
* ``{"kind": "checkpoint", "checkpoint_ns", "checkpoint_id",
  "parent_checkpoint_id", "checkpoint", "metadata", "channel_values",
  "same_as_parent"}``, a checkpoint before any checkpoint naming it as
  parent; a value unchanged since the parent (same version, equal value) is
  not repeated, its channel is listed in ``same_as_parent``, so the file
  grows with what the store holds rather than with checkpoints x state;
* ``{"kind": "writes", "checkpoint_ns", "checkpoint_id", "task_id",
  "task_path", "run_id", "writes": [{"idx", "channel", "value"}]}``, one per
  task, after its checkpoint;
* ``{"kind": "end", "checkpoints": N, "writes": M}`` last: a truncated file
  has none and is refused.

Why JSON Lines: a record per checkpoint or task means an import holds one
record in memory at a time (not the thread), a truncated file is detected
by its missing ``end`` line, and line tools (``head``, ``grep``, ``jq -c``)
work on it. Payloads are ``{"type", "b64"}`` pairs, the serializer's own
typed form, so JSON changes nothing (bytes, sets, datetimes, pydantic
models come back as the store would give them).

An import validates the whole file before it writes anything: structure,
order, sizes (``max_payload_size``) and that every payload decodes with the
target saver's serializer (whose allowlist applies: a file can revive no
more than a stored payload could). It refuses a target thread that already
has checkpoints or was deleted (its tombstones would hide the same
checkpoints written again), writes in file order (parents first), checks
that the latest checkpoint of every namespace reads back, and if anything
fails after the first write it deletes the partial thread (which did not
exist before) and says so: import again under a new id.

Sync savers only: the writes' task paths are read with the CLI's boto3
helpers; an async application can export and import with a
``DynamoDBSaver`` on the same table.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import tempfile
from collections.abc import Callable, Mapping
from typing import IO, Any, Final

from langgraph.checkpoint.base import writes_sort_key

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools import _inspection
from langgraph.checkpoint.dynamodb.tools._export_file import (
    FORMAT,
    ExportError,
    ExportFileError,
    ImportPlan,
    RecordReader,
    TargetExistsError,
    parse_records,
)
from langgraph.checkpoint.dynamodb.tools._portable import (
    PORTABLE_TYPES,
    OpaqueExt,
    OpaquePayload,
    PortableSerializer,
)
from langgraph.checkpoint.dynamodb.tools._replay import (
    WriteProgress,
    check_target,
    import_marker,
    mark_import,
    parents_first,
    plain_serde,
    unmark_import,
    write_records,
)

__all__ = [
    "FORMAT",
    "ExportError",
    "ExportFileError",
    "OpaqueExt",
    "OpaquePayload",
    "PortableSerializer",
    "TargetExistsError",
    "export_thread",
    "import_marker",
    "import_thread",
]

#: How far, in characters, one line may exceed its payloads' base64 size.
_RECORD_OVERHEAD: Final = 1 << 20
#: DynamoDB's item size limit (AWS's, not this library's): a value over it
#: cannot be stored without a bucket, whatever else the item holds.
_DYNAMODB_ITEM_LIMIT: Final = 400 * 1024
#: An import spools a non-seekable input (stdin) to disk past this size.
_SPOOL_MEMORY: Final = 8 << 20


def _encode(serde: Any, value: Any, where: str) -> dict[str, str]:
    try:
        type_, data = serde.dumps_typed(value)
    except Exception as exc:
        raise ExportError(f"{where}: cannot serialize: {exc}") from exc
    if type_ not in PORTABLE_TYPES:
        raise ExportError(
            f"{where}: serialized as {type_!r}, which an import could not read safely "
            f"(portable types: {', '.join(sorted(PORTABLE_TYPES))})"
        )
    return {"type": type_, "b64": base64.b64encode(bytes(data)).decode("ascii")}


# ================================================================ export


def _raw_writes(
    saver: Any, thread_id: str
) -> dict[tuple[str, str], list[tuple[tuple[str, str, int], dict[str, Any]]]]:
    """Task paths, indexes and run ids of a thread's writes, which ``get_tuple`` does not return.

    Read from the writes items' keys and plain attributes only (never their
    payloads: the values come decoded from the saver). Keyed by
    ``(namespace, checkpoint id)``, each list in ``writes_sort_key`` order,
    the order of ``CheckpointTuple.pending_writes``.
    """

    out: dict[tuple[str, str], list[tuple[tuple[str, str, int], dict[str, Any]]]] = {}
    items = _inspection.query(
        saver,
        KeyConditionExpression="#pk = :pk",
        FilterExpression="#t = :w",
        ExpressionAttributeNames={"#pk": ATTR.PK, "#t": ATTR.KIND},
        ExpressionAttributeValues={
            ":pk": {"S": saver.partition_key(thread_id)},
            ":w": {"S": schema.WRITES_ITEM},
        },
        ConsistentRead=True,
    )
    by_checkpoint: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for it in items:
        ns, kind, cid, task_id = shapes.parse_sk(it)
        if kind == schema.WRITES_ITEM and task_id is not None:
            by_checkpoint.setdefault((ns, cid), []).append(it)
    for (ns, cid), group in by_checkpoint.items():
        rows = out.setdefault((ns, cid), [])
        for it, name, idx in shapes.task_writes(group):
            tid = it.get(ATTR.TASK_ID, {}).get("S", "")  # as the saver reads it
            path = it.get(ATTR.TASK_PATH, {}).get("S", "")
            run_id = it.get(ATTR.RUN_ID, {}).get("S")
            channel = it[name]["L"][0]["S"]
            rows.append(
                (
                    writes_sort_key(path, tid, idx),
                    {"task_id": tid, "task_path": path, "run_id": run_id, "idx": idx, "channel": channel},
                )
            )
    for rows in out.values():
        rows.sort(key=lambda r: r[0])
    return out


def _same_as_parent(t: Any, parent: Any) -> set[str]:
    """Channels whose value in ``t`` is the parent's: same version, equal value."""
    if parent is None:
        return set()
    mine, theirs = t.checkpoint.get("channel_values") or {}, parent.checkpoint.get("channel_values") or {}
    versions, parent_versions = t.checkpoint["channel_versions"], parent.checkpoint["channel_versions"]
    same = set()
    for ch, value in mine.items():
        # Equality too, not only the version: the file must say exactly what was stored.
        with contextlib.suppress(Exception):
            if ch in theirs and versions.get(ch) == parent_versions.get(ch) and bool(theirs[ch] == value):
                same.add(ch)
    return same


def export_thread(saver: Any, thread_id: str, fp: IO[str]) -> dict[str, Any]:
    """Write a thread, every namespace, as ``langgraph-dynamodb-export/1`` JSON Lines.

    Values are decoded with the saver's serializer and written with the same
    serializer minus encryption: the file holds plaintext state; protect it.
    The thread should not be written to while it is exported (a change seen
    half way raises ``ExportError``; export again). The whole thread is read
    into memory first, as ``saver.list`` does.

    Args:
        saver: a sync ``DynamoDBSaver`` (its tenant, if any, is honoured).
        thread_id: the thread to export.
        fp: a text stream to write to.

    Returns:
        A summary: ``thread_id``, ``checkpoints``, ``writes`` (tasks' write
        records), ``namespaces``.

    Raises:
        ExportError: the thread has no checkpoints, changed while being
            read, or holds a value the serializer writes in a non-portable way.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb import DynamoDBSaver
        from langgraph.checkpoint.dynamodb.tools.transfer import export_thread, import_thread

        src = DynamoDBSaver(table_name="checkpoints", bucket_name="payloads")
        with open("t-1.jsonl", "w", encoding="utf-8") as fp:
            export_thread(src, "t-1", fp)
        dst = DynamoDBSaver(table_name="checkpoints-eu", bucket_name="payloads-eu")
        with open("t-1.jsonl", encoding="utf-8") as fp:
            import_thread(dst, fp)  # or thread_id="t-1-copy" into the same table
        ```
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("thread_id must be a non-empty string")
    tuples = list(saver.list({"configurable": {"thread_id": thread_id}}))
    if not tuples:
        raise ExportError(f"thread {thread_id!r} has no checkpoints in table {saver.table_name!r}")
    raw = _raw_writes(saver, thread_id)
    serde = plain_serde(saver)
    ordered = parents_first(tuples)
    by_key = {
        (t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]): t
        for t in tuples
    }

    def line(obj: Mapping[str, Any]) -> None:
        fp.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")

    line(
        {
            "kind": "header",
            "format": FORMAT,
            "thread_id": thread_id,
            "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "source": {
                "table": saver.table_name,
                "tenant_prefix": getattr(saver, "tenant_prefix", "") or None,
            },
            "plaintext": True,
        }
    )
    n_writes = 0
    for t in ordered:
        conf = t.config["configurable"]
        pid = (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        line(_checkpoint_record(serde, t, by_key.get((conf["checkpoint_ns"], pid)) if pid else None))
        tasks = _writes_records(serde, t, raw.get((conf["checkpoint_ns"], conf["checkpoint_id"]), []))
        for rec in tasks:
            line(rec)
        n_writes += len(tasks)
    line({"kind": "end", "checkpoints": len(ordered), "writes": n_writes})
    return {
        "thread_id": thread_id,
        "checkpoints": len(ordered),
        "writes": n_writes,
        "namespaces": len({t.config["configurable"]["checkpoint_ns"] for t in ordered}),
    }


def _checkpoint_record(serde: Any, t: Any, parent: Any) -> dict[str, Any]:
    """A checkpoint's line: its body, metadata and the values its parent does not already hold."""
    conf = t.config["configurable"]
    ns, cid = conf["checkpoint_ns"], conf["checkpoint_id"]
    where = f"checkpoint {cid!r} (namespace {ns!r})"
    body = {k: v for k, v in t.checkpoint.items() if k != "channel_values"}
    values = t.checkpoint.get("channel_values") or {}
    # A value unchanged since the parent is written once, in the parent: the
    # file grows with what the store holds, not with checkpoints x state.
    same = _same_as_parent(t, parent)
    return {
        "kind": "checkpoint",
        "checkpoint_ns": ns,
        "checkpoint_id": cid,
        "parent_checkpoint_id": (t.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        "checkpoint": _encode(serde, body, where),
        "metadata": _encode(serde, t.metadata, f"metadata of {where}"),
        "channel_values": {
            ch: _encode(serde, v, f"channel {ch!r} of {where}") for ch, v in values.items() if ch not in same
        },
        "same_as_parent": sorted(same),
    }


def _writes_records(
    serde: Any, t: Any, rows: list[tuple[tuple[str, str, int], dict[str, Any]]]
) -> list[dict[str, Any]]:
    """A checkpoint's writes lines, one per task; ``rows`` are its writes' keys (``_raw_writes``)."""
    conf = t.config["configurable"]
    ns, cid = conf["checkpoint_ns"], conf["checkpoint_id"]
    where = f"checkpoint {cid!r} (namespace {ns!r})"
    pending = list(t.pending_writes or [])
    if len(rows) != len(pending) or any(
        r["task_id"] != w[0] or r["channel"] != w[1] for (_, r), w in zip(rows, pending, strict=True)
    ):
        raise ExportError(
            f"the writes of {where} changed while the thread was read; export it again "
            "while nothing writes to it"
        )
    tasks: dict[str, dict[str, Any]] = {}
    for (_, r), (task_id, channel, value) in zip(rows, pending, strict=True):
        rec = tasks.setdefault(
            task_id,
            {
                "kind": "writes",
                "checkpoint_ns": ns,
                "checkpoint_id": cid,
                "task_id": task_id,
                "task_path": r["task_path"],
                "run_id": r["run_id"],
                "writes": [],
            },
        )
        rec["writes"].append(
            {
                "idx": r["idx"],
                "channel": channel,
                "value": _encode(serde, value, f"write {channel!r} of task {task_id!r} on {where}"),
            }
        )
    return list(tasks.values())


# ================================================================ import


def _seekable(fp: IO[str], stack: contextlib.ExitStack) -> IO[str]:
    """``fp`` if it can be read twice, else a spooled copy (stdin, a pipe)."""
    try:
        if fp.seekable():
            fp.tell()
            return fp
    except (OSError, ValueError, AttributeError):
        pass
    spool = stack.enter_context(
        tempfile.SpooledTemporaryFile(max_size=_SPOOL_MEMORY, mode="w+", encoding="utf-8")  # noqa: SIM115  # closed by the caller's stack
    )
    while chunk := fp.read(1 << 20):
        spool.write(chunk)
    spool.seek(0)
    return spool  # type: ignore[return-value]


def import_thread(
    saver: Any, fp: IO[str], thread_id: str | None = None, *, max_payload_size: int | None = None
) -> dict[str, Any]:
    """Load a ``langgraph-dynamodb-export/1`` file into the saver's store, as a new thread.

    Two passes over the file: the first validates everything (structure,
    order, sizes, that every payload decodes with the saver's serializer) and
    writes nothing; the second writes through ``saver.put`` and
    ``saver.put_writes``, parents first. A target thread that already has
    checkpoints is refused. If a write fails half way, the partial thread is
    deleted (it did not exist before) and ``ExportError`` says so; if that
    delete fails too, the message says to delete the thread. Until the
    import reads back, the target carries an import marker
    (:func:`import_marker`): a process killed half way leaves it, and a
    later import into that thread is refused (delete it, import under a new id).

    Args:
        saver: a sync ``DynamoDBSaver``; its serializer (and encryption),
            tenant, thresholds and TTL apply to what is written.
        fp: a text stream (a non-seekable one, such as stdin, is spooled).
        thread_id: the thread to create; default the exported thread's id.
        max_payload_size: largest payload accepted, in bytes (default the
            saver's ``max_payload_size``); a line is refused past about
            4/3 of it plus 1 MiB, before it is parsed.

    Returns:
        A summary: ``thread_id``, ``source_thread_id``, ``checkpoints``,
        ``writes`` (tasks' write records), ``namespaces``.

    Raises:
        ExportFileError: the file is malformed; nothing was written.
        TargetExistsError: the target thread has checkpoints, or an import
            marker (running or killed); nothing was written.
        ExportError: a write failed; the partial thread was removed (or the
            message says how to remove it).

    Example:
        ```python
        with open("t-1.jsonl", encoding="utf-8") as fp:
            import_thread(saver, fp, thread_id="t-1-restored")
        ```
    """
    limit = saver.max_payload_size if max_payload_size is None else max_payload_size
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"max_payload_size must be a number of bytes >= 1, got {limit!r}")
    if thread_id is not None and (not isinstance(thread_id, str) or not thread_id):
        raise ValueError("thread_id must be a non-empty string or None")
    serde = saver.serde
    max_line = (limit + 2) // 3 * 4 + _RECORD_OVERHEAD
    with contextlib.ExitStack() as stack:
        src = _seekable(fp, stack)
        start = src.tell()
        plan = ImportPlan()
        for _ in parse_records(
            RecordReader(src, max_line),
            serde,
            limit,
            plan,
            lambda ns, cid, task_id: saver.check_ids(thread_id or plan.source_thread, ns, cid, task_id),
            _value_check(saver, serde),
            max_payload_objects=saver.max_payload_objects,
        ):
            pass  # pass one: validate the whole file, write nothing
        target = thread_id or plan.source_thread
        check_target(saver, target)
        src.seek(start)
        progress = WriteProgress()
        _start_import(saver, target, plan.source_thread)
        objects = saver.max_payload_objects
        try:
            write_records(
                saver,
                target,
                parse_records(RecordReader(src, max_line), serde, limit, None, max_payload_objects=objects),
                plan,
                progress,
            )
            _verify(saver, target, plan)
            unmark_import(saver, target)
        except BaseException as exc:
            if not progress.started:
                with contextlib.suppress(Exception):
                    unmark_import(saver, target)
                raise
            failure = _undo(saver, target, progress.written, exc)
            if not isinstance(exc, Exception):  # Ctrl-C: cleaned up, still an interrupt
                raise
            raise failure from exc
    return {
        "thread_id": target,
        "source_thread_id": plan.source_thread,
        "checkpoints": plan.checkpoints,
        "writes": plan.writes,
        "namespaces": len(plan.latest),
    }


def _value_check(saver: Any, serde: Any) -> Callable[[str, Any], None]:
    """``parse_records``' value check: a value must fit where the saver can put it."""

    def check_value(where: str, value: Any) -> None:
        # Without a bucket, a value larger than a DynamoDB item can hold
        # (400 KB, stored as the saver packs it) would fail half way.
        if saver.bucket_name is None:
            try:
                size = len(saver.codec.pack(serde.dumps_typed(value)))
            except Exception as exc:
                raise ValueError(f"{where}: cannot serialize: {type(exc).__name__}: {exc}") from None
            if size > _DYNAMODB_ITEM_LIMIT:
                raise ValueError(
                    f"{where} is {size:,} bytes as stored, more than a DynamoDB item holds, and the "
                    "saver has no bucket: import into a store with an S3 bucket (--bucket)"
                )

    return check_value


def _start_import(saver: Any, target: str, source_thread: str) -> None:
    """Mark the thread partial until it reads back: an import killed half way (SIGKILL, OOM, a
    timeout) runs no cleanup, and leaves the marker behind."""
    try:
        mark_import(saver, target, source_thread)
    except TargetExistsError:
        raise
    except BaseException as exc:
        with contextlib.suppress(Exception):
            unmark_import(saver, target)  # if it landed after all
        if not isinstance(exc, Exception):
            raise
        raise ExportError(
            f"import into thread {target!r} failed at its first write ({_what(exc)}); nothing is left"
        ) from exc


def _verify(saver: Any, thread_id: str, plan: ImportPlan) -> None:
    """The latest checkpoint of every namespace reads back (cheap: one get_tuple each)."""
    for ns, cid in plan.latest.items():
        got = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
        if got is None or got.config["configurable"]["checkpoint_id"] != cid:
            raise ExportError(
                f"namespace {ns!r}: the latest checkpoint does not read back as {cid!r} after the import "
                f"(read {None if got is None else got.config['configurable']['checkpoint_id']!r}); a thread "
                f"deleted earlier under the id {thread_id!r} can hide checkpoints whose parent is not in the "
                "file: import under a new id"
            )


def _what(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _undo(saver: Any, thread_id: str, written: int, exc: BaseException) -> ExportError:
    what = _what(exc)
    try:
        saver.delete_thread(thread_id)
    except Exception as cleanup:
        return ExportError(
            f"import into thread {thread_id!r} failed after {written} write(s) ({what}); removing the partial "
            f"thread failed too ({type(cleanup).__name__}: {cleanup}): delete it "
            f"(langgraph-dynamodb delete {thread_id!r} --yes) before importing again"
        )
    if not written:  # no checkpoint landed: no lineage to bury, the id stays usable
        return ExportError(
            f"import into thread {thread_id!r} failed at its first write ({what}); nothing is left"
        )
    return ExportError(
        f"import into thread {thread_id!r} failed after {written} write(s) ({what}); "
        "the partial thread was deleted, nothing is left; import again under a new id (--thread): "
        "the deleted one keeps tombstones that would hide the same checkpoints"
    )
