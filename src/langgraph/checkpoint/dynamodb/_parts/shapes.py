"""Item shapes and checks: what a stored item looks like, read without I/O.

Rule: this module holds the pure functions over DynamoDB items (attribute
values as the low-level client returns them) that more than one operation
needs: sort-key parsing, typed attribute access that reports a malformed
item as corrupt, format checks, item sizes, lineage roots and tombstones,
and grouping items into checkpoint records or whole threads (``ThreadItems``).
No requests, no saver state.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langgraph.checkpoint.dynamodb import clock, schema
from langgraph.checkpoint.dynamodb.errors import (
    CheckpointStoreError,
    CorruptPayloadError,
    UnsupportedFormatError,
)
from langgraph.checkpoint.dynamodb.schema import ATTR

AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]

#: DynamoDB's item limit is 400 KB (names + values). Keep a margin for the
#: attributes we add and for the size estimate being an estimate.
ITEM_BUDGET = 380 * 1024


@dataclass(frozen=True, slots=True)
class Ref:
    """A payload stored outside the item being read.

    An S3 object, a blob item, or (``item``) the checkpoint item that
    introduced a channel version and holds it inline.
    """

    kind: Literal["s3", "blob", "item"]
    key: str  # S3 key, or the item's sort key
    pk: str = ""  # partition key of a blob or checkpoint item
    channel: str = ""  # for ``item``: the channel whose value it holds
    #: Where else to look when this place is empty: a value stored under
    #: other thresholds, or moved out of a pruned checkpoint (re-homed).
    alt: Ref | None = None
    #: For an S3 value: the tag of the write the reference names (``""``:
    #: none), under which the saver's value cache may hold its bytes.
    tag: str = ""


@dataclass(slots=True)
class CheckpointRecord:
    """A checkpoint item and its writes items, not yet decoded."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    item: Item
    writes: list[Item] = field(default_factory=list)


def value_tag(ref: AttributeValue) -> str:
    """The write tag of a stored S3 value reference (``""``: none, or not a string; see ``valuecache``)."""
    tag = ref.get("M", {}).get("n", {})
    value = tag.get("S") if isinstance(tag, dict) else None
    return value if isinstance(value, str) else ""


#: A whole number as this library writes one (ASCII digits: ``str.isdigit``
#: is also true of ``"²"``, which ``int`` refuses). DynamoDB keeps 38 digits.
_WHOLE = re.compile(r"-?[0-9]{1,38}")


def is_write_attr(name: str) -> bool:
    return name.startswith(ATTR.WRITE_PREFIX) and _WHOLE.fullmatch(name[1:]) is not None


def task_writes(items: Iterable[Item]) -> list[tuple[Item, str, int]]:
    """``(item, attribute, index)`` of every write these writes items hold, each task's index once.

    A task's writes are spread over items by index (``schema.writes_shard``).
    Items written before that layout held every index of a task in its shard-0
    item, so a special write overwritten since is in both: the one in the
    index's own item is the current one.
    """
    best: dict[tuple[str, int], tuple[Item, str, int]] = {}
    for it in items:
        task = it.get(ATTR.TASK_ID, {}).get("S", "")
        parts = it[ATTR.SK]["S"].split(schema.SEP)
        shard = int(parts[5]) if len(parts) == 6 else 0
        for name in it:
            if not is_write_attr(name):
                continue
            idx = int(name[len(ATTR.WRITE_PREFIX) :])
            key = (task, idx)
            if key not in best or shard == schema.writes_shard(idx):
                best[key] = (it, name, idx)
    return list(best.values())


def whole_number(av: Any) -> int | None:
    """The value of a Number attribute written as a whole number; ``None`` for anything else.

    For what a job only sorts or filters by (a thread head's activity time):
    a forged value must not stop the job for everyone.

    Example:
        >>> whole_number({"N": "17"}), whole_number({"N": "1.5"}), whole_number({"S": "1"})
        (17, None, None)
    """
    n = av.get("N") if isinstance(av, dict) else None
    return int(n) if isinstance(n, str) and _WHOLE.fullmatch(n) else None


def item_name(item: Item) -> str:
    """``item 'pk'/'sk'``, for errors, whatever the item's shape."""
    pk, sk = item.get(ATTR.PK), item.get(ATTR.SK)
    return f"item {pk.get('S') if isinstance(pk, dict) else pk!r}/{sk.get('S') if isinstance(sk, dict) else sk!r}"


def int_attr(item: Item, attr: str) -> int | None:
    """A whole-number attribute of an item (``None`` if absent); ``CorruptPayloadError`` for any other value.

    The library writes these (format versions, expiry stamps, TTLs) as
    whole numbers: anything else was not written by it, and is reported
    as such rather than as a ``ValueError`` from ``int``.
    """
    av = item.get(attr)
    if av is None:
        return None
    n = whole_number(av)
    if n is None:
        raise CorruptPayloadError(f"{item_name(item)}: attribute {attr!r} is not a whole number: {av!r:.80}")
    return n


@contextlib.contextmanager
def malformed(where: str) -> Iterator[None]:
    """Report an item of the wrong shape as corrupt, naming it, not as a KeyError or ValueError."""
    try:
        yield
    except CheckpointStoreError:
        raise
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise CorruptPayloadError(f"{where}: malformed item ({type(exc).__name__}: {exc})") from exc


def map_attr(item: Item, attr: str, where: str) -> dict[str, AttributeValue]:
    av = item.get(attr)
    if av is None:
        return {}
    if not isinstance(av, dict) or "M" not in av:
        raise CorruptPayloadError(f"{where}: attribute {attr!r} is not a map")
    return cast(dict[str, AttributeValue], av["M"])


def str_attr(item: Item, attr: str, where: str) -> str | None:
    av = item.get(attr)
    if av is None:
        return None
    if not isinstance(av, dict) or "S" not in av:
        raise CorruptPayloadError(f"{where}: attribute {attr!r} is not a string")
    return cast(str, av["S"])


def parse_sk(item: Item) -> tuple[str, str, str, str | None]:
    """``schema.parse_sk`` of an item, naming the item if the key is foreign.

    A key that digests an id (``schema.fit``) gives the ids the item keeps
    whole (``ATTR.KEY``), once proven to make exactly that key: a forged map
    cannot rename an item.
    """
    sk = item[ATTR.SK]["S"]
    try:
        parsed = schema.parse_sk(sk)
    except CorruptPayloadError as exc:
        raise CorruptPayloadError(f"item of partition {item[ATTR.PK]['S']!r}: {exc}") from None
    if not schema.is_digested(sk) or parsed[1] == schema.META_ITEM:
        return parsed
    return _whole_ids(item, sk, parsed[1])


def _whole_ids(item: Item, sk: str, kind: str) -> tuple[str, str, str, str | None]:
    where = item_name(item)
    ids = map_attr(item, ATTR.KEY, where)

    def get(name: str) -> str:
        av = ids.get(name)
        if not isinstance(av, dict) or not isinstance(av.get("S"), str):
            raise CorruptPayloadError(f"{where}: its key digests an id, and {ATTR.KEY!r} lacks {name!r}")
        return cast(str, av["S"])

    ns = get("ns")
    parsed: tuple[str, str, str, str | None]
    if kind == schema.CHECKPOINT_ITEM:
        parsed = (ns, kind, get("id"), None)
        own = schema.checkpoint_sk(ns, parsed[2])
    elif kind == schema.WRITES_ITEM:
        parsed = (ns, kind, get("id"), get("task"))
        parts = sk.split(schema.SEP)
        own = schema.writes_sk(ns, parsed[2], get("task"), int(parts[5]) if len(parts) == 6 else 0)
    elif kind == schema.BLOB_ITEM:
        parsed = (ns, kind, get("ch"), get("ver"))
        own = schema.blob_sk(ns, parsed[2], get("ver"))
    else:
        parsed = (ns, kind, "", None)
        own = schema.tombstone_sk(ns)
    if own != sk:
        raise CorruptPayloadError(f"{where}: the ids it keeps whole ({ATTR.KEY!r}) make another key; refused")
    return parsed


def keep_whole_ids(item: Item, **ids: str) -> Item:
    """Give an item whose key digests an id its ids whole, and the format that says so.

    Only such items change (``schema.whole_ids``): every other stays as it was.
    """
    whole = schema.whole_ids(item[ATTR.SK]["S"], **ids)
    if whole is not None:
        item[ATTR.KEY] = whole
        item[ATTR.FORMAT] = {"N": str(schema.DIGESTED_FORMAT_VERSION)}
    return item


def held_value(item: Item, channel: str) -> bytes | None:
    """The packed value a checkpoint item holds inline for ``channel``, if any."""
    av = item.get(ATTR.VALUES, {}).get("M", {}).get(channel)
    if isinstance(av, dict) and isinstance(av.get("B"), bytes):
        return av["B"]
    return None


def blob_bytes(item: Item) -> bytes:
    av = item.get(ATTR.BLOB)
    if not isinstance(av, dict) or "B" not in av:
        raise CorruptPayloadError(f"blob item {item[ATTR.PK]['S']!r}/{item[ATTR.SK]['S']!r} has no payload")
    return cast(bytes, av["B"])


def root_of(item: Item, checkpoint_id: str) -> str:
    """Lineage root of a checkpoint item; a legacy item (no root) is its own."""
    av = item.get(ATTR.ROOT)
    if isinstance(av, dict) and isinstance(av.get("S"), str):
        return cast(str, av["S"])
    return checkpoint_id


def dead_entries(tomb: Item | None) -> list[str]:
    av = (tomb or {}).get(ATTR.DEAD)
    if not isinstance(av, dict) or not isinstance(av.get("SS"), list):
        return []
    return [e for e in av["SS"] if isinstance(e, str)]


def entry_time(entry: str) -> int:
    head, _, _ = entry.partition(":")
    return int(head) if head.isascii() and head.isdigit() and len(head) <= 38 else 0


def entry_root(entry: str) -> str:
    return entry.partition(":")[2]


def tomb_roots(tomb: Item | None) -> set[str] | None:
    """Deleted lineage roots a tombstone lists; None when there is no tombstone."""
    if tomb is None:
        return None
    return {entry_root(e) for e in dead_entries(tomb)}


def head_roots(head: Item | None) -> set[str] | None:
    """Deleted lineage roots a thread head keeps; None when no delete recorded any."""
    av = (head or {}).get(ATTR.DEAD)
    if not isinstance(av, dict) or not isinstance(av.get("SS"), list):
        return None
    return {r for r in av["SS"] if isinstance(r, str)}


def is_dead(item: Item, dead: set[str] | None) -> bool:
    """Whether a checkpoint item belongs to a lineage its namespace's tombstone lists.

    An orphan (written on a parent that did not exist) is dead wherever a
    tombstone exists: its history can only be one that was deleted.
    """
    if dead is None:
        return False
    root = root_of(item, item.get(ATTR.CHECKPOINT_ID, {}).get("S", ""))
    return root in dead or root == schema.ORPHAN_ROOT


def expired_stamp(item: Item) -> bool:
    exp = int_attr(item, ATTR.EXPIRES)
    return exp is not None and exp < int(clock.now())


def holds_refs(item: Item) -> bool:
    """Whether a checkpoint item references values held by older checkpoint items (``l`` = ``c``)."""
    return any(
        isinstance(av, dict) and av.get("M", {}).get("l", {}).get("S") == "c"
        for av in item.get(ATTR.VALUES, {}).get("M", {}).values()
    )


def check_format(item: Item) -> None:
    fmt = int_attr(item, ATTR.FORMAT)
    if fmt is None:
        raise CorruptPayloadError(f"{item_name(item)} has no format version: not written by this library")
    if fmt > schema.FORMAT_VERSION:
        raise UnsupportedFormatError(
            f"{item_name(item)} has format version {fmt}; this library reads up to "
            f"{schema.FORMAT_VERSION}: upgrade it"
        )


def item_size(item: Item) -> int:
    """DynamoDB's size rule, closely enough: names plus values."""
    return sum(len(k.encode()) + _av_size(v) for k, v in item.items())


def _av_size(av: AttributeValue) -> int:
    if "S" in av:
        return len(av["S"].encode())
    if "B" in av:
        return len(av["B"])
    if "N" in av:
        return len(av["N"]) // 2 + 1
    if "M" in av:
        return 3 + sum(len(k.encode()) + 1 + _av_size(v) for k, v in av["M"].items())
    if "L" in av:
        return 3 + sum(1 + _av_size(v) for v in av["L"])
    return 1


def group(thread_id: str, items: list[Item], only: str) -> CheckpointRecord | None:
    records = [r for r in group_all(thread_id, items) if r.checkpoint_id == only]
    return records[0] if records else None


def group_all(thread_id: str, items: list[Item]) -> list[CheckpointRecord]:
    """Group checkpoint and writes items into records.

    Writes without a checkpoint are skipped, and so are checkpoints of a
    lineage any tombstone among ``items`` lists.
    """
    records: dict[tuple[str, str], CheckpointRecord] = {}
    writes: dict[tuple[str, str], list[Item]] = {}
    dead: set[str] | None = None
    for it in items:
        check_format(it)
        ns, kind, cid, _ = parse_sk(it)
        if kind == schema.CHECKPOINT_ITEM:
            records[(ns, cid)] = CheckpointRecord(thread_id, ns, cid, it)
        elif kind == schema.WRITES_ITEM:
            writes.setdefault((ns, cid), []).append(it)
        elif kind == schema.TOMBSTONE_ITEM:
            # Thread-wide: a subgraph namespace a late run created after the
            # delete has no tombstone, but its root is the deleted one.
            dead = (dead or set()) | (tomb_roots(it) or set())
    for key, rec in records.items():
        rec.writes = writes.get(key, [])
    return [rec for rec in records.values() if not is_dead(rec.item, dead)]


@dataclass
class ThreadItems:
    """All items of one thread, grouped by namespace."""

    thread_id: str
    checkpoints: dict[tuple[str, str], Item] = field(default_factory=dict)
    writes: dict[tuple[str, str], list[Item]] = field(default_factory=dict)
    blobs: dict[str, Item] = field(default_factory=dict)  # SK -> item
    meta: list[Item] = field(default_factory=list)
    tombstones: dict[str, Item] = field(default_factory=dict)  # namespace -> tombstone
    #: Read without payloads (``_maintenance.threads.load_outline``): keys, lineage, stamps, TTLs.
    outline: bool = False

    @classmethod
    def from_items(cls, thread_id: str, items: Iterable[Item], *, outline: bool = False) -> ThreadItems:
        t = cls(thread_id, outline=outline)
        for it in items:
            ns, kind, cid, _ = parse_sk(it)
            if kind == schema.CHECKPOINT_ITEM:
                t.checkpoints[(ns, cid)] = it
            elif kind == schema.WRITES_ITEM:
                t.writes.setdefault((ns, cid), []).append(it)
            elif kind == schema.BLOB_ITEM:
                t.blobs[it[ATTR.SK]["S"]] = it
            elif kind == schema.TOMBSTONE_ITEM:
                t.tombstones[ns] = it
            else:
                t.meta.append(it)
        return t

    def dead(self) -> set[tuple[str, str]]:
        """Checkpoints of lineages a tombstone lists (late writes after a delete)."""
        if not self.tombstones:
            return set()
        # Thread-wide, as in list without a namespace (see group_all).
        roots = {r for it in self.tombstones.values() for r in tomb_roots(it) or ()}
        return {key for key, it in self.checkpoints.items() if is_dead(it, roots)}

    def namespaces(self) -> set[str]:
        return {ns for ns, _ in self.checkpoints}


def parent_cycle_error(thread_id: str, ns: str, walked: Sequence[str], again: str) -> CorruptPayloadError:
    """The error for a parent chain that reaches ``again`` a second time.

    ``walked`` is the chain from where the walk started; the cycle is its
    part from ``again`` on. Long cycles are abbreviated in the message.
    """
    cycle = [*walked[list(walked).index(again) :], again]
    shown = (
        " -> ".join(repr(c) for c in cycle)
        if len(cycle) <= 12
        else (
            " -> ".join(repr(c) for c in cycle[:5])
            + f" -> ... ({len(cycle) - 10} more) -> "
            + " -> ".join(repr(c) for c in cycle[-5:])
        )
    )
    return CorruptPayloadError(
        f"thread {thread_id!r} (namespace {ns!r}): the parent chain of checkpoint {walked[0]!r} "
        f"loops back on itself ({len(cycle) - 1} checkpoint(s) in the cycle: {shown}); "
        "parent ids are corrupt or were tampered with, so its history cannot be rebuilt"
    )
