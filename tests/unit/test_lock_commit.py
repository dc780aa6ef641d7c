"""The group commit of a lease's fenced writes (lock/_commit.py), from scripted responses.

Several operations are stepped by hand here, as concurrent callers would be:
one sends the transaction, the others wait (``Wait``) and ride on the next.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import lock
from langgraph.checkpoint.dynamodb._engine.ops import Call, Op, Sleep, Wait, ddb
from langgraph.checkpoint.dynamodb.errors import WriteContentionError
from langgraph.checkpoint.dynamodb.lock import LeaseLostError
from langgraph.checkpoint.dynamodb.lock import _operations as ops
from langgraph.checkpoint.dynamodb.lock._commit import ATTEMPTS, committer_for
from langgraph.checkpoint.dynamodb.lock._records import Fence, Where
from langgraph.checkpoint.dynamodb.schema import ATTR

WHERE = Where("tbl", "t#1")


class Stepper:
    """One operation, advanced one request at a time."""

    def __init__(self, op: Op[Any]) -> None:
        self.op = op
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.req: Any = None
        self._advance(None, None)

    def _advance(self, resp: Any, exc: BaseException | None) -> None:
        try:
            self.req = self.op.throw(exc) if exc is not None else self.op.send(resp)
        except StopIteration as stop:
            self.done, self.result, self.req = True, stop.value, None
        except Exception as e:
            self.done, self.error, self.req = True, e, None

    def answer(self, resp: Any = None) -> None:
        """Answer the pending request (an exception is thrown in, as a driver does)."""
        if isinstance(resp, BaseException):
            self._advance(None, resp)
        else:
            self._advance(resp, None)

    def wake_if_settled(self) -> bool:
        """A pending ``Wait`` whose ticket is settled: go on (as the driver would)."""
        if isinstance(self.req, Wait) and not self.req.ticket.when_settled(lambda: None):
            self.answer(None)
            return True
        return False


def _fence(token: int = 1) -> Fence:
    return Fence(WHERE, "t-1", "me", token)


def _put(sk: str) -> Call:
    return ddb("put_item", TableName="tbl", Item={ATTR.PK: {"S": "t#1"}, ATTR.SK: {"S": sk}})


def _sks(req: Call) -> list[str]:
    return [
        next(iter(a.values()))["Key" if "ConditionCheck" in a else "Item"][ATTR.SK]["S"]
        for a in req.kwargs["TransactItems"]
    ]


def _cancelled(*codes: str) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": f"[{', '.join(codes)}]"},
            "CancellationReasons": [{"Code": c} for c in codes],
        },
        "TransactWriteItems",
    )


_tokens = iter(range(1, 10**9))


@pytest.fixture
def fence() -> Fence:
    """A lease of its own for each test (its own committer)."""
    return _fence(next(_tokens))


def test_writes_that_arrive_while_one_is_in_flight_share_the_next_transaction(fence: Fence) -> None:
    a = Stepper(ops.fenced_write(fence, _put("a")))
    assert isinstance(a.req, Call) and _sks(a.req) == ["|m|lock", "a"]
    b = Stepper(ops.fenced_write(fence, _put("b")))
    c = Stepper(ops.fenced_write(fence, _put("c")))
    assert isinstance(b.req, Wait) and isinstance(c.req, Wait)  # nothing else in flight
    a.answer({})
    assert a.done and a.error is None
    assert b.wake_if_settled() and not c.wake_if_settled()  # the next in line leads
    assert isinstance(b.req, Call) and _sks(b.req) == ["|m|lock", "b", "c"]  # one check, two writes
    b.answer({})
    assert b.done and c.wake_if_settled() and c.done and c.error is None


def test_one_writes_own_failed_condition_is_its_own_and_the_others_go_again(fence: Fence) -> None:
    a = Stepper(ops.fenced_write(fence, _put("a")))
    b = Stepper(ops.fenced_write(fence, _put("b")))
    c = Stepper(ops.fenced_write(fence, _put("c")))
    a.answer({})
    b.wake_if_settled()
    b.answer(_cancelled("None", "ConditionalCheckFailed", "None"))
    assert b.done and isinstance(b.error, ClientError)
    assert b.error.response["Error"]["Code"] == "ConditionalCheckFailedException"  # as a PutItem alone
    assert c.wake_if_settled() and isinstance(c.req, Call) and _sks(c.req) == ["|m|lock", "c"]
    c.answer({})
    assert c.done and c.error is None


def test_a_failed_lease_check_fails_every_write_of_the_transaction(fence: Fence) -> None:
    a = Stepper(ops.fenced_write(fence, _put("a")))
    b = Stepper(ops.fenced_write(fence, _put("b")))
    c = Stepper(ops.fenced_write(fence, _put("c")))
    a.answer({})
    b.wake_if_settled()
    b.answer(_cancelled("ConditionalCheckFailed", "None", "None"))
    assert isinstance(b.error, LeaseLostError)
    assert c.wake_if_settled() and isinstance(c.error, LeaseLostError)


def test_a_conflict_is_retried_with_backoff_and_counted(fence: Fence) -> None:
    before = lock.write_stats()
    a = Stepper(ops.fenced_write(fence, _put("a")))
    a.answer(_cancelled("TransactionConflict", "None"))
    assert isinstance(a.req, Sleep) and 0 <= a.req.seconds <= 0.02
    a.answer(None)
    assert isinstance(a.req, Call) and _sks(a.req) == ["|m|lock", "a"]
    a.answer({})
    after = lock.write_stats()
    assert a.done and a.error is None
    assert after["conflict_retries"] == before["conflict_retries"] + 1
    assert after["transactions"] == before["transactions"] + 1


def test_a_conflict_that_never_ends_is_a_typed_error_that_says_what_to_do(fence: Fence) -> None:
    a = Stepper(ops.fenced_write(fence, _put("a")))
    for _ in range(ATTEMPTS - 1):
        a.answer(_cancelled("TransactionConflict", "None"))
        assert isinstance(a.req, Sleep)
        a.answer(None)
    a.answer(_cancelled("TransactionConflict", "None"))
    assert isinstance(a.error, WriteContentionError) and isinstance(a.error, ClientError)
    assert "Retry the request later" in str(a.error) and "t-1" in str(a.error)


def test_two_writes_of_one_item_never_share_a_transaction(fence: Fence) -> None:
    a = Stepper(ops.fenced_write(fence, _put("a")))
    b = Stepper(ops.fenced_write(fence, _put("x")))
    c = Stepper(ops.fenced_write(fence, _put("x")))  # DynamoDB refuses two actions on one item
    a.answer({})
    b.wake_if_settled()
    assert _sks(b.req) == ["|m|lock", "x"]
    b.answer({})
    assert c.wake_if_settled() and _sks(c.req) == ["|m|lock", "x"]
    c.answer({})
    assert c.done and c.error is None


def test_a_transaction_takes_at_most_99_writes(fence: Fence) -> None:
    first = Stepper(ops.fenced_write(fence, _put("first")))
    waiting = [Stepper(ops.fenced_write(fence, _put(f"w{i}"))) for i in range(120)]
    first.answer({})
    lead = waiting[0]
    assert lead.wake_if_settled() and len(lead.req.kwargs["TransactItems"]) == 100
    lead.answer({})
    rest = [w for w in waiting if not w.done and not w.wake_if_settled()]
    nxt = next(w for w in waiting if isinstance(w.req, Call))
    assert len(nxt.req.kwargs["TransactItems"]) == 1 + 21 and rest
    nxt.answer({})
    assert all(w.done or w.wake_if_settled() for w in waiting) and all(w.error is None for w in waiting)


def test_an_exclusive_operation_waits_for_the_transaction_in_flight(fence: Fence) -> None:
    a = Stepper(ops.fenced_write(fence, _put("a")))

    def renew() -> Op[str]:
        yield ddb("update_item", TableName="tbl")
        return "renewed"

    r = Stepper(committer_for(fence).exclusive(renew()))
    b = Stepper(ops.fenced_write(fence, _put("b")))  # after the renew: waits for it
    assert isinstance(r.req, Wait) and isinstance(b.req, Wait)
    a.answer({})
    assert r.wake_if_settled() and isinstance(r.req, Call) and r.req.method == "update_item"
    assert not b.wake_if_settled()
    r.answer({})
    assert r.result == "renewed"
    assert b.wake_if_settled() and _sks(b.req) == ["|m|lock", "b"]
    b.answer({})


def test_a_waiting_write_whose_caller_went_away_is_not_sent(fence: Fence) -> None:
    a = Stepper(ops.fenced_write(fence, _put("a")))
    b = Stepper(ops.fenced_write(fence, _put("b")))
    c = Stepper(ops.fenced_write(fence, _put("c")))
    b.op.close()  # a cancelled task: its operation is closed while it waits
    a.answer({})
    assert c.wake_if_settled() and _sks(c.req) == ["|m|lock", "c"]
    c.answer({})
