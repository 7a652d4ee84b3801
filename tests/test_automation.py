"""The nightly schedule and the landing sensor."""

import json
import os
import shutil
import time
from datetime import datetime, timezone

import dagster as dg

from assets.automation import landing_sensor, nightly_schedule
from assets.definitions import defs
from assets.resources import LandingResource
from lb_pipeline.snapshots.generate import generate
from tests.conftest import free_port


def test_schedule_at_two_utc_materializes_the_previous_day():
    ctx = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 1, 16, 2, 0, tzinfo=timezone.utc),
                                    repository_def=defs.get_repository_def())
    schedule = defs.resolve_schedule_def(nightly_schedule.name)
    (request,) = schedule.evaluate_tick(ctx).run_requests
    assert request.partition_key == "2026-01-15"
    assert schedule.cron_schedule == "0 2 * * *" and schedule.execution_timezone in (None, "UTC")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING


def test_partitions_reach_today_and_directories_that_are_no_partition_are_named():
    from assets.partitions import daily, partition_problem

    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    assert daily.get_last_partition_key() == today  # today's snapshots can run before the day ends
    assert partition_problem(today) is None
    assert "future" in partition_problem("2099-01-01") and "not a day" in partition_problem("yesterday")
    assert "not a day" in partition_problem("2026-1-5")  # strptime alone takes it; the lake names 2026-01-05
    assert "before the first partition" in partition_problem("2025-12-31")


def test_sensor_requests_one_run_per_day_with_new_snapshots(tmp_path):
    generate(tmp_path, "demo", seed=1, start="2026-01-15T22:00:00Z", snapshots=3)  # spans two days
    (tmp_path / "demo-cluster" / "2026-01-16T03-00-00Z").mkdir()  # no manifest yet: still being written
    for stray in ("2099-01-01T00-00-00Z", "yesterday", "2026-01-15T25-61-00Z"):  # no partition day: never a run
        (tmp_path / "demo-cluster" / stray).mkdir()
        (tmp_path / "demo-cluster" / stray / "manifest.json").write_text("{}")
    resources = {"landing": LandingResource(path=str(tmp_path))}
    instance = dg.DagsterInstance.ephemeral()  # nothing materialized yet
    ctx = dg.build_sensor_context(resources=resources, instance=instance)
    requests = landing_sensor(ctx)
    assert [r.partition_key for r in requests] == ["2026-01-15", "2026-01-16"]
    assert requests[1].run_key == "2026-01-16@demo-cluster/2026-01-16T00-00-00Z"
    cursor = json.loads(ctx.cursor)
    assert cursor["newest"] == {"demo-cluster": "2026-01-16T00-00-00Z"}

    again = landing_sensor(dg.build_sensor_context(cursor=ctx.cursor, resources=resources, instance=instance))
    assert isinstance(again, dg.SkipReason)

    src = tmp_path / "demo-cluster" / "2026-01-16T00-00-00Z"
    shutil.rmtree(tmp_path / "demo-cluster" / "2026-01-16T03-00-00Z")
    shutil.copytree(src, tmp_path / "demo-cluster" / "2026-01-16T03-00-00Z")  # the late snapshot completes
    (later,) = landing_sensor(dg.build_sensor_context(cursor=ctx.cursor, resources=resources, instance=instance))
    assert (later.partition_key, later.run_key) == ("2026-01-16", "2026-01-16@demo-cluster/2026-01-16T03-00-00Z")


def test_sensor_names_folders_that_are_not_utf8_with_their_bytes_escaped(tmp_path):
    """Run keys, the cursor and the log name a folder as ingest's quarantine does: bytes that are not UTF-8 (which
    Python carries as lone surrogates) written as ``\\xff``."""
    generate(tmp_path, "demo", seed=1, start="2026-01-15T22:00:00Z", snapshots=1)
    shutil.copytree(tmp_path / "demo-cluster", tmp_path / os.fsdecode(b"bad\xffc"))
    stray = tmp_path / "demo-cluster" / os.fsdecode(b"2026-01-15T\xfe")
    stray.mkdir()
    (stray / "manifest.json").write_text("{}")
    ctx = dg.build_sensor_context(resources={"landing": LandingResource(path=str(tmp_path))},
                                  instance=dg.DagsterInstance.ephemeral())
    (request,) = landing_sensor(ctx)
    assert request.run_key == "2026-01-15@demo-cluster/2026-01-15T22-00-00Z"
    assert json.loads(ctx.cursor)["newest"] == {"bad\\xffc": "2026-01-15T22-00-00Z", "demo-cluster": "2026-01-15T22-00-00Z"}


def test_sensor_leaves_a_day_alone_whose_bronze_is_newer_than_its_snapshots(tmp_path):
    """Opening the UI after ``make demo`` must not re-run the demo day; a snapshot landing later still does."""
    generate(tmp_path, "demo", seed=1, start="2026-01-15T08:00:00Z", snapshots=2)
    instance = dg.DagsterInstance.ephemeral()
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=["bronze", "snapshots"], partition="2026-01-15"))
    resources = {"landing": LandingResource(path=str(tmp_path))}
    ctx = dg.build_sensor_context(resources=resources, instance=instance)
    assert isinstance(landing_sensor(ctx), dg.SkipReason)
    assert json.loads(ctx.cursor)["newest"] == {"demo-cluster": "2026-01-15T09-00-00Z"}
    late = tmp_path / "demo-cluster" / "2026-01-15T10-00-00Z"
    shutil.copytree(tmp_path / "demo-cluster" / "2026-01-15T09-00-00Z", late)
    os.utime(late / "manifest.json", (time.time() + 5, time.time() + 5))
    (run,) = landing_sensor(dg.build_sensor_context(cursor=ctx.cursor, resources=resources, instance=instance))
    assert run.partition_key == "2026-01-15"


def test_sensor_runs_a_day_again_when_a_snapshot_lands_late_or_is_written_again(tmp_path):
    """A collector catching up after an outage writes 10:00 after 11:00 was seen: the name alone never ran it."""
    generate(tmp_path, "demo", seed=1, start="2026-01-15T09:00:00Z", snapshots=3)
    cluster = tmp_path / "demo-cluster"
    shutil.move(cluster / "2026-01-15T10-00-00Z", tmp_path / "outage")
    resources, instance = {"landing": LandingResource(path=str(tmp_path))}, dg.DagsterInstance.ephemeral()
    ctx = dg.build_sensor_context(resources=resources, instance=instance)
    (first,) = landing_sensor(ctx)
    assert first.run_key == "2026-01-15@demo-cluster/2026-01-15T11-00-00Z"
    shutil.move(tmp_path / "outage", cluster / "2026-01-15T10-00-00Z")
    manifest = cluster / "2026-01-15T10-00-00Z" / "manifest.json"
    os.utime(manifest, (time.time() + 5, time.time() + 5))  # written now
    (late,) = landing_sensor(ctx2 := dg.build_sensor_context(cursor=ctx.cursor, resources=resources, instance=instance))
    assert late.partition_key == "2026-01-15"
    assert late.run_key == f"2026-01-15@demo-cluster/2026-01-15T10-00-00Z@{manifest.stat().st_mtime:.0f}"
    assert isinstance(landing_sensor(dg.build_sensor_context(cursor=ctx2.cursor, resources=resources, instance=instance)),
                      dg.SkipReason)
    # a cursor of an earlier version (names only) runs nothing that was ingested after its snapshots landed
    os.utime(manifest, (time.time() - 5, time.time() - 5))
    instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=["bronze", "snapshots"], partition="2026-01-15"))
    old = json.dumps({"demo-cluster": "2026-01-15T11-00-00Z"})
    assert isinstance(landing_sensor(dg.build_sensor_context(cursor=old, resources=resources, instance=instance)),
                      dg.SkipReason)


def test_the_projects_instance_queues_a_second_run_of_the_same_partition(tmp_path):
    # the sensor and the schedule may both ask for one day: the run queue lets one run per partition through
    shutil.copy(os.path.join(os.path.dirname(__file__), "..", ".dagster", "dagster.yaml"), tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        coordinator = type(instance.run_coordinator).__name__
    assert {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
    assert coordinator == "QueuedRunCoordinator"


def _serving(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def test_the_ui_started_in_the_background_stops_on_sigterm(tmp_path):
    import signal
    import subprocess
    import sys

    root = os.path.join(os.path.dirname(__file__), "..")
    (tmp_path / "home").mkdir()
    (tmp_path / "landing").mkdir()
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "LB_LANDING": str(tmp_path / "landing")}
    with open(tmp_path / "dev.log", "wb") as log:
        # as a non-interactive shell starts a background job (`… &`, nohup): SIGINT ignored
        ui = subprocess.Popen([sys.executable, "-m", "assets.dev", "-p", str(port)], cwd=root, env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 180
        while not _serving(port):
            assert ui.poll() is None and time.monotonic() < deadline, (tmp_path / "dev.log").read_text()[-2000:]
            time.sleep(1)
        ui.send_signal(signal.SIGTERM)
        assert ui.wait(timeout=60) == 0
        assert not _serving(port)  # the webserver went with it
        assert "Shutting down Dagster services" in (tmp_path / "dev.log").read_text()
    finally:
        try:
            os.killpg(ui.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
