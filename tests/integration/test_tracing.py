"""OpenTelemetry spans: one per saver operation, with what it did; no OpenTelemetry without the extra."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.aio import AsyncDynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import StoreNotFoundError

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the first test in this process installs it
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def _run(mode: str, names: dict[str, str], steps: Any) -> None:
    # No value cache: the get_tuple below must download the value it counts.
    names = {**names, "value_cache_bytes": 0}  # type: ignore[dict-item]
    if mode == "sync":
        with DynamoDBSaver(**names, region_name="us-east-1") as saver:
            saver.setup()
            steps(saver, lambda r: r)
        return
    import asyncio

    async def main() -> None:
        async with AsyncDynamoDBSaver(**names, region_name="us-east-1") as saver:
            await saver.setup()
            results = []

            def later(coro: Any) -> Any:
                results.append(coro)
                return coro

            steps(saver, later)
            for coro in results:
                await coro

    asyncio.run(main())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_one_span_per_saver_operation_with_its_counts(
    mode: str, moto_endpoint: str, names: dict[str, str], spans: InMemorySpanExporter
) -> None:
    cp = empty_checkpoint()
    cp["channel_values"] = {"small": "x", "big": os.urandom(100_000).hex()}  # incompressible: S3
    cp["channel_versions"] = {"small": "1", "big": "1"}
    prefix = "" if mode == "sync" else "a"

    def steps(saver: Any, run: Any) -> None:
        run(getattr(saver, prefix + "put")(_cfg("t1"), cp, {"step": 1}, {"small": "1", "big": "1"}))
        run(getattr(saver, prefix + "get_tuple")(_cfg("t1")))
        run(getattr(saver, prefix + "copy_thread")("t1", "t2"))

    _run(mode, names, steps)
    done = [s for s in spans.get_finished_spans() if s.name != "langgraph.checkpoint.setup"]
    assert [s.name for s in done] == [
        "langgraph.checkpoint.put",
        "langgraph.checkpoint.get_tuple",
        "langgraph.checkpoint.copy_thread",
    ]
    put, get, copy = done
    saver_cls = "DynamoDBSaver" if mode == "sync" else "AsyncDynamoDBSaver"
    for span in done:
        assert span.kind is trace.SpanKind.CLIENT
        assert span.attributes is not None
        assert span.attributes["langgraph.thread_id"] == "t1"
        assert span.attributes["langgraph.checkpoint.saver"] == saver_cls
        assert span.attributes["db.system"] == "aws.dynamodb"
        assert span.status.status_code is not StatusCode.ERROR
    assert put.attributes is not None and get.attributes is not None and copy.attributes is not None
    # The big value went to S3 before the one PutItem.
    assert put.attributes["langgraph.checkpoint.dynamodb.requests"] == 1
    assert put.attributes["langgraph.checkpoint.s3.objects_written"] == 1
    assert put.attributes["langgraph.checkpoint.s3.bytes_written"] > 0
    assert put.attributes["langgraph.checkpoint.requests"] == 2
    assert put.attributes["langgraph.checkpoint_ns"] == ""
    # get_tuple: one Query, one S3 GET of the big value.
    assert get.attributes["langgraph.checkpoint.dynamodb.requests"] == 1
    assert get.attributes["langgraph.checkpoint.s3.requests"] == 1
    assert get.attributes["langgraph.checkpoint.s3.bytes_read"] > 0
    assert copy.attributes["langgraph.target_thread_id"] == "t2"


def test_a_failed_operation_ends_its_span_in_error(
    moto_endpoint: str, names: dict[str, str], spans: InMemorySpanExporter
) -> None:
    # No setup: the table is missing.
    with DynamoDBSaver(**names, region_name="us-east-1") as saver, pytest.raises(StoreNotFoundError):
        saver.get_tuple(_cfg("t1"))
    (span,) = spans.get_finished_spans()
    assert span.name == "langgraph.checkpoint.get_tuple"
    assert span.status.status_code is StatusCode.ERROR
    assert any(e.name == "exception" for e in span.events)


def test_a_list_read_halfway_ends_its_span_without_error(
    moto_endpoint: str, names: dict[str, str], spans: InMemorySpanExporter
) -> None:
    with DynamoDBSaver(**names, region_name="us-east-1") as saver:
        saver.setup()
        cfg = _cfg("t1")
        for step in range(3):
            cp = empty_checkpoint()
            cfg = saver.put(cfg, cp, {"step": step}, {})
        it = saver.list(_cfg("t1"))
        next(it)
        it.close()  # abandoned: GeneratorExit through the span, not an error
    (span,) = [s for s in spans.get_finished_spans() if s.name == "langgraph.checkpoint.list"]
    assert span.status.status_code is not StatusCode.ERROR


def test_without_opentelemetry_nothing_is_imported_and_operations_run(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    # A process where OpenTelemetry cannot be found (as without the extra).
    code = textwrap.dedent(
        f"""
        import sys

        sys.modules["opentelemetry"] = None  # as if not installed: import fails, find_spec is None
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.dynamodb import DynamoDBSaver
        saver = DynamoDBSaver(table_name={names["table_name"]!r}, region_name="us-east-1")
        saver.setup()
        saver.put({{"configurable": {{"thread_id": "t", "checkpoint_ns": ""}}}}, empty_checkpoint(), {{}}, {{}})
        assert saver.get_tuple({{"configurable": {{"thread_id": "t"}}}}) is not None
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m] is not None)
        assert not loaded, loaded
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=120
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


def test_importing_the_savers_imports_no_opentelemetry_even_when_installed() -> None:
    code = (
        "import sys; import langgraph.checkpoint.dynamodb as m; import langgraph.checkpoint.dynamodb.aio; "
        "m.DynamoDBSaver; print(sorted(k for k in sys.modules if k.startswith('opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_no_payload_in_errors_or_span_status(
    moto_endpoint: str, names: dict[str, str], spans: InMemorySpanExporter
) -> None:
    """With encryption on, a value that decrypts but cannot be rebuilt names its type, never its data."""
    import boto3
    import ormsgpack
    from langgraph.checkpoint.base.id import uuid6
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    from langgraph.checkpoint.dynamodb import CorruptPayloadError, schema
    from langgraph.checkpoint.dynamodb._parts import binding
    from langgraph.checkpoint.dynamodb.codec import PayloadCodec
    from langgraph.checkpoint.dynamodb.serde import StateTypesSerializer
    from tests.security import _serde_gadgets as gadgets

    serde = EncryptedSerializer.from_pycryptodome_aes(serde=StateTypesSerializer(), key=b"s" * 32)
    with DynamoDBSaver(table_name=names["table_name"], serde=serde) as saver:
        saver.setup()
        cp = empty_checkpoint()
        cp["id"] = str(uuid6())
        cp["channel_values"] = {"v": 1}
        cp["channel_versions"] = {"v": "1"}
        stored = saver.put(_cfg("t-secret"), cp, {}, {"v": "1"})
        # A loaded dataclass, rebuilt with a field it does not have: the field name is the secret.
        record = ormsgpack.packb(
            ormsgpack.Ext(
                2,
                ormsgpack.packb((gadgets.__name__, "TouchOnInit", {"TOP_SECRET_FIELD": "TOP-SECRET-VALUE"})),
            )
        )
        # Sealed where it is read (the thread, channel v at version 1): it decrypts there.
        place = binding.value_place("", "v", "1")
        type_name, data = binding.seal_serialized(
            serde, ("msgpack", record), binding.thread_digest("", "t-secret"), place
        )
        boto3.client("dynamodb").update_item(
            TableName=names["table_name"],
            Key={
                "PK": {"S": "t-secret"},
                "SK": {"S": schema.checkpoint_sk("", stored["configurable"]["checkpoint_id"])},
            },
            UpdateExpression="SET vals.v = :v",
            ExpressionAttributeValues={":v": {"B": PayloadCodec("none").pack((type_name, data))}},
        )
        spans.clear()
        with pytest.raises(CorruptPayloadError) as info:
            saver.get_tuple(stored)
    assert "TouchOnInit" in str(info.value)
    import traceback

    logged = "".join(traceback.format_exception(info.value))  # what a logger.exception would print
    assert "TOP" not in logged
    (span,) = [s for s in spans.get_finished_spans() if s.status.status_code is StatusCode.ERROR]
    assert "TOP" not in (span.status.description or "")
    assert all("TOP" not in str(dict(e.attributes or {})) for e in span.events)


def test_contended_requests_are_counted_on_the_span(spans: InMemorySpanExporter) -> None:
    from botocore.exceptions import ClientError

    from langgraph.checkpoint.dynamodb._engine.ops import ddb
    from langgraph.checkpoint.dynamodb._engine.tracing import traced

    def put(saver: Any, config: Any) -> Any:  # an operation that retries what it is handed back
        while True:
            try:
                return (yield ddb("transact_write_items", TransactItems=[]))
            except ClientError:
                continue

    conflict = ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "[TransactionConflict, None]"},
            "CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}],
        },
        "TransactWriteItems",
    )
    single = ClientError({"Error": {"Code": "TransactionConflictException", "Message": "m"}}, "UpdateItem")
    throttled = ClientError({"Error": {"Code": "ThrottlingException", "Message": "m"}}, "TransactWriteItems")
    other = ClientError({"Error": {"Code": "ConditionalCheckFailedException", "Message": "m"}}, "PutItem")
    op = traced(DynamoDBSaver.__new__(DynamoDBSaver), put(None, _cfg("t1")))
    next(op)
    for exc in (conflict, single, throttled, other):
        op.throw(exc)
    with pytest.raises(StopIteration):
        op.send({})
    (span,) = spans.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes["langgraph.checkpoint.dynamodb.conflicts"] == 2
    assert span.attributes["langgraph.checkpoint.dynamodb.throttles"] == 1
    events = [e for e in span.events if e.name == "langgraph.checkpoint.contended"]
    assert [e.attributes["aws.error_code"] for e in events if e.attributes] == [
        "TransactionCanceledException",
        "TransactionConflictException",
        "ThrottlingException",
    ]
