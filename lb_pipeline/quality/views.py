"""Validation views: each checked table plus the derived columns its suite needs for properties GX cannot
express on one table (an owner that is a live broker, sums that match the report, contiguous bundle ranges).

Each view is ``read -> DataFrame`` where ``read(layer, table)`` returns that table's partition being checked.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lb_pipeline.model import topic_stats
from lb_pipeline.formats.events import LOGGED_AFTER_SNAPSHOT_MS
from lb_pipeline.formats.report_writes import WRITES_AFTER_SNAPSHOT_MS
from lb_pipeline.quality.simulation_views import simulation_runs, simulation_timeseries, simulation_validation
from lb_pipeline.transforms import grace_state as gs
from lb_pipeline.transforms.config import cluster_configs, per_cluster
from lb_pipeline.transforms.silver import bundle_bounds, hex_to_long, layouts

Read = Callable[[str, str], DataFrame]
KEYS = ["cluster", "snapshot_ts", "snapshot_date"]


def _in_day(df: DataFrame) -> DataFrame:
    return df.withColumn("in_partition_day", F.date_format("snapshot_ts", "yyyy-MM-dd") == F.col("snapshot_date"))


def _live(read: Read) -> DataFrame:
    return read("bronze", "snapshots").select(*KEYS, F.explode("brokers").alias("live_broker"))


def _optional(read: Read, layer: str, table: str) -> DataFrame | None:
    try:  # a table a lake written before it existed does not have
        return read(layer, table)
    except Exception:  # noqa: BLE001 - Delta's "not a Delta table" and a missing path alike
        return None


def _in_force(read: Read, key: str):
    """A column: the integer ``key`` in the configuration in force at each row's snapshot (per cluster)."""
    configs = cluster_configs(read("bronze", "config"), read("bronze", "snapshots"))
    return per_cluster(configs, lambda c: c.get_int(key), ts="snapshot_ts")


def _table(layer: str, table: str, in_day: bool = False) -> Callable[[Read], DataFrame]:
    """The view of a table whose suite needs no derived column (but perhaps the day check)."""
    def view(read: Read) -> DataFrame:
        df = read(layer, table)
        return _in_day(df) if in_day else df
    return view


def snapshots(read: Read) -> DataFrame:
    return (_in_day(read("bronze", "snapshots"))
            .withColumn("live_broker_count", F.size("brokers"))
            .withColumn("manifest_offset_s", (F.col("snapshot_timestamp_ms") - F.unix_millis("snapshot_ts")) / 1000.0))


def lb_events(read: Read) -> DataFrame:
    event_ms = F.unix_millis("event_ts")
    return (_in_day(read("bronze", "lb_events"))
            .withColumn("logged_before_snapshot",
                        F.col("event_ts") <= F.col("snapshot_ts") + F.expr("INTERVAL 1 SECOND"))
            .withColumn("logged_by_snapshot", (event_ms >= 0) & (event_ms <= F.unix_millis("snapshot_ts")
                                                                 + F.lit(LOGGED_AFTER_SNAPSHOT_MS + 999))))


def report_writes(read: Read) -> DataFrame:
    return _in_day(read("bronze", "report_writes")).withColumn(
        "written_by_snapshot", F.col("write_ms") <= F.unix_millis("snapshot_ts") + F.lit(WRITES_AFTER_SNAPSHOT_MS + 999))


def namespaces(read: Read) -> DataFrame:
    positions = F.transform("boundaries", lambda b: hex_to_long(F.lower(b)))
    return (_in_day(read("bronze", "namespaces"))
            .withColumn("boundaries_cover_ring", F.coalesce(
                (F.lower(F.element_at("boundaries", 1)) == "0x00000000")
                & (F.lower(F.element_at("boundaries", -1)) == "0xffffffff"), F.lit(False)))
            # strictly increasing: equal to its own sorted, de-duplicated self (no overlap, no empty bundle)
            .withColumn("boundaries_increasing", F.coalesce(positions == F.array_sort(F.array_distinct(positions)),
                                                            F.lit(False)))
            .withColumn("bundle_count_matches", F.coalesce(F.size("boundaries") == F.col("num_bundles") + 1, F.lit(False))))


def ownership(read: Read) -> DataFrame:
    """Whether an owned bundle overlaps another owned bundle of its namespace: Pulsar owns bundles by name, so a
    stale parent claimed beside its children, or a range a layout never held, passes the one-owner-per-bundle rule
    while two brokers serve the same hashes."""
    df = _in_day(read("bronze", "ownership"))
    bounds = F.split("bundle_range", "_")
    w = Window.partitionBy(*KEYS, "namespace").orderBy("_lower", "_upper", "broker")
    return (df.withColumn("_lower", hex_to_long(bounds[0])).withColumn("_upper", hex_to_long(bounds[1]))
            # sorted by lower bound: a row overlaps another when one before it ends past its start, or the next
            # starts before its end
            .withColumn("overlaps_another_owned", F.coalesce(
                F.max("_upper").over(w.rowsBetween(Window.unboundedPreceding, -1)) > F.col("_lower"), F.lit(False))
                | F.coalesce(F.lead("_lower").over(w) < F.col("_upper"), F.lit(False)))
            .drop("_lower", "_upper"))


def broker_reports(read: Read) -> DataFrame:
    """``limits_usable``: every resource limit is none (≤ 0, which Pulsar reads as no limit) or at least
    ``row_rules.SMALLEST_LIMIT``."""
    from lb_pipeline.quality.row_rules import LIMITS, SMALLEST_LIMIT

    usable = [F.coalesce((F.col(c) <= 0) | (F.col(c) >= SMALLEST_LIMIT), F.lit(True)) for c in LIMITS]
    out = usable[0]
    for u in usable[1:]:
        out = out & u
    return _in_day(read("bronze", "broker_reports")).withColumn("limits_usable", out)


# How long after the snapshot's time the collector may still be reading the brokers' load reports.
COLLECTING_MINUTES = 5


def broker_usage(read: Read) -> DataFrame:
    """Each broker's usage with how old its load report was at the snapshot. A running broker rewrites it at least
    every ``loadBalancerReportUpdateMaxIntervalMinutes`` (``ModularLoadManagerImpl.needBrokerDataUpdate``), before the
    collector reads it: one older (a reporter that stopped) or written after the snapshot (a clock ahead) is not the
    load of that moment, and its ``lastUpdate`` decides whose report of a moved bundle the simulation keeps."""
    max_minutes = _in_force(read, "loadBalancerReportUpdateMaxIntervalMinutes")
    age = (F.unix_millis("snapshot_ts") - F.col("last_update_ms")) / 60_000.0
    written = read("bronze", "broker_reports").select(*KEYS, "broker", "last_update_ms")
    return (read("silver", "broker_usage").join(written, [*KEYS, "broker"], "left")
            .withColumn("report_age_minutes", F.round(age, 1))
            .withColumn("report_of_its_snapshot",  # no lastUpdate: nothing to tell
                        F.coalesce(age.between(-COLLECTING_MINUTES, max_minutes + COLLECTING_MINUTES), F.lit(True)))
            .drop("last_update_ms"))


def bundle_stats(read: Read) -> DataFrame:
    df = read("silver", "bundle_stats")
    live = _live(read).withColumnRenamed("live_broker", "owner_broker").withColumn("owner_is_live", F.lit(True))
    # the owner's report of the bundle; another broker's report may still list it after a move (its load report is
    # rewritten only when its load moved enough or every loadBalancerReportUpdateMaxIntervalMinutes), and the owner's
    # may not list it yet: then there is nothing to compare
    reports = read("bronze", "bundle_reports")
    reported = reports.select(*KEYS, "bundle", F.col("broker").alias("owner_broker"),
                              F.col("msg_rate_in").alias("reported_rate"))
    elsewhere = reports.select(*KEYS, "bundle").distinct().withColumn("reported_elsewhere", F.lit(True))
    # the owners whose load report landed: a report not collected (or quarantined) is no report that disagrees
    owners_reported = (read("bronze", "broker_reports").select(*KEYS, F.col("broker").alias("owner_broker")).distinct()
                       .withColumn("owner_reported", F.lit(True)))
    # the leader's copies of the reports (collect --metadata-store) are of an earlier stats cycle than the topics
    leader_copies = (read("bronze", "snapshots").where(F.col("load_reports_from") == "metadata-store")
                     .select(*KEYS).withColumn("leader_copies", F.lit(True)))
    # a bundle of the namespace's layout; bronze.namespaces checks the layout is contiguous and covers the ring
    # (checking contiguity here instead would flag every namespace with an unowned, idle bundle)
    bounds = bundle_bounds(layouts(read("bronze", "namespaces"), read("bronze", "ownership")))
    layout = bounds.select(*KEYS, "namespace", "bundle_range").withColumn("in_layout", F.lit(True))
    # split while the snapshot was collected: the layout already holds its left child (same lower bound, lower upper)
    lower = hex_to_long(F.split("bundle_range", "_")[0])
    children = bounds.select(*KEYS, "namespace", F.col("lower").alias("child_lower"), F.col("upper").alias("child_upper"))
    split = (df.select(*KEYS, "namespace", "bundle_range", lower.alias("lower"),
                       hex_to_long(F.split("bundle_range", "_")[1]).alias("upper"))
             .join(children, [*KEYS, "namespace"]).where((F.col("child_lower") == F.col("lower"))
                                                         & (F.col("child_upper") < F.col("upper")))
             .select(*KEYS, "namespace", "bundle_range").distinct().withColumn("split_since", F.lit(True)))
    return (
        df.join(live, [*KEYS, "owner_broker"], "left").fillna({"owner_is_live": False})
        .join(reported, [*KEYS, "bundle", "owner_broker"], "left")
        .join(elsewhere, [*KEYS, "bundle"], "left")
        .join(layout, [*KEYS, "namespace", "bundle_range"], "left")
        .join(split, [*KEYS, "namespace", "bundle_range"], "left")
        .join(owners_reported, [*KEYS, "owner_broker"], "left")
        .fillna({"in_layout": False, "split_since": False, "owner_reported": False, "reported_elsewhere": False})
        .withColumn("range_is_namespace_bundle", F.col("in_layout") | F.col("split_since"))
        # a bundle split mid-collection has topics under the parent and no report, a bundle whose owner's report
        # did not land has none, one moved since its owner's report was written has another broker's, and the
        # leader's copies are of another stats cycle: nothing to compare
        .join(leader_copies, KEYS, "left").fillna({"leader_copies": False})
        .withColumn("matches_report", (F.col("topics") == 0) | F.col("leader_copies")
                    | (F.col("reported_rate").isNull()
                       & (F.col("split_since") | ~F.col("owner_reported") | F.col("reported_elsewhere")))
                    | _sum_agrees(F.coalesce("reported_rate", F.lit(-1.0)), F.col("msg_rate_in"), F.col("topics")))
    )


def _sum_agrees(reported, topic_sum, topics):
    """``model.topic_stats.sum_agrees`` as a column: topics print their rates cut to three decimals."""
    eps = F.lit(1e-6) * F.greatest(F.abs(reported), F.abs(topic_sum), F.lit(1.0))
    diff = reported - topic_sum
    return (diff >= -eps) & (diff <= F.lit(topic_stats.STEP) * topics + eps)


def split_recommendations(read: Read) -> DataFrame:
    df = read("gold", "split_recommendations")
    rng = F.element_at(F.split("bundle", "/"), -1)
    lower_hex, upper_hex = F.split(rng, "_")[0], F.split(rng, "_")[1]
    lower, upper = hex_to_long(lower_hex), hex_to_long(upper_hex)
    # the children a split at ``boundaries`` must produce: [lower, b1), [b1, b2), …, [bn, upper]
    expected = F.transform(F.arrays_zip(F.concat(F.array(lower_hex), "boundaries").alias("start"),
                                        F.concat("boundaries", F.array(upper_hex)).alias("end")),
                           lambda c: F.concat_ws("_", c["start"], c["end"]))
    non_empty = F.forall("children", lambda c: hex_to_long(F.split(c, "_")[0]) < hex_to_long(F.split(c, "_")[1]))
    return (df.withColumn("boundaries_inside", F.forall("boundaries", lambda b: (hex_to_long(b) > lower) & (hex_to_long(b) < upper)))
            .withColumn("children_tile", ~F.col("splits") | F.coalesce((F.col("children") == expected) & non_empty,
                                                                       F.lit(False))))


def _load_change(decisions: DataFrame, bundle_reports: DataFrame, live: DataFrame) -> DataFrame:
    """Per snapshot and strategy: relative change of the cluster's total message rate when every decision of the
    cycle moves its bundle from the source to the destination. A bundle moved twice counts twice, a bundle moved
    to a broker that is not live is lost; an unload without a destination is placed later, so it stays counted."""
    load = bundle_reports.select(*KEYS, "broker", "bundle", (F.col("msg_rate_in") + F.col("msg_rate_out")).alias("load"))
    moves = decisions.select(*KEYS, "strategy", "broker", "bundle", "destination")
    cycles = moves.select(*KEYS, "strategy").distinct()
    dest_live = live.select(*KEYS, F.col("live_broker").alias("destination"), F.lit(True).alias("dest_live"))
    before = load.groupBy(*KEYS).agg(F.sum("load").alias("before"))
    after = (load.join(cycles, KEYS).join(moves, [*KEYS, "strategy", "broker", "bundle"], "left")
             .join(dest_live, [*KEYS, "destination"], "left")
             .groupBy(*KEYS, "strategy")
             .agg(F.sum(F.when(F.col("destination").isNull() | F.col("dest_live"), F.col("load")).otherwise(0.0))
                  .alias("after")))
    return after.join(before, KEYS).select(*KEYS, "strategy", F.when(
        F.col("before") > 0, (F.col("after") - F.col("before")) / F.col("before")).otherwise(0.0).alias("total_load_change"))


def shedding_decisions(read: Read) -> DataFrame:
    df = read("gold", "shedding_decisions")
    reports = read("bronze", "bundle_reports")
    owned = reports.select(*KEYS, "broker", "bundle").distinct().withColumn("source_owns_bundle", F.lit(True))
    live = _live(read)
    dest = live.withColumnRenamed("live_broker", "destination").withColumn("destination_live", F.lit(True))
    # Pulsar purges recently-unloaded bundles older than the grace period before each cycle (ModularLoadManagerImpl,
    # UnloadScheduler): unloading the same bundle again is allowed only once more than the grace period has passed;
    # but TransferShedder checks only the overloaded broker's bundles, not those it swaps back in exchange ("swap")
    grace_minutes = _in_force(read, "loadBalancerSheddingGracePeriodMinutes")
    # at the cycle that unloaded (a snapshot's load holds a cycle a minute or so); a lake written before: the snapshot
    at = F.coalesce("unload_ts", "snapshot_ts") if "unload_ts" in df.columns else F.col("snapshot_ts")
    # TransferShedder keeps its own state: against its previous unload of the bundle. The modular strategies start
    # each snapshot from what the cluster unloaded (transforms.grace_state): against the recorded unloads
    previous = F.lag(at).over(Window.partitionBy("cluster", "strategy", "bundle").orderBy(at))
    minutes_since = (F.unix_millis(at) - F.unix_millis(previous)) / 60_000.0
    recorded = gs.recorded_unloads(read("bronze", "ownership"), read("bronze", "broker_reports"),
                                   _optional(read, "bronze", "lb_events"))
    df = gs.in_grace(df.withColumn("_at", at).withColumn("_grace_ms", grace_minutes.cast("long") * 60_000), recorded)
    modular_ok = ~F.col("_in_grace") & ~F.coalesce(minutes_since == 0, F.lit(False))  # not twice in one cycle
    transfer_ok = F.coalesce(minutes_since > grace_minutes, F.lit(True)) | F.coalesce(F.col("swap"), F.lit(False))
    return (df.join(owned, [*KEYS, "broker", "bundle"], "left").fillna({"source_owns_bundle": False})
            .join(dest, [*KEYS, "destination"], "left")
            .withColumn("destination_live", F.col("destination").isNull() | F.coalesce("destination_live", F.lit(False)))
            .withColumn("destination_differs", F.col("destination").isNull() | (F.col("destination") != F.col("broker")))
            .withColumn("outside_grace_period", F.when(F.col("strategy") == "TransferShedder", transfer_ok)
                        .otherwise(modular_ok))
            .drop("_at", "_grace_ms", "_in_grace")
            .join(_load_change(df, reports, live), [*KEYS, "strategy"], "left"))


def capacity_forecast(read: Read) -> DataFrame:
    """The forecast band holds the forecast: low ≤ expected ≤ high on every day (rows without one pass)."""
    inside = F.forall(F.arrays_zip("forecast_low", "forecast", "forecast_high"),
                      lambda d: (d["forecast_low"] <= d["forecast"]) & (d["forecast"] <= d["forecast_high"]))
    return read("gold", "capacity_forecast").withColumn("band_ordered", F.coalesce(inside, F.lit(True)))


def pathologies(read: Read) -> DataFrame:
    """Every finding carries the rows behind it."""
    return read("gold", "pathologies").withColumn("evidence_rows", F.json_array_length("evidence"))


# suite name → (the asset it checks, its view, whether a failed critical expectation blocks downstream assets).
# Every bronze suite is a gate: silver must not be computed from a partition that failed one.
SUITES: dict[str, tuple[tuple[str, str], Callable[[Read], DataFrame], bool]] = {
    "bronze.snapshots": (("bronze", "snapshots"), snapshots, True),
    "bronze.broker_reports": (("bronze", "broker_reports"), broker_reports, True),
    "bronze.bundle_reports": (("bronze", "bundle_reports"), _table("bronze", "bundle_reports", in_day=True), True),
    "bronze.bundle_data": (("bronze", "bundle_data"), _table("bronze", "bundle_data", in_day=True), True),
    "bronze.resource_quotas": (("bronze", "resource_quotas"), _table("bronze", "resource_quotas", in_day=True), True),
    "bronze.topic_stats": (("bronze", "topic_stats"), _table("bronze", "topic_stats", in_day=True), True),
    "bronze.ownership": (("bronze", "ownership"), ownership, True),
    "bronze.namespaces": (("bronze", "namespaces"), namespaces, True),
    "bronze.config": (("bronze", "config"), _table("bronze", "config", in_day=True), True),
    "bronze.failure_domains": (("bronze", "failure_domains"), _table("bronze", "failure_domains", in_day=True), True),
    "bronze.lb_events": (("bronze", "lb_events"), lb_events, True),
    "bronze.report_writes": (("bronze", "report_writes"), report_writes, True),
    "silver.topic_bundle": (("silver", "topic_bundle"), _table("silver", "topic_bundle"), False),
    "silver.bundle_stats": (("silver", "bundle_stats"), bundle_stats, False),
    "silver.broker_usage": (("silver", "broker_usage"), broker_usage, False),
    "silver.bundle_time_averages": (("silver", "bundle_time_averages"), _table("silver", "bundle_time_averages"), False),
    "gold.split_triggers": (("gold", "split_triggers"), _table("gold", "split_triggers"), False),
    "gold.split_recommendations": (("gold", "split_recommendations"), split_recommendations, False),
    "gold.shedding_decisions": (("gold", "shedding_decisions"), shedding_decisions, False),
    "gold.broker_load_summary": (("gold", "broker_load_summary"), _table("gold", "broker_load_summary"), False),
    "gold.load_model": (("gold", "load_model"), _table("gold", "load_model"), False),
    "gold.simulation_timeseries": (("gold", "simulation_timeseries"), simulation_timeseries, False),
    "gold.simulation_runs": (("gold", "simulation_runs"), simulation_runs, False),
    "gold.simulation_validation": (("gold", "simulation_validation"), simulation_validation, False),
    "gold.recommendations": (("gold", "recommendations"), _table("gold", "recommendations"), False),
    "gold.capacity_forecast": (("gold", "capacity_forecast"), capacity_forecast, False),
    "gold.pathologies": (("gold", "pathologies"), pathologies, False),
    "gold.night_trends": (("gold", "night_trends"), _table("gold", "night_trends"), False),
}
