"""Every optional extra names itself when it is missing (issue 39, item 4).

Each case runs a fresh interpreter in which the extra's modules cannot be
imported (``sys.modules[name] = None`` is what ``import`` sees for a package
that is not installed), then does what the docs tell a user to do.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

BLOCK = "import sys\nfor _m in {mods!r}: sys.modules[_m] = None\n"

CASES = {
    "cdk": (
        ["aws_cdk", "jsii", "constructs", "cdk_nag"],
        "from langgraph.checkpoint.dynamodb.cdk import CheckpointStore",
    ),
    "encryption": (
        ["Crypto", "Crypto.Cipher"],
        "from langgraph.checkpoint.dynamodb.encryption import AesKeyRing\n"
        "AesKeyRing({'k': bytes(32)}, current='k')",
    ),
    "durable": (
        ["aws_durable_execution_sdk_python"],
        "from langgraph.checkpoint.dynamodb.lambdas.durable import durable_handler\n"
        "durable_handler(object(), submit=lambda cid, interrupts: None)",
    ),
    "async": (
        ["aiobotocore", "aiobotocore.session"],
        "import asyncio\nfrom langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver\n"
        "asyncio.run(AsyncDynamoDBSaver(table_name='t', region_name='us-east-1').aget_tuple("
        "{'configurable': {'thread_id': 't'}}))",
    ),
}


@pytest.mark.parametrize("extra", sorted(CASES))
def test_a_missing_extra_is_named(extra: str) -> None:
    mods, code = CASES[extra]
    env = {**os.environ, "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}  # never leaves the machine
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK.format(mods=mods) + code],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode != 0, proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert f'pip install "langgraph-checkpoint-dynamodb-s3[{extra}]"' in last, proc.stderr
    assert last.startswith(("ModuleNotFoundError", "ImportError")), last
