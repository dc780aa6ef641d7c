"""DeltaChannel ``get_state_history`` of a long thread in a handful of requests, counted per API.

``list`` reads the whole thread (strongly consistent, the head's deleted
lineages with it); the delta-history call LangGraph then makes for each
listed checkpoint is answered from that reading, not with one more
request per checkpoint (which cost 248 requests for 250 checkpoints).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from tests.support.graphs import chat_graph
from tests.support.harness import Harness, cfg, new_thread

CHECKPOINTS = 250
#: Whole-history budget: the list's pages, the first walk's Query, S3 reads of spilled values.
MAX_REQUESTS = 8

VARIANTS = pytest.mark.parametrize("harness", ["sync", "async"], indirect=True)


def _count(saver: Any, counts: Counter[str]) -> None:
    def after(model: Any, event_name: str, **_: Any) -> None:
        counts[f"{event_name.split('.')[1]}.{model.name}"] += 1

    for service, client in saver.clients.items():
        if client is not None:
            client.meta.events.register(f"after-call.{service}.*", after)


@VARIANTS
def test_history_of_250_checkpoints_costs_a_handful_of_requests(harness: Harness) -> None:
    h = harness
    thread = new_thread()
    graph = chat_graph(delta=True).compile(checkpointer=h.saver)
    oracle = chat_graph(delta=True).compile(checkpointer=InMemorySaver())
    turns = 1
    for turn in range(CHECKPOINTS):
        h.invoke(graph, {"messages": [f"user {turn}"]}, cfg(thread))
        oracle.invoke({"messages": [f"user {turn}"]}, cfg("oracle"))
        if turn == 0:  # checkpoints per turn, from the first one
            turns = -(-CHECKPOINTS // len(h.list(cfg(thread))))
        if turn + 1 >= turns:
            break
    # Another saver over the same table, as another process: nothing cached.
    reader = h.make_saver()
    counts: Counter[str] = Counter()
    try:
        _count(reader, counts)
        reading = chat_graph(delta=True).compile(checkpointer=reader)
        history = h.history(reading, cfg(thread))
    finally:
        if h.is_async:
            h.loop.run(reader.aclose())
        else:
            reader.close()
    print(f"{len(history)} checkpoints: {sum(counts.values())} requests {dict(sorted(counts.items()))}")
    expected = [(s.values, s.next, s.metadata["step"]) for s in oracle.get_state_history(cfg("oracle"))]
    assert [(s.values, s.next, s.metadata["step"]) for s in history] == expected
    assert len(history) >= CHECKPOINTS
    assert sum(counts.values()) <= MAX_REQUESTS, counts
