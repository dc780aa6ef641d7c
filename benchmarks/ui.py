"""Inspector benchmark: page views of ``langgraph-dynamodb ui`` on a 10,000-checkpoint thread.

``python -m benchmarks.ui`` (``make bench`` runs it through the orchestrator,
against the same moto server subprocess) builds one thread of ``checkpoints``
(10,000) checkpoints with the saver's own ``put`` in a loop (a small state:
one short string channel that changes every step; the build is timed but
not metered) and ``threads`` (100) one-checkpoint threads, then serves the
inspector on them (``cli._ui.serve``, the code behind ``langgraph-dynamodb ui``)
and times page views over HTTP, each ``repeats`` times:

* the thread page, newest page (50 checkpoints), and an older page in the
  middle of the thread (``before=``): server-side paging, so neither reads
  the 10,000 checkpoints;
* a checkpoint page of the big thread (state, diff against its parent,
  pending writes);
* the threads page (25 threads with counts, sizes and interrupt state), and
  a prefix search that finds the big thread alone (its row reads one 1 MB
  Query page of it).

Requests, read capacity units and items read per page view are counted
by the meter (``benchmarks.counting``) and are deterministic; times are
medians and include the modelled latency (8 ms per DynamoDB request, 25 ms
per S3 request) as in the other workloads, and moto's own time, which grows
with what the table holds (DynamoDB's does not). ``cpu_s`` is the CPU time of
this process (the inspector's server, boto3 and the HTTP client) per view:
the inspector's own cost, whatever the endpoint. The savers keep thread heads
(``ttl`` set), as the stack's do: the threads page reads the threads index.

``--quick`` runs tiny sizes (a smoke test), starting its own moto server
unless ``--table`` is given.
"""

from __future__ import annotations

import statistics
import sys
import time
import urllib.parse
import urllib.request
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.counting import LatencyModel, Meter
from benchmarks.workloads import _checkpoint

__all__ = ["UiParams", "main", "run_ui"]


@dataclass
class UiParams:
    """Sizes of the inspector benchmark. The defaults are what ``make bench`` runs."""

    checkpoints: int = 10_000
    threads: int = 100
    repeats: int = 5

    @classmethod
    def quick(cls) -> UiParams:
        return cls(checkpoints=300, threads=10, repeats=2)


def _build_thread(saver: Any, thread_id: str, n: int) -> str:
    """``n`` checkpoints in one chain, each with a new version of one small channel; returns the last id."""
    parent: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    versions: dict[str, Any] = {}
    for step in range(n):
        cp, new = _checkpoint(saver, {"note": f"step {step}: a small state"}, versions)
        versions = dict(cp["channel_versions"])
        parent = saver.put(parent, cp, {"source": "loop", "step": step, "parents": {}}, new)
    return str(parent["configurable"]["checkpoint_id"])


def _view(base: str, path: str, meter: Meter, repeats: int, headers: dict[str, str]) -> dict[str, Any]:
    """GET ``path`` ``repeats`` times: the median time, and the meter's counts of the first view."""
    times: list[float] = []
    cpu: list[float] = []
    first: dict[str, Any] = {}
    for i in range(repeats):
        before = meter.snapshot()
        began, cpu0 = time.perf_counter(), time.process_time()
        with urllib.request.urlopen(
            urllib.request.Request(base + path, headers=headers), timeout=300
        ) as resp:
            body = resp.read()
            status = resp.status
        times.append(time.perf_counter() - began)
        cpu.append(time.process_time() - cpu0)
        if status != 200:
            raise RuntimeError(f"GET {path}: HTTP {status}")
        if i == 0:
            d = meter.snapshot() - before
            first = {
                "requests": sum(d.requests.values()),
                "by_operation": dict(sorted(d.requests.items())),
                "rcu": round(d.rcu, 1),
                "items_read": d.ddb_items_read,
                "bytes_sent": len(body),
            }
    return {
        "path": path,
        "seconds": statistics.median(times),
        "cpu_s": statistics.median(cpu),
        "runs": times,
        **first,
    }


def run_ui(
    table: str, bucket: str, params: UiParams | None = None, latency: LatencyModel | None = None
) -> dict[str, Any]:
    """Build the threads, serve the inspector, time the page views (``AWS_ENDPOINT_URL`` must be set)."""
    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from langgraph.checkpoint.dynamodb.cli._ui import serve

    p = params or UiParams()
    big = f"big-{uuid.uuid4().hex[:6]}"
    with DynamoDBSaver(
        table_name=table, bucket_name=bucket, region_name="us-east-1", ttl=30 * 86_400
    ) as saver:
        began = time.perf_counter()
        latest = _build_thread(saver, big, p.checkpoints)
        build_s = time.perf_counter() - began
        for i in range(p.threads):
            _build_thread(saver, f"small-{i:04d}", 1)
        meter = Meter(latency=latency)
        # The meter's hooks on the saver's clients; the inspector uses the saver as the CLI does.
        for client in saver.clients.values():
            if client is not None:
                meter.attach(client)
        server = serve(saver)
        base = server.url.rstrip("/")
        try:
            middle = _nth_id(saver, big, p.checkpoints // 2)
            q = urllib.parse.urlencode
            views = {
                "thread page (newest 50)": _view(
                    base, "/thread?" + q({"id": big, "marks": "1"}), meter, p.repeats, server.auth_headers
                ),
                "thread page (older 50, mid-thread)": _view(
                    base,
                    "/thread?" + q({"id": big, "before": middle, "marks": "1"}),
                    meter,
                    p.repeats,
                    server.auth_headers,
                ),
                "checkpoint page": _view(
                    base,
                    "/checkpoint?" + q({"thread": big, "id": latest}),
                    meter,
                    p.repeats,
                    server.auth_headers,
                ),
                "threads page (25 threads)": _view(base, "/", meter, p.repeats, server.auth_headers),
                "threads page (prefix: the big thread)": _view(
                    base, "/?" + q({"prefix": "big-"}), meter, p.repeats, server.auth_headers
                ),
            }
        finally:
            server.shutdown()
            server.server_close()
    return {
        "params": asdict(p),
        "build": {"checkpoints": p.checkpoints, "seconds": build_s, "puts_per_s": p.checkpoints / build_s},
        "views": views,
        "latency_model": asdict(latency) if latency else None,
    }


def _nth_id(saver: Any, thread_id: str, n: int) -> str:
    """The id of the ``n``-th newest checkpoint (set-up, not measured: the meter is paused by the caller's order)."""
    for i, t in enumerate(
        saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}, limit=n + 1)
    ):
        if i == n:
            return str(t.config["configurable"]["checkpoint_id"])
    raise RuntimeError("thread too short")


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m benchmarks.ui [--quick] [--table T --bucket B] [--out F]``."""
    from benchmarks.orchestrate import single_part_cli

    result = single_part_cli(
        "python -m benchmarks.ui",
        __doc__,
        "bench-ui",
        lambda table, bucket, quick, latency: run_ui(
            table, bucket, UiParams.quick() if quick else UiParams(), latency
        ),
        argv,
    )
    b = result["build"]
    print(f"built {b['checkpoints']:,} checkpoints in {b['seconds']:.1f} s ({b['puts_per_s']:.0f} put/s)")
    for name, v in result["views"].items():
        print(
            f"  {name:36s} {v['seconds'] * 1000:8.0f} ms (cpu {v['cpu_s'] * 1000:5.0f} ms)  {v['requests']:3d} requests  {v['rcu']:7.1f} RCU  "
            f"{v['items_read']:5d} items  {v['bytes_sent']:8,d} B  {v['by_operation']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
