"""``migrate`` reads a hostile old store without running what it names.

The attacker could write to one item of the store being migrated (a tenant
of the old application, or anyone with a grant on its database). The
migrating machine holds the widest credentials: both stores. LangGraph's
``SqliteSaver``, ``PostgresSaver`` and ``InMemorySaver`` decode with its
permissive ``JsonPlusSerializer`` unless ``LANGGRAPH_STRICT_MSGPACK`` is set,
and ``CheckpointAwsSource`` used to default to it: a planted ext record
naming ``dateutil.zoneinfo.rebuild.check_call`` (``subprocess.check_call``,
re-exported by a dependency botocore needs) ran a command for every source
kind, each built exactly as ``docs/migrate.md`` showed. Each source here is
built the same way (default serializer); the gadget would touch a sentinel
file. Each test failed on the code before ``migrate.strict_source``.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import ormsgpack
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.serde import (
    StateTypesSerializer,
    UnsafeSerializerError,
    is_permissive,
)
from langgraph.checkpoint.dynamodb.tools.migrate import (
    CheckpointAwsSource,
    MalformedSourceError,
    MigrationError,
    migrate_thread,
    migrate_threads,
)
from langgraph.checkpoint.dynamodb.tools.transfer import import_marker
from tests.integration.test_migrate_checkpoint_aws import Ref, cid, make_ref

pytestmark = pytest.mark.usefixtures("moto_endpoint")

KINDS = ["memory", "sqlite", "postgres", "checkpoint-aws"]


def gadget(sentinel: Path) -> bytes:
    """A pending write's value that runs ``touch sentinel`` if its reader calls what it names."""
    record = ("dateutil.zoneinfo.rebuild", "check_call", [["touch", str(sentinel)]])
    return ormsgpack.packb({"x": ormsgpack.Ext(1, ormsgpack.packb(record))})


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def _put_thread(saver: Any, thread: str) -> str:
    """One checkpoint with one pending write ``("v", "benign")`` of task ``t1``; its id."""
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"v": "kept"}
    cp["channel_versions"] = {"v": saver.get_next_version(None, None)}
    stored = saver.put(_cfg(thread), cp, {"source": "loop", "step": 0}, cp["channel_versions"])
    saver.put_writes(stored, [("v", "benign")], "t1")
    return str(cp["id"])


class Source:
    """A source of one kind, built as its user would (default serializer), that can plant a value."""

    def __init__(self, kind: str, saver: Any, plant: Callable[[str, str, bytes], None]) -> None:
        self.kind, self.saver, self._plant = kind, saver, plant

    def thread(self, thread: str, payload: bytes | None = None) -> None:
        """A thread of one checkpoint; its pending write's stored value replaced by ``payload``."""
        if isinstance(self.saver, Ref):
            self.saver.checkpoint(thread, cid(1), None, {"v": 1}, {"v": "kept"})
            self.saver.write(thread, cid(1), "t1", 0, "v", "benign")
            checkpoint_id = cid(1)
        else:
            checkpoint_id = _put_thread(self.saver, thread)
        if payload is not None:
            self._plant(thread, checkpoint_id, payload)

    @property
    def reader(self) -> Any:
        return self.saver.source() if isinstance(self.saver, Ref) else self.saver


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    from tests.integration.postgres_server import throwaway_server

    with throwaway_server() as dsn:
        yield dsn


def _memory() -> Source:
    saver = InMemorySaver()

    def plant(thread: str, checkpoint_id: str, payload: bytes) -> None:
        writes = saver.writes[(thread, "", checkpoint_id)]
        for key, (task, channel, _, path) in list(writes.items()):
            writes[key] = (task, channel, ("msgpack", payload), path)

    return Source("memory", saver, plant)


def _sqlite(folder: Path) -> Source:
    saver = SqliteSaver(sqlite3.connect(folder / f"{uuid.uuid4().hex}.sqlite", check_same_thread=False))
    saver.setup()

    def plant(thread: str, checkpoint_id: str, payload: bytes) -> None:
        saver.conn.execute(
            "UPDATE writes SET type = 'msgpack', value = ? WHERE thread_id = ?", (payload, thread)
        )
        saver.conn.commit()

    return Source("sqlite", saver, plant)


def _postgres(request: pytest.FixtureRequest) -> Source:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    server = request.getfixturevalue("pg_server")
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # a generated name, never input
    stack = PostgresSaver.from_conn_string(server.rsplit("/", 1)[0] + "/" + name)
    saver = stack.__enter__()
    request.addfinalizer(lambda: stack.__exit__(None, None, None))
    saver.setup()

    def plant(thread: str, checkpoint_id: str, payload: bytes) -> None:
        with saver.conn.cursor() as cur:
            cur.execute(
                "UPDATE checkpoint_writes SET type = 'msgpack', blob = %s WHERE thread_id = %s",
                (payload, thread),
            )

    return Source("postgres", saver, plant)


def _checkpoint_aws() -> Source:
    ref = make_ref()

    def plant(thread: str, checkpoint_id: str, payload: bytes) -> None:
        boto3.client("dynamodb").put_item(
            TableName=ref.table,
            Item={
                "PK": {"S": f"CHUNK_{thread}##{checkpoint_id}#t1#0"},
                "SK": {"S": "CHUNK"},
                "payload": {"B": payload},
            },
        )

    return Source("checkpoint-aws", ref, plant)


@pytest.fixture(params=KINDS)
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Source:
    kind = request.param
    if kind == "memory":
        return _memory()
    if kind == "sqlite":
        return _sqlite(tmp_path)
    if kind == "postgres":
        return _postgres(request)
    return _checkpoint_aws()


@pytest.fixture
def target(moto_endpoint: str, names: dict[str, str]) -> Iterator[DynamoDBSaver]:
    saver = DynamoDBSaver(**names)
    saver.setup()
    yield saver
    saver.close()


def test_the_sources_decode_permissively_as_built(source: Source) -> None:
    """The premise: LangGraph's savers, as their users build them, would call what a payload names."""
    if source.kind == "checkpoint-aws":
        assert not is_permissive(source.reader.serde)  # this package's reader: strict by default now
    else:
        assert is_permissive(source.reader.serde)


def test_a_planted_gadget_does_not_run(source: Source, target: DynamoDBSaver, tmp_path: Path) -> None:
    sentinel = tmp_path / "pwned"
    source.thread("hostile", gadget(sentinel))
    source.thread("innocent")
    reader = source.reader
    before = reader.serde
    summary = migrate_threads(reader, target)  # every thread: found from keys, nothing decoded
    assert not sentinel.exists(), f"{source.kind}: the planted payload ran a command"
    assert reader.serde is before  # the user's serializer is back
    # The hostile thread is refused, by name, before anything is written; the other one migrates.
    ((refused),) = summary["refused"]
    assert refused["thread_id"] == "hostile"
    assert "Refused to revive dateutil.zoneinfo.rebuild.check_call" in refused["error"]
    assert "nothing was written" in refused["error"]
    assert list(target.list(_cfg("hostile"))) == []
    assert (summary["migrated"], summary["verified"]) == (1, 1)
    assert target.get_tuple(_cfg("innocent")).pending_writes == [("t1", "v", "benign")]


def test_checkpoint_aws_source_defaults_to_the_strict_serializer(moto_endpoint: str) -> None:
    ref = make_ref()
    assert isinstance(ref.source().serde, StateTypesSerializer)
    # LangGraph's permissive one, as that saver's docs pass it: made strict, as the savers do.
    assert isinstance(ref.source(serde=JsonPlusSerializer()).serde, StateTypesSerializer)
    with pytest.raises(UnsafeSerializerError, match="allow_unsafe_serde"):
        ref.source(serde=JsonPlusSerializer(pickle_fallback=True))
    unsafe = JsonPlusSerializer(pickle_fallback=True)
    assert ref.source(serde=unsafe, allow_unsafe_serde=True).serde is unsafe  # the named opt-in


def test_the_source_serde_is_swapped_for_the_run_and_restored(target: DynamoDBSaver) -> None:
    mine = JsonPlusSerializer()  # permissive
    saver = InMemorySaver(serde=mine)
    _put_thread(saver, "a")
    during: list[Any] = []
    summary = migrate_threads(saver, target, progress=lambda *_: during.append(saver.serde))
    assert summary["verified"] == 1
    assert isinstance(during[0], StateTypesSerializer) and not is_permissive(during[0])
    assert saver.serde is mine  # restored


def test_the_opt_in_keeps_the_users_serde(target: DynamoDBSaver) -> None:
    mine = JsonPlusSerializer()
    saver = InMemorySaver(serde=mine)
    _put_thread(saver, "a")
    during: list[Any] = []
    migrate_threads(
        saver, target, progress=lambda *_: during.append(saver.serde), allow_unsafe_source_serde=True
    )
    assert during == [mine] and saver.serde is mine


def test_a_serde_that_cannot_be_made_strict_is_refused_unread(target: DynamoDBSaver, tmp_path: Path) -> None:
    class Mine(JsonPlusSerializer):
        """A permissive subclass: what it changes is its own, so it is not replaced."""

    for serde in (Mine(), JsonPlusSerializer(pickle_fallback=True)):
        saver = InMemorySaver(serde=serde)
        _put_thread(saver, "a")
        with pytest.raises(UnsafeSerializerError, match="allow_unsafe_source_serde=True"):
            migrate_threads(saver, target)
        assert saver.serde is serde
    assert list(target.list(_cfg("a"))) == []


# ------------------------------------------------- one malformed item refuses its thread only


def _update(ref: Ref, pk: str, sk: str, expression: str, values: dict[str, Any] | None = None) -> None:
    kw: dict[str, Any] = {"ExpressionAttributeValues": values} if values else {}
    boto3.client("dynamodb").update_item(
        TableName=ref.table, Key={"PK": {"S": pk}, "SK": {"S": sk}}, UpdateExpression=expression, **kw
    )


HOSTILE = {
    # thread -> (how its one item is made malformed, what the refusal must name)
    "a-odd-idx": ("odd idx", r"PK 'WRITES_a-odd-idx##.*SK 't1#0'.*attribute 'idx' is '1\.5', not an integer"),
    "b-bool-idx": ("bool idx", r"SK 't1#0'.*attribute 'idx' is of type BOOL, not N"),
    "c-no-ns": ("no ns", r"PK 'CHECKPOINT_c-no-ns', SK '#1f0.*attribute 'ns' is missing"),
    "d-bool-version": ("bool version", r"SK '#1f0.*channel_versions gives channel 'v' the version True"),
    "e-not-a-checkpoint": ("not a checkpoint", r"SK '#1f0.*the payload of checkpoint .* is not a checkpoint"),
}


def _malform(ref: Ref, thread: str, how: str) -> None:
    cp_pk, cp_sk, w_pk = f"CHECKPOINT_{thread}", f"#{cid(1)}", f"WRITES_{thread}##{cid(1)}"
    versions: dict[str, Any] = {"v": True} if how == "bool version" else {"v": 1}
    ref.checkpoint(thread, cid(1), None, versions, {"v": "kept"})
    ref.write(thread, cid(1), "t1", 0, "v", "benign")
    if how == "odd idx":
        _update(ref, w_pk, "t1#0", "SET idx = :v", {":v": {"N": "1.5"}})
    elif how == "bool idx":
        _update(ref, w_pk, "t1#0", "SET idx = :v", {":v": {"BOOL": True}})
    elif how == "no ns":
        _update(ref, cp_pk, cp_sk, "REMOVE ns")
    elif how == "not a checkpoint":
        _, data = JsonPlusSerializer().dumps_typed(["not", "a", "checkpoint"])
        boto3.client("dynamodb").put_item(
            TableName=ref.table,
            Item={"PK": {"S": f"CHUNK_{thread}##{cid(1)}"}, "SK": {"S": "CHUNK"}, "payload": {"B": data}},
        )


def test_a_malformed_item_refuses_its_thread_and_the_others_migrate(target: DynamoDBSaver) -> None:
    ref = make_ref()
    for thread, (how, _) in HOSTILE.items():
        _malform(ref, thread, how)
    ref.checkpoint("z-fine", cid(1), None, {"v": 1}, {"v": "kept"})  # listed last: sorted ids
    summary = migrate_threads(ref.source(), target)
    refused = {r["thread_id"]: r["error"] for r in summary["refused"]}
    assert sorted(refused) == sorted(HOSTILE)
    for thread, (_, pattern) in HOSTILE.items():
        assert re.search(pattern, refused[thread]), (thread, refused[thread])
        assert refused[thread].startswith(f"source thread {thread!r} refused: ")
        assert list(target.list(_cfg(thread))) == []
    assert (summary["threads"], summary["migrated"], summary["verified"]) == (6, 1, 1)
    assert target.get_tuple(_cfg("z-fine")).checkpoint["channel_values"] == {"v": "kept"}


def test_migrate_thread_raises_the_typed_refusal(target: DynamoDBSaver) -> None:
    ref = make_ref()
    _malform(ref, "a-odd-idx", "odd idx")
    with pytest.raises(MalformedSourceError, match="attribute 'idx'") as caught:
        migrate_thread(ref.source(), target, "a-odd-idx")
    assert isinstance(caught.value, MigrationError) and caught.value.thread_id == "a-odd-idx"


# ------------------------------------------------- payload keys are derived, never taken from the item


def _point(ref: Ref, pk: str, sk: str, loc: str, key: str) -> None:
    _update(ref, pk, sk, "SET ref_loc = :l, ref_key = :k", {":l": {"S": loc}, ":k": {"S": key}})


POINTERS = {
    # how the attacker's item names the victim's payload -> (item PK, item SK, ref_loc, ref_key)
    "checkpoint chunk": ("CHECKPOINT_attacker", f"#{cid(1)}", "DYNAMODB", f"CHUNK_victim##{cid(1)}"),
    "checkpoint object": ("CHECKPOINT_attacker", f"#{cid(1)}", "S3", f"victim/checkpoints//{cid(1)}"),
    "write chunk": (f"WRITES_attacker##{cid(1)}", "t1#0", "DYNAMODB", f"CHUNK_victim##{cid(1)}#t1#0"),
}


@pytest.mark.parametrize("pointer", sorted(POINTERS))
def test_an_item_naming_another_threads_payload_is_refused(target: DynamoDBSaver, pointer: str) -> None:
    """A tenant who can write only its own items points them at another tenant's payloads."""
    ref = make_ref()
    ref.checkpoint("victim", cid(1), None, {"v": 1}, {"v": "the victim's secret"})
    ref.write("victim", cid(1), "t1", 0, "v", "the victim's secret write")
    ref.s3.put_object(
        Bucket=ref.bucket, Key=f"pre/victim/checkpoints//{cid(1)}", Body=b"x"
    )  # as if offloaded
    ref.checkpoint("attacker", cid(1), None, {"v": 1}, {"v": "mine"})
    ref.write("attacker", cid(1), "t1", 0, "v", "mine")
    pk, sk, loc, key = POINTERS[pointer]
    _point(ref, pk, sk, loc, key)
    summary = migrate_threads(ref.source(), target)
    ((refused),) = summary["refused"]
    assert refused["thread_id"] == "attacker"
    assert (
        f"attribute 'ref_key' is {key!r}, but that saver keeps this item's payload under" in refused["error"]
    )
    assert list(target.list(_cfg("attacker"))) == []
    assert (summary["migrated"], summary["verified"]) == (1, 1)  # the victim's own thread
    assert target.get_tuple(_cfg("victim")).checkpoint["channel_values"] == {"v": "the victim's secret"}


def test_a_payload_of_another_checkpoint_is_refused(target: DynamoDBSaver) -> None:
    """The item's own chunk holds a payload whose checkpoint id is not the item's."""
    ref = make_ref()
    ref.checkpoint("t", cid(1), None, {"v": 1}, {"v": "first"})
    ref.checkpoint("t", cid(2), cid(1), {"v": 2}, {"v": "second"})
    chunk = boto3.client("dynamodb").get_item(
        TableName=ref.table, Key={"PK": {"S": f"CHUNK_t##{cid(1)}"}, "SK": {"S": "CHUNK"}}
    )["Item"]
    boto3.client("dynamodb").put_item(TableName=ref.table, Item={**chunk, "PK": {"S": f"CHUNK_t##{cid(2)}"}})
    summary = migrate_threads(ref.source(), target)
    ((refused),) = summary["refused"]
    assert f"the payload of checkpoint {cid(2)!r} is checkpoint {cid(1)!r}" in refused["error"]
    assert list(target.list(_cfg("t"))) == []


@pytest.mark.parametrize(
    ("attr", "value"), [("ns", "a#"), ("id", f"x/{cid(1)}"), ("SK", f"#{cid(9)}")], ids=["ns", "id", "SK"]
)
def test_an_item_whose_keys_are_ambiguous_is_refused(target: DynamoDBSaver, attr: str, value: str) -> None:
    ref = make_ref()
    ref.checkpoint("t", cid(1), None, {"v": 1}, {"v": "x"})
    item = boto3.client("dynamodb").get_item(
        TableName=ref.table, Key={"PK": {"S": "CHECKPOINT_t"}, "SK": {"S": f"#{cid(1)}"}}
    )["Item"]
    if attr == "SK":
        boto3.client("dynamodb").delete_item(TableName=ref.table, Key={"PK": item["PK"], "SK": item["SK"]})
    boto3.client("dynamodb").put_item(TableName=ref.table, Item={**item, attr: {"S": value}})
    ((refused),) = migrate_threads(ref.source(), target)["refused"]
    assert "PK 'CHECKPOINT_t'" in refused["error"] and (attr in refused["error"]), refused["error"]


class _Rewritten(CheckpointAwsSource):
    """A source whose old table changes between the migration's read and its verification."""

    def __init__(self, ref: Ref, **kw: Any) -> None:
        super().__init__(ref.table, bucket_name=ref.bucket, key_prefix="pre", **kw)
        self.ref, self.reads = ref, 0

    def _thread(self, thread_id: str) -> list[Any]:
        self.reads += 1
        if self.reads == 2:  # the verification's read: the source's writer rewrote the checkpoint
            self.ref.checkpoint(thread_id, cid(1), None, {"v": 1}, {"v": "rewritten"})
        return super()._thread(thread_id)


def test_a_failed_verification_says_the_target_is_partial(target: DynamoDBSaver) -> None:
    ref = make_ref()
    ref.checkpoint("t", cid(1), None, {"v": 1}, {"v": "as read"})
    with pytest.raises(MigrationError, match="verification of thread 't' failed") as caught:
        migrate_thread(_Rewritten(ref), target, "t")
    message = str(caught.value)
    assert "nothing was written" not in message
    assert "partial and marked so" in message and "run the migration again" in message
    assert "differs differs" not in message and "differs; what was written stays" in message
    assert import_marker(target, "t") is not None  # it is marked partial, as the message says
    assert target.get_tuple(_cfg("t")).checkpoint["channel_values"] == {"v": "as read"}


# ------------------------------------------------- a SQLite file's schema runs nothing


def _sqlite_file(tmp_path: Path, rig: str) -> Path:
    """A SqliteSaver file with one thread, then its schema rigged as ``rig`` says."""
    path = tmp_path / "hostile.sqlite"
    conn = sqlite3.connect(path)
    saver = SqliteSaver(conn)
    saver.setup()
    _put_thread(saver, "t")
    if rig == "view":  # the same rows, served by a query (which could generate anything)
        conn.executescript(
            "ALTER TABLE checkpoints RENAME TO rows; CREATE VIEW checkpoints AS SELECT * FROM rows;"
        )
    elif rig == "recursive view":  # never finishes if read
        conn.executescript(
            "ALTER TABLE checkpoints RENAME TO rows; CREATE VIEW checkpoints AS "
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT rows.* FROM rows, r;"
        )
    elif rig == "generated column":  # an expression computed on every read
        conn.executescript(
            "ALTER TABLE writes RENAME TO w;"
            "CREATE TABLE writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', "
            "checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL, idx INTEGER NOT NULL, channel TEXT NOT NULL, "
            "type TEXT, value BLOB, task_path TEXT NOT NULL DEFAULT '', "
            "g BLOB GENERATED ALWAYS AS (zeroblob(1000)) VIRTUAL, "
            "PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));"
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, "
            "task_path) SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, "
            "task_path FROM w; DROP TABLE w;"
        )
    conn.commit()
    conn.close()
    return path


@pytest.mark.timeout(120)
@pytest.mark.parametrize("rig", ["view", "recursive view", "generated column"])
def test_cli_refuses_a_sqlite_schema_that_would_run_code(
    tmp_path: Path, target: DynamoDBSaver, rig: str
) -> None:
    import io

    from langgraph.checkpoint.dynamodb import cli

    path = _sqlite_file(tmp_path, rig)
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "--table",
        target.table_name,
        "--bucket",
        target.bucket_name,
        "migrate",
        "--from",
        f"sqlite:{path}",
    ]
    code = cli.main(argv, stdin=io.StringIO(), stdout=out, stderr=err)
    assert code == cli.EXIT_USAGE, (code, out.getvalue(), err.getvalue())
    what = "generated columns" if rig == "generated column" else "is a view, not a table"
    assert what in err.getvalue() and "nothing read" in err.getvalue(), err.getvalue()
    assert list(target.list(_cfg("t"))) == []


def test_the_cli_still_reads_a_plain_sqlite_file(tmp_path: Path, target: DynamoDBSaver) -> None:
    import io

    from langgraph.checkpoint.dynamodb import cli

    path = _sqlite_file(tmp_path, "none")
    argv = [
        "--table",
        target.table_name,
        "--bucket",
        target.bucket_name,
        "migrate",
        "--from",
        f"sqlite:{path}",
    ]
    assert cli.main(argv, stdin=io.StringIO(), stdout=io.StringIO(), stderr=io.StringIO()) == 0
    assert target.get_tuple(_cfg("t")).checkpoint["channel_values"] == {"v": "kept"}


def test_guard_sqlite_turns_trusted_schema_off_and_bounds_each_statement(tmp_path: Path) -> None:
    import time

    from langgraph.checkpoint.dynamodb.tools.migrate import guard_sqlite

    conn = sqlite3.connect(_sqlite_file(tmp_path, "none"))
    guard_sqlite(conn, max_statement_seconds=0.3)
    assert conn.execute("PRAGMA trusted_schema").fetchone()[0] == 0
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="interrupted"):
        conn.execute(
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
        ).fetchone()
    assert time.monotonic() - started < 5
    time.sleep(0.4)  # idle time is not a statement's: the clock restarts with each one
    assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 1
    conn.close()


def test_cli_interrupts_a_statement_over_its_budget(
    tmp_path: Path, target: DynamoDBSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget (60 s) lowered to nothing: the first long statement on the source is interrupted."""
    import io

    from langgraph.checkpoint.dynamodb import cli
    from langgraph.checkpoint.dynamodb.tools import _migrate_sqlite

    path = _sqlite_file(tmp_path, "none")
    conn = sqlite3.connect(path)
    conn.execute(  # many rows: reading them takes more than one look at the clock
        "INSERT INTO checkpoints SELECT thread_id, checkpoint_ns, checkpoint_id || '-' || n, "
        "parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints, "
        "(WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5000) SELECT n FROM r)"
    )
    conn.commit()
    conn.close()
    monkeypatch.setattr(_migrate_sqlite, "DEFAULT_STATEMENT_SECONDS", 0.0)
    out, err = io.StringIO(), io.StringIO()
    argv = [
        "--table",
        target.table_name,
        "--bucket",
        target.bucket_name,
        "migrate",
        "--from",
        f"sqlite:{path}",
    ]
    code = cli.main(argv, stdin=io.StringIO(), stdout=out, stderr=err)
    assert code == cli.EXIT_ERROR, (code, out.getvalue(), err.getvalue())
    assert "ran over 0 s and was interrupted" in err.getvalue() and "Traceback" not in err.getvalue()


def test_a_row_holding_another_checkpoints_payload_is_refused(tmp_path: Path, target: DynamoDBSaver) -> None:
    """Any source: a checkpoint whose payload carries another id is refused before anything is written."""
    conn = sqlite3.connect(_sqlite_file(tmp_path, "none"), check_same_thread=False)
    conn.execute("UPDATE checkpoints SET checkpoint_id = checkpoint_id || '-copy'")
    conn.commit()
    summary = migrate_threads(SqliteSaver(conn), target)
    ((refused),) = summary["refused"]
    assert "-copy' holds the payload of checkpoint" in refused["error"], refused["error"]
    assert "nothing was written" in refused["error"] and list(target.list(_cfg("t"))) == []
    conn.close()
