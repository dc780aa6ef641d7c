"""A process that runs (or resumes) a multi-step parallel graph, to be SIGKILLed.

    python -m tests.reliability.crash_worker run|resume --table T --bucket B --thread X
        [--mode sync|async] [--durability sync|async] [--barrier 0|1] [--log FILE]
        [--delay SECONDS] [--kill-after-request N]

``run`` prints ``READY`` once its saver is set up, then invokes the graph;
the test kills it at a random moment. ``--kill-after-request N`` makes the
process SIGKILL itself right after the N-th AWS response it receives
(the request was applied, nothing after it happened): crashes at exact
request boundaries, e.g. between a payload upload and the item that would
have pointed to it. ``resume`` finishes the thread (re-sends the input if it
was never recorded, else ``invoke(None)``) and prints ``DONE``.

Both append ``exec <task_id> <node>`` (a node starts) and ``saved <task_id>``
(its ``put_writes`` returned) to ``--log`` with single ``os.write`` calls on
an ``O_APPEND`` descriptor, so the lines survive a SIGKILL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Any

from tests.reliability.workloads import Tracker, fanout_graph

#: The crash workload: 3 rounds of plan -> 3 parallel workers -> merge, with
#: values large enough for blob items and S3 objects.
GRAPH_KW: dict[str, Any] = {"width": 3, "rounds": 3, "size": 1500}
SAVER_KW: dict[str, Any] = {"inline_threshold": 128, "s3_threshold": 1024}
INPUT: dict[str, Any] = {"items": []}


def build_graph(delay: float = 0.0, barrier: bool = True) -> Any:
    return fanout_graph(**GRAPH_KW, delay=delay, barrier=barrier)


class FileTracker(Tracker):
    """A ``Tracker`` that also appends every event to a file, crash-safe."""

    def __init__(self, path: str | None) -> None:
        super().__init__()
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else None

    def _write(self, line: str) -> None:
        if self.fd is not None:
            os.write(self.fd, (line + "\n").encode())

    def on_chain_start(self, *args: Any, **kwargs: Any) -> None:
        n = len(self.events)
        super().on_chain_start(*args, **kwargs)
        for kind, task_id, node in self.events[n:]:
            self._write(f"{kind} {task_id} {node}")

    def saved(self, task_id: str, writes: Any) -> None:
        n = len(self.events)
        super().saved(task_id, writes)
        if len(self.events) > n:
            self._write(f"saved {task_id}")


def read_log(path: str) -> list[tuple[str, str, str]]:
    events = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                events.append((parts[0], parts[1], parts[2] if len(parts) > 2 else ""))
    return events


def _kill_after(n: int) -> Any:
    seen = {"n": 0}

    def after_call(**_: Any) -> None:
        seen["n"] += 1
        if seen["n"] >= n:
            os.kill(os.getpid(), signal.SIGKILL)

    return after_call


def _attach_killer(saver: Any, n: int | None) -> None:
    if not n:
        return
    hook = _kill_after(n)
    for client in saver.clients.values():
        if client is not None:
            client.meta.events.register("after-call", hook)


def _finished(state: Any) -> bool:
    return not state.next and not state.tasks and (state.metadata or {}).get("source") != "input"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["run", "resume"])
    ap.add_argument("--table", required=True)
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--thread", required=True)
    ap.add_argument("--mode", choices=["sync", "async"], default="sync")
    ap.add_argument("--durability", choices=["sync", "async"], default="sync")
    ap.add_argument("--log")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--barrier", type=int, default=1)
    ap.add_argument("--kill-after-request", type=int)
    args = ap.parse_args(argv)
    tracker = FileTracker(args.log)
    config = {"configurable": {"thread_id": args.thread}, "callbacks": [tracker]}
    kw = {"table_name": args.table, "bucket_name": args.bucket, **SAVER_KW}

    if args.mode == "sync":
        from langgraph.checkpoint.dynamodb import DynamoDBSaver

        with DynamoDBSaver(**kw) as saver:
            _attach_killer(saver, args.kill_after_request)
            graph = build_graph(args.delay, bool(args.barrier)).compile(checkpointer=tracker.wrap(saver))
            if args.phase == "run":
                print("READY", flush=True)
                graph.invoke(INPUT, config, durability=args.durability)
            else:
                for _ in range(5):
                    state = graph.get_state(config)
                    if not state.values and not state.next:
                        graph.invoke(INPUT, config, durability=args.durability)
                    elif not _finished(state):
                        graph.invoke(None, config, durability=args.durability)
                    else:
                        break
                print("DONE", flush=True)
        return 0

    async def run_async() -> None:
        from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

        async with AsyncDynamoDBSaver(**kw) as saver:
            _attach_killer(saver, args.kill_after_request)
            graph = build_graph(args.delay, bool(args.barrier)).compile(checkpointer=tracker.wrap(saver))
            if args.phase == "run":
                print("READY", flush=True)
                await graph.ainvoke(INPUT, config, durability=args.durability)
            else:
                for _ in range(5):
                    state = await graph.aget_state(config)
                    if not state.values and not state.next:
                        await graph.ainvoke(INPUT, config, durability=args.durability)
                    elif not _finished(state):
                        await graph.ainvoke(None, config, durability=args.durability)
                    else:
                        break
                print("DONE", flush=True)

    asyncio.run(run_async())
    return 0


if __name__ == "__main__":
    sys.exit(main())
