import dagster as dg

# One partition per UTC day of snapshots.
daily = dg.DailyPartitionsDefinition(start_date="2026-01-01", timezone="UTC")
