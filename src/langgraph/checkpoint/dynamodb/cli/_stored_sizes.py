"""Stored bytes per checkpoint of a thread: its items, writes and every payload it references (blob items, S3 objects)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import item_size
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools._inspection import s3_objects, thread_items


def _value_sizes(
    saver: Any, thread_id: str, items: Iterable[dict[str, Any]], s3_prefixes: Iterable[str]
) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, int]]:
    """Split raw items, and collect blob item sizes and S3 object sizes of a thread."""
    kept: list[dict[str, Any]] = []
    blobs: dict[str, int] = {}
    for it in items:
        kind = schema.parse_sk(it[ATTR.SK]["S"])[1]
        if kind == schema.BLOB_ITEM:
            blobs[it[ATTR.SK]["S"]] = item_size(it)
        else:
            kept.append(it)
    objects = {o["Key"]: int(o["Size"]) for prefix in s3_prefixes for o in s3_objects(saver, prefix)}
    return kept, blobs, objects


def checkpoint_sizes(
    saver: Any, thread_id: str, checkpoint_ns: str | None = ""
) -> dict[tuple[str, str], int]:
    """Stored bytes per checkpoint of a thread: ``{(ns, checkpoint_id): bytes}``.

    A checkpoint's size is its item, its writes items, and every payload it
    references (a value held by the checkpoint that introduced it, blob items,
    S3 objects); a payload shared by several checkpoints (an unchanged large
    channel) counts in each.
    """
    prefix = schema.ns_prefix(checkpoint_ns) if checkpoint_ns is not None else None
    items, blobs, objects = _value_sizes(
        saver,
        thread_id,
        thread_items(saver, thread_id, sk_prefix=prefix),
        saver.s3_thread_prefixes(thread_id),
    )
    sizes: dict[tuple[str, str], int] = {}
    holders: dict[tuple[str, str], Any] = {}
    for it in items:
        ns, kind, cid, _ = shapes.parse_sk(it)
        if kind == schema.CHECKPOINT_ITEM:
            holders[(ns, cid)] = it
    for it in items:
        ns, kind, cid, _ = shapes.parse_sk(it)
        if kind not in (schema.CHECKPOINT_ITEM, schema.WRITES_ITEM):
            continue
        total = item_size(it)
        refs: list[str] = []
        for attr in (ATTR.BODY, ATTR.METADATA):
            av = it.get(attr, {})
            if "M" in av and "s3" in av["M"]:
                refs.append(av["M"]["s3"]["S"])
        for name, av in it.items():
            if shapes.is_write_attr(name):
                payload = av.get("L", [{}, {}])[1]
                if "M" in payload and "s3" in payload["M"]:
                    refs.append(payload["M"]["s3"]["S"])
        total += sum(objects.get(k, 0) for k in refs)
        for channel, av in it.get(ATTR.VALUES, {}).get("M", {}).items():
            if "M" not in av:
                continue
            version = av["M"]["v"]["S"]
            blob_key = schema.blob_sk(ns, channel, version)
            # A value held by the checkpoint that introduced it counts here too.
            holder = (
                holders.get((ns, av["M"].get("c", {}).get("S", ""))) if av["M"]["l"]["S"] == "c" else None
            )
            held = (holder or {}).get(ATTR.VALUES, {}).get("M", {}).get(channel, {}).get("B")
            if isinstance(held, bytes):
                total += len(held)
            elif blob_key in blobs:
                total += blobs[blob_key]
            else:
                total += objects.get(saver.value_s3_key(thread_id, ns, channel, version), 0)
        sizes[(ns, cid)] = sizes.get((ns, cid), 0) + total
    return sizes
