"""Stage ``stats``: bronze → silver bundle and broker statistics (all Spark)."""


import dagster as dg

from assets.metadata import table_metadata
from assets.partitions import daily
from assets.resources import LakeResource, SparkResource
from lb_pipeline.model.usage import Weights
from lb_pipeline.transforms import silver
from lb_pipeline.transforms.config import effective_config


def _bronze(name: str) -> dg.AssetKey:
    return dg.AssetKey(["bronze", name])


_COMMON = dict(group_name="stats", partitions_def=daily, kinds={"spark", "delta"},
               retry_policy=dg.RetryPolicy(max_retries=2, delay=10))


@dg.asset(key=["silver", "topic_bundle"], deps=[_bronze("topic_stats"), _bronze("namespaces")], **_COMMON)
def topic_bundle(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Every topic mapped to its bundle by CRC-32 over the namespace boundaries, checked against the report."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    df = silver.topic_bundle(lk.read(s, "bronze", "topic_stats", day), lk.read(s, "bronze", "namespaces", day))
    result = lk.write_partition(df, "silver", "topic_bundle", day)
    written = lk.read(s, "silver", "topic_bundle", day)
    mismatches = written.where("NOT matches_report").count()
    if mismatches:
        context.log.warning(f"{mismatches} topics were reported under a bundle their hash does not fall in")
    meta = table_metadata(result, written)
    meta["mismatched_topics"] = dg.MetadataValue.int(mismatches)
    return dg.MaterializeResult(metadata=meta)


@dg.asset(key=["silver", "bundle_stats"], deps=[_bronze("topic_stats"), _bronze("ownership")], **_COMMON)
def bundle_stats(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Per snapshot and bundle: traffic, counts, owner, hash-range share, hottest topic and its share."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    df = silver.bundle_stats(lk.read(s, "bronze", "topic_stats", day), lk.read(s, "bronze", "ownership", day))
    result = lk.write_partition(df, "silver", "bundle_stats", day)
    return dg.MaterializeResult(metadata=table_metadata(result, lk.read(s, "silver", "bundle_stats", day)))


@dg.asset(key=["silver", "broker_usage"],
          deps=[_bronze("broker_reports"), _bronze("bundle_reports"), _bronze("config"), _bronze("snapshots")],
          **_COMMON)
def broker_usage(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """Per snapshot and broker: float32 percent usage per resource, unweighted and weighted max usage."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    config = effective_config(lk.read(s, "bronze", "config", day), lk.read(s, "bronze", "snapshots", day))
    weights = Weights.from_config(config)
    df = silver.broker_usage(lk.read(s, "bronze", "broker_reports", day), lk.read(s, "bronze", "bundle_reports", day),
                             weights)
    result = lk.write_partition(df, "silver", "broker_usage", day)
    meta = table_metadata(result, lk.read(s, "silver", "broker_usage", day))
    meta["weights"] = dg.MetadataValue.json(weights.__dict__)
    return dg.MaterializeResult(metadata=meta)


@dg.asset(key=["silver", "bundle_time_averages"], deps=[_bronze("bundle_reports"), _bronze("bundle_data")], **_COMMON)
def bundle_time_averages(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """The leader's short/long-term bundle averages rebuilt from the series, compared with stored BundleData."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    df = silver.bundle_time_averages(lk.read(s, "bronze", "bundle_reports", day), lk.read(s, "bronze", "bundle_data", day))
    result = lk.write_partition(df, "silver", "bundle_time_averages", day)
    written = lk.read(s, "silver", "bundle_time_averages", day)
    meta = table_metadata(result, written)
    worst = written.agg({"long_msg_rate_rel_diff": "max"}).collect()[0][0]
    meta["max_long_term_rel_diff_vs_stored"] = dg.MetadataValue.float(float(worst or 0.0))
    return dg.MaterializeResult(metadata=meta)
