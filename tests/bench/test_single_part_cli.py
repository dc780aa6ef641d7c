"""The command line the single-part benchmarks share (``benchmarks.orchestrate.single_part_cli``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.counting import LatencyModel
from benchmarks.orchestrate import single_part_cli


def test_options_reach_the_run_and_the_result_is_written(tmp_path: Path) -> None:
    seen: list[tuple[Any, ...]] = []

    def run(table: str, bucket: str, quick: bool, latency: LatencyModel | None) -> dict[str, Any]:
        seen.append((table, bucket, quick, latency))
        return {"ok": table}

    out = tmp_path / "r.json"
    got = single_part_cli(
        "prog", "Doc.\n\nMore.", "x", run, ["--table", "T", "--latency", "none", "--out", str(out)]
    )
    assert got == {"ok": "T"} and json.loads(out.read_text()) == {"ok": "T"}
    single_part_cli("prog", "Doc.", "x", run, ["--quick", "--table", "T", "--bucket", "B"])
    assert seen[0] == ("T", "T", False, None)
    assert seen[1][:3] == ("T", "B", True) and isinstance(seen[1][3], LatencyModel)
