"""Who is calling a Lambda handler, and which of the store's threads are theirs.

A thread id a client sends names a thread *of that caller*: caller B's
``"t-1"`` must be another thread than caller A's, or B could resume, read or
overwrite A's conversation by guessing its id. :func:`caller_of` finds the
authenticated principal of a Lambda event (only in what AWS fills in after
authenticating, never in the body), and :func:`thread_key` turns a caller's
thread id into the store's.

Which identity, by how the request was authenticated:

* IAM through a Cognito identity pool: the identity id
  (``requestContext.authorizer.iam.cognitoIdentity.identityId``; REST APIs:
  ``requestContext.identity.cognitoIdentityId``). All of a pool's users share
  its role, so the role ARN would make them one caller.
* Other IAM auth (Function URL ``AWS_IAM``, API Gateway): the full principal
  ARN (``authorizer.iam.userArn``, or ``userId``; REST: ``identity.userArn``),
  whose session name tells an assumed role's sessions apart.
* A JWT or Cognito user-pool authorizer: the claim ``claim`` (default
  ``sub``; a tenant claim lets a tenant's users share threads).
* A direct invoke (no HTTP request): IAM authenticated the invoker, a trusted
  backend, which may act for a user by adding ``"caller": "<user id>"``; without
  it the thread ids are used as they are (an operator's).

An HTTP event with none of these raises :class:`CallerError` (401): a Function
URL with ``AuthType NONE`` is refused.

Example:
    ```python
    from langgraph.checkpoint.dynamodb.lambdas.callers import CallerError, caller_of, thread_key

    def handler(event, context):
        try:
            caller = caller_of(event)
        except CallerError as err:
            return {"statusCode": err.status, "body": err.message}
        config = {"configurable": {"thread_id": thread_key(caller, body["thread_id"])}}
    ```
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["CallerError", "caller_of", "is_http_event", "thread_key"]


class CallerError(ValueError):
    """The event has no usable caller: ``status`` 401 (no authenticated identity) or 400 (malformed).

    Example:
        >>> CallerError(401, "unauthenticated", "no caller").status
        401
    """

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message


def is_http_event(event: Any) -> bool:
    """Whether a Lambda event is an HTTP request (Function URL, API Gateway REST or HTTP API)."""
    return isinstance(event, dict) and "body" in event and ("requestContext" in event or "headers" in event)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def caller_of(event: Any, *, claim: str = "sub") -> str | None:
    """The authenticated caller of an event, as ``"<kind>:<id>"``; ``None`` for a direct invoke without ``caller``.

    Raises:
        CallerError: 401 for an HTTP event with no authenticated identity; 400
            for a direct invoke whose ``caller`` is not a non-empty string.

    Example:
        >>> caller_of({"body": "{}", "requestContext": {"authorizer": {"jwt": {"claims": {"sub": "u1"}}}}})
        'jwt:sub:u1'
        >>> caller_of({"action": "start", "caller": "alice"})
        'direct:alice'
    """
    if not is_http_event(event):
        caller = event.get("caller") if isinstance(event, dict) else None
        if caller is None:
            return None
        if not _text(caller):
            raise CallerError(400, "bad_request", "'caller' must be a non-empty string")
        return f"direct:{caller}"
    rc = _mapping(event.get("requestContext"))
    auth = _mapping(rc.get("authorizer"))
    iam = _mapping(auth.get("iam"))
    identity = _mapping(rc.get("identity"))  # REST APIs (payload 1.0)
    cognito = _mapping(iam.get("cognitoIdentity"))
    identity_id = cognito.get("identityId") or identity.get("cognitoIdentityId")
    if _text(identity_id):
        pool = cognito.get("identityPoolId") or identity.get("cognitoIdentityPoolId") or ""
        return f"cognito:{pool}:{identity_id}"
    principal = iam.get("userArn") or iam.get("userId") or identity.get("userArn")
    if _text(principal):
        return f"iam:{principal}"
    claims = _mapping(_mapping(auth.get("jwt")).get("claims")) or _mapping(auth.get("claims"))
    if _text(claims.get(claim)):
        return f"jwt:{claim}:{claims[claim]}"
    raise CallerError(401, "unauthenticated", "the request carries no authenticated caller")


def thread_key(caller: str | None, thread_id: str) -> str:
    """The store's thread id of a caller's ``thread_id`` (unchanged for ``caller=None``).

    ``u-<sha256(caller)[:32]>/<thread_id>``: a fixed-length digest, so no
    caller's keys are a prefix of another's and no ``thread_id`` reaches
    outside its caller's threads.

    Example:
        >>> thread_key(None, "t-1")
        't-1'
        >>> thread_key("jwt:sub:u1", "t-1")[:2], thread_key("jwt:sub:u1", "t-1")[-4:]
        ('u-', '/t-1')
    """
    if caller is None:
        return thread_id
    return f"u-{hashlib.sha256(caller.encode()).hexdigest()[:32]}/{thread_id}"
