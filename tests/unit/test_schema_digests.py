"""Key parts too long to keep whole: ``schema.fit`` and the keys built on it.

Three promises, each checked over a grid of lengths and alphabets: every
key fits its AWS limit whatever the ids (up to ``MAX_ID_BYTES``); a key that
fit whole before digests existed is byte for byte what it was (stores
written by earlier versions read as before); and a digested item's whole ids
come back from ``shapes.parse_sk`` only if they make the item's own key.
"""

from __future__ import annotations

import itertools
from urllib.parse import quote

import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb._parts import shapes
from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError
from langgraph.checkpoint.dynamodb.schema import ATTR

UUID = "1f0c2a3e-0000-6000-8000-000000000000"
#: Lengths around every threshold, in characters of three alphabets (1, 3 and 4 UTF-8 bytes;
#: ``|`` and ``%`` escape to 3 bytes in keys).
LENGTHS = [0, 1, 36, 200, 300, 313, 314, 500, 941, 942, 1_100, 4_000]
ALPHABETS = ["a", "線", "😀", "|%"]


def _values() -> list[str]:
    return [(ch * n)[:n] for ch, n in itertools.product(ALPHABETS, LENGTHS)]


def _old_writes_sk(ns: str, cid: str, task: str) -> str:
    """The layout before digests: every part escaped whole."""
    return f"{schema.escape(ns)}|c|{schema.escape(cid)}|w|{schema.escape(task)}"


@pytest.mark.parametrize("value", _values(), ids=lambda v: f"{v[:1] or 'empty'}x{len(v)}")
def test_every_sort_key_fits_whatever_the_ids(value: str) -> None:
    for ns, cid, task in [(value, UUID, UUID), ("", value or "x", UUID), (value, value or "x", value or "x")]:
        for shard in (0, 1, schema.WIDEST_WRITES_SHARD):
            assert len(schema.writes_sk(ns, cid, task, shard).encode()) <= schema.MAX_KEY_BYTES
        assert len(schema.tombstone_sk(ns).encode()) <= schema.MAX_KEY_BYTES
        assert len(schema.blob_sk(ns, value or "ch", value or "1").encode()) <= schema.MAX_KEY_BYTES
        assert len(schema.blob_sk(ns, value or "ch", "0" * 49).encode()) <= schema.MAX_KEY_BYTES
    assert len(schema.run_key(value * 3).encode()) <= schema.MAX_PK_BYTES


def test_keys_that_fit_whole_are_the_keys_they_always_were() -> None:
    """Every combination earlier versions accepted (widest writes key within 1,024 bytes) is unchanged.

    For checkpoint ids of LangGraph's 36 characters or more: a namespace's keys share one
    prefix, so it is kept whole up to what a 36-character id leaves (941 bytes), and a
    namespace of 942-976 bytes that a shorter, hand-made id once fitted next to is digested.
    """
    checked = 0
    for ns, cid, task in itertools.product(_values(), [UUID, "c" * 100], [UUID, "t" * 50]):
        old = _old_writes_sk(ns, cid, UUID) + f"|{schema.WIDEST_WRITES_SHARD}"
        old_task = _old_writes_sk(ns, cid, task) + f"|{schema.WIDEST_WRITES_SHARD}"
        if len(old.encode()) > schema.MAX_KEY_BYTES or len(old_task.encode()) > schema.MAX_KEY_BYTES:
            continue  # refused before: may be keyed anew
        checked += 1
        assert schema.checkpoint_sk(ns, cid) == f"{schema.escape(ns)}|c|{schema.escape(cid)}"
        assert schema.writes_sk(ns, cid, task) == _old_writes_sk(ns, cid, task)
        assert schema.writes_sk(ns, cid, task, 3) == _old_writes_sk(ns, cid, task) + "|3"
    assert checked > 50
    for ns, channel, version in itertools.product(_values(), ["messages", "c" * 300], ["1", "0" * 49]):
        old = f"{schema.escape(ns)}|v|{schema.escape(channel)}|{schema.escape(version)}"
        # A blob's namespace was a checkpoint's first, whose put refused one over 941 bytes.
        if (
            len(old.encode()) <= schema.MAX_KEY_BYTES
            and len(schema.escape(ns).encode()) <= schema.NS_KEEP_BYTES
        ):
            assert schema.blob_sk(ns, channel, version) == old


def test_a_digested_part_is_readable_distinct_and_marked() -> None:
    a, b = "n" * 2_000, "n" * 1_999 + "m"
    fa, fb = schema.fit(a, a, 100), schema.fit(b, b, 100)
    assert fa != fb and fa[:70] == "n" * 70 and schema.is_digested(fa)
    assert len(fa.encode()) <= 100
    # Never cut inside an escape or a character.
    for text in ["%7C" * 100, "線" * 100, "a" + "%25" * 100]:
        for limit in range(schema.DIGESTED_MIN_BYTES, 80):
            part = schema.fit(text, text, limit)
            head = part.split(schema.DIGEST_MARK)[0]
            assert text.startswith(head) and len(part.encode()) <= limit
            assert not head.endswith(("%", "%7", "%2"))
    # Escaped and quoted text never holds the mark: a whole part is never taken for a digest.
    for value in ["%!", "a%!b", "%" * 5 + "!"]:
        assert not schema.is_digested(schema.escape(value)) and not schema.is_digested(quote(value, safe=""))


def test_namespace_prefixes_are_one_per_namespace() -> None:
    """Every key of a namespace starts with its checkpoint prefix, whatever the ids after it."""
    for ns in _values():
        prefix = schema.checkpoint_prefix(ns)
        for cid, task in [(UUID, UUID), ("c" * 900, "t" * 900)]:
            assert schema.checkpoint_sk(ns, cid).startswith(prefix)
            assert schema.writes_sk(ns, cid, task, 2).startswith(schema.writes_task_prefix(ns, cid, task))
            assert schema.writes_sk(ns, cid, task).startswith(schema.checkpoint_sk(ns, cid))
        assert schema.tombstone_sk(ns).startswith(prefix)
        assert schema.blob_sk(ns, "c" * 900, "v").startswith(schema.ns_prefix(ns))


def _item(sk: str, **ids: str) -> dict[str, object]:
    item: dict[str, object] = {ATTR.PK: {"S": "t"}, ATTR.SK: {"S": sk}}
    return shapes.keep_whole_ids(item, **ids)  # type: ignore[arg-type]


def test_parse_sk_gives_the_whole_ids_of_a_digested_item() -> None:
    ns, cid, task = "n" * 1_200, UUID, "t" * 900
    item = _item(schema.writes_sk(ns, cid, task, 5), ns=ns, id=cid, task=task)
    assert shapes.parse_sk(item) == (ns, schema.WRITES_ITEM, cid, task)  # type: ignore[arg-type]
    blob = _item(schema.blob_sk(ns, "ch" * 600, "9"), ns=ns, ch="ch" * 600, ver="9")
    assert shapes.parse_sk(blob) == (ns, schema.BLOB_ITEM, "ch" * 600, "9")  # type: ignore[arg-type]
    tomb = _item(schema.tombstone_sk(ns), ns=ns)
    assert shapes.parse_sk(tomb) == (ns, schema.TOMBSTONE_ITEM, "", None)  # type: ignore[arg-type]
    plain = _item(schema.checkpoint_sk("short", cid), ns="short", id=cid)
    assert ATTR.KEY not in plain and ATTR.FORMAT not in plain  # an item that fits stays as it was


@pytest.mark.parametrize(
    "forge",
    [
        lambda m: m.update(ns={"S": "n" * 1_201}),
        lambda m: m.update(id={"S": "other"}),
        lambda m: m.pop("task"),
        lambda m: m.update(task={"N": "1"}),
    ],
    ids=["other namespace", "other id", "missing", "not a string"],
)
def test_a_forged_id_map_is_refused(forge: object) -> None:
    ns, task = "n" * 1_200, "t" * 900
    item = _item(schema.writes_sk(ns, UUID, task), ns=ns, id=UUID, task=task)
    forge(item[ATTR.KEY]["M"])  # type: ignore[index, operator]
    with pytest.raises(CorruptPayloadError):
        shapes.parse_sk(item)  # type: ignore[arg-type]


@pytest.mark.parametrize("tenant", ["", "acme", "t" * 120])
def test_every_s3_key_fits_behind_a_prefix_and_tenant(tenant: str) -> None:
    saver = DynamoDBSaver(
        table_name="t", bucket_name="b", s3_key_prefix="checkpoints/", tenant_prefix=tenant or None
    )
    for value in _values():
        thread = value or "t"
        for ns, cid, task in [(value, UUID, UUID), ("", value or "c", value or "k")]:
            keys = [
                saver.keys.checkpoint_s3_key(thread, ns, cid, "metadata"),
                saver.keys.write_s3_prefix(thread, ns, cid, task, "-999") + "0" * 32,
                saver.keys.value_s3_key(thread, ns, value or "ch", value or "1"),
            ]
            for key in keys:
                assert len(key.encode()) <= schema.MAX_S3_KEY_BYTES, key
                assert key.startswith(saver.s3_thread_prefixes(thread)), key
    saver.close()


def test_s3_keys_that_fit_whole_are_unchanged() -> None:
    saver = DynamoDBSaver(table_name="t", bucket_name="b", s3_key_prefix="checkpoints/")
    thread, ns = "線程" * 40, "graph:1|sub:2"
    whole = f"checkpoints/{quote(thread, safe='')}/_{quote(ns, safe='')}/"
    assert saver.keys.checkpoint_s3_key(thread, ns, UUID, "body") == f"{whole}c/{UUID}/body"
    assert saver.keys.value_s3_key(thread, ns, "messages", "7") == f"{whole}v/messages/7"
    assert saver.s3_thread_prefixes(thread) == (
        saver.s3_thread_prefix(thread),
        saver.s3_thread_prefixes(thread)[1],
    )
    assert saver.s3_thread_prefixes("short") == ("checkpoints/short/",)
    saver.close()
