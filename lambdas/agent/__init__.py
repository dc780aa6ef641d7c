"""Example agent Lambda: a LangGraph graph with a human confirmation step, on DynamoDB + S3.

Deployed with handler ``agent.handler.handler`` (the asset root is ``lambdas/``).
"""
