"""Realistic graphs that write many writes per task: map-reduce fan-outs, many interrupts, wide nodes.

Before the writes layout of ``schema.WRITES_PER_ITEM``, one ``UpdateItem`` per
``put_writes`` named every write: a conditional edge returning ~117 ``Send``s made
an expression over DynamoDB's 4 KB (moto answered HTTP 500 from ~151), and the
step that produced the ``Send``s lost its writes. Each graph here runs against an
in-memory oracle and must end in the same state, sync and async, with S3 and
encryption on one variant.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

from tests.reliability.workloads import SOAK
from tests.support.harness import Harness, cfg, new_thread

VARIANTS = ["sync", "async-s3-encrypted"]


@pytest.fixture(params=VARIANTS)
def h(
    request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> Iterator[Harness]:
    harness = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    yield harness
    harness.close()


class MapState(TypedDict, total=False):
    n: int
    results: Annotated[list[int], operator.add]
    total: int


def map_reduce() -> StateGraph:
    def fan_out(state: MapState) -> list[Send]:
        return [Send("work", {"i": i}) for i in range(state["n"])]

    def work(arg: dict[str, int]) -> dict[str, Any]:
        return {"results": [arg["i"] * 2]}

    def reduce(state: MapState) -> dict[str, Any]:
        return {"total": sum(state["results"])}

    g = StateGraph(MapState)
    g.add_node("start", lambda s: {})
    g.add_node("work", work)
    g.add_node("reduce", reduce)
    g.add_edge(START, "start")
    g.add_conditional_edges("start", fan_out, ["work"])
    g.add_edge("work", "reduce")
    g.add_edge("reduce", END)
    return g


@pytest.mark.parametrize("n", [10, 150])
def test_map_reduce_fan_out(h: Harness, n: int) -> None:
    _map_reduce(h, n)


#: 1,000 branches take ~20 s a variant: CI runs the sync one, ``make soak`` both.
@pytest.mark.parametrize("h", ["sync", "async-s3-encrypted"] if SOAK else ["sync"], indirect=True)
def test_map_reduce_fan_out_of_a_thousand(h: Harness) -> None:
    _map_reduce(h, 1000)


def _map_reduce(h: Harness, n: int) -> None:
    thread = new_thread()
    graph = map_reduce().compile(checkpointer=h.saver)
    out = h.invoke(graph, {"n": n, "results": []}, cfg(thread))
    assert out["total"] == sum(2 * i for i in range(n)) and len(out["results"]) == n
    # The step that produced the Sends kept its writes: its checkpoint reads back with all of them.
    history = h.history(graph, cfg(thread))
    fanned = [s for s in history if s.next and set(s.next) == {"work"}]
    assert fanned and len(fanned[0].tasks) == n
    # A fresh saver sees the same final state.
    fresh = map_reduce().compile(checkpointer=h.make_saver())
    assert h.get_state(fresh, cfg(thread)).values == h.get_state(graph, cfg(thread)).values


def test_a_node_writing_hundreds_of_channels(h: Harness) -> None:
    keys = [f"k{i}" for i in range(300)]
    Wide = TypedDict("Wide", {k: int for k in keys}, total=False)  # type: ignore[misc]
    g = StateGraph(Wide)
    g.add_node("wide", lambda s: {k: i for i, k in enumerate(keys)})
    g.add_edge(START, "wide")
    g.add_edge("wide", END)
    thread = new_thread()
    out = h.invoke(g.compile(checkpointer=h.saver), {}, cfg(thread))
    oracle = g.compile(checkpointer=InMemorySaver()).invoke({}, cfg(thread))
    assert out == oracle and len(out) == 300


class AskState(TypedDict, total=False):
    answers: Annotated[list[str], operator.add]


def test_many_interrupts_in_one_node_resume_in_order(h: Harness) -> None:
    n = 40

    def ask(state: AskState) -> dict[str, Any]:
        return {"answers": [interrupt(f"q{i}") for i in range(n)]}

    g = StateGraph(AskState)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    graph = g.compile(checkpointer=h.saver)
    oracle = g.compile(checkpointer=InMemorySaver())
    thread = new_thread()
    out = h.invoke(graph, {"answers": []}, cfg(thread))
    expected = oracle.invoke({"answers": []}, cfg(thread))
    for i in range(n):
        assert [x.value for x in out["__interrupt__"]] == [x.value for x in expected["__interrupt__"]]
        out = h.invoke(graph, Command(resume=f"a{i}"), cfg(thread))
        expected = oracle.invoke(Command(resume=f"a{i}"), cfg(thread))
    assert out == expected and out["answers"] == [f"a{i}" for i in range(n)]
