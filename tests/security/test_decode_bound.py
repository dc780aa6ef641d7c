"""Decoding is bounded in the objects it builds, not only in bytes (issue 26, #9).

``max_payload_size`` bounds a payload's bytes. One byte of msgpack can be an
empty map, which Python holds in ~72 bytes, so a forged 2 MB payload (a few
KB compressed, under any byte limit) took a reader to ~150 MB. Readers now
count a payload's objects from its bytes before decoding it and refuse one
over ``max_payload_objects``; writers refuse to store what readers would
refuse; the import checks every record the same way.
"""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.dynamodb import PayloadLimitError, PayloadTooLargeError
from langgraph.checkpoint.dynamodb._parts.objects import count_objects
from langgraph.checkpoint.dynamodb.config import saver_kwargs_from_env
from langgraph.checkpoint.dynamodb.tools.transfer import export_thread, import_thread
from tests.support.harness import Harness, cfg, checkpoint_of, new_thread

MIB = 1024 * 1024
#: Two million empty maps: 2 MB of msgpack, ~150 MB of Python objects.
N = 2_000_000


def _objects(o: Any) -> int:
    if isinstance(o, dict):
        return 1 + sum(_objects(k) + _objects(v) for k, v in o.items())
    if isinstance(o, (list, tuple)):
        return 1 + sum(_objects(x) for x in o)
    return 1


def _random(r: random.Random, depth: int = 0) -> Any:
    roll = r.random()
    if depth > 3 or roll < 0.4:
        return r.choice(
            [
                0,
                -5,
                300,
                -70_000,
                2**40,
                1.5,
                None,
                True,
                "s" * r.randint(0, 300),
                b"b" * r.randint(0, 70_000),
            ]
        )
    if roll < 0.7:
        return [_random(r, depth + 1) for _ in range(r.randint(0, 10))]
    return {f"k{i}" * r.randint(1, 3): _random(r, depth + 1) for i in range(r.randint(0, 10))}


def test_the_count_is_exact_for_msgpack_and_an_upper_bound_for_json() -> None:
    r = random.Random(7)
    for _ in range(200):
        value = _random(r)
        assert count_objects("msgpack", ormsgpack.packb(value), 10**9) == _objects(value)
        assert count_objects("json", json.dumps(value, default=len).encode(), 10**9) >= _objects(value)
    # LangGraph's own types are ext records holding msgpack: counted inside.
    from langchain_core.messages import AIMessage

    typed = JsonPlusSerializer().dumps_typed([AIMessage(content="hi", id="1")] * 3)
    assert count_objects(*typed, 10**9) > 3 * 5
    # Counting stops one object past the limit, however many follow.
    assert count_objects("msgpack", ormsgpack.packb([{}] * N), 1000) == 1001
    assert count_objects("bytes", b"\x80" * N, 10) == 1
    # One document: bytes after it are never decoded, so never counted.
    assert count_objects("msgpack", b"\x00" + bytes(N), 10) == 1


@pytest.fixture(params=["sync", "async-s3-encrypted"])
def h(request: pytest.FixtureRequest, moto_endpoint: str, names: dict[str, str], loop_thread: Any) -> Any:
    harness = Harness(request.param, names["table_name"], names["bucket_name"], loop_thread)
    yield harness
    harness.close()


def _put_many_maps(h: Harness) -> tuple[str, Any]:
    """A checkpoint whose channel is ``N`` empty maps, put by a writer that allows it."""
    writer = h.make_saver(max_payload_objects=10 * N)
    thread = new_thread()
    first = h.call(
        "put", cfg(thread), checkpoint_of({"x": "small"}, {"x": "1"}), {}, {"x": "1"}, saver=writer
    )
    cp = checkpoint_of({"x": [{}] * N}, {"x": "2"})  # one dict N times: cheap here, N dicts once decoded
    h.call("put", first, cp, {}, {"x": "2"}, saver=writer)
    return thread, writer


def test_a_payload_of_too_many_objects_is_refused_before_it_is_built(h: Harness) -> None:
    thread, writer = _put_many_maps(h)
    reader = h.make_saver()
    tracemalloc.start()
    try:
        with pytest.raises(PayloadLimitError, match="max_payload_objects") as info:
            h.call("get_tuple", cfg(thread), saver=reader)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "1,000,000 objects" in str(info.value) and "{}" not in str(info.value)
    assert peak < 30 * MIB, f"peak {peak / MIB:.0f} MiB: decoded before counting"
    # A reader that allows more reads it whole.
    roomy = h.make_saver(max_payload_objects=3 * N)
    got = h.call("get_tuple", cfg(thread), saver=roomy)
    assert len(got.checkpoint["channel_values"]["x"]) == N
    del writer


def test_a_write_a_reader_would_refuse_is_refused_and_nothing_changes(h: Harness) -> None:
    thread = new_thread()
    first = h.call("put", cfg(thread), checkpoint_of({"x": "small"}, {"x": "1"}), {}, {"x": "1"})
    with pytest.raises(PayloadTooLargeError, match=r"max_payload_objects.*nothing was written"):
        h.call("put", first, checkpoint_of({"x": [{}] * N}, {"x": "2"}), {}, {"x": "2"})
    with pytest.raises(PayloadTooLargeError, match="max_payload_objects"):
        h.call("put_writes", first, [("x", [[]] * N)], "task-1")
    latest = h.call("get_tuple", cfg(thread))
    assert latest.checkpoint["channel_values"] == {"x": "small"} and latest.pending_writes == []


def test_the_import_refuses_a_record_of_too_many_objects(
    moto_endpoint: str, names: dict[str, str], loop_thread: Any
) -> None:
    h = Harness("sync", names["table_name"], names["bucket_name"], loop_thread)
    try:
        thread, writer = _put_many_maps(h)
        buf = io.StringIO()
        export_thread(writer, thread, buf)
        target = new_thread()
        tracemalloc.start()
        try:
            with pytest.raises(Exception, match="max_payload_objects"):
                import_thread(h.make_saver(), io.StringIO(buf.getvalue()), thread_id=target)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 50 * MIB, f"peak {peak / MIB:.0f} MiB"
        assert h.call("get_tuple", cfg(target)) is None  # nothing written
        # Allowed by the target saver, the same file imports.
        import_thread(h.make_saver(max_payload_objects=3 * N), io.StringIO(buf.getvalue()), thread_id=target)
        assert h.call("get_tuple", cfg(target), saver=h.make_saver(max_payload_objects=3 * N)) is not None
    finally:
        h.close()


def test_the_limit_from_the_environment_and_bad_values() -> None:
    env = {"LANGGRAPH_DYNAMODB_TABLE": "t", "LANGGRAPH_DYNAMODB_MAX_PAYLOAD_OBJECTS": "5000"}
    assert saver_kwargs_from_env(env)["max_payload_objects"] == 5000
    with pytest.raises(ValueError, match="LANGGRAPH_DYNAMODB_MAX_PAYLOAD_OBJECTS"):
        saver_kwargs_from_env({**env, "LANGGRAPH_DYNAMODB_MAX_PAYLOAD_OBJECTS": "many"})
    from langgraph.checkpoint.dynamodb import DynamoDBSaver

    for bad in (0, -1, True, 1.5, "10"):
        with pytest.raises(ValueError, match="max_payload_objects"):
            DynamoDBSaver(table_name="t", max_payload_objects=bad)  # type: ignore[arg-type]
