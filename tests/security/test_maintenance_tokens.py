"""The maintenance function's continuation tokens are signed: a caller can neither compute, alter nor replay one.

Before, a token was base64 JSON bound to its request by an unkeyed digest:
whoever may invoke the function could compute a token for any request,
alter the cursors or the phase of a real one (skip the S3 objects and the
writes, answer ``done``), or replay one across copies. Now, with the key the
construct creates (a Secrets Manager secret, ``MAINTENANCE_TOKEN_SECRET``),
every token carries an HMAC-SHA256 over itself and the request, a copy's
token names its job, and anything else is ``rejected`` without a word about
the key or the expected signature.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from langgraph.checkpoint.dynamodb.lambdas import handlers, maintenance, tokens
from tests.support.harness import cfg, checkpoint_of, new_thread
from tests.support.lambda_context import AMPLE, TINY

KEY = "k3y-" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"


@pytest.fixture
def store(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    """The handler's environment as the construct sets it: the store, and the token key's secret."""
    with DynamoDBSaver(**names) as saver:
        saver.setup()
    secret = f"token-key-{uuid.uuid4().hex[:8]}"
    boto3.client("secretsmanager").create_secret(Name=secret, SecretString=KEY)
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_BUCKET", names["bucket_name"])
    monkeypatch.setenv("MAINTENANCE_BATCH_SIZE", "2")
    monkeypatch.setenv(tokens.ENV_MAINTENANCE_TOKEN_SECRET, secret)
    for var in ("LANGGRAPH_DYNAMODB_TENANT_PREFIX", "TIME_BUDGET_SECONDS", "LANGGRAPH_DYNAMODB_TTL_SECONDS"):
        monkeypatch.delenv(var, raising=False)
    handlers.reset_saver()
    tokens.reset_key()
    yield names
    handlers.reset_saver()
    tokens.reset_key()


def _writer(names: dict[str, str]) -> DynamoDBSaver:
    return DynamoDBSaver(table_name=names["table_name"], bucket_name=names["bucket_name"], s3_threshold=100)


def _thread(saver: DynamoDBSaver, thread: str, n: int = 4) -> None:
    conf = cfg(thread)
    for i in range(n):
        conf = saver.put(
            conf, checkpoint_of({"v": f"value {i} " + "x" * 200}), {"step": i}, {"v": str(i + 1)}
        )
        saver.put_writes(conf, [("w", f"write {i} " + "y" * 200)], f"task-{i}")


def _copy(source: str, target: str, **extra: Any) -> dict[str, Any]:
    return {"action": "copy_thread", "source_thread_id": source, "target_thread_id": target, **extra}


def _partition(table: str, thread: str) -> list[dict[str, Any]]:
    resp = boto3.client("dynamodb").query(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": schema.partition_key(thread)}},
        ConsistentRead=True,
    )
    return resp["Items"]


def _unsigned(token: str) -> str:
    """The library token inside a signed one."""
    assert token.startswith("s1.") and token.count(".") == 2, token
    return token.split(".")[1]


def _edit(inner: str, **state: Any) -> str:
    raw = json.loads(base64.urlsafe_b64decode(inner + "=" * (-len(inner) % 4)))
    raw["s"].update(state)
    return base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")


def _assert_refused(out: dict[str, Any]) -> None:
    assert out["status"] == "rejected" and out["error"]["type"] == "rejected", out
    assert out["continuation"] is None and out["report"] == {}
    message = out["error"]["message"]
    assert "signature" in message and KEY not in message and KEY[:8] not in message


def test_tokens_are_signed_and_a_signed_copy_runs_to_the_end(store: dict[str, str]) -> None:
    writer = _writer(store)
    source, target = new_thread(), new_thread()
    _thread(writer, source)
    out = maintenance.handler(_copy(source, target), TINY)
    steps = 1
    while out["status"] == "continue":
        assert out["continuation"].startswith("s1.")
        out = maintenance.handler(_copy(source, target, continuation=out["continuation"]), TINY)
        steps += 1
    assert out["status"] == "done" and steps > 3
    assert (
        writer.get_tuple(cfg(target)).checkpoint["channel_values"]
        == writer.get_tuple(cfg(source)).checkpoint["channel_values"]
    )
    writer.close()


def test_a_forged_token_is_rejected(store: dict[str, str]) -> None:
    """A token computed as the library computes one (the digest is public): no signature, refused."""
    from langgraph.checkpoint.dynamodb._operations import steps

    writer = _writer(store)
    source, target = new_thread(), new_thread()
    _thread(writer, source)
    binding = steps.request_binding("copy_thread", "", {"source": source, "target": target})
    forged = steps.encode_token(
        "copy_thread",
        binding,
        {"root": "0" * 32, "upto": "\uffff", "phase": "finish", "after": None, "job": "0" * 32},
    )
    for token in (forged, f"s1.{forged}.", f"s1.{forged}.{'A' * 43}", "s1..x", "s1.a.b.c"):
        _assert_refused(maintenance.handler(_copy(source, target, continuation=token), AMPLE))
    assert _partition(store["table_name"], target) == []
    writer.close()


def test_an_altered_token_is_rejected(store: dict[str, str]) -> None:
    """Skip the objects and the writes (phase 'checkpoints') or jump to 'finish': the signature breaks."""
    writer = _writer(store)
    source, target = new_thread(), new_thread()
    _thread(writer, source)
    token = maintenance.handler(_copy(source, target), TINY)["continuation"]
    inner, mac = _unsigned(token), token.rsplit(".", 1)[1]
    before = _partition(store["table_name"], target)
    for altered in (
        f"s1.{_edit(inner, phase='finish')}.{mac}",
        f"s1.{_edit(inner, phase='checkpoints', after=None)}.{mac}",
        f"s1.{inner}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}",
        f"s1.{inner}x.{mac}",
    ):
        _assert_refused(maintenance.handler(_copy(source, target, continuation=altered), AMPLE))
    assert _partition(store["table_name"], target) == before
    assert writer.get_tuple(cfg(target)) is None
    writer.close()


def test_a_stripped_signature_is_rejected(store: dict[str, str]) -> None:
    """The library's unsigned token inside a signed one is what the old function accepted."""
    writer = _writer(store)
    source, target = new_thread(), new_thread()
    _thread(writer, source)
    token = maintenance.handler(_copy(source, target), TINY)["continuation"]
    _assert_refused(maintenance.handler(_copy(source, target, continuation=_unsigned(token)), AMPLE))
    _assert_refused(maintenance.handler(_copy(source, target, continuation=token.rsplit(".", 1)[0]), AMPLE))
    # Prune tokens too.
    threads = [new_thread() for _ in range(3)]
    for t in threads:
        _thread(writer, t, n=2)
    out = maintenance.handler({"action": "prune", "thread_ids": threads, "keep_last": 1}, TINY)
    assert out["status"] == "continue"
    stripped = {
        "action": "prune",
        "thread_ids": threads,
        "keep_last": 1,
        "continuation": _unsigned(out["continuation"]),
    }
    _assert_refused(maintenance.handler(stripped, AMPLE))
    writer.close()


def test_a_token_replayed_for_another_copy_is_rejected(store: dict[str, str]) -> None:
    writer = _writer(store)
    source, target, other, victim = new_thread(), new_thread(), new_thread(), new_thread()
    _thread(writer, source)
    writer.put(cfg(victim), checkpoint_of({"mine": 1}), {}, {"mine": "1"})
    first = maintenance.handler(_copy(source, target), TINY)["continuation"]
    # Another copy (other target, other source, other tenant, another action): the signature is the request's.
    for event in (
        _copy(source, other, continuation=first),
        _copy(victim, target, continuation=first),
        _copy(source, target, continuation=first, tenant_prefix="acme"),
        {"action": "delete_thread", "thread_id": target, "continuation": first},
    ):
        _assert_refused(maintenance.handler(event, AMPLE))
    assert _partition(store["table_name"], other) == []
    # The same request started again (a new copy job takes the target over): the first job's token is dead.
    second = maintenance.handler(_copy(source, target), TINY)["continuation"]
    out = maintenance.handler(_copy(source, target, continuation=first), AMPLE)
    assert out["status"] == "rejected" and "another copy job" in out["error"]["message"], out
    # The live job's token still works, to the end.
    out = maintenance.handler(_copy(source, target, continuation=second), AMPLE)
    assert out["status"] == "done"
    assert writer.get_tuple(cfg(victim)).checkpoint["channel_values"] == {"mine": 1}
    writer.close()


def test_no_key_no_signature_and_an_unreadable_key_fails_the_invocation(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the variable, the library's tokens (documented); a configured key that cannot be read is
    the function's failure (alarmed), never a token accepted unsigned."""
    writer = _writer(store)
    source, target = new_thread(), new_thread()
    _thread(writer, source)
    monkeypatch.setenv(tokens.ENV_MAINTENANCE_TOKEN_SECRET, "no-such-secret-" + uuid.uuid4().hex[:6])
    tokens.reset_key()
    with pytest.raises(Exception, match=r"ResourceNotFound|can't find|not find"):
        maintenance.handler(_copy(source, target), TINY)
    monkeypatch.delenv(tokens.ENV_MAINTENANCE_TOKEN_SECRET)
    tokens.reset_key()
    out = maintenance.handler(_copy(new_thread(), target), TINY)  # a missing source: refused, no phantom
    assert out["status"] == "rejected"
    writer.close()
