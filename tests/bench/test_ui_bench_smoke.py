"""Smoke test of the inspector benchmark (``benchmarks.ui``, issue 15): tiny sizes against moto on 127.0.0.1."""

from __future__ import annotations

import pytest
from benchmarks import report_perf
from benchmarks.ui import UiParams, run_ui


@pytest.fixture
def storage(moto_endpoint: str, names: dict[str, str]) -> dict[str, str]:
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    with DynamoDBSaver(table_name=names["table_name"], bucket_name=names["bucket_name"]) as saver:
        saver.setup()
    return names


def test_page_views_are_counted_and_reported(storage: dict[str, str]) -> None:
    res = run_ui(
        storage["table_name"], storage["bucket_name"], UiParams(checkpoints=600, threads=3, repeats=1)
    )
    views = res["views"]
    newest, middle = views["thread page (newest 50)"], views["thread page (older 50, mid-thread)"]
    # Server-side paging: the middle of the thread reads about what its newest page does
    # (plus the keys of the page just newer, for the "newer" link), never the whole thread.
    assert newest["items_read"] <= middle["items_read"] <= 2 * newest["items_read"] < 600
    assert "dynamodb:Scan" not in newest["by_operation"] and newest["requests"] <= 8
    assert views["threads page (prefix: the big thread)"]["requests"] <= 8
    text = "\n".join(report_perf.ui_section({"ui": res}))
    assert "## Inspector page views" in text and "| thread page (newest 50) | `/thread` |" in text
