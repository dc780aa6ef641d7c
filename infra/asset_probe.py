"""Import and run the packaged Lambda handlers with *only* the asset on ``sys.path``.

Run as ``python -I -S infra/asset_probe.py ASSET_DIR SPEC_JSON``: ``-S`` keeps
site-packages off ``sys.path`` and ``-I`` ignores ``PYTHONPATH`` and the
script's own folder, so every import below resolves to the Lambda asset or
the standard library, as in the Lambda runtime. The AWS endpoint, region and
(dummy) credentials come from the environment (a moto server).

``SPEC_JSON`` names the table and bucket and the handlers to exercise::

    {"table": "...", "bucket": "...", "s3_key_prefix": "checkpoints/",
     "handlers": {"agent": "agent.handler.handler",
                  "pruner": "langgraph.checkpoint.dynamodb.lambdas.pruner.handler"}}

Only the standard library may be imported before ``sys.path`` is set up.
Prints one JSON report on stdout; exits non-zero on the first failure.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import uuid
from typing import Any


class _Context:
    """The parts of the Lambda context object handlers commonly touch."""

    function_name = "asset-probe"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:asset-probe"
    memory_limit_in_mb = 512
    log_group_name = "/aws/lambda/asset-probe"
    log_stream_name = "probe"

    def __init__(self, budget_seconds: float = 60.0) -> None:
        self.aws_request_id = str(uuid.uuid4())
        self._deadline = time.monotonic() + budget_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _origin(module: Any, asset: str) -> str:
    path = os.path.realpath(module.__file__)
    if not path.startswith(asset + os.sep):
        raise AssertionError(f"{module.__name__} imported from {path}, not from the asset {asset}")
    return os.path.relpath(path, asset)


def _check_isolation(asset: str) -> dict[str, Any]:
    leaked = [p for p in sys.path if "site-packages" in p or "dist-packages" in p]
    if leaked:
        raise AssertionError(f"site-packages on sys.path (run with -I -S): {leaked}")
    import boto3

    import langgraph.checkpoint.dynamodb as lib

    report = {"library": _origin(lib, asset), "boto3": _origin(boto3, asset)}
    try:
        import aws_cdk  # noqa: F401
    except ImportError:
        report["aws_cdk"] = "absent"
    else:  # pragma: no cover - a packaging bug
        raise AssertionError("aws_cdk is importable from the asset: the cdk subpackage leaked in")
    if os.path.exists(os.path.join(asset, "langgraph", "checkpoint", "dynamodb", "cdk")):
        raise AssertionError("the library's cdk subpackage was copied into the asset")
    return report


def _saver_roundtrip(spec: dict[str, Any]) -> dict[str, Any]:
    from langgraph.checkpoint.base import empty_checkpoint

    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    saver = DynamoDBSaver(table_name=spec["table"], bucket_name=spec.get("bucket"))
    thread = f"probe-{uuid.uuid4().hex[:8]}"
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    # Incompressible and large enough to be spilled to S3 when a bucket is configured.
    blob = os.urandom(150_000).hex()
    checkpoint["channel_values"] = {"blob": blob}
    checkpoint["channel_versions"] = {"blob": saver.get_next_version(None, None)}
    saved = saver.put(config, checkpoint, {"source": "input", "step": -1}, checkpoint["channel_versions"])
    got = saver.get_tuple(saved)
    if got is None or got.checkpoint["id"] != checkpoint["id"]:
        raise AssertionError(f"get_tuple did not return the stored checkpoint: {got}")
    if got.checkpoint["channel_values"].get("blob") != blob:
        raise AssertionError("the large channel value did not round-trip")
    objects = 0
    if spec.get("bucket"):
        import boto3

        listing = boto3.client("s3").list_objects_v2(
            Bucket=spec["bucket"], Prefix=spec.get("s3_key_prefix", "checkpoints/")
        )
        objects = listing.get("KeyCount", 0)
        if objects < 1:
            raise AssertionError("the large channel value was not stored in S3")
    saver.delete_thread(thread)
    return {"thread_id": thread, "checkpoint_id": checkpoint["id"], "s3_objects": objects}


def _call(dotted: str, event: Any) -> Any:
    module_name, func_name = dotted.rsplit(".", 1)
    func = getattr(importlib.import_module(module_name), func_name)
    return func(event, _Context())


def _run_agent(dotted: str) -> dict[str, Any]:
    thread = f"agent-{uuid.uuid4().hex[:8]}"
    start = _call(
        dotted,
        {"action": "start", "thread_id": thread, "request_id": "r1", "input": "Add an export feature"},
    )
    if start.get("statusCode") != 200 or start.get("status") != "waiting" or not start.get("question"):
        raise AssertionError(f"agent start: {start}")
    done = _call(
        dotted,
        {
            "action": "resume",
            "thread_id": thread,
            "request_id": "r2",
            "answer": "CSV, admins only",
            "checkpoint_id": start["checkpoint_id"],
        },
    )
    if done.get("statusCode") != 200 or done.get("status") != "done":
        raise AssertionError(f"agent resume: {done}")
    return {"question": start["question"], "result": done.get("result")}


_SCHEDULED_EVENT = {
    "version": "0",
    "id": "00000000-0000-0000-0000-000000000000",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "123456789012",
    "region": "us-east-1",
    "resources": [],
    "detail": {},
}


def _reaper_event(table: str) -> dict[str, Any]:
    """A TTL deletion of a thread head that does not exist: must be a no-op, not an error."""
    from langgraph.checkpoint.dynamodb import schema

    keys = {
        schema.ATTR.PK: {"S": schema.partition_key(f"gone-{uuid.uuid4().hex[:8]}")},
        schema.ATTR.SK: {"S": schema.HEAD_SK},
    }
    return {
        "Records": [
            {
                "eventID": "1",
                "eventName": "REMOVE",
                "eventSource": "aws:dynamodb",
                "awsRegion": "us-east-1",
                "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
                "dynamodb": {
                    "Keys": keys,
                    "SequenceNumber": "100",
                    "SizeBytes": 50,
                    "StreamViewType": "KEYS_ONLY",
                },
                "eventSourceARN": f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}/stream/x",
            }
        ]
    }


def main(asset: str, spec_json: str) -> int:
    asset = os.path.realpath(asset)
    spec = json.loads(spec_json)
    sys.path.insert(0, asset)
    os.environ["LANGGRAPH_DYNAMODB_TABLE"] = spec["table"]
    os.environ["LANGGRAPH_DYNAMODB_S3_KEY_PREFIX"] = spec.get("s3_key_prefix", "checkpoints/")
    if spec.get("bucket"):
        os.environ["LANGGRAPH_DYNAMODB_BUCKET"] = spec["bucket"]
    os.environ.update(spec.get("env", {}))

    report: dict[str, Any] = {"isolation": _check_isolation(asset)}
    report["saver"] = _saver_roundtrip(spec)
    for name, dotted in spec.get("handlers", {}).items():
        if name == "agent":
            report[name] = _run_agent(dotted)
            continue
        event = _reaper_event(spec["table"]) if name == "reaper" else _SCHEDULED_EVENT
        result = _call(dotted, event)
        # The maintenance handlers return their run report: it must be clean.
        if isinstance(result, dict) and (result.get("errors") or result.get("complete") is False):
            raise AssertionError(f"{name} reported problems: {result}")
        report[name] = repr(result)
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
