"""Client and session injection, and setup() idempotence."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, ParamValidationError
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from tests.support.harness import Harness, cfg, new_thread


def test_sync_saver_with_injected_clients_and_session(moto_endpoint: str, names: dict[str, str]) -> None:
    ddb = boto3.client("dynamodb")
    s3 = boto3.client("s3")
    saver = DynamoDBSaver(**names, dynamodb_client=ddb, s3_client=s3)
    saver.setup()
    saver.setup()  # idempotent
    assert saver.clients["dynamodb"] is ddb and saver.clients["s3"] is s3
    stored = saver.put(
        cfg(new_thread()),
        {
            "v": 1,
            "id": "1",
            "ts": "",
            "channel_values": {"a": 1},
            "channel_versions": {"a": "1"},
            "versions_seen": {},
            "updated_channels": None,
        },
        {},
        {"a": "1"},
    )  # type: ignore[typeddict-item]
    saver.close()  # injected clients stay usable
    assert ddb.describe_table(TableName=names["table_name"])["Table"]["TableStatus"] == "ACTIVE"
    other = DynamoDBSaver(**names, boto3_session=boto3.session.Session(region_name="us-east-1"))
    assert other.get_tuple(stored).checkpoint["channel_values"] == {"a": 1}


def test_async_saver_with_injected_clients_and_session(moto_endpoint: str, names: dict[str, str]) -> None:
    from aiobotocore.session import get_session

    async def run() -> None:
        session = get_session()
        async with session.create_client("dynamodb", region_name="us-east-1") as ddb:
            saver = AsyncDynamoDBSaver(table_name=names["table_name"], dynamodb_client=ddb)
            await saver.setup()
            stored = await saver.aput(
                cfg(new_thread()),
                {
                    "v": 1,
                    "id": "1",
                    "ts": "",
                    "channel_values": {"a": 2},
                    "channel_versions": {"a": "1"},
                    "versions_seen": {},
                    "updated_channels": None,
                },
                {},
                {"a": "1"},
            )  # type: ignore[typeddict-item]
            await saver.aclose()  # must not close the injected client
            assert (await ddb.describe_table(TableName=names["table_name"]))["Table"][
                "TableStatus"
            ] == "ACTIVE"
        async with AsyncDynamoDBSaver(table_name=names["table_name"], session=session) as other:
            assert (await other.aget_tuple(stored)).checkpoint["channel_values"] == {"a": 2}
            assert other.clients["dynamodb"] is not None
        assert other.clients["dynamodb"] is None  # closed on exit

    asyncio.run(run())


def _copies(saver: Any) -> list[Any]:
    def passthrough(call: Any) -> Any:
        return (yield call)

    return [saver.tenant_view("acme#"), saver.with_write_guard(passthrough)]


def test_closing_a_tenant_view_or_guarded_copy_closes_none_of_the_savers_clients(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy borrows its saver's clients: closing it leaves them open and in place."""
    h = harness
    stored = h.call("put", cfg(new_thread()), checkpoint(), {}, {"a": "1"})
    before = dict(h.saver.clients)
    closed: list[str] = []
    for name, client in before.items():
        if client is not None and not h.opts.get("io_thread"):  # io_thread: proxies, closed on the I/O loop
            monkeypatch.setattr(client, "close", _recording(client.close, closed, name))
    for copy in _copies(h.saver):
        if h.is_async:
            h.loop.run(copy.aclose())
        else:
            copy.close()
    assert closed == []
    assert {k: v is before[k] for k, v in h.saver.clients.items()} == {k: True for k in before}
    assert h.call("get_tuple", stored).checkpoint["channel_values"] == {"a": 1}


def _recording(close: Any, closed: list[str], name: str) -> Any:
    if asyncio.iscoroutinefunction(close):

        async def aclose() -> Any:
            closed.append(name)
            return await close()

        return aclose

    def sync_close() -> Any:
        closed.append(name)
        return close()

    return sync_close


def test_a_copy_entered_first_opens_its_savers_clients(moto_endpoint: str, names: dict[str, str]) -> None:
    """Clients a copy needs are opened by (and closed with) the saver it was made from."""

    async def run() -> None:
        saver = AsyncDynamoDBSaver(**names)
        await saver.setup()
        await saver.aclose()
        for copy in _copies(saver):
            async with copy:
                assert copy.clients["dynamodb"] is saver.clients["dynamodb"] is not None
            assert saver.clients["dynamodb"] is not None  # leaving the copy closed nothing
            await saver.aclose()
            assert saver.clients["dynamodb"] is None and saver.clients["s3"] is None

    asyncio.run(run())


def checkpoint() -> Any:
    return {
        "v": 1,
        "id": str(uuid6()),
        "ts": "",
        "channel_values": {"a": 1},
        "channel_versions": {"a": "1"},
        "versions_seen": {},
        "updated_channels": None,
    }


def test_the_clients_a_saver_opens_skip_botocores_parameter_validation(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    """The savers build every request themselves; botocore's second walk over each only costs CPU.

    An empty table name: botocore's validation refuses it before sending
    (``ParamValidationError``); without it the request goes out and the
    service refuses it (``ClientError``).
    """
    with DynamoDBSaver(**names) as saver:
        saver.setup()
        with pytest.raises(ClientError):
            saver.clients["dynamodb"].describe_table(TableName="")
        with pytest.raises(ParamValidationError):  # a client with botocore's defaults
            boto3.client("dynamodb").describe_table(TableName="")

    async def run() -> Any:
        async with AsyncDynamoDBSaver(**names) as saver:
            await saver.ensure_clients()
            try:
                await saver.clients["dynamodb"].describe_table(TableName="")
            except (ClientError, ParamValidationError) as e:
                return e

    assert isinstance(asyncio.run(run()), ClientError)


def test_without_aiobotocore_the_async_saver_names_the_extra(
    names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install without the ``async`` extra: a message naming it, not a bare ``ModuleNotFoundError``."""
    import sys

    monkeypatch.setitem(sys.modules, "aiobotocore.session", None)  # what `import` sees when it is absent

    async def enter() -> None:
        async with AsyncDynamoDBSaver(**names):
            pass

    with pytest.raises(ImportError, match=r"langgraph-checkpoint-dynamodb-s3\[async\]"):
        asyncio.run(enter())


def test_without_a_region_the_saver_says_where_one_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """The usual first-hour slip: a shell where ``local.env`` was not sourced."""
    from botocore.exceptions import NoRegionError

    from langgraph.checkpoint.dynamodb import RegionNotSetError

    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    with pytest.raises(RegionNotSetError, match=r"AWS_REGION.*local\.env") as info:
        DynamoDBSaver(table_name="t")
    assert isinstance(info.value, NoRegionError)  # code catching botocore's error still does

    async def enter() -> None:
        async with AsyncDynamoDBSaver(table_name="t"):
            pass

    with pytest.raises(RegionNotSetError, match=r"local\.env"):
        asyncio.run(enter())


def test_every_error_the_library_raises_is_importable_from_the_package() -> None:
    import langgraph.checkpoint.dynamodb as package
    from langgraph.checkpoint.dynamodb import errors

    assert set(errors.__all__) <= set(package.__all__)
    for name in errors.__all__:
        assert getattr(package, name) is getattr(errors, name)
