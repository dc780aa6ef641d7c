"""Map :func:`schema.table_definition` (CreateTable arguments) onto ``CfnTable``.

The mapping is mechanical on purpose: every key schema, attribute type, index
and stream setting is *read* from the definition, never retyped here, so the
table ``setup()`` creates and the table CDK deploys cannot drift apart. A key
the mapper does not know raises instead of being dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import aws_dynamodb as dynamodb

__all__ = ["cfn_table_properties"]

#: CreateTable arguments this mapper understands. ``TableName`` is handled by
#: the caller (CloudFormation may generate the name).
_KNOWN_KEYS = frozenset(
    {
        "TableName",
        "BillingMode",
        "AttributeDefinitions",
        "KeySchema",
        "GlobalSecondaryIndexes",
        "StreamSpecification",
    }
)


def _key_schema(keys: list[Mapping[str, str]]) -> list[dynamodb.CfnTable.KeySchemaProperty]:
    return [
        dynamodb.CfnTable.KeySchemaProperty(attribute_name=k["AttributeName"], key_type=k["KeyType"])
        for k in keys
    ]


def cfn_table_properties(definition: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``dynamodb.CfnTable`` from CreateTable arguments.

    Args:
        definition: The result of ``schema.table_definition(name)``.

    Returns:
        ``billing_mode``, ``key_schema``, ``attribute_definitions``,
        ``global_secondary_indexes`` and ``stream_specification`` (the last
        two only when present in the definition).

    Raises:
        NotImplementedError: The definition has a key this mapper cannot
            translate (for instance local secondary indexes); failing here is
            better than deploying a table that differs from the schema.

    Example:
        >>> from langgraph.checkpoint.dynamodb import schema
        >>> props = cfn_table_properties(schema.table_definition("t"))
        >>> props["billing_mode"]
        'PAY_PER_REQUEST'
    """
    unknown = set(definition) - _KNOWN_KEYS
    if unknown:
        raise NotImplementedError(f"table definition keys not mapped to CloudFormation: {sorted(unknown)}")
    props: dict[str, Any] = {
        "billing_mode": definition["BillingMode"],
        "key_schema": _key_schema(definition["KeySchema"]),
        "attribute_definitions": [
            dynamodb.CfnTable.AttributeDefinitionProperty(
                attribute_name=a["AttributeName"], attribute_type=a["AttributeType"]
            )
            for a in definition["AttributeDefinitions"]
        ],
    }
    gsis = definition.get("GlobalSecondaryIndexes")
    if gsis:
        props["global_secondary_indexes"] = [
            dynamodb.CfnTable.GlobalSecondaryIndexProperty(
                index_name=g["IndexName"],
                key_schema=_key_schema(g["KeySchema"]),
                projection=dynamodb.CfnTable.ProjectionProperty(
                    projection_type=g["Projection"]["ProjectionType"],
                    non_key_attributes=g["Projection"].get("NonKeyAttributes"),
                ),
            )
            for g in gsis
        ]
    stream = definition.get("StreamSpecification")
    if stream and stream.get("StreamEnabled"):
        # CloudFormation has no StreamEnabled: a view type enables the stream.
        props["stream_specification"] = dynamodb.CfnTable.StreamSpecificationProperty(
            stream_view_type=stream["StreamViewType"]
        )
    return props
