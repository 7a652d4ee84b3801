"""How much of a nightly run Great Expectations takes, per step.

    .venv/bin/python benchmarks/bench_validation.py [--preset M] [--snapshots 24]

Generates the preset's day under benchmarks/.data/<preset>/ (once), materializes the whole graph for that day
in one process (one Spark session, as in production) and prints each step's wall time, then the share of the
data-quality checks. Issue 7's target: validation stays a minor share of the run.
"""

import argparse
import sys
import time
from pathlib import Path

import dagster as dg

from assets.definitions import all_assets, defs
from assets.quality import checks
from assets.resources import LakeResource, LandingResource, ReportsResource, SparkResource
from lb_pipeline.snapshots.generate import generate
from lb_pipeline.snapshots.layout import iter_snapshot_dirs


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="M")
    parser.add_argument("--snapshots", type=int, default=None)
    parser.add_argument("--data", default=str(Path(__file__).parent / ".data"))
    args = parser.parse_args()
    landing = Path(args.data) / args.preset / "landing"
    if not any(iter_snapshot_dirs(landing)):
        t = time.time()
        generate(landing, args.preset, snapshots=args.snapshots)
        print(f"generated {args.preset} in {time.time() - t:.0f} s", file=sys.stderr)
    day = next(iter_snapshot_dirs(landing)).name[:10]
    lake = Path(args.data) / args.preset / "lake"
    instance = dg.DagsterInstance.ephemeral()
    t = time.time()
    result = dg.materialize(
        [*all_assets, *checks], partition_key=day, instance=instance, raise_on_error=False,
        resources={"spark": SparkResource(), "lake": LakeResource(root=str(lake)),
                   "landing": LandingResource(path=str(landing)), "reports": ReportsResource(path=str(lake / "reports"))})
    total = time.time() - t
    check_steps = {c.node_def.name for c in checks}
    stats = instance.get_run_step_stats(result.run_id)
    check_time = asset_time = 0.0
    for s in sorted(stats, key=lambda s: s.start_time or 0):
        took = (s.end_time or 0) - (s.start_time or 0)
        is_check = s.step_key in check_steps
        check_time += took if is_check else 0
        asset_time += 0 if is_check else took
        print(f"{'check' if is_check else 'asset'}  {s.step_key:60} {took:8.1f} s")
    print(f"run {'succeeded' if result.success else 'FAILED'} in {total:.0f} s; assets {asset_time:.0f} s, "
          f"checks {check_time:.0f} s ({check_time / max(total, 1e-9):.0%} of the run)")
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
