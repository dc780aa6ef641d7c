"""Contract details other savers get wrong (docs/architecture.md §2), per saver variant."""

from __future__ import annotations

import base64
import random

import boto3
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import (
    CorruptPayloadError,
    KeyTooLongError,
    MissingPayloadError,
    PayloadTooLargeError,
    UnsupportedFormatError,
    schema,
)
from tests.support.harness import Harness, cfg, new_thread, s3_objects, scan_table


def ckpt(values: dict | None = None, versions: dict | None = None) -> dict:  # type: ignore[type-arg]
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = values or {}
    cp["channel_versions"] = versions if versions is not None else {k: "1" for k in (values or {})}
    return cp  # type: ignore[return-value]


def test_missing_thread_id_names_the_field(harness: Harness) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        harness.call("get_tuple", {"configurable": {}})
    with pytest.raises(ValueError, match="thread_id"):
        harness.call("put", {"configurable": {"checkpoint_ns": ""}}, ckpt(), {}, {})
    with pytest.raises(TypeError, match="thread_id"):
        harness.call("get_tuple", {"configurable": {"thread_id": ["x"]}})
    with pytest.raises(ValueError, match="checkpoint_id"):
        harness.call("put_writes", cfg(new_thread()), [("a", 1)], "task")
    with pytest.raises(TypeError, match="config"):
        harness.call("get_tuple", None)


@pytest.mark.parametrize(
    "thread_id,ns",
    [("a|b", "x|y:z"), ("a%7Cb", "x%7Cy:z"), ("tenant#1:thread/é", "子图:1|2"), ("🙂 %25 |", "")],
)
def test_ids_with_separators_and_unicode_round_trip(harness: Harness, thread_id: str, ns: str) -> None:
    stored = harness.call("put", cfg(thread_id, ns), ckpt({"v": thread_id + ns}), {"step": 1}, {"v": "1"})
    assert stored["configurable"] == {
        "thread_id": thread_id,
        "checkpoint_ns": ns,
        "checkpoint_id": stored["configurable"]["checkpoint_id"],
    }
    tup = harness.call("get_tuple", cfg(thread_id, ns))
    assert tup.checkpoint["channel_values"] == {"v": thread_id + ns}
    assert tup.config["configurable"]["thread_id"] == thread_id
    assert tup.config["configurable"]["checkpoint_ns"] == ns
    listed = harness.list({"configurable": {"thread_id": thread_id}})
    assert [t.config["configurable"]["checkpoint_ns"] for t in listed] == [ns]


def test_escaped_lookalikes_do_not_collide(harness: Harness) -> None:
    for tid in ("a|b", "a%7Cb", "a%257Cb"):
        harness.call("put", cfg(tid, "n|s"), ckpt({"who": tid}), {}, {"who": "1"})
    for tid in ("a|b", "a%7Cb", "a%257Cb"):
        assert harness.call("get_tuple", cfg(tid, "n|s")).checkpoint["channel_values"] == {"who": tid}
        assert harness.call("get_tuple", cfg(tid, "n%7Cs")) is None


def test_key_too_long_is_a_clear_error(harness: Harness) -> None:
    with pytest.raises(KeyTooLongError, match="thread_id"):
        harness.call("put", cfg("t" * 3000), ckpt(), {}, {})
    with pytest.raises(KeyTooLongError, match="checkpoint_ns"):  # a longer one is digested in keys
        harness.call("put", cfg("t", "n" * (schema.MAX_ID_BYTES + 1)), ckpt(), {}, {})


def test_oversize_without_bucket_writes_nothing(harness: Harness) -> None:
    if harness.bucket_name is not None:
        saver = harness.make_saver(bucket_name=None)
    else:
        saver = harness.saver
    thread = new_thread()
    huge = base64.b64encode(random.Random(1).randbytes(600_000)).decode()
    before = scan_table(harness.table_name)
    with pytest.raises(PayloadTooLargeError, match="bucket_name"):
        harness.call("put", cfg(thread), ckpt({"big": huge}), {}, {"big": "1"}, saver=saver)
    stored = harness.call("put", cfg(thread), ckpt({}), {}, {}, saver=saver)
    with pytest.raises(PayloadTooLargeError, match="bucket_name"):
        harness.call("put_writes", stored, [("big", huge)], "task", saver=saver)
    after = scan_table(harness.table_name)
    new = [it for it in after if it not in before]
    assert len(new) == 1 and new[0][schema.ATTR.KIND]["S"] == "c"  # only the small checkpoint


def test_over_max_payload_size_is_refused_before_writing(harness: Harness) -> None:
    """A payload a reader would refuse is not stored: the thread stays readable at its last checkpoint."""
    with harness.other_saver(max_payload_size=50_000) as saver:
        thread = new_thread()
        stored = harness.call("put", cfg(thread), ckpt({"small": "x" * 100}), {}, {"small": "1"}, saver=saver)
        big = "y" * 60_000  # compresses to almost nothing: the limit is on the serialized size
        before_items = scan_table(harness.table_name)
        before_objects = s3_objects(harness.bucket_name) if harness.bucket_name else {}
        with pytest.raises(
            PayloadTooLargeError, match=r"channel 'big'.*max_payload_size \(50,000 bytes\).*nothing"
        ):
            harness.call("put", stored, ckpt({"big": big}), {}, {"big": "1"}, saver=saver)
        with pytest.raises(PayloadTooLargeError, match=r"write 'big' of task 'task-1'.*max_payload_size"):
            harness.call("put_writes", stored, [("ok", 1), ("big", big)], "task-1", saver=saver)
        with pytest.raises(PayloadTooLargeError, match="metadata"):
            harness.call("put", stored, ckpt(), {"note": big}, {}, saver=saver)
        assert scan_table(harness.table_name) == before_items
        assert (s3_objects(harness.bucket_name) if harness.bucket_name else {}) == before_objects
        latest = harness.call("get_tuple", cfg(thread), saver=saver)
        assert latest.config["configurable"]["checkpoint_id"] == stored["configurable"]["checkpoint_id"]
        assert latest.pending_writes == []
        # Just under the limit is stored and read back (by a saver with the same limit).
        fits = "z" * 49_000
        harness.call("put", stored, ckpt({"fits": fits}), {}, {"fits": "1"}, saver=saver)
        assert harness.call("get_tuple", cfg(thread), saver=saver).checkpoint["channel_values"] == {
            "fits": fits
        }


def test_absent_is_not_none(harness: Harness) -> None:
    thread = new_thread()
    cp = ckpt({"real_none": None, "present": 1}, {"real_none": "1", "present": "1", "absent": "1"})
    stored = harness.call("put", cfg(thread), cp, {}, {"real_none": "1", "present": "1", "absent": "1"})
    values = harness.call("get_tuple", stored).checkpoint["channel_values"]
    assert values == {"real_none": None, "present": 1}
    assert "absent" not in values


def test_metadata_round_trips_and_filters(harness: Harness) -> None:
    thread = new_thread()
    md = {"source": "loop", "step": 3, "score": 0.25, "nested": {"a": [1, 2.5]}, "flag": True}
    config = {
        "configurable": {"thread_id": thread, "checkpoint_ns": "", "user_key": "u1"},
        "metadata": {"run_id": "run-9"},
    }
    stored = harness.call("put", config, ckpt(), md, {})
    got = harness.call("get_tuple", stored).metadata
    assert got == {**md, "user_key": "u1", "run_id": "run-9"}
    assert type(got["score"]) is float and type(got["step"]) is int
    assert [
        t.metadata["step"] for t in harness.list(cfg(thread), filter={"score": 0.25, "user_key": "u1"})
    ] == [3]
    assert harness.list(cfg(thread), filter={"score": 0.5}) == []


def test_write_semantics_first_wins_special_overwrites_and_order(harness: Harness) -> None:
    thread = new_thread()
    stored = harness.call("put", cfg(thread), ckpt(), {}, {})
    writes = [(f"c{i}", i) for i in range(12)]
    harness.call("put_writes", stored, writes, "task-b", "~path-b")
    harness.call("put_writes", stored, [("c0", "second")], "task-b", "~path-b")  # first write wins
    harness.call("put_writes", stored, [("a", 1)], "task-a", "~path-a")
    harness.call("put_writes", stored, [("__error__", "e1")], "task-c", "~path-c")
    harness.call("put_writes", stored, [("__error__", "e2")], "task-c", "~path-c")  # special: overwrite
    pending = harness.call("get_tuple", stored).pending_writes
    assert pending[0] == ("task-a", "a", 1)
    # idx sorted numerically: c2 before c10
    assert [w[1] for w in pending[1:13]] == [f"c{i}" for i in range(12)]
    assert pending[1] == ("task-b", "c0", 0)
    assert pending[13] == ("task-c", "__error__", "e2")
    assert len(pending) == 14


def test_list_semantics(harness: Harness) -> None:
    thread = new_thread()
    ids = {}
    for ns in ("", "child:1"):
        parent = cfg(thread, ns)
        for step in range(4):
            parent = harness.call(
                "put", parent, ckpt(), {"step": step, "source": "loop" if step % 2 else "input"}, {}
            )
            ids[(ns, step)] = parent["configurable"]["checkpoint_id"]
    root = harness.list(cfg(thread))
    assert [t.metadata["step"] for t in root] == [3, 2, 1, 0]
    everything = harness.list({"configurable": {"thread_id": thread}})
    assert len(everything) == 8
    assert [t.checkpoint["id"] for t in everything] == sorted(
        (t.checkpoint["id"] for t in everything), reverse=True
    )
    # before from another namespace is only a bound, never looked up
    bound = cfg(thread, "child:1", ids[("child:1", 2)])
    got = harness.list(cfg(thread), before=bound)
    assert {t.checkpoint["id"] for t in got} == {
        i for (ns, s), i in ids.items() if ns == "" and i < ids[("child:1", 2)]
    }
    # limit counts matches only
    assert [t.metadata["step"] for t in harness.list(cfg(thread), filter={"source": "input"}, limit=1)] == [2]
    assert harness.list(cfg(thread), limit=0) == []


def test_missing_external_payload_is_a_clear_error(harness: Harness) -> None:
    """A pointer to a deleted S3 object (or blob item, without a bucket) raises, naming it."""
    thread = new_thread()
    big = base64.b64encode(random.Random(2).randbytes(6000)).decode()
    stored = harness.call("put", cfg(thread), ckpt({"big": big}), {}, {"big": "1"})
    if harness.bucket_name is not None:
        s3 = boto3.client("s3")
        listing = s3.list_objects_v2(
            Bucket=harness.bucket_name, Prefix=schema.s3_thread_prefix("checkpoints/", thread)
        )
        for obj in listing["Contents"]:
            s3.delete_object(Bucket=harness.bucket_name, Key=obj["Key"])
        pattern = "s3://"
    else:
        # Held by the checkpoint that introduced it; a later one references
        # it there. Delete the holder behind the library's back.
        holder = stored
        stored = harness.call("put", holder, ckpt({"big": big}), {}, {})
        ddb = boto3.client("dynamodb")
        key = schema.checkpoint_sk("", holder["configurable"]["checkpoint_id"])
        ddb.delete_item(
            TableName=harness.table_name, Key={"PK": {"S": schema.partition_key(thread)}, "SK": {"S": key}}
        )
        pattern = "item"
    # Read from another process: the writer itself still holds the S3 value
    # it uploaded (its value cache) and would not need the object.
    with harness.other_saver() as reader, pytest.raises(MissingPayloadError, match=pattern):
        harness.call("get_tuple", stored, saver=reader)


def test_corrupt_and_future_items_are_refused(harness: Harness) -> None:
    thread = new_thread()
    stored = harness.call("put", cfg(thread), ckpt({"v": 1}), {}, {"v": "1"})
    ddb = boto3.client("dynamodb")
    key = {
        "PK": {"S": schema.partition_key(thread)},
        "SK": {"S": schema.checkpoint_sk("", stored["configurable"]["checkpoint_id"])},
    }
    ddb.update_item(
        TableName=harness.table_name,
        Key=key,
        UpdateExpression="SET vals.v = :b",
        ExpressionAttributeValues={":b": {"B": b"\x01n\x07msgpack\xc1\xc1"}},
    )
    with pytest.raises(CorruptPayloadError, match="channel 'v'"):
        harness.call("get_tuple", stored)
    ddb.update_item(
        TableName=harness.table_name,
        Key=key,
        UpdateExpression="SET vals.v = :b",
        ExpressionAttributeValues={":b": {"B": b"\x01"}},
    )
    with pytest.raises(CorruptPayloadError, match="truncated"):
        harness.call("get_tuple", stored)
    ddb.update_item(
        TableName=harness.table_name,
        Key=key,
        UpdateExpression="SET f = :f",
        ExpressionAttributeValues={":f": {"N": "99"}},
    )
    with pytest.raises(UnsupportedFormatError, match="format version 99"):
        harness.call("get_tuple", stored)
