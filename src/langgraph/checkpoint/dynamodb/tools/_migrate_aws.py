"""Read the tables of ``langgraph-checkpoint-aws``'s ``DynamoDBSaver`` with boto3, for ``migrate``.

The reference AWS saver's package need not be installed (its boto3 pins
conflict with aiobotocore's): its items and S3 objects are read here
directly, keys and payloads, through a strict serializer that reads what
LangGraph's serializer wrote (``StateTypesSerializer`` by default; a given one
made strict as the savers do): the table is data its tenants wrote. Its layout (``langgraph-checkpoint-aws`` 1.x), one table with
string keys ``PK``/``SK``:

* a checkpoint: ``PK = "CHECKPOINT_{thread}"``, ``SK = "{ns}#{checkpoint id}"``,
  attributes ``id``, ``ns``, ``type``, ``ref_loc`` (``DYNAMODB`` or ``S3``),
  ``ref_key``, optional ``parent_checkpoint_id`` and ``compression``
  (``gzip``). Its payload, ``{"checkpoint", "metadata"}`` as one typed value,
  is a chunk item ``{PK: ref_key, SK: "CHUNK", payload: B}`` or the S3
  object ``{key_prefix}/{ref_key}`` (payloads over 350 KB);
* a write: ``PK = "WRITES_{thread}#{ns}#{checkpoint id}"``,
  ``SK = "{task id}#{idx}"``, attributes ``task_id``, ``channel``, ``idx``,
  optional ``task_path`` and ``compression``, and ``type``/``ref_loc``/
  ``ref_key`` for its value, stored as a checkpoint's payload is.

What :class:`CheckpointAwsSource` translates, so that the threads behave on
a ``DynamoDBSaver`` as LangGraph expects:

* **channel versions**: that saver keeps LangGraph's default integer
  versions, which repeat across the branches of a fork (version 5 of a
  channel on one branch is another value than version 5 on the other).
  Copied as they are, a resumed thread mixes them with this package's string
  versions (``TypeError: '>' not supported between 'str' and 'int'``); made
  strings naively, one branch's values would overwrite the other's. Each is
  renumbered as ``"{n:032}.0.{d:016}"``: the same ``n`` (order is kept), and
  ``d`` a digest of the checkpoint where that value of the channel first
  appears on the branch, so values stay distinct and a re-run gives the
  same versions (the migration stays resumable);
* **pending writes**: sorted by LangGraph's ``writes_sort_key`` (task path,
  task id, index; that saver returns them by its sort key, as strings, so
  index 10 came before 2), and their task paths, kept only in the write
  items, are given to ``migrate`` (:meth:`~CheckpointAwsSource.stored_write_keys`);
* **payloads**: gzip undone (bounded by ``max_payload_size``), S3 pointers
  resolved under the ``key_prefix`` that saver was configured with (it is
  not recorded in the items: a missing object says so). Derived, never
  trusted: an item's ``ref_key`` must be the key that saver derives from the
  item's own thread, namespace and id (and task id and index), else the
  item is refused unread; ``#`` and ``/`` in those parts (which would let
  one thread's parts spell another thread's key) are refused; a checkpoint
  payload must carry its item's id. A payload that is
  not one of LangGraph's portable types (``pickle`` above all) is refused:
  nothing is unpickled, ever.

As that saver reads, a checkpoint or write whose payload is missing (a put
that died between its two writes) does not exist: it is left out and
counted in :attr:`CheckpointAwsSource.orphans`.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, Final

from botocore.exceptions import ClientError
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, writes_sort_key

from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb.codec import DEFAULT_MAX_PAYLOAD_SIZE
from langgraph.checkpoint.dynamodb.serde import RevivalError, strict_serde
from langgraph.checkpoint.dynamodb.tools._export_file import ExportError
from langgraph.checkpoint.dynamodb.tools._portable import PORTABLE_TYPES

__all__ = ["CheckpointAwsSource", "CheckpointAwsSourceError", "SourceItemError", "renumber_versions"]

_CHECKPOINT_PK: Final = "CHECKPOINT_"
_WRITES_PK: Final = "WRITES_"
_CHUNK_SK: Final = "CHUNK"
#: Keys per BatchGetItem (AWS allows 100; chunks reach 350 KB and a response 16 MB).
_BATCH: Final = 40
#: BatchGetItem rounds before unprocessed keys are an error.
_RETRIES: Final = 10

#: (task id, channel, task path, idx) of one write, as ``migrate`` takes them.
WriteKey = tuple[str, str, str, int]
#: A checkpoint's write keys (named here: inside the class, ``list`` is the saver's method).
WriteKeys = list[WriteKey]


class CheckpointAwsSourceError(ExportError):
    """The reference saver's table cannot be read as such (the message says what to pass or fix)."""


class SourceItemError(CheckpointAwsSourceError):
    """One item of the table is not what that saver writes (an attribute missing, of another type...).

    It refuses the item's thread only: ``migrate_threads`` reports it under
    ``refused`` and goes on with the other threads. The message names the
    item (its keys) and the attribute.
    """


def _item_name(it: Mapping[str, Any]) -> str:
    pk, sk = (it.get(k, {}).get("S") if isinstance(it.get(k), Mapping) else None for k in ("PK", "SK"))
    return f"item (PK {pk!r}, SK {sk!r})"


def _attr(it: Mapping[str, Any], name: str, kind: str = "S", *, optional: bool = False) -> Any:
    """The attribute ``name`` of type ``kind`` (``S``, ``N``, ``B``); a typed refusal if it is not one."""
    value = it.get(name)
    if value is None and optional:
        return None
    if value is None:
        raise SourceItemError(f"{_item_name(it)}: attribute {name!r} is missing")
    if not isinstance(value, Mapping) or kind not in value:
        got = next(iter(value), "?") if isinstance(value, Mapping) else type(value).__name__
        raise SourceItemError(f"{_item_name(it)}: attribute {name!r} is of type {got}, not {kind}")
    return value[kind]


def _index(it: Mapping[str, Any]) -> int:
    """A write item's ``idx``: an integer, as that saver writes it (``str(int(...))``)."""
    text = _attr(it, "idx", "N")
    if not isinstance(text, str) or not re.fullmatch(r"-?[0-9]{1,19}", text):
        raise SourceItemError(f"{_item_name(it)}: attribute 'idx' is {text!r}, not an integer")
    return int(text)


def _names(*attrs: str) -> tuple[str, dict[str, str]]:
    """A projection of ``attrs``, every name through a placeholder (``type`` is a reserved word)."""
    names = {f"#a{i}": a for i, a in enumerate(attrs)}
    return ", ".join(names), names


class CheckpointAwsSource(BaseCheckpointSaver[str]):
    """A read-only ``BaseCheckpointSaver`` over a ``langgraph-checkpoint-aws`` table and bucket.

    ``list`` and ``get_tuple`` return what that saver's would, translated
    (see the module): renumbered channel versions, writes in
    ``writes_sort_key`` order. ``put``/``put_writes`` are refused. Pass it to
    :func:`~langgraph.checkpoint.dynamodb.tools.migrate.migrate_threads`.

    Args:
        table_name: the reference saver's table.
        bucket_name: its ``s3_offload_config["bucket_name"]``; needed if any
            payload was offloaded (over 350 KB).
        key_prefix: its ``s3_offload_config["key_prefix"]``, if it had one
            (not recorded in the table).
        serde: the serializer to read its payloads with; default the
            savers' strict default (``serde.default_serde()``:
            ``StateTypesSerializer``), which reads what that saver's
            ``JsonPlusSerializer`` wrote and never calls what a stored value
            names. A permissive serializer given here is made strict the way
            the savers do it (``serde.strict_serde``): LangGraph's permissive
            ``JsonPlusSerializer`` (also inside an ``EncryptedSerializer``)
            becomes ``StateTypesSerializer``, one that cannot be made strict
            (``pickle_fallback``, a permissive subclass) raises
            ``UnsafeSerializerError``. The CLI passes ``PortableSerializer`` to
            carry values byte for byte.
        allow_unsafe_serde: **dangerous**: keep a permissive ``serde`` as
            given, so whoever could write to the old table or bucket can run
            code on the migrating machine. Only for a store nobody else ever
            wrote to; :func:`~langgraph.checkpoint.dynamodb.tools.migrate.migrate_threads`
            honours it as its own ``allow_unsafe_source_serde``.
        dynamodb_client / s3_client: boto3 clients; default new ones
            (``region_name``, ``endpoint_url``, or the environment's).
        max_payload_size: largest payload read, once decompressed.
        skip_missing_objects: an S3 pointer whose object is missing is an
            orphan, left out (as that saver reads it) instead of an error;
            by default it is an error, since a wrong ``key_prefix`` looks
            the same. A missing chunk item is always an orphan.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb import DynamoDBSaver
        from langgraph.checkpoint.dynamodb.tools.migrate import CheckpointAwsSource, migrate_threads

        source = CheckpointAwsSource("old-checkpoints", bucket_name="old-payloads", key_prefix="app")
        summary = migrate_threads(source, DynamoDBSaver(table_name="checkpoints", bucket_name="payloads"))
        ```
    """

    def __init__(
        self,
        table_name: str,
        *,
        bucket_name: str | None = None,
        key_prefix: str | None = None,
        serde: Any = None,
        dynamodb_client: Any = None,
        s3_client: Any = None,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        max_payload_size: int = DEFAULT_MAX_PAYLOAD_SIZE,
        skip_missing_objects: bool = False,
        allow_unsafe_serde: bool = False,
    ) -> None:
        #: The explicit, named opt-in to a permissive serializer (the savers' name for it).
        self.allow_unsafe_serde = allow_unsafe_serde is True
        # A hostile old table must not choose what the migrating machine calls: strict unless opted out.
        super().__init__(serde=strict_serde(serde, allow_unsafe=self.allow_unsafe_serde))
        if not isinstance(table_name, str) or not table_name:
            raise ValueError("table_name must be a non-empty string")
        self.table_name = table_name
        self.bucket_name = bucket_name or None
        self.key_prefix = (key_prefix or "").strip("/") or None
        self.max_payload_size = max_payload_size
        self.skip_missing_objects = skip_missing_objects
        if dynamodb_client is None or (s3_client is None and self.bucket_name):
            import boto3

            kw = {"region_name": region_name, "endpoint_url": endpoint_url}
            dynamodb_client = dynamodb_client or boto3.client("dynamodb", **kw)
            if self.bucket_name:
                s3_client = s3_client or boto3.client("s3", **kw)
        self.dynamodb = dynamodb_client
        self.s3 = s3_client
        #: Checkpoints and writes left out because their payload is missing, by thread.
        self.orphans: dict[str, int] = {}
        self._keys: dict[tuple[str, str, str], WriteKeys] = {}

    # ------------------------------------------------------------ reading items

    def _pages(self, call: str, **kw: Any) -> Iterator[dict[str, Any]]:
        fn = getattr(self.dynamodb, call)
        while True:
            resp = fn(TableName=self.table_name, **kw)
            yield from resp.get("Items", [])
            if not resp.get("LastEvaluatedKey"):
                return
            kw["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def _query(self, pk: str, *attrs: str) -> list[dict[str, Any]]:
        projection, names = _names(*attrs)
        try:
            return list(
                self._pages(
                    "query",
                    KeyConditionExpression="#pk = :pk",
                    ProjectionExpression=projection,
                    ExpressionAttributeNames={**names, "#pk": "PK"},
                    ExpressionAttributeValues={":pk": {"S": pk}},
                    ConsistentRead=True,
                )
            )
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                raise CheckpointAwsSourceError(f"source table {self.table_name!r} does not exist") from None
            raise

    def list_thread_ids(self) -> list[str]:
        """Every thread with a checkpoint item, sorted (one Scan of the table's keys)."""
        seen: set[str] = set()
        try:
            for it in self._pages(
                "scan",
                ProjectionExpression="#pk",
                FilterExpression="begins_with(#pk, :p)",
                ExpressionAttributeNames={"#pk": "PK"},
                ExpressionAttributeValues={":p": {"S": _CHECKPOINT_PK}},
            ):
                seen.add(it["PK"]["S"][len(_CHECKPOINT_PK) :])
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                raise CheckpointAwsSourceError(f"source table {self.table_name!r} does not exist") from None
            raise
        return sorted(seen)

    def _chunks(self, keys: list[str]) -> dict[str, bytes]:
        """The chunk items' payloads by key (a missing one is absent)."""
        out: dict[str, bytes] = {}
        for start in range(0, len(keys), _BATCH):
            pending: dict[str, Any] = {
                self.table_name: {
                    "Keys": [
                        {"PK": {"S": k}, "SK": {"S": _CHUNK_SK}}
                        for k in dict.fromkeys(keys[start : start + _BATCH])
                    ],
                    "ProjectionExpression": "#k, #p",
                    "ExpressionAttributeNames": {"#k": "PK", "#p": "payload"},
                    "ConsistentRead": True,
                }
            }
            for attempt in range(_RETRIES):
                resp = self.dynamodb.batch_get_item(RequestItems=pending)
                for it in resp.get("Responses", {}).get(self.table_name, []):
                    out[it["PK"]["S"]] = bytes(_attr(it, "payload", "B"))
                pending = resp.get("UnprocessedKeys") or {}
                if not pending:
                    break
                time.sleep(min(0.05 * 2**attempt, 2.0))  # throttled, or over 16 MB: the rest again
            else:
                raise CheckpointAwsSourceError(
                    f"table {self.table_name!r}: BatchGetItem left keys unprocessed {_RETRIES} times (throttled)"
                )
        return out

    def _s3_body(self, key: str) -> bytes | None:
        if self.bucket_name is None or self.s3 is None:
            raise CheckpointAwsSourceError(
                f"an item of table {self.table_name!r} points to S3 ({key!r}): pass the source saver's "
                "bucket (bucket_name=..., or ?bucket=... after --from checkpoint-aws:TABLE)"
            )
        full = f"{self.key_prefix}/{key}" if self.key_prefix else key
        try:
            obj = self.s3.get_object(Bucket=self.bucket_name, Key=full)
        except ClientError as exc:
            if error_code(exc) in ("NoSuchKey", "404"):
                if self.skip_missing_objects:
                    return None
                raise CheckpointAwsSourceError(self._missing(key, full)) from None
            if error_code(exc) == "NoSuchBucket":
                raise CheckpointAwsSourceError(f"source bucket {self.bucket_name!r} does not exist") from None
            raise
        body = obj["Body"]
        try:
            data = body.read(self.max_payload_size + 1)
        finally:
            body.close()
        if len(data) > self.max_payload_size:
            raise CheckpointAwsSourceError(
                f"S3 object {full!r} is over max_payload_size ({self.max_payload_size:,} bytes)"
            )
        return bytes(data)

    def _missing(self, key: str, full: str) -> str:
        """Why an S3 pointer finds nothing: most likely the key prefix, which the table does not record."""
        hint = ""
        with contextlib.suppress(ClientError):
            listed = self.s3.list_objects_v2(Bucket=self.bucket_name, MaxKeys=1000).get("Contents", [])
            found = sorted({o["Key"][: -len(key) - 1] for o in listed if o["Key"].endswith("/" + key)})
            if found:
                hint = f" (the bucket has it under the prefix {found[0]!r})"
        return (
            f"S3 object {full!r} not found in bucket {self.bucket_name!r}{hint}: the source saver's "
            "key_prefix is not recorded in its table; pass the one its s3_offload_config had (key_prefix=..., "
            "or &prefix=... after --from checkpoint-aws:TABLE?bucket=...). If objects are really gone (a "
            "put that died half way), skip_missing_objects=True (&missing=skip) leaves those out, as the "
            "reference saver does"
        )

    def _payloads(self, items: list[dict[str, Any]], refs: list[tuple[str, str]]) -> list[bytes | None]:
        """Each item's stored payload, ``None`` where it is missing (an orphan).

        ``refs`` are each item's ``(chunk key, S3 key)`` as that saver derives
        them from the item's own thread, namespace and id (task and index): a
        ``ref_key`` naming anything else is refused, never fetched (it could
        name another thread's payload).
        """
        for it, (chunk, s3) in zip(items, refs, strict=True):
            loc, key = _attr(it, "ref_loc"), _attr(it, "ref_key")
            if loc not in ("DYNAMODB", "S3"):
                raise SourceItemError(f"{_item_name(it)}: attribute 'ref_loc' is {loc!r}, not DYNAMODB or S3")
            want = chunk if loc == "DYNAMODB" else s3
            if key != want:
                raise SourceItemError(
                    f"{_item_name(it)}: attribute 'ref_key' is {key!r}, but that saver keeps this item's "
                    f"payload under {want!r}; refused unread (it could name another thread's payload)"
                )
        chunks = self._chunks(
            [c for it, (c, _) in zip(items, refs, strict=True) if it["ref_loc"]["S"] == "DYNAMODB"]
        )
        return [
            chunks.get(c) if it["ref_loc"]["S"] == "DYNAMODB" else self._s3_body(s3)
            for it, (c, s3) in zip(items, refs, strict=True)
        ]

    def _decode(self, it: dict[str, Any], data: bytes, where: str) -> Any:
        type_ = _attr(it, "type")
        # LangGraph's types, or one under its EncryptedSerializer ("msgpack+aes": pass serde=...).
        if type_.split("+", 1)[0] not in PORTABLE_TYPES:
            raise CheckpointAwsSourceError(
                f"{where} in table {self.table_name!r} is stored as {type_!r}"
                + (" (pickle: loading it could run code, so it is never read)" if "pickle" in type_ else "")
                + f"; only {', '.join(sorted(PORTABLE_TYPES))} can be migrated"
            )
        compression = _attr(it, "compression", optional=True)
        if compression == "gzip":
            inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            try:
                raw = inflate.decompress(data, self.max_payload_size + 1)
            except zlib.error as exc:
                raise CheckpointAwsSourceError(f"{where}: bad gzip payload ({exc})") from None
            if len(raw) > self.max_payload_size or inflate.unconsumed_tail:
                raise CheckpointAwsSourceError(
                    f"{where}: over max_payload_size ({self.max_payload_size:,} bytes) once decompressed"
                )
            data = raw
        elif compression:
            raise SourceItemError(f"{where}: unknown compression {compression!r}")
        try:
            return self.serde.loads_typed((type_, data))
        except RevivalError as exc:  # a type refused (a gadget, or a class not imported): this item only
            raise SourceItemError(f"{where} in table {self.table_name!r}: {exc}") from None
        except Exception as exc:
            raise CheckpointAwsSourceError(
                f"{where}: cannot decode its {type_!r} payload with {type(self.serde).__name__} "
                f"({type(exc).__name__}: {exc}); pass the serializer the source saver wrote it with (serde=...)"
            ) from exc

    # ------------------------------------------------------------ a thread

    def _writes(self, thread_id: str, ns: str, cid: str) -> list[tuple[WriteKey, Any]]:
        items = self._query(
            f"{_WRITES_PK}{thread_id}#{ns}#{cid}",
            "PK", "SK", "task_id", "channel", "idx", "task_path", "type", "ref_loc", "ref_key", "compression",
        )  # fmt: skip
        rows = []
        refs = [_write_refs(thread_id, ns, cid, it) for it in items]
        for it, data in zip(items, self._payloads(items, refs), strict=True):
            key = (
                _attr(it, "task_id"),
                _attr(it, "channel"),
                _attr(it, "task_path", optional=True) or "",
                _index(it),
            )
            if data is None:
                self.orphans[thread_id] = self.orphans.get(thread_id, 0) + 1
                continue
            where = f"write {key[1]!r} of task {key[0]!r} on checkpoint {cid!r}"
            rows.append((key, self._decode(it, data, where)))
        rows.sort(key=lambda r: writes_sort_key(r[0][2], r[0][0], r[0][3]))
        return rows

    def _thread(self, thread_id: str) -> list[CheckpointTuple]:
        """Every readable checkpoint of a thread, translated, newest id first per namespace."""
        items = self._query(
            f"{_CHECKPOINT_PK}{thread_id}", "PK", "SK", "id", "ns", "type", "ref_loc", "ref_key", "compression",
            "parent_checkpoint_id",
        )  # fmt: skip
        self.orphans[thread_id] = 0
        read: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any], str | None]] = {}
        refs = [_checkpoint_refs(thread_id, it) for it in items]
        for it, data in zip(items, self._payloads(items, refs), strict=True):
            ns, cid = _attr(it, "ns"), _attr(it, "id")
            if data is None:
                self.orphans[thread_id] += 1
                continue
            value = self._decode(it, data, f"checkpoint {cid!r} (namespace {ns!r}) of thread {thread_id!r}")
            _check_payload(it, value, cid)
            pid = _attr(it, "parent_checkpoint_id", optional=True)
            read[(ns, cid)] = (dict(value["checkpoint"]), dict(value.get("metadata") or {}), pid)
        versions = renumber_versions({k: (v[0], v[2]) for k, v in read.items()})
        out = []
        for (ns, cid), (checkpoint, metadata, pid) in sorted(read.items(), reverse=True):
            writes = self._writes(thread_id, ns, cid)
            self._keys[(thread_id, ns, cid)] = [k for k, _ in writes]
            conf = {"thread_id": thread_id, "checkpoint_ns": ns}
            out.append(
                CheckpointTuple(
                    config={"configurable": {**conf, "checkpoint_id": cid}},
                    checkpoint={**checkpoint, **versions[(ns, cid)]},  # type: ignore[typeddict-item]
                    metadata=metadata,  # type: ignore[arg-type]
                    parent_config={"configurable": {**conf, "checkpoint_id": pid}} if pid else None,
                    pending_writes=[(k[0], k[1], v) for k, v in writes],
                )
            )
        return out

    # ------------------------------------------------------------ the saver API

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """A thread's checkpoints (``config`` names it; ``None``: every thread), newest first."""
        conf = (config or {}).get("configurable", {})
        threads = [conf["thread_id"]] if conf.get("thread_id") is not None else self.list_thread_ids()
        ns = conf.get("checkpoint_ns")
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")
        n = 0
        for thread_id in threads:
            for t in self._thread(str(thread_id)):
                tconf = t.config["configurable"]
                if ns is not None and tconf["checkpoint_ns"] != ns:
                    continue
                if before_id is not None and tconf["checkpoint_id"] >= before_id:
                    continue
                if filter and not all(t.metadata.get(k) == v for k, v in filter.items()):
                    continue
                if limit is not None and n >= limit:
                    return
                n += 1
                yield t

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """A namespace's given checkpoint, or its latest (highest id), as the reference saver picks it."""
        conf = config["configurable"]
        ns, cid = conf.get("checkpoint_ns", ""), conf.get("checkpoint_id")
        for t in self.list({"configurable": {"thread_id": conf["thread_id"], "checkpoint_ns": ns}}):
            if cid is None or t.config["configurable"]["checkpoint_id"] == cid:
                return t
        return None

    def stored_write_keys(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> WriteKeys:
        """``(task_id, channel, task_path, idx)`` of a checkpoint's writes, in ``pending_writes`` order.

        As the last ``list`` of the thread read them (``get_tuple`` drops the
        task path); a checkpoint not read yet is read now.
        """
        key = (thread_id, checkpoint_ns, checkpoint_id)
        if key not in self._keys:
            self._keys[key] = [k for k, _ in self._writes(*key)]
        return list(self._keys[key])

    def put(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        raise NotImplementedError("CheckpointAwsSource is read-only: it is a migration source")

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("CheckpointAwsSource is read-only: it is a migration source")


def _key_part(it: Mapping[str, Any], name: str) -> str:
    """An attribute that goes into that saver's keys: without ``#`` or ``/``, which would make them ambiguous.

    With either, one thread's (namespace, id) could derive another thread's
    chunk or S3 key (``CHUNK_a#b##c`` is thread ``a#b``'s, and thread ``a``'s
    with namespace ``b#``). LangGraph writes neither: ids and task ids are
    UUIDs, namespaces ``node:uuid`` joined by ``|``.
    """
    value = _attr(it, name)
    if not isinstance(value, str) or "#" in value or "/" in value:
        raise SourceItemError(
            f"{_item_name(it)}: attribute {name!r} is {value!r}; '#' and '/' are refused there"
        )
    return value


def _checkpoint_refs(thread_id: str, it: Mapping[str, Any]) -> tuple[str, str]:
    """A checkpoint item's payload keys as that saver derives them (``_checkpoint_ref_pk``, ``_checkpoint_s3_key``)."""
    ns, cid = _key_part(it, "ns"), _key_part(it, "id")
    if _attr(it, "SK") != f"{ns}#{cid}":
        raise SourceItemError(f"{_item_name(it)}: its SK is not '{ns}#{cid}', as its 'ns' and 'id' make it")
    return f"CHUNK_{thread_id}#{ns}#{cid}", f"{thread_id}/checkpoints/{ns}/{cid}"


def _write_refs(thread_id: str, ns: str, cid: str, it: Mapping[str, Any]) -> tuple[str, str]:
    """A write item's payload keys as that saver derives them (``_writes_ref_pk``, ``_writes_s3_key``)."""
    task, idx = _key_part(it, "task_id"), _index(it)
    if _attr(it, "SK") != f"{task}#{idx}":
        raise SourceItemError(
            f"{_item_name(it)}: its SK is not '{task}#{idx}', as its 'task_id' and 'idx' make it"
        )
    return (
        f"CHUNK_{thread_id}#{ns}#{cid}#{task}#{idx}",
        f"{thread_id}/checkpoints/{ns}/{cid}/writes/{task}/{idx}",
    )


def _check_payload(it: Mapping[str, Any], value: Any, cid: str) -> None:
    """A checkpoint payload as that saver writes it: ``{"checkpoint": {...}, "metadata": {...}}``, its own id."""
    where = f"{_item_name(it)}: the payload of checkpoint {cid!r}"
    if not isinstance(value, Mapping) or not isinstance(value.get("checkpoint"), Mapping):
        raise SourceItemError(f"{where} is not a checkpoint")
    if value["checkpoint"].get("id") != cid:
        raise SourceItemError(
            f"{where} is checkpoint {value['checkpoint'].get('id')!r}: a payload that is not its item's "
            "is refused (copied from elsewhere, or the item rewritten)"
        )
    if not isinstance(value.get("metadata") or {}, Mapping):
        raise SourceItemError(f"{where}: 'metadata' is not a map")
    cp = value["checkpoint"]
    for field in ("channel_versions", "versions_seen", "channel_values"):
        if not isinstance(cp.get(field) or {}, Mapping):
            raise SourceItemError(f"{where}: {field!r} is not a map")
    seen = cp.get("versions_seen") or {}
    if not all(isinstance(v, Mapping) for v in seen.values()):
        raise SourceItemError(f"{where}: 'versions_seen' holds a value that is not a map")
    for field, versions in [("channel_versions", cp.get("channel_versions") or {})] + [
        (f"versions_seen[{node!r}]", v) for node, v in seen.items()
    ]:
        for ch, v in versions.items():
            if isinstance(v, bool) or not isinstance(v, int | str):  # a bool is an int to Python
                raise SourceItemError(f"{where}: {field} gives channel {ch!r} the version {v!r}")


# ============================================================ versions


def _version(n: int, ns: str, origin: str, channel: str) -> str:
    digest = hashlib.sha256(f"{ns}\0{origin}\0{channel}\0{n}".encode()).digest()
    return f"{n:032}.0.{int.from_bytes(digest[:8], 'big') % 10**16:016}"


def renumber_versions(
    checkpoints: Mapping[tuple[str, str], tuple[Mapping[str, Any], str | None]],
) -> dict[tuple[str, str], dict[str, Any]]:
    """``channel_versions`` and ``versions_seen`` of each checkpoint with integer versions made strings.

    ``checkpoints`` maps ``(namespace, checkpoint id)`` to ``(checkpoint,
    parent id)``. Along a branch a channel's version never decreases; the
    value of version ``n`` is the one of the oldest checkpoint on the branch
    holding a version >= ``n`` (its origin), so a version renumbers to ``n``
    plus a digest of that origin: the branches of a fork get distinct
    versions where their values differ, the same where they share them, and
    order within a checkpoint is kept. String versions are kept as they are.
    """
    parent_of = {
        k: (k[0], pid) if pid and (k[0], pid) in checkpoints else None for k, (_, pid) in checkpoints.items()
    }
    # (ns, cid) -> channel -> the oldest checkpoint on the branch with this checkpoint's version.
    first: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}
    for key in _parents_first(parent_of):
        cp, parent = checkpoints[key][0], parent_of[key]
        mine = cp.get("channel_versions") or {}
        theirs = (checkpoints[parent][0].get("channel_versions") or {}) if parent else {}
        first[key] = {
            ch: first.get(parent, {}).get(ch, key) if parent and ch in theirs and theirs[ch] == v else key
            for ch, v in mine.items()
        }

    def origin(key: tuple[str, str], ch: str, n: int) -> str:
        at: tuple[str, str] | None = key
        found = key
        for _ in range(len(checkpoints)):  # bounded: parent links from a table could loop
            v = (checkpoints[at][0].get("channel_versions") or {}).get(ch) if at is not None else None
            if at is None or not isinstance(v, int) or v < n:
                break
            found = first[at].get(ch, at)
            at = parent_of[found]
        if found is key and not isinstance((checkpoints[key][0].get("channel_versions") or {}).get(ch), int):
            for _ in range(len(checkpoints)):  # no version >= n here: the branch's root
                up = parent_of[found]
                if up is None:
                    break
                found = up
        return found[1]

    def new(key: tuple[str, str], ch: str, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int | str):
            raise SourceItemError(
                f"checkpoint {key[1]!r} (namespace {key[0]!r}): channel {ch!r} has version {v!r}"
            )
        return _version(v, key[0], origin(key, ch, v), ch) if isinstance(v, int) else v

    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key, (cp, _) in checkpoints.items():
        out[key] = {
            "channel_versions": {ch: new(key, ch, v) for ch, v in (cp.get("channel_versions") or {}).items()},
            "versions_seen": {
                node: {ch: new(key, ch, v) for ch, v in seen.items()}
                for node, seen in (cp.get("versions_seen") or {}).items()
            },
        }
    return out


def _parents_first(parent_of: Mapping[tuple[str, str], tuple[str, str] | None]) -> list[tuple[str, str]]:
    """Every key, each after its parent (a cycle, impossible from LangGraph, is broken anywhere)."""
    done: set[tuple[str, str]] = set()
    out: list[tuple[str, str]] = []
    for start in sorted(parent_of):
        chain = []
        at: tuple[str, str] | None = start
        while at is not None and at not in done and at not in chain:
            chain.append(at)
            at = parent_of[at]
        for key in reversed(chain):
            done.add(key)
            out.append(key)
    return out
