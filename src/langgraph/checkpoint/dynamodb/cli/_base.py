"""The CLI's leaves: exit codes, environment names, errors (CLIError, AWS error codes) and argument value types; imports no other CLI module."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import time
from collections.abc import Mapping
from typing import Final

from langgraph.checkpoint.dynamodb import config

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_CREDENTIALS: Final = 3
EXIT_NOT_FOUND: Final = 4
EXIT_REFUSED: Final = 5
EXIT_UNSUPPORTED: Final = 6
EXIT_INTERRUPTED: Final = 130
#: stdout closed by its reader (``| head``): what a shell reports for a tool killed by SIGPIPE.
EXIT_PIPE: Final = 141

# The package's one set of names (see langgraph.checkpoint.dynamodb.config).
ENV_TABLE: Final = config.ENV_TABLE
ENV_BUCKET: Final = config.ENV_BUCKET
ENV_S3_PREFIX: Final = config.ENV_S3_KEY_PREFIX
ENV_TENANT: Final = config.ENV_TENANT_PREFIX

DEFAULT_LOCAL_TABLE: Final = "langgraph-checkpoints"
DEFAULT_LOCAL_BUCKET: Final = "langgraph-checkpoints"

CREDENTIAL_CODES = {
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidAccessKeyId",
    "AccessDenied",
    "AccessDeniedException",
    "MissingAuthenticationToken",
}


class CLIError(Exception):
    """An error with a message for people, a stable ``code`` for scripts and an exit code.

    Example:
        >>> err = CLIError("thread 't-1' not found", EXIT_NOT_FOUND, "thread_not_found")
        >>> (err.exit_code, err.code)
        (4, 'thread_not_found')
    """

    def __init__(self, message: str, exit_code: int = EXIT_ERROR, code: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = code


class StdoutClosed(Exception):
    """Whoever read our stdout stopped (``... | head -1``): stop quietly."""


def client_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ``ClientError`` (``""`` for any other exception)."""
    response = getattr(exc, "response", None)
    if isinstance(response, Mapping):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)")
_UNIT_S: Final = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}


def parse_when(text: str, now: float | None = None) -> int:
    """An instant (epoch ms) from a duration ago (``90s``, ``30m``, ``2h``, ``7d``, ``1w``, ``1h30m``) or an ISO time.

    ISO times without a zone are UTC; a date alone is its midnight UTC.

    Example:
        >>> parse_when("1h30m", now=10_000.0)
        4600000
        >>> parse_when("2026-01-01")
        1767225600000
    """
    spec = text.strip().lower().replace(" ", "")
    if spec and _DURATION.sub("", spec) == "":
        seconds = sum(float(n) * _UNIT_S[u] for n, u in _DURATION.findall(spec))
        return int(((time.time() if now is None else now) - seconds) * 1000)
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"not a duration (30m, 2h, 7d, 1h30m) or an ISO time (2026-11-29T10:00:00Z): {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def when_text(text: str) -> int:
    try:
        return parse_when(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text!r}")
    return value
