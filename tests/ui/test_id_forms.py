"""The inspector takes every checkpoint id form the CLI takes (issue 39, item 4).

The short ids its own pages display (``short_id``), ``latest``, and a
prefix, in the checkpoint page (``/checkpoint?id=``, ``against=``) and in the
diff form (``/diff?a=&b=``); the same as ``langgraph-dynamodb show``.
"""

from __future__ import annotations

import html
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb.cli._render import short_id
from tests.ui.conftest import Store
from tests.ui.test_http import q, request


def _ids(ui_store: Store) -> list[str]:
    conf = {"configurable": {"thread_id": ui_store.threads["main"], "checkpoint_ns": ""}}
    return [t.config["configurable"]["checkpoint_id"] for t in ui_store.saver.list(conf)]


def _forms(cid: str, newest: str) -> list[tuple[str, str]]:
    return [("short", short_id(cid)), ("prefix", cid[:18]), ("full", cid)] + (
        [("latest", "latest")] if cid == newest else []
    )


@pytest.mark.parametrize("which", ["newest", "older"])
def test_checkpoint_page_takes_every_cli_form(inspector: str, ui_store: Store, which: str) -> None:
    ids = _ids(ui_store)
    cid = ids[0] if which == "newest" else ids[len(ids) // 2]
    thread = ui_store.threads["main"]
    for form, ref in _forms(cid, ids[0]):
        status, _, body = request(inspector, q("/checkpoint", thread=thread, id=ref))
        assert status == 200, (form, ref, body[:300])
        assert cid in html.unescape(body), (form, ref)


def test_diff_form_takes_short_ids(inspector: str, ui_store: Store) -> None:
    ids = _ids(ui_store)
    thread = ui_store.threads["main"]
    assert len(ids) >= 2
    a, b = ids[-1], ids[0]
    status, _, body = request(inspector, q("/diff", thread=thread, a=short_id(a), b="latest"))
    assert status == 200, body[:300]
    text = html.unescape(body)
    assert "not found" not in text, text[:500]
    assert b in text
    full: Any = request(inspector, q("/diff", thread=thread, a=a, b=b))
    assert full[0] == 200
    status, _, body = request(inspector, q("/checkpoint", thread=thread, id=short_id(b), against=short_id(a)))
    assert status == 200 and "not found" not in html.unescape(body)


def test_an_id_that_matches_nothing_is_still_not_found(inspector: str, ui_store: Store) -> None:
    status, _, body = request(inspector, q("/checkpoint", thread=ui_store.threads["main"], id="zzzzzz"))
    assert status == 404, body[:300]
