"""Group commit: one lease's fenced writes, with at most one fenced transaction in flight.

Rule: what lets many writes of one holder share the one lock item they are
fenced on. Every fenced write is a ``TransactWriteItems`` holding a
``ConditionCheck`` on the thread's lock item, and DynamoDB cancels a
transaction that touches an item another ongoing transaction holds
(``TransactionConflict``; "Transaction conflict handling in DynamoDB",
Amazon DynamoDB Developer Guide): the tasks of a superstep, which all write
at once, would cancel each other. So per lease (owner and fencing token)
there is one :class:`Committer`; a write that arrives while its transaction
is in flight waits, and the next transaction carries every write that
waited (one ``ConditionCheck`` plus up to 99 actions, within 4 MB).

Also here: the retry policy for what DynamoDB refuses as contended
(conflicts, throttling), the counts of those retries (:func:`write_stats`),
and :meth:`Committer.exclusive`, which runs the lease's own requests on the
lock item (renew, release) when no fenced transaction of ours is in flight,
so that they never conflict with our own ``ConditionCheck``.

The requests are sans-I/O (``ops``): a waiting write yields a ``Wait`` on
a ticket the leader settles, so sync callers (threads) and async ones
(tasks, even on other loops) share one committer.
"""

from __future__ import annotations

import random
import threading
import weakref
from collections import Counter, deque
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb._engine.ops import Call, Op, Sleep, Ticket, Wait, ddb
from langgraph.checkpoint.dynamodb._parts.shapes import item_size
from langgraph.checkpoint.dynamodb.errors import WriteContentionError
from langgraph.checkpoint.dynamodb.lock._errors import LeaseLostError
from langgraph.checkpoint.dynamodb.lock._records import Fence

__all__ = ["Committer", "committer_for", "contended", "retrying", "write_stats"]

T = TypeVar("T")

# "TransactWriteItems" (API reference): TransactItems, "Maximum number of 100 items"; "The
# aggregate size of the items in the transaction cannot exceed 4 MB" ("Constraints in Amazon
# DynamoDB", DynamoDB transactions: "A transaction cannot contain more than 4 MB of data").
# One action is the ConditionCheck on the lock item.
MAX_ACTIONS: Final = 99
#: Bytes of items (keys and values, as DynamoDB sizes them) one coalesced transaction carries:
#: 4 MB less room for the ConditionCheck and what the estimate leaves out. A single call larger
#: than this still goes alone (``put_writes`` keeps each call within 3.5 MB).
MAX_BYTES: Final = 4 * 1024 * 1024 - 64 * 1024

#: Codes of refusals that mean "contended, nothing applied, try again": a single write that met
#: an ongoing transaction (``TransactionConflictException``), and throttling botocore gave up on.
RETRY_CODES: Final = frozenset(
    {
        "TransactionConflictException",
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TransactionInProgressException",
    }
)
#: Cancellation reasons of a transaction that mean the same (CancellationReason codes).
RETRY_REASONS: Final = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})
_NO_REASON: Final = (None, "None")
#: Tries of one request refused as contended (the first included); backoff between them.
ATTEMPTS: Final = 12
BACKOFF_BASE: Final = 0.02
BACKOFF_CAP: Final = 1.0

_STATS: Counter[str] = Counter()
_STATS_LOCK = threading.Lock()


def _count(**by: int) -> None:
    with _STATS_LOCK:
        _STATS.update(by)


def write_stats() -> dict[str, int]:
    """This process's counts of fenced writes and of contended requests retried, since it started.

    ``fenced_writes`` (calls fenced by a lease), ``transactions`` (the
    ``TransactWriteItems`` that carried them), ``conflict_retries`` and
    ``throttle_retries`` (a request refused as contended and sent again; most
    throttles are paced by the drivers before they get here, counted by
    cause in ``langgraph.checkpoint.dynamodb.throttle_stats()``),
    ``gave_up`` (retries exhausted: :class:`~langgraph.checkpoint.dynamodb.errors.WriteContentionError`).

    Example:
        ```python
        from langgraph.checkpoint.dynamodb import lock

        before = lock.write_stats()
        lock.run_once(saver, thread_id, request_id, seen, work)
        after = lock.write_stats()
        print(after["fenced_writes"] - before["fenced_writes"], "writes in",
              after["transactions"] - before["transactions"], "transactions")
        ```
    """
    with _STATS_LOCK:
        out = {
            k: 0 for k in ("fenced_writes", "transactions", "conflict_retries", "throttle_retries", "gave_up")
        }
        out.update(_STATS)
        return out


def backoff(attempt: int) -> float:
    """Full-jitter exponential backoff: up to 20 ms, 40 ms, ... capped at 1 s."""
    return random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * (2**attempt)))


def _count_retry(code: str) -> None:
    if "Conflict" in code or code == "TransactionInProgressException":
        _count(conflict_retries=1)
    else:
        _count(throttle_retries=1)


def contended(exc: ClientError, what: str, attempts: int) -> WriteContentionError:
    """The typed error a user gets once a contended request is out of retries."""
    _count(gave_up=1)
    code = error_code(exc)
    err = WriteContentionError(exc.response, exc.operation_name)
    err.args = (
        f"{what}: DynamoDB refused it as contended ({code}) {attempts} times, with backoff; nothing "
        "was written. Retry the request later. If it keeps happening: throttling means the table (or "
        "one partition key) needs more write capacity (on-demand, or more provisioned WCU); a "
        "transaction conflict means other writers use the same items at once (another process "
        "writing this thread, or a job running over it)",
    )
    return err


def retrying(call: Call, what: str) -> Op[Any]:
    """Send ``call``; a refusal in :data:`RETRY_CODES` is retried with backoff, then typed.

    Raises:
        WriteContentionError: refused as contended :data:`ATTEMPTS` times.
    """
    for attempt in range(ATTEMPTS):
        try:
            return (yield call)
        except ClientError as exc:
            code = error_code(exc)
            if code not in RETRY_CODES:
                raise
            if attempt == ATTEMPTS - 1:
                raise contended(exc, what, ATTEMPTS) from exc
            _count_retry(code)
        yield Sleep(backoff(attempt))
    raise AssertionError("unreachable")  # pragma: no cover


# ------------------------------------------------------------------ entries


def _action_size(action: dict[str, Any]) -> int:
    """About what DynamoDB counts of one action towards a transaction's 4 MB: its item, or key and values."""
    body = next(iter(action.values()))
    data = body.get("Item") or {**(body.get("Key") or {}), **(body.get("ExpressionAttributeValues") or {})}
    text = sum(len(str(body.get(k, ""))) for k in ("UpdateExpression", "ConditionExpression"))
    return item_size(data) + text


def _item_of(action: dict[str, Any]) -> tuple[str, str, str]:
    body = next(iter(action.values()))
    key = body.get("Key") or body.get("Item") or {}
    return (body["TableName"], str(key.get("PK")), str(key.get("SK")))


@dataclass(eq=False)
class _Entry:
    """One fenced call waiting for its transaction (``actions``), or an exclusive operation (``None``)."""

    actions: list[dict[str, Any]] | None
    method: str = "transact_write_items"
    items: frozenset[tuple[str, str, str]] = frozenset()
    size: int = 0
    #: Sent alone: a transaction it shared was refused as a whole (it may be the cause).
    alone: bool = False
    done: bool = False
    result: Any = None
    error: BaseException | None = None
    ticket: Ticket | None = None

    def settle(self, result: Any = None, error: BaseException | None = None) -> None:
        self.done, self.result, self.error = True, result, error


# ------------------------------------------------------------------ committer


class Committer:
    """One lease's fenced writes: at most one transaction in flight, later writes coalesced.

    Args:
        fence: the lease's owner and fencing token (what the ``ConditionCheck`` requires).
    """

    def __init__(self, fence: Fence) -> None:
        self.fence = fence
        self._lock = threading.Lock()
        self._queue: deque[_Entry] = deque()
        self._busy = False

    def write(self, check: dict[str, Any], actions: list[dict[str, Any]], method: str) -> Op[Any]:
        """Land ``actions`` (one call's, all or none) in a transaction that also holds ``check``.

        ``method`` is the call's own (``put_item``, ``update_item``,
        ``transact_write_items``): a failed condition of the call's own
        items is raised as that call alone would have raised it.

        Raises:
            LeaseLostError: ``check`` failed: the lock item no longer carries our owner and fence.
            WriteContentionError: the transaction stayed contended through every retry.
        """
        entry = _Entry(
            actions,
            method,
            frozenset(_item_of(a) for a in actions),
            sum(_action_size(a) for a in actions),
        )
        _count(fenced_writes=1)
        return (yield from self._submit(entry, check, None))

    def exclusive(self, op: Op[T]) -> Op[T]:
        """Run ``op`` while no fenced transaction of this lease is in flight (renew, release)."""
        result: T = yield from self._submit(_Entry(None), None, op)
        return result

    # -- the protocol ------------------------------------------------------

    def _submit(self, entry: _Entry, check: dict[str, Any] | None, op: Op[Any] | None) -> Op[Any]:
        with self._lock:
            self._queue.append(entry)
        while True:
            with self._lock:
                if entry.done:
                    break
                batch = self._lead(entry)
                if batch is None:
                    ticket = entry.ticket = Ticket()
            if batch is None:
                try:
                    yield Wait(ticket)
                except GeneratorExit:  # the caller went away (a cancelled task): its write is not sent
                    self._abandon(entry)
                    raise
                continue
            try:
                if op is not None and batch == [entry]:
                    try:
                        entry.settle((yield from op))
                    except Exception as exc:
                        entry.settle(error=exc)
                else:
                    yield from self._commit(batch, check)
            finally:
                self._hand_over(batch)
        if entry.error is not None:
            raise entry.error
        return entry.result

    def _lead(self, entry: _Entry) -> list[_Entry] | None:
        """Under the lock: the entries this operation sends now, or ``None`` (wait)."""
        if self._busy:
            return None
        head = self._queue[0]
        if head is not entry and (head.actions is None or entry.actions is None):
            # An exclusive operation is next (only its own operation runs it), or we are one
            # and the writes before us go first: the head's operation leads.
            if head.ticket is not None:
                head.ticket.settle()
            return None
        if head.actions is None:
            self._queue.popleft()
            self._busy = True
            return [entry]
        batch: list[_Entry] = []
        items: set[tuple[str, str, str]] = set()
        count = size = 0
        for e in self._queue:
            if e.actions is None:
                break  # an exclusive operation keeps its place
            if batch and (e.alone or batch[0].alone):
                break
            if batch and (count + len(e.actions) > MAX_ACTIONS or size + e.size > MAX_BYTES):
                break
            if items & e.items:
                continue  # DynamoDB refuses two actions on one item: the next transaction takes it
            batch.append(e)
            items |= e.items
            count += len(e.actions)
            size += e.size
        for e in batch:
            self._queue.remove(e)
        self._busy = True
        return batch

    def _abandon(self, entry: _Entry) -> None:
        """Forget a waiting entry whose operation was closed; the next in line may lead."""
        with self._lock:
            if entry in self._queue:
                self._queue.remove(entry)
            head = self._queue[0].ticket if self._queue and not self._busy else None
        if head is not None:
            head.settle()

    def _hand_over(self, batch: list[_Entry]) -> None:
        """Free the slot: put back what did not land, wake the settled and the next in line.

        An exclusive operation that did not finish (closed) is dropped: only
        its own operation could run it.
        """
        with self._lock:
            self._busy = False
            self._queue.extendleft(reversed([e for e in batch if not e.done and e.actions is not None]))
            wake = [e for e in batch if e.done and e.ticket is not None]
            if self._queue:
                wake.append(self._queue[0])
            tickets = [e.ticket for e in wake if e.ticket is not None]
            for e in wake:
                e.ticket = None
        for t in tickets:
            t.settle()

    # -- one transaction -----------------------------------------------------

    def _commit(self, batch: list[_Entry], check: dict[str, Any] | None) -> Generator[Any, Any, None]:
        """Send ``batch`` as one transaction; settle each entry, or leave it to be sent again."""
        actions = [check] if check is not None else []
        for e in batch:
            actions.extend(e.actions or [])
        for attempt in range(ATTEMPTS):
            try:
                resp = yield ddb("transact_write_items", TransactItems=actions)
            except ClientError as exc:
                retry = self._refused(batch, exc, attempt)
                if not retry:
                    return
            except Exception as exc:
                for e in batch:
                    e.settle(error=exc)
                return
            else:
                _count(transactions=1)
                for e in batch:
                    e.settle(resp)
                return
            yield Sleep(backoff(attempt))

    def _refused(self, batch: list[_Entry], exc: ClientError, attempt: int) -> bool:
        """Settle what ``exc`` decides for the batch; ``True``: send it again after a backoff."""
        code = error_code(exc)
        if code == "TransactionCanceledException":
            return self._cancelled(batch, exc, attempt)
        if code in RETRY_CODES:
            return self._retry_or_give_up(batch, exc, code, attempt)
        if len(batch) > 1 and code == "ValidationException":
            for e in batch:  # one of them is refused: find which by sending each alone
                e.alone = True
            return False
        for e in batch:
            e.settle(error=exc)
        return False

    def _retry_or_give_up(self, batch: list[_Entry], exc: ClientError, code: str, attempt: int) -> bool:
        if attempt < ATTEMPTS - 1:
            _count_retry(code)
            return True
        for e in batch:
            e.settle(error=contended(exc, f"fenced write on thread {self.fence.thread_id!r}", ATTEMPTS))
        return False

    def _cancelled(self, batch: list[_Entry], exc: ClientError, attempt: int) -> bool:
        reasons = [r.get("Code") for r in exc.response.get("CancellationReasons") or []]
        if len(reasons) != 1 + sum(len(e.actions or []) for e in batch):
            for e in batch:  # not attributable
                e.settle(error=exc)
            return False
        if reasons[0] == "ConditionalCheckFailed":
            for e in batch:
                e.settle(error=self._lost(exc))
            return False
        settled = False
        at = 1
        for e in batch:
            mine = exc.response["CancellationReasons"][at : at + len(e.actions or [])]
            at += len(e.actions or [])
            if any(r.get("Code") not in (*_NO_REASON, *RETRY_REASONS) for r in mine):
                e.settle(error=_own_failure(e, exc, mine))
                settled = True
        if settled:
            return False  # the others did nothing wrong: sent again at once, without the failed ones
        retry_code = next((r for r in reasons if r in RETRY_REASONS), "TransactionConflict")
        return self._retry_or_give_up(batch, exc, str(retry_code), attempt)

    def _lost(self, exc: ClientError) -> LeaseLostError:
        err = LeaseLostError(
            f"lease on thread {self.fence.thread_id!r} (fence {self.fence.token}) was lost: "
            "another owner took the thread over; this write was not applied"
        )
        err.__cause__ = exc
        return err


def _own_failure(entry: _Entry, exc: ClientError, mine: list[dict[str, Any]]) -> ClientError:
    """What the entry's call, sent alone with the check, would have raised."""
    codes = [r.get("Code") for r in mine]
    if len(mine) == 1 and codes == ["ConditionalCheckFailed"] and entry.method != "transact_write_items":
        err = ClientError(
            {"Error": {"Code": "ConditionalCheckFailedException", "Message": str(exc)}}, entry.method
        )
    else:
        reasons = [{"Code": "None"}, *mine]
        err = ClientError(
            {
                "Error": {
                    "Code": "TransactionCanceledException",
                    "Message": "Transaction cancelled, please refer cancellation reasons for specific "
                    f"reasons [{', '.join(str(r.get('Code')) for r in reasons)}]",
                },
                "CancellationReasons": reasons,
            },
            "TransactWriteItems",
        )
    err.__cause__ = exc
    return err


_COMMITTERS: weakref.WeakValueDictionary[Fence, Committer] = weakref.WeakValueDictionary()
_COMMITTERS_LOCK = threading.Lock()


def committer_for(fence: Fence) -> Committer:
    """The one committer of a lease (its owner and fencing token), shared by its bound savers and itself."""
    with _COMMITTERS_LOCK:
        found = _COMMITTERS.get(fence)
        if found is None:
            found = _COMMITTERS[fence] = Committer(fence)
        return found
