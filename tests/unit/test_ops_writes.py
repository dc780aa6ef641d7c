"""Writes against scripted responses: value placement, special pending writes, thread heads.

``put`` places each payload (inline, held, a blob item, S3) and always
writes what an item points to before the item; ``put_writes`` keeps the
first write of a task unless every write is a special channel; the thread
head is written at most once per refresh window and never brought back for a
deleted lineage.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._parts.binding import write_place
from langgraph.checkpoint.dynamodb.errors import PayloadTooLargeError
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import call, scripted_saver
from tests.unit.stored import cfg, noise, put_requests

MODES = ["sync", "async"]
T0 = 1_800_000_000.0


def _checkpoint(values: dict[str, Any], versions: dict[str, str] | None = None) -> Any:
    cp: Any = empty_checkpoint()
    cp["id"] = str(uuid6(clock_seq=-1))
    cp["channel_values"] = values
    cp["channel_versions"] = versions or {k: "1" for k in values}
    return cp


def _put(saver: Any, values: dict[str, Any], parent: dict[str, Any] | None = None, **md: Any) -> Any:
    cp = _checkpoint(values)
    return call(saver, "put", parent or cfg("t1"), cp, md, dict(cp["channel_versions"]))


# ---------------------------------------------------------------- placement


@pytest.mark.parametrize("mode", MODES)
def test_put_over_the_s3_threshold_uploads_body_and_metadata_first(mode: str) -> None:
    saver, script = scripted_saver(mode, bucket_name="bkt", s3_threshold=64)
    cp = _checkpoint({"a": noise(200)})
    call(saver, "put", cfg("t1"), cp, {"note": noise(200, 1)}, {"a": "1"})
    methods = script.methods()
    assert methods[-1] == "dynamodb.put_item" and set(methods[:-1]) == {"s3.put_object"}
    assert script.gathers == [(0, len(methods) - 1)]  # one wait for every upload
    base = f"{saver.s3_thread_prefix('t1')}_/c/{schema.s3_segment(cp['id'])}/"
    keys = {c.kwargs["Key"] for c in script.calls("put_object")}
    assert keys == {base + "body", base + "metadata", saver.value_s3_key("t1", "", "a", "1")}
    item = script.calls("put_item")[0].kwargs["Item"]
    assert item[ATTR.BODY] == {"M": {"s3": {"S": base + "body"}}}
    assert item[ATTR.METADATA] == {"M": {"s3": {"S": base + "metadata"}}}


@pytest.mark.parametrize("mode", MODES)
def test_put_without_a_bucket_moves_the_largest_values_to_blob_items_first(mode: str) -> None:
    """An item over DynamoDB's limit spills its largest held values to their own items."""
    saver, script = scripted_saver(mode)
    sizes = {"a": 150_000, "b": 160_000, "c": 120_000, "d": 10}
    call(
        saver,
        "put",
        cfg("t1"),
        _checkpoint({k: noise(n, i) for i, (k, n) in enumerate(sizes.items())}),
        {},
        {k: "1" for k in sizes},
    )
    assert script.methods() == ["dynamodb.batch_write_item", "dynamodb.put_item"]
    (blob,) = put_requests(script)
    assert blob[ATTR.SK] == {"S": schema.blob_sk("", "b", "1")}  # the largest, and only as many as needed
    assert blob[ATTR.KIND] == {"S": schema.BLOB_ITEM} and ATTR.CREATED in blob  # dated: prune's grace period
    values = script.calls("put_item")[0].kwargs["Item"][ATTR.VALUES]["M"]
    assert values["b"] == {"M": {"v": {"S": "1"}, "l": {"S": "blob"}}}
    assert "B" in values["a"] and "B" in values["c"]


@pytest.mark.parametrize("mode", MODES)
def test_put_too_large_without_a_bucket_fails_before_any_write(mode: str) -> None:
    saver, script = scripted_saver(mode)
    with pytest.raises(PayloadTooLargeError, match="configure bucket_name"):
        _put(saver, {"a": noise(400_000)})
    assert script.log == []
    # Nothing movable: metadata (stored in the item without a bucket) over the limit.
    with pytest.raises(PayloadTooLargeError, match=r"does not fit in a DynamoDB item.*nothing was written"):
        _put(saver, {"a": 1}, note=noise(395_000, 1))
    assert script.log == []


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_too_large_without_a_bucket_fails_before_any_write(mode: str) -> None:
    saver, script = scripted_saver(mode)
    stored = cfg("t1", str(uuid6()))
    with pytest.raises(PayloadTooLargeError, match="nothing was written"):
        call(saver, "put_writes", stored, [("a", noise(200_000)), ("b", noise(200_000, 1))], "task")
    assert script.log == []


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_of_large_values_uploads_them_first_under_the_tasks_prefix(mode: str) -> None:
    saver, script = scripted_saver(mode, bucket_name="bkt", s3_threshold=100)
    cid = str(uuid6())
    call(saver, "put_writes", cfg("t1", cid), [("a", noise(300)), ("b", "small")], "task-1")
    assert script.methods() == ["s3.put_object", "dynamodb.put_item"]
    (upload,) = script.calls("put_object")
    prefix = f"{saver.s3_thread_prefix('t1')}_/c/{schema.s3_segment(cid)}/w/task-1/0."
    assert upload.kwargs["Key"].startswith(prefix)  # a fresh suffix per attempt
    item = script.calls("put_item")[0].kwargs["Item"]
    assert item[f"{ATTR.WRITE_PREFIX}0"] == {"L": [{"S": "a"}, {"M": {"s3": {"S": upload.kwargs["Key"]}}}]}


# ----------------------------------------------------------- special writes


def _written(script: Any) -> dict[str, tuple[dict[str, Any], Any]]:
    """Stored write attribute -> (the action that wrote it, the value written), across put_item and transactions."""
    actions = [{"Put": c.kwargs} for c in script.calls("put_item")]
    actions += [a for c in script.calls("transact_write_items") for a in c.kwargs["TransactItems"]]
    out = {}
    for a in actions:
        body = a["Put"]
        for attr, value in body["Item"].items():
            if attr.startswith(ATTR.WRITE_PREFIX) and attr[1:].lstrip("-").isdigit():
                out[attr] = (body, value)
    return out


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_of_special_channels_only_overwrite(mode: str) -> None:
    """An interrupt or error is the latest word of a task: a retry replaces it (an unconditional put)."""
    saver, script = scripted_saver(mode)
    cid = str(uuid6())
    call(saver, "put_writes", cfg("t1", cid), [("__interrupt__", "first"), ("__interrupt__", "second")], "t")
    written = _written(script)
    assert list(written) == [f"{ATTR.WRITE_PREFIX}-3"]  # the channel's fixed index
    body, value = written[f"{ATTR.WRITE_PREFIX}-3"]
    assert "ConditionExpression" not in body
    assert body["Item"][ATTR.SK] == {"S": schema.writes_sk("", cid, "t", -3)}  # its own item
    assert (
        saver.payloads.unpack(
            value["L"][1]["B"], "test", ("t1", write_place("", cid, "t", -3, "__interrupt__"))
        )
        == "second"
    )


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_with_a_regular_channel_keep_the_first_write_of_each_index(mode: str) -> None:
    saver, script = scripted_saver(mode)
    writes = [("a", 1), ("__error__", "e1"), ("__error__", "e2")]
    cid = str(uuid6())
    call(saver, "put_writes", cfg("t1", cid), writes, "t")
    assert script.methods() == ["dynamodb.transact_write_items"]  # two items, all or nothing
    written = _written(script)
    assert set(written) == {f"{ATTR.WRITE_PREFIX}0", f"{ATTR.WRITE_PREFIX}-1"}
    assert all(body["ConditionExpression"] == "attribute_not_exists(#pk)" for body, _ in written.values())
    assert (
        saver.payloads.unpack(
            written[f"{ATTR.WRITE_PREFIX}-1"][1]["L"][1]["B"],
            "test",
            ("t1", write_place("", cid, "t", -1, "__error__")),
        )
        == "e1"
    )


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_into_an_existing_item_adds_only_missing_indexes(mode: str) -> None:
    """A second call of the task: the put is refused (the item exists), the item read, the rest added."""
    saver, script = scripted_saver(mode)
    cid = str(uuid6())
    sk = schema.writes_sk("", cid, "t")
    old = {
        ATTR.PK: {"S": saver.partition_key("t1")},
        ATTR.SK: {"S": sk},
        ATTR.TASK_ID: {"S": "t"},
        f"{ATTR.WRITE_PREFIX}0": {
            "L": [{"S": "a"}, {"B": saver.payloads.pack(1, "w0", ("t1", write_place("", cid, "t", 0, "a")))}]
        },
    }
    script.when("put_item", ClientError({"Error": {"Code": "ConditionalCheckFailedException"}}, "PutItem"))
    script.when("query", {"Items": [old]})
    call(saver, "put_writes", cfg("t1", cid), [("a", 2), ("b", 3)], "t")
    assert script.methods() == ["dynamodb.put_item", "dynamodb.query", "dynamodb.update_item"]
    kw = script.calls("update_item")[0].kwargs
    assert kw["ExpressionAttributeNames"]["#w0"] == f"{ATTR.WRITE_PREFIX}1"  # idx 0 stays the first write
    assert f"{ATTR.WRITE_PREFIX}0" not in kw["ExpressionAttributeNames"].values()
    assert kw["ConditionExpression"] == "attribute_exists(#pk) AND attribute_not_exists(#w0)"


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_of_many_writes_is_one_transaction_of_small_items(mode: str) -> None:
    saver, script = scripted_saver(mode)
    cid = str(uuid6())
    call(saver, "put_writes", cfg("t1", cid), [("__pregel_tasks", i) for i in range(1000)], "t")
    (tx,) = script.calls("transact_write_items")
    assert script.methods() == ["dynamodb.transact_write_items"]
    puts = [a["Put"] for a in tx.kwargs["TransactItems"]]
    assert len(puts) == -(-1000 // schema.WRITES_PER_ITEM)
    assert [p["Item"][ATTR.SK]["S"] for p in puts] == [
        schema.writes_sk("", cid, "t", n) for n in range(len(puts))
    ]
    assert sum(1 for p in puts for a in p["Item"] if a[1:].isdigit()) == 1000


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_that_met_another_transaction_backs_off_before_trying_again(mode: str) -> None:
    saver, script = scripted_saver(mode)
    cid = str(uuid6())
    writes = [("__pregel_tasks", i) for i in range(200)]  # several items: one transaction
    n = -(-200 // schema.WRITES_PER_ITEM)
    conflict = ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "conflict"},
            "CancellationReasons": [
                {"Code": "TransactionConflict"},
                *({"Code": "None"} for _ in range(n - 1)),
            ],
        },
        "TransactWriteItems",
    )
    script.when("transact_write_items", conflict)
    call(saver, "put_writes", cfg("t1", cid), writes, "t")
    assert script.methods() == [
        "dynamodb.transact_write_items",
        "sleep",  # nothing landed: wait (jittered) before reading what did
        "dynamodb.query",
        "dynamodb.transact_write_items",
    ]
    assert 0 <= script.sleeps()[0] <= 0.05


@pytest.mark.parametrize("mode", MODES)
def test_put_writes_beyond_one_transaction_is_refused_before_any_write(mode: str) -> None:
    saver, script = scripted_saver(mode)
    n = schema.WRITES_PER_ITEM * 99 + 1
    with pytest.raises(PayloadTooLargeError, match="nothing was written"):
        call(saver, "put_writes", cfg("t1", str(uuid6())), [("x", i) for i in range(n)], "t")
    assert script.log == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("writes", "task", "error"),
    [
        ("ab", "t", TypeError),
        ([("a", 1, 2)], "t", TypeError),
        ([(1, 1)], "t", TypeError),
        ([("a", 1)], 7, TypeError),
    ],
)
def test_put_writes_refuses_malformed_input_before_any_request(
    mode: str, writes: Any, task: Any, error: type
) -> None:
    saver, script = scripted_saver(mode)
    with pytest.raises(error):
        call(saver, "put_writes", cfg("t1", str(uuid6())), writes, task)
    assert script.log == []


# ------------------------------------------------------------------ heads


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    t = [T0]
    monkeypatch.setattr(clock, "now", lambda: t[0])
    return t


def _heads(script: Any) -> list[Any]:
    return [c for c in script.calls("update_item") if c.kwargs["Key"][ATTR.SK] == {"S": schema.HEAD_SK}]


@pytest.mark.parametrize("mode", MODES)
def test_activity_writes_the_head_at_most_once_per_window(mode: str, now: list[float]) -> None:
    saver, script = scripted_saver(mode, ttl=3600)
    c1 = _put(saver, {"a": 1})
    # the item, the index layout (once per process and LAYOUT_SECONDS), then the head
    assert script.methods() == ["dynamodb.put_item", "dynamodb.get_item", "dynamodb.update_item"]
    (head,) = _heads(script)
    kw = head.kwargs
    window = 360  # ttl / 10
    assert kw["ExpressionAttributeValues"][":ttl"] == {"N": str(int(T0) + 3600 + window)}
    assert kw["ExpressionAttributeValues"][":root"] == {"S": c1["configurable"]["checkpoint_id"]}
    assert kw["ConditionExpression"] == (
        "(attribute_not_exists(#ttl) OR #ttl < :ttl) AND (attribute_not_exists(#dr) OR NOT contains(#dr, :root))"
    )
    assert kw["ReturnValues"] == "UPDATED_OLD"
    script.reset()
    parent = c1
    for step in range(5):  # within the window: no more head writes, steps or writes alike
        now[0] += 60
        parent = _put(saver, {"a": step}, parent)
        call(saver, "put_writes", parent, [("a", step)], "task")
    assert _heads(script) == [] and len(script.calls("put_item")) == 10  # 5 checkpoints, 5 writes items
    now[0] = T0 + window + 1
    _put(saver, {"a": 9}, parent)
    assert len(_heads(script)) == 1


@pytest.mark.parametrize("mode", MODES)
def test_activity_on_a_deleted_lineage_leaves_the_head_alone(mode: str, now: list[float]) -> None:
    """The head refuses (its condition) to come back for a root a delete recorded; the put still lands."""
    saver, script = scripted_saver(mode, ttl=3600)
    script.when(
        "update_item", ClientError({"Error": {"Code": "ConditionalCheckFailedException"}}, "UpdateItem")
    )
    out = _put(saver, {"a": 1})
    assert out["configurable"]["thread_id"] == "t1"
    assert script.methods() == [
        "dynamodb.put_item",
        "dynamodb.get_item",
        "dynamodb.update_item",
    ]  # no reap, no retry
    script.reset()
    _put(saver, {"a": 2}, out)
    assert script.methods() == ["dynamodb.put_item"]  # not asked again in this window


@pytest.mark.parametrize("mode", MODES)
def test_activity_on_an_expired_unreaped_head_reaps_the_old_items(mode: str, now: list[float]) -> None:
    saver, script = scripted_saver(mode, ttl=3600)
    script.when("update_item", {"Attributes": {ATTR.TTL: {"N": str(int(T0) - 10)}}})
    _put(saver, {"a": 1})
    methods = script.methods()
    assert methods[:4] == ["dynamodb.put_item", "dynamodb.get_item", "dynamodb.update_item", "dynamodb.query"]
    assert script.calls("query")[0].kwargs["ExpressionAttributeValues"][":pk"] == {"S": "t1"}


@pytest.mark.parametrize("mode", MODES)
def test_other_errors_of_the_head_write_escape(mode: str, now: list[float]) -> None:
    saver, script = scripted_saver(mode, ttl=3600)
    script.when(
        "update_item",
        ClientError({"Error": {"Code": "ValidationException"}}, "UpdateItem"),
    )
    with pytest.raises(ClientError):
        _put(saver, {"a": 1})


@pytest.mark.parametrize("mode", MODES)
def test_without_ttl_or_tracking_no_head_is_written(mode: str, now: list[float]) -> None:
    saver, script = scripted_saver(mode)
    _put(saver, {"a": 1})
    assert script.methods() == ["dynamodb.put_item"]
    tracked, tscript = scripted_saver(mode, track_threads=True)
    _put(tracked, {"a": 1})
    (head,) = _heads(tscript)
    assert "ConditionExpression" in head.kwargs and ":ttl" not in head.kwargs["ExpressionAttributeValues"]
