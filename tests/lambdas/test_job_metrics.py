"""The maintenance handlers' embedded metrics, run against the moto server.

The real handlers (``langgraph.checkpoint.dynamodb.lambdas.*``, as the
construct deploys them) run with real boto3 clients on the loopback endpoint;
stdout is captured as Lambda would ship it to CloudWatch Logs, and the
embedded metric format (EMF) line is checked against the specification
(CloudWatch's "Specification: Embedded metric format") by the validator
below, written from the specification and not from the emitting code: the
``_aws`` metadata (``Timestamp`` in epoch milliseconds, ``CloudWatchMetrics``
directives), every named dimension a string member and every named metric a
number at the top level, known units, the limits. The values must equal the
counts the handler reports.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver, clock, schema
from langgraph.checkpoint.dynamodb.lambdas import handlers, orphan_sweeper, pruner, reaper
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.harness import uuid6_at

#: CloudWatch's standard units (the MetricDatum ``Unit`` enumeration).
UNITS = {
    "Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes",
    "Terabytes", "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count",
    "Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
    "Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second",
    "Count/Second", "None",
}  # fmt: skip
FUNCTION = "Stack-CheckpointStoreJob-0123ABCD"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_emf(line: str) -> dict[str, Any]:
    """Parse one log line as an EMF document; ``AssertionError`` says what breaks the specification."""
    # The whole log event must be one JSON object, nothing before or after it.
    doc = json.loads(line)
    assert isinstance(doc, dict), "the root node must be a JSON object"
    assert len(line.encode()) < 256 * 1024, "larger than a CloudWatch Logs event"
    meta = doc["_aws"]
    assert isinstance(meta, dict)
    assert set(meta) <= {"Timestamp", "CloudWatchMetrics"}, f"unknown metadata members: {set(meta)}"
    stamp = meta["Timestamp"]
    assert _is_number(stamp) and abs(stamp - time.time() * 1000) < 120_000, f"Timestamp (epoch ms): {stamp}"
    directives = meta["CloudWatchMetrics"]
    assert isinstance(directives, list) and directives, "CloudWatchMetrics: a non-empty array"
    for directive in directives:
        assert set(directive) <= {"Namespace", "Dimensions", "Metrics"}, set(directive)
        namespace = directive["Namespace"]
        assert isinstance(namespace, str) and 1 <= len(namespace) <= 255 and not namespace.startswith("AWS/")
        for dimension_set in directive["Dimensions"]:
            assert isinstance(dimension_set, list) and 1 <= len(dimension_set) <= 30
            for key in dimension_set:
                value = doc.get(key)
                assert isinstance(value, str) and 1 <= len(value) <= 1024, f"dimension {key}: {value!r}"
        metrics = directive["Metrics"]
        assert isinstance(metrics, list) and 1 <= len(metrics) <= 100
        names = [m["Name"] for m in metrics]
        assert len(set(names)) == len(names), f"duplicate metric names: {names}"
        for metric in metrics:
            assert set(metric) <= {"Name", "Unit", "StorageResolution"}, set(metric)
            assert isinstance(metric["Name"], str) and 1 <= len(metric["Name"]) <= 255
            assert metric.get("Unit", "None") in UNITS, metric
            assert metric.get("StorageResolution", 60) in (1, 60), metric
            value = doc.get(metric["Name"])
            assert _is_number(value) or (
                isinstance(value, list) and 0 < len(value) <= 100 and all(_is_number(v) for v in value)
            ), f"metric {metric['Name']} needs a number at the top level, got {value!r}"
            dims = {k for s in directive["Dimensions"] for k in s}
            assert metric["Name"] not in dims, f"{metric['Name']} is both a metric and a dimension"
    return doc


def _emf_lines(out: str) -> list[dict[str, Any]]:
    """The EMF documents among stdout lines (each validated)."""
    docs = []
    for line in out.splitlines():
        if '"_aws"' in line:
            docs.append(validate_emf(line))
    return docs


def _metrics(doc: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """Metric name -> (value, unit) of an EMF document."""
    (directive,) = doc["_aws"]["CloudWatchMetrics"]
    return {m["Name"]: (doc[m["Name"]], m["Unit"]) for m in directive["Metrics"]}


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def store(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """A fresh table and bucket, the handlers' environment, and a clean saver cache."""
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_BUCKET", names["bucket_name"])
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", FUNCTION)
    for var in (
        "LANGGRAPH_DYNAMODB_METRICS_NAMESPACE",
        "LANGGRAPH_DYNAMODB_TTL_SECONDS",
        "TIME_BUDGET_SECONDS",
        "MAINTENANCE_READ_UNITS",
        "MAINTENANCE_WRITE_UNITS",
    ):
        monkeypatch.delenv(var, raising=False)
    handlers.reset_saver()
    yield names
    handlers.reset_saver()


def _cfg(thread: str, cid: str | None = None) -> dict[str, Any]:
    conf = {"thread_id": thread, "checkpoint_ns": ""}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _chain(saver: DynamoDBSaver, thread: str, times: list[float], big: bytes) -> list[dict[str, Any]]:
    """Checkpoints stamped ``times``: the first introduces channel ``big``, the rest reuse its version."""
    from langgraph.checkpoint.base import empty_checkpoint

    configs, parent = [], None
    for n, at in enumerate(times):
        cp = empty_checkpoint()
        cp["id"] = uuid6_at(at)
        cp["channel_values"] = {"big": big, "step": n}
        cp["channel_versions"] = {"big": "1", "step": str(n + 1)}
        new = {"big": "1", "step": str(n + 1)} if n == 0 else {"step": str(n + 1)}
        parent = saver.put(_cfg(thread, parent), cp, {"step": n}, new)["configurable"]["checkpoint_id"]
        configs.append(_cfg(thread, parent))
    return configs


def _poison(table: str, thread: str, checkpoint_id: str) -> None:
    """Make a checkpoint its own parent with a delta to rebuild: the prune of its thread must fail."""
    boto3.client("dynamodb").update_item(
        TableName=table,
        Key={
            ATTR.PK: {"S": schema.partition_key(thread)},
            ATTR.SK: {"S": schema.checkpoint_sk("", checkpoint_id)},
        },
        UpdateExpression="SET #p = :p, #dn = :dn",
        ExpressionAttributeNames={"#p": ATTR.PARENT_ID, "#dn": ATTR.DELTA_NEEDS},
        ExpressionAttributeValues={":p": {"S": checkpoint_id}, ":dn": {"SS": ["messages"]}},
    )


# --------------------------------------------------------------------- tests


def test_pruner_emits_its_counts(store: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    table, bucket = store["table_name"], store["bucket_name"]
    # A high S3 threshold: the 100 KB value is held by the checkpoint that
    # introduces it, so pruning that one re-homes it.
    writer = DynamoDBSaver(table_name=table, bucket_name=bucket, s3_threshold=300_000)
    now = time.time()
    active = f"t-{uuid.uuid4().hex[:8]}"
    _chain(writer, active, [now - 30 + i for i in range(3)], os.urandom(100_000))
    idle = f"t-{uuid.uuid4().hex[:8]}"
    _chain(writer, idle, [now - 3 * 86400, now - 3 * 86400 + 1], b"small")
    broken = f"t-{uuid.uuid4().hex[:8]}"
    poisoned = _chain(writer, broken, [now - 20, now - 10], b"x")
    _poison(table, broken, poisoned[-1]["configurable"]["checkpoint_id"])
    writer.close()
    monkeypatch.setenv("PRUNE_KEEP_LAST", "1")
    monkeypatch.setenv("PRUNE_IDLE_DAYS", "1")

    out = pruner.handler({"source": "aws.events"}, None)

    (doc,) = _emf_lines(capsys.readouterr().out)
    got = _metrics(doc)
    assert doc["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "LangGraph/Checkpoints"
    assert doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Job", "FunctionName"]]
    assert (doc["Job"], doc["FunctionName"]) == ("pruner", FUNCTION)
    # The scenario moved every count the pruner reports: none of these is a default 0.
    assert out["threads_scanned"] == 3 and out["threads_pruned"] == 1 and out["threads_deleted"] == 1
    assert out["checkpoints_deleted"] == 4 and out["values_rehomed"] == 1 and len(out["errors"]) == 1
    assert "parent" in out["errors"][0] and broken in out["errors"][0]
    assert out["bytes_freed"] > 0
    assert got == {
        "ThreadsScanned": (3, "Count"),
        "ThreadsPruned": (1, "Count"),
        "ThreadsDeleted": (1, "Count"),
        "CheckpointsDeleted": (out["checkpoints_deleted"], "Count"),
        "WritesDeleted": (out["writes_deleted"], "Count"),
        "ObjectsDeleted": (out["s3_objects_deleted"], "Count"),
        "ValuesRehomed": (1, "Count"),
        "BytesFreed": (out["bytes_freed"], "Bytes"),
        "Errors": (1, "Count"),
    }
    # The line is also the structured record Logs Insights queries (same fields as returned).
    assert {k: doc[k] for k in out if k != "policy"} == {k: v for k, v in out.items() if k != "policy"}
    assert "_aws" not in out


def test_a_pruner_with_a_capacity_budget_is_held_to_it(
    store: dict[str, str], moto_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from tests.support import throughput

    writer = DynamoDBSaver(table_name=store["table_name"], bucket_name=store["bucket_name"])
    now = time.time()
    for _ in range(2):
        _chain(writer, f"t-{uuid.uuid4().hex[:8]}", [now - 3 * 86400 + i for i in range(8)], os.urandom(3000))
    writer.close()
    monkeypatch.setenv("PRUNE_KEEP_LAST", "1")
    monkeypatch.setenv("MAINTENANCE_READ_UNITS", "40")
    monkeypatch.setenv("MAINTENANCE_WRITE_UNITS", "40")

    with throughput.counting(moto_endpoint):  # ConsumedCapacity as DynamoDB reports it
        out = pruner.handler({"source": "aws.events"}, None)

    # The deletes (14 items of over 3 KB) cost more than a second of 40 units: the job waited.
    assert out["checkpoints_deleted"] == 14 and out["capacity_waited_seconds"] > 0
    assert out["capacity_throttles"] == 0
    monkeypatch.setenv("MAINTENANCE_WRITE_UNITS", "lots")
    with pytest.raises(ValueError, match="MAINTENANCE_WRITE_UNITS must be a positive number"):
        pruner.handler({"source": "aws.events"}, None)


def test_reaper_emits_its_counts(store: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    table, bucket = store["table_name"], store["bucket_name"]
    offset = [0.0]
    monkeypatch.setattr(clock, "now", lambda: time.time() + offset[0])
    writer = DynamoDBSaver(table_name=table, bucket_name=bucket, ttl=600)
    gone = [f"t-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for thread in gone:
        configs = _chain(writer, thread, [time.time(), time.time() + 1], os.urandom(100_000))
        writer.put_writes(configs[-1], [("w", os.urandom(100_000))], "task-1")
    writer.close()
    expired_at = clock.now() + 650
    offset[0] = 700.0

    def ttl_record(thread: str) -> dict[str, Any]:
        return {
            "eventName": "REMOVE",
            "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
            "dynamodb": {
                "ApproximateCreationDateTime": expired_at,
                "Keys": {"PK": {"S": schema.partition_key(thread)}, "SK": {"S": schema.HEAD_SK}},
            },
        }

    # A user's delete (no userIdentity) is in the batch too: it must not count.
    user_delete = {"eventName": "REMOVE", "dynamodb": {"Keys": ttl_record(gone[0])["dynamodb"]["Keys"]}}
    out = reaper.handler({"Records": [*map(ttl_record, gone), user_delete]}, None)

    (doc,) = _emf_lines(capsys.readouterr().out)
    got = _metrics(doc)
    assert doc["Job"] == "reaper"
    assert out["records"] == 3 and out["threads_scanned"] == 2 and out["threads_deleted"] == 2
    assert out["checkpoints_deleted"] == 4 and out["writes_deleted"] == 2 and out["s3_objects_deleted"] > 0
    assert got == {
        "ThreadsScanned": (2, "Count"),
        "ThreadsDeleted": (2, "Count"),
        "CheckpointsDeleted": (4, "Count"),
        "WritesDeleted": (2, "Count"),
        "ObjectsDeleted": (out["s3_objects_deleted"], "Count"),
        "ValuesRehomed": (out["values_rehomed"], "Count"),
        "BytesFreed": (out["bytes_freed"], "Bytes"),
        "Errors": (0, "Count"),
    }


def test_orphan_sweeper_emits_its_counts(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    table, bucket = store["table_name"], store["bucket_name"]
    saver = DynamoDBSaver(table_name=table, bucket_name=bucket)
    thread = f"t-{uuid.uuid4().hex[:8]}"
    configs = _chain(saver, thread, [time.time()], b"small")
    saver.put_writes(configs[0], [("w", os.urandom(100_000))], "task-1")  # a referenced object
    saver.close()
    prefix = schema.s3_thread_prefix("checkpoints/", thread)
    s3 = boto3.client("s3")
    for n in range(3):
        s3.put_object(Bucket=bucket, Key=f"{prefix}_/c/x/w/t/{n}.orphan", Body=b"lost" * (n + 1))
    monkeypatch.setattr(clock, "now", lambda: time.time() + 25 * 3600)  # past the grace period

    out = orphan_sweeper.handler({"source": "aws.events"}, None)

    (doc,) = _emf_lines(capsys.readouterr().out)
    assert (
        out["s3_objects_scanned"] == 4 and out["s3_objects_deleted"] == 3 and out["bytes_freed"] == 4 + 8 + 12
    )
    assert _metrics(doc) == {
        "ThreadsScanned": (1, "Count"),
        "ObjectsScanned": (4, "Count"),
        "ObjectsDeleted": (3, "Count"),
        "BytesFreed": (24, "Bytes"),
        "Errors": (0, "Count"),
    }


def test_namespace_setting_and_switch_off(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_METRICS_NAMESPACE", "Acme/Agents")
    orphan_sweeper.handler({}, None)
    (doc,) = _emf_lines(capsys.readouterr().out)
    assert doc["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Acme/Agents"

    monkeypatch.setenv("LANGGRAPH_DYNAMODB_METRICS_NAMESPACE", "")
    out = orphan_sweeper.handler({}, None)
    lines = capsys.readouterr().out.splitlines()
    assert not _emf_lines("\n".join(lines))
    assert [json.loads(line) for line in lines if line.startswith("{")] == [out]  # still the record


@pytest.mark.parametrize("namespace", ["AWS/Lambda", "x" * 256])
def test_an_invalid_namespace_costs_the_metrics_not_the_run(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any, caplog: Any, namespace: str
) -> None:
    """CloudWatch would reject the document; the job's work is done and must not be retried for it."""
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_METRICS_NAMESPACE", namespace)
    with caplog.at_level(logging.WARNING, logger="langgraph.checkpoint.dynamodb"):
        out = orphan_sweeper.handler({}, None)
    assert out["complete"]
    assert not _emf_lines(capsys.readouterr().out)
    assert "LANGGRAPH_DYNAMODB_METRICS_NAMESPACE" in caplog.text


def test_outside_lambda_the_job_is_the_only_dimension(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    orphan_sweeper.handler({}, None)
    (doc,) = _emf_lines(capsys.readouterr().out)
    assert doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Job"]]
    assert "FunctionName" not in doc


def test_the_logging_record_carries_no_directive(store: dict[str, str], capsys: Any, caplog: Any) -> None:
    """A handler forwarding raw log messages must not make CloudWatch count the run twice."""
    with caplog.at_level(logging.INFO, logger="langgraph.checkpoint.dynamodb"):
        out = orphan_sweeper.handler({}, None)
    assert len(_emf_lines(capsys.readouterr().out)) == 1
    records = [json.loads(r.getMessage()) for r in caplog.records if r.getMessage().startswith("{")]
    assert records == [out]


def test_thread_ids_never_become_dimensions(store: dict[str, str], capsys: Any) -> None:
    """Cardinality is money: a thread id in the record is a field, never a dimension or metric."""
    handlers.log_event("pruner", threads_pruned=1, errors=["thread 't-secret': boom"], thread_id="t-secret")
    (doc,) = _emf_lines(capsys.readouterr().out)
    (directive,) = doc["_aws"]["CloudWatchMetrics"]
    named = {k for s in directive["Dimensions"] for k in s} | {m["Name"] for m in directive["Metrics"]}
    assert named <= {"Job", "FunctionName", "ThreadsPruned", "Errors"}
    assert all("t-secret" not in str(doc[k]) for k in named)
    assert _metrics(doc) == {"ThreadsPruned": (1, "Count"), "Errors": (1, "Count")}


def test_other_events_carry_no_metrics(store: dict[str, str], capsys: Any) -> None:
    handlers.log_event("agent", step=3)
    assert not _emf_lines(capsys.readouterr().out)


def test_the_validator_refuses_broken_documents() -> None:
    """Negative control: the specification checks are not a rubber stamp."""
    good = {
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [
                {"Namespace": "N", "Dimensions": [["Job"]], "Metrics": [{"Name": "M", "Unit": "Count"}]}
            ],
        },
        "Job": "pruner",
        "M": 1,
    }
    validate_emf(json.dumps(good))
    broken = [
        {**good, "M": "1"},  # a string value
        {**good, "M": True},  # a boolean is no number
        {k: v for k, v in good.items() if k != "M"},  # the metric's member is missing
        {**good, "Job": 7},  # a dimension value must be a string
        {**good, "_aws": {**good["_aws"], "Timestamp": time.time()}},  # seconds, not milliseconds
        {**good, "_aws": {"CloudWatchMetrics": good["_aws"]["CloudWatchMetrics"]}},  # no Timestamp
    ]
    directive = good["_aws"]["CloudWatchMetrics"][0]
    for change in (
        {"Namespace": "AWS/Lambda"},
        {"Metrics": [{"Name": "M", "Unit": "Things"}]},
        {"Metrics": [{"Name": "M"}, {"Name": "M"}]},
    ):
        broken.append({**good, "_aws": {**good["_aws"], "CloudWatchMetrics": [{**directive, **change}]}})
    for doc in broken:
        with pytest.raises((AssertionError, KeyError)):
            validate_emf(json.dumps(doc))
    with pytest.raises(ValueError):
        validate_emf("[INFO] " + json.dumps(good))  # a prefixed line is no EMF


@pytest.mark.parametrize("size", [300, 20_000])
def test_a_flood_of_errors_keeps_the_line_whole(store: dict[str, str], capsys: Any, size: int) -> None:
    """Stored data can make every thread of a page fail; the metrics of that run must still arrive.

    A CloudWatch Logs event holds 256 KB: a longer line is split and is no JSON
    document anymore. The error list is cut instead; its count stays exact.
    """
    errors = [f"thread 't-{n}': CorruptPayloadError: {'x' * size}" for n in range(2_000)]
    out = handlers.log_event("pruner", threads_scanned=2_000, errors=errors)
    assert out["errors"] == errors  # the handler's return value is untouched
    (line,) = capsys.readouterr().out.splitlines()
    assert len(line.encode()) <= 200_000
    doc = validate_emf(line)
    assert _metrics(doc)["Errors"] == (2_000, "Count") and doc["ThreadsScanned"] == 2_000
    if size == 300:
        assert doc["errors"] == errors[:20] and doc["errors_omitted"] == 1_980
    else:  # even 20 messages are too long: the metrics and the job alone
        assert doc["truncated"] is True and "errors" not in doc and doc["job"] == "pruner"
