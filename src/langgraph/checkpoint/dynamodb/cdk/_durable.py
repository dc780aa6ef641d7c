"""``DurableAgentFunction``: a Lambda durable function that runs a graph on a ``CheckpointStore``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from aws_cdk import Duration, Names, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from langgraph.checkpoint.dynamodb.cdk._functions import runtime_acknowledgement_reason
from langgraph.checkpoint.dynamodb.cdk._grants import nag_resource_string
from langgraph.checkpoint.dynamodb.cdk._nag import acknowledge
from langgraph.checkpoint.dynamodb.cdk._store import CheckpointStore

__all__ = ["DURABLE_CALLBACK_ACTIONS", "DURABLE_EXECUTION_ACTIONS", "DurableAgentFunction"]

#: What the durable runtime (the SDK in the function) calls on the function's own
#: executions: the actions of AWS's ``AWSLambdaBasicDurableExecutionRolePolicy``,
#: without its logs actions (granted on the function's log group) or its ``"*"``.
DURABLE_EXECUTION_ACTIONS: Final = ("lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState")
#: What a service that relays a person's answer calls (``send_durable_execution_callback_*``).
DURABLE_CALLBACK_ACTIONS: Final = (
    "lambda:SendDurableExecutionCallbackFailure",
    "lambda:SendDurableExecutionCallbackHeartbeat",
    "lambda:SendDurableExecutionCallbackSuccess",
)

_EXECUTIONS_REASON = (
    "Durable executions are sub-resources of the function: "
    "<function ARN>:<version>/durable-execution/<name>/<id>, created at run time, so the "
    "documented narrowest resource is the function's own ARN followed by ':*' (any version)."
)


class DurableAgentFunction(Construct):
    """A Lambda function with ``durable_config``, for ``durable.durable_handler`` / ``run_durable``.

    It gets its own role (no managed policies) and log group (the store's
    customer key, if any), the store's saver environment and
    ``store.grant_read_write``, and :data:`DURABLE_EXECUTION_ACTIONS` on its
    own executions (``<function ARN>:*``). CDK attaches the managed
    ``AWSLambdaBasicDurableExecutionRolePolicy`` (``"Resource": "*"``) only to
    a role it creates itself; here the same two actions are scoped to this
    function. They are in a policy of their own, attached to the role after
    the function exists: in the role's default policy the function's ARN
    would make the function depend on itself.

    Attributes:
        function: the ``lambda_.Function``.
        role / log_group: its execution role and log group.
        durable_policy: the policy with the durable execution actions.

    Example:
        >>> code = bundled_lambda_code(  # doctest: +SKIP
        ...     "lambdas", include=["approvals"],
        ...     extra_requirements=["langgraph==1.2.24", "aws-durable-execution-sdk-python>=3.0"],
        ... )
        >>> agent = DurableAgentFunction(  # doctest: +SKIP
        ...     stack, "Approvals", store=store, code=code, handler="approvals.handler.handler"
        ... )
        >>> agent.grant_send_callbacks(relay_function)  # doctest: +SKIP
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        store: CheckpointStore,
        code: lambda_.Code,
        handler: str,
        runtime: lambda_.Runtime = lambda_.Runtime.PYTHON_3_12,
        architecture: lambda_.Architecture = lambda_.Architecture.X86_64,
        execution_timeout: Duration = Duration.days(1),
        retention_period: Duration = Duration.days(14),
        timeout: Duration = Duration.minutes(15),
        memory_size: int = 1024,
        environment: Mapping[str, str] | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        description: str | None = None,
        errors_alarm: bool = True,
        **function_options: Any,
    ) -> None:
        """Create the function, its role, log group and grants.

        Args:
            store: the checkpoint store the graph's saver uses.
            code / handler / runtime / architecture: the function's code.
            execution_timeout: how long one durable execution may last in all
                (1 s to 366 days; default one day): a callback waiting for a
                person counts.
            retention_period: how long a closed execution's history is kept (1 to 90 days).
            timeout / memory_size: per invocation (default 15 minutes, 1,024 MB).
            environment: added to ``store.saver_environment``.
            errors_alarm: an alarm on the function's errors (``store.add_errors_alarm``).
            function_options: any other ``lambda_.Function`` property.

        Example:
            >>> DurableAgentFunction(stack, "Agent", store=store, code=code, handler="app.handler")  # doctest: +SKIP
        """
        if not hasattr(lambda_, "DurableConfig"):
            raise RuntimeError("DurableAgentFunction needs an aws-cdk-lib with aws_lambda.DurableConfig")
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Execution role of a durable LangGraph agent",
        )
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=log_retention,
            removal_policy=store.removal_policy,
            encryption_key=store.logs_key(),
        )
        self.function = lambda_.Function(
            self,
            "Function",
            code=code,
            handler=handler,
            runtime=runtime,
            architecture=architecture,
            role=self.role,
            log_group=self.log_group,
            timeout=timeout,
            memory_size=memory_size,
            description=description or "LangGraph agent on a durable function (human-in-the-loop)",
            environment={**store.saver_environment, **(environment or {})},
            durable_config=lambda_.DurableConfig(
                execution_timeout=execution_timeout, retention_period=retention_period
            ),
            **function_options,
        )
        self.log_group.grant_write(self.role)
        store.grant_read_write(self.function)
        self.durable_policy = iam.Policy(
            self,
            "DurableExecutionPolicy",
            roles=[self.role],
            statements=[
                iam.PolicyStatement(actions=list(DURABLE_EXECUTION_ACTIONS), resources=[self.executions_arn])
            ],
        )
        acknowledge(self.durable_policy, self._executions_finding(), _EXECUTIONS_REASON)
        acknowledge(self.function, "AwsSolutions-L1", runtime_acknowledgement_reason(runtime))
        if errors_alarm:
            store.add_errors_alarm(
                self.function,
                f"{Names.unique_id(self)}ErrorsAlarm",
                description=f"The durable agent {self.node.path} failed (an execution or an invocation).",
            )

    @property
    def executions_arn(self) -> str:
        """``<function ARN>:*``: every durable execution of every version of the function."""
        return f"{self.function.function_arn}:*"

    def _executions_finding(self) -> str:
        rendered = nag_resource_string(Stack.of(self).resolve(self.executions_arn))
        return f"AwsSolutions-IAM5[Resource::{rendered}]"

    def grant_send_callbacks(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` answer this function's callbacks (:data:`DURABLE_CALLBACK_ACTIONS`).

        For the service that relays a person's answer
        (``lambda_client.send_durable_execution_callback_success``).

        Example:
            >>> agent.grant_send_callbacks(relay_function)  # doctest: +SKIP
        """
        grant = iam.Grant.add_to_principal(
            grantee=grantee, actions=list(DURABLE_CALLBACK_ACTIONS), resource_arns=[self.executions_arn]
        )
        principal = grantee.grant_principal
        if isinstance(principal, Construct):
            acknowledge(principal, self._executions_finding(), _EXECUTIONS_REASON)
        return grant
