"""``langgraph-dynamodb migrate --from sqlite:PATH``: a LangGraph SQLite database moved into the table.

The CLI has none of the application's modules: values cross byte for byte,
and the application's own saver reads them back as the source's did.
"""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli
from tests.integration.test_migrate import fresh, history, namespaces, run_to

pytestmark = pytest.mark.usefixtures("moto_endpoint")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def db(tmp_path: Path) -> dict[str, Any]:
    """A SqliteSaver file with a thread stopped at an interrupt and one finished (subgraph included)."""
    path = tmp_path / "checkpoints.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    threads = {"ask": fresh("ask"), "done": fresh("done")}
    for stage, thread in threads.items():
        run_to(saver, thread, stage)
    yield {"path": path, "saver": saver, "threads": threads}
    conn.close()


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str]) -> Any:
    saver = DynamoDBSaver(**names)
    saver.setup()
    yield saver
    saver.close()


def item_count(table: str) -> int:
    return int(boto3.client("dynamodb").scan(TableName=table, Select="COUNT")["Count"])


def test_migrate_from_sqlite_then_rerun(db: dict[str, Any], store: DynamoDBSaver) -> None:
    conn = ("--table", store.table_name, "--bucket", store.bucket_name)
    code, out, err = run(*conn, "migrate", "--from", f"sqlite:{db['path']}", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["threads"], summary["migrated"], summary["verified"], summary["skipped"]) == (2, 2, 2, 0)
    assert summary["checkpoints"] > 10 and summary["writes"] > 5 and summary["refused"] == []
    for thread in db["threads"].values():  # the application's saver reads what the source held
        assert history(store, thread) == history(db["saver"], thread)
        assert namespaces(store, thread) == namespaces(db["saver"], thread)
    before = item_count(store.table_name)
    code, out, err = run(*conn, "migrate", "--from", f"sqlite:{db['path']}")
    assert code == 0, err
    assert "2 thread(s): 0 migrated, 0 resumed, 2 skipped (already complete), 0 refused" in out
    assert "2 verified" in out
    assert item_count(store.table_name) == before


def test_dry_run_and_thread_selection(db: dict[str, Any], store: DynamoDBSaver) -> None:
    conn = ("--table", store.table_name, "--bucket", store.bucket_name)
    thread = db["threads"]["done"]
    code, out, err = run(*conn, "migrate", "--from", f"sqlite:{db['path']}", "--thread", thread, "--dry-run")
    assert code == 0, err
    assert out.startswith(f"would_migrate '{thread}'") and "(dry run: nothing written)" in out
    assert "1 thread(s): 1 migrated" in out
    assert item_count(store.table_name) == 0
    code, out, err = run(*conn, "migrate", "--from", f"sqlite:{db['path']}", "--thread", thread, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert [r["thread_id"] for r in summary["results"]] == [thread] and summary["verified"] == 1
    assert list(store.list({"configurable": {"thread_id": db["threads"]["ask"]}})) == []


def test_refused_thread_exits_5(db: dict[str, Any], store: DynamoDBSaver) -> None:
    taken = db["threads"]["ask"]
    run_to(store, taken, "ask")  # the same id with a history of its own
    code, out, err = run("--table", store.table_name, "migrate", "--from", f"sqlite:{db['path']}")
    assert code == 5
    assert f"refused '{taken}'" in err and "already has different checkpoints" in err
    assert "1 migrated" in out and "1 refused" in out


def test_bad_sources_are_usage_errors(
    tmp_path: Path, store: DynamoDBSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn = ("--table", store.table_name)
    code, _, err = run(*conn, "migrate", "--from", f"sqlite:{tmp_path / 'missing.sqlite'}")
    assert code == 2 and "no such file" in err
    assert not (tmp_path / "missing.sqlite").exists()  # never created
    junk = tmp_path / "junk.sqlite"
    sqlite3.connect(junk).close()  # an empty database: no LangGraph tables
    code, _, err = run(*conn, "migrate", "--from", f"sqlite:{junk}")
    assert code == 2 and "not a LangGraph SQLite checkpoint database" in err
    code, _, err = run(*conn, "migrate", "--from", "memory")
    assert code == 2 and "migrate_threads" in err
    code, _, err = run(*conn, "migrate", "--from", "mysql://x")
    assert code == 2 and "expected sqlite:PATH, postgres:DSN or checkpoint-aws:TABLE" in err
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.postgres", None)  # not installed
    code, _, err = run(*conn, "migrate", "--from", "postgres://u@127.0.0.1/db", "--json")
    assert code == 2
    assert json.loads(err)["error"] == "missing_package" and "langgraph-checkpoint-postgres" in err
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.sqlite", None)
    code, _, err = run(*conn, "migrate", "--from", f"sqlite:{junk}")
    assert code == 2 and "pip install 'langgraph-checkpoint-sqlite'" in err
    code, _, err = run(*conn, "migrate")
    assert code == 2 and "--from" in err


def test_from_checkpoint_aws_tables(store: DynamoDBSaver) -> None:
    """``--from checkpoint-aws:TABLE?bucket=...&prefix=...`` on hand-made items (the real saver's: tests/dist)."""
    from tests.integration.test_migrate_checkpoint_aws import Ref, cid, make_ref

    ref: Ref = make_ref()
    ref.checkpoint("t-aws", cid(1), None, {"x": 1}, {"x": "root"}, how="gzip")
    ref.checkpoint("t-aws", cid(2), cid(1), {"x": 2}, {"x": "big"}, how="s3")
    ref.write("t-aws", cid(2), "task", 0, "x", "pending")
    conn = ("--table", store.table_name, "--bucket", store.bucket_name)
    src = f"checkpoint-aws:{ref.table}?bucket={ref.bucket}&prefix=pre"
    code, out, err = run(*conn, "migrate", "--from", src, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["threads"], summary["migrated"], summary["verified"], summary["orphans"]) == (1, 1, 1, 0)
    got = store.get_tuple({"configurable": {"thread_id": "t-aws"}})
    assert got.checkpoint["channel_values"] == {"x": "big"} and got.pending_writes == [
        ("task", "x", "pending")
    ]
    assert got.checkpoint["channel_versions"]["x"].startswith("0" * 31 + "2.")
    code, out, err = run(*conn, "migrate", "--from", src)
    assert code == 0 and "1 skipped" in out, err
    code, _, err = run(*conn, "migrate", "--from", f"checkpoint-aws:{ref.table}?bucket={ref.bucket}")
    assert code == 1 and "under the prefix 'pre'" in err
    for bad in (
        "checkpoint-aws:",
        f"checkpoint-aws:{ref.table}?colour=red",
        f"checkpoint-aws:{ref.table}?missing=yes",
    ):
        code, _, err = run(*conn, "migrate", "--from", bad)
        assert code == 2 and "checkpoint-aws:TABLE[?bucket=" in err, (bad, err)
