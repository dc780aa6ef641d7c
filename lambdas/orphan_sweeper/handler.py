"""Re-export of ``langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper`` (the handler ships in the package).

Kept for one release so that assets and tests that name ``orphan_sweeper.handler.handler`` keep working;
the CDK construct now deploys ``langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler``.
"""

from langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper import handler

__all__ = ["handler"]
