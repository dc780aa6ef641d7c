"""``python -m langgraph.checkpoint.dynamodb``: the ``langgraph-dynamodb`` CLI."""

from langgraph.checkpoint.dynamodb.cli import main

raise SystemExit(main())
