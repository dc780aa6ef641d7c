"""What the inspector's pages read: the library's own prune keep set, namespaces, and a bounded request budget."""

from __future__ import annotations

import urllib.error
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb.cli._ui import prune_marks, serve
from langgraph.checkpoint.dynamodb.cli._ui_reads import SUMMARY_ITEMS, thread_namespaces, thread_summary
from tests.ui.conftest import Store, opener


def _ids(saver: Any, thread_id: str, ns: str = "") -> list[str]:
    return [
        t.config["configurable"]["checkpoint_id"]
        for t in saver.list({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}})
    ]


@pytest.mark.parametrize("keep_last", [1, 2, 4])
def test_prune_marks_are_what_prune_keeps(ui_store: Store, keep_last: int) -> None:
    """Marks on a thread with a DeltaChannel (ancestors kept for it) match what prune then leaves."""
    saver = ui_store.saver
    source = ui_store.threads["subgraph"]
    marks = prune_marks(saver, source, "", keep_last)
    assert len(marks["survivors"]) == keep_last
    assert marks["keep"] > marks["survivors"]  # delta ancestors: the marks are not just "the newest N"
    copy = f"{source}-prune-{keep_last}-{uuid.uuid4().hex[:6]}"
    saver.copy_thread(source, copy)
    try:
        saver.prune([copy], keep_last=keep_last)
        assert set(_ids(saver, copy)) == marks["keep"]
    finally:
        saver.delete_thread(copy)


def test_prune_marks_without_delta_channels_keep_the_newest(ui_store: Store) -> None:
    saver = ui_store.saver
    ids = _ids(saver, ui_store.threads["archive"])
    marks = prune_marks(saver, ui_store.threads["archive"], "", 3)
    assert marks["keep"] == marks["survivors"] == set(ids[:3])


def test_namespaces_are_the_threads(ui_store: Store) -> None:
    saver = ui_store.saver
    tid = ui_store.threads["subgraph"]
    stored = {
        t.config["configurable"]["checkpoint_ns"] for t in saver.list({"configurable": {"thread_id": tid}})
    }
    found = thread_namespaces(saver, tid)
    assert found[0] == "" and set(found) == stored and len(found) == 5  # root + one run per turn
    assert thread_namespaces(saver, ui_store.threads["archive"]) == [""]
    assert thread_namespaces(saver, "no-such-thread") == []


class _Calls:
    """Counts the AWS operations the saver's clients send, and the items DynamoDB read for them."""

    def __init__(self, saver: Any) -> None:
        self.ops: Counter[str] = Counter()
        self._clients = [c for c in saver.clients.values() if c is not None]
        self._uid = f"ui-count-{id(self)}"
        for c in self._clients:
            c.meta.events.register("before-call", self._count, unique_id=self._uid)
            c.meta.events.register("after-call", self._scanned, unique_id=self._uid + "-after")

    def _count(self, model: Any, **_: Any) -> None:
        self.ops[model.name] += 1

    def _scanned(self, parsed: Any, model: Any, **_: Any) -> None:
        if isinstance(parsed, dict) and "ScannedCount" in parsed:
            self.ops["items read"] += int(parsed["ScannedCount"])

    def close(self) -> None:
        for c in self._clients:
            c.meta.events.unregister("before-call", unique_id=self._uid)
            c.meta.events.unregister("after-call", unique_id=self._uid + "-after")


@pytest.fixture
def long_thread(ui_store: Store) -> Iterator[tuple[str, str]]:
    """Two threads, 250 and 500 checkpoints (both longer than what a page reads): a page view must cost the same on both."""
    from benchmarks.ui import _build_thread

    short, long = f"short-{uuid.uuid4().hex[:6]}", f"long-{uuid.uuid4().hex[:6]}"
    _build_thread(ui_store.saver, short, 250)
    _build_thread(ui_store.saver, long, 500)
    yield short, long
    for t in (short, long):
        ui_store.saver.delete_thread(t)


def test_thread_page_cost_does_not_grow_with_the_thread(
    ui_store: Store, long_thread: tuple[str, str]
) -> None:
    server = serve(ui_store.saver)
    calls = _Calls(ui_store.saver)
    try:
        costs = []
        for tid in long_thread:
            calls.ops.clear()
            with opener(server.auth_headers).open(
                server.url + "thread?" + urllib.parse.urlencode({"id": tid})
            ) as resp:
                page = resp.read().decode()
            assert page.count('<tr data-id="') == 50
            costs.append(dict(calls.ops))
        assert costs[0] == costs[1], costs
        requests = sum(n for op, n in costs[1].items() if op != "items read")
        assert "Scan" not in costs[1] and requests <= 8, costs[1]
        assert costs[1]["items read"] < 300, costs[1]  # one page of the timeline, not the thread
    finally:
        calls.close()
        server.shutdown()
        server.server_close()


def test_a_threads_page_row_reads_a_bounded_page_of_a_long_thread(
    ui_store: Store, long_thread: tuple[str, str]
) -> None:
    """A row's counts come from one eventually consistent Query of at most SUMMARY_ITEMS items."""
    saver = ui_store.saver
    _, long = long_thread
    queries: list[dict[str, Any]] = []
    client = saver.clients["dynamodb"]
    uid = f"ui-query-{uuid.uuid4().hex[:6]}"
    client.meta.events.register(
        "before-parameter-build.dynamodb.Query",
        lambda params, **_: queries.append(dict(params)),
        unique_id=uid,
    )
    calls = _Calls(saver)
    try:
        summary = thread_summary(saver, long)
        assert summary["complete"] is False and summary["checkpoints"] <= SUMMARY_ITEMS
        assert summary["step"] is not None  # the latest checkpoint was read too
        assert calls.ops["items read"] <= SUMMARY_ITEMS + 10, calls.ops  # the row's page, then get_tuple's
        counted = queries[0]
        assert counted["Limit"] == SUMMARY_ITEMS and not counted.get("ConsistentRead"), counted
        # The page view: a prefix matching only the long thread reads one bounded page for its row.
        server = serve(saver)
        try:
            calls.ops.clear()
            url = server.url + "?" + urllib.parse.urlencode({"prefix": long})
            with opener(server.auth_headers).open(url) as resp:
                page = resp.read().decode()
            assert long in page and "≥ " in page
            assert calls.ops["items read"] < 300, calls.ops
        finally:
            server.shutdown()
            server.server_close()
    finally:
        calls.close()
        client.meta.events.unregister("before-parameter-build.dynamodb.Query", unique_id=uid)


def test_connection_options_tenant_and_encryption(
    moto_endpoint: str, names: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ui --tenant-prefix acme --encrypted``: that tenant's threads only, decrypted; the CLI's saver factory."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from langgraph.checkpoint.dynamodb.cli._commands import make_saver
    from langgraph.checkpoint.dynamodb.cli._parser import build_parser
    from tests.support import graphs

    monkeypatch.setenv("LANGGRAPH_AES_KEY", "0123456789abcdef0123456789abcdef")
    serde = EncryptedSerializer.from_pycryptodome_aes()
    for tenant, thread in (("acme", "acme-chat"), ("other", "other-chat")):
        with DynamoDBSaver(**names, serde=serde, tenant_prefix=tenant) as saver:
            saver.setup()
            graphs.requirement_graph().compile(checkpointer=saver).invoke(
                {"request": f"secret of {tenant}"}, {"configurable": {"thread_id": thread}}, durability="sync"
            )
    args = build_parser().parse_args(
        [
            "ui",
            "--table",
            names["table_name"],
            "--bucket",
            names["bucket_name"],
            "--tenant-prefix",
            "acme",
            "--encrypted",
        ]
    )
    saver = make_saver(args)
    server = serve(saver)
    try:
        with opener(server.auth_headers).open(server.url) as resp:
            page = resp.read().decode()
        assert ">acme-chat</a>" in page and "other-chat" not in page
        with opener(server.auth_headers).open(server.url + "checkpoint?thread=acme-chat") as resp:
            page = resp.read().decode()
        assert "secret of acme" in page
        with pytest.raises(urllib.error.HTTPError) as err:  # another tenant's thread is not there for it
            opener(server.auth_headers).open(server.url + "thread?id=other-chat")
        assert err.value.code == 404
    finally:
        server.shutdown()
        server.server_close()
        saver.close()
