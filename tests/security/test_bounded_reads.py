"""Bounded reads: no stored payload can make a reader allocate more than ``max_payload_size``.

The attacker has write access to its own tenant's items and S3 objects and
stores what expands the most: a zlib or zstd bomb (hundreds of MiB in a few
hundred KB, under DynamoDB's item limit), an S3 object far larger than any
checkpoint. Every read (sync and async, with and without encryption) must
refuse it with a ``PayloadLimitError`` that names the item or key, the limit
and the option, *before* memory grows: decompression stops at the limit and
an S3 body over the limit is refused on its ``ContentLength`` (or after
``limit + 1`` bytes when there is none), never read whole.

Peak memory is measured in a fresh process (``benchmarks/bounded.py``) with
the default limit, which is also how the unbounded reader of before the fix
was caught: it peaked at several times the bomb's compressed size.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

import boto3
import pytest
from benchmarks.bounded import attack, prepare, run_reader, zlib_bomb, zstd_bomb

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, CorruptPayloadError, DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb._engine.ops import Call
from langgraph.checkpoint.dynamodb.codec import PayloadCodec
from tests.support.harness import Harness, new_thread

ATTR = schema.ATTR
MIB = 1024 * 1024

#: The default limit (``codec.DEFAULT_MAX_PAYLOAD_SIZE``), spelled out so that
#: this module also runs against the code before the fix.
DEFAULT_LIMIT = 64 * MIB

#: The reader's limit in the in-process tests; the bombs expand to 20x that.
LIMIT = 1 * MIB
BOMB = 20 * MIB


def _reader(harness: Harness, **kw: Any) -> Any:
    return harness.make_saver(max_payload_size=LIMIT, **kw)


def _close(harness: Harness, saver: Any) -> None:
    if harness.is_async:
        harness.loop.run(saver.aclose())
    else:
        saver.close()


def _refused(harness: Harness, saver: Any, config: dict[str, Any]) -> str:
    """Read ``config`` with ``saver``: it must refuse with the limit error; return the message."""
    with pytest.raises(CorruptPayloadError) as err:
        harness.call("get_tuple", config, saver=saver)
    msg = str(err.value)
    assert type(err.value).__name__ == "PayloadLimitError", msg
    assert "max_payload_size" in msg and str(LIMIT) in msg, msg
    return msg


@pytest.mark.parametrize("where", ["checkpoint", "metadata", "blob-item"])
@pytest.mark.parametrize("codec", ["zlib", "zstd"])
def test_bomb_in_an_item_is_refused_at_the_limit(harness: Harness, codec: str, where: str) -> None:
    """A bomb in an item's payload (checkpoint body, metadata, blob item) is
    refused once decompression reaches the limit, naming the item."""
    thread = new_thread()
    table, bucket = harness.table_name, harness.bucket_name or harness.table_name
    if harness.bucket_name is None:
        boto3.client("s3").create_bucket(Bucket=bucket)
    serde = harness.saver_kwargs().get("serde")
    prepared = prepare(table, bucket, thread, **({"serde": serde} if serde else {}))
    cid = prepared["config"]["configurable"]["checkpoint_id"]
    bomb = zlib_bomb(BOMB) if codec == "zlib" else zstd_bomb(BOMB)
    assert len(bomb) < 400_000
    sk = prepared["blob_sk"] if where == "blob-item" else schema.checkpoint_sk("", cid)
    attr = {"checkpoint": ATTR.BODY, "metadata": ATTR.METADATA, "blob-item": ATTR.BLOB}[where]
    boto3.client("dynamodb").update_item(
        TableName=table,
        Key={ATTR.PK: {"S": schema.partition_key(thread)}, ATTR.SK: {"S": sk}},
        UpdateExpression="SET #a = :v",
        ExpressionAttributeNames={"#a": attr},
        ExpressionAttributeValues={":v": {"B": bomb}},
    )
    # The prepared thread keeps a value in S3: read it with a saver that has the bucket.
    reader = _reader(harness, bucket_name=bucket)
    try:
        msg = _refused(harness, reader, prepared["config"])
        assert "decompressed" in msg
        assert ("channel 'blob'" in msg) if where == "blob-item" else (repr(cid) in msg), msg
    finally:
        _close(harness, reader)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_oversized_s3_body_is_refused_before_reading(
    moto_endpoint: str, names: dict[str, str], mode: str
) -> None:
    """A channel value's S3 object replaced by a body over the limit: refused
    on its ContentLength, naming the key; a body at the limit still reads."""
    DynamoDBSaver(**names).setup()
    thread = new_thread()
    prepared = prepare(names["table_name"], names["bucket_name"], thread)
    attack("s3-body", names["table_name"], names["bucket_name"], thread, prepared, size=3 * MIB)
    with pytest.raises(CorruptPayloadError) as err:
        _read(mode, names, prepared["config"], LIMIT)
    msg = str(err.value)
    assert f"s3://{names['bucket_name']}/{prepared['s3_key']}" in msg, msg
    assert "refused before reading" in msg and str(LIMIT) in msg and "max_payload_size" in msg, msg
    # A legitimate object up to the limit is still read (the bound is not off by one).
    s3 = boto3.client("s3")
    body = s3.get_object(Bucket=names["bucket_name"], Key=prepared["s3_key"])["Body"].read(64)
    # msgpack 0 followed by zeros, exactly LIMIT bytes: decodes to 0.
    s3.put_object(Bucket=names["bucket_name"], Key=prepared["s3_key"], Body=body[:10] + bytes(LIMIT - 10))
    tup = _read(mode, names, prepared["config"], LIMIT)
    assert tup is not None and tup.checkpoint["channel_values"]["s3"] == 0


def _read(mode: str, names: dict[str, str], config: dict[str, Any], limit: int) -> Any:
    """``get_tuple(config)`` on a fresh saver with ``max_payload_size=limit``."""
    if mode == "sync":
        with DynamoDBSaver(**names, max_payload_size=limit) as saver:
            return saver.get_tuple(config)

    async def main() -> Any:
        async with AsyncDynamoDBSaver(**names, max_payload_size=limit) as saver:
            return await saver.aget_tuple(config)

    return asyncio.run(main())


# ------------------------------------------------ the drivers' read bound


class _Stream:
    """An S3 body with no ContentLength (a chunked response) that returns at
    most ``step`` bytes per read, as a socket does; records what was asked."""

    def __init__(self, data: bytes, step: int = 1 << 30) -> None:
        self.data, self.step, self.asked, self.closed = data, step, [], False
        self.pos = 0

    def read(self, amt: int | None = None) -> bytes:
        self.asked.append(amt)
        n = len(self.data) if amt is None else min(amt, self.step)
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out

    def close(self) -> None:
        self.closed = True


class _AsyncStream(_Stream):
    async def read(self, amt: int | None = None) -> bytes:  # type: ignore[override]
        return super().read(amt)

    async def __aenter__(self) -> _AsyncStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.closed = True


def test_drivers_never_read_more_than_limit_plus_one() -> None:
    """Without a ContentLength, both drivers ask for at most limit + 1 bytes
    and refuse what that returns if it is over the limit (no network here:
    the S3 client is a stand-in that serves a 1 MiB body)."""
    call = Call("s3", "get_object", {"Bucket": "b", "Key": "k"}, max_bytes=1000)
    sync_body = _Stream(bytes(MIB))

    class SyncS3:
        def get_object(self, **kw: Any) -> dict[str, Any]:
            return {"Body": sync_body}

    saver = DynamoDBSaver(table_name="t", bucket_name="b", dynamodb_client=object(), s3_client=SyncS3())
    with pytest.raises(CorruptPayloadError, match=r"s3://b/k .*max_payload_size \(1000 bytes\)"):
        saver.driver.call(call)
    assert sync_body.asked == [1001]

    async_body = _AsyncStream(bytes(MIB))

    class AsyncS3:
        async def get_object(self, **kw: Any) -> dict[str, Any]:
            return {"Body": async_body}

    asaver = AsyncDynamoDBSaver(
        table_name="t", bucket_name="b", dynamodb_client=object(), s3_client=AsyncS3()
    )
    with pytest.raises(CorruptPayloadError, match=r"s3://b/k .*max_payload_size \(1000 bytes\)"):
        asyncio.run(asaver.driver.call(call))
    assert async_body.asked == [1001] and async_body.closed
    # At the limit exactly, a body served in pieces is returned whole, in both drivers.
    sync_body = _Stream(bytes(range(250)) * 4, step=64)
    assert saver.driver.call(call)["Body"] == bytes(range(250)) * 4
    assert max(a for a in sync_body.asked if a is not None) <= 1001
    async_body = _AsyncStream(bytes(range(250)) * 4, step=64)
    assert asyncio.run(asaver.driver.call(call))["Body"] == bytes(range(250)) * 4
    # Over it, in pieces: refused after limit + 1 bytes, the rest never asked for.
    async_body = _AsyncStream(bytes(MIB), step=64)
    with pytest.raises(CorruptPayloadError, match="max_payload_size"):
        asyncio.run(asaver.driver.call(call))
    assert async_body.pos == 1001


def test_codec_bounds_decompression_and_keeps_its_format() -> None:
    """The codec stops at ``max_size + 1`` bytes, and legitimate payloads round-trip."""
    from langgraph.checkpoint.dynamodb.codec import DEFAULT_MAX_PAYLOAD_SIZE

    assert DEFAULT_MAX_PAYLOAD_SIZE == DEFAULT_LIMIT
    codec = PayloadCodec("zlib", min_size=0)
    packed = codec.pack(("json", b"x" * 5000))
    assert PayloadCodec.unpack(packed, max_size=5000) == ("json", b"x" * 5000)
    with pytest.raises(CorruptPayloadError, match="max_payload_size"):
        PayloadCodec.unpack(packed, max_size=4999)
    zs = PayloadCodec("zstd", min_size=0).pack(("json", b"y" * 5000))
    assert PayloadCodec.unpack(zs, max_size=5000) == ("json", b"y" * 5000)
    # A zstd frame streamed without a declared size is not expanded past the
    # limit either (frames that declare theirs are the bombs above).
    import zstandard

    streamed = zstandard.ZstdCompressor().compressobj()
    data = streamed.compress(bytes(BOMB)) + streamed.flush()
    with pytest.raises(CorruptPayloadError, match="max_payload_size"):
        PayloadCodec.unpack(b"\x01s\x04json" + data, max_size=LIMIT)
    # Truncated and garbage data are still corrupt, not a size problem.
    with pytest.raises(CorruptPayloadError, match="cannot decompress"):
        PayloadCodec.unpack(packed[:-5], max_size=LIMIT)
    assert zlib.decompress(packed[7:]) == b"x" * 5000  # the stored format is unchanged


# ------------------------------------------------------------ peak memory


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["zlib-item", "zstd-item", "blob-item", "s3-body"])
def test_peak_memory_of_a_reader_fed_a_bomb(
    moto_endpoint: str, names: dict[str, str], kind: str, mode: str
) -> None:
    """The issue's 370 MiB bomb (and a 256 MiB S3 body), read with the default
    limit by a fresh process: it refuses, and its peak RSS grows by less than
    the limit plus a codec window, far below what the payload expands to."""
    DynamoDBSaver(**names).setup()
    table, bucket = names["table_name"], names["bucket_name"]
    warm, thread = new_thread(), new_thread()
    prepare(table, bucket, warm)
    prepared = prepare(table, bucket, thread)
    size = 256 * MIB if kind == "s3-body" else 370 * MIB
    attack(kind, table, bucket, thread, prepared, size=size)
    res = run_reader(mode, table, bucket, thread, warm)
    assert res["error"] == "PayloadLimitError", res
    # About the limit (decompression keeps up to limit + 1 bytes before it
    # refuses) plus a codec window; the payloads expand to 256-370 MiB.
    assert res["growth_mib"] < DEFAULT_LIMIT / MIB + 24, res


def test_lambda_environment_sets_the_limit(moto_endpoint: str) -> None:
    """``LANGGRAPH_DYNAMODB_MAX_PAYLOAD_SIZE`` reaches the Lambdas' saver; a bad value names the variable."""
    from langgraph.checkpoint.dynamodb.lambdas.handlers import StoreConfig

    with StoreConfig.from_env(
        {"LANGGRAPH_DYNAMODB_TABLE": "t", "LANGGRAPH_DYNAMODB_MAX_PAYLOAD_SIZE": "1000"}
    ).saver() as saver:
        assert saver.max_payload_size == 1000
    with StoreConfig.from_env({"LANGGRAPH_DYNAMODB_TABLE": "t"}).saver() as saver:
        assert saver.max_payload_size == DEFAULT_LIMIT
    with pytest.raises(ValueError, match="LANGGRAPH_DYNAMODB_MAX_PAYLOAD_SIZE"):
        StoreConfig.from_env({"LANGGRAPH_DYNAMODB_TABLE": "t", "LANGGRAPH_DYNAMODB_MAX_PAYLOAD_SIZE": "64MB"})
    with pytest.raises(ValueError, match="max_payload_size"):
        DynamoDBSaver(table_name="t", max_payload_size=0)
