"""LangGraph's conformance suite against the async saver, per storage variant.

The test fails if any capability fails, or if a base capability is skipped
or not detected.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, Capability
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

VARIANTS: dict[str, dict[str, Any]] = {
    "s3-off": {},
    "s3-forced": {"bucket": True, "s3_threshold": 0},
    "encrypted": {"bucket": True, "encrypted": True},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
async def test_conformance(variant: str, moto_endpoint: str) -> None:
    opts = VARIANTS[variant]
    suffix = uuid.uuid4().hex[:8]
    table = f"conf-{variant}-{suffix}"
    bucket = f"conf-{variant}-{suffix}" if opts.get("bucket") else None
    serde = EncryptedSerializer.from_pycryptodome_aes(key=os.urandom(32)) if opts.get("encrypted") else None

    async def factory():  # type: ignore[no-untyped-def]
        async with AsyncDynamoDBSaver(
            table_name=table,
            bucket_name=bucket,
            serde=serde,
            s3_threshold=opts.get("s3_threshold", 64 * 1024),
        ) as saver:
            await saver.setup()
            yield saver

    registered = checkpointer_test(name=f"AsyncDynamoDBSaver[{variant}]")(factory)
    report = await validate(registered)
    results = report.to_dict()
    failures = {
        cap: res
        for cap, res in report.results.items()
        if res.passed is False or (Capability(cap) in BASE_CAPABILITIES and res.passed is not True)
    }
    assert report.passed_all_base(), results
    assert not failures, {cap: res.failures for cap, res in failures.items()}
    # The extended capabilities are implemented too: each must be detected and pass.
    for cap in Capability:
        res = report.results[cap.value]
        assert res.detected and res.passed is True, (cap.value, results.get(cap.value, res))
        assert res.tests_failed == 0 and res.tests_passed > 0, (cap.value, res)
