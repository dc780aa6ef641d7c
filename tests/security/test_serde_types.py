"""Stored values may rebuild data classes, and call nothing else.

The attacker can write to the table (or the bucket): it plants, with a raw
``update_item``, checkpoint values crafted to make the reader's serializer import
and call code, in every record form LangGraph's msgpack encoder has (ext 0 to 5)
and as ``lc:1``/``lc:2`` JSON constructors. Each would touch a sentinel file if it
ran. The default serializer (``StateTypesSerializer``) must run none of them,
sync and async, and refuse them loudly: a ``CorruptPayloadError`` naming the type
and how to allowlist it, not a value silently returned in another shape.

Decided and tested here: a payload may rebuild a data class that the reader has
already imported, and that runs the class's own code (a ``__post_init__``, a
pydantic validator) with the stored data, exactly as the application's own code
would; a module the reader has not imported is never imported because a payload
names it (import-time code, ``unittest.__main__``, ``this``). Those who want an
allowlist instead set ``LANGGRAPH_STRICT_MSGPACK=true`` or pass a strict
``serde``; those paths are checked to still work.
"""

from __future__ import annotations

import copy
import json
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

from langgraph.checkpoint.dynamodb import CorruptPayloadError, DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.codec import PayloadCodec
from langgraph.checkpoint.dynamodb.serde import StateTypesSerializer
from tests.security import _serde_gadgets as gadgets
from tests.support.harness import Harness, cfg, env_for_subprocess, new_thread, shared_store

GADGETS = gadgets.__name__


@pytest.fixture(scope="module")
def store(moto_endpoint: str) -> dict[str, str]:
    """One table and bucket for the module (every test uses fresh thread ids)."""
    return shared_store("serde")


@pytest.fixture(params=["sync", "async"])
def reader(request: pytest.FixtureRequest, store: dict[str, str], loop_thread: Any) -> Any:
    """The victim: a saver with the default serializer, sync or async."""
    h = Harness(request.param, store["table_name"], store["bucket_name"], loop_thread)
    yield h
    h.close()


# ------------------------------------------------------------- the attacker


def _ext(code: int, record: Any) -> tuple[str, bytes]:
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(record)))


def _lc(version: int, ident: list[str], **fields: Any) -> tuple[str, bytes]:
    return "json", json.dumps({"lc": version, "type": "constructor", "id": ident, **fields}).encode()


def attacks(s: str) -> dict[str, tuple[str, bytes]]:
    """Payloads that would touch the sentinel ``s`` if the reader ran them."""
    py = f"open({s!r}, 'w').close()"
    return {
        "ext0 os.system": _ext(0, ("os", "system", f"touch {s}")),
        "ext0 builtins.exec": _ext(0, ("builtins", "exec", py)),
        "ext0 builtins.eval": _ext(0, ("builtins", "eval", py)),
        "ext1 subprocess.Popen": _ext(1, ("subprocess", "Popen", [["touch", s]])),
        "ext2 subprocess.run": _ext(2, ("subprocess", "run", {"args": ["touch", s]})),
        "ext3 os.system.__call__": _ext(3, ("os", "system", f"touch {s}", "__call__")),
        "ext3 pathlib.Path.touch": _ext(
            3, ("pathlib", "Path", s, "touch")
        ),  # a safe class, a method that acts
        "ext4 subprocess.Popen": _ext(4, ("subprocess", "Popen", {"args": ["touch", s]})),
        "ext5 subprocess.Popen": _ext(
            5, ("subprocess", "Popen", {"args": ["touch", s]}, "model_validate_json")
        ),
        # A loaded class, not a data class, whose constructor acts (creates the file).
        "ext2 logging.FileHandler": _ext(2, ("logging", "FileHandler", {"filename": s})),
        # A module-level function of a module the reader has imported.
        "ext2 module function": _ext(2, (GADGETS, "touch", {"path": s})),
        "ext5 module function": _ext(5, (GADGETS, "touch", {"path": s}, "model_validate_json")),
        # A loaded dataclass, in a record LangGraph never writes for one (cls(s), cls(*[s])).
        "ext0 dataclass": _ext(0, (GADGETS, "TouchOnInit", s)),
        "ext1 dataclass": _ext(1, (GADGETS, "TouchOnInit", [s])),
        # Nested: an allowed Send carrying a forged record.
        "nested in Send": _ext(
            1,
            (
                "langgraph.types",
                "Send",
                ["node", ormsgpack.Ext(0, ormsgpack.packb(("os", "system", f"touch {s}")))],
            ),
        ),
        "json lc:2 subprocess.run": _lc(2, ["subprocess", "run"], args=[["touch", s]]),
        "json lc:1 subprocess.run": _lc(1, ["subprocess", "run"], kwargs={"args": ["touch", s]}),
        "json lc:2 dataclass": _lc(2, [*GADGETS.split("."), "TouchOnInit"], kwargs={"path": s}),
    }


_NAMES = sorted(attacks("x"))
_EXT_NAMES = [n for n in _NAMES if not n.startswith("json")]


def _id(name: str) -> str:
    return name.replace(" ", "-").replace(":", "")


def _key(thread: str, sk: str) -> dict[str, Any]:
    return {"PK": {"S": schema.partition_key(thread)}, "SK": {"S": sk}}


def plant(h: Harness, typed: tuple[str, bytes]) -> dict[str, Any]:
    """A checkpoint whose value ``v`` is ``typed``, rewritten in place with a raw boto3 write."""
    thread = new_thread()
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"v": 1}
    cp["channel_versions"] = {"v": "1"}
    stored: dict[str, Any] = h.call("put", cfg(thread), cp, {}, {"v": "1"})
    c = stored["configurable"]
    boto3.client("dynamodb").update_item(
        TableName=h.table_name,
        Key=_key(thread, schema.checkpoint_sk(c["checkpoint_ns"], c["checkpoint_id"])),
        UpdateExpression="SET vals.v = :v",
        ExpressionAttributeValues={":v": {"B": PayloadCodec("none").pack(typed)}},
    )
    return stored


def read(h: Harness, stored: dict[str, Any]) -> Any:
    """The planted value as the reader gets it, or the error it raised."""
    try:
        return h.call("get_tuple", stored).checkpoint["channel_values"]["v"]
    except CorruptPayloadError as exc:
        return exc


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("name", _NAMES, ids=_id)
def test_code_payloads_run_nothing(reader: Harness, tmp_path: Path, name: str) -> None:
    sentinel = tmp_path / "pwned"
    value = read(reader, plant(reader, attacks(str(sentinel))[name]))
    assert not sentinel.exists(), f"{name}: the payload ran code"
    assert not isinstance(value, (subprocess.Popen, subprocess.CompletedProcess, gadgets.TouchOnInit))


@pytest.mark.parametrize("name", _EXT_NAMES, ids=_id)
def test_refused_payloads_fail_loudly_with_the_fix(reader: Harness, tmp_path: Path, name: str) -> None:
    """Never the raw arguments handed back as if they were the value: an error naming what and how."""
    sentinel = tmp_path / "pwned"
    value = read(reader, plant(reader, attacks(str(sentinel))[name]))
    assert isinstance(value, CorruptPayloadError), f"{name}: returned {value!r} instead of refusing"
    message = str(value)
    assert "channel 'v'" in message
    if "pathlib" in name or "os.system.__call__" in name:
        assert "Refused to call" in message
    else:
        assert "Refused to revive" in message and "with_allowlist" in message


def test_a_module_not_imported_is_never_imported(reader: Harness) -> None:
    """Naming a module runs its import-time code: ``this`` prints, ``unittest.__main__`` runs tests and exits."""
    for module in ("this", "antigravity", "unittest.__main__"):
        assert module not in sys.modules
        value = read(reader, plant(reader, _ext(5, (module, "X", {}, "model_validate_json"))))
        assert module not in sys.modules, f"the payload imported {module}"
        assert isinstance(value, CorruptPayloadError)
        assert "is not imported in this process" in str(value)


_CHILD = """
import json, os, sys
from langgraph.checkpoint.dynamodb import DynamoDBSaver
saver = DynamoDBSaver(table_name=sys.argv[1])
out = {"serde": type(saver.serde).__name__, "errors": []}
for thread in sys.argv[2:]:
    try:
        saver.get_tuple({"configurable": {"thread_id": thread}})
        out["errors"].append(None)
    except Exception as exc:
        out["errors"].append(str(exc))
out["imported"] = [m for m in ("tests.security._serde_gadgets", "this", "unittest.__main__") if m in sys.modules]
print(json.dumps(out))
"""


@pytest.mark.parametrize("strict_env", [False, True], ids=["default", "LANGGRAPH_STRICT_MSGPACK"])
def test_a_fresh_reader_imports_nothing_a_payload_names(
    store: dict[str, str], loop_thread: Any, tmp_path: Path, strict_env: bool
) -> None:
    """A reader that never imported the gadget module: a valid dataclass record does not import it."""
    h = Harness("sync", store["table_name"], store["bucket_name"], loop_thread)
    sentinel, marker = tmp_path / "pwned", tmp_path / "imported"
    planted = [
        plant(
            h, _ext(2, (GADGETS, "TouchOnInit", {"path": str(sentinel)}))
        ),  # as LangGraph writes a dataclass
        plant(h, _ext(2, ("this", "X", {}))),
        plant(h, _ext(2, ("unittest.__main__", "main", {}))),
    ]
    h.close()
    env = {**env_for_subprocess(), "SERDE_GADGETS_IMPORT_MARKER": str(marker)}
    env["LANGGRAPH_STRICT_MSGPACK"] = "true" if strict_env else "false"
    threads = [p["configurable"]["thread_id"] for p in planted]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, store["table_name"], *threads],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["imported"] == []
    assert not marker.exists(), "the payload imported a module and ran its import-time code"
    assert not sentinel.exists()
    assert out["serde"] == ("JsonPlusSerializer" if strict_env else "StateTypesSerializer")


def test_a_loaded_dataclass_is_rebuilt_with_its_own_code(reader: Harness, tmp_path: Path) -> None:
    """The documented residual: a class the reader has imported is rebuilt by its own constructor.

    ``TouchOnInit.__post_init__`` acts on its field, so a planted record makes it
    act with the attacker's data, as InMemorySaver, SQLite and Postgres would.
    A strict allowlist (LANGGRAPH_STRICT_MSGPACK, or a strict ``serde``) does not.
    """
    sentinel = tmp_path / "post-init-ran"
    record = _ext(2, (GADGETS, "TouchOnInit", {"path": str(sentinel)}))
    value = read(reader, plant(reader, record))
    assert value == gadgets.TouchOnInit(str(sentinel))
    assert sentinel.exists()
    sentinel.unlink()
    strict = reader.make_saver(serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    try:
        value = reader.call("get_tuple", plant(reader, record), saver=strict).checkpoint["channel_values"][
            "v"
        ]
    finally:
        if reader.is_async:
            reader.loop.run(strict.aclose())
        else:
            strict.close()
    assert value == {"path": str(sentinel)}
    assert not sentinel.exists()


# ------------------------------------------ stricter configurations still work


def _plain_record() -> tuple[str, bytes]:
    return _ext(2, (GADGETS, "Plain", {"a": 1}))


def test_explicit_allowlist_revives_what_the_rule_refuses(reader: Harness) -> None:
    stored = plant(reader, _plain_record())
    refused = read(reader, stored)
    assert isinstance(refused, CorruptPayloadError) and f"({GADGETS!r}, 'Plain')" in str(refused)
    # The fix the message gives: with_allowlist, a shallow copy with a derived serializer.
    allowed = reader.saver.with_allowlist([(GADGETS, "Plain")])
    assert allowed is not reader.saver and isinstance(allowed.serde, StateTypesSerializer)
    assert reader.call("get_tuple", stored, saver=allowed).checkpoint["channel_values"]["v"] == gadgets.Plain(
        a=1
    )
    assert isinstance(read(reader, stored), CorruptPayloadError)  # the original is unchanged
    # copy.copy keeps the serializer and its rule.
    clone = copy.copy(allowed)
    assert reader.call("get_tuple", stored, saver=clone).checkpoint["channel_values"]["v"] == gadgets.Plain(
        a=1
    )
    assert allowed.with_allowlist([(GADGETS, "Plain")]) is allowed  # nothing new: same saver
    # Allowlisting one name lets nothing else through.
    with pytest.raises(CorruptPayloadError, match=r"os\.system"):
        reader.call("get_tuple", plant(reader, _ext(0, ("os", "system", "true"))), saver=clone)


def test_encrypted_saver_keeps_the_rule_through_with_allowlist(store: dict[str, str], tmp_path: Path) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(serde=StateTypesSerializer(), key=b"e" * 32)
    saver = DynamoDBSaver(**store, serde=serde)
    try:
        allowed = saver.with_allowlist([(GADGETS, "Plain")])
        assert isinstance(allowed.serde, EncryptedSerializer)
        inner = allowed.serde.serde
        assert isinstance(inner, StateTypesSerializer) and (GADGETS, "Plain") in inner.allowlist
        thread = new_thread()
        cp = empty_checkpoint()
        cp["id"] = str(uuid6())
        cp["channel_values"] = {"v": gadgets.Plain(a=1), "m": gadgets.Mood.CALM}
        cp["channel_versions"] = {"v": "1", "m": "1"}
        stored = allowed.put(cfg(thread), cp, {}, {"v": "1", "m": "1"})
        values = allowed.get_tuple(stored).checkpoint["channel_values"]  # type: ignore[union-attr]
        assert values == {"v": gadgets.Plain(a=1), "m": gadgets.Mood.CALM}
        with pytest.raises(CorruptPayloadError, match="Plain"):
            saver.get_tuple(stored)  # without the allowlist entry: refused, loudly
        # An unencrypted forgery is refused before the serializer sees it.
        sentinel = tmp_path / "pwned"
        h_stored = stored["configurable"]
        boto3.client("dynamodb").update_item(
            TableName=store["table_name"],
            Key=_key(thread, schema.checkpoint_sk(h_stored["checkpoint_ns"], h_stored["checkpoint_id"])),
            UpdateExpression="SET vals.v = :v",
            ExpressionAttributeValues={
                ":v": {"B": PayloadCodec("none").pack(attacks(str(sentinel))["ext0 os.system"])}
            },
        )
        with pytest.raises(CorruptPayloadError, match="not encrypted"):
            allowed.get_tuple(stored)
        assert not sentinel.exists()
    finally:
        saver.close()


_STRICT_COMPILE_CHILD = """
import json, sys
from langgraph.checkpoint.dynamodb import DynamoDBSaver
from tests.e2e.state_types_app import build
saver = DynamoDBSaver(table_name=sys.argv[1])
graph = build().compile(checkpointer=saver)
serde = graph.checkpointer.serde
print(json.dumps({"serde": type(serde).__name__,
                  "profile_allowed": ["tests.e2e.state_types_app", "Profile"] in [list(k) for k in serde._allowed_msgpack_modules or ()]}))
"""


def test_strict_msgpack_environment_keeps_langgraphs_allowlist(store: dict[str, str]) -> None:
    """With LANGGRAPH_STRICT_MSGPACK=true the default is LangGraph's strict serializer, and compile allowlists the graph's types."""
    env = {**env_for_subprocess(), "LANGGRAPH_STRICT_MSGPACK": "true"}
    proc = subprocess.run(
        [sys.executable, "-c", _STRICT_COMPILE_CHILD, store["table_name"]],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "serde": "JsonPlusSerializer",
        "profile_allowed": True,
    }
