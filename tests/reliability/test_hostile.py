"""Hostile and bad input: configs, corrupted items and objects, code-execution payloads.

Extends ``tests/integration/test_contract.py`` (missing thread id, corrupt
inline value, truncated value, future item format, deleted S3 object / blob
item), which is not repeated here:

* configs and arguments of the wrong type give a ``ValueError``/``TypeError``
  naming the field, before anything is written;
* every way a stored payload can be damaged (item attributes of the wrong
  shape, foreign items, bad bytes in DynamoDB, in S3 and in blob items,
  payload/item format versions from the future, dangling pointers) raises
  ``CorruptPayloadError`` / ``UnsupportedFormatError`` / ``MissingPayloadError``
  naming the checkpoint or key — never a wrong state, never an obscure
  ``KeyError``;
* payloads crafted to make the serializer import and call arbitrary code
  (JsonPlusSerializer's msgpack constructor extensions, lc:1/lc:2 JSON
  constructors, pickle) run nothing (checked with a sentinel file) under a
  strict serializer; what the permissive default does is recorded below.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import ormsgpack
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.dynamodb import (
    CorruptPayloadError,
    DynamoDBSaver,
    MissingPayloadError,
    UnsupportedFormatError,
    schema,
)
from langgraph.checkpoint.dynamodb.codec import PayloadCodec
from tests.reliability.workloads import _text, session_kw
from tests.support.faults import FaultInjector
from tests.support.harness import cfg, env_for_subprocess, new_thread, scan_table, shared_store

ATTR = schema.ATTR


def _ckpt(values: dict[str, Any]) -> dict[str, Any]:
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = values
    cp["channel_versions"] = {k: "1" for k in values}
    return cp  # type: ignore[return-value]


@pytest.fixture(scope="module")
def store(moto_endpoint: str) -> dict[str, str]:
    """One table and bucket for the module (every test uses fresh thread ids)."""
    return shared_store("hostile")


@pytest.fixture
def names(store: dict[str, str]) -> dict[str, str]:  # overrides the per-test tables of conftest
    return store


@pytest.fixture
def saver(names: dict[str, str]) -> Any:
    s = DynamoDBSaver(**names, inline_threshold=64, s3_threshold=512, **session_kw())
    yield s
    s.close()


def _stored(saver: DynamoDBSaver, thread: str) -> dict[str, Any]:
    """A checkpoint with every kind of value, and writes (inline + S3).

    ``small`` inline; ``held`` held by this checkpoint (it introduced it);
    ``blob`` introduced by the parent, referenced here, and re-homed to a
    blob item when prune deleted the parent; ``s3`` in S3.
    """
    values = {"small": 1, "blob": _text("b", 200), "s3": _text("s", 4000)}
    parent = saver.put(cfg(thread), _ckpt(values), {"note": _text("n", 2000)}, {k: "1" for k in values})
    values["held"] = _text("h", 200)
    stored = saver.put(parent, _ckpt(values), {"note": _text("n", 2000)}, {"held": "1"})
    assert saver.prune([thread]).values_rehomed == 1
    saver.put_writes(stored, [("small", 5), ("big", _text("w", 3000))], "task1", "~p")
    return stored


def _key(thread: str, sk: str) -> dict[str, Any]:
    return {"PK": {"S": schema.partition_key(thread)}, "SK": {"S": sk}}


def _update(
    saver: DynamoDBSaver, thread: str, sk: str, expr: str, values: dict[str, Any] | None = None
) -> None:
    kw: dict[str, Any] = {"TableName": saver.table_name, "Key": _key(thread, sk), "UpdateExpression": expr}
    if values:
        kw["ExpressionAttributeValues"] = values
    boto3.client("dynamodb").update_item(**kw)


# ----------------------------------------------------------------- configs


BAD_CONFIGS = [
    ({"configurable": "t-1"}, ValueError, "configurable"),
    ({"configurable": {"thread_id": 1.5}}, TypeError, "thread_id"),
    ({"configurable": {"thread_id": True}}, TypeError, "thread_id"),
    ({"configurable": {"thread_id": {"a": 1}}}, TypeError, "thread_id"),
    ({"configurable": {"thread_id": ""}}, ValueError, "thread_id"),
    ({"configurable": {"thread_id": "t", "checkpoint_ns": 3}}, TypeError, "checkpoint_ns"),
    ({"configurable": {"thread_id": "t", "checkpoint_ns": ["a"]}}, TypeError, "checkpoint_ns"),
    ({"configurable": {"thread_id": "t", "checkpoint_id": 17}}, TypeError, "checkpoint_id"),
    ("thread t", TypeError, "config"),
]


@pytest.mark.parametrize("config,exc,field", BAD_CONFIGS)
def test_bad_configs_name_the_field(saver: DynamoDBSaver, config: Any, exc: type, field: str) -> None:
    before = scan_table(saver.table_name)
    with pytest.raises(exc, match=field):
        saver.get_tuple(config)
    with pytest.raises(exc, match=field):
        list(saver.list(config))
    with pytest.raises(exc, match=field):
        saver.put(config, _ckpt({"a": 1}), {}, {"a": "1"})
    assert scan_table(saver.table_name) == before


def test_bad_arguments_name_the_field(saver: DynamoDBSaver) -> None:
    stored = saver.put(cfg(new_thread()), _ckpt({}), {}, {})
    before = scan_table(saver.table_name)
    with pytest.raises(TypeError, match="task_id"):
        saver.put_writes(stored, [("a", 1)], 42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="channel"):
        saver.put_writes(stored, [(7, 1)], "task")  # type: ignore[list-item]
    with pytest.raises(TypeError, match="limit"):
        list(saver.list(stored, limit="3"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="filter"):
        list(saver.list(stored, filter=[("a", 1)]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="thread_id"):
        saver.delete_thread(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="source_thread_id"):
        saver.copy_thread(5, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="thread_ids"):
        saver.prune("t-1")
    with pytest.raises(ValueError, match="strategy"):
        saver.prune(["t-1"], strategy="everything")
    with pytest.raises(ValueError, match="keep_last"):
        saver.prune(["t-1"], keep_last=0)
    # A value the serializer cannot encode fails before anything is written.
    with pytest.raises(TypeError, match="not msgpack serializable"):
        saver.put(cfg(new_thread()), _ckpt({"a": object()}), {}, {"a": "1"})
    assert scan_table(saver.table_name) == before


def test_bad_before_names_the_field(saver: DynamoDBSaver) -> None:
    for before in ("some-checkpoint-id", {"configurable": "x"}):
        with pytest.raises(TypeError, match="before"):
            list(saver.list(cfg("t"), before=before))  # type: ignore[arg-type]


def test_malformed_writes_name_the_field(saver: DynamoDBSaver) -> None:
    stored = saver.put(cfg(new_thread()), _ckpt({}), {}, {})
    for writes in ([("only-channel",)], "ab"):
        with pytest.raises((TypeError, ValueError), match="write"):
            saver.put_writes(stored, writes, "task")  # type: ignore[arg-type]


def test_unencodable_thread_id_names_the_field(saver: DynamoDBSaver) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        saver.get_tuple({"configurable": {"thread_id": "a\ud800"}})


# --------------------------------------------------------- damaged items


def _ck(stored: dict[str, Any]) -> tuple[str, str]:
    c = stored["configurable"]
    return c["thread_id"], schema.checkpoint_sk(c["checkpoint_ns"], c["checkpoint_id"])


def _wk(stored: dict[str, Any]) -> tuple[str, str]:
    c = stored["configurable"]
    return c["thread_id"], schema.writes_sk(c["checkpoint_ns"], c["checkpoint_id"], "task1")


def _blob_sk(thread: str) -> str:
    (blob,) = [it for it in scan_table_thread(thread) if it[ATTR.KIND]["S"] == schema.BLOB_ITEM]
    return str(blob["SK"]["S"])


_TABLE: dict[str, str] = {}


def scan_table_thread(thread: str) -> list[dict[str, Any]]:
    return [it for it in scan_table(_TABLE["name"]) if it["PK"]["S"] == schema.partition_key(thread)]


def _s3_key(saver: DynamoDBSaver, stored: dict[str, Any], part: str) -> str:
    c = stored["configurable"]
    prefix = schema.s3_thread_prefix(saver.s3_key_prefix, c["thread_id"])
    s3 = boto3.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=saver.bucket_name, Prefix=prefix).get("Contents", [])]
    (key,) = [k for k in keys if part in k]
    return key


def _put_s3(saver: DynamoDBSaver, key: str, body: bytes) -> None:
    boto3.client("s3").put_object(Bucket=saver.bucket_name, Key=key, Body=body)


def _del_s3(saver: DynamoDBSaver, key: str) -> None:
    boto3.client("s3").delete_object(Bucket=saver.bucket_name, Key=key)


def _damage(case: str, saver: DynamoDBSaver, stored: dict[str, Any]) -> None:
    thread, csk = _ck(stored)
    _, wsk = _wk(stored)
    if case == "cp-truncated":
        _update(saver, thread, csk, "SET cp = :v", {":v": {"B": b"\x01n"}})
    elif case == "cp-not-a-payload":
        _update(saver, thread, csk, "SET cp = :v", {":v": {"S": "hello"}})
    elif case == "cp-future-payload":
        _update(saver, thread, csk, "SET cp = :v", {":v": {"B": b"\x02n\x07msgpack\x80"}})
    elif case == "md-bad-zlib":
        _update(saver, thread, csk, "SET md = :v", {":v": {"B": b"\x01z\x07msgpacknot-zlib"}})
    elif case == "md-unknown-codec":
        _update(saver, thread, csk, "SET md = :v", {":v": {"B": b"\x01q\x04json{}"}})
    elif case == "md-unknown-serde-type":
        _update(saver, thread, csk, "SET md = :v", {":v": {"B": b"\x01n\x05weird{}"}})
    elif case == "md-s3-truncated":
        _put_s3(saver, _s3_key(saver, stored, "/metadata"), b"\x01")
    elif case == "md-s3-missing":
        _del_s3(saver, _s3_key(saver, stored, "/metadata"))
    elif case == "value-s3-garbage":
        _put_s3(saver, _s3_key(saver, stored, "/v/s3/"), b"\x01z\x07msgpack" + b"\x00" * 50)
    elif case == "value-s3-future":
        _put_s3(saver, _s3_key(saver, stored, "/v/s3/"), b"\x05n\x07msgpack\xa1x")
    elif case == "value-s3-empty":
        _put_s3(saver, _s3_key(saver, stored, "/v/s3/"), b"")
    elif case == "blob-garbage":
        _update(saver, thread, _blob_sk(thread), "SET b = :v", {":v": {"B": b"\x01n\x07msgpack\xc1"}})
    elif case == "blob-future-item":
        _update(saver, thread, _blob_sk(thread), "SET f = :v", {":v": {"N": str(schema.FORMAT_VERSION + 1)}})
    elif case == "blob-future-payload":
        _update(saver, thread, _blob_sk(thread), "SET b = :v", {":v": {"B": b"\x09n\x07msgpack\xa1x"}})
    elif case == "writes-future-item":
        _update(saver, thread, wsk, "SET f = :v", {":v": {"N": str(schema.FORMAT_VERSION + 1)}})
    elif case == "writes-inline-garbage":
        _update(
            saver, thread, wsk, "SET w0 = :v", {":v": {"L": [{"S": "small"}, {"B": b"\x01n\x07msgpack\xc1"}]}}
        )
    elif case == "writes-s3-missing":
        _del_s3(saver, _s3_key(saver, stored, "/w/"))
    elif case == "writes-s3-truncated":
        _put_s3(saver, _s3_key(saver, stored, "/w/"), b"\x01z")
    # structural damage: attributes of the wrong DynamoDB type or shape
    elif case == "writes-attr-wrong-type":
        _update(saver, thread, wsk, "SET w0 = :v", {":v": {"S": "garbage"}})
    elif case == "writes-attr-short-list":
        _update(saver, thread, wsk, "SET w0 = :v", {":v": {"L": [{"S": "small"}]}})
    elif case == "value-ref-wrong-type":
        boto3.client("dynamodb").update_item(
            TableName=saver.table_name,
            Key=_key(thread, csk),
            UpdateExpression="SET vals.#c = :v",
            ExpressionAttributeNames={"#c": "blob"},
            ExpressionAttributeValues={":v": {"S": "garbage"}},
        )
    elif case == "vals-not-a-map":
        _update(saver, thread, csk, "SET vals = :v", {":v": {"S": "garbage"}})
    elif case == "blob-missing":  # and the checkpoint that held the value is gone too
        boto3.client("dynamodb").delete_item(TableName=saver.table_name, Key=_key(thread, _blob_sk(thread)))
    elif case == "held-garbage":
        _update(saver, thread, csk, "SET vals.held = :v", {":v": {"B": b"\x01n\x07msgpack\xc1"}})
    elif case in ("value-ref-unknown-location", "value-ref-no-holder-id"):
        expr = "SET vals.#c.l = :v" if case == "value-ref-unknown-location" else "REMOVE vals.#c.c"
        kw: dict[str, Any] = (
            {"ExpressionAttributeValues": {":v": {"S": "elsewhere"}}} if "SET" in expr else {}
        )
        boto3.client("dynamodb").update_item(
            TableName=saver.table_name,
            Key=_key(thread, csk),
            UpdateExpression=expr,
            ExpressionAttributeNames={"#c": "blob"},
            **kw,
        )
    elif case == "cp-future-item":
        _update(saver, thread, csk, "SET f = :v", {":v": {"N": str(schema.FORMAT_VERSION + 1)}})
    elif case == "blob-payload-missing":
        _update(saver, thread, _blob_sk(thread), "REMOVE b")
    elif case == "md-not-a-mapping":
        _update(saver, thread, csk, "SET md = :v", {":v": {"B": b"\x01n\x07msgpack\x93\x01\x02\x03"}})
    elif case == "foreign-item-in-thread":
        boto3.client("dynamodb").put_item(
            TableName=saver.table_name,
            Item={"PK": {"S": schema.partition_key(thread)}, "SK": {"S": "not-our-key"}, "f": {"N": "1"}},
        )
    elif case == "parent-wrong-type":
        _update(saver, thread, csk, "SET p = :v", {":v": {"N": "5"}})
    else:  # pragma: no cover
        raise AssertionError(case)


DAMAGE = [
    "cp-truncated",
    "cp-not-a-payload",
    "cp-future-payload",
    "md-bad-zlib",
    "md-unknown-codec",
    "md-unknown-serde-type",
    "md-s3-truncated",
    "md-s3-missing",
    "value-s3-garbage",
    "value-s3-future",
    "value-s3-empty",
    "blob-garbage",
    "blob-future-item",
    "blob-future-payload",
    "writes-future-item",
    "writes-inline-garbage",
    "writes-s3-missing",
    "writes-s3-truncated",
    "writes-attr-wrong-type",
    "writes-attr-short-list",
    "value-ref-wrong-type",
    "vals-not-a-map",
    "blob-payload-missing",
    "md-not-a-mapping",
    "foreign-item-in-thread",
    "parent-wrong-type",
    "blob-missing",
    "held-garbage",
    "value-ref-unknown-location",
    "value-ref-no-holder-id",
    "cp-future-item",
]

EXPECTED_ERROR = {
    "cp-future-payload": UnsupportedFormatError,
    "value-s3-future": UnsupportedFormatError,
    "blob-future-item": UnsupportedFormatError,
    "blob-future-payload": UnsupportedFormatError,
    "writes-future-item": UnsupportedFormatError,
    "cp-future-item": UnsupportedFormatError,
    "blob-missing": MissingPayloadError,
    "md-s3-missing": MissingPayloadError,
    "writes-s3-missing": MissingPayloadError,
}


@pytest.mark.parametrize("case", DAMAGE)
def test_damaged_payloads_raise_specific_errors(saver: DynamoDBSaver, case: str) -> None:
    _TABLE["name"] = saver.table_name
    thread = new_thread()
    stored = _stored(saver, thread)
    _damage(case, saver, stored)
    expected = EXPECTED_ERROR.get(case, CorruptPayloadError)
    thread_id, _, cid = stored["configurable"].values()
    fresh = DynamoDBSaver(
        table_name=saver.table_name,
        bucket_name=saver.bucket_name,
        inline_threshold=64,
        s3_threshold=512,
        **session_kw(),
    )
    reads = [
        lambda: fresh.get_tuple(stored),
        lambda: fresh.get_tuple(cfg(thread)),
        lambda: list(fresh.list(cfg(thread))),
        lambda: list(fresh.list({"configurable": {"thread_id": thread}})),
    ]
    if case == "foreign-item-in-thread":
        reads = reads[3:]  # only a listing of the whole thread meets it
    for read in reads:
        with pytest.raises(expected) as info:
            read()
        msg = str(info.value)
        assert cid in msg or thread_id in msg or "s3://" in msg, f"error does not say where: {msg}"
    fresh.close()


def test_future_blob_refused_on_unprocessed_keys_retry(saver: DynamoDBSaver) -> None:
    _TABLE["name"] = saver.table_name
    thread = new_thread()
    stored = _stored(saver, thread)
    _damage("blob-future-item", saver, stored)
    # Another process's saver: the writer serves the value it holds from memory.
    fresh = DynamoDBSaver(
        table_name=saver.table_name,
        bucket_name=saver.bucket_name,
        inline_threshold=64,
        s3_threshold=512,
        **session_kw(),
    )
    inj = FaultInjector(1, rate=1.0, kinds=("partial",), ops=frozenset({"BatchGetItem"}), max_faults=1)
    inj.attach_saver(fresh)
    with pytest.raises(UnsupportedFormatError):
        fresh.get_tuple(stored)
    assert inj.kinds_injected()["partial"] == 1, "the retry path was not taken"
    fresh.close()


# ------------------------------------------------- code-execution payloads


def _ext(code: int, tup: Any) -> tuple[str, bytes]:
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(tup)))


class _Evil:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> Any:
        import os

        return (os.system, (f"touch {self.path}",))


def _hostile_payloads(sentinel: Path, *, spawning: bool = True) -> dict[str, tuple[str, bytes]]:
    s = str(sentinel)
    out = {
        "ext-single-arg os.system": _ext(0, ("os", "system", f"touch {s}")),
        "ext-kwargs subprocess.run": _ext(2, ("subprocess", "run", {"args": ["touch", s]})),
        "ext-method os.system": _ext(3, ("os", "system", f"touch {s}", "__call__")),
        "json lc:2 constructor": (
            "json",
            json.dumps(
                {"lc": 2, "type": "constructor", "id": ["subprocess", "run"], "args": [["touch", s]]}
            ).encode(),
        ),
        "json lc:1 constructor": (
            "json",
            json.dumps(
                {
                    "lc": 1,
                    "type": "constructor",
                    "id": ["subprocess", "run"],
                    "kwargs": {"args": ["touch", s]},
                }
            ).encode(),
        ),
        "pickle os.system": ("pickle", pickle.dumps(_Evil(s))),
    }
    if spawning:  # these leave a child process behind if they ever run
        out["ext-pos-args subprocess.Popen"] = _ext(1, ("subprocess", "Popen", [["touch", s]]))
        out["ext-pydantic subprocess.Popen"] = _ext(5, ("subprocess", "Popen", {"args": ["touch", s]}, None))
    return out


def _id(name: str) -> str:
    return name.replace(" ", "-").replace(":", "")


def _plant(saver: DynamoDBSaver, typed: tuple[str, bytes]) -> dict[str, Any]:
    """A checkpoint whose inline value ``v`` is the given payload, as a table writer could plant it."""
    thread = new_thread()
    stored = saver.put(cfg(thread), _ckpt({"v": 1}), {}, {"v": "1"})
    _update(saver, thread, _ck(stored)[1], "SET vals.v = :v", {":v": {"B": PayloadCodec("none").pack(typed)}})
    return stored


def _read_value(saver: DynamoDBSaver, stored: dict[str, Any]) -> Any:
    try:
        return saver.get_tuple(stored).checkpoint["channel_values"]["v"]
    except CorruptPayloadError as exc:
        return exc


@pytest.mark.parametrize("name", sorted(_hostile_payloads(Path("x"))), ids=_id)
def test_code_payloads_run_nothing_with_a_strict_serializer(
    moto_endpoint: str, names: dict[str, str], tmp_path: Path, name: str
) -> None:
    """A strict msgpack allow-list (``allowed_msgpack_modules=None``), kept by ``with_allowlist``."""
    base = DynamoDBSaver(**names, serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    base.setup()
    saver = base.with_allowlist([("tests.reliability.test_hostile", "Nothing")])
    assert saver is not base  # a shallow copy with a derived serializer
    sentinel = tmp_path / "pwned"
    stored = _plant(saver, _hostile_payloads(sentinel)[name])
    value = _read_value(saver, stored)
    assert not sentinel.exists(), f"{name}: the payload ran code"
    assert not isinstance(value, (subprocess.Popen, subprocess.CompletedProcess, int)) or isinstance(
        value, bool
    )
    base.close()


@pytest.mark.parametrize(
    "name",
    ["json lc:1 constructor", "json lc:2 constructor", "pickle os.system", "ext-method os.system"],
    ids=_id,
)
def test_code_payloads_refused_by_the_default_serializer_too(
    saver: DynamoDBSaver, tmp_path: Path, name: str
) -> None:
    sentinel = tmp_path / "pwned"
    stored = _plant(saver, _hostile_payloads(sentinel)[name])
    _read_value(saver, stored)
    assert not sentinel.exists()


@pytest.mark.parametrize("name", ["ext-single-arg os.system", "ext-kwargs subprocess.run"], ids=_id)
def test_code_payloads_run_nothing_with_the_default_serializer(
    saver: DynamoDBSaver, tmp_path: Path, name: str
) -> None:
    sentinel = tmp_path / "pwned"
    stored = _plant(saver, _hostile_payloads(sentinel, spawning=False)[name])
    _read_value(saver, stored)
    assert not sentinel.exists(), f"{name}: the payload ran code"


@pytest.mark.parametrize("forged", ["plain-value", "code"])
def test_encrypted_saver_refuses_unencrypted_payloads(
    moto_endpoint: str, names: dict[str, str], tmp_path: Path, forged: str
) -> None:
    saver = DynamoDBSaver(**names, serde=EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 32))
    saver.setup()
    sentinel = tmp_path / "pwned"
    typed = (
        ("msgpack", ormsgpack.packb({"forged": True}))
        if forged == "plain-value"
        else (_hostile_payloads(sentinel, spawning=False)["ext-single-arg os.system"])
    )
    stored = _plant(saver, typed)
    with pytest.raises(CorruptPayloadError):
        saver.get_tuple(stored)
    assert not sentinel.exists()
    saver.close()


def test_encrypted_saver_refuses_tampered_ciphertext(
    moto_endpoint: str, names: dict[str, str], tmp_path: Path
) -> None:
    """A payload that claims to be encrypted but was not made with the key fails authentication."""
    saver = DynamoDBSaver(**names, serde=EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 32))
    saver.setup()
    sentinel = tmp_path / "pwned"
    name, data = _hostile_payloads(sentinel, spawning=False)["ext-single-arg os.system"]
    stored = _plant(saver, (f"{name}+aes", b"\x00" * 32 + data))
    with pytest.raises(CorruptPayloadError, match="channel 'v'"):
        saver.get_tuple(stored)
    # A genuine ciphertext with one byte flipped: refused too.
    good = saver.put(cfg(new_thread()), _ckpt({"v": "secret"}), {}, {"v": "1"})
    thread, csk = _ck(good)
    (item,) = [
        it
        for it in scan_table(saver.table_name)
        if it["SK"]["S"] == csk and it["PK"]["S"] == schema.partition_key(thread)
    ]
    blob = bytearray(item["vals"]["M"]["v"]["B"])
    blob[-1] ^= 1
    _update(saver, thread, csk, "SET vals.v = :v", {":v": {"B": bytes(blob)}})
    with pytest.raises(CorruptPayloadError, match="channel 'v'"):
        saver.get_tuple(good)
    assert not sentinel.exists()
    saver.close()


_STRICT_CHILD = """
import json, sys
from langgraph.checkpoint.dynamodb import DynamoDBSaver
saver = DynamoDBSaver(table_name=sys.argv[1])
tup = saver.get_tuple({"configurable": {"thread_id": sys.argv[2]}})
print(json.dumps(repr(tup.checkpoint["channel_values"]["v"])))
"""


def test_strict_msgpack_environment_protects_the_default_saver(saver: DynamoDBSaver, tmp_path: Path) -> None:
    """``LANGGRAPH_STRICT_MSGPACK=true`` (read at import) makes the default saver refuse constructor payloads."""
    sentinel = tmp_path / "pwned"
    stored = _plant(saver, _hostile_payloads(sentinel, spawning=False)["ext-single-arg os.system"])
    env = {**env_for_subprocess(), "LANGGRAPH_STRICT_MSGPACK": "true"}
    proc = subprocess.run(
        [sys.executable, "-c", _STRICT_CHILD, saver.table_name, stored["configurable"]["thread_id"]],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not sentinel.exists()
    assert "touch" in proc.stdout  # the raw argument came back, nothing was called
