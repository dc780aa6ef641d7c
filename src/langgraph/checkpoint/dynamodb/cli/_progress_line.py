"""A progress line for long commands (copy, prune, stats, migrate): one self-overwriting status line on stderr."""

from __future__ import annotations

import threading
import time
from typing import TextIO

__all__ = ["ProgressLine"]


class ProgressLine:
    """One self-overwriting status line on stderr, at most every ``interval`` seconds.

    A context manager; :meth:`update` may be called as often as wanted (it
    is throttled), :meth:`tick` keeps a line alive with the elapsed time
    while one long call runs. The line is erased at the end, so what the
    command prints afterwards stands alone.
    """

    def __init__(self, stream: TextIO | None, what: str, interval: float = 0.2) -> None:
        self.stream, self.what, self.interval = stream, what, interval
        self.started = time.monotonic()
        self._last = 0.0
        self._shown = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            if self.stream is not None and self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()

    def update(self, text: str, *, force: bool = False) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        with self._lock:
            if not force and now - self._last < self.interval:
                return
            self._last = now
            self.stream.write(f"\r\x1b[K{self.what}: {text}")
            self.stream.flush()
            self._shown = True

    def tick(self, text: str) -> None:
        """Show ``text`` now, then with the elapsed seconds every second until the end."""
        self.update(text, force=True)
        if self.stream is None:
            return

        def run() -> None:
            while not self._stop.wait(1.0):
                self.update(f"{text} ({time.monotonic() - self.started:.0f} s)", force=True)

        self._ticker = threading.Thread(target=run, daemon=True)
        self._ticker.start()
