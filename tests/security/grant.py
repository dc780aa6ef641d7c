"""A tenant's IAM grant, enforced on a real boto3 client: the attacker's means.

``CheckpointStore.grant_tenant_read_write(role, P)`` gives a role DynamoDB
item actions on the table under ``ForAllValues:StringLike`` on
``dynamodb:LeadingKeys`` = ``[tenant_partition_prefix(P) + "*"]``, and S3
object actions on ``<bucket>/<tenant_s3_prefix(prefix, P)>*`` (``ListBucket``
with that ``s3:prefix``). :class:`TenantGrant` computes the same patterns from
the same ``schema`` functions and checks every call a client makes against
them with IAM's StringLike semantics, from a botocore ``before-call`` hook:
a call the real grant would deny raises :class:`AccessDenied` before it is
sent. The attacker's client, and any saver the attacker runs, go through it.
The grant's second statement, ``GetItem`` of the layout item
(``schema.LAYOUT_PK``), is allowed as it is there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.dynamodb import schema

ATTR = schema.ATTR

#: DynamoDB and S3 operations the tenant grant allows (cdk/_store.py).
DDB_ACTIONS = {
    "BatchGetItem",
    "BatchWriteItem",
    "ConditionCheckItem",
    "GetItem",
    "PutItem",
    "Query",
    "UpdateItem",
}
#: IAM authorizes each element of a TransactWriteItems as its own action
#: (a lease-bound saver's writes: a ConditionCheck of the lock item + the write).
TRANSACT_ACTIONS = {
    "ConditionCheck": "ConditionCheckItem",
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
}
S3_OBJECT_ACTIONS = {"GetObject", "PutObject", "DeleteObject", "HeadObject"}


class AccessDenied(Exception):
    """What AWS would answer: the call is outside the attacker's grant."""


def string_like(pattern: str, value: str) -> bool:
    """IAM's StringLike: ``*`` any run of characters, ``?`` exactly one, the rest literal."""
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, value, flags=re.DOTALL) is not None


@dataclass
class TenantGrant:
    """The grant of tenant ``tenant`` on ``table``/``bucket`` under ``key_prefix``."""

    tenant: str
    table: str
    bucket: str
    key_prefix: str = "checkpoints/"

    @property
    def leading_keys(self) -> str:
        return schema.tenant_partition_prefix(self.tenant) + "*"

    @property
    def s3_pattern(self) -> str:
        return schema.tenant_s3_prefix(self.key_prefix, self.tenant) + "*"

    def attach(self, client: Any) -> Any:
        """Enforce this grant on every call ``client`` (boto3 or aiobotocore) makes.

        ``before-parameter-build`` sees the call's API parameters (Key,
        Item, Prefix, CopySource...) before anything is sent.
        """
        client.meta.events.register("before-parameter-build", self._check)
        return client

    def attach_saver(self, saver: Any) -> Any:
        for client in saver.clients.values():
            if client is not None:
                self.attach(client)
        return saver

    # ----------------------------------------------------------- checks

    def _check(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        op = model.name
        service = model.service_model.service_name
        if service == "dynamodb":
            self._check_ddb(op, params)
        elif service == "s3":
            self._check_s3(op, params)
        else:
            raise AccessDenied(f"{service}:{op} is not in the tenant grant")

    def _deny(self, what: str) -> None:
        raise AccessDenied(f"tenant {self.tenant!r} may not {what}")

    def _check_ddb(self, op: str, req: dict[str, Any]) -> None:
        if op == "TransactWriteItems":
            for element in req["TransactItems"]:
                ((kind, body),) = element.items()
                self._check_ddb(TRANSACT_ACTIONS[kind], body)
            return
        if op not in DDB_ACTIONS:
            self._deny(f"call dynamodb:{op}")
        if req.get("IndexName"):
            self._deny("query an index (the grant covers the table only)")
        tables: set[str] = set()
        pks = list(self._ddb_pks(op, req, tables))
        if tables - {self.table}:
            self._deny(f"touch table(s) {sorted(tables - {self.table})}")
        if not pks:
            self._deny(f"call dynamodb:{op} without a partition key")
        if op == "GetItem" and pks == [schema.LAYOUT_PK]:
            return  # the threads index's layout: the grant's read-only statement
        for pk in pks:
            if not string_like(self.leading_keys, pk):
                self._deny(f"touch partition {pk!r} (LeadingKeys {self.leading_keys!r})")

    @staticmethod
    def _ddb_pks(op: str, req: dict[str, Any], tables: set[str]) -> Iterator[str]:
        if "TableName" in req:
            tables.add(req["TableName"])
        if op in ("GetItem", "DeleteItem", "UpdateItem", "ConditionCheckItem"):
            yield req["Key"][ATTR.PK]["S"]
        elif op == "PutItem":
            yield req["Item"][ATTR.PK]["S"]
        elif op == "Query":
            cond = req.get("KeyConditionExpression", "")
            names = {v: k for k, v in (req.get("ExpressionAttributeNames") or {}).items()}
            name = names.get(ATTR.PK, ATTR.PK)
            m = re.search(rf"(?:^|\s|\(){re.escape(name)}\s*=\s*(:\w+)", cond)
            if m is None:
                raise AccessDenied(f"query without a partition key condition: {cond!r}")
            yield req["ExpressionAttributeValues"][m.group(1)]["S"]
        elif op == "BatchWriteItem":
            for table, reqs in req["RequestItems"].items():
                tables.add(table)
                for r in reqs:
                    if "PutRequest" in r:
                        yield r["PutRequest"]["Item"][ATTR.PK]["S"]
                    else:
                        yield r["DeleteRequest"]["Key"][ATTR.PK]["S"]
        elif op == "BatchGetItem":
            for table, spec in req["RequestItems"].items():
                tables.add(table)
                for key in spec["Keys"]:
                    yield key[ATTR.PK]["S"]

    def _check_s3(self, op: str, req: dict[str, Any]) -> None:
        if req.get("Bucket") != self.bucket:
            self._deny(f"call s3:{op} on bucket {req.get('Bucket')!r}")
        if op == "ListObjectsV2":
            prefix = req.get("Prefix", "")
            if not string_like(self.s3_pattern, prefix):
                self._deny(f"list prefix {prefix!r} (s3:prefix {self.s3_pattern!r})")
            return
        if op == "DeleteObjects":
            for obj in req["Delete"]["Objects"]:
                if not string_like(self.s3_pattern, obj["Key"]):
                    self._deny(f"delete s3 object {obj['Key']!r}")
            return
        if op == "CopyObject":
            src = req["CopySource"]
            if isinstance(src, str):  # botocore may have turned the dict into "bucket/key"
                from urllib.parse import unquote

                bucket, _, key = unquote(src.split("?", 1)[0]).lstrip("/").partition("/")
                src = {"Bucket": bucket, "Key": key}
            if src["Bucket"] != self.bucket or not string_like(self.s3_pattern, src["Key"]):
                self._deny(f"read s3 object {src!r} to copy it")
            op = "PutObject"
        if op not in S3_OBJECT_ACTIONS:
            self._deny(f"call s3:{op}")
        if not string_like(self.s3_pattern, req["Key"]):
            self._deny(f"{op} s3 object {req['Key']!r} (resource {self.s3_pattern!r})")
