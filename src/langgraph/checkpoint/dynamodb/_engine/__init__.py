"""The engine: how an operation runs, knowing no table.

Rule: this wing imports only ``errors`` and ``config`` of the package. An
operation elsewhere is a generator that yields request descriptions
(``ops``: ``ddb``, ``s3``, ``Gather``); the engine turns those into real
boto3 or aiobotocore calls (``drivers``, ``aws``), on a loop of its own
(``io_thread``) shared fairly with the caller (``fairness``), paced under
throttling (``pacing``) and within a job's capacity share (``budget``), wraps them as
saver methods (``methods``) and traces them (``tracing``). Nothing here knows
what a checkpoint item looks like.

Bottom to top: ``ops``, ``pacing``; ``budget``, ``fairness``, ``io_thread``;
``aws``, ``methods``, ``tracing``; ``drivers``.
"""
