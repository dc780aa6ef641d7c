"""Payload codec and key schema: pure functions, no network."""

from __future__ import annotations

import os

import pytest

from langgraph.checkpoint.dynamodb import CorruptPayloadError, UnsupportedFormatError, schema
from langgraph.checkpoint.dynamodb.codec import PayloadCodec

TEXT = ("the same words again and again " * 200).encode()


@pytest.mark.parametrize("compression", ["none", "zlib", "zstd"])
def test_round_trip_and_any_reader_decodes(compression: str) -> None:
    packed = PayloadCodec(compression).pack(("msgpack", TEXT))  # type: ignore[arg-type]
    # The codec is recorded per payload: a reader configured differently decodes it.
    assert PayloadCodec("none").unpack(packed) == ("msgpack", TEXT)
    if compression == "none":
        assert len(packed) > len(TEXT)
    else:
        assert len(packed) < len(TEXT) / 10


def test_compression_kept_only_when_it_pays() -> None:
    noise = os.urandom(4096)
    packed = PayloadCodec("zlib").pack(("bytes", noise))
    assert packed[1] == ord("n") and packed.endswith(noise)
    small = PayloadCodec("zlib", min_size=512).pack(("json", b"x" * 100))
    assert small[1] == ord("n")


@pytest.mark.parametrize(
    "blob,error,match",
    [
        (b"\x01", CorruptPayloadError, "truncated"),
        (b"\x01n\x09msg", CorruptPayloadError, "header"),
        (b"\x02n\x04json{}", UnsupportedFormatError, "format 2"),
        (b"\x01z\x04jsonnot-zlib", CorruptPayloadError, "decompress"),
        (b"\x01q\x04json{}", CorruptPayloadError, "codec"),
    ],
)
def test_bad_payloads_are_refused(blob: bytes, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        PayloadCodec.unpack(blob, where="channel 'x'")


def test_bad_compression_name() -> None:
    with pytest.raises(ValueError, match="compression"):
        PayloadCodec("lz4")  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["", "a|b", "%7C", "a%7Cb|%", "子图:1|2", "|m|thread"])
def test_escape_round_trips_and_never_leaves_a_separator(value: str) -> None:
    assert schema.unescape(schema.escape(value)) == value
    assert schema.SEP not in schema.escape(value)


def test_sort_keys_parse_back_and_meta_keys_cannot_collide() -> None:
    assert schema.parse_sk(schema.checkpoint_sk("a|b", "c|1")) == ("a|b", "c", "c|1", None)
    assert schema.parse_sk(schema.writes_sk("", "1", "t|x")) == ("", "w", "1", "t|x")
    assert schema.parse_sk(schema.blob_sk("n", "ch|1", "v|2")) == ("n", "v", "ch|1", "v|2")
    assert schema.parse_sk(schema.HEAD_SK)[1] == schema.META_ITEM
    # No namespace, however named, produces a meta item's key.
    for ns in ("", "|m|", "m", "%7Cm"):
        assert not schema.checkpoint_sk(ns, "x").startswith(schema.META_PREFIX)



def test_tombstone_sorts_above_every_checkpoint_of_its_namespace_only() -> None:
    """The descending latest-checkpoint Query reads the tombstone first (deletion finality)."""
    for ns in ("", "sub:1", "a|b"):
        tomb = schema.tombstone_sk(ns)
        assert schema.parse_sk(tomb) == (ns, schema.TOMBSTONE_ITEM, "", None)
        assert tomb.startswith(schema.checkpoint_prefix(ns))
        for cid in ("1f1ec7fa-42c3-6c86-8005-2fe32295b06b", "~~~", "\uffff" * 3, "\U0010fffe"):
            for sk in (schema.checkpoint_sk(ns, cid), schema.writes_sk(ns, cid, "t")):
                assert sk.encode() < tomb.encode()  # DynamoDB orders sort keys by UTF-8 bytes
    assert not schema.tombstone_sk("a").startswith(schema.checkpoint_prefix("a|b"))


def test_table_definition_is_the_single_source() -> None:
    d = schema.table_definition("t")
    assert d["KeySchema"] == [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}]
    assert {g["IndexName"] for g in d["GlobalSecondaryIndexes"]} == {schema.RUN_INDEX_NAME, schema.THREADS_INDEX_NAME}
    assert d["StreamSpecification"]["StreamViewType"] == "KEYS_ONLY"
    assert schema.ttl_specification() == {"Enabled": True, "AttributeName": "ttl"}
