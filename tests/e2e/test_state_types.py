"""Users' own state types come back as themselves in a process that never wrote them.

A graph whose state holds pydantic v2 and v1 models, dataclasses, enums, a named
tuple, a TypedDict of models and LangChain messages is interrupted in one
process; a fresh process (the other saver flavour) reads it back and resumes.
Both ``get_state`` and the node that runs after the resume must see the same
types the first process stored, nested ones included, as with LangGraph's other
savers. With the previous strict default they came back as dicts and strings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from tests.support.harness import env_for_subprocess, new_thread

APP = "tests.e2e.state_types_app"
EXPECTED = {
    "profile": f"{APP}.Profile",
    "legacy": f"{APP}.LegacyNote",
    "order": f"{APP}.Order",
    "tier": f"{APP}.Tier",
    "point": f"{APP}.Point",
    "bag": "builtins.dict",  # a TypedDict is a dict; its values are the models
    "profile.address": f"{APP}.Address",
    "profile.tier": f"{APP}.Tier",
    "profile.since": "datetime.datetime",
    "order.lines[0]": f"{APP}.Line",
    "order.tier": f"{APP}.Tier",
    "bag.items[0]": f"{APP}.Item",
    "bag.by_label[a]": f"{APP}.Item",
    "messages": ["langchain_core.messages.human.HumanMessage", "langchain_core.messages.ai.AIMessage"],
    "equal": True,
}


def run_app(action: str, thread: str, mode: str, names: dict[str, str], *extra: str) -> dict[str, Any]:
    cmd = [
        sys.executable,
        "-c",
        f"from {APP} import main; main()",
        action,
        thread,
        "--mode",
        mode,
        "--table",
        names["table_name"],
        "--bucket",
        names["bucket_name"],
        *extra,
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env_for_subprocess(), timeout=180, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "start_mode,resume_mode,extra",
    [("sync", "async", ()), ("async", "sync", ()), ("sync", "async", ("--encrypted",))],
    ids=["sync-then-async", "async-then-sync", "encrypted"],
)
def test_state_types_round_trip_across_processes(
    moto_endpoint: str, names: dict[str, str], start_mode: str, resume_mode: str, extra: tuple[str, ...]
) -> None:
    DynamoDBSaver(**names).setup()
    thread = new_thread()
    first = run_app("start", thread, start_mode, names, *extra)
    assert first == {"interrupt": f"{APP}.Question"}
    second = run_app("resume", thread, resume_mode, names, *extra)
    # get_state in the fresh process, before resuming: values and the pending interrupt.
    assert second["before"]["values"] == EXPECTED
    assert second["before"]["interrupt"] == f"{APP}.Question"
    assert second["before"]["interrupt.options"] == [f"{APP}.Tier", f"{APP}.Tier"]
    # What the node that runs after the resume is handed.
    assert second["seen"] == EXPECTED
    assert second["answer"] == "gold"
