"""Smoke tests of the benchmark harness: our saver only, tiny sizes, no timing assertions.

They check that the counting is right (one ``put`` is one DynamoDB request,
counters reset, the byte mirror matches what moto stored), that the shared
workloads run end to end, and that the report renders. They never create
``.venv-ref`` and never run the reference saver.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks import counting
from benchmarks.counting import LatencyModel, Meter, apply_update, item_size, round_trips
from benchmarks.runner import run
from benchmarks.workloads import Params
from langgraph.checkpoint.base import empty_checkpoint


@pytest.fixture
def storage(moto_endpoint: str, names: dict[str, str]) -> dict[str, str]:
    """Our table and bucket, created by ``setup()`` as the orchestrator does."""
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    with DynamoDBSaver(table_name=names["table_name"], bucket_name=names["bucket_name"]) as saver:
        saver.setup()
    return names


def _metered_saver(storage: dict[str, str], latency: LatencyModel | None = None) -> tuple[Any, Meter]:
    import boto3

    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    meter = Meter(latency=latency)
    ddb = boto3.client("dynamodb")
    meter.mirror.add_table(ddb.describe_table(TableName=storage["table_name"])["Table"])
    saver = DynamoDBSaver(table_name=storage["table_name"], bucket_name=storage["bucket_name"])
    for client in saver.clients.values():
        meter.attach(client)
    return saver, meter


# ------------------------------------------------------------ pure units


def test_item_size_rules() -> None:
    # names + values: "PK"(2) + "a"(1) | "n"(1) + 3 digits -> 2+1 | "b"(1) + 4 bytes | "l"(1) + 3 + (1+1) + (1+1)
    item: dict[str, dict[str, Any]] = {
        "PK": {"S": "a"},
        "n": {"N": "123"},
        "b": {"B": b"\x00\x01\x02\x03"},
        "l": {"L": [{"S": "x"}, {"BOOL": True}]},
    }
    assert item_size(item) == (2 + 1) + (1 + 3) + (1 + 4) + (1 + 3 + 2 + 2)
    assert counting.write_units(1024) == 1 and counting.write_units(1025) == 2
    assert counting.read_units(4097, consistent=False) == 1.0
    assert counting.read_units(10, consistent=True) == 1.0


def test_apply_update_subset() -> None:
    key = {"PK": {"S": "p"}, "SK": {"S": "s"}}
    params = {
        "UpdateExpression": "SET #a = :a, #b = if_not_exists(#b, :b)",
        "ExpressionAttributeNames": {"#a": "a", "#b": "b"},
        "ExpressionAttributeValues": {":a": {"S": "new"}, ":b": {"S": "first"}},
    }
    first = apply_update(None, key, params)
    assert first == {**key, "a": {"S": "new"}, "b": {"S": "first"}}
    again = apply_update(
        first, key, {**params, "ExpressionAttributeValues": {":a": {"S": "x"}, ":b": {"S": "second"}}}
    )
    assert again is not None and again["b"] == {"S": "first"} and again["a"] == {"S": "x"}
    assert apply_update(None, key, {"UpdateExpression": "ADD c :one"}) is None


def test_round_trips_groups_overlapping_calls() -> None:
    calls = [(0.0, 1.0, "q"), (1.0, 2.0, "a"), (1.1, 2.5, "b"), (3.0, 4.0, "c")]
    assert round_trips(calls) == 3
    assert round_trips([]) == 0


# --------------------------------------------------------- against moto


def test_single_put_is_one_request_and_counters_reset(storage: dict[str, str]) -> None:
    saver, meter = _metered_saver(storage)
    cp = empty_checkpoint()
    cp["channel_values"] = {"messages": ["hello"]}
    cp["channel_versions"] = {"messages": saver.get_next_version(None, None)}
    cfg = {"configurable": {"thread_id": "smoke-put", "checkpoint_ns": ""}}
    saved = saver.put(cfg, cp, {"source": "loop", "step": 0}, cp["channel_versions"])

    snap = meter.snapshot()
    assert dict(snap.requests) == {"dynamodb:PutItem": 1}
    assert snap.count("dynamodb") == 1 and snap.count("s3") == 0
    assert snap.attempts == 1
    # Billed exactly by the size of the item moto now holds.
    import boto3

    stored: list[dict[str, Any]] = boto3.client("dynamodb").scan(TableName=storage["table_name"])["Items"]
    assert len(stored) == 1
    assert snap.ddb_write_bytes == item_size(stored[0])
    assert snap.wcu == counting.write_units(item_size(stored[0]))

    meter.reset()
    assert meter.snapshot().to_dict()["requests"] == {}
    got = saver.get_tuple(saved)
    assert got is not None and got.checkpoint["channel_values"] == {"messages": ["hello"]}
    # By id: the Query, and the thread head's deleted lineages in the same
    # round trip (deletion finality, docs/security.md).
    assert dict(meter.snapshot().requests) == {"dynamodb:Query": 1, "dynamodb:GetItem": 1}
    # One strongly consistent Query under 4 KB, and the GetItem of the head
    # (billed even when the head does not exist).
    assert meter.snapshot().rcu == 2.0
    saver.close()


def test_latency_model_sync_and_async_hooks(storage: dict[str, str]) -> None:
    saver, meter = _metered_saver(storage, latency=LatencyModel(dynamodb=0.001, s3=0.001))
    assert saver.get_tuple({"configurable": {"thread_id": "nobody"}}) is None
    assert meter.snapshot().attempts == 1
    saver.close()

    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

    async def go() -> dict[str, int]:
        ameter = Meter(latency=LatencyModel(dynamodb=0.001, s3=0.001))
        async with AsyncDynamoDBSaver(
            table_name=storage["table_name"], bucket_name=storage["bucket_name"]
        ) as asaver:
            for client in asaver.clients.values():
                ameter.attach(client)
            await asaver.aget_tuple({"configurable": {"thread_id": "nobody"}})
        return dict(ameter.snapshot().requests)

    assert asyncio.run(go()) == {"dynamodb:Query": 1}


def test_calls_workload_counts(storage: dict[str, str]) -> None:
    result = run("ours", "calls", table=storage["table_name"], bucket=storage["bucket_name"], verify=True)
    phases = result["phases"]
    assert phases["put[small]"]["requests"] == {"dynamodb:PutItem": 1}
    assert phases["put_writes[1]"]["requests"] == {"dynamodb:PutItem": 1}
    assert phases["put_writes[25]"]["requests"] == {"dynamodb:PutItem": 1}
    assert phases["get_tuple[latest]"]["requests"] == {"dynamodb:Query": 1}
    # Counters are per phase: a later phase does not carry earlier requests.
    assert phases["get_tuple[by id]"]["requests"] == {"dynamodb:Query": 1, "dynamodb:GetItem": 1}
    assert phases["put[500k]"]["requests"].get("s3:PutObject") == 1
    assert phases["put[500k]"]["s3_put_bytes"] > 100_000
    assert result["pending_writes_read_back"] == 26
    assert result["mirror_problems"] == []


def test_chat_and_linear_workloads(storage: dict[str, str]) -> None:
    tiny = Params.tiny()
    lin = run("ours", "linear", table=storage["table_name"], bucket=storage["bucket_name"], params=tiny)
    assert lin["phases"]["invoke"]["requests"]["dynamodb:Query"] == 1
    # A second run starts from zero: same counts, nothing carried over.
    again = run("ours", "linear", table=storage["table_name"], bucket=storage["bucket_name"], params=tiny)
    assert again["phases"]["invoke"]["requests"] == lin["phases"]["invoke"]["requests"]
    chat = run(
        "ours", "chat", table=storage["table_name"], bucket=storage["bucket_name"], params=tiny, verify=True
    )
    assert chat["mirror_problems"] == []
    assert len(chat["turns"]) == tiny.chat_turns
    assert chat["messages_in_state"] == 2 * tiny.chat_turns
    assert chat["history_length"] == 3 * tiny.chat_turns
    total = chat["phases"]["turns"]
    assert sum(t["ddb_requests"] for t in chat["turns"]) == total["ddb_requests"]
    # The second run started from a table that already held the first run's items.
    assert total["storage"]["ddb_items"] > lin["phases"]["invoke"]["storage"]["ddb_items"]


def test_delta_big_list_async_workloads(storage: dict[str, str]) -> None:
    tiny = Params.tiny()
    kw: dict[str, Any] = {"table": storage["table_name"], "bucket": storage["bucket_name"], "params": tiny}
    delta = run("ours", "delta", **kw)
    assert delta["stopped"] is None
    probes = [k for k in delta["phases"] if k.startswith("delta_history@")]
    assert probes and delta["history_probes"]
    big = run("ours", "big", **kw)
    assert big["phases"]["turns"]["s3_put_bytes"] > 0
    listing = run("ours", "list", **kw)
    assert listing["checkpoints"] == 3 * tiny.list_invokes
    assert listing["left_after_delete"] == 0
    asy = run("ours", "async", **kw)
    assert asy["turns_total"] == tiny.async_threads * tiny.async_turns
    assert asy["messages_in_thread0"] == 2 * tiny.async_turns
    assert asy["lag_samples"] > 0
    fan = run("ours", "fanout", **kw, verify=True)
    assert fan["sends"] == tiny.fanout_sends and fan["mirror_problems"] == []
    # One put_writes per work task, plus the fan-out step's (12 Sends fit one item).
    assert fan["phases"]["turns"]["requests"].get("dynamodb:TransactWriteItems", 0) == 0


def test_report_renders(storage: dict[str, str], tmp_path: Path) -> None:
    from benchmarks.report import write_report

    tiny = Params.tiny()
    runs = {
        wl: {
            "ours": [run("ours", wl, table=storage["table_name"], bucket=storage["bucket_name"], params=tiny)]
        }
        for wl in ("linear", "chat")
    }
    results = json.loads(
        json.dumps(
            {"generated": "2026-01-01T00:00:00+00:00", "params": vars(tiny), "runs": runs, "reps": {}},
            default=str,
        )
    )
    written = write_report(results, doc=tmp_path / "benchmarks.md", img=tmp_path / "img")
    text = (tmp_path / "benchmarks.md").read_text()
    assert "## Targets" in text and "`put_writes`" in text
    assert written[0] == tmp_path / "benchmarks.md"
