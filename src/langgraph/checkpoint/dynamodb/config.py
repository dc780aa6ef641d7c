"""Where a saver finds its store: the one documented set of environment variables.

Every reader in this package uses the names below: ``DynamoDBSaver.from_env``
and ``AsyncDynamoDBSaver.from_env``, the CLI, the Lambda helpers
(``handlers.StoreConfig.from_env``), the CDK construct's
``saver_environment`` and what ``langgraph-dynamodb local`` prints.

========================================  =====================================
``LANGGRAPH_DYNAMODB_TABLE``              table name (required)
``LANGGRAPH_DYNAMODB_BUCKET``             payload bucket (optional)
``LANGGRAPH_DYNAMODB_S3_KEY_PREFIX``      S3 key prefix (default ``checkpoints/``)
``LANGGRAPH_DYNAMODB_TENANT_PREFIX``      tenant prefix of thread ids (optional)
``LANGGRAPH_DYNAMODB_TTL_SECONDS``        idle seconds before a thread expires
``LANGGRAPH_DYNAMODB_TRACK_THREADS``      ``1``/``true``: keep heads without a TTL
``LANGGRAPH_DYNAMODB_MAX_PAYLOAD_SIZE``   largest payload read or written (bytes)
``LANGGRAPH_DYNAMODB_MAX_PAYLOAD_OBJECTS``  most objects one payload decodes to
``AWS_REGION`` / ``AWS_DEFAULT_REGION``   region, in this order of precedence
``AWS_ENDPOINT_URL``                      endpoint (read by botocore itself)
========================================  =====================================

The names are prefixed because a Lambda function or container often talks
to more than one table and bucket: bare ``TABLE_NAME``/``BUCKET_NAME`` would
collide with the application's own settings, and are never read (its
``BUCKET_NAME`` is not where checkpoints go).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

__all__ = [
    "ENV_BUCKET",
    "ENV_MAX_PAYLOAD_OBJECTS",
    "ENV_MAX_PAYLOAD_SIZE",
    "ENV_S3_KEY_PREFIX",
    "ENV_SETUP",
    "ENV_TABLE",
    "ENV_TENANT_PREFIX",
    "ENV_TRACK_THREADS",
    "ENV_TTL_SECONDS",
    "env_flag",
    "region_from_env",
    "saver_kwargs_from_env",
]

ENV_TABLE = "LANGGRAPH_DYNAMODB_TABLE"
ENV_BUCKET = "LANGGRAPH_DYNAMODB_BUCKET"
ENV_S3_KEY_PREFIX = "LANGGRAPH_DYNAMODB_S3_KEY_PREFIX"
ENV_TENANT_PREFIX = "LANGGRAPH_DYNAMODB_TENANT_PREFIX"
ENV_TTL_SECONDS = "LANGGRAPH_DYNAMODB_TTL_SECONDS"
ENV_TRACK_THREADS = "LANGGRAPH_DYNAMODB_TRACK_THREADS"
ENV_MAX_PAYLOAD_SIZE = "LANGGRAPH_DYNAMODB_MAX_PAYLOAD_SIZE"
ENV_MAX_PAYLOAD_OBJECTS = "LANGGRAPH_DYNAMODB_MAX_PAYLOAD_OBJECTS"
#: ``1``/``true``/``yes``: the LangGraph server factory (``server.checkpointer``) calls ``setup()``.
ENV_SETUP = "LANGGRAPH_DYNAMODB_SETUP"


def region_from_env(explicit: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The region to use: ``explicit``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``.

    ``None`` leaves the choice to botocore (a profile's ``region``). botocore
    reads ``AWS_DEFAULT_REGION`` only, while Lambda, the AWS CLI v2 and most
    SDKs set or honour ``AWS_REGION``: without this a process that has only
    ``AWS_REGION`` gets ``NoRegionError``.

    Example:
        >>> region_from_env(None, {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-east-1"})
        'eu-west-1'
        >>> region_from_env("ap-south-1", {"AWS_REGION": "eu-west-1"})
        'ap-south-1'
    """
    if explicit:
        return explicit
    env = os.environ if env is None else env
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        value = env.get(name, "").strip()
        if value:
            return value
    return None


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def env_flag(env: Mapping[str, str], name: str, value: str | None = None) -> bool:
    """A yes/no variable: ``1/true/yes/on`` or ``0/false/no/off`` (or unset); anything else is an error.

    A typo (``ture``) must not silently mean either.

    Example:
        >>> env_flag({"X": "Yes"}, "X"), env_flag({}, "X")
        (True, False)
    """
    text = (env.get(name, "") if value is None else value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{name} must be 1/true/yes/on or 0/false/no/off, got {text!r}")


def saver_kwargs_from_env(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Saver keyword arguments (``table_name``, ``bucket_name``...) from the environment.

    Raises:
        ValueError: the table is not set, or a value is malformed; the message
            names the variable.

    Example:
        >>> kw = saver_kwargs_from_env({"LANGGRAPH_DYNAMODB_TABLE": "ckpt", "AWS_REGION": "eu-west-1"})
        >>> kw["table_name"], kw["bucket_name"], kw["region_name"]
        ('ckpt', None, 'eu-west-1')
    """
    env = os.environ if env is None else env

    def get(name: str) -> str | None:
        return env.get(name, "").strip() or None

    table = get(ENV_TABLE)
    if not table:
        raise ValueError(f"{ENV_TABLE} is not set (the checkpoint table's name)")
    ttl_text = get(ENV_TTL_SECONDS)
    try:
        ttl = int(ttl_text) if ttl_text else None
    except ValueError:
        raise ValueError(f"{ENV_TTL_SECONDS} must be a whole number of seconds, got {ttl_text!r}") from None
    track = env_flag(env, ENV_TRACK_THREADS)
    tenant = env.get(ENV_TENANT_PREFIX)
    if tenant is not None and not tenant.strip():
        # Set but blank (a templating slip) must not quietly mean "no tenant":
        # an untenanted saver reads and maintains every tenant's threads.
        raise ValueError(f"{ENV_TENANT_PREFIX} is set but blank: unset it for no tenant prefix")
    limits: dict[str, int] = {}
    for name, setting, unit in (
        (ENV_MAX_PAYLOAD_SIZE, "max_payload_size", "of bytes"),
        (ENV_MAX_PAYLOAD_OBJECTS, "max_payload_objects", "of objects"),
    ):
        text = get(name)
        try:
            if text:
                limits[setting] = int(text)
        except ValueError:
            raise ValueError(f"{name} must be a whole number {unit}, got {text!r}") from None
    kwargs: dict[str, Any] = {
        "table_name": table,
        "bucket_name": get(ENV_BUCKET),
        "s3_key_prefix": get(ENV_S3_KEY_PREFIX) or "checkpoints/",
        "tenant_prefix": get(ENV_TENANT_PREFIX),
        "ttl": ttl,
        "track_threads": bool(ttl) or track,
        "region_name": region_from_env(None, env),
    }
    kwargs.update(limits)  # else the savers' own defaults
    return kwargs
