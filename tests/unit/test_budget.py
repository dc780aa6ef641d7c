"""Capacity budgets (``_engine/budget.py``): the rate, its adaptation, and where the drivers apply it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb._engine.budget import (
    CapacityBudget,
    budgeted,
    capacity_budget,
    consumed_units,
    current_budget,
)
from langgraph.checkpoint.dynamodb._engine.drivers import AsyncDriver, Clients, SyncDriver
from langgraph.checkpoint.dynamodb._engine.ops import Gather, ddb, s3


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def spent(units: float) -> dict[str, Any]:
    return {"ConsumedCapacity": {"TableName": "t", "CapacityUnits": units}}


def test_a_second_of_units_is_free_then_spending_is_paid_off_at_the_rate() -> None:
    clock = Clock()
    budget = CapacityBudget(write_units=10, clock=clock)
    assert budget.delay("put_item") == 0.0
    assert budget.charge("put_item", spent(5)) == 0.0  # within the first second's units
    assert budget.delay("put_item") == 0.0
    assert budget.charge("put_item", spent(25)) == pytest.approx(2.0)  # 30 units: 2 s past the free second
    assert budget.delay("put_item") == pytest.approx(2.0)
    clock.now += 1.5
    assert budget.delay("put_item") == pytest.approx(0.5)
    clock.now += 10  # idle time refills one second of units, never more
    assert budget.delay("put_item") == 0.0
    budget.charge("put_item", spent(20))
    assert budget.delay("put_item") == pytest.approx(1.0)
    assert budget.stats()["write_units_spent"] == 50


def test_reads_and_writes_have_their_own_rates_and_an_unset_kind_is_free() -> None:
    clock = Clock()
    budget = CapacityBudget(read_units=100, clock=clock)
    budget.charge("query", spent(300))
    assert budget.delay("query") == pytest.approx(2.0)
    assert budget.delay("get_item") == pytest.approx(2.0)
    assert not budget.applies("put_item") and budget.delay("put_item") == 0.0
    assert budget.applies("query") and not budget.applies("describe_table")


def test_a_throttle_halves_the_rate_and_calm_seconds_give_it_back() -> None:
    clock = Clock()
    budget = CapacityBudget(write_units=64, clock=clock)
    budget.throttled("put_item")
    assert budget.stats()["write_units_per_second"] == 32
    for _ in range(10):
        budget.throttled("batch_write_item")
    assert budget.stats()["write_units_per_second"] == 2  # floor: 1/32 of 64
    clock.now += 5  # 5 calm seconds: 5 x 1/20 of 64 back
    budget.delay("put_item")
    assert budget.stats()["write_units_per_second"] == pytest.approx(2 + 16)
    clock.now += 60
    budget.delay("put_item")
    assert budget.stats()["write_units_per_second"] == 64  # never above the configured rate
    assert budget.stats()["throttles"] == 11


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_a_budget_refuses_a_rate_that_is_not_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        CapacityBudget(write_units=bad)


def test_consumed_units_reads_one_entry_or_a_list() -> None:
    assert consumed_units(spent(2.5)) == 2.5
    assert consumed_units({"ConsumedCapacity": [{"CapacityUnits": 1}, {"CapacityUnits": 4}]}) == 5
    assert consumed_units({}) == 0


def test_calls_ask_for_their_consumed_capacity_only_within_a_budget() -> None:
    call = ddb("put_item", TableName="t", Item={})
    assert budgeted(call) == (call, None)
    with capacity_budget(write_units=10) as budget:
        sent, charged = budgeted(call)
        assert charged is budget and sent.kwargs["ReturnConsumedCapacity"] == "TOTAL"
        assert budgeted(ddb("describe_table", TableName="t"))[1] is None
        assert budgeted(s3("put_object", Bucket="b", Key="k"))[1] is None
        assert budgeted(ddb("query", TableName="t"))[1] is None  # reads are not limited here
        mine = ddb("put_item", TableName="t", ReturnConsumedCapacity="INDEXES")
        assert budgeted(mine)[0] is mine
    assert current_budget() is None


class FakeDynamo:
    """Answers writes as DynamoDB would with ReturnConsumedCapacity; records what was asked, by thread."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def put_item(self, **kw: Any) -> dict[str, Any]:
        with self.lock:
            self.asked.append((threading.current_thread().name, kw.get("ReturnConsumedCapacity")))
        return spent(3) if kw.get("ReturnConsumedCapacity") else {}


class AsyncFakeDynamo(FakeDynamo):
    async def put_item(self, **kw: Any) -> dict[str, Any]:  # type: ignore[override]
        await asyncio.sleep(0)
        return FakeDynamo.put_item(self, **kw)


def _writes(n: int) -> Any:
    return (yield Gather([ddb("put_item", TableName="t", Item={"n": i}) for i in range(n)]))


def test_the_sync_drivers_concurrent_calls_are_charged_to_the_callers_budget() -> None:
    client = FakeDynamo()
    driver = SyncDriver(Clients(dynamodb=client), max_concurrency=4)
    try:
        with capacity_budget(write_units=1000) as budget:
            driver.run(_writes(8))
        driver.run(_writes(2))  # outside the block: not asked, not charged
    finally:
        driver.close()
    asked = [a for _, a in client.asked]
    assert asked.count("TOTAL") == 8 and asked.count(None) == 2
    assert any(name != threading.current_thread().name for name, _ in client.asked)  # the pool's threads
    assert budget.stats()["write_units_spent"] == 24


def test_the_async_drivers_calls_are_charged_and_a_spent_budget_holds_the_next_call_back() -> None:
    client = AsyncFakeDynamo()
    driver = AsyncDriver(Clients(dynamodb=client))

    async def main() -> dict[str, float]:
        # 1 unit a second: the first write (3 units) spends ahead, the second waits it off.
        with capacity_budget(write_units=1.5) as budget:
            await driver.run(_writes(1))
            loop = asyncio.get_running_loop()
            began = loop.time()
            await driver.run(_writes(1))
            took = loop.time() - began
        return {**budget.stats(), "took": took}

    stats = asyncio.run(main())
    assert stats["write_units_spent"] == 6
    assert stats["waited_seconds"] >= 0.9 and stats["took"] >= 0.9  # (3 - 1.5) / 1.5 s


def test_a_response_botocore_had_to_retry_counts_as_a_throttle() -> None:
    budget = CapacityBudget(write_units=100, clock=Clock())
    budget.charge("put_item", {**spent(1), "ResponseMetadata": {"RetryAttempts": 0}})
    assert budget.stats()["throttles"] == 0
    budget.charge("put_item", {**spent(1), "ResponseMetadata": {"RetryAttempts": 3}})
    assert budget.stats()["throttles"] == 1 and budget.stats()["write_units_per_second"] == 50
