"""Maintenance Lambdas: code, environment, schedules, the stream mapping, DLQs and alarms."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed")

from langgraph.checkpoint.dynamodb import schema

REF = "LangGraphCheckpointStack"
FUNCTIONS = {
    # In the package, so the construct deploys them from an installed wheel.
    "Pruner": "langgraph.checkpoint.dynamodb.lambdas.pruner.handler",
    "Reaper": "langgraph.checkpoint.dynamodb.lambdas.reaper.handler",
    "OrphanSweeper": "langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler",
    "Maintenance": "langgraph.checkpoint.dynamodb.lambdas.maintenance.handler",
}
#: The jobs that record a thread they cannot handle and go on (construct id -> Job dimension).
JOB_ERRORS = {
    "Pruner": "pruner",
    "Reaper": "reaper",
    "OrphanSweeper": "orphan_sweeper",
    # Its prune and delete steps record a thread they cannot handle and go on too.
    "Maintenance": "maintenance",
}


def _fn(synth, stack: str, name: str, prefix: str = "CheckpointStore") -> tuple[str, dict]:
    return synth.one(stack, "AWS::Lambda::Function", f"{prefix}{name}")


def test_handlers_runtime_and_environment(reference) -> None:
    common = {
        "LANGGRAPH_DYNAMODB_TABLE": {"Ref": "CheckpointStoreTable"},
        "LANGGRAPH_DYNAMODB_BUCKET": {"Ref": "CheckpointStoreBucket"},
        "LANGGRAPH_DYNAMODB_S3_KEY_PREFIX": "checkpoints/",
        # The jobs' embedded metrics (the dashboard reads the same namespace).
        "LANGGRAPH_DYNAMODB_METRICS_NAMESPACE": "LangGraph/Checkpoints",
        # Each job's capacity budget: a tenth of the table's 40,000-unit quota.
        "MAINTENANCE_READ_UNITS": "4000",
        "MAINTENANCE_WRITE_UNITS": "4000",
    }
    expected_env = {
        "Pruner": {**common, "PRUNE_KEEP_LAST": "20", "PRUNE_IDLE_DAYS": "30", "TIME_BUDGET_SECONDS": "270"},
        "Reaper": common,
        "OrphanSweeper": {**common, "ORPHAN_GRACE_HOURS": "24", "TIME_BUDGET_SECONDS": "840"},
        # A step answers within the CLI's and SDKs' default 60 s read timeout.
        "Maintenance": {
            **common,
            "TIME_BUDGET_SECONDS": "45",
            # The token key's secret, by its name (tests/infra/test_token_key.py).
            "MAINTENANCE_TOKEN_SECRET": reference.one(REF, "AWS::SecretsManager::Secret")[1]["Properties"][
                "Name"
            ],
        },
    }
    timeouts = {"Pruner": 300, "Reaper": 300, "OrphanSweeper": 900, "Maintenance": 300}
    codes = set()
    for name, handler in FUNCTIONS.items():
        _, fn = _fn(reference, REF, name)
        props = fn["Properties"]
        assert props["Handler"] == handler
        assert props["Runtime"] == "python3.12"
        assert props["Architectures"] == ["x86_64"]
        assert props["Environment"]["Variables"] == expected_env[name]
        assert props["Timeout"] == timeouts[name]
        assert "LoggingConfig" in props  # an explicit log group with retention
        codes.add(json.dumps(props["Code"], sort_keys=True))
    # One asset shared by all functions (and the agent): one pip run, one upload.
    _, agent = reference.one(REF, "AWS::Lambda::Function", "AgentFunction")
    codes.add(json.dumps(agent["Properties"]["Code"], sort_keys=True))
    assert len(codes) == 1


def test_custom_settings_reach_the_environment(custom) -> None:
    saver_env = {
        "LANGGRAPH_DYNAMODB_TABLE": {"Ref": "StoreTable"},
        "LANGGRAPH_DYNAMODB_BUCKET": {"Ref": "StoreBucket"},
        "LANGGRAPH_DYNAMODB_S3_KEY_PREFIX": "ckpt/",
        "LANGGRAPH_DYNAMODB_TTL_SECONDS": str(7 * 86400),
        "LANGGRAPH_DYNAMODB_TRACK_THREADS": "1",
    }
    metrics_env = {
        "LANGGRAPH_DYNAMODB_METRICS_NAMESPACE": "LangGraph/Checkpoints",
        "MAINTENANCE_READ_UNITS": "20000",
        "MAINTENANCE_WRITE_UNITS": "20000",
    }
    _, pruner = _fn(custom, "Custom", "Pruner", "Store")
    assert pruner["Properties"]["Environment"]["Variables"] == {
        **saver_env,
        **metrics_env,
        "PRUNE_KEEP_LAST": "3",
        "PRUNE_IDLE_DAYS": "7",
        "PRUNE_PAGE_SIZE": "50",
        "TIME_BUDGET_SECONDS": "270",
    }
    _, sweeper = _fn(custom, "Custom", "OrphanSweeper", "Store")
    assert sweeper["Properties"]["Environment"]["Variables"] == {
        **saver_env,
        **metrics_env,
        "ORPHAN_GRACE_HOURS": "48",
        "TIME_BUDGET_SECONDS": "840",
    }
    _, reaper = _fn(custom, "Custom", "Reaper", "Store")
    assert reaper["Properties"]["Environment"]["Variables"] == {**saver_env, **metrics_env}
    # The same environment is offered to agents.
    stack = custom.stacks["Custom"]
    assert stack.resolve(custom.stores["Custom"].saver_environment) == saver_env


def test_unset_prune_settings_are_left_to_the_handler(custom) -> None:
    _, pruner = _fn(custom, "NoBucket", "Pruner", "Store")
    env = pruner["Properties"]["Environment"]["Variables"]
    assert env["PRUNE_KEEP_LAST"] == "20"
    assert "PRUNE_IDLE_DAYS" not in env and "PRUNE_PAGE_SIZE" not in env
    assert env["LANGGRAPH_DYNAMODB_TRACK_THREADS"] == "1" and "LANGGRAPH_DYNAMODB_TTL_SECONDS" not in env


def test_roles_have_no_managed_policies(reference, reference_kms, custom) -> None:
    """Logging rights come from grants on each function's own log group (no AWSLambdaBasicExecutionRole)."""
    for synth in (reference, reference_kms, custom):
        for stack in synth.templates:
            for role_id, role in synth.resources(stack, "AWS::IAM::Role").items():
                assert "ManagedPolicyArns" not in role["Properties"], role_id


def test_log_groups_have_retention(reference) -> None:
    groups = reference.resources(REF, "AWS::Logs::LogGroup")
    assert len(groups) == 5
    assert {g["Properties"]["RetentionInDays"] for g in groups.values()} == {30}


def _rule_for(synth, stack: str, fn_id: str) -> dict:
    rules = [
        r["Properties"]
        for r in synth.resources(stack, "AWS::Events::Rule").values()
        if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [fn_id, "Arn"]}
    ]
    assert len(rules) == 1
    return rules[0]


def test_schedules(reference, custom) -> None:
    pruner_id, _ = _fn(reference, REF, "Pruner")
    sweeper_id, _ = _fn(reference, REF, "OrphanSweeper")
    dlqs = reference.resources(REF, "AWS::SQS::Queue")
    for fn_id, expression, dlq_prefix in (
        (pruner_id, "rate(1 hour)", "CheckpointStorePrunerDlq"),
        (sweeper_id, "rate(1 day)", "CheckpointStoreOrphanSweeperDlq"),
    ):
        rule = _rule_for(reference, REF, fn_id)
        assert rule["ScheduleExpression"] == expression
        assert rule["State"] == "ENABLED"
        (target,) = rule["Targets"]
        (dlq_id,) = [q for q in dlqs if q.startswith(dlq_prefix)]
        assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": [dlq_id, "Arn"]}}
        assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 3600, "MaximumRetryAttempts": 2}
    c_pruner, _ = _fn(custom, "Custom", "Pruner", "Store")
    c_sweeper, _ = _fn(custom, "Custom", "OrphanSweeper", "Store")
    assert _rule_for(custom, "Custom", c_pruner)["ScheduleExpression"] == "rate(15 minutes)"
    assert _rule_for(custom, "Custom", c_sweeper)["ScheduleExpression"] == "cron(30 3 * * ? *)"
    # The stream consumer has no schedule.
    reaper_id, _ = _fn(reference, REF, "Reaper")
    assert not [
        r
        for r in reference.resources(REF, "AWS::Events::Rule").values()
        if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [reaper_id, "Arn"]}
    ]


def test_async_failures_go_to_each_functions_dlq(reference) -> None:
    invoke_configs = reference.resources(REF, "AWS::Lambda::EventInvokeConfig")
    for name in ("Pruner", "OrphanSweeper", "Maintenance"):
        fn_id, fn = _fn(reference, REF, name)
        dlq_id, _ = reference.one(REF, "AWS::SQS::Queue", f"CheckpointStore{name}Dlq")
        assert fn["Properties"]["DeadLetterConfig"] == {"TargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]}}
        (cfg,) = [c for c in invoke_configs.values() if c["Properties"]["FunctionName"] == {"Ref": fn_id}]
        assert cfg["Properties"]["MaximumRetryAttempts"] == 2
    _, reaper = _fn(reference, REF, "Reaper")
    assert "DeadLetterConfig" not in reaper["Properties"]  # the event source mapping owns its failures


def test_reaper_stream_mapping(reference, custom) -> None:
    reaper_id, _ = _fn(reference, REF, "Reaper")
    dlq_id, _ = reference.one(REF, "AWS::SQS::Queue", "CheckpointStoreReaperDlq")
    _, esm = reference.one(REF, "AWS::Lambda::EventSourceMapping")
    props = esm["Properties"]
    assert props["FunctionName"] == {"Ref": reaper_id}
    assert props["EventSourceArn"] == {"Fn::GetAtt": ["CheckpointStoreTable", "StreamArn"]}
    assert props["StartingPosition"] == "TRIM_HORIZON"
    assert props["BatchSize"] == 100
    assert props["BisectBatchOnFunctionError"] is True
    assert props["MaximumRetryAttempts"] == 5
    assert props["MaximumRecordAgeInSeconds"] == 23 * 3600
    assert "FunctionResponseTypes" not in props  # the reaper fails or succeeds whole batches
    assert props["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [dlq_id, "Arn"]}}}
    (flt,) = props["FilterCriteria"]["Filters"]
    assert json.loads(flt["Pattern"]) == {
        "eventName": ["REMOVE"],
        "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]},
        "dynamodb": {"Keys": {"SK": {"S": [schema.HEAD_SK]}}},
    }
    assert schema.HEAD_SK == "|m|thread"
    _, c_esm = custom.one("Custom", "AWS::Lambda::EventSourceMapping")
    assert c_esm["Properties"]["BatchSize"] == 50
    assert c_esm["Properties"]["MaximumRetryAttempts"] == 3


def test_reaper_role_reads_only_this_tables_stream(reference) -> None:
    statements = reference.role_statements(REF, "CheckpointStoreReaperRole")
    dlq_id, _ = reference.one(REF, "AWS::SQS::Queue", "CheckpointStoreReaperDlq")
    assert {
        "Action": ["dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"],
        "Effect": "Allow",
        "Resource": {"Fn::GetAtt": ["CheckpointStoreTable", "StreamArn"]},
    } in statements
    # ListStreams admits no resource-level permission; it is the only "*" statement.
    assert {"Action": ["dynamodb:ListStreams"], "Effect": "Allow", "Resource": "*"} in statements
    assert {
        "Action": ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"],
        "Effect": "Allow",
        "Resource": {"Fn::GetAtt": [dlq_id, "Arn"]},
    } in statements


def test_dead_letter_queues(reference, reference_kms) -> None:
    for synth in (reference, reference_kms):
        queues = synth.resources(REF, "AWS::SQS::Queue")
        assert sorted(q.rstrip("0123456789ABCDEF") for q in queues) == [
            "CheckpointStoreMaintenanceDlq",
            "CheckpointStoreOrphanSweeperDlq",
            "CheckpointStorePrunerDlq",
            "CheckpointStoreReaperDlq",
        ]
        for qid, queue in queues.items():
            # SSE-SQS even with a customer key (service principals deliver dead letters).
            assert queue["Properties"] == {
                "MessageRetentionPeriod": 14 * 24 * 3600,
                "SqsManagedSseEnabled": True,
            }
            (policy,) = [
                p
                for p in synth.resources(REF, "AWS::SQS::QueuePolicy").values()
                if p["Properties"]["Queues"] == [{"Ref": qid}]
            ]
            assert {
                "Action": "sqs:*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                "Effect": "Deny",
                "Principal": {"AWS": "*"},
                "Resource": {"Fn::GetAtt": [qid, "Arn"]},
            } in policy["Properties"]["PolicyDocument"]["Statement"]


def _alarms(synth, stack: str) -> dict[str, dict]:
    return {
        k.rstrip("0123456789ABCDEF"): v["Properties"]
        for k, v in synth.resources(stack, "AWS::CloudWatch::Alarm").items()
    }


def test_alarms(reference) -> None:
    alarms = _alarms(reference, REF)
    assert sorted(alarms) == sorted(
        [f"CheckpointStore{n}ErrorsAlarm" for n in FUNCTIONS]
        + [f"CheckpointStore{n}ThrottlesAlarm" for n in FUNCTIONS]
        + [f"CheckpointStore{n}DlqDepthAlarm" for n in FUNCTIONS]
        + [f"CheckpointStore{n}JobErrorsAlarm" for n in JOB_ERRORS]
        + [
            "CheckpointStoreReaperIteratorAgeAlarm",
            "CheckpointStoreTableReadThrottleAlarm",
            "CheckpointStoreTableWriteThrottleAlarm",
            "CheckpointStoreTableSystemErrorsAlarm",
            "CheckpointStoreAgentErrorsAlarm",
        ]
    )
    for props in alarms.values():
        assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert props["EvaluationPeriods"] == 1
        assert props["TreatMissingData"] == "notBreaching"
        assert "AlarmActions" not in props  # no topic in the reference app by default
    agent_id, _ = reference.one(REF, "AWS::Lambda::Function", "AgentFunction")
    fn_ids = {name: _fn(reference, REF, name)[0] for name in FUNCTIONS} | {"Agent": agent_id}
    for name, fn_id in fn_ids.items():
        errors = alarms[f"CheckpointStore{name}ErrorsAlarm"]
        assert (errors["Namespace"], errors["MetricName"], errors["Statistic"]) == (
            "AWS/Lambda",
            "Errors",
            "Sum",
        )
        assert errors["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": fn_id}}]
        assert (errors["Threshold"], errors["Period"]) == (1, 300)
    for name in FUNCTIONS:
        throttles = alarms[f"CheckpointStore{name}ThrottlesAlarm"]
        assert (throttles["Namespace"], throttles["MetricName"], throttles["Statistic"]) == (
            "AWS/Lambda",
            "Throttles",
            "Sum",
        )
        assert throttles["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": fn_ids[name]}}]
        assert (throttles["Threshold"], throttles["Period"]) == (1, 300)
    for name in FUNCTIONS:
        dlq_id, _ = reference.one(REF, "AWS::SQS::Queue", f"CheckpointStore{name}Dlq")
        depth = alarms[f"CheckpointStore{name}DlqDepthAlarm"]
        assert (depth["Namespace"], depth["MetricName"], depth["Statistic"]) == (
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            "Maximum",
        )
        assert depth["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq_id, "QueueName"]}}]
        assert depth["Threshold"] == 1
    # A thread a job records and skips (one tenant's malformed item) fails no
    # invocation: its own count is what raises the alarm.
    for name, job in JOB_ERRORS.items():
        skipped = alarms[f"CheckpointStore{name}JobErrorsAlarm"]
        assert (skipped["Namespace"], skipped["MetricName"], skipped["Statistic"]) == (
            "LangGraph/Checkpoints",
            "Errors",
            "Sum",
        )
        assert sorted(skipped["Dimensions"], key=lambda d: d["Name"]) == [
            {"Name": "FunctionName", "Value": {"Ref": fn_ids[name]}},
            {"Name": "Job", "Value": job},
        ]
        assert (skipped["Threshold"], skipped["Period"]) == (1, 3600)
    age = alarms["CheckpointStoreReaperIteratorAgeAlarm"]
    assert (age["MetricName"], age["Statistic"], age["Threshold"]) == ("IteratorAge", "Maximum", 3_600_000)

    table = {"Name": "TableName", "Value": {"Ref": "CheckpointStoreTable"}}
    for kind in ("Read", "Write"):
        throttles = alarms[f"CheckpointStoreTable{kind}ThrottleAlarm"]
        expr, *metrics = throttles["Metrics"]
        assert expr["Expression"] == "FILL(t,0)+FILL(g0,0)+FILL(g1,0)"
        assert [
            (m["MetricStat"]["Metric"]["MetricName"], m["MetricStat"]["Metric"]["Dimensions"])
            for m in metrics
        ] == [
            (f"{kind}ThrottleEvents", [table]),
            (f"{kind}ThrottleEvents", [{"Name": "GlobalSecondaryIndexName", "Value": "run_id-index"}, table]),
            (
                f"{kind}ThrottleEvents",
                [{"Name": "GlobalSecondaryIndexName", "Value": "threads-index"}, table],
            ),
        ]
        assert throttles["Threshold"] == 1
    system = alarms["CheckpointStoreTableSystemErrorsAlarm"]
    expr, *metrics = system["Metrics"]
    assert {m["MetricStat"]["Metric"]["MetricName"] for m in metrics} == {"SystemErrors"}
    operations = sorted(
        d["Value"]
        for m in metrics
        for d in m["MetricStat"]["Metric"]["Dimensions"]
        if d["Name"] == "Operation"
    )
    # A lease-bound saver writes with TransactWriteItems (ConditionCheckItem in its grant).
    assert operations == sorted(
        [
            "BatchGetItem",
            "BatchWriteItem",
            "GetItem",
            "PutItem",
            "Query",
            "TransactWriteItems",
            "UpdateItem",
        ]
    )
    assert expr["Expression"] == "+".join(f"FILL(e{i},0)" for i in range(7))


def test_alarm_topic_receives_alarm_and_ok(custom) -> None:
    topic_id, _ = custom.one("Custom", "AWS::SNS::Topic")
    alarms = _alarms(custom, "Custom")
    assert len(alarms) == 20  # no agent in this stack; four jobs with skipped-thread counts
    for props in alarms.values():
        assert props["AlarmActions"] == [{"Ref": topic_id}]
        assert props["OKActions"] == [{"Ref": topic_id}]


def test_no_alarm_topic_means_alarms_without_actions(custom) -> None:
    """Documented behaviour: without a topic the alarms exist (console, ``store.alarms``) with no action."""
    alarms = _alarms(custom, "Unversioned")
    assert sorted(alarms) == sorted(
        f"Store{n}{kind}"
        for n in ("Pruner", "OrphanSweeper")
        for kind in ("ErrorsAlarm", "ThrottlesAlarm", "DlqDepthAlarm", "JobErrorsAlarm")
    ) + sorted(["StoreTableReadThrottleAlarm", "StoreTableWriteThrottleAlarm", "StoreTableSystemErrorsAlarm"])
    for props in alarms.values():
        assert "AlarmActions" not in props and "OKActions" not in props


def test_maintenance_functions_have_reserved_concurrency(reference, custom) -> None:
    for name in FUNCTIONS:
        _, fn = _fn(reference, REF, name)
        assert fn["Properties"]["ReservedConcurrentExecutions"] == 1, name
    # Agents are the application's to size.
    _, agent = reference.one(REF, "AWS::Lambda::Function", "AgentFunction")
    assert "ReservedConcurrentExecutions" not in agent["Properties"]
    # Opting out (low account limits): the caps are the schedules and one reaper per shard.
    for fn in custom.resources("Unversioned", "AWS::Lambda::Function").values():
        assert "ReservedConcurrentExecutions" not in fn["Properties"]
    _, esm = reference.one(REF, "AWS::Lambda::EventSourceMapping")
    assert esm["Properties"]["ParallelizationFactor"] == 1


def test_reserved_concurrency_is_validated(custom) -> None:
    from aws_cdk import App, Stack

    from langgraph.checkpoint.dynamodb.cdk import CheckpointStore, FunctionOptions

    with pytest.raises(ValueError, match="reserved_concurrency"):
        CheckpointStore(
            Stack(App(), "S"), "Store", function_options=FunctionOptions(reserved_concurrency=0, code_dir=".")
        )


def test_the_capacity_share_is_split_over_concurrent_runs_and_validated(custom) -> None:
    from langgraph.checkpoint.dynamodb.cdk import FunctionOptions

    # No reserved concurrency: the budget is per run.
    for fn in custom.resources("Unversioned", "AWS::Lambda::Function").values():
        env = fn["Properties"]["Environment"]["Variables"]
        if "LANGGRAPH_DYNAMODB_TABLE" in env:
            assert env["MAINTENANCE_WRITE_UNITS"] == "4000"
    assert FunctionOptions(reserved_concurrency=4, capacity_share=0.2).capacity_environment() == {
        "MAINTENANCE_READ_UNITS": "2000",
        "MAINTENANCE_WRITE_UNITS": "2000",
    }
    assert FunctionOptions(capacity_share=None).capacity_environment() == {}
    for bad in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match="capacity_share"):
            FunctionOptions(capacity_share=bad)


def test_dead_letter_queues_follow_the_removal_policy(reference, custom) -> None:
    """Unread dead letters survive a stack deletion under RETAIN (the default)."""
    for queue in reference.resources(REF, "AWS::SQS::Queue").values():
        assert (queue["DeletionPolicy"], queue["UpdateReplacePolicy"]) == ("Retain", "Retain")
    for queue in custom.resources("Custom", "AWS::SQS::Queue").values():
        assert (queue["DeletionPolicy"], queue["UpdateReplacePolicy"]) == ("Delete", "Delete")


def test_log_groups_use_the_customer_key(reference, reference_kms) -> None:
    assert not [
        g for g in reference.resources(REF, "AWS::Logs::LogGroup").values() if "KmsKeyId" in g["Properties"]
    ]
    key_id, key = reference_kms.one(REF, "AWS::KMS::Key")
    groups = reference_kms.resources(REF, "AWS::Logs::LogGroup")
    assert len(groups) == 5  # four maintenance functions and the agent
    for gid, group in groups.items():
        assert group["Properties"]["KmsKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}, gid
    # The key policy lets CloudWatch Logs of this region use the key, for this account's log groups only.
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    (logs_stmt,) = [s for s in statements if s.get("Principal", {}).get("Service")]
    assert logs_stmt == {
        "Action": [
            "kms:Decrypt",
            "kms:DescribeKey",
            "kms:Encrypt",
            "kms:GenerateDataKey",
            "kms:GenerateDataKeyWithoutPlaintext",
            "kms:ReEncryptFrom",
            "kms:ReEncryptTo",
        ],
        "Condition": {
            "ArnLike": {
                "kms:EncryptionContext:aws:logs:arn": {
                    "Fn::Join": [
                        "",
                        [
                            "arn:",
                            {"Ref": "AWS::Partition"},
                            ":logs:",
                            {"Ref": "AWS::Region"},
                            ":",
                            {"Ref": "AWS::AccountId"},
                            ":log-group:*",
                        ],
                    ]
                }
            }
        },
        "Effect": "Allow",
        "Principal": {"Service": {"Fn::Join": ["", ["logs.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]}},
        "Resource": "*",
    }
    assert len(statements) == 2  # the account root statement CDK adds, and this one


def test_imported_key_warns_about_its_key_policy(custom) -> None:
    key_arn = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555"
    for group in custom.resources("Unversioned", "AWS::Logs::LogGroup").values():
        assert group["Properties"]["KmsKeyId"] == key_arn
    stack = custom.app.synth().get_stack_by_name(custom.stacks["Unversioned"].stack_name)
    warnings = [m.entry.data for m in stack.messages if m.level.value == "WARNING"]
    assert [w for w in warnings if "key policy must allow the CloudWatch Logs service" in str(w)], warnings


def test_bucketless_store_has_no_sweeper_and_no_bucket_env(custom) -> None:
    functions = custom.resources("NoBucket", "AWS::Lambda::Function")
    assert sorted(f["Properties"]["Handler"] for f in functions.values()) == [
        "langgraph.checkpoint.dynamodb.lambdas.maintenance.handler",
        "langgraph.checkpoint.dynamodb.lambdas.pruner.handler",
        "langgraph.checkpoint.dynamodb.lambdas.reaper.handler",
    ]
    for fn in functions.values():
        assert "LANGGRAPH_DYNAMODB_BUCKET" not in fn["Properties"]["Environment"]["Variables"]


def test_maintenance_function_runs_on_request(reference, custom) -> None:
    """No schedule and no event source: invoked by operators; its own role, DLQ and alarms; a property."""
    fn_id, fn = _fn(reference, REF, "Maintenance")
    store = reference.stores[REF]
    assert store.maintenance_function is store.functions["maintenance"]
    assert not [
        r
        for r in reference.resources(REF, "AWS::Events::Rule").values()
        if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [fn_id, "Arn"]}
    ]
    assert not [
        m
        for m in reference.resources(REF, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": fn_id}
    ]
    role_id, _ = reference.one(REF, "AWS::IAM::Role", "CheckpointStoreMaintenanceRole")
    assert fn["Properties"]["Role"] == {"Fn::GetAtt": [role_id, "Arn"]}
    # The errors alarm goes to the store's topic when it has one.
    topic_id, _ = custom.one("Custom", "AWS::SNS::Topic")
    c_fn_id, c_fn = _fn(custom, "Custom", "Maintenance", "Store")
    errors = _alarms(custom, "Custom")["StoreMaintenanceErrorsAlarm"]
    assert errors["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": c_fn_id}}]
    assert errors["AlarmActions"] == [{"Ref": topic_id}] and errors["Threshold"] == 1
    assert c_fn["Properties"]["Environment"]["Variables"]["TIME_BUDGET_SECONDS"] == "20"
    assert c_fn["Properties"]["Timeout"] == 300


def test_maintenance_function_can_be_left_out(custom) -> None:
    handlers = sorted(
        f["Properties"]["Handler"] for f in custom.resources("Unversioned", "AWS::Lambda::Function").values()
    )
    assert "langgraph.checkpoint.dynamodb.lambdas.maintenance.handler" not in handlers and handlers
    assert not [k for k in custom.resources("Unversioned", "AWS::IAM::Role") if "Maintenance" in k]


def test_arm64_is_an_option_of_every_function(cdk_env: None, fake_lambdas, tmp_path) -> None:
    """``architecture=ARM_64``: every function runs on Graviton, its asset built from aarch64 wheels."""
    from aws_cdk import App, Stack
    from aws_cdk import aws_lambda as lambda_
    from cdk_helpers import FAST_CONTEXT, synthesize

    from langgraph.checkpoint.dynamodb.cdk import CheckpointStore, FunctionOptions
    from langgraph.checkpoint.dynamodb.cdk._bundling import pip_platform

    app = App(context=FAST_CONTEXT, outdir=str(tmp_path), stack_traces=False)
    stack = Stack(app, "Arm")
    CheckpointStore(
        stack,
        "Store",
        function_options=FunctionOptions(code_dir=fake_lambdas, architecture=lambda_.Architecture.ARM_64),
    )
    synth = synthesize(app, tmp_path)
    functions = synth.resources("Arm", "AWS::Lambda::Function")
    assert len(functions) == 4
    assert {tuple(f["Properties"].get("Architectures", ["x86_64"])) for f in functions.values()} == {
        ("arm64",)
    }
    assert pip_platform(lambda_.Architecture.ARM_64.name) == "manylinux2014_aarch64"
