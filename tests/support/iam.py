"""IAM for the tests: requests as IAM authorizes them, checked against synthesized roles.

moto enforces no IAM, so a handler that needs a permission its role lacks
passes every test on moto and fails when deployed. This module holds

- :class:`Request` and :func:`requests_of`: one DynamoDB or S3 API call as the
  authorization checks IAM makes for it: each element of a
  ``TransactWriteItems`` as the action it stands for (``ConditionCheck`` ->
  ``dynamodb:ConditionCheckItem``, ``Put`` -> ``PutItem``...; there is no
  ``dynamodb:TransactWriteItems`` action), ``CopyObject`` as a read of the
  source and a write of the target, ``DeleteObjects`` as one ``DeleteObject``
  per key, ``ListObjectsV2`` as ``s3:ListBucket``; with the condition keys
  the construct's grants use (``dynamodb:LeadingKeys``, ``s3:prefix``);
- an evaluator of a role's statements (:func:`matching`, :func:`why_denied`,
  :func:`check_role`), with IAM's ``StringLike`` semantics (``*``, ``?``),
  ``ForAllValues`` over the request's partition keys;
- :class:`Recorder`: records what given clients request
  (``tests/infra/test_role_calls.py``);
- :func:`function_roles` / :func:`reference_roles`: each Lambda function of
  the reference stack (``infra/``), its handler string and its role's
  statements, synthesized once per test session in a subprocess and shared by
  the xdist workers through a file;
- :class:`HandlerGuard`: attributes every request issued while a Lambda
  handler runs (``langgraph.checkpoint.dynamodb.lambdas.*.handler``,
  ``lambdas/<name>/handler.py``) to that handler's function, for
  ``tests/conftest.py`` to check against the function's role after each test.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: The store table's key attribute whose value is ``dynamodb:LeadingKeys`` (schema.ATTR.PK).
PK = "PK"
#: A partition key the evaluator could not read from a request: no LeadingKeys pattern matches it.
UNKNOWN_KEY = "<unreadable partition key>"
#: The resource of a request whose resource the translation does not know (another service's,
#: an account-wide call): only its action is checked.
ANY_RESOURCE = "<any resource>"
#: Stand-ins for the store's table ARN, bucket ARN and key prefix in requests a
#: :class:`HandlerGuard` records; the evaluation puts the template's in their place.
TABLE_TOKEN = "<table>"
BUCKET_TOKEN = "<bucket>"
PREFIX_TOKEN = "<prefix>"
#: The reference stack (infra/app.py) as ``cdk synth`` builds it.
REFERENCE_STACK = "LangGraphCheckpointStack"

#: A TransactWriteItems element -> the IAM action that authorizes it
#: (docs: "Using IAM with DynamoDB transactions").
TRANSACT_ACTIONS = {
    "ConditionCheck": "ConditionCheckItem",
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
}


@dataclass(frozen=True)
class Request:
    """One authorization check a request makes: IAM action, resource, condition keys."""

    action: str
    resource: str
    leading_keys: frozenset[str] = frozenset()
    s3_prefix: str | None = None


@dataclass(frozen=True)
class Store:
    """How to name a store's resources in :class:`Request` s.

    ``table_arn``/``bucket_arn`` stand for the table and bucket named
    ``table``/``bucket`` (any other is named by a plain ARN, which no grant
    matches). With ``key_prefix``, an object key under the store's key prefix
    is written with ``prefix_as`` in its place: a store configured with
    another prefix is checked as the deployed one (whose grants name its
    prefix).
    """

    table: str
    bucket: str | None
    table_arn: str
    bucket_arn: str
    key_prefix: str | None = None
    prefix_as: str = ""

    def table_resource(self, name: str, index: str | None = None) -> str:
        arn = self.table_arn if name == self.table else f"arn:aws:dynamodb:*:*:table/{name}"
        return f"{arn}/index/{index}" if index else arn

    def bucket_resource(self, bucket: str) -> str:
        return self.bucket_arn if bucket == self.bucket else f"arn:aws:s3:::{bucket}"

    def key(self, bucket: str, key: str) -> str:
        if bucket == self.bucket and self.key_prefix is not None and key.startswith(self.key_prefix):
            return self.prefix_as + key[len(self.key_prefix) :]
        return key

    def object_resource(self, bucket: str, key: str) -> str:
        return f"{self.bucket_resource(bucket)}/{self.key(bucket, key)}"


# ------------------------------------------------------------ requests


def _pk_of(key: Mapping[str, Any]) -> str:
    value = key.get(PK)
    return value["S"] if isinstance(value, Mapping) and "S" in value else UNKNOWN_KEY


_KEY_CONDITION = re.compile(r"(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)")


def _query_pk(p: Mapping[str, Any]) -> str:
    """The partition key value a table ``Query``'s key condition names."""
    names = p.get("ExpressionAttributeNames", {})
    values = p.get("ExpressionAttributeValues", {})
    for name, value in _KEY_CONDITION.findall(p.get("KeyConditionExpression", "")):
        if names.get(name, name) == PK:
            found = values.get(value, {})
            return str(found.get("S", UNKNOWN_KEY))
    return UNKNOWN_KEY


def _dynamodb(op: str, p: Mapping[str, Any], store: Store) -> Iterator[Request]:
    if op == "TransactWriteItems":
        for element in p["TransactItems"]:
            ((kind, body),) = element.items()
            key = body["Item"] if kind == "Put" else body["Key"]
            action = TRANSACT_ACTIONS.get(kind, kind)
            yield Request(
                f"dynamodb:{action}", store.table_resource(body["TableName"]), frozenset({_pk_of(key)})
            )
        return
    if op == "TransactGetItems":
        for element in p["TransactItems"]:
            body = element["Get"]
            yield Request(
                "dynamodb:GetItem", store.table_resource(body["TableName"]), frozenset({_pk_of(body["Key"])})
            )
        return
    if op in ("BatchGetItem", "BatchWriteItem"):
        for table, entries in p["RequestItems"].items():
            if op == "BatchGetItem":
                batch = {_pk_of(k) for k in entries["Keys"]}
            else:
                batch = {
                    _pk_of(r["PutRequest"]["Item"] if "PutRequest" in r else r["DeleteRequest"]["Key"])
                    for r in entries
                }
            yield Request(f"dynamodb:{op}", store.table_resource(table), frozenset(batch))
        return
    if "TableName" not in p:
        yield Request(f"dynamodb:{op}", ANY_RESOURCE)
        return
    resource = store.table_resource(p["TableName"], p.get("IndexName"))
    keys: set[str] = set()
    if op in ("GetItem", "DeleteItem", "UpdateItem"):
        keys.add(_pk_of(p["Key"]))
    elif op == "PutItem":
        keys.add(_pk_of(p["Item"]))
    elif op == "Query" and "IndexName" not in p:
        # On an index, LeadingKeys would be the index's partition key; the
        # construct puts no condition on index queries.
        keys.add(_query_pk(p))
    yield Request(f"dynamodb:{op}", resource, frozenset(keys))


def _copy_source(source: Any) -> tuple[str, str, bool]:
    """(bucket, key, versioned) of a ``CopySource`` (dict, or ``bucket/key[?versionId=...]``)."""
    if isinstance(source, Mapping):
        return source["Bucket"], source["Key"], "VersionId" in source
    text = str(source).lstrip("/")
    path, _, query = text.partition("?versionId=")
    bucket, _, key = path.partition("/")
    from urllib.parse import unquote

    return bucket, unquote(key), bool(query)


#: S3 API operation -> the IAM action that authorizes it, where they differ
#: (docs: "Amazon S3 API operations and the permissions they need").
_S3_OBJECT_ACTIONS = {
    "HeadObject": "GetObject",
    "CreateMultipartUpload": "PutObject",
    "UploadPart": "PutObject",
    "CompleteMultipartUpload": "PutObject",
    "ListParts": "ListMultipartUploadParts",
}


def _s3(op: str, p: Mapping[str, Any], store: Store) -> Iterator[Request]:
    bucket = p.get("Bucket")
    if bucket is None:
        yield Request(f"s3:{op}", ANY_RESOURCE)
        return
    if op in ("ListObjectsV2", "ListObjects", "ListObjectVersions"):
        action = "s3:ListBucketVersions" if op == "ListObjectVersions" else "s3:ListBucket"
        yield Request(action, store.bucket_resource(bucket), s3_prefix=store.key(bucket, p.get("Prefix", "")))
    elif op == "HeadBucket":
        yield Request("s3:ListBucket", store.bucket_resource(bucket))
    elif op == "DeleteObjects":
        for obj in p["Delete"]["Objects"]:
            action = "s3:DeleteObjectVersion" if "VersionId" in obj else "s3:DeleteObject"
            yield Request(action, store.object_resource(bucket, obj["Key"]))
    elif op == "CopyObject":
        src_bucket, src_key, versioned = _copy_source(p["CopySource"])
        read = "s3:GetObjectVersion" if versioned else "s3:GetObject"
        yield Request(read, store.object_resource(src_bucket, src_key))
        yield Request("s3:PutObject", store.object_resource(bucket, p["Key"]))
    elif "Key" in p:
        action = _S3_OBJECT_ACTIONS.get(op, op)
        if "VersionId" in p and action in ("GetObject", "DeleteObject"):
            action += "Version"
        yield Request(f"s3:{action}", store.object_resource(bucket, p["Key"]))
    else:
        yield Request(f"s3:{op}", store.bucket_resource(bucket))


def requests_of(service: str, op: str, params: Mapping[str, Any], store: Store) -> list[Request]:
    """The authorization checks of one API call (``op`` as botocore names it, e.g. ``PutItem``)."""
    if service == "dynamodb":
        return list(_dynamodb(op, params, store))
    if service == "s3":
        return list(_s3(op, params, store))
    # Another service (the construct grants its resources by ARN): the action alone is checked.
    return [Request(f"{service}:{op}", ANY_RESOURCE)]


@dataclass
class Recorder:
    """Records the requests of the clients it is attached to (thread-safe: batches run in threads)."""

    table: str
    bucket: str
    #: How the synthesized template names the table's and the bucket's ARNs.
    table_arn: str = "<CheckpointStoreTable.Arn>"
    bucket_arn: str = "<CheckpointStoreBucket.Arn>"
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, client: Any) -> Any:
        client.meta.events.register("before-parameter-build.*.*", self._hook)
        return client

    def _hook(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        store = Store(self.table, self.bucket, self.table_arn, self.bucket_arn)
        found = requests_of(model.service_model.service_name, model.name, params, store)
        with self.lock:
            self.requests.extend(found)


# ------------------------------------------------------------ evaluation


@functools.lru_cache(maxsize=1024)
def _like(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(rx, flags=re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def string_like(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    """IAM's StringLike: ``*`` any run of characters, ``?`` exactly one, the rest literal."""
    return _like(pattern, ignore_case).fullmatch(value) is not None


def _listed(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def failed_condition(condition: Mapping[str, Any], req: Request) -> str | None:
    """The first condition of a statement ``req`` does not meet (described), or None."""
    for operator, entries in condition.items():
        for key, raw in entries.items():
            values = [str(v) for v in _listed(raw)]
            if key == "dynamodb:LeadingKeys" and operator in (
                "ForAllValues:StringEquals",
                "ForAllValues:StringLike",
            ):
                like = operator.endswith("Like")
                outside = sorted(
                    k
                    for k in req.leading_keys
                    if not any(string_like(v, k) if like else v == k for v in values)
                )
                if outside:
                    return f"{operator} dynamodb:LeadingKeys {values}, partition keys {outside}"
            elif key == "s3:prefix" and operator == "StringLike":
                if req.s3_prefix is None or not any(string_like(v, req.s3_prefix) for v in values):
                    return f"StringLike s3:prefix {values}, prefix {req.s3_prefix!r}"
            else:
                raise AssertionError(f"the evaluator does not know {operator} {key}")
    return None


def condition_holds(condition: Mapping[str, Any], req: Request) -> bool:
    return failed_condition(condition, req) is None


def _action_granted(statement: Mapping[str, Any], action: str) -> bool:
    return any(string_like(a, action, ignore_case=True) for a in statement["Action"])


def _resource_granted(statement: Mapping[str, Any], resource: str) -> bool:
    return resource == ANY_RESOURCE or any(string_like(r, resource) for r in statement["Resource"])


def _check_supported(statement: Mapping[str, Any]) -> None:
    unknown = set(statement) - {"Action", "Resource", "Condition", "Effect", "Sid"}
    if statement.get("Effect", "Allow") != "Allow" or unknown:
        raise AssertionError(f"the evaluator handles Allow statements with Action/Resource only: {statement}")


def matching(statements: Sequence[Mapping[str, Any]], req: Request) -> list[int]:
    """Indexes of the (normalized, see :func:`normalize`) Allow statements that authorize ``req``."""
    out = []
    for i, stmt in enumerate(statements):
        _check_supported(stmt)
        if (
            _action_granted(stmt, req.action)
            and _resource_granted(stmt, req.resource)
            and condition_holds(stmt.get("Condition", {}), req)
        ):
            out.append(i)
    return out


def why_denied(statements: Sequence[Mapping[str, Any]], req: Request) -> str:
    """Why no statement authorizes ``req``: no such action, not on this resource, or a condition."""
    granting = [s for s in statements if _action_granted(s, req.action)]
    if not granting:
        return f"no statement grants {req.action}"
    on_resource = [s for s in granting if _resource_granted(s, req.resource)]
    if not on_resource:
        where = sorted({r for s in granting for r in s["Resource"]})
        return f"{req.action} is granted on {where} only"
    failed = [failed_condition(s.get("Condition", {}), req) for s in on_resource]
    return "condition not met: " + "; ".join(f for f in failed if f)


def check_role(
    statements: Sequence[Mapping[str, Any]], requests: Iterable[Request], role: str, *, all_used: bool = True
) -> None:
    """Every request is allowed, and (``all_used``) every granted action was used by one."""
    used: set[tuple[int, str]] = set()
    denied: dict[Request, str] = {}
    for req in requests:
        found = matching(statements, req)
        if not found:
            denied.setdefault(req, why_denied(statements, req))
        used.update((i, req.action) for i in found)
    shown = [
        f"{r.action} on {r.resource} ({why})" for r, why in sorted(denied.items(), key=lambda x: str(x[0]))
    ]
    assert not denied, f"{role}: requests its role does not allow: {shown[:10]}"
    if not all_used:
        return
    unused = [
        (a, stmt["Resource"])
        for i, stmt in enumerate(statements)
        for a in stmt["Action"]
        if (i, a) not in used
    ]
    assert not unused, f"{role}: granted but never called: {unused}"


# ------------------------------------------------------------ templates


def flatten(value: Any) -> str:
    """Render an intrinsic as text: ``Fn::GetAtt`` as ``<Id.Attr>``, ``Ref`` as ``<Id>``."""
    if isinstance(value, str):
        return value
    if "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(flatten(p) for p in parts)
    raise AssertionError(f"unexpected intrinsic {value}")


def normalize(statement: Mapping[str, Any]) -> dict[str, Any]:
    """A statement with ``Action`` a sorted list and ``Resource`` a list of flattened strings."""
    out = dict(statement)
    out["Action"] = sorted(_listed(statement["Action"]))
    out["Resource"] = [flatten(r) for r in _listed(statement["Resource"])]
    if "Condition" in out:
        out["Condition"] = {
            op: {k: [flatten(v) for v in _listed(vs)] for k, vs in entries.items()}
            for op, entries in out["Condition"].items()
        }
    return out


def data_statements(statements: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The table and bucket statements (logs, DLQ, key and stream access are the Lambda service's)."""
    return [
        s
        for s in map(normalize, statements)
        if s["Action"][0].split(":")[0] in ("dynamodb", "s3")
        and not [r for r in s["Resource"] if r == "*" or "StreamArn" in r]
    ]


def role_policy_statements(template: Mapping[str, Any], role_id: str) -> list[dict[str, Any]]:
    """Every statement of the policies attached to role ``role_id``, normalized."""
    out = []
    for res in template["Resources"].values():
        if res["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in res["Properties"]["Roles"]:
            out += [normalize(s) for s in res["Properties"]["PolicyDocument"]["Statement"]]
    return out


@dataclass(frozen=True)
class FunctionRole:
    """A Lambda function of a template: its handler, its role's statements, its store."""

    function: str  # logical id
    handler: str
    role: str  # logical id
    statements: tuple[dict[str, Any], ...]
    table_arn: str
    bucket_arn: str
    key_prefix: str

    def resolve(self, req: Request) -> Request:
        """``req`` (recorded with the TABLE/BUCKET/PREFIX tokens) in this template's names."""

        def sub(text: str) -> str:
            return (
                text.replace(TABLE_TOKEN, self.table_arn)
                .replace(BUCKET_TOKEN, self.bucket_arn)
                .replace(PREFIX_TOKEN, self.key_prefix)
            )

        return replace(
            req, resource=sub(req.resource), s3_prefix=None if req.s3_prefix is None else sub(req.s3_prefix)
        )


def function_roles(template: Mapping[str, Any]) -> dict[str, FunctionRole]:
    """Handler string -> the function that runs it, for every Lambda function of ``template``."""
    out: dict[str, FunctionRole] = {}
    for fid, res in template["Resources"].items():
        if res["Type"] != "AWS::Lambda::Function" or "Handler" not in res["Properties"]:
            continue
        props = res["Properties"]
        role_id = props["Role"]["Fn::GetAtt"][0]
        env = props.get("Environment", {}).get("Variables", {})
        table = env.get("LANGGRAPH_DYNAMODB_TABLE")
        bucket = env.get("LANGGRAPH_DYNAMODB_BUCKET")
        if table is None:
            continue  # not a function of the store (a custom resource's, the CDK's own)
        handler = props["Handler"]
        assert handler not in out, f"two functions run {handler}: {out[handler].function}, {fid}"
        out[handler] = FunctionRole(
            function=fid,
            handler=handler,
            role=role_id,
            statements=tuple(role_policy_statements(template, role_id)),
            table_arn=flatten(table)[:-1] + ".Arn>" if isinstance(table, dict) else table,
            bucket_arn=flatten(bucket)[:-1] + ".Arn>" if isinstance(bucket, dict) else str(bucket),
            key_prefix=str(env.get("LANGGRAPH_DYNAMODB_S3_KEY_PREFIX", "checkpoints/")),
        )
    return out


def synthesize_reference_template(outdir: Path) -> dict[str, Any]:
    """The reference stack's template, as ``cdk synth`` builds it (bundling skipped, no nag).

    Needs the ``cdk`` extra; run it in a process of its own (:func:`reference_roles` does):
    ``import aws_cdk`` starts a Node process that lives as long as its interpreter.
    """
    from aws_cdk import App, Stack
    from infra.app import build_app

    lambdas = outdir / "lambdas"
    (lambdas / "agent").mkdir(parents=True, exist_ok=True)  # the maintenance handlers are in the package
    (lambdas / "agent" / "handler.py").write_text("def handler(event, context):\n    return {}\n")
    app = App(
        context={
            "aws:cdk:bundling-stacks": [],
            "@aws-cdk/core:failSynthOnValidationErrors": False,
            "lambda_code_dir": str(lambdas),
            "nag": False,
        },
        outdir=str(outdir / "cdk.out"),
        builtin_cloud_formation_validation=False,
        stack_traces=False,
    )
    build_app(app)
    assembly = app.synth()
    (stack,) = [c for c in app.node.children if isinstance(c, Stack) and c.node.id == REFERENCE_STACK]
    return assembly.get_stack_by_name(stack.stack_name).template  # type: ignore[no-any-return]


def cdk_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("aws_cdk") is not None


def reference_roles(cache_dir: Path) -> dict[str, FunctionRole] | None:
    """The reference stack's functions, synthesized once into ``cache_dir`` (None: no cdk extra).

    xdist workers share ``cache_dir``: the first to get here synthesizes (in
    a subprocess, about 5 s), the others wait on the lock and read the file.
    """
    if not cdk_available():
        return None
    import fcntl

    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / "reference-template.json"
    with open(cache_dir / "reference-template.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            env = {k: v for k, v in os.environ.items() if not k.startswith("CDK_")}
            env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
            env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
            done = subprocess.run(
                [sys.executable, "-m", "tests.support.iam", str(cache_dir / "synth"), str(path)],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            if done.returncode:
                raise RuntimeError(f"synthesizing the reference stack failed:\n{done.stderr[-3000:]}")
    return function_roles(json.loads(path.read_text()))


# ------------------------------------------------------------ the guard


@dataclass(frozen=True)
class Record:
    """A request issued while a handler ran, and the handler(s) it is attributed to."""

    handlers: tuple[str, ...]
    operation: str
    requests: tuple[Request, ...]
    error: str | None = None  # the request could not be read


@dataclass
class Denial:
    """A request the role of the function it is attributed to does not allow."""

    message: str
    count: int = 1


#: Modules whose ``handler`` is a Lambda entry point: the package's jobs...
PACKAGE_HANDLERS = "langgraph.checkpoint.dynamodb.lambdas."
#: ... and the repository's ``lambdas/<name>/handler.py`` (the agent; re-exports of the jobs).
REPO_HANDLERS = re.compile(r"^lambdas\.[A-Za-z0-9_]+\.handler$")


def handler_string(module: str) -> str:
    """The Lambda handler string that runs ``module.handler``.

    The package's jobs run as ``langgraph.checkpoint.dynamodb.lambdas.<job>.handler``;
    a handler under the repository's ``lambdas/`` ships in an asset whose root is
    that folder (``agent.handler.handler``).
    """
    if module.startswith("lambdas."):
        module = module[len("lambdas.") :]
    return f"{module}.handler"


def _is_handler_module(name: str) -> bool:
    if name.startswith(PACKAGE_HANDLERS):
        tail = name[len(PACKAGE_HANDLERS) :]
        return "." not in tail and tail != "metrics" and not tail.startswith("_")
    return REPO_HANDLERS.match(name) is not None


class _WrappingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, guard: HandlerGuard) -> None:
        self._loader = loader
        self._guard = guard

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._guard.wrap_module(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps ``handler`` in each handler module as it is imported."""

    def __init__(self, guard: HandlerGuard) -> None:
        self._guard = guard

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if not _is_handler_module(name):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _WrappingLoader(spec.loader, self._guard)
                return spec
        return None


class HandlerGuard:
    """Attributes the DynamoDB and S3 requests a Lambda handler issues to its function.

    Installed once per test process (:meth:`install`): every handler
    function is wrapped as its module is imported, botocore's
    ``BaseClient._make_api_call`` is patched, and so is client creation.
    While a handler runs, a request is the handler's when it goes through

    - a client of the handlers' cached saver (``handlers._saver``, what
      every handler works through, its lease-bound copies and worker
      threads included), or
    - a client created on the handler's thread while the handler ran.

    Requests the test itself sends meanwhile (its own clients, from its own
    threads) are not. If two different handlers run at once on the cached
    saver, a request from a worker thread may be either's: it is allowed if
    one of their roles allows it. The request is recorded as the
    authorization checks IAM makes (:func:`requests_of`), the store's table,
    bucket and key prefix written as tokens that the evaluation replaces
    with the template's (the tests' stores have random names).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: dict[int, str] = {}
        self._active: Counter[str] = Counter()
        self._created: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._records: list[Record] = []
        self._installed = False

    # -- installation

    def install(self) -> None:
        if self._installed:
            return
        self._installed = True
        import botocore.client
        import botocore.session

        guard = self
        make_api_call = botocore.client.BaseClient._make_api_call
        create_client = botocore.session.Session.create_client

        @functools.wraps(make_api_call)
        def _make_api_call(client: Any, operation_name: str, api_params: dict[str, Any]) -> Any:
            if guard._active:
                guard._observe(client, operation_name, api_params)
            return make_api_call(client, operation_name, api_params)

        @functools.wraps(create_client)
        def _create_client(session: Any, *args: Any, **kwargs: Any) -> Any:
            client = create_client(session, *args, **kwargs)
            if guard._active:
                running = guard._threads.get(threading.get_ident())
                if running is not None:
                    with guard._lock:
                        guard._created[client] = running
            return client

        botocore.client.BaseClient._make_api_call = _make_api_call  # type: ignore[method-assign]
        botocore.session.Session.create_client = _create_client  # type: ignore[method-assign]
        sys.meta_path.insert(0, _Finder(self))
        for name, module in list(sys.modules.items()):
            if module is not None and _is_handler_module(name):
                self.wrap_module(module)

    def wrap_module(self, module: ModuleType) -> None:
        fn = getattr(module, "handler", None)
        if fn is None or not callable(fn) or hasattr(fn, "__iam_handler__"):
            return  # absent, or already wrapped (a re-export of a wrapped handler)
        module.handler = self._wrap(fn, handler_string(module.__name__))  # type: ignore[attr-defined]

    def _wrap(self, fn: Any, name: str) -> Any:
        guard = self

        @functools.wraps(fn)
        def handler(*args: Any, **kwargs: Any) -> Any:
            with guard.running(name):
                return fn(*args, **kwargs)

        handler.__iam_handler__ = name  # type: ignore[attr-defined]
        return handler

    @contextlib.contextmanager
    def running(self, name: str) -> Iterator[None]:
        """Attribute what is issued meanwhile to handler ``name`` (the wrappers use this)."""
        ident = threading.get_ident()
        with self._lock:
            outer = self._threads.get(ident)
            self._threads[ident] = name
            self._active[name] += 1
        try:
            yield
        finally:
            with self._lock:
                if outer is None:
                    del self._threads[ident]
                else:
                    self._threads[ident] = outer
                self._active[name] -= 1
                if not self._active[name]:
                    del self._active[name]

    # -- recording

    def _attribute(self, client: Any) -> tuple[str, ...]:
        from langgraph.checkpoint.dynamodb.lambdas import handlers

        here = self._threads.get(threading.get_ident())
        created = self._created.get(client)
        saver = handlers.cached_saver()
        if created is None and not (saver is not None and any(client is c for c in saver.clients.values())):
            return ()
        if here is not None:
            return (here,)
        if created is not None:
            return (created,)
        with self._lock:
            return tuple(sorted(self._active))

    @staticmethod
    def _store() -> Store:
        from langgraph.checkpoint.dynamodb.lambdas import handlers

        saver: Any = handlers.cached_saver()
        if saver is None:
            try:
                saver = handlers.StoreConfig.from_env()
            except ValueError:
                saver = None
        return Store(
            table=getattr(saver, "table_name", ""),
            bucket=getattr(saver, "bucket_name", None),
            table_arn=TABLE_TOKEN,
            bucket_arn=BUCKET_TOKEN,
            key_prefix=getattr(saver, "s3_key_prefix", None),
            prefix_as=PREFIX_TOKEN,
        )

    def _observe(self, client: Any, op: str, params: Mapping[str, Any]) -> None:
        names = self._attribute(client)
        if not names:
            return
        service = client.meta.service_model.service_name
        try:
            record = Record(names, f"{service}.{op}", tuple(requests_of(service, op, params, self._store())))
        except Exception as exc:  # a request the translation cannot read must not pass unseen
            record = Record(names, f"{service}.{op}", (), error=f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._records.append(record)

    def mark(self) -> int:
        with self._lock:
            return len(self._records)

    def since(self, mark: int) -> list[Record]:
        with self._lock:
            return self._records[mark:]


def denials(records: Iterable[Record], roles: Mapping[str, FunctionRole]) -> list[Denial]:
    """The requests of ``records`` that the role of the function they are attributed to does not allow."""
    found: dict[str, Denial] = {}
    for rec in records:
        if rec.error is not None:
            messages = [
                f"{'/'.join(rec.handlers)}: {rec.operation}: the request could not be read ({rec.error})"
            ]
        else:
            messages = []
            for req in rec.requests:
                reasons = []
                for name in rec.handlers:
                    fn = roles.get(name)
                    if fn is None:
                        reasons.append(f"no function of the reference stack runs handler {name}")
                        continue
                    resolved = fn.resolve(req)
                    if matching(fn.statements, resolved):
                        break
                    reasons.append(
                        f"function {fn.function} (handler {name}, role {fn.role}): {resolved.action} on "
                        f"{resolved.resource}: {why_denied(fn.statements, resolved)}"
                    )
                else:
                    messages.append(f"{' | '.join(reasons)} [{rec.operation}]")
        for message in messages:
            if message in found:
                found[message].count += 1
            else:
                found[message] = Denial(message)
    return list(found.values())


def describe(found: Iterable[Denial], limit: int = 20) -> str:
    lines = [f"- {d.message}" + (f" (x{d.count})" if d.count > 1 else "") for d in found]
    more = len(lines) - limit
    return "\n".join(lines[:limit] + ([f"... and {more} more"] if more > 0 else []))


#: The test process's guard (tests/conftest.py installs it).
GUARD = HandlerGuard()


def _main(argv: list[str]) -> None:
    """``python -m tests.support.iam OUTDIR FILE``: synthesize the reference template into FILE."""
    outdir, out = Path(argv[0]), Path(argv[1])
    template = synthesize_reference_template(outdir)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(template))
    tmp.replace(out)


if __name__ == "__main__":
    _main(sys.argv[1:])
