"""cdk-nag 3.x acknowledgements, recorded where the finding is.

cdk-nag 3 is a CDK *validation plugin* (``Validations.of(app).add_plugins``);
findings are acknowledged with CDK's own ``Validations.of(construct)
.acknowledge(Acknowledgment(id=..., reason=...))``. Recording them costs
nothing when no nag plugin is registered, so the construct always records
them: an app that runs cdk-nag gets a clean report without copying reasons.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

__all__ = ["NAG_NAMESPACE", "acknowledge"]

#: The validation namespace of cdk-nag's AwsSolutions pack.
NAG_NAMESPACE = "AwsSolutions"


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding (``RuleId`` or ``RuleId[FindingId]``) on ``scope``.

    The id is recorded in CDK's canonical ``<plugin>::<rule>`` form (what the
    synth report prints as "Acknowledge with ..."); without the namespace CDK
    files it under ``Annotation::`` and only cdk-nag's own matching applies.
    The acknowledgement covers ``scope`` and every construct below it.

    Example:
        >>> acknowledge(queue, "AwsSolutions-SQS3", "This queue is a DLQ.")  # doctest: +SKIP
    """
    # "::" inside the finding (``[Resource::*]``) is not a namespace separator.
    if "::" not in rule_id.split("[", 1)[0]:
        rule_id = f"{NAG_NAMESPACE}::{rule_id}"
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
