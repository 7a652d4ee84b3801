"""Bronze tables hold exactly what the snapshot files say, re-run idempotently and refuse files changed since they
were listed (bad input of every kind: test_hostile)."""

import json
import os
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


def test_a_day_without_snapshots_writes_empty_partitions(spark, tmp_path):
    lake = Lake(str(tmp_path / "lake"))
    result = ingest_day(spark, lake, str(tmp_path / "empty-landing"), "2026-02-01", tables=["snapshots"])
    assert result.tables["snapshots"].rows == 0 and result.quarantine.rows == 0


def test_crc32_in_spark_matches_zlib(lake, spark):
    rows = lake.read(spark, "silver", "topic_bundle", DEMO_DAY).select("topic", "topic_hash").limit(200).collect()
    assert rows and all(r.topic_hash == zlib.crc32(r.topic.encode()) for r in rows)


def test_empty_files_and_directories_are_listed_alike_locally_and_through_hadoop(spark, demo_landing, tmp_path):
    from lb_pipeline.ingest.landing import list_day
    from lb_pipeline.ingest.tables import TABLES

    globs = {t.name: t.globs for t in TABLES.values()}
    landing = Path(shutil.copytree(demo_landing, tmp_path / "landing"))
    (landing / "demo-cluster" / f"{DEMO_DAY}T09-30-00Z").mkdir()
    snapshot = sorted((landing / "demo-cluster").glob(f"{DEMO_DAY}T08*"))[0]
    (snapshot / "config" / "dynamic.json").write_text("")
    local, hadoop = list_day(spark, str(landing), DEMO_DAY, globs), list_day(spark, str(landing), DEMO_DAY, globs, hadoop=True)
    uri = list_day(spark, f"file:{landing}", DEMO_DAY, globs)
    for listing in (hadoop, uri):
        assert (listing.empty_dirs, listing.empty_files) == (local.empty_dirs, local.empty_files)
        assert {t: sorted(f) for t, f in listing.files.items()} == {t: sorted(f) for t, f in local.files.items()}
    assert local.empty_dirs == [f"file:{landing}/demo-cluster/{DEMO_DAY}T09-30-00Z"]
    assert local.empty_files == [f"file:{snapshot}/config/dynamic.json"] and not local.refused


def _parsed(spark, paths, sizes=None, manifests=None):
    from lb_pipeline.ingest.bronze import parse_family
    from lb_pipeline.ingest.tables import TABLES

    frame = parse_family(spark, paths, [TABLES["broker_reports"], TABLES["bundle_reports"]], manifests, sizes)
    return sorted(frame.collect(), key=lambda r: (r.source_file, r._table, r.broker or "", r.bundle or "", r._field or ""))


def test_workers_read_the_listed_files_as_spark_would_and_refuse_what_changed_since(spark, demo_landing, tmp_path, monkeypatch):
    from lb_pipeline.ingest.landing import list_day
    from lb_pipeline.ingest.tables import TABLES

    landing = Path(shutil.copytree(demo_landing, tmp_path / "landing"))
    listing = list_day(spark, str(landing), DEMO_DAY, {t.name: t.globs for t in TABLES.values()})
    paths = listing.files["broker_reports"]
    assert _parsed(spark, paths, listing.sizes) == _parsed(spark, paths)  # the same rows as Spark's binaryFile gives
    paths = sorted(paths, key=lambda p: -listing.sizes[p])
    grown, swapped = (Path(p[len("file:"):]) for p in paths[:2])  # the largest file, as if it had grown since
    (tmp_path / "outside.json").write_text(swapped.read_text())
    swapped.unlink()
    swapped.symlink_to(tmp_path / "outside.json")  # after the listing: a link where a listed file was
    monkeypatch.setenv("LB_MAX_FILE_BYTES", str(grown.stat().st_size - 1))
    rows = _parsed(spark, paths, listing.sizes)
    refused = {(r.source_file, r._table): (r._field, r._reason) for r in rows if r._reason}
    assert refused == {
        **{(f"file:{swapped}", t): ("(file)", "refused: a symbolic link put in its place since it was listed (never "
                                              "followed, not read)") for t in ("broker_reports", "bundle_reports")},
        **{(f"file:{grown}", t): ("(file)", f"expected at most {grown.stat().st_size - 1} bytes (LB_MAX_FILE_BYTES), got "
                                            "more since it was listed: not read") for t in ("broker_reports", "bundle_reports")}}
    assert {r.source_file for r in rows if not r._reason} == {f for f in paths[2:]}


def test_a_landing_folder_inside_a_folder_named_like_a_snapshot_time_lands_its_snapshot_as_it_is(spark, tmp_path):
    """The workers place each file by the folders after the landing folder: a parent named like a snapshot time
    had become the cluster's snapshot, and the genuine snapshot's manifest was quarantined with it."""
    from lb_pipeline.snapshots.generate import generate

    landing = tmp_path / f"{DEMO_DAY}T00-00-00Z" / "landing"
    generate(landing, "demo", seed=5, start=f"{DEMO_DAY}T08:00:00Z", snapshots=1)
    lake = Lake(str(tmp_path / "lake"))
    result = ingest_day(spark, lake, str(landing), DEMO_DAY, tables=["snapshots", "broker_reports"])
    assert result.quarantine.rows == 0 and result.tables["broker_reports"].rows > 0
    placed = {(r.cluster, r.snapshot_ts.strftime("%H:%M")) for t in ("snapshots", "broker_reports")
              for r in lake.read(spark, "bronze", t, DEMO_DAY).select("cluster", "snapshot_ts").distinct().collect()}
    assert placed == {(landing.iterdir().__next__().name, "08:00")}


def test_a_folder_swapped_for_a_link_between_listing_and_read_lands_nothing_of_what_it_leads_to(spark, demo_landing, tmp_path):
    """The race of a renamed folder and a link in its place, as the workers meet it: every file below it is
    quarantined as refused, and no row of the outside copies lands."""
    from lb_pipeline.ingest.bronze import parse_family
    from lb_pipeline.ingest.landing import list_day
    from lb_pipeline.ingest.reading import LINKED_FOLDER
    from lb_pipeline.ingest.tables import TABLES

    landing = Path(shutil.copytree(demo_landing, tmp_path / "landing"))
    listing = list_day(spark, str(landing), DEMO_DAY, {t.name: t.globs for t in TABLES.values()})
    snapshot = next(p for p in landing.glob(f"*/{DEMO_DAY}T*"))
    brokers = snapshot / "lb" / "brokers"
    outside = Path(shutil.copytree(brokers, tmp_path / "outside"))
    brokers.rename(snapshot / "lb" / "brokers-away")
    os.symlink(outside, brokers)
    paths = [p for p in listing.files["broker_reports"] if p.startswith(f"file:{brokers}/")]
    frame = parse_family(spark, paths, [TABLES["broker_reports"]], None, listing.sizes, listing.root)
    rows = frame.select("source_file", "_field", "_reason").collect()
    assert paths and len(rows) == len(paths)
    assert {(r.source_file, r._field, r._reason) for r in rows} == {(p, "(file)", LINKED_FOLDER) for p in paths}


def test_a_folder_swapped_for_another_real_folder_between_listing_and_read_lands_nothing_of_it(spark, demo_landing, tmp_path):
    """The same race with no link at all: an outside folder renamed into the listed folder's place (one file
    system). Every component is a real folder, so the walk from the landing folder goes through; the files it
    meets are not the ones listed (device and inode), and each is quarantined as refused, none read."""
    from lb_pipeline.ingest.bronze import parse_family
    from lb_pipeline.ingest.landing import list_day
    from lb_pipeline.ingest.reading import REPLACED
    from lb_pipeline.ingest.tables import TABLES

    landing = Path(shutil.copytree(demo_landing, tmp_path / "landing"))
    listing = list_day(spark, str(landing), DEMO_DAY, {t.name: t.globs for t in TABLES.values()})
    brokers = next(p for p in landing.glob(f"*/{DEMO_DAY}T*")) / "lb" / "brokers"
    outside = Path(shutil.copytree(brokers, tmp_path / "outside"))
    brokers.rename(brokers.with_name("brokers-away"))
    outside.rename(brokers)
    paths = [p for p in listing.files["broker_reports"] if p.startswith(f"file:{brokers}/")]
    frame = parse_family(spark, paths, [TABLES["broker_reports"]], None, listing.sizes, listing.root, listing.ids)
    rows = frame.select("source_file", "_field", "_reason").collect()
    assert paths and {(r.source_file, r._field, r._reason) for r in rows} == {(p, "(file)", REPLACED) for p in paths}
    assert parse_family(spark, paths, [TABLES["broker_reports"]], None, listing.sizes, listing.root).where(
        "_reason IS NULL").count() == len(paths)  # without the identities listed, the outside copies were read
