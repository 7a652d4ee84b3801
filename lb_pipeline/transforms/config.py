"""The effective Pulsar configuration of a day, read from bronze (config rows are few: safe to collect)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.model.config import DEFAULT_PROFILE, PulsarConfig, config_from_snapshot


def effective_config(config: DataFrame, snapshots: DataFrame, profile: str = DEFAULT_PROFILE) -> PulsarConfig:
    """The leader's runtime config overlaid with the dynamic overrides, as of the day's latest snapshot."""
    latest = snapshots.orderBy(F.col("snapshot_ts").desc()).select("snapshot_ts", "leader").limit(1).collect()
    if not latest:
        return PulsarConfig(profile=profile)
    ts, leader = latest[0]["snapshot_ts"], latest[0]["leader"]
    rows = config.where((F.col("snapshot_ts") == F.lit(ts)) & F.col("source").isin("dynamic", f"runtime:{leader}"))
    runtime, dynamic = {}, {}
    for r in rows.select("source", "key", "value").collect():
        (dynamic if r["source"] == "dynamic" else runtime)[r["key"]] = r["value"]
    return config_from_snapshot(runtime, dynamic, profile)
