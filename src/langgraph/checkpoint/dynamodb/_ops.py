"""Sans-I/O request descriptions.

The savers' logic is written once, as generators that *yield* what they need
(a DynamoDB or S3 call, several calls at once, a pause) and receive the
result. ``DynamoDBSaver`` runs those generators with boto3, and
``AsyncDynamoDBSaver`` with aiobotocore; neither contains logic of its own.
This is how the sync and async savers stay identical in behaviour.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

R = TypeVar("R")

Service = Literal["dynamodb", "s3"]


@dataclass(frozen=True, slots=True)
class Call:
    """One API call. The driver returns the response dict.

    For ``s3.get_object`` the driver reads the body, so the response's
    ``Body`` is ``bytes`` in both drivers.
    """

    service: Service
    method: str
    kwargs: dict[str, Any] = field(default_factory=dict)


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


def ddb(method: str, **kwargs: Any) -> Call:
    return Call("dynamodb", method, kwargs)


def s3(method: str, **kwargs: Any) -> Call:
    return Call("s3", method, kwargs)
