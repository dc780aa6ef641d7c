"""The moto server's transaction-conflict layer (tests/support/contention.py), through real clients.

Each rule fires as DynamoDB documents it, with DynamoDB's error shapes, and
does not fire for disjoint items or once the transaction has finished. A
transaction is held in flight for 400 ms here (not the default 10 ms), so
that "while it runs" is certain on a loaded machine.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.support import contention

HOLD_MS = 400.0


@pytest.fixture
def layer(moto_endpoint: str) -> Iterator[str]:
    with contention.enabled(moto_endpoint, hold_ms=HOLD_MS):
        yield moto_endpoint


@pytest.fixture
def table(moto_endpoint: str, names: dict[str, str]) -> Iterator[str]:
    ddb = boto3.client("dynamodb")
    name = names["table_name"]
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("PK", "SK")],
    )
    yield name
    ddb.delete_table(TableName=name)


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def _put(table: str, pk: str, sk: str, v: str = "1") -> dict[str, Any]:
    return {"Put": {"TableName": table, "Item": {**_key(pk, sk), "v": {"S": v}}}}


def _check(table: str, pk: str, sk: str) -> dict[str, Any]:
    return {
        "ConditionCheck": {
            "TableName": table,
            "Key": _key(pk, sk),
            "ConditionExpression": "attribute_not_exists(#x)",
            "ExpressionAttributeNames": {"#x": "x"},
        }
    }


def _in_background(fn: Callable[[], Any], endpoint: str) -> tuple[threading.Thread, list[Any]]:
    """``fn`` on a thread; returns once its transaction is in flight on the server."""
    out: list[Any] = []
    before = contention.status(endpoint)["counts"].get("transactions", 0)

    def run() -> None:
        try:
            out.append(fn())
        except Exception as exc:
            out.append(exc)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 10
    while contention.status(endpoint)["counts"].get("transactions", 0) <= before:
        assert time.monotonic() < deadline, "the background transaction never reached the server"
        time.sleep(0.005)
    return t, out


def test_a_transaction_touching_an_item_of_one_in_flight_is_cancelled(layer: str, table: str) -> None:
    ddb = boto3.client("dynamodb")
    first, out = _in_background(
        lambda: ddb.transact_write_items(TransactItems=[_check(table, "p", "lock"), _put(table, "p", "a")]),
        layer,
    )
    with pytest.raises(ClientError) as info:
        ddb.transact_write_items(TransactItems=[_put(table, "p", "b"), _check(table, "p", "lock")])
    first.join()
    err = info.value.response
    assert err["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in err["CancellationReasons"]] == ["None", "TransactionConflict"]
    assert err["CancellationReasons"][1]["Message"] == "Transaction is ongoing for the item"
    assert "[None, TransactionConflict]" in err["Error"]["Message"]
    assert err["ResponseMetadata"]["RetryAttempts"] == 0  # botocore does not retry it
    assert not isinstance(out[0], Exception)  # the first one landed
    assert "Item" not in ddb.get_item(TableName=table, Key=_key("p", "b"))  # the cancelled one did not
    state = contention.status(layer)
    assert state["counts"]["transaction_conflicts"] == 1
    assert contention.conflicts_on(state, "p") == 1


@pytest.mark.parametrize("operation", ["put_item", "update_item", "delete_item"])
def test_a_single_write_to_an_item_of_a_transaction_in_flight_conflicts(
    layer: str, table: str, operation: str
) -> None:
    ddb = boto3.client("dynamodb")
    first, _ = _in_background(
        lambda: ddb.transact_write_items(TransactItems=[_check(table, "p", "lock"), _put(table, "p", "a")]),
        layer,
    )
    args: dict[str, Any] = {"TableName": table}
    if operation == "put_item":
        args["Item"] = {**_key("p", "lock"), "v": {"S": "2"}}
    else:
        args["Key"] = _key("p", "lock")
        if operation == "update_item":
            args.update(UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"S": "2"}})
    with pytest.raises(ClientError) as info:
        getattr(ddb, operation)(**args)
    # The same write on another item of the same partition goes through.
    other = dict(args)
    other["Item" if operation == "put_item" else "Key"] = {
        **_key("p", "other"),
        **({"v": {"S": "2"}} if operation == "put_item" else {}),
    }
    getattr(ddb, operation)(**other)
    first.join()
    err = info.value.response
    assert err["Error"]["Code"] == "TransactionConflictException"
    assert "ongoing transaction" in err["Error"]["Message"]
    assert err["ResponseMetadata"]["RetryAttempts"] == 0
    assert contention.status(layer)["counts"]["write_conflicts"] == 1
    getattr(ddb, operation)(**args)  # once the transaction is over, the write goes through


def test_disjoint_transactions_run_together(layer: str, table: str) -> None:
    ddb = boto3.client("dynamodb")
    first, out = _in_background(
        lambda: ddb.transact_write_items(TransactItems=[_check(table, "p", "lock"), _put(table, "p", "a")]),
        layer,
    )
    started = time.monotonic()
    ddb.transact_write_items(TransactItems=[_check(table, "q", "lock"), _put(table, "p", "b")])
    first.join()
    assert not isinstance(out[0], Exception)
    state = contention.status(layer)
    assert state["counts"].get("transaction_conflicts", 0) == 0 and state["counts"]["transactions_run"] == 2
    # Both were in flight at once: they overlapped, and neither waited for the other.
    assert state["peak_inflight_items"] == 4
    assert time.monotonic() - started < 2 * HOLD_MS / 1000 + 1


def test_a_finished_transaction_holds_nothing(layer: str, table: str) -> None:
    ddb = boto3.client("dynamodb")
    ddb.transact_write_items(TransactItems=[_check(table, "p", "lock"), _put(table, "p", "a")])
    ddb.transact_write_items(TransactItems=[_check(table, "p", "lock"), _put(table, "p", "b")])
    ddb.put_item(TableName=table, Item={**_key("p", "lock"), "v": {"S": "3"}})
    state = contention.status(layer)
    assert state["counts"]["transactions_run"] == 2 and state["transaction_sizes"] == {"2": 2}
    assert (
        state["counts"].get("transaction_conflicts", 0) == 0
        and state["counts"].get("write_conflicts", 0) == 0
    )


def test_off_the_layer_conflicts_with_nothing(moto_endpoint: str, table: str) -> None:
    with contention.enabled(moto_endpoint, hold_ms=HOLD_MS):
        contention.set_mode(moto_endpoint, "off")
        ddb = boto3.client("dynamodb")
        first = threading.Thread(
            target=ddb.transact_write_items,
            kwargs={"TransactItems": [_check(table, "p", "lock"), _put(table, "p", "a")]},
        )
        first.start()
        ddb.transact_write_items(TransactItems=[_check(table, "p", "lock"), _put(table, "p", "b")])
        first.join()
        assert contention.status(moto_endpoint)["counts"] == {}


def test_aiobotocore_sees_the_same_cancellation(layer: str, table: str) -> None:
    from aiobotocore.session import get_session

    async def main() -> dict[str, Any]:
        async with get_session().create_client("dynamodb") as ddb:
            first = asyncio.ensure_future(
                ddb.transact_write_items(TransactItems=[_check(table, "p", "lock"), _put(table, "p", "a")])
            )
            while not contention.status(layer)["counts"].get("transactions"):
                await asyncio.sleep(0.005)
            try:
                await ddb.transact_write_items(TransactItems=[_check(table, "p", "lock")])
            except ClientError as exc:
                await first
                return exc.response
            raise AssertionError("the second transaction was not cancelled")

    err = asyncio.run(main())
    assert err["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in err["CancellationReasons"]] == ["TransactionConflict"]


def test_a_cancelled_transaction_leaves_the_table_as_it_was(moto_endpoint: str, table: str) -> None:
    # moto_serial backs a table up once per transaction (cheaply): its rollback must still be whole.
    ddb = boto3.client("dynamodb")
    ddb.put_item(TableName=table, Item={**_key("p", "kept"), "v": {"S": "old"}})
    ddb.put_item(TableName=table, Item={**_key("p", "gone"), "v": {"S": "old"}})
    ddb.put_item(TableName=table, Item={**_key("p", "lock"), "x": {"S": "taken"}})  # the check fails
    before = sorted(str(i) for i in ddb.scan(TableName=table)["Items"])
    update = {
        "Update": {
            "TableName": table,
            "Key": _key("p", "kept"),
            "UpdateExpression": "SET v = :v",
            "ExpressionAttributeValues": {":v": {"S": "new"}},
        }
    }
    delete = {"Delete": {"TableName": table, "Key": _key("p", "gone")}}
    with pytest.raises(ClientError) as info:
        ddb.transact_write_items(
            TransactItems=[update, delete, _put(table, "p", "added"), _check(table, "p", "lock")]
        )
    codes = [r["Code"] for r in info.value.response["CancellationReasons"]]
    assert codes == ["None", "None", "None", "ConditionalCheckFailed"]
    assert sorted(str(i) for i in ddb.scan(TableName=table)["Items"]) == before


def test_writes_past_a_partitions_rate_are_throttled_as_dynamodb_throttles(
    moto_endpoint: str, table: str
) -> None:
    from botocore.config import Config

    ddb = boto3.client("dynamodb", config=Config(retries={"mode": "standard", "total_max_attempts": 1}))
    with contention.enabled(moto_endpoint, hold_ms=0, throttle=0.005):  # 5 WCU/s per partition key value
        started = time.monotonic()
        landed, refused = 0, []
        for i in range(20):
            try:
                ddb.put_item(TableName=table, Item={**_key("hot", f"i{i}"), "v": {"S": "x"}})
                landed += 1
            except ClientError as exc:
                refused.append(exc.response)
        elapsed = time.monotonic() - started
        ddb.put_item(TableName=table, Item={**_key("cold", "c"), "v": {"S": "x"}})  # its own partition: fine
        with pytest.raises(ClientError) as info:
            ddb.transact_write_items(TransactItems=[_put(table, "cold", "d"), _put(table, "hot", "late")])
        state = contention.status(moto_endpoint)
    assert refused and landed <= 5 + 5 * elapsed + 1
    err = refused[0]
    assert err["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert err["ThrottlingReasons"] == [
        {
            "reason": "TableWriteKeyRangeThroughputExceeded",
            "resource": f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}",
        }
    ]
    cancelled = info.value.response
    assert cancelled["Error"]["Code"] == "TransactionCanceledException"
    assert [r["Code"] for r in cancelled["CancellationReasons"]] == ["None", "ThrottlingError"]
    assert (
        state["counts"]["throttled_writes"] == len(refused) and state["counts"]["throttled_transactions"] == 1
    )
    assert "Item" not in ddb.get_item(TableName=table, Key=_key("cold", "d"))  # refused whole


# --------------------------------------------------------------------------
# The throughput layer (tests/support/throughput.py): capacity as DynamoDB and S3 count it
# --------------------------------------------------------------------------

from botocore.config import Config  # noqa: E402

from tests.support import throughput  # noqa: E402

ONE_TRY = Config(retries={"mode": "standard", "total_max_attempts": 1})


@pytest.fixture
def gsi_table(moto_endpoint: str, names: dict[str, str]) -> Iterator[str]:
    """A table with a sparse KEYS_ONLY index (``g``/``SK``) and a sparse ALL one (``s``/``u``)."""
    ddb = boto3.client("dynamodb")
    name = names["table_name"]
    ddb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": a, "AttributeType": "S"} for a in ("PK", "SK", "g", "s", "u")
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "keys",
                "KeySchema": [
                    {"AttributeName": "g", "KeyType": "HASH"},
                    {"AttributeName": "SK", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
            {
                "IndexName": "all",
                "KeySchema": [
                    {"AttributeName": "s", "KeyType": "HASH"},
                    {"AttributeName": "u", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
        ],
    )
    yield name
    ddb.delete_table(TableName=name)


def _item(pk: str, sk: str, size: int, **extra: str) -> dict[str, Any]:
    """An item of exactly ``size`` bytes as DynamoDB counts them (names + UTF-8 values)."""
    base = {**_key(pk, sk), **{k: {"S": v} for k, v in extra.items()}}
    used = sum(len(k) + len(next(iter(v.values()))) for k, v in base.items()) + 1  # + the name "v"
    return {**base, "v": {"S": "x" * (size - used)}}


def _units(endpoint: str, table: str, kind: str, index: str | None = None) -> float:
    return throughput.total(throughput.capacity(endpoint), table, kind, index)


def test_reads_are_counted_in_4kb_units_eventual_at_half_transactional_at_double(
    moto_endpoint: str, table: str
) -> None:
    ddb = boto3.client("dynamodb")
    ddb.put_item(TableName=table, Item=_item("p", "big", 4097))  # 2 read units
    ddb.put_item(TableName=table, Item=_item("p", "small", 100))  # 1 read unit
    with throughput.counting(moto_endpoint):
        ddb.get_item(TableName=table, Key=_key("p", "big"), ConsistentRead=True)  # 2
        ddb.get_item(TableName=table, Key=_key("p", "big"))  # 1
        ddb.get_item(TableName=table, Key=_key("p", "missing"))  # 0.5: a read costs at least that
        ddb.batch_get_item(  # each item its own GetItem: 2 + 1, eventually consistent: 1.5
            RequestItems={table: {"Keys": [_key("p", "big"), _key("p", "small")]}}
        )
        ddb.transact_get_items(TransactItems=[{"Get": {"TableName": table, "Key": _key("p", "small")}}])  # 2
        state = throughput.capacity(moto_endpoint)
    assert throughput.total(state, table, "read") == 2 + 1 + 0.5 + 1.5 + 2
    assert throughput.total(state, table, "write") == 0
    assert state["tables"][table]["partitions"]["p"]["read"] == 7
    assert state["requests"]["dynamodb:GetItem"] == 3


def test_a_query_costs_the_summed_size_of_the_items_it_reads_not_returns(
    moto_endpoint: str, table: str
) -> None:
    ddb = boto3.client("dynamodb")
    for i in range(3):
        ddb.put_item(TableName=table, Item=_item("q", f"i{i}", 1500))  # 4,500 bytes: 2 units, not 3
    ddb.put_item(TableName=table, Item=_item("other", "i", 4000))
    with throughput.counting(moto_endpoint):
        query = {
            "TableName": table,
            "KeyConditionExpression": "PK = :p",
            "ExpressionAttributeValues": {":p": {"S": "q"}},
            "ConsistentRead": True,
        }
        assert len(ddb.query(**query)["Items"]) == 3
        filtered = ddb.query(
            **{**query, "ExpressionAttributeValues": {":p": {"S": "q"}, ":n": {"S": "none"}}},
            FilterExpression="v = :n",
        )
        assert filtered["Items"] == [] and filtered["ScannedCount"] == 3
        ddb.query(**query, ProjectionExpression="SK")
        ddb.query(**{**query, "ConsistentRead": False})
        state = throughput.capacity(moto_endpoint)
    assert throughput.total(state, table, "read") == 2 + 2 + 2 + 1
    assert list(state["tables"][table]["partitions"]) == ["q"]


def test_writes_are_counted_in_1kb_units_the_larger_of_before_and_after(
    moto_endpoint: str, table: str
) -> None:
    ddb = boto3.client("dynamodb")
    ddb.put_item(TableName=table, Item=_item("w", "old", 3000))
    with throughput.counting(moto_endpoint):
        ddb.put_item(TableName=table, Item=_item("w", "new", 1025))  # 2
        ddb.put_item(TableName=table, Item=_item("w", "old", 100))  # replaces 3,000 bytes: 3
        ddb.update_item(  # 100 -> 2,100 bytes: 3
            TableName=table,
            Key=_key("w", "old"),
            UpdateExpression="SET v = :v",
            ExpressionAttributeValues={":v": {"S": "y" * 2090}},
        )
        ddb.delete_item(TableName=table, Key=_key("w", "new"))  # the deleted item's 1,025 bytes: 2
        with pytest.raises(ClientError):  # refused by its condition, still its item's size: 3
            ddb.put_item(
                TableName=table, Item=_item("w", "old", 10), ConditionExpression="attribute_not_exists(PK)"
            )
        ddb.batch_write_item(  # each item: 1 + 1
            RequestItems={table: [{"PutRequest": {"Item": _item("w", f"b{i}", 50)}} for i in range(2)]}
        )
        ddb.transact_write_items(  # twice each action: 2 * (1 + 3)
            TransactItems=[_put(table, "w", "t"), _check(table, "w", "old")]
        )
        state = throughput.capacity(moto_endpoint)
    assert throughput.total(state, table, "write") == 2 + 3 + 3 + 2 + 3 + 2 + 8
    assert throughput.total(state, table, "read") == 0


def test_index_writes_follow_the_items_that_enter_leave_or_move_in_each_index(
    moto_endpoint: str, gsi_table: str
) -> None:
    ddb = boto3.client("dynamodb")

    def update(expression: str, **values: str) -> None:
        ddb.update_item(
            TableName=gsi_table,
            Key=_key("p", "a"),
            UpdateExpression=expression,
            ExpressionAttributeValues={f":{k}": {"S": v} for k, v in values.items()},
        )

    def indexes() -> tuple[float, float]:
        state = throughput.capacity(moto_endpoint)
        return (
            throughput.total(state, gsi_table, "write", "keys"),
            throughput.total(state, gsi_table, "write", "all"),
        )

    with throughput.counting(moto_endpoint):
        ddb.put_item(TableName=gsi_table, Item=_item("p", "a", 200))  # in neither (sparse): 0, 0
        assert indexes() == (0, 0)
        update("SET g = :g", g="g1")  # enters keys: 1
        assert indexes() == (1, 0)
        update("SET v = :v", v="z" * 1500)  # not projected in keys: 0
        assert indexes() == (1, 0)
        update("SET s = :s, u = :u", s="s1", u="1")  # enters all (2 KB projected): 2
        assert indexes() == (1, 2)
        update("SET u = :u", u="2")  # moves all's key: delete + put, 2 KB each: 4
        assert indexes() == (1, 6)
        update("SET g = :g", g="g2")  # moves keys' key: 2; all: a projected attribute changed: 2
        assert indexes() == (3, 8)
        ddb.delete_item(TableName=gsi_table, Key=_key("p", "a"))  # leaves both: 1 + 2
        state = throughput.capacity(moto_endpoint)
    assert indexes() == (4, 10)
    parts = state["tables"][gsi_table]["indexes"]["keys"]["partitions"]
    assert parts == {"g1": {"read": 0, "write": 2}, "g2": {"read": 0, "write": 2}}


@pytest.fixture
def limited(moto_endpoint: str) -> Iterator[str]:
    """Limits at 1/1,000 of AWS's (1 WCU/s, 3 RCU/s a partition), on a frozen virtual clock."""
    with throughput.counting(moto_endpoint, scale=0.001, s3_scale=0.001, clock="virtual"):
        yield moto_endpoint


def test_a_hot_partition_key_is_throttled_as_dynamodb_throttles_it(limited: str, table: str) -> None:
    ddb = boto3.client("dynamodb", config=ONE_TRY)
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}"
    ddb.put_item(TableName=table, Item=_item("hot", "a", 2000))  # 2 WCU: the 1-unit bucket goes below zero
    with pytest.raises(ClientError) as info:
        ddb.put_item(TableName=table, Item=_item("hot", "b", 10))
    err = info.value.response
    assert err["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert err["ThrottlingReasons"] == [{"reason": "TableWriteKeyRangeThroughputExceeded", "resource": arn}]
    assert "Item" not in ddb.get_item(TableName=table, Key=_key("hot", "b"))  # it did not happen
    ddb.put_item(TableName=table, Item=_item("cold", "a", 10))  # another partition key value: served
    with pytest.raises(ClientError) as cancelled:
        ddb.transact_write_items(TransactItems=[_put(table, "cold2", "d"), _put(table, "hot", "c")])
    codes = [r["Code"] for r in cancelled.value.response["CancellationReasons"]]
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert codes == ["None", "ThrottlingError"]
    throughput.advance(limited, 2.0)  # two seconds later the bucket has refilled
    ddb.put_item(TableName=table, Item=_item("hot", "b", 10))
    # Reads: 3 RCU/s a partition key value; a 12 KB strongly consistent read takes 3.
    ddb.put_item(TableName=table, Item=_item("read", "r", 12000))
    throughput.advance(limited, 20.0)
    ddb.get_item(TableName=table, Key=_key("read", "r"), ConsistentRead=True)
    with pytest.raises(ClientError) as read:
        ddb.get_item(TableName=table, Key=_key("read", "r"), ConsistentRead=True)
    assert read.value.response["ThrottlingReasons"] == [
        {"reason": "TableReadKeyRangeThroughputExceeded", "resource": arn}
    ]
    state = throughput.capacity(limited)
    assert state["throttles"] == {
        "TableWriteKeyRangeThroughputExceeded": 2,
        "TableReadKeyRangeThroughputExceeded": 1,
    }


def test_a_hot_index_partition_throttles_the_base_table_write(limited: str, gsi_table: str) -> None:
    ddb = boto3.client("dynamodb", config=ONE_TRY)
    # Different table partitions, one index partition ("s" = "shard"), as thread heads on a shard.
    ddb.put_item(TableName=gsi_table, Item=_item("t1", "h", 1500, s="shard", u="1"))  # index: 2 WCU
    with pytest.raises(ClientError) as info:
        ddb.put_item(TableName=gsi_table, Item=_item("t2", "h", 100, s="shard", u="2"))
    err = info.value.response
    assert err["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert err["ThrottlingReasons"] == [
        {
            "reason": "IndexWriteKeyRangeThroughputExceeded",
            "resource": f"arn:aws:dynamodb:us-east-1:123456789012:table/{gsi_table}/index/all",
        }
    ]
    assert "Item" not in ddb.get_item(TableName=gsi_table, Key=_key("t2", "h"))  # undone
    ddb.put_item(TableName=gsi_table, Item=_item("t3", "h", 100, s="other", u="3"))  # another shard: served
    ddb.put_item(TableName=gsi_table, Item=_item("t2", "h", 100))  # not in the index at all: served


def test_an_on_demand_table_past_its_quota_is_throttled(moto_endpoint: str, table: str) -> None:
    ddb = boto3.client("dynamodb", config=ONE_TRY)
    # A table maximum of 2 units (scale 1): each partition key value is far below its own.
    with throughput.counting(moto_endpoint, scale=1, table_max=2, clock="virtual"):
        ddb.put_item(TableName=table, Item=_item("a", "x", 2000))
        with pytest.raises(ClientError) as info:
            ddb.put_item(TableName=table, Item=_item("b", "x", 10))
    err = info.value.response
    assert err["Error"]["Code"] == "RequestLimitExceeded"
    assert err["ThrottlingReasons"] == [
        {
            "reason": "TableWriteAccountLimitExceeded",
            "resource": f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}",
        }
    ]


def test_s3_answers_slow_down_past_a_prefixs_request_rate(limited: str, names: dict[str, str]) -> None:
    s3 = boto3.client("s3", config=ONE_TRY)
    bucket = names["bucket_name"]
    s3.create_bucket(Bucket=bucket)  # a write: the bucket's one partition has 3.5 a second
    for i in range(3):
        s3.put_object(Bucket=bucket, Key=f"checkpoints/t{i}/o", Body=b"x")
    with pytest.raises(ClientError) as info:
        s3.put_object(Bucket=bucket, Key="checkpoints/t9/o", Body=b"x")
    err = info.value.response
    assert err["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert (
        err["Error"]["Code"] == "SlowDown" and err["Error"]["Message"] == "Please reduce your request rate."
    )
    s3.get_object(Bucket=bucket, Key="checkpoints/t0/o")  # reads have their own rate
    state = throughput.capacity(limited)
    assert state["s3"][bucket]["write"] == 4 and state["s3"][bucket]["read"] == 1
    assert state["s3"][bucket]["prefixes"]["checkpoints/t0"] == {"read": 1, "write": 1}
    assert state["throttles"] == {"SlowDown": 1}
