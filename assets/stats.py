"""Stage ``stats``: bronze → silver bundle and broker statistics (all Spark)."""

import dagster as dg

from assets.common import day_configs, key, options, write_table
from assets.resources import LakeResource, SparkResource
from assets.resume import resumable
from lb_pipeline.model.usage import Weights
from lb_pipeline.simulation.leader_averages import stored_every
from lb_pipeline.transforms import silver, time_averages


@dg.asset(key=["silver", "topic_bundle"], deps=[key("bronze", "topic_stats"), key("bronze", "namespaces"),
                                              key("bronze", "ownership")], **options("stats"))
@resumable
def topic_bundle(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Every topic mapped to its bundle by CRC-32 over the namespace boundaries, checked against the report."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    layouts = silver.layouts(lk.read(s, "bronze", "namespaces", day), lk.read(s, "bronze", "ownership", day))
    df = silver.topic_bundle(lk.read(s, "bronze", "topic_stats", day), layouts)
    written, meta = write_table(s, lk, df, "silver", "topic_bundle", day)
    mismatches = written.where("NOT matches_report").count()
    if mismatches:
        context.log.warning(f"{mismatches} topics were reported under a bundle their hash does not fall in")
    meta["mismatched_topics"] = dg.MetadataValue.int(mismatches)
    return dg.MaterializeResult(metadata=meta)


@dg.asset(key=["silver", "bundle_stats"], deps=[key("bronze", "topic_stats"), key("bronze", "ownership")],
          **options("stats"))
@resumable
def bundle_stats(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Per snapshot and bundle: traffic, counts, owner, hash-range share, hottest topic and its share."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    df = silver.bundle_stats(lk.read(s, "bronze", "topic_stats", day), lk.read(s, "bronze", "ownership", day))
    return dg.MaterializeResult(metadata=write_table(s, lk, df, "silver", "bundle_stats", day)[1])


@dg.asset(key=["silver", "broker_usage"], deps=[key("bronze", t) for t in ("broker_reports", "bundle_reports", "config", "snapshots")],
          **options("stats"))
@resumable
def broker_usage(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Per snapshot and broker: float32 percent usage per resource, unweighted and weighted max usage."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    configs = day_configs(s, lk, day)
    df = silver.broker_usage(lk.read(s, "bronze", "broker_reports", day), lk.read(s, "bronze", "bundle_reports", day),
                             configs)
    _, meta = write_table(s, lk, df, "silver", "broker_usage", day)
    meta["weights"] = dg.MetadataValue.json({c: Weights.from_config(configs[c]).__dict__ for c in configs}
                                            or Weights.from_config(configs.default).__dict__)
    return dg.MaterializeResult(metadata=meta)


@dg.asset(key=["silver", "bundle_time_averages"], deps=[key("bronze", t) for t in ("bundle_reports", "bundle_data",
                                                                                  "resource_quotas", "report_writes",
                                                                                  "snapshots", "lb_events", "config",
                                                                                  "broker_reports")],
          **options("stats"))
@resumable
def bundle_time_averages(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """The leader's short/long-term bundle averages: its stored BundleData brought up to each snapshot, else
    rebuilt from the series; the rebuild compared with the stored values."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    configs = day_configs(s, lk, day)
    df = time_averages.bundle_time_averages(
        *(lk.read(s, "bronze", t, day) for t in ("bundle_reports", "bundle_data")),
        snapshots=lk.read(s, "bronze", "snapshots", day), events=lk.read(s, "bronze", "lb_events", day),
        stored_every={c: stored_every(configs[c]) for c in configs}, quotas=lk.read(s, "bronze", "resource_quotas", day),
        report_writes=lk.read(s, "bronze", "report_writes", day))
    written, meta = write_table(s, lk, df, "silver", "bundle_time_averages", day)
    worst = written.agg({"long_msg_rate_rel_diff": "max"}).collect()[0][0]
    meta["max_long_term_rel_diff_vs_stored"] = dg.MetadataValue.float(float(worst or 0.0))
    return dg.MaterializeResult(metadata=meta)
