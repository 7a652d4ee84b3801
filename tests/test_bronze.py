"""Bronze tables hold exactly what the snapshot files say, re-run idempotently, and quarantine bad input."""

import json
import re
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


def _edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def _first(folder: Path, pattern: str = "*.json") -> Path:
    return sorted(folder.glob(pattern))[0]


def _corpus(landing: Path) -> tuple[dict[str, str], Path]:
    """Break files of a demo day in 20+ ways; returns {path suffix: expected quarantine field} and the file
    holding a Java-formatted big number that must still land."""
    s = _snapshots(landing)
    cases: dict[str, str] = {}

    def case(path: Path, field: str):
        cases[str(path.relative_to(landing))] = field

    brokers0 = sorted((s[0] / "lb/brokers").glob("*.json"))
    brokers0[0].write_text(brokers0[0].read_text()[:150]); case(brokers0[0], "(file)")  # truncated
    _edit_json(brokers0[1], lambda d: d.update(msgRateIn="fast")); case(brokers0[1], "msgRateIn")  # wrong type
    name = next(iter(json.loads(brokers0[2].read_text())["lastStats"]))
    _edit_json(brokers0[2], lambda d: d["lastStats"][name].update(msgRateIn=-5.0))  # negative rate (row level)
    case(brokers0[2], f"lastStats[{name}].msgRateIn")
    topics0 = sorted((s[0] / "topics").glob("*.json"))
    topics0[0].write_text(topics0[0].read_text().replace('"msgRateIn":', '"msgRateIn":NaN,"x":', 1)); case(topics0[0], "(file)")
    ghost = s[0] / "ownership" / "ghost.pulsar.svc_8080.json"  # unknown broker
    ghost.write_text(json.dumps({"acme/orders/0x00000000_0x10000000": {"broker_assignment": "shared"}})); case(ghost, "broker")
    own = _first(s[1] / "ownership")
    _edit_json(own, lambda d: d.update({"acme/orders/0x00000000_0x1ffffffff": {}})); case(own, "acme/orders/0x00000000_0x1ffffffff")
    empty_dir = landing / "demo-cluster" / f"{DEMO_DAY}T09-30-00Z"
    empty_dir.mkdir(); cases[str(empty_dir.relative_to(landing))] = "(directory)"  # empty directory
    partial = landing / "demo-cluster" / f"{DEMO_DAY}T09-45-00Z" / "lb" / "brokers"
    partial.mkdir(parents=True)
    (partial / "b_8080.json").write_text(brokers0[3].read_text()); case(partial / "b_8080.json", "manifest.json")  # no manifest
    ns1 = sorted((s[1] / "namespaces").rglob("*.json"))
    ns1[0].write_bytes(b"\xff\xfe{}"); case(ns1[0], "(file)")  # not UTF-8
    (s[1] / "config/dynamic.json").write_text(""); case(s[1] / "config/dynamic.json", "(file)")  # empty file
    (s[1] / "cluster/failure-domains.json").write_text("[]"); case(s[1] / "cluster/failure-domains.json", "(root)")
    _edit_json(s[2] / "manifest.json", lambda d: d.update(snapshotTimestampMs=d["snapshotTimestampMs"] + 1000))
    case(s[2] / "manifest.json", "snapshotTimestampMs")  # manifest disagrees with its directory
    ns2 = sorted((s[1] / "namespaces").rglob("*.json"))[1:]  # snapshot 2 is lost whole (its manifest)
    _edit_json(ns2[0], lambda d: d["bundles"].update(boundaries=["0x00000000", "0x80000000", "0x40000000", "0xffffffff"]))
    case(ns2[0], "bundles.boundaries")  # not increasing
    _edit_json(ns2[1], lambda d: d["bundles"].update(boundaries=["0x00000000", "0x80000000"]))
    case(ns2[1], "bundles.boundaries")  # does not reach 0xffffffff
    _edit_json(ns2[2], lambda d: d.update(antiAffinityGroup=7)); case(ns2[2], "antiAffinityGroup")
    rt = _first(s[3] / "config/runtime")
    _edit_json(rt, lambda d: d.update(loadBalancerEnabled={"nested": True})); case(rt, "loadBalancerEnabled")
    _edit_json(s[3] / "cluster/failure-domains.json", lambda d: d.update({"zone-a": {"brokers": "broker-1"}}))
    case(s[3] / "cluster/failure-domains.json", "zone-a.brokers")
    topics3 = [t for t in sorted((s[3] / "topics").glob("*.json")) if json.loads(t.read_text())]

    def first_topic(doc):
        ns, bundles = next(iter(doc.items()))
        rng, domains = next(iter(bundles.items()))
        return ns, rng, domains["persistent"], next(iter(domains["persistent"]))

    doc = json.loads(topics3[0].read_text())
    ns, rng, topics, t = first_topic(doc)
    topics["persistent://other-tenant/x/moved"] = topics.pop(t)  # topic under the wrong namespace
    topics3[0].write_text(json.dumps(doc)); case(topics3[0], "[persistent://other-tenant/x/moved]")
    doc = json.loads(topics3[1].read_text())
    ns, rng, topics, t = first_topic(doc)
    topics[t]["subscriptions"] = {"s": {"consumers": "many"}}
    topics3[1].write_text(json.dumps(doc)); case(topics3[1], ".consumers")
    doc = json.loads(topics3[2].read_text())
    ns, rng, topics, t = first_topic(doc)
    topics[t]["producerCount"] = True
    topics3[2].write_text(json.dumps(doc)); case(topics3[2], ".producerCount")
    policies = s[3] / layout.ISOLATION_POLICIES  # one good isolation policy lands, one with a broken regex does not
    policies.write_text(json.dumps({"pinned": {"namespaces": ["acme/.*"], "primary": ["broker-0\\..*"]},
                                    "broken": {"namespaces": ["x/y"], "primary": ["(unclosed"]}}))
    case(policies, "broken.primary")
    bd = _first(s[3] / "lb/bundle-data", "*/*/*.json")
    _edit_json(bd, lambda d: d.pop("longTermData")); case(bd, "longTermData")
    copy = landing / "demo-cluster" / f"{s[3].name}-copy"  # a duplicated snapshot directory
    shutil.copytree(s[3] / "cluster", copy / "cluster"); case(copy, "(directory)")  # refused by name, not read
    big = brokers0[4]  # Jackson prints big doubles as 1.0E7: valid input
    big.write_text(re.sub(r'"msgThroughputIn":[0-9.E]+', '"msgThroughputIn":1.0E7', big.read_text(), count=1))
    return cases, big


def test_malformed_corpus_is_quarantined_by_file_and_field_while_good_files_land(spark, demo_landing, tmp_path):
    landing = Path(shutil.copytree(demo_landing, tmp_path / "landing"))
    cases, big = _corpus(landing)
    assert len(cases) >= 20
    lake = Lake(str(tmp_path / "lake"))
    result = ingest_day(spark, lake, str(landing), DEMO_DAY)
    rows = lake.read(spark, "bronze", "quarantine", DEMO_DAY).collect()
    for suffix, field in cases.items():
        hits = [r for r in rows if r.source_file.endswith(suffix)]
        assert hits, f"{suffix} was not quarantined"
        assert any(field in r.field for r in hits), (suffix, field, [(r.field, r.reason) for r in hits])
        assert all(r.reason for r in hits)
    lost = [r for r in rows if "/" + _snapshots(demo_landing)[2].name + "/" in r.source_file and r.field == "manifest.json"]
    assert lost and all("manifest.json is itself quarantined" in r.reason for r in lost)
    assert any(r.raw and len(r.raw) < 200 for r in rows if r.field == "(file)")  # raw text of a truncated file kept
    brokers = lake.read(spark, "bronze", "broker_reports", DEMO_DAY)
    per_snapshot = [len(json.loads((s / layout.MANIFEST).read_text())["brokers"]) for s in _snapshots(demo_landing)]
    # lost: two broker files of snapshot 0, and all of snapshot 2 (its manifest contradicts its directory)
    assert brokers.count() == sum(per_snapshot) - 2 - per_snapshot[2]
    stem = big.name[: -len(".json")]
    assert brokers.where(f"broker = '{layout.broker_from_file_stem(stem)}' AND msg_throughput_in = 1.0E7 "
                         f"AND snapshot_ts = timestamp'{DEMO_DAY} 08:00:00'").count() == 1
    assert result.tables["bundle_reports"].rows > 0 and result.quarantine.rows >= len(cases)
    (pinned,) = lake.read(spark, "bronze", "config", DEMO_DAY).where("source = 'isolation-policies'").collect()
    assert pinned.key == "pinned" and json.loads(pinned.value)["primary"] == ["broker-0\\..*"]


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
