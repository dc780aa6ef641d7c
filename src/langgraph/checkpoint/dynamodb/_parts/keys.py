"""The keys a saver gives a thread, and the checks that every id fits them.

What lives here: :class:`ThreadKeys`, built from a saver's tenant prefix, S3
key prefix and whether it has a bucket. Operations reach it as ``s.keys``:
partition keys, the thread id of a partition key, every S3 key and prefix of
a thread's objects, the proof that a stored S3 pointer is the item's own,
and the length checks on ids, channels and versions. The layout itself (key
formats, digests, the room each segment gets) is ``schema``'s; this module
applies it under one tenant and prefix.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote

from langchain_core.runnables import RunnableConfig

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb._parts.shapes import Item
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError, KeyTooLongError
from langgraph.checkpoint.dynamodb.schema import ATTR

__all__ = ["S3_SUFFIX_CHARS", "ThreadKeys"]

#: A pending write's S3 key ends in a random suffix of this many characters (see _placement).
S3_SUFFIX_CHARS: Final = 32


class ThreadKeys:
    """Partition keys and S3 keys of threads under one tenant prefix and S3 key prefix.

    Immutable: a tenant view of a saver has keys of its own.

    Example:
        >>> keys = ThreadKeys(tenant_prefix="acme#", s3_key_prefix="checkpoints/", has_bucket=False)
        >>> keys.pk("t|1"), keys.thread_id_of("acme#|t%7C1")
        ('acme#|t%7C1', 't|1')
    """

    __slots__ = ("has_bucket", "s3_key_prefix", "tenant_prefix")

    def __init__(self, *, tenant_prefix: str, s3_key_prefix: str, has_bucket: bool) -> None:
        self.tenant_prefix = tenant_prefix
        self.s3_key_prefix = s3_key_prefix
        #: Object keys are checked for length only where objects can be written.
        self.has_bucket = has_bucket

    def __repr__(self) -> str:
        return f"ThreadKeys(tenant_prefix={self.tenant_prefix!r}, s3_key_prefix={self.s3_key_prefix!r})"

    # ---------------------------------------------------------- partitions

    def pk(self, thread_id: str) -> str:
        """Partition key of a thread (under the tenant prefix)."""
        return schema.partition_key(thread_id, self.tenant_prefix)

    def thread_id_of(self, pk: str) -> str | None:
        """The thread id of a partition key, or None if not this tenant's or not a thread.

        Untenanted keys see untenanted threads only: a tenant's threads are
        reached by maintenance through a tenant view (``saver.owner_of``).
        """
        parsed = schema.parse_partition_key(pk)
        if parsed is None or parsed[0] != self.tenant_prefix:
            return None
        return parsed[1]

    # ------------------------------------------------------------------ S3

    def s3_thread_prefix(self, thread_id: str) -> str:
        """The S3 key prefix of every object of a thread."""
        return schema.s3_thread_prefix(self.s3_key_prefix, thread_id, self.tenant_prefix)

    def s3_thread_prefixes(self, thread_id: str) -> tuple[str, ...]:
        """Every prefix the thread's objects may be under (two for a long thread id)."""
        return schema.s3_thread_prefixes(self.s3_key_prefix, thread_id, self.tenant_prefix)

    def s3_root(self) -> str:
        """The key prefix every object of this tenant's threads starts with."""
        if self.tenant_prefix:
            return schema.tenant_s3_prefix(self.s3_key_prefix, self.tenant_prefix)
        return self.s3_key_prefix

    def s3_key(self, thread_id: str, ns: str, *rest: tuple[str, str, int], reserve: int = 0) -> str:
        """An object key of a thread's namespace (see ``schema.s3_object_key``)."""
        segments = [
            (quote(thread_id, safe=""), thread_id, schema.S3_THREAD_ROOM),
            (f"_{quote(ns, safe='')}", ns, schema.S3_NS_ROOM),
            *rest,
        ]
        return schema.s3_object_key(self.s3_root(), segments, reserve)

    def shaped_s3_key(self, kind: str, thread_id: str, ns: str, *, reserve: int = 0, **ids: str) -> str:
        """The key of a thread's object of ``kind`` (a row of ``schema.S3_SHAPES``)."""
        return self.s3_key(thread_id, ns, *schema.s3_shape_segments(kind, **ids), reserve=reserve)

    def checkpoint_s3_key(self, thread_id: str, ns: str, cid: str, leaf: str) -> str:
        """The key of a checkpoint's ``body`` or ``metadata`` object."""
        return self.shaped_s3_key(f"checkpoint {leaf}", thread_id, ns, checkpoint_id=cid)

    def write_s3_prefix(self, thread_id: str, ns: str, cid: str, task_id: str, idx: str) -> str:
        """A pending write's key up to its random suffix (``S3_SUFFIX_CHARS`` more)."""
        return self.shaped_s3_key(
            "write", thread_id, ns, reserve=S3_SUFFIX_CHARS, checkpoint_id=cid, task_id=task_id, idx=idx
        )

    def value_s3_key(self, thread_id: str, ns: str, channel: str, version: str) -> str:
        """The S3 key a channel version has when it is stored (or re-homed) in S3."""
        return self.shaped_s3_key("value", thread_id, ns, channel=channel, version=version)

    def own_s3_key(self, thread_id: str, item: Item, attr: str) -> tuple[str, bool] | None:
        """The S3 key a pointer in ``item[attr]`` must have, derived from the item's identity.

        ``(key, True)``: exactly that key (body, metadata); ``(prefix,
        False)``: a key under that prefix (a pending write's key ends with a
        random suffix, see ``placement``). ``None``: this attribute of this
        kind of item never holds a pointer.
        """
        ns, kind, cid, task_id = shapes.parse_sk(item)
        if kind == schema.CHECKPOINT_ITEM and attr == ATTR.BODY:
            return self.checkpoint_s3_key(thread_id, ns, cid, "body"), True
        if kind == schema.CHECKPOINT_ITEM and attr == ATTR.METADATA:
            return self.checkpoint_s3_key(thread_id, ns, cid, "metadata"), True
        if kind == schema.WRITES_ITEM and shapes.is_write_attr(attr):
            idx = attr[len(ATTR.WRITE_PREFIX) :]
            return self.write_s3_prefix(thread_id, ns, cid, task_id or "", idx), False
        return None

    def s3_pointer(self, thread_id: str, item: Item, attr: str) -> str:
        """The S3 key ``item[attr]`` points to, once proven to be the item's own.

        A stored key is never trusted as such: whoever can write items in
        its own partition (a tenant under its IAM grant) could otherwise
        make a reader return, and a maintenance job delete, any object of
        the bucket, another tenant's included. Raises
        ``CorruptPayloadError`` naming the item for a key outside the one
        ``own_s3_key`` derives.
        """
        av = item[attr]
        stored = (av["L"][1] if shapes.is_write_attr(attr) else av)["M"]["s3"]["S"]
        own = self.own_s3_key(thread_id, item, attr)
        if own is not None:
            key, exact = own
            rest = stored[len(key) :]
            if stored == key if exact else (stored.startswith(key) and rest and "/" not in rest):
                return str(stored)
        raise CorruptPayloadError(
            f"item {item[ATTR.PK]['S']!r}/{item[ATTR.SK]['S']!r}: attribute {attr!r} points to "
            f"S3 key {stored!r}, which is not this item's own "
            f"({'none' if own is None else own[0] + ('' if own[1] else '*')}); refused"
        )

    # -------------------------------------------------------------- checks

    def ids(self, config: RunnableConfig, *, need_checkpoint_id: bool = False) -> tuple[str, str, str | None]:
        """Validate a config and return ``(thread_id, checkpoint_ns, checkpoint_id)``."""
        if not isinstance(config, Mapping):
            raise TypeError(f"config must be a dict, got {type(config).__name__}")
        conf = config.get("configurable")
        if not isinstance(conf, Mapping):
            raise ValueError("config['configurable'] is missing: pass {'configurable': {'thread_id': ...}}")
        thread_id = conf.get("thread_id")
        if thread_id is None:
            raise ValueError("config['configurable']['thread_id'] is required")
        if thread_id == "":
            # Given, but empty: say so, or the caller looks for a missing key that is there.
            raise ValueError(
                "config['configurable']['thread_id'] is empty: a thread id needs at least one character"
            )
        if not isinstance(thread_id, str):
            if isinstance(thread_id, (int, uuid.UUID)) and not isinstance(thread_id, bool):
                thread_id = str(thread_id)
            else:
                raise TypeError(
                    f"config['configurable']['thread_id'] must be a str, got {type(thread_id).__name__}"
                )
        ns = conf.get("checkpoint_ns", "") or ""
        if not isinstance(ns, str):
            raise TypeError(f"config['configurable']['checkpoint_ns'] must be a str, got {type(ns).__name__}")
        cid = conf.get("checkpoint_id") or None
        if cid is not None and not isinstance(cid, str):
            raise TypeError(
                f"config['configurable']['checkpoint_id'] must be a str, got {type(cid).__name__}"
            )
        if need_checkpoint_id and cid is None:
            raise ValueError("config['configurable']['checkpoint_id'] is required here")
        self.check(thread_id, ns, cid)
        return thread_id, ns, cid

    def check(self, thread_id: str, ns: str, cid: str | None, task_id: str = "") -> None:
        """Refuse ids that cannot be keyed (see ``BaseDynamoDBSaver.check_ids``)."""
        for name, value in (
            ("thread_id", thread_id),
            ("checkpoint_ns", ns),
            ("checkpoint_id", cid or ""),
            ("task_id", task_id),
        ):
            try:
                size = len(value.encode())
            except UnicodeEncodeError:
                raise ValueError(f"{name} is not valid Unicode (lone surrogate?): {value!r}") from None
            if size > schema.MAX_ID_BYTES:
                raise KeyTooLongError(
                    f"{name} is {size} bytes once encoded; this store takes ids of up to "
                    f"{schema.MAX_ID_BYTES} bytes (longer key parts are digested, the whole id kept in the item)"
                )
        if cid is not None and cid.startswith(schema.TOMBSTONE_MARK):
            # That key range is the tombstone's (see schema.tombstone_sk).
            raise ValueError("checkpoint_id must not start with U+10FFFF")
        # The partition key as stored: under the tenant prefix. The thread id is the
        # one id kept whole in a key (tools and IAM's LeadingKeys read it there).
        pk_len = len(self.pk(thread_id).encode())
        if pk_len > schema.MAX_PK_BYTES:
            raise KeyTooLongError(
                f"thread_id is {pk_len} bytes once encoded (with the tenant prefix); DynamoDB allows "
                f"{schema.MAX_PK_BYTES} bytes in a partition key"
            )
        if self.has_bucket:
            # The longest object key these ids make: a pending write's (see _placement.write_to_s3).
            key = self.write_s3_prefix(thread_id, ns, cid or "0" * 36, task_id or "0" * 36, "-999")
            self.check_s3_key(key + "0" * S3_SUFFIX_CHARS)

    def check_value(self, thread_id: str, ns: str, channel: str, version: str, *, keyed: bool = True) -> None:
        """Refuse a channel or version too long to store (their keys are digested to fit).

        ``keyed``: the value is stored under its own key (a blob item or an S3
        object), whose length is checked too.
        """
        for name, value in (("channel", channel), ("version", version)):
            try:
                size = len(value.encode())
            except UnicodeEncodeError:
                raise ValueError(f"{name} is not valid Unicode (lone surrogate?): {value[:80]!r}") from None
            if size > schema.MAX_ID_BYTES:
                raise KeyTooLongError(
                    f"{name} {value[:80]!r} is {size} bytes once encoded; this store takes up to "
                    f"{schema.MAX_ID_BYTES}"
                )
        if keyed and self.has_bucket:
            self.check_s3_key(self.value_s3_key(thread_id, ns, channel, version))

    def check_s3_key(self, key: str) -> None:
        """Refuse an object key S3 would refuse (over ``schema.MAX_S3_KEY_BYTES``)."""
        if len(key.encode()) > schema.MAX_S3_KEY_BYTES:
            raise KeyTooLongError(
                f"an S3 key of this thread would be {len(key.encode())} bytes even with its ids digested; "
                f"S3 allows {schema.MAX_S3_KEY_BYTES}: s3_key_prefix and tenant_prefix take "
                f"{len(self.s3_root().encode())} bytes of it (keep them under 400 together)"
            )
