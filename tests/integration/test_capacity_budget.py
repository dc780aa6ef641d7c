"""Maintenance within a capacity budget, on the throughput layer (issue 36: jobs take at most their share).

A copy and a prune run inside ``lifecycle.capacity_budget``: the units the
budget was charged are the units the layer counted (the layer reports
``ConsumedCapacity`` as DynamoDB does), and the job takes at least as long
as its units at the budget's rate (a lower bound: load only lengthens it).
Under throttling the budget gives way (its rate drops) and the job still
completes, nothing lost.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb.lifecycle import CapacityBudget, capacity_budget
from tests.support import throughput
from tests.support.harness import Harness, LoopThread, cfg, checkpoint_of

STEPS = 12
STATE_BYTES = 3000  # 3 write units per checkpoint item, incompressible


@pytest.fixture(params=["sync", "async"])
def hh(
    request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: LoopThread
) -> Iterator[Harness]:
    h = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    yield h
    h.close()


def _fill(h: Harness, thread: str, steps: int = STEPS) -> None:
    conf = cfg(thread)
    for step in range(steps):
        versions = {"state": str(step + 1)}
        cp = checkpoint_of({"state": os.urandom(STATE_BYTES)}, versions)
        conf = h.call("put", conf, cp, {"step": step, "source": "loop"}, versions)


def _within(
    h: Harness, name: str, *args: Any, budget: dict[str, float], **kwargs: Any
) -> tuple[Any, CapacityBudget, float]:
    """``saver.name(*args)`` inside a budget, entered where the operation runs (the loop, for async)."""
    began = time.monotonic()
    if not h.is_async:
        with capacity_budget(**budget) as b:
            out = getattr(h.saver, name)(*args, **kwargs)
        return out, b, time.monotonic() - began

    async def job() -> tuple[Any, CapacityBudget]:
        with capacity_budget(**budget) as b:
            return await getattr(h.saver, "a" + name)(*args, **kwargs), b

    out, b = h.loop.run(job())
    return out, b, time.monotonic() - began


def test_a_budgeted_copy_is_charged_what_the_table_counts_and_paced_to_its_rate(
    hh: Harness, moto_endpoint: str
) -> None:
    source, target = f"bud-{uuid.uuid4().hex[:8]}", f"bud-{uuid.uuid4().hex[:8]}"
    _fill(hh, source)
    rate = 20.0
    with throughput.counting(moto_endpoint):
        _, budget, took = _within(hh, "copy_thread", source, target, budget={"write_units": rate})
        state = throughput.capacity(moto_endpoint)
    indexes = state["tables"][hh.table_name]["indexes"]
    counted = throughput.total(state, hh.table_name, "write") + sum(
        throughput.total(state, hh.table_name, "write", index) for index in indexes
    )
    stats = budget.stats()
    print(hh.variant, "copy:", stats, "counted", counted, f"took {took:.2f} s")
    assert stats["write_units_spent"] == pytest.approx(counted) and counted >= STEPS * 3
    # One second of units is free; the rest is paid at the rate.
    assert took >= (stats["write_units_spent"] - rate) / rate - 0.05
    assert stats["waited_seconds"] > 0
    assert len(hh.list(cfg(target))) == STEPS


def test_under_throttling_a_budgeted_prune_gives_way_and_completes(hh: Harness, moto_endpoint: str) -> None:
    thread = f"bud-{uuid.uuid4().hex[:8]}"
    _fill(hh, thread, steps=60)
    # The table at 1/50 of AWS's limits: a partition serves 20 write units a
    # second, less than one page of deletes (25 items) costs.
    with throughput.counting(moto_endpoint, scale=0.02):
        throughput.reset(moto_endpoint)
        result, budget, _took = _within(hh, "prune", [thread], budget={"write_units": 200.0}, keep_last=2)
        state = throughput.capacity(moto_endpoint)
    stats = budget.stats()
    print(hh.variant, "prune under throttling:", stats, state.get("throttles"))
    assert stats["throttles"] > 0 and stats["write_units_per_second"] < 200
    assert sum(state.get("throttles", {}).values()) >= stats["throttles"]
    assert len(hh.list(cfg(thread))) == 2 and result is not None
