"""The inspector's pages are bounded whatever a stored value expands to (issue 35, finding 5).

An attacker who can write one item stores a value whose text is far larger
than its bytes: a list nested 48 deep of 900,000 zeros compresses to a few KB
and is under ``max_payload_objects``, but its indented JSON is ~90 MB. The
checkpoint, conversation and diff pages printed values fully indented and only
then truncated them (a 196 MB page, 1.2 GB and 36 s for one request; three
such channels, 589 MB). Here the item is written through a real saver on the
moto server, and each page is requested through its handler: the page must
stay under ``PAGE_LIMIT`` bytes, and ``GET /value``'s peak memory (tracemalloc)
under ``PEAK_LIMIT``: measured, not timed.

The threads page must also render a thread whose metadata ``step`` is not an
integer (it answered a 500 for the whole page).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.cli._ui import (
    VALUE_CHARS,
    page_checkpoint,
    page_conversation,
    page_diff,
    page_thread,
    page_threads,
    value_text,
)
from tests.support.harness import cfg, new_thread

#: Zeros in the hostile value and its nesting (the finding's item).
ZEROS = 900_000
DEPTH = 48
#: What one page may cost: bytes of HTML, and bytes of Python memory at its peak.
PAGE_LIMIT = 2_000_000
PEAK_LIMIT = 150_000_000


def _hostile(n: int = ZEROS, depth: int = DEPTH) -> list[Any]:
    value: list[Any] = [0] * n
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.fixture
def saver(moto_endpoint: str, names: dict[str, str]) -> DynamoDBSaver:
    s = DynamoDBSaver(table_name=names["table_name"], bucket_name=names["bucket_name"])
    s.setup()
    return s


def _put(
    saver: DynamoDBSaver, thread: str, values: dict[str, Any], parent: dict[str, Any] | None
) -> dict[str, Any]:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = values
    version = "2" if parent else "1"
    cp["channel_versions"] = {k: version for k in values}
    config = parent or cfg(thread)
    return dict(
        saver.put(config, cp, {"step": 1 if parent else 0, "source": "loop"}, dict(cp["channel_versions"]))
    )


@pytest.fixture
def hostile_thread(saver: DynamoDBSaver) -> tuple[str, str, str]:
    """A parent checkpoint of small values, then one with three hostile channels, a hostile message and write."""
    thread = new_thread()
    first = _put(saver, thread, {"a": [1], "b": [2], "c": [3], "messages": []}, None)
    bomb = _hostile()
    message = {"type": "human", "content": bomb, "id": "m1"}
    second = _put(saver, thread, {"a": bomb, "b": bomb, "c": bomb, "messages": [message]}, first)
    saver.put_writes(second, [("a", bomb)], task_id="task-1")
    return thread, first["configurable"]["checkpoint_id"], second["configurable"]["checkpoint_id"]


def _measured(page: Callable[[], str]) -> tuple[str, int]:
    tracemalloc.start()
    try:
        text = page()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return text, peak


@pytest.mark.parametrize("route", ["checkpoint", "conversation", "diff"])
def test_a_page_of_hostile_values_stays_small(
    saver: DynamoDBSaver, hostile_thread: tuple[str, str, str], route: str
) -> None:
    thread, a, b = hostile_thread
    handlers: dict[str, Callable[[], str]] = {
        "checkpoint": lambda: page_checkpoint(saver, {"thread": [thread], "id": [b]}),
        "conversation": lambda: page_conversation(saver, {"thread": [thread], "id": [b]}),
        "diff": lambda: page_diff(saver, {"thread": [thread], "a": [a], "b": [b]}),
    }
    html = handlers[route]()
    size = len(html.encode("utf-8"))
    assert size < PAGE_LIMIT, f"/{route}: {size:,} bytes"
    # The cut is said, never silent.
    assert "nested deeper than" in html or "more item" in html or "characters of values are spent" in html


def test_three_hostile_channels_share_one_page_budget(
    saver: DynamoDBSaver, hostile_thread: tuple[str, str, str]
) -> None:
    """The checkpoint page shows three hostile channels, a hostile message, write and diff: one budget in all."""
    thread, _, b = hostile_thread
    html = page_checkpoint(saver, {"thread": [thread], "id": [b], "all": ["1"]})
    for channel in ("a", "b", "c", "messages"):
        assert f'data-channel="{channel}"' in html, channel
    assert len(html.encode("utf-8")) < PAGE_LIMIT


def test_a_whole_value_on_demand_is_cut_and_says_so(
    saver: DynamoDBSaver, hostile_thread: tuple[str, str, str]
) -> None:
    thread, _, b = hostile_thread
    text, peak = _measured(lambda: value_text(saver, {"thread": [thread], "id": [b], "channel": ["a"]}))
    assert len(text) < VALUE_CHARS + 10_000
    assert f"cut: the value's text is over {VALUE_CHARS:,} characters" in text
    assert peak < PEAK_LIMIT


def test_ordinary_values_render_as_before(saver: DynamoDBSaver) -> None:
    """Values within the bounds are shown whole, as ``json.dumps(indent=2)`` prints them."""
    import html as html_lib
    import json

    thread = new_thread()
    value = {"tags": ["a", "b"], "n": 3, "nested": {"deep": [1, 2, 3]}}
    stored = _put(saver, thread, {"v": value}, None)
    page = page_checkpoint(saver, {"thread": [thread], "id": [stored["configurable"]["checkpoint_id"]]})
    assert html_lib.escape(json.dumps(value, indent=2), quote=True) in page


def test_a_non_numeric_step_does_not_break_the_threads_page(saver: DynamoDBSaver) -> None:
    """Finding 8: metadata ``step: "x"`` turned the threads page into a 500 (``"x" + 1`` in ``next_tasks``)."""
    good, odd = new_thread(), new_thread()
    _put(saver, good, {"v": 1}, None)
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"v": 1}
    cp["channel_versions"] = {"v": "1"}
    saver.put(cfg(odd), cp, {"step": "x", "source": "loop"}, {"v": "1"})  # type: ignore[typeddict-item]
    html = page_threads(saver, {"prefix": ["t-"]})
    assert good in html and odd in html
    stored = page_checkpoint(saver, {"thread": [odd]})
    assert "x / loop" in stored


ODD_QUERIES = [
    ("/", {"limit": ["x"]}),
    ("/", {"active": ["soon"]}),
    ("/", {"page": ["not-a-token"]}),
    ("/", {"step": ["x"]}),
    ("/thread", {"keep_last": ["x"]}),
    ("/thread", {"before": ["x"]}),
    ("/thread", {"limit": ["-5"], "marks": ["1"]}),
    ("/checkpoint", {"id": ["x"]}),
    ("/checkpoint", {"against": ["x"]}),
    ("/conversation", {"id": ["x"]}),
    ("/diff", {"a": ["x"], "b": ["y"]}),
    ("/value", {"id": ["x"], "channel": ["v"]}),
]


@pytest.mark.parametrize(("path", "query"), ODD_QUERIES, ids=[f"{p}{sorted(q)}" for p, q in ODD_QUERIES])
def test_odd_query_parameters_are_a_page_or_a_refusal(
    saver: DynamoDBSaver, path: str, query: dict[str, list[str]]
) -> None:
    """Bad input is answered (a page, or a ``CLIError`` the server sends as 400/404), never a 500."""
    from langgraph.checkpoint.dynamodb.cli._base import CLIError

    thread = new_thread()
    _put(saver, thread, {"v": 1}, None)
    routes = {
        "/": page_threads,
        "/thread": page_thread,
        "/checkpoint": page_checkpoint,
        "/conversation": page_conversation,
        "/diff": page_diff,
        "/value": value_text,
    }
    route = routes[path]
    try:
        route(saver, {"thread": [thread], "id": [thread], **query} if path != "/" else query)
    except CLIError as err:
        assert err.message  # said, in the page (400, or 404 for what is not there)


def test_a_terminal_preview_renders_only_what_it_shows() -> None:
    """The CLI's one-line previews (``history``, ``state``, ``diff``) cut the value while rendering it too."""
    from langgraph.checkpoint.dynamodb.cli._render import short

    bomb = _hostile()
    text, peak = _measured(lambda: short(bomb, 60))
    assert text.startswith("[[[[") and len(text) <= 60
    assert peak < 1_000_000, f"peak {peak:,} bytes for a 60-column preview"
