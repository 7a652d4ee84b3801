"""Silver statistics against values computed independently from the snapshot JSON."""

import json
from collections import defaultdict

import pytest

from lb_pipeline.model.usage import percent_usage
from lb_pipeline.snapshots import layout
from lb_pipeline.transforms.silver import percent_usage as spark_percent_usage
from tests.conftest import DEMO_DAY

pytestmark = pytest.mark.spark


def test_bundle_rates_equal_the_sum_of_their_topics(lake, spark, demo_landing):
    expected = defaultdict(float)
    for snap in layout.iter_snapshot_dirs(demo_landing, DEMO_DAY):
        for f in (snap / "topics").iterdir():
            for ns, bundles in json.loads(f.read_text()).items():
                for rng, domains in bundles.items():
                    for topics in domains.values():
                        for stats in topics.values():
                            expected[(snap.name, f"{ns}/{rng}")] += stats["msgRateIn"]
    rows = lake.read(spark, "silver", "bundle_stats", DEMO_DAY).where("topics > 0").collect()
    got = {(r.snapshot_ts.strftime(layout.TS_FORMAT), r.bundle): r.msg_rate_in for r in rows}
    assert got.keys() == expected.keys()
    assert all(got[k] == pytest.approx(v, rel=1e-9) for k, v in expected.items())


def test_every_bundle_has_an_owner_and_a_hash_share(lake, spark):
    df = lake.read(spark, "silver", "bundle_stats", DEMO_DAY)
    assert df.where("owner_broker IS NULL").count() == 0
    shares = df.groupBy("snapshot_ts", "namespace").sum("hash_range_share").collect()
    assert all(r["sum(hash_range_share)"] == pytest.approx(1.0) for r in shares)


def test_every_topic_maps_to_the_bundle_it_was_reported_under(lake, spark):
    df = lake.read(spark, "silver", "topic_bundle", DEMO_DAY)
    assert df.count() > 0 and df.where("NOT matches_report").count() == 0


def test_broker_percentages_are_pulsars_float32_values(lake, spark, demo_landing):
    snap = next(layout.iter_snapshot_dirs(demo_landing, DEMO_DAY))
    rows = {r.broker: r for r in lake.read(spark, "silver", "broker_usage", DEMO_DAY).collect()
            if r.snapshot_ts.strftime(layout.TS_FORMAT) == snap.name}
    for f in (snap / "lb/brokers").iterdir():
        report = json.loads(f.read_text())
        row = rows[layout.broker_from_file_stem(f.name[:-5])]
        assert row.cpu_pct == percent_usage(report["cpu"]["usage"], report["cpu"]["limit"])
        assert row.max_usage == pytest.approx(report["maxResourceUsage"], abs=1e-12)
        assert row.totals_match_bundles


def test_spark_percent_matches_java_float_on_edge_cases(spark):
    cases = [(30.0, 100.0), (60.0, 100.0), (999.0, 1000.0), (5.0, 0.0), (5.0, -1.0), (1.0e7, 3.0)]
    df = spark.createDataFrame(cases, "u double, l double").select(spark_percent_usage("u", "l").alias("p"))
    assert [r.p for r in df.collect()] == [percent_usage(u, l) for u, l in cases]


def test_time_averages_follow_the_update_rule_on_a_hand_built_series(spark):
    from datetime import datetime

    from lb_pipeline.algorithms.time_average import update_loop
    from lb_pipeline.transforms.time_averages import bundle_time_averages

    t0, t1 = datetime(2026, 1, 15, 8), datetime(2026, 1, 15, 9)
    reports = spark.createDataFrame(
        [("c", t0, "2026-01-15", "a/b/0x00000000_0xffffffff", 100.0, 0.0, 1000.0, 0.0),
         ("c", t1, "2026-01-15", "a/b/0x00000000_0xffffffff", 100.0, 0.0, 1000.0, 0.0),
         ("c", t0, "2026-01-15", "a/c/0x00000000_0xffffffff", 100.0, 0.0, 1000.0, 0.0),
         ("c", t1, "2026-01-15", "a/c/0x00000000_0xffffffff", 100.0, 0.0, 1000.0, 0.0)],
        "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, msg_rate_in double, "
        "msg_rate_out double, msg_throughput_in double, msg_throughput_out double")
    ta = "num_samples int, msg_rate_in double, msg_rate_out double, msg_throughput_in double, msg_throughput_out double"
    stored = spark.createDataFrame(
        [("c", t0, "2026-01-15", "a/c/0x00000000_0xffffffff", 10, 200.0, 0.0, 2000.0, 0.0, 1000, 150.0, 0.0, 1500.0, 0.0)],
        "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, "
        + ", ".join(f"short_{c}" for c in ta.split(", ")) + ", " + ", ".join(f"long_{c}" for c in ta.split(", ")))
    rows = {(r.bundle[2], r.snapshot_ts.hour): r for r in bundle_time_averages(reports, stored).collect()}
    assert rows[("b", 8)].seeded_from == "default" and rows[("b", 8)].short_msg_rate_in == 100.0
    assert rows[("b", 9)].short_num_samples == 10 and rows[("b", 9)].long_num_samples == 61
    assert rows[("c", 8)].seeded_from == "stored" and rows[("c", 8)].long_msg_rate_in == 150.0
    assert rows[("c", 9)].samples_since_previous == 60
    assert rows[("c", 9)].short_msg_rate_in == pytest.approx(update_loop(10, 200.0, 100.0, 60, 10)[1])
    assert rows[("c", 9)].long_msg_rate_in == pytest.approx(update_loop(1000, 150.0, 100.0, 60, 1000)[1])


def test_the_leaders_stored_averages_win_wherever_a_snapshot_has_them_and_a_dropped_bundle_starts_afresh(spark):
    """With the metadata store collected, every snapshot holds the leader's BundleData: the replays take it, not a
    rebuild that drifts from it. A bundle no report listed at the snapshot before was dropped by the leader
    (``updateBundleData``) and starts again from its first sample."""
    from datetime import datetime

    from lb_pipeline.transforms.time_averages import bundle_time_averages

    t = [datetime(2026, 1, 15, 8, m) for m in (0, 1, 2)]
    cols = ("cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, msg_rate_in double, "
            "msg_rate_out double, msg_throughput_in double, msg_throughput_out double")
    moved, kept = "a/m/0x00000000_0xffffffff", "a/k/0x00000000_0xffffffff"
    reports = spark.createDataFrame([("c", t[i], "2026-01-15", b, 100.0, 0.0, 1000.0, 0.0)
                                     for i, b in [(0, moved), (2, moved), (0, kept), (1, kept), (2, kept)]], cols)
    ta = "num_samples int, msg_rate_in double, msg_rate_out double, msg_throughput_in double, msg_throughput_out double"
    stored = spark.createDataFrame(
        [("c", t[i], "2026-01-15", kept, 10, rate, 0.0, 2000.0, 0.0, 40, rate, 0.0, 1500.0, 0.0) for i, rate in
         [(0, 200.0), (2, 117.6)]],
        "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, "
        + ", ".join(f"short_{c}" for c in ta.split(", ")) + ", " + ", ".join(f"long_{c}" for c in ta.split(", ")))
    rows = {(r.bundle[2], r.snapshot_ts.minute): r for r in bundle_time_averages(reports, stored).collect()}
    assert rows[("k", 2)].seeded_from == "stored" and rows[("k", 2)].long_msg_rate_in == 117.6  # not the rebuild
    assert rows[("k", 1)].seeded_from is None and rows[("k", 2)].long_msg_rate_rel_diff > 0  # rebuilt, then compared
    assert rows[("m", 2)].seeded_from == "default" and rows[("m", 2)].long_num_samples == 1  # dropped at 08:01
    assert rows[("m", 2)].long_msg_rate_in == 100.0


def test_a_bundle_another_broker_lists_at_the_next_snapshot_starts_afresh_as_the_leader_dropped_it(spark):
    """Moved between two snapshots (the old owner's report stopped listing it before the new owner's listed it), a
    bundle's BundleData was dropped by the leader and restarts from its first sample on the new owner; one still
    listed by a broker that listed it before goes on."""
    from datetime import datetime

    from pyspark.sql import functions as F

    from lb_pipeline.transforms.time_averages import bundle_time_averages

    t = [datetime(2026, 1, 15, 8, m) for m in (0, 1)]
    moved, kept = "a/m/0x00000000_0xffffffff", "a/k/0x00000000_0xffffffff"
    reports = spark.createDataFrame(
        [("c", t[0], "2026-01-15", "x:1", moved, 100.0), ("c", t[1], "2026-01-15", "y:1", moved, 300.0),
         ("c", t[0], "2026-01-15", "x:1", kept, 100.0), ("c", t[1], "2026-01-15", "x:1", kept, 300.0),
         ("c", t[1], "2026-01-15", "y:1", kept, 300.0)],  # listed by both: the old report still has it
        "cluster string, snapshot_ts timestamp, snapshot_date string, broker string, bundle string, "
        "msg_rate_in double").select("*", *[F.lit(0.0).alias(c) for c in
                                            ("msg_rate_out", "msg_throughput_in", "msg_throughput_out")])
    stored = spark.createDataFrame([], "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, "
                                   + ", ".join(f"{w}_{c}" for w in ("short", "long") for c in (
                                       "num_samples int", "msg_rate_in double", "msg_rate_out double",
                                       "msg_throughput_in double", "msg_throughput_out double")))
    rows = {(r.bundle[2], r.snapshot_ts.minute): r for r in bundle_time_averages(reports, stored).collect()}
    assert rows[("m", 1)].seeded_from == "default" and rows[("m", 1)].long_num_samples == 1
    assert rows[("m", 1)].long_msg_rate_in == 300.0  # its first sample on the new owner replaces the seed
    assert rows[("k", 1)].seeded_from is None and rows[("k", 1)].long_num_samples > 1
    assert 100.0 < rows[("k", 1)].long_msg_rate_in < 300.0


def test_the_stored_averages_take_the_samples_the_leader_took_since_it_wrote_them(spark):
    """The leader writes BundleData every loadBalancerResourceQuotaUpdateIntervalMinutes and takes a sample of every
    bundle at each broker's report write: 4 writes logged in the minute before the snapshot, the copy written 30 s
    before it, so 2 samples of the snapshot's stats on top of the stored averages."""
    from datetime import datetime, timedelta

    from lb_pipeline.algorithms.time_average import update_loop
    from lb_pipeline.transforms.time_averages import bundle_time_averages

    t0, t1 = datetime(2026, 1, 15, 8, 0), datetime(2026, 1, 15, 8, 1)
    keys = "cluster string, snapshot_ts timestamp, snapshot_date string"
    bundle = "a/k/0x00000000_0xffffffff"
    reports = spark.createDataFrame([("c", t, "2026-01-15", bundle, 300.0, 0.0, 3000.0, 0.0) for t in (t0, t1)],
                                    f"{keys}, bundle string, msg_rate_in double, msg_rate_out double, "
                                    "msg_throughput_in double, msg_throughput_out double")
    ta = "num_samples int, msg_rate_in double, msg_rate_out double, msg_throughput_in double, msg_throughput_out double"
    stored = spark.createDataFrame(
        [("c", t1, "2026-01-15", bundle, 10, 100.0, 0.0, 1000.0, 0.0, 40, 100.0, 0.0, 1000.0, 0.0)],
        f"{keys}, bundle string, " + ", ".join(f"short_{c}" for c in ta.split(", ")) + ", "
        + ", ".join(f"long_{c}" for c in ta.split(", ")))
    written = int((t1 - timedelta(seconds=30)).replace(tzinfo=__import__("datetime").timezone.utc).timestamp() * 1000)
    snaps = spark.createDataFrame([("c", t0, "2026-01-15", None), ("c", t1, "2026-01-15", written)],
                                  f"{keys}, bundle_data_written_ms long")
    events = spark.createDataFrame([("c", t1, "2026-01-15", "report-written")] * 4, f"{keys}, kind string")
    rows = {r.snapshot_ts.minute: r for r in bundle_time_averages(reports, stored, snapshots=snaps, events=events).collect()}
    assert rows[1].seeded_from == "stored" and rows[1].samples_since_previous == 2
    assert rows[1].short_msg_rate_in == pytest.approx(update_loop(10, 100.0, 300.0, 2, 10)[1])
    assert rows[1].long_num_samples == 42
    # the leader's own sample before each time it stores its averages comes on top of the logged writes
    from lb_pipeline.transforms.time_averages import leader_cadence

    cadence = lambda every: {r.snapshot_ts.minute: r.leader_samples_per_minute  # noqa: E731
                             for r in leader_cadence(snaps, events, every).collect()}
    assert cadence(None)[1] == 4.0 and cadence({"c": 1.0})[1] == 5.0 and cadence({"other": 1.0})[1] == 4.0
    assert cadence({"c": 15.0})[1] == pytest.approx(4 + 1 / 15) and cadence({"c": 1.0})[0] is None  # no minute before


def test_rebuilt_averages_match_the_stored_bundle_data_of_the_generated_day(lake, spark):
    df = lake.read(spark, "silver", "bundle_time_averages", DEMO_DAY).where("stored_long_msg_rate IS NOT NULL")
    assert df.count() > 0
    assert df.agg({"long_msg_rate_rel_diff": "max"}).collect()[0][0] < 1e-6


def crc32_forged(prefix: str, target: int = 0xFFFFFFFF) -> str:
    """``prefix`` plus 40 letters, each 'a' or 'b', chosen so that the CRC-32 is ``target``: CRC-32 is affine over
    GF(2), so flipping a letter xors a fixed pattern into the checksum and a linear system picks the flips."""
    import zlib

    base = prefix + "a" * 40
    start = zlib.crc32(base.encode())
    effects = [zlib.crc32((prefix + "a" * i + "b" + "a" * (39 - i)).encode()) ^ start for i in range(40)]
    rows = [(e, 1 << i) for i, e in enumerate(effects)]  # (effect on the crc, set of flipped positions)
    want, chosen = start ^ target, 0
    for bit in range(32):  # Gaussian elimination over GF(2), one crc bit at a time
        pivot = next((r for r in rows if r[0] >> bit & 1), None)
        if pivot is None:
            continue
        rows = [(e ^ pivot[0], m ^ pivot[1]) if e >> bit & 1 and (e, m) != pivot else (e, m) for e, m in rows if (e, m) != pivot]
        if want >> bit & 1:
            want, chosen = want ^ pivot[0], chosen ^ pivot[1]
    name = prefix + "".join("b" if chosen >> i & 1 else "a" for i in range(40))
    assert zlib.crc32(name.encode()) == target
    return name


def test_a_topic_hashing_to_0xffffffff_is_flagged_as_unservable(spark):
    from datetime import datetime

    from lb_pipeline.transforms.silver import topic_bundle

    keys = {"cluster": "c", "snapshot_ts": datetime(2026, 1, 15, 8), "snapshot_date": "2026-01-15"}
    forged = crc32_forged("persistent://acme/orders/t-")
    stats = spark.createDataFrame([{**keys, "broker": "b:8080", "namespace": "acme/orders", "topic": t,
                                    "bundle_range": "0x80000000_0xffffffff"} for t in (forged, "persistent://acme/orders/ok")])
    namespaces = spark.createDataFrame([{**keys, "namespace": "acme/orders", "num_bundles": 2,
                                         "boundaries": ["0x00000000", "0x80000000", "0xffffffff"]}])
    rows = {r.topic: r for r in topic_bundle(stats, namespaces).collect()}
    assert rows[forged].lookup_fails and rows[forged].bundle_range == "0x80000000_0xffffffff"  # the last bundle holds it
    assert not rows["persistent://acme/orders/ok"].lookup_fails


def test_a_report_written_while_pulsar_refilled_its_stats_matches_its_bundles_and_a_wrong_total_does_not(lake, spark):
    """Pulsar writes a report's lastStats from the broker's live stats map, which its stats thread clears and
    refills: a report written meanwhile lists fewer bundles than its numBundles, whose totals are above their sum
    (recorded on a real 4.0.7 broker). That is Pulsar's shape; totals above the sum of every bundle they counted
    are not."""
    from pyspark.sql import functions as F

    from lb_pipeline.transforms.silver import broker_usage

    reports = lake.read(spark, "bronze", "broker_reports", DEMO_DAY)
    bundles = lake.read(spark, "bronze", "bundle_reports", DEMO_DAY)
    one = reports.select("snapshot_ts", "broker").orderBy("snapshot_ts", "broker").first()
    mine = (F.col("snapshot_ts") == F.lit(one.snapshot_ts)) & (F.col("broker") == one.broker)
    kept = bundles.where(mine).orderBy(F.col("msg_rate_in").desc()).limit(1)  # a refill reached one bundle
    partial = bundles.where(~mine).unionByName(kept)

    def matches(reports, bundles) -> bool:
        (row,) = broker_usage(reports, bundles).where(mine).collect()
        return row.totals_match_bundles

    assert reports.where(mine).first().num_bundles > 1 and matches(reports, bundles)
    assert matches(reports, partial)  # fewer bundles than counted, totals above their sum: Pulsar's refill
    inflated = reports.withColumn("msg_rate_in", F.when(mine, F.col("msg_rate_in") * 2).otherwise(F.col("msg_rate_in")))
    assert not matches(inflated, bundles)  # every bundle it counted is there, and the total is twice their sum


def test_a_bundle_the_leader_starts_afresh_starts_from_its_resource_quota_with_a_full_window(spark):
    """``getBundleDataOrDefault``: without stored BundleData, a bundle's ResourceQuota (an admin's) seeds both averages
    with ample history, so the first sample weighs 1/10 and 1/1000; without a quota the first sample replaces the
    default seed. At a bundle's first snapshot of the day the quota is not read (the leader may have held it long)."""
    from datetime import datetime

    from lb_pipeline.algorithms.time_average import update_loop
    from lb_pipeline.transforms.time_averages import bundle_time_averages

    t = [datetime(2026, 1, 15, 8, m) for m in (0, 1, 2)]
    quoted, plain = "a/q/0x00000000_0xffffffff", "a/p/0x00000000_0xffffffff"
    kept = "a/k/0x00000000_0xffffffff"  # listed at 08:01 too: the cluster had a snapshot then
    reports = spark.createDataFrame([("c", t[i], "2026-01-15", b, 100.0, 20.0, 1000.0, 500.0)
                                     for i, b in [(0, quoted), (2, quoted), (0, plain), (2, plain), (0, kept), (1, kept),
                                                  (2, kept)]],
                                    "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, "
                                    "msg_rate_in double, msg_rate_out double, msg_throughput_in double, "
                                    "msg_throughput_out double")
    stored = spark.createDataFrame([], "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, "
                                   + ", ".join(f"{w}_{c}" for w in ("short", "long") for c in (
                                       "num_samples int", "msg_rate_in double", "msg_rate_out double",
                                       "msg_throughput_in double", "msg_throughput_out double")))
    quotas = spark.createDataFrame([("c", t[i], "2026-01-15", quoted, 400.0, 80.0, 9000.0, 7000.0) for i in (0, 2)],
                                   "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, "
                                   "msg_rate_in double, msg_rate_out double, bandwidth_in double, bandwidth_out double")
    rows = {(r.bundle[2], r.snapshot_ts.minute): r for r in bundle_time_averages(reports, stored, quotas=quotas).collect()}
    first, again = rows[("q", 0)], rows[("q", 2)]  # dropped at 08:01 (no report listed it): started afresh at 08:02
    assert first.seeded_from == "default" and first.short_msg_rate_in == 100.0
    assert again.seeded_from == "resource-quota" and (again.short_num_samples, again.long_num_samples) == (10, 1000)
    for w, window in (("short", 10), ("long", 1000)):
        for field, quota, sample in (("msg_rate_in", 400.0, 100.0), ("msg_rate_out", 80.0, 20.0),
                                     ("msg_throughput_in", 9000.0, 1000.0), ("msg_throughput_out", 7000.0, 500.0)):
            assert getattr(again, f"{w}_{field}") == pytest.approx(update_loop(window, quota, sample, 1, window)[1])
    assert rows[("p", 2)].seeded_from == "default" and rows[("p", 2)].long_msg_rate_in == 100.0
    # without the quotas table: the default seed, as before
    assert bundle_time_averages(reports, stored).where("bundle = 'a/q/0x00000000_0xffffffff'").orderBy(
        "snapshot_ts").collect()[-1].long_msg_rate_in == 100.0
