"""What a saver remembers between calls, with every bound in one place.

What lives here: :class:`SaverCaches`, reached by operations as
``s.caches``. Every entry is a hint that saves a request or a
serialization; none is a source of data: a miss costs one read, never a
wrong answer. All of them are safe to touch from several threads (the sync
saver's pool, the async saver's I/O thread and executor): single dict
operations, and evictions that tolerate a concurrent one.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.checkpoint.dynamodb._parts.chains import ChainCache, LatestPageHint
from langgraph.checkpoint.dynamodb._parts.valuecache import ValueCache

__all__ = ["LATEST_HINTS_MAX", "PLACEMENT_CACHE_MAX", "Location", "Placement", "SaverCaches"]

#: Where a channel version lives: copied into every checkpoint item that has
#: it (``inline``), in the item of the checkpoint that introduced it (``c``),
#: in its own blob item, or in S3.
Location = Literal["inline", "c", "blob", "s3"]
#: A remembered placement: the location; the packed bytes of an inline value
#: or the id of the checkpoint holding a ``c`` value; and the write tag an
#: ``s3`` or ``c`` reference carries (``""``: none; see ``valuecache``).
Placement = tuple[Location, bytes | str | None, str]

#: Channel versions whose placement a saver remembers (inline ones with
#: their bytes, at most ``inline_threshold`` each); also the bound on the
#: lineage roots it remembers.
PLACEMENT_CACHE_MAX = 4096
#: Namespaces whose latest page a saver remembers (see ``read.latest_limit``).
LATEST_HINTS_MAX = 4096


class SaverCaches:
    """The hint caches of one saver (a tenant view has its own thread-keyed ones).

    Example:
        >>> caches = SaverCaches(value_cache_bytes=1024)
        >>> caches.note_root("t1", "", "1ef-a", "1ef-root")
        >>> caches.roots[("t1", "", "1ef-a")], caches.last_roots[("t1", "")]
        ('1ef-root', '1ef-root')
    """

    def __init__(self, *, value_cache_bytes: int) -> None:
        # thread id -> head TTL this process last wrote (see _heads).
        self.head_until: dict[str, int] = {}
        # (thread, ns, checkpoint id) -> delta counters of recently read
        # checkpoints. LangGraph reads a checkpoint, then asks for its delta
        # history: the counters size that Query so it is one round trip. Only
        # a sizing hint (checkpoint items are immutable), never a source of data.
        self.depth_hints: dict[tuple[str, str, str], dict[str, Any]] = {}
        # (thread, ns, channel, version) -> (location, packed bytes if inline)
        # of values this saver wrote or read. A put whose channel did not
        # change reuses it instead of serializing the value again only to
        # learn where it lives (a large state would be re-packed every step).
        self.placements: dict[tuple[str, str, str, str], Placement] = {}
        # (thread, ns, checkpoint id) -> lineage root of checkpoints this saver
        # wrote or read. A put inherits its parent's root from here (LangGraph
        # reads or writes the parent first), so finality costs no request.
        self.roots: dict[tuple[str, str, str], str] = {}
        # (thread, ns) -> the root this saver last wrote or read there: the
        # lineage a subgraph belongs to when its enclosing checkpoint's own
        # put is still in flight (durability="async"), see _placement.lineage_root_for.
        self.last_roots: dict[tuple[str, str], str] = {}
        # (pk, ns, checkpoint id) -> checkpoint records read before, for delta
        # history walks (see _chains). Keyed by partition key, so tenant views
        # may share it.
        self.chain_cache = ChainCache()
        # (bucket, S3 key, write tag) -> packed bytes of S3-stored values this
        # saver wrote or read: the next turn's read of a large state is served
        # without a GET (see _valuecache). Keyed by the full S3 key, so tenant
        # views may share it.
        self.value_cache = ValueCache(value_cache_bytes)
        # (pk, ns) -> what this saver last knew of the latest checkpoint (its
        # put, put_writes and reads): sizes the next latest-checkpoint Query
        # (see _read.latest_limit). Only a sizing hint.
        self.latest_pages: dict[tuple[str, str], LatestPageHint] = {}

    def for_tenant(self) -> SaverCaches:
        """Caches for a tenant view: its own thread-keyed ones, these partition- and S3-keyed ones.

        Two tenants may both have a thread ``"t1"``: placements, heads,
        delta hints and lineage roots must never mix. The chain cache, the
        value cache and the latest-page hints are keyed by partition key or
        full S3 key, which already name the tenant.
        """
        twin = SaverCaches.__new__(SaverCaches)
        twin.__dict__.update(self.__dict__)
        twin.head_until = {}
        twin.depth_hints = {}
        twin.placements = {}
        twin.roots = {}
        twin.last_roots = {}
        return twin

    def note_root(self, thread_id: str, ns: str, cid: str, root: str) -> None:
        """Record a checkpoint's lineage root, and the namespace's latest one."""
        if len(self.roots) > PLACEMENT_CACHE_MAX:
            self.roots.clear()  # a hint cache: a miss costs one GetItem
            self.last_roots.clear()
        self.roots[(thread_id, ns, cid)] = root
        self.last_roots[(thread_id, ns)] = root

    def remember(self, key: tuple[str, str, str, str], placement: Placement) -> None:
        """Record where a channel version lives; the oldest entries go first.

        Evicting one entry at a time (not clearing the cache) keeps the
        threads a busy process is working on cached; dict order is
        insertion order, and re-inserting marks an entry as recently used.
        """
        cache = self.placements
        cache.pop(key, None)
        cache[key] = placement
        while len(cache) > PLACEMENT_CACHE_MAX:
            try:
                del cache[next(iter(cache))]
            except (KeyError, RuntimeError, StopIteration):  # another thread got there first
                break
