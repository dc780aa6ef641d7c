"""The reference stack (infra/stacks.py): the example agent, its URL and the outputs."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

REF = "LangGraphCheckpointStack"


def test_agent_function(reference) -> None:
    _, agent = reference.one(REF, "AWS::Lambda::Function", "AgentFunction")
    props = agent["Properties"]
    assert props["Handler"] == "agent.handler.handler"
    assert props["Runtime"] == "python3.12"
    assert props["Environment"]["Variables"] == {
        "LANGGRAPH_DYNAMODB_TABLE": {"Ref": "CheckpointStoreTable"},
        "LANGGRAPH_DYNAMODB_BUCKET": {"Ref": "CheckpointStoreBucket"},
        "LANGGRAPH_DYNAMODB_S3_KEY_PREFIX": "checkpoints/",
    }
    assert (props["Timeout"], props["MemorySize"]) == (60, 1024)


def test_agent_may_invoke_itself_only_to_continue(reference) -> None:
    """A drained run continues in an async invoke of the same function: that one ARN, nothing wider."""
    fn_id, _ = reference.one(REF, "AWS::Lambda::Function", "AgentFunction")
    role_id, _ = reference.one(REF, "AWS::IAM::Role", "AgentRole")
    invokes = [
        (policy, st)
        for policy in reference.resources(REF, "AWS::IAM::Policy").values()
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if "lambda:InvokeFunction" in (st["Action"] if isinstance(st["Action"], list) else [st["Action"]])
    ]
    assert len(invokes) == 1
    policy, st = invokes[0]
    assert st["Resource"] == {"Fn::GetAtt": [fn_id, "Arn"]} and st["Effect"] == "Allow"
    assert policy["Properties"]["Roles"] == [{"Ref": role_id}]


def test_agent_function_url_requires_iam(reference) -> None:
    fn_id, _ = reference.one(REF, "AWS::Lambda::Function", "AgentFunction")
    _, url = reference.one(REF, "AWS::Lambda::Url")
    assert url["Properties"] == {"AuthType": "AWS_IAM", "TargetFunctionArn": {"Fn::GetAtt": [fn_id, "Arn"]}}
    # No public invoke permission is created for an AWS_IAM URL.
    assert not [
        p
        for p in reference.resources(REF, "AWS::Lambda::Permission").values()
        if p["Properties"].get("FunctionUrlAuthType") == "NONE"
    ]


def test_outputs(reference) -> None:
    fn_id, _ = reference.one(REF, "AWS::Lambda::Function", "AgentFunction")
    url_id, _ = reference.one(REF, "AWS::Lambda::Url")
    outputs = {k: v["Value"] for k, v in reference.templates[REF]["Outputs"].items()}
    mine = {k: v for k, v in outputs.items() if not k.startswith("CheckpointStore")}
    assert mine == {
        "TableName": {"Ref": "CheckpointStoreTable"},
        "BucketName": {"Ref": "CheckpointStoreBucket"},
        "AgentFunctionName": {"Ref": fn_id},
        "AgentFunctionUrl": {"Fn::GetAtt": [url_id, "FunctionUrl"]},
    }
    # The construct's own (tests/infra/test_outputs.py), under its id.
    assert outputs["CheckpointStoreTableName"] == {"Ref": "CheckpointStoreTable"}
    assert "CheckpointStoreMaintenanceFunctionName" in outputs


def test_app_context(reference, reference_kms) -> None:
    assert reference.stacks[REF].stack_name == "LangGraphCheckpoints"
    assert reference.resources(REF, "AWS::KMS::Key") == {}
    assert len(reference_kms.resources(REF, "AWS::KMS::Key")) == 1


def test_app_rejects_bad_context(cdk_env: None, fake_lambdas) -> None:
    from aws_cdk import App
    from infra.app import build_app

    for key, value in (("removal_policy", "snapshot"), ("runtime", "python2.7")):
        with pytest.raises(ValueError, match=key):
            build_app(App(context={"lambda_code_dir": str(fake_lambdas), key: value}))


def test_missing_handler_folder_fails_the_synth(cdk_env: None, tmp_path) -> None:
    """The agent's folder is the app's own code; the maintenance handlers come with the library."""
    from aws_cdk import App
    from infra.app import build_app

    (tmp_path / "pruner").mkdir()
    with pytest.raises(FileNotFoundError, match="agent"):
        build_app(App(context={"lambda_code_dir": str(tmp_path)}))


def test_cdk_json_runs_the_app_with_the_project_python() -> None:
    import json
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    cdk_json = json.loads((repo / "cdk.json").read_text())
    assert cdk_json["app"] == "sh infra/cdk_app.sh"
    wrapper = (repo / "infra" / "cdk_app.sh").read_text()
    assert ".venv/bin/python infra/app.py" in wrapper
    assert cdk_json["context"]["@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"] is True


def test_core_import_does_not_load_the_cdk() -> None:
    """Lambda cold start: the saver must not pull in aws_cdk (or jsii, or the cdk subpackage)."""
    code = (
        "import sys, langgraph.checkpoint.dynamodb as m; m.DynamoDBSaver; "
        "bad = [n for n in sys.modules if n.split('.')[0] in ('aws_cdk', 'jsii', 'constructs', 'cdk_nag') "
        "or n.startswith('langgraph.checkpoint.dynamodb.cdk')]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
