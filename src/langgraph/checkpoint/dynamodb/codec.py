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
"""

from __future__ import annotations

import zlib
from typing import Literal

from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError, UnsupportedFormatError

__all__ = ["Compression", "PayloadCodec"]

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
    def unpack(blob: bytes, *, where: str = "payload") -> tuple[str, bytes]:
        """Decode a packed payload. ``where`` names it in error messages."""
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
        try:
            if codec == _NONE:
                return type_name, data
            if codec == _ZLIB:
                return type_name, zlib.decompress(data)
            if codec == _ZSTD:
                import zstandard

                return type_name, zstandard.ZstdDecompressor().decompress(data)
        except (zlib.error, Exception) as exc:
            raise CorruptPayloadError(f"{where}: cannot decompress payload: {exc}") from exc
        raise CorruptPayloadError(f"{where}: unknown compression codec {codec!r}")
