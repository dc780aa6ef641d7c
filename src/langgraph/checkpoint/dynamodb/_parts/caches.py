"""What a saver remembers between calls, with every bound in one place.

What lives here: :class:`SaverCaches`, reached by operations as
``s.caches``. Every entry is a hint that saves a request or a
serialization; none is a source of data: a miss costs one read, never a
wrong answer. All of them are safe to touch from several threads (the sync
saver's pool, the async saver's I/O thread and executor): single dict
operations, and evictions that tolerate a concurrent one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from langgraph.checkpoint.dynamodb._parts.chains import ChainCache, LatestPageHint
from langgraph.checkpoint.dynamodb._parts.valuecache import HELD, ValueCache, held_prefix

__all__ = [
    "DEPTH_HINTS_MAX",
    "HEADS_MAX",
    "LATEST_HINTS_MAX",
    "PLACEMENT_CACHE_MAX",
    "Location",
    "Placement",
    "SaverCaches",
]

#: Where a channel version lives: copied into every checkpoint item that has
#: it (``inline``), in the item of the checkpoint that introduced it (``c``),
#: in its own blob item, or in S3.
Location = Literal["inline", "c", "blob", "s3"]
#: A remembered placement: the location; the packed bytes of an inline value
#: or the id of the checkpoint holding a ``c`` value; and the write tag an
#: ``s3`` or ``c`` reference carries (``""``: none; see ``valuecache``).
Placement = tuple[Location, bytes | str | None, str]
#: (thread, ns, channel, version): the key of a remembered placement.
PlacementKey = tuple[str, str, str, str]

#: Channel versions whose placement a saver remembers (inline ones with
#: their bytes, at most ``inline_threshold`` each); also the bound on the
#: lineage roots it remembers.
PLACEMENT_CACHE_MAX = 4096
#: Namespaces whose latest page a saver remembers (see ``read.latest_limit``).
LATEST_HINTS_MAX = 4096
#: Threads whose head TTL a saver remembers (see ``heads.on_activity``).
HEADS_MAX = 10_000
#: Checkpoints whose delta counters a saver remembers (see ``history``).
DEPTH_HINTS_MAX = 1024


class SaverCaches:
    """The hint caches of one saver (a tenant view has its own thread-keyed ones).

    Operations ask and tell through the methods below; the dicts are this
    class's own, so every bound is applied here. The chain cache and the
    value cache are objects with their own bounds (``chain_cache``,
    ``value_cache``).

    Example:
        >>> caches = SaverCaches(value_cache_bytes=1024)
        >>> caches.note_root("t1", "", "1ef-a", "1ef-root")
        >>> caches.root("t1", "", "1ef-a"), caches.last_root("t1", "")
        ('1ef-root', '1ef-root')
    """

    def __init__(self, *, value_cache_bytes: int) -> None:
        # thread id -> head TTL this process last wrote (see heads).
        self._head_until: dict[str, int] = {}
        # (threads-index shard count, trusted until): the table's layout as
        # last read (see heads.index_shards). Counts only grow, so a stale
        # one is still a count the table records.
        self._index_shards: tuple[int, float] | None = None
        # (thread, ns, checkpoint id) -> delta counters of recently read
        # checkpoints. LangGraph reads a checkpoint, then asks for its delta
        # history: the counters size that Query so it is one round trip. Only
        # a sizing hint (checkpoint items are immutable), never a source of data.
        self._depth_hints: dict[tuple[str, str, str], dict[str, Any]] = {}
        # (thread, ns, channel, version) -> (location, packed bytes if inline)
        # of values this saver wrote or read. A put whose channel did not
        # change reuses it instead of serializing the value again only to
        # learn where it lives (a large state would be re-packed every step).
        self._placements: dict[PlacementKey, Placement] = {}
        # (thread, ns, checkpoint id) -> lineage root of checkpoints this saver
        # wrote or read. A put inherits its parent's root from here (LangGraph
        # reads or writes the parent first), so finality costs no request.
        self._roots: dict[tuple[str, str, str], str] = {}
        # (thread, ns) -> the root this saver last wrote or read there: the
        # lineage a subgraph belongs to when its enclosing checkpoint's own
        # put is still in flight (durability="async"), see placement.lineage_root_for.
        self._last_roots: dict[tuple[str, str], str] = {}
        # (pk, ns) -> what this saver last knew of the latest checkpoint (its
        # put, put_writes and reads): sizes the next latest-checkpoint Query
        # (see read.latest_limit). Only a sizing hint.
        self._latest_pages: dict[tuple[str, str], LatestPageHint] = {}
        #: (pk, ns, checkpoint id) -> checkpoint records read before, for delta
        #: history walks (see ``chains``). Keyed by partition key, so tenant
        #: views may share it.
        self.chain_cache = ChainCache()
        #: (bucket, S3 key, write tag) -> packed bytes of S3-stored values this
        #: saver wrote or read: the next turn's read of a large state is served
        #: without a GET (see ``valuecache``). Keyed by the full S3 key, so
        #: tenant views may share it.
        self.value_cache = ValueCache(value_cache_bytes)

    def for_tenant(self) -> SaverCaches:
        """Caches for a tenant view: its own thread-keyed ones, these partition- and S3-keyed ones.

        Two tenants may both have a thread ``"t1"``: placements, heads,
        delta hints and lineage roots must never mix. The chain cache, the
        value cache and the latest-page hints are keyed by partition key or
        full S3 key, which already name the tenant.
        """
        twin = SaverCaches.__new__(SaverCaches)
        twin.__dict__.update(self.__dict__)
        twin._head_until = {}
        twin._depth_hints = {}
        twin._placements = {}
        twin._roots = {}
        twin._last_roots = {}
        return twin

    # ------------------------------------------------------------ lineage roots

    def root(self, thread_id: str, ns: str, cid: str) -> str | None:
        """The lineage root of a checkpoint this saver wrote or read, if remembered."""
        return self._roots.get((thread_id, ns, cid))

    def last_root(self, thread_id: str, ns: str) -> str | None:
        """The root this saver last wrote or read in a namespace, if any."""
        return self._last_roots.get((thread_id, ns))

    def note_root(self, thread_id: str, ns: str, cid: str, root: str) -> None:
        """Record a checkpoint's lineage root, and the namespace's latest one."""
        if len(self._roots) > PLACEMENT_CACHE_MAX:
            self._roots.clear()  # a hint cache: a miss costs one GetItem
            self._last_roots.clear()
        self._roots[(thread_id, ns, cid)] = root
        self._last_roots[(thread_id, ns)] = root

    # --------------------------------------------------------------- placements

    def placement(self, key: PlacementKey) -> Placement | None:
        """Where a channel version lives, if this saver wrote or read it."""
        return self._placements.get(key)

    def remember(self, key: PlacementKey, placement: Placement) -> None:
        """Record where a channel version lives; the oldest entries go first.

        Evicting one entry at a time (not clearing the cache) keeps the
        threads a busy process is working on cached; dict order is
        insertion order, and re-inserting marks an entry as recently used.
        """
        cache = self._placements
        cache.pop(key, None)
        cache[key] = placement
        while len(cache) > PLACEMENT_CACHE_MAX:
            try:
                del cache[next(iter(cache))]
            except (KeyError, RuntimeError, StopIteration):  # another thread got there first
                break

    # -------------------------------------------------------------- thread heads

    def head_until(self, thread_id: str) -> int | None:
        """The head TTL this process last left on a thread, if any."""
        return self._head_until.get(thread_id)

    def note_head(self, thread_id: str, until: int) -> None:
        """Record the head TTL this process left on a thread."""
        if len(self._head_until) > HEADS_MAX:
            self._head_until.clear()  # a miss costs one head write
        self._head_until[thread_id] = until

    def forget_head(self, thread_id: str) -> None:
        """The next write of the thread writes its head again."""
        self._head_until.pop(thread_id, None)

    def index_shards(self, now: float) -> int | None:
        """The threads index's shard count as last read, while it is trusted."""
        if self._index_shards is None or self._index_shards[1] < now:
            return None
        return self._index_shards[0]

    def note_index_shards(self, shards: int, until: float) -> None:
        """Record the shard count read from the table, trusted until ``until``."""
        self._index_shards = (shards, until)

    # ------------------------------------------------------------ delta depth

    def depth_hint(self, thread_id: str, ns: str, cid: str) -> dict[str, Any] | None:
        """The delta counters of a checkpoint this saver read, if remembered."""
        return self._depth_hints.get((thread_id, ns, cid))

    def note_depth(self, thread_id: str, ns: str, cid: str, counters: dict[str, Any]) -> None:
        """Record a read checkpoint's delta counters (they size its history Query)."""
        if len(self._depth_hints) > DEPTH_HINTS_MAX:
            self._depth_hints.clear()
        self._depth_hints[(thread_id, ns, cid)] = dict(counters)

    # -------------------------------------------------------------- latest page

    def latest_page(self, pk: str, ns: str) -> LatestPageHint | None:
        """What this saver last knew of a namespace's latest checkpoint."""
        return self._latest_pages.get((pk, ns))

    def note_latest(self, pk: str, ns: str, hint: LatestPageHint) -> None:
        """Record what a read learned of a namespace's latest checkpoint."""
        if len(self._latest_pages) > LATEST_HINTS_MAX:
            self._latest_pages.clear()  # a sizing hint: a miss costs the default page
        self._latest_pages[(pk, ns)] = hint

    def note_put(self, pk: str, ns: str, cid: str, *, holds_refs: bool) -> None:
        """After this saver's ``put``: the new checkpoint is the latest, with no writes yet."""
        old = self._latest_pages.get((pk, ns))
        self.note_latest(pk, ns, LatestPageHint(cid, set(), old.above if old else 0, holds_refs))

    def note_writes(self, pk: str, ns: str, cid: str, sk: str) -> None:
        """After this saver's ``put_writes``: the writes item ``sk`` is on that checkpoint."""
        hint = self._latest_pages.get((pk, ns))
        if hint is not None and hint.checkpoint_id == cid:
            hint.tasks.add(sk)

    # --------------------------------------------------------------- forgetting

    def forget_thread(self, thread_id: str, pk: str, *, bucket: str, s3_prefixes: Iterable[str]) -> None:
        """Drop what this saver remembers of a thread it deletes.

        A thread id can be reused: where its old versions lived is forgotten,
        and a new conversation writes a head again. The cached bytes are
        never served again (a recreated thread's references carry new tags,
        its checkpoints new ids): dropping them only gives memory back.
        """
        for key in [k for k in list(self._placements) if k[0] == thread_id]:
            self._placements.pop(key, None)
        for prefix in s3_prefixes:
            self.value_cache.forget_prefix(bucket, prefix)
        self.value_cache.forget_prefix(HELD, held_prefix(pk))
        self.chain_cache.forget_partition(pk)
        self.forget_head(thread_id)
