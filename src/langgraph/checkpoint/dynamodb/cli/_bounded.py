"""Bounded text of stored values: rendering stops once its budget is spent, it never builds the whole text first.

A stored value is untrusted, and its text can be far larger than its stored
bytes: a compressed list nested 48 deep of 900,000 zeros is ~1.5 KB in the
store and ~90 MB of indented JSON. The inspector's pages (``_ui_pages``,
``_ui_conversation``, ``_ui_diff``, ``GET /value``) and the message model
(``_ui_messages``) render values through :func:`bounded_json` and
:func:`bounded_text`, which walk the value and stop producing output at a
character budget (or a nesting depth), marking the cut: ``… 899,500 more
items``, ``… nested deeper than 20``, ``… 12,000 more characters``.

Each site has its own budget (a preview, a raw message, a whole value), and a
page as a whole has one too (:func:`page_budget`, :func:`bounded_page`): every
bounded rendering during a page charges it, so many channels, messages or
writes cannot add up to an unbounded page. Once a page's budget is spent,
values render as a short note saying so (load a value on demand, ``GET
/value``, to see it).

Example:
    >>> bounded_json([[0] * 5], 20).text
    '[\\n  [\\n    0,\\n    0,\\n    … 3 more items\\n  ]\\n]'
    >>> bounded_json({"a": [1, 2]}, 100, indent=None).text
    '{"a": [1, 2]}'
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as dt
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, Final, NamedTuple, TypeVar

#: Characters of rendered values one page may hold in all. HTML escaping makes
#: at most 6 bytes of a character (``"`` is ``&quot;``), so a page's values stay
#: under ~1.8 MB whatever the store holds; a page of ordinary states (previews
#: of 1,500 characters, whole diff values of 20,000) is far below it.
PAGE_CHARS: Final = 300_000
#: Nesting shown before a value is cut (``… nested deeper than 20``); states
#: people read are a few levels deep, a hostile one can be hundreds.
MAX_DEPTH: Final = 20

_PAGE: ContextVar[_Budget | None] = ContextVar("langgraph_dynamodb_ui_page_budget", default=None)

F = TypeVar("F", bound=Callable[..., str])


class _Budget:
    """Characters a page may still render (shared by every bounded rendering during it)."""

    def __init__(self, chars: int) -> None:
        self.total = chars
        self.left = chars


class Rendered(NamedTuple):
    """A bounded rendering: its text, and whether that is the whole value (``complete``)."""

    text: str
    complete: bool


@contextlib.contextmanager
def page_budget(chars: int = PAGE_CHARS) -> Iterator[None]:
    """Render one page within ``chars`` characters of values (nested pages share the outer budget)."""
    if _PAGE.get() is not None:
        yield
        return
    token = _PAGE.set(_Budget(chars))
    try:
        yield
    finally:
        _PAGE.reset(token)


def bounded_page(fn: F) -> F:
    """A page handler rendered within one :func:`page_budget` (the server's routes, and direct calls)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        with page_budget():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _spent_note(page: _Budget) -> str:
    return (
        f"… not shown: this page's {page.total:,} characters of values are spent (load the value on its own)"
    )


class _Writer:
    """Output parts within a character budget; markers and closing brackets go past it (bounded by depth)."""

    def __init__(self, limit: int, indent: int | None, max_depth: int) -> None:
        self.parts: list[str] = []
        self.left = limit
        self.cut = False
        self.indent = indent
        self.max_depth = max_depth

    def put(self, s: str) -> None:
        if len(s) > self.left:
            s = s[: max(0, self.left)]
            self.cut = True
        self.parts.append(s)
        self.left -= len(s)

    def mark(self, s: str) -> None:
        """A cut marker: past the budget (one per container level, so bounded by ``max_depth``)."""
        self.cut = True
        self.parts.append(s)

    def spent(self) -> bool:
        return self.left <= 0


def _shape(value: Any) -> tuple[str, Any]:
    """One level of ``_render.jsonable``: ``("leaf", json-able scalar)``, ``("map", mapping)`` or ``("seq", list)``.

    Containers are returned as they are (never copied, never converted below this level).
    """
    if value is None or isinstance(value, (bool, int, str)):
        return "leaf", value
    if isinstance(value, float):
        return "leaf", value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, Mapping):
        return "map", value
    if isinstance(value, (set, frozenset)):
        try:
            return "seq", sorted(value)
        except TypeError:
            return "seq", list(value)
    if isinstance(value, (list, tuple)):
        return "seq", value
    if isinstance(value, (bytes, bytearray)):
        return "map", {"bytes": len(value), "base64": base64.b64encode(bytes(value[:4096])).decode()}
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return "leaf", value.isoformat()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        with contextlib.suppress(Exception):
            return _shape(dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return "map", {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if hasattr(value, "node") and hasattr(value, "arg"):  # langgraph.types.Send
        return "map", {"send": value.node, "arg": value.arg}
    return "leaf", repr(value)


def _leaf(w: _Writer, value: Any) -> None:
    if isinstance(value, str) and len(value) > w.left:
        # Only what can be shown is encoded: a long string costs its shown part.
        w.put(json.dumps(value[: max(0, w.left - 3)] + "…", ensure_ascii=False))
        w.cut = True
        return
    w.put(json.dumps(value, ensure_ascii=False))


def _walk(w: _Writer, value: Any, depth: int) -> None:
    kind, obj = _shape(value)
    if kind == "leaf":
        _leaf(w, obj)
        return
    opening, closing = ("{", "}") if kind == "map" else ("[", "]")
    if not obj:
        w.put(opening + closing)
        return
    if depth >= w.max_depth:
        w.mark(json.dumps(f"… nested deeper than {w.max_depth}", ensure_ascii=False))
        return
    pad = "" if w.indent is None else "\n" + " " * (w.indent * (depth + 1))
    sep = ", " if w.indent is None else "," + pad
    w.put(opening + pad)
    entries = obj.items() if kind == "map" else obj
    for shown, entry in enumerate(entries):
        if w.left <= (len(sep) if shown else 0):
            more = len(obj) - shown
            w.mark((sep if shown else "") + f"… {more:,} more item{'' if more == 1 else 's'}")
            break
        if shown:
            w.put(sep)
        item = entry
        if kind == "map":
            w.put(json.dumps(str(entry[0]), ensure_ascii=False) + ": ")
            item = entry[1]
        _walk(w, item, depth + 1)
    # Brackets close past the budget: at most one per level, so the overshoot is bounded by max_depth.
    w.parts.append(("" if w.indent is None else "\n" + " " * (w.indent * depth)) + closing)


def _charge(limit: int) -> tuple[int, _Budget | None]:
    page = _PAGE.get()
    return (limit if page is None else min(limit, max(0, page.left))), page


def bounded_json(
    value: Any, max_chars: int, *, indent: int | None = 2, max_depth: int = MAX_DEPTH
) -> Rendered:
    """JSON text of a stored value (as ``json.dumps(jsonable(value), indent=...)``), at most ``max_chars`` of it.

    Args:
        value: a decoded state value (messages, dataclasses, sets, bytes... as ``_render.jsonable``).
        max_chars: the characters produced before the rendering stops (plus its cut markers).
        indent: ``2`` for the indented form, ``None`` for one line.
        max_depth: containers nested deeper are shown as ``"… nested deeper than D"``.

    Returns:
        The text and whether it is the whole value; a page's budget (:func:`page_budget`) is charged.
    """
    limit, page = _charge(max_chars)
    if page is not None and limit <= 0:
        return Rendered(_spent_note(page), False)
    w = _Writer(limit, indent, max_depth)
    _walk(w, value, 0)
    text = "".join(w.parts)
    if page is not None:
        page.left -= len(text)
    return Rendered(text, not w.cut)


def bounded_text(value: Any, max_chars: int, *, indent: int | None = 2) -> Rendered:
    """A value as the inspector shows it: a string as is, anything else as :func:`bounded_json`; both bounded."""
    if not isinstance(value, str):
        return bounded_json(value, max_chars, indent=indent)
    limit, page = _charge(max_chars)
    if page is not None and limit <= 0:
        return Rendered(_spent_note(page), False)
    if page is not None:
        page.left -= min(len(value), limit)
    if len(value) <= limit:
        return Rendered(value, True)
    return Rendered(value[:limit] + f"… {len(value) - limit:,} more characters", False)


def short(value: Any, width: int) -> str:
    """One line of at most ``width`` characters, ``…`` where it is cut (the inspector's previews)."""
    r = bounded_text(value, width + 1, indent=None)
    text = r.text if r.complete else r.text[: width + 1]
    return text if r.complete and len(text) <= width else text[: width - 1] + "…"


__all__ = [
    "MAX_DEPTH",
    "PAGE_CHARS",
    "Rendered",
    "bounded_json",
    "bounded_page",
    "bounded_text",
    "page_budget",
    "short",
]
