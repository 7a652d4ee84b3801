"""Silver: bundle and broker statistics computed from bronze, as ``DataFrame -> DataFrame`` functions.

No topic-level data goes through the driver: every function is a Spark plan.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lb_pipeline.model.bundles import FULL_UPPER_BOUND
from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.usage import Weights
from lb_pipeline.transforms.config import per_cluster
from lb_pipeline.transforms.exact import exact_sum, max_by

SNAPSHOT_KEYS = ["cluster", "snapshot_ts", "snapshot_date"]
HASH_SPACE = float(1 << 32)


def hex_to_long(col: Column) -> Column:
    """``0x1a2b3c4d`` → 439041101 (``conv`` of the hex digits)."""
    return F.conv(F.substring(col, 3, 8), 16, 10).cast("long")


def bundle_bounds(namespaces: DataFrame) -> DataFrame:
    """One row per bundle of each namespace layout: ``bundle_range``, ``lower``, ``upper``, ``is_last``."""
    exploded = namespaces.select(*SNAPSHOT_KEYS, "namespace", "num_bundles",
                                 F.posexplode("boundaries").alias("i", "boundary"))
    w = Window.partitionBy(*SNAPSHOT_KEYS, "namespace").orderBy("i")
    return (
        exploded.withColumn("next", F.lead("boundary").over(w))
        .where(F.col("next").isNotNull())
        .select(*SNAPSHOT_KEYS, "namespace", "num_bundles",
                F.concat_ws("_", "boundary", "next").alias("bundle_range"),
                hex_to_long(F.col("boundary")).alias("lower"), hex_to_long(F.col("next")).alias("upper"))
        .withColumn("is_last", F.col("upper") == F.lit(0xFFFFFFFF))
    )


def layouts(namespaces: DataFrame, ownership: DataFrame) -> DataFrame:
    """Every namespace's bundle layout per snapshot: the collected one (``layout_source`` "snapshot"), or, when its
    file is missing (a collector that failed on it), the layout its owned bundles spell out, if they tile the hash
    ring exactly ("ownership"; anti-affinity group then unknown). Same columns as ``bronze/namespaces``."""
    have = namespaces.select(*SNAPSHOT_KEYS, "namespace", "boundaries", "num_bundles", "anti_affinity_group",
                             F.lit("snapshot").alias("layout_source"))
    owned = (ownership.select(*SNAPSHOT_KEYS, "namespace", "bundle_range").distinct()
             .join(have.select(*SNAPSHOT_KEYS, "namespace"), [*SNAPSHOT_KEYS, "namespace"], "left_anti")
             .select(*SNAPSHOT_KEYS, "namespace", F.struct(
                 hex_to_long(F.split("bundle_range", "_")[0]).alias("lower"),
                 hex_to_long(F.split("bundle_range", "_")[1]).alias("upper"),
                 F.lower(F.split("bundle_range", "_")[0]).alias("lo"),
                 F.lower(F.split("bundle_range", "_")[1]).alias("up")).alias("b")))
    ranges = owned.groupBy(*SNAPSHOT_KEYS, "namespace").agg(F.array_sort(F.collect_list("b")).alias("r"))
    n = F.size("r")
    tiles = ((F.col("r")[0]["lower"] == 0) & (F.element_at("r", -1)["upper"] == F.lit(FULL_UPPER_BOUND))
             & F.forall(F.sequence(F.lit(1), F.greatest(n - 1, F.lit(1))),
                        lambda i: (i >= n) | (F.col("r")[i]["lower"] == F.col("r")[i - 1]["upper"])))
    derived = ranges.where(tiles).select(
        *SNAPSHOT_KEYS, "namespace", F.concat(F.transform("r", lambda b: b["lo"]), F.array(F.element_at("r", -1)["up"]))
        .alias("boundaries"), n.cast("int").alias("num_bundles"), F.lit(None).cast("string").alias("anti_affinity_group"),
        F.lit("ownership").alias("layout_source"))
    return have.unionByName(derived)


def topic_hash(column: str = "topic") -> Column:
    """CRC-32 of the full topic name: the standard CRC-32 Pulsar's Guava ``Hashing.crc32()`` computes."""
    return F.crc32(F.encode(column, "UTF-8"))


def topic_bundle(topic_stats: DataFrame, namespaces: DataFrame) -> DataFrame:
    """Every topic mapped to its bundle by CRC-32 of the full name over the namespace's boundaries
    (lower inclusive, upper exclusive, the last bundle closed), beside the bundle the broker reported it under.

    Spark's ``crc32`` is the standard CRC-32 that Pulsar's Guava ``Hashing.crc32()`` computes. A topic whose hash
    is exactly 0xffffffff lies in the last bundle, but Pulsar's ``NamespaceBundles.findBundle`` fails on it
    (IndexOutOfBounds): ``lookup_fails`` flags such topics, which no broker can serve.
    """
    topics = topic_stats.select(*SNAPSHOT_KEYS, "broker", "namespace", "topic",
                                F.col("bundle_range").alias("reported_bundle_range"),
                                topic_hash().alias("topic_hash"))
    bounds = bundle_bounds(namespaces).select(*SNAPSHOT_KEYS, "namespace", "bundle_range", "lower", "upper", "is_last")
    inside = (F.col("t.topic_hash") >= F.col("b.lower")) & (
        (F.col("t.topic_hash") < F.col("b.upper")) | (F.col("b.is_last") & (F.col("t.topic_hash") <= F.col("b.upper")))
    )
    on = [F.col(f"t.{k}") == F.col(f"b.{k}") for k in (*SNAPSHOT_KEYS, "namespace")]
    joined = topics.alias("t").join(F.broadcast(bounds.alias("b")), on=[*on, inside], how="left")
    return joined.select(
        *[F.col(f"t.{k}") for k in SNAPSHOT_KEYS], "t.broker", "t.namespace", "t.topic", "t.topic_hash",
        F.col("b.bundle_range").alias("bundle_range"), "t.reported_bundle_range",
        (F.col("b.bundle_range") == F.col("t.reported_bundle_range")).alias("matches_report"),
        (F.col("t.topic_hash") == F.lit(FULL_UPPER_BOUND)).alias("lookup_fails"),
    ).fillna({"matches_report": False})


def bundle_stats(topic_stats: DataFrame, ownership: DataFrame) -> DataFrame:
    """Per snapshot and bundle: rates and throughputs, counts, owner, hash-range share, hottest topic."""
    load = F.col("msg_rate_in") + F.col("msg_rate_out")
    per_bundle = topic_stats.groupBy(*SNAPSHOT_KEYS, "namespace", "bundle_range").agg(
        F.min("broker").alias("reporting_broker"),
        *(exact_sum(c).alias(c) for c in ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")),
        F.count("topic").alias("topics"), F.sum("producer_count").alias("producers"),
        F.sum("consumer_count").alias("consumers"),
        max_by("topic", load).alias("hottest_topic"), F.max(load).alias("hottest_topic_msg_rate"),
    )
    owners = ownership.select(*SNAPSHOT_KEYS, "namespace", "bundle_range", F.col("broker").alias("owner_broker"))
    lower, upper = hex_to_long(F.split("bundle_range", "_")[0]), hex_to_long(F.split("bundle_range", "_")[1])
    total = F.col("msg_rate_in") + F.col("msg_rate_out")
    return (
        per_bundle.join(owners, [*SNAPSHOT_KEYS, "namespace", "bundle_range"], "full")
        .withColumn("bundle", F.concat_ws("/", "namespace", "bundle_range"))
        .withColumn("owner_broker", F.coalesce("owner_broker", "reporting_broker"))
        .fillna(0, subset=["msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out", "topics",
                           "producers", "consumers"])
        .withColumn("sessions", F.col("producers") + F.col("consumers"))
        .withColumn("hash_range_share",
                    (upper - lower + F.when(upper == F.lit(0xFFFFFFFF), 1).otherwise(0)) / F.lit(HASH_SPACE))
        .withColumn("hottest_topic_share", F.when(total > 0, F.col("hottest_topic_msg_rate") / total))
        .drop("reporting_broker")
    )


def percent_usage(usage: str, limit: str) -> Column:
    """``ResourceUsage.percentUsage`` in float32: 0 if limit <= 0; widened to double like Java callers.

    Spark's ``/`` works in double; dividing two float32 values in double and rounding once to float32 is the
    correctly rounded float32 quotient, so the result matches Java's float arithmetic bit for bit.
    """
    u, lim = F.col(usage).cast("float").cast("double"), F.col(limit).cast("float").cast("double")
    p = (u / lim).cast("float").cast("double")
    return F.when(F.col(limit) > 0, (p * F.lit(100.0)).cast("float").cast("double")).otherwise(F.lit(0.0))


def _java_max(*cols: Column) -> Column:
    # greatest() skips nulls; our percents are never null or NaN (limit <= 0 gives 0).
    return F.greatest(*cols)


def broker_usage(broker_reports: DataFrame, bundle_reports: DataFrame,
                 config: PulsarConfig | ClusterConfigs = PulsarConfig(), tolerance: float = 0.01) -> DataFrame:
    """Per snapshot and broker: each resource's percent usage (float32), the unweighted max (heap excluded),
    the weighted max for the resource weights of the cluster's configuration, totals, and whether the totals agree
    with the sum of the broker's bundles."""
    pct = {
        "cpu_pct": percent_usage("cpu_usage", "cpu_limit"),
        "memory_pct": percent_usage("memory_usage", "memory_limit"),
        "direct_memory_pct": percent_usage("direct_memory_usage", "direct_memory_limit"),
        "bandwidth_in_pct": percent_usage("bandwidth_in_usage", "bandwidth_in_limit"),
        "bandwidth_out_pct": percent_usage("bandwidth_out_usage", "bandwidth_out_limit"),
    }
    df = broker_reports.select(*SNAPSHOT_KEYS, "broker", "msg_rate_in", "msg_rate_out", "msg_throughput_in",
                               "msg_throughput_out", "num_bundles", "num_topics",
                               *[c.alias(k) for k, c in pct.items()])
    max_pct = _java_max("cpu_pct", "direct_memory_pct", "bandwidth_in_pct", "bandwidth_out_pct")
    # getMaxResourceUsage(): the float maximum divided by 100.0f, in float32 (one double division rounded once)
    df = df.withColumn("max_usage", (max_pct / 100.0).cast("float").cast("double"))

    def weight(resource: str) -> Column:
        return per_cluster(config, lambda c: getattr(Weights.from_config(c), resource), ts="snapshot_ts")

    df = df.withColumn("weighted_max_usage", _java_max(
        F.col("cpu_pct") * weight("cpu"), F.col("direct_memory_pct") * weight("direct_memory"),
        F.col("bandwidth_in_pct") * weight("bandwidth_in"), F.col("bandwidth_out_pct") * weight("bandwidth_out")) / 100.0)
    df = df.withColumn("driving_resource", F.when(max_pct == F.col("cpu_pct"), "cpu")
                       .when(max_pct == F.col("bandwidth_out_pct"), "bandwidthOut")
                       .when(max_pct == F.col("bandwidth_in_pct"), "bandwidthIn")
                       .otherwise("directMemory"))
    sums = bundle_reports.groupBy(*SNAPSHOT_KEYS, "broker").agg(
        exact_sum("msg_rate_in").alias("bundles_msg_rate_in"),
        exact_sum("msg_throughput_in").alias("bundles_msg_throughput_in"),
        F.count("bundle").alias("reported_bundles"))

    def close(a: str, b: str) -> Column:
        return F.abs(F.col(a) - F.coalesce(F.col(b), F.lit(0.0))) <= F.lit(tolerance) * F.greatest(F.abs(F.col(a)), F.lit(1.0))

    # Pulsar sums the totals and numBundles from the broker's live stats map, then writes the map itself as
    # lastStats; its stats thread clears and refills that map every statsUpdateFrequencyInSecs, so a report
    # written during a refill lists part of its bundles (a recorded 4.0.7 broker: 3 of 8, 75 of 144 msg/s in):
    # totals above the sum of fewer bundles than they counted are Pulsar's own, and the leader read them so too
    refilling = (F.coalesce(F.col("reported_bundles"), F.lit(0)) < F.col("num_bundles")) \
        & (F.col("msg_rate_in") >= F.coalesce(F.col("bundles_msg_rate_in"), F.lit(0.0)))
    return (df.join(sums, [*SNAPSHOT_KEYS, "broker"], "left")
            .withColumn("totals_match_bundles", (close("msg_rate_in", "bundles_msg_rate_in")
                                                 & close("msg_throughput_in", "bundles_msg_throughput_in")) | refilling))
