"""The ``langgraph-dynamodb-export/1`` file: its errors, and reading it record by record, validated.

``transfer.import_thread`` reads a file twice through :func:`parse_records`: a
first pass that validates everything and writes nothing, then a second that
yields the same, already validated, records to write. Nothing here does I/O
but reading the file.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any, Final

from langgraph.checkpoint.base import WRITES_IDX_MAP

from langgraph.checkpoint.dynamodb._parts import objects
from langgraph.checkpoint.dynamodb.codec import DEFAULT_MAX_PAYLOAD_OBJECTS
from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError, PayloadLimitError
from langgraph.checkpoint.dynamodb.tools._portable import PORTABLE_TYPES

__all__ = ["FORMAT", "ExportError", "ExportFileError", "TargetExistsError", "put_writes_order"]

#: The format tag of the header line; a reader refuses any other.
FORMAT: Final = "langgraph-dynamodb-export/1"

_NO: Final = object()  # a version no channel has

#: How many positions of one ``put_writes`` call a writes record may leave
#: unstored (each one a repeat of a special write, dropped by ``put_writes``).
#: Real calls leave none or a few; the bound keeps a crafted index from making
#: the import build a list of that many positions.
MAX_WRITE_HOLES: Final = 64


class ExportError(CheckpointStoreError):
    """A thread cannot be exported, or an import failed (the message says what was left)."""


class ExportFileError(ExportError, ValueError):
    """The file is not a valid export: nothing was written.

    The message names the line and what is wrong with it.
    """


class TargetExistsError(ExportError):
    """The import target thread already has checkpoints: nothing was written."""


@dataclasses.dataclass
class ImportPlan:
    """What pass one learned: enough to check order and the result, not the values."""

    source_thread: str = ""
    checkpoints: int = 0
    writes: int = 0
    latest: dict[str, str] = dataclasses.field(default_factory=dict)  # ns -> highest checkpoint id
    #: (ns, checkpoint id) -> how many children take values from it (``same_as_parent``).
    lenders: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)


class RecordReader:
    """Lines of a file as records, each checked for size and JSON shape, naming the line."""

    def __init__(self, fp: IO[str], max_line: int) -> None:
        self.fp = fp
        self.max_line = max_line
        self.lineno = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while True:
            text = self.fp.readline(self.max_line + 1)
            if not text:
                return
            self.lineno += 1
            if len(text) > self.max_line:
                raise self.error(f"longer than {self.max_line:,} characters (max_payload_size)")
            if not text.strip():
                continue
            try:
                rec = json.loads(text)
            except (ValueError, RecursionError) as exc:
                raise self.error(f"not JSON: {exc}") from None
            if not isinstance(rec, dict):
                raise self.error("not a JSON object")
            yield rec

    def error(self, message: str) -> ExportFileError:
        return ExportFileError(f"line {self.lineno}: {message}; nothing was written")


def _field(
    reader: RecordReader, rec: Mapping[str, Any], name: str, kind: Any, *, optional: bool = False
) -> Any:
    value = rec.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise reader.error(f"field {name!r} is missing or not a {getattr(kind, '__name__', kind)}")
    return value


def _decode(
    reader: RecordReader, serde: Any, payload: Any, where: str, max_payload_size: int, max_objects: int
) -> Any:
    if not isinstance(payload, dict) or set(payload) != {"type", "b64"}:
        raise reader.error(f"{where}: a payload must be {{'type': ..., 'b64': ...}}")
    type_, b64 = payload["type"], payload["b64"]
    if type_ not in PORTABLE_TYPES:
        raise reader.error(
            f"{where}: payload type {type_!r} is not portable ({', '.join(sorted(PORTABLE_TYPES))})"
        )
    if not isinstance(b64, str) or len(b64) > (max_payload_size + 2) // 3 * 4:
        raise reader.error(
            f"{where}: payload is not a string or is over max_payload_size ({max_payload_size:,} bytes)"
        )
    try:
        data = base64.b64decode(b64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise reader.error(f"{where}: invalid base64: {exc}") from None
    try:
        objects.check_objects((type_, data), max_objects, where)
    except PayloadLimitError as exc:
        raise reader.error(str(exc)) from None
    try:
        return serde.loads_typed((type_, data))
    except Exception as exc:
        raise reader.error(f"{where}: cannot decode the payload: {type(exc).__name__}: {exc}") from None


def parse_records(
    reader: RecordReader,
    serde: Any,
    max_payload_size: int,
    plan: ImportPlan | None,
    check_keys: Callable[[str, str, str], None] | None = None,
    check_value: Callable[[str, Any], None] | None = None,
    *,
    max_payload_objects: int = DEFAULT_MAX_PAYLOAD_OBJECTS,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Validate the file record by record and yield ``(kind, decoded record)``.

    With ``plan`` (pass one) it also checks order and uniqueness and records
    the totals; pass two reads the same, already validated, records.
    ``check_keys(namespace, checkpoint id, task id)`` and
    ``check_value(where, value)`` raise ``ValueError`` for what the target
    cannot store.
    """
    state = _Parse(reader, serde, max_payload_size, max_payload_objects, plan, check_keys, check_value)
    for rec in reader:
        if state.end:
            raise reader.error("a record after the end record")
        kind = rec.get("kind")
        # The first record is read as the header whatever its kind (it says
        # why the file is refused); a header anywhere else is an unknown kind.
        # (A kind that is not a string, a list say, is unknown too, not a lookup error.)
        handle = _header if not state.header else (_RECORDS.get(kind) if isinstance(kind, str) else None)
        if handle is None:
            raise reader.error(f"unknown record kind {kind!r}")
        out = handle(state, rec)
        if out is not None:
            yield out
    _check_complete(state)


@dataclasses.dataclass
class _Parse:
    """One reading of a file: its settings, and what the records read so far hold (ids, not values)."""

    reader: RecordReader
    serde: Any
    max_payload_size: int
    max_payload_objects: int
    plan: ImportPlan | None
    check_keys: Callable[[str, str, str], None] | None
    check_value: Callable[[str, Any], None] | None
    seen: set[tuple[str, str]] = dataclasses.field(default_factory=set)  # (ns, checkpoint id) read
    #: (ns, checkpoint id) parents named by a checkpoint read before them (if they come at all).
    awaited: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    #: (ns, checkpoint id) -> channel -> version of each value it holds (ids only, not values).
    held: dict[tuple[str, str], dict[str, Any]] = dataclasses.field(default_factory=dict)
    tasks: set[tuple[str, str, str]] = dataclasses.field(default_factory=set)  # (ns, cid, task id)
    header: bool = False
    end: bool = False

    def decode(self, payload: Any, where: str) -> Any:
        value = _decode(
            self.reader, self.serde, payload, where, self.max_payload_size, self.max_payload_objects
        )
        if self.check_value is not None:
            try:
                self.check_value(where, value)
            except ValueError as exc:
                raise self.reader.error(str(exc)) from None
        return value

    def keys(self, ns: str, cid: str, task_id: str = "") -> None:
        if self.check_keys is not None:
            try:
                self.check_keys(ns, cid, task_id)
            except ValueError as exc:  # KeyTooLongError too
                raise self.reader.error(f"checkpoint {cid!r}: {exc}") from None


#: What a record handler yields: ``(kind, decoded record)``, or ``None`` for nothing.
_Record = tuple[str, dict[str, Any]] | None


def _header(state: _Parse, rec: dict[str, Any]) -> _Record:
    reader = state.reader
    if rec.get("kind") != "header" or rec.get("format") != FORMAT:
        raise reader.error(
            f"not a {FORMAT} file (format {rec.get('format')!r}); "
            "export it with this version of langgraph-dynamodb"
        )
    state.header = True
    thread = _field(reader, rec, "thread_id", str)
    if state.plan is not None:
        state.plan.source_thread = thread
    return None


def _checkpoint(state: _Parse, rec: dict[str, Any]) -> _Record:
    reader = state.reader
    ns = _field(reader, rec, "checkpoint_ns", str)
    cid = _field(reader, rec, "checkpoint_id", str)
    pid = _field(reader, rec, "parent_checkpoint_id", str, optional=True)
    where = _checkpoint_place(state, ns, cid, pid)
    body = state.decode(rec.get("checkpoint"), where)
    if (
        not isinstance(body, dict)
        or body.get("id") != cid
        or not isinstance(body.get("channel_versions"), dict)
    ):
        raise reader.error(f"{where}: the checkpoint is not a checkpoint with this id and channel_versions")
    metadata = state.decode(rec.get("metadata"), f"metadata of {where}")
    if not isinstance(metadata, dict):
        raise reader.error(f"metadata of {where} is not a mapping")
    versions = body["channel_versions"]
    values = _channel_values(state, rec, versions, where)
    same = _same_as_parent(state, rec, values, versions, (ns, pid), where)
    state.held[(ns, cid)] = {ch: versions[ch] for ch in (*values, *same)}
    if state.plan is not None:
        _count_checkpoint(state.plan, ns, cid, pid, same)
    return (
        "checkpoint",
        {
            "ns": ns,
            "id": cid,
            "parent": pid,
            "checkpoint": {**body, "channel_values": values},
            "same_as_parent": same,
            "metadata": metadata,
        },
    )


def _checkpoint_place(state: _Parse, ns: str, cid: str, pid: str | None) -> str:
    """Check a checkpoint's id and place in the file, note it as read; its name for errors."""
    reader = state.reader
    if not cid:
        raise reader.error("empty checkpoint_id")
    where = f"checkpoint {cid!r}"
    if (ns, cid) in state.seen:
        raise reader.error(f"{where} (namespace {ns!r}) appears twice")
    if pid == cid or (ns, cid) in state.awaited:
        # A parent named by an earlier record: the import would write a
        # child whose parent is not there yet.
        raise reader.error(f"{where} comes after a child of it: parents must come first")
    if pid is not None and (ns, pid) not in state.seen:
        state.awaited.add((ns, pid))  # in a later record (refused then) or not in the file (pruned)
    state.keys(ns, cid)
    state.seen.add((ns, cid))
    return where


def _channel_values(
    state: _Parse, rec: dict[str, Any], versions: dict[str, Any], where: str
) -> dict[str, Any]:
    """The checkpoint's channel values, decoded, each of a versioned channel."""
    raw_values = rec.get("channel_values")
    if not isinstance(raw_values, dict):
        raise state.reader.error(f"{where}: channel_values is not an object")
    values = {}
    for ch, payload in raw_values.items():
        if ch not in versions:
            # put() stores only versioned channels: it would drop this value.
            raise state.reader.error(f"{where}: channel {ch!r} has a value but no version")
        values[ch] = state.decode(payload, f"channel {ch!r} of {where}")
    return values


def _same_as_parent(
    state: _Parse,
    rec: dict[str, Any],
    values: dict[str, Any],
    versions: dict[str, Any],
    parent: tuple[str, str | None],
    where: str,
) -> list[str]:
    """The channels whose value is the parent's: each held, at this version, by the parent read before."""
    same = rec.get("same_as_parent", [])
    if not isinstance(same, list) or not all(isinstance(ch, str) for ch in same):
        raise state.reader.error(f"{where}: same_as_parent is not a list of channel names")
    ns, pid = parent
    lender = state.held.get((ns, pid)) if pid is not None else None
    for ch in same:
        if ch in values or lender is None or lender.get(ch) != versions.get(ch, _NO):
            raise state.reader.error(
                f"{where}: channel {ch!r} is not the value of the same version in its parent "
                f"{pid!r} earlier in the file"
            )
    return same


def _count_checkpoint(plan: ImportPlan, ns: str, cid: str, pid: str | None, same: list[str]) -> None:
    plan.checkpoints += 1
    if cid > plan.latest.get(ns, ""):
        plan.latest[ns] = cid
    if same and pid is not None:
        plan.lenders[(ns, pid)] = plan.lenders.get((ns, pid), 0) + 1


def _writes(state: _Parse, rec: dict[str, Any]) -> _Record:
    reader = state.reader
    ns = _field(reader, rec, "checkpoint_ns", str)
    cid = _field(reader, rec, "checkpoint_id", str)
    task_id = _field(reader, rec, "task_id", str)
    task_path = _field(reader, rec, "task_path", str)
    run_id = _field(reader, rec, "run_id", str, optional=True)
    where = f"writes of task {task_id!r} on checkpoint {cid!r}"
    if (ns, cid) not in state.seen:
        raise reader.error(f"{where}: the checkpoint is not before them in the file")
    if (ns, cid, task_id) in state.tasks:
        raise reader.error(f"{where} appear twice")
    state.keys(ns, cid, task_id)
    state.tasks.add((ns, cid, task_id))
    entries = rec.get("writes")
    if not isinstance(entries, list) or not entries:
        raise reader.error(f"{where}: 'writes' is not a non-empty list")
    rows = [_write_row(state, w, entries, where) for w in entries]
    calls = put_writes_order(rows)
    if calls is None:
        raise reader.error(
            f"{where}: indexes {sorted(r[0] for r in rows)} with channels "
            f"{[r[1] for r in rows]} cannot come from put_writes"
        )
    if state.plan is not None:
        state.plan.writes += 1
    return (
        "writes",
        {
            "ns": ns,
            "id": cid,
            "task_id": task_id,
            "task_path": task_path,
            "run_id": run_id,
            "writes": calls,
        },
    )


def _write_row(state: _Parse, w: Any, entries: list[Any], where: str) -> tuple[int, str, Any]:
    """One write of a writes record as ``(idx, channel, value)``, at an index ``put_writes`` can give."""
    reader = state.reader
    if not isinstance(w, dict):
        raise reader.error(f"{where}: a write is not an object")
    idx = _field(reader, w, "idx", int)
    channel = _field(reader, w, "channel", str)
    fixed = WRITES_IDX_MAP.get(channel)
    if fixed is not None and idx != fixed:
        raise reader.error(
            f"{where}: write {channel!r} at index {idx} cannot come from put_writes (which gives it {fixed})"
        )
    if fixed is None and not 0 <= idx < _write_index_bound(entries):
        raise reader.error(
            f"{where}: write {channel!r} at index {idx} cannot come from put_writes "
            f"(a record of {len(entries)} write(s) holds indexes 0 to "
            f"{_write_index_bound(entries) - 1})"
        )
    value = state.decode(w.get("value"), f"write {channel!r} of {where}")
    return (idx, channel, value)


def _end(state: _Parse, rec: dict[str, Any]) -> _Record:
    plan = state.plan
    if plan is not None and (rec.get("checkpoints") != plan.checkpoints or rec.get("writes") != plan.writes):
        raise state.reader.error(
            f"the end record counts {rec.get('checkpoints')!r} checkpoints and {rec.get('writes')!r} "
            f"write records, the file holds {plan.checkpoints} and {plan.writes}"
        )
    state.end = True
    return None


#: The handler of each record kind after the header: it checks the record
#: against those before it and returns what to yield.
_RECORDS: Final[dict[str, Callable[[_Parse, dict[str, Any]], _Record]]] = {
    "checkpoint": _checkpoint,
    "writes": _writes,
    "end": _end,
}


def _check_complete(state: _Parse) -> None:
    """Refuse a file that stops before its end record, or that holds no checkpoint."""
    if not state.header:
        raise ExportFileError("empty file: not an export; nothing was written")
    if not state.end:
        raise ExportFileError(
            f"no end record after line {state.reader.lineno}: the file is truncated; nothing was written"
        )
    if state.plan is not None and not state.plan.checkpoints:
        raise ExportFileError("the file holds no checkpoint; nothing was written")


def _write_index_bound(entries: list[Any]) -> int:
    """One past the highest index a regular write of a record of these writes can have.

    Each write holds one position of the ``put_writes`` call; a position
    left unstored can only have been a repeated special write, so there are
    none without a special write among them, and at most ``MAX_WRITE_HOLES``.
    """
    special = any(isinstance(w, dict) and w.get("channel") in WRITES_IDX_MAP for w in entries)
    return len(entries) + (MAX_WRITE_HOLES if special else 0)


def put_writes_order(rows: list[tuple[int, str, Any]]) -> list[tuple[str, Any]] | None:
    """The ``put_writes`` argument that stores exactly these ``(idx, channel, value)`` rows.

    ``put_writes`` gives a regular write its position in the call and a
    special one (error, interrupt, resume...) its fixed negative index, and
    keeps the first of two writes with one index. So regular writes go to
    their index, special ones fill the other positions, and a position left
    over is filled with a repeat of a special write, which is then ignored.
    ``None``: no call can store these rows.
    """
    regular: dict[int, tuple[str, Any]] = {}
    special: list[tuple[str, Any]] = []
    for idx, channel, value in rows:
        fixed = WRITES_IDX_MAP.get(channel)
        if fixed is not None:
            if idx != fixed or any(ch == channel for ch, _ in special):
                return None
            special.append((channel, value))
        elif idx < 0 or idx in regular:
            return None
        else:
            regular[idx] = (channel, value)
    size = max([len(rows), *(i + 1 for i in regular)])
    if size > len(rows) + (MAX_WRITE_HOLES if special else 0):
        return None  # more holes than repeated special writes can explain: never build that list
    out: list[tuple[str, Any] | None] = [regular.get(i) for i in range(size)]
    fill = iter(special)
    for i, slot in enumerate(out):
        if slot is None:
            nxt = next(fill, None)
            if nxt is None:
                if not special:
                    return None
                nxt = special[0]
            out[i] = nxt
    return [w for w in out if w is not None]
