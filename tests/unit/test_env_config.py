"""One set of environment variable names, read everywhere; AWS_REGION honoured (issue 13, items 1 and 4)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from langgraph.checkpoint.dynamodb import DynamoDBSaver
from langgraph.checkpoint.dynamodb.config import saver_kwargs_from_env
from langgraph.checkpoint.dynamodb.lambdas.handlers import StoreConfig

CANONICAL = {
    "LANGGRAPH_DYNAMODB_TABLE": "ckpt",
    "LANGGRAPH_DYNAMODB_BUCKET": "payloads",
    "LANGGRAPH_DYNAMODB_S3_KEY_PREFIX": "p/",
    "LANGGRAPH_DYNAMODB_TENANT_PREFIX": "acme",
    "LANGGRAPH_DYNAMODB_TTL_SECONDS": "3600",
}


@pytest.fixture
def no_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.mark.parametrize(
    "env,explicit,expected",
    [
        ({"AWS_REGION": "eu-west-1"}, None, "eu-west-1"),
        ({"AWS_DEFAULT_REGION": "us-west-2"}, None, "us-west-2"),
        ({"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-west-2"}, None, "eu-west-1"),
        ({"AWS_REGION": "eu-west-1"}, "ap-south-1", "ap-south-1"),
        ({}, None, None),
    ],
)
def test_region_precedence(env: dict[str, str], explicit: str | None, expected: str | None) -> None:
    from langgraph.checkpoint.dynamodb import config

    assert config.region_from_env(explicit, env) == expected


@pytest.mark.parametrize("var", ["AWS_REGION", "AWS_DEFAULT_REGION"])
def test_sync_saver_with_only_one_region_variable(
    no_aws_env: None, monkeypatch: pytest.MonkeyPatch, var: str
) -> None:
    """botocore reads only AWS_DEFAULT_REGION: with AWS_REGION alone it raised NoRegionError."""
    monkeypatch.setenv(var, "eu-central-1")
    with DynamoDBSaver(table_name="t", bucket_name="b") as saver:
        assert saver.clients["dynamodb"].meta.region_name == "eu-central-1"
        assert saver.clients["s3"].meta.region_name == "eu-central-1"


@pytest.mark.parametrize("var", ["AWS_REGION", "AWS_DEFAULT_REGION"])
async def test_async_saver_with_only_one_region_variable(
    no_aws_env: None, monkeypatch: pytest.MonkeyPatch, var: str
) -> None:
    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

    monkeypatch.setenv(var, "eu-central-1")
    async with AsyncDynamoDBSaver(table_name="t", bucket_name="b") as saver:
        assert saver.clients["dynamodb"].meta.region_name == "eu-central-1"


def test_explicit_region_wins(no_aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    with DynamoDBSaver(table_name="t") as saver:
        assert saver.clients["dynamodb"].meta.region_name == "eu-west-1"
    with DynamoDBSaver(table_name="t", region_name="ap-south-1") as saver:
        assert saver.clients["dynamodb"].meta.region_name == "ap-south-1"


def test_from_env_sync(no_aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in {**CANONICAL, "AWS_REGION": "eu-west-1"}.items():
        monkeypatch.setenv(k, v)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the canonical names never warn
        saver = DynamoDBSaver.from_env(s3_threshold=0)
    with saver:
        assert (saver.table_name, saver.bucket_name, saver.s3_key_prefix) == ("ckpt", "payloads", "p/")
        assert saver.tenant_prefix == "acme" and saver.ttl == 3600
        assert saver.clients["dynamodb"].meta.region_name == "eu-west-1"


async def test_from_env_async(no_aws_env: None) -> None:
    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

    saver = AsyncDynamoDBSaver.from_env({**CANONICAL, "AWS_REGION": "eu-west-1"})
    async with saver:
        assert (saver.table_name, saver.bucket_name, saver.ttl) == ("ckpt", "payloads", 3600)
        assert saver.clients["dynamodb"].meta.region_name == "eu-west-1"


def test_from_env_needs_a_table() -> None:
    with pytest.raises(ValueError, match="LANGGRAPH_DYNAMODB_TABLE"):
        DynamoDBSaver.from_env({})


#: The bare names the Lambda helpers read before the prefixed ones existed (never released).
BARE = {
    "TABLE_NAME": "ckpt",
    "BUCKET_NAME": "b",
    "S3_KEY_PREFIX": "p/",
    "THREAD_TTL_SECONDS": "60",
    "TRACK_THREADS": "1",
}


@pytest.mark.parametrize("read", [StoreConfig.from_env, saver_kwargs_from_env], ids=["handlers", "savers"])
def test_the_bare_names_are_not_read(read: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Only the ``LANGGRAPH_DYNAMODB_*`` names configure a saver: ``TABLE_NAME``... are the app's own."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning either: nothing reads them
        with pytest.raises(ValueError, match="LANGGRAPH_DYNAMODB_TABLE is not set"):
            read(BARE)
    assert caplog.records == []


def test_with_any_canonical_name_set_the_bare_names_are_the_applications(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The app's own BUCKET_NAME (its uploads) must not become where checkpoints go."""
    app = {
        "BUCKET_NAME": "app-user-uploads",
        "S3_KEY_PREFIX": "public/",
        "THREAD_TTL_SECONDS": "3600",
        "TRACK_THREADS": "1",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no deprecation warning about them either
        cfg = StoreConfig.from_env({"LANGGRAPH_DYNAMODB_TABLE": "ckpt", **app})
    assert (cfg.bucket_name, cfg.s3_key_prefix, cfg.ttl, cfg.track_threads) == (
        None,
        "checkpoints/",
        None,
        False,
    )
    assert caplog.records == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("true", True), ("Yes", True), ("on", True), ("0", False), ("false", False), ("no", False)],
)
def test_track_threads_reads_the_usual_spellings(value: str, expected: bool) -> None:
    cfg = StoreConfig.from_env({"LANGGRAPH_DYNAMODB_TABLE": "t", "LANGGRAPH_DYNAMODB_TRACK_THREADS": value})
    assert cfg.track_threads is expected


def test_a_misspelt_flag_or_a_blank_tenant_is_an_error_not_a_default() -> None:
    with pytest.raises(ValueError, match=r"LANGGRAPH_DYNAMODB_TRACK_THREADS.*'ture'"):
        StoreConfig.from_env({"LANGGRAPH_DYNAMODB_TABLE": "t", "LANGGRAPH_DYNAMODB_TRACK_THREADS": "ture"})
    # Blank must not quietly mean "no tenant": an untenanted saver maintains every tenant's threads.
    with pytest.raises(ValueError, match="LANGGRAPH_DYNAMODB_TENANT_PREFIX is set but blank"):
        StoreConfig.from_env({"LANGGRAPH_DYNAMODB_TABLE": "t", "LANGGRAPH_DYNAMODB_TENANT_PREFIX": " "})


@pytest.mark.parametrize("prefix", ["checkpoints", "/", "", "a/b"])
def test_the_s3_key_prefix_must_be_a_folder(no_aws_env: None, prefix: str) -> None:
    """Without the '/', the prefix also matches the bucket's other keys, which the orphan sweeper would delete."""
    with pytest.raises(ValueError, match="s3_key_prefix must be a folder"):
        DynamoDBSaver(table_name="t", bucket_name="b", region_name="us-east-1", s3_key_prefix=prefix)
    if prefix:
        with pytest.raises(ValueError, match="s3_key_prefix must be a folder"):
            DynamoDBSaver.from_env(
                {
                    "LANGGRAPH_DYNAMODB_TABLE": "t",
                    "LANGGRAPH_DYNAMODB_BUCKET": "b",
                    "AWS_REGION": "us-east-1",
                    "LANGGRAPH_DYNAMODB_S3_KEY_PREFIX": prefix,
                }
            )
    DynamoDBSaver(table_name="t", bucket_name="b", region_name="us-east-1", s3_key_prefix="a/b/").close()


def test_store_config_passes_region_and_tenant(no_aws_env: None) -> None:
    cfg = StoreConfig.from_env({**CANONICAL, "AWS_REGION": "eu-west-1"})
    saver: Any = cfg.saver()
    with saver:
        assert saver.tenant_prefix == "acme"
        assert saver.clients["dynamodb"].meta.region_name == "eu-west-1"


def test_cli_reads_aws_region(no_aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's advice said "set AWS_REGION"; with only that set, it used to say no region."""
    from langgraph.checkpoint.dynamodb.cli._commands import make_saver
    from langgraph.checkpoint.dynamodb.cli._parser import build_parser

    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    args = build_parser().parse_args(["threads", "--table", "t"])
    saver = make_saver(args)
    with saver:
        assert saver.clients["dynamodb"].meta.region_name == "eu-north-1"


def test_local_prints_the_canonical_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.checkpoint.dynamodb import config
    from langgraph.checkpoint.dynamodb.tools.local import LocalAWS

    aws = LocalAWS()
    # env() needs only the URL, no server
    monkeypatch.setattr(LocalAWS, "endpoint_url", property(lambda self: "http://127.0.0.1:1"))
    env = aws.env(table_name="t", bucket_name="b")
    assert env[config.ENV_TABLE] == "t" and env[config.ENV_BUCKET] == "b"
    assert env["AWS_REGION"] == env["AWS_DEFAULT_REGION"] == "us-east-1"
    kwargs = config.saver_kwargs_from_env(env)
    assert (kwargs["table_name"], kwargs["bucket_name"]) == ("t", "b")


def test_a_sessions_own_region_is_not_overridden(no_aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session the caller configured counts as explicit; AWS_REGION fills in only when it has none."""
    import boto3

    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    with DynamoDBSaver(table_name="t", boto3_session=boto3.session.Session(region_name="sa-east-1")) as saver:
        assert saver.clients["dynamodb"].meta.region_name == "sa-east-1"
    with DynamoDBSaver(table_name="t", boto3_session=boto3.session.Session()) as saver:
        assert saver.clients["dynamodb"].meta.region_name == "eu-west-1"


async def test_async_session_region_is_not_overridden(
    no_aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aiobotocore.session import get_session

    from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver

    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    session = get_session()
    session.set_config_variable("region", "sa-east-1")
    async with AsyncDynamoDBSaver(table_name="t", session=session) as saver:
        assert saver.clients["dynamodb"].meta.region_name == "sa-east-1"
    async with AsyncDynamoDBSaver(table_name="t", session=get_session()) as saver:
        assert saver.clients["dynamodb"].meta.region_name == "eu-west-1"


def test_aws_region_outranks_default_region_read_by_a_session(
    no_aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import boto3

    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    with DynamoDBSaver(table_name="t", boto3_session=boto3.session.Session()) as saver:
        assert saver.clients["dynamodb"].meta.region_name == "eu-west-1"
