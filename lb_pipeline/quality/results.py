"""Validation results as rows of ``gold/validation_results`` (one per expectation and run)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from lb_pipeline.quality.runner import Summary, expectation_column, load_suite

SCHEMA = ("snapshot_date string, suite string, table_name string, expectation string, column_name string, "
          "severity string, success boolean, unexpected_count long, unexpected_values string, unexpected_rows string, "
          "validated_at timestamp, clusters array<string>")


def result_rows(summary: Summary, day: str, table: str) -> list[dict]:
    """Every expectation of the suite, passed or failed, so trends can show both."""
    failed = {(f.expectation, f.column): f for f in summary.failures}
    now = datetime.now(timezone.utc)
    rows = []
    for e in load_suite(summary.suite)["expectations"]:
        column = expectation_column(e.get("kwargs", {}))
        f = failed.get((e["type"], column))
        rows.append({"snapshot_date": day, "suite": summary.suite, "table_name": table, "expectation": e["type"],
                     "column_name": column, "severity": e.get("severity", "critical"), "success": f is None,
                     "unexpected_count": f.unexpected_count if f else 0,
                     "unexpected_values": json.dumps(f.unexpected_values[:10], default=str) if f else None,
                     "unexpected_rows": json.dumps(f.rows[:10], default=str) if f and f.rows else None,
                     "validated_at": now, "clusters": f.clusters if f else None})
    return rows
