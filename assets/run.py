"""Run the nightly job in process for every day found in a landing folder (the README's main command).

    python -m assets.run --landing landing --lake lake [--sets N] [--recompute]

Every valid day runs even when another fails; directories that are not snapshots of a partition day are named
and skipped; a day another run is running on the same lake right now is left to it
(``lb_pipeline.partition_lock``). Exit status: 0 all done, 1 a day failed (each failed step named with its
cause), 2 nothing to run (or $DAGSTER_HOME names a file), 3 every day run is done but some directories or days
were skipped.

A day run again resumes where an earlier run of it stopped: a step whose tables that run committed from the same
inputs, code and settings is not computed again (``lb_pipeline.spark.steps``); ``--recompute`` computes every step.

Runs are recorded in ``$DAGSTER_HOME`` when it is set, so ``dagster dev -w workspace.yaml`` shows them; a run of
the day that a killed process left STARTED there is marked failed first, with a line naming it.
"""

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg

from assets.definitions import defs
from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource
from assets.partitions import partition_problem
from lb_pipeline.cli_types import size
from lb_pipeline.errors import LbError, ran_out
from lb_pipeline.ingest.landing import local_path, shown
from lb_pipeline.partition_lock import PartitionBusy, partition_lock
from lb_pipeline.snapshots.layout import iter_snapshot_dirs, snapshot_day
from lb_pipeline.spark.session import lost_jvm, scratch_space
from lb_pipeline.spark.steps import RECOMPUTE_TAG
from lb_pipeline.terminal import escaping_output


# Dagster's console logger prints every engine event at DEBUG; the operator wants the INFO story.
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


def night_config(sets: int = 1) -> dict:
    """A night's run config: the operator's INFO logs, and the simulation's sweep when it is wider than the
    configured values (``assets.simulation.SweepConfig``)."""
    if sets <= 1:
        return QUIET
    return {**QUIET, "ops": {"simulation": {"config": {"sets_per_strategy": sets}}}}


def days_in(landing: str) -> tuple[list[str], list[str]]:
    """(the days the landing folder holds snapshots of, why other directories are not run)."""
    days, skipped, unlisted = set(), [], []
    for d in iter_snapshot_dirs(landing, problems=unlisted):
        day = snapshot_day(d.name)
        problem = partition_problem(day) if day else "not a snapshot time (YYYY-MM-DDTHH-MM-SSZ)"
        if problem:
            skipped.append(f"{shown(str(d))}: {problem}")  # a name that is not UTF-8 would crash a strict terminal
        else:
            days.add(day)
    return sorted(days), skipped + [f"{shown(str(folder))}: {why}" for folder, why in unlisted]


def main(argv: list[str] | None = None) -> int:
    with escaping_output():  # folder names and failure lines come from the landing folder
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.run", description=__doc__.splitlines()[0])
    parser.add_argument("--landing", default=os.environ.get("LB_LANDING", "landing"),
                        help="folder or URI (s3a://…) of snapshot directories (default: $LB_LANDING or ./landing)")
    parser.add_argument("--lake", default=os.environ.get("LB_LAKE_ROOT", "lake"),
                        help="root folder or URI of the Delta lake (default: $LB_LAKE_ROOT or ./lake)")
    parser.add_argument("--reports", default=os.environ.get("LB_REPORTS_DIR", "reports-out"),
                        help="local folder for the HTML reports (default: $LB_REPORTS_DIR or ./reports-out)")
    parser.add_argument("--day", action="append", help="UTC day(s) to run (default: every day in the landing)")
    parser.add_argument("--recompute", action="store_true",
                        help="compute every step again; by default a step whose tables an earlier run of the day "
                             "wrote from the same inputs, code and settings is not (a crashed night resumes)")
    parser.add_argument("--sets", type=size, default=1,
                        help="parameter sets per strategy in each night's simulated sweep, the cluster's own values "
                             "first (default 1: each strategy as configured)")
    args = parser.parse_args(argv)

    landing, lake = _place(args.landing), _place(args.lake)
    if local_path(landing) is None and not args.day:
        print(f"name the day(s) to run with --day: the main command lists days only in a local landing folder, "
              f"not in {landing}", file=sys.stderr)
        return 2
    days, skipped = (args.day, [f"--day {d}: {partition_problem(d)}" for d in args.day if partition_problem(d)]) \
        if args.day else days_in(landing)
    days = [d for d in days if not partition_problem(d)]
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    if not days:
        print(f"no snapshot directories to run under {landing}; run 'lb-pipeline generate' first", file=sys.stderr)
        return 2
    instance = recording_instance()
    if instance is None:
        return 2
    job = defs.resolve_job_def("nightly")
    resources = {"spark": SparkResource(), "lake": LakeResource(root=lake), "landing": LandingResource(path=landing),
                 "reports": ReportsResource(path=str(Path(args.reports).resolve()))}
    failed, busy = [], []
    for i, day in enumerate(days, 1):
        print(f"[{i}/{len(days)}] nightly run for {day}", flush=True)
        try:
            with partition_lock(lake, day):
                for line in fail_runs_left_started(instance, day):
                    print(line, file=sys.stderr)
                result = job.execute_in_process(partition_key=day, instance=instance, resources=resources,
                                                raise_on_error=False, run_config=night_config(args.sets),
                                                tags={RECOMPUTE_TAG: "true"} if args.recompute else None)
        except PartitionBusy as exc:
            print(f"skipped {exc}", file=sys.stderr)
            skipped.append(str(exc))
            busy.append(day)
            continue
        except LbError as exc:
            print(f"lb-pipeline: {exc}", file=sys.stderr)
            return 2
        if not result.success:
            failed.append(day)
            print(f"nightly run for {day} failed:", file=sys.stderr)
            for line in explain_failure(result, {"the lake": local_path(lake), "the reports": args.reports,
                                                 "Spark's scratch space": scratch_space()}):
                print(f"  {line}", file=sys.stderr)
    done = [d for d in days if d not in failed and d not in busy]
    if done and local_path(lake) is None:
        print(f"\nDelta tables under {lake}/{{bronze,silver,gold}}/")
    elif done:
        print("\nDelta tables:")
        for layer in ("bronze", "silver", "gold"):
            for table in sorted(p.name for p in (Path(lake) / layer).iterdir() if p.is_dir()):
                print(f"  {layer}/{table}: {Path(lake) / layer / table}")
        print("\nReports:")
        for report in sorted(Path(args.reports).resolve().glob(f"*/{done[-1]}.html")):
            print(f"  {report}")
            if (report.parent / "index.html").is_file():
                print(f"  {report.parent / 'index.html'} (every night of {report.parent.name})")
    if failed or skipped:
        print(f"\n{len(done)} day(s) done, {len(failed)} failed ({', '.join(failed) or 'none'}), "
              f"{len(skipped)} director(ies) skipped", file=sys.stderr)
    return 1 if failed else 3 if skipped else 0


def recording_instance():
    """Where the runs are recorded: ``$DAGSTER_HOME`` (made absolute, created when missing, as Dagster requires
    both), else an instance that lasts the command; None, said why, when ``$DAGSTER_HOME`` names a file."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        return dg.DagsterInstance.ephemeral()
    folder = Path(home).resolve()
    if folder.exists() and not folder.is_dir():
        print(f"DAGSTER_HOME={home} is not a folder: point it at one, or unset it to run without recording the runs",
              file=sys.stderr)
        return None
    if not folder.exists():
        folder.mkdir(parents=True)
        print(f"created DAGSTER_HOME {folder} (Dagster's defaults; the project's settings are in .dagster/)",
              file=sys.stderr)
    os.environ["DAGSTER_HOME"] = str(folder)
    return dg.DagsterInstance.get()


def fail_runs_left_started(instance: dg.DagsterInstance, day: str) -> list[str]:
    """Runs of ``day`` the instance still calls STARTED whose process is gone (killed; the daemon's run monitoring
    was not running to see it): each marked failed, and a line saying which, started when and by which pid."""
    from assets.launcher import gone, worker_pid
    from lb_pipeline.processes import alive

    lines = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED],
                                                         tags={"dagster/partition": day})):
        run, pid = record.dagster_run, worker_pid(instance, record.dagster_run.run_id)
        if pid is not None and not alive(pid):
            instance.report_run_failed(run, gone(pid))
            started = (f"{datetime.fromtimestamp(record.start_time, timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
                       if record.start_time else "at a time not recorded")
            lines.append(f"run {run.run_id} of {day} (started {started} by pid {pid}) was left STARTED, its "
                         "process gone: marked failed")
    return lines


def _place(value: str) -> str:
    """A URI as given (``s3a://bucket/lake``); a local path made absolute."""
    return value if local_path(value) is None else str(Path(local_path(value)).resolve())


def explain_failure(result, places: dict[str, str | None] | None = None) -> list[str]:
    """Each failed step in one line: the step and the innermost cause (not Dagster's "Exceeded max_retries"); a
    resource that ran out (disk, memory, open files) said as such, with the folders of ``places`` whose disk is
    full (a full disk had ended in 1,218 lines of stacks naming neither the lake nor the cause)."""
    lines = []
    for event in result.all_events:
        if not event.is_step_failure:
            continue
        error, text = event.step_failure_data.error, []
        while error is not None:
            text += [error.cls_name or "", error.message or "", *(error.stack or [])]
            if error.cause is None:
                break
            error = error.cause
        message = (error.message or "").strip().splitlines() if error else []
        gone = error is not None and lost_jvm(error.cls_name or "", error.message or "")
        exhausted = ran_out("\n".join(text), places or {})
        lines.append(f"step {event.step_key}: " + (exhausted or (
            f"{error.cls_name if error else 'error'}: {message[-1] if message else 'see the log above'}"
            + ("; the Spark driver JVM exited (killed by the kernel when memory ran out? see the system "
               "log); each retry started a new one" if gone else ""))))
    return lines or ["see the log above"]


if __name__ == "__main__":
    sys.exit(main())
