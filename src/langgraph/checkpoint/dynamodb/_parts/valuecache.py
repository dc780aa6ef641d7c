"""The value cache: packed bytes of channel values stored outside the checkpoint being read.

Why: a thread with a large state stores its largest channel values in S3.
LangGraph reads the latest checkpoint at the start of every run (and every
``get_state``), so without a cache each turn downloads again the values the
same process uploaded one turn earlier: a GET per value, and its transfer,
on the critical path of every turn.

Why it is safe: an entry is keyed by the object's bucket and key *and by a
per-write tag* that the value reference in the checkpoint item carries
(``"n"``, written by ``write.put``). A value's S3 key repeats when a thread is
deleted and recreated with the same channel versions, or when two workers
race to write the same version; its tag never does: a reader uses an entry
only for a reference carrying the very tag it was stored under, so it can
never serve bytes that another write has since replaced. References without
a tag (items written before tags existed, values re-homed by prune) are
never served from here.

A process that uploads a value under a key it already holds entries for
(a caller that reuses a version for another value: LangGraph never does,
direct API use and test suites may) drops those entries first, so reads in
this process answer what S3 now holds under that key, as without a cache.

Held values too. A value between ``inline_threshold`` and ``s3_threshold`` is
held by the checkpoint item that introduced it; later checkpoints reference
that item (``c``). Once the holder is off the latest-checkpoint Query's page
(a value that has not changed for a few steps) or re-homed by prune, a read
would fetch it in a second round trip. The put that holds a value gives it a
write tag, and later references carry it, as for S3 values; the cache keys
the bytes by the holder item's key, the channel and that tag
(:func:`held_key`), so a read in a process that wrote or read the value
takes it from memory. A reference without a tag (items written before) is
fetched. A reader that meets a held value on the item itself mints a tag for
its own later references (the bytes it read are what the item holds).

Bounded in bytes, least recently used first out, one entry at most a quarter
of the bound. Keyed by the full S3 key, which carries the tenant prefix, so
tenant views may share it. Safe to share between threads: every access holds
a lock; entries are immutable ``bytes``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["DEFAULT_VALUE_CACHE_BYTES", "HELD", "ValueCache", "held_key", "held_prefix"]

#: Default bound: a few large states (a tool-heavy thread's S3 values are
#: typically tens to hundreds of KB packed), small next to a Lambda's memory.
DEFAULT_VALUE_CACHE_BYTES = 32 * 1024 * 1024

Key = tuple[str, str, str]  # (bucket, S3 key, tag), or (HELD, holder item and channel, tag)

#: The "bucket" of held values' entries: no bucket name contains "#".
HELD = "#held"


def held_key(pk: str, sk: str, channel: str, tag: str) -> Key:
    """The entry of the value that checkpoint item ``pk``/``sk`` holds for ``channel``, written with ``tag``."""
    return (HELD, f"{pk}\n{sk}\n{channel}", tag)


def held_prefix(pk: str) -> str:
    """What every held-value entry of partition ``pk`` starts with (``forget_prefix(HELD, ...)``)."""
    return f"{pk}\n"


class ValueCache:
    """LRU of packed values by ``(bucket, key, tag)``, bounded in bytes (``max_bytes=0``: off).

    Example:
        >>> cache = ValueCache(max_bytes=1024)
        >>> cache.put(("b", "k", "t1"), b"packed")
        >>> cache.get(("b", "k", "t1"))
        b'packed'
        >>> cache.get(("b", "k", "t2")) is None  # same key, another write
        True
    """

    def __init__(self, max_bytes: int = DEFAULT_VALUE_CACHE_BYTES) -> None:
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
            raise ValueError(f"value_cache_bytes must be a number of bytes >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, bytes] = OrderedDict()
        # (bucket, S3 key) -> the tags held for it: an upload replaces them all.
        self._tags: dict[tuple[str, str], set[str]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        """Bytes held (the packed values' lengths)."""
        return self._bytes

    def get(self, key: Key) -> bytes | None:
        if not key[2]:
            return None  # an untagged reference: its key may have been rewritten
        with self._lock:
            data = self._entries.get(key)
            if data is not None:
                self._entries.move_to_end(key)
            return data

    def put(self, key: Key, data: bytes) -> None:
        """Keep ``data`` under ``key`` (read from S3); ignored when untagged or over a quarter of the bound."""
        size = len(data)
        if not key[2] or size > self.max_bytes // 4:
            return
        with self._lock:
            self._drop(key)
            self._entries[key] = bytes(data)
            self._tags.setdefault(key[:2], set()).add(key[2])
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._drop(next(iter(self._entries)))

    def uploaded(self, key: Key, data: bytes) -> None:
        """Keep what this process just stored under ``key``, replacing every other write of that S3 key."""
        with self._lock:
            for tag in list(self._tags.get(key[:2], ())):
                self._drop((key[0], key[1], tag))
        self.put(key, data)

    def forget_prefix(self, bucket: str, prefix: str) -> None:
        """Drop every entry under one key prefix (a deleted thread's objects)."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == bucket and k[1].startswith(prefix)]:
                self._drop(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._tags.clear()
            self._bytes = 0

    def _drop(self, key: Key) -> None:
        """Remove one entry, if held (the lock is held by the caller)."""
        data = self._entries.pop(key, None)
        if data is None:
            return
        self._bytes -= len(data)
        tags = self._tags.get(key[:2])
        if tags is not None:
            tags.discard(key[2])
            if not tags:
                del self._tags[key[:2]]
