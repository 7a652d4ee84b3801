"""The nightly schedule and the landing-folder sensor.

* ``nightly_schedule``: every day at 02:00 UTC, the previous day's partition (RUNNING by default, so a deployment
  with ``dagster-daemon`` runs it without anyone clicking in the UI).
* ``landing_sensor``: when new complete snapshot directories (with ``manifest.json``) appear in the landing folder,
  one run per affected day; the cursor remembers the newest snapshot seen per cluster and when the newest
  manifest landed, and the run key names the newest snapshot included, so a day re-runs when more of its
  snapshots arrive. A snapshot that lands late, named before one already seen (a collector catching up after an
  outage) or written again, is new too: its manifest is newer than any seen. A day whose bronze tables were
  materialized after its newest snapshot landed (``make demo``, the main command, an earlier deployment) is not
  run again: opening the UI on a lake that is up to date starts nothing. (A backfill copied with its original
  times, ``rsync -a``, is neither newer by name nor by time: run its days from the UI.)
"""

import json
from datetime import timedelta

import dagster as dg

from assets.partitions import partition_problem
from assets.resources import LandingResource
from lb_pipeline.ingest.landing import shown
from lb_pipeline.snapshots.layout import MANIFEST, iter_snapshot_dirs, snapshot_day

nightly_job = dg.define_asset_job("nightly", selection=dg.AssetSelection.all(),
                                  description="Every stage for one UTC day of snapshots")

@dg.schedule(job=nightly_job, cron_schedule="0 2 * * *", execution_timezone="UTC",
             default_status=dg.DefaultScheduleStatus.RUNNING)
def nightly_schedule(context: dg.ScheduleEvaluationContext):
    """The finished previous day (partitions reach today, so the last partition is not the one to run)."""
    day = (context.scheduled_execution_time - timedelta(days=1)).strftime("%Y-%m-%d")
    return dg.RunRequest(run_key=f"nightly-{day}", partition_key=day)


@dg.sensor(job=nightly_job, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def landing_sensor(context: dg.SensorEvaluationContext, landing: LandingResource):
    seen, seen_landed = _cursor(context.cursor)
    newest, newest_landed = dict(seen), seen_landed
    days: dict[str, str] = {}
    landed: dict[str, float] = {}  # day → when its newest new snapshot was complete (manifest written)
    late: set[str] = set()  # days whose new snapshots are named before one seen already
    skipped, unlisted = [], []
    for snap in iter_snapshot_dirs(landing.folder, problems=unlisted):
        cluster, name = shown(snap.parent.name), shown(snap.name)  # run keys and the log are UTF-8 text
        manifest = snap / MANIFEST
        try:
            at = manifest.stat().st_mtime
        except OSError:  # none yet (being written), or a folder it may not read: a run would quarantine it
            at = None
        if at is None or (name <= seen.get(cluster, "") and at <= seen_landed):
            continue  # incomplete (still being written) or already handled
        newest_landed = max(newest_landed, at)
        day = snapshot_day(name)
        problem = partition_problem(day) if day else f"{name!r} is not a snapshot time (YYYY-MM-DDTHH-MM-SSZ)"
        if problem:
            skipped.append(f"{cluster}/{name}: {problem}")
            continue
        days[day] = max(days.get(day, ""), f"{cluster}/{name}")
        landed[day] = max(landed.get(day, 0.0), at)
        if name <= seen.get(cluster, ""):
            late.add(day)
        newest[cluster] = max(newest.get(cluster, ""), name)
    skipped += [f"{shown(str(folder))}: {why}" for folder, why in unlisted]
    for line in skipped:
        context.log.warning(f"not a run: {line}")
    for day in [d for d in days if _ingested_at(context.instance, d) > landed[d]]:
        context.log.info(f"{day}: bronze already materialized after its newest snapshot landed; not run again")
        del days[day]
    context.update_cursor(json.dumps({"newest": newest, "landed": newest_landed}, sort_keys=True))
    if not days:
        return dg.SkipReason(f"no new snapshot directories under {landing.folder}" + (f" ({len(skipped)} skipped)" if skipped else ""))
    # a late or rewritten snapshot can be the newest new one of a day that ran under that key before: the time
    # it landed keeps the key new (Dagster starts no second run for a key it has seen)
    return [dg.RunRequest(run_key=f"{day}@{last}" + (f"@{landed[day]:.0f}" if day in late else ""), partition_key=day)
            for day, last in sorted(days.items())]


def _cursor(text: str | None) -> tuple[dict[str, str], float]:
    """(cluster → newest snapshot seen, when the newest manifest seen landed). A cursor of an earlier version
    held the names only: every snapshot is then newer by time, and the days already ingested after their
    snapshots landed are still left alone (``_ingested_at``)."""
    cursor = json.loads(text) if text else {}
    if "newest" in cursor and isinstance(cursor["newest"], dict):
        return cursor["newest"], float(cursor.get("landed", 0.0))
    return cursor, 0.0


def _ingested_at(instance: dg.DagsterInstance, day: str) -> float:
    """When the day's bronze tables were last materialized (0 if never)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["bronze", "snapshots"]), asset_partitions=[day]), limit=1).records
    return records[0].timestamp if records else 0.0
