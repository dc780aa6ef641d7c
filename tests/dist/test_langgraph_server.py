"""The real LangGraph API server (``langgraph dev``) on our checkpointer, end to end (issue 13).

A venv of its own (``langgraph-cli[inmem]`` + ``langgraph-sdk`` + this
project installed from the checkout, cached: see ``tests/dist/venvs.py``)
runs ``langgraph dev`` in a copy of ``examples/langgraph-server/`` (its
``langgraph.json`` and graph unchanged, plus a slow test graph), on
127.0.0.1, with the table and bucket on the session's moto server. A client
in the same venv drives it with ``langgraph_sdk`` (``server_driver.py``):
interrupt and resume with a value on the S3 path, history, time travel,
``threads.copy``, ``multitask_strategy="rollback"`` while a run is in
flight, delete. The test then reads the table and bucket itself: our saver,
not the server's in-memory store, held every checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, schema
from tests.dist.venvs import cached_venv, clean_env

pytestmark = [pytest.mark.dist, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "langgraph-server"
#: What ``langgraph.json`` must say: a dotted path (see ``server.py`` for why not ``module:attr``).
FACTORY_PATH = "langgraph.checkpoint.dynamodb.server.checkpointer"
#: Pinned (latest on 2026-11-30), so a run is reproducible; the venv cache is keyed by them.
SERVER_REQUIREMENTS = [
    "langgraph-cli[inmem]==0.4.40",
    "langgraph-api==0.16.7",
    "langgraph-runtime-inmem==0.36.7",
    "langgraph-sdk==0.4.14",
    "langgraph==1.2.24",
]
ANSI = re.compile(r"\x1b\[[0-9;]*m")

SLOW_GRAPH = """
import asyncio
import operator
from typing import Annotated, TypedDict

from langgraph.graph import START, StateGraph


class State(TypedDict, total=False):
    seconds: float
    log: Annotated[list[str], operator.add]


def start(state: State) -> dict:
    return {"log": ["started"]}


async def wait(state: State) -> dict:
    await asyncio.sleep(state.get("seconds", 0))
    return {"log": ["waited"]}


builder = StateGraph(State)
builder.add_node("start", start)
builder.add_node("wait", wait)
builder.add_edge(START, "start")
builder.add_edge("start", "wait")
graph = builder.compile()
"""


#: A map-reduce: a conditional edge returns one ``Send`` per item (issue 25: 117 of them
#: once made one UpdateItem over DynamoDB's 4 KB expression limit).
FANOUT_GRAPH = """
import operator
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class State(TypedDict, total=False):
    n: int
    results: Annotated[list[int], operator.add]
    total: int


def fan(state: State) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(state["n"])]


def work(arg: dict) -> dict:
    return {"results": [arg["i"] * 2]}


def reduce(state: State) -> dict:
    return {"total": sum(state["results"])}


builder = StateGraph(State)
builder.add_node("work", work)
builder.add_node("reduce", reduce)
builder.add_conditional_edges(START, fan, ["work"])
builder.add_edge("work", "reduce")
builder.add_edge("reduce", END)
graph = builder.compile()
"""
#: Branches of the fan-out run through the server.
FANOUT = 150


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _log(path: Path) -> str:
    return ANSI.sub("", path.read_text(errors="replace"))


@pytest.fixture(scope="module")
def server_venv() -> Iterator[Path]:
    with cached_venv("langgraph-server", SERVER_REQUIREMENTS) as venv:
        yield venv


def _launch(venv: Path, tmp_path: Path, **env: str) -> tuple[subprocess.Popen[bytes], Path]:
    """``langgraph dev`` in a copy of the shipped example, in its own process group."""
    app = tmp_path / "app"
    # Not a developer's own .env or server state: .env values override the
    # environment under `langgraph dev`, and could point the test at their table.
    shutil.copytree(EXAMPLE, app, ignore=shutil.ignore_patterns(".env", ".langgraph_api", "__pycache__"))
    config = json.loads((app / "langgraph.json").read_text())
    assert config["checkpointer"] == {"path": FACTORY_PATH}  # the documented snippet, as shipped
    (app / "slow.py").write_text(SLOW_GRAPH)
    config["graphs"]["slow"] = "./slow.py:graph"  # test-only: a run that stays in flight
    (app / "fanout.py").write_text(FANOUT_GRAPH)
    config["graphs"]["fanout"] = "./fanout.py:graph"  # test-only: a map-reduce of FANOUT Sends
    (app / "langgraph.json").write_text(json.dumps(config))
    log_path = tmp_path / "server.log"
    full_env = clean_env(
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_REGION="us-east-1",
        # Nothing leaves 127.0.0.1: no version check, analytics or tracing.
        LANGGRAPH_NO_VERSION_CHECK="true",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        NO_COLOR="1",
        **env,
    )
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                str(venv / "bin" / "langgraph"),
                "dev",
                "--no-browser",
                "--no-reload",
                "--host",
                "127.0.0.1",
                "--port",
                str(_free_port()),
            ],
            cwd=app,
            env=full_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped whole
        )
    return proc, log_path


def _stop(proc: subprocess.Popen[bytes], log_path: Path) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        pytest.fail(f"langgraph dev did not stop on SIGTERM:\n{_log(log_path)[-3000:]}")


@pytest.fixture
def server(
    server_venv: Path, moto_endpoint: str, names: dict[str, str], tmp_path: Path
) -> Iterator[dict[str, Any]]:
    """``langgraph dev`` on a fresh table and bucket; yields its URL, log file and names."""
    proc, log_path = _launch(
        server_venv,
        tmp_path,
        AWS_ENDPOINT_URL=moto_endpoint,
        LANGGRAPH_DYNAMODB_TABLE=names["table_name"],
        LANGGRAPH_DYNAMODB_BUCKET=names["bucket_name"],
        LANGGRAPH_DYNAMODB_SETUP="1",
    )
    try:
        # The port it reports, not the one asked for: its "port in use" check
        # misfires on some machines and moves to another port.
        deadline = time.monotonic() + 90
        url = None
        while url is None:
            text = _log(log_path)
            if "Application started up" in text:
                found = re.search(r"API: (http://127\.0\.0\.1:\d+)", text)
                assert found, text[-4000:]
                url = found.group(1)
            elif proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"langgraph dev did not start (rc={proc.poll()}):\n{text[-6000:]}")
            else:
                time.sleep(0.2)
        yield {"url": url, "log": log_path, "venv": server_venv, **names}
    finally:
        _stop(proc, log_path)


def _items(table: str, thread_id: str) -> list[dict[str, Any]]:
    ddb = boto3.client("dynamodb")
    pk = schema.partition_key(thread_id)
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": pk}},
        "ConsistentRead": True,
    }
    items: list[dict[str, Any]] = []
    while True:
        resp = ddb.query(**kwargs)
        items += resp["Items"]
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _kinds(items: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for it in items:
        kind = it[schema.ATTR.KIND]["S"]
        out[kind] = out.get(kind, 0) + 1
    return out


def _s3_keys(bucket: str, thread_id: str) -> list[str]:
    prefix = schema.s3_thread_prefix("checkpoints/", thread_id)
    resp = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for o in resp.get("Contents", [])]


def test_langgraph_dev_runs_on_our_checkpointer(server: dict[str, Any]) -> None:
    proc = subprocess.run(
        [
            str(server["venv"] / "bin" / "python"),
            str(Path(__file__).with_name("server_driver.py")),
            server["url"],
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
        check=False,
    )
    log = _log(server["log"])
    assert proc.returncode == 0, f"{proc.stderr[-4000:]}\n--- server log ---\n{log[-6000:]}"
    out = json.loads(proc.stdout)
    table, bucket = server["table_name"], server["bucket_name"]

    # The server uses our saver, with every capability it looks for.
    assert "Using custom checkpointer: AsyncDynamoDBSaver" in log
    assert "kind=\"<class 'langgraph.checkpoint.dynamodb.aio.AsyncDynamoDBSaver'>\"" in log
    # What the server looks for, as it logs it; each recommended method is
    # ours (the server degrades a feature for each one a saver lacks).
    found = re.search(r"Required methods: ([\w, ]+)\.\s+Recommended methods: ([\w, ]+)\.", log)
    assert found, log[:6000]
    required, recommended = (set(g.split(", ")) for g in found.groups())
    assert required == {"aget", "aget_tuple", "aput", "aput_writes", "alist"}, required
    assert recommended == {"adelete_thread", "adelete_for_runs", "acopy_thread", "aprune"}, recommended
    overridden = {
        n
        for n in required | recommended
        if getattr(AsyncDynamoDBSaver, n) is not getattr(BaseCheckpointSaver, n)
    }
    # aget is BaseCheckpointSaver's wrapper over aget_tuple, for every saver.
    assert overridden == (required | recommended) - {"aget"}, overridden
    assert "Custom checkpointer missing" not in log
    assert "Failed to clean up custom checkpointer" not in log
    assert not re.findall(r"^\S+ \[(?:error|critical)", log, flags=re.M), log[-6000:]

    # Interrupt and resume; the request (> 64 KB compressed) went through S3.
    assert out["paused_next"] == ["review"]
    assert out["paused_interrupts"][0]["question"] == "approve this plan?"
    assert out["paused_request_intact"] is True
    assert out["resumed_log"] == ["planned", "reviewed: yes", "done"] and out["resumed_approved"] is True

    # History: one checkpoint per step, newest first.
    assert out["history_next"] == [[], ["act"], ["review"], ["plan"], ["__start__"]]

    # Time travel: the fork descends from the checkpoint before "plan", not
    # from the first branch; both branches stay in the history.
    assert out["replayed_interrupts"] == 1 and out["replayed_next"] == ["review"]
    assert out["forked_log"] == ["planned", "reviewed: no", "cancelled"] and out["forked_approved"] is False
    assert out["before_plan"] in out["forked_lineage"]
    assert out["interrupted_at"] not in out["forked_lineage"]
    assert set(out["history_ids"]) < set(out["history_after_fork_ids"])

    # Copy: same values, same history, held in our table under the new id.
    assert out["copy_values_equal"] is True
    assert out["copy_history_len"] == len(out["history_after_fork_ids"])
    copy_items = _kinds(_items(table, out["copy_thread_id"]))
    assert copy_items.get(schema.CHECKPOINT_ITEM) == len(out["history_after_fork_ids"]), copy_items
    assert _s3_keys(bucket, out["copy_thread_id"]), "the copy's large value is not in S3"

    # Rollback: the cancelled run's checkpoints and writes are gone from the
    # table (adelete_for_runs), the second run's are there.
    busy = _items(table, out["busy_thread_id"])
    runs = {it[schema.ATTR.RUN_ID]["S"] for it in busy if schema.ATTR.RUN_ID in it}
    assert out["rollback_first_run"] not in runs, runs
    assert out["rollback_second_run"] in runs
    assert out["rollback_history_runs"] == [out["rollback_second_run"]]
    assert out["rollback_second_status"] == "success"
    assert out["rollback_values"]["log"] == ["started", "waited"]

    # Fan-out: 150 Sends in one step, their writes stored and the reduce run on all of them.
    assert out["fanout_total"] == 2 * sum(range(FANOUT)), out["fanout_total"]
    assert out["fanout_results"] == FANOUT
    fan_items = _kinds(_items(table, out["fanout_thread_id"]))
    assert fan_items.get(schema.WRITES_ITEM), fan_items

    # Delete: no checkpoint, writes or blob item and no S3 object is left
    # (tombstones stay: they keep a late write of a deleted run unreadable).
    assert out["deleted_state_status"] == 404
    left = _kinds(_items(table, out["thread_id"]))
    assert not {schema.CHECKPOINT_ITEM, schema.WRITES_ITEM, schema.BLOB_ITEM} & set(left), left
    assert _s3_keys(bucket, out["thread_id"]) == []


def test_langgraph_dev_stops_on_a_missing_table(
    server_venv: Path, moto_endpoint: str, names: dict[str, str], tmp_path: Path
) -> None:
    """A misspelt table (and no LANGGRAPH_DYNAMODB_SETUP): the server does not start, and says why."""
    proc, log_path = _launch(
        server_venv,
        tmp_path,
        AWS_ENDPOINT_URL=moto_endpoint,
        LANGGRAPH_DYNAMODB_TABLE=names["table_name"],
        LANGGRAPH_DYNAMODB_BUCKET=names["bucket_name"],
    )
    try:
        proc.wait(timeout=90)
    finally:
        _stop(proc, log_path)
    log = _log(log_path)
    assert proc.returncode != 0, log[-4000:]
    assert "Application started up" not in log
    assert "StoreNotFoundError" in log and names["table_name"] in log, log[-4000:]
    with pytest.raises(boto3.client("dynamodb").exceptions.ResourceNotFoundException):
        boto3.client("dynamodb").describe_table(TableName=names["table_name"])


def test_langgraph_json_snippet_resolves(server_venv: Path, tmp_path: Path) -> None:
    """The documented path loads with the server's own loader; ``module:attr`` does not.

    And the server's capability detection finds every recommended method on our saver.

    langgraph-cli's schema suggests ``"my_package.checkpointer:create_checkpointer"``;
    langgraph-api 0.16 splits such a path at its last dot. If a later server
    accepts it, this test says so, and the docs can offer both.
    """
    code = (
        "import json, sys\n"
        "from langgraph_api._checkpointer._adapter import _load_checkpointer\n"
        "from langgraph.checkpoint.dynamodb.server import checkpointer\n"
        "assert _load_checkpointer(sys.argv[1]) is checkpointer\n"
        "try:\n"
        "    _load_checkpointer(sys.argv[1].rsplit('.', 1)[0] + ':checkpointer')\n"
        "    print('colon form loads')\n"
        "except Exception as e:\n"
        "    print('colon form fails:', type(e).__name__)\n"
        "from dataclasses import asdict\n"
        "from langgraph_api._checkpointer._adapter import CheckpointerCapabilities\n"
        "from langgraph.checkpoint.dynamodb.aio import AsyncDynamoDBSaver\n"
        "print(json.dumps(asdict(CheckpointerCapabilities.from_type(AsyncDynamoDBSaver))))\n"
    )
    proc = subprocess.run(
        [str(server_venv / "bin" / "python"), "-c", code, FACTORY_PATH],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
        # What `langgraph dev` sets before langgraph_api's config is imported.
        env=clean_env(
            REDIS_URI="fake",
            DATABASE_URI=":memory:",
            MIGRATIONS_PATH="__inmem",
            LANGGRAPH_RUNTIME_EDITION="inmem",
            LANGGRAPH_DYNAMODB_TABLE="unused",
        ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    colon, caps = proc.stdout.strip().splitlines()
    assert colon.startswith("colon form fails:"), proc.stdout
    # The server's own capability detection on our class (aget_iter is optional: the
    # server falls back to aget_tuple, and does not log it as missing).
    assert json.loads(caps) == {
        "has_aget_iter": False,
        "has_adelete_thread": True,
        "has_adelete_for_runs": True,
        "has_acopy_thread": True,
        "has_aprune": True,
    }
