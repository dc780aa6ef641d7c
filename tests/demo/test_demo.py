"""``python -m demo`` (``make demo``) end to end, as a user runs it: a subprocess, its output checked.

The demo starts its own moto server on 127.0.0.1, so the environment given
to it has no AWS settings at all: nothing can leak to a real account.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_output() -> tuple[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LANGGRAPH_", "DEMO_"))}
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "demo"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
    )
    took = time.monotonic() - began
    assert proc.returncode == 0, f"demo failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout, took


def marks(out: str, stage: str) -> list[str]:
    return [
        line.strip()[len(f"[{stage}] ") :]
        for line in out.splitlines()
        if line.strip().startswith(f"[{stage}] ")
    ]


def test_every_stage_is_narrated(demo_output: tuple[str, float]) -> None:
    out, _ = demo_output
    for letter in "abcdefg":
        assert f"==== ({letter}) " in out, f"stage {letter} missing"
    assert "local AWS endpoint (moto) on http://127.0.0.1:" in out


def test_a_interrupt_question(demo_output: tuple[str, float]) -> None:
    out, _ = demo_output
    assert marks(out, "a") == [
        "question: Which export format do you need (CSV, XLSX or JSON), and which roles may export?"
    ]
    assert "missing format, roles" in out


def test_b_resumed_in_another_process(demo_output: tuple[str, float]) -> None:
    out, _ = demo_output
    (line,) = marks(out, "b")
    m = re.fullmatch(r"resumed in process (\d+) \(this one is (\d+)\): (.*)", line)
    assert m, line
    assert m.group(1) != m.group(2)
    assert m.group(3) == "delivered CSV export for admin, auditor after 2 review round(s)"
    assert "reviewer: round 1: changes requested: escape spreadsheet formulas" in out


def test_c_crash_recovered_without_rerunning_finished_nodes(demo_output: tuple[str, float]) -> None:
    out, _ = demo_output
    killed, recovered, outcome = marks(out, "c")
    assert killed == "worker process killed: exit status -9 (signal 9)"
    assert recovered == (
        "recovered without re-running finished nodes: tester ran 1 time(s), "
        "developer 2 (1 killed + 1 after recovery), planner 1"
    )
    assert "finished before the crash: ['tester']" in out
    assert outcome == "outcome: delivered JSON export for admin after 1 review round(s)"


def test_d_history(demo_output: tuple[str, float]) -> None:
    out, _ = demo_output
    assert marks(out, "d") == ["9 checkpoints, newest first"]
    assert "developer, tester" in out  # the parallel step
    assert "release: outcome, log" in out  # the CLI's derived node writes


def test_e_fork(demo_output: tuple[str, float]) -> None:
    out, _ = demo_output
    assert marks(out, "e") == [
        "fork outcome: delivered XLSX export for admin after 2 review round(s)",
        "original branch unchanged: delivered CSV export for admin, auditor after 2 review round(s)",
    ]


def test_f_copy_and_prune(demo_output: tuple[str, float]) -> None:
    out, _ = demo_output
    copy, prune = marks(out, "f")
    m = re.fullmatch(r"copy: '(.+)-archive' has (\d+) checkpoints \(source (\d+)\)", copy)
    assert m and m.group(2) == m.group(3) == "16", copy
    m = re.fullmatch(r"prune keep_last=2: 16 -> (\d+) checkpoints \((\d+) deleted, .*", prune)
    assert m, prune
    assert int(m.group(1)) >= 2 and int(m.group(1)) + int(m.group(2)) == 16
    assert "latest state still loads after pruning: yes, identical" in out
    assert "archive's latest state: delivered XLSX export" in out


def test_g_store_contents(demo_output: tuple[str, float]) -> None:
    out, _ = demo_output
    (line,) = marks(out, "g")
    m = re.fullmatch(
        r"store: 3 threads, (\d+) checkpoints; DynamoDB (\d+) items \(checkpoint \d+, writes \d+\), "
        r"([\d,]+) bytes; S3 (\d+) objects, ([\d,]+) bytes",
        line,
    )
    assert m, line
    assert int(m.group(4)) > 0  # the fixture spilled to S3
    assert int(m.group(5).replace(",", "")) > 64 * 1024


def test_runs_quickly(demo_output: tuple[str, float]) -> None:
    out, took = demo_output
    m = re.search(r"demo finished in ([\d.]+)s", out)
    assert m
    assert took < 60, f"the demo took {took:.1f}s"


def test_closing_hint_points_at_an_endpoint_that_stays_up(demo_output: tuple[str, float]) -> None:
    """The demo's own endpoint dies with it: the last words must not send the user there."""
    out, _ = demo_output
    tail = out.split("demo finished in", 1)[1]
    assert "127.0.0.1" not in tail and "--table" not in tail
    from langgraph.checkpoint.dynamodb.cli._parser import build_parser

    commands = re.findall(r"langgraph-dynamodb (\w+)", tail)
    assert commands and commands[0] == "local"
    # ... and how to see it in the browser: the inspector on a store that stays up, or the demo's own (--ui).
    assert "ui" in commands and "python -m demo --ui" in tail
    parser = build_parser()
    for command in commands:  # every command the hint names exists
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args([command, "--help"])
        assert exit_info.value.code == 0
