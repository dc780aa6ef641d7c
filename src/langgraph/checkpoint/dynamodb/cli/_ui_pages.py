"""HTML of the inspector's pages (``_ui``): plain functions from read results to strings.

Every stored string (thread ids, namespaces, channel names, values, node
names, errors) is untrusted input and goes through :func:`e`
(``html.escape``) or :func:`_url` (percent-encoding, then escaping) before it
reaches the page; nothing is ever put in a ``<script>`` or an inline handler.
The Content-Security-Policy (``default-src 'self'``) blocks inline scripts and
styles anyway, so styles and the one script come from ``/static/``.
"""

from __future__ import annotations

import html
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from langgraph.checkpoint.dynamodb.cli._bounded import bounded_text, short
from langgraph.checkpoint.dynamodb.cli._commands import type_label
from langgraph.checkpoint.dynamodb.cli._render import human_bytes, short_id
from langgraph.checkpoint.dynamodb.cli._tasks import (
    ERROR_CHANNEL,
    INTERRUPT_CHANNEL,
    is_internal_channel,
    subgraph_path,
)

#: Values longer than this (as text) are collapsed to a preview and loaded on demand.
COLLAPSE_AT: Final = 1500
PREVIEW: Final = 300
#: Characters of one value shown whole on a page (metadata, a diff's whole values, a raw message).
WHOLE_CHARS: Final = 20_000


def e(value: Any) -> str:
    """Escape anything for HTML text and quoted attributes."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def _url(path: str, **params: Any) -> str:
    """A same-origin URL with its query percent-encoded, escaped for an attribute."""
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return e(f"{path}?{query}" if query else path)


def _text(value: Any, max_chars: int = WHOLE_CHARS) -> str:
    """A value as indented text, at most ``max_chars`` of it (``_bounded``: cut before it is built)."""
    return bounded_text(value, max_chars).text


def _short(value: Any, width: int = 120) -> str:
    """One line of at most ``width`` characters (``_bounded.short``)."""
    return short(value, width)


def when_text(iso: str | None) -> str:
    """A checkpoint's time to the second, UTC (the stored ``ts`` has microseconds and an offset)."""
    return (iso or "-")[:19].replace("T", " ")


def _sid(cid: str) -> str:
    """A checkpoint id as shown: ``_render.short_id``, the form every command accepts back."""
    return short_id(cid)


def layout(title: str, body: str, crumbs: Sequence[tuple[str, str | None]] = ()) -> str:
    nav = " / ".join(
        f'<a href="{href}">{e(label)}</a>' if href else f"<span>{e(label)}</span>"
        for label, href in [("threads", "/"), *crumbs]
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)} · langgraph-dynamodb</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/static/ui.css"><script src="/static/ui.js" defer></script>'
        f'</head><body><header><nav class="crumbs">{nav}</nav>'
        '<span class="ro">read-only</span></header>'
        f"<main><h1>{e(title)}</h1>{body}</main></body></html>\n"
    )


def error_page(status: int, message: str) -> str:
    return layout(f"Error {int(status)}", f'<p class="error">{e(message)}</p>')


# ================================================================ threads


def _counted(names: Iterable[str]) -> str:
    """``a, b x3``: names in first-seen order, repeats counted (200 interrupted ``Send``s are one entry)."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(n if k == 1 else f"{n} \u00d7{k}" for n, k in counts.items())


def threads_page(
    listing: Mapping[str, Any], *, prefix: str, active: str, table: str, limit: int | None = None
) -> str:
    form = (
        '<form class="search" method="get" action="/">'
        f'<label>thread id prefix <input name="prefix" value="{e(prefix)}"></label>'
        f'<label>active since <input name="active" value="{e(active)}" placeholder="2h, 7d, 2026-11-01"></label>'
        '<button type="submit">search</button></form>'
    )
    rows = []
    for t in listing["threads"]:
        more = "" if t.get("complete", True) else "≥ "
        waiting = (
            '<span class="badge wait">waiting: ' + e(_counted(t["waiting_on"])) + "</span>"
            if t.get("waiting_on")
            else '<span class="dim">-</span>'
        )
        if t.get("error"):
            # One thread that cannot be read is shown as such; the page still renders.
            waiting = f'<span class="badge err" title="{e(t["error"])}">unreadable</span>'

        rows.append(
            "<tr>"
            f'<td class="tid"><a href="{_url("/thread", id=t["thread_id"])}">{e(t["thread_id"])}</a></td>'
            f"<td>{e(t.get('updated_at') or '-')}</td>"
            f'<td class="num">{more}{e(t.get("checkpoints", "-"))}</td>'
            f'<td class="num">{more}{e(human_bytes(t.get("bytes")))}</td>'
            f"<td>{e(t.get('expires_at') or '-')}</td>"
            f'<td class="num">{e(t.get("step") if t.get("step") is not None else "-")}</td>'
            f"<td>{waiting}</td></tr>"
        )
    table_html = (
        '<table class="threads"><thead><tr><th>thread</th><th>last activity</th><th>checkpoints</th>'
        "<th>size (DynamoDB)</th><th>expires</th><th>step</th><th>interrupt</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        if rows
        else '<p class="empty">no threads' + (" match" if prefix or active else "") + "</p>"
    )
    pager = ""
    if listing.get("next_page_token"):
        pager = f'<p class="pager"><a rel="next" href="{_url("/", page=listing["next_page_token"], prefix=prefix, active=active, limit=limit)}">next page →</a></p>'
    note = (
        f'<p class="note">table {e(table)}: {e(listing.get("source", ""))} ({e(listing.get("note", ""))})</p>'
    )
    return layout("Threads", form + note + table_html + pager)


# ================================================================= thread


def _ns_label(ns: str) -> str:
    return subgraph_path(ns) or "(root)"


# The helpers the other page modules (``_ui_conversation``, ``_ui_diff``) build with.
href = _url
sid = _sid
ns_label = _ns_label
short_text = _short


def namespace_tree(thread_id: str, namespaces: Sequence[str], current: str) -> str:
    """Namespaces nested under their parent's: each subgraph run names the task that ran it."""
    children: dict[str, list[str]] = {}
    for ns in namespaces:
        if ns:
            parent = ns.rsplit("|", 1)[0] if "|" in ns else ""
            children.setdefault(parent if parent in namespaces else "", []).append(ns)

    def item(ns: str) -> str:
        task = ns.rsplit("|", 1)[-1].split(":", 1)[-1] if ns else ""
        label = e(_ns_label(ns)) + (f' <span class="dim">task {e(task[:8])}</span>' if ns else "")
        link = (
            f'<strong class="current">{label}</strong>'
            if ns == current
            else f'<a href="{_url("/thread", id=thread_id, ns=ns)}">{label}</a>'
        )
        kids = children.get(ns, [])
        sub = "<ul>" + "".join(item(k) for k in kids) + "</ul>" if kids else ""
        return f'<li data-ns="{e(ns)}">{link}{sub}</li>'

    return '<ul class="namespaces">' + item("") + "</ul>"


def fork_tree(thread_id: str, ns: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """The page's checkpoints as a tree, oldest first: a chain stays at one level, a fork nests its branches.

    Nested lists rather than a drawing: they read without JavaScript,
    screen readers follow them, and a fork is visible as one checkpoint
    with two or more ``<li class="branch">``.
    """
    ids = {r["checkpoint_id"] for r in rows}
    by_id = {r["checkpoint_id"]: r for r in rows}
    children: dict[str, list[str]] = {}
    roots: list[str] = []
    for r in sorted(rows, key=lambda r: r["checkpoint_id"]):
        pid = r["parent_id"]
        if pid in ids:
            children.setdefault(pid, []).append(r["checkpoint_id"])
        else:
            roots.append(r["checkpoint_id"])

    def node(cid: str) -> str:
        r = by_id[cid]
        writes = ", ".join(r["writes"]) if r["writes"] else ""
        return (
            f'<a class="cp" href="{_url("/checkpoint", thread=thread_id, ns=ns, id=cid)}">{e(_sid(cid))}</a> '
            f'<span class="dim">step {e(r["step"])} {e(r["source"] or "")}</span>'
            + (f" {e(writes)}" if writes else "")
        )

    def chain(cid: str) -> str:
        out = []
        while True:
            kids = children.get(cid, [])
            fork = len(kids) > 1
            out.append(f'<li class="{"fork-point" if fork else "step"}" data-id="{e(cid)}">{node(cid)}')
            if fork:
                out.append(
                    '<ul class="branches">'
                    + "".join(f'<li class="branch"><ol class="chain">{chain(k)}</ol></li>' for k in kids)
                    + "</ul></li>"
                )
                return "".join(out)
            out.append("</li>")
            if not kids:
                return "".join(out)
            cid = kids[0]

    parts = []
    for root in roots:
        pid = by_id[root]["parent_id"]
        above = (
            f'<li class="off-page">parent <a href="{_url("/checkpoint", thread=thread_id, ns=ns, id=pid)}">'
            f"{e(_sid(pid))}</a> (older page)</li>"
            if pid
            else ""
        )
        parts.append(f'<ol class="chain">{above}{chain(root)}</ol>')
    return '<div class="fork-tree">' + "".join(parts) + "</div>"


def _tasks_html(tasks: Iterable[Mapping[str, Any]]) -> str:
    """One badge per (name, status), identical tasks counted: a step of 200 ``Send``s is one badge, x200."""
    counts: dict[tuple[str, str], int] = {}
    for t in tasks:
        key = (str(t["name"]), str(t["status"]))
        counts[key] = counts.get(key, 0) + 1
    return " ".join(
        f'<span class="task {e(status)}" data-count="{n}">{e(name)}'
        + (f' <b class="count">&times;{n}</b>' if n > 1 else "")
        + f" <small>{e(status)}</small></span>"
        for (name, status), n in counts.items()
    )


def _writes_html(r: Mapping[str, Any]) -> str:
    if r.get("parent_missing"):
        return f'<span class="dim">parent {e(r.get("parent_missing_reason") or "missing")}</span>'
    return (
        "<br>".join(
            f'<span class="node">{e(node)}</span>: {e(", ".join(chans) or "(control only)")}'
            for node, chans in r["writes"].items()
        )
        or '<span class="dim">-</span>'
    )


def _origin_html(thread_id: str, ns: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """A subgraph namespace: which task of which parent checkpoint ran it."""
    if not ns or not rows:
        return ""
    parent_ns = ns.rsplit("|", 1)[0] if "|" in ns else ""
    pcid = (rows[0].get("parents") or {}).get(parent_ns)
    if not pcid:
        return ""
    task = ns.rsplit("|", 1)[-1].split(":", 1)[-1]
    return (
        f'<p class="origin">subgraph run by task {e(task)} of checkpoint '
        f'<a href="{_url("/checkpoint", thread=thread_id, ns=parent_ns, id=pcid)}">{e(_sid(pcid))}</a>'
        f" in {e(_ns_label(parent_ns))}</p>"
    )


def _marks_html(
    thread_id: str, ns: str, marks: Mapping[str, Any] | None, *, keep_last: int, limit: int | None
) -> str:
    """Prune marks are off until asked for: a link turns them on, a form chooses ``keep_last``."""
    if marks is None:
        on = _url("/thread", id=thread_id, ns=ns, marks="1", limit=limit)
        return f'<p class="marks-toggle"><a href="{on}">show prune marks</a> (what a prune would keep)</p>'
    off = _url("/thread", id=thread_id, ns=ns, limit=limit)
    return (
        '<form class="keep" method="get" action="/thread">'
        f'<input type="hidden" name="id" value="{e(thread_id)}"><input type="hidden" name="ns" value="{e(ns)}">'
        '<input type="hidden" name="marks" value="1">'
        f'<label>prune marks for keep_last <input name="keep_last" type="number" min="1" value="{keep_last}"></label>'
        + (f'<input type="hidden" name="limit" value="{limit}">' if limit else "")
        + f'<button type="submit">show</button> <a class="marks-toggle" href="{off}">hide prune marks</a></form>'
    )


def _mark_cell(cid: str, marks: Mapping[str, Any]) -> str:
    if cid in marks["survivors"]:
        return '<span class="mark keep">keep</span>'
    if cid in marks["keep"]:
        return '<span class="mark keep delta">keep (delta)</span>'
    return '<span class="mark delete">delete</span>'


def _notes_html(r: Mapping[str, Any]) -> str:
    """A row's interrupts, the answers that resumed them, and its errors."""
    interrupts = "".join(
        f'<div class="interrupt">interrupt: {e(_short(v, 160))}</div>' for v in r["interrupts"]
    )
    resumes = "".join(
        f'<div class="resume">answered{" for " + e(x["task"]) if x["task"] else ""}: '
        f"{e(_short(x['answer'], 160))}</div>"
        for x in r["resumes"]
    )
    errors = "".join(
        f'<div class="err">error in task {e(x["task_id"][:8])}: {e(_short(x["error"], 200))}</div>'
        for x in r["errors"]
    )
    return interrupts + resumes + errors


def _timeline_row(
    thread_id: str, ns: str, r: Mapping[str, Any], i: int, marks: Mapping[str, Any] | None
) -> str:
    cid = r["checkpoint_id"]
    parent = (
        f'<a href="{_url("/checkpoint", thread=thread_id, ns=ns, id=r["parent_id"])}">{e(_sid(r["parent_id"]))}</a>'
        if r["parent_id"]
        else '<span class="dim">-</span>'
    )
    pick = (
        f'<td class="pick"><input type="radio" form="pick" name="a" value="{e(cid)}"{" checked" if i == 1 else ""}'
        f' aria-label="A"> <input type="radio" form="pick" name="b" value="{e(cid)}"{" checked" if i == 0 else ""}'
        ' aria-label="B"></td>'
    )
    return (
        f'<tr data-id="{e(cid)}">{pick}'
        f'<td class="cid"><a href="{_url("/checkpoint", thread=thread_id, ns=ns, id=cid)}">{e(_sid(cid))}</a></td>'
        f'<td class="num">{e(r["step"])}</td><td>{e(r["source"] or "")}</td>'
        f"<td>{e(when_text(r['created_at']))}</td><td>{parent}</td>"
        f"<td>{_writes_html(r)}</td><td>{_tasks_html(r['next'])}{_notes_html(r)}</td>"
        + (f"<td>{_mark_cell(cid, marks)}</td>" if marks is not None else "")
        + "</tr>"
    )


def _timeline_table(
    thread_id: str,
    ns: str,
    rows: Sequence[Mapping[str, Any]],
    marks: Mapping[str, Any] | None,
    keep_last: int,
) -> str:
    if not rows:
        return '<p class="empty">no checkpoints in this namespace</p>'
    pick = (
        '<form id="pick" class="pick" method="get" action="/diff">'
        f'<input type="hidden" name="thread" value="{e(thread_id)}"><input type="hidden" name="ns" value="{e(ns)}">'
        '<button type="submit">diff A → B</button>'
        '<span class="note">choose A and B in the first column: any two checkpoints</span></form>'
    )
    return (
        pick
        + '<table class="timeline"><thead><tr><th title="diff: A, B">A B</th><th>checkpoint</th><th>step</th>'
        "<th>source</th><th>created</th><th>parent</th><th>written by</th><th>next / interrupts / errors</th>"
        + (f"<th>prune (keep_last={keep_last})</th>" if marks is not None else "")
        + "</tr></thead><tbody>"
        + "".join(_timeline_row(thread_id, ns, r, i, marks) for i, r in enumerate(rows))
        + "</tbody></table>"
    )


def _pager_html(thread_id: str, ns: str, page: Mapping[str, Any], *, before: str | None, **keep: Any) -> str:
    """``⇤ newest``, ``← newer`` and ``older →``; ``keep`` holds the page's other parameters."""
    links = []
    if before:
        links.append(f'<a href="{_url("/thread", id=thread_id, ns=ns, **keep)}">⇤ newest</a>')
        newer = page.get("newer_before")
        links.append(
            f'<a rel="prev" href="{_url("/thread", id=thread_id, ns=ns, before=newer, **keep)}">← newer</a>'
        )
    if page.get("next_before"):
        links.append(
            f'<a rel="next" href="{_url("/thread", id=thread_id, ns=ns, before=page["next_before"], **keep)}">older →</a>'
        )
    return '<p class="pager">' + " ".join(links) + "</p>"


def thread_page(
    thread_id: str,
    ns: str,
    namespaces: Sequence[str],
    page: Mapping[str, Any],
    marks: Mapping[str, Any] | None,
    *,
    keep_last: int,
    before: str | None,
    limit: int | None = None,
) -> str:
    """A namespace's timeline (one page, newest first), its namespaces and the page's fork tree.

    ``marks`` (``prune_marks``) is ``None`` unless asked for: the prune column is left out then.
    """
    rows = page["rows"]
    head = f'<section class="nsbox"><h2>Namespaces</h2>{namespace_tree(thread_id, namespaces, ns)}</section>'
    conv = (
        f'<p class="views"><a class="conversation-link" href="{_url("/conversation", thread=thread_id, ns=ns)}">'
        f"view as a conversation</a> "
        f'<span class="dim">({e(", ".join(page["messages"]))}: messages, tool calls, interrupts)</span></p>'
        if page.get("messages")
        else ""
    )
    keep = {
        "marks": "1" if marks is not None else None,
        "keep_last": keep_last if marks is not None else None,
    }
    body = (
        head
        + _origin_html(thread_id, ns, rows)
        + f'<section><h2>Timeline: {e(_ns_label(ns))}</h2><p class="note">newest first, {len(rows)} on this page</p>'
        + conv
        + _marks_html(thread_id, ns, marks, keep_last=keep_last, limit=limit)
        + _timeline_table(thread_id, ns, rows, marks, keep_last)
        + _pager_html(thread_id, ns, page, before=before, limit=limit, **keep)
        + "</section>"
        + '<section><h2>Fork tree</h2><p class="note">this page\'s checkpoints, oldest first; a fork nests its branches</p>'
        + fork_tree(thread_id, ns, rows)
        + "</section>"
    )
    return layout(f"Thread {thread_id}", body, [(thread_id, None)])


# ============================================================= checkpoint


def _value_html(value: Any, load_url: str, key: str) -> str:
    # Rendered only up to the collapse point: a value's whole text can be
    # thousands of times its stored size, and GET /value loads it on demand.
    shown = bounded_text(value, COLLAPSE_AT + 1)
    if shown.complete and len(shown.text) <= COLLAPSE_AT:
        return f'<pre class="value">{e(shown.text)}</pre>'
    size = f"{len(value):,} characters" if isinstance(value, str) else "over 1,500 characters"
    return (
        f'<pre class="value collapsed" id="v-{e(key)}">{e(shown.text[:PREVIEW])}…</pre>'
        f'<button type="button" class="load" data-url="{load_url}" data-target="v-{e(key)}">'
        f"load whole value ({size})</button>"
        f' <a class="dim" href="{load_url}">raw</a>'
    )


def _where_html(loc: Mapping[str, Any] | None, thread_id: str, ns: str) -> str:
    if not loc:
        return '<span class="dim">-</span>'
    where = loc.get("where")
    if where == "held":
        holder = loc.get("holder", "")
        return (
            f'<span class="where held">held by <a href="{_url("/checkpoint", thread=thread_id, ns=ns, id=holder)}">'
            f"{e(_sid(holder))}</a></span>"
        )
    return f'<span class="where {e(where)}">{e(where)}</span>'


def checkpoint_page(
    thread_id: str,
    ns: str,
    tup: Any,
    info: Mapping[str, Any],
    *,
    locations: Mapping[str, Any],
    diff_html: str,
    conversation_html: str = "",
    show_all: bool,
    subgraphs: Sequence[str],
) -> str:
    """A checkpoint: facts, its conversation (message lists), state, diff (``_ui_diff``), pending writes, metadata."""
    cid = info["checkpoint_id"]
    values = tup.checkpoint.get("channel_values", {})
    parent = (
        f'<a href="{_url("/checkpoint", thread=thread_id, ns=ns, id=info["parent_id"])}">{e(info["parent_id"])}</a>'
        if info["parent_id"]
        else "-"
    )
    facts = [
        ("thread", f'<a href="{_url("/thread", id=thread_id, ns=ns)}">{e(thread_id)}</a>'),
        ("namespace", e(_ns_label(ns)) + (f' <span class="dim">{e(ns)}</span>' if ns else "")),
        ("checkpoint", e(cid)),
        ("step / source", f"{e(info['step'])} / {e(info['source'] or '')}"),
        ("created", e(info["created_at"] or "-")),
        ("parent", parent),
        ("written by", _writes_html(info)),
        ("next", _tasks_html(info["next"]) or '<span class="dim">-</span>'),
    ]
    for v in info["interrupts"]:
        facts.append(("interrupt", f'<span class="interrupt">{e(_short(v, 400))}</span>'))
    for sub in subgraphs:
        facts.append(
            (
                "subgraph run",
                f'<a href="{_url("/thread", id=thread_id, ns=sub)}">{e(_ns_label(sub))}</a> '
                f'<span class="dim">{e(sub)}</span>',
            )
        )
    facts_html = '<dl class="facts">' + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
    rows = []
    for i, name in enumerate(sorted(values)):
        if not show_all and is_internal_channel(name):
            continue
        loc = locations.get(name)
        url = _url("/value", thread=thread_id, ns=ns, id=cid, channel=name)
        size = human_bytes(loc.get("bytes")) if loc else "-"
        rows.append(
            f'<tr data-channel="{e(name)}"><td class="chan">{e(name)}</td><td>{e(type_label(values[name]))}</td>'
            f'<td>{_where_html(loc, thread_id, ns)}</td><td class="num">{e(size)}</td>'
            f"<td>{_value_html(values[name], url, str(i))}</td></tr>"
        )
    toggle = _url("/checkpoint", thread=thread_id, ns=ns, id=cid, all=None if show_all else "1")
    channels = (
        f'<section><h2>State</h2><p class="note">{len(rows)} channel(s); '
        f'<a href="{toggle}">{"hide" if show_all else "show"} control channels</a></p>'
        '<table class="channels"><thead><tr><th>channel</th><th>type</th><th>stored</th><th>size</th>'
        "<th>value</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></section>"
    )
    return layout(
        f"Checkpoint {_sid(cid)}",
        facts_html
        + conversation_html
        + channels
        + diff_html
        + _writes_section(tup, info["next"])
        + '<section><h2>Metadata</h2><pre class="value">'
        + e(_text(tup.metadata or {}))
        + "</pre></section>",
        [(thread_id, _url("/thread", id=thread_id, ns=ns)), (_sid(cid), None)],
    )


def _writes_section(tup: Any, tasks: Sequence[Mapping[str, Any]] = ()) -> str:
    """Pending writes grouped by task, in the order the saver returns them (``writes_sort_key``)."""
    names = {t["id"]: t["name"] for t in tasks if t.get("id")}
    groups: dict[str, list[tuple[str, Any]]] = {}
    for tid, ch, v in tup.pending_writes or []:
        groups.setdefault(tid, []).append((ch, v))
    if not groups:
        return '<section><h2>Pending writes</h2><p class="empty">none</p></section>'
    parts = []
    for tid, writes in groups.items():
        items = "".join(
            f'<tr class="{"err" if ch == ERROR_CHANNEL else "interrupt" if ch == INTERRUPT_CHANNEL else ""}">'
            f'<td class="num">{i}</td><td class="chan">{e(ch)}</td><td><pre class="value">{e(_short(v, 600))}</pre></td></tr>'
            for i, (ch, v) in enumerate(writes)
        )
        parts.append(
            f'<h3>{e(names.get(tid, "task"))} <code>{e(tid)}</code></h3><table class="writes"><thead><tr><th>#</th><th>channel</th>'
            f"<th>value</th></tr></thead><tbody>{items}</tbody></table>"
        )
    return "<section><h2>Pending writes</h2>" + "".join(parts) + "</section>"
