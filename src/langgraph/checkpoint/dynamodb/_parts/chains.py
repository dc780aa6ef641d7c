"""The delta-chain cache: checkpoint records a saver read, kept for later history walks.

Why: LangGraph's ``get_state_history`` asks for the delta history of every
checkpoint it lists, and each history walks back to the channel's seed. Read
from the table each time, a listing of N checkpoints reads O(N^2) items.
Checkpoint items are immutable once written, so a walk may reuse what an
earlier walk (or the listing itself) read; see ``history.delta_history`` for
what is still read fresh on every call (the target checkpoint and the
thread's deleted lineages), which is what keeps a deleted checkpoint dead.

What an entry may hold:

* the checkpoint item alone (``writes is None``): enough to start a walk at
  it (its parent id, the channels it stores), never to serve it as an
  ancestor, because its writes may still be coming in;
* the item with its writes items: only for a checkpoint read after its
  child *and* grandchild were, so the superstep that produced the child had
  long finished (with ``durability="async"`` LangGraph may put a child
  while the last writes of its parent are still in flight).

A listing also *vouches* for the checkpoints it read alive: its Query is
strongly consistent and knew the thread's deleted lineages, so the one
delta-history call LangGraph makes right after it for each listed
checkpoint takes that reading instead of reading the target and the head
again (one request per checkpoint before). A voucher is used once, and
only within ``VOUCH_SECONDS`` of the listing; forgetting a thread drops its
vouchers with its entries.

Bounded in entries and bytes, least recently used first out; keyed by
``(partition key, namespace, checkpoint id)`` (the partition key carries the
tenant prefix, so tenants never share entries). Safe to share between
threads: every access holds a lock, and entries are never mutated.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import CheckpointRecord, Item
from langgraph.checkpoint.dynamodb.schema import ATTR

Key = tuple[str, str, str]

#: Default bounds: a few long threads' chains (a 250-checkpoint chat is
#: about 1 MB), small next to what a saver process holds anyway.
MAX_ENTRIES = 8192
MAX_BYTES = 32 * 1024 * 1024
#: How long a listing's reading answers for a checkpoint it listed: long
#: enough for ``get_state_history`` to rebuild every state it listed, short
#: enough that a later call reads the store again.
VOUCH_SECONDS = 30.0
#: Vouchers kept at most (a listing's worth; the oldest go first).
MAX_VOUCHERS = 4 * MAX_ENTRIES


@dataclass(frozen=True, slots=True)
class Entry:
    item: Item
    writes: tuple[Item, ...] | None
    size: int


class ChainCache:
    """LRU of checkpoint records by ``(pk, ns, checkpoint id)``, bounded in entries and bytes.

    Example:
        >>> cache = ChainCache(max_entries=2)
        >>> item = {"cid": {"S": "1"}}
        >>> cache.put(("pk", "", "1"), item, None)
        >>> cache.get(("pk", "", "1")).writes is None
        True
    """

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        #: Key -> (deleted lineages the listing knew, when it read them).
        self._vouched: OrderedDict[Key, tuple[frozenset[str] | None, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        """Approximate size of the cached items (DynamoDB's item size rule)."""
        return self._bytes

    def get(self, key: Key) -> Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: Key, item: Item, writes: Iterable[Item] | None) -> None:
        """Cache a record; ``writes=None``: the item alone. Never downgrades an entry with writes."""
        ws = tuple(writes) if writes is not None else None
        size = shapes.item_size(item) + sum(shapes.item_size(w) for w in ws or ())
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.get(key)
            if old is not None:
                if old.writes is not None and ws is None:
                    self._entries.move_to_end(key)
                    return
                self._bytes -= old.size
            self._entries[key] = Entry(item, ws, size)
            self._entries.move_to_end(key)
            self._bytes += size
            while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                _, gone = self._entries.popitem(last=False)
                self._bytes -= gone.size

    def vouch(self, key: Key, dead: Iterable[str] | None) -> None:
        """Note that a strongly consistent listing just read ``key`` alive, ``dead`` its thread's deleted roots."""
        roots = frozenset(dead) if dead is not None else None
        with self._lock:
            self._vouched[key] = (roots, time.monotonic())
            self._vouched.move_to_end(key)
            while len(self._vouched) > MAX_VOUCHERS:
                self._vouched.popitem(last=False)

    def take_voucher(self, key: Key) -> tuple[Item, set[str] | None] | None:
        """The listed item of ``key`` and the deleted roots known with it, once; None: read it fresh."""
        with self._lock:
            got = self._vouched.pop(key, None)
            entry = self._entries.get(key)
        if got is None or entry is None or time.monotonic() - got[1] > VOUCH_SECONDS:
            return None
        return entry.item, (set(got[0]) if got[0] is not None else None)

    def forget_partition(self, pk: str) -> None:
        """Drop every entry and voucher of one thread (its partition key)."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == pk]:
                self._bytes -= self._entries.pop(key).size
            for key in [k for k in self._vouched if k[0] == pk]:
                del self._vouched[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._vouched.clear()
            self._bytes = 0


def parent_of(item: Item) -> str | None:
    av = item.get(ATTR.PARENT_ID)
    return av.get("S") if isinstance(av, dict) else None


def needs_ancestors(item: Item) -> bool:
    """Whether a checkpoint rebuilds some delta channel from its ancestors (it may start a walk)."""
    return bool(item.get(ATTR.DELTA_NEEDS, {}).get("SS"))


@dataclass(slots=True)
class LatestPageHint:
    """What this saver last knew of a thread's latest checkpoint in one namespace.

    Sizes the next latest-checkpoint Query (``read.latest_limit``): the
    items above the checkpoint item (a tombstone, late writes on a deleted
    lineage), its writes items (``tasks``: their sort keys, one or more per
    task), itself; and whether it
    references values held by older checkpoints (then the page reads on).
    """

    checkpoint_id: str
    tasks: set[str]
    above: int = 0
    held: bool = False


@dataclass
class ListingNotes:
    """What one ``list`` has seen so far, to cache the records a history walk will want.

    Records come newest first. A record is cached with its writes once a
    child that needs it (declares ``DELTA_NEEDS``) was seen, and that child
    has a child of its own (see the module docstring); a record that needs
    ancestors is cached alone, as a place a walk can start.
    """

    has_child: set[str] = field(default_factory=set)
    confirmed: set[str] = field(default_factory=set)

    def note(
        self, cache: ChainCache, pk: str, records: Iterable[CheckpointRecord], dead: set[str] | None = None
    ) -> None:
        """Cache what a walk will want of ``records`` (one page, newest first); vouch for the ones
        that start walks, alive with ``dead`` the thread's deleted roots as the page was read."""
        for r in records:
            cid = r.checkpoint_id
            parent = parent_of(r.item)
            if cid in self.confirmed:
                cache.put((pk, r.checkpoint_ns, cid), r.item, r.writes)
            elif needs_ancestors(r.item):
                cache.put((pk, r.checkpoint_ns, cid), r.item, None)
            if needs_ancestors(r.item):
                cache.vouch((pk, r.checkpoint_ns, cid), dead)
            if parent is not None:
                if needs_ancestors(r.item) and cid in self.has_child:
                    self.confirmed.add(parent)
                self.has_child.add(parent)
