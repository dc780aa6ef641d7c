"""Which checkpoint a user means: one resolver for the CLI and the inspector.

Both accept the same forms, so an id copied from one works in the other: a
full checkpoint id, a unique prefix or suffix of one (the short ids both
display, ``short_id``), or ``latest`` (or nothing) for the namespace's
newest checkpoint.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.dynamodb.cli._base import EXIT_NOT_FOUND, EXIT_USAGE, CLIError
from langgraph.checkpoint.dynamodb.cli._render import shell_quote
from langgraph.checkpoint.dynamodb.cli._thread_listing import require_thread

__all__ = ["is_latest", "resolve_checkpoint"]


def is_latest(ref: str | None) -> bool:
    """Whether ``ref`` names the newest checkpoint (``latest``, empty or absent)."""
    return ref in (None, "", "latest")


def resolve_checkpoint(saver: Any, thread_id: str, ns: str, ref: str | None) -> Any:
    """The checkpoint tuple ``ref`` names in ``thread_id``'s namespace ``ns``.

    A full id is one ``get_tuple``; a short id lists the namespace and needs
    exactly one checkpoint id that starts or ends with it.

    Raises:
        CLIError: ``checkpoint_not_found`` (exit 3), or ``ambiguous_checkpoint``
            (exit 2) naming up to five of the ids that match.
    """
    base = {"thread_id": thread_id, "checkpoint_ns": ns}
    if is_latest(ref):
        tup = saver.get_tuple({"configurable": base})
        if tup is None:
            require_thread(saver, thread_id)
            raise CLIError(
                f"thread {shell_quote(thread_id)} has no checkpoint in namespace {shell_quote(ns)}",
                EXIT_NOT_FOUND,
                "checkpoint_not_found",
            )
        return tup
    assert ref is not None
    tup = saver.get_tuple({"configurable": {**base, "checkpoint_id": ref}})
    if tup is not None:
        return tup
    matches = [
        t
        for t in saver.list({"configurable": base})
        if (cid := t.config["configurable"]["checkpoint_id"]).startswith(ref) or cid.endswith(ref)
    ]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        require_thread(saver, thread_id)
        raise CLIError(
            f"checkpoint {shell_quote(ref)} not found in thread {shell_quote(thread_id)}",
            EXIT_NOT_FOUND,
            "checkpoint_not_found",
        )
    shown = ", ".join(m.config["configurable"]["checkpoint_id"] for m in matches[:5])
    raise CLIError(
        f"checkpoint {ref!r} is ambiguous: {len(matches)} checkpoints start or end with it ({shown}"
        f"{', ...' if len(matches) > 5 else ''}); give more of the id",
        EXIT_USAGE,
        "ambiguous_checkpoint",
    )
