"""Reliability tier: print what the seeded tests actually injected (faults, crashes, orphans)."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    import sys

    lines = []
    for modname, attr in (
        ("tests.reliability.test_faults", "FAULT_STATS"),
        ("tests.reliability.test_crash", "CRASH_STATS"),
    ):
        mod = sys.modules.get(modname)
        stats = getattr(mod, attr, None) if mod else None
        if stats:
            lines.append(f"{attr.lower()}: " + ", ".join(f"{k}={v}" for k, v in sorted(stats.items())))
    if lines:
        terminalreporter.section("reliability")
        for line in lines:
            terminalreporter.write_line(line)
