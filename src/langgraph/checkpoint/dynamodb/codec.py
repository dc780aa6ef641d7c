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

The default (:data:`DEFAULT_COMPRESSION`) and the levels are chosen by
measurement (``python -m benchmarks.codecs`` and ``make bench``, reported in
docs/benchmarks.md). zlib's cost on poorly compressible data (base64 tool
outputs, already-compressed bytes) is its entropy stage, which every level
pays: level 1 is no faster than 6 there, and loses 10-20% on text, so zlib
stays at 6. zstd is 5-40x faster at a smaller size, so ``"auto"`` (the
default) takes it when the interpreter has it (the standard library's
``compression.zstd`` from Python 3.14, else the ``zstandard`` package, a
dependency below 3.14), with a level by size: payloads
up to :data:`SMALL_PAYLOAD` (64 KiB, the default ``s3_threshold``) usually
live in DynamoDB items, where every KB is a write unit on each write, so they
get a high level (cheap at that size); larger ones go to S3, where bytes cost
little and CPU per turn is what the user waits for, so they get a fast one.
Below 3 KiB ``"auto"`` still writes zlib: there zstd's frame header costs more
than it saves.

Encrypted payloads (``EncryptedSerializer`` marks its type name ``type+cipher``)
are never compressed: ciphertext does not shrink, so trying would only spend
CPU (zlib 6: about 25 ms per MB) to throw the result away.

Decoding is bounded: a reader never produces more than ``max_size`` bytes
of one payload, however large the data claims (or turns out) to be. A few
hundred kilobytes of zlib or zstd can expand to gigabytes, and whoever can
write an item can write such a bomb.
"""

from __future__ import annotations

import zlib
from types import ModuleType
from typing import Any, Literal

from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
    PayloadLimitError,
    UnsupportedFormatError,
)

__all__ = [
    "DEFAULT_COMPRESSION",
    "DEFAULT_MAX_PAYLOAD_OBJECTS",
    "DEFAULT_MAX_PAYLOAD_SIZE",
    "SMALL_PAYLOAD",
    "Compression",
    "PayloadCodec",
    "zstd_available",
]

#: Largest payload (decompressed, or S3 body) a reader accepts by default:
#: 64 MiB. LangGraph states with large tool outputs legitimately reach
#: several MB; 64 MiB leaves an order of magnitude of room for them while one
#: decoded payload (plus its deserialized objects) stays a fraction of a
#: 1 GB Lambda. Raise it with the savers' ``max_payload_size``.
DEFAULT_MAX_PAYLOAD_SIZE = 64 * 1024 * 1024

#: Most objects one payload may decode to by default. A byte of msgpack can
#: decode to an object of ~72 bytes, so this keeps one decode under ~72 MB of
#: objects (plus its strings); a chat of 3,000 messages is ~63,000 objects.
#: Raise it with the savers' ``max_payload_objects``.
DEFAULT_MAX_PAYLOAD_OBJECTS = 1_000_000

# Output is produced this many bytes at a time, so memory follows what a
# payload really expands to, never what its header declares.
_CHUNK = 1024 * 1024

Compression = Literal["none", "zlib", "zstd", "auto"]

#: The savers' ``compression`` when none is given, chosen by measurement
#: (``make bench``, docs/benchmarks.md): on large states zlib 6 cost ~100 ms of
#: CPU per turn and grew with the state, where ``"auto"`` (zstd by size) costs
#: ~2 ms for 1% fewer bytes, and on chat-sized values it writes no more bytes
#: than zlib 6. A reader decodes any codec whatever its own setting, so
#: checkpoints written under the former default (zlib) stay readable.
DEFAULT_COMPRESSION: Compression = "auto"

#: Payloads up to this size get the small-payload level (see the module doc).
SMALL_PAYLOAD = 64 * 1024
_ZLIB_LEVEL = 6
_ZSTD_LEVEL_SMALL = 9
_ZSTD_LEVEL_LARGE = 3
#: Below this size ``"auto"`` writes zlib: a zstd frame's header costs more
#: than zstd saves on a payload of a few KB (measured on chat payloads: up to
#: 4% larger under 3 KB, 1-4% smaller above).
_AUTO_ZLIB_BELOW = 3 * 1024

_VERSION = 1
_NONE, _ZLIB, _ZSTD = ord("n"), ord("z"), ord("s")


class PayloadCodec:
    """Packs and unpacks ``(type, bytes)`` payloads, compressing where it pays.

    Args:
        compression: ``"auto"`` (the default, :data:`DEFAULT_COMPRESSION`:
            zstd by payload size when this interpreter has it, else zlib),
            ``"zlib"`` (standard library), ``"zstd"`` (the standard library's
            ``compression.zstd`` on Python 3.14+, else the ``zstandard``
            package) or ``"none"``. A reader needs zstd only to read zstd
            payloads: whatever it was configured with, it decodes any codec.
        min_size: payloads smaller than this many bytes are never compressed.
        level: compression level (zlib 1-9, zstd 1-22); ``None``: by
            measurement, zlib 6, zstd 9 up to :data:`SMALL_PAYLOAD` and 3 above
            (and, for ``"auto"``, zlib 6 below 3 KiB).

    Example:
        >>> codec = PayloadCodec("zlib", min_size=16)
        >>> packed = codec.pack(("json", b'{"a": "' + b"x" * 100 + b'"}'))
        >>> codec.unpack(packed)[0]
        'json'
        >>> PayloadCodec().compression in ("zstd", "zlib")  # "auto"
        True
    """

    def __init__(
        self, compression: Compression = DEFAULT_COMPRESSION, *, min_size: int = 512, level: int | None = None
    ) -> None:
        if compression not in ("none", "zlib", "zstd", "auto"):
            raise ValueError(f"compression must be 'none', 'zlib', 'zstd' or 'auto', got {compression!r}")
        auto = compression == "auto"
        resolved: Literal["none", "zlib", "zstd"]
        if compression == "auto":
            resolved = "zstd" if zstd_available() else "zlib"
        else:
            resolved = compression
        if compression == "zstd" and not zstd_available():
            raise ImportError(
                "compression='zstd' needs Python 3.14+ or the zstandard package "
                "(a dependency of this package below 3.14: pip install 'zstandard>=0.22')"
            )
        self.compression = resolved
        self.min_size = min_size
        self.level = level
        #: ``"auto"`` with zstd chooses the codec per payload too (see ``codec_for``).
        self._adaptive = resolved == "zstd" and level is None and auto

    def pack(self, typed: tuple[str, bytes]) -> bytes:
        type_name, data = typed
        tname = type_name.encode("ascii")
        if len(tname) > 255:
            raise ValueError(f"serde type name too long: {type_name!r}")
        codec = _NONE
        # "+" in the type name: EncryptedSerializer's ciphertext, which never shrinks.
        if self.compression != "none" and len(data) >= self.min_size and "+" not in type_name:
            name, level = self.codec_for(len(data))
            packed = self._compress(name, level, data)
            if len(packed) < len(data):
                data = packed
                codec = _ZLIB if name == "zlib" else _ZSTD
        return bytes((_VERSION, codec, len(tname))) + tname + data

    def codec_for(self, size: int) -> tuple[Literal["zlib", "zstd"], int]:
        """The codec and level a payload of ``size`` bytes is compressed with.

        Example:
            >>> PayloadCodec("zlib").codec_for(10_000_000)
            ('zlib', 6)
            >>> [PayloadCodec("auto").codec_for(n) for n in (1_000, 50_000, 500_000)]  # with zstd
            [('zlib', 6), ('zstd', 9), ('zstd', 3)]
        """
        if self.compression == "zlib":
            return "zlib", _ZLIB_LEVEL if self.level is None else self.level
        if self.level is not None:
            return "zstd", self.level
        if self._adaptive and size < _AUTO_ZLIB_BELOW:
            return "zlib", _ZLIB_LEVEL
        return "zstd", _ZSTD_LEVEL_SMALL if size <= SMALL_PAYLOAD else _ZSTD_LEVEL_LARGE

    @staticmethod
    def _compress(name: str, level: int, data: bytes) -> bytes:
        if name == "zlib":
            return zlib.compress(data, level)
        zstd = _zstd()
        assert zstd is not None  # checked in __init__
        if zstd.__name__ == "zstandard":
            return bytes(zstd.ZstdCompressor(level=level).compress(data))
        return bytes(zstd.compress(data, level=level))

    @staticmethod
    def type_name(blob: bytes) -> str:
        """The serde type name in a packed payload's header, without decoding it (``""``: none readable).

        Example:
            >>> PayloadCodec.type_name(PayloadCodec("none").pack(("msgpack+aes", b"...")))
            'msgpack+aes'
        """
        if len(blob) < 3 or len(blob) < 3 + blob[2]:
            return ""
        return blob[3 : 3 + blob[2]].decode("ascii", "replace")

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
    out = _Bounded(max_size)
    if codec == _ZLIB:
        return _inflate_zlib(data, out)
    zstd = _zstd()
    if zstd is None:
        raise ImportError(
            "this payload is zstd-compressed: reading it needs Python 3.14+ or the zstandard "
            "package (a dependency of this package below 3.14: pip install 'zstandard>=0.22')"
        )
    if zstd.__name__ != "zstandard":
        return _inflate_zstd_stdlib(zstd, data, out)
    return _inflate_zstandard(zstd, data, out)


class _Bounded:
    """The chunks decompressed so far, and how many bytes the next chunk may hold."""

    def __init__(self, max_size: int | None) -> None:
        self.max_size = max_size
        self.chunks: list[bytes] = []
        self.total = 0

    def room(self) -> int:
        """At most ``_CHUNK``, and one byte past the limit: enough to tell it is exceeded."""
        return _CHUNK if self.max_size is None else min(_CHUNK, self.max_size + 1 - self.total)

    def add(self, piece: bytes) -> bool:
        """Keep ``piece``; ``False`` once the output is over the limit (stop decompressing)."""
        self.chunks.append(piece)
        self.total += len(piece)
        return self.max_size is None or self.total <= self.max_size

    def joined(self) -> bytes:
        return b"".join(self.chunks)


def _inflate_zlib(data: bytes, out: _Bounded) -> bytes | None:
    d = zlib.decompressobj()
    tail = data
    while True:
        # max_length stops zlib once this chunk is produced; the input
        # not yet expanded waits in unconsumed_tail.
        piece = d.decompress(tail, out.room())
        tail = d.unconsumed_tail
        if not out.add(piece):
            return None
        if d.eof or (not piece and not tail):
            break
    if not d.eof:
        raise zlib.error("incomplete or truncated stream")
    return out.joined()


def _inflate_zstd_stdlib(zstd: Any, data: bytes, out: _Bounded) -> bytes | None:
    # The standard library's decompressor takes max_length like zlib's:
    # it never produces more than asked, whatever the frame declares.
    dec = zstd.ZstdDecompressor()
    piece = dec.decompress(data, out.room())
    while True:
        if not out.add(piece):
            return None
        if dec.eof or dec.needs_input:
            break
        piece = dec.decompress(b"", out.room())
    if not dec.eof:
        raise ValueError("incomplete or truncated zstd frame")
    return out.joined()


def _inflate_zstandard(zstd: Any, data: bytes, out: _Bounded) -> bytes | None:
    # ZstdDecompressor().decompress() allocates the frame's *declared*
    # content size up front, and the declaration is attacker-controlled: a
    # streaming reader produces only what the data really expands to.
    reader = zstd.ZstdDecompressor().stream_reader(data)
    while True:
        piece = reader.read(out.room())
        if not piece:
            return out.joined()
        if not out.add(piece):
            return None


_ZSTD_MODULE: list[ModuleType | None] = []


def _zstd() -> Any:
    """The zstd implementation: ``compression.zstd`` (Python 3.14+), else ``zstandard``, else ``None``.

    Imported on first use, so a process that never meets zstd never pays the
    import (Lambda cold start), and resolved once.
    """
    if not _ZSTD_MODULE:
        module: ModuleType | None
        try:
            from compression import zstd as module  # type: ignore[import-not-found,no-redef]
        except ImportError:
            try:
                import zstandard as module  # type: ignore[no-redef]
            except ImportError:  # pragma: no cover - depends on environment
                module = None
        _ZSTD_MODULE.append(module)
    return _ZSTD_MODULE[0]


def zstd_available() -> bool:
    """Whether this interpreter can write and read zstd payloads.

    Example:
        >>> isinstance(zstd_available(), bool)
        True
    """
    return _zstd() is not None
