"""``DurableAgentFunction``: durable config, the durable runtime's actions, the store's grants, cdk-nag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from cdk_helpers import FAST_CONTEXT, Synth, flatten, normalize, synthesize

from langgraph.checkpoint.dynamodb.cdk._durable import DURABLE_CALLBACK_ACTIONS, DURABLE_EXECUTION_ACTIONS

STACK = "Durable"


@pytest.fixture(scope="module")
def durable(cdk_env: None, tmp_path_factory: pytest.TempPathFactory, fake_lambdas: Path) -> Synth:
    """A store, a default ``Agent``, a customized ``Approvals`` (customer key) and a callback ``Relay`` role."""
    from aws_cdk import App, Duration, Stack, Validations
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_lambda as lambda_
    from cdk_nag import AwsSolutionsChecks

    from langgraph.checkpoint.dynamodb.cdk import CheckpointStore, DurableAgentFunction, FunctionOptions

    outdir = tmp_path_factory.mktemp("durable")
    app = App(
        context=FAST_CONTEXT, outdir=str(outdir), builtin_cloud_formation_validation=False, stack_traces=False
    )
    stack = Stack(app, STACK)
    store = CheckpointStore(stack, "Store", function_options=FunctionOptions(code_dir=fake_lambdas))

    def code() -> lambda_.Code:  # one Code per stack
        return lambda_.Code.from_asset(str(fake_lambdas / "agent"))

    agent = DurableAgentFunction(stack, "Agent", store=store, code=code(), handler="handler.handler")
    keyed = Stack(app, "Keyed")
    key = kms.Key(keyed, "Key", enable_key_rotation=True)
    keyed_store = CheckpointStore(
        keyed, "Store", kms_key=key, function_options=FunctionOptions(code_dir=fake_lambdas)
    )
    DurableAgentFunction(
        keyed,
        "Approvals",
        store=keyed_store,
        code=code(),
        handler="handler.handler",
        execution_timeout=Duration.days(30),
        retention_period=Duration.days(60),
        timeout=Duration.minutes(5),
        environment={"MODEL": "small"},
    )
    agent.grant_send_callbacks(iam.Role(stack, "Relay", assumed_by=iam.AccountRootPrincipal()))
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    synth = synthesize(app, outdir)
    synth.stores.update({STACK: store, "Keyed": keyed_store})
    return synth


def _function(synth: Synth, stack: str, name: str) -> tuple[str, dict[str, Any]]:
    return synth.one(stack, "AWS::Lambda::Function", f"{name}Function")


def _policy(synth: Synth, stack: str, prefix: str) -> list[dict[str, Any]]:
    _, policy = synth.one(stack, "AWS::IAM::Policy", prefix)
    return [normalize(s) for s in policy["Properties"]["PolicyDocument"]["Statement"]]


def test_the_function_is_durable_with_the_given_timeouts(durable: Synth) -> None:
    _, agent = _function(durable, STACK, "Agent")
    props = agent["Properties"]
    assert props["DurableConfig"] == {"ExecutionTimeout": 86400, "RetentionPeriodInDays": 14}
    assert props["Timeout"] == 900 and props["MemorySize"] == 1024 and props["Runtime"] == "python3.12"
    assert props["Handler"] == "handler.handler" and "LoggingConfig" in props
    _, approvals = _function(durable, "Keyed", "Approvals")
    assert approvals["Properties"]["DurableConfig"] == {
        "ExecutionTimeout": 30 * 86400,
        "RetentionPeriodInDays": 60,
    }
    assert approvals["Properties"]["Timeout"] == 300


def test_the_saver_environment_is_the_stores(durable: Synth) -> None:
    _, agent = _function(durable, STACK, "Agent")
    stack = durable.stacks[STACK]
    assert agent["Properties"]["Environment"]["Variables"] == stack.resolve(
        durable.stores[STACK].saver_environment
    )
    _, approvals = _function(durable, "Keyed", "Approvals")
    env = approvals["Properties"]["Environment"]["Variables"]
    assert env["MODEL"] == "small" and env["LANGGRAPH_DYNAMODB_TABLE"] == {"Ref": "StoreTable"}


def test_durable_execution_actions_on_the_functions_own_executions_only(durable: Synth) -> None:
    fn_id, _ = _function(durable, STACK, "Agent")
    (stmt,) = _policy(durable, STACK, "AgentDurableExecutionPolicy")
    assert (
        stmt["Action"]
        == sorted(DURABLE_EXECUTION_ACTIONS)
        == [
            "lambda:CheckpointDurableExecution",
            "lambda:GetDurableExecutionState",
        ]
    )
    assert flatten(stmt["Resource"]) == f"<{fn_id}.Arn>:*"
    role_id, role = durable.one(STACK, "AWS::IAM::Role", "AgentRole")
    assert "ManagedPolicyArns" not in role["Properties"]  # not AWSLambdaBasicDurableExecutionRolePolicy ("*")
    _, policy = durable.one(STACK, "AWS::IAM::Policy", "AgentDurableExecutionPolicy")
    assert policy["Properties"]["Roles"] == [{"Ref": role_id}]


@pytest.mark.parametrize(("stack_id", "name"), [(STACK, "Agent"), ("Keyed", "Approvals")])
def test_the_role_has_the_stores_read_write_grant_and_its_log_group(
    durable: Synth, stack_id: str, name: str
) -> None:
    stack = durable.stacks[stack_id]
    store = durable.stores[stack_id]
    store_statements = [
        normalize(stack.resolve(s.to_statement_json())) for s in store.read_write_statements()
    ]
    statements = _policy(durable, stack_id, f"{name}RoleDefaultPolicy")
    assert all(s in statements for s in store_statements)
    if store.kms_key is not None:  # the customer key, via DynamoDB and S3
        assert any("kms:GenerateDataKey" in s["Action"] for s in store_statements)
    others = [s for s in statements if s not in store_statements]
    logs_id, logs_group = durable.one(stack_id, "AWS::Logs::LogGroup", f"{name}Logs")
    assert [s["Action"] for s in others] == [["logs:CreateLogStream", "logs:PutLogEvents"]]
    assert flatten(others[0]["Resource"]) == f"<{logs_id}.Arn>"
    if store.kms_key is not None:  # logs encrypted with the store's key, like the maintenance functions'
        assert logs_group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": ["Key961B73FD", "Arn"]}


def test_a_relay_may_send_callbacks_to_the_functions_executions(durable: Synth) -> None:
    fn_id, _ = _function(durable, STACK, "Agent")
    (stmt,) = durable.role_statements(STACK, "Relay")
    assert stmt["Action"] == sorted(DURABLE_CALLBACK_ACTIONS)
    assert flatten(stmt["Resource"]) == f"<{fn_id}.Arn>:*"


def test_the_template_has_no_dependency_cycle(durable: Synth) -> None:
    """The durable policy names the function's ARN: it must not be a dependency of the function."""
    for stack in (STACK, "Keyed"):
        resources = durable.templates[stack]["Resources"]
        edges = {rid: _references(res) & set(resources) for rid, res in resources.items()}
        for rid, res in resources.items():
            depends = res.get("DependsOn", [])
            edges[rid] |= set([depends] if isinstance(depends, str) else depends)
        assert _cycle(edges) is None, f"{stack}: {_cycle(edges)}"


def _references(value: Any) -> set[str]:
    if isinstance(value, dict):
        if "Ref" in value and isinstance(value["Ref"], str):
            return {value["Ref"]}
        if "Fn::GetAtt" in value:
            return {value["Fn::GetAtt"][0]}
        return set().union(*(_references(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_references(v) for v in value)) if value else set()
    return set()


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        if state.get(node) == 1:
            return [*path, node]
        if state.get(node) == 2:
            return None
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            found = visit(nxt, [*path, node])
            if found:
                return found
        state[node] = 2
        return None

    for node in sorted(edges):
        found = visit(node, [])
        if found:
            return found
    return None


def test_cdk_nag_has_no_unacknowledged_finding(durable: Synth) -> None:
    (nag,) = [r for r in durable.report()["pluginReports"] if r["pluginName"] == "AwsSolutions"]
    assert nag["violations"] == [] and nag["conclusion"] == "success"
    fn_id, _ = _function(durable, STACK, "Agent")
    suppressed = {
        (v["ruleName"], c["constructPath"])
        for v in nag["suppressedViolations"]
        for c in v["violatingConstructs"]
    }
    assert (
        f"AwsSolutions-IAM5[Resource::<{fn_id}.Arn>:*]",
        f"{STACK}/Agent/DurableExecutionPolicy/Resource",
    ) in suppressed
    assert ("AwsSolutions-L1", f"{STACK}/Agent/Function/Resource") in suppressed
