"""How well the nightly replay predicts what real Pulsar did: runs the nightly job on each recorded real run
(tests/fixtures/real-runs, or the folders given) and prints, for the strategy the cluster ran, the unloads it
predicted against those the leader logged (precision, recall, same destination) and the (broker, snapshot) pairs
whose selection was exactly the leader's. docs/validation.md quotes the figures.

    .venv/bin/python benchmarks/replay_real_runs.py [RUN_DIR ...] [--keep DIR]

Each RUN_DIR holds ``landing/`` and ``recording.json`` as tests/fixtures/record-real.sh writes them. One main-command
night per run (a few minutes each on the 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def night(run: Path, work: Path) -> Path:
    """The nightly job on ``run``'s landing into ``work``; returns the lake."""
    lake, reports, home = work / "lake", work / "reports", work / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "assets.run", "--landing", str(run / "landing"), "--lake", str(lake),
                           "--reports", str(reports)], cwd=ROOT, env={**os.environ, "DAGSTER_HOME": str(home)},
                          capture_output=True, text=True)
    if done.returncode not in (0, 3):
        sys.exit(f"{run.name}: the night failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return lake


def accuracy(lake: Path) -> list[dict]:
    from lb_pipeline.report.trust import replay_vs_recorded
    from lb_pipeline.settings import spark_settings_from_env
    from lb_pipeline.spark.lake import Lake
    from lb_pipeline.spark.session import get_session
    from lb_pipeline.transforms import silver
    from lb_pipeline.transforms.config import cluster_configs

    spark, lk = get_session(spark_settings_from_env()), Lake(str(lake))
    out = []
    for day in sorted(r[0] for r in lk.read(spark, "bronze", "snapshots").select("snapshot_date").distinct().collect()):
        def read(layer, table):
            return lk.read(spark, layer, table, day)
        configs = cluster_configs(read("bronze", "config"), read("bronze", "snapshots"),
                                  reports=read("bronze", "broker_reports"))
        ownership = read("bronze", "ownership")
        layouts = silver.layouts(read("bronze", "namespaces"), ownership)
        for cluster in configs:
            result = replay_vs_recorded(ownership.where(f"cluster = '{cluster}'"), layouts,
                                        read("gold", "shedding_decisions"), configs, cluster,
                                        read("bronze", "broker_reports"), read("bronze", "lb_events"))
            out.append({"day": day, "cluster": cluster, **(result or {})})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=Path,
                        default=sorted(p.parent for p in (ROOT / "tests/fixtures/real-runs").glob("*/recording.json")))
    parser.add_argument("--keep", type=Path, help="keep each night's lake and report under this folder")
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    for run in args.runs:
        recording = json.loads((run / "recording.json").read_text())
        work = Path(tempfile.mkdtemp(prefix=f"replay-{run.name}-", dir=args.keep))
        for row in accuracy(night(run, work)):
            p, r = row.get("precision"), row.get("recall")
            print(f"{run.name}: {recording['shedder']} on {recording['brokers']} brokers, {row['day']}: "
                  f"{row.get('predicted', 0)} predicted, {row.get('moved', 0)} logged, {row.get('confirmed', 0)} confirmed "
                  f"({row.get('destination_agrees', 0)} to the logged broker); precision "
                  f"{'–' if p is None else f'{p:.2f}'}, recall {'–' if r is None else f'{r:.2f}'}; selections "
                  f"{row.get('selections_agree', 0)} of {row.get('selections', 0)} exact ({row.get('against')}); "
                  f"{row.get('warming_up', 0)} predicted before the strategy's state caught up "
                  f"({row.get('warming_up_confirmed', 0)} confirmed)",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
