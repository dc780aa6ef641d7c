"""``handlers.StoreConfig``: the environment every Lambda of the stack reads."""

from __future__ import annotations

import pytest

from langgraph.checkpoint.dynamodb.lambdas.handlers import StoreConfig

T = "LANGGRAPH_DYNAMODB_TABLE"


def test_defaults_and_thread_heads() -> None:
    cfg = StoreConfig.from_env({T: " ckpt "})
    assert cfg == StoreConfig(table_name="ckpt")
    assert cfg.track_threads is False
    # A TTL needs thread heads (they carry it); TRACK_THREADS=1 asks for them without one.
    assert StoreConfig.from_env({T: "t", "LANGGRAPH_DYNAMODB_TTL_SECONDS": "3600"}).track_threads is True
    assert StoreConfig.from_env({T: "t", "LANGGRAPH_DYNAMODB_TRACK_THREADS": "1"}).track_threads is True
    assert StoreConfig.from_env({T: "t", "LANGGRAPH_DYNAMODB_TRACK_THREADS": "0"}).track_threads is False


@pytest.mark.parametrize(
    "env,field",
    [
        ({}, T),
        ({T: "t", "LANGGRAPH_DYNAMODB_TTL_SECONDS": "1d"}, "LANGGRAPH_DYNAMODB_TTL_SECONDS"),
    ],
)
def test_bad_environment_names_the_variable(env: dict[str, str], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        StoreConfig.from_env(env)
