"""Threads as users of the inspector have them: a tool-calling chat with an interrupt, a wide fan-out.

Real LangGraph graphs (``add_messages``, ``interrupt()`` then
``Command(resume=...)``, ``Send``) run through the saver: what the inspector
shows is what LangGraph stored, not a hand-made fixture.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

SYSTEM = "You are the support agent of Example Shop."
QUESTION = "Where is my order A-17? It was a gift."
QUESTION_2 = "Thanks. Can you refund the shipping?"
REFUND_QUESTION = "Refund $4.99 shipping on order A-17?"
REFUND_ANSWER = "yes, refund it"
FAN_OUT = 200


class ChatState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def _agent(state: ChatState) -> dict[str, Any]:
    """A deterministic stand-in for a model: call tools for a question, answer from their results."""
    last = state["messages"][-1]
    turn = sum(1 for m in state["messages"] if isinstance(m, HumanMessage))
    if isinstance(last, HumanMessage):
        calls = [
            {"name": "lookup_order", "args": {"order_id": "A-17"}, "id": f"call_order_{turn}"},
            {
                "name": "track_parcel",
                "args": {"carrier": "DHL", "code": "JD0142"},
                "id": f"call_track_{turn}",
            },
        ]
        return {"messages": [AIMessage(content="", tool_calls=calls, id=f"ai-{turn}-calls")]}
    results = [m.content for m in state["messages"] if isinstance(m, ToolMessage)][-2:]
    return {
        "messages": [
            AIMessage(content=f"Your order: {'; '.join(map(str, results))}.", id=f"ai-{turn}-answer")
        ]
    }


def _tools(state: ChatState) -> dict[str, Any]:
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    out = {
        "lookup_order": lambda a: f"order {a['order_id']}: shipped on 2026-11-28",
        "track_parcel": lambda a: f"{a['carrier']} {a['code']}: out for delivery",
    }
    return {
        "messages": [
            ToolMessage(content=out[c["name"]](c["args"]), tool_call_id=c["id"], name=c["name"])
            for c in last.tool_calls
        ]
    }


def _route(state: ChatState) -> str:
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return "tools"
    turn = sum(1 for m in state["messages"] if isinstance(m, HumanMessage))
    return "approve" if turn > 1 else END


def _approve(state: ChatState) -> dict[str, Any]:
    answer = interrupt({"question": REFUND_QUESTION, "amount": 4.99})
    return {"messages": [AIMessage(content=f"Refund issued (you said: {answer}).", id="ai-refund")]}


def chat_graph() -> StateGraph:
    g = StateGraph(ChatState)
    g.add_node("agent", _agent)
    g.add_node("tools", _tools)
    g.add_node("approve", _approve)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", _route, ["tools", "approve", END])
    g.add_edge("tools", "agent")
    g.add_edge("approve", END)
    return g


def run_chat(saver: Any, thread_id: str) -> None:
    """Two user turns with tool calls; the second waits on a refund approval, then is resumed."""
    graph = chat_graph().compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": thread_id}}
    graph.invoke(
        {"messages": [SystemMessage(content=SYSTEM, id="sys"), HumanMessage(content=QUESTION, id="h-1")]},
        cfg,
        durability="sync",
    )
    graph.invoke({"messages": [HumanMessage(content=QUESTION_2, id="h-2")]}, cfg, durability="sync")
    graph.invoke(Command(resume=REFUND_ANSWER), cfg, durability="sync")


def run_waiting_chat(saver: Any, thread_id: str) -> None:
    """As ``run_chat``, left waiting on the refund approval."""
    graph = chat_graph().compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": thread_id}}
    graph.invoke(
        {"messages": [SystemMessage(content=SYSTEM, id="sys"), HumanMessage(content=QUESTION, id="h-1")]},
        cfg,
        durability="sync",
    )
    graph.invoke({"messages": [HumanMessage(content=QUESTION_2, id="h-2")]}, cfg, durability="sync")


class FanState(TypedDict, total=False):
    items: int
    done: Annotated[list[int], operator.add]
    summary: str


def fan_graph() -> StateGraph:
    g = StateGraph(FanState)
    g.add_node("work", lambda arg: {"done": [arg["i"]]})
    g.add_node("collect", lambda s: {"summary": f"{len(s['done'])} parts"})
    g.add_conditional_edges(START, lambda s: [Send("work", {"i": i}) for i in range(s["items"])], ["work"])
    g.add_edge("work", "collect")
    g.add_edge("collect", END)
    return g


def run_fan_out(saver: Any, thread_id: str, n: int = FAN_OUT) -> None:
    fan_graph().compile(checkpointer=saver).invoke(
        {"items": n}, {"configurable": {"thread_id": thread_id}}, durability="sync"
    )


def run_long(saver: Any, thread_id: str, turns: int) -> None:
    """A thread of ``turns`` + 1 checkpoints per ... (one chat turn: input and reply)."""
    g = StateGraph(ChatState)
    g.add_node("echo", lambda s: {"messages": [AIMessage(content=f"echo {len(s['messages'])}")]})
    g.add_edge(START, "echo")
    g.add_edge("echo", END)
    graph = g.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": thread_id}}
    for i in range(turns):
        graph.invoke({"messages": [HumanMessage(content=f"message {i}")]}, cfg, durability="sync")


def run_hostile_chat(saver: Any, thread_id: str, script: str, img: str) -> None:
    """Messages, tool calls (name, arguments, ids) and an interrupt and its answer that carry HTML."""

    def ask(state: ChatState) -> dict[str, Any]:
        answer = interrupt({"question": img})
        return {"messages": [AIMessage(content=f"ok {answer}", id="ai-2")]}

    g = StateGraph(ChatState)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    graph = g.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": thread_id}}
    call = {"name": img, "args": {"q": script}, "id": f"call-{img}"}
    first = [
        HumanMessage(content=script, id="h-1", name=img),
        AIMessage(content=img, tool_calls=[call], id="ai-1"),
        ToolMessage(content=script, tool_call_id=call["id"], name=img, id="t-1"),
    ]
    graph.invoke({"messages": first}, cfg, durability="sync")
    graph.invoke(Command(resume=script), cfg, durability="sync")


def run_fan_out_waiting(saver: Any, thread_id: str, n: int) -> None:
    """A fan-out whose every ``Send`` asks for an approval: ``n`` interrupted tasks of one node."""

    def review(arg: dict[str, int]) -> dict[str, Any]:
        return {"done": [arg["i"]] if interrupt({"question": f"approve item {arg['i']}?"}) else []}

    g = StateGraph(FanState)
    g.add_node("review", review)
    g.add_conditional_edges(
        START, lambda s: [Send("review", {"i": i}) for i in range(s["items"])], ["review"]
    )
    g.add_edge("review", END)
    g.compile(checkpointer=saver).invoke(
        {"items": n}, {"configurable": {"thread_id": thread_id}}, durability="sync"
    )
