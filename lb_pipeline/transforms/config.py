"""The effective Pulsar configuration of a day, per cluster, read from bronze (config rows are few: safe to collect)."""

from __future__ import annotations

import os
from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import DEFAULT_PROFILE, PulsarConfig, config_from_snapshot
from lb_pipeline.model.releases import profile_for


def cluster_configs(config: DataFrame, snapshots: DataFrame, profile: str | None = None) -> ClusterConfigs:
    """Per cluster: its leader's runtime config overlaid with the dynamic overrides, as of the cluster's latest
    snapshot of the day, with the version profile ``profile`` (default: ``$LB_PULSAR_PROFILE``, else the one matching
    the Pulsar version that snapshot's brokers report). ``default``, for rows of a cluster with no snapshot: the
    configuration of the day's latest snapshot of any cluster."""
    newest = Window.partitionBy("cluster").orderBy(F.col("snapshot_ts").desc())
    latest = (snapshots.select("cluster", "snapshot_ts", "leader", "pulsar_version")
              .withColumn("_n", F.row_number().over(newest)).where("_n = 1").drop("_n").collect())
    profile = profile or os.environ.get("LB_PULSAR_PROFILE")
    if not latest:
        return ClusterConfigs({}, PulsarConfig(profile=profile or DEFAULT_PROFILE))
    wanted = F.lit(False)
    for s in latest:
        wanted = wanted | ((F.col("cluster") == s["cluster"]) & (F.col("snapshot_ts") == F.lit(s["snapshot_ts"]))
                           & F.col("source").isin("dynamic", f"runtime:{s['leader']}"))
    values: dict[str, tuple[dict, dict]] = {s["cluster"]: ({}, {}) for s in latest}
    for r in config.where(wanted).select("cluster", "source", "key", "value").collect():
        runtime, dynamic = values[r["cluster"]]
        (dynamic if r["source"] == "dynamic" else runtime)[r["key"]] = r["value"]
    by_cluster = {s["cluster"]: config_from_snapshot(*values[s["cluster"]],
                                                     profile or profile_for(s["pulsar_version"], DEFAULT_PROFILE))
                  for s in latest}
    last = max(latest, key=lambda s: (s["snapshot_ts"], s["cluster"]))
    return ClusterConfigs(by_cluster, by_cluster[last["cluster"]])


def effective_config(config: DataFrame, snapshots: DataFrame, profile: str | None = None) -> PulsarConfig:
    """The configuration of the day's latest snapshot (of whichever cluster took it)."""
    return cluster_configs(config, snapshots, profile).default


def per_cluster(config: PulsarConfig | ClusterConfigs, value: Callable[[PulsarConfig], object],
                cluster: str = "cluster") -> Column:
    """``value`` of each row's cluster's configuration, as a literal column (one ``CASE`` over the clusters)."""
    configs = ClusterConfigs.of_any(config)
    expr = F.lit(value(configs.default))
    for name in configs:
        v = value(configs[name])
        expr = F.when(F.col(cluster) == F.lit(name), F.lit(v)).otherwise(expr)
    return expr
