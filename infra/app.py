"""The reference CDK app: ``cdk synth`` / ``cdk deploy`` run this (see ``cdk.json``).

Context (``-c key=value``):

* ``stack_name``: default ``LangGraphCheckpoints``.
* ``removal_policy``: ``retain`` (default) or ``destroy`` (throwaway stacks).
* ``kms``: ``true`` for a customer managed key.
* ``alarm_topic_arn``: SNS topic for alarms.
* ``runtime``: ``python3.11``, ``python3.12`` (default) or ``python3.13``.
* ``lambda_code_dir``: handlers' root (default: ``lambdas/``).
* ``nag``: ``false`` to skip cdk-nag (it runs by default and fails the synth
  on any unacknowledged finding).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Run as a script (``python infra/app.py``): make ``infra`` importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aws_cdk import App, Environment, RemovalPolicy, Validations
from cdk_nag import AwsSolutionsChecks

from infra.stacks import PYTHON_RUNTIMES, RUNTIME, LangGraphCheckpointStack


def _flag(app: App, key: str, default: bool) -> bool:
    value = app.node.try_get_context(key)
    if value is None:
        return default
    return str(value).lower() in ("1", "true", "yes", "on")


def build_app(app: App | None = None) -> App:
    """Create the app and its stack (tests call this with their own ``App``)."""
    app = app or App()
    removal = str(app.node.try_get_context("removal_policy") or "retain").lower()
    if removal not in ("retain", "destroy"):
        raise ValueError(f"removal_policy must be 'retain' or 'destroy', not {removal!r}")
    runtime_name = str(app.node.try_get_context("runtime") or RUNTIME.name)
    if runtime_name not in PYTHON_RUNTIMES:
        raise ValueError(f"runtime must be one of {sorted(PYTHON_RUNTIMES)}, not {runtime_name!r}")
    account = os.environ.get("CDK_DEFAULT_ACCOUNT")
    region = os.environ.get("CDK_DEFAULT_REGION")
    LangGraphCheckpointStack(
        app,
        "LangGraphCheckpointStack",
        stack_name=app.node.try_get_context("stack_name") or "LangGraphCheckpoints",
        env=Environment(account=account, region=region) if account and region else None,
        removal_policy=RemovalPolicy.DESTROY if removal == "destroy" else RemovalPolicy.RETAIN,
        use_kms=_flag(app, "kms", False),
        alarm_topic_arn=app.node.try_get_context("alarm_topic_arn"),
        lambda_code_dir=app.node.try_get_context("lambda_code_dir"),
        runtime=PYTHON_RUNTIMES[runtime_name],
    )
    if _flag(app, "nag", True):
        # Acknowledged findings are also written into the template metadata
        # (cdk_nag.rules_to_suppress): an audit trail next to each resource.
        Validations.of(app).add_plugins(AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True))
    return app


if __name__ == "__main__":
    build_app().synth()
