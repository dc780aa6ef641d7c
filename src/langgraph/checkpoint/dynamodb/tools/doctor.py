"""``langgraph-dynamodb doctor``: check a live store against what the library expects.

:func:`diagnose` runs every check against the saver's endpoint and returns a
:class:`DoctorReport`: one :class:`Check` per line, ``OK``, ``WARN``,
``FAIL`` or ``SKIP`` (not run: something it needs failed first), each with
what is wrong and how to fix it. The table definition compared against is
``schema.table_definition``, the one ``setup()`` and the CDK construct
create, never a second copy.

Required (``FAIL``): the endpoint answers and accepts the credentials; the
table exists with the key schema and the run-id index (``delete_for_runs``,
the LangGraph server's rollback); TTL, when enabled, is on the ``ttl``
attribute (and enabled at all when the saver has a ``ttl``); the bucket, when
one is configured, exists and is reachable; the caller may read and write.
Advisory (``WARN``): the threads index (thread listing, idle pruning, TTL
purge), the stream (the construct's reaper Lambda reads TTL deletions from
it), TTL when no ``ttl`` is configured (idempotency records and locks then
never expire), no bucket (values over a DynamoDB item's 400 KB are refused).

The read/write dry run leaves nothing behind. DynamoDB: conditional
``PutItem``, ``UpdateItem``, and a ``TransactWriteItems`` of a
``ConditionCheck`` and an ``Update`` (what a lease-bound saver sends; IAM
authorizes its ``ConditionCheck`` as ``dynamodb:ConditionCheckItem``), whose
condition (the item exists) always fails on a fresh random key, a
``BatchWriteItem`` deleting that absent key, and ``GetItem``, ``Query`` and
``BatchGetItem`` of it. IAM is checked before a condition is evaluated, so
``ConditionalCheckFailed`` proves the action is allowed while no item is
ever written: nothing for the stream (and the reaper) to see, nothing left
if the doctor is killed half way, no capacity beyond a few units. The key
is ``<tenant>||doctor|<uuid>`` (``|doctor|<uuid>`` without a tenant):
inside the tenant's own ``dynamodb:LeadingKeys`` grant, and a partition no
thread can have (an escaped thread id never contains a bare ``|``), so no
tool reads it. S3 has no write that always fails its condition, so the
doctor puts, reads, lists and deletes one 2-byte object under the tenant's
own prefix (``<prefix><tenant>||doctor/<uuid>``, a name no thread uses); a
doctor killed between the put and the delete leaves that object.

Example:
    ```python
    from langgraph.checkpoint.dynamodb import DynamoDBSaver
    from langgraph.checkpoint.dynamodb.tools.doctor import diagnose

    report = diagnose(DynamoDBSaver(table_name="checkpoints", bucket_name="payloads"))
    print(report.render())
    assert report.ok, "the store is not usable as configured"
    ```
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from langgraph.checkpoint.dynamodb import schema
from langgraph.checkpoint.dynamodb.schema import ATTR
from langgraph.checkpoint.dynamodb.tools import _inspection

__all__ = ["Check", "DoctorReport", "Status", "diagnose"]

Status = Literal["OK", "WARN", "FAIL", "SKIP"]

_DENIED: Final = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
#: The action an IAM denial names ("... is not authorized to perform: dynamodb:PutItem on ...").
_DENIED_ACTION: Final = re.compile(r"perform: ([a-z0-9-]+:[A-Za-z]+)")
_BAD_CREDENTIALS: Final = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidAccessKeyId",
        "MissingAuthenticationToken",
    }
)
_UNREACHABLE: Final = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError, ConnectionClosedError)
_SETUP_FIX: Final = (
    "create it: DynamoDBSaver.setup() (development) or the CDK construct CheckpointStore; "
    "or point at the right one (--table/--bucket, --region/AWS_REGION, --endpoint-url/AWS_ENDPOINT_URL)"
)


@dataclasses.dataclass(frozen=True)
class Check:
    """One line of the report.

    Attributes:
        name: what was checked (``table``, ``key schema``, ``ttl``...).
        status: ``OK``, ``WARN`` (advisory), ``FAIL`` (required) or ``SKIP``.
        message: what was found.
        fix: how to fix it (empty when nothing is to be done).
    """

    name: str
    status: Status
    message: str
    fix: str = ""


@dataclasses.dataclass
class DoctorReport:
    """What :func:`diagnose` found; ``ok`` is False if any check failed.

    Example:
        >>> r = DoctorReport("t", None, "us-east-1", None, "", [Check("table", "FAIL", "missing", "setup()")])
        >>> r.ok, r.render().splitlines()[1]
        (False, 'FAIL  table: missing')
    """

    table: str
    bucket: str | None
    region: str | None
    endpoint_url: str | None
    tenant_prefix: str
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return not any(c.status == "FAIL" for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (what ``doctor --json`` prints)."""
        return {
            "ok": self.ok,
            "table": self.table,
            "bucket": self.bucket,
            "region": self.region,
            "endpoint_url": self.endpoint_url,
            "tenant_prefix": self.tenant_prefix or None,
            "checks": [dataclasses.asdict(c) for c in self.checks],
        }

    def render(self) -> str:
        """One line per check, the fix indented under it, a summary last."""
        where = f"table {self.table!r}, bucket {self.bucket!r}, region {self.region}"
        if self.endpoint_url:
            where += f", endpoint {self.endpoint_url}"
        if self.tenant_prefix:
            where += f", tenant {self.tenant_prefix!r}"
        lines = [f"doctor: {where}"]
        for c in self.checks:
            lines.append(f"{c.status:<5} {c.name}: {c.message}")
            if c.fix:
                lines.append(f"      fix: {c.fix}")
        counts = {s: sum(c.status == s for c in self.checks) for s in ("OK", "WARN", "FAIL", "SKIP")}
        lines.append(
            ", ".join(f"{n} {s}" for s, n in counts.items() if n) + (" - healthy" if self.ok else "")
        )
        return "\n".join(lines)


class _Stop(Exception):
    """The endpoint or the credentials failed: nothing else can be checked."""


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _describe(exc: BaseException) -> str:
    """One line for an error nothing more specific was said about (botocore's are multi-line)."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def diagnose(saver: Any) -> DoctorReport:
    """Check the saver's table, bucket and permissions against what the library needs.

    Uses the saver's own clients, so its region, endpoint, credentials and
    tenant are the ones checked. Never raises for what it finds: every
    problem is a ``FAIL`` or ``WARN`` line (see the module docstring for
    which checks are required, and what the dry run writes: nothing in
    DynamoDB, one object put and deleted in S3).

    Args:
        saver: a sync ``DynamoDBSaver``.

    Returns:
        The report; ``report.ok`` is False if any required check failed.

    Example:
        ```python
        report = diagnose(DynamoDBSaver(table_name="checkpoints"))
        for check in report.checks:
            print(check.status, check.name, check.message, check.fix)
        ```
    """

    ddb = _inspection.ddb_client(saver)
    meta = ddb.meta
    report = DoctorReport(
        table=saver.table_name,
        bucket=saver.bucket_name,
        region=meta.region_name,
        endpoint_url=meta.endpoint_url,
        tenant_prefix=getattr(saver, "tenant_prefix", "") or "",
        checks=[],
    )
    doc = _Doctor(saver, ddb, _inspection.s3_client(saver), report)
    with contextlib.suppress(_Stop):  # the endpoint or credentials failed: reported already
        doc.run()
    return report


class _Doctor:
    def __init__(self, saver: Any, ddb: Any, s3: Any, report: DoctorReport) -> None:
        self.saver = saver
        self.ddb = ddb
        self.s3 = s3
        self.report = report
        self.table = saver.table_name
        self.expected = schema.table_definition(saver.table_name)
        tenant = report.tenant_prefix
        token = uuid.uuid4().hex
        # A partition no thread can have (see the module docstring), inside the tenant's keys.
        scope = schema.tenant_partition_prefix(tenant) if tenant else ""
        self.probe_key = {
            ATTR.PK: {"S": f"{scope}{schema.SEP}doctor{schema.SEP}{token}"},
            ATTR.SK: {"S": f"{schema.META_PREFIX}doctor"},
        }

        self.probe_object = f"{_inspection.s3_root(saver)}{schema.SEP}doctor/{token}"

    def add(self, name: str, status: Status, message: str, fix: str = "") -> None:
        self.report.checks.append(Check(name, status, message, fix))

    def where(self) -> str:
        r = self.report
        return f"region {r.region}" + (f", endpoint {r.endpoint_url}" if r.endpoint_url else "")

    def fatal(self, name: str, exc: BaseException) -> None:
        """Report an endpoint or credentials failure and stop; return for anything else."""
        why = "the credentials failed"
        if isinstance(exc, _UNREACHABLE):
            why = "the endpoint cannot be reached"
            self.add(
                name,
                "FAIL",
                f"cannot reach the endpoint ({self.where()}): {exc}",
                "check --endpoint-url/AWS_ENDPOINT_URL and --region/AWS_REGION; for a local endpoint, "
                "start it (langgraph-dynamodb local)",
            )
        elif isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
            self.add(
                name,
                "FAIL",
                f"no AWS credentials: {exc}",
                "set AWS_PROFILE (--profile) or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
            )
        elif isinstance(exc, NoRegionError):
            why = "no region"
            self.add(name, "FAIL", "no AWS region", "pass --region or set AWS_REGION")
        elif isinstance(exc, ClientError) and _code(exc) in _BAD_CREDENTIALS:
            self.add(
                name,
                "FAIL",
                f"AWS rejected the credentials ({_code(exc)}, {self.where()})",
                "refresh or fix the credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY); "
                "check --region",
            )
        else:
            return
        self.skip_rest(f"not checked: {why}")
        raise _Stop

    def skip_rest(self, why: str) -> None:
        done = {c.name for c in self.report.checks}
        for name in _ALL_CHECKS:
            if name not in done and (name not in _S3_CHECKS or self.s3 is not None):
                self.add(name, "SKIP", why)

    def run(self) -> None:
        desc = self.check_table()
        if isinstance(desc, dict):
            self.check_keys(desc)
            self.check_indexes(desc)
            self.check_billing(desc)
            self.check_stream(desc)
        keys_ok = not any(c.name == "key schema" and c.status == "FAIL" for c in self.report.checks)
        if desc is not False and not keys_ok:
            # Every probe would name keys this table does not have: requests AWS refuses.
            self.check_ttl()
            for name in ("dynamodb read", "dynamodb write"):
                self.add(name, "SKIP", "not checked: the key schema is not this library's")
        elif desc is not False:
            self.check_ttl()
            self.check_dynamodb_access()
        else:
            for name in ("ttl", "dynamodb read", "dynamodb write"):
                self.add(name, "SKIP", "not checked: no usable table")
        self.check_bucket()

    # ------------------------------------------------------------ table

    def check_table(self) -> dict[str, Any] | Literal[False] | None:
        """The table's description; ``None`` if it cannot be described, ``False`` if it does not exist."""
        try:
            desc: dict[str, Any] = self.ddb.describe_table(TableName=self.table)["Table"]
        except Exception as exc:
            self.fatal("table", exc)
            if isinstance(exc, ClientError) and _code(exc) == "ResourceNotFoundException":
                self.add("table", "FAIL", f"table {self.table!r} does not exist ({self.where()})", _SETUP_FIX)
                for name in ("key schema", "indexes", "billing", "stream"):
                    self.add(name, "SKIP", "not checked: the table does not exist")
                return False
            if isinstance(exc, ClientError) and _code(exc) in _DENIED:
                self.add(
                    "table",
                    "WARN",
                    f"cannot describe table {self.table!r}: dynamodb:DescribeTable denied; schema not checked",
                    "run the doctor with a role that may describe the table (the savers do not need it)",
                )
                for name in ("key schema", "indexes", "billing", "stream"):
                    self.add(name, "SKIP", "not checked: dynamodb:DescribeTable denied")
                return None
            self.add("table", "FAIL", _describe(exc), "check --table (a DynamoDB table name) and --region")
            for name in ("key schema", "indexes", "billing", "stream"):
                self.add(name, "SKIP", "not checked: the table cannot be described")
            return False
        status = desc.get("TableStatus", "?")
        if status == "ACTIVE":
            self.add("table", "OK", f"{self.table!r} is ACTIVE ({self.where()})")
        else:
            self.add("table", "WARN", f"{self.table!r} is {status}", "wait until it is ACTIVE")
        return desc

    def check_keys(self, desc: Mapping[str, Any]) -> None:
        types = {a["AttributeName"]: a["AttributeType"] for a in desc.get("AttributeDefinitions", [])}
        want_types = {a["AttributeName"]: a["AttributeType"] for a in self.expected["AttributeDefinitions"]}
        got = _keys(desc.get("KeySchema", []), types)
        want = _keys(self.expected["KeySchema"], want_types)
        if got == want:
            self.add("key schema", "OK", _show_keys(got))
        else:
            self.add(
                "key schema",
                "FAIL",
                f"{_show_keys(got)}, expected {_show_keys(want)}: this table was not created for this library",
                "a key schema cannot be changed: create a new table with DynamoDBSaver.setup() or the "
                "CDK construct CheckpointStore, and copy threads over (export/import)",
            )

    def check_indexes(self, desc: Mapping[str, Any]) -> None:
        types = {a["AttributeName"]: a["AttributeType"] for a in desc.get("AttributeDefinitions", [])}
        want_types = {a["AttributeName"]: a["AttributeType"] for a in self.expected["AttributeDefinitions"]}
        present = {g["IndexName"]: g for g in desc.get("GlobalSecondaryIndexes", []) or []}
        problems: list[tuple[Status, str, str]] = []
        fine: list[str] = []
        for want in self.expected["GlobalSecondaryIndexes"]:
            name = want["IndexName"]
            required = name == schema.RUN_INDEX_NAME
            level: Status = "FAIL" if required else "WARN"
            uses = (
                "delete_for_runs (the LangGraph server's rollback) needs it"
                if required
                else "thread listing, idle pruning and the TTL purge use it (the CLI falls back to a scan)"
            )
            fix = (
                f"add the GSI {name!r} as schema.table_definition() defines it (UpdateTable), or "
                "recreate the table with setup() / the construct"
            )
            got = present.get(name)
            if got is None:
                problems.append((level, f"{name!r} missing: {uses}", fix))
                continue
            got_keys = _keys(got.get("KeySchema", []), types)
            want_keys = _keys(want["KeySchema"], want_types)
            if got_keys != want_keys:
                problems.append(
                    (
                        level,
                        f"{name!r} is keyed {_show_keys(got_keys)}, expected {_show_keys(want_keys)}",
                        fix,
                    )
                )
                continue
            projection = got.get("Projection", {}).get("ProjectionType")
            if projection != want["Projection"]["ProjectionType"]:
                problems.append(
                    (
                        "WARN",
                        f"{name!r} projects {projection}, expected {want['Projection']['ProjectionType']}",
                        fix,
                    )
                )
                continue
            status = got.get("IndexStatus", "ACTIVE")
            if status != "ACTIVE":
                problems.append(("WARN", f"{name!r} is {status}", "wait until it is ACTIVE"))
                continue
            fine.append(name)
        if not problems:
            self.add("indexes", "OK", ", ".join(fine))
        for level, message, fix in problems:
            self.add("indexes", level, message, fix)

    def check_billing(self, desc: Mapping[str, Any]) -> None:
        mode = (desc.get("BillingModeSummary") or {}).get("BillingMode") or "PROVISIONED"
        if mode == "PAY_PER_REQUEST":
            self.add("billing", "OK", "on-demand (PAY_PER_REQUEST)")
            return
        tp = desc.get("ProvisionedThroughput") or {}
        self.add(
            "billing",
            "OK",
            f"provisioned: {tp.get('ReadCapacityUnits', '?')} RCU / {tp.get('WriteCapacityUnits', '?')} WCU "
            "(size it for your traffic, or use on-demand)",
        )

    def check_stream(self, desc: Mapping[str, Any]) -> None:
        spec = desc.get("StreamSpecification") or {}
        if spec.get("StreamEnabled"):
            self.add(
                "stream", "OK", f"enabled ({spec.get('StreamViewType')}; the reaper reads TTL deletions)"
            )
        else:
            self.add(
                "stream",
                "WARN",
                "no stream: the construct's reaper Lambda deletes an expired thread's items from it; "
                "without it they stay until purge_expired (the pruner) runs",
                f"enable a stream (view type {schema.STREAM_VIEW_TYPE}) if you deploy the reaper "
                "(the construct does); not needed without TTL",
            )

    def check_ttl(self) -> None:
        try:
            resp = self.ddb.describe_time_to_live(TableName=self.table)
        except Exception as exc:
            self.fatal("ttl", exc)
            if isinstance(exc, ClientError) and _code(exc) in _DENIED:
                self.add("ttl", "WARN", "cannot check: dynamodb:DescribeTimeToLive denied")
            else:
                self.add("ttl", "FAIL", _describe(exc))
            return
        ttl = resp.get("TimeToLiveDescription", {})
        status = ttl.get("TimeToLiveStatus", "DISABLED")
        attr = ttl.get("AttributeName")
        fix_enable = (
            f"enable TTL on the attribute {schema.TTL_ATTRIBUTE!r}: DynamoDBSaver.setup() or the construct "
            f"(aws dynamodb update-time-to-live --time-to-live-specification "
            f"Enabled=true,AttributeName={schema.TTL_ATTRIBUTE})"
        )
        if status in ("ENABLED", "ENABLING") and attr != schema.TTL_ATTRIBUTE:
            self.add(
                "ttl",
                "FAIL",
                f"TTL is on the attribute {attr!r}, the library writes {schema.TTL_ATTRIBUTE!r}: nothing expires",
                f"disable TTL, then {fix_enable}",
            )
        elif status == "ENABLED":
            self.add("ttl", "OK", f"enabled on {attr!r}")
        elif status == "ENABLING":
            self.add("ttl", "OK", f"enabling on {attr!r} (DynamoDB takes up to an hour)")
        elif getattr(self.saver, "ttl", None):
            self.add(
                "ttl",
                "FAIL",
                f"TTL is {status} but the saver expires threads after {self.saver.ttl} s: they never expire",
                fix_enable,
            )
        else:
            self.add(
                "ttl",
                "WARN",
                f"TTL is {status}: idempotency records never expire, and a saver ttl would not work",
                fix_enable,
            )

    # -------------------------------------------------------- dry runs

    def check_dynamodb_access(self) -> None:
        key = self.probe_key
        absent = {
            "ConditionExpression": "attribute_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": ATTR.PK},
        }
        reads: list[tuple[str, Callable[[], Any]]] = [
            ("GetItem", lambda: self.ddb.get_item(TableName=self.table, Key=key, ConsistentRead=True)),
            (
                "Query",
                lambda: self.ddb.query(
                    TableName=self.table,
                    KeyConditionExpression="#pk = :pk",
                    ExpressionAttributeNames={"#pk": ATTR.PK},
                    ExpressionAttributeValues={":pk": key[ATTR.PK]},
                    Limit=1,
                ),
            ),
            ("BatchGetItem", lambda: self.ddb.batch_get_item(RequestItems={self.table: {"Keys": [key]}})),
        ]
        writes: list[tuple[str, Callable[[], Any]]] = [
            ("PutItem", lambda: self.ddb.put_item(TableName=self.table, Item=dict(key), **absent)),
            (
                "UpdateItem",
                lambda: self.ddb.update_item(
                    TableName=self.table,
                    Key=key,
                    UpdateExpression="SET #d = :d",
                    ExpressionAttributeNames={"#pk": ATTR.PK, "#d": "doctor"},
                    ExpressionAttributeValues={":d": {"S": "dry-run"}},
                    ConditionExpression="attribute_exists(#pk)",
                ),
            ),
            # What a lease-bound saver sends (lock.run_once, ThreadLease.bind): a
            # ConditionCheck of the partition's lock item plus the write. IAM
            # authorizes each element as its own action; the ConditionCheck is
            # dynamodb:ConditionCheckItem (the Update's UpdateItem is probed above).
            (
                "ConditionCheckItem",
                lambda: self.ddb.transact_write_items(
                    TransactItems=[
                        {
                            "ConditionCheck": {
                                "TableName": self.table,
                                "Key": {ATTR.PK: key[ATTR.PK], ATTR.SK: {"S": schema.LOCK_SK}},
                                "ConditionExpression": "attribute_exists(#pk)",
                                "ExpressionAttributeNames": {"#pk": ATTR.PK},
                            }
                        },
                        {
                            "Update": {
                                "TableName": self.table,
                                "Key": key,
                                "UpdateExpression": "SET #d = :d",
                                "ExpressionAttributeNames": {"#pk": ATTR.PK, "#d": "doctor"},
                                "ExpressionAttributeValues": {":d": {"S": "dry-run"}},
                                "ConditionExpression": "attribute_exists(#pk)",
                            }
                        },
                    ]
                ),
            ),
            # Deleting an absent item changes nothing and emits no stream record.
            (
                "BatchWriteItem",
                lambda: self.ddb.batch_write_item(
                    RequestItems={self.table: [{"DeleteRequest": {"Key": key}}]}
                ),
            ),
        ]
        wrote = False
        try:
            self.probe("dynamodb read", "dynamodb", reads)
            wrote = self.probe("dynamodb write", "dynamodb", writes)
        finally:
            if wrote:  # a condition that should have failed did not: remove what it wrote
                # (with BatchWriteItem, which the savers' grant has; it has no DeleteItem)
                self.ddb.batch_write_item(RequestItems={self.table: [{"DeleteRequest": {"Key": key}}]})

    def probe(self, name: str, service: str, calls: list[tuple[str, Callable[[], Any]]]) -> bool:
        """Run the calls; one line naming the denied actions. True if a write unexpectedly landed."""
        denied: list[str] = []
        other: list[str] = []
        landed = False
        for action, call in calls:
            try:
                call()
                landed = landed or action in ("PutItem", "UpdateItem")
            except ClientError as exc:
                code = _code(exc)
                if code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
                    continue  # allowed; the condition failed as intended
                if code in _DENIED:
                    # The action DynamoDB's denial names, when it does (a
                    # transaction is denied for any of its elements' actions).
                    message = str(exc.response.get("Error", {}).get("Message", ""))
                    named = _DENIED_ACTION.search(message) if service == "dynamodb" else None
                    label = named.group(1) if named else f"{service}:{action}"
                    if label not in denied:
                        denied.append(label)
                    continue
                self.fatal(name, exc)
                other.append(f"{action}: {code}: {exc}")
            except Exception as exc:
                self.fatal(name, exc)
                other.append(f"{action}: {_describe(exc)}")
        actions = ", ".join(a for a, _ in calls)
        if denied:
            resource = (
                f"table {self.table!r}" if service == "dynamodb" else f"bucket {self.saver.bucket_name!r}"
            )
            scope = (
                f" for the keys of tenant {self.report.tenant_prefix!r}" if self.report.tenant_prefix else ""
            )
            self.add(
                name,
                "FAIL",
                f"denied: {', '.join(denied)}",
                f"grant {', '.join(denied)} on {resource}{scope} to the caller's IAM role "
                "(the construct's grant_* methods do)",
            )
        elif other:
            self.add(name, "FAIL", "; ".join(other))
        else:
            self.add(
                name,
                "OK",
                f"allowed: {actions} (dry run, nothing written)"
                if service == "dynamodb"
                else f"allowed: {actions}",
            )
        return landed

    def check_bucket(self) -> None:
        bucket = self.saver.bucket_name
        if bucket is None or self.s3 is None:
            self.add(
                "bucket",
                "WARN",
                "no bucket configured: a checkpoint or write larger than a DynamoDB item (~400 KB) is refused",
                "pass --bucket (LANGGRAPH_DYNAMODB_BUCKET) if your state can grow that large",
            )
            return
        try:
            self.s3.head_bucket(Bucket=bucket)
        except Exception as exc:
            self.fatal("bucket", exc)
            if not isinstance(exc, ClientError):
                self.add("bucket", "FAIL", _describe(exc), "check --bucket (an S3 bucket name)")
                self.add("s3 read/write", "SKIP", "not checked: the bucket is not reachable")
                return
            code = _code(exc)
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("404", "NoSuchBucket", "NotFound"):
                self.add("bucket", "FAIL", f"bucket {bucket!r} does not exist ({self.where()})", _SETUP_FIX)
            elif code in ("301", "PermanentRedirect") or status == 301:
                region = (
                    exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("x-amz-bucket-region")
                )
                self.add(
                    "bucket",
                    "FAIL",
                    f"bucket {bucket!r} is in another region ({region or '?'}), not {self.report.region}",
                    "use the bucket's region (--region) or a bucket in the table's region",
                )
            elif code in ("403", *_DENIED) or status == 403:
                self.add(
                    "bucket",
                    "FAIL",
                    f"bucket {bucket!r}: access denied (s3:ListBucket missing, or another account's bucket)",
                    f"grant s3:ListBucket on {bucket!r}, or check the bucket name",
                )
            else:
                self.add("bucket", "FAIL", f"bucket {bucket!r}: {code}: {exc}")
            self.add("s3 read/write", "SKIP", "not checked: the bucket is not reachable")
            return
        self.add("bucket", "OK", f"{bucket!r} exists and is reachable")
        self.check_s3_access(bucket)

    def check_s3_access(self, bucket: str) -> None:
        key = self.probe_object
        calls: list[tuple[str, Callable[[], Any]]] = [
            ("PutObject", lambda: self.s3.put_object(Bucket=bucket, Key=key, Body=b"ok")),
            ("GetObject", lambda: self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()),
            ("ListBucket", lambda: self.s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)),
            (
                "DeleteObject",
                lambda: _check_deleted(
                    self.s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": key}]})
                ),
            ),
        ]
        self.probe("s3 read/write", "s3", calls)


def _check_deleted(resp: Mapping[str, Any]) -> None:
    """``DeleteObjects`` reports a denied key in its body, not as an exception."""
    for err in resp.get("Errors", []) or []:
        raise ClientError(
            {"Error": {"Code": err.get("Code", "?"), "Message": err.get("Message", "")}}, "DeleteObjects"
        )


def _keys(key_schema: list[Mapping[str, Any]], types: Mapping[str, str]) -> list[tuple[str, str, str]]:
    return sorted(
        ((k["KeyType"], k["AttributeName"], types.get(k["AttributeName"], "?")) for k in key_schema),
        key=lambda k: k[0],  # HASH before RANGE
    )


def _show_keys(keys: list[tuple[str, str, str]]) -> str:
    return ", ".join(f"{kind} {name} ({t})" for kind, name, t in keys) or "no keys"


_ALL_CHECKS: Final = (
    "table",
    "key schema",
    "indexes",
    "billing",
    "stream",
    "ttl",
    "dynamodb read",
    "dynamodb write",
    "bucket",
    "s3 read/write",
)
_S3_CHECKS: Final = frozenset({"s3 read/write"})
