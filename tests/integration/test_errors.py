"""Errors at the AWS boundary name the table or bucket and say what to do (issue 13, item 5).

Against the moto server through real clients, sync and async: a missing table,
a missing bucket, and a loopback endpoint nobody listens on (which must fail
within seconds, not after botocore's ~40 s of retries).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from langgraph.checkpoint.dynamodb import AsyncDynamoDBSaver, DynamoDBSaver, errors
from langgraph.checkpoint.dynamodb.errors import CheckpointStoreError
from tests.support.harness import cfg, checkpoint_of, new_thread

MODES = ["sync", "async"]


def _call(mode: str, loop: Any, saver: Any, name: str, *args: Any) -> Any:
    if mode == "sync":
        return getattr(saver, name)(*args)
    return loop.run(getattr(saver, name if name == "setup" else "a" + name)(*args))


def _saver(mode: str, **kw: Any) -> Any:
    return DynamoDBSaver(**kw) if mode == "sync" else AsyncDynamoDBSaver(**kw)


def _close(mode: str, loop: Any, saver: Any) -> None:
    if mode == "sync":
        saver.close()
    else:
        loop.run(saver.aclose())


@pytest.mark.parametrize("mode", MODES)
def test_missing_table_is_named_with_advice(mode: str, moto_endpoint: str, loop_thread: Any) -> None:
    table = f"no-such-table-{uuid.uuid4().hex[:8]}"
    saver = _saver(mode, table_name=table)
    try:
        with pytest.raises(errors.StoreNotFoundError) as info:
            _call(mode, loop_thread, saver, "get_tuple", cfg(new_thread()))
    finally:
        _close(mode, loop_thread, saver)
    text = str(info.value)
    assert repr(table) in text and "setup()" in text and "CheckpointStore" in text, text
    assert "region us-east-1" in text and moto_endpoint in text, text
    # Still the botocore error underneath: code that checks the code keeps working.
    assert isinstance(info.value, ClientError) and isinstance(info.value, CheckpointStoreError)
    assert info.value.response["Error"]["Code"] == "ResourceNotFoundException"


@pytest.mark.parametrize("mode", MODES)
def test_missing_bucket_is_named_with_advice(
    mode: str, moto_endpoint: str, loop_thread: Any, names: dict[str, str]
) -> None:
    """The async Quick start against a store without that bucket: a raw NoSuchBucket named nothing."""
    DynamoDBSaver(table_name=names["table_name"]).setup()  # the table only
    bucket = f"no-such-bucket-{uuid.uuid4().hex[:8]}"
    saver = _saver(mode, table_name=names["table_name"], bucket_name=bucket)
    try:
        cp = checkpoint_of({"big": os.urandom(100_000)})  # incompressible: over s3_threshold
        with pytest.raises(errors.StoreNotFoundError) as info:
            _call(mode, loop_thread, saver, "put", cfg(new_thread()), cp, {}, {"big": "1"})
    finally:
        _close(mode, loop_thread, saver)
    text = str(info.value)
    assert repr(bucket) in text and "setup()" in text and "LANGGRAPH_DYNAMODB_BUCKET" in text, text
    assert "langgraph-dynamodb doctor" in text, text  # issue 39: the first use of the bucket names doctor
    assert info.value.response["Error"]["Code"] == "NoSuchBucket"


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: nothing listens there


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_dead_local_endpoint_fails_within_seconds(mode: str, host: str, loop_thread: Any) -> None:
    url = f"http://{host}:{_dead_port()}"
    saver = _saver(mode, table_name="t", endpoint_url=url)
    start = time.monotonic()
    try:
        with pytest.raises(errors.EndpointUnreachableError) as info:
            _call(mode, loop_thread, saver, "get_tuple", cfg(new_thread()))
    finally:
        _close(mode, loop_thread, saver)
    elapsed = time.monotonic() - start
    assert elapsed < 5, f"took {elapsed:.1f}s"  # botocore's retries took ~43 s
    assert "langgraph-dynamodb local" in str(info.value) and url in str(info.value)
    assert isinstance(info.value, EndpointConnectionError)


def test_only_loopback_endpoints_skip_retries() -> None:
    """Retries against AWS (and any other host) are untouched."""
    from langgraph.checkpoint.dynamodb._engine.aws import is_local_endpoint

    assert is_local_endpoint("http://127.0.0.1:4566") and is_local_endpoint("http://localhost:8000")
    assert is_local_endpoint("http://[::1]:8000")
    assert not is_local_endpoint("https://dynamodb.eu-west-1.amazonaws.com")
    assert not is_local_endpoint("http://10.0.0.5:4566") and not is_local_endpoint(None)


@pytest.mark.parametrize("mode", MODES)
def test_missing_table_and_bucket_name_doctor(mode: str, moto_endpoint: str, loop_thread: Any) -> None:
    """Issue 39, item 4: a store error names the command that checks the whole set-up."""
    saver = _saver(mode, table_name=f"no-such-table-{uuid.uuid4().hex[:8]}")
    try:
        with pytest.raises(errors.StoreNotFoundError, match="langgraph-dynamodb doctor"):
            _call(mode, loop_thread, saver, "get_tuple", cfg(new_thread()))
    finally:
        _close(mode, loop_thread, saver)


@pytest.mark.parametrize("mode", MODES)
def test_setup_refuses_a_bucket_in_another_region(
    mode: str, moto_endpoint: str, loop_thread: Any, names: dict[str, str]
) -> None:
    """A bucket name that is taken in another region is caught by ``setup()``, not mid-run."""
    import boto3

    bucket = f"eu-bucket-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", region_name="eu-west-1").create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}
    )
    saver = _saver(mode, table_name=names["table_name"], bucket_name=bucket, region_name="us-east-1")
    try:
        with pytest.raises(errors.BucketUnusableError) as info:
            _call(mode, loop_thread, saver, "setup")
    finally:
        _close(mode, loop_thread, saver)
    text = str(info.value)
    assert repr(bucket) in text and "eu-west-1" in text and "langgraph-dynamodb doctor" in text, text
    assert isinstance(info.value, ClientError)


@pytest.mark.parametrize("mode", MODES)
def test_setup_accepts_its_own_bucket_again(
    mode: str, moto_endpoint: str, loop_thread: Any, names: dict[str, str]
) -> None:
    """The region check passes a bucket in the saver's own region (a second ``setup()`` is a no-op)."""
    saver = _saver(mode, table_name=names["table_name"], bucket_name=names["bucket_name"])
    try:
        _call(mode, loop_thread, saver, "setup")
        _call(mode, loop_thread, saver, "setup")
    finally:
        _close(mode, loop_thread, saver)


@pytest.mark.parametrize("mode", MODES)
def test_missing_credentials_get_a_hint(
    mode: str, moto_endpoint: str, loop_thread: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No credentials anywhere: a message that says where they come from, like the missing region's."""
    from botocore.exceptions import NoCredentialsError

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    saver = _saver(mode, table_name="t")
    try:
        with pytest.raises(errors.CredentialsNotFoundError) as info:
            _call(mode, loop_thread, saver, "get_tuple", cfg(new_thread()))
    finally:
        _close(mode, loop_thread, saver)
    text = str(info.value)
    assert "AWS_ACCESS_KEY_ID" in text and "local.env" in text and "doctor" in text, text
    assert isinstance(info.value, NoCredentialsError) and isinstance(info.value, CheckpointStoreError)


@pytest.mark.parametrize("mode", MODES)
def test_empty_thread_id_says_it_is_empty(mode: str, moto_endpoint: str, loop_thread: Any) -> None:
    saver = _saver(mode, table_name="t")
    try:
        with pytest.raises(ValueError, match="thread_id'] is empty"):
            _call(mode, loop_thread, saver, "get_tuple", {"configurable": {"thread_id": ""}})
        with pytest.raises(ValueError, match="thread_id'] is required"):
            _call(mode, loop_thread, saver, "get_tuple", {"configurable": {}})
    finally:
        _close(mode, loop_thread, saver)


@pytest.mark.parametrize("code", ["AccessDenied", "403", "PermanentRedirect"])
def test_a_bucket_that_is_not_ours_is_named_with_doctor(code: str) -> None:
    """S3's 403/301 (no IAM in moto): the first request that meets the bucket says what to check."""
    from langgraph.checkpoint.dynamodb._engine.aws import translate_errors

    class _Saver:
        table_name, bucket_name, clients = "t", "someone-elses", {}

    def op() -> Any:
        raise ClientError({"Error": {"Code": code, "Message": "denied"}}, "PutObject")
        yield  # a generator, like every operation

    with pytest.raises(errors.BucketUnusableError) as info:
        next(translate_errors(op(), _Saver()))
    assert "'someone-elses'" in str(info.value) and "langgraph-dynamodb doctor" in str(info.value)
    assert info.value.response["Error"]["Code"] == code
