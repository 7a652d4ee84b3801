"""Bronze tables hold exactly what the snapshot files say, re-run idempotently, and quarantine bad input."""

import json
import shutil
import zlib
from pathlib import Path

import pytest

from lb_pipeline.ingest.bronze import ingest_day
from lb_pipeline.snapshots import layout
from lb_pipeline.spark.lake import Lake
from tests.conftest import DEMO_DAY, DEMO_SNAPSHOTS

pytestmark = pytest.mark.spark


def _snapshots(landing: Path):
    return list(layout.iter_snapshot_dirs(landing, DEMO_DAY))


def test_one_row_per_broker_per_snapshot(lake, spark, demo_landing):
    expected = sum(len(json.loads((s / layout.MANIFEST).read_text())["brokers"]) for s in _snapshots(demo_landing))
    df = lake.read(spark, "bronze", "broker_reports", DEMO_DAY)
    assert df.count() == expected
    assert df.select("cluster", "snapshot_ts", "broker").distinct().count() == expected
    assert df.where("source_file IS NULL OR cluster IS NULL").count() == 0


def test_topic_rows_match_the_files(lake, spark, demo_landing):
    expected = {}
    for snap in _snapshots(demo_landing):
        for f in (snap / "topics").iterdir():
            for ns, bundles in json.loads(f.read_text()).items():
                for domains in bundles.values():
                    for topics in domains.values():
                        for name, stats in topics.items():
                            expected[(snap.name, name)] = stats["msgRateIn"]
    rows = lake.read(spark, "bronze", "topic_stats", DEMO_DAY).select("snapshot_ts", "topic", "msg_rate_in").collect()
    got = {(r.snapshot_ts.strftime(layout.TS_FORMAT), r.topic): r.msg_rate_in for r in rows}
    assert got == expected


def test_snapshots_table_has_one_row_per_snapshot(lake, spark):
    assert lake.read(spark, "bronze", "snapshots", DEMO_DAY).count() == DEMO_SNAPSHOTS


def test_reingesting_a_day_leaves_the_tables_equal(lake, spark, demo_landing):
    before = {t: sorted(map(tuple, lake.read(spark, "bronze", t, DEMO_DAY).drop("snapshot_ts").collect()))
              for t in ("broker_reports", "bundle_reports", "ownership", "namespaces")}
    ingest_day(spark, lake, str(demo_landing), DEMO_DAY,
               tables=["broker_reports", "bundle_reports", "ownership", "namespaces"])
    after = {t: sorted(map(tuple, lake.read(spark, "bronze", t, DEMO_DAY).drop("snapshot_ts").collect()))
             for t in before}
    assert after == before


def _corrupt_copy(demo_landing: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the landing where some files are broken; returns (landing, {file suffix: expected field})."""
    landing = Path(shutil.copytree(demo_landing, tmp_path / "landing"))
    snaps = _snapshots(landing)
    expected = {}
    victim = next((snaps[0] / "lb/brokers").iterdir())
    victim.write_text(victim.read_text()[:200])  # truncated JSON
    expected[f"{snaps[0].name}/lb/brokers/{victim.name}"] = "(file)"
    own = next((snaps[1] / "ownership").iterdir())
    doc = json.loads(own.read_text())
    doc["acme/orders/0x90000000_0x20000000"] = {"broker_assignment": "shared"}  # range upside down
    own.write_text(json.dumps(doc))
    expected[f"{snaps[1].name}/ownership/{own.name}"] = "acme/orders/0x90000000_0x20000000"
    ns = next((snaps[2] / "namespaces").rglob("*.json"))
    ns.write_bytes(b"\xff\xfe not utf-8")
    expected[f"{snaps[2].name}/namespaces/{ns.parent.name}/{ns.name}"] = "(file)"
    return landing, expected


def test_bad_files_are_quarantined_with_file_and_field_and_good_files_land(spark, demo_landing, tmp_path):
    landing, expected = _corrupt_copy(demo_landing, tmp_path)
    lake = Lake(str(tmp_path / "lake"))
    result = ingest_day(spark, lake, str(landing), DEMO_DAY, tables=["broker_reports", "ownership", "namespaces"])
    q = lake.read(spark, "bronze", "quarantine", DEMO_DAY).collect()
    by_file = {r.source_file.split(f"/{landing.name}/demo-cluster/", 1)[1]: r for r in q}
    assert set(by_file) == set(expected)
    for suffix, field in expected.items():
        assert by_file[suffix].field == field and by_file[suffix].reason
    assert "expected valid JSON" in by_file[next(k for k in expected if "/lb/brokers/" in k)].reason
    assert by_file[next(k for k in expected if "/lb/brokers/" in k)].raw  # the raw text is kept
    brokers_per_snapshot = [len(json.loads((s / layout.MANIFEST).read_text())["brokers"]) for s in _snapshots(landing)]
    assert result.tables["broker_reports"].rows == sum(brokers_per_snapshot) - 1
    assert result.quarantined_by_table == {"broker_reports": 1, "ownership": 1, "namespaces": 1}


def test_a_day_without_snapshots_writes_empty_partitions(spark, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    result = ingest_day(spark, lake, str(tmp_path / "empty-landing"), "2026-02-01", tables=["snapshots"])
    assert result.tables["snapshots"].rows == 0 and result.quarantine.rows == 0


def test_crc32_in_spark_matches_zlib(lake, spark):
    rows = lake.read(spark, "silver", "topic_bundle", DEMO_DAY).select("topic", "topic_hash").limit(200).collect()
    assert rows and all(r.topic_hash == zlib.crc32(r.topic.encode()) for r in rows)
