"""A throughput layer for the tests' moto server: capacity counted, and throttled, as AWS does.

moto counts no capacity and throttles nothing. This WSGI middleware runs
*inside* the server's lock (tests/support/moto_serial.py), in front of the
strict AWS-rules layer, so it sees moto's backend consistently: the item a
write replaces, the item a read returns, the index entries a write moves.
Each rule is DynamoDB's or S3's documented one:

- **Item size** is ``strict_aws.item_size`` ("DynamoDB item sizes and formats",
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
- **Reads** ("DynamoDB read and write operations", .../developerguide/read-write-operations.html):
  an item's size rounded up to the next 4 KB is one read unit, half for an
  eventually consistent read, two for a transactional one (``TransactGetItems``).
  ``BatchGetItem`` counts each item as its own ``GetItem``. ``Query`` and ``Scan``
  count the *summed* size of the items read, rounded up once; a filter or a
  projection does not lower it ("a Query consumes the same amount of read
  capacity, regardless of whether a filter expression is present",
  .../developerguide/Query.FilterExpression.html). The items read are found
  by the same request sent again without filter or projection.
- **Writes** (same page): the larger of the item's size before and after,
  rounded up to the next 1 KB, at least one unit; twice that in a
  ``TransactWriteItems`` (``ConditionCheck`` included); ``BatchWriteItem`` per
  item; a write refused by its condition still costs its item's size.
- **Index writes** ("Using Global Secondary Indexes", .../developerguide/GSI.html#GSI.Writes):
  for every global index, none when the item is in the (sparse) index neither
  before nor after, one to put or delete its entry, one to update a projected
  attribute, and two when an update moves the index key ("one to delete the
  previous item from the index and another write to put the new item"). An
  entry's size is its projected attributes (KEYS_ONLY: the table's and the
  index's keys). Counted at the standard rate inside a transaction (AWS does
  not document them doubled).
- **Limits** ("Constraints"/"Burst and adaptive capacity", .../developerguide/bp-partition-key-design.html;
  "Quotas", .../developerguide/ServiceQuotas.html): a partition key value of the
  table or of an index serves at most 3,000 read and 1,000 write units per
  second; an on-demand table and each of its indexes at most 40,000 of each
  (the default per-table quota). A base-table write whose index partition is
  over its budget is throttled ("if a global secondary index has insufficient
  write capacity, the write activity on the table will be throttled").
  Each of those is a token bucket of ``rate * scale`` units per second, holding
  one second of them; a request is served while all its buckets are above
  zero and may take them below (a request larger than a scaled-down bucket
  still passes, as it would on AWS). Split for heat is not modelled: a
  partition key value never gets more than its one partition (conservative).
- **Throttle answers** ("ThrottlingReason", https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_ThrottlingReason.html):
  ``ProvisionedThroughputExceededException`` with ``ThrottlingReasons`` of
  ``{Table,Index}{Read,Write}KeyRangeThroughputExceeded`` (resource: the table's
  or the index's ARN); past a table's quota ``RequestLimitExceeded`` with
  ``{Table,Index}{Read,Write}AccountLimitExceeded``; a transaction is cancelled
  with ``ThrottlingError`` at each throttled action. A throttled write is
  undone (the items it touched, and its stream records, are put back): the
  client sees a write that did not happen, as on AWS. A throttled
  ``BatchWriteItem``/``BatchGetItem`` is refused whole (AWS would return the
  throttled part as unprocessed).
- **S3** ("Best practices design patterns: optimizing Amazon S3 performance",
  https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html):
  3,500 PUT/COPY/POST/DELETE and 5,500 GET/HEAD requests per second per
  partitioned prefix; a new bucket is one partition, so here the bucket is the
  partition (requests are also counted per prefix, the first two key segments,
  to show where a split would land). Over it: HTTP 503 ``SlowDown`` in S3's XML
  error shape ("Please reduce your request rate.", the S3 error-code list).

Clock: the wall clock by default; ``clock="virtual"`` freezes time for the
buckets, and it moves only by ``advance(seconds)``, so a test of a limit does
not depend on how loaded the machine is. Counts (units, requests) do not
depend on the clock at all: they are what tests and benchmarks assert.

Not modelled, said plainly: adaptive capacity and split for heat, provisioned
mode and its burst credits, partitions of a *table* holding several key values
(each value is its own partition: a lower bound on heat), TTL deletions (free
on AWS; moto runs none), PartiQL, S3 partitions splitting over time.

Off by default (``THROUGHPUT=on`` or :func:`configure` turns counting on;
``scale`` > 0 turns limits on). Control endpoints under
``/__contention__/capacity`` (the conflict layer passes them on): ``GET``
(the counts), ``POST .../configure`` (JSON), ``.../reset``, ``.../advance``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import re
import threading
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from tests.support.strict_aws import (
    _moto_table,
    _parse_query,
    _split_path,
    _to_wire,
    credential_scope,
    item_size,
    s3_operation,
)

CONTROL = "/__contention__/capacity"
DYNAMODB_TARGET_PREFIX = "DynamoDB_20120810."
#: One partition key value's limits, per second (bp-partition-key-design.html).
PARTITION_RCU = 3000.0
PARTITION_WCU = 1000.0
#: An on-demand table's (and each index's) default per-table quota, per second (ServiceQuotas.html).
TABLE_MAX_UNITS = 40000.0
#: Requests per second per partitioned S3 prefix (optimizing-performance.html).
S3_WRITES = 3500.0
S3_READS = 5500.0
READ_OPS = frozenset({"GetItem", "BatchGetItem", "TransactGetItems", "Query", "Scan"})
WRITE_OPS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_ERROR_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_THROTTLED = (
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your "
    "provisioning level with the UpdateTable API."
)
_QUOTA = "Throughput exceeds the current throughput limit for your account. Please contact AWS Support."
_SLOW_DOWN = "Please reduce your request rate."
_KEY_EQ = re.compile(r"(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)")
_PLACEHOLDER = re.compile(r"[#:][A-Za-z0-9_]+")

#: One use of capacity: (scope "table"|"index", table, index or "", partition key value, "read"|"write", units).
Use = tuple[str, str, str, str, str, float]


def _pk_value(av: Any) -> str:
    """A partition key's value as text (its one member of the AttributeValue)."""
    if isinstance(av, Mapping) and len(av) == 1:
        return str(next(iter(av.values())))
    return "?"


def _stored(table: Any, key: Mapping[str, Any]) -> Any:
    """moto's stored item for ``key`` (``None``: none), without adding an entry to its maps."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    if table.hash_key_attr not in key:
        return None
    h = DynamoType(key[table.hash_key_attr])
    if h not in table.items:
        return None
    held = table.items[h]
    if not table.range_key_attr:
        return held
    if table.range_key_attr not in key:
        return None
    return held.get(DynamoType(key[table.range_key_attr]))


def _wire(item: Any) -> dict[str, Any] | None:
    return None if item is None else {n: _to_wire(v) for n, v in item.attrs.items()}


def _units(size: int, block: int) -> int:
    return max(1, math.ceil(size / block))


def _entry(index: Any, table: Any, item: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The index entry of a (wire) item: its projected attributes; ``None`` when not in the index."""
    if item is None or any(a not in item for a in index.schema_key_attrs):
        return None
    kind = (index.projection or {}).get("ProjectionType", "ALL")
    if kind == "ALL":
        return dict(item)
    keep = set(index.schema_key_attrs) | {table.hash_key_attr, table.range_key_attr}
    if kind == "INCLUDE":
        keep |= set((index.projection or {}).get("NonKeyAttributes") or [])
    return {k: v for k, v in item.items() if k in keep}


def index_writes(table: Any, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[Use]:
    """What one item's write costs each global index (GSI.html#GSI.Writes)."""
    out: list[Use] = []
    for index in table.global_indexes or []:
        old, new = _entry(index, table, before), _entry(index, table, after)
        hash_attr = index.schema_key_attrs[0]
        if old is None and new is None:
            continue
        if old is not None and new is not None:
            moved = any(old.get(a) != new.get(a) for a in index.schema_key_attrs)
            if moved:
                out.append(
                    (
                        "index",
                        table.name,
                        index.name,
                        _pk_value(old[hash_attr]),
                        "write",
                        _units(item_size(old), 1024),
                    )
                )
                out.append(
                    (
                        "index",
                        table.name,
                        index.name,
                        _pk_value(new[hash_attr]),
                        "write",
                        _units(item_size(new), 1024),
                    )
                )
            elif old != new:
                size = max(item_size(old), item_size(new))
                out.append(
                    ("index", table.name, index.name, _pk_value(new[hash_attr]), "write", _units(size, 1024))
                )
            continue
        one = new if new is not None else old
        assert one is not None
        out.append(
            (
                "index",
                table.name,
                index.name,
                _pk_value(one[hash_attr]),
                "write",
                _units(item_size(one), 1024),
            )
        )
    return out


class _Write:
    """One item a request writes or checks: its table, key, and the item before (a copy)."""

    def __init__(self, table: Any, key: Mapping[str, Any], action: str, transactional: bool) -> None:
        self.table, self.key, self.action, self.transactional = table, dict(key), action, transactional
        stored = _stored(table, key)
        self.before_item = copy.deepcopy(stored)
        self.before = _wire(stored)

    def uses(self, landed: bool) -> list[Use]:
        after = _wire(_stored(self.table, self.key)) if landed else self.before
        size = max(item_size(self.before or {}), item_size(after or {}))
        units = _units(size, 1024) * (2 if self.transactional else 1)
        pk = _pk_value(self.key.get(self.table.hash_key_attr))
        out: list[Use] = [("table", self.table.name, "", pk, "write", units)]
        if landed and self.action != "ConditionCheck":
            out.extend(index_writes(self.table, self.before, after))
        return out

    def restore(self) -> None:
        """Put the item back as it was (a throttled write did not happen)."""
        from moto.dynamodb.models.dynamo_type import DynamoType

        t = self.table
        h = DynamoType(self.key[t.hash_key_attr])
        if not t.range_key_attr:
            if self.before_item is None:
                t.items.pop(h, None)
            else:
                t.items[h] = self.before_item
            return
        r = DynamoType(self.key[t.range_key_attr])
        held = t.items[h]
        if self.before_item is None:
            held.pop(r, None)
            if not held:
                t.items.pop(h, None)
        else:
            held[r] = self.before_item


def _key_of(table: Any, body: Mapping[str, Any]) -> dict[str, Any]:
    src = body.get("Key") if isinstance(body.get("Key"), Mapping) else body.get("Item") or {}
    return {a: src[a] for a in (table.hash_key_attr, table.range_key_attr) if a and a in src}


class ThroughputMiddleware:
    """WSGI middleware: count every request's capacity; with a ``scale``, throttle as AWS does."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.on = (os.environ.get("THROUGHPUT") or "off").strip().lower() == "on"
        self.scale = float(os.environ.get("THROUGHPUT_SCALE") or 0)
        self.s3_scale = self.scale
        self.table_max = TABLE_MAX_UNITS
        self.virtual = False
        self._virtual_now = 0.0
        self._lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        self._buckets: dict[tuple[str, ...], tuple[float, float]] = {}
        self.units: Counter[tuple[str, str, str, str, str]] = Counter()
        self.requests: Counter[tuple[str, str]] = Counter()
        self.s3: Counter[tuple[str, str, str]] = Counter()
        self.throttles: Counter[str] = Counter()

    def _now(self) -> float:
        return self._virtual_now if self.virtual else time.monotonic()

    # -- WSGI ------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if (environ.get("PATH_INFO") or "").startswith(CONTROL):
            return self._control(environ, start_response)
        if not self.on:
            return self.app(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET") or ""
        if target.startswith(DYNAMODB_TARGET_PREFIX):
            op = target[len(DYNAMODB_TARGET_PREFIX) :]
            if op in READ_OPS or op in WRITE_OPS:
                return self._dynamodb(environ, start_response, op)
            return self.app(environ, start_response)
        scope = credential_scope({"authorization": environ.get("HTTP_AUTHORIZATION") or ""})
        if scope and scope[2] == "s3":
            return self._s3(environ, start_response)
        return self.app(environ, start_response)

    # -- buckets ---------------------------------------------------------------

    def _rate(self, key: tuple[str, ...]) -> float:
        scope, _table, _index, pk, kind = key
        if scope == "s3":
            return (S3_WRITES if kind == "write" else S3_READS) * self.s3_scale
        if pk == "":
            return self.table_max * self.scale
        return (PARTITION_WCU if kind == "write" else PARTITION_RCU) * self.scale

    def _take(self, need: Mapping[tuple[str, ...], float]) -> list[tuple[str, ...]]:
        """Debit every bucket, unless one is empty: then the empty ones (nothing is debited)."""
        now = self._now()
        levels, empty = {}, []
        for key in need:
            rate = self._rate(key)
            if rate <= 0:
                continue
            tokens, then = self._buckets.get(key, (rate, now))
            levels[key] = min(rate, tokens + max(0.0, now - then) * rate)
            if levels[key] <= 0:
                empty.append(key)
        if not empty:
            for key, level in levels.items():
                self._buckets[key] = (level - need[key], now)
        else:
            for key, level in levels.items():
                self._buckets[key] = (level, now)
        return empty

    @staticmethod
    def _needs(uses: Iterable[Use]) -> dict[tuple[str, ...], float]:
        need: Counter[tuple[str, ...]] = Counter()
        for scope, table, index, pk, kind, units in uses:
            need[(scope, table, index, pk, kind)] += units
            need[(scope, table, index, "", kind)] += units  # the table's (or index's) total
        return dict(need)

    # -- DynamoDB --------------------------------------------------------------

    def _dynamodb(
        self, environ: dict[str, Any], start_response: Callable[..., Any], op: str
    ) -> Iterable[bytes]:
        raw = _read_body(environ)
        try:
            params = json.loads(raw or b"{}")
        except ValueError:
            return self.app(environ, start_response)
        account, region = _account_region(environ)
        with self._lock:
            writes = self._writes(account, region, op, params) if op in WRITE_OPS else []
            streams = _stream_marks(writes)
            captured: list[Any] = []
            out = list(self.app(environ, lambda s, h, *e: captured.append((s, h))))
            status, headers = captured[0]
            landed = status.startswith("200")
            failed_check = not landed and b"ConditionalCheckFailedException" in b"".join(out)
            self.requests[("dynamodb", op)] += 1
            if not (landed or failed_check):
                start_response(status, headers)
                return out
            if op in WRITE_OPS:
                uses = [u for w in writes for u in w.uses(landed)]
            else:
                uses = self._reads(environ, account, region, op, params, out)
            empty = self._take(self._needs(uses)) if self.scale > 0 else []
            if empty:
                for w in reversed(writes):
                    w.restore()
                for shard, mark in streams:
                    del shard.items[mark:]
                return self._throttled(start_response, op, empty, uses, writes, account, region)
            for scope, table, index, pk, kind, units in uses:
                self.units[(scope, table, index, pk, kind)] += units
            if landed and params.get("ReturnConsumedCapacity") in ("TOTAL", "INDEXES"):
                out, headers = _with_consumed(out, headers, op, uses)
        start_response(status, headers)
        return out

    def _writes(self, account: str, region: str, op: str, params: Mapping[str, Any]) -> list[_Write]:
        bodies: list[tuple[str, Mapping[str, Any], str]] = []
        if op == "TransactWriteItems":
            for action in params.get("TransactItems") or []:
                if isinstance(action, Mapping) and action:
                    kind, body = next(iter(action.items()))
                    bodies.append((str(body.get("TableName")), body, kind))
        elif op == "BatchWriteItem":
            for name, requests in (params.get("RequestItems") or {}).items():
                for req in requests or []:
                    kind, body = next(iter(req.items()))
                    bodies.append((name, body, kind))
        else:
            bodies.append((str(params.get("TableName")), params, op))
        out = []
        for name, body, kind in bodies:
            table = _moto_table(account, region, name)
            if table is not None and isinstance(body, Mapping):
                out.append(_Write(table, _key_of(table, body), kind, op == "TransactWriteItems"))
        return out

    def _reads(
        self,
        environ: dict[str, Any],
        account: str,
        region: str,
        op: str,
        params: Mapping[str, Any],
        out: list[bytes],
    ) -> list[Use]:
        gets: list[tuple[str, Mapping[str, Any], float]] = []
        if op == "GetItem":
            gets.append(
                (
                    str(params.get("TableName")),
                    params.get("Key") or {},
                    1.0 if params.get("ConsistentRead") else 0.5,
                )
            )
        elif op == "BatchGetItem":
            for name, spec in (params.get("RequestItems") or {}).items():
                factor = 1.0 if spec.get("ConsistentRead") else 0.5
                gets.extend((name, key, factor) for key in spec.get("Keys") or [])
        elif op == "TransactGetItems":
            for action in params.get("TransactItems") or []:
                body = action.get("Get") or {}
                gets.append((str(body.get("TableName")), body.get("Key") or {}, 2.0))
        else:
            return self._scanned(environ, account, region, op, params)
        uses: list[Use] = []
        for name, key, factor in gets:
            table = _moto_table(account, region, name)
            if table is None:
                continue
            size = item_size(_wire(_stored(table, key)) or {})
            uses.append(
                (
                    "table",
                    table.name,
                    "",
                    _pk_value(key.get(table.hash_key_attr)),
                    "read",
                    _units(size, 4096) * factor,
                )
            )
        return uses

    def _scanned(
        self, environ: dict[str, Any], account: str, region: str, op: str, params: Mapping[str, Any]
    ) -> list[Use]:
        """Query/Scan: the items read, by the same request without filter or projection."""
        table = _moto_table(account, region, str(params.get("TableName")))
        if table is None:
            return []
        index_name = str(params.get("IndexName") or "")
        shadow = {
            k: v
            for k, v in params.items()
            if k
            not in (
                "FilterExpression",
                "ProjectionExpression",
                "Select",
                "AttributesToGet",
                "QueryFilter",
                "ScanFilter",
            )
        }
        used = " ".join(str(params.get(k) or "") for k in ("KeyConditionExpression",))
        words = set(_PLACEHOLDER.findall(used))
        for field in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            kept = {k: v for k, v in (params.get(field) or {}).items() if k in words}
            shadow.pop(field, None)
            if kept:
                shadow[field] = kept
        env = dict(environ)
        data = json.dumps(shadow).encode()
        env["wsgi.input"], env["CONTENT_LENGTH"] = _Body(data), str(len(data))
        body = b"".join(self.app(env, lambda *a: None))
        items = json.loads(body or b"{}").get("Items") or []
        size = sum(item_size(i) for i in items)
        factor = 1.0 if params.get("ConsistentRead") else 0.5
        scope = "index" if index_name else "table"
        pk = self._query_pk(table, index_name, params) if op == "Query" else "(scan)"
        return [(scope, table.name, index_name, pk, "read", _units(size, 4096) * factor)]

    @staticmethod
    def _query_pk(table: Any, index_name: str, params: Mapping[str, Any]) -> str:
        hash_attr = table.hash_key_attr
        for idx in list(table.global_indexes or []) + list(table.indexes or []):
            if idx.name == index_name:
                hash_attr = idx.schema_key_attrs[0]
        names = params.get("ExpressionAttributeNames") or {}
        values = params.get("ExpressionAttributeValues") or {}
        for name, value in _KEY_EQ.findall(str(params.get("KeyConditionExpression") or "")):
            if names.get(name, name) == hash_attr and value in values:
                return _pk_value(values[value])
        return "?"

    def _throttled(
        self,
        start_response: Callable[..., Any],
        op: str,
        empty: list[tuple[str, ...]],
        uses: list[Use],
        writes: list[_Write],
        account: str,
        region: str,
    ) -> list[bytes]:
        reasons = []
        for scope, table, index, pk, kind in empty:
            limit = "AccountLimitExceeded" if pk == "" else "KeyRangeThroughputExceeded"
            reason = f"{scope.capitalize()}{kind.capitalize()}{limit}"
            arn = f"arn:aws:dynamodb:{region}:{account}:table/{table}" + (f"/index/{index}" if index else "")
            reasons.append({"reason": reason, "resource": arn})
            self.throttles[reason] += 1
        self.requests[("dynamodb", f"{op}:throttled")] += 1
        if op == "TransactWriteItems":
            hit = {(t, pk) for _s, t, _i, pk, _k in empty}
            codes = []
            for w in writes:
                mine = w.uses(True)
                bad = any((u[1], u[3]) in hit or (u[1], "") in hit for u in mine)
                codes.append({"Code": "ThrottlingError", "Message": _THROTTLED} if bad else {"Code": "None"})
            if all(c["Code"] == "None" for c in codes):
                codes = [{"Code": "ThrottlingError", "Message": _THROTTLED} for _ in codes]
            return _answer(
                start_response,
                {
                    "__type": _ERROR_PREFIX + "TransactionCanceledException",
                    "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
                    f"[{', '.join(c['Code'] for c in codes)}]",
                    "CancellationReasons": codes,
                },
            )
        quota = all(r["reason"].endswith("AccountLimitExceeded") for r in reasons)
        kind = "RequestLimitExceeded" if quota else "ProvisionedThroughputExceededException"
        return _answer(
            start_response,
            {
                "__type": _ERROR_PREFIX + kind,
                "message": _QUOTA if quota else _THROTTLED,
                "ThrottlingReasons": reasons,
            },
        )

    # -- S3 --------------------------------------------------------------------

    def _s3(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = (environ.get("REQUEST_METHOD") or "GET").upper()
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        path = environ.get("RAW_URI") or environ.get("PATH_INFO") or ""
        bucket, key = _split_path(path, headers.get("host"))
        op = s3_operation(method, key, _parse_query(environ.get("QUERY_STRING") or ""), headers)
        kind = "read" if method in ("GET", "HEAD") else "write"
        prefix = "/".join(key.decode("utf-8", "replace").split("/")[:2])
        with self._lock:
            self.requests[("s3", op)] += 1
            if self.s3_scale > 0 and self._take({("s3", bucket, "", "", kind): 1.0}):
                self.throttles["SlowDown"] += 1
                self.requests[("s3", f"{op}:throttled")] += 1
                _read_body(environ)  # drain it: the connection stays in step
                return _slow_down(start_response, method, bucket, key.decode("utf-8", "replace"))
            self.s3[(bucket, prefix, kind)] += 1
        return self.app(environ, start_response)

    # -- control endpoints -------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The counts: units by table, index and partition key value; requests; S3; throttles."""
        with self._lock:
            tables: dict[str, Any] = {}
            for (scope, table, index, pk, kind), units in self.units.items():
                t = tables.setdefault(table, {"read": 0.0, "write": 0.0, "partitions": {}, "indexes": {}})
                where = (
                    t
                    if scope == "table"
                    else t["indexes"].setdefault(index, {"read": 0.0, "write": 0.0, "partitions": {}})
                )
                where[kind] += units
                where["partitions"].setdefault(pk, {"read": 0.0, "write": 0.0})[kind] += units
            s3: dict[str, Any] = {}
            for (bucket, prefix, kind), n in self.s3.items():
                b = s3.setdefault(bucket, {"read": 0, "write": 0, "prefixes": {}})
                b[kind] += n
                b["prefixes"].setdefault(prefix, {"read": 0, "write": 0})[kind] += n
            return {
                "on": self.on,
                "scale": self.scale,
                "s3_scale": self.s3_scale,
                "table_max": self.table_max,
                "clock": "virtual" if self.virtual else "wall",
                "tables": tables,
                "s3": s3,
                "requests": {f"{svc}:{op}": n for (svc, op), n in sorted(self.requests.items())},
                "throttles": dict(self.throttles),
            }

    def _configure(self, body: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            if "on" in body:
                self.on = bool(body["on"])
            for name in ("scale", "s3_scale", "table_max"):
                if name in body:
                    setattr(self, name, max(0.0, float(body[name])))
            if "clock" in body:
                self.virtual = body["clock"] == "virtual"
            self._buckets.clear()
        return self.status()

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        what = (environ.get("PATH_INFO") or "")[len(CONTROL) :].strip("/")
        method = (environ.get("REQUEST_METHOD") or "GET").upper()
        status, result = "200 OK", None
        try:
            body = json.loads(_read_body(environ) or b"{}") if method in ("POST", "PUT") else {}
        except ValueError:
            body = None
        if body is None:
            status, result = "400 Bad Request", {"error": "the body must be JSON"}
        elif what == "" and method == "GET":
            result = self.status()
        elif what == "configure" and method in ("POST", "PUT"):
            result = self._configure(body)
        elif what == "reset" and method in ("POST", "PUT"):
            with self._lock:
                self._reset()
            result = {"reset": True}
        elif what == "advance" and method in ("POST", "PUT"):
            with self._lock:
                self._virtual_now += max(0.0, float(body.get("seconds", 0)))
            result = {"now": self._virtual_now}
        else:
            status, result = "404 Not Found", {"error": f"no control endpoint {method} {CONTROL}/{what}"}
        data = json.dumps(result).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]


class _Body:
    """A request body for a shadow request (a file-like object WSGI apps read)."""

    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._data) if n is None or n < 0 else self._pos + n
        chunk, self._pos = self._data[self._pos : end], min(end, len(self._data))
        return chunk


def _stream_marks(writes: Iterable[_Write]) -> list[tuple[Any, int]]:
    """Each written table's stream shard and its length now (to drop a throttled write's records)."""
    seen: dict[int, tuple[Any, int]] = {}
    for w in writes:
        shard = getattr(w.table, "stream_shard", None)
        if shard is not None and id(shard) not in seen:
            seen[id(shard)] = (shard, len(shard.items))
    return list(seen.values())


def _account_region(environ: dict[str, Any]) -> tuple[str, str]:
    scope = credential_scope({"authorization": environ.get("HTTP_AUTHORIZATION") or ""})
    region = scope[1] if scope else "us-east-1"
    return os.environ.get("MOTO_ACCOUNT_ID") or "123456789012", region


def _read_body(environ: dict[str, Any]) -> bytes:
    import io

    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    body = (
        stream.read(length)
        if length > 0
        else (stream.read() if environ.get("wsgi.input_terminated") else b"")
    )
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body


def _with_consumed(
    out: list[bytes], headers: list[tuple[str, str]], op: str, uses: Iterable[Use]
) -> tuple[list[bytes], list[tuple[str, str]]]:
    """The response with ``ConsumedCapacity`` as DynamoDB reports it: the units counted here, per table.

    moto reports its own figures (a 3 KB put as 1 unit); a client that paces
    itself by them (a capacity budget) must see what AWS would send: the
    table's and its indexes' units together (``TOTAL``), one entry for a
    single-item call or a ``Query``, a list for batches and transactions.
    """
    try:
        payload = json.loads(b"".join(out) or b"{}")
    except ValueError:
        return out, headers
    per_table: Counter[str] = Counter()
    for _scope, table, _index, _pk, _kind, units in uses:
        per_table[table] += units
    entries = [{"TableName": t, "CapacityUnits": float(u)} for t, u in per_table.items()]
    if op in ("BatchGetItem", "BatchWriteItem", "TransactWriteItems", "TransactGetItems"):
        payload["ConsumedCapacity"] = entries
    elif entries:
        payload["ConsumedCapacity"] = entries[0]
    data = json.dumps(payload).encode()
    kept = [(k, v) for k, v in headers if k.lower() not in ("content-length", "x-amz-crc32")]
    return [data], [*kept, ("Content-Length", str(len(data)))]


def _answer(start_response: Callable[..., Any], payload: Mapping[str, Any]) -> list[bytes]:
    """An error as DynamoDB sends one: HTTP 400, JSON with ``__type``."""
    data = json.dumps(payload).encode()
    start_response(
        "400 Bad Request",
        [
            ("Content-Type", "application/x-amz-json-1.0"),
            ("x-amzn-RequestId", uuid.uuid4().hex.upper()),
            ("Content-Length", str(len(data))),
        ],
    )
    return [data]


def _slow_down(start_response: Callable[..., Any], method: str, bucket: str, key: str) -> list[bytes]:
    """HTTP 503 ``SlowDown`` in S3's XML error shape (a HEAD gets the status, no body)."""
    from xml.sax.saxutils import escape

    rid = uuid.uuid4().hex[:16].upper()
    data = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>SlowDown</Code><Message>{_SLOW_DOWN}</Message>"
        f"<BucketName>{escape(bucket)}</BucketName><Resource>/{escape(bucket)}/{escape(key)}</Resource>"
        f"<RequestId>{rid}</RequestId><HostId>throughput-layer</HostId></Error>"
    ).encode()
    if method == "HEAD":
        data = b""
    start_response(
        "503 Slow Down",
        [("Content-Type", "application/xml"), ("x-amz-request-id", rid), ("Content-Length", str(len(data)))],
    )
    return [data]


# --------------------------------------------------------------------------
# Client helpers (tests, fixtures, benchmarks)
# --------------------------------------------------------------------------


def _call(endpoint: str, method: str, what: str, body: Mapping[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    url = endpoint.rstrip("/") + CONTROL + (f"/{what}" if what else "")
    req = urllib.request.Request(url, data=data, method=method)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def capacity(endpoint: str) -> dict[str, Any]:
    """The counts (see :meth:`ThroughputMiddleware.status`)."""
    result: dict[str, Any] = _call(endpoint, "GET", "")
    return result


def configure(endpoint: str, **settings: Any) -> dict[str, Any]:
    """Set ``on``, ``scale``, ``s3_scale``, ``table_max``, ``clock`` ("wall" | "virtual")."""
    result: dict[str, Any] = _call(endpoint, "POST", "configure", settings)
    return result


def reset(endpoint: str) -> None:
    """Zero the counts and refill the buckets."""
    _call(endpoint, "POST", "reset", {})


def advance(endpoint: str, seconds: float) -> None:
    """Move the virtual clock on."""
    _call(endpoint, "POST", "advance", {"seconds": seconds})


@contextlib.contextmanager
def counting(endpoint: str, **settings: Any) -> Iterator[None]:
    """The layer on (counts zeroed) for the block, with these settings; then as it was."""
    before = capacity(endpoint)
    configure(
        endpoint,
        **{"on": True, "scale": 0, "s3_scale": 0, "table_max": TABLE_MAX_UNITS, "clock": "wall", **settings},
    )
    reset(endpoint)
    try:
        yield
    finally:
        configure(
            endpoint,
            on=before["on"],
            scale=before["scale"],
            s3_scale=before["s3_scale"],
            table_max=before["table_max"],
            clock=before["clock"],
        )


def total(state: Mapping[str, Any], table: str, kind: str, index: str | None = None) -> float:
    """A table's (or one of its indexes') counted units of ``kind`` ("read" | "write")."""
    t = state["tables"].get(table) or {}
    where = (t.get("indexes") or {}).get(index) or {} if index else t
    return float(where.get(kind, 0.0))


def hottest(state: Mapping[str, Any], table: str, kind: str, index: str | None = None) -> tuple[str, float]:
    """The partition key value with the most units of ``kind``, and its units."""
    t = state["tables"].get(table) or {}
    where = (t.get("indexes") or {}).get(index) or {} if index else t
    parts = where.get("partitions") or {}
    if not parts:
        return "", 0.0
    pk = max(parts, key=lambda p: parts[p][kind])
    return pk, float(parts[pk][kind])


__all__ = [
    "ThroughputMiddleware",
    "advance",
    "capacity",
    "configure",
    "counting",
    "hottest",
    "index_writes",
    "reset",
    "total",
]
