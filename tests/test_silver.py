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
