"""Drives a running ``langgraph dev`` server with ``langgraph_sdk``; prints what it saw as JSON.

Run by ``test_langgraph_server.py`` with the interpreter of the server's own
venv (where ``langgraph_sdk`` is installed), as a user's client would be:

    python server_driver.py http://127.0.0.1:PORT

It only drives and records; the test asserts on its output and on the items
the server's checkpointer left in the table.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from typing import Any

from langgraph_sdk import get_client


async def _until(what: str, check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = await check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def _cid(state: dict[str, Any]) -> str:
    return str(state["checkpoint"]["checkpoint_id"])


async def main(url: str) -> dict[str, Any]:
    client = get_client(url=url)
    out: dict[str, Any] = {}

    # --- interrupt and resume, with a value large enough for the S3 path
    # (random text: it stays over 64 KB after the saver compresses it).
    request = secrets.token_urlsafe(150_000)
    thread = await client.threads.create()
    tid = thread["thread_id"]
    out["thread_id"] = tid
    await client.runs.wait(tid, "agent", input={"request": request})
    paused = await client.threads.get_state(tid)
    out["paused_next"] = paused["next"]
    out["paused_interrupts"] = [i["value"] for t in paused["tasks"] for i in t.get("interrupts", [])]
    out["paused_request_intact"] = paused["values"].get("request") == request
    interrupted_at = _cid(paused)

    resumed = await client.runs.wait(tid, "agent", command={"resume": "yes"})
    out["resumed_log"] = resumed["log"]
    out["resumed_approved"] = resumed["approved"]

    # --- history: newest first, every checkpoint of the thread.
    history = await client.threads.get_history(tid, limit=100)
    out["history_ids"] = [_cid(s) for s in history]
    out["history_next"] = [s["next"] for s in history]

    # --- time travel: run again from the checkpoint before "plan" ran. (Not
    # from the interrupted checkpoint: it holds the review task's writes from
    # the first answer, and LangGraph replays those, with any saver.) The
    # replay stops at the question again; the new answer lands on the branch.
    before_plan = next(_cid(s) for s in history if s["next"] == ["plan"])
    out["before_plan"] = before_plan
    replayed = await client.runs.wait(tid, "agent", input=None, checkpoint_id=before_plan)
    out["replayed_interrupts"] = len(replayed.get("__interrupt__", []))
    out["replayed_next"] = (await client.threads.get_state(tid))["next"]
    forked = await client.runs.wait(tid, "agent", command={"resume": "no"})
    out["forked_log"] = forked["log"]
    out["forked_approved"] = forked["approved"]
    latest = await client.threads.get_state(tid)
    lineage: list[str] = []
    state: dict[str, Any] = latest
    while state.get("parent_checkpoint"):
        parent_id = state["parent_checkpoint"]["checkpoint_id"]
        lineage.append(parent_id)
        state = await client.threads.get_state(tid, checkpoint_id=parent_id)
    out["forked_lineage"] = lineage
    out["interrupted_at"] = interrupted_at
    history_after = await client.threads.get_history(tid, limit=100)
    out["history_after_fork_ids"] = [_cid(s) for s in history_after]

    # --- copy: the server calls the checkpointer's acopy_thread.
    copied = await client.threads.copy(tid)
    copy_id = copied["thread_id"] if isinstance(copied, dict) else None
    out["copy_thread_id"] = copy_id
    if copy_id:
        copy_state = await client.threads.get_state(copy_id)
        out["copy_values_equal"] = copy_state["values"] == latest["values"]
        out["copy_history_len"] = len(await client.threads.get_history(copy_id, limit=100))

    # --- rollback: a second run on a busy thread cancels the first and the
    # server deletes what the first wrote (the checkpointer's adelete_for_runs).
    busy = (await client.threads.create())["thread_id"]
    out["busy_thread_id"] = busy
    first = await client.runs.create(busy, "slow", input={"seconds": 30})

    async def first_checkpointed() -> bool:
        run = await client.runs.get(busy, first["run_id"])
        if run["status"] != "running":
            return False
        hist = await client.threads.get_history(busy, limit=100)
        return any(s["metadata"].get("run_id") == first["run_id"] for s in hist)

    await _until("the first run to write a checkpoint", first_checkpointed)
    second = await client.runs.create(busy, "slow", input={"seconds": 0}, multitask_strategy="rollback")
    await client.runs.join(busy, second["run_id"])
    out["rollback_first_run"] = first["run_id"]
    out["rollback_second_run"] = second["run_id"]
    out["rollback_second_status"] = (await client.runs.get(busy, second["run_id"]))["status"]
    busy_hist = await client.threads.get_history(busy, limit=100)
    out["rollback_history_runs"] = sorted({s["metadata"].get("run_id") for s in busy_hist} - {None})
    out["rollback_values"] = (await client.threads.get_state(busy))["values"]

    # --- fan-out: one step of 150 Sends (issue 25's map-reduce), through the server.
    fan = (await client.threads.create())["thread_id"]
    out["fanout_thread_id"] = fan
    done = await client.runs.wait(fan, "fanout", input={"n": 150})
    out["fanout_total"] = done.get("total")
    out["fanout_results"] = len(done.get("results", []))

    # --- delete: the server calls adelete_thread.
    await client.threads.delete(tid)
    try:
        await client.threads.get_state(tid)
        out["deleted_state_status"] = 200
    except Exception as e:  # httpx.HTTPStatusError, without importing httpx here
        out["deleted_state_status"] = getattr(getattr(e, "response", None), "status_code", repr(e))
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
