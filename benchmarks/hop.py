"""The I/O thread's hop (issue 16, target 4): what one call pays for leaving the caller's loop.

``python -m benchmarks.hop`` starts a moto server in its own process and
measures, with the async saver in both modes (``io_thread=False``: requests
on the caller's loop; ``io_thread=True``: on the saver's I/O thread),
alternating the modes round by round so that machine noise hits both:

1. the bare hop: ``IOThread.run`` of a coroutine that returns at once, from
   an ``asyncio.run`` loop (submit, run there, wake the caller);
2. single-call latency, one call at a time: ``aget_tuple`` of a small
   thread and ``aput`` of a small checkpoint, p50 and p90 over ``--calls``.

The async workload (``--workloads async``) gives the loop lag and throughput
of both modes under load; this gives the price a lone call pays.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid
from typing import Any

from benchmarks.orchestrate import AWS_ENV, moto_server
from benchmarks.workloads import _percentile

__all__ = ["measure"]


async def _bare_hop(n: int) -> list[float]:
    from langgraph.checkpoint.dynamodb._engine.io_thread import IOThread

    io = IOThread()

    async def nothing() -> None:
        return None

    try:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            await io.run(nothing())
            out.append(time.perf_counter() - t0)
        return out
    finally:
        await asyncio.to_thread(io.stop)


async def _calls(table: str, io_thread: bool, n: int) -> dict[str, list[float]]:
    from langgraph.checkpoint.base import empty_checkpoint

    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

    times: dict[str, list[float]] = {"aget_tuple": [], "aput": []}
    async with AsyncDynamoDBSaver(table_name=table, io_thread=io_thread) as saver:
        cfg: Any = {"configurable": {"thread_id": f"hop-{uuid.uuid4().hex[:8]}", "checkpoint_ns": ""}}
        for i in range(n + 5):  # the first few warm connections up
            cp = empty_checkpoint()
            cp["channel_values"] = {"messages": f"turn {i}"}
            cp["channel_versions"] = {"messages": str(i + 1)}
            t0 = time.perf_counter()
            cfg = await saver.aput(cfg, cp, {"step": i}, {"messages": str(i + 1)})
            t1 = time.perf_counter()
            await saver.aget_tuple(cfg)
            t2 = time.perf_counter()
            if i >= 5:
                times["aput"].append(t1 - t0)
                times["aget_tuple"].append(t2 - t1)
    return times


def measure(calls: int = 200, rounds: int = 4) -> dict[str, Any]:
    """Run both measurements against a fresh moto server; times in milliseconds."""
    os.environ.update(AWS_ENV)
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    hop = asyncio.run(_bare_hop(2000))
    per_mode: dict[str, dict[str, list[float]]] = {
        m: {"aget_tuple": [], "aput": []} for m in ("on-loop", "io-thread")
    }
    with moto_server() as endpoint:
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        table = f"hop-{uuid.uuid4().hex[:8]}"
        DynamoDBSaver(table_name=table).setup()
        for r in range(rounds):
            modes = [False, True] if r % 2 == 0 else [True, False]
            for io_thread in modes:
                got = asyncio.run(_calls(table, io_thread, calls // rounds))
                for k, v in got.items():
                    per_mode["io-thread" if io_thread else "on-loop"][k].extend(v)
        os.environ.pop("AWS_ENDPOINT_URL", None)

    def ms(values: list[float]) -> dict[str, float]:
        return {
            "p50": round(statistics.median(values) * 1e3, 3),
            "p90": round(_percentile(values, 90) * 1e3, 3),
            "n": len(values),
        }

    return {
        "bare_hop_ms": ms(hop),
        "calls_ms": {mode: {k: ms(v) for k, v in d.items()} for mode, d in per_mode.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=200, help="calls of each kind per mode")
    ap.add_argument("--rounds", type=int, default=4, help="alternations of the two modes")
    args = ap.parse_args()
    print(json.dumps(measure(args.calls, args.rounds), indent=2))


if __name__ == "__main__":
    main()
