"""Load benchmark: throughput under concurrency, and how cost grows with the work.

``python -m benchmarks.load`` (``make bench`` runs it through the
orchestrator, against the same moto server subprocess) drives our
``AsyncDynamoDBSaver`` through its public API only, in two parts:

* **Throughput.** ``threads`` threads (1,000) are handed out to ``workers``
  (32) concurrent asyncio workers. Each thread gets an agent turn as
  LangGraph makes it (``aget_tuple``, ``aput`` of the input checkpoint,
  ``aput_writes``, ``aput`` of the loop checkpoint) and one ``alist``.
  Reported: operations per second, and p50/p99 latency per operation.
* **Growth.** For each size N (1, 10, 100, 1,000 checkpoints) one thread is
  built with N checkpoints (each with one pending write), then, one call at
  a time so that the meter's counters belong to that call: ``aget_tuple``
  (latest), ``alist`` (everything, and ``limit=10``), ``acopy_thread`` to a
  new thread, ``aprune`` of that copy (``keep_latest``), ``aput`` onto the
  thread, and ``adelete_thread``. Requests and capacity units are counted
  deterministically (``benchmarks.counting``); times are medians of
  ``repeats`` calls where the call can be repeated (reads and ``aput``).
  :func:`classify` turns each series into flat / linear / paged, and the
  report compares that with what each operation should do (``copy_thread``,
  ``prune`` and ``delete_thread`` against the items they copy or delete,
  the others against N).

Times include the modelled latency (8 ms per DynamoDB request, 25 ms per S3
request) injected by the meter, as in the other workloads; building a thread
is not measured and runs without it. Our saver only: the reference's
``list`` and ``delete_thread`` cost a request per checkpoint, and 1,000-item
threads would take it hours.

``--quick`` runs tiny sizes (a smoke test of a few seconds), starting its
own moto server unless ``AWS_ENDPOINT_URL`` is set.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.counting import LatencyModel, Meter, Snapshot
from benchmarks.sides import REGION
from benchmarks.workloads import _checkpoint, _percentile, user_message

__all__ = ["EXPECTED", "LoadParams", "classify", "main", "run_load"]


@dataclass
class LoadParams:
    """Sizes of the load benchmark. The defaults are what ``make bench`` runs."""

    threads: int = 1000
    workers: int = 32
    turns: int = 1
    sizes: tuple[int, ...] = (1, 10, 100, 1000)
    repeats: int = 5

    @classmethod
    def quick(cls) -> LoadParams:
        """Sizes for the smoke test."""
        return cls(threads=24, workers=8, turns=1, sizes=(1, 10, 50), repeats=2)


#: Operations of the growth part, and how each should grow with N.
#: ``flat``: the same requests and units whatever the thread holds;
#: ``paged``: requests grow by one per page of items (never one per item);
#: ``linear``: cost proportional to the items the call deletes or copies.
EXPECTED: dict[str, str] = {
    "get_tuple": "flat",
    "put": "flat",
    "list[limit=10]": "flat",
    "list[all]": "paged",
    "copy_thread": "linear",
    "prune": "linear",
    "delete_thread": "linear",
}


def classify(points: list[tuple[int, float]], *, per_item: list[tuple[int, float]] | None = None) -> str:
    """How a cost grows with N: ``flat``, ``sublinear``, ``linear`` or ``superlinear``.

    ``points`` are ``(N, cost)`` pairs. Flat: every cost within 10% of the
    smallest. Otherwise the growth is the log-log slope between the two
    largest N (constant per-call overheads dominate small N; the question is
    how the cost behaves as N grows): 0.75-1.25 is linear.

    Example:
        >>> classify([(1, 2), (10, 2), (100, 2)])
        'flat'
        >>> classify([(1, 3), (10, 4), (100, 13), (1000, 121)])
        'linear'
        >>> classify([(10, 1), (100, 100)])
        'superlinear'
    """
    pts = sorted((n, c) for n, c in points if n > 0)
    if len(pts) < 2:
        raise ValueError("classify needs at least two sizes")
    low = min(c for _, c in pts)
    if low > 0 and all(c <= low * 1.1 for _, c in pts):
        return "flat"
    if low <= 0 and all(c == low for _, c in pts):
        return "flat"
    (n1, c1), (n2, c2) = pts[-2], pts[-1]
    if c1 <= 0 or c2 <= 0:
        return "superlinear" if c2 > c1 else "flat"
    slope = math.log(c2 / c1) / math.log(n2 / n1)
    if slope < 0.25:
        return "flat" if c2 <= c1 * 1.1 else "sublinear"
    if slope < 0.75:
        return "sublinear"
    if slope <= 1.25:
        return "linear"
    return "superlinear"


def verdict(op: str, requests: str, units: str) -> bool:
    """Whether an operation's measured growth (requests, units) is what :data:`EXPECTED` asks."""
    want = EXPECTED[op]
    if want == "flat":
        return requests == "flat" and units == "flat"
    if want == "paged":
        # Requests grow with pages (linear in N at a fixed page size, or flat
        # while everything fits one page), units with the bytes read.
        return requests in ("flat", "linear", "sublinear") and units in ("linear", "sublinear", "flat")
    return requests in ("linear", "sublinear", "flat") and units == "linear"


# ------------------------------------------------------------------ helpers


def _config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        cfg["checkpoint_id"] = checkpoint_id
    return {"configurable": cfg}


class _Thread:
    """One thread being written: its last config and channel versions."""

    def __init__(self, saver: Any, thread: str) -> None:
        self.saver = saver
        self.thread = thread
        self.config: dict[str, Any] = _config(thread)
        self.versions: dict[str, Any] = {}
        self.step = 0

    async def put(self) -> None:
        cp, new = _checkpoint(self.saver, {"messages": [user_message(self.step)]}, self.versions)
        self.versions = dict(cp["channel_versions"])
        run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"load/{self.thread}/{self.step}"))
        md = {"source": "loop", "step": self.step, "parents": {}, "run_id": run_id}
        self.config = await self.saver.aput(self.config, cp, md, new)
        self.step += 1

    async def put_writes(self) -> None:
        await self.saver.aput_writes(
            self.config, [("messages", [user_message(self.step)])], f"task-{self.step}"
        )


def _progress(text: str) -> None:
    print(f"[benchmarks.load] {text}", file=sys.stderr, flush=True)


def _counts(delta: Snapshot) -> dict[str, Any]:
    d = delta.to_dict()
    return {
        "requests": d["ddb_requests"] + d["s3_requests"],
        "by_operation": d["requests"],
        "rcu": d["rcu"],
        "wcu": d["wcu"] + d["gsi_wcu"],
        "units": d["rcu"] + d["wcu"] + d["gsi_wcu"],
        "ddb_items_read": d["ddb_items_read"],
        "bytes_read": d["ddb_read_bytes"] + d["s3_get_bytes"],
        "bytes_written": d["ddb_write_bytes"] + d["s3_put_bytes"],
    }


async def _measure(
    meter: Meter, fn: Callable[[], Awaitable[Any]], repeats: int = 1
) -> tuple[dict[str, Any], Any]:
    """Counts of the first call, median seconds over ``repeats`` calls; returns (entry, first result)."""
    seconds: list[float] = []
    counts: dict[str, Any] = {}
    first: Any = None
    for i in range(repeats):
        before = meter.snapshot()
        t0 = time.perf_counter()
        out = await fn()
        seconds.append(time.perf_counter() - t0)
        if i == 0:
            counts, first = _counts(meter.snapshot() - before), out
        elif _counts(meter.snapshot() - before)["requests"] != counts["requests"]:
            counts["varied"] = True  # a repeat made other requests: reported, never hidden
    return {**counts, "seconds": statistics.median(seconds), "repeats": repeats}, first


# --------------------------------------------------------------- the parts


async def _throughput(saver: Any, meter: Meter, p: LoadParams, prefix: str) -> dict[str, Any]:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(p.threads):
        queue.put_nowait(i)
    latencies: dict[str, list[float]] = {}

    async def timed(op: str, aw: Awaitable[Any]) -> Any:
        t0 = time.perf_counter()
        out = await aw
        latencies.setdefault(op, []).append(time.perf_counter() - t0)
        return out

    async def worker() -> None:
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            th = _Thread(saver, f"{prefix}-t{i:05d}")
            for _ in range(p.turns):
                await timed("get_tuple", saver.aget_tuple(_config(th.thread)))
                await timed("put", th.put())
                await timed("put_writes", th.put_writes())
                await timed("put", th.put())
            await timed("list", _alist(saver, _config(th.thread)))

    before = meter.snapshot()
    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(p.workers)))
    wall = time.perf_counter() - t0
    delta = _counts(meter.snapshot() - before)
    ops = sum(len(v) for v in latencies.values())
    return {
        "threads": p.threads,
        "workers": p.workers,
        "turns_per_thread": p.turns,
        "wall_s": wall,
        "operations": ops,
        "ops_per_s": ops / wall if wall else 0.0,
        "turns_per_s": p.threads * p.turns / wall if wall else 0.0,
        "per_operation": {
            op: {
                "calls": len(v),
                "p50_s": _percentile(v, 50),
                "p99_s": _percentile(v, 99),
                "max_s": max(v),
            }
            for op, v in sorted(latencies.items())
        },
        "totals": delta,
        "requests_per_thread": delta["requests"] / p.threads,
    }


async def _alist(saver: Any, cfg: dict[str, Any], limit: int | None = None) -> int:
    return len([t async for t in saver.alist(cfg, limit=limit)])


async def _one_size(
    saver: Any, meter: Meter, p: LoadParams, thread: str, n: int
) -> dict[str, dict[str, Any]]:
    """Every growth measurement on one thread of ``n`` checkpoints: operation -> point."""
    out: dict[str, dict[str, Any]] = {}
    th = _Thread(saver, thread)
    with meter.latency_paused():  # building the thread is not what is measured
        for _ in range(n):
            await th.put()
            await th.put_writes()
    cfg = _config(th.thread)
    entry, got = await _measure(meter, lambda: saver.aget_tuple(cfg), p.repeats)
    assert (
        got is not None
        and got.config["configurable"]["checkpoint_id"] == th.config["configurable"]["checkpoint_id"]
    )
    out["get_tuple"] = {"n": n, **entry}
    entry, count = await _measure(meter, lambda: _alist(saver, cfg), p.repeats)
    assert count == n, (count, n)
    out["list[all]"] = {"n": n, "items": count, **entry}
    entry, count = await _measure(meter, lambda: _alist(saver, cfg, 10), p.repeats)
    out["list[limit=10]"] = {"n": n, "items": count, **entry}
    copy = f"{th.thread}-copy"
    items = meter.storage()["ddb_items"]
    entry, _ = await _measure(meter, lambda: saver.acopy_thread(th.thread, copy))
    out["copy_thread"] = {"n": n, "items": meter.storage()["ddb_items"] - items, **entry}
    items = meter.storage()["ddb_items"]
    entry, result = await _measure(meter, lambda: saver.aprune([copy], strategy="keep_latest"))
    out["prune"] = {
        "n": n,
        "items": items - meter.storage()["ddb_items"],
        "checkpoints_deleted": result.checkpoints_deleted,
        **entry,
    }
    entry, _ = await _measure(meter, th.put, p.repeats)
    out["put"] = {"n": n, **entry}
    items = meter.storage()["ddb_items"]
    entry, _ = await _measure(meter, lambda: saver.adelete_thread(th.thread))
    out["delete_thread"] = {"n": n, "items": items - meter.storage()["ddb_items"], **entry}
    with meter.latency_paused():
        await saver.adelete_thread(copy)
    return out


async def _growth(saver: Any, meter: Meter, p: LoadParams, prefix: str) -> dict[str, Any]:
    series: dict[str, list[dict[str, Any]]] = {op: [] for op in EXPECTED}
    for n in p.sizes:
        t0 = time.perf_counter()
        for op, point in (await _one_size(saver, meter, p, f"{prefix}-g{n}", n)).items():
            series[op].append(point)
        _progress(f"growth: N={n} measured in {time.perf_counter() - t0:.1f} s")
    growth: dict[str, Any] = {}
    for op, points in series.items():
        # Linear means linear in what the call deletes or copies (a prune of a
        # 1-checkpoint thread deletes nothing), so those grow against items.
        by = "items" if EXPECTED[op] == "linear" else "n"
        pts = [x for x in points if x[by] > 0]
        if len(pts) < 2:
            raise ValueError(f"{op}: fewer than two sizes with {by} > 0; use more sizes")
        req = classify([(x[by], x["requests"]) for x in pts])
        units = classify([(x[by], x["units"]) for x in pts])
        growth[op] = {
            "points": points,
            "against": "items" if by == "items" else "checkpoints",
            "requests_growth": req,
            "units_growth": units,
            "time_growth": classify([(x[by], x["seconds"]) for x in pts]),
            "expected": EXPECTED[op],
            "ok": verdict(op, req, units),
        }
    return growth


async def _run(table: str, bucket: str, p: LoadParams, latency: LatencyModel | None) -> dict[str, Any]:
    import boto3

    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

    plain = boto3.client("dynamodb", region_name=REGION)
    meter = Meter(latency=latency)
    meter.mirror.add_table(plain.describe_table(TableName=table)["Table"])
    plain.close()
    prefix = f"load-{uuid.uuid4().hex[:6]}"
    async with AsyncDynamoDBSaver(table_name=table, bucket_name=bucket, region_name=REGION) as saver:
        for client in saver.clients.values():  # the meter's hooks; the workload uses the public API
            if client is not None:
                meter.attach(client)
        t0 = time.perf_counter()
        throughput = await _throughput(saver, meter, p, prefix)
        t1 = time.perf_counter()
        _progress(f"throughput: {p.threads} threads in {t1 - t0:.1f} s")
        growth = await _growth(saver, meter, p, prefix)
        t2 = time.perf_counter()
    return {
        "params": {**asdict(p), "sizes": list(p.sizes)},
        "latency": None if latency is None else {"dynamodb": latency.dynamodb, "s3": latency.s3},
        "throughput": throughput,
        "growth": growth,
        "seconds": {"throughput": t1 - t0, "growth": t2 - t1},
    }


def run_load(
    table: str, bucket: str, params: LoadParams | None = None, latency: LatencyModel | None = None
) -> dict[str, Any]:
    """Run both parts against an existing table and bucket (``AWS_ENDPOINT_URL`` must be set)."""
    return asyncio.run(_run(table, bucket, params or LoadParams(), latency))


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m benchmarks.load [--quick] [--table T --bucket B] [--out F]``."""
    from benchmarks.orchestrate import single_part_cli

    result = single_part_cli(
        "python -m benchmarks.load",
        __doc__,
        "bench-load",
        lambda table, bucket, quick, latency: run_load(
            table, bucket, LoadParams.quick() if quick else LoadParams(), latency
        ),
        argv,
    )
    tp = result["throughput"]
    print(
        f"throughput: {tp['threads']} threads, {tp['workers']} workers: {tp['ops_per_s']:.0f} ops/s, "
        f"{tp['requests_per_thread']:.1f} requests per thread"
    )
    for op, s in tp["per_operation"].items():
        print(f"  {op:12s} p50 {s['p50_s'] * 1000:7.1f} ms  p99 {s['p99_s'] * 1000:7.1f} ms")
    for op, g in result["growth"].items():
        pts = ", ".join(
            f"N={x['n']}: {x['requests']} req {x['units']:g} u {x['seconds'] * 1000:.0f} ms"
            for x in g["points"]
        )
        print(
            f"  {op:15s} {g['requests_growth']:>9s}/{g['units_growth']:<9s} (want {g['expected']}) ok={g['ok']}: {pts}"
        )
    return 0 if all(g["ok"] for g in result["growth"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
