"""Re-export of ``langgraph.checkpoint.dynamodb.lambdas.pruner`` (the handler ships in the package).

Kept for one release so that assets and tests that name ``pruner.handler.handler`` keep working;
the CDK construct now deploys ``langgraph.checkpoint.dynamodb.lambdas.pruner.handler``.
"""

from langgraph.checkpoint.dynamodb.lambdas.pruner import handler

__all__ = ["handler"]
