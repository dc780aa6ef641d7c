"""Tools around a store: moving threads in and out, checking a store, a local endpoint.

Rule: a tool uses a saver through its public API (plus the read-only paged
access of ``_inspection``) and the parts it needs; the savers never import a
tool. ``transfer`` exports and imports a portable file (``_export_file``,
``_portable``, ``_replay``); ``migrate`` moves threads from another LangGraph
checkpointer (``_migrate_aws`` reads ``langgraph-checkpoint-aws`` tables);
``doctor`` checks a live store; ``local`` serves DynamoDB and S3 on loopback.
"""
