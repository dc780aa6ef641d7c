"""The library's clock: one function, so tests can move time without sleeping.

Activity stamps, TTLs, grace periods and deadlines all read ``now()``.
"""

from __future__ import annotations

import time

__all__ = ["now"]


def now() -> float:
    """Seconds since the epoch."""
    return time.time()
