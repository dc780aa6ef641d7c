"""Store inspection: keys, paging, queries, scans, S3 listings, threads, history, diffs, sizes, stats (dicts for --json)."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from langgraph.checkpoint.dynamodb import _items, schema
from langgraph.checkpoint.dynamodb._inspection import (
    ddb_client,
    s3_in_scope,
    s3_objects,
    s3_root,
    scan,
    thread_items,
)
from langgraph.checkpoint.dynamodb._items import item_size
from langgraph.checkpoint.dynamodb.cli._base import EXIT_NOT_FOUND, EXIT_USAGE, CLIError
from langgraph.checkpoint.dynamodb.cli._render import jsonable, shell_quote
from langgraph.checkpoint.dynamodb.cli._tasks import (
    INTERRUPT_CHANNEL,
    NS_END,
    NS_SEP,
    checkpoint_time,
    is_internal_channel,
    iso_time,
    next_tasks,
    produced_by,
    uuid6_ms,
)
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError
from langgraph.checkpoint.dynamodb.schema import ATTR


def describe_checkpoint(
    tup: Any,
    parent: Any | None = None,
    *,
    size: int | None = None,
    live: bool = False,
    parent_missing_reason: str | None = None,
) -> dict[str, Any]:
    """One history row: ids, step, source, node writes, next tasks, interrupts, size.

    Args:
        tup: the ``CheckpointTuple``.
        parent: its parent's tuple, for the node writes (see :func:`produced_by`).
        size: stored bytes; ``None`` (not computed) leaves the ``bytes`` key out.
        live: as ``graph.get_state`` on the latest checkpoint: tasks that
            already finished are left out of ``next``.
        parent_missing_reason: why a parent named by the tuple is not there
            (``pruned``, ``never_existed``, ``unknown``: see
            :func:`missing_parent_reason`); ``unknown`` if not given.

    Example:
        ```python
        row = describe_checkpoint(saver.get_tuple(config))
        row["next"]  # [{'name': 'reviewer', 'id': '...', 'status': 'pending'}]
        ```
    """
    conf = tup.config["configurable"]
    md = tup.metadata or {}
    cp = tup.checkpoint
    # A parent id whose checkpoint is not there: its writes are not either.
    parent_missing = bool(tup.parent_config) and parent is None
    tasks = next_tasks(
        cp, tup.pending_writes or [], step=md.get("step"), checkpoint_ns=conf.get("checkpoint_ns", "")
    )
    if live:
        tasks = [t for t in tasks if t["status"] not in ("done", "resumed")]
    interrupts = [
        jsonable(getattr(v, "value", v))
        for tid, ch, val in tup.pending_writes or []
        if ch == INTERRUPT_CHANNEL
        for v in as_list(val)
    ]
    return {
        "checkpoint_id": conf["checkpoint_id"],
        "checkpoint_ns": conf.get("checkpoint_ns", ""),
        "parent_id": (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        "step": md.get("step"),
        "source": md.get("source"),
        "created_at": cp.get("ts") or checkpoint_time(conf["checkpoint_id"]),
        "writes": {} if parent_missing else produced_by(cp, md, parent),
        "parent_missing": parent_missing,
        "parent_missing_reason": (parent_missing_reason or "unknown") if parent_missing else None,
        "next": tasks,
        "interrupts": interrupts,
        **({"bytes": size} if size is not None else {}),
    }


def missing_parent_reason(saver: Any, tup: Any) -> str:
    """Why the parent a checkpoint names is not in the store: ``pruned``, ``never_existed`` or ``unknown``.

    The saver records each checkpoint's lineage root when it writes it, after
    looking its parent up: a parent that was not there gets the orphan root.
    So a checkpoint whose root is the orphan root was written on a parent id
    that did not exist (``never_existed``: e.g. a run started from a mistyped
    or another thread's checkpoint id); any other root means the parent
    existed then and was removed since (``pruned``). Items written before
    lineage roots existed carry none: ``unknown``. One GetItem.

    Example:
        ```python
        missing_parent_reason(saver, saver.get_tuple(config))  # 'pruned'
        ```
    """
    conf = tup.config["configurable"]
    resp = ddb_client(saver).get_item(
        TableName=saver.table_name,
        Key={
            ATTR.PK: {"S": saver.partition_key(conf["thread_id"])},
            ATTR.SK: {"S": schema.checkpoint_sk(conf.get("checkpoint_ns", ""), conf["checkpoint_id"])},
        },
        ProjectionExpression="#rt",
        ExpressionAttributeNames={"#rt": ATTR.ROOT},
        ConsistentRead=True,
    )
    root = resp.get("Item", {}).get(ATTR.ROOT, {}).get("S")
    if not isinstance(root, str):
        return "unknown"
    # A copied thread's roots carry a copy suffix (copy_thread): the orphan mark stays in front.
    return "never_existed" if root.startswith(schema.ORPHAN_ROOT) else "pruned"


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def diff_checkpoints(a: Any, b: Any) -> dict[str, Any]:
    """Channel-level differences between two checkpoint tuples.

    A channel is ``added``, ``removed``, ``changed`` (value differs) or
    ``rewritten`` (new version, equal value). Equal versions are equal
    values, so unchanged channels are not even compared.

    Example:
        ```python
        d = diff_checkpoints(saver.get_tuple(cfg_a), saver.get_tuple(cfg_b))
        [c["channel"] for c in d["changes"] if c["change"] == "changed"]
        ```
    """
    av, bv = a.checkpoint.get("channel_values", {}), b.checkpoint.get("channel_values", {})
    aver, bver = a.checkpoint.get("channel_versions", {}), b.checkpoint.get("channel_versions", {})
    changes = []
    for chan in sorted(set(av) | set(bv)):
        if is_internal_channel(chan):
            continue
        if chan not in av:
            change = "added"
        elif chan not in bv:
            change = "removed"
        elif aver.get(chan) == bver.get(chan):
            continue
        else:
            change = "rewritten" if _equal(av[chan], bv[chan]) else "changed"
        changes.append(
            {
                "channel": chan,
                "change": change,
                "a": jsonable(av.get(chan)) if chan in av else None,
                "b": jsonable(bv.get(chan)) if chan in bv else None,
                "a_version": aver.get(chan),
                "b_version": bver.get(chan),
            }
        )
    return {
        "a": {
            "checkpoint_id": a.config["configurable"]["checkpoint_id"],
            "step": (a.metadata or {}).get("step"),
        },
        "b": {
            "checkpoint_id": b.config["configurable"]["checkpoint_id"],
            "step": (b.metadata or {}).get("step"),
        },
        "changes": changes,
    }


def _equal(x: Any, y: Any) -> bool:
    try:
        return bool(x == y)
    except Exception:
        return jsonable(x) == jsonable(y)


# ============================================================ store queries


def thread_checkpoint_count(saver: Any, thread_id: str) -> int:
    """Checkpoints of a thread in all namespaces (0: the thread does not exist)."""
    return sum(
        1
        for it in thread_items(saver, thread_id, projection=True)
        if schema.parse_sk(it[ATTR.SK]["S"])[1] == schema.CHECKPOINT_ITEM
    )


def require_thread(saver: Any, thread_id: str) -> int:
    count = thread_checkpoint_count(saver, thread_id)
    if count == 0:
        raise CLIError(
            f"thread {shell_quote(thread_id)} not found in table {saver.table_name!r}",
            EXIT_NOT_FOUND,
            "thread_not_found",
        )
    return count


def encode_token(state: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")


_BAD_TOKEN: Final = (
    "invalid page token: pass the --page-token value printed by the previous page of the same listing"
)


def _bad_token() -> CLIError:
    return CLIError(_BAD_TOKEN, EXIT_USAGE, "bad_page_token")


def _is_key_value(av: Any) -> bool:
    return (
        isinstance(av, dict)
        and len(av) == 1
        and next(iter(av)) in ("S", "N")
        and isinstance(next(iter(av.values())), str)
    )


def decode_token(token: str) -> dict[str, Any]:
    """A page token's state, checked field by field: a token is user input.

    Whatever is wrong with it (not base64, not JSON, not ours, edited), the
    message is the same and names no codec.
    """
    try:
        state = json.loads(base64.urlsafe_b64decode(token.strip() + "=" * (-len(token.strip()) % 4)))
    except (ValueError, binascii.Error):  # UnicodeDecodeError is a ValueError
        raise _bad_token() from None
    if not isinstance(state, dict) or state.get("v") != 1 or state.get("src") not in ("index", "scan"):
        raise _bad_token()
    filters = state.get("f", {})
    if not isinstance(filters, dict) or not all(
        (k == "p" and isinstance(v, str))
        or (k in ("a", "i") and isinstance(v, int) and not isinstance(v, bool))
        for k, v in filters.items()
    ):
        raise _bad_token()
    if state["src"] == "scan":
        offset = state.get("o")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise _bad_token()
    else:
        cursors = state.get("s")
        shards = {str(i) for i in range(schema.THREADS_INDEX_SHARDS)}
        if not isinstance(cursors, dict) or set(cursors) != shards:
            raise _bad_token()
        for shard, cursor in cursors.items():
            if cursor is None or cursor == "done":
                continue
            keys = {ATTR.THREAD_SHARD, ATTR.UPDATED_AT, ATTR.PK, ATTR.SK}
            if (
                not isinstance(cursor, dict)
                or set(cursor) != keys
                or not all(_is_key_value(av) for av in cursor.values())
                or cursor[ATTR.THREAD_SHARD] != {"S": shard}
            ):
                raise _bad_token()
    return state


@dataclasses.dataclass(frozen=True)
class ThreadFilter:
    """Which threads :func:`list_threads` returns.

    Attributes:
        prefix: thread ids starting with this (``""``: all).
        active_since_ms: last activity at or after this time (epoch ms).
        idle_since_ms: last activity at or before this time (epoch ms):
            threads idle since then.

    Example:
        >>> ThreadFilter(prefix="user-7/").matches("user-7/chat", 0)
        True
    """

    prefix: str = ""
    active_since_ms: int | None = None
    idle_since_ms: int | None = None

    def matches(self, thread_id: str, updated_ms: int | None) -> bool:
        if not thread_id.startswith(self.prefix):
            return False
        if self.active_since_ms is None and self.idle_since_ms is None:
            return True
        if updated_ms is None:  # activity unknown: cannot be shown as in the window
            return False
        if self.active_since_ms is not None and updated_ms < self.active_since_ms:
            return False
        return self.idle_since_ms is None or updated_ms <= self.idle_since_ms

    @property
    def active(self) -> bool:
        return bool(self.prefix) or self.active_since_ms is not None or self.idle_since_ms is not None

    def to_token(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.prefix:
            out["p"] = self.prefix
        if self.active_since_ms is not None:
            out["a"] = self.active_since_ms
        if self.idle_since_ms is not None:
            out["i"] = self.idle_since_ms
        return out

    @classmethod
    def from_token(cls, f: Mapping[str, Any]) -> ThreadFilter:
        return cls(prefix=f.get("p", ""), active_since_ms=f.get("a"), idle_since_ms=f.get("i"))


def list_threads(
    saver: Any,
    *,
    limit: int = 50,
    page_token: str | None = None,
    source: str = "auto",
    filter: ThreadFilter | None = None,
) -> dict[str, Any]:
    """Threads, most recent activity first, one page at a time.

    Two sources:

    * ``index``: the threads GSI over thread heads (``schema.HEAD_SK``
      items, sharded by ``ATTR.THREAD_SHARD`` and sorted by
      ``ATTR.UPDATED_AT``): one Query per shard per page, merged. A time
      window is part of each Query's key condition; a prefix is a filter
      on the partition key (DynamoDB reads past the heads it drops).
    * ``scan``: a Scan of the table's keys, grouped by thread, sorted by
      the time in the newest checkpoint id. Reads the whole table on
      every page: for tables written before thread heads existed. Its
      last activity is the newest checkpoint's time.

    ``auto`` uses the index when it holds any head and falls back to the
    scan otherwise (or when the index does not exist). A page token keeps
    the source and the filter of the listing it continues (a duration
    given again is not re-read against a newer clock).

    Returns:
        ``{"source", "note", "threads": [...], "next_page_token"}``.

    Example:
        >>> page = list_threads(saver, limit=10, filter=ThreadFilter(prefix="user-7/"))  # doctest: +SKIP
        >>> [t["thread_id"] for t in page["threads"]]  # doctest: +SKIP
        ['user-7/chat-2', 'user-7/chat-1']
    """
    state = decode_token(page_token) if page_token else None
    flt = filter or ThreadFilter()
    if state is not None:
        source = state["src"]
        token_filter = ThreadFilter.from_token(state.get("f", {}))
        if filter is not None and filter.prefix != token_filter.prefix:
            raise CLIError(
                f"this page token continues a listing of prefix {shell_quote(token_filter.prefix)}, "
                f"not {shell_quote(filter.prefix)}",
                EXIT_USAGE,
                "bad_page_token",
            )
        flt = token_filter  # its time window is the first page's, whatever the clock says now
    if source in ("auto", "index"):
        try:
            page = _threads_from_index(saver, limit, state, flt)
        except Exception as exc:
            if client_code(exc) != "ValidationException":
                raise
            if state is not None:  # a cursor DynamoDB refuses: not one it gave us
                raise _bad_token() from None
            if source == "index":
                raise
            return _threads_from_scan(
                saver,
                limit,
                None,
                flt,
                note=f"index {schema.THREADS_INDEX_NAME!r} is missing: scanned the table",
            )
        if page["threads"] or source == "index" or state is not None:
            return page
        if flt.active and _index_has_heads(saver):
            return page  # the index answers; nothing matches the filter
        return _threads_from_scan(
            saver,
            limit,
            None,
            flt,
            note="no thread heads in the threads index yet: scanned the table's checkpoint items",
        )
    return _threads_from_scan(saver, limit, state, flt, note="scan requested")


def client_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _index_has_heads(saver: Any) -> bool:
    for shard in range(schema.THREADS_INDEX_SHARDS):
        resp = ddb_client(saver).query(
            TableName=saver.table_name,
            IndexName=schema.THREADS_INDEX_NAME,
            KeyConditionExpression="#ts = :ts",
            ExpressionAttributeNames={"#ts": ATTR.THREAD_SHARD},
            ExpressionAttributeValues={":ts": {"S": str(shard)}},
            ProjectionExpression="#ts",
            Limit=1,
        )
        if resp.get("Items"):
            return True
    return False


def _shard_query(
    saver: Any, shard: str, cursor: Any, limit: int, flt: ThreadFilter
) -> tuple[list[Any], bool]:
    """Up to ``limit`` matching heads of one shard, newest first, after ``cursor``; and whether it is exhausted.

    A prefix filter drops heads after DynamoDB read them, so a Query may
    return fewer than asked while more remain: keep reading until ``limit``
    matched or the shard ends (the page merge needs each shard's unread
    heads to be older than what it returned).
    """
    names = {"#ts": ATTR.THREAD_SHARD}
    values: dict[str, Any] = {":ts": {"S": shard}}
    key = "#ts = :ts"
    if flt.active_since_ms is not None or flt.idle_since_ms is not None:
        names["#ua"] = ATTR.UPDATED_AT
        lo, hi = flt.active_since_ms, flt.idle_since_ms
        if lo is not None and hi is not None:
            key += " AND #ua BETWEEN :lo AND :hi"
        elif lo is not None:
            key += " AND #ua >= :lo"
        else:
            key += " AND #ua <= :hi"
        if lo is not None:
            values[":lo"] = {"N": str(lo)}
        if hi is not None:
            values[":hi"] = {"N": str(hi)}
    kwargs: dict[str, Any] = {
        "TableName": saver.table_name,
        "IndexName": schema.THREADS_INDEX_NAME,
        "KeyConditionExpression": key,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
        "ScanIndexForward": False,
        "Limit": limit,
    }
    # A tenant's listing reads only its own heads: the index holds every
    # tenant's, and another tenant's (whatever it wrote in them) must not
    # shape this page.
    tenant = getattr(saver, "tenant_prefix", None)
    pre = (
        saver.partition_key(flt.prefix)
        if flt.prefix
        else (schema.tenant_partition_prefix(tenant) if tenant else None)
    )
    if pre is not None:
        names["#pk"] = ATTR.PK
        values[":pre"] = {"S": pre}
        kwargs["FilterExpression"] = "begins_with(#pk, :pre)"
        kwargs["Limit"] = max(limit, 200)  # heads dropped by the filter still count against Limit
    if cursor:
        kwargs["ExclusiveStartKey"] = cursor
    items: list[Any] = []
    while True:
        resp = ddb_client(saver).query(**kwargs)
        items.extend(resp.get("Items", []))
        last = resp.get("LastEvaluatedKey")
        if not last:
            return items, True
        if len(items) >= limit:
            return items, False
        kwargs["ExclusiveStartKey"] = last


def _iso_or_none(epoch_s: float) -> str | None:
    """``iso_time``, or ``None`` for a time no calendar holds (a forged head's)."""
    try:
        return iso_time(epoch_s)
    except (OverflowError, ValueError, OSError):
        return None


def _threads_from_index(
    saver: Any, limit: int, state: dict[str, Any] | None, flt: ThreadFilter | None = None
) -> dict[str, Any]:
    flt = flt or ThreadFilter()
    shards = [str(i) for i in range(schema.THREADS_INDEX_SHARDS)]
    cursors: dict[str, Any] = dict(state["s"]) if state else dict.fromkeys(shards)
    fetched: list[tuple[str, dict[str, Any]]] = []
    exhausted: dict[str, bool] = {}
    for shard in shards:
        cursor = cursors.get(shard)
        if cursor == "done":
            continue
        items, exhausted[shard] = _shard_query(saver, shard, cursor, limit, flt)
        fetched.extend((shard, it) for it in items)
    # Merge the shards newest first; each shard's cursor moves past what we show.
    # Read leniently: a head's time is whatever its thread's writer put
    # there, and one forged value must not break everyone's listing.
    fetched.sort(key=lambda p: _items.whole_number(p[1].get(ATTR.UPDATED_AT)) or 0, reverse=True)
    page = fetched[:limit]
    shown = {shard: 0 for shard in shards}
    for shard, it in page:
        shown[shard] += 1
        cursors[shard] = {k: it[k] for k in (ATTR.THREAD_SHARD, ATTR.UPDATED_AT, ATTR.PK, ATTR.SK) if k in it}
    for shard in shards:
        if cursors.get(shard) == "done":
            continue
        total = sum(1 for s, _ in fetched if s == shard)
        if exhausted.get(shard) and shown[shard] == total:
            cursors[shard] = "done"
    more = any(cursors.get(s) != "done" for s in shards)
    threads = []
    for _, it in page:
        thread_id = saver.thread_id_of(it[ATTR.PK]["S"])
        if thread_id is None:  # another tenant's head
            continue
        ua = _items.whole_number(it.get(ATTR.UPDATED_AT)) or 0
        ttl = _items.whole_number(it.get(schema.TTL_ATTRIBUTE))
        threads.append(
            {
                "thread_id": thread_id,
                "updated_at": _iso_or_none(ua / 1000),
                "expires_at": _iso_or_none(ttl) if ttl else None,
            }
        )
    return {
        "source": "index",
        "note": f"thread heads from the {schema.THREADS_INDEX_NAME!r} index",
        "threads": threads,
        "next_page_token": (
            encode_token({"v": 1, "src": "index", "s": cursors, "f": flt.to_token()}) if more else None
        ),
    }


def _threads_from_scan(
    saver: Any, limit: int, state: dict[str, Any] | None, flt: ThreadFilter | None = None, *, note: str
) -> dict[str, Any]:
    flt = flt or ThreadFilter()
    if flt.active_since_ms is not None or flt.idle_since_ms is not None:
        note += "; last activity is the newest checkpoint's time (no thread heads)"
    offset = int(state.get("o", 0)) if state else 0
    by_thread: dict[str, dict[str, Any]] = {}
    for it in scan(
        saver,
        ProjectionExpression="#pk, #sk, #k",
        ExpressionAttributeNames={"#pk": ATTR.PK, "#sk": ATTR.SK, "#k": ATTR.KEY},
        ConsistentRead=True,
    ):
        pk = it[ATTR.PK]["S"]
        if saver.thread_id_of(pk) is None:  # another tenant's thread, or the lifecycle state
            continue
        try:
            ns, kind, cid, _ = _items.parse_sk(it)
        except CorruptPayloadError:
            continue  # not an item this library writes in a thread: not a checkpoint to count
        if kind != schema.CHECKPOINT_ITEM:
            continue
        info = by_thread.setdefault(pk, {"checkpoints": 0, "namespaces": set(), "latest": ""})
        info["checkpoints"] += 1
        info["namespaces"].add(subgraph_path(ns))
        info["latest"] = max(info["latest"], cid)
    ordered = sorted(
        (
            (pk, info)
            for pk, info in by_thread.items()
            if flt.matches(saver.thread_id_of(pk) or "", uuid6_ms(info["latest"]))
        ),
        key=lambda kv: (checkpoint_time(kv[1]["latest"]) or "", kv[1]["latest"]),
        reverse=True,
    )
    page = ordered[offset : offset + limit]
    threads = [
        {
            "thread_id": saver.thread_id_of(pk),
            "updated_at": checkpoint_time(info["latest"]),
            "checkpoints": info["checkpoints"],
            "namespaces": len(info["namespaces"]),
            "latest_checkpoint_id": info["latest"],
        }
        for pk, info in page
    ]
    more = offset + limit < len(ordered)
    return {
        "source": "scan",
        "note": note,
        "threads": threads,
        "next_page_token": (
            encode_token({"v": 1, "src": "scan", "o": offset + limit, "f": flt.to_token()}) if more else None
        ),
    }


def _value_sizes(
    saver: Any, thread_id: str, items: Iterable[dict[str, Any]], s3_prefixes: Iterable[str]
) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, int]]:
    """Split raw items, and collect blob item sizes and S3 object sizes of a thread."""
    kept: list[dict[str, Any]] = []
    blobs: dict[str, int] = {}
    for it in items:
        kind = schema.parse_sk(it[ATTR.SK]["S"])[1]
        if kind == schema.BLOB_ITEM:
            blobs[it[ATTR.SK]["S"]] = item_size(it)
        else:
            kept.append(it)
    objects = {o["Key"]: int(o["Size"]) for prefix in s3_prefixes for o in s3_objects(saver, prefix)}
    return kept, blobs, objects


def checkpoint_sizes(
    saver: Any, thread_id: str, checkpoint_ns: str | None = ""
) -> dict[tuple[str, str], int]:
    """Stored bytes per checkpoint of a thread: ``{(ns, checkpoint_id): bytes}``.

    A checkpoint's size is its item, its writes items, and every payload it
    references (a value held by the checkpoint that introduced it, blob items,
    S3 objects); a payload shared by several checkpoints (an unchanged large
    channel) counts in each.
    """
    prefix = schema.ns_prefix(checkpoint_ns) if checkpoint_ns is not None else None
    items, blobs, objects = _value_sizes(
        saver,
        thread_id,
        thread_items(saver, thread_id, sk_prefix=prefix),
        saver.s3_thread_prefixes(thread_id),
    )
    sizes: dict[tuple[str, str], int] = {}
    holders: dict[tuple[str, str], Any] = {}
    for it in items:
        ns, kind, cid, _ = _items.parse_sk(it)
        if kind == schema.CHECKPOINT_ITEM:
            holders[(ns, cid)] = it
    for it in items:
        ns, kind, cid, _ = _items.parse_sk(it)
        if kind not in (schema.CHECKPOINT_ITEM, schema.WRITES_ITEM):
            continue
        total = item_size(it)
        refs: list[str] = []
        for attr in (ATTR.BODY, ATTR.METADATA):
            av = it.get(attr, {})
            if "M" in av and "s3" in av["M"]:
                refs.append(av["M"]["s3"]["S"])
        for name, av in it.items():
            if _items.is_write_attr(name):
                payload = av.get("L", [{}, {}])[1]
                if "M" in payload and "s3" in payload["M"]:
                    refs.append(payload["M"]["s3"]["S"])
        total += sum(objects.get(k, 0) for k in refs)
        for channel, av in it.get(ATTR.VALUES, {}).get("M", {}).items():
            if "M" not in av:
                continue
            version = av["M"]["v"]["S"]
            blob_key = schema.blob_sk(ns, channel, version)
            # A value held by the checkpoint that introduced it counts here too.
            holder = (
                holders.get((ns, av["M"].get("c", {}).get("S", ""))) if av["M"]["l"]["S"] == "c" else None
            )
            held = (holder or {}).get(ATTR.VALUES, {}).get("M", {}).get(channel, {}).get("B")
            if isinstance(held, bytes):
                total += len(held)
            elif blob_key in blobs:
                total += blobs[blob_key]
            else:
                total += objects.get(saver.value_s3_key(thread_id, ns, channel, version), 0)
        sizes[(ns, cid)] = sizes.get((ns, cid), 0) + total
    return sizes


def describe_history(
    saver: Any,
    thread_id: str,
    *,
    checkpoint_ns: str | None = "",
    limit: int | None = None,
    with_sizes: bool = True,
) -> list[dict[str, Any]]:
    """The checkpoints of a thread, newest first, as :func:`describe_checkpoint` rows.

    Args:
        saver: a ``DynamoDBSaver``.
        thread_id: the thread.
        checkpoint_ns: namespace (``""`` root, ``None`` all namespaces).
        limit: at most this many checkpoints.
        with_sizes: compute stored bytes (reads the thread's items and S3
            listing); without, rows have no ``bytes`` key.

    Example:
        >>> rows = describe_history(saver, "t-1", limit=5)  # doctest: +SKIP
        >>> rows[0]["next"]  # doctest: +SKIP
        [{'name': 'reviewer', 'id': '...', 'status': 'pending'}]
    """
    conf: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_ns is not None:
        conf["checkpoint_ns"] = checkpoint_ns
    tuples = list(saver.list({"configurable": conf}, limit=limit))
    by_id = {
        (t.config["configurable"].get("checkpoint_ns", ""), t.config["configurable"]["checkpoint_id"]): t
        for t in tuples
    }
    sizes = checkpoint_sizes(saver, thread_id, checkpoint_ns) if with_sizes and tuples else {}
    rows = []
    for t in tuples:
        ns = t.config["configurable"].get("checkpoint_ns", "")
        parent = None
        if t.parent_config:
            pid = t.parent_config["configurable"]["checkpoint_id"]
            parent = by_id.get((ns, pid))
            if parent is None:
                parent = saver.get_tuple(t.parent_config)
        rows.append(
            describe_checkpoint(
                t,
                parent,
                size=sizes.get((ns, t.config["configurable"]["checkpoint_id"])) if with_sizes else None,
                live=False,
                parent_missing_reason=(
                    missing_parent_reason(saver, t) if t.parent_config and parent is None else None
                ),
            )
        )
    return rows


def subgraph_path(checkpoint_ns: str) -> str:
    """A checkpoint namespace without LangGraph's task ids: the subgraph it belongs to.

    Every run of a subgraph gets its own namespace (``node:<task id>``, nested
    ones joined by ``|``); this is the part that names the graph, as
    LangGraph's ``recast_checkpoint_ns``. The root namespace is ``""``.

    Example:
        >>> subgraph_path("outer:1f0c|inner:9a2b"), subgraph_path("")
        ('outer|inner', '')
    """
    return NS_SEP.join(part.split(NS_END)[0] for part in checkpoint_ns.split(NS_SEP) if not part.isdigit())


def s3_kind(key: str, prefix: str = "") -> str:
    """Kind of an S3 object from its key: ``<prefix><thread>/_<ns>/{v|c}/...``.

    Thread and namespace are percent-encoded (no ``/`` inside), so the
    segments after the prefix are positional.
    """
    parts = (key[len(prefix) :] if key.startswith(prefix) else key).split("/")
    rest = parts[2:] if len(parts) > 2 and parts[1].startswith("_") else []
    if rest[:1] == ["v"]:
        return "value"
    if rest[:1] == ["c"] and len(rest) == 3 and rest[2] in ("body", "metadata"):
        return "checkpoint " + rest[2]
    if rest[:1] == ["c"] and len(rest) >= 4 and rest[2] == "w":
        return "write"
    return "other"


def item_kind(sk: str) -> str:
    _, kind, rest, _ = schema.parse_sk(sk)
    if kind == schema.CHECKPOINT_ITEM:
        return "checkpoint"
    if kind == schema.WRITES_ITEM:
        return "writes"
    if kind == schema.BLOB_ITEM:
        return "blob"
    if kind == schema.TOMBSTONE_ITEM:
        return "tombstone"
    if sk == schema.HEAD_SK:
        return "thread head"
    if sk == schema.LOCK_SK:
        return "lock"
    if sk == schema.IMPORT_SK:
        return "import marker"
    if rest.startswith("req" + schema.SEP):
        return "request"
    return "meta"


def collect_stats(
    saver: Any, thread_id: str | None = None, *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """What the store holds: items and bytes by kind, threads, checkpoints, S3 objects.

    Without ``thread_id`` this Scans the table and lists the bucket under
    the saver's key prefix (a tool for operators, not for request paths).

    ``namespaces`` counts the graphs whose checkpoints are stored: the root
    graph and each subgraph (:func:`subgraph_path`), once however many
    threads and runs used it; ``subgraphs`` names them, ``subgraph_runs``
    counts their runs (one checkpoint namespace each, per thread).

    Example:
        >>> collect_stats(saver)["dynamodb"]["by_kind"]["checkpoint"]["items"]  # doctest: +SKIP
        12

    ``progress`` (optional) is called with a short status text as items and
    objects are read (the CLI throttles it into a progress line).
    """
    if thread_id is None:
        items: Iterable[dict[str, Any]] = (
            it for it in scan(saver, ConsistentRead=True) if saver.thread_id_of(it[ATTR.PK]["S"]) is not None
        )
        s3_prefixes: tuple[str, ...] = (s3_root(saver),)
    else:
        items = thread_items(saver, thread_id)
        s3_prefixes = saver.s3_thread_prefixes(thread_id)
    by_kind: dict[str, dict[str, int]] = {}
    threads: set[str] = set()
    # Namespaces are counted as subgraphs (root included), whatever the number
    # of threads and of runs: each run of a subgraph has a namespace of its own
    # (its task id), which the per-thread run count reports instead.
    paths: set[str] = set()
    runs: set[tuple[str, str]] = set()
    total_items = total_bytes = checkpoints = 0
    for it in items:
        sk = it[ATTR.SK]["S"]
        kind = item_kind(sk)
        size = item_size(it)
        entry = by_kind.setdefault(kind, {"items": 0, "bytes": 0})
        entry["items"] += 1
        entry["bytes"] += size
        total_items += 1
        total_bytes += size
        if progress is not None:
            progress(f"{total_items:,} item(s) read")
        if kind == "checkpoint":
            checkpoints += 1
            threads.add(it[ATTR.PK]["S"])
            ns = _items.parse_sk(it)[0]
            paths.add(subgraph_path(ns))
            if ns:
                runs.add((it[ATTR.PK]["S"], ns))
    s3: dict[str, Any] = {
        "bucket": saver.bucket_name,
        "prefix": s3_prefixes[0],
        "objects": 0,
        "bytes": 0,
        "by_kind": {},
    }
    for obj in (o for prefix in s3_prefixes for o in s3_objects(saver, prefix)):
        if thread_id is None and not s3_in_scope(saver, obj["Key"]):
            continue  # another tenant's (an untenanted root lists every tenant's objects)
        kind = s3_kind(obj["Key"], saver.s3_key_prefix)
        e = s3["by_kind"].setdefault(kind, {"objects": 0, "bytes": 0})
        e["objects"] += 1
        e["bytes"] += int(obj["Size"])
        s3["objects"] += 1
        s3["bytes"] += int(obj["Size"])
        if progress is not None:
            progress(f"{total_items:,} item(s), {s3['objects']:,} object(s) read")
    return {
        "table": saver.table_name,
        "thread_id": thread_id,
        "threads": len(threads),
        "namespaces": len(paths),
        "subgraphs": sorted(p for p in paths if p),
        "subgraph_runs": len(runs),
        "checkpoints": checkpoints,
        "dynamodb": {"items": total_items, "bytes": total_bytes, "by_kind": dict(sorted(by_kind.items()))},
        "s3": s3,
    }
