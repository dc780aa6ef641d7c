"""Sans-I/O request descriptions.

The savers' logic is written once, as generators that *yield* what they need
(a DynamoDB or S3 call, several calls at once, a pause) and receive the
result. ``DynamoDBSaver`` runs those generators with boto3, and
``AsyncDynamoDBSaver`` with aiobotocore; neither contains logic of its own.
This is how the sync and async savers stay identical in behaviour.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from langgraph.checkpoint.dynamodb.errors import PayloadLimitError

R = TypeVar("R")

Service = Literal["dynamodb", "s3"]


@dataclass(frozen=True, slots=True)
class Call:
    """One API call. The driver returns the response dict.

    For ``s3.get_object`` the driver reads the body, so the response's
    ``Body`` is ``bytes`` in both drivers. With ``max_bytes`` it reads at
    most ``max_bytes + 1`` bytes of it and raises ``PayloadLimitError`` for
    a larger object (see :func:`body_budget` and :func:`checked_body`).
    """

    service: Service
    method: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: Largest ``get_object`` body the driver may read; ``None``: no limit.
    max_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Gather:
    """Several calls issued concurrently. Returns their responses in order.

    With ``return_exceptions`` a failed call yields its exception in place of
    a response; otherwise the first failure is raised into the generator.
    """

    calls: Sequence[Call]
    return_exceptions: bool = False


@dataclass(frozen=True, slots=True)
class Sleep:
    """Back off before retrying (``time.sleep`` or ``asyncio.sleep``)."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Emit:
    """A result for the caller of a streaming operation (``list``)."""

    value: Any


Request = Call | Gather | Sleep | Emit
Op = Generator[Request, Any, R]


def body_budget(call: Call, resp: Mapping[str, Any]) -> int:
    """How many bytes of a ``get_object`` body a driver may read (``-1``: all).

    Raises ``PayloadLimitError`` without reading anything when the object's
    ``ContentLength`` is already over the call's ``max_bytes``. A body with a
    length within the limit is read whole (the HTTP layer reads no more than
    the length). A body without one may be read to one byte past the limit,
    so that :func:`checked_body` tells "at the limit" from "over it".
    """
    if call.max_bytes is None:
        return -1
    length = resp.get("ContentLength")
    if isinstance(length, int):
        if length > call.max_bytes:
            raise _body_too_large(call, f"{length} bytes")
        return -1
    return call.max_bytes + 1


def checked_body(call: Call, body: bytes) -> bytes:
    """The body a driver read within :func:`body_budget`, refused if over the limit."""
    if call.max_bytes is not None and len(body) > call.max_bytes:
        raise _body_too_large(call, "more than that")
    return body


def _body_too_large(call: Call, size: str) -> PayloadLimitError:
    where = f"s3://{call.kwargs.get('Bucket')}/{call.kwargs.get('Key')}"
    return PayloadLimitError(
        f"stored payload {where} is larger than max_payload_size ({call.max_bytes} bytes): {size}; "
        "refused before reading it. If it is legitimate, raise the saver's max_payload_size"
    )


def ddb(method: str, **kwargs: Any) -> Call:
    return Call("dynamodb", method, kwargs)


def s3(method: str, **kwargs: Any) -> Call:
    return Call("s3", method, kwargs)
