"""Benchmarks: our DynamoDB + S3 savers against ``langgraph-checkpoint-aws``.

``python -m benchmarks`` (or ``make bench``) starts a moto server on
127.0.0.1, runs every workload for both savers (ours from this virtualenv,
the reference from its own ``.venv-ref``) and regenerates
``docs/benchmarks.md`` and ``docs/img/*.png``.

Modules:

* ``counting``: botocore event hooks that count requests, item bytes and
  capacity units, mirror what was stored, and inject modelled latency.
* ``workloads``: the graphs and workloads, shared by both savers (this
  module must import in both virtualenvs: langgraph and botocore only).
* ``sides``: how each saver is built and its clients found.
* ``runner``: runs one workload for one saver (``python -m benchmarks.runner``).
* ``coldstart``: the cold-start probe, run in a fresh interpreter.
* ``asset_cold``: cold imports, first ``get_tuple`` and first invocation of
  the Lambda handlers from read-only copies of their assets, with and
  without bytecode (``python -m benchmarks.asset_cold``, also run by ``make bench``).
* ``orchestrate`` / ``report``: the driver and the Markdown/PNG report
  (this virtualenv only).
"""
