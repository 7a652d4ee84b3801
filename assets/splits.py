"""Stage ``splits``: the split triggers and every split algorithm replayed over the day (gold)."""

import dagster as dg

from assets.common import day_configs, key, options, write_table
from assets.resources import LakeResource, SparkResource
from assets.resume import resumable
from lb_pipeline.transforms import silver, splits


@dg.asset(key=["gold", "split_triggers"], deps=[key("bronze", "broker_reports"), key("bronze", "bundle_reports"),
                                                key("silver", "bundle_time_averages"), key("bronze", "namespaces"),
                                                key("bronze", "ownership"), key("bronze", "config")], **options("splits"))
@resumable
def split_triggers(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Bundles the modular BundleSplitterTask and the extensible hit-count strategy would split, and why."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    df = splits.split_triggers(lk.read(s, "bronze", "broker_reports", day), lk.read(s, "bronze", "bundle_reports", day),
                             lk.read(s, "silver", "bundle_time_averages", day),
                             silver.layouts(lk.read(s, "bronze", "namespaces", day), lk.read(s, "bronze", "ownership", day)),
                             day_configs(s, lk, day))
    return dg.MaterializeResult(metadata=write_table(s, lk, df, "gold", "split_triggers", day)[1])


@dg.asset(key=["gold", "split_recommendations"], deps=[key("gold", "split_triggers"), key("bronze", "topic_stats")],
          **options("splits"))
@resumable
def split_recommendations(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Each automatic split algorithm's boundaries, children and command for every flagged bundle."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    df = splits.split_boundaries(lk.read(s, "gold", "split_triggers", day), lk.read(s, "bronze", "topic_stats", day),
                               day_configs(s, lk, day))
    return dg.MaterializeResult(metadata=write_table(s, lk, df, "gold", "split_recommendations", day)[1])
