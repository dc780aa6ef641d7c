"""DeltaChannel ``get_state_history`` in linear cost: requests and bytes read, counted, not timed.

LangGraph asks for the delta history of every checkpoint it lists; each
history walks back to the channel's seed. Without the chain cache a
listing of N checkpoints reads O(N^2) items; with it, each item about once.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.dynamodb._parts.shapes import item_size
from tests.support.graphs import chat_graph
from tests.support.harness import Harness, cfg, new_thread

HEAVY = pytest.mark.parametrize("harness", ["sync", "async-s3-encrypted"], indirect=True)


class ReadMeter:
    """DynamoDB requests and the bytes of the items they returned (what read units are billed on)."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.bytes = 0
        self.items = 0

    def attach(self, saver: Any) -> None:
        self.reset()
        saver.clients["dynamodb"].meta.events.register("after-call.dynamodb.*", self._after)

    def _after(self, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        self.requests[model.name] += 1
        got: list[dict[str, Any]] = list(parsed.get("Items", []))
        if "Item" in parsed:
            got.append(parsed["Item"])
        for items in parsed.get("Responses", {}).values():
            got.extend(items)
        self.items += len(got)
        self.bytes += sum(item_size(it) for it in got)

    def reset(self) -> None:
        self.requests.clear()
        self.bytes = self.items = 0


def _history_cost(h: Harness, meter: ReadMeter, turns: int) -> tuple[int, int, int, int]:
    """(checkpoints listed, requests, items read, bytes read) of one full get_state_history."""
    graph = chat_graph(delta=True, snapshot_frequency=1000).compile(checkpointer=h.saver)
    thread = new_thread()
    for i in range(turns):
        h.invoke(graph, {"messages": [f"user {i}"]}, cfg(thread))
    # Another saver over the same table, as another process: nothing cached
    # by the turns (their own history reads fill the writer's cache).
    reader = h.make_saver()
    try:
        meter.attach(reader)
        reading = chat_graph(delta=True, snapshot_frequency=1000).compile(checkpointer=reader)
        history = h.history(reading, cfg(thread))
    finally:
        if h.is_async:
            h.loop.run(reader.aclose())
        else:
            reader.close()
    requests, items, nbytes = sum(meter.requests.values()), meter.items, meter.bytes
    # Same states as LangGraph's in-memory saver, checkpoint for checkpoint.
    oracle = chat_graph(delta=True, snapshot_frequency=1000).compile(checkpointer=InMemorySaver())
    for i in range(turns):
        oracle.invoke({"messages": [f"user {i}"]}, cfg("oracle"))
    expected = [(s.values, s.next, s.metadata["step"]) for s in oracle.get_state_history(cfg("oracle"))]
    assert [(s.values, s.next, s.metadata["step"]) for s in history] == expected
    return len(history), requests, items, nbytes


@HEAVY
def test_history_listing_reads_grow_linearly(harness: Harness) -> None:
    meter = ReadMeter()
    small = _history_cost(harness, meter, 16)
    large = _history_cost(harness, meter, 32)
    print(f"checkpoints, requests, items, bytes: {small} then {large}")
    n_ratio = large[0] / small[0]
    # Linear: twice the checkpoints, about twice the requests, items and
    # bytes (quadratic would be about four times; the walk of the first
    # checkpoint and the list are linear themselves).
    for what, a, b in (
        ("requests", small[1], large[1]),
        ("items", small[2], large[2]),
        ("bytes", small[3], large[3]),
    ):
        assert b / a <= 1.25 * n_ratio, f"{what}: {a} for {small[0]} checkpoints, {b} for {large[0]}"
    # About one request per checkpoint listed (the history calls), plus the list.
    assert large[1] <= large[0] + 8, large
    # Each item about once: the list reads everything once, every history
    # call the target and the thread head; the first walk the chain again.
    assert large[2] <= 5 * large[0], large
