"""Finding 1: a tenant's forged S3 pointers never reach another tenant's objects.

The attacker holds tenant ``a``'s grant only (checked on every call by
:class:`~tests.security.grant.TenantGrant`, with the patterns the CDK
construct writes). It runs the library normally, then rewrites its *own*
items with a raw boto3 client so that their body (``cp``), metadata
(``md``) or pending-write (``w0``) pointers name the S3 objects of tenant
``victim``. It never touches the victim's keys itself.

Then: readers refuse the forged item with ``CorruptPayloadError`` naming it
(no victim data comes back), and no deleter (``delete_thread``, ``prune``,
``delete_for_runs``, ``copy_thread``, the reaper, the pruner, the orphan
sweeper, the CLI) deletes or copies a victim object: the victim's objects
are listed before and after, byte for byte.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import CorruptPayloadError, clock, schema
from langgraph.checkpoint.dynamodb.lifecycle import TTL_PRINCIPAL, PrunePolicy
from tests.security.grant import AccessDenied, TenantGrant
from tests.support.harness import Harness, cfg, checkpoint_of, new_thread

ATTR = schema.ATTR
ATTACKER, VICTIM = "a", "victim"
FORGEABLE = ("md", "cp", "w0")


@dataclass
class Scene:
    """A victim's thread with S3 payloads and an attacker's thread, forged at will."""

    h: Harness
    victim: Any
    attacker: Any
    grant: TenantGrant
    raw: Any  # the attacker's boto3 DynamoDB client, under its grant
    marker: str
    run_id: str
    victim_thread: str
    victim_cid: str
    victim_keys: dict[str, str]  # "cp" / "md" / "w0" -> the victim's S3 key
    thread: str  # the attacker's
    cids: list[str]  # the attacker's checkpoints, oldest first
    task: str

    # ---------------------------------------------------------- helpers

    def victim_objects(self) -> dict[str, bytes]:
        s3 = boto3.client("s3")
        prefix = self.victim.s3_thread_prefix(self.victim_thread)
        out = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=self.h.bucket_name, Prefix=prefix):
            for o in page.get("Contents", []):
                out[o["Key"]] = s3.get_object(Bucket=self.h.bucket_name, Key=o["Key"])["Body"].read()
        return out

    def forge(self, cid: str, attrs: tuple[str, ...] = FORGEABLE) -> list[tuple[str, str]]:
        """Point ``attrs`` of the attacker's checkpoint ``cid`` at the victim's objects.

        Only the attacker's own items are read and written, with its raw
        client. Returns the (pk, sk) of the items rewritten.
        """
        pk = self.attacker.partition_key(self.thread)
        forged = []
        if {"cp", "md"} & set(attrs):
            key = {ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.checkpoint_sk("", cid)}}
            item = self.raw.get_item(TableName=self.h.table_name, Key=key)["Item"]
            for attr in ("cp", "md"):
                if attr in attrs:
                    item[attr] = {"M": {"s3": {"S": self.victim_keys[attr]}}}
            self.raw.put_item(TableName=self.h.table_name, Item=item)
            forged.append((pk, item[ATTR.SK]["S"]))
        if "w0" in attrs:
            key = {ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.writes_sk("", cid, self.task)}}
            item = self.raw.get_item(TableName=self.h.table_name, Key=key)["Item"]
            item["w0"] = {"L": [item["w0"]["L"][0], {"M": {"s3": {"S": self.victim_keys["w0"]}}}]}
            self.raw.put_item(TableName=self.h.table_name, Item=item)
            forged.append((pk, item[ATTR.SK]["S"]))
        return forged

    def assert_no_victim_data(self, result: Any) -> None:
        text = repr(result)
        assert self.marker not in text and self.victim_cid not in text, "victim data returned"


def _put(
    h: Harness, saver: Any, thread: str, values: dict[str, Any], md: dict[str, Any], parent: str | None
) -> str:
    cp = checkpoint_of(values)
    config = cfg(thread, "", parent)
    h.call("put", config, cp, md, dict(cp["channel_versions"]), saver=saver)
    return str(cp["id"])


@pytest.fixture(params=["sync-s3", "async-s3-encrypted"])
def scene(
    request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> Iterator[Scene]:
    h = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    # Every payload goes to S3 (threshold 0): body, metadata, values, writes.
    victim = h.make_saver(tenant_prefix=VICTIM, s3_threshold=0)
    grant = TenantGrant(ATTACKER, h.table_name, names["bucket_name"])
    attacker = grant.attach_saver(h.make_saver(tenant_prefix=ATTACKER, s3_threshold=0, ttl=3600))
    raw = grant.attach(boto3.client("dynamodb"))
    marker = f"VICTIM-SECRET-{uuid.uuid4().hex}"
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    task = "task-1"

    vt = new_thread()
    vcid = _put(h, victim, vt, {"secret": marker}, {"secret": marker}, None)
    h.call("put_writes", cfg(vt, "", vcid), [("secret", marker)], task, saver=victim)
    s = Scene(h, victim, attacker, grant, raw, marker, run_id, vt, vcid, {}, new_thread(), [], task)
    objs = s.victim_objects()
    s.victim_keys = {
        "cp": next(k for k in objs if k.endswith("/body")),
        "md": next(k for k in objs if k.endswith("/metadata")),
        "w0": next(k for k in objs if "/w/" in k),
    }
    # The attacker's own thread: two checkpoints of a run, each with a write.
    parent = None
    for step in range(2):
        parent = _put(
            h, attacker, s.thread, {"mine": f"step {step}"}, {"run_id": run_id, "step": step}, parent
        )
        h.call("put_writes", cfg(s.thread, "", parent), [("mine", f"write {step}")], task, saver=attacker)
        s.cids.append(parent)
    try:
        yield s
    finally:
        for saver in (victim, attacker):
            if h.is_async:
                h.loop.run(saver.aclose())
            else:
                saver.close()
        h.close()


def test_the_grant_confines_the_attacker(scene: Scene) -> None:
    """The attacker cannot read or delete the victim's object itself.

    The premise of every test here (so it held before the fix as well): what
    the attacker gets, it gets through the library, not through its grant.
    """
    s3 = scene.grant.attach(boto3.client("s3"))
    with pytest.raises(AccessDenied):
        s3.get_object(Bucket=scene.h.bucket_name, Key=scene.victim_keys["md"])
    with pytest.raises(AccessDenied):
        s3.delete_object(Bucket=scene.h.bucket_name, Key=scene.victim_keys["md"])
    with pytest.raises(AccessDenied):
        scene.raw.get_item(
            TableName=scene.h.table_name,
            Key={
                ATTR.PK: {"S": scene.victim.partition_key(scene.victim_thread)},
                ATTR.SK: {"S": schema.HEAD_SK},
            },
        )


# ------------------------------------------------------------------ readers


@pytest.mark.parametrize("attr", FORGEABLE)
def test_tenant_reader_refuses_a_forged_pointer(scene: Scene, attr: str) -> None:
    ((pk, sk),) = scene.forge(scene.cids[-1], (attr,))
    reader = scene.grant.attach_saver(scene.h.make_saver(tenant_prefix=ATTACKER, s3_threshold=0))
    for read in (
        lambda: scene.h.call("get_tuple", cfg(scene.thread), saver=reader),
        lambda: scene.h.call("get_tuple", cfg(scene.thread, "", scene.cids[-1]), saver=reader),
        lambda: _list(scene.h, reader, cfg(scene.thread)),
    ):
        with pytest.raises(CorruptPayloadError) as exc:
            scene.assert_no_victim_data(read())
        assert pk in str(exc.value) and sk in str(exc.value) and repr(attr) in str(exc.value)
    assert scene.victim_keys[attr] in scene.victim_objects()


@pytest.mark.parametrize("attr", FORGEABLE)
def test_untenanted_reader_returns_no_victim_data(scene: Scene, attr: str) -> None:
    """The operator's untenanted saver (the CLI without ``--tenant-prefix``)."""
    scene.forge(scene.cids[-1], (attr,))
    plain = scene.h.saver
    pk = scene.attacker.partition_key(scene.thread)
    # The operator's saver addresses untenanted threads only; on the old
    # layout it read the attacker's partition as thread "a<thread>".
    addressed = plain.thread_id_of(pk) or ATTACKER + scene.thread
    for read in (
        lambda: scene.h.call("get_tuple", cfg(addressed), saver=plain),
        lambda: _list(scene.h, plain, None),
    ):
        try:
            result = read()
        except CorruptPayloadError as exc:
            assert pk in str(exc)
        else:
            scene.assert_no_victim_data(result)


def test_delta_history_refuses_a_forged_write(scene: Scene) -> None:
    scene.forge(scene.cids[0], ("w0",))
    reader = scene.grant.attach_saver(scene.h.make_saver(tenant_prefix=ATTACKER, s3_threshold=0))
    name = "get_delta_channel_history"
    with pytest.raises(CorruptPayloadError, match="w0"):
        scene.assert_no_victim_data(
            scene.h.call(name, config=cfg(scene.thread, "", scene.cids[-1]), channels=["mine"], saver=reader)
        )


# ------------------------------------------------------------------ deleters


def _list(h: Harness, saver: Any, config: Any) -> list[Any]:
    if not h.is_async:
        return list(saver.list(config))

    async def collect() -> list[Any]:
        return [t async for t in saver.alist(config)]

    return h.loop.run(collect())  # type: ignore[no-any-return]


def _stream_event(pk: str, at: float) -> dict[str, Any]:
    return {
        "Records": [
            {
                "eventName": "REMOVE",
                "userIdentity": {"type": "Service", "principalId": TTL_PRINCIPAL},
                "dynamodb": {
                    "Keys": {ATTR.PK: {"S": pk}, ATTR.SK: {"S": schema.HEAD_SK}},
                    "ApproximateCreationDateTime": at,
                },
            }
        ]
    }


def _skew(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    real = time.time
    monkeypatch.setattr(clock, "now", lambda: real() + seconds)


#: Operations that delete what items point to. ``delete_thread``,
#: ``prune(strategy="delete")`` and the orphan sweeper delete by the thread's
#: own prefix and never followed pointers: they passed before the fix too and
#: stay here as guards (the fix changed how maintenance finds a tenant's keys).
DELETERS: dict[str, Callable[[Scene, pytest.MonkeyPatch], Any]] = {
    "delete_thread": lambda s, m: s.h.call("delete_thread", s.thread, saver=s.attacker),
    "prune_keep_last": lambda s, m: s.h.call("prune", [s.thread], keep_last=1, saver=s.attacker),
    "prune_delete": lambda s, m: s.h.call("prune", [s.thread], strategy="delete", saver=s.attacker),
    # The run index spans tenants: delete_for_runs is the operator's.
    "delete_for_runs": lambda s, m: s.h.call("delete_for_runs", [s.run_id], saver=s.h.saver),
    "reap_thread": lambda s, m: s.h.call(
        "reap_thread", s.thread, expired_before=clock.now() + 86_400, saver=s.attacker
    ),
    "reap_expired_stream": lambda s, m: s.h.call(
        "reap_expired_stream",
        _stream_event(s.attacker.partition_key(s.thread), clock.now() + 86_400),
        saver=s.h.saver,
    ),
    "purge_expired": lambda s, m: (_skew(m, 10 * 86_400), s.h.call("purge_expired", saver=s.h.saver)),
    "run_pruner": lambda s, m: s.h.call("run_pruner", PrunePolicy(keep_last=1), saver=s.h.saver),
    "sweep_orphans": lambda s, m: s.h.call("sweep_orphans", grace_seconds=0, saver=s.h.saver),
}


@pytest.mark.parametrize("op", list(DELETERS))
def test_deleters_leave_the_victims_objects_alone(
    scene: Scene, op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = scene.victim_objects()
    assert len(before) >= 4  # body, metadata, value, write
    # The older checkpoint is the one prune and the run delete remove.
    scene.forge(scene.cids[0])
    DELETERS[op](scene, monkeypatch)
    assert scene.victim_objects() == before
    monkeypatch.undo()
    got = scene.h.call("get_tuple", cfg(scene.victim_thread), saver=scene.victim)
    assert got.metadata["secret"] == scene.marker and got.pending_writes[0][2] == scene.marker


def test_copy_thread_refuses_to_copy_a_forged_pointer(scene: Scene) -> None:
    before = scene.victim_objects()
    ((pk, sk), _) = scene.forge(scene.cids[0])
    target = new_thread()
    with pytest.raises(CorruptPayloadError) as exc:
        scene.h.call("copy_thread", scene.thread, target, saver=scene.attacker)
    assert pk in str(exc.value) and sk in str(exc.value)
    # Nothing landed in the target that names a victim object...
    items = scene.raw.query(
        TableName=scene.h.table_name,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": scene.attacker.partition_key(target)}},
    )["Items"]
    assert not any(k in repr(items) for k in scene.victim_keys.values())
    # ...so deleting the target cannot reach them either.
    scene.h.call("prune", [target], strategy="delete", saver=scene.attacker)
    assert scene.victim_objects() == before


@pytest.mark.parametrize("scene", ["sync-s3"], indirect=True)  # the CLI runs the sync saver
def test_cli_prune_leaves_the_victims_objects_alone(scene: Scene) -> None:
    from tests.cli.test_cli import run

    before = scene.victim_objects()
    scene.forge(scene.cids[0])
    conn = ["--table", scene.h.table_name, "--bucket", scene.h.bucket_name, "--tenant-prefix", ATTACKER]
    code, _, err = run(*conn, "prune", scene.thread, "--keep-last", "1", "--yes")
    assert code == 0, err
    assert scene.victim_objects() == before
