"""Run the nightly job in process for every day found in a landing folder (the README's main command).

    python -m assets.run --landing landing --lake lake

Runs are recorded in ``$DAGSTER_HOME`` when it is set, so ``dagster dev -w workspace.yaml`` shows them.
"""

import argparse
import os
import sys
from pathlib import Path

import dagster as dg

from assets.definitions import defs
from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource
from lb_pipeline.errors import LbError
from lb_pipeline.snapshots.layout import iter_snapshot_dirs


# Dagster's console logger prints every engine event at DEBUG; the operator wants the INFO story.
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


def days_in(landing: str) -> list[str]:
    return sorted({d.name[:10] for d in iter_snapshot_dirs(landing)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m assets.run", description=__doc__.splitlines()[0])
    parser.add_argument("--landing", default="landing")
    parser.add_argument("--lake", default="lake")
    parser.add_argument("--reports", default="reports-out")
    parser.add_argument("--day", action="append", help="UTC day(s) to run (default: every day in the landing)")
    args = parser.parse_args(argv)

    landing, lake = str(Path(args.landing).resolve()), str(Path(args.lake).resolve())
    days = args.day or days_in(landing)
    if not days:
        print(f"no snapshot directories under {landing}; run 'lb-pipeline generate' first", file=sys.stderr)
        return 2
    instance = dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("nightly")
    resources = {"spark": SparkResource(), "lake": LakeResource(root=lake), "landing": LandingResource(path=landing),
                 "reports": ReportsResource(path=str(Path(args.reports).resolve()))}
    for i, day in enumerate(days, 1):
        print(f"[{i}/{len(days)}] nightly run for {day}", flush=True)
        try:
            result = job.execute_in_process(partition_key=day, instance=instance, resources=resources,
                                            raise_on_error=False, run_config=QUIET)
        except LbError as exc:
            print(f"lb-pipeline: {exc}", file=sys.stderr)
            return 2
        if not result.success:
            failure = next((e for e in result.all_events if e.is_step_failure), None)
            cause = failure.step_failure_data.error.message.strip() if failure else "see the log above"
            print(f"nightly run for {day} failed: {cause}", file=sys.stderr)
            return 1
    print("\nDelta tables:")
    for layer in ("bronze", "silver", "gold"):
        for table in sorted(p.name for p in (Path(lake) / layer).iterdir() if p.is_dir()):
            print(f"  {layer}/{table}: {Path(lake) / layer / table}")
    reports = sorted(Path(args.reports).resolve().glob(f"*/{days[-1]}.html"))
    print("\nReports:")
    for report in reports:
        print(f"  {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
