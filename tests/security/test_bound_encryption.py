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
from langgraph.checkpoint.dynamodb.codec import PayloadCodec
from langgraph.checkpoint.dynamodb.encryption import AesKeyRing
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError, UnsupportedFormatError
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
    assert "bound2:" not in _checkpoint_item(h, h.saver, thread, cp["id"])[ATTR.BODY]["B"][3:40].decode(
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
    assert "+bound2:" in typed[0]
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
    assert body[0].endswith("+bound2:aesgcm.k2")
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


# ------------------------------------------------- the sealed header
#
# A packed payload starts with a plaintext header: format byte, codec byte,
# the type name's length and the type name ``"<inner>+bound2:<cipher>"``. The
# inner type says how the decrypted bytes are decoded. Before it was sealed,
# whoever could write an item rewrote it without the key: ``null`` read any
# value back as ``None``, ``bytes`` as its raw serialized bytes, and a rejected
# approval (a pending write ``False``, msgpack ``0xC2``) came back as the
# truthy ``b"\xc2"``. Every test here returned such a value before.

SITES = ["inline value", "inline write", "blob item", "s3 object"]
#: What the refusal of each site's payload names (the channel, or the write's channel and task).
NAMED = {
    "inline value": "channel 'approved'",
    "inline write": "write 'verdict' of task 'reviewer'",
    "blob item": "channel 'blob'",
    "s3 object": "channel 'doc'",
}


class _Site:
    """One stored payload of a sealed thread, read and rewritten with the tenant's own clients."""

    def __init__(self, h: Harness, saver: Any, thread: str, site: str) -> None:
        self.h, self.saver, self.thread, self.site = h, saver, thread, site
        self.cid = str(_latest(h, thread, saver).checkpoint["id"])

    def _item_key(self) -> dict[str, Any]:
        if self.site == "inline value":
            sk = schema.checkpoint_sk("", self.cid)
        elif self.site == "blob item":
            sk = schema.blob_sk("", "blob", "1")
        else:
            sk = next(it[ATTR.SK]["S"] for it in _items(self.h, self.saver, self.thread) if "w0" in it)
        return {ATTR.PK: {"S": self.saver.partition_key(self.thread)}, ATTR.SK: {"S": sk}}

    def get(self) -> bytes:
        if self.site == "s3 object":
            key = self.saver.value_s3_key(self.thread, "", "doc", "1")
            return bytes(boto3.client("s3").get_object(Bucket=self.h.bucket_name, Key=key)["Body"].read())
        item = _ddb().get_item(TableName=self.h.table_name, Key=self._item_key(), ConsistentRead=True)["Item"]
        if self.site == "inline value":
            return bytes(item[ATTR.VALUES]["M"]["approved"]["B"])
        if self.site == "blob item":
            return bytes(item[ATTR.BLOB]["B"])
        return bytes(item["w0"]["L"][1]["B"])

    def set(self, packed: bytes) -> None:
        if self.site == "s3 object":
            key = self.saver.value_s3_key(self.thread, "", "doc", "1")
            boto3.client("s3").put_object(Bucket=self.h.bucket_name, Key=key, Body=packed)
            return
        attr, path = {
            "inline value": ("#a.#c", {"#a": ATTR.VALUES, "#c": "approved"}),
            "blob item": ("#a", {"#a": ATTR.BLOB}),
            "inline write": ("#a[1]", {"#a": "w0"}),
        }[self.site]
        _ddb().update_item(
            TableName=self.h.table_name,
            Key=self._item_key(),
            UpdateExpression=f"SET {attr} = :v",
            ExpressionAttributeNames=path,
            ExpressionAttributeValues={":v": {"B": packed}},
        )


def _sealed_thread(h: Harness) -> tuple[Any, str]:
    """A thread with a sealed payload in each place: inline, a write, a blob item, S3.

    ``approved`` (``False``) is inline; ``blob`` is held by the first
    checkpoint and re-homed to a blob item when prune deletes it; ``doc``
    is over the S3 threshold; the task ``reviewer`` wrote ``verdict=False``.
    """
    saver = h.make_saver(inline_threshold=128, s3_threshold=1024)
    thread = new_thread()
    values: dict[str, Any] = {"approved": False, "blob": os.urandom(100).hex(), "doc": os.urandom(3000).hex()}
    first = h.call(
        "put", cfg(thread), checkpoint_of(values), {"step": 0}, dict.fromkeys(values, "1"), saver=saver
    )
    latest = h.call("put", first, checkpoint_of({**values, "n": 1}), {"step": 1}, {"n": "1"}, saver=saver)
    h.call("put_writes", latest, [("verdict", False)], "reviewer", saver=saver)
    h.call("prune", [thread], keep_last=1, saver=saver)
    assert [it for it in _items(h, saver, thread) if it[ATTR.KIND]["S"] == schema.BLOB_ITEM]
    return saver, thread


def _read_is_refused(h: Harness, reader: Any, thread: str, what: str, named: str) -> None:
    """The thread's latest checkpoint is refused with the typed error naming the payload, never read."""
    try:
        t = _latest(h, thread, reader)
    except CorruptPayloadError as exc:
        assert named in str(exc), (what, str(exc))
        return
    except UnsupportedFormatError as exc:
        # Byte 0 is the codec's format version: another value is read as a
        # newer format (refused, and typed, but not as corrupt).
        assert what.startswith("byte 0 ") and named in str(exc), (what, str(exc))
        return
    raise AssertionError(
        f"{what}: read back {t.checkpoint['channel_values']!r}, writes {t.pending_writes!r}, no error"
    )


def _header(packed: bytes) -> int:
    """How many bytes of ``packed`` are its plaintext header (codec bytes and the type name)."""
    return 3 + packed[2]


def _with_type(packed: bytes, type_name: str) -> bytes:
    """``packed`` with its stored type name replaced (what the tenant rewrites), data kept."""
    _, data = PayloadCodec.unpack(packed)
    return PayloadCodec("none").pack((type_name, data))


@pytest.mark.parametrize("site", SITES)
def test_every_header_byte_flipped_is_refused(h: Harness, site: str) -> None:
    saver, thread = _sealed_thread(h)
    where = _Site(h, saver, thread, site)
    original = where.get()
    assert "+bound2:" in PayloadCodec.type_name(original)
    with h.other_saver(inline_threshold=128, s3_threshold=1024, value_cache_bytes=0) as reader:
        for i in range(_header(original)):
            for mask in (0x01, 0x20, 0xFF):
                tampered = bytearray(original)
                tampered[i] ^= mask
                where.set(bytes(tampered))
                _read_is_refused(h, reader, thread, f"byte {i} ^ {mask:#04x} of {site}", NAMED[site])
        where.set(original)  # untouched, the same reader reads it: the refusals were the flips
        t = _latest(h, thread, reader)
    assert t.checkpoint["channel_values"]["approved"] is False
    assert [w[1:] for w in t.pending_writes] == [("verdict", False)]


# The inner types a tenant without the key substituted, and what each made of a value.
SUBSTITUTES = ["null", "bytes", "bytearray", "json", "msgpack", "pickle"]


@pytest.mark.parametrize("site", SITES)
def test_a_substituted_inner_type_is_refused(h: Harness, site: str) -> None:
    saver, thread = _sealed_thread(h)
    where = _Site(h, saver, thread, site)
    original = where.get()
    inner, _, rest = PayloadCodec.type_name(original).partition("+")
    assert inner == "msgpack"
    with h.other_saver(inline_threshold=128, s3_threshold=1024, value_cache_bytes=0) as reader:
        for sub in SUBSTITUTES:
            if sub == inner:
                continue
            where.set(_with_type(original, f"{sub}+{rest}"))
            with pytest.raises(CorruptPayloadError, match="not the type it was sealed with") as err:
                _latest(h, thread, reader)
            assert NAMED[site] in str(err.value)
        # The seal mark removed (read unbound, as bytes) or put back as the retired bound1.
        for forged in (f"bytes+{rest.partition(':')[2]}", f"bytes+bound1:{rest.partition(':')[2]}"):
            where.set(_with_type(original, forged))
            _read_is_refused(h, reader, thread, forged, NAMED[site])
    with h.other_saver(
        inline_threshold=128, s3_threshold=1024, value_cache_bytes=0, allow_unbound_ciphertext=True
    ) as migrating:
        where.set(_with_type(original, f"bytes+{rest.partition(':')[2]}"))
        with pytest.raises(CiphertextBindingError, match="seal mark was removed"):
            _latest(h, thread, migrating)


def test_the_rejected_approval_cannot_be_turned_truthy(h: Harness) -> None:
    """The reported case: a pending write ``False`` read back as ``b'\\xc2'`` after ``msgpack`` -> ``bytes``."""
    saver, thread = _sealed_thread(h)
    where = _Site(h, saver, thread, "inline write")
    original = where.get()
    where.set(_with_type(original, PayloadCodec.type_name(original).replace("msgpack+", "bytes+", 1)))
    with (
        h.other_saver(value_cache_bytes=0) as reader,
        pytest.raises(CorruptPayloadError, match=r"write .*verdict.*not the type it was sealed with"),
    ):
        _latest(h, thread, reader)


def test_every_byte_of_a_sealed_payload_is_authenticated() -> None:
    """No I/O: each byte of a packed sealed payload (header and ciphertext), flipped, is refused."""
    saver = DynamoDBSaver(table_name="t", serde=EncryptedSerializer.from_pycryptodome_aes(key=ENCRYPTION_KEY))
    bind = ("t1", ("write", "", "c1", "task", "0", "verdict"))
    for value in (False, None, b"\xc2", {"approved": False}):
        packed = saver.payloads.pack(value, "a write", bind)
        assert saver.payloads.unpack(packed, "a write", bind) == value
        for i in range(len(packed)):
            for mask in (0x01, 0x20, 0xFF):
                tampered = bytearray(packed)
                tampered[i] ^= mask
                with pytest.raises((CorruptPayloadError, UnsupportedFormatError)) as err:
                    saver.payloads.unpack(bytes(tampered), "a write", bind)
                assert i == 0 or isinstance(err.value, CorruptPayloadError), (i, mask)


# ------------------------------------- copies re-seal only what they opened


@pytest.mark.parametrize("site", SITES)
def test_a_copy_of_a_tampered_payload_is_refused_not_resealed(h: Harness, site: str) -> None:
    """Before, ``copy_thread`` re-sealed the forged type for the target: the copy read ``None``."""
    saver, thread = _sealed_thread(h)
    where = _Site(h, saver, thread, site)
    original = where.get()
    where.set(_with_type(original, PayloadCodec.type_name(original).replace("msgpack+", "null+", 1)))
    target = new_thread()
    copier = h.make_saver(inline_threshold=128, s3_threshold=1024, value_cache_bytes=0)
    with pytest.raises(CorruptPayloadError, match="not the type it was sealed with"):
        h.call("copy_thread", thread, target, saver=copier)
    assert not [it for it in _items(h, copier, target) if it[ATTR.KIND]["S"] == schema.CHECKPOINT_ITEM]


def test_a_step_wise_or_unbound_copy_of_a_tampered_payload_is_refused(h: Harness) -> None:
    """The maintenance function's copy (step-wise), and a copy under ``allow_unbound_ciphertext``
    of a payload whose seal mark was stripped, refuse too."""
    saver, thread = _sealed_thread(h)
    where = _Site(h, saver, thread, "inline write")
    original = where.get()
    rest = PayloadCodec.type_name(original).partition("+")[2]
    where.set(_with_type(original, f"bytes+{rest}"))
    copier = h.make_saver(inline_threshold=128, s3_threshold=1024, value_cache_bytes=0)
    stepped, kw = new_thread(), {"batch_size": 1, "deadline": 0, "saver": copier}
    with pytest.raises(CorruptPayloadError, match="not the type it was sealed with"):
        step = h.call("copy_thread_step", thread, stepped, **kw)
        while not step.done:
            step = h.call("copy_thread_step", thread, stepped, continuation=step.continuation, **kw)
    assert not [it for it in _items(h, copier, stepped) if it[ATTR.KIND]["S"] == schema.CHECKPOINT_ITEM]
    where.set(_with_type(original, f"bytes+{rest.partition(':')[2]}"))
    migrating = h.make_saver(
        inline_threshold=128, s3_threshold=1024, value_cache_bytes=0, allow_unbound_ciphertext=True
    )
    target = new_thread()
    with pytest.raises(CiphertextBindingError, match="seal mark was removed"):
        h.call("copy_thread", thread, target, saver=migrating)
    assert not [it for it in _items(h, migrating, target) if it[ATTR.KIND]["S"] == schema.CHECKPOINT_ITEM]


def test_an_export_or_migration_of_a_tampered_thread_is_refused(
    moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> None:
    """What ``import`` and ``migrate`` carry is decoded from the source first: a forged type stops them."""
    import io

    from langgraph.checkpoint.dynamodb.tools.migrate import migrate_thread
    from langgraph.checkpoint.dynamodb.tools.transfer import export_thread

    h = Harness("sync-s3-encrypted", names["table_name"], names["bucket_name"], loop_thread)
    try:
        saver, thread = _sealed_thread(h)
        where = _Site(h, saver, thread, "inline write")
        original = where.get()
        where.set(_with_type(original, PayloadCodec.type_name(original).replace("msgpack+", "bytes+", 1)))
        with pytest.raises(CorruptPayloadError, match="not the type it was sealed with"):
            export_thread(saver, thread, io.StringIO())
        target = new_thread()
        with pytest.raises(CorruptPayloadError, match="not the type it was sealed with"):
            migrate_thread(saver, saver, thread, target_thread_id=target)
        assert _items(h, saver, target) == []
    finally:
        h.close()
