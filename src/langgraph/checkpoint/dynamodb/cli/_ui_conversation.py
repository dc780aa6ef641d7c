"""HTML of the conversation view: message lists as their users saw them (``_ui_messages`` has the data).

Each message is a bubble with its role (human, ai, system, tool), its text,
an AI message's tool calls (name and arguments) linked to the tool results
that answered them (``tool_call_id``), and its raw JSON in a ``<details>``.
Interrupts sit where they stopped the conversation, with the answer that
resumed them. Every stored string goes through ``e`` (``_ui_pages``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from langgraph.checkpoint.dynamodb.cli._bounded import bounded_json, bounded_text
from langgraph.checkpoint.dynamodb.cli._ui_messages import call_text, text_of
from langgraph.checkpoint.dynamodb.cli._ui_pages import WHOLE_CHARS, e, href, layout, ns_label, sid

#: Messages a conversation shows, the newest (a page stays light whatever the thread's length).
SHOWN_MESSAGES: Final = 500


#: Characters of a message's text shown in its bubble (its raw JSON: ``WHOLE_CHARS``).
TEXT_CHARS: Final = 20_000


def _json(value: Any) -> str:
    """Indented JSON of a message or question, cut at ``WHOLE_CHARS`` before it is built."""
    return bounded_json(value, WHOLE_CHARS).text


def _calls_html(m: Mapping[str, Any], key: str) -> str:
    rows = []
    for c in m.get("calls") or []:
        result = c.get("result")
        answer = (
            f'<a class="result" href="#{e(key)}-{int(result)}">result ↓</a>'
            if result is not None
            else '<span class="dim">no result yet</span>'
        )
        rows.append(
            f'<li class="call" data-tool="{e(c["name"])}"><code>{e(call_text(c))}</code> {answer}</li>'
        )
    return '<ul class="calls">' + "".join(rows) + "</ul>" if rows else ""


def message_html(m: Mapping[str, Any], index: int, key: str, *, number: int | None = None) -> str:
    """One message as a bubble; ``key`` prefixes its anchor (``key-index``), ``number`` is shown (1-based)."""
    role = m["role"]
    answers = m.get("answers")
    who = f'<span class="role">{e(role)}</span>'
    if role == "tool":
        target = f' <a href="#{e(key)}-{int(answers["message"])}">↑ call</a>' if answers else ""
        who += " · " + e(m.get("name") or (answers or {}).get("call") or "?") + target
    elif m.get("name"):
        who += " · " + e(m["name"])
    text = bounded_text(text_of(m.get("content")), TEXT_CHARS).text
    body = f'<div class="text">{e(text)}</div>' if text.strip() else ""
    return (
        f'<li class="msg {e(role)}" id="{e(key)}-{index}" data-role="{e(role)}">'
        f'<div class="who"><span class="n">{number if number is not None else index + 1}</span> {who}</div>'
        f"{body}{_calls_html(m, key)}"
        f'<details class="raw"><summary>raw</summary><pre class="value">{e(_json(m["raw"]))}</pre></details>'
        "</li>"
    )


def event_html(ev: Mapping[str, Any]) -> str:
    """An interrupt group: each question the task asked, and its answer (or that it waits for one)."""
    parts = []
    for item in ev["items"]:
        question = item["question"]
        shown = question.get("question") if isinstance(question, Mapping) else None
        text = bounded_text(shown if isinstance(shown, str) else question, TEXT_CHARS).text
        answer = (
            f'<div class="answer">answered: <q>{e(_answer_text(item["answer"]))}</q></div>'
            if item["answered"]
            else '<div class="waiting">waiting for an answer</div>'
        )
        parts.append(
            f'<div class="question">{e(text)}</div>{answer}'
            f'<details class="raw"><summary>raw</summary><pre class="value">{e(_json(question))}</pre></details>'
        )
    status = "answered" if all(i["answered"] for i in ev["items"]) else "waiting"
    return (
        f'<li class="event interrupt {status}" data-task="{e(ev["task"])}">'
        f'<div class="who"><span class="role">interrupt</span> · {e(ev["task"])}</div>{"".join(parts)}</li>'
    )


def _answer_text(answer: Any) -> str:
    return bounded_text(answer, TEXT_CHARS, indent=None).text


def messages_html(
    msgs: Sequence[Mapping[str, Any]],
    key: str,
    events: Sequence[Mapping[str, Any]] = (),
    *,
    first: int = 0,
) -> str:
    """Messages (``first``: the index of ``msgs[0]`` in its list) with interrupts placed by their ``at``."""
    items = []
    pending = sorted(events, key=lambda ev: ev["at"])
    for i, m in enumerate(msgs):
        while pending and pending[0]["at"] <= first + i:
            items.append(event_html(pending.pop(0)))
        items.append(message_html(m, first + i, key))
    items.extend(event_html(ev) for ev in pending)
    return '<ol class="conversation">' + "".join(items) + "</ol>"


def conversation_section(conv: Mapping[str, Any], *, heading: str = "Conversation") -> str:
    """Each message channel's conversation (its last ``SHOWN_MESSAGES``); interrupts alone without messages."""
    parts = []
    for i, ch in enumerate(conv["channels"]):
        msgs = ch["messages"]
        first = max(0, len(msgs) - SHOWN_MESSAGES)
        calls = sum(len(m.get("calls") or []) for m in msgs)
        omitted = (
            f"; the first {first:,} are left out here (the state table and the diff have them)"
            if first
            else ""
        )
        parts.append(
            f'<div class="thread-view" data-channel="{e(ch["channel"])}"><h3>{e(ch["channel"])}</h3>'
            f'<p class="note">{len(msgs)} message(s), {calls} tool call(s), '
            f"{len(ch['events'])} interrupt(s){omitted}</p>"
            + messages_html(
                msgs[first:], f"c{i}", [ev for ev in ch["events"] if ev["at"] >= first], first=first
            )
            + "</div>"
        )
    if not parts and conv["interrupts"]:
        parts.append(
            '<p class="note">no message list in this state; its interrupts:</p><ol class="conversation">'
            + "".join(event_html(ev) for ev in conv["interrupts"])
            + "</ol>"
        )
    if not parts:
        return ""
    return f'<section class="conversation-box"><h2>{e(heading)}</h2>{"".join(parts)}</section>'


def conversation_page(thread_id: str, ns: str, read: Mapping[str, Any], conv: Mapping[str, Any]) -> str:
    """``/conversation``: the thread as its users saw it, at one checkpoint (default: the latest)."""
    tup = read["tuple"]
    cid = tup.config["configurable"]["checkpoint_id"]
    step = (tup.metadata or {}).get("step")
    chain = read["chain"]
    scope = (
        f"interrupts from its {len(chain)} checkpoint(s) back to the first"
        if read["complete"]
        else f"interrupts from its newest {len(chain)} checkpoints (older ones: open an older checkpoint's view)"
    )
    head = (
        f'<p class="note">at checkpoint <a href="{href("/checkpoint", thread=thread_id, ns=ns, id=cid)}">'
        f"{e(sid(cid))}</a> (step {e(step)}) in {e(ns_label(ns))}; {e(scope)}. "
        f'<a href="{href("/thread", id=thread_id, ns=ns)}">timeline</a></p>'
    )
    body = conversation_section(conv, heading="Messages") or (
        '<p class="empty">no message list and no interrupt in this state</p>'
    )
    return layout(
        f"Conversation {thread_id}",
        head + body,
        [(thread_id, href("/thread", id=thread_id, ns=ns)), ("conversation", None)],
    )
