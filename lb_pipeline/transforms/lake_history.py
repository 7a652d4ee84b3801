"""What ``simulation.landing`` reads from a landing folder, read from the lake's bronze tables instead: the
histories ``lb-pipeline simulate --lake`` runs on (broker and bundle rows are collected to the driver; topic rows only
of the bundles that can split), and the leader's stored averages."""

from __future__ import annotations

import pandas as pd

from lb_pipeline.errors import LbError
from lb_pipeline.simulation.history import NO_LOAD_REPORT
from lb_pipeline.simulation.leader_averages import COLUMNS as AVERAGE_COLUMNS, QUOTA_COLUMNS, with_replayed, written_at
from lb_pipeline.simulation.policies import Policies
from lb_pipeline.transforms.config import cluster_configs
from lb_pipeline.transforms.simulation import REPLAYED, policy_rows, split_topic_rows


def lake_history(spark, lake, day: str, cluster: str | None, profile: str | None = None):
    """What ``simulation.landing.read_history`` reads from a landing, from the lake's bronze tables: (cluster, broker
    rows, bundle rows, the cluster's current configuration, notes, per-snapshot policies, topic rows of the bundles
    that can split, what its leader ran over the day as ``ClusterConfigs``). Broker and bundle rows are collected; topic rows only of the bundles that can split."""
    brokers = lake.read(spark, "bronze", "broker_reports", day).toPandas()
    if brokers.empty:
        raise LbError(f"{lake.root}: no broker reports on {day}")
    clusters = sorted(brokers["cluster"].unique())
    chosen = cluster or clusters[0]
    if chosen not in clusters or (len(clusters) > 1 and not cluster):
        raise LbError(f"choose a cluster with --cluster: {', '.join(clusters)}")
    bundle_rows = lake.read(spark, "bronze", "bundle_reports", day)
    bundle_rows = bundle_rows.where(bundle_rows["cluster"] == chosen)
    snapshots = lake.read(spark, "bronze", "snapshots", day)
    configs = cluster_configs(lake.read(spark, "bronze", "config", day), snapshots, profile,
                              lake.read(spark, "bronze", "broker_reports", day))
    config = configs.of(chosen)
    rows = policy_rows(*(lake.read(spark, "bronze", t, day) for t in ("ownership", "namespaces", "config",
                                                                      "failure_domains", "topic_stats")))
    policies = Policies.from_rows(r.asDict() for r in rows.where(rows["cluster"] == chosen).collect())
    topics = split_topic_rows(bundle_rows, lake.read(spark, "bronze", "topic_stats", day), config, []).toPandas()
    brokers = brokers[brokers["cluster"] == chosen]
    reported = set(pd.to_datetime(brokers["snapshot_ts"]))
    notes = [NO_LOAD_REPORT.format(f"{chosen} {pd.Timestamp(r['snapshot_ts']):%Y-%m-%dT%H:%M:%SZ}")
             for r in snapshots.where(snapshots["cluster"] == chosen).select("snapshot_ts").orderBy("snapshot_ts").collect()
             if pd.Timestamp(r["snapshot_ts"]) not in reported] + configs.notes(chosen)
    return chosen, brokers, bundle_rows.toPandas(), config, notes, policies, topics, configs


def lake_leader(spark, lake, day: str, cluster: str) -> tuple[pd.DataFrame, list[dict] | None, dict[int, int],
                                                              pd.DataFrame]:
    """What ``simulation.landing.read_leader`` reads from a landing, from the lake's bronze tables: the leader's
    stored ``BundleData`` rows of ``cluster`` (replayed from every report write where silver has them so), the brokers' logged events (None without any), when each
    snapshot's averages were written, and the bundles' resource quotas. A table the lake does not hold counts as
    not collected."""
    def rows(table: str, *columns: str, layer: str = "bronze", where: str = "true") -> pd.DataFrame:
        if not lake.exists(spark, layer, table):
            return pd.DataFrame(columns=list(columns))
        df = lake.read(spark, layer, table, day)
        return df.where(df["cluster"] == cluster).where(where).select(*columns).toPandas()

    # where every report write was kept, silver's replay of them: the leader's own averages at those snapshots
    averages = with_replayed(rows("bundle_data", *AVERAGE_COLUMNS),
                             rows("bundle_time_averages", *AVERAGE_COLUMNS, layer="silver",
                                  where=f"seeded_from = '{REPLAYED}'"))
    events = rows("lb_events", "kind", "event_ts")
    return (averages, None if events.empty else events.to_dict("records"),
            written_at(rows("snapshots", "snapshot_ts", "bundle_data_written_ms")),
            rows("resource_quotas", "bundle", "snapshot_ts", *QUOTA_COLUMNS))
