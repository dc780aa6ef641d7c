"""The savers' operations against scripted responses (tests/support/script.py): no server.

Each test calls a saver's public method, answers the requests its operation
yields from a script, and checks the requests: how many, in what order, with
what keys. Sync and async run the same operation (the sans-I/O core), so
every test runs on both.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.errors import EndpointUnreachableError, StoreNotFoundError
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import Script, call, scripted_saver

MODES = ["sync", "async"]


def _checkpoint(values: dict[str, Any], versions: dict[str, str] | None = None) -> Any:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = values
    cp["channel_versions"] = versions or {k: "1" for k in values}
    return cp


def _cfg(thread: str, cid: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if cid is not None:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _error(code: str, op: str = "Query") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": code}}, op)


def _stored(script: Script) -> list[dict[str, Any]]:
    """Items the operation put, as a Query would return them."""
    return [c.kwargs["Item"] for c in script.calls("put_item")]


# ---------------------------------------------------------------- writes


@pytest.mark.parametrize("mode", MODES)
def test_put_is_one_put_item_of_a_checked_item(mode: str) -> None:
    saver, script = scripted_saver(mode)
    cp = _checkpoint({"a": "x" * 100})
    out = call(saver, "put", _cfg("t1"), cp, {"step": -1}, {"a": "1"})
    assert script.methods() == ["dynamodb.put_item"]
    (put,) = script.calls("put_item")
    item = put.kwargs["Item"]
    assert put.kwargs["TableName"] == "tbl"
    assert item[ATTR.PK] == {"S": "t1"} and item[ATTR.SK] == {"S": schema.checkpoint_sk("", cp["id"])}
    assert item[ATTR.FORMAT]["N"] and item[ATTR.KIND] == {"S": schema.CHECKPOINT_ITEM}
    assert "a" in item[ATTR.VALUES]["M"]  # small: inline, no other request
    assert out["configurable"]["checkpoint_id"] == cp["id"]
    # The next put names its parent and inherits its lineage root: still one request.
    script.reset()
    child = _checkpoint({"a": "y"}, {"a": "2"})
    call(saver, "put", out, child, {"step": 0}, {"a": "2"})
    assert script.methods() == ["dynamodb.put_item"]
    item2 = script.calls("put_item")[0].kwargs["Item"]
    assert item2[ATTR.PARENT_ID] == {"S": cp["id"]} and item2[ATTR.ROOT] == item[ATTR.ROOT]


@pytest.mark.parametrize("mode", MODES)
def test_put_uploads_payloads_before_the_item_that_points_to_them(mode: str) -> None:
    """A reader never finds an item whose S3 payloads are not there yet."""
    saver, script = scripted_saver(mode, bucket_name="bkt", s3_threshold=0, inline_threshold=0)
    call(saver, "put", _cfg("t1"), _checkpoint({"a": "x" * 300, "b": "y" * 300}), {}, {"a": "1", "b": "1"})
    methods = script.methods()
    assert methods[-1] == "dynamodb.put_item"
    assert methods.count("s3.put_object") >= 2  # the values (and possibly metadata): each its own object
    assert set(methods[:-1]) == {"s3.put_object"}
    # ... concurrently: one Gather of all the uploads.
    assert script.gathers and script.gathers[0] == (0, len(methods) - 1)
    keys = [c.kwargs["Key"] for c in script.calls("put_object")]
    assert {"checkpoints/t1/_/v/a/1", "checkpoints/t1/_/v/b/1"} <= set(keys)
    values = script.calls("put_item")[0].kwargs["Item"][ATTR.VALUES]["M"]
    assert values["a"]["M"]["l"] == {"S": "s3"} and values["a"]["M"]["v"] == {"S": "1"}


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_is_one_idempotent_update(mode: str) -> None:
    saver, script = scripted_saver(mode)
    stored = call(saver, "put", _cfg("t1"), _checkpoint({}), {}, {})
    script.reset()
    call(saver, "put_writes", stored, [(f"ch{i}", i) for i in range(10)], "task-1", "p")
    assert script.methods() == ["dynamodb.put_item"]
    kw = script.calls()[0].kwargs
    cid = stored["configurable"]["checkpoint_id"]
    assert {k: kw["Item"][k] for k in (ATTR.PK, ATTR.SK)} == {
        ATTR.PK: {"S": "t1"},
        ATTR.SK: {"S": schema.writes_sk("", cid, "task-1")},
    }
    assert sorted(a for a in kw["Item"] if a[1:].isdigit()) == sorted(
        f"{ATTR.WRITE_PREFIX}{i}" for i in range(10)
    )
    # A retried call (LangGraph retries on timeouts) must not overwrite what the first stored.
    assert kw["ConditionExpression"] == "attribute_not_exists(#pk)"


# ----------------------------------------------------------------- reads


def _writes_item(script: Script, n: int = 0) -> dict[str, Any]:
    """The writes item the ``n``-th scripted ``put_writes`` made, as a Query returns it."""
    puts = [c.kwargs["Item"] for c in script.calls("put_item")]
    return [it for it in puts if it[ATTR.KIND]["S"] == schema.WRITES_ITEM][n]


@pytest.mark.parametrize("mode", MODES)
def test_get_tuple_latest_is_one_small_newest_first_query(mode: str) -> None:
    saver, script = scripted_saver(mode)
    stored = call(saver, "put", _cfg("t1"), _checkpoint({"a": "x"}), {"step": 3}, {"a": "1"})
    call(saver, "put_writes", stored, [("a", "w")], "task-1")
    (item,) = [it for it in _stored(script) if it[ATTR.KIND]["S"] == schema.CHECKPOINT_ITEM]
    page = [_writes_item(script), item]  # newest first: writes sort just above their checkpoint
    script.reset()
    script.when("query", {"Items": page})
    tup = call(saver, "get_tuple", _cfg("t1"))
    assert script.methods() == ["dynamodb.query"]
    kw = script.calls()[0].kwargs
    # The page holds what the latest checkpoint needs: this saver wrote it
    # and one task's writes item (a saver that knows nothing reads 8).
    assert kw["ScanIndexForward"] is False and kw["ConsistentRead"] is True and kw["Limit"] == 2
    assert kw["ExpressionAttributeValues"][":pk"] == {"S": "t1"}
    assert tup.checkpoint["id"] == stored["configurable"]["checkpoint_id"]
    assert tup.checkpoint["channel_values"] == {"a": "x"} and tup.metadata["step"] == 3
    assert [w[1:] for w in tup.pending_writes] == [("a", "w")]
    script.assert_done()


@pytest.mark.parametrize("mode", MODES)
def test_get_tuple_by_id_reads_the_head_in_the_same_round_trip(mode: str) -> None:
    saver, script = scripted_saver(mode)
    stored = call(saver, "put", _cfg("t1"), _checkpoint({"a": "x"}), {}, {"a": "1"})
    (item,) = _stored(script)
    script.reset()
    script.when("query", {"Items": [item]})
    tup = call(saver, "get_tuple", stored)
    assert sorted(script.methods()) == ["dynamodb.get_item", "dynamodb.query"]
    assert script.gathers == [(0, 2)]  # one Gather: one wait, not two
    assert script.calls("get_item")[0].kwargs["Key"][ATTR.SK] == {"S": schema.HEAD_SK}
    assert tup.checkpoint["channel_values"] == {"a": "x"}


@pytest.mark.parametrize("mode", MODES)
def test_get_tuple_of_a_missing_thread_is_none_after_one_query(mode: str) -> None:
    saver, script = scripted_saver(mode)
    assert call(saver, "get_tuple", _cfg("nobody")) is None
    assert script.methods() == ["dynamodb.query"]


@pytest.mark.parametrize("mode", MODES)
def test_list_follows_pages_and_streams(mode: str) -> None:
    saver, script = scripted_saver(mode)
    parent = _cfg("t1")
    for i in range(3):
        parent = call(
            saver, "put", parent, _checkpoint({"i": i}, {"i": str(i + 1)}), {"step": i}, {"i": str(i + 1)}
        )
    items = list(reversed(_stored(script)))  # newest first
    script.reset()
    script.when(
        "query",
        {"Items": items[:2], "LastEvaluatedKey": {ATTR.PK: items[1][ATTR.PK], ATTR.SK: items[1][ATTR.SK]}},
        {"Items": items[2:]},
    )
    listed = call(saver, "list", _cfg("t1"))
    assert [t.metadata["step"] for t in listed] == [2, 1, 0]
    queries = script.calls("query")
    assert len(queries) == 2 and "ExclusiveStartKey" not in queries[0].kwargs
    assert queries[1].kwargs["ExclusiveStartKey"][ATTR.SK] == items[1][ATTR.SK]
    assert all(q.kwargs["ScanIndexForward"] is False for q in queries)
    script.assert_done()


# ----------------------------------------------------------- maintenance


def _thread_items(thread: str, n: int) -> tuple[list[dict[str, Any]], list[str]]:
    """What delete_thread's Query projects for a thread of ``n`` checkpoints, each with writes."""
    ids = [str(uuid6(clock_seq=-1)) for _ in range(n)]
    items: list[dict[str, Any]] = []
    for cid in ids:
        items.append(
            {ATTR.PK: {"S": thread}, ATTR.SK: {"S": schema.checkpoint_sk("", cid)}, ATTR.ROOT: {"S": ids[0]}}
        )
        items.append({ATTR.PK: {"S": thread}, ATTR.SK: {"S": schema.writes_sk("", cid, "task")}})
    items.append({ATTR.PK: {"S": thread}, ATTR.SK: {"S": schema.blob_sk("", "ch", "1")}})
    items.append({ATTR.PK: {"S": thread}, ATTR.SK: {"S": schema.LOCK_SK}})
    items.append({ATTR.PK: {"S": thread}, ATTR.SK: {"S": schema.HEAD_SK}})
    return sorted(items, key=lambda it: it[ATTR.SK]["S"]), ids


def _deleted(script: Script) -> list[str]:
    """Sort keys of the items deleted, in request order."""
    out: list[str] = []
    for c in script.calls("batch_write_item"):
        for reqs in c.kwargs["RequestItems"].values():
            out += [r["DeleteRequest"]["Key"][ATTR.SK]["S"] for r in reqs if "DeleteRequest" in r]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_delete_thread_deletes_checkpoints_newest_first_then_what_hangs_on_them(mode: str) -> None:
    """An interrupted delete leaves an older, consistent prefix of the thread (docs/architecture.md)."""
    saver, script = scripted_saver(mode, bucket_name="bkt")
    items, ids = _thread_items("t1", 30)  # more than one BatchWriteItem of checkpoints
    script.when("query", {"Items": items})
    script.when("list_objects_v2", {"Contents": [{"Key": "checkpoints/t1/_/v/ch/1"}]})
    call(saver, "delete_thread", "t1")
    deleted = _deleted(script)
    checkpoints = [schema.checkpoint_sk("", cid) for cid in ids]
    n = len(checkpoints)
    assert deleted[:n] == sorted(checkpoints, reverse=True)  # newest first, in order
    rest = deleted[n:]
    assert schema.blob_sk("", "ch", "1") in rest and all("|w|" in sk or "|v|" in sk for sk in rest)
    assert schema.LOCK_SK not in deleted  # the lock item stays: its fencing count only grows
    assert schema.HEAD_SK not in deleted  # the retired head stays: it refuses the dead lineage
    # Checkpoint chunks one after another (a failure leaves a prefix), never in one Gather.
    batches = [i for i, c in enumerate(script.log) if getattr(c, "method", "") == "batch_write_item"]
    for index in batches[:2]:
        assert [size for start, size in script.gathers if start <= index < start + size] == [1]
    # The tombstones are written before any delete; S3 objects go after every item.
    methods = script.methods()
    assert methods[0] == "dynamodb.query" and "dynamodb.update_item" in methods[1 : batches[0]]
    assert methods[batches[-1] + 1 :] == ["s3.list_objects_v2", "s3.delete_objects"]
    assert script.calls("list_objects_v2")[0].kwargs["Prefix"] == "checkpoints/t1/"


@pytest.mark.parametrize("mode", MODES)
def test_batch_writes_resubmit_unprocessed_items_after_a_backoff(mode: str) -> None:
    saver, script = scripted_saver(mode)
    items, _ = _thread_items("t1", 3)
    script.when("query", {"Items": items})

    def throttle(c: Any) -> dict[str, Any]:
        reqs = c.kwargs["RequestItems"]["tbl"]
        return {"UnprocessedItems": {"tbl": reqs[:2]}}  # DynamoDB hands back what it did not apply

    script.when("batch_write_item", throttle)
    call(saver, "delete_thread", "t1")
    batches = script.calls("batch_write_item")
    first = batches[0].kwargs["RequestItems"]["tbl"]
    assert batches[1].kwargs["RequestItems"]["tbl"] == first[:2]  # only the leftovers, again
    assert script.methods()[script.log.index(batches[1]) - 1] == "sleep"  # backed off first
    assert 0 <= script.sleeps()[0] <= 5.0
    assert set(_deleted(script)) == {it[ATTR.SK]["S"] for it in items} - {schema.HEAD_SK, schema.LOCK_SK}


@pytest.mark.parametrize("mode", MODES)
def test_batch_writes_give_up_after_twelve_retries(mode: str) -> None:
    saver, script = scripted_saver(mode)
    items, _ = _thread_items("t1", 1)
    script.when("query", {"Items": items})
    script.when("batch_write_item", *[lambda c: {"UnprocessedItems": c.kwargs["RequestItems"]}] * 13)
    with pytest.raises(RuntimeError, match="stayed unprocessed after 13 BatchWriteItem attempts"):
        call(saver, "delete_thread", "t1")
    assert len(script.sleeps()) == 12 and len(script.calls("batch_write_item")) == 13


# ---------------------------------------------------------- error mapping


@pytest.mark.parametrize("mode", MODES)
def test_a_missing_table_is_reported_with_what_to_do(mode: str) -> None:
    saver, script = scripted_saver(mode)
    script.when("query", _error("ResourceNotFoundException"))
    with pytest.raises(StoreNotFoundError, match=r"DynamoDB table 'tbl' not found.*setup\(\)"):
        call(saver, "get_tuple", _cfg("t1"))


@pytest.mark.parametrize("mode", MODES)
def test_an_unreachable_endpoint_is_reported_as_such(mode: str) -> None:
    saver, script = scripted_saver(mode)
    script.when("put_item", EndpointConnectionError(endpoint_url="http://127.0.0.1:9"))
    with pytest.raises(EndpointUnreachableError, match="nothing listens there"):
        call(saver, "put", _cfg("t1"), _checkpoint({}), {}, {})


@pytest.mark.parametrize("mode", MODES)
def test_other_client_errors_escape_unchanged(mode: str) -> None:
    saver, script = scripted_saver(mode)
    script.when("put_item", _error("ProvisionedThroughputExceededException", "PutItem"))
    stored = {"configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": str(uuid6())}}
    with pytest.raises(ClientError) as info:
        call(saver, "put_writes", stored, [("a", 1)], "task")
    assert not isinstance(info.value, StoreNotFoundError)
    assert info.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"


# ------------------------------------------------- lifecycle, both savers


def _ttl_removal(
    pk: str, sk: str = schema.HEAD_SK, principal: str = "dynamodb.amazonaws.com"
) -> dict[str, Any]:
    return {
        "eventName": "REMOVE",
        "userIdentity": {"type": "Service", "principalId": principal},
        "dynamodb": {"Keys": {ATTR.PK: {"S": pk}, ATTR.SK: {"S": sk}}, "ApproximateCreationDateTime": 1000.0},
    }


@pytest.mark.parametrize("mode", MODES)
def test_reap_expired_stream_reaps_each_expired_head_once(mode: str) -> None:
    """Only TTL removals of heads count, each thread once, whatever the saver."""
    saver, script = scripted_saver(mode)
    event = {
        "Records": [
            _ttl_removal("t1"),
            _ttl_removal("t1"),  # a redelivered record
            _ttl_removal("t2", sk=schema.checkpoint_sk("", "x")),  # not a head
            _ttl_removal("t3", principal="someone"),  # a user's delete, not the TTL service
        ]
    }
    report = call(saver, "reap_expired_stream", event)
    assert report.threads_scanned == 1
    reads = [c.kwargs["ExpressionAttributeValues"][":pk"]["S"] for c in script.calls("query")]
    assert set(reads) == {"t1"}


def test_the_async_saver_has_a_sync_twin_of_every_async_operation() -> None:
    """LangGraph may call the sync methods from worker threads; none may be missing."""
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

    missing = []
    for name, fn in vars(AsyncDynamoDBSaver).items():
        # aclose closes async clients: it has no sync meaning.
        if name.startswith("a") and name != "aclose" and asyncio.iscoroutinefunction(fn):
            twin = getattr(AsyncDynamoDBSaver, name[1:], None)
            if twin is None or twin is getattr(BaseCheckpointSaver, name[1:], None):
                missing.append(name[1:])
    assert missing == []


def test_sync_twins_run_on_the_savers_loop_from_another_thread() -> None:
    saver, script = scripted_saver("async")

    async def main() -> Any:
        await saver.ensure_clients()  # binds the saver to this loop
        report = await asyncio.to_thread(saver.reap_expired_stream, {"Records": [_ttl_removal("t1")]})
        pruned = await asyncio.to_thread(saver.reap_thread, "t1", expired_before=1000.0)
        with pytest.raises(asyncio.InvalidStateError, match="different thread"):
            saver.purge_expired()  # from the loop's own thread: refused, not deadlocked
        return report, pruned

    report, pruned = asyncio.run(main())
    assert report.threads_scanned == 1 and pruned.threads == 1
    assert script.calls("query")
