"""Stage ``shedding``: every shedding strategy replayed over the day, anti-affinity audit, broker load summary."""

import dagster as dg

from assets.common import day_configs, key, options, write_table
from assets.resources import LakeResource, SparkResource
from assets.resume import resumable
from lb_pipeline.report.trust import config_changes
from lb_pipeline.transforms import anti_affinity, gold, silver
from lb_pipeline.transforms.config import per_cluster


@dg.asset(key=["gold", "shedding_decisions"], deps=[key("bronze", "broker_reports"), key("bronze", "bundle_reports"),
                                                    key("silver", "bundle_time_averages"), key("bronze", "ownership"),
                                                    key("bronze", "namespaces"), key("bronze", "config"),
                                                    key("bronze", "failure_domains"), key("bronze", "lb_events"),
                                                    key("bronze", "topic_stats")],
          **options("shedding"))
@resumable
def shedding_decisions(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """What each of the five shedding strategies would unload at each snapshot, with state carried over."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    configs = day_configs(s, lk, day)
    df = gold.shedding_decisions(lk.read(s, "bronze", "broker_reports", day), lk.read(s, "bronze", "bundle_reports", day),
                                 lk.read(s, "silver", "bundle_time_averages", day), lk.read(s, "bronze", "ownership", day),
                                 silver.layouts(lk.read(s, "bronze", "namespaces", day), lk.read(s, "bronze", "ownership", day)),
                                 lk.read(s, "bronze", "config", day), lk.read(s, "bronze", "failure_domains", day), configs,
                                 events=lk.read(s, "bronze", "lb_events", day),
                                 topic_stats=lk.read(s, "bronze", "topic_stats", day))
    written, meta = write_table(s, lk, df, "gold", "shedding_decisions", day)
    meta["unloads_by_strategy"] = dg.MetadataValue.json(
        {r["strategy"]: r["count"] for r in written.groupBy("strategy").count().collect()})
    # each snapshot was replayed under the configuration in force then: say where it changed during the night
    meta["configuration_changes"] = dg.MetadataValue.json(
        {c: config_changes(configs, c) for c in configs if len(configs.changes(c)) > 1})
    return dg.MaterializeResult(metadata=meta)


@dg.asset(key=["gold", "anti_affinity_audit"], deps=[key("bronze", "ownership"), key("bronze", "namespaces"),
                                                     key("bronze", "failure_domains"), key("bronze", "snapshots")],
          **options("shedding"))
@resumable
def anti_affinity_audit(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Anti-affinity groups whose namespaces are unevenly spread across brokers or failure domains."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    df = anti_affinity.anti_affinity_audit(*(lk.read(s, "bronze", t, day)
                                             for t in ("ownership", "namespaces", "failure_domains", "snapshots")))
    return dg.MaterializeResult(metadata=write_table(s, lk, df, "gold", "anti_affinity_audit", day)[1])


@dg.asset(key=["gold", "broker_load_summary"], deps=[key("silver", "broker_usage"), key("bronze", "config")],
          **options("shedding"))
@resumable
def broker_load_summary(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Per broker over the day: mean and peak usage, the resource that drives it, traffic, snapshots overloaded."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    overloaded = per_cluster(day_configs(s, lk, day),
                             lambda c: c.get_float("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0, ts="snapshot_ts")
    df = gold.broker_load_summary(lk.read(s, "silver", "broker_usage", day), overloaded)
    return dg.MaterializeResult(metadata=write_table(s, lk, df, "gold", "broker_load_summary", day)[1])
