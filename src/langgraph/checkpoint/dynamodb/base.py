"""``BaseDynamoDBSaver``: what the sync and async savers share, with no I/O.

What lives here: settings and their checks, ids and keys (partition keys,
S3 keys, tenant views), the serializer and codec, the caches a saver keeps
(value placements, lineage roots, head TTLs, delta depth hints), ``setup``
and ``get_next_version``. The operations themselves are plain sans-I/O
functions in modules by concern (``_write``, ``_read``, ``_history``,
``_maintain``, ``_deleting``, ``_heads``, ``_jobs``); ``DynamoDBSaver`` and
``AsyncDynamoDBSaver`` run them with their driver (``_driver``).
"""

from __future__ import annotations

import copy
import inspect
import random
import uuid
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, Required, Self, TypedDict, cast
from urllib.parse import quote

from botocore.exceptions import ClientError
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import _binding, _items, _objects, schema
from langgraph.checkpoint.dynamodb._aws import client_config, error_code
from langgraph.checkpoint.dynamodb._chains import ChainCache, LatestHint
from langgraph.checkpoint.dynamodb._items import Item
from langgraph.checkpoint.dynamodb._ops import Call, Op, Sleep, ddb, s3
from langgraph.checkpoint.dynamodb._valuecache import DEFAULT_VALUE_CACHE_BYTES, ValueCache
from langgraph.checkpoint.dynamodb.codec import (
    DEFAULT_COMPRESSION,
    DEFAULT_MAX_PAYLOAD_OBJECTS,
    DEFAULT_MAX_PAYLOAD_SIZE,
    Compression,
    PayloadCodec,
)
from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
    KeyTooLongError,
    PayloadTooLargeError,
)
from langgraph.checkpoint.dynamodb.lifecycle import PruneResult  # re-exported: it was public here
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.serde import RevivalError, strict_serde

__all__ = [
    "UNGUARDED_WRITERS",
    "BaseDynamoDBSaver",
    "Location",
    "Placement",
    "PruneResult",
    "SaverSettings",
]

#: Public saver methods (sync and async forms) whose writes do not go through
#: ``_write_item``: they delete, copy or rewrite with many requests
#: (``BatchWriteItem``, S3 objects, other threads' items), so a write guard
#: (:meth:`BaseDynamoDBSaver.with_write_guard`) never sees them. A copy made
#: with ``refuse_unguarded=True`` (a lease-bound saver) refuses them.
UNGUARDED_WRITERS: Final = frozenset(
    prefix + name
    for prefix in ("", "a")
    for name in (
        "delete_thread",
        "prune",
        "copy_thread",
        "delete_for_runs",
        "migrate_tenant_thread",
        "reap_thread",
        "reap_expired_stream",
        "purge_expired",
        "run_pruner",
        "sweep_orphans",
        "copy_thread_step",
        "prune_step",
        "delete_for_runs_step",
    )
)

#: Where a channel version lives: copied into every checkpoint item that has
#: it (``inline``), in the item of the checkpoint that introduced it (``c``),
#: in its own blob item, or in S3.
Location = Literal["inline", "c", "blob", "s3"]
#: A remembered placement: the location; the packed bytes of an inline value
#: or the id of the checkpoint holding a ``c`` value; and the write tag an
#: ``s3`` or ``c`` reference carries (``""``: none; see ``_valuecache``).
Placement = tuple[Location, bytes | str | None, str]
#: Where a payload belongs: (thread id, place; see ``_binding``). An encrypting
#: saver seals it there, and a read elsewhere raises ``CiphertextBindingError``.
Bind = tuple[str, _binding.Place]

#: Channel versions whose placement a saver remembers (inline ones with
#: their bytes, at most ``inline_threshold`` each).
#: A pending write's S3 key ends in a random suffix of this many characters (see _placement).
_S3_SUFFIX_CHARS: Final = 32
PLACEMENT_CACHE_MAX = 4096


class SaverSettings(TypedDict, total=False):
    """The keyword settings both savers take, typed (``**settings`` of their constructors).

    Defaults and checks are ``BaseDynamoDBSaver.__init__``'s; a unit test keeps
    the two in step.
    """

    table_name: Required[str]
    bucket_name: str | None
    region_name: str | None
    endpoint_url: str | None
    serde: SerializerProtocol | None
    allow_unsafe_serde: bool
    allow_unbound_ciphertext: bool
    s3_key_prefix: str
    inline_threshold: int
    s3_threshold: int
    compression: Compression
    tenant_prefix: str | None
    ttl: int | None
    track_threads: bool | None
    touch_on_read: bool
    retry_mode: str
    max_attempts: int
    max_concurrency: int
    max_payload_size: int
    max_payload_objects: int
    value_cache_bytes: int


class BaseDynamoDBSaver(BaseCheckpointSaver[str]):
    """Shared configuration and state of the sync and async DynamoDB savers.

    Not used directly: use :class:`~langgraph.checkpoint.dynamodb.DynamoDBSaver`
    or :class:`~langgraph.checkpoint.dynamodb.AsyncDynamoDBSaver`, which run
    the operations of the modules named above on this state.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb import DynamoDBSaver

        saver = DynamoDBSaver(table_name="checkpoints", tenant_prefix="acme")
        saver.partition_key("t-1")  # "acme|t-1": where the thread's items live
        ```
    """

    def __init__(
        self,
        *,
        table_name: str,
        bucket_name: str | None = None,
        region_name: str | None = None,
        endpoint_url: str | None = None,
        serde: SerializerProtocol | None = None,
        allow_unsafe_serde: bool = False,
        allow_unbound_ciphertext: bool = False,
        s3_key_prefix: str = "checkpoints/",
        inline_threshold: int = 4 * 1024,
        s3_threshold: int = 64 * 1024,
        compression: Compression = DEFAULT_COMPRESSION,
        tenant_prefix: str | None = None,
        ttl: int | None = None,
        track_threads: bool | None = None,
        touch_on_read: bool = False,
        retry_mode: str = "standard",
        max_attempts: int = 8,
        max_concurrency: int = 16,
        max_payload_size: int = DEFAULT_MAX_PAYLOAD_SIZE,
        max_payload_objects: int = DEFAULT_MAX_PAYLOAD_OBJECTS,
        value_cache_bytes: int = DEFAULT_VALUE_CACHE_BYTES,
    ) -> None:
        """The settings both savers share (see ``DynamoDBSaver`` for each one); the one place they are declared."""
        # By default a stored value may rebuild LangGraph's safe types and the
        # data classes (pydantic, dataclass, enum...) this process has imported,
        # and call nothing else, so a party who can write to the table or bucket
        # cannot make a reader import and call arbitrary code (see serde.py).
        # A given serializer that would (LangGraph's permissive JsonPlusSerializer,
        # which EncryptedSerializer wraps by default) is made strict or refused,
        # unless allow_unsafe_serde says, by name, to keep it.
        super().__init__(serde=strict_serde(serde, allow_unsafe=allow_unsafe_serde is True))
        if tenant_prefix is not None:
            schema.validate_tenant_prefix(tenant_prefix)
        schema.validate_s3_key_prefix(s3_key_prefix)
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
        if (
            not isinstance(max_payload_objects, int)
            or isinstance(max_payload_objects, bool)
            or max_payload_objects < 1
        ):
            raise ValueError(f"max_payload_objects must be a whole number >= 1, got {max_payload_objects!r}")
        self.table_name = table_name
        self.bucket_name = bucket_name
        #: Read encrypted payloads written without binding (see ``_binding``); writes always bind.
        self.allow_unbound_ciphertext = allow_unbound_ciphertext is True
        self.s3_key_prefix = s3_key_prefix
        self.inline_threshold = inline_threshold
        self.s3_threshold = s3_threshold
        self.codec = PayloadCodec(compression)
        #: Largest payload a read accepts, decompressed or as an S3 body: the
        #: bound on what one crafted item or object can make a reader allocate.
        self.max_payload_size = max_payload_size
        #: Most objects one payload may decode to, counted before decoding
        #: (``_objects``): what bounds the memory decoding builds from those bytes.
        self.max_payload_objects = max_payload_objects
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
        # (thread, ns) -> the root this saver last wrote or read there: the
        # lineage a subgraph belongs to when its enclosing checkpoint's own
        # put is still in flight (durability="async"), see _placement.root_for.
        self._last_roots: dict[tuple[str, str], str] = {}
        # (pk, ns, checkpoint id) -> checkpoint records read before, for delta
        # history walks (see _chains). Keyed by partition key, so tenant views
        # may share it.
        self._chain_cache = ChainCache()
        # (bucket, S3 key, write tag) -> packed bytes of S3-stored values this
        # saver wrote or read: the next turn's read of a large state is served
        # without a GET (see _valuecache). Keyed by the full S3 key, so tenant
        # views may share it.
        self._value_cache = ValueCache(value_cache_bytes)
        # (pk, ns) -> what this saver last knew of the latest checkpoint (its
        # put, put_writes and reads): sizes the next latest-checkpoint Query
        # (see _read.latest_limit). Only a sizing hint.
        self._latest_pages: dict[tuple[str, str], LatestHint] = {}
        # Where and how the savers open their clients (they differ only in
        # the client library): botocore settings shared by both.
        self._region_name = region_name
        self._endpoint_url = endpoint_url
        self._max_concurrency = max_concurrency
        self._client_config = client_config(
            retry_mode=retry_mode, max_attempts=max_attempts, max_pool_connections=max(max_concurrency, 10)
        )

    # ------------------------------------------------------------------ ids

    def _ids(
        self, config: RunnableConfig, *, need_checkpoint_id: bool = False
    ) -> tuple[str, str, str | None]:
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
        self._check_keys(thread_id, ns, cid)
        return thread_id, ns, cid

    def check_ids(
        self, thread_id: str, checkpoint_ns: str = "", checkpoint_id: str | None = None, task_id: str = ""
    ) -> None:
        """Refuse ids this store cannot key, before anything is written.

        Raises:
            KeyTooLongError: the thread id passes the partition key's 2,048 bytes (with
                the tenant prefix), another id passes ``schema.MAX_ID_BYTES`` (16 KB), or
                the S3 key prefix and tenant leave an object key no room. Shorter ids
                that do not fit a key whole are digested there (``schema.fit``).
            ValueError: an id is not valid Unicode, or takes a range the store reserves.

        Example:
            ```python
            saver.check_ids("t-1", "", "1ef...")  # None: every id can be stored
            ```
        """
        self._check_keys(thread_id, checkpoint_ns, checkpoint_id, task_id)

    def _check_keys(self, thread_id: str, ns: str, cid: str | None, task_id: str = "") -> None:
        for name, value in (
            ("thread_id", thread_id),
            ("checkpoint_ns", ns),
            ("checkpoint_id", cid or ""),
            ("task_id", task_id),
        ):
            try:
                size = len(value.encode())
            except UnicodeEncodeError:
                raise ValueError(f"{name} is not valid Unicode (lone surrogate?): {value!r}") from None
            if size > schema.MAX_ID_BYTES:
                raise KeyTooLongError(
                    f"{name} is {size} bytes once encoded; this store takes ids of up to "
                    f"{schema.MAX_ID_BYTES} bytes (longer key parts are digested, the whole id kept in the item)"
                )
        if cid is not None and cid.startswith(schema.TOMBSTONE_MARK):
            # That key range is the tombstone's (see schema.tombstone_sk).
            raise ValueError("checkpoint_id must not start with U+10FFFF")
        # The partition key as stored: under the tenant prefix. The thread id is the
        # one id kept whole in a key (tools and IAM's LeadingKeys read it there).
        pk_len = len(self._pk(thread_id).encode())
        if pk_len > schema.MAX_PK_BYTES:
            raise KeyTooLongError(
                f"thread_id is {pk_len} bytes once encoded (with the tenant prefix); DynamoDB allows "
                f"{schema.MAX_PK_BYTES} bytes in a partition key"
            )
        if self.bucket_name is not None:
            # The longest object key these ids make: a pending write's (see _placement.write_to_s3).
            key = self._write_s3_prefix(thread_id, ns, cid or "0" * 36, task_id or "0" * 36, "-999")
            self._check_s3_key(key + "0" * _S3_SUFFIX_CHARS)

    def _check_value_keys(
        self, thread_id: str, ns: str, channel: str, version: str, *, keyed: bool = True
    ) -> None:
        """Refuse a channel or version too long to store (their keys are digested to fit).

        ``keyed``: the value is stored under its own key (a blob item or an S3
        object), whose length is checked too.
        """
        for name, value in (("channel", channel), ("version", version)):
            try:
                size = len(value.encode())
            except UnicodeEncodeError:
                raise ValueError(f"{name} is not valid Unicode (lone surrogate?): {value[:80]!r}") from None
            if size > schema.MAX_ID_BYTES:
                raise KeyTooLongError(
                    f"{name} {value[:80]!r} is {size} bytes once encoded; this store takes up to "
                    f"{schema.MAX_ID_BYTES}"
                )
        if keyed and self.bucket_name is not None:
            self._check_s3_key(self._value_s3_key(thread_id, ns, channel, version))

    def _check_s3_key(self, key: str) -> None:
        if len(key.encode()) > schema.MAX_S3_KEY_BYTES:
            raise KeyTooLongError(
                f"an S3 key of this thread would be {len(key.encode())} bytes even with its ids digested; "
                f"S3 allows {schema.MAX_S3_KEY_BYTES}: s3_key_prefix and tenant_prefix take "
                f"{len(self._s3_root().encode())} bytes of it (keep them under 400 together)"
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

        It borrows the saver's clients (closing it closes none of them). Its
        caches keyed by thread id are its own: two tenants may both have
        a thread ``"t1"``, and their placements, heads, delta hints and
        lineage roots must never mix.
        """
        views: dict[str, Any] = self.__dict__.setdefault("_tenant_views", {})
        view = views.get(tenant_prefix)
        if view is None:
            schema.validate_tenant_prefix(tenant_prefix)
            view = self._borrowing_copy()
            view.tenant_prefix = tenant_prefix
            view._head_until = {}
            view._depth_hints = {}
            view._placements = {}
            view._roots = {}
            view._last_roots = {}
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
            >>> from langgraph.checkpoint.dynamodb import DynamoDBSaver
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

    def s3_thread_prefixes(self, thread_id: str) -> tuple[str, ...]:
        """Every S3 prefix the thread's objects may be under: ``s3_thread_prefix``, and for a
        thread id of over 200 bytes quoted the digested one its too-long keys use."""
        return self._s3_thread_prefixes(thread_id)

    def value_s3_key(self, thread_id: str, checkpoint_ns: str, channel: str, version: str) -> str:
        """The S3 key a channel version has when it is stored (or re-homed) in S3."""
        return self._value_s3_key(thread_id, checkpoint_ns, channel, version)

    # -------------------------------------------------------------- payloads

    def _s3_root(self) -> str:
        """The key prefix every object of this saver's threads starts with (its tenant's)."""
        if self.tenant_prefix:
            return schema.tenant_s3_prefix(self.s3_key_prefix, self.tenant_prefix)
        return self.s3_key_prefix

    def _s3_key(self, thread_id: str, ns: str, *rest: tuple[str, str, int], reserve: int = 0) -> str:
        """An object key of a thread's namespace (see ``schema.s3_object_key``)."""
        segments = [
            (quote(thread_id, safe=""), thread_id, schema.S3_THREAD_ROOM),
            (f"_{quote(ns, safe='')}", ns, schema.S3_NS_ROOM),
            *rest,
        ]
        return schema.s3_object_key(self._s3_root(), segments, reserve)

    def _checkpoint_s3_key(self, thread_id: str, ns: str, cid: str, leaf: str) -> str:
        """The key of a checkpoint's ``body`` or ``metadata`` object."""
        cid_segment = (schema.s3_segment(cid), cid, schema.S3_ID_ROOM)
        return self._s3_key(thread_id, ns, ("c", "", 0), cid_segment, (leaf, "", 0))

    def _write_s3_prefix(self, thread_id: str, ns: str, cid: str, task_id: str, idx: str) -> str:
        """A pending write's key up to its random suffix (``_S3_SUFFIX_CHARS`` more)."""
        return self._s3_key(
            thread_id,
            ns,
            ("c", "", 0),
            (schema.s3_segment(cid), cid, schema.S3_ID_ROOM),
            ("w", "", 0),
            (schema.s3_segment(task_id), task_id, schema.S3_ID_ROOM),
            (f"{idx}.", "", 0),
            reserve=_S3_SUFFIX_CHARS,
        )

    def _value_s3_key(self, thread_id: str, ns: str, channel: str, version: str) -> str:
        return self._s3_key(
            thread_id,
            ns,
            ("v", "", 0),
            (quote(channel, safe=""), channel, schema.S3_CHANNEL_ROOM),
            (quote(version, safe=""), version, schema.S3_ID_ROOM),
        )

    def _s3_thread_prefixes(self, thread_id: str) -> tuple[str, ...]:
        """Every prefix the thread's objects may be under (two for a long thread id)."""
        return schema.s3_thread_prefixes(self.s3_key_prefix, thread_id, self.tenant_prefix)

    def _own_s3_key(self, thread_id: str, item: Item, attr: str) -> tuple[str, bool] | None:
        """The S3 key a pointer in ``item[attr]`` must have, derived from the item's identity.

        ``(key, True)``: exactly that key (body, metadata); ``(prefix,
        False)``: a key under that prefix (a pending write's key ends with a
        random suffix, see ``_write_to_s3``). ``None``: this attribute of
        this kind of item never holds a pointer.
        """
        ns, kind, cid, task_id = _items.parse_sk(item)
        if kind == schema.CHECKPOINT_ITEM and attr == ATTR.BODY:
            return self._checkpoint_s3_key(thread_id, ns, cid, "body"), True
        if kind == schema.CHECKPOINT_ITEM and attr == ATTR.METADATA:
            return self._checkpoint_s3_key(thread_id, ns, cid, "metadata"), True
        if kind == schema.WRITES_ITEM and _items.is_write_attr(attr):
            idx = attr[len(ATTR.WRITE_PREFIX) :]
            return self._write_s3_prefix(thread_id, ns, cid, task_id or "", idx), False
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

    @property
    def _seals(self) -> bool:
        """Whether payloads are encrypted, and so sealed to where they belong (``_binding``)."""
        return isinstance(self.serde, EncryptedSerializer)

    def _serialize(self, value: Any, bind: Bind) -> tuple[str, bytes]:
        """``value`` serialized, and encrypted sealed to ``bind`` (thread id, place) if the saver encrypts."""
        serde = self.serde
        if isinstance(serde, EncryptedSerializer):
            thread_id, place = bind
            inner = serde.serde.dumps_typed(value)
            self._check_objects(inner, bind)
            return _binding.seal_serialized(
                serde, inner, _binding.thread_digest(self.tenant_prefix, thread_id), place
            )
        typed = serde.dumps_typed(value)
        self._check_objects(typed, bind)
        return typed

    def _check_objects(self, typed: tuple[str, bytes], bind: Bind) -> None:
        """Refuse to write what a reader would refuse to decode (``max_payload_objects``)."""
        limit = self.max_payload_objects
        if len(typed[1]) > limit and _objects.count_objects(typed[0], typed[1], limit) > limit:
            raise PayloadTooLargeError(
                f"a {bind[1][0]} of thread {bind[0]!r} serializes to more than max_payload_objects "
                f"({limit:,} objects), the most a reader decodes; nothing was written. If it is "
                "legitimate, raise max_payload_objects on every saver that reads this thread"
            )

    def _pack(self, value: Any, where: str, bind: Bind) -> bytes:
        """``value`` serialized, encrypted (sealed to ``bind``: thread id, place) and compressed."""
        typed = self._serialize(value, bind)
        if len(typed[1]) > self.max_payload_size:
            # Readers refuse a payload over the limit (``_unpack``): stored, it
            # would leave the thread's latest checkpoint unreadable, so a
            # resume fails long after the write that caused it. Refused here,
            # the previous checkpoint stays the thread's latest.
            raise PayloadTooLargeError(
                f"{where} serializes to {len(typed[1]):,} bytes, more than max_payload_size "
                f"({self.max_payload_size:,} bytes), the most a reader accepts; nothing was written. "
                "If it is legitimate, raise max_payload_size on every saver that reads this thread"
            )
        return self.codec.pack(typed)

    def _unpack(self, packed: bytes, where: str, bind: Bind) -> Any:
        """The value of a stored payload read at ``bind`` (thread id, place), under the saver's policy."""
        typed = self.codec.unpack(packed, where=where, max_size=self.max_payload_size)
        serde: SerializerProtocol = self.serde
        if isinstance(serde, EncryptedSerializer):
            thread_id, place = bind
            typed = _binding.open_sealed(
                serde,
                typed,
                _binding.thread_digest(self.tenant_prefix, thread_id),
                place,
                where=where,
                allow_unbound=self.allow_unbound_ciphertext,
            )
            serde = serde.serde
        _objects.check_objects(typed, self.max_payload_objects, where)
        try:
            return serde.loads_typed(typed)
        except RevivalError as exc:  # ours: names a type and the fix, never data
            raise CorruptPayloadError(f"{where}: cannot deserialize payload: {exc}") from exc
        except Exception as exc:
            # Another serializer's message may quote the (decrypted) payload: its type only.
            raise CorruptPayloadError(
                f"{where}: cannot deserialize payload ({type(exc).__name__}, {len(typed[1]):,} bytes)"
            ) from None

    def _rebind(self, packed: bytes, source: tuple[str, str], target: tuple[str, str], where: str) -> bytes:
        """A stored payload of thread ``source`` (tenant, id) sealed for ``target`` instead (copies).

        Unchanged where the saver does not encrypt. Nothing is deserialized.
        """
        serde = self.serde
        if not isinstance(serde, EncryptedSerializer):
            return packed
        typed = self.codec.unpack(packed, where=where, max_size=self.max_payload_size)
        out = _binding.rebind(
            serde,
            typed,
            _binding.thread_digest(*source),
            _binding.thread_digest(*target),
            where=where,
            allow_unbound=self.allow_unbound_ciphertext,
        )
        return packed if out is typed else self.codec.pack(out)

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
            # Outside us-east-1, S3 refuses a CreateBucket that does not name the region.
            region = getattr(getattr(self._clients.get("s3"), "meta", None), "region_name", None)
            where: dict[str, Any] = {}
            if isinstance(region, str) and region not in ("", "us-east-1"):
                where["CreateBucketConfiguration"] = {"LocationConstraint": region}
            try:
                yield s3("create_bucket", Bucket=self.bucket_name, **where)
            except ClientError as exc2:
                if error_code(exc2) not in ("BucketAlreadyOwnedByYou",):
                    raise

    # ---------------------------------------------------------------- writes

    def _write_item(self, call: Call) -> Op[Any]:
        """Send the one DynamoDB write that lands a checkpoint or a task's writes.

        A guarded copy of the saver (``BaseDynamoDBSaver.with_write_guard``, which
        ``lock.ThreadLease.bind`` uses) replaces it, to make that write conditional
        on still holding the thread's lease.
        """
        return (yield call)

    def _note_root(self, thread_id: str, ns: str, cid: str, root: str) -> None:
        if len(self._roots) > PLACEMENT_CACHE_MAX:
            self._roots.clear()  # a hint cache: a miss costs one GetItem
            self._last_roots.clear()
        self._roots[(thread_id, ns, cid)] = root
        self._last_roots[(thread_id, ns)] = root

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

    # --------------------------------------------------------------- public

    #: Service name (``"dynamodb"``, ``"s3"``) -> client; set by the savers.
    _clients: dict[str, Any]

    @property
    def clients(self) -> Mapping[str, Any]:
        """The saver's clients by service, ``"dynamodb"`` and ``"s3"`` (read-only view).

        A client is ``None`` until there is one: no bucket means no S3
        client, and the async saver opens its clients on first use (or on
        entering it). The view follows the saver: it shows clients opened
        or closed later.

        Example:
            ```python
            saver = DynamoDBSaver(table_name="checkpoints")
            saver.clients["dynamodb"].describe_table(TableName=saver.table_name)
            ```
        """
        return MappingProxyType(self._clients)

    def dump_payload(self, value: Any, *, where: str, bind: Bind) -> tuple[str, bytes]:
        """``value`` in its serde form ``(type, bytes)``, for a record kept outside checkpoints.

        Encrypted and sealed to ``bind`` (thread id, place: any tuple of
        strings naming the record in its thread) when the saver encrypts, so
        that :meth:`load_payload` with the same ``bind`` is the only read
        that accepts it. ``where`` names the value in errors.

        Example:
            ```python
            typed = saver.dump_payload({"ok": True}, where="my record", bind=("t-1", ("my", "r1")))
            assert saver.load_payload(typed, where="my record", bind=("t-1", ("my", "r1"))) == {"ok": True}
            ```
        """
        del where  # named for symmetry with load_payload; serializing raises the serde's own errors
        return self._serialize(value, bind)

    def load_payload(self, typed: tuple[str, bytes], *, where: str, bind: Bind) -> Any:
        """A value from its serde form ``(type, bytes)``, checked as every stored payload is.

        For values kept outside checkpoints (the lock's stored results),
        written by :meth:`dump_payload` with the same ``bind``: the same
        policy as a checkpoint read (strict msgpack, ``max_payload_size``, no
        plaintext where the saver encrypts, and a ciphertext sealed for
        another thread or record is refused), so a forged item fails with
        ``CorruptPayloadError`` naming ``where``.

        Example:
            ```python
            typed = saver.dump_payload({"ok": True}, where="my record", bind=("t-1", ("my", "r1")))
            assert saver.load_payload(typed, where="my record", bind=("t-1", ("my", "r1"))) == {"ok": True}
            ```
        """
        return self._unpack(self.codec.pack(typed), where, bind)

    def with_write_guard(
        self,
        guard: Callable[[Call], Op[Any]],
        *,
        label: str = "Guarded",
        refuse_unguarded: bool = False,
    ) -> Self:
        """A copy of this saver whose checkpoint and pending-writes writes go through ``guard``.

        ``put`` and ``put_writes`` each land with one DynamoDB write;
        ``guard(call)`` is the operation (see ``_ops``) that sends it in the
        copy, e.g. as a ``TransactWriteItems`` that also checks a lease
        (``lock.ThreadLease.bind``). Guarding a guarded copy replaces its
        guard. The copy shares this saver's clients, driver (thread pool)
        and caches, and closing it closes none of them. Its type is a
        subclass of the saver's, named ``<label><saver type>`` so that a
        repr says what guards it.

        The methods in :data:`UNGUARDED_WRITERS` (``delete_thread``,
        ``prune``, ``copy_thread``, ``delete_for_runs``, the lifecycle jobs
        and their async forms) write with many requests (batches, S3
        objects, other threads) that never pass through ``guard``. By
        default the copy runs them as the saver does; with
        ``refuse_unguarded=True`` it raises ``NotImplementedError`` instead,
        naming the saver to call them on (a lease-bound saver does this:
        its guard is a promise about every write).

        Example:
            ```python
            def audited(call):
                log.info("write %s", call.method)
                return (yield call)

            graph.copy({"checkpointer": saver.with_write_guard(audited)}).invoke(None, config)
            ```
        """
        base: type = getattr(type(self), "_unguarded", type(self))
        key = (base, label, refuse_unguarded)
        cls = _GUARDED_TYPES.get(key)
        if cls is None:
            # A direct subclass with no slots of its own: an instance of the
            # saver's type can switch to it (a mixin base would change the layout).
            ns: dict[str, Any] = {"__slots__": (), "_write_item": _guarded_write_item, "_unguarded": base}
            if refuse_unguarded:
                ns.update(
                    {name: _refusal(base, name) for name in sorted(UNGUARDED_WRITERS) if hasattr(base, name)}
                )
            cls = _GUARDED_TYPES.setdefault(key, type(f"{label}{base.__name__}", (base,), ns))
        guarded: Any = self._borrowing_copy()
        guarded.__class__ = cls
        guarded._write_guard = guard
        return cast(Self, guarded)

    def _borrowing_copy(self) -> Self:
        """A shallow copy that uses this saver's clients and driver, and never closes them.

        The copies a saver hands out (tenant views, guarded copies) share its
        clients; only the saver that opened them may close them. Closing a
        copy closes nothing, and a copy opens clients through its origin (the
        driver's holder), so they are always the origin's to close.
        """
        twin: Any = copy.copy(self)
        for name, empty in (("_owned", []), ("_owned_names", set()), ("_stack", None)):
            if hasattr(twin, name):
                setattr(twin, name, empty)
        return cast(Self, twin)


def _guarded_write_item(self: Any, call: Call) -> Op[Any]:
    """``_write_item`` of a guarded copy (:meth:`BaseDynamoDBSaver.with_write_guard`)."""
    return (yield from self._write_guard(call))


def _refusal(base: type, name: str) -> Callable[..., Any]:
    """A method of a guarded copy that refuses ``name`` (see ``with_write_guard(refuse_unguarded=True)``)."""

    def message(self: Any) -> str:
        return (
            f"{type(self).__name__}.{name}() is refused: every write of this copy must pass its write "
            f"guard, and {name} writes or deletes with many requests (batches, S3 objects, other "
            "threads) that the guard cannot check; a lease-bound saver whose lease was lost could "
            "delete the new holder's work. Call it on the unbound saver (the one the copy was made "
            "from: ThreadLease.bind(saver) or with_write_guard), holding the lease if it must not "
            "overlap a run"
        )

    method: Callable[..., Any]
    if inspect.iscoroutinefunction(getattr(base, name)):

        async def refuse_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(message(self))

        method = refuse_async
    else:

        def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(message(self))

        method = refuse
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Refused on this guarded copy: call ``{name}`` on the saver it was made from."
    return method


_GUARDED_TYPES: dict[tuple[type, str, bool], type] = {}
