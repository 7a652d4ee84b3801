from datetime import datetime, timezone

import dagster as dg

START = "2026-01-01"
# One partition per UTC day of snapshots, up to and including today: today's snapshots can be processed while the
# day runs (the 02:00 schedule re-runs the finished day tomorrow and replaces it).
daily = dg.DailyPartitionsDefinition(start_date=START, timezone="UTC", end_offset=1)


def partition_problem(day: str, now: datetime | None = None) -> str | None:
    """Why ``day`` is not a partition the pipeline can run (None when it is)."""
    try:
        when = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        return f"{day!r} is not a day (YYYY-MM-DD)"
    today = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d")
    if day < START:
        return f"{day} is before the first partition ({START})"
    if when.strftime("%Y-%m-%d") > today:
        return f"{day} is in the future (today is {today} UTC)"
    return None
