"""How many requests the async saver keeps on the wire (``max_in_flight``), against the moto server.

Each client's own events count the requests between ``before-send`` and
``response-received``: what is on the wire, as botocore sees it.
"""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver
from tests.support.harness import cfg, checkpoint_of, new_thread

SERVICES = ("dynamodb", "s3")


def _count_on_the_wire(saver: AsyncDynamoDBSaver) -> dict[str, int]:
    tally = {f"{k}_{s}": 0 for s in SERVICES for k in ("now", "peak")}
    for service in SERVICES:

        def sent(service: str = service, **_: Any) -> None:
            tally[f"now_{service}"] += 1
            tally[f"peak_{service}"] = max(tally[f"peak_{service}"], tally[f"now_{service}"])

        def answered(service: str = service, **_: Any) -> None:
            tally[f"now_{service}"] -= 1

        events = saver.clients[service].meta.events
        events.register(f"before-send.{service}", sent)
        events.register(f"response-received.{service}", answered)
    return tally


@pytest.mark.parametrize("bound", [2, None], ids=["bound-2", "unbounded"])
def test_the_async_saver_keeps_at_most_max_in_flight_requests_per_service_on_the_wire(
    moto_endpoint: str, names: dict[str, str], bound: int | None
) -> None:
    with DynamoDBSaver(**names) as setup:
        setup.setup()

    async def main() -> dict[str, int]:
        # s3_threshold=1024: each put also uploads its value to S3.
        async with AsyncDynamoDBSaver(**names, s3_threshold=1024, max_in_flight=bound) as saver:
            tally = _count_on_the_wire(saver)
            threads = [new_thread() for _ in range(10)]
            # Random text: it does not compress below the threshold.
            values = {t: {"a": base64.b64encode(os.urandom(3000)).decode()} for t in threads}
            stored = await asyncio.gather(
                *(saver.aput(cfg(t), checkpoint_of(values[t]), {}, {"a": "1"}) for t in threads)
            )
            async with AsyncDynamoDBSaver(**names, max_in_flight=bound) as reader:  # no value cache
                reader_tally = _count_on_the_wire(reader)
                got = await asyncio.gather(*(reader.aget_tuple(c) for c in stored))
            assert [g.checkpoint["channel_values"] for g in got] == [values[t] for t in threads]
            assert all(v == 0 for k, v in {**tally, **reader_tally}.items() if k.startswith("now"))
            return {k: max(tally[k], reader_tally[k]) for k in tally if k.startswith("peak")}

    peaks = asyncio.run(main())
    if bound is None:
        # Ten operations at once put more than two of each service's requests on the wire.
        assert peaks["peak_dynamodb"] > 2 and peaks["peak_s3"] > 2
    else:
        assert peaks == {"peak_dynamodb": bound, "peak_s3": bound}


@pytest.mark.parametrize("bad", [0, -3, True, 2.5, "4"])
def test_max_in_flight_must_be_a_positive_int_or_none(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_in_flight"):
        AsyncDynamoDBSaver(table_name="t", max_in_flight=bad)


def test_max_in_flight_defaults_to_eight() -> None:
    assert AsyncDynamoDBSaver(table_name="t").driver.max_in_flight == 8
    assert AsyncDynamoDBSaver(table_name="t", max_in_flight=None).driver.max_in_flight is None
