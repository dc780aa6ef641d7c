"""Real graphs end to end, for every saver variant (sync/async, S3, encryption)."""

from __future__ import annotations

import base64
import random

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langgraph.checkpoint.dynamodb import PayloadTooLargeError
from tests.support.graphs import EXECUTIONS, FAIL, chat_graph, parallel_graph, requirement_graph
from tests.support.harness import Harness, cfg, new_thread, scan_table


def test_interrupt_and_resume_with_fresh_saver(harness: Harness) -> None:
    EXECUTIONS.clear()
    thread = new_thread()
    graph = requirement_graph().compile(checkpointer=harness.saver)
    out = harness.invoke(graph, {"request": "export button"}, cfg(thread))
    assert out["__interrupt__"][0].value == {"question": "What exactly should 'export button' do?"}
    # A new saver (as a new Lambda instance would have) resumes the thread.
    fresh = harness.make_saver()
    graph2 = requirement_graph().compile(checkpointer=fresh)
    state = harness.get_state(graph2, cfg(thread))
    assert state.next == ("pm",)
    final = harness.invoke(graph2, Command(resume="CSV download"), cfg(thread))
    assert final["result"] == "built: plan for export button (CSV download)"
    assert EXECUTIONS == {"pm": 2, "planner": 1, "developer": 1}


def test_parallel_failure_keeps_successful_writes(harness: Harness) -> None:
    EXECUTIONS.clear()
    FAIL["b"] = True
    thread = new_thread()
    graph = parallel_graph().compile(checkpointer=harness.saver)
    with pytest.raises(RuntimeError, match="b failed"):
        harness.invoke(graph, {"log": []}, cfg(thread))
    state = harness.get_state(graph, cfg(thread))
    # a's writes are pending on the checkpoint; b's error is recorded there too.
    assert {w.name for w in state.tasks} == {"a", "b"}
    FAIL["b"] = False
    out = harness.invoke(graph, None, cfg(thread))
    assert sorted(out["log"]) == ["a", "b", "join"]
    assert EXECUTIONS["a"] == 1, "the successful node must not run again"
    assert EXECUTIONS["b"] == 2


def test_subgraph_namespaces_history_time_travel_and_fork(harness: Harness) -> None:
    thread = new_thread()
    graph = chat_graph(subgraph=True).compile(checkpointer=harness.saver)
    oracle = chat_graph(subgraph=True).compile(checkpointer=InMemorySaver())
    for i in range(3):
        harness.invoke(graph, {"messages": [f"user {i}"]}, cfg(thread))
        oracle.invoke({"messages": [f"user {i}"]}, cfg(thread))
    state = harness.get_state(graph, cfg(thread))
    assert state.values == oracle.get_state(cfg(thread)).values
    assert state.values["turns"] == 3
    # Subgraph checkpoints live in their own namespaces.
    all_ns = {
        t.config["configurable"]["checkpoint_ns"]
        for t in harness.list({"configurable": {"thread_id": thread}})
    }
    assert "" in all_ns and any(ns.startswith("assistant:") for ns in all_ns)
    history = harness.history(graph, cfg(thread))
    assert [s.metadata["step"] for s in history] == sorted(
        (s.metadata["step"] for s in history), reverse=True
    )
    # Time travel: replay from the checkpoint after the first turn.
    after_first = next(s for s in history if s.values.get("turns") == 1 and not s.next)
    first_msgs = list(after_first.values["messages"])
    out = harness.invoke(graph, {"messages": ["branch"]}, after_first.config)
    assert out["turns"] == 2 and out["messages"][: len(first_msgs) + 1] == [*first_msgs, "branch"]
    # Fork: update_state on an old checkpoint creates a new head from it.
    forked = harness.update_state(graph, after_first.config, {"messages": ["edited"]})
    fstate = harness.get_state(graph, forked)
    assert fstate.values["messages"] == [*first_msgs, "edited"] and fstate.values["turns"] == 1
    assert (
        harness.get_state(graph, cfg(thread)).config["configurable"]["checkpoint_id"]
        == forked["configurable"]["checkpoint_id"]
    )


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_durability_modes(harness: Harness, durability: str) -> None:
    thread = new_thread()
    graph = chat_graph().compile(checkpointer=harness.saver)
    for i in range(2):
        harness.invoke(graph, {"messages": [f"u{i}"]}, cfg(thread), durability=durability)
    state = harness.get_state(graph, cfg(thread))
    assert state.values["turns"] == 2 and len(state.values["messages"]) == 4
    n = len(harness.history(graph, cfg(thread)))
    assert n == (2 if durability == "exit" else 6)


def test_large_state_round_trip(harness: Harness) -> None:
    """A 2 MB state: via S3 with a bucket; a clear error and nothing written without."""
    thread = new_thread()
    graph = chat_graph().compile(checkpointer=harness.saver)
    # Incompressible (compression would shrink a repeated string to nothing).
    big = base64.b64encode(random.Random(7).randbytes(1536 * 1024)).decode()
    if harness.bucket_name is None:
        before = scan_table(harness.table_name)
        with pytest.raises(PayloadTooLargeError, match="bucket_name"):
            harness.invoke(graph, {"messages": [big]}, cfg(thread))
        after = [it for it in scan_table(harness.table_name) if it not in before]
        # The input checkpoint (step -1) is small; nothing large got in.
        assert all(len(str(it)) < 100_000 for it in after)
        return
    out = harness.invoke(graph, {"messages": [big]}, cfg(thread))
    assert out["messages"][0] == big
    fresh = harness.make_saver()
    graph2 = chat_graph().compile(checkpointer=fresh)
    assert harness.get_state(graph2, cfg(thread)).values["messages"][0] == big
