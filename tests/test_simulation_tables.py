"""The simulation's gold tables from the nightly job on the demo day: complete, conserved, and equal to the
same runs done in one process from the landing folder."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lb_pipeline.simulation.landing import read_history
from lb_pipeline.simulation.local import simulate_all
from lb_pipeline.simulation.sweep import run_list
from tests.conftest import DEMO_DAY

pytestmark = pytest.mark.spark


def test_the_load_model_fits_every_broker_and_resource(lake, spark):
    model = lake.read(spark, "gold", "load_model", DEMO_DAY)
    brokers = lake.read(spark, "bronze", "broker_reports", DEMO_DAY).select("broker").distinct().count()
    assert model.count() == brokers * 5
    nic = model.where(F.col("resource").isin("bandwidth_in", "bandwidth_out")).agg(F.min("r2")).first()[0]
    assert nic > 0.95  # the demo's NIC usage follows its throughput


def test_every_run_is_complete_and_conserves_traffic(lake, spark):
    runs = lake.read(spark, "gold", "simulation_runs", DEMO_DAY)
    ts = lake.read(spark, "gold", "simulation_timeseries", DEMO_DAY)
    assert sorted(r.strategy for r in runs.collect()) == sorted(
        ["no-balancing", "as-recorded", "OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder",
         "TransferShedder"])
    assert runs.where("grace_violations > 0").count() == 0
    per_run = {r.run_id: r["count"] for r in ts.groupBy("run_id").count().collect()}
    assert per_run == {r.run_id: r.cycles for r in runs.collect()}
    assert ts.where(F.abs(F.col("rate_served") - F.col("rate_recorded")) > 1e-6 * F.col("rate_recorded")).count() == 0
    assert ts.where("unowned_bundles > 0").count() == 0


def test_spark_runs_equal_the_same_runs_in_one_process(lake, spark, demo_landing):
    cluster, brokers, bundles, config, _, policies, topics = read_history(demo_landing, DEMO_DAY)
    local = simulate_all(cluster, brokers, bundles, config, run_list(config), policies=policies, topics=topics)
    on_spark = {r.strategy: r for r in lake.read(spark, "gold", "simulation_runs", DEMO_DAY).collect()}
    for r in local["runs"]:
        s = on_spark[r["strategy"]]
        assert (s.unloads, s.reconnections, s.ping_pongs, s.splits) == (
            r["unloads"], r["reconnections"], r["ping_pongs"], r["splits"]), r["strategy"]
        assert s.usage_std_mean == pytest.approx(r["usage_std_mean"], rel=1e-9)
    rec = lake.read(spark, "gold", "recommendations", DEMO_DAY).first()
    assert rec.strategy == local["recommendation"]["strategy"]


def test_simulate_from_the_lake_runs_what_the_landing_folder_runs(lake, demo_landing, capsys):
    import json

    from lb_pipeline.cli import main

    args = ["simulate", "--day", DEMO_DAY, "--strategy", "OverloadShedder", "--strategy", "TransferShedder", "--json",
            "--quiet"]
    assert main([*args, "--lake", lake.root]) == 0
    from_lake = json.loads(capsys.readouterr().out)
    assert main([*args, "--landing", str(demo_landing)]) == 0
    from_landing = json.loads(capsys.readouterr().out)
    figures = lambda r: (r["strategy"], r["unloads"], r["splits"], r["reconnections"])  # noqa: E731
    assert sorted(map(figures, from_lake["runs"])) == sorted(map(figures, from_landing["runs"]))
    assert sum(r["splits"] for r in from_lake["runs"]) > 0  # the demo's hot bundles are split from the lake's topics too


@pytest.mark.parametrize("n", [1, 7, 62])
def test_each_run_gets_its_own_task_in_run_order(spark, n):
    from lb_pipeline.transforms.simulation import spread_keys

    keys = spread_keys(spark, n)
    placed = (spark.createDataFrame([(k, i) for i, k in enumerate(keys)], "k int, run int").repartition(n, "k")
              .select("run", F.spark_partition_id().alias("task")).collect())
    assert sorted((r["run"], r["task"]) for r in placed) == [(i, i) for i in range(n)]
