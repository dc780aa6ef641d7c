"""A capacity model: what a workload costs the table, its indexes, S3 and the maintenance Lambdas.

Give it a :class:`Workload` (threads, steps per second, state size and
growth, fan-out, history kept, TTL, prune schedule, S3 offload, shards of the
threads index); :func:`plan` returns a :class:`Plan`: the load on the hottest
table partition, the hottest partition of each index and the S3 prefixes, the
table totals, the maintenance functions' Lambda concurrency, the monthly cost
on demand and provisioned, and the first limit reached with the headroom to it.
``langgraph-dynamodb capacity`` prints it (text or ``--json``).

Per-request costs are what the saver sends, counted from ``_operations/``
and checked against the tests' throughput layer
(tests/integration/test_capacity_model.py replays scaled-down workloads and
holds the prediction within 10% of what the layer counted):

- ``put``: one ``PutItem`` of the checkpoint item (the checkpoint and the
  values it carries up to ``s3_threshold``; larger values go to S3, one
  ``PutObject`` each). The item carries the run id, so it also writes one
  entry of the keys-only ``run_id-index`` (under 1 KB: one unit).
- ``put_writes``: one ``PutItem`` per task (its writes item).
- Lease-bound (``ThreadLease.bind``): each ``put``/``put_writes`` is one
  ``TransactWriteItems`` of the write and a ``ConditionCheck`` on the lock item
  (every action at twice its units); a lease costs one ``UpdateItem`` to take
  and one to release.
- ``get_tuple`` (latest): one strongly consistent ``Query`` whose page is
  sized to the latest checkpoint and its writes items (``read.latest_limit``).
- ``list`` (a whole namespace): one strongly consistent ``Query`` reading every
  checkpoint kept and its writes.
- The thread head (``heads.on_activity``, when threads are tracked: a TTL or
  ``track_threads``): one ``UpdateItem`` at most once per refresh window per
  thread per process (a tenth of the TTL, 60 s to a day; 300 s without TTL).
  The head is in the threads index; each refresh moves its sort key (the
  update time): two index writes (delete and put), one the first time. The
  index has ``threads_index_shards`` partition key values.
- Pruning (a schedule keeping ``history_kept`` checkpoints): in a steady state
  every item written is deleted once (``BatchWriteItem``, the item's size in
  units, and its run-index entry), and each thread touched since the last run
  is read once (one ``Query``).

Limits (AWS documentation, "Constraints"/"Burst and adaptive capacity" and
"Quotas in Amazon DynamoDB"; S3 "optimizing performance"): 1,000 write and
3,000 read units per second per partition key value of the table and of each
index (hard: a single key value never splits); 40,000 of each per table and per
index on demand (the default, adjustable quota); S3 3,500 writes and 5,500
reads per second per partitioned prefix, a new bucket being one partition
(S3 adds partitions as load persists).

Prices (us-east-1, Standard table class, from AWS's public pricing pages as
of 2026-12; verify before you budget): on demand $0.625 per million write and
$0.125 per million read request units; provisioned $0.00065 per WCU-hour and
$0.00013 per RCU-hour; storage $0.25 per GB-month; S3 $0.005 per 1,000 PUTs,
$0.0004 per 1,000 GETs, $0.023 per GB-month; Lambda $0.0000166667 per GB-second
and $0.20 per million requests. A month is 730 hours.

Example:
    >>> p = plan(Workload(active_threads=1_000, steps_per_second=10))
    >>> p.first_limit["name"] != ""
    True
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from langgraph.checkpoint.dynamodb import schema

__all__ = ["PRICES", "Plan", "Workload", "headroom_table", "plan", "render_text", "replay_units"]

#: us-east-1 prices (see the module docstring for the date and sources).
PRICES: dict[str, float] = {
    "ddb_write_request_unit": 0.625e-6,
    "ddb_read_request_unit": 0.125e-6,
    "ddb_wcu_hour": 0.00065,
    "ddb_rcu_hour": 0.00013,
    "ddb_gb_month": 0.25,
    "s3_put": 0.005e-3,
    "s3_get": 0.0004e-3,
    "s3_gb_month": 0.023,
    "lambda_gb_second": 0.0000166667,
    "lambda_request": 0.20e-6,
}
HOURS_PER_MONTH = 730
SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600
PARTITION_WCU = 1000.0
PARTITION_RCU = 3000.0
TABLE_QUOTA = 40000.0
S3_PREFIX_WRITES = 3500.0
S3_PREFIX_READS = 5500.0
#: Bytes of a checkpoint item besides the state it carries (keys, metadata, versions), and of a
#: writes item besides the values, and of a thread head: measured on the throughput layer.
CHECKPOINT_OVERHEAD = 400
WRITES_OVERHEAD = 200
HEAD_BYTES = 200
#: Per-item storage overhead DynamoDB bills ("DynamoDB item sizes and formats": 100 bytes).
STORAGE_OVERHEAD = 100
#: Items a BatchWriteItem deletes at once (its documented maximum).
BATCH_WRITE_MAX = 25


@dataclass(frozen=True)
class Workload:
    """A workload: what the application does, on average and at its busiest thread.

    Attributes:
        active_threads: threads with activity (each its own table partition key value).
        steps_per_second: checkpoint steps (``put``) per second, all threads together.
        busiest_thread_steps_per_second: steps per second of the busiest thread.
        state_bytes: the stored size of a thread's first checkpoint item.
        state_growth_bytes: how much a checkpoint item grows per step.
        steps_per_thread: steps in a thread's life (to average its growth).
        fan_out: tasks per step, each with its own ``put_writes`` (a superstep's width).
        write_bytes: stored size of one task's writes.
        reads_per_step: ``get_tuple`` calls per step (LangGraph reads the latest once per invoke).
        lists_per_second: whole-namespace ``list`` calls per second (history views).
        history_kept: checkpoints kept per thread by pruning.
        ttl_seconds: the saver's TTL (``None``: none); threads are tracked when it is set.
        track_threads: thread heads without a TTL (``None``: as the TTL says).
        prune_every_seconds: the pruner's schedule.
        s3_threshold: values larger than this go to S3.
        large_values_per_step: values over ``s3_threshold`` written per step.
        threads_index_shards: partition key values of the threads index (``None``: as the table
            grows it, the smallest power of two from 4 that keeps a shard within a partition's
            1,000 write units a second, at most 256; see ``_operations.heads``).
        processes: processes writing (each refreshes heads on its own).
        request_latency_ms: one maintenance request's latency (for Lambda concurrency).
        lambda_memory_mb: the maintenance functions' memory.
        provisioned_utilization: target utilization when provisioning (auto scaling's target).
        lease_bound: writes through ``ThreadLease.bind`` (each a transaction with a lock check).
        steps_per_lease: steps per lease taken (one acquire and one release each).
    """

    active_threads: int = 10_000
    steps_per_second: float = 100.0
    busiest_thread_steps_per_second: float = 2.0
    state_bytes: int = 4096
    state_growth_bytes: int = 0
    steps_per_thread: int = 50
    fan_out: int = 1
    write_bytes: int = 512
    reads_per_step: float = 1.0
    lists_per_second: float = 0.0
    history_kept: int = 20
    ttl_seconds: int | None = None
    track_threads: bool | None = None
    prune_every_seconds: int = 3600
    s3_threshold: int = 64 * 1024
    large_values_per_step: float = 0.0
    threads_index_shards: int | None = None
    processes: int = 1
    request_latency_ms: float = 10.0
    lambda_memory_mb: int = 512
    provisioned_utilization: float = 0.7
    lease_bound: bool = False
    steps_per_lease: int = 5

    def __post_init__(self) -> None:
        shards = self.threads_index_shards
        if self.active_threads < 1 or self.steps_per_second < 0 or (shards is not None and shards < 1):
            raise ValueError("active_threads and threads_index_shards must be >= 1, steps_per_second >= 0")
        if not 0 < self.provisioned_utilization <= 1:
            raise ValueError("provisioned_utilization must be in (0, 1]")


@dataclass
class Plan:
    """What :func:`plan` found; ``to_dict`` is the ``--json`` shape."""

    workload: Workload
    per_request: dict[str, dict[str, float]]
    hottest: dict[str, dict[str, float]]
    totals: dict[str, dict[str, float]]
    s3: dict[str, float]
    lambdas: dict[str, float]
    monthly_cost: dict[str, float]
    headroom: list[dict[str, Any]] = field(default_factory=list)

    @property
    def first_limit(self) -> dict[str, Any]:
        """The component with the least headroom (``headroom`` is sorted, least first)."""
        return self.headroom[0] if self.headroom else {"name": "", "headroom": math.inf}

    @property
    def first_hard_limit(self) -> dict[str, Any]:
        """The least headroom among limits no quota increase lifts (a partition key value's)."""
        hard = [row for row in self.headroom if not row["adjustable"]]
        return hard[0] if hard else {"name": "", "headroom": math.inf}

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": asdict(self.workload),
            "per_request": self.per_request,
            "hottest": self.hottest,
            "totals": self.totals,
            "s3": self.s3,
            "lambdas": self.lambdas,
            "monthly_cost_usd": self.monthly_cost,
            "headroom": self.headroom,
            "first_limit": self.first_limit,
            "first_hard_limit": self.first_hard_limit,
            "prices_usd": PRICES,
        }


def _wcu(size: float) -> int:
    return max(1, math.ceil(size / 1024))


def _rcu(size: float) -> int:
    return max(1, math.ceil(size / 4096))


def _sizes(w: Workload) -> tuple[float, float]:
    """(stored bytes of an average checkpoint item, of one task's writes item)."""
    growth = w.state_growth_bytes * max(0, w.steps_per_thread - 1) / 2
    return CHECKPOINT_OVERHEAD + w.state_bytes + growth, WRITES_OVERHEAD + w.write_bytes


def request_costs(w: Workload) -> dict[str, dict[str, float]]:
    """Units each saver call costs: table reads/writes and index writes."""
    ckpt, writes = _sizes(w)
    step_read = ckpt + w.fan_out * writes
    # Lease-bound (lock/_commit.py): a TransactWriteItems of the write and a ConditionCheck on the
    # thread's lock item (under 1 KB), each action at twice its units. Concurrent writes share one
    # transaction (one check), so per request this is an upper bound.
    tx, check = (2, 2) if w.lease_bound else (1, 0)
    return {
        "put": {"table_write": tx * _wcu(ckpt) + check, "run_index_write": 1, "requests": 1},
        "put_writes": {"table_write": tx * _wcu(writes) + check, "requests": 1},
        # ThreadLease: one UpdateItem of the lock item to take it, one to release it.
        "lease": {"table_write": 2 if w.lease_bound else 0, "requests": 2 if w.lease_bound else 0},
        "get_tuple": {"table_read": _rcu(step_read), "requests": 1},
        "list": {"table_read": _rcu(w.history_kept * step_read), "requests": 1},
        "head_refresh": {"table_write": _wcu(HEAD_BYTES), "threads_index_write": 2, "requests": 1},
        "prune_delete_step": {
            "table_write": _wcu(ckpt) + w.fan_out * _wcu(writes),
            "run_index_write": 1,
            "requests": (1 + w.fan_out) / BATCH_WRITE_MAX,
        },
        "prune_read_thread": {"table_read": _rcu(w.history_kept * step_read), "requests": 1},
    }


def _tracked(w: Workload) -> bool:
    return bool(w.ttl_seconds) if w.track_threads is None else w.track_threads


def head_refreshes_per_second(w: Workload) -> float:
    """Head writes per second: at most one per window per thread per process, never more than steps."""
    if not _tracked(w):
        return 0.0
    window = max(60, min(86_400, w.ttl_seconds // 10)) if w.ttl_seconds else 300
    return min(w.steps_per_second * w.processes, w.active_threads * w.processes / window)


def _rates(w: Workload, c: dict[str, dict[str, float]]) -> dict[str, float]:
    """Units per second, by component, in a steady state."""
    s = w.steps_per_second
    heads = head_refreshes_per_second(w)
    period = max(1, w.prune_every_seconds)
    touched = min(w.active_threads, s * period) / period
    # A run reads each thread touched since the last one whole: what it keeps and what it deletes.
    ckpt, writes = _sizes(w)
    new = s * period / max(1.0, touched * period)
    prune_read = _rcu((w.history_kept + new) * (ckpt + w.fan_out * writes))
    app_write = s * (c["put"]["table_write"] + w.fan_out * c["put_writes"]["table_write"])
    app_write += s / max(1, w.steps_per_lease) * c["lease"]["table_write"]
    return {
        "app_table_write": app_write + heads * c["head_refresh"]["table_write"],
        "app_table_read": s * w.reads_per_step * c["get_tuple"]["table_read"]
        + w.lists_per_second * c["list"]["table_read"],
        "prune_table_write": s * c["prune_delete_step"]["table_write"],
        "prune_table_read": touched * prune_read,
        "run_index_write": s * (c["put"]["run_index_write"] + c["prune_delete_step"]["run_index_write"]),
        "threads_index_write": heads * c["head_refresh"]["threads_index_write"],
        "heads": heads,
        "prune_requests": s * c["prune_delete_step"]["requests"] + touched,
    }


def grown_index_shards(write_units_per_second: float) -> int:
    """The shard count the threads index settles at under a load: doubled from the minimum while a shard is over.

    >>> grown_index_shards(100), grown_index_shards(55_600), grown_index_shards(1e9)
    (4, 64, 256)
    """
    n = schema.THREADS_INDEX_MIN_SHARDS
    while n < schema.THREADS_INDEX_MAX_SHARDS and write_units_per_second / n > PARTITION_WCU:
        n *= 2
    return n


def _hottest(w: Workload, c: dict[str, dict[str, float]], r: dict[str, float]) -> dict[str, dict[str, float]]:
    b = w.busiest_thread_steps_per_second
    shards = w.threads_index_shards or grown_index_shards(r["threads_index_write"])
    return {
        "table_partition": {
            "write_units_per_second": b
            * (c["put"]["table_write"] + w.fan_out * c["put_writes"]["table_write"]),
            "read_units_per_second": b * w.reads_per_step * c["get_tuple"]["table_read"],
            "fan_out_burst_units": w.fan_out * c["put_writes"]["table_write"],
        },
        "threads_index_partition": {
            "write_units_per_second": r["threads_index_write"] / shards,
            "shards": shards,
        },
        "run_index_partition": {"write_units_per_second": b * c["put"]["run_index_write"]},
    }


def _s3(w: Workload) -> dict[str, float]:
    puts = w.steps_per_second * w.large_values_per_step
    gets = w.steps_per_second * w.reads_per_step * w.large_values_per_step
    busiest = w.busiest_thread_steps_per_second * w.large_values_per_step
    return {
        "put_per_second": puts,
        "get_per_second": gets,
        "busiest_thread_prefix_put_per_second": busiest,
        "new_bucket_partitions_needed": math.ceil(max(puts / S3_PREFIX_WRITES, gets / S3_PREFIX_READS)),
    }


def _headroom(
    w: Workload, hot: dict[str, dict[str, float]], totals: dict[str, dict[str, float]], s3: dict[str, float]
) -> list[dict[str, Any]]:
    rows = [
        (
            "table partition writes (one thread)",
            hot["table_partition"]["write_units_per_second"],
            PARTITION_WCU,
            False,
        ),
        (
            "table partition reads (one thread)",
            hot["table_partition"]["read_units_per_second"],
            PARTITION_RCU,
            False,
        ),
        (
            "threads-index partition writes (one shard)",
            hot["threads_index_partition"]["write_units_per_second"],
            PARTITION_WCU,
            False,
        ),
        (
            "run_id-index partition writes (one run)",
            hot["run_index_partition"]["write_units_per_second"],
            PARTITION_WCU,
            False,
        ),
        ("table writes (per-table quota)", totals["table"]["write_units_per_second"], TABLE_QUOTA, True),
        ("table reads (per-table quota)", totals["table"]["read_units_per_second"], TABLE_QUOTA, True),
        (
            "threads-index writes (per-index quota)",
            totals["threads_index"]["write_units_per_second"],
            TABLE_QUOTA,
            True,
        ),
        (
            "run_id-index writes (per-index quota)",
            totals["run_index"]["write_units_per_second"],
            TABLE_QUOTA,
            True,
        ),
        ("S3 PUT (a new bucket's one partition)", s3["put_per_second"], S3_PREFIX_WRITES, True),
        ("S3 GET (a new bucket's one partition)", s3["get_per_second"], S3_PREFIX_READS, True),
    ]
    out = [
        {
            "name": name,
            "load": round(load, 3),
            "limit": limit,
            "headroom": round(limit / load, 3) if load > 0 else math.inf,
            "adjustable": adjustable,
        }
        for name, load, limit, adjustable in rows
    ]
    return sorted(out, key=lambda row: row["headroom"])


def _cost(
    w: Workload, totals: dict[str, dict[str, float]], s3: dict[str, float], lambdas: dict[str, float]
) -> dict[str, float]:
    ckpt, writes = _sizes(w)
    wru = sum(t["write_units_per_second"] for t in totals.values())
    rru = sum(t["read_units_per_second"] for t in totals.values())
    stored_items = w.active_threads * w.history_kept * (1 + w.fan_out)
    stored_bytes = (
        w.active_threads * w.history_kept * (ckpt + w.fan_out * writes) + stored_items * STORAGE_OVERHEAD
    )
    storage = stored_bytes / 2**30 * PRICES["ddb_gb_month"]
    s3_cost = SECONDS_PER_MONTH * (
        s3["put_per_second"] * PRICES["s3_put"] + s3["get_per_second"] * PRICES["s3_get"]
    )
    u = w.provisioned_utilization
    provisioned = HOURS_PER_MONTH * (wru / u * PRICES["ddb_wcu_hour"] + rru / u * PRICES["ddb_rcu_hour"])
    on_demand = SECONDS_PER_MONTH * (
        wru * PRICES["ddb_write_request_unit"] + rru * PRICES["ddb_read_request_unit"]
    )
    lam = SECONDS_PER_MONTH * lambdas["concurrency"] * w.lambda_memory_mb / 1024 * PRICES["lambda_gb_second"]
    extras = storage + s3_cost + lam
    return {
        "dynamodb_on_demand_throughput": round(on_demand, 2),
        "dynamodb_provisioned_throughput": round(provisioned, 2),
        "dynamodb_storage": round(storage, 2),
        "s3_requests": round(s3_cost, 2),
        "lambda_maintenance": round(lam, 2),
        "total_on_demand": round(on_demand + extras, 2),
        "total_provisioned": round(provisioned + extras, 2),
    }


def plan(w: Workload) -> Plan:
    """The capacity plan of a workload (see the module docstring for what is counted)."""
    c = request_costs(w)
    r = _rates(w, c)
    hot = _hottest(w, c, r)
    totals = {
        "table": {
            "write_units_per_second": r["app_table_write"] + r["prune_table_write"],
            "read_units_per_second": r["app_table_read"] + r["prune_table_read"],
        },
        "run_index": {"write_units_per_second": r["run_index_write"], "read_units_per_second": 0.0},
        "threads_index": {"write_units_per_second": r["threads_index_write"], "read_units_per_second": 0.0},
    }
    s3 = _s3(w)
    # Little's law: requests in flight = rate x latency; one in flight per concurrent execution.
    concurrency = r["prune_requests"] * w.request_latency_ms / 1000
    lambdas = {
        "prune_requests_per_second": round(r["prune_requests"], 3),
        "concurrency": round(concurrency, 3),
    }
    return Plan(
        workload=w,
        per_request=c,
        hottest=hot,
        totals=totals,
        s3=s3,
        lambdas=lambdas,
        monthly_cost=_cost(w, totals, s3, lambdas),
        headroom=_headroom(w, hot, totals, s3),
    )


def replay_units(
    w: Workload,
    threads: int,
    steps: int,
    *,
    lists: int = 0,
    prune_keep: int | None = None,
    refreshes: int = 0,
) -> dict[str, float]:
    """Units a finite replay costs (what the validation test runs): ``threads`` fresh threads of
    ``steps`` steps each, every step a ``put``, ``fan_out`` ``put_writes`` and ``reads_per_step``
    ``get_tuple`` (under one lease per thread when ``lease_bound``); then per thread ``refreshes`` head refreshes (one more step each, a refresh window
    later), ``lists`` whole-namespace ``list`` calls, and a prune keeping ``prune_keep`` checkpoints.

    Step ``i``'s checkpoint is ``state_bytes + i * state_growth_bytes``; each tracked thread's head
    is written once, entering the threads index (one unit), and each refresh moves it (two).
    """
    out = {"table_write": 0.0, "table_read": 0.0, "run_index_write": 0.0, "threads_index_write": 0.0}
    out["table_write"] += threads * request_costs(w)["lease"]["table_write"]  # one lease per thread
    sizes = []
    for i in range(steps + refreshes):
        grown = Workload(
            **{**asdict(w), "state_bytes": w.state_bytes + i * w.state_growth_bytes, "state_growth_bytes": 0}
        )
        c = request_costs(grown)
        ckpt, writes = _sizes(grown)
        sizes.append((ckpt, writes))
        out["table_write"] += threads * (c["put"]["table_write"] + w.fan_out * c["put_writes"]["table_write"])
        out["table_read"] += threads * w.reads_per_step * c["get_tuple"]["table_read"]
        out["run_index_write"] += threads * c["put"]["run_index_write"]
    if _tracked(w):
        out["table_write"] += threads * (1 + refreshes) * _wcu(HEAD_BYTES)
        out["threads_index_write"] += threads * (1 + 2 * refreshes)
    namespace = sum(ckpt + w.fan_out * writes for ckpt, writes in sizes)
    out["table_read"] += threads * lists * _rcu(namespace)
    if prune_keep is not None:
        out["table_read"] += threads * _rcu(namespace + (HEAD_BYTES if _tracked(w) else 0))
        for ckpt, writes in sizes[: max(0, len(sizes) - prune_keep)]:
            out["table_write"] += threads * (_wcu(ckpt) + w.fan_out * _wcu(writes))
            out["run_index_write"] += threads
    return out


def headroom_table(
    rates: tuple[float, ...] = (1_000, 10_000, 100_000), threads: int = 10**7, **workload: Any
) -> str:
    """A Markdown table of every component's load and headroom at these step rates (docs/scale.md's)."""
    settings = {"ttl_seconds": 7 * 86_400, **workload}
    plans = [plan(Workload(active_threads=threads, steps_per_second=r, **settings)) for r in rates]
    head = " | ".join(f"{r:,.0f} steps/s: load (headroom)" for r in rates)
    lines = [f"| component | limit | {head} |", "|---|---|" + "---|" * len(rates)]
    for name in [row["name"] for row in _table_rows(plans[0])]:
        cells = []
        for p in plans:
            row = next(x for x in p.headroom if x["name"] == name)
            h = "∞" if row["headroom"] == math.inf else f"{row['headroom']:,.2f}x"
            cells.append(f"{row['load']:,.1f} ({h})")
        lines.append(f"| {name} | {row['limit']:,.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _table_rows(p: Plan) -> list[dict[str, Any]]:
    """The rows in the order ``_headroom`` lists them (partitions first), not by headroom."""
    names = [
        "table partition writes (one thread)",
        "table partition reads (one thread)",
        "threads-index partition writes (one shard)",
        "run_id-index partition writes (one run)",
        "table writes (per-table quota)",
        "table reads (per-table quota)",
        "run_id-index writes (per-index quota)",
        "threads-index writes (per-index quota)",
        "S3 PUT (a new bucket's one partition)",
        "S3 GET (a new bucket's one partition)",
    ]
    by_name = {row["name"]: row for row in p.headroom}
    return [by_name[n] for n in names if n in by_name]


def render_text(p: Plan) -> str:
    """The plan as the CLI prints it."""
    lines = [
        f"workload: {p.workload.steps_per_second:,.0f} steps/s over {p.workload.active_threads:,} threads"
    ]
    lines.append("hottest partitions (units/s):")
    for name, row in p.hottest.items():
        lines.append("  " + name + ": " + ", ".join(f"{k} {v:,.1f}" for k, v in row.items()))
    lines.append("totals (units/s):")
    for name, row in p.totals.items():
        lines.append(
            f"  {name}: write {row['write_units_per_second']:,.1f}, read {row['read_units_per_second']:,.1f}"
        )
    lines.append("s3: " + ", ".join(f"{k} {v:,.1f}" for k, v in p.s3.items()))
    lines.append(f"maintenance lambda: concurrency {p.lambdas['concurrency']:,.2f}")
    lines.append(
        "monthly cost (USD, us-east-1): " + ", ".join(f"{k} {v:,.2f}" for k, v in p.monthly_cost.items())
    )
    lines.append("headroom (limit / load), least first:")
    for row in p.headroom:
        head = "unbounded" if row["headroom"] == math.inf else f"{row['headroom']:,.2f}x"
        note = " (adjustable quota)" if row["adjustable"] else ""
        lines.append(f"  {head:>12}  {row['name']}: {row['load']:,.1f} of {row['limit']:,.0f}{note}")
    first = p.first_limit
    hard = p.first_hard_limit
    lines.append(f"first limit: {first['name']} (headroom {first['headroom']})")
    lines.append(f"first limit no quota raise lifts: {hard['name']} (headroom {hard['headroom']})")
    return "\n".join(lines)
