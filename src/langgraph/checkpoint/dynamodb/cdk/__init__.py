"""AWS CDK constructs for the DynamoDB + S3 checkpointer.

Install with the ``cdk`` extra (``pip install "langgraph-checkpoint-dynamodb-s3[cdk]"``).
This subpackage is the only place that imports ``aws_cdk``; importing
``langgraph.checkpoint.dynamodb`` never loads it, and it is left out of the
Lambda assets it builds.

Example:
    >>> from aws_cdk import App, Stack
    >>> from langgraph.checkpoint.dynamodb.cdk import CheckpointStore, PruneOptions
    >>> app = App()
    >>> store = CheckpointStore(  # doctest: +SKIP
    ...     Stack(app, "Agents"), "Checkpoints", prune_options=PruneOptions(keep_last=5)
    ... )
"""

from langgraph.checkpoint.dynamodb.errors import missing_extra

try:  # first, so that a missing extra is named rather than met as a bare `No module named 'jsii'`
    import aws_cdk  # noqa: F401
    import cdk_nag  # noqa: F401
    import constructs  # noqa: F401
except ImportError as _exc:
    raise missing_extra(_exc, extra="cdk", feature="langgraph.checkpoint.dynamodb.cdk") from _exc

from langgraph.checkpoint.dynamodb.cdk._bundling import (
    PipLocalBundling,
    bundle_python_lambda,
    library_requirements,
)
from langgraph.checkpoint.dynamodb.cdk._dashboard import BUCKET_METRICS_ID
from langgraph.checkpoint.dynamodb.cdk._durable import DurableAgentFunction
from langgraph.checkpoint.dynamodb.cdk._functions import (
    MAINTENANCE_HANDLERS,
    bundled_lambda_code,
    reaper_filter_pattern,
    runtime_acknowledgement_reason,
)
from langgraph.checkpoint.dynamodb.cdk._grants import (
    CURSOR_ACTIONS,
    DYNAMODB_MAINTENANCE_ACTIONS,
    DYNAMODB_READ_ACTIONS,
    DYNAMODB_READ_WRITE_ACTIONS,
    FUNCTION_DYNAMODB_ACTIONS,
    FUNCTION_S3_ACTIONS,
    KMS_READ_ACTIONS,
    KMS_READ_WRITE_ACTIONS,
    LOGS_KEY_ACTIONS,
    S3_READ_ACTIONS,
    S3_READ_WRITE_ACTIONS,
    STREAM_READ_ACTIONS,
)
from langgraph.checkpoint.dynamodb.cdk._nag import acknowledge
from langgraph.checkpoint.dynamodb.cdk._options import (
    BucketOptions,
    FunctionOptions,
    MaintenanceOptions,
    MonitoringOptions,
    OrphanSweepOptions,
    PruneOptions,
    ReaperOptions,
    StoreOptions,
    resolve_options,
)
from langgraph.checkpoint.dynamodb.cdk._storage import PITR_WINDOW
from langgraph.checkpoint.dynamodb.cdk._store import CheckpointStore
from langgraph.checkpoint.dynamodb.cdk._table import cfn_table_properties

__all__ = [
    "BUCKET_METRICS_ID",
    "CURSOR_ACTIONS",
    "DYNAMODB_MAINTENANCE_ACTIONS",
    "DYNAMODB_READ_ACTIONS",
    "DYNAMODB_READ_WRITE_ACTIONS",
    "FUNCTION_DYNAMODB_ACTIONS",
    "FUNCTION_S3_ACTIONS",
    "KMS_READ_ACTIONS",
    "KMS_READ_WRITE_ACTIONS",
    "LOGS_KEY_ACTIONS",
    "MAINTENANCE_HANDLERS",
    "PITR_WINDOW",
    "S3_READ_ACTIONS",
    "S3_READ_WRITE_ACTIONS",
    "STREAM_READ_ACTIONS",
    "BucketOptions",
    "CheckpointStore",
    "DurableAgentFunction",
    "FunctionOptions",
    "MaintenanceOptions",
    "MonitoringOptions",
    "OrphanSweepOptions",
    "PipLocalBundling",
    "PruneOptions",
    "ReaperOptions",
    "StoreOptions",
    "acknowledge",
    "bundle_python_lambda",
    "bundled_lambda_code",
    "cfn_table_properties",
    "library_requirements",
    "reaper_filter_pattern",
    "resolve_options",
    "runtime_acknowledgement_reason",
]
