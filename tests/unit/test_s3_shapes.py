"""The S3 object layout is one table (``schema.S3_SHAPES``): keys are built from it and parse back to it."""

from __future__ import annotations

import pytest

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb._parts.keys import S3_SUFFIX_CHARS, ThreadKeys

LONG = "x/" * 300  # quoted, far over every room: digested segments


def _keys_of(keys: ThreadKeys, thread: str, ns: str, ident: str) -> dict[str, str]:
    return {
        "checkpoint body": keys.checkpoint_s3_key(thread, ns, ident, "body"),
        "checkpoint metadata": keys.checkpoint_s3_key(thread, ns, ident, "metadata"),
        "write": keys.write_s3_prefix(thread, ns, ident, ident, "-999") + "a" * S3_SUFFIX_CHARS,
        "value": keys.value_s3_key(thread, ns, ident, ident),
    }


@pytest.mark.parametrize("tenant", ["", "acme"])
@pytest.mark.parametrize(
    ("thread", "ns", "ident"), [("t", "", "1ef-a"), ("v", "w:1", "c"), (LONG, LONG, LONG)]
)
def test_every_shape_parses_back_to_its_kind(tenant: str, thread: str, ns: str, ident: str) -> None:
    keys = ThreadKeys(tenant_prefix=tenant, s3_key_prefix="checkpoints/", has_bucket=True)
    built = _keys_of(keys, thread, ns, ident)
    assert set(built) == {shape.kind for shape in schema.S3_SHAPES}  # every row has a builder
    for kind, key in built.items():
        assert len(key.encode()) <= schema.MAX_S3_KEY_BYTES
        assert key.startswith(keys.s3_thread_prefixes(thread)[-1]) or key.startswith(
            keys.s3_thread_prefix(thread)
        )
        assert schema.s3_kind(key, keys.s3_root()) == kind, key


def test_keys_are_the_layout_the_store_has_always_written() -> None:
    keys = ThreadKeys(tenant_prefix="", s3_key_prefix="p/", has_bucket=True)
    assert keys.checkpoint_s3_key("t/1", "sub:a", "cid", "body") == "p/t%2F1/_sub%3Aa/c/cid/body"
    assert keys.write_s3_prefix("t", "", "cid", "task/1", "3") == "p/t/_/c/cid/w/task%2F1/3."
    assert keys.value_s3_key("t", "", "messages", "00.5") == "p/t/_/v/messages/00.5"


def test_keys_of_no_shape_are_other() -> None:
    assert schema.s3_kind("p/t/_/c/cid/w/task", "p/") == "other"  # a write key without its index
    assert schema.s3_kind("p/t/_/x/a/b", "p/") == "other"
    assert schema.s3_kind("p/t/nons/v/a/b", "p/") == "other"
