"""``python -m langgraph.checkpoint.dynamodb``: the ``langgraph-dynamodb`` CLI."""

from langgraph.checkpoint.dynamodb.cli import console_main

console_main()
