"""Ids too long to keep whole in a key: digested there, whole in the item, every operation works.

DynamoDB takes sort keys of 1,024 bytes and index keys of 2,048; S3 object
keys of 1,024 (UTF-8, after this store's percent-encoding, which triples a
CJK character). A deep subgraph's namespace, a user's long thread id, a
long task id, channel name or run id passed those limits and the request
failed on AWS (moto took most of them). Here each such id is used through
every saver variant, with the strict AWS-rules layer checking every request
(``tests/support/strict_aws.py``): the store keys them with a readable start
and a digest (``schema.fit``), and reads give back the ids whole.
"""

from __future__ import annotations

import base64
import random
import uuid
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import CorruptPayloadError, KeyTooLongError, schema
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.harness import Harness, cfg, checkpoint_of, new_thread, s3_objects, scan_table

#: A namespace 24 subgraphs deep (``node:<task id>`` per level, as LangGraph nests them):
#: 1,100 bytes escaped, over a sort key alone.
DEEP_NS = "|".join(f"level_{i}:{uuid.UUID(int=i)}" for i in range(24))
#: 120 CJK characters: 360 bytes, 1,080 once percent-encoded for S3.
CJK = "線程" * 60
LONG_TASK = "task-" + "t" * 1_500
LONG_CHANNEL = "channel-" + "c" * 1_200
LONG_RUN = "run-" + "r" * 2_100


def _big(n: int = 3_000) -> str:
    """Incompressible text over the variants' 1,024-byte S3 threshold: an S3 object or a blob item."""
    return base64.b64encode(random.Random(n).randbytes(n))[:n].decode()


def _thread(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _own_items(harness: Harness, thread_id: str, saver: Any = None) -> list[dict[str, Any]]:
    pk = (saver or harness.saver).partition_key(thread_id)
    return [it for it in scan_table(harness.table_name) if it[ATTR.PK]["S"] == pk]


def _own_objects(harness: Harness, thread_id: str) -> list[str]:
    if harness.bucket_name is None:
        return []
    prefixes = harness.saver.s3_thread_prefixes(thread_id)
    return [k for k in s3_objects(harness.bucket_name) if k.startswith(prefixes)]


def _store_long_thread(harness: Harness, thread_id: str, ns: str = DEEP_NS) -> tuple[dict[str, Any], Any]:
    """Two checkpoints (the second unchanged in the big channel) and writes of a long task."""
    meta = {"source": "loop", "step": 1, "run_id": LONG_RUN}
    first = checkpoint_of({LONG_CHANNEL: _big(), "small": 1}, {LONG_CHANNEL: "1", "small": "1"})
    c1 = harness.call("put", cfg(thread_id, ns), first, meta, {LONG_CHANNEL: "1", "small": "1"})
    second = checkpoint_of({LONG_CHANNEL: _big(), "small": 2}, {LONG_CHANNEL: "1", "small": "2"})
    c2 = harness.call("put", c1, second, {**meta, "step": 2}, {"small": "2"})
    harness.call("put_writes", c2, [(LONG_CHANNEL, _big(2_000)), ("small", 3)], LONG_TASK, "path")
    return c2, second


def test_long_ids_round_trip_through_every_read(harness: Harness) -> None:
    thread_id = _thread(CJK)
    c2, second = _store_long_thread(harness, thread_id)
    with harness.other_saver() as fresh:  # from the store, not this saver's caches
        got = harness.call("get_tuple", cfg(thread_id, DEEP_NS), saver=fresh)
        assert got is not None
        assert got.config["configurable"] == {
            "thread_id": thread_id,
            "checkpoint_ns": DEEP_NS,
            "checkpoint_id": second["id"],
        }
        assert got.checkpoint["channel_values"] == {LONG_CHANNEL: _big(), "small": 2}
        assert [(t, c) for t, c, _ in got.pending_writes] == [(LONG_TASK, LONG_CHANNEL), (LONG_TASK, "small")]
        assert got.pending_writes[0][2] == _big(2_000)
        assert got.metadata["run_id"] == LONG_RUN
        by_id = harness.call("get_tuple", c2, saver=fresh)
        assert by_id is not None and by_id.checkpoint["id"] == second["id"]
        listed = harness.list(cfg(thread_id, DEEP_NS), saver=fresh)
        assert [t.checkpoint["id"] for t in listed] == [second["id"], listed[1].checkpoint["id"]]
        assert listed[1].checkpoint["channel_values"] == {LONG_CHANNEL: _big(), "small": 1}
        every_ns = harness.list({"configurable": {"thread_id": thread_id}}, saver=fresh)
        assert {t.config["configurable"]["checkpoint_ns"] for t in every_ns} == {DEEP_NS}
    # What made it fit: digested keys, the ids whole in their items, nothing over a limit.
    items = _own_items(harness, thread_id)
    digested = [it for it in items if schema.is_digested(it[ATTR.SK]["S"])]
    assert digested and all(it[ATTR.FORMAT]["N"] == str(schema.DIGESTED_FORMAT_VERSION) for it in digested)
    assert all(it[ATTR.KEY]["M"]["ns"]["S"] == DEEP_NS for it in digested)
    assert max(len(it[ATTR.SK]["S"].encode()) for it in items) <= schema.MAX_KEY_BYTES
    assert all(len(it[ATTR.RUN_ID]["S"].encode()) <= schema.MAX_PK_BYTES for it in items if ATTR.RUN_ID in it)
    for key in _own_objects(harness, thread_id):
        assert len(key.encode()) <= schema.MAX_S3_KEY_BYTES
    if harness.bucket_name is not None:
        assert _own_objects(harness, thread_id), "the big values went to S3 under the long thread"


def test_ids_that_fit_keep_the_keys_they_always_had(harness: Harness) -> None:
    """A namespace of 941 escaped bytes, 36-character ids: the layout of stores written before digests."""
    thread_id = new_thread()
    ns = "n" * schema.NS_KEEP_BYTES
    stored = harness.call("put", cfg(thread_id, ns), checkpoint_of({"a": 1}), {}, {"a": "1"})
    cid = stored["configurable"]["checkpoint_id"]
    task = str(uuid.uuid4())
    harness.call("put_writes", stored, [("a", 2)], task)
    sks = {it[ATTR.SK]["S"] for it in _own_items(harness, thread_id)}
    assert f"{ns}|c|{cid}" in sks and f"{ns}|c|{cid}|w|{task}" in sks
    assert not any(schema.is_digested(sk) for sk in sks)
    assert harness.call("get_tuple", cfg(thread_id, ns)).pending_writes[0][2] == 2


def test_delete_copy_and_prune_a_long_thread(harness: Harness) -> None:
    source = _thread(CJK)
    _store_long_thread(harness, source)
    target = _thread("コピー" * 50)
    harness.call("copy_thread", source, target)
    copied = harness.call("get_tuple", cfg(target, DEEP_NS))
    original = harness.call("get_tuple", cfg(source, DEEP_NS))
    assert copied.checkpoint["channel_values"] == original.checkpoint["channel_values"]
    assert copied.pending_writes == original.pending_writes
    harness.call("delete_thread", source)
    assert harness.call("get_tuple", cfg(source, DEEP_NS)) is None
    assert not _own_objects(harness, source), "no object of the deleted thread is left, under either prefix"
    assert [it for it in _own_items(harness, source) if it[ATTR.KIND]["S"] not in ("m", "x")] == []
    # The copy stands alone: its objects are its own.
    got = harness.call("get_tuple", cfg(target, DEEP_NS))
    assert got.checkpoint["channel_values"] == {LONG_CHANNEL: _big(), "small": 2}
    assert got.pending_writes[0][2] == _big(2_000)
    result = harness.call("prune", [target], keep_last=1)
    assert result.checkpoints_deleted >= 1
    kept = harness.list(cfg(target, DEEP_NS))
    assert len(kept) == 1 and kept[0].checkpoint["channel_values"][LONG_CHANNEL] == _big()
    harness.call("delete_thread", target)
    assert not _own_objects(harness, target)


def test_delete_for_runs_finds_a_run_id_over_an_index_key(harness: Harness) -> None:
    thread_id = _thread("runs")
    _store_long_thread(harness, thread_id, ns="")
    other = _thread("other-run")
    harness.call("put", cfg(other), checkpoint_of({"a": 1}), {"run_id": LONG_RUN + "x"}, {"a": "1"})
    harness.call("delete_for_runs", [LONG_RUN])
    assert harness.call("get_tuple", cfg(thread_id)) is None
    assert harness.call("get_tuple", cfg(other)) is not None  # a run id sharing the digest's start


def test_a_tenant_thread_with_long_ids(harness: Harness) -> None:
    with harness.other_saver(tenant_prefix="acme") as tenant:
        thread_id = _thread(CJK)
        stored = harness.call(
            "put", cfg(thread_id, DEEP_NS), checkpoint_of({"x": _big()}), {}, {"x": "1"}, saver=tenant
        )
        harness.call("put_writes", stored, [("x", 1)], LONG_TASK, saver=tenant)
        assert (
            harness.call("get_tuple", cfg(thread_id, DEEP_NS), saver=tenant).pending_writes[0][0] == LONG_TASK
        )
        items = _own_items(harness, thread_id, tenant)
        assert items and all(it[ATTR.PK]["S"].startswith("acme|") for it in items)
        assert harness.call("get_tuple", cfg(thread_id, DEEP_NS)) is None  # not the untenanted saver's
        harness.call("delete_thread", thread_id, saver=tenant)
        assert harness.call("get_tuple", cfg(thread_id, DEEP_NS), saver=tenant) is None


def test_ids_too_long_to_store_are_refused_before_any_write(harness: Harness) -> None:
    thread_id = new_thread()
    huge = "n" * (schema.MAX_ID_BYTES + 1)
    with pytest.raises(KeyTooLongError, match="checkpoint_ns is 16385 bytes"):
        harness.call("put", cfg(thread_id, huge), checkpoint_of({}), {}, {})
    stored = harness.call("put", cfg(thread_id), checkpoint_of({}), {}, {})
    with pytest.raises(KeyTooLongError, match="task_id"):
        harness.call("put_writes", stored, [("a", 1)], huge)
    with pytest.raises(KeyTooLongError, match="channel"):
        harness.call("put", stored, checkpoint_of({huge: _big()}), {}, {huge: "1"})
    with pytest.raises(KeyTooLongError, match="thread_id"):
        harness.call("put", cfg("t" * 3_000), checkpoint_of({}), {}, {})
    assert [it[ATTR.KIND]["S"] for it in _own_items(harness, thread_id)] == ["c"]  # the one checkpoint
    assert not _own_items(harness, "t" * 3_000)


def test_a_forged_id_map_cannot_rename_an_item(harness: Harness) -> None:
    """The ids an item keeps whole must make its own key: a tenant's raw write cannot make
    a digested item answer for another namespace or checkpoint."""
    import boto3

    thread_id = _thread("forged")
    stored = harness.call("put", cfg(thread_id, DEEP_NS), checkpoint_of({"a": 1}), {}, {"a": "1"})
    item = next(it for it in _own_items(harness, thread_id) if it[ATTR.KIND]["S"] == schema.CHECKPOINT_ITEM)
    item[ATTR.KEY]["M"]["ns"] = {"S": DEEP_NS + "|elsewhere"}
    boto3.client("dynamodb").put_item(TableName=harness.table_name, Item=item)
    with harness.other_saver() as fresh, pytest.raises(CorruptPayloadError, match="make another key"):
        harness.call("get_tuple", stored, saver=fresh)


def _cli(*argv: str) -> tuple[int, str, str]:
    import io

    from langgraph.checkpoint.dynamodb import cli

    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("harness", ["sync-s3"], indirect=True)
def test_the_cli_and_export_import_on_a_long_thread(harness: Harness, tmp_path: Any) -> None:
    """The operator's tools see such a thread as any other: listed, its history, stats, a file round trip."""
    import json

    from langgraph.checkpoint.dynamodb.tools.transfer import export_thread, import_thread

    thread_id = _thread(CJK)
    _store_long_thread(harness, thread_id)
    store = ("--table", harness.table_name, "--bucket", str(harness.bucket_name))
    code, out, err = _cli(*store, "threads", "--json")
    assert code == 0, err
    assert thread_id in {t["thread_id"] for t in json.loads(out)["threads"]}
    code, out, err = _cli(*store, "history", thread_id, "--ns", DEEP_NS, "--json")
    assert code == 0, err
    assert len(json.loads(out)["checkpoints"]) == 2
    code, out, err = _cli(*store, "stats", "--thread", thread_id, "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["checkpoints"] == 2 and stats["s3"]["objects"] == len(_own_objects(harness, thread_id)) > 0
    path = tmp_path / "long.jsonl"
    with path.open("w") as f:
        export_thread(harness.saver, thread_id, f)
    copy_id = _thread("導入" * 70)
    with path.open() as f:
        import_thread(harness.saver, f, thread_id=copy_id)
    a = harness.call("get_tuple", cfg(thread_id, DEEP_NS))
    b = harness.call("get_tuple", cfg(copy_id, DEEP_NS))
    assert b.checkpoint == a.checkpoint and b.pending_writes == a.pending_writes and b.metadata == a.metadata
    code, out, err = _cli(*store, "delete", copy_id, "--yes")
    assert code == 0, err
    assert not _own_objects(harness, copy_id)
