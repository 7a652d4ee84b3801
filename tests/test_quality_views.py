"""Validation views: each derived property a suite checks is computed from corrupted *source* tables (built
here from the demo day's lake), and the suite then fails naming the offending rows."""

import pytest
from pyspark.sql import functions as F

from lb_pipeline.quality import views
from lb_pipeline.quality.runner import validate
from tests.conftest import DEMO_DAY

pytestmark = pytest.mark.spark


# Derived properties: the view must compute them from corrupted *source* tables (built here), and the suite must
# then fail naming the offending rows.

def _reader(lake, spark, **overrides):
    def read(layer, table):
        df = lake.read(spark, layer, table, DEMO_DAY)
        change = overrides.get(f"{layer}__{table}")
        return change(df) if change else df
    return read


def _replace(spark, df, change):
    """``df`` with ``change(pandas frame)`` applied (tables here are a few hundred rows)."""
    return spark.createDataFrame(change(df.toPandas()), df.schema)


def _dynamic(key, value, at=None):
    """A change of ``bronze/config``: ``key`` overridden to ``value`` as `brokers update-dynamic-config` would, in
    every snapshot or only in the one at ``at``."""
    def change(config):
        replaced = (F.col("source") == "dynamic") & (F.col("key") == key)
        if at is not None:
            replaced &= F.col("snapshot_ts") == at
        rows = config if at is None else config.where(F.col("snapshot_ts") == at)
        override = (rows.dropDuplicates(["cluster", "snapshot_ts"]).withColumn("source", F.lit("dynamic"))
                    .withColumn("key", F.lit(key)).withColumn("value", F.lit(value)))
        return config.where(~replaced).unionByName(override)
    return change


def _failure(summary, column):
    (failure,) = [f for f in summary.failures if f.column == column]
    assert failure.severity == "critical" and column in failure.describe()
    return failure


def test_namespace_layouts_must_be_contiguous_and_cover_the_ring(spark, lake):
    def corrupt(pdf):
        multi = pdf[pdf["num_bundles"] >= 2].drop_duplicates("namespace")
        assert len(multi) >= 1
        i = multi.index[0]
        bounds = list(pdf.at[i, "boundaries"])
        pdf.at[i, "boundaries"] = [bounds[0], bounds[0], *bounds[2:]]  # an empty first bundle
        pdf.at[i, "namespace"] = "t/out-of-order"
        j = pdf.index[pdf.index != i][0]
        pdf.at[j, "boundaries"] = list(pdf.at[j, "boundaries"][:-1]) + ["0xfffffff0"]
        pdf.at[j, "namespace"] = "t/short-of-the-end"
        k = pdf.index[(pdf.index != i) & (pdf.index != j)][0]
        pdf.at[k, "num_bundles"] = int(pdf.at[k, "num_bundles"]) + 1
        pdf.at[k, "namespace"] = "t/count-mismatch"
        return pdf

    read = _reader(lake, spark, bronze__namespaces=lambda df: _replace(spark, df, corrupt))
    summary = validate(views.namespaces(read), "bronze.namespaces")
    for column, namespace in (("boundaries_increasing", "t/out-of-order"), ("boundaries_cover_ring", "t/short-of-the-end"),
                              ("bundle_count_matches", "t/count-mismatch")):
        failure = _failure(summary, column)
        assert [r["namespace"] for r in failure.rows] == [namespace], (column, failure.rows)


def test_bundle_stats_need_a_live_owner_a_namespace_bundle_and_the_reported_sums(spark, lake):
    picked = {}

    def corrupt(pdf):
        busy = pdf[pdf["topics"] > 0].index
        a, b, c = busy[0], busy[1], busy[2]
        pdf.at[a, "owner_broker"] = "ghost-broker:8080"
        pdf.at[b, "bundle_range"] = "0x00000000_0x00000010"
        pdf.at[b, "bundle"] = pdf.at[b, "namespace"] + "/0x00000000_0x00000010"
        pdf.at[c, "msg_rate_in"] = pdf.at[c, "msg_rate_in"] + 1000.0
        picked.update(live=pdf.at[a, "bundle"], layout=pdf.at[b, "bundle"], sums=pdf.at[c, "bundle"])
        return pdf

    read = _reader(lake, spark, silver__bundle_stats=lambda df: _replace(spark, df, corrupt))
    summary = validate(views.bundle_stats(read), "silver.bundle_stats")
    assert [r["owner_broker"] for r in _failure(summary, "owner_is_live").rows] == ["ghost-broker:8080"]
    assert [r["bundle"] for r in _failure(summary, "range_is_namespace_bundle").rows] == [picked["layout"]]
    assert picked["sums"] in [r["bundle"] for r in _failure(summary, "matches_report").rows]


def test_a_bundle_whose_owners_load_report_did_not_land_has_no_report_to_disagree_with(spark, lake):
    """A broker's load report not collected left every bundle it owned failing the critical sums check; a report
    that landed without one of its bundles still fails it."""
    busy = lake.read(spark, "silver", "bundle_stats", DEMO_DAY).where("topics > 0").first()
    theirs = (F.col("broker") == busy.owner_broker) & (F.col("snapshot_ts") == busy.snapshot_ts)
    without_report = _reader(lake, spark, bronze__broker_reports=lambda df: df.where(~theirs),
                             bronze__bundle_reports=lambda df: df.where(~theirs))
    summary = validate(views.bundle_stats(without_report), "silver.bundle_stats")
    assert "matches_report" not in [f.column for f in summary.failures]
    without_bundles = _reader(lake, spark, bronze__bundle_reports=lambda df: df.where(~theirs))
    failed = _failure(validate(views.bundle_stats(without_bundles), "silver.bundle_stats"), "matches_report")
    assert busy.bundle in [r["bundle"] for r in failed.rows]


def test_a_report_another_broker_still_holds_after_a_move_is_not_compared_with_the_owners_topics(spark, lake):
    """A broker's load report is rewritten only when its load moved enough, or every 15 minutes: after a move the
    old owner's report may still list the bundle, and the new owner's may not list it yet."""
    busy = lake.read(spark, "silver", "bundle_stats", DEMO_DAY).where("topics > 0").first()
    other = (lake.read(spark, "bronze", "broker_reports", DEMO_DAY)
             .where((F.col("snapshot_ts") == busy.snapshot_ts) & (F.col("broker") != busy.owner_broker)).first().broker)
    row = (F.col("bundle") == busy.bundle) & (F.col("snapshot_ts") == busy.snapshot_ts)
    stale = lambda df: df.unionByName(df.where(row).withColumn("broker", F.lit(other))  # noqa: E731
                                      .withColumn("msg_rate_in", F.col("msg_rate_in") + 1000.0))
    moved = lambda df: df.withColumn("broker", F.when(row, F.lit(other)).otherwise(F.col("broker")))  # noqa: E731
    for change in (stale, moved):
        summary = validate(views.bundle_stats(_reader(lake, spark, bronze__bundle_reports=change)), "silver.bundle_stats")
        assert "matches_report" not in [f.column for f in summary.failures]
    owners_off = lambda df: df.withColumn("msg_rate_in", F.when(row, F.col("msg_rate_in") + 1000.0)  # noqa: E731
                                          .otherwise(F.col("msg_rate_in")))
    failed = _failure(validate(views.bundle_stats(_reader(lake, spark, bronze__bundle_reports=lambda df: stale(owners_off(df)))),
                               "silver.bundle_stats"), "matches_report")
    assert [r["bundle"] for r in failed.rows] == [busy.bundle]


def test_an_owned_bundle_overlapping_another_owned_bundle_of_its_namespace_is_a_warning(spark, lake):
    own = lake.read(spark, "bronze", "ownership", DEMO_DAY)
    first = own.orderBy("snapshot_ts", "bundle").first()
    whole = (own.where((F.col("snapshot_ts") == first.snapshot_ts) & (F.col("bundle") == first.bundle))
             .withColumn("bundle_range", F.lit("0x00000000_0xffffffff"))
             .withColumn("bundle", F.concat_ws("/", "namespace", "bundle_range")))
    elsewhere = (own.where(F.col("namespace") != first.namespace).orderBy("snapshot_ts", "bundle").limit(1)
                 .withColumn("broker", F.lit("another:8080")).withColumn("bundle_range", F.lit("0x00000000_0x00000001"))
                 .withColumn("bundle", F.concat_ws("/", "namespace", "bundle_range")))
    clean = validate(views.ownership(_reader(lake, spark)), "bronze.ownership")
    assert clean.success and not clean.failures
    summary = validate(views.ownership(_reader(lake, spark, bronze__ownership=lambda df: df.unionByName(whole))),
                       "bronze.ownership")
    (failure,) = summary.failures
    assert failure.column == "overlaps_another_owned" and failure.severity == "warning" and not summary.critical
    same = own.where((F.col("snapshot_ts") == first.snapshot_ts) & (F.col("namespace") == first.namespace)).count()
    assert failure.unexpected_count == same + 1  # the whole range and every bundle of that namespace and snapshot
    apart = validate(views.ownership(_reader(lake, spark, bronze__ownership=lambda df: df.unionByName(elsewhere))),
                     "bronze.ownership")
    assert [f.column for f in apart.failures] == ["overlaps_another_owned"]


def test_split_children_must_tile_the_parent_and_boundaries_lie_inside(spark, lake):
    picked = {}

    def corrupt(pdf):
        splits = pdf[pdf["splits"]].index
        assert len(splits) >= 2, "the demo day should recommend at least two splits"
        a, b = splits[0], splits[1]
        pdf.at[a, "children"] = list(pdf.at[a, "children"])[:-1]  # the last child is missing: a gap
        lower = pdf.at[b, "bundle"].rsplit("/", 1)[1].split("_")[0]
        pdf.at[b, "boundaries"] = [lower]  # a boundary on the parent's own lower bound: an empty child
        picked.update(tile=(pdf.at[a, "bundle"], pdf.at[a, "algorithm"]), inside=(pdf.at[b, "bundle"], pdf.at[b, "algorithm"]))
        return pdf

    read = _reader(lake, spark, gold__split_recommendations=lambda df: _replace(spark, df, corrupt))
    summary = validate(views.split_recommendations(read), "gold.split_recommendations")
    assert picked["tile"] in [(r["bundle"], r["algorithm"]) for r in _failure(summary, "children_tile").rows]
    assert [(r["bundle"], r["algorithm"]) for r in _failure(summary, "boundaries_inside").rows] == [picked["inside"]]


def test_unload_decisions_must_be_owned_live_elsewhere_outside_the_grace_period_and_conserve_load(spark, lake):
    import pandas as pd

    decisions = lake.read(spark, "gold", "shedding_decisions", DEMO_DAY).toPandas()
    times = sorted(lake.read(spark, "bronze", "snapshots", DEMO_DAY).toPandas()["snapshot_ts"])
    first = decisions[decisions["snapshot_ts"] == decisions["snapshot_ts"].min()].reset_index(drop=True)
    assert len(first) >= 1, "the demo day should shed at least once"
    picked = {}

    def corrupt(pdf):
        base = first.iloc[0].to_dict()
        rows = []
        for name, change in (("self", {"destination": base["broker"]}), ("ghost", {"destination": "ghost-broker:8080"}),
                             ("unowned", {"bundle": base["bundle"].rsplit("/", 1)[0] + "/0x00000000_0x00000010"})):
            rows.append({**base, "strategy": f"Test-{name}", **change})
        rows += [{**base, "strategy": "Test-twice"}] * 2  # the same bundle moved twice in one cycle
        later = times[times.index(base["snapshot_ts"]) + 1]
        # TransferShedder keeps its own grace state: again an hour later is inside it; a modular strategy starts each
        # snapshot from what the cluster unloaded, and the demo cluster did not unload this bundle: not held back
        again = {"snapshot_ts": later, "unload_ts": later}
        rows += [{**base, "strategy": "TransferShedder"}, {**base, "strategy": "TransferShedder", **again}]
        rows += [{**base, "strategy": "Test-modular"}, {**base, "strategy": "Test-modular", **again}]
        # TransferShedder's swapped-back bundles are not held back by the grace period (Pulsar does not check them)
        latest = times[times.index(base["snapshot_ts"]) + 2]
        rows += [{**base, "strategy": "TransferShedder", "snapshot_ts": latest, "unload_ts": latest, "swap": True}]
        own = lake.read(spark, "bronze", "ownership", DEMO_DAY).where(f"bundle = '{base['bundle']}'").toPandas()
        owners = own.groupby("snapshot_ts")["broker"].first()
        picked.update(bundle=base["bundle"], later=later,
                      moved_before=bool(owners.get(later) is not None and owners.get(later) != owners.get(base["snapshot_ts"])))
        return pd.DataFrame(rows, columns=pdf.columns)  # only these: the real ones may repeat within 600 minutes

    # set before the night, in every snapshot: each is judged under its own
    read = _reader(lake, spark, gold__shedding_decisions=lambda df: _replace(spark, df, corrupt),
                   bronze__config=_dynamic("loadBalancerSheddingGracePeriodMinutes", "600"))
    summary = validate(views.shedding_decisions(read), "gold.shedding_decisions")
    assert [r["strategy"] for r in _failure(summary, "destination_differs").rows] == ["Test-self"]
    assert [r["strategy"] for r in _failure(summary, "destination_live").rows] == ["Test-ghost"]
    assert [r["strategy"] for r in _failure(summary, "source_owns_bundle").rows] == ["Test-unowned"]
    inside_grace = _failure(summary, "outside_grace_period").rows  # again an hour later; twice in one cycle
    assert sorted(r["strategy"] for r in inside_grace) == ["Test-twice", "TransferShedder"]
    (again,) = [r for r in inside_grace if r["strategy"] == "TransferShedder"]
    assert again["bundle"] == picked["bundle"] and str(again["snapshot_ts"]) == str(picked["later"])
    conservation = _failure(summary, "total_load_change")
    assert {r["strategy"] for r in conservation.rows} == {"Test-ghost", "Test-twice"}
    assert picked["moved_before"] is False  # so Test-modular's second unload was the replay's to make
    assert min(conservation.unexpected_values) < 0 < max(conservation.unexpected_values)


def test_a_load_report_older_than_its_rewrite_interval_or_written_after_the_snapshot_is_a_warning(spark, lake):
    import pandas as pd

    times = sorted(lake.read(spark, "bronze", "snapshots", DEMO_DAY).toPandas()["snapshot_ts"])
    first, last = times[0], times[-1]
    # minutes before the snapshot each report was written (negative: after it), by snapshot and the broker's rank
    ages = {first: [21, 19, -6, -4, None], last: [64, 66]}

    def corrupt(pdf):
        for ts, minutes in ages.items():
            rows = pdf.index[pdf["snapshot_ts"] == ts].sort_values()
            assert len(rows) >= len(minutes)
            for i, m in zip(rows, minutes):
                pdf.at[i, "last_update_ms"] = None if m is None else int(pd.Timestamp(ts).value // 10**6 - m * 60_000)
        return pdf

    # set in the last snapshot only: each is judged under its own
    read = _reader(lake, spark, bronze__broker_reports=lambda df: _replace(spark, df, corrupt),
                   bronze__config=_dynamic("loadBalancerReportUpdateMaxIntervalMinutes", "60", at=last))
    summary = validate(views.broker_usage(read), "silver.broker_usage")
    (failure,) = [f for f in summary.failures if f.column == "report_of_its_snapshot"]
    assert failure.severity == "warning"  # the usage lands and the night goes on
    # 15 minutes (Pulsar's default) and the 5 a collection may take; 60 + 5 where the override is in force
    assert sorted((str(r["snapshot_ts"]), r["report_age_minutes"]) for r in failure.rows) == sorted(
        [(str(first), 21.0), (str(first), -6.0), (str(last), 66.0)])


def test_a_modular_unload_of_a_bundle_the_cluster_unloaded_within_the_grace_period_is_caught(spark):
    """The modular replays start each snapshot from what the cluster unloaded (transforms.grace_state): the check
    reads the same record, the leader's logged unloads where its logs landed, else the ownership changes."""
    from datetime import datetime, timezone

    from lb_pipeline.transforms import grace_state as gs

    t = [datetime(2026, 1, 15, 8, m, tzinfo=timezone.utc) for m in (0, 2, 4)]
    own = spark.createDataFrame([("c", t[0], "t/n/0x0_0x1", "a"), ("c", t[1], "t/n/0x0_0x1", "b"),
                                 ("c", t[2], "t/n/0x0_0x1", "b")],
                                "cluster string, snapshot_ts timestamp, bundle string, broker string")
    snaps = spark.createDataFrame([("c", x, b) for x in t for b in "ab"], "cluster string, snapshot_ts timestamp, broker string")
    recorded = gs.recorded_unloads(own, snaps, None)
    assert [(r.bundle, r.recorded_ms) for r in recorded.collect()] == [
        ("t/n/0x0_0x1", int(datetime(2026, 1, 15, 8, 1, tzinfo=timezone.utc).timestamp() * 1000))]  # halfway
    decisions = spark.createDataFrame(
        [("c", t[1], "OverloadShedder", "t/n/0x0_0x1", t[1], 2 * 60_000),    # 1 min after: held back
         ("c", t[2], "OverloadShedder", "t/n/0x0_0x1", t[2], 2 * 60_000),    # 3 min after: free again
         ("c", t[1], "TransferShedder", "t/n/0x0_0x1", t[1], 2 * 60_000)],   # its own state: not judged here
        "cluster string, snapshot_ts timestamp, strategy string, bundle string, _at timestamp, _grace_ms long")
    got = {(r.strategy, r.snapshot_ts.minute): r._in_grace for r in gs.in_grace(decisions, recorded).collect()}
    assert got == {("OverloadShedder", 2): True, ("OverloadShedder", 4): False, ("TransferShedder", 2): False}
    events = spark.createDataFrame([("c", "unload", "t/n/0x0_0x1", t[2])],
                                   "cluster string, kind string, bundle string, event_ts timestamp")
    logged = gs.recorded_unloads(own, snaps, events)  # the logs win: the ownership change is not counted twice
    assert [r.recorded_ms for r in logged.collect()] == [int(t[2].timestamp() * 1000)]
