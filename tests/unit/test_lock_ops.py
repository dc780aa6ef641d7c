"""The lock's operations driven with scripted responses: no server, no network.

Each operation of ``lock._operations`` (and ``run_once``'s one operation,
``lock._run.run_request``) is a generator of requests. Here a script answers
each request it yields (a response, or an exception thrown back into it), so
that every branch can be reached on demand, including the ones a server
makes hard to hit: a lease taken over between two polls, a heartbeat that
lands just before the takeover, a fenced write cancelled by the lock's
condition, a ``KeyboardInterrupt`` inside the work.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver, lock, schema
from langgraph.checkpoint.dynamodb._engine.ops import Call, Op, Sleep, ddb
from langgraph.checkpoint.dynamodb.errors import WriteContentionError
from langgraph.checkpoint.dynamodb.lock import (
    ANY_CHECKPOINT,
    STATUS_DONE,
    STATUS_FAILED,
    LeaseLostError,
    LeaseUnavailableError,
    arun_once,
    run_once,
)
from langgraph.checkpoint.dynamodb.lock import _operations as ops
from langgraph.checkpoint.dynamodb.lock._commit import ATTEMPTS
from langgraph.checkpoint.dynamodb.lock._records import Fence, Taken, Where
from langgraph.checkpoint.dynamodb.lock._run import STEPS, Attempt, Run, run_request
from langgraph.checkpoint.dynamodb.schema import ATTR

MODES = ["sync", "async"]
SKEWED_WALL = lambda: 4_000_000_000.0  # noqa: E731  # a wall clock decades ahead: must decide nothing


def _error(code: str, op: str = "UpdateItem", **extra: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}, **extra}, op)


def _where() -> Where:
    # A fresh partition per test: the process-wide observations (``_SEEN``) never leak between tests.
    return Where("tbl", f"t-{uuid.uuid4().hex[:8]}")


class Clock:
    """A monotonic clock that moves only when the script says so (on ``Sleep``)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, req: Sleep) -> None:
        self.now += req.seconds


Answer = Any  # a response, an exception to throw into the op, or a callable(request) -> either


def drive_with(op: Op[Any], answer: Callable[[Any], Any]) -> tuple[Any, list[Any]]:
    """Run ``op``, answering each request with ``answer(request)``; ``(result, requests)``.

    An exception ``answer`` returns is thrown into the operation, as a
    driver throws a failed call's error.
    """
    requests: list[Any] = []
    resp: Any = None
    exc: BaseException | None = None
    while True:
        try:
            req = op.throw(exc) if exc is not None else op.send(resp)
        except StopIteration as stop:
            return stop.value, requests
        requests.append(req)
        got = answer(req)
        resp, exc = (None, got) if isinstance(got, BaseException) else (got, None)


def drive(op: Op[Any], script: list[Answer]) -> tuple[Any, list[Any]]:
    """Run ``op`` answering its requests from ``script`` in order; ``(result, requests)``.

    The script must be used up exactly: a request it does not answer, or an
    answer no request asked for, fails the test.
    """
    answers = iter(script)

    def next_answer(req: Any) -> Any:
        try:
            got = next(answers)
        except StopIteration:
            raise AssertionError(f"unscripted request {req!r}") from None
        return got(req) if callable(got) and not isinstance(got, BaseException) else got

    result, requests = drive_with(op, next_answer)
    leftover = list(answers)
    assert not leftover, f"script not used up: {leftover!r} left after {requests!r}"
    return result, requests


def _lock_item(owner: str, rvn: str, *, lease_ms: int = 1000, fence: int = 1) -> dict[str, Any]:
    return {
        ATTR.PK: {"S": "pk"},
        ATTR.SK: {"S": schema.LOCK_SK},
        ATTR.OWNER: {"S": owner},
        ATTR.LOCK_VERSION: {"S": rvn},
        ATTR.LEASE_MS: {"N": str(lease_ms)},
        ATTR.LEASE_EXPIRES: {"N": "1700000000000"},
        ATTR.FENCE: {"N": str(fence)},
    }


def _written(req: Call) -> dict[str, Any]:
    """The lock item an acquisition's UpdateItem writes, as ``ReturnValues=ALL_NEW`` would answer."""
    v = req.kwargs["ExpressionAttributeValues"]
    return {
        "Attributes": {
            ATTR.OWNER: v[":o"],
            ATTR.LOCK_VERSION: v[":rvn"],
            ATTR.LEASE_MS: v[":ld"],
            ATTR.LEASE_EXPIRES: v[":lx"],
            ATTR.FENCE: {"N": "7"},
        }
    }


def _acquire(where: Where, clock: Clock, *, wait_ms: int = 0, poll_ms: int = 200) -> Op[Taken]:
    return ops.acquire(where, "t", "me", 1000, wait_ms, poll_ms, SKEWED_WALL, clock)


# ---------------------------------------------------------------- acquire


def test_acquire_a_free_lock_is_one_conditional_write() -> None:
    clock = Clock()
    taken, reqs = drive(_acquire(_where(), clock), [_written])
    (req,) = reqs
    assert (req.service, req.method) == ("dynamodb", "update_item")
    # Free: no item, a released one (no owner), or ours.
    assert (
        req.kwargs["ConditionExpression"]
        == "attribute_not_exists(#pk) OR attribute_not_exists(#o) OR #o = :o"
    )
    # The fencing count only grows, and no TTL may delete the item that holds it.
    assert "ADD #fen :inc" in req.kwargs["UpdateExpression"]
    assert (
        "REMOVE #ttl" in req.kwargs["UpdateExpression"]
        and ":ttl" not in req.kwargs["ExpressionAttributeValues"]
    )
    assert req.kwargs["Key"][ATTR.SK] == {"S": schema.LOCK_SK}
    assert taken.info.owner == "me" and taken.info.token == 7
    assert taken.rvn == req.kwargs["ExpressionAttributeValues"][":rvn"]["S"]
    assert taken.sent == clock.now  # the lease runs from when the request left


def test_acquire_a_lock_held_by_another_raises_with_when_to_retry() -> None:
    clock = Clock()
    script = [_error("ConditionalCheckFailedException"), {"Item": _lock_item("other", "r1", lease_ms=1500)}]
    with pytest.raises(LeaseUnavailableError) as err:
        drive(_acquire(_where(), clock), script)
    assert err.value.holder == "other"
    # Just seen for the first time: a whole lease of the holder's (not ours) to watch.
    assert err.value.retry_after == pytest.approx(1.5)


def test_acquire_retries_at_once_when_the_lock_was_released_between_write_and_read() -> None:
    clock = Clock()
    released = {k: v for k, v in _lock_item("other", "r2", fence=4).items() if k != ATTR.OWNER}
    # Deleted (the thread was), or released (the item stays, without an owner).
    for read in ({}, {"Item": released}):
        script = [_error("ConditionalCheckFailedException"), read, _written]
        taken, reqs = drive(_acquire(_where(), clock), script)
        assert [r.method for r in reqs] == ["update_item", "get_item", "update_item"]
        assert not any(isinstance(r, Sleep) for r in reqs) and taken.info.owner == "me"


class Holder:
    """Answers a waiter: busy to a plain acquisition, the lock's version on a read, grants a takeover."""

    def __init__(self, clock: Clock, beat_at: float | None = None) -> None:
        self.clock, self.beat_at = clock, beat_at
        self.seen: list[str] = []
        self.takeovers: list[Call] = []

    def version(self) -> str:
        return "r2" if self.beat_at is not None and self.clock.now >= self.beat_at else "r1"

    def __call__(self, req: Any) -> Any:
        if isinstance(req, Sleep):
            self.clock.sleep(req)
            return None
        if req.method == "get_item":
            self.seen.append(self.version())
            return {"Item": _lock_item("other", self.version())}
        if req.kwargs["ConditionExpression"].startswith("attribute_not_exists(#pk)"):
            return _error("ConditionalCheckFailedException")
        self.takeovers.append(req)
        return _written(req)


def test_acquire_takes_over_only_after_watching_one_version_for_a_whole_lease() -> None:
    clock = Clock()
    start = clock.now
    holder = Holder(clock)
    taken, reqs = drive_with(_acquire(_where(), clock, wait_ms=5000), holder)
    # The takeover is conditional on the very version watched, and happens no
    # earlier than one lease (1 s, the holder's) after the version was first seen.
    (takeover,) = holder.takeovers
    assert takeover.kwargs["ConditionExpression"] == "#rvn = :seen"
    assert takeover.kwargs["ExpressionAttributeValues"][":seen"] == {"S": "r1"}
    assert takeover.kwargs["ExpressionAttributeNames"]["#rvn"] == ATTR.LOCK_VERSION
    assert clock.now - start == pytest.approx(1.0, abs=0.01)
    assert all(s.seconds <= 0.2 + 1e-9 for s in reqs if isinstance(s, Sleep))
    assert taken.info.owner == "me"


def test_a_heartbeat_during_the_watch_restarts_it() -> None:
    clock = Clock()
    start = clock.now
    holder = Holder(clock, beat_at=start + 0.6)
    drive_with(_acquire(_where(), clock, wait_ms=5000), holder)
    assert "r1" in holder.seen and "r2" in holder.seen
    (takeover,) = holder.takeovers
    assert takeover.kwargs["ExpressionAttributeValues"][":seen"] == {"S": "r2"}
    # Watched from the first read of r2 (at or just after 0.6 s), for a whole lease.
    assert clock.now - start >= 1.6 - 1e-6


def test_a_takeover_lost_to_a_heartbeat_goes_back_to_watching() -> None:
    clock = Clock()
    script: list[Answer] = [
        _error("ConditionalCheckFailedException"),  # busy
        {"Item": _lock_item("other", "r1", lease_ms=0)},  # a lease of 0 ms: watched long enough at once
        _error("ConditionalCheckFailedException"),  # the takeover: the holder beat us to it
        _error("ConditionalCheckFailedException"),  # busy again
        {"Item": _lock_item("other", "r2", lease_ms=5000)},  # a new version: watch it from scratch
    ]
    with pytest.raises(LeaseUnavailableError) as err:
        drive(_acquire(_where(), clock), script)
    assert err.value.retry_after == pytest.approx(5.0)


def test_acquire_lets_other_errors_through() -> None:
    with pytest.raises(ClientError) as err:
        drive(_acquire(_where(), Clock()), [_error("AccessDeniedException")])
    assert err.value.response["Error"]["Code"] == "AccessDeniedException"


def test_acquire_retries_a_conflict_with_a_transaction_in_flight() -> None:
    # A holder's fenced transaction holds the lock item: the UpdateItem is refused, not judged.
    before = lock.write_stats()["conflict_retries"]
    taken, reqs = drive(_acquire(_where(), Clock()), [_error("TransactionConflictException"), None, _written])
    assert taken.info.owner == "me" and [type(r).__name__ for r in reqs] == ["Call", "Sleep", "Call"]
    assert lock.write_stats()["conflict_retries"] == before + 1


# ------------------------------------------------------------ renew, release


def test_renew_is_conditional_on_our_owner_and_last_version() -> None:
    clock = Clock()
    taken, (req,) = drive(ops.renew(_where(), "t", "me", "r1", 1000, SKEWED_WALL, clock), [_written])
    assert req.kwargs["ConditionExpression"] == "#o = :o AND #rvn = :rvn"
    assert req.kwargs["ExpressionAttributeValues"][":rvn"] == {"S": "r1"}
    assert taken.rvn != "r1" and taken.rvn == req.kwargs["ExpressionAttributeValues"][":new"]["S"]


def test_renew_of_a_lease_taken_over_raises_lease_lost() -> None:
    op = ops.renew(_where(), "t", "me", "r1", 1000, SKEWED_WALL, Clock())
    with pytest.raises(LeaseLostError, match="taken over or released"):
        drive(op, [_error("ConditionalCheckFailedException")])


def test_renew_retries_a_throttle_then_says_what_to_do() -> None:
    # botocore retried it already; the lease retries it again (with backoff), then types it.
    op = ops.renew(_where(), "t", "me", "r1", 1000, SKEWED_WALL, Clock())
    script: list[Any] = [_error("ThrottlingException"), None] * (ATTEMPTS - 1) + [
        _error("ThrottlingException")
    ]
    with pytest.raises(WriteContentionError, match="Retry the request later") as err:
        drive(op, script)
    assert not isinstance(err.value, LeaseLostError)
    assert err.value.response["Error"]["Code"] == "ThrottlingException"  # still a ClientError


def test_renew_retries_a_conflict_and_keeps_its_version() -> None:
    op = ops.renew(_where(), "t", "me", "r1", 1000, SKEWED_WALL, Clock())
    taken, reqs = drive(op, [_error("TransactionConflictException"), None, _written])
    first, _, second = reqs
    assert (
        first.kwargs == second.kwargs and taken.rvn == second.kwargs["ExpressionAttributeValues"][":new"]["S"]
    )


def test_release_says_whether_the_lock_was_still_ours() -> None:
    released, (req,) = drive(ops.release(_where(), "t", "me", "r1"), [{}])
    assert released is True
    # Kept, not deleted: the owner goes, the fencing count stays (and a fresh version).
    assert req.method == "update_item"
    assert req.kwargs["ConditionExpression"] == "#o = :o AND #rvn = :rvn"
    assert req.kwargs["UpdateExpression"] == "SET #rvn = :new REMOVE #o, #ld, #lx, #la"
    assert req.kwargs["ExpressionAttributeValues"][":new"] != {"S": "r1"}
    assert (
        drive(ops.release(_where(), "t", "me", "r1"), [_error("ConditionalCheckFailedException")])[0] is False
    )


# ------------------------------------------------------------ fenced writes


def _fence(where: Where) -> Fence:
    return Fence(where, "t", "me", 3)


def _put(where: Where) -> Call:
    return ddb("put_item", TableName=where.table, Item={ATTR.PK: {"S": where.pk}, ATTR.SK: {"S": "x"}})


def _cancelled(*reasons: str) -> ClientError:
    return _error(
        "TransactionCanceledException",
        "TransactWriteItems",
        CancellationReasons=[{"Code": r} for r in reasons],
    )


def test_fenced_write_is_one_transaction_checking_owner_and_fence() -> None:
    where = _where()
    _, (req,) = drive(ops.fenced_write(_fence(where), _put(where)), [{}])
    check, put = req.kwargs["TransactItems"]
    assert req.method == "transact_write_items"
    assert check["ConditionCheck"]["ConditionExpression"] == "#o = :o AND #fen = :fen"
    assert check["ConditionCheck"]["ExpressionAttributeValues"] == {":o": {"S": "me"}, ":fen": {"N": "3"}}
    assert put == {"Put": _put(where).kwargs}


def test_fenced_write_after_a_takeover_raises_lease_lost() -> None:
    where = _where()
    with pytest.raises(LeaseLostError, match="this write was not applied"):
        drive(ops.fenced_write(_fence(where), _put(where)), [_cancelled("ConditionalCheckFailed", "None")])


def test_fenced_write_whose_own_condition_fails_raises_as_the_plain_write() -> None:
    where = _where()
    with pytest.raises(ClientError) as err:
        drive(ops.fenced_write(_fence(where), _put(where)), [_cancelled("None", "ConditionalCheckFailed")])
    assert not isinstance(err.value, LeaseLostError)
    assert err.value.response["Error"]["Code"] == "ConditionalCheckFailedException"


def test_fenced_write_refuses_another_partition_or_table_without_a_request() -> None:
    where = _where()
    elsewhere = Where(where.table, where.pk + "x")
    for call in (_put(elsewhere), _put(Where("other-table", where.pk))):
        with pytest.raises(ValueError, match="cannot write elsewhere"):
            drive(ops.fenced_write(_fence(where), call), [])
    with pytest.raises(TypeError, match="cannot fence"):
        drive(ops.fenced_write(_fence(where), ddb("delete_item", TableName="tbl", Key={})), [])


# ---------------------------------------------------------- request records


def test_begin_on_a_done_request_raises_lease_lost() -> None:
    op = ops.begin_request(_where(), "t", "r", "me", "*", 60, SKEWED_WALL)
    with pytest.raises(LeaseLostError, match="completed meanwhile"):
        drive(op, [_error("ConditionalCheckFailedException")])


def test_finish_after_another_owner_restarted_the_request_raises_lease_lost() -> None:
    op = ops.finish_request(
        _where(), "t", "r", "me", status=STATUS_DONE, result=None, result_size=3, error=None,
        ttl_s=60, clock=SKEWED_WALL,
    )  # fmt: skip
    with pytest.raises(LeaseLostError, match="its result was not recorded"):
        drive(op, [_error("ConditionalCheckFailedException")])


# ------------------------------------------------------- the stored format


#: The attribute names lock and request items carried before the split, as
#: stored: changing any of them orphans existing locks and request records.
LOCK_NAMES = {"own", "rvn", "ld", "lx", "t", "f", "thr", "ttl", "la", "fen", "PK"}
REQUEST_NAMES = {"st", "own", "cp0", "ca", "t", "f", "thr", "ttl", "att", "err", "fin", "rt", "rv", "rs"}


def test_lock_and_request_items_keep_their_stored_attribute_names() -> None:
    where = _where()
    _, (acq,) = drive(_acquire(where, Clock()), [_written])
    _, (beg,) = drive(ops.begin_request(where, "t", "r", "me", "*", 60, SKEWED_WALL), [{}])
    _, (done,) = drive(
        ops.finish_request(
            where, "t", "r", "me", status=STATUS_DONE, result=("json", b"1"), result_size=5, error=None,
            ttl_s=60, clock=SKEWED_WALL,
        ),
        [{}],
    )  # fmt: skip
    _, (failed,) = drive(
        ops.finish_request(
            where, "t", "r", "me", status=STATUS_FAILED, result=None, result_size=None, error="boom",
            ttl_s=60, clock=SKEWED_WALL,
        ),
        [{}],
    )  # fmt: skip
    assert set(acq.kwargs["ExpressionAttributeNames"].values()) == LOCK_NAMES
    request = set()
    for req in (beg, done, failed):
        request |= set(req.kwargs["ExpressionAttributeNames"].values())
    assert request == REQUEST_NAMES


def test_attr_names_are_unique_per_item_kind_and_never_redefined() -> None:
    # A class attribute assigned twice silently keeps the last value: that
    # would change what an existing name stores.
    tree = ast.parse(Path(inspect.getfile(schema)).read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ATTR"]
    assigned = [
        t.target.id for t in cls.body if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)
    ]
    assert len(assigned) == len(set(assigned))
    stored = [getattr(ATTR, n) for n in assigned]
    # Two ATTR names share a stored name only across item kinds: ``rt`` is
    # ROOT on checkpoint items and RESULT_TYPE on request records.
    assert {v for v in stored if stored.count(v) > 1} <= {"rt"}
    assert stored.count("rt") == 2 and "rt" not in LOCK_NAMES


# ------------------------------------------------------- run_once's one op


class FakeLease:
    """What ``run_request`` uses of a lease: owner, clock, fence, bind."""

    owner = "me"
    clock = staticmethod(SKEWED_WALL)

    def __init__(self, where: Where) -> None:
        self.where = where

    def fence(self) -> Fence:
        return _fence(self.where)

    def bind(self, saver: Any) -> Any:
        return ("bound", saver)


class FakeSaver:
    table_name = "tbl"

    def __init__(self) -> None:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        self.serde = JsonPlusSerializer()

    def partition_key(self, thread_id: str) -> str:
        return f"pk-{thread_id}"

    def dump_payload(self, value: Any, *, where: str, bind: Any) -> tuple[str, bytes]:
        return self.serde.dumps_typed(value)

    def load_payload(self, typed: tuple[str, bytes], *, where: str, bind: Any) -> Any:
        return self.serde.loads_typed(typed)


def _run(fn: Callable[..., Any], *, recover: Any = None) -> Run:
    return Run.plan(
        FakeSaver(), f"t-{uuid.uuid4().hex[:6]}", "req-1", ANY_CHECKPOINT, fn, recover,
        lease_seconds=60, wait_seconds=0, ttl_s=60, max_bytes=1024, clock=SKEWED_WALL,
    )  # fmt: skip


def _is_step(req: Any, method: str) -> bool:
    return isinstance(req, Call) and req.service == STEPS and req.method == method


def test_run_request_sequence_of_a_new_request() -> None:
    run = _run(lambda: "ok")
    lease = FakeLease(run.where)
    script: list[Answer] = [
        {},  # no record yet
        lease,  # the acquire step
        {},  # no record under the lease either
        {},  # begin (fenced)
        Attempt("ok"),  # the invoke step
        {},  # done (fenced)
    ]
    outcome, reqs = drive(run_request(run), script)
    kinds = [r.method if r.service == "dynamodb" else f"{STEPS}.{r.method}" for r in reqs]
    # ANY_CHECKPOINT: no checkpoint step.
    assert kinds == [
        "get_item", f"{STEPS}.acquire", "get_item", "transact_write_items", f"{STEPS}.invoke", "transact_write_items",
    ]  # fmt: skip
    assert reqs[4].kwargs == {"fn": run.fn, "args": ()}  # fn() takes no context
    done = reqs[5].kwargs["TransactItems"][1]["Update"]
    assert done["ExpressionAttributeValues"][":st"] == {"S": STATUS_DONE}
    assert (outcome.value, outcome.replayed, outcome.recovered) == ("ok", False, False)


def test_run_request_checks_the_checkpoint_unless_retrying_its_own_attempt() -> None:
    run = Run.plan(
        FakeSaver(), "t", "req-1", "cp-seen", lambda ctx: 1, None,
        lease_seconds=60, wait_seconds=0, ttl_s=60, max_bytes=1024, clock=SKEWED_WALL,
    )  # fmt: skip
    lease = FakeLease(run.where)
    script = [{}, lease, {}, None, {}, Attempt(1), {}]
    _, reqs = drive(run_request(run), script)
    assert _is_step(reqs[3], "check_checkpoint") and reqs[3].kwargs == {"expected": "cp-seen"}
    assert reqs[5].kwargs["args"][0].saver == ("bound", run.saver)  # fn(ctx) gets the bound saver
    # A failed earlier attempt that started from the same checkpoint: no check, and it counts as recovered.
    earlier = {"Item": {ATTR.REQUEST_STATUS: {"S": STATUS_FAILED}, ATTR.REQUEST_START: {"S": "cp-seen"}}}
    outcome, reqs = drive(run_request(run), [earlier, lease, earlier, {}, Attempt(2), {}])
    assert not any(_is_step(r, "check_checkpoint") for r in reqs)
    assert outcome.recovered and not outcome.replayed


def test_run_request_records_a_base_exception_then_raises_it() -> None:
    run = _run(lambda: "never")
    lease = FakeLease(run.where)
    interrupt = KeyboardInterrupt()
    script = [{}, lease, {}, {}, Attempt(error=interrupt), {}]
    with pytest.raises(KeyboardInterrupt) as err:
        drive(run_request(run), script)
    assert err.value is interrupt


def test_run_request_raises_the_work_error_even_when_recording_it_fails() -> None:
    run = _run(lambda: "never")
    lease = FakeLease(run.where)
    boom = ValueError("work failed")
    script = [{}, lease, {}, {}, Attempt(error=boom), _error("AccessDeniedException", "TransactWriteItems")]
    with pytest.raises(ValueError, match="work failed"):
        drive(run_request(run), script)


def test_run_request_uses_what_recover_rebuilt_and_skips_the_work() -> None:
    run = _run(lambda: "never", recover=lambda ctx: "rebuilt")
    lease = FakeLease(run.where)
    running = {"Item": {ATTR.REQUEST_STATUS: {"S": "running"}, ATTR.REQUEST_START: {"S": "*"}}}
    outcome, reqs = drive(run_request(run), [running, lease, running, {}, Attempt("rebuilt"), {}])
    invokes = [r for r in reqs if _is_step(r, "invoke")]
    assert len(invokes) == 1 and invokes[0].kwargs["fn"] is run.recover
    assert (outcome.value, outcome.replayed, outcome.recovered) == ("rebuilt", True, True)


def test_run_request_replays_a_twin_that_finished_while_we_waited_for_the_lease() -> None:
    run = _run(lambda: "never")
    lease = FakeLease(run.where)
    typed = run.saver.serde.dumps_typed("first")
    done = {
        "Item": {
            ATTR.REQUEST_STATUS: {"S": STATUS_DONE},
            ATTR.RESULT_TYPE: {"S": typed[0]},
            ATTR.RESULT: {"B": typed[1]},
        }
    }
    outcome, reqs = drive(run_request(run), [{}, lease, done])
    assert [r.method for r in reqs] == ["get_item", "acquire", "get_item"]  # no begin, no work
    assert (outcome.value, outcome.replayed, outcome.recovered) == ("first", True, False)
    # Already done before we came: replayed without even taking the lease.
    outcome, reqs = drive(run_request(run), [done])
    assert [r.method for r in reqs] == ["get_item"] and outcome.value == "first"


# ----------------------------------- run_once and arun_once: one op, two drivers


class ScriptedDynamoDB:
    """A DynamoDB client answering by method from a queue, sync or async; records each call."""

    def __init__(self, answers: list[tuple[str, Any]], *, is_async: bool) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.is_async = is_async

    def _answer(self, method: str, kwargs: dict[str, Any]) -> Any:
        self.calls.append((method, kwargs))
        expected, answer = self.answers.pop(0)
        assert method == expected, (method, expected)
        if isinstance(answer, BaseException):
            raise answer
        return answer(kwargs) if callable(answer) else answer

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)

        def sync(**kwargs: Any) -> Any:
            return self._answer(method, kwargs)

        async def coro(**kwargs: Any) -> Any:
            return self._answer(method, kwargs)

        return coro if self.is_async else sync


def _acquired(kwargs: dict[str, Any]) -> dict[str, Any]:
    return _written(Call("dynamodb", "update_item", kwargs))


def _shape(calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, Any]]:
    """Each call's method and what does not depend on random tokens or time."""
    out: list[tuple[str, Any]] = []
    for method, kw in calls:
        if method == "transact_write_items":
            items = kw["TransactItems"]
            inner = next(iter(items[1].values()))
            out.append(
                (method, (items[0]["ConditionCheck"]["ConditionExpression"], inner.get("UpdateExpression")))
            )
        else:
            out.append((method, (kw.get("Key"), kw.get("ConditionExpression"), kw.get("UpdateExpression"))))
    return out


def _run_mode(mode: str, work_error: BaseException | None = None) -> tuple[Any, list[tuple[str, Any]]]:
    answers: list[tuple[str, Any]] = [
        ("get_item", {}),
        ("update_item", _acquired),
        ("get_item", {}),
        ("transact_write_items", {}),
        ("transact_write_items", {}),
        ("update_item", {}),  # the release
    ]
    client = ScriptedDynamoDB(answers, is_async=mode == "async")

    def work(ctx: Any) -> str:
        if work_error is not None:
            raise work_error
        return "value"

    async def awork(ctx: Any) -> str:
        return work(ctx)

    kw: dict[str, Any] = {"lease_seconds": 60, "wait_seconds": 0}
    outcome: Any
    try:
        if mode == "sync":
            with DynamoDBSaver(table_name="tbl", dynamodb_client=client) as saver:
                outcome = run_once(saver, "t-1", "req-1", ANY_CHECKPOINT, work, **kw)
        else:

            async def main() -> Any:
                async with AsyncDynamoDBSaver(table_name="tbl", dynamodb_client=client) as saver:
                    return await arun_once(saver, "t-1", "req-1", ANY_CHECKPOINT, awork, **kw)

            outcome = asyncio.run(main())
    except BaseException as exc:
        outcome = exc
    assert not client.answers, f"unanswered: {client.answers}"
    return outcome, _shape(client.calls)


def test_run_once_and_arun_once_send_the_same_requests() -> None:
    sync_outcome, sync_calls = _run_mode("sync")
    async_outcome, async_calls = _run_mode("async")
    assert sync_calls == async_calls
    assert [m for m, _ in sync_calls] == [
        "get_item", "update_item", "get_item", "transact_write_items", "transact_write_items", "update_item",
    ]  # fmt: skip
    assert sync_outcome.value == async_outcome.value == "value"


@pytest.mark.parametrize("mode", MODES)
def test_a_keyboard_interrupt_in_the_work_is_recorded_and_the_lease_released(mode: str) -> None:
    outcome, calls = _run_mode(mode, work_error=KeyboardInterrupt())
    assert isinstance(outcome, KeyboardInterrupt)
    # Begin, the failed record (both fenced), then the release: nothing left locked.
    assert [m for m, _ in calls] == [
        "get_item", "update_item", "get_item", "transact_write_items", "transact_write_items", "update_item",
    ]  # fmt: skip
    assert calls[4][1][1] == "SET #st = :st, #fin = :now, #ttl = :ttl, #err = :err"


# ------------------------------------ the saver's public hooks the lock uses


class AnyDynamoDB:
    """A DynamoDB client that answers every call with ``{}`` and records its method."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(**kwargs: Any) -> Any:
            self.calls.append(method)
            return {}

        return call


def _recording_guard(tag: str, seen: list[tuple[str, str]]) -> Callable[[Call], Op[Any]]:
    def guard(call: Call) -> Op[Any]:
        seen.append((tag, call.method))
        return (yield call)

    return guard


def test_with_write_guard_routes_put_and_put_writes_and_replaces_an_earlier_guard() -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    client = AnyDynamoDB()
    saver = DynamoDBSaver(table_name="tbl", dynamodb_client=client)
    seen: list[tuple[str, str]] = []
    guarded = saver.with_write_guard(_recording_guard("a", seen)).with_write_guard(
        _recording_guard("b", seen)
    )
    assert isinstance(guarded, DynamoDBSaver) and type(guarded).__name__ == "GuardedDynamoDBSaver"
    assert guarded.clients["dynamodb"] is client
    cfg: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    written = guarded.put(cfg, empty_checkpoint(), {"source": "input", "step": -1}, {})
    guarded.put_writes(written, [("ch", 1)], "task-1")
    assert seen == [("b", "put_item"), ("b", "put_item")]  # the last guard only, once per write
    saver.put(cfg, empty_checkpoint(), {"source": "input", "step": -1}, {})
    assert len(seen) == 2  # the original saver stays unguarded


def test_load_payload_applies_the_savers_payload_policy() -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    from langgraph.checkpoint.dynamodb import CiphertextBindingError, CorruptPayloadError

    here, there = ("t1", ("rec", "1")), ("t2", ("rec", "1"))
    plain = DynamoDBSaver(table_name="tbl", dynamodb_client=AnyDynamoDB())
    typed = plain.dump_payload({"ok": [1, 2]}, where="r", bind=here)
    assert plain.load_payload(typed, where="r", bind=here) == {"ok": [1, 2]}
    with pytest.raises(CorruptPayloadError, match="record-7"):
        plain.load_payload(("msgpack", b"\xc1not msgpack"), where="record-7", bind=here)
    sealed = DynamoDBSaver(
        table_name="tbl",
        dynamodb_client=AnyDynamoDB(),
        serde=EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef"),
    )
    secret = sealed.dump_payload("secret", where="r", bind=here)
    assert sealed.load_payload(secret, where="r", bind=here) == "secret"
    # Sealed to its record: the same ciphertext in another thread's record is refused.
    with pytest.raises(CiphertextBindingError, match="another thread"):
        sealed.load_payload(secret, where="r", bind=there)
    # A forger without the key writes plaintext: refused, never deserialized.
    with pytest.raises(CorruptPayloadError, match="not encrypted"):
        sealed.load_payload(plain.serde.dumps_typed("forged"), where="r", bind=here)


#: Every public member of the savers, by what a lease-bound copy does with it.
#: A method added to a saver fails the test below until it is placed here:
#: one made from an operation is refused without being named (``base.unguarded_writers``).
BOUND_READS = {
    "get", "aget", "get_tuple", "aget_tuple", "list", "alist",
    "get_delta_channel_history", "aget_delta_channel_history",
}  # fmt: skip
BOUND_FENCED = {"put", "aput", "put_writes", "aput_writes"}
BOUND_NEUTRAL = {
    "check_ids", "clients", "close", "aclose", "config_specs", "dump_payload", "ensure_clients", "from_env",
    "get_next_version", "io_runner", "load_payload", "owner_of", "partition_key", "payloads", "s3_key_prefix", "s3_thread_prefix",
    "s3_thread_prefixes", "serde", "setup", "tenant_prefix", "tenant_view", "thread_id_of", "value_s3_key",
    "with_allowlist", "with_write_guard", "write_guard",
}  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_a_lease_bound_saver_refuses_every_writer_its_lease_cannot_fence(mode: str) -> None:
    from langgraph.checkpoint.dynamodb.base import unguarded_writers
    from langgraph.checkpoint.dynamodb.lock._lease import bound_copy

    client = AnyDynamoDB()
    kind = DynamoDBSaver if mode == "sync" else AsyncDynamoDBSaver
    saver: Any = kind(table_name="tbl", dynamodb_client=client)
    bound = bound_copy(saver, Fence(Where("tbl", saver.partition_key("t")), "t", "me", 1))
    public = {n for n in dir(kind) if not n.startswith("_")}
    refused = public & unguarded_writers(kind)
    unplaced = public - BOUND_READS - BOUND_FENCED - BOUND_NEUTRAL - refused
    assert not unplaced, f"place these saver methods: {sorted(unplaced)}"
    assert {"delete_thread", "prune", "copy_thread", "delete_for_runs"} <= refused
    for name in sorted(refused):
        method = getattr(bound, name)
        with pytest.raises(NotImplementedError, match=f"{name}\\(\\) is refused.*unbound saver"):
            if inspect.iscoroutinefunction(method):
                asyncio.run(method("t"))
            else:
                method("t")
        assert inspect.iscoroutinefunction(method) == inspect.iscoroutinefunction(getattr(saver, name))
    assert client.calls == []  # refused before any request
    # The unbound saver and a plain guarded copy keep them.
    for other in (saver, saver.with_write_guard(_recording_guard("x", []))):
        kept = {name for name in refused if getattr(type(other), name) is getattr(kind, name)}
        assert kept == refused, type(other).__name__


#: The writers a lease-bound saver refused when they were a hand-kept list (both forms).
_VERBS = (
    "delete_thread", "prune", "copy_thread", "delete_for_runs", "migrate_tenant_thread", "reap_thread",
    "reap_expired_stream", "purge_expired", "run_pruner", "sweep_orphans", "copy_thread_step", "prune_step",
    "delete_for_runs_step",
)  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_unguarded_writers_are_derived_and_a_new_verb_cannot_be_forgotten(mode: str) -> None:
    from langgraph.checkpoint.dynamodb._engine.methods import async_method, sync_method
    from langgraph.checkpoint.dynamodb.base import unguarded_writers
    from langgraph.checkpoint.dynamodb.lock._lease import bound_copy

    kind: Any = DynamoDBSaver if mode == "sync" else AsyncDynamoDBSaver
    listed = {form for verb in _VERBS for form in (verb, f"a{verb}") if hasattr(kind, form)}
    assert unguarded_writers(kind) == listed  # the same methods as the hand-kept list

    def rewrite_everything(saver: Any, thread_id: str) -> Any:
        yield from ()

    make = sync_method if mode == "sync" else async_method
    name = "rewrite_everything" if mode == "sync" else "arewrite_everything"
    # A new verb, named nowhere but where the saver declares it.
    extended = type(f"Extended{kind.__name__}", (kind,), {name: make(rewrite_everything)})
    assert name in unguarded_writers(extended)
    client = AnyDynamoDB()
    saver = extended(table_name="tbl", dynamodb_client=client)
    bound = bound_copy(saver, Fence(Where("tbl", saver.partition_key("t")), "t", "me", 1))
    with pytest.raises(NotImplementedError, match=f"{name}\\(\\) is refused"):
        result = getattr(bound, name)("t")
        if inspect.iscoroutine(result):
            asyncio.run(result)
    assert client.calls == []
