"""The I/O-free core shared by ``DynamoDBSaver`` and ``AsyncDynamoDBSaver``: the base contract.

Every operation is a generator (see ``_ops``) that yields the requests it
needs and turns the responses into LangGraph objects. Key building, payload
placement (inline, blob item or S3), item encoding and decoding, pagination
and retry of unprocessed batch items all live here, once.
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Self, cast

from botocore.exceptions import ClientError
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import _items, _requests, clock, schema
from langgraph.checkpoint.dynamodb._aws import error_code
from langgraph.checkpoint.dynamodb._items import ITEM_BUDGET, AttributeValue, CheckpointRecord, Item, Ref
from langgraph.checkpoint.dynamodb._ops import Call, Emit, Gather, Op, Sleep, ddb, s3
from langgraph.checkpoint.dynamodb.codec import DEFAULT_MAX_PAYLOAD_SIZE, Compression, PayloadCodec
from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
    KeyTooLongError,
    MissingPayloadError,
    PayloadTooLargeError,
)
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.serde import default_serde

__all__ = ["CoreSaver"]

#: Items in the first Query page when looking for the latest checkpoint: the
#: latest checkpoint plus the writes items of its tasks normally fit. Read
#: units are paid per item read, so the page is small; more pages (of
#: ``LATEST_PAGE_MORE``) only when a checkpoint has many tasks' writes.
LATEST_PAGE = 8
LATEST_PAGE_MORE = 64

#: Where a channel version lives: copied into every checkpoint item that has
#: it (``inline``), in the item of the checkpoint that introduced it (``c``),
#: in its own blob item, or in S3.
Location = Literal["inline", "c", "blob", "s3"]
#: A remembered placement: the location, plus the packed bytes of an inline
#: value or the id of the checkpoint holding a ``c`` value.
Placement = tuple[Location, bytes | str | None]

#: Channel versions whose placement a saver remembers (inline ones with
#: their bytes, at most ``inline_threshold`` each).
PLACEMENT_CACHE_MAX = 4096


def _uuid6ish() -> str:
    return uuid.uuid4().hex


class CoreSaver(BaseCheckpointSaver[str]):
    """Configuration, ids, payload placement and the base contract's operations."""

    def __init__(
        self,
        *,
        table_name: str,
        bucket_name: str | None = None,
        s3_key_prefix: str = "checkpoints/",
        serde: SerializerProtocol | None = None,
        inline_threshold: int = 4 * 1024,
        s3_threshold: int = 64 * 1024,
        compression: Compression = "zlib",
        compression_min_size: int = 512,
        tenant_prefix: str | None = None,
        ttl: int | None = None,
        track_threads: bool | None = None,
        touch_on_read: bool = False,
        max_payload_size: int = DEFAULT_MAX_PAYLOAD_SIZE,
    ) -> None:
        # By default a stored value may rebuild LangGraph's safe types and the
        # data classes (pydantic, dataclass, enum...) this process has imported,
        # and call nothing else, so a party who can write to the table or bucket
        # cannot make a reader import and call arbitrary code (see serde.py).
        super().__init__(serde=serde or default_serde())
        if tenant_prefix is not None:
            schema.validate_tenant_prefix(tenant_prefix)
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 60):
            raise ValueError(f"ttl must be a number of seconds >= 60, or None; got {ttl!r}")
        if not table_name or not isinstance(table_name, str):
            raise ValueError("table_name must be a non-empty string")
        if bucket_name is not None and (not isinstance(bucket_name, str) or not bucket_name):
            raise ValueError("bucket_name must be a non-empty string or None")
        if inline_threshold < 0 or s3_threshold < 0:
            raise ValueError("inline_threshold and s3_threshold must be >= 0")
        if (
            not isinstance(max_payload_size, int)
            or isinstance(max_payload_size, bool)
            or max_payload_size < 1
        ):
            raise ValueError(f"max_payload_size must be a number of bytes >= 1, got {max_payload_size!r}")
        self.table_name = table_name
        self.bucket_name = bucket_name
        self.s3_key_prefix = s3_key_prefix
        self.inline_threshold = inline_threshold
        self.s3_threshold = s3_threshold
        self.codec = PayloadCodec(compression, min_size=compression_min_size)
        #: Largest payload a read accepts, decompressed or as an S3 body: the
        #: bound on what one crafted item or object can make a reader allocate.
        self.max_payload_size = max_payload_size
        self.tenant_prefix = tenant_prefix or ""
        #: Idle time (seconds) after which a whole thread expires; None: never.
        self.ttl = ttl
        #: Maintain a thread head item (activity, TTL, the threads index).
        self.track_threads = bool(ttl) if track_threads is None else track_threads
        #: Reads count as activity too (off by default: reads stay read-only).
        self.touch_on_read = touch_on_read
        # thread id -> head TTL this process last wrote (see _touch).
        self._head_until: dict[str, int] = {}
        # (thread, ns, checkpoint id) -> delta counters of recently read
        # checkpoints. LangGraph reads a checkpoint, then asks for its delta
        # history: the counters size that Query so it is one round trip. Only
        # a sizing hint (checkpoint items are immutable), never a source of data.
        self._depth_hints: dict[tuple[str, str, str], dict[str, Any]] = {}
        # (thread, ns, channel, version) -> (location, packed bytes if inline)
        # of values this saver wrote or read. A put whose channel did not
        # change reuses it instead of serializing the value again only to
        # learn where it lives (a large state would be re-packed every step).
        self._placements: dict[tuple[str, str, str, str], Placement] = {}
        # (thread, ns, checkpoint id) -> lineage root of checkpoints this saver
        # wrote or read. A put inherits its parent's root from here (LangGraph
        # reads or writes the parent first), so finality costs no request.
        self._roots: dict[tuple[str, str, str], str] = {}

    # ------------------------------------------------------------------ ids

    @staticmethod
    def _ids(config: RunnableConfig, *, need_checkpoint_id: bool = False) -> tuple[str, str, str | None]:
        """Validate a config and return ``(thread_id, checkpoint_ns, checkpoint_id)``."""
        if not isinstance(config, Mapping):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        conf = config.get("configurable")
        if not isinstance(conf, Mapping):
            raise ValueError("config['configurable'] is missing: pass {'configurable': {'thread_id': ...}}")
        thread_id = conf.get("thread_id")
        if thread_id is None or thread_id == "":
            raise ValueError("config['configurable']['thread_id'] is required")
        if not isinstance(thread_id, str):
            if isinstance(thread_id, (int, uuid.UUID)) and not isinstance(thread_id, bool):
                thread_id = str(thread_id)
            else:
                raise TypeError(
                    f"config['configurable']['thread_id'] must be a str, got {type(thread_id).__name__}"
                )
        ns = conf.get("checkpoint_ns", "") or ""
        if not isinstance(ns, str):
            raise TypeError(f"config['configurable']['checkpoint_ns'] must be a str, got {type(ns).__name__}")
        cid = conf.get("checkpoint_id") or None
        if cid is not None and not isinstance(cid, str):
            raise TypeError(
                f"config['configurable']['checkpoint_id'] must be a str, got {type(cid).__name__}"
            )
        if need_checkpoint_id and cid is None:
            raise ValueError("config['configurable']['checkpoint_id'] is required here")
        CoreSaver._check_keys(thread_id, ns, cid)
        return thread_id, ns, cid

    @staticmethod
    def _check_keys(thread_id: str, ns: str, cid: str | None, task_id: str = "") -> None:
        for name, value in (
            ("thread_id", thread_id),
            ("checkpoint_ns", ns),
            ("checkpoint_id", cid or ""),
            ("task_id", task_id),
        ):
            try:
                value.encode()
            except UnicodeEncodeError:
                raise ValueError(f"{name} is not valid Unicode (lone surrogate?): {value!r}") from None
        if cid is not None and cid.startswith(schema.TOMBSTONE_MARK):
            # That key range is the tombstone's (see schema.tombstone_sk).
            raise ValueError("checkpoint_id must not start with U+10FFFF")
        pk_len = len(schema.partition_key(thread_id).encode())
        if pk_len > schema.MAX_PK_BYTES:
            raise KeyTooLongError(
                f"thread_id is {pk_len} bytes once encoded; DynamoDB allows "
                f"{schema.MAX_PK_BYTES} bytes in a partition key"
            )
        sk = schema.writes_sk(ns, cid or "0" * 36, task_id or "0" * 36)
        if len(sk.encode()) > schema.MAX_KEY_BYTES:
            raise KeyTooLongError(
                f"checkpoint_ns / checkpoint_id / task_id are too long: the sort key would be "
                f"{len(sk.encode())} bytes; DynamoDB allows {schema.MAX_KEY_BYTES} "
                f"(checkpoint_ns is {len(ns.encode())} bytes)"
            )

    # ---------------------------------------------------------------- keys

    def _pk(self, thread_id: str) -> str:
        """Partition key of a thread (under this saver's tenant prefix)."""
        return schema.partition_key(thread_id, self.tenant_prefix)

    def _s3_thread(self, thread_id: str) -> str:
        return schema.s3_thread_prefix(self.s3_key_prefix, thread_id, self.tenant_prefix)

    def _thread_from_pk(self, pk: str) -> str | None:
        """The thread id of a partition key, or None if not this tenant's or not a thread.

        An untenanted saver sees untenanted threads only: a tenant's threads
        are reached by maintenance through ``_owner_of_pk``.
        """
        parsed = schema.parse_partition_key(pk)
        if parsed is None or parsed[0] != self.tenant_prefix:
            return None
        return parsed[1]

    def _owner_of_pk(self, pk: str) -> tuple[Self, str] | None:
        """``(saver, thread_id)`` that maintains the thread of a partition key.

        Maintenance jobs (pruner, reaper, sweeper, ``delete_for_runs``) run
        with an untenanted saver over every partition; a tenant's thread is
        then worked on through a view of this saver under that tenant, so
        every key it derives (items, S3 objects) is the tenant's. A
        tenant's saver maintains its own threads only.
        """
        parsed = schema.parse_partition_key(pk)
        if parsed is None:
            return None
        tenant, thread_id = parsed
        if tenant == self.tenant_prefix:
            return self, thread_id
        if self.tenant_prefix:
            return None
        return self._tenant_view(tenant), thread_id

    def _tenant_view(self, tenant_prefix: str) -> Self:
        """A shallow copy of this saver under ``tenant_prefix`` (same clients and settings).

        Its caches keyed by thread id are its own: two tenants may both have
        a thread ``"t1"``, and their placements, heads, delta hints and
        lineage roots must never mix.
        """
        views: dict[str, Any] = self.__dict__.setdefault("_tenant_views", {})
        view = views.get(tenant_prefix)
        if view is None:
            schema.validate_tenant_prefix(tenant_prefix)
            view = copy.copy(self)
            view.tenant_prefix = tenant_prefix
            view._head_until = {}
            view._depth_hints = {}
            view._placements = {}
            view._roots = {}
            view.__dict__["_tenant_views"] = {}
            if len(views) > 1024:
                views.clear()
            views[tenant_prefix] = view
        return cast(Self, view)

    # Public names for tools that look at the store directly (the CLI, your
    # own scripts): the keys this saver, with its tenant prefix and S3 key
    # prefix, gives a thread.

    def partition_key(self, thread_id: str) -> str:
        """The partition key of a thread's items, under this saver's tenant prefix.

        Example:
            >>> saver = DynamoDBSaver(table_name="t", tenant_prefix="acme#")
            >>> saver.partition_key("t|1"), saver.thread_id_of("acme#|t%7C1")
            ('acme#|t%7C1', 't|1')
        """
        return self._pk(thread_id)

    def thread_id_of(self, partition_key: str) -> str | None:
        """The thread id of a partition key; ``None`` for another tenant's or a non-thread key."""
        return self._thread_from_pk(partition_key)

    def s3_thread_prefix(self, thread_id: str) -> str:
        """The S3 key prefix of every object of a thread (no other thread's keys start with it)."""
        return self._s3_thread(thread_id)

    def value_s3_key(self, thread_id: str, checkpoint_ns: str, channel: str, version: str) -> str:
        """The S3 key a channel version has when it is stored (or re-homed) in S3."""
        return self._value_s3_key(thread_id, checkpoint_ns, channel, version)

    # -------------------------------------------------------------- payloads

    def _s3_base(self, thread_id: str, ns: str) -> str:
        from urllib.parse import quote

        return f"{self._s3_thread(thread_id)}_{quote(ns, safe='')}/"

    def _value_s3_key(self, thread_id: str, ns: str, channel: str, version: str) -> str:
        from urllib.parse import quote

        return f"{self._s3_base(thread_id, ns)}v/{quote(channel, safe='')}/{quote(version, safe='')}"

    def _own_s3_key(self, thread_id: str, item: Item, attr: str) -> tuple[str, bool] | None:
        """The S3 key a pointer in ``item[attr]`` must have, derived from the item's identity.

        ``(key, True)``: exactly that key (body, metadata); ``(prefix,
        False)``: a key under that prefix (a pending write's key ends with a
        random suffix, see ``_write_to_s3``). ``None``: this attribute of
        this kind of item never holds a pointer.
        """
        ns, kind, cid, task_id = _items.parse_sk(item)
        base = f"{self._s3_base(thread_id, ns)}c/{_q(cid)}/"
        if kind == schema.CHECKPOINT_ITEM and attr == ATTR.BODY:
            return f"{base}body", True
        if kind == schema.CHECKPOINT_ITEM and attr == ATTR.METADATA:
            return f"{base}metadata", True
        if kind == schema.WRITES_ITEM and _items.is_write_attr(attr):
            return f"{base}w/{_q(task_id or '')}/{attr[len(ATTR.WRITE_PREFIX) :]}.", False
        return None

    def _s3_pointer(self, thread_id: str, item: Item, attr: str) -> str:
        """The S3 key ``item[attr]`` points to, once proven to be the item's own.

        A stored key is never trusted as such: whoever can write items in
        its own partition (a tenant under its IAM grant) could otherwise
        make a reader return, and a maintenance job delete, any object of
        the bucket, another tenant's included. Raises
        ``CorruptPayloadError`` naming the item for a key outside the one
        ``_own_s3_key`` derives.
        """
        av = item[attr]
        stored = (av["L"][1] if _items.is_write_attr(attr) else av)["M"]["s3"]["S"]
        own = self._own_s3_key(thread_id, item, attr)
        if own is not None:
            key, exact = own
            rest = stored[len(key) :]
            if stored == key if exact else (stored.startswith(key) and rest and "/" not in rest):
                return str(stored)
        raise CorruptPayloadError(
            f"item {item[ATTR.PK]['S']!r}/{item[ATTR.SK]['S']!r}: attribute {attr!r} points to "
            f"S3 key {stored!r}, which is not this item's own "
            f"({'none' if own is None else own[0] + ('' if own[1] else '*')}); refused"
        )

    def _value_location(self, size: int) -> Location:
        """Where a new channel version of ``size`` packed bytes is stored.

        ``inline``: copied into every checkpoint item that has it; ``c``:
        held by the checkpoint item that introduces it, referenced by later
        ones; ``s3``: its own object.
        """
        if self.bucket_name is not None and size > self.s3_threshold:
            return "s3"
        if size <= self.inline_threshold:
            return "inline"
        return "c"

    def _pack(self, value: Any) -> bytes:
        return self.codec.pack(self.serde.dumps_typed(value))

    def _unpack(self, packed: bytes, where: str) -> Any:
        typed = self.codec.unpack(packed, where=where, max_size=self.max_payload_size)
        if isinstance(self.serde, EncryptedSerializer) and "+" not in typed[0]:
            # EncryptedSerializer would pass an unencrypted payload through (a
            # migration path): here that is a forgery by someone without the key.
            raise CorruptPayloadError(f"{where}: payload is not encrypted (type {typed[0]!r})")
        try:
            return self.serde.loads_typed(typed)
        except Exception as exc:
            raise CorruptPayloadError(f"{where}: cannot deserialize payload: {exc}") from exc

    # ---------------------------------------------------------------- setup

    def _op_setup(self) -> Op[None]:
        """Create the table (and bucket) when missing. Idempotent."""
        try:
            yield ddb("describe_table", TableName=self.table_name)
        except ClientError as exc:
            if error_code(exc) != "ResourceNotFoundException":
                raise
            try:
                yield ddb("create_table", **schema.table_definition(self.table_name))
            except ClientError as exc2:  # created concurrently by another process
                if error_code(exc2) != "ResourceInUseException":
                    raise
        for _ in range(120):
            desc = yield ddb("describe_table", TableName=self.table_name)
            if desc["Table"]["TableStatus"] == "ACTIVE":
                break
            yield Sleep(0.5)
        ttl = yield ddb("describe_time_to_live", TableName=self.table_name)
        if ttl.get("TimeToLiveDescription", {}).get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
            yield ddb(
                "update_time_to_live",
                TableName=self.table_name,
                TimeToLiveSpecification=schema.ttl_specification(),
            )
        if self.bucket_name is None:
            return
        try:
            yield s3("head_bucket", Bucket=self.bucket_name)
        except ClientError as exc:
            if error_code(exc) not in ("404", "NoSuchBucket", "NotFound"):
                raise
            try:
                yield s3("create_bucket", Bucket=self.bucket_name)
            except ClientError as exc2:
                if error_code(exc2) not in ("BucketAlreadyOwnedByYou",):
                    raise

    # ------------------------------------------------------------------ put

    def _op_put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Op[RunnableConfig]:
        thread_id, ns, parent_id = self._ids(config)
        cid = checkpoint["id"]
        self._check_keys(thread_id, ns, cid)
        pk = self._pk(thread_id)
        body: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = body.pop("channel_values", None) or {}  # type: ignore[misc]

        # Channel values. A version is stored once: small ones are copied
        # into each checkpoint that has them (cheaper than a reference to
        # fetch), larger ones are held by the checkpoint that introduces them
        # (one PutItem, and the latest checkpoint of a thread normally holds
        # what changed last) and referenced from later ones; the largest go
        # to S3. An unchanged large value is never written again.
        vals: dict[str, AttributeValue] = {}
        uploads: list[Call] = []
        blob_items: list[Item] = []
        movable: dict[str, int] = {}  # channels held here, by packed size
        # References are remembered once the checkpoint is stored: a failed
        # put must not leave the cache pointing at a value never written.
        learned: list[tuple[tuple[str, str, str, str], Placement]] = []
        for channel, version in body["channel_versions"].items():
            if channel not in values:
                continue  # absent is not None: leave it out
            key = (thread_id, ns, channel, str(version))
            known = None if channel in new_versions else self._placements.get(key)
            if known is not None:
                loc, held = known
                if loc == "inline" and isinstance(held, bytes):
                    vals[channel] = {"B": held}
                    movable[channel] = len(held)
                elif loc == "c" and isinstance(held, str) and held != cid:
                    vals[channel] = self._value_ref(str(version), "c", held)
                elif loc in ("blob", "s3"):
                    vals[channel] = self._value_ref(str(version), loc)
                else:
                    known = None  # this very checkpoint, put again: hold the value
            if known is not None:
                continue
            # A new version, or an unchanged one this process has neither
            # written nor read: stored here. (Referencing the latter blindly
            # could point at nothing: its writer may have copied it inline
            # under other thresholds. LangGraph reads a thread before writing
            # to it, so this is rare: direct API use.)
            packed = self._pack(values[channel])
            loc = self._value_location(len(packed))
            if loc == "s3":
                vals[channel] = self._value_ref(str(version), "s3")
                self._stage_value(thread_id, ns, channel, str(version), packed, "s3", uploads, blob_items)
                learned.append((key, ("s3", None)))
                continue
            if len(packed) > ITEM_BUDGET and self.bucket_name is None:
                raise PayloadTooLargeError(
                    f"channel {channel!r} is {len(packed)} bytes serialized, more than a "
                    "DynamoDB item holds; configure bucket_name to store it in S3"
                )
            vals[channel] = {"B": packed}
            movable[channel] = len(packed)
            if loc == "inline":
                # Known at once: inline bytes point at nothing, so a put that
                # starts before this one lands (durability="async") may copy
                # them. It then stores the value as it was when this version
                # was made, even if the live object has changed since (LangGraph's
                # barrier channels mutate their set in place).
                self._remember(key, ("inline", packed))
            else:
                learned.append((key, ("c", cid)))

        body_packed = self._pack(body)
        md = get_checkpoint_metadata(config, metadata)
        md_packed = self._pack(md)
        item: Item = {
            ATTR.PK: {"S": pk},
            ATTR.SK: {"S": schema.checkpoint_sk(ns, cid)},
            ATTR.KIND: {"S": schema.CHECKPOINT_ITEM},
            ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
            ATTR.CHECKPOINT_ID: {"S": cid},
        }
        if parent_id:
            item[ATTR.PARENT_ID] = {"S": parent_id}
        run_id = md.get("run_id")
        if run_id:
            item[ATTR.RUN_ID] = {"S": str(run_id)}
        item[ATTR.BODY] = self._doc_payload(
            body_packed, f"{self._s3_base(thread_id, ns)}c/{_q(cid)}/body", uploads
        )
        item[ATTR.METADATA] = self._doc_payload(
            md_packed, f"{self._s3_base(thread_id, ns)}c/{_q(cid)}/metadata", uploads
        )
        item[ATTR.VALUES] = {"M": vals}
        if self.ttl:
            # An activity stamp, not the TTL attribute: DynamoDB never deletes
            # checkpoint items one by one (that would cut delta chains); the
            # whole thread expires through its head item (see _lifecycle).
            item[ATTR.EXPIRES] = {"N": str(int(clock.now()) + self.ttl)}
        # Delta channels whose value at this checkpoint must be rebuilt from
        # ancestors (nothing stored here). Prune, delete_for_runs and TTL read
        # this to keep every chain a surviving checkpoint needs, without
        # decoding anything. Channel names are schema, not state.
        needs = sorted(
            ch
            for ch in (md.get("counters_since_delta_snapshot") or {})
            if ch in body["channel_versions"] and ch not in values
        )
        if needs:
            item[ATTR.DELTA_NEEDS] = {"SS": needs}

        # An item over the limit: move the largest values it holds out, to
        # S3 or (no bucket) to their own blob items.
        dest: Location = "s3" if self.bucket_name is not None else "blob"
        while _items.item_size(item) > ITEM_BUDGET:
            channel = max(movable, key=movable.__getitem__) if movable else ""
            if not channel or (dest == "blob" and movable[channel] > ITEM_BUDGET):
                raise PayloadTooLargeError(
                    f"checkpoint {cid!r} does not fit in a DynamoDB item "
                    f"(~{_items.item_size(item)} bytes) and no bucket_name is configured; "
                    "nothing was written"
                )
            del movable[channel]
            version = str(body["channel_versions"][channel])
            packed = vals[channel]["B"]
            vals[channel] = self._value_ref(version, dest)
            self._stage_value(thread_id, ns, channel, version, packed, dest, uploads, blob_items)
            learned.append(((thread_id, ns, channel, version), (dest, None)))
        if any(av.get("M", {}).get("l", {}).get("S") == "c" for av in vals.values()):
            item[ATTR.FORMAT] = {"N": str(schema.REF_FORMAT_VERSION)}

        # The lineage root, recorded before the write: a child put issued
        # while this one is in flight must inherit it, not guess it.
        root = yield from self._root_for(thread_id, ns, cid, parent_id, config)
        item[ATTR.ROOT] = {"S": root}
        # Payloads first, then the item that points to them: a reader never
        # sees a pointer to something not yet written.
        yield from self._write_externals(uploads, blob_items)
        yield from self._write_item(ddb("put_item", TableName=self.table_name, Item=item))
        for key, placement in learned:
            self._remember(key, placement)
        if not parent_id and not ns:
            # A new conversation: the head this process last wrote may have
            # been retired by a delete elsewhere; write it again now.
            self._head_until.pop(thread_id, None)
        yield from self._on_activity(thread_id, root=root)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": cid,
            }
        }

    def _write_item(self, call: Call) -> Op[Any]:
        """Send the one DynamoDB write that lands a checkpoint or a task's writes.

        A guarded copy of the saver (``BaseDynamoDBSaver.with_write_guard``, which
        ``lock.ThreadLease.bind`` uses) replaces it, to make that write conditional
        on still holding the thread's lease.
        """
        return (yield call)

    def _root_for(
        self, thread_id: str, ns: str, cid: str, parent_id: str | None, config: RunnableConfig
    ) -> Op[str]:
        """The lineage root of a new checkpoint: itself without a parent, else the parent's.

        A subgraph's first checkpoint has no parent in its namespace, but
        LangGraph names the parent graph's checkpoint (``checkpoint_map``): it
        inherits that one's root when known, so a subgraph that a late run
        starts after a delete belongs to the deleted lineage too.

        Known without a request when this saver wrote or read the parent
        (LangGraph's flows); otherwise one GetItem of the parent. A parent
        that does not exist means unknown history: ``ORPHAN_ROOT``, dead
        wherever the namespace has a tombstone (a late write on a deleted
        checkpoint whose root this process never learned).
        """
        if not parent_id:
            root = cid
            cmap = (config.get("configurable") or {}).get("checkpoint_map")
            if ns and isinstance(cmap, Mapping):
                # The innermost enclosing graph first (the longest namespace).
                for pns in sorted((k for k in cmap if isinstance(k, str) and k != ns), key=len, reverse=True):
                    pcid = cmap[pns]
                    if isinstance(pcid, str) and (inherited := self._roots.get((thread_id, pns, pcid))):
                        root = inherited
                        break
        elif (known := self._roots.get((thread_id, ns, parent_id))) is not None:
            root = known
        else:
            resp = yield ddb(
                "get_item",
                TableName=self.table_name,
                Key={
                    ATTR.PK: {"S": self._pk(thread_id)},
                    ATTR.SK: {"S": schema.checkpoint_sk(ns, parent_id)},
                },
                # The key too: a legacy parent (no root) must still come back.
                ProjectionExpression="#sk, #rt",
                ExpressionAttributeNames={"#sk": ATTR.SK, "#rt": ATTR.ROOT},
                ConsistentRead=True,
            )
            parent = resp.get("Item")
            root = schema.ORPHAN_ROOT if parent is None else _items.root_of(parent, parent_id)
        self._note_root(thread_id, ns, cid, root)
        return root

    def _note_root(self, thread_id: str, ns: str, cid: str, root: str) -> None:
        if len(self._roots) > PLACEMENT_CACHE_MAX:
            self._roots.clear()  # a hint cache: a miss costs one GetItem
        self._roots[(thread_id, ns, cid)] = root

    def _dead_roots_call(self, thread_id: str) -> Call:
        """GetItem of the dead roots the thread head keeps, for reads whose Query
        does not reach a tombstone (by id, ``before``). Thread-wide: it also
        covers a subgraph namespace that a late run started after the delete."""
        return ddb(
            "get_item",
            TableName=self.table_name,
            Key={ATTR.PK: {"S": self._pk(thread_id)}, ATTR.SK: {"S": schema.HEAD_SK}},
            ProjectionExpression="#dr",
            ExpressionAttributeNames={"#dr": ATTR.DEAD},
            ConsistentRead=True,
        )

    def _remember(self, key: tuple[str, str, str, str], placement: Placement) -> None:
        """Record where a channel version lives; the oldest entries go first.

        Evicting one entry at a time (not clearing the cache) keeps the
        threads a busy process is working on cached; dict order is
        insertion order, and re-inserting marks an entry as recently used.
        """
        cache = self._placements
        cache.pop(key, None)
        cache[key] = placement
        while len(cache) > PLACEMENT_CACHE_MAX:
            try:
                del cache[next(iter(cache))]
            except (KeyError, RuntimeError, StopIteration):  # another thread got there first
                break

    @staticmethod
    def _value_ref(version: str, loc: Location, holder: str | None = None) -> AttributeValue:
        ref: dict[str, AttributeValue] = {"v": {"S": version}, "l": {"S": loc}}
        if holder is not None:
            ref["c"] = {"S": holder}
        return {"M": ref}

    def _stage_value(
        self,
        thread_id: str,
        ns: str,
        channel: str,
        version: str,
        packed: bytes,
        loc: Location,
        uploads: list[Call],
        blob_items: list[Item],
    ) -> None:
        if loc == "s3":
            uploads.append(
                s3(
                    "put_object",
                    Bucket=self.bucket_name,
                    Key=self._value_s3_key(thread_id, ns, channel, version),
                    Body=packed,
                )
            )
        else:
            blob_items.append(
                {
                    ATTR.PK: {"S": self._pk(thread_id)},
                    ATTR.SK: {"S": schema.blob_sk(ns, channel, version)},
                    ATTR.KIND: {"S": schema.BLOB_ITEM},
                    ATTR.FORMAT: {"N": str(schema.BASE_FORMAT_VERSION)},
                    ATTR.BLOB: {"B": packed},
                    # Prune never deletes an unreferenced blob younger than a
                    # grace period: it may belong to a put still in flight.
                    ATTR.CREATED: {"N": str(int(clock.now()))},
                }
            )

    def _doc_payload(self, packed: bytes, key: str, uploads: list[Call]) -> AttributeValue:
        """A payload that lives in its item unless it is over the S3 threshold."""
        if self.bucket_name is not None and len(packed) > self.s3_threshold:
            uploads.append(s3("put_object", Bucket=self.bucket_name, Key=key, Body=packed))
            return {"M": {"s3": {"S": key}}}
        return {"B": packed}

    def _write_externals(self, uploads: list[Call], blob_items: list[Item]) -> Op[None]:
        if uploads:
            yield Gather(uploads)
        if blob_items:
            yield from _requests.batch_write(
                self.table_name, [{"PutRequest": {"Item": it}} for it in blob_items]
            )

    # ----------------------------------------------------------- put_writes

    def _op_put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> Op[None]:
        thread_id, ns, cid = self._ids(config, need_checkpoint_id=True)
        assert cid is not None
        if not isinstance(task_id, str):
            raise TypeError(f"task_id must be a str, got {type(task_id).__name__}")
        self._check_keys(thread_id, ns, cid, task_id)
        if not writes:
            return
        # All-special batches (errors, interrupts, resume) overwrite; any
        # batch with a regular channel keeps the first write of each index.
        if isinstance(writes, (str, bytes)) or not all(
            isinstance(w, (tuple, list)) and len(w) == 2 for w in writes
        ):
            raise TypeError("writes must be a sequence of (channel, value) pairs")
        overwrite = all(ch in WRITES_IDX_MAP for ch, _ in writes)
        by_idx: dict[int, tuple[str, bytes]] = {}
        for pos, (channel, value) in enumerate(writes):
            if not isinstance(channel, str):
                raise TypeError(f"write channel must be a str, got {type(channel).__name__}")
            idx = WRITES_IDX_MAP.get(channel, pos)
            if idx in by_idx and not overwrite:
                continue
            by_idx[idx] = (channel, self._pack(value))

        uploads: list[Call] = []
        entries: dict[int, AttributeValue] = {}
        sizes: dict[int, int] = {}
        for idx, (channel, packed) in by_idx.items():
            if self.bucket_name is not None and len(packed) > self.s3_threshold:
                entries[idx] = self._write_to_s3(thread_id, ns, cid, task_id, idx, channel, packed, uploads)
            else:
                entries[idx] = {"L": [{"S": channel}, {"B": packed}]}
                sizes[idx] = len(packed)
        while sum(sizes.values()) + 1024 > ITEM_BUDGET:
            if self.bucket_name is None:
                raise PayloadTooLargeError(
                    f"writes of task {task_id!r} total ~{sum(sizes.values())} bytes, more than "
                    "a DynamoDB item holds, and no bucket_name is configured; nothing was written"
                )
            idx = max(sizes, key=sizes.__getitem__)
            del sizes[idx]
            channel, packed = by_idx[idx]
            entries[idx] = self._write_to_s3(thread_id, ns, cid, task_id, idx, channel, packed, uploads)

        names = {"#t": ATTR.KIND, "#f": ATTR.FORMAT, "#tid": ATTR.TASK_ID, "#tp": ATTR.TASK_PATH}
        vals: dict[str, AttributeValue] = {
            ":t": {"S": schema.WRITES_ITEM},
            ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
            ":tid": {"S": task_id},
            ":tp": {"S": task_path or ""},
        }
        sets = ["#t = :t", "#f = :f", "#tid = :tid", "#tp = if_not_exists(#tp, :tp)"]
        if self.ttl:
            names["#exp"] = ATTR.EXPIRES
            vals[":exp"] = {"N": str(int(clock.now()) + self.ttl)}
            sets.append("#exp = :exp")
        run_id = (config.get("metadata") or {}).get("run_id")
        if run_id:
            names["#rid"] = ATTR.RUN_ID
            vals[":rid"] = {"S": str(run_id)}
            sets.append("#rid = if_not_exists(#rid, :rid)")
        for n, (idx, entry) in enumerate(sorted(entries.items())):
            names[f"#w{n}"] = f"{ATTR.WRITE_PREFIX}{idx}"
            vals[f":w{n}"] = entry
            if overwrite:
                sets.append(f"#w{n} = :w{n}")
            else:
                sets.append(f"#w{n} = if_not_exists(#w{n}, :w{n})")
        if uploads:
            yield Gather(uploads)
        # One request for the whole call, whatever the number of writes.
        write = ddb(
            "update_item",
            TableName=self.table_name,
            Key={
                ATTR.PK: {"S": self._pk(thread_id)},
                ATTR.SK: {"S": schema.writes_sk(ns, cid, task_id)},
            },
            UpdateExpression="SET " + ", ".join(sets),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=vals,
        )
        yield from self._write_item(write)
        # A root this saver does not know counts as unknown history (orphan).
        yield from self._on_activity(
            thread_id, root=self._roots.get((thread_id, ns, cid), schema.ORPHAN_ROOT)
        )

    def _write_to_s3(
        self,
        thread_id: str,
        ns: str,
        cid: str,
        task_id: str,
        idx: int,
        channel: str,
        packed: bytes,
        uploads: list[Call],
    ) -> AttributeValue:
        # A fresh key per attempt: if a first write already won, this object
        # is an orphan for the sweeper, never a changed value under a live key.
        key = f"{self._s3_base(thread_id, ns)}c/{_q(cid)}/w/{_q(task_id)}/{idx}.{_uuid6ish()}"
        uploads.append(s3("put_object", Bucket=self.bucket_name, Key=key, Body=packed))
        return {"L": [{"S": channel}, {"M": {"s3": {"S": key}}}]}

    # ------------------------------------------------------------ get_tuple

    def _op_get_tuple(self, config: RunnableConfig) -> Op[CheckpointTuple | None]:
        thread_id, ns, cid = self._ids(config)
        pk = self._pk(thread_id)
        record: CheckpointRecord | None = None
        nearby: list[CheckpointRecord] = []
        if cid is not None:
            query: dict[str, Any] = dict(
                TableName=self.table_name,
                KeyConditionExpression="#pk = :pk AND #sk BETWEEN :lo AND :hi",
                ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
                ExpressionAttributeValues={
                    ":pk": {"S": pk},
                    ":lo": {"S": schema.checkpoint_sk(ns, cid)},
                    ":hi": {"S": schema.checkpoint_range_end(ns, cid)},
                },
                ConsistentRead=True,
            )
            # No tombstone is in this key range: read the head's dead roots in
            # the same round trip (one more request, not one more wait).
            first, head = yield Gather([ddb("query", **query), self._dead_roots_call(thread_id)])
            items = list(first.get("Items", []))
            if "LastEvaluatedKey" in first:
                items += yield from _requests.query_all(**query, ExclusiveStartKey=first["LastEvaluatedKey"])
            record = _items.group(thread_id, items, only=cid)
            if record is not None and _items.is_dead(record.item, _items.head_roots(head.get("Item"))):
                record = None
        else:
            # Newest first: the first checkpoint item is the latest; its
            # writes items sort right after it, so they come just before.
            kwargs: dict[str, Any] = dict(
                TableName=self.table_name,
                KeyConditionExpression="#pk = :pk AND begins_with(#sk, :pre)",
                ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
                ExpressionAttributeValues={
                    ":pk": {"S": pk},
                    ":pre": {"S": schema.checkpoint_prefix(ns)},
                },
                ScanIndexForward=False,
                ConsistentRead=True,
                Limit=LATEST_PAGE,
            )
            writes: dict[str, list[Item]] = {}
            dead: set[str] | None = None
            while record is None:
                resp = yield ddb("query", **kwargs)
                for it in resp.get("Items", []):
                    _items.check_format(it)
                    item_ns, kind, item_cid, _ = _items.parse_sk(it)
                    if kind == schema.TOMBSTONE_ITEM:
                        # Sorts first: known before any checkpoint is considered.
                        dead = _items.tomb_roots(it)
                    elif kind == schema.CHECKPOINT_ITEM and _items.is_dead(it, dead):
                        continue  # a late write on a deleted lineage
                    elif kind == schema.WRITES_ITEM:
                        writes.setdefault(item_cid, []).append(it)
                    elif kind == schema.CHECKPOINT_ITEM and record is None:
                        record = CheckpointRecord(thread_id, item_ns, item_cid, it, writes.get(item_cid, []))
                    elif kind == schema.CHECKPOINT_ITEM:
                        # Older checkpoints on the same page (read anyway): one
                        # may hold a value the latest references.
                        nearby.append(CheckpointRecord(thread_id, item_ns, item_cid, it))
                if record is None:
                    if "LastEvaluatedKey" not in resp:
                        break
                    kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
                    kwargs["Limit"] = LATEST_PAGE_MORE
        if record is None:
            return None
        if _items.expired_stamp(record.item):
            alive = yield from self._thread_alive(thread_id)
            if not alive:
                return None
        elif self.touch_on_read:
            yield from self._on_activity(thread_id, root=_items.root_of(record.item, record.checkpoint_id))
        tuples = yield from self._decode_records([record], local=nearby)
        return tuples[0]

    # ------------------------------------------------------------ activity

    def _on_activity(self, thread_id: str, root: str | None = None) -> Op[None]:
        """Hook run after each write (the lifecycle layer keeps the head alive).

        ``root``: lineage root of what was written; a deleted one must not
        bring the head back (None: a write that starts a lineage, e.g. a copy).
        """
        return
        yield  # pragma: no cover - makes this a generator

    def _thread_alive(self, thread_id: str) -> Op[bool]:
        """Whether a thread whose items carry a past activity stamp is still alive.

        Items are stamped at write time; a thread stays alive as long as its
        head's TTL is in the future (activity anywhere in the thread moves
        it). Past it, the thread is gone as a whole, even before the reaper
        has deleted its items: reads never see a half-expired thread.
        """
        resp = yield ddb(
            "get_item",
            TableName=self.table_name,
            Key={ATTR.PK: {"S": self._pk(thread_id)}, ATTR.SK: {"S": schema.HEAD_SK}},
            ConsistentRead=True,
        )
        head = resp.get("Item")
        if head is None or ATTR.TTL not in head:
            return False
        return int(head[ATTR.TTL]["N"]) >= int(clock.now())

    # --------------------------------------------------------------- decode

    def _collect_refs(self, record: CheckpointRecord, *, values: bool = True) -> list[Ref]:
        pk = self._pk(record.thread_id)
        refs: list[Ref] = []
        for attr in (ATTR.BODY, ATTR.METADATA):
            av = record.item.get(attr)
            if av is not None and "M" in av:
                refs.append(Ref("s3", self._s3_pointer(record.thread_id, record.item, attr)))
        if values:
            for channel, av in record.item.get(ATTR.VALUES, {}).get("M", {}).items():
                if "M" in av:
                    refs.append(self._value_ref_target(record, pk, channel, av))
            for w in record.writes:
                for name, av in w.items():
                    if _items.is_write_attr(name) and "M" in av["L"][1]:
                        refs.append(Ref("s3", self._s3_pointer(record.thread_id, w, name)))
        return refs

    def _value_ref_target(self, record: CheckpointRecord, pk: str, channel: str, av: AttributeValue) -> Ref:
        """Where a value reference points, with the places to try after it.

        A value may have moved since the reference was written: thresholds
        changed (blob item <-> S3), or the checkpoint holding it was pruned
        and the value re-homed to a blob item or S3 object of its version.
        """
        ref = av["M"]
        version = ref["v"]["S"]
        ns = record.checkpoint_ns
        s3_ref = Ref("s3", self._value_s3_key(record.thread_id, ns, channel, version))
        loc = ref["l"]["S"]
        if loc == "s3":
            return Ref("s3", s3_ref.key, alt=Ref("blob", schema.blob_sk(ns, channel, version), pk=pk))
        blob_ref = Ref(
            "blob", schema.blob_sk(ns, channel, version), pk=pk, alt=s3_ref if self.bucket_name else None
        )
        if loc == "blob":
            return blob_ref
        if loc == "c":
            return Ref("item", schema.checkpoint_sk(ns, ref["c"]["S"]), pk=pk, channel=channel, alt=blob_ref)
        raise CorruptPayloadError(
            f"channel {channel!r} of checkpoint {record.checkpoint_id!r} (thread {record.thread_id!r}): "
            f"unknown value location {loc!r}"
        )

    def _fetch(self, refs: Iterable[Ref], local: Iterable[CheckpointRecord] = ()) -> Op[dict[Ref, bytes]]:
        """Fetch external payloads: S3 GETs and BatchGetItem in one concurrent wave.

        ``local``: checkpoint records already read (a ``list`` page, a delta
        chain), consulted before fetching a value a checkpoint item holds.
        A place found empty is followed by its ``alt`` in a second wave.
        """
        out: dict[Ref, bytes] = {}
        held = {(r.item[ATTR.PK]["S"], r.item[ATTR.SK]["S"]): r.item for r in local}
        # place to try -> the refs asked for (two holders of one version
        # share the blob item and S3 object they fall back to)
        pending: dict[Ref, list[Ref]] = {}
        for ref in dict.fromkeys(refs):
            if ref.kind == "item" and (ref.pk, ref.key) in held:
                packed = _items.held_value(held[(ref.pk, ref.key)], ref.channel)
                if packed is not None:
                    out[ref] = packed
                    continue
            pending.setdefault(ref, []).append(ref)
        while pending:
            found: dict[Ref, bytes] = {}
            missing = yield from self._fetch_wave(list(pending), found)
            for place, data in found.items():
                for wanted in pending[place]:
                    out[wanted] = data
            lost = [(place, wanted) for place in missing for wanted in pending[place]]
            pending = {}
            for place, wanted in lost:
                if place.alt is None:
                    where = (
                        f"s3://{self.bucket_name}/{wanted.key}"
                        if wanted.kind == "s3"
                        else f"item {wanted.pk!r}/{wanted.key!r}"
                    )
                    raise MissingPayloadError(
                        f"stored payload {where} is missing ({len(lost)} missing in all); "
                        "the checkpoint refers to data that was deleted or never written"
                    )
                pending.setdefault(place.alt, []).append(wanted)
        return out

    def _fetch_wave(self, refs: list[Ref], out: dict[Ref, bytes]) -> Op[list[Ref]]:
        s3_refs = [r for r in refs if r.kind == "s3"]
        item_refs = [r for r in refs if r.kind != "s3"]
        if s3_refs and self.bucket_name is None:
            raise MissingPayloadError(
                f"checkpoint data is stored in S3 (key {s3_refs[0].key!r}) but this saver has "
                "no bucket_name configured"
            )
        # The driver refuses a body over the limit before reading it (its
        # ContentLength) and never reads more than limit + 1 bytes.
        calls: list[Call] = [
            Call(
                "s3",
                "get_object",
                {"Bucket": self.bucket_name, "Key": r.key},
                max_bytes=self.max_payload_size,
            )
            for r in s3_refs
        ]
        # One key per item, however many refs read it (a checkpoint item may
        # hold several channels' values); BatchGetItem refuses duplicates.
        by_key: dict[tuple[str, str], list[Ref]] = {}
        for r in item_refs:
            by_key.setdefault((r.pk, r.key), []).append(r)
        keys = [{ATTR.PK: {"S": pk}, ATTR.SK: {"S": sk}} for pk, sk in by_key]
        chunks = [keys[i : i + _requests.BATCH_GET_MAX] for i in range(0, len(keys), _requests.BATCH_GET_MAX)]
        calls += [
            ddb(
                "batch_get_item",
                RequestItems={self.table_name: {"Keys": chunk, "ConsistentRead": True}},
            )
            for chunk in chunks
        ]
        responses = yield Gather(calls, return_exceptions=True)
        missing: list[Ref] = []
        unprocessed: list[dict[str, Any]] = []
        for ref, resp in zip(s3_refs, responses[: len(s3_refs)], strict=True):
            if isinstance(resp, BaseException):
                if isinstance(resp, ClientError) and error_code(resp) in ("NoSuchKey", "404"):
                    missing.append(ref)
                    continue
                raise resp
            out[ref] = resp["Body"]

        def take(resp: dict[str, Any]) -> None:
            for it in resp.get("Responses", {}).get(self.table_name, []):
                _items.check_format(it)
                for r in by_key.get((it[ATTR.PK]["S"], it[ATTR.SK]["S"]), []):
                    if r.kind == "blob":
                        out[r] = _items.blob_bytes(it)
                    else:
                        packed = _items.held_value(it, r.channel)
                        if packed is not None:
                            out[r] = packed
            unprocessed.extend(resp.get("UnprocessedKeys", {}).get(self.table_name, {}).get("Keys", []))

        for resp in responses[len(s3_refs) :]:
            if isinstance(resp, BaseException):
                raise resp
            take(resp)
        attempt = 0
        while unprocessed:
            attempt += 1
            if attempt > 12:
                raise RuntimeError("BatchGetItem keys stayed unprocessed (table throttled?)")
            yield Sleep(_requests.backoff(attempt))
            batch, unprocessed = (
                unprocessed[: _requests.BATCH_GET_MAX],
                unprocessed[_requests.BATCH_GET_MAX :],
            )
            take(
                (
                    yield ddb(
                        "batch_get_item",
                        RequestItems={self.table_name: {"Keys": batch, "ConsistentRead": True}},
                    )
                )
            )
        missing.extend(r for r in item_refs if r not in out)
        return missing

    def _payload(self, av: AttributeValue, fetched: Mapping[Ref, bytes], where: str) -> bytes:
        if "B" in av:
            return cast(bytes, av["B"])
        if "M" in av and "s3" in av["M"]:
            return fetched[Ref("s3", av["M"]["s3"]["S"])]
        raise CorruptPayloadError(f"{where}: unrecognised payload attribute {sorted(av)}")

    def _decode_metadata(self, record: CheckpointRecord, fetched: Mapping[Ref, bytes]) -> CheckpointMetadata:
        where = f"metadata of checkpoint {record.checkpoint_id!r}"
        av = record.item.get(ATTR.METADATA)
        if av is None:
            raise CorruptPayloadError(f"{where}: attribute missing")
        md = self._unpack(self._payload(av, fetched, where), where)
        if not isinstance(md, dict):
            raise CorruptPayloadError(f"{where}: not a mapping")
        return cast(CheckpointMetadata, md)

    def _decode_records(
        self,
        records: list[CheckpointRecord],
        metadata: Mapping[int, CheckpointMetadata] | None = None,
        local: Iterable[CheckpointRecord] = (),
    ) -> Op[list[CheckpointTuple]]:
        refs: list[Ref] = []
        for r in records:
            with _items.malformed(f"checkpoint {r.checkpoint_id!r} of thread {r.thread_id!r}"):
                refs.extend(self._collect_refs(r))
        fetched = yield from self._fetch(refs, local=[*records, *local])
        out = []
        for r in records:
            with _items.malformed(f"checkpoint {r.checkpoint_id!r} of thread {r.thread_id!r}"):
                out.append(self._to_tuple(r, fetched, (metadata or {}).get(id(r))))
        return out

    def _to_tuple(
        self,
        record: CheckpointRecord,
        fetched: Mapping[Ref, bytes],
        metadata: CheckpointMetadata | None = None,
    ) -> CheckpointTuple:
        item = record.item
        cid = record.checkpoint_id
        pk = self._pk(record.thread_id)
        body_av = item.get(ATTR.BODY)
        if body_av is None:
            raise CorruptPayloadError(f"checkpoint {cid!r}: body attribute missing")
        checkpoint = self._unpack(
            self._payload(body_av, fetched, f"checkpoint {cid!r}"), f"checkpoint {cid!r}"
        )
        if not isinstance(checkpoint, dict):
            raise CorruptPayloadError(f"checkpoint {cid!r}: body is not a mapping")
        channel_values: dict[str, Any] = {}
        versions = checkpoint.get("channel_versions") or {}
        for channel, av in _items.map_attr(item, ATTR.VALUES, f"checkpoint {cid!r}").items():
            where = f"channel {channel!r} of checkpoint {cid!r}"
            placement: Placement
            if "B" in av:
                packed = av["B"]
                # Held here: later checkpoints copy it if small, else point here.
                placement = ("inline", packed) if len(packed) <= self.inline_threshold else ("c", cid)
            else:
                packed = fetched[self._value_ref_target(record, pk, channel, av)]
                loc = cast(Location, av["M"]["l"]["S"])
                placement = (loc, av["M"]["c"]["S"]) if loc == "c" else (loc, None)
            if channel in versions:
                self._remember(
                    (record.thread_id, record.checkpoint_ns, channel, str(versions[channel])), placement
                )
            channel_values[channel] = self._unpack(packed, where)
        checkpoint["channel_values"] = channel_values
        self._note_root(record.thread_id, record.checkpoint_ns, cid, _items.root_of(item, cid))
        if metadata is None:
            metadata = self._decode_metadata(record, fetched)
        counters = metadata.get("counters_since_delta_snapshot")
        if counters:
            if len(self._depth_hints) > 1024:
                self._depth_hints.clear()
            self._depth_hints[(record.thread_id, record.checkpoint_ns, cid)] = dict(counters)
        pending = self._decode_writes(record, fetched)
        parent = _items.str_attr(item, ATTR.PARENT_ID, f"checkpoint {cid!r}")
        conf = {
            "thread_id": record.thread_id,
            "checkpoint_ns": record.checkpoint_ns,
        }
        return CheckpointTuple(
            config={"configurable": {**conf, "checkpoint_id": cid}},
            checkpoint=cast(Checkpoint, checkpoint),
            metadata=metadata,
            parent_config={"configurable": {**conf, "checkpoint_id": parent}} if parent else None,
            pending_writes=pending,
        )

    def _decode_writes(self, record: CheckpointRecord, fetched: Mapping[Ref, bytes]) -> list[PendingWrite]:
        rows: list[tuple[tuple[str, str, int], PendingWrite]] = []
        for w in record.writes:
            task_id = w.get(ATTR.TASK_ID, {}).get("S", "")
            task_path = w.get(ATTR.TASK_PATH, {}).get("S", "")
            for name, av in w.items():
                if not _items.is_write_attr(name):
                    continue
                idx = int(name[len(ATTR.WRITE_PREFIX) :])
                channel = av["L"][0]["S"]
                where = f"write {channel!r} of task {task_id!r} on checkpoint {record.checkpoint_id!r}"
                value = self._unpack(self._payload(av["L"][1], fetched, where), where)
                rows.append((writes_sort_key(task_path, task_id, idx), (task_id, channel, value)))
        rows.sort(key=lambda r: r[0])
        return [r[1] for r in rows]

    # ----------------------------------------------------------------- list

    def _op_list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Op[None]:
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)):
            raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
        if limit is not None and limit <= 0:
            return
        if filter is not None and not isinstance(filter, Mapping):
            raise TypeError(f"filter must be a dict, got {type(filter).__name__}")
        before_id: str | None = None
        if before is not None:
            conf = before.get("configurable") if isinstance(before, Mapping) else None
            if not isinstance(conf, Mapping):
                raise TypeError(
                    "before must be a config like {'configurable': {'checkpoint_id': ...}}, "
                    f"got {type(before).__name__}"
                )
            before_id = conf.get("checkpoint_id")
        if config is None:
            yield from self._op_list_scan(filter=filter, before_id=before_id, limit=limit)
            return
        thread_id, _, cid = self._ids(config)
        conf = config.get("configurable") or {}
        ns: str | None = conf.get("checkpoint_ns") if "checkpoint_ns" in conf else None
        pk = self._pk(thread_id)
        if ns is None:
            # All namespaces of the thread: one item collection, read and
            # merged newest first (an administrative path, not a hot one).
            items = yield from _requests.query_all(
                TableName=self.table_name,
                KeyConditionExpression="#pk = :pk",
                ExpressionAttributeNames={"#pk": ATTR.PK},
                ExpressionAttributeValues={":pk": {"S": pk}},
                ConsistentRead=True,
            )
            records = _items.group_all(thread_id, items)
            records.sort(key=lambda r: r.checkpoint_id, reverse=True)
            yield from self._emit_records(records, cid=cid, filter=filter, before_id=before_id, limit=limit)
            return
        values: dict[str, AttributeValue] = {":pk": {"S": pk}}
        dead: set[str] | None = None
        if cid is not None or before_id:
            # This key range does not reach the tombstone: the head's dead roots.
            head = yield self._dead_roots_call(thread_id)
            dead = _items.head_roots(head.get("Item"))
        if cid is not None:
            cond = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
            values[":lo"] = {"S": schema.checkpoint_sk(ns, cid)}
            values[":hi"] = {"S": schema.checkpoint_range_end(ns, cid)}
        elif before_id:
            # ``before`` is only a bound on the id (it may name a checkpoint
            # of another namespace), never looked up.
            cond = "#pk = :pk AND #sk BETWEEN :lo AND :hi"
            values[":lo"] = {"S": schema.checkpoint_prefix(ns)}
            values[":hi"] = {"S": schema.checkpoint_sk(ns, before_id)}
        else:
            cond = "#pk = :pk AND begins_with(#sk, :lo)"
            values[":lo"] = {"S": schema.checkpoint_prefix(ns)}
        kwargs: dict[str, Any] = dict(
            TableName=self.table_name,
            KeyConditionExpression=cond,
            ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK},
            ExpressionAttributeValues=values,
            ScanIndexForward=False,
            ConsistentRead=True,
        )
        if limit is not None and not filter:
            kwargs["Limit"] = min(1000, limit * 4 + 8)
        remaining = limit
        writes: dict[str, list[Item]] = {}
        while True:
            resp = yield ddb("query", **kwargs)
            page: list[CheckpointRecord] = []
            for it in resp.get("Items", []):
                _items.check_format(it)
                item_ns, kind, item_cid, _ = _items.parse_sk(it)
                if kind == schema.TOMBSTONE_ITEM:
                    dead = _items.tomb_roots(it)  # sorts first in this descending Query
                elif kind == schema.WRITES_ITEM:
                    writes.setdefault(item_cid, []).append(it)
                elif kind == schema.CHECKPOINT_ITEM and not _items.is_dead(it, dead):
                    page.append(CheckpointRecord(thread_id, item_ns, item_cid, it, writes.pop(item_cid, [])))
            emitted = yield from self._emit_records(
                page, cid=cid, filter=filter, before_id=before_id, limit=remaining
            )
            if remaining is not None:
                remaining -= emitted
                if remaining <= 0:
                    return
            if "LastEvaluatedKey" not in resp:
                return
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def _op_list_scan(
        self, *, filter: dict[str, Any] | None, before_id: str | None, limit: int | None
    ) -> Op[None]:
        """``list(None)``: every thread. A table Scan, for tools, not for agents."""
        kwargs: dict[str, Any] = {"TableName": self.table_name, "ConsistentRead": True}
        items: list[Item] = []
        while True:
            resp = yield ddb("scan", **kwargs)
            items.extend(resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                break
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        by_thread: dict[str, list[Item]] = {}
        for it in items:
            by_thread.setdefault(it[ATTR.PK]["S"], []).append(it)
        records: list[CheckpointRecord] = []
        for pk, its in by_thread.items():
            thread_id = self._thread_from_pk(pk)
            if thread_id is not None:
                records.extend(_items.group_all(thread_id, its))
        records.sort(key=lambda r: r.checkpoint_id, reverse=True)
        yield from self._emit_records(records, cid=None, filter=filter, before_id=before_id, limit=limit)

    def _emit_records(
        self,
        records: list[CheckpointRecord],
        *,
        cid: str | None,
        filter: Mapping[str, Any] | None,
        before_id: str | None,
        limit: int | None,
    ) -> Op[int]:
        """Filter a page of records on metadata, then decode and emit the matches.

        Metadata is decoded first and bodies, values and writes only for the
        records that match, so a filtered list downloads no unneeded bodies.
        """
        selected = [
            r
            for r in records
            if (cid is None or r.checkpoint_id == cid) and (before_id is None or r.checkpoint_id < before_id)
        ]
        # A thread past its idle TTL is gone as a whole, even before the
        # reaper deletes it (checked only when a stamp says it may be).
        for thread_id in {r.thread_id for r in selected if _items.expired_stamp(r.item)}:
            alive = yield from self._thread_alive(thread_id)
            if not alive:
                selected = [r for r in selected if r.thread_id != thread_id]
        metadata: dict[int, CheckpointMetadata] = {}
        if filter:
            md_refs = []
            for r in selected:
                with _items.malformed(f"checkpoint {r.checkpoint_id!r} of thread {r.thread_id!r}"):
                    md_refs.extend(self._collect_refs(r, values=False))
            fetched_md = yield from self._fetch(md_refs)
            matched = []
            for r in selected:
                md = self._decode_metadata(r, fetched_md)
                if all(md.get(k, _MISSING) == v for k, v in filter.items()):
                    metadata[id(r)] = md
                    matched.append(r)
            selected = matched
        if limit is not None:
            selected = selected[:limit]
        if not selected:
            return 0
        # The whole page is local: a selected checkpoint may reference a
        # value held by one filtered out or past the limit.
        tuples = yield from self._decode_records(selected, metadata, local=records)
        for t in tuples:
            yield Emit(t)
        return len(tuples)

    # -------------------------------------------------------- delete_thread

    def _op_delete_thread(self, thread_id: str) -> Op[None]:
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError("thread_id must be a non-empty string")
        pk = self._pk(thread_id)
        items = yield from _requests.query_all(
            TableName=self.table_name,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK, "#rt": ATTR.ROOT, "#dr": ATTR.DEAD},
            ExpressionAttributeValues={":pk": {"S": pk}},
            ProjectionExpression="#pk, #sk, #rt, #dr",
            ConsistentRead=True,
        )
        # A thread id can be reused: forget where its old versions lived.
        for key in [k for k in list(self._placements) if k[0] == thread_id]:
            self._placements.pop(key, None)
        self._head_until.pop(thread_id, None)  # a new conversation writes a head again
        # Deletion is final: tombstones for every lineage deleted go first, so
        # a run still in flight that writes on one of them (or a delete that
        # fails part way) leaves nothing readable, and the head they retire
        # refuses to come back for those lineages.
        roots: dict[str, set[str]] = {}
        legacy: dict[str, list[str]] = {}
        tombstones: list[Item] = []
        doomed: list[Item] = []
        for it in items:
            ns, kind, cid, _ = _items.parse_sk(it)
            if kind == schema.TOMBSTONE_ITEM:
                tombstones.append(it)
                continue
            doomed.append(it)
            if kind == schema.CHECKPOINT_ITEM:
                rt = _items.str_attr(it, ATTR.ROOT, f"checkpoint {cid!r} of thread {thread_id!r}")
                if rt is None:
                    legacy.setdefault(ns, []).append(cid)
                else:
                    roots.setdefault(ns, set()).add(rt)
        for ns, ids in legacy.items():
            roots.setdefault(ns, set()).update(sorted(ids)[-schema.LEGACY_ROOTS_MAX :])
        if roots:
            yield from self._bury(thread_id, roots, tombstones, retire_head=True)
            # The retired head stays: it refuses the dead lineages (see _on_activity).
            doomed = [it for it in doomed if it[ATTR.SK]["S"] != schema.HEAD_SK]
        # Items first: once they are gone nothing points to the S3 objects.
        yield from _requests.ordered_deletes(self.table_name, doomed)
        if self.bucket_name is not None:
            yield from _requests.delete_s3_prefix(self.bucket_name, self._s3_thread(thread_id))

    def _bury(
        self, thread_id: str, roots: Mapping[str, set[str]], tombstones: Sequence[Item], *, retire_head: bool
    ) -> Op[None]:
        """Record deleted lineage roots: per-namespace tombstones and the thread head.

        Tombstones (``"<epoch>:<root>"`` entries) are what readers check. The
        head keeps the bare roots, so that ``_on_activity`` can refuse, in its
        own UpdateItem, to bring the head back for a deleted lineage;
        ``retire_head`` also takes it out of the threads index and drops its
        TTL (the thread is gone, not idle). Entries older than
        ``schema.FINALITY_WINDOW`` are forgotten here. Sets, updated with
        ADD/DELETE, so concurrent deletes never lose each other's entries.
        """
        pk = {"S": self._pk(thread_id)}
        now = int(clock.now())
        dead_here = {r for rs in roots.values() for r in rs}
        fresh = dead_here | {schema.ORPHAN_ROOT}
        calls: list[Call] = []
        for ns, rs in roots.items():
            if not rs:
                continue
            # Every tombstone lists the roots deleted in the whole thread, not
            # only its namespace's: a subgraph that a late run starts in this
            # namespace inherits an enclosing graph's (deleted) root, and the
            # latest read of this namespace only sees this tombstone.
            rs = dead_here
            calls.append(
                ddb(
                    "update_item",
                    TableName=self.table_name,
                    Key={ATTR.PK: pk, ATTR.SK: {"S": schema.tombstone_sk(ns)}},
                    UpdateExpression="SET #t = :t, #f = :f ADD #dr :dr",
                    ExpressionAttributeNames={"#t": ATTR.KIND, "#f": ATTR.FORMAT, "#dr": ATTR.DEAD},
                    ExpressionAttributeValues={
                        ":t": {"S": schema.TOMBSTONE_ITEM},
                        ":f": {"N": str(schema.TOMBSTONE_FORMAT_VERSION)},
                        ":dr": {"SS": sorted(f"{now}:{r}" for r in rs)},
                    },
                )
            )
        head_names = {"#t": ATTR.KIND, "#f": ATTR.FORMAT, "#dr": ATTR.DEAD}
        head_expr = "SET #t = :t, #f = if_not_exists(#f, :f) ADD #dr :dr"
        if retire_head:
            head_names.update({"#ts": ATTR.THREAD_SHARD, "#ua": ATTR.UPDATED_AT, "#ttl": ATTR.TTL})
            head_expr += " REMOVE #ts, #ua, #ttl"
        calls.append(
            ddb(
                "update_item",
                TableName=self.table_name,
                Key={ATTR.PK: pk, ATTR.SK: {"S": schema.HEAD_SK}},
                UpdateExpression=head_expr,
                ExpressionAttributeNames=head_names,
                ExpressionAttributeValues={
                    ":t": {"S": schema.META_ITEM},
                    ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
                    ":dr": {"SS": sorted(fresh)},
                },
            )
        )
        yield Gather(calls)
        # Forget old entries (a second wave: ADD and DELETE of one attribute
        # cannot share an update). A root still listed fresh anywhere stays.
        forget: list[Call] = []
        stale_roots: set[str] = set()
        for tomb in tombstones:
            old = [
                e for e in _items.dead_entries(tomb) if _items.entry_time(e) < now - schema.FINALITY_WINDOW
            ]
            if old:
                stale_roots.update(_items.entry_root(e) for e in old)
                forget.append(
                    ddb(
                        "update_item",
                        TableName=self.table_name,
                        Key={ATTR.PK: pk, ATTR.SK: tomb[ATTR.SK]},
                        UpdateExpression="DELETE #dr :dr",
                        ExpressionAttributeNames={"#dr": ATTR.DEAD},
                        ExpressionAttributeValues={":dr": {"SS": old}},
                    )
                )
        live_entries = {
            _items.entry_root(e)
            for tomb in tombstones
            for e in _items.dead_entries(tomb)
            if _items.entry_time(e) >= now - schema.FINALITY_WINDOW
        }
        stale_roots -= fresh | live_entries
        if stale_roots:
            forget.append(
                ddb(
                    "update_item",
                    TableName=self.table_name,
                    Key={ATTR.PK: pk, ATTR.SK: {"S": schema.HEAD_SK}},
                    UpdateExpression="DELETE #dr :dr",
                    ExpressionAttributeNames={"#dr": ATTR.DEAD},
                    ExpressionAttributeValues={":dr": {"SS": sorted(stale_roots)}},
                )
            )
        if forget:
            yield Gather(forget)

    # ------------------------------------------------------------ versions

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Versions as the built-in savers make them: ``"{n:032}.{random:016}"``.

        The random part keeps versions of forked branches from colliding.
        """
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"


# ---------------------------------------------------------------- helpers

_MISSING = object()


def _q(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")
