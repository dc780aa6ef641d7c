"""The drivers pace a throttled request: sent again with backoff until it lands, within a patience.

A fake client answers with DynamoDB's and S3's throttle shapes; the real
sync and async drivers run one call through it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb._engine import pacing
from langgraph.checkpoint.dynamodb._engine.drivers import AsyncDriver, Clients, SyncDriver
from langgraph.checkpoint.dynamodb._engine.ops import Call, ddb

MODES = ["sync", "async"]


def _err(code: str, **extra: Any) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}, **extra}, "PutItem")


HOT_KEY = _err(
    "ProvisionedThroughputExceededException",
    ThrottlingReasons=[{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": "arn:t"}],
)
TX_THROTTLED = _err(
    "TransactionCanceledException", CancellationReasons=[{"Code": "None"}, {"Code": "ThrottlingError"}]
)
TX_CONFLICT = _err(
    "TransactionCanceledException", CancellationReasons=[{"Code": "TransactionConflict"}, {"Code": "None"}]
)


class Fake:
    """Answers ``put_item`` with the scripted errors, then success; counts the attempts."""

    def __init__(self, errors: list[BaseException], *, is_async: bool) -> None:
        self.errors = list(errors)
        self.attempts = 0
        self.is_async = is_async

    def _answer(self) -> dict[str, Any]:
        self.attempts += 1
        if self.errors:
            raise self.errors.pop(0)
        return {"ok": True}

    def __getattr__(self, name: str) -> Any:
        if self.is_async:

            async def acall(**_: Any) -> dict[str, Any]:
                return self._answer()

            return acall
        return lambda **_: self._answer()


def _send(mode: str, errors: list[BaseException], call: Call | None = None) -> tuple[Any, Fake]:
    fake = Fake(errors, is_async=mode == "async")
    req = call or ddb("put_item", TableName="t", Item={})
    if mode == "sync":
        return SyncDriver(Clients(dynamodb=fake), keep_pool=False).call(req), fake
    return asyncio.run(AsyncDriver(Clients(dynamodb=fake)).call(req)), fake


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pacing, "BASE_SECONDS", 0.001)
    monkeypatch.setattr(pacing, "CAP_SECONDS", 0.004)
    pacing.throttle_stats(reset=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (HOT_KEY, "TableWriteKeyRangeThroughputExceeded"),
        (_err("ThrottlingException"), "ThrottlingException"),
        (_err("RequestLimitExceeded"), "RequestLimitExceeded"),
        (_err("SlowDown"), "SlowDown"),
        (TX_THROTTLED, "ThrottlingError"),
    ],
)
def test_a_throttled_request_is_sent_again_until_it_lands(mode: str, error: ClientError, reason: str) -> None:
    resp, fake = _send(mode, [error, error, error])
    assert resp == {"ok": True} and fake.attempts == 4
    assert pacing.throttle_stats() == {reason: 3}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "error", [TX_CONFLICT, _err("ConditionalCheckFailedException"), _err("ValidationException")]
)
def test_other_errors_are_not_sent_again(mode: str, error: ClientError) -> None:
    with pytest.raises(ClientError) as got:
        _send(mode, [error])
    assert got.value is error and pacing.throttle_stats() == {}


@pytest.mark.parametrize("mode", MODES)
def test_an_unpaced_call_meets_its_throttle_at_once(mode: str) -> None:
    call = Call("dynamodb", "update_item", {"TableName": "t"}, paced=False)
    with pytest.raises(ClientError):
        _send(mode, [HOT_KEY], call)


@pytest.mark.parametrize("mode", MODES)
def test_past_its_patience_the_throttle_reaches_the_operation(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pacing, "PATIENCE_SECONDS", 0.05)
    monkeypatch.setattr(pacing.random, "uniform", lambda a, b: b)  # the longest waits
    with pytest.raises(ClientError) as got:
        _send(mode, [HOT_KEY] * 1000)
    assert got.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    waits = pacing.throttle_stats()["TableWriteKeyRangeThroughputExceeded"]
    # 1 + 2 + 4 + 4 + ... ms: about 13 waits fit in 50 ms, never the 1,000 throttles
    assert 5 <= waits <= 20


def test_backoff_is_full_jitter_under_a_doubling_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    ceilings: list[float] = []
    monkeypatch.setattr(pacing.random, "uniform", lambda a, b: ceilings.append(b) or 0.0)
    pacer = pacing.ThrottlePacer(patience=1.0)
    for _ in range(5):
        assert pacer.next_delay(HOT_KEY) == 0.0
    assert ceilings == [0.001, 0.002, 0.004, 0.004, 0.004]


def test_within_paced_until_no_request_waits_past_the_deadline() -> None:
    import time

    err = ClientError({"Error": {"Code": "ThrottlingException"}}, "PutItem")
    with pacing.paced_until(time.time() - 1):
        assert pacing.ThrottlePacer().next_delay(err) is None
        with pacing.paced_until(time.time() + 3600):  # an inner deadline never extends the outer one
            assert pacing.ThrottlePacer().next_delay(err) is None
    with pacing.paced_until(time.time() + 3600):
        assert pacing.ThrottlePacer().next_delay(err) is not None
    assert pacing.ThrottlePacer().next_delay(err) is not None


def test_the_throttle_behind_a_wrapped_error_is_found() -> None:
    err = ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "PutItem")
    try:
        try:
            raise err
        except ClientError as inner:
            raise RuntimeError("the saver's own error") from inner
    except RuntimeError as outer:
        assert pacing.chained_throttle(outer) == ["ProvisionedThroughputExceededException"]
    assert pacing.chained_throttle(ValueError("no")) is None
