"""Operations: the lock's and the request records' DynamoDB requests, sans-I/O.

Rule: every request the lock package sends is built here, as an operation
(a generator yielding ``ops`` requests, see ``ops``), and run by the shared
drivers (``drivers``) of the lease or of ``run_once``: acquire, renew and
release the lock item (kept, with its fencing count: see :func:`release`); a
write fenced by the lease; read, begin and finish a request record. Item shapes come from ``_records``; the objects that hold a
lease (heartbeat, binding a saver) are in ``_lease``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Final

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb._engine.ops import Call, Op, Sleep, ddb
from langgraph.checkpoint.dynamodb.lock._commit import committer_for, retrying
from langgraph.checkpoint.dynamodb.lock._errors import LeaseLostError, LeaseUnavailableError
from langgraph.checkpoint.dynamodb.lock._records import (
    STATUS_DONE,
    STATUS_RUNNING,
    Fence,
    Taken,
    Where,
    held_ms,
    lease_info,
    lock_key,
    now_ms,
    request_key,
    version_of,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = [
    "acquire",
    "begin_request",
    "fenced_write",
    "finish_request",
    "get_request",
    "observe",
    "release",
    "renew",
    "write_lock",
]

_CONDITION_FAILED: Final = "ConditionalCheckFailedException"

# Observations of lock items by this process: (table, pk) -> (RVN, monotonic
# time it was first seen). Module-wide on purpose: a retry of a request in the
# same warm container (another ThreadLease object) keeps the time it already
# waited, so it can take over a dead holder's lease instead of waiting again.
_SEEN: dict[tuple[str, str], tuple[str, float]] = {}
_SEEN_LOCK = threading.Lock()
_SEEN_MAX: Final = 10_000


def observe(where: Where, rvn: str, now: float, *, ours: bool = False) -> float:
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


# ------------------------------------------------------------------ lock item


def acquire(
    where: Where,
    thread_id: str,
    owner: str,
    lease_ms: int,
    wait_ms: int,
    poll_ms: int,
    clock: Callable[[], float],
    monotonic: Callable[[], float] = time.monotonic,
) -> Op[Taken]:
    """Take the lock: free (absent or released), already ours, or (takeover) unchanged for a whole lease; else wait up to ``wait_ms``.

    Raises:
        LeaseUnavailableError: another owner still held it at the deadline.
    """
    deadline = monotonic() + wait_ms / 1000
    while True:
        # One conditional write: free (no item, or a released one) or already
        # ours. Whether a lease held by
        # someone else has run out is never judged by a clock stored in the
        # item (another machine's): see the takeover below.
        taken = yield from write_lock(where, thread_id, owner, lease_ms, clock, monotonic, None)
        if taken is not None:
            return taken
        got = yield ddb("get_item", TableName=where.table, Key=lock_key(where), ConsistentRead=True)
        item = got.get("Item")
        if item is None or ATTR.OWNER not in item:
            continue  # released (or deleted) between our write and our read: try again at once
        rvn, cond, values, names = version_of(item)
        watch_ms = held_ms(item, lease_ms)
        now = monotonic()
        first = observe(where, rvn, now)
        # The holder changes the RVN on every heartbeat. The same RVN for a
        # whole lease duration on *our* monotonic clock means the holder's
        # lease ran out by its own clock too, whatever the wall clocks say.
        free_at = first + watch_ms / 1000
        if now >= free_at:
            taken = yield from write_lock(
                where, thread_id, owner, lease_ms, clock, monotonic, (cond, values, names)
            )
            if taken is not None:
                return taken
            continue  # the holder beat (or someone else took it): observe again
        if now >= deadline:
            holder = item.get(ATTR.OWNER, {}).get("S")
            lx = int(item[ATTR.LEASE_EXPIRES]["N"]) / 1000 if ATTR.LEASE_EXPIRES in item else None
            raise LeaseUnavailableError(thread_id, holder, lx, retry_after=free_at - now)
        # Sleep until the next poll, the end of the observation or our
        # deadline, whichever comes first.
        yield Sleep(max(min(poll_ms / 1000, deadline - now, free_at - now + 0.001), 0.001))


def write_lock(
    where: Where,
    thread_id: str,
    owner: str,
    lease_ms: int,
    clock: Callable[[], float],
    monotonic: Callable[[], float],
    takeover: tuple[str, dict[str, Any], dict[str, str]] | None,
) -> Op[Taken | None]:
    """Write the lock item as ours with a fresh RVN and the next fencing token; ``None`` if its condition failed.

    The token is the item's ``fen`` plus one (``ADD``), and nothing but
    deleting the item ever lowers ``fen``: releases keep the item and
    clear its owner (:func:`release`), and the item carries no TTL (one
    written by an earlier version loses its TTL here), so the token grows
    with every acquisition for as long as the thread's lock item exists.
    """
    now = now_ms(clock)
    expires = now + lease_ms
    rvn = uuid.uuid4().hex
    names = {
        "#pk": ATTR.PK,
        "#o": ATTR.OWNER,
        "#rvn": ATTR.LOCK_VERSION,
        "#ld": ATTR.LEASE_MS,
        "#lx": ATTR.LEASE_EXPIRES,
        "#t": ATTR.KIND,
        "#f": ATTR.FORMAT,
        "#thr": ATTR.THREAD_ID,
        "#ttl": ATTR.TTL,
        "#la": ATTR.LEASE_ACQUIRED,
        "#fen": ATTR.FENCE,
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
        ":inc": {"N": "1"},
    }
    if takeover is None:
        # Free: no lock item yet, or a released one (no owner: see ``release``).
        cond = "attribute_not_exists(#pk) OR attribute_not_exists(#o) OR #o = :o"
    else:
        cond, seen_values, seen_names = takeover
        values.update(seen_values)
        names.update(seen_names)
        names.pop("#pk")
    sent = monotonic()
    try:
        # A conflict with a transaction in flight on the lock item (a holder's fenced write) is
        # retried: nothing was written, and the condition has not been judged yet.
        resp = yield from retrying(
            ddb(
                "update_item",
                TableName=where.table,
                Key=lock_key(where),
                # ``lx`` is kept for people (CLI, logs), never trusted for expiry.
                # The fencing token grows with every acquisition. No TTL: if
                # DynamoDB removed the item, the next token would start at 1
                # again, under tokens handed out before (a TTL set by an earlier
                # version is removed).
                UpdateExpression=(
                    "SET #o = :o, #rvn = :rvn, #ld = :ld, #lx = :lx, #t = :t, #f = :f, #thr = :thr, "
                    "#la = :now REMOVE #ttl ADD #fen :inc"
                ),
                ConditionExpression=cond,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            ),
            f"taking the lease on thread {thread_id!r}",
        )
    except ClientError as exc:
        if error_code(exc) != _CONDITION_FAILED:
            raise
        return None
    observe(where, rvn, monotonic(), ours=True)
    return Taken(lease_info(thread_id, resp["Attributes"]), rvn, sent)


def renew(
    where: Where,
    thread_id: str,
    owner: str,
    rvn: str,
    lease_ms: int,
    clock: Callable[[], float],
    monotonic: Callable[[], float] = time.monotonic,
) -> Op[Taken]:
    """Extend our lease with a fresh RVN.

    Raises:
        LeaseLostError: the lock is not ours at the version we last wrote.
    """
    now = now_ms(clock)
    expires = now + lease_ms
    new_rvn = uuid.uuid4().hex
    sent = monotonic()
    try:
        # Retried when it meets a transaction in flight on the lock item: a fenced write of
        # another process, or of ours that the lease's committer did not hold back (see ``_commit``).
        resp = yield from retrying(
            ddb(
                "update_item",
                TableName=where.table,
                Key=lock_key(where),
                UpdateExpression="SET #rvn = :new, #ld = :ld, #lx = :lx",
                # Only the owner renews, and only the version it last wrote: if a
                # waiter took the lock over (after seeing our RVN unchanged for a
                # lease), this fails and we learn we lost it. An expired lease
                # nobody took over is still ours to extend.
                ConditionExpression="#o = :o AND #rvn = :rvn",
                ExpressionAttributeNames={
                    "#o": ATTR.OWNER,
                    "#rvn": ATTR.LOCK_VERSION,
                    "#ld": ATTR.LEASE_MS,
                    "#lx": ATTR.LEASE_EXPIRES,
                },
                ExpressionAttributeValues={
                    ":o": {"S": owner},
                    ":rvn": {"S": rvn},
                    ":new": {"S": new_rvn},
                    ":ld": {"N": str(lease_ms)},
                    ":lx": {"N": str(expires)},
                },
                ReturnValues="ALL_NEW",
            ),
            f"renewing the lease on thread {thread_id!r}",
        )
    except ClientError as exc:
        if error_code(exc) == _CONDITION_FAILED:
            raise LeaseLostError(f"lease on thread {thread_id!r} was taken over or released") from exc
        raise
    observe(where, new_rvn, monotonic(), ours=True)
    return Taken(lease_info(thread_id, resp["Attributes"]), new_rvn, sent)


def release(where: Where, thread_id: str, owner: str, rvn: str) -> Op[bool]:
    """Clear the lock's owner if it is still ours at our version; ``False`` if it was not.

    The item stays, with its fencing count (``fen``): deleting it would
    make the next acquisition count from 1 again, handing out tokens a
    downstream system has already seen (a paused holder's among them). A
    released item (no owner) is free to :func:`acquire`; with no owner
    (and a fresh RVN) every later renewal, release or fenced write of the
    old holder fails.
    """
    try:
        yield from retrying(
            ddb(
                "update_item",
                TableName=where.table,
                Key=lock_key(where),
                UpdateExpression="SET #rvn = :new REMOVE #o, #ld, #lx, #la",
                ConditionExpression="#o = :o AND #rvn = :rvn",
                ExpressionAttributeNames={
                    "#o": ATTR.OWNER,
                    "#rvn": ATTR.LOCK_VERSION,
                    "#ld": ATTR.LEASE_MS,
                    "#lx": ATTR.LEASE_EXPIRES,
                    "#la": ATTR.LEASE_ACQUIRED,
                },
                ExpressionAttributeValues={
                    ":o": {"S": owner},
                    ":rvn": {"S": rvn},
                    ":new": {"S": uuid.uuid4().hex},
                },
            ),
            f"releasing the lease on thread {thread_id!r}",
        )
    except ClientError as exc:
        if error_code(exc) == _CONDITION_FAILED:
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


def fenced_write(fence: Fence, call: Call) -> Op[Any]:
    """``call`` (a PutItem or UpdateItem) in a TransactWriteItems that also checks our lease.

    The ``ConditionCheck`` finds the lock item still carrying our owner token
    and fence; a holder that was paused past its lease and taken over fails
    it, and its write does not land. The lease's committer (``_commit``)
    sends it: at most one such transaction of a lease is in flight, and the
    writes that arrive meanwhile share the next one, so the writes of one
    holder never conflict with each other on the lock item. A failed
    condition of the write itself is raised as the plain call would raise it.

    Raises:
        LeaseLostError: the lock item no longer carries our owner and fence.
        WriteContentionError: the transaction stayed contended through every retry.
    """
    if call.service == "dynamodb" and call.method == "transact_write_items":
        # Several items of one call (a task's many writes): the check joins them.
        actions = list(call.kwargs["TransactItems"])
    elif call.service != "dynamodb" or call.method not in _TRANSACT_FIELDS:
        raise TypeError(f"cannot fence {call.service}.{call.method}")
    else:
        kind, fields = _TRANSACT_FIELDS[call.method]
        actions = [{kind: {k: v for k, v in call.kwargs.items() if k in fields}}]
    for action in actions:
        body = next(iter(action.values()))
        key = body.get("Key") or body.get("Item") or {}
        if key.get(ATTR.PK) != {"S": fence.where.pk} or body.get("TableName") != fence.where.table:
            # The lease covers one thread: a write elsewhere would be unfenced.
            raise ValueError(
                f"a saver bound to the lease of thread {fence.thread_id!r} cannot write elsewhere"
            )
    check = {
        "ConditionCheck": {
            "TableName": fence.where.table,
            "Key": lock_key(fence.where),
            "ConditionExpression": "#o = :o AND #fen = :fen",
            "ExpressionAttributeNames": {"#o": ATTR.OWNER, "#fen": ATTR.FENCE},
            "ExpressionAttributeValues": {":o": {"S": fence.owner}, ":fen": {"N": str(fence.token)}},
        }
    }
    return (yield from committer_for(fence).write(check, actions, call.method))


def _fenced(fence: Fence | None, call: Call) -> Op[Any]:
    """Send ``call``, fenced by the lease when one is given."""
    if fence is None:
        return (yield call)
    return (yield from fenced_write(fence, call))


# ------------------------------------------------------------- request records


def get_request(where: Where, request_id: str) -> Op[dict[str, Any] | None]:
    """The request record's item (strongly consistent), ``None`` if it never started."""
    resp = yield ddb(
        "get_item", TableName=where.table, Key=request_key(where, request_id), ConsistentRead=True
    )
    item: dict[str, Any] | None = resp.get("Item")
    return item


def begin_request(
    where: Where,
    thread_id: str,
    request_id: str,
    owner: str,
    start_cp: str,
    ttl_s: int,
    clock: Callable[[], float],
    fence: Fence | None = None,
) -> Op[None]:
    """Mark the request running under ``owner`` (one more attempt), unless it is done.

    Raises:
        LeaseLostError: the request was done meanwhile, or (fenced) the lease was lost.
    """
    now = now_ms(clock)
    try:
        yield from _fenced(
            fence,
            ddb(
                "update_item",
                TableName=where.table,
                Key=request_key(where, request_id),
                UpdateExpression=(
                    "SET #st = :run, #o = :o, #cp0 = if_not_exists(#cp0, :cp0), #ca = if_not_exists(#ca, :now), "
                    "#t = :t, #f = :f, #thr = :thr, #ttl = :ttl ADD #att :one REMOVE #err"
                ),
                # A done request is never restarted (the caller checked under the
                # lease; this guards against a logic error turning into a rerun).
                ConditionExpression="attribute_not_exists(#st) OR #st <> :done",
                ExpressionAttributeNames={
                    "#st": ATTR.REQUEST_STATUS,
                    "#o": ATTR.OWNER,
                    "#cp0": ATTR.REQUEST_START,
                    "#ca": ATTR.REQUEST_CREATED,
                    "#t": ATTR.KIND,
                    "#f": ATTR.FORMAT,
                    "#thr": ATTR.THREAD_ID,
                    "#ttl": ATTR.TTL,
                    "#att": ATTR.REQUEST_ATTEMPTS,
                    "#err": ATTR.REQUEST_ERROR,
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
        if error_code(exc) == _CONDITION_FAILED:
            raise LeaseLostError(
                f"request {request_id!r} on thread {thread_id!r} completed meanwhile"
            ) from exc
        raise


def finish_request(
    where: Where,
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
    fence: Fence | None = None,
) -> Op[None]:
    """Record the request's outcome (``done`` with its result, or ``failed``), if the attempt is still ours.

    Raises:
        LeaseLostError: another owner restarted the request, or (fenced) the lease was lost.
    """
    now = now_ms(clock)
    names = {"#st": ATTR.REQUEST_STATUS, "#o": ATTR.OWNER, "#fin": ATTR.REQUEST_FINISHED, "#ttl": ATTR.TTL}
    values: dict[str, Any] = {
        ":st": {"S": status},
        ":o": {"S": owner},
        ":now": {"N": str(now)},
        ":ttl": {"N": str(now // 1000 + ttl_s)},
    }
    sets = ["#st = :st", "#fin = :now", "#ttl = :ttl"]
    if result is not None:
        names.update({"#rt": ATTR.RESULT_TYPE, "#rv": ATTR.RESULT})
        values.update({":rt": {"S": result[0]}, ":rv": {"B": result[1]}})
        sets += ["#rt = :rt", "#rv = :rv"]
    if result_size is not None:
        names["#rs"] = ATTR.RESULT_SIZE
        values[":rs"] = {"N": str(result_size)}
        sets.append("#rs = :rs")
    if error is not None:
        names["#err"] = ATTR.REQUEST_ERROR
        values[":err"] = {"S": error[:1000]}
        sets.append("#err = :err")
    try:
        yield from _fenced(
            fence,
            ddb(
                "update_item",
                TableName=where.table,
                Key=request_key(where, request_id),
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
        if error_code(exc) == _CONDITION_FAILED:
            raise LeaseLostError(
                f"request {request_id!r} on thread {thread_id!r} was taken over by another owner "
                "after our lease expired; its result was not recorded"
            ) from exc
        raise
