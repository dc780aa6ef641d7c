"""A strict AWS-rules layer for the tests' moto server: refuse what real AWS refuses.

moto enforces few of DynamoDB's and S3's documented limits, so a test can pass
with a request real AWS rejects. This module holds

- pure checks on the wire format: :func:`check_dynamodb` (DynamoDB's JSON
  protocol, AttributeValue maps such as ``{"S": ...}``) and :func:`check_s3`
  (method, path, query, headers, body of a REST request). Each returns a list
  of :class:`Violation` naming the limit and the offending value;
- :class:`StrictAWSMiddleware`, WSGI middleware around moto's app in the
  server process (``tests/support/moto_serial.py``), so every client (botocore,
  aiobotocore, subprocesses) is checked. By ``STRICT_AWS``: ``enforce``
  (default: answer as AWS would and record), ``record`` (record, pass on to
  moto), ``off``;
- client helpers for the tests (:func:`status`, :func:`violations`,
  :func:`set_mode`, :func:`set_context`) speaking to the control endpoints
  under ``/__strict_aws__/``.

Every limit below cites the AWS documentation page it comes from. Where the
documentation is silent or only approximate (a number's size, the operator
count), the choice made is stated next to the code, and when unsure a check
errs on the side of accepting: a check that refuses a request AWS accepts is a
bug.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import threading
import time
import urllib.parse
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any
from xml.sax.saxutils import escape

# --------------------------------------------------------------------------
# Limits. DynamoDB: 1 KB = 1,024 bytes ("Constraints in Amazon DynamoDB", note
# at the top: "All size measurements in DynamoDB use binary-based units").
# --------------------------------------------------------------------------

# "Constraints in Amazon DynamoDB" (ServiceQuotas/Constraints), Expression parameters > Lengths:
# "The maximum length of any expression string is 4 KB. For example, the size of the
# ConditionExpression a=b is 3 bytes." Measured on the raw string as sent (before #name substitution).
MAX_EXPRESSION_BYTES = 4096
# Same page, Operators and operands: "The maximum number of operators or functions allowed in an
# UpdateExpression is 300. For example, the UpdateExpression SET a = :val1 + :val2 + :val3 contains
# two '+' operators." DynamoDB applies it to every expression ("Invalid FilterExpression: The
# expression contains too many operators; operator count: 301", aws/aws-sdk-js#3721; the AWS SDK
# code example "Count expression operators in DynamoDB with an AWS SDK" applies it to filters).
# Counted: comparators (= <> < <= > >=) outside SET assignments, AND/OR/NOT, BETWEEN, IN, + and -,
# and every function call. The "=" of a SET action is not an operator (the page's example counts
# only the two "+"), and the AND inside "BETWEEN a AND b" is part of BETWEEN.
MAX_EXPRESSION_OPERATORS = 300
# Same page: "The maximum number of operands for the IN comparator is 100."
MAX_IN_OPERANDS = 100
# Same page: "The maximum length of any single expression attribute name or expression attribute
# value is 255 bytes. For example, #name is 5 bytes; :val is 4 bytes."
MAX_EXPRESSION_TOKEN_BYTES = 255
# Same page, Items > Item size: "The maximum item size in DynamoDB is 400 KB, which includes both
# attribute name binary length (UTF-8 length) and attribute value lengths".
MAX_ITEM_BYTES = 400 * 1024
# Same page, Attributes > Nested attribute depth: "DynamoDB supports nested attributes up to 32
# levels deep." A top-level attribute's value is level 1: a scalar inside 31 maps is accepted,
# inside 32 refused.
MAX_NESTING_DEPTH = 32
# Same page, Partition keys and sort keys: "The minimum length of a partition key value is 1 byte.
# The maximum length is 2048 bytes." / "The minimum length of a sort key value is 1 byte. The
# maximum length is 1024 bytes." The same holds for a secondary index's key attributes, and
# Attributes > Attribute values: "Empty String and Binary attribute values are allowed, if the
# attribute is not used as a key attribute for a table or index."
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
# Same page, Data types > Number: "A Number can have up to 38 digits of precision ... Positive
# range: 1E-130 to 9.9999999999999999999999999999999999999E+125" (negative likewise).
MAX_NUMBER_DIGITS = 38
MAX_NUMBER_EXPONENT = 125  # place value of the leading digit
MIN_NUMBER_EXPONENT = -130
# Same page, API-specific limits > BatchWriteItem: "A single BatchWriteItem operation can contain
# up to 25 PutItem or DeleteItem requests. The total size of all the items written cannot exceed
# 16 MB." "BatchWriteItem" (API reference): ValidationException when "You try to perform multiple
# operations on the same item in the same BatchWriteItem request", "There are more than 25
# requests in the batch", "The total request size exceeds 16 MB"; and "A single call to
# BatchWriteItem can transmit up to 16MB of data over the network". Measured as the larger of the
# items' sizes and the request's compact JSON (what goes over the network is at least that).
MAX_BATCH_WRITE_REQUESTS = 25
MAX_BATCH_WRITE_BYTES = 16 * 1024 * 1024
# Same page, BatchGetItem: "A single BatchGetItem operation can retrieve a maximum of 100 items."
# "BatchGetItem" (API reference): "If you request more than 100 items, BatchGetItem returns a
# ValidationException with the message 'Too many items requested for the BatchGetItem call.'"
MAX_BATCH_GET_KEYS = 100
# Same page, DynamoDB transactions: "A transaction cannot contain more than 100 unique items." /
# "A transaction cannot contain more than 4 MB of data." / "No two actions in a transaction can
# work against the same item in the same table." "TransactWriteItems" and "TransactGetItems"
# (API reference): TransactItems, "Maximum number of 100 items".
MAX_TRANSACT_ITEMS = 100
MAX_TRANSACT_BYTES = 4 * 1024 * 1024
# "TransactWriteItems" (API reference), ClientRequestToken: "Length Constraints: Minimum length of
# 1. Maximum length of 36."
MAX_CLIENT_REQUEST_TOKEN = 36
# "Query" / "Scan" (API reference), Limit: "Valid Range: Minimum value of 1". Scan, TotalSegments:
# "Valid Range: Minimum value of 1. Maximum value of 1000000"; Segment: "Minimum value of 0.
# Maximum value of 999999" and "The value for Segment must be greater than or equal to 0, and less
# than the value provided for TotalSegments"; "If you provide Segment, you must also provide
# TotalSegments."
MAX_TOTAL_SEGMENTS = 1_000_000
# "Query" (API reference), ConsistentRead: "Strongly consistent reads are not supported on global
# secondary indexes. If you query a global secondary index with ConsistentRead set to true, you
# will receive a ValidationException." ("Scan" says the same.)

# S3. "Naming Amazon S3 objects": "The object key name consists of a sequence of Unicode
# characters encoded in UTF-8, with a maximum length of 1,024 bytes".
MAX_S3_KEY_BYTES = 1024
# "Working with object metadata": "Within the PUT request header, the user-defined metadata is
# limited to 2 KB in size. The size of user-defined metadata is measured by taking the sum of the
# number of bytes in the UTF-8 encoding of each key and value." The key is the name after
# "x-amz-meta-" (AWS counts 2,048 bytes of name + value without the prefix).
MAX_S3_METADATA_BYTES = 2048
# "DeleteObjects" (API reference): "The request can contain a list of up to 1,000 keys".
MAX_S3_DELETE_KEYS = 1000
# "CreateBucket" (API reference): outside us-east-1 the request must name the Region in
# CreateBucketConfiguration/LocationConstraint (IllegalLocationConstraintException otherwise);
# us-east-1 is the default and may not be named (InvalidLocationConstraint).

DYNAMODB_TARGET_PREFIX = "DynamoDB_20120810."
CONTROL_PREFIX = "/__strict_aws__/"
MODES = ("enforce", "record", "off")
_TAG = "[strict-aws] "


# --------------------------------------------------------------------------
# Results and schemas
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    """One broken limit: ``limit`` is a short id, ``detail`` names the limit and the value."""

    limit: str
    detail: str
    #: The error AWS answers with: a DynamoDB exception name or an S3 error code.
    code: str = "ValidationException"
    #: TransactWriteItems: the action whose execution AWS cancels (a TransactionCanceledException
    #: with a ValidationError reason) rather than refusing the request up front.
    cancel_index: int | None = None
    #: Extra S3 error elements (e.g. Size, MaxSizeAllowed).
    extra: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return self.detail


@dataclass(frozen=True)
class IndexSchema:
    name: str
    hash_key: str
    range_key: str | None
    is_global: bool


@dataclass(frozen=True)
class TableSchema:
    name: str
    hash_key: str
    range_key: str | None = None
    #: AttributeDefinitions: name -> "S" | "N" | "B".
    attribute_types: Mapping[str, str] = field(default_factory=dict)
    indexes: tuple[IndexSchema, ...] = ()

    @property
    def key_attrs(self) -> tuple[str, ...]:
        return (self.hash_key,) if self.range_key is None else (self.hash_key, self.range_key)

    def index(self, name: str) -> IndexSchema | None:
        return next((i for i in self.indexes if i.name == name), None)


KeySchemaLookup = Callable[[str], "TableSchema | None"]
#: (table name, UpdateItem-shaped parameters) -> the item after the update, in wire format,
#: or None when it cannot be known (no table, an invalid expression: the backend answers those).
UpdateSimulator = Callable[[str, Mapping[str, Any]], "dict[str, Any] | None"]


def _n(value: int) -> str:
    return f"{value:,}"


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


# --------------------------------------------------------------------------
# Item size ("DynamoDB item sizes and formats", CapacityUnitCalculations)
# --------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def _number_digits(text: str) -> tuple[bool, int, int] | None:
    """(negative, place of the first, place of the last non-zero digit); None for zero.

    Raises ValueError for text DynamoDB does not read as a number.
    """
    if not isinstance(text, str) or not _NUMBER_RE.match(text):
        raise ValueError(text)
    try:
        sign, digits, exponent = Decimal(text).as_tuple()
    except InvalidOperation:  # pragma: no cover - the regex admits only finite decimals
        raise ValueError(text) from None
    assert isinstance(exponent, int)
    nonzero = [i for i, d in enumerate(digits) if d]
    if not nonzero:
        return None
    last = len(digits) - 1
    return bool(sign), exponent + last - nonzero[0], exponent + last - nonzero[-1]


def number_size(text: str) -> int:
    """A Number's size in bytes.

    "DynamoDB item sizes and formats": "Numbers are variable length, with up to 38 significant
    digits. Leading and trailing zeroes are trimmed. The size of a number is approximately ... (1
    byte per two significant digits) + (1 byte)." The exact rule is the one that "approximately"
    stands for: the significant digits in base-100 pairs aligned on the decimal point (an odd
    count rounds up, digits straddling the point take a pair on each side: 123 and 1234 cost 3,
    3.14159 costs 5, 123456 costs 4), plus one byte, plus one for a negative number; zero costs
    1. This matches every value measured against real DynamoDB at the 400 KB boundary in the
    public paritysuite/dynamodb-conformance capture (tests/unit/test_strict_aws.py lists them).
    """
    parts = _number_digits(text)
    if parts is None:
        return 1
    negative, high, low = parts
    return 1 + (high // 2 - low // 2 + 1) + (1 if negative else 0)


def _binary_len(value: Any) -> int:
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    text = str(value).strip()
    if not text:
        return 0
    pad = 2 if text.endswith("==") else 1 if text.endswith("=") else 0
    return len(text) * 3 // 4 - pad


def _type_and_value(av: Any) -> tuple[str, Any]:
    if not isinstance(av, Mapping) or len(av) != 1:
        raise ValueError(f"not an AttributeValue: {av!r}")
    ((kind, value),) = av.items()
    return kind, value


def value_size(av: Mapping[str, Any]) -> int:
    """An AttributeValue's size as DynamoDB computes it (without the attribute's name).

    "DynamoDB item sizes and formats": strings are their UTF-8 bytes; binary its raw bytes;
    numbers :func:`number_size`; null and Boolean 1 byte; "An attribute of type List or Map
    requires 3 bytes of overhead, regardless of its contents", "Each List or Map element also
    requires 1 byte of overhead", a map element counting its name's UTF-8 bytes. Sets are not
    documented: counted as the sum of their members (no overhead), so never over the real size.
    """
    kind, value = _type_and_value(av)
    if kind == "S":
        return _utf8(value)
    if kind == "N":
        return number_size(value)
    if kind == "B":
        return _binary_len(value)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(_utf8(v) for v in value)
    if kind == "NS":
        return sum(number_size(v) for v in value)
    if kind == "BS":
        return sum(_binary_len(v) for v in value)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in value)
    if kind == "M":
        return 3 + sum(1 + _utf8(k) + value_size(v) for k, v in value.items())
    raise ValueError(f"unknown AttributeValue type {kind!r}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """An item's size: each attribute's name (UTF-8) plus its value (:func:`value_size`)."""
    return sum(_utf8(name) + value_size(av) for name, av in item.items())


def _depth(av: Mapping[str, Any], level: int = 1) -> int:
    kind, value = _type_and_value(av)
    if kind == "L":
        return max([level, *(_depth(v, level + 1) for v in value)])
    if kind == "M":
        return max([level, *(_depth(v, level + 1) for v in value.values())])
    return level


def item_depth(item: Mapping[str, Mapping[str, Any]]) -> tuple[int, str]:
    """The deepest nesting level in the item (a top-level attribute's value is level 1), and where."""
    best, where = 0, ""
    for name, av in item.items():
        d = _depth(av)
        if d > best:
            best, where = d, name
    return best, where


# --------------------------------------------------------------------------
# Value rules (numbers, sets), keys
# --------------------------------------------------------------------------


def _value_violations(where: str, path: str, av: Any, out: list[Violation], budget: list[int]) -> None:
    """Numbers (format, precision, range) and sets (empty, duplicates), recursively."""
    if budget[0] <= 0:
        return
    try:
        kind, value = _type_and_value(av)
    except ValueError:
        return  # malformed: the backend answers it
    if kind in ("N", "NS"):
        for text in [value] if kind == "N" else list(value):
            try:
                parts = _number_digits(text)
            except ValueError:
                # "Constraints in Amazon DynamoDB", Data types > Number: numbers are decimal
                # strings (no NaN, Infinity or spaces).
                out.append(
                    Violation("number-format", f"{where}: {path} holds {text!r}, not a number DynamoDB reads")
                )
                budget[0] -= 1
                continue
            if parts is None:
                continue
            _neg, high, low = parts
            if high - low + 1 > MAX_NUMBER_DIGITS:
                out.append(
                    Violation(
                        "number-precision",
                        f"{where}: {path} holds a number of {high - low + 1} significant digits ({text[:60]}); "
                        f"DynamoDB's limit is {MAX_NUMBER_DIGITS} digits of precision",
                    )
                )
                budget[0] -= 1
            elif not MIN_NUMBER_EXPONENT <= high <= MAX_NUMBER_EXPONENT:
                out.append(
                    Violation(
                        "number-range",
                        f"{where}: {path} holds {text[:60]}, outside DynamoDB's number range "
                        f"(magnitude 1E-130 to 9.99...E+125)",
                    )
                )
                budget[0] -= 1
    if kind in ("SS", "NS", "BS"):
        members = list(value)
        if not members:
            # "Constraints in Amazon DynamoDB", Attributes > Attribute values: "An attribute value
            # cannot be an an empty Set (String Set, Number Set, or Binary Set)."
            out.append(
                Violation("empty-set", f"{where}: {path} is an empty {kind}; DynamoDB refuses empty sets")
            )
            budget[0] -= 1
        else:
            seen: set[Any] = set()
            for m in members:
                canon: Any = m
                if kind == "NS":
                    try:
                        canon = Decimal(m).normalize() if _NUMBER_RE.match(m) else m
                    except (InvalidOperation, TypeError):
                        canon = m
                if canon in seen:
                    # "Supported data types and naming rules in Amazon DynamoDB", Sets: "Each value
                    # within a set must be unique." (DynamoDB: "Input collection ... contains duplicates")
                    out.append(
                        Violation(
                            "set-duplicates",
                            f"{where}: {path} ({kind}) holds {str(m)[:60]!r} twice; the members of a DynamoDB set must be unique",
                        )
                    )
                    budget[0] -= 1
                    break
                seen.add(canon)
    elif kind == "L":
        for i, v in enumerate(value):
            _value_violations(where, f"{path}[{i}]", v, out, budget)
    elif kind == "M":
        for k, v in value.items():
            _value_violations(where, f"{path}.{k}", v, out, budget)


def _values_violations(where: str, values: Mapping[str, Any] | None, out: list[Violation]) -> None:
    if not isinstance(values, Mapping):
        return
    budget = [5]
    for name, av in values.items():
        _value_violations(where, name, av, out, budget)


def _key_value_violation(where: str, attr: str, role: str, av: Any, limit: int) -> Violation | None:
    try:
        kind, value = _type_and_value(av)
    except ValueError:
        return None
    if kind == "S":
        size, what = _utf8(value), "string"
    elif kind == "B":
        size, what = _binary_len(value), "binary"
    else:
        return None
    if size == 0:
        return Violation(
            "empty-key-value",
            f"{where}: {role} {attr!r} is an empty {what}; DynamoDB requires key values of at least 1 byte "
            f"(empty strings and binaries are allowed only outside table and index keys)",
        )
    if size > limit:
        return Violation(
            "key-length",
            f"{where}: {role} {attr!r} is {_n(size)} bytes; DynamoDB's limit is {_n(limit)} bytes",
        )
    return None


def _key_roles(schema: TableSchema, with_indexes: bool) -> Iterator[tuple[str, str, int]]:
    yield schema.hash_key, "partition key", MAX_PARTITION_KEY_BYTES
    if schema.range_key:
        yield schema.range_key, "sort key", MAX_SORT_KEY_BYTES
    if with_indexes:
        for idx in schema.indexes:
            kind = "global" if idx.is_global else "local"
            yield (
                idx.hash_key,
                f"partition key of {kind} secondary index {idx.name!r}",
                MAX_PARTITION_KEY_BYTES,
            )
            if idx.range_key:
                yield idx.range_key, f"sort key of {kind} secondary index {idx.name!r}", MAX_SORT_KEY_BYTES


def _key_violations(
    where: str, schema: TableSchema | None, attrs: Mapping[str, Any], *, item: bool
) -> list[Violation]:
    """Table key (and, for a whole item, index key) attributes: 1..2,048 / 1..1,024 bytes, types."""
    out: list[Violation] = []
    if schema is None or not isinstance(attrs, Mapping):
        return out
    seen: set[tuple[str, int]] = set()
    for attr, role, limit in _key_roles(schema, with_indexes=item):
        if attr not in attrs or (attr, limit) in seen:
            continue
        seen.add((attr, limit))
        v = _key_value_violation(where, attr, role, attrs[attr], limit)
        if v:
            out.append(v)
        want = schema.attribute_types.get(attr)
        try:
            kind, _ = _type_and_value(attrs[attr])
        except ValueError:
            continue
        if want and kind != want and "index" in role:
            # "PutItem" (API reference), Item: "If you specify any attributes that are part of an
            # index key, then the data types for those attributes must match those of the schema
            # in the table's attribute definition."
            out.append(
                Violation(
                    "index-key-type",
                    f"{where}: {role} {attr!r} is of type {kind}; the table defines it as {want}",
                )
            )
    return out


def _canonical_key(schema: TableSchema | None, key: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The item a key names, comparable; None when unknown (no schema, a key attribute missing or
    malformed: the backend refuses such a key itself, and two of them are not "the same item")."""
    if schema is None:
        return None
    out: list[Any] = []
    for n in schema.key_attrs:
        try:
            kind, value = _type_and_value(key.get(n))
        except ValueError:
            return None
        if kind == "N":
            with contextlib.suppress(InvalidOperation, TypeError):
                value = Decimal(value).normalize()
        out.append((n, kind, value if not isinstance(value, (list, dict)) else repr(value)))
    return tuple(out)


def _key_of(schema: TableSchema | None, item: Mapping[str, Any]) -> dict[str, Any]:
    if schema is None:
        return dict(item)
    return {k: item[k] for k in schema.key_attrs if k in item}


def _show_key(key: Mapping[str, Any]) -> str:
    shown = json.dumps(key, sort_keys=True, default=str)
    return shown if len(shown) <= 200 else shown[:200] + "..."


# --------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"\s*(?:(?P<name>#[A-Za-z0-9_]+)|(?P<value>:[A-Za-z0-9_]+)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<num>\d+)|(?P<op><>|<=|>=|[=<>()\[\],.+\-])|(?P<other>\S))"
)
_LOGICAL = {"AND", "OR", "NOT"}
_CLAUSES = {"SET", "REMOVE", "ADD", "DELETE"}


def _tokens(expression: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN_RE.finditer(expression):
        kind = m.lastgroup
        if kind is None:
            continue
        out.append((kind, m.group(kind)))
    return out


def count_operators(expression: str, update: bool = False) -> tuple[int, int]:
    """(operators and functions, the largest IN operand list) of an expression.

    See MAX_EXPRESSION_OPERATORS for what counts.
    """
    toks = _tokens(expression)
    count = 0
    between_open = 0
    widest_in = 0
    for i, (kind, text) in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ("", "")
        if kind == "op":
            if text in ("<>", "<=", ">=", "<", ">"):
                count += 1
            elif text == "=":
                count += 0 if update else 1
            elif text in ("+", "-"):
                count += 1
        elif kind == "ident":
            word = text.upper()
            if update and word in _CLAUSES and nxt[1] != "(":
                continue
            if word == "BETWEEN":
                count += 1
                between_open += 1
            elif word == "AND" and between_open:
                between_open -= 1
            elif word in _LOGICAL:
                count += 1
            elif word == "IN":
                count += 1
                if nxt[1] == "(":
                    depth, operands = 0, 1
                    for _k, t in toks[i + 1 :]:
                        if t == "(":
                            depth += 1
                        elif t == ")":
                            depth -= 1
                            if depth == 0:
                                break
                        elif t == "," and depth == 1:
                            operands += 1
                    widest_in = max(widest_in, operands)
            elif nxt[1] == "(":
                count += 1  # a function call
    return count, widest_in


_EXPRESSION_FIELDS: dict[str, tuple[str, ...]] = {
    "GetItem": ("ProjectionExpression",),
    "PutItem": ("ConditionExpression",),
    "DeleteItem": ("ConditionExpression",),
    "UpdateItem": ("UpdateExpression", "ConditionExpression"),
    "Query": ("KeyConditionExpression", "FilterExpression", "ProjectionExpression"),
    "Scan": ("FilterExpression", "ProjectionExpression"),
    "Put": ("ConditionExpression",),
    "Delete": ("ConditionExpression",),
    "Update": ("UpdateExpression", "ConditionExpression"),
    "ConditionCheck": ("ConditionExpression",),
    "Get": ("ProjectionExpression",),
    "BatchGetItem": ("ProjectionExpression",),
}


def _expression_violations(where: str, params: Mapping[str, Any], fields: Iterable[str]) -> list[Violation]:
    out: list[Violation] = []
    exprs = {f: params[f] for f in fields if isinstance(params.get(f), str)}
    names_used: dict[str, str] = {}
    values_used: dict[str, str] = {}
    for f, e in exprs.items():
        size = _utf8(e)
        if size > MAX_EXPRESSION_BYTES:
            out.append(
                Violation(
                    "expression-size",
                    f"{where}: {f} is {_n(size)} bytes; DynamoDB's limit is 4 KB ({_n(MAX_EXPRESSION_BYTES)} bytes)",
                )
            )
        ops, widest_in = count_operators(e, update=(f == "UpdateExpression"))
        if ops > MAX_EXPRESSION_OPERATORS:
            out.append(
                Violation(
                    "expression-operators",
                    f"{where}: {f} has {_n(ops)} operators and functions; DynamoDB's limit is {MAX_EXPRESSION_OPERATORS} per expression",
                )
            )
        if widest_in > MAX_IN_OPERANDS:
            out.append(
                Violation(
                    "in-operands",
                    f"{where}: {f} has an IN with {_n(widest_in)} operands; DynamoDB's limit is {MAX_IN_OPERANDS}",
                )
            )
        for kind, tok in _tokens(e):
            if kind == "name":
                names_used.setdefault(tok, f)
            elif kind == "value":
                values_used.setdefault(tok, f)
    for label, param, used in (
        ("ExpressionAttributeNames", "ExpressionAttributeNames", names_used),
        ("ExpressionAttributeValues", "ExpressionAttributeValues", values_used),
    ):
        given = params.get(param)
        if given is not None and not isinstance(given, Mapping):
            continue
        supplied = set(given or {})
        if given is not None:
            # "Constraints in Amazon DynamoDB" (Expression parameters) and the API reference of each
            # operation: substitution tokens exist only for expressions; DynamoDB refuses an empty
            # map ("... must not be empty"), a map given with no expression ("... can only be
            # specified when using expressions"), and an entry no expression uses ("Value provided
            # in ... unused in expressions").
            if not exprs:
                out.append(
                    Violation(
                        "expression-attributes-without-expression",
                        f"{where}: {label} is given but the request has no expression; DynamoDB refuses it",
                    )
                )
            elif not given:
                out.append(
                    Violation(
                        "expression-attributes-empty",
                        f"{where}: {label} is an empty map; DynamoDB refuses it (omit it instead)",
                    )
                )
            unused = sorted(supplied - set(used)) if exprs else []
            if unused:
                out.append(
                    Violation(
                        "expression-attributes-unused",
                        f"{where}: {label} has entries no expression uses: {', '.join(unused[:10])}"
                        f"{' ...' if len(unused) > 10 else ''}; DynamoDB refuses unused entries",
                    )
                )
            for tok in sorted(supplied):
                if _utf8(tok) > MAX_EXPRESSION_TOKEN_BYTES:
                    out.append(
                        Violation(
                            "expression-token-length",
                            f"{where}: {label} key {tok[:40]!r}... is {_n(_utf8(tok))} bytes; DynamoDB's limit is {MAX_EXPRESSION_TOKEN_BYTES} bytes",
                        )
                    )
        undefined = sorted(set(used) - supplied)
        if undefined:
            out.append(
                Violation(
                    "expression-attributes-undefined",
                    f"{where}: {used[undefined[0]]} uses {', '.join(undefined[:10])}, which {label} does not define; DynamoDB refuses it",
                )
            )
    _values_violations(f"{where} ExpressionAttributeValues", params.get("ExpressionAttributeValues"), out)
    return out


# --------------------------------------------------------------------------
# DynamoDB operations
# --------------------------------------------------------------------------


def _lookup(lookup: KeySchemaLookup | None, table: Any) -> TableSchema | None:
    if lookup is None or not isinstance(table, str):
        return None
    try:
        return lookup(table)
    except Exception:
        return None


def _written_item_violations(
    where: str, schema: TableSchema | None, item: Mapping[str, Any], *, after_update: bool = False
) -> list[Violation]:
    out: list[Violation] = []
    try:
        size = item_size(item)
        depth, deepest = item_depth(item)
    except (ValueError, TypeError, AttributeError):
        return out  # malformed: the backend answers it
    if size > MAX_ITEM_BYTES:
        what = "the item after the update" if after_update else "the item"
        out.append(
            Violation(
                "item-size",
                f"{where}: {what} is {_n(size)} bytes by DynamoDB's item size computation; DynamoDB's limit is 400 KB ({_n(MAX_ITEM_BYTES)} bytes)",
            )
        )
    if depth > MAX_NESTING_DEPTH:
        out.append(
            Violation(
                "nesting-depth",
                f"{where}: attribute {deepest!r} is nested {depth} levels deep; DynamoDB's limit is {MAX_NESTING_DEPTH} levels",
            )
        )
    out.extend(_key_violations(where, schema, item, item=True))
    return out


def _check_put(
    where: str, p: Mapping[str, Any], schema: TableSchema | None, fields: tuple[str, ...]
) -> list[Violation]:
    out = _expression_violations(where, p, fields)
    item = p.get("Item")
    if isinstance(item, Mapping):
        out.extend(_written_item_violations(where, schema, item))
        _values_violations(f"{where} Item", item, out)
    return out


def _check_keyed(
    where: str, p: Mapping[str, Any], schema: TableSchema | None, fields: tuple[str, ...]
) -> list[Violation]:
    out = _expression_violations(where, p, fields)
    key = p.get("Key")
    if isinstance(key, Mapping):
        out.extend(_key_violations(where, schema, key, item=False))
        _values_violations(f"{where} Key", key, out)
    return out


def _check_update(
    where: str, p: Mapping[str, Any], schema: TableSchema | None, simulate: UpdateSimulator | None
) -> tuple[list[Violation], list[Violation]]:
    """(refused up front, refused once the new item is known)."""
    out = _check_keyed(where, p, schema, _EXPRESSION_FIELDS["Update"])
    later: list[Violation] = []
    if simulate is not None and isinstance(p.get("TableName"), str) and not out:
        try:
            after = simulate(p["TableName"], p)
        except Exception:
            after = None
        if after is not None:
            later = _written_item_violations(where, schema, after, after_update=True)
    return out, later


def _check_read(op: str, p: Mapping[str, Any], schema: TableSchema | None) -> list[Violation]:
    out = _expression_violations(op, p, _EXPRESSION_FIELDS[op])
    index_name = p.get("IndexName")
    index = schema.index(index_name) if schema and isinstance(index_name, str) else None
    if p.get("ConsistentRead") is True and index is not None and index.is_global:
        out.append(
            Violation(
                "gsi-consistent-read",
                f"{op} on global secondary index {index.name!r} with ConsistentRead: true; "
                "DynamoDB does not support strongly consistent reads on a global secondary index",
            )
        )
    limit = p.get("Limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit < 1:
        out.append(Violation("limit-minimum", f"{op} Limit is {limit}; DynamoDB's minimum is 1"))
    esk = p.get("ExclusiveStartKey")
    if isinstance(esk, Mapping) and schema is not None and (index_name is None or index is not None):
        want = list(schema.key_attrs)
        if index is not None:
            want += [a for a in (index.hash_key, index.range_key) if a and a not in want]
        missing = [a for a in want if a not in esk]
        extra = sorted(a for a in esk if a not in want)
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"lacks {', '.join(missing)}")
            if extra:
                parts.append(f"has non-key attributes {', '.join(extra[:10])}")
            out.append(
                Violation(
                    "exclusive-start-key",
                    f"{op} ExclusiveStartKey {' and '.join(parts)}; it must hold exactly the "
                    f"{'table and index' if index else 'table'} key attributes ({', '.join(want)}) "
                    "(DynamoDB: The provided starting key is invalid)",
                )
            )
        for attr, role, lim in _key_roles(schema, with_indexes=index is not None):
            if attr in esk and (index is None or attr in want):
                v = _key_value_violation(f"{op} ExclusiveStartKey", attr, role, esk[attr], lim)
                if v:
                    out.append(v)
    if op == "Scan":
        seg, total = p.get("Segment"), p.get("TotalSegments")
        if (seg is None) != (total is None):
            out.append(
                Violation(
                    "scan-segments",
                    f"Scan has {'Segment' if seg is not None else 'TotalSegments'} without the other; DynamoDB needs both or neither",
                )
            )
        elif isinstance(seg, int) and isinstance(total, int):
            if not 1 <= total <= MAX_TOTAL_SEGMENTS:
                out.append(
                    Violation(
                        "scan-segments",
                        f"Scan TotalSegments is {_n(total)}; DynamoDB's range is 1 to {_n(MAX_TOTAL_SEGMENTS)}",
                    )
                )
            elif not 0 <= seg < total:
                out.append(
                    Violation(
                        "scan-segments",
                        f"Scan Segment is {seg} with TotalSegments {total}; Segment must be at least 0 and below TotalSegments",
                    )
                )
    return out


def _check_batch_write(p: Mapping[str, Any], lookup: KeySchemaLookup | None) -> list[Violation]:
    out: list[Violation] = []
    request_items = p.get("RequestItems")
    if not isinstance(request_items, Mapping):
        return out
    total = 0
    size = 0
    seen: dict[tuple[Any, ...], str] = {}
    for table, requests in request_items.items():
        if not isinstance(requests, list):
            continue
        schema = _lookup(lookup, table)
        for i, req in enumerate(requests):
            total += 1
            if not isinstance(req, Mapping):
                continue
            if isinstance(req.get("PutRequest"), Mapping):
                where = f"BatchWriteItem {table} PutRequest[{i}]"
                item = req["PutRequest"].get("Item")
                if not isinstance(item, Mapping):
                    continue
                out.extend(_written_item_violations(where, schema, item))
                _values_violations(f"{where} Item", item, out)
                key = _key_of(schema, item)
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    size += item_size(item)
            elif isinstance(req.get("DeleteRequest"), Mapping):
                where = f"BatchWriteItem {table} DeleteRequest[{i}]"
                key = req["DeleteRequest"].get("Key")
                if not isinstance(key, Mapping):
                    continue
                out.extend(_key_violations(where, schema, key, item=False))
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    size += item_size(key)
            else:
                continue
            canon = _canonical_key(schema, key)
            if canon is None:
                continue
            ident = (table, *canon)
            if ident in seen:
                out.append(
                    Violation(
                        "batch-write-duplicate-key",
                        f"{where} and {seen[ident]} are on the same item ({table} {_show_key(key)}); "
                        "DynamoDB refuses two requests on one item in a BatchWriteItem",
                    )
                )
            else:
                seen[ident] = where.removeprefix("BatchWriteItem ")
    if total > MAX_BATCH_WRITE_REQUESTS:
        out.append(
            Violation(
                "batch-write-count",
                f"BatchWriteItem has {_n(total)} requests; DynamoDB's limit is {MAX_BATCH_WRITE_REQUESTS}",
            )
        )
    if size <= MAX_BATCH_WRITE_BYTES:
        with contextlib.suppress(TypeError, ValueError):
            size = max(size, len(json.dumps(p, separators=(",", ":"))))
    if size > MAX_BATCH_WRITE_BYTES:
        out.append(
            Violation(
                "batch-write-size",
                f"BatchWriteItem carries {_n(size)} bytes; DynamoDB's limit is 16 MB ({_n(MAX_BATCH_WRITE_BYTES)} bytes)",
            )
        )
    return out


def _check_batch_get(p: Mapping[str, Any], lookup: KeySchemaLookup | None) -> list[Violation]:
    out: list[Violation] = []
    request_items = p.get("RequestItems")
    if not isinstance(request_items, Mapping):
        return out
    total = 0
    for table, spec in request_items.items():
        if not isinstance(spec, Mapping):
            continue
        schema = _lookup(lookup, table)
        where = f"BatchGetItem {table}"
        out.extend(_expression_violations(where, spec, _EXPRESSION_FIELDS["BatchGetItem"]))
        keys = spec.get("Keys")
        if not isinstance(keys, list):
            continue
        seen: set[tuple[Any, ...]] = set()
        dup_reported = False
        for i, key in enumerate(keys):
            total += 1
            if not isinstance(key, Mapping):
                continue
            out.extend(_key_violations(f"{where} Keys[{i}]", schema, key, item=False))
            ident = _canonical_key(schema, key)
            if ident is None:
                continue
            if ident in seen and not dup_reported:
                dup_reported = True
                out.append(
                    Violation(
                        "batch-get-duplicate-key",
                        f"{where} asks for {_show_key(key)} twice; DynamoDB refuses it (Provided list of item keys contains duplicates)",
                    )
                )
            seen.add(ident)
    if total > MAX_BATCH_GET_KEYS:
        out.append(
            Violation(
                "batch-get-count",
                f"BatchGetItem asks for {_n(total)} keys; DynamoDB's limit is {MAX_BATCH_GET_KEYS} (Too many items requested for the BatchGetItem call)",
            )
        )
    return out


def _check_transact_write(
    p: Mapping[str, Any], lookup: KeySchemaLookup | None, simulate: UpdateSimulator | None
) -> list[Violation]:
    out: list[Violation] = []
    items = p.get("TransactItems")
    if not isinstance(items, list):
        return out
    if len(items) > MAX_TRANSACT_ITEMS:
        out.append(
            Violation(
                "transact-write-count",
                f"TransactWriteItems has {_n(len(items))} actions; DynamoDB's limit is {MAX_TRANSACT_ITEMS}",
            )
        )
    token = p.get("ClientRequestToken")
    if isinstance(token, str) and not 1 <= len(token) <= MAX_CLIENT_REQUEST_TOKEN:
        out.append(
            Violation(
                "client-request-token",
                f"TransactWriteItems ClientRequestToken is {len(token)} characters; DynamoDB's limit is 1 to {MAX_CLIENT_REQUEST_TOKEN}",
            )
        )
    size = 0
    seen: dict[tuple[Any, ...], str] = {}
    later: list[Violation] = []
    for i, action in enumerate(items):
        if not isinstance(action, Mapping) or len(action) != 1:
            continue
        ((kind, body),) = action.items()
        if not isinstance(body, Mapping) or kind not in ("Put", "Update", "Delete", "ConditionCheck"):
            continue
        where = f"TransactWriteItems[{i}].{kind}"
        table = body.get("TableName")
        schema = _lookup(lookup, table)
        if kind == "Put":
            out.extend(_check_put(where, body, schema, _EXPRESSION_FIELDS["Put"]))
            item = body.get("Item")
            key: Mapping[str, Any] = _key_of(schema, item) if isinstance(item, Mapping) else {}
            data: Any = item
        elif kind == "Update":
            now, after = _check_update(where, body, schema, simulate)
            out.extend(now)
            later.extend(Violation(v.limit, v.detail, v.code, i) for v in after)
            key = body["Key"] if isinstance(body.get("Key"), Mapping) else {}
            data = {**key, **(body.get("ExpressionAttributeValues") or {})}
        else:
            out.extend(_check_keyed(where, body, schema, _EXPRESSION_FIELDS[kind]))
            key = body["Key"] if isinstance(body.get("Key"), Mapping) else {}
            data = {**key, **(body.get("ExpressionAttributeValues") or {})}
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            size += item_size(data) if isinstance(data, Mapping) else 0
        canon = _canonical_key(schema, key) if key else None
        if canon is not None:
            ident = (table, *canon)
            if ident in seen:
                out.append(
                    Violation(
                        "transact-same-item",
                        f"{where} and {seen[ident]} act on the same item ({table} {_show_key(key)}); "
                        "DynamoDB refuses two actions on one item in a transaction",
                    )
                )
            else:
                seen[ident] = where
    if size > MAX_TRANSACT_BYTES:
        out.append(
            Violation(
                "transact-write-size",
                f"TransactWriteItems carries {_n(size)} bytes of items, keys and values; DynamoDB's limit is 4 MB ({_n(MAX_TRANSACT_BYTES)} bytes)",
            )
        )
    # What can only fail once the transaction runs is reported only if nothing fails before.
    return out or later


def _check_transact_get(p: Mapping[str, Any], lookup: KeySchemaLookup | None) -> list[Violation]:
    out: list[Violation] = []
    items = p.get("TransactItems")
    if not isinstance(items, list):
        return out
    if len(items) > MAX_TRANSACT_ITEMS:
        out.append(
            Violation(
                "transact-get-count",
                f"TransactGetItems has {_n(len(items))} actions; DynamoDB's limit is {MAX_TRANSACT_ITEMS}",
            )
        )
    for i, action in enumerate(items):
        body = action.get("Get") if isinstance(action, Mapping) else None
        if isinstance(body, Mapping):
            out.extend(
                _check_keyed(
                    f"TransactGetItems[{i}].Get",
                    body,
                    _lookup(lookup, body.get("TableName")),
                    _EXPRESSION_FIELDS["Get"],
                )
            )
    return out


def check_dynamodb(
    operation: str,
    body: Mapping[str, Any],
    key_schema_lookup: KeySchemaLookup | None = None,
    update_simulator: UpdateSimulator | None = None,
) -> list[Violation]:
    """The documented DynamoDB limits ``body`` (one request, JSON wire format) breaks.

    ``key_schema_lookup(table_name)`` gives a table's key and index schemas (None: unknown, the
    key checks are skipped); ``update_simulator`` gives the item an UpdateItem (or a transacted
    Update) would leave, for the checks on the new item (size, depth, index keys).
    """
    if not isinstance(body, Mapping):
        return []
    schema = _lookup(key_schema_lookup, body.get("TableName"))
    if operation == "PutItem":
        return _check_put("PutItem", body, schema, _EXPRESSION_FIELDS["PutItem"])
    if operation in ("GetItem", "DeleteItem"):
        return _check_keyed(operation, body, schema, _EXPRESSION_FIELDS[operation])
    if operation == "UpdateItem":
        now, later = _check_update("UpdateItem", body, schema, update_simulator)
        return now or later
    if operation in ("Query", "Scan"):
        return _check_read(operation, body, schema)
    if operation == "BatchWriteItem":
        return _check_batch_write(body, key_schema_lookup)
    if operation == "BatchGetItem":
        return _check_batch_get(body, key_schema_lookup)
    if operation == "TransactWriteItems":
        return _check_transact_write(body, key_schema_lookup, update_simulator)
    if operation == "TransactGetItems":
        return _check_transact_get(body, key_schema_lookup)
    return []


# --------------------------------------------------------------------------
# S3
# --------------------------------------------------------------------------

_CREDENTIAL_RE = re.compile(r"Credential=([^/,\s]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request")


def credential_scope(
    headers: Mapping[str, str], query: Mapping[str, list[str]] | None = None
) -> tuple[str, str, str] | None:
    """(access key, region, service) from a SigV4 Authorization header or presigned query."""
    auth = _header(headers, "authorization") or ""
    m = _CREDENTIAL_RE.search(auth)
    if m:
        return m.group(1), m.group(3), m.group(4)
    cred = (query or {}).get("X-Amz-Credential")
    if cred:
        parts = cred[0].split("/")
        if len(parts) >= 5:
            return parts[0], parts[2], parts[3]
    return None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lname = name.lower()
    for k, v in headers.items():
        if k.lower() == lname:
            return v
    return None


def _parse_query(query: str | Mapping[str, Any] | None) -> dict[str, list[str]]:
    if query is None:
        return {}
    if isinstance(query, str):
        return urllib.parse.parse_qs(query, keep_blank_values=True)
    return {k: (list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in query.items()}


def s3_operation(method: str, key: bytes, query: Mapping[str, list[str]], headers: Mapping[str, str]) -> str:
    """A name for the S3 operation (path-style request), for messages."""
    method = method.upper()
    if not key:
        if method == "PUT" and not query:
            return "CreateBucket"
        if method == "POST" and "delete" in query:
            return "DeleteObjects"
        if method == "GET" and query.get("list-type") == ["2"]:
            return "ListObjectsV2"
        if method == "GET" and "versions" in query:
            return "ListObjectVersions"
        if method == "GET" and "uploads" in query:
            return "ListMultipartUploads"
        if method == "GET" and not (
            set(query) - {"prefix", "delimiter", "marker", "max-keys", "encoding-type"}
        ):
            return "ListObjects"
        return f"{method} bucket"
    copy_source = _header(headers, "x-amz-copy-source")
    if method == "PUT":
        if "partNumber" in query:
            return "UploadPartCopy" if copy_source else "UploadPart"
        if "tagging" in query:
            return "PutObjectTagging"
        return "CopyObject" if copy_source else "PutObject"
    if method == "POST":
        if "uploads" in query:
            return "CreateMultipartUpload"
        if "uploadId" in query:
            return "CompleteMultipartUpload"
        return "POST object"
    if method == "DELETE":
        return "AbortMultipartUpload" if "uploadId" in query else "DeleteObject"
    if method == "GET":
        return "ListParts" if "uploadId" in query else "GetObject"
    if method == "HEAD":
        return "HeadObject"
    return f"{method} object"


_VIRTUAL_HOST_RE = re.compile(
    r"^(?P<bucket>.+?)\.(?:localhost|s3(?:[.-][a-z0-9-]+)*\.amazonaws\.com(?:\.cn)?)$"
)


def _host_bucket(host: str | None) -> str | None:
    """The bucket of a virtual-hosted-style Host (``bucket.localhost``, ``bucket.s3.amazonaws.com``)."""
    if not host:
        return None
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    m = _VIRTUAL_HOST_RE.match(name.lower())
    return m.group("bucket") if m else None


def _split_path(path: str, host: str | None = None) -> tuple[str, bytes]:
    """(bucket, key bytes) of a request, percent-decoding the key (path-style, or virtual-hosted)."""
    raw = path.split("?", 1)[0]
    trimmed = raw[1:] if raw.startswith("/") else raw
    virtual = _host_bucket(host)
    if virtual is not None:
        return virtual, urllib.parse.unquote_to_bytes(trimmed)
    bucket, _, key = trimmed.partition("/")
    return urllib.parse.unquote(bucket), urllib.parse.unquote_to_bytes(key)


def _key_too_long(op: str, what: str, size: int) -> Violation:
    return Violation(
        "s3-key-length",
        f"{op}: {what} is {_n(size)} bytes (UTF-8); S3's limit is {_n(MAX_S3_KEY_BYTES)} bytes",
        code="KeyTooLongError",
        extra=(("Size", str(size)), ("MaxSizeAllowed", str(MAX_S3_KEY_BYTES))),
    )


def _strip_ns(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def decode_aws_chunked(body: bytes) -> bytes:
    """The payload of an ``aws-chunked`` body (SigV4 streaming), or the body unchanged."""
    out = bytearray()
    pos = 0
    try:
        while pos < len(body):
            eol = body.index(b"\r\n", pos)
            size = int(body[pos:eol].split(b";", 1)[0], 16)
            if size == 0:
                break
            out += body[eol + 2 : eol + 2 + size]
            pos = eol + 2 + size + 2
    except ValueError:
        return body
    return bytes(out)


def check_s3(
    method: str,
    path: str,
    query: str | Mapping[str, Any] | None,
    headers: Mapping[str, str],
    body: bytes | None,
) -> list[Violation]:
    """The documented S3 limits a request breaks (``path`` percent-encoded as sent; path-style, or
    virtual-hosted when the Host header names the bucket)."""
    out: list[Violation] = []
    q = _parse_query(query)
    bucket, key = _split_path(path, _header(headers, "host"))
    op = s3_operation(method, key, q, headers)
    if key and len(key) > MAX_S3_KEY_BYTES:
        out.append(_key_too_long(op, "the object key", len(key)))
    copy_source = _header(headers, "x-amz-copy-source")
    if copy_source:
        src = urllib.parse.unquote_to_bytes(copy_source.split("?", 1)[0].lstrip("/"))
        src_key = src.partition(b"/")[2]
        if len(src_key) > MAX_S3_KEY_BYTES:
            out.append(_key_too_long(op, "the x-amz-copy-source key", len(src_key)))
    meta = 0
    for name, value in headers.items():
        lname = name.lower()
        if lname.startswith("x-amz-meta-"):
            meta += _utf8(lname[len("x-amz-meta-") :]) + len(
                value.encode("latin-1", "replace") if isinstance(value, str) else value
            )
    if meta > MAX_S3_METADATA_BYTES:
        out.append(
            Violation(
                "s3-metadata-size",
                f"{op}: user metadata is {_n(meta)} bytes (x-amz-meta-* names without the prefix, plus values, UTF-8); "
                f"S3's limit is 2 KB ({_n(MAX_S3_METADATA_BYTES)} bytes)",
                code="MetadataTooLarge",
                extra=(("Size", str(meta)), ("MaxSizeAllowed", str(MAX_S3_METADATA_BYTES))),
            )
        )
    if not key and method.upper() == "GET" and q.get("prefix"):
        prefix = q["prefix"][0].encode("utf-8")
        if len(prefix) > MAX_S3_KEY_BYTES:
            # No key can be longer than 1,024 bytes, so neither can a prefix that matches one.
            out.append(_key_too_long(op, "the prefix", len(prefix)))
    payload = (
        decode_aws_chunked(body)
        if body and "aws-chunked" in (_header(headers, "content-encoding") or "")
        else body
    )
    if op == "DeleteObjects" and payload:
        try:
            root = ET.fromstring(payload)
        except ET.ParseError:
            root = None
        if root is not None:
            keys = [
                el.text or ""
                for obj in root
                if _strip_ns(obj.tag) == "Object"
                for el in obj
                if _strip_ns(el.tag) == "Key"
            ]
            if len(keys) > MAX_S3_DELETE_KEYS:
                out.append(
                    Violation(
                        "s3-delete-objects-count",
                        f"DeleteObjects lists {_n(len(keys))} keys; S3's limit is {_n(MAX_S3_DELETE_KEYS)} per request",
                        code="MalformedXML",
                    )
                )
            longest = max((_utf8(k) for k in keys), default=0)
            if longest > MAX_S3_KEY_BYTES:
                out.append(_key_too_long(op, "a key in the Delete list", longest))
    if op == "CreateBucket":
        scope = credential_scope(headers, q)
        region = scope[1] if scope else "us-east-1"
        constraint = None
        if payload and payload.strip():
            try:
                root = ET.fromstring(payload)
                constraint = next(
                    (el.text or "" for el in root.iter() if _strip_ns(el.tag) == "LocationConstraint"), None
                )
            except ET.ParseError:
                constraint = None
        if region != "us-east-1" and not constraint:
            out.append(
                Violation(
                    "s3-location-constraint",
                    f"CreateBucket {bucket!r} sent to {region} without a LocationConstraint; outside us-east-1 S3 requires "
                    "CreateBucketConfiguration/LocationConstraint naming the Region (The unspecified location constraint "
                    "is incompatible for the region specific endpoint this request was sent to)",
                    code="IllegalLocationConstraintException",
                )
            )
        elif region == "us-east-1" and constraint == "us-east-1":
            out.append(
                Violation(
                    "s3-location-constraint",
                    f"CreateBucket {bucket!r} names LocationConstraint us-east-1; us-east-1 is the default and may not be named "
                    "(The specified location-constraint is not valid)",
                    code="InvalidLocationConstraint",
                )
            )
        elif (
            region != "us-east-1"
            and constraint
            and constraint != region
            and not (constraint == "EU" and region == "eu-west-1")
        ):
            out.append(
                Violation(
                    "s3-location-constraint",
                    f"CreateBucket {bucket!r} names LocationConstraint {constraint} but was sent to {region} "
                    f"(The {constraint} location constraint is incompatible for the region specific endpoint this request was sent to)",
                    code="IllegalLocationConstraintException",
                )
            )
    return out


# --------------------------------------------------------------------------
# The server side: WSGI middleware around moto's app
# --------------------------------------------------------------------------

_DEFAULT_ACCOUNT = "123456789012"


def _moto_table(account: str, region: str, name: str) -> Any:
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends[account][region]
    table = backend.tables.get(name)
    if table is None:
        for t in list(backend.tables.values()):
            if getattr(t, "table_arn", None) == name:
                return t
    return table


def _moto_schema(table: Any) -> TableSchema:
    types = {a["AttributeName"]: a["AttributeType"] for a in (table.attr or [])}
    indexes = []
    for is_global, group in ((True, table.global_indexes or []), (False, table.indexes or [])):
        for idx in group:
            h = next((k["AttributeName"] for k in idx.schema if k["KeyType"] == "HASH"), None)
            r = next((k["AttributeName"] for k in idx.schema if k["KeyType"] == "RANGE"), None)
            if h:
                indexes.append(IndexSchema(idx.name, h, r, is_global))
    return TableSchema(table.name, table.hash_key_attr, table.range_key_attr, types, tuple(indexes))


def _to_wire(dt: Any) -> dict[str, Any]:
    """A moto DynamoType (or a wire value) as a wire AttributeValue."""
    if isinstance(dt, Mapping):
        return dict(dt)
    kind, value = dt.type, dt.value
    if kind == "L":
        return {"L": [_to_wire(v) for v in value]}
    if kind == "M":
        return {"M": {k: _to_wire(v) for k, v in value.items()}}
    if kind == "B" and isinstance(value, (bytes, bytearray)):
        return {"B": base64.b64encode(value).decode()}
    if kind == "BS":
        return {
            "BS": [base64.b64encode(v).decode() if isinstance(v, (bytes, bytearray)) else v for v in value]
        }
    return {kind: value}


def _moto_simulate_update(
    account: str, region: str, table_name: str, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The item moto would store for this update, computed on a copy (the table is not touched).

    The same parser, validator and executor as moto's ``update_item``, on a deep copy of the
    stored item (or a new item of the key), so the result is what the backend then stores, but
    measured without moto's own approximate 405,000-byte cap.
    """
    import copy

    from moto.dynamodb.models.dynamo_type import DynamoType, Item
    from moto.dynamodb.parsing.executors import UpdateExpressionExecutor
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
    from moto.dynamodb.parsing.validators import UpdateExpressionValidator

    table = _moto_table(account, region, table_name)
    key = params.get("Key")
    if table is None or not isinstance(key, Mapping) or table.hash_key_attr not in key:
        return None
    if table.range_key_attr and table.range_key_attr not in key:
        return None
    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    stored = None
    if hash_value in table.items:  # never index the defaultdict: that would add an entry
        bucket = table.items[hash_value]
        stored = bucket.get(range_value) if range_value is not None else bucket
    if stored is not None:
        item = copy.deepcopy(stored)
    else:
        attrs = {table.hash_key_attr: key[table.hash_key_attr]}
        if table.range_key_attr:
            attrs[table.range_key_attr] = key[table.range_key_attr]
        item = Item(hash_value, range_value, attrs=attrs)
    item.attrs = dict(item.attrs)  # no moto size cap while measuring
    expression = params.get("UpdateExpression")
    names = params.get("ExpressionAttributeNames") or {}
    values = params.get("ExpressionAttributeValues") or {}
    if isinstance(expression, str):
        ast = UpdateExpressionParser.make(expression)
        validated = UpdateExpressionValidator(
            ast, expression_attribute_names=names, expression_attribute_values=values, item=item, table=table
        ).validate()
        validated.normalize()
        UpdateExpressionExecutor(validated, item, names).execute()
    elif isinstance(params.get("AttributeUpdates"), Mapping):
        item.update_with_attribute_updates(params["AttributeUpdates"])
    else:
        return None
    return {name: _to_wire(v) for name, v in item.attrs.items()}


class StrictAWSMiddleware:
    """WSGI middleware: check each DynamoDB/S3 request, record violations, refuse in ``enforce``.

    Runs in moto's server process, inside its request lock (see moto_serial), so reading moto's
    backend (table schemas, the stored item an update starts from) sees a consistent state.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], mode: str | None = None) -> None:
        self.app = app
        mode = (mode or os.environ.get("STRICT_AWS") or "enforce").strip().lower()
        if mode not in MODES:
            raise ValueError(f"STRICT_AWS must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self._lock = threading.Lock()
        self._records: list[dict[str, Any]] = []
        self._seq = 0
        self.context: str | None = None
        #: Requests checked, by "service:operation"; updates measured, and those moto could not run.
        self.checked: dict[str, int] = {}
        self.simulated = 0
        self.simulation_failures = 0

    def _count(self, service: str, operation: str) -> None:
        with self._lock:
            name = f"{service}:{operation}"
            self.checked[name] = self.checked.get(name, 0) + 1

    # -- recording ---------------------------------------------------------

    def record(
        self, service: str, operation: str, violation: Violation, enforced: bool, target: str | None = None
    ) -> dict[str, Any]:
        with self._lock:
            self._seq += 1
            rec = {
                "seq": self._seq,
                "time": time.time(),
                "service": service,
                "operation": operation,
                "target": target,
                "limit": violation.limit,
                "message": str(violation),
                "enforced": enforced,
                "test": self.context,
            }
            self._records.append(rec)
            return rec

    def since(self, seq: int) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self._records if r["seq"] > seq]

    # -- WSGI ----------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or ""
        if path.startswith(CONTROL_PREFIX):
            return self._control(environ, start_response)
        if self.mode == "off":
            return self.app(environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET") or ""
        try:
            if target.startswith(DYNAMODB_TARGET_PREFIX):
                answer = self._dynamodb(environ, target[len(DYNAMODB_TARGET_PREFIX) :])
            else:
                answer = self._s3(environ)
        except Exception as exc:  # a bug here must not break moto: record it and pass the request on
            self.record(
                "strict-aws",
                target or path,
                Violation("checker-error", f"the strict-aws checker failed: {exc!r}"),
                False,
            )
            answer = None
        if answer is None:
            return self.app(environ, start_response)
        status, headers, body = answer
        start_response(status, headers)
        return [body]

    @staticmethod
    def _read_body(environ: dict[str, Any]) -> bytes:
        stream = environ.get("wsgi.input")
        if stream is None:
            return b""
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > 0:
            body = stream.read(length)
        elif environ.get("wsgi.input_terminated"):
            body = stream.read()
        else:
            body = b""
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        return body

    def _scope(self, environ: dict[str, Any]) -> tuple[str, str, str | None]:
        """(account, region, service) of the request, the way moto resolves them."""
        headers = {"authorization": environ.get("HTTP_AUTHORIZATION") or ""}
        scope = credential_scope(headers, _parse_query(environ.get("QUERY_STRING") or ""))
        access_key, region, service = scope if scope else ("", "us-east-1", None)
        account = os.environ.get("MOTO_ACCOUNT_ID") or environ.get("HTTP_X_MOTO_ACCOUNT_ID") or ""
        if not account:
            account = _DEFAULT_ACCOUNT
            if access_key:
                try:
                    from moto.iam.models import get_account_id_from

                    account = get_account_id_from(access_key)
                except Exception:
                    account = _DEFAULT_ACCOUNT
        return account, region, service

    def _verdict(self, service: str, operation: str, violations: list[Violation], target: str | None) -> bool:
        """Record; True when the request is to be refused."""
        enforce = self.mode == "enforce"
        for v in violations:
            self.record(service, operation, v, enforce, target)
        return enforce and bool(violations)

    def _dynamodb(
        self, environ: dict[str, Any], operation: str
    ) -> tuple[str, list[tuple[str, str]], bytes] | None:
        raw = self._read_body(environ)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return None
        account, region, _ = self._scope(environ)

        def lookup(name: str) -> TableSchema | None:
            table = _moto_table(account, region, name)
            return _moto_schema(table) if table is not None else None

        def simulate(name: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
            try:
                after = _moto_simulate_update(account, region, name, params)
            except Exception:
                self.simulation_failures += 1
                return None  # whatever moto refuses, it refuses itself
            self.simulated += after is not None
            return after

        violations = check_dynamodb(operation, body, lookup, simulate)
        self._count("dynamodb", operation)
        target = body.get("TableName") if isinstance(body, Mapping) else None
        if not self._verdict("dynamodb", operation, violations, target):
            return None
        rid = uuid.uuid4().hex.upper()
        message = _TAG + " | ".join(str(v) for v in violations)
        cancelled = [v for v in violations if v.cancel_index is not None]
        if cancelled and len(cancelled) == len(violations) and operation == "TransactWriteItems":
            n = len(body.get("TransactItems") or [])
            reasons: list[dict[str, str]] = [{"Code": "None"} for _ in range(n)]
            for v in cancelled:
                assert v.cancel_index is not None
                reasons[v.cancel_index] = {"Code": "ValidationError", "Message": _TAG + str(v)}
            payload: dict[str, Any] = {
                "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons "
                f"[{', '.join(r['Code'] for r in reasons)}]",
                "CancellationReasons": reasons,
            }
        else:
            payload = {"__type": "com.amazon.coral.validate#ValidationException", "message": message}
        data = json.dumps(payload).encode()
        headers = [
            ("Content-Type", "application/x-amz-json-1.0"),
            ("x-amzn-RequestId", rid),
            ("Content-Length", str(len(data))),
        ]
        return "400 Bad Request", headers, data

    def _s3(self, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes] | None:
        _account, _region, service = self._scope(environ)
        if service != "s3":
            return None
        method = environ.get("REQUEST_METHOD") or "GET"
        raw_uri = environ.get("RAW_URI") or environ.get("REQUEST_URI")
        if raw_uri and raw_uri.startswith("/"):
            path = raw_uri.split("?", 1)[0]
        else:
            path = urllib.parse.quote((environ.get("PATH_INFO") or "").encode("latin-1"))
        query = environ.get("QUERY_STRING") or ""
        headers: dict[str, str] = {}
        for k, v in environ.items():
            if k.startswith("HTTP_"):
                headers[k[5:].replace("_", "-").lower()] = v
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        q = _parse_query(query)
        _bucket, key = _split_path(path, headers.get("host"))
        op = s3_operation(method, key, q, headers)
        body = self._read_body(environ) if op in ("CreateBucket", "DeleteObjects") else None
        violations = check_s3(method, path, query, headers, body)
        self._count("s3", op)
        if not self._verdict("s3", op, violations, _bucket):
            return None
        if body is None:
            self._read_body(environ)  # drain what the client sent, so the connection stays in step
        first = violations[0]
        rid = uuid.uuid4().hex[:16].upper()
        message = _TAG + " | ".join(str(v) for v in violations)
        extra = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in first.extra)
        data = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{first.code}</Code><Message>{escape(message)}</Message>{extra}"
            f"<RequestId>{rid}</RequestId><HostId>strict-aws</HostId></Error>"
        ).encode()
        if method.upper() == "HEAD":
            data = b""
        headers_out = [
            ("Content-Type", "application/xml"),
            ("x-amz-request-id", rid),
            ("Content-Length", str(len(data))),
        ]
        return "400 Bad Request", headers_out, data

    # -- control endpoints -----------------------------------------------------

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        what = (environ.get("PATH_INFO") or "")[len(CONTROL_PREFIX) :].strip("/")
        method = (environ.get("REQUEST_METHOD") or "GET").upper()
        q = _parse_query(environ.get("QUERY_STRING") or "")
        status = "200 OK"
        result: Any = None
        if what == "violations" and method == "GET":
            try:
                since = int((q.get("since") or ["0"])[0])
            except ValueError:
                since = 0
            result = self.since(since)
        elif what == "status" and method == "GET":
            with self._lock:
                result = {
                    "mode": self.mode,
                    "last_seq": self._seq,
                    "count": len(self._records),
                    "context": self.context,
                    "checked": dict(sorted(self.checked.items())),
                    "simulated_updates": self.simulated,
                    "simulation_failures": self.simulation_failures,
                }
        elif what == "mode" and method in ("POST", "PUT"):
            wanted = self._read_body(environ).decode().strip().strip('"').lower()
            if wanted in MODES:
                previous, self.mode = self.mode, wanted
                result = {"mode": wanted, "previous": previous}
            else:
                status, result = "400 Bad Request", {"error": f"mode must be one of {', '.join(MODES)}"}
        elif what == "context" and method in ("POST", "PUT"):
            text = self._read_body(environ).decode().strip()
            self.context = text or None
            result = {"context": self.context}
        else:
            status, result = (
                "404 Not Found",
                {"error": f"no control endpoint {method} {CONTROL_PREFIX}{what}"},
            )
        data = json.dumps(result).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]


# --------------------------------------------------------------------------
# Client helpers (tests and fixtures)
# --------------------------------------------------------------------------


def _call(endpoint: str, method: str, what: str, body: bytes | None = None) -> Any:
    req = urllib.request.Request(endpoint.rstrip("/") + CONTROL_PREFIX + what, data=body, method=method)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def status(endpoint: str) -> dict[str, Any]:
    """The layer's state: mode, last_seq, count, context, checked (requests by service:operation),
    simulated_updates, simulation_failures."""
    result: dict[str, Any] = _call(endpoint, "GET", "status")
    return result


def violations(endpoint: str, since: int = 0) -> list[dict[str, Any]]:
    """The violations recorded after sequence number ``since`` (each a dict with seq, service,
    operation, target, limit, message, enforced, test)."""
    result: list[dict[str, Any]] = _call(endpoint, "GET", f"violations?since={int(since)}")
    return result


def set_mode(endpoint: str, mode: str) -> str:
    """Switch the server's mode; returns the previous one."""
    result: dict[str, Any] = _call(endpoint, "POST", "mode", mode.encode())
    return str(result["previous"])


def set_context(endpoint: str, context: str | None) -> None:
    """Label the violations recorded from now on (the running test's node id)."""
    _call(endpoint, "POST", "context", (context or "").encode())


def describe(records: Iterable[Mapping[str, Any]]) -> str:
    return "\n".join(
        f"  #{r['seq']} {r['service']} {r['operation']} [{r['limit']}]: {r['message']}" for r in records
    )


__all__ = [
    "IndexSchema",
    "StrictAWSMiddleware",
    "TableSchema",
    "Violation",
    "check_dynamodb",
    "check_s3",
    "count_operators",
    "describe",
    "item_size",
    "number_size",
    "set_context",
    "set_mode",
    "status",
    "value_size",
    "violations",
]
