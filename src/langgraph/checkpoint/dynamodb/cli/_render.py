"""Rendering: tables, display widths, colour, shell and terminal quoting, jsonable values; strings in, strings out."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Final, TextIO

from langgraph.checkpoint.dynamodb.cli._bounded import bounded_json


def jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON-compatible rendering of a state value (messages, dataclasses, sets, bytes...).

    Example:
        >>> jsonable({"tags": {"b", "a"}, "raw": b"\\x00\\x01"})
        {'tags': ['a', 'b'], 'raw': {'bytes': 2, 'base64': 'AAE='}}
    """
    if _depth > 50:
        return repr(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        items = [jsonable(v, _depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, (list, tuple)):
        return [jsonable(v, _depth + 1) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value), "base64": base64.b64encode(bytes(value[:4096])).decode()}
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return jsonable(dump(), _depth + 1)
        except Exception:
            pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name), _depth + 1) for f in dataclasses.fields(value)}
    if hasattr(value, "node") and hasattr(value, "arg"):  # langgraph.types.Send
        return {"send": value.node, "arg": jsonable(value.arg, _depth + 1)}
    return repr(value)


#: Characters of a checkpoint id shown where the whole id does not fit: its
#: end, since uuid6 ids of one thread share their leading (time) digits.
SHORT_ID = 12


def short_id(checkpoint_id: str | None) -> str:
    """The one short form of a checkpoint id the CLI, the inspector and the demo print.

    Every command that takes a checkpoint accepts it back (a unique suffix,
    as it accepts a unique prefix).

    Example:
        >>> short_id("1f0c2d3e-4f5a-6b7c-8d9e-0a1b2c3d4e5f")
        '0a1b2c3d4e5f'
    """
    if not checkpoint_id:
        return "-"
    return checkpoint_id[-SHORT_ID:] if len(checkpoint_id) > SHORT_ID else checkpoint_id


def short(value: Any, width: int = 60) -> str:
    """A one-line preview of a value, at most ``width`` terminal columns."""
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    else:
        # Rendered only as far as a preview can show (``_bounded``): a small stored
        # value can be megabytes of JSON. A column is at least a quarter of a
        # character here (wide characters take two, combining ones none, rarely many).
        text = bounded_json(value, 4 * width + 64, indent=None).text
    return _fit(" ".join(text.split()), width)


# ================================================================ rendering


def render_table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[tuple[str, str]],
    *,
    max_width: int = 60,
    indent: str = "",
    no_truncate: Sequence[str] = (),
) -> str:
    """Rows as an aligned text table; ``columns`` are ``(key, header)`` pairs.

    Cells longer than ``max_width`` terminal columns are cut (with ``...``),
    except in the columns named in ``no_truncate``: those hold ids, shown
    exactly and quoted when a shell needs it (see :func:`display_id`), so
    every id shown can be pasted back into the CLI. Widths are terminal
    columns, not characters: CJK and most emoji take two, combining marks
    none.

    Example:
        >>> print(render_table([{"a": 1, "b": "x"}], [("a", "A"), ("b", "B")]))
        A  B
        1  x
    """
    cells = [[header for _, header in columns]]
    for row in rows:
        cells.append(
            [
                display_id(str(row.get(key)))
                if key in no_truncate and row.get(key) is not None
                else table_cell(row.get(key), max_width)
                for key, _ in columns
            ]
        )
    widths = [max(display_width(r[i]) for r in cells) for i in range(len(columns))]
    lines = []
    for r in cells:
        line = "  ".join(
            c + " " * (w - display_width(c)) if i < len(columns) - 1 else c
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        lines.append((indent + line).rstrip())
    return "\n".join(lines)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0  # combining marks, zero-width joiners, variation selectors
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Terminal columns a string takes: wide (CJK, emoji) 2, combining marks 0.

    ANSI colour sequences take none.

    Example:
        >>> display_width("ab"), display_width("日本"), display_width("e\\u0301")
        (2, 4, 1)
    """
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


_ANSI: Final = re.compile(r"\x1b\[[0-9;]*m")


def _fit(text: str, max_width: int) -> str:
    """``text`` cut to at most ``max_width`` terminal columns, ending with ``...`` when cut."""
    if display_width(text) <= max_width:
        return text
    budget = max(1, max_width - 3)
    out, used = [], 0
    for ch in text:
        w = _char_width(ch)
        if used + w > budget:
            break
        out.append(ch)
        used += w
    return "".join(out) + "..."


def table_cell(value: Any, max_width: int) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = str(value)
    return _fit(escape_controls(" ".join(text.split())), max_width)


def escape_controls(text: str, keep: str = "") -> str:
    """Control characters as visible escapes (``\\x1b``): stored text must not drive the terminal."""
    if text.isprintable() or all(ch in keep or unicodedata.category(ch) != "Cc" for ch in text):
        return text
    return "".join(
        ch if ch in keep or unicodedata.category(ch) != "Cc" else f"\\x{ord(ch):02x}" for ch in text
    )


# Characters a shell word may hold unquoted: letters and digits of any script
# (ids are often not ASCII), and the punctuation shlex.quote leaves alone.
_SHELL_SAFE: Final = frozenset("@%+=:,./-_")


def shell_quote(text: str) -> str:
    """``text`` as one shell word that a POSIX shell (bash, zsh for ``$'...'``) reads back exactly.

    Printable text is single-quoted; text with control or invisible
    characters (newline, tab, zero-width space...) uses bash's ``$'...'``
    with escapes, so nothing invisible is lost on the way.

    Example:
        >>> print(shell_quote(" t1 "), shell_quote("a'b"), shell_quote("a\\tb"))
        ' t1 ' 'a'"'"'b' $'a\\tb'
    """
    if all(_visible(ch) for ch in text):
        return "'" + text.replace("'", "'\"'\"'") + "'"
    out = []
    for ch in text:
        if ch in ("\\", "'"):
            out.append("\\" + ch)
        elif ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif _visible(ch):
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "$'" + "".join(out) + "'"


_C_ESCAPES: Final = {
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\x1b": "\\e",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\v": "\\v",
}


def _visible(ch: str) -> bool:
    """A character that shows on a terminal as itself (a plain space counts)."""
    if ch == " ":
        return True
    if ch == "\u200d" or unicodedata.category(ch) in ("Mn", "Me"):
        return True  # joins or marks the visible character before it (emoji, accents)
    return ch.isprintable() and not ch.isspace()


def display_id(text: str) -> str:
    """An id as tables and messages show it: bare when a shell reads it back as is, else quoted.

    Ids are never cut or trimmed. One with surrounding or inner whitespace,
    control characters, shell syntax (quotes, ``|``, ``$``...) or nothing at
    all is shown as a quoted shell word (:func:`shell_quote`), so pasting
    what is shown into a command names the same thread.

    Example:
        >>> display_id("feature-42"), display_id(" feature-42"), display_id("")
        ('feature-42', "' feature-42'", "''")
    """
    if text and all(
        ch.isalnum() or ch in _SHELL_SAFE or unicodedata.category(ch) in ("Mn", "Mc") for ch in text
    ):
        return text
    return shell_quote(text)


_PARENT_LABELS: Final = {
    "pruned": "? (parent pruned)",
    "never_existed": "? (parent never existed)",
    "unknown": "? (parent missing)",
}


def fmt_writes(
    writes: Mapping[str, Sequence[str]], parent_missing: bool = False, reason: str | None = None
) -> str:
    if parent_missing:
        return _PARENT_LABELS.get(reason or "unknown", _PARENT_LABELS["unknown"])
    return "; ".join(f"{node}: {', '.join(chans) or '-'}" for node, chans in writes.items()) or "-"


def fmt_next(tasks: Sequence[Mapping[str, Any]]) -> str:
    """The next tasks, one entry per (node, status), counted: a fan-out of 200 is one line.

    Example:
        >>> fmt_next([{"name": "plan", "status": "pending"}] + [{"name": "worker", "status": "done"}] * 3)
        'plan, worker \u00d73 (done)'
    """
    groups: dict[tuple[str, str], int] = {}
    for t in tasks:  # insertion order: the order LangGraph would run them
        key = (t["name"], t["status"])
        groups[key] = groups.get(key, 0) + 1
    return (
        ", ".join(
            name + (f" \u00d7{n}" if n > 1 else "") + ("" if status == "pending" else f" ({status})")
            for (name, status), n in groups.items()
        )
        or "-"
    )


def human_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)  # pragma: no cover


def wants_color(mode: str | None, stream: TextIO) -> bool:
    """Colour on ``stream``: ``always``; ``never``; ``auto`` (default) = a terminal and no NO_COLOR.

    https://no-color.org: a non-empty ``NO_COLOR`` turns colour off; an
    explicit ``--color always`` still wins.
    """
    if mode == "always":
        return True
    if mode == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_SGR: Final = {"bold": "1", "red": "31", "yellow": "33", "green": "32", "dim": "2"}
# Status labels worth a glance: what waits for a person, what failed.
LABEL_COLORS: Final = (
    (re.compile(r"\((interrupted|parent pruned|parent never existed|parent missing)\)"), "yellow"),
    (re.compile(r"\((error)\)"), "red"),
)


def paint(text: str, style: str) -> str:
    return f"\x1b[{_SGR[style]}m{text}\x1b[0m"


def paint_match(match: re.Match[str], style: str) -> str:
    return paint(match.group(0), style)


def render_stats(stats: Mapping[str, Any]) -> str:
    """:func:`collect_stats` output as text tables."""
    d, s3 = stats["dynamodb"], stats["s3"]
    scope = (
        f"thread {shell_quote(stats['thread_id'])}" if stats.get("thread_id") else f"table {stats['table']!r}"
    )
    subgraphs = ", ".join(display_id(s) for s in stats.get("subgraphs", []))
    lines = [
        f"{scope}: {stats['threads']} thread(s), {stats['checkpoints']} checkpoint(s), "
        f"{stats['namespaces']} namespace(s)"
        + (f" (subgraphs {subgraphs}: {stats.get('subgraph_runs', 0)} run(s))" if subgraphs else ""),
        "",
        f"DynamoDB: {d['items']:,} item(s), {human_bytes(d['bytes'])}",
    ]
    rows = [
        {"kind": k, "items": v["items"], "bytes": human_bytes(v["bytes"])} for k, v in d["by_kind"].items()
    ]
    lines.append(render_table(rows, [("kind", "KIND"), ("items", "ITEMS"), ("bytes", "BYTES")], indent="  "))
    lines.append("")
    if s3["bucket"] is None:
        lines.append("S3: no bucket configured (--bucket / LANGGRAPH_DYNAMODB_BUCKET)")
    else:
        lines.append(
            f"S3 s3://{s3['bucket']}/{s3['prefix']}: {s3['objects']:,} object(s), {human_bytes(s3['bytes'])}"
        )
        rows = [
            {"kind": k, "objects": v["objects"], "bytes": human_bytes(v["bytes"])}
            for k, v in s3["by_kind"].items()
        ]
        if rows:
            lines.append(
                render_table(
                    rows, [("kind", "KIND"), ("objects", "OBJECTS"), ("bytes", "BYTES")], indent="  "
                )
            )
    return "\n".join(lines)
