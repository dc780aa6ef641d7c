"""Payload codec: how one serialized value is packed into bytes.

A payload is what ``serde.dumps_typed`` returns: a ``(type, bytes)`` pair.
It is packed as::

    byte 0      format version (1)
    byte 1      codec: ``n`` none, ``z`` zlib, ``s`` zstd
    byte 2      length L of the serde type name
    bytes 3..   type name (L bytes, ASCII), then the (possibly compressed) data

The codec is recorded per payload, so a reader decodes whatever a writer with
any compression setting produced. Compression is applied only above
``min_size`` and kept only when it actually shrinks the payload: encrypted
payloads, for instance, do not compress and are stored as they are.

Decoding is bounded: a reader never produces more than ``max_size`` bytes
of one payload, however large the data claims (or turns out) to be. A few
hundred kilobytes of zlib or zstd can expand to gigabytes, and whoever can
write an item can write such a bomb.
"""

from __future__ import annotations

import zlib
from typing import Literal

from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
    PayloadLimitError,
    UnsupportedFormatError,
)

__all__ = ["DEFAULT_MAX_PAYLOAD_SIZE", "Compression", "PayloadCodec"]

#: Largest payload (decompressed, or S3 body) a reader accepts by default:
#: 64 MiB. LangGraph states with large tool outputs legitimately reach
#: several MB; 64 MiB leaves an order of magnitude of room for them while one
#: decoded payload (plus its deserialized objects) stays a fraction of a
#: 1 GB Lambda. Raise it with the savers' ``max_payload_size``.
DEFAULT_MAX_PAYLOAD_SIZE = 64 * 1024 * 1024

# Output is produced this many bytes at a time, so memory follows what a
# payload really expands to, never what its header declares.
_CHUNK = 1024 * 1024

Compression = Literal["none", "zlib", "zstd"]

_VERSION = 1
_NONE, _ZLIB, _ZSTD = ord("n"), ord("z"), ord("s")


class PayloadCodec:
    """Packs and unpacks ``(type, bytes)`` payloads, compressing where it pays.

    Args:
        compression: ``"zlib"`` (default, standard library), ``"zstd"``
            (needs the ``zstandard`` package) or ``"none"``.
        min_size: payloads smaller than this many bytes are never compressed.
        level: compression level (zlib 1-9, zstd 1-22).

    Example:
        >>> codec = PayloadCodec("zlib", min_size=16)
        >>> packed = codec.pack(("json", b'{"a": "' + b"x" * 100 + b'"}'))
        >>> codec.unpack(packed)[0]
        'json'
    """

    def __init__(
        self, compression: Compression = "zlib", *, min_size: int = 512, level: int | None = None
    ) -> None:
        if compression not in ("none", "zlib", "zstd"):
            raise ValueError(f"compression must be 'none', 'zlib' or 'zstd', got {compression!r}")
        if compression == "zstd":
            try:
                import zstandard  # noqa: F401
            except ImportError as exc:  # pragma: no cover - depends on environment
                raise ImportError(
                    "compression='zstd' needs the zstandard package: pip install zstandard"
                ) from exc
        self.compression = compression
        self.min_size = min_size
        self.level = level

    def pack(self, typed: tuple[str, bytes]) -> bytes:
        type_name, data = typed
        tname = type_name.encode("ascii")
        if len(tname) > 255:
            raise ValueError(f"serde type name too long: {type_name!r}")
        codec = _NONE
        if self.compression != "none" and len(data) >= self.min_size:
            packed = self._compress(data)
            if len(packed) < len(data):
                data = packed
                codec = _ZLIB if self.compression == "zlib" else _ZSTD
        return bytes((_VERSION, codec, len(tname))) + tname + data

    def _compress(self, data: bytes) -> bytes:
        if self.compression == "zlib":
            return zlib.compress(data, 6 if self.level is None else self.level)
        import zstandard

        return zstandard.ZstdCompressor(level=3 if self.level is None else self.level).compress(data)

    @staticmethod
    def unpack(blob: bytes, *, where: str = "payload", max_size: int | None = None) -> tuple[str, bytes]:
        """Decode a packed payload. ``where`` names it in error messages.

        Args:
            blob: the packed payload.
            where: what it is (item, key, channel), for error messages.
            max_size: refuse, with ``PayloadLimitError``, a payload whose data
                exceeds this many bytes once decompressed. Decompression stops
                at ``max_size + 1`` bytes, so memory stays bounded whatever the
                compressed data expands to. ``None``: no limit.

        Example:
            >>> import zlib
            >>> bomb = bytes((1, ord("z"), 4)) + b"json" + zlib.compress(b"0" * 10_000)
            >>> PayloadCodec.unpack(bomb, max_size=100_000)[1][:3]
            b'000'
            >>> PayloadCodec.unpack(bomb, where="blob x", max_size=1000)
            Traceback (most recent call last):
            ...
            langgraph.checkpoint.dynamodb.errors.PayloadLimitError: blob x: payload is larger than max_payload_size (1000 bytes) once decompressed; if it is legitimate, raise the saver's max_payload_size
        """
        if len(blob) < 3:
            raise CorruptPayloadError(f"{where}: truncated payload ({len(blob)} bytes)")
        version, codec, tlen = blob[0], blob[1], blob[2]
        if version != _VERSION:
            raise UnsupportedFormatError(
                f"{where}: payload format {version} is not supported by this version "
                f"of langgraph-checkpoint-dynamodb-s3 (supports {_VERSION}); upgrade the library"
            )
        if len(blob) < 3 + tlen:
            raise CorruptPayloadError(f"{where}: truncated payload header")
        try:
            type_name = blob[3 : 3 + tlen].decode("ascii")
        except UnicodeDecodeError as exc:
            raise CorruptPayloadError(f"{where}: corrupt payload header") from exc
        data = blob[3 + tlen :]
        if codec == _NONE:
            if max_size is not None and len(data) > max_size:
                raise _too_large(where, max_size, "")
            return type_name, data
        if codec not in (_ZLIB, _ZSTD):
            raise CorruptPayloadError(f"{where}: unknown compression codec {codec!r}")
        try:
            out = _inflate(codec, data, max_size)
        except Exception as exc:
            raise CorruptPayloadError(f"{where}: cannot decompress payload: {exc}") from exc
        if out is None:  # stopped past the limit: the data expands further still
            raise _too_large(where, max_size, " once decompressed")
        return type_name, out


def _too_large(where: str, max_size: int | None, how: str) -> PayloadLimitError:
    return PayloadLimitError(
        f"{where}: payload is larger than max_payload_size ({max_size} bytes){how}; "
        "if it is legitimate, raise the saver's max_payload_size"
    )


def _inflate(codec: int, data: bytes, max_size: int | None) -> bytes | None:
    """Decompress ``data``; ``None`` as soon as it exceeds ``max_size`` bytes.

    Output is produced and kept in chunks of at most ``_CHUNK`` bytes, and
    joined only when the whole payload is within the limit: refusing a bomb
    costs at most the limit in memory, never what the data expands to.
    """
    chunks: list[bytes] = []
    total = 0

    def room() -> int:
        return _CHUNK if max_size is None else min(_CHUNK, max_size + 1 - total)

    if codec == _ZLIB:
        d = zlib.decompressobj()
        tail = data
        while True:
            # max_length stops zlib once this chunk is produced; the input
            # not yet expanded waits in unconsumed_tail.
            piece = d.decompress(tail, room())
            tail = d.unconsumed_tail
            chunks.append(piece)
            total += len(piece)
            if max_size is not None and total > max_size:
                return None
            if d.eof or (not piece and not tail):
                break
        if not d.eof:
            raise zlib.error("incomplete or truncated stream")
        return b"".join(chunks)
    import zstandard

    # ZstdDecompressor().decompress() allocates the frame's *declared*
    # content size up front, and the declaration is attacker-controlled: a
    # streaming reader produces only what the data really expands to.
    reader = zstandard.ZstdDecompressor().stream_reader(data)
    while True:
        piece = reader.read(room())
        if not piece:
            return b"".join(chunks)
        chunks.append(piece)
        total += len(piece)
        if max_size is not None and total > max_size:
            return None
