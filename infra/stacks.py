"""``LangGraphCheckpointStack``: the checkpoint store plus an example agent Lambda.

The stack is deliberately thin: everything reusable lives in
``langgraph.checkpoint.dynamodb.cdk.CheckpointStore``; this file shows how an
application wires its own agent function to it.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from constructs import Construct

from langgraph.checkpoint.dynamodb.cdk import (
    CheckpointStore,
    FunctionOptions,
    MonitoringOptions,
    acknowledge,
    bundled_lambda_code,
    runtime_acknowledgement_reason,
)

__all__ = [
    "AGENT_HANDLER",
    "PYTHON_RUNTIMES",
    "REPO_ROOT",
    "RUNTIME",
    "LangGraphCheckpointStack",
    "langgraph_requirement",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
AGENT_HANDLER = "agent.handler.handler"
#: Default runtime of all four functions (see ``runtime`` below).
RUNTIME = lambda_.Runtime.PYTHON_3_12

#: Runtimes the ``runtime`` context value may name.
PYTHON_RUNTIMES = {
    "python3.11": lambda_.Runtime.PYTHON_3_11,
    "python3.12": lambda_.Runtime.PYTHON_3_12,
    "python3.13": lambda_.Runtime.PYTHON_3_13,
}


def langgraph_requirement() -> str:
    """Ship the LangGraph version this checkout is tested with (the dev extra's pin)."""
    try:
        return f"langgraph=={metadata.version('langgraph')}"
    except metadata.PackageNotFoundError:
        return "langgraph>=1.2.24,<2"


class LangGraphCheckpointStack(Stack):
    """Checkpoint table + bucket + maintenance Lambdas + an example agent.

    One Lambda asset (handlers, this library, LangGraph and their wheels) is
    built once and shared by all four functions: one pip run and one upload
    per deployment instead of four.

    Args:
        scope: The app.
        id: Stack id.
        lambda_code_dir: Handlers' root (default: ``lambdas/`` of this repo).
        removal_policy: For the stateful resources; ``RETAIN`` unless this is
            a throwaway stack (``deploy-local`` passes ``DESTROY``).
        use_kms: Encrypt table, bucket and queues with a customer managed key
            created here (rotation on).
        alarm_topic_arn: Existing SNS topic for alarm notifications.
        runtime: Python runtime of every function; the asset's wheels are
            resolved for it (``deploy-local`` uses the local interpreter's
            version so it can run the packaged handlers itself).
        **kwargs: Passed to ``Stack`` (``env``, ``stack_name``, ...).

    Example:
        >>> app = App()  # doctest: +SKIP
        >>> LangGraphCheckpointStack(app, "LangGraphCheckpoints")  # doctest: +SKIP
        >>> app.synth()  # doctest: +SKIP
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        lambda_code_dir: str | Path | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        use_kms: bool = False,
        alarm_topic_arn: str | None = None,
        runtime: lambda_.Runtime = RUNTIME,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        # The maintenance handlers ship in the library (every asset has it);
        # only the example agent comes from this repository's lambdas/.
        code = bundled_lambda_code(
            lambda_code_dir or REPO_ROOT / "lambdas",
            include=["agent"],
            extra_requirements=[langgraph_requirement()],
            runtime=runtime,
        )
        key = None
        if use_kms:
            key = kms.Key(
                self,
                "CheckpointKey",
                description="Encrypts the LangGraph checkpoint table, bucket and dead-letter queues",
                enable_key_rotation=True,
                removal_policy=removal_policy,
            )
        topic = sns.Topic.from_topic_arn(self, "AlarmTopic", alarm_topic_arn) if alarm_topic_arn else None
        self.store = CheckpointStore(
            self,
            "CheckpointStore",
            removal_policy=removal_policy,
            kms_key=key,
            function_options=FunctionOptions(code=code, runtime=runtime),
            monitoring_options=MonitoringOptions(alarm_topic=topic),
        )
        self.agent = self._agent(code, runtime, removal_policy)
        self.store.add_errors_alarm(
            self.agent, "AgentErrorsAlarm", description="The example agent Lambda failed."
        )

        CfnOutput(self, "TableName", value=self.store.table_name, description="Checkpoint table")
        if self.store.bucket is not None:
            CfnOutput(self, "BucketName", value=self.store.bucket.bucket_name, description="Payload bucket")
        CfnOutput(self, "AgentFunctionName", value=self.agent.function_name, description="Example agent")
        CfnOutput(self, "AgentFunctionUrl", value=self.agent_url.url, description="Agent URL (AWS_IAM auth)")

    def _agent(
        self, code: lambda_.Code, runtime: lambda_.Runtime, removal_policy: RemovalPolicy
    ) -> lambda_.Function:
        role = iam.Role(
            self,
            "AgentRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Execution role of the example LangGraph agent",
        )
        log_group = logs.LogGroup(
            self,
            "AgentLogs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=removal_policy,
            # The agent's logs get the store's customer key, like the maintenance
            # functions' (the store has let CloudWatch Logs use it).
            encryption_key=self.store.logs_key(),
        )
        # The store's saver environment: the agent and the maintenance jobs
        # then agree on table, bucket, prefix, TTL and thread tracking.
        env = dict(self.store.saver_environment)
        agent = lambda_.Function(
            self,
            "AgentFunction",
            code=code,
            handler=AGENT_HANDLER,
            runtime=runtime,
            role=role,
            log_group=log_group,
            description="Example LangGraph agent: starts a thread, interrupts, resumes with an answer",
            timeout=Duration.seconds(60),
            # More memory is more CPU: graph compilation and deserialization
            # dominate a cold start.
            memory_size=1024,
            environment=env,
        )
        log_group.grant_write(role)
        self.store.grant_read_write(agent)
        # A run that drains before the deadline continues in an asynchronous
        # invoke of this same function (runs.send_continuation). A policy of
        # its own: on the role's default policy, the function ARN would make
        # the function depend on itself.
        iam.Policy(
            self,
            "AgentContinuePolicy",
            roles=[role],
            statements=[
                iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[agent.function_arn])
            ],
        )
        # AWS_IAM: callers sign with SigV4 and need lambda:InvokeFunctionUrl.
        self.agent_url = agent.add_function_url(auth_type=lambda_.FunctionUrlAuthType.AWS_IAM)
        acknowledge(agent, "AwsSolutions-L1", runtime_acknowledgement_reason(runtime))
        return agent
