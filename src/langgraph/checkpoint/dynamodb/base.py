"""``BaseDynamoDBSaver``: what the sync and async savers share, with no I/O.

What lives here: settings and their checks, ids and keys (partition keys,
S3 keys, tenant views), the serializer and codec, the caches a saver keeps
(value placements, lineage roots, head TTLs, delta depth hints), ``setup``
and ``get_next_version``. The operations themselves are plain sans-I/O
functions in modules by concern (``write``, ``read``, ``history``,
``heads``, the ``_maintenance`` package); ``DynamoDBSaver`` and
``AsyncDynamoDBSaver`` run them with their driver (``drivers``).
"""

from __future__ import annotations

import copy
import inspect
import random
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Required, Self, TypedDict, cast

from botocore.exceptions import ClientError
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.aws import check_bucket_region, client_config, error_code
from langgraph.checkpoint.dynamodb._engine.methods import operation_of
from langgraph.checkpoint.dynamodb._engine.ops import Call, Op, Sleep, ddb, s3
from langgraph.checkpoint.dynamodb._engine.pacing import PATIENCE_SECONDS
from langgraph.checkpoint.dynamodb._parts.binding import Bind
from langgraph.checkpoint.dynamodb._parts.caches import Location, Placement, SaverCaches
from langgraph.checkpoint.dynamodb._parts.keys import ThreadKeys
from langgraph.checkpoint.dynamodb._parts.payloads import Payloads
from langgraph.checkpoint.dynamodb._parts.valuecache import DEFAULT_VALUE_CACHE_BYTES
from langgraph.checkpoint.dynamodb.codec import (
    DEFAULT_COMPRESSION,
    DEFAULT_MAX_PAYLOAD_OBJECTS,
    DEFAULT_MAX_PAYLOAD_SIZE,
    Compression,
    PayloadCodec,
)
from langgraph.checkpoint.dynamodb.config import SETTING, check_settings
from langgraph.checkpoint.dynamodb.serde import strict_serde

__all__ = [
    "BaseDynamoDBSaver",
    "Location",
    "Placement",
    "SaverSettings",
    "unguarded_writers",
]

#: Written-out saver methods that write past ``write_item`` (their async forms too).
_WRITTEN_UNGUARDED: Final = frozenset({"delete_thread"})


def unguarded_writers(saver_type: type) -> frozenset[str]:
    """The public methods of ``saver_type`` whose writes do not go through ``base.write_item``.

    They delete, copy or rewrite with many requests (``BatchWriteItem``, S3
    objects, other threads' items), so a write guard
    (:meth:`BaseDynamoDBSaver.with_write_guard`) never sees them, and a copy
    made with ``refuse_unguarded=True`` (a lease-bound saver) refuses them.
    Derived, not listed: every method made from an operation
    (``_engine.methods``: the maintenance verbs, ``copy_thread``, ``prune``,
    ``delete_for_runs``, the lifecycle jobs and their steps; the guarded
    ``put``/``put_writes`` are written out), and ``delete_thread``. A new verb
    is refused by a lease-bound saver without being named anywhere.

    Example:
        >>> from langgraph.checkpoint.dynamodb import DynamoDBSaver
        >>> {"prune", "aprune", "delete_thread"} <= unguarded_writers(DynamoDBSaver)
        True
    """
    verbs = {
        name.removeprefix("a") if name.startswith("a") and operation_of(method) is not None else name
        for name in dir(saver_type)
        if not name.startswith("_")
        and (
            name in _WRITTEN_UNGUARDED or operation_of(method := getattr(saver_type, name, None)) is not None
        )
    }
    # Both forms of each verb: LangGraph's base class gives a sync saver the
    # async names too (``aprune``, ``acopy_thread``...), and they are refused alike.
    return frozenset(form for verb in verbs for form in (verb, f"a{verb}") if hasattr(saver_type, form))


class SaverSettings(TypedDict, total=False):
    """The keyword settings both savers take, typed (``**settings`` of their constructors).

    Declared in ``config.SETTINGS`` (defaults, checks, variables); a unit test
    keeps this, ``BaseDynamoDBSaver.__init__`` and that table in step.
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
    throttle_patience_seconds: float


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
        throttle_patience_seconds: float = PATIENCE_SECONDS,
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
        # The checks of config.SETTINGS, each setting's own (named by it).
        check_settings(
            {name: value for name, value in locals().items() if name in SETTING and name != "self"}
        )
        self.table_name = table_name
        self.bucket_name = bucket_name
        #: Read encrypted payloads written without binding (see ``binding``); writes always bind.
        self.allow_unbound_ciphertext = allow_unbound_ciphertext is True
        self.inline_threshold = inline_threshold
        self.s3_threshold = s3_threshold
        self.codec = PayloadCodec(compression)
        #: Largest payload a read accepts, decompressed or as an S3 body: the
        #: bound on what one crafted item or object can make a reader allocate.
        self.max_payload_size = max_payload_size
        #: Most objects one payload may decode to, counted before decoding
        #: (``objects``): what bounds the memory decoding builds from those bytes.
        self.max_payload_objects = max_payload_objects
        #: The keys this saver gives its threads (partition keys, S3 keys, their checks).
        self.keys = ThreadKeys(
            tenant_prefix=tenant_prefix or "", s3_key_prefix=s3_key_prefix, has_bucket=bucket_name is not None
        )
        #: Idle time (seconds) after which a whole thread expires; None: never.
        self.ttl = ttl
        #: Maintain a thread head item (activity, TTL, the threads index).
        self.track_threads = bool(ttl) if track_threads is None else track_threads
        #: Reads count as activity too (off by default: reads stay read-only).
        self.touch_on_read = touch_on_read
        #: What this saver remembers between calls (hints only: see ``caches``).
        self.caches = SaverCaches(value_cache_bytes=value_cache_bytes)
        # Where and how the savers open their clients (they differ only in
        # the client library): botocore settings shared by both.
        self._region_name = region_name
        self._endpoint_url = endpoint_url
        #: What the savers' drivers are built with (``drivers.SyncDriver``/``AsyncDriver``):
        #: their bound on a ``Gather`` and how long a request waits out throttles (``pacing``).
        self._driver_settings: dict[str, Any] = {
            "max_concurrency": max_concurrency,
            "patience": float(throttle_patience_seconds),
        }
        self._client_config = client_config(
            retry_mode=retry_mode, max_attempts=max_attempts, max_pool_connections=max(max_concurrency, 10)
        )

    # ---------------------------------------------------------------- keys

    @property
    def tenant_prefix(self) -> str:
        """The tenant this saver's keys are under (``""``: none)."""
        return self.keys.tenant_prefix

    @property
    def s3_key_prefix(self) -> str:
        """The prefix of every S3 key this saver writes."""
        return self.keys.s3_key_prefix

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
        self.keys.check(thread_id, checkpoint_ns, checkpoint_id, task_id)

    def owner_of(self, partition_key: str) -> tuple[Self, str] | None:
        """``(saver, thread_id)`` that maintains the thread of a partition key; None for a non-thread key.

        Maintenance jobs (pruner, reaper, sweeper, ``delete_for_runs``) run
        with an untenanted saver over every partition; a tenant's thread is
        then worked on through :meth:`tenant_view`, so every key it derives
        (items, S3 objects) is the tenant's. A tenant's saver maintains its
        own threads only (None for another tenant's key).

        Example:
            >>> from langgraph.checkpoint.dynamodb import DynamoDBSaver
            >>> saver, thread = DynamoDBSaver(table_name="t").owner_of("acme#|t1")
            >>> saver.tenant_prefix, thread
            ('acme#', 't1')
        """
        parsed = schema.parse_partition_key(partition_key)
        if parsed is None:
            return None
        tenant, thread_id = parsed
        if tenant == self.tenant_prefix:
            return self, thread_id
        if self.tenant_prefix:
            return None
        return self.tenant_view(tenant), thread_id

    def tenant_view(self, tenant_prefix: str) -> Self:
        """This saver under ``tenant_prefix``: same clients, settings and driver; that tenant's keys.

        For operators and maintenance jobs that serve many tenants with one
        saver. The view borrows the saver's clients (closing it closes none
        of them). Its caches keyed by thread id are its own: two tenants may
        both have a thread ``"t1"``, and their placements, heads, delta
        hints and lineage roots must never mix. Views are kept (up to 1,024
        tenants), so asking again is cheap.

        Raises:
            ValueError: ``tenant_prefix`` is not a valid tenant prefix.

        Example:
            >>> from langgraph.checkpoint.dynamodb import DynamoDBSaver
            >>> DynamoDBSaver(table_name="t").tenant_view("acme#").partition_key("t1")
            'acme#|t1'
        """
        views: dict[str, Any] = self.__dict__.setdefault("_tenant_views", {})
        view = views.get(tenant_prefix)
        if view is None:
            schema.validate_tenant_prefix(tenant_prefix)
            view = self._borrowing_copy()
            view.keys = ThreadKeys(
                tenant_prefix=tenant_prefix,
                s3_key_prefix=self.s3_key_prefix,
                has_bucket=self.bucket_name is not None,
            )
            view.caches = self.caches.for_tenant()
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
        return self.keys.pk(thread_id)

    def thread_id_of(self, partition_key: str) -> str | None:
        """The thread id of a partition key; ``None`` for another tenant's or a non-thread key."""
        return self.keys.thread_id_of(partition_key)

    def s3_thread_prefix(self, thread_id: str) -> str:
        """The S3 key prefix of every object of a thread (no other thread's keys start with it)."""
        return self.keys.s3_thread_prefix(thread_id)

    def s3_thread_prefixes(self, thread_id: str) -> tuple[str, ...]:
        """Every S3 prefix the thread's objects may be under: ``s3_thread_prefix``, and for a
        thread id of over 200 bytes quoted the digested one its too-long keys use."""
        return self.keys.s3_thread_prefixes(thread_id)

    def value_s3_key(self, thread_id: str, checkpoint_ns: str, channel: str, version: str) -> str:
        """The S3 key a channel version has when it is stored (or re-homed) in S3."""
        return self.keys.value_s3_key(thread_id, checkpoint_ns, channel, version)

    # -------------------------------------------------------------- payloads

    @property
    def payloads(self) -> Payloads:
        """How this saver packs and unpacks what it stores (serde, sealing, bounds, compression)."""
        return Payloads(self)

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
        region = getattr(getattr(self._clients.get("s3"), "meta", None), "region_name", None)
        try:
            head = yield s3("head_bucket", Bucket=self.bucket_name)
        except ClientError as exc:
            if error_code(exc) not in ("404", "NoSuchBucket", "NotFound"):
                raise  # 403 / 301: translated to BucketUnusableError, naming doctor
            # Outside us-east-1, S3 refuses a CreateBucket that does not name the region.
            where: dict[str, Any] = {}
            if isinstance(region, str) and region not in ("", "us-east-1"):
                where["CreateBucketConfiguration"] = {"LocationConstraint": region}
            try:
                yield s3("create_bucket", Bucket=self.bucket_name, **where)
            except ClientError as exc2:
                if error_code(exc2) not in ("BucketAlreadyOwnedByYou",):
                    raise
            return
        check_bucket_region(self.bucket_name, head, region)

    # ---------------------------------------------------------------- writes

    #: Set on a guarded copy (:meth:`with_write_guard`); read through ``write_guard``.
    _write_guard: Callable[[Call], Op[Any]] | None = None

    @property
    def write_guard(self) -> Callable[[Call], Op[Any]] | None:
        """The guard this copy sends its checkpoint and pending-writes writes through, or None.

        See :meth:`with_write_guard`; ``put`` and ``put_writes`` send their
        one DynamoDB write with :func:`write_item`.
        """
        return self._write_guard

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
        return self.payloads.serialize(value, bind)

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
        return self.payloads.unpack(self.codec.pack(typed), where, bind)

    def with_write_guard(
        self,
        guard: Callable[[Call], Op[Any]],
        *,
        label: str = "Guarded",
        refuse_unguarded: bool = False,
    ) -> Self:
        """A copy of this saver whose checkpoint and pending-writes writes go through ``guard``.

        ``put`` and ``put_writes`` each land with one DynamoDB write;
        ``guard(call)`` is the operation (see ``ops``) that sends it in the
        copy, e.g. as a ``TransactWriteItems`` that also checks a lease
        (``lock.ThreadLease.bind``). Guarding a guarded copy replaces its
        guard. The copy shares this saver's clients, driver (thread pool)
        and caches, and closing it closes none of them. Its type is a
        subclass of the saver's, named ``<label><saver type>`` so that a
        repr says what guards it.

        The methods :func:`unguarded_writers` names (``delete_thread``,
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
            ns: dict[str, Any] = {"__slots__": (), "_unguarded": base}
            if refuse_unguarded:
                ns.update({name: _refusal(base, name) for name in sorted(unguarded_writers(base))})
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


def write_item(s: BaseDynamoDBSaver, call: Call) -> Op[Any]:
    """Send the one DynamoDB write that lands a checkpoint or a task's writes.

    ``put`` and ``put_writes`` send it through here: a guarded copy of the
    saver (:meth:`BaseDynamoDBSaver.with_write_guard`, which
    ``lock.ThreadLease.bind`` uses) sends it through its guard instead, to
    make that write conditional on still holding the thread's lease.
    """
    guard = s.write_guard
    if guard is None:
        return (yield call)
    return (yield from guard(call))


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
