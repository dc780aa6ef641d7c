"""Encryption end to end: a secret marker in state, metadata and writes is nowhere in plaintext.

Graphs run with ``EncryptedSerializer`` (AES-EAX) on the sync and async
savers, with thresholds that put payloads inline, in blob items and in S3.
The marker is in: channel values (a large one, stored in S3), node writes,
an ``interrupt()`` value and the ``Command(resume=...)`` answer (special
writes), user metadata (``config["metadata"]``) and a configurable key (which
LangGraph copies into metadata), and a ``DeltaChannel`` history. Then every
DynamoDB item and every S3 object is read raw: the marker must not appear in
any string, binary value, key, nor in anything that zlib or zstd decompresses.

The same run without encryption must expose the marker (the scanner works).

What stays in plaintext, by design (asserted below as an inventory of the
attribute names and string values found): keys (thread id, namespace,
checkpoint id, task id; the S3 keys built from them plus channel names and
versions), the item kind ``t``, format version ``f``, parent id ``p``, run id
``rid`` (the ``run_id-index`` partition key for ``delete_for_runs``), task id
``tid`` and task path ``tp`` (LangGraph's write order), channel names and
versions (``vals`` map keys and references, ``w<idx>`` channel names), the
delta channels a checkpoint rebuilds from ancestors (``dn``), timestamps
(``ct``, ``exp``, ``ua``, ``ttl``) and sizes (implicitly).
"""

from __future__ import annotations

import contextlib
import operator
import zlib
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.dynamodb import schema
from tests.reliability.workloads import _text
from tests.support.graphs import chat_graph
from tests.support.harness import (
    ENCRYPTION_KEY,
    Harness,
    LoopThread,
    cfg,
    checkpoint_of,
    new_thread,
    s3_objects,
    scan_table,
)

MARKER = "SeCrEt-MaRkEr-7f3a"


class SecretState(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]
    dossier: str
    answer: str


def secret_graph() -> StateGraph:
    def intake(state: SecretState) -> dict[str, Any]:
        return {"notes": [f"{MARKER} intake"], "dossier": f"{MARKER}:" + _text("dossier", 3000)}

    def ask(state: SecretState) -> dict[str, Any]:
        answer = interrupt({"question": f"confirm {MARKER}?"})
        return {"answer": answer, "notes": [f"asked about {MARKER}"]}

    def finish(state: SecretState) -> dict[str, Any]:
        return {"notes": [f"done {MARKER} " + _text("finish", 600)]}

    g = StateGraph(SecretState)
    g.add_node("intake", intake)
    g.add_node("ask", ask)
    g.add_node("finish", finish)
    g.add_edge(START, "intake")
    g.add_edge("intake", "ask")
    g.add_edge("ask", "finish")
    g.add_edge("finish", END)
    return g


def _run_secret_workload(h: Harness, saver: Any) -> str:
    thread = new_thread()
    config = {
        "configurable": {"thread_id": thread, "customer": f"{MARKER}-customer"},
        "metadata": {"account": f"{MARKER}-account", "run_id": "run-1"},
    }
    graph = secret_graph().compile(checkpointer=saver)
    out = h.invoke(graph, {"notes": []}, config)
    assert out["__interrupt__"][0].value == {"question": f"confirm {MARKER}?"}
    final = h.invoke(graph, Command(resume=f"{MARKER}-yes"), config)
    assert final["answer"] == f"{MARKER}-yes" and len(final["notes"]) == 3
    chat = chat_graph(delta=True, subgraph=True, snapshot_frequency=2).compile(checkpointer=saver)
    for i in range(3):
        h.invoke(chat, {"messages": [f"{MARKER} message {i} " + _text(f"m{i}", 400)]}, cfg(thread + "-chat"))
    # Everything reads back (decryption works end to end).
    assert h.get_state(graph, cfg(thread)).values["answer"] == f"{MARKER}-yes"
    assert len(h.history(chat, cfg(thread + "-chat"))) > 3
    # A value held by a checkpoint that prune deletes while a later one
    # references it: re-homed to a blob item, and encrypted there too.
    kept = thread + "-rehomed"
    doc = f"{MARKER} document " + _text("d", 600)
    parent = h.call(
        "put", cfg(kept), checkpoint_of({"doc": doc}), {"note": MARKER}, {"doc": "1"}, saver=saver
    )
    child = h.call("put", parent, checkpoint_of({"doc": doc}), {"note": MARKER}, {}, saver=saver)
    assert h.call("prune", [kept], saver=saver).values_rehomed == 1
    assert h.call("get_tuple", child, saver=saver).checkpoint["channel_values"] == {"doc": doc}
    return thread


def _strings_and_blobs(av: Any) -> tuple[list[str], list[bytes]]:
    """Every string and binary value inside a DynamoDB attribute value."""
    strings: list[str] = []
    blobs: list[bytes] = []
    stack = [av]
    while stack:
        v = stack.pop()
        for t, x in v.items():
            if t in ("S", "N"):
                strings.append(x)
            elif t in ("SS", "NS"):
                strings.extend(x)
            elif t == "B":
                blobs.append(bytes(x))
            elif t == "BS":
                blobs.extend(bytes(b) for b in x)
            elif t == "M":
                strings.extend(x.keys())
                stack.extend(x.values())
            elif t == "L":
                stack.extend(x)
    return strings, blobs


def _expansions(raw: bytes) -> list[bytes]:
    """The bytes themselves plus whatever zlib or zstd (the default codec's) can decompress from them
    (whole, or after a payload header)."""
    import zstandard

    out = [raw]
    starts = [0]
    if len(raw) >= 3 and raw[0] == 1:
        starts.append(3 + raw[2])
    for start in starts:
        with contextlib.suppress(zlib.error):
            out.append(zlib.decompress(raw[start:]))
        with contextlib.suppress(zstandard.ZstdError):
            out.append(zstandard.ZstdDecompressor().stream_reader(raw[start:]).read())
    return out


def _find_marker(table: str, bucket: str | None) -> list[str]:
    needle = MARKER.encode()
    hits: list[str] = []
    for item in scan_table(table):
        where = f"{item['PK']['S']}/{item['SK']['S']}"
        for name, av in item.items():
            strings, blobs = _strings_and_blobs(av)
            hits += [f"item {where} attr {name} (string)" for s in strings if MARKER in s]
            hits += [
                f"item {where} attr {name} (bytes)" for b in blobs for x in _expansions(b) if needle in x
            ]
    if bucket:
        for key, body in s3_objects(bucket).items():
            if MARKER in key:
                hits.append(f"s3 key {key}")
            hits += [f"s3 object {key}" for x in _expansions(body) if needle in x]
    return hits


#: Attribute names an item may carry (everything else would be unexpected plaintext).
DOCUMENTED_ATTRIBUTES = {
    "PK",
    "SK",
    "t",
    "f",
    "id",
    "p",
    "cp",
    "md",
    "vals",
    "rid",
    "tid",
    "tp",
    "b",
    "dn",
    "ct",
    "exp",
    "ts",
    "ua",
    "thr",
    "ttl",
    "rt",
}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_marker_is_nowhere_in_plaintext(
    moto_endpoint: str, names: dict[str, str], loop_thread: LoopThread, mode: str
) -> None:
    variant = "async-s3-encrypted" if mode == "async" else "sync-s3"
    h = Harness(variant, names["table_name"], names["bucket_name"], loop_thread)
    saver = h.make_saver(
        serde=EncryptedSerializer.from_pycryptodome_aes(key=ENCRYPTION_KEY),
        inline_threshold=128,
        s3_threshold=1024,
    )
    try:
        _run_secret_workload(h, saver)
        items = scan_table(names["table_name"])
        objects = s3_objects(names["bucket_name"])
        # The workload really used every place a payload can live.
        kinds = {it[schema.ATTR.KIND]["S"] for it in items}
        assert {schema.CHECKPOINT_ITEM, schema.WRITES_ITEM, schema.BLOB_ITEM} <= kinds
        assert any("/v/" in k for k in objects) and any("/w/" in k for k in objects)
        assert _find_marker(names["table_name"], names["bucket_name"]) == []
        # Inventory of what is plaintext: attribute names, and string values
        # only of the documented kinds (ids, names, versions, keys, numbers).
        for it in items:
            extra = {
                n
                for n in it
                if not (n in DOCUMENTED_ATTRIBUTES or (n[0] == "w" and n[1:].lstrip("-").isdigit()))
            }
            assert not extra, f"undocumented attributes {extra} on {it['SK']['S']}"
            for name in ("cp", "md", "b"):
                if name in it:
                    assert set(it[name]) <= {"B", "M"}  # a payload or an S3 pointer, never text
            for name in ("dn",):
                if name in it:
                    assert set(it[name]["SS"]) <= {"messages"}  # channel names only
    finally:
        if h.is_async:
            loop_thread.run(saver.aclose())
        else:
            saver.close()
        h.close()


def test_scanner_finds_the_marker_without_encryption(
    moto_endpoint: str, names: dict[str, str], loop_thread: LoopThread
) -> None:
    """Control: the same workload unencrypted leaves the marker in items, blobs and S3 objects."""
    h = Harness("sync-s3", names["table_name"], names["bucket_name"], loop_thread)
    saver = h.make_saver(inline_threshold=128, s3_threshold=1024)
    _run_secret_workload(h, saver)
    hits = _find_marker(names["table_name"], names["bucket_name"])
    assert any(" attr md " in x for x in hits), hits  # metadata
    assert any(" attr w" in x for x in hits), hits  # writes
    assert any("s3 object" in x for x in hits), hits  # S3 payloads (zlib- and zstd-compressed ones included)
    assert any(" attr b " in x for x in hits), hits  # blob items
    saver.close()
    h.close()
