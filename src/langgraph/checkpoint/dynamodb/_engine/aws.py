"""What the sync and async drivers share at the AWS boundary: errors and endpoints.

* :func:`translate_errors` wraps an operation (see ``ops``) so that an AWS
  error escaping it names the table or bucket and says what to do. The
  savers' drivers (``drivers``) wrap every operation with it; the core's own handling of AWS errors inside an operation is unaffected, since
  only what the operation lets escape is translated.
* :func:`fail_fast_on_local_endpoint` stops botocore from retrying for
  tens of seconds against a loopback endpoint nobody listens on (a stopped
  ``langgraph-dynamodb local``). Retries against AWS are unchanged.
* :func:`share_models` gives every session the package creates one
  process-wide loader of botocore's API models, so a saver made per request
  does not parse them again.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
)
from botocore.loaders import Loader, create_loader

from langgraph.checkpoint.dynamodb._engine.ops import Op
from langgraph.checkpoint.dynamodb.config import ENV_BUCKET, ENV_SETUP, ENV_TABLE, region_from_env
from langgraph.checkpoint.dynamodb.errors import (
    BucketUnusableError,
    CheckpointStoreError,
    CredentialsNotFoundError,
    EndpointUnreachableError,
    RegionNotSetError,
    StoreNotFoundError,
)

__all__ = [
    "check_bucket_region",
    "client_region",
    "endpoint_advice",
    "error_code",
    "fail_fast_on_local_endpoint",
    "is_local_endpoint",
    "translate_errors",
]

_BUCKET_CODES = frozenset({"NoSuchBucket"})
#: S3's answers for a bucket that exists but not for this saver: in another
#: region (301 ``PermanentRedirect``, or a signature for the wrong region),
#: or not ours / not granted (403). ``HeadBucket`` has no body, so its codes
#: are the bare status. DynamoDB's denial is ``AccessDeniedException``.
_BUCKET_UNUSABLE_CODES = frozenset(
    {
        "PermanentRedirect",
        "301",
        "AuthorizationHeaderMalformed",
        "IllegalLocationConstraintException",
        "AccessDenied",
        "403",
        "BucketAlreadyExists",  # setup(): the name is another account's
    }
)
#: What every store error ends with: the one command that checks it all.
DOCTOR_HINT = "`langgraph-dynamodb doctor` checks the table, the bucket, the region and the grants"

R = TypeVar("R")


def client_config(
    *, retry_mode: str = "standard", max_attempts: int = 8, max_pool_connections: int = 32
) -> Config:
    """botocore ``Config`` the savers use: bounded retries with backoff and jitter.

    Without botocore's parameter validation: the savers build every request
    themselves from inputs they have already checked (ids, names, sizes), so
    walking each request against the service model again only costs CPU:
    7% of aiobotocore's per-request time under cProfile (on the event loop,
    for the async saver). A malformed request is still refused by the service.
    """
    return Config(
        retries={"mode": retry_mode, "max_attempts": max_attempts},  # type: ignore[typeddict-item]
        max_pool_connections=max_pool_connections,
        connect_timeout=5,
        read_timeout=30,
        parameter_validation=False,
    )


#: One loader per ``AWS_DATA_PATH`` value: what botocore parses once per process.
_LOADERS: dict[str, Loader] = {}
_LOADERS_LOCK = threading.Lock()


def share_models(session: Any) -> Any:
    """Give a botocore (or aiobotocore) ``session`` the process's loader of API models.

    A new session parses the service models again (DynamoDB's and S3's
    JSON, the endpoint rules, the partitions): about 80 ms of CPU per client,
    ten times what creating the client costs once they are parsed. A saver
    made per request (a Lambda handler's, the CLI's, a test's) would pay it
    every time. The models are read-only data, so the sessions the savers
    create share one loader per data path; credentials, region and
    configuration stay per session. A session the caller passes is left
    as it is.

    Returns ``session``.
    """
    path = session.get_config_variable("data_path")
    with _LOADERS_LOCK:
        loader = _LOADERS.get(path or "")
        if loader is None:
            loader = _LOADERS[path or ""] = create_loader(path)
    session.register_component("data_loader", loader)
    return session


def client_region(explicit: str | None, session: Any = None) -> str | None:
    """The ``region_name`` to create clients with (see ``config.region_from_env``).

    A region configured on a session the caller passed counts as explicit: it
    is not overridden by ``AWS_REGION``. ``session`` is a boto3 or aioboto3
    ``Session`` (``region_name``) or a botocore/aiobotocore session
    (``get_config_variable("region")``).
    """
    if explicit:
        return explicit
    if session is not None:
        configured = getattr(session, "region_name", None)
        if configured is None and hasattr(session, "get_config_variable"):
            configured = session.get_config_variable("region")
        # A session reads AWS_DEFAULT_REGION itself; only a region set some
        # other way (argument, profile) outranks AWS_REGION.
        if configured and configured != os.environ.get("AWS_DEFAULT_REGION"):
            return None  # the session's own region applies
    return region_from_env(None)


def error_code(exc: ClientError) -> str:
    """The AWS error code of a client error (``""`` if it has none)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


@contextlib.contextmanager
def region_required() -> Iterator[None]:
    """Opening clients: botocore's bare ``NoRegionError`` becomes one that says where a region comes from."""
    try:
        yield
    except NoRegionError as exc:
        if isinstance(exc, RegionNotSetError):
            raise
        raise RegionNotSetError() from exc


def is_service_error(exc: Exception) -> bool:
    """Whether ``exc`` is the service's (stop, and retry later) rather than one thread's data (record, go on).

    The service's own errors (throttling, an outage, a missing table, a
    denied action, a connection that failed) are never one thread's fault,
    and a later run retries them. A ``ValidationException`` is: a request
    that an item's content makes invalid fails the same way every time.
    Work that walks many threads (the table-wide jobs, ``delete_for_runs``)
    records any other error against its thread and goes on.
    """
    if isinstance(exc, ClientError):
        return error_code(exc) != "ValidationException"
    return isinstance(exc, BotoCoreError)


def contain_failure(op: Op[R], errors: list[str], label: str) -> Op[R | None]:
    """Run one unit of work over many (a thread, a run): its result, or ``None`` if it failed and was recorded.

    Whoever can write a thread's items (a tenant, with its own grant) shapes
    what the work reads there. A failure those items cause is appended to
    ``errors`` (``"<label>: Error: message"``) and the caller goes on with
    the next unit: raised, it would stop every later unit, on every retry,
    for good. Service errors (:func:`is_service_error`) still raise.
    """
    try:
        return (yield from op)
    except Exception as exc:
        if is_service_error(exc):
            raise
        errors.append(f"{label}: {type(exc).__name__}: {exc}")
        return None


def is_local_endpoint(url: str | None) -> bool:
    """Whether ``url`` points at this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if not url:
        return False
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _nothing_listens(url: str) -> bool:
    """A loopback port that refuses a TCP connection: no server, so no point retrying."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=1.0):
            return False
    except OSError:
        return True


def fail_fast_on_local_endpoint(client: Any) -> None:
    """Make ``client`` give up at once when its loopback endpoint has no server.

    botocore's standard retry mode retries a refused connection with backoff
    (about 40 s at ``max_attempts=8``), right for a network blip on the way to
    AWS but only a delay when a local server is not running. For a loopback
    endpoint, a ``needs-retry`` handler checks whether anything listens on the
    port and, if not, raises the connection error instead of retrying. Any
    other endpoint, and any other error, keeps botocore's retries.

    Example:
        >>> import boto3
        >>> c = boto3.client("s3", region_name="us-east-1", endpoint_url="http://127.0.0.1:9")
        >>> fail_fast_on_local_endpoint(c)
    """
    endpoint = getattr(getattr(client, "meta", None), "endpoint_url", None)
    if not isinstance(endpoint, str) or not is_local_endpoint(endpoint):
        return
    url: str = endpoint

    def on_needs_retry(caught_exception: BaseException | None = None, **_: Any) -> None:
        if isinstance(caught_exception, EndpointConnectionError) and _nothing_listens(url):
            raise caught_exception

    client.meta.events.register("needs-retry", on_needs_retry)


def _where(saver: Any) -> str:
    meta = getattr(saver.clients.get("dynamodb"), "meta", None)
    if meta is None:
        return ""
    return f" (region {meta.region_name}, endpoint {meta.endpoint_url})"


def _missing(kind: str, name: str, field: str, where: str, op: str) -> str:
    return (
        f"{kind} {name!r} not found{where} in {op}. "
        "Create it: call saver.setup() (development; under the LangGraph server, set "
        f"{ENV_SETUP}=1), or deploy the CDK construct "
        f"langgraph.checkpoint.dynamodb.cdk.CheckpointStore; or fix the {field} "
        "or the region (region_name= / AWS_REGION). " + DOCTOR_HINT + "."
    )


def _translate_client_error(exc: ClientError, saver: Any) -> Exception | None:
    code = error_code(exc)
    op = exc.operation_name
    if code == "ResourceNotFoundException":
        message = _missing(
            "DynamoDB table", saver.table_name, f"table name (table_name= / {ENV_TABLE})", _where(saver), op
        )
    elif code in _BUCKET_CODES:
        message = _missing(
            "S3 bucket", saver.bucket_name, f"bucket name (bucket_name= / {ENV_BUCKET})", _where(saver), op
        )
    elif code in _BUCKET_UNUSABLE_CODES and saver.bucket_name is not None:
        unusable = BucketUnusableError(exc.response, op)
        unusable.args = (
            f"S3 bucket {saver.bucket_name!r} cannot be used{_where(saver)} in {op} ({code}): it is "
            "in another region, or it is not yours, or this role has no grant on it. Fix the bucket "
            f"name (bucket_name= / {ENV_BUCKET}), the region (region_name= / AWS_REGION) or the "
            f"grant (CheckpointStore.grant_read_write). {DOCTOR_HINT}.",
        )
        return unusable
    else:
        return None
    err = StoreNotFoundError(exc.response, op)
    err.args = (message,)
    return err


def check_bucket_region(bucket: str, head: Any, region: str | None) -> None:
    """``setup()``: refuse a bucket that lives in another region than the saver's clients.

    botocore follows S3's redirect to the bucket's region, so such a bucket
    works, but each payload then crosses regions (latency, transfer cost),
    and a name that is someone else's bucket elsewhere is usually a typo.
    ``HeadBucket`` answers with the bucket's region (``x-amz-bucket-region``),
    so saying so costs nothing beyond the request ``setup()`` already sends.
    """
    actual = head.get("BucketRegion") if isinstance(head, dict) else None
    if not actual or not region or actual == region:
        return
    err = BucketUnusableError(
        {"Error": {"Code": "PermanentRedirect", "Message": f"the bucket is in {actual}"}}, "HeadBucket"
    )
    err.args = (
        f"S3 bucket {bucket!r} is in region {actual}, but the saver's clients are in {region}: "
        "fix the bucket name (bucket_name= / "
        f"{ENV_BUCKET}) or the region (region_name= / AWS_REGION). {DOCTOR_HINT}.",
    )
    raise err


def endpoint_advice(url: str) -> str:
    """What to do when nothing answers at ``url``: the library's and the CLI's one wording."""
    if is_local_endpoint(url):
        return (
            "nothing listens there: start the local endpoint (langgraph-dynamodb local) or fix "
            "endpoint_url= / AWS_ENDPOINT_URL"
        )
    return "check the network, the region (region_name= / AWS_REGION) and endpoint_url= / AWS_ENDPOINT_URL"


def _translate(exc: Exception, saver: Any) -> Exception | None:
    """The error to raise instead of ``exc``, or ``None`` to let ``exc`` through."""
    if isinstance(exc, CheckpointStoreError):
        return None  # already says what to do
    if isinstance(exc, ClientError):
        return _translate_client_error(exc, saver)
    if isinstance(exc, NoCredentialsError):
        return CredentialsNotFoundError()
    if isinstance(exc, EndpointConnectionError):
        url = str(getattr(exc, "kwargs", {}).get("endpoint_url", "?"))
        return EndpointUnreachableError(
            endpoint_url=url, message=f"cannot reach the endpoint {url}: {endpoint_advice(url)}", error=exc
        )
    return None


def translate_errors(op: Op[Any], saver: Any) -> Op[Any]:
    """``op``, with the AWS errors that escape it translated (see :func:`_translate`).

    ``saver`` supplies the table and bucket names and, through its DynamoDB
    client, the region and endpoint the message reports.
    """
    try:
        return (yield from op)
    except Exception as exc:
        better = _translate(exc, saver)
        if better is None:
            raise
        raise better from exc
