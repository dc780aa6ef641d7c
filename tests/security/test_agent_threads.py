"""The example agent ties a thread to its caller: caller B cannot act on caller A's ``thread_id``.

The attacker is an authenticated user of the agent's Function URL (IAM auth)
or of an API behind a JWT authorizer. It knows (or guesses) another user's
thread id, checkpoint id and request ids, and sends requests with them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver

ALICE = "arn:aws:iam::123456789012:user/alice"
MALLORY = "arn:aws:iam::123456789012:user/mallory"


@pytest.fixture
def agent(moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from lambdas.agent import graph as agent_graph
    from lambdas.agent import handler

    with DynamoDBSaver(table_name=names["table_name"]) as s:
        s.setup()
    monkeypatch.setenv("LANGGRAPH_DYNAMODB_TABLE", names["table_name"])
    monkeypatch.delenv("LANGGRAPH_DYNAMODB_BUCKET", raising=False)
    monkeypatch.setenv("LEASE_WAIT_SECONDS", "5")
    handler.reset()
    agent_graph.reset_counts()
    yield handler
    handler.reset()


def _url_event(
    caller: str | None, body: dict[str, Any], *, jwt: dict[str, str] | None = None
) -> dict[str, Any]:
    """A Lambda Function URL (or HTTP API) event as AWS delivers it after authentication."""
    authorizer: dict[str, Any] = {}
    if caller:
        authorizer["iam"] = {"userArn": caller, "userId": caller.rsplit("/", 1)[-1]}
    if jwt:
        authorizer["jwt"] = {"claims": jwt}
    return {
        "version": "2.0",
        "headers": {"content-type": "application/json"},
        "requestContext": {"http": {"method": "POST"}, "authorizer": authorizer},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def _call(agent: Any, caller: str | None, body: dict[str, Any], **kw: Any) -> tuple[int, dict[str, Any]]:
    resp = agent.handler(_url_event(caller, body, **kw))
    return resp["statusCode"], json.loads(resp["body"])


def _alice_thread(agent: Any) -> tuple[str, dict[str, Any]]:
    t = f"t-{uuid.uuid4().hex[:8]}"
    status, body = _call(
        agent, ALICE, {"action": "start", "thread_id": t, "request_id": "a-1", "input": "Export"}
    )
    assert status == 200 and body["status"] == "waiting", body
    return t, body


def test_other_caller_cannot_resume_and_learns_nothing(agent: Any) -> None:
    from lambdas.agent import graph as agent_graph

    t, started = _alice_thread(agent)
    resume = {"action": "resume", "thread_id": t, "request_id": "m-1", "answer": "PDF, everyone"}
    status, body = _call(agent, MALLORY, {**resume, "checkpoint_id": started["checkpoint_id"]})
    # The same answer as for a thread that never existed.
    never = f"t-{uuid.uuid4().hex[:8]}"
    n_status, n_body = _call(
        agent, MALLORY, {**resume, "thread_id": never, "checkpoint_id": started["checkpoint_id"]}
    )
    assert (status, body["error"]) == (n_status, n_body["error"]) == (404, "thread_not_found")
    assert body["message"].replace(t, "<t>") == n_body["message"].replace(never, "<t>")
    assert agent_graph.EXECUTIONS["implement"] == 0
    # Alice's thread is untouched: her own answer still finishes it.
    status, done = _call(
        agent,
        ALICE,
        {**resume, "request_id": "a-2", "answer": "CSV", "checkpoint_id": started["checkpoint_id"]},
    )
    assert status == 200 and done["result"].endswith("CSV"), done


def test_other_caller_cannot_read_a_result_by_replaying_a_request_id(agent: Any) -> None:
    t, started = _alice_thread(agent)
    status, body = _call(
        agent, MALLORY, {"action": "start", "thread_id": t, "request_id": "a-1", "input": "x"}
    )
    # Not Alice's stored answer: Mallory's own (new) thread of the same name.
    assert status == 200 and body["replayed"] is False
    assert body["checkpoint_id"] != started["checkpoint_id"]


def test_other_caller_starting_the_same_thread_id_does_not_touch_it(agent: Any) -> None:
    t, started = _alice_thread(agent)
    status, body = _call(
        agent, MALLORY, {"action": "start", "thread_id": t, "request_id": "m-1", "input": "Delete all"}
    )
    assert status == 200 and body["status"] == "waiting"  # Mallory's own thread
    status, done = _call(
        agent,
        ALICE,
        {
            "action": "resume",
            "thread_id": t,
            "request_id": "a-2",
            "answer": "CSV",
            "checkpoint_id": started["checkpoint_id"],
        },
    )
    assert status == 200 and done["result"] == "Implemented 'Export' as agreed: CSV", done


def test_jwt_callers_are_scoped_by_their_claim(agent: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    t = f"t-{uuid.uuid4().hex[:8]}"
    start = {"action": "start", "thread_id": t, "request_id": "r-1", "input": "Export"}
    status, started = _call(agent, None, start, jwt={"sub": "user-1"})
    assert status == 200
    resume = {
        "action": "resume",
        "thread_id": t,
        "request_id": "r-2",
        "answer": "CSV",
        "checkpoint_id": started["checkpoint_id"],
    }
    assert _call(agent, None, resume, jwt={"sub": "user-2"})[0] == 404
    assert _call(agent, None, resume, jwt={"sub": "user-1"})[0] == 200


def test_unauthenticated_http_request_is_refused(agent: Any) -> None:
    from lambdas.agent import graph as agent_graph

    body = {"action": "start", "thread_id": "t-anon", "request_id": "r-1", "input": "Export"}
    status, resp = _call(agent, None, body)
    assert status == 401 and resp["error"] == "unauthenticated"
    # A "caller" in the body of an HTTP request is the attacker's word, not an identity.
    status, _ = _call(agent, None, {**body, "caller": ALICE})
    assert status == 401
    assert sum(agent_graph.EXECUTIONS.values()) == 0


# ------------------------------------------ identities AWS delivers, by event shape

POOL_ROLE = "arn:aws:sts::123456789012:assumed-role/CognitoAuthRole/CognitoIdentityCredentials"


def _http_api_iam_event(body: dict[str, Any], identity_id: str | None, user_arn: str) -> dict[str, Any]:
    """An HTTP API (payload 2.0) or Function URL request with IAM auth, as AWS documents it."""
    iam: dict[str, Any] = {
        "accessKey": "ASIAEXAMPLE",
        "accountId": "123456789012",
        "callerId": "AROAEXAMPLE:CognitoIdentityCredentials",
        "principalOrgId": None,
        "userArn": user_arn,
        "userId": "AROAEXAMPLE:CognitoIdentityCredentials",
    }
    if identity_id is not None:
        iam["cognitoIdentity"] = {
            "amr": ["authenticated"],
            "identityId": identity_id,
            "identityPoolId": "us-east-1:pool-1",
        }
    return {
        "version": "2.0",
        "headers": {"content-type": "application/json"},
        "requestContext": {"http": {"method": "POST"}, "authorizer": {"iam": iam}},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def _rest_iam_event(body: dict[str, Any], identity_id: str | None, user_arn: str) -> dict[str, Any]:
    """A REST API (payload 1.0) request with IAM auth: the identity is in requestContext.identity."""
    return {
        "resource": "/agent",
        "httpMethod": "POST",
        "headers": {"Content-Type": "application/json"},
        "requestContext": {
            "identity": {
                "cognitoIdentityPoolId": "us-east-1:pool-1" if identity_id else None,
                "cognitoIdentityId": identity_id,
                "cognitoAuthenticationType": "authenticated" if identity_id else None,
                "userArn": user_arn,
                "user": "AROAEXAMPLE:CognitoIdentityCredentials",
            }
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def _rest_user_pool_event(body: dict[str, Any], sub: str) -> dict[str, Any]:
    """A REST API request through a Cognito user-pool authorizer: claims in requestContext.authorizer."""
    return {
        "resource": "/agent",
        "httpMethod": "POST",
        "headers": {"Content-Type": "application/json"},
        "requestContext": {"authorizer": {"claims": {"sub": sub, "cognito:username": "shared-name"}}},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


@pytest.mark.parametrize("shape", ["http-api", "function-url", "rest"])
def test_users_of_one_identity_pool_are_different_callers(agent: Any, shape: str) -> None:
    """They share the pool's role ARN; before, one user resumed the other's thread and got her result."""
    make = _rest_iam_event if shape == "rest" else _http_api_iam_event
    t = f"t-{uuid.uuid4().hex[:8]}"

    def call(identity: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        resp = agent.handler(make(body, identity, POOL_ROLE))
        return resp["statusCode"], json.loads(resp["body"])

    status, started = call(
        "us-east-1:alice", {"action": "start", "thread_id": t, "request_id": "r-1", "input": "Export"}
    )
    assert status == 200, started
    resume = {
        "action": "resume",
        "thread_id": t,
        "request_id": "r-2",
        "answer": "CSV",
        "checkpoint_id": started["checkpoint_id"],
    }
    # Bob, same role: neither the thread nor a replay of Alice's request id.
    assert call("us-east-1:bob", resume)[0] == 404
    status, replay = call(
        "us-east-1:bob", {"action": "start", "thread_id": t, "request_id": "r-1", "input": "x"}
    )
    assert (
        status == 200
        and replay.get("replayed") is False
        and replay["checkpoint_id"] != started["checkpoint_id"]
    )
    assert call("us-east-1:alice", resume)[0] == 200


def test_role_sessions_are_different_callers(agent: Any) -> None:
    t = f"t-{uuid.uuid4().hex[:8]}"
    role = "arn:aws:sts::123456789012:assumed-role/AgentUsers/"

    def call(session: str, body: dict[str, Any]) -> int:
        return int(agent.handler(_http_api_iam_event(body, None, role + session))["statusCode"])

    resp = agent.handler(
        _http_api_iam_event(
            {"action": "start", "thread_id": t, "request_id": "r-1", "input": "E"}, None, role + "alice"
        )
    )
    started = json.loads(resp["body"])
    resume = {
        "action": "resume",
        "thread_id": t,
        "request_id": "r-2",
        "answer": "CSV",
        "checkpoint_id": started["checkpoint_id"],
    }
    assert call("bob", resume) == 404
    assert call("alice", resume) == 200


def test_rest_user_pool_callers_are_scoped_by_sub(agent: Any) -> None:
    t = f"t-{uuid.uuid4().hex[:8]}"
    start = {"action": "start", "thread_id": t, "request_id": "r-1", "input": "Export"}
    started = json.loads(agent.handler(_rest_user_pool_event(start, "sub-1"))["body"])
    resume = {
        "action": "resume",
        "thread_id": t,
        "request_id": "r-2",
        "answer": "CSV",
        "checkpoint_id": started["checkpoint_id"],
    }
    assert agent.handler(_rest_user_pool_event(resume, "sub-2"))["statusCode"] == 404
    assert agent.handler(_rest_user_pool_event(resume, "sub-1"))["statusCode"] == 200


@pytest.mark.parametrize(
    "body",
    [
        '{"action": "start", "thread_id": "\\ud800", "request_id": "r", "input": "x"}',  # lone surrogate
        json.dumps({"action": "start", "thread_id": "t" * 5000, "request_id": "r", "input": "x"}),
        "[" * 100_000 + "]" * 100_000,  # deep JSON
        json.dumps({"action": "start", "thread_id": "t", "request_id": "r", "input": "x" * 300_000}),
    ],
    ids=["surrogate", "long-id", "deep-json", "huge-input"],
)
def test_client_errors_are_4xx_without_a_traceback(
    agent: Any, body: str, caplog: pytest.LogCaptureFixture
) -> None:
    event = _url_event(ALICE, {})
    event["body"] = body
    with caplog.at_level("DEBUG"):
        resp = agent.handler(event)
    assert 400 <= resp["statusCode"] < 500, resp
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)
