"""Where values live: held by the checkpoint that introduced them, re-homed when it goes.

A new channel version above ``inline_threshold`` (and up to ``s3_threshold``)
is stored once, in the item of the checkpoint that introduces it; later
checkpoints reference it there (``{"l": "c", "c": <holder id>}``). Deleting
the holder (prune, delete_for_runs, reaping) first moves the value to the
blob item or S3 object of its version, where readers look next.
"""

from __future__ import annotations

import base64
import random
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import MissingPayloadError, schema
from tests.integration.test_delta import reading
from tests.support.harness import Harness, cfg, checkpoint_of, new_thread, scan_table

#: Writer thresholds: 6 KB values are held in checkpoint items, even with a bucket.
WRITER = {"inline_threshold": 1024, "s3_threshold": 64 * 1024}


def _value(seed: int, n: int = 6000) -> str:
    return base64.b64encode(random.Random(seed).randbytes(n)).decode()


def _saver(harness: Harness, **overrides: Any) -> Any:
    kw = dict(WRITER)
    if harness.bucket_name is None:
        kw.pop("s3_threshold")
    kw.update(overrides)
    saver = harness.make_saver(**kw)
    harness.attach_counter(saver)
    return saver


def _close(harness: Harness, saver: Any) -> None:
    if harness.is_async:
        harness.loop.run(saver.aclose())
    else:
        saver.close()


def _thread_items(harness: Harness, thread: str) -> list[dict[str, Any]]:
    pk = schema.partition_key(thread)
    return [it for it in scan_table(harness.table_name) if it["PK"]["S"] == pk]


def _build(harness: Harness, saver: Any, thread: str, big: str, steps: int = 4) -> list[dict[str, Any]]:
    """Step 1 introduces ``big``; later steps change only a small channel."""
    configs = []
    parent = cfg(thread)
    for step in range(1, steps + 1):
        cp = checkpoint_of({"big": big, "n": step}, {"big": "1", "n": str(step)})
        new = {"big": "1", "n": str(step)} if step == 1 else {"n": str(step)}
        parent = harness.call("put", parent, cp, {"step": step}, new, saver=saver)
        configs.append(parent)
    return configs


def test_later_checkpoints_reference_the_holder(harness: Harness) -> None:
    saver = _saver(harness)
    thread = new_thread()
    big = _value(1)
    configs = _build(harness, saver, thread, big)
    holder = configs[0]["configurable"]["checkpoint_id"]
    items = {it["SK"]["S"]: it for it in _thread_items(harness, thread)}
    assert not [sk for sk in items if "|v|" in sk], "no blob item: the holder keeps the value"
    for c in configs[1:]:
        ref = items[schema.checkpoint_sk("", c["configurable"]["checkpoint_id"])]["vals"]["M"]["big"]["M"]
        assert ref["l"]["S"] == "c" and ref["c"]["S"] == holder
    # Items with such references declare format 2; the holder stays format 1.
    assert items[schema.checkpoint_sk("", holder)]["f"]["N"] == "1"
    assert items[schema.checkpoint_sk("", configs[-1]["configurable"]["checkpoint_id"])]["f"]["N"] == "2"
    # Every checkpoint reads back whole, in a fresh process too.
    fresh = _saver(harness)
    for i, c in enumerate(configs, start=1):
        assert harness.call("get_tuple", c, saver=fresh).checkpoint["channel_values"] == {"big": big, "n": i}
    assert [t.checkpoint["channel_values"]["big"] == big for t in harness.list(cfg(thread))] == [True] * 4
    _close(harness, saver)
    _close(harness, fresh)


@pytest.mark.parametrize("how", ["whole", "outline"])
def test_prune_rehomes_held_values_before_deleting_the_holder(
    harness: Harness, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``outline``: the thread read as the table-wide jobs read one over their budget."""
    for rehome_to in ["blob", "s3"] if harness.bucket_name else ["blob"]:
        _prune_rehomes(harness, rehome_to, how, monkeypatch)


def _prune_rehomes(harness: Harness, rehome_to: str, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    saver = _saver(harness)
    thread = new_thread()
    big = _value(2)
    configs = _build(harness, saver, thread, big)
    # The pruner may run with other thresholds (another deployment): a
    # value over its S3 threshold is re-homed to S3.
    pruner = _saver(harness, **({"s3_threshold": 1024} if rehome_to == "s3" else {}))
    with reading(how, monkeypatch):
        res = harness.call("prune", [thread], keep_last=1, saver=pruner)
    assert res.values_rehomed == 1 and res.checkpoints_deleted == 3
    items = _thread_items(harness, thread)
    blobs = [it for it in items if it["t"]["S"] == schema.BLOB_ITEM]
    assert len(blobs) == (1 if rehome_to == "blob" else 0)
    if rehome_to == "s3":
        prefix = schema.s3_thread_prefix("checkpoints/", thread)
        listing = boto3.client("s3").list_objects_v2(Bucket=harness.bucket_name, Prefix=prefix)
        keys = [o["Key"] for o in listing.get("Contents", []) if "/v/big/" in o["Key"]]
        assert len(keys) == 1
        # Referenced (through the kept checkpoint's reference): never swept.
        harness.call("sweep_orphans", grace_seconds=0, saver=pruner)
    latest = configs[-1]
    for reader in (saver, _saver(harness), pruner):
        assert harness.call("get_tuple", latest, saver=reader).checkpoint["channel_values"] == {
            "big": big,
            "n": 4,
        }
    # A writer that still believes the holder exists keeps working: its new
    # checkpoint references the holder, and readers find the re-homed value.
    nxt = harness.call(
        "put",
        latest,
        checkpoint_of({"big": big, "n": 5}, {"big": "1", "n": "5"}),
        {},
        {"n": "5"},
        saver=saver,
    )
    assert harness.call("get_tuple", nxt, saver=pruner).checkpoint["channel_values"] == {"big": big, "n": 5}
    # A copy takes the re-homed value along.
    target = new_thread()
    harness.call("copy_thread", thread, target, saver=saver)
    harness.call("delete_thread", thread, saver=saver)
    got = harness.call("get_tuple", cfg(target), saver=_saver(harness))
    assert got.checkpoint["channel_values"] == {"big": big, "n": 5}
    # Pruning again re-homes nothing more and deletes nothing the thread needs.
    res = harness.call("prune", [target], keep_last=1, saver=pruner)
    assert res.values_rehomed == 0
    assert harness.call("get_tuple", cfg(target), saver=pruner).checkpoint["channel_values"]["big"] == big
    _close(harness, pruner)
    _close(harness, saver)


def test_a_held_value_deleted_behind_the_library_is_a_clear_error(harness: Harness) -> None:
    saver = _saver(harness)
    thread = new_thread()
    configs = _build(harness, saver, thread, _value(3), steps=2)
    holder = schema.checkpoint_sk("", configs[0]["configurable"]["checkpoint_id"])
    boto3.client("dynamodb").delete_item(
        TableName=harness.table_name, Key={"PK": {"S": schema.partition_key(thread)}, "SK": {"S": holder}}
    )
    with pytest.raises(MissingPayloadError, match="missing"):
        harness.call("get_tuple", configs[1], saver=_saver(harness))
    _close(harness, saver)


def test_an_item_over_the_limit_moves_its_largest_values_out(harness: Harness) -> None:
    """Several new large versions in one step: what does not fit in one item
    goes to blob items (no bucket) or S3; every value reads back."""
    saver = _saver(harness, s3_threshold=400 * 1024) if harness.bucket_name else _saver(harness)
    thread = new_thread()
    values = {f"c{i}": _value(10 + i, 120_000) for i in range(4)}  # ~120 KB packed each
    stored = harness.call(
        "put", cfg(thread), checkpoint_of(values), {}, {k: "1" for k in values}, saver=saver
    )
    item = next(it for it in _thread_items(harness, thread) if it["t"]["S"] == schema.CHECKPOINT_ITEM)
    held = [ch for ch, av in item["vals"]["M"].items() if "B" in av]
    assert 1 <= len(held) < len(values)
    assert harness.call("get_tuple", stored, saver=_saver(harness)).checkpoint["channel_values"] == values
    _close(harness, saver)


def test_putting_the_same_checkpoint_again_never_references_itself(harness: Harness) -> None:
    """A checkpoint put twice (a retried step) with the value unchanged the
    second time: the process knows this checkpoint holds the value, but the
    new item replaces that one, so it must hold the value again."""
    saver = _saver(harness)
    thread = new_thread()
    big = _value(21)
    cp = checkpoint_of({"big": big}, {"big": "1"})
    stored = harness.call("put", cfg(thread), cp, {}, {"big": "1"}, saver=saver)
    again = harness.call("put", cfg(thread), cp, {}, {}, saver=saver)
    assert again == stored
    assert harness.call("get_tuple", stored, saver=_saver(harness)).checkpoint["channel_values"] == {
        "big": big
    }
    _close(harness, saver)
