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
    assert d["KeySchema"] == [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ]
    assert {g["IndexName"] for g in d["GlobalSecondaryIndexes"]} == {
        schema.RUN_INDEX_NAME,
        schema.THREADS_INDEX_NAME,
    }
    assert d["StreamSpecification"]["StreamViewType"] == "KEYS_ONLY"
    assert schema.ttl_specification() == {"Enabled": True, "AttributeName": "ttl"}


# ------------------------------------------------- codec choice (issue 16)

# Packed by the codec before "auto" and size-adaptive levels existed (zlib 6,
# zstd 3): a reader must keep decoding what older writers stored.
_OLD_DATA = b'{"k": "' + b"abc" * 300 + b'"}'
_OLD_ZLIB = "AXoEanNvbnicq1bKVrJSUEpMSh5Fo2gUDSBSqgUA+RBa3Q=="
_OLD_ZSTD = "AXMEanNvbii1L/1gjQKdAABgeyJrIjogImFiYyJ9AQB+rRwS"


@pytest.mark.parametrize("blob", [_OLD_ZLIB, _OLD_ZSTD])
@pytest.mark.parametrize("reader", ["none", "zlib", "zstd", "auto"])
def test_payloads_of_older_writers_stay_readable(blob: str, reader: str) -> None:
    import base64

    packed = base64.b64decode(blob)
    assert PayloadCodec(reader).unpack(packed, max_size=len(_OLD_DATA)) == ("json", _OLD_DATA)  # type: ignore[arg-type]


def test_auto_takes_zstd_when_present_and_any_reader_decodes_it() -> None:
    codec = PayloadCodec("auto")
    assert codec.compression == "zstd"  # zstandard is in the dev environment
    packed = codec.pack(("msgpack", TEXT))  # 6 KB: above auto's zlib-only size
    assert packed[1] == ord("s")
    assert PayloadCodec("zlib").unpack(packed) == ("msgpack", TEXT)


def test_levels_follow_the_payload_size() -> None:
    """Small payloads (DynamoDB items: bytes are write units) get zstd 9, large ones (S3) zstd 3,
    and the smallest zlib 6 (a zstd frame header costs more than zstd saves there)."""
    from langgraph.checkpoint.dynamodb.codec import SMALL_PAYLOAD

    auto = PayloadCodec("auto")
    assert auto.codec_for(SMALL_PAYLOAD) == ("zstd", 9) and auto.codec_for(SMALL_PAYLOAD + 1) == ("zstd", 3)
    assert auto.codec_for(3 * 1024 - 1) == ("zlib", 6) and auto.codec_for(3 * 1024) == ("zstd", 9)
    assert PayloadCodec("zlib").codec_for(10**8) == ("zlib", 6)  # measured: lower zlib levels do not pay
    assert PayloadCodec("zstd", level=1).codec_for(10) == ("zstd", 1)  # an explicit level wins
    assert PayloadCodec("zstd").codec_for(10) == ("zstd", 9)  # explicit zstd stays zstd
    # Each payload records its own codec, so a mixed writer is read back by anyone.
    small, large = auto.pack(("json", TEXT[:2000])), auto.pack(("json", TEXT * 20))
    assert (small[1], large[1]) == (ord("z"), ord("s"))
    assert PayloadCodec.unpack(large) == ("json", TEXT * 20)


def test_auto_keeps_small_payloads_no_larger_than_zlib() -> None:
    """Chat-like text under 64 KiB: ``auto`` must not cost more bytes (write units) than zlib 6."""
    rng = __import__("random").Random(7)
    words = ["the", "agent", "stores", "state", "for", "each", "thread", "so", "it", "can", "resume"]
    text = " ".join(rng.choice(words) + str(rng.randint(0, 99)) for _ in range(6000)).encode()[:40_000]
    auto = PayloadCodec("auto").pack(("json", text))
    zlib6 = PayloadCodec("zlib").pack(("json", text))
    assert len(auto) <= len(zlib6)


def test_without_zstd_auto_falls_back_and_zstd_payloads_say_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph.checkpoint.dynamodb import codec as codec_module

    zstd_packed = PayloadCodec("zstd").pack(("json", TEXT))
    monkeypatch.setattr(codec_module, "_ZSTD_MODULE", [None])
    assert not codec_module.zstd_available()
    auto = PayloadCodec("auto")
    assert auto.compression == "zlib" and auto.pack(("json", TEXT))[1] == ord("z")
    # The advice names the package, not an extra (there is none: it is a dependency).
    with pytest.raises(ImportError, match=r"pip install 'zstandard>=0\.22'"):
        PayloadCodec("zstd")
    with pytest.raises(CorruptPayloadError, match=r"pip install 'zstandard>=0\.22'"):
        PayloadCodec.unpack(zstd_packed)


class _StdlibZstd:
    """The documented API of Python 3.14's ``compression.zstd`` (what the codec uses of it),
    built on ``zstandard``: ``compress(data, level=)`` and a ``ZstdDecompressor`` whose
    ``decompress(data, max_length)`` returns at most ``max_length`` bytes and keeps the rest."""

    __name__ = "compression.zstd"

    @staticmethod
    def compress(data: bytes, level: int = 3) -> bytes:
        import zstandard

        return bytes(zstandard.ZstdCompressor(level=level).compress(data))

    class ZstdDecompressor:
        def __init__(self) -> None:
            self.eof = False
            self.needs_input = True
            self._reader: object = None
            self.calls = 0

        def decompress(self, data: bytes, max_length: int = -1) -> bytes:
            import zstandard

            if data:
                # Only what the data really expands to, whatever the frame declares.
                self._reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=False)
            assert self._reader is not None
            want = max_length if max_length >= 0 else 1 << 40
            out = self._reader.read(want)  # type: ignore[attr-defined]
            if len(out) < want:
                # Drained: a complete frame ends here; a truncated one leaves eof unset.
                self.eof = self._complete
                self.needs_input = not self.eof
            else:
                self.needs_input = False
            return bytes(out)

        _complete = True


def test_standard_library_zstd_is_used_when_present_and_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On Python 3.14+ the codec uses ``compression.zstd`` (here a stand-in with its API)."""
    import zstandard

    from langgraph.checkpoint.dynamodb import codec as codec_module

    fake = _StdlibZstd()
    monkeypatch.setattr(codec_module, "_ZSTD_MODULE", [fake])
    monkeypatch.setattr(codec_module, "_CHUNK", 1000)  # several steps per payload
    codec = PayloadCodec("auto")
    assert codec.compression == "zstd"
    packed = codec.pack(("json", TEXT))
    assert packed[1] == ord("s")
    # Written through the stand-in, read by zstandard and the other way round.
    assert zstandard.ZstdDecompressor().stream_reader(packed[7:]).read() == TEXT
    assert PayloadCodec.unpack(packed, max_size=len(TEXT)) == ("json", TEXT)
    # A bomb stops one byte past the limit, never expanded further.
    bomb = b"\x01s\x04json" + zstandard.ZstdCompressor().compress(b"0" * 10_000_000)
    from langgraph.checkpoint.dynamodb import PayloadLimitError

    with pytest.raises(PayloadLimitError):
        PayloadCodec.unpack(bomb, max_size=5000)
    # A truncated frame is corrupt, not a short payload.
    monkeypatch.setattr(_StdlibZstd.ZstdDecompressor, "_complete", False)
    with pytest.raises(CorruptPayloadError, match="truncated"):
        PayloadCodec.unpack(packed[:-4])


# ------------------------------------------- the default codec (issue 16)


def test_the_savers_default_to_the_measured_codec() -> None:
    """One constant decides the default; both savers and the codec take it (docs/benchmarks.md)."""
    import inspect

    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
    from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
    from langgraph.checkpoint.dynamodb.codec import DEFAULT_COMPRESSION

    assert DEFAULT_COMPRESSION == "auto"
    # The savers' settings are declared once, in the base constructor.
    for fn in (BaseDynamoDBSaver.__init__, PayloadCodec):
        assert inspect.signature(fn).parameters["compression"].default == DEFAULT_COMPRESSION, fn
    for cls in (DynamoDBSaver, AsyncDynamoDBSaver):
        saver = cls(table_name="t", region_name="us-east-1", dynamodb_client=object())
        assert saver.codec.compression == PayloadCodec(DEFAULT_COMPRESSION).compression, cls
    # Not a name only: with the default, a large payload is written as zstd.
    assert PayloadCodec().pack(("msgpack", TEXT * 20))[1] == ord("s")


@pytest.mark.parametrize("compression", ["zlib", "zstd", "auto"])
def test_encrypted_payloads_are_never_compressed(compression: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ciphertext does not shrink: trying only burns CPU (zlib 6: ~25 ms per MB) to discard the result."""
    codec = PayloadCodec(compression)  # type: ignore[arg-type]
    tried: list[str] = []
    real = PayloadCodec._compress

    def spy(name: str, level: int, data: bytes) -> bytes:
        tried.append(name)
        return real(name, level, data)

    monkeypatch.setattr(PayloadCodec, "_compress", staticmethod(spy))
    # EncryptedSerializer names its payloads "<type>+<cipher>"; even data that
    # would compress (a custom cipher's framing, a test double) is left alone.
    packed = codec.pack(("msgpack+aes", TEXT))
    assert packed[1] == ord("n") and packed.endswith(TEXT) and tried == []
    assert PayloadCodec.unpack(packed) == ("msgpack+aes", TEXT)
    # Plain payloads are still compressed.
    assert codec.pack(("msgpack", TEXT))[1] in (ord("z"), ord("s")) and tried
