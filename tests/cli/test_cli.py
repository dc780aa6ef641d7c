"""``langgraph-dynamodb`` against a moto server: every command, JSON output, exit codes.

Most tests call ``cli.main`` in-process with captured streams (fast); a few
run the console script / ``python -m`` in a subprocess, where the real
process boundary matters (exit status, signals, missing credentials).
"""

from __future__ import annotations

import io
import json
import operator
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import boto3
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli, schema
from langgraph.checkpoint.dynamodb.cli._base import ENV_BUCKET, ENV_TABLE
from langgraph.checkpoint.dynamodb.cli._stored_sizes import checkpoint_sizes
from langgraph.checkpoint.dynamodb.cli._thread_listing import thread_checkpoint_count
from langgraph.checkpoint.dynamodb.lock import ANY_CHECKPOINT, ThreadLease, run_once
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools import _inspection

BIN = Path(sys.executable).parent
RUNS: list[str] = []


class State(TypedDict, total=False):
    request: str
    answer: str
    artifact: str
    review: str
    done: Annotated[list[int], operator.add]
    summary: str


def _pm(state: State) -> dict[str, Any]:
    return {"answer": interrupt({"question": "Which format?"})}


def _backend(state: State) -> dict[str, Any]:
    RUNS.append("backend")
    rng = random.Random(7)  # incompressible enough to spill to S3 (> 64 KiB packed)
    return {"artifact": "".join(rng.choice("0123456789abcdef") for _ in range(200_000))}


def _frontend(state: State) -> dict[str, Any]:
    return {"review": f"UI for {state['answer']}"}


def _fan_out(state: State) -> list[Send]:
    return [Send("work", {"i": i}) for i in range(3)]


def _work(arg: dict[str, int]) -> dict[str, Any]:
    return {"done": [arg["i"]]}


def _collect(state: State) -> dict[str, Any]:
    return {"summary": f"{len(state['done'])} parts"}


def build_graph(saver: Any) -> Any:
    g = StateGraph(State)
    g.add_node("pm", _pm)
    g.add_node("backend", _backend)
    g.add_node("frontend", _frontend)
    g.add_node("join", lambda s: {})
    g.add_node("work", _work)
    g.add_node("collect", _collect)
    g.add_edge(START, "pm")
    g.add_edge("pm", "backend")
    g.add_edge("pm", "frontend")
    g.add_edge(["backend", "frontend"], "join")
    g.add_conditional_edges("join", _fan_out, ["work"])
    g.add_edge("work", "collect")
    g.add_edge("collect", END)
    return g.compile(checkpointer=saver)


@pytest.fixture
def store(moto_endpoint: str, names: dict[str, str]) -> Iterator[dict[str, Any]]:
    """A table + bucket with: a finished thread, a thread waiting at its interrupt."""
    with DynamoDBSaver(**names) as saver:
        saver.setup()
        graph = build_graph(saver)
        done, waiting = f"done-{uuid.uuid4().hex[:6]}", f"wait-{uuid.uuid4().hex[:6]}"
        graph.invoke({"request": "export"}, {"configurable": {"thread_id": done}}, durability="sync")
        graph.invoke(Command(resume="CSV"), {"configurable": {"thread_id": done}}, durability="sync")
        time.sleep(0.01)  # distinct activity times, whatever the clock resolution
        graph.invoke({"request": "import"}, {"configurable": {"thread_id": waiting}}, durability="sync")
        yield {"saver": saver, "graph": graph, "done": done, "waiting": waiting, **names}


def run(*argv: str, stdin: str = "", tty: bool = False) -> tuple[int, str, str]:
    """``cli.main`` in-process; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    inp = _TTY(stdin) if tty else io.StringIO(stdin)
    code = cli.main(list(argv), stdin=inp, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_json(*argv: str) -> Any:
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


def conn(store: dict[str, Any]) -> list[str]:
    return ["--table", store["table_name"], "--bucket", store["bucket_name"]]


# ----------------------------------------------------------------- history


def test_history_next_and_writes_match_get_state_history(store: dict[str, Any]) -> None:
    """What the CLI derives without the graph equals what LangGraph computes with it."""
    t = store["done"]
    rows = run_json(*conn(store), "history", t)["checkpoints"]
    snaps = list(store["graph"].get_state_history({"configurable": {"thread_id": t}}))
    assert [r["checkpoint_id"] for r in rows] == [s.config["configurable"]["checkpoint_id"] for s in snaps]
    by_id = {s.config["configurable"]["checkpoint_id"]: s for s in snaps}
    for row, snap in zip(rows, snaps, strict=True):
        assert sorted(t["name"] for t in row["next"]) == sorted(snap.next), row
        # Task ids too: Send tasks (PUSH) and node tasks (PULL) hash differently.
        assert {t["id"] for t in row["next"]} == {task.id for task in snap.tasks}, row
        assert row["step"] == snap.metadata["step"] and row["source"] == snap.metadata["source"]
        assert row["bytes"] and row["bytes"] > 0
        if row["source"] == "loop" and row["parent_id"]:
            parent = by_id[row["parent_id"]]
            ran = sorted({task.name for task in parent.tasks if task.result is not None})
            assert sorted(row["writes"]) == ran, (row["writes"], ran)
    writes = {n: ch for r in rows for n, ch in r["writes"].items()}
    assert writes["backend"] == ["artifact"] and writes["pm"] == ["answer"]
    assert writes["work"] == ["done"] and writes["collect"] == ["summary"]
    # The checkpoints that reference the S3-spilled artifact are the big ones.
    assert max(r["bytes"] for r in rows) > 64 * 1024


def test_history_human_table_and_options(store: dict[str, Any]) -> None:
    code, out, err = run(*conn(store), "history", store["waiting"])
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"thread {store['waiting']!r}: 2 checkpoint(s)")
    assert lines[1].split() == ["CHECKPOINT", "PARENT", "STEP", "SOURCE", "WRITES", "NEXT", "SIZE"]
    assert "pm (interrupted)" in lines[2]
    # aligned: every row's SOURCE cell starts under the SOURCE header
    col = lines[1].index("SOURCE")
    assert all(line[col:].startswith(("input", "loop")) for line in lines[2:])
    # global options may follow the command; --limit bounds the rows
    rows = run_json("history", store["done"], "--limit", "2", *conn(store), "--no-sizes")["checkpoints"]
    assert len(rows) == 2 and "bytes" not in rows[0]  # not computed: no key (docs/cli.md)
    assert run_json(*conn(store), "history", store["done"], "--all-namespaces")["checkpoint_ns"] is None


# ----------------------------------------------------------------- threads


def test_threads_scan_fallback_paginates_newest_first(store: dict[str, Any]) -> None:
    first = run_json(*conn(store), "threads", "--limit", "1")
    assert first["source"] == "scan" and "no thread heads" in first["note"]
    assert [t["thread_id"] for t in first["threads"]] == [store["waiting"]]
    assert first["threads"][0]["checkpoints"] == 2
    second = run_json(*conn(store), "threads", "--limit", "1", "--page-token", first["next_page_token"])
    assert [t["thread_id"] for t in second["threads"]] == [store["done"]]
    assert second["next_page_token"] is None
    code, out, _ = run(*conn(store), "threads")
    # The threads first, how they were found last (issue 39: not an opening "no thread heads" line).
    assert code == 0 and out.startswith("THREAD ") and out.splitlines()[-1].startswith("source: scan (")
    assert run(*conn(store), "threads", "--page-token", "garbage!")[0] == cli.EXIT_USAGE


def _put_head(store: dict[str, Any], thread_id: str, updated_ms: int, shards: int = 4) -> None:
    """A thread head as the saver's activity tracking writes it (schema contract)."""
    boto3.client("dynamodb").put_item(
        TableName=store["table_name"],
        Item={
            ATTR.PK: {"S": schema.partition_key(thread_id)},
            ATTR.SK: {"S": schema.HEAD_SK},
            ATTR.KIND: {"S": schema.META_ITEM},
            ATTR.FORMAT: {"N": str(schema.FORMAT_VERSION)},
            ATTR.THREAD_ID: {"S": thread_id},
            ATTR.THREAD_SHARD: {"S": schema.thread_shard(thread_id, shards)},
            ATTR.UPDATED_AT: {"N": str(updated_ms)},
            schema.TTL_ATTRIBUTE: {"N": str(updated_ms // 1000 + 86400)},
        },
    )


def test_threads_from_heads_index_merges_shards_across_pages(store: dict[str, Any]) -> None:
    base = 1_800_000_000_000
    ids = [f"head-{i}" for i in range(9)]
    for i, t in enumerate(ids):
        _put_head(store, t, base + i * 1000)
    assert len({schema.thread_shard(t) for t in ids}) > 1  # really spread over shards
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        args = [*conn(store), "threads", "--limit", "2"] + (["--page-token", token] if token else [])
        page = run_json(*args)
        assert page["source"] == "index"
        assert len(page["threads"]) <= 2
        seen += [t["thread_id"] for t in page["threads"]]
        pages += 1
        token = page["next_page_token"]
        if not token:
            break
        assert pages < 20
    assert seen == list(reversed(ids))  # newest activity first, each once
    scan = run_json(*conn(store), "threads", "--source", "scan")
    assert scan["source"] == "scan" and {t["thread_id"] for t in scan["threads"]} == {
        store["done"],
        store["waiting"],
    }


def _list_all(store: dict[str, Any], limit: int) -> tuple[list[str], int]:
    seen: list[str] = []
    token, pages = None, 0
    while True:
        page = run_json(
            *conn(store), "threads", "--limit", str(limit), *(["--page-token", token] if token else [])
        )
        assert page["source"] == "index"
        seen += [t["thread_id"] for t in page["threads"]]
        pages += 1
        token = page["next_page_token"]
        if not token:
            return seen, pages
        assert pages < 40


def test_threads_listing_covers_every_shard_the_layout_records(store: dict[str, Any]) -> None:
    """After the index grew to 16 shards, heads written with 4 (older writers) and 16 are each listed once."""
    ddb = boto3.client("dynamodb")
    layout = {ATTR.PK: {"S": schema.LAYOUT_PK}, ATTR.SK: {"S": schema.THREADS_LAYOUT_SK}}
    base = 1_800_000_100_000
    old = [f"old-{i}" for i in range(10)]
    new = [f"new-{i}" for i in range(10)]
    ddb.put_item(TableName=store["table_name"], Item={**layout, "n": {"N": "16"}})
    try:
        for i, t in enumerate(old):
            _put_head(store, t, base + 2 * i * 1000, shards=4)
        for i, t in enumerate(new):
            _put_head(store, t, base + (2 * i + 1) * 1000, shards=16)
        assert max(int(schema.thread_shard(t, 16)) for t in new) >= 4  # really past the old shards
        seen, pages = _list_all(store, 3)
        ours = [t for t in seen if t.startswith(("old-", "new-"))]
        expected = [t for pair in zip(reversed(new), reversed(old), strict=True) for t in pair]
        assert ours == expected  # newest first across all 16 shards, each once
        assert pages >= 7
    finally:
        ddb.delete_item(TableName=store["table_name"], Key=layout)
        for t in old + new:
            ddb.delete_item(
                TableName=store["table_name"],
                Key={ATTR.PK: {"S": schema.partition_key(t)}, ATTR.SK: {"S": schema.HEAD_SK}},
            )


# ------------------------------------------------------------- show / diff


def test_one_short_id_is_printed_and_accepted_back(store: dict[str, Any]) -> None:
    """The short form (an id's last 12 characters) the CLI, the inspector and the demo print."""
    from demo.main import _short as demo_short

    from langgraph.checkpoint.dynamodb.cli._render import short_id
    from langgraph.checkpoint.dynamodb.cli._ui_pages import sid as ui_short

    rows = run_json(*conn(store), "history", store["done"])["checkpoints"]
    first = rows[-1]["checkpoint_id"]
    short = short_id(first)
    assert len(short) == 12 and first.endswith(short) and demo_short(first) == ui_short(first) == short
    by_suffix = run_json(*conn(store), "show", store["done"], short)
    assert by_suffix["checkpoint_id"] == first
    # The human history prints each row's parent in that form.
    code, out, _ = run(*conn(store), "history", store["done"], "--no-sizes")
    assert code == 0 and short in out.splitlines()[-2]  # the second-oldest row's parent
    # A reference that several ids start or end with is refused, naming them.
    code, _, err = run(*conn(store), "show", store["done"], first[:4])
    assert code == cli.EXIT_USAGE and "ambiguous" in err and rows[0]["checkpoint_id"] in err


def test_history_marks_where_a_thread_forked(store: dict[str, Any]) -> None:
    graph, thread = store["graph"], store["done"]
    history = list(graph.get_state_history({"configurable": {"thread_id": thread}}))
    old = history[-2].config  # an early checkpoint, travelled back to
    graph.update_state(old, {"request": "changed"})
    rows = run_json(*conn(store), "history", thread)["checkpoints"]
    forked = {r["parent_id"] for r in rows if r["parent_id"]}
    siblings = [r for r in rows if r["parent_id"] == old["configurable"]["checkpoint_id"]]
    assert len(siblings) == 2 and forked
    code, out, _ = run(*conn(store), "history", thread, "--no-sizes")
    marked = [line for line in out.splitlines() if "(fork)" in line]
    assert code == 0 and len(marked) == 2  # both children of the fork point
    assert all(out.count(r["checkpoint_id"]) >= 1 for r in siblings)


def test_show_latest_and_by_prefix(store: dict[str, Any]) -> None:
    shown = run_json(*conn(store), "show", store["waiting"])
    assert shown["values"] == {"request": "import"}
    assert shown["interrupts"] == [{"question": "Which format?"}]
    assert [t["name"] for t in shown["next"]] == ["pm"] and shown["next"][0]["status"] == "interrupted"

    rows = run_json(*conn(store), "history", store["done"])["checkpoints"]
    first = rows[-1]["checkpoint_id"]
    by_prefix = run_json(*conn(store), "show", store["done"], first[:-4])
    assert by_prefix["checkpoint_id"] == first and by_prefix["source"] == "input"

    code, out, _ = run(*conn(store), "show", store["done"])
    assert code == 0
    assert "artifact" in out and "str[200000]" in out and "summary" in out
    code, out, _ = run(*conn(store), "show", store["done"], "--full")
    assert len(out) > 200_000


def test_diff_reports_channel_changes(store: dict[str, Any]) -> None:
    rows = run_json(*conn(store), "history", store["done"])["checkpoints"]
    oldest, newest = rows[-1]["checkpoint_id"], rows[0]["checkpoint_id"]
    d = run_json(*conn(store), "diff", store["done"], oldest, "latest")
    assert d["a"]["checkpoint_id"] == oldest and d["b"]["checkpoint_id"] == newest
    changes = {c["channel"]: c["change"] for c in d["changes"]}
    assert changes["answer"] == "added" and changes["summary"] == "added" and changes["artifact"] == "added"
    assert not any(c.startswith(("branch:", "__")) for c in changes)
    same = run_json(*conn(store), "diff", store["done"], newest, newest)
    assert same["changes"] == []
    code, out, _ = run(*conn(store), "diff", store["done"], oldest, newest)
    assert code == 0 and "CHANNEL" in out and "added" in out


def test_a_single_value_state_is_shown_and_diffed(moto_endpoint: str, names: dict[str, str]) -> None:
    """``StateGraph(dict)`` (the README's Quick start) keeps its state in ``__root__``: a state channel, not control."""
    with DynamoDBSaver(**names) as saver:
        saver.setup()
        builder = StateGraph(dict)
        builder.add_node("hello", lambda state: {"greeting": "hi"})
        builder.add_edge(START, "hello")
        graph = builder.compile(checkpointer=saver)
        thread = f"root-{uuid.uuid4().hex[:6]}"
        graph.invoke({"name": "x"}, {"configurable": {"thread_id": thread}})
        where = ["--table", names["table_name"], "--bucket", names["bucket_name"]]
        shown = run_json(*where, "show", thread)
        assert shown["values"] == {"__root__": {"greeting": "hi"}}
        code, out, err = run(*where, "show", thread, "--channel", "__root__")
        assert code == 0, err
        assert "greeting" in out
        rows = run_json(*where, "history", thread)["checkpoints"]
        d = run_json(*where, "diff", thread, rows[-1]["checkpoint_id"], "latest")
        assert {c["channel"]: c["change"] for c in d["changes"]} == {"__root__": "added"}


# ---------------------------------------------- copy / prune / delete / stats


def count(store: dict[str, Any], thread_id: str) -> int:
    return thread_checkpoint_count(store["saver"], thread_id)


def test_copy(store: dict[str, Any]) -> None:
    src, dst = store["done"], f"copy-{uuid.uuid4().hex[:6]}"
    out = run_json(*conn(store), "copy", src, dst)
    assert out["target_checkpoints"] == out["source_checkpoints"] == count(store, src)
    assert run_json(*conn(store), "show", dst)["values"]["summary"] == "3 parts"
    code, _, err = run(*conn(store), "copy", src, store["waiting"])
    assert code == cli.EXIT_REFUSED and "delete it first" in err
    assert run(*conn(store), "copy", "no-such-thread", "x")[0] == cli.EXIT_NOT_FOUND


def test_prune_needs_confirmation_and_keeps_latest(store: dict[str, Any]) -> None:
    t = store["done"]
    before = count(store, t)
    latest = run_json(*conn(store), "show", t)
    code, _, err = run(*conn(store), "prune", t, "--keep-last", "2")  # stdin is not a TTY
    assert code == cli.EXIT_REFUSED and "--yes" in err
    assert count(store, t) == before
    code, _, err = run(*conn(store), "prune", t, "--keep-last", "2", tty=True, stdin="no\n")
    assert code == cli.EXIT_REFUSED and count(store, t) == before

    out = run_json(*conn(store), "prune", t, "--keep-last", "2", "--yes")
    assert out["threads"] == [{"thread_id": t, "checkpoints_before": before, "checkpoints_after": 2}]
    assert out["result"]["checkpoints_deleted"] == before - 2
    assert run_json(*conn(store), "show", t)["values"] == latest["values"]
    code, out_text, _ = run(*conn(store), "prune", t, "--strategy", "keep_latest", tty=True, stdin="y\n")
    assert code == 0 and count(store, t) == 1 and "BEFORE" in out_text
    assert run(*conn(store), "prune", t, "nope", "--yes")[0] == cli.EXIT_NOT_FOUND
    assert count(store, t) == 1  # nothing happens when one thread is unknown
    rows = run_json(*conn(store), "history", t)["checkpoints"]
    assert rows[0]["parent_missing"] is True and rows[0]["writes"] == {}


def test_delete_confirmation(store: dict[str, Any]) -> None:
    t = store["waiting"]
    code, _, err = run(*conn(store), "delete", t)
    assert code == cli.EXIT_REFUSED and "not a terminal" in err
    code, _, err = run(*conn(store), "delete", t, tty=True, stdin="\n")
    assert code == cli.EXIT_REFUSED and count(store, t) == 2
    code, _, err = run(*conn(store), "delete", t, tty=True, stdin="yes\n")
    assert code == 0 and "delete thread" in err and count(store, t) == 0
    assert run(*conn(store), "delete", t, "--yes")[0] == cli.EXIT_NOT_FOUND
    code, _, err = run(*conn(store), "history", t, "--json")
    assert code == cli.EXIT_NOT_FOUND and json.loads(err)["error"] == "thread_not_found"


def test_stats_counts_everything(store: dict[str, Any]) -> None:
    saver: DynamoDBSaver = store["saver"]
    t = store["done"]
    run_once(saver, t, "req-1", ANY_CHECKPOINT, lambda: "ok")
    with ThreadLease(saver, t, heartbeat=False):
        stats = run_json(*conn(store), "stats")
        items = list(_inspection.scan(saver))
    assert stats["dynamodb"]["items"] == len(items)
    kinds = stats["dynamodb"]["by_kind"]
    assert kinds["lock"]["items"] == 1 and kinds["request"]["items"] == 1
    assert (
        kinds["checkpoint"]["items"]
        == stats["checkpoints"]
        == count(store, t) + count(store, store["waiting"])
    )
    assert stats["threads"] == 2
    objects = boto3.client("s3").list_objects_v2(Bucket=store["bucket_name"]).get("Contents", [])
    assert stats["s3"]["objects"] == len(objects) > 0
    assert stats["s3"]["by_kind"]["value"]["bytes"] > 64 * 1024
    one = run_json(*conn(store), "stats", "--thread", store["waiting"])
    assert one["threads"] == 1 and one["checkpoints"] == 2 and one["s3"]["objects"] == 0
    code, out, _ = run(*conn(store), "stats")
    assert code == 0 and "DynamoDB:" in out and "checkpoint" in out and "S3 s3://" in out


# ------------------------------------------------------------------ errors


def test_configuration_errors(store: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = run("--table", "no-such-table", "threads")
    assert code == cli.EXIT_USAGE and "'no-such-table' does not exist" in err
    code, _, err = run("--table", "no-such-table", "threads", "--json")
    assert json.loads(err) == {
        "error": "table_not_found",
        "message": json.loads(err)["message"],
        "exit_code": cli.EXIT_USAGE,
    }
    monkeypatch.delenv(ENV_TABLE, raising=False)
    code, _, err = run("threads")
    assert code == cli.EXIT_USAGE and "--table" in err
    monkeypatch.setenv(ENV_TABLE, store["table_name"])
    monkeypatch.setenv(ENV_BUCKET, store["bucket_name"])
    assert run("threads")[0] == 0  # from the environment
    assert run("history")[0] == cli.EXIT_USAGE  # argparse: missing THREAD
    assert run("frobnicate")[0] == cli.EXIT_USAGE
    assert run("history", "t", "--limit", "0")[0] == cli.EXIT_USAGE
    assert run("show", store["done"], "ffffffff")[0] == cli.EXIT_NOT_FOUND
    assert run("--bucket", "no-such-bucket", "stats")[0] == cli.EXIT_USAGE
    code, out, _ = run("--help")
    assert code == 0 and "exit codes" in out


def _child_env(moto_endpoint: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        {
            "AWS_ENDPOINT_URL": moto_endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    env.update(extra)
    return env


def test_console_script_and_module_entry(store: dict[str, Any], moto_endpoint: str) -> None:
    env = _child_env(moto_endpoint, LANGGRAPH_DYNAMODB_TABLE=store["table_name"])
    proc = subprocess.run(
        [str(BIN / "langgraph-dynamodb"), "threads", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["source"] == "scan"
    proc = subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.dynamodb", "history", "nope"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == cli.EXIT_NOT_FOUND and "not found" in proc.stderr


def test_no_credentials_exit_3(store: dict[str, Any], moto_endpoint: str) -> None:
    env = _child_env(moto_endpoint, LANGGRAPH_DYNAMODB_TABLE=store["table_name"])
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(key)
    proc = subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.dynamodb", "threads", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == cli.EXIT_CREDENTIALS, proc.stderr
    assert json.loads(proc.stderr)["error"] == "no_credentials"


def test_encrypted_threads_need_the_key(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    monkeypatch.setenv("LANGGRAPH_AES_KEY", "0123456789abcdef0123456789abcdef")
    with DynamoDBSaver(**names, serde=EncryptedSerializer.from_pycryptodome_aes()) as saver:
        saver.setup()
        build_graph(saver).invoke({"request": "secret"}, {"configurable": {"thread_id": "enc"}})
    args = ["--table", names["table_name"], "--bucket", names["bucket_name"]]
    assert run_json(*args, "--encrypted", "show", "enc")["values"] == {"request": "secret"}
    code, _, err = run(*args, "show", "enc")
    assert code == cli.EXIT_ERROR and "Error" in err


def test_encrypted_reads_with_a_key_ring_after_rotation(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--encrypted`` takes the key ring of LANGGRAPH_AES_KEYS: one thread written under two keys reads whole."""
    import base64

    from langgraph.checkpoint.dynamodb.encryption import AesKeyRing

    k1, k2 = (base64.b64encode(os.urandom(32)).decode() for _ in range(2))
    with DynamoDBSaver(
        **names, serde=AesKeyRing.from_env({"LANGGRAPH_AES_KEYS": f"k1:{k1}"}).serializer()
    ) as old:
        old.setup()
        build_graph(old).invoke({"request": "first"}, {"configurable": {"thread_id": "rot"}})
    rotated = AesKeyRing.from_env({"LANGGRAPH_AES_KEYS": f"k2:{k2},k1:{k1}"})
    with DynamoDBSaver(**names, serde=rotated.serializer()) as new:
        build_graph(new).invoke({"request": "second"}, {"configurable": {"thread_id": "rot"}})
    args = ["--table", names["table_name"], "--bucket", names["bucket_name"]]
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    monkeypatch.setenv("LANGGRAPH_AES_KEYS", f"k2:{k2},k1:{k1}")
    assert run_json(*args, "--encrypted", "show", "rot")["values"] == {"request": "second"}
    assert len(run_json(*args, "--encrypted", "history", "rot")["checkpoints"]) >= 4
    monkeypatch.setenv("LANGGRAPH_AES_KEYS", f"k2:{k2}")  # k1 dropped too early
    code, _, err = run(*args, "--encrypted", "history", "rot")
    assert code == cli.EXIT_ERROR and "k1" in err


# ------------------------------------------------------------------- local


def test_local_serves_until_interrupted(tmp_path: Path) -> None:
    env_file = tmp_path / "local.env"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "langgraph.checkpoint.dynamodb",
            "local",
            "--json",
            "--table",
            "local-table",
            "--env-file",
            str(env_file),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        info = json.loads(proc.stdout.readline())
        assert info["endpoint_url"].startswith("http://127.0.0.1:")
        assert info["env"]["AWS_ACCESS_KEY_ID"] == "testing" and info["table"] == "local-table"
        lines = env_file.read_text().splitlines()
        assert f"export AWS_ENDPOINT_URL={info['endpoint_url']}" in lines
        assert "export LANGGRAPH_DYNAMODB_TABLE=local-table" in lines
        ddb = boto3.client(
            "dynamodb",
            endpoint_url=info["endpoint_url"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        assert ddb.describe_table(TableName="local-table")["Table"]["TableStatus"] == "ACTIVE"
        child = subprocess.run(
            [sys.executable, "-m", "langgraph.checkpoint.dynamodb", "stats", "--json"],
            env={**env, **info["env"]},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.returncode == 0, child.stderr
        assert json.loads(child.stdout)["s3"]["bucket"] == info["bucket"]
        ddb.close()  # an open keep-alive connection would hold the server's shutdown
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_local_refuses_non_loopback() -> None:
    code, _, err = run("local", "--host", "0.0.0.0")
    assert code == cli.EXIT_USAGE and "loopback" in err


def test_local_port_in_use() -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        code, _, err = run("local", "--port", str(busy.getsockname()[1]))
    assert code == cli.EXIT_USAGE and "cannot listen" in err


def test_tenant_prefix_scopes_every_command(moto_endpoint: str, names: dict[str, str]) -> None:
    for tenant in ("acme-", "globex-"):
        with DynamoDBSaver(**names, tenant_prefix=tenant) as saver:
            saver.setup()
            build_graph(saver).invoke({"request": tenant}, {"configurable": {"thread_id": "t1"}})
    base = ["--table", names["table_name"], "--bucket", names["bucket_name"]]
    acme = [*base, "--tenant-prefix", "acme-"]
    assert [t["thread_id"] for t in run_json(*acme, "threads")["threads"]] == ["t1"]
    # Without a prefix, only untenanted threads: tenants are disjoint from them.
    assert run_json(*base, "threads")["threads"] == []
    assert run_json(*acme, "show", "t1")["values"] == {"request": "acme-"}
    assert len(run_json(*acme, "history", "t1")["checkpoints"]) == 2
    stats = run_json(*acme, "stats")
    assert stats["threads"] == 1 and stats["checkpoints"] == 2
    assert run_json(*base, "stats")["checkpoints"] == 0
    assert run_json(*base, "stats")["s3"]["objects"] == 0
    assert run(*base, "history", "t1")[0] == cli.EXIT_NOT_FOUND  # no such thread without the prefix
    out = run_json(*acme, "copy", "t1", "t2")
    assert out["target_checkpoints"] == 2
    assert sorted(t["thread_id"] for t in run_json(*acme, "threads")["threads"]) == ["t1", "t2"]
    assert run(*base, "--tenant-prefix", "bad|prefix", "threads")[0] == cli.EXIT_USAGE


def test_threads_index_with_heads_written_by_the_saver(moto_endpoint: str, names: dict[str, str]) -> None:
    with DynamoDBSaver(**names, ttl=3600) as saver:  # a TTL turns thread heads on
        saver.setup()
        graph = build_graph(saver)
        for t in ("older", "newer"):
            graph.invoke({"request": t}, {"configurable": {"thread_id": t}})
            time.sleep(0.02)
    page = run_json("--table", names["table_name"], "--bucket", names["bucket_name"], "threads")
    assert page["source"] == "index", page
    assert [t["thread_id"] for t in page["threads"]] == ["newer", "older"]
    assert all(t["expires_at"] for t in page["threads"])
    stats = run_json("--table", names["table_name"], "stats")
    assert stats["dynamodb"]["by_kind"]["thread head"]["items"] == 2


def test_sizes_count_values_held_by_an_earlier_checkpoint(moto_endpoint: str, names: dict[str, str]) -> None:
    """A checkpoint that references a large value held by its parent is as big as the parent."""
    import base64

    from tests.support.harness import checkpoint_of

    saver = DynamoDBSaver(table_name=names["table_name"])
    saver.setup()
    big = base64.b64encode(random.Random(4).randbytes(20_000)).decode()
    parent: Any = {"configurable": {"thread_id": "sized", "checkpoint_ns": ""}}
    ids = []
    for new in ({"big": "1"}, {}):
        cp = checkpoint_of({"big": big})
        parent = saver.put(parent, cp, {}, new)
        ids.append(cp["id"])
    sizes = checkpoint_sizes(saver, "sized")
    holder, referrer = sizes[("", ids[0])], sizes[("", ids[1])]
    assert holder > 20_000 and abs(holder - referrer) < 200, sizes
    saver.close()
