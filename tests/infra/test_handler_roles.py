"""The per-function IAM check of every tier (tests/support/iam.py, tests/conftest.py) fires.

tests/conftest.py evaluates every request a Lambda handler sends, in any
tier, against the role the synthesized reference stack gives the function
that runs the handler. Here: a handler request outside its role is caught
and described (function, action, resource, the condition it misses), by
the autouse check too (``iam_violation`` says the test expects it); requests
the test itself sends while a handler runs are not the handler's; and a role
with one grant removed refuses what the real handler sends.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import boto3
import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from tests.support import iam

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.lambdas import handlers, orphan_sweeper, pruner

SWEEPER = "langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler"
PRUNER = "langgraph.checkpoint.dynamodb.lambdas.pruner.handler"


@pytest.fixture
def store(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    with DynamoDBSaver(table_name=names["table_name"], bucket_name=names["bucket_name"]) as saver:
        saver.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_BUCKET", names["bucket_name"])
    handlers.reset_saver()
    yield names
    handlers.reset_saver()


@pytest.fixture(scope="session")
def roles(_iam_cache: Path) -> dict[str, iam.FunctionRole]:
    found = iam.reference_roles(_iam_cache)
    assert found is not None
    return found


def _during_sweep(monkeypatch: pytest.MonkeyPatch, extra: Any) -> None:
    """Run ``extra()`` inside the sweeper handler, after its work (its log call)."""
    log_event = orphan_sweeper.log_event

    def log_then_extra(job: str, **fields: Any) -> dict[str, Any]:
        extra()
        return log_event(job, **fields)

    monkeypatch.setattr(orphan_sweeper, "log_event", log_then_extra)


@pytest.mark.iam_violation("CheckpointStoreOrphanSweeper")
def test_a_handler_request_outside_its_role_fails(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch, roles: dict[str, iam.FunctionRole]
) -> None:
    """The sweeper writes a thread's item, scans, and deletes an object outside the key prefix: three denials."""
    table, bucket = store["table_name"], store["bucket_name"]
    victim = schema.partition_key("t-victim")

    def out_of_role() -> None:
        saver: Any = handlers.get_saver()
        ddb, s3 = saver.clients["dynamodb"], saver.clients["s3"]
        ddb.put_item(TableName=table, Item={"PK": {"S": victim}, "SK": {"S": "x"}})
        ddb.scan(TableName=table, Limit=1)
        s3.delete_object(Bucket=bucket, Key="elsewhere/x")

    _during_sweep(monkeypatch, out_of_role)
    mark = iam.GUARD.mark()
    out = orphan_sweeper.handler({"source": "aws.events"}, None)
    assert out["complete"]

    found = [d.message for d in iam.denials(iam.GUARD.since(mark), roles)]
    fn = roles[SWEEPER]
    assert fn.function.startswith("CheckpointStoreOrphanSweeper")
    put = [m for m in found if "dynamodb:PutItem" in m]
    assert len(put) == 1, found
    assert fn.function in put[0] and f"on {fn.table_arn}:" in put[0]
    assert "condition not met: ForAllValues:StringEquals dynamodb:LeadingKeys ['|lifecycle']" in put[0]
    assert f"partition keys [{victim!r}]" in put[0]
    assert [m for m in found if "dynamodb:Scan" in m and "no statement grants dynamodb:Scan" in m], found
    obj = [m for m in found if "s3:DeleteObject" in m]
    assert obj and f"s3:DeleteObject on {fn.bucket_arn}/elsewhere/x" in obj[0], found
    assert "is granted on" in obj[0] and "checkpoints/*" in obj[0]
    assert len(found) == 3, found  # the sweeper's own requests were all allowed


def test_what_the_test_sends_meanwhile_is_not_the_handlers(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch, roles: dict[str, iam.FunctionRole]
) -> None:
    """A client the test made before is the test's; one the handler makes while it runs is the handler's."""
    table = store["table_name"]
    own = boto3.client("dynamodb")
    made: list[Any] = []

    def both() -> None:
        own.scan(TableName=table, Limit=1)  # the test's identity: not checked
        made.append(boto3.client("dynamodb"))
        made[0].get_item(TableName=table, Key={"PK": {"S": schema.LIFECYCLE_PK}, "SK": {"S": "x"}})

    _during_sweep(monkeypatch, both)
    mark = iam.GUARD.mark()
    orphan_sweeper.handler({"source": "aws.events"}, None)
    records = iam.GUARD.since(mark)
    assert records and {r.handlers for r in records} == {(SWEEPER,)}
    assert "dynamodb.Scan" not in {r.operation for r in records}
    assert [r for r in records if r.operation == "dynamodb.GetItem"][-1].requests[0].leading_keys == {
        schema.LIFECYCLE_PK
    }
    assert not iam.denials(records, roles)
    # Outside a handler nothing is recorded.
    mark = iam.GUARD.mark()
    handlers.get_saver().get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
    assert iam.GUARD.since(mark) == []


def test_a_role_without_one_grant_refuses_what_the_handler_sends(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch, roles: dict[str, iam.FunctionRole]
) -> None:
    """The real pruner against its role minus the cursor statement: its cursor reads and writes are denied."""
    from langgraph.checkpoint.base import empty_checkpoint

    with DynamoDBSaver(table_name=store["table_name"], bucket_name=store["bucket_name"]) as saver:
        config: Any = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}", "checkpoint_ns": ""}}
        for _ in range(2):
            config = saver.put(config, empty_checkpoint(), {}, {})
    monkeypatch.setenv("PRUNE_KEEP_LAST", "1")
    mark = iam.GUARD.mark()
    assert pruner.handler({"source": "aws.events"}, None)["complete"]
    records = iam.GUARD.since(mark)
    assert not iam.denials(records, roles)

    fn = roles[PRUNER]
    cursor = [s for s in fn.statements if "dynamodb:LeadingKeys" in str(s.get("Condition"))]
    assert len(cursor) == 1 and cursor[0]["Action"] == ["dynamodb:GetItem", "dynamodb:PutItem"]
    narrowed = replace(fn, statements=tuple(s for s in fn.statements if s not in cursor))
    found = " ".join(d.message for d in iam.denials(records, {PRUNER: narrowed}))
    assert "dynamodb:GetItem" in found and "dynamodb:PutItem" in found and "no statement grants" in found
