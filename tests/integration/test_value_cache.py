"""The value cache: a large state written (or read) by this saver is read back without a GET.

S3-stored channel values are served from memory only for the very write a
reference names (its tag, ``"n"``): a thread deleted and recreated with the
same versions (so the same S3 keys), or an item written before tags existed,
is read from S3.
"""

from __future__ import annotations

import base64
import random
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver, schema
from tests.support.harness import Harness, cfg, checkpoint_of, new_thread, scan_table

S3_ONLY = pytest.mark.parametrize("harness", ["sync-s3", "async-s3-encrypted"], indirect=True)


def _value(seed: int, n: int = 20_000) -> str:
    """Poorly compressible text, well above the harness's 1 KiB S3 threshold once packed."""
    return base64.b64encode(random.Random(seed).randbytes(n)).decode()


def _gets(harness: Harness) -> int:
    return harness.counter.counts["s3.GetObject"]


def _checkpoint_item(harness: Harness, thread: str, cid: str) -> dict[str, Any]:
    pk = schema.partition_key(thread)
    sk = schema.checkpoint_sk("", cid)
    (item,) = [it for it in scan_table(harness.table_name) if it["PK"]["S"] == pk and it["SK"]["S"] == sk]
    return item


@S3_ONLY
def test_latest_read_after_put_needs_no_get(harness: Harness) -> None:
    thread, big = new_thread(), _value(1)
    stored = harness.call("put", cfg(thread), checkpoint_of({"big": big}), {}, {"big": "1"})
    assert harness.counter.counts["s3.PutObject"] == 1  # the value is in S3
    harness.counter.reset()
    tup = harness.call("get_tuple", cfg(thread))
    assert tup.checkpoint["channel_values"]["big"] == big
    assert tup.config["configurable"]["checkpoint_id"] == stored["configurable"]["checkpoint_id"]
    assert _gets(harness) == 0

    # Another saver (another process) downloads it once, then serves it too.
    with harness.other_saver() as reader:
        harness.counter.reset()
        for _ in range(2):
            again = harness.call("get_tuple", cfg(thread), saver=reader)
            assert again.checkpoint["channel_values"]["big"] == big
        assert _gets(harness) == 1


@S3_ONLY
def test_unchanged_value_keeps_its_tag(harness: Harness) -> None:
    """A later checkpoint that only references the value carries the same tag: no GET for it either."""
    thread, big = new_thread(), _value(2)
    first = harness.call(
        "put",
        cfg(thread),
        checkpoint_of({"big": big, "n": 1}, {"big": "1", "n": "1"}),
        {},
        {"big": "1", "n": "1"},
    )
    harness.call("get_tuple", cfg(thread))
    second = harness.call(
        "put", first, checkpoint_of({"big": big, "n": 2}, {"big": "1", "n": "2"}), {}, {"n": "2"}
    )
    refs = [
        _checkpoint_item(harness, thread, c["configurable"]["checkpoint_id"])[schema.ATTR.VALUES]["M"]["big"][
            "M"
        ]
        for c in (first, second)
    ]
    assert refs[0]["l"]["S"] == "s3" and len(refs[0]["n"]["S"]) == 16
    assert refs[1] == refs[0]
    harness.counter.reset()
    tup = harness.call("get_tuple", cfg(thread))
    assert tup.checkpoint["channel_values"] == {"big": big, "n": 2}
    assert _gets(harness) == 0


@S3_ONLY
def test_recreated_thread_with_the_same_versions_is_read_fresh(harness: Harness) -> None:
    """Same thread, same channel, same version, so the same S3 key: the cache must not answer."""
    thread, old, new = new_thread(), _value(3), _value(4)
    harness.call("put", cfg(thread), checkpoint_of({"big": old}), {}, {"big": "1"})
    assert harness.call("get_tuple", cfg(thread)).checkpoint["channel_values"]["big"] == old

    with harness.other_saver() as other:  # another process deletes the thread and starts it again
        harness.call("delete_thread", thread, saver=other)
        harness.call("put", cfg(thread), checkpoint_of({"big": new}), {}, {"big": "1"}, saver=other)
    harness.counter.reset()
    tup = harness.call("get_tuple", cfg(thread))
    assert tup.checkpoint["channel_values"]["big"] == new
    assert _gets(harness) == 1


@S3_ONLY
def test_untagged_reference_is_always_fetched(harness: Harness) -> None:
    """An item from before write tags (no ``"n"``): correct, and never served from memory."""
    thread, big = new_thread(), _value(5)
    stored = harness.call("put", cfg(thread), checkpoint_of({"big": big}), {}, {"big": "1"})
    item = _checkpoint_item(harness, thread, stored["configurable"]["checkpoint_id"])
    boto3.client("dynamodb").update_item(
        TableName=harness.table_name,
        Key={"PK": item["PK"], "SK": item["SK"]},
        UpdateExpression="REMOVE #v.#c.#n",
        ExpressionAttributeNames={"#v": schema.ATTR.VALUES, "#c": "big", "#n": "n"},
    )
    with harness.other_saver() as reader:
        harness.counter.reset()
        for _ in range(2):
            assert (
                harness.call("get_tuple", cfg(thread), saver=reader).checkpoint["channel_values"]["big"]
                == big
            )
        assert _gets(harness) == 2


@S3_ONLY
def test_cache_off(harness: Harness) -> None:
    with harness.other_saver(value_cache_bytes=0) as saver:
        thread, big = new_thread(), _value(6)
        harness.call("put", cfg(thread), checkpoint_of({"big": big}), {}, {"big": "1"}, saver=saver)
        harness.counter.reset()
        assert harness.call("get_tuple", cfg(thread), saver=saver).checkpoint["channel_values"]["big"] == big
        assert _gets(harness) == 1


@pytest.mark.parametrize("cls", [DynamoDBSaver, AsyncDynamoDBSaver])
@pytest.mark.parametrize("bad", [-1, True, 1.5, "32MB"])
def test_bad_cache_size_is_refused(cls: type, bad: Any) -> None:
    with pytest.raises(ValueError, match="value_cache_bytes"):
        cls(table_name="t", value_cache_bytes=bad)


@S3_ONLY
def test_delete_thread_gives_the_memory_back(harness: Harness) -> None:
    keep, gone = new_thread(), new_thread()
    for thread, seed in ((keep, 7), (gone, 8)):
        harness.call("put", cfg(thread), checkpoint_of({"big": _value(seed)}), {}, {"big": "1"})
    cache = harness.saver.caches.value_cache
    assert len(cache) == 2
    harness.call("delete_thread", gone)
    assert len(cache) == 1
    assert harness.call("get_tuple", cfg(gone)) is None
    harness.counter.reset()
    assert harness.call("get_tuple", cfg(keep)).checkpoint["channel_values"]["big"] == _value(7)
    assert _gets(harness) == 0


@S3_ONLY
def test_a_reused_version_reads_as_without_the_cache(harness: Harness) -> None:
    """A caller that stores other values under one version (LangGraph never does; the conformance
    suite does): S3 keeps the last upload under that key, and the writer reads what any reader reads."""
    thread, parent, stored = new_thread(), None, []
    for i in range(3):
        config = cfg(thread) if parent is None else parent
        parent = harness.call("put", config, checkpoint_of({"big": _value(10 + i)}), {}, {"big": "1"})
        stored.append(parent)
    with harness.other_saver() as reader:
        for config in stored:
            mine = harness.call("get_tuple", config).checkpoint["channel_values"]
            theirs = harness.call("get_tuple", config, saver=reader).checkpoint["channel_values"]
            assert mine == theirs == {"big": _value(12)}


# ------------------------------------------------------------- held values

HELD = pytest.mark.parametrize("harness", ["sync", "async"], indirect=True)


def _held_chain(harness: Harness, thread: str, big: str, steps: int) -> list[Any]:
    """A held value (no bucket: above ``inline_threshold``) that stays unchanged for ``steps`` checkpoints."""
    configs = [
        harness.call(
            "put",
            cfg(thread),
            checkpoint_of({"big": big, "n": 0}, {"big": "1", "n": "0"}),
            {},
            {"big": "1", "n": "0"},
        )
    ]
    for i in range(1, steps + 1):
        cp = checkpoint_of({"big": big, "n": i}, {"big": "1", "n": str(i)})
        configs.append(harness.call("put", configs[-1], cp, {}, {"n": str(i)}))
        harness.call("put_writes", configs[-1], [("n", i)], f"task-{i}")
    return configs


def _queries_only(harness: Harness) -> dict[str, int]:
    return {k: v for k, v in harness.counter.counts.items() if v}


@HELD
def test_unchanged_held_value_off_the_page_needs_no_fetch(harness: Harness) -> None:
    """The holder is many items below the latest checkpoint: the writer reads it from memory, a reader once."""
    thread, big = new_thread(), _value(20, 6_000)
    configs = _held_chain(harness, thread, big, steps=12)
    refs = [
        _checkpoint_item(harness, thread, c["configurable"]["checkpoint_id"])[schema.ATTR.VALUES]["M"]["big"]
        for c in configs
    ]
    assert "B" in refs[0]  # held by the first checkpoint ...
    assert {r["M"]["l"]["S"] for r in refs[1:]} == {"c"}  # ... referenced, with one write tag
    assert len({r["M"]["n"]["S"] for r in refs[1:]}) == 1
    harness.counter.reset()
    assert harness.call("get_tuple", cfg(thread)).checkpoint["channel_values"] == {"big": big, "n": 12}
    assert _queries_only(harness) == {"dynamodb.Query": 1}

    with harness.other_saver() as reader:
        harness.counter.reset()
        assert harness.call("get_tuple", cfg(thread), saver=reader).checkpoint["channel_values"]["big"] == big
        assert _queries_only(harness) == {"dynamodb.Query": 1, "dynamodb.BatchGetItem": 1}
        harness.counter.reset()
        again = harness.call("get_tuple", cfg(thread), saver=reader)
        assert again.checkpoint["channel_values"]["big"] == big
        assert _queries_only(harness) == {"dynamodb.Query": 1}
        # What the reader writes next carries the tag it read.
        nxt = harness.call(
            "put",
            again.config,
            checkpoint_of({"big": big, "n": 13}, {"big": "1", "n": "13"}),
            {},
            {"n": "13"},
            saver=reader,
        )
        ref = _checkpoint_item(harness, thread, nxt["configurable"]["checkpoint_id"])[schema.ATTR.VALUES][
            "M"
        ]["big"]
        assert ref == refs[-1]


@HELD
def test_recreated_thread_with_the_same_held_versions_is_read_fresh(harness: Harness) -> None:
    """Another process deletes the thread and writes it again, same versions, other bytes: never the old ones.

    (Checkpoint ids of a deleted lineage stay dead, so a re-created thread's
    holders are other items, whose references carry other tags.)
    """
    thread, old, new = new_thread(), _value(21, 6_000), _value(22, 6_000)
    _held_chain(harness, thread, old, steps=10)
    assert harness.call("get_tuple", cfg(thread)).checkpoint["channel_values"]["big"] == old
    with harness.other_saver() as other:
        harness.call("delete_thread", thread, saver=other)
        harness.call(
            "put", cfg(thread), checkpoint_of({"big": new}, {"big": "1"}), {}, {"big": "1"}, saver=other
        )
        harness.call(
            "put",
            cfg(thread),
            checkpoint_of({"big": new, "n": 1}, {"big": "1", "n": "1"}),
            {},
            {"n": "1"},
            saver=other,
        )
    assert harness.call("get_tuple", cfg(thread)).checkpoint["channel_values"] == {"big": new, "n": 1}


@HELD
def test_a_re_homed_holder_is_still_served(harness: Harness) -> None:
    """Prune deletes the holder and moves its value to a blob item: the writer needs no fetch, a reader one."""
    thread, big = new_thread(), _value(23, 6_000)
    _held_chain(harness, thread, big, steps=3)
    harness.call("prune", [thread], keep_last=1)
    harness.counter.reset()
    assert harness.call("get_tuple", cfg(thread)).checkpoint["channel_values"] == {"big": big, "n": 3}
    assert _queries_only(harness) == {"dynamodb.Query": 1}
    with harness.other_saver() as reader:
        assert harness.call("get_tuple", cfg(thread), saver=reader).checkpoint["channel_values"]["big"] == big


@HELD
def test_delete_thread_forgets_held_values(harness: Harness) -> None:
    thread = new_thread()
    _held_chain(harness, thread, _value(24, 6_000), steps=1)
    cache = harness.saver.caches.value_cache
    assert len(cache) >= 1
    harness.call("delete_thread", thread)
    assert len(cache) == 0
