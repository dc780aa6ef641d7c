"""A graph that asks a person before it acts: its state lives in DynamoDB + S3.

Served by ``langgraph dev`` with ``langgraph.json`` next to this file; the
server compiles it with the checkpointer that file names, so the graph itself
is compiled without one.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class State(TypedDict, total=False):
    request: str
    plan: str
    approved: bool
    log: Annotated[list[str], operator.add]


def plan(state: State) -> dict[str, Any]:
    return {"plan": f"plan for {state['request']}", "log": ["planned"]}


def review(state: State) -> dict[str, Any]:
    # Stops the run; the state waits in DynamoDB until a client resumes the
    # thread with Command(resume=...), from any server instance, days later.
    answer = interrupt({"question": "approve this plan?", "plan": state["plan"]})
    return {"approved": answer == "yes", "log": [f"reviewed: {answer}"]}


def act(state: State) -> dict[str, Any]:
    return {"log": ["done" if state["approved"] else "cancelled"]}


builder = StateGraph(State)
builder.add_node("plan", plan)
builder.add_node("review", review)
builder.add_node("act", act)
builder.add_edge(START, "plan")
builder.add_edge("plan", "review")
builder.add_edge("review", "act")
builder.add_edge("act", END)
graph = builder.compile()
