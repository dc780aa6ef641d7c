"""tests/support/iam.py on its own: requests as IAM authorizes them, and the evaluator."""

from __future__ import annotations

import pytest

from tests.support import iam
from tests.support.iam import Request, Store

STORE = Store("ckpt", "bucket", "<T.Arn>", "<B.Arn>", key_prefix="agent/", prefix_as="checkpoints/")
STATE = {"PK": {"S": "|lifecycle"}, "SK": {"S": "cursor"}}


def test_transact_write_elements_are_their_own_actions() -> None:
    items = [
        {"ConditionCheck": {"TableName": "ckpt", "Key": {"PK": {"S": "t1"}, "SK": {"S": "lock"}}}},
        {"Put": {"TableName": "ckpt", "Item": {"PK": {"S": "t1"}, "SK": {"S": "c"}}}},
        {"Update": {"TableName": "other", "Key": {"PK": {"S": "t2"}, "SK": {"S": "c"}}}},
    ]
    got = iam.requests_of("dynamodb", "TransactWriteItems", {"TransactItems": items}, STORE)
    assert got == [
        Request("dynamodb:ConditionCheckItem", "<T.Arn>", frozenset({"t1"})),
        Request("dynamodb:PutItem", "<T.Arn>", frozenset({"t1"})),
        Request("dynamodb:UpdateItem", "arn:aws:dynamodb:*:*:table/other", frozenset({"t2"})),
    ]


def test_query_leading_key_and_index() -> None:
    table = {
        "TableName": "ckpt",
        "KeyConditionExpression": "#sk > :s AND #p = :v",
        "ExpressionAttributeNames": {"#p": "PK", "#sk": "SK"},
        "ExpressionAttributeValues": {":v": {"S": "t1"}, ":s": {"S": "a"}},
    }
    assert iam.requests_of("dynamodb", "Query", table, STORE) == [
        Request("dynamodb:Query", "<T.Arn>", frozenset({"t1"}))
    ]
    unreadable = {**table, "KeyConditionExpression": "begins_with(#sk, :s)"}
    assert iam.requests_of("dynamodb", "Query", unreadable, STORE)[0].leading_keys == {iam.UNKNOWN_KEY}
    index = {"TableName": "ckpt", "IndexName": "run_id-index", "KeyConditionExpression": "run_id = :r"}
    assert iam.requests_of("dynamodb", "Query", index, STORE) == [
        Request("dynamodb:Query", "<T.Arn>/index/run_id-index")
    ]


def test_s3_operations_and_the_key_prefix() -> None:
    assert iam.requests_of("s3", "ListObjectsV2", {"Bucket": "bucket", "Prefix": "agent/t"}, STORE) == [
        Request("s3:ListBucket", "<B.Arn>", s3_prefix="checkpoints/t")
    ]
    copy = {"Bucket": "bucket", "Key": "agent/b", "CopySource": "bucket/agent/a?versionId=3"}
    assert iam.requests_of("s3", "CopyObject", copy, STORE) == [
        Request("s3:GetObjectVersion", "<B.Arn>/checkpoints/a"),
        Request("s3:PutObject", "<B.Arn>/checkpoints/b"),
    ]
    delete = {"Bucket": "bucket", "Delete": {"Objects": [{"Key": "agent/x"}, {"Key": "y", "VersionId": "1"}]}}
    assert iam.requests_of("s3", "DeleteObjects", delete, STORE) == [
        Request("s3:DeleteObject", "<B.Arn>/checkpoints/x"),
        Request("s3:DeleteObjectVersion", "<B.Arn>/y"),
    ]
    assert iam.requests_of("s3", "HeadObject", {"Bucket": "elsewhere", "Key": "agent/x"}, STORE) == [
        Request("s3:GetObject", "arn:aws:s3:::elsewhere/agent/x")
    ]


STATEMENTS = [
    iam.normalize(s)
    for s in (
        {"Action": "dynamodb:Query", "Effect": "Allow", "Resource": {"Fn::GetAtt": ["T", "Arn"]}},
        {
            "Action": ["dynamodb:PutItem", "dynamodb:GetItem"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": ["T", "Arn"]},
            "Condition": {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["|lifecycle"]}},
        },
        {
            "Action": "s3:ListBucket",
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": ["B", "Arn"]},
            "Condition": {"StringLike": {"s3:prefix": ["checkpoints/*"]}},
        },
        {
            "Action": "s3:DeleteObject",
            "Effect": "Allow",
            "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": ["B", "Arn"]}, "/checkpoints/*"]]},
        },
    )
]


def test_the_evaluator_and_its_reasons() -> None:
    ok = [
        Request("dynamodb:Query", "<T.Arn>", frozenset({"t1"})),
        Request("dynamodb:PutItem", "<T.Arn>", frozenset({"|lifecycle"})),
        Request("dynamodb:GetItem", "<T.Arn>", frozenset({"|lifecycle"})),
        Request("s3:ListBucket", "<B.Arn>", s3_prefix="checkpoints/t"),
        Request("s3:DeleteObject", "<B.Arn>/checkpoints/t/x"),
    ]
    assert all(iam.matching(STATEMENTS, r) for r in ok)
    iam.check_role(STATEMENTS, ok, "Role")
    with pytest.raises(AssertionError, match="granted but never called"):
        iam.check_role(STATEMENTS, ok[:3], "Role")

    def why(req: Request) -> str:
        assert not iam.matching(STATEMENTS, req)
        return iam.why_denied(STATEMENTS, req)

    assert why(Request("dynamodb:Scan", "<T.Arn>")) == "no statement grants dynamodb:Scan"
    assert (
        why(Request("dynamodb:Query", "<T.Arn>/index/i")) == "dynamodb:Query is granted on ['<T.Arn>'] only"
    )
    assert "partition keys ['t1']" in why(
        Request("dynamodb:PutItem", "<T.Arn>", frozenset({"t1", "|lifecycle"}))
    )
    assert "prefix 'other/'" in why(Request("s3:ListBucket", "<B.Arn>", s3_prefix="other/"))
    assert "prefix None" in why(Request("s3:ListBucket", "<B.Arn>"))  # HeadBucket: no s3:prefix
    with pytest.raises(AssertionError, match="requests its role does not allow"):
        iam.check_role(STATEMENTS, [Request("dynamodb:Scan", "<T.Arn>")], "Role")


def test_string_like_is_iams_not_fnmatch() -> None:
    assert iam.string_like("checkpoints/*", "checkpoints/a[1]")
    assert not iam.string_like("checkpoints/[ab]", "checkpoints/a")
    assert iam.string_like("t?", "t1") and not iam.string_like("t?", "t12")
    assert iam.string_like("DynamoDB:GetItem", "dynamodb:getitem", ignore_case=True)


def test_handler_strings() -> None:
    assert iam.handler_string("langgraph.checkpoint.dynamodb.lambdas.pruner") == (
        "langgraph.checkpoint.dynamodb.lambdas.pruner.handler"
    )
    assert iam.handler_string("lambdas.agent.handler") == "agent.handler.handler"
    assert iam._is_handler_module("lambdas.agent.handler")
    assert not iam._is_handler_module("langgraph.checkpoint.dynamodb.lambdas.metrics")
    assert not iam._is_handler_module("lambdas.agent.graph")


def test_a_function_role_from_a_template() -> None:
    template = {
        "Resources": {
            "Fn1": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Handler": "pkg.job.handler",
                    "Role": {"Fn::GetAtt": ["Role1", "Arn"]},
                    "Environment": {
                        "Variables": {
                            "LANGGRAPH_DYNAMODB_TABLE": {"Ref": "T"},
                            "LANGGRAPH_DYNAMODB_BUCKET": {"Ref": "B"},
                            "LANGGRAPH_DYNAMODB_S3_KEY_PREFIX": "checkpoints/",
                        }
                    },
                },
            },
            "Policy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {"Roles": [{"Ref": "Role1"}], "PolicyDocument": {"Statement": STATEMENTS}},
            },
        }
    }
    (fn,) = iam.function_roles(template).values()
    assert (fn.function, fn.role, fn.table_arn, fn.bucket_arn) == ("Fn1", "Role1", "<T.Arn>", "<B.Arn>")
    recorded = Store("ckpt", "bucket", iam.TABLE_TOKEN, iam.BUCKET_TOKEN, "mine/", iam.PREFIX_TOKEN)
    (req,) = iam.requests_of("s3", "DeleteObject", {"Bucket": "bucket", "Key": "mine/t/x"}, recorded)
    assert fn.resolve(req) == Request("s3:DeleteObject", "<B.Arn>/checkpoints/t/x")
    record = iam.Record((fn.handler,), "s3.DeleteObject", (req,))
    assert iam.denials([record], {fn.handler: fn}) == []
    (denial,) = iam.denials([record], {})
    assert "no function of the reference stack runs handler pkg.job.handler" in denial.message
