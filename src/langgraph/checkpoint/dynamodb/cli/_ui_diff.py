"""HTML of a diff between two checkpoints (``diff_checkpoints``): on a checkpoint's page and at ``/diff``.

A channel is ``added``, ``removed``, ``changed`` or ``rewritten``; a message
list that changed says how (``2 messages appended``) and shows those
messages as the conversation view does, a mapping names the keys added,
removed and changed; the whole values stay one click away (``<details>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from langgraph.checkpoint.dynamodb.cli._bounded import bounded_text
from langgraph.checkpoint.dynamodb.cli._ui_conversation import messages_html
from langgraph.checkpoint.dynamodb.cli._ui_messages import conversation, delta_summary, message_change
from langgraph.checkpoint.dynamodb.cli._ui_pages import (
    WHOLE_CHARS,
    e,
    href,
    layout,
    ns_label,
    short_text,
    sid,
)

#: Messages one side of a diff renders (more: counted, and in the whole value).
DIFF_MESSAGES: Final = 100


def dict_delta(a: Any, b: Any) -> dict[str, list[str]] | None:
    """Keys added, removed and changed between two mappings (``None`` unless both are mappings)."""
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return None
    return {
        "added": sorted(str(k) for k in b if k not in a),
        "removed": sorted(str(k) for k in a if k not in b),
        "changed": sorted(str(k) for k in a if k in b and a[k] != b[k]),
    }


def _whole(value: Any, label: str) -> str:
    if value is None:
        return ""
    # Cut while it is rendered (``_bounded``), never after: indented JSON can be
    # thousands of times the value's stored size.
    text = bounded_text(value, WHOLE_CHARS).text
    return f'<details class="raw"><summary>{e(label)}</summary><pre class="value">{e(text)}</pre></details>'


def _side(msgs: list[dict[str, Any]], key: str, first: int, total: int, word: str) -> str:
    shown = msgs[:DIFF_MESSAGES]
    more = len(msgs) - len(shown)
    return (
        f'<div class="count">{total} message(s){e(word)}</div>'
        + (messages_html(conversation(shown), key, first=first) if shown else "")
        + (f'<p class="note">… and {more} more (in the whole value)</p>' if more > 0 else "")
    )


def change_row(c: Mapping[str, Any], i: int) -> str:
    """One channel's row: what changed, readably, then the whole values on request."""
    a, b = c["a"], c["b"]
    summary = ""
    delta = message_change(a, b)
    if delta is not None:
        summary = delta_summary(delta)
        removed = f", {len(delta['removed'])} removed" if delta["removed"] else ""
        cell_a = _side(delta["removed"], f"d{i}a", delta["kept"], delta["a_len"], removed)
        cell_b = _side(
            delta["added"], f"d{i}b", delta["kept"], delta["b_len"], f", {len(delta['added'])} new"
        )
    else:
        keys = dict_delta(a, b)
        if keys is not None:
            summary = "; ".join(f"{k}: {', '.join(v)}" for k, v in keys.items() if v) or "no key changed"
        cell_a = f'<pre class="value">{e(short_text(a, 400))}</pre>' if a is not None else "-"
        cell_b = f'<pre class="value">{e(short_text(b, 400))}</pre>' if b is not None else "-"
    return (
        f'<tr class="{e(c["change"])}" data-channel="{e(c["channel"])}"><td class="chan">{e(c["channel"])}</td>'
        f"<td>{e(c['change'])}"
        + (f'<div class="summary">{e(summary)}</div>' if summary else "")
        + f"</td><td>{cell_a}{_whole(a, 'whole value A')}</td><td>{cell_b}{_whole(b, 'whole value B')}</td></tr>"
    )


def _table(diff: Mapping[str, Any]) -> str:
    rows = "".join(change_row(c, i) for i, c in enumerate(diff["changes"]))
    if not rows:
        return '<p class="empty">no channel differences</p>'
    return (
        '<table class="diff"><thead><tr><th>channel</th><th>change</th><th>A</th><th>B</th></tr></thead><tbody>'
        + rows
        + "</tbody></table>"
    )


def _sides(thread_id: str, ns: str, diff: Mapping[str, Any]) -> str:
    a, b = diff["a"], diff["b"]

    def link(side: Mapping[str, Any]) -> str:
        cid = side["checkpoint_id"]
        return f'<a href="{href("/checkpoint", thread=thread_id, ns=ns, id=cid)}">{e(sid(cid))}</a> (step {e(side["step"])})'

    swap = href("/diff", thread=thread_id, ns=ns, a=b["checkpoint_id"], b=a["checkpoint_id"])
    return (
        f'<p class="note">A = {link(a)}, B = {link(b)} · <a class="swap" href="{swap}">swap A and B</a></p>'
    )


def diff_section(
    thread_id: str, ns: str, cid: str, diff: Mapping[str, Any] | None, error: str | None = None
) -> str:
    """The checkpoint page's diff: against its parent, or a checkpoint id typed in."""
    form = (
        '<form class="against" method="get" action="/checkpoint">'
        f'<input type="hidden" name="thread" value="{e(thread_id)}"><input type="hidden" name="ns" value="{e(ns)}">'
        f'<input type="hidden" name="id" value="{e(cid)}">'
        f'<label>compare with checkpoint <input name="against" size="40" value="{e(diff["a"]["checkpoint_id"] if diff else "")}"></label>'
        '<button type="submit">diff</button></form>'
    )
    if diff is None:
        why = (
            f'<p class="error">{e(error)}</p>'
            if error
            else '<p class="empty">no parent: choose a checkpoint</p>'
        )
        return f"<section><h2>Diff</h2>{form}{why}</section>"
    return f"<section><h2>Diff</h2>{form}{_sides(thread_id, ns, diff)}{_table(diff)}</section>"


def diff_page(
    thread_id: str, ns: str, diff: Mapping[str, Any] | None, *, a: str, b: str, error: str | None = None
) -> str:
    """``/diff?thread=&ns=&a=&b=``: any two checkpoints of a namespace, A before B."""
    form = (
        '<form class="pair" method="get" action="/diff">'
        f'<input type="hidden" name="thread" value="{e(thread_id)}"><input type="hidden" name="ns" value="{e(ns)}">'
        f'<label>A (checkpoint id) <input name="a" size="40" value="{e(a)}"></label>'
        f'<label>B (checkpoint id) <input name="b" size="40" value="{e(b)}"></label>'
        '<button type="submit">diff</button></form>'
    )
    body = form + (
        f'<p class="error">{e(error)}</p>'
        if error or diff is None
        else f'<p class="note">{e(ns_label(ns))}</p>{_sides(thread_id, ns, diff)}{_table(diff)}'
    )
    return layout(
        f"Diff {thread_id}", body, [(thread_id, href("/thread", id=thread_id, ns=ns)), ("diff", None)]
    )
