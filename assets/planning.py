"""Stage ``planning``: capacity forecasts over the nights the lake holds, and the night's pathologies (gold)."""

import dagster as dg

from assets.common import day_configs, key, options, write_table
from assets.resources import LakeResource, SparkResource
from assets.resume import resumable, resumed
from lb_pipeline.transforms import capacity, nights, silver
from lb_pipeline.transforms.night_runs import partial_nights
from lb_pipeline.transforms.pathologies_cluster import pathologies as find_pathologies


class ForecastConfig(dg.Config):
    """How many nights, up to the partition's, the forecast fits (older nights in the lake are ignored)."""

    lookback_days: int = capacity.LOOKBACK_DAYS


@dg.asset(key=["gold", "capacity_forecast"],
          deps=[key("silver", "broker_usage"), key("bronze", "broker_reports"), key("bronze", "failure_domains"),
                key("bronze", "namespaces"), key("bronze", "config"), key("silver", "bundle_stats"),
                key("gold", "load_model")], **options("planning"))
@resumable
def capacity_forecast(context: dg.AssetExecutionContext, config: ForecastConfig, spark: SparkResource,
                      lake: LakeResource) -> dg.MaterializeResult:
    """Per cluster, failure domain and broker: days until each resource's daily peak crosses the overload threshold
    (a robust trend of the daily peaks, weekends, 5-95 % band); N-1 and domain-loss headroom; namespaces near their bundle cap.
    Reads the partition's night and up to ``lookback_days - 1`` nights before it."""
    if config.lookback_days < 1:
        raise dg.Failure(f"lookback_days must be at least 1 (got {config.lookback_days})")
    day, s, lk = context.partition_key, spark.session, lake.lake
    cfg = day_configs(s, lk, day)

    def window(layer, table):
        return capacity.window(lk.read(s, layer, table), day, config.lookback_days)

    inputs = capacity.capacity_inputs(window("silver", "broker_usage"), window("bronze", "broker_reports"),
                                      window("bronze", "failure_domains"))
    def night(layer, table):  # the losses are sized on the night's bundles and load model where the lake has them
        return lk.read(s, layer, table, day) if lk.exists(s, layer, table) else None

    df = capacity.capacity_forecast(inputs, window("bronze", "namespaces"), day, cfg, night("silver", "bundle_stats"),
                                    night("gold", "load_model"))
    written, meta = write_table(s, lk, df, "gold", "capacity_forecast", day)
    nights = written.where("scope = 'cluster'").agg({"history_days": "max"}).collect()[0][0]
    meta["nights_of_history"] = dg.MetadataValue.int(int(nights or 0))
    return dg.MaterializeResult(metadata=meta)


@dg.asset(key=["gold", "pathologies"],
          deps=[key("silver", "broker_usage"), key("silver", "bundle_stats"), key("bronze", "broker_reports"),
                key("bronze", "ownership"), key("bronze", "namespaces"), key("bronze", "snapshots"),
                key("bronze", "failure_domains"), key("bronze", "config"), key("gold", "anti_affinity_audit")],
          **options("planning"))
@resumable
def pathologies(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource) -> dg.MaterializeResult:
    """The night's findings: idle brokers beside hot ones, unsplittable hot bundles, broken usage, overload in an
    ignored resource, ping-pong, namespaces with too few bundles, unbalanced domains, mixed versions, anti-affinity
    placements Pulsar would not make."""
    day, s, lk = context.partition_key, spark.session, lake.lake

    def read(layer, table):
        return lk.read(s, layer, table, day)

    df = find_pathologies(read("silver", "broker_usage"), read("bronze", "broker_reports"), read("silver", "bundle_stats"),
                          read("bronze", "ownership"), silver.layouts(read("bronze", "namespaces"), read("bronze", "ownership")),
                          read("bronze", "snapshots"), read("bronze", "failure_domains"), day_configs(s, lk, day),
                          read("gold", "anti_affinity_audit") if lk.exists(s, "gold", "anti_affinity_audit") else None)
    written, meta = write_table(s, lk, df, "gold", "pathologies", day)
    meta["findings_by_severity"] = dg.MetadataValue.json(
        {r["severity"]: r["count"] for r in written.groupBy("severity").count().collect()})
    return dg.MaterializeResult(metadata=meta)


@dg.asset(key=["gold", "night_trends"],
          deps=[key("gold", t) for t in nights.GOLD_TABLES] + [key("bronze", "config")], **options("planning"))
def night_trends(context: dg.AssetExecutionContext, spark: SparkResource, lake: LakeResource):
    """Per cluster and metric (peak and mean usage, brokers overloaded, unloads, bundles to split, findings): the
    night against the mean of the 7 and 30 nights before it that the lake holds."""
    day, s, lk = context.partition_key, spark.session, lake.lake
    # Which earlier nights were left partial is read before the step is watched and given to it as such: each run
    # marks its own night running in that table, which would make every run of the night compute the trends again.
    partial = partial_nights(_every_night(s, lk, "night_runs"), day)
    yield from resumed(context, spark, lake, lambda: _trends(context, s, lk, day, partial), extra=partial)


def _every_night(s, lk, table):
    return lk.read(s, "gold", table) if lk.exists(s, "gold", table) else None


def _trends(context, s, lk, day: str, partial) -> dg.MaterializeResult:
    cfg = day_configs(s, lk, day)
    per_night = nights.gold_night_metrics(day, cfg, lambda table: _every_night(s, lk, table))
    rows = [r.asDict() for r in per_night.collect()] if per_night is not None else []  # a few rows per night
    df = s.createDataFrame(nights.trend_rows(rows, day, partial), nights.TREND_SCHEMA)
    written, meta = write_table(s, lk, df, "gold", "night_trends", day)
    meta["earlier_nights"] = dg.MetadataValue.int(len({r["snapshot_date"] for r in rows if r["snapshot_date"] < day}))
    meta["partial_nights_left_out"] = dg.MetadataValue.json(sorted(partial))
    return dg.MaterializeResult(metadata=meta)
