"""No stored or imported byte runs code, through any decoder the package builds.

The gadgets are callables a dependency re-exports under another name, so they
exist wherever this library runs: python-dateutil (which botocore needs)
re-exports ``subprocess.check_call`` as ``dateutil.zoneinfo.rebuild.check_call``,
pycparser re-exports ``subprocess.check_output``. A rule that only refuses
standard-library names lets them through; a permissive serializer calls them.

Each entry point is attacked as the threat model grants it:

* an application configured as LangGraph's docs show encryption
  (``EncryptedSerializer.from_pycryptodome_aes()``, whose inner serializer is
  LangGraph's permissive one) reads a planted value, and imports a hostile
  export file (which it validates before any write);
* the CLI's ``--encrypted show``/``history`` read a planted encrypted value;
  ``--encrypted import`` and plain ``import`` take a hostile export file,
  in a fresh process where the gadget's module is installed but not imported;
* a scan forges a record for every re-exported callable of every loaded module
  and feeds it to the savers' serializer and to the CLI's portable one.

Each would touch a sentinel file if it ran; each failed on the code before this
module was added (the encrypted entry points ran the gadget, the portable
serializer stored it).
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import inspect
import io
import subprocess
import sys
import types
import uuid
from pathlib import Path
from typing import Any

import boto3
import ormsgpack
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.serde._msgpack import SAFE_MSGPACK_TYPES
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, CorruptPayloadError, DynamoDBSaver, cli, schema
from langgraph.checkpoint.dynamodb._parts import binding
from langgraph.checkpoint.dynamodb.codec import PayloadCodec
from langgraph.checkpoint.dynamodb.serde import (
    RefusedTypeError,
    StateTypesSerializer,
    UnsafeSerializerError,
    is_permissive,
    strict_serde,
)
from langgraph.checkpoint.dynamodb.tools.transfer import (
    ExportError,
    PortableSerializer,
    export_thread,
    import_thread,
)
from tests.support.harness import cfg, env_for_subprocess, new_thread, shared_store

KEY = "k" * 32


@pytest.fixture(scope="module")
def store(moto_endpoint: str) -> dict[str, str]:
    return shared_store("rce")


@pytest.fixture
def aes_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("LANGGRAPH_AES_KEY", KEY)
    return KEY


def _ext(code: int, record: Any) -> bytes:
    return ormsgpack.packb({"x": ormsgpack.Ext(code, ormsgpack.packb(record))})


def gadgets(sentinel: Path) -> dict[str, bytes]:
    """msgpack payloads that touch ``sentinel`` if a reader calls what they name."""
    argv = ["touch", str(sentinel)]
    return {
        "dateutil check_call ext1": _ext(1, ("dateutil.zoneinfo.rebuild", "check_call", [argv])),
        "dateutil check_call ext2": _ext(2, ("dateutil.zoneinfo.rebuild", "check_call", {"args": argv})),
        "dateutil check_call ext5": _ext(
            5, ("dateutil.zoneinfo.rebuild", "check_call", {"args": argv}, "model_validate_json")
        ),
        "pycparser check_output ext1": _ext(1, ("pycparser", "check_output", [argv])),
        "subprocess check_call ext4": _ext(4, ("subprocess", "check_call", {"args": argv})),
    }


_NAMES = sorted(gadgets(Path("x")))


def docs_serde() -> EncryptedSerializer:
    """What docs/langgraph-server.md used to show: no inner ``serde=``, so LangGraph's permissive one."""
    return EncryptedSerializer.from_pycryptodome_aes(key=KEY.encode())


def _plant(
    store: dict[str, str], thread: str, typed: tuple[str, bytes], key: str | None = KEY
) -> dict[str, Any]:
    """A checkpoint whose value ``v`` is ``typed`` (encrypted with ``key``), rewritten with a raw write."""
    serde = (
        StateTypesSerializer()
        if key is None
        else EncryptedSerializer.from_pycryptodome_aes(serde=StateTypesSerializer(), key=key.encode())
    )
    saver = DynamoDBSaver(table_name=store["table_name"], serde=serde)
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"v": 1}
    cp["channel_versions"] = {"v": "1"}
    stored = saver.put(cfg(thread), cp, {}, {"v": "1"})
    saver.close()
    if key is not None:
        # Sealed where it is read (thread, channel v at version 1), as its
        # writer would: the decoder's rule is what is under test, not the seal.
        assert isinstance(serde, EncryptedSerializer)
        place = binding.value_place("", "v", "1")
        typed = binding.seal_serialized(serde, typed, binding.thread_digest("", thread), place)
    c = stored["configurable"]
    boto3.client("dynamodb").update_item(
        TableName=store["table_name"],
        Key={
            "PK": {"S": schema.partition_key(thread)},
            "SK": {"S": schema.checkpoint_sk(c["checkpoint_ns"], c["checkpoint_id"])},
        },
        UpdateExpression="SET vals.v = :v",
        ExpressionAttributeValues={":v": {"B": PayloadCodec("none").pack(typed)}},
    )
    return stored


def _run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _hostile_file(store: dict[str, str], payload: bytes) -> str:
    """An export file of a one-checkpoint thread whose value ``v`` is ``payload`` (plaintext msgpack)."""
    thread = new_thread()
    saver = DynamoDBSaver(table_name=store["table_name"])
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"v": "MARK"}
    cp["channel_versions"] = {"v": "1"}
    saver.put(cfg(thread), cp, {}, {"v": "1"})
    saver.serde = PortableSerializer()
    buf = io.StringIO()
    export_thread(saver, thread, buf)
    saver.close()
    benign = base64.b64encode(ormsgpack.packb("MARK")).decode()
    text = buf.getvalue()
    assert text.count(benign) == 1
    return text.replace(benign, base64.b64encode(payload).decode())


def _partition(store: dict[str, str], thread: str) -> list[dict[str, Any]]:
    return boto3.client("dynamodb").query(
        TableName=store["table_name"],
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": schema.partition_key(thread)}},
    )["Items"]


# ----------------------------------------------------- the application's saver


@pytest.mark.parametrize("name", _NAMES)
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_docs_encrypted_config_reads_no_gadget(
    store: dict[str, str], tmp_path: Path, name: str, kind: str
) -> None:
    sentinel = tmp_path / "pwned"
    thread = new_thread()
    stored = _plant(store, thread, ("msgpack", gadgets(sentinel)[name]))
    if kind == "sync":
        saver = DynamoDBSaver(table_name=store["table_name"], serde=docs_serde())
        assert isinstance(saver.serde, EncryptedSerializer) and isinstance(
            saver.serde.serde, StateTypesSerializer
        )
        with pytest.raises(CorruptPayloadError, match="Refused"):
            saver.get_tuple(stored)
        saver.close()
    else:

        async def main() -> None:
            async with AsyncDynamoDBSaver(table_name=store["table_name"], serde=docs_serde()) as saver:
                with pytest.raises(CorruptPayloadError, match="Refused"):
                    await saver.aget_tuple(stored)

        asyncio.run(main())
    assert not sentinel.exists(), f"{name}: the stored payload ran code"


@pytest.mark.parametrize("name", _NAMES)
def test_import_into_docs_encrypted_config_validates_without_calling(
    store: dict[str, str], tmp_path: Path, name: str
) -> None:
    sentinel = tmp_path / "pwned"
    text = _hostile_file(store, gadgets(sentinel)[name])
    target = new_thread()
    saver = DynamoDBSaver(table_name=store["table_name"], serde=docs_serde())
    try:
        with pytest.raises(ExportError, match="Refused"):
            import_thread(saver, io.StringIO(text), thread_id=target)
    finally:
        saver.close()
    assert not sentinel.exists(), f"{name}: the import ran the file's payload"
    assert _partition(store, target) == []


# ------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("command", ["show", "history"])
@pytest.mark.parametrize("name", _NAMES)
def test_cli_encrypted_views_run_no_gadget(
    store: dict[str, str], aes_key: str, tmp_path: Path, command: str, name: str
) -> None:
    sentinel = tmp_path / "pwned"
    thread = new_thread()
    _plant(store, thread, ("msgpack", gadgets(sentinel)[name]))
    code, out, err = _run_cli("--table", store["table_name"], "--encrypted", command, thread)
    assert not sentinel.exists(), f"--encrypted {command}: the stored payload ran code"
    # It shows the thread (the value as its stored fields, or as undecodable), it does not crash.
    assert code in (0, 1), (code, out, err)
    assert "Traceback" not in err


def test_cli_encrypted_viewer_is_strict_inside_the_cipher(store: dict[str, str], aes_key: str) -> None:
    """``ui`` and every other view use make_saver: its inner serializer imports and calls nothing."""
    from langgraph.checkpoint.dynamodb.cli._commands import make_saver
    from langgraph.checkpoint.dynamodb.cli._parser import build_parser

    args = build_parser().parse_args(["--table", store["table_name"], "--encrypted", "threads"])
    saver = make_saver(args)
    try:
        assert isinstance(saver.serde, EncryptedSerializer)
        assert not is_permissive(saver.serde)
    finally:
        saver.close()


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
def test_cli_import_refuses_a_reexported_gadget_in_a_fresh_process(
    store: dict[str, str], tmp_path: Path, encrypted: bool
) -> None:
    """A fresh CLI has not imported ``dateutil.zoneinfo.rebuild``: the module is installed, so it is refused."""
    sentinel = tmp_path / "pwned"
    target = new_thread()
    for name in ("dateutil check_call ext1", "pycparser check_output ext1"):
        path = tmp_path / "hostile.jsonl"
        path.write_text(_hostile_file(store, gadgets(sentinel)[name]))
        argv = ["--table", store["table_name"], *(["--encrypted"] if encrypted else []), "import", str(path)]
        proc = subprocess.run(
            [sys.executable, "-m", "langgraph.checkpoint.dynamodb", *argv, "--thread", target],
            capture_output=True,
            text=True,
            env={**env_for_subprocess(), "LANGGRAPH_AES_KEY": KEY},
            timeout=120,
            check=False,
        )
        assert proc.returncode != 0, proc.stdout
        # Refused by the rule for installed modules it has not imported, or (pycparser, which
        # the cipher's cffi loads) for loaded ones: a function is never a data class.
        assert (
            f"Refused to revive {name.split()[0]}" in proc.stderr
            or "installed here but not imported" in proc.stderr
        ), proc.stderr
        assert "Traceback" not in proc.stderr
        assert _partition(store, target) == []
    # And the next --encrypted show, had anything been stored, would run nothing either.
    assert not sentinel.exists()


def test_cli_allow_type_keeps_a_named_type_opaque(store: dict[str, str], tmp_path: Path) -> None:
    """``--allow-type`` is the explicit escape for an installed, not imported application type."""
    record = _ext(2, ("dateutil.zoneinfo.rebuild", "check_call", {"args": ["true"]}))
    path = tmp_path / "typed.jsonl"
    path.write_text(_hostile_file(store, record))
    target = new_thread()
    code, _, err = _run_cli(
        "--table",
        store["table_name"],
        "import",
        str(path),
        "--thread",
        target,
        "--allow-type",
        "dateutil.zoneinfo.rebuild:check_call",
    )
    assert code == 0, err  # kept as stored: the portable serializer calls nothing, named or not
    # And what the application's strict reader then does with it: refuse, call nothing.
    saver = DynamoDBSaver(table_name=store["table_name"])
    try:
        with pytest.raises(CorruptPayloadError, match="Refused"):
            saver.get_tuple(cfg(target))
    finally:
        saver.close()
    code, _, err = _run_cli("--table", store["table_name"], "import", str(path), "--allow-type", "nocolon")
    assert code != 0 and "MODULE:NAME" in err


# --------------------------------------------------------------- the serializers


def test_permissive_serializers_are_made_strict_or_refused(store: dict[str, str]) -> None:
    permissive = JsonPlusSerializer(allowed_msgpack_modules=True)
    assert is_permissive(permissive) and is_permissive(docs_serde())
    saver = DynamoDBSaver(table_name=store["table_name"], serde=permissive)
    assert isinstance(saver.serde, StateTypesSerializer)
    saver.close()
    # The named opt-in keeps it as given.
    saver = DynamoDBSaver(table_name=store["table_name"], serde=permissive, allow_unsafe_serde=True)
    assert is_permissive(saver.serde)
    saver.close()
    for unsafe in (JsonPlusSerializer(pickle_fallback=True), JsonPlusSerializer(allowed_json_modules=True)):
        with pytest.raises(UnsafeSerializerError, match="allow_unsafe_serde"):
            DynamoDBSaver(table_name=store["table_name"], serde=unsafe)
        with pytest.raises(UnsafeSerializerError):
            strict_serde(EncryptedSerializer.from_pycryptodome_aes(serde=unsafe, key=KEY.encode()))
    # A strict one, or the user's own kind, is kept.
    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    assert strict_serde(strict) is strict
    portable = PortableSerializer()
    assert strict_serde(portable) is portable  # type: ignore[arg-type]
    # with_allowlist (graph.compile with LANGGRAPH_STRICT_MSGPACK) stays strict.
    saver = DynamoDBSaver(table_name=store["table_name"], serde=docs_serde())
    assert not is_permissive(saver.with_allowlist([("decimal", "Context")]).serde)
    saver.close()


def _reexported_callables() -> list[tuple[str, str]]:
    """``(module, name)`` of every callable a loaded module binds under a module it is not from."""
    for mod in (
        "dateutil.zoneinfo.rebuild",
        "pycparser",
        "botocore.session",
        "boto3",
        "langchain_core.messages",
    ):
        importlib.import_module(mod)
    found: set[tuple[str, str]] = set()
    for module_name, module in list(sys.modules.items()):
        if not isinstance(module, types.ModuleType):
            continue
        for name, obj in list(getattr(module, "__dict__", {}).items()):
            if not callable(obj) or name.startswith("__"):
                continue
            home = getattr(obj, "__module__", None)
            if home == module_name or (module_name, name) in SAFE_MSGPACK_TYPES:
                continue
            if inspect.isclass(obj) and _is_data_class(obj):
                continue
            found.add((module_name, name))
    return sorted(found)


def _is_data_class(obj: type) -> bool:
    from langgraph.checkpoint.dynamodb.serde import data_class_kind

    return data_class_kind(obj) is not None


def test_scan_no_reexported_callable_is_revived(tmp_path: Path) -> None:
    """Every re-exported callable of every loaded module, in every record form: refused, never called."""
    targets = _reexported_callables()
    assert ("dateutil.zoneinfo.rebuild", "check_call") in targets
    assert len(targets) > 1000, len(targets)  # the scan is real, not a handful
    strict, portable = StateTypesSerializer(), PortableSerializer()
    sentinel = str(tmp_path / "never")
    # Arguments that make a mistaken call fail rather than act.
    args = {0: sentinel, 1: [sentinel], 2: {"__scan__": sentinel}, 4: {"__scan__": 1}, 5: {"__scan__": 1}}
    accepted: list[str] = []
    for module, name in targets:
        for code, arg in args.items():
            record = (module, name, arg, "model_validate_json") if code == 5 else (module, name, arg)
            typed = ("msgpack", _ext(code, record))
            try:
                strict.loads_typed(typed)
                accepted.append(f"StateTypesSerializer ext{code} {module}.{name}")
            except RefusedTypeError:
                pass
            try:
                portable.loads_typed(typed)
                accepted.append(f"PortableSerializer ext{code} {module}.{name}")
            except ValueError:
                pass
    assert not accepted, accepted[:20]
    assert not Path(sentinel).exists()


def test_portable_keeps_application_types_it_cannot_see() -> None:
    """A type whose package is not installed here is an application's own: kept opaque, byte for byte."""
    pkg = f"app_{uuid.uuid4().hex[:8]}"
    typed = ("msgpack", _ext(5, (f"{pkg}.models", "Doc", {"title": "t"}, "model_validate_json")))
    portable = PortableSerializer()
    assert portable.dumps_typed(portable.loads_typed(typed)) == typed
    assert f"{pkg}.models" not in sys.modules
