"""The construct's stack outputs (issue 39, item 2): function names, table, bucket, alarm topic.

Asserted on the synthesized templates: each output's pinned logical id
(``<store id><What>``) and the resource its value refers to.
"""

from __future__ import annotations

from typing import Any

from cdk_helpers import Synth


def _outputs(custom: Synth, stack: str) -> dict[str, Any]:
    return dict(custom.templates[stack].get("Outputs", {}))


def _ref(value: Any) -> str:
    """The logical id an output's value refers to (``Ref`` or ``Fn::GetAtt``)."""
    if "Ref" in value:
        return str(value["Ref"])
    return str(value["Fn::GetAtt"][0])


def test_the_store_exports_what_a_deploy_needs(custom: Synth) -> None:
    out = _outputs(custom, "Custom")
    functions = custom.resources("Custom", "AWS::Lambda::Function")
    names = {
        "StoreTableName",
        "StoreTableArn",
        "StoreBucketName",
        "StoreAlarmTopicArn",
        "StorePrunerFunctionName",
        "StoreReaperFunctionName",
        "StoreOrphanSweeperFunctionName",
        "StoreMaintenanceFunctionName",
    }
    assert names <= set(out), sorted(out)
    assert _ref(out["StoreTableName"]["Value"]) == "StoreTable"  # the pinned table
    (bucket_id,) = [
        k
        for k, v in custom.resources("Custom", "AWS::S3::Bucket").items()
        if v["Properties"].get("BucketName") == "my-checkpoint-payloads"
    ]
    assert _ref(out["StoreBucketName"]["Value"]) == bucket_id
    (topic_id,) = custom.resources("Custom", "AWS::SNS::Topic")
    assert _ref(out["StoreAlarmTopicArn"]["Value"]) == topic_id
    for key in [k for k in names if k.endswith("FunctionName")]:
        assert _ref(out[key]["Value"]) in functions, key
    handlers = {
        functions[_ref(out[k]["Value"])]["Properties"]["Handler"] for k in names if k.endswith("FunctionName")
    }
    assert len(handlers) == 4  # four different functions, one output each


def test_a_store_without_bucket_or_topic_exports_neither(custom: Synth) -> None:
    out = _outputs(custom, "NoBucket")
    assert "StoreTableName" in out
    assert "StoreBucketName" not in out and "StoreAlarmTopicArn" not in out
    assert "StoreOrphanSweeperFunctionName" not in out  # no bucket, no sweeper


def test_a_store_without_some_functions_exports_only_the_others(custom: Synth) -> None:
    out = _outputs(custom, "Unversioned")
    assert "StorePrunerFunctionName" in out and "StoreBucketName" in out
    assert "StoreReaperFunctionName" not in out and "StoreMaintenanceFunctionName" not in out
