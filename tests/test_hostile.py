"""Hostile input never stops the night: a demo day broken in 92 ways (files, rows, names, paths, links, devices,
directories) still runs end to end with the main command; each bad file or row is in ``bronze/quarantine`` with
file, field and reason; every good row of the same snapshot lands (counted against a clean ingest of the same
files); nothing outside the landing folder is read; ``validate-snapshot`` flags every file ingest quarantines."""

import json
import os
import shutil
from contextlib import redirect_stderr
from io import StringIO
from pathlib import Path

import pytest

from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.snapshots import layout
from lb_pipeline.ingest.validate import validate_snapshot
from lb_pipeline.spark.lake import Lake
from tests.conftest import DEMO_DAY
from tests.hostile_corpus import MAX_BYTES, Corpus, build

pytestmark = pytest.mark.spark
SECRET = "lb-pipeline-test-secret-4f1c"  # the content of a file outside the landing folder, linked from inside it


def _landed(spark, lake: Lake, landing: str) -> dict[tuple[str, str], int]:
    prefix = f"file:{landing}/"
    out = {}
    for table in TABLES:
        for r in lake.read(spark, "bronze", table, DEMO_DAY).groupBy("source_file").count().collect():
            out[(table, r.source_file.removeprefix(prefix))] = r["count"]
    return out


def _expected(c: Corpus, clean: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    expected = dict(clean)
    for copy, source in c.copies.items():
        expected.update({(t, copy + f[len(source):]): n for (t, f), n in clean.items() if f.startswith(source + "/")})
    for key, n in c.delta.items():
        expected[key] = expected.get(key, 0) + n
    return {(t, f): n for (t, f), n in expected.items()
            if n and f not in c.dead and not any(f.startswith(d + "/") for d in c.dead)}


@pytest.fixture(scope="module")
def hostile(spark, demo_landing, tmp_path_factory):
    from assets import run

    tmp = tmp_path_factory.mktemp("hostile")
    outside = tmp / "outside" / "secret.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps({"token": SECRET}))
    corpus = build(Path(shutil.copytree(demo_landing, tmp / "landing")), outside)
    os.environ["LB_MAX_FILE_BYTES"] = str(MAX_BYTES)
    errors = StringIO()
    try:
        with redirect_stderr(errors):
            code = run.main(["--landing", str(corpus.landing), "--lake", str(tmp / "lake"),
                             "--reports", str(tmp / "reports")])
    finally:
        del os.environ["LB_MAX_FILE_BYTES"]
    return corpus, code, Lake(str(tmp / "lake")), tmp / "reports", errors.getvalue()


def test_the_corpus_holds_at_least_forty_kinds(hostile):
    assert len(hostile[0].kinds) >= 40


def test_the_night_runs_to_its_report_and_names_the_directories_it_skipped(hostile):
    corpus, code, _, reports, errors = hostile
    assert code == 3, errors  # done, with directories skipped
    assert list(reports.glob(f"*/{DEMO_DAY}.html"))
    for skipped in ("yesterday", "2099-01-01T00-00-00Z", f"{DEMO_DAY}T25-61-00Z", f"{DEMO_DAY}T11-00-00Z-copy",
                    f"{DEMO_DAY}T\\xff"):
        assert f"{skipped}: " in errors, skipped
    errors.encode("utf-8")  # what the run printed, a strict UTF-8 terminal prints too (no lone surrogates)


def test_each_kind_is_quarantined_with_file_field_and_reason(hostile, spark):
    corpus, _, lake, _, _ = hostile
    rows = lake.read(spark, "bronze", "quarantine", DEMO_DAY).collect()
    prefix = f"file:{corpus.landing}/"
    missing = {}
    for name, (rel, where) in corpus.kinds.items():
        hits = [r for r in rows if r.source_file.removeprefix(prefix) == rel]
        if not any(where in r.field and r.reason for r in hits):
            missing[name] = (rel, where, [(r.field, r.reason) for r in hits][:3])
    assert not missing


def test_every_good_row_of_the_broken_snapshots_lands(hostile, spark, lake, demo_landing):
    corpus, _, hostile_lake, _, _ = hostile
    clean = _landed(spark, lake, str(demo_landing))
    got = _landed(spark, hostile_lake, str(corpus.landing))
    expected = _expected(corpus, clean)
    assert {k: (got.get(k), n) for k, n in expected.items() if got.get(k) != n} == {}
    assert {k: n for k, n in got.items() if k not in expected} == {}


def test_a_broker_the_manifest_lists_twice_lands_once_and_no_check_sees_its_rows_twice(hostile, spark):
    corpus, _, lake, _, _ = hostile
    rel, _ = corpus.kinds["broker listed twice in the manifest"]
    listed = json.loads((corpus.landing / rel).read_text())["brokers"]
    (row,) = lake.read(spark, "bronze", "snapshots", DEMO_DAY).where(f"source_file = 'file:{corpus.landing}/{rel}'").collect()
    assert len(listed) > len(set(listed)) and sorted(row.brokers) == sorted(set(listed))
    # the live brokers are joined to every bundle's owner: listed twice, the owner's bundles were counted twice
    unique = lake.read(spark, "gold", "validation_results", DEMO_DAY).where(
        "suite = 'silver.bundle_stats' AND expectation = 'expect_compound_columns_to_be_unique'").collect()
    assert [r.success for r in unique] == [True]


def test_nothing_from_outside_the_landing_folder_is_stored(hostile, spark):
    _, _, lake, _, _ = hostile
    raw = lake.read(spark, "bronze", "quarantine", DEMO_DAY).where("raw LIKE '%" + SECRET + "%'")
    assert raw.count() == 0


def test_a_lost_snapshot_says_why_a_truncated_file_keeps_its_text_and_valid_odd_values_land(hostile, spark):
    corpus, _, lake, _, _ = hostile
    prefix = f"file:{corpus.landing}/"
    quarantine = lake.read(spark, "bronze", "quarantine", DEMO_DAY)
    snapshot = corpus.kinds["manifest of another second"][0].rsplit("/", 1)[0]
    lost = quarantine.where(f"field = 'manifest.json' AND startswith(source_file, '{prefix}{snapshot}/')").collect()
    assert lost and all("manifest.json is itself quarantined" in r.reason for r in lost)
    truncated = quarantine.where(f"source_file = '{prefix}{corpus.kinds['truncated'][0]}'").collect()
    assert truncated and all(len(r.raw) == 150 and not r.raw_truncated for r in truncated)  # the text as it was
    (java,) = lake.read(spark, "bronze", "broker_reports", DEMO_DAY).where(
        f"source_file = '{prefix}{corpus.java_number}'").collect()
    assert java.bandwidth_in_limit == 1.0e7
    beside_broken = f"{prefix}{corpus.kinds['broken regex'][0]}"
    (pinned,) = lake.read(spark, "bronze", "config", DEMO_DAY).where(f"source_file = '{beside_broken}'").collect()
    assert pinned.key == "pinned" and json.loads(pinned.value)["primary"] == ["broker-0\\..*"]


def test_validate_snapshot_flags_every_file_ingest_quarantines(hostile, spark, monkeypatch):
    corpus, _, lake, _, _ = hostile
    monkeypatch.setenv("LB_MAX_FILE_BYTES", str(MAX_BYTES))
    prefix = f"file:{corpus.landing}/"
    quarantined: dict[str, set[str]] = {}
    for r in lake.read(spark, "bronze", "quarantine", DEMO_DAY).where("field <> 'manifest.json'").collect():
        rel = r.source_file.removeprefix(prefix)
        snapshot = "/".join(rel.split("/")[:2])
        quarantined.setdefault(snapshot, set()).add(rel[len(snapshot) + 1:] or ".")
    snapshots = sorted({*quarantined, *(str(d.relative_to(corpus.landing)) for d in
                                        layout.iter_snapshot_dirs(corpus.landing, DEMO_DAY))})
    for snapshot in snapshots:
        flagged = {f.file for f in validate_snapshot(corpus.real.get(snapshot, corpus.landing / snapshot))}
        assert quarantined.get(snapshot, set()) <= flagged, snapshot
    clean = next(copy for copy in corpus.copies if copy not in corpus.dead)
    assert clean not in quarantined and validate_snapshot(corpus.landing / clean) == []


def test_a_row_breaking_a_critical_row_rule_is_quarantined_with_its_rule_and_the_gate_passes(hostile, spark):
    """A broker report with a negative CPU limit: its row is quarantined, naming the field, the suite whose rule it
    broke and the value it held; the rows beside it land, and the bronze gate passes, so silver is built."""
    corpus, _, lake, _, _ = hostile
    rel, _ = corpus.kinds["negative CPU limit"]
    (row,) = lake.read(spark, "bronze", "quarantine", DEMO_DAY).where(
        f"source_file = 'file:{corpus.landing}/{rel}'").collect()
    assert row.bronze_table == "broker_reports" and row.field == "cpu_limit"
    assert "expectations/bronze.broker_reports.json" in row.reason and json.loads(row.raw)["cpu_limit"] == -150.0
    gate = lake.read(spark, "gold", "validation_results", DEMO_DAY).where(
        "suite = 'bronze.broker_reports' AND severity = 'critical'").collect()
    assert gate and all(r.success for r in gate)
    assert lake.read(spark, "silver", "broker_usage", DEMO_DAY).count() > 0


def test_the_quarantine_is_written_in_no_more_files_than_the_day_is_read_in_tasks(hostile, spark, monkeypatch):
    """The quarantine is a union of every table's cached partitions, most of them empty: it holds at most the day's
    text, so it is written in as many tasks (files) as the day's files are read in, not one per partition."""
    from delta.tables import DeltaTable

    from lb_pipeline.ingest.landing import list_day
    from lb_pipeline.ingest.reading import task_count

    corpus, _, lake, _, _ = hostile
    monkeypatch.setenv("LB_MAX_FILE_BYTES", str(MAX_BYTES))  # as the night listed the day
    listing = list_day(spark, str(corpus.landing), DEMO_DAY, {t.name: t.globs for t in TABLES.values()})
    tasks = task_count([f for files in listing.files.values() for f in files], listing.sizes)
    files = DeltaTable.forPath(spark, lake.path("bronze", "quarantine")).detail().first()["numFiles"]  # the one day
    assert lake.read(spark, "bronze", "quarantine", DEMO_DAY).count() > 50
    assert 1 <= files <= tasks
