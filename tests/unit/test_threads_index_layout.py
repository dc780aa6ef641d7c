"""The threads index's layout: heads spread over a shard count that doubles under index throttling.

Scripted (no server): what a head write does when DynamoDB says the index's
partition is over its limit, what a tenant without a grant on the layout
item does, and that a forged layout cannot split readers from writers.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb._operations.heads import (
    index_write_throttled,
    shard_count_of,
    valid_shard_count,
)
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.script import call, scripted_saver
from tests.unit.stored import cfg

MODES = ["sync", "async"]
INDEX_ARN = f"arn:aws:dynamodb:us-east-1:123456789012:table/t/index/{schema.THREADS_INDEX_NAME}"


@pytest.fixture(autouse=True)
def _frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock, "now", lambda: 1_800_000_000.0)


def _throttle(reason: str = "IndexWriteKeyRangeThroughputExceeded", resource: str = INDEX_ARN) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "ProvisionedThroughputExceededException", "Message": "throttled"},
            "ThrottlingReasons": [{"reason": reason, "resource": resource}],
        },
        "UpdateItem",
    )


def _layout(n: Any) -> dict[str, Any]:
    return {"Item": {ATTR.PK: {"S": schema.LAYOUT_PK}, ATTR.SK: {"S": schema.THREADS_LAYOUT_SK}, "n": n}}


def _put(saver: Any, thread_id: str = "t1") -> Any:
    cp = empty_checkpoint()
    return call(saver, "put", cfg(thread_id), cp, {}, {})


def _head_writes(script: Any) -> list[Any]:
    return [c for c in script.calls("update_item") if c.kwargs["Key"][ATTR.SK] == {"S": schema.HEAD_SK}]


def _layout_writes(script: Any) -> list[Any]:
    return [c for c in script.calls("update_item") if c.kwargs["Key"][ATTR.PK] == {"S": schema.LAYOUT_PK}]


@pytest.mark.parametrize("mode", MODES)
def test_a_head_write_uses_the_recorded_shard_count(mode: str) -> None:
    saver, script = scripted_saver(mode, track_threads=True)
    script.when("get_item", _layout({"N": "16"}))
    _put(saver, "t1")
    (head,) = _head_writes(script)
    assert head.kwargs["ExpressionAttributeValues"][":ts"] == {"S": schema.thread_shard("t1", 16)}
    assert schema.thread_shard("t1", 16) != schema.thread_shard("t1")  # the count really changed the shard
    (layout_read,) = script.calls("get_item")
    assert layout_read.kwargs["Key"] == {
        ATTR.PK: {"S": schema.LAYOUT_PK},
        ATTR.SK: {"S": schema.THREADS_LAYOUT_SK},
    }
    assert layout_read.kwargs["ConsistentRead"] is False  # a stale count is still a recorded one
    script.reset()
    _put(saver, "t2")  # another thread of the same process: the cached layout
    assert script.calls("get_item") == [] and len(_head_writes(script)) == 1


@pytest.mark.parametrize("mode", MODES)
def test_an_index_throttled_head_write_doubles_the_shards_and_lands(mode: str) -> None:
    saver, script = scripted_saver(mode, track_threads=True)
    # the cached read (nothing recorded: 4), the head throttled by the index,
    # the grow (4 -> 8), the fresh read (8), the head again.
    script.when("get_item", {}, _layout({"N": "8"}))
    script.when("update_item", _throttle(), {}, {})
    _put(saver, "t1")
    (grow,) = _layout_writes(script)
    assert grow.kwargs["ExpressionAttributeValues"][":n"] == {"N": "8"}
    assert grow.kwargs["ConditionExpression"] == "attribute_not_exists(#n) OR #n < :n"
    first, second = _head_writes(script)
    assert first.kwargs["ExpressionAttributeValues"][":ts"] == {"S": schema.thread_shard("t1", 4)}
    assert second.kwargs["ExpressionAttributeValues"][":ts"] == {"S": schema.thread_shard("t1", 8)}
    assert script.calls("get_item")[-1].kwargs["ConsistentRead"] is True
    script.assert_done()


@pytest.mark.parametrize("mode", MODES)
def test_a_lost_grow_race_takes_the_winners_count(mode: str) -> None:
    saver, script = scripted_saver(mode, track_threads=True)
    lost = ClientError({"Error": {"Code": "ConditionalCheckFailedException"}}, "UpdateItem")
    script.when("get_item", {}, _layout({"N": "32"}))
    script.when("update_item", _throttle(), lost, {})
    _put(saver, "t1")
    assert _head_writes(script)[-1].kwargs["ExpressionAttributeValues"][":ts"] == {
        "S": schema.thread_shard("t1", 32)
    }


@pytest.mark.parametrize("mode", MODES)
def test_at_the_maximum_the_head_write_is_paced_until_it_lands(mode: str) -> None:
    saver, script = scripted_saver(mode, track_threads=True)
    script.when("get_item", _layout({"N": str(schema.THREADS_INDEX_MAX_SHARDS)}), _layout({"N": "256"}))
    script.when("update_item", _throttle(), _throttle())
    _put(saver, "t1")
    assert _layout_writes(script) == []  # nothing above the maximum is ever written
    methods = script.methods()
    assert methods.count("sleep") == 2 and len(_head_writes(script)) == 3  # waited twice, then landed


@pytest.mark.parametrize("mode", MODES)
def test_a_table_throttle_does_not_grow_the_index_and_is_paced(mode: str) -> None:
    saver, script = scripted_saver(mode, track_threads=True)
    script.when(
        "update_item", _throttle("TableWriteKeyRangeThroughputExceeded", "arn:aws:dynamodb:::table/t")
    )
    _put(saver, "t1")
    assert _layout_writes(script) == []
    assert script.methods().count("sleep") == 1 and len(_head_writes(script)) == 2


@pytest.mark.parametrize("mode", MODES)
def test_a_tenant_without_a_grant_on_the_layout_uses_the_minimum(mode: str) -> None:
    saver, script = scripted_saver(mode, track_threads=True)
    denied = ClientError({"Error": {"Code": "AccessDeniedException"}}, "GetItem")
    script.when("get_item", denied)
    _put(saver, "t1")
    (head,) = _head_writes(script)
    assert head.kwargs["ExpressionAttributeValues"][":ts"] == {"S": schema.thread_shard("t1", 4)}


@pytest.mark.parametrize(
    "stored",
    [{"N": "3"}, {"N": "1024"}, {"N": "12"}, {"N": "8.0"}, {"S": "8"}, {"N": "-8"}, {"N": "1e400"}],
)
def test_a_forged_layout_reads_as_the_minimum(stored: dict[str, str]) -> None:
    """Readers and writers both read it so: they still agree on where heads are."""
    assert shard_count_of(_layout(stored)["Item"]) == schema.THREADS_INDEX_MIN_SHARDS


def test_valid_counts_are_powers_of_two_within_bounds() -> None:
    assert [n for n in range(0, 600) if valid_shard_count(n)] == [4, 8, 16, 32, 64, 128, 256]
    assert not valid_shard_count(True) and not valid_shard_count(8.0)


def test_only_the_threads_index_counts_as_index_throttling() -> None:
    assert index_write_throttled(_throttle())
    assert not index_write_throttled(
        _throttle(resource=INDEX_ARN.replace(schema.THREADS_INDEX_NAME, "run_id-index"))
    )
    assert not index_write_throttled(_throttle("TableWriteKeyRangeThroughputExceeded"))
    bare = ClientError({"Error": {"Code": "ProvisionedThroughputExceededException"}}, "UpdateItem")
    assert not index_write_throttled(bare)


def test_doubling_moves_a_thread_to_its_twin_or_keeps_it() -> None:
    for i in range(200):
        t = f"thread-{i}"
        four, eight = int(schema.thread_shard(t, 4)), int(schema.thread_shard(t, 8))
        assert eight in (four, four + 4)
