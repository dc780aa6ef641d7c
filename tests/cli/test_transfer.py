"""``export`` / ``import`` of a thread: exact round trips, and files that must be refused.

"Exact" is what a reader sees: ``list`` and ``get_tuple`` of the imported
thread equal the source's (checkpoint ids, parents, metadata, channel values
and versions, pending writes with their order) across S3 on/off and
encryption on/off on either side, for a real graph holding pydantic models,
dataclasses and enums, interrupts, errors, ``Send`` fan-out, a subgraph and a
value over 64 KB, and for a DeltaChannel thread a resumed graph continues
identically. A hostile file never writes a partial thread and never ends in
a traceback.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import http
import io
import json
import operator
import os
import random
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import boto3
import ormsgpack
import pydantic
import pytest
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli, schema
from langgraph.checkpoint.dynamodb.serde import default_serde
from langgraph.checkpoint.dynamodb.tools import _export_file
from langgraph.checkpoint.dynamodb.tools._export_file import put_writes_order
from langgraph.checkpoint.dynamodb.tools.transfer import (
    FORMAT,
    ExportError,
    ExportFileError,
    OpaqueExt,
    PortableSerializer,
    TargetExistsError,
    export_thread,
    import_marker,
    import_thread,
)
from tests.support.graphs import chat_graph

pytestmark = pytest.mark.usefixtures("moto_endpoint")

SRC = Path(__file__).resolve().parents[2] / "src"
KEY_A = "a" * 32
KEY_B = "b" * 32


# ------------------------------------------------------------------ a graph


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Note:
    text: str
    n: int


class Doc(pydantic.BaseModel):
    title: str
    tags: list[str]
    color: Color


class State(TypedDict, total=False):
    request: str
    answer: str
    doc: Doc
    notes: Annotated[list[Note], operator.add]
    blob: str
    done: Annotated[list[int], operator.add]
    summary: str


FLAKY = {"fail": True}


def _ask(state: State) -> dict[str, Any]:
    return {"answer": interrupt({"question": "Which color?"})}


def _big(state: State) -> dict[str, Any]:
    rng = random.Random(7)  # incompressible enough to stay over 64 KiB packed
    blob = "".join(rng.choice("0123456789abcdef") for _ in range(200_000))
    return {"blob": blob, "doc": Doc(title=state["request"], tags=["a", "b"], color=Color(state["answer"]))}


def _flaky(state: State) -> dict[str, Any]:
    if FLAKY["fail"]:
        FLAKY["fail"] = False
        raise RuntimeError("flaky failed once")
    return {"notes": [Note("flaky ok", 1)]}


def _fan_out(state: State) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(3)]


def _work(arg: dict[str, int]) -> dict[str, Any]:
    return {"done": [arg["i"]], "notes": [Note(f"work {arg['i']}", arg["i"])]}


def _subgraph() -> Any:
    class Sub(TypedDict, total=False):
        done: list[int]
        summary: str

    g = StateGraph(Sub)
    g.add_node("count", lambda s: {"summary": f"{len(s.get('done', []))} parts"})
    g.add_edge(START, "count")
    g.add_edge("count", END)
    return g.compile()


def build_graph(saver: Any) -> Any:
    g = StateGraph(State)
    g.add_node("ask", _ask)
    g.add_node("big", _big)
    g.add_node("flaky", _flaky)
    g.add_node("work", _work)
    g.add_node("collect", _subgraph())
    g.add_edge(START, "ask")
    g.add_edge("ask", "big")
    g.add_edge("big", "flaky")
    g.add_conditional_edges("flaky", _fan_out, ["work"])
    g.add_edge("work", "collect")
    g.add_edge("collect", END)
    return g.compile(checkpointer=saver)


def run_thread(saver: Any, thread: str) -> None:
    """An interrupt, a resume, a failed step (an error write) retried, Send fan-out, a subgraph."""
    graph = build_graph(saver)
    config = {"configurable": {"thread_id": thread}}
    graph.invoke({"request": "report"}, config, durability="sync")
    FLAKY["fail"] = True
    with pytest.raises(RuntimeError, match="flaky failed once"):
        graph.invoke(Command(resume="blue"), config, durability="sync")
    graph.invoke(None, config, durability="sync")
    assert graph.get_state(config).values["summary"] == "3 parts"


# ------------------------------------------------------------------ helpers


def make_saver(table: str, bucket: str | None, key: str | None = None, **kw: Any) -> DynamoDBSaver:
    """A saver as an application has it: the default serializer, encrypted with ``key`` if given."""
    serde = default_serde()
    if key:
        serde = EncryptedSerializer.from_pycryptodome_aes(serde=serde, key=key.encode())
    saver = DynamoDBSaver(table_name=table, bucket_name=bucket, serde=serde, **kw)
    saver.setup()
    return saver


def fresh(prefix: str = "x") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def state_of(saver: Any, thread: str) -> list[tuple[Any, ...]]:
    """Everything a reader sees of a thread (the thread id itself aside), newest first."""
    out = []
    for t in saver.list({"configurable": {"thread_id": thread}}):
        conf = t.config["configurable"]
        parent = (t.parent_config or {}).get("configurable", {})
        assert not parent or parent["thread_id"] == thread
        out.append(
            (
                conf["checkpoint_ns"],
                conf["checkpoint_id"],
                parent.get("checkpoint_id"),
                t.checkpoint,
                t.metadata,
                t.pending_writes,
            )
        )
    namespaces = {row[0] for row in out}
    for ns in sorted(namespaces):
        latest = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ns}})
        out.append(("latest", ns, latest.checkpoint, latest.metadata, latest.pending_writes))
    return out


def assert_same(src: Any, src_thread: str, dst: Any, dst_thread: str) -> None:
    a, b = state_of(src, src_thread), state_of(dst, dst_thread)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x == y


def partition(table: str, thread: str, tenant: str = "") -> list[dict[str, Any]]:
    resp = boto3.client("dynamodb").query(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": schema.partition_key(thread, tenant)}},
        ConsistentRead=True,
    )
    return resp["Items"]


def run(*argv: str, stdin: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=stdin or io.StringIO(), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def source(moto_endpoint: str) -> Iterator[dict[str, Any]]:
    """One graph thread in a plain store with a bucket, one in an encrypted store with a bucket."""
    plain = make_saver(fresh("src"), fresh("src"))
    enc = make_saver(fresh("srce"), fresh("srce"), KEY_A)
    threads = {"plain": fresh("t"), "encrypted": fresh("t")}
    run_thread(plain, threads["plain"])
    run_thread(enc, threads["encrypted"])
    yield {"plain": plain, "encrypted": enc, "threads": threads}
    plain.close()
    enc.close()


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize(
    ("src_kind", "dst_bucket", "dst_key"),
    [
        ("plain", False, KEY_B),  # into an encrypted store without a bucket
        ("encrypted", True, None),  # out of encryption, into a plain store with a bucket
        ("encrypted", True, KEY_B),  # re-keyed
    ],
)
def test_library_round_trip_is_exact(
    source: dict[str, Any], src_kind: str, dst_bucket: bool, dst_key: str | None
) -> None:
    src, thread = source[src_kind], source["threads"][src_kind]
    buf = io.StringIO()
    summary = export_thread(src, thread, buf)
    assert summary["checkpoints"] == len(list(src.list({"configurable": {"thread_id": thread}})))
    assert summary["namespaces"] > 1 and summary["writes"] > summary["checkpoints"] / 2
    text = buf.getvalue()
    assert "+aes" not in text  # plaintext: no ciphertext in the file
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["format"] == FORMAT and lines[-1]["kind"] == "end"
    # A value unchanged since the parent is in the file once: the 200 KB blob is
    # written by the checkpoint that introduced it, later ones name their parent.
    checkpoints = [r for r in lines if r["kind"] == "checkpoint"]
    assert sum("blob" in r["channel_values"] for r in checkpoints) == 1
    assert sum("blob" in r["same_as_parent"] for r in checkpoints) >= 3
    # Every special write kind this graph makes is carried with its fixed index.
    idx = {(w["channel"], w["idx"]) for r in lines if r["kind"] == "writes" for w in r["writes"]}
    assert ("__error__", WRITES_IDX_MAP["__error__"]) in idx and ("__interrupt__", -3) in idx

    with make_saver(fresh("dst"), fresh("dst") if dst_bucket else None, dst_key) as dst:
        buf.seek(0)
        result = import_thread(dst, buf)
        assert result["thread_id"] == thread and result["checkpoints"] == summary["checkpoints"]
        assert_same(src, thread, dst, thread)
        # The application's types came back as themselves, not as dicts.
        latest = dst.get_tuple({"configurable": {"thread_id": thread}}).checkpoint["channel_values"]
        assert isinstance(latest["doc"], Doc) and latest["doc"].color is Color.BLUE
        assert all(isinstance(n, Note) for n in latest["notes"])
        # A graph resumed on the copy sees the same state and history as on the source.
        g_src, g_dst = build_graph(src), build_graph(dst)
        conf = {"configurable": {"thread_id": thread}}
        assert [s.values for s in g_dst.get_state_history(conf)] == [
            s.values for s in g_src.get_state_history(conf)
        ]
        if dst_bucket:  # the 200 KB value went to the target's own bucket
            keys = [o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=dst.bucket_name)["Contents"]]
            assert keys and all(k.startswith(dst.s3_thread_prefix(thread)) for k in keys)


def test_same_table_under_a_new_id_is_independent(source: dict[str, Any]) -> None:
    src, thread = source["plain"], source["threads"]["plain"]
    buf = io.StringIO()
    export_thread(src, thread, buf)
    other = fresh("t")
    buf.seek(0)
    assert import_thread(src, buf, thread_id=other)["thread_id"] == other
    assert_same(src, thread, src, other)
    # The copy owns its S3 objects: deleting it leaves the source whole.
    before = state_of(src, thread)
    src.delete_thread(other)
    assert state_of(src, thread) == before and list(src.list({"configurable": {"thread_id": other}})) == []
    # Importing again onto the source's own id is refused, nothing touched.
    buf.seek(0)
    with pytest.raises(TargetExistsError, match="already has checkpoints"):
        import_thread(src, buf)
    assert state_of(src, thread) == before


def test_an_import_needs_no_action_the_savers_grant_lacks(source: dict[str, Any]) -> None:
    """The grants have no DeleteItem (the savers delete in batches): neither may the import, marker included."""
    src, thread = source["plain"], source["threads"]["plain"]
    buf = io.StringIO()
    export_thread(src, thread, buf)
    buf.seek(0)
    sent: list[str] = []

    def record(model: Any, **_: Any) -> None:
        sent.append(model.name)
        if model.name == "DeleteItem":
            raise AssertionError("DeleteItem is not granted to the savers' roles")

    client = src.clients["dynamodb"]
    client.meta.events.register("before-call.dynamodb.*", record)
    try:
        other = fresh("t")
        assert import_thread(src, buf, thread_id=other)["thread_id"] == other
    finally:
        client.meta.events.unregister("before-call.dynamodb.*", record)
    assert "BatchWriteItem" in sent and "DeleteItem" not in sent
    assert import_marker(src, other) is None


def test_tenant_to_tenant(moto_endpoint: str) -> None:
    table, bucket = fresh("ten"), fresh("ten")
    with (
        make_saver(table, bucket, tenant_prefix="acme") as acme,
        make_saver(table, bucket, tenant_prefix="beta") as beta,
    ):
        thread = fresh("t")
        run_thread(acme, thread)
        buf = io.StringIO()
        export_thread(acme, thread, buf)
        buf.seek(0)
        import_thread(beta, buf)
        assert_same(acme, thread, beta, thread)
        items = partition(table, thread, "beta")
        assert items and len(items) == len(partition(table, thread, "acme"))


def test_delta_channel_thread_resumes_identically(moto_endpoint: str) -> None:
    """DeltaChannel values live in the ancestors' writes: the import must rebuild the same chains."""
    src = make_saver(fresh("dsrc"), fresh("dsrc"), KEY_A, s3_threshold=1024)
    dst = make_saver(fresh("ddst"), None)
    try:
        thread = fresh("t")
        graph = chat_graph(delta=True, subgraph=True)
        g_src, g_dst = graph.compile(checkpointer=src), graph.compile(checkpointer=dst)
        conf = {"configurable": {"thread_id": thread}}
        for i in range(6):  # snapshots every 3 steps: chains cross several
            g_src.invoke({"messages": [f"user {i}"]}, conf)
        buf = io.StringIO()
        export_thread(src, thread, buf)
        buf.seek(0)
        import_thread(dst, buf)
        assert_same(src, thread, dst, thread)
        history = [(s.values, s.next) for s in g_src.get_state_history(conf)]
        assert [(s.values, s.next) for s in g_dst.get_state_history(conf)] == history
        assert len(history[0][0]["messages"]) == 12
        # The same checkpoints need their ancestors' writes (what prune keeps for delta chains).
        needs = {
            it["SK"]["S"]: it[schema.ATTR.DELTA_NEEDS]["SS"]
            for it in partition(src.table_name, thread)
            if schema.ATTR.DELTA_NEEDS in it
        }
        assert needs and needs == {
            it["SK"]["S"]: it[schema.ATTR.DELTA_NEEDS]["SS"]
            for it in partition(dst.table_name, thread)
            if schema.ATTR.DELTA_NEEDS in it
        }
        # Both continue alike.
        for g in (g_src, g_dst):
            g.invoke({"messages": ["user 6"]}, conf)
        assert g_dst.get_state(conf).values == g_src.get_state(conf).values
        # And a delta-safe prune on the copy keeps its latest state.
        dst.prune([thread], keep_last=2)
        assert g_dst.get_state(conf).values == g_src.get_state(conf).values
    finally:
        src.close()
        dst.close()


# ----------------------------------------------------------------------- CLI


def test_cli_moves_application_types_without_the_application(source: dict[str, Any], tmp_path: Path) -> None:
    """The console tool in its own process, with none of this module's types importable."""
    src, thread = source["encrypted"], source["threads"]["encrypted"]
    out = tmp_path / "thread.jsonl"
    env = {**os.environ, "PYTHONPATH": str(SRC), "LANGGRAPH_AES_KEY": KEY_A}
    table, bucket = fresh("cli"), fresh("cli")
    make_saver(table, bucket).close()

    def tool(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "langgraph.checkpoint.dynamodb", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,  # not the checkout: `tests` is not importable
            timeout=120,
        )

    done = tool(
        "--table",
        src.table_name,
        "--bucket",
        src.bucket_name,
        "--encrypted",
        "export",
        thread,
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "plaintext" in done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # the state in plaintext: owner only
    done = tool("--table", table, "--bucket", bucket, "import", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["thread_id"] == thread
    with make_saver(table, bucket) as dst:
        assert_same(src, thread, dst, thread)
        assert isinstance(
            dst.get_tuple({"configurable": {"thread_id": thread}}).checkpoint["channel_values"]["doc"], Doc
        )


def test_cli_round_trip_in_process_through_stdin_and_stdout(source: dict[str, Any]) -> None:
    src, thread = source["plain"], source["threads"]["plain"]
    code, exported, err = run("--table", src.table_name, "--bucket", src.bucket_name, "export", thread)
    assert code == 0, err
    assert exported.splitlines()[0].startswith('{"kind":"header"') and "plaintext" in err

    class Pipe(io.StringIO):
        def seekable(self) -> bool:  # as stdin from a pipe: read once, spooled
            return False

    new = fresh("t")
    code, out, err = run(
        "--table",
        src.table_name,
        "--bucket",
        src.bucket_name,
        "import",
        "-",
        "--thread",
        new,
        stdin=Pipe(exported),
    )
    assert code == 0, err
    assert f"into thread {new!r}" in out
    assert_same(src, thread, src, new)
    # Again onto the same id: refused with the CLI's "refused" exit code.
    code, _, err = run(
        "--table", src.table_name, "import", "-", "--thread", new, "--json", stdin=Pipe(exported)
    )
    assert code == cli.EXIT_REFUSED and json.loads(err)["error"] == "target_exists"


def test_cli_export_errors(source: dict[str, Any], tmp_path: Path) -> None:
    src = source["plain"]
    code, _, err = run("--table", src.table_name, "export", "no-such-thread", "--json")
    assert code == cli.EXIT_NOT_FOUND and json.loads(err)["error"] == "thread_not_found"
    code, _, err = run(
        "--table", src.table_name, "export", source["threads"]["plain"], "-o", str(tmp_path / "nope" / "f")
    )
    assert code == cli.EXIT_USAGE and "cannot write" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "nope"] or not any(tmp_path.iterdir())


# ------------------------------------------------------------- hostile files


def _export_text(source: dict[str, Any]) -> list[dict[str, Any]]:
    """The plain thread's export, as fresh records (exported once per module)."""
    if "export" not in source:
        buf = io.StringIO()
        export_thread(source["plain"], source["threads"]["plain"], buf)
        source["export"] = buf.getvalue()
    return [json.loads(line) for line in source["export"].splitlines()]


def _lines(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _first(records: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(r for r in records if r["kind"] == kind)


def _typed(type_: str, data: bytes) -> dict[str, str]:
    return {"type": type_, "b64": base64.b64encode(data).decode()}


def _child_first(r: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cps = [i for i, x in enumerate(r) if x["kind"] == "checkpoint" and x["parent_checkpoint_id"]]
    child = r[cps[0]]
    parent = next(
        i
        for i, x in enumerate(r)
        if x.get("checkpoint_id") == child["parent_checkpoint_id"] and x["kind"] == "checkpoint"
    )
    out = [x for x in r if x is not child]
    out.insert(parent, child)
    return out


def _mutate(
    key: str, value: Any, kind: str = "checkpoint"
) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def apply(r: list[dict[str, Any]]) -> list[dict[str, Any]]:
        _first(r, kind)[key] = value
        return r

    return apply


def _set_value(payload: dict[str, str]) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    def apply(r: list[dict[str, Any]]) -> list[dict[str, Any]]:
        cp = next(x for x in r if x["kind"] == "checkpoint" and x["channel_values"])
        cp["channel_values"][next(iter(cp["channel_values"]))] = payload
        return r

    return apply


def _ext_calling(module: str, name: str, arg: Any) -> bytes:
    """A LangGraph ext record asking a reader to call ``module.name(arg)``."""
    return ormsgpack.packb({"v": ormsgpack.Ext(0, ormsgpack.packb((module, name, arg)))})


HOSTILE: dict[str, tuple[Callable[[list[dict[str, Any]]], Any], str]] = {
    "empty": (lambda r: "", "empty file"),
    "not json": (lambda r: _lines(r)[:40] + "}{\n" + _lines(r)[40:], "not JSON"),
    "not an object": (lambda r: "[]\n", "not a JSON object"),
    "other format": (
        lambda r: _lines([{**r[0], "format": "langgraph-dynamodb-export/9"}, *r[1:]]),
        "not a langgraph-dynamodb-export/1 file",
    ),
    "truncated": (lambda r: _lines(r[:-1]), "truncated"),
    "end count": (lambda r: _lines([*r[:-1], {**r[-1], "checkpoints": 1}]), "the end record counts"),
    "after end": (lambda r: _lines([*r, r[1]]), "after the end record"),
    "pickle": (_set_value(_typed("pickle", b"cos\nsystem\n(S'true'\ntR.")), "not portable"),
    "encrypted": (_set_value(_typed("msgpack+aes", b"x" * 40)), "not portable"),
    "bad base64": (_set_value({"type": "msgpack", "b64": "!!!"}), "invalid base64"),
    "bad msgpack": (_set_value(_typed("msgpack", b"\xc1\xc1")), "cannot decode"),
    "payload shape": (_set_value({"type": "msgpack", "b64": "", "x": 1}), "a payload must be"),
    "os.system": (
        _set_value(_typed("msgpack", _ext_calling("os", "system", "touch /tmp/pwned"))),
        "cannot decode",
    ),
    "child first": (_child_first, "comes after a child of it"),
    "duplicate": (lambda r: [r[0], r[1], r[1], *r[2:]], "appears twice"),
    "writes first": (
        lambda r: [r[0], _first(r, "writes"), *[x for x in r[1:] if x is not _first(r, "writes")]],
        "not before them",
    ),
    "id mismatch": (_mutate("checkpoint_id", "other-id"), "not a checkpoint with this id"),
    "unversioned value": (lambda r: _first_with_values(r), "has a value but no version"),
    "bad idx": (lambda r: _bad_idx(r), "cannot come from put_writes"),
    "number as id": (_mutate("checkpoint_id", 12), "'checkpoint_id' is missing or not a str"),
    "bool as idx": (lambda r: _bool_idx(r), "'idx' is missing or not a int"),
    "deep json": (lambda r: _lines(r[:1]) + "[" * 100_000 + "]" * 100_000 + "\n", "not JSON"),
    "namespace too long": (_mutate("checkpoint_ns", "n" * 16_385), "ids of up to 16384 bytes"),
    "tombstone id": (_mutate("checkpoint_id", "\U0010ffffx"), "must not start with U+10FFFF"),
    "lends nothing": (
        lambda r: _same_as_parent(r, "no-such-channel"),
        "is not the value of the same version",
    ),
    "lends a value": (lambda r: _same_as_parent(r, None), "is not the value of the same version"),
    "unknown kind": (lambda r: _lines([r[0], {"kind": "blob"}, *r[1:]]), "unknown record kind"),
}


def _same_as_parent(r: list[dict[str, Any]], channel: str | None) -> list[dict[str, Any]]:
    """A child claiming its parent's value for a channel the parent lacks, or that it has itself."""
    child = next(
        x for x in r if x["kind"] == "checkpoint" and x["parent_checkpoint_id"] and x["channel_values"]
    )
    child["same_as_parent"] = [channel or next(iter(child["channel_values"]))]
    return r


def _first_with_values(r: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cp = next(x for x in r if x["kind"] == "checkpoint" and x["channel_values"])
    cp["channel_values"]["ghost"] = next(iter(cp["channel_values"].values()))
    return r


def _bad_idx(r: list[dict[str, Any]]) -> list[dict[str, Any]]:
    w = next(x for x in r if x["kind"] == "writes" and not x["writes"][0]["channel"].startswith("__"))
    w["writes"][0]["idx"] = -7
    return r


def _bool_idx(r: list[dict[str, Any]]) -> list[dict[str, Any]]:
    _first(r, "writes")["writes"][0]["idx"] = True
    return r


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_file_is_refused_and_writes_nothing(
    source: dict[str, Any], tmp_path: Path, case: str
) -> None:
    make, expected = HOSTILE[case]
    made = make(_export_text(source))
    text = made if isinstance(made, str) else _lines(made)
    path = tmp_path / "hostile.jsonl"
    path.write_text(text, encoding="utf-8")
    src = source["plain"]
    target = fresh("t")
    code, out, err = run(
        "--table", src.table_name, "--bucket", src.bucket_name, "import", str(path), "--thread", target
    )
    assert code == cli.EXIT_USAGE, (code, out, err)
    assert expected in err and "nothing was written" in err, err
    assert "Traceback" not in err + out
    assert partition(src.table_name, target) == []
    assert not os.path.exists("/tmp/pwned")


def test_non_utf8_and_missing_files(source: dict[str, Any], tmp_path: Path) -> None:
    src = source["plain"]
    path = tmp_path / "binary.jsonl"
    path.write_bytes(b"\xff\xfe\x00garbage\n")
    code, _, err = run("--table", src.table_name, "import", str(path))
    assert code == cli.EXIT_USAGE and "not UTF-8" in err
    code, _, err = run("--table", src.table_name, "import", str(tmp_path / "missing.jsonl"))
    assert code == cli.EXIT_USAGE and "cannot read" in err


def test_size_limit_refuses_before_writing(source: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(_export_text(source)), encoding="utf-8")
    src, target = source["plain"], fresh("t")
    code, _, err = run(
        "--table", src.table_name, "import", str(path), "--thread", target, "--max-payload-size", "50000"
    )
    assert code == cli.EXIT_USAGE and "max_payload_size" in err
    assert partition(src.table_name, target) == []
    # The library's own check, on one payload rather than a line.
    with pytest.raises(ExportFileError, match="over max_payload_size"):
        import_thread(
            src, io.StringIO(_lines(_export_text(source))), thread_id=target, max_payload_size=150_000
        )
    assert partition(src.table_name, target) == []


def test_library_import_applies_the_savers_type_policy(source: dict[str, Any]) -> None:
    """Through the application's saver, a payload naming os.system is refused before any write."""
    records = _set_value(_typed("msgpack", _ext_calling("os", "system", "touch /tmp/pwned")))(
        _export_text(source)
    )
    target = fresh("t")
    with pytest.raises(ExportFileError, match=r"cannot decode the payload.*os.*system"):
        import_thread(source["plain"], io.StringIO(_lines(records)), thread_id=target)
    assert partition(source["plain"].table_name, target) == []
    assert not os.path.exists("/tmp/pwned")


# ----------------------------------------------------------- failing half way


def _fail_after(saver: DynamoDBSaver, operation: str, calls: int, *, everything_after: bool = False) -> None:
    """The ``calls``-th ``operation`` (and, with ``everything_after``, every request after it) fails."""
    import types

    client = saver.clients["dynamodb"]
    seen = {"n": 0, "broken": False}

    def hook(model: Any, **_: Any) -> Any:
        if model.name == operation:
            seen["n"] += 1
            if seen["n"] >= calls:
                seen["broken"] = everything_after
                return _error(types)
        if seen["broken"]:
            return _error(types)
        return None

    client.meta.events.register("before-call.dynamodb.*", hook)


def _error(types: Any) -> Any:
    return types.SimpleNamespace(status_code=500, headers={}), {
        "Error": {"Code": "InternalServerError", "Message": "injected"},
        "ResponseMetadata": {"HTTPStatusCode": 500},
    }


def test_failure_half_way_removes_the_partial_thread(source: dict[str, Any]) -> None:
    buf = io.StringIO()
    export_thread(source["plain"], source["threads"]["plain"], buf)
    with make_saver(fresh("half"), fresh("half"), max_attempts=1) as dst:
        _fail_after(dst, "PutItem", 4)
        buf.seek(0)
        with pytest.raises(ExportError, match=r"failed after \d+ write\(s\).*the partial thread was deleted"):
            import_thread(dst, buf, thread_id="victim")
        assert list(dst.list({"configurable": {"thread_id": "victim"}})) == []
    with make_saver(dst.table_name, dst.bucket_name) as again:
        # The deleted id's tombstones would hide the same checkpoints: refused up front...
        buf.seek(0)
        with pytest.raises(TargetExistsError, match=r"was deleted.*import under a new id"):
            import_thread(again, buf, thread_id="victim")
        # ...and a new id takes the whole thread.
        buf.seek(0)
        import_thread(again, buf, thread_id="victim-2")
        assert_same(source["plain"], source["threads"]["plain"], again, "victim-2")


def test_failure_half_way_with_cleanup_failing_says_what_to_do(source: dict[str, Any]) -> None:
    buf = io.StringIO()
    export_thread(source["plain"], source["threads"]["plain"], buf)
    with make_saver(fresh("half"), None, max_attempts=1) as dst:
        _fail_after(dst, "PutItem", 3, everything_after=True)
        buf.seek(0)
        with pytest.raises(
            ExportError,
            match=r"removing the partial thread failed too.*langgraph-dynamodb delete 'victim' --yes",
        ):
            import_thread(dst, buf, thread_id="victim")


# ------------------------------------------------------------------ pure parts


def test_portable_serializer_keeps_typed_records_byte_for_byte_and_calls_nothing() -> None:
    s = PortableSerializer()
    doc = Doc(title="t", tags=["x"], color=Color.RED)
    typed = default_serde().dumps_typed({"doc": doc, "notes": [Note("n", 1)], "raw": b"\x00", "t": (1, 2)})
    loaded = s.loads_typed(typed)
    assert isinstance(loaded["doc"], OpaqueExt) and isinstance(loaded["notes"][0], OpaqueExt)
    assert s.dumps_typed(loaded) == typed
    assert default_serde().loads_typed(s.dumps_typed(loaded))["doc"] == doc
    # A record naming a module that is not loaded, or a function: kept, never imported or called.
    evil = ("msgpack", _ext_calling("not_a_module_xyz", "boom", 1))
    assert s.dumps_typed(s.loads_typed(evil)) == evil and "not_a_module_xyz" not in sys.modules
    # The standard library is judged by the savers' rule: data classes pass, callables do not.
    fine = default_serde().dumps_typed({"when": datetime.datetime(2026, 1, 1), "status": http.HTTPStatus.OK})
    assert s.dumps_typed(s.loads_typed(fine)) == fine
    for module, name in [("os", "system"), ("subprocess", "Popen"), ("builtins", "eval")]:
        with pytest.raises(ValueError, match=f"Refused to revive {module}.{name}"):
            s.loads_typed(("msgpack", _ext_calling(module, name, "true")))
    nested = ormsgpack.packb(
        ormsgpack.Ext(7, _ext_calling("os", "system", "true"))
    )  # inside a delta snapshot
    with pytest.raises(ValueError, match=r"Refused to revive os\.system"):
        s.loads_typed(("msgpack", nested))
    with pytest.raises(ValueError, match="not portable"):
        s.loads_typed(("pickle", b"."))


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([(0, "a", 1), (1, "b", 2)], [("a", 1), ("b", 2)]),
        ([(-1, "__error__", "e")], [("__error__", "e")]),
        # a regular write after a special one keeps its position
        ([(-4, "__resume__", "r"), (1, "a", 1)], [("__resume__", "r"), ("a", 1)]),
        # a hole (a duplicate special write, dropped) is filled by repeating one
        ([(-4, "__resume__", "r"), (2, "a", 1)], [("__resume__", "r"), ("__resume__", "r"), ("a", 1)]),
        ([(1, "a", 1)], None),  # a hole nothing can fill
        ([(-3, "a", 1)], None),  # a regular channel at a special index
        ([(0, "__error__", 1)], None),  # a special channel at a regular index
        ([(0, "a", 1), (0, "b", 2)], None),  # one index twice
    ],
)
def test_put_writes_order(rows: list[tuple[int, str, Any]], expected: Any) -> None:
    assert put_writes_order(rows) == expected
    if expected is not None:  # what put_writes would store from it
        stored = {}
        for pos, (ch, v) in enumerate(expected):
            stored.setdefault(WRITES_IDX_MAP.get(ch, pos), (ch, v))
        assert sorted(stored.items()) == sorted((i, (c, v)) for i, c, v in rows)


def _no_big_range(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``_export_file`` fail fast instead of building a list of a crafted index's length."""
    real = range

    def guarded(*args: int) -> range:
        r = real(*args)
        assert len(r) < 10_000, f"the import iterates over {len(r):,} write positions"
        return r

    monkeypatch.setattr(_export_file, "range", guarded, raising=False)


@pytest.mark.parametrize("special", [False, True])
def test_a_huge_write_index_is_refused_without_building_its_positions(
    source: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, special: bool
) -> None:
    # An export file under 1 KB once made the validation pass build a list of
    # idx + 1 positions: 10**10 ran out of memory before anything was written.
    _no_big_range(monkeypatch)
    records = _export_text(source)
    w = next(x for x in records if x["kind"] == "writes" and not x["writes"][0]["channel"].startswith("__"))
    w["writes"][0]["idx"] = 10**12
    if special:  # holes may be repeats of a special write: still bounded
        w["writes"].append({"idx": -1, "channel": "__error__", "value": w["writes"][0]["value"]})
    line = records.index(w) + 1
    path = tmp_path / "huge-idx.jsonl"
    path.write_text(_lines(records), encoding="utf-8")
    src = source["plain"]
    target = fresh("t")
    started = time.monotonic()
    code, out, err = run(
        "--table", src.table_name, "--bucket", src.bucket_name, "import", str(path), "--thread", target
    )
    assert time.monotonic() - started < 30
    assert code == cli.EXIT_USAGE, (code, out, err)
    assert f"line {line}:" in err and "at index 1000000000000 cannot come from put_writes" in err, err
    assert "nothing was written" in err and "Traceback" not in err + out
    assert partition(src.table_name, target) == []


def test_put_writes_order_bounds_the_holes(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_big_range(monkeypatch)
    err = (-1, "__error__", "e")
    assert put_writes_order([err, (10**12, "a", 1)]) is None
    assert put_writes_order([(10**12, "a", 1)]) is None
    most = 1 + _export_file.MAX_WRITE_HOLES  # positions 0..most-1 are holes or the error
    order = put_writes_order([err, (most, "a", 1)])
    assert order is not None and len(order) == most + 1 and order[-1] == ("a", 1)
    assert put_writes_order([err, (most + 1, "a", 1)]) is None


def test_target_id_too_long_for_a_key_is_refused_before_writing(
    source: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(_lines(_export_text(source)), encoding="utf-8")
    src, target = source["plain"], "t" * 3000

    def items() -> int:
        return int(boto3.client("dynamodb").scan(TableName=src.table_name, Select="COUNT")["Count"])

    before = items()
    code, _, err = run(
        "--table", src.table_name, "--bucket", src.bucket_name, "import", str(path), "--thread", target
    )
    assert code == cli.EXIT_USAGE and "DynamoDB allows 2048 bytes" in err and "nothing was written" in err
    assert items() == before


def test_pruned_thread_round_trip(source: dict[str, Any]) -> None:
    """A pruned thread's oldest checkpoints name parents that are gone: the file and the import keep that."""
    src = source["plain"]
    pruned = fresh("t")
    buf = io.StringIO()
    export_thread(src, source["threads"]["plain"], buf)
    buf.seek(0)
    import_thread(src, buf, thread_id=pruned)
    src.prune([pruned], keep_last=1)
    buf = io.StringIO()
    export_thread(src, pruned, buf)
    first = next(json.loads(line) for line in buf.getvalue().splitlines() if '"kind":"checkpoint"' in line)
    assert first["parent_checkpoint_id"] and first["same_as_parent"] == []  # its parent was pruned
    restored = fresh("t")
    buf.seek(0)
    import_thread(src, buf, thread_id=restored)
    assert_same(src, pruned, src, restored)


def test_a_value_too_large_for_a_bucketless_store_is_refused_up_front(moto_endpoint: str) -> None:
    """A user who forgot --bucket: refused before any write, so the id stays usable."""
    from tests.support.harness import checkpoint_of

    table, bucket = fresh("big"), fresh("big")
    with make_saver(table, bucket) as src:
        thread = fresh("t")
        cp = checkpoint_of({"small": "x", "big": os.urandom(600_000)})  # incompressible
        src.put(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
            cp,
            {"step": 0},
            cp["channel_versions"],
        )
        buf = io.StringIO()
        export_thread(src, thread, buf)
    other = fresh("nob")
    with make_saver(other, None) as dst:
        buf.seek(0)
        with pytest.raises(
            ExportFileError, match=r"channel 'big' .* more than a DynamoDB item holds.*--bucket"
        ):
            import_thread(dst, buf)
        assert partition(other, thread) == []
    with make_saver(other, fresh("nob")) as dst:  # the same id, now with a bucket
        buf.seek(0)
        import_thread(dst, buf)
        assert (
            dst.get_tuple({"configurable": {"thread_id": thread}}).checkpoint["channel_values"]["big"]
            == cp["channel_values"]["big"]
        )


def test_failure_at_the_first_write_leaves_the_id_usable(source: dict[str, Any]) -> None:
    buf = io.StringIO()
    export_thread(source["plain"], source["threads"]["plain"], buf)
    with make_saver(fresh("first"), fresh("first"), max_attempts=1) as dst:
        _fail_after(dst, "PutItem", 1)
        buf.seek(0)
        with pytest.raises(ExportError, match=r"failed at its first write .*; nothing is left$"):
            import_thread(dst, buf, thread_id="victim")
    with make_saver(dst.table_name, dst.bucket_name) as again:
        buf.seek(0)
        import_thread(again, buf, thread_id="victim")  # no tombstone: the same id works
        assert_same(source["plain"], source["threads"]["plain"], again, "victim")


_KILLED_IMPORT = """
import os, signal, sys
from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.tools.transfer import PortableSerializer, import_thread

table, bucket, path, target, after = sys.argv[1:]
saver = DynamoDBSaver(table_name=table, bucket_name=bucket, serde=PortableSerializer())  # as the CLI
put, done = saver.put, []


def dying_put(*args, **kwargs):
    if len(done) == int(after):
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup runs, as under the OOM killer
    done.append(put(*args, **kwargs))
    return done[-1]


saver.put = dying_put
with open(path, encoding="utf-8") as fp:
    import_thread(saver, fp, thread_id=target)
"""


def test_an_import_killed_half_way_leaves_a_thread_marked_partial(
    source: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "thread.jsonl"
    with path.open("w", encoding="utf-8") as fp:
        summary = export_thread(source["plain"], source["threads"]["plain"], fp)
    assert summary["checkpoints"] > 3
    table, bucket, target = fresh("kill"), fresh("kill"), fresh("t")
    make_saver(table, bucket).close()
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_IMPORT, table, bucket, str(path), target, "3"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == -9, (done.returncode, done.stderr)
    with make_saver(table, bucket) as dst:
        # Three checkpoints landed and read as a whole thread...
        assert len(list(dst.list({"configurable": {"thread_id": target}}))) == 3
        # ...but the marker says the import did not finish.
        assert any(it["SK"]["S"] == schema.IMPORT_SK for it in partition(table, target))
        marker = import_marker(dst, target)
        assert marker is not None and marker["source_thread_id"] == source["threads"]["plain"]
    code, out, err = run("--table", table, "--bucket", bucket, "import", str(path), "--thread", target)
    assert code == cli.EXIT_REFUSED, (code, out, err)
    assert "did not finish" in err and f"langgraph-dynamodb delete {target!r} --yes" in err, err
    assert "under a new id" in err
    code, out, err = run("--table", table, "--bucket", bucket, "history", target)
    assert code == 0 and "did not finish: it is partial" in err, err
    # The way out the message gives: delete, import under a new id; a finished import leaves no marker.
    code, out, err = run("--table", table, "--bucket", bucket, "delete", target, "--yes")
    assert code == 0, err
    assert all(it["SK"]["S"] != schema.IMPORT_SK for it in partition(table, target))
    code, out, err = run("--table", table, "--bucket", bucket, "import", str(path), "--thread", target + "-2")
    assert code == 0, err
    with make_saver(table, bucket) as dst:
        assert_same(source["plain"], source["threads"]["plain"], dst, target + "-2")
        assert import_marker(dst, target + "-2") is None
    assert all(it["SK"]["S"] != schema.IMPORT_SK for it in partition(table, target + "-2"))
