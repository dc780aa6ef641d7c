"""Fetching what checkpoint items refer to, I/O-free: held values, blob items, S3 objects.

What lives here: collecting the references a checkpoint record makes
(``collect_refs``, ``value_ref_target``), and fetching them in waves
(``fetch``): held values from the checkpoint items that hold them, blob items
with ``BatchGetItem``, S3 objects with ``GetObject`` (served from the value
cache when this saver wrote or read them before). ``read`` and ``history``
decode what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import cast

from botocore.exceptions import ClientError

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._engine.aws import error_code
from langgraph.checkpoint.dynamodb._engine.ops import Call, Gather, Op
from langgraph.checkpoint.dynamodb._operations import requests
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import (
    AttributeValue,
    CheckpointRecord,
    Ref,
)
from langgraph.checkpoint.dynamodb._parts.valuecache import held_key
from langgraph.checkpoint.dynamodb.base import BaseDynamoDBSaver
from langgraph.checkpoint.dynamodb.errors import (
    CorruptPayloadError,
    MissingPayloadError,
)
from langgraph.checkpoint.dynamodb.schema import ATTR


def collect_refs(s: BaseDynamoDBSaver, record: CheckpointRecord, *, values: bool = True) -> list[Ref]:
    pk = s.keys.pk(record.thread_id)
    refs: list[Ref] = []
    for attr in (ATTR.BODY, ATTR.METADATA):
        av = record.item.get(attr)
        if av is not None and "M" in av:
            refs.append(Ref("s3", s.keys.s3_pointer(record.thread_id, record.item, attr)))
    if values:
        for channel, av in record.item.get(ATTR.VALUES, {}).get("M", {}).items():
            if "M" in av:
                refs.append(value_ref_target(s, record, pk, channel, av))
        for w in record.writes:
            for name, av in w.items():
                if shapes.is_write_attr(name) and "M" in av["L"][1]:
                    refs.append(Ref("s3", s.keys.s3_pointer(record.thread_id, w, name)))
    return refs


def value_ref_target(
    s: BaseDynamoDBSaver, record: CheckpointRecord, pk: str, channel: str, av: AttributeValue
) -> Ref:
    """Where a value reference points, with the places to try after it.

    A value may have moved since the reference was written: thresholds
    changed (blob item <-> S3), or the checkpoint holding it was pruned
    and the value re-homed to a blob item or S3 object of its version.
    """
    ref = av["M"]
    version = ref["v"]["S"]
    ns = record.checkpoint_ns
    s3_ref = Ref("s3", s.keys.value_s3_key(record.thread_id, ns, channel, version))
    loc = ref["l"]["S"]
    if loc == "s3":
        return Ref(
            "s3",
            s3_ref.key,
            alt=Ref("blob", schema.blob_sk(ns, channel, version), pk=pk),
            tag=shapes.value_tag(av),
        )
    blob_ref = Ref("blob", schema.blob_sk(ns, channel, version), pk=pk, alt=s3_ref if s.bucket_name else None)
    if loc == "blob":
        return blob_ref
    if loc == "c":
        return Ref(
            "item",
            schema.checkpoint_sk(ns, ref["c"]["S"]),
            pk=pk,
            channel=channel,
            alt=blob_ref,
            tag=shapes.value_tag(av),
        )
    raise CorruptPayloadError(
        f"channel {channel!r} of checkpoint {record.checkpoint_id!r} (thread {record.thread_id!r}): "
        f"unknown value location {loc!r}"
    )


def fetch(
    s: BaseDynamoDBSaver, refs: Iterable[Ref], local: Iterable[CheckpointRecord] = ()
) -> Op[dict[Ref, bytes]]:
    """Fetch external payloads: S3 GETs and BatchGetItem in one concurrent wave.

    ``local``: checkpoint records already read (a ``list`` page, a delta
    chain), consulted before fetching a value a checkpoint item holds.
    A place found empty is followed by its ``alt`` in a second wave.
    """
    out: dict[Ref, bytes] = {}
    held = {(r.item[ATTR.PK]["S"], r.item[ATTR.SK]["S"]): r.item for r in local}
    # place to try -> the refs asked for (two holders of one version
    # share the blob item and S3 object they fall back to)
    pending: dict[Ref, list[Ref]] = {}
    bucket = s.bucket_name or ""
    for ref in dict.fromkeys(refs):
        if ref.kind == "item" and (ref.pk, ref.key) in held:
            packed = shapes.held_value(held[(ref.pk, ref.key)], ref.channel)
            if packed is not None:
                out[ref] = packed
                if ref.tag:  # the holder may be off the next read's page
                    s.caches.value_cache.put(cache_key(bucket, ref), packed)
                continue
        if ref.tag and (cached := s.caches.value_cache.get(cache_key(bucket, ref))) is not None:
            out[ref] = cached
            continue
        pending.setdefault(ref, []).append(ref)
    while pending:
        found: dict[Ref, bytes] = {}
        missing = yield from _fetch_wave(s, list(pending), found)
        for place, data in found.items():
            for wanted in pending[place]:
                out[wanted] = data
                # What the tagged write stored: an S3 object itself (never a
                # fallback, which another write may have made), a held value
                # from its item or the blob prune moved it to.
                if wanted.tag and (wanted.kind == "item" or place == wanted):
                    s.caches.value_cache.put(cache_key(bucket, wanted), data)
        lost = [(place, wanted) for place in missing for wanted in pending[place]]
        pending = {}
        for place, wanted in lost:
            if place.alt is None:
                where = (
                    f"s3://{s.bucket_name}/{wanted.key}"
                    if wanted.kind == "s3"
                    else f"item {wanted.pk!r}/{wanted.key!r}"
                )
                raise MissingPayloadError(
                    f"stored payload {where} is missing ({len(lost)} missing in all); "
                    "the checkpoint refers to data that was deleted or never written"
                )
            pending.setdefault(place.alt, []).append(wanted)
    return out


def cache_key(bucket: str, ref: Ref) -> tuple[str, str, str]:
    """The value cache's entry for a tagged reference (see ``valuecache``)."""
    if ref.kind == "item":
        return held_key(ref.pk, ref.key, ref.channel, ref.tag)
    return (bucket, ref.key, ref.tag)


def _fetch_wave(s: BaseDynamoDBSaver, refs: list[Ref], out: dict[Ref, bytes]) -> Op[list[Ref]]:
    s3_refs = [r for r in refs if r.kind == "s3"]
    item_refs = [r for r in refs if r.kind != "s3"]
    if s3_refs and s.bucket_name is None:
        raise MissingPayloadError(
            f"checkpoint data is stored in S3 (key {s3_refs[0].key!r}) but this saver has "
            "no bucket_name configured"
        )
    # The driver refuses a body over the limit before reading it (its
    # ContentLength) and never reads more than limit + 1 bytes.
    calls: list[Call] = [
        Call(
            "s3",
            "get_object",
            {"Bucket": s.bucket_name, "Key": r.key},
            max_bytes=s.max_payload_size,
        )
        for r in s3_refs
    ]
    # One key per item, however many refs read it (a checkpoint item may
    # hold several channels' values); BatchGetItem refuses duplicates.
    by_key: dict[tuple[str, str], list[Ref]] = {}
    for r in item_refs:
        by_key.setdefault((r.pk, r.key), []).append(r)
    keys = [{ATTR.PK: {"S": pk}, ATTR.SK: {"S": sk}} for pk, sk in by_key]
    calls += requests.batch_get_calls(s.table_name, keys)
    responses = yield Gather(calls, return_exceptions=True)
    missing: list[Ref] = []
    for ref, resp in zip(s3_refs, responses[: len(s3_refs)], strict=True):
        if isinstance(resp, BaseException):
            if isinstance(resp, ClientError) and error_code(resp) in ("NoSuchKey", "404"):
                missing.append(ref)
                continue
            raise resp
        out[ref] = resp["Body"]
    for resp in responses[len(s3_refs) :]:
        if isinstance(resp, BaseException):
            raise resp
    for it in (yield from requests.batch_get_rest(s.table_name, responses[len(s3_refs) :])):
        shapes.check_format(it)
        for r in by_key.get((it[ATTR.PK]["S"], it[ATTR.SK]["S"]), []):
            if r.kind == "blob":
                out[r] = shapes.blob_bytes(it)
            else:
                packed = shapes.held_value(it, r.channel)
                if packed is not None:
                    out[r] = packed
    missing.extend(r for r in item_refs if r not in out)
    return missing


def payload(s: BaseDynamoDBSaver, av: AttributeValue, fetched: Mapping[Ref, bytes], where: str) -> bytes:
    if "B" in av:
        return cast(bytes, av["B"])
    if "M" in av and "s3" in av["M"]:
        return fetched[Ref("s3", av["M"]["s3"]["S"])]
    raise CorruptPayloadError(f"{where}: unrecognised payload attribute {sorted(av)}")
