from datetime import datetime, timezone

import dagster as dg

from lb_pipeline.snapshots.layout import day_problem

START = "2026-01-01"
# One partition per UTC day of snapshots, up to and including today: today's snapshots can be processed while the
# day runs (the 02:00 schedule re-runs the finished day tomorrow and replaces it).
daily = dg.DailyPartitionsDefinition(start_date=START, timezone="UTC", end_offset=1)


def partition_problem(day: str, now: datetime | None = None) -> str | None:
    """Why ``day`` is not a partition the pipeline can run (None when it is)."""
    if problem := day_problem(day):
        return problem
    today = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d")
    if day < START:
        return f"{day} is before the first partition ({START})"
    if day > today:
        return f"{day} is in the future (today is {today} UTC)"
    return None
