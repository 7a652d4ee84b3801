"""``gold/pathologies``: the known ways Pulsar's load balancing goes wrong, found in one night's history.

Every detector is a small DataFrame function returning findings in one shape: what (``detector``, ``subject``),
how bad (``severity``), when (first/last snapshot and how many), the rows behind it (``evidence``, JSON, the
first ``EVIDENCE_ROWS``), and the action an operator takes, with Pulsar's own key names.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from lb_pipeline.model.cluster_configs import ClusterConfigs
from lb_pipeline.model.config import PulsarConfig
from lb_pipeline.model.load_manager import configured_strategy
from lb_pipeline.simulation.balancers import STRATEGIES as SHEDDERS
from lb_pipeline.model.usage import Weights
from lb_pipeline.transforms.config import per_cluster
from lb_pipeline.transforms.exact import exact_avg, exact_sum, max_by

EVIDENCE_ROWS = 20
SEVERITIES = ("critical", "warning", "info")
SCHEMA = ("cluster string, snapshot_date string, detector string, severity string, subject string, "
          "first_seen timestamp, last_seen timestamp, snapshots int, summary string, evidence string, action string")
KEYS = ["cluster", "snapshot_ts", "snapshot_date"]
ONE_TOPIC_SHARE = 0.9  # a bundle one topic carries this much of is one topic's: no split spreads it
_TS = "snapshot_ts"  # a finding compares each snapshot with the configuration in force then
_PCT = {"cpu": "cpu_pct", "memory": "memory_pct", "direct_memory": "direct_memory_pct",
        "bandwidth_in": "bandwidth_in_pct", "bandwidth_out": "bandwidth_out_pct"}
_WEIGHT_KEYS = {"cpu": "loadBalancerCPUResourceWeight", "memory": "loadBalancerMemoryResourceWeight",
                "direct_memory": "loadBalancerDirectMemoryResourceWeight",
                "bandwidth_in": "loadBalancerBandwidthInResourceWeight",
                "bandwidth_out": "loadBalancerBandwidthOutResourceWeight"}


def findings(rows: DataFrame, detector: str, subject: Column, severity: Column, summary: Column, action: Column,
             evidence: list[str], min_snapshots: int = 1) -> DataFrame:
    """One finding per (cluster, day, subject) from the matching ``rows`` (one per snapshot and subject)."""
    ev = F.struct(*evidence)
    grouped = rows.withColumn("_subject", subject).groupBy("cluster", "snapshot_date", "_subject").agg(
        F.min("snapshot_ts").alias("first_seen"), F.max("snapshot_ts").alias("last_seen"),
        F.count_distinct("snapshot_ts").cast("int").alias("snapshots"),
        F.to_json(F.slice(F.array_sort(F.collect_list(ev)), 1, EVIDENCE_ROWS)).alias("evidence"),
        F.max_by(F.struct(severity.alias("severity"), summary.alias("summary"), action.alias("action")),
                 F.col("snapshot_ts")).alias("last"))
    return grouped.where(F.col("snapshots") >= min_snapshots).select(
        "cluster", "snapshot_date", F.lit(detector).alias("detector"), "last.severity", F.col("_subject").alias("subject"),
        "first_seen", "last_seen", "snapshots", "last.summary", "evidence", "last.action")


def shell_quoted(c: Column) -> Column:
    """``c`` as one shell word (``shlex.quote``'s rule: bare when every character is safe, else single-quoted with
    each quote spelled ``'"'"'``): names come from the cluster."""
    return F.when(c.rlike(r"^[A-Za-z0-9_@%+=:,./-]+$"), c).otherwise(
        F.concat(F.lit("'"), F.regexp_replace(c, "'", "'\"'\"'"), F.lit("'")))


def _pct(c: str | Column) -> Column:
    return F.format_number((F.col(c) if isinstance(c, str) else c) * 100.0, 0)


def owned_load(bundle_stats: DataFrame) -> DataFrame:
    """Per snapshot and broker: the bundles ownership gives it and the msg/s their topics carry (topic stats, not
    its load report)."""
    return (bundle_stats.where(F.col("owner_broker").isNotNull())
            .groupBy(*KEYS, F.col("owner_broker").alias("broker"))
            .agg(F.count(F.lit(1)).cast("int").alias("owned_bundles"),
                 exact_sum(F.col("msg_rate_in") + F.col("msg_rate_out")).alias("owned_rate")))


def _disagreeing(usage: DataFrame, owned: DataFrame, share: float = 0.1) -> DataFrame:
    """Rows of ``usage`` whose load report contradicts ownership and topic stats: it lists no bundle, or less than
    ``share`` of the msg/s, while the broker owns bundles whose topics carry traffic."""
    report_rate = F.col("msg_rate_in") + F.col("msg_rate_out")
    return (usage.join(owned, [*KEYS, "broker"])
            .where((F.col("owned_rate") > 0) & ((F.col("num_bundles") == 0) | (report_rate < share * F.col("owned_rate")))))


def broken_reporter(usage: DataFrame, owned: DataFrame) -> DataFrame:
    """A broker whose load report says (nearly) nothing while ownership lists its bundles and their topics carry
    traffic: its reporter is broken or stuck (the leader reads only the report, balances the broker as idle and sends
    it more bundles). In two snapshots at least: a report may lag a bundle that arrived a moment before."""
    rows = _disagreeing(usage, owned)
    return findings(
        rows, "load report disagrees with ownership", F.col("broker"),
        F.when(F.col("num_bundles") == 0, "critical").otherwise("warning"),
        F.concat(F.lit("its load report lists "), F.col("num_bundles").cast("string"), F.lit(" bundles and "),
                 F.format_number(F.col("msg_rate_in") + F.col("msg_rate_out"), 0), F.lit(" msg/s; ownership gives it "),
                 F.col("owned_bundles").cast("string"), F.lit(" bundles whose topics carry "),
                 F.format_number("owned_rate", 0), F.lit(" msg/s")),
        F.lit("A broken or stale load reporter, not an idle broker: the leader balances it by its report and sends it "
              "more load. Check the broker's log for errors writing its load data (/loadbalance/brokers) and its "
              "metadata-store session; restart it if the report does not recover, and move no load to it meanwhile."),
        ["snapshot_ts", "broker", "num_bundles", "msg_rate_in", "msg_rate_out", "owned_bundles", "owned_rate"],
        min_snapshots=2)


def pinning_bundles(bundle_stats: DataFrame, share: float = 0.5) -> DataFrame:
    """Per snapshot and broker, the bundle that decides where its load is: one topic's (``ONE_TOPIC_SHARE``) and at
    least ``share`` of the msg/s the broker's bundles carry. Moved, that load goes whole to the next owner."""
    rate = F.col("msg_rate_in") + F.col("msg_rate_out")
    owner = Window.partitionBy(*KEYS, "owner_broker")
    return (bundle_stats.where(F.col("owner_broker").isNotNull()).withColumn("_rate", rate)
            .withColumn("_owner_rate", exact_sum("_rate", owner))
            .where((F.col("hottest_topic_share") >= ONE_TOPIC_SHARE) & (F.col("_rate") > 0)
                   & (F.col("_rate") >= share * F.col("_owner_rate")))
            .groupBy(*KEYS, F.col("owner_broker").alias("broker")).agg(max_by("bundle", "_rate").alias("pinned_by")))


def idle_brokers(usage: DataFrame, reports: DataFrame, config: PulsarConfig | ClusterConfigs,
                 owned: DataFrame | None = None, pinning: DataFrame | None = None) -> DataFrame:
    """A broker left (nearly) empty while others run hot: after a restart or a scale-out nothing moved load to it.
    Hot is ThresholdShedder's view: above the cluster average by ``loadBalancerBrokerThresholdShedderPercentage``,
    or above ``loadBalancerBrokerOverloadedThresholdPercentage``. ``owned`` (``owned_load``): a broker whose report
    contradicts its ownership is a broken reporter (``broken_reporter``), not an idle broker. ``pinning``
    (``pinning_bundles``): where the hottest broker's load is one topic's bundle, moving the hottest broker's bundles
    here moves that heat whole, and the action says so, in terms that hold whether the report's wave moves it or
    withholds the move (a finding must not contradict the report's actions)."""
    band = per_cluster(config, lambda c: c.get_float("loadBalancerBrokerThresholdShedderPercentage") / 100.0, ts=_TS)
    overload = per_cluster(config, lambda c: c.get_float("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0,
                           ts=_TS)
    per_snapshot = Window.partitionBy(*KEYS)
    df = (usage.join(reports.select(*KEYS, "broker", "start_timestamp_ms"), [*KEYS, "broker"], "left")
          .withColumn("mean", exact_avg("max_usage", per_snapshot))
          .withColumn("hottest", F.max("max_usage").over(per_snapshot))
          .withColumn("hottest_broker", max_by("broker", "max_usage").over(per_snapshot)))
    idle = df.where(((F.col("num_bundles") == 0) | (F.col("max_usage") < 0.25 * F.col("mean")))
                    & ((F.col("hottest") >= F.col("mean") + band) | (F.col("hottest") >= overload)))
    if owned is not None:
        idle = idle.join(_disagreeing(usage, owned).select(*KEYS, "broker"), [*KEYS, "broker"], "left_anti")
    if pinning is not None:
        idle = idle.join(pinning.select(*KEYS, F.col("broker").alias("hottest_broker"), "pinned_by"),
                         [*KEYS, "hottest_broker"], "left")
    else:
        idle = idle.withColumn("pinned_by", F.lit(None).cast("string"))
    started = F.from_unixtime(F.col("start_timestamp_ms") / 1000, "yyyy-MM-dd HH:mm")
    return findings(
        idle, "idle broker while others run hot", F.col("broker"),
        F.when(F.col("hottest") >= overload, "critical").otherwise("warning"),
        F.concat(F.lit("idle at "), _pct("max_usage"), F.lit(" % with "), F.col("num_bundles").cast("string"),
                 F.lit(" bundles while "), F.col("hottest_broker"), F.lit(" runs at "), _pct("hottest"),
                 F.lit(" % (cluster mean "), _pct("mean"), F.lit(" %); started "), started, F.lit(" UTC")),
        F.when(F.col("pinned_by").isNotNull(), F.concat(
            F.lit("Most of "), F.col("hottest_broker"), F.lit("'s traffic is "), F.col("pinned_by"),
            F.lit(", one topic's bundle: whichever broker holds it carries all of that load (the finding \"hot "
                  "bundle no split can help\" says what helps it; the report's actions move it only where that "
                  "lowers the hottest broker's usage). Fill this broker from the other brokers above the cluster mean "
                  "as well; the shedding strategy to run is the report's decision.")))
        .otherwise(F.lit("Move load to it: unload the hottest broker's bundles (the report's actions); check "
                         "loadBalancerSheddingEnabled=true and loadBalancerSheddingGracePeriodMinutes; the shedding "
                         "strategy to run is the report's decision.")),
        ["snapshot_ts", "broker", "max_usage", "num_bundles", "hottest_broker", "hottest", "mean"], min_snapshots=2)


def idle_shedding(usage: DataFrame, ownership: DataFrame, config: PulsarConfig | ClusterConfigs,
                  share: float = 0.5, least: int = 3) -> DataFrame:
    """Shedding configured and on, yet not one bundle changed owner all night while a broker sat above
    ``loadBalancerBrokerOverloadedThresholdPercentage`` in at least ``share`` of the night's snapshots (and
    ``least``): the strategy did not act where it was expected to (a hot but even cluster under ThresholdShedder,
    a grace period or interval that never lets it, shedding off on the leader, a leader that cannot reach the
    metadata store)."""
    over = per_cluster(config, lambda c: c.get_float("loadBalancerBrokerOverloadedThresholdPercentage") / 100.0, ts=_TS)
    on = per_cluster(config, lambda c: c.get_bool("loadBalancerEnabled") and c.get_bool("loadBalancerSheddingEnabled")
                     and configured_strategy(c) in SHEDDERS, ts=_TS)
    strategy = per_cluster(config, configured_strategy, ts=_TS)
    night = ["cluster", "snapshot_date"]
    owners = ownership.groupBy(*KEYS, "bundle").agg(F.min("broker").alias("owner"))
    previous = F.lag("owner").over(Window.partitionBy(*night, "bundle").orderBy("snapshot_ts"))
    moves = (owners.withColumn("previous", previous).where(F.col("previous").isNotNull()
                                                           & (F.col("owner") != F.col("previous")))
             .groupBy(*night).agg(F.count(F.lit(1)).alias("moves")))
    snapshots = usage.groupBy(*night).agg(F.count_distinct("snapshot_ts").alias("night_snapshots"))
    per_broker = Window.partitionBy(*night, "broker")
    hot = (usage.where(on & (F.col("max_usage") > over))
           .withColumn("hot_snapshots", F.count(F.lit(1)).over(per_broker))
           .withColumn("mean_hot", exact_avg("max_usage", per_broker))
           .join(snapshots, night).join(moves, night, "left")
           .where(F.coalesce(F.col("moves"), F.lit(0)) == 0)
           .where((F.col("hot_snapshots") >= F.greatest(F.lit(least), F.col("night_snapshots") * share)))
           .withColumn("strategy", strategy).withColumn("over", over))
    return findings(
        hot, "shedding configured but idle", F.col("broker"),
        F.when(F.col("hot_snapshots") >= 0.9 * F.col("night_snapshots"), "critical").otherwise("warning"),
        F.concat(F.col("strategy"), F.lit(" configured, yet no bundle changed owner all night while this broker was "
                                          "above "), _pct("over"), F.lit(" % in "), F.col("hot_snapshots").cast("string"),
                 F.lit(" of "), F.col("night_snapshots").cast("string"), F.lit(" snapshots (mean "), _pct("mean_hot"),
                 F.lit(" %)")),
        F.lit("Check the leader's log for its shedding cycles (loadBalancerSheddingEnabled, "
              "loadBalancerSheddingIntervalMinutes, loadBalancerSheddingGracePeriodMinutes); ThresholdShedder and "
              "AvgShedder compare brokers with each other, so a cluster hot everywhere sheds nothing: add brokers."),
        ["snapshot_ts", "broker", "max_usage"])


def unsplittable_bundles(bundle_stats: DataFrame, config: PulsarConfig | ClusterConfigs,
                         share: float = ONE_TOPIC_SHARE) -> DataFrame:
    """A bundle over a split limit that one topic carries: splitting moves that topic whole, so no split helps."""
    rate = per_cluster(config, lambda c: c.get_float("loadBalancerNamespaceBundleMaxMsgRate"), ts=_TS)
    mbytes = per_cluster(config, lambda c: c.get_float("loadBalancerNamespaceBundleMaxBandwidthMbytes") * 1024 * 1024,
                         ts=_TS)
    rate_text = per_cluster(config, lambda c: f"{c.get_float('loadBalancerNamespaceBundleMaxMsgRate'):g}", ts=_TS)
    hot = bundle_stats.where((F.col("hottest_topic_share") >= share)
                             & (((F.col("msg_rate_in") + F.col("msg_rate_out")) > rate)
                                | ((F.col("msg_throughput_in") + F.col("msg_throughput_out")) > mbytes)))
    return findings(
        hot, "hot bundle no split can help", F.col("bundle"), F.lit("warning"),
        F.concat(F.col("hottest_topic"), F.lit(" carries "), _pct("hottest_topic_share"), F.lit(" % of "),
                 F.format_number(F.col("msg_rate_in") + F.col("msg_rate_out"), 0),
                 F.lit(" msg/s, above loadBalancerNamespaceBundleMaxMsgRate="), rate_text,
                 F.lit(" or the bandwidth limit")),
        _hot_topic_advice(F.col("hottest_topic")),
        ["snapshot_ts", "owner_broker", "hottest_topic", "hottest_topic_share", "msg_rate_in", "msg_rate_out"])


def _hot_topic_advice(topic: Column) -> Column:
    """What fits the topic: a partition of a partitioned topic takes more partitions (``topics
    update-partitioned-topic`` on the partitioned topic; Pulsar refuses it for a plain topic), a plain topic needs a
    new partitioned topic its producers move to; either way the bundle can meanwhile be isolated on a large broker.
    No command: how many partitions depends on the producers' keys and ordering."""
    partitioned = F.regexp_extract(topic, r"^(.*)-partition-[0-9]+$", 1)
    return F.when(partitioned != "", F.concat(
        F.lit("Give "), partitioned, F.lit(" more partitions (topics update-partitioned-topic on the partitioned "
                                           "topic, with the count its producers' keys allow) so this partition's "
                                           "load spreads; meanwhile isolate the bundle on a large broker."))
    ).otherwise(F.concat(
        F.lit("Move the producers of "), topic, F.lit(" to a new partitioned topic (topics create-partitioned-topic; "
                                                      "a non-partitioned topic cannot take partitions) so its load "
                                                      "spreads; meanwhile isolate the bundle on a large broker.")))


def _per_resource(usage: DataFrame) -> DataFrame:
    """``usage`` with one row per broker, snapshot and resource (``resource``, ``pct``): one pass for all five."""
    return usage.select(*KEYS, "broker", "weighted_max_usage", "msg_rate_in", "msg_rate_out",
                        F.explode(F.array(*[F.struct(F.lit(r).alias("resource"), F.col(c).alias("pct"))
                                            for r, c in _PCT.items()])).alias("_r")).select("*", "_r.*").drop("_r")


def broken_usage(usage: DataFrame) -> DataFrame:
    """A resource stuck at 0 % on a broker that serves traffic (a broken reporter), or above 100 % (a wrong limit:
    for the NIC, usually a speed the broker cannot read in containers)."""
    per = _per_resource(usage).withColumn("serving", (F.col("msg_rate_in") + F.col("msg_rate_out")) > 0)
    stuck = per.groupBy("cluster", "snapshot_date", "broker", "resource").agg(
        F.max("pct").alias("max_pct"), F.min(F.col("serving").cast("int")).alias("always_serving"))
    zero = per.join(stuck.where((F.col("max_pct") == 0) & (F.col("always_serving") == 1)),
                    ["cluster", "snapshot_date", "broker", "resource"], "left_semi")
    nic = F.col("resource").startswith("bandwidth")
    return findings(zero, "usage stuck at 0 %", F.concat_ws(" ", "broker", "resource"), F.lit("warning"),
                    F.concat(F.col("resource"), F.lit(" reads 0 % all night on a broker serving traffic")),
                    F.lit("The broker cannot read this resource (cgroup or /proc not visible, or no NIC found): "
                          "balancing is blind to it. Check the broker's host metrics and logs."),
                    ["snapshot_ts", "broker", "resource", "pct"], min_snapshots=2).unionByName(
        findings(per.where(F.col("pct") > 100.0), "usage above 100 %", F.concat_ws(" ", "broker", "resource"),
                 F.when(nic, "critical").otherwise("warning"),
                 F.concat(F.col("resource"), F.lit(" at "), F.format_number("pct", 0), F.lit(" % of its limit")),
                 F.when(nic, F.lit("The NIC speed the broker reads is wrong: set loadBalancerOverrideBrokerNicSpeedGbps "
                                   "to the real link speed.")).otherwise(
                     F.lit("The limit the broker reports is below what it uses: check its container limits.")),
                 ["snapshot_ts", "broker", "resource", "pct"]))


def ignored_resources(usage: DataFrame, config: PulsarConfig | ClusterConfigs) -> DataFrame | None:
    """Overload by a resource the strategies do not see: weight 0 in ``loadBalancer*ResourceWeight`` (memory and
    direct memory by default) in the cluster's configuration, while the weighted max usage they compare stays under
    the threshold."""
    configs = ClusterConfigs.of_any(config)
    ignored = [r for r in _PCT if any(getattr(Weights.from_config(c), r) == 0 for c in configs.distinct())]
    if not ignored:
        return None
    weight = F.create_map(*[x for r in ignored for x in (
        F.lit(r), per_cluster(configs, lambda c, r=r: float(getattr(Weights.from_config(c), r)), ts=_TS))
    ])[F.col("resource")]
    overload = per_cluster(configs, lambda c: c.get_float("loadBalancerBrokerOverloadedThresholdPercentage"), ts=_TS)
    hit = _per_resource(usage).where(F.col("resource").isin(ignored) & (weight == 0) & (F.col("pct") >= overload)
                                     & (F.col("weighted_max_usage") * 100.0 < overload))
    key = F.create_map(*[F.lit(x) for r in ignored for x in (r, _WEIGHT_KEYS[r])])[F.col("resource")]
    return findings(hit, "overload in an ignored resource", F.concat_ws(" ", "broker", "resource"),
                    F.when(F.col("pct") >= 95, "critical").otherwise("warning"),
                    F.concat(F.col("resource"), F.lit(" at "), F.format_number("pct", 0), F.lit(
                        " % while the weighted usage the strategies compare is "), _pct("weighted_max_usage"), F.lit(" %")),
                    F.concat(F.lit("Give it a weight ("), key, F.lit("=1.0, a dynamic key) so shedding sees it, or give "
                                                                     "the broker more memory (-Xmx / -XX:MaxDirectMemorySize).")),
                    ["snapshot_ts", "broker", "resource", "pct", "weighted_max_usage"])
