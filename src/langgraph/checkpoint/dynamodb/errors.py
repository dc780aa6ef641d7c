"""Errors raised by the DynamoDB savers. All derive from :class:`CheckpointStoreError`."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, NoRegionError

__all__ = [
    "BucketUnusableError",
    "CheckpointStoreError",
    "CiphertextBindingError",
    "CorruptPayloadError",
    "CredentialsNotFoundError",
    "EndpointUnreachableError",
    "KeyTooLongError",
    "MissingPayloadError",
    "PayloadLimitError",
    "PayloadTooLargeError",
    "RegionNotSetError",
    "StoreNotFoundError",
    "ThreadTooLargeError",
    "UnsupportedFormatError",
    "WriteContentionError",
]  # and missing_extra, the package's own helper for its extras (not an error class to catch)

#: The distribution's name, as ``pip install`` spells it.
_DISTRIBUTION = "langgraph-checkpoint-dynamodb-s3"


def missing_extra(exc: ImportError, *, extra: str, feature: str) -> ModuleNotFoundError:
    """The error to raise when an optional extra is not installed: it names the extra.

    A bare ``ModuleNotFoundError: No module named 'jsii'`` says neither which
    feature wanted it nor what to install; this says both. Raise it ``from``
    the original error. Still a ``ModuleNotFoundError`` (an ``ImportError``),
    with the missing module's ``name``.

    Example:
        >>> try:
        ...     import not_installed_here  # doctest: +SKIP
        ... except ImportError as exc:
        ...     raise missing_extra(exc, extra="cdk", feature="the CDK construct") from exc
    """
    return ModuleNotFoundError(
        f"{feature} needs the {extra!r} extra (missing module: {exc.name or exc}): "
        f'pip install "{_DISTRIBUTION}[{extra}]"',
        name=exc.name,
    )


class CheckpointStoreError(Exception):
    """Base class of every error this library raises on purpose."""


class PayloadTooLargeError(CheckpointStoreError, ValueError):
    """A payload is too large to store: it does not fit in a DynamoDB item and
    no S3 bucket is configured, or it serializes to more than the saver's
    ``max_payload_size`` (which a reader would refuse).

    Raised before anything is written, so the table, the bucket and the
    thread's latest checkpoint are unchanged.
    """


class ThreadTooLargeError(CheckpointStoreError):
    """A table-wide job (pruner, purge, reaper) met a thread whose outline is larger than it may hold.

    A thread over the budget is pruned or reaped from its outline (keys,
    lineage, stamps; payloads streamed a page at a time); only one whose
    outline alone exceeds the budget is refused. The job records it and goes
    on with the other threads: one tenant's huge partition (written with its
    own grant) must not stop pruning and expiry for everybody after it. The thread is left as it was; an idle one is
    still deleted, from its keys alone. Prune it from a machine with more
    memory (``langgraph-dynamodb prune``, or ``saver.prune``), or raise the
    job's budget (``PrunePolicy.max_thread_bytes``, ``PRUNE_MAX_THREAD_MB``).
    """

    def __init__(self, thread_id: str, read_bytes: int, limit: int) -> None:
        super().__init__(
            f"thread {thread_id!r} holds more than {limit:,} bytes of items (read {read_bytes:,} before "
            "stopping), more than this job may hold in memory; left as it is. Prune it with "
            "`langgraph-dynamodb prune` from a machine with more memory, or raise PRUNE_MAX_THREAD_MB"
        )
        self.thread_id = thread_id
        self.read_bytes = read_bytes
        self.limit = limit


class KeyTooLongError(CheckpointStoreError, ValueError):
    """An id too long to store at all: a thread id over the partition key's 2,048 bytes, or
    another id over ``schema.MAX_ID_BYTES``. (Shorter ids that do not fit a key whole are
    digested in it, see ``schema.fit``.)"""


class MissingPayloadError(CheckpointStoreError):
    """An item points to an S3 object or blob item that does not exist."""


class CorruptPayloadError(CheckpointStoreError):
    """A stored payload cannot be decoded (truncated, tampered or foreign)."""


class CiphertextBindingError(CorruptPayloadError):
    """An encrypted payload was read somewhere it was not written (integrity-bound encryption).

    An encrypting saver seals every payload with where it belongs: the tenant
    and thread, and the checkpoint, channel version or write it is. This one
    decrypts, but was sealed for another thread or place, so someone who can
    write the table or bucket moved or copied it there; or it was written
    without binding (LangGraph's ``EncryptedSerializer``, an older version of
    this package), which a saver reads only with ``allow_unbound_ciphertext=True``.
    """


class PayloadLimitError(CorruptPayloadError):
    """A stored payload is larger than the reader's ``max_payload_size``.

    Raised before the payload is read or decompressed past the limit (a
    decompression bomb, an oversized S3 object), so memory stays bounded.
    The message names the item or key, the limit and the option that
    raises it. A subclass of ``CorruptPayloadError``: a caller that already
    treats undecodable payloads as bad data handles it the same way.
    """


class UnsupportedFormatError(CheckpointStoreError):
    """An item was written by a newer, unknown version of this library."""


class StoreNotFoundError(CheckpointStoreError, ClientError):
    """The table or bucket the saver was configured with does not exist (where it looked).

    Still a botocore ``ClientError`` with the original ``response``, so code
    that checks ``exc.response["Error"]["Code"]`` keeps working; the message
    names the table or bucket, the region and endpoint, and what to do.
    """


class BucketUnusableError(CheckpointStoreError, ClientError):
    """The bucket the saver was configured with answers, but not to this saver: another region, or no access.

    S3 says so only when a request reaches the bucket, and a saver sends
    none until a value is too large for its item: ``setup()`` checks it
    first, and otherwise the first request that meets the bucket raises
    this. Still a botocore ``ClientError`` with the original ``response``;
    the message names the bucket, the region and endpoint, and
    ``langgraph-dynamodb doctor``, which checks the whole store.
    """


class WriteContentionError(CheckpointStoreError, ClientError):
    """A write was refused as contended (a transaction conflict, throttling) on every retry; nothing landed.

    The library retried it with capped exponential backoff and jitter
    (counted: ``lock.write_stats()``) before giving up. Still a botocore
    ``ClientError`` with the last ``response`` (``exc.response["Error"]["Code"]``
    is DynamoDB's code); the message says what was contended and what to do:
    retry the request later, give the table more capacity (on-demand, or
    more provisioned write units), or write less at once on the same items.
    """


class EndpointUnreachableError(CheckpointStoreError, EndpointConnectionError):
    """Nothing answers at the configured endpoint (e.g. a stopped local server).

    Still a botocore ``EndpointConnectionError``; the message says what to do.
    """

    fmt = "{message}"

    def __init__(self, *, endpoint_url: str, message: str, **kwargs: Any) -> None:
        EndpointConnectionError.__init__(self, endpoint_url=endpoint_url, message=message, **kwargs)


class RegionNotSetError(CheckpointStoreError, NoRegionError):
    """No AWS region for the clients the saver opens.

    Still a botocore ``NoRegionError``; the message says where a region
    comes from (the usual cause on a laptop: the local endpoint's
    environment file was not sourced in this shell).
    """

    fmt = (
        "no AWS region for the saver's clients: set AWS_REGION (or AWS_DEFAULT_REGION), or pass "
        "region_name=...; with `langgraph-dynamodb local`, source the environment file it wrote "
        "(. ./local.env) in this shell"
    )


class CredentialsNotFoundError(CheckpointStoreError, NoCredentialsError):
    """No AWS credentials for the requests the saver sends.

    Still a botocore ``NoCredentialsError``; the message says where
    credentials come from (on a laptop against the local endpoint, the usual
    cause is the same as for a missing region: the environment file it wrote
    was not sourced in this shell).
    """

    fmt = (
        "no AWS credentials for the saver's requests: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
        "AWS_PROFILE, or run where a role is attached (Lambda, ECS, EC2), or pass a session= with "
        "credentials; with `langgraph-dynamodb local`, source the environment file it wrote "
        "(. ./local.env) in this shell; `langgraph-dynamodb doctor` checks the whole set-up"
    )
