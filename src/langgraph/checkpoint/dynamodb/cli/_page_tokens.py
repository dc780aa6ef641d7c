"""Page tokens of ``threads`` listings: a listing's state as opaque text, and its strict reading back (a token is user input)."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any, Final

from langgraph.checkpoint.dynamodb._operations.heads import valid_shard_count
from langgraph.checkpoint.dynamodb.cli._base import EXIT_USAGE, CLIError
from langgraph.checkpoint.dynamodb.schema import ATTR


def encode_token(state: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode().rstrip("=")


_BAD_TOKEN: Final = (
    "invalid page token: pass the --page-token value printed by the previous page of the same listing"
)


def bad_token_error() -> CLIError:
    """The one error for any page token we cannot continue from (usage, ``bad_page_token``)."""
    return CLIError(_BAD_TOKEN, EXIT_USAGE, "bad_page_token")


def _is_key_value(av: Any) -> bool:
    return (
        isinstance(av, dict)
        and len(av) == 1
        and next(iter(av)) in ("S", "N")
        and isinstance(next(iter(av.values())), str)
    )


def decode_token(token: str) -> dict[str, Any]:
    """A page token's state, checked field by field: a token is user input.

    Whatever is wrong with it (not base64, not JSON, not ours, edited), the
    message is the same and names no codec.
    """
    try:
        state = json.loads(base64.urlsafe_b64decode(token.strip() + "=" * (-len(token.strip()) % 4)))
    except (ValueError, binascii.Error):  # UnicodeDecodeError is a ValueError
        raise bad_token_error() from None
    if not isinstance(state, dict) or state.get("v") != 1 or state.get("src") not in ("index", "scan"):
        raise bad_token_error()
    filters = state.get("f", {})
    if not isinstance(filters, dict) or not all(
        (k == "p" and isinstance(v, str))
        or (k in ("a", "i") and isinstance(v, int) and not isinstance(v, bool))
        for k, v in filters.items()
    ):
        raise bad_token_error()
    if state["src"] == "scan":
        offset = state.get("o")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise bad_token_error()
    else:
        cursors = state.get("s")
        if (
            not isinstance(cursors, dict)
            or not valid_shard_count(len(cursors))
            or set(cursors) != {str(i) for i in range(len(cursors))}
        ):
            raise bad_token_error()
        for shard, cursor in cursors.items():
            if cursor is None or cursor == "done":
                continue
            keys = {ATTR.THREAD_SHARD, ATTR.UPDATED_AT, ATTR.PK, ATTR.SK}
            if (
                not isinstance(cursor, dict)
                or set(cursor) != keys
                or not all(_is_key_value(av) for av in cursor.values())
                or cursor[ATTR.THREAD_SHARD] != {"S": shard}
            ):
                raise bad_token_error()
    return state
