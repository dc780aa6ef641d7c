"""Deterministic graphs for end-to-end tests (no LLM, no network)."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any

from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from typing_extensions import TypedDict

EXECUTIONS: Counter[str] = Counter()


class ReqState(TypedDict, total=False):
    request: str
    clarification: str
    plan: str
    result: str


def requirement_graph() -> StateGraph:
    """A PM node asks for clarification via interrupt(), then a developer finishes."""

    def pm(state: ReqState) -> dict[str, Any]:
        EXECUTIONS["pm"] += 1
        answer = interrupt({"question": f"What exactly should '{state['request']}' do?"})
        return {"clarification": answer}

    def planner(state: ReqState) -> dict[str, Any]:
        EXECUTIONS["planner"] += 1
        return {"plan": f"plan for {state['request']} ({state['clarification']})"}

    def developer(state: ReqState) -> dict[str, Any]:
        EXECUTIONS["developer"] += 1
        return {"result": f"built: {state['plan']}"}

    g = StateGraph(ReqState)
    g.add_node("pm", pm)
    g.add_node("planner", planner)
    g.add_node("developer", developer)
    g.add_edge(START, "pm")
    g.add_edge("pm", "planner")
    g.add_edge("planner", "developer")
    g.add_edge("developer", END)
    return g


class ParState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


FAIL = {"b": True}


def parallel_graph(*, barrier: bool = True) -> StateGraph:
    """Two parallel nodes; ``b`` fails while FAIL['b'] is set.

    ``barrier``: ``join`` waits for both through one edge (a
    ``NamedBarrierValue``); otherwise through one edge each (it still runs
    once, in the next superstep). With ``durability="async"`` only the
    latter is stored faithfully (an upstream LangGraph bug, see
    ``tests/reliability/test_concurrency.py``).
    """

    def a(state: ParState) -> dict[str, Any]:
        EXECUTIONS["a"] += 1
        return {"log": ["a"]}

    def b(state: ParState) -> dict[str, Any]:
        EXECUTIONS["b"] += 1
        if FAIL["b"]:
            raise RuntimeError("b failed")
        return {"log": ["b"]}

    def join(state: ParState) -> dict[str, Any]:
        EXECUTIONS["join"] += 1
        return {"log": ["join"]}

    g = StateGraph(ParState)
    g.add_node("a", a)
    g.add_node("b", b)
    g.add_node("join", join)
    g.add_edge(START, "a")
    g.add_edge(START, "b")
    if barrier:
        g.add_edge(["a", "b"], "join")
    else:
        g.add_edge("a", "join")
        g.add_edge("b", "join")
    g.add_edge("join", END)
    return g


class ChatState(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]
    turns: int


def _append(state: list[Any], writes: list[Any]) -> list[Any]:
    out = list(state)
    for w in writes:
        out.extend(w if isinstance(w, list) else [w])
    return out


def chat_graph(*, delta: bool = False, snapshot_frequency: int = 3, subgraph: bool = False) -> StateGraph:
    """A chat: each turn appends the user message and a deterministic reply.

    With ``delta`` the messages channel is a DeltaChannel (small snapshot
    frequency so chains cross several snapshots); with ``subgraph`` the
    reply comes from a compiled subgraph (a second namespace).
    """
    if delta:
        # Functional form: the annotation must be evaluated here, not as a string.
        state_t: Any = TypedDict(  # type: ignore[operator]
            "DState",
            {
                "messages": Annotated[
                    list[str], DeltaChannel(_append, snapshot_frequency=snapshot_frequency)
                ],
                "turns": int,
            },
            total=False,
        )
    else:
        state_t = ChatState

    def reply_text(state: Any) -> str:
        return f"assistant reply #{len(state.get('messages', []))}: " + "x" * 40

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [reply_text(state)], "turns": state.get("turns", 0) + 1}

    if not subgraph:
        g = StateGraph(state_t)
        g.add_node("assistant", reply)
        g.add_edge(START, "assistant")
        g.add_edge("assistant", END)
        return g

    # The reply is drafted by a subgraph (its own namespace) that only
    # outputs ``pending``; the parent appends it, so nothing is duplicated.
    class SubState(TypedDict, total=False):
        messages: list[str]
        pending: str

    class SubOut(TypedDict, total=False):
        pending: str

    sub = StateGraph(SubState, output_schema=SubOut)
    sub.add_node("think", lambda st: {"pending": reply_text(st)})
    sub.add_edge(START, "think")
    sub.add_edge("think", END)

    parent_t: Any = TypedDict(  # type: ignore[operator]
        "ParentChat", {**state_t.__annotations__, "pending": str}, total=False
    )
    g = StateGraph(parent_t)
    g.add_node("assistant", sub.compile())
    g.add_node("commit", lambda st: {"messages": [st["pending"]], "turns": st.get("turns", 0) + 1})
    g.add_edge(START, "assistant")
    g.add_edge("assistant", "commit")
    g.add_edge("commit", END)
    return g
