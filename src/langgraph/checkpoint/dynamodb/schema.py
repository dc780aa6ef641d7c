"""The key schema: the single source of truth for table, index and S3 layout.

Everything that knows how items are keyed imports this module: the savers,
the Lambda handlers, the CLI and the CDK construct. Change a name here and the
table definition used by ``setup()`` and by the CDK stack changes with it.

Layout (one table, one item collection per thread)::

    PK = <thread_id>                       (escaped, see ``escape``)
         <tenant>|<thread_id>              a tenant's thread (``tenant_prefix``)
    SK = <ns>|c|<checkpoint_id>            checkpoint item
         <ns>|c|<checkpoint_id>|w|<task>   pending writes of one task
         <ns>|v|<channel>|<version>        a large channel value (blob item)
         <ns>|c|<U+10FFFF>                  tombstone: lineages deleted from <ns>
         |m|thread                         thread head: activity + TTL
         |m|lock                           per-thread lease lock
         |m|req|<request_id>               idempotency record of a request

``<ns>`` is the escaped namespace, which never contains a bare ``|``, so the
first ``|`` ends it; meta items start with ``|`` and have ``m`` as their
second segment, which no namespace item has (``c`` or ``v``).

Why the thread alone is the partition key: every operation that spans
namespaces (``list`` without ``checkpoint_ns``, ``delete_thread``,
``copy_thread``, ``prune``) is then one ``Query`` over one item collection
instead of a namespace registry plus fan-out, and IAM's
``dynamodb:LeadingKeys`` can confine a tenant to ``<tenant>|*``. A tenant
name never contains ``|`` and an escaped thread id never contains a bare
``|``, so tenant scopes are prefix-free (tenant ``a`` never matches tenant
``ab``'s keys) and disjoint from untenanted threads; the S3 layout uses the
same delimiter (see ``s3_thread_prefix``). Within
a namespace, checkpoint ids (uuid6) sort by time, and a checkpoint's writes
sort right after it, so one descending ``Query`` returns the latest
checkpoint together with its pending writes.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote, unquote

__all__ = [
    "ATTR",
    "BASE_FORMAT_VERSION",
    "BLOB_ITEM",
    "CHECKPOINT_ITEM",
    "DIGEST_MARK",
    "FORMAT_VERSION",
    "MAX_ID_BYTES",
    "MAX_KEY_BYTES",
    "MAX_PK_BYTES",
    "MAX_S3_KEY_BYTES",
    "RUN_INDEX_NAME",
    "S3_FIELD_ROOM",
    "S3_SHAPES",
    "THREADS_INDEX_MAX_SHARDS",
    "THREADS_INDEX_MIN_SHARDS",
    "THREADS_INDEX_NAME",
    "TOMBSTONE_ITEM",
    "TTL_ATTRIBUTE",
    "WRITES_ITEM",
    "WRITES_PER_ITEM",
    "S3Shape",
    "digest",
    "escape",
    "fit",
    "parse_partition_key",
    "parse_s3_thread_segment",
    "partition_key",
    "run_key",
    "s3_kind",
    "s3_object_key",
    "s3_shape_segments",
    "s3_thread_prefix",
    "s3_thread_prefixes",
    "table_definition",
    "tenant_partition_prefix",
    "tenant_s3_prefix",
    "unescape",
    "validate_s3_key_prefix",
]

#: Newest item format this library reads and writes. A reader that meets a
#: newer version refuses the item instead of guessing (see errors.py).
#:
#: - 1: values inline (``{"B": ...}``) or referenced by version in a blob
#:   item or S3 object (``{"M": {"v": version, "l": "blob" | "s3"}}``; an S3
#:   one also carries its write tag, ``"n"``, see ``valuecache``).
#: - 2: a reference may also point to the checkpoint item that introduced
#:   the version and holds it inline (``{"M": {"v", "l": "c", "c": checkpoint id}}``,
#:   and, from 0.1.0, the tag ``"n"`` of the write that holds it; older readers ignore it).
#:   Only items containing such a reference are written as version 2, so
#:   readers of version 1 keep reading everything else.
#: - 3: tombstone items (see ``tombstone_sk``). Only tombstones are version
#:   3: a reader of version 2 that meets one (a thread deleted and reused)
#:   refuses it with "upgrade" instead of resurrecting what was deleted.
#:   The lineage root (``ATTR.ROOT``) on checkpoint items is an extra
#:   attribute older readers ignore, so checkpoint items keep versions 1-2.
#: - 4: items whose sort key digests an id too long to keep whole (see
#:   :func:`fit`); they carry the whole ids in ``ATTR.KEY``. A reader of
#:   version 3 would take the digest for the id, so it refuses them instead.
FORMAT_VERSION: Final = 4
BASE_FORMAT_VERSION: Final = 1
#: Items holding a reference to a value held by another checkpoint item.
REF_FORMAT_VERSION: Final = 2
#: Tombstone items.
TOMBSTONE_FORMAT_VERSION: Final = 3
#: Items whose sort key holds a digested id.
DIGESTED_FORMAT_VERSION: Final = 4

PK: Final = "PK"
SK: Final = "SK"

#: Item kinds, stored in the ``t`` attribute.
CHECKPOINT_ITEM: Final = "c"
WRITES_ITEM: Final = "w"
BLOB_ITEM: Final = "v"
TOMBSTONE_ITEM: Final = "x"

#: Last segment of a tombstone's sort key. U+10FFFF is the largest code
#: point, so inside ``checkpoint_prefix(ns)`` the tombstone sorts above every
#: checkpoint id (ids starting with it are refused): the descending Query for
#: the latest checkpoint reads it first, at no extra request.
TOMBSTONE_MARK: Final = "\U0010ffff"
#: Lineage root of a checkpoint written on a parent that did not exist: its
#: history is unknown, so it is dead wherever its namespace has a tombstone.
ORPHAN_ROOT: Final = TOMBSTONE_MARK + "orphan"
#: Tombstone entries older than this (seconds) are forgotten by the next
#: delete of the thread: a run in flight longer than this could resurrect
#: the lineage it descends from.
FINALITY_WINDOW: Final = 30 * 86_400
#: The most entries a tombstone (and the head's dead roots) keeps: the next
#: delete forgets the oldest beyond it, so a thread id reused for ever keeps
#: items of bounded size (about 50 KB at most). A run in flight on a lineage
#: deleted this many deletes ago could resurrect it, as one older than
#: ``FINALITY_WINDOW`` could.
TOMBSTONE_ENTRIES_MAX: Final = 1000
#: A legacy checkpoint (no ``ATTR.ROOT``) is its own root; a delete lists at
#: most this many of them per namespace, newest first.
LEGACY_ROOTS_MAX: Final = 1000

#: Sparse GSI over the run id, for ``delete_for_runs`` (no thread id given).
RUN_INDEX_NAME: Final = "run_id-index"

#: DynamoDB TTL attribute (epoch seconds). Only thread-level meta items
#: carry it (the thread head, locks, request records): never checkpoint,
#: writes or blob items, so TTL can never cut a chain out of a live thread.
TTL_ATTRIBUTE: Final = "ttl"

#: Sparse GSI over thread heads: threads by last activity without a table scan.
THREADS_INDEX_NAME: Final = "threads-index"
#: Heads are spread over ``n`` GSI partitions (``ts`` = "0".."n-1"), ``n`` in the
#: layout item (:data:`LAYOUT_PK`): doubled when a head write meets an index
#: partition's 1,000 write units/s, up to the maximum. See ``_operations.heads``.
THREADS_INDEX_MIN_SHARDS: Final = 4
THREADS_INDEX_MAX_SHARDS: Final = 256

#: The stream the reaper Lambda consumes (TTL deletions of thread heads).
STREAM_VIEW_TYPE: Final = "KEYS_ONLY"

META_ITEM: Final = "m"


class ATTR:
    """Attribute names. Short, because DynamoDB bills attribute names too."""

    PK: Final = PK
    SK: Final = SK
    KIND: Final = "t"
    FORMAT: Final = "f"
    CHECKPOINT_ID: Final = "id"
    PARENT_ID: Final = "p"
    BODY: Final = "cp"  # serialized checkpoint without channel_values
    METADATA: Final = "md"  # serialized metadata (the source of truth)
    VALUES: Final = "vals"  # channel -> inline payload or reference
    RUN_ID: Final = "rid"  # GSI partition key (plaintext, see docs/configuration.md)
    TASK_ID: Final = "tid"
    TASK_PATH: Final = "tp"
    WRITE_PREFIX: Final = "w"  # w<idx> -> [channel, payload]
    BLOB: Final = "b"  # the payload of a blob item
    TTL: Final = TTL_ATTRIBUTE
    DELTA_NEEDS: Final = "dn"  # delta channels rebuilt from ancestors here (SS)
    CREATED: Final = "ct"  # creation time of blob items (epoch s)
    EXPIRES: Final = "exp"  # activity stamp on items (epoch s), not a TTL attribute
    THREAD_SHARD: Final = "ts"  # threads-index partition key (head items only)
    UPDATED_AT: Final = "ua"  # threads-index sort key: last activity (epoch ms)
    THREAD_ID: Final = "thr"  # raw thread id on head items
    ROOT: Final = "rt"  # lineage root of a checkpoint (id of its parentless ancestor)
    DEAD: Final = "dr"  # SS of deleted lineage roots (tombstones: "<epoch>:<root>"; head: "<root>")
    # Lock items (``LOCK_SK``) and request records (``request_sk``), see ``lock``.
    # Both also carry KIND, FORMAT and THREAD_ID; request records a TTL too (lock
    # items none: they keep the fencing count, see ``lock``). A value may repeat one
    # used on other item kinds (``rt``: ROOT on checkpoints, RESULT_TYPE on
    # requests), never one used on the same kind.
    OWNER: Final = "own"  # owner token of the lock / of the request's running attempt
    LEASE_EXPIRES: Final = "lx"  # lease expiry by the holder's clock, epoch ms (for people only)
    LEASE_ACQUIRED: Final = "la"  # when the current owner took the lock, epoch ms
    LEASE_MS: Final = "ld"  # the holder's lease duration, ms (how long waiters watch)
    FENCE: Final = "fen"  # fencing token: +1 on every acquisition, never reset by a release
    LOCK_VERSION: Final = "rvn"  # record version: fresh on every acquisition, heartbeat and release
    REQUEST_STATUS: Final = "st"  # "running" | "done" | "failed"
    REQUEST_START: Final = "cp0"  # checkpoint id the request was accepted against
    REQUEST_ATTEMPTS: Final = "att"  # attempts started
    REQUEST_CREATED: Final = "ca"  # first attempt started, epoch ms
    REQUEST_FINISHED: Final = "fin"  # done or failed at, epoch ms
    REQUEST_ERROR: Final = "err"  # last failure (repr), status "failed"
    RESULT_TYPE: Final = "rt"  # serde type of the stored result
    RESULT: Final = "rv"  # serde bytes of the stored result
    RESULT_SIZE: Final = "rs"  # serialized result size, bytes
    # Import markers (``IMPORT_SK``) carry KIND, FORMAT, THREAD_ID and CREATED too.
    IMPORT_SOURCE: Final = "src"  # the exported thread's id
    # On an item whose sort key digests an id (format 4): every id of its key, whole
    # ("ns", "id", "task"; a blob item's "ns", "ch", "ver").
    KEY: Final = "k"


#: DynamoDB limits: 2048 bytes for a partition key, 1024 for a sort key.
MAX_PK_BYTES: Final = 2048
MAX_KEY_BYTES: Final = 1024
#: S3's object key limit (UTF-8 bytes).
MAX_S3_KEY_BYTES: Final = 1024

SEP: Final = "|"

#: Marks a key part too long to keep whole: its readable start, this mark, then
#: :func:`digest` of the whole value. :func:`escape` and ``quote`` only ever write
#: ``%`` before two hex digits, so no part kept whole contains the mark.
DIGEST_MARK: Final = "%!"
_DIGEST_CHARS: Final = 26  # 130 bits of SHA-256
#: The smallest digested part: the mark and the digest, no readable start.
DIGESTED_MIN_BYTES: Final = len(DIGEST_MARK) + _DIGEST_CHARS
#: The longest namespace, checkpoint id, task id, channel or version the store
#: takes (UTF-8 bytes). Key parts longer than their room are digested and the
#: whole values kept in the item (``ATTR.KEY``), which bounds what they may cost.
MAX_ID_BYTES: Final = 16_384
#: An escaped namespace up to this many bytes stays whole in sort keys: with
#: 36-character checkpoint and task ids the widest writes key then fits, which is
#: what versions without digests accepted (their keys stay the same).
NS_KEEP_BYTES: Final = MAX_KEY_BYTES - len(f"{SEP}c{SEP}{'0' * 36}{SEP}w{SEP}{'0' * 36}{SEP}-999")
#: A longer one is digested to this size, leaving half a sort key for the rest.
NS_DIGESTED_BYTES: Final = 512


def digest(value: str) -> str:
    """A digest of ``value`` fit for any key: 26 characters of base32 SHA-256 (130 bits).

    Example:
        >>> digest("thread")
        'heqa2hukrw53nv545ji6ak4z6b'
    """
    raw = hashlib.sha256(value.encode()).digest()
    return base64.b32encode(raw).decode("ascii")[:_DIGEST_CHARS].lower()


def fit(part: str, value: str, limit: int) -> str:
    """``part`` (the encoded form of ``value``) if it fits in ``limit`` UTF-8 bytes, else it digested.

    A digested part is the longest start of ``part`` that leaves room (never
    cut inside a character or a ``%XX`` escape), :data:`DIGEST_MARK` and
    :func:`digest` of the whole ``value``: it stays readable and sorts near the
    whole value, and two values share it only if SHA-256 collides. The item
    keeps the whole value, and readers check the key it makes is the item's.

    Example:
        >>> fit("short", "short", 64)
        'short'
        >>> fit("x" * 100, "x" * 100, 40)
        'xxxxxxxxxxxx%!bhwln26ixtx4om7w6lwej54rvp'
    """
    data = part.encode()
    if len(data) <= limit:
        return part
    room = limit - DIGESTED_MIN_BYTES
    if room < 0:
        raise ValueError(f"no room for a digested key part ({limit} bytes)")
    head = data[:room].decode(errors="ignore")
    cut = head.rfind("%", max(0, len(head) - 2))
    if cut != -1:  # an escape cut in two
        head = head[:cut]
    return f"{head}{DIGEST_MARK}{digest(value)}"


def is_digested(part: str) -> bool:
    """Whether a key (or a part of one) holds a digested id (see :func:`fit`)."""
    return DIGEST_MARK in part


def whole_ids(sk: str, **ids: str) -> dict[str, Any] | None:
    """The ``ATTR.KEY`` attribute of an item keyed ``sk``: its ids whole, if ``sk`` digests one.

    Names: ``ns``, ``id`` and ``task`` (checkpoint, writes and tombstone
    items), ``ns``, ``ch`` and ``ver`` (blob items). ``None`` when the key
    holds every id whole, which is what almost every item's does.
    """
    if DIGEST_MARK not in sk:
        return None
    return {"M": {name: {"S": value} for name, value in ids.items()}}


def escape(value: str) -> str:
    """Escape ``%`` and the separator so any string can be a key component.

    Only two characters change, so ids stay readable in the console; an
    escaped id never contains a bare ``|``, which is what keeps the tenant
    delimiter (see ``partition_key``) unambiguous.
    """
    return value.replace("%", "%25").replace(SEP, "%7C")


def unescape(value: str) -> str:
    """Invert :func:`escape`."""
    return value.replace("%7C", SEP).replace("%25", "%")


def partition_key(thread_id: str, tenant_prefix: str = "") -> str:
    """Partition key of a thread, under a tenant when ``tenant_prefix`` is given.

    ``<tenant>|<escaped thread id>``: the ``|`` ends the tenant name (which
    cannot contain one), so no tenant's keys start with another's scope.

    Example:
        >>> partition_key("t|1"), partition_key("t|1", "acme")
        ('t%7C1', 'acme|t%7C1')
    """
    if tenant_prefix:
        return f"{tenant_partition_prefix(tenant_prefix)}{escape(thread_id)}"
    return escape(thread_id)


def parse_partition_key(pk: str) -> tuple[str, str] | None:
    """``(tenant_prefix, thread_id)`` of a thread's partition key (tenant ``""`` if none).

    ``None`` for anything that is not a thread's partition: meta partitions
    (they start with ``|``, e.g. the lifecycle cursors) and keys this
    library never writes (two bare ``|``, an invalid tenant name).

    Example:
        >>> parse_partition_key("acme|t%7C1"), parse_partition_key("t"), parse_partition_key("|lifecycle")
        (('acme', 't|1'), ('', 't'), None)
    """
    if not pk or pk.startswith(SEP):
        return None
    tenant, sep, rest = pk.partition(SEP)
    if not sep:
        return "", unescape(pk)
    if not rest or SEP in rest or not _valid_tenant(tenant):
        return None
    return tenant, unescape(rest)


def _ns_part(checkpoint_ns: str) -> str:
    escaped = escape(checkpoint_ns)
    if len(escaped.encode()) <= NS_KEEP_BYTES:
        return escaped
    return fit(escaped, checkpoint_ns, NS_DIGESTED_BYTES)


def ns_prefix(checkpoint_ns: str) -> str:
    return f"{_ns_part(checkpoint_ns)}{SEP}"


def checkpoint_prefix(checkpoint_ns: str) -> str:
    """Prefix of every checkpoint and writes item of one namespace."""
    return f"{ns_prefix(checkpoint_ns)}c{SEP}"


#: Behind a checkpoint's key: the widest writes suffix a 36-character task id makes.
_WRITES_TAIL: Final = len(f"{SEP}w{SEP}{'0' * 36}{SEP}-999")


def checkpoint_sk(checkpoint_ns: str, checkpoint_id: str) -> str:
    """Sort key of a checkpoint item; an over-long id is digested (see :func:`fit`).

    The id keeps room for the writes items of a LangGraph task id (36
    characters) behind it, so every key this store accepted whole before
    digests existed is still whole.
    """
    prefix = checkpoint_prefix(checkpoint_ns)
    limit = MAX_KEY_BYTES - len(prefix.encode()) - _WRITES_TAIL
    return f"{prefix}{fit(escape(checkpoint_id), checkpoint_id, limit)}"


#: Regular writes (index >= 0) one writes item holds: index ``i`` lives in the
#: item of shard ``i // WRITES_PER_ITEM``; each special write (a negative index:
#: errors, interrupts, resumes) in an item of its own. So an item's update names
#: at most this many writes (DynamoDB: 4 KB and 300 operators per expression), and
#: what overwrites (the special channels) never grows the item that first-write-wins
#: fills.
WRITES_PER_ITEM: Final = 64
#: The widest shard suffix (``|`` and up to 3 characters), for key-length checks.
WIDEST_WRITES_SHARD: Final = -999


def writes_shard(idx: int) -> int:
    """The writes item (shard) of write index ``idx``: 0 holds indexes 0-63 (and old items every index)."""
    return idx // WRITES_PER_ITEM if idx >= 0 else idx


def writes_sk(checkpoint_ns: str, checkpoint_id: str, task_id: str, shard: int = 0) -> str:
    """Sort key of a task's writes item of ``shard`` (see :func:`writes_shard`); shard 0 has no suffix."""
    checkpoint = checkpoint_sk(checkpoint_ns, checkpoint_id)
    limit = MAX_KEY_BYTES - len(checkpoint.encode()) - len(f"{SEP}w{SEP}{SEP}{WIDEST_WRITES_SHARD}")
    base = f"{checkpoint}{SEP}w{SEP}{fit(escape(task_id), task_id, limit)}"
    return base if shard == 0 else f"{base}{SEP}{shard}"


def writes_task_prefix(checkpoint_ns: str, checkpoint_id: str, task_id: str) -> str:
    """A prefix of every writes item of one task: shard 0's key.

    Also a prefix of other tasks' keys (task ``ab``'s of task ``abc``'s): filter what a
    ``begins_with`` returns by :func:`parse_sk`'s task id.
    """
    return writes_sk(checkpoint_ns, checkpoint_id, task_id)


def checkpoint_range_end(checkpoint_ns: str, checkpoint_id: str) -> str:
    """Upper bound that includes a checkpoint item and all its writes items."""
    return f"{checkpoint_sk(checkpoint_ns, checkpoint_id)}{SEP}~"


def tombstone_sk(checkpoint_ns: str) -> str:
    """Sort key of a namespace's tombstone (above every checkpoint id of it)."""
    return f"{checkpoint_prefix(checkpoint_ns)}{TOMBSTONE_MARK}"


def blob_sk(checkpoint_ns: str, channel: str, version: str) -> str:
    """Sort key of a blob item; when channel and version do not fit whole, the version gets
    at most half the room left, then the channel the rest (see :func:`fit`)."""
    prefix = f"{ns_prefix(checkpoint_ns)}v{SEP}"
    room = MAX_KEY_BYTES - len(prefix.encode()) - len(SEP)
    ch, ver = escape(channel), escape(version)
    if len(ch.encode()) + len(ver.encode()) > room:
        ver = fit(ver, version, room // 2)
        ch = fit(ch, channel, room - len(ver.encode()))
    return f"{prefix}{ch}{SEP}{ver}"


HEAD_SK: Final = f"{SEP}{META_ITEM}{SEP}thread"

#: Partition key of the pruner's and sweeper's cursor items (the lifecycle
#: state). It contains a bare separator, which no escaped thread id or tenant
#: partition does: it can't be a thread.
LIFECYCLE_PK: Final = f"{SEP}lifecycle"
#: Layout items' partition, apart from the cursors: tenants may read it.
LAYOUT_PK: Final = f"{SEP}layout"
THREADS_LAYOUT_SK: Final = "threads-index"
LOCK_SK: Final = f"{SEP}{META_ITEM}{SEP}lock"
META_PREFIX: Final = f"{SEP}{META_ITEM}{SEP}"
#: Meta item of a thread an import is writing (``transfer.import_thread``): put
#: before the first checkpoint, deleted once the import reads back. A thread
#: that still carries it is partial: the import was killed half way.
IMPORT_SK: Final = f"{META_PREFIX}import"


def request_sk(request_id: str) -> str:
    return f"{META_PREFIX}req{SEP}{escape(request_id)}"


def run_key(run_id: str) -> str:
    """The run index's key of a run id (``ATTR.RUN_ID``): whole, or digested past 2,048 bytes.

    Example:
        >>> run_key("run-1")
        'run-1'
    """
    return fit(run_id, run_id, MAX_PK_BYTES)


def thread_shard(thread_id: str, shards: int = THREADS_INDEX_MIN_SHARDS) -> str:
    """Stable threads-index shard of a thread (not Python's salted hash); doubling moves half.

    >>> thread_shard("t1"), thread_shard("t1", 8)
    ('3', '7')
    """
    return str(zlib.crc32(thread_id.encode()) % shards)


_SHARD: Final = re.compile(r"-?[1-9][0-9]{0,2}")


def parse_sk(sk: str) -> tuple[str, str, str, str | None]:
    """Split a sort key into ``(namespace, kind, id, task_id)``.

    ``kind`` is ``c`` (checkpoint), ``w`` (writes), ``v`` (blob; ``id`` is
    then ``channel`` and ``task_id`` the version), ``x`` (tombstone; ``id``
    is empty) or ``m`` (meta item; ``id`` is the rest of the key).
    """
    parts = sk.split(SEP)
    if (
        len(parts) < 3
        or parts[1] not in ("c", "v", META_ITEM)
        or (parts[1] == "c" and len(parts) not in (3, 5, 6))
        or (len(parts) == 6 and not _SHARD.fullmatch(parts[5]))
    ):
        from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError

        raise CorruptPayloadError(f"sort key {sk!r} was not written by this library")
    ns = unescape(parts[0])
    if parts[1] == META_ITEM:
        return "", META_ITEM, SEP.join(parts[2:]), None
    if parts[1] == "c":
        if len(parts) == 3 and parts[2] == TOMBSTONE_MARK:
            return ns, TOMBSTONE_ITEM, "", None
        if len(parts) == 3:
            return ns, CHECKPOINT_ITEM, unescape(parts[2]), None
        return ns, WRITES_ITEM, unescape(parts[2]), unescape(parts[4])
    return ns, BLOB_ITEM, unescape(parts[2]), unescape(parts[3])


def s3_segment(value: str) -> str:
    """One path segment of an S3 key (a checkpoint or task id): every ``/`` and ``%`` quoted."""
    return quote(value, safe="")


def s3_thread_prefix(key_prefix: str, thread_id: str, tenant_prefix: str = "") -> str:
    """S3 prefix of one thread's objects, under a tenant when ``tenant_prefix`` is given.

    The thread id is percent-encoded (``/`` and ``|`` included) so one
    thread's prefix never contains another's. A tenant's threads live under
    ``<key_prefix><quoted tenant>|``, the S3 twin of the partition-key layout:
    prefix-free between tenants and disjoint from untenanted threads (whose
    quoted segment never contains a bare ``|``).

    Example:
        >>> s3_thread_prefix("checkpoints/", "t/1"), s3_thread_prefix("checkpoints/", "t", "acme")
        ('checkpoints/t%2F1/', 'checkpoints/acme|t/')
    """
    if tenant_prefix:
        return f"{tenant_s3_prefix(key_prefix, tenant_prefix)}{quote(thread_id, safe='')}/"
    return f"{key_prefix}{quote(thread_id, safe='')}/"


#: In an S3 key too long to keep whole, each segment longer than its room (quoted
#: bytes) is digested to it: a key then fits S3's 1,024 bytes behind an
#: ``s3_key_prefix`` and tenant of up to 400 bytes together, whatever the ids.
S3_THREAD_ROOM: Final = 200
S3_NS_ROOM: Final = 200
#: Checkpoint ids, task ids and versions.
S3_ID_ROOM: Final = 64
S3_CHANNEL_ROOM: Final = 100


def s3_object_key(root: str, segments: Sequence[tuple[str, str, int]], reserve: int = 0) -> str:
    """An object key: ``root``, then ``segments`` joined by ``/``.

    Each segment is ``(encoded, value, room)``. All stay whole while the whole
    key, plus ``reserve`` bytes (a random suffix the caller adds), fits S3's
    1,024 bytes: every key this store wrote before digests existed is
    unchanged. Otherwise each segment with a room is digested to it
    (:func:`fit`; ``room`` 0: a literal, always whole). The caller checks the
    result still fits (a huge ``root`` leaves it too long).

    Example:
        >>> s3_object_key("p/", [("t", "t", 200), ("body", "", 0)])
        'p/t/body'
    """
    whole = root + "/".join(part for part, _, _ in segments)
    if len(whole.encode()) + reserve <= MAX_S3_KEY_BYTES:
        return whole
    return root + "/".join(fit(part, value, room) if room else part for part, value, room in segments)


@dataclass(frozen=True)
class S3Shape:
    """One kind of S3 object: the segments of its key after ``<thread>/_<namespace>/``.

    A segment is a literal (``"c"``), or a ``{field}`` filled with that id,
    percent-encoded (so no segment holds a ``/`` and keys parse back by
    position) and digested to its room when the whole key would not fit.
    ``tail`` is a literal glued to the last field (the ``.`` before a
    pending write's random suffix).
    """

    kind: str
    segments: tuple[str, ...]
    tail: str = ""


#: Every S3 object this store writes, under ``<s3_key_prefix>[<tenant>|]<thread>/_<ns>/``.
#: ``_parts.keys`` builds keys from these rows (and proves a stored pointer is
#: its item's own), ``s3_kind`` parses a key back to its row: the layout is
#: written here once.
S3_SHAPES: Final = (
    S3Shape("checkpoint body", ("c", "{checkpoint_id}", "body")),
    S3Shape("checkpoint metadata", ("c", "{checkpoint_id}", "metadata")),
    # The key continues with a random suffix of S3_SUFFIX_CHARS (see _parts.keys).
    S3Shape("write", ("c", "{checkpoint_id}", "w", "{task_id}", "{idx}"), tail="."),
    S3Shape("value", ("v", "{channel}", "{version}")),
)
#: The room of each field of ``S3_SHAPES`` (quoted bytes; see :func:`s3_object_key`).
S3_FIELD_ROOM: Final[Mapping[str, int]] = {
    "checkpoint_id": S3_ID_ROOM,
    "task_id": S3_ID_ROOM,
    "version": S3_ID_ROOM,
    "channel": S3_CHANNEL_ROOM,
    "idx": 0,  # a small integer, always whole
}
S3_SHAPE: Final[Mapping[str, S3Shape]] = {shape.kind: shape for shape in S3_SHAPES}


def s3_shape_segments(kind: str, **ids: str) -> list[tuple[str, str, int]]:
    """The ``(encoded, value, room)`` segments of an object of ``kind`` after its namespace.

    Example:
        >>> s3_shape_segments("value", channel="messages", version="7")
        [('v', '', 0), ('messages', 'messages', 100), ('7', '7', 64)]
    """
    shape = S3_SHAPE[kind]
    out: list[tuple[str, str, int]] = []
    for i, seg in enumerate(shape.segments):
        tail = shape.tail if i == len(shape.segments) - 1 else ""
        if seg.startswith("{"):
            name = seg[1:-1]
            value = ids[name]
            room = S3_FIELD_ROOM[name]
            out.append((quote(value, safe="") + tail, value if room else "", room))
        else:
            out.append((seg + tail, "", 0))
    return out


def s3_kind(key: str, prefix: str = "") -> str:
    """The kind of an S3 object (a row of :data:`S3_SHAPES`) from its key, ``"other"`` if none.

    Thread and namespace are percent-encoded (no ``/`` inside), so the
    segments after ``<prefix><thread>/_<ns>/`` are positional. A tenant's
    keys parse the same way (its ``|`` is inside the thread segment).

    Example:
        >>> s3_kind("checkpoints/t/_/c/cid/w/task/3.abc", "checkpoints/")
        'write'
    """
    parts = (key[len(prefix) :] if key.startswith(prefix) else key).split("/")
    rest = parts[2:] if len(parts) > 2 and parts[1].startswith("_") else []
    for shape in S3_SHAPES:
        if len(rest) != len(shape.segments):
            continue
        if all(seg.startswith("{") or seg == got for seg, got in zip(shape.segments, rest, strict=True)):
            return shape.kind
    return "other"


def s3_thread_prefixes(key_prefix: str, thread_id: str, tenant_prefix: str = "") -> tuple[str, ...]:
    """Every S3 prefix under which a thread's objects may live: its whole one, and
    (for a thread id longer than :data:`S3_THREAD_ROOM` once quoted) the digested
    one its too-long keys use (see :func:`s3_object_key`)."""
    whole = s3_thread_prefix(key_prefix, thread_id, tenant_prefix)
    segment = quote(thread_id, safe="")
    short = fit(segment, thread_id, S3_THREAD_ROOM)
    if short == segment:
        return (whole,)
    digested = f"{whole[: len(whole) - len(segment) - 1]}{short}/"
    # A whole prefix of S3's full key length holds no object (nor may it be listed).
    return (whole, digested) if len(whole.encode()) < MAX_S3_KEY_BYTES else (digested,)


def parse_s3_thread_segment(segment: str) -> tuple[str, str] | None:
    """``(tenant_prefix, thread_id)`` of the first key segment after the key prefix.

    The inverse of :func:`s3_thread_prefix` for a segment (without its
    trailing ``/``); ``None`` if this library never writes such a segment, or
    if it holds a digested thread id (see :func:`s3_thread_prefixes`).
    """
    if DIGEST_MARK in segment:  # the thread id is not in it whole
        return None
    tenant, sep, rest = segment.partition(SEP)
    if not sep:
        return ("", unquote(segment)) if segment else None
    if not rest or SEP in rest:
        return None
    tenant = unquote(tenant)
    if not _valid_tenant(tenant):
        return None
    return tenant, unquote(rest)


def table_definition(table_name: str, *, billing_mode: str = "PAY_PER_REQUEST") -> dict[str, Any]:
    """``CreateTable`` arguments for the checkpoint table.

    The CDK construct builds its table from the same function, so the table
    ``setup()`` creates and the deployed one cannot drift apart.
    """
    return {
        "TableName": table_name,
        "BillingMode": billing_mode,
        "AttributeDefinitions": [
            {"AttributeName": PK, "AttributeType": "S"},
            {"AttributeName": SK, "AttributeType": "S"},
            {"AttributeName": ATTR.RUN_ID, "AttributeType": "S"},
            {"AttributeName": ATTR.THREAD_SHARD, "AttributeType": "S"},
            {"AttributeName": ATTR.UPDATED_AT, "AttributeType": "N"},
        ],
        "KeySchema": [
            {"AttributeName": PK, "KeyType": "HASH"},
            {"AttributeName": SK, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                # Sparse: only checkpoint and writes items of a run carry
                # ``rid``. Keys only: delete_for_runs needs nothing else.
                "IndexName": RUN_INDEX_NAME,
                "KeySchema": [
                    {"AttributeName": ATTR.RUN_ID, "KeyType": "HASH"},
                    {"AttributeName": SK, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
            {
                # Sparse: only thread heads carry ``ts``/``ua``.
                "IndexName": THREADS_INDEX_NAME,
                "KeySchema": [
                    {"AttributeName": ATTR.THREAD_SHARD, "KeyType": "HASH"},
                    {"AttributeName": ATTR.UPDATED_AT, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
        ],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": STREAM_VIEW_TYPE},
    }


def ttl_specification() -> dict[str, Any]:
    """``UpdateTimeToLive`` argument (``setup()`` and the CDK construct)."""
    return {"Enabled": True, "AttributeName": TTL_ATTRIBUTE}


def tenant_partition_prefix(tenant_prefix: str) -> str:
    """Partition-key prefix of every thread of a tenant, delimiter included.

    A saver created with ``tenant_prefix=P`` stores thread ``T`` under the
    partition key ``P|escape(T)``, which starts with this string; IAM's
    ``dynamodb:LeadingKeys`` condition uses it (with a trailing ``*``). The
    ``|`` makes it prefix-free: ``a|*`` never matches tenant ``ab``'s keys.

    Example:
        >>> tenant_partition_prefix("acme")
        'acme|'
    """
    validate_tenant_prefix(tenant_prefix)
    return f"{escape(tenant_prefix)}{SEP}"


def tenant_s3_prefix(key_prefix: str, tenant_prefix: str) -> str:
    """S3 key prefix of every object of a tenant's threads (for IAM conditions), delimiter included.

    Example:
        >>> tenant_s3_prefix("checkpoints/", "acme#1")
        'checkpoints/acme%231|'
    """
    validate_tenant_prefix(tenant_prefix)
    return f"{key_prefix}{quote(tenant_prefix, safe='')}{SEP}"


def _valid_tenant(tenant_prefix: str) -> bool:
    return bool(tenant_prefix) and not any(c in tenant_prefix for c in "%|*?/")


def validate_s3_key_prefix(key_prefix: str) -> None:
    """The savers' S3 key prefix must be a folder: non-empty, ending with ``/``.

    Every key the library writes, lists or deletes starts with it. Without
    the ``/`` it is a prefix of the bucket's other keys too (``checkpoints``
    of ``checkpoints-archive/...``), and the orphan sweeper, which lists
    under it and deletes what no thread references, would take them for
    threads' orphans.

    Example:
        >>> validate_s3_key_prefix("checkpoints/")
        >>> validate_s3_key_prefix("checkpoints")
        Traceback (most recent call last):
        ...
        ValueError: s3_key_prefix must be a folder, non-empty and ending with '/' (e.g. 'checkpoints/'), got 'checkpoints'
    """
    if not isinstance(key_prefix, str) or not key_prefix.endswith("/") or not key_prefix.strip("/"):
        raise ValueError(
            "s3_key_prefix must be a folder, non-empty and ending with '/' (e.g. 'checkpoints/'), "
            f"got {key_prefix!r}"
        )


#: What a new tenant name may be made of. A positive set, because a tenant name
#: ends up inside IAM policies (``dynamodb:LeadingKeys``, ``s3:prefix``): ``*`` and
#: ``?`` are wildcards there and ``${aws:username}`` a policy variable, either of
#: which would widen a tenant's grant to other tenants' threads.
_TENANT_NAME: Final = re.compile(r"[A-Za-z0-9._:#@+=,-]{1,256}")


def validate_tenant_prefix(tenant_prefix: str) -> None:
    """A tenant name: 1-256 of ``A-Z a-z 0-9 . _ : # @ + = , -``, safe in keys and IAM policies alike."""
    if not isinstance(tenant_prefix, str) or not _TENANT_NAME.fullmatch(tenant_prefix):
        raise ValueError(
            f"tenant_prefix must be 1-256 characters of A-Z a-z 0-9 . _ : # @ + = , - "
            f"(it is written into IAM policies); got {tenant_prefix!r}"
        )
