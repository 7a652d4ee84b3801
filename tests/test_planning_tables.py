"""gold/capacity_forecast, gold/pathologies and gold/night_trends from the nightly job: the demo night alone (too little history,
said so), and the forecast and night-trend assets over a lake holding several nights (they read them all, and none
after their own)."""

from __future__ import annotations

from datetime import date, timedelta
from functools import reduce

import dagster as dg
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lb_pipeline.planning.bundle_loss import METHOD, TOO_BIG
from lb_pipeline.planning.forecast import MIN_DAYS
from tests.conftest import DEMO_DAY

pytestmark = pytest.mark.spark
WINDOW_TABLES = [("silver", "broker_usage"), ("bronze", "broker_reports"), ("bronze", "failure_domains"),
                 ("bronze", "namespaces"), ("bronze", "config"), ("bronze", "snapshots")]
NIGHTS = MIN_DAYS + 1  # the fewest nights a forecast is made from, and one more
USAGE_COLUMNS = ["max_usage", "cpu_pct", "memory_pct", "direct_memory_pct", "bandwidth_in_pct", "bandwidth_out_pct"]


def test_one_night_gives_loss_headroom_but_no_forecast(lake, spark):
    df = lake.read(spark, "gold", "capacity_forecast", DEMO_DAY)
    brokers = lake.read(spark, "silver", "broker_usage", DEMO_DAY).select("broker").distinct().count()
    assert df.where("scope = 'broker'").count() == brokers * 6
    assert {r.status for r in df.where("scope IN ('broker', 'domain', 'cluster')").collect()} == {"not enough history"}
    assert df.where("scope IN ('broker', 'cluster') AND days_until_threshold IS NOT NULL").count() == 0
    losses = df.where("scope = 'loss'").collect()
    assert {r.subject for r in losses} >= {"largest broker", "domain zone-a", "domain zone-b"}
    # sized bundle by bundle on the night's load model: a number of brokers to add, or the topic no broker of the
    # cluster's size can carry, named
    assert {r.method for r in losses} == {METHOD}
    assert all(r.usage_after_loss > 0 and (r.brokers_to_add is not None and r.brokers_to_add >= 0
                                          or (r.headroom < 0 and TOO_BIG in r.note)) for r in losses)
    namespaces = lake.read(spark, "bronze", "namespaces", DEMO_DAY).select("namespace").distinct().count()
    assert df.where("scope = 'namespace'").count() == namespaces


def test_the_demo_night_has_findings_with_evidence_and_actions(lake, spark):
    rows = lake.read(spark, "gold", "pathologies", DEMO_DAY).collect()
    assert rows, "the demo night (a broker added empty, small namespaces, restarts) shows known pathologies"
    assert all(r.action and r.summary and r.snapshots >= 1 and r.evidence.startswith("[") for r in rows)
    layouts = lake.read(spark, "bronze", "namespaces", DEMO_DAY)
    last = layouts.agg(F.max("snapshot_ts")).first()[0]
    live = len(lake.read(spark, "bronze", "snapshots", DEMO_DAY).where(F.col("snapshot_ts") == last).first().brokers)
    small = {r.namespace for r in layouts.where((F.col("snapshot_ts") == last) & (F.col("num_bundles") < live)).collect()}
    assert {r.subject for r in rows if r.detector == "fewer bundles than brokers"} == small


def _shift(df, days: int, scale: float | None = None):
    out = (df.withColumn("snapshot_ts", F.col("snapshot_ts") - F.expr(f"INTERVAL {days} DAYS"))
           .withColumn("snapshot_date", F.lit((date.fromisoformat(DEMO_DAY) - timedelta(days=days)).isoformat())))
    for c in USAGE_COLUMNS if scale is not None and "max_usage" in df.columns else []:
        out = out.withColumn(c, F.col(c) * scale)
    return out


def test_the_forecast_reads_the_earlier_nights_and_ignores_later_ones(lake, spark, tmp_path):
    from assets.planning import capacity_forecast
    from assets.resources import LakeResource, SparkResource
    from lb_pipeline.spark.lake import Lake

    week = Lake(str(tmp_path / "lake"))
    for layer, table in WINDOW_TABLES:  # one Delta write per table holding every night
        tonight = lake.read(spark, layer, table, DEMO_DAY)
        nights = [_shift(tonight, k, 1.0 - 0.04 * k) for k in range(NIGHTS)]  # earlier nights, each 4 % quieter
        nights.append(_shift(tonight, -1, 3.0))  # a later night must not count
        reduce(DataFrame.unionByName, nights).write.format("delta").partitionBy("snapshot_date").save(week.path(layer, table))
    result = dg.materialize([capacity_forecast], partition_key=DEMO_DAY, instance=dg.DagsterInstance.ephemeral(),
                            resources={"spark": SparkResource(), "lake": LakeResource(root=week.root)})
    assert result.success
    df = week.read(spark, "gold", "capacity_forecast", DEMO_DAY)
    cluster = df.where("scope = 'cluster' AND resource = 'max_usage'").first()
    tonight_peak = lake.read(spark, "gold", "capacity_forecast", DEMO_DAY).where(
        "scope = 'cluster' AND resource = 'max_usage'").first().current_peak
    assert cluster.history_days == NIGHTS and cluster.status in ("ok", "above threshold")
    assert cluster.current_peak == pytest.approx(tonight_peak)  # not the later night's triple load
    assert cluster.trend_per_day > 0 and len(cluster.forecast) == 30
    assert cluster.days_until_threshold_earliest is None or cluster.days_until_threshold is None \
        or cluster.days_until_threshold_earliest <= cluster.days_until_threshold
    meta = result.get_asset_materialization_events()[0].materialization.metadata
    assert meta["nights_of_history"].value == NIGHTS


def test_the_demo_night_is_a_first_night_in_the_trends(lake, spark):
    from lb_pipeline.transforms.nights import METRICS

    rows = {r.metric: r for r in lake.read(spark, "gold", "night_trends", DEMO_DAY).collect()}
    assert sorted(rows) == sorted(METRICS)
    assert all(r.nights_7 == r.nights_30 == 0 and r.mean_7 is None for r in rows.values())
    brokers = lake.read(spark, "gold", "broker_load_summary", DEMO_DAY).select("broker").distinct().count()
    assert rows["brokers"].tonight == brokers


def test_the_night_trends_compare_tonight_with_the_nights_before_it(lake, spark, tmp_path):
    from assets.planning import night_trends
    from assets.resources import LakeResource, SparkResource
    from lb_pipeline.spark.lake import Lake

    week = Lake(str(tmp_path / "lake"))
    for layer, table in (("bronze", "config"), ("bronze", "snapshots")):
        lake.read(spark, layer, table, DEMO_DAY).write.format("delta").partitionBy("snapshot_date").save(week.path(layer, table))
    summary = lake.read(spark, "gold", "broker_load_summary", DEMO_DAY)

    def night(days_before: int, scale: float):
        day = (date.fromisoformat(DEMO_DAY) - timedelta(days=days_before)).isoformat()
        return summary.withColumn("snapshot_date", F.lit(day)).withColumn("peak_max_usage", F.col("peak_max_usage") * scale)

    nights = [night(k, 1.0 - 0.1 * k) for k in range(4)] + [night(-1, 3.0)]  # three earlier nights, one later
    reduce(DataFrame.unionByName, nights).write.format("delta").partitionBy("snapshot_date").save(
        week.path("gold", "broker_load_summary"))
    result = dg.materialize([night_trends], partition_key=DEMO_DAY, instance=dg.DagsterInstance.ephemeral(),
                            resources={"spark": SparkResource(), "lake": LakeResource(root=week.root)})
    assert result.success
    rows = {r.metric: r for r in week.read(spark, "gold", "night_trends", DEMO_DAY).collect()}
    peak = summary.agg(F.max("peak_max_usage")).first()[0]
    assert rows["peak_usage"].tonight == pytest.approx(peak)  # not the later night's triple load
    assert (rows["peak_usage"].nights_7, rows["peak_usage"].nights_30) == (3, 3)
    assert rows["peak_usage"].mean_7 == pytest.approx(peak * (0.9 + 0.8 + 0.7) / 3)
    assert rows["unloads"].tonight is None  # the lake holds no replay table: nothing to say, not zero
    meta = result.get_asset_materialization_events()[0].materialization.metadata
    assert meta["earlier_nights"].value == 3
