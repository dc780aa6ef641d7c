"""The key the maintenance function signs its continuation tokens with (HMAC-SHA256)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import ArnFormat, RemovalPolicy, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from langgraph.checkpoint.dynamodb.cdk._nag import acknowledge

__all__ = ["TokenKey", "create_token_key", "grant_token_key"]


@dataclass(frozen=True)
class TokenKey:
    """The secret and the name the construct gave it (``None`` when the stack's name is a token)."""

    secret: secretsmanager.Secret
    name: str | None

    @property
    def secret_id(self) -> str:
        """What the function's environment names it by: the name (a plain string), else the ARN."""
        return self.secret.secret_arn if self.name is None else self.name


def create_token_key(scope: Construct) -> TokenKey:
    """A generated 64-character secret in Secrets Manager (AWS managed key), in ``scope``.

    Only the maintenance function's role may read it (:func:`grant_token_key`):
    its own policy grants ``GetSecretValue`` on this secret alone, and the
    secret's resource policy denies ``GetSecretValue`` to every other
    principal, however wide its IAM grants. Its name is fixed (stack name and
    the construct's address), so the function's environment names it as a
    plain string; CloudFormation deletes a secret without a recovery window,
    so a stack deleted and deployed again can reuse it. It is never retained:
    it only signs tokens of copies under way.
    """
    stack_name = Stack.of(scope).stack_name
    name = (
        None
        if Token.is_unresolved(stack_name)
        else f"{stack_name}-{scope.node.addr[:16]}-maintenance-token-key"
    )
    secret = secretsmanager.Secret(
        scope,
        "MaintenanceTokenKey",
        secret_name=name,
        description="Signs the continuation tokens of the checkpoint maintenance function (HMAC-SHA256).",
        generate_secret_string=secretsmanager.SecretStringGenerator(
            password_length=64, exclude_punctuation=True, include_space=False
        ),
        removal_policy=RemovalPolicy.DESTROY,
    )
    acknowledge(
        secret,
        "AwsSolutions-SMG4",
        "The key signs continuation tokens of copies under way only; rotating it (put a new value) "
        "makes in-flight copies start again, so it is rotated on demand, not on a schedule.",
    )
    return TokenKey(secret=secret, name=name)


def grant_token_key(scope: Construct, key: TokenKey, fn: lambda_.Function) -> None:
    """``GetSecretValue`` for ``fn``'s role, and a resource policy that denies it to everyone else."""
    role = fn.role
    assert role is not None
    secret = key.secret
    # By name when it is fixed: the ARN Secrets Manager gives it ends in "-" and six
    # random characters (the documented IAM pattern). It does not depend on the secret
    # resource resolving, which moto's CloudFormation skips (`make deploy-local`).
    arn = (
        secret.secret_arn
        if key.name is None
        else Stack.of(scope).format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=f"{key.name}-??????",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
    )
    role.add_to_principal_policy(
        iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[arn])
    )
    # Nobody else, whatever their IAM grants (an account admin changes the policy first, in CloudTrail).
    secret.add_to_resource_policy(
        iam.PolicyStatement(
            effect=iam.Effect.DENY,
            actions=["secretsmanager:GetSecretValue"],
            principals=[iam.AnyPrincipal()],
            resources=["*"],
            conditions={"ArnNotEquals": {"aws:PrincipalArn": role.role_arn}},
        )
    )
