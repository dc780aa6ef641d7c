"""Worker processes the security tests pause, kill and resume (``python -m tests.security._workers``).

Each worker is what a Lambda sandbox or a container would run: it takes the
thread's lease with the library's own API and then does its work. The tests
freeze it with SIGSTOP (as a frozen sandbox or a GC pause would be), let
another worker take the thread over, and thaw it. On code that predates
lease-bound savers the worker writes through the plain saver, the only one
there was, so the same attack runs against the code before the fix.

Usage: ``python -m tests.security._workers <scenario> <json args>``; it
prints one JSON line with what happened.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver, lock
from langgraph.checkpoint.dynamodb.lock import ANY_CHECKPOINT, LeaseLostError, _operations

#: Whether this code has lease-bound savers and run contexts (the fix).
FENCED = hasattr(lock, "RunContext")


def checkpoint(cid: str | None = None) -> Any:
    cp = empty_checkpoint()
    cp["id"] = cid or str(uuid6())
    return cp


def cfg(thread_id: str, request_id: str | None = None, parent: str | None = None) -> dict[str, Any]:
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if parent:
        conf["checkpoint_id"] = parent
    out: dict[str, Any] = {"configurable": conf}
    if request_id:
        out["metadata"] = {"request_id": request_id}
    return out


def record(path: str, who: str) -> None:
    """A side effect outside the store: one line per run of the work."""
    with Path(path).open("a") as f:
        f.write(who + "\n")


def outcome(what: str, **extra: Any) -> None:
    sys.stdout.write(json.dumps({"result": what, **extra}) + "\n")
    sys.stdout.flush()


def _lost(exc: BaseException) -> str:
    return "lost" if isinstance(exc, LeaseLostError) else f"error: {exc!r}"


# --------------------------------------------------- paused lease holder


def paused_holder_sync(a: dict[str, Any]) -> None:
    saver = DynamoDBSaver(table_name=a["table"])
    lease = lock.ThreadLease(saver, a["thread"], lease_seconds=a["lease"])
    lease.acquire()
    writer = lease.bind() if FENCED else saver
    first = writer.put(cfg(a["thread"]), checkpoint(a["cp1"]), {"source": "input", "step": -1}, {})
    outcome("ready")
    sys.stdin.readline()  # frozen here by the test (SIGSTOP), then told to go on
    got: dict[str, str] = {}
    try:
        writer.put(first, checkpoint(a["cp3"]), {"source": "loop", "step": 0}, {})
        got["put"] = "landed"
    except Exception as exc:
        got["put"] = _lost(exc)
    try:
        writer.put_writes(first, [("stale", "from the paused worker")], a["task"])
        got["put_writes"] = "landed"
    except Exception as exc:
        got["put_writes"] = _lost(exc)
    try:
        lease.renew()
        got["renew"] = "renewed"
    except Exception as exc:
        got["renew"] = _lost(exc)
    outcome("done", **got)


async def _paused_holder_async(a: dict[str, Any]) -> None:
    async with AsyncDynamoDBSaver(table_name=a["table"]) as saver:
        lease = lock.AsyncThreadLease(saver, a["thread"], lease_seconds=a["lease"])
        await lease.acquire()
        writer = lease.bind() if FENCED else saver
        first = await writer.aput(cfg(a["thread"]), checkpoint(a["cp1"]), {"source": "input", "step": -1}, {})
        outcome("ready")
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        got: dict[str, str] = {}
        try:
            await writer.aput(first, checkpoint(a["cp3"]), {"source": "loop", "step": 0}, {})
            got["put"] = "landed"
        except Exception as exc:
            got["put"] = _lost(exc)
        try:
            await writer.aput_writes(first, [("stale", "from the paused worker")], a["task"])
            got["put_writes"] = "landed"
        except Exception as exc:
            got["put_writes"] = _lost(exc)
        try:
            await lease.renew()
            got["renew"] = "renewed"
        except Exception as exc:
            got["renew"] = _lost(exc)
        outcome("done", **got)


# ------------------------------------------------- run_once, paused or killed


def _work_body(saver: Any, a: dict[str, Any], who: str) -> str:
    """The request's work: commit a checkpoint tagged with the request, then the side effect."""
    saver.put(cfg(a["thread"], a["request"], a["parent"]), checkpoint(), {"source": "loop", "step": 1}, {})
    record(a["counter"], who)
    return f"result of {who}"


async def _awork_body(saver: Any, a: dict[str, Any], who: str) -> str:
    await saver.aput(
        cfg(a["thread"], a["request"], a["parent"]), checkpoint(), {"source": "loop", "step": 1}, {}
    )
    record(a["counter"], who)
    return f"result of {who}"


def _freeze() -> None:
    outcome("pausing")
    os.kill(os.getpid(), signal.SIGSTOP)


def run_once_sync(a: dict[str, Any]) -> None:
    saver = DynamoDBSaver(table_name=a["table"])
    if a.get("crash_before_done"):
        # Die between the work and its done record, with no cleanup at all.
        real = _operations.finish_request

        def die(*args: Any, **kw: Any) -> Any:
            if kw.get("status") == lock.STATUS_DONE:
                outcome("crashing")
                os._exit(137)
            return real(*args, **kw)

        _operations.finish_request = die  # type: ignore[assignment]

    def work(ctx: Any = None) -> str:
        if a.get("pause_before_commit"):
            _freeze()
        return _work_body(ctx.saver if ctx is not None else saver, a, a["who"])

    fn: Any = (lambda ctx: work(ctx)) if FENCED else (lambda: work())
    try:
        out = lock.run_once(saver, a["thread"], a["request"], ANY_CHECKPOINT, fn, lease_seconds=a["lease"])
    except Exception as exc:
        outcome(_lost(exc))
        return
    outcome("success", value=out.value)


async def _run_once_async(a: dict[str, Any]) -> None:
    async with AsyncDynamoDBSaver(table_name=a["table"]) as saver:

        async def work(ctx: Any = None) -> str:
            if a.get("pause_before_commit"):
                _freeze()
            return await _awork_body(ctx.saver if ctx is not None else saver, a, a["who"])

        fn: Any = (lambda ctx: work(ctx)) if FENCED else (lambda: work())
        try:
            out = await lock.arun_once(
                saver, a["thread"], a["request"], ANY_CHECKPOINT, fn, lease_seconds=a["lease"]
            )
        except Exception as exc:
            outcome(_lost(exc))
            return
        outcome("success", value=out.value)


def main() -> None:
    scenario, args = sys.argv[1], json.loads(sys.argv[2])
    if scenario == "paused_holder":
        if args["mode"] == "async":
            asyncio.run(_paused_holder_async(args))
        else:
            paused_holder_sync(args)
    elif scenario == "run_once":
        if args["mode"] == "async":
            asyncio.run(_run_once_async(args))
        else:
            run_once_sync(args)
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")


if __name__ == "__main__":
    main()
