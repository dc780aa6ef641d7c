"""docs/lock.md's two examples, as written, on a real graph against moto.

The ``run_once`` example resumes an interrupted thread once per request id
(a retry replays the stored result, nothing runs twice); the ``ThreadLease``
example runs a graph with a lease-bound saver and reads the fencing token.
The names the examples leave to the reader (``graph``, ``saver``,
``thread_id``, ...) are given here; the code between them runs unchanged.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from langgraph.checkpoint.dynamodb import DynamoDBSaver

DOC = Path(__file__).resolve().parents[2] / "docs" / "lock.md"


class State(TypedDict, total=False):
    question: str
    result: str


def _approval_graph(runs: list[str]) -> Any:
    def ask(state: State) -> State:
        answer = interrupt(state["question"])
        runs.append(answer)  # a side effect: must happen once per request
        return {"result": f"answered {answer}"}

    b = StateGraph(State)
    b.add_node("ask", ask)
    b.add_edge(START, "ask")
    b.add_edge("ask", END)
    return b.compile()


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.fixture
def saver(moto_endpoint: str, names: dict[str, str]) -> Any:
    with DynamoDBSaver(**names) as s:
        s.setup()
        yield s


def test_run_once_example_resumes_once_per_request(saver: DynamoDBSaver) -> None:
    (snippet,) = [b for b in _blocks() if "outcome = run_once(" in b]
    runs: list[str] = []
    graph = _approval_graph(runs)
    thread_id = f"t-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread_id}}
    graph.copy({"checkpointer": saver}).invoke({"question": "refund?"}, config)
    seen = saver.get_tuple(config)
    assert seen is not None
    ns: dict[str, Any] = {
        "graph": graph,
        "saver": saver,
        "thread_id": thread_id,
        "request_id": "req-1",
        "seen_checkpoint_id": seen.config["configurable"]["checkpoint_id"],
        "Command": Command,
        "answer": "yes",
    }
    exec(compile(snippet, str(DOC), "exec"), ns)
    first = ns["outcome"]
    assert first.value["result"] == "answered yes" and not first.replayed and not first.recovered
    exec(compile(snippet, str(DOC), "exec"), ns)  # the client retries the same request
    again = ns["outcome"]
    assert again.replayed and again.value == first.value
    assert runs == ["yes"]  # the node's side effect ran once


def test_thread_lease_example_runs_a_graph_under_the_lease(saver: DynamoDBSaver) -> None:
    (snippet,) = [b for b in _blocks() if "with ThreadLease(" in b]
    snippet = snippet.replace("lease.info.token ", "tokens.append(lease.info.token) ", 1)
    runs: list[str] = []
    graph = _approval_graph(runs)
    thread_id = f"t-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread_id}}
    graph.copy({"checkpointer": saver}).invoke({"question": "go on?"}, config)
    tokens: list[int] = []
    ns: dict[str, Any] = {
        "graph": graph,
        "saver": saver,
        "thread_id": thread_id,
        "config": config,
        "tokens": tokens,
    }
    exec(compile(snippet, str(DOC), "exec"), ns)
    assert tokens and tokens[0] >= 1
    # The graph ran with the lease-bound saver: the thread's latest checkpoint is still the interrupt.
    latest = saver.get_tuple(config)
    assert latest is not None and latest.checkpoint["channel_values"].get("question") == "go on?"
    exec(compile(snippet, str(DOC), "exec"), ns)
    assert tokens[1] > tokens[0]  # a fencing token only ever grows
