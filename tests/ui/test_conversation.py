"""The conversation and diff views' data (``_ui_messages``) and pages over HTTP, on real LangGraph threads."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Interrupt

from langgraph.checkpoint.dynamodb.cli import _ui_messages as m
from langgraph.checkpoint.dynamodb.cli._tasks import INTERRUPT_CHANNEL, NULL_TASK_ID, RESUME_CHANNEL
from langgraph.checkpoint.dynamodb.cli._ui_reads import conversation_read, newer_before
from tests.ui import agent_threads as at
from tests.ui.conftest import Store, opener

# ---------------------------------------------------------------- the data


def test_langchain_and_openai_style_messages() -> None:
    ai = m.message(AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}], id="a"))
    assert (
        ai is not None
        and ai["role"] == "ai"
        and ai["tool_calls"] == [{"name": "f", "args": {"x": 1}, "id": "c1"}]
    )
    tool = m.message(ToolMessage("42", tool_call_id="c1", name="f"))
    assert tool is not None and (tool["role"], tool["tool_call_id"]) == ("tool", "c1")
    openai = m.message(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c2", "function": {"name": "g", "arguments": '{"y": 2}'}}],
        }
    )
    assert (
        openai is not None
        and openai["role"] == "ai"
        and openai["tool_calls"][0] == {"name": "g", "args": {"y": 2}, "id": "c2"}
    )
    assert (
        m.message({"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url"}]})[
            "role"
        ]
        == "human"
    )
    assert m.text_of([{"type": "text", "text": "hi"}, {"type": "image_url"}]) == "hi\n[image_url]"
    # Not messages: a list of strings, a dict without a role, one odd item in a list.
    assert m.messages(["a", "b"]) is None
    assert m.message({"content": "x"}) is None
    assert m.messages([HumanMessage("hi"), {"x": 1}]) is None
    assert m.messages([]) is None


def test_tool_results_are_matched_to_their_calls_by_id() -> None:
    msgs = m.messages(
        [
            HumanMessage("q"),
            AIMessage(
                "", tool_calls=[{"name": "a", "args": {}, "id": "1"}, {"name": "b", "args": {}, "id": "2"}]
            ),
            ToolMessage("B", tool_call_id="2", name="b"),  # answered out of order
            ToolMessage("A", tool_call_id="1", name="a"),
            ToolMessage("?", tool_call_id="nope", name="c"),
        ]
    )
    conv = m.conversation(msgs or [])
    assert [c["result"] for c in conv[1]["calls"]] == [3, 2]
    assert conv[2]["answers"] == {"message": 1, "call": "b"} and conv[3]["answers"] == {
        "message": 1,
        "call": "a",
    }
    assert "answers" not in conv[4]


def test_list_delta_appended_removed_and_replaced() -> None:
    a = [HumanMessage("1", id="1"), AIMessage("2", id="2")]
    grown = m.list_delta(a, [*a, HumanMessage("3", id="3")])
    assert (grown["kept"], len(grown["added"]), grown["removed"]) == (2, 1, [])
    assert m.delta_summary(grown) == "1 message appended"
    edited = m.list_delta(a, [a[0], AIMessage("2!", id="2")])  # same id, new content: changed
    assert m.delta_summary(edited) == "1 message removed, 1 added (from message 2)"
    assert m.delta_summary(m.list_delta(a, a[:1])) == "1 message removed"
    assert m.message_change(a, None) is not None  # a message list removed
    assert m.message_change(["x"], a) is None  # not both message lists: the plain diff
    assert m.message_change({"k": 1}, {"k": 2}) is None


def test_interrupts_and_their_answers() -> None:
    task, other = "t" * 8 + "-1", "u" * 8 + "-2"
    asked = Interrupt(value={"question": "ok?"}, id="i1")
    writes = [
        (NULL_TASK_ID, RESUME_CHANNEL, "yes"),
        (task, RESUME_CHANNEL, ["yes"]),
        (task, INTERRUPT_CHANNEL, [asked]),
        (other, INTERRUPT_CHANNEL, [Interrupt(value="and you?", id="i2")]),
    ]
    (mine, theirs) = m.interrupts(writes, {task: "approve"})
    assert mine["task"] == "approve" and mine["items"] == [
        {"question": {"question": "ok?"}, "answer": "yes", "answered": True}
    ]
    # The null task's answer is a plain value: it answered every task without one of its own.
    assert theirs["task"] == "task uuuuuuuu" and theirs["items"][0]["answered"] is True
    # Answers keyed by interrupt id go to their interrupt only.
    by_id = [
        (NULL_TASK_ID, RESUME_CHANNEL, {"i1": "yes"}),
        (task, INTERRUPT_CHANNEL, [asked]),
        (other, INTERRUPT_CHANNEL, [Interrupt(value="?", id="i2")]),
    ]
    first, second = m.interrupts(by_id, {})
    assert first["items"][0] == {"question": {"question": "ok?"}, "answer": "yes", "answered": True}
    assert second["items"][0]["answered"] is False
    # Nothing answered yet.
    assert m.interrupts([(task, INTERRUPT_CHANNEL, [asked])], {})[0]["items"][0]["answered"] is False


# ----------------------------------------------------------- reads and pages


def _get(inspector: str, path: str, **params: Any) -> tuple[int, str]:
    with opener().open(f"{inspector}{path}?{urllib.parse.urlencode(params)}") as resp:
        return resp.status, resp.read().decode()


def _ids(store: Store, thread: str) -> list[str]:
    return [
        t.config["configurable"]["checkpoint_id"]
        for t in store.saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    ]


def test_conversation_read_follows_parents_within_its_window(ui_store: Store) -> None:
    tid = ui_store.threads["chat"]
    ids = _ids(ui_store, tid)
    whole = conversation_read(ui_store.saver, tid, "", None, window=50)
    assert whole["complete"] and [t.config["configurable"]["checkpoint_id"] for t in whole["chain"]] == ids
    part = conversation_read(ui_store.saver, tid, "", ids[2], window=4)
    assert (
        not part["complete"]
        and [t.config["configurable"]["checkpoint_id"] for t in part["chain"]] == ids[2:6]
    )
    conv = m.thread_conversation(whole["chain"])
    (channel,) = conv["channels"]
    assert channel["channel"] == "messages" and len(channel["messages"]) == 12
    (event,) = channel["events"]
    assert event["task"] == "approve" and event["at"] == 11  # after the 11 messages it stopped at
    assert event["items"] == [
        {
            "question": {"question": at.REFUND_QUESTION, "amount": 4.99},
            "answer": at.REFUND_ANSWER,
            "answered": True,
        }
    ]


def test_newer_link_is_the_page_before(ui_store: Store) -> None:
    """For every page start, ``newer_before`` names the ``before=`` whose page ends right above it."""
    tid = ui_store.threads["chat"]
    ids = _ids(ui_store, tid)  # newest first
    for limit in (1, 3, 5):
        for start in range(1, len(ids)):
            got = newer_before(ui_store.saver, tid, "", ids[start], limit)
            want = ids[start - limit - 1] if start - limit - 1 >= 0 else None
            assert got == want, (limit, start)


def test_pages_of_a_thread_without_messages(inspector: str, ui_store: Store) -> None:
    """A state without a message list: no conversation link; the view lists the interrupts alone."""
    tid = ui_store.threads["waiting"]
    _, page = _get(inspector, "/thread", id=tid)
    assert "conversation-link" not in page
    status, page = _get(inspector, "/conversation", thread=tid)
    assert status == 200 and "no message list in this state" in page
    assert "What exactly should &#x27;export &lt;i&gt;users&lt;/i&gt;&#x27; do?" in page
    assert "waiting for an answer" in page


def test_page_one_of_a_long_fan_out_renders_one_badge(inspector: str, ui_store: Store) -> None:
    _, page = _get(inspector, "/thread", id=ui_store.threads["fanout"])
    assert page.count('class="task done" data-count="200"') == 1
    assert len(re.findall(r"<span class=\"task ", page)) == 3  # __start__, work x200, collect: one badge each
    assert 'class="mark ' not in page and "prune (keep_last" not in page


def test_diff_page_defaults_to_the_parent_and_reports_bad_ids(inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["chat"]
    ids = _ids(ui_store, tid)
    _, page = _get(inspector, "/diff", thread=tid)
    assert f'value="{ids[1]}"' in page and f'value="{ids[0]}"' in page and "1 message appended" in page
    # A mistyped A: said on the page, the form kept to fix it; an unknown B: 404.
    status, page = _get(inspector, "/diff", thread=tid, a="zzz-not-there", b=ids[0])
    assert status == 200 and 'class="error"' in page and "zzz-not-there" in page
    with pytest.raises(urllib.error.HTTPError) as err:
        _get(inspector, "/diff", thread=tid, a=ids[0], b="zzz-not-there")
    assert err.value.code == 404


def test_a_long_conversation_shows_its_newest_messages() -> None:
    from langgraph.checkpoint.dynamodb.cli._ui_conversation import SHOWN_MESSAGES, conversation_section

    msgs = m.conversation(
        m.messages([HumanMessage(f"message {i}", id=str(i)) for i in range(SHOWN_MESSAGES + 100)]) or []
    )
    html = conversation_section(
        {"channels": [{"channel": "messages", "messages": msgs, "events": []}], "interrupts": []}
    )
    assert html.count('<li class="msg human"') == SHOWN_MESSAGES
    assert 'id="c0-100"' in html and 'id="c0-99"' not in html and "the first 100 are left out" in html
    assert '<span class="n">101</span>' in html  # numbered by place in the list


def test_a_mapping_diff_names_its_keys() -> None:
    from langgraph.checkpoint.dynamodb.cli._ui_diff import change_row

    row = change_row(
        {
            "channel": "spec",
            "change": "changed",
            "a": {"x": 1, "y": 2, "w": 0},
            "b": {"x": 1, "y": 3, "z": 0},
        },
        0,
    )
    assert '<div class="summary">added: z; removed: w; changed: y</div>' in row


def test_fifty_interrupted_sends_are_one_entry_everywhere(inspector: str, ui_store: Store) -> None:
    tid = ui_store.threads["fanout_waiting"]
    _, page = _get(inspector, "/", prefix=tid)
    assert "waiting: review \u00d750</span>" in page
    _, page = _get(inspector, "/thread", id=tid)
    assert page.count('class="task interrupted" data-count="50"') == 1
    _, page = _get(inspector, "/conversation", thread=tid)
    assert page.count('<li class="event interrupt waiting" data-task="review">') == 50
    assert "approve item 0?" in page and "approve item 49?" in page
