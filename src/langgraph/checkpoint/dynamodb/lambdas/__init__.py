"""On AWS Lambda: the handlers the CDK construct deploys, and what an agent's handler uses.

What an agent's own handler uses:

* ``handlers``: configuration from the construct's environment, a cached saver, logs;
* ``callers``: who is calling, and which of the store's threads are theirs;
* ``runs``: graph runs that drain before the deadline and continue in the next invocation;
* ``durable``: human-in-the-loop runs on Lambda durable functions.

The maintenance handlers, shipped in the package.

Handler strings (what ``CheckpointStore`` sets):

* ``langgraph.checkpoint.dynamodb.lambdas.pruner.handler``: scheduled pruner;
* ``langgraph.checkpoint.dynamodb.lambdas.reaper.handler``: DynamoDB Streams
  consumer finishing the expiry of threads whose head TTL deleted;
* ``langgraph.checkpoint.dynamodb.lambdas.orphan_sweeper.handler``: scheduled
  sweep of S3 objects no item references;
* ``langgraph.checkpoint.dynamodb.lambdas.maintenance.handler``: on request,
  ``copy_thread``, ``prune``, ``delete_thread``, ``delete_for_runs`` in
  resumable steps (continuation tokens).

They live in the package, not next to it, so that the construct can deploy
them from an installed wheel: its Lambda asset is this library plus its
runtime wheels, nothing from a repository checkout. Each reads the store's
environment (``langgraph.checkpoint.dynamodb.config``) through
``handlers.get_saver()`` and stays thin: the work is the saver's.

``metrics`` names the counts each job prints as CloudWatch embedded metrics
(``handlers.log_event``), which the construct's dashboard graphs.
"""
