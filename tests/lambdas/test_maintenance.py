"""The on-demand maintenance function, run against the moto server.

The real handler (``langgraph.checkpoint.dynamodb.lambdas.maintenance``, as the
construct deploys it) is called directly with a fake Lambda context whose
remaining time the test sets: ``SAFETY_SECONDS`` of it or less leaves a budget
that is already spent, so every invocation does exactly one unit of work and a
copy needs many invocations. The library's step methods are checked too,
sync and async (``harness``), against ``copy_thread``'s own result.
"""

from __future__ import annotations

import base64
import json
import os
import re
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.errors import StoreNotFoundError
from langgraph.checkpoint.dynamodb.lambdas import handlers, maintenance
from langgraph.checkpoint.dynamodb.schema import ATTR
from tests.support.graphs import chat_graph
from tests.support.harness import Harness, cfg, checkpoint_of, new_thread
from tests.support.lambda_context import AMPLE, TINY

FUNCTION = "Stack-CheckpointStoreMaintenance-0123ABCD"


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def store(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """A fresh table and bucket, the handler's environment, small copy batches, a clean saver cache."""
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_BUCKET", names["bucket_name"])
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", FUNCTION)
    monkeypatch.setenv("MAINTENANCE_BATCH_SIZE", "3")
    for var in (
        "LANGGRAPH_DYNAMODB_METRICS_NAMESPACE",
        "LANGGRAPH_DYNAMODB_TTL_SECONDS",
        "LANGGRAPH_DYNAMODB_TENANT_PREFIX",
        "TIME_BUDGET_SECONDS",
    ):
        monkeypatch.delenv(var, raising=False)
    handlers.reset_saver()
    yield names
    handlers.reset_saver()


def _writer(names: dict[str, str], **kwargs: Any) -> DynamoDBSaver:
    """A saver that spills almost every value to S3 (so a copy has objects to copy)."""
    return DynamoDBSaver(
        table_name=names["table_name"], bucket_name=names["bucket_name"], s3_threshold=200, **kwargs
    )


def _chat(saver: Any, thread: str, turns: int = 3, harness: Harness | None = None) -> None:
    """A delta-channel chat with a subgraph: checkpoints in several namespaces, writes, S3 values."""
    graph = chat_graph(delta=True, snapshot_frequency=3, subgraph=True).compile(checkpointer=saver)
    for i in range(turns):
        inp = {"messages": [f"user {i} " + base64.b64encode(os.urandom(2000)).decode()]}
        if harness is None:
            graph.invoke(inp, cfg(thread))
        else:
            harness.invoke(graph, inp, cfg(thread))


def _items(table: str, pk: str) -> dict[str, dict[str, Any]]:
    """A partition's items by sort key, with the copy-specific parts normalized."""
    client = boto3.client("dynamodb")
    out: dict[str, dict[str, Any]] = {}
    kwargs: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {"#pk": ATTR.PK},
        "ExpressionAttributeValues": {":pk": {"S": pk}},
        "ConsistentRead": True,
    }
    while True:
        resp = client.query(**kwargs)
        for it in resp["Items"]:
            it = dict(it)
            it.pop(ATTR.PK)
            if ATTR.ROOT in it:  # each copy draws its own lineage suffix
                it[ATTR.ROOT] = {"S": re.sub(r"@copy-[0-9a-f]+$", "@copy-*", it[ATTR.ROOT]["S"])}
            out[it[ATTR.SK]["S"]] = it
        if "LastEvaluatedKey" not in resp:
            return out
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


def _pointers_relative(items: dict[str, dict[str, Any]], prefix: str) -> str:
    """The items as JSON with the thread's S3 prefix cut from pointers (two copies differ only there)."""
    return json.dumps(items, sort_keys=True, default=repr).replace(prefix, "<thread>/")


def _objects(bucket: str | None, prefix: str) -> dict[str, bytes]:
    if bucket is None:
        return {}
    client = boto3.client("s3")
    out: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            out[obj["Key"][len(prefix) :]] = client.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
    return out


def _opaque(x: Any) -> Any:
    """``x`` with every sealed ciphertext replaced by its length: what two re-sealings of a payload share."""
    if isinstance(x, bytes):
        return f"<sealed {len(x)} bytes>" if b"+bound2:" in x[:300] else x
    if isinstance(x, dict):
        return {k: _opaque(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_opaque(v) for v in x]
    return x


def _all(saver: DynamoDBSaver, thread: str) -> list[Any]:
    """Every checkpoint tuple of a thread, all namespaces (no ``checkpoint_ns`` in the config)."""
    return list(saver.list({"configurable": {"thread_id": thread}}))


def _same_tuple(a: Any, b: Any) -> bool:
    return (
        a.checkpoint == b.checkpoint
        and a.metadata == b.metadata
        and a.pending_writes == b.pending_writes
        and (a.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        == (b.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    )


def _check_prefix(reader: DynamoDBSaver, source: str, target: str, *, done: bool) -> int:
    """The guarantee after each step: the target is empty or an oldest-first prefix of the source.

    Every checkpoint visible in the target reads exactly as in the source
    (state rebuilt through its delta chain, metadata, pending writes,
    parent); only the source's oldest are visible; the target's latest is the
    source's latest only when the copy is done. Returns how many are visible.
    """
    src = {t.config["configurable"]["checkpoint_id"]: t for t in _all(reader, source)}
    got = _all(reader, target)
    ids = sorted(t.config["configurable"]["checkpoint_id"] for t in got)
    assert ids == sorted(src)[: len(ids)], "visible checkpoints are not the source's oldest"
    for t in got:
        conf = t.config["configurable"]
        original = reader.get_tuple(cfg(source, conf["checkpoint_ns"], conf["checkpoint_id"]))
        assert original is not None and _same_tuple(t, original)
    latest = reader.get_tuple(cfg(target))
    if done:
        assert latest is not None and _same_tuple(latest, reader.get_tuple(cfg(source)))
    elif latest is not None:
        assert latest.checkpoint["id"] != reader.get_tuple(cfg(source)).checkpoint["id"]
    return len(ids)


def _copy_event(source: str, target: str, **extra: Any) -> dict[str, Any]:
    return {"action": "copy_thread", "source_thread_id": source, "target_thread_id": target, **extra}


def _run_to_end(event: dict[str, Any], context: Any = TINY, limit: int = 500) -> list[dict[str, Any]]:
    results = []
    token = event.get("continuation")
    for _ in range(limit):
        out = maintenance.handler({**event, "continuation": token}, context)
        assert out["status"] in ("done", "continue"), out
        results.append(out)
        if out["status"] == "done":
            return results
        token = out["continuation"]
    raise AssertionError("the operation never finished")


def _forge(token: str, **changes: Any) -> str:
    raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    for key, value in changes.items():
        if key in raw:
            raw[key] = value
        else:
            raw["s"][key] = value
    return base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")


# ------------------------------------------------------- library (sync/async)


@pytest.mark.parametrize("harness", ["sync-s3", "async-s3-encrypted"], indirect=True)
def test_copy_steps_end_identical_to_copy_thread(harness: Harness) -> None:
    """Step by step (one batch of 2 per call), sync and async: a prefix after each step, ``copy_thread``'s result at the end."""
    source, stepped, whole = new_thread(), new_thread(), new_thread()
    _chat(harness.saver, source, harness=harness)
    reader = DynamoDBSaver(**harness.saver_kwargs())
    result = harness.call("copy_thread_step", source, stepped, deadline=0, batch_size=2)
    steps = 1
    while not result.done:
        visible = _check_prefix(reader, source, stepped, done=False)
        if result.report.get("checkpoints_copied", 0) == 0:
            assert visible == 0, "a checkpoint is visible before the checkpoint phase"
        result = harness.call(
            "copy_thread_step", source, stepped, continuation=result.continuation, deadline=0, batch_size=2
        )
        steps += 1
    _check_prefix(reader, source, stepped, done=True)
    assert steps > 5
    harness.call("copy_thread", source, whole)
    stepped_items = _items(harness.table_name, schema.partition_key(stepped))
    whole_items = _items(harness.table_name, schema.partition_key(whole))
    assert stepped_items and set(stepped_items) == set(whole_items)
    # Encrypted, each copy re-seals its payloads (fresh nonces): the same items and
    # objects but for the ciphertext bytes, which _check_prefix read back as the source.
    opaque = _opaque if harness.opts.get("encrypted") else (lambda x: x)
    assert _pointers_relative(opaque(stepped_items), reader.s3_thread_prefix(stepped)) == _pointers_relative(
        opaque(whole_items), reader.s3_thread_prefix(whole)
    )
    stepped_objects = _objects(harness.bucket_name, reader.s3_thread_prefix(stepped))
    whole_objects = _objects(harness.bucket_name, reader.s3_thread_prefix(whole))
    assert opaque(stepped_objects) == opaque(whole_objects)
    if harness.bucket_name and harness.opts.get("s3_threshold"):
        assert stepped_objects, "the scenario must copy S3 objects"
    reader.close()


def test_prune_and_delete_for_runs_steps(harness: Harness) -> None:
    threads = [new_thread() for _ in range(3)]
    for t in threads:
        _chat(harness.saver, t, turns=2, harness=harness)
    result = harness.call("prune_step", threads, keep_last=1, deadline=0)
    assert result.status == "continue" and result.report["threads"] == 1
    steps = 1
    while not result.done:
        result = harness.call(
            "prune_step", threads, keep_last=1, continuation=result.continuation, deadline=0
        )
        steps += 1
    assert steps == 3
    for t in threads:
        assert harness.call("get_tuple", cfg(t)) is not None
    run_a, run_b = str(uuid.uuid4()), str(uuid.uuid4())
    t = new_thread()
    first = harness.call("put", cfg(t), checkpoint_of({"a": 1}), {"run_id": run_a}, {"a": "1"})
    harness.call("put", first, checkpoint_of({"a": 2}, {"a": "2"}), {"run_id": run_b}, {"a": "2"})
    result = harness.call("delete_for_runs_step", [run_b, run_a], deadline=0)
    assert result.status == "continue"
    result = harness.call(
        "delete_for_runs_step", [run_b, run_a], continuation=result.continuation, deadline=0
    )
    assert result.done and harness.call("get_tuple", cfg(t)) is None


# --------------------------------------------------------------- the handler


def test_copy_through_the_handler_needs_many_invocations(store: dict[str, str], capsys: Any) -> None:
    writer = _writer(store)
    source, target, whole = new_thread(), new_thread(), new_thread()
    _chat(writer, source)
    capsys.readouterr()
    event = _copy_event(source, target)
    results = []
    out = maintenance.handler(event, TINY)
    while True:
        results.append(out)
        assert set(out) == {"status", "continuation", "report", "errors"} and out["errors"] == []
        _check_prefix(writer, source, target, done=out["status"] == "done")
        if out["status"] == "done":
            break
        assert isinstance(out["continuation"], str)
        out = maintenance.handler({**event, "continuation": out["continuation"]}, TINY)
    assert len(results) > 10
    total = {k: sum(r["report"][k] for r in results) for k in results[0]["report"]}
    assert total["objects_copied"] > 0 and total["items_copied"] > 0 and total["checkpoints_copied"] > 0
    # One EMF line per invocation, counting what that step did.
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert len(lines) == len(results)
    assert sum(d["CheckpointsCopied"] for d in lines) == total["checkpoints_copied"]
    assert {d["Job"] for d in lines} == {"maintenance"} and {d["FunctionName"] for d in lines} == {FUNCTION}
    # Same result as the library's one-shot copy of the same source.
    writer.copy_thread(source, whole)
    a = _items(store["table_name"], schema.partition_key(target))
    b = _items(store["table_name"], schema.partition_key(whole))
    assert _pointers_relative(a, writer.s3_thread_prefix(target)) == _pointers_relative(
        b, writer.s3_thread_prefix(whole)
    )
    assert _objects(store["bucket_name"], writer.s3_thread_prefix(target)) == _objects(
        store["bucket_name"], writer.s3_thread_prefix(whole)
    )
    # With time to spare, one invocation does it all.
    again = new_thread()
    (single,) = _run_to_end(_copy_event(source, again), AMPLE)
    assert single["report"] == total
    writer.close()


def test_replays_converge(store: dict[str, str]) -> None:
    """The same token twice, an older token after the end, the first request again: one final state."""
    writer = _writer(store)
    source, target, reference = new_thread(), new_thread(), new_thread()
    _chat(writer, source)
    writer.copy_thread(source, reference)
    event = _copy_event(source, target)
    tokens: list[str] = []
    out = maintenance.handler(event, TINY)
    while out["status"] == "continue":
        tokens.append(out["continuation"])
        replay = maintenance.handler({**event, "continuation": out["continuation"]}, TINY)
        out = maintenance.handler({**event, "continuation": out["continuation"]}, TINY)
        assert replay == out  # same step, same result
    expected = _pointers_relative(
        _items(store["table_name"], schema.partition_key(reference)), writer.s3_thread_prefix(reference)
    )

    def state() -> str:
        return _pointers_relative(
            _items(store["table_name"], schema.partition_key(target)), writer.s3_thread_prefix(target)
        )

    assert state() == expected
    # A token from the middle, replayed after the copy finished, changes nothing.
    _run_to_end({**event, "continuation": tokens[len(tokens) // 2]})
    assert state() == expected
    # The first request again (its token lost): the target holds exactly this
    # copy, so it is taken over and finished, not refused.
    _run_to_end(event)
    assert state() == expected
    # Interrupted half way, then the first request again: converges too.
    other = new_thread()
    first = _copy_event(source, other)
    out = maintenance.handler(first, TINY)
    for _ in range(len(tokens) // 2):
        out = maintenance.handler({**first, "continuation": out["continuation"]}, TINY)
    _run_to_end(first)
    assert (
        _pointers_relative(
            _items(store["table_name"], schema.partition_key(other)), writer.s3_thread_prefix(other)
        )
        == expected
    )
    writer.close()


def test_copy_refuses_a_target_with_other_data(store: dict[str, str]) -> None:
    writer = _writer(store)
    source, target = new_thread(), new_thread()
    _chat(writer, source, turns=1)
    writer.put(cfg(target), checkpoint_of({"mine": 1}), {}, {"mine": "1"})
    out = maintenance.handler(_copy_event(source, target), AMPLE)
    assert out["status"] == "rejected" and "already has checkpoints" in out["error"]["message"]
    assert writer.get_tuple(cfg(target)).checkpoint["channel_values"] == {"mine": 1}
    writer.close()


def test_foreign_and_forged_tokens_are_rejected(store: dict[str, str]) -> None:
    writer = _writer(store)
    source, target, victim = new_thread(), new_thread(), new_thread()
    _chat(writer, source, turns=1)
    _chat(writer, victim, turns=1)
    before = _items(store["table_name"], schema.partition_key(victim))
    token = maintenance.handler(_copy_event(source, target), TINY)["continuation"]
    assert token
    cases = {
        # Another request's token: other target, other source, other tenant, other action.
        "other target": _copy_event(source, victim, continuation=token),
        "other source": _copy_event(victim, target, continuation=token),
        "other tenant": _copy_event(source, target, continuation=token, tenant_prefix="acme"),
        "other action": {"action": "prune", "thread_ids": [victim], "continuation": token},
        # A forged binding, a forged action, garbage, a malformed state.
        "forged binding": _copy_event(source, victim, continuation=_forge(token, b="0" * 64)),
        "forged action": {
            "action": "prune",
            "thread_ids": [victim],
            "continuation": _forge(token, a="prune"),
        },
        "garbage": _copy_event(source, target, continuation="not-a-token!"),
        "bad root": _copy_event(source, target, continuation=_forge(token, root="../../x")),
        "bad phase": _copy_event(source, target, continuation=_forge(token, phase="drop")),
        "too long": _copy_event(source, target, continuation="A" * 9000),
    }
    for name, event in cases.items():
        out = maintenance.handler(event, AMPLE)
        assert out["status"] == "rejected", name
        assert out["error"]["type"] == "rejected" and out["continuation"] is None, name
    # Nothing reached the other thread, and the real token still works.
    assert _items(store["table_name"], schema.partition_key(victim)) == before
    assert writer.get_tuple(cfg(target)) is None
    _run_to_end(_copy_event(source, target, continuation=token))
    assert _same_tuple(writer.get_tuple(cfg(target)), writer.get_tuple(cfg(source)))
    writer.close()


def _computed_token(saver: DynamoDBSaver, source: str, target: str, root: str, **state: Any) -> str:
    """The token anyone can compute: the binding is a digest of public fields, not a signature."""
    from langgraph.checkpoint.dynamodb._operations import steps

    binding = steps.request_binding("copy_thread", saver.tenant_prefix, {"source": source, "target": target})
    doc = {"root": root, "upto": "\uffff", "phase": "objects", "after": None, **state}
    return steps.encode_token("copy_thread", binding, doc)


def test_a_computed_token_does_not_merge_a_copy_into_a_thread_with_its_own_history(
    store: dict[str, str],
) -> None:
    """The first step refuses a non-empty target; a token must not skip that check.

    Before, any token bound to the request (computable by the caller) resumed
    the copy without looking at the target: the source's checkpoints were
    merged into the victim's history and became its latest state.
    """
    from langgraph.checkpoint.dynamodb._operations import steps
    from langgraph.checkpoint.dynamodb._parts.shapes import ThreadItems

    writer = _writer(store)
    source, victim = new_thread(), new_thread()
    _chat(writer, source, turns=1)
    _chat(writer, victim, turns=1)
    before = _items(store["table_name"], schema.partition_key(victim))
    assert maintenance.handler(_copy_event(source, victim), AMPLE)["status"] == "rejected"
    # The root a step would derive for this target (no tombstones) is public too.
    right_root = steps.copy_root(writer, source, victim, ThreadItems(victim))
    for root in ("0" * 32, right_root):
        for phase in ("objects", "checkpoints", "finish"):
            token = _computed_token(writer, source, victim, root, phase=phase)
            out = maintenance.handler(_copy_event(source, victim, continuation=token), AMPLE)
            assert out["status"] == "rejected" and out["error"]["type"] == "rejected", (root, phase)
            assert out["continuation"] is None and out["report"] == {}
    assert _items(store["table_name"], schema.partition_key(victim)) == before
    writer.close()


def test_an_honest_token_replayed_after_the_target_gained_checkpoints_is_refused(
    store: dict[str, str],
) -> None:
    writer = _writer(store)
    source, target = new_thread(), new_thread()
    _chat(writer, source, turns=2)
    first = maintenance.handler(_copy_event(source, target), TINY)
    assert first["status"] == "continue"
    results = _run_to_end(_copy_event(source, target, continuation=first["continuation"]))
    assert results[-1]["status"] == "done"
    # The copy is finished; its owner goes on with the conversation in it.
    _chat(writer, target, turns=1)
    mine = writer.get_tuple(cfg(target))
    before = _items(store["table_name"], schema.partition_key(target))
    for token in [first["continuation"], *(r["continuation"] for r in results if r["continuation"])]:
        out = maintenance.handler(_copy_event(source, target, continuation=token), AMPLE)
        assert out["status"] == "rejected" and "did not write" in out["error"]["message"], out
    out = maintenance.handler(_copy_event(source, target), AMPLE)
    assert out["status"] == "rejected"
    assert _items(store["table_name"], schema.partition_key(target)) == before
    assert _same_tuple(writer.get_tuple(cfg(target)), mine)
    writer.close()


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (None, "JSON object"),
        ([], "JSON object"),
        ({}, "unknown action None"),
        ({"action": "drop_table"}, "unknown action 'drop_table'"),
        ({"action": ["copy_thread"]}, "unknown action"),
        ({"action": "copy_thread", "source_thread_id": "a"}, "needs target_thread_id"),
        (
            {"action": "copy_thread", "source_thread_id": "a", "target_thread_id": 7},
            "target_thread_id must be",
        ),
        (
            {"action": "copy_thread", "source_thread_id": "", "target_thread_id": "b"},
            "source_thread_id must be",
        ),
        ({"action": "delete_thread", "thread_id": "a", "thread_ids": ["b"]}, "unknown field(s)"),
        ({"action": "delete_thread", "thread_id": None}, "thread_id must be"),
        ({"action": "prune", "thread_ids": "a"}, "thread_ids must be a list"),
        ({"action": "prune", "thread_ids": []}, "thread_ids must be a list"),
        ({"action": "prune", "thread_ids": ["a", 1]}, "every entry of thread_ids"),
        ({"action": "prune", "thread_ids": ["a"], "keep_last": 0}, "keep_last must be"),
        ({"action": "prune", "thread_ids": ["a"], "keep_last": True}, "keep_last must be"),
        ({"action": "prune", "thread_ids": ["a"], "keep_last": "3"}, "keep_last must be"),
        ({"action": "prune", "thread_ids": ["a"], "strategy": "all"}, "strategy must be"),
        ({"action": "prune", "thread_ids": ["a"], "strategy": "delete", "keep_last": 2}, "keep_latest' only"),
        ({"action": "prune", "thread_ids": ["a"], "keep-last": 2}, "unknown field(s) for prune: keep-last"),
        ({"action": "delete_for_runs", "run_ids": ["r"] * 1001}, "1 to 1000"),
        ({"action": "delete_thread", "thread_id": "a", "tenant_prefix": 5}, "tenant_prefix must be"),
        ({"action": "delete_thread", "thread_id": "a", "tenant_prefix": "a|b"}, "tenant_prefix"),
        ({"action": "delete_thread", "thread_id": "a", "continuation": ""}, "continuation must be"),
        ({"action": "delete_thread", "thread_id": "a" * 3000}, "more than 2,048"),
        ({"action": "delete_thread", "thread_id": "\ud800"}, "not valid Unicode"),
        ({"action": "delete_for_runs", "run_ids": ["r", "x" * 3000]}, "more than 2,048"),
        ({"action": "delete_thread", "thread_id": "a", "continuation": "x" * 20_000}, "more than 16,384"),
    ],
)
def test_bad_events_are_rejected_with_a_reason(
    store: dict[str, str], event: Any, message: str, capsys: Any
) -> None:
    out = maintenance.handler(event, AMPLE)
    assert out["status"] == "rejected" and out["error"]["type"] == "invalid_event", out
    assert message in out["error"]["message"]
    assert out["continuation"] is None and out["report"] == {}
    (line,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]
    assert line["RequestsRejected"] == 1


def test_prune_delete_thread_and_delete_for_runs_actions(store: dict[str, str]) -> None:
    writer = _writer(store)
    threads = [new_thread() for _ in range(3)]
    for t in threads:
        _chat(writer, t, turns=2)
    counts = {t: len(_all(writer, t)) for t in threads}
    latest = {t: writer.get_tuple(cfg(t)) for t in threads}
    results = _run_to_end({"action": "prune", "thread_ids": threads, "keep_last": 1})
    assert len(results) == 3  # a thread per invocation under the tiny budget
    assert sum(r["report"]["checkpoints_deleted"] for r in results) > 0
    for t in threads:
        assert len(_all(writer, t)) < counts[t]
        assert _same_tuple(writer.get_tuple(cfg(t)), latest[t])
    (done,) = _run_to_end({"action": "delete_thread", "thread_id": threads[0]})
    assert done["report"]["threads"] == 1 and done["report"]["checkpoints_deleted"] > 0
    assert writer.get_tuple(cfg(threads[0])) is None
    assert _objects(store["bucket_name"], writer.s3_thread_prefix(threads[0])) == {}
    (done,) = _run_to_end({"action": "prune", "thread_ids": [threads[1]], "strategy": "delete"})
    assert writer.get_tuple(cfg(threads[1])) is None
    assert writer.get_tuple(cfg(threads[2])) is not None
    # delete_for_runs: the later run's checkpoint goes, the earlier one stays.
    run_a, run_b = str(uuid.uuid4()), str(uuid.uuid4())
    t = new_thread()
    first = writer.put(cfg(t), checkpoint_of({"a": 1}), {"run_id": run_a}, {"a": "1"})
    writer.put(first, checkpoint_of({"a": 2}, {"a": "2"}), {"run_id": run_b}, {"a": "2"})
    (done,) = _run_to_end({"action": "delete_for_runs", "run_ids": [run_b]})
    assert done["report"]["checkpoints_deleted"] == 1
    assert writer.get_tuple(cfg(t)).checkpoint["channel_values"] == {"a": 1}
    writer.close()


def test_tenant_prefix_is_respected(store: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    acme = _writer(store, tenant_prefix="acme")
    other = _writer(store, tenant_prefix="other")
    plain = _writer(store)
    source, target = new_thread(), new_thread()
    _chat(acme, source, turns=1)
    _chat(other, source, turns=2)  # same thread id, another tenant
    event = _copy_event(source, target, tenant_prefix="acme")
    results = _run_to_end(event)
    assert len(results) > 1
    # The copy is acme's, made from acme's source; no other tenant (and no
    # untenanted thread) got anything.
    assert _same_tuple(acme.get_tuple(cfg(target)), acme.get_tuple(cfg(source)))
    assert other.get_tuple(cfg(target)) is None and plain.get_tuple(cfg(target)) is None
    assert _objects(store["bucket_name"], other.s3_thread_prefix(target)) == {}
    assert set(_objects(store["bucket_name"], acme.s3_thread_prefix(target)))
    # acme's token does not resume a copy of the other tenant's thread.
    token = maintenance.handler(_copy_event(source, new_thread(), tenant_prefix="acme"), TINY)["continuation"]
    out = maintenance.handler(
        {**_copy_event(source, target, tenant_prefix="other"), "continuation": token}, AMPLE
    )
    assert out["status"] == "rejected"
    # A function configured for one tenant serves no other.
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TENANT_PREFIX", "acme")
    handlers.reset_saver()
    out = maintenance.handler(
        {"action": "delete_thread", "thread_id": source, "tenant_prefix": "other"}, AMPLE
    )
    assert out["status"] == "rejected" and "serves tenant 'acme' only" in out["error"]["message"]
    assert other.get_tuple(cfg(source)) is not None
    (deleted,) = _run_to_end({"action": "delete_thread", "thread_id": source})
    assert deleted["report"]["threads"] == 1
    assert acme.get_tuple(cfg(source)) is None and other.get_tuple(cfg(source)) is not None
    for s in (acme, other, plain):
        s.close()


def _junk(table: str, pk: str) -> None:
    """An item the library never wrote, in ``pk``'s own partition (what a tenant's grant allows)."""
    boto3.client("dynamodb").put_item(TableName=table, Item={ATTR.PK: {"S": pk}, ATTR.SK: {"S": "junk"}})


@pytest.mark.parametrize("context", [TINY, AMPLE], ids=["a-unit-per-call", "one-call"])
def test_a_thread_that_cannot_be_read_does_not_block_the_later_units(
    store: dict[str, str], context: Any, capsys: Any
) -> None:
    """One tenant's malformed item is recorded and skipped; every other thread and run is still done.

    Before, the step raised at that unit with no token: every retry stopped
    at the same unit, and the threads and runs listed after it were never
    pruned or deleted.
    """
    evil = _writer(store, tenant_prefix="evil")
    good = _writer(store, tenant_prefix="good")
    run_evil, run_good = str(uuid.uuid4()), str(uuid.uuid4())
    conf = evil.put(cfg("t"), checkpoint_of({"a": 1}), {"run_id": run_evil}, {"a": "1"})
    _junk(store["table_name"], schema.partition_key("t", "evil"))
    conf = good.put(cfg("g"), checkpoint_of({"a": 1}), {"run_id": run_good}, {"a": "1"})
    good.put(conf, checkpoint_of({"a": 2}, {"a": "2"}), {"run_id": run_good}, {"a": "2"})
    capsys.readouterr()
    event = {"action": "delete_for_runs", "run_ids": [run_evil, run_good]}
    results = _run_to_end(event, context)
    assert good.get_tuple(cfg("g")) is None  # the later run's checkpoints went
    assert evil.get_tuple(cfg("t")) is not None  # the unreadable thread kept its own
    errors = [e for r in results for e in r["errors"]]
    assert len(errors) == 1 and f"run {run_evil!r}: thread 't'" in errors[0] and "junk" in errors[0]
    assert sum(r["report"]["checkpoints_deleted"] for r in results) == 2
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if '"_aws"' in x]
    assert sum(d["Errors"] for d in lines) == 1 and sum(len(d["errors"]) for d in lines) == 1
    # prune and delete_thread: the same, a thread per unit.
    plain = _writer(store)
    bad, fine = new_thread(), new_thread()
    for t in (bad, fine):
        _chat(plain, t, turns=2)
    _junk(store["table_name"], schema.partition_key(bad))
    before = len(_all(plain, fine))
    results = _run_to_end({"action": "prune", "thread_ids": [bad, fine], "keep_last": 1}, context)
    assert [e for r in results for e in r["errors"]] == [
        e for r in results for e in r["errors"] if e.startswith(f"thread {bad!r}: CorruptPayloadError")
    ]
    assert sum(len(r["errors"]) for r in results) == 1
    assert 0 < len(_all(plain, fine)) < before
    (done,) = _run_to_end({"action": "delete_thread", "thread_id": bad}, context)
    assert len(done["errors"]) == 1 and done["status"] == "done"
    for s in (evil, good, plain):
        s.close()


def test_aws_failures_raise(store: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing table is no rejected request: the invocation fails (the errors alarm counts it)."""
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", "no-such-table-" + uuid.uuid4().hex[:6])
    handlers.reset_saver()
    with pytest.raises(StoreNotFoundError):
        maintenance.handler({"action": "delete_thread", "thread_id": "t"}, AMPLE)


def test_documented_boto3_loop_drives_a_copy_to_the_end(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/infrastructure.md's boto3 example, run as written against the handler (moto cannot invoke Lambdas)."""
    import io
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "infrastructure.md").read_text()
    section = text[text.index("## On-demand maintenance") : text.index("## Dashboard and job metrics")]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    calls: list[dict[str, Any]] = []

    class FakeLambda:
        def invoke(self, FunctionName: str, Payload: str) -> dict[str, Any]:
            event = json.loads(Payload)
            calls.append(event)
            return {
                "StatusCode": 200,
                "Payload": io.BytesIO(json.dumps(maintenance.handler(event, TINY)).encode()),
            }

    real_client = boto3.client
    monkeypatch.setattr(
        boto3,
        "client",
        lambda service, **kw: FakeLambda() if service == "lambda" else real_client(service, **kw),
    )
    namespace: dict[str, Any] = {"fn_name": FUNCTION}
    exec(compile(block, "docs/infrastructure.md", "exec"), namespace)
    writer = _writer(store)
    source, target = new_thread(), new_thread()
    _chat(writer, source, turns=2)
    calls.clear()
    total = namespace["maintain"](FUNCTION, _copy_event(source, target))
    assert len(calls) > 3 and calls[0]["continuation"] is None and all(c["continuation"] for c in calls[1:])
    assert total["checkpoints_copied"] == len(_all(writer, source))
    assert _same_tuple(writer.get_tuple(cfg(target)), writer.get_tuple(cfg(source)))
    with pytest.raises(ValueError, match="unknown action"):
        namespace["maintain"](FUNCTION, {"action": "nope"})
    writer.close()


def test_a_step_that_fails_midway_is_retried_with_the_same_token(store: dict[str, str]) -> None:
    """An AWS failure in the middle of a checkpoint batch fails the invocation; the same event and
    token again finish the copy, identical to ``copy_thread``'s (what the async retry or the caller does)."""
    writer = _writer(store)
    source, target, reference = new_thread(), new_thread(), new_thread()
    _chat(writer, source)
    writer.copy_thread(source, reference)
    event = _copy_event(source, target)
    out = maintenance.handler(event, TINY)
    saver = handlers.get_saver()
    calls = {"n": 0}

    def fail_the_second_checkpoint_batch(params: dict[str, Any], **_: Any) -> None:
        puts = [
            r["PutRequest"]["Item"] for r in next(iter(params["RequestItems"].values())) if "PutRequest" in r
        ]
        if any(it[ATTR.SK]["S"].startswith(schema.checkpoint_prefix("")) for it in puts):
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("injected: connection reset")

    saver.clients["dynamodb"].meta.events.register(
        "before-parameter-build.dynamodb.BatchWriteItem", fail_the_second_checkpoint_batch
    )
    failed = None
    while out["status"] == "continue":
        token = out["continuation"]
        try:
            out = maintenance.handler({**event, "continuation": token}, TINY)
        except RuntimeError as exc:
            failed = token
            assert "injected" in str(exc)
            _check_prefix(writer, source, target, done=False)  # what landed is still a consistent prefix
            out = maintenance.handler({**event, "continuation": token}, TINY)  # the same step again
    assert failed is not None, "the fault was never injected"
    assert _pointers_relative(
        _items(store["table_name"], schema.partition_key(target)), writer.s3_thread_prefix(target)
    ) == _pointers_relative(
        _items(store["table_name"], schema.partition_key(reference)), writer.s3_thread_prefix(reference)
    )
    writer.close()


def test_a_forged_pointer_in_the_source_stops_the_copy_before_it_writes(store: dict[str, str]) -> None:
    """An attacker rewrites its own item to point at another thread's object: nothing is copied."""
    from langgraph.checkpoint.dynamodb.errors import CorruptPayloadError

    writer = _writer(store)
    source, target, victim = new_thread(), new_thread(), new_thread()
    _chat(writer, source, turns=1)
    _chat(writer, victim, turns=1)
    victim_objects = _objects(store["bucket_name"], writer.s3_thread_prefix(victim))
    items = _items(store["table_name"], schema.partition_key(source))
    forged = [
        (sk, name)
        for sk, it in items.items()
        for name, av in it.items()
        if name in (ATTR.BODY, ATTR.METADATA) and "M" in av and "s3" in av["M"]
    ]
    assert forged, "the scenario needs a spilled body or metadata"
    sk, name = forged[0]
    key = items[sk][name]["M"]["s3"]["S"]
    stolen = writer.s3_thread_prefix(victim) + key[len(writer.s3_thread_prefix(source)) :]
    boto3.client("dynamodb").update_item(
        TableName=store["table_name"],
        Key={ATTR.PK: {"S": schema.partition_key(source)}, ATTR.SK: {"S": sk}},
        UpdateExpression="SET #a.#s = :k",
        ExpressionAttributeNames={"#a": name, "#s": "s3"},
        ExpressionAttributeValues={":k": {"S": stolen}},
    )
    with pytest.raises(CorruptPayloadError):
        maintenance.handler(_copy_event(source, target), AMPLE)
    assert _items(store["table_name"], schema.partition_key(target)) == {}
    assert _objects(store["bucket_name"], writer.s3_thread_prefix(target)) == {}
    assert _objects(store["bucket_name"], writer.s3_thread_prefix(victim)) == victim_objects
    writer.close()


def test_a_deeply_nested_token_is_rejected_not_raised(store: dict[str, str]) -> None:
    """Before, json.loads hit the recursion limit: a failed (retried, alarmed) invocation."""
    import base64

    token = base64.urlsafe_b64encode(b"[" * 5000).decode().rstrip("=")
    out = maintenance.handler({"action": "delete_thread", "thread_id": "a", "continuation": token}, AMPLE)
    assert out["status"] == "rejected" and out["error"]["type"] == "rejected", out


# ------------------------------------------------------- no phantom threads


def _listed(names: dict[str, str]) -> set[str]:
    from langgraph.checkpoint.dynamodb.cli import list_threads

    with DynamoDBSaver(**names) as reader:
        return {t["thread_id"] for t in list_threads(reader, limit=1000)["threads"]}


def test_a_copy_from_a_missing_source_is_rejected_and_leaves_no_thread(store: dict[str, str]) -> None:
    """Before, it answered ``done`` and wrote the target's head: an empty thread in every listing."""
    target = new_thread()
    out = maintenance.handler(_copy_event(new_thread(), target), AMPLE)
    assert out["status"] == "rejected" and "has no checkpoints" in out["error"]["message"], out
    assert _items(store["table_name"], schema.partition_key(target)) == {}
    assert target not in _listed(store)


def test_a_forged_finish_token_leaves_no_thread(store: dict[str, str]) -> None:
    """Unsigned (no key configured): a computed ``finish`` token used to answer ``done`` with nothing copied."""
    from langgraph.checkpoint.dynamodb._operations import steps
    from langgraph.checkpoint.dynamodb._parts.shapes import ThreadItems

    writer = _writer(store)
    source = new_thread()
    _chat(writer, source, turns=1)
    for job in ("0" * 32, None):
        target = new_thread()
        root = steps.copy_root(writer, source, target, ThreadItems(target))
        state = {"phase": "finish"} if job is None else {"phase": "finish", "job": job}
        token = _computed_token(writer, source, target, root, **state)
        out = maintenance.handler(_copy_event(source, target, continuation=token), AMPLE)
        assert out["status"] in ("rejected", "done"), out
        if out["status"] == "done":  # restarted as a new job: a real, complete copy
            assert _same_tuple(writer.get_tuple(cfg(target)), writer.get_tuple(cfg(source)))
            assert out["report"]["checkpoints_copied"] == len(_all(writer, source))
        else:
            assert _items(store["table_name"], schema.partition_key(target)) == {}
    writer.close()


def test_a_copy_that_fails_half_way_leaves_no_partial_thread(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that fails after writing removes what the copy wrote: nothing to read, list or find."""
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TRACK_THREADS", "1")  # the function keeps thread heads
    handlers.reset_saver()
    writer = _writer(store, track_threads=True)
    source, target = new_thread(), new_thread()
    _chat(writer, source)
    out = maintenance.handler(_copy_event(source, target), TINY)
    saver = handlers.get_saver()
    calls = {"n": 0}

    def fail_the_second_checkpoint_batch(params: dict[str, Any], **_: Any) -> None:
        puts = [
            r["PutRequest"]["Item"] for r in next(iter(params["RequestItems"].values())) if "PutRequest" in r
        ]
        if any(it[ATTR.SK]["S"].startswith(schema.checkpoint_prefix("")) for it in puts):
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("injected: connection reset")

    saver.clients["dynamodb"].meta.events.register(
        "before-parameter-build.dynamodb.BatchWriteItem", fail_the_second_checkpoint_batch
    )
    seen_marker = False
    with pytest.raises(RuntimeError, match="injected"):
        while out["status"] == "continue":
            seen_marker |= _resumable_marker() in _items(store["table_name"], schema.partition_key(target))
            out = maintenance.handler(
                {**_copy_event(source, target), "continuation": out["continuation"]}, TINY
            )
    assert seen_marker, "a copy under way carries its marker"
    assert calls["n"] == 2
    assert writer.get_tuple(cfg(target)) is None and _all(writer, target) == []
    assert _items(store["table_name"], schema.partition_key(target)) == {}
    assert _objects(store["bucket_name"], writer.s3_thread_prefix(target)) == {}
    assert target not in _listed(store)
    writer.close()


# The reference stack tracks no threads, so its maintenance role has no read of
# the threads index's layout; a tracked store's role has it (tests/infra/test_grants.py).
# Without it the copy's head goes to one of the minimum shards, as listed below.
@pytest.mark.iam_violation("dynamodb:GetItem")
def test_a_finished_copy_leaves_no_marker_and_is_listed(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TRACK_THREADS", "1")  # the function keeps thread heads
    handlers.reset_saver()
    writer = _writer(store, track_threads=True)
    source, target = new_thread(), new_thread()
    _chat(writer, source, turns=1)
    first = maintenance.handler(_copy_event(source, target), TINY)
    assert first["status"] == "continue"
    assert _resumable_marker() in _items(store["table_name"], schema.partition_key(target))
    assert target not in _listed(store)  # under way: no head yet
    _run_to_end(_copy_event(source, target, continuation=first["continuation"]))
    assert _resumable_marker() not in _items(store["table_name"], schema.partition_key(target))
    assert target in _listed(store)
    writer.close()


def _resumable_marker() -> str:
    from langgraph.checkpoint.dynamodb._operations.steps import COPY_MARKER_SK

    return COPY_MARKER_SK


# ------------------------------------------------------ encrypted threads


def test_an_encrypted_thread_is_copied_with_the_functions_key_ring(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With LANGGRAPH_AES_KEYS the function re-seals every payload for the target; without, it refuses."""
    from langgraph.checkpoint.dynamodb.encryption import AesKeyRing

    keys = "k1:" + base64.b64encode(os.urandom(32)).decode()
    ring = AesKeyRing.from_env({"LANGGRAPH_AES_KEYS": keys})
    writer = _writer(store, serde=ring.serializer())
    source, target = new_thread(), new_thread()
    _chat(writer, source)
    # No key in the function: refused with a result (not a failed, retried invocation), nothing written.
    monkeypatch.delenv("LANGGRAPH_AES_KEYS", raising=False)
    handlers.reset_saver()
    out = maintenance.handler(_copy_event(source, target), AMPLE)
    assert out["status"] == "rejected" and "needs the cipher" in out["error"]["message"]
    assert _items(store["table_name"], schema.partition_key(target)) == {}
    # With the key ring, step by step: the target reads as the source, sealed as its own.
    monkeypatch.setenv("LANGGRAPH_AES_KEYS", keys)
    handlers.reset_saver()
    results = _run_to_end(_copy_event(source, target), TINY)
    assert results[-1]["status"] == "done" and len(results) > 3
    with _writer(store, serde=ring.serializer(), value_cache_bytes=0) as reader:
        copied, original = _all(reader, target), _all(reader, source)
        assert len(copied) == len(original) > 3
        assert all(_same_tuple(a, b) for a, b in zip(copied, original, strict=True))
    writer.close()
