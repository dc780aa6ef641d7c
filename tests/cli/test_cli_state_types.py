"""The CLI shows threads whose state holds the application's own types.

The CLI never imports the application's modules, and the savers' default
serializer refuses a type whose module is not imported. The CLI only reads, so
it decodes with LangGraph's strict serializer: such values are shown as their
stored fields, and nothing a stored value names is imported or called.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import boto3
import ormsgpack
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.dynamodb import DynamoDBSaver, cli, schema
from langgraph.checkpoint.dynamodb.codec import PayloadCodec
from tests.support.harness import cfg, new_thread


def _record(code: int, record: Any) -> bytes:
    return PayloadCodec("none").pack(
        ("msgpack", ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(record))))
    )


def test_show_a_thread_with_types_the_cli_never_imported(
    moto_endpoint: str, names: dict[str, str], tmp_path: Path
) -> None:
    saver = DynamoDBSaver(**names)
    saver.setup()
    thread = new_thread()
    cp = empty_checkpoint()
    cp["id"] = str(uuid6())
    cp["channel_values"] = {"order": 1, "evil": 1}
    cp["channel_versions"] = {"order": "1", "evil": "1"}
    stored = saver.put(cfg(thread), cp, {}, {"order": "1", "evil": "1"})
    saver.close()
    c = stored["configurable"]
    sentinel = tmp_path / "pwned"
    # As the application wrote it (a dataclass of a module this process has not imported),
    # and a forged record next to it.
    boto3.client("dynamodb").update_item(
        TableName=names["table_name"],
        Key={
            "PK": {"S": schema.partition_key(thread)},
            "SK": {"S": schema.checkpoint_sk("", c["checkpoint_id"])},
        },
        UpdateExpression="SET vals.#o = :o, vals.evil = :e",
        ExpressionAttributeNames={"#o": "order"},
        ExpressionAttributeValues={
            ":o": {"B": _record(2, ("myapp_never_imported.state", "Order", {"id": 7, "lines": ["a"]}))},
            ":e": {"B": _record(0, ("os", "system", f"touch {sentinel}"))},
        },
    )
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(
        ["show", thread, "--table", names["table_name"], "--bucket", names["bucket_name"], "--json"],
        stdin=io.StringIO(),
        stdout=out,
        stderr=err,
    )
    assert code == 0, err.getvalue()
    values = json.loads(out.getvalue())["values"]
    assert values["order"] == {"id": 7, "lines": ["a"]}
    assert values["evil"] == f"touch {sentinel}"
    assert not sentinel.exists()
