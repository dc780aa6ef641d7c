"""The strict AWS-rules layer's pure checks (tests/support/strict_aws.py): each limit fires, and a
legal request at the limit passes. No server: the checks work on the wire format alone."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.support.strict_aws import (
    MAX_ITEM_BYTES,
    IndexSchema,
    TableSchema,
    Violation,
    check_dynamodb,
    check_s3,
    count_operators,
    decode_aws_chunked,
    item_size,
    number_size,
    value_size,
)

TABLE = TableSchema(
    "t",
    "PK",
    "SK",
    {"PK": "S", "SK": "S", "G": "S", "GS": "N", "L": "S", "BK": "B"},
    (
        IndexSchema("by-g", "G", "GS", is_global=True),
        IndexSchema("by-l", "PK", "L", is_global=False),
    ),
)
HASH_ONLY = TableSchema("h", "id", None, {"id": "B"})
SCHEMAS = {"t": TABLE, "h": HASH_ONLY}


def lookup(name: str) -> TableSchema | None:
    return SCHEMAS.get(name)


def check(op: str, body: dict[str, Any], simulate: Any = None) -> list[Violation]:
    return check_dynamodb(op, body, lookup, simulate)


def limits(violations: list[Violation]) -> list[str]:
    return [v.limit for v in violations]


def key(pk: str = "p", sk: str = "s") -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def padded_item(total: int, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """``base`` plus a string attribute ``p`` so the item measures exactly ``total`` bytes."""
    item = dict(base or key())
    item["p"] = {"S": "x" * (total - item_size(item) - 1)}
    assert item_size(item) == total
    return item


# -- item size ("DynamoDB item sizes and formats") -----------------------------------------

# Every literal measured against real DynamoDB at the 400 KB boundary (accepted at exactly
# 409,600 bytes, refused one byte over) in the public paritysuite/dynamodb-conformance capture
# (src/item-size.ts, eu-west-2, 2026-08-18).
CAPTURED_NUMBER_BYTES = [
    ("0", 1),
    ("1", 2),
    ("12", 2),
    ("123", 3),
    ("1234", 3),
    ("12345678901234567890123456789012345678", 20),
    ("0042", 2),
    ("100", 2),
    ("1010", 3),
    ("0.0000001", 2),
    ("1E125", 2),
    ("1E-100", 2),
    ("1.5", 3),
    ("15", 2),
    ("1.2", 3),
    ("1.200", 3),
    ("1.234", 4),
    ("3.14159", 5),
    ("123456", 4),
    ("100.5", 4),
    ("0.15", 2),
    ("-42", 3),
    ("-0", 1),
]


@pytest.mark.parametrize(("literal", "size"), CAPTURED_NUMBER_BYTES)
def test_number_size_matches_what_dynamodb_measured(literal: str, size: int) -> None:
    assert number_size(literal) == size


def test_number_size_is_within_the_documented_approximation() -> None:
    # "(1 byte per two significant digits) + (1 byte)": exact for an even count of digits
    # aligned on the decimal point.
    assert number_size("12") == 1 + 1
    assert number_size("123456") == 3 + 1
    assert number_size("1234.56") == 3 + 1


def test_the_documented_item_size_example() -> None:
    # "Constraints in Amazon DynamoDB", Item size: "an item with two attributes: one attribute
    # named "shirt-color" with value "R" and another attribute named "shirt-size" with value "M".
    # The total size of that item is 23 bytes."
    assert item_size({"shirt-color": {"S": "R"}, "shirt-size": {"S": "M"}}) == 23


def test_value_sizes_by_the_documented_rules() -> None:
    assert value_size({"S": "é"}) == 2  # UTF-8 bytes
    assert value_size({"B": base64.b64encode(b"\x00\x01\x02\x03\x04").decode()}) == 5  # raw bytes
    assert value_size({"BOOL": True}) == 1
    assert value_size({"NULL": True}) == 1
    assert value_size({"M": {}}) == 3  # "The size of an empty List or Map is ... (3 bytes)"
    assert value_size({"L": []}) == 3
    # 3 bytes of overhead, plus 1 per element, plus the elements (a map element with its name).
    assert value_size({"L": [{"S": "ab"}, {"N": "12"}]}) == 3 + (1 + 2) + (1 + 2)
    assert value_size({"M": {"k": {"S": "ab"}, "n": {"M": {}}}}) == 3 + (1 + 1 + 2) + (1 + 1 + 3)
    assert value_size({"SS": ["a", "bc"]}) == 3
    assert value_size({"NS": ["1", "123"]}) == 2 + 3
    assert item_size({"name": {"S": "abc"}}) == 4 + 3


def test_an_item_of_exactly_400_kb_passes_and_one_byte_more_fails() -> None:
    assert check("PutItem", {"TableName": "t", "Item": padded_item(MAX_ITEM_BYTES)}) == []
    over = check("PutItem", {"TableName": "t", "Item": padded_item(MAX_ITEM_BYTES + 1)})
    assert limits(over) == ["item-size"]
    assert "409,601 bytes" in str(over[0]) and "400 KB (409,600 bytes)" in str(over[0])


def test_item_size_counts_documents_and_numbers_exactly() -> None:
    base = {**key(), "doc": {"M": {"a": {"L": [{"N": "3.14159"}, {"BOOL": False}]}}}, "n": {"N": "-42"}}
    assert check("PutItem", {"TableName": "t", "Item": padded_item(MAX_ITEM_BYTES, base)}) == []
    assert limits(check("PutItem", {"TableName": "t", "Item": padded_item(MAX_ITEM_BYTES + 1, base)})) == [
        "item-size"
    ]


def test_item_size_after_an_update() -> None:
    stored = padded_item(MAX_ITEM_BYTES - 10)

    def simulate(table: str, params: Any) -> dict[str, Any]:
        return {**stored, **{"q": params["ExpressionAttributeValues"][":v"]}}

    update = {"TableName": "t", "Key": key(), "UpdateExpression": "SET q = :v"}
    at_limit = {**update, "ExpressionAttributeValues": {":v": {"S": "x" * 9}}}  # 1 + 9 = 10 bytes
    assert check("UpdateItem", at_limit, simulate) == []
    over = check("UpdateItem", {**update, "ExpressionAttributeValues": {":v": {"S": "x" * 10}}}, simulate)
    assert limits(over) == ["item-size"] and "after the update is 409,601 bytes" in str(over[0])


def test_nesting_depth_32_passes_33_fails() -> None:
    def deep(wraps: int) -> dict[str, Any]:
        v: dict[str, Any] = {"S": "leaf"}
        for _ in range(wraps):
            v = {"M": {"n": v}}
        return v

    assert check("PutItem", {"TableName": "t", "Item": {**key(), "d": deep(31)}}) == []
    over = check("PutItem", {"TableName": "t", "Item": {**key(), "d": {"L": [deep(31)]}}})
    assert limits(over) == ["nesting-depth"] and "33 levels" in str(over[0])


# -- keys ----------------------------------------------------------------------------------


def test_key_lengths_at_and_over_the_limits() -> None:
    assert check("PutItem", {"TableName": "t", "Item": key("p" * 2048, "s" * 1024)}) == []
    assert limits(check("PutItem", {"TableName": "t", "Item": key("p" * 2049)})) == ["key-length"]
    over = check("GetItem", {"TableName": "t", "Key": key("p", "é" * 513)})
    assert limits(over) == ["key-length"] and "sort key 'SK' is 1,026 bytes" in str(over[0])
    binary = base64.b64encode(b"\x01" * 2049).decode()
    assert limits(check("DeleteItem", {"TableName": "h", "Key": {"id": {"B": binary}}})) == ["key-length"]


def test_empty_key_values_fail_on_table_and_index_keys() -> None:
    assert limits(check("GetItem", {"TableName": "t", "Key": key("")})) == ["empty-key-value"]
    assert limits(check("DeleteItem", {"TableName": "h", "Key": {"id": {"B": ""}}})) == ["empty-key-value"]
    item = {**key(), "G": {"S": ""}, "GS": {"N": "1"}, "other": {"S": ""}}  # empty non-key strings are fine
    over = check("PutItem", {"TableName": "t", "Item": item})
    assert limits(over) == ["empty-key-value"] and "global secondary index 'by-g'" in str(over[0])
    assert limits(check("PutItem", {"TableName": "t", "Item": {**key(), "L": {"S": ""}}})) == [
        "empty-key-value"
    ]


def test_index_key_attributes_have_the_length_limits_and_defined_types() -> None:
    assert (
        check("PutItem", {"TableName": "t", "Item": {**key(), "G": {"S": "g" * 2048}, "GS": {"N": "1"}}})
        == []
    )
    assert limits(check("PutItem", {"TableName": "t", "Item": {**key(), "G": {"S": "g" * 2049}}})) == [
        "key-length"
    ]
    assert limits(check("PutItem", {"TableName": "t", "Item": {**key(), "L": {"S": "l" * 1025}}})) == [
        "key-length"
    ]
    wrong = check("PutItem", {"TableName": "t", "Item": {**key(), "GS": {"S": "1"}}})
    assert limits(wrong) == ["index-key-type"]


def test_index_keys_of_the_item_after_an_update() -> None:
    def simulate(table: str, params: Any) -> dict[str, Any]:
        return {**key(), "G": {"S": ""}}

    update = {
        "TableName": "t",
        "Key": key(),
        "UpdateExpression": "SET G = :g",
        "ExpressionAttributeValues": {":g": {"S": ""}},
    }
    assert limits(check("UpdateItem", update, simulate)) == ["empty-key-value"]


# -- expressions ---------------------------------------------------------------------------


def update_of_bytes(total: int) -> dict[str, Any]:
    clauses, i = [], 0
    expr = "SET "
    while len(expr) + 60 < total:
        clauses.append(f"a{i:03d}{'x' * 40} = :v")
        expr = "SET " + ", ".join(clauses)
        i += 1
    clauses[-1] = clauses[-1].replace(" = :v", "y" * (total - len(expr)) + " = :v")
    expr = "SET " + ", ".join(clauses)
    assert len(expr.encode()) == total
    return {
        "TableName": "t",
        "Key": key(),
        "UpdateExpression": expr,
        "ExpressionAttributeValues": {":v": {"S": "x"}},
    }


def test_an_expression_of_exactly_4096_bytes_passes_and_4097_fails() -> None:
    assert check("UpdateItem", update_of_bytes(4096)) == []
    over = check("UpdateItem", update_of_bytes(4097))
    assert limits(over) == ["expression-size"]
    assert (
        str(over[0]) == "UpdateItem: UpdateExpression is 4,097 bytes; DynamoDB's limit is 4 KB (4,096 bytes)"
    )


def test_expression_length_is_in_utf8_bytes_of_the_raw_string() -> None:
    def get(projection: str, names: dict[str, str] | None = None) -> list[str]:
        body: dict[str, Any] = {"TableName": "t", "Key": key(), "ProjectionExpression": projection}
        if names:
            body["ExpressionAttributeNames"] = names
        return limits(check("GetItem", body))

    assert get("é" * 2048) == []  # 2,048 characters, 4,096 bytes
    assert get("é" * 2048 + "a") == ["expression-size"]  # 2,049 characters, 4,097 bytes
    # Measured before substitution: 30 short aliases for 255-byte names are a short expression.
    aliases = {f"#n{i}": "n" * 250 + f"{i:05d}" for i in range(30)}
    assert get(", ".join(aliases), aliases) == []


def test_expressions_inside_transactions_and_batches_are_checked() -> None:
    long = "attribute_exists(" + "a" * 4100 + ")"
    twi = {
        "TransactItems": [{"ConditionCheck": {"TableName": "t", "Key": key(), "ConditionExpression": long}}]
    }
    assert limits(check("TransactWriteItems", twi)) == ["expression-size"]
    tgi = {"TransactItems": [{"Get": {"TableName": "t", "Key": key(), "ProjectionExpression": "a" * 4097}}]}
    assert limits(check("TransactGetItems", tgi)) == ["expression-size"]
    bgi = {"RequestItems": {"t": {"Keys": [key()], "ProjectionExpression": "a" * 4097}}}
    assert limits(check("BatchGetItem", bgi)) == ["expression-size"]


def chain(n: int, joiner: str = " AND ") -> str:
    return joiner.join(f"attribute_exists(a{i})" for i in range(n))


def test_operator_count_300_passes_301_fails() -> None:
    # 150 functions joined by 149 ANDs: 299.
    assert count_operators(chain(150)) == (299, 0)
    at = "NOT " + chain(150)
    over = chain(150) + " AND a = :b"
    assert count_operators(at)[0] == 300 and count_operators(over)[0] == 301
    assert check("DeleteItem", {"TableName": "t", "Key": key(), "ConditionExpression": at}) == []
    body = {
        "TableName": "t",
        "Key": key(),
        "ConditionExpression": over,
        "ExpressionAttributeValues": {":b": {"S": "b"}},
    }
    found = check("DeleteItem", body)
    assert limits(found) == ["expression-operators"]
    assert "ConditionExpression has 301 operators and functions; DynamoDB's limit is 300" in str(found[0])


def test_what_counts_as_an_operator() -> None:
    # The documented example: SET a = :val1 + :val2 + :val3 contains two operators.
    assert count_operators("SET a = :val1 + :val2 + :val3", update=True) == (2, 0)
    # if_not_exists and list_append are functions; SET's "=" and the clause keywords are not counted.
    assert count_operators(
        "SET a = if_not_exists(a, :z), b = list_append(b, :l) REMOVE c ADD d :one", update=True
    ) == (2, 0)
    assert count_operators("a BETWEEN :x AND :y AND NOT (b <> :z)") == (4, 0)  # BETWEEN, AND, NOT, <>
    assert count_operators("a IN (:a, :b, :c) OR size(b) >= :n") == (4, 3)  # IN, OR, size, >=
    # 151 if_not_exists clauses (moto answers HTTP 500 there) are 151 functions: within the limit.
    sets = ", ".join(f"a{i} = if_not_exists(a{i}, :v)" for i in range(151))
    assert count_operators("SET " + sets, update=True) == (151, 0)


def test_in_takes_at_most_100_operands() -> None:
    values = {f":v{i}": {"S": str(i)} for i in range(101)}
    body = {"TableName": "t", "FilterExpression": "a IN (" + ", ".join(list(values)[:100]) + ")"}
    assert check("Scan", {**body, "ExpressionAttributeValues": dict(list(values.items())[:100])}) == []
    body["FilterExpression"] = "a IN (" + ", ".join(values) + ")"
    assert limits(check("Scan", {**body, "ExpressionAttributeValues": values})) == ["in-operands"]


def test_expression_attribute_names_and_values_must_match_the_expressions() -> None:
    base = {"TableName": "t", "Key": key(), "UpdateExpression": "SET #a = :a"}
    good = {**base, "ExpressionAttributeNames": {"#a": "a"}, "ExpressionAttributeValues": {":a": {"S": "x"}}}
    assert check("UpdateItem", good) == []
    unused = {**good, "ExpressionAttributeNames": {"#a": "a", "#b": "b"}}
    assert limits(check("UpdateItem", unused)) == ["expression-attributes-unused"]
    assert "#b" in str(check("UpdateItem", unused)[0])
    unused_value = {**good, "ExpressionAttributeValues": {":a": {"S": "x"}, ":zz": {"S": "y"}}}
    assert limits(check("UpdateItem", unused_value)) == ["expression-attributes-unused"]
    undefined = {**good, "ExpressionAttributeNames": {}}
    assert sorted(limits(check("UpdateItem", undefined))) == [
        "expression-attributes-empty",
        "expression-attributes-undefined",
    ]
    missing_value = {**base, "ExpressionAttributeNames": {"#a": "a"}}
    assert limits(check("UpdateItem", missing_value)) == ["expression-attributes-undefined"]
    # A name used only in the ConditionExpression counts as used.
    cond = {
        **good,
        "ConditionExpression": "attribute_exists(#b)",
        "ExpressionAttributeNames": {"#a": "a", "#b": "b"},
    }
    assert check("UpdateItem", cond) == []
    no_expression = {"TableName": "t", "Key": key(), "ExpressionAttributeNames": {"#a": "a"}}
    assert limits(check("GetItem", no_expression)) == ["expression-attributes-without-expression"]


def test_substitution_tokens_are_at_most_255_bytes() -> None:
    name = "#" + "n" * 254
    ok = {
        "TableName": "t",
        "Key": key(),
        "ProjectionExpression": name,
        "ExpressionAttributeNames": {name: "a"},
    }
    assert check("GetItem", ok) == []
    name += "n"
    over = {
        "TableName": "t",
        "Key": key(),
        "ProjectionExpression": name,
        "ExpressionAttributeNames": {name: "a"},
    }
    assert limits(check("GetItem", over)) == ["expression-token-length"]


# -- batches and transactions -----------------------------------------------------------------


def puts(n: int) -> list[dict[str, Any]]:
    return [{"PutRequest": {"Item": key(f"p{i}")}} for i in range(n)]


def test_batch_write_25_requests_pass_26_fail() -> None:
    assert check("BatchWriteItem", {"RequestItems": {"t": puts(25)}}) == []
    deletes = [
        {"DeleteRequest": {"Key": {"id": {"B": base64.b64encode(bytes([i])).decode()}}}} for i in range(13)
    ]
    split = {"RequestItems": {"t": puts(13), "h": deletes}}
    assert limits(check("BatchWriteItem", split)) == ["batch-write-count"]


def test_batch_write_carries_at_most_16_mb() -> None:
    big = base64.b64encode(b"x" * 399_000).decode()  # 532,000 characters on the wire
    items = [{"PutRequest": {"Item": {**key(f"p{i}"), "b": {"B": big}}}} for i in range(25)]
    assert check("BatchWriteItem", {"RequestItems": {"t": items[:24]}}) == []
    fat = [{"PutRequest": {"Item": {**key(f"p{i}"), "b": {"B": big * 2}}}} for i in range(16)]
    found = check("BatchWriteItem", {"RequestItems": {"t": fat}})
    assert "batch-write-size" in limits(found)


def test_batch_write_refuses_two_requests_on_one_item() -> None:
    same = [{"PutRequest": {"Item": {**key("a"), "x": {"S": "1"}}}}, {"DeleteRequest": {"Key": key("a")}}]
    found = check("BatchWriteItem", {"RequestItems": {"t": same}})
    assert limits(found) == ["batch-write-duplicate-key"]
    # The same key in two tables is two items.
    assert (
        check(
            "BatchWriteItem",
            {"RequestItems": {"t": puts(1), "h": [{"PutRequest": {"Item": {"id": {"B": "AQ=="}}}}]}},
        )
        == []
    )


def test_batch_get_100_keys_pass_101_fail_and_duplicates_fail() -> None:
    keys = [key(f"p{i}") for i in range(100)]
    assert check("BatchGetItem", {"RequestItems": {"t": {"Keys": keys}}}) == []
    over = check(
        "BatchGetItem",
        {
            "RequestItems": {
                "t": {"Keys": keys[:60]},
                "h": {"Keys": [{"id": {"B": base64.b64encode(bytes([i])).decode()}} for i in range(41)]},
            }
        },
    )
    assert limits(over) == ["batch-get-count"]
    dup = check("BatchGetItem", {"RequestItems": {"t": {"Keys": [key("a"), key("b"), key("a")]}}})
    assert limits(dup) == ["batch-get-duplicate-key"]


def test_number_keys_that_are_equal_are_duplicates() -> None:
    SCHEMAS["n"] = TableSchema("n", "id", None, {"id": "N"})
    try:
        found = check(
            "BatchGetItem", {"RequestItems": {"n": {"Keys": [{"id": {"N": "1"}}, {"id": {"N": "1.0"}}]}}}
        )
        assert limits(found) == ["batch-get-duplicate-key"]
    finally:
        del SCHEMAS["n"]


def test_transact_write_100_actions_pass_101_fail() -> None:
    actions = [{"Put": {"TableName": "t", "Item": key(f"p{i}")}} for i in range(100)]
    assert check("TransactWriteItems", {"TransactItems": actions}) == []
    more = [*actions, {"Delete": {"TableName": "t", "Key": key("last")}}]
    assert limits(check("TransactWriteItems", {"TransactItems": more})) == ["transact-write-count"]


def test_transact_write_never_two_actions_on_one_item() -> None:
    actions = [
        {
            "ConditionCheck": {
                "TableName": "t",
                "Key": key("a"),
                "ConditionExpression": "attribute_exists(PK)",
            }
        },
        {
            "Update": {
                "TableName": "t",
                "Key": key("a"),
                "UpdateExpression": "SET x = :x",
                "ExpressionAttributeValues": {":x": {"N": "1"}},
            }
        },
    ]
    assert limits(check("TransactWriteItems", {"TransactItems": actions})) == ["transact-same-item"]


def test_keys_that_do_not_match_the_schema_are_not_the_same_item() -> None:
    # Both keys lack the table's sort key: DynamoDB refuses them as keys that do not match the
    # schema, not as two actions on one item (the backend answers that itself).
    actions = [
        {
            "ConditionCheck": {
                "TableName": "t",
                "Key": {"PK": {"S": "a"}, "X": {"S": "1"}},
                "ConditionExpression": "attribute_exists(PK)",
            }
        },
        {"Delete": {"TableName": "t", "Key": {"PK": {"S": "a"}, "X": {"S": "2"}}}},
    ]
    assert check("TransactWriteItems", {"TransactItems": actions}) == []
    unknown = [
        {"Put": {"TableName": "nope", "Item": key("a")}},
        {"Delete": {"TableName": "nope", "Key": key("a")}},
    ]
    assert check("TransactWriteItems", {"TransactItems": unknown}) == []


def test_transact_write_carries_at_most_4_mb() -> None:
    big = {"B": base64.b64encode(b"x" * 400_000).decode()}
    actions = [{"Put": {"TableName": "t", "Item": {**key(f"p{i}"), "b": big}}} for i in range(10)]
    assert check("TransactWriteItems", {"TransactItems": actions}) == []
    actions += [{"Put": {"TableName": "t", "Item": {**key("p10"), "b": big}}}]
    assert limits(check("TransactWriteItems", {"TransactItems": actions})) == ["transact-write-size"]


def test_transact_write_client_request_token_is_at_most_36_characters() -> None:
    actions = [{"Put": {"TableName": "t", "Item": key()}}]
    assert check("TransactWriteItems", {"TransactItems": actions, "ClientRequestToken": "t" * 36}) == []
    over = check("TransactWriteItems", {"TransactItems": actions, "ClientRequestToken": "t" * 37})
    assert limits(over) == ["client-request-token"]


def test_a_transacted_update_over_the_item_size_cancels_the_transaction() -> None:
    def simulate(table: str, params: Any) -> dict[str, Any]:
        return padded_item(MAX_ITEM_BYTES + 1)

    actions = [
        {"Put": {"TableName": "t", "Item": key("other")}},
        {
            "Update": {
                "TableName": "t",
                "Key": key(),
                "UpdateExpression": "SET p = :p",
                "ExpressionAttributeValues": {":p": {"S": "x"}},
            }
        },
    ]
    found = check("TransactWriteItems", {"TransactItems": actions}, simulate)
    assert limits(found) == ["item-size"] and found[0].cancel_index == 1


def test_transact_get_100_pass_101_fail() -> None:
    gets = [{"Get": {"TableName": "t", "Key": key(f"p{i}")}} for i in range(101)]
    assert check("TransactGetItems", {"TransactItems": gets[:100]}) == []
    assert limits(check("TransactGetItems", {"TransactItems": gets})) == ["transact-get-count"]


# -- reads -------------------------------------------------------------------------------------


def query(**extra: Any) -> dict[str, Any]:
    return {
        "TableName": "t",
        "KeyConditionExpression": "PK = :p",
        "ExpressionAttributeValues": {":p": {"S": "p"}},
        **extra,
    }


def test_no_consistent_read_on_a_global_secondary_index() -> None:
    gsi = {
        "TableName": "t",
        "IndexName": "by-g",
        "KeyConditionExpression": "G = :g",
        "ExpressionAttributeValues": {":g": {"S": "g"}},
    }
    assert check("Query", {**gsi, "ConsistentRead": False}) == []
    assert limits(check("Query", {**gsi, "ConsistentRead": True})) == ["gsi-consistent-read"]
    assert limits(check("Scan", {"TableName": "t", "IndexName": "by-g", "ConsistentRead": True})) == [
        "gsi-consistent-read"
    ]
    assert check("Query", query(IndexName="by-l", ConsistentRead=True)) == []  # a local index may
    assert check("Query", query(ConsistentRead=True)) == []


def test_limit_is_at_least_1() -> None:
    assert check("Query", query(Limit=1)) == []
    assert limits(check("Query", query(Limit=0))) == ["limit-minimum"]
    assert limits(check("Scan", {"TableName": "t", "Limit": 0})) == ["limit-minimum"]


def test_exclusive_start_key_has_exactly_the_key_attributes() -> None:
    assert check("Query", query(ExclusiveStartKey=key())) == []
    assert limits(check("Query", query(ExclusiveStartKey={"PK": {"S": "p"}}))) == ["exclusive-start-key"]
    extra = check("Query", query(ExclusiveStartKey={**key(), "x": {"S": "1"}}))
    assert limits(extra) == ["exclusive-start-key"] and "non-key attributes x" in str(extra[0])
    esk = {**key(), "G": {"S": "g"}, "GS": {"N": "1"}}
    assert check("Scan", {"TableName": "t", "IndexName": "by-g", "ExclusiveStartKey": esk}) == []
    assert limits(check("Scan", {"TableName": "t", "IndexName": "by-g", "ExclusiveStartKey": key()})) == [
        "exclusive-start-key"
    ]
    assert limits(check("Query", query(ExclusiveStartKey=key("")))) == ["empty-key-value"]


def test_scan_segments() -> None:
    assert check("Scan", {"TableName": "t", "Segment": 3, "TotalSegments": 4}) == []
    assert limits(check("Scan", {"TableName": "t", "Segment": 4, "TotalSegments": 4})) == ["scan-segments"]
    assert limits(check("Scan", {"TableName": "t", "Segment": 0})) == ["scan-segments"]
    assert limits(check("Scan", {"TableName": "t", "TotalSegments": 1_000_001, "Segment": 0})) == [
        "scan-segments"
    ]


# -- values ------------------------------------------------------------------------------------


def test_numbers_have_38_digits_of_precision_and_a_range() -> None:
    def put(n: str) -> list[str]:
        return limits(check("PutItem", {"TableName": "t", "Item": {**key(), "n": {"N": n}}}))

    assert put("1" * 38) == [] and put("1" * 38 + "000") == [] and put("-0.000" + "9" * 38) == []
    assert put("1" * 39) == ["number-precision"]
    assert put("9.9999999999999999999999999999999999999E+125") == [] and put("1E-130") == []
    assert put("1E126") == ["number-range"] and put("1E-131") == ["number-range"]
    assert put("NaN") == ["number-format"] and put("1_000") == ["number-format"]


def test_sets_are_not_empty_and_have_unique_members() -> None:
    def put(av: dict[str, Any]) -> list[str]:
        return limits(check("PutItem", {"TableName": "t", "Item": {**key(), "s": av}}))

    assert put({"SS": ["a", "b"]}) == [] and put({"L": []}) == [] and put({"M": {}}) == []
    assert put({"SS": []}) == ["empty-set"]
    assert put({"M": {"inner": {"NS": []}}}) == ["empty-set"]
    assert put({"SS": ["a", "a"]}) == ["set-duplicates"]
    assert put({"NS": ["1", "1.00"]}) == ["set-duplicates"]
    update = {
        "TableName": "t",
        "Key": key(),
        "UpdateExpression": "ADD s :s",
        "ExpressionAttributeValues": {":s": {"SS": []}},
    }
    assert limits(check("UpdateItem", update)) == ["empty-set"]


# -- S3 ----------------------------------------------------------------------------------------

AUTH = {
    "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261201/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=x"
}


def auth(region: str) -> dict[str, str]:
    return {"Authorization": AUTH["Authorization"].replace("us-east-1", region)}


def quoted(key: str) -> str:
    from urllib.parse import quote

    return "/bkt/" + quote(key, safe="/")


def test_s3_keys_are_at_most_1024_utf8_bytes() -> None:
    assert check_s3("PUT", quoted("k" * 1024), "", AUTH, None) == []
    assert check_s3("GET", quoted("é" * 512), "", AUTH, None) == []
    over = check_s3("HEAD", quoted("é" * 512 + "k"), "", AUTH, None)
    assert limits(over) == ["s3-key-length"] and over[0].code == "KeyTooLongError"
    assert str(over[0]) == "HeadObject: the object key is 1,025 bytes (UTF-8); S3's limit is 1,024 bytes"
    for method, query, op in [
        ("DELETE", "", "DeleteObject"),
        ("POST", "uploads", "CreateMultipartUpload"),
        ("PUT", "partNumber=1&uploadId=u", "UploadPart"),
        ("POST", "uploadId=u", "CompleteMultipartUpload"),
        ("DELETE", "uploadId=u", "AbortMultipartUpload"),
    ]:
        found = check_s3(method, quoted("k" * 1025), query, AUTH, None)
        assert limits(found) == ["s3-key-length"] and str(found[0]).startswith(op), (method, query, found)


def test_s3_virtual_hosted_requests() -> None:
    host = {"Host": "bkt.localhost:4566", **AUTH}
    assert (
        check_s3("PUT", "/k", "", {**host, "Authorization": auth("eu-west-1")["Authorization"]}, None) == []
    )
    assert limits(check_s3("PUT", "/" + "k" * 1025, "", host, None)) == ["s3-key-length"]
    assert (
        check_s3("PUT", "/" + "k" * 1024, "", {"Host": "bkt.s3.eu-west-1.amazonaws.com", **AUTH}, None) == []
    )
    missing = check_s3("PUT", "/", "", {"Host": "bkt.localhost", **auth("eu-west-1")}, None)
    assert limits(missing) == ["s3-location-constraint"]  # PUT on the bucket's root: CreateBucket
    assert check_s3("PUT", "/bkt/k", "", {"Host": "127.0.0.1:5000", **auth("eu-west-1")}, None) == []


def test_s3_copy_source_key_is_checked() -> None:
    source = {"x-amz-copy-source": "/src/" + "k" * 1025, **AUTH}
    found = check_s3("PUT", quoted("dst"), "", source, None)
    assert limits(found) == ["s3-key-length"] and "CopyObject: the x-amz-copy-source key" in str(found[0])
    assert (
        check_s3(
            "PUT",
            quoted("dst"),
            "",
            {"x-amz-copy-source": "src/" + "%C3%A9" * 512 + "?versionId=1", **AUTH},
            None,
        )
        == []
    )


def test_s3_user_metadata_is_at_most_2_kb() -> None:
    at = {"x-amz-meta-ab": "v" * 2046, **AUTH}
    assert check_s3("PUT", quoted("k"), "", at, None) == []
    over = check_s3("PUT", quoted("k"), "", {"x-amz-meta-ab": "v" * 2046, "X-Amz-Meta-c": "", **AUTH}, None)
    assert limits(over) == ["s3-metadata-size"] and over[0].code == "MetadataTooLarge"
    assert limits(check_s3("POST", quoted("k"), "uploads", {"x-amz-meta-a": "v" * 2048, **AUTH}, None)) == [
        "s3-metadata-size"
    ]


def test_s3_create_bucket_location_constraint() -> None:
    def body(region: str) -> bytes:
        return (
            b'<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"<LocationConstraint>" + region.encode() + b"</LocationConstraint></CreateBucketConfiguration>"
        )

    assert check_s3("PUT", "/bkt", "", AUTH, b"") == []
    assert check_s3("PUT", "/bkt", "", auth("eu-west-1"), body("eu-west-1")) == []
    assert (
        check_s3("PUT", "/bkt", "", AUTH, body("eu-west-1")) == []
    )  # the us-east-1 endpoint creates anywhere
    missing = check_s3("PUT", "/bkt", "", auth("eu-west-1"), None)
    assert [v.code for v in missing] == ["IllegalLocationConstraintException"]
    named = check_s3("PUT", "/bkt", "", AUTH, body("us-east-1"))
    assert [v.code for v in named] == ["InvalidLocationConstraint"]
    other = check_s3("PUT", "/bkt", "", auth("eu-west-1"), body("us-west-2"))
    assert [v.code for v in other] == ["IllegalLocationConstraintException"]
    assert (
        check_s3("PUT", "/bkt", "versioning", auth("eu-west-1"), b"<VersioningConfiguration/>") == []
    )  # not CreateBucket


def delete_body(keys: list[str]) -> bytes:
    objects = "".join(f"<Object><Key>{k}</Key></Object>" for k in keys)
    return f'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{objects}<Quiet>true</Quiet></Delete>'.encode()


def test_s3_delete_objects_lists_at_most_1000_keys_of_1024_bytes() -> None:
    assert check_s3("POST", "/bkt", "delete", AUTH, delete_body([f"k{i}" for i in range(1000)])) == []
    over = check_s3("POST", "/bkt", "delete=", AUTH, delete_body([f"k{i}" for i in range(1001)]))
    assert limits(over) == ["s3-delete-objects-count"] and over[0].code == "MalformedXML"
    long = check_s3("POST", "/bkt", "delete", AUTH, delete_body(["k" * 1025]))
    assert limits(long) == ["s3-key-length"]


def test_s3_list_prefix() -> None:
    assert check_s3("GET", "/bkt", "list-type=2&prefix=" + "p" * 1024, AUTH, None) == []
    over = check_s3("GET", "/bkt", "list-type=2&prefix=" + "%C3%A9" * 513, AUTH, None)
    assert limits(over) == ["s3-key-length"] and str(over[0]).startswith(
        "ListObjectsV2: the prefix is 1,026 bytes"
    )


def test_aws_chunked_bodies_are_decoded() -> None:
    payload = delete_body([f"k{i}" for i in range(1001)])
    chunked = b"%x;chunk-signature=abc\r\n" % len(payload) + payload + b"\r\n0;chunk-signature=def\r\n\r\n"
    assert decode_aws_chunked(chunked) == payload
    found = check_s3("POST", "/bkt", "delete", {"Content-Encoding": "aws-chunked", **AUTH}, chunked)
    assert limits(found) == ["s3-delete-objects-count"]
