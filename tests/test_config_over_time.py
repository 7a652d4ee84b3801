"""A configuration changed during the night (a dynamic override, a rolling upgrade): each snapshot is replayed and
judged under the configuration in force then, as Pulsar's leader reads its live configuration on every cycle.
(Every snapshot of a night once took the configuration of the night's last one.)"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import EXTENSIBLE_LOAD_MANAGER
from lb_pipeline.transforms.config import cluster_configs, per_cluster
from tests.conftest import DEMO_DAY

pytestmark = pytest.mark.spark

THRESHOLD = "loadBalancerBrokerOverloadedThresholdPercentage"
# what an operator sets at the third snapshot: OverloadShedder at 40 %, splits of bundles over 100 msg/s
NOON = {THRESHOLD: "40", "loadBalancerLoadSheddingStrategy": "org.apache.pulsar.broker.loadbalance.impl.OverloadShedder",
        "loadBalancerNamespaceBundleMaxMsgRate": "100"}


def _at(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 1, 15, hour, minute, tzinfo=timezone.utc)


def _ms(hour: int, minute: int = 0) -> int:
    return int(_at(hour, minute).timestamp() * 1000)


def test_each_snapshot_gets_the_configuration_in_force_then(spark):
    snapshots = spark.createDataFrame(
        [("a", _at(1), "a-1", "4.0.7"), ("a", _at(2), "a-1", "4.0.7"), ("a", _at(3), "a-1", "4.0.7"),
         ("a", _at(4), "a-2", "4.0.7"), ("a", _at(5), "a-2", "4.0.8")],
        "cluster string, snapshot_ts timestamp, leader string, pulsar_version string")
    rows = [("a", _at(1), "runtime:a-1", THRESHOLD, "70"), ("a", _at(1), "runtime:a-1", "advertisedAddress", "a-1"),
            # 2h: the leader's runtime file was lost (quarantined): its values stay, a lost file is no change
            ("a", _at(3), "runtime:a-1", THRESHOLD, "70"), ("a", _at(3), "dynamic", THRESHOLD, "40"),
            # 4h: a new leader with the same load-balancer values (another address is no change)
            ("a", _at(4), "runtime:a-2", THRESHOLD, "70"), ("a", _at(4), "runtime:a-2", "advertisedAddress", "a-2"),
            ("a", _at(4), "dynamic", THRESHOLD, "40"),
            # 5h: the rolling upgrade reached the brokers: another release's profile
            ("a", _at(5), "runtime:a-2", THRESHOLD, "70"), ("a", _at(5), "dynamic", THRESHOLD, "40")]
    config = spark.createDataFrame(rows, "cluster string, snapshot_ts timestamp, source string, key string, value string")
    configs = cluster_configs(config, snapshots)

    changes = configs.changes("a")
    assert [ms for ms, _ in changes] == [_ms(1), _ms(3), _ms(5)]
    assert [(c.get_int(THRESHOLD), c.profile) for _, c in changes] == [
        (70, "pulsar-4.0.7"), (40, "pulsar-4.0.7"), (40, "pulsar-4.0")]
    assert configs.at("a", _ms(2, 30)).get_int(THRESHOLD) == 70
    assert configs.at("a", _ms(3)).get_int(THRESHOLD) == 40
    assert configs.at("a", _ms(0)) is changes[0][1]  # before the first snapshot: the first one's
    assert configs.of("a") is configs.at("a", _ms(23)) is changes[-1][1]  # the current one is the last snapshot's
    assert configs.at("b", _ms(2)) is configs.default  # a cluster with no snapshot

    at_rows = spark.createDataFrame([("a", _at(h)) for h in (1, 2, 3, 4, 5)] + [("b", _at(2))],
                                    "cluster string, snapshot_ts timestamp")
    threshold = per_cluster(configs, lambda c: c.get_int(THRESHOLD), ts="snapshot_ts")
    got = [(r["cluster"], r["snapshot_ts"].hour, r["t"]) for r in at_rows.select("*", threshold.alias("t")).collect()]
    assert sorted(got) == [("a", 1, 70), ("a", 2, 70), ("a", 3, 40), ("a", 4, 40), ("a", 5, 40), ("b", 2, 40)]
    current = at_rows.select(per_cluster(configs, lambda c: c.get_int(THRESHOLD)).alias("t")).collect()
    assert {r["t"] for r in current} == {40}  # without ``ts``: each cluster's current configuration


def test_the_strategy_is_the_one_the_leader_started_with(spark):
    """bronze → configurations: a strategy set at 03:00 while the leader a-1 runs (started at 00:30) is not the one it
    runs; the threshold set with it is. A second leader started at 04:30 runs the new one."""
    shedder = "loadBalancerLoadSheddingStrategy"
    snapshots = spark.createDataFrame([("a", _at(h), "a-1" if h < 5 else "a-2", "4.0.7") for h in (1, 2, 3, 4, 5)],
                                      "cluster string, snapshot_ts timestamp, leader string, pulsar_version string")
    config = spark.createDataFrame([("a", _at(h), "dynamic", k, v) for h in (3, 4, 5) for k, v in NOON.items()],
                                   "cluster string, snapshot_ts timestamp, source string, key string, value string")
    reports = spark.createDataFrame(
        [("a", _at(h), b, _ms(*start)) for h in (1, 2, 3, 4, 5) for b, start in (("a-1", (0, 30)), ("a-2", (4, 30)))],
        "cluster string, snapshot_ts timestamp, broker string, start_timestamp_ms long")
    recorded = cluster_configs(config, snapshots).changes("a")
    assert [(ms, c[shedder].rsplit(".", 1)[-1]) for ms, c in recorded] == [(_ms(1), "ThresholdShedder"), (_ms(3), "OverloadShedder")]
    configs = cluster_configs(config, snapshots, reports=reports)
    assert [(ms, c[shedder].rsplit(".", 1)[-1], c.get_int(THRESHOLD)) for ms, c in configs.changes("a")] == [
        (_ms(1), "ThresholdShedder", 85), (_ms(3), "ThresholdShedder", 40), (_ms(5), "OverloadShedder", 40)]
    [note] = configs.notes("a")
    assert note.startswith("From 03:00 UTC the configuration sets loadBalancerLoadSheddingStrategy to OverloadShedder, "
                           "but the leader (a-1) created its load manager before that (before the night's first snapshot)")


def _history(lake, spark):
    """The demo day's configuration, and the same night with ``NOON`` set at its third snapshot."""
    demo = cluster_configs(lake.read(spark, "bronze", "config", DEMO_DAY),
                           lake.read(spark, "bronze", "snapshots", DEMO_DAY)).default
    noon, change = sorted(tuple(r) for r in lake.read(spark, "bronze", "snapshots", DEMO_DAY)
                          .select("snapshot_ts", F.unix_millis("snapshot_ts")).collect())[2]
    late = demo.overridden(**NOON)
    return ClusterConfigs({"demo-cluster": late}, late, {"demo-cluster": [(0, demo), (change, late)]}), noon, change


def _split(rows, noon):
    rows = sorted((tuple(r) for r in rows.drop("cluster").collect()), key=lambda t: tuple(str(x) for x in t))
    return [r for r in rows if r[0] < noon], [r for r in rows if r[0] >= noon]


def test_the_replays_follow_a_configuration_changed_during_the_night(lake, spark):
    from lb_pipeline.transforms import gold, silver, splits

    def read(layer, table):
        return lake.read(spark, layer, table, DEMO_DAY)

    configs, noon, _ = _history(lake, spark)
    replayed = gold.shedding_decisions(
        read("bronze", "broker_reports"), read("bronze", "bundle_reports"), read("silver", "bundle_time_averages"),
        read("bronze", "ownership"), silver.layouts(read("bronze", "namespaces"), read("bronze", "ownership")),
        read("bronze", "config"), read("bronze", "failure_domains"), configs).cache()  # read three times below
    before, after = _split(replayed, noon)
    tonight_before, tonight_after = _split(read("gold", "shedding_decisions"), noon)
    assert before == tonight_before  # the morning as the nightly run replayed it
    overload = [r for r in after if r[2] == "OverloadShedder"]
    assert overload and {r[9] for r in overload} == {0.4}  # from noon: OverloadShedder at the new threshold
    assert len(overload) > sum(r[2] == "OverloadShedder" for r in tonight_after)
    # what the leader ran at each snapshot: the night's trends count those unloads
    ran = {(r.snapshot_ts < noon, r.strategy, r.leader_ran) for r in replayed.collect()}
    assert {(morning, strategy) for morning, strategy, leader_ran in ran if leader_ran} == {
        (True, "ThresholdShedder"), (False, "OverloadShedder")}

    usage = read("silver", "broker_usage")
    summary = gold.broker_load_summary(usage, per_cluster(configs, lambda c: c.get_float(THRESHOLD) / 100, ts="snapshot_ts"))
    over = usage.where(F.when(F.col("snapshot_ts") < noon, F.col("max_usage") > 0.85).otherwise(F.col("max_usage") > 0.40))
    assert {r.broker: r.snapshots_overloaded for r in summary.collect()} == {
        **{r.broker: 0 for r in usage.select("broker").distinct().collect()},
        **{r.broker: r["count"] for r in over.groupBy("broker").count().collect()}}
    assert summary.agg(F.sum("snapshots_overloaded")).first()[0] > summary.agg(F.sum("snapshots_over_85pct")).first()[0]

    triggers = splits.split_triggers(read("bronze", "broker_reports"), read("bronze", "bundle_reports"),
                                     read("silver", "bundle_time_averages"), read("bronze", "namespaces"), configs)
    before, after = _split(triggers, noon)
    tonight_before, tonight_after = _split(read("gold", "split_triggers"), noon)
    assert before == tonight_before
    assert len(after) > len(tonight_after)  # bundles over 100 msg/s are hot from noon on


def test_a_leader_that_restarts_replays_its_strategies_afresh(lake, spark):
    """A new load manager at every snapshot (another leader, or it restarted): nothing is carried from one snapshot
    to the next. With hit counts longer than a snapshot's window of shedding cycles (a cycle a minute until the next
    snapshot), AvgShedder and TransferShedder unload only with the hits of the window before: on a steady leader,
    never after a restart; the first snapshot is replayed alike, and the other strategies still unload."""
    from lb_pipeline.transforms import gold, silver

    def read(layer, table):
        return lake.read(spark, layer, table, DEMO_DAY)

    times = sorted(r[0] for r in read("bronze", "snapshots").select(F.unix_millis("snapshot_ts")).collect())
    hits = (times[1] - times[0]) // 60_000 * 3 // 2
    demo = cluster_configs(read("bronze", "config"), read("bronze", "snapshots")).default.overridden(
        loadBalancerSheddingConditionHitCountThreshold=hits, loadBalancerAvgShedderHitCountHighThreshold=hits,
        loadBalancerAvgShedderHitCountLowThreshold=hits)

    def replay(restarts):
        configs = ClusterConfigs({"demo-cluster": demo}, demo, {"demo-cluster": [(times[0], demo)]},
                                 restarts={"demo-cluster": restarts})
        return gold.shedding_decisions(
            read("bronze", "broker_reports"), read("bronze", "bundle_reports"), read("silver", "bundle_time_averages"),
            read("bronze", "ownership"), silver.layouts(read("bronze", "namespaces"), read("bronze", "ownership")),
            read("bronze", "config"), read("bronze", "failure_domains"), configs)

    steady, replayed = replay([]).cache(), replay(times[1:]).cache()  # each replay queried two and three times
    held = F.col("strategy").isin("AvgShedder", "TransferShedder")
    assert steady.where(held).count() > 0 and replayed.where(held).count() == 0
    first = F.unix_millis("snapshot_ts") == times[0]
    assert sorted(map(tuple, replayed.where(first).collect())) == sorted(map(tuple, steady.where(first).collect()))
    assert replayed.where(~held).count() > 0


def test_a_broker_that_restarts_counts_its_hot_cycles_again_before_the_extensible_trigger_splits(lake, spark):
    """Every broker runs its own SplitScheduler (extensible load manager): its hit counts live there. With a hit-count
    threshold longer than the gap between snapshots, a bundle hot at two in a row splits in the second snapshot's
    window (each snapshot's load holds a split cycle a minute until the next); not when its broker restarted
    between the two."""
    from lb_pipeline.transforms import splits

    def read(layer, table):
        return lake.read(spark, layer, table, DEMO_DAY)

    configs = cluster_configs(read("bronze", "config"), read("bronze", "snapshots"))
    times = sorted(r[0] for r in read("bronze", "snapshots").select("snapshot_ts").collect())
    gap = int((times[1] - times[0]).total_seconds() // 60)
    config = configs.of("demo-cluster").overridden(
        loadBalancerNamespaceBundleSplitConditionHitCountThreshold=gap + gap // 2)

    def replay(reports):
        return splits.split_triggers(reports, read("bronze", "bundle_reports"), read("silver", "bundle_time_averages"),
                                     read("bronze", "namespaces"), config).where("trigger = 'extensible'")

    reports = read("bronze", "broker_reports")
    steady = replay(reports).cache()  # queried twice
    chosen = steady.where("selected").orderBy("snapshot_ts").first()
    assert chosen is not None and times.index(chosen.snapshot_ts) >= 1
    assert chosen.cycle_note.endswith(f"split at cycle {gap // 2 + 1}")  # the hits of the window before count
    restarted = reports.withColumn("start_timestamp_ms", F.when(  # 30 s before the snapshot that split it
        (F.col("broker") == chosen.broker) & (F.col("snapshot_ts") >= F.lit(chosen.snapshot_ts)),
        F.unix_millis(F.lit(chosen.snapshot_ts)) - 30_000).otherwise(F.col("start_timestamp_ms")))
    replayed = replay(restarted).cache()
    at = (F.col("snapshot_ts") == F.lit(chosen.snapshot_ts)) & (F.col("bundle") == chosen.bundle)
    assert [r.selected for r in replayed.where(at).collect()] == [False]
    earlier = F.col("snapshot_ts") < F.lit(chosen.snapshot_ts)
    assert sorted(map(tuple, replayed.where(earlier).collect())) == sorted(map(tuple, steady.where(earlier).collect()))


def test_the_report_says_what_changed_and_scores_the_strategy_configured_at_each_snapshot(lake, spark):
    from lb_pipeline.report.context import build_context
    from lb_pipeline.report.render import render_nightly
    from lb_pipeline.transforms.accuracy import recorded_moves, replay_accuracy, stayed_up
    from lb_pipeline.transforms.silver import layouts

    configs, _, change = _history(lake, spark)
    ctx = build_context(spark, lake, DEMO_DAY, "demo-cluster", configs)
    at = datetime.fromtimestamp(change / 1000, timezone.utc).strftime("%H:%M UTC")
    assert ctx["strategy"] == "OverloadShedder"  # what the report recommends starts from the current configuration
    [noon] = ctx["config_changes"]
    assert noon["at"] == at
    assert {(s["key"], s["before"], s["after"]) for s in noon["settings"]} == {
        (THRESHOLD, "85", "40"), ("loadBalancerNamespaceBundleMaxMsgRate", "30000", "100"),
        ("loadBalancerLoadSheddingStrategy", "org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder",
         "org.apache.pulsar.broker.loadbalance.impl.OverloadShedder")}
    accuracy = ctx["replay_accuracy"]
    assert accuracy["strategy"] == f"ThresholdShedder, then OverloadShedder from {at}"
    # the same figures as scoring the rows of the strategy configured at each snapshot under one name
    decisions = lake.read(spark, "gold", "shedding_decisions", DEMO_DAY)
    later = F.unix_millis("snapshot_ts") >= change
    chosen = decisions.where((~later & (F.col("strategy") == "ThresholdShedder"))
                             | (later & (F.col("strategy") == "OverloadShedder")))
    ownership = lake.read(spark, "bronze", "ownership", DEMO_DAY)
    up = stayed_up(ownership, lake.read(spark, "bronze", "broker_reports", DEMO_DAY))
    moves = recorded_moves(ownership, layouts(lake.read(spark, "bronze", "namespaces", DEMO_DAY), ownership), up)
    expected = replay_accuracy(chosen.withColumn("strategy", F.lit("x")), moves, "x", up=up)
    assert accuracy["against"] == "ownership"  # no broker logs on the demo day: the recorded ownership changes
    assert {k: v for k, v in accuracy.items() if k not in ("strategy", "against")} == {
        k: v for k, v in expected.items() if k != "strategy"}
    assert ctx["strategy_changed"]  # the simulation's validation says it follows the strategy the leader ran
    html = render_nightly(ctx)
    assert f"from {at}: <code>{THRESHOLD}</code> 85 → 40" in html


def test_snapshots_under_a_plugin_strategy_are_left_out_of_the_replays_accuracy(lake, spark):
    from lb_pipeline.report.trust import replay_vs_recorded
    from lb_pipeline.transforms.accuracy import recorded_moves, replay_accuracy
    from lb_pipeline.transforms.silver import layouts

    configs, _, change = _history(lake, spark)
    demo = configs.changes("demo-cluster")[0][1]
    plugin = demo.overridden(loadBalancerLoadSheddingStrategy="com.example.CustomShedder")
    ownership = lake.read(spark, "bronze", "ownership", DEMO_DAY)
    shape = layouts(lake.read(spark, "bronze", "namespaces", DEMO_DAY), ownership)
    decisions = lake.read(spark, "gold", "shedding_decisions", DEMO_DAY)

    def score(history):
        return replay_vs_recorded(ownership, shape, decisions, ClusterConfigs({}, history[-1][1],
                                                                              {"demo-cluster": history}), "demo-cluster")

    got = score([(0, demo), (change, plugin)])
    at = datetime.fromtimestamp(change / 1000, timezone.utc).strftime("%H:%M UTC")
    assert got["strategy"] == f"ThresholdShedder, then com.example.CustomShedder from {at} (a plugin, not replayed)"
    # ThresholdShedder's morning against the morning's moves only: the plugin's moves are not the replay's to predict
    morning = F.unix_millis("snapshot_ts") < change
    expected = replay_accuracy(decisions.where(morning), recorded_moves(ownership, shape).where(morning),
                               "ThresholdShedder")
    assert {k: v for k, v in got.items() if k not in ("strategy", "against")} == {
        k: v for k, v in expected.items() if k != "strategy"}
    assert expected["moved"] < replay_accuracy(decisions, recorded_moves(ownership, shape), "x")["moved"]
    assert score([(0, plugin)]) is None  # a plugin all night: nothing to score
    # a blank load manager class: the brokers fall back to SimpleLoadManagerImpl, whose moves are not replayed either
    legacy = score([(0, demo), (change, demo.overridden(loadManagerClassName=""))])
    assert legacy == {**got, "strategy": f"ThresholdShedder, then SimpleLoadManagerImpl from {at} "
                                         "(Pulsar's deprecated load manager, not replayed)"}
    # the extensible load manager runs TransferShedder, whatever loadBalancerLoadSheddingStrategy says
    extensible = score([(0, demo.overridden(loadManagerClassName=EXTENSIBLE_LOAD_MANAGER))])
    assert {k: v for k, v in extensible.items() if k != "against"} == replay_accuracy(
        decisions, recorded_moves(ownership, shape), "TransferShedder")
