"""``migrate`` from a real PostgreSQL server: ``PostgresSaver`` (langgraph-checkpoint-postgres) as the source.

A throwaway server (``initdb``/``pg_ctl`` on 127.0.0.1, see
``postgres_server.py``) for the module; each test gets a database of its
own. The graphs of ``test_migrate`` (interrupts at the root and in a
subgraph, a failed node, ``Send`` fan-out, pydantic values) run on the
PostgresSaver; after the migration the threads read the same on our
saver, Send writes keep the source's task paths, a resume ends as on the
source, and ``langgraph-dynamodb migrate --from postgres:DSN`` works and
re-runs as a no-op.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import psycopg
import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.types import Command

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli, schema
from langgraph.checkpoint.dynamodb.tools.migrate import MigrationError, migrate_thread, migrate_threads
from langgraph.checkpoint.dynamodb.tools.transfer import import_marker
from tests.integration.postgres_server import throwaway_server
from tests.integration.test_migrate import STAGES, assert_same, build_graph, cfg, fresh, item_count, run_to

pytestmark = pytest.mark.usefixtures("moto_endpoint")


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    with throwaway_server() as dsn:
        yield dsn


@pytest.fixture
def pg_dsn(pg_server: str) -> str:
    """A fresh database on the module's server."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # a generated name, never input
    return pg_server.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def pg(pg_dsn: str) -> Iterator[Any]:
    with PostgresSaver.from_conn_string(pg_dsn) as saver:
        saver.setup()
        saver.dsn = pg_dsn
        yield saver


@pytest.fixture
def target(moto_endpoint: str, names: dict[str, str]) -> Iterator[DynamoDBSaver]:
    saver = DynamoDBSaver(**names)
    saver.setup()
    yield saver
    saver.close()


def test_every_thread_reads_the_same(pg: Any, target: DynamoDBSaver) -> None:
    threads = {stage: fresh(stage) for stage in STAGES}
    for stage, thread in threads.items():
        run_to(pg, thread, stage)
    with psycopg.connect(pg.dsn) as conn:  # the server really holds them
        (rows,) = conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints").fetchone()
    assert rows == len(STAGES)
    summary = migrate_threads(pg, target)
    assert (summary["threads"], summary["migrated"], summary["verified"]) == (4, 4, 4)
    for thread in threads.values():
        assert_same(pg, target, thread)
    # Send tasks' writes under the source's task paths (read from checkpoint_writes), not "".
    items = boto3.client("dynamodb").scan(TableName=target.table_name)["Items"]
    paths = {it[schema.ATTR.TASK_PATH]["S"] for it in items if schema.ATTR.TASK_PATH in it}
    assert any("__pregel_push" in p for p in paths), paths


@pytest.mark.parametrize("stage", ["ask", "review"])
def test_resume_ends_as_on_postgres(pg: Any, target: DynamoDBSaver, stage: str) -> None:
    thread = fresh(stage)
    run_to(pg, thread, stage)
    migrate_thread(pg, target, thread)
    results = []
    for saver in (pg, target):
        graph = build_graph(saver)
        out = graph.invoke(
            Command(resume="blue" if stage == "ask" else "yes"), cfg(thread), durability="sync"
        )
        if stage == "ask":
            out = graph.invoke(Command(resume="yes"), cfg(thread), durability="sync")
        steps = [(s.values, s.next, s.metadata["step"]) for s in graph.get_state_history(cfg(thread))]
        results.append((out, steps))
    assert results[1] == results[0] and results[0][0]["verdict"] == "yes: 3 parts"


def test_killed_migration_completes(pg: Any, target: DynamoDBSaver, monkeypatch: pytest.MonkeyPatch) -> None:
    thread = fresh("done")
    run_to(pg, thread, "done")
    real_put, calls = target.put, {"n": 0}

    def dying_put(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] > 3:
            raise RuntimeError("killed")
        return real_put(*args, **kw)

    monkeypatch.setattr(target, "put", dying_put)
    with pytest.raises(MigrationError, match="partial"):
        migrate_thread(pg, target, thread)
    monkeypatch.setattr(target, "put", real_put)
    assert migrate_thread(pg, target, thread)["status"] == "resumed"
    assert import_marker(target, thread) is None
    assert_same(pg, target, thread)


def test_cli_from_postgres(pg: Any, target: DynamoDBSaver) -> None:
    threads = [fresh("ask"), fresh("done")]
    run_to(pg, threads[0], "ask")
    run_to(pg, threads[1], "done")
    conn = ("--table", target.table_name, "--bucket", target.bucket_name)

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main([*conn, "migrate", *argv], stdin=io.StringIO(), stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    code, out, err = run("--from", f"postgres:{pg.dsn}", "--dry-run")
    assert code == 0 and "2 thread(s): 2 migrated" in out and item_count(target.table_name) == 0, err
    code, out, err = run("--from", pg.dsn, "--json")  # postgresql://... works as it is
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["migrated"], summary["verified"]) == (2, 2)
    for thread in threads:
        assert_same(pg, target, thread)
    code, out, err = run("--from", f"postgres:{pg.dsn}")
    assert code == 0 and "0 migrated, 0 resumed, 2 skipped" in out, err
