"""The CLI's pure helpers: no network, no moto."""

from __future__ import annotations

import dataclasses
import time

import pytest
from botocore.exceptions import ClientError, NoCredentialsError, NoRegionError
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base.id import uuid6
from langgraph.types import Send

from langgraph.checkpoint.dynamodb import cli, schema
from langgraph.checkpoint.dynamodb.cli._page_tokens import decode_token, encode_token
from langgraph.checkpoint.dynamodb.cli._parser import build_parser, map_exception
from langgraph.checkpoint.dynamodb.cli._render import jsonable, render_table, short
from langgraph.checkpoint.dynamodb.cli._stats import item_kind
from langgraph.checkpoint.dynamodb.cli._tasks import changed_channels, checkpoint_time, produced_by


def test_checkpoint_time_reads_uuid6() -> None:
    import datetime as dt

    stamp = checkpoint_time(str(uuid6()))
    assert stamp is not None
    when = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert abs(when.timestamp() - time.time()) < 120
    assert checkpoint_time("not-a-uuid") is None
    assert checkpoint_time("8b3e2a51-5f0e-4b7e-9c1d-2c3b4a5d6e7f") is None  # uuid4


def _cp(values: dict, versions: dict, seen: dict) -> dict:  # type: ignore[type-arg]
    return {
        "id": str(uuid6()),
        "v": 4,
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": seen,
    }


def test_next_tasks_from_versions() -> None:
    cp = _cp(
        {"branch:to:a": None, "x": 1},
        {"branch:to:a": "0002", "branch:to:b": "0002", "x": "0001"},
        {"a": {"branch:to:a": "0001"}, "b": {"branch:to:b": "0001"}},
    )
    # b's trigger has a newer version but no value (consumed): not next.
    assert [t["name"] for t in cli.next_tasks(cp)] == ["a"]
    assert cli.next_tasks(_cp({}, {}, {})) == []


def test_next_tasks_join_barrier_and_sends() -> None:
    half = _cp({"join:a+b:c": {"a"}}, {"join:a+b:c": "0002"}, {"c": {}})
    assert cli.next_tasks(half) == []
    full = _cp({"join:a+b:c": {"a", "b"}}, {"join:a+b:c": "0002"}, {"c": {}})
    assert [t["name"] for t in cli.next_tasks(full)] == ["c"]
    sends = _cp({"__pregel_tasks": [Send("work", 1), Send("work", 2)]}, {"__pregel_tasks": "0001"}, {})
    tasks = cli.next_tasks(sends, step=3)
    assert [t["name"] for t in tasks] == ["work", "work"]
    assert tasks[0]["id"] != tasks[1]["id"] and all(t["status"] == "pending" for t in tasks)


def test_task_status_from_pending_writes() -> None:
    cp = _cp({"branch:to:a": None}, {"branch:to:a": "0002"}, {})
    (task,) = cli.next_tasks(cp, step=0)
    assert task["id"]
    for writes, status in (
        ([(task["id"], "__interrupt__", [])], "interrupted"),
        ([(task["id"], "__error__", "boom")], "error"),
        ([(task["id"], "x", 1)], "done"),
        ([(task["id"], "__resume__", "answer")], "pending"),
    ):
        assert cli.next_tasks(cp, writes, step=0)[0]["status"] == status


def test_produced_by_uses_legacy_metadata_and_input() -> None:
    assert produced_by({}, {"writes": {"a": {"x": 1, "y": 2}}}, None) == {"a": ["x", "y"]}
    start = {"channel_values": {"__start__": {"q": 1, "r": 2}}, "channel_versions": {"__start__": "1"}}
    assert produced_by(start, {"source": "input"}, None) == {"input": ["q", "r"]}


def test_changed_channels_ignores_control_channels() -> None:
    before = {"channel_versions": {"a": "1", "branch:to:x": "1", "b": "1"}}
    after = {"channel_versions": {"a": "2", "branch:to:x": "2", "b": "1", "c": "1"}}
    assert changed_channels(before, after) == ["a", "c"]


@dataclasses.dataclass
class _Point:
    x: int
    tags: frozenset[str]


def test_jsonable() -> None:
    out = jsonable(
        {
            "msg": HumanMessage("hi"),
            "point": _Point(1, frozenset({"b", "a"})),
            "raw": b"\x00\x01",
            "send": Send("n", {"k": 1}),
            "nan": float("nan"),
            "nested": [(1, 2)],
        }
    )
    assert out["msg"]["content"] == "hi" and out["msg"]["type"] == "human"
    assert out["point"] == {"x": 1, "tags": ["a", "b"]}
    assert out["raw"] == {"bytes": 2, "base64": "AAE="}
    assert out["send"] == {"send": "n", "arg": {"k": 1}}
    assert out["nan"] == "nan" and out["nested"] == [[1, 2]]


def test_render_table_aligns_and_truncates() -> None:
    rows = [{"id": "x" * 50, "v": "y" * 50, "n": 1234567}, {"id": "z", "v": None, "n": True}]
    text = render_table(rows, [("id", "ID"), ("v", "V"), ("n", "N")], max_width=10, no_truncate=("id",))
    lines = text.splitlines()
    assert lines[0].index("V") == lines[1].index("yyyyyyy") == lines[2].index("-")
    assert "x" * 50 in lines[1] and "yyyyyyy..." in lines[1] and "1,234,567" in lines[1]
    assert lines[2].endswith("yes")
    assert short("a" * 100, 10) == '"aaaaaa...'


def test_page_tokens_round_trip_and_reject_garbage() -> None:
    token = encode_token({"v": 1, "src": "scan", "o": 50})
    assert decode_token(token) == {"v": 1, "src": "scan", "o": 50}
    for bad in ("%%%", encode_token({"v": 2}), encode_token([1])):
        with pytest.raises(cli.CLIError) as err:
            decode_token(bad)
        assert err.value.exit_code == cli.EXIT_USAGE


@pytest.mark.parametrize("count", [4, 16, 256])
def test_index_tokens_carry_one_cursor_per_recorded_shard(count: int) -> None:
    state = {"v": 1, "src": "index", "s": dict.fromkeys(map(str, range(count))), "f": {}}
    assert decode_token(encode_token(state)) == state
    for bad in (count + 1, count - 1, 512):  # no layout holds these counts
        forged = {**state, "s": dict.fromkeys(map(str, range(bad)))}
        with pytest.raises(cli.CLIError):
            decode_token(encode_token(forged))
    gap = {**state, "s": {**dict.fromkeys(map(str, range(1, count))), str(count): None}}
    with pytest.raises(cli.CLIError):
        decode_token(encode_token(gap))


def _client_error(code: str, op: str = "Query") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, op)


@pytest.mark.parametrize(
    ("exc", "exit_code", "code"),
    [
        (_client_error("ResourceNotFoundException"), cli.EXIT_USAGE, "table_not_found"),
        (_client_error("NoSuchBucket", "ListObjectsV2"), cli.EXIT_USAGE, "bucket_not_found"),
        (_client_error("404", "HeadBucket"), cli.EXIT_USAGE, "bucket_not_found"),
        (_client_error("UnrecognizedClientException"), cli.EXIT_CREDENTIALS, "bad_credentials"),
        (_client_error("AccessDeniedException"), cli.EXIT_CREDENTIALS, "bad_credentials"),
        (_client_error("ThrottlingException"), cli.EXIT_ERROR, "aws_error"),
        (NoCredentialsError(), cli.EXIT_CREDENTIALS, "no_credentials"),
        (NoRegionError(), cli.EXIT_USAGE, "no_region"),
        (RuntimeError("x"), cli.EXIT_ERROR, "unexpected"),
    ],
)
def test_exception_mapping(exc: BaseException, exit_code: int, code: str) -> None:
    args = build_parser().parse_args(["--table", "tbl", "--bucket", "bkt", "threads"])
    err = map_exception(exc, args, None)
    assert (err.exit_code, err.code) == (exit_code, code)
    if code == "table_not_found":
        assert "'tbl'" in err.message
    if code == "bucket_not_found":
        assert "'bkt'" in err.message


def test_global_options_before_or_after_the_command() -> None:
    p = build_parser()
    a = p.parse_args(["--table", "t1", "--json", "history", "x"])
    b = p.parse_args(["history", "x", "--table", "t1", "--json"])
    assert (a.table, a.json, a.thread) == (b.table, b.json, b.thread) == ("t1", True, "x")
    c = p.parse_args(["history", "x"])
    assert c.table is None and c.json is False
    with pytest.raises(cli.CLIError):
        p.parse_args(["prune", "t", "--keep-last", "2", "--strategy", "delete"])  # mutually exclusive


def test_item_and_object_kinds() -> None:
    assert item_kind(schema.checkpoint_sk("", "c1")) == "checkpoint"
    assert item_kind(schema.writes_sk("ns", "c1", "task")) == "writes"
    assert item_kind(schema.blob_sk("", "messages", "v1")) == "blob"
    assert item_kind(schema.HEAD_SK) == "thread head"
    assert item_kind(schema.LOCK_SK) == "lock"
    assert item_kind(schema.request_sk("r-1")) == "request"
    pre = "checkpoints/"
    assert schema.s3_kind("checkpoints/t/_/v/messages/0001.5", pre) == "value"
    assert schema.s3_kind("checkpoints/v/_/c/cid/body", pre) == "checkpoint body"  # thread named "v"
    assert schema.s3_kind("checkpoints/w/_sub%3A1/c/cid/metadata", pre) == "checkpoint metadata"
    assert schema.s3_kind("checkpoints/t/_/c/cid/w/task/3.abc", pre) == "write"
    assert schema.s3_kind("checkpoints/t/_/v/w/0001.5", pre) == "value"  # channel named "w"
    assert schema.s3_kind("elsewhere/x", pre) == "other"
