"""Write the outputs of a stack deployed into moto to a JSON file.

Same shape as ``cdk deploy --outputs-file``: ``{stack: {OutputKey: value}}``.
Why not ``--outputs-file`` alone: moto (5.2) loses a stack's outputs when it
is created through a change set (the CLI's default), and creating it directly
fails on the ``AWS::Lambda::Url`` attribute moto does not model. So when the
CLI's file is empty, the values are read from the stack's resources, by the
logical ids the construct pins (``CheckpointStoreTable``, ``CheckpointStoreBucket``).

Usage: python infra/local_outputs.py STACK_NAME OUTPUTS_JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import boto3


def resolve(stack_name: str) -> dict[str, str]:
    cfn = boto3.client("cloudformation")
    stack = cfn.describe_stacks(StackName=stack_name)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs") or []}
    resources = {
        r["LogicalResourceId"]: r
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack_name)
        for r in page["StackResourceSummaries"]
    }
    outputs.setdefault("TableName", resources["CheckpointStoreTable"]["PhysicalResourceId"])
    if "CheckpointStoreBucket" in resources:
        outputs.setdefault("BucketName", resources["CheckpointStoreBucket"]["PhysicalResourceId"])
    for logical_id, res in resources.items():
        if res["ResourceType"] == "AWS::Lambda::Function" and logical_id.startswith("AgentFunction"):
            outputs.setdefault("AgentFunctionName", res["PhysicalResourceId"])
    return outputs


def main(stack_name: str, outputs_path: str) -> int:
    path = Path(outputs_path)
    existing = json.loads(path.read_text()) if path.exists() and path.read_text().strip() else {}
    merged = {**resolve(stack_name), **existing.get(stack_name, {})}
    path.write_text(json.dumps({stack_name: merged}, indent=2))
    print(json.dumps(merged, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
