"""Re-export of ``langgraph.checkpoint.dynamodb.lambdas.reaper`` (the handler ships in the package).

Kept for one release so that assets and tests that name ``reaper.handler.handler`` keep working;
the CDK construct now deploys ``langgraph.checkpoint.dynamodb.lambdas.reaper.handler``.
"""

from langgraph.checkpoint.dynamodb.lambdas.reaper import handler

__all__ = ["handler"]
