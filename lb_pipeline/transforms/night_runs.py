"""``gold/night_runs``: whether a night's tables were all written. The night's first step (ingest) marks it
running, its last (the report) complete; a night that a kill, a crash or a failed step stopped stays running, and
the readers of earlier nights (the report's last nights, its data-quality history and its index,
``gold/night_trends``) call it partial: its tables hold what was written before it stopped, some perhaps from an
earlier run. A re-run that finishes marks it complete. A night the table has no row of (a lake written before it
existed) counts as complete.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SCHEMA = "snapshot_date string, status string, run_id string, marked_at timestamp"
RUNNING, COMPLETE = "running", "complete"
VOLATILE = ("run_id", "marked_at")  # which run marked it and when: two runs of one night differ only there


def mark(day: str, status: str, run_id: str) -> list[dict]:
    """The night's one row, ``status`` being ``RUNNING`` or ``COMPLETE``."""
    return [{"snapshot_date": day, "status": status, "run_id": run_id, "marked_at": datetime.now(timezone.utc)}]


def partial_nights(runs: DataFrame | None, day: str) -> dict[str, dict]:
    """The nights before ``day`` that did not finish: night → the run that started it and when (``day`` itself is
    running while its own report is built: not partial). A few rows: collected."""
    if runs is None:
        return {}
    rows = runs.where((F.col("snapshot_date") < F.lit(day)) & (F.col("status") != COMPLETE)).collect()
    # a timestamp comes back naive, in this process's local time
    return {r["snapshot_date"]: {"run_id": r["run_id"],
                                 "started": r["marked_at"].astimezone(timezone.utc) if r["marked_at"] else None}
            for r in rows}
