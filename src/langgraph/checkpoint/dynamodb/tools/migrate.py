"""Move threads from any LangGraph checkpointer (SQLite, Postgres, in-memory...) into a ``DynamoDBSaver``.

The source is read through ``BaseCheckpointSaver``'s public API only
(``list`` and ``get_tuple``); the target is written through its public
``put`` and ``put_writes``, the way :mod:`~langgraph.checkpoint.dynamodb.tools.transfer`
imports a file (its writer and import marker are reused): checkpoint ids,
parent ids, metadata, channel values and versions, every namespace
(subgraphs) and the pending writes of every checkpoint, in the source's
order, so that ``get_state``, ``get_state_history``, time travel and a
``Command(resume=...)`` behave on the target as they did on the source.

``CheckpointTuple.pending_writes`` carries ``(task_id, channel, value)``,
not the task path nor the write's index. Where the source keeps them
(``InMemorySaver``, ``SqliteSaver``, ``PostgresSaver``, a
:class:`CheckpointAwsSource`) they are read from its storage, keys only, so the writes land under the same keys and in the same order;
elsewhere a write gets an empty task path, and its index is rebuilt from
its position in the task (which is how LangGraph wrote it).

Tables of ``langgraph-checkpoint-aws``'s ``DynamoDBSaver`` are read by
:class:`CheckpointAwsSource` (boto3 only, that package is not needed), which
translates what LangGraph's savers do differently: integer channel versions
renumbered per branch, writes in ``writes_sort_key`` order, gzip and S3
payloads (see ``_migrate_aws``).

Resumable and idempotent: a thread is compared with the target before
anything is written. Already complete, it is skipped; partly written (a
migration killed or failed half way, which leaves the target's import
marker on it), only what is missing is written; holding anything the
source does not have, it is refused and nothing is written. Every thread
written is verified afterwards: both sides' ``list`` and the latest
``get_tuple`` of every namespace must agree.

The source is read as hostile data: inside :func:`strict_source`, whatever
serializer it was built with (LangGraph's savers default to a permissive
one), unless ``allow_unsafe_source_serde=True`` says otherwise by name.

Example:
    ```python
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from langgraph.checkpoint.dynamodb.tools.migrate import migrate_threads
    from langgraph.checkpoint.dynamodb.serde import StateTypesSerializer

    conn = sqlite3.connect("checkpoints.sqlite", check_same_thread=False)
    source = SqliteSaver(conn, serde=StateTypesSerializer())  # strict (migrate makes any serde so)
    target = DynamoDBSaver(table_name="checkpoints", bucket_name="payloads")
    summary = migrate_threads(source, target)
    print(summary["migrated"], summary["skipped"], summary["verified"])
    ```
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, BaseCheckpointSaver, CheckpointTuple, writes_sort_key

from langgraph.checkpoint.dynamodb.serde import RevivalError, UnsafeSerializerError, strict_serde
from langgraph.checkpoint.dynamodb.tools._export_file import (
    ExportError,
    ImportPlan,
    TargetExistsError,
    put_writes_order,
)
from langgraph.checkpoint.dynamodb.tools._migrate_aws import (
    CheckpointAwsSource,
    CheckpointAwsSourceError,
    SourceItemError,
)
from langgraph.checkpoint.dynamodb.tools._migrate_keys import thread_ids, write_keys
from langgraph.checkpoint.dynamodb.tools._migrate_sqlite import SqliteSourceError, guard_sqlite
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
    "CheckpointAwsSource",
    "CheckpointAwsSourceError",
    "MalformedSourceError",
    "MigrationConflictError",
    "MigrationError",
    "SourceItemError",
    "SqliteSourceError",
    "guard_sqlite",
    "migrate_thread",
    "migrate_threads",
    "strict_source",
]

#: A thread's key in both stores: (namespace, checkpoint id).
_Key = tuple[str, str]
#: One write as stored: (task id, channel, value, task path, index).
_Row = tuple[str, str, Any, str, int]


class MigrationError(ExportError):
    """A thread could not be migrated; the message says what the target holds now."""


class MigrationConflictError(MigrationError, TargetExistsError):
    """The target thread holds checkpoints or writes the source thread does not: nothing was written."""

    #: What differs (a checkpoint, a channel, a task's writes), without the rest of the message.
    what: str = ""


class MalformedSourceError(MigrationError):
    """The source thread holds an item that cannot be read as a checkpoint or write: the thread is refused.

    An attribute missing or of another type, a write index that is not an
    integer, a boolean channel version, a payload naming a type that is
    refused (:class:`~langgraph.checkpoint.dynamodb.serde.RefusedTypeError`)...
    Nothing is written to the target thread; :func:`migrate_threads` reports
    it under ``refused`` and goes on with the other threads. ``reason`` names
    the item and the attribute (a :class:`SourceItemError`'s message, for a
    :class:`CheckpointAwsSource`).
    """

    def __init__(self, thread_id: str, reason: str) -> None:
        self.thread_id, self.reason = thread_id, reason
        super().__init__(f"source thread {thread_id!r} refused: {reason}; nothing was written to the target")


#: What a source's malformed data raises while it is read: our typed refusals, a decoder's
#: errors, and what a saver's own parsing of a bad row raises. Never a connection error.
_SOURCE_DATA_ERRORS: Final = (SourceItemError, RevivalError, ValueError, KeyError, TypeError)


def _from_source(thread_id: str, read: Callable[[], Any]) -> Any:
    """``read()``, a read of the source; its data errors as this thread's :class:`MalformedSourceError`."""
    try:
        return read()
    except MigrationError:
        raise
    except _SOURCE_DATA_ERRORS as exc:
        typed = isinstance(exc, SourceItemError | RevivalError)
        raise MalformedSourceError(thread_id, str(exc) if typed else f"{type(exc).__name__}: {exc}") from exc


def _read_source(source: Any, thread_id: str) -> list[CheckpointTuple]:
    """The source thread's checkpoints, each checked to have the shape the migration reads."""

    def read() -> list[CheckpointTuple]:
        out = list(source.list(_cfg(thread_id)))
        for t in out:
            ns, cid = _key(t)
            if not isinstance(ns, str) or not isinstance(cid, str) or not cid:
                raise MalformedSourceError(thread_id, f"a checkpoint has namespace {ns!r} and id {cid!r}")
            if not isinstance(t.checkpoint, dict) or not isinstance(t.metadata or {}, dict):
                raise MalformedSourceError(thread_id, f"checkpoint {cid!r} is not a checkpoint")
            if t.checkpoint.get("id") != cid:  # its row's key and its payload disagree: refused, not guessed
                raise MalformedSourceError(
                    thread_id,
                    f"checkpoint {cid!r} holds the payload of checkpoint {t.checkpoint.get('id')!r}",
                )
            for w in t.pending_writes or []:
                if len(w) != 3 or not isinstance(w[0], str) or not isinstance(w[1], str):
                    raise MalformedSourceError(thread_id, f"checkpoint {cid!r} has a pending write {w[:2]!r}")
        return out

    return _from_source(thread_id, read)  # type: ignore[no-any-return]


@dataclasses.dataclass
class _Diff:
    """What the target lacks of the source thread, in write order."""

    checkpoints: list[CheckpointTuple] = dataclasses.field(default_factory=list)
    #: (namespace, checkpoint id, task id) -> that task's rows, for tasks the target lacks.
    writes: dict[tuple[str, str, str], list[_Row]] = dataclasses.field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.checkpoints and not self.writes


def _cfg(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _key(t: CheckpointTuple) -> _Key:
    conf = t.config["configurable"]
    return conf.get("checkpoint_ns", ""), conf["checkpoint_id"]


def _parent_id(t: CheckpointTuple) -> str | None:
    return (t.parent_config or {}).get("configurable", {}).get("checkpoint_id")


def _same(a: Any, b: Any, serde: Any) -> bool:
    """Equal values; else equal as serialized (exceptions, say, compare by identity)."""
    with contextlib.suppress(Exception):
        if bool(a == b):
            return True
    try:
        return bool(serde.dumps_typed(a) == serde.dumps_typed(b))
    except Exception:
        return False


# ============================================================ decoding the source strictly

#: What LangGraph's savers decode with: ``serde``; ``jsonplus_serde``, SqliteSaver's own permissive
#: ``JsonPlusSerializer`` whatever ``serde`` is (unused by the installed release; a later one may).
_SERDE_ATTRS: Final = ("serde", "jsonplus_serde")


@contextlib.contextmanager
def strict_source(source: Any, *, allow_unsafe_source_serde: bool = False) -> Iterator[Any]:
    """Decode ``source`` with a strict serializer for the duration; restore its own after.

    ``SqliteSaver``, ``PostgresSaver`` and ``InMemorySaver`` default to
    LangGraph's permissive ``JsonPlusSerializer`` (unless
    ``LANGGRAPH_STRICT_MSGPACK`` is set), which imports and calls whatever
    ``(module, name)`` a stored value names: whoever could write to the old
    store could run code on the migrating machine, which usually holds the
    credentials of both stores. Inside this block each of the source's
    serializers (``serde``, and ``jsonplus_serde`` where the saver has one)
    is replaced by ``serde.strict_serde(...)`` of it: a permissive
    ``JsonPlusSerializer`` (also inside an ``EncryptedSerializer``) by
    ``StateTypesSerializer``, which reads the same bytes and revives the
    application's data classes but calls nothing else; a strict or custom
    serializer is kept. The attributes are set back when the block ends,
    however it ends. The source must not be used by anything else meanwhile
    (an application reading through it would decode strictly too).
    :func:`migrate_thread` and :func:`migrate_threads` run inside it.

    Args:
        source: the saver to read.
        allow_unsafe_source_serde: **dangerous**: keep a permissive
            serializer as it is, so a stored value can run code here. Only for
            a source nobody else ever wrote to. A
            :class:`CheckpointAwsSource` built with ``allow_unsafe_serde=True``
            counts as this opt-in.

    Yields:
        ``source`` itself.

    Raises:
        UnsafeSerializerError: a serializer of the source cannot be made
            strict without changing what it does (``pickle_fallback=True``,
            ``allowed_json_modules=True``, a permissive subclass of
            ``JsonPlusSerializer``); nothing was read.
    """
    opted_in = allow_unsafe_source_serde is True or (
        isinstance(source, CheckpointAwsSource) and source.allow_unsafe_serde
    )
    swaps: dict[str, tuple[Any, Any]] = {}
    for attr in () if opted_in else _SERDE_ATTRS:
        current = getattr(source, attr, None)
        if current is None:
            continue
        try:
            strict = strict_serde(current)
        except UnsafeSerializerError as exc:
            raise UnsafeSerializerError(
                f"the migration source {type(source).__name__}'s {attr} is a {type(current).__name__} that "
                f"cannot be made strict: {exc} For a migration, pass serde=StateTypesSerializer() (or a strict "
                "JsonPlusSerializer(allowed_msgpack_modules=[...])) to the source saver; to decode with it "
                "anyway, pass allow_unsafe_source_serde=True (whoever wrote to the source can then run code "
                "here); nothing was read"
            ) from None
        if strict is not current:
            swaps[attr] = (current, strict)
    for attr, (_, strict) in swaps.items():
        setattr(source, attr, strict)
    try:
        yield source
    finally:
        for attr, (current, _) in swaps.items():
            setattr(source, attr, current)


# ============================================================ the source's writes


def _stored_write_keys(
    source: Any, thread_id: str, ns: str, cid: str
) -> list[tuple[str, str, str, int]] | None:
    """``(task_id, channel, task_path, idx)`` of a checkpoint's writes where the source stores them, sorted.

    Keys only, never a value: the values come from ``get_tuple``. ``None``
    for a saver whose storage is not known here.
    """
    if isinstance(source, CheckpointAwsSource):
        rows = source.stored_write_keys(thread_id, ns, cid)
    else:
        found = write_keys(source, thread_id, ns, cid)
        if found is None:
            return None
        rows = found
    rows.sort(key=lambda r: writes_sort_key(r[2], r[0], r[3]))
    return rows


def _rows(source: Any, thread_id: str, t: CheckpointTuple) -> list[_Row]:
    """The checkpoint's pending writes with task path and index, in the source's order."""
    pending = list(t.pending_writes or [])
    ns, cid = _key(t)
    keys = (
        _from_source(thread_id, lambda: _stored_write_keys(source, thread_id, ns, cid)) if pending else None
    )
    if (
        keys is not None
        and len(keys) == len(pending)
        and all(k[0] == w[0] and k[1] == w[1] for k, w in zip(keys, pending, strict=True))
    ):
        return [(w[0], w[1], w[2], k[2], k[3]) for k, w in zip(keys, pending, strict=True)]
    # Not known: a task's regular writes were one put_writes call, in this order.
    position: dict[str, int] = {}
    out: list[_Row] = []
    for task_id, channel, value in pending:
        idx = WRITES_IDX_MAP.get(channel)
        if idx is None:
            idx = position.get(task_id, 0)
            position[task_id] = idx + 1
        out.append((task_id, channel, value, "", idx))
    return out


def _by_task(rows: Iterable[_Row]) -> dict[str, list[_Row]]:
    out: dict[str, list[_Row]] = {}
    for r in rows:
        out.setdefault(r[0], []).append(r)
    return out


# ============================================================ comparing


def _conflict(thread_id: str, target: Any, what: str) -> MigrationConflictError:
    """Raised before any write: the message says nothing was written (``.what`` is the difference)."""
    err = MigrationConflictError(
        f"target thread {thread_id!r} in table {target.table_name!r} already has different checkpoints "
        f"({what}); migrate it under another id (target_thread_id) or delete it first; "
        "nothing was written"
    )
    err.what = what
    return err


def _compare_checkpoint(s: CheckpointTuple, t: CheckpointTuple, serde: Any) -> str | None:
    """What differs between two tuples of one checkpoint, their writes aside; ``None``: nothing."""
    if _parent_id(s) != _parent_id(t):
        return f"parent {_parent_id(t)!r}, the source's is {_parent_id(s)!r}"
    if not _same(s.metadata, t.metadata, serde):
        return "metadata"
    sc, tc = s.checkpoint, t.checkpoint
    for field in ("id", "ts", "channel_versions", "versions_seen"):
        if not _same(sc.get(field), tc.get(field), serde):
            return field
    sv, tv = sc.get("channel_values") or {}, tc.get("channel_values") or {}
    if set(sv) != set(tv):
        return f"channels {sorted(set(sv) ^ set(tv))}"
    for ch, value in sv.items():
        if not _same(value, tv[ch], serde):
            return f"channel {ch!r}"
    return None


def _same_writes(a: Sequence[Any], b: Sequence[Any], serde: Any) -> bool:
    return len(a) == len(b) and all(
        x[0] == y[0] and x[1] == y[1] and _same(x[2], y[2], serde) for x, y in zip(a, b, strict=True)
    )


def _subsequence(part: Sequence[Any], whole: Sequence[Any], serde: Any) -> bool:
    """``part``'s writes all in ``whole``, in the same order."""
    rest = iter(whole)
    return all(any(_same_writes([x], [y], serde) for y in rest) for x in part)


def _diff(
    source: Any,
    thread_id: str,
    src: list[CheckpointTuple],
    dst: list[CheckpointTuple],
    target: Any,
    name: str,
) -> _Diff:
    """What the target lacks; raise if it holds anything the source does not."""
    serde = plain_serde(target)
    theirs = {_key(t): t for t in dst}
    extra = set(theirs) - {_key(t) for t in src}
    if extra:
        ns, cid = min(extra)
        raise _conflict(name, target, f"checkpoint {cid!r} in namespace {ns!r} is not in the source")
    out = _Diff()
    for s in parents_first(src):
        ns, cid = _key(s)
        t = theirs.get((ns, cid))
        if t is not None:
            what = _compare_checkpoint(s, t, serde)
            if what is not None:
                raise _conflict(name, target, f"checkpoint {cid!r} in namespace {ns!r}: {what} differs")
        else:
            out.checkpoints.append(s)
        have = _by_task(t.pending_writes or []) if t is not None else {}  # type: ignore[arg-type]
        want = _by_task(_rows(source, thread_id, s))
        for task_id, rows in want.items():
            got = have.pop(task_id, [])
            whole = [r[:3] for r in rows]
            if _same_writes(whole, got, serde):
                continue
            if not _subsequence(got, whole, serde):
                raise _conflict(name, target, f"the writes of task {task_id!r} on checkpoint {cid!r} differ")
            # Missing, or some of them (a task writes in several calls: an interrupt, then its
            # resume and its result): the whole task again; put_writes keeps what is stored.
            out.writes[(ns, cid, task_id)] = rows
        if have:
            raise _conflict(
                name, target, f"checkpoint {cid!r} has writes of tasks {sorted(have)} the source lacks"
            )
    return out


def _verify(source: Any, thread_id: str, target: Any, name: str) -> None:
    """Both sides' ``list`` and every namespace's latest ``get_tuple`` agree."""
    try:
        _verify_both(source, thread_id, target, name)
    except MalformedSourceError as exc:  # it read well before the writes: it changed since
        raise MigrationError(
            f"verification of thread {name!r} failed: the source re-read as malformed ({exc.reason}); "
            f"{_PARTIAL}"
        ) from exc
    except MigrationConflictError as exc:  # what was written differs from what the source reads now
        raise MigrationError(f"verification of thread {name!r} failed: {exc.what}; {_PARTIAL}") from None


#: What a failed verification leaves (the import marker stays until one succeeds).
_PARTIAL: Final = (
    "what was written stays in the target thread, which is partial and marked so (its import marker "
    "stays): run the migration again to complete it, or delete the target thread"
)


def _verify_both(source: Any, thread_id: str, target: Any, name: str) -> None:
    src = _read_source(source, thread_id)
    dst = list(target.list(_cfg(name)))
    left = _diff(source, thread_id, src, dst, target, name)
    if not left.empty:
        raise MigrationError(
            f"verification of thread {name!r} failed: {len(left.checkpoints)} checkpoint(s) and "
            f"{len(left.writes)} task write record(s) do not read back; {_PARTIAL}"
        )
    serde = plain_serde(target)
    for ns in sorted({_key(t)[0] for t in src}):
        conf = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        a = _from_source(thread_id, functools.partial(source.get_tuple, conf))
        b = target.get_tuple({"configurable": {"thread_id": name, "checkpoint_ns": ns}})
        if a is None or b is None or _key(a) != _key(b) or _compare_checkpoint(a, b, serde):
            raise MigrationError(
                f"verification of thread {name!r} failed: namespace {ns!r}'s latest checkpoint; {_PARTIAL}"
            )
        if not _same_writes(list(a.pending_writes or []), list(b.pending_writes or []), serde):
            raise MigrationError(
                f"verification of thread {name!r} failed: pending writes of namespace {ns!r}'s latest "
                f"checkpoint; {_PARTIAL}"
            )


# ============================================================ writing


def _records(thread_id: str, diff: _Diff) -> Iterator[tuple[str, dict[str, Any]]]:
    """The diff as transfer's writer takes it: each checkpoint, then its missing tasks' writes."""
    tasks: dict[_Key, list[tuple[str, list[_Row]]]] = {}
    for (ns, cid, task_id), rows in diff.writes.items():
        tasks.setdefault((ns, cid), []).append((task_id, rows))
    for t in diff.checkpoints:
        ns, cid = _key(t)
        yield (
            "checkpoint",
            {
                "ns": ns,
                "id": cid,
                "parent": _parent_id(t),
                "checkpoint": dict(t.checkpoint),
                "metadata": t.metadata,
                "same_as_parent": [],
            },
        )
        yield from _write_records(thread_id, ns, cid, tasks.pop((ns, cid), []))
    for (ns, cid), left in tasks.items():  # writes of checkpoints the target already has
        yield from _write_records(thread_id, ns, cid, left)


def _write_records(
    thread_id: str, ns: str, cid: str, tasks: list[tuple[str, list[_Row]]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    for task_id, rows in tasks:
        calls = put_writes_order([(r[4], r[1], r[2]) for r in rows])
        if calls is None:
            raise MigrationError(
                f"thread {thread_id!r}: the writes of task {task_id!r} on checkpoint {cid!r} (namespace "
                f"{ns!r}) cannot be stored by put_writes: channels {[r[1] for r in rows]}, indexes "
                f"{[r[4] for r in rows]}"
            )
        yield (
            "writes",
            {
                "ns": ns,
                "id": cid,
                "task_id": task_id,
                "task_path": rows[0][3],
                "run_id": None,
                "writes": calls,
            },
        )


def _start(target: Any, name: str, thread_id: str, resuming: bool) -> None:
    """Put the target's import marker (the thread is partial until verified); keep our own."""
    if resuming:
        return
    mark_import(target, name, thread_id)


def _summary(thread_id: str, name: str, src: list[CheckpointTuple], **kw: Any) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "target_thread_id": name,
        "checkpoints": len(src),
        "writes": sum(len({w[0] for w in t.pending_writes or []}) for t in src),
        "namespaces": len({_key(t)[0] for t in src}),
        **kw,
    }


def migrate_thread(
    source: BaseCheckpointSaver[Any],
    target: Any,
    thread_id: str,
    *,
    target_thread_id: str | None = None,
    dry_run: bool = False,
    allow_unsafe_source_serde: bool = False,
) -> dict[str, Any]:
    """Copy one thread, every namespace, from any LangGraph saver into a ``DynamoDBSaver``.

    The target thread is compared with the source first. Complete already:
    nothing is written (``status`` ``"skipped"``). Empty: it is written
    whole (``"migrated"``). Partly written by an earlier migration that was
    killed or failed (it carries the import marker): the rest is written
    (``"resumed"``). Holding anything else: refused, nothing written. A
    thread written is then verified (both sides' ``list`` and latest
    ``get_tuple`` per namespace) and its marker removed. Nothing should
    write to either thread meanwhile.

    Args:
        source: any sync ``BaseCheckpointSaver`` (``InMemorySaver``,
            ``SqliteSaver``, ``PostgresSaver``, another ``DynamoDBSaver``...).
        target: a sync ``DynamoDBSaver``; its serializer (and encryption),
            tenant, thresholds and TTL apply to what is written.
        thread_id: the source thread.
        target_thread_id: the thread to write; default ``thread_id``.
        dry_run: compare and report, write nothing (``status``
            ``"would_migrate"`` / ``"would_resume"`` / ``"skipped"``).
        allow_unsafe_source_serde: **dangerous**: decode the source with its
            own serializer even if it is permissive (LangGraph's default
            ``JsonPlusSerializer`` is), so a stored value can run code on
            this machine. By default the source is read inside
            :func:`strict_source`.

    Returns:
        ``thread_id``, ``target_thread_id``, ``status``, ``checkpoints``,
        ``writes`` (the source's task write records), ``namespaces``,
        ``written_checkpoints``, ``written_writes``, ``verified``.

    Raises:
        UnsafeSerializerError: the source's serializer cannot be made strict
            (see :func:`strict_source`); nothing was read.
        MigrationConflictError: the target thread has other checkpoints or
            writes, carries another import's marker, or was deleted (its
            tombstones would hide the same checkpoints); nothing was written.
        MalformedSourceError: an item of the source thread cannot be read
            (the message names it and the attribute); nothing was written.
        MigrationError: the source thread has no checkpoints, a write
            failed (the target thread is partial and marked: run again to
            complete it), or the verification failed.

    Example:
        ```python
        from langgraph.checkpoint.memory import InMemorySaver

        from langgraph.checkpoint.dynamodb import DynamoDBSaver
        from langgraph.checkpoint.dynamodb.tools.migrate import migrate_thread

        memory = InMemorySaver()  # ... a graph ran on it with thread_id "t-1"
        saver = DynamoDBSaver(table_name="checkpoints", bucket_name="payloads")
        result = migrate_thread(memory, saver, "t-1")
        assert result["verified"]
        ```
    """
    with strict_source(source, allow_unsafe_source_serde=allow_unsafe_source_serde):
        return _migrate_thread(source, target, thread_id, target_thread_id, dry_run)


def _migrate_thread(
    source: Any, target: Any, thread_id: str, target_thread_id: str | None, dry_run: bool
) -> dict[str, Any]:
    """:func:`migrate_thread` on a source that decodes strictly already."""
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("thread_id must be a non-empty string")
    name = thread_id if target_thread_id is None else target_thread_id
    if not isinstance(name, str) or not name:
        raise ValueError("target_thread_id must be a non-empty string or None")
    src = _read_source(source, thread_id)
    if not src:
        raise MigrationError(f"source thread {thread_id!r} has no checkpoints")
    marker = import_marker(target, name)
    if marker is not None and marker.get("source_thread_id") != thread_id:
        raise MigrationConflictError(
            f"target thread {name!r} in table {target.table_name!r} carries the marker of an import of "
            f"thread {marker.get('source_thread_id')!r} that is running or did not finish; nothing was written"
        )
    dst = list(target.list(_cfg(name)))
    if not dst and marker is None:
        try:
            check_target(target, name)  # a deleted thread's tombstones would hide the same checkpoints
        except TargetExistsError as exc:
            raise MigrationConflictError(str(exc)) from None
    diff = _diff(source, thread_id, src, dst, target, name)
    resuming = marker is not None
    if diff.empty and not resuming:
        return _summary(
            thread_id, name, src, status="skipped", written_checkpoints=0, written_writes=0, verified=True
        )
    if dry_run:
        status = "would_resume" if resuming or dst else "would_migrate"
        return _summary(
            thread_id,
            name,
            src,
            status=status,
            written_checkpoints=len(diff.checkpoints),
            written_writes=len(diff.writes),
            verified=False,
        )
    _start(target, name, thread_id, resuming)
    progress = WriteProgress()
    try:
        write_records(target, name, _records(thread_id, diff), ImportPlan(source_thread=thread_id), progress)
    except Exception as exc:
        raise MigrationError(
            f"migration of thread {thread_id!r} into {name!r} stopped after {progress.written} write(s) "
            f"({type(exc).__name__}: {exc}); the target thread is partial and marked so: run the migration "
            "again to complete it"
        ) from exc
    _verify(source, thread_id, target, name)
    unmark_import(target, name)
    return _summary(
        thread_id,
        name,
        src,
        status="resumed" if resuming or dst else "migrated",
        written_checkpoints=len(diff.checkpoints),
        written_writes=len(diff.writes),
        verified=True,
    )


def _thread_ids(source: BaseCheckpointSaver[Any]) -> list[str]:
    """Every thread id of the source, in the order its ``list(None)`` first shows it."""
    if isinstance(source, CheckpointAwsSource):
        return source.list_thread_ids()  # its keys, not every checkpoint decoded
    known = thread_ids(source)  # LangGraph's own savers: their keys too (a hostile item refuses its thread)
    if known is not None:
        return known
    seen: dict[str, None] = {}
    for t in source.list(None):
        seen.setdefault(str(t.config["configurable"]["thread_id"]), None)
    return list(seen)


def migrate_threads(
    source: BaseCheckpointSaver[Any],
    target: Any,
    thread_ids: Iterable[str] | None = None,
    *,
    dry_run: bool = False,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    allow_unsafe_source_serde: bool = False,
) -> dict[str, Any]:
    """Migrate many threads (default: all of the source's) with :func:`migrate_thread`, same ids.

    A thread the target refuses (``MigrationConflictError``), or whose source
    items are malformed (``MalformedSourceError``), is reported in
    ``refused`` and the others go on; any other error stops the run (what
    was written stays, marked: run again to resume). Run again after a
    kill: complete threads are skipped, the partial one is completed.

    Args:
        source: any sync ``BaseCheckpointSaver``, or a :class:`CheckpointAwsSource`.
        target: a sync ``DynamoDBSaver``.
        thread_ids: the threads to migrate; ``None``: every thread
            ``source.list(None)`` shows (a ``CheckpointAwsSource``: its
            ``list_thread_ids()``; LangGraph's own savers: their keys).
        dry_run: compare and report, write nothing.
        progress: called after each thread as ``progress(done, total, result)``.
        allow_unsafe_source_serde: **dangerous**: as for :func:`migrate_thread`;
            by default the whole run reads the source inside :func:`strict_source`.

    Returns:
        ``threads``, ``migrated``, ``resumed``, ``skipped``, ``refused``
        (``[{"thread_id", "error"}]``), ``checkpoints`` and ``writes``
        (written, or to write in a dry run), ``verified`` (threads whose
        both sides were found equal), ``orphans`` (items of a
        :class:`CheckpointAwsSource` left out: their payload never landed),
        ``dry_run``, ``results`` (each
        thread's :func:`migrate_thread` result).

    Example:
        ```python
        summary = migrate_threads(source, saver, dry_run=True)
        print(f"{summary['threads']} threads, {summary['checkpoints']} checkpoints to write")
        summary = migrate_threads(source, saver)
        assert not summary["refused"] and summary["verified"] == summary["threads"]
        ```
    """
    with strict_source(source, allow_unsafe_source_serde=allow_unsafe_source_serde):
        ids = _thread_ids(source) if thread_ids is None else list(dict.fromkeys(thread_ids))
        results: list[dict[str, Any]] = []
        refused: list[dict[str, str]] = []
        for n, tid in enumerate(ids, 1):
            try:
                result = _migrate_thread(source, target, tid, None, dry_run)
            except (MigrationConflictError, MalformedSourceError) as exc:
                refused.append({"thread_id": tid, "error": str(exc)})
                result = {"thread_id": tid, "status": "refused", "error": str(exc)}
            results.append(result)
            if progress is not None:
                progress(n, len(ids), result)
    done = [r for r in results if r["status"] != "refused"]

    def count(*statuses: str) -> int:
        return sum(r["status"] in statuses for r in done)

    return {
        "threads": len(ids),
        "migrated": count("migrated", "would_migrate"),
        "resumed": count("resumed", "would_resume"),
        "skipped": count("skipped"),
        "refused": refused,
        "checkpoints": sum(r["written_checkpoints"] for r in done),
        "writes": sum(r["written_writes"] for r in done),
        "verified": sum(bool(r["verified"]) for r in done),
        # Items of a langgraph-checkpoint-aws table without their payload, left out as it reads them.
        "orphans": sum(source.orphans.get(t, 0) for t in ids)
        if isinstance(source, CheckpointAwsSource)
        else 0,
        "dry_run": dry_run,
        "results": results,
    }
