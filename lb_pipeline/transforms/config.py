"""The effective Pulsar configuration of a day, read from bronze (config rows are few: safe to collect)."""

from __future__ import annotations

import os

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.model.config import DEFAULT_PROFILE, PulsarConfig, config_from_snapshot
from lb_pipeline.model.releases import profile_for


def effective_config(config: DataFrame, snapshots: DataFrame, profile: str | None = None) -> PulsarConfig:
    """The leader's runtime config overlaid with the dynamic overrides, as of the day's latest snapshot, with the
    version profile ``profile`` (default: ``$LB_PULSAR_PROFILE``, else the one matching the Pulsar version the
    snapshot's brokers report)."""
    latest = snapshots.orderBy(F.col("snapshot_ts").desc()).select("snapshot_ts", "leader", "pulsar_version").limit(1).collect()
    profile = profile or os.environ.get("LB_PULSAR_PROFILE")
    if not latest:
        return PulsarConfig(profile=profile or DEFAULT_PROFILE)
    ts, leader = latest[0]["snapshot_ts"], latest[0]["leader"]
    profile = profile or profile_for(latest[0]["pulsar_version"], DEFAULT_PROFILE)
    rows = config.where((F.col("snapshot_ts") == F.lit(ts)) & F.col("source").isin("dynamic", f"runtime:{leader}"))
    runtime, dynamic = {}, {}
    for r in rows.select("source", "key", "value").collect():
        (dynamic if r["source"] == "dynamic" else runtime)[r["key"]] = r["value"]
    return config_from_snapshot(runtime, dynamic, profile)
