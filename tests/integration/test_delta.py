"""DeltaChannel end to end: batched history, and delta-safe prune, copy and delete_for_runs.

For every checkpoint that survives an operation, ``get_state`` at that
checkpoint must equal the state before the operation, value for value, and
the graph must continue correctly afterwards.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import functools
import random
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.dynamodb._operations import pruning, threads
from tests.support.graphs import chat_graph
from tests.support.harness import Harness, cfg, new_thread

TURNS = 31
# The heavy end-to-end cases run on the two most different variants; the
# cheap ones below run on all four.
HEAVY = pytest.mark.parametrize("harness", ["sync", "async-s3-encrypted"], indirect=True)


def run_chat(h: Harness, graph: Any, thread: str, turns: range) -> None:
    for i in turns:
        # The run id travels in config metadata, as the LangGraph server sends it.
        h.invoke(
            graph, {"messages": [f"user {i}"]}, {**cfg(thread), "metadata": {"run_id": f"{thread}-run-{i}"}}
        )


@functools.cache
def oracle(turns: int) -> dict[int, tuple[Any, tuple[str, ...]]]:
    """step -> (values, next) of every root checkpoint of the same chat on InMemorySaver."""
    graph = chat_graph(delta=True, subgraph=True).compile(checkpointer=InMemorySaver())
    for i in range(turns):
        graph.invoke({"messages": [f"user {i}"]}, cfg("oracle"))
    return {s.metadata["step"]: (s.values, s.next) for s in graph.get_state_history(cfg("oracle"))}


def assert_matches_oracle(h: Harness, graph: Any, thread: str, turns: int = TURNS) -> int:
    """get_state at every surviving root checkpoint equals the oracle's at that step."""
    expected = oracle(turns)
    survivors = h.list(cfg(thread))
    assert survivors, "nothing survived"
    for t in survivors:
        snap = h.get_state(graph, t.config)
        assert (snap.values, snap.next) == expected[t.metadata["step"]], (
            f"state differs at step {t.metadata['step']}"
        )
    return len(survivors)


@pytest.fixture
def delta_thread(harness: Harness) -> tuple[Any, str]:
    graph = chat_graph(delta=True, subgraph=True).compile(checkpointer=harness.saver)
    thread = new_thread()
    run_chat(harness, graph, thread, range(TURNS))
    assert len(harness.list(cfg(thread))) == len(oracle(TURNS))
    return graph, thread


@contextlib.contextmanager
def reading(how: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``outline``: prune reads the thread as the table-wide jobs read one over their budget."""
    with monkeypatch.context() as m:
        if how == "outline":
            m.setattr(pruning, "load_thread", lambda s, thread_id, **_: threads.load_outline(s, thread_id))
        yield


@HEAVY
@pytest.mark.parametrize(("keep_last", "how"), [(None, "whole"), (4, "whole"), (4, "outline")])
def test_prune_is_delta_safe(
    harness: Harness, delta_thread: Any, keep_last: int | None, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph, thread = delta_thread
    total = len(oracle(TURNS))
    with reading(how, monkeypatch):
        result = harness.call("prune", [thread], keep_last=keep_last)
    n = assert_matches_oracle(harness, graph, thread)
    assert n < total / 3, (n, total)
    assert result.checkpoints_deleted > 0 and result.kept_for_delta > 0
    # Pruning again deletes nothing more; the graph continues correctly.
    again = harness.call("prune", [thread], keep_last=keep_last)
    assert again.checkpoints_deleted == 0
    run_chat(harness, graph, thread, range(TURNS, TURNS + 2))
    assert harness.get_state(graph, cfg(thread)).values == oracle(TURNS + 2)[max(oracle(TURNS + 2))][0]


@HEAVY
def test_copy_thread_is_complete_and_independent(harness: Harness, delta_thread: Any) -> None:
    graph, thread = delta_thread
    target = new_thread()
    harness.call("copy_thread", thread, target)
    assert [t.checkpoint["id"] for t in harness.list(cfg(target))] == [
        t.checkpoint["id"] for t in harness.list(cfg(thread))
    ]
    # The source continues on its own...
    run_chat(harness, graph, thread, range(TURNS, TURNS + 1))
    assert harness.get_state(graph, cfg(thread)).values == oracle(TURNS + 1)[max(oracle(TURNS + 1))][0]
    assert len(harness.list(cfg(target))) == len(oracle(TURNS))
    # ...and deleting it leaves the copy whole; the copy continues.
    harness.call("delete_thread", thread)
    assert harness.list(cfg(thread)) == []
    assert assert_matches_oracle(harness, graph, target) == len(oracle(TURNS))
    run_chat(harness, graph, target, range(TURNS, TURNS + 2))
    assert harness.get_state(graph, cfg(target)).values == oracle(TURNS + 2)[max(oracle(TURNS + 2))][0]
    with pytest.raises(ValueError, match="already has checkpoints"):
        harness.call("copy_thread", thread + "-none", target)


@HEAVY
def test_delete_for_runs_keeps_needed_chains(harness: Harness, delta_thread: Any) -> None:
    graph, thread = delta_thread
    runs = [f"{thread}-run-{i}" for i in range(TURNS)]
    assert {t.metadata["run_id"] for t in harness.list(cfg(thread))} == set(runs)
    victims = [runs[3], runs[TURNS // 2], runs[TURNS - 2]]
    everything = {"configurable": {"thread_id": thread}}
    per_run_before = collections.Counter(t.metadata["run_id"] for t in harness.list(everything))
    before = len(harness.list(cfg(thread)))
    result = harness.call("delete_for_runs", victims)
    after = assert_matches_oracle(harness, graph, thread)
    assert after < before and result.checkpoints_deleted >= before - after
    assert result.kept_for_delta > 0  # some of the victims' checkpoints are needed by survivors
    per_run_after = collections.Counter(t.metadata["run_id"] for t in harness.list(everything))
    for run in runs:
        if run in victims:
            assert per_run_after[run] < per_run_before[run], run  # deleted, but for what a chain needs
        else:
            assert per_run_after[run] == per_run_before[run], run  # other runs untouched
    run_chat(harness, graph, thread, range(TURNS, TURNS + 1))
    assert harness.get_state(graph, cfg(thread)).values == oracle(TURNS + 1)[max(oracle(TURNS + 1))][0]


def test_prune_bad_arguments(harness: Harness) -> None:
    with pytest.raises(TypeError, match="not a single string"):
        harness.call("prune", "thread-1")
    with pytest.raises(ValueError, match="unknown prune strategy"):
        harness.call("prune", ["t"], strategy="oldest")
    with pytest.raises(ValueError, match="keep_last"):
        harness.call("prune", ["t"], keep_last=0)


def _chain(h: Harness, thread: str, n: int, snapshot_every: int) -> dict[str, Any]:
    """A synthetic delta chain: 'msgs' stored only every ``snapshot_every`` steps."""
    parent = cfg(thread)
    for i in range(n):
        cp = {
            "v": 1,
            "id": str(uuid6(clock_seq=-1)),
            "ts": "2026-11-29T00:00:00+00:00",
            "channel_values": {"msgs": [f"m{j}" for j in range(i)]} if i % snapshot_every == 0 else {},
            "channel_versions": {"msgs": f"{i + 1:032}.0"},
            "versions_seen": {},
            "updated_channels": None,
        }
        md = {"step": i, "counters_since_delta_snapshot": {"msgs": [i % snapshot_every, i % snapshot_every]}}
        parent = h.call("put", parent, cp, md, {"msgs": f"{i + 1:032}.0"})
        h.call("put_writes", parent, [("msgs", f"m{i}"), ("other", i)], f"task-{i}", "~a")
    return parent


@HEAVY
def test_delta_history_matches_base_walk_in_constant_round_trips(harness: Harness) -> None:
    counts = {}
    for n in (10, 200):
        thread = new_thread()
        head = _chain(harness, thread, n, snapshot_every=n + 1 if n == 10 else 150)
        harness.call("get_tuple", head)  # as LangGraph does before asking for history
        harness.counter.reset()
        harness.call("get_delta_channel_history", config=head, channels=["msgs"])
        counts[n] = harness.counter.total()
        got = harness.call("get_delta_channel_history", config=head, channels=["msgs", "other", "never"])
        # The base class's walk (one get_tuple per ancestor) is the reference.
        if harness.is_async:
            expected = harness.loop.run(
                BaseCheckpointSaver.aget_delta_channel_history(
                    harness.saver, config=head, channels=["msgs", "other", "never"]
                )
            )
        else:
            expected = BaseCheckpointSaver.get_delta_channel_history(
                harness.saver, config=head, channels=["msgs", "other", "never"]
            )
        assert got == expected
        assert "seed" in got["msgs"] and "seed" not in got["never"]
    # One round trip: the Query and, in the same wave, the namespace's
    # tombstone (a Query from a given checkpoint does not reach it).
    assert counts[10] == counts[200] == 2, counts


@pytest.mark.parametrize("harness", ["sync-s3", "async-s3-encrypted"], indirect=True)
def test_delta_history_fetches_and_unpacks_only_the_asked_channels_writes(harness: Harness) -> None:
    """Another channel's large (S3) writes on the chain cost nothing to the history of 'msgs'."""
    thread = new_thread()
    big = [base64.b64encode(random.Random(i).randbytes(3000)).decode() for i in range(4)]  # > s3_threshold
    parent = cfg(thread)
    for i in range(4):
        cp = {
            "v": 1,
            "id": str(uuid6(clock_seq=-1)),
            "ts": "2026-11-29T00:00:00+00:00",
            "channel_values": {"msgs": []} if i == 0 else {},
            "channel_versions": {"msgs": f"{i + 1:032}.0"},
            "versions_seen": {},
            "updated_channels": None,
        }
        md = {"step": i, "counters_since_delta_snapshot": {"msgs": [i, i]}}
        parent = harness.call("put", parent, cp, md, {"msgs": f"{i + 1:032}.0"})
        harness.call("put_writes", parent, [("msgs", f"m{i}"), ("other", big[i])], f"task-{i}", "~a")
    with harness.other_saver() as reader:  # nothing cached: what it needs, it reads
        harness.counter.reset()
        msgs = harness.call("get_delta_channel_history", config=parent, channels=["msgs"], saver=reader)
        assert harness.counter.counts["s3.GetObject"] == 0, harness.counter.counts
        # The target's own writes are pending for its next step, not part of its history.
        assert [w[2] for w in msgs["msgs"]["writes"]] == [f"m{i}" for i in range(3)]
        harness.counter.reset()
        both = harness.call(
            "get_delta_channel_history", config=parent, channels=["msgs", "other"], saver=reader
        )
        assert harness.counter.counts["s3.GetObject"] == 3, harness.counter.counts
        assert [w[2] for w in both["other"]["writes"]] == big[:3]
        assert both["msgs"] == msgs["msgs"]
