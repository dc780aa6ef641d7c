"""The caller binding handlers build on, from AWS's documented event shapes (no handler involved)."""

from __future__ import annotations

import pytest

from langgraph.checkpoint.dynamodb.lambdas.callers import CallerError, caller_of, is_http_event, thread_key

POOL_ROLE = "arn:aws:sts::123456789012:assumed-role/Cognito_PoolAuth_Role/CognitoIdentityCredentials"


def http_v2(authorizer: dict) -> dict:  # type: ignore[type-arg]
    """An HTTP API (payload 2.0) / Function URL event."""
    return {"version": "2.0", "headers": {}, "body": "{}", "requestContext": {"authorizer": authorizer}}


def rest_v1(identity: dict, authorizer: dict | None = None) -> dict:  # type: ignore[type-arg]
    rc = {"identity": identity, **({"authorizer": authorizer} if authorizer else {})}
    return {"resource": "/", "headers": {}, "body": "{}", "requestContext": rc}


@pytest.mark.parametrize(
    ("event", "want"),
    [
        (http_v2({"jwt": {"claims": {"sub": "u-1", "email": "a@x"}}}), "jwt:sub:u-1"),
        (
            http_v2(
                {
                    "iam": {
                        "userArn": POOL_ROLE,
                        "cognitoIdentity": {"identityId": "eu:1", "identityPoolId": "p"},
                    }
                }
            ),
            "cognito:p:eu:1",
        ),
        (
            http_v2({"iam": {"userArn": "arn:aws:sts::1:assumed-role/R/session-a"}}),
            "iam:arn:aws:sts::1:assumed-role/R/session-a",
        ),
        (
            rest_v1({"cognitoIdentityId": "eu:2", "cognitoIdentityPoolId": "p", "userArn": POOL_ROLE}),
            "cognito:p:eu:2",
        ),
        (rest_v1({"userArn": "arn:aws:iam::1:user/bob"}), "iam:arn:aws:iam::1:user/bob"),
        (rest_v1({}, {"claims": {"sub": "u-3"}}), "jwt:sub:u-3"),
        ({"action": "start", "caller": "alice"}, "direct:alice"),
        ({"action": "start"}, None),
    ],
)
def test_each_documented_shape_names_its_principal(event: dict, want: str | None) -> None:  # type: ignore[type-arg]
    assert caller_of(event) == want


def test_two_users_of_one_identity_pool_are_two_callers() -> None:
    a = http_v2(
        {"iam": {"userArn": POOL_ROLE, "cognitoIdentity": {"identityId": "eu:a", "identityPoolId": "p"}}}
    )
    b = http_v2(
        {"iam": {"userArn": POOL_ROLE, "cognitoIdentity": {"identityId": "eu:b", "identityPoolId": "p"}}}
    )
    assert thread_key(caller_of(a), "t-1") != thread_key(caller_of(b), "t-1")


def test_the_body_is_never_trusted_and_no_identity_is_401() -> None:
    forged = {"headers": {}, "body": '{"caller": "alice"}', "requestContext": {}, "caller": "alice"}
    with pytest.raises(CallerError) as err:
        caller_of(forged)
    assert err.value.status == 401 and is_http_event(forged)
    with pytest.raises(CallerError) as bad:
        caller_of({"caller": " "})
    assert bad.value.status == 400


def test_claim_is_configurable_and_keys_never_nest() -> None:
    event = http_v2({"jwt": {"claims": {"sub": "u-1", "tenant": "acme"}}})
    assert caller_of(event, claim="tenant") == "jwt:tenant:acme"
    a, b = thread_key("jwt:sub:u", "x/y"), thread_key("jwt:sub:u/x", "y")
    assert a != b and len(a.split("/")[0]) == len(b.split("/")[0]) == 34
