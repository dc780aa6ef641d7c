"""Signed continuation tokens of the maintenance function (HMAC-SHA256 with a key only it holds).

The library's step methods hand out tokens bound to their request by an
unkeyed digest: anyone who may call a step can compute one. The maintenance
function wraps each token it returns as ``s1.<library token>.<signature>``,
the signature an HMAC-SHA256, under the function's key, of a domain tag, the
action, the tenant, the request's parameters (thread or run ids, options) and
the library token (which carries its cursors and, for a copy, the job id of
that copy: see ``_maintenance.steps``). A token is accepted only if its signature
verifies (``hmac.compare_digest``) for the request it comes with: a forged,
altered or stripped one, or one replayed with another request, is refused
with a message that says nothing of the key or the expected value.

The key is a Secrets Manager secret the construct creates; the function's
environment names it (``MAINTENANCE_TOKEN_SECRET``, a name or ARN), and it
is read at most once per cold start, the first time a token is issued or
checked. Without that variable (the handler run outside the construct: tests,
a function of your own), tokens are passed through unsigned and unsigned
tokens are accepted, exactly as the library's own step methods do; with it,
only signed tokens are.

Example:
    >>> key = b"k" * 32
    >>> t = sign(key, "delete_thread", "", {"thread_id": "t1"}, "eyJ2IjoxfQ")
    >>> verify(key, "delete_thread", "", {"thread_id": "t1"}, t)
    'eyJ2IjoxfQ'
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import threading
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["ENV_MAINTENANCE_TOKEN_SECRET", "MIN_KEY_BYTES", "key", "reset_key", "sign", "verify"]

#: The environment variable naming the Secrets Manager secret that holds the key.
ENV_MAINTENANCE_TOKEN_SECRET: Final = "MAINTENANCE_TOKEN_SECRET"
#: A key shorter than this is a misconfiguration (the construct generates 64 characters).
MIN_KEY_BYTES: Final = 32
_PREFIX: Final = "s1."
_DOMAIN: Final = "langgraph-dynamodb/maintenance-token/1"

_lock = threading.Lock()
_cached: tuple[str, bytes] | None = None


def key() -> bytes | None:
    """The signing key (read once per process), or ``None`` when no secret is configured.

    Raises:
        botocore.exceptions.ClientError: the secret cannot be read (a denied
            or missing secret is the function's failure, not the caller's).
        RuntimeError: the secret holds no usable key.
    """
    global _cached
    secret_id = os.environ.get(ENV_MAINTENANCE_TOKEN_SECRET)
    if not secret_id:
        return None
    with _lock:
        if _cached is None or _cached[0] != secret_id:
            import boto3

            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            client = boto3.client("secretsmanager", region_name=region)
            value = client.get_secret_value(SecretId=secret_id).get("SecretString")
            raw = value.encode("utf-8") if isinstance(value, str) else b""
            if len(raw) < MIN_KEY_BYTES:
                raise RuntimeError(
                    f"the maintenance token key ({ENV_MAINTENANCE_TOKEN_SECRET}) holds fewer than "
                    f"{MIN_KEY_BYTES} bytes of SecretString"
                )
            _cached = (secret_id, raw)
        return _cached[1]


def reset_key() -> None:
    """Forget the cached key (tests; a rotated secret is read again by the next cold start)."""
    global _cached
    with _lock:
        _cached = None


def _mac(secret: bytes, action: str, tenant: str, params: Mapping[str, Any], inner: str) -> str:
    msg = json.dumps(
        [_DOMAIN, action, tenant, dict(params), inner],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    ).encode()
    digest = hmac.new(secret, msg, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def sign(secret: bytes, action: str, tenant: str, params: Mapping[str, Any], inner: str) -> str:
    """``inner`` (a library token) signed for this request."""
    return f"{_PREFIX}{inner}.{_mac(secret, action, tenant, params, inner)}"


def verify(secret: bytes, action: str, tenant: str, params: Mapping[str, Any], token: str) -> str:
    """The library token inside ``token``, if its signature verifies for this request.

    Raises:
        ValueError: unsigned, malformed, altered, forged, or signed for another request.
    """
    refused = ValueError(
        "continuation is not a token this function issued for this request (its signature does not "
        "verify): resume with the token the previous step returned, or start again without one"
    )
    if not token.startswith(_PREFIX) or token.count(".") != 2:
        raise refused
    inner, _, mac = token[len(_PREFIX) :].partition(".")
    expected = _mac(secret, action, tenant, params, inner)
    if not inner or not hmac.compare_digest(mac.encode("ascii", "replace"), expected.encode("ascii")):
        raise refused
    return inner
