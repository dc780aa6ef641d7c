"""Deterministic accounting of what a saver asks of DynamoDB and S3.

A :class:`Meter` hooks botocore's event system on the clients a saver uses
(``before-parameter-build``, ``before-send`` and ``after-call``; the same
hooks fire on aiobotocore clients, which await coroutine handlers). For
every API call it records:

* the request, by service and operation (``dynamodb:PutItem``), plus HTTP
  attempts (retries would show up as attempts > requests);
* DynamoDB item bytes and capacity units by AWS's sizing rules, computed
  here rather than taken from ``ReturnConsumedCapacity``: moto answers that
  with a constant (1.0 per write, 0.5 per read, whatever the size), so it
  cannot tell a 200-byte item from a 300 KB one;
* S3 request counts and PutObject/GetObject body sizes.

To price a write, DynamoDB needs the size of the item *before* the write
(PutItem and UpdateItem bill the larger of old and new, DeleteItem the old
item) and, for reads, the full size of every item read (projections do not
reduce the bill). The meter therefore keeps a :class:`Mirror`: a copy of
every item written through metered clients, updated from the request
parameters once the call succeeded. ``UpdateItem`` expressions are applied
for the subset the savers use (``SET a = :v``, ``SET a = if_not_exists(a,
:v)``, ``REMOVE a``); anything else is read back through an unmetered
"auditor" client and counted in ``audits``. ``Mirror.verify`` compares the
mirror with a full scan of the table, so the accounting checks itself.

AWS rules applied (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/):
item size = attribute names + values (S: UTF-8 bytes, B: raw bytes, N:
1 byte per 2 significant digits + 1, BOOL/NULL: 1, L/M: 3 + 1 per element
+ elements, M keys counted); write units = ceil(size / 1 KB) per item,
min 1, doubled in transactions; read units = ceil(size / 4 KB) per item
(GetItem, BatchGetItem) or per request over the summed size (Query,
Scan), min 1, halved for eventually consistent reads; a failed
conditional write bills the existing item's size (min 1); a GSI write bills
ceil(projected entry size / 1 KB) per index entry put or deleted (two when
the index key changes); storage = item size + 100 bytes per item and per
index entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

__all__ = [
    "ITEM_OVERHEAD",
    "BudgetExceeded",
    "LatencyModel",
    "Meter",
    "Mirror",
    "Snapshot",
    "item_size",
    "read_units",
    "round_trips",
    "write_units",
]

AttributeValue = dict[str, Any]
Item = dict[str, AttributeValue]
KeyValue = tuple[str, Any]

#: Bytes DynamoDB adds per item (and per GSI entry) when billing storage.
ITEM_OVERHEAD = 100


# ------------------------------------------------------------------ sizes


def _number_size(text: str) -> int:
    digits = text.lstrip("+-").lower().split("e")[0].replace(".", "").lstrip("0").rstrip("0")
    return max(1, math.ceil(len(digits) / 2)) + 1


def av_size(av: AttributeValue) -> int:
    """Size of one attribute value by DynamoDB's rules (names not included)."""
    ((kind, value),) = av.items()
    if kind == "S":
        return len(value.encode())
    if kind == "B":
        return len(value) if not isinstance(value, str) else len(value.encode())
    if kind == "N":
        return _number_size(str(value))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(v.encode()) for v in value)
    if kind == "NS":
        return sum(_number_size(str(v)) for v in value)
    if kind == "BS":
        return sum(len(v) for v in value)
    if kind == "L":
        return 3 + sum(1 + av_size(v) for v in value)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + av_size(v) for k, v in value.items())
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: Mapping[str, AttributeValue] | None) -> int:
    """Size of an item: attribute names plus values (0 for ``None``)."""
    if not item:
        return 0
    return sum(len(name.encode()) + av_size(av) for name, av in item.items())


def write_units(size: int) -> int:
    """Write request units for one item of ``size`` bytes (min 1)."""
    return max(1, math.ceil(size / 1024))


def read_units(size: int, consistent: bool) -> float:
    """Read request units for ``size`` bytes read in one unit of account (min 1)."""
    blocks = max(1, math.ceil(size / 4096))
    return blocks * (1.0 if consistent else 0.5)


def _scalar(av: AttributeValue) -> KeyValue:
    ((kind, value),) = av.items()
    if kind == "N":
        return kind, Decimal(str(value))
    if kind == "B" and isinstance(value, (bytearray, memoryview)):
        return kind, bytes(value)
    return kind, value


# ----------------------------------------------------------------- mirror


@dataclass(frozen=True)
class IndexSchema:
    """A global secondary index: keys and projection."""

    name: str
    hash_key: str
    range_key: str | None
    projection: str  # KEYS_ONLY | INCLUDE | ALL
    non_key: tuple[str, ...] = ()


@dataclass
class TableState:
    """Key schema, indexes and the mirrored items of one table."""

    hash_key: str
    range_key: str | None
    indexes: list[IndexSchema]
    items: dict[KeyValue, dict[KeyValue | None, Item]] = field(default_factory=dict)


class Mirror:
    """What the metered clients stored: DynamoDB items and S3 object sizes."""

    def __init__(self) -> None:
        self.tables: dict[str, TableState] = {}
        self.objects: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------ schema

    def add_table(self, description: Mapping[str, Any]) -> None:
        """Register a table from a ``DescribeTable`` ``Table`` description."""
        keys = {k["KeyType"]: k["AttributeName"] for k in description["KeySchema"]}
        indexes = []
        for gsi in description.get("GlobalSecondaryIndexes", []) or []:
            ikeys = {k["KeyType"]: k["AttributeName"] for k in gsi["KeySchema"]}
            proj = gsi.get("Projection", {})
            indexes.append(
                IndexSchema(
                    name=gsi["IndexName"],
                    hash_key=ikeys["HASH"],
                    range_key=ikeys.get("RANGE"),
                    projection=proj.get("ProjectionType", "ALL"),
                    non_key=tuple(proj.get("NonKeyAttributes", [])),
                )
            )
        self.tables[description["TableName"]] = TableState(keys["HASH"], keys.get("RANGE"), indexes)

    # ------------------------------------------------------------- items

    def _key(self, table: str, item: Mapping[str, AttributeValue]) -> tuple[KeyValue, KeyValue | None]:
        t = self.tables[table]
        sk = _scalar(item[t.range_key]) if t.range_key else None
        return _scalar(item[t.hash_key]), sk

    def get(self, table: str, key: Mapping[str, AttributeValue]) -> Item | None:
        """The mirrored item with this key, or ``None``."""
        if table not in self.tables:
            return None
        pk, sk = self._key(table, key)
        return self.tables[table].items.get(pk, {}).get(sk)

    def put(self, table: str, item: Item) -> None:
        # A copy: the caller may go on changing the dicts it sent (a saver's staging
        # map is shared with its item), and another thread may be sizing this one.
        pk, sk = self._key(table, item)
        self.tables[table].items.setdefault(pk, {})[sk] = copy.deepcopy(item)

    def delete(self, table: str, key: Mapping[str, AttributeValue]) -> None:
        pk, sk = self._key(table, key)
        part = self.tables[table].items.get(pk)
        if part is not None:
            part.pop(sk, None)
            if not part:
                del self.tables[table].items[pk]

    def index_entry(self, table: str, index: IndexSchema, item: Item | None) -> Item | None:
        """The projected GSI entry of ``item`` (``None`` if the item is not indexed)."""
        if item is None or index.hash_key not in item:
            return None
        if index.range_key and index.range_key not in item:
            return None
        if index.projection == "ALL":
            return dict(item)
        t = self.tables[table]
        names = {t.hash_key, index.hash_key}
        for name in (t.range_key, index.range_key):
            if name:
                names.add(name)
        if index.projection == "INCLUDE":
            names.update(index.non_key)
        return {k: v for k, v in item.items() if k in names}

    def query_read_set(
        self, table: str, params: Mapping[str, Any], parsed: Mapping[str, Any]
    ) -> list[Item] | None:
        """The items a successful ``Query`` read (before any filter), or ``None`` if unknown.

        Re-evaluates the key condition on the mirror, starting after
        ``ExclusiveStartKey`` in the requested direction, and takes as many
        items as the response's ``ScannedCount``.
        """
        if table not in self.tables or "IndexName" in params:
            return None
        t = self.tables[table]
        cond = _parse_key_condition(
            params.get("KeyConditionExpression", ""),
            params.get("ExpressionAttributeNames", {}) or {},
            params.get("ExpressionAttributeValues", {}) or {},
        )
        if cond is None or cond[0] != t.hash_key:
            return None
        _, pk_value, sk_pred = cond
        part = t.items.get(pk_value, {})
        forward = params.get("ScanIndexForward", True)
        ranged: list[KeyValue] = [k for k in part if k is not None]
        ranged.sort(key=lambda kv: kv[1], reverse=not forward)
        keys: list[KeyValue | None] = [None, *ranged] if None in part else list(ranged)
        esk = params.get("ExclusiveStartKey")
        start = _scalar(esk[t.range_key]) if esk and t.range_key else None
        out: list[Item] = []
        for k in keys:
            if k is not None and sk_pred is not None and not sk_pred(k):
                continue
            if start is not None and k is not None and (k[1] <= start[1] if forward else k[1] >= start[1]):
                continue
            out.append(part[k])
        scanned = parsed.get("ScannedCount", parsed.get("Count"))
        if scanned is None:
            return None
        return out[: int(scanned)]

    # ----------------------------------------------------------- storage

    def storage(self) -> dict[str, int]:
        """Billable storage now: table items, GSI entries and S3 objects."""
        items = table_bytes = gsi_entries = gsi_bytes = 0
        for name, t in self.tables.items():
            for part in t.items.values():
                for item in part.values():
                    items += 1
                    table_bytes += item_size(item) + ITEM_OVERHEAD
                    for index in t.indexes:
                        entry = self.index_entry(name, index, item)
                        if entry is not None:
                            gsi_entries += 1
                            gsi_bytes += item_size(entry) + ITEM_OVERHEAD
        return {
            "ddb_items": items,
            "ddb_bytes": table_bytes,
            "gsi_entries": gsi_entries,
            "gsi_bytes": gsi_bytes,
            "s3_objects": len(self.objects),
            "s3_bytes": sum(self.objects.values()),
        }

    def verify(self, dynamodb_client: Any, s3_client: Any = None, buckets: Iterable[str] = ()) -> list[str]:
        """Compare the mirror with a full scan (and listing); return the differences.

        ``dynamodb_client``/``s3_client`` must be plain (unmetered) boto3 clients.
        """
        problems: list[str] = []
        for name, t in self.tables.items():
            actual: dict[tuple[KeyValue, KeyValue | None], int] = {}
            kwargs: dict[str, Any] = {"TableName": name, "ConsistentRead": True}
            while True:
                resp = dynamodb_client.scan(**kwargs)
                for it in resp.get("Items", []):
                    actual[self._key(name, it)] = item_size(it)
                if "LastEvaluatedKey" not in resp:
                    break
                kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
            mirrored = {(pk, sk): item_size(it) for pk, part in t.items.items() for sk, it in part.items()}
            for key in set(actual) | set(mirrored):
                if actual.get(key) != mirrored.get(key):
                    problems.append(
                        f"{name} {key}: stored {actual.get(key)} bytes, mirror {mirrored.get(key)}"
                    )
        if s3_client is not None:
            for bucket in buckets:
                stored: dict[str, int] = {}
                kw: dict[str, Any] = {"Bucket": bucket}
                while True:
                    resp = s3_client.list_objects_v2(**kw)
                    for obj in resp.get("Contents", []):
                        stored[obj["Key"]] = int(obj["Size"])
                    if not resp.get("IsTruncated"):
                        break
                    kw["ContinuationToken"] = resp["NextContinuationToken"]
                mine = {k: v for (b, k), v in self.objects.items() if b == bucket}
                for obj_key in set(stored) | set(mine):
                    if stored.get(obj_key) != mine.get(obj_key):
                        problems.append(
                            f"s3://{bucket}/{obj_key}: stored {stored.get(obj_key)}, mirror {mine.get(obj_key)}"
                        )
        return problems


_BETWEEN = re.compile(r"([^\s()]+)\s+BETWEEN\s+(:\w+)\s+AND\s+(:\w+)", re.IGNORECASE)
_BEGINS = re.compile(r"begins_with\s*\(\s*([^\s,()]+)\s*,\s*(:\w+)\s*\)", re.IGNORECASE)
_COMPARE = re.compile(r"^\(?\s*([^\s()<>=]+)\s*(<=|>=|=|<|>)\s*(:\w+)\s*\)?$")


def _between(lo: Any, hi: Any) -> Callable[[KeyValue], bool]:
    def pred(k: KeyValue) -> bool:
        return bool(lo <= k[1] <= hi)

    return pred


def _compare(op: str, v: Any) -> Callable[[KeyValue], bool]:
    """A sort-key predicate: ``=``, ``<``, ``<=``, ``>``, ``>=`` or ``begins_with``."""

    def pred(k: KeyValue) -> bool:
        x = k[1]
        if op == "begins_with":
            return bool(x[: len(v)] == v)
        if op == "=":
            return bool(x == v)
        if op == "<":
            return bool(x < v)
        if op == "<=":
            return bool(x <= v)
        if op == ">":
            return bool(x > v)
        return bool(x >= v)

    return pred


def _parse_key_condition(
    expr: str, names: Mapping[str, str], values: Mapping[str, AttributeValue]
) -> tuple[str, KeyValue, Callable[[KeyValue], bool] | None] | None:
    """Parse ``hash = :v [AND <range condition>]`` into ``(hash_name, value, predicate)``."""

    def name(token: str) -> str:
        return names.get(token, token)

    preds: list[tuple[str, Callable[[KeyValue], bool]]] = []
    m = _BETWEEN.search(expr)
    if m:
        lo, hi = _scalar(values[m.group(2)])[1], _scalar(values[m.group(3)])[1]
        preds.append((name(m.group(1)), _between(lo, hi)))
        expr = expr[: m.start()] + expr[m.end() :]
    m = _BEGINS.search(expr)
    if m:
        prefix = _scalar(values[m.group(2)])[1]
        preds.append((name(m.group(1)), _compare("begins_with", prefix)))
        expr = expr[: m.start()] + expr[m.end() :]
    hash_part: tuple[str, KeyValue] | None = None
    for clause in re.split(r"\bAND\b", expr, flags=re.IGNORECASE):
        clause = clause.strip()
        if not clause:
            continue
        c = _COMPARE.match(clause)
        if c is None:
            return None
        attr, op, ref = name(c.group(1)), c.group(2), c.group(3)
        value = _scalar(values[ref])
        if op == "=" and hash_part is None:
            hash_part = (attr, value)
            continue
        preds.append((attr, _compare(op, value[1])))
    if hash_part is None or len(preds) > 1:
        return None
    return hash_part[0], hash_part[1], preds[0][1] if preds else None


# ------------------------------------------------------- update expressions


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


_SECTION = re.compile(r"\b(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)
_IF_NOT_EXISTS = re.compile(r"^if_not_exists\s*\(\s*([#\w]+)\s*,\s*(:\w+)\s*\)$", re.IGNORECASE)
_PLAIN_PATH = re.compile(r"^#?\w+$")


def apply_update(old: Item | None, key: Item, params: Mapping[str, Any]) -> Item | None:
    """The item after an ``UpdateItem``, or ``None`` if the expression is outside the supported subset."""
    expr = params.get("UpdateExpression")
    if not expr:
        return None
    names = params.get("ExpressionAttributeNames", {}) or {}
    values = params.get("ExpressionAttributeValues", {}) or {}
    base: Item = dict(old) if old else dict(key)
    new = dict(base)
    pieces = _SECTION.split(expr)
    # pieces: ['', 'SET', '...', 'REMOVE', '...']
    if pieces[0].strip():
        return None
    for i in range(1, len(pieces), 2):
        action, body = pieces[i].upper(), pieces[i + 1]
        if action not in ("SET", "REMOVE"):
            return None
        for clause in _split_top(body):
            if action == "REMOVE":
                if not _PLAIN_PATH.match(clause):
                    return None
                new.pop(names.get(clause, clause), None)
                continue
            lhs, _, rhs = clause.partition("=")
            lhs, rhs = lhs.strip(), rhs.strip()
            if not _PLAIN_PATH.match(lhs):
                return None
            target = names.get(lhs, lhs)
            if rhs.startswith(":") and rhs in values:
                new[target] = values[rhs]
                continue
            m = _IF_NOT_EXISTS.match(rhs)
            if m:
                src = names.get(m.group(1), m.group(1))
                new[target] = base[src] if src in base else values[m.group(2)]
                continue
            return None
    return new


# ------------------------------------------------------------------ meter


class BudgetExceeded(RuntimeError):
    """Raised by a metered client's request hook once the meter's time budget is spent."""


@dataclass
class Snapshot:
    """Totals at one instant; subtract two snapshots for the cost of what happened in between."""

    requests: Counter[str] = field(default_factory=Counter)
    attempts: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    ddb_write_bytes: int = 0
    ddb_read_bytes: int = 0
    wcu: float = 0.0
    gsi_wcu: float = 0.0
    rcu: float = 0.0
    s3_put_bytes: int = 0
    s3_get_bytes: int = 0
    audits: int = 0
    approximate: Counter[str] = field(default_factory=Counter)
    ddb_items_read: int = 0

    def copy(self) -> Snapshot:
        return Snapshot(
            Counter(self.requests),
            self.attempts,
            Counter(self.errors),
            self.ddb_write_bytes,
            self.ddb_read_bytes,
            self.wcu,
            self.gsi_wcu,
            self.rcu,
            self.s3_put_bytes,
            self.s3_get_bytes,
            self.audits,
            Counter(self.approximate),
            self.ddb_items_read,
        )

    def __sub__(self, other: Snapshot) -> Snapshot:
        return Snapshot(
            self.requests - other.requests,
            self.attempts - other.attempts,
            self.errors - other.errors,
            self.ddb_write_bytes - other.ddb_write_bytes,
            self.ddb_read_bytes - other.ddb_read_bytes,
            self.wcu - other.wcu,
            self.gsi_wcu - other.gsi_wcu,
            self.rcu - other.rcu,
            self.s3_put_bytes - other.s3_put_bytes,
            self.s3_get_bytes - other.s3_get_bytes,
            self.audits - other.audits,
            self.approximate - other.approximate,
            self.ddb_items_read - other.ddb_items_read,
        )

    def __add__(self, other: Snapshot) -> Snapshot:
        return Snapshot(
            self.requests + other.requests,
            self.attempts + other.attempts,
            self.errors + other.errors,
            self.ddb_write_bytes + other.ddb_write_bytes,
            self.ddb_read_bytes + other.ddb_read_bytes,
            self.wcu + other.wcu,
            self.gsi_wcu + other.gsi_wcu,
            self.rcu + other.rcu,
            self.s3_put_bytes + other.s3_put_bytes,
            self.s3_get_bytes + other.s3_get_bytes,
            self.audits + other.audits,
            self.approximate + other.approximate,
            self.ddb_items_read + other.ddb_items_read,
        )

    def count(self, service: str) -> int:
        """Requests to one service (``"dynamodb"`` or ``"s3"``)."""
        return sum(n for op, n in self.requests.items() if op.startswith(service + ":"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "requests": dict(sorted(self.requests.items())),
            "ddb_requests": self.count("dynamodb"),
            "s3_requests": self.count("s3"),
            "attempts": self.attempts,
            "errors": dict(self.errors),
            "ddb_write_bytes": self.ddb_write_bytes,
            "ddb_read_bytes": self.ddb_read_bytes,
            "ddb_items_read": self.ddb_items_read,
            "wcu": self.wcu,
            "gsi_wcu": self.gsi_wcu,
            "rcu": self.rcu,
            "s3_put_bytes": self.s3_put_bytes,
            "s3_get_bytes": self.s3_get_bytes,
            "audits": self.audits,
            "approximate": dict(self.approximate),
        }


@dataclass(frozen=True)
class LatencyModel:
    """A fixed delay injected before every HTTP attempt, per service (seconds)."""

    dynamodb: float = 0.008
    s3: float = 0.025

    def delay(self, service: str) -> float:
        return self.s3 if service == "s3" else self.dynamodb


class _BodySize(int):
    """A request body, replaced by its size when the call is recorded."""


def _body_size(body: Any) -> int:
    if body is None:
        return 0
    if isinstance(body, _BodySize):
        return int(body)
    if isinstance(body, (bytes, bytearray, memoryview)):
        return len(body)
    if isinstance(body, str):
        return len(body.encode())
    pos = body.tell()
    body.seek(0, 2)
    end = int(body.tell())
    body.seek(pos)
    return end - pos


class Meter:
    """Counts requests, bytes and capacity units on the clients it is attached to.

    Args:
        latency: if given, every HTTP attempt first waits this long
            (``time.sleep`` on boto3 clients, ``asyncio.sleep`` on aiobotocore
            clients, whose event emitter awaits coroutine handlers).
        auditor: ``(table, key) -> item | None``, a consistent read through an
            unmetered client, used for ``UpdateItem`` expressions the mirror
            cannot apply itself.
    """

    def __init__(
        self,
        latency: LatencyModel | None = None,
        auditor: Callable[[str, Item], Item | None] | None = None,
    ) -> None:
        self.latency = latency
        self.auditor = auditor
        self.mirror = Mirror()
        self._totals = Snapshot()
        self._lock = threading.Lock()
        self._attached: list[Any] = []
        self._deadline: float | None = None
        self._latency_paused = False
        self._trace: list[tuple[float, float, str]] | None = None

    # ----------------------------------------------------------- public

    def attach(self, client: Any) -> None:
        """Register the hooks on a boto3 or aiobotocore client (idempotent)."""
        service = client.meta.service_model.service_id.hyphenize()
        events = client.meta.events
        uid = f"bench-meter-{id(self)}-{service}"
        events.register(f"before-parameter-build.{service}", self._before_params, unique_id=uid + "-params")
        events.register(f"after-call.{service}", self._after_call, unique_id=uid + "-after")
        is_async = inspect.iscoroutinefunction(type(client)._make_api_call)
        events.register(
            f"before-send.{service}",
            self._before_send_async if is_async else self._before_send_sync,
            unique_id=uid + "-send",
        )
        self._attached.append(client)

    def snapshot(self) -> Snapshot:
        """A copy of the totals so far."""
        with self._lock:
            return self._totals.copy()

    def reset(self) -> None:
        """Zero the counters (the mirror, i.e. what is stored, is kept)."""
        with self._lock:
            self._totals = Snapshot()

    @contextlib.contextmanager
    def latency_paused(self) -> Iterator[None]:
        """Within this block no latency is injected (for unmeasured set-up work)."""
        self._latency_paused = True
        try:
            yield
        finally:
            self._latency_paused = False

    @contextlib.contextmanager
    def trace(self) -> Iterator[list[tuple[float, float, str]]]:
        """Record ``(start, end, "service:Operation")`` of every call made within the block."""
        out: list[tuple[float, float, str]] = []
        self._trace = out
        try:
            yield out
        finally:
            self._trace = None

    def set_budget(self, seconds: float | None) -> None:
        """From now on, refuse requests (raise :class:`BudgetExceeded`) after ``seconds``."""
        self._deadline = None if seconds is None else time.perf_counter() + seconds

    def deadline_passed(self) -> bool:
        """Whether a budget is set and spent."""
        return self._deadline is not None and time.perf_counter() > self._deadline

    def storage(self) -> dict[str, int]:
        """Billable storage of everything written through metered clients."""
        with self._lock:
            return self.mirror.storage()

    # ------------------------------------------------------------ hooks

    def _before_params(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if self.deadline_passed():
            raise BudgetExceeded(f"time budget spent before {model.name}")
        snapshot = dict(params)
        if "Body" in snapshot:  # measure now: botocore may wrap or consume it later
            snapshot["Body"] = _BodySize(_body_size(snapshot["Body"]))
        context["_bench"] = (model.name, snapshot)
        context["_bench_t0"] = time.perf_counter()

    def _before_send_sync(self, request: Any, event_name: str, **_: Any) -> None:
        service = event_name.split(".")[1]
        with self._lock:
            self._totals.attempts += 1
        if self.latency is not None and not self._latency_paused:
            time.sleep(self.latency.delay(service))

    async def _before_send_async(self, request: Any, event_name: str, **_: Any) -> None:
        service = event_name.split(".")[1]
        with self._lock:
            self._totals.attempts += 1
        if self.latency is not None and not self._latency_paused:
            await asyncio.sleep(self.latency.delay(service))

    def _after_call(
        self,
        http_response: Any,
        parsed: dict[str, Any],
        model: Any,
        context: dict[str, Any],
        event_name: str,
        **_: Any,
    ) -> None:
        service = event_name.split(".")[1]
        op, params = context.get("_bench", (model.name, {}))
        ok = http_response is not None and http_response.status_code < 300
        code = "" if ok else str((parsed or {}).get("Error", {}).get("Code", "error"))
        audit_needed: tuple[str, Item, Item | None] | None = None
        trace = self._trace
        if trace is not None:
            trace.append(
                (context.get("_bench_t0", time.perf_counter()), time.perf_counter(), f"{service}:{op}")
            )
        with self._lock:
            t = self._totals
            t.requests[f"{service}:{op}"] += 1
            if not ok:
                t.errors[f"{service}:{op}:{code}"] += 1
            if service == "dynamodb":
                audit_needed = self._account_dynamodb(op, params, parsed or {}, ok, code)
            elif service == "s3":
                self._account_s3(op, params, parsed or {}, ok)
        if audit_needed is not None:
            table, key, old = audit_needed
            new = self.auditor(table, key) if self.auditor is not None else None
            with self._lock:
                if new is None:  # no auditor: keep the old item, flag the estimate
                    self._totals.approximate["UpdateItem:unsupported-expression"] += 1
                    new = old or key
                else:
                    self._totals.audits += 1
                self._apply_write(table, key, old, new, factor=1)

    # ------------------------------------------------------ accounting

    def _apply_write(self, table: str, key: Item, old: Item | None, new: Item | None, factor: int) -> None:
        """Bill and mirror one item write (``new is None`` = delete). Lock held."""
        t = self._totals
        billed = max(item_size(old), item_size(new))
        t.wcu += factor * write_units(billed)
        if new is not None:
            t.ddb_write_bytes += billed
        if table in self.mirror.tables:
            for index in self.mirror.tables[table].indexes:
                o = self.mirror.index_entry(table, index, old)
                n = self.mirror.index_entry(table, index, new)
                if o == n:
                    continue
                same_key = (
                    o is not None
                    and n is not None
                    and o.get(index.hash_key) == n.get(index.hash_key)
                    and (index.range_key is None or o.get(index.range_key) == n.get(index.range_key))
                )
                if same_key:
                    t.gsi_wcu += write_units(item_size(n))
                else:
                    if o is not None:
                        t.gsi_wcu += write_units(item_size(o))
                    if n is not None:
                        t.gsi_wcu += write_units(item_size(n))
            if new is None:
                self.mirror.delete(table, key)
            else:
                self.mirror.put(table, new)

    def _key_of(self, table: str, item: Item) -> Item:
        st = self.mirror.tables.get(table)
        if st is None:
            return item
        names = [st.hash_key] + ([st.range_key] if st.range_key else [])
        return {k: item[k] for k in names}

    def _account_dynamodb(
        self, op: str, params: dict[str, Any], parsed: dict[str, Any], ok: bool, code: str
    ) -> tuple[str, Item, Item | None] | None:
        t = self._totals
        table = params.get("TableName", "")
        known = table in self.mirror.tables
        if op == "PutItem":
            item = params["Item"]
            old = self.mirror.get(table, item) if known else None
            if ok:
                self._apply_write(table, self._key_of(table, item), old, item, factor=1)
            elif code == "ConditionalCheckFailedException":
                t.wcu += write_units(item_size(old))
        elif op == "UpdateItem":
            key = params["Key"]
            old = self.mirror.get(table, key) if known else None
            if ok:
                new = apply_update(old, key, params)
                if new is None:
                    return table, key, old
                self._apply_write(table, key, old, new, factor=1)
            elif code == "ConditionalCheckFailedException":
                t.wcu += write_units(item_size(old))
        elif op == "DeleteItem":
            key = params["Key"]
            old = self.mirror.get(table, key) if known else None
            if ok:
                self._apply_write(table, key, old, None, factor=1)
            elif code == "ConditionalCheckFailedException":
                t.wcu += write_units(item_size(old))
        elif op == "BatchWriteItem" and ok:
            for tname, reqs in params.get("RequestItems", {}).items():
                unprocessed = parsed.get("UnprocessedItems", {}).get(tname, [])
                for req in reqs:
                    if req in unprocessed:
                        continue
                    if "PutRequest" in req:
                        item = req["PutRequest"]["Item"]
                        old = self.mirror.get(tname, item)
                        self._apply_write(tname, self._key_of(tname, item), old, item, factor=1)
                    else:
                        key = req["DeleteRequest"]["Key"]
                        self._apply_write(tname, key, self.mirror.get(tname, key), None, factor=1)
        elif op == "TransactWriteItems" and ok:
            for entry in params.get("TransactItems", []):
                ((kind, spec),) = entry.items()
                tname = spec["TableName"]
                if kind == "Put":
                    item = spec["Item"]
                    self._apply_write(
                        tname, self._key_of(tname, item), self.mirror.get(tname, item), item, factor=2
                    )
                elif kind == "Delete":
                    key = spec["Key"]
                    self._apply_write(tname, key, self.mirror.get(tname, key), None, factor=2)
                elif kind == "Update":
                    key = spec["Key"]
                    old = self.mirror.get(tname, key)
                    new = apply_update(old, key, spec)
                    if new is None:
                        t.approximate["TransactWriteItems:unsupported-update"] += 1
                        new = old
                    self._apply_write(tname, key, old, new, factor=2)
                else:  # ConditionCheck
                    t.wcu += 2 * write_units(item_size(self.mirror.get(tname, spec["Key"])))
        elif op == "GetItem" and ok:
            size = item_size(self.mirror.get(table, params["Key"]) if known else parsed.get("Item"))
            t.rcu += read_units(size, bool(params.get("ConsistentRead")))
            t.ddb_read_bytes += size
            t.ddb_items_read += 1 if size else 0
        elif op == "BatchGetItem" and ok:
            for tname, spec in params.get("RequestItems", {}).items():
                unprocessed = parsed.get("UnprocessedKeys", {}).get(tname, {}).get("Keys", [])
                for key in spec.get("Keys", []):
                    if key in unprocessed:
                        continue
                    item = self.mirror.get(tname, key)
                    if item is not None:
                        size = item_size(item)
                        t.rcu += read_units(size, bool(spec.get("ConsistentRead")))
                        t.ddb_read_bytes += size
                        t.ddb_items_read += 1
        elif op == "TransactGetItems" and ok:
            for entry in params.get("TransactItems", []):
                spec = entry["Get"]
                size = item_size(self.mirror.get(spec["TableName"], spec["Key"]))
                t.rcu += 2 * read_units(size, True)
                t.ddb_read_bytes += size
        elif op in ("Query", "Scan") and ok:
            read = self.mirror.query_read_set(table, params, parsed) if op == "Query" and known else None
            if read is None:
                t.approximate[f"{op}:returned-items-only"] += 1
                read = parsed.get("Items", [])
            size = sum(item_size(it) for it in read)
            consistent = bool(params.get("ConsistentRead")) and "IndexName" not in params
            t.rcu += read_units(size, consistent)
            t.ddb_read_bytes += size
            t.ddb_items_read += len(read)
        return None

    def _account_s3(self, op: str, params: dict[str, Any], parsed: dict[str, Any], ok: bool) -> None:
        t = self._totals
        objects = self.mirror.objects
        bucket = params.get("Bucket", "")
        if not ok:
            return
        if op == "PutObject":
            size = _body_size(params.get("Body"))
            t.s3_put_bytes += size
            objects[(bucket, params["Key"])] = size
        elif op == "GetObject":
            t.s3_get_bytes += int(parsed.get("ContentLength", 0) or 0)
        elif op == "DeleteObject":
            objects.pop((bucket, params["Key"]), None)
        elif op == "DeleteObjects":
            failed = {e.get("Key") for e in parsed.get("Errors", [])}
            for obj in params.get("Delete", {}).get("Objects", []):
                if obj["Key"] not in failed:
                    objects.pop((bucket, obj["Key"]), None)
        elif op == "CopyObject":
            src = params.get("CopySource")
            if src is None:
                return
            if isinstance(src, str):
                sb, _, sk = src.lstrip("/").partition("/")
            else:
                sb, sk = src["Bucket"], src["Key"]
            if (sb, sk) in objects:
                objects[(bucket, params["Key"])] = objects[(sb, sk)]


#: S3 request pricing tiers: which operations bill as "PUT, COPY, POST, LIST".
S3_PUT_TIER = frozenset(
    {
        "PutObject",
        "CopyObject",
        "ListObjectsV2",
        "ListObjects",
        "ListBuckets",
        "CreateMultipartUpload",
        "UploadPart",
        "CompleteMultipartUpload",
        "CreateBucket",
        "PutBucketLifecycleConfiguration",
    }
)
#: S3 operations that are free (deletes).
S3_FREE = frozenset({"DeleteObject", "DeleteObjects", "DeleteBucket"})


def round_trips(intervals: Iterable[tuple[float, float, str]]) -> int:
    """Sequential round trips in a trace: groups of calls whose time intervals overlap.

    Calls issued in parallel overlap (each lasts at least the injected
    latency), so they count once; a call that starts after the previous one
    ended counts again.
    """
    count = 0
    end = -math.inf
    for start, stop, _ in sorted(intervals):
        if start >= end:
            count += 1
            end = stop
        else:
            end = max(end, stop)
    return count
