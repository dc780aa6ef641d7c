"""Records: what lock items and request records hold, and the values callers get back.

Rule: the shapes of the lock package's items and results, and pure functions
over them (keys, parsing an item, the condition that an item is unchanged,
validation). No I/O: the requests that read and write these items are in
``_operations``. Attribute names are ``schema.ATTR``'s.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeGuard, TypeVar

from langgraph.checkpoint.dynamodb import clock as _clock
from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._parts.binding import result_place
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError
from langgraph.checkpoint.dynamodb.lock._errors import ResultNotStoredError
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = [
    "ANY_CHECKPOINT",
    "DEFAULT_MAX_RESULT_BYTES",
    "HARD_MAX_RESULT_BYTES",
    "REQUEST_ID_METADATA_KEY",
    "STATUS_DONE",
    "STATUS_FAILED",
    "STATUS_RUNNING",
    "AnyCheckpoint",
    "ExpectedCheckpoint",
    "Fence",
    "LeaseInfo",
    "RequestRecord",
    "RunContext",
    "RunOutcome",
    "Taken",
    "Where",
    "check_limits",
    "expected_marker",
    "held_ms",
    "is_done",
    "is_recovery",
    "lease_info",
    "lock_key",
    "now_ms",
    "partition_key_of",
    "request_key",
    "request_record",
    "serialize_result",
    "stored_result",
    "validate_ids",
    "version_of",
    "wall_now",
    "wants_context",
]

T = TypeVar("T")

#: Results above this many serialized bytes are not stored by default: the
#: request is still marked done, but a repeat raises ResultNotStoredError.
#: A DynamoDB item holds at most 400 KB, names and other attributes included.
DEFAULT_MAX_RESULT_BYTES: Final = 64 * 1024
#: The largest ``max_result_bytes`` accepted (leaves room for the rest of the item).
HARD_MAX_RESULT_BYTES: Final = 350 * 1024

STATUS_RUNNING: Final = "running"
STATUS_DONE: Final = "done"
STATUS_FAILED: Final = "failed"

#: Key of the request id in ``RunContext.config()["metadata"]``; LangGraph
#: copies config metadata into every checkpoint the run writes.
REQUEST_ID_METADATA_KEY: Final = "request_id"


class AnyCheckpoint:
    """Sentinel type of :data:`ANY_CHECKPOINT`."""

    _instance: AnyCheckpoint | None = None

    def __new__(cls) -> AnyCheckpoint:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ANY_CHECKPOINT"


#: Pass as ``expected_checkpoint_id`` to skip the staleness check. ``None``
#: means "the thread must have no checkpoint yet" (a first request).
ANY_CHECKPOINT: Final = AnyCheckpoint()

ExpectedCheckpoint = str | None | AnyCheckpoint


# ------------------------------------------------------------- what callers get


@dataclass(frozen=True, slots=True)
class LeaseInfo:
    """A lease as last written by its owner.

    Attributes:
        thread_id: the locked thread.
        owner: the owner token.
        expires_at: lease expiry, epoch seconds by the holder's clock (for
            display: other processes never trust it, see :class:`ThreadLease`).
        token: fencing token; grows by one with every acquisition of the
            thread's lock (releases and takeovers included), so a downstream
            system can reject writes carrying an older token from a holder
            that still believes it owns the thread. It only restarts (at 1)
            after the thread is deleted, which deletes its lock item.

    Example:
        >>> info = LeaseInfo("t-1", "owner-a", expires_at=1_800_000_000.0, token=3)
        >>> info.token
        3
    """

    thread_id: str
    owner: str
    expires_at: float
    token: int


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """The idempotency record of one request.

    Attributes:
        status: ``"running"``, ``"done"`` or ``"failed"``.
        owner: owner token of the attempt that wrote it.
        start_checkpoint_id: the checkpoint id the request was accepted
            against (``"*"`` when unchecked, ``""`` for a new thread).
        attempts: attempts started.
        result_size: serialized size of the result (done only).
        result_stored: whether the result is stored for replay.
        error: the last failure (failed only).

    Example:
        >>> rec = get_request(saver, "t-1", "r-1")  # doctest: +SKIP
        >>> (rec.status, rec.attempts)  # doctest: +SKIP
        ('done', 1)
    """

    status: str
    owner: str
    start_checkpoint_id: str
    attempts: int
    result_size: int | None
    result_stored: bool
    error: str | None


@dataclass(frozen=True, slots=True)
class RunOutcome(Generic[T]):
    """What :func:`run_once` did.

    Attributes:
        value: the function's result (or the stored result of the first run).
        replayed: ``True`` if nothing ran: the request was already done.
        recovered: ``True`` if an earlier attempt of this request had
            crashed or failed and this call ran it again.

    Example:
        >>> RunOutcome(value={"ok": True}, replayed=True, recovered=False).replayed
        True
    """

    value: T
    replayed: bool
    recovered: bool


@dataclass(frozen=True, slots=True)
class RunContext:
    """What :func:`run_once` hands to the work (and to ``recover``).

    Attributes:
        saver: the saver bound to the lease (:meth:`ThreadLease.bind`): every
            checkpoint and pending write it lands is fenced; if the lease was
            lost, it raises :class:`LeaseLostError` and writes nothing.
        thread_id: the thread.
        request_id: the request.
        earlier_attempt: an earlier attempt of this request started and did
            not record an outcome (it crashed, failed or lost its lease).

    Example:
        ```python
        def work(ctx: RunContext) -> dict:
            graph = compiled.copy({"checkpointer": ctx.saver})
            return graph.invoke(None, ctx.config(), durability="sync")
        ```
    """

    saver: Any
    thread_id: str
    request_id: str
    earlier_attempt: bool

    def config(self, **configurable: Any) -> dict[str, Any]:
        """A graph config for the thread whose checkpoints carry the request id in their metadata."""
        return {
            "configurable": {"thread_id": self.thread_id, **configurable},
            "metadata": {REQUEST_ID_METADATA_KEY: self.request_id},
        }

    def wrote(self, metadata: Any) -> bool:
        """Whether checkpoint metadata was written by this request (through :meth:`config`)."""
        return isinstance(metadata, dict) and metadata.get(REQUEST_ID_METADATA_KEY) == self.request_id


# ------------------------------------------------------- what the operations use


@dataclass(frozen=True, slots=True)
class Where:
    """Table and partition key of a thread's meta items."""

    table: str
    pk: str


@dataclass(frozen=True, slots=True)
class Fence:
    """What a lease-bound write must find on the lock item: our owner token and fence."""

    where: Where
    thread_id: str
    owner: str
    token: int


@dataclass(frozen=True, slots=True)
class Taken:
    """An acquisition or renewal: the lease as written, its RVN and when we sent it."""

    info: LeaseInfo
    rvn: str
    sent: float  # monotonic time the request left: the lease runs from here for us


def wall_now() -> float:
    """The library's clock, read at call time (so tests can skew it: ``clock.now``)."""
    return _clock.now()


def now_ms(clock: Callable[[], float]) -> int:
    return int(clock() * 1000)


def partition_key_of(saver: Any, thread_id: str, tenant_prefix: str = "") -> str:
    """The thread's partition key: the saver's (tenant prefix included) when given one."""
    # Always the saver's own key (its tenant layout may change): never rebuilt here.
    pk_of = getattr(saver, "partition_key", None)
    if callable(pk_of):
        return str(pk_of(thread_id))
    return schema.partition_key(thread_id, tenant_prefix)


def lock_key(where: Where) -> dict[str, Any]:
    return {ATTR.PK: {"S": where.pk}, ATTR.SK: {"S": schema.LOCK_SK}}


def request_key(where: Where, request_id: str) -> dict[str, Any]:
    return {ATTR.PK: {"S": where.pk}, ATTR.SK: {"S": schema.request_sk(request_id)}}


def validate_ids(thread_id: str, request_id: str | None = None, pk: str | None = None) -> None:
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("thread_id must be a non-empty string")
    if len((pk or schema.partition_key(thread_id)).encode()) > schema.MAX_PK_BYTES:
        raise ValueError(f"thread_id is longer than {schema.MAX_PK_BYTES} bytes once encoded")
    if request_id is not None:
        if not isinstance(request_id, str) or not request_id:
            raise ValueError("request_id must be a non-empty string")
        if len(schema.request_sk(request_id).encode()) > schema.MAX_KEY_BYTES:
            raise ValueError(f"request_id is too long for a sort key ({schema.MAX_KEY_BYTES} bytes)")


def check_limits(max_result_bytes: int) -> None:
    if not 0 <= max_result_bytes <= HARD_MAX_RESULT_BYTES:
        raise ValueError(f"max_result_bytes must be between 0 and {HARD_MAX_RESULT_BYTES}")


def wants_context(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a required positional argument (then it gets the RunContext)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional and p.default is inspect.Parameter.empty for p in params)


# ------------------------------------------------------------------ lock items


def lease_info(thread_id: str, item: dict[str, Any]) -> LeaseInfo:
    return LeaseInfo(
        thread_id=thread_id,
        owner=item[ATTR.OWNER]["S"],
        expires_at=int(item[ATTR.LEASE_EXPIRES]["N"]) / 1000,
        token=int(item.get(ATTR.FENCE, {"N": "0"})["N"]),
    )


def version_of(item: dict[str, Any]) -> tuple[str, str, dict[str, Any], dict[str, str]]:
    """``(RVN, condition, values, names)``: the lock item's version and a condition that it is unchanged.

    Items written before RVNs existed have none: their owner and ``lx``
    (which every renewal of that version changed) stand in for it.
    """
    if ATTR.LOCK_VERSION in item:
        rvn = item[ATTR.LOCK_VERSION]["S"]
        return rvn, "#rvn = :seen", {":seen": {"S": rvn}}, {"#rvn": ATTR.LOCK_VERSION}
    owner = item.get(ATTR.OWNER, {}).get("S", "")
    lx = item.get(ATTR.LEASE_EXPIRES, {}).get("N", "0")
    return (
        f"legacy:{owner}:{lx}",
        "attribute_not_exists(#rvn) AND #o = :so AND #lx = :slx",
        {":so": {"S": owner}, ":slx": {"N": lx}},
        {"#rvn": ATTR.LOCK_VERSION},
    )


def held_ms(item: dict[str, Any], default_ms: int) -> int:
    """How long a waiter must watch the lock unchanged: the holder's lease duration.

    Items of earlier versions do not record it; ``lx - la`` (expiry minus
    acquisition, both by the holder's clock) is at least the holder's lease,
    so waiting that long never takes a live lease over (only a slow one).
    """
    if ATTR.LEASE_MS in item:
        return int(item[ATTR.LEASE_MS]["N"])
    if ATTR.LEASE_EXPIRES in item and ATTR.LEASE_ACQUIRED in item:
        return max(default_ms, int(item[ATTR.LEASE_EXPIRES]["N"]) - int(item[ATTR.LEASE_ACQUIRED]["N"]))
    return default_ms


# ------------------------------------------------------------- request records


def request_record(item: dict[str, Any]) -> RequestRecord:
    return RequestRecord(
        status=item[ATTR.REQUEST_STATUS]["S"],
        owner=item.get(ATTR.OWNER, {}).get("S", ""),
        start_checkpoint_id=item.get(ATTR.REQUEST_START, {}).get("S", "*"),
        attempts=int(item.get(ATTR.REQUEST_ATTEMPTS, {"N": "0"})["N"]),
        result_size=int(item[ATTR.RESULT_SIZE]["N"]) if ATTR.RESULT_SIZE in item else None,
        result_stored=ATTR.RESULT in item,
        error=item.get(ATTR.REQUEST_ERROR, {}).get("S"),
    )


def expected_marker(expected: ExpectedCheckpoint) -> str:
    """What a request record stores as the checkpoint it was accepted against."""
    if isinstance(expected, AnyCheckpoint):
        return "*"
    return expected or ""


def is_done(item: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """Whether a request record's item says the request is done (its result is final)."""
    return item is not None and item[ATTR.REQUEST_STATUS]["S"] == STATUS_DONE


def is_recovery(item: dict[str, Any] | None, expected: ExpectedCheckpoint) -> bool:
    """An earlier attempt of this very request started from the checkpoint the caller saw.

    Then the thread may have moved on *because of that attempt* (it crashed
    or failed half-way), so the staleness check must not reject the retry.
    """
    return (
        item is not None
        and item[ATTR.REQUEST_STATUS]["S"] in (STATUS_RUNNING, STATUS_FAILED)
        and item.get(ATTR.REQUEST_START, {}).get("S") == expected_marker(expected)
    )


def serialize_result(
    saver: Any, thread_id: str, request_id: str, value: Any, max_bytes: int
) -> tuple[tuple[str, bytes] | None, int]:
    """``(typed bytes or None if over max_bytes, serialized size)`` of a result, by the saver's serde.

    Sealed to the request's record when the saver encrypts: a result copied
    into another request's record (or thread) is refused on read.
    """
    type_name, data = saver.dump_payload(
        value, where=f"result of request {request_id!r}", bind=(thread_id, result_place(request_id))
    )
    size = len(data) + len(type_name)
    return ((type_name, data) if size <= max_bytes else None), size


def stored_result(saver: Any, thread_id: str, request_id: str, item: dict[str, Any]) -> Any:
    """The result a done request stored, decoded under the saver's payload policy."""
    if ATTR.RESULT not in item:
        size = item.get(ATTR.RESULT_SIZE, {}).get("N", "?")
        raise ResultNotStoredError(
            f"request {request_id!r} on thread {thread_id!r} already completed, but its result "
            f"({size} bytes serialized) was over the size limit and was not stored; "
            "read the thread's state instead"
        )
    where = f"request record {request_id!r} of thread {thread_id!r}"
    try:
        typed = (item[ATTR.RESULT_TYPE]["S"], bytes(item[ATTR.RESULT]["B"]))
    except (KeyError, TypeError) as exc:
        raise CorruptPayloadError(f"{where}: malformed stored result") from exc
    # The same policy as every checkpoint payload (strict msgpack, and no
    # plaintext where the saver encrypts): anyone who can write the thread's
    # partition can forge this record.
    return saver.load_payload(typed, where=where, bind=(thread_id, result_place(request_id)))
