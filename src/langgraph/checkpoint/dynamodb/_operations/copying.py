"""Copying threads, I/O-free: ``copy_thread`` and ``migrate_tenant_thread``.

What lives here: the copy plan (everything a copy writes, in the order it
writes it), re-sealing ciphertexts to the target thread, re-keying items and
S3 objects. Writes are ordered as the deletes are: a reader never sees a
checkpoint whose values are missing.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Op, s3
from langgraph.checkpoint.dynamodb._operations import heads, requests
from langgraph.checkpoint.dynamodb._operations.deleting import delete_thread
from langgraph.checkpoint.dynamodb._operations.threads import load_thread
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import (
    Item,
    ThreadItems,
)
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.codec import PayloadCodec
from langgraph.checkpoint.dynamodb.errors import CiphertextBindingError, CorruptPayloadError
from langgraph.checkpoint.dynamodb.schema import ATTR


def copy_thread(s: BaseDynamoDBSaver, source_thread_id: str, target_thread_id: str) -> Op[None]:
    """Copy a thread (all namespaces, checkpoints, writes, blobs, S3 objects) to a new thread id.

    Same checkpoint ids; S3 objects are copied server-side first, then
    the items in batches, so the target never points at a missing object.
    The copy shares nothing with the source: each owns its objects. The
    target must not have checkpoints yet (a copy never merges histories).

    Raises:
        ValueError: an id is empty or the same thread, or the target has checkpoints.
    """
    return (yield from _copy(s, source_thread_id, target_thread_id, into=s))


def _copy(
    s: BaseDynamoDBSaver, source_thread_id: str, target_thread_id: str, *, into: BaseDynamoDBSaver
) -> Op[None]:
    """``copy_thread`` into the keys of ``into`` (a tenant view, for migrations)."""
    dst = into
    for name, value in (("source_thread_id", source_thread_id), ("target_thread_id", target_thread_id)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string")
        s.keys.check(value, "", None)
    if dst.keys.pk(target_thread_id) == s.keys.pk(source_thread_id):
        raise ValueError("source_thread_id and target_thread_id are the same thread")
    target = yield from load_thread(dst, target_thread_id)
    if target.checkpoints or target.blobs:
        raise ValueError(
            f"target thread {target_thread_id!r} already has checkpoints; "
            "delete it first (copy_thread never merges two histories)"
        )
    source = yield from load_thread(s, source_thread_id)
    plan = plan_copy(s, source_thread_id, target_thread_id, source, uuid.uuid4().hex, into=dst)
    yield from refuse_unsealable(s, source_thread_id, plan)
    for i in range(0, len(plan.objects), 64):
        yield from copy_objects(s, plan.objects[i : i + 64], plan.reseal)
    # What checkpoints point to (objects, then writes and blobs) lands
    # before any checkpoint: a copied checkpoint is readable as in the
    # source the moment it exists, or not at all.
    yield from requests.batch_write(
        s.table_name, [{"PutRequest": {"Item": it}} for it in plan.sealed(plan.items)]
    )
    # Oldest first: an interrupted copy leaves the target a consistent
    # prefix of the source (a checkpoint never lands before its parent).
    yield from requests.batch_write(
        s.table_name, [{"PutRequest": {"Item": it}} for it in plan.sealed(plan.checkpoints)], in_order=True
    )
    yield from heads.on_activity(dst, target_thread_id)


def migrate_tenant_thread(s: BaseDynamoDBSaver, tenant_prefix: str, thread_id: str) -> Op[None]:
    """Move tenant ``tenant_prefix``'s thread ``thread_id`` to the prefix-free tenant layout.

    For threads written by a version before the tenant delimiter (which
    stored them as the untenanted thread ``tenant_prefix + thread_id``).
    Run it with an untenanted (operator) saver, while the tenant is not
    writing that thread; safe to re-run after an interruption.

    Example:
        >>> operator = DynamoDBSaver(table_name="t", bucket_name="b")  # untenanted  # doctest: +SKIP
        >>> operator.migrate_tenant_thread("acme-", "t1")  # old "acme-t1" -> "acme-|t1"  # doctest: +SKIP

    How:

    Versions without the delimiter stored tenant ``P``'s thread ``T``
    exactly where an untenanted saver keeps thread ``P + T``
    (``PK = escape(P + T)``, S3 ``<prefix><quote(P + T)>/``). The thread
    is copied to ``P|T`` (items and objects, pointers rewritten), then
    the old one is deleted. Re-running after an interruption is safe:
    a completed copy is found and only the delete is redone.
    """
    if s.tenant_prefix:
        raise ValueError("migrate with an untenanted saver: the old threads are untenanted keys")
    schema.validate_tenant_prefix(tenant_prefix)
    if not isinstance(thread_id, str) or not thread_id:
        raise ValueError("thread_id must be a non-empty string")
    old = tenant_prefix + thread_id
    dst = s.tenant_view(tenant_prefix)
    source = yield from load_thread(s, old)
    target = yield from load_thread(dst, thread_id)
    if source.checkpoints and set(target.checkpoints) != set(source.checkpoints):
        if not set(target.checkpoints) <= set(source.checkpoints):
            raise ValueError(
                f"tenant {tenant_prefix!r} already has a different thread {thread_id!r} under the "
                "new layout; delete one of them first"
            )
        if target.checkpoints or target.blobs:
            # An interrupted copy (it lands oldest first): start it over.
            yield from delete_thread(dst, thread_id)
        yield from _copy(s, old, thread_id, into=dst)
    # The old key's data now lives under the tenant: a holder of its lease is fenced out.
    yield from delete_thread(s, old, force=True)


@dataclass
class CopyPlan:
    """Everything a copy writes, in the order it writes it, from the source as it is now.

    Items hold the source's payloads as they are; an encrypting saver
    re-seals them for the target as they are written (:meth:`sealed`,
    :func:`copy_objects`), chunk by chunk, so a step-wise copy pays for
    what it writes only.
    """

    #: (source key, target key, may be missing) in source key order.
    objects: list[tuple[str, str, bool]]
    #: Writes and blob items, by sort key.
    items: list[Item]
    #: Checkpoint items, oldest first (``(checkpoint id, namespace)`` order).
    checkpoints: list[Item]
    #: Re-seals a source payload for the target (encrypting savers); ``None``: copied as is.
    reseal: Callable[[bytes, str], bytes] | None = None

    def sealed(self, items: Sequence[Item]) -> list[Item]:
        """``items`` with every payload re-sealed for the target (``items`` themselves as they are if none is)."""
        if self.reseal is None:
            return list(items)
        return [reseal_item(it, self.reseal) for it in items]


def _resealer(
    s: BaseDynamoDBSaver, dst: BaseDynamoDBSaver, source_id: str, target_id: str
) -> Callable[[bytes, str], bytes] | None:
    """How a copy re-seals payloads for the target: ``None`` where the saver does not encrypt."""
    if not s.payloads.seals:
        return None
    source, target = (s.tenant_prefix, source_id), (dst.tenant_prefix, target_id)
    return lambda packed, where: s.payloads.rebind(packed, source, target, where)


def refuse_unsealable(s: BaseDynamoDBSaver, source_id: str, plan: CopyPlan) -> Op[None]:
    """Refuse, before any write, to copy encrypted payloads with a saver that cannot re-seal them.

    Copied as they are, they stay sealed to the source thread, and the target
    would be unreadable. Every inline payload's type is checked (a header
    read, no decryption); when there is none (with a low ``s3_threshold``
    every payload may be in S3), the first object's header (a ranged GET
    of its first bytes).
    """
    if plan.reseal is not None:
        return
    types = [
        PayloadCodec.type_name(packed)
        for it in (*plan.checkpoints, *plan.items)
        for packed in _inline_payloads(it)
    ]
    encrypted = any("+" in t for t in types)
    if not types and plan.objects and s.bucket_name is not None:
        try:
            head = yield Call(
                "s3",
                "get_object",
                {"Bucket": s.bucket_name, "Key": plan.objects[0][0], "Range": "bytes=0-258"},
                max_bytes=259,
            )
            encrypted = "+" in PayloadCodec.type_name(bytes(head["Body"]))
        except ClientError as exc:
            if error_code(exc) not in ("NoSuchKey", "404", "InvalidRange"):
                raise
    if encrypted:
        raise CiphertextBindingError(
            f"thread {source_id!r} is encrypted, and its payloads are sealed to it: a copy must "
            "re-seal them for the target, which needs the cipher. Copy with a saver configured with "
            "the same serde (EncryptedSerializer; a maintenance function: LANGGRAPH_AES_KEYS); "
            "nothing was written"
        )


def _inline_payloads(item: Item) -> Iterator[bytes]:
    for name, av in item.items():
        if name in (ATTR.BODY, ATTR.METADATA, ATTR.BLOB) and "B" in av:
            yield bytes(av["B"])
        elif name == ATTR.VALUES and "M" in av:
            yield from (bytes(v["B"]) for v in av["M"].values() if "B" in v)
        elif shapes.is_write_attr(name) and "B" in av["L"][1]:
            yield bytes(av["L"][1]["B"])


def reseal_item(item: Item, reseal: Callable[[bytes, str], bytes]) -> Item:
    """A copy of ``item`` whose payloads (inline ones; S3 objects are re-sealed apart) ``reseal`` re-sealed."""
    name_of = shapes.item_name(item)
    out: Item = dict(item)
    for name, av in item.items():
        if name in (ATTR.BODY, ATTR.METADATA, ATTR.BLOB) and "B" in av:
            out[name] = {"B": reseal(bytes(av["B"]), f"{name_of}: {name!r}")}
        elif name == ATTR.VALUES and "M" in av:
            out[name] = {
                "M": {
                    ch: {"B": reseal(bytes(v["B"]), f"{name_of}: channel {ch!r}")} if "B" in v else v
                    for ch, v in av["M"].items()
                }
            }
        elif shapes.is_write_attr(name) and "B" in av["L"][1]:
            out[name] = {"L": [av["L"][0], {"B": reseal(bytes(av["L"][1]["B"]), f"{name_of}: {name!r}")}]}
    return out


def plan_copy(
    s: BaseDynamoDBSaver,
    source_id: str,
    target_id: str,
    source: ThreadItems,
    root: str,
    upto: str | None = None,
    *,
    into: BaseDynamoDBSaver | None = None,
) -> CopyPlan:
    """What a copy of ``source`` writes, in the order it writes it: ``copy_thread`` and its steps.

    Late writes on deleted lineages are not part of the source (nor the
    tombstones that hide them). Only the source's own S3 objects are copied:
    a pointer to any other object (a forged one, to another tenant's data)
    raises ``CorruptPayloadError`` before anything is written. Checkpoints
    get the lineage root ``<their root>@copy-<root>``: the target may once have
    held a copy of the same checkpoints and been deleted, and its tombstone
    must not hide this one.

    With ``upto`` (the source's newest id when a step-wise copy started),
    only checkpoints up to it and their writes are part of the copy: one put
    in the source meanwhile may point at objects an earlier step did not
    copy. ``into``: the saver (a tenant view) whose keys the target gets.

    Raises:
        ValueError: the source has S3 payloads and the saver has no bucket.
    """
    dst = into if into is not None else s
    for dead_key in source.dead():
        del source.checkpoints[dead_key]
        source.writes.pop(dead_key, None)
    # Source key -> target key of each object the copy must copy (``maybe``: those it copies if there).
    s3_keys: dict[str, str] = {}
    retarget = _retargeter(s, dst, source_id, target_id, s3_keys)
    included = {key for key in source.checkpoints if upto is None or key[1] <= upto}
    writes = [w for key, ws in source.writes.items() if key in included for w in ws]
    items = sorted(retarget([*writes, *source.blobs.values()]), key=lambda it: it[ATTR.SK]["S"])
    keys = sorted(included, key=lambda k: (k[1], k[0]))
    checkpoints = retarget(source.checkpoints[k] for k in keys)
    for it in checkpoints:
        _, _, cid, _ = shapes.parse_sk(it)
        it[ATTR.ROOT] = {"S": f"{shapes.root_of(it, cid)}@copy-{root}"}
    maybe: dict[str, str] = {}
    if s.bucket_name is not None:
        for src_key, dst_key, certain in _value_objects(s, dst, source_id, target_id, source, included):
            if certain:
                s3_keys[src_key] = dst_key
            else:
                maybe[src_key] = dst_key
    for known in s3_keys:
        maybe.pop(known, None)
    if (s3_keys or maybe) and s.bucket_name is None:
        raise ValueError("source thread has S3 payloads but no bucket_name is configured")
    pairs = {**maybe, **s3_keys}
    objects = [(k, pairs[k], k in maybe) for k in sorted(pairs)]
    return CopyPlan(objects, items, checkpoints, _resealer(s, dst, source_id, target_id))


def _retargeter(
    s: BaseDynamoDBSaver, dst: BaseDynamoDBSaver, source_id: str, target_id: str, s3_keys: dict[str, str]
) -> Callable[[Iterable[Item]], list[Item]]:
    """What gives a copy's items the target's keys, recording each object they point at in ``s3_keys``."""
    dst_pk = {"S": dst.keys.pk(target_id)}

    def rekey(it: Item, name: str, key: str) -> str:
        # Each target key is derived from the item's ids as the target's own (never by
        # swapping a prefix): a long id's key is digested on one side and may not be on the other.
        src_own = s.keys.own_s3_key(source_id, it, name)
        dst_own = dst.keys.own_s3_key(target_id, it, name)
        if src_own is None or dst_own is None:  # _s3_pointer refused such an item first
            raise CorruptPayloadError(f"{shapes.item_name(it)}: attribute {name!r} holds no pointer")
        s3_keys[key] = dst_own[0] + key[len(src_own[0]) :]
        return s3_keys[key]

    def retarget(items: Iterable[Item]) -> list[Item]:
        out = []
        for it in items:
            # Only the source's own objects are copied: a forged pointer to
            # another thread's or tenant's object makes the copy refuse.
            with shapes.malformed(shapes.item_name(it)):
                for name, av in it.items():
                    if (name in (ATTR.BODY, ATTR.METADATA) and "M" in av) or (
                        shapes.is_write_attr(name) and "M" in av["L"][1]
                    ):
                        s.keys.s3_pointer(source_id, it, name)
            copy = retarget_item(it, functools.partial(rekey, it))
            copy[ATTR.PK] = dst_pk
            out.append(copy)
        return out

    return retarget


def _value_objects(
    s: BaseDynamoDBSaver,
    dst: BaseDynamoDBSaver,
    source_id: str,
    target_id: str,
    source: ThreadItems,
    included: Iterable[tuple[str, str]],
) -> Iterator[tuple[str, str, bool]]:
    """The S3 objects the copied checkpoints' values are or may be in: ``(source key, target key, certain)``.

    A value whose reference says S3 is certain. One that neither a blob item
    nor the checkpoint holding it has may be in its version's S3 object
    (where a prune re-homes a value whose holder it deletes): copied if there.
    """
    for ns, cid in included:
        for channel, av in source.checkpoints[(ns, cid)].get(ATTR.VALUES, {}).get("M", {}).items():
            if "M" not in av:
                continue
            ref = av["M"]
            version = ref["v"]["S"]
            s3_key = s.keys.value_s3_key(source_id, ns, channel, version)
            dst_key = dst.keys.value_s3_key(target_id, ns, channel, version)
            if ref["l"]["S"] == "s3":
                yield s3_key, dst_key, True
                continue
            if schema.blob_sk(ns, channel, version) in source.blobs:
                continue
            held = source.checkpoints.get((ns, ref["c"]["S"])) if ref["l"]["S"] == "c" else None
            if held is None or shapes.held_value(held, channel) is None:
                yield s3_key, dst_key, False


def copy_objects(
    s: BaseDynamoDBSaver,
    chunk: Sequence[tuple[str, str, bool]],
    reseal: Callable[[bytes, str], bytes] | None = None,
) -> Op[None]:
    """Copy S3 objects; a "maybe" object that is not there is skipped (a reader tries the places it may also be first).

    Server-side copies, or, with ``reseal`` (an encrypting saver's copy),
    each object read, re-sealed for the target and written.
    """
    if reseal is None:
        calls = [
            s3("copy_object", Bucket=s.bucket_name, Key=dst, CopySource={"Bucket": s.bucket_name, "Key": src})
            for src, dst, _ in chunk
        ]
    else:
        calls = [
            Call("s3", "get_object", {"Bucket": s.bucket_name, "Key": src}, max_bytes=s.max_payload_size)
            for src, _, _ in chunk
        ]
    results = yield Gather(calls, return_exceptions=True)
    puts = []
    for (src, dst, maybe), result in zip(chunk, results, strict=True):
        if isinstance(result, BaseException):
            if maybe and isinstance(result, ClientError) and error_code(result) in ("NoSuchKey", "404"):
                continue
            raise result
        if reseal is not None:
            body = reseal(bytes(result["Body"]), f"S3 object {src!r}")
            puts.append(s3("put_object", Bucket=s.bucket_name, Key=dst, Body=body))
    if puts:
        yield Gather(puts)


def retarget_item(item: Item, rekey: Callable[[str, str], str]) -> Item:
    """Copy an item, its S3 references moved to the keys ``rekey(attribute, key)`` gives."""

    def fix(name: str, av: dict[str, Any]) -> dict[str, Any]:
        if "M" in av and "s3" in av["M"]:
            return {"M": {**av["M"], "s3": {"S": rekey(name, av["M"]["s3"]["S"])}}}
        return av

    out: Item = {}
    for name, av in item.items():
        if name in (ATTR.BODY, ATTR.METADATA):
            out[name] = fix(name, av)
        elif shapes.is_write_attr(name):
            out[name] = {"L": [av["L"][0], fix(name, av["L"][1])]}
        else:
            out[name] = av
    return out
