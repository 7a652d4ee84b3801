"""The simulation's gold tables from the nightly job on the demo day: complete, conserved, and equal to the
same runs done in one process from the landing folder."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from lb_pipeline.simulation.landing import read_history, read_leader
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
    cluster, brokers, bundles, config, _, policies, topics, ran = read_history(demo_landing, DEMO_DAY)
    leader = read_leader(demo_landing, DEMO_DAY, cluster, [])
    assert len(leader[0]) > 0  # the generated leader stores BundleData: both paths start from it
    local = simulate_all(cluster, brokers, bundles, config, run_list(config), policies=policies, topics=topics, ran=ran,
                         leader_rows=leader)
    on_spark = {r.strategy: r for r in lake.read(spark, "gold", "simulation_runs", DEMO_DAY).collect()}
    for r in local["runs"]:
        s = on_spark[r["strategy"]]
        assert (s.unloads, s.reconnections, s.ping_pongs, s.splits) == (
            r["unloads"], r["reconnections"], r["ping_pongs"], r["splits"]), r["strategy"]
        assert s.usage_std_mean == pytest.approx(r["usage_std_mean"], rel=1e-9)
        assert (s.recorded_unloads, s.predicted_unloads, s.matched_unloads) == tuple(  # the validated run's
            r.get(k) for k in ("recorded_unloads", "predicted_unloads", "matched_unloads")), r["strategy"]
    rec = lake.read(spark, "gold", "recommendations", DEMO_DAY).first()
    assert rec.strategy == local["recommendation"]["strategy"]
    assert (rec.decision, rec.current_strategy, rec.candidate_strategy) == tuple(
        local["recommendation"][k] for k in ("decision", "current_strategy", "candidate_strategy"))
    for k in ("current_imbalance", "gain_low", "gain_high"):  # the same cycles resampled the same way
        assert getattr(rec, k) == (None if local["recommendation"][k] is None else pytest.approx(local["recommendation"][k]))


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


def test_the_runs_share_the_cores_evenly_each_run_once_the_validated_one_counted_twice():
    from lb_pipeline.model.config import PulsarConfig
    from lb_pipeline.transforms.simulation import run_cost, slot_plan

    config = PulsarConfig()  # ThresholdShedder as configured: its run is replayed again, anchored
    runs = run_list(config)
    cost = {r["run_id"]: run_cost(r, config) for r in runs}
    assert cost["ThresholdShedder#3"] == 2.0 and cost["no-balancing#0"] == cost["as-recorded#1"] == 0.5
    assert run_cost({**runs[3], "seed": 1}, config) == 1.0  # a second seed is not validated
    plan = slot_plan(runs, 2, lambda r: cost[r["run_id"]])
    assert sorted(r["run_id"] for slot in plan for r in slot) == sorted(cost)
    assert [sum(cost[r["run_id"]] for r in slot) for slot in plan] == [3.5, 3.5]
    assert plan[0][0]["strategy"] == "ThresholdShedder"  # the dearest starts first
    assert slot_plan(runs[:1], 4, lambda r: 1.0) == [runs[:1]]  # no empty slot, no empty task


def test_a_history_too_broken_to_simulate_says_so_in_each_runs_row():
    import pandas as pd

    from lb_pipeline.model.cluster_configs import ClusterConfigs
    from lb_pipeline.model.config import PulsarConfig
    from lb_pipeline.transforms.simulation import _names, OUTPUT_SCHEMA, _simulate_slot

    one_snapshot = pd.DataFrame([{"cluster": "c", "snapshot_date": DEMO_DAY, "kind": "broker", "broker": "b1",
                                  "snapshot_ts": pd.Timestamp(f"{DEMO_DAY} 00:00", tz="UTC")}])
    runs = run_list(PulsarConfig())[:2]
    configs = ClusterConfigs.of_any(PulsarConfig())
    out = _simulate_slot(one_snapshot, configs, {None: [runs]}, 0)
    assert list(out.columns) == _names(OUTPUT_SCHEMA)
    run_rows, check = out[out["kind"] == "run"], out[out["kind"] == "validation"]
    assert run_rows["run_id"].tolist() == [r["run_id"] for r in runs] and len(check) == 1  # the first slot validates
    assert out["notes"].str.startswith("not simulated: cluster 'c': the history needs two snapshots").all()
    # a cluster whose runs fill fewer slots than another's: its spare slot emits nothing
    assert _simulate_slot(one_snapshot, configs, {None: [runs]}, 1).columns.tolist() == _names(OUTPUT_SCHEMA)
    assert _simulate_slot(one_snapshot, configs, {None: [runs]}, 1).empty


@pytest.mark.parametrize("n", [1, 7, 62])
def test_each_slot_gets_its_own_task_in_slot_order(spark, n):
    from lb_pipeline.transforms.simulation import spread_keys

    keys = spread_keys(spark, n)
    placed = (spark.createDataFrame([(k, i) for i, k in enumerate(keys)], "k int, slot int").repartition(n, "k")
              .select("slot", F.spark_partition_id().alias("task")).collect())
    assert sorted((r["slot"], r["task"]) for r in placed) == [(i, i) for i in range(n)]


def test_simulate_from_the_lake_names_a_snapshot_without_load_reports(lake, spark):
    from lb_pipeline.transforms.lake_history import lake_history

    times = sorted(r[0] for r in lake.read(spark, "bronze", "snapshots", DEMO_DAY).select("snapshot_ts").collect())

    class LostReports:  # the lake, with every load report of the second snapshot quarantined
        root = lake.root

        def read(self, spark, layer, table, day=None):
            df = lake.read(spark, layer, table, day)
            return df.where(df["snapshot_ts"] != times[1]) if table == "broker_reports" else df

    notes = lake_history(spark, LostReports(), DEMO_DAY, None)[4]
    assert notes == [f"demo-cluster {times[1]:%Y-%m-%dT%H:%M:%SZ}: no broker load report; the history goes from the "
                     "snapshot before to the one after"]
    assert lake_history(spark, lake, DEMO_DAY, None)[4] == []


def test_a_night_without_the_leaders_log_says_its_closed_loop_is_not_scored_against_one(lake, spark, pipeline_run):
    import html
    import re

    from lb_pipeline.simulation.real_validation import NO_LOG

    (row,) = lake.read(spark, "gold", "simulation_validation", DEMO_DAY).collect()
    runs = {r.strategy for r in lake.read(spark, "gold", "simulation_runs", DEMO_DAY).collect()}
    assert row.strategy in runs and row.snapshots >= 2
    assert (row.logged_unloads, row.matched_unloads, row.precision, row.recall) == (None, None, None, None)
    assert NO_LOG in row.notes
    assert row.usage_mae_points is not None and 0 <= row.usage_mae_points <= 100  # the usage is still measured
    (report,) = (pipeline_run[2] / row.cluster).glob(f"{DEMO_DAY}*.html")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", report.read_text())).split())
    assert "Not checked against this cluster's own record: the snapshots hold no broker log" in text
    assert f"Simulated broker usage was {row.usage_mae_points:.1f} points" in text
