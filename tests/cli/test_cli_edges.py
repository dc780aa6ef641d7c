"""The CLI's edges, used as a new user and a careless or hostile one would.

Pipes closed early, ids with spaces and control characters, wide characters,
forged page tokens, a copy onto itself, subgraph namespaces, resumed
interrupts, branches from checkpoint ids that never existed; and the habits
people expect: --version, colour on a terminal only, progress on stderr,
thread filters, one channel's value. Against the moto server, through
``cli.main`` and, where the process boundary matters, the console script.
"""

from __future__ import annotations

import base64
import importlib.metadata
import io
import json
import operator
import shlex
import shutil
import subprocess
import time
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli, schema
from langgraph.checkpoint.dynamodb.cli._render import display_width, shell_quote, short
from langgraph.checkpoint.dynamodb.cli._tasks import task_statuses
from langgraph.checkpoint.dynamodb.cli._thread_listing import thread_checkpoint_count
from tests.cli.test_cli import _TTY, BIN, _child_env, _put_head, build_graph, conn, run, run_json, store

__all__ = ["store"]  # the fixture, shared with test_cli.py

ESC = "\x1b["


def _token(state: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(state).encode()).decode().rstrip("=")


def run_tty(*argv: str, stdout_tty: bool = True, stderr_tty: bool = False) -> tuple[int, str, str]:
    """``cli.main`` with stdout and/or stderr that claim to be terminals."""
    out: io.StringIO = _TTY() if stdout_tty else io.StringIO()
    err: io.StringIO = _TTY() if stderr_tty else io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# -------------------------------------------------------------- broken pipe


def test_output_closed_early_exits_quietly(store: dict[str, Any], moto_endpoint: str) -> None:
    """`langgraph-dynamodb show T --full | head -1`: rc 141 like a Unix tool, no traceback, no error."""
    env = _child_env(
        moto_endpoint,
        LANGGRAPH_DYNAMODB_TABLE=store["table_name"],
        LANGGRAPH_DYNAMODB_BUCKET=store["bucket_name"],
    )
    # --full prints a 200,000-character value: far more than a pipe buffers.
    proc = subprocess.Popen(
        [str(BIN / "langgraph-dynamodb"), "show", store["done"], "--full"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does after its line
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    assert first.startswith(b"thread")
    assert code == 141, err  # cli.EXIT_PIPE: what a shell reports for a tool killed by SIGPIPE
    assert "Traceback" not in err and "BrokenPipe" not in err and "error" not in err, err


# ---------------------------------------------------------------------- ids

ODD_IDS = ["  padded id ", "tab\tid", "new\nline", "it's", "plain-id", "用户-线程", "🚀 launch"]


def test_ids_are_shown_exactly_and_paste_back(moto_endpoint: str, names: dict[str, str]) -> None:
    with DynamoDBSaver(**names) as saver:
        saver.setup()
        graph = build_graph(saver)
        for tid in ODD_IDS:
            graph.invoke({"request": tid}, {"configurable": {"thread_id": tid}}, durability="sync")
    base = ["--table", names["table_name"], "--bucket", names["bucket_name"]]
    code, out, err = run(*base, "threads")
    assert code == 0, err
    rows = out.splitlines()[1:-1]  # the header first, the source line last
    assert len(rows) == len(ODD_IDS)
    bash = shutil.which("bash")
    assert bash is not None
    shown_ids = []
    for line in rows:
        # The row starts with the id as one shell word; what bash reads back is the id.
        word = _first_word(line)
        back = subprocess.run([bash, "-c", f"printf %s {word}"], capture_output=True, check=True).stdout
        shown_ids.append(back.decode())
    assert sorted(shown_ids) == sorted(ODD_IDS)
    assert "plain-id" in [line.split()[0] for line in rows]  # plain ids stay bare
    for tid in ODD_IDS:  # and each id, pasted back, names its thread
        shown = run_json(*base, "show", tid)
        assert shown["values"]["request"] == tid
        code, out, _ = run(*base, "history", tid)
        assert code == 0 and out.startswith(f"thread {shell_quote(tid)}:")
    code, _, err = run(*base, "show", "  padded id")  # a near miss is not found, and the message says which
    assert code == cli.EXIT_NOT_FOUND and "'  padded id'" in err


def _first_word(line: str) -> str:
    """The leading shell word of a table row, as shown (bare, '...' or $'...')."""
    if not line.startswith("$'"):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=False)
        lexer.whitespace_split = True
        first = next(iter(lexer))
        return shlex.quote(first)  # re-quoted: bash reads it back as the same word
    end = 2
    while line[end] != "'":
        end += 2 if line[end] == "\\" else 1
    return line[: end + 1]


def test_wide_and_combining_characters_keep_columns_aligned(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    ids = ["日本語のスレッド", "e\u0301te\u0301", "ascii-thread", "🚀🚀"]
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    for i, tid in enumerate(ids):
        _put_head(names, tid, 1_800_000_000_000 + i * 1000)
    code, out, err = run("--table", names["table_name"], "threads")
    assert code == 0, err
    lines = out.splitlines()[:-1]  # the source line is last
    col = lines[0].index("LAST ACTIVITY")  # the header is ASCII: characters are columns
    page = run_json("--table", names["table_name"], "threads")["threads"]
    assert len(page) == len(ids)
    for line, row in zip(lines[1:], page, strict=True):
        start = line.index(row["updated_at"])
        assert _columns(line[:start]) == col, line
    assert _columns(short("日本語" * 10, 10)) <= 10
    assert _columns(short("e\u0301" * 20, 10)) == 10  # combining marks take no column


def _columns(text: str) -> int:
    """Terminal columns, measured independently of the CLI's own helper."""
    import unicodedata

    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in text
    )


# ------------------------------------------------------------- copy / token


def test_copy_onto_itself_is_refused(store: dict[str, Any]) -> None:
    t = store["done"]
    before = thread_checkpoint_count(store["saver"], t)
    code, out, err = run(*conn(store), "copy", t, t)
    assert code == cli.EXIT_USAGE and "onto itself" in err and out == "", err
    assert "delete" not in err  # the old advice would have deleted the source
    code, _, err = run(*conn(store), "copy", t, t, "--json")
    assert json.loads(err)["error"] == "same_thread"
    assert thread_checkpoint_count(store["saver"], t) == before


BAD_TOKENS = [
    "garbage!",
    base64.urlsafe_b64encode(b"\xff\xfe\xfd\xfc").decode(),  # not UTF-8
    _token([1, 2]),
    _token({"v": 1, "src": "bogus"}),
    _token({"v": 1, "src": "scan", "o": "ten"}),
    _token({"v": 1, "src": "scan", "o": -5}),
    _token({"v": 1, "src": "index", "s": {"0": {"PK": {"S": "x"}}}}),
    _token({"v": 1, "src": "index", "s": {"0": "x", "1": None, "2": None, "3": None}}),
    _token({"v": 1, "src": "scan", "o": 0, "f": {"p": 7}}),
]


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_bad_page_tokens_are_usage_errors(store: dict[str, Any], token: str) -> None:
    code, out, err = run(*conn(store), "threads", "--page-token", token)
    assert code == cli.EXIT_USAGE and out == "", err
    assert err.startswith("error: invalid page token"), err
    for leak in ("codec", "base64", "Traceback", "unexpected", "utf-8", "JSON", "Expecting"):
        assert leak not in err, err
    code, _, err = run(*conn(store), "threads", "--page-token", token, "--json")
    assert json.loads(err)["error"] == "bad_page_token"


# ------------------------------------------------------------------- sizes


def test_show_gives_sizes_and_no_sizes_drops_the_column(store: dict[str, Any]) -> None:
    t = store["done"]
    history = run_json(*conn(store), "history", t)["checkpoints"]
    shown = run_json(*conn(store), "show", t)
    assert isinstance(shown["bytes"], int) and shown["bytes"] == history[0]["bytes"] > 64 * 1024
    oldest = history[-1]["checkpoint_id"]
    assert run_json(*conn(store), "show", t, oldest)["bytes"] == history[-1]["bytes"]
    assert "bytes" not in run_json(*conn(store), "show", t, "--no-sizes")
    code, out, _ = run(*conn(store), "show", t)
    assert code == 0 and any(line.startswith("size ") and "KiB" in line for line in out.splitlines())

    code, out, _ = run(*conn(store), "history", t, "--no-sizes")
    header = out.splitlines()[1]
    assert code == 0 and header.split() == ["CHECKPOINT", "PARENT", "STEP", "SOURCE", "WRITES", "NEXT"]
    # No SIZE column, and no empty cell for it (the oldest row's NEXT is not "-").
    assert "SIZE" not in out and not out.splitlines()[-1].endswith("  -")
    code, out, _ = run(*conn(store), "history", t)
    assert out.splitlines()[1].split()[-1] == "SIZE"


# ------------------------------------------------------------------- local


def test_local_help_shows_only_its_own_options() -> None:
    code, out, _ = run("local", "--help")
    assert code == 0
    for own in ("--host", "--port", "--env-file", "--table", "--bucket", "--region", "--json"):
        assert own in out, own
    for moot in ("--endpoint-url", "--profile", "--tenant-prefix", "--encrypted"):
        assert moot not in out, moot
    code, _, err = run("--endpoint-url", "http://127.0.0.1:1", "local")
    assert code == cli.EXIT_USAGE and "does not apply to `local`" in err
    code, _, err = run("local", "--profile", "x")
    assert code == cli.EXIT_USAGE  # argparse: not one of local's options


# ------------------------------------------------------------------- stats


class Sub(TypedDict, total=False):
    item: int
    out: Annotated[list[int], operator.add]


class Parent(TypedDict, total=False):
    out: Annotated[list[int], operator.add]


def _sub_graph() -> Any:
    sg = StateGraph(Sub)
    sg.add_node("double", lambda s: {"out": [s["item"] * 2]})
    sg.add_edge(START, "double")
    sg.add_edge("double", END)
    return sg.compile()


def test_stats_counts_subgraphs_not_runs_or_threads(moto_endpoint: str, names: dict[str, str]) -> None:
    """Two threads, each running one subgraph three times (Send): 2 namespaces (root, the subgraph)."""
    g = StateGraph(Parent)
    g.add_node("work", _sub_graph())
    g.add_conditional_edges(START, lambda s: [Send("work", {"item": i}) for i in range(3)], ["work"])
    g.add_edge("work", END)
    with DynamoDBSaver(**names) as saver:
        saver.setup()
        graph = g.compile(checkpointer=saver)
        for t in ("sg-1", "sg-2"):
            assert graph.invoke({"out": []}, {"configurable": {"thread_id": t}})["out"] in (
                [0, 2, 4],
                [4, 2, 0],
            )
        stored = {
            tup.config["configurable"]["checkpoint_ns"]
            for tup in saver.list({"configurable": {"thread_id": "sg-1"}})
        }
    assert len(stored) == 4  # the root and three subgraph runs: what used to be counted, per thread
    base = ["--table", names["table_name"], "--bucket", names["bucket_name"]]
    stats = run_json(*base, "stats")
    assert stats["threads"] == 2
    assert stats["namespaces"] == 2 and stats["subgraphs"] == ["work"] and stats["subgraph_runs"] == 6
    one = run_json(*base, "stats", "--thread", "sg-1")
    assert one["namespaces"] == 2 and one["subgraph_runs"] == 3
    code, out, _ = run(*base, "stats")
    assert code == 0 and "2 namespace(s) (subgraphs work: 6 run(s))" in out.splitlines()[0]
    listed = run_json(*base, "threads", "--source", "scan")["threads"]
    assert [t["namespaces"] for t in listed] == [2, 2]


# ---------------------------------------------------------------- labels


def test_resumed_interrupt_reads_resumed(store: dict[str, Any]) -> None:
    rows = run_json(*conn(store), "history", store["done"])["checkpoints"]
    pm = [t for r in rows for t in r["next"] if t["name"] == "pm"]
    assert [t["status"] for t in pm] == ["resumed"]
    code, out, _ = run(*conn(store), "history", store["done"])
    assert code == 0 and "pm (resumed)" in out and "(interrupted)" not in out
    step0 = next(r for r in rows if any(t["name"] == "pm" for t in r["next"]))
    code, out, _ = run(*conn(store), "show", store["done"], step0["checkpoint_id"])
    assert code == 0 and 'interrupt   (answered) {"question": "Which format?"}' in out
    assert "next        pm (resumed)" in out
    waiting = run_json(*conn(store), "history", store["waiting"])["checkpoints"]
    assert [t["status"] for r in waiting for t in r["next"] if t["name"] == "pm"] == ["interrupted"]


class Two(TypedDict, total=False):
    a: str


def _ask_twice(state: Two) -> dict[str, Any]:
    return {"a": interrupt("first?") + interrupt("second?")}


def test_a_node_interrupting_twice_is_interrupted_until_it_finishes(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    g = StateGraph(Two)
    g.add_node("ask", _ask_twice)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    base = ["--table", names["table_name"], "--bucket", names["bucket_name"]]

    def status() -> list[str]:
        rows = run_json(*base, "history", "two")["checkpoints"]
        return [t["status"] for r in rows for t in r["next"] if t["name"] == "ask"]

    with DynamoDBSaver(**names) as saver:
        saver.setup()
        graph = g.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": "two"}}
        graph.invoke({"a": ""}, config, durability="sync")
        assert status() == ["interrupted"]
        graph.invoke(Command(resume="x"), config, durability="sync")  # answered once, asks again
        assert status() == ["interrupted"]
        graph.invoke(Command(resume="y"), config, durability="sync")
        assert status() == ["resumed"]
        assert graph.get_state(config).values == {"a": "xy"}


def test_parent_labels_tell_pruned_from_never_existed(store: dict[str, Any]) -> None:
    graph, saver = store["graph"], store["saver"]
    ghost = "1f0c3a3e-8d1b-6b5e-8001-0242ac120002"  # a well-formed id no checkpoint ever had
    branch = f"branch-{uuid.uuid4().hex[:6]}"
    graph.invoke({"request": "x"}, {"configurable": {"thread_id": branch, "checkpoint_id": ghost}})
    code, out, _ = run(*conn(store), "history", branch)
    assert "? (parent never existed)" in out and "pruned" not in out
    rows = run_json(*conn(store), "history", branch)["checkpoints"]
    assert rows[-1]["parent_id"] == ghost and rows[-1]["parent_missing"] is True
    assert rows[-1]["parent_missing_reason"] == "never_existed"
    assert all(r["parent_missing_reason"] is None for r in rows[:-1])
    code, out, _ = run(*conn(store), "show", branch, rows[-1]["checkpoint_id"])
    assert "written by  ? (parent never existed)" in out

    t = store["done"]
    saver.prune([t], keep_last=2)
    code, out, _ = run(*conn(store), "history", t)
    assert code == 0 and "? (parent pruned)" in out
    rows = run_json(*conn(store), "history", t)["checkpoints"]
    assert rows[-1]["parent_missing_reason"] == "pruned"


# ------------------------------------------------------------------ habits


def test_version_needs_no_aws(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = f"langgraph-dynamodb {importlib.metadata.version('langgraph-checkpoint-dynamodb-s3')}\n"
    code, out, _ = run("--version")
    assert (code, out) == (0, expected)
    env = {k: v for k, v in _child_env(moto_endpoint).items() if not k.startswith("AWS_")}
    proc = subprocess.run(
        [str(BIN / "langgraph-dynamodb"), "--version"], env=env, capture_output=True, text=True, timeout=60
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, expected, "")


def test_colour_only_on_a_terminal_and_never_in_json(
    store: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    args = [*conn(store), "history", store["waiting"]]
    code, out, _ = run(*args)  # not a terminal
    assert code == 0 and ESC not in out
    code, out, _ = run_tty(*args)  # a terminal
    assert out.splitlines()[1].startswith(f"{ESC}1mCHECKPOINT")
    assert f"{ESC}33m(interrupted)" in out
    # Colour codes take no columns: the table stays aligned.
    plain = run(*args)[1]
    assert [display_width(line) for line in out.splitlines()] == [len(line) for line in plain.splitlines()]
    monkeypatch.setenv("NO_COLOR", "1")
    assert ESC not in run_tty(*args)[1]
    assert ESC in run_tty(*args, "--color", "always")[1]  # the flag wins over the environment
    monkeypatch.delenv("NO_COLOR")
    assert ESC not in run_tty(*args, "--color", "never")[1]
    code, out, _ = run_tty(*args, "--json", "--color", "always")
    assert ESC not in out and json.loads(out)["thread_id"] == store["waiting"]
    code, _, err = run_tty(*conn(store), "history", "nope", "--color", "always", stderr_tty=False)
    assert code == cli.EXIT_NOT_FOUND and err.startswith(f"{ESC}31merror:{ESC}0m ")
    code, _, err = run(*conn(store), "history", "nope")
    assert err.startswith("error: ")


def test_progress_goes_to_stderr_only_when_asked_or_on_a_terminal(store: dict[str, Any]) -> None:
    code, out, err = run(*conn(store), "stats", "--progress", "always")
    assert code == 0 and "stats: " in err and "item(s) read" in err
    assert "\r" not in out and "stats:" not in out and out.startswith("table ")
    assert err.endswith("\r\x1b[K")  # the line is erased before the result stands alone
    code, out, err = run(*conn(store), "stats", "--progress", "always", "--json")
    assert err == "" and json.loads(out)["threads"] == 2
    assert run(*conn(store), "stats")[2] == ""  # auto, stderr not a terminal
    code, out, err = run_tty(*conn(store), "stats", stdout_tty=False, stderr_tty=True)
    assert "stats: " in err and "stats:" not in out
    assert run_tty(*conn(store), "stats", "--progress", "never", stderr_tty=True)[2] == ""

    target = f"copy-{uuid.uuid4().hex[:6]}"
    code, out, err = run(*conn(store), "copy", store["done"], target, "--progress", "always")
    assert code == 0 and "copy: " in err and "copy:" not in out and out.startswith("copied")
    code, out, err = run(*conn(store), "prune", target, store["waiting"], "--yes", "--progress", "always")
    assert code == 0 and "prune: 0/2 thread(s)" in err and "prune: 2/2 thread(s)" in err
    assert "prune:" not in out and out.splitlines()[0].split() == ["THREAD", "BEFORE", "AFTER"]
    # The per-thread calls add up to what one call over both threads reports.
    assert "threads: 2," in out


# ---------------------------------------------------------- threads filters


def test_threads_filtered_by_prefix_and_activity_from_the_index(
    moto_endpoint: str, names: dict[str, str]
) -> None:
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    now_ms = int(time.time() * 1000)
    heads = {f"team-a/{i}": now_ms - i * 60_000 for i in range(7)}  # active in the last 7 minutes
    heads |= {f"team-b/{i}": now_ms - 3 * 3_600_000 - i * 60_000 for i in range(5)}  # idle for 3 hours
    heads |= {f"team-a/old-{i}": now_ms - 10 * 86_400_000 - i for i in range(3)}  # idle for 10 days
    for tid, ms in heads.items():
        _put_head(names, tid, ms)
    base = ["--table", names["table_name"]]

    def all_pages(*extra: str) -> list[str]:
        seen: list[str] = []
        token = None
        for _ in range(30):
            page = run_json(
                *base, "threads", "--limit", "2", *extra, *(["--page-token", token] if token else [])
            )
            assert page["source"] == "index"
            seen += [t["thread_id"] for t in page["threads"]]
            token = page["next_page_token"]
            if not token:
                return seen
        raise AssertionError("paging did not end")

    by_recency = sorted(heads, key=lambda t: -heads[t])
    assert all_pages("--prefix", "team-b/") == [t for t in by_recency if t.startswith("team-b/")]
    assert all_pages("--prefix", "team-a/") == [t for t in by_recency if t.startswith("team-a/")]
    assert all_pages("--active-since", "1h") == [f"team-a/{i}" for i in range(7)]
    assert all_pages("--idle-for", "2h") == [
        t for t in by_recency if not t.startswith("team-a/") or "old" in t
    ]
    assert all_pages("--prefix", "team-a/", "--idle-for", "1d") == [f"team-a/old-{i}" for i in range(3)]
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now_ms / 1000 - 4 * 3600))
    assert len(all_pages("--active-since", since, "--idle-for", "2h")) == 5  # team-b: between the two
    # A filter that matches nothing: still the index (not a scan fallback), and said plainly.
    page = run_json(*base, "threads", "--prefix", "nobody/")
    assert page["source"] == "index" and page["threads"] == []
    code, out, _ = run(*base, "threads", "--prefix", "nobody/")
    assert code == 0 and "no threads match" in out
    # A token keeps its filters; another prefix with it is refused.
    first = run_json(*base, "threads", "--limit", "2", "--prefix", "team-a/")
    code, _, err = run(*base, "threads", "--prefix", "team-b/", "--page-token", first["next_page_token"])
    assert code == cli.EXIT_USAGE and "prefix" in err
    for bad in ("soon", "-5m", "2026-13-45"):
        code, _, err = run(*base, "threads", "--active-since", bad)
        assert code == cli.EXIT_USAGE, bad


def test_threads_filters_without_thread_heads_scan(store: dict[str, Any]) -> None:
    """No thread heads: the scan answers, with the newest checkpoint's time as last activity."""
    page = run_json(*conn(store), "threads", "--prefix", "done-")
    assert page["source"] == "scan" and [t["thread_id"] for t in page["threads"]] == [store["done"]]
    recent = run_json(*conn(store), "threads", "--active-since", "10m")
    assert {t["thread_id"] for t in recent["threads"]} == {store["done"], store["waiting"]}
    assert "newest checkpoint" in recent["note"]
    assert run_json(*conn(store), "threads", "--idle-for", "10m")["threads"] == []
    first = run_json(*conn(store), "threads", "--limit", "1", "--active-since", "10m")
    rest = run_json(*conn(store), "threads", "--limit", "1", "--page-token", first["next_page_token"])
    assert [t["thread_id"] for t in first["threads"] + rest["threads"]] == [store["waiting"], store["done"]]


# ------------------------------------------------------------ show --channel


def test_show_one_channel(store: dict[str, Any]) -> None:
    t = store["done"]
    code, out, _ = run(*conn(store), "show", t, "--channel", "summary")
    assert (code, out) == (0, "3 parts\n")
    code, out, _ = run(*conn(store), "show", t, "--channel", "artifact")
    assert len(out) == 200_001  # the whole value, never cut
    code, out, _ = run(*conn(store), "show", t, "--channel", "done")
    assert json.loads(out) == [0, 1, 2]
    shown = run_json(*conn(store), "show", t, "--channel", "done")
    assert shown["value"] == [0, 1, 2] and shown["channel"] == "done" and shown["type"] == "list[3]"
    code, _, err = run(*conn(store), "show", t, "--channel", "nope")
    assert code == cli.EXIT_NOT_FOUND
    assert "'nope' is not a channel" in err and "summary" in err and "artifact" in err
    code, _, err = run(*conn(store), "show", t, "--channel", "nope", "--json")
    assert json.loads(err)["error"] == "channel_not_found"


def test_task_status_after_resume_unit() -> None:
    tid = "task-1"
    for writes, status in (
        ([(tid, "__interrupt__", [])], "interrupted"),
        ([(tid, "__resume__", ["a"]), (tid, "__interrupt__", [])], "interrupted"),  # asks again
        ([(tid, "__interrupt__", []), (tid, "__resume__", ["a"]), (tid, "x", 1)], "resumed"),
        ([(tid, "x", 1), (tid, "__interrupt__", [])], "resumed"),  # order does not matter
    ):
        assert task_statuses(writes)[tid] == status
    assert schema.ORPHAN_ROOT  # the mark missing_parent_reason relies on


def test_stored_text_cannot_drive_the_terminal(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids and values with escape sequences (an LLM's output, a hostile id) are shown escaped."""
    hostile = "\x1b]0;pwned\x07\x1b[2J"
    with DynamoDBSaver(**names) as saver:
        saver.setup()
        build_graph(saver).invoke(
            {"request": f"clear{hostile}"}, {"configurable": {"thread_id": f"t{hostile}"}}, durability="sync"
        )
    monkeypatch.setenv("NO_COLOR", "1")  # any escape in the output would be the stored one
    base = ["--table", names["table_name"], "--bucket", names["bucket_name"]]
    tid = f"t{hostile}"
    for argv in (["threads"], ["history", tid], ["show", tid], ["show", tid, "--full"], ["stats"]):
        code, out, err = run_tty(*base, *argv)
        assert code == 0, err
        assert "\x1b" not in out and "\x07" not in out, argv
    code, out, _ = run_tty(*base, "show", tid, "--channel", "request")
    assert out == "clear\\x1b]0;pwned\\x07\\x1b[2J\n"
    code, out, _ = run(*base, "show", tid, "--channel", "request")  # a pipe gets the exact value
    assert out == f"clear{hostile}\n"
