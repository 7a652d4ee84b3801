"""The effective Pulsar configuration of a day, per cluster and snapshot, read from bronze (config rows are few:
safe to collect)."""

from __future__ import annotations

import os
from collections.abc import Callable
from itertools import groupby

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from lb_pipeline.model.at_start import Shot, leader_history
from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import DEFAULT_PROFILE, PulsarConfig, config_from_snapshot
from lb_pipeline.model.releases import profile_for


def cluster_configs(config: DataFrame, snapshots: DataFrame, profile: str | None = None,
                    reports: DataFrame | None = None) -> ClusterConfigs:
    """Per cluster and snapshot: its leader's runtime config overlaid with the dynamic overrides, with the version
    profile ``profile`` (default: ``$LB_PULSAR_PROFILE``, else the one matching the Pulsar version the snapshot's
    brokers report). Each cluster's current configuration is its last snapshot's; its history keeps a snapshot's
    configuration where it differs from the one before. A snapshot without its leader's runtime config (not
    collected, or quarantined) keeps the runtime values of the cluster's nearest snapshot that has them: a lost file
    is no change of configuration. ``default``, for rows of a cluster with no snapshot: the configuration of the
    day's latest snapshot of any cluster. With ``reports`` (``bronze/broker_reports``, whose leader rows say when its
    load manager started), the strategies are those the leader runs (``model.at_start``), and the notes say where
    they are not the recorded ones."""
    snaps = (snapshots.where(F.col("cluster").isNotNull() & F.col("snapshot_ts").isNotNull())
             .select("cluster", "snapshot_ts", F.unix_millis("snapshot_ts").alias("ms"), "leader", "pulsar_version"))
    leaders = (snaps.withColumn("start_timestamp_ms", F.lit(None).cast("long")) if reports is None else snaps.join(
        reports.select("cluster", "snapshot_ts", F.col("broker").alias("leader"), "start_timestamp_ms"),
        ["cluster", "snapshot_ts", "leader"], "left"))  # the leader's startTimestamp, in the same collect
    shots = sorted(leaders.drop("snapshot_ts").collect(), key=lambda s: (s["cluster"], s["ms"]))
    profile = profile or os.environ.get("LB_PULSAR_PROFILE")
    if not shots:
        return ClusterConfigs({}, PulsarConfig(profile=profile or DEFAULT_PROFILE))
    rows = (config.join(F.broadcast(snaps), ["cluster", "snapshot_ts"])
            .where((F.col("source") == "dynamic") | (F.col("source") == F.concat(F.lit("runtime:"), F.col("leader"))))
            .select("cluster", "ms", "source", "key", "value").collect())
    runtime: dict[tuple, dict] = {}  # (cluster, snapshot ms) → key → value
    dynamic: dict[tuple, dict] = {}
    for r in rows:
        into = dynamic if r["source"] == "dynamic" else runtime
        into.setdefault((r["cluster"], r["ms"]), {})[r["key"]] = r["value"]
    history: dict[str, list] = {}
    notes: dict[str, list[str]] = {}
    restarts: dict[str, list[int]] = {}
    for cluster, mine in groupby(shots, key=lambda s: s["cluster"]):  # sorted by cluster, then time
        mine = list(mine)
        known = [runtime[(cluster, s["ms"])] for s in mine if (cluster, s["ms"]) in runtime]
        carried, recorded = known[0] if known else {}, []
        for s in mine:
            carried = runtime.get((cluster, s["ms"]), carried)
            c = config_from_snapshot(carried, dynamic.get((cluster, s["ms"]), {}),
                                     profile or profile_for(s["pulsar_version"], DEFAULT_PROFILE))
            recorded.append(Shot(s["ms"], s["leader"], s["start_timestamp_ms"], c))
        history[cluster], notes[cluster], restarts[cluster] = leader_history(recorded)
    newest = max(shots, key=lambda s: (s["ms"], s["cluster"]))
    current = {cluster: changes[-1][1] for cluster, changes in history.items()}
    return ClusterConfigs(current, current[newest["cluster"]], history, notes, restarts)


def effective_config(config: DataFrame, snapshots: DataFrame, profile: str | None = None) -> PulsarConfig:
    """The configuration of the day's latest snapshot (of whichever cluster took it)."""
    return cluster_configs(config, snapshots, profile).default


def per_cluster(config: PulsarConfig | ClusterConfigs, value: Callable[[PulsarConfig], object],
                cluster: str = "cluster", ts: str | None = None) -> Column:
    """``value`` of each row's cluster's configuration, as a literal column (one ``CASE`` over the clusters): its
    current one, or with ``ts`` (a timestamp column) the one in force at the row's time."""
    configs = ClusterConfigs.of_any(config)
    expr = F.lit(value(configs.default))
    for name in configs:
        changes = configs.changes(name) if ts else [(None, configs[name])]
        first = value(changes[0][1])
        mine, previous = F.lit(first), first
        for ms, c in changes[1:]:
            if (v := value(c)) != previous:  # the latest change at or before the row's time wins
                mine, previous = F.when(F.unix_millis(F.col(ts)) >= F.lit(ms), F.lit(v)).otherwise(mine), v
        expr = F.when(F.col(cluster) == F.lit(name), mine).otherwise(expr)
    return expr
