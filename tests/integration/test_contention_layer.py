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
