"""Runs in the ``langgraph-checkpoint-aws`` venv: the reference saver writes, or resumes, the source threads.

``python checkpoint_aws_script.py write|resume TABLE BUCKET PREFIX [BRANCH_A]``
against the moto server named by ``AWS_ENDPOINT_URL``; prints one JSON
object (the threads' histories and pending writes, or the resumes' results).
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import checkpoint_aws_graph as graph_mod
from langgraph_checkpoint_aws import DynamoDBSaver


def main() -> None:
    mode, table, bucket, prefix = sys.argv[1:5]
    offload = {"bucket_name": bucket, "key_prefix": prefix}
    plain_saver = DynamoDBSaver(table_name=table, s3_offload_config=offload)  # type: ignore[arg-type]
    gzip_saver = DynamoDBSaver(
        table_name=table,
        enable_checkpoint_compression=True,
        s3_offload_config=offload,  # type: ignore[arg-type]
    )
    out: dict[str, object] = {
        "versions": {p: version(p) for p in ("langgraph-checkpoint-aws", "langgraph", "boto3")},
        "saver_module": type(plain_saver).__module__,
    }
    if mode == "write":
        out.update(graph_mod.write_threads(plain_saver, gzip_saver))
        graph = graph_mod.build(plain_saver)
        out["history"] = {t: graph_mod.history(graph, t) for t in ("small", "big", "fork")}
        out["pending"] = {t: graph_mod.pending(plain_saver, t) for t in ("small", "big", "fork")}
        out["versions_seen_types"] = sorted(
            {
                type(v).__name__
                for t in plain_saver.list(graph_mod.cfg("fork"))
                for v in t.checkpoint["channel_versions"].values()
            }
        )
    else:
        out["resumed"] = graph_mod.resume_all(graph_mod.build(gzip_saver), sys.argv[5])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
