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

The prefixed names are canonical: a Lambda function or container often talks
to more than one table and bucket, and bare ``TABLE_NAME``/``BUCKET_NAME``
collide with the application's own settings. The bare names the Lambda
helpers read before (``TABLE_NAME``, ``BUCKET_NAME``, ``S3_KEY_PREFIX``,
``THREAD_TTL_SECONDS``, ``TRACK_THREADS``) are still accepted for one
release, with a ``DeprecationWarning`` and a logged warning, because
functions deployed with an older construct carry them; but only in an
environment that sets no ``LANGGRAPH_DYNAMODB_*`` name at all. Where any
canonical name is set, the bare ones are the application's own (its
``BUCKET_NAME`` is not where checkpoints go) and are never read.
"""

from __future__ import annotations

import logging
import os
import warnings
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
    "LEGACY_NAMES",
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

#: Canonical name -> the name read before it (deprecated, removed in the next release).
LEGACY_NAMES: Mapping[str, str] = {
    ENV_TABLE: "TABLE_NAME",
    ENV_BUCKET: "BUCKET_NAME",
    ENV_S3_KEY_PREFIX: "S3_KEY_PREFIX",
    ENV_TTL_SECONDS: "THREAD_TTL_SECONDS",
    ENV_TRACK_THREADS: "TRACK_THREADS",
}


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


_log = logging.getLogger("langgraph.checkpoint.dynamodb")

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


#: The saver's settings by their canonical names: one of them set means the bare names are the app's.
_SAVER_SETTINGS = (
    ENV_TABLE,
    ENV_BUCKET,
    ENV_S3_KEY_PREFIX,
    ENV_TENANT_PREFIX,
    ENV_TTL_SECONDS,
    ENV_TRACK_THREADS,
    ENV_MAX_PAYLOAD_SIZE,
    ENV_MAX_PAYLOAD_OBJECTS,
)


def _canonical_set(env: Mapping[str, str]) -> bool:
    """Whether the environment sets any of the saver's ``LANGGRAPH_DYNAMODB_*`` settings.

    Then the bare names (``TABLE_NAME``...) are the application's own. Other
    variables under the prefix (a tool's, e.g. a test runner's cache folder)
    are not settings of the saver and decide nothing.
    """
    return any(env.get(name, "").strip() for name in _SAVER_SETTINGS)


def _get(env: Mapping[str, str], name: str, *, legacy_ok: bool = True) -> str | None:
    """A variable by its canonical name, else by its deprecated one (with a warning, and only if ``legacy_ok``)."""
    value = env.get(name, "").strip()
    if value:
        return value
    legacy = LEGACY_NAMES.get(name)
    if legacy is not None and legacy_ok:
        value = env.get(legacy, "").strip()
        if value:
            message = (
                f"environment variable {legacy} is deprecated and will not be read by the next "
                f"release; set {name} instead"
            )
            warnings.warn(message, DeprecationWarning, stacklevel=3)
            # Python hides a DeprecationWarning raised in library code: say it where it is seen.
            _log.warning("%s", message)
            return value
    return None


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
    legacy_ok = not _canonical_set(env)

    def get(name: str) -> str | None:
        return _get(env, name, legacy_ok=legacy_ok)

    table = get(ENV_TABLE)
    if not table:
        raise ValueError(f"{ENV_TABLE} is not set (the checkpoint table's name)")
    ttl_text = get(ENV_TTL_SECONDS)
    try:
        ttl = int(ttl_text) if ttl_text else None
    except ValueError:
        # Name the variable that is actually set, the deprecated one included.
        name = ENV_TTL_SECONDS if env.get(ENV_TTL_SECONDS, "").strip() else LEGACY_NAMES[ENV_TTL_SECONDS]
        raise ValueError(f"{name} must be a whole number of seconds, got {ttl_text!r}") from None
    track_text = get(ENV_TRACK_THREADS)
    # Name, in an error, the variable actually set (the deprecated one included).
    track_name = (
        ENV_TRACK_THREADS if env.get(ENV_TRACK_THREADS, "").strip() else LEGACY_NAMES[ENV_TRACK_THREADS]
    )
    track = env_flag(env, track_name, track_text or "")
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
