"""Chat messages in checkpoint state, as data: what the inspector's conversation view and ``diff`` show.

Pure functions over decoded values, no I/O and no langchain import: a value
counts as a message when its JSON rendering (:func:`_render.jsonable`, which
is ``model_dump`` for LangChain messages) has a role (``type`` as LangChain
writes it, or ``role`` as OpenAI-style dicts do) and a ``content``.

Example:
    >>> a = [{"type": "human", "content": "hi", "id": "1"}]
    >>> d = list_delta(a, a + [{"type": "ai", "content": "hello", "id": "2"}])
    >>> d["kept"], [m["role"] for m in d["added"]], d["removed"]
    (1, ['ai'], [])
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from langgraph.checkpoint.dynamodb.cli._bounded import bounded_json
from langgraph.checkpoint.dynamodb.cli._render import jsonable
from langgraph.checkpoint.dynamodb.cli._tasks import (
    INTERRUPT_CHANNEL,
    NULL_TASK_ID,
    RESUME_CHANNEL,
    is_internal_channel,
    next_tasks,
)

#: Characters of a non-text content or a tool call's arguments shown (``_bounded``: cut as it is rendered).
TEXT_CHARS: Final = 20_000
#: A tool call's arguments shown by name (more are counted).
CALL_ARGS: Final = 50

#: LangChain's message types and OpenAI-style roles, as the view names them.
ROLES: Final = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "remove": "remove",
}


def message(value: Any) -> dict[str, Any] | None:
    """A message as ``{"role", "content", "name", "id", "tool_calls", "tool_call_id", "raw"}``, or ``None``.

    ``raw`` is the JSON rendering the rest was read from. Chunk types
    (``AIMessageChunk``: ``type`` ``AIMessageChunk``) count as their role.
    """
    raw = jsonable(value)
    if not isinstance(raw, Mapping) or "content" not in raw:
        return None
    kind = raw.get("type") if isinstance(raw.get("type"), str) else raw.get("role")
    if not isinstance(kind, str):
        return None
    role = ROLES.get(kind.lower().removesuffix("messagechunk").removesuffix("message") or kind.lower())
    if role is None:
        return None
    calls = raw.get("tool_calls") or []
    return {
        "role": role,
        "content": raw.get("content"),
        "name": raw.get("name") if isinstance(raw.get("name"), str) else None,
        "id": raw.get("id") if isinstance(raw.get("id"), str) else None,
        "tool_calls": [_call(c) for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else [],
        "tool_call_id": raw.get("tool_call_id") if isinstance(raw.get("tool_call_id"), str) else None,
        "raw": raw,
    }


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call, LangChain's (``name``, ``args``) or OpenAI's (``function.name``, ``function.arguments``)."""
    raw_fn = call.get("function")
    fn: Mapping[str, Any] = raw_fn if isinstance(raw_fn, Mapping) else {}
    args = call.get("args", fn.get("arguments"))
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    return {"name": str(call.get("name") or fn.get("name") or "?"), "args": args, "id": call.get("id")}


def messages(value: Any) -> list[dict[str, Any]] | None:
    """A non-empty list whose every item is a message, as :func:`message` dicts; else ``None``."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    out = []
    for item in value:
        m = message(item)
        if m is None:
            return None
        out.append(m)
    return out


def text_of(content: Any) -> str:
    """A message's content as text: a string as is; content blocks' text joined, other blocks named."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, Mapping):
                parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return bounded_json(content, TEXT_CHARS, indent=None).text


def call_text(call: Mapping[str, Any]) -> str:
    """``name(a=1, b="x")``: a tool call on one line."""
    args = call.get("args")
    if isinstance(args, Mapping):
        # Each argument within its share, the arguments within TEXT_CHARS: a call is one line.
        shown = list(itertools.islice(args.items(), CALL_ARGS))
        inner = ", ".join(
            f"{k}={bounded_json(v, TEXT_CHARS // CALL_ARGS, indent=None).text}" for k, v in shown
        )
        if len(args) > len(shown):
            inner += f", … {len(args) - len(shown):,} more"
    else:
        inner = "" if args in (None, "") else bounded_json(args, TEXT_CHARS, indent=None).text
    return f"{call.get('name')}({inner})"


def preview(m: Mapping[str, Any]) -> str:
    """One line for a message: its text, or the tools it calls, or what a tool returned."""
    text = " ".join(text_of(m.get("content")).split())
    if m.get("tool_calls"):
        calls = "; ".join(call_text(c) for c in m["tool_calls"])
        text = f"{text} [calls {calls}]" if text else f"calls {calls}"
    if m.get("role") == "tool" and m.get("name"):
        text = f"{m['name']} → {text}"
    return text


def _same(x: Mapping[str, Any], y: Mapping[str, Any]) -> bool:
    if x.get("id") and y.get("id"):
        return bool(x["id"] == y["id"] and x["raw"] == y["raw"])
    return bool(x["raw"] == y["raw"])


def list_delta(a: Sequence[Any] | None, b: Sequence[Any] | None) -> dict[str, Any]:
    """How message list ``b`` differs from ``a``: the common start kept, then what was removed and added.

    ``a`` and ``b`` are raw values (messages or their JSON); ``None`` is an
    empty list. A list that only grew has ``removed == []``: its ``added``
    are the appended messages.
    """
    am = messages(a) or [] if a else []
    bm = messages(b) or [] if b else []
    kept = 0
    while kept < min(len(am), len(bm)) and _same(am[kept], bm[kept]):
        kept += 1
    return {"kept": kept, "a_len": len(am), "b_len": len(bm), "removed": am[kept:], "added": bm[kept:]}


def delta_summary(d: Mapping[str, Any]) -> str:
    """``2 messages appended``, ``1 message removed, 3 added``, ``no message changed``."""

    def n(k: int, word: str) -> str:
        return f"{k} message{'s' if k != 1 else ''} {word}"

    added, removed = len(d["added"]), len(d["removed"])
    if added and not removed:
        return n(added, "appended")
    if removed and not added:
        return n(removed, "removed")
    if removed:
        return f"{n(removed, 'removed')}, {added} added (from message {d['kept'] + 1})"
    return "no message changed"


def message_change(a: Any, b: Any) -> dict[str, Any] | None:
    """:func:`list_delta` of two channel values when at least one is a message list and neither is another value."""
    am, bm = messages(a), messages(b)
    if am is None and bm is None:
        return None
    if (am is None and a not in (None, [], ())) or (bm is None and b not in (None, [], ())):
        return None
    return list_delta(a, b)


def conversation(msgs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages in order, each AI tool call with the tool result that answered it (by ``tool_call_id``).

    Returns the messages (copies) with ``calls``: for an AI message, its tool
    calls, each with ``result`` (the index of the tool message answering it,
    or ``None`` while none has); for a tool message, ``answers``: the index
    of the AI message whose call it answers and the call's name.
    """
    out = [dict(m) for m in msgs]
    asked: dict[str, tuple[int, int]] = {}
    for i, m in enumerate(out):
        m["calls"] = [dict(c, result=None) for c in m.get("tool_calls") or []]
        for j, c in enumerate(m["calls"]):
            if isinstance(c.get("id"), str):
                asked[c["id"]] = (i, j)
        if m["role"] == "tool" and m.get("tool_call_id") in asked:
            ai, j = asked[m["tool_call_id"]]
            out[ai]["calls"][j]["result"] = i
            m["answers"] = {"message": ai, "call": out[ai]["calls"][j]["name"]}
    return out


def interrupts(pending_writes: Sequence[Sequence[Any]], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """A checkpoint's interrupts, per task, with the answers that resumed them.

    Interrupts are the ``__interrupt__`` writes (``Interrupt`` objects: their
    ``value``); a task's answers are its ``__resume__`` write (one per
    interrupt, in order). ``Command(resume=...)`` leaves its value on the
    null task first: the answer of a task that holds none of its own
    (a mapping of interrupt ids to answers is matched by id).

    Returns:
        ``[{"task", "task_id", "items": [{"question", "answer", "answered"}]}]``
        (``task`` is the node name, from ``names``).
    """
    asked: dict[str, list[Any]] = {}
    answers: dict[str, list[Any]] = {}
    command: list[Any] = []
    for tid, channel, value in pending_writes:
        if channel == INTERRUPT_CHANNEL:
            asked.setdefault(tid, []).extend(value if isinstance(value, (list, tuple)) else [value])
        elif channel == RESUME_CHANNEL and tid == NULL_TASK_ID:
            command.append(value)
        elif channel == RESUME_CHANNEL:
            answers[tid] = list(value) if isinstance(value, (list, tuple)) else [value]
    out = []
    for tid, items in asked.items():
        mine = answers.get(tid, [])
        rows = []
        for i, item in enumerate(items):
            iid = getattr(item, "id", None)
            answered, answer = i < len(mine), mine[i] if i < len(mine) else None
            if not answered and command and i == 0:
                by_id = command[-1] if isinstance(command[-1], Mapping) else None
                answered = by_id is None or iid in by_id
                answer = command[-1] if by_id is None else by_id.get(iid)
            rows.append(
                {
                    "question": jsonable(getattr(item, "value", item)),
                    "answer": jsonable(answer),
                    "answered": answered,
                }
            )
        out.append({"task": names.get(tid, f"task {tid[:8]}"), "task_id": tid, "items": rows})
    return out


def message_channels(values: Mapping[str, Any], *, quick: bool = False) -> list[str]:
    """The state channels (not LangGraph's control channels) whose value is a message list, sorted.

    ``quick`` looks at a list's first and last items only (for a link to the view, not the view).
    """

    def found(v: Any) -> bool:
        if quick and isinstance(v, (list, tuple)) and len(v) > 2:
            v = [v[0], v[-1]]
        return messages(v) is not None

    return sorted(c for c, v in values.items() if not is_internal_channel(c) and found(v))


def thread_conversation(chain: Sequence[Any]) -> dict[str, Any]:
    """The conversation of each message channel of ``chain[0]``, with the interrupts along ``chain``.

    ``chain`` is a checkpoint tuple and its ancestors, newest first. An
    interrupt raised at a checkpoint (its pending writes) is placed after the
    messages that checkpoint held: where it stopped the conversation.

    Returns:
        ``{"channels": [{"channel", "messages": conversation(...), "events": [{"at", "task", "task_id",
        "items"}]}], "interrupts": [every interrupt group, oldest first]}``.
    """
    values = chain[0].checkpoint.get("channel_values", {})
    events = []
    for t in reversed(chain):
        md = t.metadata or {}
        tasks = next_tasks(
            t.checkpoint,
            t.pending_writes or [],
            step=md.get("step"),
            checkpoint_ns=t.config["configurable"].get("checkpoint_ns", ""),
        )
        found = interrupts(t.pending_writes or [], {x["id"]: x["name"] for x in tasks if x["id"]})
        if found:
            events.append((t.checkpoint.get("channel_values", {}), found))
    out = []
    for channel in message_channels(values):
        placed = [
            {"at": len(messages(held.get(channel)) or []), **group}
            for held, found in events
            for group in found
        ]
        out.append(
            {"channel": channel, "messages": conversation(messages(values[channel]) or []), "events": placed}
        )
    return {"channels": out, "interrupts": [group for _, found in events for group in found]}
