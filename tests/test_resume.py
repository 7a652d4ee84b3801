"""A night resumes where it stopped (``spark/steps.py``): a step whose tables an earlier run of the day committed,
from inputs, code and settings that have not changed since, is not computed again; any change computes it again.
The crash-and-rerun test (``test_recovery``) holds resumed nights to a clean run's tables under real ``kill -9``s."""

import json
import os
import shutil
from pathlib import Path

import dagster as dg
import pytest

from lb_pipeline.ingest.landing_state import day_state
from lb_pipeline.ingest.tables import TABLES
from lb_pipeline.spark.lake import Lake
from lb_pipeline.spark.steps import RECOMPUTE_TAG, Steps
from tests.conftest import DEMO_DAY

DAY = "2026-01-01"
GLOBS = {t.name: t.globs for t in TABLES.values()}


def _rows(spark, values, day=DAY):
    return spark.createDataFrame([(v, day) for v in values], "value long, snapshot_date string")


def _step(spark, lake, steps, given="g"):
    """A step that reads silver/a (and looks for silver/none) and writes gold/b."""
    with steps.watching() as seen:
        lake.exists(spark, "silver", "none")
        total = sum(r.value for r in lake.read(spark, "silver", "a", DAY).collect())
        lake.write_partition(_rows(spark, [total]), "gold", "b", DAY)
    return steps.save("b", given, "run-1", seen, [{"asset": "gold/b", "metadata": {"rows": ["IntMetadataValue", 1]}}])


@pytest.mark.spark
def test_a_step_is_done_while_its_inputs_and_outputs_are_as_it_left_them(spark, tmp_path):
    lake = Lake(str(tmp_path))
    steps = Steps(spark, lake, DAY)
    lake.write_partition(_rows(spark, [1, 2]), "silver", "a", DAY)
    record = _step(spark, lake, steps)
    assert set(record.inputs) == {"silver/a", "silver/none"} and set(record.outputs) == {"gold/b"}
    assert record.inputs["silver/none"] is None
    assert steps.unchanged("b", "g").run_id == "run-1"
    assert steps.unchanged("b", "other code or settings") is None
    assert Steps(spark, lake, "2026-01-02").unchanged("b", "g") is None  # another day's step has no record


@pytest.mark.spark
@pytest.mark.parametrize("change", ["input written", "output written", "looked-for table created",
                                    "input deleted and written anew", "record unreadable", "record of another shape"])
def test_any_change_since_computes_the_step_again(spark, tmp_path, change):
    lake = Lake(str(tmp_path))
    steps = Steps(spark, lake, DAY)
    lake.write_partition(_rows(spark, [1, 2]), "silver", "a", DAY)
    _step(spark, lake, steps)
    if change == "input written":  # another day's write is a new commit of the table too
        lake.write_partition(_rows(spark, [5], "2026-01-02"), "silver", "a", "2026-01-02")
    elif change == "output written":  # a run killed after its write, before its record
        lake.write_partition(_rows(spark, [9]), "gold", "b", DAY)
    elif change == "looked-for table created":
        lake.write_partition(_rows(spark, [1]), "silver", "none", DAY)
    elif change == "input deleted and written anew":  # the same version number, another table
        shutil.rmtree(lake.path("silver", "a"))
        lake.write_partition(_rows(spark, [1, 2]), "silver", "a", DAY)
    elif change == "record unreadable":
        Path(steps.folder, "b.json").write_text("{\"step\": ")
    else:
        record = json.loads(Path(steps.folder, "b.json").read_text())
        Path(steps.folder, "b.json").write_text(json.dumps({**record, "inputs": {"silver/a": 7}}))
    assert steps.unchanged("b", "g") is None


@pytest.mark.spark
def test_a_step_that_fails_leaves_no_record_and_stops_watching(spark, tmp_path):
    lake = Lake(str(tmp_path))
    steps = Steps(spark, lake, DAY)
    with pytest.raises(ZeroDivisionError):
        with steps.watching():
            lake.write_partition(_rows(spark, [1]), "gold", "b", DAY)
            1 / 0
    assert steps.unchanged("b", "g") is None
    from lb_pipeline.spark.watch import _WATCHES

    assert _WATCHES == []


def test_the_settings_that_only_place_spark_do_not_change_what_a_step_is_given(monkeypatch, tmp_path):
    steps = Steps(None, Lake(str(tmp_path)), DAY)
    given = steps.given("s", {"lookback_days": 30}, ["landing", []])
    monkeypatch.setenv("LB_SPARK_MASTER", "spark://elsewhere:7077")
    monkeypatch.setenv("LB_SPARK_CONF", "{\"spark.executor.memory\": \"2g\"}")
    assert steps.given("s", {"lookback_days": 30}, ["landing", []]) == given
    assert steps.given("s", {"lookback_days": 7}, ["landing", []]) != given
    assert steps.given("s", {"lookback_days": 30}, ["landing", [["x", 1]]]) != given
    monkeypatch.setenv("LB_PULSAR_PROFILE", "4.0.7")
    assert steps.given("s", {"lookback_days": 30}, ["landing", []]) != given


def _landing(root: Path) -> Path:
    snap = root / "c1" / f"{DAY}T08-00-00Z"
    (snap / "lb" / "brokers").mkdir(parents=True)
    (snap / "manifest.json").write_text("{}")
    (snap / "lb" / "brokers" / "b1.json").write_text("{\"a\": 1}")
    other = root / "c1" / "2026-01-02T08-00-00Z"
    other.mkdir()
    (other / "manifest.json").write_text("{}")
    return snap


def test_the_days_landing_state_changes_with_any_file_of_the_day_and_not_with_other_days(tmp_path):
    snap = _landing(tmp_path)
    state = day_state(str(tmp_path), DAY, GLOBS)
    assert day_state(str(tmp_path), DAY, GLOBS) == state
    (tmp_path / "c1" / "2026-01-02T08-00-00Z" / "manifest.json").write_text("{\"x\": 2}")  # another day
    assert day_state(str(tmp_path), DAY, GLOBS) == state
    (snap / "lb" / "brokers" / "b1.json").write_text("{\"a\": 2}")  # rewritten, the same size
    changed = day_state(str(tmp_path), DAY, GLOBS)
    assert changed != state
    (snap / "lb" / "brokers" / "b2.json").write_text("{}")  # a file added
    assert day_state(str(tmp_path), DAY, GLOBS) != changed
    assert day_state("s3a://bucket/landing", DAY, GLOBS) is None  # elsewhere, without Spark to list it: not known


@pytest.mark.spark
def test_a_landing_folder_elsewhere_has_its_state_listed_through_hadoop(spark, tmp_path):
    snap = _landing(tmp_path)
    uri = f"file://{tmp_path}"
    state = day_state(uri, DAY, GLOBS, spark, hadoop=True)
    assert {Path(entry[0].split(":", 1)[1]).name for entry in state} >= {"b1.json", "manifest.json", snap.name}
    assert day_state(uri, DAY, GLOBS, spark, hadoop=True) == state
    (tmp_path / "c1" / "2026-01-02T08-00-00Z" / "manifest.json").write_text("{\"x\": 2}")  # another day
    assert day_state(uri, DAY, GLOBS, spark, hadoop=True) == state
    broker = snap / "lb" / "brokers" / "b1.json"
    broker.write_text("{\"a\": 2}")  # rewritten, the same length, a second later
    os.utime(broker, (broker.stat().st_atime, broker.stat().st_mtime + 1))
    changed = day_state(uri, DAY, GLOBS, spark, hadoop=True)
    assert changed != state
    (snap / "lb" / "brokers" / "b2.json").write_text("{}")
    assert day_state(uri, DAY, GLOBS, spark, hadoop=True) != changed


def test_the_landing_state_follows_no_link(tmp_path):
    snap = _landing(tmp_path / "landing")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text("{}")
    (snap / "lb" / "link").symlink_to(outside, target_is_directory=True)
    state = day_state(str(tmp_path / "landing"), DAY, GLOBS)
    assert not any("secret" in str(entry[0]) for entry in state)
    (outside / "secret.json").write_text("{\"changed\": true}")
    assert day_state(str(tmp_path / "landing"), DAY, GLOBS) == state


@pytest.mark.spark
def test_a_night_run_again_resumes_its_steps_and_recomputes_them_when_asked(spark, pipeline_run, demo_lake_copy):
    """On a copy of the demo night's lake: the silver tables and their checks, run again with nothing changed, are
    reported from the demo night's run, the tables untouched; a new commit of one of ``silver/broker_usage``'s
    inputs, or the recompute tag, computes it again. (The crash test resumes bronze from a real killed run.)"""
    from assets.definitions import all_assets
    from assets.quality import checks
    from assets.resources import LakeResource, SparkResource

    night, root = pipeline_run[0], demo_lake_copy
    silver = [a for a in all_assets if any(k.path[0] == "silver" for k in a.keys)]
    usage = [a for a in silver if "silver/broker_usage" in {k.to_user_string() for k in a.keys}]
    silver_checks = [c for c in checks if "silver_broker_usage" in str(c.check_keys)]  # a step's checks: all or none
    resources = {"spark": SparkResource(), "lake": LakeResource(root=str(root))}
    computed = {e.asset_key.to_user_string(): e.materialization.metadata
                for e in night.get_asset_materialization_events()}
    checked = {e.check_name: e for e in night.get_asset_check_evaluations()}
    commits = lambda: sorted(str(p.relative_to(root)) for p in root.glob("*/*/_delta_log/*.json"))  # noqa: E731
    before = commits()

    def run(assets, **tags):
        result = dg.materialize(assets, partition_key=DEMO_DAY, resources=resources, tags=tags,
                                instance=dg.DagsterInstance.ephemeral())
        assert result.success
        run.checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
        return {e.asset_key.to_user_string(): e.materialization.metadata
                for e in result.get_asset_materialization_events()}

    again = run([*silver, *silver_checks])
    assert sorted(again) == sorted(k for k in computed if k.startswith("silver/")) and len(again) == 4
    for table, meta in again.items():
        assert meta["resumed_from_run"].value == night.run_id
        assert {k: v for k, v in meta.items() if k != "resumed_from_run"} == computed[table]
    assert len(run.checks) == 4 and all(
        e.metadata["resumed_from_run"].value == night.run_id
        and (e.passed, e.description) == (checked[name].passed, checked[name].description)
        for name, e in run.checks.items())
    assert commits() == before  # nothing written

    lake = Lake(str(root))
    lake.write_partition(lake.read(spark, "bronze", "config", DEMO_DAY), "bronze", "config", DEMO_DAY)  # same rows
    assert "resumed_from_run" not in run(usage)["silver/broker_usage"]
    assert "resumed_from_run" in run(usage)["silver/broker_usage"]  # and now done again
    assert "resumed_from_run" not in run(usage, **{RECOMPUTE_TAG: "true"})["silver/broker_usage"]
    record = root / ".steps" / DEMO_DAY / "silver__broker_usage.json"
    record.write_text(record.read_text().replace("IntMetadataValue", "NoSuchMetadataValue"))  # not this code's
    assert "resumed_from_run" not in run(usage)["silver/broker_usage"]  # computed: the record is not trusted
