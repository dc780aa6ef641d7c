"""How many objects a payload decodes to, counted from its bytes before it is decoded.

``max_payload_size`` bounds a payload's bytes, not what decoding builds from
them: one byte of msgpack can be an empty map, which Python holds in about 72
bytes, so 16 MiB of forged data decoded to 1.2 GB. Counting first bounds that:
a payload over ``max_payload_objects`` objects is refused before any of it is
built, so decoding one payload holds at most about 72 bytes per allowed object
plus its own strings.

The count is exact for msgpack (one document: what follows it is never
decoded, so never counted), and ext data (how LangGraph packs its types) is
counted as the msgpack it holds. For JSON it is an upper bound taken from
the separators and brackets (separators inside strings count too), so it can
only refuse early, never let a larger one through. The other payload types
decode to one object. No document holds more objects than bytes, so a payload
of at most ``max_payload_objects`` bytes is never scanned: only large ones pay
for the count, which stops one object past the limit (at most a second or so
at the default, on a forged payload; a legitimate large state is mostly long
strings and is counted in milliseconds).
"""

from __future__ import annotations

from langgraph.checkpoint.dynamodb.errors import PayloadLimitError

__all__ = ["check_objects", "count_objects"]

# Bytes of payload after each msgpack header byte, for fixed-size items
# (ints, floats, nil, bools).
_FIXED = {
    0xC0: 0, 0xC2: 0, 0xC3: 0,  # nil, false, true
    0xCA: 4, 0xCB: 8,  # float 32 / 64
    0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8,  # uint 8..64
    0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8,  # int 8..64
}  # fmt: skip
# Length-prefixed items: header byte -> width of the length.
_SIZED = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4}  # bin, str 8/16/32
_EXT = {0xC7: 1, 0xC8: 2, 0xC9: 4}  # ext 8/16/32
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
# Containers: header byte -> (width of the count, children per counted entry).
_CONTAINERS = {0xDC: (2, 1), 0xDD: (4, 1), 0xDE: (2, 2), 0xDF: (4, 2)}  # array, map 16/32


def count_objects(type_name: str, data: bytes, limit: int) -> int:
    """The objects ``(type_name, data)`` decodes to; counting stops once past ``limit``.

    Example:
        >>> import ormsgpack
        >>> count_objects("msgpack", ormsgpack.packb({"a": [1, 2, {}]}), 100)
        6
    """
    if type_name == "msgpack":
        return _count_msgpack(data, limit)
    if type_name == "json":
        return sum(data.count(c) for c in (b",", b":", b"[", b"{")) + 1
    return 1


def _count_msgpack(data: bytes, limit: int) -> int:
    # A container's children come right after its header, so one flat loop
    # reads them all, counting how many items the document still owes; it
    # ends with the document (the decoder ignores what follows). Ext data is
    # counted in its turn, as the msgpack document it holds: each byte is
    # read by one loop only.
    count = 0
    spans = [(0, len(data))]
    while spans:
        pos, end = spans.pop()
        owed = 1
        while owed and pos < end:
            b = data[pos]
            count += 1
            owed -= 1
            if count > limit:
                return count
            if b < 0x80 or b >= 0xE0 or b in _FIXED:  # ints, floats, nil, bools
                pos += 1 + _FIXED.get(b, 0)
            elif b < 0x90:  # fixmap
                owed += 2 * (b & 0x0F)
                pos += 1
            elif b < 0xA0:  # fixarray
                owed += b & 0x0F
                pos += 1
            elif b < 0xC0:  # fixstr
                pos += 1 + (b & 0x1F)
            elif b in _SIZED:
                width = _SIZED[b]
                pos += 1 + width + int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            elif b in _CONTAINERS:
                width, per = _CONTAINERS[b]
                owed += per * int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
                pos += 1 + width
            elif b in _EXT or b in _FIXEXT:
                width = _EXT.get(b, 0)
                size = int.from_bytes(data[pos + 1 : pos + 1 + width], "big") if width else _FIXEXT[b]
                start = pos + 2 + width
                spans.append((start, min(start + size, end)))
                pos = start + size
            else:  # 0xC1, never used: the decoder will refuse the payload
                pos += 1
    return count


def check_objects(typed: tuple[str, bytes], limit: int, where: str) -> None:
    """Refuse ``typed`` if it decodes to more than ``limit`` objects.

    Raises:
        PayloadLimitError: naming ``where``, the limit and the option that raises it.
    """
    type_name, data = typed
    if len(data) <= limit:  # no document holds more objects than bytes
        return
    if count_objects(type_name, data, limit) > limit:
        raise PayloadLimitError(
            f"{where}: payload decodes to more than max_payload_objects ({limit:,} objects, "
            f"{len(data):,} bytes); refused before decoding. If it is legitimate, raise the saver's "
            "max_payload_objects"
        )
