"""Line the payload bucket up with a checkpoint table restored to a point in time.

DynamoDB point-in-time recovery restores the table as it was at time ``T``;
S3 has no such operation. The construct keeps the payload bucket versioned,
with noncurrent versions kept as long as PITR reaches back (35 days), so
every object the restored items referenced at ``T`` still exists as some
version. This script makes, for every key under the checkpoint prefix, the
version that was current at ``T`` current again (a server-side copy of that
version), so that a saver on the restored table finds what its items point
to. Keys that did not exist at ``T`` are left alone: nothing in the restored
table references them, and the orphan sweeper removes them after its grace
period. Keys whose ``T`` version is already current are not touched.

Run it after the table restore and before the agents use the restored table
(see docs/infrastructure.md, "Restoring to a point in time")::

    python infra/restore_payloads.py --bucket BUCKET --prefix checkpoints/ \\
        --at 2026-11-29T12:00:00Z [--dry-run]

It needs ``s3:ListBucketVersions`` on the bucket, ``s3:GetObjectVersion`` and
``s3:PutObject`` on ``<bucket>/<prefix>*`` (and, with a customer key,
``kms:Decrypt`` and ``kms:GenerateDataKey`` on it): an operator's rights, not
the agents' or the maintenance functions'.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["RestoreReport", "main", "restore_payloads", "versions_at"]

#: The construct's default noncurrent-version retention (PITR's window).
DEFAULT_RETENTION_DAYS = 35


@dataclass
class RestoreReport:
    """What a restore did (or, with ``dry_run``, would do), key by key."""

    #: Keys whose version current at ``T`` was made current again.
    restored: list[str] = field(default_factory=list)
    #: Keys whose version current at ``T`` is still the current one.
    unchanged: list[str] = field(default_factory=list)
    #: Keys that did not exist at ``T`` (or were deleted then): left alone.
    absent_at_t: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, int]:
        return {k: len(v) for k, v in vars(self).items()}


@dataclass(frozen=True)
class _Entry:
    key: str
    modified: datetime
    version_id: str | None
    etag: str | None
    is_latest: bool
    delete_marker: bool
    order: int  # S3 lists a key's versions newest first: breaks timestamp ties


def versions_at(
    s3: Any, bucket: str, prefix: str, at: datetime
) -> dict[str, tuple[_Entry | None, _Entry | None]]:
    """For every key under ``prefix``: (the version current at ``at``, the current one).

    ``None`` where there was no object (or a delete marker) then, or is now.

    Example:
        >>> versions_at(boto3.client("s3"), "bucket", "checkpoints/", t)  # doctest: +SKIP
    """
    by_key: dict[str, list[_Entry]] = {}
    order = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for kind in ("Versions", "DeleteMarkers"):
            for v in page.get(kind, []):
                order += 1
                by_key.setdefault(v["Key"], []).append(
                    _Entry(
                        key=v["Key"],
                        modified=v["LastModified"],
                        version_id=v.get("VersionId"),
                        etag=v.get("ETag"),
                        is_latest=bool(v.get("IsLatest")),
                        delete_marker=kind == "DeleteMarkers",
                        order=order,
                    )
                )
    out: dict[str, tuple[_Entry | None, _Entry | None]] = {}
    for key, entries in by_key.items():
        before = [e for e in entries if e.modified <= at]
        # The newest entry at or before ``at``; on equal timestamps the one S3
        # lists first (newer).
        then = max(before, key=lambda e: (e.modified, -e.order), default=None)
        latest = next((e for e in entries if e.is_latest), None)
        out[key] = (
            None if then is None or then.delete_marker else then,
            None if latest is None or latest.delete_marker else latest,
        )
    return out


def restore_payloads(
    s3: Any,
    bucket: str,
    prefix: str,
    at: datetime,
    *,
    dry_run: bool = False,
    retention: timedelta = timedelta(days=DEFAULT_RETENTION_DAYS),
    now: datetime | None = None,
) -> RestoreReport:
    """Make the version of each key current at ``at`` the current one.

    Args:
        s3: A boto3 S3 client.
        bucket: The payload bucket (versioned).
        prefix: The savers' ``s3_key_prefix`` (``checkpoints/``).
        at: The table's restore time (timezone-aware).
        dry_run: Report only.
        retention: The bucket's noncurrent-version retention: an ``at`` older
            than this is refused, since versions current then may be gone.
        now: The current time (tests).

    Returns:
        What was restored, what was already current, what did not exist at ``at``.

    Example:
        >>> restore_payloads(boto3.client("s3"), "bucket", "checkpoints/",  # doctest: +SKIP
        ...                  datetime(2026, 11, 29, 12, tzinfo=timezone.utc))
    """
    if at.tzinfo is None:
        raise ValueError("at must be timezone-aware (the table's restore time, e.g. 2026-11-29T12:00:00Z)")
    now = now or datetime.now(UTC)
    if now - at > retention:
        raise ValueError(
            f"{at.isoformat()} is older than the noncurrent-version retention ({retention.days} days): "
            "objects current then may have expired, so the bucket cannot be lined up with it"
        )
    status = s3.get_bucket_versioning(Bucket=bucket).get("Status")
    if status != "Enabled":
        raise ValueError(f"bucket {bucket} is not versioned (status {status!r}): nothing to restore from")
    report = RestoreReport()
    for key, (entry, current) in sorted(versions_at(s3, bucket, prefix, at).items()):
        if entry is None:
            report.absent_at_t.append(key)
        elif entry.is_latest or (current is not None and current.etag == entry.etag):
            # The same bytes are current (the ETag of a single-part upload is
            # its MD5): e.g. a second run. With SSE-KMS ETags differ per copy,
            # so a second run copies again, which is harmless.
            report.unchanged.append(key)
        else:
            if not dry_run:
                # A copy of the old version becomes the new current version;
                # the history stays as it was (nothing is deleted).
                s3.copy_object(
                    Bucket=bucket,
                    Key=key,
                    CopySource={"Bucket": bucket, "Key": key, "VersionId": entry.version_id},
                )
            report.restored.append(key)
    return report


def _parse_time(text: str) -> datetime:
    at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if at.tzinfo is None:
        raise argparse.ArgumentTypeError("give a time zone (e.g. 2026-11-29T12:00:00Z)")
    return at


def main(argv: Sequence[str] | None = None) -> int:
    import boto3

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bucket", required=True, help="the payload bucket")
    parser.add_argument("--prefix", default="checkpoints/", help="the savers' s3_key_prefix")
    parser.add_argument("--at", required=True, type=_parse_time, help="the table's restore time (ISO 8601)")
    parser.add_argument("--retention-days", type=int, default=DEFAULT_RETENTION_DAYS)
    parser.add_argument("--dry-run", action="store_true", help="report only")
    args = parser.parse_args(argv)
    report = restore_payloads(
        boto3.client("s3"),
        args.bucket,
        args.prefix,
        args.at,
        dry_run=args.dry_run,
        retention=timedelta(days=args.retention_days),
    )
    verb = "would restore" if args.dry_run else "restored"
    print(f"{verb} {len(report.restored)} objects; {report.to_dict()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
