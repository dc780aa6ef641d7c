"""The example agent's graph: clarify a requirement with the user, then implement it.

A deterministic stand-in for an LLM agent (no model, no network), shaped like
the product-manager step of a coding-agent flow: ``clarify`` asks the user a
question through ``interrupt()`` when the requirement leaves something open,
``implement`` produces the result. Both count their executions in
:data:`EXECUTIONS` so tests can prove a node did not run twice.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import interrupt

__all__ = ["EXECUTIONS", "PARTS", "QUESTION", "AgentState", "build_graph", "count", "reset_counts"]

#: Node executions in this process (a Lambda container), by node name.
EXECUTIONS: Counter[str] = Counter()
_COUNT_LOCK = threading.Lock()

#: Seconds ``implement`` takes; tests raise it so concurrent requests overlap.
WORK_SECONDS = 0.0
#: Supersteps ``implement`` takes (one per part): a long job, which a Lambda
#: invocation may not finish, drains between parts (see the handler).
PARTS = 1
#: Called at the start of every ``implement`` run (tests inject failures and crashes).
ON_IMPLEMENT: Callable[[AgentState], None] | None = None

QUESTION = "Which export format do you need, and which roles may export?"


class AgentState(TypedDict, total=False):
    """The graph's state.

    Attributes:
        requirement: what the user asked for.
        answer: the user's answer to the clarifying question.
        result: the delivered implementation summary.
        parts_done: parts of the implementation finished so far.

    Example:
        >>> AgentState(requirement="Add an export")
        {'requirement': 'Add an export'}
    """

    requirement: str
    answer: str
    result: str
    parts_done: int


def count(node: str) -> None:
    """Record one execution of ``node``."""
    with _COUNT_LOCK:
        EXECUTIONS[node] += 1


def reset_counts() -> None:
    """Forget all recorded executions (tests)."""
    with _COUNT_LOCK:
        EXECUTIONS.clear()


def _clarify(state: AgentState) -> dict[str, Any]:
    count("clarify")
    # Dynamic interrupts re-run the node from the top on resume: everything
    # before interrupt() must be free of side effects (counting is ours).
    answer = interrupt({"question": QUESTION, "requirement": state.get("requirement", "")})
    return {"answer": str(answer).strip()}


def _implement(state: AgentState) -> dict[str, Any]:
    count("implement")
    if ON_IMPLEMENT is not None:
        ON_IMPLEMENT(state)
    if WORK_SECONDS:
        time.sleep(WORK_SECONDS)
    done = state.get("parts_done", 0) + 1
    if done < PARTS:
        return {"parts_done": done}
    result = f"Implemented '{state.get('requirement', '')}' as agreed: {state.get('answer', '')}"
    return {"parts_done": done, "result": result}


def _next_part(state: AgentState) -> str:
    return "implement" if state.get("parts_done", 0) < PARTS else END


def build_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the agent graph with a checkpointer.

    Example:
        ```python
        from langgraph.checkpoint.memory import InMemorySaver

        graph = build_graph(InMemorySaver())
        out = graph.invoke({"requirement": "add an export"}, {"configurable": {"thread_id": "t"}})
        out["__interrupt__"][0].value["question"]
        ```
    """
    builder = StateGraph(AgentState)
    builder.add_node("clarify", _clarify)
    builder.add_node("implement", _implement)
    builder.add_edge(START, "clarify")
    builder.add_edge("clarify", "implement")
    builder.add_conditional_edges("implement", _next_part, ["implement", END])
    return builder.compile(checkpointer=checkpointer)
