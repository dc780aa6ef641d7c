"""The saver's settings, each declared once (``SETTINGS``), and the one documented set of environment variables.

Rule: a saver setting is one row of :data:`SETTINGS` (name, type, default,
variable, check, one line of doc); the constructor's checks, ``from_env``,
``handlers.StoreConfig``, the CDK construct's ``saver_environment`` and the
settings table of ``docs/configuration.md`` are derived from it or held to it
by tests.

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
``LANGGRAPH_DYNAMODB_THROTTLE_PATIENCE``  seconds a request waits out throttles
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "ENV_BUCKET",
    "ENV_MAX_PAYLOAD_OBJECTS",
    "ENV_MAX_PAYLOAD_SIZE",
    "ENV_S3_KEY_PREFIX",
    "ENV_SETUP",
    "ENV_TABLE",
    "ENV_TENANT_PREFIX",
    "ENV_THROTTLE_PATIENCE",
    "ENV_TRACK_THREADS",
    "ENV_TTL_SECONDS",
    "REQUIRED",
    "SETTING",
    "SETTINGS",
    "STORE_SETTINGS",
    "Setting",
    "check_settings",
    "env_flag",
    "environment_of",
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
ENV_THROTTLE_PATIENCE = "LANGGRAPH_DYNAMODB_THROTTLE_PATIENCE"
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


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_table(value: Any) -> None:
    if not value or not isinstance(value, str):
        raise ValueError("table_name must be a non-empty string")


def _check_bucket(value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError("bucket_name must be a non-empty string or None")


def _check_threshold(value: Any) -> None:
    if value < 0:
        raise ValueError("inline_threshold and s3_threshold must be >= 0")


def _check_ttl(value: Any) -> None:
    if value is not None and (not _whole(value) or value < 60):
        raise ValueError(f"ttl must be a number of seconds >= 60, or None; got {value!r}")


def _check_at_least_one(what: str) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if not _whole(value) or value < 1:
            raise ValueError(f"{name} must be {what} >= 1, got {value!r}")

    return check


def _check_patience(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < float("inf"):
        raise ValueError(f"throttle_patience_seconds must be a number of seconds >= 0, got {value!r}")


@dataclass(frozen=True)
class Setting:
    """One saver setting, declared once: what the constructor, ``from_env``, the Lambdas and the CDK read.

    Example:
        >>> SETTING["max_payload_objects"].env
        'LANGGRAPH_DYNAMODB_MAX_PAYLOAD_OBJECTS'
    """

    #: The constructor keyword.
    name: str
    #: Its annotation, as the constructor spells it.
    type: str
    #: Its default (``REQUIRED``: none).
    default: Any
    #: One line for the settings table of ``docs/configuration.md``.
    doc: str
    #: The environment variable that sets it (``None``: only in code).
    env: str | None = None
    #: What a number in ``env`` counts (``"seconds"``...), for the error that names it.
    unit: str = ""
    #: The check of a given value: raises ``ValueError`` naming the setting.
    check: Callable[[Any], None] | None = None
    #: How the default reads in the docs table (else a number as is, other values as code).
    shown: str = ""

    def read(self, text: str) -> Any:
        """The value of this setting's variable (stripped, non-empty text)."""
        if self.unit == "flag":
            return env_flag({}, self.env or self.name, text)
        if self.unit:
            number: type[int] | type[float] = float if self.type == "float" else int
            try:
                return number(text)
            except ValueError:
                kind = "number" if number is float else "whole number"
                raise ValueError(f"{self.env} must be a {kind} of {self.unit}, got {text!r}") from None
        return text

    def shown_default(self) -> str:
        """The default as the docs table shows it."""
        if self.shown or self.default is REQUIRED:
            return self.shown or "required"
        if isinstance(self.default, str):
            return f'`"{self.default}"`'
        if isinstance(self.default, int | float) and not isinstance(self.default, bool):
            return str(self.default)
        return f"`{self.default!r}`"


#: The default of a setting that has none (``table_name``).
REQUIRED: Final = object()


def _limit(name: str, default: int, env: str, unit: str, what: str, shown: str, doc: str) -> Setting:
    check = _check_at_least_one(what)
    return Setting(name, "int", default, doc, env, unit, lambda v: check(name, v), shown)


_AWS = "AWS defaults"

#: Every setting both savers take, in the constructor's order. Adding one:
#: a row here, its keyword in ``BaseDynamoDBSaver.__init__``/``SaverSettings``
#: (explicit for IDEs and type checkers; a unit test holds them to this table),
#: and the code that uses it. ``from_env``, ``handlers.StoreConfig``, the CDK
#: construct's ``saver_environment`` and the docs' settings table follow.
SETTINGS: Final[tuple[Setting, ...]] = (
    Setting("table_name", "str", REQUIRED, "DynamoDB table", ENV_TABLE, check=_check_table),
    Setting(
        "bucket_name", "str | None", None, "S3 bucket for large payloads", ENV_BUCKET, check=_check_bucket
    ),
    Setting(
        "region_name", "str | None", None, "region (else `AWS_REGION`, then `AWS_DEFAULT_REGION`)", shown=_AWS
    ),
    Setting("endpoint_url", "str | None", None, "endpoint (else `AWS_ENDPOINT_URL`)", shown=_AWS),
    Setting("serde", "SerializerProtocol | None", None, "the serializer", shown="`StateTypesSerializer`"),
    Setting("allow_unsafe_serde", "bool", False, "keep a permissive `serde` as given"),
    Setting("allow_unbound_ciphertext", "bool", False, "also read ciphertext written without binding"),
    Setting("s3_key_prefix", "str", "checkpoints/", "prefix of every S3 key", ENV_S3_KEY_PREFIX),
    Setting("inline_threshold", "int", 4 * 1024, "values copied into every item", check=_check_threshold),
    Setting("s3_threshold", "int", 64 * 1024, "payloads above this go to S3", check=_check_threshold),
    Setting("compression", "Compression", "auto", "payload compression"),
    Setting("tenant_prefix", "str | None", None, "the tenant of every key", ENV_TENANT_PREFIX),
    Setting(
        "ttl",
        "int | None",
        None,
        "idle seconds before a thread expires",
        ENV_TTL_SECONDS,
        "seconds",
        _check_ttl,
    ),
    Setting(
        "track_threads",
        "bool | None",
        None,
        "keep thread heads",
        ENV_TRACK_THREADS,
        "flag",
        shown="on with `ttl`",
    ),
    Setting("touch_on_read", "bool", False, "reads count as activity"),
    Setting("retry_mode", "str", "standard", "botocore retry mode"),
    Setting("max_attempts", "int", 8, "botocore attempts per request"),
    Setting("max_concurrency", "int", 16, "parallel requests inside one operation"),
    _limit(
        "max_payload_size",
        64 * 1024 * 1024,
        ENV_MAX_PAYLOAD_SIZE,
        "bytes",
        "a number of bytes",
        "64 MiB",
        "largest payload read or written",
    ),
    _limit(
        "max_payload_objects",
        1_000_000,
        ENV_MAX_PAYLOAD_OBJECTS,
        "objects",
        "a whole number",
        "1,000,000",
        "most objects one payload decodes to",
    ),
    Setting("value_cache_bytes", "int", 32 * 1024 * 1024, "memory for large values", shown="32 MiB"),
    Setting(
        "throttle_patience_seconds",
        "float",
        60.0,
        "most seconds one request waits for throttles to pass",
        ENV_THROTTLE_PATIENCE,
        "seconds",
        _check_patience,
        "60 seconds",
    ),
)
#: The settings by name.
SETTING: Final[Mapping[str, Setting]] = MappingProxyType({s.name: s for s in SETTINGS})
#: The settings ``saver_kwargs_from_env`` always returns (their default when unset): where the store is.
STORE_SETTINGS: Final = (
    "table_name",
    "bucket_name",
    "s3_key_prefix",
    "tenant_prefix",
    "ttl",
    "track_threads",
)


def check_settings(values: Mapping[str, Any]) -> None:
    """Run each declared setting's check on its value in ``values``.

    Raises:
        ValueError: a value its setting refuses; the message names it.

    Example:
        >>> check_settings({"ttl": 30})
        Traceback (most recent call last):
        ValueError: ttl must be a number of seconds >= 60, or None; got 30
    """
    for setting in SETTINGS:
        if setting.check is not None and setting.name in values:
            setting.check(values[setting.name])


def saver_kwargs_from_env(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Saver keyword arguments (``table_name``, ``bucket_name``...) from the environment.

    Every setting of :data:`SETTINGS` with an ``env`` is read. Where the
    store is (table, bucket, prefixes, TTL, heads) and the region are always
    returned; another setting only when its variable is set (else the
    savers' own default).

    Raises:
        ValueError: the table is not set, or a value is malformed; the message
            names the variable.

    Example:
        >>> kw = saver_kwargs_from_env({"LANGGRAPH_DYNAMODB_TABLE": "ckpt", "AWS_REGION": "eu-west-1"})
        >>> kw["table_name"], kw["bucket_name"], kw["region_name"]
        ('ckpt', None, 'eu-west-1')
    """
    env = os.environ if env is None else env
    if not env.get(ENV_TABLE, "").strip():
        raise ValueError(f"{ENV_TABLE} is not set (the checkpoint table's name)")
    tenant = env.get(ENV_TENANT_PREFIX)
    if tenant is not None and not tenant.strip():
        # Set but blank (a templating slip) must not quietly mean "no tenant":
        # an untenanted saver reads and maintains every tenant's threads.
        raise ValueError(f"{ENV_TENANT_PREFIX} is set but blank: unset it for no tenant prefix")
    kwargs: dict[str, Any] = {}
    for setting in SETTINGS:
        text = env.get(setting.env, "").strip() if setting.env else ""
        if text:
            kwargs[setting.name] = setting.read(text)
        elif setting.name in STORE_SETTINGS:
            kwargs[setting.name] = False if setting.unit == "flag" else setting.default
    kwargs["track_threads"] = bool(kwargs["ttl"]) or kwargs["track_threads"]
    kwargs["region_name"] = region_from_env(None, env)
    return kwargs


def environment_of(settings: Mapping[str, Any]) -> dict[str, str]:
    """The variables that give a saver ``settings`` (what ``saver_kwargs_from_env`` reads back).

    ``None`` and ``False`` are left out (unset); ``True`` is ``1``.

    Raises:
        ValueError: a setting that has no environment variable.

    Example:
        >>> environment_of({"table_name": "t", "ttl": 3600, "track_threads": True, "bucket_name": None})
        {'LANGGRAPH_DYNAMODB_TABLE': 't', 'LANGGRAPH_DYNAMODB_TTL_SECONDS': '3600', 'LANGGRAPH_DYNAMODB_TRACK_THREADS': '1'}
    """
    env: dict[str, str] = {}
    for name, value in settings.items():
        variable = SETTING[name].env
        if variable is None:
            raise ValueError(f"{name} has no environment variable")
        if value is None or value is False:
            continue
        env[variable] = "1" if value is True else str(value)
    return env
