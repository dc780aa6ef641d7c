"""A stand-in for the part of a Lambda context the handlers read (the remaining time)."""

from __future__ import annotations

from langgraph.checkpoint.dynamodb.lambdas import handlers


class FakeContext:
    """The part of a Lambda context the handler reads."""

    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


#: Budget already spent (remaining time == the safety margin): one unit per call.
TINY = FakeContext(int(handlers.SAFETY_SECONDS * 1000))
#: Plenty of time: a whole operation in one call.
AMPLE = FakeContext(900_000)
