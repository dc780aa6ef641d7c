"""Per-thread lease locks, request-id idempotency and checkpoint staleness checks.

LangGraph serialises nothing across processes: two Lambda instances that
resume the same thread at once (a double click, a client retry after a
timeout) would both run the graph from the same checkpoint and both perform
its side effects. This module gives the caller three small tools against
that, all stored in the checkpoint table next to the thread's own items:

* :class:`ThreadLease` / :class:`AsyncThreadLease`: a lease lock on one
  thread (item ``PK = thread``, ``SK = schema.LOCK_SK``). Taken with one
  conditional ``UpdateItem`` that succeeds only if the lock is absent or the
  caller already owns it, or (takeover) if its record version is still the
  one the caller watched for a whole lease; renewed while held (a heartbeat
  that writes a new record version); released with a ``DeleteItem``
  conditional on the owner and version. :meth:`ThreadLease.bind` gives a
  saver whose writes land only while the lease is held (fencing).
* :func:`run_once` / :func:`arun_once`: run a function at most once per
  ``(thread_id, request_id)`` under the lease, recording its result (small
  results only, see :data:`DEFAULT_MAX_RESULT_BYTES`) so that a repeated
  request returns the first result without running anything, and a retry
  after a crash can rebuild the outcome from what the first attempt stored.
* :func:`check_checkpoint` / :func:`acheck_checkpoint`: refuse to act on a
  thread whose latest checkpoint is no longer the one the caller saw
  (:class:`StaleCheckpointError`), e.g. an answer submitted from a stale page.

The logic is written once, as generators that yield DynamoDB calls (the same
sans-I/O style as the savers' core), and driven by a boto3 or an aiobotocore
client.

Clocks: DynamoDB has no server-side "now", and another machine's wall clock
may run ahead or behind ours, so no wall clock decides expiry. As the AWS
DynamoDB Lock Client does, a waiter takes a lock over only after it has seen
the lock's record version (``rvn``, changed by every heartbeat) unchanged for
the holder's whole lease duration on its *own* monotonic clock. What a
process has watched is remembered process-wide, so a retry in the same
(warm Lambda) process does not start watching again. ``lx`` (expiry by the
holder's clock) is kept for people and the CLI only.

Every item written here carries ``schema.ATTR.FORMAT`` (the savers' readers
check it on every item of a thread) and the ``schema.TTL_ATTRIBUTE``, so
DynamoDB eventually removes abandoned locks and old request records.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Generic, TypeVar

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import clock as _clock
from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._driver import AsyncDriver, Clients, SyncDriver
from langgraph.checkpoint.dynamodb._ops import Call, Sleep, ddb
from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError, CorruptPayloadError
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = [
    "ANY_CHECKPOINT",
    "DEFAULT_MAX_RESULT_BYTES",
    "REQUEST_ID_METADATA_KEY",
    "AsyncThreadLease",
    "LeaseInfo",
    "LeaseLostError",
    "LeaseUnavailableError",
    "RequestRecord",
    "ResultNotStoredError",
    "RunContext",
    "RunOutcome",
    "StaleCheckpointError",
    "ThreadLease",
    "acheck_checkpoint",
    "arun_once",
    "check_checkpoint",
    "get_request",
    "run_once",
]

T = TypeVar("T")

#: Results above this many serialized bytes are not stored by default: the
#: request is still marked done, but a repeat raises ResultNotStoredError.
#: A DynamoDB item holds at most 400 KB, names and other attributes included.
DEFAULT_MAX_RESULT_BYTES: Final = 64 * 1024
#: The largest ``max_result_bytes`` accepted (leaves room for the rest of the item).
HARD_MAX_RESULT_BYTES: Final = 350 * 1024

#: DynamoDB's TTL sweeper may lag by days; this extra life on a lock item is
#: only housekeeping (expiry is decided by watching ``rvn``, never by the TTL).
_LOCK_TTL_GRACE_S: Final = 3600

# Attribute names of lock and request items (short: DynamoDB bills names).
_OWNER = "own"  # owner token of the lock / of the running attempt
_LEASE_EXPIRES = "lx"  # lease expiry, epoch milliseconds
_ACQUIRED = "la"  # when the current owner took the lock, epoch ms
_FENCE = "fen"  # fencing token: +1 on every acquisition by a new owner
_RVN = "rvn"  # record version number: a fresh random value on every acquisition and heartbeat
_LEASE_MS = "ld"  # the holder's lease duration, milliseconds (waiters wait this long)
_STATUS = "st"  # request status, see RequestRecord
_START_CP = "cp0"  # checkpoint id the request was accepted against
_RESULT_TYPE = "rt"  # serde type of the stored result
_RESULT = "rv"  # serde bytes of the stored result
_RESULT_SIZE = "rs"  # serialized result size in bytes
_ERROR = "err"  # last failure of the request (repr), status "failed"
_ATTEMPTS = "att"  # attempts started
_CREATED = "ca"  # first attempt started, epoch ms
_FINISHED = "fin"  # done at, epoch ms

STATUS_RUNNING: Final = "running"
STATUS_DONE: Final = "done"
STATUS_FAILED: Final = "failed"


class _AnyCheckpoint:
    """Sentinel type of :data:`ANY_CHECKPOINT`."""

    _instance: _AnyCheckpoint | None = None

    def __new__(cls) -> _AnyCheckpoint:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ANY_CHECKPOINT"


#: Pass as ``expected_checkpoint_id`` to skip the staleness check. ``None``
#: means "the thread must have no checkpoint yet" (a first request).
ANY_CHECKPOINT: Final = _AnyCheckpoint()

ExpectedCheckpoint = str | None | _AnyCheckpoint


# ------------------------------------------------------------------- errors


class LeaseUnavailableError(CheckpointStoreError):
    """Another owner holds the thread's lease (and did not release it in time).

    Attributes:
        thread_id: the thread.
        holder: owner token of the current holder, if known.
        expires_at: when the holder says its lease runs out (epoch seconds, the
            *holder's* clock: for display only), if known.
        retry_after: seconds after which this process may take a silent
            holder's lease over (it has watched the lock for that long minus
            what it already waited), if known. A live holder renews before then.

    Example:
        ```python
        try:
            ThreadLease(saver, "t-1").acquire()
        except LeaseUnavailableError as busy:
            retry_in = busy.retry_after or 1.0
        ```
    """

    def __init__(
        self,
        thread_id: str,
        holder: str | None,
        expires_at: float | None,
        retry_after: float | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.holder = holder
        self.expires_at = expires_at
        self.retry_after = retry_after
        when = f" until {expires_at:.3f}" if expires_at is not None else ""
        super().__init__(f"thread {thread_id!r} is locked by another owner{when}")


class LeaseLostError(CheckpointStoreError):
    """The lease expired and was taken over (or released) while we thought we held it.

    Raised by :meth:`ThreadLease.renew`, by every write of a lease-bound saver
    (:meth:`ThreadLease.bind`) after another owner took the thread over (the
    write did not land), and by :func:`run_once` instead of reporting success.

    Example:
        ```python
        try:
            lease.renew()
        except LeaseLostError:
            ...  # stop: another worker owns the thread now
        ```
    """


class StaleCheckpointError(CheckpointStoreError):
    """The thread's latest checkpoint is not the one the caller saw.

    Attributes:
        thread_id: the thread.
        expected: the checkpoint id the caller passed (``None``: no checkpoint).
        actual: the latest checkpoint id (``None``: the thread has none).

    Example:
        ```python
        try:
            check_checkpoint(saver, "t-1", seen_id)
        except StaleCheckpointError as err:
            return {"statusCode": 409, "latest": err.actual}
        ```
    """

    def __init__(self, thread_id: str, expected: str | None, actual: str | None) -> None:
        self.thread_id = thread_id
        self.expected = expected
        self.actual = actual
        if expected is None:
            msg = f"thread {thread_id!r} already has checkpoint {actual!r}; expected a new thread"
        elif actual is None:
            msg = f"thread {thread_id!r} has no checkpoint; expected {expected!r}"
        else:
            msg = (
                f"thread {thread_id!r} moved on: the latest checkpoint is {actual!r}, "
                f"not {expected!r}; reload the thread's state and retry"
            )
        super().__init__(msg)


class ResultNotStoredError(CheckpointStoreError):
    """The request already completed, but its result was too large to store for replay.

    Example:
        ```python
        try:
            run_once(saver, "t-1", "r-1", ANY_CHECKPOINT, work)
        except ResultNotStoredError:
            state = graph.get_state({"configurable": {"thread_id": "t-1"}})  # read it instead
        ```
    """


# -------------------------------------------------------------- data types


@dataclass(frozen=True, slots=True)
class LeaseInfo:
    """A lease as last written by its owner.

    Attributes:
        thread_id: the locked thread.
        owner: the owner token.
        expires_at: lease expiry, epoch seconds by the holder's clock (for
            display: other processes never trust it, see :class:`ThreadLease`).
        token: fencing token; grows by one with every acquisition, so a
            downstream system can reject writes carrying an older token from
            a holder that still believes it owns the thread.

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


# ------------------------------------------------------------------ helpers


def _wall_now() -> float:
    """The library's clock, read at call time (so tests can skew it: ``clock.now``)."""
    return _clock.now()


def _now_ms(clock: Callable[[], float]) -> int:
    return int(clock() * 1000)


def _code(exc: BaseException) -> str:
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


@dataclass(frozen=True, slots=True)
class _Where:
    """Table and partition key of a thread's meta items."""

    table: str
    pk: str


def _partition_key(saver: Any, thread_id: str, tenant_prefix: str = "") -> str:
    """The thread's partition key: the saver's (tenant prefix included) when given one."""
    # Always the saver's own key (its tenant layout may change): never rebuilt here.
    pk_of = getattr(saver, "partition_key", None) or getattr(saver, "_pk", None)
    if callable(pk_of):
        return str(pk_of(thread_id))
    return schema.partition_key(thread_id, tenant_prefix)


def _lock_key(where: _Where) -> dict[str, Any]:
    return {ATTR.PK: {"S": where.pk}, ATTR.SK: {"S": schema.LOCK_SK}}


def _request_key(where: _Where, request_id: str) -> dict[str, Any]:
    return {ATTR.PK: {"S": where.pk}, ATTR.SK: {"S": schema.request_sk(request_id)}}


def _validate_ids(thread_id: str, request_id: str | None = None, pk: str | None = None) -> None:
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("thread_id must be a non-empty string")
    if len((pk or schema.partition_key(thread_id)).encode()) > schema.MAX_PK_BYTES:
        raise ValueError(f"thread_id is longer than {schema.MAX_PK_BYTES} bytes once encoded")
    if request_id is not None:
        if not isinstance(request_id, str) or not request_id:
            raise ValueError("request_id must be a non-empty string")
        if len(schema.request_sk(request_id).encode()) > schema.MAX_KEY_BYTES:
            raise ValueError(f"request_id is too long for a sort key ({schema.MAX_KEY_BYTES} bytes)")


def _lease_info(thread_id: str, item: dict[str, Any]) -> LeaseInfo:
    return LeaseInfo(
        thread_id=thread_id,
        owner=item[_OWNER]["S"],
        expires_at=int(item[_LEASE_EXPIRES]["N"]) / 1000,
        token=int(item.get(_FENCE, {"N": "0"})["N"]),
    )


def _record(item: dict[str, Any]) -> RequestRecord:
    return RequestRecord(
        status=item[_STATUS]["S"],
        owner=item.get(_OWNER, {}).get("S", ""),
        start_checkpoint_id=item.get(_START_CP, {}).get("S", "*"),
        attempts=int(item.get(_ATTEMPTS, {"N": "0"})["N"]),
        result_size=int(item[_RESULT_SIZE]["N"]) if _RESULT_SIZE in item else None,
        result_stored=_RESULT in item,
        error=item.get(_ERROR, {}).get("S"),
    )


def _expected_marker(expected: ExpectedCheckpoint) -> str:
    if isinstance(expected, _AnyCheckpoint):
        return "*"
    return expected or ""


def _resolve_target(target: Any, table_name: str | None) -> tuple[Any, str, Any]:
    """``(saver or None, table name, client or None)`` of a saver or a client."""
    from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver

    if isinstance(target, BaseDynamoDBSaver):
        return target, table_name or target.table_name, None
    if table_name is None:
        raise ValueError("table_name is required when passing a DynamoDB client")
    return None, table_name, target


# ------------------------------------------------------ operations (sans-I/O)

Op = Generator[Call | Sleep, Any, T]


@dataclass(frozen=True, slots=True)
class _Fence:
    """What a lease-bound write must find on the lock item: our owner token and fence."""

    where: _Where
    thread_id: str
    owner: str
    token: int


@dataclass(frozen=True, slots=True)
class _Taken:
    """An acquisition or renewal: the lease as written, its RVN and when we sent it."""

    info: LeaseInfo
    rvn: str
    sent: float  # monotonic time the request left: the lease runs from here for us


# Observations of lock items by this process: (table, pk) -> (RVN, monotonic
# time it was first seen). Module-wide on purpose: a retry of a request in the
# same warm container (another ThreadLease object) keeps the time it already
# waited, so it can take over a dead holder's lease instead of waiting again.
_SEEN: dict[tuple[str, str], tuple[str, float]] = {}
_SEEN_LOCK = threading.Lock()
_SEEN_MAX: Final = 10_000


def _observe(where: _Where, rvn: str, now: float, *, ours: bool = False) -> float:
    """Record that ``rvn`` was the lock's version at ``now``; return when this process first saw it.

    Our own writes count as observations too (the RVN we wrote was current
    when the response arrived), so a second lease object in this process
    knows as much as the first.
    """
    key = (where.table, where.pk)
    with _SEEN_LOCK:
        prev = _SEEN.get(key)
        if prev is not None and prev[0] == rvn and not ours:
            return prev[1]
        _SEEN.pop(key, None)
        _SEEN[key] = (rvn, now)
        while len(_SEEN) > _SEEN_MAX:
            del _SEEN[next(iter(_SEEN))]
        return now


def _version_of(item: dict[str, Any]) -> tuple[str, str, dict[str, Any], dict[str, str]]:
    """``(RVN, condition, values, names)``: the lock item's version and a condition that it is unchanged.

    Items written before RVNs existed have none: their owner and ``lx``
    (which every renewal of that version changed) stand in for it.
    """
    if _RVN in item:
        rvn = item[_RVN]["S"]
        return rvn, "#rvn = :seen", {":seen": {"S": rvn}}, {"#rvn": _RVN}
    owner = item.get(_OWNER, {}).get("S", "")
    lx = item.get(_LEASE_EXPIRES, {}).get("N", "0")
    return (
        f"legacy:{owner}:{lx}",
        "attribute_not_exists(#rvn) AND #o = :so AND #lx = :slx",
        {":so": {"S": owner}, ":slx": {"N": lx}},
        {"#rvn": _RVN},
    )


def _held_ms(item: dict[str, Any], default_ms: int) -> int:
    """How long a waiter must watch the lock unchanged: the holder's lease duration.

    Items of earlier versions do not record it; ``lx - la`` (expiry minus
    acquisition, both by the holder's clock) is at least the holder's lease,
    so waiting that long never takes a live lease over (only a slow one).
    """
    if _LEASE_MS in item:
        return int(item[_LEASE_MS]["N"])
    if _LEASE_EXPIRES in item and _ACQUIRED in item:
        return max(default_ms, int(item[_LEASE_EXPIRES]["N"]) - int(item[_ACQUIRED]["N"]))
    return default_ms


def _op_acquire(
    where: _Where,
    thread_id: str,
    owner: str,
    lease_ms: int,
    wait_ms: int,
    poll_ms: int,
    clock: Callable[[], float],
    monotonic: Callable[[], float] = time.monotonic,
) -> Op[_Taken]:
    deadline = monotonic() + wait_ms / 1000
    while True:
        # One conditional write: free or already ours. Whether a lease held by
        # someone else has run out is never judged by a clock stored in the
        # item (another machine's): see the takeover below.
        taken = yield from _op_write_lock(where, thread_id, owner, lease_ms, clock, monotonic, None)
        if taken is not None:
            return taken
        got = yield ddb("get_item", TableName=where.table, Key=_lock_key(where), ConsistentRead=True)
        item = got.get("Item")
        if item is None:
            continue  # released between our write and our read: try again at once
        rvn, cond, values, names = _version_of(item)
        held_ms = _held_ms(item, lease_ms)
        now = monotonic()
        first = _observe(where, rvn, now)
        # The holder changes the RVN on every heartbeat. The same RVN for a
        # whole lease duration on *our* monotonic clock means the holder's
        # lease ran out by its own clock too, whatever the wall clocks say.
        free_at = first + held_ms / 1000
        if now >= free_at:
            taken = yield from _op_write_lock(
                where, thread_id, owner, lease_ms, clock, monotonic, (cond, values, names)
            )
            if taken is not None:
                return taken
            continue  # the holder beat (or someone else took it): observe again
        if now >= deadline:
            holder = item.get(_OWNER, {}).get("S")
            lx = int(item[_LEASE_EXPIRES]["N"]) / 1000 if _LEASE_EXPIRES in item else None
            raise LeaseUnavailableError(thread_id, holder, lx, retry_after=free_at - now)
        # Sleep until the next poll, the end of the observation or our
        # deadline, whichever comes first.
        yield Sleep(max(min(poll_ms / 1000, deadline - now, free_at - now + 0.001), 0.001))


def _op_write_lock(
    where: _Where,
    thread_id: str,
    owner: str,
    lease_ms: int,
    clock: Callable[[], float],
    monotonic: Callable[[], float],
    takeover: tuple[str, dict[str, Any], dict[str, str]] | None,
) -> Op[_Taken | None]:
    """Write the lock item as ours with a fresh RVN; ``None`` if its condition failed."""
    now = _now_ms(clock)
    expires = now + lease_ms
    rvn = uuid.uuid4().hex
    names = {
        "#pk": ATTR.PK,
        "#o": _OWNER,
        "#rvn": _RVN,
        "#ld": _LEASE_MS,
        "#lx": _LEASE_EXPIRES,
        "#t": ATTR.KIND,
        "#f": ATTR.FORMAT,
        "#thr": ATTR.THREAD_ID,
        "#ttl": schema.TTL_ATTRIBUTE,
        "#la": _ACQUIRED,
        "#fen": _FENCE,
    }
    values: dict[str, Any] = {
        ":o": {"S": owner},
        ":rvn": {"S": rvn},
        ":ld": {"N": str(lease_ms)},
        ":lx": {"N": str(expires)},
        ":now": {"N": str(now)},
        ":t": {"S": schema.META_ITEM},
        ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
        ":thr": {"S": thread_id},
        ":ttl": {"N": str(expires // 1000 + _LOCK_TTL_GRACE_S)},
        ":inc": {"N": "1"},
    }
    if takeover is None:
        cond = "attribute_not_exists(#pk) OR #o = :o"
    else:
        cond, seen_values, seen_names = takeover
        values.update(seen_values)
        names.update(seen_names)
        names.pop("#pk")
    sent = monotonic()
    try:
        resp = yield ddb(
            "update_item",
            TableName=where.table,
            Key=_lock_key(where),
            # ``lx`` is kept for people (CLI, logs), never trusted for expiry.
            # The fencing token grows with every acquisition.
            UpdateExpression=(
                "SET #o = :o, #rvn = :rvn, #ld = :ld, #lx = :lx, #t = :t, #f = :f, #thr = :thr, "
                "#ttl = :ttl, #la = :now ADD #fen :inc"
            ),
            ConditionExpression=cond,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
    except ClientError as exc:
        if _code(exc) != "ConditionalCheckFailedException":
            raise
        return None
    _observe(where, rvn, monotonic(), ours=True)
    return _Taken(_lease_info(thread_id, resp["Attributes"]), rvn, sent)


def _op_renew(
    where: _Where,
    thread_id: str,
    owner: str,
    rvn: str,
    lease_ms: int,
    clock: Callable[[], float],
    monotonic: Callable[[], float] = time.monotonic,
) -> Op[_Taken]:
    now = _now_ms(clock)
    expires = now + lease_ms
    new_rvn = uuid.uuid4().hex
    sent = monotonic()
    try:
        resp = yield ddb(
            "update_item",
            TableName=where.table,
            Key=_lock_key(where),
            UpdateExpression="SET #rvn = :new, #ld = :ld, #lx = :lx, #ttl = :ttl",
            # Only the owner renews, and only the version it last wrote: if a
            # waiter took the lock over (after seeing our RVN unchanged for a
            # lease), this fails and we learn we lost it. An expired lease
            # nobody took over is still ours to extend.
            ConditionExpression="#o = :o AND #rvn = :rvn",
            ExpressionAttributeNames={
                "#o": _OWNER,
                "#rvn": _RVN,
                "#ld": _LEASE_MS,
                "#lx": _LEASE_EXPIRES,
                "#ttl": schema.TTL_ATTRIBUTE,
            },
            ExpressionAttributeValues={
                ":o": {"S": owner},
                ":rvn": {"S": rvn},
                ":new": {"S": new_rvn},
                ":ld": {"N": str(lease_ms)},
                ":lx": {"N": str(expires)},
                ":ttl": {"N": str(expires // 1000 + _LOCK_TTL_GRACE_S)},
            },
            ReturnValues="ALL_NEW",
        )
    except ClientError as exc:
        if _code(exc) == "ConditionalCheckFailedException":
            raise LeaseLostError(f"lease on thread {thread_id!r} was taken over or released") from exc
        raise
    _observe(where, new_rvn, monotonic(), ours=True)
    return _Taken(_lease_info(thread_id, resp["Attributes"]), new_rvn, sent)


def _op_release(where: _Where, thread_id: str, owner: str, rvn: str) -> Op[bool]:
    try:
        yield ddb(
            "delete_item",
            TableName=where.table,
            Key=_lock_key(where),
            ConditionExpression="#o = :o AND #rvn = :rvn",
            ExpressionAttributeNames={"#o": _OWNER, "#rvn": _RVN},
            ExpressionAttributeValues={":o": {"S": owner}, ":rvn": {"S": rvn}},
        )
    except ClientError as exc:
        if _code(exc) == "ConditionalCheckFailedException":
            return False  # someone took it over after our lease expired
        raise
    return True


# DynamoDB's TransactWriteItems accepts these fields of a Put / Update.
_TRANSACT_FIELDS: Final = {
    "put_item": (
        "Put",
        ("TableName", "Item", "ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues"),
    ),
    "update_item": (
        "Update",
        (
            "TableName",
            "Key",
            "UpdateExpression",
            "ConditionExpression",
            "ExpressionAttributeNames",
            "ExpressionAttributeValues",
        ),
    ),
}


def _op_fenced_write(fence: _Fence, call: Call) -> Op[Any]:
    """``call`` (a PutItem or UpdateItem) as one TransactWriteItems that also checks our lease.

    The ``ConditionCheck`` finds the lock item still carrying our owner token
    and fence; a holder that was paused past its lease and taken over fails
    it, and its write does not land. Still one request. A failed condition of
    the write itself is raised as the plain call would raise it.
    """
    if call.service != "dynamodb" or call.method not in _TRANSACT_FIELDS:
        raise TypeError(f"cannot fence {call.service}.{call.method}")
    kind, fields = _TRANSACT_FIELDS[call.method]
    body = {k: v for k, v in call.kwargs.items() if k in fields}
    key = body.get("Key") or body.get("Item") or {}
    if key.get(ATTR.PK) != {"S": fence.where.pk} or body.get("TableName") != fence.where.table:
        # The lease covers one thread: a write elsewhere would be unfenced.
        raise ValueError(f"a saver bound to the lease of thread {fence.thread_id!r} cannot write elsewhere")
    check = {
        "ConditionCheck": {
            "TableName": fence.where.table,
            "Key": _lock_key(fence.where),
            "ConditionExpression": "#o = :o AND #fen = :fen",
            "ExpressionAttributeNames": {"#o": _OWNER, "#fen": _FENCE},
            "ExpressionAttributeValues": {":o": {"S": fence.owner}, ":fen": {"N": str(fence.token)}},
        }
    }
    try:
        return (yield ddb("transact_write_items", TransactItems=[check, {kind: body}]))
    except ClientError as exc:
        if _code(exc) != "TransactionCanceledException":
            raise
        reasons = [r.get("Code") for r in exc.response.get("CancellationReasons") or []]
        if reasons[:1] == ["ConditionalCheckFailed"]:
            raise LeaseLostError(
                f"lease on thread {fence.thread_id!r} (fence {fence.token}) was lost: "
                "another owner took the thread over; this write was not applied"
            ) from exc
        if reasons[1:2] == ["ConditionalCheckFailed"]:
            raise ClientError(
                {"Error": {"Code": "ConditionalCheckFailedException", "Message": str(exc)}},
                call.method,
            ) from exc
        raise


def _op_get_request(where: _Where, request_id: str) -> Op[dict[str, Any] | None]:
    resp = yield ddb(
        "get_item", TableName=where.table, Key=_request_key(where, request_id), ConsistentRead=True
    )
    item: dict[str, Any] | None = resp.get("Item")
    return item


def _fenced_write_item(self: Any, call: Call) -> Op[Any]:
    """``CoreSaver._write_item`` of lease-bound copies: the final write goes through the fence."""
    return (yield from _op_fenced_write(self._lease_fence, call))


_BOUND_TYPES: dict[type, type] = {}


def _bound_copy(saver: Any, fence: _Fence) -> Any:
    """A shallow copy of ``saver`` whose ``_write_item`` is fenced (see ``ThreadLease.bind``)."""
    from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver

    if not isinstance(saver, BaseDynamoDBSaver):
        raise TypeError(f"only this package's savers can be bound to a lease, not {type(saver).__name__}")
    if saver.partition_key(fence.thread_id) != fence.where.pk or saver.table_name != fence.where.table:
        raise ValueError(f"the saver does not store thread {fence.thread_id!r} where the lease lives")
    if saver.clients.get("dynamodb") is None:
        # An async saver opens its clients lazily: a copy would open its own
        # and never close them.
        raise RuntimeError("open the saver before binding it (async with saver: ..., or await saver.setup())")
    # Rebinding a bound copy binds the original type again.
    base: type = getattr(type(saver), "_lease_unbound", type(saver))
    cls = _BOUND_TYPES.get(base)
    if cls is None:
        # A direct subclass with no slots of its own: an instance of the
        # saver's type can switch to it (a mixin base would change the layout).
        ns: dict[str, Any] = {"__slots__": (), "_write_item": _fenced_write_item, "_lease_unbound": base}
        cls = _BOUND_TYPES.setdefault(base, type(f"LeaseBound{base.__name__}", (base,), ns))
    bound: Any = copy.copy(saver)
    bound.__class__ = cls
    bound._lease_fence = fence
    # The shallow copy shares the saver's driver, hence its thread pool: a
    # copy per request leaves no threads behind (nothing closes a copy).
    # The copy borrows the saver's clients: closing it must not close them.
    for name, empty in (("_owned", []), ("_owned_names", set()), ("_stack", None)):
        if hasattr(bound, name):
            setattr(bound, name, empty)
    return bound


def _fenced(fence: _Fence | None, call: Call) -> Op[Any]:
    """Send ``call``, fenced by the lease when one is given."""
    if fence is None:
        return (yield call)
    return (yield from _op_fenced_write(fence, call))


def _op_begin_request(
    where: _Where,
    thread_id: str,
    request_id: str,
    owner: str,
    start_cp: str,
    ttl_s: int,
    clock: Callable[[], float],
    fence: _Fence | None = None,
) -> Op[None]:
    now = _now_ms(clock)
    try:
        yield from _fenced(
            fence,
            ddb(
                "update_item",
                TableName=where.table,
                Key=_request_key(where, request_id),
                UpdateExpression=(
                    "SET #st = :run, #o = :o, #cp0 = if_not_exists(#cp0, :cp0), #ca = if_not_exists(#ca, :now), "
                    "#t = :t, #f = :f, #thr = :thr, #ttl = :ttl ADD #att :one REMOVE #err"
                ),
                # A done request is never restarted (the caller checked under the
                # lease; this guards against a logic error turning into a rerun).
                ConditionExpression="attribute_not_exists(#st) OR #st <> :done",
                ExpressionAttributeNames={
                    "#st": _STATUS,
                    "#o": _OWNER,
                    "#cp0": _START_CP,
                    "#ca": _CREATED,
                    "#t": ATTR.KIND,
                    "#f": ATTR.FORMAT,
                    "#thr": ATTR.THREAD_ID,
                    "#ttl": schema.TTL_ATTRIBUTE,
                    "#att": _ATTEMPTS,
                    "#err": _ERROR,
                },
                ExpressionAttributeValues={
                    ":run": {"S": STATUS_RUNNING},
                    ":done": {"S": STATUS_DONE},
                    ":o": {"S": owner},
                    ":cp0": {"S": start_cp},
                    ":now": {"N": str(now)},
                    ":t": {"S": schema.META_ITEM},
                    ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
                    ":thr": {"S": thread_id},
                    ":ttl": {"N": str(now // 1000 + ttl_s)},
                    ":one": {"N": "1"},
                },
            ),
        )
    except ClientError as exc:
        if _code(exc) == "ConditionalCheckFailedException":
            raise LeaseLostError(
                f"request {request_id!r} on thread {thread_id!r} completed meanwhile"
            ) from exc
        raise


def _op_finish_request(
    where: _Where,
    thread_id: str,
    request_id: str,
    owner: str,
    *,
    status: str,
    result: tuple[str, bytes] | None,
    result_size: int | None,
    error: str | None,
    ttl_s: int,
    clock: Callable[[], float],
    fence: _Fence | None = None,
) -> Op[None]:
    now = _now_ms(clock)
    names = {"#st": _STATUS, "#o": _OWNER, "#fin": _FINISHED, "#ttl": schema.TTL_ATTRIBUTE}
    values: dict[str, Any] = {
        ":st": {"S": status},
        ":o": {"S": owner},
        ":now": {"N": str(now)},
        ":ttl": {"N": str(now // 1000 + ttl_s)},
    }
    sets = ["#st = :st", "#fin = :now", "#ttl = :ttl"]
    if result is not None:
        names.update({"#rt": _RESULT_TYPE, "#rv": _RESULT})
        values.update({":rt": {"S": result[0]}, ":rv": {"B": result[1]}})
        sets += ["#rt = :rt", "#rv = :rv"]
    if result_size is not None:
        names["#rs"] = _RESULT_SIZE
        values[":rs"] = {"N": str(result_size)}
        sets.append("#rs = :rs")
    if error is not None:
        names["#err"] = _ERROR
        values[":err"] = {"S": error[:1000]}
        sets.append("#err = :err")
    try:
        yield from _fenced(
            fence,
            ddb(
                "update_item",
                TableName=where.table,
                Key=_request_key(where, request_id),
                UpdateExpression="SET " + ", ".join(sets),
                # Only the attempt that started the request may finish it: if our
                # lease lapsed and another owner restarted the request, its
                # record is not ours to overwrite.
                ConditionExpression="#o = :o",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            ),
        )
    except ClientError as exc:
        if _code(exc) == "ConditionalCheckFailedException":
            raise LeaseLostError(
                f"request {request_id!r} on thread {thread_id!r} was taken over by another owner "
                "after our lease expired; its result was not recorded"
            ) from exc
        raise


# ------------------------------------------------------------------ drivers


def _sync_driver(client: Any) -> SyncDriver:
    """The shared sync driver (``_driver``) on one boto3 DynamoDB client.

    Short-lived, so it keeps no thread pool between ``Gather`` requests.
    """
    return SyncDriver(Clients(dynamodb=client), keep_pool=False)


def _async_driver(client: Any) -> AsyncDriver:
    """The shared async driver (``_driver``) on one aiobotocore DynamoDB client."""
    return AsyncDriver(Clients(dynamodb=client))


def _sync_client(saver: Any, client: Any) -> Any:
    if client is not None:
        return client
    return saver.clients["dynamodb"]


async def _async_client(saver: Any, client: Any) -> Any:
    if client is not None:
        return client
    await saver.ensure_clients()
    return saver.clients["dynamodb"]


# -------------------------------------------------------------------- lease


class _LeaseBase:
    def __init__(
        self,
        target: Any,
        thread_id: str,
        *,
        table_name: str | None = None,
        lease_seconds: float = 30.0,
        wait_seconds: float = 0.0,
        poll_seconds: float = 0.2,
        owner: str | None = None,
        heartbeat: bool = True,
        clock: Callable[[], float] = _wall_now,
        tenant_prefix: str = "",
    ) -> None:
        _validate_ids(thread_id)
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be > 0")
        if wait_seconds < 0 or poll_seconds <= 0:
            raise ValueError("wait_seconds must be >= 0 and poll_seconds > 0")
        self._saver, self.table_name, self._client = _resolve_target(target, table_name)
        self.thread_id = thread_id
        # The lock lives in the thread's own partition: under the saver's
        # tenant prefix, where IAM's LeadingKeys condition lets the tenant write.
        self._where = _Where(self.table_name, _partition_key(self._saver, thread_id, tenant_prefix))
        _validate_ids(thread_id, pk=self._where.pk)
        self.lease_seconds = lease_seconds
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds
        # A fresh random token per lease object: two objects in one process
        # are two owners (as two Lambda invocations in one container are).
        self.owner = owner or uuid.uuid4().hex
        self.heartbeat = heartbeat
        self.clock = clock
        self.info: LeaseInfo | None = None
        #: Set when a heartbeat found the lease taken over.
        self.lost = False
        self._rvn = ""
        # Monotonic time our lease runs out: judged from when we *sent* the
        # last acquisition or heartbeat (a waiter starts counting later).
        self._valid_until = 0.0

    @property
    def held(self) -> bool:
        """Whether this object believes it holds the lease (and it has not expired).

        Judged on this process's monotonic clock, from when the last
        acquisition or heartbeat was sent: no wall clock is involved.
        """
        return self.info is not None and not self.lost and time.monotonic() < self._valid_until

    def _took(self, taken: _Taken) -> LeaseInfo:
        self.info, self._rvn = taken.info, taken.rvn
        self._valid_until = taken.sent + self.lease_seconds
        return taken.info

    def _fence(self) -> _Fence:
        if self.info is None:
            raise LeaseLostError(f"the lease on thread {self.thread_id!r} is not held")
        return _Fence(self._where, self.thread_id, self.owner, self.info.token)

    def bind(self, saver: Any = None) -> Any:
        """A copy of ``saver`` whose writes land only while this lease is held.

        ``put`` and ``put_writes`` of the copy each become one
        ``TransactWriteItems``: a ``ConditionCheck`` that the thread's lock
        still carries this owner and fencing token, plus the usual write. A
        holder paused past its lease and taken over gets
        :class:`LeaseLostError` and nothing lands (payloads it uploaded
        before are unreferenced orphans, which the orphan sweeper removes).
        The copy shares the saver's clients and caches; do not close it, and
        use it only for this lease's thread (other threads raise
        ``ValueError``). Reads are unchanged.

        Args:
            saver: the saver to bind (default: the lease's own saver, when the
                lease was created from a saver).

        Returns:
            A shallow copy of ``saver`` of a subclass of its type.

        Raises:
            LeaseLostError: the lease is not held (acquire it first).

        Example:
            ```python
            with ThreadLease(saver, "t-1", lease_seconds=60) as lease:
                graph.copy({"checkpointer": lease.bind()}).invoke(None, config)
            ```
        """
        target = saver if saver is not None else self._saver
        if target is None:
            raise ValueError("bind() needs a saver when the lease was created from a client")
        return _bound_copy(target, self._fence())

    def _acquire_op(self) -> Op[_Taken]:
        return _op_acquire(
            self._where,
            self.thread_id,
            self.owner,
            int(self.lease_seconds * 1000),
            int(self.wait_seconds * 1000),
            int(self.poll_seconds * 1000),
            self.clock,
        )

    def _renew_op(self) -> Op[_Taken]:
        return _op_renew(
            self._where, self.thread_id, self.owner, self._rvn, int(self.lease_seconds * 1000), self.clock
        )

    def _release_op(self) -> Op[bool]:
        return _op_release(self._where, self.thread_id, self.owner, self._rvn)


class ThreadLease(_LeaseBase):
    """A lease lock on one thread, for synchronous code (boto3).

    Args:
        target: a ``DynamoDBSaver`` (its client and table are used) or a
            boto3 DynamoDB client (then ``table_name`` is required).
        thread_id: the thread to lock.
        table_name: the checkpoint table (default: the saver's).
        lease_seconds: how long the lock stays ours without renewal. A
            holder that dies keeps others out until a waiter has watched its
            lock unchanged for this long (on the waiter's monotonic clock).
        wait_seconds: how long :meth:`acquire` waits for a busy lock before
            raising :class:`LeaseUnavailableError` (``0``: try once).
        poll_seconds: retry interval while waiting.
        owner: owner token (default: a random one per object).
        heartbeat: renew in a background thread every third of the lease
            while held, so long work does not lose the lock.
        clock: wall-clock source (epoch seconds) of the ``lx`` and TTL
            attributes; never used to decide expiry.
        tenant_prefix: with a plain client, the tenant prefix of the saver
            that writes the thread (a saver target brings its own), so the
            lock lands in the thread's partition.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.lock import ThreadLease, LeaseUnavailableError

        try:
            with ThreadLease(saver, "thread-1", lease_seconds=60, wait_seconds=5) as lease:
                graph.invoke(Command(resume=answer), {"configurable": {"thread_id": "thread-1"}})
        except LeaseUnavailableError:
            ...  # another worker is running this thread: answer 409 / retry later
        ```
    """

    def __init__(self, target: Any, thread_id: str, **kwargs: Any) -> None:
        super().__init__(target, thread_id, **kwargs)
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _dynamodb(self) -> Any:
        return _sync_client(self._saver, self._client)

    def acquire(self) -> LeaseInfo:
        """Take the lease, waiting up to ``wait_seconds``.

        Raises:
            LeaseUnavailableError: another owner still holds it.
        """
        info = self._took(_sync_driver(self._dynamodb()).run(self._acquire_op()))
        self.lost = False
        if self.heartbeat:
            self._start_heartbeat()
        return info

    def renew(self) -> LeaseInfo:
        """Extend the lease by ``lease_seconds`` from now.

        Raises:
            LeaseLostError: another owner took it over (or it was released).
        """
        try:
            return self._took(_sync_driver(self._dynamodb()).run(self._renew_op()))
        except LeaseLostError:
            self.lost = True
            raise

    def release(self) -> bool:
        """Release the lease. Returns ``False`` if it was no longer ours."""
        self._stop_heartbeat()
        if self.info is None:
            return False
        try:
            return _sync_driver(self._dynamodb()).run(self._release_op())
        finally:
            self.info = None

    def _start_heartbeat(self) -> None:
        self._stop_heartbeat()
        self._stop = threading.Event()
        interval = self.lease_seconds / 3

        def beat(stop: threading.Event) -> None:
            while not stop.wait(interval):
                try:
                    self.renew()
                except LeaseLostError:
                    return
                except Exception:  # transient: the next beat retries before expiry
                    continue

        self._beat = threading.Thread(target=beat, args=(self._stop,), name="lease-heartbeat", daemon=True)
        self._beat.start()

    def _stop_heartbeat(self) -> None:
        self._stop.set()
        if self._beat is not None and self._beat is not threading.current_thread():
            self._beat.join()
        self._beat = None

    def __enter__(self) -> ThreadLease:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class AsyncThreadLease(_LeaseBase):
    """A lease lock on one thread, for asyncio code (aiobotocore).

    Same arguments as :class:`ThreadLease`; ``target`` is an
    ``AsyncDynamoDBSaver`` or an aiobotocore DynamoDB client. The heartbeat
    is an asyncio task on the running loop.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.lock import AsyncThreadLease

        async with AsyncThreadLease(saver, "thread-1", lease_seconds=60) as lease:
            await graph.ainvoke(None, {"configurable": {"thread_id": "thread-1"}})
        ```
    """

    def __init__(self, target: Any, thread_id: str, **kwargs: Any) -> None:
        super().__init__(target, thread_id, **kwargs)
        self._beat: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def _dynamodb(self) -> Any:
        return await _async_client(self._saver, self._client)

    async def acquire(self) -> LeaseInfo:
        """Take the lease, waiting up to ``wait_seconds`` (see :meth:`ThreadLease.acquire`)."""
        info = self._took(await _async_driver(await self._dynamodb()).run(self._acquire_op()))
        self.lost = False
        if self.heartbeat:
            await self._stop_heartbeat()
            self._stop = asyncio.Event()
            self._beat = asyncio.get_running_loop().create_task(self._heartbeat(self._stop))
        return info

    async def renew(self) -> LeaseInfo:
        """Extend the lease (see :meth:`ThreadLease.renew`)."""
        try:
            return self._took(await _async_driver(await self._dynamodb()).run(self._renew_op()))
        except LeaseLostError:
            self.lost = True
            raise

    async def release(self) -> bool:
        """Release the lease. Returns ``False`` if it was no longer ours."""
        await self._stop_heartbeat()
        if self.info is None:
            return False
        try:
            return await _async_driver(await self._dynamodb()).run(self._release_op())
        finally:
            self.info = None

    async def _heartbeat(self, stop: asyncio.Event) -> None:
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.lease_seconds / 3)
            if stop.is_set():
                return
            try:
                await self.renew()
            except LeaseLostError:
                return
            except Exception:  # transient: retried on the next beat
                continue

    async def _stop_heartbeat(self) -> None:
        beat, self._beat = self._beat, None
        self._stop.set()
        if beat is not None and beat is not asyncio.current_task():
            # Let a heartbeat in flight finish rather than cancel it: a renewal
            # that lands unseen would leave us releasing with a stale RVN.
            with contextlib.suppress(asyncio.CancelledError):
                await beat

    async def __aenter__(self) -> AsyncThreadLease:
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()


# -------------------------------------------------------------- staleness


def _latest_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def _check(thread_id: str, expected: ExpectedCheckpoint, actual: str | None) -> None:
    if isinstance(expected, _AnyCheckpoint):
        return
    if expected != actual:
        raise StaleCheckpointError(thread_id, expected, actual)


def check_checkpoint(saver: Any, thread_id: str, expected_checkpoint_id: ExpectedCheckpoint) -> str | None:
    """Raise :class:`StaleCheckpointError` unless the thread's latest root checkpoint is the expected one.

    Args:
        saver: a ``DynamoDBSaver`` (any sync ``BaseCheckpointSaver`` works).
        thread_id: the thread.
        expected_checkpoint_id: the id the caller saw; ``None`` if the caller
            expects a new thread; :data:`ANY_CHECKPOINT` to accept anything.

    Returns:
        The latest checkpoint id (``None`` if the thread has none).

    Example:
        >>> check_checkpoint(saver, "t-1", snapshot.config["configurable"]["checkpoint_id"])  # doctest: +SKIP
    """
    if isinstance(expected_checkpoint_id, _AnyCheckpoint):
        return None
    latest = saver.get_tuple(_latest_config(thread_id))
    actual = latest.config["configurable"]["checkpoint_id"] if latest else None
    _check(thread_id, expected_checkpoint_id, actual)
    return actual


async def acheck_checkpoint(
    saver: Any, thread_id: str, expected_checkpoint_id: ExpectedCheckpoint
) -> str | None:
    """Async :func:`check_checkpoint` (uses ``saver.aget_tuple``)."""
    if isinstance(expected_checkpoint_id, _AnyCheckpoint):
        return None
    latest = await saver.aget_tuple(_latest_config(thread_id))
    actual = latest.config["configurable"]["checkpoint_id"] if latest else None
    _check(thread_id, expected_checkpoint_id, actual)
    return actual


# --------------------------------------------------------------- run_once


def get_request(
    saver: Any, thread_id: str, request_id: str, *, dynamodb_client: Any = None
) -> RequestRecord | None:
    """The idempotency record of a request, or ``None`` if it never started.

    Example:
        >>> rec = get_request(saver, "t-1", "req-42")  # doctest: +SKIP
        >>> rec.status  # doctest: +SKIP
        'done'
    """
    where = _Where(saver.table_name, _partition_key(saver, thread_id))
    _validate_ids(thread_id, request_id, where.pk)
    item = _sync_driver(_sync_client(saver, dynamodb_client)).run(_op_get_request(where, request_id))
    return _record(item) if item else None


def _replay(saver: Any, thread_id: str, request_id: str, item: dict[str, Any]) -> Any:
    if _RESULT not in item:
        size = item.get(_RESULT_SIZE, {}).get("N", "?")
        raise ResultNotStoredError(
            f"request {request_id!r} on thread {thread_id!r} already completed, but its result "
            f"({size} bytes serialized) was over the size limit and was not stored; "
            "read the thread's state instead"
        )
    where = f"request record {request_id!r} of thread {thread_id!r}"
    try:
        typed = (item[_RESULT_TYPE]["S"], bytes(item[_RESULT]["B"]))
    except (KeyError, TypeError) as exc:
        raise CorruptPayloadError(f"{where}: malformed stored result") from exc
    # The same policy as every checkpoint payload (the saver's _unpack:
    # strict msgpack, and no plaintext where the saver encrypts): anyone who
    # can write the thread's partition can forge this record.
    return saver._unpack(saver.codec.pack(typed), where)


def _serialize(saver: Any, value: Any, max_bytes: int) -> tuple[tuple[str, bytes] | None, int]:
    type_name, data = saver.serde.dumps_typed(value)
    size = len(data) + len(type_name)
    return ((type_name, data) if size <= max_bytes else None), size


def _is_recovery(item: dict[str, Any] | None, expected: ExpectedCheckpoint) -> bool:
    """An earlier attempt of this very request started from the checkpoint the caller saw.

    Then the thread may have moved on *because of that attempt* (it crashed
    or failed half-way), so the staleness check must not reject the retry.
    """
    return (
        item is not None
        and item[_STATUS]["S"] in (STATUS_RUNNING, STATUS_FAILED)
        and item.get(_START_CP, {}).get("S") == _expected_marker(expected)
    )


def _check_limits(max_result_bytes: int) -> None:
    if not 0 <= max_result_bytes <= HARD_MAX_RESULT_BYTES:
        raise ValueError(f"max_result_bytes must be between 0 and {HARD_MAX_RESULT_BYTES}")


#: Key of the request id in ``RunContext.config()["metadata"]``; LangGraph
#: copies config metadata into every checkpoint the run writes.
REQUEST_ID_METADATA_KEY: Final = "request_id"


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


def _wants_context(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes a required positional argument (then it gets the RunContext)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return any(p.kind in positional and p.default is inspect.Parameter.empty for p in params)


def _finish_done_op(
    saver: Any, where: _Where, request_id: str, lease: _LeaseBase, value: Any, max_bytes: int, ttl_s: int
) -> Op[None]:
    stored, size = _serialize(saver, value, max_bytes)
    # Conditional on our owner token *and* fence in one transaction: a holder
    # that lost the lease while working learns it here, before reporting success.
    return _op_finish_request(
        where,
        lease.thread_id,
        request_id,
        lease.owner,
        status=STATUS_DONE,
        result=stored,
        result_size=size,
        error=None,
        ttl_s=ttl_s,
        clock=lease.clock,
        fence=lease._fence(),
    )


def _failed_op(where: _Where, request_id: str, lease: _LeaseBase, exc: BaseException, ttl_s: int) -> Op[None]:
    return _op_finish_request(
        where,
        lease.thread_id,
        request_id,
        lease.owner,
        status=STATUS_FAILED,
        result=None,
        result_size=None,
        error=repr(exc),
        ttl_s=ttl_s,
        clock=lease.clock,
        fence=lease._fence(),
    )


def _begin_op(
    where: _Where, request_id: str, lease: _LeaseBase, expected: ExpectedCheckpoint, ttl_s: int
) -> Op[None]:
    return _op_begin_request(
        where,
        lease.thread_id,
        request_id,
        lease.owner,
        _expected_marker(expected),
        ttl_s,
        lease.clock,
        fence=lease._fence(),
    )


def run_once(
    saver: Any,
    thread_id: str,
    request_id: str,
    expected_checkpoint_id: ExpectedCheckpoint,
    fn: Callable[[], T] | Callable[[RunContext], T],
    *,
    recover: Callable[[RunContext], T | None] | None = None,
    lease_seconds: float = 60.0,
    wait_seconds: float = 10.0,
    result_ttl_seconds: int = 7 * 24 * 3600,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    dynamodb_client: Any = None,
    clock: Callable[[], float] = _wall_now,
) -> RunOutcome[T]:
    """Run ``fn`` at most once for ``(thread_id, request_id)``, under the thread's lease.

    1. A request already done returns its stored result (``replayed=True``)
       without taking the lease or running anything. The stored result goes
       through the saver's payload policy (strict msgpack; refused unless
       encrypted when the saver encrypts): a forged record raises
       ``CorruptPayloadError``.
    2. Otherwise the lease is taken (waiting up to ``wait_seconds``), the
       record is read again (a concurrent twin may just have finished), the
       thread's latest checkpoint is compared with ``expected_checkpoint_id``
       and the request is marked running.
    3. If an earlier attempt of this request started and recorded no outcome
       (it crashed between its work and its ``done`` record, or failed) and
       ``recover`` is given, ``recover(ctx)`` is asked first: a value other
       than ``None`` is the outcome rebuilt from what that attempt stored
       (e.g. the thread's state, when its latest checkpoint carries this
       request id: :meth:`RunContext.wrote`); it is recorded and returned
       (``replayed=True, recovered=True``) and ``fn`` does not run.
    4. Otherwise ``fn`` runs (given a :class:`RunContext` if it takes an
       argument: write through ``ctx.saver``, the lease-bound saver, with
       ``ctx.config()``) with the lease renewed in the background; its
       result is stored (up to ``max_result_bytes``) and the request marked
       done in one transaction that checks we still hold the lease.

    If ``fn`` raises, the request is marked failed and the exception
    propagates; a retry with the same ``request_id`` and the same expected
    checkpoint runs again (``recovered=True``), as does a retry after a
    crash once the crashed attempt's lease was seen unchanged for a lease
    duration. LangGraph resumes from the last saved checkpoint and pending
    writes, so finished nodes of the crashed attempt do not run again.

    A worker paused past its lease (and taken over) gets
    :class:`LeaseLostError`, never success: its fenced writes and its
    ``done`` record fail. Side effects ``fn`` performed outside the store
    before the pause cannot be undone by the store.

    Args:
        saver: a ``DynamoDBSaver`` (table, client and serde are taken from it).
        thread_id: the thread.
        request_id: the caller's id for this request (scoped to the thread).
        expected_checkpoint_id: latest checkpoint id the caller saw, ``None``
            for a new thread, or :data:`ANY_CHECKPOINT`.
        fn: the work: ``fn()`` or ``fn(ctx)``, e.g.
            ``lambda ctx: graph.copy({"checkpointer": ctx.saver}).invoke(x, ctx.config())``.
        recover: rebuilds the outcome of an earlier attempt that stored its
            work but not its result; ``None`` when it cannot (then ``fn`` runs).
        lease_seconds: lease length (renewed every third of it while running).
        wait_seconds: how long to wait for a busy thread.
        result_ttl_seconds: how long DynamoDB keeps the record (TTL).
        max_result_bytes: largest serialized result stored for replay.
        dynamodb_client: a boto3 client to use instead of the saver's.
        clock: wall-clock time source (record timestamps, TTLs), for tests.

    Returns:
        A :class:`RunOutcome` with the value and what happened.

    Raises:
        LeaseUnavailableError: the thread stayed locked for ``wait_seconds``.
        StaleCheckpointError: the thread is not at ``expected_checkpoint_id``.
        ResultNotStoredError: the request was done before, result not stored.
        LeaseLostError: the lease was taken over while ``fn`` ran.
        CorruptPayloadError: the stored result breaks the saver's payload policy.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.lock import run_once

        outcome = run_once(
            saver, thread_id, request_id, seen_checkpoint_id,
            lambda ctx: graph.copy({"checkpointer": ctx.saver}).invoke(
                Command(resume=answer), ctx.config(), durability="sync"
            ),
        )
        return outcome.value  # the same value for every retry of request_id
        ```
    """
    _validate_ids(thread_id, request_id)
    _check_limits(max_result_bytes)
    client = _sync_client(saver, dynamodb_client)
    driver = _sync_driver(client)
    where = _Where(saver.table_name, _partition_key(saver, thread_id))
    _validate_ids(thread_id, request_id, where.pk)
    item = driver.run(_op_get_request(where, request_id))
    if item is not None and item[_STATUS]["S"] == STATUS_DONE:
        return RunOutcome(_replay(saver, thread_id, request_id, item), replayed=True, recovered=False)
    lease = ThreadLease(
        client,
        thread_id,
        table_name=where.table,
        lease_seconds=lease_seconds,
        wait_seconds=wait_seconds,
        clock=clock,
        tenant_prefix=getattr(saver, "tenant_prefix", "") or "",
    )
    with lease:
        item = driver.run(_op_get_request(where, request_id))
        if item is not None and item[_STATUS]["S"] == STATUS_DONE:
            return RunOutcome(_replay(saver, thread_id, request_id, item), replayed=True, recovered=False)
        recovered = _is_recovery(item, expected_checkpoint_id)
        if not recovered:
            check_checkpoint(saver, thread_id, expected_checkpoint_id)
        driver.run(_begin_op(where, request_id, lease, expected_checkpoint_id, result_ttl_seconds))
        ctx = RunContext(lease.bind(saver), thread_id, request_id, earlier_attempt=item is not None)
        try:
            value = recover(ctx) if recover is not None and ctx.earlier_attempt else None
            rebuilt = value is not None
            if not rebuilt:
                value = fn(ctx) if _wants_context(fn) else fn()  # type: ignore[call-arg]
        except BaseException as exc:
            # Best effort: the original error matters more than the bookkeeping
            # (an unrecorded failure still reads as "running", also retryable).
            with contextlib.suppress(Exception):
                driver.run(_failed_op(where, request_id, lease, exc, result_ttl_seconds))
            raise
        driver.run(
            _finish_done_op(saver, where, request_id, lease, value, max_result_bytes, result_ttl_seconds),
        )
    return RunOutcome(value, replayed=rebuilt, recovered=recovered or rebuilt)  # type: ignore[arg-type]


async def arun_once(
    saver: Any,
    thread_id: str,
    request_id: str,
    expected_checkpoint_id: ExpectedCheckpoint,
    fn: Callable[[], Awaitable[T]] | Callable[[RunContext], Awaitable[T]],
    *,
    recover: Callable[[RunContext], Awaitable[T | None]] | None = None,
    lease_seconds: float = 60.0,
    wait_seconds: float = 10.0,
    result_ttl_seconds: int = 7 * 24 * 3600,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    dynamodb_client: Any = None,
    clock: Callable[[], float] = _wall_now,
) -> RunOutcome[T]:
    """Async :func:`run_once`: ``saver`` is an ``AsyncDynamoDBSaver``; ``fn`` and ``recover`` are coroutine functions.

    Example:
        ```python
        outcome = await arun_once(
            saver, thread_id, request_id, seen_checkpoint_id,
            lambda ctx: graph.copy({"checkpointer": ctx.saver}).ainvoke(Command(resume=answer), ctx.config()),
        )
        ```
    """
    _validate_ids(thread_id, request_id)
    _check_limits(max_result_bytes)
    client = await _async_client(saver, dynamodb_client)
    driver = _async_driver(client)
    where = _Where(saver.table_name, _partition_key(saver, thread_id))
    _validate_ids(thread_id, request_id, where.pk)
    item = await driver.run(_op_get_request(where, request_id))
    if item is not None and item[_STATUS]["S"] == STATUS_DONE:
        return RunOutcome(_replay(saver, thread_id, request_id, item), replayed=True, recovered=False)
    lease = AsyncThreadLease(
        client,
        thread_id,
        table_name=where.table,
        lease_seconds=lease_seconds,
        wait_seconds=wait_seconds,
        clock=clock,
        tenant_prefix=getattr(saver, "tenant_prefix", "") or "",
    )
    async with lease:
        item = await driver.run(_op_get_request(where, request_id))
        if item is not None and item[_STATUS]["S"] == STATUS_DONE:
            return RunOutcome(_replay(saver, thread_id, request_id, item), replayed=True, recovered=False)
        recovered = _is_recovery(item, expected_checkpoint_id)
        if not recovered:
            await acheck_checkpoint(saver, thread_id, expected_checkpoint_id)
        await driver.run(_begin_op(where, request_id, lease, expected_checkpoint_id, result_ttl_seconds))
        ctx = RunContext(lease.bind(saver), thread_id, request_id, earlier_attempt=item is not None)
        try:
            value = await recover(ctx) if recover is not None and ctx.earlier_attempt else None
            rebuilt = value is not None
            if not rebuilt:
                value = await (fn(ctx) if _wants_context(fn) else fn())  # type: ignore[call-arg]
        except BaseException as exc:
            with contextlib.suppress(Exception):
                await driver.run(_failed_op(where, request_id, lease, exc, result_ttl_seconds))
            raise
        await driver.run(
            _finish_done_op(saver, where, request_id, lease, value, max_result_bytes, result_ttl_seconds),
        )
    return RunOutcome(value, replayed=rebuilt, recovered=recovered or rebuilt)  # type: ignore[arg-type]
