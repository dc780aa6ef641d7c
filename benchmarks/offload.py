"""The event loop (issue 16, target 4): what packing costs by size, and the lag it causes on the loop.

``python -m benchmarks.offload`` measures, without AWS calls:

1. the CPU of packing and unpacking one ``messages`` value (the saver's
   default serializer and codec, ``saver.payloads.pack``/``saver.payloads.unpack``) by
   serialized size, for chat text and for poorly compressible tool outputs,
   and what a hop to the loop's default executor and back costs: where the
   two cross is where offloading pays (``ops.OFFLOAD_MIN_BYTES``);
2. the event-loop lag that packing alone causes: ``tasks`` concurrent
   writers each pack a large state ``rounds`` times through the async
   driver (``Compute``, as ``aput`` does) while a 5 ms ticker records how
   late it wakes, with the offload on (the default) and off (threshold
   raised above every payload), medians of 3 runs.

The verdict of target 4 itself comes from the ``async`` workload (both
savers, same run): :func:`loop_verdict`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from benchmarks.workloads import _percentile, big_text, reply_text
from langgraph.checkpoint.dynamodb._engine.fairness import DEFAULT_MAX_IN_FLIGHT

__all__ = ["SIZES", "loop_section", "loop_verdict", "measure"]

#: Where the measured payloads belong (only an encrypting saver checks it).
BIND = ("bench", ("value", "", "messages", "1"))

#: Serialized sizes measured (bytes).
SIZES = [2048, 4096, 8192, 16384, 32768, 65536, 262144]


def _messages(total: int, kind: str) -> list[Any]:
    """Messages of about ``total`` bytes of content: chat replies, or one tool output."""
    if kind == "tool":
        return [HumanMessage(content="run the tool", id="u0"), AIMessage(content=big_text(0, total), id="a0")]
    out: list[Any] = []
    n = 0
    while n < total:
        content = reply_text(len(out))
        out.append((AIMessage if len(out) % 2 else HumanMessage)(content=content, id=f"m{len(out)}"))
        n += len(content)
    return out


def _best(fn: Any, repeats: int) -> float:
    fn()
    return min(_timed(fn) for _ in range(repeats))


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


async def _hop_s(samples: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, int)  # start the pool's thread
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        await loop.run_in_executor(None, int)
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "p90_s": _percentile(times, 90)}


async def _lag(saver: Any, value: list[Any], tasks: int, rounds: int) -> dict[str, float]:
    from langgraph.checkpoint.dynamodb._engine.drivers import AsyncDriver, Clients
    from langgraph.checkpoint.dynamodb._engine.ops import compute, size_hint

    driver = AsyncDriver(Clients())
    lags: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        due = loop.time() + 0.005
        while not stop.is_set():
            await asyncio.sleep(max(0.0, due - loop.time()))
            now = loop.time()
            lags.append(now - due)
            due = now + 0.005

    def op() -> Any:
        return (yield from compute(saver.payloads.pack, value, "bench", BIND, size=size_hint([value])))

    async def writer() -> None:
        for _ in range(rounds):
            await driver.run(op())
            await asyncio.sleep(0.02)  # a writer between two checkpoints

    tick = asyncio.create_task(ticker())
    t0 = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(tasks)))
    wall = time.perf_counter() - t0
    stop.set()
    await tick
    return {
        "p50_s": _percentile(lags, 50),
        "p99_s": _percentile(lags, 99),
        "max_s": max(lags),
        "packs_per_s": tasks * rounds / wall,
    }


def measure(*, repeats: int = 5, tasks: int = 4, rounds: int = 60, lag_kb: int = 64) -> dict[str, Any]:
    """Costs by size, the executor hop, and packing's loop lag with the offload on and off."""
    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from langgraph.checkpoint.dynamodb._engine import ops

    saver = DynamoDBSaver(table_name="unused", region_name="us-east-1")
    costs = []
    for kind in ("chat", "tool"):
        for size in SIZES:
            value = _messages(size, kind)
            packed = saver.payloads.pack(value, "bench", BIND)
            costs.append(
                {
                    "kind": kind,
                    "serialized_bytes": len(saver.serde.dumps_typed(value)[1]),
                    "packed_bytes": len(packed),
                    "pack_s": _best(lambda v=value: saver.payloads.pack(v, "bench", BIND), repeats),
                    "unpack_s": _best(lambda p=packed: saver.payloads.unpack(p, "bench", BIND), repeats),
                }
            )
    hop = asyncio.run(_hop_s(200))
    value = _messages(lag_kb * 1024, "chat")
    lag: dict[str, Any] = {
        "tasks": tasks,
        "rounds": rounds,
        "value_bytes": len(saver.serde.dumps_typed(value)[1]),
    }
    default = ops.OFFLOAD_MIN_BYTES
    for label, threshold in (("offload", default), ("on the loop", 1 << 62)):
        ops.OFFLOAD_MIN_BYTES = threshold
        try:
            runs = [asyncio.run(_lag(saver, value, tasks, rounds)) for _ in range(3)]
        finally:
            ops.OFFLOAD_MIN_BYTES = default
        # Medians of 3 runs: a busy machine adds lag of its own to single runs.
        lag[label] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    return {"threshold_bytes": default, "costs": costs, "hop": hop, "lag": lag}


# ------------------------------------------------------------------ report


def _async_medians(res: dict[str, Any], side: str) -> dict[str, float] | None:
    runs = (res.get("runs", {}).get("async") or {}).get(side) or []
    if not runs:
        return None
    return {k: statistics.median(r[k] for r in runs) for k in ("lag_p99_s", "lag_max_s", "turns_per_s")}


def loop_verdict(res: dict[str, Any]) -> tuple[str, str] | None:
    """(verdict, measured) of target 4 from the ``async`` workload, or ``None`` without both sides."""
    o, r = _async_medians(res, "ours"), _async_medians(res, "ref")
    if not o or not r:
        return None
    speed = o["turns_per_s"] / max(1e-9, r["turns_per_s"])
    ok = o["lag_p99_s"] <= r["lag_p99_s"] and speed >= 2
    iot = _async_medians(res, "ours-iothread")
    # Repetition i of each side ran in the same round: a paired count and the
    # spread say how much of the medians' difference is run-to-run noise.
    pairs = list(zip(res["runs"]["async"]["ours"], res["runs"]["async"]["ref"], strict=False))
    lower = sum(a["lag_p99_s"] <= b["lag_p99_s"] for a, b in pairs)
    spread = "; ".join(
        f"{name} {min(x['lag_p99_s'] for x in reps) * 1000:.1f}-{max(x['lag_p99_s'] for x in reps) * 1000:.1f} ms"
        for name, reps in (("ours", [a for a, _ in pairs]), ("reference", [b for _, b in pairs]))
    )
    other = (
        f"; with `io_thread=True` (requests on the saver's own loop thread): lag p99 "
        f"{iot['lag_p99_s'] * 1000:.1f} ms, {iot['turns_per_s']:.1f} turns/s"
        if iot
        else ""
    )
    return (
        "met" if ok else "not met",
        f"`async`, medians: lag p99 {o['lag_p99_s'] * 1000:.1f} ms vs the reference's "
        f"{r['lag_p99_s'] * 1000:.1f} ms ({o['lag_p99_s'] / max(1e-9, r['lag_p99_s']):.2f}x), at "
        f"{speed:.2f}x its throughput ({o['turns_per_s']:.1f} vs {r['turns_per_s']:.1f} turns/s); ours at or "
        f"below the reference in {lower} of {len(pairs)} paired repetitions (p99 per repetition: {spread}){other}; "
        "large payloads are packed off the loop (section below)",
    )


def loop_section(res: dict[str, Any]) -> list[str]:
    """The report's section on target 4: costs by size, the threshold, lag with and without offload."""
    m = res.get("offload")
    if not m:
        return []
    out = [
        "## The event loop (issue 16, target 4)",
        "",
        "`python -m benchmarks.offload`, no AWS calls. Packing (serialization and compression) and unpacking of "
        "one `messages` value with the saver's defaults, best of several runs, by serialized size; `chat` is "
        "chat text (compresses well), `tool` one poorly compressible tool output:",
        "",
        "| kind | serialized | packed | pack | unpack |",
        "|---|---|---|---|---|",
    ]
    for c in m["costs"]:
        out.append(
            f"| {c['kind']} | {c['serialized_bytes'] / 1024:.0f} KiB | {c['packed_bytes'] / 1024:.1f} KiB | "
            f"{c['pack_s'] * 1e6:,.0f} us | {c['unpack_s'] * 1e6:,.0f} us |"
        )
    hop = m["hop"]
    lag = m["lag"]
    on, off = lag["offload"], lag["on the loop"]
    out += [
        "",
        f"A hop to the loop's default executor and back costs {hop['median_s'] * 1e6:.0f} us (median; p90 "
        f"{hop['p90_s'] * 1e6:.0f} us). The async saver packs and unpacks a payload in that executor from "
        f"{m['threshold_bytes'] // 1024} KiB (`ops.OFFLOAD_MIN_BYTES`): below it the work costs about as much "
        "as the hop, above it it grows linearly while the hop does not. The sync saver packs in place, its "
        "requests unchanged.",
        "",
        f"Lag from packing alone: {lag['tasks']} tasks each pack a {lag['value_bytes'] / 1024:.0f} KiB state "
        f"{lag['rounds']} times through the async driver, 20 ms apart, with a 5 ms ticker (medians of 3 runs): "
        f"lag p50 / p99 / max {on['p50_s'] * 1000:.1f} / {on['p99_s'] * 1000:.1f} / {on['max_s'] * 1000:.0f} ms "
        f"with the offload, {off['p50_s'] * 1000:.1f} / {off['p99_s'] * 1000:.1f} / {off['max_s'] * 1000:.0f} ms "
        f"on the loop; {on['packs_per_s']:.0f} vs {off['packs_per_s']:.0f} packs/s. Serialization holds the GIL "
        "(LangChain messages go through Python hooks), so the loop still waits for it up to a switch interval "
        "(5 ms) at a time; compression releases it.",
        "",
        "In the `async` workload (small chat messages) packing is a few percent of the saver's CPU: most of it "
        "is aiobotocore's per-request work (serializing, signing, endpoint and user-agent building, response "
        "parsing, the connection), about a millisecond per request. What set the lag was answers arriving "
        "together: each one's parsing, decoding and the graph's next step ran back to back ahead of the "
        "ticker. The saver now hands the loop back between a request's CPU phases (its own packing apart from "
        "the caller's step; botocore's building, signing and sending as three callbacks, through `before-call` "
        "and `before-send` handlers on the clients it opens; parsing; decoding), and the tasks that passed the "
        "turn go on one per loop iteration, first come first served (`fairness.Turnstile`): a bare yield would "
        "let all of them run again in the same iteration, back to back. It opens its clients without "
        "botocore's parameter validation (7% of aiobotocore's per-request time under cProfile), and keeps at "
        f"most `max_in_flight` ({DEFAULT_MAX_IN_FLIGHT}) requests per service on the wire, waiting for a slot "
        "before the request is built (moto's CPU bounds the throughput here; "
        f"{DEFAULT_MAX_IN_FLIGHT} requests of 5 ms allow {DEFAULT_MAX_IN_FLIGHT * 200:,} a second on AWS). "
        "Measured with the workload (paired runs): the turnstile cut p99 lag by about a fifth (6 of 6 pairs); "
        "with it, no bound gave 5.3 ms where it had given 10, and 8 kept the lag of 5 with about 7% more "
        "throughput. `io_thread=True` runs each operation on an event loop of the saver's own in a dedicated "
        "thread (a hop of under 0.1 ms per call, `python -m benchmarks.hop`); its lag is higher than the "
        "default's, since the two threads share the GIL (the `async` table above has both). "
        "The offload keeps large states from stalling either loop.",
        "",
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the measurement as JSON (``--out``: also write it there)."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.offload", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", help="also write the JSON result here")
    args = ap.parse_args(argv)
    res = measure(repeats=args.repeats)
    text = json.dumps(res, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
