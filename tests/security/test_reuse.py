"""A thread id reused for ever: its tombstone and head stay small, and every cycle still works.

Each delete adds an entry (~47 bytes) to the thread's tombstone and its head; kept for
``schema.FINALITY_WINDOW`` only, they grew past DynamoDB's 400 KB after ~8,700 cycles
within that window, and the thread could no longer be read or deleted. Now a delete
also forgets the oldest entries beyond ``schema.TOMBSTONE_ENTRIES_MAX``. CI runs the
cycles with a small cap (the same code path, a plateau after a few cycles);
``make soak`` runs 10,000 cycles with the real one.
"""

from __future__ import annotations

import os

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import DynamoDBSaver, schema
from tests.support.harness import cfg, new_thread, scan_table, shared_store

SOAK = bool(os.environ.get("SOAK"))


@pytest.fixture(scope="module")
def store(moto_endpoint: str) -> dict[str, str]:
    return shared_store("reuse")


def _size(item: dict) -> int:  # type: ignore[type-arg]
    from langgraph.checkpoint.dynamodb._parts.shapes import item_size

    return item_size(item)


def test_tombstone_and_head_stay_bounded_over_many_cycles(
    store: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cap, cycles = (schema.TOMBSTONE_ENTRIES_MAX, 10_000) if SOAK else (8, 40)
    monkeypatch.setattr(schema, "TOMBSTONE_ENTRIES_MAX", cap)
    saver = DynamoDBSaver(table_name=store["table_name"], ttl=3600)
    thread = new_thread()
    pk = saver.partition_key(thread)
    sizes: list[int] = []
    for n in range(cycles):
        cp = empty_checkpoint()
        cp["id"] = str(uuid6())
        cp["channel_values"] = {"v": n}
        cp["channel_versions"] = {"v": "1"}
        saver.put(cfg(thread), cp, {}, {"v": "1"})
        assert saver.get_tuple(cfg(thread)).checkpoint["channel_values"] == {"v": n}  # type: ignore[union-attr]
        saver.delete_thread(thread)
        assert saver.get_tuple(cfg(thread)) is None
        if n % max(1, cycles // 20) == 0 or n == cycles - 1:
            items = [it for it in scan_table(store["table_name"]) if it["PK"]["S"] == pk]
            sizes.append(max(_size(it) for it in items))
    entries = [it for it in scan_table(store["table_name"]) if it["PK"]["S"] == pk and "dr" in it]
    assert entries and all(len(it["dr"]["SS"]) <= cap + 2 for it in entries)
    # Bounded: the largest item stops growing once the cap is reached.
    assert sizes[-1] <= sizes[len(sizes) // 2] + 200, sizes
    assert sizes[-1] < 400 * 1024
