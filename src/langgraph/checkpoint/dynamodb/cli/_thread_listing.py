"""Which threads the store holds: a thread's existence (require_thread) and pages of threads (list_threads: the threads index or a table scan)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._operations.heads import shard_count_of
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb.cli._base import EXIT_NOT_FOUND, EXIT_USAGE, CLIError, client_code
from langgraph.checkpoint.dynamodb.cli._page_tokens import bad_token_error, decode_token, encode_token
from langgraph.checkpoint.dynamodb.cli._render import shell_quote
from langgraph.checkpoint.dynamodb.cli._tasks import checkpoint_time, iso_time, subgraph_path, uuid6_ms
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools._inspection import ddb_client, scan, thread_items


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
      ``ATTR.UPDATED_AT``): one Query per shard per page, merged, over
      every shard the table's layout item records. A time
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
                raise bad_token_error() from None
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


def _index_shard_count(saver: Any) -> int:
    """Every shard a writer may have used: the layout item, read strongly consistent."""
    try:
        resp = ddb_client(saver).get_item(
            TableName=saver.table_name,
            Key={ATTR.PK: {"S": schema.LAYOUT_PK}, ATTR.SK: {"S": schema.THREADS_LAYOUT_SK}},
            ConsistentRead=True,
        )
    except Exception as exc:
        if client_code(exc) != "AccessDeniedException":
            raise
        return schema.THREADS_INDEX_MIN_SHARDS  # what writers without the grant use too
    return shard_count_of(resp.get("Item"))


def _index_has_heads(saver: Any) -> bool:
    for shard in range(_index_shard_count(saver)):
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
    # A continued listing keeps its first page's shards: a head that moved
    # to a newer shard since was refreshed after the listing began, and a
    # listing never shows what changed after its first page.
    count = len(state["s"]) if state else _index_shard_count(saver)
    shards = [str(i) for i in range(count)]
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
    fetched.sort(key=lambda p: shapes.whole_number(p[1].get(ATTR.UPDATED_AT)) or 0, reverse=True)
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
        ua = shapes.whole_number(it.get(ATTR.UPDATED_AT)) or 0
        ttl = shapes.whole_number(it.get(schema.TTL_ATTRIBUTE))
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
            ns, kind, cid, _ = shapes.parse_sk(it)
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
