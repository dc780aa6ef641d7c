"""Classes for the serializer's security tests; imported only where a test says so.

``tests/security/test_serde_types.py`` checks whether a stored value can reach
these. A reader that has not imported this module must never import it because a
payload names it (its import-time code would run): ``IMPORTED_MARKER`` records
every import, in the process's environment, for a child process to report.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from pathlib import Path

# Import-time code, as some installed modules have: a payload must not trigger it.
_marker = os.environ.get("SERDE_GADGETS_IMPORT_MARKER")
if _marker:
    Path(_marker).touch()


@dataclasses.dataclass
class TouchOnInit:
    """A dataclass whose ``__post_init__`` acts on its data (touches ``path``)."""

    path: str

    def __post_init__(self) -> None:
        Path(self.path).touch()


class Plain:
    """Not a data class (LangGraph writes it as a named tuple, for its ``_asdict``): revived only if allowlisted."""

    def __init__(self, **kwargs: object) -> None:
        self.kwargs = kwargs

    def _asdict(self) -> dict[str, object]:
        return dict(self.kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plain) and other.kwargs == self.kwargs


class Mood(enum.Enum):
    CALM = "calm"


def touch(path: str) -> None:
    """A module-level function: never callable from a stored payload."""
    Path(path).touch()
