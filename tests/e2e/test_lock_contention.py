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
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from langgraph.checkpoint.dynamodb import lock
from tests.e2e.test_fanout import map_reduce
from tests.support import contention
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
    return contention.conflicts_on(contention.status(endpoint), h.saver.partition_key(thread))


@pytest.mark.parametrize("width", [2, 4])
def test_run_once_over_parallel_branches(h: Harness, contention: str, width: int) -> None:
    thread = new_thread()
    outcome = _run_once(h, thread, parallel(width), {"done": []})
    assert sorted(outcome.value["done"]) == sorted([*(f"b{i}" for i in range(width)), "join"])
    assert _own_conflicts(contention, h, thread) == 0
    state = h.get_state(parallel(width).copy({"checkpointer": h.saver}), cfg(thread))
    assert state.values == outcome.value and not state.next


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
