"""Per-thread lease locks, request-id idempotency and checkpoint staleness checks.

LangGraph serialises nothing across processes: two Lambda instances that
resume the same thread at once (a double click, a client retry after a
timeout) would both run the graph from the same checkpoint and both perform
its side effects. This module gives the caller three small tools against
that, all stored in the checkpoint table next to the thread's own items:

* :class:`ThreadLease` / :class:`AsyncThreadLease`: a lease lock on one
  thread (item ``PK = thread``, ``SK = schema.LOCK_SK``). Taken with one
  conditional ``UpdateItem`` that succeeds only if the lock is absent, its
  lease has expired, or the caller already owns it; renewed while held (a
  heartbeat); released with a ``DeleteItem`` conditional on the owner. A
  holder that crashed loses the lock when its lease runs out: there is no
  other way to tell a dead holder from a slow one.
* :func:`run_once` / :func:`arun_once`: run a function at most once per
  ``(thread_id, request_id)`` under the lease, recording its result (small
  results only, see :data:`DEFAULT_MAX_RESULT_BYTES`) so that a repeated
  request returns the first result without running anything.
* :func:`check_checkpoint` / :func:`acheck_checkpoint`: refuse to act on a
  thread whose latest checkpoint is no longer the one the caller saw
  (:class:`StaleCheckpointError`), e.g. an answer submitted from a stale page.

The logic is written once, as generators that yield DynamoDB calls (the same
sans-I/O style as the savers' core), and driven by a boto3 or an aiobotocore
client.

Clocks: DynamoDB has no server-side "now", so lease expiry is compared with
the *caller's* wall clock. Choose ``lease_seconds`` well above the clock skew
between your hosts (NTP keeps Lambda hosts within milliseconds) and keep the
heartbeat on for work that can outlast a lease.

Every item written here carries ``schema.ATTR.FORMAT`` (the savers' readers
check it on every item of a thread) and the ``schema.TTL_ATTRIBUTE``, so
DynamoDB eventually removes abandoned locks and old request records.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, Generic, TypeVar

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._ops import Call, Sleep, ddb
from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = [
    "ANY_CHECKPOINT",
    "DEFAULT_MAX_RESULT_BYTES",
    "AsyncThreadLease",
    "LeaseInfo",
    "LeaseLostError",
    "LeaseUnavailableError",
    "RequestRecord",
    "ResultNotStoredError",
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
#: only housekeeping (expiry is decided by ``lx``, never by the TTL).
_LOCK_TTL_GRACE_S: Final = 3600

# Attribute names of lock and request items (short: DynamoDB bills names).
_OWNER = "own"  # owner token of the lock / of the running attempt
_LEASE_EXPIRES = "lx"  # lease expiry, epoch milliseconds
_ACQUIRED = "la"  # when the current owner took the lock, epoch ms
_FENCE = "fen"  # fencing token: +1 on every acquisition by a new owner
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
        expires_at: when the holder's lease runs out (epoch seconds), if known.

    Example:
        ```python
        try:
            ThreadLease(saver, "t-1").acquire()
        except LeaseUnavailableError as busy:
            retry_in = max(0.0, (busy.expires_at or 0) - time.time())
        ```
    """

    def __init__(self, thread_id: str, holder: str | None, expires_at: float | None) -> None:
        self.thread_id = thread_id
        self.holder = holder
        self.expires_at = expires_at
        when = f" until {expires_at:.3f}" if expires_at is not None else ""
        super().__init__(f"thread {thread_id!r} is locked by another owner{when}")


class LeaseLostError(CheckpointStoreError):
    """The lease expired and was taken over (or released) while we thought we held it.

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
        expires_at: lease expiry, epoch seconds (caller's clock).
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
    pk_of = getattr(saver, "_pk", None)
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


def _op_acquire(
    where: _Where,
    thread_id: str,
    owner: str,
    lease_ms: int,
    wait_ms: int,
    poll_ms: int,
    clock: Callable[[], float],
) -> Op[LeaseInfo]:
    deadline = _now_ms(clock) + wait_ms
    while True:
        now = _now_ms(clock)
        expires = now + lease_ms
        try:
            resp = yield ddb(
                "update_item",
                TableName=where.table,
                Key=_lock_key(where),
                # One conditional write: free, expired, or already ours. The
                # fencing token grows with every acquisition.
                UpdateExpression=(
                    "SET #o = :o, #lx = :lx, #t = :t, #f = :f, #thr = :thr, #ttl = :ttl, #la = :now "
                    "ADD #fen :inc"
                ),
                ConditionExpression="attribute_not_exists(#pk) OR #lx < :now OR #o = :o",
                ExpressionAttributeNames={
                    "#pk": ATTR.PK,
                    "#o": _OWNER,
                    "#lx": _LEASE_EXPIRES,
                    "#t": ATTR.KIND,
                    "#f": ATTR.FORMAT,
                    "#thr": ATTR.THREAD_ID,
                    "#ttl": schema.TTL_ATTRIBUTE,
                    "#la": _ACQUIRED,
                    "#fen": _FENCE,
                },
                ExpressionAttributeValues={
                    ":o": {"S": owner},
                    ":lx": {"N": str(expires)},
                    ":now": {"N": str(now)},
                    ":t": {"S": schema.META_ITEM},
                    ":f": {"N": str(schema.BASE_FORMAT_VERSION)},
                    ":thr": {"S": thread_id},
                    ":ttl": {"N": str(expires // 1000 + _LOCK_TTL_GRACE_S)},
                    ":inc": {"N": "1"},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
        else:
            return _lease_info(thread_id, resp["Attributes"])
        # Busy: read who holds it, to wait no longer than needed and to say so.
        got = yield ddb("get_item", TableName=where.table, Key=_lock_key(where), ConsistentRead=True)
        item = got.get("Item")
        holder = item.get(_OWNER, {}).get("S") if item else None
        held_until = int(item[_LEASE_EXPIRES]["N"]) if item and _LEASE_EXPIRES in item else None
        now = _now_ms(clock)
        if now >= deadline:
            raise LeaseUnavailableError(
                thread_id, holder, held_until / 1000 if held_until is not None else None
            )
        # Sleep until the next poll, the holder's expiry or our deadline,
        # whichever comes first (plus a millisecond so the expiry has passed).
        nap = min(poll_ms, deadline - now)
        if held_until is not None:
            nap = min(nap, max(1, held_until - now + 1))
        yield Sleep(max(nap, 1) / 1000)


def _op_renew(
    where: _Where, thread_id: str, owner: str, lease_ms: int, clock: Callable[[], float]
) -> Op[LeaseInfo]:
    now = _now_ms(clock)
    expires = now + lease_ms
    try:
        resp = yield ddb(
            "update_item",
            TableName=where.table,
            Key=_lock_key(where),
            UpdateExpression="SET #lx = :lx, #ttl = :ttl",
            # Only the owner renews; an expired lease not yet taken over is
            # still ours to extend (nobody else relied on it being free).
            ConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": _OWNER, "#lx": _LEASE_EXPIRES, "#ttl": schema.TTL_ATTRIBUTE},
            ExpressionAttributeValues={
                ":o": {"S": owner},
                ":lx": {"N": str(expires)},
                ":ttl": {"N": str(expires // 1000 + _LOCK_TTL_GRACE_S)},
            },
            ReturnValues="ALL_NEW",
        )
    except ClientError as exc:
        if _code(exc) == "ConditionalCheckFailedException":
            raise LeaseLostError(f"lease on thread {thread_id!r} was taken over or released") from exc
        raise
    return _lease_info(thread_id, resp["Attributes"])


def _op_release(where: _Where, thread_id: str, owner: str) -> Op[bool]:
    try:
        yield ddb(
            "delete_item",
            TableName=where.table,
            Key=_lock_key(where),
            ConditionExpression="#o = :o",
            ExpressionAttributeNames={"#o": _OWNER},
            ExpressionAttributeValues={":o": {"S": owner}},
        )
    except ClientError as exc:
        if _code(exc) == "ConditionalCheckFailedException":
            return False  # someone took it over after our lease expired
        raise
    return True


def _op_get_request(where: _Where, request_id: str) -> Op[dict[str, Any] | None]:
    resp = yield ddb(
        "get_item", TableName=where.table, Key=_request_key(where, request_id), ConsistentRead=True
    )
    item: dict[str, Any] | None = resp.get("Item")
    return item


def _op_begin_request(
    where: _Where,
    thread_id: str,
    request_id: str,
    owner: str,
    start_cp: str,
    ttl_s: int,
    clock: Callable[[], float],
) -> Op[None]:
    now = _now_ms(clock)
    try:
        yield ddb(
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
        yield ddb(
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
        )
    except ClientError as exc:
        if _code(exc) == "ConditionalCheckFailedException":
            raise LeaseLostError(
                f"request {request_id!r} on thread {thread_id!r} was taken over by another owner "
                "after our lease expired; its result was not recorded"
            ) from exc
        raise


# ------------------------------------------------------------------ drivers


def _drive(client: Any, op: Op[T]) -> T:
    """Run an operation with a boto3 client."""
    resp: Any = None
    exc: BaseException | None = None
    while True:
        try:
            req = op.throw(exc) if exc is not None else op.send(resp)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        resp, exc = None, None
        try:
            if isinstance(req, Sleep):
                time.sleep(req.seconds)
            else:
                resp = getattr(client, req.method)(**req.kwargs)
        except Exception as e:  # handed to the operation, which may handle it
            exc = e


async def _adrive(client: Any, op: Op[T]) -> T:
    """Run an operation with an aiobotocore client."""
    resp: Any = None
    exc: BaseException | None = None
    while True:
        try:
            req = op.throw(exc) if exc is not None else op.send(resp)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        resp, exc = None, None
        try:
            if isinstance(req, Sleep):
                await asyncio.sleep(req.seconds)
            else:
                resp = await getattr(client, req.method)(**req.kwargs)
        except Exception as e:
            exc = e


def _sync_client(saver: Any, client: Any) -> Any:
    if client is not None:
        return client
    return saver._clients["dynamodb"]


async def _async_client(saver: Any, client: Any) -> Any:
    if client is not None:
        return client
    await saver._ensure_clients()
    return saver._clients["dynamodb"]


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
        clock: Callable[[], float] = time.time,
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

    @property
    def held(self) -> bool:
        """Whether this object believes it holds the lease (and it has not expired)."""
        return self.info is not None and not self.lost and self.info.expires_at > self.clock()

    def _acquire_op(self) -> Op[LeaseInfo]:
        return _op_acquire(
            self._where,
            self.thread_id,
            self.owner,
            int(self.lease_seconds * 1000),
            int(self.wait_seconds * 1000),
            int(self.poll_seconds * 1000),
            self.clock,
        )

    def _renew_op(self) -> Op[LeaseInfo]:
        return _op_renew(self._where, self.thread_id, self.owner, int(self.lease_seconds * 1000), self.clock)

    def _release_op(self) -> Op[bool]:
        return _op_release(self._where, self.thread_id, self.owner)


class ThreadLease(_LeaseBase):
    """A lease lock on one thread, for synchronous code (boto3).

    Args:
        target: a ``DynamoDBSaver`` (its client and table are used) or a
            boto3 DynamoDB client (then ``table_name`` is required).
        thread_id: the thread to lock.
        table_name: the checkpoint table (default: the saver's).
        lease_seconds: how long the lock stays ours without renewal. A
            holder that dies keeps others out for at most this long.
        wait_seconds: how long :meth:`acquire` waits for a busy lock before
            raising :class:`LeaseUnavailableError` (``0``: try once).
        poll_seconds: retry interval while waiting.
        owner: owner token (default: a random one per object).
        heartbeat: renew in a background thread every third of the lease
            while held, so long work does not lose the lock.
        clock: time source (epoch seconds), for tests.
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
        self.info = _drive(self._dynamodb(), self._acquire_op())
        self.lost = False
        if self.heartbeat:
            self._start_heartbeat()
        return self.info

    def renew(self) -> LeaseInfo:
        """Extend the lease by ``lease_seconds`` from now.

        Raises:
            LeaseLostError: another owner took it over (or it was released).
        """
        try:
            self.info = _drive(self._dynamodb(), self._renew_op())
        except LeaseLostError:
            self.lost = True
            raise
        return self.info

    def release(self) -> bool:
        """Release the lease. Returns ``False`` if it was no longer ours."""
        self._stop_heartbeat()
        if self.info is None:
            return False
        try:
            return _drive(self._dynamodb(), self._release_op())
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

    async def _dynamodb(self) -> Any:
        return await _async_client(self._saver, self._client)

    async def acquire(self) -> LeaseInfo:
        """Take the lease, waiting up to ``wait_seconds`` (see :meth:`ThreadLease.acquire`)."""
        self.info = await _adrive(await self._dynamodb(), self._acquire_op())
        self.lost = False
        if self.heartbeat:
            await self._stop_heartbeat()
            self._beat = asyncio.get_running_loop().create_task(self._heartbeat())
        return self.info

    async def renew(self) -> LeaseInfo:
        """Extend the lease (see :meth:`ThreadLease.renew`)."""
        try:
            self.info = await _adrive(await self._dynamodb(), self._renew_op())
        except LeaseLostError:
            self.lost = True
            raise
        return self.info

    async def release(self) -> bool:
        """Release the lease. Returns ``False`` if it was no longer ours."""
        await self._stop_heartbeat()
        if self.info is None:
            return False
        try:
            return await _adrive(await self._dynamodb(), self._release_op())
        finally:
            self.info = None

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self.renew()
            except LeaseLostError:
                return
            except Exception:  # transient: retried on the next beat
                continue

    async def _stop_heartbeat(self) -> None:
        beat, self._beat = self._beat, None
        if beat is not None and beat is not asyncio.current_task():
            beat.cancel()
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
    item = _drive(_sync_client(saver, dynamodb_client), _op_get_request(where, request_id))
    return _record(item) if item else None


def _replay(saver: Any, thread_id: str, request_id: str, item: dict[str, Any]) -> Any:
    if _RESULT not in item:
        size = item.get(_RESULT_SIZE, {}).get("N", "?")
        raise ResultNotStoredError(
            f"request {request_id!r} on thread {thread_id!r} already completed, but its result "
            f"({size} bytes serialized) was over the size limit and was not stored; "
            "read the thread's state instead"
        )
    return saver.serde.loads_typed((item[_RESULT_TYPE]["S"], bytes(item[_RESULT]["B"])))


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


def run_once(
    saver: Any,
    thread_id: str,
    request_id: str,
    expected_checkpoint_id: ExpectedCheckpoint,
    fn: Callable[[], T],
    *,
    lease_seconds: float = 60.0,
    wait_seconds: float = 10.0,
    result_ttl_seconds: int = 7 * 24 * 3600,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    dynamodb_client: Any = None,
    clock: Callable[[], float] = time.time,
) -> RunOutcome[T]:
    """Run ``fn`` at most once for ``(thread_id, request_id)``, under the thread's lease.

    1. A request already done returns its stored result (``replayed=True``)
       without taking the lease or running anything.
    2. Otherwise the lease is taken (waiting up to ``wait_seconds``), the
       record is read again (a concurrent twin may just have finished), the
       thread's latest checkpoint is compared with ``expected_checkpoint_id``
       and the request is marked running.
    3. ``fn()`` runs with the lease renewed in the background; its result is
       serialized with ``saver.serde`` and stored (up to
       ``max_result_bytes``), the request is marked done, the lease released.

    If ``fn`` raises, the request is marked failed and the exception
    propagates; a retry with the same ``request_id`` and the same expected
    checkpoint runs again (``recovered=True``), as does a retry after a
    crash once the crashed attempt's lease has expired. LangGraph resumes
    from the last saved checkpoint and pending writes, so finished nodes of
    the crashed attempt do not run again.

    Args:
        saver: a ``DynamoDBSaver`` (table, client and serde are taken from it).
        thread_id: the thread.
        request_id: the caller's id for this request (scoped to the thread).
        expected_checkpoint_id: latest checkpoint id the caller saw, ``None``
            for a new thread, or :data:`ANY_CHECKPOINT`.
        fn: the work, e.g. ``lambda: graph.invoke(Command(resume=x), config)``.
        lease_seconds: lease length (renewed every third of it while running).
        wait_seconds: how long to wait for a busy thread.
        result_ttl_seconds: how long DynamoDB keeps the record (TTL).
        max_result_bytes: largest serialized result stored for replay.
        dynamodb_client: a boto3 client to use instead of the saver's.
        clock: time source, for tests.

    Returns:
        A :class:`RunOutcome` with the value and what happened.

    Raises:
        LeaseUnavailableError: the thread stayed locked for ``wait_seconds``.
        StaleCheckpointError: the thread is not at ``expected_checkpoint_id``.
        ResultNotStoredError: the request was done before, result not stored.
        LeaseLostError: the lease was taken over while ``fn`` ran.

    Example:
        ```python
        from langgraph.checkpoint.dynamodb.lock import run_once

        outcome = run_once(
            saver, thread_id, request_id, seen_checkpoint_id,
            lambda: graph.invoke(Command(resume=answer), config, durability="sync"),
        )
        return outcome.value  # the same value for every retry of request_id
        ```
    """
    _validate_ids(thread_id, request_id)
    _check_limits(max_result_bytes)
    client = _sync_client(saver, dynamodb_client)
    where = _Where(saver.table_name, _partition_key(saver, thread_id))
    _validate_ids(thread_id, request_id, where.pk)
    item = _drive(client, _op_get_request(where, request_id))
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
        item = _drive(client, _op_get_request(where, request_id))
        if item is not None and item[_STATUS]["S"] == STATUS_DONE:
            return RunOutcome(_replay(saver, thread_id, request_id, item), replayed=True, recovered=False)
        recovered = _is_recovery(item, expected_checkpoint_id)
        if not recovered:
            check_checkpoint(saver, thread_id, expected_checkpoint_id)
        _drive(
            client,
            _op_begin_request(
                where,
                thread_id,
                request_id,
                lease.owner,
                _expected_marker(expected_checkpoint_id),
                result_ttl_seconds,
                clock,
            ),
        )
        try:
            value = fn()
        except BaseException as exc:
            # Best effort: the original error matters more than the bookkeeping
            # (an unrecorded failure still reads as "running", also retryable).
            with contextlib.suppress(Exception):
                _drive(
                    client,
                    _op_finish_request(
                        where,
                        thread_id,
                        request_id,
                        lease.owner,
                        status=STATUS_FAILED,
                        result=None,
                        result_size=None,
                        error=repr(exc),
                        ttl_s=result_ttl_seconds,
                        clock=clock,
                    ),
                )
            raise
        stored, size = _serialize(saver, value, max_result_bytes)
        _drive(
            client,
            _op_finish_request(
                where,
                thread_id,
                request_id,
                lease.owner,
                status=STATUS_DONE,
                result=stored,
                result_size=size,
                error=None,
                ttl_s=result_ttl_seconds,
                clock=clock,
            ),
        )
    return RunOutcome(value, replayed=False, recovered=recovered)


async def arun_once(
    saver: Any,
    thread_id: str,
    request_id: str,
    expected_checkpoint_id: ExpectedCheckpoint,
    fn: Callable[[], Awaitable[T]],
    *,
    lease_seconds: float = 60.0,
    wait_seconds: float = 10.0,
    result_ttl_seconds: int = 7 * 24 * 3600,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    dynamodb_client: Any = None,
    clock: Callable[[], float] = time.time,
) -> RunOutcome[T]:
    """Async :func:`run_once`: ``saver`` is an ``AsyncDynamoDBSaver``, ``fn`` a coroutine function.

    Example:
        ```python
        outcome = await arun_once(
            saver, thread_id, request_id, seen_checkpoint_id,
            lambda: graph.ainvoke(Command(resume=answer), config),
        )
        ```
    """
    _validate_ids(thread_id, request_id)
    _check_limits(max_result_bytes)
    client = await _async_client(saver, dynamodb_client)
    where = _Where(saver.table_name, _partition_key(saver, thread_id))
    _validate_ids(thread_id, request_id, where.pk)
    item = await _adrive(client, _op_get_request(where, request_id))
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
        item = await _adrive(client, _op_get_request(where, request_id))
        if item is not None and item[_STATUS]["S"] == STATUS_DONE:
            return RunOutcome(_replay(saver, thread_id, request_id, item), replayed=True, recovered=False)
        recovered = _is_recovery(item, expected_checkpoint_id)
        if not recovered:
            await acheck_checkpoint(saver, thread_id, expected_checkpoint_id)
        await _adrive(
            client,
            _op_begin_request(
                where,
                thread_id,
                request_id,
                lease.owner,
                _expected_marker(expected_checkpoint_id),
                result_ttl_seconds,
                clock,
            ),
        )
        try:
            value = await fn()
        except BaseException as exc:
            with contextlib.suppress(Exception):
                await _adrive(
                    client,
                    _op_finish_request(
                        where,
                        thread_id,
                        request_id,
                        lease.owner,
                        status=STATUS_FAILED,
                        result=None,
                        result_size=None,
                        error=repr(exc),
                        ttl_s=result_ttl_seconds,
                        clock=clock,
                    ),
                )
            raise
        stored, size = _serialize(saver, value, max_result_bytes)
        await _adrive(
            client,
            _op_finish_request(
                where,
                thread_id,
                request_id,
                lease.owner,
                status=STATUS_DONE,
                result=stored,
                result_size=size,
                error=None,
                ttl_s=result_ttl_seconds,
                clock=clock,
            ),
        )
    return RunOutcome(value, replayed=False, recovered=recovered)
