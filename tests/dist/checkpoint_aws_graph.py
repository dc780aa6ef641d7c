"""The graph both sides of the ``langgraph-checkpoint-aws`` migration test run, and how they report it.

Imported by ``checkpoint_aws_script.py`` in the reference saver's venv and by
``test_migrate_checkpoint_aws.py`` in the dev venv: LangGraph only, nothing
random, so the same calls give the same states on either saver.

A step of three ``Send`` tasks of which the second interrupts (its siblings'
writes stay pending), then a subgraph that asks again (its own namespace),
then a node that finishes.
"""

from __future__ import annotations

import base64
import hashlib
import operator
import random
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

#: Over the reference saver's 350 KB S3 offload threshold, and random, so
#: that gzip cannot bring it back under (about 600 KB, ~450 KB gzipped).
BIG_BYTES = 450_000


def big_blob() -> str:
    return base64.b64encode(random.Random(7).randbytes(BIG_BYTES)).decode("ascii")


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    parts: Annotated[list[int], operator.add]
    blob: str
    answer: str


def _prep(state: State) -> dict[str, Any]:
    return {"log": ["prep"]}


def _fan(state: State) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(3)]


def _work(arg: dict[str, int]) -> dict[str, Any]:
    if arg["i"] == 1:
        ok = interrupt({"part": 1})
        return {"parts": [1], "log": [f"work 1 {ok}"]}
    return {"parts": [arg["i"]], "log": [f"work {arg['i']}"]}


def _asker() -> Any:
    """A subgraph (a namespace of its own, ``ask:<task id>``) whose node asks with an interrupt."""

    class Ask(TypedDict, total=False):
        answer: str

    def question(state: Ask) -> dict[str, Any]:
        return {"answer": interrupt({"question": "color?"})}

    sub = StateGraph(Ask)
    sub.add_node("question", question)
    sub.add_edge(START, "question")
    sub.add_edge("question", END)
    return sub.compile()


def _finish(state: State) -> dict[str, Any]:
    parts = sorted(state.get("parts", []))
    return {
        "log": [f"answer {state['answer']}", f"done {state['answer']} blob={len(state.get('blob', ''))}"],
        "parts": [sum(parts)],
    }


def build(saver: Any) -> Any:
    g = StateGraph(State)
    g.add_node("prep", _prep)
    g.add_node("work", _work)
    g.add_node("ask", _asker())
    g.add_node("finish", _finish)
    g.add_edge(START, "prep")
    g.add_conditional_edges("prep", _fan, ["work"])
    g.add_edge("work", "ask")
    g.add_edge("ask", "finish")
    g.add_edge("finish", END)
    return g.compile(checkpointer=saver)


def cfg(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    conf = {"thread_id": thread}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def plain(value: Any) -> Any:
    """A value as JSON can carry it: long strings as their length and digest, interrupts as their value."""
    if isinstance(value, str) and len(value) > 1000:
        return {"len": len(value), "sha256": hashlib.sha256(value.encode()).hexdigest()}
    if type(value).__name__ == "Interrupt":  # its id derives from new checkpoint ids: its value only
        return {"interrupt": plain(value.value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def history(graph: Any, thread: str) -> list[dict[str, Any]]:
    """``get_state_history`` as both sides compare it (ids included: a migration keeps them)."""
    out = []
    for snap in graph.get_state_history(cfg(thread)):
        out.append(
            {
                "id": snap.config["configurable"]["checkpoint_id"],
                "parent": (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
                "values": plain(snap.values),
                "next": list(snap.next),
                "step": snap.metadata.get("step"),
                "source": snap.metadata.get("source"),
                "interrupts": [plain(i.value) for i in snap.interrupts],
                "tasks": [[t.name, plain(t.result)] for t in snap.tasks],
            }
        )
    return out


def pending(saver: Any, thread: str) -> dict[str, list[list[Any]]]:
    """Every checkpoint's pending writes, as a sorted list (the two savers order them differently)."""
    out = {}
    for t in saver.list(cfg(thread)):
        rows = [[w[0], w[1], plain(w[2])] for w in t.pending_writes or []]
        out[t.config["configurable"]["checkpoint_id"]] = sorted(rows, key=repr)
    return out


def write_threads(plain_saver: Any, gzip_saver: Any) -> dict[str, Any]:
    """The source threads: small, big (gzip + S3), and a fork; each ends at an interrupt."""
    g, gz = build(plain_saver), build(gzip_saver)
    g.invoke({"log": ["start"]}, cfg("small"), durability="sync")
    gz.invoke({"log": ["start"], "blob": big_blob()}, cfg("big"), durability="sync")
    g.invoke({"log": ["start"]}, cfg("fork"), durability="sync")
    g.invoke(Command(resume="ok"), cfg("fork"), durability="sync")  # on to the ask interrupt
    branch_a = g.get_state(cfg("fork")).config["configurable"]["checkpoint_id"]
    # A fork from the checkpoint before prep ran: update it as prep, run the new branch to its interrupt.
    before = next(s for s in g.get_state_history(cfg("fork")) if s.next == ("prep",))
    forked = g.update_state(before.config, {"log": ["forked"]}, as_node="prep")
    g.invoke(None, forked, durability="sync")
    return {"branch_a": branch_a}


def resume_all(graph: Any, branch_a: str) -> dict[str, Any]:
    """What the test compares after the migration: each thread resumed to its end, on one saver."""
    out: dict[str, Any] = {}
    for thread in ("small", "big", "fork"):
        first = graph.invoke(Command(resume="ok"), cfg(thread), durability="sync")
        last = graph.invoke(Command(resume="blue"), cfg(thread), durability="sync")
        out[thread] = {"first": plain(first), "last": plain(last)}
    # The fork's other branch, resumed from its interrupt by checkpoint id (time travel).
    out["branch_a"] = plain(graph.invoke(Command(resume="red"), cfg("fork", branch_a), durability="sync"))
    out["steps"] = {
        t: [[h["values"], h["next"], h["step"], h["source"]] for h in history(graph, t) if h["id"]]
        for t in ("small", "big")
    }
    return out
