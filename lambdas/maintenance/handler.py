"""Re-export of ``langgraph.checkpoint.dynamodb.lambdas.maintenance`` (the handler ships in the package).

Next to the other jobs' folders, for apps that deploy handlers from this repository's ``lambdas/``;
the CDK construct deploys ``langgraph.checkpoint.dynamodb.lambdas.maintenance.handler``.
"""

from langgraph.checkpoint.dynamodb.lambdas.maintenance import handler

__all__ = ["handler"]
