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
  "parent_checkpoint_id", "checkpoint", "metadata", "channel_values"}``,
  a checkpoint before any checkpoint naming it as parent;
* ``{"kind": "writes", "checkpoint_ns", "checkpoint_id", "task_id",
  "task_path", "run_id", "writes": [{"idx", "channel", "value"}]}``, one per
  task, after its checkpoint;
* ``{"kind": "end", "checkpoints": N, "writes": M}`` last: a truncated file
  has none and is refused.

Why JSON Lines: a record per checkpoint or task means an import holds one
record in memory at a time (not the thread), a truncated file is detected
by its missing ``end`` line, and line tools (``head``, ``grep``, ``jq -c``)
work on it. Payloads are ``{"type", "b64"}`` pairs, the serializer's own
typed form, so nothing is lost in a JSON round trip (tuples, bytes, sets,
pydantic models stay what they were).

An import validates the whole file before it writes anything: structure,
order, sizes (``max_payload_size``) and that every payload decodes with the
target saver's serializer (whose allowlist applies: a file can revive no
more than a stored payload could). It refuses a target thread that already
has checkpoints, writes in file order (parents first), checks that the
latest checkpoint of every namespace reads back, and if anything fails
after the first write it deletes the partial thread (which did not exist
before) and says so.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import datetime as dt
import functools
import heapq
import json
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, Final

import ormsgpack
from langgraph.checkpoint.base import WRITES_IDX_MAP, writes_sort_key
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_TYPES
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = [
    "FORMAT",
    "ExportError",
    "ExportFileError",
    "OpaqueExt",
    "OpaquePayload",
    "PortableSerializer",
    "TargetExistsError",
    "export_thread",
    "import_thread",
]

#: The format tag of the header line; a reader refuses any other.
FORMAT: Final = "langgraph-dynamodb-export/1"
#: Payload types a file may hold: what LangGraph's serializers write,
#: without encryption and never pickle (loading one would run code).
PORTABLE_TYPES: Final = frozenset({"null", "bytes", "bytearray", "msgpack", "json"})
#: How far, in characters, one line may exceed its payloads' base64 size.
_RECORD_OVERHEAD: Final = 1 << 20
#: An import spools a non-seekable input (stdin) to disk past this size.
_SPOOL_MEMORY: Final = 8 << 20


class ExportError(CheckpointStoreError):
    """A thread cannot be exported, or an import failed (the message says what was left)."""


class ExportFileError(ExportError, ValueError):
    """The file is not a valid export: nothing was written.

    The message names the line and what is wrong with it.
    """


class TargetExistsError(ExportError):
    """The import target thread already has checkpoints: nothing was written."""


# ============================================================ serializer


@dataclasses.dataclass(frozen=True, slots=True)
class OpaqueExt:
    """A msgpack ext record (a typed object) kept as stored: never imported, never called."""

    code: int
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class OpaquePayload:
    """A whole payload of a type kept as stored (legacy ``json`` payloads)."""

    type: str
    data: bytes


# LangGraph's ext codes that name a Python object as ``(module, name, ...)``, and
# the one that wraps a nested value (a DeltaChannel snapshot).
_NAMED_CODES: Final = frozenset(range(jsonplus.EXT_CONSTRUCTOR_SINGLE_ARG, jsonplus.EXT_PYDANTIC_V2 + 1))


def _checked_ext(code: int, data: bytes, *, refused: list[str]) -> OpaqueExt:
    """Keep an ext record opaque, but refuse one naming a standard-library callable.

    A tool moving state cannot judge an application's types (their modules
    are not loaded here; the application's serializer judges them when it
    reads). It can judge the standard library's, which is always there: a
    record naming ``os.system`` or ``subprocess.Popen`` is no state an
    application writes, so a file carrying one is refused, by the rule the
    savers' default serializer applies (LangGraph's safe types, or a data
    class of a loaded module). Nested records are checked the same way.
    """
    if code in _NAMED_CODES or code == jsonplus.EXT_DELTA_SNAPSHOT:
        hook = functools.partial(_checked_ext, refused=refused)
        try:
            inner = ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        except ormsgpack.MsgpackDecodeError as exc:
            refused.append(f"malformed ext record {code}: {exc}")
            raise
        if code in _NAMED_CODES:
            if not (
                isinstance(inner, (list, tuple))
                and len(inner) >= 2
                and all(isinstance(x, str) for x in inner[:2])
            ):
                refused.append(f"malformed ext record {code}: no (module, name)")
                raise ValueError(refused[-1])
            module, name = inner[0], inner[1]
            if (
                module.partition(".")[0] in sys.stdlib_module_names
                and (module, name) not in SAFE_MSGPACK_TYPES
            ):
                # The savers' rule, not a second copy of it.
                from langgraph.checkpoint.dynamodb.serde import _loaded_data_class

                try:
                    _loaded_data_class(code, module, name)
                except ValueError as exc:
                    refused.append(str(exc))
                    raise
    return OpaqueExt(code, data)


def _opaque_default(obj: Any) -> Any:
    if isinstance(obj, OpaqueExt):
        return ormsgpack.Ext(obj.code, obj.data)
    return jsonplus._msgpack_default(obj)


class PortableSerializer:
    """A serializer that moves state without understanding it.

    It decodes msgpack structure (dicts, lists, strings, numbers, bytes) but
    keeps every ext record, the form LangGraph gives a typed object (a
    pydantic model, a dataclass, an enum, a LangChain message), as an
    :class:`OpaqueExt`, and writes it back byte for byte. So a tool can
    export and import the state of any application, without the
    application's modules and without ever importing or calling what a
    payload names. One judgement it does make: a record naming a standard
    library object that is not a data class (``os.system``) is refused, as
    the savers' default serializer refuses it. Legacy ``json`` payloads
    stay whole (:class:`OpaquePayload`).
    Ordinary Python values are written as LangGraph's ``JsonPlusSerializer`` does.

    The ``langgraph-dynamodb export``/``import`` commands read and write
    with it; an application exporting its own threads can keep its saver's
    serializer, which revives its types.

    Example:
        >>> s = PortableSerializer()
        >>> typed = ("msgpack", ormsgpack.packb({"m": ormsgpack.Ext(5, b"model")}))
        >>> s.loads_typed(typed)
        {'m': OpaqueExt(code=5, data=b'model')}
        >>> s.dumps_typed(s.loads_typed(typed)) == typed
        True
    """

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if isinstance(obj, OpaquePayload):
            return obj.type, obj.data
        if obj is None:
            return "null", b""
        if isinstance(obj, bytes):
            return "bytes", obj
        if isinstance(obj, bytearray):
            return "bytearray", bytes(obj)
        return "msgpack", ormsgpack.packb(obj, default=_opaque_default, option=jsonplus._option)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, raw = data
        if type_ == "null":
            return None
        if type_ == "bytes":
            return bytes(raw)
        if type_ == "bytearray":
            return bytearray(raw)
        if type_ == "msgpack":
            refused: list[str] = []
            hook = functools.partial(_checked_ext, refused=refused)
            try:
                value = ormsgpack.unpackb(raw, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
            except ormsgpack.MsgpackDecodeError:
                if not refused:
                    raise
            if refused:  # ormsgpack replaces an ext_hook's error by "ext_hook failed": say why
                raise ValueError(refused[0])
            return value
        if type_ == "json":
            return OpaquePayload(type_, bytes(raw))
        raise ValueError(f"payload type {type_!r} is not portable (only {sorted(PORTABLE_TYPES)})")

    # SerializerProtocol's untyped pair, for completeness.
    def dumps(self, obj: Any) -> bytes:
        return self.dumps_typed(obj)[1]

    def loads(self, data: bytes) -> Any:
        return self.loads_typed(("msgpack", data))


def _plain_serde(saver: Any) -> Any:
    """The saver's serializer without its encryption layer (what a file holds)."""
    serde = saver.serde
    return serde.serde if isinstance(serde, EncryptedSerializer) else serde


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
    from langgraph.checkpoint.dynamodb import cli

    out: dict[tuple[str, str], list[tuple[tuple[str, str, int], dict[str, Any]]]] = {}
    items = cli._query(
        saver,
        KeyConditionExpression="#pk = :pk",
        FilterExpression="#t = :w",
        ExpressionAttributeNames={"#pk": ATTR.PK, "#t": ATTR.KIND},
        ExpressionAttributeValues={":pk": {"S": cli._pk(saver, thread_id)}, ":w": {"S": schema.WRITES_ITEM}},
        ConsistentRead=True,
    )
    for it in items:
        ns, kind, cid, task_id = schema.parse_sk(it[ATTR.SK]["S"])
        if kind != schema.WRITES_ITEM or task_id is None:
            continue
        tid = it.get(ATTR.TASK_ID, {}).get("S", task_id)
        path = it.get(ATTR.TASK_PATH, {}).get("S", "")
        run_id = it.get(ATTR.RUN_ID, {}).get("S")
        rows = out.setdefault((ns, cid), [])
        for name, av in it.items():
            idx = _write_idx(name)
            if idx is None:
                continue
            channel = av["L"][0]["S"]
            rows.append(
                (
                    writes_sort_key(path, tid, idx),
                    {"task_id": tid, "task_path": path, "run_id": run_id, "idx": idx, "channel": channel},
                )
            )
    for rows in out.values():
        rows.sort(key=lambda r: r[0])
    return out


def _write_idx(name: str) -> int | None:
    """The index of a ``w<idx>`` attribute of a writes item, ``None`` for other attributes."""
    rest = name[len(ATTR.WRITE_PREFIX) :]
    if not name.startswith(ATTR.WRITE_PREFIX) or not rest.lstrip("-").isdigit():
        return None
    return int(rest)


def _parents_first(tuples: list[Any]) -> list[Any]:
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
        from langgraph.checkpoint.dynamodb.transfer import export_thread, import_thread

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
    serde = _plain_serde(saver)
    ordered = _parents_first(tuples)

    def line(obj: Mapping[str, Any]) -> None:
        fp.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")

    line(
        {
            "kind": "header",
            "format": FORMAT,
            "thread_id": thread_id,
            "exported_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
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
        ns, cid = conf["checkpoint_ns"], conf["checkpoint_id"]
        where = f"checkpoint {cid!r} (namespace {ns!r})"
        body = {k: v for k, v in t.checkpoint.items() if k != "channel_values"}
        values = t.checkpoint.get("channel_values") or {}
        line(
            {
                "kind": "checkpoint",
                "checkpoint_ns": ns,
                "checkpoint_id": cid,
                "parent_checkpoint_id": (t.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
                "checkpoint": _encode(serde, body, where),
                "metadata": _encode(serde, t.metadata, f"metadata of {where}"),
                "channel_values": {
                    ch: _encode(serde, v, f"channel {ch!r} of {where}") for ch, v in values.items()
                },
            }
        )
        pending = list(t.pending_writes or [])
        rows = raw.get((ns, cid), [])
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
        for rec in tasks.values():
            line(rec)
        n_writes += len(tasks)
    line({"kind": "end", "checkpoints": len(ordered), "writes": n_writes})
    return {
        "thread_id": thread_id,
        "checkpoints": len(ordered),
        "writes": n_writes,
        "namespaces": len({t.config["configurable"]["checkpoint_ns"] for t in ordered}),
    }


# ================================================================ import


@dataclasses.dataclass
class _Plan:
    """What pass one learned: enough to check order and the result, not the values."""

    source_thread: str = ""
    checkpoints: int = 0
    writes: int = 0
    latest: dict[str, str] = dataclasses.field(default_factory=dict)  # ns -> highest checkpoint id


class _Reader:
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


def _field(reader: _Reader, rec: Mapping[str, Any], name: str, kind: Any, *, optional: bool = False) -> Any:
    value = rec.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise reader.error(f"field {name!r} is missing or not a {getattr(kind, '__name__', kind)}")
    return value


def _decode(reader: _Reader, serde: Any, payload: Any, where: str, max_payload_size: int) -> Any:
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
        return serde.loads_typed((type_, data))
    except Exception as exc:
        raise reader.error(f"{where}: cannot decode the payload: {type(exc).__name__}: {exc}") from None


def _records(
    reader: _Reader,
    serde: Any,
    max_payload_size: int,
    plan: _Plan | None,
    check_keys: Callable[[str, str, str], None] | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Validate the file record by record and yield ``(kind, decoded record)``.

    With ``plan`` (pass one) it also checks order and uniqueness and records
    the totals; pass two reads the same, already validated, records.
    ``check_keys(namespace, checkpoint id, task id)`` raises for keys the
    target cannot store.
    """

    def keys(ns: str, cid: str, task_id: str = "") -> None:
        if check_keys is not None:
            try:
                check_keys(ns, cid, task_id)
            except ValueError as exc:  # KeyTooLongError too
                raise reader.error(f"checkpoint {cid!r}: {exc}") from None

    seen: set[tuple[str, str]] = set()
    awaited: set[tuple[str, str]] = set()
    tasks: set[tuple[str, str, str]] = set()
    header = end = False
    n_writes = 0
    for rec in reader:
        if end:
            raise reader.error("a record after the end record")
        kind = rec.get("kind")
        if not header:
            if kind != "header" or rec.get("format") != FORMAT:
                raise reader.error(
                    f"not a {FORMAT} file (format {rec.get('format')!r}); "
                    "export it with this version of langgraph-dynamodb"
                )
            header = True
            thread = _field(reader, rec, "thread_id", str)
            if plan is not None:
                plan.source_thread = thread
            continue
        if kind == "checkpoint":
            ns = _field(reader, rec, "checkpoint_ns", str)
            cid = _field(reader, rec, "checkpoint_id", str)
            pid = _field(reader, rec, "parent_checkpoint_id", str, optional=True)
            if not cid:
                raise reader.error("empty checkpoint_id")
            where = f"checkpoint {cid!r}"
            if (ns, cid) in seen:
                raise reader.error(f"{where} (namespace {ns!r}) appears twice")
            if pid == cid or (ns, cid) in awaited:
                # A parent named by an earlier record: the import would write a
                # child whose parent is not there yet.
                raise reader.error(f"{where} comes after a child of it: parents must come first")
            if pid is not None and (ns, pid) not in seen:
                awaited.add((ns, pid))  # in a later record (refused then) or not in the file (pruned)
            keys(ns, cid)
            seen.add((ns, cid))
            body = _decode(reader, serde, rec.get("checkpoint"), where, max_payload_size)
            if (
                not isinstance(body, dict)
                or body.get("id") != cid
                or not isinstance(body.get("channel_versions"), dict)
            ):
                raise reader.error(
                    f"{where}: the checkpoint is not a checkpoint with this id and channel_versions"
                )
            metadata = _decode(reader, serde, rec.get("metadata"), f"metadata of {where}", max_payload_size)
            if not isinstance(metadata, dict):
                raise reader.error(f"metadata of {where} is not a mapping")
            raw_values = rec.get("channel_values")
            if not isinstance(raw_values, dict):
                raise reader.error(f"{where}: channel_values is not an object")
            values = {}
            for ch, payload in raw_values.items():
                if ch not in body["channel_versions"]:
                    # put() stores only versioned channels: it would drop this value.
                    raise reader.error(f"{where}: channel {ch!r} has a value but no version")
                values[ch] = _decode(reader, serde, payload, f"channel {ch!r} of {where}", max_payload_size)
            if plan is not None:
                plan.checkpoints += 1
                if cid > plan.latest.get(ns, ""):
                    plan.latest[ns] = cid
            yield (
                "checkpoint",
                {
                    "ns": ns,
                    "id": cid,
                    "parent": pid,
                    "checkpoint": {**body, "channel_values": values},
                    "metadata": metadata,
                },
            )
        elif kind == "writes":
            ns = _field(reader, rec, "checkpoint_ns", str)
            cid = _field(reader, rec, "checkpoint_id", str)
            task_id = _field(reader, rec, "task_id", str)
            task_path = _field(reader, rec, "task_path", str)
            run_id = _field(reader, rec, "run_id", str, optional=True)
            where = f"writes of task {task_id!r} on checkpoint {cid!r}"
            if (ns, cid) not in seen:
                raise reader.error(f"{where}: the checkpoint is not before them in the file")
            if (ns, cid, task_id) in tasks:
                raise reader.error(f"{where} appear twice")
            keys(ns, cid, task_id)
            tasks.add((ns, cid, task_id))
            entries = rec.get("writes")
            if not isinstance(entries, list) or not entries:
                raise reader.error(f"{where}: 'writes' is not a non-empty list")
            rows: list[tuple[int, str, Any]] = []
            for w in entries:
                if not isinstance(w, dict):
                    raise reader.error(f"{where}: a write is not an object")
                idx = _field(reader, w, "idx", int)
                channel = _field(reader, w, "channel", str)
                value = _decode(
                    reader, serde, w.get("value"), f"write {channel!r} of {where}", max_payload_size
                )
                rows.append((idx, channel, value))
            calls = _put_writes_order(rows)
            if calls is None:
                raise reader.error(
                    f"{where}: indexes {sorted(r[0] for r in rows)} with channels "
                    f"{[r[1] for r in rows]} cannot come from put_writes"
                )
            n_writes += 1
            if plan is not None:
                plan.writes += 1
            yield (
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
        elif kind == "end":
            if plan is not None and (
                rec.get("checkpoints") != plan.checkpoints or rec.get("writes") != plan.writes
            ):
                raise reader.error(
                    f"the end record counts {rec.get('checkpoints')!r} checkpoints and {rec.get('writes')!r} "
                    f"write records, the file holds {plan.checkpoints} and {plan.writes}"
                )
            end = True
        else:
            raise reader.error(f"unknown record kind {kind!r}")
    if not header:
        raise ExportFileError("empty file: not an export; nothing was written")
    if not end:
        raise ExportFileError(
            f"no end record after line {reader.lineno}: the file is truncated; nothing was written"
        )
    if plan is not None and not plan.checkpoints:
        raise ExportFileError("the file holds no checkpoint; nothing was written")


def _put_writes_order(rows: list[tuple[int, str, Any]]) -> list[tuple[str, Any]] | None:
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
    delete fails too, the message says to delete the thread.

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
        TargetExistsError: the target thread has checkpoints; nothing was written.
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
        plan = _Plan()
        check = getattr(saver, "_check_keys", None)  # the savers' own key rules, before any write

        def check_keys(ns: str, cid: str, task_id: str) -> None:
            if callable(check):
                check(thread_id or plan.source_thread, ns, cid, task_id)

        for _ in _records(_Reader(src, max_line), serde, limit, plan, check_keys):
            pass
        target = thread_id or plan.source_thread
        _check_target(saver, target)
        src.seek(start)
        progress = _Progress()
        try:
            _write(saver, target, _records(_Reader(src, max_line), serde, limit, None), progress)
            _verify(saver, target, plan)
        except BaseException as exc:
            if not progress.started:
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


@dataclasses.dataclass
class _Progress:
    started: bool = False  # a write was sent (it may have landed in part)
    written: int = 0  # writes completed


def _check_target(saver: Any, thread_id: str) -> None:
    """Refuse a thread that has checkpoints, or tombstones (a thread deleted under this id).

    Keys only (reading a value could need what this saver lacks). A deleted
    thread's tombstones hide its lineages for good (a late write must never
    bring them back), and the same checkpoints written again are exactly
    such writes: they would be stored and never read.
    """
    from langgraph.checkpoint.dynamodb import cli

    kinds = {schema.parse_sk(it[ATTR.SK]["S"])[1] for it in cli._partition(saver, thread_id, projection=True)}
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


def _write(
    saver: Any, thread_id: str, records: Iterable[tuple[str, dict[str, Any]]], progress: _Progress
) -> None:
    """Replay validated records through the public API, counting into ``progress``.

    ``new_versions`` names the channels whose version differs from the
    parent's, as LangGraph passes them: an unchanged large value is then a
    reference to where the parent put it, not a copy per checkpoint.
    """
    versions: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, rec in records:
        progress.started = True
        ns, cid = rec["ns"], rec["id"]
        base = {"thread_id": thread_id, "checkpoint_ns": ns}
        if kind == "checkpoint":
            cp = rec["checkpoint"]
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


def _verify(saver: Any, thread_id: str, plan: _Plan) -> None:
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


def _undo(saver: Any, thread_id: str, written: int, exc: BaseException) -> ExportError:
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    try:
        saver.delete_thread(thread_id)
    except Exception as cleanup:
        return ExportError(
            f"import into thread {thread_id!r} failed after {written} write(s) ({what}); removing the partial "
            f"thread failed too ({type(cleanup).__name__}: {cleanup}): delete it "
            f"(langgraph-dynamodb delete {thread_id!r} --yes) before importing again"
        )
    return ExportError(
        f"import into thread {thread_id!r} failed after {written} write(s) ({what}); "
        "the partial thread was deleted, nothing is left; import again under a new id (--thread): "
        "the deleted one keeps tombstones that would hide the same checkpoints"
    )
