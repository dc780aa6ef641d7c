"""``python -m langgraph.checkpoint.dynamodb.cli``: the ``langgraph-dynamodb`` CLI."""

from langgraph.checkpoint.dynamodb.cli import console_main

console_main()
