"""The store's dashboard, the bucket's request metrics and the jobs' embedded metrics, in the template.

The dashboard body is a ``Fn::Join`` of JSON text and references; rendered
with ``flatten`` (``Ref`` -> ``<LogicalId>``) it parses as JSON, so each
widget's metrics can be read as ``(namespace, name, dimensions, options)``
and compared with the resources the template really holds. The jobs' metric
names come from ``lambdas.metrics`` (the module the handlers emit from) and
are checked against a line the real ``log_event`` prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from cdk_helpers import FAST_CONTEXT, Synth, flatten, synthesize

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.lambdas import handlers
from langgraph.checkpoint.dynamodb.lambdas.metrics import JOB_METRICS
from langgraph.checkpoint.dynamodb.lifecycle import SweepReport

REF = "LangGraphCheckpointStack"
JOBS = {
    "Pruner": "pruner",
    "Reaper": "reaper",
    "OrphanSweeper": "orphan_sweeper",
    "Maintenance": "maintenance",
}
ENV_NAMESPACE = "LANGGRAPH_DYNAMODB_METRICS_NAMESPACE"


def _body(synth: Synth, stack: str) -> dict[str, Any]:
    (_, dashboard), *more = synth.resources(stack, "AWS::CloudWatch::Dashboard").items()
    assert not more
    return json.loads(flatten(dashboard["Properties"]["DashboardBody"]))  # type: ignore[no-any-return]


def _metrics(body: dict[str, Any]) -> list[tuple[str, str, dict[str, str], dict[str, Any], str]]:
    """Every metric of every widget: (namespace, name, dimensions, options, widget title)."""
    out = []
    for widget in body["widgets"]:
        for row in widget["properties"].get("metrics", []):
            opts = row[-1] if isinstance(row[-1], dict) else {}
            fields = row[:-1] if opts else row
            assert "." not in fields[:2] and len(fields) % 2 == 0, f"unexpected shorthand: {row}"
            dims = dict(zip(fields[2::2], fields[3::2], strict=True))
            out.append((fields[0], fields[1], dims, opts, widget["properties"]["title"]))
    return out


def _headers(body: dict[str, Any]) -> list[str]:
    return [w["properties"]["markdown"] for w in body["widgets"] if w["type"] == "text"]


def _function_refs(synth: Synth, stack: str, prefix: str) -> dict[str, str]:
    """Job -> ``<LogicalId>`` of its function (what a resolved ``function_name`` flattens to)."""
    out = {}
    for construct, job in JOBS.items():
        found = [
            k for k in synth.resources(stack, "AWS::Lambda::Function") if k.startswith(f"{prefix}{construct}")
        ]
        if found:
            (logical_id,) = found
            out[job] = f"<{logical_id}>"
    return out


@pytest.fixture(scope="module")
def variants(cdk_env: None, tmp_path_factory: pytest.TempPathFactory, fake_lambdas: Path) -> Synth:
    """Stores with the dashboard off, request metrics alone, a named dashboard, no job metrics."""
    from aws_cdk import App, Stack

    from langgraph.checkpoint.dynamodb.cdk import CheckpointStore, FunctionOptions, MonitoringOptions

    outdir = tmp_path_factory.mktemp("dashboards")
    app = App(context=FAST_CONTEXT, outdir=str(outdir), builtin_cloud_formation_validation=False)
    settings: dict[str, MonitoringOptions] = {
        "Off": MonitoringOptions(dashboard=False),
        "MetricsOnly": MonitoringOptions(dashboard=False, bucket_request_metrics=True),
        "NoRequestMetrics": MonitoringOptions(bucket_request_metrics=False),
        "Named": MonitoringOptions(dashboard_name="agent-checkpoints", metrics_namespace="Acme/Agents"),
        "NoJobMetrics": MonitoringOptions(metrics_namespace=None),
    }
    stores = {}
    for name, monitoring in settings.items():
        stack = Stack(app, name)
        stores[name] = CheckpointStore(
            stack,
            "Store",
            function_options=FunctionOptions(code_dir=fake_lambdas),
            monitoring_options=monitoring,
        )
    synth = synthesize(app, outdir)
    synth.stores.update(stores)
    return synth


def test_one_pinned_dashboard_in_four_groups(reference: Synth) -> None:
    (logical_id,) = reference.resources(REF, "AWS::CloudWatch::Dashboard")
    store = reference.stores[REF]
    assert logical_id == "CheckpointStoreDashboard"
    assert "Dashboard" not in store.logical_ids  # those are the stateful resources
    assert store.dashboard is not None
    body = _body(reference, REF)
    headers = _headers(body)
    assert [h.split()[1] for h in headers] == ["Checkpoint", "Payload", "Maintenance", "Maintenance"]
    assert "jobs" in headers[3] and "LangGraph/Checkpoints" in headers[3]
    # docs/infrastructure.md prices it by this count (over 50: never a free dashboard).
    assert len(_metrics(body)) == 126
    # Groups are rows: every widget after a header starts below it.
    tops = [w["y"] for w in body["widgets"] if w["type"] == "text"]
    assert tops == sorted(tops) and len(set(tops)) == 4


def test_table_widgets_watch_this_table(reference: Synth) -> None:
    from langgraph.checkpoint.dynamodb.cdk import DYNAMODB_MAINTENANCE_ACTIONS, DYNAMODB_READ_WRITE_ACTIONS

    metrics = [m for m in _metrics(_body(reference, REF)) if m[0] == "AWS/DynamoDB"]
    assert metrics and all(m[2]["TableName"] == "<CheckpointStoreTable>" for m in metrics)
    by_name: dict[str, list[tuple[dict[str, str], dict[str, Any]]]] = {}
    for _, name, dims, opts, _ in metrics:
        by_name.setdefault(name, []).append((dims, opts))
    # Requests (sample count) and latency (average) for every operation the
    # savers and the maintenance functions are granted (ConditionCheckItem is
    # granted for the ConditionCheck inside a TransactWriteItems).
    actions = {a.split(":")[1] for a in (*DYNAMODB_READ_WRITE_ACTIONS, *DYNAMODB_MAINTENANCE_ACTIONS)}
    operations = {"TransactWriteItems" if a == "ConditionCheckItem" else a for a in actions}
    assert "TransactWriteItems" in operations and "ConditionCheckItem" not in operations
    for stat in ("SampleCount", "Average"):
        # The template leaves CloudWatch's default statistic (Average) out.
        latency = by_name["SuccessfulRequestLatency"]
        seen = {d["Operation"] for d, o in latency if o.get("stat", "Average") == stat}
        assert seen == operations, stat
    assert {d["Operation"] for d, _ in by_name["SystemErrors"]} == operations
    # Throttles and consumed capacity for the table and each GSI of the schema.
    indexes = {g["IndexName"] for g in schema.table_definition("x")["GlobalSecondaryIndexes"]}
    for name in (
        "ReadThrottleEvents",
        "WriteThrottleEvents",
        "ConsumedReadCapacityUnits",
        "ConsumedWriteCapacityUnits",
    ):
        assert {d.get("GlobalSecondaryIndexName") for d, _ in by_name[name]} == {None, *indexes}, name
        assert all(o["stat"] == "Sum" for _, o in by_name[name])
    # Throttles by the reason DynamoDB gives (ThrottlingReasons), table and each GSI.
    for kind in ("Read", "Write"):
        for cause in ("KeyRangeThroughput", "ProvisionedThroughput", "MaxOnDemandThroughput", "AccountLimit"):
            name = f"{kind}{cause}ThrottleEvents"
            assert {d.get("GlobalSecondaryIndexName") for d, _ in by_name[name]} == {None, *indexes}, name


def test_bucket_request_metrics_are_filtered_to_the_checkpoint_prefix(
    reference: Synth, custom: Synth
) -> None:
    for synth, stack, prefix in ((reference, REF, "checkpoints/"), (custom, "Custom", "ckpt/")):
        bucket_id = "CheckpointStoreBucket" if stack == REF else "StoreBucket"
        bucket = synth.resources(stack, "AWS::S3::Bucket")[bucket_id]
        (config,) = bucket["Properties"]["MetricsConfigurations"]
        assert config == {"Id": config["Id"], "Prefix": prefix}  # no tag filter: every checkpoint object
        s3 = [m for m in _metrics(_body(synth, stack)) if m[0] == "AWS/S3"]
        requests = {name for _, name, dims, _, _ in s3 if "FilterId" in dims}
        assert {"AllRequests", "GetRequests", "PutRequests", "DeleteRequests", "ListRequests"} <= requests
        assert {"BytesUploaded", "BytesDownloaded", "4xxErrors", "5xxErrors"} <= requests
        for _, _, dims, _, _ in s3:
            assert dims["BucketName"] == f"<{bucket_id}>"
            # The request metrics read exactly the configuration the bucket has.
            assert dims.get("FilterId", config["Id"]) == config["Id"]
        # The access log bucket gets no request metrics (nobody reads it).
        logs = [b for k, b in synth.resources(stack, "AWS::S3::Bucket").items() if k != bucket_id]
        assert logs and all("MetricsConfigurations" not in b["Properties"] for b in logs)


def test_function_widgets_name_each_maintenance_function(reference: Synth) -> None:
    refs = _function_refs(reference, REF, "CheckpointStore")
    assert set(refs) == set(JOB_METRICS)
    lam = [m for m in _metrics(_body(reference, REF)) if m[0] == "AWS/Lambda"]
    for name in ("Invocations", "Errors", "Duration", "Throttles"):
        assert {dims["FunctionName"] for _, n, dims, _, _ in lam if n == name} == set(refs.values()), name
    assert {dims["FunctionName"] for _, n, dims, _, _ in lam if n == "IteratorAge"} == {refs["reaper"]}
    # The agent is not the store's: it is not on the store's dashboard.
    (agent,) = [k for k in reference.resources(REF, "AWS::Lambda::Function") if k.startswith("AgentFunction")]
    assert all(dims["FunctionName"] != f"<{agent}>" for _, _, dims, _, _ in lam)
    dlq = {dims["QueueName"] for ns, _, dims, _, _ in _metrics(_body(reference, REF)) if ns == "AWS/SQS"}
    assert len(dlq) == 4 and all(q.startswith("<CheckpointStore") and "Dlq" in q for q in dlq)


def _maintenance_record() -> dict[str, Any]:
    """Every count the maintenance handler can log (a copy step's, a prune step's, a rejection)."""
    from dataclasses import asdict

    from langgraph.checkpoint.dynamodb.lifecycle import PruneResult

    copy = {"objects_copied": 0, "items_copied": 0, "checkpoints_copied": 0}
    return {
        "action": "copy_thread",
        "status": "done",
        "rejected": 0,
        "errors": [],
        **copy,
        **asdict(PruneResult()),
    }


def _job_metrics_on_dashboard(synth: Synth, stack: str, namespace: str) -> set[tuple[str, str, str]]:
    """(job, metric, function ref) of every metric in ``namespace`` on the dashboard."""
    found = set()
    for ns, name, dims, opts, _ in _metrics(_body(synth, stack)):
        if ns == namespace:
            assert set(dims) == {"Job", "FunctionName"} and opts["stat"] == "Sum"
            found.add((dims["Job"], name, dims["FunctionName"]))
    return found


@pytest.mark.parametrize(
    ("fixture", "stack", "prefix", "namespace"),
    [
        ("reference", REF, "CheckpointStore", "LangGraph/Checkpoints"),
        ("variants", "Named", "Store", "Acme/Agents"),
    ],
)
def test_job_metrics_are_what_the_handlers_emit(
    fixture: str,
    stack: str,
    prefix: str,
    namespace: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    synth: Synth = request.getfixturevalue(fixture)
    refs = _function_refs(synth, stack, prefix)
    emitted: set[tuple[str, str, str]] = set()
    for job, ref in refs.items():
        logical_id = ref.strip("<>")
        env = synth.templates[stack]["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        assert env[ENV_NAMESPACE] == namespace
        # What the real handler code prints with that environment, in that function.
        monkeypatch.setenv(ENV_NAMESPACE, env[ENV_NAMESPACE])
        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", ref)
        # The maintenance function logs a copy step's or a prune step's counts.
        report = SweepReport().to_dict() if job != "maintenance" else _maintenance_record()
        handlers.log_event(job, **report)
        (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]
        (directive,) = line["_aws"]["CloudWatchMetrics"]
        assert directive["Namespace"] == namespace and directive["Dimensions"] == [["Job", "FunctionName"]]
        emitted |= {(line["Job"], m["Name"], line["FunctionName"]) for m in directive["Metrics"]}
    shown = _job_metrics_on_dashboard(synth, stack, namespace)
    assert shown == emitted
    assert {job for job, _, _ in shown} == set(JOB_METRICS)
    assert ("pruner", "ThreadsPruned", refs["pruner"]) in shown


def test_dashboard_off(variants: Synth) -> None:
    assert not variants.resources("Off", "AWS::CloudWatch::Dashboard")
    assert variants.stores["Off"].dashboard is None
    bucket = variants.resources("Off", "AWS::S3::Bucket")["StoreBucket"]
    assert "MetricsConfigurations" not in bucket["Properties"]  # follows the dashboard by default
    # The jobs still emit (alarms can use them) unless the namespace is switched off.
    _, fn = variants.one("Off", "AWS::Lambda::Function", "StorePruner")
    assert fn["Properties"]["Environment"]["Variables"][ENV_NAMESPACE] == "LangGraph/Checkpoints"
    only = variants.resources("MetricsOnly", "AWS::S3::Bucket")["StoreBucket"]
    assert only["Properties"]["MetricsConfigurations"] == [
        {"Id": "CheckpointPrefix", "Prefix": "checkpoints/"}
    ]
    assert not variants.resources("MetricsOnly", "AWS::CloudWatch::Dashboard")


def test_dashboard_without_request_metrics_keeps_the_free_size_metrics(variants: Synth) -> None:
    bucket = variants.resources("NoRequestMetrics", "AWS::S3::Bucket")["StoreBucket"]
    assert "MetricsConfigurations" not in bucket["Properties"]
    s3 = [m for m in _metrics(_body(variants, "NoRequestMetrics")) if m[0] == "AWS/S3"]
    assert s3 and all("FilterId" not in dims for _, _, dims, _, _ in s3)
    assert {name for _, name, _, _, _ in s3} == {"BucketSizeBytes", "NumberOfObjects"}


def test_named_dashboard_and_no_job_metrics(variants: Synth) -> None:
    (named,) = variants.resources("Named", "AWS::CloudWatch::Dashboard").values()
    assert named["Properties"]["DashboardName"] == "agent-checkpoints"
    body = _body(variants, "NoJobMetrics")
    assert len(_headers(body)) == 3  # table, bucket, functions: no jobs row
    assert {m[0] for m in _metrics(body)} == {"AWS/DynamoDB", "AWS/S3", "AWS/Lambda", "AWS/SQS"}
    for fn in variants.resources("NoJobMetrics", "AWS::Lambda::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        if "LANGGRAPH_DYNAMODB_TABLE" in env:
            assert env[ENV_NAMESPACE] == ""  # the handlers read "" as "emit nothing"


def test_bucketless_and_reaperless_stores(custom: Synth) -> None:
    body = _body(custom, "NoBucket")
    assert not [m for m in _metrics(body) if m[0] == "AWS/S3"]
    assert [h.split()[1] for h in _headers(body)] == ["Checkpoint", "Maintenance", "Maintenance"]
    jobs = {dims["Job"] for ns, _, dims, _, _ in _metrics(body) if ns == "LangGraph/Checkpoints"}
    assert jobs == {"pruner", "reaper", "maintenance"}  # no sweeper without a bucket
    unversioned = _body(custom, "Unversioned")
    lam = {dims["FunctionName"] for ns, n, dims, _, _ in _metrics(unversioned) if ns == "AWS/Lambda"}
    assert len(lam) == 2 and not [m for m in _metrics(unversioned) if m[1] == "IteratorAge"]


@pytest.mark.parametrize("namespace", ["AWS/Lambda", "n" * 256])
def test_an_invalid_namespace_fails_the_synth(cdk_env: None, fake_lambdas: Path, namespace: str) -> None:
    from aws_cdk import App, Stack

    from langgraph.checkpoint.dynamodb.cdk import CheckpointStore, FunctionOptions, MonitoringOptions

    app = App(context=FAST_CONTEXT, builtin_cloud_formation_validation=False)
    with pytest.raises(ValueError, match="LANGGRAPH_DYNAMODB_METRICS_NAMESPACE"):
        CheckpointStore(
            Stack(app, "S"),
            "Store",
            function_options=FunctionOptions(code_dir=fake_lambdas),
            monitoring_options=MonitoringOptions(metrics_namespace=namespace),
        )
