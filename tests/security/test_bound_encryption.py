"""Integrity-bound encryption: a ciphertext moved anywhere it was not written is refused.

The attacker can write the table and the bucket (a tenant under its own
grant, an operator with a backup) but holds no key. Before binding, an
encrypting saver decrypted whatever sat in an item: another thread's
checkpoint copied into a victim's partition, an older value of a channel put
back into the latest checkpoint, one task's write swapped for another's, an S3
object copied over another's. Each resumed the graph from a state nobody
wrote there. Now every payload is sealed to its tenant, thread and place
(``_binding``), a move raises ``CiphertextBindingError``, and the copies the
package makes (``copy_thread``, its step-wise form, tenant migration) re-seal
for the target. Every attack test here returned the moved data before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import CiphertextBindingError, DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.encryption import AesKeyRing
from tests.support.harness import ENCRYPTION_KEY, Harness, cfg, checkpoint_of, new_thread

ATTR = schema.ATTR
VARIANTS = ["sync-s3-encrypted", "async-s3-encrypted"]


@pytest.fixture(params=VARIANTS)
def h(
    request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> Iterator[Harness]:
    harness = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    yield harness
    harness.close()


def _ddb() -> Any:
    return boto3.client("dynamodb")


def _items(h: Harness, saver: Any, thread: str) -> list[dict[str, Any]]:
    resp = _ddb().query(
        TableName=h.table_name,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": ATTR.PK},
        ExpressionAttributeValues={":pk": {"S": saver.partition_key(thread)}},
        ConsistentRead=True,
    )
    return list(resp["Items"])


def _put(
    h: Harness,
    thread: str,
    values: dict[str, Any],
    versions: dict[str, str],
    parent: str | None = None,
    saver: Any = None,
) -> str:
    cp = checkpoint_of(values, versions)
    h.call("put", cfg(thread, "", parent), cp, {"step": len(versions)}, dict(versions), saver=saver)
    return str(cp["id"])


def _checkpoint_item(h: Harness, saver: Any, thread: str, cid: str) -> dict[str, Any]:
    key = {ATTR.PK: {"S": saver.partition_key(thread)}, ATTR.SK: {"S": schema.checkpoint_sk("", cid)}}
    return dict(_ddb().get_item(TableName=h.table_name, Key=key, ConsistentRead=True)["Item"])


def _latest(h: Harness, thread: str, saver: Any = None) -> Any:
    return h.call("get_tuple", cfg(thread), saver=saver)


# ------------------------------------------------------------------ attacks


def test_a_checkpoint_copied_into_another_thread_is_refused(h: Harness) -> None:
    victim, attacker = new_thread(), new_thread()
    _put(h, victim, {"balance": 10}, {"balance": "1"})
    cid = _put(h, attacker, {"balance": 1_000_000}, {"balance": "1"})
    # The attacker's item, verbatim, under the victim's partition key (a newer id wins the read).
    item = _checkpoint_item(h, h.saver, attacker, cid)
    item[ATTR.PK] = {"S": h.saver.partition_key(victim)}
    _ddb().put_item(TableName=h.table_name, Item=item)
    with h.other_saver() as fresh, pytest.raises(CiphertextBindingError, match="another thread"):
        _latest(h, victim, fresh)


def test_a_thread_copied_to_another_tenant_is_refused(h: Harness) -> None:
    a, b = h.make_saver(tenant_prefix="acme"), h.make_saver(tenant_prefix="globex")
    thread = new_thread()
    cid = _put(h, thread, {"x": "acme's"}, {"x": "1"}, saver=a)
    item = _checkpoint_item(h, a, thread, cid)
    item[ATTR.PK] = {"S": b.partition_key(thread)}  # same thread id, other tenant
    _ddb().put_item(TableName=h.table_name, Item=item)
    with pytest.raises(CiphertextBindingError, match="another thread"):
        _latest(h, thread, b)


def test_an_older_value_put_back_into_the_latest_checkpoint_is_refused(h: Harness) -> None:
    thread = new_thread()
    first = _put(h, thread, {"approved": False}, {"approved": "1"})
    latest = _put(h, thread, {"approved": True}, {"approved": "2"}, parent=first)
    old = _checkpoint_item(h, h.saver, thread, first)
    item = _checkpoint_item(h, h.saver, thread, latest)
    assert "B" in item[ATTR.VALUES]["M"]["approved"]  # small: inline in each checkpoint
    item[ATTR.VALUES]["M"]["approved"] = old[ATTR.VALUES]["M"]["approved"]  # roll the approval back
    _ddb().put_item(TableName=h.table_name, Item=item)
    with h.other_saver() as fresh, pytest.raises(CiphertextBindingError, match="another value"):
        _latest(h, thread, fresh)


def test_the_body_of_one_checkpoint_moved_to_another_is_refused(h: Harness) -> None:
    thread = new_thread()
    first = _put(h, thread, {"n": 1}, {"n": "1"})
    latest = _put(h, thread, {"n": 2}, {"n": "2"}, parent=first)
    item = _checkpoint_item(h, h.saver, thread, latest)
    item[ATTR.METADATA] = _checkpoint_item(h, h.saver, thread, first)[ATTR.METADATA]
    _ddb().put_item(TableName=h.table_name, Item=item)
    with h.other_saver() as fresh, pytest.raises(CiphertextBindingError, match="another metadata"):
        _latest(h, thread, fresh)


def test_one_tasks_write_swapped_for_anothers_is_refused(h: Harness) -> None:
    thread = new_thread()
    cid = _put(h, thread, {"n": 1}, {"n": "1"})
    h.call("put_writes", cfg(thread, "", cid), [("verdict", "reject")], "reviewer")
    h.call("put_writes", cfg(thread, "", cid), [("verdict", "approve")], "forger")
    items = {it.get(ATTR.TASK_ID, {}).get("S"): it for it in _items(h, h.saver, thread)}
    reviewer = dict(items["reviewer"])
    reviewer["w0"] = items["forger"]["w0"]
    _ddb().put_item(TableName=h.table_name, Item=reviewer)
    with h.other_saver() as fresh, pytest.raises(CiphertextBindingError, match="another write"):
        _latest(h, thread, fresh)


def test_an_s3_object_copied_over_another_is_refused(h: Harness) -> None:
    victim, attacker = new_thread(), new_thread()
    big = "v" * 4000  # over the variant's 1 KB S3 threshold
    _put(h, victim, {"doc": big}, {"doc": "1"})
    _put(h, attacker, {"doc": "a" * 4000}, {"doc": "1"})
    s3 = boto3.client("s3")
    src = h.saver.value_s3_key(attacker, "", "doc", "1")
    dst = h.saver.value_s3_key(victim, "", "doc", "1")
    s3.copy_object(Bucket=h.bucket_name, Key=dst, CopySource={"Bucket": h.bucket_name, "Key": src})
    with (
        h.other_saver(value_cache_bytes=0) as fresh,
        pytest.raises(CiphertextBindingError, match="another thread"),
    ):
        _latest(h, victim, fresh)


def test_unbound_ciphertext_is_refused_unless_allowed_for_a_migration(h: Harness) -> None:
    """What LangGraph's EncryptedSerializer writes (no binding) is refused; the named opt-in reads it."""

    class Unbound(DynamoDBSaver):
        def dump_payload(self, value: Any, *, where: str, bind: Any) -> tuple[str, bytes]:
            return self.serde.dumps_typed(value)  # the format before binding

    thread = new_thread()
    legacy = Unbound(**h.saver_kwargs())
    cp = checkpoint_of({"x": "legacy"}, {"x": "1"})
    legacy.put(cfg(thread), cp, {}, {"x": "1"})
    assert "bound1:" not in _checkpoint_item(h, h.saver, thread, cp["id"])[ATTR.BODY]["B"][3:40].decode(
        "latin-1"
    )
    with h.other_saver() as strict, pytest.raises(CiphertextBindingError, match="allow_unbound_ciphertext"):
        _latest(h, thread, strict)
    with h.other_saver(allow_unbound_ciphertext=True) as migrating:
        assert _latest(h, thread, migrating).checkpoint["channel_values"] == {"x": "legacy"}
        # What it writes is bound, whatever it reads.
        cid = _put(h, thread, {"x": "new"}, {"x": "2"}, parent=cp["id"], saver=migrating)
    with h.other_saver() as strict:
        assert _latest(h, thread, strict).checkpoint["id"] == cid


def test_a_plaintext_payload_is_refused(h: Harness) -> None:
    thread = new_thread()
    cid = _put(h, thread, {"x": 1}, {"x": "1"})
    plain = DynamoDBSaver(table_name=h.table_name)
    item = _checkpoint_item(h, h.saver, thread, cid)
    item[ATTR.VALUES]["M"]["x"] = {"B": plain.codec.pack(plain.serde.dumps_typed(2))}
    _ddb().put_item(TableName=h.table_name, Item=item)
    with h.other_saver() as fresh, pytest.raises(Exception, match="not encrypted"):
        _latest(h, thread, fresh)


def test_an_old_reader_fails_closed_on_a_sealed_payload(h: Harness) -> None:
    thread = new_thread()
    cid = _put(h, thread, {"x": 1}, {"x": "1"})
    packed = bytes(_checkpoint_item(h, h.saver, thread, cid)[ATTR.BODY]["B"])
    typed = h.saver.codec.unpack(packed)
    assert "+bound1:" in typed[0]
    with pytest.raises(AssertionError, match="Unsupported cipher"):
        EncryptedSerializer.from_pycryptodome_aes(key=ENCRYPTION_KEY).loads_typed(typed)


# ------------------------------------------------------- copies re-seal


def _state(h: Harness, thread: str, saver: Any = None) -> dict[str, Any]:
    t = _latest(h, thread, saver)
    return {"values": t.checkpoint["channel_values"], "writes": t.pending_writes}


def _thread_with_everything(h: Harness, thread: str) -> str:
    first = _put(h, thread, {"small": 1, "big": "b" * 3000}, {"small": "1", "big": "1"})
    latest = _put(h, thread, {"small": 2, "big": "b" * 3000}, {"small": "2", "big": "1"}, parent=first)
    h.call("put_writes", cfg(thread, "", latest), [("small", 3), ("big", "w" * 3000)], "task-1")
    return latest


def test_copy_thread_reseals_for_the_target(h: Harness) -> None:
    source, target, elsewhere = new_thread(), new_thread(), new_thread()
    _thread_with_everything(h, source)
    h.call("copy_thread", source, target)
    with h.other_saver(value_cache_bytes=0) as fresh:
        assert _state(h, target, fresh) == _state(h, source, fresh)
    # Sealed to the target now: the copy moved on again, items, objects and pointers, is refused.
    _move_thread(h, target, elsewhere)
    with (
        h.other_saver(value_cache_bytes=0) as fresh,
        pytest.raises(CiphertextBindingError, match="another thread"),
    ):
        _latest(h, elsewhere, fresh)


def _move_thread(h: Harness, thread: str, to: str) -> None:
    """What an attacker with write access does: every item and object of ``thread``, re-keyed as ``to``'s."""
    old, new = h.saver.s3_thread_prefix(thread), h.saver.s3_thread_prefix(to)
    s3 = boto3.client("s3")
    for o in s3.list_objects_v2(Bucket=h.bucket_name, Prefix=old).get("Contents", []):
        s3.copy_object(
            Bucket=h.bucket_name,
            Key=new + o["Key"][len(old) :],
            CopySource={"Bucket": h.bucket_name, "Key": o["Key"]},
        )
    for it in _items(h, h.saver, thread):
        it[ATTR.PK] = {"S": h.saver.partition_key(to)}
        for name, av in it.items():
            if name.startswith("w") and "L" in av and "M" in av["L"][1]:
                ptr = av["L"][1]["M"]["s3"]
                ptr["S"] = new + ptr["S"][len(old) :]
        _ddb().put_item(TableName=h.table_name, Item=it)


def test_copy_thread_step_reseals_for_the_target(h: Harness) -> None:
    source, target = new_thread(), new_thread()
    _thread_with_everything(h, source)
    step = h.call("copy_thread_step", source, target, batch_size=1, deadline=0)
    while not step.done:
        step = h.call(
            "copy_thread_step", source, target, continuation=step.continuation, batch_size=1, deadline=0
        )
    with h.other_saver(value_cache_bytes=0) as fresh:
        assert _state(h, target, fresh) == _state(h, source, fresh)


def test_migrate_tenant_thread_reseals_under_the_tenant(h: Harness) -> None:
    thread = new_thread()
    old = "acme-" + thread  # where a version before the tenant delimiter kept it
    _thread_with_everything(h, old)
    h.call("migrate_tenant_thread", "acme-", thread)
    with h.other_saver(tenant_prefix="acme-", value_cache_bytes=0) as tenant:
        t = _latest(h, thread, tenant)
    assert t.checkpoint["channel_values"] == {"small": 2, "big": "b" * 3000}
    assert [w[1:] for w in t.pending_writes] == [("small", 3), ("big", "w" * 3000)]


@pytest.mark.parametrize("all_in_s3", [False, True])
def test_a_copy_without_the_key_is_refused_before_any_write(h: Harness, all_in_s3: bool) -> None:
    """Told by an inline payload's header, or (every payload in S3) by the first object's."""
    source, target = new_thread(), new_thread()
    if all_in_s3:
        writer = h.make_saver(s3_threshold=0)
        _put(h, source, {"x": 1}, {"x": "1"}, saver=writer)
        assert not any("B" in it.get(ATTR.BODY, {}) for it in _items(h, h.saver, source))
    else:
        _thread_with_everything(h, source)
    keyless = DynamoDBSaver(table_name=h.table_name, bucket_name=h.bucket_name)
    with pytest.raises(CiphertextBindingError, match="needs the cipher"):
        keyless.copy_thread(source, target)
    with pytest.raises(CiphertextBindingError, match="needs the cipher"):
        keyless.copy_thread_step(source, target)
    assert _items(h, h.saver, target) == []


def test_a_stored_request_result_is_sealed_to_its_request(h: Harness) -> None:
    from langgraph.checkpoint.dynamodb.lock._records import serialize_result, stored_result

    typed, _ = serialize_result(h.saver, "t1", "req-1", {"answer": 42}, 1 << 20)
    assert typed is not None
    item = {ATTR.RESULT_TYPE: {"S": typed[0]}, ATTR.RESULT: {"B": typed[1]}}
    assert stored_result(h.saver, "t1", "req-1", item) == {"answer": 42}
    with pytest.raises(CiphertextBindingError, match="another result"):
        stored_result(h.saver, "t1", "req-2", item)  # replayed as another request's answer


# ------------------------------------------------------------ key rotation


def _ring_saver(h: Harness, ring: AesKeyRing, **kw: Any) -> Any:
    return h.make_saver(serde=ring.serializer(), **kw)


def test_key_rotation_reads_old_keys_and_writes_the_current_one(h: Harness) -> None:
    k1, k2 = os.urandom(32), os.urandom(32)
    thread, copy = new_thread(), new_thread()
    old = _ring_saver(h, AesKeyRing({"k1": k1}, current="k1"))
    first = _put(h, thread, {"x": "under k1"}, {"x": "1"}, saver=old)
    rotated = _ring_saver(h, AesKeyRing({"k2": k2, "k1": k1}, current="k2"))
    assert _latest(h, thread, rotated).checkpoint["channel_values"] == {"x": "under k1"}
    second = _put(h, thread, {"x": "under k2"}, {"x": "2"}, parent=first, saver=rotated)
    body = h.saver.codec.unpack(bytes(_checkpoint_item(h, h.saver, thread, second)[ATTR.BODY]["B"]))
    assert body[0].endswith("+bound1:aesgcm.k2")
    # A copy re-seals with the current key: the copy no longer needs k1.
    h.call("copy_thread", thread, copy, saver=rotated)
    only_k2 = _ring_saver(h, AesKeyRing({"k2": k2}, current="k2"), value_cache_bytes=0)
    assert _latest(h, copy, only_k2).checkpoint["channel_values"] == {"x": "under k2"}
    assert len(h.list(cfg(copy), saver=only_k2)) == 2
    # The original still needs k1 for its first checkpoint, and says which key is missing.
    with pytest.raises(Exception, match="cannot decrypt"):
        h.list(cfg(thread), saver=only_k2)


def test_a_ring_reads_what_from_pycryptodome_aes_wrote(h: Harness) -> None:
    """Moving from LangGraph's single-key serializer to a ring keeps the old data readable."""
    thread = new_thread()
    cid = _put(h, thread, {"x": "eax"}, {"x": "1"})  # the harness's from_pycryptodome_aes saver
    ring = AesKeyRing({"new": os.urandom(32), "old": ENCRYPTION_KEY}, current="new")
    reader = _ring_saver(h, ring)
    assert _latest(h, thread, reader).checkpoint["id"] == cid


def test_key_ring_configuration_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="not in the ring"):
        AesKeyRing({"a": b"k" * 32}, current="b")
    with pytest.raises(ValueError, match="16, 24 or 32 bytes"):
        AesKeyRing({"a": b"short"}, current="a")
    with pytest.raises(ValueError, match="key id"):
        AesKeyRing({"a/b": b"k" * 32}, current="a/b")
    with pytest.raises(ValueError, match="LANGGRAPH_AES_KEYS is not set"):
        AesKeyRing.from_env({})
    ring = AesKeyRing.from_env({"LANGGRAPH_AES_KEYS": "k2:" + "A" * 43 + "=,k1:" + "B" * 43 + "="})
    assert ring.key_ids == ("k2", "k1")
    name, ct = ring.encrypt(b"hello")
    assert name == "aesgcm.k2" and ring.decrypt(name, ct) == b"hello"
    with pytest.raises(ValueError, match="'k9' is not in the key ring"):
        ring.decrypt("aesgcm.k9", ct)
    with pytest.raises(ValueError, match="does not authenticate"):
        ring.decrypt(name, ct[:-1] + bytes([ct[-1] ^ 1]))
