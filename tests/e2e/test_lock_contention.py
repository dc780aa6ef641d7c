"""Lease-bound runs under DynamoDB's transaction-conflict rules (tests/support/contention.py).

Every ``put`` and ``put_writes`` of a lease-bound saver is fenced by a
``ConditionCheck`` on the thread's one lock item, and every task of a
superstep writes at once: on DynamoDB, each transaction on that item
conflicts with the others in flight. Under the model of those rules
(``contention`` fixture, 10 ms of extra hold per transaction), ``run_once``
over parallel branches and a lease-bound map-reduce must complete, sync and
async, with zero conflicts on the thread's items: one holder's own writes
never conflict with each other.
"""

from __future__ import annotations

import operator
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from langgraph.checkpoint.dynamodb import lock
from langgraph.checkpoint.dynamodb._engine import pacing
from tests.e2e.test_fanout import map_reduce
from tests.reliability.workloads import SOAK
from tests.support import contention as layer
from tests.support.harness import Harness, cfg, new_thread


@pytest.fixture(params=["sync", "async"])
def h(
    request: pytest.FixtureRequest, contention: str, names: dict[str, str], loop_thread: Any
) -> Iterator[Harness]:
    harness = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    yield harness
    harness.close()


class Branches(TypedDict, total=False):
    done: Annotated[list[str], operator.add]


def parallel(width: int) -> Any:
    """START -> ``width`` branches at once -> join: one superstep whose tasks all write together."""
    g = StateGraph(Branches)
    for i in range(width):
        g.add_node(f"b{i}", lambda s, i=i: {"done": [f"b{i}"]})
        g.add_edge(START, f"b{i}")
        g.add_edge(f"b{i}", "join")
    g.add_node("join", lambda s: {"done": ["join"]})
    g.add_edge("join", END)
    return g.compile()


def _run_once(h: Harness, thread: str, graph: Any, inp: Any) -> Any:
    """``run_once`` (or ``arun_once``) of ``graph`` on a new thread, the way docs/lock.md shows it."""
    if h.is_async:

        async def awork(ctx: Any) -> Any:
            return await graph.copy({"checkpointer": ctx.saver}).ainvoke(inp, ctx.config(), durability="sync")

        return h.loop.run(lock.arun_once(h.saver, thread, "req-1", None, awork))

    def work(ctx: Any) -> Any:
        return graph.copy({"checkpointer": ctx.saver}).invoke(inp, ctx.config(), durability="sync")

    return lock.run_once(h.saver, thread, "req-1", None, work)


def _own_conflicts(endpoint: str, h: Harness, thread: str) -> int:
    """Conflicts the layer counted on the thread's items (its partition: lock, checkpoints, writes)."""
    return layer.conflicts_on(layer.status(endpoint), h.saver.partition_key(thread))


@pytest.mark.parametrize("width", [2, 4])
def test_run_once_over_parallel_branches(h: Harness, contention: str, width: int) -> None:
    thread = new_thread()
    outcome = _run_once(h, thread, parallel(width), {"done": []})
    assert sorted(outcome.value["done"]) == sorted([*(f"b{i}" for i in range(width)), "join"])
    assert _own_conflicts(contention, h, thread) == 0
    state = h.get_state(parallel(width).copy({"checkpointer": h.saver}), cfg(thread))
    assert state.values == outcome.value and not state.next


# Also on the saver's I/O thread: the writes wait on its loop, the lease on the caller's.
@pytest.mark.parametrize("h", ["sync", "async", "async-io-thread"], indirect=True)
def test_run_once_over_a_map_reduce_of_ten_sends(h: Harness, contention: str) -> None:
    thread = new_thread()
    outcome = _run_once(h, thread, map_reduce().compile(), {"n": 10, "results": []})
    assert outcome.value["total"] == sum(2 * i for i in range(10)) and len(outcome.value["results"]) == 10
    assert _own_conflicts(contention, h, thread) == 0


def test_a_lease_bound_map_reduce_of_ten_sends(h: Harness, contention: str) -> None:
    thread = new_thread()
    graph = map_reduce().compile()
    if h.is_async:

        async def run() -> Any:
            async with lock.AsyncThreadLease(h.saver, thread, lease_seconds=30) as lease:
                return await graph.copy({"checkpointer": lease.bind()}).ainvoke(
                    {"n": 10, "results": []}, cfg(thread)
                )

        out = h.loop.run(run())
    else:
        with lock.ThreadLease(h.saver, thread, lease_seconds=30) as lease:
            out = graph.copy({"checkpointer": lease.bind()}).invoke({"n": 10, "results": []}, cfg(thread))
    assert out["total"] == sum(2 * i for i in range(10))
    assert _own_conflicts(contention, h, thread) == 0


def _bound_run(h: Harness, lease: Any, graph: Any, inp: Any, thread: str) -> Any:
    if h.is_async:
        return h.loop.run(graph.copy({"checkpointer": lease.bind()}).ainvoke(inp, cfg(thread)))
    return graph.copy({"checkpointer": lease.bind()}).invoke(inp, cfg(thread))


def _lease(h: Harness, thread: str, **kwargs: Any) -> Any:
    """A held lease of the harness's kind (acquired on the harness's loop when async)."""
    if h.is_async:
        lease = lock.AsyncThreadLease(h.saver, thread, **kwargs)
        h.loop.run(lease.acquire())
    else:
        lease = lock.ThreadLease(h.saver, thread, **kwargs)
        lease.acquire()
    return lease


def _release(h: Harness, lease: Any) -> Any:
    return h.loop.run(lease.release()) if h.is_async else lease.release()


def test_a_stale_holder_is_still_fenced_while_the_new_one_fans_out(h: Harness, contention: str) -> None:
    thread = new_thread()
    graph = map_reduce().compile()
    stale = _lease(h, thread, lease_seconds=1.0, heartbeat=False)  # paused: it never renews
    # Another worker watches the silent lease for its whole duration and takes the thread over.
    new = _lease(h, thread, lease_seconds=30, wait_seconds=10, poll_seconds=0.05, heartbeat=False)
    assert new.info.token > stale.info.token
    errors: list[BaseException] = []

    def stale_run() -> None:
        try:
            _bound_run(h, stale, graph, {"n": 7, "results": []}, thread)
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=stale_run)
    t.start()  # the thawed holder carries on as if nothing happened, while the new one runs
    out = _bound_run(h, new, graph, {"n": 10, "results": []}, thread)
    t.join(60)
    assert len(errors) == 1 and isinstance(errors[0], lock.LeaseLostError), errors
    assert out["total"] == sum(2 * i for i in range(10))
    # Nothing of the stale run landed: no checkpoint of the thread ever saw n = 7.
    history = h.history(graph.copy({"checkpointer": h.saver}), cfg(thread))
    assert history and all(s.values.get("n") != 7 for s in history)
    assert _release(h, new) is True and _release(h, stale) is False


def test_the_heartbeat_renews_between_the_holders_own_transactions(h: Harness, contention: str) -> None:
    thread = new_thread()
    graph = map_reduce().compile()
    lease = _lease(h, thread, lease_seconds=0.6)  # a heartbeat every 0.2 s
    first = lease.info.expires_at
    started = time.monotonic()
    runs = 0
    while time.monotonic() - started < 1.5:  # fan-outs back to back: some beat meets our writes
        out = _bound_run(h, lease, graph, {"n": 20, "results": []}, thread)
        runs += 1
        assert len(out["results"]) == 20 * runs
    assert not lease.lost and lease.info.expires_at > first + 0.5  # renewed while the writes ran
    assert _own_conflicts(contention, h, thread) == 0
    assert _release(h, lease) is True


#: The sync variant in CI; ``make soak`` (SOAK=1) both.
@pytest.mark.parametrize("h", ["sync", "async"] if SOAK else ["sync"], indirect=True)
def test_a_lease_bound_fan_out_of_a_thousand_sends(h: Harness, contention: str) -> None:
    thread = new_thread()
    before = lock.write_stats()
    lease = _lease(h, thread, lease_seconds=60)
    started = time.monotonic()
    out = _bound_run(h, lease, map_reduce().compile(), {"n": 1000, "results": []}, thread)
    took = time.monotonic() - started
    _release(h, lease)
    after = lock.write_stats()
    writes = after["fenced_writes"] - before["fenced_writes"]
    transactions = after["transactions"] - before["transactions"]
    state = layer.status(contention)
    print(
        f"\n1,000 Sends lease-bound ({h.variant}): {took:.1f} s, {writes} fenced writes in {transactions} "
        f"transactions; layer {state['counts']} sizes {state['transaction_sizes']}"
    )
    assert out["total"] == sum(2 * i for i in range(1000)) and len(out["results"]) == 1000
    assert _own_conflicts(contention, h, thread) == 0
    # Coalesced: the writes that waited shared transactions (as many as LangGraph ran at once).
    assert writes > 1000 and transactions < writes / 2


def test_a_throttled_lease_bound_run_is_retried_and_counted(h: Harness, contention: str) -> None:
    # One thread's partition at 20 WCU/s (a fenced write costs 4 or more): the run must wait, not fail.
    layer.configure(contention, layer.DEFAULT_HOLD_MS, throttle=0.02)
    thread = new_thread()
    before, paced_before = lock.write_stats(), sum(pacing.throttle_stats().values())
    outcome = _run_once(h, thread, map_reduce().compile(), {"n": 10, "results": []})
    after, paced_after = lock.write_stats(), sum(pacing.throttle_stats().values())
    assert outcome.value["total"] == sum(2 * i for i in range(10))
    state = layer.status(contention)
    assert state["counts"].get("throttled_transactions", 0) > 0
    # The drivers pace throttled requests (counted by cause); none reached the lock as a failure.
    retried = (paced_after - paced_before) + (after["throttle_retries"] - before["throttle_retries"])
    assert retried > 0 and after["gave_up"] == before["gave_up"]
    assert _own_conflicts(contention, h, thread) == 0
