"""Requests per operation, counted exactly with botocore event hooks (docs/architecture.md §5)."""

from __future__ import annotations

import base64
import random

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from tests.support.harness import Harness, cfg, new_thread, scan_table


def _checkpoint(values: dict, versions: dict | None = None) -> dict:  # type: ignore[type-arg]
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = values
    cp["channel_versions"] = versions or {k: "1" for k in values}
    return cp  # type: ignore[return-value]


def _chain(h: Harness, thread: str, n: int) -> list[dict]:  # type: ignore[type-arg]
    configs = []
    parent = cfg(thread)
    for i in range(n):
        parent = h.call(
            "put", parent, _checkpoint({"step": i}, {"step": str(i + 1)}), {"step": i}, {"step": str(i + 1)}
        )
        configs.append(parent)
    return configs


def test_put_is_one_request(harness: Harness) -> None:
    thread = new_thread()
    harness.counter.reset()
    harness.call(
        "put",
        cfg(thread),
        _checkpoint({"a": "x" * 200, "b": [1, 2, 3]}),
        {"source": "input", "step": -1},
        {"a": "1", "b": "1"},
    )
    assert harness.counter.counts == {"dynamodb.PutItem": 1} or (
        # S3 variants spill values over their 1 KB threshold: one PutObject each, in parallel.
        harness.bucket_name is not None and harness.counter.total("dynamodb") == 1
    )
    assert harness.counter.total("dynamodb") == 1


def test_put_writes_of_ten_is_one_request(harness: Harness) -> None:
    thread = new_thread()
    stored = harness.call("put", cfg(thread), _checkpoint({}), {}, {})
    harness.counter.reset()
    harness.call("put_writes", stored, [(f"ch{i}", i) for i in range(10)], "task-1", "path")
    assert harness.counter.counts == {"dynamodb.PutItem": 1}
    tup = harness.call("get_tuple", stored)
    assert [w[1:] for w in tup.pending_writes] == [(f"ch{i}", i) for i in range(10)]


def test_put_writes_of_a_fan_out_is_one_transaction(harness: Harness) -> None:
    thread = new_thread()
    stored = harness.call("put", cfg(thread), _checkpoint({}), {}, {})
    harness.counter.reset()
    writes = [("__pregel_tasks", i) for i in range(300)]
    harness.call("put_writes", stored, writes, "task-1", "path")
    assert (
        harness.counter.total("dynamodb") == 1
        and harness.counter.counts.get("dynamodb.TransactWriteItems") == 1
    )
    # A retried call (the same writes again) changes nothing and adds nothing.
    harness.call("put_writes", stored, [("__pregel_tasks", -i) for i in range(300)], "task-1", "path")
    tup = harness.call("get_tuple", stored)
    assert [w[1:] for w in tup.pending_writes] == writes


def test_get_tuple_is_one_round_trip(harness: Harness) -> None:
    thread = new_thread()
    configs = _chain(harness, thread, 5)
    for i, c in enumerate(configs):
        harness.call("put_writes", c, [("x", i), ("y", i)], f"task-{i}")
    for target in (cfg(thread), configs[2]):
        harness.counter.reset()
        tup = harness.call("get_tuple", target)
        assert tup is not None
        if target is configs[2]:
            # By id the Query does not reach the namespace's tombstone (deletion
            # finality): a GetItem of it goes in the same round trip (a Gather).
            assert harness.counter.counts == {"dynamodb.Query": 1, "dynamodb.GetItem": 1}, (
                harness.counter.counts
            )
        else:
            assert harness.counter.counts == {"dynamodb.Query": 1}, harness.counter.counts


def test_get_tuple_large_values_fetch_in_one_wave(harness: Harness) -> None:
    """Large values: one Query, then S3 GETs (bucket) or one BatchGetItem (no bucket), concurrently.

    Without a bucket, the checkpoint that introduces the values holds them:
    reading it is one Query. A later checkpoint references them: the process
    that wrote them serves them from its value cache, another process reading
    it by id fetches the holder once for all four.
    """
    thread = new_thread()
    rnd = random.Random(3)
    big = {f"c{i}": base64.b64encode(rnd.randbytes(30_000)).decode() for i in range(4)}
    stored = harness.call("put", cfg(thread), _checkpoint(big), {}, {k: "1" for k in big})
    harness.counter.reset()
    tup = harness.call("get_tuple", stored)
    assert tup.checkpoint["channel_values"] == big
    # By id: the namespace's tombstone (GetItem) is read with the Query. The
    # writer still holds the S3 values it uploaded (value cache): no GET.
    assert harness.counter.counts == {"dynamodb.Query": 1, "dynamodb.GetItem": 1}
    if harness.bucket_name is not None:
        # Another process: the four GETs, in the same wave.
        with harness.other_saver() as reader:
            harness.counter.reset()
            assert harness.call("get_tuple", stored, saver=reader).checkpoint["channel_values"] == big
            assert harness.counter.counts == {"dynamodb.Query": 1, "dynamodb.GetItem": 1, "s3.GetObject": 4}
    # A checkpoint whose large channels did not change writes no payload again.
    harness.counter.reset()
    child = harness.call("put", stored, _checkpoint(big, {k: "1" for k in big}), {}, {})
    assert harness.counter.counts == {"dynamodb.PutItem": 1}
    harness.counter.reset()
    assert harness.call("get_tuple", child).checkpoint["channel_values"] == big
    if harness.bucket_name is not None:
        assert harness.counter.counts == {"dynamodb.Query": 1, "dynamodb.GetItem": 1}
        with harness.other_saver() as reader:
            harness.counter.reset()
            assert harness.call("get_tuple", child, saver=reader).checkpoint["channel_values"] == big
            assert harness.counter.counts == {"dynamodb.Query": 1, "dynamodb.GetItem": 1, "s3.GetObject": 4}
    else:
        assert harness.counter.counts == {"dynamodb.Query": 1, "dynamodb.GetItem": 1}
        with harness.other_saver() as reader:
            harness.counter.reset()
            assert harness.call("get_tuple", child, saver=reader).checkpoint["channel_values"] == big
            assert harness.counter.counts == {
                "dynamodb.Query": 1,
                "dynamodb.GetItem": 1,
                "dynamodb.BatchGetItem": 1,
            }
            # ... once: the reader keeps them too.
            harness.counter.reset()
            assert harness.call("get_tuple", child, saver=reader).checkpoint["channel_values"] == big
            assert harness.counter.counts == {"dynamodb.Query": 1, "dynamodb.GetItem": 1}
        # The latest checkpoint's Query page also reads its parent: no fetch.
        harness.counter.reset()
        assert harness.call("get_tuple", cfg(thread)).checkpoint["channel_values"] == big
        assert harness.counter.counts == {"dynamodb.Query": 1}


def test_put_and_get_of_a_new_mid_size_value_are_one_request_each(harness: Harness) -> None:
    """docs/architecture.md §5 with default thresholds: a 20 KB value changing every step
    (a growing message list) costs one PutItem to write and one Query to read back."""
    saver = harness.make_saver(s3_threshold=64 * 1024)
    harness.attach_counter(saver)
    thread = new_thread()
    rnd = random.Random(11)
    parent = cfg(thread)
    for step in range(1, 4):
        value = base64.b64encode(rnd.randbytes(15_000)).decode()
        cp = _checkpoint({"messages": value, "small": step}, {"messages": str(step), "small": str(step)})
        harness.counter.reset()
        parent = harness.call(
            "put", parent, cp, {"step": step}, {"messages": str(step), "small": str(step)}, saver=saver
        )
        assert harness.counter.counts == {"dynamodb.PutItem": 1}, harness.counter.counts
        harness.counter.reset()
        tup = harness.call("get_tuple", cfg(thread), saver=saver)
        assert tup.checkpoint["channel_values"] == {"messages": value, "small": step}
        assert harness.counter.counts == {"dynamodb.Query": 1}, harness.counter.counts
    if harness.is_async:
        harness.loop.run(saver.aclose())
    else:
        saver.close()


def test_list_fifty_checkpoints_in_a_handful_of_requests(harness: Harness) -> None:
    thread = new_thread()
    _chain(harness, thread, 50)
    harness.counter.reset()
    tuples = harness.list(cfg(thread))
    assert len(tuples) == 50
    assert harness.counter.total() <= 3, harness.counter.counts
    harness.counter.reset()
    assert len(harness.list(cfg(thread), filter={"step": 7})) == 1
    assert harness.counter.total() <= 3, harness.counter.counts


def test_filtered_list_downloads_no_unmatched_bodies(harness: Harness) -> None:
    """Metadata is filtered first: values of non-matching checkpoints are never fetched."""
    thread = new_thread()
    rnd = random.Random(5)
    parent = cfg(thread)
    for i in range(8):
        value = base64.b64encode(rnd.randbytes(20_000)).decode()
        parent = harness.call(
            "put", parent, _checkpoint({"big": value}, {"big": str(i + 1)}), {"step": i}, {"big": str(i + 1)}
        )
    with harness.other_saver() as reader:  # a process that did not upload the values
        harness.counter.reset()
        got = harness.list(cfg(thread), filter={"step": 3}, saver=reader)
    assert [t.metadata["step"] for t in got] == [3]
    fetches = harness.counter.counts.get("s3.GetObject", 0) + harness.counter.counts.get(
        "dynamodb.BatchGetItem", 0
    )
    # Only the matching checkpoint's value: from S3, or held in its own item.
    assert fetches == (1 if harness.bucket_name is not None else 0), harness.counter.counts


def test_unchanged_large_value_is_referenced_after_a_read_and_restored_without_one(harness: Harness) -> None:
    """A new process (cold Lambda) referencing a large value it did not write.

    LangGraph reads a thread before it writes to it, and the read tells the
    saver where each version lives: the next checkpoint references the value
    (one PutItem). A put with no read before it cannot know whether the
    version's writer kept it inline (other thresholds), so it stores the
    value again (in its own item, or S3) rather than risk a dangling reference.
    """
    thread = new_thread()
    big = base64.b64encode(random.Random(7).randbytes(6000)).decode()  # ~6 KB packed: a blob, or S3
    parent = harness.call("put", cfg(thread), _checkpoint({"big": big}), {}, {"big": "1"})

    def child() -> dict:  # type: ignore[type-arg]
        return _checkpoint({"big": big}, {"big": "1"})

    reader = harness.make_saver()
    harness.attach_counter(reader)
    assert harness.call("get_tuple", parent, saver=reader) is not None
    harness.counter.reset()
    stored = harness.call("put", parent, child(), {}, {}, saver=reader)
    assert harness.counter.counts == {"dynamodb.PutItem": 1}

    blind = harness.make_saver()
    harness.attach_counter(blind)
    harness.counter.reset()
    stored = harness.call("put", stored, child(), {}, {}, saver=blind)
    # A blind put also reads its parent's lineage root (one GetItem, rare:
    # LangGraph reads or writes the parent first; see deletion finality).
    if harness.bucket_name is not None:
        assert harness.counter.counts == {"s3.PutObject": 1, "dynamodb.GetItem": 1, "dynamodb.PutItem": 1}
    else:
        assert harness.counter.counts == {"dynamodb.GetItem": 1, "dynamodb.PutItem": 1}
        item = next(
            it
            for it in scan_table(harness.table_name)
            if it["SK"]["S"] == f"|c|{stored['configurable']['checkpoint_id']}"
        )
        assert "B" in item["vals"]["M"]["big"]  # held again here, not referenced
    assert harness.call("get_tuple", stored, saver=blind).checkpoint["channel_values"] == {"big": big}
    for s in (reader, blind):
        if harness.is_async:
            harness.loop.run(s.aclose())
        else:
            s.close()
