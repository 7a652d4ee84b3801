"""Two clusters in one landing, configured differently: each is replayed, simulated and judged under its own
configuration. (Every replay once took the configuration of whichever cluster's snapshot came last.)"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.transforms.config import cluster_configs, per_cluster
from tests.conftest import DEMO_DAY

pytestmark = pytest.mark.spark

TWIN = "twin-cluster"
LOW = {"loadBalancerBrokerOverloadedThresholdPercentage": "40", "loadBalancerBrokerThresholdShedderPercentage": "2"}


def _at(hour: int) -> datetime:
    return datetime(2026, 1, 15, hour, tzinfo=timezone.utc)


def test_each_cluster_gets_its_leaders_config_as_of_its_own_last_snapshot(spark):
    snapshots = spark.createDataFrame(
        [("a", _at(1), "a-1", "4.0.8"), ("a", _at(2), "a-2", "4.0.8"), ("b", _at(3), "b-1", "4.0.7")],
        "cluster string, snapshot_ts timestamp, leader string, pulsar_version string")
    config = spark.createDataFrame(
        [("a", _at(1), "runtime:a-1", "loadBalancerBrokerOverloadedThresholdPercentage", "60"),  # an older snapshot
         ("a", _at(2), "runtime:a-2", "loadBalancerBrokerOverloadedThresholdPercentage", "70"),
         ("a", _at(2), "runtime:a-1", "loadBalancerBrokerOverloadedThresholdPercentage", "99"),  # not the leader
         ("a", _at(2), "dynamic", "loadBalancerSheddingGracePeriodMinutes", "5"),
         ("b", _at(3), "runtime:b-1", "loadBalancerSheddingGracePeriodMinutes", "45")],
        "cluster string, snapshot_ts timestamp, source string, key string, value string")
    configs = cluster_configs(config, snapshots)
    assert list(configs) == ["a", "b"]
    a, b = configs["a"], configs["b"]
    assert a.get_int("loadBalancerBrokerOverloadedThresholdPercentage") == 70
    assert a.get_int("loadBalancerSheddingGracePeriodMinutes") == 5 and a.profile == "pulsar-4.0"
    assert b.get_int("loadBalancerBrokerOverloadedThresholdPercentage") == 85  # b left it at Pulsar's default
    assert b.get_int("loadBalancerSheddingGracePeriodMinutes") == 45 and b.profile == "pulsar-4.0.7"
    assert configs.of("not-landed") is configs.default is b  # the night's latest snapshot is b's

    rows = spark.createDataFrame([("a",), ("b",), ("c",)], "cluster string")
    grace = rows.select("cluster", per_cluster(configs, lambda c: c.get_int("loadBalancerSheddingGracePeriodMinutes"))
                        .alias("grace")).collect()
    assert {r["cluster"]: r["grace"] for r in grace} == {"a": 5, "b": 45, "c": 45}
    one = rows.select(per_cluster(PulsarConfig(), lambda c: c.get_int("loadBalancerSheddingGracePeriodMinutes"))).collect()
    assert {r[0] for r in one} == {30}  # one configuration for every cluster: Pulsar's default grace period


def _with_twin(df):
    """``df`` and a copy of its rows under the twin cluster's name."""
    return df.unionByName(df.withColumn("cluster", F.lit(TWIN)))


def _rows(df, cluster: str, *order: str) -> list[tuple]:
    return [tuple(r) for r in df.where(F.col("cluster") == cluster).drop("cluster").orderBy(*order).collect()]


def test_the_shedding_replay_runs_each_cluster_under_its_own_configuration(lake, spark):
    from lb_pipeline.transforms import gold, silver

    def read(layer, table, twin=True):
        df = lake.read(spark, layer, table, DEMO_DAY)
        return _with_twin(df) if twin else df

    demo = cluster_configs(read("bronze", "config", False), read("bronze", "snapshots", False)).default
    low = demo.overridden(**LOW)

    def replay(config, twin=True):
        return gold.shedding_decisions(
            read("bronze", "broker_reports", twin), read("bronze", "bundle_reports", twin),
            read("silver", "bundle_time_averages", twin), read("bronze", "ownership", twin),
            silver.layouts(read("bronze", "namespaces", twin), read("bronze", "ownership", twin)),
            read("bronze", "config", twin), read("bronze", "failure_domains", twin), config)

    both = replay(ClusterConfigs({"demo-cluster": demo, TWIN: low}, demo)).cache()
    order = ("snapshot_ts", "strategy", "bundle")
    tonight = _rows(lake.read(spark, "gold", "shedding_decisions", DEMO_DAY), "demo-cluster", *order)
    assert _rows(both, "demo-cluster", *order) == tonight  # the demo cluster as the nightly run replayed it
    twin = _rows(both, TWIN, *order)
    assert len(twin) > len(tonight)  # a 40 % overload threshold and a 2 % band unload more
    alone = replay(low, twin=False)  # the demo cluster's rows under the twin's configuration
    assert twin == _rows(alone, "demo-cluster", *order)
    both.unpersist()


def test_the_simulation_and_its_recommendation_use_each_clusters_configuration(lake, spark):
    from lb_pipeline.simulation.sweep import run_list
    from lb_pipeline.transforms import simulation as sim

    def read(layer, table):
        return _with_twin(lake.read(spark, layer, table, DEMO_DAY))

    demo = cluster_configs(lake.read(spark, "bronze", "config", DEMO_DAY),
                           lake.read(spark, "bronze", "snapshots", DEMO_DAY)).default
    configs = ClusterConfigs({"demo-cluster": demo, TWIN: demo.overridden(**LOW)}, demo)

    def runs(config):
        return [r for r in run_list(config) if r["strategy"] in ("no-balancing", "OverloadShedder")]

    policies = sim.policy_rows(*(read("bronze", t) for t in ("ownership", "namespaces", "config", "failure_domains")))
    result = sim.runs_table(sim.simulate_runs(spark, read("bronze", "broker_reports"), read("bronze", "bundle_reports"),
                                              read("gold", "load_model"), policies, configs, runs,
                                              read("bronze", "topic_stats")))
    figures = {(r.cluster, r.strategy): (r.unloads, r.overloaded_broker_minutes) for r in result.collect()}
    tonight = {r.strategy: (r.unloads, r.overloaded_broker_minutes)
               for r in lake.read(spark, "gold", "simulation_runs", DEMO_DAY).collect()}
    for strategy in ("no-balancing", "OverloadShedder"):
        assert figures[("demo-cluster", strategy)] == tonight[strategy]
    # under a 40 % threshold more of the same traffic counts as overloaded, and OverloadShedder moves more
    assert figures[(TWIN, "no-balancing")][1] > tonight["no-balancing"][1]
    assert figures[(TWIN, "OverloadShedder")][0] > tonight["OverloadShedder"][0]


def test_each_cluster_is_told_only_the_settings_its_own_configuration_lacks(lake, spark):
    from lb_pipeline.simulation.sweep import settings_for
    from lb_pipeline.transforms import recommendations as recs

    runs = lake.read(spark, "gold", "simulation_runs", DEMO_DAY)
    cycles = lake.read(spark, "gold", "simulation_timeseries", DEMO_DAY)
    demo = cluster_configs(lake.read(spark, "bronze", "config", DEMO_DAY),
                           lake.read(spark, "bronze", "snapshots", DEMO_DAY)).default
    alone = recs.recommendations(runs, demo, cycles).iloc[0]
    assert alone["decision"] == "change" and alone["broker_conf"]  # the demo cluster is told to change something
    # the twin already runs what the demo cluster is told to run: it keeps it, and is told nothing to set
    twin = demo.overridden(**settings_for(alone["strategy"], json.loads(alone["params"]), demo))
    both = recs.recommendations(_with_twin(runs), ClusterConfigs({"demo-cluster": demo, TWIN: twin}, demo),
                               _with_twin(cycles)).set_index("cluster")
    assert both.loc["demo-cluster", "broker_conf"] == alone["broker_conf"]
    assert both.loc[TWIN, "current_strategy"] == alone["strategy"] and both.loc[TWIN, "decision"] == "keep"
    assert both.loc[TWIN, "broker_conf"] == "" and both.loc[TWIN, "commands"] == ""
    # without the night's cycles no change is claimed sure
    assert recs.recommendations(runs, demo).iloc[0]["decision"] == "keep"


def test_the_assets_read_the_configurations_once_per_version_of_the_bronze_tables(spark, tmp_path):
    from assets.common import day_configs
    from lb_pipeline.spark.lake import Lake

    lake = Lake(str(tmp_path / "lake"))
    key = "loadBalancerBrokerOverloadedThresholdPercentage"

    def land(threshold: str):
        lake.write_partition(spark.createDataFrame(
            [("a", _at(1), "a-1", "4.0.8", DEMO_DAY)],
            "cluster string, snapshot_ts timestamp, leader string, pulsar_version string, snapshot_date string"),
            "bronze", "snapshots", DEMO_DAY)
        lake.write_partition(spark.createDataFrame(
            [("a", _at(1), "runtime:a-1", key, threshold, DEMO_DAY)],
            "cluster string, snapshot_ts timestamp, source string, key string, value string, snapshot_date string"),
            "bronze", "config", DEMO_DAY)
        lake.write_partition(spark.createDataFrame(  # whose start says which strategy the leader runs
            [("a", _at(1), "a-1", 0, DEMO_DAY)],
            "cluster string, snapshot_ts timestamp, broker string, start_timestamp_ms long, snapshot_date string"),
            "bronze", "broker_reports", DEMO_DAY)

    land("70")
    first = day_configs(spark, lake, DEMO_DAY)
    assert first["a"].get_int(key) == 70 and day_configs(spark, lake, DEMO_DAY) is first  # asked again: not read again
    land("60")  # the night ingested again, the leader's value changed
    assert day_configs(spark, lake, DEMO_DAY)["a"].get_int(key) == 60


def test_the_replays_read_isolation_policies_in_the_order_of_their_document(spark):
    from lb_pipeline.transforms.gold import cluster_policies

    policy = {"namespaces": ["t/.*"], "primary": ["b"]}
    config = spark.createDataFrame(
        [("a", _at(1), "isolation-policies", name, json.dumps(policy), position, "2026-01-15")
         for name, position in (("alpha", 2), ("zeta", 0), ("mid", 1))],
        "cluster string, snapshot_ts timestamp, source string, key string, value string, position int, "
        "snapshot_date string")
    ownership = spark.createDataFrame([("a", _at(1), "2026-01-15", "t/a/0x0_0x1", "b:8080")],
                                      "cluster string, snapshot_ts timestamp, snapshot_date string, bundle string, "
                                      "broker string")
    namespaces = spark.createDataFrame([], "cluster string, snapshot_ts timestamp, snapshot_date string, "
                                           "namespace string, anti_affinity_group string")
    domains = spark.createDataFrame([], "cluster string, snapshot_ts timestamp, snapshot_date string, broker string, "
                                        "domain string")

    def names(rows) -> list[str]:
        (row,) = cluster_policies(ownership, namespaces, rows, domains).collect()
        return list(json.loads(row.isolation))

    assert names(config) == ["zeta", "mid", "alpha"]
    assert names(config.drop("position")) == ["alpha", "mid", "zeta"]  # a lake written before the column: by name


def test_the_replays_and_the_simulation_know_which_bundles_serve_non_persistent_topics(spark):
    """Per snapshot, the bundles with a non-persistent topic (bronze topic rows), which the leader's lookup flags
    ``hasNonPersistentTopic``: the shedding replay and the simulation place them as Pulsar does."""
    from lb_pipeline.simulation.policies import Policies
    from lb_pipeline.transforms.simulation import policy_rows

    keys = "cluster string, snapshot_ts timestamp, snapshot_date string"
    topics = spark.createDataFrame(
        [("a", _at(h), "2026-01-15", bundle, f"{domain}://t/a/x{k}", domain)
         for h in (1, 2) for k, (bundle, domain) in enumerate((("t/a/0x0_0x1", "persistent"),
                                                               ("t/a/0x1_0x2", "non-persistent"),
                                                               ("t/a/0x1_0x2", "persistent"),
                                                               ("t/a/0x2_0x3", "non-persistent")))
         if h == 1 or bundle != "t/a/0x2_0x3"],
        f"{keys}, bundle string, topic string, domain string")
    ownership = spark.createDataFrame([("a", _at(h), "2026-01-15", "t/a/0x0_0x1", "b:8080") for h in (1, 2)],
                                      f"{keys}, bundle string, broker string")
    namespaces = spark.createDataFrame([], f"{keys}, namespace string, anti_affinity_group string")
    config = spark.createDataFrame([], f"{keys}, source string, key string, value string, position int")
    domains = spark.createDataFrame([], f"{keys}, broker string, domain string")
    rows = [r.asDict() for r in policy_rows(ownership, namespaces, config, domains, topics).orderBy("t_ms").collect()]
    assert [json.loads(r["non_persistent"]) for r in rows] == [["t/a/0x1_0x2", "t/a/0x2_0x3"], ["t/a/0x1_0x2"]]
    policies = Policies.from_rows(rows)
    assert policies.state(["b:8080"], rows[0]["t_ms"]).non_persistent == {"t/a/0x1_0x2", "t/a/0x2_0x3"}
    assert policies.state(["b:8080"], rows[1]["t_ms"] + 1).non_persistent == {"t/a/0x1_0x2"}
    # without topic rows (a caller that has none): nothing flagged
    bare = [r.asDict() for r in policy_rows(ownership, namespaces, config, domains).collect()]
    assert "non_persistent" not in bare[0] and not Policies.from_rows(bare).state([], rows[1]["t_ms"]).non_persistent


def test_the_nightly_replay_sends_no_bundle_with_a_non_persistent_topic_to_a_broker_that_serves_none(lake, spark):
    """The demo night replayed again with one broker's reports saying ``nonPersistentTopicsEnabled: false`` (the
    broker tonight's modular replays sent bundles with non-persistent topics to most): no modular strategy sends
    such a bundle there any more, as Pulsar's ``applyNamespacePolicies`` would not; the flags come from the bronze
    rows and the bundles' topics from ``bronze/topic_stats``."""
    from collections import Counter

    from lb_pipeline.transforms import gold, silver

    def read(layer, table):
        return lake.read(spark, layer, table, DEMO_DAY)

    modular = ("OverloadShedder", "ThresholdShedder", "UniformLoadShedder", "AvgShedder")
    flagged = {(r.snapshot_ts, r.bundle) for r in read("bronze", "topic_stats").where(
        F.col("domain") == "non-persistent").select("snapshot_ts", "bundle").distinct().collect()}
    tonight = [r for r in read("gold", "shedding_decisions").collect() if r.strategy in modular]
    to = Counter(r.destination for r in tonight if (r.snapshot_ts, r.bundle) in flagged and r.destination)
    assert to, "the demo's modular replays move no bundle with a non-persistent topic"
    target = to.most_common(1)[0][0]
    reports = read("bronze", "broker_reports").withColumn("non_persistent_topics_enabled",
                                                          F.col("broker") != F.lit(target))
    configs = cluster_configs(read("bronze", "config"), read("bronze", "snapshots")).default
    again = gold.shedding_decisions(
        reports, read("bronze", "bundle_reports"), read("silver", "bundle_time_averages"), read("bronze", "ownership"),
        silver.layouts(read("bronze", "namespaces"), read("bronze", "ownership")), read("bronze", "config"),
        read("bronze", "failure_domains"), configs, topic_stats=read("bronze", "topic_stats"))
    replayed = [r for r in again.collect() if r.strategy in modular]
    assert replayed and not [r for r in replayed if (r.snapshot_ts, r.bundle) in flagged and r.destination == target]
    assert any(r.destination == target for r in replayed)  # it still takes bundles serving persistent topics only
