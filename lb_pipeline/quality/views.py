"""Validation views: each checked table plus the derived columns its suite needs for properties GX cannot
express on one table (an owner that is a live broker, sums that match the report, contiguous bundle ranges).

Each view is ``read -> DataFrame`` where ``read(layer, table)`` returns that table's partition being checked.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lb_pipeline.transforms.silver import hex_to_long

Read = Callable[[str, str], DataFrame]
KEYS = ["cluster", "snapshot_ts", "snapshot_date"]


def _in_day(df: DataFrame) -> DataFrame:
    return df.withColumn("in_partition_day", F.date_format("snapshot_ts", "yyyy-MM-dd") == F.col("snapshot_date"))


def _live(read: Read) -> DataFrame:
    return read("bronze", "snapshots").select(*KEYS, F.explode("brokers").alias("live_broker"))


def broker_reports(read: Read) -> DataFrame:
    return _in_day(read("bronze", "broker_reports")).withColumn("cpu_limit_mod_100", F.col("cpu_limit") % 100)


def topic_stats(read: Read) -> DataFrame:
    return _in_day(read("bronze", "topic_stats"))


def bundle_stats(read: Read) -> DataFrame:
    df = read("silver", "bundle_stats")
    live = _live(read).withColumnRenamed("live_broker", "owner_broker").withColumn("owner_is_live", F.lit(True))
    reported = read("bronze", "bundle_reports").groupBy(*KEYS, "bundle").agg(F.sum("msg_rate_in").alias("reported_rate"))
    w = Window.partitionBy(*KEYS, "namespace").orderBy(hex_to_long(F.split("bundle_range", "_")[0]))
    return (
        df.join(live, [*KEYS, "owner_broker"], "left").fillna({"owner_is_live": False})
        .join(reported, [*KEYS, "bundle"], "left")
        .withColumn("matches_report", F.when(F.col("topics") == 0, True).otherwise(
            F.abs(F.col("msg_rate_in") - F.coalesce("reported_rate", F.lit(-1.0)))
            <= F.lit(1e-6) * F.greatest(F.abs("msg_rate_in"), F.lit(1.0))))
        .withColumn("range_follows_previous", F.coalesce(
            F.split(F.lag("bundle_range").over(w), "_")[1] == F.split("bundle_range", "_")[0],
            F.split("bundle_range", "_")[0] == F.lit("0x00000000")))
    )


def topic_bundle(read: Read) -> DataFrame:
    return read("silver", "topic_bundle")


def broker_usage(read: Read) -> DataFrame:
    return read("silver", "broker_usage")


def split_recommendations(read: Read) -> DataFrame:
    df = read("gold", "split_recommendations")
    rng = F.element_at(F.split("bundle", "/"), -1)
    lower, upper = hex_to_long(F.split(rng, "_")[0]), hex_to_long(F.split(rng, "_")[1])
    return (df.withColumn("boundaries_inside", F.forall("boundaries", lambda b: (hex_to_long(b) > lower) & (hex_to_long(b) < upper)))
            .withColumn("children_tile", ~F.col("splits") | (F.size("children") == F.size("boundaries") + 1)))


def shedding_decisions(read: Read) -> DataFrame:
    df = read("gold", "shedding_decisions")
    owned = read("bronze", "bundle_reports").select(*KEYS, "broker", "bundle").withColumn("source_owns_bundle", F.lit(True))
    live = _live(read).withColumnRenamed("live_broker", "destination").withColumn("destination_live", F.lit(True))
    return (df.join(owned, [*KEYS, "broker", "bundle"], "left").fillna({"source_owns_bundle": False})
            .join(live, [*KEYS, "destination"], "left")
            .withColumn("destination_live", F.col("destination").isNull() | F.coalesce("destination_live", F.lit(False)))
            .withColumn("destination_differs", F.col("destination").isNull() | (F.col("destination") != F.col("broker"))))


# suite name → (the asset it checks, its view, whether a failed critical expectation blocks downstream assets)
SUITES: dict[str, tuple[tuple[str, str], Callable[[Read], DataFrame], bool]] = {
    "bronze.broker_reports": (("bronze", "broker_reports"), broker_reports, True),
    "bronze.topic_stats": (("bronze", "topic_stats"), topic_stats, True),
    "silver.bundle_stats": (("silver", "bundle_stats"), bundle_stats, False),
    "silver.topic_bundle": (("silver", "topic_bundle"), topic_bundle, False),
    "silver.broker_usage": (("silver", "broker_usage"), broker_usage, False),
    "gold.split_recommendations": (("gold", "split_recommendations"), split_recommendations, False),
    "gold.shedding_decisions": (("gold", "shedding_decisions"), shedding_decisions, False),
}
