"""``diff`` of message lists: what was appended (count, role, a preview), not two identical-looking previews.

The thread is a real LangGraph chat (``add_messages``, a tool-calling node,
``interrupt()`` answered with ``Command(resume=...)``) stored through the saver
in the moto server.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph import START, StateGraph

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli
from tests.ui import agent_threads


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def chat(moto_endpoint: str) -> Iterator[dict[str, Any]]:
    suffix = uuid.uuid4().hex[:10]
    names = {"table_name": f"ckpt-{suffix}", "bucket_name": f"ckpt-{suffix}"}
    with DynamoDBSaver(**names) as saver:
        saver.setup()
        thread = f"chat-{suffix}"
        agent_threads.run_chat(saver, thread)
        tuples = list(saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}))
        yield {
            "saver": saver,
            "thread": thread,
            "where": ["--table", names["table_name"], "--bucket", names["bucket_name"]],
            "ids": [t.config["configurable"]["checkpoint_id"] for t in tuples],  # newest first
            "lengths": [len(t.checkpoint["channel_values"].get("messages", [])) for t in tuples],
        }


def test_diff_of_a_tool_call_turn_lists_the_appended_messages(chat: dict[str, Any]) -> None:
    ids, lengths = chat["ids"], chat["lengths"]
    # From the checkpoint with the first question (2 messages) to the end of the first turn.
    a = ids[lengths.index(2)]
    b = ids[max(i for i, n in enumerate(lengths) if n == 6)]
    code, out, err = run(*chat["where"], "diff", chat["thread"], a, b, "--width", "40")
    assert code == 0, err
    assert "2 messages" in out and "6 messages: 4 messages appended" in out
    assert "messages: 4 messages appended" in out
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("+")]
    assert [line.split()[1:3] for line in lines] == [["3", "ai"], ["4", "tool"], ["5", "tool"], ["6", "ai"]]
    assert 'calls lookup_order(order_id="A-17"); track_parcel(carrier="DHL", code="JD0142")' in lines[0]
    assert "lookup_order → order A-17: shipped on 2026-11-28" in lines[1]
    assert "Your order: order A-17: shipped on 2026-11-28" in lines[3]
    assert not any(line.strip().startswith("-") for line in out.splitlines()[3:])  # nothing removed


def test_diff_json_carries_the_message_delta(chat: dict[str, Any]) -> None:
    ids, lengths = chat["ids"], chat["lengths"]
    code, out, err = run(*chat["where"], "diff", chat["thread"], ids[1], ids[0], "--json")
    assert code == 0, err
    d = json.loads(out)
    (change,) = [c for c in d["changes"] if c["channel"] == "messages"]
    assert change["change"] == "changed"  # the channel-level change stays what it was
    delta = change["messages"]
    assert delta["summary"] == "1 message appended"
    assert (delta["kept"], delta["a_len"], delta["b_len"]) == (lengths[1], lengths[1], lengths[0])
    (added,) = delta["added"]
    assert added["role"] == "ai" and added["id"] == "ai-refund" and added["index"] == lengths[0]
    assert added["preview"] == f"Refund issued (you said: {agent_threads.REFUND_ANSWER})."
    assert delta["removed"] == []


def test_diff_the_other_way_shows_removed_messages(chat: dict[str, Any]) -> None:
    ids, lengths = chat["ids"], chat["lengths"]
    code, out, err = run(*chat["where"], "diff", chat["thread"], ids[0], ids[lengths.index(2)])
    assert code == 0, err
    assert f"{lengths[0] - 2} messages removed" in out
    removed = [line.split() for line in out.splitlines() if line.strip().startswith("-")]
    assert removed[0][1:3] == ["3", "ai"] and removed[-1][1:3] == [str(lengths[0]), "ai"]


def test_diff_of_an_edited_history_says_removed_and_added(moto_endpoint: str) -> None:
    """A message replaced in the middle (``RemoveMessage`` then a new one): removed from there, then added."""
    suffix = uuid.uuid4().hex[:10]
    with DynamoDBSaver(table_name=f"ckpt-{suffix}", bucket_name=f"ckpt-{suffix}") as saver:
        saver.setup()
        g = StateGraph(agent_threads.ChatState)
        g.add_node("noop", lambda s: {})
        g.add_edge(START, "noop")
        graph = g.compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": "edit"}}
        graph.invoke(
            {"messages": [HumanMessage("hi", id="1"), AIMessage("helo", id="2"), HumanMessage("ok", id="3")]},
            cfg,
            durability="sync",
        )
        graph.update_state(cfg, {"messages": [RemoveMessage(id="2"), AIMessage("hello", id="2b")]})
        ids = [
            t.config["configurable"]["checkpoint_id"]
            for t in saver.list({"configurable": {**cfg["configurable"], "checkpoint_ns": ""}})
        ]
        where = ["--table", f"ckpt-{suffix}", "--bucket", f"ckpt-{suffix}"]
        code, out, err = run(*where, "diff", "edit", ids[1], ids[0])
        assert code == 0, err
        assert "2 messages removed, 2 added (from message 2)" in out
        signs = [
            (line.split()[0], line.split()[2], line.split()[-1])
            for line in out.splitlines()
            if line.startswith("  ")
        ]
        assert ("-", "ai", "helo") in signs and ("-", "human", "ok") in signs
        assert ("+", "human", "ok") in signs and ("+", "ai", "hello") in signs


def test_diff_of_other_lists_is_unchanged(chat: dict[str, Any]) -> None:
    """Not a message list: the plain previews, no message section."""
    suffix = uuid.uuid4().hex[:10]
    with DynamoDBSaver(table_name=f"ckpt-{suffix}", bucket_name=f"ckpt-{suffix}") as saver:
        saver.setup()
        agent_threads.run_fan_out(saver, "fan", n=3)
        ids = [
            t.config["configurable"]["checkpoint_id"]
            for t in saver.list({"configurable": {"thread_id": "fan", "checkpoint_ns": ""}})
        ]
        code, out, err = run(
            "--table", f"ckpt-{suffix}", "--bucket", f"ckpt-{suffix}", "diff", "fan", ids[-1], ids[0]
        )
        assert code == 0, err
        assert "done" in out and "[0, 1, 2]" in out and "appended" not in out
