"""Time the closed-loop simulation as the nightly job runs it: every run one ``applyInPandas`` group on Spark.

    python benchmarks/bench_simulation.py --lake benchmarks/.data/M/lake --day 2026-01-15 [--sets 12] [--hours H]

Reads the day's bronze tables (ingest the preset first, e.g. with ``bench_pipeline.py``), fits the load model,
simulates every strategy × ``--sets`` parameter sets (plus the two baselines) at one cycle per
``loadBalancerSheddingIntervalMinutes``, and prints the wall time, cycles and the cost per cycle. ``--hours``
keeps only the first hours of the day (a quick estimate; the projection to the whole day is printed).
"""

from __future__ import annotations

import argparse
import time

from pyspark.sql import functions as F

from lb_pipeline.simulation.balancers import STRATEGIES
from lb_pipeline.simulation.sweep import run_list
from lb_pipeline.spark.lake import Lake
from lb_pipeline.spark.session import get_session
from lb_pipeline.transforms import simulation as sim
from lb_pipeline.transforms.config import effective_config


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lake", required=True)
    ap.add_argument("--day", required=True)
    ap.add_argument("--sets", type=int, default=12, help="parameter sets per strategy (default 12)")
    ap.add_argument("--strategy", action="append", help="only this strategy (repeatable)")
    ap.add_argument("--hours", type=float, help="only the first hours of the day")
    args = ap.parse_args()
    spark, lake = get_session(), Lake(args.lake)

    def read(table):
        df = lake.read(spark, "bronze", table, args.day)
        if args.hours:
            first = lake.read(spark, "bronze", "snapshots", args.day).agg(F.min("snapshot_ts")).first()[0]
            df = df.where(F.col("snapshot_ts") <= F.lit(first) + F.expr(f"INTERVAL {int(args.hours * 60)} MINUTES"))
        return df

    config = effective_config(lake.read(spark, "bronze", "config", args.day), lake.read(spark, "bronze", "snapshots", args.day))
    runs = run_list(config, args.strategy or STRATEGIES, sets_per_strategy=args.sets)
    brokers, bundles = read("broker_reports").cache(), read("bundle_reports").cache()
    print(f"{brokers.count()} broker rows, {bundles.count()} bundle rows, {len(runs)} runs")
    t0 = time.perf_counter()
    model = sim.load_model(brokers).cache()
    model.count()
    fit = time.perf_counter() - t0
    policies = sim.policy_rows(*(read(t) for t in ("ownership", "namespaces", "config", "failure_domains")))
    t0 = time.perf_counter()
    out = sim.runs_table(sim.simulate_runs(spark, brokers, bundles, model, policies, config, runs,
                                           read("topic_stats"))).toPandas()
    wall = time.perf_counter() - t0
    cycles = int(out["cycles"].sum())
    print(f"load model {fit:.1f} s; simulation {wall:.1f} s for {len(out)} runs, {cycles} cycles: "
          f"{1000 * wall / cycles:.1f} ms per cycle on the machine's cores; {int(out['splits'].sum())} simulated splits")
    if args.hours:
        day = wall * 24 / args.hours
        print(f"projected to the whole day: {day:.0f} s ({day / 60:.1f} min)")
    print(out[["strategy", "params", "cycles", "unloads", "usage_std_mean"]].to_string(index=False))


if __name__ == "__main__":
    main()
