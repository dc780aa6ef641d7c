"""Maintenance operations against scripted responses: copy, tenant migration, prune, delete_for_runs.

Each test builds a thread with the real write operations (``stored.Writer``),
feeds its items to the operation under test as Query results, and checks the
requests the operation makes: which, in what order, with what keys. The
ordering rules checked here are the ones that keep every readable checkpoint
unchanged when the operation is interrupted (docs/architecture.md §6).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.ops import Call
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import Script, call, scripted_saver
from tests.unit.stored import Writer, cid_of, deleted, delta_chain, first, noise, put_requests, sk

MODES = ["sync", "async"]


def _client_error(code: str, op: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, op)


def _no_writes(script: Script) -> None:
    writes = {"put_item", "update_item", "batch_write_item", "delete_item", "copy_object", "put_object"}
    writes |= {"delete_objects"}
    assert not [m for m in script.methods() if m.split(".")[-1] in writes]


# ------------------------------------------------------------ copy_thread


def _source_with_payloads() -> tuple[Writer, list[dict[str, Any]]]:
    """Thread ``src`` of three checkpoints: S3 values, an S3 write, a held value, inline values."""
    w = Writer(bucket_name="bkt", s3_threshold=2000, inline_threshold=100)
    c1 = w.put("src", {"big": noise(3000), "held": noise(500, 1), "s": "y"})
    w.put_writes(c1, [("big", noise(2500, 2))], "task-a")  # over s3_threshold: its own object
    c2 = w.put(
        "src",
        {"big": noise(3000), "held": noise(500, 1), "s": "z"},
        {"big": "1", "held": "1", "s": "2"},
        parent=c1,
    )
    c3 = w.put("src", {"s": "w", "held": noise(500, 1)}, {"big": "1", "held": "1", "s": "3"}, parent=c2)
    return w, [c1, c2, c3]


@pytest.mark.parametrize("mode", MODES)
def test_copy_thread_copies_objects_then_writes_then_checkpoints_oldest_first(mode: str) -> None:
    """A copied checkpoint is readable as in the source the moment it exists, or not at all."""
    w, configs = _source_with_payloads()
    source = w.items("src")
    saver, script = scripted_saver(mode, bucket_name="bkt", s3_threshold=2000, inline_threshold=100)
    script.when("query", {"Items": []}, {"Items": source})  # the target is empty; then the source
    call(saver, "copy_thread", "src", "dst")
    script.assert_done()
    queries = script.calls("query")
    assert [q.kwargs["ExpressionAttributeValues"][":pk"]["S"] for q in queries] == ["dst", "src"]
    assert all(q.kwargs["ConsistentRead"] for q in queries)

    methods = script.methods()
    copies = script.calls("copy_object")
    assert copies, "the source has S3 objects"
    last_copy = max(i for i, m in enumerate(methods) if m == "s3.copy_object")
    assert last_copy < first(script, "dynamodb.batch_write_item")  # objects before any item
    src_prefix, dst_prefix = saver.s3_thread_prefix("src"), saver.s3_thread_prefix("dst")
    copied = {c.kwargs["CopySource"]["Key"]: c.kwargs["Key"] for c in copies}
    assert set(copied) >= set(w.objects())  # every object the source wrote
    for old, new in copied.items():
        assert old.startswith(src_prefix) and new == dst_prefix + old[len(src_prefix) :]
        assert all(c.kwargs["Bucket"] == "bkt" for c in copies)

    puts = put_requests(script)
    assert all(it[ATTR.PK] == {"S": "dst"} for it in puts)
    kinds = [it[ATTR.KIND]["S"] for it in puts]
    # Writes (what checkpoints point to) first, then the checkpoints, oldest first.
    assert kinds == [schema.WRITES_ITEM] + [schema.CHECKPOINT_ITEM] * 3
    cps = puts[1:]
    assert [it[ATTR.CHECKPOINT_ID]["S"] for it in cps] == [cid_of(c) for c in configs]
    # ... in a batch written after the writes' batch (one chunk at a time).
    batches = script.calls("batch_write_item")
    assert len(batches) == 2 and "PutRequest" in batches[1].kwargs["RequestItems"]["tbl"][0]
    # Pointers follow the objects; the held value's reference still names its holder.
    (write,) = [it for it in puts if it[ATTR.KIND]["S"] == schema.WRITES_ITEM]
    assert write[f"{ATTR.WRITE_PREFIX}0"]["L"][1]["M"]["s3"]["S"].startswith(dst_prefix)
    assert cps[2][ATTR.VALUES]["M"]["held"]["M"]["c"] == {"S": cid_of(configs[0])}
    # A fresh lineage root: a tombstone of an earlier copy under "dst" cannot hide this one.
    roots = {it[ATTR.ROOT]["S"] for it in cps}
    assert len(roots) == 1 and roots.pop().startswith(f"{cid_of(configs[0])}@copy-")


@pytest.mark.parametrize("mode", MODES)
def test_copy_thread_that_cannot_copy_an_object_writes_no_item(mode: str) -> None:
    """Objects go first: if one is missing, the target gets nothing that would point to it."""
    w, _ = _source_with_payloads()
    saver, script = scripted_saver(mode, bucket_name="bkt", s3_threshold=2000, inline_threshold=100)
    script.when("query", {"Items": []}, {"Items": w.items("src")})
    script.when("copy_object", _client_error("NoSuchKey", "CopyObject"))
    with pytest.raises(ClientError):
        call(saver, "copy_thread", "src", "dst")
    assert "dynamodb.batch_write_item" not in script.methods()


@pytest.mark.parametrize("mode", MODES)
def test_copy_thread_refuses_a_target_with_checkpoints_before_writing(mode: str) -> None:
    w = Writer()
    w.put("dst", {"a": 1})
    saver, script = scripted_saver(mode)
    script.when("query", {"Items": w.items("dst")})
    with pytest.raises(ValueError, match="already has checkpoints"):
        call(saver, "copy_thread", "src", "dst")
    assert script.methods() == ["dynamodb.query"]  # the source is not even read


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("source", "target", "match"),
    [("t1", "t1", "same thread"), ("", "t2", "source_thread_id"), ("t1", "", "target_thread_id")],
)
def test_copy_thread_refuses_bad_ids_without_a_request(
    mode: str, source: str, target: str, match: str
) -> None:
    saver, script = scripted_saver(mode)
    with pytest.raises(ValueError, match=match):
        call(saver, "copy_thread", source, target)
    assert script.log == []


@pytest.mark.parametrize("mode", MODES)
def test_copy_thread_refuses_a_forged_s3_pointer_before_copying_anything(mode: str) -> None:
    """A tenant who can write its own items must not get another thread's object copied to it."""
    w, _ = _source_with_payloads()
    source = w.items("src")
    forged = next(it for it in source if it[ATTR.KIND]["S"] == schema.WRITES_ITEM)
    forged[f"{ATTR.WRITE_PREFIX}0"]["L"][1]["M"]["s3"] = {"S": "checkpoints/victim/_/v/secret/1"}
    saver, script = scripted_saver(mode, bucket_name="bkt")
    script.when("query", {"Items": []}, {"Items": source})
    with pytest.raises(CorruptPayloadError, match="checkpoints/victim"):
        call(saver, "copy_thread", "src", "dst")
    assert script.methods() == ["dynamodb.query", "dynamodb.query"]
    _no_writes(script)


# ---------------------------------------------------- migrate_tenant_thread


@pytest.mark.parametrize("mode", MODES)
def test_migrate_tenant_thread_copies_to_the_tenant_layout_then_deletes_the_old_thread(mode: str) -> None:
    old = Writer()  # a version without the delimiter stored tenant "acme-"'s "t1" as "acme-t1"
    c1 = old.put("acme-t1", {"a": 1})
    old.put("acme-t1", {"a": 2}, {"a": "2"}, parent=c1)
    items = old.items("acme-t1")
    saver, script = scripted_saver(mode)
    new_pk = schema.partition_key("t1", "acme-")
    # old thread, new thread (empty); the copy reads both again; the delete reads the old one.
    script.when("query", {"Items": items}, {"Items": []}, {"Items": []}, {"Items": items}, {"Items": items})
    call(saver, "migrate_tenant_thread", "acme-", "t1")
    script.assert_done()
    pks = [q.kwargs["ExpressionAttributeValues"][":pk"]["S"] for q in script.calls("query")]
    assert pks == ["acme-t1", new_pk, new_pk, "acme-t1", "acme-t1"]
    puts = put_requests(script)
    assert [it[ATTR.PK]["S"] for it in puts] == [new_pk, new_pk]
    assert [sk(it) for it in puts] == [sk(it) for it in items]
    # The old thread goes only after the copy landed: its deletes follow every put.
    batches = script.calls("batch_write_item")
    last_put = max(i for i, b in enumerate(batches) if "PutRequest" in b.kwargs["RequestItems"]["tbl"][0])
    first_delete = min(
        i for i, b in enumerate(batches) if "DeleteRequest" in b.kwargs["RequestItems"]["tbl"][0]
    )
    assert last_put < first_delete
    assert set(deleted(script)) == {sk(it) for it in items}
    for b in batches[first_delete:]:
        assert all(
            r["DeleteRequest"]["Key"][ATTR.PK] == {"S": "acme-t1"} for r in b.kwargs["RequestItems"]["tbl"]
        )


@pytest.mark.parametrize("mode", MODES)
def test_migrate_tenant_thread_rerun_after_the_copy_only_deletes(mode: str) -> None:
    old = Writer()
    old.put("acme-t1", {"a": 1})
    items = old.items("acme-t1")
    copied = [{**it, ATTR.PK: {"S": schema.partition_key("t1", "acme-")}} for it in items]
    saver, script = scripted_saver(mode)
    script.when("query", {"Items": items}, {"Items": copied}, {"Items": items})
    call(saver, "migrate_tenant_thread", "acme-", "t1")
    script.assert_done()
    assert put_requests(script) == [] and not script.calls("copy_object")
    assert deleted(script) == [sk(it) for it in items]


@pytest.mark.parametrize("mode", MODES)
def test_migrate_tenant_thread_refuses_a_different_thread_under_the_new_layout(mode: str) -> None:
    old, other = Writer(), Writer()
    old.put("acme-t1", {"a": 1})
    other.put("t1", {"a": 9}, ns="")
    theirs = [{**it, ATTR.PK: {"S": schema.partition_key("t1", "acme-")}} for it in other.items("t1")]
    saver, script = scripted_saver(mode)
    script.when("query", {"Items": old.items("acme-t1")}, {"Items": theirs})
    with pytest.raises(ValueError, match="different thread"):
        call(saver, "migrate_tenant_thread", "acme-", "t1")
    _no_writes(script)


@pytest.mark.parametrize("mode", MODES)
def test_migrate_tenant_thread_needs_an_untenanted_saver(mode: str) -> None:
    saver, script = scripted_saver(mode, tenant_prefix="acme-")
    with pytest.raises(ValueError, match="untenanted"):
        call(saver, "migrate_tenant_thread", "acme-", "t1")
    assert script.log == []


# ------------------------------------------------------------------ prune


@pytest.mark.parametrize("mode", MODES)
def test_prune_keeps_the_delta_ancestors_of_the_latest_and_deletes_older_ones_newest_first(mode: str) -> None:
    w = Writer()
    configs = delta_chain(w, "t1", 8, snapshot_every=4)  # snapshots at 0 and 4; latest is 7
    ids = [cid_of(c) for c in configs]
    saver, script = scripted_saver(mode)
    script.when("query", {"Items": w.items("t1")})
    res = call(saver, "prune", ["t1"])
    script.assert_done()
    assert script.methods()[0] == "dynamodb.query"
    # Kept: 7 and its chain back to the snapshot at 4. Deleted: 0..3, newest first, then their writes.
    gone = deleted(script)
    cps = [schema.checkpoint_sk("", c) for c in reversed(ids[:4])]
    assert gone[:4] == cps
    assert sorted(gone[4:]) == sorted(schema.writes_sk("", c, f"task{i}") for i, c in enumerate(ids[:4]))
    assert not {schema.checkpoint_sk("", c) for c in ids[4:]} & set(gone)
    assert (res.checkpoints_deleted, res.checkpoints_kept, res.kept_for_delta) == (4, 4, 3)
    assert res.writes_deleted == 4
    # Checkpoint deletes one chunk after another; only deletes, no other write.
    assert set(script.methods()[1:]) == {"dynamodb.batch_write_item"}


@pytest.mark.parametrize("mode", MODES)
def test_prune_keep_last_keeps_that_many_per_namespace(mode: str) -> None:
    w = Writer()
    root = [w.put("t1", {"a": 0})]
    for i in range(1, 5):
        root.append(w.put("t1", {"a": i}, {"a": str(i + 1)}, parent=root[-1]))
    sub = [w.put("t1", {"b": 0}, ns="child")]
    sub.append(w.put("t1", {"b": 1}, {"b": "2"}, parent=sub[-1]))
    saver, script = scripted_saver(mode)
    script.when("query", {"Items": w.items("t1")})
    res = call(saver, "prune", ["t1"], keep_last=2)
    want = [schema.checkpoint_sk("", cid_of(c)) for c in reversed(root[:3])]
    assert deleted(script) == want  # newest first; the subgraph has only two: both kept
    assert res.checkpoints_deleted == 3 and res.checkpoints_kept == 4


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bucket", [None, "bkt"])
def test_prune_rehomes_a_held_value_before_deleting_its_holder(mode: str, bucket: str | None) -> None:
    """A kept checkpoint that references a value held by a deleted one still reads it."""
    w = Writer(bucket_name=bucket, inline_threshold=100, s3_threshold=1000)
    big = noise(700)  # held (over inline_threshold, under s3_threshold)
    c1 = w.put("t1", {"a": big, "n": 0})
    w.put("t1", {"a": big, "n": 1}, {"a": "1", "n": "2"}, parent=c1)
    items = w.items("t1")
    ref = items[1][ATTR.VALUES]["M"]["a"]["M"]
    assert ref["l"] == {"S": "c"} and ref["c"] == {"S": cid_of(c1)}  # c2 references c1's copy
    held = items[0][ATTR.VALUES]["M"]["a"]["B"]
    saver, script = scripted_saver(mode, bucket_name=bucket, inline_threshold=100, s3_threshold=1000)
    script.when("query", {"Items": items})
    res = call(saver, "prune", ["t1"])
    assert res.values_rehomed == 1 and res.checkpoints_deleted == 1
    methods = script.methods()
    delete_at = next(
        i
        for i, c in enumerate(script.log)
        if isinstance(c, Call)
        and c.method == "batch_write_item"
        and "DeleteRequest" in c.kwargs["RequestItems"]["tbl"][0]
    )
    (blob,) = put_requests(script)
    assert methods.index("dynamodb.batch_write_item") < delete_at  # the blob lands first
    assert blob[ATTR.SK] == {"S": schema.blob_sk("", "a", "1")} and blob[ATTR.BLOB] == {"B": held}
    assert deleted(script) == [schema.checkpoint_sk("", cid_of(c1))]


@pytest.mark.parametrize("mode", MODES)
def test_prune_rehomes_a_large_held_value_to_s3_before_deleting_its_holder(mode: str) -> None:
    w = Writer(bucket_name="bkt", inline_threshold=100, s3_threshold=1000)
    big = noise(700)
    c1 = w.put("t1", {"a": big, "n": 0})
    w.put("t1", {"a": big, "n": 1}, {"a": "1", "n": "2"}, parent=c1)
    saver, script = scripted_saver(mode, bucket_name="bkt", inline_threshold=100, s3_threshold=500)
    script.when("query", {"Items": w.items("t1")})
    call(saver, "prune", ["t1"])
    methods = script.methods()
    assert methods[:3] == ["dynamodb.query", "s3.put_object", "dynamodb.batch_write_item"]
    (upload,) = script.calls("put_object")
    assert upload.kwargs["Key"] == saver.value_s3_key("t1", "", "a", "1") and len(upload.kwargs["Body"]) > 500
    assert deleted(script) == [schema.checkpoint_sk("", cid_of(c1))]
    # The value's S3 key is referenced by the kept checkpoint: the object stays.
    assert "s3.delete_objects" not in methods


@pytest.mark.parametrize("mode", MODES)
def test_prune_strategy_delete_removes_the_threads(mode: str) -> None:
    w = Writer()
    c1 = w.put("t1", {"a": 1})
    w.put_writes(c1, [("a", 2)], "task")
    w.put("t2", {"a": 1})
    saver, script = scripted_saver(mode)
    # Each thread: the load (counts), then delete_thread's own projected Query.
    t1, t2 = w.items("t1"), w.items("t2")
    script.when("query", {"Items": t1}, {"Items": t1}, {"Items": t2}, {"Items": t2})
    res = call(saver, "prune", ["t1", "t2", "t1"], strategy="delete")  # a repeated id once
    script.assert_done()
    assert res.threads == 2 and res.checkpoints_deleted == 2 and res.writes_deleted == 1
    assert set(deleted(script)) == {sk(it) for it in t1 + t2}
    pks = [q.kwargs["ExpressionAttributeValues"][":pk"]["S"] for q in script.calls("query")]
    assert pks == ["t1", "t1", "t2", "t2"]
    # Tombstones first (delete_thread's rule), before any item goes.
    assert first(script, "dynamodb.update_item") < first(script, "dynamodb.batch_write_item")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        (("t1",), {}, TypeError, "not a single string"),
        ((["t1", ""],), {}, TypeError, "non-empty str"),
        ((["t1", 3],), {}, TypeError, "non-empty str"),
        ((["t1"],), {"strategy": "oldest"}, ValueError, "unknown prune strategy"),
        ((["t1"],), {"keep_last": 0}, ValueError, "keep_last must be an int >= 1"),
        ((["t1"],), {"keep_last": True}, ValueError, "keep_last must be an int >= 1"),
        ((["t1"],), {"keep_last": 2.0}, ValueError, "keep_last must be an int >= 1"),
        ((["t1"],), {"strategy": "delete", "keep_last": 2}, ValueError, "keep_latest"),
    ],
)
def test_prune_refuses_bad_arguments_before_any_request(
    mode: str, args: tuple[Any, ...], kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    saver, script = scripted_saver(mode)
    with pytest.raises(error, match=match):
        call(saver, "prune", *args, **kwargs)
    assert script.log == []


@pytest.mark.parametrize("mode", MODES)
def test_prune_reports_a_parent_cycle_naming_the_thread(mode: str) -> None:
    w = Writer()
    configs = delta_chain(w, "t1", 3)
    items = w.items("t1")
    first_cp = next(it for it in items if it[ATTR.CHECKPOINT_ID]["S"] == cid_of(configs[0]))
    del first_cp[ATTR.VALUES]["M"]["m"]  # no snapshot to stop at ...
    first_cp[ATTR.PARENT_ID] = {"S": cid_of(configs[2])}  # ... and a chain that loops
    saver, script = scripted_saver(mode)
    script.when("query", {"Items": items})
    with pytest.raises(CorruptPayloadError, match=r"thread 't1'.*loops back"):
        call(saver, "prune", ["t1"])
    _no_writes(script)


# --------------------------------------------------------- delete_for_runs


def _index_page(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """What the run index (keys only) answers for ``items``."""
    return {
        "Items": [{ATTR.PK: it[ATTR.PK], ATTR.SK: it[ATTR.SK], ATTR.RUN_ID: it[ATTR.RUN_ID]} for it in items],
        **extra,
    }


def _runs_thread(delta_last: bool) -> tuple[Writer, list[dict[str, Any]]]:
    """Run A wrote checkpoints 0 and 1 (and writes); run B wrote 2 (a delta of ``m`` if ``delta_last``)."""
    w = Writer()
    c0 = w.put(
        "t1",
        {"m": ["a"]},
        {"m": "1"},
        metadata={"run_id": "A", "counters_since_delta_snapshot": {"m": [0, 0]}},
    )
    w.put_writes(c0, [("m", "b")], "task0", run_id="A")
    c1 = w.put(
        "t1",
        {},
        {"m": "2"},
        parent=c0,
        metadata={"run_id": "A", "counters_since_delta_snapshot": {"m": [1, 1]}},
    )
    w.put_writes(c1, [("m", "c")], "task1", run_id="A")
    values: dict[str, Any] = {} if delta_last else {"m": ["a", "b", "c"]}
    counters = {"m": [2, 2] if delta_last else [0, 0]}
    c2 = w.put(
        "t1",
        values,
        {"m": "3"},
        parent=c1,
        metadata={"run_id": "B", "counters_since_delta_snapshot": counters},
    )
    w.put_writes(c2, [("m", "d")], "task2", run_id="B")
    return w, [c0, c1, c2]


@pytest.mark.parametrize("mode", MODES)
def test_delete_for_runs_finds_items_through_the_run_index_and_deletes_them(mode: str) -> None:
    w, configs = _runs_thread(delta_last=False)
    items = w.items("t1")
    of_a = [it for it in items if it.get(ATTR.RUN_ID) == {"S": "A"}]
    assert len(of_a) == 4  # two checkpoints and their writes carry the run id
    saver, script = scripted_saver(mode)
    more = {ATTR.PK: of_a[1][ATTR.PK], ATTR.SK: of_a[1][ATTR.SK], ATTR.RUN_ID: of_a[1][ATTR.RUN_ID]}
    script.when(
        "query", _index_page(of_a[:2], LastEvaluatedKey=more), _index_page(of_a[2:]), {"Items": items}
    )
    res = call(saver, "delete_for_runs", ["A"])
    script.assert_done()
    q1, q2, load = script.calls("query")
    assert q1.kwargs["IndexName"] == schema.RUN_INDEX_NAME and q1.kwargs["ExpressionAttributeValues"] == {
        ":rid": {"S": "A"}
    }
    assert "ExclusiveStartKey" not in q1.kwargs and q2.kwargs["ExclusiveStartKey"] == more
    assert load.kwargs["ExpressionAttributeValues"][":pk"] == {"S": "t1"} and load.kwargs["ConsistentRead"]
    gone = deleted(script)
    ids = [cid_of(c) for c in configs]
    assert gone[:2] == [schema.checkpoint_sk("", ids[1]), schema.checkpoint_sk("", ids[0])]  # newest first
    assert set(gone[2:]) == {schema.writes_sk("", ids[0], "task0"), schema.writes_sk("", ids[1], "task1")}
    assert res.checkpoints_deleted == 2 and res.writes_deleted == 2 and res.kept_for_delta == 0


@pytest.mark.parametrize("mode", MODES)
def test_delete_for_runs_keeps_what_a_surviving_delta_checkpoint_needs(mode: str) -> None:
    w, _ = _runs_thread(delta_last=True)
    items = w.items("t1")
    of_a = [it for it in items if it.get(ATTR.RUN_ID) == {"S": "A"}]
    saver, script = scripted_saver(mode)
    script.when("query", _index_page(of_a), {"Items": items})
    res = call(saver, "delete_for_runs", ["A"])
    # Run B's checkpoint rebuilds m from 1 and 0 (and their writes): nothing of run A may go.
    assert deleted(script) == [] and res.kept_for_delta == 2 and res.checkpoints_deleted == 0
    _no_writes(script)


@pytest.mark.parametrize("mode", MODES)
def test_delete_for_runs_trusts_the_items_run_id_over_the_index(mode: str) -> None:
    """The index is eventually consistent: a stale entry must not delete another run's item."""
    w, _ = _runs_thread(delta_last=False)
    items = w.items("t1")
    of_b = [it for it in items if it.get(ATTR.RUN_ID) == {"S": "B"}]
    stale = [{**it, ATTR.RUN_ID: {"S": "A"}} for it in of_b]  # the index still says run A
    saver, script = scripted_saver(mode)
    script.when("query", _index_page(stale), {"Items": items})
    res = call(saver, "delete_for_runs", ["A"])
    assert set(deleted(script)) == {sk(it) for it in items if it.get(ATTR.RUN_ID) == {"S": "A"}}
    assert res.checkpoints_deleted == 2


@pytest.mark.parametrize("mode", MODES)
def test_delete_for_runs_of_nothing_makes_no_request(mode: str) -> None:
    saver, script = scripted_saver(mode)
    assert call(saver, "delete_for_runs", []).checkpoints_deleted == 0
    with pytest.raises(TypeError, match="single string"):
        call(saver, "delete_for_runs", "A")
    assert script.log == []
