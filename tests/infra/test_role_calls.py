"""Each role, checked against what its code really calls.

The role statements in ``test_grants.py`` are derived by reading the code
paths. Here the real handlers (``lambdas/<name>/handler.py``, and the
reference stack's agent) run against the moto server on a versioned bucket,
as deployed, with every DynamoDB and S3 request recorded at the botocore
level (each element of a ``TransactWriteItems`` as the action IAM authorizes
it as: ``ConditionCheck`` -> ``dynamodb:ConditionCheckItem``, ``Put`` ->
``PutItem``, ...); each request is then evaluated against the synthesized
role policy (actions, resources, ``dynamodb:LeadingKeys`` and ``s3:prefix``
conditions), and every granted action must have been used by some request
(the recorder and the evaluator are ``tests/support/iam.py``, which also
checks every request of every handler in the other tiers against its role).
So a code change that needs a new permission fails here (moto enforces no
IAM), and so does a grant that the code no longer needs. The agent role
(``grant_read_write``) and a tenant role (``grant_tenant_read_write``) are
checked the same way, with a lease-bound saver (``lock.run_once``,
``ThreadLease.bind``) among their callers.
"""

from __future__ import annotations

import importlib
import os
import time
import uuid
from typing import Any

import boto3
import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from tests.support.harness import uuid6_at
from tests.support.iam import Recorder, Request, check_role, data_statements
from tests.support.iam import matching as _matching

from langgraph.checkpoint.dynamodb import DynamoDBSaver, clock, schema
from langgraph.checkpoint.dynamodb.lambdas import handlers
from langgraph.checkpoint.dynamodb.lambdas.handlers import StoreConfig

REF = "LangGraphCheckpointStack"
TABLE = "<CheckpointStoreTable.Arn>"
BUCKET = "<CheckpointStoreBucket.Arn>"
STATE_PK = "|lifecycle"


def _data_statements(
    synth: Any, role: str, *, stack: str = REF, role_prefix: str | None = None
) -> list[dict[str, Any]]:
    """The role's table and bucket statements (logs, DLQ and stream access are the Lambda service's).

    ``role`` names a maintenance function's role (``CheckpointStore<role>Role``);
    ``role_prefix`` any other role's logical id prefix in ``stack``.
    """
    return data_statements(synth.role_statements(stack, role_prefix or f"CheckpointStore{role}Role"))


def _check_role(
    synth: Any, role: str, requests: list[Request], *, stack: str = REF, role_prefix: str | None = None
) -> None:
    """Every request allowed, every granted action used (tests/support/iam.py evaluates)."""
    check_role(_data_statements(synth, role, stack=stack, role_prefix=role_prefix), requests, role)


# ------------------------------------------------------------------ scenario


def _checkpoint(cid: str, values: dict[str, Any], versions: dict[str, str]) -> Any:
    from langgraph.checkpoint.base import empty_checkpoint

    cp = empty_checkpoint()
    cp["id"] = cid
    cp["channel_values"] = values
    cp["channel_versions"] = versions
    return cp


def _cfg(thread: str, cid: str | None = None) -> dict[str, Any]:
    conf = {"thread_id": thread, "checkpoint_ns": ""}
    if cid:
        conf["checkpoint_id"] = cid
    return {"configurable": conf}


def _chain(saver: DynamoDBSaver, thread: str, ids: list[str], big: bytes) -> list[dict[str, Any]]:
    """Checkpoints ``ids`` in order: the first introduces channel ``big``, the rest reuse its version."""
    configs, parent = [], None
    for n, cid in enumerate(ids):
        cfg = _cfg(thread, parent)
        cp = _checkpoint(cid, {"big": big, "step": n}, {"big": "1", "step": str(n + 1)})
        new = {"big": "1", "step": str(n + 1)} if n == 0 else {"step": str(n + 1)}
        parent = saver.put(cfg, cp, {"step": n}, new)["configurable"]["checkpoint_id"]
        configs.append(_cfg(thread, parent))
    return configs


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch, reference: Any):
    """A fresh table and a *versioned* bucket (the construct's default), and the handlers' saver recorded."""
    DynamoDBSaver(**names).setup()
    boto3.client("s3").put_bucket_versioning(
        Bucket=names["bucket_name"], VersioningConfiguration={"Status": "Enabled"}
    )
    recorder = Recorder(names["table_name"], names["bucket_name"])

    def use_function_environment(fn_prefix: str, **overrides: str) -> None:
        """The function's environment from the template, with the names of this test's store."""
        _, fn = reference.one(REF, "AWS::Lambda::Function", fn_prefix)
        env = dict(fn["Properties"]["Environment"]["Variables"])
        env.update(
            LANGGRAPH_DYNAMODB_TABLE=names["table_name"],
            LANGGRAPH_DYNAMODB_BUCKET=names["bucket_name"],
            **overrides,
        )
        for key, value in env.items():
            assert isinstance(value, str), (key, value)
            monkeypatch.setenv(key, value)
        saver = StoreConfig.from_env(os.environ).saver(
            dynamodb_client=recorder.attach(boto3.client("dynamodb")),
            s3_client=recorder.attach(boto3.client("s3")),
        )
        previous = handlers.use_saver(saver)
        if not originals:
            originals.append(previous)

    originals: list[Any] = []  # the handlers' saver before this test, put back after it
    yield {"recorder": recorder, "use": use_function_environment, **names}
    current = handlers.cached_saver()
    if current is not None:
        current.close()
    if originals:
        handlers.use_saver(originals[0])


def _rehomed_to_s3(requests: list[Request]) -> bool:
    """Whether a held value was moved out of a deleted checkpoint into its S3 value object."""
    return any(r.action == "s3:PutObject" and "/big/" in r.resource for r in requests)


def _deleted_under(requests: list[Request], *threads: str) -> bool:
    """Whether objects of each of ``threads`` were deleted."""
    deleted = [r.resource for r in requests if r.action == "s3:DeleteObject"]
    prefixes = [f"{BUCKET}/{schema.s3_thread_prefix('checkpoints/', t)}" for t in threads]
    return all(any(d.startswith(p) for d in deleted) for p in prefixes)


def _handler(name: str) -> Any:
    # The handler the construct deploys (MAINTENANCE_HANDLERS), from the package.
    return importlib.import_module(f"langgraph.checkpoint.dynamodb.lambdas.{name}").handler


def _versions(bucket: str, prefix: str) -> tuple[set[str], set[str]]:
    """(keys with a current version, keys with only noncurrent versions) under ``prefix``."""
    resp = boto3.client("s3").list_object_versions(Bucket=bucket, Prefix=prefix)
    current = {v["Key"] for v in resp.get("Versions", []) if v["IsLatest"]}
    old = {v["Key"] for v in resp.get("Versions", []) if not v["IsLatest"]}
    return current, old - current


def test_pruner_role_is_exactly_what_the_pruner_calls(store: dict[str, Any], reference: Any) -> None:
    table, bucket = store["table_name"], store["bucket_name"]
    # Written with a high S3 threshold: a 100 KB value is held by the checkpoint
    # that introduces it, so pruning that checkpoint re-homes it (to S3: the
    # pruner's saver has the default 64 KB threshold).
    writer = DynamoDBSaver(table_name=table, bucket_name=bucket, s3_threshold=300_000)
    spill = DynamoDBSaver(table_name=table, bucket_name=bucket)  # default thresholds: big writes go to S3
    big = os.urandom(100_000)
    active = f"t-{uuid.uuid4().hex[:12]}"
    configs = _chain(writer, active, [uuid6_at(time.time() - 30 + i) for i in range(3)], big)
    spill.put_writes(configs[0], [("w", os.urandom(100_000))], "task-1")  # an S3 object pruned with it
    idle = f"t-{uuid.uuid4().hex[:12]}"
    idle_cfgs = _chain(spill, idle, [uuid6_at(time.time() - 3 * 86400)], b"small")
    spill.put_writes(idle_cfgs[0], [("w", os.urandom(100_000))], "task-1")

    store["use"]("CheckpointStorePruner", PRUNE_KEEP_LAST="1", PRUNE_IDLE_DAYS="1")
    out = _handler("pruner")({"source": "aws.events"}, None)
    assert out["complete"] and out["threads_deleted"] == 1 and out["checkpoints_deleted"] == 3
    assert _rehomed_to_s3(store["recorder"].requests)
    assert _deleted_under(store["recorder"].requests, active, idle)

    _check_role(reference, "Pruner", store["recorder"].requests)
    # The cursor item was written under the state partition, never a thread's.
    cursor = [r for r in store["recorder"].requests if r.action == "dynamodb:PutItem"]
    assert cursor and all(r.leading_keys == {STATE_PK} for r in cursor)
    # The kept checkpoint still reads its value (re-homed to S3); the deleted
    # objects are noncurrent versions now, for a point-in-time restore.
    assert writer.get_tuple(configs[-1]).checkpoint["channel_values"]["big"] == big
    _, deleted = _versions(bucket, schema.s3_thread_prefix("checkpoints/", idle))
    assert deleted, "a versioned bucket keeps what the pruner deleted as noncurrent versions"


def test_reaper_role_is_exactly_what_the_reaper_calls(
    store: dict[str, Any], reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, bucket = store["table_name"], store["bucket_name"]
    offset = [0.0]
    monkeypatch.setattr(clock, "now", lambda: time.time() + offset[0])
    writer = DynamoDBSaver(table_name=table, bucket_name=bucket, s3_threshold=300_000, ttl=600)
    spill = DynamoDBSaver(table_name=table, bucket_name=bucket, ttl=600)
    big = os.urandom(100_000)
    revived, gone = (f"t-{uuid.uuid4().hex[:12]}" for _ in range(2))
    first = _chain(writer, revived, [uuid6_at(time.time())], big)
    spill.put_writes(first[0], [("w", os.urandom(100_000))], "task-1")
    _chain(spill, gone, [uuid6_at(time.time())], b"small")
    spill.put_writes(
        _cfg(gone, spill.get_tuple(_cfg(gone)).config["configurable"]["checkpoint_id"]),
        [("w", os.urandom(100_000))],
        "t",
    )
    expired_at = clock.now() + 650
    offset[0] = 700.0  # the thread came back after its head expired: a newer checkpoint reuses `big`
    # ... from a process that does not see the expired head (it would reap the
    # thread inline, leaving the reaper nothing to re-home).
    writer.track_threads = False
    cp = _checkpoint(uuid6_at(time.time() + 700), {"big": big, "step": 9}, {"big": "1", "step": "9"})
    writer.put(first[0], cp, {"step": 9}, {"step": "9"})

    def ttl_record(thread: str) -> dict[str, Any]:
        return {
            "eventName": "REMOVE",
            "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
            "dynamodb": {
                "ApproximateCreationDateTime": expired_at,
                "Keys": {"PK": {"S": schema.partition_key(thread)}, "SK": {"S": schema.HEAD_SK}},
            },
        }

    store["use"]("CheckpointStoreReaper")
    out = _handler("reaper")({"Records": [ttl_record(revived), ttl_record(gone)]}, None)
    assert out["threads_scanned"] == 2
    assert _rehomed_to_s3(store["recorder"].requests)
    assert _deleted_under(store["recorder"].requests, revived, gone)

    _check_role(reference, "Reaper", store["recorder"].requests)
    assert not [r for r in store["recorder"].requests if r.action == "dynamodb:Scan"]
    assert writer.get_tuple(_cfg(revived)).checkpoint["channel_values"]["big"] == big


def test_orphan_sweeper_role_is_exactly_what_the_sweeper_calls(
    store: dict[str, Any], reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, bucket = store["table_name"], store["bucket_name"]
    saver = DynamoDBSaver(table_name=table, bucket_name=bucket)
    thread = f"t-{uuid.uuid4().hex[:12]}"
    configs = _chain(saver, thread, [uuid6_at(time.time())], b"small")
    saver.put_writes(configs[0], [("w", os.urandom(100_000))], "task-1")
    s3 = boto3.client("s3")
    prefix = schema.s3_thread_prefix("checkpoints/", thread)
    s3.put_object(Bucket=bucket, Key=prefix + "_/c/x/w/t/0.orphan", Body=b"lost")
    referenced, _ = _versions(bucket, prefix)

    store["use"]("CheckpointStoreOrphanSweeper")
    # Past the grace period (S3 stamps objects with real time, so move the library's clock).
    monkeypatch.setattr(clock, "now", lambda: time.time() + 25 * 3600)
    out = _handler("orphan_sweeper")({"source": "aws.events"}, None)
    assert out["complete"] and out["s3_objects_deleted"] == 1

    requests = store["recorder"].requests
    _check_role(reference, "OrphanSweeper", requests)
    writes = [r for r in requests if r.action.split(":")[1] in ("PutItem", "BatchWriteItem", "DeleteItem")]
    assert writes and {k for r in writes for k in r.leading_keys} == {STATE_PK}
    current, deleted = _versions(bucket, prefix)
    assert current == referenced - {prefix + "_/c/x/w/t/0.orphan"} and deleted == {
        prefix + "_/c/x/w/t/0.orphan"
    }
    assert saver.get_tuple(configs[0]).pending_writes[0][1] == "w"


def test_maintenance_role_is_exactly_what_the_maintenance_function_calls(
    store: dict[str, Any], reference: Any
) -> None:
    """Every action, through the real handler: a copy, a prune that re-homes, a delete, a run's deletion."""
    table, bucket = store["table_name"], store["bucket_name"]
    writer = DynamoDBSaver(table_name=table, bucket_name=bucket, s3_threshold=300_000)
    spill = DynamoDBSaver(table_name=table, bucket_name=bucket)
    big = os.urandom(100_000)
    source, copy, active, runs = (f"t-{uuid.uuid4().hex[:12]}" for _ in range(4))
    configs = _chain(spill, source, [uuid6_at(time.time() - 30 + i) for i in range(2)], big)
    spill.put_writes(configs[-1], [("w", os.urandom(100_000))], "task-1")
    held = _chain(writer, active, [uuid6_at(time.time() - 20 + i) for i in range(3)], big)
    spill.put_writes(held[0], [("w", os.urandom(100_000))], "task-1")
    run = str(uuid.uuid4())
    cp = _checkpoint(uuid6_at(time.time()), {"step": 1}, {"step": "1"})
    writer.put(_cfg(runs), cp, {"run_id": run}, {"step": "1"})

    store["use"]("CheckpointStoreMaintenance")
    handler = _handler("maintenance")
    copied = handler({"action": "copy_thread", "source_thread_id": source, "target_thread_id": copy}, None)
    assert copied["status"] == "done" and copied["report"]["objects_copied"] >= 2, copied
    pruned = handler({"action": "prune", "thread_ids": [active], "keep_last": 1}, None)
    assert pruned["report"]["values_rehomed"] == 1 and pruned["report"]["checkpoints_deleted"] == 2, pruned
    deleted = handler({"action": "delete_thread", "thread_id": copy}, None)
    assert deleted["status"] == "done" and deleted["report"]["checkpoints_deleted"] == 2, deleted
    by_run = handler({"action": "delete_for_runs", "run_ids": [run]}, None)
    assert by_run["report"]["checkpoints_deleted"] == 1, by_run
    requests = store["recorder"].requests
    assert _rehomed_to_s3(requests) and _deleted_under(requests, active, copy)

    _check_role(reference, "Maintenance", requests)
    assert not [r for r in requests if r.action == "dynamodb:Scan"]
    assert {r.resource for r in requests if "/index/" in r.resource} == {f"{TABLE}/index/run_id-index"}
    assert writer.get_tuple(held[-1]).checkpoint["channel_values"]["big"] == big
    assert spill.get_tuple(_cfg(copy)) is None and writer.get_tuple(_cfg(runs)) is None


def _lease_checks(requests: list[Request]) -> list[Request]:
    """The ConditionCheck elements of the lease-fenced writes (TransactWriteItems)."""
    return [r for r in requests if r.action == "dynamodb:ConditionCheckItem"]


def test_agent_role_is_exactly_what_the_agent_and_the_saver_call(
    store: dict[str, Any], reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``grant_read_write`` (the reference agent's role) against the agent handler and the saver API.

    The agent runs each request through ``lock.run_once``: its checkpoints and
    writes are fenced by the lease, each one ``TransactWriteItems`` whose
    ``ConditionCheck`` IAM authorizes as ``dynamodb:ConditionCheckItem``.
    Then the rest of what the savers do (a lease-bound ``put``/``put_writes``
    of a held value and an S3 write, ``prune`` re-homing the value into a
    blob item, reads, ``list``, ``delete_for_runs``, ``delete_thread``), so
    that every granted action is used. On the grant without
    ``ConditionCheckItem`` this fails: the fenced writes are denied.
    """
    from lambdas.agent import handler as agent

    from langgraph.checkpoint.dynamodb.lock import ThreadLease

    agent.reset()
    monkeypatch.setattr(agent, "_graph", None)  # rebuilt on the recorded saver, dropped afterwards
    store["use"]("AgentFunction")
    thread = f"t-{uuid.uuid4().hex[:12]}"
    base = {"thread_id": thread, "caller": "alice"}
    first = agent.handler({**base, "action": "start", "request_id": "r-1", "input": "Add an export feature"})
    assert first["statusCode"] == 200 and first["status"] == "waiting", first
    done = agent.handler(
        {
            **base,
            "action": "resume",
            "request_id": "r-2",
            "answer": "CSV",
            "checkpoint_id": first["checkpoint_id"],
        }
    )
    assert done["statusCode"] == 200 and done["status"] == "done", done
    requests = store["recorder"].requests
    pk = schema.partition_key(agent.thread_key("direct:alice", thread))
    assert _lease_checks(requests) and all(r.leading_keys == {pk} for r in _lease_checks(requests))

    saver = handlers.cached_saver()
    assert saver is not None
    other = f"t-{uuid.uuid4().hex[:12]}"
    with ThreadLease(saver, other, lease_seconds=30) as lease:
        # Lease-bound puts and writes: a 10 KB value held by the first
        # checkpoint, a 100 KB write in S3.
        bound = lease.bind()
        configs = _chain(bound, other, [uuid6_at(time.time() - 2 + i) for i in range(2)], os.urandom(10_000))
        bound.put_writes(configs[-1], [("w", os.urandom(100_000))], "task-1")
    assert {r.leading_keys for r in _lease_checks(requests)} == {
        frozenset({pk}),
        frozenset({saver.partition_key(other)}),
    }
    # Pruning the first checkpoint re-homes its value into a blob item, which a
    # reader fetches with BatchGetItem (a new container's: nothing cached).
    assert saver.prune([other], keep_last=1).checkpoints_deleted == 1
    saver.caches.value_cache.clear()
    got = saver.get_tuple(configs[-1])
    assert got is not None and got.pending_writes and len(got.checkpoint["channel_values"]["big"]) == 10_000
    assert len(list(saver.list(_cfg(other)))) == 1
    run, runs = str(uuid.uuid4()), f"t-{uuid.uuid4().hex[:12]}"
    saver.put(
        _cfg(runs),
        _checkpoint(uuid6_at(time.time()), {"step": 1}, {"step": "1"}),
        {"run_id": run},
        {"step": "1"},
    )
    saver.delete_for_runs([run])  # the run index
    assert saver.get_tuple(_cfg(runs)) is None
    saver.delete_thread(other)

    _check_role(reference, "Agent", requests, role_prefix="AgentRole")
    assert not [r for r in requests if r.action == "dynamodb:Scan"]


def test_tenant_role_covers_a_lease_bound_tenant_saver(
    moto_endpoint: str, names: dict[str, str], custom: Any
) -> None:
    """``grant_tenant_read_write``: the lock item lives in the thread's partition, inside LeadingKeys."""
    from langgraph.checkpoint.dynamodb.lock import RunContext, run_once

    DynamoDBSaver(**names).setup()
    recorder = Recorder(
        names["table_name"],
        names["bucket_name"],
        table_arn="<StoreTable.Arn>",
        bucket_arn="<StoreBucket.Arn>",
    )
    # The Custom stack's store (prefix ckpt/) and its TenantRole (tenant "acme-").
    saver = DynamoDBSaver(
        **names,
        s3_key_prefix="ckpt/",
        tenant_prefix="acme-",
        track_threads=True,  # its heads' shard count: the grant's read of the layout item
        dynamodb_client=recorder.attach(boto3.client("dynamodb")),
        s3_client=recorder.attach(boto3.client("s3")),
    )
    thread = f"t-{uuid.uuid4().hex[:12]}"

    def work(ctx: RunContext) -> list[dict[str, Any]]:
        # As in the agent's test: a held 10 KB value, a 100 KB write in S3.
        configs = _chain(
            ctx.saver, thread, [uuid6_at(time.time() - 2 + i) for i in range(2)], os.urandom(10_000)
        )
        ctx.saver.put_writes(configs[-1], [("w", os.urandom(100_000))], "task-1")
        return configs

    with saver:
        configs = run_once(saver, thread, "r-1", None, work).value
        assert saver.prune([thread], keep_last=1).checkpoints_deleted == 1
        saver.caches.value_cache.clear()  # read as a new container would: BatchGetItem of the blob
        got = saver.get_tuple(configs[-1])
        assert (
            got is not None and got.pending_writes and len(got.checkpoint["channel_values"]["big"]) == 10_000
        )
        assert len(list(saver.list(_cfg(thread)))) == 1
        saver.delete_thread(thread)

    requests = recorder.requests
    checks = _lease_checks(requests)
    assert checks and all(r.leading_keys == {saver.partition_key(thread)} for r in checks)
    assert saver.partition_key(thread).startswith("acme-|")
    _check_role(custom, "Tenant", requests, stack="Custom", role_prefix="TenantRole")


def test_the_evaluator_refuses_what_a_role_lacks(reference: Any, custom: Any) -> None:
    """Negative control: the evaluator is not a rubber stamp."""
    thread_key = frozenset({schema.partition_key("t-victim")})
    sweeper = _data_statements(reference, "OrphanSweeper")
    assert not _matching(sweeper, Request("dynamodb:PutItem", TABLE, thread_key))  # cursor item only
    assert _matching(sweeper, Request("dynamodb:PutItem", TABLE, frozenset({STATE_PK})))
    assert not _matching(sweeper, Request("s3:PutObject", f"{BUCKET}/checkpoints/x"))
    assert not _matching(sweeper, Request("s3:ListBucket", BUCKET, s3_prefix="other/"))
    reaper = _data_statements(reference, "Reaper")
    assert not _matching(reaper, Request("dynamodb:Scan", TABLE))
    # No maintenance function writes under a lease: none may check a lock item.
    for role in ("Pruner", "Reaper", "OrphanSweeper", "Maintenance"):
        statements = _data_statements(reference, role)
        assert not _matching(statements, Request("dynamodb:ConditionCheckItem", TABLE, thread_key)), role
    # The agent may, in any partition; the tenant only in its own.
    agent = _data_statements(reference, "Agent", role_prefix="AgentRole")
    assert _matching(agent, Request("dynamodb:ConditionCheckItem", TABLE, thread_key))
    tenant = _data_statements(custom, "Tenant", stack="Custom", role_prefix="TenantRole")
    store_table = "<StoreTable.Arn>"
    assert _matching(tenant, Request("dynamodb:ConditionCheckItem", store_table, frozenset({"acme-|t"})))
    assert not _matching(tenant, Request("dynamodb:ConditionCheckItem", store_table, thread_key))
    assert not _matching(reaper, Request("dynamodb:Query", TABLE + "/index/threads-index"))
    with pytest.raises(AssertionError, match="granted but never called"):
        _check_role(reference, "Reaper", [Request("dynamodb:Query", TABLE, thread_key)])
