"""The nightly schedule and the landing sensor."""

import json
import shutil
from datetime import datetime, timezone

import dagster as dg

from assets.automation import landing_sensor, nightly_schedule
from assets.definitions import defs
from assets.resources import LandingResource
from lb_pipeline.snapshots.generate import generate


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
    assert "before the first partition" in partition_problem("2025-12-31")


def test_sensor_requests_one_run_per_day_with_new_snapshots(tmp_path):
    generate(tmp_path, "demo", seed=1, start="2026-01-15T22:00:00Z", snapshots=3)  # spans two days
    (tmp_path / "demo-cluster" / "2026-01-16T03-00-00Z").mkdir()  # no manifest yet: still being written
    for stray in ("2099-01-01T00-00-00Z", "yesterday", "2026-01-15T25-61-00Z"):  # no partition day: never a run
        (tmp_path / "demo-cluster" / stray).mkdir()
        (tmp_path / "demo-cluster" / stray / "manifest.json").write_text("{}")
    resources = {"landing": LandingResource(path=str(tmp_path))}
    ctx = dg.build_sensor_context(resources=resources)
    requests = landing_sensor(ctx)
    assert [r.partition_key for r in requests] == ["2026-01-15", "2026-01-16"]
    assert requests[1].run_key == "2026-01-16@demo-cluster/2026-01-16T00-00-00Z"
    cursor = json.loads(ctx.cursor)
    assert cursor == {"demo-cluster": "2026-01-16T00-00-00Z"}

    again = landing_sensor(dg.build_sensor_context(cursor=ctx.cursor, resources=resources))
    assert isinstance(again, dg.SkipReason)

    src = tmp_path / "demo-cluster" / "2026-01-16T00-00-00Z"
    shutil.rmtree(tmp_path / "demo-cluster" / "2026-01-16T03-00-00Z")
    shutil.copytree(src, tmp_path / "demo-cluster" / "2026-01-16T03-00-00Z")  # the late snapshot completes
    (later,) = landing_sensor(dg.build_sensor_context(cursor=ctx.cursor, resources=resources))
    assert (later.partition_key, later.run_key) == ("2026-01-16", "2026-01-16@demo-cluster/2026-01-16T03-00-00Z")
